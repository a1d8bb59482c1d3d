# Drain on SIGTERM: requests the server has taken are finished and
# answered; the connection then closes.  Run by test-mqblkd-drain.sh:
#   python3 mqblkd_drain.py URI PID MODE
# MODE "slow": 16 reads on a device with 200 ms completions must all
# succeed although SIGTERM arrives while they are in flight.
# MODE "writes": 256 writes race SIGTERM; every acknowledged one is
# printed ("ok OFFSET BYTE") so the caller can check the image.
import os
import signal
import sys
import time

import nbd

uri, pid, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
h = nbd.NBD()
h.connect_uri(uri)
done = {}


def cb(cookie, err):
    done[cookie] = err.value
    return 1


if mode == "slow":
    cookies = [h.aio_pread(nbd.Buffer(4096), i * 4096,
                           completion=lambda e, c=i: cb(c, e))
               for i in range(16)]
    # Let the server read them all before it is told to stop.
    deadline = time.monotonic() + 0.1
    while time.monotonic() < deadline:
        h.poll(0)
    os.kill(pid, signal.SIGTERM)
    while len(done) < 16:
        h.poll(-1)
    errs = {c: e for c, e in done.items() if e}
    assert not errs, "reads failed across the drain: %s" % errs
    print("slow: 16 in-flight reads answered after SIGTERM")
else:
    bufs = {}
    for i in range(256):
        b = nbd.Buffer.from_bytearray(bytearray([i % 251 + 1]) * 4096)
        bufs[i] = b
        try:
            h.aio_pwrite(b, i * 4096, completion=lambda e, c=i: cb(c, e))
        except nbd.Error:
            # Drained and closed: the rest were never sent, so never
            # acknowledged; the image check below covers what was.
            break
        if i == 64:
            # Queued is not sent: let the server answer one first, so
            # SIGTERM races writes it really has, whatever the load.
            while not done:
                h.poll(-1)
            os.kill(pid, signal.SIGTERM)
    while len(done) < len(bufs):
        try:
            h.poll(-1)
        except nbd.Error:
            break
        if h.aio_is_dead():
            break
    for i, err in sorted(done.items()):
        if not err:
            print("ok %d %d" % (i * 4096, i % 251 + 1))
