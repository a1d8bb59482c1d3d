// SPDX-License-Identifier: GPL-2.0
/*
 * A device's interrupt thread, in the manner of the kernel's hrtimers:
 * work is kept in due order (absolute CLOCK_MONOTONIC nanoseconds) and
 * the thread sleeps on a condition variable until the first deadline,
 * with a timer slack of 1 ns, so a 100 us completion is not rounded up
 * to an event loop's millisecond.  Raisers queue work under a mutex and
 * signal the thread only when it sleeps past the new work's deadline.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "irq.h"
#include "../../server/mq/blk-mq.h"
#include "../../server/mq/log.h"

TAILQ_HEAD(irq_work_list, irq_work);

struct irq_thread {
	pthread_t thread;
	char name[16];

	pthread_mutex_t lock;
	pthread_cond_t cond;	      /* CLOCK_MONOTONIC */
	struct irq_work_list pending; /* under lock, by due_ns */
	bool sleeping;		      /* under lock: waiting on cond */
	uint64_t sleep_until;	      /* under lock: 0 = until signalled */
	bool stopping;		      /* under lock */
	bool dead;		      /* under lock: the thread has returned */
};

static void run_work(struct irq_work *work)
{
	work->fn(work);
}

/* Insert in due order; equal deadlines keep the order they came in. */
static void irq_insert(struct irq_thread *t, struct irq_work *work)
{
	struct irq_work *pos = TAILQ_LAST(&t->pending, irq_work_list);

	while (pos && pos->due_ns > work->due_ns)
		pos = TAILQ_PREV(pos, irq_work_list, entry);
	if (pos)
		TAILQ_INSERT_AFTER(&t->pending, pos, work, entry);
	else
		TAILQ_INSERT_HEAD(&t->pending, work, entry);
}

static void irq_sleep(struct irq_thread *t, uint64_t until_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(until_ns / 1000000000ull),
		.tv_nsec = (long)(until_ns % 1000000000ull),
	};

	t->sleeping = true;
	t->sleep_until = until_ns;
	if (until_ns)
		pthread_cond_timedwait(&t->cond, &t->lock, &ts);
	else
		pthread_cond_wait(&t->cond, &t->lock);
	t->sleeping = false;
}

/*
 * Take the work due now (all of it when stopping) off the pending list,
 * under t->lock.  Returns false when there is none.
 */
static bool irq_take_due(struct irq_thread *t, struct irq_work_list *list)
{
	struct irq_work *work;
	uint64_t now = 0;

	TAILQ_INIT(list);
	while ((work = TAILQ_FIRST(&t->pending))) {
		if (!t->stopping) {
			if (!now || work->due_ns > now)
				now = mq_now_ns();
			if (work->due_ns > now)
				break;
		}
		TAILQ_REMOVE(&t->pending, work, entry);
		TAILQ_INSERT_TAIL(list, work, entry);
	}
	return !TAILQ_EMPTY(list);
}

static void *irq_thread_fn(void *arg)
{
	struct irq_thread *t = arg;
	struct irq_work_list list;
	struct irq_work *work;
	sigset_t all;

	/* Signals belong to the front end's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), t->name);
	/* Best effort: without it every wait may end up to 50 us late. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0))
		pr_debug("%s: no 1 ns timer slack: %s", t->name,
			 strerror(errno));

	pthread_mutex_lock(&t->lock);
	for (;;) {
		if (!irq_take_due(t, &list)) {
			if (t->stopping)
				break;
			work = TAILQ_FIRST(&t->pending);
			irq_sleep(t, work ? work->due_ns : 0);
			continue;
		}
		pthread_mutex_unlock(&t->lock);
		while ((work = TAILQ_FIRST(&list))) {
			TAILQ_REMOVE(&list, work, entry);
			run_work(work);
		}
		pthread_mutex_lock(&t->lock);
	}
	/* Stopping and nothing left: later raisers run their work inline. */
	t->dead = true;
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

struct irq_thread *irq_thread_create(const char *name)
{
	struct irq_thread *t = calloc(1, sizeof(*t));
	pthread_condattr_t attr;
	int err;

	if (!t)
		return NULL;
	snprintf(t->name, sizeof(t->name), "%s", name);
	TAILQ_INIT(&t->pending);
	err = pthread_mutex_init(&t->lock, NULL);
	if (err)
		goto free_t;
	err = pthread_condattr_init(&attr);
	if (err)
		goto destroy_lock;
	err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(&t->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (err)
		goto destroy_lock;

	err = pthread_create(&t->thread, NULL, irq_thread_fn, t);
	if (err)
		goto destroy_cond;
	return t;

destroy_cond:
	pthread_cond_destroy(&t->cond);
destroy_lock:
	pthread_mutex_destroy(&t->lock);
free_t:
	pr_err("%s: cannot start the irq thread: %s", name, mq_strerror(err));
	free(t);
	return NULL;
}

void irq_thread_destroy(struct irq_thread *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	/* A raiser still inside irq_raise holds the lock; wait it out. */
	pthread_mutex_lock(&t->lock);
	pthread_mutex_unlock(&t->lock);

	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Queue work due at due_ns; wake the thread if it sleeps past it. */
static bool irq_queue(struct irq_thread *t, struct irq_work *work)
{
	bool dead;

	/*
	 * Signal under the lock: once the work is queued it may complete a
	 * bio whose owner then destroys t, and irq_thread_destroy takes
	 * this lock before it frees anything.
	 */
	pthread_mutex_lock(&t->lock);
	dead = t->dead;
	if (!dead) {
		irq_insert(t, work);
		if (t->sleeping &&
		    (!t->sleep_until || work->due_ns < t->sleep_until)) {
			/* One signal per sleep: the next raiser sees 0. */
			t->sleep_until = work->due_ns;
			pthread_cond_signal(&t->cond);
		}
	}
	pthread_mutex_unlock(&t->lock);
	return !dead;
}

void irq_raise(struct irq_thread *t, struct irq_work *work, irq_work_fn *fn,
	       uint64_t delay_ns)
{
	work->fn = fn;
	work->delay_ns = delay_ns;
	work->due_ns = mq_now_ns() + delay_ns;
	/* Raised while the device is going away: no thread left to run it. */
	if (!irq_queue(t, work))
		run_work(work);
}

/* A tick's work: run it, then queue it one interval on. */
static void irq_tick_fn(struct irq_work *work)
{
	struct irq_tick *tick =
		(struct irq_tick *)((char *)work -
				    offsetof(struct irq_tick, work));
	struct irq_thread *t = tick->t;
	uint64_t now;
	bool stopping;

	/* A thread draining to stop runs no more ticks. */
	pthread_mutex_lock(&t->lock);
	stopping = t->stopping;
	pthread_mutex_unlock(&t->lock);
	if (stopping)
		return;
	tick->fn(tick);
	now = mq_now_ns();
	work->due_ns += tick->interval_ns;
	/* Late by more than an interval: skip the ticks missed. */
	if (work->due_ns < now)
		work->due_ns = now + tick->interval_ns;
	irq_queue(t, work);
}

int irq_tick_start(struct irq_thread *t, struct irq_tick *tick,
		   void (*fn)(struct irq_tick *), uint64_t interval_ns)
{
	if (!interval_ns) {
		errno = EINVAL;
		return -1;
	}
	tick->fn = fn;
	tick->interval_ns = interval_ns;
	tick->t = t;
	irq_raise(t, &tick->work, irq_tick_fn, interval_ns);
	return 0;
}
