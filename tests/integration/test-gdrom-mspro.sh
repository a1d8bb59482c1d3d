#!/bin/bash
# The GD-ROM and the Memory Stick Pro through real clients, time off
# (time_scale=0):
#  - an ISO built here, served as gdrom: nbdinfo shows the export "gdrom",
#    2048-byte blocks and read-only; nbdcopy copies it out intact; a write
#    gets EPERM;
#  - mspro (export mspblk0) passes the round-trip test (io.py), a
#    write/flush/read across connections and an nbdcopy round trip; with
#    read_only=1 it is a read-only export (readonly.py);
#  - through mqblkd as well, when it is built.
# Building the ISO needs xorriso or genisoimage (the README's set-up
# installs genisoimage).
. "$(dirname "$0")/lib.sh"

mkdir -p "$TESTTMP/tree/disc"
head -c 2M /dev/urandom >"$TESTTMP/tree/disc/1ST_READ.BIN"
head -c 700K /dev/urandom >"$TESTTMP/tree/IP.BIN"
echo "mqblk gdrom test" >"$TESTTMP/tree/README"
ISO=$TESTTMP/test.iso
make_iso "$TESTTMP/tree" "$ISO"

# The devices of this test, for serve and run_nbdsh from lib.sh.
gdrom_mspro_args() {
	case $1 in
	gdrom)
		ARGS=(device=gdrom "image=$ISO" time_scale=0)
		;;
	mspro)
		ARGS=(device=mspro size=64M time_scale=0)
		;;
	mspro-ro)
		ARGS=(device=mspro size=64M read_only=1 time_scale=0)
		;;
	*)
		die "device_args: unknown device $1"
		;;
	esac
}
device_args() { gdrom_mspro_args "$1"; }

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
# libnbd refuses a write itself; then let the server refuse every
# write-like command.
try:
    h.pwrite(b"x" * 2048, 0)
except nbd.Error as e:
    assert e.errnum == errno.EPERM, "write: errno %s, expected EPERM" % e.errnum
else:
    raise AssertionError("a write to the GD-ROM succeeded")
h.set_strict_mode(0)
for what, fn, args in [
    ("write", h.pwrite, (b"x" * 2048, 0)),
    ("fua write", h.pwrite, (b"x" * 2048, 2048, nbd.CMD_FLAG_FUA)),
    ("zero", h.zero, (2048, 0)),
    ("trim", h.trim, (2048, 0)),
]:
    try:
        fn(*args)
    except nbd.Error as e:
        assert e.errnum == errno.EPERM, \
            "%s: errno %s, expected EPERM" % (what, e.errnum)
    else:
        raise AssertionError("a %s to the GD-ROM succeeded" % what)
# Reads of less than a 2048-byte block: refused where the client agreed
# to the 2048-byte minimum (mqblkd), served from the block where the
# minimum is 1 (the plugin).
if h.get_block_size(nbd.SIZE_MINIMUM) == 2048:
    try:
        h.pread(512, 0)
    except nbd.Error as e:
        assert e.errnum == errno.EINVAL, "short read: errno %s" % e.errnum
    else:
        raise AssertionError("a 512-byte read of a 2048-byte device worked")
else:
    assert h.pread(512, 100) == h.pread(2048, 0)[100:612], "short read"
assert len(h.pread(4096, 2048)) == 4096
print("gdrom: writes refused with EPERM")
EOF

echo "== gdrom: nbdinfo, nbdcopy, EPERM"
serve gdrom -- "\$NOPRELOAD nbdinfo \"\$uri\" > $TESTTMP/info &&
	\$NOPRELOAD nbdcopy \"\$uri\" $TESTTMP/out.iso &&
	\$NOPRELOAD nbdsh -u \"\$uri\" -c - < $TESTTMP/eperm.py"
