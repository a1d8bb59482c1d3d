# Helpers for the mqblkd integration tests; source it, do not run it.
#
# On top of lib.sh (device_args, die, $TESTTMP, $DEVICES): start mqblkd
# in the foreground on a Unix socket in $TESTTMP, wait until it accepts,
# run client commands, then SIGTERM it and insist on a clean exit 0.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MQBLKD=$MQBLK_BUILD/mqblkd
HOSTILE=$MQBLK_SRC/tests/hostile
[ -x "$MQBLKD" ] || {
	echo "$0: $MQBLKD not built" >&2
	exit 1
}
MQBLKD_PID=
MQBLKD_LOG=$TESTTMP/mqblkd.log
trap '[ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null; rm -rf "$TESTTMP"' EXIT

# wait_listening PATH|HOST:PORT: until a connect succeeds (10 s at most).
wait_listening() {
	python3 - "$1" <<'PY' || return 1
import socket, sys, time
target = sys.argv[1]
deadline = time.monotonic() + 10
while True:
    try:
        if target.startswith("/"):
            s = socket.socket(socket.AF_UNIX)
            s.connect(target)
        else:
            host, port = target.rsplit(":", 1)
            s = socket.create_connection((host, int(port)))
        s.close()
        sys.exit(0)
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(1)
        time.sleep(0.02)
PY
}

# mqblkd_start [MQBLKD-ARGS...]: serve on $unixsocket; sets $uri.
mqblkd_start() {
	unixsocket=$TESTTMP/mqblkd.sock
	rm -f "$unixsocket"
	: >"$MQBLKD_LOG"
	"$MQBLKD" -f -v -U "$unixsocket" "$@" 2>>"$MQBLKD_LOG" &
	MQBLKD_PID=$!
	if ! wait_listening "$unixsocket"; then
		cat "$MQBLKD_LOG" >&2
		die "mqblkd $* did not start"
	fi
	uri="nbd+unix:///?socket=$unixsocket"
	export uri unixsocket
}

# mqblkd_stop: SIGTERM, then the exit status must be 0.
mqblkd_stop() {
	local rc=0
	kill -TERM "$MQBLKD_PID"
	wait "$MQBLKD_PID" || rc=$?
	MQBLKD_PID=
	cat "$MQBLKD_LOG" >&2
	[ $rc -eq 0 ] || die "mqblkd exited with $rc after SIGTERM"
}

# mqblkd_serve DEVICE [MQBLKD-OPTION...] -- COMMAND: run the shell string
# COMMAND (with $uri and $unixsocket) against mqblkd serving DEVICE with
# the keys device_args gives.
mqblkd_serve() {
	local dev=$1
	shift
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ "${1:-}" = -- ] || die "mqblkd_serve: missing --"
	shift
	device_args "$dev"
	mqblkd_start "${opts[@]}" "${ARGS[@]}"
	local rc=0
	bash -c "$*" || rc=$?
	mqblkd_stop
	return $rc
}

# mqblkd_nbdsh DEVICE SCRIPT [MQBLKD-OPTION...]: the nbdkit tests' nbdsh
# scripts, unchanged, against mqblkd.
mqblkd_nbdsh() {
	local dev=$1 script=$2
	shift 2
	echo "== mqblkd: $(basename "$script") on $dev $*"
	MQBLK_DEVICE=$dev mqblkd_serve "$dev" "$@" -- \
		"nbdsh --base-allocation -u \"\$uri\" -c - < $script"
}

# mqblkd_storm SCRIPT ARGS...: run a storm script of tests/integration
# beside fio ($fio_pid); if it fails, stop fio, show the log and fail,
# naming the run's $seed.
mqblkd_storm() {
	local rc=0
	python3 "$SCRIPTS/$1" "${@:2}" || rc=$?
	[ $rc -eq 0 ] && return 0
	kill -9 "$fio_pid" 2>/dev/null || true
	grep -v ': fault requeue=' "$MQBLKD_LOG" | tail -40 >&2
	die "$1 failed (seed $seed)"
}

# mqblkd_wait_io EXPORT...: through $CTL, wait (30 s at most) until each
# EXPORT has completed a read or a write, so that a storm starts once its
# load runs (fio may take a while to connect and lay out its jobs).
mqblkd_wait_io() {
	local x _
	for x in "$@"; do
		for _ in $(seq 1500); do
			# shellcheck disable=SC2046 # the stat's fields, one a word
			set -- $($CTL get "$x/stat")
			[ "${1:-0}" -gt 0 ] || [ "${5:-0}" -gt 0 ] && continue 2
			kill -0 "$fio_pid" 2>/dev/null || die "fio ended before $x saw I/O"
			sleep 0.02
		done
		die "no I/O reached $x in 30 s"
	done
}

# mqblkd_settled DISK: through $CTL, DISK has nothing in flight, is not
# frozen, and no hw queue has a request active or a tag or scheduler tag
# held.  Adds the hw queues it checked to $settled_queues.
mqblkd_settled() {
	local x=$1 q a t v
	[ "$($CTL get "$x/inflight")" = "0 0" ] ||
		die "$x: in flight after the storm: $($CTL get "$x/inflight")"
	[ "$($CTL get "$x/mq/frozen")" = 0 ] || die "$x: still frozen"
	for q in $($CTL ls "$x/mq" | grep / | tr -d /); do
		a=$($CTL get "$x/mq/$q/active")
		[ "$a" = 0 ] || die "$x: hw queue $q counts $a active"
		for t in tags sched_tags; do
			v=$($CTL get "$x/mq/$q/$t")
			case $v in
			none | *busy=0) ;;
			*) die "$x/mq/$q/$t: $v after the storm" ;;
			esac
		done
		settled_queues=$((settled_queues + 1))
	done
}
