#!/usr/bin/env python3
# Hostile input against mqblkd over raw sockets: one case per kind of bad
# input the spec has an answer for, each asserting the exact reply or the
# disconnect.  A witness connection does verified I/O between cases: no
# case may disturb another client.  Started by test-mqblkd-hostile.sh:
#
#   hostile.py PLAIN_SOCK TLS_REQUIRE_SOCK TLS_ON_SOCK MAX_CONN HS_TIMEOUT
#
# The plain server has exports rw (ram), ro (file readonly=1) and nofast
# (null without memory: no fast zero).
import os
import struct
import sys
import time
import traceback

from nbdraw import *  # noqa: F401,F403

PLAIN, TLS_REQ, TLS_ON = sys.argv[1], sys.argv[2], sys.argv[3]
MAX_CONN, HS_TIMEOUT = int(sys.argv[4]), float(sys.argv[5])
MiB = 1 << 20
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def opened(path=PLAIN):
    c = Conn(path)
    c.start()
    return c


def transmission(name=b"", structured=False, meta=False, path=PLAIN):
    c = opened(path)
    c.go(name, structured, meta)
    return c


def info_raw(c, opt, data):
    c.opt(opt, data)
    return c.reply()


def expect_err(c, cmd, err, **kw):
    c.request(cmd, **kw)
    got, handle = c.any_reply()
    assert (got, handle) == (err, kw.get("handle", 1)), \
        "cmd %d: error %d handle %d, expected %d" % (cmd, got, handle, err)


def still_usable(c, offset=0):
    data = os.urandom(4096)
    c.request(CMD_WRITE, offset, 4096, handle=77, payload=data)
    assert c.any_reply() == (0, 77)
    c.request(CMD_READ, offset, 4096, handle=78)
    if c.structured:
        flags, ctype, handle, payload = c.chunk()
        assert ctype == TYPE_OFFSET_DATA and payload[8:] == data
    else:
        err, handle, got = c.simple(4096)
        assert (err, handle, got) == (0, 78, data)


# -- handshake -------------------------------------------------------------
@case
def unknown_client_flags():
    c = Conn(PLAIN)
    c.start(cflags=3 | 4)
    c.expect_closed()


@case
def all_client_flags():
    c = Conn(PLAIN)
    c.start(cflags=0xFFFFFFFF)
    c.expect_closed()


@case
def bad_option_magic():
    c = opened()
    c.send(struct.pack(">QII", 0x1122334455667788, OPT_LIST, 0))
    c.expect_closed()


@case
def option_length_4gib():
    c = opened()
    c.opt(OPT_GO, length=0xFFFFFFFF)
    c.expect_closed()


@case
def option_length_2mib_disconnects():
    c = opened()
    c.opt(OPT_INFO, length=2 * MiB)
    c.expect_closed()


@case
def option_too_big_is_skipped():
    c = opened()
    c.opt(0x4242, os.urandom(100 * 1024))
    c.expect_reply(0x4242, REP_ERR_TOO_BIG)
    c.opt(OPT_INFO, b"\0" * 1024 * 100)
    c.expect_reply(OPT_INFO, REP_ERR_TOO_BIG)
    rtype, infos = c.info_go(OPT_INFO)
    assert rtype == REP_ACK and INFO_EXPORT in infos


@case
def export_name_longer_than_4096_in_info():
    c = opened()
    name = b"x" * 4097
    _, rtype, _ = info_raw(c, OPT_INFO, struct.pack(">I", len(name)) +
                           name + struct.pack(">H", 0))
    assert rtype == REP_ERR_INVALID, opt_reply_type_name(rtype)


@case
def export_name_longer_than_4096_in_export_name():
    c = opened()
    c.opt(OPT_EXPORT_NAME, b"x" * 4097)
    c.expect_closed()


@case
def name_length_zero_is_the_default():
    c = opened()
    rtype, infos = c.info_go(OPT_INFO, b"", [INFO_NAME])
    assert rtype == REP_ACK and infos[INFO_NAME] == b"rw", infos


