#!/bin/bash
# mqblkd's rbd device against qemu-nbd's rbd: driver and Ceph's rbd-nbd,
# all three inside one qemu guest, because rbd-nbd needs the kernel's nbd
# driver and a host kernel may have none (bench/rbd-bench.sh compares the
# first two on the host).  The cluster (tests/integration/ceph-lib.sh:
# a monitor and one memstore OSD) runs on the host, on an address of the
# host the guest reaches through qemu's user network; the guest (Debian's
# 6.12 cloud kernel under TCG, tests/ublk/guest-lib.sh) runs the three
# servers in turn, attaches each with the kernel's nbd client (rbd-nbd
# attaches itself) and runs fio with libaio and O_DIRECT on the device:
# 4k random read and write at QD32, 1 MiB sequential read and write at
# QD8.  TCG emulates every instruction the guest runs, servers and client
# alike, so only the ratios between servers of one run mean anything.
#
#   bench/rbd-guest-bench.sh [BUILD_DIR]     (default: build)
#
# Environment: RUNTIME (s per cell, default 10), ROUNDS (default 3; the
# servers alternate within a round, each round starting with the next
# one; cells are medians), WORKLOADS (default all four: 4k-randread-qd32
# 4k-randwrite-qd32 1m-read-qd8 1m-write-qd8), CEPH_ADDR (the
# host address the cluster listens on; default the first global IPv4
# address), SIZE (the image, default 256M).
set -euo pipefail
export PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
MQBLK_SRC=$(cd "$(dirname "$0")/.." && pwd)
MQBLK_BUILD=$(cd "${1:-$MQBLK_SRC/build}" && pwd)
export MQBLK_SRC MQBLK_BUILD
RUNTIME=${RUNTIME:-10}
ROUNDS=${ROUNDS:-3}
WORKLOADS=${WORKLOADS:-4k-randread-qd32 4k-randwrite-qd32 1m-read-qd8 1m-write-qd8}
SIZE=${SIZE:-256M}
die() {
	echo "$0: $*" >&2
	exit 1
}
for t in fio nbd-client qemu-nbd rbd-nbd rbd ceph-mon ceph-osd python3; do
	command -v $t >/dev/null ||
		die "$t is needed (tests/setup-deps.sh installs it)"
