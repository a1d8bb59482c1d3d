/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The userspace multiqueue request core.
 *
 * Names follow Linux blk-mq (include/linux/blk-mq.h, block/blk-mq.c) so that
 * a kernel developer finds tag sets, queue_rq and the requeue list where
 * they expect them.  A "bio" is one client I/O (one NBD command, or a piece
 * of one after splitting); a "request" is what a driver sees, carrying one
 * bio or several merged ones.
 */
#ifndef MQBLK_BLK_MQ_H
#define MQBLK_BLK_MQ_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "ioprio.h"

#define SECTOR_SHIFT 9
#define SECTOR_SIZE  (1u << SECTOR_SHIFT)

/* The structure that embeds member, from a pointer to it. */
#define container_of(ptr, type, member)                                        \
	((type *)((char *)(ptr)-offsetof(type, member)))

struct mq_queue;
struct mq_hw_ctx;
struct mq_ctx;
struct mq_tags;
struct mq_tag_set;
struct elevator_queue;
struct blk_trace;
struct blk_zone_wplug;
struct gendisk;

enum req_op {
	REQ_OP_READ,
	REQ_OP_WRITE,
	REQ_OP_FLUSH,
	REQ_OP_DISCARD,
	REQ_OP_WRITE_ZEROES,
	REQ_OP_DRV_IN,
	REQ_OP_DRV_OUT,
	REQ_OP_LAST,
};

const char *req_op_name(enum req_op op);

static inline bool op_is_write(enum req_op op)
{
	return op == REQ_OP_WRITE || op == REQ_OP_DISCARD ||
	       op == REQ_OP_WRITE_ZEROES || op == REQ_OP_DRV_OUT;
}

/* bio and request cmd_flags */
#define REQ_FUA	    (1u << 0) /* forced unit access */
#define REQ_SYNC    (1u << 1) /* the submitter waits for it */
#define REQ_NOUNMAP (1u << 2) /* WRITE_ZEROES must keep blocks allocated */
#define REQ_HEAD    (1u << 3) /* insert at the head (sense, requeue) */
/*
 * A zone append (Linux's REQ_OP_ZONE_APPEND), on a WRITE whose bi_sector
 * is in a sequential zone: the zone's write plug writes it at the zone's
 * write pointer, in the order appends reach the plug, as Linux 6.12
 * emulates zone append (blk_zone_wplug_prepare_bio); bi_append_sector
 * says where it went once it completed.
 */
#define REQ_ZONE_APPEND (1u << 4)

/* READs, FUA writes and FLUSH are synchronous; a plain WRITE is async. */
static inline bool op_is_sync(enum req_op op, unsigned int flags)
{
	return op == REQ_OP_READ || op == REQ_OP_FLUSH ||
	       (flags & (REQ_FUA | REQ_SYNC));
}

/* ------------------------------------------------------------------ */
/* bio: one client I/O                                                 */

/*
 * Who sent an I/O: BFQ's "process" and what its groups are keyed on.  The
 * front end owns it and keeps it alive while the client has I/O in flight;
 * a scheduler copies what it needs to keep longer.
 */
struct mq_client {
	uint64_t id;	   /* unique per connection */
	char addr[64];	   /* peer address, "" if unknown */
	long uid;	   /* peer uid on a Unix socket, -1 if unknown */
	char tls_user[64]; /* TLS PSK identity or certificate CN, "" if none */
	/*
	 * The front end sets it when the client has gone: its requests not
	 * yet started are ended with ECANCELED instead of reaching the
	 * driver (mq_dispatch); started ones finish.
	 */
	atomic_bool gone;
};

struct bio;
typedef void(bio_end_io_t)(struct bio *);

struct bio {
	struct bio *bi_next; /* chain inside a request */
	enum req_op bi_op;
	unsigned int bi_flags; /* REQ_* */
	uint64_t bi_sector;    /* current position, 512-byte sectors */
	uint32_t bi_size;      /* bytes left to transfer */
	void *bi_buf;	       /* data for READ/WRITE, advanced with bi_size */
	uint64_t bi_submitter; /* client id: BFQ's "process" */
	const struct mq_client *bi_client; /* NULL: only the id is known */
	uint16_t bi_ioprio; /* IOPRIO_PRIO_VALUE() (ioprio.h); 0: none */
	int bi_status;	    /* 0 or a positive errno */
	bio_end_io_t *bi_end_io;
	void *bi_private;

