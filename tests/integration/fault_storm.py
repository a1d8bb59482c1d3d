#!/usr/bin/env python3
# Faults that fail requests, run by test-mqblkd-fault-storm.sh while fio
# reads and writes without verifying: null_blk's timeout fault, power cuts
# of a flash chip under the FTL (now, and during the Nth program or erase)
# and power back, a Memory Stick pulled out and put back; between them,
# scheduler switches and nr_requests on the same exports.  At the end
# every fault is lifted.
#
#   fault_storm.py MQBLKCTL SOCKET SEED ACTIONS FIO_PID
#
# Every control request must be answered with exit status 0 or 1, and no
# scheduler switch may time out (the test gives them a minute; the
# longest a request can wait here is the export's io_timeout).  Prints
# how often each fault was fired and how many switches were made.
import random
import subprocess
import sys

ctl, sock = sys.argv[1], sys.argv[2]
seed, actions, fio_pid = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rnd = random.Random(seed)
SCHEDULERS = ["none", "mq-deadline", "kyber", "bfq"]
EXPORTS = ["nulls", "ftl", "mspro"]
FAULTS = [
    ("nulls/fault/timeout", ["1,20,0,10", "3,100,0,3", "0,0,0,0"]),
    ("ftl/fault/powercut_after", ["1", "5", "20", "50"]),
    ("ftl/fault/powercut", [""]),
    ("ftl/fault/poweron", [""]),
    ("mspro/fault/eject", [""]),
    ("mspro/fault/insert", [""]),
]
LIFT = [("nulls/fault/timeout", "0,0,0,0"), ("ftl/fault/powercut_after", "0"),
        ("ftl/fault/poweron", ""), ("mspro/fault/insert", "")]


def fail(msg):
    print("fault_storm: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(*args):
    p = subprocess.run([ctl, "-s", sock, *args], capture_output=True,
                       text=True, timeout=120)
    out = (p.stdout + p.stderr).strip()
    if p.returncode not in (0, 1):
        fail("mqblkctl %s: exit %d: %s" % (" ".join(args), p.returncode, out))
    if "did not drain" in out:
        fail("a switch timed out: " + out)
    return p.returncode, out


def fio_running():
    try:
        with open("/proc/%d/stat" % fio_pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


fired = {}  # answered requests for each fault, and accepted switches
bag = []  # the faults in a random order, each once a round
for _ in range(actions):
    if not fio_running():
        fail("fio ended during the storm")
    r = rnd.random()
    if r < 0.6:
        if not bag:
            bag = FAULTS[:]
            rnd.shuffle(bag)
        path, values = bag.pop()
        run("set", path, rnd.choice(values))
        fired[path] = fired.get(path, 0) + 1
    elif r < 0.9:
        rc, _ = run("set", rnd.choice(EXPORTS) + "/queue/scheduler",
                    rnd.choice(SCHEDULERS))
        fired["switch"] = fired.get("switch", 0) + (rc == 0)
    else:
        run("set", rnd.choice(EXPORTS) + "/queue/nr_requests",
            str(rnd.randint(1, 8)))
for path, value in LIFT:
    rc, out = run("set", path, value)
    # An insert refused because the card never left is not a failure.
    if rc and not (path.endswith("/insert") and
                   "a card is already in the slot" in out):
        fail("lifting %s: %s" % (path, out))
print("fault_storm: seed %d: %s" % (seed, fired))
if len(fired) < len(FAULTS) + 1 or not fired["switch"]:
    fail("not every fault fired, or no switch")
