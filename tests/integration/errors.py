# nbdsh script: a device failure reaches the client as EIO and the
# connection carries on.  The server runs null_blk with
# timeout=1,100,0,1 (the first request times out) and requeue faults.
import errno
import os

import nbd

data = os.urandom(65536)
try:
    h.pwrite(data, 0)
except nbd.Error as e:
    assert e.errnum == errno.EIO, "errno %s, expected EIO" % e.errnum
else:
    raise AssertionError("the injected timeout did not fail the write")

# Only one timeout was asked for; requeues are invisible to the client.
for i in range(32):
    h.pwrite(data, i * 65536)
    assert h.pread(65536, i * 65536) == data, "read-back %d" % i
h.flush()
print("device failure: EIO, then normal service")
