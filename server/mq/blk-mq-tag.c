/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tags, after block/blk-mq-tag.c.  Each tag owns one preallocated request
 * with the driver's pdu behind it.  Tags 0..nr_reserved_tags-1 form the
 * reserved pool, which only mq_alloc_request(RESERVED) draws from.
 *
 * A bio that finds no tag does not sleep: it waits in a FIFO and the next
 * freed tag is handed to it directly, so an event loop never blocks and a
 * freed tag cannot be missed.  A blocking mq_alloc_request waits for a
 * normal tag in the same FIFO, so neither overtakes the other.
 *
 * The driver tags of a set that several queues share are divided fairly:
 * each queue that uses them counts as active, and an active queue takes a
 * normal tag only while it holds less than its share (hctx_may_queue).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blk-mq-internal.h"

static size_t rq_size(const struct mq_tag_set *set)
{
	size_t size = sizeof(struct request) + set->cmd_size;

	return (size + 15) & ~(size_t)15;
}

struct mq_tags *mq_alloc_tags(struct mq_tag_set *set, unsigned int hctx_idx,
			      unsigned int depth, unsigned int reserved)
{
	struct mq_tags *tags;
	size_t size = rq_size(set);
	unsigned int i;

	tags = calloc(1, sizeof(*tags));
	if (!tags)
		return NULL;
	tags->nr_tags = depth;
	tags->nr_reserved_tags = reserved;
	tags->set = set;
	tags->hctx_idx = hctx_idx;
	tags->wait_tail = &tags->wait_head;
	pthread_mutex_init(&tags->lock, NULL);
	pthread_cond_init(&tags->wait, NULL);

	tags->free_normal = calloc(depth, sizeof(int));
	tags->free_reserved = calloc(reserved ? reserved : 1, sizeof(int));
	tags->static_rqs = calloc(depth, sizeof(struct request *));
	tags->rqs = calloc(depth, sizeof(*tags->rqs));
	if (posix_memalign(&tags->rq_mem, 64, size * depth))
		tags->rq_mem = NULL;
	if (!tags->free_normal || !tags->free_reserved || !tags->static_rqs ||
	    !tags->rqs || !tags->rq_mem)
		goto fail;
	memset(tags->rq_mem, 0, size * depth);

	/* Free stacks: pop order hands out low tags first. */
	for (i = depth; i > reserved; i--)
		tags->free_normal[tags->nr_free_normal++] = (int)i - 1;
	for (i = reserved; i > 0; i--)
		tags->free_reserved[tags->nr_free_reserved++] = (int)i - 1;

	for (i = 0; i < depth; i++) {
		struct request *rq =
			(struct request *)((char *)tags->rq_mem + i * size);

		rq->tag = -1;
		rq->internal_tag = -1;
		tags->static_rqs[i] = rq;
		if (set->ops->init_request &&
		    set->ops->init_request(set, rq, hctx_idx)) {
			while (i-- > 0)
				if (set->ops->exit_request)
					set->ops->exit_request(
						set, tags->static_rqs[i],
						hctx_idx);
			goto fail;
		}
	}
	return tags;

fail:
	free(tags->free_normal);
	free(tags->free_reserved);
	free(tags->static_rqs);
	free(tags->rqs);
	free(tags->rq_mem);
	pthread_cond_destroy(&tags->wait);
	pthread_mutex_destroy(&tags->lock);
	free(tags);
	return NULL;
}

void mq_free_tags(struct mq_tags *tags)
{
	unsigned int i;

	if (!tags)
		return;
	if (tags->set->ops->exit_request)
		for (i = 0; i < tags->nr_tags; i++)
			tags->set->ops->exit_request(
				tags->set, tags->static_rqs[i], tags->hctx_idx);
	free(tags->free_normal);
	free(tags->free_reserved);
	free(tags->static_rqs);
	free(tags->rqs);
	free(tags->rq_mem);
	pthread_cond_destroy(&tags->wait);
	pthread_mutex_destroy(&tags->lock);
	free(tags);
}

/* ------------------------------------------------------------------ */
/* fair share of a shared tag set, after hctx_may_queue                */

static bool mq_tags_shared(const struct mq_tags *tags)
{
	return tags->driver &&
	       (__atomic_load_n(&tags->set->flags, __ATOMIC_RELAXED) &
		MQ_F_TAG_SHARED);
}

/*
 * hctx wants a normal tag of tags: count its queue as an active user of
 * the set, as blk_mq_tag_busy does.  tags->lock held.
 */
static void mq_tag_busy(struct mq_tags *tags, struct mq_hw_ctx *hctx)
{
	if (!hctx || !mq_tags_shared(tags) ||
	    (atomic_load(&hctx->state) & MQ_S_TAG_ACTIVE))
		return;
	atomic_fetch_or(&hctx->state, MQ_S_TAG_ACTIVE);
	tags->active_queues++;
}

