#!/bin/bash
# One file read sequentially over several NBD connections, interleaved
# (docs/schedulers.md, "Queue merging"): connection i of CONNS reads blocks
# i, i + CONNS, i + 2 CONNS, ... of BS bytes, one at a time, as a
# multi-conn client does.  Each connection is a bfq client; together they
# are one sequential stream, which bfq serves as such only if it merges
# their queues.
#
# Device: an ide-disk (5400 rpm model, real timing), through the nbdkit
# plugin; fio's nbd engine, one connection per job.  Prints the total
# read throughput per round for each case, with `uptime`'s load average
# before each run (the device's own timing dominates, but the machine
# may be shared):
#   bfq          this build
#   bfq@base     BASE_BUILD's plugin (e.g. a build of the branch point),
#                if BASE_BUILD is set
#   mq-deadline  this build
# Not a test: timing belongs here.
#   RUNTIME=15 ROUNDS=3 CONNS=4 BS=64k BASE_BUILD=/path/to/build \
#     bench/bfq-merge-bench.sh [BUILD]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bfq-merge "${1:-}" -- nbdkit fio python3
runtime=${RUNTIME:-15}
rounds=${ROUNDS:-3}
conns=${CONNS:-4}
bs=${BS:-64k}
qd=${QD:-1}

bytes() { numfmt --from=iec "${1^^}"; }
bsb=$(bytes "$bs")
skip=$(((conns - 1) * bsb))

cat > "$tmp/job.fio" <<FIO
[global]
ioengine=nbd
uri=\${URI}
time_based=1
runtime=${runtime}
ramp_time=2
group_reporting=1
numjobs=${conns}
bs=${bsb}
iodepth=${qd}
rw=read:${skip}
offset_increment=${bsb}
size=4g
[interleaved]
FIO

# case NAME PLUGIN SCHEDULER
run_case() {
	local name=$1 plug=$2 sched=$3 r load mbs
	for r in $(seq 1 "$rounds"); do
		load=$(uptime | sed 's/.*load average: //')
		nbdkit -U - -t $((conns * qd + 1)) "$plug" device=ide-disk size=8G \
			scheduler="$sched" \
			--run "URI=\"\$uri\" fio --output-format=json $tmp/job.fio > $tmp/out.json"
		mbs=$(python3 - "$tmp/out.json" <<'PY'
import json, sys
text = open(sys.argv[1]).read()  # the nbd engine prints a line first
jobs = json.loads(text[text.index("{"):])["jobs"]
print("%.2f" % (sum(j["read"]["bw_bytes"] for j in jobs) / 1e6))
PY
)
		printf '%-12s %5s %10s   %s\n' "$name" "$r" "$mbs" "$load"
	done
}

printf '%-12s %5s %10s   %s\n' case round "MB/s" "load average (1, 5, 15 min)"
run_case bfq "$plugin" bfq
if [ -n "${BASE_BUILD:-}" ]; then
	run_case bfq@base "$(cd "$BASE_BUILD" && pwd)/nbdkit-mqblk-plugin.so" bfq
fi
run_case mq-deadline "$plugin" mq-deadline
