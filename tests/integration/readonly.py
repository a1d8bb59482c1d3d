# nbdsh script (h is connected to a read-only export: nbdkit -r, or a
# device the plugin reports read-only): reads work, every write-like
# command gets EPERM from the server, and the data does not change.
import errno
import os

import nbd

dev = os.environ["MQBLK_DEVICE"]
assert h.is_read_only(), "%s: not advertised read-only" % dev
before = h.pread(4096, 0)

# libnbd refuses these itself; turn that off so the server must.
h.set_strict_mode(0)
for what, fn, args in [
    ("write", h.pwrite, (bytes(4096), 0)),
    ("fua write", h.pwrite, (bytes(4096), 0, nbd.CMD_FLAG_FUA)),
    ("zero", h.zero, (4096, 0)),
    ("trim", h.trim, (4096, 0)),
]:
    try:
        fn(*args)
    except nbd.Error as e:
        assert e.errnum == errno.EPERM, \
            "%s: %s: errno %s, expected EPERM" % (dev, what, e.errnum)
    else:
        raise AssertionError("%s: %s succeeded on a read-only export"
                             % (dev, what))
h.flush()  # allowed on a read-only export
assert h.pread(4096, 0) == before, "%s: data changed" % dev
print("%s: read-only ok" % dev)
