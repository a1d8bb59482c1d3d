/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Switching schedulers at run time under load: four submitting threads
 * keep bios of every kind in flight while the main thread switches
 * none -> mq-deadline -> bfq -> kyber -> none, 200 times.  Every bio must
 * complete exactly once and none may fail.  The test is written for all
 * four; a scheduler that is not built (elevator_find) is skipped.
 */
#include <check.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/device.h"
#include "server/mq/elevator.h"
#include "tests/unit/helpers/tcheck.h"

#define NR_SUBMITTERS 4
#define SLOTS	      16
#define CYCLES	      200

static const char *const cycle[] = {"mq-deadline", "bfq", "kyber", "none"};

struct submitter;

struct slot {
	struct bio bio;
	struct submitter *s;
	bool busy;
	char buf[8192];
};

struct submitter {
	struct mq_queue *q;
	unsigned int cpu;
	unsigned int seed;
	bool discard; /* the device takes DISCARD and WRITE_ZEROES */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	unsigned int in_flight;
	unsigned long submitted, completed, errors, doubles;
	int last_error;
	pthread_t thread;
	struct slot slots[SLOTS];
};

static void end_io(struct bio *bio)
{
	struct slot *sl = bio->bi_private;
	struct submitter *s = sl->s;

	pthread_mutex_lock(&s->lock);
	if (!sl->busy) {
		s->doubles++; /* completed twice */
	} else {
		sl->busy = false;
		s->in_flight--;
		s->completed++;
	}
	if (bio->bi_status) {
		s->errors++;
		s->last_error = bio->bi_status;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Reads and writes (plain, sync, FUA), flushes, discards, zeroes. */
static void pick_op(struct submitter *s, enum req_op *op, unsigned int *flags,
		    uint32_t *len)
{
	unsigned int r = rand_r(&s->seed) % 16;

	*flags = 0;
	*len = 4096 * (1 + rand_r(&s->seed) % 2);
	if (r < 6) {
		*op = REQ_OP_READ;
	} else if (r < 12) {
		*op = REQ_OP_WRITE;
		if (r == 10)
			*flags = REQ_SYNC;
		else if (r == 11)
			*flags = REQ_FUA;
	} else if (r == 12) {
		*op = REQ_OP_FLUSH;
		*len = 0;
	} else if (r < 15 && s->discard) {
		*op = r == 13 ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES;
	} else {
		*op = REQ_OP_READ;
	}
}

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;
	unsigned int i, flags;
	enum req_op op;
	uint32_t len;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->stop && s->in_flight == SLOTS)
			pthread_cond_wait(&s->cond, &s->lock);
		if (s->stop)
			break;
		for (i = 0; s->slots[i].busy; i++)
			;
		s->slots[i].busy = true;
		s->in_flight++;
		s->submitted++;
		pthread_mutex_unlock(&s->lock);

		pick_op(s, &op, &flags, &len);
		/* 4 KiB steps over 16 MiB: neighbours meet and merge. */
		bio_init(&s->slots[i].bio, op,
			 op == REQ_OP_FLUSH
				 ? 0
				 : (uint64_t)(rand_r(&s->seed) % 4000) * 8,
			 len, len ? s->slots[i].buf : NULL);
		s->slots[i].bio.bi_flags = flags;
		s->slots[i].bio.bi_end_io = end_io;
		s->slots[i].bio.bi_private = &s->slots[i];
		s->slots[i].bio.bi_submitter = s->cpu + 1;
		mq_submit_bio(mq_get_ctx(s->q, s->cpu), &s->slots[i].bio);
		pthread_mutex_lock(&s->lock);
	}
	while (s->in_flight)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Store a tunable of the attached scheduler, if it has it. */
static void tune(struct mq_queue *q, const char *name, const char *value)
{
	const struct elv_fs_entry *a;

	for (a = q->elevator->type->elevator_attrs; a && a->name; a++)
		if (!strcmp(a->name, name))
			ck_assert_int_eq(a->store(q->elevator, value), 0);
}

static unsigned long total_completed(struct submitter *subs)
{
	unsigned long n = 0;
	unsigned int i;

	for (i = 0; i < NR_SUBMITTERS; i++) {
		pthread_mutex_lock(&subs[i].lock);
		n += subs[i].completed;
		pthread_mutex_unlock(&subs[i].lock);
	}
	return n;
}

static struct mq_device *make_device(const char *const *keys)
{
	struct mq_params *p = mq_params_new();
	struct mq_err e = {{0}};
	struct mq_device *dev;

	ck_assert_ptr_nonnull(p);
	for (; *keys; keys++)
		ck_assert_int_eq(mq_params_set_kv(p, *keys, &e), 0);
	ck_assert_msg(mq_device_create(p, NR_SUBMITTERS, &dev, &e) == 0, "%s",
		      e.msg);
	mq_params_free(p);
	return dev;
}

