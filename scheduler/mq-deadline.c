/* SPDX-License-Identifier: GPL-2.0 */
/*
 * MQ Deadline I/O scheduler, after Linux block/mq-deadline.c (Jens Axboe):
 * requests sit in a sector-sorted tree and in a FIFO per direction and
 * priority; dispatch runs batches of up to fifo_batch requests in sector
 * order, switches to writes after reads have starved them writes_starved
 * times, and restarts from the FIFO head when a deadline (read_expire,
 * write_expire) has passed.  Lower priorities are served when higher ones
 * have nothing queued, or once they have waited prio_aging_expire.  On
 * host-managed zoned queues only one write per sequential zone is in
 * flight.  See mq-deadline.h for the per-hctx layout.
 *
 * Merging is the core's (mq-deadline-merge.c has our part of it).
 *
 * Locking: dh->lock guards a hardware queue's lists and the core's merge
 * state of that hctx (hctx->merge); dispatch_request is
 * called with hctx->lock held, so the order is hctx->lock, dh->lock,
 * dd->zone_lock.  finish_request takes only dd->zone_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mq-deadline.h"
#include "../server/mq/log.h"

/* The request's I/O priority class (dd_ioprio_to_prio). */
static enum dd_prio dd_rq_prio(const struct request *rq)
{
	return dd_ioprio_to_prio(rq->ioprio);
}

static struct dd_rb_root *deadline_rb_root(struct dd_hctx *dh,
					   struct request *rq)
{
	struct dd_rq *drq = dd_rq_of(dh, rq);

	return &dh->per_prio[drq->prio].sort_list[dd_rq_dir(rq)];
}

/* Insert after any request at the same position, as elv_rb_add does. */
void deadline_add_rq_rb(struct dd_hctx *dh, struct request *rq)
{
	struct dd_rb_root *root = deadline_rb_root(dh, rq);
	struct dd_rb_node **link = &root->node, *parent = NULL;
	struct dd_rq *drq = dd_rq_of(dh, rq);
	uint64_t pos = blk_rq_pos(rq);

	while (*link) {
		parent = *link;
		if (pos < dd_rb_key(parent))
			link = &parent->left;
		else
			link = &parent->right;
	}
	drq->rb_key = pos;
	dd_rb_link_node(&drq->rb, parent, link);
	dd_rb_insert_color(&drq->rb, root);
}

struct request *deadline_latter_request(struct dd_hctx *dh, struct request *rq)
{
	return dd_rb_rq(dd_rb_next(&dd_rq_of(dh, rq)->rb));
}

struct request *deadline_earlier_request(struct dd_hctx *dh, struct request *rq)
{
	return dd_rb_rq(dd_rb_prev(&dd_rq_of(dh, rq)->rb));
}

/*
 * The first request at or after pos.  A zoned write may have been
 * requeued below the last dispatched position, so for zoned writes search
 * from the start of pos's zone.
 */
static struct request *deadline_from_pos(struct dd_per_prio *per_prio,
					 enum dd_data_dir data_dir,
					 uint64_t pos)
{
	struct dd_rb_node *node = per_prio->sort_list[data_dir].node;
	struct request *res = NULL;

	if (!node)
		return NULL;
	res = dd_rb_rq(node);
	if (dd_rq_is_seq_zoned_write(res))
		pos -= pos % res->q->limits.chunk_sectors;
	res = NULL;
	while (node) {
		if (dd_rb_key(node) >= pos) {
			res = dd_rb_rq(node);
			node = node->left;
		} else {
			node = node->right;
		}
	}
	return res;
}

