#!/bin/bash
# mqblkd's log under a hostile client: a flood of refused connections,
# of unknown export names, and accept() out of descriptors give one line
# per second per cause with the count of lines suppressed (every event
# accounted for, the log bounded), and the names a client sends reach
# the log escaped.
. "$(dirname "$0")/mqblkd-lib.sh"

# suppressed PATTERN: lines matching PATTERN plus the suppressed counts
# they and the exit summary carry.
accounted() {
	python3 - "$MQBLKD_LOG" "$1" <<'PY'
import re, sys
lines = [l for l in open(sys.argv[1], errors="replace") if re.search(sys.argv[2], l)]
total = 0
for l in lines:
    m = re.search(r"(\d+) similar lines? suppressed", l)
    if m:
        total += int(m.group(1))
    if not re.search(r": \d+ similar lines? suppressed$", l):
        total += 1  # the line is an event itself, not only a summary
print(len(lines), total)
PY
}

echo "== a flood of refused connections"
mqblkd_start --max-connections 1 ram size=16M
python3 - "$unixsocket" >"$TESTTMP/flood" <<'PY'
import socket, sys
path = sys.argv[1]
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    return s
# Hold the one connection allowed: it has its greeting once accepted.
while True:
    hold = conn()
    if hold.recv(8) == b"NBDMAGIC":
        break
    hold.close()
refused = 0
for _ in range(3000):
    s = conn()
    if s.recv(8) == b"":
        refused += 1
    s.close()
print(refused)
PY
refused=$(cat "$TESTTMP/flood")
[ "$refused" -ge 2900 ] || die "only $refused of 3000 refused"
mqblkd_stop 2>/dev/null
read -r nr total < <(accounted "too many connections")
echo "refused $refused: $nr lines account for $total"
[ "$total" = "$refused" ] || die "$refused refused, $total accounted for"
[ "$nr" -lt 50 ] || die "$nr lines for $refused refused connections"
[ "$(stat -c %s "$MQBLKD_LOG")" -lt 20000 ] || die "the log grew"

echo "== a flood of unknown export names"
mqblkd_start ram size=16M
python3 - "$unixsocket" <<'PY'
import socket, struct, sys
IHAVEOPT, OPT_EXPORT_NAME = 0x49484156454F5054, 1
for i in range(500):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sys.argv[1])
    assert s.recv(18)[:8] == b"NBDMAGIC"
    name = b"nope%d" % i
    s.sendall(struct.pack(">I", 1) +
              struct.pack(">QII", IHAVEOPT, OPT_EXPORT_NAME, len(name)) + name)
    while s.recv(4096):  # the server disconnects
        pass
    s.close()
PY
mqblkd_stop 2>/dev/null
read -r nr total < <(accounted "unknown export( '|: [0-9]+ similar)")
echo "unknown exports: $nr lines account for $total"
[ "$total" = 500 ] || die "500 unknown export names, $total accounted for"
[ "$nr" -lt 50 ] || die "$nr lines for 500 unknown export names"

echo "== accept() out of descriptors pauses instead of spinning"
# Find how many descriptors the server holds once it serves, then
# allow it three more: the fourth client meets EMFILE.
mqblkd_start -t 1 ram size=16M
nfd=$(ls "/proc/$MQBLKD_PID/fd" | wc -l)
mqblkd_stop 2>/dev/null
unixsocket=$TESTTMP/mqblkd.sock
rm -f "$unixsocket"
: >"$MQBLKD_LOG"
prlimit --nofile=$((nfd + 3)) "$MQBLKD" -f -v -t 1 -U "$unixsocket" \
	ram size=16M 2>>"$MQBLKD_LOG" &
MQBLKD_PID=$!
wait_listening "$unixsocket" || die "mqblkd did not start"
python3 - "$unixsocket" "$MQBLKD_LOG" <<'PY'
import socket, sys, time
path, log = sys.argv[1], sys.argv[2]
socks = []
for _ in range(20):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)  # the backlog takes them all
    socks.append(s)
deadline = time.monotonic() + 10
while "Too many open files" not in open(log).read():
    assert time.monotonic() < deadline, "no EMFILE in the log"
    time.sleep(0.02)
# A fixed window with clients pending: accept() may fail about ten
# times a second (the pause is 100 ms), not in a loop.
time.sleep(2)
for s in socks:
    s.close()
PY
mqblkd_stop 2>/dev/null
read -r nr total < <(accounted "accept: ")
echo "EMFILE: $nr lines account for $total failed accept() calls"
[ "$total" -ge 1 ] || die "no failed accept"
[ "$total" -lt 200 ] || die "$total failed accept() calls in about 2 s: spinning"
grep -q "not accepting for 100 ms" "$MQBLKD_LOG" || die "no pause line"

echo "== client strings are escaped"
mqblkd_start ram size=16M
python3 - "$unixsocket" <<'PY'
import socket, struct, sys
NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
OPT_EXPORT_NAME, OPT_GO = 1, 7
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sys.argv[1])
    assert s.recv(18)[:8] == b"NBDMAGIC"
    s.sendall(struct.pack(">I", 1))
    return s
bad = b"evil\n\x1b[31mmqblkd: forged line\\"
s = conn()  # GO: answered with ERR_UNKNOWN
data = struct.pack(">I", len(bad)) + bad + struct.pack(">H", 0)
s.sendall(struct.pack(">QII", IHAVEOPT, OPT_GO, len(data)) + data)
s.recv(4096)
s.close()
s = conn()  # EXPORT_NAME: disconnected
s.sendall(struct.pack(">QII", IHAVEOPT, OPT_EXPORT_NAME, len(bad)) + bad)
s.recv(4096)
s.close()
PY
mqblkd_stop 2>/dev/null
grep -q "forged line" "$MQBLKD_LOG" || die "the names were not logged"
grep "^mqblkd: forged" "$MQBLKD_LOG" && die "a client forged a log line"
grep -q $'\x1b' "$MQBLKD_LOG" && die "an ESC reached the log"
[ "$(grep -cF 'evil\x0a\x1b[31mmqblkd: forged line\\' "$MQBLKD_LOG")" = 2 ] ||
	die "the names are not escaped as \\xNN"
echo "logs ok"
