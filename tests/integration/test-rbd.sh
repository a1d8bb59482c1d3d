#!/bin/bash
# The rbd device against a real one-node Ceph cluster (ceph-lib.sh),
# through both front ends: fio verify (crc32c), FLUSH then kill -9 then
# `rbd export` equals what was flushed (also across two connections:
# multi-conn), discard and write-zeroes read back
# as zeroes, `nbdinfo --map` holes on a fresh image (all data without
# fast-diff), a snapshot served read-only, create=, and the start-up line
# for an unreachable cluster.
. "$(dirname "$0")/rbd-lib.sh"

rbd_setup
RBD=(timeout -k 2 60 rbd --conf "$CEPH_CONF")

for fe in "${FRONTENDS[@]}"; do
	img=fio-$fe
	echo "== $fe: fio verify on rbd/$img"
	"${RBD[@]}" create --size 64M "rbd/$img"
	rbd_server_start "$fe" "image=$img"
	$CLIENT fio --name=verify-rbd --ioengine=nbd --uri="$uri" \
		--rw=randrw --bs=4k --iodepth=16 --size=32M \
		--verify=crc32c --verify_fatal=1 --runtime=5 --time_based \
		--output="$TESTTMP/fio.out" || {
		cat "$TESTTMP/fio.out" "$SERVER_LOG" >&2
		die "$fe: fio failed"
	}
	grep -Eq 'READ: bw=[1-9]' "$TESTTMP/fio.out" || die "$fe: no reads"
	grep -Eq 'WRITE: bw=[1-9]' "$TESTTMP/fio.out" || die "$fe: no writes"
	grep -E 'err= *0' "$TESTTMP/fio.out" >/dev/null ||
		die "$fe: fio reported errors"
	rbd_server_stop
done

# librbd's cache in writeback from the first write, and never written
# back by age during the test: only a FLUSH that reaches librbd puts the
# data in the cluster before the kill.
cat "$CEPH_CONF" - >"$TESTTMP/wb.conf" <<CONF
[client]
rbd cache writethrough until flush = false
rbd cache max dirty age = 600
CONF
for fe in "${FRONTENDS[@]}"; do
	img=flush-$fe
	echo "== $fe: FLUSH, kill -9, rbd export (cache=on)"
	"${RBD[@]}" create --size 16M "rbd/$img"
	head -c 16M /dev/urandom >"$TESTTMP/want"
	CEPH_CONF=$TESTTMP/wb.conf rbd_server_start "$fe" "image=$img" cache=on
	rbd_nbdsh "
with open('$TESTTMP/want', 'rb') as f:
    data = f.read()
for off in range(0, len(data), 1 << 20):
    h.pwrite(data[off:off + (1 << 20)], off)
h.flush()
"
	rbd_server_kill9
	"${RBD[@]}" export "rbd/$img" "$TESTTMP/got" >/dev/null 2>&1 ||
		die "$fe: rbd export failed"
	cmp "$TESTTMP/want" "$TESTTMP/got" ||
		die "$fe: the image differs from what was flushed before kill -9"
	rm -f "$TESTTMP/got"
done

for fe in "${FRONTENDS[@]}"; do
	img=mc-$fe
	echo "== $fe: multi-conn: a FLUSH on one connection covers another's writes"
	"${RBD[@]}" create --size 16M "rbd/$img"
	head -c 4M /dev/urandom >"$TESTTMP/want"
	CEPH_CONF=$TESTTMP/wb.conf rbd_server_start "$fe" "image=$img" cache=on
	rbd_nbdsh "
a = h
b = nbd.NBD()
b.connect_uri('$uri')
assert a.can_multi_conn() and b.can_multi_conn()
with open('$TESTTMP/want', 'rb') as f:
    data = f.read()
a.pwrite(data, 0)
b.flush()
"
	rbd_server_kill9
	"${RBD[@]}" export "rbd/$img" "$TESTTMP/got" >/dev/null 2>&1 ||
		die "$fe: rbd export failed"
	cmp -n 4194304 "$TESTTMP/want" "$TESTTMP/got" ||
		die "$fe: a flush on another connection did not cover the write"
	rm -f "$TESTTMP/got"
done

for fe in "${FRONTENDS[@]}"; do
	img=zero-$fe
	echo "== $fe: discard and write-zeroes read back as zeroes"
	"${RBD[@]}" create --size 32M "rbd/$img"
	rbd_server_start "$fe" "image=$img"
	rbd_nbdsh "
import os
M = 1 << 20
size = h.get_size()
assert h.can_trim() and h.can_zero()
h.pwrite(b'\xa5' * size, 0) if size <= 32 * M else None
def zeroes(off, n):
    return h.pread(n, off) == bytes(n)
# A whole object, a 64 KiB-aligned piece of one, and pieces across two.
for off, n in [(4 * M, 4 * M), (9 * M + 128 * 1024, 256 * 1024),
               (15 * M, 2 * M)]:
    h.trim(n, off)
    assert zeroes(off, n), ('trim', off, n)
