# Run by test-zoned.sh inside nbdsh (h connected): a zoned export with
# 1 MB zones, zone 0 conventional.  A client pipelines 64 sequential
# writes at QD32 into zone 1: no errors, the data reads back.  A
# misplaced write gets EIO and leaves its zone as it was; a TRIM of part
# of a zone gets EINVAL; a TRIM of whole zones resets them.
import errno
import os

import nbd

ZONE = int(os.environ.get("ZONE_BYTES", 1 << 20))
NR = 64
QD = 32
CHUNK = ZONE // NR
sched = os.environ.get("SCHED", "?")

assert h.can_trim(), "zoned export does not offer TRIM (zone reset)"
data = os.urandom(ZONE)
in_flight = {}
errors = 0
nxt = 0
done = 0
while done < NR:
    while nxt < NR and len(in_flight) < QD:
        buf = nbd.Buffer.from_bytearray(
            bytearray(data[nxt * CHUNK:(nxt + 1) * CHUNK]))
        c = h.aio_pwrite(buf, ZONE + nxt * CHUNK)
        in_flight[c] = (nxt, buf)
        nxt += 1
    h.poll(-1)
    for c in list(in_flight):
        try:
            finished = h.aio_command_completed(c)
        except nbd.Error as e:
            finished = True
            errors += 1
            print("%s: write %d failed: %s" % (sched, in_flight[c][0], e))
        if finished:
            del in_flight[c]
            done += 1
assert errors == 0, "%s: %d of %d pipelined writes failed" % (sched, errors, NR)
assert h.pread(ZONE, ZONE) == data, "%s: zone 1 does not read back" % sched

# Misplaced: 4 KiB into the empty zone 2.
try:
    h.pwrite(b"\xaa" * 4096, 2 * ZONE + 4096)
except nbd.Error as e:
    assert e.errnum == errno.EIO, "misplaced write: errno %s" % e.errnum
else:
    raise AssertionError("%s: a misplaced write succeeded" % sched)
# Zone 2 unchanged: empty, its write pointer still at its start.
assert h.pread(8192, 2 * ZONE) == bytes(8192), "zone 2 changed"
h.pwrite(b"\x55" * 4096, 2 * ZONE)
assert h.pread(4096, 2 * ZONE) == b"\x55" * 4096

# TRIM: part of a zone is refused, a whole zone resets it.
for off, ln in ((ZONE, 4096), (ZONE + 4096, ZONE - 4096), (0, 2 * ZONE)):
    try:
        h.trim(ln, off)
    except nbd.Error as e:
        assert e.errnum == errno.EINVAL, "trim errno %s" % e.errnum
    else:
        raise AssertionError("trim of %d at %d accepted" % (ln, off))
h.trim(ZONE, ZONE)
assert h.pread(ZONE, ZONE) == bytes(ZONE), "reset zone not zeroes"
h.pwrite(b"\x77" * 4096, ZONE)  # its write pointer is back at the start
print("%s: 64 writes at QD32, misplaced EIO, TRIM reset: ok" % sched)
