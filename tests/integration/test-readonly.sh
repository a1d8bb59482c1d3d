#!/bin/bash
# Read-only exports: reads work, every write-like command gets EPERM, the
# data does not change (readonly.py).
#  - nbdkit -r over the three common models;
#  - the plugin's own refusal, with nbdkit NOT in read-only mode: devices
#    that are read-only (ide-cd, gdrom) or made so by a key (file
#    readonly=1, mspro read_only=1).  nbdinfo must show them read-only,
#    and the same devices without the key must show read-write, so the
#    flag comes from the plugin (can_write), not from nbdkit.
. "$(dirname "$0")/lib.sh"

for dev in "${DEVICES[@]}"; do
	run_nbdsh "$dev" "$SCRIPTS/readonly.py" -r
done

mkdir -p "$TESTTMP/tree"
head -c 1M /dev/urandom >"$TESTTMP/tree/DATA.BIN"
ISO=$TESTTMP/ro.iso
make_iso "$TESTTMP/tree" "$ISO"

# The file model keeps lib.sh's device_args, under another name.
eval "$(declare -f device_args | sed '1s/device_args/common_device_args/')"
device_args() {
	case $1 in
	file-ro)
		common_device_args file
		ARGS+=(readonly=1)
		;;
	mspro-ro)
		ARGS=(device=mspro size=16M read_only=1 time_scale=0)
		;;
	mspro)
		ARGS=(device=mspro size=16M time_scale=0)
		;;
	ide-cd)
		ARGS=(device=ide-cd "image=$ISO" time_scale=0)
		;;
	gdrom)
		ARGS=(device=gdrom "image=$ISO" time_scale=0)
		;;
	*)
		common_device_args "$1"
		;;
	esac
}

# nbdinfo's is_read_only for DEVICE served without -r.
read_only_flag() {
	serve "$1" -- "\$CLIENT nbdinfo --json \"\$uri\"" >"$TESTTMP/info.json"
	python3 -c '
import json, sys
print(str(json.load(open(sys.argv[1]))["exports"][0]["is_read_only"]).lower())
' "$TESTTMP/info.json"
}

for dev in file-ro mspro-ro ide-cd gdrom; do
	echo "== plugin read-only: $dev (nbdkit without -r)"
	[ "$(read_only_flag "$dev")" = true ] ||
		die "$dev: nbdinfo does not show read-only"
	run_nbdsh "$dev" "$SCRIPTS/readonly.py"
done
for dev in file mspro; do
	[ "$(read_only_flag "$dev")" = false ] ||
		die "$dev: read-only without the key"
done
