// SPDX-License-Identifier: GPL-2.0
/*
 * The irq thread's drain against a timer that expired in the same loop
 * iteration as the stop request.  White box: it includes irq.c to see
 * when irq_thread_destroy has asked the loop to stop, so that the two
 * events land in one iteration every time.
 */
#include <check.h>
#include <sched.h>
#include <stdatomic.h>

#include "backends/common/irq.c"
#include "tests/unit/helpers/tcheck.h"

struct gate {
	struct irq_work work; /* first */
	struct irq_thread *t;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered;
	bool until_stopping; /* else until the test opens it */
	bool open;
};

struct counted {
	struct irq_work work; /* first */
	atomic_uint runs;
};

static void counted_fn(struct irq_work *work)
{
	struct counted *c = (struct counted *)work;

	atomic_fetch_add(&c->runs, 1);
}

/*
 * Holds the loop thread until the test opens the gate, or until
 * irq_thread_destroy has set stopping and sent the wake-up, so that the
 * next iteration sees both that and the expired timer.
 */
static void gate_fn(struct irq_work *work)
{
	struct gate *g = (struct gate *)work;
	bool stopping = false;

	pthread_mutex_lock(&g->lock);
	g->entered = true;
	pthread_cond_broadcast(&g->cond);
	while (!g->until_stopping && !g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	while (g->until_stopping && !stopping) {
		pthread_mutex_lock(&g->t->lock);
		stopping = g->t->stopping;
		pthread_mutex_unlock(&g->t->lock);
		sched_yield();
	}
}

static void gate_wait_entered(struct gate *g)
{
	pthread_mutex_lock(&g->lock);
	while (!g->entered)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

static void *destroy_thread(void *arg)
{
	irq_thread_destroy(arg);
	return NULL;
}

START_TEST(expired_timer_runs_once)
{
	struct irq_thread *t = irq_thread_create("test-irq");
	struct gate hold = {.lock = PTHREAD_MUTEX_INITIALIZER,
			    .cond = PTHREAD_COND_INITIALIZER};
	struct gate g = {.lock = PTHREAD_MUTEX_INITIALIZER,
			 .cond = PTHREAD_COND_INITIALIZER,
			 .until_stopping = true};
	struct counted c = {0};
	unsigned int runs;
	pthread_t th;

	ck_assert_ptr_nonnull(t);
	g.t = t;
	/* c and g queue up behind hold, to be taken in one wake-up. */
	irq_raise(t, &hold.work, gate_fn, 0);
	gate_wait_entered(&hold);
	irq_raise(t, &c.work, counted_fn, 1);
	irq_raise(t, &g.work, gate_fn, 0);
	pthread_mutex_lock(&hold.lock);
	hold.open = true;
	pthread_cond_broadcast(&hold.cond);
	pthread_mutex_unlock(&hold.lock);

	/* c is armed, and due by the time g opens. */
	gate_wait_entered(&g);
	ck_assert_int_eq(pthread_create(&th, NULL, destroy_thread, t), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	runs = atomic_load(&c.runs);
	ck_assert_uint_eq(runs, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("irq_drain");
	TCase *tc = tcase_create("irq_drain");

	tcase_add_loop_test(tc, expired_timer_runs_once, 0, 20);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
