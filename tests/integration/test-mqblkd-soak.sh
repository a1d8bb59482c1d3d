#!/bin/bash
# Soak: 16 connections at queue depth 32 of mixed, verified I/O (fio,
# crc32c, 4k-64k random reads and writes), half on a ram export that
# completes inline, half on a null export whose irq thread completes
# (the ev_async path).  Zero errors, and mqblkd's RSS must not grow once
# the disks are full.
#
# The default run lasts 10 s; MQBLK_SOAK_SECONDS=60 gives the full soak.
. "$(dirname "$0")/mqblkd-lib.sh"

secs=${MQBLK_SOAK_SECONDS:-10}
cat > "$TESTTMP/soak.ini" <<INI
[ram]
device=ram
size=64M
time_scale=0
[null]
device=null
memory_backed=1
irqmode=1
size=64M
time_scale=0
INI
# Under ASan, freed memory waits in a quarantine (256 MiB by default)
# before it is reused, so RSS grows while the quarantine fills: keep it
# small and allow for it.
slack=16384
if [ -n "$MQBLK_SANITIZE" ]; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8"
	slack=$((slack + 8192))
fi
mqblkd_start -c "$TESTTMP/soak.ini"

rss() { awk '/^VmRSS/ { print $2 }' "/proc/$MQBLKD_PID/status"; }

# Fill both disks first, so that the store's memory is all there.
for e in ram null; do
	fio --name=fill-$e --ioengine=nbd \
		--uri="nbd+unix:///$e?socket=$unixsocket" --rw=write \
		--bs=1M --iodepth=8 --size=64M --output=/dev/null ||
		die "fill $e failed"
done

run() {
	local e=$1
	fio --name=soak-$e --ioengine=nbd \
		--uri="nbd+unix:///$e?socket=$unixsocket" --numjobs=8 \
		--size=8M --offset_increment=8M --rw=randrw \
		--bsrange=4k-64k --iodepth=32 --verify=crc32c \
		--verify_backlog=256 --verify_fatal=1 --time_based \
		--runtime="$secs" --group_reporting \
		--output="$TESTTMP/fio-$e.out"
}
run ram &
p1=$!
run null &
p2=$!
# RSS once the load is on, and at the end.
sleep $((secs / 4 + 1))
rss_start=$(rss)
rc=0
wait $p1 || rc=$?
rss_end=$(rss)
wait $p2 || rc=$?
cat "$TESTTMP/fio-ram.out" "$TESTTMP/fio-null.out"
[ $rc -eq 0 ] || die "fio failed"
for e in ram null; do
	grep -E 'err= *0' "$TESTTMP/fio-$e.out" >/dev/null ||
		die "$e: fio reported errors"
	grep -Eq 'READ: bw=[1-9]' "$TESTTMP/fio-$e.out" || die "$e: no reads"
	grep -Eq 'WRITE: bw=[1-9]' "$TESTTMP/fio-$e.out" || die "$e: no writes"
done
echo "RSS: ${rss_start} KiB under load, ${rss_end} KiB at the end"
[ "$rss_end" -le $((rss_start + slack)) ] ||
	die "RSS grew from $rss_start to $rss_end KiB"
mqblkd_stop
echo "soak ok (${secs}s, 16 connections x QD32)"
