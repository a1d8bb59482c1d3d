#!/bin/bash
# mqblkd over TLS (OpenSSL) with libnbd/GnuTLS clients: x509 with
# certificates made now (never committed), client certificates with
# --tls-verify-peer, TLS-PSK from a psktool file, a client held to
# TLS 1.2, and the three --tls modes.
. "$(dirname "$0")/mqblkd-lib.sh"

pki=$TESTTMP/pki
mkdir -p "$pki/srv" "$pki/cli" "$pki/anon"
(
	cd "$pki"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem \
		-out srv/ca-cert.pem -days 2 -subj "/CN=mqblk test CA"
	openssl req -newkey rsa:2048 -nodes -keyout srv/server-key.pem \
		-out server.csr -subj "/CN=localhost"
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > server.ext
	openssl x509 -req -in server.csr -CA srv/ca-cert.pem \
		-CAkey ca-key.pem -CAcreateserial -out srv/server-cert.pem \
		-days 2 -extfile server.ext
	openssl req -newkey rsa:2048 -nodes -keyout cli/client-key.pem \
		-out client.csr -subj "/CN=alice"
	openssl x509 -req -in client.csr -CA srv/ca-cert.pem \
		-CAkey ca-key.pem -CAcreateserial -out cli/client-cert.pem \
		-days 2
	cp srv/ca-cert.pem cli/
	cp srv/ca-cert.pem anon/
	psktool -u alice -p keys.psk
	psktool -u mallory -p mallory.psk
) >"$TESTTMP/pki.log" 2>&1 || {
	cat "$TESTTMP/pki.log"
	die "could not make test certificates"
}
# GnuTLS's system priority file, with TLS 1.3 switched off: the client
# below speaks TLS 1.2 only, like nbd-client.
printf '[overrides]\ndisabled-version = tls1.3\n' > "$pki/tls12.conf"

# connect URI [EXPECT]: nbdsh connects, checks TLS, writes and reads
# back; EXPECT=fail wants the connection refused instead.
connect() {
	local uri=$1 expect=${2:-ok}
	nbdsh -c "
import os
h.set_uri_allow_local_file(True)
try:
    h.connect_uri('$uri')
except nbd.Error as e:
    if '$expect' == 'fail':
        print('refused as expected:', e)
        raise SystemExit(0)
    raise
assert '$expect' == 'ok', 'connected: %s' % '$uri'
assert h.get_tls_negotiated()
data = os.urandom(65536)
h.pwrite(data, 1 << 20)
assert h.pread(65536, 1 << 20) == data
print('TLS ok:', '$uri')
" || die "connect $uri ($expect)"
}

port=$((20000 + RANDOM % 20000))

echo "== x509 and PSK, --tls=require"
mqblkd_start -b 127.0.0.1 -p "$port" --tls=require \
	--tls-certificates="$pki/srv" --tls-psk="$pki/keys.psk" \
	ram size=64M
s=$unixsocket
wait_listening "127.0.0.1:$port" || die "no TCP listener"
connect "nbds+unix:///?socket=$s&tls-certificates=$pki/cli"
connect "nbds://localhost:$port/?tls-certificates=$pki/anon"
connect "nbds+unix://alice@/?socket=$s&tls-psk-file=$pki/keys.psk"
connect "nbds+unix://mallory@/?socket=$s&tls-psk-file=$pki/mallory.psk" fail
connect "nbd+unix:///?socket=$s" fail
GNUTLS_SYSTEM_PRIORITY_FILE=$pki/tls12.conf \
	connect "nbds+unix:///?socket=$s&tls-certificates=$pki/cli"
GNUTLS_SYSTEM_PRIORITY_FILE=$pki/tls12.conf \
	connect "nbds+unix://alice@/?socket=$s&tls-psk-file=$pki/keys.psk"
mqblkd_stop
grep -q "TLS TLSv1.3 .*, user alice" "$MQBLKD_LOG" ||
	die "no TLS 1.3 PSK session for alice"
[ "$(grep -c "TLS TLSv1.2 " "$MQBLKD_LOG")" = 2 ] ||
	die "the TLS 1.2 clients did not get TLS 1.2"
grep -q "TLS TLSv1.2 ECDHE-PSK" "$MQBLKD_LOG" ||
	die "no TLS 1.2 PSK cipher suite"

echo "== --tls-verify-peer"
mqblkd_start --tls=require --tls-certificates="$pki/srv" \
	--tls-verify-peer ram size=64M
