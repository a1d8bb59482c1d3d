#!/bin/sh
# Runs inside the guest of bench/ublk-bench.sh (busybox sh): fio on
#   ublk-null   mqblk-ublk null     against  null_blk  the kernel's null_blk
#   ublk-ram    mqblk-ublk ram      against  nbd-ram   mqblkd ram through
#                                            the kernel's nbd client
# the four alternating, ROUNDS times; one line per run:
# MQBLK-BENCH TARGET WORKLOAD IOPS KIB_PER_S
RUNTIME=${RUNTIME:-5}
ROUNDS=${ROUNDS:-3}
for m in configfs null_blk nbd; do insmod /lib/modules/$m.ko 2>/dev/null; done
insmod /lib/modules/ublk_drv.ko
ip link set lo up

wait_for() {
	i=0
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 300 ] && return 1
		sleep 0.1
	done
}

# fio_run TARGET DEVICE: the three workloads on DEVICE
fio_run() {
	for w in "randwrite-4k-qd32:randwrite:4k:32" "randread-4k-qd32:randread:4k:32" \
		"read-1m-qd4:read:1m:4"; do
		name=${w%%:*}
		set -- "$1" "$2" $(echo "$w" | tr ':' ' ')
		out=$(fio --name="$3" --filename="$2" --rw="$4" --bs="$5" \
			--iodepth="$6" --ioengine=libaio --direct=1 --size=256M \
			--runtime="$RUNTIME" --time_based --minimal 2>&1)
		case $4 in
		*write) echo "$out" | awk -F';' -v t="$1" -v n="$name" \
			'/^3;/ {print "MQBLK-BENCH", t, n, $49, $48}' ;;
		*) echo "$out" | awk -F';' -v t="$1" -v n="$name" \
			'/^3;/ {print "MQBLK-BENCH", t, n, $8, $7}' ;;
		esac
	done
}

# ublk_run TARGET ARGS...: mqblk-ublk ARGS, fio on its device
ublk_run() {
	t=$1
	shift
	mqblk-ublk "$@" >/tmp/srv.out 2>/tmp/srv.err &
	srv=$!
	if wait_for test -b /dev/ublkb0 && wait_for grep -q ublkb /tmp/srv.out; then
		fio_run "$t" /dev/ublkb0
	else
		echo "MQBLK-BENCH-ERROR $t: $(cat /tmp/srv.err)"
	fi
	kill -TERM $srv
	wait $srv
}

nbd_connect() { nbd-client 127.0.0.1 10809 /dev/nbd0 -N ram0 >/tmp/nbdc.out 2>&1; }

round=0
while [ $round -lt "$ROUNDS" ]; do
	ublk_run ublk-null null size=1G
	if [ -b /dev/nullb0 ]; then
		fio_run null_blk /dev/nullb0
	else
		echo "MQBLK-BENCH-ERROR null_blk: no /dev/nullb0"
	fi

	ublk_run ublk-ram ram size=256M
	mqblkd -f -t 2 -b 127.0.0.1 -p 10809 ram size=256M >/tmp/nbd.out 2>&1 &
	nbd=$!
	if wait_for nbd_connect && wait_for test -s /sys/block/nbd0/size; then
		fio_run nbd-ram /dev/nbd0
		nbd-client -d /dev/nbd0 >/dev/null 2>&1
	else
		echo "MQBLK-BENCH-ERROR nbd-ram: $(cat /tmp/nbdc.out /tmp/nbd.out)"
	fi
	kill -TERM $nbd
	wait $nbd
	round=$((round + 1))
done
