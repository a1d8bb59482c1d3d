# nbd_starttls_proxy.py SOCKET PORTFILE: let a plain TLS client (openssl
# s_client) talk to mqblkd.  Listen on 127.0.0.1 (the port goes to
# PORTFILE), and for each of the connections accepted: connect to the
# server's Unix SOCKET, negotiate fixed newstyle up to NBD_OPT_STARTTLS's
# ACK in clear, then relay bytes both ways, so that the TLS handshake is
# between the client and the server.  Runs until killed.
import os
import select
import socket
import struct
import sys
import threading

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REP_MAGIC = 0x0003E889045565A9
OPT_STARTTLS, REP_ACK = 5, 1


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        b = s.recv(n - len(buf))
        if not b:
            raise EOFError("server closed")
        buf += b
    return buf


def relay(a, b):
    try:
        while True:
            r, _, _ = select.select([a, b], [], [], 30)
            if not r:
                return
            for s in r:
                data = s.recv(65536)
                if not data:
                    return
                (b if s is a else a).sendall(data)
    except OSError:
        pass
    finally:
        a.close()
        b.close()


def serve(client, path):
    srv = socket.socket(socket.AF_UNIX)
    try:
        srv.settimeout(10)
        srv.connect(path)
        magic, opt, _ = struct.unpack(">QQH", recv_exact(srv, 18))
        assert magic == NBDMAGIC and opt == IHAVEOPT, "not fixed newstyle"
        srv.sendall(struct.pack(">I", 3))  # FIXED_NEWSTYLE | NO_ZEROES
        srv.sendall(struct.pack(">QII", IHAVEOPT, OPT_STARTTLS, 0))
        magic, opt, typ, ln = struct.unpack(">QIII", recv_exact(srv, 20))
        recv_exact(srv, ln)
        assert magic == REP_MAGIC and opt == OPT_STARTTLS, "bad reply"
        assert typ == REP_ACK, "STARTTLS refused: %#x" % typ
        srv.settimeout(None)
    except (OSError, EOFError, AssertionError) as e:
        print("proxy:", e, file=sys.stderr)
        srv.close()
        client.close()
        return
    relay(client, srv)


def main():
    path, portfile = sys.argv[1], sys.argv[2]
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c, path), daemon=True).start()


main()
