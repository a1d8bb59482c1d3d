#!/bin/bash
# The study, question 2 (Bart Van Assche): what does bfq cost on a fast
# single-queue SSD?  The sata-ssd model (1 hw queue, NCQ 32, 100 us reads,
# 120 us writes, 90k IOPS at depth) under none, mq-deadline, bfq and kyber.
#
#   bench/study-ssd-cost.sh [BUILD_DIR]     (default: build)
#
# 1. Over NBD: build/mqblkd serving sata-ssd on a Unix socket, one
#    scheduler per server (device key scheduler=NAME), fio's nbd engine
#    (one connection) doing 4 KiB random reads and random writes at QD1
#    and QD32: IOPS, mean and p99 completion latency.  Each run twice:
#    with the model's timing (time_scale=1) and with it off
#    (time_scale=0), the ceiling that the client, the front end and the
#    core leave on this machine.  With time off, nbd-loadgen (a cheaper
#    client) also reports the server's CPU per request (--pid) at QD32.
# 2. In process: build/mqblk-bench core --cpu, the null device completing
#    inline, so the CPU a request costs through the core and the
#    scheduler, per scheduler, at 1 and 32 requests in flight, reads and
#    writes.  Then the same with the sata-ssd model itself (--device,
#    its own timing), no front end and no client: what the device gives
#    each scheduler when NBD is not in the way.
#
# Environment: RUNTIME (s a run, default 5), ROUNDS (default 1; every
# figure is the median of the rounds), SCHEDS (default "none mq-deadline
# bfq kyber"), LOOPS (mqblkd -t, default 2), OUT (where the .dat and .svg
# go, default docs/study under the repository).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init study-ssd-cost "${1:-}" -- fio gnuplot python3

