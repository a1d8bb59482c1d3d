#!/bin/bash
# I/O priorities by client identity, end to end (docs/schedulers.md): three
# libnbd clients on TCP loopback from three source addresses, which
# queue/ioprio_map makes rt/0, be/4 and idle; their reads wait in the
# scheduler while a sunvdc link is down, and the blktrace recording shows
# the order they reached the device once it is back (ioprio_order.py):
#  - mq-deadline: every rt read, then every be read, then every idle one;
#  - bfq: every rt read before any be read.
# The clients send be, idle, rt, and their regions lie idle lowest, rt
# highest: neither arrival nor sector order gives those orders.
. "$(dirname "$0")/mqblkd-lib.sh"

command -v blkparse >/dev/null || die "blkparse missing (tests/setup-deps.sh)"
CTL=$MQBLK_BUILD/mqblkctl

for sched in mq-deadline bfq; do
	echo "== $sched"
	ctl_sock=$TESTTMP/ctl.sock
	rm -rf "$TESTTMP/t" "$ctl_sock"
	: >"$MQBLKD_LOG"
	"$MQBLKD" -f -v -b 127.0.0.1 -p 0 --control "$ctl_sock" \
		--trace-dir "$TESTTMP" sunvdc size=16M time_scale=0 \
		2>>"$MQBLKD_LOG" &
	MQBLKD_PID=$!
	for _ in $(seq 500); do
		grep -q "^mqblkd: listening on nbd://" "$MQBLKD_LOG" && break
		kill -0 "$MQBLKD_PID" 2>/dev/null || break
		sleep 0.02
	done
	port=$(sed -n 's|^mqblkd: listening on nbd://127\.0\.0\.1:\([0-9]*\)/$|\1|p' \
		"$MQBLKD_LOG")
	[ -n "$port" ] || {
		cat "$MQBLKD_LOG"
		die "mqblkd did not listen on TCP"
	}
	python3 "$SCRIPTS/ioprio_order.py" 127.0.0.1 "$port" "$CTL" \
		"$ctl_sock" "$TESTTMP" vdiska "$sched" || {
		cat "$MQBLKD_LOG"
		die "$sched: dispatch order"
	}
	mqblkd_stop
done
echo "test-ioprio: all passed"
