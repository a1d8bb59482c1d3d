# nbdsh script: two connections to one export see each other's writes
# once the writer has flushed (or written with FUA).
import os

import nbd

dev = os.environ["MQBLK_DEVICE"]
h2 = nbd.NBD()
h2.connect_uri(h.get_uri())
size = h.get_size()
assert h2.get_size() == size, "%s: sizes differ" % dev

for i, (a, b) in enumerate([(h, h2), (h2, h), (h, h2)]):
    off = (i * 7919 * 4096) % (size - 65536)
    data = os.urandom(65536)
    a.pwrite(data, off)
    a.flush()
    assert b.pread(65536, off) == data, \
        "%s: round %d: flushed write not seen by the other connection" \
        % (dev, i)
    data = os.urandom(4096)
    a.pwrite(data, off + 65536 - 4096, nbd.CMD_FLAG_FUA)
    assert b.pread(4096, off + 65536 - 4096) == data, \
        "%s: round %d: FUA write not seen by the other connection" % (dev, i)

h2.shutdown()
print("%s: two connections ok (multi-conn advertised: %s)"
      % (dev, h.can_multi_conn()))
