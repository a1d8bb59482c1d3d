#!/bin/sh
# Runs inside the guest of bench/rbd-guest-bench.sh (busybox sh): one RBD
# image of the host's cluster served three ways, each attached with the
# kernel's nbd client, fio (libaio, direct) on the device:
#   mqblkd    mqblkd's rbd device (cache=off), nbd-client on a Unix socket
#   qemu-nbd  qemu-nbd's rbd: driver (--cache=none), nbd-client likewise
#   rbd-nbd   Ceph's rbd-nbd, which drives /dev/nbdX itself
#             (--rbd-cache=false)
# librbd's cache is off for all three, as mqblkd's cache=off and
# qemu-nbd's --cache=none make it.
# the three alternating, ROUNDS times, each round starting with the next
# server in turn; one line per run:
# MQBLK-BENCH SERVER WORKLOAD IOPS KIB_PER_S MEAN_LAT_US CPU_US_PER_IO MSGR_US_PER_IO
# (CPU: the server process's user + system time over the run; MSGR: the
# part of it spent by librbd's messenger threads, msgr-worker-N, which
# every server runs alike).
RUNTIME=${RUNTIME:-10}
ROUNDS=${ROUNDS:-3}
WORKLOADS=${WORKLOADS:-4k-randread-qd32 4k-randwrite-qd32 1m-read-qd8 1m-write-qd8}
CONF=/etc/ceph/ceph.conf
for m in failover net_failover virtio_net nbd; do
	insmod /lib/modules/$m.ko 2>/dev/null
done
mkdir -p /var/run/ceph
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2

wait_for() {
	i=0
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 600 ] && return 1
		sleep 0.1
	done
}

# stat_ticks FILE: user + system clock ticks in a /proc .../stat file
stat_ticks() {
	awk '{print $14 + $15}' "$1" 2>/dev/null || echo 0
}

# cpu_ticks PID: user + system clock ticks of the process so far
cpu_ticks() {
	stat_ticks "/proc/$1/stat"
}

# msgr_ticks PID: the same, of the process's librbd messenger threads
msgr_ticks() {
	m=0
	for d in "/proc/$1/task"/*; do
		case $(cat "$d/comm" 2>/dev/null) in
		msgr-worker-*) m=$((m + $(stat_ticks "$d/stat"))) ;;
		esac
	done
	echo $m
}

# fio_run SERVER DEVICE PID: the workloads on DEVICE, served by PID
fio_run() {
	hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
	for w in $WORKLOADS; do
		case $w in
		4k-randread-qd32) a="randread 4k 32" ;;
		4k-randwrite-qd32) a="randwrite 4k 32" ;;
		1m-read-qd8) a="read 1m 8" ;;
		1m-write-qd8) a="write 1m 8" ;;
		*) echo "MQBLK-BENCH-ERROR unknown workload $w"; continue ;;
		esac
		set -- "$1" "$2" "$3" "$w" $a
		t0=$(cpu_ticks "$3") m0=$(msgr_ticks "$3")
		out=$(fio --name="$4" --filename="$2" --rw="$5" --bs="$6" \
			--iodepth="$7" --ioengine=libaio --direct=1 \
			--runtime="$RUNTIME" --time_based --minimal 2>&1)
		t1=$(cpu_ticks "$3") m1=$(msgr_ticks "$3")
		# terse v3: read iops $8, KiB/s $7, mean clat $16, runtime (ms)
		# $9; write $49 $48 $57 $50.  CPU over IOPS x runtime.
		case $5 in
		*write) echo "$out" | awk -F';' -v s="$1" -v n="$4" \
			-v t=$((t1 - t0)) -v m=$((m1 - m0)) -v hz="$hz" \
			'/^3;/ {ios = $49 * $50 / 1000 + 1e-9
				print "MQBLK-BENCH", s, n, $49, $48, $57,
				int(t * 1e6 / hz / ios), int(m * 1e6 / hz / ios)}' ;;
		*) echo "$out" | awk -F';' -v s="$1" -v n="$4" \
			-v t=$((t1 - t0)) -v m=$((m1 - m0)) -v hz="$hz" \
			'/^3;/ {ios = $8 * $9 / 1000 + 1e-9
				print "MQBLK-BENCH", s, n, $8, $7, $16,
				int(t * 1e6 / hz / ios), int(m * 1e6 / hz / ios)}' ;;
		esac
		echo "$out" | grep -q '^3;' || echo "MQBLK-BENCH-ERROR $1 $4: $out"
	done
}

# via_nbd_client SERVER NAME ARGS...: start the server (ARGS) on
# /tmp/sock, attach it as /dev/nbd0 (export NAME), run fio, detach, stop
via_nbd_client() {
	s=$1 name=$2
	shift 2
	rm -f /tmp/sock
	"$@" >/tmp/srv.log 2>&1 &
	srv=$!
	if wait_for test -S /tmp/sock &&
		wait_for nbd-client -u /tmp/sock /dev/nbd0 -N "$name" &&
		wait_for test -s /sys/block/nbd0/size; then
		fio_run "$s" /dev/nbd0 $srv
		nbd-client -d /dev/nbd0 >/dev/null 2>&1
	else
		echo "MQBLK-BENCH-ERROR $s: $(cat /tmp/srv.log)"
	fi
	kill -TERM $srv
	wait $srv
}

run_server() {
	case $1 in
	mqblkd)
		via_nbd_client mqblkd rbd0 \
			mqblkd -f -U /tmp/sock rbd image=bench conf=$CONF
		;;
	qemu-nbd)
		via_nbd_client qemu-nbd "" \
			qemu-nbd -f raw -k /tmp/sock --persistent --cache=none \
			"rbd:rbd/bench:conf=$CONF"
		;;
	rbd-nbd)
		dev=$(rbd-nbd --conf $CONF --rbd-cache=false map rbd/bench \
			2>/tmp/rbdnbd.log)
		if [ -n "$dev" ] &&
			wait_for test -s "/sys/block/${dev#/dev/}/size"; then
			fio_run rbd-nbd "$dev" "$(pidof rbd-nbd | cut -d' ' -f1)"
			rbd-nbd unmap "$dev" >/dev/null 2>&1
		else
			echo "MQBLK-BENCH-ERROR rbd-nbd: $(cat /tmp/rbdnbd.log)"
		fi
		;;
	esac
}

# Round r starts with server r mod 3, so that none always goes first.
round=0
while [ $round -lt "$ROUNDS" ]; do
	case $((round % 3)) in
	0) order="mqblkd qemu-nbd rbd-nbd" ;;
	1) order="qemu-nbd rbd-nbd mqblkd" ;;
	2) order="rbd-nbd mqblkd qemu-nbd" ;;
	esac
	for s in $order; do
		run_server $s
	done
	round=$((round + 1))
done