@case
def name_length_ffffffff():
    c = opened()
    _, rtype, _ = info_raw(c, OPT_GO, struct.pack(">IH", 0xFFFFFFFF, 0))
    assert rtype == REP_ERR_INVALID, opt_reply_type_name(rtype)
    still = c.info_go(OPT_INFO)
    assert still[0] == REP_ACK


@case
def info_data_shorter_than_its_name():
    c = opened()
    _, rtype, _ = info_raw(c, OPT_INFO, struct.pack(">I", 100) + b"rw" +
                           struct.pack(">H", 0))
    assert rtype == REP_ERR_INVALID, opt_reply_type_name(rtype)


@case
def info_fewer_requests_than_counted():
    c = opened()
    _, rtype, _ = info_raw(c, OPT_GO, struct.pack(">I", 2) + b"rw" +
                           struct.pack(">HH", 5, INFO_NAME))
    assert rtype == REP_ERR_INVALID, opt_reply_type_name(rtype)


@case
def go_shorter_than_6_bytes():
    c = opened()
    _, rtype, _ = info_raw(c, OPT_GO, b"\0\0\0")
    assert rtype == REP_ERR_INVALID, opt_reply_type_name(rtype)


@case
def name_with_nul():
    c = opened()
    _, rtype, _ = info_raw(c, OPT_INFO, struct.pack(">I", 3) + b"r\0w" +
                           struct.pack(">H", 0))
    assert rtype == REP_ERR_INVALID, opt_reply_type_name(rtype)


@case
def info_unknown_export():
    c = opened()
    rtype, _ = c.info_go(OPT_INFO, b"no-such-export")
    assert rtype == REP_ERR_UNKNOWN, opt_reply_type_name(rtype)


@case
def export_name_unknown_disconnects():
    c = opened()
    c.opt(OPT_EXPORT_NAME, b"no-such-export")
    c.expect_closed()


@case
def info_then_go():
    c = opened()
    rtype, infos = c.info_go(OPT_INFO, b"ro", [INFO_BLOCK_SIZE, INFO_NAME])
    assert rtype == REP_ACK
    size, eflags = struct.unpack(">QH", infos[INFO_EXPORT])
    assert eflags & 2, "ro export not read-only"
    minimum, preferred, maximum = struct.unpack(">III",
                                                infos[INFO_BLOCK_SIZE])
    assert (minimum, maximum) == (512, 64 * MiB), infos[INFO_BLOCK_SIZE]
    assert preferred & (preferred - 1) == 0 and preferred >= minimum
    assert c.go(b"ro") == (size, eflags)


@case
def go_twice():
    c = transmission()
    # After the first GO, these bytes are a request with a bad magic.
    c.opt(OPT_GO, struct.pack(">I", 2) + b"rw" + struct.pack(">5H", 4, 0, 1,
                                                             2, 3))
    c.expect_closed()


@case
def export_name_without_no_zeroes():
    c = Conn(PLAIN)
    c.start(cflags=1)
    c.opt(OPT_EXPORT_NAME, b"rw")
    size, eflags = struct.unpack(">QH", c.recv_exact(10))
    assert size == 64 * MiB and eflags & 1
    assert c.recv_exact(124) == bytes(124)
    c.structured = False
    still_usable(c)


@case
def unknown_option_is_unsupported():
    c = opened()
    c.opt(99, b"some data")
    c.expect_reply(99, REP_ERR_UNSUP)
    c.go()


@case
def list_with_data():
    c = opened()
    c.opt(OPT_LIST, b"junk")
    c.expect_reply(OPT_LIST, REP_ERR_INVALID)
    c.opt(OPT_LIST)
    names = []
    while True:
        _, rtype, data = c.reply()
        if rtype == REP_ACK:
            break
        assert rtype == REP_SERVER
        n = struct.unpack(">I", data[:4])[0]
        names.append(data[4:4 + n])
    assert names == [b"rw", b"ro", b"nofast"], names