/* Take rq off its tree, FIFO or head list, and out of the merge hash. */
void deadline_remove_request(struct dd_hctx *dh, struct request *rq)
{
	struct dd_rq *drq = dd_rq_of(dh, rq);
	struct dd_per_prio *per_prio = &dh->per_prio[drq->prio];

	if (drq->flags & DD_RQ_SORTED) {
		TAILQ_REMOVE(&per_prio->fifo_list[dd_rq_dir(rq)], rq,
			     queuelist);
		dd_rb_erase(&drq->rb, deadline_rb_root(dh, rq));
		drq->flags &= ~DD_RQ_SORTED;
	} else {
		TAILQ_REMOVE(&per_prio->dispatch, rq, queuelist);
	}
	elv_rqhash_del(dh->hctx, rq);
	atomic_fetch_sub_explicit(&dh->nr_queued, 1, memory_order_relaxed);
}

/* Requests of a priority inserted and not yet completed. */
static uint32_t dd_queued(struct dd_hctx *dh, enum dd_prio prio)
{
	const struct dd_io_stats *stats = &dh->per_prio[prio].stats;

	return stats->inserted - atomic_load(&stats->completed);
}

/*
 * The clock, read at most once per dispatch and only when a decision
 * needs it: a read costs as much as a quarter of a dispatch.
 */
static uint64_t dd_clock(uint64_t *now)
{
	if (!*now)
		*now = mq_now_ns();
	return *now;
}

/* True if the oldest request of the FIFO (not empty) has expired. */
static bool deadline_check_fifo(struct dd_per_prio *per_prio,
				enum dd_data_dir data_dir, uint64_t *now)
{
	struct request *rq = TAILQ_FIRST(&per_prio->fifo_list[data_dir]);

	return dd_clock(now) >= rq->fifo_time;
}

/* Does a queued request end where rq starts? */
static bool deadline_is_seq_write(struct dd_hctx *dh, struct request *rq)
{
	struct request *prev = deadline_earlier_request(dh, rq);

	return prev &&
	       blk_rq_pos(prev) + blk_rq_sectors(prev) == blk_rq_pos(rq);
}

/* Skip the writes that follow rq back to back, across zones too. */
static struct request *deadline_skip_seq_writes(struct dd_hctx *dh,
						struct request *rq)
{
	uint64_t pos = blk_rq_pos(rq);

	do {
		pos += blk_rq_sectors(rq);
		rq = deadline_latter_request(dh, rq);
	} while (rq && blk_rq_pos(rq) == pos);
	return rq;
}

/*
 * The next request of a direction in arrival order.  For zoned writes,
 * the first whose zone is not write locked, taking the lowest queued
 * position of that zone; on rotational media not one in the middle of a
 * sequential stream.  dd->zone_lock is held on zoned queues.
 */
static struct request *deadline_fifo_request(struct dd_hctx *dh,
					     struct dd_per_prio *per_prio,
					     enum dd_data_dir data_dir)
{
	struct request *rq, *rb_rq, *cand;
	struct mq_queue *q;

	rq = TAILQ_FIRST(&per_prio->fifo_list[data_dir]);
	if (!rq)
		return NULL;
	q = rq->q;
	if (data_dir == DD_READ || !dd_queue_is_zoned(q))
		return rq;

	TAILQ_FOREACH (rq, &per_prio->fifo_list[DD_WRITE], queuelist) {
		cand = rq;
		rb_rq = deadline_from_pos(per_prio, data_dir, blk_rq_pos(rq));
		if (rb_rq && blk_rq_pos(rb_rq) < blk_rq_pos(rq))
			cand = rb_rq;
		if (dd_can_dispatch_to_zone(dh->dd, cand) &&
		    (!q->limits.rotational || !deadline_is_seq_write(dh, cand)))
			return cand;
	}
	return NULL;
}

/*
 * The next request of a direction in sector order, from the last
 * dispatched position; for zoned writes the first whose zone is not
 * locked.  dd->zone_lock is held on zoned queues.
 */
static struct request *deadline_next_request(struct dd_hctx *dh,
					     struct dd_per_prio *per_prio,
					     enum dd_data_dir data_dir)
{
	struct request *rq;

