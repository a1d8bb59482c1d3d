#!/bin/bash
# One IDE drive, a greedy writer beside a light reader: what each
# scheduler lets them wait.  Not a test; it prints what each job got.
#
#   bench/ide-mixed-bench.sh [BUILD_DIR]      (default: build)
#
# For each scheduler in SCHEDS, mqblkd serves ide-disk in real time
# (time_scale=1) and fio (nbd engine, one connection per job) runs for
# RUNTIME seconds: a sequential 64 KiB writer at QD32 and a random 4 KiB
# reader at QD1.  A request that finds the port busy is requeued and
# kicked 3 ms later (ide_requeue_and_plug, seed 009), while the next
# request a client submits after a completion finds the port free; the
# maxima show how long a requeued request can wait for its turn.
# DEVICE replaces "ide-disk size=64M" to run the same load elsewhere
# (null with one tag and irqmode=2 never requeues).
#
# Environment: RUNTIME (default 15), SCHEDS (default "none mq-deadline
# kyber bfq"), DEVICE.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init ide-mixed-bench "${1:-}" -- fio python3
runtime=${RUNTIME:-15}
scheds=${SCHEDS:-none mq-deadline kyber bfq}
read -r -a device <<<"${DEVICE:-ide-disk size=64M}"
mqblkd=$build/mqblkd
[ -x "$mqblkd" ] || {
	echo "$0: $mqblkd not built" >&2
	exit 1
}

sock=$tmp/nbd.sock
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

cat >"$tmp/mixed.fio" <<EOF
[global]
ioengine=nbd
uri=nbd+unix:///?socket=$sock
time_based=1
runtime=$runtime
size=48M

[writer]
rw=write
bs=64k
iodepth=32

[reader]
rw=randread
bs=4k
iodepth=1
EOF

printf '%-12s %-7s %10s %10s %12s %12s\n' scheduler job IOPS MiB/s \
	mean_ms max_ms
for s in $scheds; do
	rm -f "$sock"
	"$mqblkd" -f -U "$sock" "${device[@]}" time_scale=1 "scheduler=$s" \
		2>"$tmp/mqblkd.log" &
	pid=$!
	bench_wait_sock "$sock" || { cat "$tmp/mqblkd.log" >&2; exit 1; }
	fio --output-format=json --output="$tmp/$s.json" "$tmp/mixed.fio" \
		>/dev/null
	kill "$pid"
	wait "$pid" 2>/dev/null || :
	pid=
	python3 - "$tmp/$s.json" "$s" <<'PY'
import json, sys
for job in json.load(open(sys.argv[1]))["jobs"]:
    r = job["write" if job["jobname"] == "writer" else "read"]
    lat = r["clat_ns"]
    print("%-12s %-7s %10.1f %10.1f %12.2f %12.2f" % (
        sys.argv[2], job["jobname"], r["iops"], r["bw"] / 1024,
        lat["mean"] / 1e6, lat["max"] / 1e6))
PY
done
