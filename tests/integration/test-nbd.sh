#!/bin/bash
# The nbd device (nbd=URI) through mqblkd, against nbdkit memory and
# against mqblkd itself: verified data (fio crc32c, nbdcopy + cmp), the
# remote's flags passed through, multi-conn, the remote killed mid-run
# (EIO, no hang), a hung remote (EIO after io_timeout) and reconnection
# with retry=.
. "$(dirname "$0")/mqblkd-lib.sh"

REMOTE_PID=
REMOTE2_PID=
HANG_PID=
trap '[ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null;
      [ -n "$REMOTE_PID" ] && kill -9 "$REMOTE_PID" 2>/dev/null;
      [ -n "$REMOTE2_PID" ] && kill -9 "$REMOTE2_PID" 2>/dev/null;
      [ -n "$HANG_PID" ] && kill -9 "$HANG_PID" 2>/dev/null;
      rm -rf "$TESTTMP"' EXIT

rsock=$TESTTMP/remote.sock
ruri="nbd+unix:///?socket=$rsock"

# remote_start NBDKIT-ARGS...: nbdkit in the foreground on $rsock.
remote_start() {
	rm -f "$rsock"
	nbdkit -f -U "$rsock" "$@" 2>>"$TESTTMP/remote.log" &
	REMOTE_PID=$!
	wait_listening "$rsock" || die "nbdkit $* did not start"
}

# log_wait PATTERN: wait up to 10 s for a line of mqblkd's log to match.
log_wait() {
	for _ in $(seq 1000); do
		grep -q "$1" "$MQBLKD_LOG" && return 0
		sleep 0.01
	done
	return 1
}

remote_kill() {
	kill -9 "$REMOTE_PID"
	wait "$REMOTE_PID" 2>/dev/null || true
	REMOTE_PID=
}

# mqblkd_stop_any: SIGTERM; it must exit (any status: a final flush to a
# remote that is gone fails, and says so).
mqblkd_stop_any() {
	kill -TERM "$MQBLKD_PID"
	timeout 30 tail --pid="$MQBLKD_PID" -f /dev/null ||
		die "mqblkd did not exit after SIGTERM"
	wait "$MQBLKD_PID" 2>/dev/null || true
	MQBLKD_PID=
	cat "$MQBLKD_LOG" >&2
}

# can FLAG: nbdinfo --can FLAG on $uri: 0 yes, 2 no.
can() {
	local rc=0
	$CLIENT nbdinfo --can "$1" "$uri" || rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 2 ] || die "nbdinfo --can $1 failed ($rc)"
	return $rc
}

# verify_copy: random data in through $uri (the forwarding export) comes
# out of the remote ($ruri) and back out of $uri.
verify_copy() {
	head -c 8M /dev/urandom >"$TESTTMP/in.bin"
	$CLIENT nbdcopy "${@}" "$TESTTMP/in.bin" "$uri"
	$CLIENT nbdcopy "$ruri" "$TESTTMP/remote.bin"
	cmp -n 8388608 "$TESTTMP/in.bin" "$TESTTMP/remote.bin" ||
		die "the remote does not hold what was written through nbd="
	$CLIENT nbdcopy "$uri" "$TESTTMP/back.bin"
	cmp -n 8388608 "$TESTTMP/in.bin" "$TESTTMP/back.bin" ||
		die "nbd= does not read back what was written"
}

echo "== nbd= against nbdkit memory: data, flags, extents"
remote_start memory 64M
mqblkd_start nbd "nbd=$ruri" time_scale=0
verify_copy
$CLIENT nbdinfo "$uri" | tee "$TESTTMP/info"
grep -q 'export-size: 67108864' "$TESTTMP/info" || die "size not the remote's"
for f in flush fua trim zero fast-zero multi-conn; do
	can "$f" || die "nbd=: can $f is not passed through"
done
can read-only && die "nbd=: read-only though the remote is writable"
# A fresh remote is a hole past the data, and nbd= says so.
$CLIENT nbdinfo --map "$uri" | tee "$TESTTMP/map"
grep -Eq '^ *8388608 +58720256 +3 +hole,zero' "$TESTTMP/map" ||
	die "the remote's hole is not reported"
# Zeroes and discards read back as zeroes (memory trims to zero).
$CLIENT nbdsh -u "$uri" -c '
h.zero(65536, 0)
assert h.pread(65536, 0) == bytes(65536)
h.trim(65536, 65536)
assert h.pread(65536, 65536) == bytes(65536)
h.pwrite(b"\x5a" * 4096, 1 << 20, nbd.CMD_FLAG_FUA)
h.flush()
'
$CLIENT nbdsh -u "$ruri" -c 'assert h.pread(4096, 1 << 20) == b"\x5a" * 4096'
mqblkd_stop
remote_kill

