#!/bin/bash
# NBD's default block-size constraints: a client that did not ask for
# NBD_INFO_BLOCK_SIZE (EXPORT_NAME here) may send requests of any
# alignment and payloads up to 64 MiB; they are served by
# read-modify-write without touching a neighbouring byte, also when
# misaligned writes sharing a block are in flight together.  A client
# that asked is held to the disk's minimum (EINVAL).  mqblkd and the
# nbdkit plugin, on 4096-, 2048- and 512-byte blocks, with devices that
# complete inline and from other threads.
. "$(dirname "$0")/mqblkd-lib.sh"

U=$SCRIPTS/unaligned.py
configs=(
	"ram size=64M bs=4096 time_scale=0"
	"null size=64M bs=2048 memory_backed=1 discard=1 irqmode=2 completion_nsec=200000"
	"null size=64M bs=512 memory_backed=1 irqmode=1"
)
for cfg in "${configs[@]}"; do
	# shellcheck disable=SC2086 # the words are the device's keys
	set -- $cfg
	bs=$(sed -n 's/.*bs=\([0-9]*\).*/\1/p' <<<"$cfg")
	echo "== mqblkd $cfg"
	mqblkd_start -t 2 "$@"
	$CLIENT python3 "$U" "$unixsocket" export_name "$bs" ||
		die "mqblkd $cfg: misaligned requests"
	$CLIENT python3 "$U" "$unixsocket" go_block_size "$bs" ||
		die "mqblkd $cfg: a client that asked for the block size"
	mqblkd_stop

	echo "== nbdkit plugin $cfg"
	mqblk_nbdkit -U - --run "$CLIENT python3 $U \$unixsocket export_name $bs" \
		"$PLUGIN" "$@" 2>"$TESTTMP/nbdkit.log" ||
		{ cat "$TESTTMP/nbdkit.log" >&2; die "plugin $cfg: misaligned requests"; }
done
echo "unaligned: ok"
