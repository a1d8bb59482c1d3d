/* SPDX-License-Identifier: GPL-2.0 */
/* Trace points of the request core: see blk-trace.h. */
#include "blk-trace.h"

void __blk_trace_bio(struct blk_trace *bt, struct bio *bio, unsigned int hctx,
		     enum blk_trace_act act)
{
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

	bt->event(bt, &ev);
}

void __blk_trace_rq(struct blk_trace *bt, struct request *rq,
		    enum blk_trace_act act, int error)
{
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
	bt->event(bt, &ev);
}

void blk_trace_set(struct mq_queue *q, struct blk_trace *bt)
{
	atomic_store(&q->blk_trace, bt);
	if (bt)
		return;
	/* Every trace point runs inside a bio's q_usage or a dispatch run. */
	mq_freeze_queue(q);
	mq_quiesce_queue(q);
	mq_unquiesce_queue(q);
	mq_unfreeze_queue(q);
}
