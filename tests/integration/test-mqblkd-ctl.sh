#!/bin/bash
# The control socket through mqblkd (--control PATH): the tree lists the
# export's nodes, a scheduler switch under verified NBD I/O loses nothing,
# null's requeue fault shows in device/ and the I/O still succeeds, the
# metrics count what was done, mqblkctl exits non-zero on bad paths and
# refused values, and a second mqblkd cannot take the live socket over.
# test-ctl.sh covers the same through nbdkit.
. "$(dirname "$0")/mqblkd-lib.sh"

CTL="$MQBLK_BUILD/mqblkctl -s $TESTTMP/ctl.sock"
export CTL

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

	# A second server does not take over the live control socket.
	! "$MQBLK_BUILD/mqblkd" -f -U '"$TESTTMP"'/b.sock \
		--control '"$TESTTMP"'/ctl.sock null size=1M \
		2> '"$TESTTMP"'/b.err || { echo "second mqblkd ran"; exit 1; }
	grep -q "another server listens there" '"$TESTTMP"'/b.err
	$CTL ls > /dev/null
	echo ok
'