	/* Owned by the core. */
	struct mq_ctx *bi_ctx;	   /* the software queue it was submitted on */
	unsigned int bi_tag_depth; /* elevator's limit_depth for its tag */
	struct bio *bi_parent;	   /* set when the core splits or chains it */
	atomic_int bi_remaining;
	int bi_tag; /* the tag handed to it after waiting for one */
	/*
	 * Set on the write its zone's write plug let through (blk-zoned.c):
	 * its completion lets the next plugged write of that zone go.
	 */
	struct blk_zone_wplug *bi_zone_wplug;
	uint64_t bi_append_sector; /* REQ_ZONE_APPEND: the sector written */
};

static inline void bio_init(struct bio *bio, enum req_op op, uint64_t sector,
			    uint32_t size, void *buf)
{
	*bio = (struct bio){
		.bi_op = op,
		.bi_sector = sector,
		.bi_size = size,
		.bi_buf = buf,
	};
	atomic_init(&bio->bi_remaining, 1);
}

static inline uint64_t bio_end_sector(const struct bio *bio)
{
	return bio->bi_sector + (bio->bi_size >> SECTOR_SHIFT);
}

/* ------------------------------------------------------------------ */
/* request                                                             */

enum mq_rq_state {
	MQ_RQ_IDLE,
	MQ_RQ_IN_FLIGHT,
	MQ_RQ_COMPLETE,
};

/* rq_flags, owned by the core */
#define RQF_STARTED	(1u << 0)
#define RQF_RESERVED	(1u << 1) /* tag comes from the reserved pool */
#define RQF_SOFTBARRIER (1u << 2) /* requeue at the head */
#define RQF_DONTPREP	(1u << 3) /* driver already prepared it */
#define RQF_TIMED_OUT	(1u << 4) /* ->timeout called for this expiry */
#define RQF_ELVPRIV	(1u << 5) /* the elevator holds private data */
#define RQF_MQ_INFLIGHT (1u << 6) /* counted in the set's nr_active */

struct request;
typedef void(rq_end_io_fn)(struct request *, int status);

TAILQ_HEAD(rq_list, request);
LIST_HEAD(rq_hlist, request);

struct request {
	struct mq_queue *q;
	struct mq_ctx *mq_ctx;
	struct mq_hw_ctx *mq_hctx;

	enum req_op op;
	unsigned int cmd_flags; /* REQ_* */
	/*
	 * RQF_*: atomic, since the timeout scan marks RQF_TIMED_OUT from
	 * kblockd while the driver's thread updates the others.
	 */
	_Atomic unsigned int rq_flags;

	uint64_t __sector;   /* current position, 512-byte sectors */
	uint32_t __data_len; /* bytes left */
	struct bio *bio;     /* first bio not yet completed */
	struct bio *biotail;
	unsigned short nr_phys_segments; /* one per bio */

	int tag;	  /* driver tag, -1 if none */
	int internal_tag; /* scheduler tag, -1 if none */
	uint64_t submitter;
	const struct mq_client *client;
	uint16_t ioprio; /* the bios', ioprio.h; they all have the same */

	_Atomic int state;	/* enum mq_rq_state */
	atomic_int ref;		/* the owner, plus timeout and tag iterators */
	uint32_t stats_bytes;	/* size when started, for accounting */
	uint64_t start_time_ns; /* allocation */
	uint64_t io_start_time_ns; /* mq_start_request */
	_Atomic uint64_t deadline_ns;

	TAILQ_ENTRY(request) queuelist;
	/* In hctx->merge.hash (elv_rqhash_add), under the elevator's lock. */
	LIST_ENTRY(request) hash;

	/* Driver-allocated requests (mq_alloc_request) without bios. */
	void *special; /* data buffer for DRV_IN/DRV_OUT */
	rq_end_io_fn *end_io;
	void *end_io_data;

	void *elv_priv[2]; /* scheduler private data */
	uint64_t fifo_time;

	/* the driver pdu (tag_set->cmd_size bytes) follows */
} __attribute__((aligned(16)));

static inline void *mq_rq_to_pdu(struct request *rq)
{
	return rq + 1;
}

static inline struct request *mq_rq_from_pdu(void *pdu)
{
	return (struct request *)pdu - 1;
}

static inline uint64_t blk_rq_pos(const struct request *rq)
{
	return rq->__sector;
}

static inline uint32_t blk_rq_bytes(const struct request *rq)
{
	return rq->__data_len;
}

static inline uint32_t blk_rq_sectors(const struct request *rq)
{
	return rq->__data_len >> SECTOR_SHIFT;
}

static inline enum req_op req_op(const struct request *rq)
{
	return rq->op;
}

