#!/bin/bash
# mqblkd -c FILE reloads on SIGHUP, between RELOADING=1 and READY=1 on a
# NOTIFY_SOCKET this test owns: a section added is served, a section
# removed is offered no more while a connection already on it keeps
# working (its device and control node go once it closes), a section
# changed is refused with a line naming its key and serves on as it
# was.  A file that does not parse changes nothing; without -c there is
# nothing to reload and mqblkd serves on.
. "$(dirname "$0")/mqblkd-lib.sh"

NOTIFY_PID=
HOLD_PID=
trap '[ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null; [ -n "$NOTIFY_PID" ] && kill "$NOTIFY_PID" 2>/dev/null; [ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null; rm -rf "$TESTTMP"' EXIT

MQBLKCTL=$MQBLK_BUILD/mqblkctl
ctl=$TESTTMP/control.sock
ini=$TESTTMP/exports.ini
notify_sock=$TESTTMP/notify
notify_out=$TESTTMP/notify.out

# poll CMD...: until the shell command succeeds (20 s at most).
poll() {
	for _ in $(seq 1000); do
		eval "$1" && return 0
		sleep 0.02
	done
	cat "$notify_out" "$MQBLKD_LOG" >&2
	die "timed out waiting for: $1"
}

# nr_ready: how many READY=1 the service manager has had.
nr_ready() {
	grep -cx "MSG READY=1" "$notify_out" || true
}

# hup_and_wait: SIGHUP, then a RELOADING=1 and the READY=1 after it.
hup_and_wait() {
	local before
	before=$(nr_ready)
	kill -HUP "$MQBLKD_PID"
	poll "[ \$(nr_ready) -gt $before ]"
	awk -v n="$before" '/^MSG READY=1$/ { r++ }
		/^MSG RELOADING=1$/ && r == n { ok = 1 } END { exit !ok }' \
		"$notify_out" || die "no RELOADING=1 before READY=1 number $((before + 1))"
}

list() {
	nbdinfo --list "$uri" | sed -n 's/^export="\(.*\)":$/\1/p' | sort | tr '\n' ' '
}

grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$MQBLK_SRC/systemd/mqblkd.service" ||
	die "mqblkd.service: no ExecReload sending SIGHUP"

cat >"$ini" <<INI
[A]
device = ram
size = 2M

[B]
device = ram
size = 1M
INI

: >"$notify_out"
python3 "$SCRIPTS/notify_listen.py" "$notify_sock" "$notify_out" &
NOTIFY_PID=$!
poll "[ -S $notify_sock ]"
NOTIFY_SOCKET=$notify_sock mqblkd_start -c "$ini" --control "$ctl"
poll "[ \$(nr_ready) = 1 ]"
[ "$(list)" = "A B " ] || die "at start: $(list)"
nbdsh -u "nbd+unix:///A?socket=$unixsocket" \
	-c 'h.pwrite(b"\x11" * 4096, 0); h.flush()'

echo "== a connection on B is held across the reload"
python3 "$SCRIPTS/mqblkd_reload_hold.py" "$unixsocket" B "$TESTTMP" \
	>"$TESTTMP/hold.out" &
HOLD_PID=$!
poll "[ -e $TESTTMP/held ]"

echo "== reload: B dropped, C added, A's size changed"
cat >"$ini" <<INI
[A]
device = ram
size = 4M

[C]
device = ram
size = 1M
INI
hup_and_wait
grep -q "^MSG MONOTONIC_USEC=[0-9][0-9]*$" "$notify_out" ||
	die "RELOADING=1 without MONOTONIC_USEC"
[ "$(list)" = "A C " ] || die "after the reload: $(list)"
nbdinfo --size "nbd+unix:///B?socket=$unixsocket" 2>/dev/null &&
	die "B is still offered to new clients"
