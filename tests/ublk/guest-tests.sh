#!/bin/sh
# The checks run inside the guest, through the real kernel's ublk driver,
# one result line each (see guest-init.sh).  busybox sh; no network.
# Every wait polls a condition with a bounded number of tries.

result() { echo "MQBLK-RESULT $*"; }
CTL=/run/ctl.sock

# wait_for COND-COMMAND...: up to 20 s (WAIT_TRIES tenths of a second)
wait_for() {
	i=0
	while ! "$@" 2>/dev/null; do
		[ $? -eq 2 ] && return 1
		i=$((i + 1))
		[ $i -gt "${WAIT_TRIES:-200}" ] && return 1
		sleep 0.1
	done
}

# started: the server named its devices (false at once if it died)
started() {
	grep -q ublkb /tmp/srv.out && return 0
	kill -0 $SRV 2>/dev/null || return 2
	return 1
}

# serve ARGS...: start mqblk-ublk, wait for its devices; PID in $SRV
serve() {
	rm -f $CTL /tmp/srv.out
	mqblk-ublk --control $CTL "$@" >/tmp/srv.out 2>/tmp/srv.err &
	SRV=$!
	if ! wait_for started; then
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

for m in mq-deadline kyber-iosched bfq xor raid6_pq libcrc32c btrfs; do
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

# 2b. -c FILE, mqblkd's INI file: one device per section, named after it.
cat >/tmp/ublk.ini <<'INI'
[fast]
device=null
size=16M
memory_backed=1
time_scale=0
[store]
device=ram
size=16M
INI
if serve -c /tmp/ublk.ini && wait_for test -b /dev/ublkb1; then
	names=$(cut -d: -f1-2 /tmp/srv.out | tr '\n' ' ')
	if [ "$names" = "fast: /dev/ublkb0 store: /dev/ublkb1 " ] &&
		data_check /dev/ublkb1; then
		result ini pass "$names; 8 MiB through /dev/ublkb1"
	else
		result ini fail "devices: $names"
	fi
	stop ini
else
	result ini fail "the devices did not appear: $(cat /tmp/srv.err)"
fi

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

# 4. Zoned exports: the kernel sees the model's zones; writes at the write
# pointer land, a misplaced one fails with EIO, a reset rewinds the zone.
for spec in "smr:smr capacity=256M zone_size=16M max_open=4 time_scale=0" \
	"null-zoned:null size=64M memory_backed=1 zoned=1 zone_size=4 zone_nr_conv=1 time_scale=0"; do
	name=${spec%%:*}
	args=${spec#*:}
	# shellcheck disable=SC2086 # split on purpose
	if ! serve $args; then
		result "$name-zones" fail "the device did not appear: $(cat /tmp/srv.err)"
		continue
	fi
	EXP=$(sed -n '1s/:.*//p' /tmp/srv.out)
	model_zones() { model zones >/tmp/mz; }
	zoned=$(cat /sys/block/ublkb0/queue/zoned)
	blkzone report /dev/ublkb0 >/tmp/kz 2>&1
	model_zones
	nz=$(wc -l </tmp/kz)
	if [ "$zoned" = host-managed ] && [ "$nz" -gt 1 ] && cmp -s /tmp/kz /tmp/mz; then
		result "$name-report" pass "host-managed, blkzone report = the model's $nz zones"
	else
		result "$name-report" fail "zoned=$zoned; kernel: $(head -2 /tmp/kz); model: $(head -2 /tmp/mz)"
	fi

	# the first sequential zone, in MiB (zones here are MiB-aligned)
	start=$(grep -m1 SEQ_WRITE_REQUIRED /tmp/kz | sed 's/.*start: \(0x[0-9a-f]*\),.*/\1/')
	mib=$((start / 2048))
	msg=ok
	dd if=/tmp/pattern of=/dev/ublkb0 bs=1M count=2 seek=$mib oflag=direct \
		2>/tmp/dd.err || msg="sequential write: $(cat /tmp/dd.err)"
	model_zones
	wp=$(grep -m1 "start: $(printf '0x%09x' $start)" /tmp/mz | sed 's/.*wptr \(0x[0-9a-f]*\) .*/\1/')
	[ "$msg" = ok ] && [ $((wp)) -ne 4096 ] && msg="model wptr $wp after 2 MiB"
	dd if=/dev/ublkb0 of=/tmp/back bs=1M count=2 skip=$mib iflag=direct 2>/dev/null
	head -c 2097152 /tmp/pattern >/tmp/p2
	[ "$msg" = ok ] && ! cmp -s /tmp/p2 /tmp/back && msg="data differ"
	if [ "$msg" = ok ]; then
		result "$name-seqwrite" pass "2 MiB at zone start $start, model wptr $wp"
	else
		result "$name-seqwrite" fail "$msg"
	fi

	# a write past the write pointer of that zone
	if dd if=/tmp/pattern of=/dev/ublkb0 bs=1M count=1 seek=$((mib + 3)) \
		oflag=direct 2>/tmp/dd.err; then
		result "$name-misplaced" fail "a write 1 MiB past the write pointer succeeded"
	elif grep -q 'Input/output error' /tmp/dd.err; then
		result "$name-misplaced" pass "$(cat /tmp/dd.err)"
	else
		result "$name-misplaced" fail "not EIO: $(cat /tmp/dd.err)"
	fi

	# reset through blkzone: the model's zone is empty again
	blkzone reset -o $start -c 1 /dev/ublkb0 2>/tmp/bz.err
	model_zones
	line=$(grep -m1 "start: $(printf '0x%09x' $start)" /tmp/mz)
	case $line in
	*"wptr 0x000000 "*"(em)"*)
		if dd if=/tmp/pattern of=/dev/ublkb0 bs=1M count=1 seek=$mib \
			oflag=direct 2>/tmp/dd.err; then
			result "$name-reset" pass "$line; written again from the start"
		else
			result "$name-reset" fail "rewrite: $(cat /tmp/dd.err)"
		fi
		;;
	*) result "$name-reset" fail "after blkzone reset: $line $(cat /tmp/bz.err)" ;;
	esac

	# close, open and finish through blkzone reach the model's zone: the
	# zone just written again (implicitly open) closes, opens explicitly
	# and ends full.
	msg=ok
	for step in close:cl open:oe finish:fu; do
		blkzone "${step%:*}" -o $start -c 1 /dev/ublkb0 2>/tmp/bz.err ||
			{ msg="blkzone ${step%:*}: $(cat /tmp/bz.err)"; break; }
		model_zones
		line=$(grep -m1 "start: $(printf '0x%09x' $start)" /tmp/mz)
		case $line in
		*"(${step#*:})"*) ;;
		*) msg="after blkzone ${step%:*}: $line"; break ;;
		esac
	done
	if [ "$msg" = ok ]; then
		result "$name-open-close-finish" pass "$line"
	else
		result "$name-open-close-finish" fail "$msg"
	fi

	# zone append: btrfs on a zoned device writes its data with
	# REQ_OP_ZONE_APPEND (the kernel needs no emulation: the export
	# declares max_zone_append_sectors); the file reads back after a
	# remount.
	msg=ok
	mkdir -p /mnt
	blkzone reset /dev/ublkb0 2>/tmp/bz.err || msg="blkzone reset: $(cat /tmp/bz.err)"
	[ "$msg" = ok ] && { mkfs.btrfs -q -f -O zoned -d single -m single \
		/dev/ublkb0 >/tmp/mkfs.out 2>&1 || msg="mkfs.btrfs: $(tail -3 /tmp/mkfs.out)"; }
	[ "$msg" = ok ] && { mount -t btrfs /dev/ublkb0 /mnt 2>/tmp/mnt.err ||
		msg="mount: $(cat /tmp/mnt.err) $(dmesg | grep -i btrfs | tail -2)"; }
	if [ "$msg" = ok ]; then
		dd if=/tmp/pattern of=/mnt/f bs=1M count=4 conv=fsync 2>/tmp/dd.err ||
			msg="write: $(cat /tmp/dd.err) $(dmesg | tail -2)"
		umount /mnt
		if [ "$msg" = ok ] && mount -t btrfs /dev/ublkb0 /mnt 2>/tmp/mnt.err; then
			head -c 4194304 /tmp/pattern >/tmp/p4
			cmp -s /tmp/p4 /mnt/f || msg="data differ after remount"
			umount /mnt
		elif [ "$msg" = ok ]; then
			msg="remount: $(cat /tmp/mnt.err)"
		fi
	fi
	if [ "$msg" = ok ]; then
		result "$name-zone-append" pass "btrfs -O zoned: 4 MiB written, read back after a remount"
	else
		result "$name-zone-append" fail "$msg"
	fi
	stop "$name"
