#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Debian packages: dpkg-buildpackage -b builds mqblkd and
# nbdkit-plugin-mqblk from a copy of the source (it writes into the
# parent directory), dpkg -i installs them on this machine, the installed
# /usr/bin/mqblkd and "nbdkit mqblk" (the plugin found by name in nbdkit's
# plugin directory) serve, nbdinfo reads them, and dpkg -r removes both.
# Needs root (CI runs as root); exits 77 (skipped) otherwise.
. "$MQBLK_SRC/tests/integration/mqblkd-lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "$0: SKIP: dpkg -i needs root"
	exit 77
fi
for f in /usr/bin/mqblkd /usr/bin/mqblkctl /usr/bin/mqblk-ublk; do
	if [ -e "$f" ] && ! dpkg -S "$f" >/dev/null 2>&1; then
		die "$f exists and no package owns it: not overwriting it"
	fi
done

INSTALLED=
cleanup() {
	[ -n "$MQBLKD_PID" ] && kill -9 "$MQBLKD_PID" 2>/dev/null
	if [ -n "$INSTALLED" ]; then
		dpkg_locked -r mqblkd nbdkit-plugin-mqblk >/dev/null ||
			echo "$0: dpkg -r failed" >&2
	fi
	rm -rf "$TESTTMP"
}
trap cleanup EXIT

# dpkg ARGS, waiting (60 s at most) while another dpkg or apt holds the
# lock: other jobs on a CI machine may be installing packages.
dpkg_locked() {
	local deadline=$((SECONDS + 60))
	while :; do
		if dpkg "$@" 2>"$TESTTMP/dpkg.err"; then
			return 0
		fi
		if ! grep -q 'lock' "$TESTTMP/dpkg.err" || [ $SECONDS -ge $deadline ]; then
			cat "$TESTTMP/dpkg.err" >&2
			return 1
		fi
		sleep 1
	done
}

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

INSTALLED=1
dpkg_locked -i "${debs[@]}" || die "dpkg -i failed"
[ "$(dpkg-query -W -f='${Status}' mqblkd)" = "install ok installed" ] ||
	die "mqblkd not installed"
dpkg -S /usr/bin/mqblkd | grep -q '^mqblkd:' || die "/usr/bin/mqblkd not from mqblkd"
dpkg -L nbdkit-plugin-mqblk | grep -q '/nbdkit/plugins/nbdkit-mqblk-plugin.so$' ||
	die "the plugin is not in nbdkit's plugin directory"
man -w mqblkd 2>/dev/null | grep -q '^/usr/share/man/man8/mqblkd.8' ||
	die "man -w mqblkd: $(man -w mqblkd 2>&1)"

# The installed server.
MQBLKD=/usr/bin/mqblkd
mqblkd_start null size=16M
size=$($CLIENT nbdinfo --size "$uri")
[ "$size" = 16777216 ] || die "installed mqblkd served size $size"
mqblkd_stop 2>/dev/null

# The installed plugin, by name, from nbdkit's own plugin directory.
plugindir=$(nbdkit --dump-config | sed -n 's/^plugindir=//p')
nbdkit mqblk --dump-plugin >"$TESTTMP/dump" 2>&1 || die "$(cat "$TESTTMP/dump")"
grep -qx "path=$plugindir/nbdkit-mqblk-plugin.so" "$TESTTMP/dump" ||
	die "nbdkit mqblk is not the installed plugin: $(grep path= "$TESTTMP/dump")"
size=$(nbdkit -U - mqblk device=null size=32M \
	--run "$CLIENT nbdinfo --size \"\$uri\"")
[ "$size" = 33554432 ] || die "nbdkit mqblk device=null served size $size"

dpkg_locked -r mqblkd nbdkit-plugin-mqblk >/dev/null || die "dpkg -r failed"
INSTALLED=
[ ! -e /usr/bin/mqblkd ] || die "/usr/bin/mqblkd left after dpkg -r"
[ ! -e "$plugindir/nbdkit-mqblk-plugin.so" ] || die "plugin left after dpkg -r"
echo "deb: built, installed, served and removed mqblkd and nbdkit-plugin-mqblk"
