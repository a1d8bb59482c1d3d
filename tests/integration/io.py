# nbdsh script (h is connected): data integrity and error paths.
#
# Random writes checked against a model of the whole disk, flush, FUA,
# trim and zero reading back as zeroes, out-of-range and misaligned
# requests failing while the connection stays usable.
import errno
import os
import random

import nbd

dev = os.environ["MQBLK_DEVICE"]
size = h.get_size()
# The plugin advertises a minimum of 1 (it serves any alignment); the
# random I/O below still goes in units of the device's block, where trim
# and zero are whole-block operations.
minimum = h.get_block_size(nbd.SIZE_MINIMUM) or 512
bs = minimum if minimum > 1 else h.get_block_size(nbd.SIZE_PREFERRED)
rng = random.Random(0x6D71626C6B)
model = bytearray(size)  # what the disk must hold


def check(cond, what):
    if not cond:
        raise AssertionError("%s: %s" % (dev, what))


def check_range(off, n, what):
    got = h.pread(n, off)
    want = bytes(model[off:off + n])
    if got != want:
        bad = next(i for i in range(n) if got[i] != want[i])
        raise AssertionError("%s: %s: mismatch at byte %d of [%d, +%d)"
                             % (dev, what, bad, off, n))


def random_extent(max_blocks):
    n = rng.randint(1, max_blocks) * bs
    off = rng.randrange(0, (size - n) // bs + 1) * bs
    return off, n


def expect_error(what, errnos, fn, *args):
    try:
        fn(*args)
    except nbd.Error as e:
        check(e.errnum in errnos,
              "%s: errno %s, expected one of %s" % (what, e.errnum, errnos))
        return
    raise AssertionError("%s: %s succeeded" % (dev, what))


check(size == 64 * 1024 * 1024, "size %d" % size)
check(not h.is_read_only(), "read-only")

# Random writes of 1..128 blocks, some with FUA, read back one by one and
# then as a whole disk image.
written = []
for i in range(300):
    off, n = random_extent(128)
    data = rng.randbytes(n)
    flags = nbd.CMD_FLAG_FUA if i % 7 == 0 else 0
    h.pwrite(data, off, flags)
    model[off:off + n] = data
    written.append((off, n))
for off, n in written:
    check_range(off, n, "read-back")
h.flush()
chunk = 4 * 1024 * 1024
for off in range(0, size, chunk):
    check_range(off, chunk, "full read after flush")

# Trim then zero: both must read back as zeroes where the model says so.
if h.can_trim():
    for _ in range(20):
        off, n = random_extent(256)
        h.trim(n, off)
        model[off:off + n] = bytes(n)
        check_range(off, n, "after trim")
check(h.can_zero(), "can_zero is false")
for i in range(20):
    off, n = random_extent(256)
    flags = nbd.CMD_FLAG_NO_HOLE if i % 2 else 0
    h.zero(n, off, flags)
    model[off:off + n] = bytes(n)
    check_range(off, n, "after zero")
if h.can_fast_zero():
    off, n = random_extent(64)
    h.zero(n, off, nbd.CMD_FLAG_FAST_ZERO)
    model[off:off + n] = bytes(n)
    check_range(off, n, "after fast zero")
h.flush()

# From here on, let requests libnbd would refuse reach the server.
h.set_strict_mode(0)
expect_error("read past the end", (errno.EINVAL, errno.ENOSPC),
             h.pread, bs, size)
expect_error("read across the end", (errno.EINVAL, errno.ENOSPC),
             h.pread, 2 * bs, size - bs)
expect_error("write past the end", (errno.EINVAL, errno.ENOSPC),
             h.pwrite, bytes(bs), size)
expect_error("write across the end", (errno.EINVAL, errno.ENOSPC),
             h.pwrite, bytes(2 * bs), size - bs)
if minimum > 1:
    expect_error("misaligned read", (errno.EINVAL,), h.pread, bs, 1)
    expect_error("misaligned write", (errno.EINVAL,),
                 h.pwrite, bytes(bs), bs // 2)
    expect_error("short read", (errno.EINVAL,), h.pread, bs - 1, 0)
else:
    # Served: a misaligned write changes its bytes and no others.
    check(h.pread(bs, 1) == bytes(model[1:1 + bs]), "misaligned read")
    data = rng.randbytes(bs)
    h.pwrite(data, bs // 2)
    model[bs // 2:bs // 2 + bs] = data
    check_range(0, 4 * bs, "after a misaligned write")
    check(h.pread(bs - 1, 0) == bytes(model[:bs - 1]), "short read")
# The connection survives the errors and nothing changed.
check_range(0, 1024 * 1024, "read after errors")
check_range(size - 1024 * 1024, 1024 * 1024, "tail read after errors")
print("%s: io ok (%d writes, block %d)" % (dev, len(written), bs))
