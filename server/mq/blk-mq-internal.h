/* SPDX-License-Identifier: GPL-2.0 */
/* Shared between the files of the request core; not for drivers. */
#ifndef MQBLK_BLK_MQ_INTERNAL_H
#define MQBLK_BLK_MQ_INTERNAL_H

#include "blk-mq.h"

/* ioprio.c */
void mq_bio_set_ioprio(struct mq_queue *q, struct bio *bio);
void mq_free_ioprio_map(struct mq_queue *q);

/* kblockd.c: a thread per queue that runs delayed work. */
struct mq_kblockd *kblockd_create(const char *name);
void kblockd_destroy(struct mq_kblockd *kb);
/* Run work after delay_ns; if already pending, the earlier time wins. */
void kblockd_schedule(struct mq_kblockd *kb, struct mq_delayed_work *work,
		      uint64_t delay_ns);
void kblockd_cancel(struct mq_kblockd *kb, struct mq_delayed_work *work);
/*
 * For tests: how often kblockd_schedule had to wake the thread, and when
 * the thread wakes by itself (0: it is awake, UINT64_MAX: never).
 */
void kblockd_peek(struct mq_kblockd *kb, uint64_t *wakeups,
		  uint64_t *sleep_until);

/* blk-mq-tag.c */
struct mq_tags {
	unsigned int nr_tags;
	unsigned int nr_reserved_tags;
	pthread_mutex_t lock;
	pthread_cond_t wait; /* blocking allocators (mq_alloc_request) */
	unsigned int nr_reserved_waiters;
	bool driver; /* the set's driver tags, not a scheduler's */
	unsigned int active_queues; /* queues using them, when shared */
	int *free_normal;
	unsigned int nr_free_normal;
	int *free_reserved;
	unsigned int nr_free_reserved;
	unsigned int nr_normal_busy; /* normal tags in use */
	/* bios (and blocking allocators) waiting for a tag, FIFO, bi_next */
	struct bio *wait_head;
	struct bio **wait_tail;
	struct request **static_rqs; /* preallocated, by tag */
	/*
	 * The request holding each tag.  Set without the lock when a tag is
	 * taken, as blk_mq_get_driver_tag sets it; cleared under the lock
	 * when the tag is put; read under the lock by mq_tags_busy_iter,
	 * which only takes what is in flight and holds a reference.
	 */
	_Atomic(struct request *) *rqs;
	void *rq_mem;
	struct mq_tag_set *set;
	unsigned int hctx_idx;
	atomic_uint nr_busy;
};

struct mq_tags *mq_alloc_tags(struct mq_tag_set *set, unsigned int hctx_idx,
			      unsigned int depth, unsigned int reserved);
void mq_free_tags(struct mq_tags *tags);
/*
 * A tag for hctx, which a driver tag is charged to (fair share); -1 if
 * none is free or hctx is over its share.
 */
int mq_get_tag(struct mq_tags *tags, struct mq_hw_ctx *hctx, bool reserved);
/* Sleeps until one is handed over; waits in the bio FIFO for a normal one. */
int mq_get_tag_wait(struct mq_tags *tags, struct mq_ctx *ctx, bool reserved);
/*
 * Take a normal tag for bio if fewer than bio->bi_tag_depth are in use
 * (the elevator's limit_depth); otherwise queue bio to be handed one when
 * it fits.  Returns true if bio was queued.
 */
bool mq_tag_wait_bio(struct mq_tags *tags, struct bio *bio, int *tag);
/*
 * Free a tag hctx held.  Waiting bios that can now take a tag get one:
 * they are returned chained through bi_next, each with its tag in bi_tag.
 */
struct bio *mq_put_tag(struct mq_tags *tags, struct mq_hw_ctx *hctx, int tag);
/*
 * hctx no longer counts as a user of its shared driver tags; returns the
 * waiting bios that the others' larger share lets in, as mq_put_tag.
 */
struct bio *mq_tag_idle(struct mq_tags *tags, struct mq_hw_ctx *hctx);
bool mq_tag_is_reserved(struct mq_tags *tags, int tag);
/* Call fn on each started request holding a tag of tags (ref held). */
void mq_tags_busy_iter(struct mq_tags *tags, busy_tag_iter_fn *fn, void *data);

/* blk-mq.c */
void mq_bio_got_tag(struct bio *bio, int tag);
bool mq_get_driver_tag(struct request *rq);
void mq_put_request_ref(struct request *rq);
bool mq_get_request_ref(struct request *rq);
void mq_sched_restart(struct mq_tag_set *set);
void __mq_submit_bio(struct mq_ctx *ctx, struct bio *bio, bool async);
void mq_queue_exit(struct mq_queue *q);

/* blk-flush.c: returns true if it took the bio (completed or rerouted). */
bool mq_flush_intercept(struct mq_ctx *ctx, struct bio *bio, bool async);

/* blk-merge.c: split bio to the queue limits, submitting every piece. */
bool mq_split_bio(struct mq_ctx *ctx, struct bio *bio, bool async);
void bio_endio(struct bio *bio);

/*
 * blk-zoned.c.  blk_zone_plug_bio returns true if it took the bio (plugged
 * behind its zone's write in flight, or failed).  bio_endio calls
 * blk_zone_write_plug_bio_endio for a bio with bi_zone_wplug set; a bio
 * standing in for another (FUA's data step) takes over its plug with
 * blk_zone_write_plug_transfer.
 */
bool blk_zone_plug_bio(struct mq_queue *q, struct bio *bio);
void blk_zone_write_plug_bio_endio(struct bio *bio);
void blk_zone_write_plug_transfer(struct bio *from, struct bio *to);
/* A DISCARD that resets zones resets their plugs first. */
void blk_zone_plug_discard(struct mq_queue *q, const struct bio *bio);
/* A zone append the plug cannot take: ended with EIO, returns true. */
bool blk_zone_append_check(struct mq_queue *q, struct bio *bio);
int disk_alloc_zone_resources(struct mq_queue *q);
void disk_free_zone_resources(struct mq_queue *q);

/* blk-stat.c */
void mq_stat_start(struct request *rq, uint64_t now);
void mq_stat_unstart(struct request *rq, uint64_t now);
void mq_stat_done(struct request *rq, int status, uint64_t now);
void mq_stat_merge(struct request *rq);

/*
 * Before the core puts a thread to sleep: its plug's requests go
 * (blk_flush_plug) and its time goes stale (blk_plug_invalidate_ts).
 */
void mq_plug_before_sleep(void);
/* The calling thread's plug, or NULL (current->plug). */
struct mq_plug *mq_current_plug(void);
/* Hand the requests a plug holds to their driver (blk_mq_flush_plug_list) */
void mq_flush_plug_list(struct mq_plug *plug);

/* blk-timeout.c */
void mq_add_timer(struct request *rq);
void mq_timeout_work(struct mq_delayed_work *work);

/* blk-mq-sched.c */
void mq_sched_free_tags(struct mq_queue *q);

#endif
