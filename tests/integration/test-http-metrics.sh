#!/bin/bash
# mqblkd --metrics: /metrics parsed by prometheus_client's own parser
# agrees with the I/O the test did through NBD (bytes, requests, the
# histogram), in base units, with the export name as the export label and
# op as the only name for the operation; /api/v1/exports (JSON) agrees
# too.  Without an address the server listens on loopback; a bad
# --metrics, or one whose port is taken, is refused at start-up; a method
# other than GET or HEAD and an unknown path are answered, not served.
. "$(dirname "$0")/mqblkd-lib.sh"

python3 -c 'import prometheus_client.parser' 2>/dev/null ||
	die "python3-prometheus-client is missing (tests/setup-deps.sh)"

echo "== a bad --metrics is refused"
for bad in 127.0.0.1:http 127.0.0.1:70000 '[::1' 'nosuchhost.invalid:0'; do
	if "$MQBLKD" -f -U "$TESTTMP/bad.sock" --metrics "$bad" null \
		size=1M 2>"$TESTTMP/bad.log"; then
		die "--metrics $bad accepted"
	fi
	grep -q "http" "$TESTTMP/bad.log" || die "--metrics $bad: $(cat "$TESTTMP/bad.log")"
done

cat >"$TESTTMP/two.ini" <<'INI'
[fast]
device=null
size=16M
time_scale=0
[rack/slow]
device=ram
size=32M
time_scale=0
INI
mqblkd_start --metrics 0 -c "$TESTTMP/two.ini"
url=$(grep -o 'http: listening on http://[^ ]*' "$MQBLKD_LOG" | awk '{ print $4 }')
echo "metrics at $url"
case $url in
http://127.0.0.1:[0-9]*/) ;;
*) die "not on loopback by default: '$url'" ;;
esac
export url

python3 - <<'PY' || die "metrics check failed"
import json, os, subprocess, sys, urllib.error, urllib.request
from prometheus_client.parser import text_string_to_metric_families

url = os.environ["url"]
sock = os.environ["unixsocket"]

def get(path):
    with urllib.request.urlopen(url + path, timeout=10) as r:
        return r.headers.get("Content-Type"), r.read().decode()

def scrape():
    ctype, text = get("metrics")
    assert ctype.startswith("text/plain; version=0.0.4"), ctype
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    return fams

def value(fams, fam, sample, **labels):
    for s in fams[fam].samples:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise KeyError((sample, labels))

def nbd(export, script):
    subprocess.run(["nbdsh", "-u", f"nbd+unix:///{export}?socket={sock}",
                    "-c", script], check=True)

before = scrape()
# The families and labels: base units, op everywhere, exports by name.
for name, f in before.items():
    assert "sector" not in name, name
    for s in f.samples:
        assert set(s.labels) <= {"export", "op", "hctx", "le"}, s
        assert s.labels.get("export") in ("fast", "rack/slow"), s
        if "op" in s.labels:
            assert s.labels["op"] in ("read", "write", "discard", "flush"), s
assert before["mqblk_bytes"].type == "counter", before["mqblk_bytes"].type
assert before["mqblk_request_latency_seconds"].type == "histogram"
les = [s.labels["le"] for s in before["mqblk_request_latency_seconds"].samples
       if s.name.endswith("_bucket") and s.labels["export"] == "fast"
       and s.labels["op"] == "read"]
assert 1 < len(les) <= 21, les
bounds = [float(x) for x in les]
assert bounds == sorted(bounds) and bounds[-1] == float("inf"), les
assert 0.9e-6 <= bounds[0] <= 1.1e-6, bounds[0]
assert 10 <= bounds[-2] < 20, bounds[-2]
assert value(before, "mqblk_capacity_bytes", "mqblk_capacity_bytes",
             export="rack/slow") == 32 << 20

# N bytes written in 3 requests, M read in 5, all to rack/slow.
N, M = 3 * 65536, 5 * 4096
nbd("rack/slow", "for i in range(3): h.pwrite(b'\\x5a' * 65536, i * 65536)\n"
                 "for i in range(5): assert h.pread(4096, i * 4096) == b'\\x5a' * 4096")
after = scrape()

def delta(sample, fam=None, **labels):
    fam = fam or sample
    return value(after, fam, sample, **labels) - value(before, fam, sample, **labels)

assert delta("mqblk_bytes_total", "mqblk_bytes", export="rack/slow", op="write") == N
assert delta("mqblk_bytes_total", "mqblk_bytes", export="rack/slow", op="read") == M
assert delta("mqblk_requests_total", "mqblk_requests", export="rack/slow", op="write") == 3
assert delta("mqblk_requests_total", "mqblk_requests", export="rack/slow", op="read") == 5
assert delta("mqblk_bytes_total", "mqblk_bytes", export="fast", op="write") == 0
h = "mqblk_request_latency_seconds"
for op, n in (("write", 3), ("read", 5)):
    assert delta(h + "_count", h, export="rack/slow", op=op) == n
    assert delta(h + "_bucket", h, export="rack/slow", op=op, le="+Inf") == n
    t = delta("mqblk_request_time_seconds_total", "mqblk_request_time_seconds",
              export="rack/slow", op=op)
    assert abs(delta(h + "_sum", h, export="rack/slow", op=op) - t) < 1e-6
    counts = [s.value for s in after[h].samples if s.name == h + "_bucket"
              and s.labels["export"] == "rack/slow" and s.labels["op"] == op]
    assert counts == sorted(counts), counts

