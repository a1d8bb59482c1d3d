/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The elevator interface, after include/linux/elevator.h.  The request
 * core calls these hooks; schedulers see nothing of the core but this
 * interface and the merge helpers in blk-mq.h.  "none" is the absence of
 * an elevator (q->elevator == NULL), as in Linux.  The core owns the
 * interface (Linux's block/elevator.h); the schedulers and their registry
 * live above it, in scheduler/.
 */
#ifndef MQBLK_ELEVATOR_H
#define MQBLK_ELEVATOR_H

#include <stddef.h>
#include <sys/types.h>

#include "blk-mq.h"

struct elevator_type;

struct elevator_mq_ops {
	int (*init_sched)(struct mq_queue *q, struct elevator_type *e);
	void (*exit_sched)(struct elevator_queue *eq);
	int (*init_hctx)(struct mq_hw_ctx *hctx, unsigned int hctx_idx);
	void (*exit_hctx)(struct mq_hw_ctx *hctx, unsigned int hctx_idx);
	/* q->nr_requests changed (mq_update_nr_requests): recompute depths. */
	void (*depth_updated)(struct mq_hw_ctx *hctx);

	/* May bio join rq?  mq_rq_merge_ok() asks after its own rules. */
	bool (*allow_merge)(struct mq_queue *q, struct request *rq,
			    struct bio *bio);
	/*
	 * Try to merge bio into a queued request; true if it did.  Elevators
	 * that keep their requests sorted call mq_sched_try_merge() under
	 * their lock; the hooks below are what it calls back, with that lock
	 * held (see blk-mq.h).
	 */
	bool (*bio_merge)(struct mq_hw_ctx *hctx, struct bio *bio);
	/*
	 * The elevator's own lookup for a request bio can join, after the
	 * core's last merge and back-merge hash found none: set *rq and say
	 * on which side, or ELEVATOR_NO_MERGE.
	 */
	enum elv_merge (*request_merge)(struct mq_hw_ctx *hctx,
					struct request **rq, struct bio *bio);
	/* A bio joined rq on side type: reposition rq if its start moved. */
	void (*request_merged)(struct mq_queue *q, struct request *rq,
			       enum elv_merge type);
	/*
	 * next was appended to rq and is now empty: take next off the
	 * elevator's lists (the core frees it once the lock is dropped).
	 */
	void (*requests_merged)(struct mq_queue *q, struct request *rq,
				struct request *next);
	/* rq's neighbours in sector order among the queued requests. */
	struct request *(*next_request)(struct mq_queue *q, struct request *rq);
	struct request *(*former_request)(struct mq_queue *q,
					  struct request *rq);
	/*
	 * Shrink *depth, the scheduler tags bio may use; bio is not queued
	 * yet, and its op, flags and submitter are what to look at.
	 */
	void (*limit_depth)(struct mq_hw_ctx *hctx, const struct bio *bio,
			    unsigned int *depth);
	void (*prepare_request)(struct request *rq);
	void (*finish_request)(struct request *rq);
	void (*insert_requests)(struct mq_hw_ctx *hctx, struct rq_list *list,
				bool at_head);
	struct request *(*dispatch_request)(struct mq_hw_ctx *hctx);
	bool (*has_work)(struct mq_hw_ctx *hctx);
	void (*completed_request)(struct request *rq, uint64_t now_ns);
	void (*requeue_request)(struct request *rq);
};

/* A tunable under queue/iosched/. */
struct elv_fs_entry {
	const char *name;
	ssize_t (*show)(struct elevator_queue *eq, char *buf, size_t len);
	int (*store)(struct elevator_queue *eq, const char *value);
};

struct elevator_type {
	const char *elevator_name;
	struct elevator_mq_ops ops;
	const struct elv_fs_entry *elevator_attrs; /* ends with { NULL } */
};

struct elevator_queue {
	const struct elevator_type *type;
	void *elevator_data;
};

/* The elevators compiled in, written once (scheduler/registry.c). */
extern const struct elevator_type *const mq_elevators[];

const struct elevator_type *elevator_find(const char *name);
/* "none" when no elevator is attached. */
const char *mq_elevator_name(struct mq_queue *q);

/*
 * Attach e (NULL for none) to a live queue: freeze, quiesce, drain, swap,
 * unquiesce, unfreeze.  No request is failed or lost.  Returns 0 or a
 * positive errno (EINVAL when the tag set has MQ_F_NO_SCHED).
 */
int elevator_switch(struct mq_queue *q, const struct elevator_type *e);
/*
 * The same, giving up when the queue has not drained within timeout_ms
 * (0: no limit): EBUSY, and the old elevator stays.
 */
int elevator_switch_timeout(struct mq_queue *q, const struct elevator_type *e,
			    unsigned int timeout_ms);

#endif
