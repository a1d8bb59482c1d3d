#!/bin/bash
# mqblkd under systemd: Type=notify through a NOTIFY_SOCKET this test
# owns (READY=1 only once the exports answer, STOPPING=1 when SIGTERM
# starts the drain), and systemd/mqblkd.service's own command line under
# systemd-socket-activate with the control socket it names.
. "$(dirname "$0")/mqblkd-lib.sh"

command -v systemd-socket-activate >/dev/null ||
	die "systemd-socket-activate missing (tests/setup-deps.sh installs it)"
NOTIFY_PID=
trap '[ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null; [ -n "$NOTIFY_PID" ] && kill "$NOTIFY_PID" 2>/dev/null; rm -rf "$TESTTMP"' EXIT

# notify_start NAME [NBD_SOCKET]: a NOTIFY_SOCKET at $TESTTMP/NAME.notify,
# its lines in $notify_out.
notify_start() {
	notify_sock=$TESTTMP/$1.notify
	notify_out=$TESTTMP/$1.out
	: >"$notify_out"
	python3 "$SCRIPTS/notify_listen.py" "$notify_sock" "$notify_out" \
		${2:+"$2"} &
	NOTIFY_PID=$!
	for _ in $(seq 500); do
		[ -S "$notify_sock" ] && return 0
		sleep 0.02
	done
	die "the notify listener did not bind"
}

# wait_line PATTERN: until $notify_out has a line matching (20 s).
wait_line() {
	for _ in $(seq 1000); do
		grep -Eq "$1" "$notify_out" && return 0
		sleep 0.02
	done
	cat "$notify_out" "$MQBLKD_LOG" >&2
	die "no notification matching '$1'"
}

# stop_all: SIGTERM mqblkd (exit 0), then the listener must have seen
# STOPPING=1 and exited.
stop_all() {
	mqblkd_stop
	wait "$NOTIFY_PID" || die "the notify listener failed"
	NOTIFY_PID=
	cat "$notify_out"
	grep -qx "MSG STOPPING=1" "$notify_out" || die "no STOPPING=1"
}

cat > "$TESTTMP/exports.ini" <<INI
[one]
device = ram
size = 2M

[two]
device = null
size = 1M
INI

echo "== READY=1 once the exports answer, STOPPING=1 on SIGTERM"
sock=$TESTTMP/nbd.sock
notify_start plain "$sock"
: >"$MQBLKD_LOG"
NOTIFY_SOCKET=$notify_sock "$MQBLKD" -f -U "$sock" -c "$TESTTMP/exports.ini" \
	2>>"$MQBLKD_LOG" &
MQBLKD_PID=$!
wait_line "^CHECK "
cat "$notify_out"
grep -qx "CHECK ok one two" "$notify_out" ||
	die "at READY=1 the exports did not answer"
[ "$(grep -c "^MSG READY=1$" "$notify_out")" = 1 ] || die "not one READY=1"
grep -q "^MSG STATUS=serving 2 exports$" "$notify_out" || die "no STATUS"
grep -q "STOPPING=1" "$notify_out" && die "STOPPING=1 before SIGTERM"
stop_all
# READY=1 came before STOPPING=1
[ "$(grep -nx "MSG READY=1" "$notify_out" | cut -d: -f1)" -lt \
	"$(grep -nx "MSG STOPPING=1" "$notify_out" | cut -d: -f1)" ] ||
	die "STOPPING=1 before READY=1"

echo "== systemd/mqblkd.service's command line, socket-activated"
unit=$MQBLK_SRC/systemd/mqblkd.service
grep -qx "Type=notify" "$unit" || die "mqblkd.service: not Type=notify"
grep -qx "Requires=mqblkd.socket" "$unit" || die "no Requires=mqblkd.socket"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
read -r -a argv <<<"$exec_start"
[ "${argv[0]}" = /usr/bin/mqblkd ] || die "ExecStart: ${argv[0]}"
argv[0]=$MQBLKD
for i in "${!argv[@]}"; do
	case ${argv[$i]} in
	/etc/mqblk/mqblkd.conf) argv[$i]=$TESTTMP/exports.ini ;;
	/run/mqblk/control.sock) argv[$i]=$TESTTMP/control.sock ;;
	/*) [ "$i" = 0 ] || die "ExecStart: unexpected path ${argv[$i]}" ;;
	esac
done
grep -q -- "--control /run/mqblk/control.sock" <<<"$exec_start" ||
	die "ExecStart: no --control /run/mqblk/control.sock"
grep -qx "ListenStream=/run/mqblk/nbd.sock" "$MQBLK_SRC/systemd/mqblkd.socket" ||
	die "mqblkd.socket: no /run/mqblk/nbd.sock"
# systemd's own checker on the two units (the binary where it was built;
# the man page they name need not be installed for this).
mkdir "$TESTTMP/units"
cp "$MQBLK_SRC/systemd/mqblkd.socket" "$MQBLK_SRC/systemd/mqblkd.service" \
	"$TESTTMP/units/"
sed -i "s|^ExecStart=/usr/bin/mqblkd|ExecStart=$MQBLKD|" \
	"$TESTTMP/units/mqblkd.service"
(cd "$TESTTMP/units" &&
	systemd-analyze verify ./mqblkd.socket ./mqblkd.service) \
	> "$TESTTMP/verify" 2>&1 || true
cat "$TESTTMP/verify"
if grep -v "Command 'man " "$TESTTMP/verify" | grep -q .; then
	die "systemd-analyze verify complains about the units"
fi

sock=$TESTTMP/sa.sock
notify_start activated
: >"$MQBLKD_LOG"
systemd-socket-activate -l "$sock" -E NOTIFY_SOCKET="$notify_sock" -- \
	"${argv[@]}" 2>>"$MQBLKD_LOG" &
MQBLKD_PID=$!
for _ in $(seq 500); do
	[ -S "$sock" ] && break
	sleep 0.02
done
[ -S "$sock" ] || die "systemd-socket-activate did not bind"
# The first connection starts mqblkd.
nbdinfo --list "nbd+unix:///?socket=$sock" > "$TESTTMP/list"
grep -q '^export="two"' "$TESTTMP/list" || die "activated: no export two"
wait_line "^MSG READY=1$"
"$MQBLK_BUILD/mqblkctl" -s "$TESTTMP/control.sock" ls > "$TESTTMP/ls"
grep -q "one" "$TESTTMP/ls" || die "mqblkctl ls on the unit's control socket"
grep -q "listening on nbd+unix:///?socket=$sock" "$MQBLKD_LOG" ||
	die "activated: no URI line"
stop_all
echo PASS
