#!/bin/sh
# The checks run inside the guest, through the real kernel's ublk driver,
# one result line each (see guest-init.sh).  busybox sh; no network.
# Every wait polls a condition with a bounded number of tries.

result() { echo "MQBLK-RESULT $*"; }
CTL=/run/ctl.sock

# wait_for COND-COMMAND...: up to 20 s
wait_for() {
	i=0
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 200 ] && return 1
		sleep 0.1
	done
}

# serve ARGS...: start mqblk-ublk, wait for its devices; PID in $SRV
serve() {
	rm -f $CTL /tmp/srv.out
	mqblk-ublk --control $CTL "$@" >/tmp/srv.out 2>/tmp/srv.err &
	SRV=$!
	if ! wait_for grep -q ublkb /tmp/srv.out; then
		cat /tmp/srv.err
		kill -9 $SRV 2>/dev/null
		return 1
	fi
	wait_for test -b /dev/ublkb0
}

# stop NAME: SIGTERM; the server must leave with 0 and the device go away
stop() {
	kill -TERM $SRV
	wait $SRV
	rc=$?
	if [ $rc -ne 0 ]; then
		result "$1-stop" fail "server exit $rc: $(tail -3 /tmp/srv.err)"
	elif [ -e /sys/block/ublkb0 ]; then
		result "$1-stop" fail "ublkb0 left behind"
	else
		result "$1-stop" pass "SIGTERM: exit 0, device deleted"
	fi
}

# model ATTR: what the model's queue says, through the control socket
model() {
	mqblkctl -s $CTL get "$EXP/$1"
}

# A random 8 MiB written, caches dropped, read back and compared.
data_check() {
	dev=$1
	dd if=/dev/urandom of=/tmp/pattern bs=1M count=8 2>/dev/null
	dd if=/tmp/pattern of="$dev" bs=1M seek=3 conv=fsync 2>/dev/null || return 1
	echo 3 >/proc/sys/vm/drop_caches
	dd if="$dev" of=/tmp/back bs=1M skip=3 count=8 2>/dev/null || return 1
	cmp /tmp/pattern /tmp/back
}

# The kernel's view of the disk against the model's.
queue_check() {
	k_hw=$(ls /sys/block/ublkb0/mq | wc -l)
	m_hw=$(model queue/nr_hw_queues)
	k_lbs=$(cat /sys/block/ublkb0/queue/logical_block_size)
	m_lbs=$(model queue/logical_block_size)
	k_rot=$(cat /sys/block/ublkb0/queue/rotational)
	m_rot=$(model queue/rotational)
	sched=$(cat /sys/block/ublkb0/queue/scheduler)
	# the depth: the model's driver tags, less the reserved ones
	k_depth=$(cat /sys/block/ublkb0/queue/nr_requests)
	m_depth=$(model mq/0/tags | sed -n \
		's/^nr_tags=\([0-9]*\) nr_reserved_tags=\([0-9]*\).*/\1 \2/p')
	m_depth=$((${m_depth% *} - ${m_depth#* }))
	echo "hw=$k_hw/$m_hw lbs=$k_lbs/$m_lbs rot=$k_rot/$m_rot" \
		"depth=$k_depth/$m_depth sched=$sched"
	[ "$k_depth" = "$m_depth" ] &&
		[ "$k_hw" = "$m_hw" ] && [ "$k_lbs" = "$m_lbs" ] &&
		[ "$k_rot" = "$m_rot" ] && [ "${sched#\[none\]}" != "$sched" ]
}

# 1. Without the driver: one clear line, a non-zero exit.
out=$(mqblk-ublk null size=1M 2>&1)
rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "no /dev/ublk-control"; then
	result no-driver pass "$out"
else
	result no-driver fail "exit $rc: $out"
fi

for m in mq-deadline kyber-iosched bfq; do
	[ -f /lib/modules/$m.ko ] && insmod /lib/modules/$m.ko
done
insmod /lib/modules/ublk_drv.ko || { result insmod fail; exit 0; }

# 2. null, ram and mspro: data through the kernel, queue limits, scheduler.
for spec in "null:null size=64M memory_backed=1 time_scale=0" \
	"ram:ram size=64M" \
	"mspro:mspro size=64M time_scale=0"; do
	name=${spec%%:*}
	args=${spec#*:}
	# shellcheck disable=SC2086 # split on purpose
	if ! serve $args; then
		result "$name-data" fail "the device did not appear"
		continue
	fi
	EXP=$(sed -n '1s/:.*//p' /tmp/srv.out)
	if data_check /dev/ublkb0; then
		result "$name-data" pass "8 MiB through /dev/ublkb0"
	else
		result "$name-data" fail "data differ"
	fi
	q=$(queue_check)
	if [ $? -eq 0 ]; then
		result "$name-queue" pass "$q"
	else
		result "$name-queue" fail "$q"
	fi
	stop "$name"
done

# 3. A filesystem on an emulated IDE disk: mkfs.ext4, mount, write, fsck.
if serve ide-disk size=256M time_scale=0; then
	EXP=$(sed -n '1s/:.*//p' /tmp/srv.out)
	msg=ok
	mkfs.ext4 -q -F /dev/ublkb0 >/tmp/mkfs.out 2>&1 || msg="mkfs: $(cat /tmp/mkfs.out)"
	if [ "$msg" = ok ]; then
		mkdir -p /mnt
		if mount -t ext4 /dev/ublkb0 /mnt; then
			dd if=/dev/urandom of=/mnt/f bs=1M count=4 2>/dev/null
			cp /mnt/f /tmp/f
			umount /mnt
			mount -t ext4 /dev/ublkb0 /mnt && cmp /mnt/f /tmp/f ||
				msg="file differs after remount"
			umount /mnt 2>/dev/null
		else
			msg="mount failed"
		fi
	fi
	if [ "$msg" = ok ]; then
		e2fsck -f -n /dev/ublkb0 >/tmp/fsck.out 2>&1 ||
			msg="fsck: $(tail -3 /tmp/fsck.out)"
	fi
	q=$(queue_check) || msg="$msg; queue: $q"
	if [ "$msg" = ok ]; then
		result ide-disk-ext4 pass "mkfs.ext4, mount, 4 MiB file, e2fsck -f clean; $q"
	else
		result ide-disk-ext4 fail "$msg"
	fi
	stop ide-disk
else
	result ide-disk-ext4 fail "the device did not appear"
fi
