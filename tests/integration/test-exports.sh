#!/bin/bash
# list_exports, default_export, descriptions, OPT_INFO then OPT_GO, and
# an unknown export name.
. "$(dirname "$0")/lib.sh"

for dev in "${DEVICES[@]}"; do
	echo "== exports on $dev"
	MQBLK_DEVICE=$dev serve "$dev" -- \
		"\$CLIENT nbdsh --opt-mode -u \"\$uri\" -c - \
			< $SCRIPTS/exports.py &&
		 \$CLIENT nbdinfo --list \"\$uri\" > $TESTTMP/list &&
		 \$CLIENT nbdinfo \"\$uri\" > $TESTTMP/default &&
		 ! \$CLIENT nbdinfo \
			\"nbd+unix:///no-such-export?socket=\$unixsocket\""
	cat "$TESTTMP/list"
	grep -Eq '^export="[^"]+":' "$TESTTMP/list" ||
		die "$dev: nbdinfo --list shows no named export"
	grep -Eq 'description: .+: [0-9]+ hw queues?, depth [0-9]+, scheduler ' \
		"$TESTTMP/list" || die "$dev: nbdinfo --list shows no description"
	grep -q 'export-size: 67108864' "$TESTTMP/default" ||
		die "$dev: default export has the wrong size"
	grep -q "unknown export 'no-such-export' (exports: " \
		"$TESTTMP/nbdkit.log" || die "$dev: no 'unknown export' line"
done

# A device with several disks lists and opens every one of them.
echo "== exports on null with nr_devices=3"
MQBLK_EXTRA=nr_devices=3 MQBLK_NR_EXPORTS=3 MQBLK_DEVICE=null serve null -- \
	"\$CLIENT nbdsh --opt-mode -u \"\$uri\" -c - < $SCRIPTS/exports.py &&
	 \$CLIENT nbdinfo --list \"\$uri\" > $TESTTMP/list"
[ "$(grep -c '^export=' "$TESTTMP/list")" = 3 ] ||
	die "null nr_devices=3: nbdinfo --list does not show 3 exports"
