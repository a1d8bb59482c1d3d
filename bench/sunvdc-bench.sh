#!/bin/bash
# The sunvdc model in real time (time_scale=1), through nbdkit (8
# threads) and fio's nbd engine.  Not a test: it prints a table of
# medians and exits non-zero if a checked figure is more than 15% off.
#
#   bench/sunvdc-bench.sh [BUILD_DIR]      (default: build)
#
# The service domain is given a slow backing store (vds_mbps=100,
# vds_latency_us=20) so that its time, not the path around it, decides:
#  - sequential 128 KiB reads at queue depth 1 and 16: one descriptor
#    costs 20 us + 131072 B / 100 MB/s = 1330.7 us, so 98.5 MB/s; the
#    server serves the ring in order, so a deeper queue cannot beat it,
#    and only at depth 16 is the round trip around the model hidden
#    (depth 1 is shown, not checked);
#  - 4 KiB random reads at queue depth 16: 20 + 41 = 61 us a descriptor,
#    16.4k IOPS nominal (shown, not checked: the round trip through
#    nbdkit and fio is of the same order);
#  - the stall an ldc_reset costs: fio reads at depth 16 while mqblkctl
#    fires fault/ldc_reset; the longest completion is the handshake delay
#    (ldc_handshake_ms=1000, the driver's one-second vio timer) plus the
#    requeue.
#
# Environment: ROUNDS (runs of every case, the median kept, default 3).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init sunvdc-bench "${1:-}" -- nbdkit fio python3
rounds=${ROUNDS:-3}
ctl=$build/mqblkctl
keys=(device=sunvdc size=256M time_scale=1 vds_mbps=100 vds_latency_us=20)

fio_job() { # NAME RW BS DEPTH SIZE [EXTRA]
	echo "fio --name=$1 --ioengine=nbd --uri=\"\$uri\" --rw=$2 --bs=$3 \
		--iodepth=$4 --size=$5 ${6:-} --output-format=json \
		--output=$tmp/$1.$round.json"
}

for round in $(seq "$rounds"); do
	echo "round $round: sequential 128k reads at QD1 and QD16, 4k random at QD16" >&2
	nbdkit -U - -t 8 --run "
		$(fio_job seq1 read 128k 1 64M) &&
		$(fio_job seq16 read 128k 16 128M) &&
		$(fio_job rand16 randread 4k 16 64M '--runtime=3 --time_based')
	" "$plugin" "${keys[@]}"

	echo "round $round: an ldc_reset under 4k random reads at QD16" >&2
	nbdkit -U - -t 8 --run "
		$(fio_job reset randread 4k 16 64M '--runtime=4 --time_based') &
		pid=\$!
		sleep 1.5
		$ctl -s $tmp/ctl.sock set vdiska/fault/ldc_reset
		wait \$pid
	" "$plugin" "${keys[@]}" "control=$tmp/ctl.sock"
done

python3 - "$tmp" <<'EOF'
import glob
import json
import statistics
import sys

tmp = sys.argv[1]


def median(name, f):
    vals = []
    for path in sorted(glob.glob("%s/%s.*.json" % (tmp, name))):
        with open(path) as fh:
            vals.append(f(json.load(fh)["jobs"][0]["read"]))
    return statistics.median(vals), len(vals)


desc_us = 20 + 131072 / 100e6 * 1e6
rows = [
    ("128 KiB sequential read, QD1 (not checked)", "seq1",
     131072 / desc_us, "MB/s", lambda r: r["bw_bytes"] / 1e6, False),
    ("128 KiB sequential read, QD16", "seq16", 131072 / desc_us, "MB/s",
     lambda r: r["bw_bytes"] / 1e6, True),
    ("4 KiB random read, QD16 (not checked)", "rand16",
     1e6 / (20 + 4096 / 100e6 * 1e6), "IOPS", lambda r: r["iops"], False),
    ("longest read across an ldc_reset", "reset", 1000, "ms",
     lambda r: r["clat_ns"]["max"] / 1e6, True),
]
bad = 0
print("| case | nominal | measured (median of %d) | off nominal |"
      % median("seq1", lambda r: 0)[1])
print("|---|---:|---:|---:|")
for label, name, nominal, unit, f, checked in rows:
    got, _ = median(name, f)
    off = (got - nominal) / nominal * 100
    print("| %s | %.1f %s | %.1f %s | %+.1f%% |"
          % (label, nominal, unit, got, unit, off))
    if checked and abs(off) > 15:
        bad += 1
sys.exit(1 if bad else 0)
EOF
