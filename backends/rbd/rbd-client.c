// SPDX-License-Identifier: GPL-2.0
/*
 * rbd-client: one librados connection and one open RBD image, with
 * asynchronous I/O completed on a thread of ours (see rbd-client.h).
 *
 * Timeouts are librados's own: client_mount_timeout bounds the start-up
 * connection (connect_timeout), rados_osd_op_timeout and
 * rados_mon_op_timeout bound each operation (the device's io_timeout), so
 * an operation librbd gave up on always comes back to us with
 * -ETIMEDOUT, and its buffer is ours again before the request ends.
 * Linux's krbd has the same knob: the osd_request_timeout map option.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#include "rbd-client.h"
#include "../../server/mq/blk-mq.h"
#include "../../server/mq/log.h"

#define RBD_DEFAULT_DISCARD_GRANULARITY 65536u

struct rbd_client {
	rados_t cluster;
	rados_ioctx_t io;
	rbd_image_t image;
	struct irq_thread *irq;
	uint64_t size;
	uint64_t features;
	bool read_only;
	unsigned int discard_granularity;
	unsigned int object_size;
	unsigned int io_timeout_ms;
	/* I/Os failed since the last success: for the "answers again" line. */
	atomic_uint nr_failed;
	char name[32];
	char mon_host[128];
	char desc[256];
};

int rbd_client_read_params(struct mq_params *p, struct rbd_client_opts *o,
			   struct mq_err *e)
{
	const char *cache;

	if (mq_param_str(p, "conf", NULL, &o->conf, e) ||
	    mq_param_str(p, "id", "admin", &o->id, e) ||
	    mq_param_str(p, "keyring", NULL, &o->keyring, e) ||
	    mq_param_str(p, "snap", NULL, &o->snap, e) ||
	    mq_param_size(p, "create", 0, &o->create_size, e) ||
	    mq_param_str(p, "cache", "off", &cache, e) ||
	    mq_param_uint(p, "connect_timeout", 10, 1, 3600,
			  &o->connect_timeout_s, e))
		return -1;
	if (strcmp(cache, "on") == 0)
		o->cache = true;
	else if (strcmp(cache, "off") == 0)
		o->cache = false;
	else
		return mq_err_set(e, "cache=%s: must be on or off", cache);
	if (!*o->id)
		return mq_err_set(e, "id=: must name a cephx user");
	if (o->snap && !*o->snap)
		return mq_err_set(e, "snap=: must name a snapshot");
	if (o->snap && o->create_size)
		return mq_err_set(
			e, "create= and snap= exclude each other: a new image "
			   "has no snapshots");
	if (o->snap)
		o->read_only = true;
	return 0;
}

static int conf_set(struct rbd_client *c, const char *key, const char *value,
		    struct mq_err *e)
{
	int r = rados_conf_set(c->cluster, key, value);

	if (r < 0)
		return mq_err_set(e, "cannot set %s=%s: %s", key, value,
				  mq_strerror(-r));
	return 0;
}

static int conf_set_uint(struct rbd_client *c, const char *key,
			 unsigned int value, struct mq_err *e)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", value);
	return conf_set(c, key, buf, e);
}

