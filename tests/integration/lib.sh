# Shared helpers for the integration tests; source it, do not run it.
#
# ctest sets MQBLK_BUILD (where nbdkit-mqblk-plugin.so is), MQBLK_SRC and
# MQBLK_SANITIZE.  Every server is started captive with nbdkit --run, so it
# stops when the client command exits, whatever happens.  MQBLK_DEVICES
# narrows a run to some of the models ("ram null"), for debugging.
#
# shellcheck disable=SC2034 # the variables are for the sourcing tests

set -euo pipefail

# nbdsh runs the first python3 on PATH, and it must be the system one
# that has the nbd module.
export PATH=/usr/bin:/bin:$PATH

: "${MQBLK_BUILD:?MQBLK_BUILD must name the build directory}"
: "${MQBLK_SRC:?MQBLK_SRC must name the source directory}"
MQBLK_SANITIZE=${MQBLK_SANITIZE:-}
# Absolute, since the test changes directory (below); SELF is the test
# itself, for those that run their phases as clients.
MQBLK_BUILD=$(realpath "$MQBLK_BUILD")
MQBLK_SRC=$(realpath "$MQBLK_SRC")
SELF=$(realpath "$0")

PLUGIN=$MQBLK_BUILD/nbdkit-mqblk-plugin.so
SCRIPTS=$MQBLK_SRC/tests/integration
# The three models every test runs against.
# shellcheck disable=SC2206 # split on purpose
DEVICES=(${MQBLK_DEVICES:-ram null file})

if [ ! -f "$PLUGIN" ]; then
	echo "$0: $PLUGIN not built" >&2
	exit 1
fi

TESTTMP=$(mktemp -d "${TMPDIR:-/tmp}/mqblk-test.XXXXXX")
trap 'rm -rf "$TESTTMP"' EXIT
# A test works in its own directory: clients leave files where they run
# (fio its verify state), and tests run side by side.
cd "$TESTTMP"

die() {
	echo "$0: FAIL: $*" >&2
	exit 1
}

# mqblk_nbdkit ARGS...: nbdkit, with the sanitizer runtime preloaded when
# the plugin was built with one.  Client commands given to --run start
# with "$CLIENT" ("$NOPRELOAD" if they must not be wrapped by timeout):
# the clients must not get the preload, and they get a
# time limit, because once nbdkit's server process has died (a sanitizer
# abort, say) its listening socket stays open in the --run parent and a
# new client would wait for the handshake forever.
#
# The second preloaded library works around a hang: libp11-kit (nbdkit
# links it through gnutls) calls newlocale() from its constructor, whose
# first malloc initialises the preloaded ASan runtime while glibc's locale
# lock is held.  ASan's start-up looks up swift_demangle and the dlerror()
# text for the miss takes that same lock, corrupting it; after any
# strerror() nbdkit then hangs at exit in p11-kit's freelocale().  With
# swift_demangle defined the lookup succeeds and the lock is not touched.
# (ASan only calls it for Swift symbols; NULL means "not demangled".)
#
# libstdc++ is preloaded too: ASan finds the real __cxa_throw when it
# starts, and nbdkit is C, so without it a C++ library the plugin loads
# later (librados) aborts ASan at its first exception ("CHECK failed ...
# real___cxa_throw").
if [ -n "$MQBLK_SANITIZE" ]; then
	printf '%s\n' '#include <stddef.h>' \
		'char *swift_demangle(const char *n, size_t l, char *o,' \
		'		     size_t *ol, unsigned int f) { return NULL; }' |
		gcc -shared -fPIC -o "$TESTTMP/asan-swift.so" -x c -
	MQBLK_PRELOAD="$(gcc -print-file-name=libasan.so) libstdc++.so.6 $TESTTMP/asan-swift.so"
else
	MQBLK_PRELOAD=
fi
NOPRELOAD="env -u LD_PRELOAD"
CLIENT="$NOPRELOAD timeout -k 5 ${MQBLK_CLIENT_TIMEOUT:-180}"
export NOPRELOAD CLIENT

mqblk_nbdkit() {
	if [ -n "$MQBLK_PRELOAD" ]; then
		LD_PRELOAD=$MQBLK_PRELOAD ASAN_OPTIONS=detect_leaks=0 \
			nbdkit "$@"
	else
		nbdkit "$@"
	fi
}

# device_args DEVICE: set ARGS to the plugin keys for one model, plus the
# words of $MQBLK_EXTRA if set.  The file model gets a fresh 64 MiB sparse
# file each time.
device_args() {
	case $1 in
	ram)
		ARGS=(device=ram size=64M time_scale=0)
		;;
	null)
		ARGS=(device=null memory_backed=1 discard=1 size=64M time_scale=0)
		;;
	file)
		rm -f "$TESTTMP/file.img"
		truncate -s 64M "$TESTTMP/file.img"
		ARGS=(device=file "file=$TESTTMP/file.img" time_scale=0)
		;;
	*)
		die "device_args: unknown device $1"
		;;
	esac
	# shellcheck disable=SC2206 # split on purpose
	ARGS+=(${MQBLK_EXTRA:-})
}

# serve DEVICE [NBDKIT-OPTION...] -- COMMAND: run COMMAND (a shell
# string, with $uri, $unixsocket and $nbd set by nbdkit) against a
# captive nbdkit serving DEVICE on a Unix socket.  nbdkit's stderr is
# kept in $TESTTMP/nbdkit.log and copied to ours when it exits.
serve() {
	local dev=$1
	shift
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ "${1:-}" = -- ] || die "serve: missing --"
	shift
	device_args "$dev"
	local rc=0 run=$*
	mqblk_nbdkit -U - "${opts[@]}" --run "$run" "$PLUGIN" "${ARGS[@]}" \
		2>"$TESTTMP/nbdkit.log" || rc=$?
	cat "$TESTTMP/nbdkit.log" >&2
	return $rc
}

# run_nbdsh DEVICE SCRIPT [NBDKIT-OPTION...]: run a python script under
# nbdsh (handle h connected to the default export, base:allocation
# requested) against DEVICE.  The script sees MQBLK_DEVICE.
run_nbdsh() {
	local dev=$1 script=$2
	shift 2
	echo "== $(basename "$script") on $dev $*"
	MQBLK_DEVICE=$dev serve "$dev" "$@" -- \
		"\$CLIENT nbdsh --base-allocation -u \"\$uri\" -c - < $script"
}

# make_iso TREE ISO: build an ISO 9660 image of directory TREE with xorriso
# or genisoimage (tests/setup-deps.sh installs genisoimage), check it is
# whole 2048-byte blocks, and set $want to its sha256sum line and
# $iso_size to its size in bytes.
make_iso() {
	if command -v xorriso >/dev/null; then
		xorriso -as mkisofs -quiet -R -o "$2" "$1" 2>/dev/null
	elif command -v genisoimage >/dev/null; then
		genisoimage -quiet -R -o "$2" "$1"
	else
		die "neither xorriso nor genisoimage: install genisoimage"
	fi
	[ -s "$2" ] || die "no ISO was built"
	want=$(sha256sum <"$2")
	iso_size=$(stat -c %s "$2")
	[ $((iso_size % 2048)) -eq 0 ] ||
		die "ISO size $iso_size is not whole blocks"
}
