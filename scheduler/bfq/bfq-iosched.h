/* SPDX-License-Identifier: GPL-2.0 */
/*
 * BFQ's internal header, after block/bfq-iosched.h.
 *
 * Mapping to Linux:
 * - a "process" (io_context / bfq_io_cq) is a client: rq->submitter, the
 *   NBD connection by default.  Each client has a sync and an async
 *   bfq_queue; async queues are shared per (group, weight) as Linux
 *   shares them per (cgroup, ioprio).
 * - a cgroup is a named group; the elevator tunables "groups" and
 *   "group_map" define groups, their weights, and which clients go where.
 * - time is nanoseconds from mq_now_ns(), shifted so that 0 is far in the
 *   past (Linux's "smallest from now"); jiffies become ns.
 * - the idle slice timer is a delayed run of the hw queue
 *   (mq_delay_run_hw_queue); the dispatch hook fires the timer's work when
 *   it finds the deadline passed.
 * - there is one scheduler instance per hw queue (Linux shares one per
 *   request queue); tunables apply to all of them.
 * - the heuristics follow Linux 6.6 (docs/schedulers.md lists them).
 * - I/O priority classes (RT, BE, IDLE) from rq->ioprio.
 * - queue merging of cooperating clients (EQM) as in 6.6: bfq-merge.c.
 * - injection while idling as in 6.6: the client's own async I/O, its
 *   waker's, the queue it wakes, else (on flash, within one group)
 *   any queue up to inject_limit.
 * - no idling while the request queue is frozen (scheduler switch,
 *   teardown): no request can arrive, as when a process has exited.
 * - the queue is run again on completion only when dispatch refused work
 *   (bfqd->stalled), not on every completion that empties the driver.
 */
#ifndef MQBLK_BFQ_IOSCHED_H
#define MQBLK_BFQ_IOSCHED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "../../server/mq/elevator.h"
#include "bfq-avl.h"

#define NSEC_PER_USEC 1000ull
#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_SEC  1000000000ull

#define BFQ_MIN_WEIGHT		    1
#define BFQ_MAX_WEIGHT		    1000
#define BFQ_WEIGHT_CONVERSION_COEFF 10
/* A client without a configured weight: ioprio best-effort 4, as Linux. */
#define BFQ_DEFAULT_QUEUE_IOPRIO 4
#define BFQ_IOPRIO_BE_NR	 8
#define BFQ_DEFAULT_QUEUE_WEIGHT                                               \
	((BFQ_IOPRIO_BE_NR - BFQ_DEFAULT_QUEUE_IOPRIO) *                       \
	 BFQ_WEIGHT_CONVERSION_COEFF)
#define BFQ_DEFAULT_GRP_WEIGHT	 100
#define BFQ_SOFTRT_WEIGHT_FACTOR 100

#define BFQ_GROUP_NAME_MAX 32
/* Entities from a queue up: the queue and its group (groups do not nest). */
#define BFQ_MAX_DEPTH	  2
#define BFQ_MAP_VALUE_MAX 64

/* "Far in the past": bfq times start this far after 0. */
#define BFQ_TIME_ORIGIN (1000ull * NSEC_PER_SEC)

struct bfq_data;
struct bfq_queue;
struct bfq_group;
struct bfq_io_cq;

/* ------------------------------------------------------------------ */
/* B-WF2Q+ (bfq-wf2q.c)                                                */

struct bfq_service_tree {
	struct bfq_avl_root active; /* by finish, augmented with min_start */
	struct bfq_avl_root idle;   /* by finish */
	struct bfq_entity *first_idle, *last_idle;
	uint64_t vtime;
	unsigned long wsum;
};

/* I/O priority classes, each its own service tree: RT, BE, IDLE. */
#define BFQ_IOPRIO_CLASSES 3
/* The idle class gets the device at least this often, if it waits. */
#define BFQ_CL_IDLE_TIMEOUT (200 * NSEC_PER_MSEC)

struct bfq_sched_data {
	struct bfq_entity *in_service_entity;
	struct bfq_entity *next_in_service;
	/* by class: IOPRIO_CLASS_RT - 1, ..._BE - 1, ..._IDLE - 1 */
	struct bfq_service_tree service_tree[BFQ_IOPRIO_CLASSES];
	uint64_t bfq_class_idle_last_service;
};

