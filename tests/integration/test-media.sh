#!/bin/bash
# media= on the emulated models, through both front ends: an ide-disk and
# an sx8 port keep their sectors in nbdkit memory (media=nbd:URI) or in a
# file (media=file:PATH, image= as its synonym); what is written through
# the model is what the store holds, and reads back.  A bad store string
# stops start-up with one clear line; a model that cannot keep its media
# elsewhere refuses media= and says why.  A model that reaches its store
# from queue_rq, on a remote that stops answering, holds up only its own
# export.
. "$(dirname "$0")/mqblkd-lib.sh"

REMOTE_PID=
trap '[ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null;
      [ -n "$REMOTE_PID" ] && kill -9 "$REMOTE_PID" 2>/dev/null;
      rm -rf "$TESTTMP"' EXIT

rsock=$TESTTMP/remote.sock
ruri="nbd+unix:///?socket=$rsock"
rm -f "$rsock"
nbdkit -f -U "$rsock" memory 64M 2>"$TESTTMP/remote.log" &
REMOTE_PID=$!
wait_listening "$rsock" || die "nbdkit memory did not start"

head -c 4M /dev/urandom >"$TESTTMP/a.bin"
head -c 4M /dev/urandom >"$TESTTMP/b.bin"

# same FILE URI OFFSET: the first 4 MiB at OFFSET of URI are FILE.
same() {
	$CLIENT nbdcopy "$2" "$TESTTMP/out.bin"
	cmp -n 4194304 -i "0:$3" "$1" "$TESTTMP/out.bin" ||
		die "$2 does not hold $1 at $3"
}

echo "== mqblkd: ide-disk with media=nbd: (nbdkit memory)"
mqblkd_start ide-disk "media=nbd:$ruri" time_scale=0
$CLIENT nbdinfo "$uri" | grep -q 'export-size: 67108864' ||
	die "ide-disk did not take the remote's size"
$CLIENT nbdcopy "$TESTTMP/a.bin" "$uri"
same "$TESTTMP/a.bin" "$uri" 0
same "$TESTTMP/a.bin" "$ruri" 0
mqblkd_stop

echo "== mqblkd: ide-disk with media=file:, then image= on the same file"
truncate -s 32M "$TESTTMP/disk.img"
mqblkd_start ide-disk "media=file:$TESTTMP/disk.img" time_scale=0
$CLIENT nbdcopy "$TESTTMP/b.bin" "$uri"
mqblkd_stop
cmp -n 4194304 "$TESTTMP/b.bin" "$TESTTMP/disk.img" ||
	die "media=file: does not hold what ide-disk wrote"
mqblkd_start ide-disk "image=$TESTTMP/disk.img" time_scale=0
same "$TESTTMP/b.bin" "$uri" 0
mqblkd_stop

echo "== mqblkd: sx8 ports on nbd: and file:"
truncate -s 16M "$TESTTMP/port1.img"
mqblkd_start sx8 ports=4 time_scale=0 "port0.media=nbd:$ruri" \
	"port1.media=file:$TESTTMP/port1.img" port2.present=0 port3.present=0
p0="nbd+unix:///sx8/port0?socket=$unixsocket"
p1="nbd+unix:///sx8/port1?socket=$unixsocket"
$CLIENT nbdcopy "$TESTTMP/b.bin" "$p0"
$CLIENT nbdcopy "$TESTTMP/a.bin" "$p1"
same "$TESTTMP/b.bin" "$p0" 0
same "$TESTTMP/b.bin" "$ruri" 0
same "$TESTTMP/a.bin" "$p1" 0
mqblkd_stop
cmp -n 4194304 "$TESTTMP/a.bin" "$TESTTMP/port1.img" ||
	die "port1.media=file: does not hold what sx8/port1 wrote"

echo "== mqblkd: scsi on nbd:, null (memory_backed) on file:"
mqblkd_start scsi "media=nbd:$ruri" size=8M time_scale=0
$CLIENT nbdcopy "$TESTTMP/a.bin" "$uri"
same "$TESTTMP/a.bin" "$uri" 0
# scsi's write cache (wce=1) holds what nbdcopy wrote (it sends no
# FLUSH); a clean stop synchronizes it, as sd_shutdown does.
mqblkd_stop
same "$TESTTMP/a.bin" "$ruri" 0
truncate -s 16M "$TESTTMP/null.img"
mqblkd_start null memory_backed=1 size=16M \
	"media=file:$TESTTMP/null.img" time_scale=0
$CLIENT nbdcopy "$TESTTMP/b.bin" "$uri"
same "$TESTTMP/b.bin" "$uri" 0
mqblkd_stop
cmp -n 4194304 "$TESTTMP/b.bin" "$TESTTMP/null.img" ||
	die "null's media=file: does not hold what was written"

echo "== nbdkit plugin: ide-disk with media=file:"
truncate -s 32M "$TESTTMP/plugin.img"
mqblk_nbdkit -U - --run "\$CLIENT nbdcopy $TESTTMP/a.bin \"\$uri\"" \
	"$PLUGIN" device=ide-disk "media=file:$TESTTMP/plugin.img" \
	time_scale=0 2>"$TESTTMP/nbdkit.log" || {
	cat "$TESTTMP/nbdkit.log"
	die "nbdkit mqblk ide-disk media=file: failed"
}
cmp -n 4194304 "$TESTTMP/a.bin" "$TESTTMP/plugin.img" ||
	die "the plugin's media=file: does not hold what was written"

