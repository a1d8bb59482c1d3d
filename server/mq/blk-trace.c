/* SPDX-License-Identifier: GPL-2.0 */
/* Trace points of the request core: see blk-trace.h. */
#include <sched.h>

#include "blk-trace.h"

/*
 * A trace point counts itself in q->blk_trace_readers before it loads the
 * sink, and blk_trace_set(NULL) clears the sink before it reads the
 * count (both sequentially consistent): either the trace point sees no
 * sink, or the remover sees it inside and waits for it to leave.
 */
static struct blk_trace *trace_enter(struct mq_queue *q)
{
	struct blk_trace *bt;

	atomic_fetch_add(&q->blk_trace_readers, 1);
	bt = atomic_load(&q->blk_trace);
	if (!bt)
		atomic_fetch_sub(&q->blk_trace_readers, 1);
	return bt;
}

static void trace_exit(struct mq_queue *q)
{
	atomic_fetch_sub_explicit(&q->blk_trace_readers, 1,
				  memory_order_release);
}

void __blk_trace_bio(struct mq_queue *q, struct bio *bio, unsigned int hctx,
		     enum blk_trace_act act)
{
	struct blk_trace *bt = trace_enter(q);
	struct blk_trace_event ev = {
		.act = act,
		.op = bio->bi_op,
		.flags = bio->bi_flags,
		.time_ns = mq_now_ns(),
		.sector = bio->bi_sector,
		.bytes = bio->bi_size,
		.pid = bio->bi_submitter,
		.hctx = hctx,
	};

	if (!bt)
		return;
	bt->event(bt, &ev);
	trace_exit(q);
}

void __blk_trace_rq(struct request *rq, enum blk_trace_act act, int error)
{
	struct blk_trace *bt = trace_enter(rq->q);
	struct blk_trace_event ev = {
		.act = act,
		.op = rq->op,
		.flags = rq->cmd_flags,
		.time_ns = mq_now_ns(),
		.sector = blk_rq_pos(rq),
		.bytes = blk_rq_bytes(rq),
		.pid = rq->submitter,
		.hctx = rq->mq_hctx->queue_num,
		.error = error,
	};

	/*
	 * By completion mq_update_request may have advanced the request;
	 * report what was issued, as blkparse pairs C with D by sector.
	 */
	if (act == BLK_TRACE_COMPLETE && rq->stats_bytes >= rq->__data_len) {
		uint32_t done = rq->stats_bytes - rq->__data_len;

		ev.sector -= done >> SECTOR_SHIFT;
		ev.bytes = rq->stats_bytes;
	}
	if (!bt)
		return;
	bt->event(bt, &ev);
	trace_exit(rq->q);
}

void blk_trace_set(struct mq_queue *q, struct blk_trace *bt)
{
	atomic_store(&q->blk_trace, bt);
	if (bt)
		return;
	while (atomic_load(&q->blk_trace_readers))
		sched_yield(); /* a record being written: microseconds */
}
