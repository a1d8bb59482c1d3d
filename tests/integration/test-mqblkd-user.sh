#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# mqblkd -u USER -g GROUP: root binds, then serves as USER.  The NBD
# socket and the pidfile sit in a directory only root may write, so a
# server that serves from there made them before it dropped root; the
# process's uids, gids and supplementary groups are then USER's (all
# four of each: root cannot come back), it serves, and its control
# socket is USER's: root and USER use it, a third uid is refused.  A
# user or group that does not exist is one line and exit 1 before
# anything listens; a non-root mqblkd cannot become another user.
# Needs root (exits 77 otherwise).
. "$MQBLK_SRC/tests/integration/mqblkd-lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "$0: SKIP: -u needs root"
	exit 77
fi
for u in nobody daemon; do
	id "$u" >/dev/null 2>&1 || {
		echo "$0: SKIP: no user $u"
		exit 77
	}
done
MQBLKCTL=$MQBLK_BUILD/mqblkctl
nobody_uid=$(id -u nobody)
nobody_gid=$(id -g nobody)
daemon_gid=$(id -g daemon)
# The others must reach the control socket's directory.
chmod 0755 "$TESTTMP"
mkdir -m 0700 "$TESTTMP/root-only"
mkdir -m 0755 "$TESTTMP/ctl"
sock=$TESTTMP/root-only/nbd.sock
ctl=$TESTTMP/ctl/control.sock

# status FIELD: the four ids of /proc/PID/status's FIELD line.
status() {
	sed -n "s/^$1:[[:space:]]*//p" "/proc/$MQBLKD_PID/status" | xargs
}

start() {
	rm -f "$sock" "$ctl"
	: >"$MQBLKD_LOG"
	"$MQBLKD" -f -U "$sock" --control "$ctl" \
		--pidfile "$TESTTMP/root-only/pid" "$@" null size=16M \
		2>>"$MQBLKD_LOG" &
	MQBLKD_PID=$!
	wait_listening "$sock" || die "mqblkd $*: $(cat "$MQBLKD_LOG")"
	[ "$(cat "$TESTTMP/root-only/pid")" = "$MQBLKD_PID" ] ||
		die "pidfile: $(cat "$TESTTMP/root-only/pid")"
}

start -u nobody
[ "$(status Uid)" = "$nobody_uid $nobody_uid $nobody_uid $nobody_uid" ] ||
	die "-u nobody: Uid: $(status Uid)"
[ "$(status Gid)" = "$nobody_gid $nobody_gid $nobody_gid $nobody_gid" ] ||
	die "-u nobody: Gid: $(status Gid) (nobody's group is $nobody_gid)"
want_groups=$(id -G nobody | tr ' ' '\n' | sort -n | xargs)
[ "$(status Groups | tr ' ' '\n' | sort -n | xargs)" = "$want_groups" ] ||
	die "-u nobody: Groups: $(status Groups) (nobody's: $want_groups)"
size=$($CLIENT nbdinfo --size "nbd+unix:///?socket=$sock")
[ "$size" = 16777216 ] || die "-u nobody served size $size"
[ "$(stat -c '%U %a' "$ctl")" = "nobody 600" ] ||
	die "control socket: $(stat -c '%U %a' "$ctl"), want nobody 600"
"$MQBLKCTL" -s "$ctl" ls | grep -qx 'nullb0/' || die "root: mqblkctl ls"
setpriv --reuid nobody --regid "$nobody_gid" --clear-groups \
	"$MQBLKCTL" -s "$ctl" ls | grep -qx 'nullb0/' || die "nobody: mqblkctl ls"
rc=0
setpriv --reuid daemon --regid "$daemon_gid" --clear-groups \
	"$MQBLKCTL" -s "$ctl" ls >/dev/null 2>"$TESTTMP/daemon.err" || rc=$?
[ $rc -ne 0 ] && grep -q 'Permission denied' "$TESTTMP/daemon.err" ||
	die "daemon on nobody's control socket: rc $rc, $(cat "$TESTTMP/daemon.err")"
mqblkd_stop 2>/dev/null

# -g: that group, and no supplementary group of root's.
start -u nobody -g daemon
[ "$(status Gid)" = "$daemon_gid $daemon_gid $daemon_gid $daemon_gid" ] ||
	die "-u nobody -g daemon: Gid: $(status Gid)"
status Groups | tr ' ' '\n' | grep -qx 0 && die "root's group 0 kept: $(status Groups)"
$CLIENT nbdinfo --size "nbd+unix:///?socket=$sock" >/dev/null ||
	die "-u nobody -g daemon does not serve"
mqblkd_stop 2>/dev/null

# Names that do not exist: one line, exit 1, nothing made.
for args in "-u no-such-user-mqblk" "-g no-such-group-mqblk" "-u 4000000"; do
	rm -f "$sock"
	rc=0
	# shellcheck disable=SC2086 # split on purpose
	"$MQBLKD" -f -U "$sock" $args null size=1M 2>"$TESTTMP/err" || rc=$?
	[ $rc = 1 ] || die "mqblkd $args: exit $rc"
	[ "$(wc -l <"$TESTTMP/err")" = 1 ] && grep -q "^mqblkd: ${args%% *} " "$TESTTMP/err" ||
		die "mqblkd $args: $(cat "$TESTTMP/err")"
	[ ! -e "$sock" ] || die "mqblkd $args made its socket"
done

# Not root: the change is refused, the server does not serve.
install -d -o nobody "$TESTTMP/nobody"
rc=0
setpriv --reuid nobody --regid "$nobody_gid" --clear-groups \
	"$MQBLKD" -f -U "$TESTTMP/nobody/nbd.sock" -u daemon null size=1M \
	2>"$TESTTMP/err" || rc=$?
[ $rc = 1 ] && grep -q 'Operation not permitted' "$TESTTMP/err" ||
	die "non-root -u daemon: exit $rc, $(cat "$TESTTMP/err")"
echo "user: -u/-g drop root after binding; the control socket is the user's"
