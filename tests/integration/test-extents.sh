#!/bin/bash
# Extents: holes and data on the sparse models (ram, file, memory-backed
# null), through libnbd block_status and through nbdinfo --map.
. "$(dirname "$0")/lib.sh"

for dev in "${DEVICES[@]}"; do
	sparse=1
	echo "== extents on $dev"
	MQBLK_DEVICE=$dev MQBLK_SPARSE=$sparse serve "$dev" -- \
		"\$CLIENT nbdsh --base-allocation -u \"\$uri\" -c - \
			< $SCRIPTS/extents.py &&
		 \$CLIENT nbdinfo --map \"\$uri\" > $TESTTMP/map"
	cat "$TESTTMP/map"
	# Check the map nbdinfo printed: columns offset, length, type.
	MQBLK_SPARSE=$sparse python3 - "$TESTTMP/map" <<'PY'
import os, sys
MiB = 1 << 20
rows = [line.split()[:3] for line in open(sys.argv[1]) if line.strip()]
rows = [(int(o), int(n), int(t)) for o, n, t in rows]
assert rows and rows[0][0] == 0, rows
assert sum(n for _, n, _ in rows) == 64 * MiB, rows


def type_at(x):
    return next(t for o, n, t in rows if o <= x < o + n)


if os.environ["MQBLK_SPARSE"] == "1":
    for x in (0, 7 * MiB, 9 * MiB, 31 * MiB, 33 * MiB, 63 * MiB):
        assert type_at(x) == 3, "hole expected at %d: %s" % (x, rows)
    for x in (8 * MiB, 32 * MiB):
        assert type_at(x) == 0, "data expected at %d: %s" % (x, rows)
else:
    assert all(t == 0 for _, _, t in rows), rows
PY
done
