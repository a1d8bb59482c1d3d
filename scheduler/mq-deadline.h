/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mq-deadline, after block/mq-deadline.c: shared between its files.
 *
 * One difference from Linux in shape: Linux keeps one deadline_data per
 * queue and dispatches from one hardware queue (QUEUE_FLAG_SQ_SCHED).  Our
 * core feeds a request only to the driver of the hardware queue whose
 * dispatch_request returned it, so the run-time state (trees, FIFOs,
 * batching) lives per hardware queue, next to that hctx's scheduler tags;
 * the tunables and the zone write locks are per queue.  With one hardware
 * queue, the common case for a scheduler, the two are the same.
 */
#ifndef MQBLK_MQ_DEADLINE_H
#define MQBLK_MQ_DEADLINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/queue.h>

#include "../server/mq/elevator.h"
#include "mq-deadline-rbtree.h"

enum dd_data_dir {
	DD_READ = 0,
	DD_WRITE = 1,
};

enum { DD_DIR_COUNT = 2 };

enum dd_prio {
	DD_RT_PRIO = 0,
	DD_BE_PRIO = 1,
	DD_IDLE_PRIO = 2,
	DD_PRIO_MAX = 2,
};

enum { DD_PRIO_COUNT = 3 };

/*
 * An I/O priority's class, as ioprio_class_to_prio[] maps it: no class
 * (IOPRIO_CLASS_NONE) is best effort.  Levels within a class are not
 * told apart, as in Linux.
 */
static inline enum dd_prio dd_ioprio_to_prio(uint16_t ioprio)
{
	switch (IOPRIO_PRIO_CLASS(ioprio)) {
	case IOPRIO_CLASS_RT:
		return DD_RT_PRIO;
	case IOPRIO_CLASS_IDLE:
		return DD_IDLE_PRIO;
	default:
		return DD_BE_PRIO;
	}
}

/* Defaults, as Linux has them. */
#define DD_READ_EXPIRE_MS	500
#define DD_WRITE_EXPIRE_MS	5000
#define DD_PRIO_AGING_EXPIRE_MS 10000
#define DD_WRITES_STARVED	2
#define DD_FIFO_BATCH		16

/*
 * Counters per priority.  inserted, merged, dispatched and bio_merged are
 * written under the hctx lock; completed from completion context.  Like
 * Linux's they may wrap: only differences matter.
 */
struct dd_io_stats {
	uint32_t inserted;   /* requests taken in (a requeue is not new) */
	uint32_t merged;     /* requests merged into another one */
	uint32_t dispatched; /* handed to the driver (requeues count again) */
	uint32_t bio_merged; /* bios merged into a queued request */
	atomic_uint completed;
};

struct dd_per_prio {
	struct rq_list dispatch; /* inserted at the head: served first */
	struct dd_rb_root sort_list[DD_DIR_COUNT];
	struct rq_list fifo_list[DD_DIR_COUNT];
	uint64_t latest_pos[DD_DIR_COUNT]; /* last dispatched position */
	struct dd_io_stats stats;
};

/* Per request, one per scheduler tag; rq->elv_priv[0] points to it. */
struct dd_rq {
	struct dd_rb_node rb;	/* in a sort_list */
	LIST_ENTRY(dd_rq) zone; /* deadline_data's locked zones */
	struct request *rq;
	/*
	 * A copy of the request's start sector while it is sorted, so that
	 * searches need not visit the requests.
	 */
	uint64_t rb_key;
	uint64_t zone_no;   /* while DD_RQ_ZONE_LOCKED */
	uint64_t insert_ns; /* when it was inserted */
	uint8_t prio;	    /* enum dd_prio */
	uint8_t flags;	    /* DD_RQ_* */
};

#define DD_RQ_INSERTED	  (1u << 0) /* counted in stats.inserted */
#define DD_RQ_SORTED	  (1u << 1) /* on a sort_list and a FIFO */
#define DD_RQ_ZONE_LOCKED (1u << 3) /* holds its zone's write lock */

#define DD_HASH_BITS 6 /* the zone lock hash */
#define DD_HASH_SIZE (1u << DD_HASH_BITS)

LIST_HEAD(dd_rq_hlist, dd_rq);

