/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kblockd: the thread that runs a queue's delayed work (delayed hw queue
 * runs, requeue kicks, the timeout scan).  A handful of works per queue,
 * so a list scanned for the earliest deadline is enough.
 *
 * Arming a work wakes the thread only if it would otherwise sleep past the
 * new deadline, as a kernel reprograms its timer only for an earlier
 * expiry.  BFQ arms its idle slice on nearly every completion and a new
 * request disarms it again; waking the thread each time would cost a
 * context switch per request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blk-mq-internal.h"
#include "log.h"

struct mq_kblockd {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	TAILQ_HEAD(, mq_delayed_work) works;
	/* When the thread wakes by itself; 0: it runs, UINT64_MAX: never */
	uint64_t sleep_until;
	uint64_t wakeups; /* by kblockd_schedule */
	bool exit;
	pthread_t thread;
};

uint64_t mq_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's plug, as current->plug. */
static __thread struct mq_plug *current_plug;

void mq_start_plug(struct mq_plug *plug)
{
	if (current_plug)
		return; /* nested: the outer plug stays */
	plug->cur_ns = 0;
	TAILQ_INIT(&plug->mq_list);
	plug->rq_count = 0;
	plug->hctx = NULL;
	current_plug = plug;
}

void mq_finish_plug(struct mq_plug *plug)
{
	if (current_plug != plug)
		return;
	/* Still plugged while they go: they share the batch's clock. */
	mq_flush_plug_list(plug);
	current_plug = NULL;
}

struct mq_plug *mq_current_plug(void)
{
	return current_plug;
}

uint64_t mq_time_get_ns(void)
{
	struct mq_plug *plug = current_plug;

	if (!plug)
		return mq_now_ns();
	if (!plug->cur_ns)
		plug->cur_ns = mq_now_ns();
	return plug->cur_ns;
}

/*
 * The thread is about to sleep: what its plug holds goes now, since the
 * sleep may wait for it, and the plug's time goes stale.
 */
void mq_plug_before_sleep(void)
{
	if (!current_plug)
		return;
	mq_flush_plug_list(current_plug);
	current_plug->cur_ns = 0;
}

static struct mq_delayed_work *kblockd_earliest(struct mq_kblockd *kb)
{
	struct mq_delayed_work *w, *first = NULL;

	TAILQ_FOREACH (w, &kb->works, entry)
		if (!first || w->when_ns < first->when_ns)
			first = w;
	return first;
}

static void *kblockd_thread(void *arg)
{
	struct mq_kblockd *kb = arg;
	struct mq_delayed_work *w;
	struct timespec ts;

	pthread_mutex_lock(&kb->lock);
	while (!kb->exit) {
		w = kblockd_earliest(kb);
		if (!w) {
			kb->sleep_until = UINT64_MAX;
			pthread_cond_wait(&kb->cond, &kb->lock);
			kb->sleep_until = 0;
			continue;
		}
		if (w->when_ns > mq_now_ns()) {
			kb->sleep_until = w->when_ns;
			ts.tv_sec = w->when_ns / 1000000000ull;
			ts.tv_nsec = w->when_ns % 1000000000ull;
			pthread_cond_timedwait(&kb->cond, &kb->lock, &ts);
			kb->sleep_until = 0;
			continue;
		}
		TAILQ_REMOVE(&kb->works, w, entry);
		w->pending = false;
		pthread_mutex_unlock(&kb->lock);
		w->fn(w);
		pthread_mutex_lock(&kb->lock);
	}
	pthread_mutex_unlock(&kb->lock);
	return NULL;
}

struct mq_kblockd *kblockd_create(const char *name)
{
	struct mq_kblockd *kb = calloc(1, sizeof(*kb));
	pthread_condattr_t attr;
	char tname[32];
	int err;

	if (!kb)
		return NULL;
	pthread_mutex_init(&kb->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&kb->cond, &attr);
	pthread_condattr_destroy(&attr);
	TAILQ_INIT(&kb->works);
	err = pthread_create(&kb->thread, NULL, kblockd_thread, kb);
	if (err) {
		pr_err("%s: cannot start kblockd: %s", name, mq_strerror(err));
		pthread_cond_destroy(&kb->cond);
		pthread_mutex_destroy(&kb->lock);
		free(kb);
		errno = err;
		return NULL;
	}
	snprintf(tname, sizeof(tname), "kblockd/%s", name);
	tname[15] = '\0'; /* the kernel's limit for thread names */
	pthread_setname_np(kb->thread, tname);
	return kb;
}

void kblockd_destroy(struct mq_kblockd *kb)
{
	if (!kb)
		return;
	pthread_mutex_lock(&kb->lock);
	kb->exit = true;
	pthread_cond_signal(&kb->cond);
	pthread_mutex_unlock(&kb->lock);
	pthread_join(kb->thread, NULL);
	pthread_cond_destroy(&kb->cond);
	pthread_mutex_destroy(&kb->lock);
	free(kb);
}

void kblockd_schedule(struct mq_kblockd *kb, struct mq_delayed_work *work,
		      uint64_t delay_ns)
{
	uint64_t when = mq_now_ns() + delay_ns;

	pthread_mutex_lock(&kb->lock);
	if (work->pending) {
		if (when < work->when_ns)
			work->when_ns = when;
	} else {
		work->pending = true;
		work->when_ns = when;
		TAILQ_INSERT_TAIL(&kb->works, work, entry);
	}
	/* Awake, or waking before the deadline anyway: it will see the work. */
	if (work->when_ns < kb->sleep_until) {
		kb->sleep_until = 0; /* woken: it looks at the list again */
		kb->wakeups++;
		pthread_cond_signal(&kb->cond);
	}
	pthread_mutex_unlock(&kb->lock);
}

void kblockd_peek(struct mq_kblockd *kb, uint64_t *wakeups,
		  uint64_t *sleep_until)
{
	pthread_mutex_lock(&kb->lock);
	*wakeups = kb->wakeups;
	*sleep_until = kb->sleep_until;
	pthread_mutex_unlock(&kb->lock);
}

void kblockd_cancel(struct mq_kblockd *kb, struct mq_delayed_work *work)
{
	pthread_mutex_lock(&kb->lock);
	if (work->pending) {
		TAILQ_REMOVE(&kb->works, work, entry);
		work->pending = false;
	}
	pthread_mutex_unlock(&kb->lock);
}
