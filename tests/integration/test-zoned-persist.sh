#!/bin/bash
# Zoned models keep their zones with media=file:PATH (PATH.zones), and
# a write pointer only moves over data that reached the store.
#  - kill -9 during a sequential FUA/FLUSH write load (zoned_crash.py),
#    for smr and for null zoned=1 memory_backed=1: after the restart the
#    zone report's write pointers are past every durable write and not
#    past any write issued, the data below them reads back, and the next
#    write at the write pointer succeeds; open zones come back closed on
#    smr (ZBC) and stay open on null;
#  - a restart with other geometry keys, or without the zone file over
#    an image that holds data, is refused with a line naming the key;
#  - through the nbdkit plugin: a clean restart keeps the zones;
#  - a write the store fails (an nbd: remote behind nbdkit's error
#    filter) leaves the write pointer where it was, and the next write at
#    it succeeds once the store works again.
. "$(dirname "$0")/mqblkd-lib.sh"

CTL="$MQBLK_BUILD/mqblkctl -s $TESTTMP/ctl.sock"
IMG=$TESTTMP/disk.img

# crash NAME DISK KEYS...: one kill -9 run and its checks.
crash() {
	local name=$1 disk=$2
	shift 2
	rm -f "$IMG" "$IMG.zones" "$TESTTMP/go"
	: >"$IMG"
	echo "== $name: kill -9 during a zoned write load"
	mqblkd_start --control "$TESTTMP/ctl.sock" "$@" "media=file:$IMG"
	[ -f "$IMG.zones" ] || die "$name: no zone file made beside the image"
	$CLIENT python3 "$SCRIPTS/zoned_crash.py" write "$uri" \
		"$TESTTMP/state" "$TESTTMP/go" &
	local writer=$!
	for _ in $(seq 1000); do [ -e "$TESTTMP/go" ] && break; sleep 0.01; done
	[ -e "$TESTTMP/go" ] || die "$name: the writer never got going"
	kill -9 "$MQBLKD_PID"
	wait "$MQBLKD_PID" || true
	MQBLKD_PID=
	wait "$writer" || die "$name: the writer failed"
	cat "$TESTTMP/state"
	echo
	mqblkd_start --control "$TESTTMP/ctl.sock" "$@" "media=file:$IMG"
	$CTL get "$disk/zones" >"$TESTTMP/report.$name"
	head -6 "$TESTTMP/report.$name"
	$CLIENT python3 "$SCRIPTS/zoned_crash.py" verify "$uri" \
		"$TESTTMP/state" "$TESTTMP/report.$name"
	$CTL get "$disk/zones" >"$TESTTMP/report2.$name"
	mqblkd_stop
}

# 4 MiB zones, 16 of them, zone 0 conventional: the writer fills 8.
SMR=(smr capacity=64M zone_size=4M zone_nr_conv=1 time_scale=0)
NULL=(null zoned=1 zone_size=4 zone_nr_conv=1 size=64M memory_backed=1
	time_scale=0)
export ZONE_BYTES=$((4 << 20)) CRASH_ZONES=8
Z=$ZONE_BYTES
crash smr smr0 "${SMR[@]}"
# ZBC: a power cycle closes the open zones.
grep -q "(oi)" "$TESTTMP/report.smr" && die "smr: open zones after a restart"
grep -q "(cl)" "$TESTTMP/report.smr" || die "smr: no closed zone after a restart"
crash null nullb0 "${NULL[@]}"
# null_blk keeps them open.
grep -q "(oi)" "$TESTTMP/report.null" || die "null: open zones lost"

echo "== a clean restart keeps the zones, and the state after it"
mqblkd_start --control "$TESTTMP/ctl.sock" "${NULL[@]}" "media=file:$IMG"
$CTL set nullb0/zone/finish 3
$CTL set nullb0/zone/reset 1
$CTL get nullb0/zones >"$TESTTMP/before"
mqblkd_stop
mqblkd_start --control "$TESTTMP/ctl.sock" "${NULL[@]}" "media=file:$IMG"
$CTL get nullb0/zones >"$TESTTMP/after"
mqblkd_stop
diff "$TESTTMP/before" "$TESTTMP/after" || die "null: zones changed by a restart"
sed -n 4p "$TESTTMP/after" | grep -q "zcond:14(fu)" || die "finish lost"
sed -n 2p "$TESTTMP/after" | grep -q "wptr 0x000000 .*(em)" || die "reset lost"

