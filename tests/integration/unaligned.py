#!/usr/bin/env python3
# Requests not aligned to the logical block, over a raw socket, each
# checked against a reference copy of the export.
#
#   unaligned.py SOCKET export_name BS   the default constraints: served
#   unaligned.py SOCKET go_block_size BS the client agreed: refused
#
# The device must be memory-backed and at least 64 MiB.
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "hostile"))
from nbdraw import *  # noqa: E402,F401,F403

SOCK, MODE, BS = sys.argv[1], sys.argv[2], int(sys.argv[3])
MiB = 1 << 20
rng = random.Random(13)


def rand(n):
    return rng.randbytes(n)


def export_name():
    c = Conn(SOCK, timeout=60)
    c.start()
    c.opt(OPT_EXPORT_NAME, b"")
    c.size, c.eflags = struct.unpack(">QH", c.recv_exact(10))
    c.structured = False
    return c


class Export:
    """A connection and the reference copy it checks against."""

    def __init__(self, c, ref):
        self.c, self.ref, self.handle = c, ref, 100

    def next_handle(self):
        self.handle += 1
        return self.handle

    def write(self, off, data, flags=0):
        h = self.next_handle()
        self.c.request(CMD_WRITE, off, len(data), flags, h, data)
        self.ref[off:off + len(data)] = data
        assert self.c.simple() == (0, h, b""), "write %d at %d" % (
            len(data), off)

    def read(self, off, n):
        h = self.next_handle()
        self.c.request(CMD_READ, off, n, handle=h)
        err, got, data = self.c.simple(n)
        assert (err, got) == (0, h), "read %d at %d: error %d" % (n, off,
                                                                  err)
        return data

    def check(self, off, n, what):
        data = self.read(off, n)
        if data != self.ref[off:off + n]:
            bad = next(i for i in range(n)
                       if data[i] != self.ref[off + i])
            raise AssertionError("%s: byte %d differs (%d, expected %d)" % (
                what, off + bad, data[bad], self.ref[off + bad]))

    def around(self, off, n, what):
        """The request's bytes and a block either side."""
        lo = max(0, off - off % BS - BS)
        hi = min(len(self.ref), off + n + 2 * BS)
        self.check(lo, hi - lo, what)


