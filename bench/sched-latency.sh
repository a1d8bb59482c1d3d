#!/bin/bash
# Latency under load, per scheduler (issue 3, benchmark 2).
#
# Device: a 20 MB/s single-queue card,
#   null submit_queues=1 hw_queue_depth=32 irqmode=2 completion_nsec=100000
#   mbps=20, with real timing.
# Two clients on separate NBD connections (fio's nbd engine opens one per
# job):
#   greedy: 64 KiB writes, 32 in flight (plain writes: async)
#   sync:   4 KiB random reads, one at a time (reads: sync)
# The front end maps ops to sync/async as the core does (op_is_sync): READ,
# FLUSH and FUA or SYNC writes are sync, a plain WRITE is async.
#
# Prints the sync client's p50/p99 completion latency and the total
# throughput for each scheduler.  Not a test: timing belongs here.
#   RUNTIME=20 SCHEDULERS="none mq-deadline bfq kyber" bench/sched-latency.sh [BUILD]
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH
build=${1:-build}
plugin=$(realpath "$build/nbdkit-mqblk-plugin.so")
runtime=${RUNTIME:-20}
scheds=${SCHEDULERS:-none mq-deadline bfq kyber}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/job.fio" <<FIO
[global]
ioengine=nbd
uri=\${URI}
time_based=1
runtime=${runtime}
ramp_time=2
group_reporting=0
[greedy]
rw=write
bs=64k
iodepth=32
[sync]
rw=randread
bs=4k
iodepth=1
FIO

printf '%-12s %12s %12s %14s\n' scheduler "sync p50 ms" "sync p99 ms" "total MB/s"
for s in $scheds; do
	# nbdkit -t 33: enough threads for 32 greedy commands plus the reader.
	nbdkit -U - -t 33 "$plugin" device=null submit_queues=1 \
		hw_queue_depth=32 irqmode=2 completion_nsec=100000 mbps=20 \
		size=1G scheduler="$s" \
		--run "URI=\"\$uri\" fio --output-format=json $tmp/job.fio > $tmp/$s.json"
	/usr/bin/python3 - "$s" "$tmp/$s.json" <<'PY'
import json, sys
s, path = sys.argv[1], sys.argv[2]
text = open(path).read()  # the nbd engine prints a line first
jobs = {j["jobname"]: j for j in json.loads(text[text.index("{"):])["jobs"]}
pct = jobs["sync"]["read"]["clat_ns"]["percentile"]
total = sum(j["read"]["bw_bytes"] + j["write"]["bw_bytes"]
            for j in jobs.values()) / 1e6
print("%-12s %12.2f %12.2f %14.2f" % (s, pct["50.000000"] / 1e6,
                                     pct["99.000000"] / 1e6, total))
PY
done
