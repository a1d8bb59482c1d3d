#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The man pages and --help agree: every option, command and key that
mqblkd --help, mqblkctl --help, mqblk-ublk --help, mqblk-replay-log
--help and the plugin's --help list is in the POD sources under docs/man/, and every one the pages document exists;
mqblk-devices(7) lists the same device/ attributes and fault/ triggers
per model as the control tree of mqblkd --demo; pod2man built the pages.

usage: check-man.py SRCDIR BUILDDIR
"""
import os
import re
import subprocess
import sys

src, build = sys.argv[1], sys.argv[2]
mandir = os.path.join(src, "docs", "man")
errors = []


def run(*argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit("%s exited %d: %s" % (argv, p.returncode, p.stderr))
    return p.stdout


def pod(name):
    with open(os.path.join(mandir, name + ".pod"), encoding="utf-8") as f:
        return f.read()


def pod_section(text, head):
    """The text of '=head1 HEAD' up to the next =head1."""
    m = re.search(r"^=head1 %s\n(.*?)(?=^=head1 |\Z)" % re.escape(head),
                  text, re.S | re.M)
    if not m:
        errors.append("no =head1 %s" % head)
        return ""
    return m.group(1)


def items(text):
    return re.findall(r"^=item (.*)$", text, re.M)


OPT = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def options(lines):
    """Options at the start of each line, up to the first word of its
    description: '-p, --port PORT', '--tls=off|on|require'."""
    found = set()
    for line in lines:
        for w in line.split():
            if re.fullmatch(r"--?[A-Za-z][\w-]*(=\S*)?,?", w):
                found.update(OPT.findall(w))
            elif not re.fullmatch(r"\[?[A-Z|.]+\]?(\|\S+)?", w):
                break
    return found


def compare(what, helped, paged, source="--help"):
    for k in sorted(helped - paged):
        errors.append("%s: %s is in %s but not in the man page"
                      % (what, k, source))
    for k in sorted(paged - helped):
        errors.append("%s: %s is in the man page but not in %s"
                      % (what, k, source))


def strip_pod(s):
    return re.sub(r"[BICFL]<([^<>]*)>", r"\1", s)


def pod_keys(text):
    """KEY of each '=item B<KEY=>...' in text."""
    return {m for m in re.findall(r"^=item B<([^=<>\s]+)=>", text, re.M)}


def help_keys(lines):
    keys = set()
    for line in lines:
        m = re.match(r"^\s*([A-Za-z][\w.*-]*)=", line)
        if m:
            keys.add(m.group(1))
    return keys


def help_devices(lines):
    """{device: {keys}} from the 'NAME: description' blocks of --help."""
    devs, cur = {}, None
    for line in lines:
        m = re.match(r"^([\w-]+): ", line)
        if m:
            cur = devs.setdefault(m.group(1), set())
        elif cur is not None:
            cur.update(help_keys([line]))
    return devs


# ---- mqblkd(8) ----------------------------------------------------------
text = run(os.path.join(build, "mqblkd"), "--help")
opt_part, _, keys_part = text.partition("Keys every device takes:")
common_part, _, dev_part = keys_part.partition("Devices (")
dev_part = dev_part.split("\n", 1)[1]
page = pod("mqblkd")
compare("mqblkd(8) options", options(opt_part.splitlines()),
        options(strip_pod(i) for i in items(pod_section(page, "OPTIONS"))))

# ---- mqblk-ublk(8) ------------------------------------------------------
text = run(os.path.join(build, "mqblk-ublk"), "--help")
page = pod("mqblk-ublk")
compare("mqblk-ublk(8) options", options(text.splitlines()),
        options(strip_pod(i) for i in items(pod_section(page, "OPTIONS"))))

# ---- mqblk-replay-log(1) ------------------------------------------------
text = run(os.path.join(build, "mqblk-replay-log"), "--help")
page = pod("mqblk-replay-log")
compare("mqblk-replay-log(1) options",
        options(text.split("Options:", 1)[1].splitlines()) | {"--help", "--version"},
        options(strip_pod(i) for i in items(pod_section(page, "OPTIONS"))))

# ---- mqblk-devices(7) ---------------------------------------------------
page = pod("mqblk-devices")
heads = re.split(r"^=head2 ", pod_section(page, "DEVICES"), flags=re.M)[1:]
pod_devs = {}
for h in heads:
    name, _, body = h.partition("\n")
    pod_devs[name.strip()] = body
common = help_keys(common_part.splitlines())
compare("mqblk-devices(7) common keys", common,
        pod_keys(pod_devs.pop("Keys every device takes", "")))
hdevs = help_devices(dev_part.splitlines())
compare("mqblk-devices(7) devices", set(hdevs), set(pod_devs))
for name in sorted(set(hdevs) & set(pod_devs)):
    compare("mqblk-devices(7) %s keys" % name, hdevs[name],
            pod_keys(pod_devs[name]))

# ---- mqblkctl(8) --------------------------------------------------------
text = run(os.path.join(build, "mqblkctl"), "--help")
usage, _, cmds = text.partition("Commands:")
page = pod("mqblkctl")
# the usage lines are syntax only: every option in them counts
compare("mqblkctl(8) options", set(OPT.findall(usage)),
        options(strip_pod(i) for i in items(pod_section(page, "OPTIONS"))))
help_cmds = set()
for line in cmds.splitlines():
    if re.match(r"^  [a-z]", line):
        # the command column ends at two spaces, or at the line's end
        syntax = line.strip().split("  ")[0]
        help_cmds.add(" ".join(w for w in syntax.split()
                               if re.fullmatch(r"[a-z]+", w)))
pod_cmds = {" ".join(re.findall(r"B<([a-z]+)>", i))
            for i in items(pod_section(page, "COMMANDS"))}
compare("mqblkctl(8) commands", help_cmds, pod_cmds)

# ---- nbdkit-mqblk-plugin(1) ---------------------------------------------
plugin = os.path.join(build, "nbdkit-mqblk-plugin.so")
text = run("nbdkit", plugin, "--help")
text = text.split("\nplugin: mqblk", 1)[1]
top, _, dev_part = text.partition("Devices (")
top_keys = {k for k in help_keys(l for l in top.splitlines()
                                 if not l.startswith(" "))}
compare("nbdkit-mqblk-plugin(1) keys", top_keys,
        pod_keys(pod_section(pod("nbdkit-mqblk-plugin"), "PARAMETERS")))
pdevs = help_devices(dev_part.split("\n", 1)[1].splitlines())
compare("plugin --help devices against mqblk-devices(7)", set(pdevs),
        set(pod_devs))
for name in sorted(set(pdevs) & set(pod_devs)):
    compare("plugin --help %s keys against mqblk-devices(7)" % name,
            pdevs[name], pod_keys(pod_devs[name]))

# ---- mqblk-devices(7): attributes and faults of the demo rack ----------
def pod_words(body, head):
    """The B<...> words under '=head3 HEAD' of a device's section."""
    m = re.search(r"^=head3 %s[^\n]*\n(.*?)(?=^=head|\Z)" % head, body,
                  re.S | re.M)
    return set(re.findall(r"B<([\w.-]+)>", m.group(1))) if m else set()