static void switch_under_load(const char *const *keys, bool discard,
			      bool bfq_idle)
{
	struct mq_device *dev = make_device(keys);
	struct mq_queue *q = dev->disks[0]->queue;
	struct submitter *subs = calloc(NR_SUBMITTERS, sizeof(*subs));
	unsigned long before, switches = 0, busy_switches = 0;
	unsigned long submitted = 0, completed = 0;
	struct mq_hw_ctx *hctx;
	unsigned int i, c, n;
	uint64_t deadline, t0, t1, t2;
	uint64_t switch_ns[4] = {0}, io_ns[4] = {0};

	ck_assert_ptr_nonnull(subs);
	ck_assert_int_eq(elevator_switch(q, NULL), 0);
	for (i = 0; i < NR_SUBMITTERS; i++) {
		struct submitter *s = &subs[i];

		s->q = q;
		s->cpu = i;
		s->seed = 12345 + i;
		s->discard = discard;
		for (n = 0; n < SLOTS; n++)
			s->slots[n].s = s;
		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->cond, NULL);
		ck_assert_int_eq(
			pthread_create(&s->thread, NULL, submit_thread, s), 0);
	}

	for (c = 0; c < CYCLES; c++) {
		for (n = 0; n < sizeof(cycle) / sizeof(cycle[0]); n++) {
			const struct elevator_type *et =
				elevator_find(cycle[n]);

			if (!et && strcmp(cycle[n], "none"))
				continue; /* not built */
			before = total_completed(subs);
			t0 = now_ns();
			ck_assert_int_eq(elevator_switch(q, et), 0);
			/*
			 * bfq idles on a frozen queue before the next switch
			 * drains it: some 40-80 ms a switch.  Half the cycles
			 * (or all, where asked) turn idling off to keep the
			 * test short; the others keep bfq's defaults.
			 */
			if (et && !strcmp(cycle[n], "bfq") &&
			    (!bfq_idle || c % 2))
				tune(q, "slice_idle", "0");
			t1 = now_ns();
			ck_assert_str_eq(mq_elevator_name(q), cycle[n]);
			switches++;
			/* Some I/O must get through under each scheduler. */
			deadline = now_ns() + 5000000000ull;
			while (total_completed(subs) < before + 8 &&
			       now_ns() < deadline)
				sched_yield();
			if (total_completed(subs) >= before + 8)
				busy_switches++;
			t2 = now_ns();
			switch_ns[n] += t1 - t0;
			io_ns[n] += t2 - t1;
		}
	}

	for (i = 0; i < NR_SUBMITTERS; i++) {
		struct submitter *s = &subs[i];

		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
		ck_assert_msg(s->errors == 0,
			      "submitter %u: %lu errors, last %s", i, s->errors,
			      strerror(s->last_error));
		ck_assert_uint_eq(s->doubles, 0);
		ck_assert_uint_eq(s->in_flight, 0);
		ck_assert_uint_eq(s->completed, s->submitted);
		submitted += s->submitted;
		completed += s->completed;
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
	}
	ck_assert_uint_ge(switches, 2 * CYCLES);
	ck_assert_uint_eq(busy_switches, switches);
	ck_assert_uint_eq(completed, submitted);
	ck_assert_str_eq(mq_elevator_name(q), "none");
	/*
	 * A bio completes before its request is freed; the freeze waits for
	 * the last free, which is where a request stops counting as active.
	 */
	mq_freeze_queue(q);
	queue_for_each_hw_ctx (q, hctx, i)
		ck_assert_uint_eq(atomic_load(&hctx->stats.active), 0);
	/* Nothing counts in flight on the drained queue either. */
	ck_assert_uint_eq(atomic_load(&q->stats.in_flight[0]), 0);
	ck_assert_uint_eq(atomic_load(&q->stats.in_flight[1]), 0);
	mq_unfreeze_queue(q);
	printf("%s: %lu switches, %lu bios, all completed once\n", keys[1],
	       switches, completed);
	for (n = 0; n < 4; n++)
		printf("  to %-11s switching %6.1f ms, first 8 bios %6.1f ms\n",
		       cycle[n], switch_ns[n] / 1e6, io_ns[n] / 1e6);
	free(subs);
	mq_device_destroy(dev);
}

START_TEST(switch_single_queue)
{
	static const char *const keys[] = {
		"device=null",	"submit_queues=1",
		"time_scale=0", "memory_backed=1",
		"discard=1",	"cache_size=1",
		"size=16M",	NULL,
	};

	switch_under_load(keys, true, true);
}
END_TEST

START_TEST(switch_two_queues)
{
	static const char *const keys[] = {
		"device=null", "submit_queues=2", "time_scale=0",
		"irqmode=2",   "size=16M",	  NULL,
	};

	switch_under_load(keys, false, false);
}
END_TEST

START_TEST(switch_blocking)
{
	static const char *const keys[] = {
		"device=null", "blocking=1", "time_scale=0",
		"irqmode=0",   "size=16M",   NULL,
	};

	switch_under_load(keys, false, false);
}
END_TEST

static Suite *switch_suite(void)
{
	Suite *s = suite_create("sched_switch");
	TCase *tc = tcase_create("sched_switch");

	tcase_add_test(tc, switch_single_queue);
	tcase_add_test(tc, switch_two_queues);
	tcase_add_test(tc, switch_blocking);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(switch_suite());
}