echo "== other keys, or a lost zone file, are refused"
refused() {
	local what=$1
	shift
	! "$MQBLKD" -f -U "$TESTTMP/x.sock" "$@" 2>"$TESTTMP/refused" ||
		die "$*: started"
	cat "$TESTTMP/refused"
	grep -q -- "$what" "$TESTTMP/refused" || die "$*: not refused for $what"
}
refused "zone_size=8M but the zone file" "${NULL[@]/zone_size=4/zone_size=8}" \
	"media=file:$IMG"
refused "size=134217728 but the zone file" "${NULL[@]/size=64M/size=128M}" \
	"media=file:$IMG"
refused "zone_nr_conv=2 but the zone file" \
	"${NULL[@]/zone_nr_conv=1/zone_nr_conv=2}" "media=file:$IMG"
refused "zone_capacity=2M but the zone file" "${NULL[@]}" zone_capacity=2 \
	"media=file:$IMG"
mv "$IMG.zones" "$TESTTMP/saved.zones"
refused "holds data in its sequential zones but its zone file .* is missing" \
	"${NULL[@]}" "media=file:$IMG"
[ -e "$IMG.zones" ] && die "a zone file was made over data"
# A damaged entry: zone 1's write pointer, its checksum left as it was.
cp "$TESTTMP/saved.zones" "$IMG.zones"
printf '\xff' | dd of="$IMG.zones" bs=1 seek=$((4096 + 16 + 7)) conv=notrunc \
	status=none
refused "zone 1: bad entry" "${NULL[@]}" "media=file:$IMG"

echo "== the nbdkit plugin: a restart keeps the zones"
rm -f "$IMG" "$IMG.zones"
: >"$IMG"
mqblk_nbdkit -U - --run "\$CLIENT nbdsh -u \"\$uri\" -c '
h.pwrite(b\"p\" * 65536, $Z)
h.pwrite(b\"q\" * 65536, $Z + 65536, nbd.CMD_FLAG_FUA)
'" "$PLUGIN" device=smr "${SMR[@]:1}" "media=file:$IMG"
mqblk_nbdkit -U - --run "\$CLIENT nbdsh -u \"\$uri\" -c '
import errno
assert h.pread(131072, $Z) == b\"p\" * 65536 + b\"q\" * 65536
try:
    h.pwrite(b\"r\" * 4096, $Z)
except nbd.Error as e:
    assert e.errnum == errno.EIO
else:
    raise AssertionError(\"a write at the old zone start worked\")
h.pwrite(b\"r\" * 4096, $Z + 131072)
'" "$PLUGIN" device=smr "${SMR[@]:1}" "media=file:$IMG"

echo "== a write the store fails leaves the write pointer alone"
rsock=$TESTTMP/remote.sock
nbdkit -f -U "$rsock" --filter=error memory 64M error=EIO \
	error-pwrite-rate=1 "error-pwrite-file=$TESTTMP/fail" \
	2>"$TESTTMP/remote.log" &
REMOTE_PID=$!
trap 'kill -9 "$REMOTE_PID" 2>/dev/null || true; [ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null; rm -rf "$TESTTMP"' EXIT
wait_listening "$rsock" || die "the remote did not start"
ruri="nbd+unix:///?socket=$rsock"
for dev in "smr0 ${SMR[*]}" "nullb0 ${NULL[*]}"; do
	read -r disk keys <<<"$dev"
	echo "-- $disk"
	# shellcheck disable=SC2086 # keys: one a word
	mqblkd_start --control "$TESTTMP/ctl.sock" $keys "media=nbd:$ruri"
	$CLIENT nbdsh -u "$uri" -c "h.pwrite(b'\x11' * 65536, 2 * $Z)"
	touch "$TESTTMP/fail"
	! $CLIENT nbdsh -u "$uri" -c \
		"h.pwrite(b'\x22' * 65536, 2 * $Z + 65536)" 2>/dev/null ||
		die "$disk: the failing write succeeded"
	$CTL get "$disk/zones" | sed -n 3p >"$TESTTMP/wp"
	cat "$TESTTMP/wp"
	grep -q "wptr 0x000080 " "$TESTTMP/wp" ||
		die "$disk: the write pointer moved over a failed write"
	rm "$TESTTMP/fail"
	$CLIENT nbdsh -u "$uri" -c "
h.pwrite(b'\x33' * 65536, 2 * $Z + 65536)
assert h.pread(131072, 2 * $Z) == b'\x11' * 65536 + b'\x33' * 65536
"
	mqblkd_stop
	$CLIENT nbdsh -u "$ruri" -c 'h.trim(64 << 20, 0)'
done
grep -q "keeps no zone state: every zone starts empty" "$MQBLKD_LOG" ||
	die "nbd: no line saying the zones are not kept"
kill -TERM "$REMOTE_PID"
wait "$REMOTE_PID" || true
echo "zoned-persist: ok"
