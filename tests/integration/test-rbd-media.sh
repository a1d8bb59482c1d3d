#!/bin/bash
# media=rbd:POOL/IMAGE on the emulated models, through both front ends:
# an ide-disk and an sx8 port keep their sectors in a Ceph RBD image;
# what is written through the model is what `rbd export` reads from the
# cluster, and a new server reads it back through the model.  A bad rbd:
# string stops start-up with one clear line.
. "$(dirname "$0")/rbd-lib.sh"

rbd_setup
RBD=(timeout -k 2 60 rbd --conf "$CEPH_CONF")
head -c 4M /dev/urandom >"$TESTTMP/a.bin"
head -c 4M /dev/urandom >"$TESTTMP/b.bin"

# in_image FILE IMAGE: the image's first 4 MiB in the cluster are FILE.
in_image() {
	rm -f "$TESTTMP/export.bin"
	"${RBD[@]}" export "rbd/$2" "$TESTTMP/export.bin" >/dev/null 2>&1 ||
		die "rbd export rbd/$2 failed"
	cmp -n 4194304 "$1" "$TESTTMP/export.bin" ||
		die "rbd/$2 does not hold $1"
}

# reads_back FILE URI: the first 4 MiB read through URI are FILE.
reads_back() {
	$CLIENT nbdcopy "$2" "$TESTTMP/out.bin"
	cmp -n 4194304 "$1" "$TESTTMP/out.bin" || die "$2 does not read back $1"
}

for fe in "${FRONTENDS[@]}"; do
	echo "== $fe: ide-disk with media=rbd:"
	"${RBD[@]}" create --size 32M "rbd/ide-$fe"
	if [ "$fe" = nbdkit ]; then
		key=device=ide-disk
	else
		key=ide-disk
	fi
	# rbd_server_start serves device=rbd: start by hand here.
	sock=$TESTTMP/m.sock
	rm -f "$sock"
	if [ "$fe" = nbdkit ]; then
		env ${MQBLK_PRELOAD:+"LD_PRELOAD=$MQBLK_PRELOAD"} \
			${MQBLK_PRELOAD:+ASAN_OPTIONS=detect_leaks=0} \
			nbdkit -f -U "$sock" "$PLUGIN" "$key" \
			"media=rbd:rbd/ide-$fe" "conf=$CEPH_CONF" time_scale=0 \
			2>"$SERVER_LOG" &
	else
		"$MQBLKD" -f -v -U "$sock" "$key" "media=rbd:rbd/ide-$fe" \
			"conf=$CEPH_CONF" time_scale=0 2>"$SERVER_LOG" &
	fi
	SERVER_PID=$!
	wait_listening "$sock" || { cat "$SERVER_LOG"; die "$fe ide-disk did not start"; }
	uri="nbd+unix:///?socket=$sock"
	$CLIENT nbdinfo "$uri" | grep -q 'export-size: 33554432' ||
		die "$fe: ide-disk did not take the image's size"
	$CLIENT nbdcopy "$TESTTMP/a.bin" "$uri"
	reads_back "$TESTTMP/a.bin" "$uri"
	rbd_server_stop
	in_image "$TESTTMP/a.bin" "ide-$fe"
done

echo "== mqblkd: sx8 ports on rbd: (one image each), read back by a new server"
"${RBD[@]}" create --size 16M rbd/port0
"${RBD[@]}" create --size 16M rbd/port1
sx8=(sx8 ports=4 time_scale=0 "conf=$CEPH_CONF" port0.media=rbd:rbd/port0
	port1.media=rbd:rbd/port1 port2.present=0 port3.present=0)
mqblkd_start "${sx8[@]}"
p0="nbd+unix:///sx8/port0?socket=$unixsocket"
p1="nbd+unix:///sx8/port1?socket=$unixsocket"
$CLIENT nbdcopy "$TESTTMP/a.bin" "$p0"
$CLIENT nbdcopy "$TESTTMP/b.bin" "$p1"
mqblkd_stop
in_image "$TESTTMP/a.bin" port0
in_image "$TESTTMP/b.bin" port1
mqblkd_start "${sx8[@]}"
reads_back "$TESTTMP/a.bin" "$p0"
reads_back "$TESTTMP/b.bin" "$p1"
mqblkd_stop

echo "== nbdkit plugin: an sx8 port on rbd:"
"${RBD[@]}" create --size 16M rbd/port0-nbdkit
mqblk_nbdkit -U - --run "\$CLIENT nbdcopy $TESTTMP/b.bin \"\$uri\"" \
	"$PLUGIN" device=sx8 ports=4 time_scale=0 "conf=$CEPH_CONF" \
	port1.present=0 port2.present=0 port3.present=0 \
	port0.media=rbd:rbd/port0-nbdkit 2>"$TESTTMP/nbdkit.log" || {
	cat "$TESTTMP/nbdkit.log"
	die "nbdkit mqblk sx8 port0.media=rbd: failed"
}
in_image "$TESTTMP/b.bin" port0-nbdkit

echo "== bad rbd: strings: one clear line"
for spec in rbd: rbd:noslash rbd:/img rbd:pool/ rbd:rbd/missing; do
	rc=0
	$CLIENT "$MQBLKD" -f -U "$TESTTMP/bad.sock" ide-disk "media=$spec" \
		"conf=$CEPH_CONF" 2>"$TESTTMP/bad.log" || rc=$?
	cat "$TESTTMP/bad.log"
	[ $rc -ne 0 ] || die "media=$spec was taken"
	[ "$(wc -l <"$TESTTMP/bad.log")" -eq 1 ] ||
		die "media=$spec: not one line"
	grep -q "media=$spec" "$TESTTMP/bad.log" ||
		grep -q "no such image" "$TESTTMP/bad.log" ||
		die "media=$spec: the line names neither the key nor the image"
done
echo "test-rbd-media: all passed"
