#!/bin/bash
# A control operation that waits does not hold the others up.  mspro's
# queue is stopped (fault/suspend) with a read queued on it; a scheduler
# switch then waits for the queue to drain.  Meanwhile another mqblkctl
# must be served: it sees the queue frozen and resumes the card, after
# which the switch finishes and the read completes with its data.  The
# HTTP server is held to the same rule: /api/v1/exports, which reads the
# scheduler, waits for the switch, and /metrics and the status page are
# served meanwhile, and so is the resume when a reload (SIGHUP) is
# waiting to change the control tree.  With
# --control-timeout 1 the same switch gives up after a second with an
# error, leaves the old scheduler and the queue unfrozen, and the read
# still completes once the card is resumed.
. "$(dirname "$0")/mqblkd-lib.sh"

CTL="$MQBLK_BUILD/mqblkctl -s $TESTTMP/ctl.sock"
export CTL TESTTMP

# http PATH [TIMEOUT]: GET PATH of the server's --metrics URL; fails after
# TIMEOUT seconds (default 5) without an answer.
http() {
	python3 - "$url$1" "${2:-5}" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2])) as r:
    sys.stdout.write(r.read().decode())
PY
}
# api_wait: GET api/v1/exports, touching $TESTTMP/api.sent once the
# request is written, and print the answer (within 30 s).
api_wait() {
	python3 - "$url" "$TESTTMP/api.sent" <<'PY'
import http.client, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
c.request("GET", "/api/v1/exports")
open(sys.argv[2], "w").close()
r = c.getresponse()
assert r.status == 200, r.status
sys.stdout.write(r.read().decode())
PY
}
export -f http api_wait

# shellcheck disable=SC2016 # expanded by the inner shell
common='
	set -euo pipefail
	fail() { echo "FAIL: $*" >&2; exit 1; }
	# ctl ARGS: mqblkctl, which must answer within 5 s
	ctl() { timeout 5 $CTL "$@"; }
	# until CMD: poll CMD for 10 s
	until_ok() {
		for _ in $(seq 500); do "$@" && return 0; sleep 0.02; done
		return 1
	}
	frozen() { [ "$(ctl get mspblk0/mq/frozen)" = 1 ]; }
	queued_past() { [ "$(ctl get mspblk0/mq/0/queued)" -gt "$1" ]; }
	ctl set mspblk0/queue/scheduler none
	# A known pattern at 1 MiB, read back once the queue is stopped.
	nbdsh -u "$uri" -c "h.pwrite(b\"\\xa5\" * 4096, 1 << 20)"
	ctl set mspblk0/fault/suspend 1
	q0=$(ctl get mspblk0/mq/0/queued)
	nbdsh -u "$uri" -c "assert h.pread(4096, 1 << 20) == b\"\\xa5\" * 4096" \
		> "$TESTTMP/read.out" 2>&1 &
	read_pid=$!
	until_ok queued_past "$q0" || fail "the read never reached the queue"
	[ "$(ctl get mspblk0/inflight)" = "0 0" ] || fail "the read was started"
'

echo "== a switch waits on a stopped queue; the resume is served meanwhile"
mqblkd_start --control "$TESTTMP/ctl.sock" --metrics 0 mspro size=16M \
	time_scale=0
url=$(grep -o 'http: listening on http://[^ ]*' "$MQBLKD_LOG" | awk '{ print $4 }')
[ -n "$url" ] || die "no metrics URL in the log"
export url
bash -c "$common"'
	$CTL set mspblk0/queue/scheduler mq-deadline > "$TESTTMP/switch.out" 2>&1 &
	switch_pid=$!
	until_ok frozen || fail "the switch did not start to wait"
	kill -0 $switch_pid || fail "the switch ended on a stopped queue"
	# The JSON API reads the scheduler, so it waits for the switch.
	rm -f "$TESTTMP/api.sent"
	api_wait > "$TESTTMP/api.json" 2> "$TESTTMP/api.err" &
	api_pid=$!
	until_ok test -e "$TESTTMP/api.sent" || fail "api/v1/exports not sent"
	kill -0 $api_pid || fail "api/v1/exports answered during the switch"
	# Other clients are served while the switch waits, over HTTP too.
	ctl get mspblk0/stat > /dev/null || fail "get not served"
	ctl ls > /dev/null || fail "ls not served"
	ctl metrics > /dev/null || fail "metrics not served"
	ctl get mspblk0/mq/0/state > /dev/null || fail "hctx state not served"
	http metrics | grep -q "^mqblk_" || fail "/metrics not served"
	http "" | grep -q "api/v1/exports" || fail "the status page not served"
	ctl set mspblk0/fault/resume || fail "resume not served"
	wait $switch_pid || fail "switch: $(cat "$TESTTMP/switch.out")"
	wait $read_pid || fail "read: $(cat "$TESTTMP/read.out")"
	wait $api_pid || fail "api/v1/exports: $(cat "$TESTTMP/api.err")"
	grep -q "\"scheduler\": *\"mq-deadline\"" "$TESTTMP/api.json" ||
		fail "api/v1/exports: $(cat "$TESTTMP/api.json")"
	[ "$(ctl get mspblk0/queue/scheduler)" = "none [mq-deadline] kyber bfq" ] ||
		fail "scheduler: $(ctl get mspblk0/queue/scheduler)"
	[ "$(ctl get mspblk0/mq/frozen)" = 0 ] || fail "still frozen"
	echo ok
