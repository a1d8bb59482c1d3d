#!/bin/bash
# Random writes and read-back, flush, FUA, trim, zero, out-of-range and
# misaligned requests, on each model.
. "$(dirname "$0")/lib.sh"

for dev in "${DEVICES[@]}"; do
	run_nbdsh "$dev" "$SCRIPTS/io.py"
done
