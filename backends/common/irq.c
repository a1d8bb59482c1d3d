// SPDX-License-Identifier: GPL-2.0
/*
 * A device's interrupt thread: its own libev loop, woken by an ev_async.
 * Other threads queue work on an incoming list under a mutex; the loop
 * takes the list, runs work due now and arms an ev_timer for the rest.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irq.h"
#include "../../server/mq/log.h"

TAILQ_HEAD(irq_work_list, irq_work);

struct irq_thread {
	struct ev_loop *loop;
	ev_async wake;
	pthread_t thread;
	char name[16];

	pthread_mutex_t lock;
	struct irq_work_list incoming; /* under lock */
	bool stopping;		       /* under lock */
	bool dead;		       /* under lock: the loop has returned */

	/* Loop thread only. */
	struct irq_work_list armed; /* waiting for their timer */
};

/* Hands a tick over to the loop thread, where its timer must start. */
struct tick_start {
	struct irq_work work;
	struct irq_tick *tick;
};

static void run_work(struct irq_work *work)
{
	work->fn(work);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct irq_work *work = w->data;
	struct irq_thread *t = ev_userdata(loop);

	TAILQ_REMOVE(&t->armed, work, entry);
	run_work(work);
}

/* Run everything queued or armed now, until nothing new arrives. */
static void drain(struct irq_thread *t)
{
	struct irq_work_list list;
	struct irq_work *work;

	for (;;) {
		pthread_mutex_lock(&t->lock);
		TAILQ_INIT(&list);
		TAILQ_CONCAT(&list, &t->armed, entry);
		TAILQ_CONCAT(&list, &t->incoming, entry);
		if (TAILQ_EMPTY(&list))
			t->dead = true;
		pthread_mutex_unlock(&t->lock);
		if (TAILQ_EMPTY(&list))
			return;

		while ((work = TAILQ_FIRST(&list))) {
			TAILQ_REMOVE(&list, work, entry);
			/*
			 * Also when not active: a timer that expired in
			 * this loop iteration is pending, and its callback
			 * would run after the work has been freed.
			 */
			ev_timer_stop(t->loop, &work->timer);
			run_work(work);
		}
	}
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct irq_thread *t = w->data;
	struct irq_work_list list;
	struct irq_work *work;
	bool stopping;

	TAILQ_INIT(&list);
	pthread_mutex_lock(&t->lock);
	TAILQ_CONCAT(&list, &t->incoming, entry);
	stopping = t->stopping;
	pthread_mutex_unlock(&t->lock);

	while ((work = TAILQ_FIRST(&list))) {
		TAILQ_REMOVE(&list, work, entry);
		if (!work->delay_ns) {
			run_work(work);
			continue;
		}
		ev_timer_init(&work->timer, timer_cb, work->delay_ns / 1e9, 0.);
		work->timer.data = work;
		ev_timer_start(loop, &work->timer);
		TAILQ_INSERT_TAIL(&t->armed, work, entry);
	}

	if (stopping) {
		drain(t);
		ev_break(loop, EVBREAK_ALL);
	}
}

static void *irq_thread_fn(void *arg)
{
	struct irq_thread *t = arg;
	sigset_t all;

	/* Signals belong to the front end's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), t->name);
	ev_run(t->loop, 0);
	return NULL;
}

struct irq_thread *irq_thread_create(const char *name)
{
	struct irq_thread *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return NULL;
	snprintf(t->name, sizeof(t->name), "%s", name);
	TAILQ_INIT(&t->incoming);
	TAILQ_INIT(&t->armed);
	err = pthread_mutex_init(&t->lock, NULL);
	if (err)
		goto free_t;

	t->loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
	if (!t->loop) {
		err = ENOMEM;
		goto destroy_lock;
	}
	ev_set_userdata(t->loop, t);
	ev_async_init(&t->wake, wake_cb);
	t->wake.data = t;
	ev_async_start(t->loop, &t->wake);

	err = pthread_create(&t->thread, NULL, irq_thread_fn, t);
	if (err)
		goto destroy_loop;
	return t;

destroy_loop:
	ev_loop_destroy(t->loop);
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
	ev_async_send(t->loop, &t->wake);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	/* A raiser still inside irq_raise holds the lock; wait it out. */
	pthread_mutex_lock(&t->lock);
	pthread_mutex_unlock(&t->lock);

	ev_loop_destroy(t->loop);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

void irq_raise(struct irq_thread *t, struct irq_work *work, irq_work_fn *fn,
	       uint64_t delay_ns)
{
	bool dead;

	work->fn = fn;
	work->delay_ns = delay_ns;
	ev_init(&work->timer, timer_cb);

	/*
	 * Wake the loop under the lock: once the work is queued it may
	 * complete a bio whose owner then destroys t, and irq_thread_destroy
	 * takes this lock before it frees anything.
	 */
	pthread_mutex_lock(&t->lock);
	dead = t->dead;
	if (!dead) {
		TAILQ_INSERT_TAIL(&t->incoming, work, entry);
		ev_async_send(t->loop, &t->wake);
	}
	pthread_mutex_unlock(&t->lock);

	/* Raised while the device is going away: no loop left to run it. */
	if (dead)
		run_work(work);
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct irq_tick *tick = w->data;

	tick->fn(tick);
}

static void tick_start_fn(struct irq_work *work)
{
	struct tick_start *ts = (struct tick_start *)work;
	struct irq_tick *tick = ts->tick;

	free(ts);
	/* The thread may be draining to stop: then the tick never starts. */
	pthread_mutex_lock(&tick->t->lock);
	if (!tick->t->stopping)
		ev_timer_start(tick->t->loop, &tick->timer);
	pthread_mutex_unlock(&tick->t->lock);
}

int irq_tick_start(struct irq_thread *t, struct irq_tick *tick,
		   void (*fn)(struct irq_tick *), uint64_t interval_ns)
{
	struct tick_start *ts = malloc(sizeof(*ts));
	double interval = interval_ns / 1e9;

	if (!ts) {
		errno = ENOMEM;
		return -1;
	}
	tick->fn = fn;
	tick->interval_ns = interval_ns;
	tick->t = t;
	ev_timer_init(&tick->timer, tick_cb, interval, interval);
	tick->timer.data = tick;
	ts->tick = tick;
	irq_raise(t, &ts->work, tick_start_fn, 0);
	return 0;
}
