/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Merging client I/Os into requests, and splitting those that exceed the
 * queue limits, after block/blk-merge.c.  Each bio counts as one segment.
 */
#include <errno.h>
#include <stdlib.h>

#include "blk-mq-internal.h"
#include "blk-trace.h"
#include "elevator.h"

bool mq_rq_merge_ok(struct request *rq, struct bio *bio)
{
	struct mq_queue *q = rq->q;
	struct elevator_queue *e = q->elevator;
	uint64_t max_bytes = (uint64_t)q->limits.max_sectors << SECTOR_SHIFT;

	if (rq->op != bio->bi_op || !rq->bio)
		return false;
	if (rq->op != REQ_OP_READ && rq->op != REQ_OP_WRITE)
		return false; /* a FLUSH is never merged, nor are the others */
	if ((rq->cmd_flags ^ bio->bi_flags) & (REQ_FUA | REQ_HEAD))
		return false;
	if (rq->rq_flags & RQF_STARTED)
		return false;
	if ((uint64_t)rq->__data_len + bio->bi_size > max_bytes)
		return false;
	if (rq->nr_phys_segments + 1u > q->limits.max_segments)
		return false;
	if (e && e->type->ops.allow_merge &&
	    !e->type->ops.allow_merge(q, rq, bio))
		return false;
	return true;
}

enum elv_merge mq_try_merge(struct request *rq, struct bio *bio)
{
	if (blk_rq_pos(rq) + blk_rq_sectors(rq) == bio->bi_sector)
		return ELEVATOR_BACK_MERGE;
	if (bio_end_sector(bio) == blk_rq_pos(rq))
		return ELEVATOR_FRONT_MERGE;
	return ELEVATOR_NO_MERGE;
}

void mq_merge_bio(struct request *rq, struct bio *bio, enum elv_merge how)
{
	bio->bi_next = NULL;
	if (how == ELEVATOR_BACK_MERGE) {
		rq->biotail->bi_next = bio;
		rq->biotail = bio;
	} else {
		bio->bi_next = rq->bio;
		rq->bio = bio;
		rq->__sector = bio->bi_sector;
	}
	rq->__data_len += bio->bi_size;
	rq->nr_phys_segments++;
	atomic_fetch_add(&rq->mq_hctx->stats.merged, 1);
	mq_stat_merge(rq);
	blk_trace_bio(rq->q, bio, rq->mq_hctx->queue_num,
		      how == ELEVATOR_BACK_MERGE ? BLK_TRACE_BACKMERGE
						 : BLK_TRACE_FRONTMERGE);
}

/* Look at the newest few requests only, as blk_bio_list_merge does. */
bool mq_bio_list_merge(struct mq_queue *q, struct rq_list *list,
		       struct bio *bio)
{
	struct request *rq;
	int checked = 8;

	TAILQ_FOREACH_REVERSE(rq, list, rq_list, queuelist)
	{
		enum elv_merge how;

		if (!checked--)
			break;
		if (!mq_rq_merge_ok(rq, bio))
			continue;
		how = mq_try_merge(rq, bio);
		if (how != ELEVATOR_NO_MERGE) {
			mq_merge_bio(rq, bio, how);
			return true;
		}
	}
	return false;
}

static void bio_chain_endio(struct bio *child)
{
	struct bio *parent = child->bi_parent;

	if (child->bi_status) {
		int expected = 0;

		/* First error wins; bi_status is only read once all are in. */
		__atomic_compare_exchange_n(&parent->bi_status, &expected,
					    child->bi_status, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	free(child);
	if (atomic_fetch_sub(&parent->bi_remaining, 1) == 1)
		bio_endio(parent);
}

static uint64_t max_bio_bytes(const struct mq_queue *q, enum req_op op)
{
	const struct queue_limits *lim = &q->limits;
	uint64_t sectors;

	switch (op) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		sectors = lim->max_sectors;
		break;
	case REQ_OP_DISCARD:
		sectors = lim->max_discard_sectors;
		break;
	case REQ_OP_WRITE_ZEROES:
		sectors = lim->max_write_zeroes_sectors;
		break;
	default:
		return UINT32_MAX;
	}
	sectors <<= SECTOR_SHIFT;
	/* Keep every piece a whole number of logical blocks. */
	return sectors - sectors % lim->logical_block_size;
}

/*
 * Split bio into pieces no larger than the limits allow and submit each;
 * the original completes when the last piece does.  Returns true if the
 * bio was consumed (split, or failed because the op is not supported).
 */
bool mq_split_bio(struct mq_ctx *ctx, struct bio *bio, bool async)
{
	uint64_t max = max_bio_bytes(ctx->queue, bio->bi_op);
	uint32_t off, nr, i;

	if (bio->bi_size <= max)
		return false;
	if (!max) {
		bio->bi_status = EOPNOTSUPP;
		bio_endio(bio);
		return true;
	}
	nr = (uint32_t)((bio->bi_size + max - 1) / max);
	atomic_store(&bio->bi_remaining, (int)nr);
	bio->bi_status = 0;
	for (i = 0, off = 0; i < nr; i++) {
		uint32_t len = bio->bi_size - off < max ? bio->bi_size - off
							: (uint32_t)max;
		struct bio *child = malloc(sizeof(*child));

		if (!child) {
			/* Account for the pieces never sent, then fail. */
			bio->bi_status = ENOMEM;
			if (atomic_fetch_sub(&bio->bi_remaining,
					     (int)(nr - i)) == (int)(nr - i))
				bio_endio(bio);
			return true;
		}
		bio_init(child, bio->bi_op,
			 bio->bi_sector + (off >> SECTOR_SHIFT), len,
			 bio->bi_buf ? (char *)bio->bi_buf + off : NULL);
		child->bi_flags = bio->bi_flags;
		child->bi_submitter = bio->bi_submitter;
		child->bi_client = bio->bi_client;
		child->bi_parent = bio;
		child->bi_end_io = bio_chain_endio;
		off += len;
		__mq_submit_bio(ctx, child, async);
	}
	return true;
}
