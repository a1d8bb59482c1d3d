#!/bin/bash
# The nbdkit plugin's nbdsh scripts against mqblkd: data integrity and
# error paths, read-only, two connections, advertised flags, the
# allocation map, and export listing.
. "$(dirname "$0")/mqblkd-lib.sh"

for dev in "${DEVICES[@]}"; do
	mqblkd_nbdsh "$dev" "$SCRIPTS/io.py"
	mqblkd_nbdsh "$dev" "$SCRIPTS/readonly.py" -r
	mqblkd_nbdsh "$dev" "$SCRIPTS/multiconn.py"
done

# What mqblkd advertises: as the plugin, except that CACHE is accepted
# and the maximum block size is mqblkd's own 64 MiB, and the minimum is the
# logical block for a client that asks (libnbd does).
check() {
	MQBLK_EXTRA=$2 MQBLK_EXPECT=$3 mqblkd_nbdsh "$1" "$SCRIPTS/flags.py" \
		"${@:4}"
}
rw="size=67108864 max=67108864 ro=0 flush=1 fua=1 zero=1 cache=1"
ro="size=67108864 max=67108864 ro=1 flush=1 fua=0 zero=0 trim=0 cache=1"
check ram "" "$rw rot=0 min=512 pref=512 trim=1 extents=1 multi=1 fastzero=1"
check ram "bs=4096" "$rw min=4096 pref=4096"
check ram "" "$ro rot=0 min=512 extents=1" -r
check null "" "$rw rot=0 min=512 trim=1 extents=1 multi=1 fastzero=1"
check null "bs=4096 rotational=1 discard=0" \
	"$rw rot=1 min=4096 pref=4096 trim=0 extents=1"
check null "memory_backed=0 discard=0" "$rw rot=0 min=512 trim=0 fastzero=0"
check file "" "$rw rot=0 min=512 trim=1 extents=1"
check file "" "$ro min=512 extents=1" -r
check file "readonly=1" "$ro min=512 extents=1"

# null without memory has no WRITE_ZEROES: mqblkd writes zeroes instead,
# in 1 MiB pieces, and FAST_ZERO is refused with ENOTSUP.
echo "== mqblkd: emulated zero on null memory_backed=0"
MQBLK_EXTRA="memory_backed=0 discard=0" mqblkd_serve null -- \
	"nbdsh -u \"\$uri\" -c '
import errno
assert h.can_zero() and not h.can_fast_zero()
h.zero(64 * 1024 * 1024 - 4096, 4096)
h.zero(3 * 1024 * 1024 + 512, 512, nbd.CMD_FLAG_FUA)
h.set_strict_mode(0)
try:
    h.zero(4096, 0, nbd.CMD_FLAG_FAST_ZERO)
    raise AssertionError(\"FAST_ZERO worked\")
except nbd.Error as e:
    assert e.errnum == errno.ENOTSUP, e
print(\"emulated zero ok\")
'"