echo "== a READ of zeroes costs no round trip for extents, BLOCK_STATUS does"
# Holes in a READ's data are sent as hole chunks only where the model can
# tell them for free; on a remote store that would be one more request
# to the remote (on the event loop) for every read with a zero block.
remote_start --filter=log memory 64M "logfile=$TESTTMP/remote-ops.log"
mqblkd_start nbd "nbd=$ruri" time_scale=0
$CLIENT nbdsh -u "$uri" -c '
h.pwrite(b"\x5a" * 4096, 0)
buf = h.pread(1 << 20, 0)
assert buf == b"\x5a" * 4096 + bytes((1 << 20) - 4096)
'
grep -q "Read " "$TESTTMP/remote-ops.log" || die "no read reached the remote"
if grep -q "Extents" "$TESTTMP/remote-ops.log"; then
	die "a READ asked the remote for extents: $(grep Extents "$TESTTMP/remote-ops.log")"
fi
$CLIENT nbdinfo --map "$uri" | grep -q "hole" || die "no hole in the map"
grep -q "Extents" "$TESTTMP/remote-ops.log" ||
	die "BLOCK_STATUS did not reach the remote"
mqblkd_stop
remote_kill

echo "== nbd= passes the remote's missing flags through"
remote_start -r --filter=nozero --filter=noextents memory 64M
mqblkd_start nbd "nbd=$ruri" time_scale=0
can read-only || die "a read-only remote gave a writable export"
can zero && die "can_zero though the remote has none"
$CLIENT nbdinfo --map "$uri" | grep -q 'data' ||
	die "a remote without extents must read as all data"
$CLIENT nbdsh -u "$uri" -c '
try:
    h.pwrite(b"x" * 512, 0)
    raise SystemExit("a write to a read-only remote succeeded")
except nbd.Error as e:
    assert e.errno in ("EPERM", "EROFS"), e.errno
'
mqblkd_stop
remote_kill

echo "== nbd_connections=2 is refused where the remote has no multi-conn"
remote_start --filter=multi-conn memory 64M multi-conn-mode=disable
rc=0
# (bounded: a server that took the keys would serve until stopped)
timeout 20 "$MQBLKD" -f -U "$TESTTMP/refused.sock" nbd "nbd=$ruri" \
	nbd_connections=2 2>"$TESTTMP/refused.log" || rc=$?
cat "$TESTTMP/refused.log"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || die "nbd_connections=2 was taken"
grep -q 'nbd_connections=2: nbd:.* does not offer multi-conn' \
	"$TESTTMP/refused.log" || die "no clear line for nbd_connections=2"
remote_kill

echo "== nbd= against mqblkd itself, 4 connections: fio crc32c, nbdcopy"
rsock2=$TESTTMP/mqblkd-remote.sock
"$MQBLKD" -f -v -U "$rsock2" ram size=64M time_scale=0 \
	2>"$TESTTMP/remote-mqblkd.log" &
REMOTE2_PID=$!
wait_listening "$rsock2" || die "remote mqblkd did not start"
ruri="nbd+unix:///?socket=$rsock2"
mqblkd_start nbd "nbd=$ruri" nbd_connections=4 nr_hw_queues=2 time_scale=0
can multi-conn || die "multi-conn not passed through"
# Four connections reached the remote at start-up.
n=$(grep -c "export 'ram0', structured" "$TESTTMP/remote-mqblkd.log")
[ "$n" -eq 4 ] || die "the remote saw $n connections, not 4"
verify_copy --connections=4
$CLIENT fio --name=nbd-verify --ioengine=nbd --uri="$uri" --rw=randrw \
	--bs=4k --iodepth=32 --size=32M --verify=crc32c --verify_fatal=1 \
	--output="$TESTTMP/fio.out"
cat "$TESTTMP/fio.out"
grep -E 'err= *0' "$TESTTMP/fio.out" >/dev/null || die "fio reported errors"
mqblkd_stop
kill -TERM "$REMOTE2_PID"
wait "$REMOTE2_PID" || die "the remote mqblkd did not exit cleanly"
REMOTE2_PID=
ruri="nbd+unix:///?socket=$rsock"

echo "== the remote killed mid-run: EIO, no hang, one log line"
remote_start memory 64M
mqblkd_start nbd "nbd=$ruri" time_scale=0
ready=$TESTTMP/running
$CLIENT nbdsh -u "$uri" -c "
import os, errno
buf = os.urandom(65536)
n = 0
while True:
    try:
        h.pwrite(buf, (n % 512) * 65536)
        assert h.pread(65536, (n % 512) * 65536) == buf
    except nbd.Error as e:
        assert n >= 100, e
        assert e.errno == 'EIO', e
        print('I/O failed after', n, 'rounds:', e.string)
        break
    n += 1
    if n == 100:
        open('$ready', 'w').close()
