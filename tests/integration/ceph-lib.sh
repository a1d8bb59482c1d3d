# A one-node Ceph cluster for the tests; source it, do not run it.
#
# ceph_start starts one monitor and one OSD (memstore, or bluestore on a
# sparse file with CEPH_STORE=bluestore) on 127.0.0.1 (or CEPH_ADDR, an
# address of this host that a qemu guest can reach), everything under a
# short temporary directory, makes the pool "rbd" and exports CEPH_CONF.
# ceph_stop stops exactly the daemons it started, by the PIDs they wrote
# (OSD first: an OSD stopped after its mon waits for it), and removes the
# directory.  ceph_osd_stop and ceph_osd_start stop and restart the OSD.
#
# Without the packages (tests/setup-deps.sh installs them) ceph_require
# exits 77, which ctest counts as a skip.
#
# shellcheck disable=SC2034 # the variables are for the sourcing tests

CEPH_DIR=
CEPH_MON_PID=
CEPH_OSD_PID=

ceph_require() {
	local b
	for b in ceph-mon ceph-osd ceph-authtool monmaptool ceph rbd; do
		if ! command -v "$b" >/dev/null; then
			echo "$0: SKIP: $b not installed (tests/setup-deps.sh installs ceph-mon, ceph-osd and ceph-common)" >&2
			exit 77
		fi
	done
}

# A free TCP port on the cluster's address for the monitor (bind port 0,
# read it back).
ceph_free_port() {
	python3 -c 'import socket, sys
s = socket.socket()
s.bind((sys.argv[1], 0))
print(s.getsockname()[1])' "${CEPH_ADDR:-127.0.0.1}"
}

# ceph_cli ARGS...: the ceph CLI, which hangs on some commands without a
# mgr, so always under a time limit.
ceph_cli() {
	timeout -k 2 30 ceph --conf "$CEPH_CONF" "$@"
}

# ceph_wait_pid FILE: until the daemon has written its pid file (10 s).
ceph_wait_pid() {
	local i
	for i in $(seq 500); do
		[ -s "$1" ] && return 0
		sleep 0.02
	done
	return 1
}

ceph_osd_start() {
	rm -f "$CEPH_DIR/run/osd.0.pid"
	ceph-osd --conf "$CEPH_CONF" -i 0 2>>"$CEPH_DIR/log/osd.0.stderr" ||
		{ cat "$CEPH_DIR/log/osd.0.log" >&2; die "ceph-osd did not start"; }
	ceph_wait_pid "$CEPH_DIR/run/osd.0.pid" || die "ceph-osd wrote no pid file"
	CEPH_OSD_PID=$(cat "$CEPH_DIR/run/osd.0.pid")
	ceph_wait_osd up
}

# ceph_wait_osd up|down: until the monitor says osd.0 is up (or down).
ceph_wait_osd() {
	local i
	for i in $(seq 300); do
		ceph_cli osd dump 2>/dev/null | grep -q "^osd\.0 $1 " && return 0
		sleep 0.1
	done
	die "osd.0 is not $1 after 30 s"
}

# ceph_osd_stop: SIGTERM to the OSD, and wait until it is gone and the
# monitor has marked it down.
ceph_osd_stop() {
	ceph_kill_wait "$CEPH_OSD_PID"
	CEPH_OSD_PID=
	ceph_cli osd down 0 >/dev/null 2>&1 || true
	ceph_wait_osd down
}

# ceph_kill_wait PID: SIGTERM, then up to 20 s for it to go, then SIGKILL.
ceph_kill_wait() {
	local i
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null || return 0
	for i in $(seq 200); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
}

