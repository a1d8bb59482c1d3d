#!/bin/bash
# The control socket through mqblkd (--control PATH): the tree lists the
# export's nodes, a scheduler switch under verified NBD I/O loses nothing,
# null's requeue fault shows in device/ and the I/O still succeeds, the
# metrics count what was done, mqblkctl exits non-zero on bad paths and
# refused values, and a second mqblkd cannot take the live socket over.
# Then: two exports of one model (both would be nullb0) are served with
# --control, addressed by their export names, their disks renamed apart
# (the second's description and log lines say nullb1);
# a trigger fault that takes no value (ide-cd's insert); mqblkctl's
# argument checks; and, as root, the socket's peer check.
# test-ctl.sh covers the same through nbdkit.
. "$(dirname "$0")/mqblkd-lib.sh"

CTL="$MQBLK_BUILD/mqblkctl -s $TESTTMP/ctl.sock"
export CTL TESTTMP

MQBLK_EXTRA="submit_queues=1" mqblkd_serve null --control "$TESTTMP/ctl.sock" -- '
	set -e
	[ "$(stat -c %a '"$TESTTMP"'/ctl.sock)" = 600 ] || { echo "socket mode"; exit 1; }
	for n in queue/scheduler queue/nr_hw_queues stat inflight mq/0/tags \
		 device/requeues; do
		$CTL get nullb0/$n > /dev/null || { echo "cannot read $n"; exit 1; }
	done
	$CTL ls nullb0/fault > '"$TESTTMP"'/faults
	grep -qx requeue '"$TESTTMP"'/faults && grep -qx timeout '"$TESTTMP"'/faults
	[ "$($CTL get nullb0/queue/scheduler)" = "none mq-deadline kyber [bfq]" ]

	# Switch while nbdsh writes and verifies; every I/O must succeed.
	nbdsh -u "$uri" -c "
