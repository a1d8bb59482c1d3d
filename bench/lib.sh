# Sourced by the benchmarks that drive the nbdkit plugin.
#
# bench_init NAME [BUILD_DIR] -- TOOL...: checks that the plugin is built
# (BUILD_DIR defaults to build/) and that each TOOL is installed, then sets
# $build, $plugin and $tmp, a scratch directory removed at exit.
export PATH=/usr/bin:/bin:$PATH
bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

bench_init() {
	local name=$1 tool
	shift
	build=$bench_dir/../build
	if [ "$#" -gt 0 ] && [ "$1" != -- ]; then
		[ -n "$1" ] && build=$1
		shift
	fi
	[ "${1:-}" = -- ] && shift
	build=$(cd "$build" && pwd)
	plugin=$build/nbdkit-mqblk-plugin.so
	[ -f "$plugin" ] || {
		echo "$0: $plugin not built" >&2
		exit 1
	}
	for tool in "$@"; do
		command -v "$tool" >/dev/null || {
			echo "$0: $tool is needed" >&2
			exit 1
		}
	done
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
}

# bench_wait_sock SOCK...: wait up to 10 s for each Unix socket to appear
# (a server started in the background), else say which did not and fail.
bench_wait_sock() {
	local s _
	for s in "$@"; do
		for _ in $(seq 100); do
			[ -S "$s" ] && continue 2
			sleep 0.1
		done
		echo "$0: no socket $s after 10 s" >&2
		return 1
	done
}
