#!/bin/bash
# Export listing and the allocation map through mqblkd: nbdinfo --list,
# OPT_INFO then OPT_GO, an unknown name, nbdinfo --map on a sparse export.
. "$(dirname "$0")/mqblkd-lib.sh"

for dev in "${DEVICES[@]}"; do
	echo "== mqblkd: exports on $dev"
	MQBLK_DEVICE=$dev mqblkd_serve "$dev" -- \
		"nbdsh --opt-mode -u \"\$uri\" -c - < $SCRIPTS/exports.py &&
		 nbdinfo --list \"\$uri\" > $TESTTMP/list &&
		 nbdinfo \"\$uri\" > $TESTTMP/default &&
		 ! nbdinfo \"nbd+unix:///no-such-export?socket=\$unixsocket\""
	cat "$TESTTMP/list"
	grep -Eq '^export="[^"]+":' "$TESTTMP/list" ||
		die "$dev: nbdinfo --list shows no named export"
	grep -Eq 'description: .+: [0-9]+ hw queues?, depth [0-9]+, scheduler ' \
		"$TESTTMP/list" || die "$dev: nbdinfo --list shows no description"
	grep -q 'export-size: 67108864' "$TESTTMP/default" ||
		die "$dev: default export has the wrong size"
	grep -q "unknown export 'no-such-export' (exports: " "$MQBLKD_LOG" ||
		die "$dev: no 'unknown export' line"
done

echo "== mqblkd: exports on null with nr_devices=3"
MQBLK_EXTRA=nr_devices=3 MQBLK_NR_EXPORTS=3 MQBLK_DEVICE=null \
	mqblkd_serve null -- \
	"nbdsh --opt-mode -u \"\$uri\" -c - < $SCRIPTS/exports.py &&
	 nbdinfo --list \"\$uri\" > $TESTTMP/list"
[ "$(grep -c '^export=' "$TESTTMP/list")" = 3 ] ||
	die "null nr_devices=3: nbdinfo --list does not show 3 exports"

# The allocation map: nbdsh's checks, then nbdinfo --map of the result.
for dev in ram file; do
	echo "== mqblkd: extents on $dev"
	MQBLK_DEVICE=$dev MQBLK_SPARSE=1 mqblkd_serve "$dev" -- \
		"nbdsh --base-allocation -u \"\$uri\" -c - \
			< $SCRIPTS/extents.py &&
		 nbdinfo --map \"\$uri\" > $TESTTMP/map &&
		 nbdinfo --map --totals \"\$uri\" > $TESTTMP/totals"
	cat "$TESTTMP/map" "$TESTTMP/totals"
	python3 - "$TESTTMP/map" <<'PY'
import sys
MiB = 1 << 20
rows = [line.split()[:3] for line in open(sys.argv[1]) if line.strip()]
rows = [(int(o), int(n), int(t)) for o, n, t in rows]
assert rows and rows[0][0] == 0, rows
assert sum(n for _, n, _ in rows) == 64 * MiB, rows
def type_at(x):
    return next(t for o, n, t in rows if o <= x < o + n)
for x in (0, 7 * MiB, 9 * MiB, 31 * MiB, 33 * MiB, 63 * MiB):
    assert type_at(x) == 3, "hole expected at %d: %s" % (x, rows)
for x in (8 * MiB, 32 * MiB):
    assert type_at(x) == 0, "data expected at %d: %s" % (x, rows)
PY
done
