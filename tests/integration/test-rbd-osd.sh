#!/bin/bash
# The cluster goes away under the rbd device, through both front ends:
# the OSD is stopped while a client writes at queue depth 8; the requests
# then fail with EIO after io_timeout (a log line says why), the server
# stays up, and once the OSD is back I/O works again and what was written
# before is still there.  The OSD keeps its data across the restart, so
# this cluster is bluestore (on a sparse file), not memstore.
. "$(dirname "$0")/rbd-lib.sh"

CEPH_STORE=bluestore rbd_setup
RBD=(timeout -k 2 60 rbd --conf "$CEPH_CONF")

for fe in "${FRONTENDS[@]}"; do
	img=osd-$fe
	echo "== $fe: OSD stopped during I/O"
	"${RBD[@]}" create --size 64M "rbd/$img"
	rbd_server_start "$fe" "image=$img" io_timeout=2000
	rm -f "$TESTTMP/writing" "$TESTTMP/client.out"
	# Writes 64 KiB blocks at depth 8 until one fails; the first 4 MiB
	# are made durable first, and the test reads them back at the end.
	# The client collects every reply before it raises the first error:
	# nbdkit 1.32 aborts (assertion "sock >= 0") when a reply is sent
	# while another of its threads closes a connection the client reset.
	$CLIENT nbdsh -u "$uri" -c "
h.pwrite(b'K' * (4 << 20), 0)
h.flush()
open('$TESTTMP/writing', 'w').close()
off, failed = 4 << 20, None
while failed is None:
    cookies = []
    for i in range(8):
        cookies.append(h.aio_pwrite(b'w' * 65536, off))
        off = off + 65536 if off + 65536 < (64 << 20) else 4 << 20
    for c in cookies:
        try:
            while not h.aio_command_completed(c):
                h.poll(-1)
        except nbd.Error as e:
            failed = failed or e
raise failed
" >"$TESTTMP/client.out" 2>&1 &
	client=$!
	for _ in $(seq 500); do
		[ -e "$TESTTMP/writing" ] && break
		kill -0 "$client" 2>/dev/null || break
		sleep 0.02
	done
	[ -e "$TESTTMP/writing" ] || {
		cat "$TESTTMP/client.out" "$SERVER_LOG"
		die "$fe: the client never got going"
	}
	ceph_osd_stop
	rc=0
	wait "$client" || rc=$?
	cat "$TESTTMP/client.out"
	[ $rc -ne 0 ] || {
		cat "$SERVER_LOG"
		die "$fe: the writes did not fail"
	}
	grep -q 'Input/output error' "$TESTTMP/client.out" || {
		cat "$SERVER_LOG"
		die "$fe: the writes failed, but not with EIO"
	}
	kill -0 "$SERVER_PID" || {
		cat "$SERVER_LOG"
		die "$fe: the server died with the OSD"
	}
	grep -q "rbd0: write at sector [0-9]*: no answer from rbd/$img on .* within io_timeout=2000 ms" \
		"$SERVER_LOG" || {
		cat "$SERVER_LOG"
		die "$fe: no log line for the timed-out writes"
	}

	ceph_osd_start
	rbd_nbdsh "
h.pwrite(b'A' * 65536, 8 << 20)
h.flush()
assert h.pread(65536, 8 << 20) == b'A' * 65536
assert h.pread(4 << 20, 0) == b'K' * (4 << 20)
"
	grep -q "rbd0: rbd/$img on .* answers again after [0-9]* failed requests" \
		"$SERVER_LOG" || {
		cat "$SERVER_LOG"
		die "$fe: no log line for the cluster's return"
	}
	rbd_server_stop
done
echo "test-rbd-osd: all passed"
