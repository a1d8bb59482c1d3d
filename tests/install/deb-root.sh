#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# test-deb.sh's throwaway root.  "deb-root.sh TESTTMP DEB..." runs as
# PID 1 of fresh mount, PID and network namespaces (unshare): it lays an
# overlay over / whose upper layer is a tmpfs under TESTTMP, so every
# write (dpkg's database, /etc, /usr, the user mqblk) lands there and
# goes with the namespace; then it runs "deb-root.sh --inside DEB..."
# chrooted in it.  The inside phase installs the packages, runs the unit
# as systemd would (its ExecStart, its User=, its sockets through
# systemd-socket-activate), connects, removes and purges.
set -euo pipefail

if [ "${1:-}" != --inside ]; then
	tmp=$1
	shift
	ov=$tmp/overlay
	mkdir -p "$ov"
	mount -t tmpfs -o mode=0755 tmpfs "$ov"
	mkdir "$ov/upper" "$ov/work" "$ov/root"
	root=$ov/root
	mount -t overlay overlay \
		-o "lowerdir=/,upperdir=$ov/upper,workdir=$ov/work" "$root"
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	mount --rbind /sys "$root/sys"
	# A fresh /run: no /run/systemd/system, so the maintainer scripts
	# start and stop nothing, as in a chroot.
	mount -t tmpfs -o mode=0755 tmpfs "$root/run"
	ip link set lo up
	exec chroot "$root" env MQBLK_DEB_ROOT=1 bash "$0" --inside "$@"
fi
shift
[ "${MQBLK_DEB_ROOT:-}" = 1 ] || {
	echo "$0 --inside: only in the throwaway root" >&2
	exit 1
}
. "$MQBLK_SRC/tests/integration/mqblkd-lib.sh"

dpkg -i "$@" >"$TESTTMP/dpkg-i.log" 2>&1 || die "dpkg -i: $(cat "$TESTTMP/dpkg-i.log")"
for p in mqblkd nbdkit-plugin-mqblk; do
	[ "$(dpkg-query -W -f='${Status}' $p)" = "install ok installed" ] ||
		die "$p not installed"
done
dpkg -S /usr/bin/mqblkd | grep -q '^mqblkd:' || die "/usr/bin/mqblkd not from mqblkd"
man -w mqblkd 2>/dev/null | grep -q '^/usr/share/man/man8/mqblkd.8' ||
	die "man -w mqblkd: $(man -w mqblkd 2>&1)"

# What the maintainer scripts did: the system user, the socket enabled
# (the service is started by it), the config a conffile.
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd mqblk) ||
	die "postinst made no user mqblk"
[ "$uid" -lt 1000 ] && [ "$home" = /var/lib/mqblk ] && [ "$shell" = /usr/sbin/nologin ] ||
	die "user mqblk: uid $uid, home $home, shell $shell"
getent group mqblk >/dev/null || die "postinst made no group mqblk"
[ -L /etc/systemd/system/sockets.target.wants/mqblkd.socket ] ||
	die "mqblkd.socket not enabled: $(ls /etc/systemd/system/sockets.target.wants 2>&1)"
dpkg-query -W -f='${Conffiles}' mqblkd | grep -q '^ /etc/mqblk/mqblkd.conf ' ||
	die "/etc/mqblk/mqblkd.conf is not a conffile"
unit=/lib/systemd/system/mqblkd.service
socket=/lib/systemd/system/mqblkd.socket
grep -qF -- "-c /etc/mqblk/mqblkd.conf" "$unit" || die "$unit reads another config"

# The unit's sandbox: systemd-analyze's exposure 4 or lower (the figure
# docs/mqblkd.md gives, 1.2, is this on systemd 252).
if systemd-analyze security --offline=true "$unit" >"$TESTTMP/security" 2>&1; then
	level=$(sed -n 's/.*Overall exposure level for mqblkd.service: \([0-9.]*\) .*/\1/p' "$TESTTMP/security")
	[ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l <= 4) }' ||
		die "systemd-analyze security: ${level:-?}: $(tail -3 "$TESTTMP/security")"
	echo "systemd-analyze security: $level"
else
	echo "systemd-analyze security --offline not supported: not checked"
fi

# Every file the README and the docs link to is there.
doc=/usr/share/doc/mqblkd
for f in $(grep -o 'docs/[a-z0-9_./-]*\.\(md\|png\|svg\)' "$doc/README.md" | sort -u); do
	[ -f "$doc/$f" ] || die "README.md names $f, not in the package"
