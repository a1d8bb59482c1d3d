// SPDX-License-Identifier: GPL-2.0
/*
 * nbd: a loop-like passthrough to another NBD server (nbd=URI), over the
 * nbd media store (backends/media/nbd.c), on the loop core (loop.h).
 * Like the kernel's rbd and loop, it keeps the elevator at none
 * (NO_SCHED_BY_DEFAULT) and takes nr_hw_queues.  queue_rq starts the
 * request and hands each bio to the store; the store's thread, which
 * drives the connections, completes it.  What the remote offers
 * (read-only, flush, FUA, trim, zero, block status, multi-conn) is what
 * the export offers.
 */
#include <inttypes.h>
#include <stdio.h>

#include "loop.h"

static void nbd_set_limits(struct queue_limits *lim, const struct media *m,
			   unsigned int bs)
{
	lim->max_sectors = 65536; /* 32 MiB, what NBD servers take */
	lim->max_segments = 128;
	if ((m->caps & MEDIA_CAN_TRIM) && !m->read_only) {
		lim->max_discard_sectors = (1u << 30) >> SECTOR_SHIFT;
		lim->discard_granularity = bs;
	}
	if ((m->caps & MEDIA_CAN_ZERO) && !m->read_only)
		lim->max_write_zeroes_sectors = (1u << 30) >> SECTOR_SHIFT;
	lim->write_cache = !!(m->caps & MEDIA_CAN_FLUSH);
	lim->fua = !!(m->caps & MEDIA_CAN_FUA);
}

/* nbd=URI is media=nbd:URI; media= names any other store. */
static int nbd_open_media(struct mq_device *dev, struct mq_params *p,
			  struct media_open_args *a, struct media **mp,
			  struct mq_err *e)
{
	const char *uri;
	char spec[4200];

	if (!mq_params_has(p, "nbd"))
		return mq_device_open_media(dev, p, NULL, NULL, NULL, a, mp, e);
	if (mq_params_has(p, "media"))
		return mq_err_set(e, "nbd=URI and media=: give one of them");
	if (mq_param_str(p, "nbd", NULL, &uri, e))
		return -1;
	if ((size_t)snprintf(spec, sizeof(spec), "nbd:%s", uri) >= sizeof(spec))
		return mq_err_set(e, "nbd=: the URI is too long");
	a->key = "nbd";
	a->params = p;
	a->io_timeout_ms = dev->io_timeout_ms;
	return media_open(spec, a, mp, e);
}

static int nbd_probe(struct mq_device *dev, struct mq_params *p,
		     struct mq_err *e)
{
	struct media_open_args a = {.name = "nbd0"};
	struct loop_config cfg = {
		.name = "nbd0",
		.log_errors = true,
		.set_limits = nbd_set_limits,
	};
	char desc[sizeof(((struct gendisk *)0)->description)];
	struct media *m = NULL;
	uint64_t size = 0;

	if (mq_param_uint(p, "bs", 512, 512, 4096, &cfg.block_size, e) ||
	    mq_param_uint(p, "nr_hw_queues", 1, 1, 64, &cfg.nr_hw_queues, e) ||
	    mq_param_uint(p, "queue_depth", 128, 1, 1024, &cfg.queue_depth,
			  e) ||
	    mq_param_bool_alias(p, "readonly", "read_only", false, &a.read_only,
				e) ||
	    mq_param_size(p, "size", 0, &size, e) ||
	    loop_check_bs(cfg.block_size, e))
		return -1;
	if (size % cfg.block_size)
		return mq_err_set(e,
				  "size=%" PRIu64
				  ": must be a non-zero multiple of bs=%u",
				  size, cfg.block_size);
	a.size = size;
	a.block_size = cfg.block_size;

	if (nbd_open_media(dev, p, &a, &m, e))
		return -1;
	if (!m)
		return mq_err_set(e, "nbd=URI is required");
	snprintf(desc, sizeof(desc), "NBD forwarding nbd0 (%.200s)", m->desc);
	cfg.description = desc;
	return loop_add(dev, &cfg, m, e);
}

static const struct mq_param_spec nbd_params[] = {
	{"nbd", NULL,
	 "URI of the NBD server to forward to (nbd://, nbd+unix://, ...); "
	 "or media=STORE"},
	{"size", NULL, "bytes to export; default: the remote's size"},
	LOOP_PARAM_BS,
	LOOP_PARAM_NR_HW_QUEUES,
	LOOP_PARAM_QUEUE_DEPTH,
	LOOP_PARAM_READONLY,
	{"nbd_connections", "1",
	 "connections to the remote, 1 to 16; more than 1 needs multi-conn"},
	{"retry", "0",
	 "seconds between reconnections when the remote goes away; 0: "
	 "fail I/O with EIO instead"},
	{NULL},
};

const struct mq_driver nbd_driver = {
	.name = "nbd",
	.description = "NBD forwarding to another server (loop-like, no "
		       "elevator)",
	.params = nbd_params,
	.probe = nbd_probe,
	.remove = loop_remove,
	.sync = loop_sync,
};
