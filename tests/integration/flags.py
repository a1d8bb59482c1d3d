# nbdsh script: what the server advertises matches the model.
#
# MQBLK_EXPECT holds space-separated NAME=VALUE pairs; every pair is
# checked, names not given are not.  Names: min, pref, max (block sizes),
# size, ro, rot, flush, fua, trim, zero, fastzero, multi, extents, cache.
import os

import nbd

dev = os.environ["MQBLK_DEVICE"]
want = dict(kv.split("=", 1) for kv in os.environ["MQBLK_EXPECT"].split())

got = {
    "min": h.get_block_size(nbd.SIZE_MINIMUM),
    "pref": h.get_block_size(nbd.SIZE_PREFERRED),
    "max": h.get_block_size(nbd.SIZE_MAXIMUM),
    "size": h.get_size(),
    "ro": int(h.is_read_only()),
    "rot": int(h.is_rotational()),
    "flush": int(h.can_flush()),
    "fua": int(h.can_fua()),
    "trim": int(h.can_trim()),
    "zero": int(h.can_zero()),
    "fastzero": int(h.can_fast_zero()),
    "multi": int(h.can_multi_conn()),
    "extents": int(h.can_meta_context(nbd.CONTEXT_BASE_ALLOCATION)),
    "cache": int(h.can_cache()),
}
print("%s: %s" % (dev, " ".join("%s=%s" % kv for kv in got.items())))
bad = ["%s=%s (expected %s)" % (k, got[k], v)
       for k, v in want.items() if str(got[k]) != v]
assert not bad, "%s: %s" % (dev, ", ".join(bad))
assert got["min"] <= got["pref"] <= got["max"], "%s: sizes out of order" % dev
assert got["size"] % got["min"] == 0, "%s: size not a block multiple" % dev
