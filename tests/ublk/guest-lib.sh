# Shared by tests/ublk/test-ublk-guest.sh and bench/ublk-bench.sh: the
# guest kernel (Debian 12's 6.12 cloud kernel, downloaded once with
# apt-get download and cached under ${XDG_CACHE_HOME:-~/.cache}/mqblk/ublk)
# and a busybox initramfs holding mqblk-ublk, mqblkctl, the tools the
# guest scripts use and the libraries ldd names, booted by qemu under TCG
# (no KVM needed) with no network and the console on serial.  Source it;
# callers set MQBLK_BUILD and MQBLK_SRC.  Exit 77 (skip), never a pass,
# when qemu, busybox or the kernel package cannot be had.
#
#   ublk_guest_prepare EXTRA_BINARY...   kernel, modules, initramfs root
#   ublk_guest_add_libs FILE             the libraries FILE needs, into the root
#   ublk_guest_boot SCRIPT LOG           run SCRIPT as the guest's tests
#
# Optional: UBLK_GUEST_MODULES (more kernel modules to put in
# /lib/modules, by name), UBLK_GUEST_NIC (qemu's -nic, default none),
# UBLK_GUEST_MEM (MiB, default 1024).

: "${MQBLK_BUILD:?MQBLK_BUILD must name the build directory}"
: "${MQBLK_SRC:?MQBLK_SRC must name the source directory}"
UBLK_HERE=$MQBLK_SRC/tests/ublk
KPKG=${MQBLK_UBLK_KERNEL_PKG:-linux-image-6.12-cloud-amd64}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/mqblk/ublk
GUEST_TIMEOUT=${MQBLK_UBLK_GUEST_TIMEOUT:-480}

skip() {
	echo "$0: SKIP: $*" >&2
	exit 77
}

ublk_guest_prepare() {
	local tool p t m ko kver_pkg deb
	for tool in qemu-system-x86_64 cpio gzip xz dpkg-deb apt-get; do
		command -v "$tool" >/dev/null ||
			skip "$tool is missing (tests/setup-deps.sh installs it)"
	done
	BUSYBOX=$(command -v busybox || true)
	if [ -z "$BUSYBOX" ] || ldd "$BUSYBOX" >/dev/null 2>&1; then
		skip "a static busybox is missing (apt-get install busybox-static)"
	fi
	[ -x "$MQBLK_BUILD/mqblk-ublk" ] || { echo "$0: mqblk-ublk not built" >&2; exit 1; }
	[ "$(uname -m)" = x86_64 ] || skip "the guest kernel is amd64's"

	# The kernel package: the newest the metapackage names, downloaded once.
	mkdir -p "$CACHE"
	kver_pkg=$(apt-cache depends "$KPKG" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-6[^ ]*\)$/\1/p' | head -1 || true)
	deb=""
	if [ -n "$kver_pkg" ]; then
		deb=$(ls "$CACHE"/"${kver_pkg}"_*.deb 2>/dev/null | head -1 || true)
		if [ -z "$deb" ]; then
			echo "$0: downloading $kver_pkg (about 35 MB, once) into $CACHE"
			(cd "$CACHE" && apt-get download "$kver_pkg" >/dev/null 2>&1) ||
				skip "apt-get download $kver_pkg failed"
			deb=$(ls "$CACHE"/"${kver_pkg}"_*.deb | head -1)
		fi
	else
		# No apt lists: whatever was cached before.
		deb=$(ls "$CACHE"/linux-image-6*-cloud-amd64_*.deb 2>/dev/null | head -1 || true)
		[ -n "$deb" ] || skip "apt knows no $KPKG (apt-get update?) and none is cached"
	fi
	kdir=$CACHE/$(basename "$deb" .deb)
	if [ ! -f "$kdir/.done" ]; then
		rm -rf "$kdir"
		mkdir -p "$kdir"
		dpkg-deb -x "$deb" "$kdir"
		touch "$kdir/.done"
	fi
	vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -1)
	ublk_ko=$(find "$kdir/lib/modules" -name 'ublk_drv.ko*' | head -1)
	[ -n "$ublk_ko" ] || skip "$(basename "$deb") has no ublk_drv module"

	TMP=$(mktemp -d "${TMPDIR:-/tmp}/mqblk-ublk-guest.XXXXXX")
	QEMU_PID=
	cleanup() {
		[ -n "$QEMU_PID" ] && kill -9 "$QEMU_PID" 2>/dev/null
		rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The initramfs: busybox, our binaries and tools, and their libraries.
root=$TMP/root
mkdir -p "$root"/{bin,sbin,lib,lib64,proc,sys,dev,tmp,run,tests,lib/modules}
cp "$BUSYBOX" "$root/bin/busybox"
case $ublk_ko in
*.xz) xz -dc "$ublk_ko" >"$root/lib/modules/ublk_drv.ko" ;;
*) cp "$ublk_ko" "$root/lib/modules/ublk_drv.ko" ;;
esac
# The kernel's own schedulers (modules in this kernel), so that the
# default the kernel would give /dev/ublkbN is there to be replaced.
for m in mq-deadline kyber-iosched bfq configfs null_blk nbd \
	xor raid6_pq libcrc32c btrfs ${UBLK_GUEST_MODULES:-}; do
	ko=$(find "$kdir/lib/modules" -name "$m.ko*" | head -1)
	[ -n "$ko" ] || continue
	case $ko in
	*.xz) xz -dc "$ko" >"$root/lib/modules/$m.ko" ;;
	*) cp "$ko" "$root/lib/modules/$m.ko" ;;
	esac
done
add_bin() { # PATH: the binary and what ldd names
	cp "$1" "$root/bin/"
	ublk_guest_add_libs "$1"
}
add_bin "$MQBLK_BUILD/mqblk-ublk"
add_bin "$MQBLK_BUILD/mqblkctl"
cp "$UBLK_HERE/guest-init.sh" "$root/init"
chmod +x "$root/init"
for p in "$@"; do
	add_bin "$p"
done
}

ublk_guest_add_libs() { # FILE: what ldd names for it
	local lib
	for lib in $(ldd "$1" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

# ublk_guest_boot SCRIPT LOG: SCRIPT runs as /tests/guest-tests.sh; the
# console, without carriage returns, ends up in LOG.
ublk_guest_boot() {
	cp "$1" "$root/tests/guest-tests.sh"
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$TMP/initrd.gz"
	# Boot: TCG (KVM is not assumed to work), two CPUs, no network
	# unless the caller asks for one.
	log=$TMP/console.log
	echo "$0: booting $(basename "$vmlinuz") under TCG"
	timeout -k 5 "$GUEST_TIMEOUT" qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m "${UBLK_GUEST_MEM:-1024}" \
		-nographic -no-reboot -nic "${UBLK_GUEST_NIC:-none}" -monitor none -serial stdio \
		-kernel "$vmlinuz" -initrd "$TMP/initrd.gz" \
		-append "console=ttyS0 panic=-1 quiet loglevel=4 rdinit=/init" \
		</dev/null >"$log" 2>&1 &
	QEMU_PID=$!
	wait "$QEMU_PID" || true
	QEMU_PID=

	tr -d '\r' <"$log" >"$2"
}