@case
def structured_reply_with_data_and_twice():
    c = opened()
    c.opt(OPT_STRUCTURED_REPLY, b"x")
    c.expect_reply(OPT_STRUCTURED_REPLY, REP_ERR_INVALID)
    c.opt(OPT_STRUCTURED_REPLY)
    c.expect_reply(OPT_STRUCTURED_REPLY, REP_ACK)
    c.opt(OPT_STRUCTURED_REPLY)
    c.expect_reply(OPT_STRUCTURED_REPLY, REP_ERR_INVALID)


@case
def set_meta_context_without_structured_replies():
    c = opened()
    q = b"base:allocation"
    c.opt(OPT_SET_META_CONTEXT,
          struct.pack(">I", 0) + struct.pack(">II", 1, len(q)) + q)
    c.expect_reply(OPT_SET_META_CONTEXT, REP_ERR_INVALID)
    c.opt(OPT_LIST_META_CONTEXT, struct.pack(">II", 0, 0))
    c.expect_reply(OPT_LIST_META_CONTEXT, REP_ERR_INVALID)


@case
def set_meta_context_truncated_query():
    c = opened()
    c.opt(OPT_STRUCTURED_REPLY)
    c.expect_reply(OPT_STRUCTURED_REPLY, REP_ACK)
    c.opt(OPT_SET_META_CONTEXT,
          struct.pack(">I", 0) + struct.pack(">II", 2, 50) + b"base:")
    c.expect_reply(OPT_SET_META_CONTEXT, REP_ERR_INVALID)
    c.opt(OPT_LIST_META_CONTEXT, struct.pack(">II", 0, 0))
    data = c.expect_reply(OPT_LIST_META_CONTEXT, REP_META_CONTEXT)
    assert data[4:] == b"base:allocation"
    c.expect_reply(OPT_LIST_META_CONTEXT, REP_ACK)


@case
def starttls_when_tls_is_off():
    c = opened()
    c.opt(OPT_STARTTLS)
    c.expect_reply(OPT_STARTTLS, REP_ERR_POLICY)
    c.go()


@case
def abort():
    c = opened()
    c.opt(OPT_ABORT)
    c.expect_reply(OPT_ABORT, REP_ACK)
    c.expect_closed()


@case
def too_many_options():
    # 32, plus 4 for each of the server's 3 exports (nbdinfo --list asks
    # two options of every export).
    c = opened()
    for _ in range(32 + 4 * 3):
        c.opt(99)
        c.expect_reply(99, REP_ERR_UNSUP)
    c.opt(99)
    c.expect_closed()


@case
def handshake_timeout_silent_client():
    c = Conn(PLAIN)
    c.greeting()
    t = time.monotonic()
    c.expect_closed(within=HS_TIMEOUT + 5)
    assert time.monotonic() - t >= HS_TIMEOUT - 0.5


@case
def handshake_timeout_slow_negotiation():
    c = opened()
    t = time.monotonic()
    try:
        for _ in range(30):
            c.opt(99)
            c.expect_reply(99, REP_ERR_UNSUP)
            time.sleep(HS_TIMEOUT / 8)
    except (Closed, BrokenPipeError, ConnectionResetError):
        pass
    c.expect_closed(within=HS_TIMEOUT + 5)
    assert time.monotonic() - t < HS_TIMEOUT + 5


# -- transmission ----------------------------------------------------------
@case
def bad_request_magic():
    c = transmission()
    c.send(struct.pack(">IHHQQI", 0x12345678, 0, CMD_READ, 1, 0, 512))
    c.expect_closed()


@case
def unknown_command():
    c = transmission()
    expect_err(c, 99, EINVAL, length=512)
    still_usable(c)


@case
def unknown_command_flags():
    c = transmission(structured=True)
    expect_err(c, CMD_READ, EINVAL, length=512, flags=1 << 7)
    still_usable(c)


@case
def flags_on_the_wrong_command():
    c = transmission()
    expect_err(c, CMD_READ, EINVAL, length=512, flags=FLAG_REQ_ONE)
    expect_err(c, CMD_READ, EINVAL, length=512, flags=FLAG_DF)
    expect_err(c, CMD_FLUSH, EINVAL, flags=FLAG_NO_HOLE)
    expect_err(c, CMD_WRITE, EINVAL, length=512, flags=FLAG_FAST_ZERO,
               payload=bytes(512))
    still_usable(c)


