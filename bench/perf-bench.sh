#!/bin/bash
# The server's own ceiling, side by side (docs/performance.md): 4 KiB
# random reads at QD32 on a Unix socket, with 1 and 4 connections, from
# two clients:
#   loadgen   build/nbd-loadgen: one thread and connection each, requests
#             batched into one writev, replies read in large reads
#   fio       fio's nbd engine (libnbd), one job and connection each
# against
#   ceiling        build/nbd-ceiling, which answers from a static buffer
#   ceiling-data   nbd-ceiling --data: reads answered from a filled buffer
#                  of SIZE at their offset, so the data comes from memory
#   mqblkd         mqblkd ram (-t LOOPS, default --poll-us)
#   mqblkd-nopoll  the same with --poll-us=0
#   plugin         nbdkit -t 16 with the mqblk plugin on ram
#   memory         nbdkit -t 16 memory
#   qemu-nbd       qemu-nbd on a file in /dev/shm
# Every disk is filled first, so reads hit data.  Per cell: IOPS, the
# server's CPU microseconds per request (utime + stime of the server
# process from /proc/PID/stat over the run, over the requests), and IOPS
# as a fraction of the ceiling's with the same client and connections
# (medians of the rounds; servers take turns within a round, so load from
# elsewhere hits them alike).  Then:
#   scaling   mqblkd with 1, 2, 4 ... N event loops (N = CPUs; SCALE_MAX
#             to go further) and as many loadgen connections, and the
#             ceiling with the same connections
#   plugin    nbdkit -t 1, 4 and 16 with the plugin, 1 and 4 connections
#   poll      mqblkd --poll-us=50 against --poll-us=0: QD1 on one
#             connection, QD32 on 1 and 4, each without and with a CPU
#             hog pinned to each CPU the server may use; the two take
#             turns at going first, round by round
# Not a test: prints Markdown tables and the load average beside them.
#
#   bench/perf-bench.sh [BUILD_DIR]      (default: build)
#
# Environment: RUNTIME (s per cell, default 5), ROUNDS (default 3), SIZE
# (default 512M), LOOPS (mqblkd -t, default: CPUs), SECTIONS (default
# "servers scaling plugin poll"), SERVERS, CLIENTS (default "loadgen
# fio"), SCALE_MAX (default: CPUs).
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
runtime=${RUNTIME:-5}
rounds=${ROUNDS:-3}
size=${SIZE:-512M}
ncpu=$(nproc)
loops=${LOOPS:-$ncpu}
sections=${SECTIONS:-servers scaling plugin poll}
servers=${SERVERS:-ceiling ceiling-data mqblkd mqblkd-nopoll plugin memory qemu-nbd}
clients=${CLIENTS:-loadgen fio}
scale_max=${SCALE_MAX:-$ncpu}
for bin in mqblkd nbd-loadgen nbd-ceiling nbdkit-mqblk-plugin.so; do
	[ -e "$build/$bin" ] || {
		echo "$0: $build/$bin not built" >&2
		exit 1
	}
done
for tool in nbdkit fio python3; do
	command -v $tool >/dev/null || {
		echo "$0: $tool is needed" >&2
		exit 1
	}
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/perf-bench.XXXXXX")
shm=$(mktemp /dev/shm/perf-bench.XXXXXX)
pid=
hogs=()
cleanup() {
	local h
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	for h in "${hogs[@]}"; do
		kill "$h" 2>/dev/null && wait "$h" 2>/dev/null
	done
	rm -rf "$tmp" "$shm"
}
trap cleanup EXIT
sock=$tmp/sock
results=$tmp/results

wait_sock() {
	for _ in $(seq 200); do
		python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" \
			"$sock" 2>/dev/null && return 0
		sleep 0.05
	done
	cat "$tmp/server.log" >&2
	echo "$0: nothing listens on $sock" >&2
	exit 1
}

