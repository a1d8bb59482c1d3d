#!/bin/bash
# The irq thread's timer resolution: null_blk irqmode=2 with
# completion_nsec=100000 (each command completes 100 us after it was
# queued) in one process (mqblk-bench core, scheduler none), at QD1,
# where a read should take 100 us (10k IOPS), and at QD32.  Not a test:
# prints the medians of ROUNDS runs and the load average.
#
#   bench/irq-bench.sh [BUILD_DIR]      (default: build)
#
# Environment: RUNTIME (s per run, default 3), ROUNDS (default 5).
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
runtime=${RUNTIME:-3}
rounds=${ROUNDS:-5}
[ -x "$build/mqblk-bench" ] || {
	echo "$0: $build/mqblk-bench not built" >&2
	exit 1
}
dev=device=null,irqmode=2,completion_nsec=100000

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
for qd in 1 32; do
	rates=()
	for _ in $(seq "$rounds"); do
		rates+=("$("$build/mqblk-bench" core --device "$dev" --sched none \
			--inflight $qd --seconds "$runtime" 2>/dev/null |
			awk '{print $2}')")
	done
	printf '%s\n' "${rates[@]}" | sort -n | awk -v qd=$qd '
		{ v[NR] = $1 }
		END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "QD%d: median %.0f IOPS (%.0f-%.0f), %.1f us a command at QD%d\n",
				qd, m, v[1], v[NR], qd * 1e6 / m, qd
		}'
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