/* The run-time state of one hardware queue: Linux's deadline_data. */
struct dd_hctx {
	pthread_mutex_t lock;
	struct deadline_data *dd;
	struct mq_hw_ctx *hctx;
	/* Requests that bypass scheduling: flushes, driver-owned ones. */
	struct rq_list bypass;
	struct dd_per_prio per_prio[DD_PRIO_COUNT];
	enum dd_data_dir last_dir;
	unsigned int batching; /* number of sequential requests made */
	unsigned int starved;  /* times reads have starved writes */
	atomic_uint nr_queued; /* everything above, for has_work */
	unsigned int nr_rqs;
	struct dd_rq *rqs; /* by scheduler tag */
};

/* Per queue: the tunables (Linux units) and the zone write locks. */
struct deadline_data {
	struct mq_queue *q;
	_Atomic int fifo_expire[DD_DIR_COUNT]; /* ms */
	_Atomic int fifo_batch;
	_Atomic int writes_starved;
	_Atomic int front_merges;
	_Atomic int prio_aging_expire; /* ms */
	atomic_uint async_depth;
	/* Sequential zones with a write in flight, hashed by zone number. */
	pthread_mutex_t zone_lock;
	struct dd_rq_hlist zone_hash[DD_HASH_SIZE];
};

static inline enum dd_data_dir dd_rq_dir(const struct request *rq)
{
	return op_is_write(req_op(rq)) ? DD_WRITE : DD_READ;
}

static inline struct dd_rq *dd_rq_of(struct dd_hctx *dh, struct request *rq)
{
	return &dh->rqs[rq->internal_tag];
}

static inline struct request *dd_rb_rq(struct dd_rb_node *node)
{
	return node ? dd_rb_entry(node, struct dd_rq, rb)->rq : NULL;
}

static inline uint64_t dd_rb_key(struct dd_rb_node *node)
{
	return dd_rb_entry(node, struct dd_rq, rb)->rb_key;
}

static inline uint64_t dd_ms_to_ns(int ms)
{
	return (uint64_t)(ms > 0 ? ms : 0) * 1000000ull;
}

/* mq-deadline.c */
void deadline_remove_request(struct dd_hctx *dh, struct request *rq);
void deadline_add_rq_rb(struct dd_hctx *dh, struct request *rq);
struct request *deadline_latter_request(struct dd_hctx *dh, struct request *rq);
struct request *deadline_earlier_request(struct dd_hctx *dh,
					 struct request *rq);
void dd_depth_updated(struct mq_hw_ctx *hctx);

/* mq-deadline-merge.c: the elevator's part of merging (see blk-mq.h). */
bool dd_bio_merge(struct mq_hw_ctx *hctx, struct bio *bio);
enum elv_merge dd_request_merge(struct mq_hw_ctx *hctx, struct request **req,
				struct bio *bio);
void dd_request_merged(struct mq_queue *q, struct request *rq,
		       enum elv_merge type);
void dd_merged_requests(struct mq_queue *q, struct request *req,
			struct request *next);
struct request *dd_next_request(struct mq_queue *q, struct request *rq);
struct request *dd_former_request(struct mq_queue *q, struct request *rq);

/* mq-deadline-zoned.c: zone write locking for host-managed queues. */
bool dd_queue_is_zoned(const struct mq_queue *q);
uint64_t dd_zone_no(const struct mq_queue *q, uint64_t sector);
bool dd_rq_is_seq_zoned_write(const struct request *rq);
/* The caller holds dd->zone_lock. */
bool dd_can_dispatch_to_zone(struct deadline_data *dd, struct request *rq);
void dd_zone_write_lock(struct deadline_data *dd, struct dd_rq *drq);
void dd_zone_write_unlock(struct deadline_data *dd, struct dd_rq *drq);

/* mq-deadline-sysfs.c */
extern const struct elv_fs_entry deadline_attrs[];

/*
 * For tests and tools: the counters of hardware queue hctx_idx, summed
 * into out[DD_PRIO_COUNT].  Returns 0, or ENOENT if mq-deadline is not
 * attached to q.
 */
struct dd_stats {
	uint32_t inserted;
	uint32_t merged;
	uint32_t dispatched;
	uint32_t bio_merged;
	uint32_t completed;
	uint32_t queued; /* inserted - completed: Linux's dd_queued() */
};
int dd_get_stats(struct mq_queue *q, unsigned int hctx_idx,
		 struct dd_stats out[DD_PRIO_COUNT]);

extern const struct elevator_type mq_deadline_elv;

#endif
