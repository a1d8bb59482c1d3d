#!/bin/bash
# build/mqblk-bench core: its output as bench/ scripts parse it (one line
# per scheduler, NAME REQUESTS_PER_SECOND), and with --cpu a third column,
# CPU microseconds per request, that agrees with the rate: rate times CPU
# per request is the CPU the process used a second, more than nothing and
# no more than every CPU of the machine.
. "$(dirname "$0")/lib.sh"

BENCH=$MQBLK_BUILD/mqblk-bench
[ -x "$BENCH" ] || die "$BENCH not built"

"$BENCH" core --seconds 1 --inflight 4 --sched none,mq-deadline \
	>"$TESTTMP/plain" 2>"$TESTTMP/plain.err" ||
	die "mqblk-bench core: $(cat "$TESTTMP/plain.err")"
awk 'NF != 2 || $2 !~ /^[0-9]+$/ || $2 <= 0 { bad = 1 }
     END { exit bad || NR != 2 }' "$TESTTMP/plain" ||
	die "mqblk-bench core without --cpu: $(cat "$TESTTMP/plain")"

for qd in 1 32; do
	"$BENCH" core --cpu --seconds 1 --inflight $qd --write-pct 50 \
		--sched none,bfq >"$TESTTMP/cpu" 2>"$TESTTMP/cpu.err" ||
		die "mqblk-bench core --cpu: $(cat "$TESTTMP/cpu.err")"
	awk -v ncpu="$(nproc)" '
		NF != 3 || $2 <= 0 || $3 !~ /^[0-9]+\.[0-9]+$/ || $3 <= 0 { bad = 1 }
		# CPU seconds used a second of wall time
		$2 * $3 / 1e6 > ncpu * 1.05 { bad = 1 }
		END { exit bad || NR != 2 }' "$TESTTMP/cpu" ||
		die "mqblk-bench core --cpu at depth $qd: $(cat "$TESTTMP/cpu")"
done

# --cpu takes no value; the options around it still do.
"$BENCH" core --cpu --seconds >/dev/null 2>&1 && die "--seconds without a value accepted"
"$BENCH" core --seconds 1 --cpu --sched none >"$TESTTMP/last" 2>/dev/null ||
	die "--cpu between options refused"
[ "$(awk '{print NF}' "$TESTTMP/last")" = 3 ] || die "--cpu last: $(cat "$TESTTMP/last")"
echo ok