struct bfq_entity {
	struct bfq_avl_node rb_node;
	struct bfq_avl_root *tree; /* the tree it is on, or NULL */
	uint64_t seq;		   /* insertion order, breaks finish ties */
	uint64_t tree_finish;	   /* the tree's key: finish when inserted */
	uint64_t finish, start, min_start;
	int service; /* sectors received in the current slot */
	int budget;  /* sectors */
	unsigned int weight, new_weight, orig_weight;
	struct bfq_entity *parent;	      /* NULL: the root group */
	struct bfq_sched_data *sched_data;    /* where it is scheduled */
	struct bfq_sched_data *my_sched_data; /* groups only */
	bool on_st;			      /* on a service tree */
	/* requests that point to it (a group: to its queues, at any depth) */
	int allocated;
	bool prio_changed;
	bool in_groups_with_pending_reqs; /* queues only */
};

#define for_each_entity(entity) for (; entity; entity = (entity)->parent)

/* ------------------------------------------------------------------ */
/* queues, clients, groups                                             */

enum bfqq_expiration {
	BFQQE_TOO_IDLE = 0,
	BFQQE_BUDGET_TIMEOUT,
	BFQQE_BUDGET_EXHAUSTED,
	BFQQE_NO_MORE_REQUESTS,
	BFQQE_PREEMPTED,
};

enum bfqq_state_flags {
	BFQQF_just_created = 0,
	BFQQF_busy,
	BFQQF_wait_request,
	BFQQF_non_blocking_wait_rq,
	BFQQF_fifo_expire,
	BFQQF_has_short_ttime,
	BFQQF_sync,
	BFQQF_IO_bound,
	BFQQF_in_large_burst,
	BFQQF_softrt_update,
	BFQQF_coop,	  /* shared by several clients (merged) */
	BFQQF_split_coop, /* shared and seeky: split at the next request */
};