	rq = deadline_from_pos(per_prio, data_dir,
			       per_prio->latest_pos[data_dir]);
	if (!rq || data_dir == DD_READ || !dd_queue_is_zoned(rq->q))
		return rq;
	while (rq && !dd_can_dispatch_to_zone(dh->dd, rq)) {
		if (!rq->q->limits.rotational)
			rq = deadline_latter_request(dh, rq);
		else
			rq = deadline_skip_seq_writes(dh, rq);
	}
	return rq;
}

/* Was rq inserted after latest_start (ns)? */
static bool started_after(struct dd_hctx *dh, struct request *rq,
			  uint64_t latest_start)
{
	return dd_rq_of(dh, rq)->insert_ns > latest_start;
}

/* The first head-inserted request that may go now. */
static struct request *dd_head_request(struct dd_hctx *dh,
				       struct dd_per_prio *per_prio)
{
	struct request *rq;

	TAILQ_FOREACH (rq, &per_prio->dispatch, queuelist)
		if (!dd_rq_is_seq_zoned_write(rq) ||
		    dd_can_dispatch_to_zone(dh->dd, rq))
			return rq;
	return NULL;
}

/*
 * Select the best request of one priority according to the FIFO deadlines,
 * fifo_batch and writes_starved, among those inserted no later than
 * latest_start.  __dd_dispatch_request() in Linux.
 */
static struct request *__dd_dispatch_request(struct dd_hctx *dh,
					     struct dd_per_prio *per_prio,
					     uint64_t latest_start,
					     uint64_t *now)
{
	struct deadline_data *dd = dh->dd;
	struct request *rq, *next_rq;
	enum dd_data_dir data_dir;
	struct dd_rq *drq;

	rq = dd_head_request(dh, per_prio);
	if (rq) {
		if (started_after(dh, rq, latest_start))
			return NULL;
		deadline_remove_request(dh, rq);
		data_dir = dd_rq_dir(rq);
		goto done;
	}

	/* Batches are reads XOR writes. */
	rq = deadline_next_request(dh, per_prio, dh->last_dir);
	if (rq && dh->batching < (unsigned int)atomic_load(&dd->fifo_batch)) {
		/* We have a next request and are still entitled to batch. */
		data_dir = dd_rq_dir(rq);
		goto dispatch_request;
	}

	/* Not running a batch: choose a direction. */
	if (!TAILQ_EMPTY(&per_prio->fifo_list[DD_READ])) {
		if (deadline_fifo_request(dh, per_prio, DD_WRITE) &&
		    dh->starved++ >=
			    (unsigned int)atomic_load(&dd->writes_starved))
			goto dispatch_writes;
		data_dir = DD_READ;
		goto dispatch_find_request;
	}

	/* Either no reads, or writes have been starved. */
	if (!TAILQ_EMPTY(&per_prio->fifo_list[DD_WRITE])) {
	dispatch_writes:
		dh->starved = 0;
		data_dir = DD_WRITE;
		goto dispatch_find_request;
	}
	return NULL;

dispatch_find_request:
	/* Not running a batch: find the best request of data_dir. */
	next_rq = deadline_next_request(dh, per_prio, data_dir);
	if (deadline_check_fifo(per_prio, data_dir, now) || !next_rq) {
		/*
		 * A deadline has expired, the last request was in the other
		 * direction, or we ran out of higher-sectored requests:
		 * start again from the one with the earliest expiry.
		 */
		rq = deadline_fifo_request(dh, per_prio, data_dir);
	} else {
		/* Same direction, nothing expired: carry on in order. */
		rq = next_rq;
	}
	/* Zoned: only writes queued and none of their zones free. */
	if (!rq)
		return NULL;
	dh->last_dir = data_dir;
	dh->batching = 0;

dispatch_request:
	if (started_after(dh, rq, latest_start))
		return NULL;
	dh->batching++;
	deadline_remove_request(dh, rq);
done:
	drq = dd_rq_of(dh, rq);
	dh->per_prio[drq->prio].latest_pos[data_dir] = blk_rq_pos(rq);
	dh->per_prio[drq->prio].stats.dispatched++;
	if (dd_rq_is_seq_zoned_write(rq))
		dd_zone_write_lock(dd, drq);
	return rq;
}

