#!/bin/bash
# The status page at / of mqblkd --metrics, in headless Chromium while fio
# (nbd engine) drives I/O on three exports of the demo rack: the DOM the
# page's JavaScript builds from /api/v1/exports shows every export
# nbdinfo --list names, with its model and scheduler, and non-zero rates
# on the exports fio drives.  MQBLK_SCREENSHOT=FILE keeps a screenshot
# (docs/status-page.png was made so).  Skipped (exit 77) only when
# Chromium is not installed.
. "$(dirname "$0")/mqblkd-lib.sh"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	echo "SKIP: chromium is not installed (tests/setup-deps.sh installs it)"
	exit 77
fi
command -v fio >/dev/null || die "fio is missing"

mqblkd_start --metrics 127.0.0.1:0 --demo
url=$(grep -o 'http: listening on http://[^ ]*' "$MQBLKD_LOG" | awk '{ print $4 }')
[ -n "$url" ] || die "no http line in the log"
echo "status page at $url"

# fio on three exports for as long as the page is looked at.
DRIVEN="ram null ide/hda"
jobs=()
for e in $DRIVEN; do
	jobs+=(--name="$e" --ioengine=nbd
		--uri="nbd+unix:///$e?socket=$unixsocket" --rw=randrw --bs=4k --size=4M --iodepth=2
		--time_based=1 --runtime=120)
done
fio "${jobs[@]}" >"$TESTTMP/fio.log" 2>&1 &
FIO_PID=$!
# (errexit is on: nothing in the trap may fail before mqblkd is killed)
trap '[ -z "$FIO_PID" ] || kill "$FIO_PID" 2>/dev/null || true
	[ -z "$MQBLKD_PID" ] || kill -9 "$MQBLKD_PID" 2>/dev/null || true
	rm -rf "$TESTTMP"' EXIT

# Wait until fio's I/O shows in the counters of every driven export.
export url DRIVEN
python3 - <<'PY' || { cat "$TESTTMP/fio.log"; die "fio did no I/O"; }
import json, os, time, urllib.request
deadline = time.monotonic() + 30
while True:
    d = json.load(urllib.request.urlopen(os.environ["url"] + "api/v1/exports", timeout=10))
    ex = {e["name"]: e for e in d["exports"]}
    if all(ex[n]["ops"]["read"]["requests"] and ex[n]["ops"]["write"]["requests"]
           for n in os.environ["DRIVEN"].split()):
        break
    assert time.monotonic() < deadline, "no I/O counted"
    time.sleep(0.05)
PY

chrome() {
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
		--disable-background-networking --disable-component-update \
		--disable-sync --no-first-run --hide-scrollbars \
		--user-data-dir="$(mktemp -d -p "$TESTTMP")" \
		--virtual-time-budget=5000 "$@" 2>>"$TESTTMP/chromium.log"
}
chrome --dump-dom "$url" >"$TESTTMP/dom.html" ||
	{ tail -20 "$TESTTMP/chromium.log"; die "chromium --dump-dom failed"; }

nbdinfo --list "nbd+unix:///?socket=$unixsocket" |
	sed -n 's/^export="\(.*\)":$/\1/p' >"$TESTTMP/exports"
[ -s "$TESTTMP/exports" ] || die "nbdinfo --list named no export"
DOM=$TESTTMP/dom.html EXPORTS=$TESTTMP/exports python3 - <<'PY' || die "the page is wrong"
import html.parser, os, sys

class Page(html.parser.HTMLParser):
    """Each section.export: its name, its sub line and its cells."""
    def __init__(self):
        super().__init__()
        self.cards, self.cur, self.field = {}, None, None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and a.get("class") == "export":
            self.cur = self.cards.setdefault(a["data-export"], {"sub": "", "cells": {}})
        elif self.cur is not None and tag == "div" and a.get("class") == "sub":
            self.field = "sub"
        elif self.cur is not None and tag == "td":
            self.field = a.get("data-k")
    def handle_endtag(self, tag):
        if tag in ("div", "td"):
            self.field = None
        if tag == "section":
            self.cur = None
    def handle_data(self, data):
        if self.cur is None or not self.field:
            return
        if self.field == "sub":
            self.cur["sub"] += data
        else:
            self.cur["cells"][self.field] = self.cur["cells"].get(self.field, "") + data

p = Page()
p.feed(open(os.environ["DOM"]).read())
want = open(os.environ["EXPORTS"]).read().split()
missing = [e for e in want if e not in p.cards]
assert not missing, f"exports not on the page: {missing}"
assert len(p.cards) == len(want), sorted(p.cards)
for name, c in p.cards.items():
    model, sched = [s.strip() for s in c["sub"].split("·")[:2]]
    assert model and model != "?" and sched and sched != "?", (name, c["sub"])
    assert "depth" in c["sub"], (name, c["sub"])
for name in os.environ["DRIVEN"].split():
    cells = p.cards[name]["cells"]
    for k in ("r/s", "w/s", "rMB/s", "wMB/s"):
        assert float(cells[k]) > 0, (name, k, cells)
    print(name, cells)
print(f"{len(p.cards)} exports on the page")
PY

if [ -n "${MQBLK_SCREENSHOT:-}" ]; then
	(cd "$TESTTMP" && chrome --window-size=1100,760 \
		--screenshot="$TESTTMP/shot.png" "$url") ||
		die "chromium --screenshot failed"
	cp "$TESTTMP/shot.png" "$MQBLK_SCREENSHOT"
	echo "screenshot: $MQBLK_SCREENSHOT"
fi
kill "$FIO_PID"
wait "$FIO_PID" 2>/dev/null || true
FIO_PID=
mqblkd_stop
echo ok
