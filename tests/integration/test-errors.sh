#!/bin/bash
# A device failure (null_blk's timeout fault) is an EIO for the client,
# with a log line naming the disk and the reason; requeue faults are
# transparent.
# io_timeout is 1 s, not less: on a loaded machine an ordinary request
# may take a few hundred ms, and only the injected one may time out.
. "$(dirname "$0")/lib.sh"

MQBLK_EXTRA="timeout=1,100,0,1 requeue=3,100,0,20 io_timeout=1000" \
	run_nbdsh null "$SCRIPTS/errors.py"
grep -Eq 'error: nullb0: .*timed out \(timeout fault injected\).*EIO' \
	"$TESTTMP/nbdkit.log" || die "no log line naming nullb0 and the timeout"
