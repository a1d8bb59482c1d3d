/* SPDX-License-Identifier: GPL-2.0 */
/*
 * FLUSH and FUA, a small block/blk-flush.c.  Without a volatile write cache
 * a FLUSH completes at once and FUA means nothing.  With a cache but no
 * native FUA, a FUA write is sent as a plain write followed by a FLUSH
 * (the POSTFLUSH step), and the client's bio completes after both.
 */
#include <errno.h>
#include <stdlib.h>

#include "blk-mq-internal.h"

struct fua_seq {
	struct bio data;
	struct bio flush;
	struct bio *orig;
};

static void fua_flush_done(struct bio *flush)
{
	struct fua_seq *seq = flush->bi_private;
	struct bio *orig = seq->orig;

	orig->bi_status = flush->bi_status;
	free(seq);
	bio_endio(orig);
}

static void fua_data_done(struct bio *data)
{
	struct fua_seq *seq = data->bi_private;

	if (data->bi_status) {
		seq->orig->bi_status = data->bi_status;
		bio_endio(seq->orig);
		free(seq);
		return;
	}
	/* Completion context: the flush must not dispatch inline. */
	__mq_submit_bio(data->bi_ctx, &seq->flush, true);
}

bool mq_flush_intercept(struct mq_ctx *ctx, struct bio *bio, bool async)
{
	const struct queue_limits *lim = &ctx->queue->limits;
	struct fua_seq *seq;

	if (bio->bi_op == REQ_OP_FLUSH && !lim->write_cache) {
		bio->bi_status = 0;
		bio_endio(bio);
		return true;
	}
	if (!(bio->bi_flags & REQ_FUA))
		return false;
	if (!lim->write_cache || !op_is_write(bio->bi_op)) {
		bio->bi_flags &= ~REQ_FUA;
		return false;
	}
	if (lim->fua)
		return false;

	seq = calloc(1, sizeof(*seq));
	if (!seq) {
		bio->bi_status = ENOMEM;
		bio_endio(bio);
		return true;
	}
	seq->orig = bio;
	bio_init(&seq->data, bio->bi_op, bio->bi_sector, bio->bi_size,
		 bio->bi_buf);
	seq->data.bi_flags = (bio->bi_flags & ~REQ_FUA) | REQ_SYNC;
	seq->data.bi_submitter = bio->bi_submitter;
	seq->data.bi_ioprio = bio->bi_ioprio;
	seq->data.bi_client = bio->bi_client;
	seq->data.bi_end_io = fua_data_done;
	seq->data.bi_private = seq;
	/* The data step is the write its zone's plug let through. */
	blk_zone_write_plug_transfer(bio, &seq->data);
	bio_init(&seq->flush, REQ_OP_FLUSH, 0, 0, NULL);
	seq->flush.bi_submitter = bio->bi_submitter;
	seq->flush.bi_ioprio = bio->bi_ioprio;
	seq->flush.bi_client = bio->bi_client;
	seq->flush.bi_end_io = fua_flush_done;
	seq->flush.bi_private = seq;
	__mq_submit_bio(ctx, &seq->data, async);
	return true;
}