# The JSON the status page reads says the same.
ctype, body = get("api/v1/exports")
assert ctype == "application/json", ctype
doc = json.loads(body)
ex = {e["name"]: e for e in doc["exports"]}
assert sorted(ex) == ["fast", "rack/slow"], sorted(ex)
assert ex["rack/slow"]["model"] == "ram" and ex["fast"]["model"] == "null", ex
assert ex["rack/slow"]["ops"]["write"]["bytes"] == \
    value(after, "mqblk_bytes", "mqblk_bytes_total", export="rack/slow", op="write")
assert ex["rack/slow"]["ops"]["read"]["requests"] >= 5
assert ex["fast"]["scheduler"] and ex["fast"]["queue_depth"] > 0, ex["fast"]

# The page itself, and what is not served.
ctype, page = get("")
assert ctype.startswith("text/html") and "api/v1/exports" in page
assert "http://" not in page.replace("http://www.w3.org", ""), "an external fetch"
for path, method, code in (("nope", "GET", 404), ("metrics", "POST", 405)):
    try:
        urllib.request.urlopen(urllib.request.Request(url + path, method=method,
                                                      data=b"" if method == "POST" else None),
                               timeout=10)
        sys.exit(f"{method} /{path} served")
    except urllib.error.HTTPError as e:
        assert e.code == code, (path, e.code)
print("metrics: ok")
PY

echo "== a port already taken is refused with the reason"
port=${url##*:}
port=${port%/}
if "$MQBLKD" -f -U "$TESTTMP/taken.sock" --metrics "127.0.0.1:$port" null \
	size=1M 2>"$TESTTMP/taken.log"; then
	die "--metrics on the taken port $port accepted"
fi
grep -q "http: cannot listen on 127.0.0.1:$port: Address already in use" \
	"$TESTTMP/taken.log" || die "taken port: $(cat "$TESTTMP/taken.log")"
mqblkd_stop

echo "== with --control too: one tree, so a switch shows in the JSON"
mqblkd_start --control "$TESTTMP/ctl.sock" --metrics 127.0.0.1:0 null \
	size=1M time_scale=0
url=$(grep -o 'http: listening on http://[^ ]*' "$MQBLKD_LOG" | awk '{ print $4 }')
"$MQBLK_BUILD/mqblkctl" -s "$TESTTMP/ctl.sock" set nullb0/queue/scheduler kyber
"$MQBLK_BUILD/mqblkctl" -s "$TESTTMP/ctl.sock" set nullb0/queue/nr_requests 16
URL=$url python3 - <<'PY' || die "the JSON does not follow the control socket"
import json, os, urllib.request
d = json.load(urllib.request.urlopen(os.environ["URL"] + "api/v1/exports", timeout=10))
e = d["exports"][0]
assert (e["name"], e["scheduler"], e["queue_depth"]) == ("nullb0", "kyber", 16), e
PY
mqblkd_stop

echo "== the plugin: metrics= on an address given"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# A sanitizer build's plugin needs its runtime preloaded into nbdkit
# (lib.sh's MQBLK_PRELOAD); env execs nbdkit, so $! is nbdkit's pid.
kitenv=(env)
[ -z "$MQBLK_PRELOAD" ] ||
	kitenv=(env LD_PRELOAD="$MQBLK_PRELOAD" ASAN_OPTIONS=detect_leaks=0)
"${kitenv[@]}" nbdkit -f -v -U "$TESTTMP/kit.sock" "$MQBLK_BUILD/nbdkit-mqblk-plugin.so" \
	device=null size=1M metrics="127.0.0.1:$port" 2>"$TESTTMP/kit.log" &
kit=$!
wait_listening "127.0.0.1:$port" || { cat "$TESTTMP/kit.log"; kill "$kit"; die "plugin metrics did not listen"; }
nbdsh -u "nbd+unix:///?socket=$TESTTMP/kit.sock" -c 'h.pwrite(b"x" * 8192, 0)'
PORT=$port python3 - <<'PY' || { kill "$kit"; die "plugin metrics"; }
import os, urllib.request
from prometheus_client.parser import text_string_to_metric_families
text = urllib.request.urlopen(f"http://127.0.0.1:{os.environ['PORT']}/metrics", timeout=10).read().decode()
fams = {f.name: f for f in text_string_to_metric_families(text)}
v = [s.value for s in fams["mqblk_bytes"].samples
     if s.labels == {"export": "nullb0", "op": "write"}]
assert v == [8192.0], v
PY
kill "$kit"
wait "$kit" || true
echo "ok"
