#!/bin/bash
# The sata-ssd timing model against its nominal figures, in real time
# (time_scale=1): fio's nbd engine against mqblkd on a Unix socket.  Not a
# test; it prints a table and exits non-zero if a checked figure is more
# than 10% off.
#
#   bench/scsi-bench.sh [BUILD_DIR]      (default: build)
#
# Nominal (docs/devices.md): a 4 KiB random read alone takes 100 us (10k
# IOPS at QD1), a write 120 us; at QD32 the controller and link cap random
# 4 KiB reads (and writes) at 90k IOPS.
#
#  - QD32 4 KiB random reads: fio's IOPS against 90k.  Checked.
#  - QD1 4 KiB random reads: the device's own latency, as the block layer
#    saw it (the read ticks of EXPORT/stat over the reads it counted),
#    against 100 us.  Checked.  fio's IOPS are shown against 1 / (100 us
#    + the NBD round trip), the round trip being fio's latency with time
#    off (time_scale=0) measured in the same round: a client over NBD
#    cannot see a local disk's 10k IOPS at QD1.
#  - QD1 and QD32 random writes, shown.
#  - QD1 and QD32 reads from nbd-loadgen (bench/nbd-loadgen.c), a client
#    that costs less than fio's nbd engine, shown: how far the client,
#    not the device, limits the fio rows.
#  - QD1 and QD32 reads in one process, no front end (mqblk-bench core
#    --device), shown.
#  - the same reads under bfq, the default policy's choice for a single
#    queue (seed 000: Bart Van Assche's case), shown, not checked: that is
#    what the scheduler study measures.  The checked rows use none, so
#    that they measure the model and not the scheduler.
#
# It also prints how late, on average, the host's completion thread
# completed commands against their due times (device/late): on a loaded
# machine that, not the model, is what moves the device latency.
#
# Environment: RUNTIME (s per job, default 5), ROUNDS (default 3; every
# figure is the median of the rounds), LOOPS (mqblkd -t, default 2).
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
runtime=${RUNTIME:-5}
rounds=${ROUNDS:-3}
loops=${LOOPS:-2}
for tool in fio python3; do
	command -v $tool >/dev/null || {
		echo "$0: $tool is needed" >&2
		exit 1
	}
done
for bin in mqblkd mqblkctl mqblk-bench nbd-loadgen; do
	[ -x "$build/$bin" ] || {
		echo "$0: $build/$bin not built" >&2
		exit 1
	}
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/scsi-bench.XXXXXX")
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
sock=$tmp/sock
ctl=$tmp/ctl

# start KEY=VALUE...: mqblkd serving sata-ssd with these keys.
start() {
	rm -f "$sock" "$ctl"
	"$build/mqblkd" -f -U "$sock" --control "$ctl" -t "$loops" \
		sata-ssd size=1G "$@" 2>"$tmp/server.log" &
	pid=$!
	for _ in $(seq 100); do
		[ -S "$sock" ] && [ -S "$ctl" ] && return 0
		sleep 0.1
	done
	cat "$tmp/server.log" >&2
	echo "$0: mqblkd did not start" >&2
	exit 1
}

stop() {
	kill "$pid"
	wait "$pid" || true
	pid=
}

