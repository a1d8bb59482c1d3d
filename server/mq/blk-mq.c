/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The request core, after block/blk-mq.c: tag sets, hardware and software
 * queues, dispatch with the queue_rq return codes, requeue, stop/start,
 * freeze and quiesce.
 *
 * Locking: ctx->lock guards a software queue; hctx->lock guards the
 * dispatch list and the running flag.  Order: hctx->lock, then ctx->lock,
 * then set->restart_lock.  No core lock is held across queue_rq, so a
 * driver may complete a request from inside it.
 *
 * One thread at a time runs an hctx's dispatch loop ("running"); another
 * that wants it run sets "rerun" and leaves, and the runner goes round
 * again.  Runs asked for from completion context are async (kblockd, or the
 * hctx's worker for BLOCKING sets), since the driver may hold its own locks
 * there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "blk-mq-internal.h"
#include "blk-trace.h"
#include "log.h"
#include "elevator.h"

static const char *const op_names[REQ_OP_LAST] = {
	[REQ_OP_READ] = "READ",
	[REQ_OP_WRITE] = "WRITE",
	[REQ_OP_FLUSH] = "FLUSH",
	[REQ_OP_DISCARD] = "DISCARD",
	[REQ_OP_WRITE_ZEROES] = "WRITE_ZEROES",
	[REQ_OP_DRV_IN] = "DRV_IN",
	[REQ_OP_DRV_OUT] = "DRV_OUT",
};

const char *req_op_name(enum req_op op)
{
	return op < REQ_OP_LAST ? op_names[op] : "UNKNOWN";
}

const char *mq_qrc_name(enum mq_qrc ret)
{
	switch (ret) {
	case MQ_QRC_OK:
		return "OK";
	case MQ_QRC_BUSY:
		return "BUSY";
	case MQ_QRC_DEV_RESOURCE:
		return "DEV_RESOURCE";
	case MQ_QRC_RESOURCE:
		return "RESOURCE";
	case MQ_QRC_IOERR:
		return "IOERR";
	}
	return "?";
}

void blk_set_default_limits(struct queue_limits *lim)
{
	*lim = (struct queue_limits){
		.logical_block_size = 512,
		.physical_block_size = 512,
		.max_sectors = 2560,
		.max_segments = 128,
	};
}

/* ------------------------------------------------------------------ */
/* tag sets                                                            */

int mq_alloc_tag_set(struct mq_tag_set *set)
{
	unsigned int i;

	if (!set->ops || !set->ops->queue_rq || !set->nr_hw_queues ||
	    !set->queue_depth || set->queue_depth > MQ_MAX_DEPTH ||
	    set->reserved_tags >= set->queue_depth ||
	    !set->ops->get_budget != !set->ops->put_budget)
		return EINVAL;
	if (!set->timeout_ms)
		set->timeout_ms = MQ_DEFAULT_TIMEOUT_MS;

	set->tags = calloc(set->nr_hw_queues, sizeof(*set->tags));
	if (!set->tags)
		return ENOMEM;
	for (i = 0; i < set->nr_hw_queues; i++) {
		set->tags[i] = mq_alloc_tags(set, i, set->queue_depth,
					     set->reserved_tags);
		if (set->tags[i])
			set->tags[i]->driver = true;
		if (!set->tags[i]) {
			while (i-- > 0)
				mq_free_tags(set->tags[i]);
			free(set->tags);
			set->tags = NULL;
			return ENOMEM;
		}
	}
	pthread_mutex_init(&set->tag_list_lock, NULL);
	TAILQ_INIT(&set->tag_list);
	pthread_mutex_init(&set->restart_lock, NULL);
	TAILQ_INIT(&set->restart_list);
	atomic_init(&set->nr_restart, 0);
	atomic_init(&set->nr_active, 0);
	return 0;
}

void mq_free_tag_set(struct mq_tag_set *set)
{
	unsigned int i;

	if (!set->tags)
		return;
	for (i = 0; i < set->nr_hw_queues; i++)
		mq_free_tags(set->tags[i]);
	free(set->tags);
	set->tags = NULL;
	pthread_mutex_destroy(&set->tag_list_lock);
	pthread_mutex_destroy(&set->restart_lock);
}

/* ------------------------------------------------------------------ */
/* restart: rerun hctxs that a freed request may unblock               */

static void mq_sched_mark_restart(struct mq_hw_ctx *hctx, unsigned int bit)
{
	struct mq_tag_set *set = hctx->queue->tag_set;

	atomic_fetch_or(&hctx->state, bit);
	pthread_mutex_lock(&set->restart_lock);
	if (!hctx->on_restart_list) {
		hctx->on_restart_list = true;
		TAILQ_INSERT_TAIL(&set->restart_list, hctx, restart_entry);
		atomic_fetch_add(&set->nr_restart, 1);
	}
	pthread_mutex_unlock(&set->restart_lock);
}

/*
 * Take the marked hctxs off the restart list and run them after msecs.
 * One at a time under the lock: a run may mark an hctx again at once, and
 * the count taken at entry keeps that from turning into a loop here.
 */
static void __mq_sched_restart(struct mq_tag_set *set, unsigned long msecs)
{
	unsigned int n = atomic_load(&set->nr_restart);
	struct mq_hw_ctx *hctx;

	while (n--) {
		pthread_mutex_lock(&set->restart_lock);
		hctx = TAILQ_FIRST(&set->restart_list);
		if (hctx) {
			TAILQ_REMOVE(&set->restart_list, hctx, restart_entry);
			hctx->on_restart_list = false;
			atomic_fetch_sub(&set->nr_restart, 1);
			atomic_fetch_and(&hctx->state, ~(MQ_S_SCHED_RESTART |
							 MQ_S_TAG_WAITING));
		}
		pthread_mutex_unlock(&set->restart_lock);
		if (!hctx)
			break;
		if (msecs)
			mq_delay_run_hw_queue(hctx, msecs);
		else
			mq_run_hw_queue(hctx, true);
	}
}

/* A request of the set was freed: rerun whoever waits for one. */
void mq_sched_restart(struct mq_tag_set *set)
{
	__mq_sched_restart(set, 0);
}

static void mq_sched_restart_delayed(struct mq_tag_set *set)
{
	__mq_sched_restart(set, MQ_RESOURCE_DELAY_MS);
}

static void mq_unmark_restart(struct mq_hw_ctx *hctx)
{
	struct mq_tag_set *set = hctx->queue->tag_set;

	pthread_mutex_lock(&set->restart_lock);
	if (hctx->on_restart_list) {
		TAILQ_REMOVE(&set->restart_list, hctx, restart_entry);
		hctx->on_restart_list = false;
		atomic_fetch_sub(&set->nr_restart, 1);
	}
	pthread_mutex_unlock(&set->restart_lock);
}

/* ------------------------------------------------------------------ */
/* hctx runs                                                           */

static void mq_run_work_fn(struct mq_delayed_work *work)
{
	struct mq_hw_ctx *hctx = container_of(work, struct mq_hw_ctx, run_work);

	mq_run_hw_queue(hctx, false);
}

static bool mq_hctx_has_pending(struct mq_hw_ctx *hctx)
{
	struct elevator_queue *e = hctx->queue->elevator;

	if (!TAILQ_EMPTY(&hctx->dispatch) || atomic_load(&hctx->nr_ctx_pending))
		return true;
	return e && e->type->ops.has_work && e->type->ops.has_work(hctx);
}

/*
 * Before taking a budget: is there anything to take?  An elevator without
 * has_work may have, as Linux assumes in blk_mq_do_dispatch_sched.
 */
static bool mq_hctx_may_have_work(struct mq_hw_ctx *hctx)
{
	struct elevator_queue *e = hctx->queue->elevator;

	if (!TAILQ_EMPTY(&hctx->dispatch) || atomic_load(&hctx->nr_ctx_pending))
		return true;
	return e && (!e->type->ops.has_work || e->type->ops.has_work(hctx));
}

/* Next request to offer the driver; hctx->lock held. */
static struct request *mq_next_request(struct mq_hw_ctx *hctx)
{
	struct elevator_queue *e = hctx->queue->elevator;
	struct request *rq;
	unsigned int i;

	rq = TAILQ_FIRST(&hctx->dispatch);
	if (rq) {
		TAILQ_REMOVE(&hctx->dispatch, rq, queuelist);
		return rq;
	}
	if (e)
		return e->type->ops.dispatch_request(hctx);
	if (!atomic_load(&hctx->nr_ctx_pending))
		return NULL;
	/* Round robin over the software queues, as blk_mq_dequeue_from_ctx. */
	for (i = 0; i < hctx->nr_ctx; i++) {
		unsigned int idx = (hctx->dispatch_from + i) % hctx->nr_ctx;
		struct mq_ctx *ctx = hctx->ctxs[idx];

		pthread_mutex_lock(&ctx->lock);
		rq = TAILQ_FIRST(&ctx->rq_list);
		if (rq) {
			TAILQ_REMOVE(&ctx->rq_list, rq, queuelist);
			ctx->nr_pending--;
			atomic_fetch_sub(&hctx->nr_ctx_pending, 1);
		}
		pthread_mutex_unlock(&ctx->lock);
		if (rq) {
			hctx->dispatch_from = (idx + 1) % hctx->nr_ctx;
			return rq;
		}
	}
	return NULL;
}

bool mq_get_driver_tag(struct request *rq)
{
	struct mq_hw_ctx *hctx = rq->mq_hctx;
	bool reserved;
	int tag;

	if (rq->tag >= 0)
		return true;
	reserved = hctx->sched_tags &&
		   mq_tag_is_reserved(hctx->sched_tags, rq->internal_tag);
	tag = mq_get_tag(hctx->tags, hctx, reserved);
	if (tag < 0)
		return false;
	rq->tag = tag;
	atomic_store_explicit(&hctx->tags->rqs[tag], rq, memory_order_release);
	return true;
}

/* Carry on with bios that mq_put_tag handed a tag to. */
static void mq_bios_got_tags(struct bio *bios)
{
	struct bio *bio;

	while ((bio = bios)) {
		bios = bio->bi_next;
		bio->bi_next = NULL;
		mq_bio_got_tag(bio, bio->bi_tag);
	}
}

static void mq_put_driver_tag(struct request *rq)
{
	struct mq_hw_ctx *hctx = rq->mq_hctx;
	int tag = rq->tag;

	if (tag < 0 || rq->internal_tag < 0)
		return; /* without an elevator the driver tag is the request */
	rq->tag = -1;
	/* Bios of another queue of the set may wait on these driver tags. */
	mq_bios_got_tags(mq_put_tag(hctx->tags, hctx, tag));
}

/*
 * Undo what queue_rq's refusal or a requeue leaves behind, the accounting
 * of mq_start_request included, so that a request started twice counts in
 * flight once; hctx->lock not held.
 */
static void mq_unstart_request(struct request *rq)
{
	struct mq_hw_ctx *hctx = rq->mq_hctx;
	int expected = MQ_RQ_IN_FLIGHT;

	atomic_compare_exchange_strong(&rq->state, &expected, MQ_RQ_IDLE);
	if (atomic_fetch_and(&rq->rq_flags, ~RQF_STARTED) & RQF_STARTED)
		mq_stat_unstart(rq, mq_time_get_ns());
	if (atomic_fetch_and(&rq->rq_flags, ~RQF_MQ_INFLIGHT) &
	    RQF_MQ_INFLIGHT) {
		atomic_fetch_sub(&hctx->stats.active, 1);
		atomic_fetch_sub(&hctx->queue->tag_set->nr_active, 1);
	}
}

/*
 * Is every bio of rq from a client that has gone?  Then nobody waits for
 * it, and it need not reach the driver.  Requests without a client
 * (driver-internal ones, flushes the core makes) always go.
 */
static bool mq_rq_abandoned(const struct request *rq)
{
	const struct bio *bio;

	if (!rq->bio)
		return false;
	for (bio = rq->bio; bio; bio = bio->bi_next)
		if (!bio->bi_client || !atomic_load(&bio->bi_client->gone))
			return false;
	return true;
}

/*
 * blk_mq_get_dispatch_budget: true if the driver has no budget or lends
 * one.  Dropping hctx->lock is safe: hctx->running keeps other runs out.
 */
static bool mq_get_dispatch_budget(struct mq_hw_ctx *hctx)
{
	struct mq_queue *q = hctx->queue;
	bool ok;

	if (!q->tag_set->ops->get_budget)
		return true;
	pthread_mutex_unlock(&hctx->lock);
	ok = q->tag_set->ops->get_budget(q);
	pthread_mutex_lock(&hctx->lock);
	return ok;
}

static void mq_put_dispatch_budget(struct mq_hw_ctx *hctx)
{
	struct mq_queue *q = hctx->queue;

	pthread_mutex_unlock(&hctx->lock);
	q->tag_set->ops->put_budget(q);
	pthread_mutex_lock(&hctx->lock);
}

/*
 * The dispatch loop, blk_mq_dispatch_rq_list and friends: feed queue_rq
 * until the lists are empty or the driver refuses.  With budget ops, as
 * blk_mq_do_dispatch_sched and blk_mq_do_dispatch_ctx: ask for a budget
 * first and take a request only with one, so that requests the device
 * cannot take yet stay in the elevator (or their software queue).
 */
static void mq_insert_ctx(struct request *rq);

/* A request handed to the driver from now on counts in flight. */
static void mq_rq_in_flight(struct mq_hw_ctx *hctx, struct request *rq)
{
	rq->rq_flags |= RQF_MQ_INFLIGHT;
	atomic_fetch_add(&hctx->stats.active, 1);
	atomic_fetch_add(&hctx->queue->tag_set->nr_active, 1);
}

/* Requests not queued anywhere yet join their software queues, in order */
static void mq_insert_ctx_list(struct rq_list *list)
{
	struct request *rq;

	while ((rq = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, rq, queuelist);
		mq_insert_ctx(rq);
	}
}

/*
 * A plugged batch to the driver's queue_rqs, with hctx->lock held and
 * dropped around the call.  Each request is counted in flight as the
 * dispatch loop counts one; those whose clients are all gone end here.
 * What the driver leaves on the list it did not take: uncounted and traced
 * as a requeue here, it goes back to the dispatch loop one request at a
 * time, as Linux issues what queue_rqs left with blk_mq_issue_direct.
 */
static void mq_dispatch_list(struct mq_hw_ctx *hctx, struct rq_list *list)
{
	struct mq_tag_set *set = hctx->queue->tag_set;
	struct rq_list cancelled = TAILQ_HEAD_INITIALIZER(cancelled);
	struct request *rq, *next;
	unsigned int n = 0;

	for (rq = TAILQ_FIRST(list); rq; rq = next) {
		next = TAILQ_NEXT(rq, queuelist);
		/* No elevator: the request's tag is the driver's. */
		mq_get_driver_tag(rq);
		mq_rq_in_flight(hctx, rq);
		if (mq_rq_abandoned(rq)) {
			TAILQ_REMOVE(list, rq, queuelist);
			TAILQ_INSERT_TAIL(&cancelled, rq, queuelist);
			continue;
		}
		blk_trace_rq(rq, BLK_TRACE_ISSUE, 0);
		n++;
	}
	pthread_mutex_unlock(&hctx->lock);
	while ((rq = TAILQ_FIRST(&cancelled))) {
		TAILQ_REMOVE(&cancelled, rq, queuelist);
		mq_end_request(rq, ECANCELED);
	}
	if (n) {
		set->ops->queue_rqs(hctx, list);
		TAILQ_FOREACH (rq, list, queuelist) {
			blk_trace_rq(rq, BLK_TRACE_REQUEUE, 0);
			mq_unstart_request(rq);
			n--;
		}
		atomic_fetch_add(&hctx->stats.dispatched, n);
	}
	pthread_mutex_lock(&hctx->lock);
}

/*
 * direct: requests not queued anywhere yet (mq_issue_direct, or a plug's
 * batch), which the loop takes first when nothing else waits and no other
 * run is under way; otherwise they join their software queues here, under
 * hctx->lock.  A driver with queue_rqs gets them all in one call.
 */
static void __mq_dispatch(struct mq_hw_ctx *hctx, struct rq_list *direct)
{
	struct mq_queue *q = hctx->queue;
	struct mq_tag_set *set = q->tag_set;
	struct mq_queue_data bd;
	struct request *rq;
	enum mq_qrc ret;
	unsigned int queued;
	bool budget = set->ops->get_budget != NULL;
	bool listed = false; /* direct went to queue_rqs once already */
	bool last;

	pthread_mutex_lock(&hctx->lock);
	if (direct && (hctx->running || !TAILQ_EMPTY(&hctx->dispatch) ||
		       atomic_load(&hctx->nr_ctx_pending))) {
		mq_insert_ctx_list(direct);
		direct = NULL;
	}
	if (hctx->running) {
		hctx->rerun = true;
		pthread_mutex_unlock(&hctx->lock);
		return;
	}
	hctx->running = true;
again:
	hctx->rerun = false;
	queued = 0;
	last = true;
	atomic_fetch_add(&hctx->stats.run, 1);
	while (!(atomic_load(&hctx->state) & MQ_S_STOPPED) &&
	       !atomic_load(&q->quiesced)) {
		if (budget) {
			if (!mq_hctx_may_have_work(hctx))
				break;
			/* The driver reruns us when a budget comes free. */
			if (!mq_get_dispatch_budget(hctx))
				break;
		}
		if (direct && set->ops->queue_rqs && !listed) {
			mq_dispatch_list(hctx, direct);
			listed = true;
			if (TAILQ_EMPTY(direct))
				direct = NULL;
			continue;
		}
		if (direct) {
			rq = TAILQ_FIRST(direct);
			TAILQ_REMOVE(direct, rq, queuelist);
			if (TAILQ_EMPTY(direct))
				direct = NULL;
		} else {
			rq = mq_next_request(hctx);
		}
		if (!rq) {
			/*
			 * As blk_mq_do_dispatch_sched, rerun the queues
			 * ourselves after a short delay when nothing came:
			 * a budget taken for nothing may have kept another
			 * run from dispatching, and an elevator that has
			 * work but gave none (mq-deadline holding a lower
			 * class while a higher one is in flight, bfq
			 * idling) is not run again by anything else when no
			 * completion restarts the queue.
			 */
			if (budget)
				mq_put_dispatch_budget(hctx);
			if (budget ||
			    (q->elevator && mq_hctx_may_have_work(hctx)))
				mq_delay_run_hw_queues(q, MQ_BUDGET_DELAY_MS);
			break;
		}
		if (!mq_get_driver_tag(rq)) {
			if (budget)
				mq_put_dispatch_budget(hctx);
			TAILQ_INSERT_HEAD(&hctx->dispatch, rq, queuelist);
			mq_sched_mark_restart(hctx, MQ_S_TAG_WAITING);
			/* Dekker against mq_free_request: recheck after
			 * marking. */
			if (!atomic_load(&set->nr_active))
				mq_sched_restart_delayed(set);
			break;
		}
		mq_rq_in_flight(hctx, rq);
		if (mq_rq_abandoned(rq)) {
			/* It never reaches the driver, which owns budgets. */
			if (budget)
				mq_put_dispatch_budget(hctx);
			pthread_mutex_unlock(&hctx->lock);
			mq_end_request(rq, ECANCELED);
			pthread_mutex_lock(&hctx->lock);
			continue;
		}
		bd.rq = rq;
		bd.last = last = !mq_hctx_has_pending(hctx);
		pthread_mutex_unlock(&hctx->lock);

		blk_trace_rq(rq, BLK_TRACE_ISSUE, 0);
		ret = set->ops->queue_rq(hctx, &bd);

		if (ret == MQ_QRC_OK) {
			atomic_fetch_add(&hctx->stats.dispatched, 1);
			queued++;
			pthread_mutex_lock(&hctx->lock);
			continue;
		}
		if (ret == MQ_QRC_IOERR) {
			mq_end_request(rq, EIO);
			pthread_mutex_lock(&hctx->lock);
			continue;
		}

		/*
		 * BUSY, DEV_RESOURCE, RESOURCE: back to the head, traced as
		 * Linux's __blk_mq_requeue_request traces it.
		 */
		blk_trace_rq(rq, BLK_TRACE_REQUEUE, 0);
		if (ret == MQ_QRC_DEV_RESOURCE)
			atomic_fetch_add(&hctx->stats.dev_resource, 1);
		else if (ret == MQ_QRC_RESOURCE)
			atomic_fetch_add(&hctx->stats.resource, 1);
		else
			atomic_fetch_add(&hctx->stats.busy, 1);
		pthread_mutex_lock(&hctx->lock);
		TAILQ_INSERT_HEAD(&hctx->dispatch, rq, queuelist);
		last = false;
		/*
		 * Mark before uncounting: a request freed from now on sees
		 * the mark.  If nothing is left in flight after our own
		 * attempt is uncounted, no free will come to restart anyone
		 * marked, so rerun them all after a short delay.  RESOURCE
		 * always comes back after the delay, as Linux's
		 * BLK_MQ_RESOURCE_DELAY.
		 */
		mq_sched_mark_restart(hctx, MQ_S_SCHED_RESTART);
		mq_unstart_request(rq);
		if (ret == MQ_QRC_RESOURCE)
			mq_delay_run_hw_queue(hctx, MQ_RESOURCE_DELAY_MS);
		else if (!atomic_load(&set->nr_active))
			mq_sched_restart_delayed(set);
		break;
	}
	if (queued && !last && set->ops->commit_rqs) {
		pthread_mutex_unlock(&hctx->lock);
		set->ops->commit_rqs(hctx);
		pthread_mutex_lock(&hctx->lock);
	}
	/* Stopped or quiesced before the loop took them: they wait queued. */
	if (direct) {
		mq_insert_ctx_list(direct);
		direct = NULL;
	}
	if (hctx->rerun && !(atomic_load(&hctx->state) & MQ_S_STOPPED) &&
	    !atomic_load(&q->quiesced))
		goto again;
	hctx->running = false;
	pthread_cond_broadcast(&hctx->idle);
	pthread_mutex_unlock(&hctx->lock);
}

static void mq_dispatch(struct mq_hw_ctx *hctx)
{
	__mq_dispatch(hctx, NULL);
}

static void *mq_hctx_worker(void *arg)
{
	struct mq_hw_ctx *hctx = arg;

	pthread_mutex_lock(&hctx->lock);
	for (;;) {
		while (!hctx->worker_kick && !hctx->worker_exit)
			pthread_cond_wait(&hctx->worker_cond, &hctx->lock);
		if (hctx->worker_exit)
			break;
		hctx->worker_kick = false;
		pthread_mutex_unlock(&hctx->lock);
		mq_dispatch(hctx);
		pthread_mutex_lock(&hctx->lock);
	}
	pthread_mutex_unlock(&hctx->lock);
	return NULL;
}

void mq_run_hw_queue(struct mq_hw_ctx *hctx, bool async)
{
	if (atomic_load(&hctx->queue->quiesced) ||
	    (atomic_load(&hctx->state) & MQ_S_STOPPED))
		return;
	if (hctx->has_worker) {
		pthread_mutex_lock(&hctx->lock);
		hctx->worker_kick = true;
		pthread_cond_signal(&hctx->worker_cond);
		pthread_mutex_unlock(&hctx->lock);
	} else if (async) {
		kblockd_schedule(hctx->queue->kblockd, &hctx->run_work, 0);
	} else {
		mq_dispatch(hctx);
	}
}

void mq_run_hw_queues(struct mq_queue *q, bool async)
{
	struct mq_hw_ctx *hctx;
	unsigned int i;

	queue_for_each_hw_ctx (q, hctx, i)
		mq_run_hw_queue(hctx, async);
}

void mq_delay_run_hw_queue(struct mq_hw_ctx *hctx, unsigned long msecs)
{
	kblockd_schedule(hctx->queue->kblockd, &hctx->run_work,
			 (uint64_t)msecs * 1000000ull);
}

void mq_delay_run_hw_queues(struct mq_queue *q, unsigned long msecs)
{
	struct mq_hw_ctx *hctx;
	unsigned int i;

	queue_for_each_hw_ctx (q, hctx, i)
		mq_delay_run_hw_queue(hctx, msecs);
}

bool mq_hctx_stopped(struct mq_hw_ctx *hctx)
{
	return atomic_load(&hctx->state) & MQ_S_STOPPED;
}

void mq_stop_hw_queue(struct mq_hw_ctx *hctx)
{
	atomic_fetch_or(&hctx->state, MQ_S_STOPPED);
}

void mq_stop_hw_queues(struct mq_queue *q)
{
	struct mq_hw_ctx *hctx;
	unsigned int i;

	queue_for_each_hw_ctx (q, hctx, i)
		mq_stop_hw_queue(hctx);
}

void mq_start_hw_queue(struct mq_hw_ctx *hctx)
{
	atomic_fetch_and(&hctx->state, ~MQ_S_STOPPED);
	mq_run_hw_queue(hctx, false);
}

void mq_start_hw_queues(struct mq_queue *q)
{
	struct mq_hw_ctx *hctx;
	unsigned int i;

	queue_for_each_hw_ctx (q, hctx, i)
		mq_start_hw_queue(hctx);
}

void mq_start_stopped_hw_queue(struct mq_hw_ctx *hctx, bool async)
{
	if (!(atomic_fetch_and(&hctx->state, ~MQ_S_STOPPED) & MQ_S_STOPPED))
		return;
	mq_run_hw_queue(hctx, async);
}

void mq_start_stopped_hw_queues(struct mq_queue *q, bool async)
{
	struct mq_hw_ctx *hctx;
	unsigned int i;

	queue_for_each_hw_ctx (q, hctx, i)
		mq_start_stopped_hw_queue(hctx, async);
}

/* ------------------------------------------------------------------ */
/* insertion                                                           */

static void mq_insert_ctx(struct request *rq)
{
	struct mq_ctx *ctx = rq->mq_ctx;

	pthread_mutex_lock(&ctx->lock);
	TAILQ_INSERT_TAIL(&ctx->rq_list, rq, queuelist);
	ctx->nr_pending++;
	atomic_fetch_add(&ctx->hctx->nr_ctx_pending, 1);
	pthread_mutex_unlock(&ctx->lock);
}

/*
 * Without an elevator, a request submitted and run on the submitter's
 * thread skips its software queue when nothing waits before it: the
 * dispatch loop takes it first, under the hctx->lock it takes anyway, as
 * blk_mq_try_issue_directly issues straight to the driver.  Not with
 * budgets, a dispatch worker, or a stopped or quiesced queue: those go
 * the usual way.
 */
static bool mq_can_issue_direct(struct mq_hw_ctx *hctx)
{
	struct mq_queue *q = hctx->queue;

	return !q->elevator && !hctx->has_worker &&
	       !q->tag_set->ops->get_budget && !atomic_load(&q->quiesced) &&
	       !(atomic_load(&hctx->state) & MQ_S_STOPPED);
}

void mq_sched_insert_request(struct request *rq, bool at_head, bool run_queue,
			     bool async)
{
	struct mq_hw_ctx *hctx = rq->mq_hctx;
	struct elevator_queue *e = rq->q->elevator;

	atomic_fetch_add(&hctx->stats.queued, 1);
	blk_trace_rq(rq, BLK_TRACE_INSERT, 0);
	if (e) {
		struct rq_list list = TAILQ_HEAD_INITIALIZER(list);

		TAILQ_INSERT_TAIL(&list, rq, queuelist);
		e->type->ops.insert_requests(hctx, &list, at_head);
	} else if (at_head) {
		pthread_mutex_lock(&hctx->lock);
		TAILQ_INSERT_HEAD(&hctx->dispatch, rq, queuelist);
		pthread_mutex_unlock(&hctx->lock);
	} else if (run_queue && !async && mq_can_issue_direct(hctx)) {
		struct rq_list one = TAILQ_HEAD_INITIALIZER(one);

		/* Insert and run in one: the dispatch loop queues it. */
		TAILQ_INSERT_TAIL(&one, rq, queuelist);
		__mq_dispatch(hctx, &one);
		return;
	} else {
		mq_insert_ctx(rq);
	}
	if (run_queue)
		mq_run_hw_queue(hctx, async);
}

/* ------------------------------------------------------------------ */
/* request allocation and freeing                                      */

static struct request *mq_rq_ctx_init(struct mq_hw_ctx *hctx,
				      struct mq_ctx *ctx, int tag,
				      enum req_op op)
{
	struct mq_queue *q = hctx->queue;
	struct mq_tags *tags = q->elevator ? hctx->sched_tags : hctx->tags;
	struct request *rq = tags->static_rqs[tag];

	rq->q = q;
	rq->mq_ctx = ctx;
	rq->mq_hctx = hctx;
	rq->op = op;
	rq->cmd_flags = 0;
	rq->rq_flags = 0;
	if (q->elevator) {
		rq->internal_tag = tag;
		rq->tag = -1;
	} else {
		rq->tag = tag;
		rq->internal_tag = -1;
		atomic_store_explicit(&tags->rqs[tag], rq,
				      memory_order_release);
	}
	if (mq_tag_is_reserved(tags, tag))
		rq->rq_flags |= RQF_RESERVED;
	rq->__sector = 0;
	rq->__data_len = 0;
	rq->bio = rq->biotail = NULL;
	rq->nr_phys_segments = 0;
	rq->submitter = 0;
	rq->client = NULL;
	rq->ioprio = 0;
	atomic_store(&rq->state, MQ_RQ_IDLE);
	atomic_store(&rq->ref, 1);
	rq->start_time_ns = mq_time_get_ns();
	rq->io_start_time_ns = 0;
	atomic_store(&rq->deadline_ns, 0);
	rq->special = NULL;
	rq->end_io = NULL;
	rq->end_io_data = NULL;
	rq->elv_priv[0] = rq->elv_priv[1] = NULL;
	rq->hash.le_prev = NULL;
	rq->fifo_time = 0;
	rq->stats_bytes = 0;
	return rq;
}

static void mq_bio_to_request(struct request *rq, struct bio *bio)
{
	rq->op = bio->bi_op;
	rq->cmd_flags = bio->bi_flags;
	rq->__sector = bio->bi_sector;
	rq->__data_len = bio->bi_size;
	rq->bio = rq->biotail = bio;
	bio->bi_next = NULL;
	rq->nr_phys_segments = 1;
	rq->submitter = bio->bi_submitter;
	rq->client = bio->bi_client;
	rq->ioprio = bio->bi_ioprio;
	blk_trace_rq(rq, BLK_TRACE_GETRQ, 0);
}

/*
 * Until the plug is empty: a request that completes in queue_rqs may
 * have its submitter send the next one (a read-modify-write's write)
 * into the same plug.
 */
void mq_flush_plug_list(struct mq_plug *plug)
{
	struct rq_list list = TAILQ_HEAD_INITIALIZER(list);
	struct mq_hw_ctx *hctx;

	while (plug->rq_count) {
		hctx = plug->hctx;
		TAILQ_CONCAT(&list, &plug->mq_list, queuelist);
		plug->rq_count = 0;
		plug->hctx = NULL;
		__mq_dispatch(hctx, &list);
	}
}

/*
 * blk_add_rq_to_plug: a request the submitter's plug holds for its
 * driver's queue_rqs, counted queued as an insertion counts it.  Never
 * one for the head of the queue, or one that could not be issued
 * directly now.
 */
static bool mq_plug_add(struct request *rq)
{
	struct mq_plug *plug = mq_current_plug();
	struct mq_hw_ctx *hctx = rq->mq_hctx;

	if (!plug || !hctx->queue->tag_set->ops->queue_rqs ||
	    (rq->cmd_flags & REQ_HEAD) || !mq_can_issue_direct(hctx))
		return false;
	if (plug->rq_count &&
	    (plug->hctx != hctx || plug->rq_count >= MQ_PLUG_MAX))
		mq_flush_plug_list(plug);
	atomic_fetch_add(&hctx->stats.queued, 1);
	blk_trace_rq(rq, BLK_TRACE_INSERT, 0);
	plug->hctx = hctx;
	TAILQ_INSERT_TAIL(&plug->mq_list, rq, queuelist);
	plug->rq_count++;
	return true;
}

static void mq_prepare_and_insert(struct request *rq, bool async)
{
	struct elevator_queue *e = rq->q->elevator;

	if (e && e->type->ops.prepare_request) {
		e->type->ops.prepare_request(rq);
		rq->rq_flags |= RQF_ELVPRIV;
	}
	if (!async && mq_plug_add(rq))
		return;
	mq_sched_insert_request(rq, rq->cmd_flags & REQ_HEAD, true, async);
}

/* A bio that waited in the tag FIFO now has its tag. */
void mq_bio_got_tag(struct bio *bio, int tag)
{
	struct mq_ctx *ctx = bio->bi_ctx;
	struct request *rq = mq_rq_ctx_init(ctx->hctx, ctx, tag, bio->bi_op);

	mq_bio_to_request(rq, bio);
	/* From completion context: never dispatch inline. */
	mq_prepare_and_insert(rq, true);
}

bool mq_get_request_ref(struct request *rq)
{
	int ref = atomic_load(&rq->ref);

	while (ref > 0)
		if (atomic_compare_exchange_weak(&rq->ref, &ref, ref + 1))
			return true;
	return false;
}

static void __mq_free_request(struct request *rq)
{
	struct mq_queue *q = rq->q;
	struct mq_hw_ctx *hctx = rq->mq_hctx;
	struct mq_tag_set *set = q->tag_set;
	struct elevator_queue *e = q->elevator;
	int tag = rq->tag, sched_tag = rq->internal_tag;
	bool was_active = rq->rq_flags & RQF_MQ_INFLIGHT;

	if ((rq->rq_flags & RQF_ELVPRIV) && e && e->type->ops.finish_request)
		e->type->ops.finish_request(rq);
	atomic_store(&rq->state, MQ_RQ_IDLE);
	rq->rq_flags = 0;
	rq->bio = rq->biotail = NULL;
	rq->tag = rq->internal_tag = -1;
	if (was_active)
		atomic_fetch_sub(&hctx->stats.active, 1);

	/* From here on the request may be handed out again. */
	if (tag >= 0)
		mq_bios_got_tags(mq_put_tag(hctx->tags, hctx, tag));
	if (sched_tag >= 0)
		mq_bios_got_tags(mq_put_tag(hctx->sched_tags, hctx, sched_tag));
	if (was_active)
		atomic_fetch_sub(&set->nr_active, 1);
	mq_sched_restart(set);
	mq_queue_exit(q);
}

void mq_put_request_ref(struct request *rq)
{
	if (atomic_fetch_sub(&rq->ref, 1) == 1)
		__mq_free_request(rq);
}

void mq_free_request(struct request *rq)
{
	mq_put_request_ref(rq);
}

/* ------------------------------------------------------------------ */
/* freeze                                                              */

/* A bio that reaches a dying queue, as bio_queue_enter's bio_io_error. */
static void mq_bio_dead(struct bio *bio)
{
	if (!bio->bi_status)
		bio->bi_status = EIO;
	bio_endio(bio);
}

static bool mq_queue_enter(struct mq_queue *q, struct bio *bio)
{
	for (;;) {
		atomic_fetch_add(&q->q_usage, 1);
		if (!atomic_load(&q->frozen))
			return true;
		mq_queue_exit(q);
		pthread_mutex_lock(&q->freeze_lock);
		if (atomic_load(&q->dying)) {
			pthread_mutex_unlock(&q->freeze_lock);
			mq_bio_dead(bio);
			return false;
		}
		if (atomic_load(&q->frozen)) {
			/* Held until mq_unfreeze_queue resubmits it. */
			bio->bi_next = NULL;
			*q->parked_tail = bio;
			q->parked_tail = &bio->bi_next;
			pthread_mutex_unlock(&q->freeze_lock);
			return false;
		}
		pthread_mutex_unlock(&q->freeze_lock);
	}
}

/*
 * q_exiting covers the moment after the last reference is dropped: the
 * freezer may see q_usage reach zero while we still read q, and
 * mq_cleanup_queue must not free q under us.
 */
void mq_queue_exit(struct mq_queue *q)
{
	atomic_fetch_add(&q->q_exiting, 1);
	if (atomic_fetch_sub(&q->q_usage, 1) == 1 && atomic_load(&q->frozen)) {
		pthread_mutex_lock(&q->freeze_lock);
		pthread_cond_broadcast(&q->freeze_wq);
		pthread_mutex_unlock(&q->freeze_lock);
	}
	atomic_fetch_sub(&q->q_exiting, 1);
}

void mq_freeze_queue(struct mq_queue *q)
{
	pthread_mutex_lock(&q->freeze_lock);
	if (++q->mq_freeze_depth == 1)
		atomic_store(&q->frozen, true);
	while (atomic_load(&q->q_usage) > 0)
		pthread_cond_wait(&q->freeze_wq, &q->freeze_lock);
	pthread_mutex_unlock(&q->freeze_lock);
}

/*
 * mq_freeze_queue that gives up after timeout_ms (0: waits as long as it
 * takes), as blk_mq_freeze_queue_wait_timeout does for nvme; on expiry
 * the freeze is undone here and the bios it parked are resubmitted.
 * Returns 0 (frozen: unfreeze later) or -EBUSY (not frozen).
 */
int mq_freeze_queue_timeout(struct mq_queue *q, unsigned int timeout_ms)
{
	struct timespec ts;
	bool drained;
	int r = 0;

	if (!timeout_ms) {
		mq_freeze_queue(q);
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&q->freeze_lock);
	if (++q->mq_freeze_depth == 1)
		atomic_store(&q->frozen, true);
	while (atomic_load(&q->q_usage) > 0 && r != ETIMEDOUT)
		r = pthread_cond_clockwait(&q->freeze_wq, &q->freeze_lock,
					   CLOCK_MONOTONIC, &ts);
	drained = atomic_load(&q->q_usage) == 0;
	pthread_mutex_unlock(&q->freeze_lock);
	if (drained)
		return 0;
	mq_unfreeze_queue(q);
	return -EBUSY;
}

void mq_unfreeze_queue(struct mq_queue *q)
{
	struct bio *bio, *next = NULL;

	pthread_mutex_lock(&q->freeze_lock);
	if (--q->mq_freeze_depth == 0) {
		atomic_store(&q->frozen, false);
		next = q->parked_head;
		q->parked_head = NULL;
		q->parked_tail = &q->parked_head;
		pthread_cond_broadcast(&q->freeze_wq);
	}
	pthread_mutex_unlock(&q->freeze_lock);
	while ((bio = next)) {
		next = bio->bi_next;
		bio->bi_next = NULL;
		__mq_submit_bio(bio->bi_ctx, bio, false);
	}
}

/*
 * Take a reference only while someone else holds one, as percpu_ref_tryget
 * on a killed counter: a frozen queue still draining lets in a request
 * that serves one of those inside it, and the freeze then waits for it too.
 */
static bool mq_queue_tryget_inside(struct mq_queue *q)
{
	long usage = atomic_load(&q->q_usage);

	while (usage > 0)
		if (atomic_compare_exchange_weak(&q->q_usage, &usage,
						 usage + 1))
			return true;
	return false;
}

/* Driver allocations wait for a thaw instead of parking. */
static bool mq_queue_enter_wait(struct mq_queue *q, unsigned int flags)
{
	bool nowait = flags & MQ_REQ_NOWAIT;

	for (;;) {
		atomic_fetch_add(&q->q_usage, 1);
		if (!atomic_load(&q->frozen))
			return true;
		mq_queue_exit(q);
		if (atomic_load(&q->dying))
			return false;
		if ((flags & MQ_REQ_PREEMPT) && mq_queue_tryget_inside(q))
			return true;
		if (nowait)
			return false;
		mq_plug_before_sleep();
		pthread_mutex_lock(&q->freeze_lock);
		while (atomic_load(&q->frozen) && !atomic_load(&q->dying))
			pthread_cond_wait(&q->freeze_wq, &q->freeze_lock);
		pthread_mutex_unlock(&q->freeze_lock);
	}
}

/* ------------------------------------------------------------------ */
/* quiesce                                                             */

void mq_quiesce_queue(struct mq_queue *q)
{
	struct mq_hw_ctx *hctx;
	unsigned int i;

	atomic_store(&q->quiesced, true);
	/* Wait for dispatch loops already inside queue_rq to leave. */
	queue_for_each_hw_ctx (q, hctx, i) {
		pthread_mutex_lock(&hctx->lock);
		while (hctx->running)
			pthread_cond_wait(&hctx->idle, &hctx->lock);
		pthread_mutex_unlock(&hctx->lock);
	}
}

void mq_unquiesce_queue(struct mq_queue *q)
{
	atomic_store(&q->quiesced, false);
	mq_run_hw_queues(q, true);
}

/* ------------------------------------------------------------------ */
/* submission                                                          */

struct mq_ctx *mq_get_ctx(struct mq_queue *q, unsigned int cpu)
{
	return &q->queue_ctx[cpu % q->nr_ctx];
}

static bool bio_mergeable(const struct bio *bio)
{
	return bio->bi_op == REQ_OP_READ || bio->bi_op == REQ_OP_WRITE;
}

static bool mq_sched_bio_merge(struct mq_ctx *ctx, struct bio *bio)
{
	struct mq_queue *q = ctx->queue;
	struct elevator_queue *e = q->elevator;
	bool merged;

	if (!(q->tag_set->flags & MQ_F_SHOULD_MERGE) || !bio_mergeable(bio))
		return false;
	if (e)
		return e->type->ops.bio_merge &&
		       e->type->ops.bio_merge(ctx->hctx, bio);
	pthread_mutex_lock(&ctx->lock);
	merged = mq_bio_list_merge(q, &ctx->rq_list, bio);
	pthread_mutex_unlock(&ctx->lock);
	return merged;
}

void __mq_submit_bio(struct mq_ctx *ctx, struct bio *bio, bool async)
{
	struct mq_queue *q = ctx->queue;
	struct mq_hw_ctx *hctx = ctx->hctx;
	struct mq_tags *tags;
	struct request *rq;
	int tag;

	bio->bi_ctx = ctx;
	/* NBD has no I/O priority: who the client is gives it one. */
	mq_bio_set_ioprio(q, bio);
	/*
	 * Zone write plugging sees each piece of a split write, in order,
	 * before anything can reorder them (blk_zone_plug_bio).
	 */
	if ((bio->bi_flags & REQ_ZONE_APPEND) && !bio->bi_zone_wplug &&
	    blk_zone_append_check(q, bio))
		return;
	if (!bio->bi_zone_wplug &&
	    (q->zone_write_plugging || (bio->bi_flags & REQ_ZONE_APPEND)) &&
	    blk_op_is_zoned_write(bio->bi_op) &&
	    blk_queue_is_zoned(&q->limits) &&
	    (mq_split_bio(ctx, bio, async) || blk_zone_plug_bio(q, bio)))
		return;
	if (bio->bi_op == REQ_OP_DISCARD && blk_queue_is_zoned(&q->limits))
		blk_zone_plug_discard(q, bio);
	if (mq_flush_intercept(ctx, bio, async) ||
	    mq_split_bio(ctx, bio, async))
		return;
	if (!mq_queue_enter(q, bio))
		return;
	blk_trace_bio(q, bio, hctx->queue_num, BLK_TRACE_QUEUE);
	if (mq_sched_bio_merge(ctx, bio)) {
		mq_queue_exit(q);
		return;
	}
	tags = q->elevator ? hctx->sched_tags : hctx->tags;
	/* queue/nr_requests bounds the tags bios take. */
	bio->bi_tag_depth = __atomic_load_n(&q->nr_requests, __ATOMIC_RELAXED);
	if (bio->bi_tag_depth > tags->nr_tags)
		bio->bi_tag_depth = tags->nr_tags;
	if (q->elevator && q->elevator->type->ops.limit_depth)
		q->elevator->type->ops.limit_depth(hctx, bio,
						   &bio->bi_tag_depth);
	if (mq_tag_wait_bio(tags, bio, &tag))
		return; /* mq_bio_got_tag() carries on when a tag is freed */
	rq = mq_rq_ctx_init(hctx, ctx, tag, bio->bi_op);
	mq_bio_to_request(rq, bio);
	mq_prepare_and_insert(rq, async);
}

void mq_submit_bio(struct mq_ctx *ctx, struct bio *bio)
{
	__mq_submit_bio(ctx, bio, false);
}

struct request *mq_alloc_request(struct mq_queue *q, enum req_op op,
				 unsigned int flags)
{
	struct mq_ctx *ctx = mq_get_ctx(q, (unsigned int)gettid());
	struct mq_hw_ctx *hctx = ctx->hctx;
	bool reserved = flags & MQ_REQ_RESERVED;
	struct mq_tags *tags;
	int tag;

	if (!mq_queue_enter_wait(q, flags))
		return NULL;
	tags = q->elevator ? hctx->sched_tags : hctx->tags;
	if (flags & MQ_REQ_NOWAIT)
		tag = mq_get_tag(tags, hctx, reserved);
	else
		tag = mq_get_tag_wait(tags, ctx, reserved);
	if (tag < 0) {
		mq_queue_exit(q);
		return NULL;
	}
	return mq_rq_ctx_init(hctx, ctx, tag, op);
}

/* ------------------------------------------------------------------ */
/* completion                                                          */

void mq_start_request(struct request *rq)
{
	uint64_t now = mq_time_get_ns();

	rq->io_start_time_ns = now;
	rq->rq_flags |= RQF_STARTED;
	rq->rq_flags &= ~RQF_TIMED_OUT;
	rq->stats_bytes = rq->__data_len;
	atomic_store(&rq->state, MQ_RQ_IN_FLIGHT);
	mq_stat_start(rq, now);
	mq_add_timer(rq);
}

bool mq_request_started(struct request *rq)
{
	return atomic_load(&rq->state) != MQ_RQ_IDLE;
}

void bio_endio(struct bio *bio)
{
	/* Before bi_end_io, which may free the bio. */
	if (bio->bi_zone_wplug)
		blk_zone_write_plug_bio_endio(bio);
	if (bio->bi_end_io)
		bio->bi_end_io(bio);
}

static void mq_end_bio(struct bio *bio, int status)
{
	if (status && !bio->bi_status)
		bio->bi_status = status;
	bio_endio(bio);
}

bool mq_update_request(struct request *rq, int status, uint32_t nr_bytes)
{
	struct bio *bio;

	if (nr_bytes > rq->__data_len)
		nr_bytes = rq->__data_len;
	rq->__data_len -= nr_bytes;
	rq->__sector += nr_bytes >> SECTOR_SHIFT;
	while ((bio = rq->bio) && nr_bytes) {
		if (nr_bytes < bio->bi_size) {
			/* Part of this bio is done; advance it. */
			bio->bi_sector += nr_bytes >> SECTOR_SHIFT;
			bio->bi_size -= nr_bytes;
			if (bio->bi_buf)
				bio->bi_buf = (char *)bio->bi_buf + nr_bytes;
			if (status && !bio->bi_status)
				bio->bi_status = status;
			return true;
		}
		nr_bytes -= bio->bi_size;
		rq->bio = bio->bi_next;
		if (!rq->bio)
			rq->biotail = NULL;
		bio->bi_next = NULL;
		mq_end_bio(bio, status);
	}
	return rq->bio != NULL || rq->__data_len > 0;
}

void __mq_end_request(struct request *rq, int status)
{
	struct elevator_queue *e = rq->q->elevator;
	struct bio *bio, *next;
	uint64_t now = mq_time_get_ns();

	atomic_store(&rq->state, MQ_RQ_COMPLETE);
	mq_stat_done(rq, status, now);
	blk_trace_rq(rq, BLK_TRACE_COMPLETE, status);
	atomic_fetch_add(&rq->mq_hctx->stats.completed, 1);
	/* Elevators keep their own clocks: theirs is read fresh. */
	if (e && e->type->ops.completed_request)
		e->type->ops.completed_request(rq, mq_now_ns());

	/* Whatever mq_update_request has not completed ends here. */
	for (bio = rq->bio; bio; bio = next) {
		next = bio->bi_next;
		bio->bi_next = NULL;
		mq_end_bio(bio, status);
	}
	rq->bio = rq->biotail = NULL;
	rq->__data_len = 0;

	if (rq->end_io)
		rq->end_io(rq, status); /* it calls mq_free_request */
	else
		mq_free_request(rq);
}

void mq_end_request(struct request *rq, int status)
{
	int state = atomic_load(&rq->state);

	/* Exactly once: a timeout, a requeue and an interrupt may race. */
	do {
		if (state == MQ_RQ_COMPLETE) {
			pr_warn("%s: request tag %d completed twice, ignored",
				rq->q->name, rq->tag);
			return;
		}
	} while (!atomic_compare_exchange_weak(&rq->state, &state,
					       MQ_RQ_COMPLETE));
	__mq_end_request(rq, status);
}

void mq_complete_request(struct request *rq)
{
	if (rq->q->tag_set->ops->complete)
		rq->q->tag_set->ops->complete(rq);
	else
		mq_end_request(rq, 0);
}

/* ------------------------------------------------------------------ */
/* requeue                                                             */

void mq_add_to_requeue_list(struct request *rq, bool at_head, bool kick)
{
	struct mq_queue *q = rq->q;

	pthread_mutex_lock(&q->requeue_lock);
	if (at_head) {
		rq->rq_flags |= RQF_SOFTBARRIER;
		TAILQ_INSERT_HEAD(&q->requeue_list, rq, queuelist);
	} else {
		TAILQ_INSERT_TAIL(&q->requeue_list, rq, queuelist);
	}
	pthread_mutex_unlock(&q->requeue_lock);
	if (kick)
		mq_kick_requeue_list(q);
}

void mq_requeue_request(struct request *rq, bool kick_requeue_list)
{
	struct elevator_queue *e = rq->q->elevator;

	mq_unstart_request(rq);
	atomic_fetch_add(&rq->mq_hctx->stats.requeued, 1);
	blk_trace_rq(rq, BLK_TRACE_REQUEUE, 0);
	if (e && e->type->ops.requeue_request)
		e->type->ops.requeue_request(rq);
	mq_put_driver_tag(rq);
	mq_add_to_requeue_list(rq, true, kick_requeue_list);
	/* Giving back the driver's resources may unblock another queue. */
	mq_sched_restart(rq->q->tag_set);
}

/*
 * As in Linux 4.20, every requeued request goes back through the
 * elevator, prepared ones (RQF_DONTPREP) too; blk-merge.c keeps those
 * from merging.  Linux 5.0 (aef1897cd36d) sends them to hctx->dispatch
 * instead, ahead of the elevator's requests.
 */
static void mq_requeue_work(struct mq_delayed_work *work)
{
	struct mq_queue *q = container_of(work, struct mq_queue, requeue_work);
	struct rq_list list = TAILQ_HEAD_INITIALIZER(list);
	struct request *rq;

	pthread_mutex_lock(&q->requeue_lock);
	TAILQ_CONCAT(&list, &q->requeue_list, queuelist);
	pthread_mutex_unlock(&q->requeue_lock);

	while ((rq = TAILQ_FIRST(&list))) {
		TAILQ_REMOVE(&list, rq, queuelist);
		if (rq->rq_flags & RQF_SOFTBARRIER) {
			rq->rq_flags &= ~RQF_SOFTBARRIER;
			mq_sched_insert_request(rq, true, false, false);
		} else {
			mq_sched_insert_request(rq, false, false, false);
		}
	}
	mq_run_hw_queues(q, false);
}

void mq_kick_requeue_list(struct mq_queue *q)
{
	kblockd_schedule(q->kblockd, &q->requeue_work, 0);
}

void mq_delay_kick_requeue_list(struct mq_queue *q, unsigned long msecs)
{
	kblockd_schedule(q->kblockd, &q->requeue_work,
			 (uint64_t)msecs * 1000000ull);
}

void mq_tagset_busy_iter(struct mq_tag_set *set, busy_tag_iter_fn *fn,
			 void *data)
{
	unsigned int i;

	for (i = 0; i < set->nr_hw_queues; i++)
		mq_tags_busy_iter(set->tags[i], fn, data);
}

/* ------------------------------------------------------------------ */
/* queue setup and teardown                                            */

static void mq_exit_hctx(struct mq_queue *q, struct mq_hw_ctx *hctx,
			 unsigned int idx, bool initialised)
{
	if (hctx->has_worker) {
		pthread_mutex_lock(&hctx->lock);
		hctx->worker_exit = true;
		pthread_cond_signal(&hctx->worker_cond);
		pthread_mutex_unlock(&hctx->lock);
		pthread_join(hctx->worker, NULL);
	}
	if (initialised && q->tag_set->ops->exit_hctx)
		q->tag_set->ops->exit_hctx(hctx, idx);
	free(hctx->ctxs);
	pthread_cond_destroy(&hctx->worker_cond);
	pthread_cond_destroy(&hctx->idle);
	pthread_mutex_destroy(&hctx->lock);
	free(hctx);
}

static struct mq_hw_ctx *mq_init_hctx(struct mq_queue *q, unsigned int idx)
{
	struct mq_tag_set *set = q->tag_set;
	struct mq_hw_ctx *hctx;
	char name[32];
	int err;

	hctx = calloc(1, sizeof(*hctx));
	if (!hctx)
		return NULL;
	pthread_mutex_init(&hctx->lock, NULL);
	pthread_cond_init(&hctx->idle, NULL);
	pthread_cond_init(&hctx->worker_cond, NULL);
	TAILQ_INIT(&hctx->dispatch);
	hctx->queue = q;
	hctx->queue_num = idx;
	hctx->flags = set->flags;
	hctx->tags = set->tags[idx];
	hctx->run_work.fn = mq_run_work_fn;
	hctx->ctxs = calloc(q->nr_ctx, sizeof(*hctx->ctxs));
	if (!hctx->ctxs)
		goto fail;
	if (set->flags & MQ_F_BLOCKING) {
		err = pthread_create(&hctx->worker, NULL, mq_hctx_worker, hctx);
		if (err) {
			errno = err;
			goto fail;
		}
		hctx->has_worker = true;
		snprintf(name, sizeof(name), "kworker/%u", idx);
		name[15] = '\0'; /* the kernel's limit for thread names */
		pthread_setname_np(hctx->worker, name);
	}
	if (set->ops->init_hctx &&
	    set->ops->init_hctx(hctx, set->driver_data, idx)) {
		mq_exit_hctx(q, hctx, idx, false);
		errno = EIO;
		return NULL;
	}
	return hctx;
fail:
	mq_exit_hctx(q, hctx, idx, false);
	return NULL;
}

struct mq_queue *mq_init_queue(struct mq_tag_set *set, unsigned int nr_ctx,
			       const char *name)
{
	struct mq_queue *q;
	unsigned int i;

	if (!set->tags) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->tag_set = set;
	blk_set_default_limits(&q->limits);
	q->nr_requests = set->queue_depth;
	q->rq_timeout_ns = (uint64_t)set->timeout_ms * 1000000ull;
	q->nr_ctx = nr_ctx ? nr_ctx : MQ_DEFAULT_NR_CTX;
	pthread_mutex_init(&q->freeze_lock, NULL);
	pthread_cond_init(&q->freeze_wq, NULL);
	q->parked_tail = &q->parked_head;
	pthread_mutex_init(&q->requeue_lock, NULL);
	pthread_mutex_init(&q->ioprio_lock, NULL);
	TAILQ_INIT(&q->requeue_list);
	q->requeue_work.fn = mq_requeue_work;
	q->timeout_work.fn = mq_timeout_work;

	q->zone_write_plugging = true;

	q->kblockd = kblockd_create(name);
	q->queue_ctx = calloc(q->nr_ctx, sizeof(*q->queue_ctx));
	q->queue_hw_ctx = calloc(set->nr_hw_queues, sizeof(*q->queue_hw_ctx));
	if (!q->kblockd || !q->queue_ctx || !q->queue_hw_ctx ||
	    disk_alloc_zone_resources(q))
		goto fail;
	for (i = 0; i < set->nr_hw_queues; i++) {
		q->queue_hw_ctx[i] = mq_init_hctx(q, i);
		if (!q->queue_hw_ctx[i])
			goto fail;
		q->nr_hw_queues++;
	}
	/* Map "CPUs" onto hw queues as blk_mq_map_queues does. */
	for (i = 0; i < q->nr_ctx; i++) {
		struct mq_ctx *ctx = &q->queue_ctx[i];
		struct mq_hw_ctx *hctx = q->queue_hw_ctx[i % q->nr_hw_queues];

		pthread_mutex_init(&ctx->lock, NULL);
		TAILQ_INIT(&ctx->rq_list);
		ctx->cpu = i;
		ctx->queue = q;
		ctx->hctx = hctx;
		hctx->ctxs[hctx->nr_ctx++] = ctx;
	}

	pthread_mutex_lock(&set->tag_list_lock);
	TAILQ_INSERT_TAIL(&set->tag_list, q, tag_set_list);
	/* Read without the lock by the tag code (hctx_may_queue). */
	if (++set->nr_queues > 1)
		__atomic_fetch_or(&set->flags, MQ_F_TAG_SHARED,
				  __ATOMIC_RELAXED);
	pthread_mutex_unlock(&set->tag_list_lock);
	return q;

fail : {
	int err = errno ? errno : ENOMEM;

	kblockd_destroy(q->kblockd);
	disk_free_zone_resources(q);
	for (i = 0; i < q->nr_hw_queues; i++)
		mq_exit_hctx(q, q->queue_hw_ctx[i], i, true);
	free(q->queue_hw_ctx);
	free(q->queue_ctx);
	pthread_mutex_destroy(&q->requeue_lock);
	mq_free_ioprio_map(q);
	pthread_cond_destroy(&q->freeze_wq);
	pthread_mutex_destroy(&q->freeze_lock);
	free(q);
	errno = err;
	return NULL;
}
}

void mq_cleanup_queue(struct mq_queue *q)
{
	struct bio *bio, *parked;
	struct mq_tag_set *set;
	struct mq_hw_ctx *hctx;
	unsigned int i;

	if (!q)
		return;
	set = q->tag_set;
	/*
	 * Dying: from now on a bio fails rather than park behind the freeze
	 * below, which nothing would ever lift; bios parked by an earlier
	 * freeze fail too, and sleeping allocators give up.
	 */
	pthread_mutex_lock(&q->freeze_lock);
	atomic_store(&q->dying, true);
	parked = q->parked_head;
	q->parked_head = NULL;
	q->parked_tail = &q->parked_head;
	pthread_cond_broadcast(&q->freeze_wq);
	pthread_mutex_unlock(&q->freeze_lock);
	while ((bio = parked)) {
		parked = bio->bi_next;
		bio->bi_next = NULL;
		mq_bio_dead(bio);
	}
	/* Let everything in flight finish, then stop the machinery. */
	mq_freeze_queue(q);
	mq_quiesce_queue(q);
	while (atomic_load(&q->q_exiting))
		sched_yield();
	kblockd_destroy(q->kblockd);
	disk_free_zone_resources(q);
	queue_for_each_hw_ctx (q, hctx, i) {
		mq_unmark_restart(hctx);
		/* Its share of the set goes back to the other queues. */
		mq_bios_got_tags(mq_tag_idle(hctx->tags, hctx));
	}
	mq_sched_free_tags(q);
	for (i = 0; i < q->nr_hw_queues; i++)
		mq_exit_hctx(q, q->queue_hw_ctx[i], i, true);
	for (i = 0; i < q->nr_ctx; i++)
		pthread_mutex_destroy(&q->queue_ctx[i].lock);

	pthread_mutex_lock(&set->tag_list_lock);
	TAILQ_REMOVE(&set->tag_list, q, tag_set_list);
	if (--set->nr_queues <= 1)
		__atomic_fetch_and(&set->flags, ~MQ_F_TAG_SHARED,
				   __ATOMIC_RELAXED);
	pthread_mutex_unlock(&set->tag_list_lock);

	free(q->queue_hw_ctx);
	free(q->queue_ctx);
	pthread_mutex_destroy(&q->requeue_lock);
	mq_free_ioprio_map(q);
	pthread_cond_destroy(&q->freeze_wq);
	pthread_mutex_destroy(&q->freeze_lock);
	free(q);
}