#define rq_for_each_bio(_bio, _rq)                                             \
	for ((_bio) = (_rq)->bio; (_bio); (_bio) = (_bio)->bi_next)

/* ------------------------------------------------------------------ */
/* tag set and driver ops                                              */

enum mq_qrc {
	MQ_QRC_OK,
	MQ_QRC_BUSY,	     /* busy: retry when this hctx frees something */
	MQ_QRC_DEV_RESOURCE, /* retry when the set frees, or driver restarts */
	MQ_QRC_RESOURCE,     /* retry after MQ_RESOURCE_DELAY_MS */
	MQ_QRC_IOERR,	     /* fail the request with EIO */
};

const char *mq_qrc_name(enum mq_qrc ret);

#define MQ_RESOURCE_DELAY_MS 3
/* Rerun after a budget taken for nothing, as BLK_MQ_BUDGET_DELAY. */
#define MQ_BUDGET_DELAY_MS 3

enum mq_eh_timer_return {
	MQ_EH_DONE,	   /* the driver has completed it or will */
	MQ_EH_RESET_TIMER, /* give it another timeout period */
};

struct mq_queue_data {
	struct request *rq;
	bool last; /* no more requests follow in this run */
};

struct mq_ops {
	enum mq_qrc (*queue_rq)(struct mq_hw_ctx *hctx,
				const struct mq_queue_data *bd);
	void (*commit_rqs)(struct mq_hw_ctx *hctx);
	/*
	 * A plugged batch in one call, as Linux's queue_rqs (5.17): the
	 * requests a plug held for this hctx, in submission order, each with
	 * its driver tag, none started.  Only for hctxs that may take a
	 * request directly (no elevator, budget or dispatch worker), and only
	 * when nothing else waits to be dispatched there.  It takes what it
	 * can, starting and ending each as queue_rq does, and leaves on the
	 * list, in order, those it would refuse; the core then offers them to
	 * queue_rq one at a time, which answers busy, requeue or error as for
	 * any request.  Optional.
	 */
	void (*queue_rqs)(struct mq_hw_ctx *hctx, struct rq_list *list);
	enum mq_eh_timer_return (*timeout)(struct request *rq);
	/* Work that must run in completion context, from mq_complete_request */
	void (*complete)(struct request *rq);
	int (*init_request)(struct mq_tag_set *set, struct request *rq,
			    unsigned int hctx_idx);
	void (*exit_request)(struct mq_tag_set *set, struct request *rq,
			     unsigned int hctx_idx);
	int (*init_hctx)(struct mq_hw_ctx *hctx, void *driver_data,
			 unsigned int hctx_idx);
	void (*exit_hctx)(struct mq_hw_ctx *hctx, unsigned int hctx_idx);
	/*
	 * Dispatch budget, as scsi-mq's get_budget/put_budget: dispatch
	 * asks for one before it takes a request off the dispatch list, the
	 * elevator or a software queue, so that a per-device limit (SCSI's
	 * cmd_per_lun) leaves the rest in the elevator, where they can still
	 * be sorted and merged.  No budget: dispatch stops, and the driver
	 * must run the queue again when one comes free (on a completion, or
	 * with mq_delay_run_hw_queues when nothing is in flight).  A budget
	 * handed to queue_rq is the driver's: it gives it back on completion
	 * or when queue_rq refuses.  The core calls put_budget only for a
	 * budget it took and did not use.  Called without hctx->lock; must
	 * not run the queue synchronously.  Both or neither.
	 */
	bool (*get_budget)(struct mq_queue *q);
	void (*put_budget)(struct mq_queue *q);
};

/* tag_set flags */
#define MQ_F_SHOULD_MERGE	 (1u << 0)
#define MQ_F_BLOCKING		 (1u << 1) /* queue_rq may sleep */
#define MQ_F_NO_SCHED		 (1u << 2) /* no elevator may be attached */
#define MQ_F_NO_SCHED_BY_DEFAULT (1u << 3) /* loop-like passthroughs */
#define MQ_F_TAG_SHARED		 (1u << 4) /* set by the core */

#define MQ_MAX_DEPTH	      10240
#define MQ_DEFAULT_TIMEOUT_MS 30000

struct mq_tag_set {
	/* Filled in by the driver before mq_alloc_tag_set(). */
	const struct mq_ops *ops;
	unsigned int nr_hw_queues;
	unsigned int queue_depth; /* includes reserved_tags */
	unsigned int reserved_tags;
	unsigned int cmd_size;
	unsigned int timeout_ms; /* 0: MQ_DEFAULT_TIMEOUT_MS */
	unsigned int flags;
	void *driver_data;

