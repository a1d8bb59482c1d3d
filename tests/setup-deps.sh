#!/bin/sh
# Install the Debian 12 packages mqblk builds, tests and benchmarks with.
# Idempotent: apt runs only when something is missing.  Root, or sudo.
set -eu

PKGS="build-essential cmake pkg-config clang libclang-rt-14-dev clang-format
nbdkit nbdkit-plugin-dev libnbd-dev libnbd-bin python3-libnbd
libev-dev libssl-dev libinih-dev libsystemd-dev libjson-c-dev libmicrohttpd-dev check
fio qemu-utils genisoimage gnutls-bin openssl procps nbd-server blktrace systemd
man-db bash-completion debhelper dpkg-dev python3-prometheus-client chromium
librbd-dev ceph-mon ceph-osd ceph-common qemu-block-extra
liburing-dev qemu-system-x86 busybox-static cpio xz-utils e2fsprogs util-linux nbd-client
btrfs-progs rbd-nbd"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
echo "installing:$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