static int rbd_client_connect(struct rbd_client *c,
			      const struct rbd_client_opts *o, struct mq_err *e)
{
	char user[128];
	int r;

	if (snprintf(user, sizeof(user), "client.%s", o->id) >=
	    (int)sizeof(user))
		return mq_err_set(e, "id=%s: too long", o->id);
	r = rados_create2(&c->cluster, "ceph", user, 0);
	if (r < 0) {
		c->cluster = NULL;
		return mq_err_set(e, "rados_create2: %s", mq_strerror(-r));
	}
	r = rados_conf_read_file(c->cluster, o->conf);
	if (r < 0) {
		if (o->conf)
			return mq_err_set(e, "conf=%s: %s", o->conf,
					  mq_strerror(-r));
		return mq_err_set(
			e,
			"no ceph.conf found ($CEPH_CONF, /etc/ceph/ceph.conf, "
			"~/.ceph/config, ./ceph.conf): give conf=PATH");
	}
	if ((o->keyring && conf_set(c, "keyring", o->keyring, e)) ||
	    conf_set_uint(c, "client_mount_timeout", o->connect_timeout_s, e) ||
	    conf_set(c, "rbd_cache", o->cache ? "true" : "false", e) ||
	    /*
	     * librbd may send a write straight from our buffer: it stays
	     * untouched until the write completes (the media contract), and
	     * librbd holds the completion back until it lets go of it.  By
	     * default librbd copies every write first, in case a client
	     * changes the buffer in flight.
	     */
	    conf_set(c, "rbd_disable_zero_copy_writes", "false", e))
		return -1;
	if (o->io_timeout_ms) {
		/* Whole seconds, rounded up: librados's unit. */
		unsigned int s = (o->io_timeout_ms + 999) / 1000;

		if (conf_set_uint(c, "rados_osd_op_timeout", s, e) ||
		    conf_set_uint(c, "rados_mon_op_timeout", s, e))
			return -1;
	}
	if (rados_conf_get(c->cluster, "mon_host", c->mon_host,
			   sizeof(c->mon_host)) < 0 ||
	    !c->mon_host[0])
		snprintf(c->mon_host, sizeof(c->mon_host), "(none)");

	r = rados_connect(c->cluster);
	if (r < 0) {
		if (r == -ETIMEDOUT)
			return mq_err_set(
				e,
				"cannot reach the Ceph monitors at %s within connect_timeout=%u s: %s",
				c->mon_host, o->connect_timeout_s,
				mq_strerror(ETIMEDOUT));
		return mq_err_set(e,
				  "cannot connect to the Ceph monitors at %s "
				  "as %s: %s",
				  c->mon_host, user, mq_strerror(-r));
	}
	return 0;
}

static int rbd_client_create_image(struct rbd_client *c,
				   const struct rbd_client_opts *o,
				   struct mq_err *e)
{
	rbd_image_options_t opts;
	int r;

	rbd_image_options_create(&opts);
	r = rbd_create4(c->io, o->image, o->create_size, opts);
	rbd_image_options_destroy(opts);
	if (r < 0 && r != -EEXIST) /* -EEXIST: another host made it first */
		return mq_err_set(e, "create=%" PRIu64 ": creating %s/%s: %s",
				  o->create_size, o->pool, o->image,
				  mq_strerror(-r));
	if (r == 0)
		pr_info("%s: created rbd image %s/%s of %" PRIu64 " bytes",
			c->name, o->pool, o->image, o->create_size);
	return 0;
}

static int rbd_client_try_open(struct rbd_client *c,
			       const struct rbd_client_opts *o)
{
	if (c->read_only)
		return rbd_open_read_only(c->io, o->image, &c->image, o->snap);
	return rbd_open(c->io, o->image, &c->image, NULL);
}

static int rbd_client_open_image(struct rbd_client *c,
				 const struct rbd_client_opts *o,
				 struct mq_err *e)
{
	int r;

	r = rados_ioctx_create(c->cluster, o->pool, &c->io);
	if (r < 0) {
		c->io = NULL;
		if (r == -ENOENT)
			return mq_err_set(e, "no such pool %s on %s", o->pool,
					  c->mon_host);
		return mq_err_set(e, "pool %s: %s", o->pool, mq_strerror(-r));
	}