	/* Owned by the core. */
	struct mq_tags **tags; /* one per hw queue index */
	pthread_mutex_t tag_list_lock;
	TAILQ_HEAD(, mq_queue) tag_list; /* queues sharing the set */
	unsigned int nr_queues;
	/* hctxs waiting for a restart (DEV_RESOURCE, BUSY, no driver tag) */
	pthread_mutex_t restart_lock;
	TAILQ_HEAD(, mq_hw_ctx) restart_list;
	atomic_uint nr_restart;
	atomic_uint nr_active; /* requests handed to queue_rq, not yet freed */
};

int mq_alloc_tag_set(struct mq_tag_set *set);
void mq_free_tag_set(struct mq_tag_set *set);

/* ------------------------------------------------------------------ */
/* queues                                                              */

enum blk_zoned_model {
	BLK_ZONED_NONE,
	BLK_ZONED_HA, /* host-aware */
	BLK_ZONED_HM, /* host-managed: sequential writes required */
};

struct queue_limits {
	unsigned int logical_block_size;
	unsigned int physical_block_size;
	unsigned int io_opt; /* preferred I/O size, bytes; 0 = unknown */
	unsigned int max_sectors;
	unsigned int max_segments;
	unsigned int max_discard_sectors;      /* 0: no discard */
	unsigned int max_write_zeroes_sectors; /* 0: no write zeroes */
	unsigned int discard_granularity;
	bool write_cache; /* volatile cache: FLUSH means something */
	bool fua;	  /* the device honours FUA natively */
	bool rotational;
	enum blk_zoned_model zoned;
	unsigned int chunk_sectors;    /* zone size, a power of two */
	unsigned int nr_zones;	       /* 0: the disk's capacity decides */
	unsigned int nr_conv_zones;    /* the first zones are conventional */
	unsigned int max_open_zones;   /* 0: no limit */
	unsigned int max_active_zones; /* 0: no limit */
	unsigned int max_zone_append_sectors;
};

void blk_set_default_limits(struct queue_limits *lim);

/* ------------------------------------------------------------------ */
/* zones (blk-zoned.c)                                                 */

/* A host-managed queue with a zone size: its writes must be sequential. */
static inline bool blk_queue_is_zoned(const struct queue_limits *lim)
{
	return lim->zoned == BLK_ZONED_HM && lim->chunk_sectors;
}

static inline uint64_t blk_zone_no(const struct queue_limits *lim,
				   uint64_t sector)
{
	return sector / lim->chunk_sectors;
}

/* Is sector in a sequential-write-required zone? */
static inline bool blk_zone_is_seq(const struct queue_limits *lim,
				   uint64_t sector)
{
	return blk_queue_is_zoned(lim) &&
	       blk_zone_no(lim, sector) >= lim->nr_conv_zones;
}

/*
 * A WRITE or WRITE_ZEROES to a sequential zone: what zone write plugging
 * serialises (bio_needs_zone_write_plugging) and mq-deadline's zone write
 * lock orders when plugging is off.
 */
static inline bool blk_op_is_zoned_write(enum req_op op)
{
	return op == REQ_OP_WRITE || op == REQ_OP_WRITE_ZEROES;
}

/*
 * The zone resource statuses of Linux's zoned drivers (null_blk, nvme,
 * sd), as errnos: -ETOOMANYREFS and -EOVERFLOW are what the kernel turns
 * into BLK_STS_ZONE_OPEN_RESOURCE and BLK_STS_ZONE_ACTIVE_RESOURCE
 * (blk_errors[]), so ublk hands them on as they are.  NBD has no such
 * errors: blk_status_nbd_errno makes them EIO there.
 */
#define BLK_STS_ZONE_OPEN_RESOURCE   ETOOMANYREFS
#define BLK_STS_ZONE_ACTIVE_RESOURCE EOVERFLOW

static inline int blk_status_nbd_errno(int status)
{
	return status == BLK_STS_ZONE_OPEN_RESOURCE ||
			       status == BLK_STS_ZONE_ACTIVE_RESOURCE
		       ? EIO
		       : status;
}

/* What the zone write plugs hold now, for the control plane and tests. */
struct blk_zone_wplugs_info {
	unsigned int nr_wplugs;	  /* zones with a write in flight */
	unsigned int nr_plugged;  /* writes waiting behind those */
	unsigned int nr_aborted;  /* plugged writes failed, never sent */
	unsigned int nr_wp_syncs; /* write pointers read from the device */
};

