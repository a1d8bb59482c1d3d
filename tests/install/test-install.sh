#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# cmake --install honours the prefix: a --prefix install as a non-root
# user would do it, and a DESTDIR staged one.  Every file lands under the
# prefix (install_manifest.txt), the plugin in PREFIX/.../nbdkit/plugins
# loads in nbdkit (--dump-plugin, and it serves), the installed mqblkd
# serves, man finds the pages by name, the bash completions complete.
. "$MQBLK_SRC/tests/integration/mqblkd-lib.sh"

pfx="$TESTTMP/prefix with space"
cmake --install "$MQBLK_BUILD" --prefix "$pfx" >"$TESTTMP/install.log" ||
	die "cmake --install --prefix failed: $(cat "$TESTTMP/install.log")"

# Nothing outside the prefix.
manifest=$MQBLK_BUILD/install_manifest.txt
[ -s "$manifest" ] || die "no install_manifest.txt"
while IFS= read -r f; do
	case $f in
	"$pfx"/*) ;;
	*) die "installed outside the prefix: $f" ;;
	esac
	[ -e "$f" ] || die "listed but missing: $f"
done <"$manifest"

expect() {
	[ -f "$pfx/$1" ] || die "not installed: \$prefix/$1"
}
expect bin/mqblkd
expect bin/mqblkctl
expect bin/mqblk-ublk
expect bin/mqblk-replay-log
expect share/man/man8/mqblkd.8
expect share/man/man8/mqblkctl.8
expect share/man/man8/mqblk-ublk.8
expect share/man/man1/nbdkit-mqblk-plugin.1
expect share/man/man7/mqblk-devices.7
expect share/man/man1/mqblk-replay-log.1
expect share/bash-completion/completions/mqblkd
expect share/bash-completion/completions/mqblkctl
expect share/doc/mqblk/README.md
expect share/doc/mqblk/COPYING
expect share/doc/mqblk/docs/devices.md
for unit in "$MQBLK_SRC"/systemd/*.socket "$MQBLK_SRC"/systemd/*.service; do
	[ -e "$unit" ] || continue
	[ -n "$(find "$pfx" -path "*/systemd/system/$(basename "$unit")")" ] ||
		die "unit not installed: $(basename "$unit")"
done
# The service starts the prefix's mqblkd, quoted for the space in it.
service=$(find "$pfx" -path "*/systemd/system/mqblkd.service")
grep -qxF "ExecStart=\"$pfx/bin/mqblkd\" -f -c /etc/mqblk/mqblkd.conf --control /run/mqblk/control.sock" \
	"$service" || die "mqblkd.service: $(grep ExecStart= "$service")"

# The plugin: nbdkit's plugin directory under the prefix.
mapfile -t plugins < <(find "$pfx" -name nbdkit-mqblk-plugin.so)
[ ${#plugins[@]} -eq 1 ] || die "plugins installed: ${plugins[*]}"
plugin=${plugins[0]}
case $plugin in
"$pfx"/lib*/nbdkit/plugins/nbdkit-mqblk-plugin.so) ;;
*) die "plugin not in PREFIX/LIBDIR/nbdkit/plugins: $plugin" ;;
esac
nbdkit --dump-plugin "$plugin" >"$TESTTMP/dump" 2>&1 ||
	die "nbdkit --dump-plugin: $(cat "$TESTTMP/dump")"
grep -qx 'name=mqblk' "$TESTTMP/dump" || die "dump-plugin: $(cat "$TESTTMP/dump")"
size=$(nbdkit -U - "$plugin" device=ram size=4M \
	--run "$CLIENT nbdinfo --size \"\$uri\"")
[ "$size" = 4194304 ] || die "installed plugin served size $size"

# The installed server.
MQBLKD=$pfx/bin/mqblkd
mqblkd_start null size=8M
size=$($CLIENT nbdinfo --size "$uri")
mqblkd_stop 2>/dev/null
[ "$size" = 8388608 ] || die "installed mqblkd served size $size"
"$pfx/bin/mqblkctl" --help | grep -q '^usage: mqblkctl' || die "mqblkctl --help"

# man finds the pages by name under the prefix.
if command -v man >/dev/null; then
	for p in mqblkd mqblkctl mqblk-ublk nbdkit-mqblk-plugin mqblk-devices \
		mqblk-replay-log; do
		MANPATH=$pfx/share/man man -w "$p" | grep -q "^$pfx/share/man/" ||
			die "man -w $p does not find the installed page"
	done
	MANPATH=$pfx/share/man MANWIDTH=80 man mqblk-devices 2>/dev/null |
		grep -q 'memory_backed=VALUE' || die "man mqblk-devices: no null keys"
fi

# The bash completions, when bash-completion is there.
bc=/usr/share/bash-completion/bash_completion
if [ -r "$bc" ]; then
	# mqblkctl completes the tree from a live server, one directory at
	# a time (ls nullb0/ must list it).
	mqblkd_start --control "$TESTTMP/ctl.sock" null size=8M
	PATH=$pfx/bin:$PATH MQBLK_CONTROL=$TESTTMP/ctl.sock bash -c '
		. "$1"; . "$2"; . "$3"
		complete_words() {
			COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
			COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
			COMPREPLY=()
			"$(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/")" "$1" "${!#}" "${@: -2:1}"
			printf "%s\n" "${COMPREPLY[@]}"
		}
		complete_words mqblkd nu | grep -qx null || exit 11
		complete_words mqblkd null memory_b | grep -qx memory_backed= || exit 12
		complete_words mqblkd null time_s | grep -qx time_scale= || exit 13
		complete_words mqblkd --pidf | grep -qx -- --pidfile || exit 14
		complete_words mqblkctl me | grep -qx metrics || exit 15
		complete_words mqblkctl trace s | grep -qx start || exit 16
		complete_words mqblkctl st | grep -qx stat || exit 17
		complete_words mqblkctl --j | grep -qx -- --json || exit 18
		complete_words mqblkctl ls --j | grep -qx -- --json || exit 19
		complete_words mqblkctl ls nu | grep -qx nullb0/ || exit 20
		complete_words mqblkctl ls nullb0/ | grep -qx nullb0/device/ || exit 21
		complete_words mqblkctl get nullb0/device/ | grep -q "^nullb0/device/." || exit 22
		complete_words mqblkctl stat nu | grep -qx nullb0 || exit 23
		complete_words mqblkd -u nobod | grep -qx nobody || exit 24
	' _ "$bc" "$pfx/share/bash-completion/completions/mqblkd" \
		"$pfx/share/bash-completion/completions/mqblkctl" ||
		die "bash completion failed (case $?)"
	mqblkd_stop 2>/dev/null
fi

# DESTDIR: staged under it, the prefix inside.
DESTDIR=$TESTTMP/dest cmake --install "$MQBLK_BUILD" --prefix /opt/mqblk \
	>"$TESTTMP/install.log" || die "DESTDIR install failed"
[ -x "$TESTTMP/dest/opt/mqblk/bin/mqblkd" ] || die "DESTDIR: no mqblkd"
[ -n "$(find "$TESTTMP/dest/opt/mqblk" -path '*/nbdkit/plugins/nbdkit-mqblk-plugin.so')" ] ||
	die "DESTDIR: no plugin under /opt/mqblk"
[ "$(find "$TESTTMP/dest" -mindepth 1 -maxdepth 1)" = "$TESTTMP/dest/opt" ] ||
	die "DESTDIR: files outside the prefix: $(ls "$TESTTMP/dest")"
echo "install: prefix and DESTDIR installs complete"
