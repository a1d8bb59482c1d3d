#!/bin/bash
# The Promise SATA SX8 host (device=sx8) through real clients, time off
# (time_scale=0), through the nbdkit plugin and through mqblkd:
#  - nbdinfo --list shows the 8 ports, sx8/port0 .. sx8/port7, each with
#    its description;
#  - a round trip on every port (sx8-ports.py: different data on each
#    port, each read back from its own port, over one connection each);
#  - the out-of-band queue is no export, but the control socket shows it
#    as sx8/host: its probe state, its pools, and a scheduler written to
#    it is refused with the reason (NO_SCHED);
#  - with ports=4 and port2.present=0 the list has the three disks;
#  - the stall fault through mqblkctl with max_queue=1: port 2 holds the
#    host's one message, port 6 waits on the ring, and both clients'
#    round trips succeed once the firmware answers;
#  - mqblkd's demo rack serves the 8 ports too.
. "$(dirname "$0")/lib.sh"

# The plugin's keys for serve (lib.sh), with $MQBLK_EXTRA's.
device_args() {
	# shellcheck disable=SC2206 # split on purpose
	ARGS=(device=sx8 size=64M time_scale=0 ${MQBLK_EXTRA:-})
}

CTL=$MQBLK_BUILD/mqblkctl
[ -x "$CTL" ] || die "mqblkctl not built"

cat >"$TESTTMP/sx8-ports.py" <<'EOF'
import os
import nbd

sock = os.environ["unixsocket"]
ports = [int(p) for p in os.environ["PORTS"].split()]
handles = {}
data = {}
for p in ports:
    h = nbd.NBD()
    h.set_export_name("sx8/port%d" % p)
    h.connect_unix(sock)
    assert not h.is_read_only(), "port %d read-only" % p
    handles[p] = h
    data[p] = os.urandom(256 * 1024)
    # the same offset on every port: each must keep its own
    h.pwrite(data[p], 1 << 20)
for p in ports:
    got = handles[p].pread(len(data[p]), 1 << 20)
    assert got == data[p], "port %d: data differs" % p
    assert handles[p].pread(4096, 0) == bytes(4096), "port %d: not zero" % p
    handles[p].shutdown()
print("sx8: round trip on ports %s" % " ".join(map(str, ports)))
EOF

ALL="0 1 2 3 4 5 6 7"

# check_list FILE PORTS: the list has exactly these ports, described.
check_list() {
	local file=$1 ports=$2 p n
	for p in $ports; do
		grep -q "export=\"sx8/port$p\"" "$file" ||
			die "list: no export sx8/port$p"
		grep -q "Promise SATA SX8 port $p (Linux sx8)" "$file" ||
			die "list: port $p has no description"
	done
	n=$(grep -c 'export="' "$file")
	[ "$n" -eq "$(echo "$ports" | wc -w)" ] || die "list: $n exports, expected $ports"
	! grep -q 'export="sx8/host' "$file" || die "list: the OOB queue is exported"
}

# check_host CTL-SOCKET: the OOB queue in the tree.
check_host() {
	local c="$CTL -s $1" out
	[ "$($c get sx8/host/state)" = HST_PROBE_FINISHED ] ||
		die "sx8/host/state: $($c get sx8/host/state)"
	[ "$($c get sx8/host/msgs_in_use)" = 0 ] || die "msgs_in_use"
	[ "$($c get sx8/host/sg_in_use)" = 0 ] || die "sg_in_use"
	[ -z "$($c get sx8/host/wait_queue)" ] || die "wait_queue"
	[ "$($c get sx8/host/queue/scheduler)" = "[none]" ] ||
		die "OOB scheduler: $($c get sx8/host/queue/scheduler)"
	if out=$($c set sx8/host/queue/scheduler mq-deadline 2>&1); then
		die "a scheduler was set on the OOB queue"
	fi
	echo "$out" | grep -q "NO_SCHED" || die "refusal without its reason: $out"
	[ "$($c get sx8/port3/device/port)" = 3 ] || die "sx8/port3/device/port"
	$c get sx8/port0/queue/scheduler | grep -q '\[' || die "port scheduler"
}

echo "== nbdkit: 8 ports listed, a round trip on each, sx8/host in the tree"
MQBLK_EXTRA="control=$TESTTMP/ctl.sock" serve sx8 -- \
	"\$NOPRELOAD nbdinfo --list \"\$uri\" > $TESTTMP/list &&
	PORTS='$ALL' unixsocket=\"\$unixsocket\" \$CLIENT nbdsh -c - < $TESTTMP/sx8-ports.py &&
	$CTL -s $TESTTMP/ctl.sock get sx8/host/state > $TESTTMP/state &&
	$CTL -s $TESTTMP/ctl.sock get sx8/host/oob_messages > $TESTTMP/oob &&
	$CTL -s $TESTTMP/ctl.sock get sx8/port5/device/completed > $TESTTMP/done5 &&
	$CTL -s $TESTTMP/ctl.sock get sx8/host/queue/scheduler > $TESTTMP/sched &&
	! $CTL -s $TESTTMP/ctl.sock set sx8/host/queue/scheduler bfq \
		2> $TESTTMP/refused" || die "nbdkit run failed"
