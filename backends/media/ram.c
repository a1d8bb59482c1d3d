// SPDX-License-Identifier: GPL-2.0
/*
 * The ram store: sparse memory (backends/common/sparse.c).  Pages come on
 * first write and go when discarded or zeroed, so a discard reads back as
 * zeroes.  I/O ends inline, on the submitter's thread.
 */
#include <errno.h>

#include "media.h"
#include "../common/sparse.h"

static int ram_open(struct media *m, const char *arg,
		    const struct media_open_args *a, struct mq_err *e)
{
	const char *key = a->key ? a->key : "media";

	if (arg)
		return mq_err_set(e, "%s=ram:%s: ram takes no argument", key,
				  arg);
	if (!a->size)
		return mq_err_set(e, "%s=ram: give size=BYTES", key);
	m->size = a->size / a->block_size * a->block_size;
	m->priv = sparse_store_new(m->size);
	if (!m->priv)
		return mq_err_set(e, "%s=ram: out of memory", key);
	m->caps = MEDIA_CAN_TRIM | MEDIA_CAN_ZERO | MEDIA_CAN_FAST_ZERO |
		  MEDIA_CAN_EXTENTS | MEDIA_CAN_MULTI_CONN | MEDIA_CAN_FUA |
		  MEDIA_TRIM_ZEROES;
	return 0;
}

static void ram_close(struct media *m)
{
	sparse_store_free(m->priv);
}

static void ram_submit(struct media *m, struct media_io *io)
{
	struct sparse_store *s = m->priv;
	int err = 0;

	switch (io->op) {
	case MEDIA_READ:
		sparse_store_read(s, io->buf, (uint32_t)io->len, io->offset);
		break;
	case MEDIA_WRITE:
		err = sparse_store_write(s, io->buf, (uint32_t)io->len,
					 io->offset);
		break;
	case MEDIA_DISCARD:
	case MEDIA_WRITE_ZEROES:
		/* Freeing is zeroing here, so NOUNMAP changes nothing. */
		sparse_store_zero(s, io->len, io->offset);
		break;
	case MEDIA_FLUSH:
		break;
	default:
		err = EOPNOTSUPP;
	}
	media_io_end(io, err);
}

static int ram_extents(struct media *m, uint64_t offset, uint64_t len,
		       extent_fn *fn, void *arg)
{
	return sparse_store_extents(m->priv, offset, len, fn, arg);
}

const struct media_ops ram_media_ops = {
	.name = "ram",
	.usage = "ram",
	.flags = MEDIA_OPS_NEVER_SLEEPS,
	.open = ram_open,
	.close = ram_close,
	.submit = ram_submit,
	.extents = ram_extents,
};