# Write-zeroes: whole objects, sector-sized bits, with and without
# NO_HOLE, FUA.
for off, n, fl in [(20 * M, 4 * M, 0), (25 * M + 512, 1024, 0),
                   (26 * M + 4096, 8192, nbd.CMD_FLAG_NO_HOLE),
                   (27 * M + 3 * 512, 100 * 1024, nbd.CMD_FLAG_FUA)]:
    h.zero(n, off, fl)
    assert zeroes(off, n), ('zero', off, n, fl)
    # The bytes around are untouched.
    assert h.pread(512, off - 512) == b'\xa5' * 512
    assert h.pread(512, off + n) == b'\xa5' * 512
"
	rbd_server_stop
done

for fe in "${FRONTENDS[@]}"; do
	echo "== $fe: nbdinfo --map on a fresh image, then after a write"
	"${RBD[@]}" create --size 64M "rbd/map-$fe"
	rbd_server_start "$fe" "image=map-$fe"
	$CLIENT nbdinfo --map "$uri" >"$TESTTMP/map"
	cat "$TESTTMP/map"
	[ "$(awk '{print $1, $2, $4}' "$TESTTMP/map")" = "0 67108864 hole,zero" ] ||
		die "$fe: a fresh image is not one hole"
	rbd_nbdsh "h.pwrite(b'x' * 4096, 8 << 20); h.flush()"
	$CLIENT nbdinfo --map "$uri" >"$TESTTMP/map"
	cat "$TESTTMP/map"
	grep -Eq '^ *8388608 +4194304 +0 +data$' "$TESTTMP/map" ||
		die "$fe: the written object is not data"
	grep -Eq '^ *0 +8388608 +3 +hole,zero$' "$TESTTMP/map" ||
		die "$fe: the untouched start is not a hole"
	rbd_server_stop

	echo "== $fe: without fast-diff every range is data"
	"${RBD[@]}" create --size 64M --image-feature layering \
		"rbd/nofd-$fe"
	rbd_server_start "$fe" "image=nofd-$fe"
	$CLIENT nbdinfo --map "$uri" >"$TESTTMP/map"
	[ "$(awk '{print $1, $2, $4}' "$TESTTMP/map")" = "0 67108864 data" ] ||
		{ cat "$TESTTMP/map"; die "$fe: no fast-diff, yet holes"; }
	rbd_server_stop
done

for fe in "${FRONTENDS[@]}"; do
	echo "== $fe: snap= is read-only and shows the snapshot"
	"${RBD[@]}" create --size 8M "rbd/snap-$fe"
	rbd_server_start "$fe" "image=snap-$fe"
	rbd_nbdsh "h.pwrite(b'A' * 4096, 0); h.flush()"
	rbd_server_stop
	"${RBD[@]}" snap create "rbd/snap-$fe@s1" >/dev/null 2>&1
	rbd_server_start "$fe" "image=snap-$fe"
	rbd_nbdsh "h.pwrite(b'B' * 4096, 0); h.flush()"
	rbd_server_stop
	rbd_server_start "$fe" "image=snap-$fe" snap=s1
	rbd_nbdsh "
assert h.is_read_only()
assert h.pread(4096, 0) == b'A' * 4096
try:
    h.pwrite(b'C' * 512, 0)
    raise AssertionError('a write to a snapshot succeeded')
except nbd.Error as e:
    print('write refused:', e.string)
"
	rbd_server_stop
done

for fe in "${FRONTENDS[@]}"; do
	echo "== $fe: create= makes a missing image"
	rbd_server_start "$fe" "image=new-$fe" create=24M
	rbd_nbdsh "assert h.get_size() == 24 << 20, h.get_size()"
	rbd_server_stop
	"${RBD[@]}" info "rbd/new-$fe" | grep -q 'size 24 MiB' ||
		die "$fe: create=24M made no 24 MiB image"
done

echo "== unreachable monitors: one line naming the address, in time"
port=$(ceph_free_port)
sed "s/^mon host = .*/mon host = [v1:127.0.0.1:$port]/" "$CEPH_CONF" \
	>"$TESTTMP/dead.conf"
rc=0
$CLIENT "$MQBLKD" -f -U "$TESTTMP/dead.sock" rbd image=x \
	"conf=$TESTTMP/dead.conf" connect_timeout=1 2>"$TESTTMP/dead.log" ||
	rc=$?
cat "$TESTTMP/dead.log"
[ $rc -ne 0 ] || die "mqblkd started without a cluster"
grep -q "rbd: cannot reach the Ceph monitors at \[v1:127.0.0.1:$port\] within connect_timeout=1 s" \
	"$TESTTMP/dead.log" || die "no clear line for an unreachable cluster"
rc=0
mqblk_nbdkit -U "$TESTTMP/dead.sock" --run true "$PLUGIN" device=rbd \
	image=x "conf=$TESTTMP/dead.conf" connect_timeout=1 \
	2>"$TESTTMP/dead.log" || rc=$?
cat "$TESTTMP/dead.log"
[ $rc -ne 0 ] || die "nbdkit started without a cluster"
grep -q "cannot reach the Ceph monitors at \[v1:127.0.0.1:$port\]" \
	"$TESTTMP/dead.log" || die "nbdkit: no clear line for an unreachable cluster"
echo "test-rbd: all passed"
