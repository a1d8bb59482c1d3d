#!/bin/bash
# mqblkctl for scripts: --json of ls, get, stat, metrics and watch parsed
# with python3's json and checked against I/O done through NBD; stat's
# named fields; watch -i, its timestamp column, one export or a glob; the
# exit codes --help documents (0, 1 refused, 2 usage or connection); and
# the default control socket ($MQBLK_CONTROL, else /run/mqblk/control.sock).
. "$(dirname "$0")/mqblkd-lib.sh"
export PATH=/usr/bin:$PATH

CTL_SOCK=$TESTTMP/ctl.sock
CTL="$MQBLK_BUILD/mqblkctl -s $CTL_SOCK"
MQBLKCTL=$MQBLK_BUILD/mqblkctl
export CTL CTL_SOCK MQBLKCTL TESTTMP

cat > "$TESTTMP/two.ini" <<'INI'
[fast]
device=null
size=16M
time_scale=0
[slow]
device=null
size=32M
memory_backed=1
time_scale=0
INI
mqblkd_start --control "$CTL_SOCK" -c "$TESTTMP/two.ini"
rc=0
bash -c '
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
slow_uri="nbd+unix:///slow?socket=$unixsocket"
nbdsh -u "$slow_uri" -c "
for i in range(5): h.pread(4096, i * 4096)
for i in range(3): h.pwrite(b\"x\" * 8192, i * 8192)
"

echo "-- ls --json"
$CTL ls --json > "$TESTTMP/ls.json"
$CTL --json ls slow/queue > "$TESTTMP/lsq.json"
python3 - "$TESTTMP" <<PY
import json, sys
d = json.load(open(sys.argv[1] + "/ls.json"))
assert d == {"path": "", "entries": [
    {"name": "fast", "type": "directory"},
    {"name": "slow", "type": "directory"}]}, d
q = json.load(open(sys.argv[1] + "/lsq.json"))
assert q["path"] == "slow/queue", q
names = {e["name"]: e["type"] for e in q["entries"]}
assert names["scheduler"] == "attribute", names
assert names["iosched"] == "directory", names
PY

echo "-- get --json"
$CTL set slow/queue/scheduler kyber
$CTL get --json slow/queue/scheduler > "$TESTTMP/get.json"
python3 - "$TESTTMP" <<PY
import json, sys
d = json.load(open(sys.argv[1] + "/get.json"))
assert d == {"path": "slow/queue/scheduler",
             "value": "none mq-deadline [kyber] bfq"}, d
PY

echo "-- stat, stat --json"
$CTL stat slow > "$TESTTMP/stat.txt"
$CTL stat --json slow > "$TESTTMP/stat.json"
$CTL get slow/stat > "$TESTTMP/stat.raw"
python3 - "$TESTTMP" <<PY
import json, sys
t = sys.argv[1]
names = ["read_ios", "read_merges", "read_sectors", "read_ticks",
         "write_ios", "write_merges", "write_sectors", "write_ticks",
         "in_flight", "io_ticks", "time_in_queue", "discard_ios",
         "discard_merges", "discard_sectors", "discard_ticks", "flush_ios",
         "flush_ticks"]
raw = [int(x) for x in open(t + "/stat.raw").read().split()]
text = [l.split() for l in open(t + "/stat.txt").read().splitlines()]
assert [l[0] for l in text] == names, text
assert [int(l[1]) for l in text] == raw, (text, raw)
d = json.load(open(t + "/stat.json"))
assert list(d) == ["export"] + names, list(d)
assert d["export"] == "slow"
assert [d[n] for n in names] == raw, (d, raw)
assert d["read_ios"] == 5 and d["read_sectors"] == 40, d
assert d["write_ios"] == 3 and d["write_sectors"] == 48, d
assert d["in_flight"] == 0, d
PY
! $CTL stat slow/queue 2> /dev/null || fail "stat of a non-export"

echo "-- metrics --json"
$CTL metrics --json > "$TESTTMP/m.json"
python3 - "$TESTTMP" <<PY
import json, sys
d = json.load(open(sys.argv[1] + "/m.json"))["metrics"]
def one(name, **labels):
    hits = [m for m in d if m["name"] == name and m["labels"] == labels]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]
r = one("mqblk_requests_total", export="slow", op="read")
assert r["value"] == 5 and r["type"] == "counter", r
assert one("mqblk_requests_total", export="slow", op="write")["value"] == 3
assert one("mqblk_requests_total", export="fast", op="read")["value"] == 0
c = one("mqblk_capacity_bytes", export="slow")
assert c["value"] == 32 << 20, c
h = one("mqblk_request_latency_seconds_count", export="slow", op="read")
assert h["value"] == 5, h
assert h["family"] == "mqblk_request_latency_seconds", h
assert h["type"] == "histogram", h
inf = [m for m in d if m["name"] == "mqblk_request_latency_seconds_bucket"
       and m["labels"].get("export") == "slow"
       and m["labels"].get("op") == "read" and m["labels"]["le"] == "+Inf"]
assert len(inf) == 1 and inf[0]["value"] == 5, inf
PY

echo "-- watch: a timestamp column, one export, a glob"
timeout 20 $CTL watch -i 0.2 slow 2 > "$TESTTMP/w.txt"
python3 - "$TESTTMP" <<PY
import re, sys
lines = open(sys.argv[1] + "/w.txt").read().splitlines()
heads = [l for l in lines if l.split()[0] == "time"]
rows = [l.split() for l in lines if l.split()[0] != "time"]
assert len(heads) == 2 and len(rows) == 2, lines
assert heads[0].split()[:2] == ["time", "export"], heads
for r in rows:
    assert re.fullmatch(r"\d\d:\d\d:\d\d", r[0]), r
    assert r[1] == "slow", r