/*
 * If requests of more than one priority are queued, serve any of the
 * lower ones that has waited longer than prio_aging_expire.
 */
static struct request *dd_dispatch_prio_aged_requests(struct dd_hctx *dh,
						      uint64_t *now)
{
	uint64_t aging = dd_ms_to_ns(atomic_load(&dh->dd->prio_aging_expire));
	struct request *rq;
	enum dd_prio prio;
	int prio_cnt;

	prio_cnt = !!dd_queued(dh, DD_RT_PRIO) + !!dd_queued(dh, DD_BE_PRIO) +
		   !!dd_queued(dh, DD_IDLE_PRIO);
	if (prio_cnt < 2)
		return NULL;
	dd_clock(now);
	for (prio = DD_BE_PRIO; prio <= DD_PRIO_MAX; prio++) {
		rq = __dd_dispatch_request(dh, &dh->per_prio[prio],
					   *now > aging ? *now - aging : 0,
					   now);
		if (rq)
			return rq;
	}
	return NULL;
}

/* Called with hctx->lock held, from the core's dispatch loop. */
static struct request *dd_dispatch_request(struct mq_hw_ctx *hctx)
{
	struct dd_hctx *dh = hctx->sched_data;
	struct deadline_data *dd = dh->dd;
	struct request *rq;
	enum dd_prio prio;
	uint64_t now = 0;
	bool zoned;

	if (!atomic_load_explicit(&dh->nr_queued, memory_order_relaxed))
		return NULL;
	pthread_mutex_lock(&dh->lock);
	rq = TAILQ_FIRST(&dh->bypass);
	if (rq) {
		TAILQ_REMOVE(&dh->bypass, rq, queuelist);
		atomic_fetch_sub_explicit(&dh->nr_queued, 1,
					  memory_order_relaxed);
		goto unlock;
	}
	zoned = dd_queue_is_zoned(dd->q);
	if (zoned)
		pthread_mutex_lock(&dd->zone_lock);
	rq = dd_dispatch_prio_aged_requests(dh, &now);
	if (!rq) {
		/*
		 * Priority order: lower priorities wait while a higher one
		 * has requests queued or in flight.
		 */
		for (prio = 0; prio <= DD_PRIO_MAX; prio++) {
			rq = __dd_dispatch_request(dh, &dh->per_prio[prio],
						   UINT64_MAX, &now);
			if (rq || dd_queued(dh, prio))
				break;
		}
	}
	if (zoned)
		pthread_mutex_unlock(&dd->zone_lock);
unlock:
	pthread_mutex_unlock(&dh->lock);
	return rq;
}

