#!/bin/bash
# Bad configuration stops nbdkit at start-up with one line naming the
# key; --help lists every driver and its keys.
. "$(dirname "$0")/lib.sh"

truncate -s 1M "$TESTTMP/small.img"

# refuse PATTERN KEY=VALUE...: nbdkit must fail before serving, with
# exactly one line on stderr, matching PATTERN (grep -E).
refuse() {
	local pattern=$1 rc=0
	shift
	echo "== refuse: $*"
	mqblk_nbdkit -U - --run "echo served; exit 0" "$PLUGIN" "$@" \
		>"$TESTTMP/out" 2>"$TESTTMP/err" || rc=$?
	cat "$TESTTMP/out" "$TESTTMP/err"
	[ $rc -ne 0 ] || die "nbdkit accepted: $*"
	! grep -q served "$TESTTMP/out" || die "nbdkit served: $*"
	grep -Eq -- "$pattern" "$TESTTMP/err" ||
		die "no line matching '$pattern' for: $*"
	[ "$(grep -c . "$TESTTMP/err")" -eq 1 ] ||
		die "more than one line for: $*"
}

refuse "device=NAME is required" size=1M
refuse "no-such-device.*(null.*ram.*file|ram.*null.*file)" \
	device=no-such-device size=1M
refuse "no_such_key" device=ram size=1M no_such_key=1
refuse "no_such_key" device=null size=1M no_such_key=1
refuse "no_such_key" device=file "file=$TESTTMP/small.img" no_such_key=1
refuse "size" device=ram size=12Q
refuse "size" device=ram size=-1
refuse "size" device=ram size=1000
refuse "size" device=null size=banana
refuse "file" device=file "file=$TESTTMP/no-such-file.img"
refuse "file" device=file
refuse "queue_mode|legacy IO path no longer available" device=null \
	queue_mode=1 size=1M
refuse "bs" device=null bs=513 size=1M
refuse "time_scale" device=ram size=1M time_scale=fast

# A good configuration with the magic key (nbdkit PLUGIN ram size=...).
mqblk_nbdkit -U - --run "\$CLIENT nbdinfo --size \"\$uri\"" \
	"$PLUGIN" ram size=1M >"$TESTTMP/out"
[ "$(cat "$TESTTMP/out")" = 1048576 ] || die "ram size=1M: wrong size"

# --help names every driver and some of their keys.
mqblk_nbdkit "$PLUGIN" --help >"$TESTTMP/help"
for word in "device=" "time_scale=" "null:" "ram:" "file:" \
	"memory_backed=" "irqmode=" "direct="; do
	grep -q -- "$word" "$TESTTMP/help" || die "--help lacks $word"
done
mqblk_nbdkit "$PLUGIN" --dump-plugin | grep -q '^mqblk_devices=.*ram' ||
	die "--dump-plugin lacks mqblk_devices"