def served():
    c = export_name()
    ref = bytearray(c.size)
    e = Export(c, ref)
    # Known, non-zero contents in the first 49 MiB: a write that touched
    # a neighbouring byte shows.
    for off in range(0, 49 * MiB, 8 * MiB):
        e.write(off, rand(min(8 * MiB, 49 * MiB - off)))

    e.write(1, rand(100))
    e.around(1, 100, "100 bytes at 1")
    assert e.read(1, 100) == ref[1:101]

    e.write(1, rand(MiB + 14))
    e.around(1, MiB + 14, "1 MiB + 14 at 1")
    assert e.read(BS - 3, MiB + 14) == ref[BS - 3:BS - 3 + MiB + 14]

    e.write(0, rand(47 * MiB))
    e.check(0, 47 * MiB, "47 MiB at 0")
    e.write(5, rand(47 * MiB), FLAG_FUA)
    e.check(0, 48 * MiB, "47 MiB at 5")
    e.write(3 * BS + 7, rand(BS - 9))
    e.around(3 * BS + 7, BS - 9, "inside one block")
    e.write(5 * BS - 1, rand(2))
    e.around(5 * BS - 1, 2, "across a block boundary")

    # WRITE_ZEROES and TRIM, misaligned: the neighbours keep their bytes.
    off, n = 7 * BS + 11, 3 * BS + 100
    h = e.next_handle()
    c.request(CMD_WRITE_ZEROES, off, n, handle=h)
    assert c.simple() == (0, h, b"")
    ref[off:off + n] = bytes(n)
    e.around(off, n, "misaligned zero")
    if c.eflags & (1 << 5):  # TRIM
        off, n = 20 * BS + 5, 4 * BS
        h = e.next_handle()
        c.request(CMD_TRIM, off, n, handle=h)
        assert c.simple() == (0, h, b"")
        # Inside the range anything may be read; outside nothing changed.
        ref[off:off + n] = e.read(off, n)
        e.around(off, n, "misaligned trim")

    # Concurrent misaligned writes that share blocks but not bytes, on
    # two connections at once, all in flight together: no write may undo
    # another's bytes.
    c2 = Export(export_name(), ref)
    base, piece = 30 * MiB + 3, 37
    writes = []
    for i in range(400):
        writes.append((base + i * piece, rand(piece)))
    rng.shuffle(writes)
    for conn in (e, c2):
        conn.pending = []
    for i, (off, data) in enumerate(writes):
        conn = (e, c2)[i % 2]
        h = conn.next_handle()
        conn.c.request(CMD_WRITE, off, len(data), handle=h, payload=data)
        conn.pending.append(h)
        ref[off:off + len(data)] = data
    for conn in (e, c2):
        got = sorted(conn.c.simple()[:2] for _ in conn.pending)
        assert got == sorted((0, h) for h in conn.pending), got
    e.around(base, 400 * piece, "concurrent writes sharing blocks")

    # Overlapping in bytes: each byte holds one of the writes' values.
    base = 40 * MiB + 1
    datas = [bytes([i + 1]) * (BS + 100) for i in range(8)]
    for i, d in enumerate(datas):
        conn = (e, c2)[i % 2]
        conn.c.request(CMD_WRITE, base + i * 50, len(d), handle=500 + i,
                       payload=d)
    for i in range(8):
        assert (e, c2)[i % 2].c.simple()[0] == 0
    got = e.read(base - BS, 2 * BS + 8 * 50 + 100 + BS)
    lo = base - BS
    for j in range(len(got)):
        pos = lo + j
        writers = [i + 1 for i in range(8)
                   if base + i * 50 <= pos < base + i * 50 + BS + 100]
        allowed = writers or [ref[pos]]
        assert got[j] in allowed, "byte %d: %d not in %r" % (pos, got[j],
                                                             allowed)
    ref[lo:lo + len(got)] = got
    c2.c.request(CMD_DISC)
    c2.c.close()

    # A GO client that did not ask for the block size, with structured
    # replies: misaligned reads in data and in a trimmed (hole) range
    # come back as chunks that rebuild the reference bytes.
    c3 = Conn(SOCK, timeout=60)
    c3.start()
    c3.go(structured=True)
    for off, n in ((1, 100), (BS - 1, 3 * BS + 5), (20 * BS + 7, 2 * BS),
                   (30 * MiB + 1, 1000)):
        c3.request(CMD_READ, off, n, handle=9)
        got = bytearray(n)
        while True:
            flags, ctype, h, payload = c3.chunk()
            assert h == 9 and ctype in (TYPE_OFFSET_DATA, TYPE_OFFSET_HOLE), \
                (h, ctype)
            at = struct.unpack(">Q", payload[:8])[0] - off
            if ctype == TYPE_OFFSET_DATA:
                got[at:at + len(payload) - 8] = payload[8:]
            else:
                hl = struct.unpack(">I", payload[8:12])[0]
                got[at:at + hl] = bytes(hl)
            if flags & 1:
                break
        assert got == ref[off:off + n], "structured read %d at %d" % (n,
                                                                       off)
    c3.request(CMD_DISC)
    c3.close()

    # Over the largest payload: refused, and the connection goes on.
    h = e.next_handle()
    c.request(CMD_READ, 0, 64 * MiB + 1, handle=h)
    assert c.simple()[:2] == (EINVAL, h)
    e.check(0, 64 * MiB, "64 MiB read")
    c.request(CMD_DISC)
    c.close()
    print("unaligned requests served, block %d" % BS)


def refused():
    c = Conn(SOCK, timeout=60)
    c.start()
    rtype, infos = c.info_go(OPT_GO, b"", [INFO_BLOCK_SIZE])
    assert rtype == REP_ACK
    minimum, preferred, maximum = struct.unpack(">III",
                                                infos[INFO_BLOCK_SIZE])
    assert (minimum, maximum) == (BS, 64 * MiB), (minimum, maximum)
    c.structured = False
    for cmd, off, n in ((CMD_READ, 1, 100), (CMD_READ, 0, BS + 1),
                        (CMD_WRITE, BS // 2, BS), (CMD_WRITE_ZEROES, 1, BS),
                        (CMD_TRIM, 0, 3)):
        payload = bytes(n) if cmd == CMD_WRITE else b""
        c.request(cmd, off, n, handle=7, payload=payload)
        err, h, _ = c.simple()
        assert (err, h) == (EINVAL, 7), "cmd %d %d at %d: %d" % (cmd, n,
                                                                 off, err)
    data = rand(BS)
    c.request(CMD_WRITE, BS, BS, handle=8, payload=data)
    assert c.simple() == (0, 8, b"")
    c.request(CMD_READ, BS, BS, handle=9)
    assert c.simple(BS) == (0, 9, data)
    c.request(CMD_DISC)
    c.close()
    print("a client that asked for the block size is held to %d" % BS)


{"export_name": served, "go_block_size": refused}[MODE]()
