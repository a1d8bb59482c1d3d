// SPDX-License-Identifier: GPL-2.0
/*
 * file: a loop device over a regular file or a host block device, after
 * drivers/block/loop.c, on the loop core (loop.h): a pool of workers does
 * the blocking pread/pwrite/fallocate and ends each request.  Like loop,
 * it keeps the elevator at none (seed 001).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "loop.h"

static void file_set_limits(struct queue_limits *lim, const struct media *m,
			    unsigned int bs)
{
	if (m->io_opt >= bs && m->io_opt <= (1u << 20) &&
	    !(m->io_opt & (m->io_opt - 1)))
		lim->io_opt = m->io_opt;
	lim->max_sectors = 65536;
	lim->max_segments = 128;
	if (m->caps & MEDIA_CAN_TRIM) {
		lim->max_discard_sectors = UINT32_MAX >> SECTOR_SHIFT;
		lim->discard_granularity = lim->io_opt > bs ? lim->io_opt : bs;
	}
	if (!m->read_only)
		lim->max_write_zeroes_sectors = UINT32_MAX >> SECTOR_SHIFT;
	lim->write_cache = !!(m->caps & MEDIA_CAN_FLUSH);
	lim->fua = false; /* the core sends a FLUSH after the write */
}

static int file_probe(struct mq_device *dev, struct mq_params *p,
		      struct mq_err *e)
{
	struct media_open_args a = {.name = "loop0"};
	struct loop_config cfg = {
		.name = "loop0",
		.nr_hw_queues = 1,
		.queue_depth = 128,
		.tag_flags = MQ_F_SHOULD_MERGE,
		.set_limits = file_set_limits,
	};
	struct media *m = NULL;
	char desc[sizeof(((struct gendisk *)0)->description)];
	const char *path;
	uint64_t size = 0;

	if (mq_param_bool(p, "direct", false, &a.direct, e) ||
	    mq_param_bool(p, "sync", false, &a.sync, e) ||
	    mq_param_bool_alias(p, "readonly", "read_only", false, &a.read_only,
				e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &cfg.block_size, e) ||
	    mq_param_uint(p, "workers", 4, 1, 64, &cfg.workers, e) ||
	    loop_check_bs(cfg.block_size, e))
		return -1;
	if (mq_params_has(p, "size")) {
		if (mq_param_size(p, "size", 0, &size, e))
			return -1;
		if (!size || size % cfg.block_size)
			return mq_err_set(
				e,
				"size=%" PRIu64
				": must be a non-zero multiple of bs=%u",
				size, cfg.block_size);
	}
	a.size = size;
	a.block_size = cfg.block_size;

	if (mq_device_open_media(dev, p, NULL, "file", NULL, &a, &m, e))
		return -1;
	if (!m)
		return mq_err_set(e, "file=PATH is required");
	/* "file:PATH" shows as the path, as it always did. */
	path = m->desc;
	if (strncmp(path, "file:", 5) == 0)
		path += 5;
	snprintf(desc, sizeof(desc), "file-backed loop device loop0 (%.200s)",
		 path);
	cfg.description = desc;
	return loop_add(dev, &cfg, m, e);
}

static const struct mq_param_spec file_params[] = {
	{"file", NULL,
	 "path of a regular file or block device (or media=: any store)"},
	{"size", NULL, "size in bytes; a smaller regular file is extended"},
	LOOP_PARAM_BS,
	{"direct", "0", "use O_DIRECT, bypassing the host page cache"},
	{"sync", "0", "open with O_DSYNC: no volatile cache, no flushes"},
	LOOP_PARAM_READONLY,
	{"workers", "4", "I/O threads, 1 to 64"},
	{NULL},
};

const struct mq_driver file_driver = {
	.name = "file",
	.description = "loop device over a file or block device",
	.params = file_params,
	.probe = file_probe,
	.remove = loop_remove,
	.sync = loop_sync,
};
