#!/bin/bash
# The IDE stack through real clients, with time off (time_scale=0):
#  - an ISO built here, served as ide-cd: nbdinfo shows 2048-byte blocks
#    and read-only, nbdcopy copies it out intact, a write gets EPERM;
#  - the same ISO as the slave of a channel (export hdb) next to a disk;
#  - ide-disk passes the round-trip test (io.py) and a write/flush/read;
#  - through mqblkd as well, when it is built.
# Building the ISO needs xorriso or genisoimage (the README's set-up
# installs genisoimage).
. "$(dirname "$0")/lib.sh"

mkdir -p "$TESTTMP/tree/sub"
head -c 3M /dev/urandom >"$TESTTMP/tree/random.bin"
head -c 300K /dev/urandom >"$TESTTMP/tree/sub/small.bin"
echo "mqblk ide-cd test" >"$TESTTMP/tree/README"
ISO=$TESTTMP/test.iso
make_iso "$TESTTMP/tree" "$ISO"

# ide_nbdkit COMMAND ARGS...: a captive nbdkit with the plugin.
ide_nbdkit() {
	local cmd=$1 rc=0
	shift
	mqblk_nbdkit -U - --run "$cmd" "$PLUGIN" time_scale=0 "$@" \
		2>"$TESTTMP/nbdkit.log" || rc=$?
	cat "$TESTTMP/nbdkit.log" >&2
	return $rc
}

# A write must get EPERM, whether libnbd or the server refuses it.
cat >"$TESTTMP/eperm.py" <<'EOF'
import errno
import nbd

assert h.is_read_only(), "not advertised read-only"
# mqblkd holds a client that asks (libnbd does) to the 2048-byte block;
# the plugin serves any alignment: minimum 1, preferred 2048.
assert (h.get_block_size(nbd.SIZE_MINIMUM),
        h.get_block_size(nbd.SIZE_PREFERRED)) in ((2048, 2048), (1, 2048)), \
    "block sizes"
for strict in (True, False):
    if not strict:
        h.set_strict_mode(0)  # make the server refuse it
    try:
        h.pwrite(b"x" * 2048, 0)
    except nbd.Error as e:
        assert e.errnum == errno.EPERM, "errno %s, expected EPERM" % e.errnum
    else:
        raise AssertionError("a write to the CD succeeded")
print("ide-cd: write refused with EPERM")
EOF

echo "== ide-cd: nbdinfo, nbdcopy, EPERM"
ide_nbdkit "\$NOPRELOAD nbdinfo \"\$uri\" > $TESTTMP/info &&
	\$NOPRELOAD nbdcopy \"\$uri\" $TESTTMP/out.iso &&
	\$NOPRELOAD nbdsh -u \"\$uri\" -c - < $TESTTMP/eperm.py" \
	device=ide-cd "image=$ISO"
cat "$TESTTMP/info"
grep -q "block_size_minimum: 1$" "$TESTTMP/info" &&
	grep -q "block_size_preferred: 2048" "$TESTTMP/info" ||
	die "ide-cd: block sizes are not 1 and 2048 (minimum, preferred)"
grep -q "is_read_only: true" "$TESTTMP/info" || die "ide-cd: not read-only"
grep -q "export-size: $iso_size" "$TESTTMP/info" ||
	die "ide-cd: size is not the ISO's ($iso_size)"
grep -q "ATAPI 12X CD-ROM drive" "$TESTTMP/info" ||
	die "ide-cd: description"
got=$(sha256sum <"$TESTTMP/out.iso")
[ "$got" = "$want" ] || die "ide-cd: checksum $got, expected $want"

echo "== ide channel: disk hda, CD hdb"
rm -f "$TESTTMP/out.iso"
ide_nbdkit "\$NOPRELOAD nbdinfo --list \"\$uri\" > $TESTTMP/list &&
	\$NOPRELOAD nbdcopy \"nbd+unix:///hdb?socket=\$unixsocket\" \
		$TESTTMP/out.iso &&
	\$NOPRELOAD nbdinfo \"nbd+unix:///hda?socket=\$unixsocket\" \
		> $TESTTMP/info" \
	device=ide slave=cd hda.size=256G "hdb.image=$ISO"
grep -q 'export="hda"' "$TESTTMP/list" || die "channel: no hda export"
grep -q 'export="hdb"' "$TESTTMP/list" || die "channel: no hdb export"
grep -q "LBA48" "$TESTTMP/info" || die "channel: a 256G disk is not LBA48"
got=$(sha256sum <"$TESTTMP/out.iso")
[ "$got" = "$want" ] || die "channel: hdb checksum $got, expected $want"

echo "== ide-disk: io.py round trip"
MQBLK_DEVICE=ide-disk ide_nbdkit \
	"\$NOPRELOAD nbdsh --base-allocation -u \"\$uri\" -c - < $SCRIPTS/io.py" \
	device=ide-disk size=64M

echo "== ide-disk: write, flush, read back after a reconnect"
cat >"$TESTTMP/disk.py" <<'EOF'
import os
import nbd

assert not h.is_read_only()
assert h.get_block_size(nbd.SIZE_MINIMUM) == 1  # the plugin: any alignment
assert h.get_block_size(nbd.SIZE_PREFERRED) == 512
assert h.can_flush()
data = os.urandom(1 << 20)
h.pwrite(data, 3 << 20)
h.flush()
h2 = nbd.NBD()
h2.connect_uri(os.environ["uri"])
assert h2.pread(len(data), 3 << 20) == data, "data lost across connections"
print("ide-disk: write/flush/read ok")
EOF
ide_nbdkit "\$NOPRELOAD uri=\"\$uri\" nbdsh -u \"\$uri\" -c - < $TESTTMP/disk.py" \
	device=ide-disk size=64M

if [ -x "$MQBLK_BUILD/mqblkd" ]; then
	echo "== mqblkd: ide-cd"
	out=$TESTTMP # mqblkd-lib.sh makes its own TESTTMP
	(
		. "$SCRIPTS/mqblkd-lib.sh"
		mqblkd_start ide-cd "image=$ISO" time_scale=0
		# shellcheck disable=SC2154 # set by mqblkd_start
		$NOPRELOAD nbdcopy "$uri" "$out/out2.iso"
		$NOPRELOAD nbdinfo "$uri" >"$out/info2"
		mqblkd_stop
		grep -q "block_size_minimum: 2048" "$out/info2" ||
			die "mqblkd: minimum block size is not 2048"
		grep -q "is_read_only: true" "$out/info2" ||
			die "mqblkd: not read-only"
	)
	got=$(sha256sum <"$TESTTMP/out2.iso")
	[ "$got" = "$want" ] || die "mqblkd: checksum $got, expected $want"
fi
echo "ide: ok"
