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
#include "hash.h"

/*
 * Flags that keep a request or bio out of every merge, as Linux's
 * REQ_NOMERGE_FLAGS: a FUA write stays a request of its own, and so does
 * one a driver queues at the head.
 */
#define REQ_NOMERGE_FLAGS (REQ_FUA | REQ_HEAD)

/* rq_mergeable(): may anything join rq at all? */
bool rq_mergeable(const struct request *rq)
{
	if (!rq->bio) /* driver-owned, a passthrough */
		return false;
	if (rq->op != REQ_OP_READ && rq->op != REQ_OP_WRITE)
		return false; /* a FLUSH is never merged, nor are the others */
	if (rq->cmd_flags & REQ_NOMERGE_FLAGS)
		return false;
	/*
	 * Started, or prepared by its driver and requeued (Linux sends those
	 * around the elevator, so they never merge either).
	 */
	return !(rq->rq_flags & (RQF_STARTED | RQF_DONTPREP));
}

/*
 * The most a request covering [start, end) may hold, as
 * blk_rq_get_max_sectors() has it: max_sectors, and never across a
 * chunk_sectors boundary (on zoned queues, a zone).
 */
static bool mq_merged_size_ok(const struct mq_queue *q, uint64_t start,
			      uint64_t end)
{
	const struct queue_limits *lim = &q->limits;

	if (end - start > lim->max_sectors)
		return false;
	if (lim->chunk_sectors && end > start &&
	    start / lim->chunk_sectors != (end - 1) / lim->chunk_sectors)
		return false;
	return true;
}

