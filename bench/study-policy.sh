#!/bin/bash
# The study, question 4: the 2018 default scheduler policy against what
# the numbers say now (docs/design.md "Default scheduler policy").
#
# For each device model, each scheduler it takes, and ROUNDS rounds, one
# nbdkit server (real timing, time_scale=1) and one fio run of three
# workloads one after the other (fio's nbd engine, one connection a job):
#   qd1    4 KiB random reads, one at a time: mean and p99 latency
#   qd32   4 KiB random reads, 32 in flight: IOPS
#   mixed  a sync 4 KiB random reader at depth 1 beside a greedy 64 KiB
#          sequential writer at depth 32 on another connection (a reader
#          on the read-only gdrom): the reader's p99 and the total MB/s
# Also records each model's default scheduler and its reason (no
# scheduler= key) from the export's description.
#
# Prints one table per model and writes $OUT/policy.dat and
# $OUT/policy.svg (the mixed workload's reader p99, normalised to none).
#   RUNTIME=8 ROUNDS=1 MODELS="mspro sata-ssd" SCHEDULERS="none bfq" \
#   OUT=docs/study bench/study-policy.sh [BUILD_DIR]
# PLOT_ONLY=1 redraws the plot from an existing $OUT/policy.dat.
# Not a test: real timing, so the figures move with the machine's load.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init study-policy "${1:-}" -- nbdkit nbdinfo fio gnuplot truncate
py=/usr/bin/python3
runtime=${RUNTIME:-8}
rounds=${ROUNDS:-1}
models=${MODELS:-null ide-disk scsi sata-ssd sunvdc sx8 mspro mtdblock gdrom file smr}
scheds=${SCHEDULERS:-none mq-deadline bfq kyber}
repo=$(cd "$bench_dir/.." && pwd)
OUT=${OUT:-docs/study}
case $OUT in /*) ;; *) OUT=$repo/$OUT ;; esac
mkdir -p "$OUT"

# The loop-like file lives on a tmpfs where there is one.
shm=$tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && shm=$(mktemp -d /dev/shm/study-policy.XXXXXX)
trap 'rm -rf "$tmp" ${shm:+"$shm"}' EXIT
truncate -s 1G "$shm/file.img"
truncate -s 64M "$tmp/gdrom.img"

# smr: writes must stay sequential within a zone, so the writer starts in
# the first sequential zone and the disk is big enough that it never
# wraps round (235 MB/s for the whole run, with room to spare).
smr_gib=$(((runtime + 3) * 300 / 1024 + 2))

keys() {
	case $1 in
	null) echo device=null submit_queues=2 hw_queue_depth=64 irqmode=2 \
		completion_nsec=100000 size=1G ;;
	ide-disk) echo device=ide-disk size=8G ;;
	scsi) echo device=scsi size=1G ;;
	sata-ssd) echo device=sata-ssd size=1G ;;
	sunvdc) echo device=sunvdc size=1G ;;
	sx8) echo device=sx8 size=1G ports=4 port1.present=0 port2.present=0 \
		port3.present=0 ;;
	mspro) echo device=mspro size=1G ;;
	mtdblock) echo device=mtdblock size=128M ;;
	gdrom) echo device=gdrom image="$tmp/gdrom.img" ;;
	file) echo device=file file="$shm/file.img" ;;
	smr) echo device=smr capacity=${smr_gib}G zone_size=256M \
		zone_write_plugging=1 ;;
	*)
		echo "$0: unknown model $1" >&2
		exit 1
		;;
	esac
}

jobfile() { # MODEL
	local greedy="rw=write" where=""
	[ "$1" = gdrom ] && greedy="rw=read"
	[ "$1" = smr ] && where="offset=256m"
	cat <<FIO
[global]
ioengine=nbd
uri=\${URI}
time_based=1
runtime=${runtime}
ramp_time=1
group_reporting=0
bs=4k
[qd1]
rw=randread
iodepth=1
[qd32]
stonewall
rw=randread
iodepth=32
[greedy]
stonewall
$greedy
$where
bs=64k
iodepth=32
[sync]
rw=randread
iodepth=1
FIO
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

plot() {
	cols=$(awk '/^model /{print NF - 1; exit}' "$OUT/policy.dat")
	# The plot is normalised to none: without none there is nothing to draw.
	if ! awk '/^model /{h=1; next} h && NF {found=1} END {exit !found}' \
		"$OUT/policy.dat"; then
		echo "$0: no none rows to normalise to: no plot" >&2
		return 0
	fi
	gnuplot <<GP
set terminal svg size 800,450 dynamic enhanced font 'sans,11'
set output '$OUT/policy.svg'
set title "Every model: a 4 KiB QD1 random reader's p99 beside a greedy 64 KiB QD32 writer, relative to none\\n(gdrom is read-only: its greedy client reads)" noenhanced
set ylabel 'reader p99 latency / none (log scale)'
set xlabel 'device model'
set logscale y
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right top
set xtics nomirror
plot for [i=2:$((cols + 1))] '$OUT/policy.dat' index 1 using i:xtic(1) title columnhead(i) noenhanced
GP
	echo "wrote $OUT/policy.svg" >&2
}

if [ "${PLOT_ONLY:-0}" = 1 ]; then
	plot
	exit 0
fi

raw=$tmp/raw.txt
: >"$raw"
defaults=$tmp/defaults.txt
: >"$defaults"
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(load)
for m in $models; do
	# The default: no scheduler= key; the description carries the reason.
	# shellcheck disable=SC2046
	nbdkit -U - "$plugin" $(keys "$m") \
		--run 'nbdinfo --list "$uri"' >"$tmp/list.txt" 2>&1 || true
	def=$(grep -o 'scheduler [^ ]* ([^)]*)' "$tmp/list.txt" | head -n1)
	echo "$m ${def:-scheduler ? (not shown)}" >>"$defaults"
	jobfile "$m" >"$tmp/$m.fio"
	for r in $(seq 1 "$rounds"); do
		for s in $scheds; do
			out=$tmp/$m-$s-$r.json
			# -t 40: a worker for each of 32 commands in flight and
			# the reader beside them.
			# shellcheck disable=SC2046
			if ! nbdkit -U - -t 40 "$plugin" $(keys "$m") \
				scheduler="$s" --run "URI=\"\$uri\" fio \
				--output-format=json $tmp/$m.fio >$out" \
				2>"$tmp/err.txt"; then
				echo "$m $s round $r: failed: $(tail -n2 "$tmp/err.txt" | tr '\n' ' ')" >&2
				continue
			fi
			echo "$m $s $r $(load | cut -d' ' -f1) $out" >>"$raw"
			echo "$m $s round $r done (load $(load))" >&2
		done
	done
done
load_end=$(load)

$py - "$raw" "$defaults" "$OUT/policy.dat" "$started" "$load_start" \
	"$load_end" "$runtime" "$rounds" "$(nproc)" "$models" "$scheds" <<'PY'
import json, statistics, sys
(rawf, deff, datf, started, l0, l1, runtime, rounds, ncpu, models,
 scheds) = sys.argv[1:]
models, scheds = models.split(), scheds.split()

def job(jobs, name, d):
    return jobs[name][d]

res = {}  # (model, sched) -> list of per-round metric dicts
for line in open(rawf):
    m, s, r, ld, path = line.split()
    text = open(path).read()
    jobs = {j["jobname"]: j for j in
            json.loads(text[text.index("{"):])["jobs"]}
    q1 = jobs["qd1"]["read"]
    mixed_mb = sum(jobs[n][d]["bw_bytes"] for n in ("greedy", "sync")
                   for d in ("read", "write")) / 1e6
    errs = sum(j.get("error", 0) for j in jobs.values())
    res.setdefault((m, s), []).append({
        "qd1_mean": q1["clat_ns"]["mean"] / 1e6,
        "qd1_p99": q1["clat_ns"]["percentile"]["99.000000"] / 1e6,
        "qd32_iops": jobs["qd32"]["read"]["iops"],
        "mix_p99": jobs["sync"]["read"]["clat_ns"]["percentile"]["99.000000"] / 1e6,
        "mix_mb": mixed_mb,
        "errors": errs, "load": float(ld)})

defaults = dict(l.rstrip("\n").split(" ", 1) for l in open(deff))
metrics = [("qd1_mean", "QD1 mean ms", min), ("qd1_p99", "QD1 p99 ms", min),
           ("qd32_iops", "QD32 IOPS", max), ("mix_p99", "mixed reader p99 ms", min),
           ("mix_mb", "mixed total MB/s", max)]

def med(v):
    return statistics.median(v)

def winner(m, key, best_of):
    """The best median; a tie with every scheduler within 10% of it or
    whose range of rounds overlaps the best one's."""
    have = [s for s in scheds if (m, s) in res]
    if not have:
        return "-"
    vals = {s: [x[key] for x in res[(m, s)]] for s in have}
    b = best_of(have, key=lambda s: med(vals[s]))
    bm = med(vals[b])
    tied = []
    for s in have:
        v = med(vals[s])
        close = abs(v - bm) <= 0.10 * abs(bm) if bm else v == bm
        lo, hi = min(vals[s]), max(vals[s])
        blo, bhi = min(vals[b]), max(vals[b])
        overlap = len(vals[s]) > 1 and lo <= bhi and blo <= hi
        if close or overlap:
            tied.append(s)
    if len(tied) == 1:
        return b
    if len(tied) == len(have):
        return "tie (all)"
    return "tie (" + ", ".join(sorted(tied, key=scheds.index)) + ")"

def fmt(v):
    return "%.3g" % v if v < 100 else "%.0f" % v

with open(datf, "w") as f:
    f.write("# The study, question 4: default scheduler policy, per model\n")
    f.write("# when: %s; nproc %s; load average (1 5 15 min) at start %s, at end %s\n"
            % (started, ncpu, l0, l1))
    f.write("# command: RUNTIME=%s ROUNDS=%s MODELS=\"%s\" SCHEDULERS=\"%s\" bench/study-policy.sh\n"
            % (runtime, rounds, " ".join(models), " ".join(scheds)))
    f.write("# medians over rounds; times in ms; 'load' is the 1-minute load average\n")
    f.write("# block 0: model scheduler qd1_mean_ms qd1_p99_ms qd32_iops mixed_reader_p99_ms mixed_total_MBps fio_errors load_min load_max\n")
    for m in models:
        for s in scheds:
            v = res.get((m, s))
            if not v:
                continue
            f.write("%-9s %-12s %s %d %.1f %.1f\n" % (m, s, " ".join(
                "%.4f" % med([x[k] for x in v]) for k, _, _ in metrics),
                sum(x["errors"] for x in v), min(x["load"] for x in v),
                max(x["load"] for x in v)))
    f.write("\n\n# block 1 (the plot): model, then the mixed reader's p99 over none's, per scheduler: %s\n"
            % " ".join(scheds))
    f.write("model %s\n" % " ".join(scheds))
    for m in models:
        base = res.get((m, "none"))
        if not base:
            continue
        b = med([x["mix_p99"] for x in base])
        row = []
        for s in scheds:
            v = res.get((m, s))
            row.append("%.4f" % (med([x["mix_p99"] for x in v]) / b)
                       if v and b else "NaN")
        f.write("%s %s\n" % (m, " ".join(row)))

for m in models:
    print("\n### %s: default %s\n" % (m, defaults.get(m, "?")))
    print("| scheduler | " + " | ".join(h for _, h, _ in metrics) + " | load |")
    print("|---|" + "---:|" * (len(metrics) + 1))
    for s in scheds:
        v = res.get((m, s))
        if not v:
            continue
        cells = []
        for k, _, _ in metrics:
            xs = [x[k] for x in v]
            c = fmt(med(xs))
            if len(xs) > 1:
                c += " (%s-%s)" % (fmt(min(xs)), fmt(max(xs)))
            cells.append(c)
        if any(x["errors"] for x in v):
            cells[-1] += " (errors)"
        print("| %s | %s | %.1f |" % (s, " | ".join(cells),
                                      max(x["load"] for x in v)))
    print("| winner | " + " | ".join(
        winner(m, k, b) for k, _, b in metrics) + " | |")
PY

echo "wrote $OUT/policy.dat" >&2
plot
