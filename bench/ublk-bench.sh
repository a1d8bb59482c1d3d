#!/bin/bash
# mqblk-ublk in one qemu guest (tests/ublk/guest-lib.sh: Debian's 6.12
# cloud kernel under TCG), fio against
#   - the kernel's own null_blk: ublk null / null_blk
#   - the same RAM model through mqblkd and the kernel's nbd client:
#     ublk ram / nbd ram
# and prints a Markdown table of IOPS and their ratios.  TCG emulates
# every instruction, so only the ratios of one run mean anything.
# Usage: bench/ublk-bench.sh [BUILD_DIR]  (RUNTIME=5 seconds a workload,
# ROUNDS=3: the four targets alternate round by round; medians printed)
set -euo pipefail
export PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
MQBLK_SRC=$(cd "$(dirname "$0")/.." && pwd)
MQBLK_BUILD=$(cd "${1:-$MQBLK_SRC/build}" && pwd)
export MQBLK_SRC MQBLK_BUILD
. "$MQBLK_SRC/tests/ublk/guest-lib.sh"

for t in fio nbd-client; do
	command -v $t >/dev/null || skip "$t is missing"
done
ublk_guest_prepare "$(command -v fio)" "$(command -v nbd-client)" \
	"$MQBLK_BUILD/mqblkd"
sed -e "s/^RUNTIME=.*/RUNTIME=${RUNTIME:-5}/" \
	-e "s/^ROUNDS=.*/ROUNDS=${ROUNDS:-3}/" \
	"$MQBLK_SRC/bench/ublk-guest-bench.sh" >"$TMP/bench.sh"
ublk_guest_boot "$TMP/bench.sh" "$TMP/console.txt"
grep -a 'MQBLK-BENCH-ERROR' "$TMP/console.txt" >&2 || true
grep -a '^MQBLK-BENCH ' "$TMP/console.txt" >"$TMP/r" ||
	{ tail -30 "$TMP/console.txt" >&2; exit 1; }

# the median IOPS of a target and workload over the rounds
iops() {
	awk -v t="$1" -v w="$2" '$2 == t && $3 == w {print $4}' "$TMP/r" |
		sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'
}
echo "Medians of ${ROUNDS:-3} rounds, fio libaio, direct, ${RUNTIME:-5} s a run; IOPS."
echo
echo "| workload | ublk null | null_blk | ratio | ublk ram | nbd ram | ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for w in randwrite-4k-qd32 randread-4k-qd32 read-1m-qd4; do
	a=$(iops ublk-null $w) b=$(iops null_blk $w)
	c=$(iops ublk-ram $w) d=$(iops nbd-ram $w)
	awk -v w=$w -v a="${a:-0}" -v b="${b:-0}" -v c="${c:-0}" -v d="${d:-0}" 'BEGIN {
		printf "| %s | %d | %d | %.2f | %d | %d | %.2f |\n", w, a, b,
			b ? a / b : 0, c, d, d ? c / d : 0 }'
done