static void dd_insert_request(struct dd_hctx *dh, struct request *rq,
			      bool at_head, struct rq_list *free)
{
	struct deadline_data *dd = dh->dd;
	enum dd_data_dir data_dir = dd_rq_dir(rq);
	struct dd_per_prio *per_prio;
	struct request *rq2;
	struct dd_rq *drq;
	uint64_t now;

	/*
	 * Flushes and driver-owned requests (no prepare_request, so no
	 * finish_request either) bypass scheduling, as Linux sends them
	 * around the elevator.
	 */
	if (!(rq->rq_flags & RQF_ELVPRIV) || req_op(rq) == REQ_OP_FLUSH ||
	    (unsigned int)rq->internal_tag >= dh->nr_rqs) {
		if (at_head)
			TAILQ_INSERT_HEAD(&dh->bypass, rq, queuelist);
		else
			TAILQ_INSERT_TAIL(&dh->bypass, rq, queuelist);
		atomic_fetch_add_explicit(&dh->nr_queued, 1,
					  memory_order_relaxed);
		return;
	}
	drq = dd_rq_of(dh, rq);

	/* A requeued zoned write gives its zone back until dispatched. */
	if (drq->flags & DD_RQ_ZONE_LOCKED) {
		pthread_mutex_lock(&dd->zone_lock);
		dd_zone_write_unlock(dd, drq);
		pthread_mutex_unlock(&dd->zone_lock);
	}

	/*
	 * A new request was allocated just now, so its allocation time is
	 * the insertion time without reading the clock again; a requeued
	 * one reads it.
	 */
	per_prio = &dh->per_prio[drq->prio];
	if (!(drq->flags & DD_RQ_INSERTED)) {
		per_prio->stats.inserted++;
		drq->flags |= DD_RQ_INSERTED;
		now = rq->start_time_ns;
	} else {
		now = mq_now_ns();
	}
	drq->insert_ns = now;

	/* It may join the back of a queued request instead. */
	if (!at_head && mq_sched_try_insert_merge(dh->hctx, rq, free))
		return;

	if (at_head) {
		TAILQ_INSERT_HEAD(&per_prio->dispatch, rq, queuelist);
		rq->fifo_time = now;
	} else {
		deadline_add_rq_rb(dh, rq);
		drq->flags |= DD_RQ_SORTED;
		if (rq_mergeable(rq)) {
			elv_rqhash_add(dh->hctx, rq);
			if (!dh->hctx->merge.last_merge)
				dh->hctx->merge.last_merge = rq;
		}
		rq->fifo_time =
			now +
			dd_ms_to_ns(atomic_load(&dd->fifo_expire[data_dir]));
		/* Zoned writes keep position order within their zone. */
		rq2 = NULL;
		if (dd_rq_is_seq_zoned_write(rq)) {
			rq2 = deadline_latter_request(dh, rq);
			if (rq2 && dd_zone_no(rq->q, blk_rq_pos(rq2)) !=
					   dd_zone_no(rq->q, blk_rq_pos(rq)))
				rq2 = NULL;
		}
		if (rq2)
			TAILQ_INSERT_BEFORE(rq2, rq, queuelist);
		else
			TAILQ_INSERT_TAIL(&per_prio->fifo_list[data_dir], rq,
					  queuelist);
	}
	atomic_fetch_add_explicit(&dh->nr_queued, 1, memory_order_relaxed);
}

static void dd_insert_requests(struct mq_hw_ctx *hctx, struct rq_list *list,
			       bool at_head)
{
	struct dd_hctx *dh = hctx->sched_data;
	struct rq_list free = TAILQ_HEAD_INITIALIZER(free);
	struct request *rq;

	pthread_mutex_lock(&dh->lock);
	while ((rq = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, rq, queuelist);
		dd_insert_request(dh, rq, at_head, &free);
	}
	pthread_mutex_unlock(&dh->lock);
	/* Merged away: finish_request takes dd->zone_lock. */
	while ((rq = TAILQ_FIRST(&free))) {
		TAILQ_REMOVE(&free, rq, queuelist);
		mq_free_request(rq);
	}
}

/* Called for each request with a bio before it is inserted. */
static void dd_prepare_request(struct request *rq)
{
	struct dd_hctx *dh = rq->mq_hctx->sched_data;
	struct dd_rq *drq;

	if ((unsigned int)rq->internal_tag >= dh->nr_rqs)
		return;
	drq = dd_rq_of(dh, rq);
	drq->rq = rq;
	drq->flags = 0;
	drq->prio = dd_rq_prio(rq);
	rq->elv_priv[0] = drq;
}

/* Rerun the hardware queues that hold requests, from completion context. */
static void dd_kick_queued(struct mq_queue *q)
{
	struct mq_hw_ctx *hctx;
	unsigned int i;

	queue_for_each_hw_ctx (q, hctx, i) {
		struct dd_hctx *dh = hctx->sched_data;

		if (atomic_load(&dh->nr_queued))
			mq_run_hw_queue(hctx, true);
	}
}

/*
 * Called when the request is freed, whether it completed, failed or was
 * merged into another one.  Give back its zone write lock; the dispatch
 * loop may have stopped because every queued write was for a locked
 * zone, so run it again (Linux marks the hctx for restart instead).
 */
