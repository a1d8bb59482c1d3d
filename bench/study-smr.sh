#!/bin/bash
# The study, question 3 (docs/study.md): write ordering on the smr
# host-managed disk, mq-deadline's zone write locking
# (zone_write_plugging=0, the 2018 way) against the core's zone write
# plugging (zone_write_plugging=1, Linux 6.10) under none, mq-deadline,
# bfq and kyber.  Real timing (time_scale=1).  Not a test: prints a table,
# writes $OUT/$NAME.dat and $OUT/$NAME.svg (NAME=smr by default).
#
#   bench/study-smr.sh [BUILD_DIR]      (default: build)
#
# Per configuration and round, a fresh mqblkd serves the disk on a Unix
# socket, every zone is reset (mqblkctl set smr0/zone/reset all), and one
# fio run (nbd engine, one connection per job) drives, for RUNTIME s:
#  - WRITERS sequential writers of WBS blocks at queue depth WDEPTH, each
#    from the write pointer of a zone of its own, on through the next
#    zones of its own range (zones*W/WRITERS .. ), never reaching its end;
#  - beside them one random 4 KiB reader at queue depth 1 over the
#    conventional zone 0.
# Then it checks: no failed request in fio's output (every job runs with
# continue_on_error=all and reports total_err), no refused write in the
# server's log, and each zone's write pointer (mqblkctl get smr0/zones)
# exactly where the bytes fio reports written put it.  Exits 1 if any
# check fails (after writing the data and the plot).
#
# Environment: RUNTIME (s per run, default 10), ROUNDS (runs of each
# configuration, the median figure kept, errors summed; default 1),
# CONFIGS (space-separated SCHEDULER:ZONE_WRITE_PLUGGING, default
# "mq-deadline:0 none:1 mq-deadline:1 bfq:1 kyber:1 none:0"; the last is
# the control with nothing keeping the order), WRITERS (4),
# WDEPTH (8), WBS (1M), CAPACITY (8G), ZONE_SIZE (256M), KEYS (more
# smr keys, space-separated, e.g. "queue_depth=4"; default none),
# KEEP (a directory: keep each run's fio job, fio JSON, server log and
# zone report there, and fio's per-second bandwidth logs, TAG_bw.N.log,
# jobs numbered from 1 as in the job file, the reader last), OUT (default docs/study, relative to the
# repository's root), NAME
# (the output files' name, default smr: $OUT/smr.dat and $OUT/smr.svg).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init study-smr "${1:-}" -- fio gnuplot python3
root=$(cd "$bench_dir/.." && pwd)
mqblkd=$build/mqblkd
mqblkctl=$build/mqblkctl
for exe in "$mqblkd" "$mqblkctl"; do
	[ -x "$exe" ] || {
		echo "$0: $exe not built" >&2
		exit 1
	}
