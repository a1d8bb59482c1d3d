// SPDX-License-Identifier: GPL-2.0
/*
 * rbd: a loop-like passthrough to a Ceph RBD image, the userspace
 * counterpart of drivers/block/rbd.c, over the rbd media store
 * (backends/media/rbd.c, on librbd's asynchronous API), on the loop core
 * (../loop.h).  queue_rq starts the request and submits it to the store;
 * the store ends it on its own thread, never on librbd's, and the request
 * ends there.  Like loop and Linux's rbd, it keeps the elevator at none
 * (seed 001), and it does not merge: the cluster orders and merges on its
 * own, and one request is one store I/O.
 */
#include <stdio.h>
#include <string.h>

#include "rbd-client.h"
#include "../loop.h"

#define RBD_QUEUE_DEPTH 128

static void rbd_set_limits(struct queue_limits *lim, const struct media *m,
			   unsigned int bs)
{
	unsigned int obj = m->io_opt ? m->io_opt : 4u << 20;

	/* As rbd.c: one object is the optimal and the largest I/O. */
	lim->io_opt = obj;
	lim->max_sectors = obj >> SECTOR_SHIFT;
	lim->max_segments = 1;
	if (m->caps & MEDIA_CAN_TRIM) {
		lim->max_discard_sectors = obj >> SECTOR_SHIFT;
		/* librbd keeps data under rbd_discard_granularity_bytes. */
		lim->discard_granularity = 64u << 10;
	}
	if (m->caps & MEDIA_CAN_ZERO)
		lim->max_write_zeroes_sectors = obj >> SECTOR_SHIFT;
	/* librbd's cache, when on, is volatile; FUA is a write then a flush. */
	lim->write_cache = true;
	lim->fua = true;
	(void)bs;
}

static int rbd_probe(struct mq_device *dev, struct mq_params *p,
		     struct mq_err *e)
{
	struct media_open_args a = {.key = "image", .name = "rbd0"};
	struct loop_config cfg = {
		.name = "rbd0",
		/* One image handle for every connection: a flush covers all. */
		.disk_features = DISK_MULTI_CONN,
		.set_limits = rbd_set_limits,
	};
	char desc[sizeof(((struct gendisk *)0)->description)];
	const char *pool, *image;
	struct media *m = NULL;
	char spec[512];

	if (mq_param_str(p, "pool", "rbd", &pool, e) ||
	    mq_param_str(p, "image", NULL, &image, e) ||
	    mq_param_bool_alias(p, "readonly", "read_only", false, &a.read_only,
				e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &cfg.block_size, e) ||
	    mq_param_uint(p, "nr_hw_queues", 1, 1, 64, &cfg.nr_hw_queues, e) ||
	    mq_param_uint(p, "queue_depth", RBD_QUEUE_DEPTH, 1, 1024,
			  &cfg.queue_depth, e) ||
	    loop_check_bs(cfg.block_size, e))
		return -1;
	if (!image || !*image)
		return mq_err_set(e, "image=NAME is required");
	if (!*pool || strchr(pool, '/') || strchr(image, '/') ||
	    strchr(image, '@'))
		return mq_err_set(e,
				  "pool=%s image=%s: names without '/' or '@' "
				  "(snap= names a snapshot)",
				  pool, image);
	if ((size_t)snprintf(spec, sizeof(spec), "rbd:%s/%s", pool, image) >=
	    sizeof(spec))
		return mq_err_set(e, "pool= and image=: names too long");
	a.block_size = cfg.block_size;
	a.params = p;
	a.io_timeout_ms = dev->io_timeout_ms;

	/* librados times each operation out itself (io_timeout). */
	if (media_open(spec, &a, &m, e))
		return -1;
	snprintf(desc, sizeof(desc), "RBD image %.200s",
		 m->desc + strlen("rbd:"));
	cfg.description = desc;
	return loop_add(dev, &cfg, m, e);
}

static const struct mq_param_spec rbd_params[] = {
	{"image", NULL, "RBD image name (required)"},
	{"pool", "rbd", "RADOS pool of the image"},
	RBD_CLIENT_PARAMS,
	LOOP_PARAM_READONLY,
	LOOP_PARAM_BS,
	LOOP_PARAM_NR_HW_QUEUES,
	LOOP_PARAM_QUEUE_DEPTH,
	{NULL},
};

const struct mq_driver rbd_driver = {
	.name = "rbd",
	.description = "Ceph RBD image through librbd (loop-like passthrough)",
	.params = rbd_params,
	.probe = rbd_probe,
	.remove = loop_remove,
	.sync = loop_sync,
	.no_media = "it is the rbd store itself: give pool= and image=",
};
