#!/bin/bash
# Bounded buffering per connection, whatever the device: reads a client
# never reads on a file export and on null with threaded completions, and
# writes that outrun a 10 MB/s Memory Stick.  mqblkd's RSS stays under a
# limit, and once the writer hangs up its requests that have not started
# are dropped, so SIGTERM ends the server within 10 s.
. "$(dirname "$0")/mqblkd-lib.sh"

M=$SCRIPTS/mqblkd_memory.py
LIMIT=400 # MiB; without a bound the same runs reach 1.3 to 1.7 GiB

# stop_within SECONDS: SIGTERM, then the server must be gone in time and
# exit 0.
stop_within() {
	local i rc=0
	kill -TERM "$MQBLKD_PID"
	for ((i = 0; i < $1 * 20; i++)); do
		kill -0 "$MQBLKD_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$MQBLKD_PID" 2>/dev/null; then
		cat "$MQBLKD_LOG" >&2
		die "mqblkd still running $1 s after SIGTERM"
	fi
	wait "$MQBLKD_PID" || rc=$?
	MQBLKD_PID=
	[ $rc -eq 0 ] || { cat "$MQBLKD_LOG" >&2; die "mqblkd exited with $rc"; }
}

truncate -s 256M "$TESTTMP/disk.img"
for dev in "file file=$TESTTMP/disk.img" \
	"null size=256M memory_backed=1 irqmode=1"; do
	echo "== unread replies: $dev"
	# shellcheck disable=SC2086 # the words are the device's keys
	mqblkd_start -t 1 $dev
	$CLIENT python3 "$M" "$unixsocket" "$MQBLKD_PID" reads $LIMIT ||
		{ cat "$MQBLKD_LOG" >&2; die "$dev: unread replies"; }
	stop_within 10
done

# The Memory Stick takes a 32 MiB write as one request, two at a time:
# what the server accepted is on the card.  null at 4 MiB/s takes small
# requests one at a time: the 64 MiB accepted would keep it busy for 16 s
# unless those not started are dropped when the client goes.
for dev in "mspro size=256M" \
	"null size=256M memory_backed=1 irqmode=1 mbps=4 hw_queue_depth=1"; do
	echo "== writes that outrun $dev, then a hang-up"
	# shellcheck disable=SC2086 # the words are the device's keys
	mqblkd_start -t 1 $dev
	$CLIENT python3 "$M" "$unixsocket" "$MQBLKD_PID" writes $LIMIT ||
		{ cat "$MQBLKD_LOG" >&2; die "$dev: writes"; }
	stop_within 10
done
echo "mqblkd memory: ok"
