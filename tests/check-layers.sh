#!/bin/bash
# The layering rules of docs/design.md ("Layers"), checked on the tree:
#  - an #include only runs down: front ends (server/nbd, server/nbdkit,
#    server/ublk) -> control (server/ctl) and the export table
#    (server/exports) -> devices (backends) -> schedulers
#    (scheduler) -> core (server/mq); tls includes nothing of ours;
#  - drivers (backends/ but device.[ch]) include no scheduler header;
#  - blk-mq-internal.h is for the files of the core alone, and no driver
#    reads the core's private q_usage;
#  - container_of and the golden-ratio hash are defined once;
#  - nothing points at the brief the project was built from, outside the
#    tree: docs/design.md is the project's own.
# Usage: check-layers.sh [SOURCE_DIR]; exits 1 naming every violation.
set -uo pipefail
export PATH=/usr/bin:/bin:$PATH
src=${1:-${MQBLK_SRC:-$(dirname "$0")/..}}
cd "$src" || exit 2

fail=0
bad() {
	echo "check-layers: $*" >&2
	fail=1
}

# The rank of a path's layer; empty for a file outside the layers.
rank() {
	case $1 in
	server/mq/*) echo 0 ;;
	scheduler/*) echo 1 ;;
	backends/*) echo 2 ;;
	server/ctl/* | server/exports/*) echo 3 ;;
	server/nbd/* | server/nbdkit/* | server/ublk/*) echo 4 ;;
	tls/*) echo tls ;;
	esac
}

# Resolve an include as the compiler does: beside the file, then from the
# top of the tree (the build's only include directory).
resolve() {
	local dir=$1 inc=$2 p
	for p in "$dir/$inc" "$inc"; do
		if [ -f "$p" ]; then
			realpath -m --relative-to=. "$p"
			return
		fi
	done
}

files=$(find server scheduler backends tls -name '*.[ch]' | sort)
[ -n "$files" ] || { bad "no sources under $src"; exit 1; }
for f in $files; do
	from=$(rank "$f")
	while IFS= read -r inc; do
		to_file=$(resolve "$(dirname "$f")" "$inc")
		[ -n "$to_file" ] || continue
		to=$(rank "$to_file")
		[ -n "$to" ] || continue
		if [ "$(basename "$to_file")" = blk-mq-internal.h ] &&
			[ "$to" != 0 -o "$from" != 0 ]; then
			bad "$f includes $to_file, which is for the core alone"
		fi
		if [ "$from" = tls ] || [ "$to" = tls ]; then
			# tls stands beside the front ends: it uses nothing of
			# ours, and only front ends use it.
			if [ "$from" = tls ] && [ "$to" != tls ]; then
				bad "$f (tls) includes $to_file"
			elif [ "$to" = tls ] && [ "$from" != tls ] && [ "$from" != 4 ]; then
				bad "$f includes $to_file (tls is for front ends)"
			fi
			continue
		fi
		if [ "$to" -gt "$from" ]; then
			bad "$f includes $to_file from a higher layer"
		fi
		# Drivers see the core's public API; only the device layer
		# (device.[ch]) knows the scheduler policy.
		case $f in backends/device.[ch]) ;; backends/*)
			[ "$to" = 1 ] && bad "$f (a driver) includes $to_file" ;;
		esac
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done

# Drivers see the core through its public API only, not its private queue
# state (the usage counter a freeze waits on).
usage=$(grep -rnE 'q_usage' backends || true)
[ -z "$usage" ] || bad "a driver reads the core's private queue state:
$usage"

for def in 'define[[:space:]]+container_of' '0x9e3779b97f4a7c15ull\)[[:space:]]*>>'; do
	n=$(grep -rniE --include='*.[ch]' "$def" server scheduler backends tls |
		wc -l)
	[ "$n" -le 1 ] || bad "defined $n times (one is enough): $def:
$(grep -rniE --include='*.[ch]' "$def" server scheduler backends tls)"
done

refs=$(grep -rnE '\.\./shared|DESIGN\.md' --exclude=check-layers.sh README.md docs CMakeLists.txt \
	tests/CMakeLists.txt server scheduler backends tls bench tests/*.sh \
	tests/integration tests/unit .ci 2>/dev/null || true)
[ -z "$refs" ] || bad "points at a file users do not have:
$refs"

[ $fail = 0 ] && echo "check-layers: ok"
exit $fail