check_list "$TESTTMP/list" "$ALL"
[ "$(cat "$TESTTMP/state")" = HST_PROBE_FINISHED ] || die "state: $(cat "$TESTTMP/state")"
[ "$(cat "$TESTTMP/oob")" = 12 ] || die "OOB messages: $(cat "$TESTTMP/oob")"
[ "$(cat "$TESTTMP/done5")" -ge 2 ] || die "port 5 completed $(cat "$TESTTMP/done5")"
[ "$(cat "$TESTTMP/sched")" = "[none]" ] || die "OOB scheduler $(cat "$TESTTMP/sched")"
grep -q NO_SCHED "$TESTTMP/refused" || die "refusal: $(cat "$TESTTMP/refused")"

echo "== nbdkit: ports=4, port2 empty"
MQBLK_EXTRA="ports=4 port2.present=0 max_queue=4" serve sx8 -- \
	"\$NOPRELOAD nbdinfo --list \"\$uri\" > $TESTTMP/list4 &&
	PORTS='0 1 3' unixsocket=\"\$unixsocket\" \$CLIENT nbdsh -c - < $TESTTMP/sx8-ports.py" ||
	die "ports=4 run failed"
check_list "$TESTTMP/list4" "0 1 3"

if [ -x "$MQBLK_BUILD/mqblkd" ]; then
	out=$TESTTMP # mqblkd-lib.sh makes its own TESTTMP
	(
		. "$SCRIPTS/mqblkd-lib.sh"
		echo "== mqblkd: 8 ports listed, a round trip on each, sx8/host"
		mqblkd_start --control "$TESTTMP/ctl" sx8 size=64M max_queue=30 \
			time_scale=0
		$NOPRELOAD nbdinfo --list "$uri" >"$out/list2"
		PORTS=$ALL $CLIENT nbdsh -c - <"$out/sx8-ports.py"
		check_host "$TESTTMP/ctl"
		[ "$($CTL -s "$TESTTMP/ctl" get sx8/host/max_queue)" = 30 ] ||
			die "max_queue"
		mqblkd_stop
		check_list "$out/list2" "$ALL"

		echo "== mqblkd: stalled firmware, max_queue=1: port 6 waits on the ring"
		mqblkd_start --control "$TESTTMP/ctl" sx8 size=64M max_queue=1 \
			time_scale=0
		c="$CTL -s $TESTTMP/ctl"
		$c set sx8/host/fault/stall 1
		PORTS=2 $CLIENT nbdsh -c - <"$out/sx8-ports.py" >"$out/p2" &
		p2=$!
		for _ in $(seq 100); do
			[ "$($c get sx8/host/msgs_in_use)" = 1 ] && break
			sleep 0.1
		done
		[ "$($c get sx8/host/msgs_in_use)" = 1 ] || die "no message in use"
		PORTS=6 $CLIENT nbdsh -c - <"$out/sx8-ports.py" >"$out/p6" &
		p6=$!
		for _ in $(seq 100); do
			[ "$($c get sx8/host/wait_queue)" = sx8/port6 ] && break
			sleep 0.1
		done
		[ "$($c get sx8/host/wait_queue)" = sx8/port6 ] ||
			die "wait_queue: '$($c get sx8/host/wait_queue)'"
		$c set sx8/host/fault/stall 0
		wait "$p2" || die "port 2 client failed after the stall"
		wait "$p6" || die "port 6 client failed after the stall"
		grep -q "round trip on ports 2" "$out/p2" || die "port 2"
		grep -q "round trip on ports 6" "$out/p6" || die "port 6"
		[ -z "$($c get sx8/host/wait_queue)" ] || die "ring not empty"
		[ "$($c get sx8/port6/device/pushed)" -ge 1 ] || die "port 6 pushed"
		mqblkd_stop

		echo "== mqblkd: the demo rack has the 8 ports"
		mqblkd_start --demo --control "$TESTTMP/ctl"
		$NOPRELOAD nbdinfo --list "$uri" >"$out/demo"
		PORTS=$ALL $CLIENT nbdsh -c - <"$out/sx8-ports.py"
		[ "$($CTL -s "$TESTTMP/ctl" get sx8/host/state)" = HST_PROBE_FINISHED ] ||
			die "demo: sx8/host/state"
		mqblkd_stop
		for p in $ALL; do
			grep -q "export=\"sx8/port$p\"" "$out/demo" ||
				die "demo: no sx8/port$p"
		done
	)
fi
echo "$0: PASS"
