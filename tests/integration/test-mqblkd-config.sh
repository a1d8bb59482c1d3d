#!/bin/bash
# mqblkd's command line and configuration: --help, refusals with one
# line, INI files, --demo, TCP and Unix together, socket activation, and
# the daemon with its pidfile.
. "$(dirname "$0")/mqblkd-lib.sh"

# refuse PATTERN ARGS...: mqblkd exits non-zero with one line matching.
refuse() {
	local pattern=$1 rc=0
	shift
	echo "== refuse: $*"
	timeout 20 "$MQBLKD" -f -U "$TESTTMP/never.sock" "$@" \
		>"$TESTTMP/out" 2>"$TESTTMP/err" || rc=$?
	cat "$TESTTMP/err"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || die "mqblkd accepted: $* ($rc)"
	grep -Eq -- "$pattern" "$TESTTMP/err" ||
		die "no line matching '$pattern' for: $*"
	[ "$(grep -c . "$TESTTMP/err")" -eq 1 ] ||
		die "more than one line for: $*"
}

truncate -s 1M "$TESTTMP/small.img"
refuse "unknown device 'no-such-device' \(known: .*ram" no-such-device
refuse "ram: unknown key 'no_such_key' \(accepted: size" ram no_such_key=1
refuse "size" ram size=12Q
refuse "file" file "file=$TESTTMP/no-such-file.img"
refuse "'banana' is not KEY=VALUE" ram banana
refuse "--threads=0: expected 1..256" -t 0 ram
refuse "--tls=maybe" --tls=maybe ram
refuse "--tls=require needs --tls-certificates or --tls-psk" \
	--tls=require ram
refuse "-c FILE takes no DEVICE" -c /dev/null ram
refuse "no-such.ini: cannot open" -c "$TESTTMP/no-such.ini"
refuse "^mqblkd: $TESTTMP: is a directory, not a config file$" -c "$TESTTMP"
printf 'device=ram\n' > "$TESTTMP/bad1.ini"
refuse "line 1: key 'device' outside any \[export\] section" \
	-c "$TESTTMP/bad1.ini"
printf '[disk]\ndevice=ram\nsize=1M\nbogus=1\n' > "$TESTTMP/bad2.ini"
refuse "\[disk\]: ram: unknown key 'bogus'" -c "$TESTTMP/bad2.ini"
printf '[a]\nsize=1M\n' > "$TESTTMP/bad3.ini"
refuse "\[a\]: device=NAME is required" -c "$TESTTMP/bad3.ini"
# A section or key given twice is an error naming both lines, however
# far apart; so is an indented line (inih would glue it to the key
# before).  On the command line, DEVICE and device= both name the
# device, which may be named once (other keys: the last value wins).
printf '[a]\ndevice=null\nsize=1M\n[b]\ndevice=ram\n\n[a]\nbs=4096\n' \
	> "$TESTTMP/dup1.ini"
refuse "dup1.ini: line 7: section \[a\] again \(first on line 1\)" \
	-c "$TESTTMP/dup1.ini"
printf '[a]\ndevice=null\nsize=1M\n; a comment\nsize=2M\n' \
	> "$TESTTMP/dup2.ini"
refuse "dup2.ini: line 5: key 'size' again in \[a\] \(first on line 3\)" \
	-c "$TESTTMP/dup2.ini"
{
	printf '[a]\ndevice=null\nsize=1M\n'
	printf 'rules=%0300d\n' 0 # longer than inih's line buffer
	printf 'size=2M\n'
} > "$TESTTMP/dup3.ini"
refuse "dup3.ini: line 5: key 'size' again in \[a\] \(first on line 3\)" \
	-c "$TESTTMP/dup3.ini"
printf '[a]\ndevice=null\nsize=1M\n  2M\n' > "$TESTTMP/dup4.ini"
refuse "dup4.ini: line 4: an indented line continues 'size' \(line 3\)" \
	-c "$TESTTMP/dup4.ini"
refuse "'ram' and 'device=null': the device twice" ram device=null
refuse "'device=ram' and 'device=null': the device twice" \
	device=ram device=null
# Bytes from the file or the command line reach the error line escaped.
printf '[a\033[31m]\ndevice=nu\001ll\n' > "$TESTTMP/bin.ini"
refuse "\[a\\\\x1b\[31m\]: unknown device 'nu\\\\x01ll'" -c "$TESTTMP/bin.ini"
refuse "unknown device 'ra\\\\x0am'" $'ra\nm'
grep -q $'\033' "$TESTTMP/err" && die "an ESC reached the error line"
# Out of descriptors while making 1000 exports (each file export holds
# its file open; interrupt threads hold none): one clear line, no abort.
for i in $(seq 1000); do
	printf '[e%d]\ndevice=file\nfile=%s\n' "$i" "$TESTTMP/small.img"
done > "$TESTTMP/many.ini"
rc=0
timeout 120 prlimit --nofile=256 "$MQBLKD" -f -U "$TESTTMP/many.sock" \
	-c "$TESTTMP/many.ini" 2>"$TESTTMP/err" || rc=$?
