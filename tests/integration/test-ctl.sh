#!/bin/bash
# The control socket through the nbdkit front end (control=PATH): every
# attribute of a null export, scheduler switches under a verified fio
# load, null's requeue and timeout faults seen through NBD, metrics
# against the I/O done, and a blktrace recording read by blkparse and btt,
# written only under trace-dir=.
#
# Each phase runs as "$0 --phase NAME" inside nbdkit --run, with $uri set.
if [ "${1:-}" = --phase ]; then
	set -euo pipefail
	export PATH=/usr/bin:/bin:$PATH
	phase=$2
	uri=$3
	CTL="$MQBLK_BUILD/mqblkctl -s $CTL_SOCK"
	fail() {
		echo "$0: FAIL ($phase): $*" >&2
		exit 1
	}
else
	. "$(dirname "$0")/lib.sh"
	command -v blkparse >/dev/null || die "blkparse missing (tests/setup-deps.sh)"
	CTL_SOCK=$TESTTMP/ctl.sock
	export CTL_SOCK MQBLK_BUILD TESTTMP
	[ -x "$MQBLK_BUILD/mqblkctl" ] || die "mqblkctl not built"
	# run_phase NAME [PLUGIN-KEY...]
	run_phase() {
		local name=$1
		shift
		echo "== $name"
		MQBLK_EXTRA="control=$CTL_SOCK $*" serve null -- \
			"\$CLIENT bash $SELF --phase $name \"\$uri\""
	}
	# The socket listens before nbdkit forks to start --run: the
	# command finds it at once, every time.
	echo "== early"
	for _ in $(seq 10); do
		MQBLK_EXTRA="control=$CTL_SOCK" serve null -- \
			"test -S '$CTL_SOCK' && $MQBLK_BUILD/mqblkctl -s '$CTL_SOCK' ls nullb0 >/dev/null" ||
			die "the control socket was not there when --run started"
	done
	run_phase attrs submit_queues=2
	run_phase switch
	run_phase faults io_timeout=300
	run_phase metrics
	run_phase trace "trace-dir=$TESTTMP"
	echo "test-ctl: all phases passed"
	exit 0
fi

# walk DIR: print every leaf path under DIR.
walk() {
	local e
	for e in $($CTL ls "$1"); do
		case $e in
		*/) walk "$1/${e%/}" ;;
		*) echo "$1/$e" ;;
		esac
	done
}

# metric NAME{LABELS}: its value now.
metric() {
	$CTL metrics | awk -v k="$1" '$1 == k { print $2 }'
}

case $phase in
attrs)
	[ "$(stat -c %a "$CTL_SOCK")" = 600 ] || fail "socket mode not 0600"
	[ "$($CTL ls)" = "nullb0/" ] || fail "ls: $($CTL ls)"
	n=0
	for p in $(walk nullb0); do
		v=$($CTL get "$p") || fail "get $p"
		echo "$p = $v"
		n=$((n + 1))
	done
	[ $n -ge 32 ] || fail "only $n attributes"
	[ "$($CTL get nullb0/queue/nr_hw_queues)" = 2 ] || fail nr_hw_queues
	[ "$($CTL get nullb0/queue/logical_block_size)" = 512 ] || fail lbs
	$CTL get nullb0/queue/scheduler | grep -q '\[' || fail "no current scheduler"
	$CTL get nullb0/stat | awk 'NF != 17 { exit 1 }' || fail "stat fields"
	$CTL get nullb0/mq/1/tags | grep -q '^nr_tags=' || fail tags
	# errors: exit 1 with a message
	for bad in "get nullb0/nope" "set nullb0/stat 1" \
		"set nullb0/queue/scheduler noop" "get nullb0/../nullb0/stat" \
		"set nullb0/fault/requeue 1,500,0,1" "frobnicate"; do
		# shellcheck disable=SC2086 # split on purpose
		if $CTL $bad 2>"$TESTTMP/err"; then
			fail "'$bad' succeeded"
		fi
		[ -s "$TESTTMP/err" ] || fail "'$bad' said nothing"
		echo "'$bad' -> $(cat "$TESTTMP/err")"
	done
	# A refused fault answers with the driver's reason, not only errno.
	! $CTL set nullb0/fault/requeue 1,500,0,1 2>"$TESTTMP/err" ||
		fail "a requeue fault of probability 500 was taken"
	grep -q "probability 0 to 100" "$TESTTMP/err" ||
		fail "refused fault without its reason: $(cat "$TESTTMP/err")"
	;;
