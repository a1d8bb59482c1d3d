/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loop: the passthrough core of the loop-like devices (file, nbd, rbd),
 * after drivers/block/loop.c.  Each device opens its media store its own
 * way (backends/media/media.h), fills a struct loop_config with what
 * differs (names, queue shape, limits) and hands both to loop_add(),
 * which builds the tag set, the queue and the disk, maps requests onto
 * the store and ends them.  Like loop and Linux's rbd, the elevator stays
 * at none (seed 001).
 */
#ifndef MQBLK_LOOP_H
#define MQBLK_LOOP_H

#include <stdbool.h>

#include "device.h"
#include "media/media.h"

struct loop_config {
	const char *name;	 /* disk, queue and threads: "loop0" */
	const char *description; /* the disk's, "file-backed loop ..." */
	unsigned int nr_hw_queues;
	unsigned int queue_depth;
	unsigned int tag_flags; /* MQ_F_*; NO_SCHED_BY_DEFAULT always */
	/*
	 * 0: queue_rq submits each bio to the store, whose thread ends the
	 * request (nbd, rbd).  More: a pool of that many workers does the
	 * blocking I/O bio by bio, as loop's workers do (file).
	 */
	unsigned int workers;
	/* Log failed I/O (the rbd store logs its own failures). */
	bool log_errors;
	unsigned int disk_features; /* DISK_* on top of the store's caps */
	unsigned int block_size;
	/* Limits from the store; the core sets the block sizes before. */
	void (*set_limits)(struct queue_limits *lim, const struct media *m,
			   unsigned int bs);
};

/*
 * Add the disk over m, which loop_add owns from here on (closed on
 * failure too).  0, or -1 with one line in e.
 */
int loop_add(struct mq_device *dev, const struct loop_config *cfg,
	     struct media *m, struct mq_err *e);
/* The drivers' remove and sync. */
void loop_remove(struct mq_device *dev);
int loop_sync(struct mq_device *dev);

/* bs=: a power of two (the key's range, 512 to 4096, is checked first). */
int loop_check_bs(unsigned int bs, struct mq_err *e);

/* Keys every loop-like device takes, in the --help wording. */
#define LOOP_PARAM_BS                                                          \
	{                                                                      \
		"bs", "512", "logical block size, 512 to 4096, a power of two" \
	}
#define LOOP_PARAM_READONLY                                                    \
	{                                                                      \
		"readonly", "0", "export read-only (read_only= is taken too)"  \
	}
#define LOOP_PARAM_NR_HW_QUEUES                                                \
	{                                                                      \
		"nr_hw_queues", "1", "hardware queues, 1 to 64"                \
	}
#define LOOP_PARAM_QUEUE_DEPTH                                                 \
	{                                                                      \
		"queue_depth", "128", "tags per hardware queue, 1 to 1024"     \
	}

#endif
