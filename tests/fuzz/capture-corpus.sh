#!/bin/bash
# Record the seed corpus for fuzz_nbd: the bytes real clients (nbdinfo,
# nbdsh, qemu-img, qemu-io, nbdcopy) send to mqblkd, captured by a proxy
# in front of it.  Each seed is a mode byte (0: --tls=off) and the
# client's stream, cut at 16 KiB; every stream is also kept with
# STARTTLS put in after the client flags (modes 1 and 2, TLS on and
# required), since the fuzzer's buffer connection "upgrades" in place.
#
#   tests/fuzz/capture-corpus.sh BUILD_DIR [OUT_DIR]   (default: corpus/)
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: capture-corpus.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$here/corpus}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/capture.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || :; done; rm -rf "$tmp"' EXIT
mkdir -p "$out" "$tmp/raw"

cat > "$tmp/ini" <<INI
[rw]
device=ram
size=16M
time_scale=0
[ro]
device=null
memory_backed=1
size=16M
time_scale=0
INI
"$build/mqblkd" -f -U "$tmp/server.sock" -c "$tmp/ini" 2>"$tmp/log" &
pids+=($!)
python3 - "$tmp/proxy.sock" "$tmp/server.sock" "$tmp/raw" <<'PY' &
import asyncio, itertools, sys
listen, target, outdir = sys.argv[1:4]
counter = itertools.count()

async def pump(reader, writer, record=None):
    try:
        while data := await reader.read(65536):
            if record is not None and len(record) < 16384:
                record += data[:16384 - len(record)]
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()

async def handle(cr, cw):
    sr, sw = await asyncio.open_unix_connection(target)
    rec = bytearray()
    await asyncio.gather(pump(cr, sw, rec), pump(sr, cw))
    with open("%s/%03d" % (outdir, next(counter)), "wb") as f:
        f.write(rec)

async def main():
    server = await asyncio.start_unix_server(handle, listen)
    async with server:
        await server.serve_forever()

asyncio.run(main())
PY
pids+=($!)
for _ in $(seq 100); do [ -S "$tmp/proxy.sock" ] && break; sleep 0.05; done
u="nbd+unix:///?socket=$tmp/proxy.sock"
ro="nbd+unix:///ro?socket=$tmp/proxy.sock"

nbdinfo --list "$u" >/dev/null
nbdinfo "$ro" >/dev/null
nbdinfo --map "$u" >/dev/null
nbdsh --base-allocation -u "$u" -c '
import os
h.pwrite(os.urandom(8192), 1 << 20, nbd.CMD_FLAG_FUA)
h.pread(8192, 1 << 20)
h.pread_structured(65536, 0, lambda *a: 0, nbd.CMD_FLAG_DF)
h.trim(65536, 2 << 20)
h.zero(65536, 3 << 20, nbd.CMD_FLAG_NO_HOLE)
h.zero(4096, 4 << 20, nbd.CMD_FLAG_FAST_ZERO)
h.cache(65536, 0)
h.flush()
h.block_status(4 << 20, 0, lambda *a: 0)
h.block_status(4 << 20, 0, lambda *a: 0, nbd.CMD_FLAG_REQ_ONE)
h.shutdown()'
nbdsh -c '
h.set_request_structured_replies(False)
h.connect_uri("'"$u"'")
h.pwrite(b"x" * 512, 0)
h.pread(4096, 0)
h.shutdown()'
nbdsh --opt-mode -u "$u" -c '
h.opt_list(lambda n, d: 0)
h.opt_list_meta_context(lambda n: 0)
h.set_export_name("ro")
h.opt_info()
h.opt_abort()'
qemu-img info "$u" >/dev/null
qemu-io -f raw -c 'write -P 0x33 0 64k' -c 'read -P 0x33 0 64k' \
	-c 'aio_write 1M 4k' -c aio_flush "$u" >/dev/null
head -c 1M /dev/urandom > "$tmp/small"
nbdcopy "$tmp/small" "$u"
sleep 0.5 # let the proxy write its last records

# Seeds: 0 + stream; 1|2 + flags + STARTTLS + the rest of the stream.
python3 - "$tmp/raw" "$out" <<'PY'
import os, struct, sys
raw, out = sys.argv[1:3]
starttls = struct.pack(">QII", 0x49484156454F5054, 5, 0)
for name in sorted(os.listdir(raw)):
    data = open(os.path.join(raw, name), "rb").read()
    if len(data) < 4:
        continue
    open(os.path.join(out, "session-%s" % name), "wb").write(b"\0" + data)
    for mode in (1, 2):
        seed = bytes([mode]) + data[:4] + starttls + data[4:]
        open(os.path.join(out, "tls%d-%s" % (mode, name)), "wb").write(seed)
PY
ls "$out" | wc -l
