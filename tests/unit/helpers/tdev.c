/* SPDX-License-Identifier: GPL-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tdev.h"

enum mq_qrc tdev_complete(struct tdev *d, struct request *rq)
{
	mq_start_request(rq);
	mq_end_request(rq, 0);
	return MQ_QRC_OK;
}

enum mq_qrc tdev_hold(struct tdev *d, struct request *rq)
{
	mq_start_request(rq);
	pthread_mutex_lock(&d->lock);
	d->held[d->nheld++] = rq;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	return MQ_QRC_OK;
}

static enum mq_qrc tdev_queue_rq(struct mq_hw_ctx *hctx,
				 const struct mq_queue_data *bd)
{
	struct tdev *d = hctx->queue->queuedata;
	struct request *rq = bd->rq;
	struct bio *bio;
	unsigned int n = 0;

	rq_for_each_bio (bio, rq)
		n++;
	pthread_mutex_lock(&d->lock);
	if (d->nlog < TDEV_LOG) {
		d->log_op[d->nlog] = req_op(rq);
		d->log_bios[d->nlog] = n;
		d->log_sector[d->nlog] = blk_rq_pos(rq);
		d->nlog++;
	}
	d->last_thread = pthread_self();
	pthread_mutex_unlock(&d->lock);
	atomic_fetch_add(&d->calls, 1);
	pthread_mutex_lock(&d->lock);
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	return d->policy(d, rq);
}

static enum mq_eh_timer_return tdev_timeout(struct request *rq)
{
	struct tdev *d = rq->q->queuedata;

	atomic_fetch_add(&d->timeouts, 1);
	if (d->on_timeout)
		return d->on_timeout(d, rq);
	pthread_mutex_lock(&d->lock);
	for (unsigned int i = 0; i < d->nheld; i++) {
		if (d->held[i] == rq) {
			memmove(&d->held[i], &d->held[i + 1],
				(d->nheld - i - 1) * sizeof(d->held[0]));
			d->nheld--;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	mq_end_request(rq, ETIMEDOUT);
	return MQ_EH_DONE;
}

static const struct mq_ops tdev_ops = {
	.queue_rq = tdev_queue_rq,
	.timeout = tdev_timeout,
};

/*
 * queue_rqs: each request of the batch through queue_rq, in order; those
 * the policy refuses stay on the list for the core.
 */
static void tdev_queue_rqs(struct mq_hw_ctx *hctx, struct rq_list *list)
{
	struct tdev *d = hctx->queue->queuedata;
	struct rq_list refused = TAILQ_HEAD_INITIALIZER(refused);
	struct mq_queue_data bd;
	unsigned int n = 0;

	while ((bd.rq = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, bd.rq, queuelist);
		bd.last = TAILQ_EMPTY(list);
		if (tdev_queue_rq(hctx, &bd) != MQ_QRC_OK)
			TAILQ_INSERT_TAIL(&refused, bd.rq, queuelist);
		n++;
	}
	TAILQ_CONCAT(list, &refused, queuelist);
	pthread_mutex_lock(&d->lock);
	if (d->nbatches < TDEV_LOG)
		d->batch_size[d->nbatches++] = n;
	pthread_mutex_unlock(&d->lock);
}

static const struct mq_ops tdev_batch_ops = {
	.queue_rq = tdev_queue_rq,
	.queue_rqs = tdev_queue_rqs,
	.timeout = tdev_timeout,
};

void tdev_take_batches(struct tdev *d)
{
	d->set.ops = &tdev_batch_ops;
}

struct tdev *tdev_new(unsigned int nr_hw, unsigned int depth,
		      unsigned int reserved, unsigned int flags,
		      tdev_policy_fn *policy)
{
	struct tdev *d = calloc(1, sizeof(*d));

	if (!d)
		abort();
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->policy = policy;
	d->set.ops = &tdev_ops;
	d->set.nr_hw_queues = nr_hw;
	d->set.queue_depth = depth;
	d->set.reserved_tags = reserved;
	d->set.flags = flags;
	if (mq_alloc_tag_set(&d->set))
		abort();
	d->q = mq_init_queue(&d->set, 4, "tdev");
	if (!d->q)
		abort();
	d->q->queuedata = d;
	return d;
}