/* blk_rq_merge_ok() with the limits of ll_{back,front}_merge_fn(). */
bool mq_rq_merge_ok(struct request *rq, struct bio *bio)
{
	struct mq_queue *q = rq->q;
	struct elevator_queue *e = q->elevator;
	uint64_t start = blk_rq_pos(rq), end = start + blk_rq_sectors(rq);

	if (!rq_mergeable(rq) || (bio->bi_flags & REQ_NOMERGE_FLAGS))
		return false;
	if (rq->op != bio->bi_op)
		return false;
	/* A request has one I/O priority (blk_rq_merge_ok). */
	if (rq->ioprio != bio->bi_ioprio)
		return false;
	if (bio->bi_sector < start)
		start = bio->bi_sector;
	if (bio_end_sector(bio) > end)
		end = bio_end_sector(bio);
	if (!mq_merged_size_ok(q, start, end))
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

	(void)q;
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

/* ------------------------------------------------------------------ */
/* merging into an elevator's queued requests                          */

/* The merge hash, after elv_rqhash_*() in block/elevator.c. */
static uint64_t rq_hash_key(const struct request *rq)
{
	return blk_rq_pos(rq) + blk_rq_sectors(rq);
}

static unsigned int elv_hash_bucket(uint64_t key)
{
	return hash_64(key, ELV_HASH_BITS);
}

static bool elv_rq_hashed(const struct request *rq)
{
	return rq->hash.le_prev != NULL;
}

static void __elv_rqhash_del(struct request *rq)
{
	LIST_REMOVE(rq, hash);
	rq->hash.le_prev = NULL;
}

void elv_rqhash_add(struct mq_hw_ctx *hctx, struct request *rq)
{
	if (elv_rq_hashed(rq))
		__elv_rqhash_del(rq);
	LIST_INSERT_HEAD(&hctx->merge.hash[elv_hash_bucket(rq_hash_key(rq))],
			 rq, hash);
}

/*
 * rq leaves the elevator's queued requests (dispatched, or merged away):
 * unhash it and forget it as the last merge, which Linux's elevators do
 * next to elv_rqhash_del().
 */
void elv_rqhash_del(struct mq_hw_ctx *hctx, struct request *rq)
{
	if (elv_rq_hashed(rq))
		__elv_rqhash_del(rq);
	if (hctx->merge.last_merge == rq)
		hctx->merge.last_merge = NULL;
}

/* Its end moved: rehash it.  elv_rqhash_reposition(). */
static void elv_rqhash_reposition(struct mq_hw_ctx *hctx, struct request *rq)
{
	if (elv_rq_hashed(rq))
		elv_rqhash_add(hctx, rq);
}

/* A queued request ending at sector. */
struct request *elv_rqhash_find(struct mq_hw_ctx *hctx, uint64_t sector)
{
	struct rq_hlist *head = &hctx->merge.hash[elv_hash_bucket(sector)];
	struct request *rq, *next;

	for (rq = LIST_FIRST(head); rq; rq = next) {
		next = LIST_NEXT(rq, hash);
		if (!rq_mergeable(rq)) {
			__elv_rqhash_del(rq);
			continue;
		}
		if (rq_hash_key(rq) == sector)
			return rq;
	}
	return NULL;
}

/*
 * elv_merge(): the last request merged into, then one ending where bio
 * starts, then the elevator's own lookup (a front merge).
 */
static enum elv_merge elv_merge(struct mq_hw_ctx *hctx, struct request **req,
				struct bio *bio)
{
	struct elevator_queue *e = hctx->queue->elevator;
	struct request *rq = hctx->merge.last_merge;
	enum elv_merge ret;

	if (rq && mq_rq_merge_ok(rq, bio)) {
		ret = mq_try_merge(rq, bio);
		if (ret != ELEVATOR_NO_MERGE) {
			*req = rq;
			return ret;
		}
	}
	rq = elv_rqhash_find(hctx, bio->bi_sector);
	if (rq && mq_rq_merge_ok(rq, bio)) {
		*req = rq;
		return ELEVATOR_BACK_MERGE;
	}
	if (e && e->type->ops.request_merge)
		return e->type->ops.request_merge(hctx, req, bio);
	return ELEVATOR_NO_MERGE;
}

/* A bio joined rq: elv_merged_request(). */
static void elv_merged_request(struct mq_hw_ctx *hctx, struct request *rq,
			       enum elv_merge type)
{
	struct elevator_queue *e = hctx->queue->elevator;

	if (e && e->type->ops.request_merged)
		e->type->ops.request_merged(hctx->queue, rq, type);
	if (type == ELEVATOR_BACK_MERGE)
		elv_rqhash_reposition(hctx, rq);
	hctx->merge.last_merge = rq;
}

/*
 * next was appended to rq: the elevator forgets next, and rq is rehashed.
 * elv_merge_requests().
 */
static void elv_merge_requests(struct mq_hw_ctx *hctx, struct request *rq,
			       struct request *next)
{
	struct elevator_queue *e = hctx->queue->elevator;

	if (e && e->type->ops.requests_merged)
		e->type->ops.requests_merged(hctx->queue, rq, next);
	elv_rqhash_del(hctx, next);
	elv_rqhash_reposition(hctx, rq);
	hctx->merge.last_merge = rq;
}

/*
 * Append next to req if next starts where req ends and the two may form
 * one request: attempt_merge() with ll_merge_requests_fn().  Returns next,
 * now without bios, for the caller to free, or NULL.
 */
static struct request *attempt_merge(struct mq_hw_ctx *hctx,
				     struct request *req, struct request *next)
{
	struct mq_queue *q = hctx->queue;

	if (!rq_mergeable(req) || !rq_mergeable(next))
		return NULL;
	if (req_op(req) != req_op(next))
		return NULL;
	if (req->ioprio != next->ioprio)
		return NULL;
	if (blk_rq_pos(req) + blk_rq_sectors(req) != blk_rq_pos(next))
		return NULL;
	if (!mq_merged_size_ok(q, blk_rq_pos(req),
			       blk_rq_pos(next) + blk_rq_sectors(next)))
		return NULL;
	if ((unsigned int)req->nr_phys_segments + next->nr_phys_segments >
	    q->limits.max_segments)
		return NULL;

	/* The merged request is as old as the older of the two. */
	if (next->start_time_ns < req->start_time_ns)
		req->start_time_ns = next->start_time_ns;
	req->biotail->bi_next = next->bio;
	req->biotail = next->biotail;
	req->__data_len += next->__data_len;
	req->nr_phys_segments += next->nr_phys_segments;
	elv_merge_requests(hctx, req, next);
	mq_stat_merge(req); /* blk_account_io_merge_request() */

	next->bio = next->biotail = NULL;
	next->__data_len = 0;
	next->nr_phys_segments = 0;
	return next;
}

static struct request *attempt_back_merge(struct mq_hw_ctx *hctx,
					  struct request *rq)
{
	struct elevator_queue *e = hctx->queue->elevator;
	struct request *next = NULL;

	if (e && e->type->ops.next_request)
		next = e->type->ops.next_request(hctx->queue, rq);
	return next ? attempt_merge(hctx, rq, next) : NULL;
}

static struct request *attempt_front_merge(struct mq_hw_ctx *hctx,
					   struct request *rq)
{
	struct elevator_queue *e = hctx->queue->elevator;
	struct request *prev = NULL;

	if (e && e->type->ops.former_request)
		prev = e->type->ops.former_request(hctx->queue, rq);
	return prev ? attempt_merge(hctx, prev, rq) : NULL;
}

/*
 * elv_attempt_insert_merge(): rq, about to be queued, joins the back of
 * the last merge or of a queued request ending where it starts, and the
 * grown request may then join the one before it, and so on.  Each
 * emptied request goes on *free.
 */
bool mq_sched_try_insert_merge(struct mq_hw_ctx *hctx, struct request *rq,
			       struct rq_list *free)
{
	struct request *last = hctx->merge.last_merge, *__rq;
	bool ret = false;

	if (!(hctx->flags & MQ_F_SHOULD_MERGE))
		return false;
	if (last && last != rq && attempt_merge(hctx, last, rq)) {
		TAILQ_INSERT_TAIL(free, rq, queuelist);
		return true;
	}
	while ((__rq = elv_rqhash_find(hctx, blk_rq_pos(rq))) && __rq != rq &&
	       attempt_merge(hctx, __rq, rq)) {
		TAILQ_INSERT_TAIL(free, rq, queuelist);
		ret = true;
		rq = __rq;
	}
	return ret;
}

/* blk_mq_sched_try_merge(); see blk-mq.h. */
bool mq_sched_try_merge(struct mq_hw_ctx *hctx, struct bio *bio,
			struct request **free)
{
	struct request *rq = NULL;
	enum elv_merge type = elv_merge(hctx, &rq, bio);

	*free = NULL;
	switch (type) {
	case ELEVATOR_BACK_MERGE:
		mq_merge_bio(rq, bio, type);
		*free = attempt_back_merge(hctx, rq);
		break;
	case ELEVATOR_FRONT_MERGE:
		mq_merge_bio(rq, bio, type);
		*free = attempt_front_merge(hctx, rq);
		break;
	default:
		return false;
	}
	if (!*free)
		elv_merged_request(hctx, rq, type);
	return true;
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
 * The bytes of the piece of bio starting off bytes in: at most max, and,
 * for reads and writes, not across a chunk_sectors boundary (a zone), as
 * blk_chunk_sectors_left() keeps them in Linux's bio_split_to_limits.
 */
static uint32_t split_len(const struct mq_queue *q, const struct bio *bio,
			  uint32_t off, uint64_t max)
{
	uint64_t len = bio->bi_size - off, chunk = q->limits.chunk_sectors;

	if (len > max)
		len = max;
	if (chunk && (bio->bi_op == REQ_OP_READ || bio->bi_op == REQ_OP_WRITE ||
		      bio->bi_op == REQ_OP_WRITE_ZEROES)) {
		uint64_t sector = bio->bi_sector + (off >> SECTOR_SHIFT);
		uint64_t left = (chunk - sector % chunk) << SECTOR_SHIFT;

		if (len > left)
			len = left;
	}
	return (uint32_t)len;
}

/*
 * Split bio into pieces no larger than the limits allow, nor across a
 * chunk boundary, and submit each; the original completes when the last
 * piece does.  Returns true if the bio was consumed (split, or failed
 * because the op is not supported).
 */
bool mq_split_bio(struct mq_ctx *ctx, struct bio *bio, bool async)
{
	uint64_t max = max_bio_bytes(ctx->queue, bio->bi_op);
	uint32_t off, nr, i;

	if (bio->bi_size <= max &&
	    split_len(ctx->queue, bio, 0, max) == bio->bi_size)
		return false;
	if (!max) {
		bio->bi_status = EOPNOTSUPP;
		bio_endio(bio);
		return true;
	}
	for (nr = 0, off = 0; off < bio->bi_size; nr++)
		off += split_len(ctx->queue, bio, off, max);
	atomic_store(&bio->bi_remaining, (int)nr);
	bio->bi_status = 0;
	for (i = 0, off = 0; i < nr; i++) {
		uint32_t len = split_len(ctx->queue, bio, off, max);
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
		child->bi_ioprio = bio->bi_ioprio;
		child->bi_client = bio->bi_client;
		child->bi_parent = bio;
		child->bi_end_io = bio_chain_endio;
		off += len;
		__mq_submit_bio(ctx, child, async);
	}
	return true;
}
