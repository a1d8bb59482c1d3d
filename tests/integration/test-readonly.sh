#!/bin/bash
# nbdkit -r: every write-like command gets EPERM, reads still work.
. "$(dirname "$0")/lib.sh"

for dev in "${DEVICES[@]}"; do
	run_nbdsh "$dev" "$SCRIPTS/readonly.py" -r
done