static void __mq_tag_idle(struct mq_tags *tags, struct mq_hw_ctx *hctx)
{
	if (!(atomic_load(&hctx->state) & MQ_S_TAG_ACTIVE))
		return;
	atomic_fetch_and(&hctx->state, ~MQ_S_TAG_ACTIVE);
	tags->active_queues--;
}

static bool mq_tag_has_waiter_of(struct mq_tags *tags, struct mq_hw_ctx *hctx)
{
	struct bio *bio;

	for (bio = tags->wait_head; bio; bio = bio->bi_next)
		if (bio->bi_ctx && bio->bi_ctx->hctx == hctx)
			return true;
	return false;
}

/*
 * May hctx take one more normal tag?  Each active queue of a shared set
 * gets an equal part of the depth, at least 4, as hctx_may_queue gives.
 * tags->lock held.
 */
static bool mq_hctx_may_queue(struct mq_tags *tags, struct mq_hw_ctx *hctx)
{
	unsigned int depth = tags->nr_tags - tags->nr_reserved_tags;
	unsigned int users = tags->active_queues, share;

	if (!hctx || !mq_tags_shared(tags) || depth == 1 || !users)
		return true;
	share = (depth + users - 1) / users;
	if (share < 4)
		share = 4;
	return atomic_load(&hctx->nr_active) < share;
}

/* The hctx a waiting bio will charge its driver tag to, if tags are that. */
static struct mq_hw_ctx *mq_waiter_hctx(struct mq_tags *tags, struct bio *bio)
{
	if (!tags->driver || !bio->bi_ctx)
		return NULL;
	return bio->bi_ctx->hctx;
}

/* ------------------------------------------------------------------ */
/* getting and putting tags                                            */

/* A normal tag for hctx (NULL: not charged to a queue); lock held. */
static int __mq_get_normal_tag(struct mq_tags *tags, struct mq_hw_ctx *hctx)
{
	if (!tags->nr_free_normal || !mq_hctx_may_queue(tags, hctx))
		return -1;
	tags->nr_normal_busy++;
	if (tags->driver && hctx)
		atomic_fetch_add(&hctx->nr_active, 1);
	atomic_fetch_add(&tags->nr_busy, 1);
	return tags->free_normal[--tags->nr_free_normal];
}

static int __mq_get_tag(struct mq_tags *tags, struct mq_hw_ctx *hctx,
			bool reserved)
{
	if (reserved) {
		if (!tags->nr_free_reserved)
			return -1;
		atomic_fetch_add(&tags->nr_busy, 1);
		return tags->free_reserved[--tags->nr_free_reserved];
	}
	mq_tag_busy(tags, hctx);
	return __mq_get_normal_tag(tags, hctx);
}

int mq_get_tag(struct mq_tags *tags, struct mq_hw_ctx *hctx, bool reserved)
{
	int tag;

	pthread_mutex_lock(&tags->lock);
	tag = __mq_get_tag(tags, hctx, reserved);
	pthread_mutex_unlock(&tags->lock);
	return tag;
}

static void mq_tag_enqueue_waiter(struct mq_tags *tags, struct bio *bio)
{
	bio->bi_next = NULL;
	*tags->wait_tail = bio;
	tags->wait_tail = &bio->bi_next;
}

/* The end_io of a blocking allocator's place in the bio FIFO. */
static void mq_tag_waiter_end_io(struct bio *bio)
{
	(void)bio;
}

int mq_get_tag_wait(struct mq_tags *tags, struct mq_ctx *ctx, bool reserved)
{
	struct mq_hw_ctx *hctx = ctx->hctx;
	struct bio waiter;
	int tag;

	mq_plug_before_sleep(); /* it may sleep */
	pthread_mutex_lock(&tags->lock);
	if (reserved) {
		/* The reserved pool has no bios waiting on it. */
		while ((tag = __mq_get_tag(tags, hctx, true)) < 0) {
			tags->nr_reserved_waiters++;
			pthread_cond_wait(&tags->wait, &tags->lock);
			tags->nr_reserved_waiters--;
		}
		pthread_mutex_unlock(&tags->lock);
		return tag;
	}
	/*
	 * A normal tag: wait in the same FIFO as bios, so that a tag freed
	 * while we sleep goes to whoever waited first, bio or allocator.
	 */
	tag = __mq_get_tag(tags, hctx, false);
	if (tag < 0) {
		bio_init(&waiter, REQ_OP_DRV_IN, 0, 0, NULL);
		waiter.bi_end_io = mq_tag_waiter_end_io;
		waiter.bi_ctx = ctx;
		waiter.bi_tag_depth = tags->nr_tags;
		waiter.bi_tag = -1;
		mq_tag_enqueue_waiter(tags, &waiter);
		while (waiter.bi_tag < 0)
			pthread_cond_wait(&tags->wait, &tags->lock);
		tag = waiter.bi_tag;
	}
	pthread_mutex_unlock(&tags->lock);
	return tag;
}

