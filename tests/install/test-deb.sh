#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Debian packages, installed into a throwaway root, never on this
# machine: dpkg-buildpackage -b builds mqblkd and nbdkit-plugin-mqblk
# from a copy of the source, lintian finds nothing to say (when it is
# installed), and then, in a private mount, PID and network namespace,
# an overlay of / whose writes land in a tmpfs (deb-root.sh) installs
# them with dpkg -i, checks what the maintainer scripts did (the user
# mqblk, the socket enabled, the conffile), runs the unit's own
# ExecStart as the unit's User= with the shipped config, connects,
# and removes and purges them.  This machine's dpkg database, users and
# units are checked unchanged afterwards.  Needs root and unshare
# (exits 77, skipped, otherwise).
. "$MQBLK_SRC/tests/integration/mqblkd-lib.sh"

skip() {
	echo "$0: SKIP: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "a throwaway root needs root (mount and unshare)"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
command -v dpkg-buildpackage >/dev/null || skip "no dpkg-buildpackage (dpkg-dev)"
# The throwaway root must be possible before anything is built.
unshare --mount --propagation private sh -c '
	mount -t tmpfs tmpfs "$1" && mkdir "$1/u" "$1/w" "$1/m" &&
	mount -t overlay overlay -o "lowerdir=/,upperdir=$1/u,workdir=$1/w" "$1/m"' \
	_ "$TESTTMP" 2>"$TESTTMP/probe.err" ||
	skip "cannot make an overlay of / in a mount namespace: $(cat "$TESTTMP/probe.err")"

# What this machine has, to compare at the end.
host_state() {
	md5sum /var/lib/dpkg/status /etc/passwd /etc/group
	ls -la /etc/systemd/system/sockets.target.wants 2>/dev/null || true
	ls -d /etc/mqblk /var/lib/mqblk /usr/bin/mqblkd /lib/systemd/system/mqblkd.* 2>/dev/null || true
}
host_state >"$TESTTMP/host.before"

# The source as a clean copy: what git tracks and would track, no builds.
src=$TESTTMP/pkg/mqblk
mkdir -p "$src"
if git -C "$MQBLK_SRC" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$MQBLK_SRC" ls-files -z -co --exclude-standard |
		(cd "$MQBLK_SRC" && tar --null -T - -cf -) | tar -xf - -C "$src"
else
	(cd "$MQBLK_SRC" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$src"
fi

start=$SECONDS
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
	dpkg-buildpackage -b -us -uc) >"$TESTTMP/build.log" 2>&1 || {
	tail -40 "$TESTTMP/build.log" >&2
	die "dpkg-buildpackage failed"
}
echo "dpkg-buildpackage: $((SECONDS - start)) s"
debs=()
for p in mqblkd nbdkit-plugin-mqblk; do
	deb=$(find "$TESTTMP/pkg" -maxdepth 1 -name "${p}_*.deb")
	[ -f "$deb" ] || die "no ${p}_*.deb built: $(ls "$TESTTMP/pkg")"
	debs+=("$deb")
done

if command -v lintian >/dev/null; then
	# -E -I: errors, warnings and the informational tags; the two
	# informational ones below are what the package means to be.
	lintian -E -I --tag-display-limit 0 "${debs[@]}" 2>/dev/null |
		grep -v -e 'package-supports-alternative-init-but-no-init.d-script' \
			-e 'nbdkit-plugin-mqblk: spare-manual-page' >"$TESTTMP/lintian" || true
	[ ! -s "$TESTTMP/lintian" ] || die "lintian: $(cat "$TESTTMP/lintian")"
else
	echo "$0: lintian not installed: not run"
fi

# The rest runs in the throwaway root.
unshare --mount --pid --net --fork --propagation private \
	bash "$MQBLK_SRC/tests/install/deb-root.sh" "$TESTTMP" "${debs[@]}" ||
	die "in the throwaway root (above)"

host_state >"$TESTTMP/host.after"
diff "$TESTTMP/host.before" "$TESTTMP/host.after" >&2 ||
	die "this machine changed"
echo "deb: built, lintian clean, installed, served, removed and purged in a throwaway root"
