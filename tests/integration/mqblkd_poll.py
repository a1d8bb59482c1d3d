# Replies held back in the busy-poll window (autocorking) still leave when
# the client does not read: a client pipelines reads and, without reading,
# waits until every reply sits in its socket buffer.  Then it checks each
# one, and does the same with one request at a time.  Last, a reply held
# for a client that does not read must leave even while a second client
# keeps the loop busy, and so the window open, with reads of its own.
#
#   python3 mqblkd_poll.py SOCKET
import fcntl
import os
import struct
import sys
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "hostile"))
from nbdraw import CMD_READ, CMD_WRITE, Conn  # noqa: E402

BATCH = 70  # not a multiple of the 16 replies mqblkd sends early
LENGTH = 512
REPLY = 16 + LENGTH  # simple reply header and data


def unread(sock):
    return struct.unpack("i", fcntl.ioctl(sock, termios.FIONREAD,
                                          b"\0" * 4))[0]


def wait_unread(sock, want, within=10):
    """Until the socket holds want bytes nobody has read yet."""
    deadline = time.monotonic() + within
    while True:
        have = unread(sock)
        if have >= want:
            return have
        left = deadline - time.monotonic()
        assert left > 0, "only %d of %d reply bytes arrived" % (have, want)
        # FIONREAD has no event of its own: look again in a millisecond
        time.sleep(0.001)


def held_while_another_client_is_busy(path, a, pattern):
    """a has nothing unread.  Its second reply is held, as it has not
    read the first; b's reads keep the loop awake until it arrives."""
    a.request(CMD_READ, 0, LENGTH, handle=2000)
    wait_unread(a.sock, REPLY)
    a.request(CMD_READ, LENGTH, LENGTH, handle=2001)
    b = Conn(path)
    b.start()
    b.go()
    deadline = time.monotonic() + 5
    rounds = 0
    while unread(a.sock) < 2 * REPLY:
        assert time.monotonic() < deadline, (
            "a held reply did not leave in 5 s while another client "
            "kept the loop busy (%d reads)" % rounds)
        b.request(CMD_READ, 0, LENGTH, handle=rounds)
        assert b.simple(LENGTH) == (0, rounds, pattern[:LENGTH])
        rounds += 1
    b.close()
    assert a.simple(LENGTH) == (0, 2000, pattern[:LENGTH])
    assert a.simple(LENGTH) == (0, 2001, pattern[LENGTH:2 * LENGTH])
    return rounds


def main(path):
    c = Conn(path)
    c.start()
    c.go()
    pattern = os.urandom(BATCH * LENGTH)
    c.request(CMD_WRITE, 0, len(pattern), handle=1, payload=pattern)
    assert c.simple() == (0, 1, b"")

    # All at once, in one send, and nothing read until all are answered.
    reqs = b"".join(
        struct.pack(">IHHQQI", 0x25609513, 0, CMD_READ, 100 + i,
                    i * LENGTH, LENGTH) for i in range(BATCH))
    c.send(reqs)
    assert wait_unread(c.sock, BATCH * REPLY) == BATCH * REPLY
    seen = set()
    for _ in range(BATCH):
        err, handle, data = c.simple(LENGTH)
        i = handle - 100
        assert err == 0 and 0 <= i < BATCH and i not in seen, (err, handle)
        assert data == pattern[i * LENGTH:(i + 1) * LENGTH], handle
        seen.add(i)

    # One at a time, each answered before the next is sent.
    for i in range(BATCH):
        c.request(CMD_READ, i * LENGTH, LENGTH, handle=1000 + i)
        wait_unread(c.sock, REPLY)
        assert c.simple(LENGTH) == (
            0, 1000 + i, pattern[i * LENGTH:(i + 1) * LENGTH])
    rounds = held_while_another_client_is_busy(path, c, pattern)
    c.close()
    print("ok: %d pipelined and %d sequential reads answered; a held reply "
          "left during another client's %d reads" % (BATCH, BATCH, rounds))


if __name__ == "__main__":
    main(sys.argv[1])