echo "== bad media= strings: one clear line"
# refused ARGS... -- WANT: mqblkd refuses ARGS with a line holding WANT.
refused() {
	local args=() rc=0
	while [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	shift
	# bounded: a server that took the keys would serve until stopped
	timeout 20 "$MQBLKD" -f -U "$TESTTMP/refused.sock" "${args[@]}" \
		2>"$TESTTMP/refused.log" || rc=$?
	cat "$TESTTMP/refused.log"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || die "mqblkd took ${args[*]}"
	grep -qF -- "$1" "$TESTTMP/refused.log" ||
		die "no line '$1' for ${args[*]}"
}
refused ide-disk media=tape:0 -- \
	"media=tape:0: unknown store; accepted: ram|file:PATH|nbd:URI"
refused ide-disk media=file:/nonexistent/disk.img -- \
	"media=file:/nonexistent/disk.img: No such file or directory"
refused ide-disk "media=nbd:nbd+unix:///?socket=$TESTTMP/none.sock" -- \
	"cannot connect"
refused ide-disk "image=$TESTTMP/disk.img" media=ram -- "give one of them"
refused ram media=ram -- "ram: media= is not taken"
refused sx8 "media=file:$TESTTMP/port1.img" -- "would be shared by 8 ports"

echo "== a stalled store holds up only its own export"
# The models that reach their store from queue_rq (smr, scsi, null with
# memory_backed=1) ask for a BLOCKING tag set when the store may sleep,
# so that a read waiting on a stopped remote waits on a worker, not on
# the event loop that also serves the ram export beside it (-t 1: one
# loop for both).
CTL="$MQBLK_BUILD/mqblkctl -s $TESTTMP/ctl.sock"
# the read has reached the model: started, and waiting on the store
slow_started() { [ "$($CTL get slow/inflight)" = "1 0" ]; }
for slow in "smr capacity=64M zone_size=16M" "scsi size=8M" \
	"null memory_backed=1 size=8M"; do
	read -r model keys <<<"$slow"
	{
		echo "[slow]"
		echo "device=$model"
		for k in $keys; do echo "$k"; done
		echo "media=nbd:$ruri"
		echo "time_scale=0"
		echo "[fast]"
		echo "device=ram"
		echo "size=16M"
	} >"$TESTTMP/stall.ini"
	mqblkd_start -t 1 --control "$TESTTMP/ctl.sock" -c "$TESTTMP/stall.ini"
	kill -STOP "$REMOTE_PID"
	$CLIENT nbdsh -u "nbd+unix:///slow?socket=$unixsocket" \
		-c "h.pread(4096, 0)" 2>"$TESTTMP/slow.err" &
	slow_pid=$!
	for _ in $(seq 500); do slow_started && break; sleep 0.02; done
	slow_started || die "$model: the read never reached the device"
	timeout 10 $CLIENT nbdsh -u "nbd+unix:///fast?socket=$unixsocket" \
		-c 'h.pwrite(b"\x5a" * 4096, 0); assert h.pread(4096, 0) == b"\x5a" * 4096' ||
		die "$model: the ram export beside it was held up"
	kill -0 "$slow_pid" || die "$model: the read did not wait for the store"
	kill -CONT "$REMOTE_PID"
	wait "$slow_pid" || die "$model: the read failed: $(cat "$TESTTMP/slow.err")"
	mqblkd_stop
done

echo "== a model on a remote store asks it for extents only for BLOCK_STATUS"
# A READ with zero blocks looks for holes only where that is free: on
# nbd: or rbd: it would be a round trip to the remote for every read.
kill -TERM "$REMOTE_PID"
wait "$REMOTE_PID" || true
rm -f "$rsock"
nbdkit -f -U "$rsock" --filter=log memory 64M "logfile=$TESTTMP/ops.log" \
	2>"$TESTTMP/remote.log" &
REMOTE_PID=$!
wait_listening "$rsock" || die "nbdkit memory (logged) did not start"
extents_asked() { grep -c "Extents" "$TESTTMP/ops.log" || true; }
for m in "ide-disk" "smr capacity=64M zone_size=16M" "scsi size=8M" \
	"mspro" "null memory_backed=1 size=8M" \
	"sx8 ports=4 port0.media=nbd:$ruri port1.present=0 port2.present=0 port3.present=0"; do
	read -r model keys <<<"$m"
	media="media=nbd:$ruri"
	[ "$model" = sx8 ] && media=
	# shellcheck disable=SC2086 # keys: one a word
	mqblkd_start $model $keys $media time_scale=0
	before=$(extents_asked)
	$CLIENT nbdsh -u "$uri" -c '
h.pwrite(b"\x5a" * 4096, 0)
assert h.pread(1 << 20, 0) == b"\x5a" * 4096 + bytes((1 << 20) - 4096)
'
	[ "$(extents_asked)" = "$before" ] ||
		die "$model: a READ asked the remote for extents"
	mqblkd_stop
done

kill -TERM "$REMOTE_PID"
wait "$REMOTE_PID" || true
REMOTE_PID=
echo ok