# A as it was: its size, its data; and one line saying why.
[ "$(nbdinfo --size "nbd+unix:///A?socket=$unixsocket")" = 2097152 ] ||
	die "A changed size"
nbdsh -u "nbd+unix:///A?socket=$unixsocket" \
	-c 'assert h.pread(4096, 0) == b"\x11" * 4096'
[ "$(grep -c "reload: \[A\] changed (size): refused" "$MQBLKD_LOG")" = 1 ] ||
	die "no one line refusing A's change"
# C serves, and is in the control tree, the metrics and the listing.
nbdsh -u "nbd+unix:///C?socket=$unixsocket" \
	-c 'h.pwrite(b"\x77" * 512, 4096); assert h.pread(512, 4096) == b"\x77" * 512'
"$MQBLKCTL" -s "$ctl" get C/stat >/dev/null || die "C has no control node"
"$MQBLKCTL" -s "$ctl" metrics | grep -q 'export="C"' || die "C: no metrics"
# B still has its held connection: its node stays until that ends.
"$MQBLKCTL" -s "$ctl" ls | grep -qx "B/" || die "B's node went too early"

echo "== D added while B drains: every live disk has a name of its own"
printf '[D]\ndevice = ram\nsize = 1M\n' >>"$ini"
hup_and_wait
[ "$(list)" = "A C D " ] || die "after adding D: $(list)"
disks=$(for e in A B C D; do "$MQBLKCTL" -s "$ctl" get $e/device/disk_name; done)
echo "disks: $(echo $disks)"
[ "$(sort -u <<<"$disks" | wc -l)" = 4 ] || die "two disks share a name"

echo "== B cannot come back while its held connection lasts"
cp "$ini" "$TESTTMP/ac.ini"
printf '[B]\ndevice = ram\nsize = 1M\n' >>"$ini"
hup_and_wait
grep -q "reload: \[B\] was removed and still serves connections.*nothing changed" \
	"$MQBLKD_LOG" || die "re-adding a draining B was not refused"
[ "$(list)" = "A C D " ] || die "after re-adding B too early: $(list)"
cp "$TESTTMP/ac.ini" "$ini"

echo "== the held connection on B works on, then leaves"
touch "$TESTTMP/go"
wait "$HOLD_PID" || die "the held connection failed"
HOLD_PID=
grep -qx "held ok" "$TESTTMP/hold.out" || die "the held connection: no ok"
poll "! \"$MQBLKCTL\" -s \"$ctl\" ls | grep -qx B/"
grep -q "\[B\]: removed, and no connection left: device destroyed" "$MQBLKD_LOG" ||
	die "B's device was not destroyed"
[ "$(list)" = "A C D " ] || die "after B left: $(list)"

echo "== D, with no connection, goes at once"
cp "$TESTTMP/ac.ini" "$ini"
sed -i '/^\[D\]/,$d' "$ini"
hup_and_wait
[ "$(list)" = "A C " ] || die "after removing D: $(list)"
poll "! \"$MQBLKCTL\" -s \"$ctl\" ls | grep -qx D/"
grep -q "\[D\]: removed, and no connection left: device destroyed" "$MQBLKD_LOG" ||
	die "D's device was not destroyed"

echo "== a file that does not parse changes nothing"
lines=$(wc -l <"$MQBLKD_LOG")
printf '[A]\ndevice = ram\nsize 4M\n' >"$ini"
hup_and_wait
tail -n +"$((lines + 1))" "$MQBLKD_LOG" | grep "reload: " >"$TESTTMP/said"
cat "$TESTTMP/said"
[ "$(wc -l <"$TESTTMP/said")" = 1 ] || die "not one line for a broken file"
grep -q "exports.ini: line 3: .*nothing changed" "$TESTTMP/said" ||
	die "the line does not name the file, the line and the outcome"
[ "$(list)" = "A C " ] || die "after a broken file: $(list)"
nbdsh -u "nbd+unix:///C?socket=$unixsocket" \
	-c 'assert h.pread(512, 4096) == b"\x77" * 512'
"$MQBLKCTL" -s "$ctl" ls | grep -qx "C/" || die "C's node went"
mqblkd_stop
wait "$NOTIFY_PID" || die "the notify listener failed"
NOTIFY_PID=

echo "== without -c there is nothing to reload"
mqblkd_start ram size=1M
kill -HUP "$MQBLKD_PID"
poll "grep -q 'SIGHUP: nothing to reload' $MQBLKD_LOG"
nbdinfo --size "$uri" >/dev/null || die "mqblkd died on SIGHUP"
mqblkd_stop
echo PASS
