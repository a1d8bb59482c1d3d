#!/bin/bash
# The smr disk's media model against its nominal figures, in real time
# (time_scale=1), through nbdkit and fio's nbd engine.  Not a test; it
# prints a table and exits non-zero if a checked figure is more than 10%
# off.
#
#   bench/smr-bench.sh [BUILD_DIR]      (default: build)
#
#  - sequential 1 MiB writes at queue depth 32 filling one 256 MiB zone
#    (zone write plugging lets one write of the zone reach the disk at a
#    time, so the disk sees a sequential stream), then sequential 1 MiB
#    reads of it at queue depth 32.  Nominal: 235 MiB/s both (checked).
#  - random 4 KiB reads at queue depth 1 over the disk: a seek and half a
#    turn each, about 1 / (8.5 ms + 4.17 ms) = 79 IOPS (shown, not checked).
#
# Environment: ROUNDS (runs of every case, the median kept, default 3).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init smr-bench "${1:-}" -- nbdkit fio python3
rounds=${ROUNDS:-3}
keys="device=smr capacity=4G zone_size=256M time_scale=1"

for round in $(seq "$rounds"); do
	echo "round $round: sequential 1M write of zone 1, then read, QD32" >&2
	nbdkit -U - --run "
	fio --name=w --ioengine=nbd --uri=\"\$uri\" --rw=write --bs=1m \
		--iodepth=32 --offset=256m --size=256m --output-format=json \
		--output=$tmp/w.$round.json &&
	fio --name=r --ioengine=nbd --uri=\"\$uri\" --rw=read --bs=1m \
		--iodepth=32 --offset=256m --size=256m --output-format=json \
		--output=$tmp/r.$round.json &&
	fio --name=rr --ioengine=nbd --uri=\"\$uri\" --rw=randread --bs=4k \
		--iodepth=1 --runtime=3 --time_based --size=4g \
		--output-format=json --output=$tmp/rr.$round.json
	" "$plugin" $keys
done

python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])

def fig(name, what, key):
    vals = []
    for r in range(1, rounds + 1):
        job = json.load(open("%s/%s.%d.json" % (tmp, name, r)))["jobs"][0]
        vals.append(job[what][key])
    return statistics.median(vals)

w = fig("w", "write", "bw") / 1024.0  # KiB/s -> MiB/s
r = fig("r", "read", "bw") / 1024.0
rr = fig("rr", "read", "iops")
bad = 0
print("%-34s %10s %10s %8s" % ("case", "measured", "nominal", "off"))
for name, got, want, check in (
        ("sequential write 1M QD32, MiB/s", w, 235.0, True),
        ("sequential read 1M QD32, MiB/s", r, 235.0, True),
        ("random read 4k QD1, IOPS", rr, 1e3 / (8.5 + 30e3 / 7200), False)):
    off = (got - want) / want * 100
    flag = "" if not check else (" ok" if abs(off) <= 10 else " FAIL")
    bad += check and abs(off) > 10
    print("%-34s %10.1f %10.1f %+7.1f%%%s" % (name, got, want, off, flag))
print("median of %d rounds" % rounds)
sys.exit(1 if bad else 0)
PY
