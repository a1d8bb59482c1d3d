#!/bin/bash
# log_writes=PATH and mqblk-replay-log, through mqblkd and the plugin, on
# 512- and 4096-byte blocks: log_writes.py checks the log's entries and
# their order at each step of a workload (unflushed writes absent until a
# FLUSH, FUA at once, marks from mqblkctl) and its size; then replaying
# up to each mark onto a file, and onto an NBD export, must give the
# image's checksum at that mark, and replay-log's other options their
# meaning.  A log written here by hand from the format's description, as
# dm-log-writes would write it, must replay too.
. "$(dirname "$0")/mqblkd-lib.sh"

REPLAY=$MQBLK_BUILD/mqblk-replay-log
[ -x "$REPLAY" ] || die "$REPLAY not built"
LOG=$TESTTMP/writes.log
CTL=$TESTTMP/ctl.sock
STATE=$TESTTMP/state
SIZE=1M
mkdir -p "$STATE"

sha() { sha256sum "$1" | cut -d' ' -f1; }

# replay_to MARK|'': a fresh image replayed up to MARK (all of the log
# with ''); its checksum must be the state's.
replay_to() {
	local img=$TESTTMP/replay.img want=$STATE/${1:-final}.sha256
	rm -f "$img"
	truncate -s $SIZE "$img"
	$REPLAY --log "$LOG" --replay "$img" ${1:+--end-mark "$1"} ||
		die "replay to '${1:-the end}' failed"
	[ "$(sha "$img")" = "$(cat "$want")" ] ||
		die "replayed to '${1:-the end}': not the image at that point"
}

check_replays() {
	local out img=$TESTTMP/replay.img
	python3 "$SCRIPTS/log_writes.py" check-final "$LOG" "$STATE" ||
		die "the closed log is wrong"
	replay_to m1
	replay_to m2
	replay_to ''
	# entry 12 is m2 (log_writes.py's order); ENTRY@ the sector after it
	out=$($REPLAY --log "$LOG" --find --end-mark m2) || die "--find failed"
	[[ $out == 12@* ]] || die "--find --end-mark m2 said '$out', not 12@..."
	[ "$($REPLAY --log "$LOG" --num-entries)" = 15 ] ||
		die "--num-entries is not 15"
	$REPLAY --log "$LOG" | grep -q '^Log version=1, sectorsize=[0-9]*, entries=15$' ||
		die "no summary line without --replay"
	# --check flush runs the check at both FLUSH entries
	: >"$TESTTMP/checks"
	rm -f "$img"
	truncate -s $SIZE "$img"
	$REPLAY --log "$LOG" --replay "$img" --check flush \
		--fsck "echo >>$TESTTMP/checks" || die "--check flush failed"
	[ "$(wc -l <"$TESTTMP/checks")" = 2 ] ||
		die "--check flush ran $(wc -l <"$TESTTMP/checks") checks, not 2"
	# a failing check stops the replay at its entry, exit 1
	if out=$($REPLAY --log "$LOG" --replay "$img" --check 3 --fsck false 2>&1); then
		die "a failing --fsck did not fail the replay"
	fi
	[[ $out == *"fsck failed on entry 2"* ]] || die "--check 3: '$out'"
	# --start-entry 7 --limit 1: entry 7 alone (c, the first block)
	rm -f "$img"
	truncate -s $SIZE "$img"
	$REPLAY --log "$LOG" --replay "$img" --start-entry 7 --limit 1 -v |
		grep -q '^replayed 7: sector 0, 1 sectors' ||
		die "--start-entry 7 --limit 1 -v did not replay entry 7 alone"
	python3 - "$LOG" "$img" <<'PY' || die "--start-entry 7 --limit 1: wrong image"
import os, sys
sys.path.insert(0, os.environ["SCRIPTS"])
import log_writes as lw
entries, ss, _, _ = lw.parse(sys.argv[1])
img = open(sys.argv[2], "rb").read()
s, n, f, d = entries[7]
want = bytearray(len(img))
want[s * ss:(s + n) * ss] = d
sys.exit(img != bytes(want))
PY
	# onto an NBD export: nbdkit's memory plugin
	nbdkit -U - memory $SIZE --run "$REPLAY --log $LOG --replay \"\$uri\" --end-mark m2 &&
		nbdsh -u \"\$uri\" -c 'import hashlib; print(hashlib.sha256(h.pread(h.get_size(), 0)).hexdigest())' >$TESTTMP/nbd.sha" ||
		die "replay onto an NBD URI failed"
	[ "$(cat "$TESTTMP/nbd.sha")" = "$(cat "$STATE/m2.sha256")" ] ||
		die "replayed onto NBD to m2: not the image at m2"
}

