/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kyber (scheduler/kyber.c): domain tokens taken at dispatch and given
 * back at finish, with the hctx run again when one frees; the dispatch
 * batches; async requests limited to 75% of the scheduler tags; and the
 * timer-driven depth scaling on a slow device in real time.
 *
 * Token and batch tests use the tdev test driver, which holds requests
 * until the test completes them; everything is waited for on conditions.
 * The depth test polls the domain depth until a deadline.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/device.h"
#include "server/mq/elevator.h"
#include "scheduler/kyber.h"
#include "helpers/tdev.h"
#include "tests/unit/helpers/tcheck.h"

/* --- helpers ----------------------------------------------------------- */

static struct tdev *kyber_tdev(unsigned int depth)
{
	struct tdev *d = tdev_new(1, depth, 0, MQ_F_SHOULD_MERGE, tdev_hold);

	d->q->limits.max_write_zeroes_sectors = 1 << 16;
	d->q->limits.max_discard_sectors = 1 << 16;
	ck_assert_int_eq(elevator_switch(d->q, &kyber_elv), 0);
	ck_assert_str_eq(mq_elevator_name(d->q), "kyber");
	return d;
}

/*
 * Tokens in use once every request is freed: a bio's end_io runs before
 * its request is freed, so freeze first (it waits for the last free).
 */
static unsigned int tokens_busy(struct mq_queue *q)
{
	unsigned int i, n = 0;

	mq_freeze_queue(q);
	for (i = 0; i < KYBER_NUM_DOMAINS; i++)
		n += kyber_domain_busy(q, i);
	mq_unfreeze_queue(q);
	return n;
}

/* Complete every held request until all n bios are done. */
static void drain(struct tdev *d, struct tbio *tb, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		while (!atomic_load(&tb[i].done)) {
			if (!tdev_complete_held(d, 0))
				tdev_wait_held(d, 1);
		}
		ck_assert_int_eq(tb[i].bio.bi_status, 0);
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pause_ms(unsigned int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* --- tokens ------------------------------------------------------------- */

/*
 * OTHER has 16 tokens: 40 WRITE_ZEROES, all held by the device, stop at
 * 16 in flight; each completion gives its token to the next one, through
 * the run that finish_request asks for.
 */
START_TEST(tokens_limit_and_wake)
{
	struct tdev *d = kyber_tdev(64);
	struct tbio *tb = calloc(40, sizeof(*tb));
	unsigned int i;

	ck_assert_ptr_nonnull(tb);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_OTHER), 16);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_DISCARD), 64);
	/* capped by nr_requests: 2 * min(64, 128) */
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_READ), 128);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_WRITE), 128);

	for (i = 0; i < 40; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE_ZEROES, i * 64, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	/* Out of tokens at 16, and another run changes nothing. */
	tdev_wait_calls(d, 16);
	tdev_run_now(d, 0);
	ck_assert_uint_eq(tdev_calls(d), 16);
	ck_assert_uint_eq(tdev_nheld(d), 16);
	ck_assert_uint_eq(kyber_domain_busy(d->q, KYBER_OTHER), 16);

	for (i = 0; i < 24; i++) {
		ck_assert(tdev_complete_held(d, 0));
		tdev_wait_calls(d, 17 + i);
		tdev_wait_held(d, 16);
		ck_assert_uint_le(kyber_domain_busy(d->q, KYBER_OTHER), 16);
	}
	ck_assert_uint_eq(tdev_calls(d), 40);
	drain(d, tb, 40);
	ck_assert_uint_eq(tokens_busy(d->q), 0);
	free(tb);
	tdev_free(d);
}
END_TEST

/*
 * kyber_dispatch_request's round robin: 16 reads, 8 writes, the 4 reads
 * left, then the writes.  The queue is stopped while they are inserted.
 */
START_TEST(batches_round_robin)
{
	struct tdev *d = kyber_tdev(64);
	struct tbio *tb = calloc(40, sizeof(*tb));
	static const struct {
		enum req_op op;
		unsigned int n;
	} want[] = {
		{REQ_OP_READ, 16},
		{REQ_OP_WRITE, 8},
		{REQ_OP_READ, 4},
		{REQ_OP_WRITE, 12},
	};
	unsigned int i, j, k = 0;

	ck_assert_ptr_nonnull(tb);
	mq_stop_hw_queues(d->q);
	for (i = 0; i < 20; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, i * 64, 4096);
		tbio_submit(d, &tb[i], 0);
		tbio_init(&tb[20 + i], d, REQ_OP_READ, 100000 + i * 64, 4096);
		tbio_submit(d, &tb[20 + i], 1);
	}
	ck_assert_uint_eq(tdev_calls(d), 0);
	mq_start_hw_queues(d->q);
	tdev_wait_held(d, 40);
	for (i = 0; i < 4; i++)
		for (j = 0; j < want[i].n; j++, k++)
			ck_assert_msg(d->log_op[k] == want[i].op,
				      "request %u: %s, expected %s", k,
				      req_op_name(d->log_op[k]),
				      req_op_name(want[i].op));
	drain(d, tb, 40);
	ck_assert_uint_eq(tokens_busy(d->q), 0);
	free(tb);
	tdev_free(d);
}
END_TEST

