#!/bin/bash
# The shell examples of README.md and docs/*.md run as written.  Every
# ```sh block not marked <!-- excerpt --> (or <!-- build -->, the build
# itself) is extracted by doc_examples.py and run with bash -e, in order,
# from a directory laid out like a fresh clone after the build (README.md,
# docs/, build/), while the README's serve command runs there:
#   ./build/mqblkd -f --demo --control /tmp/mqblk.ctl
# The one liberty taken: /tmp/mqblk.ctl becomes a path in $TESTTMP, in
# the serve command and the examples alike, so that two runs (or a user's
# demo) cannot meet.  The demo's port 10809 and the TLS example's 10810
# must be free.  Examples that start a server of their own do it with
# --pidfile and stop it; one left running fails the test.
. "$(dirname "$0")/mqblkd-lib.sh"
# The examples run nbdkit with the plugin as a user would, which a
# sanitizer build's plugin cannot do without its runtime preloaded; the
# plain build runs them.
[ -z "${MQBLK_SANITIZE:-}" ] || { echo "test-docs: skipped in a sanitizer build"; exit 77; }
export PATH=/usr/bin:$PATH

clone=$TESTTMP/clone
mkdir -p "$clone"
cp "$MQBLK_SRC/README.md" "$clone/"
cp -r "$MQBLK_SRC/docs" "$clone/"
ln -s "$MQBLK_BUILD" "$clone/build"
ctl=$TESTTMP/mqblk.ctl

serve='./build/mqblkd -f --demo --control /tmp/mqblk.ctl'
grep -qF "&& $serve" "$clone/README.md" ||
	die "the README's serve command is no longer: $serve"

python3 "$MQBLK_SRC/tests/integration/doc_examples.py" "$TESTTMP/ex" \
	"$clone/README.md" "$clone"/docs/*.md > "$TESTTMP/examples" ||
	die "cannot extract the examples"
sed "s|^$clone/||" "$TESTTMP/examples"
nrun=$(grep -c " run$" "$TESTTMP/examples" || true)
[ "$nrun" -ge 4 ] || die "only $nrun runnable examples found"

for port in 10809 10810; do
	python3 -c "
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('', $port))
" 2> /dev/null || die "port $port is busy: the examples need it"
done

# The serve command, from the clone.
: > "$MQBLKD_LOG"
(cd "$clone" && exec ${serve//\/tmp\/mqblk.ctl/$ctl}) 2>> "$MQBLKD_LOG" &
MQBLKD_PID=$!
wait_listening 127.0.0.1:10809 && wait_listening "$ctl" || {
	cat "$MQBLKD_LOG" >&2
	die "the demo did not start"
}

failed=0
for f in "$TESTTMP"/ex/*.sh; do
	where=$(head -1 "$f" | sed "s|^# $clone/||")
	sed -i "s|/tmp/mqblk\.ctl|$ctl|g" "$f"
	echo "== $where"
	if (cd "$clone" && timeout 300 bash -e -o pipefail "$f") \
		> "$TESTTMP/out" 2>&1; then
		tail -5 "$TESTTMP/out"
	else
		cat "$TESTTMP/out"
		echo "FAIL: $where" >&2
		failed=1
	fi
done
# The servers the examples started as daemons (--pidfile) and did not
# stop, because an example failed half-way.
for pidfile in "$clone"/*.pid "$clone"/pki/*.pid; do
	[ -f "$pidfile" ] || continue
	pid=$(cat "$pidfile")
	# A server an example stopped may still be draining: 10 s at most.
	for _ in $(seq 100); do
		kill -0 "$pid" 2> /dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2> /dev/null; then
		kill "$pid"
		echo "FAIL: $pidfile: a server left running" >&2
		failed=1
	fi
done
mqblkd_stop
[ $failed = 0 ] || die "an example did not run as written"
echo "docs ok: $nrun examples ran"
