#!/bin/bash
# The flash card timing model (mspro) and the GD-ROM's optical timing
# against their nominal figures, in real time (time_scale=1), through
# nbdkit and fio's nbd engine.  Not a test; it prints a table and exits
# non-zero if a checked figure is more than 10% off.
#
#   bench/flashcard-bench.sh [BUILD_DIR]      (default: build)
#
#  - mspro with its defaults (a 2005 Memory Stick Pro: 512-byte pages,
#    20 MB/s read, 10 MB/s write, 100 us a command): sequential 128 KiB
#    writes, then reads, at queue depth 1.  Nominal: 20 and 10 MB/s; with
#    the command overhead a 128 KiB request gets 19.70 and 9.92 MB/s.
#  - the same with 1 MiB requests, where the client's round trip through
#    nbdkit weighs less (nominal with the overhead: 19.96 and 9.99 MB/s);
#  - and with 4 KiB requests, where the overhead is a third of the
#    time (shown, not checked: the client's round trip adds to it).
#  - gdrom at 12x: sequential 128 KiB reads of a 16 MiB image at queue
#    depth 1.  Nominal: 12 x 150 KiB/s = 1.84 MB/s.
#
# Environment: SIZE (MiB moved per mspro run, default 48), ROUNDS (runs
# of every case, the best kept, default 1: on a loaded machine the wake-ups
# between fio, nbdkit and the card's thread cost more than the model).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init flashcard-bench "${1:-}" -- nbdkit fio python3
size=${SIZE:-48}
rounds=${ROUNDS:-1}

# fio_job NAME RW BS SIZE: one sequential fio job at QD1 on $uri, its
# result in NAME.$round.json.
fio_job() {
	echo "fio --name=$1 --ioengine=nbd --uri=\"\$uri\" --rw=$2 --bs=$3 \
		--iodepth=1 --size=$4 --output-format=json \
		--output=$tmp/$1.$round.json"
}

# The CD model only needs whole 2048-byte blocks, not a filesystem.
head -c 16M /dev/urandom >"$tmp/disc.img"

for round in $(seq "$rounds"); do
	echo "running mspro sequential 128k write then read, ${size} MiB each" >&2
	nbdkit -U - -t 1 --run "
		$(fio_job w128k write 128k ${size}M) &&
		$(fio_job r128k read 128k ${size}M)
	" "$plugin" device=mspro size=64M time_scale=1

	echo "running mspro sequential 1M write then read, ${size} MiB each" >&2
	nbdkit -U - -t 1 --run "
		$(fio_job w1m write 1m ${size}M) &&
		$(fio_job r1m read 1m ${size}M)
	" "$plugin" device=mspro size=64M time_scale=1

	echo "running mspro sequential 4k write then read, 4 MiB each" >&2
	nbdkit -U - -t 1 --run "
		$(fio_job w4k write 4k 4M) &&
		$(fio_job r4k read 4k 4M)
	" "$plugin" device=mspro size=64M time_scale=1

	echo "running gdrom 12x sequential 128k reads, 16 MiB (about 9 s)" >&2
	nbdkit -U - -t 1 --run "
		$(fio_job gd read 128k 16M)
	" "$plugin" device=gdrom "image=$tmp/disc.img" spinup_ms=0 time_scale=1
done

python3 - "$tmp" <<'EOF'
import glob
import json
import sys

tmp = sys.argv[1]


def mbs(name, rw):
    best = 0
    for path in glob.glob("%s/%s.*.json" % (tmp, name)):
        with open(path) as f:
            best = max(best, json.load(f)["jobs"][0][rw]["bw_bytes"] / 1e6)
    return best


def with_overhead(bs, mbps, overhead_us=100):
    return bs / (overhead_us * 1e-6 + bs / (mbps * 1e6)) / 1e6


rows = [
    # case, measured, nominal, nominal with the command overhead, checked
    ("mspro 128k sequential read", mbs("r128k", "read"), 20,
     with_overhead(131072, 20), True),
    ("mspro 128k sequential write", mbs("w128k", "write"), 10,
     with_overhead(131072, 10), True),
    ("mspro 1M sequential read", mbs("r1m", "read"), 20,
     with_overhead(1 << 20, 20), True),
    ("mspro 1M sequential write", mbs("w1m", "write"), 10,
     with_overhead(1 << 20, 10), True),
    ("mspro 4k sequential read", mbs("r4k", "read"), 20,
     with_overhead(4096, 20), False),
    ("mspro 4k sequential write", mbs("w4k", "write"), 10,
     with_overhead(4096, 10), False),
    ("gdrom 12x sequential read", mbs("gd", "read"), 12 * 150 * 1024 / 1e6,
     12 * 150 * 1024 / 1e6, True),
]
print("| case | MB/s measured | nominal | with overhead | off | checked |")
print("|---|---:|---:|---:|---:|---|")
bad = False
for name, got, nominal, over, checked in rows:
    off = (got - nominal) / nominal * 100
    if checked:
        bad |= abs(off) > 10
    print("| %s | %.2f | %.2f | %.2f | %+.1f%% | %s |"
          % (name, got, nominal, over, off, "yes" if checked else "no"))
sys.exit(1 if bad else 0)
EOF