import os, subprocess
for i in range(40):
    buf = os.urandom(65536)
    off = (i * 65536) % (16 << 20)
    h.pwrite(buf, off)
    sched = [\"mq-deadline\", \"kyber\", \"none\", \"bfq\"][i % 4]
    subprocess.run(os.environ[\"CTL\"].split() + [\"set\", \"nullb0/queue/scheduler\", sched], check=True)
    assert h.pread(65536, off) == buf, i
"
	[ "$($CTL get nullb0/queue/scheduler)" = "none mq-deadline kyber [bfq]" ]

	# A requeue fault: three requeues, the reads still succeed.
	$CTL set nullb0/fault/requeue 1,100,0,3
	nbdsh -u "$uri" -c "for i in range(5): h.pread(4096, i * 4096)"
	[ "$($CTL get nullb0/device/requeues)" = 3 ]

	# Metrics: the read count moves by the reads done.
	before=$($CTL metrics | awk "/^mqblk_requests_total\\{export=\"nullb0\",op=\"read\"\\}/ {print \$2}")
	nbdsh -u "$uri" -c "for i in range(7): h.pread(4096, i * 8192)"
	after=$($CTL metrics | awk "/^mqblk_requests_total\\{export=\"nullb0\",op=\"read\"\\}/ {print \$2}")
	[ -n "$before" ] && [ "$((after - before))" -ge 7 ] || { echo "metrics $before -> $after"; exit 1; }

	# Errors: a wrong path, a read-only node, a refused value.  (set -e
	# ignores a command negated with "!", hence the "|| exit".)
	! $CTL get nullb0/no/such/node || { echo "bad path read"; exit 1; }
	! $CTL set nullb0/stat 1 || { echo "stat written"; exit 1; }
	! $CTL set nullb0/queue/scheduler cfq || { echo "cfq set"; exit 1; }
	$CTL --help | grep -q "^usage: mqblkctl"
	$CTL --version | grep -q "^mqblkctl [0-9]"
	# watch takes a positive COUNT or nothing; anything else is refused
	# at once (it used to run forever).  A word that is not a number is
	# an export or a glob (test-mqblkctl-json.sh).
	for bad in 0 -1 "1 2" "x y"; do
		rc=0
		# shellcheck disable=SC2086 # split on purpose
		timeout 5 $CTL watch $bad 2> '"$TESTTMP"'/w.err || rc=$?
		[ $rc = 2 ] || { echo "watch $bad: exit $rc"; exit 1; }
		grep -q "COUNT\|GLOB" '"$TESTTMP"'/w.err
	done
	for bad in "-i 0" "-i x" "-i" "-i -1"; do
		rc=0
		# shellcheck disable=SC2086 # split on purpose
		timeout 5 $CTL watch $bad 2> '"$TESTTMP"'/w.err || rc=$?
		[ $rc = 2 ] || { echo "watch $bad: exit $rc"; exit 1; }
		grep -q "SECONDS" '"$TESTTMP"'/w.err
	done
	timeout 10 $CTL watch 1 | awk "\$2 == \"nullb0\" { f = 1 } END { exit !f }"

	# A second server does not take over the live control socket.
	! "$MQBLK_BUILD/mqblkd" -f -U '"$TESTTMP"'/b.sock \
		--control '"$TESTTMP"'/ctl.sock null size=1M \
		2> '"$TESTTMP"'/b.err || { echo "second mqblkd ran"; exit 1; }
	grep -q "another server listens there" '"$TESTTMP"'/b.err
	$CTL ls > /dev/null
	echo ok
'

echo "== two null exports with --control: named by export, disks apart"
cat > "$TESTTMP/two.ini" <<'INI'
[fast]
device=null
size=16M
time_scale=0
[slow]
device=null
size=32M
memory_backed=1
time_scale=0
io_timeout=200
INI
mkdir "$TESTTMP/traces"
mqblkd_start --control "$TESTTMP/ctl.sock" --trace-dir "$TESTTMP/traces" \
	-c "$TESTTMP/two.ini"
bash -c '
	set -euo pipefail
	fail() { echo "FAIL: $*" >&2; exit 1; }
	[ "$($CTL ls | tr "\n" " ")" = "fast/ slow/ " ] || fail "ls: $($CTL ls)"
	a=$($CTL get fast/device/disk_name)
	b=$($CTL get slow/device/disk_name)
	echo "disks: fast=$a slow=$b"
	[ "$a" = nullb0 ] && [ "$b" = nullb1 ] || fail "disk names $a $b"
	# The renamed disk says its name where the model wrote the first one.
	nbdinfo --list "$uri" > "$TESTTMP/list"
	grep -q "description: null_blk nullb1 (memory backed)" "$TESTTMP/list" ||
		fail "slow described as: $(grep description "$TESTTMP/list")"
	$CTL set slow/queue/scheduler kyber
	$CTL get slow/queue/scheduler | grep -q "\[kyber\]"
	! $CTL get fast/queue/scheduler | grep -q "\[kyber\]" ||
		fail "the switch reached fast"
	$CTL trace start run
	nbdsh -u "nbd+unix:///slow?socket=$unixsocket" \
		-c "for i in range(5): h.pread(4096, i * 4096)"
	$CTL trace stop
	[ "$($CTL get slow/stat | cut -d" " -f1)" = 5 ] || fail "slow stat"
	[ "$($CTL get fast/stat | cut -d" " -f1)" = 0 ] || fail "fast stat"
	$CTL metrics | grep -qx "+\?mqblk_capacity_bytes{export=\"slow\"} 33554432" ||
		fail "metrics: $($CTL metrics | grep capacity)"
	$CTL metrics | grep -qx "mqblk_requests_total{export=\"slow\",op=\"read\"} 5" ||
		fail "metrics reads"
	! $CTL metrics | grep -q "export=\"nullb" || fail "a disk name as label"
	for e in fast slow; do
		f=$TESTTMP/traces/run/$e.blktrace.0
		[ -f "$f" ] || fail "no $f"
		[ "$(stat -c %a "$f")" = 600 ] || fail "$f mode"
	done
	[ -s "$TESTTMP/traces/run/slow.blktrace.0" ] || fail "slow traced nothing"
	# Outside --trace-dir nothing is made.
	! $CTL trace start "$TESTTMP/elsewhere" 2> "$TESTTMP/t.err" ||
		fail "trace outside accepted"
	grep -q "outside the trace directory" "$TESTTMP/t.err"
	[ ! -e "$TESTTMP/elsewhere" ] || fail "elsewhere made"
	ln -s "$TESTTMP" "$TESTTMP/traces/out"
	! $CTL trace start out/x 2> "$TESTTMP/t.err" || fail "trace via a link"
	[ ! -e "$TESTTMP/x" ] || fail "made through the link"
	# One injected timeout on slow: null_blk logs it under the new name.
	$CTL set slow/fault/timeout 1,100,0,1
	! nbdsh -u "nbd+unix:///slow?socket=$unixsocket" -c "h.pread(4096, 0)" \
		2>/dev/null || fail "the injected timeout did not fail the read"
	echo ok
'
mqblkd_stop
# Without --control the same file served before; with it, it did not.
grep -q "cannot build its tree" "$MQBLKD_LOG" && die "tree refused"
# The model's own log lines follow the rename too.
grep -q "nullb1: rq .* timed out (timeout fault injected)" "$MQBLKD_LOG" ||
	die "the timeout's log line does not name nullb1"

echo "== ide-cd: fault/insert takes no value; refusals say why"
truncate -s 4M "$TESTTMP/disc.iso"
mqblkd_start --control "$TESTTMP/ctl.sock" ide-cd "image=$TESTTMP/disc.iso" \
	time_scale=0
bash -c '
	set -euo pipefail
	$CTL set hda/fault/eject
	$CTL set hda/fault/insert
	# refused LINE WANT: the driver refuses LINE and its answer holds WANT.
	refused() {
		! $CTL set $1 2> "$TESTTMP/err" || { echo "$1 taken"; exit 1; }
		cat "$TESTTMP/err"
		grep -qF "$2" "$TESTTMP/err" || { echo "$1: no \"$2\""; exit 1; }
	}
	refused "hda/fault/insert $TESTTMP/none.iso" \
		"$TESTTMP/none.iso: No such file or directory"
	refused "hda/fault/media_error x" "takes a block number"
	echo ok
'
mqblkd_stop

if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
	echo "== the peer check: uid 65534 is refused, its group let in"
	# Let uid 65534 reach the socket and run mqblkctl, so that only the
	# server's own check stands between them.
	chmod 711 "$TESTTMP"
	install -m 755 "$MQBLK_BUILD/mqblkctl" "$TESTTMP/mqblkctl"
	as_nobody() {
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
	}
	mqblkd_start --control "$TESTTMP/ctl.sock" null size=1M time_scale=0
	chmod 666 "$TESTTMP/ctl.sock"
	! as_nobody "$TESTTMP/mqblkctl" -s "$TESTTMP/ctl.sock" ls \
		2> "$TESTTMP/p.err" || die "uid 65534 was served"
	cat "$TESTTMP/p.err"
	grep -q "permission denied: uid 65534" "$TESTTMP/p.err" ||
		die "refusal: $(cat "$TESTTMP/p.err")"
	"$TESTTMP/mqblkctl" -s "$TESTTMP/ctl.sock" ls | grep -qx nullb0/
	mqblkd_stop

	mqblkd_start --control "$TESTTMP/ctl.sock" --control-group nogroup \
		null size=1M time_scale=0
	[ "$(stat -c %a:%g "$TESTTMP/ctl.sock")" = 660:65534 ] ||
		die "socket $(stat -c %a:%g "$TESTTMP/ctl.sock")"
	as_nobody "$TESTTMP/mqblkctl" -s "$TESTTMP/ctl.sock" ls | grep -qx nullb0/ ||
		die "a member of the group was refused"
	# A supplementary group counts too; another uid and group do not.
	setpriv --reuid=65533 --regid=65533 --groups=65534 \
		"$TESTTMP/mqblkctl" -s "$TESTTMP/ctl.sock" ls | grep -qx nullb0/ ||
		die "a supplementary member was refused"
	chmod 666 "$TESTTMP/ctl.sock"
	! setpriv --reuid=65533 --regid=65533 --clear-groups \
		"$TESTTMP/mqblkctl" -s "$TESTTMP/ctl.sock" ls 2> /dev/null ||
		die "uid 65533 was served"
	mqblkd_stop
else
	echo "== the peer check: skipped (needs root and setpriv)"
fi
echo "test-mqblkd-ctl: passed"
