#!/bin/bash
# The file model: data acknowledged after FLUSH or a FUA write is in the
# file even when the server is killed with SIGKILL right after.
. "$(dirname "$0")/lib.sh"

head -c 1M /dev/urandom > "$TESTTMP/a"
head -c 1M /dev/urandom > "$TESTTMP/b"
cat > "$TESTTMP/write.py" <<PY
import nbd
h.pwrite(open("$TESTTMP/a", "rb").read(), 1 << 20, nbd.CMD_FLAG_FUA)
h.pwrite(open("$TESTTMP/b", "rb").read(), 8 << 20)
h.flush()
PY

for extra in "" "direct=1" "sync=1"; do
	echo "== file $extra: write, flush, kill -9"
	rm -f "$TESTTMP/acked"
	# -P names the server process.  nbdkit reports the kill and exits
	# non-zero; "acked" says the client had its replies, then the
	# server was killed.
	MQBLK_EXTRA=$extra serve file -P "$TESTTMP/pid" -- \
		"\$CLIENT nbdsh -u \"\$uri\" -c - < $TESTTMP/write.py &&
		 kill -9 \$(cat $TESTTMP/pid) && touch $TESTTMP/acked" || :
	[ -f "$TESTTMP/acked" ] || die "file $extra: write or kill failed"
	cmp -n 1M -i 1M:0 "$TESTTMP/file.img" "$TESTTMP/a" ||
		die "file $extra: FUA write lost"
	cmp -n 1M -i 8M:0 "$TESTTMP/file.img" "$TESTTMP/b" ||
		die "file $extra: flushed write lost"
done