done
qemu_rbd=$(ls /usr/lib/*/qemu/block-rbd.so 2>/dev/null | head -1)
[ -n "$qemu_rbd" ] || die "qemu-nbd has no rbd driver (qemu-block-extra)"
[ -x "$MQBLK_BUILD/mqblkd" ] || die "$MQBLK_BUILD/mqblkd not built"
CEPH_ADDR=${CEPH_ADDR:-$(ip -4 -o addr show scope global |
	awk '{sub("/.*", "", $4); print $4; exit}')}
[ -n "$CEPH_ADDR" ] || die "no global IPv4 address for the guest to reach; set CEPH_ADDR"
export CEPH_ADDR

# The guest's kernel, initramfs and cleanup (guest-lib's trap), then the
# cluster, whose stop joins that trap.
export UBLK_GUEST_MODULES="failover net_failover virtio_net"
export UBLK_GUEST_NIC=user,model=virtio-net-pci
export UBLK_GUEST_MEM=2048
export MQBLK_UBLK_GUEST_TIMEOUT=$((900 + ROUNDS * 3 * 4 * (RUNTIME + 15)))
. "$MQBLK_SRC/tests/ublk/guest-lib.sh"
ublk_guest_prepare "$(command -v fio)" "$(command -v nbd-client)" \
	"$(command -v qemu-nbd)" "$(command -v rbd-nbd)" "$MQBLK_BUILD/mqblkd"
# qemu-nbd looks for its modules beside its binary: /bin/../lib/...
qemu_moddir=$root/lib/${qemu_rbd#/usr/lib/}
mkdir -p "$(dirname "$qemu_moddir")"
cp "$qemu_rbd" "$qemu_moddir"
ublk_guest_add_libs "$qemu_rbd"
for m in failover net_failover virtio_net; do
	[ -f "$root/lib/modules/$m.ko" ] || skip "the guest kernel has no $m module"
done

# shellcheck source=../tests/integration/ceph-lib.sh
. "$MQBLK_SRC/tests/integration/ceph-lib.sh"
trap 'ceph_stop; cleanup' EXIT
ceph_start
timeout -k 2 60 rbd --conf "$CEPH_CONF" create --size "$SIZE" rbd/bench ||
	die "rbd create failed"
# Written through once, so that reads find data.
timeout -k 2 300 rbd --conf "$CEPH_CONF" bench --io-type write --io-size 4M \
	--io-pattern seq --io-total "$SIZE" rbd/bench >/dev/null ||
	die "rbd bench (the fill) failed"
mkdir -p "$root/etc/ceph"
cp "$CEPH_DIR/keyring" "$root/etc/ceph/keyring"
cat >"$root/etc/ceph/ceph.conf" <<EOC
[global]
mon host = [v1:$CEPH_MON_ADDR]
ms bind msgr2 = false
auth client required = cephx
keyring = /etc/ceph/keyring
log file = /tmp/\$name.log
EOC

sed -e "s/^RUNTIME=.*/RUNTIME=$RUNTIME/" -e "s/^ROUNDS=.*/ROUNDS=$ROUNDS/" \
	-e "s/^WORKLOADS=.*/WORKLOADS='$WORKLOADS'/" \
	"$MQBLK_SRC/bench/rbd-guest-bench-guest.sh" >"$TMP/bench.sh"
echo "cluster on $CEPH_ADDR; $ROUNDS rounds of 3 servers x ($WORKLOADS), ${RUNTIME} s each" >&2
ublk_guest_boot "$TMP/bench.sh" "$TMP/console.txt"
grep -a 'MQBLK-BENCH-ERROR' "$TMP/console.txt" >&2 || true
grep -a '^MQBLK-BENCH ' "$TMP/console.txt" >"$TMP/r" ||
	{ tail -30 "$TMP/console.txt" >&2; exit 1; }
[ -z "${KEEP:-}" ] || cp "$TMP/console.txt" "$KEEP"

# median of column COL for a server and workload over the rounds
med() {
	awk -v s="$1" -v w="$2" -v c="$3" '$2 == s && $3 == w {print $c}' "$TMP/r" |
		sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'
}
# the per-round ratios mqblkd / best other, as "median (min-max)", of
# KiB/s: the IOPS fio prints are whole numbers, coarse at 1 MiB
ratios() {
	awk -v w="$1" '$3 == w {v[$2, ++n[$2]] = $5}
	END {
		for (i = 1; i <= n["mqblkd"]; i++) {
			b = v["qemu-nbd", i] > v["rbd-nbd", i] ? v["qemu-nbd", i] : v["rbd-nbd", i]
			if (b > 0) print v["mqblkd", i] / b
		}
	}' "$TMP/r" | sort -n | awk '{v[NR] = $1}
	END {if (NR) printf "%.2f (%.2f-%.2f)", v[int((NR + 1) / 2)], v[1], v[NR]}'
}
echo "Medians of $ROUNDS rounds, fio libaio direct on the kernel nbd device, ${RUNTIME} s a run."
echo
echo "| workload | mqblkd IOPS | qemu-nbd IOPS | rbd-nbd IOPS | mqblkd / best other (KiB/s) | server CPU us/IO: mqblkd, qemu-nbd, rbd-nbd | of which librbd's messenger |"
echo "|---|---:|---:|---:|---:|---|---|"
for w in $WORKLOADS; do
	printf '| %s | %s | %s | %s | %s | %s, %s, %s | %s, %s, %s |\n' $w \
		"$(med mqblkd $w 4)" "$(med qemu-nbd $w 4)" "$(med rbd-nbd $w 4)" \
		"$(ratios $w)" \
		"$(med mqblkd $w 7)" "$(med qemu-nbd $w 7)" "$(med rbd-nbd $w 7)" \
		"$(med mqblkd $w 8)" "$(med qemu-nbd $w 8)" "$(med rbd-nbd $w 8)"
done
echo
echo "Each round, in the order run (IOPS/mean completion latency in us/server CPU in us an I/O/of which librbd's messenger):"
echo
for w in $WORKLOADS; do
	for s in mqblkd qemu-nbd rbd-nbd; do
		printf '  %-18s %-9s' $w $s
		awk -v s=$s -v w=$w '$2 == s && $3 == w {printf " %d/%d/%d/%d", $4, $6, $7, $8}' "$TMP/r"
		echo
	done
done
