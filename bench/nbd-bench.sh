#!/bin/bash
# Side-by-side NBD benchmark: fio's nbd engine against `nbdkit memory`
# and against the mqblk plugin's ram device, same size, same nbdkit
# thread count, Unix socket.  Not a test; prints a table.
#
#   bench/nbd-bench.sh [BUILD_DIR]      (default: build)
#
# Build with -DCMAKE_BUILD_TYPE=Release for numbers worth quoting.
# Environment: RUNTIME (seconds per run, default 10), THREADS (nbdkit -t,
# default 16), SIZE (default 1G), ROUNDS (runs per cell, alternating
# between the servers; the median is printed; default 3).
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
plugin=$(cd "$build" && pwd)/nbdkit-mqblk-plugin.so
runtime=${RUNTIME:-10}
threads=${THREADS:-16}
size=${SIZE:-1G}
rounds=${ROUNDS:-3}

[ -f "$plugin" ] || {
	echo "$0: $plugin not built" >&2
	exit 1
}
for tool in nbdkit fio python3; do
	command -v $tool >/dev/null || {
		echo "$0: $tool is needed" >&2
		exit 1
	}
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nbd-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# name:fio options.  Every run first fills the disk so reads hit data.
workloads=(
	"4k-randread-qd16:--rw=randread --bs=4k --iodepth=16"
	"4k-randwrite-qd16:--rw=randwrite --bs=4k --iodepth=16"
	"1m-seqread-qd4:--rw=read --bs=1M --iodepth=4"
)
servers=(
	"memory:memory $size"
	"mqblk:$plugin device=ram size=$size"
)

# run SERVER-ARGS FIO-OPTIONS OUT: one captive nbdkit, fill, measure.
run() {
	local server=$1 opts=$2 out=$3
	# shellcheck disable=SC2086 # word splitting of the arguments wanted
	nbdkit -U - -t "$threads" --run "
		fio --name=fill --ioengine=nbd --uri=\"\$uri\" --rw=write \
			--bs=1M --iodepth=4 --size=$size \
			--output=/dev/null &&
		fio --name=bench --ioengine=nbd --uri=\"\$uri\" $opts \
			--size=$size --runtime=$runtime --time_based \
			--ramp_time=1 --output-format=json --output=$out
	" $server
}

# Rounds alternate between the servers so that drift hits both alike.
for w in "${workloads[@]}"; do
	name=${w%%:*}
	opts=${w#*:}
	for r in $(seq 1 "$rounds"); do
		for s in "${servers[@]}"; do
			sname=${s%%:*}
			echo "running $name on $sname ($r/$rounds)" >&2
			run "${s#*:}" "$opts" "$tmp/$name.$sname.$r.json"
		done
	done
done

python3 - "$tmp" "$rounds" "${workloads[@]%%:*}" <<'EOF'
import json
import sys

tmp, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]


def median(name, server):
    runs = []
    for r in range(1, rounds + 1):
        with open("%s/%s.%s.%d.json" % (tmp, name, server, r)) as f:
            job = json.load(f)["jobs"][0]
        io = job["write"] if "write" in name else job["read"]
        runs.append((io["iops"], io["bw_bytes"] / 1e6))
    runs.sort()
    return runs[len(runs) // 2]


print("| workload | memory IOPS | memory MB/s | mqblk IOPS | mqblk MB/s "
      "| ratio |")
print("|---|---:|---:|---:|---:|---:|")
for name in names:
    m = median(name, "memory")
    q = median(name, "mqblk")
    print("| %s | %.0f | %.1f | %.0f | %.1f | %.2f |"
          % (name, m[0], m[1], q[0], q[1], q[0] / m[0]))
EOF