def control_tree():
    """{export: (attributes, faults)} of mqblkd --demo's control tree."""
    import socket
    import tempfile
    import time
    tmp = tempfile.mkdtemp(prefix="mqblk-man.")
    ctl = os.path.join(tmp, "ctl.sock")
    srv = subprocess.Popen([os.path.join(build, "mqblkd"), "-f", "-t", "1",
                            "-U", os.path.join(tmp, "nbd.sock"),
                            "--control", ctl, "--demo"],
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as c:
                    c.connect(ctl)
                break
            except OSError:
                if time.monotonic() > deadline or srv.poll() is not None:
                    sys.exit("mqblkd --demo --control did not start")
                time.sleep(0.05)

        def ls(path):
            p = subprocess.run([os.path.join(build, "mqblkctl"), "-s", ctl,
                                "ls", path], capture_output=True, text=True,
                               timeout=30)
            return p.stdout.split() if p.returncode == 0 else None

        tree = {}

        def walk(path):
            entries = ls(path) or []
            if "device/" in entries:
                tree[path] = (set(e.rstrip("/") for e in ls(path + "/device")),
                              set(e.rstrip("/") for e in ls(path + "/fault") or []))
                return
            for e in entries:
                if e.endswith("/"):
                    walk((path + "/" if path else "") + e.rstrip("/"))
        walk("")
        return tree
    finally:
        srv.terminate()
        srv.wait(timeout=30)
        subprocess.run(["rm", "-rf", tmp])


# The demo rack names each export after its model: ide/hda is the ide
# model's disk (ide-disk), ide/hdb its CD, null-zoned a null, sunvdc-cd a
# sunvdc.
seen = {}
for export, (attrs, faults) in control_tree().items():
    model = re.sub(r"-(zoned|cd)$", "", export.split("/")[0])
    if model not in pod_devs:
        errors.append("demo export %s: no model %s in mqblk-devices(7)"
                      % (export, model))
        continue
    a, f = seen.setdefault(model, (set(), set()))
    a.update(attrs)
    f.update(faults)
if len(seen) < 10:
    errors.append("the demo rack showed only %d models" % len(seen))
for model, (attrs, faults) in sorted(seen.items()):
    compare("mqblk-devices(7) %s attributes" % model, attrs,
            pod_words(pod_devs[model], "Attributes"), "the control tree")
    compare("mqblk-devices(7) %s faults" % model, faults,
            pod_words(pod_devs[model], "Faults"), "the control tree")

# pod2man rendered every page at build time (the 'man' target)
for name, section in (("mqblkd", 8), ("mqblkctl", 8), ("mqblk-ublk", 8),
                      ("nbdkit-mqblk-plugin", 1), ("mqblk-devices", 7),
                      ("mqblk-replay-log", 1)):
    out = os.path.join(build, "docs", "man", "%s.%d" % (name, section))
    if not os.path.exists(out):
        errors.append("%s was not built" % out)
    elif not re.search(r"^\.TH %s %d " % (re.escape(name), section),
                       open(out, encoding="utf-8").read(), re.M):
        errors.append("%s: no .TH line" % out)

for e in errors:
    print(e)
if errors:
    sys.exit(1)
print("man pages and --help agree: %d devices" % len(pod_devs))