ceph_start() {
	ceph_require
	local port fsid osd_uuid key
	# Admin sockets are Unix sockets: keep the path short.
	CEPH_DIR=$(mktemp -d /tmp/mqceph.XXXXXX)
	mkdir -p "$CEPH_DIR/run" "$CEPH_DIR/log" "$CEPH_DIR/mon" "$CEPH_DIR/osd"
	CEPH_CONF=$CEPH_DIR/ceph.conf
	export CEPH_CONF
	port=$(ceph_free_port)
	fsid=$(uuidgen)
	local addr=${CEPH_ADDR:-127.0.0.1} net=127.0.0.0/8
	[ "$addr" = 127.0.0.1 ] || net=$addr/32
	CEPH_MON_ADDR=$addr:$port
	local store=${CEPH_STORE:-memstore}
	cat >"$CEPH_CONF" <<EOF
[global]
fsid = $fsid
mon host = [v1:$CEPH_MON_ADDR]
ms bind msgr2 = false
public addr = $addr
cluster addr = $addr
public network = $net
cluster network = $net
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $CEPH_DIR/keyring
run dir = $CEPH_DIR/run
admin socket = $CEPH_DIR/run/\$name.asok
pid file = $CEPH_DIR/run/\$name.pid
log file = $CEPH_DIR/log/\$name.log
mon cluster log file = $CEPH_DIR/log/cluster.log
crash dir = $CEPH_DIR/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon mgr mkfs grace = 86400
paxos propose interval = 0.1
[mon]
mon data = $CEPH_DIR/mon
keyring = $CEPH_DIR/mon/keyring
[osd]
osd data = $CEPH_DIR/osd
keyring = $CEPH_DIR/osd/keyring
osd objectstore = $store
memstore device bytes = ${CEPH_MEMSTORE_BYTES:-1073741824}
memstore page set = true
bluestore block path = $CEPH_DIR/osd.block
bluestore block size = ${CEPH_BLUESTORE_BYTES:-4294967296}
bluestore block create = true
osd max object name len = 256
osd max object namespace len = 64
EOF
	ceph-authtool --create-keyring "$CEPH_DIR/mon.keyring" --gen-key \
		-n mon. --cap mon 'allow *' >/dev/null
	ceph-authtool --create-keyring "$CEPH_DIR/keyring" --gen-key \
		-n client.admin --cap mon 'allow *' --cap osd 'allow *' \
		--cap mgr 'allow *' >/dev/null
	ceph-authtool "$CEPH_DIR/mon.keyring" \
		--import-keyring "$CEPH_DIR/keyring" >/dev/null
	monmaptool --create --fsid "$fsid" \
		--addv a "[v1:$CEPH_MON_ADDR]" "$CEPH_DIR/monmap" >/dev/null
	ceph-mon --conf "$CEPH_CONF" --mkfs -i a --monmap "$CEPH_DIR/monmap" \
		--keyring "$CEPH_DIR/mon.keyring" ||
		die "ceph-mon --mkfs failed"
	ceph-mon --conf "$CEPH_CONF" -i a ||
		{ cat "$CEPH_DIR/log/mon.a.log" >&2; die "ceph-mon did not start"; }
	ceph_wait_pid "$CEPH_DIR/run/mon.a.pid" || die "ceph-mon wrote no pid file"
	CEPH_MON_PID=$(cat "$CEPH_DIR/run/mon.a.pid")

	# ceph-osd --mkfs --key does not write the keyring: we do.
	osd_uuid=$(uuidgen)
	key=$(ceph-authtool --gen-print-key)
	printf '{"cephx_secret": "%s"}\n' "$key" |
		ceph_cli osd new "$osd_uuid" -i - >/dev/null ||
		die "ceph osd new failed"
	printf '[osd.0]\n\tkey = %s\n' "$key" >"$CEPH_DIR/osd/keyring"
	ceph-osd --conf "$CEPH_CONF" -i 0 --mkfs --osd-uuid "$osd_uuid" \
		>"$CEPH_DIR/log/osd-mkfs.log" 2>&1 ||
		{ cat "$CEPH_DIR/log/osd-mkfs.log" >&2; die "ceph-osd --mkfs failed"; }
	ceph_osd_start

	ceph_cli osd pool create rbd 8 8 >/dev/null 2>&1 ||
		die "ceph osd pool create rbd failed"
	timeout -k 2 60 rbd pool init rbd || die "rbd pool init failed"
	echo "ceph: mon $CEPH_MON_ADDR (pid $CEPH_MON_PID), osd.0 $store (pid $CEPH_OSD_PID) in $CEPH_DIR" >&2
}

ceph_stop() {
	[ -n "$CEPH_DIR" ] || return 0
	# The OSD first, then the mon.
	[ -z "$CEPH_OSD_PID" ] || ceph_kill_wait "$CEPH_OSD_PID"
	[ -z "$CEPH_MON_PID" ] || ceph_kill_wait "$CEPH_MON_PID"
	CEPH_OSD_PID= CEPH_MON_PID=
	if [ -n "${CEPH_KEEP_LOGS:-}" ]; then
		echo "ceph: logs kept in $CEPH_DIR/log" >&2
	else
		rm -rf "$CEPH_DIR"
	fi
	CEPH_DIR=
}