/*
 * Async writes get 75% of the scheduler tags; sync requests the rest.
 * (The core hands tags to waiting bios first, in order, so a read that
 * arrives after writes began to wait queues behind them; here the reads
 * come while no write waits.)
 */
START_TEST(async_depth)
{
	struct tdev *d = kyber_tdev(64);
	struct mq_hw_ctx *hctx = d->q->queue_hw_ctx[0];
	struct tbio *tb = calloc(136, sizeof(*tb));
	unsigned int i;

	ck_assert_ptr_nonnull(tb);
	ck_assert_uint_eq(d->q->nr_requests, 128);
	ck_assert_uint_eq(kyber_async_depth(d->q), 96);
	mq_stop_hw_queues(d->q);
	for (i = 0; i < 96; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, i * 64, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	ck_assert_uint_eq(atomic_load(&hctx->stats.queued), 96);
	for (i = 96; i < 126; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, i * 64, 4096);
		tbio_submit(d, &tb[i], 1);
	}
	ck_assert_uint_eq(atomic_load(&hctx->stats.queued), 126);
	/* More writes wait: 126 tags are busy, far past 96. */
	for (i = 126; i < 136; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, i * 64, 4096);
		tbio_submit(d, &tb[i], 2);
	}
	ck_assert_uint_eq(atomic_load(&hctx->stats.queued), 126);
	mq_start_hw_queues(d->q);
	drain(d, tb, 136);
	ck_assert_uint_eq(atomic_load(&hctx->stats.queued), 136);
	ck_assert_uint_eq(tokens_busy(d->q), 0);
	free(tb);
	tdev_free(d);
}
END_TEST

/*
 * A requeued request gives its token back and takes one again.  The mark
 * is elv_priv[1], which kyber leaves alone and the core clears when the
 * request is reused.
 */
static enum mq_qrc requeue_once(struct tdev *d, struct request *rq)
{
	if (!rq->elv_priv[1]) {
		rq->elv_priv[1] = (void *)1;
		mq_requeue_request(rq, true);
		return MQ_QRC_OK;
	}
	return tdev_hold(d, rq);
}