cat "$TESTTMP/info"
grep -q 'export="gdrom"' "$TESTTMP/info" || die "gdrom: export is not gdrom"
grep -q "block_size_minimum: 1$" "$TESTTMP/info" &&
	grep -q "block_size_preferred: 2048" "$TESTTMP/info" ||
	die "gdrom: block sizes are not 1 and 2048 (minimum, preferred)"
grep -q "is_read_only: true" "$TESTTMP/info" || die "gdrom: not read-only"
grep -q "export-size: $iso_size" "$TESTTMP/info" ||
	die "gdrom: size is not the ISO's ($iso_size)"
grep -q "Sega Dreamcast GD-ROM gdrom (Linux gdrom)" "$TESTTMP/info" ||
	die "gdrom: description"
got=$(sha256sum <"$TESTTMP/out.iso")
[ "$got" = "$want" ] || die "gdrom: checksum $got, expected $want"

# mspro: io.py wants a 64 MiB read-write export.
run_nbdsh mspro "$SCRIPTS/io.py"
run_nbdsh mspro-ro "$SCRIPTS/readonly.py"

echo "== mspro: write, flush, read back on another connection"
cat >"$TESTTMP/card.py" <<'EOF'
import os
import nbd

assert not h.is_read_only()
assert h.get_block_size(nbd.SIZE_MINIMUM) == 1  # the plugin: any alignment
assert h.get_block_size(nbd.SIZE_PREFERRED) == 512
assert h.can_flush()
data = os.urandom(1 << 20)
h.pwrite(data, 5 << 20)
h.flush()
h2 = nbd.NBD()
h2.connect_uri(os.environ["uri"])
assert h2.pread(len(data), 5 << 20) == data, "data lost across connections"
print("mspro: write/flush/read ok")
EOF
serve mspro -- "\$NOPRELOAD nbdinfo \"\$uri\" > $TESTTMP/info &&
	\$NOPRELOAD uri=\"\$uri\" nbdsh -u \"\$uri\" -c - < $TESTTMP/card.py"
grep -q 'export="mspblk0"' "$TESTTMP/info" || die "mspro: export is not mspblk0"
grep -q "mspro_block" "$TESTTMP/info" || die "mspro: description"

echo "== mspro: nbdcopy in and out"
head -c 64M /dev/urandom >"$TESTTMP/in"
card_want=$(sha256sum <"$TESTTMP/in")
serve mspro -- "\$NOPRELOAD nbdcopy --flush $TESTTMP/in \"\$uri\" &&
	\$NOPRELOAD nbdcopy \"\$uri\" $TESTTMP/card.out"
got=$(sha256sum <"$TESTTMP/card.out")
[ "$got" = "$card_want" ] || die "mspro: checksum $got, expected $card_want"

if [ -x "$MQBLK_BUILD/mqblkd" ]; then
	echo "== mqblkd: gdrom and mspro"
	OUT=$TESTTMP
	(
		# mqblkd-lib.sh sources lib.sh again: a new $TESTTMP (removed
		# when this subshell exits) and lib.sh's own device_args.
		. "$SCRIPTS/mqblkd-lib.sh"
		device_args() { gdrom_mspro_args "$1"; }
		mqblkd_start gdrom "image=$ISO" time_scale=0
		$NOPRELOAD nbdcopy "$uri" "$OUT/out2.iso"
		$NOPRELOAD nbdinfo "$uri" >"$OUT/info2"
		$NOPRELOAD nbdsh -u "$uri" -c - <"$OUT/eperm.py"
		mqblkd_stop
		grep -q "block_size_minimum: 2048" "$OUT/info2" ||
			die "mqblkd: minimum block size is not 2048"
		grep -q "is_read_only: true" "$OUT/info2" ||
			die "mqblkd: not read-only"
		mqblkd_nbdsh mspro "$SCRIPTS/io.py"
	)
	got=$(sha256sum <"$OUT/out2.iso")
	[ "$got" = "$want" ] || die "mqblkd: checksum $got, expected $want"
fi
echo "gdrom-mspro: ok"
