#!/bin/bash
# mqblkd's nbd device (nbd=URI) forwarding to nbdkit memory on a Unix
# socket: fio's nbd engine, 64 KiB random reads at QD8, first on a remote
# nobody has written (every read is zeroes, in the remote's holes), then
# after the whole remote was written once.  With OTHER set to a second
# mqblkd binary (an older build), both serve in turn within each round,
# and a ratio column says this build's IOPS over OTHER's.  Not a test:
# prints a table.
#
#   bench/nbd-forward-bench.sh [BUILD_DIR]     (default: build)
#
# Environment: RUNTIME (s a run, default 5), ROUNDS (default 3; cells are
# medians), SIZE (the remote, default 256M), OTHER (a mqblkd binary).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init nbd-forward-bench "${1:-}" -- nbdkit fio python3
runtime=${RUNTIME:-5}
rounds=${ROUNDS:-3}
size=${SIZE:-256M}
binaries=("$build/mqblkd")
[ -n "${OTHER:-}" ] && binaries+=("$OTHER")
for b in "${binaries[@]}"; do
	[ -x "$b" ] || {
		echo "$0: $b is not an executable mqblkd" >&2
		exit 1
	}
done

rpid=
mpid=
stop() {
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null && wait "$mpid" 2>/dev/null
	[ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
	mpid=
	rpid=
	rm -f "$tmp/r.sock" "$tmp/s.sock"
}
trap 'stop; rm -rf "$tmp"' EXIT

# run MQBLKD FILLED OUT: a fresh remote (written first when FILLED is 1),
# MQBLKD forwarding to it, one fio run; OUT gets fio's JSON.
run() {
	local bin=$1 filled=$2 out=$3
	nbdkit -f -U "$tmp/r.sock" memory "$size" 2>>"$tmp/remote.log" &
	rpid=$!
	bench_wait_sock "$tmp/r.sock"
	if [ "$filled" = 1 ]; then
		fio --name=fill --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/r.sock" \
			--rw=write --bs=1M --iodepth=4 >/dev/null
	fi
	"$bin" -f -U "$tmp/s.sock" nbd "nbd=nbd+unix:///?socket=$tmp/r.sock" \
		2>>"$tmp/mqblkd.log" &
	mpid=$!
	bench_wait_sock "$tmp/s.sock"
	fio --name=read --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/s.sock" \
		--rw=randread --bs=64k --iodepth=8 --runtime="$runtime" \
		--time_based --output-format=json --output="$out" >/dev/null
	stop
}

for r in $(seq "$rounds"); do
	for filled in 0 1; do
		for i in "${!binaries[@]}"; do
			echo "round $r/$rounds, filled=$filled, ${binaries[$i]}" >&2
			run "${binaries[$i]}" "$filled" "$tmp/$filled-$i-$r.json"
		done
	done
done

python3 - "$tmp" "$rounds" "${#binaries[@]}" <<'PY'
import json, statistics, sys

tmp, rounds, nbin = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def iops(filled, i, r):
    with open(f"{tmp}/{filled}-{i}-{r}.json") as f:
        return json.load(f)["jobs"][0]["read"]["iops"]

head = "| remote | this build IOPS |"
rule = "|---|---:|"
if nbin > 1:
    head += " OTHER IOPS | this / OTHER |"
    rule += "---:|---|"
print(head)
print(rule)
for filled, name in ((0, "unwritten (holes)"), (1, "written")):
    a = [iops(filled, 0, r) for r in range(1, rounds + 1)]
    row = f"| {name} | {statistics.median(a):.0f} |"
    if nbin > 1:
        b = [iops(filled, 1, r) for r in range(1, rounds + 1)]
        ratios = [x / y for x, y in zip(a, b)]
        row += (f" {statistics.median(b):.0f} | {statistics.median(ratios):.2f}"
                f" ({min(ratios):.2f}-{max(ratios):.2f}) |")
    print(row)
PY
