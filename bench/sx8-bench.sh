#!/bin/bash
# Eight busy SATA disks behind one Promise SX8: what max_queue costs.  Not
# a test; it prints what the host and each port got.
#
#   bench/sx8-bench.sh [BUILD_DIR]      (default: build)
#
# mqblkd serves `sx8` in real time (time_scale=1): 8 ports, each a 7200
# rpm disk (the rotational model, one command at a time per disk).  Eight
# fio jobs (nbd engine), one per port, run at once for RUNTIME seconds:
# random 4 KiB reads at queue depth QD.  With the driver's safe default,
# max_queue=1, the host has one message for all eight ports, so the
# disks take turns (carm_round_robin) and the host does the work of one
# disk; with max_queue=30 they seek in parallel.  For each setting the
# median of RUNS runs is printed: total reads/s, the slowest and the
# fastest port's reads/s, and the mean completion latency.
#
# Environment: RUNTIME (default 5), QD (default 4), RUNS (default 3),
# SETTINGS (default "1 30": the max_queue values).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init sx8-bench "${1:-}" -- fio python3
runtime=${RUNTIME:-5}
qd=${QD:-4}
runs=${RUNS:-3}
settings=${SETTINGS:-1 30}
mqblkd=$build/mqblkd
[ -x "$mqblkd" ] || {
	echo "$0: $mqblkd not built" >&2
	exit 1
}
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

# one_run MAX_QUEUE N: a server, eight jobs, their JSON in $tmp/mqN.R/.
one_run() {
	local mq=$1 r=$2 sock=$tmp/nbd.sock out=$tmp/mq$1.$2 p
	mkdir -p "$out"
	rm -f "$sock"
	"$mqblkd" -f -U "$sock" sx8 size=8G "max_queue=$mq" time_scale=1 \
		2>"$tmp/mqblkd.log" &
	pid=$!
	bench_wait_sock "$sock" || { cat "$tmp/mqblkd.log" >&2; exit 1; }
	for p in 0 1 2 3 4 5 6 7; do
		fio --name="port$p" --ioengine=nbd \
			--uri="nbd+unix:///sx8/port$p?socket=$sock" \
			--rw=randread --bs=4k --iodepth="$qd" --size=8G \
			--norandommap --randrepeat=0 --runtime="$runtime" \
			--time_based --output-format=json \
			--output="$out/port$p.json" >/dev/null &
	done
	wait $(jobs -p | grep -v "^$pid\$")
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}

printf '%-9s %4s %10s %10s %10s %10s\n' max_queue qd total_r/s \
	min_port max_port mean_ms
for mq in $settings; do
	for r in $(seq "$runs"); do
		echo "max_queue=$mq: run $r of $runs, ${runtime}s" >&2
		one_run "$mq" "$r"
	done
	python3 - "$tmp" "$mq" "$qd" "$runs" <<'PY'
import json, statistics, sys
tmp, mq, qd, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tot, lo, hi, lat = [], [], [], []
for r in range(1, runs + 1):
    iops, means = [], []
    for p in range(8):
        j = json.load(open("%s/mq%s.%d/port%d.json" % (tmp, mq, r, p)))
        rd = j["jobs"][0]["read"]
        iops.append(rd["iops"])
        means.append(rd["clat_ns"]["mean"] / 1e6)
    tot.append(sum(iops))
    lo.append(min(iops))
    hi.append(max(iops))
    lat.append(statistics.mean(means))
m = statistics.median
print("%-9s %4s %10.1f %10.1f %10.1f %10.2f" % (
    mq, qd, m(tot), m(lo), m(hi), m(lat)))
PY
done
