# nbdsh script: base:allocation follows the data on a sparse model.
#
# MQBLK_SPARSE=1: the model reports holes (ram, file); 0: it has no
# allocation map and everything is data (null).
import os

import nbd

dev = os.environ["MQBLK_DEVICE"]
sparse = os.environ["MQBLK_SPARSE"] == "1"
size = h.get_size()
MiB = 1024 * 1024


def extents(off, count, flags=0):
    out = []

    def cb(metacontext, offset, entries, err):
        assert metacontext == nbd.CONTEXT_BASE_ALLOCATION
        pos = offset
        for i in range(0, len(entries), 2):
            out.append((pos, entries[i], entries[i + 1]))
            pos += entries[i]
        return 0

    h.block_status(count, off, cb, flags)
    return out


def type_at(off):
    e = extents(off, MiB, nbd.CMD_FLAG_REQ_ONE)
    assert len(e) == 1, "%s: REQ_ONE gave %d extents" % (dev, len(e))
    assert e[0][0] == off and e[0][1] > 0
    return e[0][2]


assert h.can_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
hole = nbd.STATE_HOLE | nbd.STATE_ZERO
if sparse:
    assert type_at(0) == hole, "%s: fresh disk not a hole" % dev
    h.pwrite(os.urandom(MiB), 8 * MiB)
    h.flush()
    assert type_at(8 * MiB) & nbd.STATE_HOLE == 0, "%s: data is a hole" % dev
    assert type_at(8 * MiB + MiB // 2) & nbd.STATE_HOLE == 0
    assert type_at(7 * MiB) == hole, "%s: before the data" % dev
    assert type_at(9 * MiB) == hole, "%s: after the data" % dev
    # The extents cover the request contiguously, in order.
    e = extents(0, size)
    pos = 0
    for off, length, _ in e:
        assert off == pos and length > 0
        pos += length
    assert pos >= 9 * MiB
    # A second region so the map has several data extents.
    h.pwrite(os.urandom(MiB), 32 * MiB)
    h.flush()
else:
    e = extents(0, size)
    assert all(t == 0 for _, _, t in e), "%s: %s" % (dev, e)
print("%s: extents ok" % dev)