START_TEST(requeue_gives_token_back)
{
	struct tdev *d = kyber_tdev(64);
	struct tbio *tb = calloc(20, sizeof(*tb));
	unsigned int i;

	ck_assert_ptr_nonnull(tb);
	d->policy = requeue_once;
	for (i = 0; i < 20; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE_ZEROES, i * 64, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	tdev_wait_held(d, 16);
	ck_assert_uint_eq(kyber_domain_busy(d->q, KYBER_OTHER), 16);
	drain(d, tb, 20);
	ck_assert_uint_eq(tokens_busy(d->q), 0);
	free(tb);
	tdev_free(d);
}
END_TEST

static void drv_end_io(struct request *rq, int status)
{
	atomic_int *done = rq->end_io_data;

	atomic_store(done, status ? -1 : 1);
	mq_free_request(rq);
}

/*
 * A request the driver allocates and inserts at the head (an IDE sense
 * request) passes kyber at once, even with its domain out of tokens.
 */
START_TEST(driver_request_at_head)
{
	struct tdev *d = kyber_tdev(64);
	struct tbio *tb = calloc(20, sizeof(*tb));
	struct request *rq;
	atomic_int done = 0;
	unsigned int i;

	ck_assert_ptr_nonnull(tb);
	for (i = 0; i < 20; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE_ZEROES, i * 64, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	tdev_wait_held(d, 16);
	ck_assert_uint_eq(kyber_domain_busy(d->q, KYBER_OTHER), 16);

	rq = mq_alloc_request(d->q, REQ_OP_DRV_IN, MQ_REQ_NOWAIT);
	ck_assert_ptr_nonnull(rq);
	rq->end_io = drv_end_io;
	rq->end_io_data = &done;
	mq_sched_insert_request(rq, true, true, false);
	tdev_wait_held(d, 17);
	ck_assert(d->held[16] == rq);
	ck_assert_uint_eq(kyber_domain_busy(d->q, KYBER_OTHER), 16);

	drain(d, tb, 20);
	while (tdev_complete_held(d, 0))
		;
	ck_assert_int_eq(atomic_load(&done), 1);
	ck_assert_uint_eq(tokens_busy(d->q), 0);
	free(tb);
	tdev_free(d);
}
END_TEST

START_TEST(tunables)
{
	struct tdev *d = kyber_tdev(8);
	const struct elv_fs_entry *a = d->q->elevator->type->elevator_attrs;
	char buf[32];

	ck_assert_str_eq(a[0].name, "read_lat_nsec");
	ck_assert_str_eq(a[1].name, "write_lat_nsec");
	ck_assert_ptr_null(a[2].name);
	a[0].show(d->q->elevator, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2000000");
	a[1].show(d->q->elevator, buf, sizeof(buf));
	ck_assert_str_eq(buf, "10000000");
	ck_assert_int_eq(a[0].store(d->q->elevator, "123\n"), 0);
	a[0].show(d->q->elevator, buf, sizeof(buf));
	ck_assert_str_eq(buf, "123");
	ck_assert_int_ne(a[0].store(d->q->elevator, ""), 0);
	ck_assert_int_ne(a[0].store(d->q->elevator, "1ms"), 0);
	ck_assert_int_ne(a[0].store(d->q->elevator, "-5"), 0);
	ck_assert_int_ne(a[1].store(d->q->elevator, "99999999999999999999999"),
			 0);
	/* Small queues cap every domain. */
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_READ), 16);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_OTHER), 16);
	ck_assert_uint_eq(kyber_async_depth(d->q), 12);
	tdev_free(d);
}
END_TEST

/* --- depth scaling in real time ---------------------------------------- */

#define LOAD_SLOTS 128

struct load;

struct load_slot {
	struct bio bio;
	struct load *l;
	bool busy;
	char buf[4096];
};

/* A thread keeping `depth` bios of one op in flight on one ctx. */
struct load {
	struct mq_queue *q;
	unsigned int cpu;
	enum req_op op;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int depth;
	bool stop;
	unsigned int in_flight;
	unsigned long completed, errors;
	unsigned int seed;
	pthread_t thread;
	struct load_slot slots[LOAD_SLOTS];
};

static void load_end_io(struct bio *bio)
{
	struct load_slot *s = bio->bi_private;
	struct load *l = s->l;

	pthread_mutex_lock(&l->lock);
	if (bio->bi_status)
		l->errors++;
	s->busy = false;
	l->in_flight--;
	l->completed++;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

static void *load_thread(void *arg)
{
	struct load *l = arg;
	unsigned int i;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		while (!l->stop && l->in_flight >= l->depth)
			pthread_cond_wait(&l->cond, &l->lock);
		if (l->stop)
			break;
		for (i = 0; l->slots[i].busy; i++)
			;
		l->slots[i].busy = true;
		l->in_flight++;
		pthread_mutex_unlock(&l->lock);
		/* Sectors 32 KiB apart: no two bios merge. */
		bio_init(&l->slots[i].bio, l->op,
			 (uint64_t)(rand_r(&l->seed) % 100000) * 64, 4096,
			 l->slots[i].buf);
		l->slots[i].bio.bi_end_io = load_end_io;
		l->slots[i].bio.bi_private = &l->slots[i];
		l->slots[i].bio.bi_submitter = l->cpu + 1;
		mq_submit_bio(mq_get_ctx(l->q, l->cpu), &l->slots[i].bio);
		pthread_mutex_lock(&l->lock);
	}
	while (l->in_flight)
		pthread_cond_wait(&l->cond, &l->lock);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static struct load *load_start(struct mq_queue *q, unsigned int cpu,
			       enum req_op op, unsigned int depth)
{
	struct load *l = calloc(1, sizeof(*l));
	unsigned int i;

	ck_assert_ptr_nonnull(l);
	ck_assert_uint_le(depth, LOAD_SLOTS);
	l->q = q;
	l->cpu = cpu;
	l->op = op;
	l->depth = depth;
	l->seed = cpu * 7919 + 1;
	for (i = 0; i < LOAD_SLOTS; i++)
		l->slots[i].l = l;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	ck_assert_int_eq(pthread_create(&l->thread, NULL, load_thread, l), 0);
	return l;
}

static void load_set_depth(struct load *l, unsigned int depth)
{
	pthread_mutex_lock(&l->lock);
	l->depth = depth;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

/* Stop, wait for everything in flight; returns the completions. */
static unsigned long load_stop(struct load *l)
{
	unsigned long done;

	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	ck_assert_uint_eq(l->errors, 0);
	done = l->completed;
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l);
	return done;
}

/*
 * Wait up to timeout_ms for the write depth to satisfy cmp against bound;
 * returns the depth seen last, and the extreme seen in *extreme.
 */
static unsigned int wait_write_depth(struct mq_queue *q, bool below,
				     unsigned int bound,
				     unsigned int timeout_ms,
				     unsigned int *extreme)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	unsigned int depth;

	for (;;) {
		depth = kyber_domain_depth(q, KYBER_WRITE);
		if (below ? depth < *extreme : depth > *extreme)
			*extreme = depth;
		if (below ? depth <= bound : depth >= bound)
			return depth;
		if (now_ns() > deadline)
			return depth;
		pause_ms(10);
	}
}