cat "$TESTTMP/err"
[ $rc = 1 ] || die "1000 exports, 256 descriptors: exit $rc, not 1"
grep -q "Too many open files" "$TESTTMP/err" ||
	die "1000 exports: no line naming the error"
[ "$(grep -c . "$TESTTMP/err")" = 1 ] || die "1000 exports: not one line"

"$MQBLKD" --help > "$TESTTMP/help"
for word in --port --bind --unix --foreground --pidfile --threads \
	--control --control-group --control-timeout --trace-dir \
	--readonly --max-connections --handshake-timeout \
	"--tls=off|on|require" --tls-certificates --tls-psk \
	--tls-verify-peer --config --demo "time_scale=" "null:" "ram:" \
	"file:" "memory_backed=" "irqmode="; do
	grep -q -- "$word" "$TESTTMP/help" || die "--help lacks $word"
done

# An INI file: one export per section; a device with two disks gives
# SECTION/DISK names.
cat > "$TESTTMP/exports.ini" <<INI
; two models side by side
[fast]
device = ram
size = 32M
time_scale = 0

[pair]
device=null
nr_devices=2
memory_backed=1
size=16M

[image]
device=file
file=$TESTTMP/small.img
INI
echo "== INI file"
mqblkd_start -c "$TESTTMP/exports.ini"
nbdinfo --list "$uri" > "$TESTTMP/list"
cat "$TESTTMP/list"
for e in fast pair/nullb0 pair/nullb1 image; do
	grep -q "^export=\"$e\":" "$TESTTMP/list" || die "INI: no export $e"