PY
timeout 20 $CTL watch --json "s*" 1 > "$TESTTMP/g.json"
timeout 20 $CTL watch --json "*" 1 > "$TESTTMP/all.json"
python3 - "$TESTTMP" <<PY
import json, sys
g = [json.loads(l) for l in open(sys.argv[1] + "/g.json")]
assert len(g) == 1 and [e["export"] for e in g[0]["exports"]] == ["slow"], g
a = [json.loads(l) for l in open(sys.argv[1] + "/all.json")]
assert [e["export"] for e in a[0]["exports"]] == ["fast", "slow"], a
PY
rc=0; timeout 20 $CTL watch nosuch 1 2> "$TESTTMP/e" || rc=$?
[ $rc = 1 ] && grep -q "no export matches" "$TESTTMP/e" || fail "watch nosuch: $rc"

echo "-- watch --json counts the reads done while it runs"
$CTL watch --json -i 0.2 slow > "$TESTTMP/wj.json" &
wpid=$!
python3 - "$TESTTMP/wj.json" 1 <<PY
import os, sys, time
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    if os.path.exists(sys.argv[1]) and open(sys.argv[1]).read().count("\n") >= int(sys.argv[2]):
        sys.exit(0)
    time.sleep(0.02)
sys.exit(1)
PY
nbdsh -u "$slow_uri" -c "for i in range(20): h.pread(4096, i * 4096)"
# Two more rounds: the last sample was taken after the reads ended.
n=$(wc -l < "$TESTTMP/wj.json")
python3 - "$TESTTMP/wj.json" $((n + 2)) <<PY
import os, sys, time
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    if open(sys.argv[1]).read().count("\n") >= int(sys.argv[2]):
        sys.exit(0)
    time.sleep(0.02)
sys.exit(1)
PY
kill $wpid; wait $wpid || true
python3 - "$TESTTMP/wj.json" <<PY
import datetime, json, sys
rounds = [json.loads(l) for l in open(sys.argv[1]) if l.endswith("\n")]
assert len(rounds) >= 3, rounds
reads = 0.0
for r in rounds:
    datetime.datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%SZ")
    assert r["interval"] > 0 and r["timestamp"] > 0, r
    assert [e["export"] for e in r["exports"]] == ["slow"], r
    e = r["exports"][0]
    reads += e["reads_per_s"] * r["interval"]
    assert abs(e["read_kB_per_s"] - e["reads_per_s"] * 4) < 1e-6 * max(1, e["read_kB_per_s"]), e
    assert 0 <= e["util_percent"] <= 100.0001, e
assert round(reads) == 20, reads
PY

echo "-- exit codes"
$CTL --help | grep -q "^Exit status: 0 success; 1 " || fail "--help: exit codes"
rc=0; $CTL get slow/no/such 2> /dev/null || rc=$?; [ $rc = 1 ] || fail "refused: $rc"
rc=0; $CTL set slow/queue/scheduler cfq 2> /dev/null || rc=$?; [ $rc = 1 ] || fail "refused set: $rc"
rc=0; $CTL get 2> /dev/null || rc=$?; [ $rc = 2 ] || fail "get without PATH: $rc"
rc=0; $CTL stat a b 2> /dev/null || rc=$?; [ $rc = 2 ] || fail "stat a b: $rc"
rc=0; $CTL --bogus ls 2> "$TESTTMP/o.err" || rc=$?; [ $rc = 2 ] || fail "bad option: $rc"
# The line getopt prints and a hint, not the whole usage.
[ "$(wc -l < "$TESTTMP/o.err")" = 2 ] && tail -1 "$TESTTMP/o.err" | grep -qx "Try .mqblkctl --help.." ||
	fail "bad option: $(cat "$TESTTMP/o.err")"
# An unknown command is a usage error, found before connecting.
rc=0; $MQBLKCTL -s "$TESTTMP/none.sock" bogusverb 2> "$TESTTMP/v.err" || rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$TESTTMP/v.err")" = 1 ] &&
	grep -q "^mqblkctl: bogusverb: no such command (ls, get, set, stat, metrics, trace, watch)" "$TESTTMP/v.err" ||
	fail "bogusverb: $rc $(cat "$TESTTMP/v.err")"
rc=0; $MQBLKCTL -s "$TESTTMP/none.sock" ls 2> /dev/null || rc=$?; [ $rc = 2 ] || fail "no server: $rc"

echo "-- ls of a directory as completion writes it"
[ "$($CTL ls slow/)" = "$($CTL ls slow)" ] || fail "ls slow/: $($CTL ls slow/ 2>&1)"
[ "$($CTL ls slow/queue//)" = "$($CTL ls slow/queue)" ] || fail "ls slow/queue//"
[ "$($CTL ls /)" = "$($CTL ls)" ] || fail "ls /: $($CTL ls / 2>&1)"
$CTL --json ls slow/ | python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"path\"] == \"slow\", d" ||
	fail "--json ls slow/"

echo "-- the default socket"
MQBLK_CONTROL=$CTL_SOCK $MQBLKCTL ls | grep -qx slow/ || fail "\$MQBLK_CONTROL"
if [ ! -e /run/mqblk/control.sock ]; then
	rc=0
	env -u MQBLK_CONTROL $MQBLKCTL ls 2> "$TESTTMP/d.err" || rc=$?
	[ $rc = 2 ] && grep -q "^mqblkctl: /run/mqblk/control.sock: " "$TESTTMP/d.err" ||
		fail "default path: $rc $(cat "$TESTTMP/d.err")"
fi
echo ok
' || rc=$?
mqblkd_stop
[ $rc = 0 ] || die "mqblkctl checks failed"