connect "nbds+unix:///?socket=$unixsocket&tls-certificates=$pki/cli"
connect "nbds+unix:///?socket=$unixsocket&tls-certificates=$pki/anon" fail
mqblkd_stop
grep -q "TLS TLSv1.3 .*, user alice" "$MQBLKD_LOG" ||
	die "the client certificate's CN is not the TLS user"
grep -q "peer did not return a certificate" "$MQBLKD_LOG" ||
	die "no line for the client without a certificate"

echo "== --tls-verify-peer with certificates and PSK: a PSK identity is a peer"
mqblkd_start --tls=require --tls-certificates="$pki/srv" \
	--tls-psk="$pki/keys.psk" --tls-verify-peer ram size=64M
s=$unixsocket
connect "nbds+unix:///?socket=$s&tls-certificates=$pki/cli"
connect "nbds+unix:///?socket=$s&tls-certificates=$pki/anon" fail
connect "nbds+unix://alice@/?socket=$s&tls-psk-file=$pki/keys.psk"
connect "nbds+unix://mallory@/?socket=$s&tls-psk-file=$pki/mallory.psk" fail
GNUTLS_SYSTEM_PRIORITY_FILE=$pki/tls12.conf \
	connect "nbds+unix:///?socket=$s&tls-certificates=$pki/cli"
GNUTLS_SYSTEM_PRIORITY_FILE=$pki/tls12.conf \
	connect "nbds+unix:///?socket=$s&tls-certificates=$pki/anon" fail
GNUTLS_SYSTEM_PRIORITY_FILE=$pki/tls12.conf \
	connect "nbds+unix://alice@/?socket=$s&tls-psk-file=$pki/keys.psk"
GNUTLS_SYSTEM_PRIORITY_FILE=$pki/tls12.conf \
	connect "nbds+unix://mallory@/?socket=$s&tls-psk-file=$pki/mallory.psk" \
	fail
grep -q "TLS TLSv1.3 TLS_AES_128_GCM_SHA256, user alice" "$MQBLKD_LOG" ||
	die "verify-peer: no TLS 1.3 PSK session"
grep -q "TLS TLSv1.2 [A-Z0-9-]*PSK[A-Z0-9-]*, user alice" "$MQBLKD_LOG" ||
	die "verify-peer: no TLS 1.2 PSK session"
grep -q "session id context" "$MQBLKD_LOG" &&
	die "verify-peer: TLS 1.3 PSK hit the missing session id context"

# The same with openssl s_client, through a proxy that does the NBD
# part (STARTTLS) in clear: each case is one connection, and the
# server's log says how its handshake ended.
python3 "$MQBLK_SRC/tests/integration/nbd_starttls_proxy.py" "$s" \
	"$TESTTMP/proxy.port" &
proxy=$!
trap '[ -n "$proxy" ] && kill "$proxy" 2>/dev/null; [ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null; rm -rf "$TESTTMP"' EXIT
for _ in $(seq 500); do
	[ -s "$TESTTMP/proxy.port" ] && break
	sleep 0.02
done
proxy_port=$(cat "$TESTTMP/proxy.port") || die "no proxy"
key=$(cut -d: -f2 "$pki/keys.psk")
badkey=$(cut -d: -f2 "$pki/mallory.psk")
# sclient ok|fail [USER] -- S_CLIENT-ARGS...: one connection through the
# proxy, judged by the server's next TLS line for the proxy's pid.
sclient() {
	local expect=$1 user=$2 line pat k
	shift 3
	pat="^mqblkd: client [0-9]* \(unix:pid=$proxy,uid=[0-9]*\): TLS (TLSv|handshake failed)"
	k=$(grep -cE "$pat" "$MQBLKD_LOG" || true)
	timeout 20 openssl s_client -connect "127.0.0.1:$proxy_port" "$@" \
		</dev/null >"$TESTTMP/s_client.out" 2>&1 || true
	line=
	for _ in $(seq 500); do
		line=$(grep -E "$pat" "$MQBLKD_LOG" | sed -n "$((k + 1))p")
		[ -n "$line" ] && break
		sleep 0.02
	done
	[ -n "$line" ] || {
		cat "$MQBLKD_LOG" "$TESTTMP/s_client.out"
		die "s_client $*: no TLS line in the log"
	}
	echo "s_client $*: $line"
	case $expect in
	ok) [[ $line == *"TLS TLSv"* ]] || die "s_client $*: refused" ;;
	fail) [[ $line == *"handshake failed"* ]] || die "s_client $*: served" ;;
	esac
	if [ -n "$user" ]; then
		[[ $line == *", user $user" ]] || die "s_client $*: not user $user"
	elif [ "$expect" = ok ]; then
		[[ $line != *", user "* ]] || die "s_client $*: unproven user"
	fi
}
cert=(-cert "$pki/cli/client-cert.pem" -key "$pki/cli/client-key.pem")
sclient ok alice -- -tls1_3 -psk_identity alice -psk "$key"
sclient ok alice -- -tls1_2 -cipher PSK -psk_identity alice -psk "$key"
sclient ok alice -- -tls1_3 "${cert[@]}"
sclient ok alice -- -tls1_2 "${cert[@]}"
sclient fail "" -- -tls1_3
sclient fail "" -- -tls1_2
sclient fail "" -- -tls1_3 -psk_identity alice -psk "$badkey"
sclient fail "" -- -tls1_2 -cipher PSK -psk_identity alice -psk "$badkey"
# A PSK whose hash no offered suite has: OpenSSL drops it unchecked and
# falls back to certificates, so the identity proves nothing.
sclient fail "" -- -tls1_3 -ciphersuites TLS_AES_256_GCM_SHA384 \
	-psk_identity alice -psk "$badkey"
