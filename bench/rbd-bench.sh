#!/bin/bash
# mqblkd's rbd device side by side with the other ways to serve an RBD
# image over NBD, on one image of one cluster: fio's nbd engine on a Unix
# socket against
#   mqblkd     mqblkd rbd image=bench (cache=off)
#   qemu-nbd   qemu-nbd's rbd: driver (qemu-block-extra), --cache=none
#              (librbd's cache off, as mqblkd's cache=off)
#   rbd-nbd    Ceph's rbd-nbd, which maps the image on the kernel's nbd
#              driver: only where /dev/nbd0 exists (the nbd module); fio
#              then uses libaio with O_DIRECT on /dev/nbdX, not its nbd
#              engine
# 4k random read and write at QD32, 1 MiB sequential read and write at
# QD8, one connection.  The cluster is tests/integration/ceph-lib.sh's
# one-node cluster (a monitor and one memstore OSD on 127.0.0.1), so the
# figures measure the whole path on one machine, OSD included.
# Not a test: prints a Markdown table (and keeps fio's JSON with KEEP=DIR).
#
#   bench/rbd-bench.sh [BUILD_DIR]     (default: build)
#
# Environment: RUNTIME (s per cell, default 10), SIZE (image, default
# 256M), ROUNDS (default 3; cells show the median, the ratio column
# mqblkd over the better of the others, with the round-by-round range),
# SERVERS and WORKLOADS (space-separated subsets).
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
runtime=${RUNTIME:-10}
size=${SIZE:-256M}
rounds=${ROUNDS:-3}
servers=(${SERVERS:-mqblkd qemu-nbd rbd-nbd})
for tool in fio python3 rbd ceph-mon ceph-osd; do
	command -v $tool >/dev/null || {
		echo "$0: $tool is needed (tests/setup-deps.sh installs it)" >&2
		exit 1
	}
done
[ -x "$build/mqblkd" ] || {
	echo "$0: $build/mqblkd not built" >&2
	exit 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rbd-bench.XXXXXX")
pid=
nbddev=
die() {
	echo "$0: $*" >&2
	exit 1
}
# shellcheck source=../tests/integration/ceph-lib.sh
. "$here/../tests/integration/ceph-lib.sh"
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ -n "$nbddev" ] && rbd-nbd unmap "$nbddev" 2>/dev/null
	ceph_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
sock=$tmp/sock

workloads=(
	"4k-randread-qd32:--rw=randread --bs=4k --iodepth=32"
	"4k-randwrite-qd32:--rw=randwrite --bs=4k --iodepth=32"
	"1m-read-qd8:--rw=read --bs=1M --iodepth=8"
	"1m-write-qd8:--rw=write --bs=1M --iodepth=8"
)
if [ -n "${WORKLOADS:-}" ]; then
	sel=()
	for w in "${workloads[@]}"; do
		for n in $WORKLOADS; do
			[ "${w%%:*}" = "$n" ] && sel+=("$w")
		done
	done
	workloads=("${sel[@]}")
fi

