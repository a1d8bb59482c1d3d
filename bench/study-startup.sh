#!/bin/bash
# The study, question 1: does BFQ help on slow single-queue flash?
#
# Application start-up time under a background writer, measured the way
# Valente's benchmark suite does it (the time to read a cold set of files
# while a greedy writer runs), against the same start-up on an idle
# device, for none, mq-deadline, kyber, bfq and bfq with low_latency=0.
#
# Devices (real timing, time_scale=1):
#   mspro  device=mspro with its defaults: a Memory Stick Pro, 20 MB/s
#          read, 10 MB/s write, 100 us a command, one request at a time
#          (queue depth 2, so 4 scheduler requests)
#   sd     a class-10 SD card: null submit_queues=1 hw_queue_depth=64
#          irqmode=2 completion_nsec=500000 mbps=20 (see docs/study.md, question 1)
#
# "Start-up": no filesystem, so a fixed list of reads that looks like
# loading a program: STARTUP_READS reads (default 200) of 4 to 128 KiB,
# in runs of 1 to 3 consecutive reads (a file) at scattered 4 KiB-aligned
# offsets in the first 256 MiB, made once from a fixed seed, so every
# scheduler reads the same.  They are read at QD1 (each waits for the
# previous) by libnbd (python) on a new NBD connection, and the wall time
# of the whole list is the start-up time.
#
# Writer: fio's nbd engine on its own connection, sequential 64 KiB
# plain (async) writes, 16 in flight, in [512 MiB, 1 GiB), started LEAD
# seconds (default 2) before the start-up and stopped when it ends.  Its
# throughput is taken from fio's per-I/O log (Unix timestamps): the bytes
# of the writes that completed while the start-up ran.
#
# Each round is: idle start-up, 1 s pause, loaded start-up, 1 s pause.
# The median of ROUNDS (default 3) is shown.  RUNTIME (default 120) is
# the most seconds a writer may run; a start-up that outlives it is
# flagged.  Writes docs/study/startup.dat and startup.svg (OUT= and NAME=
# to change).
#
#   ROUNDS=3 RUNTIME=120 bench/study-startup.sh [BUILD_DIR]
#   DEVICES="mspro sd" SCHEDULERS="none mq-deadline kyber bfq bfq-ll0"
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init study-startup "${1:-}" -- nbdkit fio gnuplot python3
/usr/bin/python3 -c 'import nbd' 2>/dev/null || {
	echo "$0: libnbd's python module (python3-libnbd) is needed" >&2
	exit 1
}
root=$(cd "$bench_dir/.." && pwd)
out=${OUT:-docs/study}
case $out in /*) ;; *) out=$root/$out ;; esac
mkdir -p "$out"
rounds=${ROUNDS:-3}
runtime=${RUNTIME:-120}
lead=${LEAD:-2}
nreads=${STARTUP_READS:-200}
devices=${DEVICES:-mspro sd}
scheds=${SCHEDULERS:-none mq-deadline kyber bfq bfq-ll0}
name=${NAME:-startup}

dev_keys() {
	case $1 in
	mspro) echo "device=mspro size=1G" ;;
	sd) echo "device=null submit_queues=1 hw_queue_depth=64 irqmode=2" \
		"completion_nsec=500000 mbps=20 size=1G" ;;
	*)
		echo "$0: unknown device $1" >&2
		exit 1
		;;
	esac
}

sched_keys() {
	case $1 in
	bfq-ll0) echo "scheduler=bfq iosched.low_latency=0" ;;
	*) echo "scheduler=$1" ;;
	esac
}

# The start-up list: offset and length a line, the same for every run.
/usr/bin/python3 - "$nreads" >"$tmp/startup.list" <<'PY'
import random, sys
n = int(sys.argv[1])
rng = random.Random(20181012)          # fixed: the article's date
sizes = [4, 8, 16, 32, 64, 128]         # KiB
weights = [30, 20, 15, 15, 10, 10]
region = 256 << 20                      # the writer never goes below 512 MiB
out = []
while len(out) < n:
    off = rng.randrange(0, region - (1 << 20), 4096)
    for _ in range(rng.choice([1, 1, 2, 3])):
        if len(out) == n:
            break
        ln = rng.choices(sizes, weights)[0] << 10
        out.append((off, ln))
        off += ln
for off, ln in out:
    print(off, ln)
PY
list_bytes=$(awk '{s += $2} END {print s}' "$tmp/startup.list")
list_sum=$(md5sum <"$tmp/startup.list" | cut -c1-12)

# The driver, run by nbdkit --run with the server's URI: ROUNDS of an idle
# then a loaded start-up; one line a run: kind round seconds writer_bytes
# window_seconds flag.
cat >"$tmp/drive.py" <<'PY'
import nbd, os, signal, subprocess, sys, time

uri, listfile, rounds, lead, runtime, logdir = sys.argv[1:7]
rounds, lead, runtime = int(rounds), float(lead), int(runtime)
reads = [tuple(map(int, l.split())) for l in open(listfile)]

def startup():
    h = nbd.NBD()
    h.connect_uri(uri)           # a new connection: a new "process"
    t0 = time.time()
    m0 = time.monotonic()
    for off, ln in reads:
        h.pread(ln, off)
    m1 = time.monotonic()
    t1 = time.time()
    h.shutdown()
    del h
    return m1 - m0, t0, t1

def writer_bytes(log, t0, t1):
    total = 0
    for line in open(log):
        f = [x.strip() for x in line.split(",")]
        ts = int(f[0]) / 1000.0
        if t0 <= ts <= t1 and f[2] == "1":
            total += int(f[3])
    return total

for r in range(1, rounds + 1):
    dt, _, _ = startup()
    print("idle", r, "%.4f" % dt, 0, "%.4f" % dt, "ok", flush=True)
    time.sleep(1)
    prefix = os.path.join(logdir, "w%d" % r)
    fio = subprocess.Popen(
        ["fio", "--name=writer", "--ioengine=nbd", "--uri=" + uri,
         "--rw=write", "--bs=64k", "--iodepth=16", "--offset=512m",
         "--size=512m", "--time_based=1", "--runtime=%d" % runtime,
         "--write_bw_log=" + prefix, "--log_unix_epoch=1",
         "--output-format=json", "--output=" + prefix + ".json"],
        stdout=subprocess.DEVNULL)
    time.sleep(lead)
    if fio.poll() is not None:
        sys.exit("fio stopped early: %d" % fio.returncode)
    dt, t0, t1 = startup()
    flag = "ok" if fio.poll() is None else "writer-ended"
    fio.send_signal(signal.SIGINT)
    fio.wait(timeout=60)         # fio exits 128 after SIGINT
    wb = writer_bytes(prefix + "_bw.1.log", t0, t1)
    print("loaded", r, "%.4f" % dt, wb, "%.4f" % (t1 - t0), flag, flush=True)
    time.sleep(1)
PY

dat=$out/$name.dat
raw=$tmp/rounds.txt
: >"$raw"
load_start=$(uptime | sed 's/.*load average: //')
# Before the run: the run itself rewrites the data file and the plot.
src=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
echo "study-startup: $nreads reads, $list_bytes bytes (list $list_sum)," \
	"ROUNDS=$rounds LEAD=$lead RUNTIME=$runtime, load $load_start" >&2
for d in $devices; do
	for s in $scheds; do
		echo "  $d $s ..." >&2
		load=$(uptime | sed 's/.*load average: //; s/,.*//')
		# -t 33: a thread for each of the writer's 16 commands, and spare.
		# shellcheck disable=SC2046
		nbdkit -U - -t 33 "$plugin" $(dev_keys "$d") $(sched_keys "$s") \
			--run "/usr/bin/python3 $tmp/drive.py \"\$uri\" \
				$tmp/startup.list $rounds $lead $runtime $tmp" |
			sed "s/^/$d $s $load /" >>"$raw"
	done
