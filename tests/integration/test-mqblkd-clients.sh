#!/bin/bash
# Real clients against mqblkd on each model: nbdcopy round trip,
# qemu-img convert and qemu-io patterns, and fio with crc32c verify at
# queue depth 16 (mqblkd pipelines: the depth reaches the device).
. "$(dirname "$0")/mqblkd-lib.sh"

head -c 64M /dev/urandom > "$TESTTMP/in"
want=$(sha256sum < "$TESTTMP/in")
head -c 16M "$TESTTMP/in" > "$TESTTMP/in16"

for dev in "${DEVICES[@]}"; do
	echo "== mqblkd: nbdcopy on $dev"
	rm -f "$TESTTMP/out"
	mqblkd_serve "$dev" -- \
		"nbdcopy --flush $TESTTMP/in \"\$uri\" &&
		 nbdcopy \"\$uri\" $TESTTMP/out"
	got=$(sha256sum < "$TESTTMP/out")
	[ "$got" = "$want" ] || die "$dev: nbdcopy checksum $got, expected $want"

	echo "== mqblkd: qemu on $dev"
	rm -f "$TESTTMP/out.full"
	mqblkd_serve "$dev" -- "
		set -e
		q=\"nbd+unix:///?socket=\$unixsocket\"
		qemu-img convert -n -f raw -O raw $TESTTMP/in16 \"\$q\"
		qemu-img convert -f raw -O raw \"\$q\" $TESTTMP/out.full
		qemu-io -f raw \
			-c 'write -P 0xa5 20M 1M' \
			-c 'write -P 0x5a 21M 64k' \
			-c 'read -P 0xa5 20M 1M' \
			-c 'aio_write -P 0x3c 30M 128k' -c 'aio_flush' \
			\"\$q\" > $TESTTMP/io1
		qemu-io -f raw -r \
			-c 'read -P 0xa5 20M 1M' \
			-c 'read -P 0x5a 21M 64k' \
			-c 'read -P 0x3c 30M 128k' \
			-c 'read -P 0 40M 1M' \
			\"\$q\" > $TESTTMP/io2
	"
	cat "$TESTTMP/io1" "$TESTTMP/io2"
	cmp <(head -c 16M "$TESTTMP/out.full") "$TESTTMP/in16" ||
		die "$dev: qemu-img round trip"
	! grep -qi 'fail\|error' "$TESTTMP/io1" "$TESTTMP/io2" ||
		die "$dev: qemu-io reported a failure"
	[ "$(grep -c '^read ' "$TESTTMP/io2")" = 4 ] ||
		die "$dev: qemu-io did not complete 4 reads"

	echo "== mqblkd: fio verify on $dev"
	mqblkd_serve "$dev" -- \
		"fio --name=verify-$dev --ioengine=nbd --uri=\"\$uri\" \
			--rw=randrw --bs=4k --iodepth=16 --size=64M \
			--verify=crc32c --verify_fatal=1 --runtime=5 \
			--time_based --output=$TESTTMP/fio.out"
	cat "$TESTTMP/fio.out"
	grep -Eq 'READ: bw=[1-9]' "$TESTTMP/fio.out" || die "$dev: no reads"
	grep -Eq 'WRITE: bw=[1-9]' "$TESTTMP/fio.out" || die "$dev: no writes"
	grep -E 'err= *0' "$TESTTMP/fio.out" >/dev/null ||
		die "$dev: fio reported errors"
done