void blk_zone_wplugs_info(struct mq_queue *q,
			  struct blk_zone_wplugs_info *info);

/* Delayed work, run by the queue's kblockd thread. */
struct mq_delayed_work {
	void (*fn)(struct mq_delayed_work *work);
	uint64_t when_ns;
	atomic_bool pending;
	TAILQ_ENTRY(mq_delayed_work) entry;
};

struct mq_kblockd;

/* hctx->state bits */
#define MQ_S_STOPPED	   (1u << 0)
#define MQ_S_SCHED_RESTART (1u << 1) /* rerun when the set frees a request */
#define MQ_S_TAG_WAITING   (1u << 2) /* waiting for a driver tag */
#define MQ_S_TAG_ACTIVE	   (1u << 3) /* a user of its shared driver tags */

/* Per-hctx counters, exported by the control plane. */
struct mq_hctx_stats {
	atomic_ulong queued;	   /* requests inserted */
	atomic_ulong merged;	   /* bios merged into an existing request */
	atomic_ulong dispatched;   /* queue_rq returned OK */
	atomic_ulong requeued;	   /* mq_requeue_request */
	atomic_ulong busy;	   /* BUSY returns */
	atomic_ulong dev_resource; /* DEV_RESOURCE returns */
	atomic_ulong resource;	   /* RESOURCE returns */
	atomic_ulong run;	   /* dispatch runs */
	atomic_ulong completed;
	atomic_uint active; /* handed to queue_rq, not yet completed */
};

/*
 * What the core keeps to merge into an elevator's queued requests, per
 * hardware queue (elevators keep their state per hctx): Linux's
 * q->last_merge and the elevator's request hash, keyed by end sector.
 * Guarded by the elevator's lock, like everything the elevator holds.
 */
#define ELV_HASH_BITS 6
struct elv_merge_state {
	struct request *last_merge;
	struct rq_hlist hash[1u << ELV_HASH_BITS];
};

struct mq_hw_ctx {
	pthread_mutex_t lock;
	struct rq_list dispatch; /* requeued or refused, served first */
	atomic_uint state;	 /* MQ_S_* */
	bool running;		 /* a thread is in the dispatch loop */
	bool rerun;		 /* work arrived while running */
	pthread_cond_t idle;	 /* signalled when running drops */

	struct mq_queue *queue;
	unsigned int queue_num;
	unsigned int flags; /* the tag set's */
	struct mq_tags *tags;
	struct mq_tags *sched_tags;
	void *driver_data;
	void *sched_data;

	struct mq_ctx **ctxs;
	unsigned int nr_ctx;
	unsigned int dispatch_from; /* round robin over ctxs */
	/* normal driver tags it holds: its use of a shared set's share */
	atomic_uint nr_active;
	atomic_uint nr_ctx_pending; /* requests sitting in ctx lists */

	struct mq_delayed_work run_work;
	TAILQ_ENTRY(mq_hw_ctx) restart_entry;
	bool on_restart_list; /* under set->restart_lock */

	/* BLOCKING sets dispatch from this worker. */
	pthread_t worker;
	bool has_worker;
	pthread_cond_t worker_cond;
	bool worker_kick;
	bool worker_exit;

	struct mq_hctx_stats stats;
	struct elv_merge_state merge; /* while an elevator is attached */
};

/* A software queue: one per submitting thread or event loop ("CPU"). */
struct mq_ctx {
	pthread_mutex_t lock;
	struct rq_list rq_list;
	unsigned int nr_pending;
	unsigned int cpu;
	struct mq_hw_ctx *hctx;
	struct mq_queue *queue;
};

#define MQ_LAT_BUCKETS 40 /* log2 buckets of nanoseconds */

/* The fields of /sys/block/X/stat, kept per op group. */
enum mq_stat_group {
	STAT_READ,
	STAT_WRITE,
	STAT_DISCARD,
	STAT_FLUSH,
	NR_STAT_GROUPS,
};

struct mq_queue_stats {
	atomic_ulong ios[NR_STAT_GROUPS];
	atomic_ulong merges[NR_STAT_GROUPS];
	atomic_ulong sectors[NR_STAT_GROUPS];
	atomic_ulong nsecs[NR_STAT_GROUPS];
	atomic_ulong errors[NR_STAT_GROUPS];
	atomic_ulong lat_hist[NR_STAT_GROUPS][MQ_LAT_BUCKETS];
	atomic_uint in_flight[2]; /* reads, writes (bios accepted, not done) */
	/* io_ticks and time_in_queue, as update_io_ticks keeps them: no lock */
	_Atomic uint64_t stamp_ns;
	_Atomic uint64_t io_ticks_ns;
	_Atomic uint64_t time_in_queue_ns;
};

