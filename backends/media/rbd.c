// SPDX-License-Identifier: GPL-2.0
/*
 * The rbd store: a Ceph RBD image, "rbd:POOL/IMAGE" or
 * "rbd:POOL/IMAGE@SNAP" (read-only), through backends/rbd/rbd-client.c,
 * which the rbd device serves too.  The store reads the client's keys
 * (conf, id, keyring, snap, create, cache, connect_timeout) from the
 * device's.  librbd calls back on its own threads; the client hands each
 * completion to its own thread, and media_io_end() runs there (or on
 * io->irq when the submitter gave one).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media.h"
#include "../rbd/rbd-client.h"
#include "../../server/mq/blk-mq.h"

/* One I/O in flight: the client's aio and the media_io it carries. */
struct rbd_media_io {
	struct rbd_aio aio;
	struct iovec iov;
	struct media_io *io;
};

static int rbd_media_open(struct media *m, const char *arg,
			  const struct media_open_args *a, struct mq_err *e)
{
	const char *key = a->key ? a->key : "media";
	struct rbd_client_opts o = {0};
	char pool[128], image[256], snap[128] = "";
	struct rbd_client *c;
	const char *slash, *at;
	size_t n;

	if (!arg || !*arg)
		return mq_err_set(e, "%s=rbd: give rbd:POOL/IMAGE", key);
	slash = strchr(arg, '/');
	if (!slash || slash == arg || !slash[1])
		return mq_err_set(e, "%s=rbd:%s: give rbd:POOL/IMAGE[@SNAP]",
				  key, arg);
	n = (size_t)(slash - arg);
	if (n >= sizeof(pool))
		return mq_err_set(e, "%s=rbd:%s: pool name too long", key, arg);
	memcpy(pool, arg, n);
	pool[n] = '\0';
	at = strchr(slash + 1, '@');
	n = at ? (size_t)(at - slash - 1) : strlen(slash + 1);
	if (!n || n >= sizeof(image) ||
	    (at && (!at[1] || strlen(at + 1) >= sizeof(snap))))
		return mq_err_set(e, "%s=rbd:%s: give rbd:POOL/IMAGE[@SNAP]",
				  key, arg);
	memcpy(image, slash + 1, n);
	image[n] = '\0';
	if (at)
		snprintf(snap, sizeof(snap), "%s", at + 1);

	if (a->params && rbd_client_read_params(a->params, &o, e))
		return -1;
	if (!a->params)
		o = (struct rbd_client_opts){.id = "admin",
					     .connect_timeout_s = 10};
	if (snap[0]) {
		if (o.snap && strcmp(o.snap, snap))
			return mq_err_set(e, "%s=rbd:%s and snap=%s disagree",
					  key, arg, o.snap);
		o.snap = snap;
		o.read_only = true;
	}
	o.pool = pool;
	o.image = image;
	o.read_only = o.read_only || a->read_only;
	o.io_timeout_ms = a->io_timeout_ms;
	o.name = a->name;
	if (rbd_client_open(&o, &c, e)) {
		/* The device's own keys are pool= and image=: say which. */
		if (e && strcmp(key, "image") != 0) {
			char msg[sizeof(e->msg)];

			snprintf(msg, sizeof(msg), "%s", e->msg);
			mq_err_set(e, "%s=rbd:%s: %s", key, arg, msg);
		}
		return -1;
	}

	if (a->size > rbd_client_size(c)) {
		mq_err_set(e,
			   "%s=rbd:%s: the image has %" PRIu64
			   " bytes, fewer than the %" PRIu64 " wanted",
			   key, arg, rbd_client_size(c), a->size);
		rbd_client_close(c);
		return -1;
	}
	m->size = a->size ? a->size : rbd_client_size(c);
	m->size -= m->size % a->block_size;
	m->read_only = rbd_client_read_only(c);
	m->io_opt = rbd_client_object_size(c);
	m->caps = MEDIA_CAN_FLUSH | MEDIA_CAN_FUA | MEDIA_CAN_MULTI_CONN;
	if (!m->read_only)
		m->caps |=
			MEDIA_CAN_TRIM | MEDIA_CAN_ZERO | MEDIA_CAN_FAST_ZERO;
	if (rbd_client_has_extents(c))
		m->caps |= MEDIA_CAN_EXTENTS;
	snprintf(m->desc, sizeof(m->desc), "rbd:%s", rbd_client_desc(c));
	m->priv = c;
	return 0;
}

static void rbd_media_close(struct media *m)
{
	rbd_client_close(m->priv);
}

/* The client's thread. */
static void rbd_media_end(struct rbd_aio *aio)
{
	struct rbd_media_io *x = container_of(aio, struct rbd_media_io, aio);
	struct media_io *io = x->io;
	int status = aio->status;

	free(x);
	media_io_end(io, status);
}

static const enum rbd_aio_op rbd_media_ops_map[] = {
	[MEDIA_READ] = RBD_AIO_READ,
	[MEDIA_WRITE] = RBD_AIO_WRITE,
	[MEDIA_FLUSH] = RBD_AIO_FLUSH,
	[MEDIA_DISCARD] = RBD_AIO_DISCARD,
	[MEDIA_WRITE_ZEROES] = RBD_AIO_WRITE_ZEROES,
};

static void rbd_media_submit(struct media *m, struct media_io *io)
{
	struct rbd_media_io *x;

	if ((unsigned int)io->op >=
	    sizeof(rbd_media_ops_map) / sizeof(rbd_media_ops_map[0])) {
		media_io_end(io, EOPNOTSUPP);
		return;
	}
	x = malloc(sizeof(*x));
	if (!x) {
		media_io_end(io, ENOMEM);
		return;
	}
	x->io = io;
	x->iov.iov_base = io->buf;
	x->iov.iov_len = io->len;
	x->aio = (struct rbd_aio){
		.op = rbd_media_ops_map[io->op],
		.offset = io->offset,
		.len = io->len,
		.iov = &x->iov,
		.iovcnt = 1,
		.end = rbd_media_end,
	};
	if (io->flags & MEDIA_IO_FUA)
		x->aio.flags |= RBD_AIO_FUA;
	if (io->flags & MEDIA_IO_NOUNMAP)
		x->aio.flags |= RBD_AIO_NOUNMAP;
	rbd_client_submit(m->priv, &x->aio);
}

static int rbd_media_extents(struct media *m, uint64_t offset, uint64_t len,
			     extent_fn *fn, void *arg)
{
	return rbd_client_extents(m->priv, offset, len, fn, arg);
}

const struct media_ops rbd_media_ops = {
	.name = "rbd",
	.usage = "rbd:POOL/IMAGE",
	.flags = MEDIA_OPS_REMOTE,
	.open = rbd_media_open,
	.close = rbd_media_close,
	.submit = rbd_media_submit,
	.extents = rbd_media_extents,
};
