# durability.py SOCKET IMAGE MODE LOG: write, FUA-write and flush through
# a server on SOCKET that serves IMAGE, one request at a time, then check
# in LOG (written by the syncshim preloaded into the server) that each
# reply that promises durability left the server only after an
# fdatasync/fsync of IMAGE had started after the last write to it and had
# returned 0.
#
# MODE "cache": the device has a volatile write cache; FLUSH replies and
# FUA write replies are checked.  MODE "through": the device declares no
# volatile cache, so every write reply (and FLUSH) is checked.
#
# Only write replies are scanned (no reads while the log is taken), so
# payload bytes never look like reply headers.
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "hostile"))
import nbdraw  # noqa: E402

sock_path, image, mode, log_path = sys.argv[1:5]
assert mode in ("cache", "through"), mode
FLAG_SEND_FLUSH, FLAG_SEND_FUA = 1 << 2, 1 << 3
BASE = 0x4D51424C00000000  # "MQBL" and a sequence number

c = nbdraw.Conn(sock_path, timeout=60)
c.start()
size, eflags = c.go()
can_flush = bool(eflags & FLAG_SEND_FLUSH)
can_fua = bool(eflags & FLAG_SEND_FUA)
if mode == "cache":
    assert can_flush, "a device with a cache must take FLUSH: %#x" % eflags

rng = random.Random(1)
plan = [("write", 0), ("flush", None), ("fua", 1 << 20), ("write", 2 << 20),
        ("write", 3 << 20), ("flush", None), ("fua", 4 << 20),
        ("write", 5 << 20), ("fua", 6 << 20), ("flush", None)]
checked = {}   # cookie -> what
written = {}   # offset -> data
n_writes = 0
for i, (what, off) in enumerate(plan):
    cookie = BASE + i
    if what == "flush":
        if not can_flush:
            continue
        c.request(nbdraw.CMD_FLUSH, handle=cookie)
        checked[cookie] = what
    else:
        data = bytes(rng.getrandbits(8) for _ in range(65536))
        fua = what == "fua" and can_fua
        c.request(nbdraw.CMD_WRITE, off, len(data),
                  nbdraw.FLAG_FUA if fua else 0, cookie, data)
        written[off] = data
        n_writes += 1
        if fua or mode == "through":
            checked[cookie] = what if fua else "write"
    err, handle, _ = c.simple()
    assert handle == cookie, "reply to %#x, expected %#x" % (handle, cookie)
    assert err == 0, "%s at %s: error %d" % (what, off, err)
c.request(nbdraw.CMD_DISC)
c.close()
assert checked, "nothing to check"

st = os.stat(image)
ino = "%d:%d" % (st.st_dev, st.st_ino)
writes = 0        # writes to IMAGE that a later sync must cover
dsync_writes = 0  # writes to IMAGE that were durable on return
covered = 0       # writes covered by a sync that returned 0
started = {}      # tid -> writes before its sync started
syncs = 0
seen = {}
with open(log_path) as f:
    for n, line in enumerate(f, 1):
        w = line.split()
        if w[0] == "W" and w[1] == ino:
            if w[2] == "1":
                dsync_writes += 1
            else:
                writes += 1
        elif w[0] == "SB" and w[2] == ino:
            started[w[1]] = writes
        elif w[0] == "SE" and w[2] == ino:
            if w[3] == "0" and w[1] in started:
                covered = max(covered, started[w[1]])
                syncs += 1
            started.pop(w[1], None)
        elif w[0] == "R":
            cookie = int(w[1], 16)
            if cookie not in checked:
                continue
            assert cookie not in seen, "line %d: reply %#x twice" % (n, cookie)
            seen[cookie] = n
            assert covered == writes, (
                "line %d: the reply to %s %#x left with %d write(s) to "
                "the image that no completed fdatasync/fsync covers"
                % (n, checked[cookie], cookie, writes - covered))
missing = [hex(k) for k in checked if k not in seen]
assert not missing, "replies not in the log (shim not loaded?): %s" % missing
assert writes + dsync_writes >= n_writes, \
    "only %d writes to the image were seen for %d NBD writes" % (
        writes + dsync_writes, n_writes)
assert syncs or writes == 0, "the image was never synced"

with open(image, "rb") as f:
    for off, data in written.items():
        f.seek(off)
        assert f.read(len(data)) == data, "data at %d differs" % off
print("%s: %d replies checked (%s), %d writes, %d O_DSYNC writes, %d syncs"
      % (os.path.basename(image), len(checked), mode, writes, dsync_writes,
         syncs))
