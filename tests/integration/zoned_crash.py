# Run by test-zoned-persist.sh: a crash test of a zoned export's write
# pointers.  Zone 0 is conventional, zones are ZONE bytes.
#
#   zoned_crash.py write URI STATE GO
#     Writes 64 KiB chunks sequentially into zones 1, 2, ... round robin,
#     every third with FUA and a FLUSH every fifth, each chunk's bytes a
#     function of its offset.  After every acknowledged command it records
#     per zone what was issued and what is durable (the end of the last
#     FUA write acknowledged, or everything acknowledged before a
#     completed FLUSH) in STATE; touches GO after 40 chunks.  Runs until
#     the server goes away (kill -9), then exits 0.
#   zoned_crash.py verify URI STATE REPORT
#     REPORT is the control plane's zone report after the restart.  For
#     each zone the writer touched: durable <= write pointer <= issued,
#     the data below the write pointer is what was written, a write at
#     the write pointer succeeds and one past it fails.
import errno
import hashlib
import json
import os
import re
import sys

import nbd

ZONE = int(os.environ.get("ZONE_BYTES", 1 << 20))
NZONES = int(os.environ.get("CRASH_ZONES", 4))
CHUNK = 64 << 10


def pattern(off, n):
    out = bytearray()
    while len(out) < n:
        o = off + len(out)
        out += hashlib.sha256(b"%d" % (o // 4096)).digest() * 128
    return bytes(out[:n])


def save(path, st):
    with open(path + ".tmp", "w") as f:
        json.dump(st, f)
    os.rename(path + ".tmp", path)


def write(uri, state, go):
    h = nbd.NBD()
    h.connect_uri(uri)
    # zone -> [issued end, acknowledged end, durable end], bytes from
    # the zone start
    st = {str(z): [0, 0, 0] for z in range(1, NZONES + 1)}
    save(state, st)
    n = 0
    try:
        while True:
            z = 1 + n % NZONES
            e = st[str(z)]
            if e[0] + CHUNK > ZONE:
                break
            off = z * ZONE + e[0]
            fua = n % 3 == 2
            e[0] += CHUNK
            save(state, st)  # issued before it is sent
            h.pwrite(pattern(off, CHUNK), off,
                     nbd.CMD_FLAG_FUA if fua else 0)
            e[1] = e[0]
            if fua:
                e[2] = e[1]
            if n % 5 == 4:
                h.flush()
                for v in st.values():
                    v[2] = v[1]
            save(state, st)
            n += 1
            if n == 40:
                open(go, "w").close()
    except nbd.Error as ex:
        print("writer: stopped after %d chunks: %s" % (n, ex))
    save(state, st)
    open(go, "w").close()


def verify(uri, state, report):
    st = json.load(open(state))
    wps = {}
    for i, line in enumerate(open(report)):
        m = re.search(r"wptr 0x([0-9a-f]+)", line)
        wps[i] = int(m.group(1), 16) * 512
    h = nbd.NBD()
    h.connect_uri(uri)
    for z, (issued, acked, durable) in sorted(st.items()):
        z = int(z)
        wp = wps[z]
        print("zone %d: issued %d acked %d durable %d, write pointer %d"
              % (z, issued, acked, durable, wp))
        assert wp >= durable, "zone %d: wp %d below durable %d" % (
            z, wp, durable)
        assert wp <= issued, "zone %d: wp %d past issued %d" % (
            z, wp, issued)
        if wp:
            got = h.pread(wp, z * ZONE)
            assert got == pattern(z * ZONE, wp), \
                "zone %d: the data below the wp is not what was written" % z
        if wp + 8192 <= ZONE:
            try:
                h.pwrite(b"\x77" * 4096, z * ZONE + wp + 4096)
            except nbd.Error as ex:
                assert ex.errnum == errno.EIO, ex
            else:
                raise AssertionError("zone %d: a write past the wp worked" % z)
            h.pwrite(b"\x77" * 4096, z * ZONE + wp, nbd.CMD_FLAG_FUA)
            assert h.pread(4096, z * ZONE + wp) == b"\x77" * 4096
    h.shutdown()
    print("verify: ok")


if sys.argv[1] == "write":
    write(*sys.argv[2:5])
else:
    verify(*sys.argv[2:5])