static void dd_finish_request(struct request *rq)
{
	struct dd_hctx *dh = rq->mq_hctx->sched_data;
	struct deadline_data *dd = dh->dd;
	struct dd_rq *drq = rq->elv_priv[0];

	/* Requests that bypassed scheduling were never counted. */
	if (!drq || !(drq->flags & DD_RQ_INSERTED))
		return;
	atomic_fetch_add(&dh->per_prio[drq->prio].stats.completed, 1);
	if (drq->flags & DD_RQ_ZONE_LOCKED) {
		pthread_mutex_lock(&dd->zone_lock);
		dd_zone_write_unlock(dd, drq);
		pthread_mutex_unlock(&dd->zone_lock);
		dd_kick_queued(rq->q);
	}
	drq->flags = 0;
}

static bool dd_has_work(struct mq_hw_ctx *hctx)
{
	struct dd_hctx *dh = hctx->sched_data;

	return atomic_load_explicit(&dh->nr_queued, memory_order_relaxed);
}

/*
 * Throttle writes, sync ones included, as Linux throttles everything
 * but sync reads, so that they cannot take all the scheduler tags.
 */
static void dd_limit_depth(struct mq_hw_ctx *hctx, const struct bio *bio,
			   unsigned int *depth)
{
	struct deadline_data *dd = hctx->queue->elevator->elevator_data;
	unsigned int async_depth;

	if (!op_is_write(bio->bi_op))
		return;
	async_depth =
		atomic_load_explicit(&dd->async_depth, memory_order_relaxed);
	if (*depth > async_depth)
		*depth = async_depth;
}

void dd_depth_updated(struct mq_hw_ctx *hctx)
{
	struct mq_queue *q = hctx->queue;
	struct deadline_data *dd = q->elevator->elevator_data;
	unsigned int depth = 3 * q->nr_requests / 4;

	atomic_store(&dd->async_depth, depth ? depth : 1);
}

static int dd_init_hctx(struct mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	struct deadline_data *dd = hctx->queue->elevator->elevator_data;
	struct dd_hctx *dh;
	unsigned int i, dir;

	dh = calloc(1, sizeof(*dh));
	if (!dh)
		return ENOMEM;
	/* The scheduler tags number q->nr_requests, reserved ones included. */
	dh->nr_rqs = hctx->queue->nr_requests;
	dh->rqs = calloc(dh->nr_rqs ? dh->nr_rqs : 1, sizeof(*dh->rqs));
	if (!dh->rqs) {
		free(dh);
		return ENOMEM;
	}
	pthread_mutex_init(&dh->lock, NULL);
	dh->dd = dd;
	dh->hctx = hctx;
	TAILQ_INIT(&dh->bypass);
	for (i = 0; i <= DD_PRIO_MAX; i++) {
		struct dd_per_prio *per_prio = &dh->per_prio[i];

		TAILQ_INIT(&per_prio->dispatch);
		for (dir = 0; dir < DD_DIR_COUNT; dir++) {
			TAILQ_INIT(&per_prio->fifo_list[dir]);
			per_prio->sort_list[dir] = DD_RB_ROOT;
		}
	}
	dh->last_dir = DD_WRITE;
	hctx->sched_data = dh;
	dd_depth_updated(hctx);
	return 0;
}

static void dd_exit_hctx(struct mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	struct dd_hctx *dh = hctx->sched_data;
	enum dd_prio prio;

	if (!dh)
		return;
	pthread_mutex_lock(&dh->lock);
	for (prio = 0; prio <= DD_PRIO_MAX; prio++) {
		const struct dd_io_stats *stats = &dh->per_prio[prio].stats;

		if (dd_queued(dh, prio))
			pr_warn("%s: mq-deadline hctx %u prio %d: inserted %u "
				"merged %u dispatched %u completed %u",
				hctx->queue->name, hctx_idx, (int)prio,
				stats->inserted, stats->merged,
				stats->dispatched,
				atomic_load(&stats->completed));
	}
	if (atomic_load(&dh->nr_queued))
		pr_warn("%s: mq-deadline hctx %u: %u requests left queued",
			hctx->queue->name, hctx_idx,
			atomic_load(&dh->nr_queued));
	pthread_mutex_unlock(&dh->lock);
	pthread_mutex_destroy(&dh->lock);
	free(dh->rqs);
	free(dh);
	hctx->sched_data = NULL;
}