switch)
	scheds=()
	for s in mq-deadline kyber bfq none; do
		if $CTL set nullb0/queue/scheduler $s 2>/dev/null; then
			scheds+=("$s")
		fi
	done
	[ ${#scheds[@]} -ge 2 ] || fail "fewer than 2 schedulers accepted"
	echo "switching between: ${scheds[*]}"
	fio --name=switch --ioengine=nbd --uri="$uri" --rw=randrw --bs=4k \
		--iodepth=16 --size=32M --verify=crc32c --verify_fatal=1 \
		--runtime=20 --time_based --output="$TESTTMP/fio.out" &
	fio_pid=$!
	# let fio connect and start its I/O
	for _ in $(seq 100); do
		r=$($CTL get nullb0/stat | awk '{ print $1 + $5 }')
		[ "$r" -gt 100 ] && break
		sleep 0.1
	done
	for i in $(seq 50); do
		s=${scheds[$((i % ${#scheds[@]}))]}
		$CTL set nullb0/queue/scheduler "$s" || fail "switch $i to $s"
		$CTL get nullb0/queue/scheduler | grep -q "\[$s\]" ||
			fail "switch $i: not $s"
		kill -0 $fio_pid 2>/dev/null || fail "fio ended during switch $i"
	done
	r1=$($CTL get nullb0/stat | awk '{ print $1 + $5 }')
	wait $fio_pid || fail "fio failed"
	cat "$TESTTMP/fio.out"
	grep -Eq 'err= *0' "$TESTTMP/fio.out" || fail "fio reported errors"
	echo "50 switches, $r1 I/Os done meanwhile"
	;;
faults)
	[ "$($CTL get nullb0/device/requeues)" = 0 ] || fail "requeues not 0"
	$CTL set nullb0/fault/requeue 1,100,0,5
	nbdsh -u "$uri" -c '
for i in range(10):
    assert h.pread(4096, i * 4096) == bytearray(4096)
' || fail "reads with requeues"
	[ "$($CTL get nullb0/device/requeues)" = 5 ] ||
		fail "requeues: $($CTL get nullb0/device/requeues)"
	$CTL set nullb0/fault/timeout 1,100,0,1
	nbdsh -u "$uri" -c '
import errno
try:
    h.pread(4096, 0)
    raise SystemExit("read did not fail")
except nbd.Error as ex:
    assert ex.errno == "EIO" or ex.errnum == errno.EIO, ex
h.pread(4096, 4096)
' || fail "timeout fault not seen as EIO"
	[ "$($CTL get nullb0/device/timeouts)" = 1 ] || fail "timeouts not 1"
	;;
metrics)
	k='{export="nullb0",op="read"}'
	w='{export="nullb0",op="write"}'
	r0=$(metric "mqblk_requests_total$k")
	s0=$(metric "mqblk_bytes_total$k")
	w0=$(metric "mqblk_requests_total$w")
	nbdsh -u "$uri" -c '
for i in range(20):
    h.pread(8192, i * 65536)
for i in range(10):
    h.pwrite(bytearray(4096), 1048576 + i * 65536)
'
	r1=$(metric "mqblk_requests_total$k")
	s1=$(metric "mqblk_bytes_total$k")
	w1=$(metric "mqblk_requests_total$w")
	[ $((r1 - r0)) = 20 ] || fail "reads: $r0 -> $r1"
	[ $((s1 - s0)) = 163840 ] || fail "read bytes: $s0 -> $s1"
	[ $((w1 - w0)) = 10 ] || fail "writes: $w0 -> $w1"
	c=$(metric "mqblk_request_latency_seconds_count$k")
	[ "$c" = "$r1" ] || fail "histogram count $c, reads $r1"
	$CTL metrics | grep -q '^# TYPE mqblk_request_latency_seconds histogram' ||
		fail "no histogram TYPE line"
	# the stat file agrees
	[ "$($CTL get nullb0/stat | awk '{ print $1 }')" = "$r1" ] ||
		fail "stat and metrics disagree"
	;;
trace)
	dir=$TESTTMP/trace
	$CTL trace start "$dir"
	if $CTL trace start "$dir" 2>/dev/null; then
		fail "second trace start accepted"
	fi
	fio --name=trace --ioengine=nbd --uri="$uri" --rw=randread --bs=4k \
		--iodepth=1 --size=1M --output="$TESTTMP/fio.out"
	$CTL trace stop
	grep -Eq 'err= *0' "$TESTTMP/fio.out" || fail "fio errors"
	ls -l "$dir"
	for f in "$dir"/nullb0.blktrace.*; do
		[ "$(stat -c %a "$f")" = 600 ] || fail "$f: mode $(stat -c %a "$f")"
	done
	# Only under trace-dir=: elsewhere, or out through "..", is refused.
	for bad in /tmp/mqblk-trace-out "$TESTTMP/../mqblk-trace-out"; do
		if $CTL trace start "$bad" 2>"$TESTTMP/err"; then
			fail "trace start $bad accepted"
		fi
		echo "trace start $bad -> $(cat "$TESTTMP/err")"
		[ ! -e "$bad" ] || fail "$bad made"
	done
	(cd "$dir" && blkparse -i nullb0 -o "$TESTTMP/parsed" -d nullb0.bin) ||
		fail "blkparse failed"
	head -20 "$TESTTMP/parsed"
	q=$(awk '$6 == "Q" && $7 ~ /R/' "$TESTTMP/parsed" | wc -l)
	c=$(awk '$6 == "C" && $7 ~ /R/' "$TESTTMP/parsed" | wc -l)
	echo "Q events: $q, C events: $c"
	[ "$q" = 256 ] || fail "expected 256 Q read events, got $q"
	[ "$c" = 256 ] || fail "expected 256 C read events, got $c"
	btt -i "$dir/nullb0.bin" >"$TESTTMP/btt.out" || fail "btt failed"
	head -30 "$TESTTMP/btt.out"
	grep -q 'Q2C' "$TESTTMP/btt.out" || fail "btt printed no Q2C"
	grep -q 'ALL' "$TESTTMP/btt.out" || fail "btt printed no ALL"
	;;
*)
	fail "unknown phase"
	;;
esac