done
runtime=${RUNTIME:-10}
rounds=${ROUNDS:-1}
configs=${CONFIGS:-"mq-deadline:0 none:1 mq-deadline:1 bfq:1 kyber:1 none:0"}
writers=${WRITERS:-4}
wdepth=${WDEPTH:-8}
wbs=${WBS:-1M}
capacity=${CAPACITY:-8G}
zone_size=${ZONE_SIZE:-256M}
keys=${KEYS:-}
name=${NAME:-smr}
out=${OUT:-docs/study}
case $out in /*) ;; *) out=$root/$out ;; esac
mkdir -p "$out"

pid=
stop_server() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pid=
	fi
}
trap 'stop_server; rm -rf "$tmp"' EXIT

bytes() { # 8G, 256M, 1M -> bytes
	python3 -c '
import sys
s = sys.argv[1]
m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
print(int(s[:-1]) * m[s[-1].upper()] if s[-1].upper() in m else int(s))' "$1"
}
cap_b=$(bytes "$capacity")
zone_b=$(bytes "$zone_size")
nzones=$((cap_b / zone_b))
per_writer=$(((nzones - 1) / writers)) # zone 0 is conventional
[ "$per_writer" -ge 1 ] || {
	echo "$0: $nzones zones are too few for $writers writers" >&2
	exit 1
}

wait_ctl() {
	local i
	for i in $(seq 200); do
		"$mqblkctl" -s "$1" get smr0/queue/scheduler >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "$0: mqblkd did not come up:" >&2
	cat "$2" >&2
	return 1
}

jobfile() { # the fio job file for socket $1
	local i
	cat <<EOF
[global]
ioengine=nbd
uri=nbd+unix:///?socket=$1
continue_on_error=all
runtime=$runtime
group_reporting=0

EOF
	for i in $(seq 0 $((writers - 1))); do
		cat <<EOF
[w$i]
rw=write
bs=$wbs
iodepth=$wdepth
offset=$(((1 + i * per_writer) * zone_b))
size=$((per_writer * zone_b))

EOF
	done
	cat <<EOF
[reader]
rw=randread
bs=4k
iodepth=1
offset=0
size=$zone_b
time_based=1
EOF
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
for cfg in $configs; do
	sched=${cfg%%:*}
	zwp=${cfg##*:}
	for round in $(seq "$rounds"); do
		tag=$sched-zwp$zwp.$round
		echo "$sched, zone_write_plugging=$zwp, round $round (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
		sock=$tmp/$tag.sock
		ctl=$tmp/$tag.ctl
		log=$tmp/$tag.log
		# shellcheck disable=SC2086 # $keys: zero or more KEY=VALUE words
		"$mqblkd" -f -U "$sock" --control "$ctl" smr \
			capacity="$capacity" zone_size="$zone_size" time_scale=1 \
			scheduler="$sched" zone_write_plugging="$zwp" $keys 2>"$log" &
		pid=$!
		wait_ctl "$ctl" "$log"
		"$mqblkctl" -s "$ctl" get smr0/queue/scheduler >"$tmp/$tag.sched"
		"$mqblkctl" -s "$ctl" set smr0/zone/reset all
		jobfile "$sock" >"$tmp/$tag.fio"
		bwlog=()
		[ -n "${KEEP:-}" ] &&
			bwlog=(--write_bw_log="$tmp/$tag" --log_avg_msec=1000)
		# fio exits non-zero when a request failed: counted below.
		fio --output-format=json --output="$tmp/$tag.json" "${bwlog[@]}" \
			"$tmp/$tag.fio" >&2 || true
		"$mqblkctl" -s "$ctl" get smr0/zones >"$tmp/$tag.zones"
		stop_server
		cp "$tmp/$tag.log" "$tmp/$tag.log.done"
		if [ -n "${KEEP:-}" ]; then
			mkdir -p "$KEEP"
			cp "$tmp/$tag".* "$tmp/$tag"_bw.*.log "$KEEP"/
		fi
	done
done

uname_r=$(uname -sr)
status=0
python3 - "$tmp" "$rounds" "$zone_b" "$per_writer" "$writers" "$out/$name.dat" \
	"$load" "$uname_r" "$runtime" "$wbs" "$wdepth" "$capacity" "$zone_size" \
	"$configs" "$keys" "$name" <<'PY' || status=$?
import json, os, re, statistics, sys, time
(tmp, rounds, zone_b, per_writer, writers, dat, load, uname, runtime, wbs,
 wdepth, capacity, zone_size, configs, keys, name) = sys.argv[1:]
rounds, zone_b, per_writer, writers = (int(rounds), int(zone_b),
                                       int(per_writer), int(writers))
rows = []
for cfg in configs.split():
    sched, zwp = cfg.split(":")
    mb, mean, p99, iops = [], [], [], []
    werr = rerr = refused = badwp = 0
    for r in range(1, rounds + 1):
        tag = "%s-zwp%s.%d" % (sched, zwp, r)
        chosen = re.search(r"\[(\S+)\]", open("%s/%s.sched" % (tmp, tag)).read())
        if not chosen or chosen.group(1) != sched:
            sys.exit("%s: the server runs %s" % (tag, chosen and chosen.group(1)))
        try:
            jobs = {j["jobname"]: j for j in
                    json.load(open("%s/%s.json" % (tmp, tag)))["jobs"]}
        except (OSError, ValueError) as e:
            sys.exit("%s: no fio output: %s" % (tag, e))
        # zone report: wptr relative to the zone start, in sectors
        wps = [int(m.group(1), 16) * 512 for m in re.finditer(
            r"wptr 0x([0-9a-f]+)", open("%s/%s.zones" % (tmp, tag)).read())]
        written = 0
        for i in range(writers):
            j = jobs["w%d" % i]
            werr += j["total_err"]
            b = j["write"]["io_bytes"]
            written += b
            for k in range(per_writer):
                want = min(max(b - k * zone_b, 0), zone_b)
                got = wps[1 + i * per_writer + k]
                if got != want:
                    badwp += 1
                    print("%s: zone %d: wp at %d bytes, fio wrote %d" %
                          (tag, 1 + i * per_writer + k, got, want),
                          file=sys.stderr)
        # zones no writer owns must stay empty
        badwp += sum(1 for z in range(1 + writers * per_writer, len(wps))
                     if wps[z])
        secs = max(jobs["w%d" % i]["job_runtime"]
                   for i in range(writers)) / 1e3
        mb.append(written / secs / 2**20)
        rd = jobs["reader"]
        rerr += rd["total_err"]
        mean.append(rd["read"]["clat_ns"]["mean"] / 1e6)
        p99.append(rd["read"]["clat_ns"]["percentile"]["99.000000"] / 1e6)
        iops.append(rd["read"]["iops"])
        refused += sum(1 for line in open("%s/%s.log.done" % (tmp, tag))
                       if "refused" in line)
    med = statistics.median
    rows.append(("%s,zwp=%s" % (sched, zwp), sched, zwp, med(mb), med(mean),
                 med(p99), med(iops), werr, rerr, refused, badwp,
                 min(mb), max(mb), min(p99), max(p99)))

hdr = ("config", "sched", "zwp", "write_MiB/s", "read_mean_ms",
       "read_p99_ms", "read_IOPS", "write_err", "read_err",
       "log_refused", "bad_wp", "write_min", "write_max", "p99_min",
       "p99_max")
with open(dat, "w") as f:
    f.write("# The study, question 3: smr write ordering (bench/study-smr.sh)\n")
    f.write("# %s, %s, nproc %d, load average at the start %s\n" %
            (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), uname,
             os.cpu_count(), load))
    f.write("# RUNTIME=%s ROUNDS=%d WRITERS=%d WDEPTH=%s WBS=%s CAPACITY=%s "
            "ZONE_SIZE=%s KEYS=\"%s\" NAME=%s CONFIGS=\"%s\" "
            "bench/study-smr.sh\n" %
            (runtime, rounds, writers, wdepth, wbs, capacity, zone_size,
             keys, name, configs))
    f.write("# medians of the rounds, the lowest and highest round at the "
            "end; error counts summed over the rounds\n")
    f.write("# " + " ".join(hdr) + "\n")
    for row in rows:
        f.write("%s %s %s %.1f %.2f %.2f %.1f %d %d %d %d %.1f %.1f %.2f "
                "%.2f\n" % row)

print("| configuration | seq. write MiB/s | read mean ms | read p99 ms | "
      "read IOPS | failed writes | failed reads | refused (log) | wrong wp |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for row in rows:
    print("| %s, zone_write_plugging=%s | %.1f | %.2f | %.2f | %.1f | %d | %d "
          "| %d | %d |" % row[1:11])
print("\n%d s runs, median of %d round(s); load average at the start: %s" %
      (int(runtime), rounds, load))
if rounds > 1:
    print("range over the rounds: " + "; ".join(
        "%s %.1f-%.1f MiB/s, p99 %.2f-%.2f ms" % ((r[0],) + r[11:])
        for r in rows))
sys.exit(3 if any(r[7] or r[8] or r[9] or r[10] for r in rows) else 0)
PY
case $status in
0) ;;
3) status=1 ;; # a check failed: the data and the plot still show it
*) exit "$status" ;;
esac

cd "$out"
gnuplot -e "name='$name'; what='$writers sequential zone writers of $wbs at QD$wdepth beside a QD1 4 KiB random reader'" - <<'GP'
set terminal svg size 800,450 dynamic enhanced font 'sans,11'
set output name.'.svg'
set multiplot layout 1,2 title "smr (host-managed, 235 MiB/s): ".what."\nmedian of the rounds; error bars: the lowest and highest round" noenhanced
set style fill solid 0.6 border -1
set boxwidth 0.6
set grid ytics
set xtics noenhanced scale 0
stats name.'.dat' using 4 nooutput
set xrange [-0.6:STATS_records - 0.4]
set bmargin 4
unset key
lbl(c) = sprintf("%s\nzwp=%s", strcol(2), strcol(3))
set title "sequential write throughput"
set ylabel "MiB/s (all writers together)"
set yrange [0:*]
plot name.'.dat' using 0:4:xtic(lbl(0)) with boxes lc rgb '#4477aa', \
     '' using 0:4:12:13 with yerrorbars lc rgb 'black' pt 0
set title "random reader's latency (log scale)"
set ylabel "ms"
set logscale y
set yrange [1:*]
set key top left
plot name.'.dat' using ($0-0.15):6:(0.3):xtic(lbl(0)) with boxes lc rgb '#cc6677' title 'p99', \
     '' using ($0-0.15):6:14:15 with yerrorbars lc rgb 'black' pt 0 notitle, \
     '' using ($0+0.15):5:(0.3) with boxes lc rgb '#228833' title 'mean'
unset multiplot
GP
echo "wrote $out/$name.dat and $out/$name.svg" >&2
exit $status
