#!/bin/bash
# Two connections to one export see each other's flushed writes.
. "$(dirname "$0")/lib.sh"

for dev in "${DEVICES[@]}"; do
	run_nbdsh "$dev" "$SCRIPTS/multiconn.py"
done
