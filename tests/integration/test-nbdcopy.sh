#!/bin/bash
# nbdcopy 64 MiB of random data in, then out, compared by checksum.
. "$(dirname "$0")/lib.sh"

head -c 64M /dev/urandom > "$TESTTMP/in"
want=$(sha256sum < "$TESTTMP/in")

for dev in "${DEVICES[@]}"; do
	echo "== nbdcopy on $dev"
	rm -f "$TESTTMP/out"
	serve "$dev" -- \
		"\$CLIENT nbdcopy --flush $TESTTMP/in \"\$uri\" &&
		 \$CLIENT nbdcopy \"\$uri\" $TESTTMP/out"
	got=$(sha256sum < "$TESTTMP/out")
	[ "$got" = "$want" ] || die "$dev: checksum $got, expected $want"
done