enum mq_stat_group mq_stat_group(enum req_op op);

#define MQ_NAME_MAX 64

struct mq_queue {
	char name[MQ_NAME_MAX];
	struct mq_tag_set *tag_set;
	struct queue_limits limits;
	void *queuedata;

	unsigned int nr_hw_queues;
	struct mq_hw_ctx **queue_hw_ctx;
	unsigned int nr_ctx;
	struct mq_ctx *queue_ctx;
	unsigned int nr_requests;

	struct elevator_queue *elevator;
	char sched_reason[128]; /* which policy row or rule chose it */
	/* queue/ioprio_map (ioprio.c): I/O priorities by client identity */
	pthread_mutex_t ioprio_lock;
	struct mq_ioprio_map *ioprio_map;
	atomic_bool has_ioprio_map;

	/*
	 * Zone write plugging (blk-zoned.c), on by default; a device turns
	 * it off (queue key zone_write_plugging=0) before adding its disk.
	 */
	bool zone_write_plugging;
	struct blk_zone_wplugs *zone_wplugs;
	/*
	 * The disk on the queue (mq_device_add_disk), whose report_zones
	 * the zone write plugs read write pointers with.
	 */
	struct gendisk *disk;

	/* freeze: q_usage counts bios inside the queue */
	pthread_mutex_t freeze_lock;
	pthread_cond_t freeze_wq;
	int mq_freeze_depth;
	atomic_bool frozen;
	atomic_long q_usage;
	atomic_int q_exiting;	 /* inside mq_queue_exit, see there */
	struct bio *parked_head; /* bios that arrived while frozen */
	struct bio **parked_tail;

	/* quiesce: no dispatch runs while set */
	atomic_bool quiesced;

	pthread_mutex_t requeue_lock;
	struct rq_list requeue_list;
	struct mq_delayed_work requeue_work;

	struct mq_delayed_work timeout_work;
	uint64_t rq_timeout_ns;

	struct mq_kblockd *kblockd;
	/*
	 * Set when mq_cleanup_queue begins: new bios fail with EIO and
	 * mq_alloc_request returns NULL, as blk_queue_dying.
	 */
	atomic_bool dying;

	struct mq_queue_stats stats;
	_Atomic(struct blk_trace *) blk_trace; /* blk-trace.h; NULL: off */
	atomic_uint blk_trace_readers; /* threads inside a trace point */
	TAILQ_ENTRY(mq_queue) tag_set_list;
};

#define queue_for_each_hw_ctx(q, hctx, i)                                      \
	for ((i) = 0;                                                          \
	     (i) < (q)->nr_hw_queues && ((hctx) = (q)->queue_hw_ctx[i]);       \
	     (i)++)

#define MQ_DEFAULT_NR_CTX 16

/*
 * Create a queue on a tag set.  nr_ctx is the number of software queues
 * ("CPUs"); 0 means MQ_DEFAULT_NR_CTX.  Limits start from
 * blk_set_default_limits(); the driver adjusts q->limits before I/O starts.
 */
struct mq_queue *mq_init_queue(struct mq_tag_set *set, unsigned int nr_ctx,
			       const char *name);
void mq_cleanup_queue(struct mq_queue *q);

/*
 * queue/ioprio_map: "KIND:VALUE=PRIO ..." with KIND user (TLS user or PSK
 * identity, a glob), uid (a number) or addr (a glob), PRIO rt/0-7,
 * be/0-7, idle or none; "" clears it.  A bio without a priority takes
 * that of the first rule its client matches.  Set returns 0, EINVAL or
 * ENOMEM (the old map stays); show returns the length or -ENOSPC.
 */
int mq_set_ioprio_map(struct mq_queue *q, const char *spec);
int mq_show_ioprio_map(struct mq_queue *q, char *buf, size_t len);
/* "rt/N", "be/N", "idle", "none": 0 or EINVAL; length or -ENOSPC. */
int ioprio_parse(const char *s, uint16_t *ioprio);
int ioprio_format(uint16_t ioprio, char *buf, size_t len);

/* The software queue a submitter with this cpu number uses. */
struct mq_ctx *mq_get_ctx(struct mq_queue *q, unsigned int cpu);

