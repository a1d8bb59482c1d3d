#!/bin/bash
# Measured random-write throughput of mtdblock and ftl for the wear study
# of docs/devices.md: the chip runs with real timing (time_scale=1), so
# every read, program and erase sleeps its tR, tPROG or tBERS.  Not a test;
# it prints a table.
#
#   bench/mtd-throughput.sh [BUILD_DIR] [NR_WRITES] [WARMUP]
#
# Each round, for each layer, on the 32 MiB SLC NAND chip of the wear
# study (128 KiB erase blocks, 2 KiB pages, scheduler=none):
#  - warm-up at time_scale=0 into an image= file: the whole export written
#    once in order, then WARMUP (default 20000) random 4 KiB writes, so the
#    chip is full and ftl's garbage collection is busy from the first timed
#    write;
#  - "core": build/mtd-wear reopens the image at time_scale=1 and times
#    NR_WRITES (default 2000) random 4 KiB writes at queue depth 1 and a
#    FLUSH, submitted straight to the request core.  It also prints the
#    throughput computed from the chip operations of those writes
#    (reads x 25 us + programs x 200 us + erases x 2 ms), as bench/mtd-wear.sh
#    does for the 200k-write run;
#  - "nbd": nbdkit with the mqblk plugin reopens the same image at
#    time_scale=1 and fio's nbd engine writes NR_WRITES random 4 KiB blocks
#    at queue depth 1 (then a FLUSH) through NBD.
# The median of ROUNDS rounds (default 3) is kept.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init mtd-throughput "${1:-}" -- nbdkit fio python3
nr=${2:-2000}
warm=${3:-20000}
rounds=${ROUNDS:-3}
keys="size=32M seed=1 scheduler=none"

uptime >&2
for round in $(seq "$rounds"); do
	for dev in mtdblock ftl; do
		echo "round $round: $dev: warm-up, $nr timed writes (core)" >&2
		rm -f "$tmp/$dev.img"
		"$build/mtd-wear" -w "$warm" "$dev" "$nr" "$tmp/$dev.dat" \
			$keys image="$tmp/$dev.img" time_scale=1 2>/dev/null \
			>"$tmp/core.$dev.$round.txt"
		cat "$tmp/core.$dev.$round.txt" >&2
		echo "round $round: $dev: $nr timed writes (nbd, fio)" >&2
		nbdkit -U - --run "
		fio --name=w --ioengine=nbd --uri=\"\$uri\" --rw=randwrite \
			--bs=4k --iodepth=1 --number_ios=$nr --end_fsync=1 \
			--randseed=$round --output-format=json \
			--output=$tmp/nbd.$dev.$round.json
		" "$plugin" device="$dev" $keys image="$tmp/$dev.img" \
			time_scale=1 2>/dev/null
	done
done
uptime >&2

python3 - "$tmp" "$rounds" "$nr" <<'PY'
import json, re, statistics, sys
tmp, rounds, nr = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def core(dev, key):
    vals = []
    for r in range(1, rounds + 1):
        line = open("%s/core.%s.%d.txt" % (tmp, dev, r)).read()
        vals.append(float(re.search(key + r" ([0-9.]+)", line).group(1)))
    return statistics.median(vals), vals

def nbd(dev):
    vals = []
    for r in range(1, rounds + 1):
        job = json.load(open("%s/nbd.%s.%d.json" % (tmp, dev, r)))["jobs"][0]
        vals.append(job["write"]["bw_bytes"] / 1e6)
    return statistics.median(vals), vals

print("%d random 4 KiB writes at QD1 after a warm-up, time_scale=1, "
      "median of %d (MB/s, 10^6 bytes)" % (int(nr), rounds))
print("%-9s %10s %10s %10s   %s" % ("device", "computed", "core", "nbd",
                                    "runs core / nbd"))
for dev in ("mtdblock", "ftl"):
    comp, _ = core(dev, "modelled_mb_s")
    c, cv = core(dev, "mb_s")
    n, nv = nbd(dev)
    print("%-9s %10.3f %10.3f %10.3f   %s / %s" % (
        dev, comp, c, n, " ".join("%.3f" % v for v in cv),
        " ".join("%.3f" % v for v in nv)))
PY
