// SPDX-License-Identifier: GPL-2.0
/* The irq thread: immediate and delayed work, ticks, and draining. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

#include "backends/common/irq.h"
#include "server/mq/blk-mq.h"
#include "tests/unit/helpers/tcheck.h"

struct rec {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int order[16];
	unsigned int n;
	pthread_t thread;
};

struct twork {
	struct irq_work work; /* first */
	struct rec *rec;
	unsigned int id;
	struct irq_thread *t;
	struct twork *chain; /* raised from inside this one */
};

static void twork_fn(struct irq_work *work)
{
	struct twork *w = (struct twork *)work;
	struct rec *r = w->rec;

	pthread_mutex_lock(&r->lock);
	r->order[r->n++] = w->id;
	r->thread = pthread_self();
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	if (w->chain)
		irq_raise(w->t, &w->chain->work, twork_fn, 0);
}

static void wait_n(struct rec *r, unsigned int n)
{
	pthread_mutex_lock(&r->lock);
	while (r->n < n)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

#define REC_INIT                                                               \
	{                                                                      \
		.lock = PTHREAD_MUTEX_INITIALIZER,                             \
		.cond = PTHREAD_COND_INITIALIZER                               \
	}

START_TEST(delays_order)
{
	struct irq_thread *t = irq_thread_create("test-irq");
	struct rec r = REC_INIT;
	struct twork w[3];
	uint64_t start = mq_now_ns();
	unsigned int i;

	ck_assert_ptr_nonnull(t);
	for (i = 0; i < 3; i++)
		w[i] = (struct twork){.rec = &r, .id = i, .t = t};
	/* Raised longest delay first; they must run shortest first. */
	irq_raise(t, &w[2].work, twork_fn, 20000000);
	irq_raise(t, &w[1].work, twork_fn, 5000000);
	irq_raise(t, &w[0].work, twork_fn, 0);
	wait_n(&r, 3);
	ck_assert_uint_eq(r.order[0], 0);
	ck_assert_uint_eq(r.order[1], 1);
	ck_assert_uint_eq(r.order[2], 2);
	/* The longest delay was honoured. */
	ck_assert_uint_ge(mq_now_ns() - start, 20000000);
	ck_assert(!pthread_equal(r.thread, pthread_self()));
	irq_thread_destroy(t);
}
END_TEST

START_TEST(chained)
{
	struct irq_thread *t = irq_thread_create("test-irq");
	struct rec r = REC_INIT;
	struct twork a = {.rec = &r, .id = 1, .t = t};
	struct twork b = {.rec = &r, .id = 2, .t = t};

	a.chain = &b;
	irq_raise(t, &a.work, twork_fn, 1000);
	wait_n(&r, 2);
	ck_assert_uint_eq(r.order[1], 2);
	irq_thread_destroy(t);
}
END_TEST

/* Destroy runs pending work at once instead of waiting for its timer. */
START_TEST(destroy_drains)
{
	struct irq_thread *t = irq_thread_create("test-irq");
	struct rec r = REC_INIT;
	struct twork a = {.rec = &r, .id = 1, .t = t};
	struct twork b = {.rec = &r, .id = 2, .t = t};
	struct twork c = {.rec = &r, .id = 3, .t = t};
	uint64_t start = mq_now_ns();

	b.chain = &c; /* raised while draining: still runs */
	irq_raise(t, &a.work, twork_fn, 3600ull * 1000000000);
	irq_raise(t, &b.work, twork_fn, 3600ull * 1000000000);
	irq_thread_destroy(t);
	ck_assert_uint_eq(r.n, 3);
	ck_assert_uint_lt(mq_now_ns() - start, 60ull * 1000000000);
}
END_TEST

/* Holds the irq thread until the test opens it. */
struct tgate {
	struct irq_work work; /* first */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered, open;
};

static void tgate_fn(struct irq_work *work)
{
	struct tgate *g = (struct tgate *)work;

	pthread_mutex_lock(&g->lock);
	g->entered = true;
	pthread_cond_broadcast(&g->cond);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/*
 * A delay counts from irq_raise, not from when the thread gets to the
 * work (an hrtimer's absolute expiry): work raised with a delay that has
 * passed while the thread was busy runs before work raised after it with
 * none.  Order only; the clock is polled, never slept on.
 */
START_TEST(deadline_from_raise)
{
	struct irq_thread *t = irq_thread_create("test-irq");
	struct tgate g = {.lock = PTHREAD_MUTEX_INITIALIZER,
			  .cond = PTHREAD_COND_INITIALIZER};
	struct rec r = REC_INIT;
	struct twork a = {.rec = &r, .id = 1, .t = t};
	struct twork b = {.rec = &r, .id = 2, .t = t};
	uint64_t raised;

	ck_assert_ptr_nonnull(t);
	irq_raise(t, &g.work, tgate_fn, 0);
	pthread_mutex_lock(&g.lock);
	while (!g.entered)
		pthread_cond_wait(&g.cond, &g.lock);
	pthread_mutex_unlock(&g.lock);

	irq_raise(t, &a.work, twork_fn, 200000);
	/*
	 * Read after the raise: a's deadline was taken inside it, so it is
	 * at most raised + 200 us, however long this thread waited for a
	 * CPU in between (a loaded ASan run).
	 */
	raised = mq_now_ns();
	while (mq_now_ns() - raised <= 200000)
		sched_yield();
	irq_raise(t, &b.work, twork_fn, 0);

	pthread_mutex_lock(&g.lock);
	g.open = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	wait_n(&r, 2);
	ck_assert_uint_eq(r.order[0], 1);
	ck_assert_uint_eq(r.order[1], 2);
	irq_thread_destroy(t);
}
END_TEST

struct ttick {
	struct irq_tick tick; /* first */
	struct rec *rec;
};

static void tick_fn(struct irq_tick *tick)
{
	struct ttick *tt = (struct ttick *)tick;
	struct rec *r = tt->rec;

	pthread_mutex_lock(&r->lock);
	if (r->n < 16)
		r->order[r->n++] = 0;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void *start_tick(void *arg)
{
	struct ttick *tt = arg;

	return (void *)(intptr_t)irq_tick_start(tt->tick.t, &tt->tick, tick_fn,
						1000000);
}

START_TEST(tick_from_other_thread)
{
	struct irq_thread *t = irq_thread_create("test-irq");
	struct rec r = REC_INIT;
	struct ttick tt = {.rec = &r};
	pthread_t th;
	void *ret;

	tt.tick.t = t;
	ck_assert_int_eq(pthread_create(&th, NULL, start_tick, &tt), 0);
	pthread_join(th, &ret);
	ck_assert_ptr_null(ret);
	/* It repeats. */
	wait_n(&r, 5);
	ck_assert_uint_eq(tt.tick.interval_ns, 1000000);
	irq_thread_destroy(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("irq");
	TCase *tc = tcase_create("irq");

	tcase_add_test(tc, delays_order);
	tcase_add_test(tc, chained);
	tcase_add_test(tc, destroy_drains);
	tcase_add_test(tc, tick_from_other_thread);
	tcase_add_test(tc, deadline_from_raise);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
