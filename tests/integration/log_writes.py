#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""log_writes=PATH, checked against dm-log-writes' format and order.

usage: log_writes.py URI LOG CTL-SOCKET EXPORT BUILD STATE-DIR BS

A workload with a model of what the log must hold at each step: a write
is absent until a FLUSH submitted after it completes, a FUA write is
there at once, a discard waits like a write, a misaligned write is
logged as the whole blocks it wrote, WRITE_ZEROES as zeroes, marks as
MARK entries.  The log is read by the parser below, written from the
format's description, not from our C.  The image's sha256 at each mark
goes to STATE-DIR/MARK.sha256, for the replay checks of the caller
(run with 'check-final' once the server has stopped).
"""
import hashlib
import os
import struct
import subprocess
import sys

import nbd

MAGIC = 0x6a736677736872
FLUSH, FUA, DISCARD, MARK = 1, 2, 4, 8


def parse(path):
    """[(sector, nr_sectors, flags, data or mark name)], sectorsize, size."""
    with open(path, "rb") as f:
        raw = f.read()
    magic, version, nr, ss = struct.unpack_from("<QQQI", raw, 0)
    assert magic == MAGIC, "magic %#x" % magic
    assert version == 1, version
    pos, entries = ss, []
    for _ in range(nr):
        sector, nsec, flags, dlen = struct.unpack_from("<QQQQ", raw, pos)
        if flags & MARK:
            payload = raw[pos + 32:pos + 32 + dlen].decode()
            assert raw[pos + 32 + dlen] == 0
        pos += ss
        if flags & (MARK | DISCARD):
            if flags & DISCARD:
                payload = None
        else:
            payload = raw[pos:pos + nsec * ss]
            assert len(payload) == nsec * ss, "entry data cut short"
            pos += nsec * ss
        entries.append((sector, nsec, flags, payload))
    return entries, ss, len(raw), pos


def expect(log, want, what):
    entries, ss, _, _ = parse(log)
    got = [(s * ss, n * ss, f, d if isinstance(d, str) else
            (hashlib.sha256(d).hexdigest() if d else None))
           for s, n, f, d in entries]
    norm = [(o, l, f, d if isinstance(d, str) or d is None else
             hashlib.sha256(d).hexdigest()) for o, l, f, d in want]
    if got != norm:
        print("%s: the log holds\n  %s\nexpected\n  %s" %
              (what, "\n  ".join(map(str, got)),
               "\n  ".join(map(str, norm))), file=sys.stderr)
        sys.exit(1)


def main():
    uri, log, ctl, export, build, state, bs = sys.argv[1:8]
    bs = int(bs)
    h = nbd.NBD()
    # a misaligned write, on purpose: NBD's default constraints
    h.set_request_block_size(False)
    h.set_strict_mode(0)
    h.connect_uri(uri)
    size = h.get_size()
    img = bytearray(size)
    want = []

    def w(data, off, flags=0):
        h.pwrite(data, off, flags)
        img[off:off + len(data)] = data

    def mark(name):
        subprocess.run([os.path.join(build, "mqblkctl"), "-s", ctl, "set",
                        export + "/log_writes/mark", name], check=True)
        want.append((0, 0, MARK, name))
        assert bytes(img) == h.pread(size, 0), "image model drifted"
        with open(os.path.join(state, name + ".sha256"), "w") as f:
            f.write(hashlib.sha256(img).hexdigest())

    # A mark returns once it is in the log, with all logged before it:
    # each check below reads the log after one.
    a = os.urandom(2 * bs)
    w(a, 0)
    mark("s0")
    expect(log, want, "an unflushed write")  # absent until a FLUSH
    b = os.urandom(bs)
    w(b, 16 * bs, nbd.CMD_FLAG_FUA)
    want.append((16 * bs, bs, FUA, b))
    mark("s1")
    expect(log, want, "a FUA write")  # logged at once, ahead of a
    h.flush()
    want += [(0, 2 * bs, 0, a), (0, 0, FLUSH, None)]
    mark("m1")
    expect(log, want, "a mark")

    c = os.urandom(bs)
    w(c, 0)
    h.trim(4 * bs, 8 * bs)
    img[8 * bs:12 * bs] = bytes(4 * bs)
    w(b"x" * 100, 20 * bs + 10)  # read-modify-write of one block
    blk = bytes(img[20 * bs:21 * bs])
    h.zero(2 * bs, 24 * bs)
    img[24 * bs:26 * bs] = bytes(2 * bs)
    mark("s2")
    expect(log, want, "four unflushed requests")
    h.flush()
    want += [(0, bs, 0, c), (8 * bs, 4 * bs, DISCARD, None),
             (20 * bs, bs, 0, blk), (24 * bs, 2 * bs, 0, bytes(2 * bs)),
             (0, 0, FLUSH, None)]
    mark("m2")
    expect(log, want, "the second FLUSH")

    d = os.urandom(bs)
    w(d, 30 * bs)  # never flushed: logged when the export goes
    h.shutdown()
    with open(os.path.join(state, "final.sha256"), "w") as f:
        f.write(hashlib.sha256(img).hexdigest())
    want += [(30 * bs, bs, 0, d), (0, 0, MARK, "dm-log-writes-end")]
    with open(os.path.join(state, "want"), "w") as f:
        f.write(repr(want))


def check_final(log, state):
    """After the server stopped: the end entries and the log's size."""
    with open(os.path.join(state, "want")) as f:
        want = eval(f.read())  # our own repr, written above
    expect(log, want, "the closed log")
    entries, ss, size, end = parse(log)
    data = sum(n * ss for s, n, f, d in entries
               if not f & (MARK | DISCARD))
    assert size == end == ss * (1 + len(entries)) + data, \
        "size %d: %d entries of %d and %d bytes of data" % (
            size, len(entries), ss, data)
    print("log: %d entries, %d bytes" % (len(entries), size))


if __name__ == "__main__":
    if sys.argv[1] == "check-final":
        check_final(sys.argv[2], sys.argv[3])
    else:
        main()
