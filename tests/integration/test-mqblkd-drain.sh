#!/bin/bash
# SIGTERM drains: requests in flight are finished and answered, what was
# acknowledged is in the image, and mqblkd exits 0.
. "$(dirname "$0")/mqblkd-lib.sh"

echo "== drain with slow reads in flight"
mqblkd_start null memory_backed=1 size=16M irqmode=2 \
	completion_nsec=200000000
python3 "$SCRIPTS/mqblkd_drain.py" "$uri" "$MQBLKD_PID" slow ||
	die "in-flight reads were not finished"
wait "$MQBLKD_PID" || die "mqblkd exited with $? after the drain"
MQBLKD_PID=
grep -q "finishing requests in flight" "$MQBLKD_LOG" ||
	die "no drain line"

echo "== drain with writes racing SIGTERM, file backend"
truncate -s 16M "$TESTTMP/img"
mqblkd_start file "file=$TESTTMP/img"
python3 "$SCRIPTS/mqblkd_drain.py" "$uri" "$MQBLKD_PID" writes \
	> "$TESTTMP/acked" || die "drain client failed"
wait "$MQBLKD_PID" || die "mqblkd exited with $? after the drain"
MQBLKD_PID=
cat "$MQBLKD_LOG"
[ -s "$TESTTMP/acked" ] || die "no write was acknowledged"
echo "$(wc -l < "$TESTTMP/acked") writes acknowledged"
python3 - "$TESTTMP/img" "$TESTTMP/acked" <<'PY'
import sys
img = open(sys.argv[1], "rb").read()
for line in open(sys.argv[2]):
    _, off, byte = line.split()
    off, byte = int(off), int(byte)
    assert img[off:off + 4096] == bytes([byte]) * 4096, \
        "acknowledged write at %d not in the image" % off
PY
echo "drain ok"