mqblkd_stop

echo "== no --tls-verify-peer: an unproven PSK identity is no user"
mqblkd_start --tls=require --tls-certificates="$pki/srv" \
	--tls-psk="$pki/keys.psk" ram size=64M
sclient ok "" -- -tls1_3 -ciphersuites TLS_AES_256_GCM_SHA384 \
	-psk_identity alice -psk "$badkey"
sclient ok alice -- -tls1_3 -psk_identity alice -psk "$key"
kill "$proxy"
wait "$proxy" 2>/dev/null || true
proxy=
mqblkd_stop

echo "== --tls=on: TLS offered, plaintext allowed"
mqblkd_start --tls=on --tls-psk="$pki/keys.psk" ram size=64M
connect "nbds+unix://alice@/?socket=$unixsocket&tls-psk-file=$pki/keys.psk"
[ "$(nbdinfo --size "$uri")" = 67108864 ] || die "--tls=on: no plaintext"
mqblkd_stop

echo "== --tls=off: STARTTLS refused"
mqblkd_start ram size=64M
connect "nbds+unix://alice@/?socket=$unixsocket&tls-psk-file=$pki/keys.psk" \
	fail
[ "$(nbdinfo --size "$uri")" = 67108864 ] || die "--tls=off: plaintext"
mqblkd_stop

echo "== bad credentials stop start-up"
"$MQBLKD" -f -U "$TESTTMP/x.sock" --tls-certificates="$TESTTMP" ram \
	2>"$TESTTMP/err" && die "started without server-cert.pem"
grep -q "server-cert.pem" "$TESTTMP/err" || die "no line naming the file"
printf 'alice:nothex\n' > "$TESTTMP/bad.psk"
"$MQBLKD" -f -U "$TESTTMP/x.sock" --tls-psk="$TESTTMP/bad.psk" ram \
	2>"$TESTTMP/err" && die "started with a bad PSK file"
grep -q "line 1" "$TESTTMP/err" || die "no line naming the bad PSK line"
echo "== a secret the group or others may read: served, with a warning"
chmod 600 "$pki/srv/server-key.pem" "$pki/keys.psk"
mqblkd_start --tls=on --tls-certificates="$pki/srv" \
	--tls-psk="$pki/keys.psk" ram size=64M
connect "nbds+unix://alice@/?socket=$unixsocket&tls-psk-file=$pki/keys.psk"
mqblkd_stop
grep -q "readable by" "$MQBLKD_LOG" && die "warned about mode 0600 files"
chmod 640 "$pki/srv/server-key.pem"
chmod 604 "$pki/keys.psk"
mqblkd_start --tls=on --tls-certificates="$pki/srv" \
	--tls-psk="$pki/keys.psk" ram size=64M
connect "nbds+unix:///?socket=$unixsocket&tls-certificates=$pki/cli"
mqblkd_stop
grep -q "warning: --tls-certificates $pki/srv/server-key.pem is readable by its group (mode 0640)" \
	"$MQBLKD_LOG" || die "no warning for a group-readable key"
grep -q "warning: --tls-psk $pki/keys.psk is readable by others (mode 0604)" \
	"$MQBLKD_LOG" || die "no warning for a world-readable PSK file"
echo "tls ok"