/*
 * A slow device: every request takes 3 ms, in real time.  Reads miss a
 * 1 ms target, so the device counts as congested and kyber throttles the
 * writes, whose own latency is fine: their target is 10 s at first, so
 * that a loaded machine, which delays them too, cannot make them miss it
 * (kyber eases off a domain that misses its target instead of throttling
 * it).  When the reads stop, the target goes back to 10 ms, the writes
 * pile up behind their few tokens and miss it, and kyber gives them their
 * depth back.
 */
START_TEST(depth_follows_read_latency)
{
	struct mq_params *p = mq_params_new();
	struct mq_err e = {{0}};
	struct mq_device *dev;
	struct mq_queue *q;
	struct load *reader, *writer;
	unsigned int depth, low = 128, high = 0;
	static const char *const keys[] = {
		"device=null",
		"time_scale=1",
		"irqmode=2",
		"completion_nsec=3000000",
		"scheduler=kyber",
		"iosched.read_lat_nsec=1000000",
		"iosched.write_lat_nsec=10000000000",
	};
	const struct elv_fs_entry *write_lat;
	unsigned int i;

	ck_assert_ptr_nonnull(p);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		ck_assert_int_eq(mq_params_set_kv(p, keys[i], &e), 0);
	ck_assert_msg(mq_device_create(p, 4, &dev, &e) == 0, "%s", e.msg);
	mq_params_free(p);
	q = dev->disks[0]->queue;
	ck_assert_str_eq(mq_elevator_name(q), "kyber");
	ck_assert_uint_eq(kyber_domain_depth(q, KYBER_WRITE), 128);
	write_lat = &q->elevator->type->elevator_attrs[1];
	ck_assert_str_eq(write_lat->name, "write_lat_nsec");

	/* Reads that miss their target, and a few writes. */
	reader = load_start(q, 0, REQ_OP_READ, 16);
	writer = load_start(q, 1, REQ_OP_WRITE, 8);
	depth = wait_write_depth(q, true, 8, 30000, &low);
	ck_assert_msg(depth <= 8, "write depth %u after 30 s of missed reads",
		      depth);
	ck_assert_uint_eq(kyber_domain_depth(q, KYBER_READ), 128);
	ck_assert_uint_ge(load_stop(reader), 500);

	/* No more reads; the writer has a backlog now. */
	ck_assert_int_eq(write_lat->store(q->elevator, "10000000"), 0);
	high = low;
	load_set_depth(writer, 96);
	depth = wait_write_depth(q, false, 24, 30000, &high);
	ck_assert_msg(depth >= 24 && depth >= 3 * low,
		      "write depth %u, low %u: did not grow back", depth, low);
	ck_assert_uint_gt(kyber_timer_runs(q), 5);
	printf("kyber: write depth 128, down to %u with reads missing their target, back to %u without them\n",
	       low, depth);
	load_stop(writer);
	ck_assert_uint_eq(tokens_busy(q), 0);
	mq_device_destroy(dev);
}
END_TEST

static Suite *kyber_suite(void)
{
	Suite *s = suite_create("kyber");
	TCase *tc = tcase_create("kyber");

	tcase_add_test(tc, tokens_limit_and_wake);
	tcase_add_test(tc, batches_round_robin);
	tcase_add_test(tc, async_depth);
	tcase_add_test(tc, requeue_gives_token_back);
	tcase_add_test(tc, driver_request_at_head);
	tcase_add_test(tc, tunables);
	tcase_add_test(tc, depth_follows_read_latency);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(kyber_suite());
}
