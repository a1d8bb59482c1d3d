/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tags, after block/blk-mq-tag.c.  Each tag owns one preallocated request
 * with the driver's pdu behind it.  Tags 0..nr_reserved_tags-1 form the
 * reserved pool, which only mq_alloc_request(RESERVED) draws from.
 *
 * A bio that finds no tag does not sleep: it waits in a FIFO and the next
 * freed tag is handed to it directly, so an event loop never blocks and a
 * freed tag cannot be missed.
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
	tags->rqs = calloc(depth, sizeof(struct request *));
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

static int __mq_get_tag(struct mq_tags *tags, bool reserved)
{
	if (reserved) {
		if (!tags->nr_free_reserved)
			return -1;
		return tags->free_reserved[--tags->nr_free_reserved];
	}
	if (!tags->nr_free_normal)
		return -1;
	tags->nr_normal_busy++;
	return tags->free_normal[--tags->nr_free_normal];
}

int mq_get_tag(struct mq_tags *tags, bool reserved)
{
	int tag;

	pthread_mutex_lock(&tags->lock);
	tag = __mq_get_tag(tags, reserved);
	pthread_mutex_unlock(&tags->lock);
	if (tag >= 0)
		atomic_fetch_add(&tags->nr_busy, 1);
	return tag;
}

int mq_get_tag_wait(struct mq_tags *tags, bool reserved)
{
	int tag;

	pthread_mutex_lock(&tags->lock);
	while ((tag = __mq_get_tag(tags, reserved)) < 0) {
		tags->nr_blocking_waiters++;
		pthread_cond_wait(&tags->wait, &tags->lock);
		tags->nr_blocking_waiters--;
	}
	pthread_mutex_unlock(&tags->lock);
	atomic_fetch_add(&tags->nr_busy, 1);
	return tag;
}

bool mq_tag_wait_bio(struct mq_tags *tags, struct bio *bio, int *tag)
{
	pthread_mutex_lock(&tags->lock);
	*tag = -1;
	/*
	 * A free tag that fits takes precedence over waiters: they wait only
	 * because their depth did not fit, and mq_put_tag hands the next
	 * free tag to the oldest one that fits.  So a sync read never queues
	 * behind writes that async_depth holds back.
	 */
	if (tags->nr_normal_busy < bio->bi_tag_depth)
		*tag = __mq_get_tag(tags, false);
	if (*tag < 0) {
		bio->bi_next = NULL;
		*tags->wait_tail = bio;
		tags->wait_tail = &bio->bi_next;
	}
	pthread_mutex_unlock(&tags->lock);
	if (*tag >= 0)
		atomic_fetch_add(&tags->nr_busy, 1);
	return *tag < 0;
}

bool mq_tag_is_reserved(struct mq_tags *tags, int tag)
{
	return tag >= 0 && (unsigned int)tag < tags->nr_reserved_tags;
}

/* The oldest waiting bio whose depth limit lets it take a tag now. */
static struct bio *mq_tag_pick_waiter(struct mq_tags *tags)
{
	struct bio **link, *bio;

	for (link = &tags->wait_head; (bio = *link); link = &bio->bi_next) {
		if (tags->nr_normal_busy >= bio->bi_tag_depth)
			continue;
		*link = bio->bi_next;
		if (tags->wait_tail == &bio->bi_next)
			tags->wait_tail = link;
		bio->bi_next = NULL;
		return bio;
	}
	return NULL;
}

struct bio *mq_put_tag(struct mq_tags *tags, int tag, int *handoff_tag)
{
	struct bio *bio = NULL;

	pthread_mutex_lock(&tags->lock);
	tags->rqs[tag] = NULL;
	if (mq_tag_is_reserved(tags, tag)) {
		tags->free_reserved[tags->nr_free_reserved++] = tag;
	} else {
		tags->nr_normal_busy--;
		if (!tags->nr_blocking_waiters)
			bio = mq_tag_pick_waiter(tags);
		if (bio) {
			/* Hand the tag straight to the waiting bio. */
			tags->nr_normal_busy++;
			*handoff_tag = tag;
		} else {
			tags->free_normal[tags->nr_free_normal++] = tag;
		}
	}
	if (tags->nr_blocking_waiters)
		pthread_cond_broadcast(&tags->wait);
	pthread_mutex_unlock(&tags->lock);
	if (!bio)
		atomic_fetch_sub(&tags->nr_busy, 1);
	return bio;
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
		struct request *rq = tags->rqs[i];

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
