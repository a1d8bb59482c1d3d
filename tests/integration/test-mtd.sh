#!/bin/bash
# The flash exports (mtdblock, mtdblock_ro, ftl over the nandsim chip
# model) through real clients, time off (time_scale=0):
#  - an ext4 image made here with mkfs.ext4 is nbdcopy'd onto ftl0 and
#    back: identical, and e2fsck -fn finds it clean;
#  - with image=, the filesystem is still there after a restart;
#  - through mqblkd with --control: a power cut with mqblkctl makes reads
#    fail with EIO, poweron brings back everything flushed;
#  - a write/flush/read round trip on mtdblock and ftl through both front
#    ends, and mtdblock_ro is read-only;
#  - mqblkd's demo rack serves mtdblock and ftl.
. "$(dirname "$0")/lib.sh"

IMG=$TESTTMP/chip.img
mtd_args() {
	case $1 in
	ftl) ARGS=(device=ftl size=32M time_scale=0 "image=$IMG") ;;
	mtdblock) ARGS=(device=mtdblock size=8M time_scale=0) ;;
	mtdblock-img) ARGS=(device=mtdblock size=8M time_scale=0 "image=$IMG") ;;
	mtdblock_ro) ARGS=(device=mtdblock_ro size=8M time_scale=0 "image=$IMG") ;;
	*) die "device_args: unknown device $1" ;;
	esac
}
device_args() { mtd_args "$1"; }

cat >"$TESTTMP/rt.py" <<'EOF2'
import os
assert not h.is_read_only()
assert h.can_flush()
size = h.get_size()
for off in (0, 4096 * 7, size - 65536):
    data = os.urandom(65536)
    h.pwrite(data, off)
    h.flush()
    assert h.pread(65536, off) == data, off
# a partial erase block, then a write to another block, then back
a = os.urandom(1536)
h.pwrite(a, 512)
h.pwrite(os.urandom(512), 300 * 1024)
assert h.pread(1536, 512) == a
print("round trip ok on", h.get_export_name() or "default export")
EOF2

echo "== ftl: mkfs.ext4 image onto ftl0 and back"
rm -f "$IMG"
size=$(serve ftl -- "\$CLIENT nbdinfo --size \"\$uri\"")
[ "$size" -gt $((20 << 20)) ] || die "ftl0 is only $size bytes"
truncate -s "$size" "$TESTTMP/fs.img"
mkfs.ext4 -q -F -b 4096 "$TESTTMP/fs.img"
# put some files in it without mounting: debugfs writes them
head -c 3M /dev/urandom >"$TESTTMP/blob"
debugfs -w -R "write $TESTTMP/blob blob" "$TESTTMP/fs.img" >/dev/null 2>&1 ||
	true
serve ftl -- "\$CLIENT nbdcopy --flush $TESTTMP/fs.img \"\$uri\" &&
	\$CLIENT nbdcopy \"\$uri\" $TESTTMP/back.img"
cmp "$TESTTMP/fs.img" "$TESTTMP/back.img" || die "ftl: the image came back different"
e2fsck -fn "$TESTTMP/back.img" || die "ftl: e2fsck found errors"

echo "== ftl: the filesystem survives a restart (image=)"
serve ftl -- "\$CLIENT nbdcopy \"\$uri\" $TESTTMP/back2.img"
cmp "$TESTTMP/fs.img" "$TESTTMP/back2.img" || die "ftl: lost across a restart"

echo "== round trips through nbdkit"
run_nbdsh ftl "$TESTTMP/rt.py"
run_nbdsh mtdblock "$TESTTMP/rt.py"

echo "== mtdblock_ro: what mtdblock wrote, read-only"
rm -f "$IMG"
head -c 1M /dev/urandom >"$TESTTMP/one"
serve mtdblock-img -- "\$CLIENT nbdcopy --flush $TESTTMP/one \"\$uri\""
serve mtdblock_ro -- "\$CLIENT nbdinfo \"\$uri\" > $TESTTMP/info &&
	\$CLIENT nbdcopy \"\$uri\" $TESTTMP/ro.out"
grep -q "is_read_only: true" "$TESTTMP/info" || die "mtdblock_ro is writable"
cmp -n $((1 << 20)) "$TESTTMP/one" "$TESTTMP/ro.out" ||
	die "mtdblock_ro does not read what mtdblock wrote"

echo "== mqblkd: power cut through mqblkctl, poweron, recovery"
OUT=$TESTTMP
(
	. "$SCRIPTS/mqblkd-lib.sh"
	device_args() { mtd_args "$1"; }
	IMG=$OUT/chip2.img
	CTL="$MQBLK_BUILD/mqblkctl -s $TESTTMP/ctl.sock"
	export CTL
	mqblkd_start --control "$TESTTMP/ctl.sock" ftl size=32M time_scale=0 \
		"image=$IMG"
	nbdsh -u "$uri" -c '
import errno, os, subprocess
ctl = os.environ["CTL"].split()
def c(*a):
    return subprocess.run(ctl + list(a), check=True, capture_output=True,
                          text=True).stdout.strip()
data = os.urandom(1 << 20)
h.pwrite(data, 3 << 20)
h.flush()
h.pwrite(os.urandom(512), 9 << 20)   # not flushed: may be lost
assert c("get", "ftl0/device/power") == "on"
c("set", "ftl0/fault/powercut")
assert c("get", "ftl0/device/power") == "off"
try:
    h.pread(4096, 3 << 20)
except nbd.Error as e:
    assert e.errnum == errno.EIO, e.errnum
else:
    raise AssertionError("a read with the power off worked")
c("set", "ftl0/fault/poweron")
assert c("get", "ftl0/device/power") == "on"
assert h.pread(1 << 20, 3 << 20) == data, "flushed data lost"
print("recovered pages:", c("get", "ftl0/device/recovered_pages"))
# A cut armed and then disarmed never comes.
c("set", "ftl0/fault/powercut_after", "1")
c("set", "ftl0/fault/powercut_after", "0")
h.pwrite(data, 5 << 20)
h.flush()
assert c("get", "ftl0/device/power") == "on", "a disarmed cut came"
assert h.pread(1 << 20, 5 << 20) == data
print("erase counts:", c("get", "ftl0/device/erase_counts"))
'
	mqblkd_stop
	mqblkd_nbdsh mtdblock "$OUT/rt.py"
	mqblkd_nbdsh ftl "$OUT/rt.py"

	echo "== the demo rack has mtdblock and ftl, once each"
	mqblkd_start --demo
	nbdinfo --list "$uri" >"$OUT/list"
	mqblkd_stop
	[ "$(grep -c '^export="mtdblock":' "$OUT/list")" = 1 ] ||
		die "demo: not one mtdblock"
	grep -q '^export="ftl":' "$OUT/list" || die "demo: no ftl"
)
echo "test-mtd: ok"
