#!/bin/bash
# The nbdkit plugin names each connection with an id of its own, never
# one an earlier connection had: BFQ keeps a client's state by id.
# Twenty connections one after the other (each handle freed before the
# next is made: ids that were handle addresses came back, 9 distinct of
# 20) read through a traced null export; blkparse shows the client id as
# the pid: 1 to 20, in order.
if [ "${1:-}" = --run ]; then
	set -euo pipefail
	export PATH=/usr/bin:/bin:$PATH
	ctl="$MQBLK_BUILD/mqblkctl -s $CTL_SOCK"
	$ctl trace start "$TESTTMP/trace"
	for i in $(seq 20); do
		nbdsh -u "$2" -c "h.pread(4096, $i * 65536)"
	done
	$ctl trace stop
	exit 0
fi
. "$(dirname "$0")/lib.sh"
command -v blkparse >/dev/null || die "blkparse missing (tests/setup-deps.sh)"
CTL_SOCK=$TESTTMP/ctl.sock
export CTL_SOCK MQBLK_BUILD TESTTMP
MQBLK_EXTRA="control=$CTL_SOCK trace-dir=$TESTTMP" serve null -- \
	"\$CLIENT bash $SELF --run \"\$uri\"" || die "the clients failed"
(cd "$TESTTMP/trace" && blkparse -i nullb0 -d nullb0.bin \
	-o "$TESTTMP/parsed") >/dev/null || die "blkparse failed"
# "maj,min cpu seq time pid action rwbs sector + n": reads queued.
pids=$(awk '$6 == "Q" && $7 ~ /R/ { print $5 }' "$TESTTMP/parsed" | sort -u)
echo "client ids seen:" $pids
pids=$(echo "$pids" | sort -n)
[ "$(echo "$pids" | wc -w)" = 20 ] || die "20 connections, ids: $pids"
[ "$pids" = "$(seq 20)" ] || die "ids are not 1..20: $pids"
echo "plugin clients ok"
