/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BFQ, the Budget Fair Queueing I/O scheduler: the elevator and a window
 * on its state for tests, benchmarks and the control plane.  The
 * tunables are documented in bfq-attrs.c.
 */
#ifndef MQBLK_BFQ_H
#define MQBLK_BFQ_H

#include <stdbool.h>
#include <stdint.h>

#include "../../server/mq/elevator.h"

extern const struct elevator_type bfq_elv;

struct bfq_client_stats {
	unsigned int weight;	  /* in effect: orig_weight * wr_coeff */
	unsigned int orig_weight; /* configured */
	unsigned int wr_coeff;	  /* > 1 while weight raised */
	bool busy;		  /* has requests, or kept on the tree */
	bool in_service;
	bool idling;	  /* in service, device idled for its next request */
	int budget;	  /* sectors */
	int service;	  /* sectors charged in the current slot */
	uint64_t charged; /* service charged so far: async x3, slow by time */
	unsigned int ioprio_class; /* IOPRIO_CLASS_RT, _BE or _IDLE */
	bool has_short_ttime;
	bool IO_bound;
	bool in_large_burst;
	bool soft_rt;		     /* raised as soft real-time */
	unsigned long ttime_samples; /* think time: weight of the samples */
	uint64_t ttime_mean;	     /* think time: mean, ns */
	uint64_t sectors;	     /* dispatched so far */
	uint64_t requests;	     /* dispatched so far */
	char group[32];		     /* "" for the root group */
	bool has_waker;		     /* a waker queue was detected */
	uint64_t waker_client;	     /* its client (0: a shared queue) */
	bool waker_sync;	     /* the waker is a sync queue */
	unsigned int inject_limit;   /* see docs/schedulers.md */
	uint64_t last_serv_time_ns;  /* injection baseline, 0: none */
	/* queue merging: clients sharing one queue see the same owner */
	uint64_t queue_owner; /* the client that created the queue */
	bool shared;	      /* merged: shared by several clients */
	int clients;	      /* clients holding the queue */
};

/*
 * The sync (or async) queue of a client on hw queue hctx.  Returns 0, or
 * ENOENT if bfq is not attached or the client has no such queue.
 */
int bfq_client_stats(struct mq_queue *q, unsigned int hctx, uint64_t client,
		     bool sync, struct bfq_client_stats *st);

struct bfq_stats {
	uint64_t peak_rate;   /* sectors per second, estimated */
	int max_budget;	      /* sectors, in effect */
	int hw_tag;	      /* -1 unknown, 0/1: internal queueing seen */
	int budgets_assigned; /* towards bfq_stats_min_budgets (194) */
	unsigned int busy_queues;
	unsigned int wr_busy_queues;
	int rq_in_driver;
	unsigned int queued;
	bool in_service;	    /* a queue is in service */
	uint64_t in_service_client; /* its client, 0 for a shared queue */
	bool idling;
	/* in service with nothing queued, its requests in the driver: the
	 * others wait for them (or are injected) */
	bool plugged;
	unsigned int nr_clients;
	unsigned int nr_groups; /* besides the root */
};

int bfq_stats(struct mq_queue *q, unsigned int hctx, struct bfq_stats *st);

/*
 * Tests: every bfq instance of q reads *clock (ns, only ever increasing)
 * instead of the monotonic clock, from bfq's present time on; NULL goes
 * back to the monotonic clock.  Idle slices still arm real delayed runs
 * of the queue, which find the deadline passed once *clock has moved.
 * Returns 0, or ENOENT if bfq is not attached.
 */
int bfq_set_clock(struct mq_queue *q, const _Atomic uint64_t *clock);

#endif