done
for md in "$doc"/docs/*.md; do
	for f in $(grep -o '](\([a-z0-9_/-]*\.\(md\|png\|svg\)\))' "$md" | tr -d '()]' | sort -u); do
		[ -f "$doc/docs/$f" ] || die "$(basename "$md") links $f, not in the package"
	done
done

# The unit as systemd runs it: its RuntimeDirectory/StateDirectory made
# the user's, its sockets bound by root and passed in (LISTEN_FDS), its
# ExecStart as its User= and Group=.
user=$(sed -n 's/^User=//p' "$unit")
group=$(sed -n 's/^Group=//p' "$unit")
[ "$user" = mqblk ] && [ "$group" = mqblk ] || die "$unit: User=$user Group=$group"
install -d -o mqblk -g mqblk -m 0755 /run/mqblk
install -d -o mqblk -g mqblk -m 0755 /var/lib/mqblk
listen=()
for l in $(sed -n 's/^ListenStream=//p' "$socket"); do
	listen+=(-l "$l")
done
[ "${listen[*]}" = "-l 127.0.0.1:10809 -l /run/mqblk/nbd.sock" ] ||
	die "mqblkd.socket listens on ${listen[*]}"
read -ra exec_start < <(sed -n 's/^ExecStart=//p' "$unit")
systemd-socket-activate "${listen[@]}" \
	setpriv --reuid="$user" --regid="$group" --init-groups "${exec_start[@]}" \
	2>"$MQBLKD_LOG" &
MQBLKD_PID=$!
wait_listening /run/mqblk/nbd.sock || die "the unit's sockets: $(cat "$MQBLKD_LOG")"
size=$($CLIENT nbdinfo --size "nbd+unix:///disk0?socket=/run/mqblk/nbd.sock") ||
	die "nbdinfo on the unit's socket: $(cat "$MQBLKD_LOG")"
[ "$size" = 67108864 ] || die "the shipped config's disk0: $size bytes"
size=$($CLIENT nbdinfo --size "nbd://127.0.0.1:10809/disk0")
[ "$size" = 67108864 ] || die "disk0 on 127.0.0.1:10809: $size bytes"
pid=$(pgrep -x mqblkd) || die "no mqblkd process"
[ "$(awk '/^Uid:/ {print $2 $3 $4 $5}' "/proc/$pid/status")" = "$uid$uid$uid$uid" ] ||
	die "the unit's mqblkd runs as $(grep ^Uid: "/proc/$pid/status"), not mqblk ($uid)"
[ "$(stat -c '%U %a' /run/mqblk/control.sock)" = "mqblk 600" ] ||
	die "control socket: $(stat -c '%U %a' /run/mqblk/control.sock)"
mqblkctl ls | grep -qx 'disk0/' || die "mqblkctl ls (default socket): $(mqblkctl ls 2>&1)"
kill -TERM "$MQBLKD_PID"
rc=0
wait "$MQBLKD_PID" || rc=$?
MQBLKD_PID=
[ $rc = 0 ] || die "the unit's mqblkd exited $rc on SIGTERM: $(cat "$MQBLKD_LOG")"

# The plugin, by name, from nbdkit's plugin directory.
plugindir=$(nbdkit --dump-config | sed -n 's/^plugindir=//p')
nbdkit mqblk --dump-plugin >"$TESTTMP/dump" 2>&1 || die "$(cat "$TESTTMP/dump")"
grep -qx "path=$plugindir/nbdkit-mqblk-plugin.so" "$TESTTMP/dump" ||
	die "nbdkit mqblk is not the installed plugin: $(grep path= "$TESTTMP/dump")"
size=$(nbdkit -U - mqblk device=null size=32M \
	--run "$CLIENT nbdinfo --size \"\$uri\"")
[ "$size" = 33554432 ] || die "nbdkit mqblk device=null served size $size"

# Remove: the programs go, the conffile and the enablement stay.
touch /run/mqblk/nbd.sock
dpkg -r mqblkd nbdkit-plugin-mqblk >"$TESTTMP/dpkg-r.log" 2>&1 ||
	die "dpkg -r: $(cat "$TESTTMP/dpkg-r.log")"
[ ! -e /usr/bin/mqblkd ] || die "/usr/bin/mqblkd left after dpkg -r"
[ ! -e "$plugindir/nbdkit-mqblk-plugin.so" ] || die "plugin left after dpkg -r"
[ "$(dpkg-query -W -f='${Status}' mqblkd)" = "deinstall ok config-files" ] ||
	die "after dpkg -r: $(dpkg-query -W -f='${Status}' mqblkd)"
[ -f /etc/mqblk/mqblkd.conf ] || die "dpkg -r removed the conffile"
[ ! -e /run/mqblk ] || die "dpkg -r left /run/mqblk: $(ls -la /run/mqblk)"

# Purge: the conffile, the enablement and the empty state directory go.
dpkg -P mqblkd nbdkit-plugin-mqblk >"$TESTTMP/dpkg-P.log" 2>&1 ||
	die "dpkg -P: $(cat "$TESTTMP/dpkg-P.log")"
[ ! -e /etc/mqblk ] || die "dpkg -P left /etc/mqblk: $(ls -la /etc/mqblk)"
[ ! -e /etc/systemd/system/sockets.target.wants/mqblkd.socket ] ||
	die "dpkg -P left mqblkd.socket enabled"
[ ! -e /var/lib/mqblk ] || die "dpkg -P left /var/lib/mqblk"
if dpkg-query -W -f='${Status}' mqblkd 2>/dev/null | grep -q 'installed\|config-files'; then
	die "after dpkg -P: $(dpkg-query -W -f='${Status}' mqblkd)"
fi
echo "throwaway root: installed, served as mqblk, removed, purged"