void tdev_free(struct tdev *d)
{
	mq_cleanup_queue(d->q);
	mq_free_tag_set(&d->set);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

void tdev_stop_queues(struct tdev *d)
{
	mq_stop_hw_queues(d->q);
	mq_quiesce_queue(d->q);
	mq_unquiesce_queue(d->q);
}

static void tbio_end_io(struct bio *bio)
{
	struct tbio *tb = bio->bi_private;
	struct tdev *d = tb->d;

	pthread_mutex_lock(&d->lock);
	atomic_fetch_add(&tb->done, 1);
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void tbio_init(struct tbio *tb, struct tdev *d, enum req_op op, uint64_t sector,
	       uint32_t bytes)
{
	bio_init(&tb->bio, op, sector, bytes,
		 bytes <= sizeof(tb->buf) ? tb->buf : NULL);
	tb->bio.bi_end_io = tbio_end_io;
	tb->bio.bi_private = tb;
	tb->d = d;
	atomic_store(&tb->done, 0);
}

void tbio_submit(struct tdev *d, struct tbio *tb, unsigned int cpu)
{
	mq_submit_bio(mq_get_ctx(d->q, cpu), &tb->bio);
}

int tbio_wait(struct tbio *tb)
{
	struct tdev *d = tb->d;

	pthread_mutex_lock(&d->lock);
	while (!atomic_load(&tb->done))
		pthread_cond_wait(&d->cond, &d->lock);
	pthread_mutex_unlock(&d->lock);
	return tb->bio.bi_status;
}

void tdev_wait_held(struct tdev *d, unsigned int n)
{
	pthread_mutex_lock(&d->lock);
	while (d->nheld < n)
		pthread_cond_wait(&d->cond, &d->lock);
	pthread_mutex_unlock(&d->lock);
}

bool tdev_wait_held_for(struct tdev *d, unsigned int n, unsigned int secs)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += secs;
	pthread_mutex_lock(&d->lock);
	while (d->nheld < n &&
	       pthread_cond_timedwait(&d->cond, &d->lock, &until) == 0)
		;
	ok = d->nheld >= n;
	pthread_mutex_unlock(&d->lock);
	return ok;
}

bool tdev_complete_held(struct tdev *d, int status)
{
	struct request *rq = NULL;

	pthread_mutex_lock(&d->lock);
	if (d->nheld) {
		rq = d->held[0];
		memmove(&d->held[0], &d->held[1],
			(d->nheld - 1) * sizeof(d->held[0]));
		d->nheld--;
	}
	pthread_mutex_unlock(&d->lock);
	if (rq)
		mq_end_request(rq, status);
	return rq != NULL;
}

unsigned int tdev_nheld(struct tdev *d)
{
	unsigned int n;

	pthread_mutex_lock(&d->lock);
	n = d->nheld;
	pthread_mutex_unlock(&d->lock);
	return n;
}

void tdev_run_now(struct tdev *d, unsigned int n)
{
	struct mq_hw_ctx *hctx = d->q->queue_hw_ctx[n];

	mq_run_hw_queue(hctx, false);
	/*
	 * If another thread's run had the queue (a delayed run an idle slice
	 * armed, say), ours only asked it to go round once more: wait for it.
	 */
	pthread_mutex_lock(&hctx->lock);
	while (hctx->running)
		pthread_cond_wait(&hctx->idle, &hctx->lock);
	pthread_mutex_unlock(&hctx->lock);
}

unsigned int tdev_calls(struct tdev *d)
{
	return atomic_load(&d->calls);
}

void tdev_wait_calls(struct tdev *d, unsigned int n)
{
	pthread_mutex_lock(&d->lock);
	while (atomic_load(&d->calls) < n)
		pthread_cond_wait(&d->cond, &d->lock);
	pthread_mutex_unlock(&d->lock);
}