done
load_end=$(uptime | sed 's/.*load average: //')

# Medians per device and scheduler; one gnuplot data block per device.
/usr/bin/python3 - "$raw" "$list_bytes" "$devices" "$scheds" >"$tmp/medians" <<'PY'
import statistics, sys
raw, list_bytes, devices, scheds = sys.argv[1:5]
list_bytes = int(list_bytes)
runs = {}
for line in open(raw):
    d, s, load, kind, r, dt, wb, win, flag = line.split()
    runs.setdefault((d, s, kind), []).append(
        (float(dt), int(wb), float(win), flag, float(load)))
first = True
for d in devices.split():
    if not first:
        print("\n")
    first = False
    print("# device %s" % d)
    print("# %-9s %-12s %9s %9s %7s %10s %10s %6s %s" % (
        "device", "scheduler", "idle_s", "loaded_s", "ratio",
        "writer_MBps", "total_MBps", "load", "flags"))
    for s in scheds.split():
        idle = runs[(d, s, "idle")]
        loaded = runs[(d, s, "loaded")]
        mi = statistics.median(x[0] for x in idle)
        ml = statistics.median(x[0] for x in loaded)
        # the writer's MB/s while the start-up ran, median over rounds
        wmb = statistics.median(x[1] / x[2] / 1e6 for x in loaded)
        tmb = statistics.median((x[1] + list_bytes) / x[2] / 1e6
                                for x in loaded)
        flags = ",".join(sorted({x[3] for x in loaded}))
        print("  %-9s %-12s %9.3f %9.3f %7.2f %10.2f %10.2f %6.2f %s" % (
            d, s, mi, ml, ml / mi, wmb, tmb, idle[0][4], flags))