/*
 * Submit one client I/O from software queue ctx.  bio->bi_end_io is called
 * exactly once, from any thread, possibly before this returns.  The core
 * splits bios larger than the queue limits, and holds bios that arrive
 * while the queue is frozen until it thaws; once the queue is dying (being
 * removed) they end with EIO instead.  bio->bi_submitter names the client.
 */
void mq_submit_bio(struct mq_ctx *ctx, struct bio *bio);

/* ------------------------------------------------------------------ */
/* verbs drivers call                                                  */

void mq_start_request(struct request *rq);
void mq_end_request(struct request *rq, int status);
void __mq_end_request(struct request *rq, int status);
/* Complete nr_bytes from the front.  Returns true if bytes remain. */
bool mq_update_request(struct request *rq, int status, uint32_t nr_bytes);
/* Complete through ops->complete if the driver has one, else end it. */
void mq_complete_request(struct request *rq);
bool mq_request_started(struct request *rq);

void mq_requeue_request(struct request *rq, bool kick_requeue_list);
void mq_add_to_requeue_list(struct request *rq, bool at_head, bool kick);
void mq_kick_requeue_list(struct mq_queue *q);
void mq_delay_kick_requeue_list(struct mq_queue *q, unsigned long msecs);

void mq_stop_hw_queue(struct mq_hw_ctx *hctx);
void mq_stop_hw_queues(struct mq_queue *q);
void mq_start_hw_queue(struct mq_hw_ctx *hctx);
void mq_start_hw_queues(struct mq_queue *q);
void mq_start_stopped_hw_queue(struct mq_hw_ctx *hctx, bool async);
void mq_start_stopped_hw_queues(struct mq_queue *q, bool async);
bool mq_hctx_stopped(struct mq_hw_ctx *hctx);
void mq_run_hw_queue(struct mq_hw_ctx *hctx, bool async);
void mq_run_hw_queues(struct mq_queue *q, bool async);
void mq_delay_run_hw_queue(struct mq_hw_ctx *hctx, unsigned long msecs);
void mq_delay_run_hw_queues(struct mq_queue *q, unsigned long msecs);

void mq_freeze_queue(struct mq_queue *q);
/* Gives up after timeout_ms (0: never): 0, or -EBUSY and not frozen. */
int mq_freeze_queue_timeout(struct mq_queue *q, unsigned int timeout_ms);
void mq_unfreeze_queue(struct mq_queue *q);
void mq_quiesce_queue(struct mq_queue *q);
void mq_unquiesce_queue(struct mq_queue *q);

/*
 * Set queue/nr_requests: how many tags of each hardware queue bios may use
 * (1 .. mq_max_nr_requests()), and tell the elevator (depth_updated).
 * Returns 0 or EINVAL.
 */
int mq_update_nr_requests(struct mq_queue *q, unsigned int nr);
unsigned int mq_max_nr_requests(struct mq_queue *q);

/* mq_alloc_request flags */
#define MQ_REQ_NOWAIT	(1u << 0)
#define MQ_REQ_RESERVED (1u << 1)
/*
 * The request serves one that is already inside the queue (a REQUEST
 * SENSE for a failed command): it may enter a frozen queue as long as
 * something is still inside it, as Linux's BLK_MQ_REQ_PREEMPT did, since
 * the freeze waits for that very request.
 */
#define MQ_REQ_PREEMPT (1u << 2)

/*
 * A driver-owned request without bios (sense, probe messages).  Returns
 * NULL with NOWAIT if no tag is free or the queue is frozen (unless
 * PREEMPT lets it in); without NOWAIT it sleeps until the queue thaws and
 * a tag is free.  NULL, whatever the flags, once the queue is dying.  Send it
 * with mq_sched_insert_request(); its end_io is called on completion and must
 * call mq_free_request().
 */
struct request *mq_alloc_request(struct mq_queue *q, enum req_op op,
				 unsigned int flags);
void mq_free_request(struct request *rq);
void mq_sched_insert_request(struct request *rq, bool at_head, bool run_queue,
			     bool async);

/* For drivers that walk every request holding a driver tag. */
typedef bool(busy_tag_iter_fn)(struct request *rq, void *data);
void mq_tagset_busy_iter(struct mq_tag_set *set, busy_tag_iter_fn *fn,
			 void *data);

/*
 * A tag map's size and use, for the control plane (blk-mq-debugfs's
 * "tags").  Returns false, filling nothing, when tags is NULL (no
 * scheduler tags without an elevator).
 */
struct mq_tags_info {
	unsigned int nr_tags;
	unsigned int nr_reserved_tags;
	unsigned int busy;
};

