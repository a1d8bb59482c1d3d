#!/bin/bash
# mqblkd side by side with other NBD servers: fio's nbd engine on a Unix
# socket against
#   mqblkd      mqblkd ram
#   mqblkd-nopoll  the same with --poll-us=0 (no busy polling)
#   plugin      nbdkit with the mqblk plugin on ram
#   memory      nbdkit memory
#   nbd-server  nbd-server on a file in /dev/shm
#   qemu-nbd    qemu-nbd on the same file
# 4k random read and write at QD1 and QD32, 1 MiB sequential read and
# write at QD8, each on 1 connection and on 4 (fio jobs, one connection
# each); then 1 MiB reads over TLS (x509), mqblkd against nbdkit.
# Not a test: prints a Markdown table (and keeps fio's JSON with KEEP=DIR).
#
#   bench/mqblkd-bench.sh [BUILD_DIR]     (default: build)
#
# Build with -DCMAKE_BUILD_TYPE=Release for numbers worth quoting.
# Environment: RUNTIME (s per cell, default 5), SIZE (default 512M),
# THREADS (nbdkit -t, default 16), LOOPS (mqblkd -t, default: CPUs),
# ROUNDS (runs per cell, default 1; cells show the median, and the ratio
# column the range of round-by-round ratios in brackets),
# SERVERS and WORKLOADS (space-separated subsets), TLS=0 to skip TLS.
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
runtime=${RUNTIME:-5}
size=${SIZE:-512M}
threads=${THREADS:-16}
loops=${LOOPS:-$(nproc)}
rounds=${ROUNDS:-1}
servers=(${SERVERS:-mqblkd mqblkd-nopoll plugin memory nbd-server qemu-nbd})
for tool in fio nbdkit python3 openssl; do
	command -v $tool >/dev/null || {
		echo "$0: $tool is needed" >&2
		exit 1
	}
done
[ -x "$build/mqblkd" ] || {
	echo "$0: $build/mqblkd not built" >&2
	exit 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mqblkd-bench.XXXXXX")
shm=$(mktemp /dev/shm/mqblkd-bench.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp" "$shm"
}
trap cleanup EXIT
sock=$tmp/sock

# name:conns:fio options
workloads=(
	"4k-randread-qd1:--rw=randread --bs=4k --iodepth=1"
	"4k-randread-qd32:--rw=randread --bs=4k --iodepth=32"
	"4k-randwrite-qd1:--rw=randwrite --bs=4k --iodepth=1"
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

wait_sock() {
	for _ in $(seq 200); do
		python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" \
			"$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "$0: nothing listens on $1" >&2
	return 1
}

# start SERVER [tls]: sets pid and uri.
start() {
	rm -f "$sock"
	truncate -s 0 "$shm"
	truncate -s "$size" "$shm"
	local extra=()
	case $1 in
	mqblkd | mqblkd-nopoll)
		[ "${2:-}" = tls ] && extra=(--tls=require "--tls-certificates=$tmp/pki")
		[ "$1" = mqblkd-nopoll ] && extra+=(--poll-us=0)
		"$build/mqblkd" -f -U "$sock" -t "$loops" "${extra[@]}" \
			ram "size=$size" 2>"$tmp/server.log" &
		;;
	plugin)
		"$(command -v nbdkit)" -f -U "$sock" -t "$threads" \
			"$build/nbdkit-mqblk-plugin.so" device=ram "size=$size" \
			2>"$tmp/server.log" &
		;;
	memory)
		[ "${2:-}" = tls ] && extra=(--tls=require "--tls-certificates=$tmp/pki")
		nbdkit -f -U "$sock" -t "$threads" "${extra[@]}" memory "$size" \
			2>"$tmp/server.log" &
		;;
	nbd-server)
		cat > "$tmp/nbd-server.conf" <<EOF
[generic]
    unixsock = $sock
    listenaddr = 127.0.0.1
    port = $((20000 + RANDOM % 20000))
    user = $(id -un)
    group = $(id -gn)
[bench]
    exportname = $shm
EOF
		# It daemonizes: its pid comes from the pid file.
		nbd-server -C "$tmp/nbd-server.conf" -p "$tmp/nbd-server.pid" \
			2>"$tmp/server.log"
		wait_sock "$sock"
		;;
	qemu-nbd)
		qemu-nbd -f raw -k "$sock" --shared=8 --persistent \
			--cache=writeback --aio=threads "$shm" \
			2>"$tmp/server.log" &
		;;
	esac
	if [ "$1" = nbd-server ]; then
		pid=$(cat "$tmp/nbd-server.pid")
	else
		pid=$!
	fi
	wait_sock "$sock"
	case $1 in
	nbd-server) uri="nbd+unix:///bench?socket=$sock" ;;
	*) uri="nbd+unix:///?socket=$sock" ;;
	esac
	[ "${2:-}" = tls ] && uri="nbds+unix:///?socket=$sock"
	return 0
}

