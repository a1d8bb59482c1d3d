#!/bin/bash
# fio's nbd engine: 10 s of 4k random read/write at QD16 with crc32c
# verification, on each model.
. "$(dirname "$0")/lib.sh"

for dev in "${DEVICES[@]}"; do
	echo "== fio on $dev"
	serve "$dev" -- \
		"\$CLIENT fio --name=verify-$dev --ioengine=nbd \
			--uri=\"\$uri\" --rw=randrw --bs=4k --iodepth=16 \
			--size=64M --verify=crc32c --verify_fatal=1 \
			--runtime=10 --time_based \
			--output=$TESTTMP/fio.out"
	cat "$TESTTMP/fio.out"
	grep -Eq 'READ: bw=[1-9]' "$TESTTMP/fio.out" || die "$dev: no reads"
	grep -Eq 'WRITE: bw=[1-9]' "$TESTTMP/fio.out" || die "$dev: no writes"
	grep -E 'err= *0' "$TESTTMP/fio.out" >/dev/null ||
		die "$dev: fio reported errors"
done
