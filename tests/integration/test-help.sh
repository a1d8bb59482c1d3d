#!/bin/bash
# --help of mqblkd and of the plugin: the IDE channel's per-drive keys are
# grouped under a disk heading and a CD heading (each key under the kind
# of drive it belongs to); the plugin lists its control-socket keys; and
# an ide-cd without image= says "no medium" in its description and log.
. "$(dirname "$0")/mqblkd-lib.sh"
export PATH=/usr/bin:$PATH

"$MQBLKD" --help > "$TESTTMP/mqblkd.help" || die "mqblkd --help"
mqblk_nbdkit "$PLUGIN" --help > "$TESTTMP/plugin.help" || die "plugin --help"

for h in mqblkd plugin; do
	python3 - "$TESTTMP/$h.help" <<'PY' || die "$h --help: IDE keys not grouped"
import sys
lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith("ide: "))
end = next(i for i in range(start + 1, len(lines)) if not lines[i].strip())
group, seen = None, {}
for l in lines[start + 1:end]:
    s = l.strip()
    if s.endswith(":") and "=" not in s:
        group = s
        continue
    key = s.split("=", 1)[0]
    if key.startswith("hdX."):
        seen.setdefault(group, []).append(key[4:])
disk = [g for g in seen if "disk" in g]
cd = [g for g in seen if "CD" in g]
assert len(disk) == 1 and len(cd) == 1, seen
assert {"rpm", "udma", "pio", "track_seek_ms", "write_cache", "size"} <= set(seen[disk[0]]), seen
assert {"speed", "spinup_ms", "image"} <= set(seen[cd[0]]), seen
assert "speed" not in seen[disk[0]] and "rpm" not in seen[cd[0]], seen
assert None not in seen, seen
PY
done
# Every key mqblkd --help lists (device keys, per device) the plugin's
# lists too.
python3 - "$TESTTMP/mqblkd.help" "$TESTTMP/plugin.help" <<'PY' || die "the plugin's --help lacks keys mqblkd takes"
import re, sys
def keys(path):
    out, dev = set(), "common"
    text = open(path).read()
    for start in ("Keys every device takes", "\ndevice=NAME"):
        if start in text:
            text = text[text.index(start):]
    for l in text.splitlines():
        m = re.match(r"^([a-z][a-z0-9-]*): ", l)
        if m:
            dev = m.group(1)
            continue
        m = re.match(r"^\s*([A-Za-z][A-Za-z0-9_.*-]*)=", l)
        if m:
            out.add((dev, m.group(1)))
    return out
mq, plugin = keys(sys.argv[1]), keys(sys.argv[2])
common = {k for d, k in plugin if d == "common"}
missing = {k for k in mq if k not in plugin and k[1] not in common}
assert len(mq) > 100, len(mq)
assert not missing, sorted(missing)
PY
for k in control=PATH control-group=GROUP control-timeout= trace-dir=DIR; do
	grep -q "^$k" "$TESTTMP/plugin.help" || die "plugin --help lacks $k"
done

echo "== ide-cd without image=: no medium"
mqblkd_start ide-cd time_scale=0
nbdinfo --list "$uri" > "$TESTTMP/list" || die "nbdinfo --list"
mqblkd_stop
grep -q "description: .*no medium" "$TESTTMP/list" ||
	die "the description does not say no medium: $(cat "$TESTTMP/list")"
grep -q "hda: no medium" "$MQBLKD_LOG" || die "no 'no medium' log line"
echo "== readonly and read_only: one key, two spellings, one documented"
for h in mqblkd plugin; do
	grep -q "^  read_only=" "$TESTTMP/$h.help" && die "$h --help documents read_only="
	[ "$(grep -c "^  readonly=" "$TESTTMP/$h.help")" -ge 2 ] ||
		die "$h --help: readonly= not documented for file and mspro"
done
truncate -s 8M "$TESTTMP/disk.img"
for args in "mspro size=8M readonly=1" "mspro size=8M read_only=1" \
	"file file=$TESTTMP/disk.img readonly=1" \
	"file file=$TESTTMP/disk.img read_only=1"; do
	# shellcheck disable=SC2086 # split on purpose
	mqblkd_start $args time_scale=0
	nbdinfo "$uri" > "$TESTTMP/info" || die "nbdinfo ($args)"
	mqblkd_stop 2> /dev/null
	grep -q "is_read_only: true" "$TESTTMP/info" || die "$args: not read-only"
done
mqblkd_start mspro size=8M read_only=0 time_scale=0
nbdinfo "$uri" | grep -q "is_read_only: false" || die "read_only=0: read-only"
mqblkd_stop 2> /dev/null
! "$MQBLKD" -f -U "$TESTTMP/x.sock" mspro size=8M readonly=1 read_only=0 \
	2> "$TESTTMP/err" || die "readonly=1 read_only=0 accepted"
grep -q "disagree" "$TESTTMP/err" || die "no reason: $(cat "$TESTTMP/err")"
echo "help ok"
