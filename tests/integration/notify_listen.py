#!/usr/bin/python3
# A NOTIFY_SOCKET as systemd holds it: receive sd_notify() datagrams on an
# AF_UNIX SOCK_DGRAM socket and write each line, in order, to OUT.  When
# READY=1 arrives and NBD_SOCKET is given, stop the sender (SIGSTOP; its
# pid comes with the datagram, SO_PASSCRED) so that its state is the one
# it announced, check that the socket accepts, let it go on (SIGCONT) and
# check that nbdinfo --list names its exports: one line, "CHECK ok
# NAMES..." or "CHECK fail WHY".
# Exits after STOPPING=1, or after 60 s.
#
# usage: notify_listen.py SOCKET OUT [NBD_SOCKET]
import os
import signal
import socket
import struct
import subprocess
import sys
import time

path, out = sys.argv[1], sys.argv[2]
nbd = sys.argv[3] if len(sys.argv) > 3 else None

s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(path + ".tmp")
os.rename(path + ".tmp", path)  # the test waits for PATH: bound by then
deadline = time.monotonic() + 60
with open(out, "a", buffering=1) as f:
    while time.monotonic() < deadline:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
        except socket.timeout:
            break
        msg = data.decode("utf-8", "replace")
        pid = None
        for level, typ, cdata in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", cdata[:12])[0]
        lines = msg.split("\n")
        for line in lines:
            if line:
                f.write("MSG %s\n" % line)
        if "READY=1" in lines and nbd:
            if not pid:
                f.write("CHECK fail no sender pid\n")
                continue
            os.kill(pid, signal.SIGSTOP)
            c = socket.socket(socket.AF_UNIX)
            try:
                try:
                    c.connect(nbd)  # the backlog takes it, stopped or not
                    c.close()
                finally:
                    os.kill(pid, signal.SIGCONT)
                r = subprocess.run(["nbdinfo", "--list",
                                    "nbd+unix:///?socket=" + nbd],
                                   capture_output=True, text=True,
                                   timeout=30)
                if r.returncode == 0:
                    names = [ln.split('"')[1] for ln in r.stdout.splitlines()
                             if ln.startswith('export="')]
                    f.write("CHECK ok %s\n" % " ".join(names))
                else:
                    f.write("CHECK fail nbdinfo: %s\n" % r.stderr.strip())
            except OSError as e:
                f.write("CHECK fail connect: %s\n" % e)
        if "STOPPING=1" in lines:
            break
