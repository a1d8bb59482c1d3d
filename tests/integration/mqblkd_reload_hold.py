#!/usr/bin/python3
# A client that holds a connection to one export across a reload of
# mqblkd.  Run by test-mqblkd-reload.sh:
#   python3 mqblkd_reload_hold.py SOCKET EXPORT DIR
# Connects, writes and reads back a pattern, then creates DIR/held and
# waits (60 s at most) for DIR/go; then it reads the pattern back, writes
# and reads another, prints "held ok" and disconnects.
import os
import sys
import time

import nbd

sock, export, d = sys.argv[1], sys.argv[2], sys.argv[3]
h = nbd.NBD()
h.set_export_name(export)
h.connect_unix(sock)
h.pwrite(b"\x5a" * 4096, 0)
assert h.pread(4096, 0) == b"\x5a" * 4096, "first read"
open(os.path.join(d, "held"), "w").close()

deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(d, "go")):
    if time.monotonic() > deadline:
        sys.exit("held: no go within 60 s")
    time.sleep(0.02)

assert h.pread(4096, 0) == b"\x5a" * 4096, "the data did not survive"
h.pwrite(b"\xa5" * 4096, 8192)
h.flush()
assert h.pread(4096, 8192) == b"\xa5" * 4096, "read after the reload"
h.shutdown()
print("held ok")
