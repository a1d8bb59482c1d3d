#!/bin/bash
# qemu-img convert in and out, and qemu-io write/read with a pattern,
# against an nbd+unix URI.
. "$(dirname "$0")/lib.sh"

head -c 16M /dev/urandom > "$TESTTMP/in"

for dev in "${DEVICES[@]}"; do
	echo "== qemu on $dev"
	rm -f "$TESTTMP/out"
	serve "$dev" -- "
		set -e
		q=\"nbd+unix:///?socket=\$unixsocket\"
		\$CLIENT qemu-img convert -n -f raw -O raw \
			$TESTTMP/in \"\$q\"
		\$CLIENT qemu-img convert -f raw -O raw \"\$q\" \
			$TESTTMP/out.full
		head -c 16M $TESTTMP/out.full > $TESTTMP/out
		\$CLIENT qemu-io -f raw \
			-c 'write -P 0xa5 20M 1M' \
			-c 'write -P 0x5a 21M 64k' \
			-c 'read -P 0xa5 20M 1M' \
			-c 'aio_write -P 0x3c 30M 128k' -c 'aio_flush' \
			\"\$q\" > $TESTTMP/io1
		\$CLIENT qemu-io -f raw -r \
			-c 'read -P 0xa5 20M 1M' \
			-c 'read -P 0x5a 21M 64k' \
			-c 'read -P 0x3c 30M 128k' \
			-c 'read -P 0 40M 1M' \
			\"\$q\" > $TESTTMP/io2
	"
	cat "$TESTTMP/io1" "$TESTTMP/io2"
	cmp "$TESTTMP/in" "$TESTTMP/out" || die "$dev: qemu-img round trip"
	! grep -qi 'fail\|error' "$TESTTMP/io1" "$TESTTMP/io2" ||
		die "$dev: qemu-io reported a failure"
	[ "$(grep -c '^read ' "$TESTTMP/io2")" = 4 ] ||
		die "$dev: qemu-io did not complete 4 reads"
done
