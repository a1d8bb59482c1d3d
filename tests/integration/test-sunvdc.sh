#!/bin/bash
# The Sun LDOM virtual disk client (sunvdc) through both front ends, the
# nbdkit plugin (control=) and mqblkd (--control), time off:
#  - disk: nbdinfo shows vdiska and its description, a round trip of
#    random data, the link and version in the control tree;
#  - cd (vdisk_mtype=cd, dev_no=1): vdiskb, read-only, writes get EPERM;
#  - reset (wait_for_handshake=1, ours): a verified fio run (nbd engine,
#    crc32c) while mqblkctl pauses the service domain, fires
#    fault/ldc_reset with requests in the ring and resumes it, three
#    times: fio sees no error.  Without the key a request on its way to
#    queue_rq when the channel resets is sent on the dead channel and
#    fails with EIO, as in Linux (tests/unit/test_sunvdc.c);
#  - drain (ldc_timeout=1): mqblkctl takes the link down, an nbdsh read
#    gets EIO once the queue is drained, and after fault/link_up the same
#    read succeeds with the data written before.
#
# Each phase runs as "$0 --phase NAME URI" under the server, with $CTL.
if [ "${1:-}" = --phase ]; then
	set -euo pipefail
	export PATH=/usr/bin:/bin:$PATH
	phase=$2
	uri=$3
	CTL="$MQBLK_BUILD/mqblkctl -s $CTL_SOCK"
	fail() {
		echo "$0: FAIL ($phase): $*" >&2
		exit 1
	}
	# wait_attr PATH VALUE: poll the tree for 20 s at most.
	wait_attr() {
		local _
		for _ in $(seq 400); do
			[ "$($CTL get "$1")" = "$2" ] && return 0
			sleep 0.05
		done
		fail "$1 is $($CTL get "$1"), not $2"
	}
else
	. "$(dirname "$0")/mqblkd-lib.sh"
	[ -x "$MQBLK_BUILD/mqblkctl" ] || die "mqblkctl not built"
	command -v fio >/dev/null || die "fio missing (tests/setup-deps.sh)"
	CTL_SOCK=$TESTTMP/ctl.sock
	export CTL_SOCK MQBLK_BUILD TESTTMP
	sunvdc_args() {
		case $1 in
		disk) ARGS=(device=sunvdc size=64M time_scale=0) ;;
		cd) ARGS=(device=sunvdc size=4M vdisk_mtype=cd dev_no=1
			time_scale=0) ;;
		reset) ARGS=(device=sunvdc size=64M wait_for_handshake=1
			time_scale=0) ;;
		drain) ARGS=(device=sunvdc size=64M ldc_timeout=1 time_scale=0) ;;
		*) die "device_args: unknown device $1" ;;
		esac
		# shellcheck disable=SC2206 # split on purpose
		ARGS+=(${MQBLK_EXTRA:-})
	}
	device_args() { sunvdc_args "$1"; }
	# run_phase FRONTEND CONFIG PHASE
	run_phase() {
		echo "== $1: $3 ($2)"
		if [ "$1" = nbdkit ]; then
			MQBLK_EXTRA="control=$CTL_SOCK" serve "$2" -- \
				"\$CLIENT bash $SELF --phase $3 \"\$uri\""
		else
			mqblkd_serve "$2" --control "$CTL_SOCK" -- \
				"$CLIENT bash $SELF --phase $3 \"\$uri\""
		fi
	}
	for fe in nbdkit mqblkd; do
		run_phase $fe disk disk
		run_phase $fe cd cd
		run_phase $fe reset reset
		run_phase $fe drain drain
	done
	echo "test-sunvdc: all phases passed"
	exit 0
fi

case $phase in
disk)
	nbdinfo "$uri" >"$TESTTMP/info"
	grep -q 'export="vdiska"' "$TESTTMP/info" || fail "export is not vdiska"
	grep -q "Sun LDOM virtual disk client vdiska (Linux sunvdc)" \
		"$TESTTMP/info" || fail description
	grep -q "is_read_only: false" "$TESTTMP/info" || fail "read-only"
	[ "$($CTL get vdiska/device/link_state)" = up ] || fail link_state
	[ "$($CTL get vdiska/device/vio_version)" = 1.2 ] || fail vio_version
	[ "$($CTL get vdiska/device/ring_avail)" = 511 ] || fail ring_avail
	nbdsh -u "$uri" -c '