PY

{
	echo "# Study, question 1: application start-up time under a background writer."
	echo "# bench/study-startup.sh; $(date -u '+%Y-%m-%d %H:%M UTC'); nproc $(nproc);"
	echo "# source: $src; build type:" \
		"$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)"
	echo "# load average at start: $load_start; at end: $load_end"
	echo "# command: ROUNDS=$rounds LEAD=$lead RUNTIME=$runtime" \
		"STARTUP_READS=$nreads DEVICES=\"$devices\" SCHEDULERS=\"$scheds\"" \
		"NAME=$name bench/study-startup.sh"
	echo "# start-up list: $nreads reads, $list_bytes bytes, md5 $list_sum"
	for d in $devices; do
		echo "# $d: $(dev_keys "$d") time_scale=1, nbdkit -U - -t 33"
	done
	echo "# writer: fio ioengine=nbd rw=write bs=64k iodepth=16 offset=512m size=512m"
	echo "# columns: medians of ROUNDS; writer_MBps = writer's bytes completed"
	echo "# during the loaded start-up / its wall time; total adds the start-up's"
	echo "# bytes; load = 1-minute load average before that scheduler's runs"
	cat "$tmp/medians"
	echo
	echo
	echo "# every run: device scheduler load kind round seconds writer_bytes window_s flag"
	sed 's/^/# /' "$raw"
} >"$dat"

echo
grep -v '^#' "$tmp/medians" | sed '/^$/d' |
	awk 'BEGIN { printf "%-7s %-12s %9s %9s %7s %11s %10s %6s\n",
		"device", "scheduler", "idle s", "loaded s", "ratio",
		"writer MB/s", "total MB/s", "load" }
	     { printf "%-7s %-12s %9s %9s %7s %11s %10s %6s %s\n",
		$1, $2, $3, $4, $5, $6, $7, $8, ($9 == "ok" ? "" : $9) }'

ndev=$(echo "$devices" | wc -w)
{
	echo "set terminal svg size 800,450 dynamic enhanced font 'sans,11'"
	echo "set output '$out/$name.svg'"
	echo "set multiplot layout 1,$ndev title 'Start-up: $nreads QD1 reads" \
		"($(awk "BEGIN {printf \"%.1f\", $list_bytes / 1048576}") MiB)," \
		"idle and beside a sequential writer (64 KiB x 16)'"
	echo "set style data histograms"
	echo "set style histogram clustered gap 1"
	echo "set style fill solid 0.8 border -1"
	echo "set logscale y"
	echo "set yrange [*:*]"
	echo "set ylabel 'start-up time, s (log scale)'"
	echo "set xtics nomirror font 'sans,9'"
	echo "set xlabel 'scheduler (bfq-ll0: bfq, iosched.low_latency=0)' noenhanced"
	echo "set grid ytics"
	echo "set key top left"
	i=0
	for d in $devices; do
		case $d in
		mspro) title="mspro (Memory Stick Pro, 20/10 MB/s, depth 2)" ;;
		sd) title="sd (class-10 card: null, 20 MiB/s, depth 64)" ;;
		*) title=$d ;;
		esac
		echo "set title '$title'"
		echo "plot '$dat' index $i using 3:xtic(2) title 'idle'," \
			"'' index $i using 4 title 'with writer'"
		i=$((i + 1))
	done
	echo "unset multiplot"
} >"$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "wrote $dat and $out/$name.svg (load average $load_end)" >&2