done
[ "$(nbdinfo --size "nbd+unix:///fast?socket=$unixsocket")" = 33554432 ] ||
	die "INI: fast has the wrong size"
[ "$(nbdinfo --size "nbd+unix:///pair/nullb1?socket=$unixsocket")" = \
	16777216 ] || die "INI: pair/nullb1 has the wrong size"
nbdsh -u "nbd+unix:///image?socket=$unixsocket" \
	-c 'h.pwrite(b"\x5a" * 4096, 8192); h.flush()'
mqblkd_stop
cmp -n 4096 -i 0:8192 <(printf '\x5a%.0s' $(seq 4096)) "$TESTTMP/small.img" ||
	die "INI: the file export did not write its image"

# --demo, and the same with no DEVICE at all: a rack of small models.
for args in --demo ""; do
	echo "== demo: mqblkd $args"
	# shellcheck disable=SC2086 # empty on purpose
	mqblkd_start $args
	nbdinfo --list "$uri" > "$TESTTMP/list"
	mqblkd_stop
	cat "$TESTTMP/list"
	grep -q '^export="ram":' "$TESTTMP/list" || die "demo: no ram"
	grep -q '^export="null":' "$TESTTMP/list" || die "demo: no null"
	grep -A3 '^export="null-zoned":' "$TESTTMP/list" |
		grep -q "zoned host-managed: 16 zones of 4 MB" ||
		die "demo: no zoned null"
	grep -A3 '^export="smr":' "$TESTTMP/list" |
		grep -q "host-managed SMR disk" || die "demo: no smr"
	! grep -q '^export="file' "$TESTTMP/list" ||
		die "demo: file needs an image and must be left out"
	[ "$(grep -c '^export=' "$TESTTMP/list")" -ge 2 ] ||
		die "demo: fewer than 2 exports"
done

# TCP and Unix at once.
port=$((20000 + RANDOM % 20000))
echo "== TCP 127.0.0.1:$port and Unix"
mqblkd_start -b 127.0.0.1 -p "$port" ram size=1M
wait_listening "127.0.0.1:$port" || die "no TCP listener"
[ "$(nbdinfo --size "nbd://127.0.0.1:$port")" = 1048576 ] || die "TCP"
[ "$(nbdinfo --size "$uri")" = 1048576 ] || die "Unix"
mqblkd_stop

# systemd socket activation: the socket is fd 3, LISTEN_PID is ours.
echo "== socket activation"
sock=$TESTTMP/activated.sock
python3 - "$sock" "$MQBLKD" 2>>"$MQBLKD_LOG" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(16)
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
env = dict(os.environ, LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
os.execve(sys.argv[2], [sys.argv[2], "-f", "-v", "ram", "size=2M"], env)
PY
MQBLKD_PID=$!
wait_listening "$sock" || die "socket activation: nothing listens"
[ "$(nbdinfo --size "nbd+unix:///?socket=$sock")" = 2097152 ] ||
	die "socket activation: wrong export"
mqblkd_stop
grep -q "socket activation: 1 socket" "$MQBLKD_LOG" ||
	die "socket activation was not used"

# -U never takes the path of a live server (one left by a dead server
# is replaced), nor anything that is not a socket.
echo "== -U and a live server"
mqblkd_start ram size=1M
timeout 10 "$MQBLKD" -f -U "$unixsocket" ram size=2M 2>"$TESTTMP/err" &&
	die "a second server took a live server's socket"
grep -q "another server listens there" "$TESTTMP/err" ||
	die "no line for the live socket: $(cat "$TESTTMP/err")"
[ "$(nbdinfo --size "$uri")" = 1048576 ] || die "the first server lost its socket"
kill -9 "$MQBLKD_PID"
wait "$MQBLKD_PID" 2>/dev/null || true
MQBLKD_PID=
[ -S "$unixsocket" ] || die "kill -9 left no socket behind"
"$MQBLKD" -f -v -U "$unixsocket" ram size=2M 2>>"$MQBLKD_LOG" &
MQBLKD_PID=$!
wait_listening "$unixsocket" || die "a dead server's socket was not replaced"
[ "$(nbdinfo --size "$uri")" = 2097152 ] || die "a dead server's socket was kept"
mqblkd_stop
: >"$TESTTMP/file"
refuse "exists and is not a socket" -f -U "$TESTTMP/file" ram

# tcp_listeners PID: how many TCP sockets PID listens on.
tcp_listeners() {
	python3 - "$1" <<'PY'
import os, sys
pid = sys.argv[1]
inodes = set()
for fd in os.listdir("/proc/%s/fd" % pid):
    try:
        t = os.readlink("/proc/%s/fd/%s" % (pid, fd))
    except OSError:
        continue
    if t.startswith("socket:["):
        inodes.add(t[8:-1])
n = 0
for f in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        rows = open(f).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        col = row.split()
        if col[3] == "0A" and col[9] in inodes:  # LISTEN
            n += 1
print(n)
PY
}

# systemd-socket-activate: it binds, and on the first connection execs
# mqblkd with the socket as fd 3.  With -f and without (the daemon must
# take the socket before it forks), and never a listener of its own.
command -v systemd-socket-activate >/dev/null ||
	die "systemd-socket-activate missing (tests/setup-deps.sh installs it)"
# A daemon the old way would outlive a failed test: its pidfile says.
trap '[ -s "$TESTTMP/sa.pid" ] && kill -9 "$(cat "$TESTTMP/sa.pid")" 2>/dev/null; [ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null; rm -rf "$TESTTMP"' EXIT
for fg in -f ""; do
	echo "== systemd-socket-activate, mqblkd ${fg:-(daemon)}"
	sock=$TESTTMP/sa.sock
	rm -f "$sock" "$TESTTMP/sa.pid"
	: >"$MQBLKD_LOG"
	systemd-socket-activate -l "$sock" -- "$MQBLKD" $fg -v \
		--pidfile "$TESTTMP/sa.pid" ram size=3M 2>>"$MQBLKD_LOG" &
	MQBLKD_PID=$!
	for _ in $(seq 500); do
		[ -S "$sock" ] && break
		sleep 0.02
	done
	[ -S "$sock" ] || die "systemd-socket-activate did not bind"
	# The first connection starts mqblkd; it must be served.
	[ "$(timeout 20 nbdinfo --size "nbd+unix:///?socket=$sock")" = 3145728 ] ||
		die "socket activation ${fg:-(daemon)}: not served"
	pid=$(cat "$TESTTMP/sa.pid")
	[ "$(tcp_listeners "$pid")" = 0 ] ||
		die "socket activation ${fg:-(daemon)}: mqblkd listens on TCP"
	[ "$(nbdinfo --size "nbd+unix:///?socket=$sock")" = 3145728 ] ||
		die "socket activation ${fg:-(daemon)}: second client"
	if [ -n "$fg" ]; then
		[ "$pid" = "$MQBLKD_PID" ] || die "-f: the pid changed"
		mqblkd_stop
		grep -q "socket activation: 1 socket" "$MQBLKD_LOG" ||
			die "socket activation was not used"
	else
		wait "$MQBLKD_PID" || die "the daemon's parent failed"
		MQBLKD_PID=$pid
		kill -TERM "$pid"
		timeout 20 tail --pid="$pid" -f /dev/null ||
			die "daemon did not exit"
		MQBLKD_PID=
	fi
done

# The daemon: returns once it serves, writes its pid, drains on SIGTERM.
echo "== daemon with --pidfile"
"$MQBLKD" -U "$TESTTMP/d.sock" --pidfile "$TESTTMP/pid" ram size=1M ||
	die "the daemon failed to start"
[ "$(nbdinfo --size "nbd+unix:///?socket=$TESTTMP/d.sock")" = 1048576 ] ||
	die "daemon: wrong export"
pid=$(cat "$TESTTMP/pid")
kill -0 "$pid" || die "daemon: pidfile names no process"
kill -TERM "$pid"
timeout 20 tail --pid="$pid" -f /dev/null || die "daemon did not exit"
[ ! -e "$TESTTMP/pid" ] || die "daemon left its pidfile"
[ ! -e "$TESTTMP/d.sock" ] || die "daemon left its socket"
"$MQBLKD" -U "$TESTTMP/d.sock" no-such-device 2>"$TESTTMP/err" &&
	die "the daemon started with a bad device"
grep -q "unknown device" "$TESTTMP/err" || die "daemon: no error line"
echo "config ok"