bool mq_tag_wait_bio(struct mq_tags *tags, struct bio *bio, int *tag)
{
	pthread_mutex_lock(&tags->lock);
	*tag = -1;
	/*
	 * A free tag that fits takes precedence over waiters: they wait only
	 * because their depth or their queue's share did not fit, and
	 * mq_put_tag hands each freed tag to the oldest one that fits.  So a
	 * sync read never queues behind writes that async_depth holds back.
	 */
	mq_tag_busy(tags, mq_waiter_hctx(tags, bio));
	if (tags->nr_normal_busy < bio->bi_tag_depth)
		*tag = __mq_get_normal_tag(tags, mq_waiter_hctx(tags, bio));
	if (*tag < 0)
		mq_tag_enqueue_waiter(tags, bio);
	pthread_mutex_unlock(&tags->lock);
	return *tag < 0;
}

bool mq_tag_is_reserved(struct mq_tags *tags, int tag)
{
	return tag >= 0 && (unsigned int)tag < tags->nr_reserved_tags;
}

/* The oldest waiter whose depth limit and share let it take a tag now. */
static struct bio *mq_tag_pick_waiter(struct mq_tags *tags)
{
	struct bio **link, *bio;

	for (link = &tags->wait_head; (bio = *link); link = &bio->bi_next) {
		if (tags->nr_normal_busy >= bio->bi_tag_depth ||
		    !mq_hctx_may_queue(tags, mq_waiter_hctx(tags, bio)))
			continue;
		*link = bio->bi_next;
		if (tags->wait_tail == &bio->bi_next)
			tags->wait_tail = link;
		bio->bi_next = NULL;
		return bio;
	}
	return NULL;
}

/*
 * Hand free normal tags to the waiters that fit, oldest first; returns
 * the bios among them, chained, each with its tag in bi_tag.  Blocking
 * allocators are woken instead.  tags->lock held.
 */
static struct bio *mq_tag_wake_waiters(struct mq_tags *tags)
{
	struct bio *bio, *head = NULL, **tail = &head;
	bool woke = false;

	while (tags->nr_free_normal && (bio = mq_tag_pick_waiter(tags))) {
		bio->bi_tag =
			__mq_get_normal_tag(tags, mq_waiter_hctx(tags, bio));
		if (bio->bi_end_io == mq_tag_waiter_end_io) {
			woke = true;
			continue;
		}
		*tail = bio;
		tail = &bio->bi_next;
	}
	if (woke)
		pthread_cond_broadcast(&tags->wait);
	return head;
}

struct bio *mq_put_tag(struct mq_tags *tags, struct mq_hw_ctx *hctx, int tag)
{
	struct bio *bios = NULL;

	pthread_mutex_lock(&tags->lock);
	atomic_store_explicit(&tags->rqs[tag], NULL, memory_order_relaxed);
	atomic_fetch_sub(&tags->nr_busy, 1);
	if (mq_tag_is_reserved(tags, tag)) {
		tags->free_reserved[tags->nr_free_reserved++] = tag;
		if (tags->nr_reserved_waiters)
			pthread_cond_broadcast(&tags->wait);
	} else {
		tags->nr_normal_busy--;
		tags->free_normal[tags->nr_free_normal++] = tag;
		if (tags->driver && hctx &&
		    atomic_fetch_sub(&hctx->nr_active, 1) == 1 &&
		    !mq_tag_has_waiter_of(tags, hctx))
			__mq_tag_idle(tags, hctx); /* the others' share grows */
		bios = mq_tag_wake_waiters(tags);
	}
	pthread_mutex_unlock(&tags->lock);
	return bios;
}

struct bio *mq_tag_idle(struct mq_tags *tags, struct mq_hw_ctx *hctx)
{
	struct bio *bios;

	pthread_mutex_lock(&tags->lock);
	__mq_tag_idle(tags, hctx);
	bios = mq_tag_wake_waiters(tags);
	pthread_mutex_unlock(&tags->lock);
	return bios;
}

void mq_tags_busy_iter(struct mq_tags *tags, busy_tag_iter_fn *fn, void *data)
{
	struct request **busy;
	unsigned int i, n = 0;

	busy = calloc(tags->nr_tags, sizeof(*busy));
	if (!busy)
		return;
	pthread_mutex_lock(&tags->lock);
	for (i = 0; i < tags->nr_tags; i++) {
		struct request *rq = atomic_load_explicit(&tags->rqs[i],
							  memory_order_acquire);

		if (rq && atomic_load(&rq->state) == MQ_RQ_IN_FLIGHT &&
		    mq_get_request_ref(rq))
			busy[n++] = rq;
	}
	pthread_mutex_unlock(&tags->lock);

	for (i = 0; i < n; i++) {
		bool more = fn(busy[i], data);

		mq_put_request_ref(busy[i]);
		if (!more) {
			while (++i < n)
				mq_put_request_ref(busy[i]);
			break;
		}
	}
	free(busy);
}

bool mq_tags_info(const struct mq_tags *tags, struct mq_tags_info *info)
{
	if (!tags)
		return false;
	info->nr_tags = tags->nr_tags;
	info->nr_reserved_tags = tags->nr_reserved_tags;
	info->busy = atomic_load(&tags->nr_busy);
	return true;
}
