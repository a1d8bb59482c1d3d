#!/bin/bash
# The control plane under a storm, with verified I/O on every export:
# while fio writes and verifies (crc32c) ten exports of eight device
# models, ctl_storm.py writes random values, valid and hostile, to every
# writable queue attribute (scheduler switches, nr_requests, ioprio_map,
# scheduler tunables) and fires faults that requeue or hold requests
# (null_blk's requeue, a stalled SCSI target, a suspended Memory Stick).
# Then: no fio error, and on every export nothing left in flight, no tag
# held, no queue frozen; mqblkd exits 0 (under the sanitizers: no report).
#
# MQBLK_STORM_SEED repeats a run; MQBLK_STORM_ACTIONS (default 400, 150
# under the sanitizers) sets the storm's length.
. "$(dirname "$0")/mqblkd-lib.sh"

seed=${MQBLK_STORM_SEED:-$RANDOM}
# The sanitizers make every action several times slower.
actions=${MQBLK_STORM_ACTIONS:-$([ -n "$MQBLK_SANITIZE" ] && echo 150 || echo 400)}
echo "seed $seed"
cat >"$TESTTMP/storm.ini" <<INI
[null]
device=null
submit_queues=2
memory_backed=1
irqmode=1
size=16M
time_scale=0
[nulls]
device=null
memory_backed=1
irqmode=2
completion_nsec=200000
hw_queue_depth=4
size=16M
time_scale=0
[ram]
device=ram
size=16M
[idedisk]
device=ide-disk
size=16M
time_scale=0
[sx8]
device=sx8
size=16M
time_scale=0
[scsi]
device=scsi
size=16M
time_scale=0
[ssd]
device=sata-ssd
size=16M
time_scale=0
[mspro]
device=mspro
time_scale=0
[sunvdc]
device=sunvdc
size=16M
time_scale=0
INI
ctlsock=$TESTTMP/ctl.sock
mqblkd_start -c "$TESTTMP/storm.ini" --control "$ctlsock" --control-timeout 60
CTL="$MQBLK_BUILD/mqblkctl -s $ctlsock"

exports=(null nulls ram idedisk sx8/port0 sx8/port5 scsi ssd mspro sunvdc)
{
	printf '%s\n' "[global]" ioengine=nbd rw=randrw bs=4k iodepth=16 \
		size=8M verify=crc32c verify_fatal=1 verify_backlog=32 \
		time_based runtime=1h thread
	for e in "${exports[@]}"; do
		printf '[%s]\nuri=nbd+unix:///%s?socket=%s\n' "${e//\//-}" "$e" \
			"$unixsocket"
	done
	# Requests of several sizes, so that merges and splits happen too.
	printf '[null-big]\nuri=nbd+unix:///null?socket=%s\n' "$unixsocket"
	printf 'bs=64k\noffset=8M\n'
} >"$TESTTMP/storm.fio"
fio "$TESTTMP/storm.fio" --output="$TESTTMP/fio.out" &
fio_pid=$!
mqblkd_wait_io "${exports[@]}"
mqblkd_storm ctl_storm.py "$MQBLK_BUILD/mqblkctl" "$ctlsock" "$seed" \
	"$actions" "$fio_pid"
# fio ends its jobs on SIGINT, reports them, and exits with 128.
kill -INT $fio_pid 2>/dev/null || true
fio_rc=0
wait $fio_pid || fio_rc=$?
grep -E 'err=|READ:|WRITE:' "$TESTTMP/fio.out"
[ $fio_rc -eq 0 ] || [ $fio_rc -eq 128 ] ||
	{ cat "$TESTTMP/fio.out"; die "fio failed (seed $seed)"; }
[ "$(grep -cE 'err= *0' "$TESTTMP/fio.out")" -eq $((${#exports[@]} + 1)) ] ||
	die "fio reported errors (seed $seed)"

# Everything the storm touched has settled.
settled_queues=0
for e in $($CTL ls | tr -d /); do
	for x in $e $($CTL ls "$e" | grep '/$' | tr -d / | sed "s|^|$e/|"); do
		$CTL ls "$x" | grep -qx 'mq/' || continue # not a disk
		mqblkd_settled "$x"
	done
done
[ $settled_queues -ge 22 ] || die "only $settled_queues hw queues checked"
echo "$settled_queues hw queues settled"
mqblkd_stop
