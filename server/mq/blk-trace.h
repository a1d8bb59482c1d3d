/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace points of the request core, after kernel/trace/blktrace.c: the
 * core reports Q, M, F, G, I, D, C and R events to a sink the control
 * plane installs on a queue.  With no sink a trace point costs one relaxed
 * load and a branch.
 */
#ifndef MQBLK_BLK_TRACE_H
#define MQBLK_BLK_TRACE_H

#include "blk-mq.h"

/* The letters blkparse prints. */
enum blk_trace_act {
	BLK_TRACE_QUEUE,      /* Q: a bio entered the queue */
	BLK_TRACE_BACKMERGE,  /* M */
	BLK_TRACE_FRONTMERGE, /* F */
	BLK_TRACE_GETRQ,      /* G: a request was made for a bio */
	BLK_TRACE_INSERT,     /* I: handed to the scheduler or ctx list */
	BLK_TRACE_ISSUE,      /* D: about to be passed to queue_rq */
	BLK_TRACE_COMPLETE,   /* C */
	BLK_TRACE_REQUEUE,    /* R: requeued, or refused by the driver */
	BLK_TRACE_PLUG,	      /* P: never reported */
	BLK_TRACE_UNPLUG,     /* U: likewise */
};

struct blk_trace_event {
	enum blk_trace_act act;
	enum req_op op;
	unsigned int flags; /* REQ_* */
	uint64_t time_ns;   /* mq_now_ns() */
	uint64_t sector;
	uint32_t bytes;
	uint64_t pid;	   /* the client id */
	unsigned int hctx; /* hw queue number */
	int error;	   /* positive errno, C only */
};

/* A sink: called from any thread, concurrently for different hctxs. */
struct blk_trace {
	void (*event)(struct blk_trace *bt, const struct blk_trace_event *ev);
};

void __blk_trace_bio(struct mq_queue *q, struct bio *bio, unsigned int hctx,
		     enum blk_trace_act act);
void __blk_trace_rq(struct request *rq, enum blk_trace_act act, int error);

static inline void blk_trace_bio(struct mq_queue *q, struct bio *bio,
				 unsigned int hctx, enum blk_trace_act act)
{
	if (__builtin_expect(atomic_load_explicit(&q->blk_trace,
						  memory_order_relaxed) != NULL,
			     0))
		__blk_trace_bio(q, bio, hctx, act);
}

static inline void blk_trace_rq(struct request *rq, enum blk_trace_act act,
				int error)
{
	if (__builtin_expect(atomic_load_explicit(&rq->q->blk_trace,
						  memory_order_relaxed) != NULL,
			     0))
		__blk_trace_rq(rq, act, error);
}

/*
 * Install bt on q (NULL removes it).  Removal waits only for the threads
 * inside a trace point (as Linux's synchronize_rcu does), never for
 * requests: when it returns no thread is inside the old sink, even with
 * requests stuck in the queue.
 */
void blk_trace_set(struct mq_queue *q, struct blk_trace *bt);

#endif
