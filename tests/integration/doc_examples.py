#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Extract the shell examples of Markdown files, for test-docs.sh.

A fenced block tagged sh, bash or shell is an example.  One preceded by
the line <!-- excerpt --> (blank lines between allowed) is a part of
something bigger, or needs what a test cannot give (a kernel module, a
port the demo holds), and is left out; so is one preceded by
<!-- build --> or <!-- test-command: ... -->, the build (and the serve
command) that test-docs.sh has done itself.  Every other one must run as
written.  A command line in an indented (unfenced) block would escape
all this: it is an error.  Writes OUTDIR/NNN.sh per runnable block, with a first comment
line naming FILE:LINE, and prints one "FILE:LINE excerpt|run" line per
example found.
"""
import os
import re
import sys

FENCE = re.compile(r"^(```+|~~~+)\s*([A-Za-z0-9_+-]*)")
SHELLS = {"sh", "bash", "shell"}
# The first words of a command line a reader would paste.
COMMANDS = re.compile(
    r"^ {4,}(\$ )?(sudo |\./)?(nbdkit|mqblkd|mqblkctl|mqblk-ublk|nbdsh|nbdinfo|"
    r"nbdcopy|nbd-client|qemu-img|qemu-io|fio|cmake|ctest|apt-get|rbd|ceph|"
    r"systemctl|dpkg-buildpackage|git)\b")


def blocks(path):
    """(line, lang, code, excerpt) for every fenced block of path."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    last = ""  # the last non-blank line outside a block
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m and COMMANDS.match(lines[i]) and not last.startswith(("-", "*")):
            sys.exit("%s:%d: a command in an indented block: fence it "
                     "(```sh, run by test-docs) or mark it "
                     "<!-- excerpt -->" % (path, i + 1))
        if not m:
            if lines[i].strip():
                last = lines[i].strip()
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i + 1
        i += 1
        code = []
        while i < len(lines) and not lines[i].startswith(fence):
            code.append(lines[i])
            i += 1
        if i == len(lines):
            sys.exit("%s:%d: unterminated code block" % (path, start))
        i += 1
        if last == "<!-- excerpt -->":
            kind = "excerpt"
        elif last == "<!-- build -->" or last.startswith("<!-- test-command"):
            kind = "build"
        else:
            kind = "run"
        yield start, lang, "\n".join(code) + "\n", kind
        last = ""


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: doc_examples.py OUTDIR FILE.md...")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for path in sys.argv[2:]:
        for line, lang, code, kind in blocks(path):
            if lang not in SHELLS:
                continue
            where = "%s:%d" % (path, line)
            print(where, kind)
            if kind != "run":
                continue
            n += 1
            with open(os.path.join(out, "%03d.sh" % n), "w") as f:
                f.write("# %s\n%s" % (where, code))


if __name__ == "__main__":
    main()
