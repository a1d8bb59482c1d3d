#!/bin/bash
# Durability is proved by order, not by surviving kill -9 (the page cache
# outlives the process): the syncshim, preloaded into the server, logs the
# writes to the image, each fdatasync/fsync's start and end, and each
# reply as it leaves.  durability.py checks that every FLUSH and FUA write
# reply, and on a device without a volatile cache every write reply, left
# only after a sync that started after the last write to the image had
# returned.  Both front ends (nbdkit with the plugin, mqblkd), the file
# model in each of its modes, and every device that writes to an image=.
# (gdrom and ide-cd have image= too, but are read-only.)
. "$(dirname "$0")/mqblkd-lib.sh"

SHIM=$MQBLK_BUILD/mqblk-syncshim.so
[ -f "$SHIM" ] || die "$SHIM not built"
IMG=$TESTTMP/disk.img
SYNCLOG=$TESTTMP/sync.log
PRELOAD="${MQBLK_PRELOAD:+$MQBLK_PRELOAD }$SHIM"
# An ASan mqblkd wants its runtime first in the library list; nbdkit is
# not ours, its leaks are not checked (as in lib.sh).
SHIM_ENV=(env "LD_PRELOAD=$PRELOAD" "MQBLK_SYNCLOG=$SYNCLOG"
	"ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")

# check_nbdkit MODE DEVICE-KEYS...: one run through nbdkit and the plugin.
check_nbdkit() {
	local mode=$1
	shift
	echo "== nbdkit: $* ($mode)"
	rm -f "$IMG" "$SYNCLOG"
	truncate -s 64M "$IMG"
	"${SHIM_ENV[@]}" ASAN_OPTIONS=detect_leaks=0 nbdkit -U - --run \
		"\$CLIENT python3 $SCRIPTS/durability.py \$unixsocket $IMG $mode $SYNCLOG" \
		"$PLUGIN" "$@" 2>"$TESTTMP/nbdkit.log" || {
		cat "$TESTTMP/nbdkit.log" >&2
		die "nbdkit: $*: durability not proved"
	}
}

# check_mqblkd MODE DEVICE DEVICE-KEYS...: the same through mqblkd.
check_mqblkd() {
	local mode=$1
	shift
	echo "== mqblkd: $* ($mode)"
	rm -f "$IMG" "$SYNCLOG"
	truncate -s 64M "$IMG"
	# mqblkd_start runs "$MQBLKD" as one word: go through a wrapper.
	printf '#!/bin/bash\nexec %s "$@"\n' \
		"$(printf '%q ' "${SHIM_ENV[@]}" "$MQBLK_BUILD/mqblkd")" \
		>"$TESTTMP/mqblkd-shim"
	chmod +x "$TESTTMP/mqblkd-shim"
	MQBLKD=$TESTTMP/mqblkd-shim
	mqblkd_start "$@"
	python3 "$SCRIPTS/durability.py" "$unixsocket" "$IMG" "$mode" \
		"$SYNCLOG" || {
		mqblkd_stop || :
		die "mqblkd: $*: durability not proved"
	}
	mqblkd_stop
}

T=time_scale=0
# MQBLK_FRONTENDS narrows a run to one front end, for debugging.
for fe in ${MQBLK_FRONTENDS:-nbdkit mqblkd}; do
	if [ "$fe" = nbdkit ]; then
		run() { check_nbdkit "$1" "device=$2" "${@:3}"; }
	else
		run() { check_mqblkd "$@"; }
	fi
	run cache file "file=$IMG" $T
	run cache file "file=$IMG" direct=1 $T
	run through file "file=$IMG" sync=1 $T
	run cache ide-disk "image=$IMG" $T
	run through ide-disk "image=$IMG" write_cache=0 $T
	run through mspro "image=$IMG" $T
done