# start SERVER [ARG...]: sets pid; ARGs go to mqblkd or nbdkit.
start() {
	local s=$1
	shift
	rm -f "$sock"
	case $s in
	ceiling)
		"$build/nbd-ceiling" -U "$sock" --size "$(numfmt --from=iec "$size")" \
			2>"$tmp/server.log" &
		;;
	ceiling-data)
		"$build/nbd-ceiling" -U "$sock" --size "$(numfmt --from=iec "$size")" \
			--data 2>"$tmp/server.log" &
		;;
	mqblkd)
		"$build/mqblkd" -f -U "$sock" -t "$loops" "$@" ram "size=$size" \
			2>"$tmp/server.log" &
		;;
	mqblkd-nopoll)
		"$build/mqblkd" -f -U "$sock" -t "$loops" --poll-us=0 "$@" ram \
			"size=$size" 2>"$tmp/server.log" &
		;;
	plugin)
		nbdkit -f -U "$sock" -t 16 "$@" "$build/nbdkit-mqblk-plugin.so" \
			device=ram "size=$size" 2>"$tmp/server.log" &
		;;
	memory)
		nbdkit -f -U "$sock" -t 16 memory "$size" 2>"$tmp/server.log" &
		;;
	qemu-nbd)
		truncate -s 0 "$shm"
		truncate -s "$size" "$shm"
		qemu-nbd -f raw -k "$sock" --shared=8 --persistent \
			--cache=writeback --aio=threads "$shm" \
			2>"$tmp/server.log" &
		;;
	esac
	pid=$!
	wait_sock
	[ "${s#ceiling}" != "$s" ] ||
		fio --name=fill --ioengine=nbd --uri="nbd+unix:///?socket=$sock" \
			--rw=write --bs=1M --iodepth=8 --size="$size" \
			--output=/dev/null
}

stop() {
	kill "$pid" 2>/dev/null || :
	wait "$pid" 2>/dev/null || :
	pid=
}

ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }

# measure SECTION ROW CLIENT CONNS QD: one cell into $results as
# "section row client conns qd round iops cpu_us load".
measure() {
	local sec=$1 row=$2 client=$3 conns=$4 qd=$5 out iops cpu t0 t1 ios
	case $client in
	loadgen)
		out=$("$build/nbd-loadgen" -U "$sock" -c "$conns" -q "$qd" \
			-s "$runtime" -r 1 --pid "$pid")
		iops=$(sed -n 's/.*iops=\([0-9.]*\).*/\1/p' <<<"$out")
		cpu=$(sed -n 's/.*server_cpu_us=\([0-9.]*\).*/\1/p' <<<"$out")
		;;
	fio)
		t0=$(ticks)
		fio --name=bench --ioengine=nbd \
			--uri="nbd+unix:///?socket=$sock" --rw=randread --bs=4k \
			--iodepth="$qd" --numjobs="$conns" --group_reporting \
			--size="$size" --runtime="$runtime" --time_based \
			--output-format=json --output="$tmp/fio.json" >/dev/null
		t1=$(ticks)
		read -r iops ios < <(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print(j["iops"], j["total_ios"])' "$tmp/fio.json")
		cpu=$(python3 -c "print(($t1 - $t0) * 1e6 / $(getconf CLK_TCK) / max($ios, 1))")
		;;
	esac
	echo "$sec $row $client $conns $qd $r $iops $cpu $(cut -d' ' -f1 /proc/loadavg)" \
		>>"$results"
}

avail=()
for s in $servers; do
	case $s in
	qemu-nbd)
		if command -v qemu-nbd >/dev/null; then
			avail+=("$s")
		else
			echo "skipping qemu-nbd: not installed" >&2
		fi
		;;
	*) avail+=("$s") ;;
	esac
done