@case
def zero_length_requests():
    c = transmission()
    for cmd in (CMD_READ, CMD_TRIM, CMD_WRITE_ZEROES, CMD_CACHE):
        expect_err(c, cmd, EINVAL, offset=4096, length=0)
    expect_err(c, CMD_WRITE, EINVAL, offset=4096, length=0)
    still_usable(c)


@case
def misaligned_requests():
    # Refused only from a client that asked for the block size in GO;
    # test-unaligned.sh serves the others.
    c = opened()
    c.go(structured=True, infos=[INFO_BLOCK_SIZE])
    expect_err(c, CMD_READ, EINVAL, offset=1, length=512)
    expect_err(c, CMD_READ, EINVAL, offset=0, length=100)
    expect_err(c, CMD_WRITE, EINVAL, offset=3, length=512,
               payload=bytes(512))
    expect_err(c, CMD_TRIM, EINVAL, offset=512, length=7)
    still_usable(c)


@case
def out_of_range_requests():
    c = transmission()
    size = c.size
    expect_err(c, CMD_READ, EINVAL, offset=size, length=512)
    expect_err(c, CMD_READ, EINVAL, offset=size - 512, length=1024)
    expect_err(c, CMD_WRITE, ENOSPC, offset=size, length=512,
               payload=bytes(512))
    expect_err(c, CMD_WRITE_ZEROES, ENOSPC, offset=size - 512, length=4096)
    expect_err(c, CMD_TRIM, EINVAL, offset=size, length=4096)
    still_usable(c)


@case
def offset_wraps_around():
    c = transmission()
    expect_err(c, CMD_READ, EINVAL, offset=(1 << 64) - 512, length=1024)
    expect_err(c, CMD_WRITE, ENOSPC, offset=(1 << 64) - 512, length=1024,
               payload=bytes(1024))
    still_usable(c)


@case
def writes_to_a_read_only_export():
    c = transmission(b"ro")
    assert c.eflags & 2
    expect_err(c, CMD_WRITE, EPERM, length=4096, payload=os.urandom(4096))
    expect_err(c, CMD_TRIM, EPERM, length=4096)
    expect_err(c, CMD_WRITE_ZEROES, EPERM, length=4096)
    expect_err(c, CMD_WRITE, EPERM, length=4096, flags=FLAG_FUA,
               payload=bytes(4096))
    c.request(CMD_READ, 0, 4096, handle=9)
    err, handle, _ = c.simple(4096)
    assert (err, handle) == (0, 9)


@case
def oversize_write_is_consumed():
    # Over the 64 MiB maximum, and so beyond the 64 MiB export too.
    c = transmission()
    n = 65 * MiB
    c.request(CMD_WRITE, 0, n, handle=5)
    chunk = bytes(MiB)
    for _ in range(65):
        c.send(chunk)
    assert c.any_reply() == (ENOSPC, 5)
    still_usable(c)


@case
def oversize_write_beyond_the_skip_limit():
    c = transmission()
    c.request(CMD_WRITE, 0, 0xFFFFFE00, handle=6)
    assert c.any_reply() == (ENOSPC, 6)  # also beyond the 64 MiB export
    c.expect_closed()


@case
def oversize_read():
    c = transmission(structured=True)
    expect_err(c, CMD_READ, EINVAL, length=64 * MiB + 512)
    still_usable(c)


@case
def block_status_without_meta_context():
    c = transmission(structured=True)
    expect_err(c, CMD_BLOCK_STATUS, EINVAL, length=4096)
    still_usable(c)


