/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mq-deadline merging.  The core does the merging (mq_sched_try_merge():
 * the last merge, a back merge through its hash, then ours); mq-deadline
 * adds what it alone knows, as Linux's dd_request_merge(),
 * dd_request_merged() and dd_merged_requests() do: front merges found in
 * the sort tree by start sector, keeping that tree in order when a front
 * merge moves a request's start, and forgetting a request merged into
 * another one.  A request being inserted may also join a queued one
 * (mq_sched_try_insert_merge() from dd_insert_request).
 */
#include "mq-deadline.h"

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
 * A front merge through the sort tree of the bio's priority class (set
 * from the client's identity by queue/ioprio_map before the merge is
 * tried, as its request would get it).  dd->lock held.
 */
enum elv_merge dd_request_merge(struct mq_hw_ctx *hctx, struct request **req,
				struct bio *bio)
{
	struct dd_hctx *dh = hctx->sched_data;
	struct dd_per_prio *per_prio =
		&dh->per_prio[dd_ioprio_to_prio(bio->bi_ioprio)];
	enum dd_data_dir dir = op_is_write(bio->bi_op) ? DD_WRITE : DD_READ;
	struct request *rq;

	if (!atomic_load(&dh->dd->front_merges))
		return ELEVATOR_NO_MERGE;
	rq = dd_rb_find(&per_prio->sort_list[dir], bio_end_sector(bio));
	if (rq && mq_rq_merge_ok(rq, bio)) {
		*req = rq;
		return ELEVATOR_FRONT_MERGE;
	}
	return ELEVATOR_NO_MERGE;
}

/* A front merge lowered rq's start: move it in the tree. */
void dd_request_merged(struct mq_queue *q, struct request *rq,
		       enum elv_merge type)
{
	struct dd_hctx *dh = rq->mq_hctx->sched_data;
	struct dd_rq *drq = dd_rq_of(dh, rq);
	struct dd_rb_root *root =
		&dh->per_prio[drq->prio].sort_list[dd_rq_dir(rq)];

	(void)q;
	if (type != ELEVATOR_FRONT_MERGE || !(drq->flags & DD_RQ_SORTED))
		return;
	dd_rb_erase(&drq->rb, root);
	deadline_add_rq_rb(dh, rq);
}

/*
 * next has been merged into req: req inherits next's deadline and FIFO
 * place if earlier, and next leaves the scheduler.
 */
void dd_merged_requests(struct mq_queue *q, struct request *req,
			struct request *next)
{
	struct dd_hctx *dh = req->mq_hctx->sched_data;
	struct dd_rq *dreq = dd_rq_of(dh, req), *dnext = dd_rq_of(dh, next);
	struct dd_per_prio *per_prio = &dh->per_prio[dnext->prio];

	(void)q;
	per_prio->stats.merged++;
	if ((dreq->flags & DD_RQ_SORTED) && (dnext->flags & DD_RQ_SORTED) &&
	    next->fifo_time < req->fifo_time) {
		struct rq_list *fifo = &per_prio->fifo_list[dd_rq_dir(req)];

		TAILQ_REMOVE(fifo, req, queuelist);
		TAILQ_INSERT_BEFORE(next, req, queuelist);
		req->fifo_time = next->fifo_time;
	}
	if (dnext->insert_ns < dreq->insert_ns)
		dreq->insert_ns = dnext->insert_ns;
	/* Not queued yet when merged at insertion. */
	if (dnext->flags & DD_RQ_SORTED)
		deadline_remove_request(dh, next);
}

struct request *dd_next_request(struct mq_queue *q, struct request *rq)
{
	struct dd_hctx *dh = rq->mq_hctx->sched_data;

	(void)q;
	if (!(dd_rq_of(dh, rq)->flags & DD_RQ_SORTED))
		return NULL;
	return deadline_latter_request(dh, rq);
}

struct request *dd_former_request(struct mq_queue *q, struct request *rq)
{
	struct dd_hctx *dh = rq->mq_hctx->sched_data;

	(void)q;
	if (!(dd_rq_of(dh, rq)->flags & DD_RQ_SORTED))
		return NULL;
	return deadline_earlier_request(dh, rq);
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
	ret = mq_sched_try_merge(hctx, bio, &free);
	if (ret)
		dh->per_prio[dd_ioprio_to_prio(bio->bi_ioprio)]
			.stats.bio_merged++;
	pthread_mutex_unlock(&dh->lock);
	if (free)
		mq_free_request(free);
	return ret;
}