import os
data = os.urandom(8 << 20)
h.pwrite(data, 1 << 20)
assert h.pread(len(data), 1 << 20) == data, "round trip"
print("vdiska: 8 MiB round trip ok")
'
	;;
cd)
	nbdinfo "$uri" >"$TESTTMP/info"
	grep -q 'export="vdiskb"' "$TESTTMP/info" || fail "export is not vdiskb"
	grep -q "Virtual CDROM" "$TESTTMP/info" || fail description
	grep -q "is_read_only: true" "$TESTTMP/info" || fail "not read-only"
	[ "$($CTL get vdiskb/device/vdisk_mtype)" = cd ] || fail mtype
	nbdsh -u "$uri" -c '
import errno
import nbd
assert h.pread(1 << 20, 0) == bytes(1 << 20)
h.set_strict_mode(0)
try:
    h.pwrite(b"x" * 4096, 0)
except nbd.Error as e:
    assert e.errnum == errno.EPERM, "write: errno %s" % e.errnum
else:
    raise AssertionError("a write to the virtual CD succeeded")
print("vdiskb: read ok, write refused")
'
	;;
reset)
	fio --name=reset --ioengine=nbd --uri="$uri" --rw=randrw --bs=4k \
		--iodepth=16 --size=32M --verify=crc32c --verify_fatal=1 \
		--runtime=3 --time_based --output="$TESTTMP/fio.out" &
	fio_pid=$!
	for i in 1 2 3; do
		$CTL set vdiska/fault/vds_pause
		# requests in the ring, held by the paused service domain
		for _ in $(seq 400); do
			[ "$($CTL get vdiska/device/ring_avail)" -lt 511 ] && break
			sleep 0.05
		done
		[ "$($CTL get vdiska/device/ring_avail)" -lt 511 ] ||
			fail "fio never reached the ring"
		$CTL set vdiska/fault/ldc_reset
		wait_attr vdiska/device/resets $i
		wait_attr vdiska/device/link_state up
		$CTL set vdiska/fault/vds_resume
		kill -0 $fio_pid 2>/dev/null || fail "fio ended at reset $i"
	done
	wait $fio_pid || fail "fio failed"
	cat "$TESTTMP/fio.out"
	grep -Eq 'err= *0' "$TESTTMP/fio.out" || fail "fio reported errors"
	r=$($CTL get vdiska/device/requeued)
	[ "$r" -ge 3 ] || fail "only $r requests requeued"
	echo "3 LDC resets under fio, $r requests requeued, no error"
	;;
drain)
	CTL="$CTL" nbdsh -u "$uri" -c '
import errno
import os
import subprocess
import time
import nbd

ctl = os.environ["CTL"].split()

def get(attr):
    return subprocess.run(ctl + ["get", "vdiska/device/" + attr],
                          check=True, capture_output=True,
                          text=True).stdout.strip()

def fire(fault):
    subprocess.run(ctl + ["set", "vdiska/fault/" + fault], check=True)

def wait(attr, value):
    deadline = time.monotonic() + 20
    while get(attr) != value:
        assert time.monotonic() < deadline, "%s is not %s" % (attr, value)
        time.sleep(0.05)

data = os.urandom(64 << 10)
h.pwrite(data, 0)
fire("link_down")
wait("link_state", "down")
try:
    h.pread(len(data), 0)
except nbd.Error as e:
    assert e.errnum == errno.EIO, "read while down: errno %s" % e.errnum
else:
    raise AssertionError("a read with the link down succeeded")
assert int(get("drained")) >= 1, "nothing was drained"
print("link down: EIO after the drain (%s drained)" % get("drained"))
fire("link_up")
wait("link_state", "up")
assert h.pread(len(data), 0) == data, "data after link_up"
print("link up: the read succeeds")
'
	;;
*)
	fail "unknown phase"
	;;
esac