scale=()
for ((t = 1; t < scale_max; t *= 2)); do scale+=("$t"); done
scale+=("$scale_max")

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $ncpu CPUs" >&2
for r in $(seq "$rounds"); do
	for sec in $sections; do
		case $sec in
		servers)
			for client in $clients; do
				for conns in 1 4; do
					for s in "${avail[@]}"; do
						echo "round $r: $s, $client x$conns" >&2
						start "$s"
						measure servers "$s" "$client" "$conns" 32
						stop
					done
				done
			done
			;;
		scaling)
			for t in "${scale[@]}"; do
				echo "round $r: scaling, $t loops" >&2
				start ceiling
				measure scaling ceiling loadgen "$t" 32
				stop
				loops_save=$loops
				loops=$t
				start mqblkd
				measure scaling "mqblkd-t$t" loadgen "$t" 32
				stop
				loops=$loops_save
			done
			;;
		plugin)
			for nt in 1 4 16; do
				for conns in 1 4; do
					echo "round $r: plugin -t $nt x$conns" >&2
					start plugin -t "$nt"
					measure plugin "plugin-t$nt" loadgen "$conns" 32
					stop
				done
			done
			;;
		poll)
			for hog in 0 1; do
				if [ $hog = 1 ]; then
					for ((c = 0; c < ncpu; c++)); do
						taskset -c $c sh -c 'while :; do :; done' &
						hogs+=($!)
					done
				fi
				# odd rounds start with polling, even ones without:
				# neither always runs first (after the fill, the hogs)
				order="mqblkd mqblkd-nopoll"
				((r % 2)) || order="mqblkd-nopoll mqblkd"
				for cell in "1 1" "1 32" "4 32"; do
					read -r conns qd <<<"$cell"
					for s in $order; do
						echo "round $r: poll, $s x$conns QD$qd hog=$hog" >&2
						start "$s"
						measure "poll-hog$hog" "$s" loadgen "$conns" "$qd"
						stop
					done
				done
				for h in "${hogs[@]}"; do
					kill "$h" 2>/dev/null || :
					wait "$h" 2>/dev/null || :
				done
				hogs=()
			done
			;;
		esac
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg) on $ncpu CPUs" >&2
[ -n "${KEEP:-}" ] && cp "$results" "$KEEP"

python3 - "$results" "$rounds" <<'EOF'
import statistics, sys
from collections import defaultdict

rows = defaultdict(dict)  # (sec, row, client, conns, qd) -> {round: (iops, cpu, load)}
for line in open(sys.argv[1]):
    sec, row, client, conns, qd, rnd, iops, cpu, load = line.split()
    rows[(sec, row, client, int(conns), int(qd))][int(rnd)] = (
        float(iops), float(cpu or "nan"), float(load))


def med(key, i):
    return statistics.median(v[i] for v in rows[key].values())


def frac(key, ref):
    """Median of the per-round ratios key/ref (same round, paired)."""
    if ref not in rows:
        return ""
    per = [rows[key][r][0] / rows[ref][r][0] for r in rows[key]
           if r in rows[ref] and rows[ref][r][0]]
    if not per:
        return ""
    s = "%.2f" % statistics.median(per)
    if len(per) > 1:
        s += " (%.2f-%.2f)" % (min(per), max(per))
    return s


def loads(key):
    ls = [v[2] for v in rows[key].values()]
    return "%.1f-%.1f" % (min(ls), max(ls))


secs = []
for k in rows:
    if k[0] not in secs:
        secs.append(k[0])
for sec in secs:
    keys = sorted((k for k in rows if k[0] == sec),
                  key=lambda k: (k[2], k[3], k[4]))
    print("\n### %s (medians of %s rounds)\n" % (sec, sys.argv[2]))
    print("| server | client | conns | QD | IOPS | server CPU us/req "
          "| / ceiling | / ceiling-data | / nopoll | load |")
    print("|---|---|---:|---:|---:|---:|---|---|---|---|")
    for k in keys:
        _, row, client, conns, qd = k
        ceil = (k[0], "ceiling", client, conns, qd)
        ceild = (k[0], "ceiling-data", client, conns, qd)
        nop = (k[0], "mqblkd-nopoll", client, conns, qd)
        print("| %s | %s | %d | %d | %.0f | %.2f | %s | %s | %s | %s |" % (
            row, client, conns, qd, med(k, 0), med(k, 1),
            frac(k, ceil) if row != "ceiling" else "",
            frac(k, ceild) if not row.startswith("ceiling") else "",
            frac(k, nop) if row == "mqblkd" else "", loads(k)))
EOF
