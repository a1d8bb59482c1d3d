#!/bin/bash
# Two busy drives on one IDE channel: does either starve?  Not a test; it
# prints what each drive got.
#
#   bench/ide-channel-bench.sh [BUILD_DIR]      (default: build)
#
# mqblkd serves `ide slave=disk` in real time (time_scale=1): hda and hdb,
# 7200 rpm disks sharing the channel.  Two fio jobs (nbd engine) run at
# once for RUNTIME seconds, random 4 KiB reads at queue depth QD on each
# drive.  A request that finds the port busy is requeued and its queue
# plugged for 3 ms (ide_requeue_and_plug, seed 009); the figures show
# what that polling gives each drive: reads/s, mean and maximum
# completion latency, and the drive's port_busy count.
#
# Environment: RUNTIME (default 15), QD (default 4), QD_B (hdb's queue
# depth, default QD: make it differ to see the lighter drive's share).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init ide-channel-bench "${1:-}" -- fio python3
runtime=${RUNTIME:-15}
qd=${QD:-4}
qd_b=${QD_B:-$qd}
mqblkd=$build/mqblkd
ctl=$build/mqblkctl
[ -x "$mqblkd" ] || {
	echo "$0: $mqblkd not built" >&2
	exit 1
}

sock=$tmp/nbd.sock
csock=$tmp/ctl.sock
"$mqblkd" -f -U "$sock" --control "$csock" ide slave=disk \
	hda.size=8G hdb.size=8G time_scale=1 2>"$tmp/mqblkd.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
bench_wait_sock "$sock" "$csock" || { cat "$tmp/mqblkd.log" >&2; exit 1; }

job() {
	fio --name="$1" --ioengine=nbd --uri="nbd+unix:///$1?socket=$sock" \
		--rw=randread --bs=4k --iodepth="$2" --size=8G --norandommap \
		--randrepeat=0 --runtime="$runtime" --time_based \
		--output-format=json --output="$tmp/$1.json" &
}
echo "running hda QD$qd and hdb QD$qd_b at once, ${runtime}s" >&2
job hda "$qd"
job hdb "$qd_b"
wait %2 %3 2>/dev/null || wait

printf '%-5s %4s %10s %12s %12s %10s\n' drive qd reads/s mean_ms max_ms \
	port_busy
for d in hda hdb; do
	q=$qd
	[ $d = hdb ] && q=$qd_b
	busy=$("$ctl" -s "$csock" get "$d/device/port_busy" 2>/dev/null ||
		echo "?")
	python3 - "$tmp/$d.json" "$d" "$q" "$busy" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
lat = r["clat_ns"]
print("%-5s %4s %10.1f %12.2f %12.2f %10s" % (
    sys.argv[2], sys.argv[3], r["iops"], lat["mean"] / 1e6,
    lat["max"] / 1e6, sys.argv[4]))
PY
done
