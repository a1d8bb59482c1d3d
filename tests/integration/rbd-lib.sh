# Helpers for the rbd tests; source it, do not run it.
#
# On top of mqblkd-lib.sh and ceph-lib.sh: one Ceph cluster per test
# script (rbd_setup), and a server of either front end in the background
# on a Unix socket (rbd_server_start nbdkit|mqblkd KEYS...), so that a test
# can kill -9 it, or watch it while the cluster goes away.
. "$(dirname "${BASH_SOURCE[0]}")/mqblkd-lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/ceph-lib.sh"

FRONTENDS=(nbdkit mqblkd)
SERVER_PID=
SERVER_LOG=$TESTTMP/server.log

rbd_cleanup() {
	[ -z "$SERVER_PID" ] || kill -9 "$SERVER_PID" 2>/dev/null || :
	[ -z "$MQBLKD_PID" ] || kill -9 "$MQBLKD_PID" 2>/dev/null || :
	ceph_stop
	rm -rf "$TESTTMP"
}

# rbd_setup: the cluster, stopped whatever happens.
rbd_setup() {
	ceph_require
	trap rbd_cleanup EXIT
	ceph_start
}

# rbd_server_start FRONTEND KEYS...: serve device=rbd with KEYS (conf= is
# added) on $TESTTMP/rbd.sock; sets $uri and $SERVER_PID.
rbd_server_start() {
	local fe=$1
	shift
	local sock=$TESTTMP/rbd.sock
	rm -f "$sock"
	: >"$SERVER_LOG"
	case $fe in
	nbdkit)
		# Not through mqblk_nbdkit: $! must be nbdkit's own PID.
		env ${MQBLK_PRELOAD:+"LD_PRELOAD=$MQBLK_PRELOAD"} \
			${MQBLK_PRELOAD:+ASAN_OPTIONS=detect_leaks=0} \
			nbdkit -f -U "$sock" "$PLUGIN" device=rbd \
			"conf=$CEPH_CONF" "$@" 2>>"$SERVER_LOG" &
		;;
	mqblkd)
		"$MQBLKD" -f -v -U "$sock" rbd "conf=$CEPH_CONF" "$@" \
			2>>"$SERVER_LOG" &
		;;
	*) die "rbd_server_start: unknown front end $fe" ;;
	esac
	SERVER_PID=$!
	if ! wait_listening "$sock"; then
		cat "$SERVER_LOG" >&2
		die "$fe rbd $* did not start"
	fi
	uri="nbd+unix:///?socket=$sock"
	export uri
}

# rbd_server_stop: SIGTERM; the exit status must be 0.
rbd_server_stop() {
	local rc=0
	kill -TERM "$SERVER_PID"
	wait "$SERVER_PID" || rc=$?
	SERVER_PID=
	cat "$SERVER_LOG" >&2
	[ $rc -eq 0 ] || die "server exited with $rc after SIGTERM"
}

# rbd_server_kill9: kill -9, as a crash would.
rbd_server_kill9() {
	kill -9 "$SERVER_PID"
	wait "$SERVER_PID" 2>/dev/null || :
	SERVER_PID=
}

# rbd_nbdsh SCRIPT-TEXT: run python under nbdsh against $uri.
rbd_nbdsh() {
	$CLIENT nbdsh -u "$uri" -c "$1"
}