'
mqblkd_stop

echo "== a reload waiting for the switch does not hold the resume back"
# The reload adds an export, so it must write-lock the control tree,
# which the switch holds for reading while it waits; the resume that
# lets the switch finish comes after the reload and must still be served.
cat > "$TESTTMP/ms.ini" <<'INI'
[mspblk0]
device=mspro
size=16M
time_scale=0
INI
mqblkd_start --control "$TESTTMP/ctl.sock" -c "$TESTTMP/ms.ini"
case $(uname -m) in
x86_64) futex=202 ;;
aarch64) futex=98 ;;
*) futex= ;;
esac
export futex MQBLKD_PID MQBLKD_LOG
bash -c "$common"'
	$CTL set mspblk0/queue/scheduler mq-deadline > "$TESTTMP/switch.out" 2>&1 &
	switch_pid=$!
	until_ok frozen || fail "the switch did not start to wait"
	printf "[extra]\ndevice=null\nsize=1M\n" >> "$TESTTMP/ms.ini"
	kill -HUP $MQBLKD_PID
	until_ok grep -q "signal 1: reloading" "$MQBLKD_LOG" ||
		fail "no reload"
	# Until the main thread sleeps on the tree lock (a futex), where
	# the system call number says so.
	main_waits() {
		[ "$(cut -d" " -f1 /proc/$MQBLKD_PID/task/$MQBLKD_PID/syscall)" = "$futex" ]
	}
	[ -z "$futex" ] || until_ok main_waits || fail "the reload never waited"
	kill -0 $switch_pid || fail "the switch ended on a stopped queue"
	ctl set mspblk0/fault/resume || fail "resume not served during the reload"
	wait $switch_pid || fail "switch: $(cat "$TESTTMP/switch.out")"
	wait $read_pid || fail "read: $(cat "$TESTTMP/read.out")"
	until_ok grep -q "reload: .*1 added" "$MQBLKD_LOG" ||
		fail "the reload did not finish"
	ctl ls | grep -qx "extra/" || fail "extra not in the tree: $(ctl ls)"
	echo ok
'
mqblkd_stop

echo "== --control-timeout 1: the switch gives up, the old scheduler stays"
mqblkd_start --control "$TESTTMP/ctl.sock" --control-timeout 1 \
	mspro size=16M time_scale=0
bash -c "$common"'
	if ctl set mspblk0/queue/scheduler mq-deadline 2> "$TESTTMP/switch.err"; then
		fail "the switch succeeded on a stopped queue"
	fi
	cat "$TESTTMP/switch.err"
	grep -q "the queue did not drain in 1 s; none stays" "$TESTTMP/switch.err" ||
		fail "message: $(cat "$TESTTMP/switch.err")"
	[ "$(ctl get mspblk0/mq/frozen)" = 0 ] || fail "left frozen"
	[ "$(ctl get mspblk0/queue/scheduler)" = "[none] mq-deadline kyber bfq" ] ||
		fail "scheduler: $(ctl get mspblk0/queue/scheduler)"
	kill -0 $read_pid || fail "the read ended on a stopped queue"
	ctl set mspblk0/fault/resume
	wait $read_pid || fail "read: $(cat "$TESTTMP/read.out")"
	# Now it drains: the switch goes through.
	ctl set mspblk0/queue/scheduler mq-deadline
	echo ok
'
mqblkd_stop
echo "test-mqblkd-ctl-wait: passed"
