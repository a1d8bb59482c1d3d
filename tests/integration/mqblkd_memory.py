#!/usr/bin/env python3
# A client that sends large requests and does not read the replies, or
# whose writes outrun the device, must not make mqblkd buffer without
# bound (its RSS is read from /proc), whether the device completes
# inline or from its own threads.
#
#   mqblkd_memory.py SOCKET PID reads LIMIT_MIB
#   mqblkd_memory.py SOCKET PID writes LIMIT_MIB
#
# "reads": 48 READs of 32 MiB, replies unread until the server has
# stopped taking requests; then every reply must come.  "writes": 40
# WRITEs of 32 MiB to a slow device; once the server stops reading them
# the client hangs up (the test script then times the SIGTERM).
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "hostile"))
from nbdraw import *  # noqa: E402,F401,F403

SOCK, PID, MODE, LIMIT = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
    int(sys.argv[4]) << 20
MiB = 1 << 20
N, SIZE = (48, 32 * MiB) if MODE == "reads" else (40, 32 * MiB)


def rss():
    with open("/proc/%d/status" % PID) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS for %d" % PID)


peak = 0


def sample():
    global peak
    r = rss()
    peak = max(peak, r)
    assert r < LIMIT, "mqblkd RSS %d MiB, over %d MiB" % (r >> 20,
                                                          LIMIT >> 20)
    return r


def until_still(progress, what, still=2.0, limit=60.0):
    """Poll until progress() has not changed for `still` seconds (the
    server stopped taking input), checking RSS all along."""
    deadline = time.monotonic() + limit
    last, since = progress(), time.monotonic()
    while time.monotonic() < deadline:
        sample()
        now = progress()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= still:
            return now
        time.sleep(0.05)
    raise AssertionError("%s: still moving after %d s" % (what, limit))


c = Conn(SOCK, timeout=120)
c.start()
c.opt(OPT_EXPORT_NAME, b"")
size, eflags = struct.unpack(">QH", c.recv_exact(10))
base = sample()

if MODE == "reads":
    for i in range(N):
        c.request(CMD_READ, (i * SIZE) % (size - SIZE + 1), SIZE, handle=i)
    # The server works until its bound, then waits for us.
    until_still(rss, "server RSS")
    held = rss()
    got = set()
    for _ in range(N):
        err, h, data = c.simple(SIZE)
        assert err == 0 and len(data) == SIZE, (err, h)
        got.add(h)
        sample()
    assert got == set(range(N)), sorted(got)
    print("reads: RSS %d MiB at start, %d MiB held, peak %d MiB" % (
        base >> 20, held >> 20, peak >> 20))
else:
    sent = [0]
    payload = b"\xa5" * SIZE
    hdrs = [struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_WRITE, i,
                        (i * SIZE) % (size - SIZE + 1), SIZE)
            for i in range(N)]

    def writer():
        try:
            for h in hdrs:
                c.sock.sendall(h)
                view = memoryview(payload)
                while view:
                    n = c.sock.send(view[:MiB])
                    sent[0] += n
                    view = view[n:]
        except OSError:
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    stuck = until_still(lambda: sent[0], "client writes")
    assert stuck < N * SIZE, "the server read all %d MiB" % (stuck >> 20)
    # Hang up with requests unanswered and payload unsent.
    c.sock.shutdown(socket.SHUT_RDWR)
    c.sock.close()
    t.join(10)
    print("writes: the server took %d of %d MiB; RSS %d MiB at start, "
          "peak %d MiB" % (stuck >> 20, N * SIZE >> 20, base >> 20,
                           peak >> 20))
