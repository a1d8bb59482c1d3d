/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte-granular I/O on a disk, for front ends whose clients may send
 * requests that are not aligned to the logical block (NBD's default
 * constraints: a minimum block size of 1).
 *
 * A front end fills a struct mq_bdev_io and submits it; the helper turns
 * it into bios.  Aligned requests become one bio (the core splits it to
 * the queue limits).  A misaligned READ reads the partial first and last
 * blocks into a bounce buffer and copies the bytes asked for.  A
 * misaligned WRITE or WRITE_ZEROES is a read-modify-write of the partial
 * blocks, which never changes a byte outside the request.  A misaligned
 * DISCARD discards the whole blocks inside the range only (a discard
 * promises nothing about the contents, so the partial blocks are left
 * alone).
 *
 * Every write-like request registers its block range with the disk's
 * struct mq_bdev.  A read-modify-write waits for every overlapping write
 * in flight and holds off every overlapping write until it is done, so
 * two misaligned writes sharing a block never lose each other's bytes.
 * Aligned writes only wait for read-modify-writes.
 *
 * The helper runs in stages, and never submits a bio from a completion
 * callback: io->end_io says that a stage ended, and the front end then
 * calls mq_bdev_io_continue() from a thread where it may submit I/O (its
 * event loop, or the thread waiting for the request).
 */
#ifndef MQBLK_BDEV_H
#define MQBLK_BDEV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "../server/mq/genhd.h"

struct mq_bdev_io;
struct log_writes_batch;
typedef void(mq_bdev_end_io_t)(struct mq_bdev_io *io);

struct mq_bdev_io {
	/* Filled by the caller before mq_bdev_io_submit(). */
	enum req_op op;	 /* READ, WRITE, FLUSH, DISCARD or WRITE_ZEROES */
	uint64_t offset; /* bytes */
	uint32_t count;	 /* bytes */
	void *buf;	 /* READ and WRITE data */
	/*
	 * REQ_FUA, REQ_NOUNMAP; REQ_ZONE_APPEND on an aligned WRITE into
	 * a sequential zone, whose offset then becomes where it went.
	 */
	unsigned int flags;
	uint64_t submitter;
	const struct mq_client *client;
	/* A stage ended: any thread, possibly inside submit or continue. */
	mq_bdev_end_io_t *end_io;
	void *private;
	/* The result (0 or a positive errno) once continue returns true. */
	int status;

	/* The helper's. */
	struct gendisk *disk;
	unsigned int stage;
	atomic_int pending;
	atomic_int error;
	struct bio bios[3]; /* head block, middle, tail block */
	struct bio *zbios;  /* emulated WRITE_ZEROES pieces */
	uint8_t *bounce;    /* the partial blocks */
	void *zeroes;
	uint64_t lo, hi; /* the block range it covers, bytes */
	bool rmw;	 /* a read-modify-write: excludes all writes */
	bool tracked;	 /* registered with the disk's mq_bdev */
	struct log_writes_batch *lw_batch; /* a FLUSH's, for the log */
	TAILQ_ENTRY(mq_bdev_io) link;
	struct mq_bdev_io *grant_next;
};

/* A disk's range tracker; mq_device_add_disk() gives every disk one. */
struct mq_bdev;
struct mq_bdev *mq_bdev_create(struct gendisk *disk);
void mq_bdev_destroy(struct mq_bdev *bdev);
/*
 * The disk's dm-log-writes log (log-writes.h), fed from every write-like
 * request the helper completes; the tracker owns it from here and closes
 * it when destroyed.  NULL: none.
 */
struct log_writes;
void mq_bdev_set_log_writes(struct mq_bdev *bdev, struct log_writes *l);
struct log_writes *mq_bdev_log_writes(const struct mq_bdev *bdev);

/*
 * Start io on disk from software queue ctx.  io->end_io is called once
 * the first stage ends; the caller then calls mq_bdev_io_continue().
 * The request must lie inside the disk (the caller checks).
 */
void mq_bdev_io_submit(struct gendisk *disk, struct mq_ctx *ctx,
		       struct mq_bdev_io *io);
/*
 * After io->end_io: true if io is finished (io->status holds the result
 * and io may be reused); false if the next stage was started, and
 * io->end_io will be called again.
 */
bool mq_bdev_io_continue(struct mq_ctx *ctx, struct mq_bdev_io *io);

#endif