export SCRIPTS
for bs in 512 4096; do
	echo "== mqblkd: ram bs=$bs log_writes="
	mqblkd_start --control "$CTL" ram size=$SIZE bs=$bs time_scale=0 \
		"log_writes=$LOG"
	python3 "$SCRIPTS/log_writes.py" "$uri" "$LOG" "$CTL" ram0 \
		"$MQBLK_BUILD" "$STATE" $bs || {
		mqblkd_stop || :
		die "mqblkd bs=$bs: the log is wrong"
	}
	mqblkd_stop
	check_replays

	echo "== nbdkit: ram bs=$bs log_writes="
	rm -f "$LOG" "$STATE"/*
	mqblk_nbdkit -U - --run "python3 $SCRIPTS/log_writes.py \"\$uri\" $LOG $CTL ram0 $MQBLK_BUILD $STATE $bs" \
		"$PLUGIN" device=ram size=$SIZE bs=$bs time_scale=0 \
		"log_writes=$LOG" "control=$CTL" 2>"$TESTTMP/nbdkit.log" || {
		cat "$TESTTMP/nbdkit.log" >&2
		die "plugin bs=$bs: the log is wrong"
	}
	check_replays
done

# A device with two disks logs each to PATH.DISK.
echo "== mqblkd: ide log_writes= (two disks)"
mqblkd_start ide slave=disk hda.size=$SIZE hdb.size=$SIZE time_scale=0 \
	"log_writes=$LOG"
mqblkd_stop
for d in hda hdb; do
	[ -s "$LOG.$d" ] || die "ide: no $LOG.$d"
done

# A bad path stops start-up naming the key.
if "$MQBLKD" -f -U "$TESTTMP/x.sock" ram size=$SIZE \
	log_writes=/nonexistent/dir/log 2>"$TESTTMP/err"; then
	die "log_writes= in a missing directory was accepted"
fi
grep -q 'log_writes=/nonexistent/dir/log: No such file' "$TESTTMP/err" ||
	die "the error line does not name the key: $(cat "$TESTTMP/err")"

# A log written by hand, as dm-log-writes writes one (its super counts
# entries only up to the last FUA or MARK: a trailing write it does not
# count must not be replayed).
echo "== a hand-made dm-log-writes log"
python3 - "$TESTTMP/hand.log" "$STATE" <<'PY' || die "cannot write the hand-made log"
import hashlib, struct, sys
log, state = sys.argv[1], sys.argv[2]
ss, size = 4096, 1 << 20
img = bytearray(size)
out = []
def entry(sector, nsec, flags, data=b"", name=b""):
    h = struct.pack("<QQQQ", sector, nsec, flags, len(name)) + name
    out.append(h + bytes(ss - len(h)) + data)
def write(sector, data, flags=0):
    entry(sector, len(data) // ss, flags, data)
    img[sector * ss:sector * ss + len(data)] = data
write(2, b"A" * 3 * ss)
write(10, b"F" * ss, 2)
entry(3, 1, 4)                      # DISCARD of block 3
img[3 * ss:4 * ss] = bytes(ss)
entry(0, 0, 1)                      # FLUSH
entry(0, 0, 8, name=b"hand")        # MARK
open(state + "/hand.sha256", "w").write(hashlib.sha256(img).hexdigest())
write(5, b"Z" * ss)
counted = len(out) - 1              # the super stops before this one
super_ = struct.pack("<QQQI", 0x6a736677736872, 1, counted, ss)
with open(log, "wb") as f:
    f.write(super_ + bytes(ss - len(super_)) + b"".join(out))
PY
for args in "--end-mark hand" ""; do
	rm -f "$TESTTMP/replay.img"
	truncate -s $SIZE "$TESTTMP/replay.img"
	# shellcheck disable=SC2086 # split on purpose
	$REPLAY --log "$TESTTMP/hand.log" --replay "$TESTTMP/replay.img" $args ||
		die "the hand-made log did not replay ($args)"
	[ "$(sha "$TESTTMP/replay.img")" = "$(cat "$STATE/hand.sha256")" ] ||
		die "the hand-made log replayed ($args) to the wrong image"
done
echo "ok"
