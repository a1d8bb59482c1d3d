#!/usr/bin/env python3
# A control-plane storm, run by test-mqblkd-ctl-storm.sh while fio writes
# and verifies every export: random writes to every writable queue
# attribute (the scheduler, nr_requests, ioprio_map, the schedulers'
# tunables), valid values and hostile ones, with null_blk's requeue fault,
# a stalled SCSI target and a suspended Memory Stick coming and going.
#
#   ctl_storm.py MQBLKCTL SOCKET SEED ACTIONS FIO_PID
#
# It takes ACTIONS random actions; fio must run all the while.  Every
# hold of a queue comes with a scheduler switch on it, run beside the
# storm.  Every refusal must be a clean one: exit
# status 1 with a reason, never a scheduler switch that times out (the
# test gives switches a minute; no fault holds a queue for that long).
# A switch on a held queue must complete once the fault is lifted.
# Prints what it did; fails if it did too little.
import os
import random
import subprocess
import sys

ctl, sock = sys.argv[1], sys.argv[2]
seed, actions, fio_pid = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rnd = random.Random(seed)
history = []  # every set, for the report of a failure

NUMBERS = ["0", "1", "2", "3", "8", "16", "64", "128", "1000", "65536", "-1",
           "4294967297", "18446744073709551616", "abc", "", "1x", "0x10"]
VALUES = {
    "scheduler": ["none", "mq-deadline", "kyber", "bfq", "cfq", "", "bfq x"],
    "ioprio_map": ["", "uid:0=rt/0", "addr:*=idle", "user:*=be/3 uid:0=none",
                   "junk", "uid:x=rt/9"],
}
REQUEUE = ["1,30,0,50", "10,100,0,5", "0,0,0,0", "2,50,0,-1", "bad", "1,101,0,1"]
# Faults that hold a queue, and what lets it go.
HOLDS = {"ssd": ("fault/stall", "1", "fault/stall", "0"),
         "mspro": ("fault/suspend", "", "fault/resume", "")}


def fail(msg, export=None):
    print("ctl_storm: FAIL: " + msg, file=sys.stderr)
    if export:  # what the queue looks like now
        for node in ["inflight", "mq/frozen", "mq/0/state", "mq/0/active",
                     "mq/0/tags", "mq/0/sched_tags", "queue/scheduler",
                     "queue/nr_requests", "queue/ioprio_map"] + \
                ["queue/iosched/" + t for t in ls(export + "/queue/iosched")] + \
                ["device/" + d for d in ls(export + "/device")]:
            try:
                p = subprocess.run([ctl, "-s", sock, "get", export + "/" + node],
                                   capture_output=True, text=True, timeout=10)
                out = (p.stdout + p.stderr).strip()
            except subprocess.TimeoutExpired:
                out = "(no answer in 10 s)"
            print("  %s/%s: %s" % (export, node, out), file=sys.stderr)
        print("  what it was set to, in order:", file=sys.stderr)
        for h in [h for h in history if (" " + export + "/") in h]:
            print("    " + h, file=sys.stderr)
    sys.exit(1)