	c->read_only = o->read_only;
	r = rbd_client_try_open(c, o);
	if (r == -ENOENT && !o->snap && o->create_size) {
		if (rbd_client_create_image(c, o, e))
			return -1;
		r = rbd_client_try_open(c, o);
	}
	if (r < 0) {
		c->image = NULL;
		if (r == -ENOENT && o->snap)
			return mq_err_set(e, "no such snapshot %s/%s@%s",
					  o->pool, o->image, o->snap);
		if (r == -ENOENT)
			return mq_err_set(e,
					  "no such image %s/%s (create=SIZE "
					  "makes it)",
					  o->pool, o->image);
		return mq_err_set(e, "%s/%s: %s", o->pool, o->image,
				  mq_strerror(-r));
	}
	r = rbd_get_size(c->image, &c->size);
	if (r < 0)
		return mq_err_set(e, "%s/%s: size: %s", o->pool, o->image,
				  mq_strerror(-r));
	if (!c->size)
		return mq_err_set(e, "%s/%s is empty", o->pool, o->image);
	if (rbd_get_features(c->image, &c->features) < 0)
		c->features = 0;
	c->object_size = 4u << 20;
	{
		rbd_image_info_t info;

		if (rbd_stat(c->image, &info, sizeof(info)) == 0 &&
		    info.obj_size >= 4096 && info.obj_size <= (1u << 30))
			c->object_size = info.obj_size;
	}
	return 0;
}

int rbd_client_open(const struct rbd_client_opts *o, struct rbd_client **cp,
		    struct mq_err *e)
{
	struct rbd_client *c;
	char buf[32];

	*cp = NULL;
	if (!o->pool || !*o->pool)
		return mq_err_set(e, "pool=NAME is required");
	if (!o->image || !*o->image)
		return mq_err_set(e, "image=NAME is required");
	c = calloc(1, sizeof(*c));
	if (!c)
		return mq_err_set(e, "out of memory");
	snprintf(c->name, sizeof(c->name), "%s", o->name ? o->name : "rbd");
	c->io_timeout_ms = o->io_timeout_ms;
	atomic_init(&c->nr_failed, 0);
	if (rbd_client_connect(c, o, e) || rbd_client_open_image(c, o, e))
		goto fail;

	c->discard_granularity = RBD_DEFAULT_DISCARD_GRANULARITY;
	if (rados_conf_get(c->cluster, "rbd_discard_granularity_bytes", buf,
			   sizeof(buf)) == 0) {
		unsigned long v = strtoul(buf, NULL, 10);

		if (v >= 512 && v <= (1u << 30) && !(v & (v - 1)))
			c->discard_granularity = v;
	}
	snprintf(c->desc, sizeof(c->desc), "%s/%s%s%s on %s", o->pool, o->image,
		 o->snap ? "@" : "", o->snap ? o->snap : "", c->mon_host);

	c->irq = irq_thread_create(c->name);
	if (!c->irq) {
		mq_err_set(e, "cannot start the completion thread: %s",
			   mq_strerror(errno));
		goto fail;
	}
	*cp = c;
	return 0;

fail:
	rbd_client_close(c);
	return -1;
}

void rbd_client_close(struct rbd_client *c)
{
	int r;

	if (!c)
		return;
	if (c->image) {
		if (!c->read_only) {
			r = rbd_flush(c->image);
			if (r < 0)
				pr_err("%s: flush of %s: %s", c->name, c->desc,
				       mq_strerror(-r));
		}
		rbd_close(c->image);
	}
	if (c->irq)
		irq_thread_destroy(c->irq);
	if (c->io)
		rados_ioctx_destroy(c->io);
	if (c->cluster)
		rados_shutdown(c->cluster);
	free(c);
}

uint64_t rbd_client_size(const struct rbd_client *c)
{
	return c->size;
}

bool rbd_client_read_only(const struct rbd_client *c)
{
	return c->read_only;
}

const char *rbd_client_desc(const struct rbd_client *c)
{
	return c->desc;
}

unsigned int rbd_client_discard_granularity(const struct rbd_client *c)
{
	return c->discard_granularity;
}

unsigned int rbd_client_object_size(const struct rbd_client *c)
{
	return c->object_size;
}

bool rbd_client_has_extents(const struct rbd_client *c)
{
	return c->features & RBD_FEATURE_FAST_DIFF;
}

