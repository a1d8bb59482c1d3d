#!/bin/bash
# What log_writes=PATH costs: mqblkd's ram device without and with a
# dm-log-writes log, fio's nbd engine at 4 KiB and QD32: random writes
# with a FLUSH after every FSYNC of them (so that the writes waiting for
# a FLUSH stay bounded, as a file system's would), and random reads.
# Within each round both serve in turn; cells are medians of the rounds,
# the ratio is IOPS with the log over IOPS without (the issue's bound:
# at least 0.90).  Not a test: prints a table.
#
#   bench/log-writes-bench.sh [BUILD_DIR]     (default: build)
#
# Environment: RUNTIME (s a run, default 5), ROUNDS (default 3), SIZE
# (the export, default 256M), FSYNC (writes per FLUSH, default 64),
# LOGDIR (where the log goes, default the scratch directory; each run's
# log is removed after it).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init log-writes-bench "${1:-}" -- fio python3
runtime=${RUNTIME:-5}
rounds=${ROUNDS:-3}
size=${SIZE:-256M}
fsync=${FSYNC:-64}
logdir=${LOGDIR:-$tmp}

mpid=
stop() {
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null && wait "$mpid" 2>/dev/null
	mpid=
	rm -f "$tmp/s.sock" "$logdir/bench.log"
}
trap 'stop; rm -rf "$tmp"' EXIT

# run LOG(0|1) RW OUT: one mqblkd, one fio run; OUT gets fio's JSON.
run() {
	local log=$1 rw=$2 out=$3 keys=(ram "size=$size")
	[ "$log" = 1 ] && keys+=("log_writes=$logdir/bench.log")
	"$build/mqblkd" -f -U "$tmp/s.sock" "${keys[@]}" 2>>"$tmp/mqblkd.log" &
	mpid=$!
	bench_wait_sock "$tmp/s.sock"
	local extra=()
	[ "$rw" = randwrite ] && extra=(--fsync="$fsync")
	fio --name="$rw" --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/s.sock" \
		--rw="$rw" --bs=4k --iodepth=32 --runtime="$runtime" \
		--time_based "${extra[@]}" --output-format=json \
		--output="$out" >/dev/null
	stop
}

for r in $(seq "$rounds"); do
	for rw in randwrite randread; do
		for log in 0 1; do
			echo "round $r/$rounds, $rw, log_writes $log" >&2
			run "$log" "$rw" "$tmp/$rw-$log-$r.json"
		done
	done
done

python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys

tmp, rounds = sys.argv[1], int(sys.argv[2])

def iops(rw, log, r):
    with open(f"{tmp}/{rw}-{log}-{r}.json") as f:
        job = json.load(f)["jobs"][0]
    return job["write" if rw == "randwrite" else "read"]["iops"]

print("| 4 KiB QD32 | no log IOPS | log_writes IOPS | ratio |")
print("|---|---:|---:|---:|")
for rw in ("randwrite", "randread"):
    off = statistics.median(iops(rw, 0, r) for r in range(1, rounds + 1))
    on = statistics.median(iops(rw, 1, r) for r in range(1, rounds + 1))
    print(f"| {rw} | {off:.0f} | {on:.0f} | {on / off:.2f} |")
PY
