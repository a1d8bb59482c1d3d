#!/bin/bash
# mqblk-ublk through a real kernel's ublk driver, in a qemu guest: the
# host kernel need not have ublk (tests/ublk/guest-lib.sh boots Debian's
# 6.12 cloud kernel under TCG).  The guest runs tests/ublk/guest-tests.sh
# and prints one MQBLK-RESULT line per check.  Exit 77 (skip), never a
# pass, when qemu, busybox or the kernel package cannot be had.
set -euo pipefail
export PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
. "$(dirname "$0")/guest-lib.sh"

extra=()
for t in mke2fs e2fsck blkzone mkfs.btrfs; do
	p=$(command -v "$t" || true)
	[ -n "$p" ] && extra+=("$p")
done
ublk_guest_prepare "${extra[@]}"
ln -sf mke2fs "$root/bin/mkfs.ext4"
ublk_guest_boot "$UBLK_HERE/guest-tests.sh" "$TMP/console.txt"
log=$TMP/console
grep -q '^MQBLK-BOOTED' "$log.txt" || {
	tail -40 "$log.txt" >&2
	echo "$0: FAIL: the guest did not boot" >&2
	exit 1
}
grep '^MQBLK-BOOTED' "$log.txt"
fails=0 passes=0
while read -r _ name verdict detail; do
	echo "  $name: $verdict: $detail"
	case $verdict in
	pass) passes=$((passes + 1)) ;;
	*) fails=$((fails + 1)) ;;
	esac
done < <(grep '^MQBLK-RESULT ' "$log.txt")
if ! grep -q '^MQBLK-DONE' "$log.txt"; then
	tail -40 "$log.txt" >&2
	echo "$0: FAIL: the guest did not finish (timeout ${GUEST_TIMEOUT}s?)" >&2
	exit 1
fi
if [ "$fails" -ne 0 ] || [ "$passes" -eq 0 ]; then
	grep -v '^MQBLK-' "$log.txt" | tail -30 >&2
	echo "$0: FAIL: $fails of $((passes + fails)) guest checks failed" >&2
	exit 1
fi
echo "$0: $passes guest checks passed"
