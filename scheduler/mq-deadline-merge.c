/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mq-deadline merging, after blk_mq_sched_try_merge() and elv_merge() in
 * Linux: try the last request merged into, then a back merge found through
 * a hash of queued requests by end sector, then (front_merges) a front
 * merge found in the sort tree by start sector.  A request that grew until
 * it touches its neighbour in the tree absorbs it (attempt_back_merge and
 * attempt_front_merge), and the emptied request is freed.
 */
#include "mq-deadline.h"
#include "../server/mq/hash.h"

static uint64_t rq_hash_key(const struct request *rq)
{
	return blk_rq_pos(rq) + blk_rq_sectors(rq);
}

static unsigned int dd_hash_bucket(uint64_t key)
{
	return hash_64(key, DD_HASH_BITS);
}

void dd_hash_add(struct dd_hctx *dh, struct request *rq)
{
	struct dd_rq *drq = dd_rq_of(dh, rq);

	drq->hash_key = rq_hash_key(rq);
	LIST_INSERT_HEAD(&dh->hash[dd_hash_bucket(drq->hash_key)], drq, hash);
	drq->flags |= DD_RQ_HASHED;
}

void dd_hash_del(struct dd_hctx *dh, struct request *rq)
{
	struct dd_rq *drq = dd_rq_of(dh, rq);

	LIST_REMOVE(drq, hash);
	drq->flags &= ~DD_RQ_HASHED;
}

static void dd_hash_reposition(struct dd_hctx *dh, struct request *rq)
{
	if (dd_rq_of(dh, rq)->flags & DD_RQ_HASHED)
		dd_hash_del(dh, rq);
	dd_hash_add(dh, rq);
}

/* A queued request ending at sector: elv_rqhash_find(). */
static struct request *dd_hash_find(struct dd_hctx *dh, uint64_t sector)
{
	struct dd_rq *drq;

	LIST_FOREACH(drq, &dh->hash[dd_hash_bucket(sector)], hash)
	if (drq->hash_key == sector)
		return drq->rq;
	return NULL;
}

/* A queued request starting at sector: elv_rb_find(). */
static struct request *dd_rb_find(struct dd_rb_root *root, uint64_t sector)
{
	struct dd_rb_node *n = root->node;

	while (n) {
		if (sector < dd_rb_key(n))
			n = n->left;
		else if (sector > dd_rb_key(n))
			n = n->right;
		else
			return dd_rb_rq(n);
	}
	return NULL;
}

/*
 * On zoned queues a request must stay inside one zone: Linux's core keeps
 * merges under chunk_sectors, ours does not, so the elevator refuses.
 */
static bool dd_range_in_one_zone(const struct mq_queue *q, uint64_t start,
				 uint64_t end)
{
	if (!dd_queue_is_zoned(q) || end <= start)
		return true;
	return dd_zone_no(q, start) == dd_zone_no(q, end - 1);
}

bool dd_allow_merge(struct mq_queue *q, struct request *rq, struct bio *bio)
{
	uint64_t start = blk_rq_pos(rq), end = start + blk_rq_sectors(rq);

	if (bio->bi_sector < start)
		start = bio->bi_sector;
	if (bio_end_sector(bio) > end)
		end = bio_end_sector(bio);
	return dd_range_in_one_zone(q, start, end);
}

/*
 * dd_request_merge(): a front merge through the sort tree of the bio's
 * priority; bios carry none yet, so best effort (see dd_rq_prio()).
 */
static struct request *dd_request_merge(struct dd_hctx *dh, struct bio *bio)
{
	struct dd_per_prio *per_prio = &dh->per_prio[DD_BE_PRIO];
	enum dd_data_dir dir = op_is_write(bio->bi_op) ? DD_WRITE : DD_READ;
	struct request *rq;

	if (!atomic_load(&dh->dd->front_merges))
		return NULL;
	rq = dd_rb_find(&per_prio->sort_list[dir], bio_end_sector(bio));
	if (rq && mq_rq_merge_ok(rq, bio))
		return rq;
	return NULL;
}

/* Could next be appended to req?  ll_merge_requests_fn() and friends. */
static bool dd_requests_mergeable(struct dd_hctx *dh, struct request *req,
				  struct request *next)
{
	const struct queue_limits *lim = &req->q->limits;
	uint64_t max_bytes = (uint64_t)lim->max_sectors << SECTOR_SHIFT;

	if (!(dd_rq_of(dh, req)->flags & DD_RQ_SORTED) ||
	    !(dd_rq_of(dh, next)->flags & DD_RQ_SORTED))
		return false;
	if (req_op(req) != req_op(next) ||
	    (req_op(req) != REQ_OP_READ && req_op(req) != REQ_OP_WRITE))
		return false;
	if (!req->bio || !next->bio)
		return false;
	if ((req->cmd_flags ^ next->cmd_flags) & (REQ_FUA | REQ_HEAD))
		return false;
	if ((req->rq_flags | next->rq_flags) & RQF_STARTED)
		return false;
	if (blk_rq_pos(req) + blk_rq_sectors(req) != blk_rq_pos(next))
		return false;
	if ((uint64_t)blk_rq_bytes(req) + blk_rq_bytes(next) > max_bytes)
		return false;
	if ((unsigned int)req->nr_phys_segments + next->nr_phys_segments >
	    lim->max_segments)
		return false;
	return dd_range_in_one_zone(req->q, blk_rq_pos(req),
				    blk_rq_pos(next) + blk_rq_sectors(next));
}