# job NAME RW QD: one fio job, its JSON in NAME.$round.json, and the
# export's stat before and after in NAME.$round.stat.
job() {
	"$build/mqblkctl" -s "$ctl" get sda/stat >"$tmp/$1.$round.stat"
	"$build/mqblkctl" -s "$ctl" get sda/device/late >"$tmp/$1.$round.late0"
	fio --name="$1" --ioengine=nbd --uri="nbd+unix:///?socket=$sock" \
		--rw="$2" --bs=4k --iodepth="$3" --size=1G --time_based \
		--runtime="$runtime" --ramp_time=1 --output-format=json \
		--output="$tmp/$1.$round.json" >/dev/null
	"$build/mqblkctl" -s "$ctl" get sda/stat >>"$tmp/$1.$round.stat"
	"$build/mqblkctl" -s "$ctl" get sda/device/late >"$tmp/$1.$round.late"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs" >&2
for round in $(seq "$rounds"); do
	echo "round $round/$rounds: time off (the NBD round trip)" >&2
	start time_scale=0 scheduler=none
	job rt randread 1
	stop
	echo "round $round/$rounds: sata-ssd, none" >&2
	start scheduler=none
	job r1 randread 1
	job r32 randread 32
	job w1 randwrite 1
	job w32 randwrite 32
	for qd in 1 32; do
		"$build/nbd-loadgen" -U "$sock" -e sda -q $qd -s "$runtime" \
			--pid "$pid" | sed -n 's/.*iops=\([0-9.]*\).*/\1/p' \
			>"$tmp/lg$qd.$round.rate"
	done
	stop
	echo "round $round/$rounds: sata-ssd, bfq" >&2
	start scheduler=bfq
	job b1 randread 1
	job b32 randread 32
	stop
	echo "round $round/$rounds: in process (mqblk-bench)" >&2
	for qd in 1 32; do
		"$build/mqblk-bench" core --device device=sata-ssd,size=1G \
			--sched none --inflight $qd --seconds "$runtime" \
			2>/dev/null | awk '{print $2}' >"$tmp/ip$qd.$round.rate"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs" >&2

python3 - "$tmp" "$rounds" <<'PYEOF'
import json
import statistics
import sys

tmp, rounds = sys.argv[1], int(sys.argv[2])


def fio(name, rw, what):
    vals = []
    for r in range(1, rounds + 1):
        with open("%s/%s.%d.json" % (tmp, name, r)) as f:
            j = json.load(f)["jobs"][0][rw]
        vals.append(j["iops"] if what == "iops" else j["clat_ns"]["mean"] / 1e3)
    return statistics.median(vals)


def dev_lat_us(name, write=False):
    """The block layer's latency: ticks (ms) over I/Os, between stats."""
    vals = []
    for r in range(1, rounds + 1):
        with open("%s/%s.%d.stat" % (tmp, name, r)) as f:
            a, b = [list(map(int, l.split())) for l in f if l.strip()]
        ios, ticks = (4, 7) if write else (0, 3)
        n = b[ios] - a[ios]
        vals.append((b[ticks] - a[ticks]) * 1e3 / n if n else 0)
    return statistics.median(vals)


def late_us(name):
    """How late the completion thread ran, on average, during the job."""
    vals = []
    for r in range(1, rounds + 1):
        tot = []
        for suffix in ("late0", "late"):
            with open("%s/%s.%d.%s" % (tmp, name, r, suffix)) as f:
                us, _, _, n = f.read().split()
            tot.append((float(us) * int(n), int(n)))
        n = tot[1][1] - tot[0][1]
        vals.append((tot[1][0] - tot[0][0]) / n if n > 0 else 0)
    return statistics.median(vals)


def rate(prefix, qd):
    vals = []
    for r in range(1, rounds + 1):
        with open("%s/%s%d.%d.rate" % (tmp, prefix, qd, r)) as f:
            vals.append(float(f.read().strip() or 0))
    return statistics.median(vals)


def in_process(qd):
    return rate("ip", qd)


rt = fio("rt", "read", "lat")
rows = [
    # case, measured, unit, nominal, checked
    ("QD32 4k random read, none: IOPS", fio("r32", "read", "iops"), "IOPS",
     90000, True),
    ("QD1 4k random read, none: device latency", dev_lat_us("r1"), "us",
     100, True),
    ("QD1 4k random read, none: device latency less the thread's lateness",
     dev_lat_us("r1") - late_us("r1"), "us", 100, False),
    ("QD1 4k random read, none: IOPS (nominal: 1/(100 us + %.0f us round trip))"
     % rt, fio("r1", "read", "iops"), "IOPS", 1e6 / (100 + rt), False),
    ("QD1 4k random write, none: device latency", dev_lat_us("w1", True),
     "us", 120, False),
    ("QD32 4k random write, none: IOPS", fio("w32", "write", "iops"), "IOPS",
     90000, False),
    ("QD32 4k random read, none, nbd-loadgen client: IOPS", rate("lg", 32),
     "IOPS", 90000, False),
    ("QD1 4k random read, none, nbd-loadgen client: IOPS", rate("lg", 1),
     "IOPS", 1e6 / (100 + rt), False),
    ("QD1 4k random read, in process (mqblk-bench): IOPS", in_process(1),
     "IOPS", 10000, False),
    ("QD32 4k random read, in process (mqblk-bench): IOPS", in_process(32),
     "IOPS", 90000, False),
    ("QD1 4k random read, bfq: IOPS", fio("b1", "read", "iops"), "IOPS",
     1e6 / (100 + rt), False),
    ("QD32 4k random read, bfq: IOPS", fio("b32", "read", "iops"), "IOPS",
     90000, False),
]
print("NBD round trip with time off (QD1 read): %.1f us" % rt)
print("completion thread late by (mean): QD1 read %.1f us, QD32 read %.1f us"
      % (late_us("r1"), late_us("r32")))
print("| case | measured | nominal | off | checked |")
print("|---|---:|---:|---:|---|")
bad = False
for name, got, unit, nominal, checked in rows:
    off = (got - nominal) / nominal * 100
    if checked:
        bad |= abs(off) > 10
    print("| %s | %.0f %s | %.0f %s | %+.1f%% | %s |"
          % (name, got, unit, nominal, unit, off, "yes" if checked else "no"))
sys.exit(1 if bad else 0)
PYEOF