@case
def failed_set_meta_context_clears_the_selection():
    # The spec: SET_META_CONTEXT replaces the selection "including when
    # this command fails".  A good SET, then a failing one (unknown
    # export, then a truncated query): BLOCK_STATUS is refused.
    q = b"base:allocation"
    good = struct.pack(">I", 0) + struct.pack(">II", 1, len(q)) + q
    bad_export = struct.pack(">I", 5) + b"nosuc" + \
        struct.pack(">II", 1, len(q)) + q
    truncated = struct.pack(">I", 0) + struct.pack(">II", 2, len(q)) + q
    for bad, rtype in ((bad_export, REP_ERR_UNKNOWN),
                       (truncated, REP_ERR_INVALID)):
        c = opened()
        c.opt(OPT_STRUCTURED_REPLY)
        c.expect_reply(OPT_STRUCTURED_REPLY, REP_ACK)
        c.opt(OPT_SET_META_CONTEXT, good)
        c.expect_reply(OPT_SET_META_CONTEXT, REP_META_CONTEXT)
        c.expect_reply(OPT_SET_META_CONTEXT, REP_ACK)
        c.opt(OPT_SET_META_CONTEXT, bad)
        c.expect_reply(OPT_SET_META_CONTEXT, rtype)
        c.go(structured=False)
        c.structured = True
        expect_err(c, CMD_BLOCK_STATUS, EINVAL, length=4096)
        still_usable(c)


@case
def fast_zero_refused_where_it_cannot_be_fast():
    c = transmission(b"nofast")
    assert not c.eflags & (1 << 11), "nofast advertises fast zero"
    expect_err(c, CMD_WRITE_ZEROES, ENOTSUP, length=4096,
               flags=FLAG_FAST_ZERO)
    c.request(CMD_WRITE_ZEROES, 0, 4096, handle=3)
    assert c.any_reply() == (0, 3)


@case
def flush_with_offset():
    c = transmission()
    expect_err(c, CMD_FLUSH, EINVAL, offset=512, length=0)
    c.request(CMD_FLUSH, handle=4)
    assert c.any_reply() == (0, 4)


@case
def df_read_and_holes():
    c = transmission(structured=True, meta=True)
    c.request(CMD_TRIM, 8 * MiB, MiB, handle=1)
    assert c.any_reply() == (0, 1)
    c.request(CMD_READ, 8 * MiB, MiB, flags=FLAG_DF, handle=2)
    flags, ctype, handle, payload = c.chunk()
    assert (flags & 1, ctype, handle) == (1, TYPE_OFFSET_DATA, 2)
    assert payload == struct.pack(">Q", 8 * MiB) + bytes(MiB)
    c.request(CMD_READ, 8 * MiB, MiB, handle=3)
    flags, ctype, handle, payload = c.chunk()
    assert (flags & 1, ctype, handle) == (1, TYPE_OFFSET_HOLE, 3), ctype
    assert payload == struct.pack(">QI", 8 * MiB, MiB)
    c.request(CMD_BLOCK_STATUS, 8 * MiB, MiB, flags=FLAG_REQ_ONE, handle=4)
    flags, ctype, handle, payload = c.chunk()
    assert (ctype, handle, len(payload)) == (TYPE_BLOCK_STATUS, 4, 12)
    assert struct.unpack(">III", payload) == (1, MiB, 3), payload


@case
def disc_answers_what_came_before():
    c = transmission()
    c.request(CMD_READ, 0, 65536, handle=11)
    c.request(CMD_DISC, handle=12)
    err, handle, data = c.simple(65536)
    assert (err, handle, len(data)) == (0, 11, 65536)
    c.expect_closed()


@case
def queued_reads_then_hang_up():
    c = transmission()
    for i in range(128):
        c.request(CMD_READ, (i % 64) * MiB, 256 * 1024, handle=i)
    c.close()


@case
def replies_never_read():
    c = transmission()
    big = bytes(MiB)
    try:
        c.sock.settimeout(5)
        for i in range(200):
            c.request(CMD_READ, (i % 64) * MiB, MiB, handle=i)
            if i % 10 == 0:
                c.request(CMD_WRITE, 0, MiB, handle=1000 + i, payload=big)
    except (socket.timeout, BrokenPipeError):
        pass  # the server stopped reading: back-pressure works
    c.close()