/*
 * next has been merged into req: req inherits next's deadline and FIFO
 * place if earlier, and next leaves the scheduler.  dd_merged_requests().
 */
static void dd_merged_requests(struct dd_hctx *dh, struct request *req,
			       struct request *next)
{
	struct dd_rq *dreq = dd_rq_of(dh, req), *dnext = dd_rq_of(dh, next);
	struct dd_per_prio *per_prio = &dh->per_prio[dnext->prio];
	struct rq_list *fifo = &per_prio->fifo_list[dd_rq_dir(req)];

	per_prio->stats.merged++;
	if (next->fifo_time < req->fifo_time) {
		TAILQ_REMOVE(fifo, req, queuelist);
		TAILQ_INSERT_BEFORE(next, req, queuelist);
		req->fifo_time = next->fifo_time;
	}
	if (dnext->insert_ns < dreq->insert_ns)
		dreq->insert_ns = dnext->insert_ns;
	deadline_remove_request(dh, next);
}

/*
 * Append next to req if they touch: attempt_merge().  Returns next, now
 * without bios, for the caller to free once dh->lock is dropped.
 */
static struct request *dd_attempt_merge(struct dd_hctx *dh, struct request *req,
					struct request *next)
{
	if (!req || !next || !dd_requests_mergeable(dh, req, next))
		return NULL;
	if (next->start_time_ns < req->start_time_ns)
		req->start_time_ns = next->start_time_ns;
	req->biotail->bi_next = next->bio;
	req->biotail = next->biotail;
	req->__data_len += next->__data_len;
	req->nr_phys_segments += next->nr_phys_segments;
	dd_merged_requests(dh, req, next);
	dd_hash_reposition(dh, req);
	dh->last_merge = req;

	next->bio = next->biotail = NULL;
	next->__data_len = 0;
	next->nr_phys_segments = 0;
	return next;
}

/* A front merge lowered rq's start: move it in the tree. */
static void dd_request_merged(struct dd_hctx *dh, struct request *rq)
{
	struct dd_rq *drq = dd_rq_of(dh, rq);
	struct dd_rb_root *root =
		&dh->per_prio[drq->prio].sort_list[dd_rq_dir(rq)];

	dd_rb_erase(&drq->rb, root);
	deadline_add_rq_rb(dh, rq);
}

/* blk_mq_sched_try_merge() with elv_merge(); dh->lock held. */
static bool dd_try_merge(struct dd_hctx *dh, struct bio *bio,
			 struct request **free)
{
	enum elv_merge how = ELEVATOR_NO_MERGE;
	struct request *rq = dh->last_merge, *prev;

	if (rq && mq_rq_merge_ok(rq, bio))
		how = mq_try_merge(rq, bio);
	if (how == ELEVATOR_NO_MERGE) {
		rq = dd_hash_find(dh, bio->bi_sector);
		if (rq && mq_rq_merge_ok(rq, bio))
			how = ELEVATOR_BACK_MERGE;
	}
	if (how == ELEVATOR_NO_MERGE) {
		rq = dd_request_merge(dh, bio);
		if (rq)
			how = ELEVATOR_FRONT_MERGE;
	}
	if (how == ELEVATOR_NO_MERGE)
		return false;

	mq_merge_bio(rq, bio, how);
	dh->per_prio[dd_rq_of(dh, rq)->prio].stats.bio_merged++;
	if (how == ELEVATOR_BACK_MERGE) {
		*free = dd_attempt_merge(dh, rq,
					 deadline_latter_request(dh, rq));
		if (!*free) {
			dd_hash_reposition(dh, rq);
			dh->last_merge = rq;
		}
	} else {
		dd_request_merged(dh, rq);
		prev = deadline_earlier_request(dh, rq);
		*free = dd_attempt_merge(dh, prev, rq);
		if (!*free)
			dh->last_merge = rq;
	}
	return true;
}

/* Called before a bio gets a request; true if it joined a queued one. */
bool dd_bio_merge(struct mq_hw_ctx *hctx, struct bio *bio)
{
	struct dd_hctx *dh = hctx->sched_data;
	struct request *free = NULL;
	bool ret;

	if (!atomic_load_explicit(&dh->nr_queued, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&dh->lock);
	ret = dd_try_merge(dh, bio, &free);
	pthread_mutex_unlock(&dh->lock);
	if (free)
		mq_free_request(free);
	return ret;
}
