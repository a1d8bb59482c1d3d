#!/bin/bash
# The hostile-input suite (tests/hostile) against three mqblkd servers:
# plain with three exports, --tls=require and --tls=on.  Afterwards each
# server must still serve and exit 0 on SIGTERM.
. "$(dirname "$0")/mqblkd-lib.sh"

pki=$TESTTMP/pki
mkdir -p "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/server-key.pem" \
	-out "$pki/server-cert.pem" -days 2 -subj "/CN=localhost" \
	>"$TESTTMP/pki.log" 2>&1 || die "could not make a test certificate"

truncate -s 16M "$TESTTMP/ro.img"
cat > "$TESTTMP/hostile.ini" <<INI
[rw]
device=ram
size=64M
time_scale=0
[ro]
device=file
file=$TESTTMP/ro.img
readonly=1
[nofast]
device=null
memory_backed=0
discard=0
size=64M
time_scale=0
INI

start_extra() {
	local sock=$1
	shift
	"$MQBLKD" -f -v -U "$sock" "$@" 2>>"$TESTTMP/extra.log" &
	EXTRA_PIDS+=($!)
	wait_listening "$sock" || die "mqblkd $* did not start"
}
EXTRA_PIDS=()
trap '[ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null;
      for p in "${EXTRA_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
      rm -rf "$TESTTMP"' EXIT

max_conn=8
hs_timeout=2
mqblkd_start -c "$TESTTMP/hostile.ini" --max-connections $max_conn \
	--handshake-timeout $hs_timeout -t 2
start_extra "$TESTTMP/req.sock" --tls=require \
	--tls-certificates="$pki" ram size=16M
start_extra "$TESTTMP/on.sock" --tls=on --tls-certificates="$pki" \
	ram size=16M

rc=0
python3 "$HOSTILE/hostile.py" "$unixsocket" "$TESTTMP/req.sock" \
	"$TESTTMP/on.sock" $max_conn $hs_timeout || rc=$?

# Everyone still served, nothing crashed.
nbdsh -u "$uri" -c 'h.pwrite(b"ok" * 256, 0); assert h.pread(512, 0) == b"ok" * 256' ||
	die "the server no longer serves after the hostile suite"
for p in "${EXTRA_PIDS[@]}"; do
	kill -TERM "$p"
	wait "$p" || die "a TLS server exited with $? after SIGTERM"
done
EXTRA_PIDS=()
mqblkd_stop
[ $rc -eq 0 ] || die "hostile cases failed"
