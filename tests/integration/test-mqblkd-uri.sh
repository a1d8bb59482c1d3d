#!/bin/bash
# mqblkd names where it listens, once, at the default verbosity: one line
# of NBD URIs (like nbdkit's --print-uri) that clients take as written.
. "$(dirname "$0")/mqblkd-lib.sh"

# wait_uri_line: until the log holds the "listening on" line (10 s).
wait_uri_line() {
	local _
	for _ in $(seq 500); do
		grep -q "^mqblkd: listening on " "$MQBLKD_LOG" && return 0
		kill -0 "$MQBLKD_PID" 2>/dev/null || break
		sleep 0.02
	done
	cat "$MQBLKD_LOG" >&2
	die "no 'listening on' line"
}

# A relative Unix socket in a directory whose name needs escaping in a
# URI, and TCP on loopback with a port the kernel picks.  No -v.
dir="$TESTTMP/a b%c"
mkdir "$dir"
: >"$MQBLKD_LOG"
(cd "$dir" && exec "$MQBLKD" -f -U s.sock -b 127.0.0.1 -p 0 \
	ram size=3M) 2>>"$MQBLKD_LOG" &
MQBLKD_PID=$!
wait_uri_line
cat "$MQBLKD_LOG"
[ "$(grep -c "^mqblkd: listening on " "$MQBLKD_LOG")" = 1 ] ||
	die "not one 'listening on' line"
read -r -a uris < <(sed -n 's/^mqblkd: listening on //p' "$MQBLKD_LOG")
[ "${#uris[@]}" = 2 ] || die "expected 2 URIs, got: ${uris[*]}"
[ "${uris[0]}" = "nbd+unix:///?socket=$TESTTMP/a%20b%25c/s.sock" ] ||
	die "Unix URI: ${uris[0]}"
[[ "${uris[1]}" =~ ^nbd://127\.0\.0\.1:[0-9]+/$ ]] ||
	die "TCP URI: ${uris[1]}"
[ "${uris[1]}" != "nbd://127.0.0.1:0/" ] || die "TCP URI names port 0"
# Each URI reaches the export as written.
for u in "${uris[@]}"; do
	echo "== nbdinfo $u"
	nbdinfo --size "$u" > "$TESTTMP/size"
	[ "$(cat "$TESTTMP/size")" = $((3 << 20)) ] ||
		die "$u: size $(cat "$TESTTMP/size")"
done
mqblkd_stop

# --tls=require: the nbds schemes.
printf 'alice:%s\n' 000102030405060708090a0b0c0d0e0f > "$TESTTMP/psk"
chmod 600 "$TESTTMP/psk"
: >"$MQBLKD_LOG"
"$MQBLKD" -f -U "$TESTTMP/t.sock" --tls=require --tls-psk "$TESTTMP/psk" \
	ram size=1M 2>>"$MQBLKD_LOG" &
MQBLKD_PID=$!
wait_uri_line
grep -qx "mqblkd: listening on nbds+unix:///?socket=$TESTTMP/t.sock" \
	"$MQBLKD_LOG" || die "--tls=require: no nbds+unix URI"
mqblkd_stop

# Socket activation: the sockets systemd passed are named too.
: >"$MQBLKD_LOG"
systemd-socket-activate -l "$TESTTMP/sa.sock" -- \
	"$MQBLKD" -f ram size=1M 2>>"$MQBLKD_LOG" &
MQBLKD_PID=$!
for _ in $(seq 500); do
	[ -S "$TESTTMP/sa.sock" ] && break
	sleep 0.02
done
[ -S "$TESTTMP/sa.sock" ] || die "systemd-socket-activate did not bind"
# systemd-socket-activate starts mqblkd on the first connection.
nbdinfo --size "nbd+unix:///?socket=$TESTTMP/sa.sock" >/dev/null
wait_uri_line
grep -qx "mqblkd: listening on nbd+unix:///?socket=$TESTTMP/sa.sock" \
	"$MQBLKD_LOG" || die "socket activation: no Unix URI"
mqblkd_stop
echo PASS
