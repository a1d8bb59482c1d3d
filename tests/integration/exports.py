# nbdsh --opt-mode script: list exports with their descriptions, then
# OPT_INFO and OPT_GO on the same connection (nbdkit opens and closes a
# handle for each), and an unknown name refused.
import os
import re

import nbd

dev = os.environ["MQBLK_DEVICE"]
# ... and which policy row, rule or key chose the scheduler.
desc_re = re.compile(r".+: \d+ hw queues?, depth \d+, scheduler \S+ "
                     r"\((row [1-5]: .+|rule .+:\d+|scheduler= key)\)$")

names = []
h.opt_list(lambda name, desc: names.append((name, desc)) or 0)
assert len(names) == int(os.environ.get("MQBLK_NR_EXPORTS", "1")), \
    "%s: %d exports listed: %s" % (dev, len(names), names)
for name, desc in names:
    print("%s: export %r: %r" % (dev, name, desc))
    assert name, "%s: empty export name" % dev
    assert desc_re.match(desc), "%s: description %r" % (dev, desc)

h.set_full_info(True)
for name, desc in names:
    h.set_export_name(name)
    h.opt_info()
    assert h.get_size() > 0
    assert h.get_export_description() == desc, \
        "%s: OPT_INFO description %r != listed %r" \
        % (dev, h.get_export_description(), desc)

h.set_export_name("no-such-export")
try:
    h.opt_info()
except nbd.Error:
    pass
else:
    raise AssertionError("%s: OPT_INFO on an unknown export worked" % dev)

# The default export is the first one listed.
h.set_export_name("")
h.opt_info()
assert h.get_canonical_export_name() in ("", names[0][0])
h.set_export_name(names[0][0])
h.opt_info()
h.opt_info()
h.opt_go()
data = os.urandom(4096)
h.pwrite(data, 4096)
assert h.pread(4096, 4096) == data
print("%s: exports ok" % dev)