runtime=${RUNTIME:-5}
rounds=${ROUNDS:-1}
loops=${LOOPS:-2}
scheds=${SCHEDS:-none mq-deadline bfq kyber}
repo=$(cd "$bench_dir/.." && pwd)
OUT=${OUT:-docs/study}
case $OUT in
/*) out=$OUT ;;
*) out=$repo/$OUT ;;
esac
mkdir -p "$out"
for bin in mqblkd mqblk-bench nbd-loadgen; do
	[ -x "$build/$bin" ] || {
		echo "$0: $build/$bin not built" >&2
		exit 1
	}
done

pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
sock=$tmp/sock

# start KEY=VALUE...: mqblkd serving sata-ssd with these keys.
start() {
	rm -f "$sock"
	"$build/mqblkd" -f -U "$sock" -t "$loops" sata-ssd size=1G "$@" \
		2>"$tmp/server.log" &
	pid=$!
	for _ in $(seq 100); do
		[ -S "$sock" ] && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$tmp/server.log" >&2
	echo "$0: mqblkd $* did not start" >&2
	exit 1
}

stop() {
	kill "$pid"
	wait "$pid" || true
	pid=
}

# fio_job FILE RW QD: one fio job over NBD, its JSON in FILE.
fio_job() {
	fio --name=job --ioengine=nbd --uri="nbd+unix:///?socket=$sock" \
		--rw="$2" --bs=4k --iodepth="$3" --size=1G --time_based \
		--runtime="$runtime" --ramp_time=1 --randrepeat=0 \
		--output-format=json --output="$1" >/dev/null
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u +%Y-%m-%dT%H:%MZ)
echo "load before: $load_before on $(nproc) CPUs" >&2
for round in $(seq "$rounds"); do
	for ts in 1 0; do
		for s in $scheds; do
			echo "round $round/$rounds: time_scale=$ts, $s" >&2
			start time_scale=$ts scheduler="$s"
			for rw in randread randwrite; do
				for qd in 1 32; do
					fio_job "$tmp/fio.$ts.$s.$rw.$qd.$round.json" $rw $qd
				done
			done
			if [ $ts = 0 ]; then
				for rw in read write; do
					w=
					[ $rw = write ] && w=--write
					"$build/nbd-loadgen" -U "$sock" -q 32 $w \
						-s "$runtime" -r 1 --pid "$pid" \
						>"$tmp/lg.$s.$rw.$round"
				done
			fi
			stop
		done
	done
	echo "round $round/$rounds: in process (mqblk-bench core --cpu)" >&2
	for wp in 0 100; do
		for qd in 1 32; do
			# shellcheck disable=SC2086 # a list on purpose
			"$build/mqblk-bench" core --cpu --seconds "$runtime" \
				--inflight $qd --write-pct $wp \
				--sched "$(echo $scheds | tr ' ' ,)" \
				2>/dev/null >"$tmp/ip.$wp.$qd.$round"
			"$build/mqblk-bench" core --cpu --seconds "$runtime" \
				--device device=sata-ssd,size=1G \
				--inflight $qd --write-pct $wp \
				--sched "$(echo $scheds | tr ' ' ,)" \
				2>/dev/null >"$tmp/ssd.$wp.$qd.$round"
		done
	done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load after: $load_after on $(nproc) CPUs" >&2

cat >"$tmp/header" <<EOF
# bench/study-ssd-cost.sh: sata-ssd (size=1G), mqblkd -t $loops on a Unix
# socket, fio $(fio --version) nbd engine, 4 KiB random I/O;
# in process: mqblk-bench core --cpu (null irqmode=0, inline completion).
# $started, RUNTIME=$runtime ROUNDS=$rounds, $(nproc) CPUs ($(uname -m)),
# load average before $load_before, after $load_after.
# Command: RUNTIME=$runtime ROUNDS=$rounds bench/study-ssd-cost.sh
EOF

# shellcheck disable=SC2086 # the schedulers, one argument each
python3 - "$tmp" "$rounds" "$out" $scheds <<'PYEOF'
import json
import statistics
import sys

tmp, rounds, out, scheds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
med = statistics.median
header = open(tmp + "/header").read()
loads = [("randread", 1), ("randread", 32), ("randwrite", 1), ("randwrite", 32)]
label = {"randread": "read", "randwrite": "write"}


def fio(ts, s, rw, qd):
    """(IOPS, mean us, p99 us), each the median of the rounds."""
    vals = []
    for r in range(1, rounds + 1):
        with open("%s/fio.%s.%s.%s.%d.%d.json" % (tmp, ts, s, rw, qd, r)) as f:
            j = json.load(f)["jobs"][0][rw[4:]]
        if j.get("total_ios", 1) == 0 or j["iops"] == 0:
            sys.exit("fio %s %s QD%d (time_scale=%s): no I/O" % (s, rw, qd, ts))
        clat = j["clat_ns"]
        vals.append((j["iops"], clat["mean"] / 1e3,
                     clat["percentile"]["99.000000"] / 1e3))
    return tuple(med(v[i] for v in vals) for i in range(3))


def loadgen(s, rw):
    vals = []
    for r in range(1, rounds + 1):
        with open("%s/lg.%s.%s.%d" % (tmp, s, rw, r)) as f:
            kv = dict(x.split("=") for x in f.read().split())
        if int(kv["errors"]):
            sys.exit("nbd-loadgen %s %s: %s errors" % (s, rw, kv["errors"]))
        vals.append((float(kv["iops"]), float(kv["server_cpu_us"])))
    return tuple(med(v[i] for v in vals) for i in range(2))


def inproc(wp, qd, what="ip"):
    """{sched: (rate, cpu us)} from mqblk-bench core --cpu."""
    per = {}
    for r in range(1, rounds + 1):
        with open("%s/%s.%d.%d.%d" % (tmp, what, wp, qd, r)) as f:
            for line in f:
                name, rate, cpu = line.split()
                per.setdefault(name, []).append((float(rate), float(cpu)))
    return {s: (med(v[0] for v in per[s]), med(v[1] for v in per[s]))
            for s in scheds if s in per}


timed = {(s, rw, qd): fio(1, s, rw, qd) for s in scheds for rw, qd in loads}
ceil = {(s, rw, qd): fio(0, s, rw, qd) for s in scheds for rw, qd in loads}
lg = {(s, rw): loadgen(s, rw) for s in scheds for rw in ("read", "write")}
ip = {(wp, qd): inproc(wp, qd) for wp in (0, 100) for qd in (1, 32)}
ssd = {(wp, qd): inproc(wp, qd, "ssd") for wp in (0, 100) for qd in (1, 32)}
ipl = ((0, 1), (0, 32), (100, 1), (100, 32))

print("## Over NBD (mqblkd, fio nbd engine): sata-ssd with its timing "
      "(time_scale=1) and without (time_scale=0)")
print("| scheduler | workload | IOPS | mean us | p99 us "
      "| IOPS, time off | p99 us, time off |")
print("|---|---|---:|---:|---:|---:|---:|")
for s in scheds:
    for rw, qd in loads:
        t, c = timed[(s, rw, qd)], ceil[(s, rw, qd)]
        print("| %s | %s QD%d | %.0f | %.0f | %.0f | %.0f | %.0f |"
              % (s, label[rw], qd, t[0], t[1], t[2], c[0], c[2]))
print()
print("## Server CPU per request over NBD, time off, QD32 (nbd-loadgen --pid)")
print("| scheduler | read IOPS | read server us/req "
      "| write IOPS | write server us/req |")
print("|---|---:|---:|---:|---:|")
for s in scheds:
    r, w = lg[(s, "read")], lg[(s, "write")]
    print("| %s | %.0f | %.2f | %.0f | %.2f |" % (s, r[0], r[1], w[0], w[1]))
print()
print("## In process (mqblk-bench core --cpu, null irqmode=0): "
      "CPU us per request")
base = "none" if "none" in scheds else None
print("| scheduler | workload | requests/s | CPU us/req | over none |")
print("|---|---|---:|---:|---:|")
for s in scheds:
    for wp, qd in ((0, 1), (0, 32), (100, 1), (100, 32)):
        d = ip[(wp, qd)]
        if s not in d:
            continue
        over = "%.3f" % (d[s][1] - d[base][1]) if base in d else "-"
        print("| %s | %s QD%d | %.0f | %.3f | %s |"
              % (s, "read" if wp == 0 else "write", qd, d[s][0], d[s][1], over))
print()
print("## In process, the sata-ssd model (mqblk-bench core --cpu --device "
      "device=sata-ssd,size=1G)")
print("| scheduler | workload | IOPS | CPU us/req |")
print("|---|---|---:|---:|")
for s in scheds:
    for wp, qd in ipl:
        d = ssd[(wp, qd)]
        if s in d:
            print("| %s | %s QD%d | %.0f | %.2f |"
                  % (s, "read" if wp == 0 else "write", qd, d[s][0], d[s][1]))

# The data file: gnuplot blocks, one row per workload, one column per
# scheduler, in the order of the header line of each block.
with open(out + "/ssd-cost.dat", "w") as f:
    f.write(header)
    cols = " ".join('"%s"' % s for s in scheds)

    def block(title, rows):
        # blocks are separated by two blank lines; none before the first
        if block.n:
            f.write("\n\n")
        block.n += 1
        f.write("# %s\n\"workload\" %s\n" % (title, cols))
        for name, vals in rows:
            f.write('"%s" %s\n' % (name, " ".join("%.3f" % v for v in vals)))

    block.n = 0
    names = ["%s QD%d" % (label[rw], qd) for rw, qd in loads]
    block("index 0: IOPS over NBD, time_scale=1",
          [(n, [timed[(s, rw, qd)][0] for s in scheds])
           for n, (rw, qd) in zip(names, loads)])
    block("index 1: IOPS over NBD, time_scale=0 (the ceiling)",
          [(n, [ceil[(s, rw, qd)][0] for s in scheds])
           for n, (rw, qd) in zip(names, loads)])
    block("index 2: mean completion latency us over NBD, time_scale=1",
          [(n, [timed[(s, rw, qd)][1] for s in scheds])
           for n, (rw, qd) in zip(names, loads)])
    block("index 3: p99 completion latency us over NBD, time_scale=1",
          [(n, [timed[(s, rw, qd)][2] for s in scheds])
           for n, (rw, qd) in zip(names, loads)])
    block("index 4: CPU us per request in process (mqblk-bench core --cpu)",
          [("%s QD%d" % ("read" if wp == 0 else "write", qd),
            [ip[(wp, qd)].get(s, (0, 0))[1] for s in scheds])
           for wp, qd in ((0, 1), (0, 32), (100, 1), (100, 32))])
    block("index 5: server CPU us per request over NBD, time_scale=0, QD32 "
          "(nbd-loadgen --pid)",
          [(rw, [lg[(s, rw)][1] for s in scheds]) for rw in ("read", "write")])
    block("index 6: IOPS in process, the sata-ssd model, no front end "
          "(mqblk-bench core --device)",
          [("%s QD%d" % ("read" if wp == 0 else "write", qd),
            [ssd[(wp, qd)].get(s, (0, 0))[0] for s in scheds])
           for wp, qd in ipl])
PYEOF

nsched=$(echo "$scheds" | wc -w)
gnuplot <<EOF
set terminal svg size 800,450 dynamic enhanced font 'sans,11'
set output '$out/ssd-cost.svg'
set multiplot layout 1,3 title "sata-ssd (1 hw queue, NCQ 32), 4 KiB random I/O: IOPS by scheduler"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top left font ',9'
set grid ytics
set yrange [0:*]
set xtics font ',8'
set xlabel 'R: random read, W: random write' font ',8'
set offsets 0, 0, graph 0.35, 0
# "read QD32" -> "R QD32": three panels leave little room for the labels
short(s) = (s[1:1] eq 'r' ? 'R' : 'W') . s[strstrt(s, ' '):strlen(s)]
set ylabel 'IOPS'
set title "over NBD, fio nbd engine\ndevice timing on" font ',10'
plot for [i=2:$((nsched + 1))] '$out/ssd-cost.dat' index 0 using i:xtic(short(strcol(1))) title columnheader(i)
set title "over NBD, fio nbd engine\ntiming off: the ceiling" font ',10'
plot for [i=2:$((nsched + 1))] '$out/ssd-cost.dat' index 1 using i:xtic(short(strcol(1))) title columnheader(i)
set title "in process, no front end\n(mqblk-bench core --device)" font ',10'
plot for [i=2:$((nsched + 1))] '$out/ssd-cost.dat' index 6 using i:xtic(short(strcol(1))) title columnheader(i)
unset multiplot
set xtics font ',9'
unset xlabel
set offsets 0, 0, graph 0.2, 0
set output '$out/ssd-cost-cpu.svg'
set multiplot layout 1,2 title "CPU per request by scheduler"
set ylabel 'CPU microseconds per request'
set title "in process: mqblk-bench core --cpu\nnull device, inline completion" font ',10'
plot for [i=2:$((nsched + 1))] '$out/ssd-cost.dat' index 4 using i:xtic(1) title columnheader(i)
set title "mqblkd over NBD, QD32 (nbd-loadgen --pid)\nsata-ssd, timing off" font ',10'
plot for [i=2:$((nsched + 1))] '$out/ssd-cost.dat' index 5 using i:xtic(1) title columnheader(i)
unset multiplot
EOF
echo "wrote $out/ssd-cost.dat, $out/ssd-cost.svg, $out/ssd-cost-cpu.svg" >&2
