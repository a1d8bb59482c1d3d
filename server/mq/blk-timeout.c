/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Request timeouts, after block/blk-timeout.c: one delayed work per queue
 * armed at the earliest deadline; when it fires it calls ops->timeout for
 * every started request past its deadline.
 */
#include "blk-mq-internal.h"
#include "log.h"

void mq_add_timer(struct request *rq)
{
	struct mq_queue *q = rq->q;
	uint64_t deadline = rq->io_start_time_ns + q->rq_timeout_ns;

	atomic_store(&rq->deadline_ns, deadline);
	/*
	 * Deadlines grow with time, so the work is usually armed already for
	 * an earlier one.  The work re-arms itself for the next deadline.
	 */
	if (!q->timeout_work.pending)
		kblockd_schedule(q->kblockd, &q->timeout_work,
				 q->rq_timeout_ns);
}

struct timeout_scan {
	struct mq_queue *q;
	uint64_t now;
	uint64_t next;
};

static bool mq_check_expired(struct request *rq, void *data)
{
	struct timeout_scan *scan = data;
	const struct mq_ops *ops = scan->q->tag_set->ops;
	uint64_t deadline;

	if (rq->q != scan->q || atomic_load(&rq->state) != MQ_RQ_IN_FLIGHT)
		return true;
	deadline = atomic_load(&rq->deadline_ns);
	if (deadline > scan->now) {
		if (!scan->next || deadline < scan->next)
			scan->next = deadline;
		return true;
	}
	/*
	 * Once per expiry, as blk_mq_req_expired: a request whose handler
	 * said DONE stays marked until it completes or starts again, so a
	 * later scan (another request's deadline) does not time it out a
	 * second time while the driver finishes it.
	 */
	if (atomic_fetch_or(&rq->rq_flags, RQF_TIMED_OUT) & RQF_TIMED_OUT)
		return true;
	if (!ops->timeout || ops->timeout(rq) == MQ_EH_RESET_TIMER) {
		deadline = mq_now_ns() + scan->q->rq_timeout_ns;
		atomic_store(&rq->deadline_ns, deadline);
		/* A new period: it may time out again (blk_add_timer). */
		atomic_fetch_and(&rq->rq_flags, ~RQF_TIMED_OUT);
		if (!scan->next || deadline < scan->next)
			scan->next = deadline;
	}
	return true;
}

void mq_timeout_work(struct mq_delayed_work *work)
{
	struct mq_queue *q = container_of(work, struct mq_queue, timeout_work);
	struct timeout_scan scan = {.q = q, .now = mq_now_ns()};
	struct mq_hw_ctx *hctx;
	unsigned int i;

	queue_for_each_hw_ctx (q, hctx, i)
		mq_tags_busy_iter(hctx->tags, mq_check_expired, &scan);
	if (scan.next)
		kblockd_schedule(q->kblockd, &q->timeout_work,
				 scan.next > scan.now ? scan.next - scan.now
						      : 0);
}
