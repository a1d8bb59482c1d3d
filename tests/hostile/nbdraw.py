# A raw NBD client for the hostile-input suite: it sends exactly the bytes
# a case asks for, and reads replies without interpreting more than it
# must, so that every answer of the server can be asserted exactly.
import socket
import ssl
import struct
import time

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REP_MAGIC = 0x0003E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_MAGIC = 0x67446698
STRUCT_MAGIC = 0x668E33EF

OPT_EXPORT_NAME, OPT_ABORT, OPT_LIST, OPT_STARTTLS = 1, 2, 3, 5
OPT_INFO, OPT_GO, OPT_STRUCTURED_REPLY = 6, 7, 8
OPT_LIST_META_CONTEXT, OPT_SET_META_CONTEXT = 9, 10

REP_ACK, REP_SERVER, REP_INFO, REP_META_CONTEXT = 1, 2, 3, 4
ERR = 0x80000000
REP_ERR_UNSUP = ERR | 1
REP_ERR_POLICY = ERR | 2
REP_ERR_INVALID = ERR | 3
REP_ERR_TLS_REQD = ERR | 5
REP_ERR_UNKNOWN = ERR | 6
REP_ERR_TOO_BIG = ERR | 9

INFO_EXPORT, INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE = 0, 1, 2, 3

CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM = 0, 1, 2, 3, 4
CMD_CACHE, CMD_WRITE_ZEROES, CMD_BLOCK_STATUS = 5, 6, 7
FLAG_FUA, FLAG_NO_HOLE, FLAG_DF, FLAG_REQ_ONE, FLAG_FAST_ZERO = 1, 2, 4, 8, 16

EPERM, EIO, EINVAL, ENOSPC, EOVERFLOW, ENOTSUP = 1, 5, 22, 28, 75, 95

TYPE_NONE, TYPE_OFFSET_DATA, TYPE_OFFSET_HOLE = 0, 1, 2
TYPE_BLOCK_STATUS, TYPE_ERROR = 5, 0x8001


class Closed(Exception):
    """The server closed the connection."""


