#!/bin/bash
# build/nbd-ceiling and build/nbd-loadgen, as bench/perf-bench.sh uses
# them: the ceiling answers reads with zeroes, and with --data with the
# 0xa5 bytes of its filled buffer (read back with nbdsh); nbd-loadgen's
# line parses, counts requests with no errors against the ceiling and
# mqblkd, reports the server's CPU with --pid, and counts the errors of
# a read-only export's answers to its writes (then exits 1).
. "$(dirname "$0")/mqblkd-lib.sh"
export PATH=/usr/bin:$PATH

LOADGEN=$MQBLK_BUILD/nbd-loadgen
CEILING=$MQBLK_BUILD/nbd-ceiling
{ [ -x "$LOADGEN" ] && [ -x "$CEILING" ]; } || die "nbd-loadgen or nbd-ceiling not built"

CEILING_PID=
trap '[ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null;
      [ -n "$CEILING_PID" ] && kill -9 "$CEILING_PID" 2>/dev/null;
      rm -rf "$TESTTMP"' EXIT

# field NAME LINE: the value of NAME=... in nbd-loadgen's line
field() { sed -n "s/.*\\<$1=\\([0-9.]*\\).*/\\1/p" <<<"$2"; }

# loadgen_ok WHAT SOCKET PID ARGS...: a short run with no errors, requests
# counted, and the server's CPU per request reported
loadgen_ok() {
	local what=$1 sock=$2 pid=$3 out
	shift 3
	out=$($CLIENT "$LOADGEN" -U "$sock" -s 0.5 -r 0 --pid "$pid" "$@") ||
		die "nbd-loadgen $* against $what failed: $out"
	[ "$(field errors "$out")" = 0 ] || die "$what: errors: $out"
	awk -v r="$(field reqs "$out")" -v i="$(field iops "$out")" \
		'BEGIN { exit !(r > 0 && i > 0) }' || die "$what: no requests: $out"
	[ -n "$(field server_cpu_us "$out")" ] || die "$what: no server CPU: $out"
	echo "$what: $out"
}

# ceiling_start [--data]: nbd-ceiling on a Unix socket, 1 MiB
ceiling_start() {
	ceiling_sock=$TESTTMP/ceiling.sock
	rm -f "$ceiling_sock"
	"$CEILING" -U "$ceiling_sock" --size 1048576 "$@" \
		2>"$TESTTMP/ceiling.log" &
	CEILING_PID=$!
	wait_listening "$ceiling_sock" || die "nbd-ceiling $* did not start"
}

ceiling_stop() {
	kill "$CEILING_PID"
	wait "$CEILING_PID" 2>/dev/null || :
	CEILING_PID=
}

# first_byte SOCKET OFFSET: the byte at OFFSET of a 4 KiB read, and
# whether the whole read is that byte
first_byte() {
	$CLIENT nbdsh -u "nbd+unix:///?socket=$1" -c "
b = h.pread(4096, $2)
print(b[0], len(set(b)) == 1)"
}

ceiling_start
[ "$(first_byte "$ceiling_sock" 8192)" = "0 True" ] ||
	die "nbd-ceiling without --data: not zeroes"
loadgen_ok ceiling "$ceiling_sock" "$CEILING_PID" -c 2 -q 8
ceiling_stop

ceiling_start --data
[ "$(first_byte "$ceiling_sock" 1044480)" = "165 True" ] ||
	die "nbd-ceiling --data: not its 0xa5 buffer"
loadgen_ok ceiling-data "$ceiling_sock" "$CEILING_PID" -q 4 -b 65536
ceiling_stop

mqblkd_start ram size=64M time_scale=0
loadgen_ok "mqblkd reads" "$unixsocket" "$MQBLKD_PID" -c 2 -q 8
loadgen_ok "mqblkd writes" "$unixsocket" "$MQBLKD_PID" -q 4 --write
mqblkd_stop

mqblkd_start -r ram size=64M time_scale=0
out=$($CLIENT "$LOADGEN" -U "$unixsocket" -s 0.2 -r 0 -q 2 --write) &&
	die "nbd-loadgen exited 0 with every write refused: $out"
# errors counts every reply of the run, reqs those of the measured window
awk -v e="$(field errors "$out")" -v r="$(field reqs "$out")" \
	'BEGIN { exit !(r > 0 && e >= r) }' ||
	die "writes to a read-only export: errors not counted: $out"
echo "read-only: $out"
mqblkd_stop
echo ok
