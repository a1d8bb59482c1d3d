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
. "$(dirname "$0")/lib.sh"
bench_init nbd-bench "${1:-}" -- nbdkit fio python3
runtime=${RUNTIME:-10}
threads=${THREADS:-16}
size=${SIZE:-1G}
rounds=${ROUNDS:-3}

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
# OUT gets fio's JSON; OUT.cpu the CPU time (clock ticks) the server
# process used during the measured run, and OUT.load the load average
# when it ended: IOPS on a shared machine vary, CPU per I/O much less.
run() {
	local server=$1 opts=$2 out=$3
	# shellcheck disable=SC2086 # word splitting of the arguments wanted
	nbdkit -U - -t "$threads" -P "$tmp/pid" --run "
		cpu() { awk '{ print \$14 + \$15 }' /proc/\$(cat $tmp/pid)/stat; }
		fio --name=fill --ioengine=nbd --uri=\"\$uri\" --rw=write \
			--bs=1M --iodepth=4 --size=$size \
			--output=/dev/null &&
		t0=\$(cpu) &&
		fio --name=bench --ioengine=nbd --uri=\"\$uri\" $opts \
			--size=$size --runtime=$runtime --time_based \
			--output-format=json --output=$out &&
		echo \$((\$(cpu) - t0)) > $out.cpu &&
		cut -d' ' -f1 /proc/loadavg > $out.load
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

python3 - "$tmp" "$rounds" "$(getconf CLK_TCK)" "${workloads[@]%%:*}" <<'EOF'
import json
import sys

tmp, rounds, hz, names = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                          sys.argv[4:])


def runs(name, server):
    """(IOPS, MB/s, server CPU us per I/O, load average) of each round."""
    out = []
    for r in range(1, rounds + 1):
        base = "%s/%s.%s.%d.json" % (tmp, name, server, r)
        with open(base) as f:
            job = json.load(f)["jobs"][0]
        io = job["write"] if "write" in name else job["read"]
        ticks = int(open(base + ".cpu").read())
        load = float(open(base + ".load").read())
        out.append((io["iops"], io["bw_bytes"] / 1e6,
                    ticks * 1e6 / hz / max(io["total_ios"], 1), load))
    return out


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


print("Medians of %d rounds.  CPU: the nbdkit process's CPU time per I/O."
      % rounds)
print()
print("| workload | memory IOPS | memory MB/s | mqblk IOPS | mqblk MB/s "
      "| ratio | memory CPU us/IO | mqblk CPU us/IO |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name in names:
    m = runs(name, "memory")
    q = runs(name, "mqblk")
    mi, qi = median(r[0] for r in m), median(r[0] for r in q)
    print("| %s | %.0f | %.1f | %.0f | %.1f | %.2f | %.1f | %.1f |"
          % (name, mi, median(r[1] for r in m), qi,
             median(r[1] for r in q), qi / mi,
             median(r[2] for r in m), median(r[2] for r in q)))
print()
print("Each round (IOPS, CPU us/IO, 1-minute load average at its end):")
for name in names:
    for server in ("memory", "mqblk"):
        print("  %-18s %-7s %s" % (name, server, "  ".join(
            "%.0f/%.1f/%.1f" % (r[0], r[2], r[3])
            for r in runs(name, server))))
EOF