class Conn:
    def __init__(self, path, timeout=10):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.tls = None

    @property
    def io(self):
        return self.tls or self.sock

    def close(self):
        try:
            self.io.close()
        except OSError:
            pass

    def send(self, data):
        self.io.sendall(data)

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.io.recv(min(n - len(buf), 1 << 20))
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise Closed("closed after %d of %d bytes" % (len(buf), n))
            buf += chunk
        return bytes(buf)

    def expect_closed(self, within=10):
        """The server hangs up (EOF or reset) within the time given;
        anything it still sends first is skipped."""
        deadline = time.monotonic() + within
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("connection still open after %ss"
                                     % within)
            self.io.settimeout(left)
            try:
                chunk = self.io.recv(65536)
            except socket.timeout:
                continue
            except (ConnectionResetError, ssl.SSLError):
                return
            if not chunk:
                return

    # -- handshake -----------------------------------------------------
    def greeting(self):
        magic, opt, flags = struct.unpack(">QQH", self.recv_exact(18))
        assert magic == NBDMAGIC and opt == IHAVEOPT, "bad greeting"
        assert flags == 3, "handshake flags %#x" % flags
        return flags

    def start(self, cflags=3):
        self.greeting()
        self.send(struct.pack(">I", cflags))

    def opt(self, opt, data=b"", length=None):
        if length is None:
            length = len(data)
        self.send(struct.pack(">QII", IHAVEOPT, opt, length) + data)

    def reply(self):
        magic, opt, rtype, length = struct.unpack(">QIII",
                                                  self.recv_exact(20))
        assert magic == REP_MAGIC, "option reply magic %#x" % magic
        return opt, rtype, self.recv_exact(length) if length else b""

    def expect_reply(self, opt, rtype):
        got_opt, got_type, data = self.reply()
        assert (got_opt, got_type) == (opt, rtype), \
            "option %d: reply (%d, %#x), expected (%d, %#x): %r" % (
                opt, got_opt, got_type, opt, rtype, data[:80])
        return data

    def info_go(self, opt, name=b"", infos=()):
        data = struct.pack(">I", len(name)) + name + \
            struct.pack(">H", len(infos)) + \
            b"".join(struct.pack(">H", i) for i in infos)
        self.opt(opt, data)
        replies = {}
        while True:
            got_opt, rtype, payload = self.reply()
            assert got_opt == opt
            if rtype == REP_INFO:
                replies[struct.unpack(">H", payload[:2])[0]] = payload[2:]
                continue
            return rtype, replies

    def go(self, name=b"", structured=False, meta=False, infos=()):
        if structured:
            self.opt(OPT_STRUCTURED_REPLY)
            self.expect_reply(OPT_STRUCTURED_REPLY, REP_ACK)
        if meta:
            q = b"base:allocation"
            self.opt(OPT_SET_META_CONTEXT,
                     struct.pack(">I", len(name)) + name +
                     struct.pack(">II", 1, len(q)) + q)
            data = self.expect_reply(OPT_SET_META_CONTEXT, REP_META_CONTEXT)
            assert data[4:] == q
            self.expect_reply(OPT_SET_META_CONTEXT, REP_ACK)
        rtype, infos = self.info_go(OPT_GO, name, infos)
        assert rtype == REP_ACK, "GO: %#x" % rtype
        self.size, self.eflags = struct.unpack(">QH", infos[INFO_EXPORT])
        self.structured = structured
        return self.size, self.eflags

    def starttls(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        self.tls = ctx.wrap_socket(self.sock, server_hostname="localhost")

    # -- transmission --------------------------------------------------
    def request(self, cmd, offset=0, length=0, flags=0, handle=1,
                payload=b""):
        self.send(struct.pack(">IHHQQI", REQUEST_MAGIC, flags, cmd, handle,
                              offset, length) + payload)

    def simple(self, data_len=0):
        magic, err, handle = struct.unpack(">IIQ", self.recv_exact(16))
        assert magic == SIMPLE_MAGIC, "simple reply magic %#x" % magic
        data = self.recv_exact(data_len) if data_len and not err else b""
        return err, handle, data

    def chunk(self):
        magic, flags, ctype, handle, length = struct.unpack(
            ">IHHQI", self.recv_exact(20))
        assert magic in (STRUCT_MAGIC, SIMPLE_MAGIC), "magic %#x" % magic
        assert magic == STRUCT_MAGIC, "simple reply where a chunk belongs"
        return flags, ctype, handle, self.recv_exact(length)

    def any_reply(self, read_len=0):
        """(error, handle) of one reply, simple or structured, reading
        chunks up to the one flagged done."""
        head = self.recv_exact(4)
        magic = struct.unpack(">I", head)[0]
        if magic == SIMPLE_MAGIC:
            err, handle = struct.unpack(">IQ", self.recv_exact(12))
            if read_len and not err:
                self.recv_exact(read_len)
            return err, handle
        assert magic == STRUCT_MAGIC, "reply magic %#x" % magic
        err = 0
        while True:
            flags, ctype, handle, length = struct.unpack(
                ">HHQI", self.recv_exact(16))
            payload = self.recv_exact(length)
            if ctype & 0x8000:
                err = struct.unpack(">I", payload[:4])[0]
            if flags & 1:
                return err, handle
            head = self.recv_exact(4)
            assert struct.unpack(">I", head)[0] == STRUCT_MAGIC


def opt_reply_type_name(t):
    names = {REP_ACK: "ACK", REP_ERR_UNSUP: "ERR_UNSUP",
             REP_ERR_POLICY: "ERR_POLICY", REP_ERR_INVALID: "ERR_INVALID",
             REP_ERR_TLS_REQD: "ERR_TLS_REQD",
             REP_ERR_UNKNOWN: "ERR_UNKNOWN", REP_ERR_TOO_BIG: "ERR_TOO_BIG"}
    return names.get(t, hex(t))
