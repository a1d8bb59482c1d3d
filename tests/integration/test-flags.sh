#!/bin/bash
# The block sizes and flags the server advertises follow the model and
# its keys (see flags.py for the names).
. "$(dirname "$0")/lib.sh"

# check DEVICE "EXTRA KEYS" "EXPECTATIONS" [NBDKIT-OPTION...]
check() {
	MQBLK_EXTRA=$2 MQBLK_EXPECT=$3 run_nbdsh "$1" "$SCRIPTS/flags.py" \
		"${@:4}"
}

# The plugin serves any alignment (read-modify-write below the logical
# block), so the minimum is 1; the preferred size is the device's block.
# nbdkit itself turns off fua, trim and zero on a read-only export.
rw="size=67108864 max=67108864 ro=0 flush=1 fua=1 zero=1 cache=0"
ro="size=67108864 max=67108864 ro=1 flush=1 fua=0 zero=0 trim=0 cache=0"

check ram "" "$rw rot=0 min=1 pref=512 trim=1 extents=1 multi=1 fastzero=1"
check ram "bs=4096" "$rw min=1 pref=4096"
check ram "" "$ro rot=0 min=1 extents=1" -r
check null "" "$rw rot=0 min=1 trim=1 extents=1 multi=1 fastzero=1"
check null "bs=4096 rotational=1 discard=0" \
	"$rw rot=1 min=1 pref=4096 trim=0 extents=1"
check null "memory_backed=0 discard=0" "$rw rot=0 min=1 trim=0 fastzero=0"
check file "" "$rw rot=0 min=1 trim=1 extents=1"
check file "" "$ro min=1 extents=1" -r
check file "readonly=1" "$ro min=1 extents=1"