avail=()
for s in "${servers[@]}"; do
	case $s in
	mqblkd) avail+=("$s") ;;
	qemu-nbd)
		if ! command -v qemu-nbd >/dev/null; then
			echo "skipping qemu-nbd: not installed (qemu-utils)" >&2
		elif ! ls /usr/lib/*/qemu/block-rbd.so >/dev/null 2>&1; then
			echo "skipping qemu-nbd: no rbd driver (qemu-block-extra)" >&2
		else
			avail+=("$s")
		fi
		;;
	rbd-nbd)
		if ! command -v rbd-nbd >/dev/null; then
			echo "skipping rbd-nbd: not installed (package rbd-nbd)" >&2
		elif [ ! -e /dev/nbd0 ]; then
			echo "skipping rbd-nbd: this kernel has no nbd driver (/dev/nbd0)" >&2
		else
			avail+=("$s")
		fi
		;;
	esac
done

wait_sock() {
	for _ in $(seq 200); do
		python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" \
			"$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "$0: nothing listens on $1" >&2
	return 1
}

# start SERVER: sets pid and the fio target (target=(...) options).
start() {
	rm -f "$sock"
	case $1 in
	mqblkd)
		"$build/mqblkd" -f -U "$sock" rbd image=bench \
			"conf=$CEPH_CONF" 2>"$tmp/server.log" &
		pid=$!
		;;
	qemu-nbd)
		qemu-nbd -f raw -k "$sock" --persistent --cache=none \
			"rbd:rbd/bench:conf=$CEPH_CONF" 2>"$tmp/server.log" &
		pid=$!
		;;
	rbd-nbd)
		nbddev=$(rbd-nbd --conf "$CEPH_CONF" map rbd/bench)
		target=(--ioengine=libaio --direct=1 "--filename=$nbddev")
		return 0
		;;
	esac
	wait_sock "$sock" || { cat "$tmp/server.log" >&2; exit 1; }
	target=(--ioengine=nbd "--uri=nbd+unix:///?socket=$sock")
}

stop() {
	if [ -n "$nbddev" ]; then
		rbd-nbd unmap "$nbddev"
		nbddev=
	fi
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || :
		wait "$pid" 2>/dev/null || :
		pid=
	fi
}

# measure OPTS OUT
measure() {
	# shellcheck disable=SC2086 # word splitting of the options wanted
	fio --name=bench "${target[@]}" $1 --size="$size" \
		--runtime="$runtime" --time_based --ramp_time=1 \
		--output-format=json --output="$2" >/dev/null
}

# The cluster: memstore keeps every object in RAM (about twice the data).
CEPH_MEMSTORE_BYTES=$((4 << 30)) ceph_start
rbd --conf "$CEPH_CONF" create --size "$size" rbd/bench
# Written once, so that reads find data (a hole reads without the OSD).
start mqblkd
fio --name=fill "${target[@]}" --rw=write --bs=1M --iodepth=8 \
	--size="$size" --output=/dev/null
stop

for w in "${workloads[@]}"; do
	for r in $(seq "$rounds"); do
		for s in "${avail[@]}"; do
			echo "${w%%:*} on $s ($r/$rounds)" >&2
			start "$s"
			measure "${w#*:}" "$tmp/${w%%:*}.$s.json.$r"
			stop
			echo "${w%%:*} $s $r $(cut -d' ' -f1 /proc/loadavg)" \
				>>"$tmp/load"
		done
	done
done

[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$tmp"/*.json.* "$tmp/load" "$KEEP/"

python3 - "$tmp" "$rounds" "${avail[@]}" -- "${workloads[@]%%:*}" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
rest = sys.argv[3:]
sep = rest.index("--")
servers, workloads = rest[:sep], rest[sep + 1:]

def result(w, s, r):
    with open(f"{tmp}/{w}.{s}.json.{r}") as f:
        j = json.load(f)["jobs"][0]
    d = j["write"] if "write" in w else j["read"]
    return d["iops"], d["bw_bytes"] / 1e6

head = "| workload |"
for s in servers:
    head += f" {s} IOPS | {s} MB/s |"
others = [s for s in servers if s != "mqblkd"]
if "mqblkd" in servers and others:
    head += " mqblkd / best other |"
print(head)
print("|---|" + "---:|" * (head.count("|") - 2))
for w in workloads:
    row = f"| {w} |"
    iops = {}
    for s in servers:
        vals = [result(w, s, r) for r in range(1, rounds + 1)]
        iops[s] = [v[0] for v in vals]
        row += f" {statistics.median(iops[s]):.0f} | {statistics.median(v[1] for v in vals):.1f} |"
    if "mqblkd" in servers and others:
        best = max(statistics.median(iops[s]) for s in others)
        ratios = [iops["mqblkd"][r] / max(iops[s][r] for s in others)
                  for r in range(rounds)]
        row += f" {statistics.median(iops['mqblkd']) / best:.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |"
    print(row)
with open(f"{tmp}/load") as f:
    loads = [float(l.split()[3]) for l in f]
print(f"\n1-minute load average after each cell: {min(loads):.1f} to {max(loads):.1f}")
PY