/* librbd's thread: hand over, nothing else. */
static void rbd_aio_cb(rbd_completion_t comp, void *arg)
{
	struct rbd_aio *aio = arg;

	irq_raise(aio->c->irq, &aio->work, aio->work.fn, 0);
}

static const char *rbd_aio_op_name(enum rbd_aio_op op)
{
	static const char *const names[] = {
		[RBD_AIO_READ] = "read",
		[RBD_AIO_WRITE] = "write",
		[RBD_AIO_FLUSH] = "flush",
		[RBD_AIO_DISCARD] = "discard",
		[RBD_AIO_WRITE_ZEROES] = "write zeroes",
	};

	return op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

/* Log what failed and why; a timeout becomes EIO.  Our thread. */
static void rbd_aio_end(struct rbd_aio *aio, int status)
{
	struct rbd_client *c = aio->c;
	unsigned int failed;

	if (!status) {
		failed = atomic_exchange(&c->nr_failed, 0);
		/* A warning, so that it shows wherever the failures did. */
		if (failed)
			pr_warn("%s: %s answers again after %u failed "
				"requests",
				c->name, c->desc, failed);
	} else if (status == ETIMEDOUT) {
		atomic_fetch_add(&c->nr_failed, 1);
		pr_err("%s: %s at sector %" PRIu64
		       ": no answer from %s within io_timeout=%u ms",
		       c->name, rbd_aio_op_name(aio->op),
		       aio->offset >> SECTOR_SHIFT, c->desc, c->io_timeout_ms);
		status = EIO;
	} else if (status != EROFS) {
		atomic_fetch_add(&c->nr_failed, 1);
		pr_err("%s: %s at sector %" PRIu64 " of %s: %s", c->name,
		       rbd_aio_op_name(aio->op), aio->offset >> SECTOR_SHIFT,
		       c->desc, mq_strerror(status));
	}
	aio->status = status;
	aio->end(aio);
}

static void rbd_aio_done(struct irq_work *work);

/* Start one librbd call for aio; a negative errno if it did not start. */
static int rbd_aio_start(struct rbd_aio *aio, enum rbd_aio_op op)
{
	struct rbd_client *c = aio->c;
	rbd_completion_t comp;
	int r;

	/* Set before the call: the callback may run before it returns. */
	aio->work.fn = rbd_aio_done;
	r = rbd_aio_create_completion(aio, rbd_aio_cb, &comp);
	if (r < 0)
		return r;
	aio->completion = comp;
	switch (op) {
	case RBD_AIO_READ:
		r = rbd_aio_readv(c->image, aio->iov, aio->iovcnt, aio->offset,
				  comp);
		break;
	case RBD_AIO_WRITE:
		r = rbd_aio_writev(c->image, aio->iov, aio->iovcnt, aio->offset,
				   comp);
		break;
	case RBD_AIO_FLUSH:
		r = rbd_aio_flush(c->image, comp);
		break;
	case RBD_AIO_DISCARD:
		r = rbd_aio_discard(c->image, aio->offset, aio->len, comp);
		break;
	case RBD_AIO_WRITE_ZEROES:
		r = rbd_aio_write_zeroes(
			c->image, aio->offset, aio->len, comp,
			(aio->flags & RBD_AIO_NOUNMAP)
				? RBD_WRITE_ZEROES_FLAG_THICK_PROVISION
				: 0,
			0);
		break;
	default:
		r = -EOPNOTSUPP;
		break;
	}
	if (r < 0) {
		aio->completion = NULL;
		rbd_aio_release(comp);
	}
	return r;
}

/* Our thread: the call has ended; chain the FUA flush or end the aio. */
static void rbd_aio_done(struct irq_work *work)
{
	struct rbd_aio *aio = container_of(work, struct rbd_aio, work);
	rbd_completion_t comp = aio->completion;
	ssize_t ret;
	int r;

	ret = rbd_aio_get_return_value(comp);
	rbd_aio_release(comp);
	aio->completion = NULL;
	/* Reads, writes and discards return a byte count: only < 0 fails. */
	if (ret < 0)
		return rbd_aio_end(aio, (int)-ret);
	if ((aio->flags & RBD_AIO_FUA) && !aio->flushing &&
	    (aio->op == RBD_AIO_WRITE || aio->op == RBD_AIO_WRITE_ZEROES)) {
		aio->flushing = true;
		r = rbd_aio_start(aio, RBD_AIO_FLUSH);
		if (r < 0)
			rbd_aio_end(aio, -r);
		return;
	}
	rbd_aio_end(aio, 0);
}

/* Our thread: an aio that never reached librbd. */
static void rbd_aio_failed(struct irq_work *work)
{
	struct rbd_aio *aio = container_of(work, struct rbd_aio, work);

	rbd_aio_end(aio, aio->status);
}

void rbd_client_submit(struct rbd_client *c, struct rbd_aio *aio)
{
	int r;

	aio->c = c;
	aio->status = 0;
	aio->flushing = false;
	aio->completion = NULL;
	if (c->read_only && aio->op != RBD_AIO_READ && aio->op != RBD_AIO_FLUSH)
		r = -EROFS;
	else if (c->read_only && aio->op == RBD_AIO_FLUSH)
		r = -EALREADY; /* nothing to flush: end at once */
	else
		r = rbd_aio_start(aio, aio->op);
	if (r < 0) {
		aio->status = r == -EALREADY ? 0 : -r;
		irq_raise(c->irq, &aio->work, rbd_aio_failed, 0);
	}
}

struct rbd_extents_walk {
	uint64_t pos, end;
	extent_fn *fn;
	void *arg;
	bool stopped;
};

static int rbd_extents_emit(struct rbd_extents_walk *w, uint64_t to,
			    uint32_t type)
{
	if (to > w->end)
		to = w->end;
	if (to <= w->pos)
		return 0;
	if (w->fn(w->arg, w->pos, to - w->pos, type) < 0) {
		w->stopped = true;
		return -ECANCELED;
	}
	w->pos = to;
	return 0;
}

/* Called in offset order for every allocated (or zeroed) range. */
static int rbd_diff_cb(uint64_t ofs, size_t len, int exists, void *arg)
{
	struct rbd_extents_walk *w = arg;

	/* Between the previous range and this one: never written. */
	if (rbd_extents_emit(w, ofs, MQ_EXTENT_HOLE | MQ_EXTENT_ZERO))
		return -ECANCELED;
	return rbd_extents_emit(w, ofs + len,
				exists ? 0 : MQ_EXTENT_HOLE | MQ_EXTENT_ZERO);
}

int rbd_client_extents(struct rbd_client *c, uint64_t offset, uint64_t len,
		       extent_fn *fn, void *arg)
{
	struct rbd_extents_walk w = {
		.pos = offset, .end = offset + len, .fn = fn, .arg = arg};
	uint64_t flags = 0;
	int r;

	if (w.end > c->size || w.end < offset)
		w.end = c->size;
	if (w.pos >= w.end)
		return 0;
	if (!(c->features & RBD_FEATURE_FAST_DIFF) ||
	    rbd_get_flags(c->image, &flags) < 0 ||
	    (flags & RBD_FLAG_FAST_DIFF_INVALID)) {
		fn(arg, w.pos, w.end - w.pos, 0);
		return 0;
	}
	r = rbd_diff_iterate2(c->image, NULL, w.pos, w.end - w.pos, 1, 1,
			      rbd_diff_cb, &w);
	if (w.stopped)
		return 0;
	if (r < 0)
		return -r;
	rbd_extents_emit(&w, w.end, MQ_EXTENT_HOLE | MQ_EXTENT_ZERO);
	return 0;
}

int rbd_client_flush(struct rbd_client *c)
{
	int r;

	if (c->read_only)
		return 0;
	r = rbd_flush(c->image);
	return r < 0 ? -r : 0;
}