static int dd_init_sched(struct mq_queue *q, struct elevator_type *e)
{
	struct deadline_data *dd;
	unsigned int i;

	(void)e;
	dd = calloc(1, sizeof(*dd));
	if (!dd)
		return ENOMEM;
	dd->q = q;
	atomic_init(&dd->fifo_expire[DD_READ], DD_READ_EXPIRE_MS);
	atomic_init(&dd->fifo_expire[DD_WRITE], DD_WRITE_EXPIRE_MS);
	atomic_init(&dd->writes_starved, DD_WRITES_STARVED);
	atomic_init(&dd->front_merges, 1);
	atomic_init(&dd->fifo_batch, DD_FIFO_BATCH);
	atomic_init(&dd->prio_aging_expire, DD_PRIO_AGING_EXPIRE_MS);
	atomic_init(&dd->async_depth, 1);
	pthread_mutex_init(&dd->zone_lock, NULL);
	for (i = 0; i < DD_HASH_SIZE; i++)
		LIST_INIT(&dd->zone_hash[i]);
	q->elevator->elevator_data = dd;
	return 0;
}

static void dd_exit_sched(struct elevator_queue *eq)
{
	struct deadline_data *dd = eq->elevator_data;
	unsigned int i;

	for (i = 0; i < DD_HASH_SIZE; i++)
		if (!LIST_EMPTY(&dd->zone_hash[i]))
			pr_warn("%s: mq-deadline: zone write locks left held",
				dd->q->name);
	pthread_mutex_destroy(&dd->zone_lock);
	free(dd);
	eq->elevator_data = NULL;
}

int dd_get_stats(struct mq_queue *q, unsigned int hctx_idx,
		 struct dd_stats out[DD_PRIO_COUNT])
{
	struct dd_hctx *dh;
	enum dd_prio prio;

	if (!q->elevator || q->elevator->type != &mq_deadline_elv ||
	    hctx_idx >= q->nr_hw_queues)
		return ENOENT;
	dh = q->queue_hw_ctx[hctx_idx]->sched_data;
	pthread_mutex_lock(&dh->lock);
	for (prio = 0; prio <= DD_PRIO_MAX; prio++) {
		const struct dd_io_stats *s = &dh->per_prio[prio].stats;

		out[prio] = (struct dd_stats){
			.inserted = s->inserted,
			.merged = s->merged,
			.dispatched = s->dispatched,
			.bio_merged = s->bio_merged,
			.completed = atomic_load(&s->completed),
			.queued = dd_queued(dh, prio),
		};
	}
	pthread_mutex_unlock(&dh->lock);
	return 0;
}

const struct elevator_type mq_deadline_elv = {
	.elevator_name = "mq-deadline",
	.ops =
		{
			.init_sched = dd_init_sched,
			.exit_sched = dd_exit_sched,
			.init_hctx = dd_init_hctx,
			.exit_hctx = dd_exit_hctx,
			.depth_updated = dd_depth_updated,
			.bio_merge = dd_bio_merge,
			.request_merge = dd_request_merge,
			.request_merged = dd_request_merged,
			.requests_merged = dd_merged_requests,
			.next_request = dd_next_request,
			.former_request = dd_former_request,
			.limit_depth = dd_limit_depth,
			.prepare_request = dd_prepare_request,
			.finish_request = dd_finish_request,
			.insert_requests = dd_insert_requests,
			.dispatch_request = dd_dispatch_request,
			.has_work = dd_has_work,
		},
	.elevator_attrs = deadline_attrs,
};
