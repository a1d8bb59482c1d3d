# Dispatch order by I/O priority, through mqblkd and real libnbd clients
# (test-ioprio.sh).
#
# Three clients on TCP loopback, each from its own source address, so that
# queue/ioprio_map's addr: rules tell them apart: 127.0.0.2 is rt/0,
# 127.0.0.3 be/4 and 127.0.0.4 idle.  The sunvdc link is taken down first,
# which stops the hw queue, so every read the clients send waits in the
# scheduler; the link comes back once all are inserted, and the blktrace
# recording's D (issue) events give the order the scheduler chose.  Each
# client reads its own region, so an issue's sector says whose it was;
# the regions lie in the opposite order of the priorities (idle lowest),
# and the clients send in the order be, idle, rt: neither sector order
# nor arrival order gives the order the priorities give.
#
# argv: HOST PORT MQBLKCTL CTL_SOCKET TRACE_DIR EXPORT SCHEDULER
import subprocess
import socket
import sys
import time

import nbd

host, port, ctl, ctl_sock, trace_dir, export, sched = sys.argv[1:8]
port = int(port)
PER_CLIENT = 4
CLIENTS = [  # name, source address, first sector of its region
    ("be", "127.0.0.3", 8192),
    ("idle", "127.0.0.4", 0),
    ("rt", "127.0.0.2", 16384),
]


def mqblkctl(*args):
    return subprocess.run([ctl, "-s", ctl_sock] + list(args), check=True,
                          capture_output=True, text=True).stdout.strip()


def wait_for(what, cond, seconds=20):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            sys.exit("ioprio_order: timed out waiting for " + what)
        time.sleep(0.01)


def connect(src):
    s = socket.socket()
    s.bind((src, 0))
    s.connect((host, port))
    h = nbd.NBD()
    h.set_export_name(export)
    h.connect_socket(s.detach())
    return h


mqblkctl("set", export + "/queue/scheduler", sched)
mqblkctl("set", export + "/queue/ioprio_map",
         "addr:127.0.0.2:*=rt/0 addr:127.0.0.3:*=be/4 addr:127.0.0.4:*=idle")
if sched == "mq-deadline":
    # Aging (10 s) must not lift be or idle above rt in a slow run.
    mqblkctl("set", export + "/queue/iosched/prio_aging_expire", "600000")
handles = [(name, connect(src), sector) for name, src, sector in CLIENTS]

mqblkctl("set", export + "/fault/link_down")
wait_for("the link to go down",
         lambda: mqblkctl("get", export + "/device/link_state") != "up")
mqblkctl("trace", "start", "t")

queued = lambda: int(mqblkctl("get", export + "/mq/0/queued"))
base = queued()
cookies = []
for name, h, sector in handles:
    for i in range(PER_CLIENT):
        # Every other 4 KiB block: no two reads of a client merge.
        off = (sector + i * 16) * 512
        cookies.append((h, h.aio_pread(nbd.Buffer(4096), off)))
        h.poll(0)
total = len(cookies)
wait_for("%d reads in the scheduler" % total, lambda: queued() - base >= total)
# Nothing reached the device while the link was down.
assert queued() - base == total, "queued %d, sent %d" % (queued() - base, total)

mqblkctl("set", export + "/fault/link_up")
deadline = time.monotonic() + 30
for h, c in cookies:
    while not h.aio_command_completed(c):
        if time.monotonic() > deadline:
            sys.exit("ioprio_order: %s: reads still waiting 30 s after the "
                     "link came back; %s of %d issued" %
                     (sched, mqblkctl("get", export + "/mq/0/dispatched"),
                      total))
        h.poll(100)
mqblkctl("trace", "stop")
for _, h, _ in handles:
    h.shutdown()

parsed = subprocess.run(
    ["blkparse", "-i", export, "-D", trace_dir + "/t", "-f", "%a %S\n"],
    check=True, capture_output=True, text=True).stdout.split("\n")
region = {sector: name for name, _, sector in CLIENTS}
sent = {sector + i * 16
        for _, _, sector in CLIENTS for i in range(PER_CLIENT)}
# A request the driver gives back (the first ones after the link comes
# back may find it still going up) is issued again from the requeue list:
# its first issue is the scheduler's choice, the next ones say nothing of
# the order.  So each read counts once, at its first D event, and every
# read sent must have one.
order, seen, issues = [], set(), 0
for line in parsed:
    f = line.split()
    if len(f) == 2 and f[0] == "D":
        s = int(f[1])
        issues += 1
        assert s in sent, "issue at sector %d, which no client read" % s
        if s in seen:
            continue
        seen.add(s)
        order.append(region[max(r for r in region if r <= s)])
print("%s: issue order %s (%d issues, %d reissued)" %
      (sched, " ".join(order), issues, issues - len(order)))
assert seen == sent, "never issued: %s" % sorted(sent - seen)
for name, _, _ in CLIENTS:
    assert order.count(name) == PER_CLIENT, (name, order)

first = {n: order.index(n) for n, _, _ in CLIENTS}
last = {n: len(order) - 1 - order[::-1].index(n) for n, _, _ in CLIENTS}
if sched == "mq-deadline":
    # rt, then be, then idle (dd_rq_prio, dd_dispatch_prio_aged_requests).
    assert last["rt"] < first["be"] and last["be"] < first["idle"], order
elif sched == "bfq":
    # rt's service tree before be's.  The idle class may be served once
    # it has waited 200 ms (BFQ_CL_IDLE_TIMEOUT), so it is not checked.
    assert last["rt"] < first["be"], order
else:
    sys.exit("ioprio_order: no expectation for " + sched)