stop() {
	kill "$pid" 2>/dev/null || :
	wait "$pid" 2>/dev/null || :
	pid=
}

# measure NAME OPTS CONNS OUT
measure() {
	# shellcheck disable=SC2086 # word splitting of the options wanted
	fio --name=bench --ioengine=nbd --uri="$uri" $2 --numjobs="$3" \
		--group_reporting --size="$size" --runtime="$runtime" \
		--time_based --ramp_time=1 --output-format=json \
		--output="$4" >/dev/null
}

fill() {
	fio --name=fill --ioengine=nbd --uri="$uri" --rw=write --bs=1M \
		--iodepth=8 --size="$size" --output=/dev/null
}

# Servers take turns cell by cell, round by round: load from elsewhere on
# the machine then hits every server alike.
avail=()
for s in "${servers[@]}"; do
	case $s in
	mqblkd | mqblkd-nopoll | plugin | memory) avail+=("$s") ;;
	*)
		if command -v "$s" >/dev/null; then
			avail+=("$s")
		else
			echo "skipping $s: not installed" >&2
		fi
		;;
	esac
done
for w in "${workloads[@]}"; do
	for conns in 1 4; do
		for r in $(seq "$rounds"); do
			for s in "${avail[@]}"; do
				echo "${w%%:*} x$conns on $s ($r/$rounds)" >&2
				start "$s"
				fill
				measure "${w%%:*}" "${w#*:}" $conns \
					"$tmp/${w%%:*}.$conns.$s.json.$r"
				stop
			done
		done
	done
done

if [ "${TLS:-1}" = 1 ]; then
	# x509 made now; libnbd finds ca-cert.pem under $HOME/.pki/libnbd.
	mkdir -p "$tmp/pki" "$tmp/home/.pki/libnbd"
	openssl req -x509 -newkey rsa:2048 -nodes \
		-keyout "$tmp/pki/server-key.pem" \
		-out "$tmp/pki/server-cert.pem" -days 2 -subj "/CN=localhost" \
		-addext "subjectAltName=DNS:localhost" >/dev/null 2>&1
	cp "$tmp/pki/server-cert.pem" "$tmp/pki/ca-cert.pem"
	cp "$tmp/pki/ca-cert.pem" "$tmp/home/.pki/libnbd/"
	for r in $(seq "$rounds"); do
		for s in mqblkd memory; do
			echo "1m-read-qd8-tls on $s ($r/$rounds)" >&2
			start "$s" tls
			HOME=$tmp/home fill
			HOME=$tmp/home measure tls "--rw=read --bs=1M --iodepth=8" \
				1 "$tmp/1m-read-qd8-tls.1.$s.json.$r"
			stop
		done
	done
fi

[ -n "${KEEP:-}" ] && cp "$tmp"/*.json.* "$KEEP"/
python3 - "$tmp" "${servers[*]}" <<'EOF'
import glob, json, os, statistics, sys
tmp, servers = sys.argv[1], sys.argv[2].split()
runs = {}  # (name, conns, server) -> {round: (IOPS, MiB/s)}
for f in glob.glob(os.path.join(tmp, "*.json.*")):
    base = os.path.basename(f)
    name, conns, server = base[:base.index(".json")].rsplit(".", 2)
    rnd = int(base.rsplit(".", 1)[1])
    job = json.load(open(f))["jobs"][0]
    io = job["write" if "write" in name else "read"]
    runs.setdefault((name, int(conns), server), {})[rnd] = \
        (io["iops"], io["bw"] / 1024)


def median(key, i):
    return statistics.median(v[i] for v in runs[key].values())


rows = sorted({(n, c) for n, c, _ in runs}, key=lambda r: (
    "tls" in r[0], r[0].startswith("1m"), r[0], r[1]))
cols = [s for s in servers if any(k[2] == s for k in runs)]
print("| workload | conns | " + " | ".join(cols) +
      " | mqblkd / memory |")
print("|---|---|" + "---|" * len(cols) + "---|")
for name, conns in rows:
    mib = name.startswith("1m")
    out = []
    for s in cols:
        key = (name, conns, s)
        out.append("" if key not in runs else
                   ("%.0f MiB/s" % median(key, 1)) if mib
                   else ("%.0f" % median(key, 0)))
    a, b = (name, conns, "mqblkd"), (name, conns, "memory")
    ratio = ""
    if a in runs and b in runs and median(b, 0):
        ratio = "%.2f" % (median(a, 0) / median(b, 0))
        # rounds are paired: the two servers ran one after the other
        per = [runs[a][r][0] / runs[b][r][0]
               for r in runs[a] if r in runs[b] and runs[b][r][0]]
        if len(per) > 1:
            ratio += " (%.2f-%.2f)" % (min(per), max(per))
    print("| %s | %d | %s | %s |" % (name, conns, " | ".join(out), ratio))
EOF