" &
client=$!
for _ in $(seq 1000); do [ -e "$ready" ] && break; sleep 0.01; done
[ -e "$ready" ] || die "the I/O loop did not start"
remote_kill
wait "$client" || die "the client did not see EIO"
$CLIENT nbdinfo "$uri" >/dev/null || die "mqblkd stopped answering"
n=$(grep -c 'connection lost' "$MQBLKD_LOG" || true)
[ "$n" -eq 1 ] || die "$n 'connection lost' lines, not 1"
mqblkd_stop_any

echo "== a hung remote: EIO after io_timeout"
remote_start memory 64M
mqblkd_start nbd "nbd=$ruri" time_scale=0 io_timeout=1000
kill -STOP "$REMOTE_PID"
$CLIENT nbdsh -u "$uri" -c '
try:
    h.pread(4096, 0)
    raise SystemExit("a read from a stopped remote succeeded")
except nbd.Error as e:
    assert e.errno == "EIO", e
'
kill -CONT "$REMOTE_PID"
grep -q 'no answer within io_timeout' "$MQBLKD_LOG" ||
	die "no log line for the timeout"
mqblkd_stop_any
remote_kill

echo "== retry=: the remote comes back, I/O goes on"
remote_start memory 64M
mqblkd_start nbd "nbd=$ruri" time_scale=0 retry=1 io_timeout=3000
$CLIENT nbdsh -u "$uri" -c 'h.pwrite(b"a" * 4096, 0)'
remote_kill
# The outage is noticed (the socket closed) before the remote returns.
log_wait 'connection lost'
grep -q 'connection lost.*reconnecting every 1 s' "$MQBLKD_LOG" ||
	die "no log line for the lost connection"
remote_start memory 64M
$CLIENT nbdsh -u "$uri" -c '
h.pwrite(b"b" * 4096, 8192)
assert h.pread(4096, 8192) == b"b" * 4096
'
grep -q 'reconnected after' "$MQBLKD_LOG" || die "no log line on reconnecting"
remote_kill
echo "== retry= with the remote gone for good: EIO after io_timeout"
$CLIENT nbdsh -u "$uri" -c '
try:
    h.pread(4096, 0)
    raise SystemExit("a read with no remote succeeded")
except nbd.Error as e:
    assert e.errno == "EIO", e
'
grep -q 'failing I/O with EIO' "$MQBLKD_LOG" || die "no log line for EIO"
mqblkd_stop_any

echo "== a remote that accepts and never answers: refused after io_timeout"
# At start-up and at a reload (which runs on mqblkd's main thread): before,
# libnbd's connect waited for ever.
hsock=$TESTTMP/hang.sock
python3 - "$hsock" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(16)
held = []
while True:
    held.append(s.accept()[0])
PY
HANG_PID=$!
wait_listening "$hsock" || die "the silent remote did not start"
huri="nbd+unix:///?socket=$hsock"
rc=0
timeout 20 "$MQBLKD" -f -U "$TESTTMP/h.sock" nbd "nbd=$huri" io_timeout=1000 \
	2>"$TESTTMP/hang.log" || rc=$?
cat "$TESTTMP/hang.log"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || die "start-up on a silent remote: rc $rc"
grep -qF "nbd=$huri: cannot connect: no answer within io_timeout" \
	"$TESTTMP/hang.log" || die "no reason for the silent remote"
printf '[a]\ndevice=ram\nsize=1M\n' >"$TESTTMP/hang.ini"
mqblkd_start -c "$TESTTMP/hang.ini"
# Once a connection is accepted, the main loop runs and watches SIGHUP.
$CLIENT nbdinfo --list "nbd+unix://?socket=$unixsocket" >/dev/null
printf '[b]\ndevice=nbd\nnbd=%s\nio_timeout=1000\n' "$huri" >>"$TESTTMP/hang.ini"
kill -HUP "$MQBLKD_PID"
log_wait "reload: .*nothing changed" ||
	die "the reload never gave up on the silent remote"
grep -q "reload: .*\[b\]: nbd: nbd=$huri: cannot connect: no answer within io_timeout" \
	"$MQBLKD_LOG" || die "the reload did not say why"
[ "$($CLIENT nbdinfo --list --json "nbd+unix://?socket=$unixsocket" |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["exports"]))')" = 1 ] ||
	die "the server does not serve [a] alone after the reload"
mqblkd_stop
kill "$HANG_PID"
wait "$HANG_PID" 2>/dev/null || true
HANG_PID=
echo "ok"
