#!/bin/bash
# Faults that fail requests, under load: while fio reads and writes
# three exports without verifying (errors expected), fault_storm.py
# fires null_blk's timeout fault, power cuts of the FTL's flash chip (now
# and during the Nth program or erase) and power back, and pulls the
# Memory Stick out and puts it back, with scheduler switches and
# nr_requests between them.  Then every fault is lifted, and: on every
# export nothing in flight, no tag held, nothing frozen; a verified fio
# pass (crc32c) works on each; mqblkd exits 0 (under the sanitizers: no
# report).
#
# MQBLK_STORM_SEED repeats a run; MQBLK_STORM_ACTIONS (default 120, 60
# under the sanitizers) sets its length.
. "$(dirname "$0")/mqblkd-lib.sh"

seed=${MQBLK_STORM_SEED:-$RANDOM}
actions=${MQBLK_STORM_ACTIONS:-$([ -n "$MQBLK_SANITIZE" ] && echo 60 || echo 120)}
echo "seed $seed"
# io_timeout is short so that the requests the timeout fault drops fail
# within a switch's wait.
cat >"$TESTTMP/faults.ini" <<INI
[nulls]
device=null
memory_backed=1
irqmode=2
completion_nsec=200000
hw_queue_depth=4
size=16M
io_timeout=2000
time_scale=0
[ftl]
device=ftl
time_scale=0
[mspro]
device=mspro
time_scale=0
INI
ctlsock=$TESTTMP/ctl.sock
mqblkd_start -c "$TESTTMP/faults.ini" --control "$ctlsock" --control-timeout 60
CTL="$MQBLK_BUILD/mqblkctl -s $ctlsock"
exports=(nulls ftl mspro)

{
	printf '%s\n' "[global]" ioengine=nbd rw=randrw bs=4k iodepth=8 \
		size=8M continue_on_error=all time_based runtime=1h thread
	for e in "${exports[@]}"; do
		printf '[%s]\nuri=nbd+unix:///%s?socket=%s\n' "$e" "$e" "$unixsocket"
	done
} >"$TESTTMP/load.fio"
fio "$TESTTMP/load.fio" --output="$TESTTMP/load.out" &
fio_pid=$!
mqblkd_wait_io "${exports[@]}"
mqblkd_storm fault_storm.py "$MQBLK_BUILD/mqblkctl" "$ctlsock" "$seed" \
	"$actions" "$fio_pid"
kill -INT $fio_pid 2>/dev/null || true
wait $fio_pid || true # its I/O errors were the point
grep -E 'err=|READ:|WRITE:' "$TESTTMP/load.out"
grep -q 'timed out (timeout fault injected)' "$MQBLKD_LOG" ||
	die "no request timed out (seed $seed)"
grep -q 'card ejected: .* fails' "$MQBLKD_LOG" ||
	die "no request met the ejected card (seed $seed)"

settled_queues=0
for e in "${exports[@]}"; do
	mqblkd_settled "$e"
	# I/O works again, and reads back what it wrote.
	fio --name="after-${e}" --ioengine=nbd \
		--uri="nbd+unix:///$e?socket=$unixsocket" --rw=randwrite \
		--bs=4k --iodepth=8 --size=4M --verify=crc32c --verify_fatal=1 \
		--output="$TESTTMP/after-$e.out" ||
		{ cat "$TESTTMP/after-$e.out"; die "$e: I/O after the faults"; }
	grep -qE 'err= *0' "$TESTTMP/after-$e.out" || die "$e: fio errors after"
done
[ $settled_queues -eq ${#exports[@]} ] || die "$settled_queues hw queues checked"
echo "${#exports[@]} exports settled and serve again"
mqblkd_stop