def run(*args):
    p = subprocess.run([ctl, "-s", sock, *args], capture_output=True,
                       text=True, timeout=120)
    if len(args) > 1 and args[0] == "set" and not p.returncode:
        history.append(" ".join(args))
    if p.returncode not in (0, 1):
        fail("mqblkctl %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.returncode, (p.stdout + p.stderr).strip()


def ls(path):
    rc, out = run("ls", path)
    return out.split("\n") if rc == 0 and out else []


def fio_running():
    try:
        os.kill(fio_pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has ended too.
    with open("/proc/%d/stat" % fio_pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


exports = []
for name in ls(""):
    name = name.rstrip("/")
    subs = ls(name)
    if "queue/" in subs:
        exports.append(name)
    else:  # a host's ports: sx8/port0 ...
        exports += [name + "/" + s.rstrip("/") for s in subs
                    if "queue/" in ls(name + "/" + s.rstrip("/"))]
attrs = []
for e in exports:
    for a in ls(e + "/queue"):
        if a.endswith("/"):
            attrs += [e + "/queue/" + a + t for t in ls(e + "/queue/" + a)]
        else:
            attrs.append(e + "/queue/" + a)
for e in ("null", "ssd", "mspro"):
    if e not in exports:
        fail("no export %s" % e)

held = {}  # export -> actions left until its fault is lifted
pending = []  # switches on held queues, still waiting


def finished(p):
    """A switch beside the storm that has ended: it must have succeeded."""
    if p.poll() is None:
        return False
    out = p.communicate()[0].strip()
    if p.returncode:
        fail("a switch on a held queue: exit %d: %s" % (p.returncode, out),
             p.export)
    done["held switches"] = done.get("held switches", 0) + 1
    return True


def waits(e):
    """Would an operation on e's queue wait for a switch beside the storm?
    A switch holds the scheduler, its tunables and nr_requests until it
    ends, and it ends only once the storm lifts the fault."""
    return e in held or any(p.export == e for p in pending)


def switch_beside(e):
    """A switch on a held queue waits for the fault to lift: it runs
    beside the storm, which lifts the fault."""
    v = rnd.choice(VALUES["scheduler"][:4])
    history.append("set %s/queue/scheduler %s (beside the storm)" % (e, v))
    p = subprocess.Popen([ctl, "-s", sock, "set", e + "/queue/scheduler", v],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    p.export = e
    pending.append(p)

done = {"set": 0, "accepted": 0, "switches": 0, "requeue": 0, "holds": 0}
for _ in range(actions):
    if not fio_running():
        fail("fio ended during the storm")
    for e in list(held):
        held[e] -= 1
        if held[e] <= 0:
            rc, out = run("set", e + "/" + HOLDS[e][2], HOLDS[e][3])
            if rc:
                fail("lifting %s: %s" % (e, out))
            del held[e]
    pending = [p for p in pending if not finished(p)]
    r = rnd.random()
    if r < 0.75:
        # A third of them scheduler switches.
        a = rnd.choice([x for x in attrs if x.endswith("/scheduler")]
                       if r < 0.25 else attrs)
        e, name = a.split("/queue/")[0], a.rsplit("/", 1)[1]
        values = VALUES.get(name, NUMBERS)
        if name == "scheduler" and e in held:
            switch_beside(e)
            continue
        if waits(e):
            continue
        if name not in VALUES and rnd.random() < 0.6:
            rc, out = run("get", a)
            if rc == 0 and out.isdigit():
                v = int(out)
                values = [str(x) for x in (v, v + 1, max(v - 1, 1), 2 * v, v // 2, 1)]
        rc, out = run("set", a, rnd.choice(values))
        if rc and "read-only attribute" in out:
            attrs.remove(a)
            continue
        if rc and "did not drain" in out:
            fail("a switch timed out: " + out, e)
        done["set"] += 1
        done["accepted"] += rc == 0
        done["switches"] += rc == 0 and name == "scheduler"
    elif r < 0.85:
        rc, _ = run("set", "null/fault/requeue", rnd.choice(REQUEUE))
        done["requeue"] += rc == 0
    elif r < 0.90:
        e = rnd.choice(sorted(HOLDS))
        if e not in held:
            rc, out = run("set", e + "/" + HOLDS[e][0], HOLDS[e][1])
            if rc:
                fail("holding %s: %s" % (e, out))
            held[e] = rnd.randint(1, 30)
            done["holds"] += 1
            switch_beside(e)
    else:
        e = rnd.choice(exports)
        if waits(e):
            continue
        for node in ("stat", "inflight", "queue/scheduler", "mq/0/tags",
                     "mq/0/sched_tags", "mq/0/state", "mq/frozen"):
            rc, out = run("get", e + "/" + node)
            if rc:
                fail("get %s/%s: %s" % (e, node, out))
        if run("metrics")[0]:
            fail("metrics refused")
for e in held:
    run("set", e + "/" + HOLDS[e][2], HOLDS[e][3])
run("set", "null/fault/requeue", "0,0,0,0")
for p in pending:
    p.wait(timeout=120)
    finished(p)
print("ctl_storm: seed %d: %s" % (seed, done))
if done["switches"] < 5 or not done["requeue"] or \
        not done.get("held switches"):
    fail("the storm did too little while fio ran")