done

# A runt last zone: ublk counts whole zones, so it is refused in one line.
out=$(timeout 20 mqblk-ublk null size=10M zoned=1 zone_size=4 \
	memory_backed=1 time_scale=0 2>&1)
rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q 'not a whole number of zones'; then
	result zoned-runt pass "$(echo "$out" | grep zones)"
else
	result zoned-runt fail "exit $rc: $out"
fi

# 5. Recovery (UBLK_F_USER_RECOVERY_REISSUE): kill -9 the server amid a
# stream of direct 64 KiB writes on a file-backed export, start it again
# with the same arguments: it takes the device over, the writes held by
# the kernel are reissued, and every acknowledged one is in the image.
dd if=/dev/zero of=/tmp/img bs=1M count=0 seek=64 2>/dev/null
rm -f /tmp/acked
if serve file file=/tmp/img; then
	(
		i=0
		while [ $i -lt 120 ]; do
			if dd if=/tmp/pattern of=/dev/ublkb0 bs=64k count=1 \
				skip=$i seek=$i oflag=direct 2>/dev/null; then
				echo "$i" >>/tmp/acked
			else
				echo "fail $i" >>/tmp/acked
			fi
			i=$((i + 1))
		done
	) &
	WPID=$!
	acked() { [ "$(wc -l </tmp/acked 2>/dev/null || echo 0)" -ge 20 ]; }
	wait_for acked
	kill -9 $SRV
	wait $SRV 2>/dev/null
	at=$(wc -l </tmp/acked)
	writing() { ! kill -0 $WPID; }
	if serve file file=/tmp/img && WAIT_TRIES=600 wait_for writing; then
		wait $WPID
		n=$(grep -c '^[0-9]' /tmp/acked)
		f=$(grep -c fail /tmp/acked)
		rec=$(grep -c recovered /tmp/srv.err)
		stop recovery
		head -c $((120 * 65536)) /tmp/pattern >/tmp/p120
		head -c $((120 * 65536)) /tmp/img >/tmp/i120
		if [ "$n" = 120 ] && [ "$f" = 0 ] && [ "$rec" = 1 ] &&
			cmp -s /tmp/p120 /tmp/i120; then
			result recovery pass "killed after $at writes; all 120 acknowledged and in the image"
		else
			result recovery fail "acked=$n failed=$f recovered=$rec; image $(cmp /tmp/p120 /tmp/i120 2>&1)"
		fi
	else
		kill -9 $WPID 2>/dev/null
		result recovery fail "the writes did not go on after the restart: $(cat /tmp/srv.err)"
	fi
else
	result recovery fail "the device did not appear"
fi