@case
def too_many_connections():
    # Earlier cases' connections may still be finishing: wait until the
    # server has every place but the witness's free again.
    deadline = time.monotonic() + 10
    while True:
        held = []
        try:
            for _ in range(MAX_CONN - 1):
                c = Conn(PLAIN)
                held.append(c)
                c.greeting()
            break
        except Closed:
            for c in held:
                c.close()
            assert time.monotonic() < deadline, "places never released"
            time.sleep(0.05)
    try:
        extra = Conn(PLAIN)
        try:
            extra.recv_exact(18)
            raise AssertionError("connection over the limit was served")
        except Closed:
            pass
    finally:
        for c in held:
            c.close()


# -- TLS -------------------------------------------------------------------
@case
def tls_required_before_options():
    c = opened(TLS_REQ)
    for opt, data in ((OPT_LIST, b""), (OPT_STRUCTURED_REPLY, b""),
                      (OPT_INFO, struct.pack(">IH", 0, 0)),
                      (OPT_GO, struct.pack(">IH", 0, 0)), (99, b"x")):
        c.opt(opt, data)
        c.expect_reply(opt, REP_ERR_TLS_REQD)
    c.opt(OPT_ABORT)
    c.expect_reply(OPT_ABORT, REP_ACK)


@case
def tls_required_export_name_disconnects():
    c = opened(TLS_REQ)
    c.opt(OPT_EXPORT_NAME, b"")
    c.expect_closed()


@case
def tls_second_starttls():
    c = opened(TLS_REQ)
    c.opt(OPT_STARTTLS)
    c.expect_reply(OPT_STARTTLS, REP_ACK)
    c.starttls()
    c.opt(OPT_STARTTLS)
    c.expect_reply(OPT_STARTTLS, REP_ERR_INVALID)
    c.go()
    still_usable(c)


@case
def tls_plaintext_pipelined_after_starttls_is_dropped():
    c = opened(TLS_ON)
    # One write: STARTTLS, then STRUCTURED_REPLY in clear.
    c.send(struct.pack(">QII", IHAVEOPT, OPT_STARTTLS, 0) +
           struct.pack(">QII", IHAVEOPT, OPT_STRUCTURED_REPLY, 0))
    c.expect_reply(OPT_STARTTLS, REP_ACK)
    c.starttls()
    # Had the injected option counted, this would be refused.
    c.opt(OPT_STRUCTURED_REPLY)
    c.expect_reply(OPT_STRUCTURED_REPLY, REP_ACK)


@case
def tls_nothing_negotiated_before_survives():
    c = opened(TLS_ON)
    c.opt(OPT_STRUCTURED_REPLY)
    c.expect_reply(OPT_STRUCTURED_REPLY, REP_ACK)
    c.opt(OPT_STARTTLS)
    c.expect_reply(OPT_STARTTLS, REP_ACK)
    c.starttls()
    q = b"base:allocation"
    c.opt(OPT_SET_META_CONTEXT,
          struct.pack(">I", 0) + struct.pack(">II", 1, len(q)) + q)
    c.expect_reply(OPT_SET_META_CONTEXT, REP_ERR_INVALID)
    c.go()
    c.structured = False
    c.request(CMD_READ, 0, 512, handle=3)
    err, handle, _ = c.simple(512)  # simple: structured was forgotten
    assert (err, handle) == (0, 3)


@case
def tls_garbage_instead_of_a_handshake():
    c = opened(TLS_ON)
    c.opt(OPT_STARTTLS)
    c.expect_reply(OPT_STARTTLS, REP_ACK)
    c.send(b"GET / HTTP/1.0\r\n\r\n" * 10)
    c.expect_closed()


def main():
    witness = transmission(structured=True)
    passed = failed = 0
    for i, fn in enumerate(CASES):
        try:
            fn()
            still_usable(witness, offset=(i % 16) * 4096)
            print("PASS %s" % fn.__name__, flush=True)
            passed += 1
        except Exception:
            print("FAIL %s" % fn.__name__, flush=True)
            traceback.print_exc()
            failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
