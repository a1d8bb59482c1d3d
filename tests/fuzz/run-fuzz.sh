#!/bin/bash
# Run the NBD protocol fuzzer: FUZZ_SECONDS (default 60) from the seed
# corpus in tests/fuzz/corpus, in a scratch copy so the seeds stay as
# committed.  Prints libFuzzer's execution count.
#
#   tests/fuzz/run-fuzz.sh build-fuzz/fuzz_nbd
set -euo pipefail
fuzzer=$(realpath "${1:?usage: run-fuzz.sh FUZZ_NBD}")
here=$(cd "$(dirname "$0")" && pwd)
seconds=${FUZZ_SECONDS:-60}
work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz_nbd.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
cp "$here"/corpus/* "$work/corpus/"
cd "$work"
"$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
	-max_len=1048576 -print_final_stats=1 corpus 2>"$work/log" || {
	tail -60 "$work/log"
	exit 1
}
grep -E '^Done [0-9]+ runs|stat::number_of_executed_units' "$work/log"