#define BFQ_BFQQ_FNS(name)                                                     \
	static inline void bfq_mark_bfqq_##name(struct bfq_queue *bfqq)        \
	{                                                                      \
		bfqq->flags |= 1u << BFQQF_##name;                             \
	}                                                                      \
	static inline void bfq_clear_bfqq_##name(struct bfq_queue *bfqq)       \
	{                                                                      \
		bfqq->flags &= ~(1u << BFQQF_##name);                          \
	}                                                                      \
	static inline bool bfq_bfqq_##name(const struct bfq_queue *bfqq)       \
	{                                                                      \
		return bfqq->flags & (1u << BFQQF_##name);                     \
	}

struct bfq_ttime {
	uint64_t last_end_request;
	uint64_t ttime_total;
	unsigned long ttime_samples;
	uint64_t ttime_mean;
};

struct bfq_weight_counter {
	unsigned int weight;
	unsigned int num_active;
	struct bfq_weight_counter *next; /* sorted by weight */
};

TAILQ_HEAD(bfqq_list, bfq_queue);

struct bfq_queue {
	int ref;
	struct bfq_data *bfqd;
	struct bfq_group *bfqg;
	struct bfq_entity entity;
	struct bfq_weight_counter *weight_counter;

	struct bfq_avl_root sort_list; /* queued requests by sector */
	struct request *next_rq;
	int queued[2]; /* async, sync */
	struct rq_list fifo;
	int meta_pending;

	/* IOPRIO_CLASS_RT, _BE or _IDLE: in effect, and from next activation */
	unsigned short ioprio_class, new_ioprio_class;
	unsigned short busy_class; /* counted in busy_in_class[], minus 1 */

	int max_budget;
	uint64_t budget_timeout;
	int dispatched;
	unsigned int flags;

	uint32_t seek_history;
	uint64_t last_request_pos;
	/*
	 * I/O intensity: idle time (empty, nothing in flight) within the
	 * window that started at io_start_time, halved with the window
	 * every 200 ms.
	 */
	uint64_t io_start_time;
	uint64_t tot_idle_time;
	uint64_t client;       /* owning client id; shared async queues: 0 */
	struct bfq_io_cq *bic; /* sync queues: the owner */
	struct bfq_ttime ttime;

	unsigned int wr_coeff;
	uint64_t last_wr_start_finish;
	uint64_t wr_cur_max_time;
	uint64_t soft_rt_next_start;
	uint64_t last_idle_bklogged;
	uint64_t service_from_backlogged;
	uint64_t service_from_wr;
	uint64_t first_IO_time;
	uint64_t wr_start_at_switch_to_srt;

	/* statistics for bfq_client_stats() */
	uint64_t stat_sectors;
	uint64_t stat_requests;
	uint64_t stat_charged; /* service charged: sectors, scaled or timed */

	TAILQ_ENTRY(bfq_queue) all_list;
	TAILQ_ENTRY(bfq_queue) burst_list;
	bool in_burst_list;
	TAILQ_ENTRY(bfq_queue) async_list; /* in bfqg->async_queues */
	bool on_async_list;
	/* on a service tree's active tree: bfqd->active_list */
	TAILQ_ENTRY(bfq_queue) active_node;
	bool on_active_list;

	/*
	 * Waker detection: the queue whose completions this one's I/O
	 * follows (it becomes non-empty within 4 ms of one), confirmed
	 * after three detections within 128 idle slices.  woken_list: the
	 * queues whose waker this one is (weak pointers both ways, cut
	 * when a queue is freed).
	 */
	struct bfq_queue *waker_bfqq;
	struct bfq_queue *tentative_waker_bfqq;
	unsigned int num_waker_detections;
	uint64_t waker_detection_started;
	struct bfqq_list woken_list;
	TAILQ_ENTRY(bfq_queue) woken_list_node;
	bool on_woken_list;

	/*
	 * Injection: how many requests of other queues may be in the
	 * device while this one is in service and empty; adapted from the
	 * total service time of its requests (last_serv_time_ns, the
	 * baseline without injection).
	 */
	unsigned int inject_limit;
	uint64_t last_serv_time_ns;
	uint64_t decrease_time; /* last decrease or reset of inject_limit */

	/*
	 * Queue merging (bfq-merge.c).  process_refs: the references held
	 * by clients (sync queues), including those taken in advance for
	 * the clients that new_bfqq will take over (Linux computes it from
	 * ref).  pos_node: in bfqg->rq_pos_tree by pos_key, the start of
	 * next_rq, while the queue may be merged.  stable_ref: references
	 * held by clients' stable_merge_bfqq.
	 */
	int process_refs;
	struct bfq_queue *new_bfqq; /* merge scheduled into this queue */
	struct bfq_avl_node pos_node;
	struct bfq_avl_root *pos_root;
	uint64_t pos_key;
	uint64_t creation_time;
	uint64_t split_time; /* when it was created by a split, or 0 */
	int stable_ref;
};

BFQ_BFQQ_FNS(just_created)
BFQ_BFQQ_FNS(busy)
BFQ_BFQQ_FNS(wait_request)
BFQ_BFQQ_FNS(non_blocking_wait_rq)
BFQ_BFQQ_FNS(fifo_expire)
BFQ_BFQQ_FNS(has_short_ttime)
BFQ_BFQQ_FNS(sync)
BFQ_BFQQ_FNS(IO_bound)
BFQ_BFQQ_FNS(in_large_burst)
BFQ_BFQQ_FNS(softrt_update)
BFQ_BFQQ_FNS(coop)
BFQ_BFQQ_FNS(split_coop)
#undef BFQ_BFQQ_FNS

/* A client: what Linux keeps in bfq_io_cq for a process. */
struct bfq_io_cq {
	uint64_t id;
	struct bfq_io_cq *hash_next;
	TAILQ_ENTRY(bfq_io_cq) lru;
	struct bfq_queue *bfqq[2]; /* async, sync */
	struct bfq_group *bfqg;	   /* holds a reference */
	unsigned int weight;	   /* of its queues */
	unsigned int gen;	   /* configuration it was mapped with */
	unsigned int nr_rqs;	   /* requests pointing to it */
	uint64_t last_used;

	/*
	 * Queue merging (bfq-merge.c): the queue to merge with later
	 * (stable merge, holds a reference), whether the client was merged
	 * that way (never split then), and the state of its own sync queue
	 * when it was merged, given back when it is split off again.
	 */
	struct bfq_queue *stable_merge_bfqq;
	bool stably_merged;
	bool saved_has_short_ttime;
	bool saved_IO_bound;
	bool saved_in_large_burst;
	bool was_in_burst_list;
	unsigned int saved_weight;
	struct bfq_ttime saved_ttime;
	uint64_t saved_io_start_time;
	uint64_t saved_tot_idle_time;
	uint64_t saved_last_serv_time_ns;
	unsigned int saved_inject_limit;
	uint64_t saved_decrease_time;
	unsigned int saved_wr_coeff;
	uint64_t saved_wr_start_at_switch_to_srt;
	uint64_t saved_service_from_wr;
	uint64_t saved_last_wr_start_finish;
	uint64_t saved_wr_cur_max_time;
};

/* A group: what Linux makes of a cgroup on a device. */
struct bfq_group {
	struct bfq_entity entity;
	struct bfq_sched_data sched_data;
	struct bfq_data *bfqd;
	struct bfq_entity *my_entity; /* &entity; NULL for the root group */
	char name[BFQ_GROUP_NAME_MAX];
	int ref; /* queues, clients, and its entity on a tree */
	int active_entities;
	int num_queues_with_pending_reqs;
	struct bfqq_list async_queues; /* weak: by weight */
	/* queue merging: sync queues by next_rq sector; the last created */
	struct bfq_avl_root rq_pos_tree;
	struct bfq_queue *last_bfqq_created; /* weak */
	TAILQ_ENTRY(bfq_group) list;
	uint64_t stat_sectors;
};

/* Scheduler data per request, indexed by the scheduler tag. */
struct bfq_rq {
	struct bfq_avl_node node; /* in bfqq->sort_list */
	struct request *rq;
	/*
	 * The request's start sector when it was sorted: a front merge
	 * moves the start before the request is repositioned.
	 */
	uint64_t key;
	uint64_t seq;
	struct bfq_io_cq *bic;
	bool queued;	/* in a bfq_queue */
	bool in_driver; /* counted in rq_in_driver and bfqq->dispatched */
};

#define RQ_BRQ(rq)  ((struct bfq_rq *)(rq)->elv_priv[0])
#define RQ_BFQQ(rq) ((struct bfq_queue *)(rq)->elv_priv[1])

/* ------------------------------------------------------------------ */
/* configuration shared by the per-hctx instances (bfq-attrs.c)        */

struct bfq_group_def {
	char name[BFQ_GROUP_NAME_MAX];
	unsigned int weight;
};

enum bfq_map_kind {
	BFQ_MAP_USER,
	BFQ_MAP_UID,
	BFQ_MAP_ADDR,
};

struct bfq_map_rule {
	enum bfq_map_kind kind;
	long uid;
	char pattern[BFQ_MAP_VALUE_MAX]; /* fnmatch(3) pattern */
	char group[BFQ_GROUP_NAME_MAX];
};

struct bfq_weight_rule {
	uint64_t id;
	unsigned int weight;
};

struct bfq_conf {
	pthread_mutex_t lock; /* after any bfqd->lock */
	struct mq_queue *q;
	unsigned int nr_hw;
	struct bfq_data **bfqds;

	/* tunables as stored (ns for times) */
	uint64_t fifo_expire[2]; /* async, sync */
	uint64_t slice_idle;
	uint64_t timeout;
	unsigned int back_max;
	unsigned int back_penalty;
	int user_max_budget;
	bool strict_guarantees;
	bool low_latency;

	struct bfq_group_def *groups;
	unsigned int nr_groups;
	struct bfq_map_rule *rules;
	unsigned int nr_rules;
	struct bfq_weight_rule *weights;
	unsigned int nr_weights;
	unsigned int gen; /* bumped by groups, group_map and weights */
};

/* ------------------------------------------------------------------ */
/* per hw queue scheduler                                              */

struct bfq_data {
	pthread_mutex_t lock;
	struct mq_queue *queue;
	struct mq_hw_ctx *hctx;
	struct bfq_conf *conf;
	uint64_t clock_base;

	struct bfq_group *root_group;
	TAILQ_HEAD(, bfq_group) groups;
	struct bfq_weight_counter *queue_weights;
	unsigned int num_groups_with_pending_reqs;

	unsigned int queued; /* read lock-free by has_work */
	unsigned int busy_queues;
	/* busy queues of each class, by the class counted at activation */
	unsigned int busy_in_class[BFQ_IOPRIO_CLASSES];
	unsigned int wr_busy_queues; /* read lock-free by limit_depth */
	int allocated;		     /* requests bound to one of its queues */
	int rq_in_driver;
	int max_rq_in_driver;
	int hw_tag_samples;
	int hw_tag; /* -1 unknown, 0 no internal queueing, 1 queueing */
	int budgets_assigned;

	struct bfq_queue *in_service_queue;
	uint64_t idle_deadline; /* when the in-service queue waits */
	/* queues on an active tree, the last inserted first */
	struct bfqq_list active_list;

	/* waker detection and injection (bfq_update_inject_limit) */
	struct bfq_queue *last_completed_rq_bfqq;
	uint64_t last_empty_occupied_ns;
	bool wait_dispatch;	   /* sample the next in-service dispatch */
	struct request *waited_rq; /* the request sampled */
	bool rqs_injected;	   /* injection happened meanwhile */
	bool stalled;		   /* dispatch refused with work queued */

	/* peak rate estimation */
	uint64_t last_position;
	uint64_t in_serv_last_pos;
	uint64_t last_completion;
	uint64_t last_dispatch;
	uint64_t first_dispatch;
	uint64_t delta_from_first;
	uint64_t tot_sectors_dispatched;
	uint32_t last_rq_max_size;
	uint32_t peak_rate_samples;
	uint32_t sequential_samples;
	uint32_t peak_rate; /* sectors/usec << BFQ_RATE_SHIFT */
	uint64_t rate_dur_prod;
	int bfq_max_budget;

	uint64_t last_budget_start;
	uint64_t last_idling_start;

	/* tunables, copied from the conf */
	uint64_t bfq_fifo_expire[2];
	unsigned int bfq_back_penalty;
	unsigned int bfq_back_max;
	uint64_t bfq_slice_idle;
	int bfq_user_max_budget;
	uint64_t bfq_timeout;
	bool strict_guarantees;
	bool low_latency;

	/* fixed parameters, as bfq_init_queue sets them */
	unsigned int bfq_large_burst_thresh;
	uint64_t bfq_burst_interval;
	unsigned int bfq_wr_coeff;
	uint64_t bfq_wr_rt_max_time;
	uint64_t bfq_wr_max_time;
	uint64_t bfq_wr_min_idle_time;
	uint64_t bfq_wr_min_inter_arr_async;
	unsigned int bfq_wr_max_softrt_rate;

	/* large burst detection */
	struct bfqq_list burst_list;
	int burst_size;
	bool large_burst;
	uint64_t last_ins_in_burst;
	struct bfq_entity *burst_parent_entity;

	struct rq_list dispatch; /* at-head and passthrough requests */
	struct bfqq_list queues; /* all of them */

	/* clients */
	struct bfq_io_cq **bic_hash;
	unsigned int bic_hash_bits;
	unsigned int nr_bics;
	TAILQ_HEAD(bfq_bic_lru, bfq_io_cq) bic_lru;
	struct bfq_io_cq *last_bic;
	unsigned int conf_gen;

	struct bfq_queue *bio_bfqq; /* for allow_merge, under the lock */
	struct bfq_io_cq *bio_bic;  /* the bio's client, with bio_bfqq */

	struct bfq_rq *rqs; /* by scheduler tag */
	unsigned int nr_rqs;
	uint64_t rq_seq;
	uint64_t entity_seq;

	/*
	 * Tests only (bfq_set_clock): read this clock, plus test_clock_off,
	 * instead of the monotonic one.  Set before any I/O, under the lock.
	 */
	const _Atomic uint64_t *test_clock;
	uint64_t test_clock_off;
};

static inline uint64_t bfq_time(const struct bfq_data *bfqd, uint64_t now_ns)
{
	if (bfqd->test_clock)
		return atomic_load_explicit(bfqd->test_clock,
					    memory_order_relaxed) +
		       bfqd->test_clock_off;
	return now_ns - bfqd->clock_base;
}

static inline uint64_t bfq_now(const struct bfq_data *bfqd)
{
	if (bfqd->test_clock)
		return bfq_time(bfqd, 0);
	return bfq_time(bfqd, mq_now_ns());
}

static inline void bfq_set_queued(struct bfq_data *bfqd, unsigned int v)
{
	__atomic_store_n(&bfqd->queued, v, __ATOMIC_RELAXED);
}

static inline void bfq_set_wr_busy(struct bfq_data *bfqd, unsigned int v)
{
	__atomic_store_n(&bfqd->wr_busy_queues, v, __ATOMIC_RELAXED);
}

static inline unsigned int bfq_tot_busy_queues(const struct bfq_data *bfqd)
{
	return bfqd->busy_queues;
}

static inline bool bfq_rq_is_sync(const struct request *rq)
{
	return op_is_sync(rq->op, rq->cmd_flags);
}

static inline bool bfq_class_idle(const struct bfq_queue *bfqq)
{
	return bfqq->ioprio_class == IOPRIO_CLASS_IDLE;
}

/* Seeky: more than 19 of the last 32 requests far from the previous one. */
#define BFQQ_SEEKY(bfqq) (__builtin_popcount((bfqq)->seek_history) > 19)

/* Flash with internal queueing: merging and position trees are off. */
static inline bool bfq_nonrot_with_queueing(const struct bfq_data *bfqd)
{
	return !bfqd->queue->limits.rotational && bfqd->hw_tag != 0;
}

static inline struct bfq_group *bfqq_group(const struct bfq_queue *bfqq)
{
	return bfqq->bfqg;
}

/* bfq-wf2q.c */
struct bfq_queue *bfq_entity_to_bfqq(struct bfq_entity *entity);
struct bfq_service_tree *bfq_entity_service_tree(struct bfq_entity *entity);
void bfq_service_tree_init(struct bfq_service_tree *st);
struct bfq_service_tree *
__bfq_entity_update_weight_prio(struct bfq_service_tree *st,
				struct bfq_entity *entity);
void bfq_bfqq_served(struct bfq_queue *bfqq, int served, uint64_t now);
void bfq_bfqq_charge_time(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			  unsigned long time_ms, uint64_t now);
bool __bfq_deactivate_entity(struct bfq_entity *entity,
			     bool ins_into_idle_tree);
void bfq_put_idle_entity(struct bfq_service_tree *st,
			 struct bfq_entity *entity);
bool next_queue_may_preempt(struct bfq_data *bfqd);
struct bfq_queue *bfq_get_next_queue(struct bfq_data *bfqd);
bool __bfq_bfqd_reset_in_service(struct bfq_data *bfqd);
void bfq_deactivate_bfqq(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			 bool ins_into_idle_tree, bool expiration);
void bfq_activate_bfqq(struct bfq_data *bfqd, struct bfq_queue *bfqq);
void bfq_requeue_bfqq(struct bfq_data *bfqd, struct bfq_queue *bfqq,
		      bool expiration);
void bfq_del_bfqq_busy(struct bfq_data *bfqd, struct bfq_queue *bfqq,
		       bool expiration);
void bfq_add_bfqq_busy(struct bfq_data *bfqd, struct bfq_queue *bfqq);

/* bfq-iosched.c */
void bfq_put_queue(struct bfq_queue *bfqq);
void bfq_weights_tree_add(struct bfq_queue *bfqq);
void __bfq_weights_tree_remove(struct bfq_queue *bfqq);
void bfq_weights_tree_remove(struct bfq_queue *bfqq);
void bfq_release_process_ref(struct bfq_data *bfqd, struct bfq_queue *bfqq);
void bfq_exit_bfqq(struct bfq_data *bfqd, struct bfq_queue *bfqq);
void bfq_bfqq_expire(struct bfq_data *bfqd, struct bfq_queue *bfqq,
		     bool compensate, enum bfqq_expiration reason,
		     uint64_t now);
void bfq_bfqq_end_wr(struct bfq_queue *bfqq, uint64_t now);
void bfq_end_wr(struct bfq_data *bfqd);
int bfq_calc_max_budget(struct bfq_data *bfqd);
void bfq_init_peak_rate(struct bfq_data *bfqd);
struct bfq_queue *bfq_get_queue(struct bfq_data *bfqd, struct bfq_io_cq *bic,
				bool is_sync, unsigned short ioprio_class,
				uint64_t now);

void bfqq_request_allocated(struct bfq_queue *bfqq, int n);
void bfq_burst_list_add(struct bfq_data *bfqd, struct bfq_queue *bfqq);
uint64_t bfq_wr_duration(struct bfq_data *bfqd);

/* bfq-merge.c: merging of cooperating queues (Linux's EQM) */
void bfq_pos_tree_add_move(struct bfq_data *bfqd, struct bfq_queue *bfqq);
void bfq_pos_tree_del(struct bfq_queue *bfqq);
struct bfq_queue *bfq_setup_cooperator(struct bfq_data *bfqd,
				       struct bfq_queue *bfqq, uint64_t pos,
				       struct bfq_io_cq *bic, uint64_t now);
void bfq_merge_bfqqs(struct bfq_data *bfqd, struct bfq_io_cq *bic,
		     struct bfq_queue *bfqq, struct bfq_queue *new_bfqq);
/* __bfq_insert_request: redirect rq to a cooperator; its queue now. */
struct bfq_queue *bfq_merge_on_insert(struct bfq_data *bfqd, struct request *rq,
				      uint64_t now);
/* bfq_allow_bio_merge: the queue the bio goes to, after an early merge. */
struct bfq_queue *bfq_merge_on_bio(struct bfq_data *bfqd, struct bio *bio,
				   uint64_t now);
/*
 * A new sync queue of bic, whose first request starts at pos: merge it
 * with the group's last created queue now, or schedule that for later.
 */
struct bfq_queue *bfq_do_or_sched_stable_merge(struct bfq_data *bfqd,
					       struct bfq_queue *bfqq,
					       struct bfq_io_cq *bic,
					       uint64_t pos);
/* bic's sync queue for a new request: split off a seeky shared queue. */
struct bfq_queue *bfq_split_if_needed(struct bfq_data *bfqd,
				      struct bfq_io_cq *bic,
				      struct bfq_queue *bfqq,
				      unsigned short ioprio_class, uint64_t now,
				      bool *split, bool *existing);
/* rq of bic bound to its sync queue bfqq: owner and resumed state. */
void bfq_merge_rq_bound(struct bfq_data *bfqd, struct bfq_io_cq *bic,
			struct bfq_queue *bfqq, bool split, bool existing,
			uint64_t now);
void bfq_put_cooperator(struct bfq_queue *bfqq);
void bfq_put_stable_ref(struct bfq_queue *bfqq);
/* The client's sync queue moves to bfqg: moved, or left if shared. */
void bfq_sync_bfqq_move(struct bfq_data *bfqd, struct bfq_io_cq *bic,
			struct bfq_group *bfqg, uint64_t now);
/* bfq_bfqq_move moved bfqq out of old. */
void bfq_merge_bfqq_moved(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			  struct bfq_group *old);

/* bfq-cgroup.c */
struct bfq_group *bfq_create_root_group(struct bfq_data *bfqd);
void bfq_free_groups(struct bfq_data *bfqd);
struct bfq_group *bfq_find_set_group(struct bfq_data *bfqd, const char *name);
void bfqg_get(struct bfq_group *bfqg);
void bfqg_put(struct bfq_group *bfqg);
void bfq_init_entity(struct bfq_entity *entity, struct bfq_group *bfqg);
void bfq_bfqq_move(struct bfq_data *bfqd, struct bfq_queue *bfqq,
		   struct bfq_group *bfqg, uint64_t now);
void bfq_add_bfqq_in_groups_with_pending_reqs(struct bfq_queue *bfqq);
void bfq_del_bfqq_in_groups_with_pending_reqs(struct bfq_queue *bfqq);
/* Apply the conf's group weights to existing groups; conf->lock held. */
void bfq_update_group_weights(struct bfq_data *bfqd);
unsigned int bfq_conf_group_weight(struct bfq_conf *conf, const char *name);
/* The group name a client maps to, or NULL; conf->lock held. */
const char *bfq_conf_match_group(struct bfq_conf *conf,
				 const struct mq_client *client);
int bfq_parse_groups(const char *s, struct bfq_group_def **defs,
		     unsigned int *nr);
int bfq_parse_group_map(const char *s, struct bfq_map_rule **rules,
			unsigned int *nr);
bool bfq_valid_group_name(const char *name);

/* bfq-ioc.c */
int bfq_bic_init(struct bfq_data *bfqd);
void bfq_bic_exit(struct bfq_data *bfqd);
/* Look up or create the client; NULL on allocation failure. */
struct bfq_io_cq *bfq_bic_get(struct bfq_data *bfqd, uint64_t id,
			      const struct mq_client *client, uint64_t now);
struct bfq_io_cq *bfq_bic_lookup(struct bfq_data *bfqd, uint64_t id);
/* Re-map a client after a configuration change; conf->lock not held. */
void bfq_bic_update_conf(struct bfq_data *bfqd, struct bfq_io_cq *bic,
			 const struct mq_client *client, uint64_t now);
unsigned int bfq_conf_client_weight(struct bfq_conf *conf, uint64_t id);
int bfq_parse_weights(const char *s, struct bfq_weight_rule **rules,
		      unsigned int *nr);

/* bfq-attrs.c */
extern const struct elv_fs_entry bfq_attrs[];
void bfq_conf_init(struct bfq_conf *conf);
void bfq_conf_apply(struct bfq_conf *conf, struct bfq_data *bfqd);

#endif