bool mq_tags_info(const struct mq_tags *tags, struct mq_tags_info *info);

/* ------------------------------------------------------------------ */
/* helpers for elevators: merging                                      */

enum elv_merge {
	ELEVATOR_NO_MERGE,
	ELEVATOR_FRONT_MERGE,
	ELEVATOR_BACK_MERGE,
};

/* Can bio join rq at all (op, flags, limits)?  Not its position. */
bool mq_rq_merge_ok(struct request *rq, struct bio *bio);
enum elv_merge mq_try_merge(struct request *rq, struct bio *bio);
/* Merge bio into rq on the side given; counts it and releases its entry. */
void mq_merge_bio(struct request *rq, struct bio *bio, enum elv_merge how);
/* Try the last few requests of a list, as blk_bio_list_merge does. */
bool mq_bio_list_merge(struct mq_queue *q, struct rq_list *list,
		       struct bio *bio);

/*
 * Request merging for elevators, after elv_merge(), blk_mq_sched_try_merge()
 * and attempt_merge() in Linux.  Everything here runs under the lock the
 * elevator holds over hctx's queued requests.
 *
 * An elevator hashes each mergeable request it queues (elv_rqhash_add) and
 * unhashes it when it takes it off its lists (elv_rqhash_del, which also
 * forgets it as the last merge).  From its bio_merge hook it calls
 * mq_sched_try_merge(), which tries the last merge, then a back merge
 * through the hash, then the elevator's request_merge hook; after a bio
 * merge it tries to merge the grown request with its neighbour
 * (next_request/former_request) and calls requests_merged so that the
 * elevator forgets the emptied request.  *free is that request: the caller
 * frees it with mq_free_request() once it has dropped its lock.
 */
bool rq_mergeable(const struct request *rq);
void elv_rqhash_add(struct mq_hw_ctx *hctx, struct request *rq);
void elv_rqhash_del(struct mq_hw_ctx *hctx, struct request *rq);
struct request *elv_rqhash_find(struct mq_hw_ctx *hctx, uint64_t sector);
bool mq_sched_try_merge(struct mq_hw_ctx *hctx, struct bio *bio,
			struct request **free);
/*
 * From insert_requests, for a request that is not queued yet (nor at the
 * head): merge it at the back of a queued one if they touch, then that
 * one with its predecessor, and so on (Linux's
 * blk_mq_sched_try_insert_merge).  True if rq was merged: the emptied
 * requests are on *free, for mq_free_request() once the lock is dropped.
 * requests_merged may then see a next that the elevator has not queued.
 */
bool mq_sched_try_insert_merge(struct mq_hw_ctx *hctx, struct request *rq,
			       struct rq_list *free);

/* Monotonic clock in nanoseconds. */
uint64_t mq_now_ns(void);

/*
 * A plug, after struct blk_plug: a submitter that sends a batch of bios
 * (an event loop answering one read's worth of requests) brackets it with
 * mq_start_plug and mq_finish_plug.  Inside it the core reads the clock
 * for its accounting (request start, dispatch and completion times, the
 * statistics and elevators fed from them) once, and every request of the
 * batch carries that time, as blk_time_get_ns does with plug->cur_ktime
 * since Linux 6.9.  A request that completes inside the plug that
 * submitted it then counts 0 ns of latency.  Device models and timers
 * keep using mq_now_ns.  One plug per thread: a nested start is ignored,
 * as blk_start_plug ignores it.  Whenever the core puts the thread to
 * sleep, the cached time is dropped and the requests held are sent, as
 * Linux does on schedule: they hold tags and the queue's usage, which
 * the sleep may be waiting for.
 */
struct mq_plug {
	uint64_t cur_ns; /* 0: not read yet */
	/*
	 * Requests for a driver with queue_rqs wait here, all for one hctx,
	 * until mq_finish_plug (or MQ_PLUG_MAX of them, another hctx's
	 * request, or the thread about to sleep) hands them over in one call,
	 * as blk_add_rq_to_plug and blk_mq_flush_plug_list do.
	 */
	struct rq_list mq_list;
	unsigned int rq_count;
	struct mq_hw_ctx *hctx;
};

/* Requests a plug holds at most, as BLK_MAX_REQUEST_COUNT. */
#define MQ_PLUG_MAX 32

void mq_start_plug(struct mq_plug *plug);
void mq_finish_plug(struct mq_plug *plug);
/* The accounting clock: the plug's cached time, or mq_now_ns(). */
uint64_t mq_time_get_ns(void);

#endif
