/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Attaching and switching elevators, after block/blk-mq-sched.c and
 * elevator_switch_mq(): scheduler tags sized as Linux sizes them, and a
 * switch that freezes, quiesces, swaps, then lets everything go again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blk-mq-internal.h"
#include "log.h"
#include "elevator.h"

void mq_sched_free_tags(struct mq_queue *q)
{
	struct mq_hw_ctx *hctx;
	struct elevator_queue *e = q->elevator;
	unsigned int i;

	if (e) {
		queue_for_each_hw_ctx (q, hctx, i)
			if (e->type->ops.exit_hctx)
				e->type->ops.exit_hctx(hctx, i);
		if (e->type->ops.exit_sched)
			e->type->ops.exit_sched(e);
		free(e);
		q->elevator = NULL;
	}
	queue_for_each_hw_ctx (q, hctx, i) {
		mq_free_tags(hctx->sched_tags);
		hctx->sched_tags = NULL;
		/* The requests it hashed are gone with the elevator. */
		memset(&hctx->merge, 0, sizeof(hctx->merge));
	}
	q->nr_requests = q->tag_set->queue_depth;
}

/* Queue frozen and quiesced, no elevator attached. */
static int mq_init_sched(struct mq_queue *q, const struct elevator_type *et)
{
	struct mq_tag_set *set = q->tag_set;
	struct mq_hw_ctx *hctx;
	unsigned int i, depth;
	int err;

	/* 2 * min(queue depth, 128), as blk_mq_init_sched does. */
	depth = 2 * (set->queue_depth < 128 ? set->queue_depth : 128);
	queue_for_each_hw_ctx (q, hctx, i) {
		hctx->sched_tags =
			mq_alloc_tags(set, i, depth, set->reserved_tags);
		if (!hctx->sched_tags) {
			mq_sched_free_tags(q);
			return ENOMEM;
		}
	}
	q->nr_requests = depth;

	q->elevator = calloc(1, sizeof(*q->elevator));
	if (!q->elevator) {
		mq_sched_free_tags(q);
		return ENOMEM;
	}
	q->elevator->type = et;
	if (et->ops.init_sched) {
		err = et->ops.init_sched(q, (struct elevator_type *)et);
		if (err) {
			free(q->elevator);
			q->elevator = NULL;
			mq_sched_free_tags(q);
			return err;
		}
	}
	queue_for_each_hw_ctx (q, hctx, i) {
		if (et->ops.init_hctx && (err = et->ops.init_hctx(hctx, i))) {
			while (i-- > 0)
				if (et->ops.exit_hctx)
					et->ops.exit_hctx(q->queue_hw_ctx[i],
							  i);
			if (et->ops.exit_sched)
				et->ops.exit_sched(q->elevator);
			free(q->elevator);
			q->elevator = NULL;
			mq_sched_free_tags(q);
			return err;
		}
	}
	return 0;
}

int elevator_switch(struct mq_queue *q, const struct elevator_type *e)
{
	return elevator_switch_timeout(q, e, 0);
}

int elevator_switch_timeout(struct mq_queue *q, const struct elevator_type *e,
			    unsigned int timeout_ms)
{
	int err = 0;

	if (e && (q->tag_set->flags & MQ_F_NO_SCHED))
		return EINVAL;
	if (!e && !q->elevator)
		return 0;

	if (mq_freeze_queue_timeout(q, timeout_ms))
		return EBUSY;
	mq_quiesce_queue(q);
	mq_sched_free_tags(q);
	if (e) {
		err = mq_init_sched(q, e);
		if (err)
			pr_err("%s: cannot attach %s: %s", q->name,
			       e->elevator_name, mq_strerror(err));
	}
	mq_unquiesce_queue(q);
	mq_unfreeze_queue(q);
	return err;
}

/*
 * queue/nr_requests, after blk_mq_update_nr_requests(): the tags a bio may
 * take on each hardware queue (the scheduler tags while an elevator is
 * attached), then the elevator's depth_updated so that the depths it
 * derives from nr_requests follow.  Our tag maps are not reallocated, so
 * nr runs from 1 to the depth they were allocated with (Linux can grow the
 * scheduler tags further).  No freeze: bios read the depth when they ask
 * for a tag, and the hooks store what they derive atomically.  Callers
 * serialize this with elevator_switch().
 */
int mq_update_nr_requests(struct mq_queue *q, unsigned int nr)
{
	struct elevator_queue *e = q->elevator;
	struct mq_hw_ctx *hctx;
	unsigned int i;

	if (!nr)
		return EINVAL;
	queue_for_each_hw_ctx (q, hctx, i) {
		struct mq_tags *tags = e ? hctx->sched_tags : hctx->tags;

		if (!tags || nr > tags->nr_tags)
			return EINVAL;
	}
	if (nr == __atomic_load_n(&q->nr_requests, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&q->nr_requests, nr, __ATOMIC_RELAXED);
	if (e && e->type->ops.depth_updated)
		queue_for_each_hw_ctx (q, hctx, i)
			e->type->ops.depth_updated(hctx);
	return 0;
}

/* The largest value mq_update_nr_requests() takes. */
unsigned int mq_max_nr_requests(struct mq_queue *q)
{
	struct mq_hw_ctx *hctx;
	unsigned int i, max = UINT32_MAX;

	queue_for_each_hw_ctx (q, hctx, i) {
		struct mq_tags *tags =
			q->elevator ? hctx->sched_tags : hctx->tags;

		if (tags && tags->nr_tags < max)
			max = tags->nr_tags;
	}
	return max == UINT32_MAX ? 0 : max;
}
