/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests for BFQ's heuristics, one by one, each driven by a clock the
 * test moves (bfq_set_clock): the device is the test driver holding its
 * requests, the test completes them and moves the clock by what each
 * request or think time "takes".  Nothing depends on how fast the
 * machine runs.  Each test names the heuristic it would catch missing.
 */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "server/mq/elevator.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdev.h"

#ifdef MQBLK_HAVE_BFQ
#include "scheduler/bfq/bfq.h"

#define MS 1000000ull

/* --- helpers -------------------------------------------------------- */

struct hdev {
	struct tdev *d;
	_Atomic uint64_t clock;
	unsigned int limit; /* requests the device takes at once */
	unsigned int n;	    /* accepted so far, sectors in order: */
	uint64_t order[64];
};

/*
 * The device: holds up to limit requests, busy beyond (the core keeps
 * the request and retries when one completes).  The scheduler has many
 * more requests than that to choose from: 2 x 64.
 */
static enum mq_qrc hold_upto(struct tdev *d, struct request *rq)
{
	struct hdev *h = d->priv;

	pthread_mutex_lock(&d->lock);
	if (d->nheld >= h->limit) {
		pthread_mutex_unlock(&d->lock);
		return MQ_QRC_BUSY;
	}
	if (h->n < 64)
		h->order[h->n++] = blk_rq_pos(rq);
	pthread_mutex_unlock(&d->lock);
	return tdev_hold(d, rq);
}

static int set(struct tdev *d, const char *name, const char *value)
{
	const struct elv_fs_entry *a;

	for (a = d->q->elevator->type->elevator_attrs; a && a->name; a++)
		if (!strcmp(a->name, name))
			return a->store(d->q->elevator, value);
	ck_abort_msg("no tunable %s", name);
	return -1;
}

/* A device taking depth requests at once, bfq on it, on a test clock. */
static struct hdev *hdev_new(unsigned int depth, bool rotational)
{
	struct hdev *h = calloc(1, sizeof(*h));

	ck_assert_ptr_nonnull(h);
	h->limit = depth;
	h->d = tdev_new(1, 64, 0, 0, hold_upto);
	h->d->priv = h;
	h->d->q->limits.rotational = rotational;
	ck_assert_int_eq(elevator_switch(h->d->q, elevator_find("bfq")), 0);
	ck_assert_int_eq(bfq_set_clock(h->d->q, &h->clock), 0);
	return h;
}

static struct bfq_stats qstats(struct hdev *h);

/*
 * Complete everything: idle slices end only by the clock, so move it
 * past each, run the queue, complete what the device holds, until bfq
 * has nothing left (bounded).
 */
static void hdev_free(struct hdev *h)
{
	struct timespec t0, t;
	struct bfq_stats bs;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		atomic_fetch_add(&h->clock, 10000 * MS);
		mq_run_hw_queues(h->d->q, false);
		while (tdev_complete_held(h->d, 0))
			;
		bs = qstats(h);
		if (!bs.queued && !bs.rq_in_driver && !tdev_nheld(h->d))
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 30, "requests left");
		sched_yield();
	}
	tdev_free(h->d);
	free(h);
}

static void advance(struct hdev *h, uint64_t ns)
{
	atomic_fetch_add(&h->clock, ns);
}

/* Move the clock, then run the queue here: an idle slice that ran out
 * ends now, not when the real-time delayed run fires. */
static void advance_run(struct hdev *h, uint64_t ns)
{
	advance(h, ns);
	tdev_run_now(h->d, 0);
}

static void sub(struct hdev *h, struct tbio *tb, uint64_t client,
		enum req_op op, uint64_t sector, uint32_t bytes)
{
	tbio_init(tb, h->d, op, sector, bytes);
	tb->bio.bi_submitter = client;
	tbio_submit(h->d, tb, 0);
}

static struct bfq_client_stats cstats(struct hdev *h, uint64_t client,
				      bool sync)
{
	struct bfq_client_stats st;

	ck_assert_int_eq(bfq_client_stats(h->d->q, 0, client, sync, &st), 0);
	return st;
}

static struct bfq_stats qstats(struct hdev *h)
{
	struct bfq_stats bs;

	ck_assert_int_eq(bfq_stats(h->d->q, 0, &bs), 0);
	return bs;
}

/* Wait (bounded) until bfq holds exactly n requests not yet dispatched. */
static void wait_queued(struct hdev *h, unsigned int n)
{
	struct timespec t0, t;
	struct bfq_stats bs;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		bs = qstats(h);
		if (bs.queued == n)
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 10,
			      "bfq never had %u queued (has %u, %d in the "
			      "driver, the device holds %u)",
			      n, bs.queued, bs.rq_in_driver, tdev_nheld(h->d));
		sched_yield();
	}
}

/* Complete the held request of client (the oldest of its), or abort. */
static void complete_client(struct hdev *h, uint64_t client)
{
	struct tdev *d = h->d;
	struct request *rq = NULL;
	unsigned int i;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->nheld; i++) {
		if (d->held[i]->submitter == client) {
			rq = d->held[i];
			memmove(&d->held[i], &d->held[i + 1],
				(d->nheld - i - 1) * sizeof(d->held[0]));
			d->nheld--;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	ck_assert_msg(rq, "client %llu has nothing held",
		      (unsigned long long)client);
	mq_end_request(rq, 0);
}

/*
 * One sync read of client, dispatched, taking service ns, completed.  A
 * read that finds the device idled for another client (the only busy one
 * until then, of a higher weight) waits for that idle slice: the clock
 * moves past it.
 */
static void read_one(struct hdev *h, struct tbio *tb, uint64_t client,
		     uint64_t sector, uint64_t service)
{
	unsigned int held = tdev_nheld(h->d);
	struct timespec t0, t;
	struct bfq_stats bs;

	sub(h, tb, client, REQ_OP_READ, sector, 4096);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (tdev_nheld(h->d) < held + 1) {
		bs = qstats(h);
		if (bs.queued && bs.idling && bs.in_service_client != client)
			advance_run(h, 10 * MS);
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 10,
			      "client %llu's read never dispatched",
			      (unsigned long long)client);
		sched_yield();
	}
	advance(h, service);
	complete_client(h, client);
	ck_assert_int_eq(tbio_wait(tb), 0);
}

/* --- FIFO expiry ------------------------------------------------------- */

/*
 * The order the device got one client's reads in: A0, then P (taken out
 * of bfq and parked for the one driver tag), then OLD far away, then
 * R1..R4 near the head.  With 300 ms between OLD and R1, OLD's FIFO
 * deadline (fifo_expire_sync, 125 ms) has passed when the next slot
 * starts: it is served right after R1, the first request of that slot.
 */
static void fifo_order(uint64_t gap, uint64_t *order)
{
	struct hdev *h = hdev_new(1, false);
	struct tbio tb[7];
	unsigned int i;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	sub(h, &tb[0], 1, REQ_OP_READ, 0, 4096);
	tdev_wait_held(h->d, 1);
	sub(h, &tb[1], 1, REQ_OP_READ, 1000, 4096);
	wait_queued(h, 0);
	sub(h, &tb[2], 1, REQ_OP_READ, 1u << 20, 4096);
	advance(h, gap);
	for (i = 0; i < 4; i++)
		sub(h, &tb[3 + i], 1, REQ_OP_READ, 2000 + i * 1000, 4096);
	wait_queued(h, 5);
	for (i = 0; i < 7; i++) {
		tdev_wait_held(h->d, 1);
		advance(h, MS);
		ck_assert(tdev_complete_held(h->d, 0));
	}
	for (i = 0; i < 7; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(h->n, 7);
	for (i = 0; i < 7; i++)
		order[i] = h->order[i];
	hdev_free(h);
}

START_TEST(test_fifo_expiry)
{
	uint64_t order[7];

	/* In time: the one-way elevator leaves the far request last. */
	fifo_order(10 * MS, order);
	ck_assert_uint_eq(order[2], 2000);
	ck_assert_uint_eq(order[6], 1u << 20);
	/* Expired: served first thing in the next slot. */
	fifo_order(300 * MS, order);
	ck_assert_uint_eq(order[2], 2000);
	ck_assert_uint_eq(order[3], 1u << 20);
	ck_assert_uint_eq(order[6], 5000);
}
END_TEST

/* --- async charge factor ----------------------------------------------- */

/* An async write is charged three times its size, a sync read once. */
START_TEST(test_async_charge_factor)
{
	struct hdev *h = hdev_new(8, false);
	struct tbio tb[2];

	sub(h, &tb[0], 1, REQ_OP_WRITE, 0, 4096);
	tdev_wait_held(h->d, 1);
	ck_assert_uint_eq(cstats(h, 1, false).charged, 3 * 8);
	ck_assert_uint_eq(cstats(h, 1, false).sectors, 8);
	sub(h, &tb[1], 2, REQ_OP_READ, 1000, 4096);
	tdev_wait_held(h->d, 2);
	ck_assert_uint_eq(cstats(h, 2, true).charged, 8);
	hdev_free(h);
}
END_TEST

/* --- hw_tag detection ---------------------------------------------- */

/*
 * A client keeps 12 reads outstanding; 40 completions later bfq knows
 * whether the device queues internally: more than 3 in flight at once.
 */
static int hw_tag_of(unsigned int depth)
{
	struct hdev *h = hdev_new(depth, false);
	struct tbio *tb = calloc(64, sizeof(*tb));
	unsigned int i, next = 0;
	int hw_tag;

	ck_assert_ptr_nonnull(tb);
	ck_assert_int_eq(qstats(h).hw_tag, -1);
	for (i = 0; i < 12; i++, next++)
		sub(h, &tb[next % 64], 1, REQ_OP_READ, next * 64, 4096);
	for (i = 0; i < 40; i++) {
		tdev_wait_held(h->d, depth < 12 ? depth : 12);
		advance(h, MS);
		ck_assert(tdev_complete_held(h->d, 0));
		ck_assert_int_eq(tbio_wait(&tb[i % 64]), 0);
		sub(h, &tb[next % 64], 1, REQ_OP_READ, next * 64, 4096);
		next++;
	}
	hw_tag = qstats(h).hw_tag;
	hdev_free(h);
	free(tb);
	return hw_tag;
}

START_TEST(test_hw_tag_detection)
{
	ck_assert_int_eq(hw_tag_of(16), 1);
	/*
	 * Depth 1, not 2: a request counts as in the driver once taken from
	 * bfq, and the submitting and completing threads may each take one
	 * while waiting for a tag, so depth 2 can show 4 (a loaded ASan run).
	 */
	ck_assert_int_eq(hw_tag_of(1), 0);
}
END_TEST

/* --- peak rate estimation ------------------------------------------ */

/*
 * Sequential 64 KiB reads, four in flight, one completing per ms: 128k
 * sectors/s.  The estimate starts at 2/3 of the flash reference rate
 * (about 336k sectors/s) and must come down close to the real rate.
 */
START_TEST(test_peak_rate_estimation)
{
	struct hdev *h = hdev_new(8, false);
	struct tbio *tb = calloc(8, sizeof(*tb));
	uint64_t rate0, rate;
	unsigned int i, next = 0;

	ck_assert_ptr_nonnull(tb);
	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	rate0 = qstats(h).peak_rate;
	ck_assert_uint_gt(rate0, 300000);
	for (i = 0; i < 4; i++, next++)
		sub(h, &tb[next % 8], 1, REQ_OP_READ, next * 128, 65536);
	for (i = 0; i < 5000; i++) {
		tdev_wait_held(h->d, 4);
		advance(h, MS);
		ck_assert(tdev_complete_held(h->d, 0));
		ck_assert_int_eq(tbio_wait(&tb[i % 8]), 0);
		sub(h, &tb[next % 8], 1, REQ_OP_READ, next * 128, 65536);
		next++;
	}
	rate = qstats(h).peak_rate;
	ck_assert_msg(rate > 100000 && rate < 170000, "peak rate %llu",
		      (unsigned long long)rate);
	hdev_free(h);
	free(tb);
}
END_TEST

/* --- burst detection --------------------------------------------------- */

/*
 * Wait (bounded) until the device holds n requests; a queue idled for
 * meanwhile has its idle slice ended by moving the clock 25 ms.
 */
static void dispatch_now(struct hdev *h, unsigned int n)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (tdev_nheld(h->d) < n) {
		if (qstats(h).idling)
			advance_run(h, 25 * MS);
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 30, "never dispatched");
		sched_yield();
	}
}

/*
 * Ten clients start one after the other, a read each, within a few ms
 * of each other (the threads of one job, say): from the eighth on they
 * form a large burst, and are not weight raised.  A client that starts
 * a second later is raised as interactive.
 */
START_TEST(test_burst_detection)
{
	struct hdev *h = hdev_new(32, false);
	struct bfq_client_stats st;
	struct tbio tb[11];
	unsigned int i;

	for (i = 0; i < 10; i++) {
		sub(h, &tb[i], 1 + i, REQ_OP_READ, i * 10000, 4096);
		dispatch_now(h, 1);
		complete_client(h, 1 + i);
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	}
	ck_assert(cstats(h, 1, true).in_large_burst);
	for (i = 8; i <= 10; i++) {
		st = cstats(h, i, true);
		ck_assert(st.in_large_burst);
		ck_assert_uint_eq(st.wr_coeff, 1);
	}
	advance_run(h, 1000 * MS);
	sub(h, &tb[10], 20, REQ_OP_READ, 1u << 24, 4096);
	dispatch_now(h, 1);
	st = cstats(h, 20, true);
	ck_assert(!st.in_large_burst);
	ck_assert_uint_eq(st.wr_coeff, 30);
	hdev_free(h);
}
END_TEST

/* --- soft real-time weight raising ------------------------------------ */

/*
 * A client reading 4 KiB every 100 ms (a player) is soft real-time: its
 * weight is raised x3000 and stays raised while it keeps its rate, three
 * seconds here, longer than soft real-time raising lasts (300 ms)
 * without being renewed.
 */
START_TEST(test_soft_rt_raising)
{
	struct hdev *h = hdev_new(8, false);
	struct bfq_client_stats st;
	struct tbio tb;
	unsigned int i;

	for (i = 0; i < 30; i++) {
		read_one(h, &tb, 1, i * 8, MS);
		advance_run(h, 100 * MS);
	}
	st = cstats(h, 1, true);
	ck_assert(st.soft_rt);
	ck_assert_uint_eq(st.wr_coeff, 30 * 100);
	hdev_free(h);
}
END_TEST

/* --- think time ---------------------------------------------------------- */

/*
 * Two readers alternate, one read each at a time, each thinking `think`
 * between a completion and its next read; neither is idled for (flash,
 * two busy queues).  A think time over half slice_idle (8 ms) is long.
 */
static void alternate(struct hdev *h, uint64_t think, unsigned int rounds)
{
	struct tbio tb[2];
	unsigned int i;

	for (i = 0; i < rounds; i++) {
		sub(h, &tb[0], 1, REQ_OP_READ, i * 8, 4096);
		sub(h, &tb[1], 2, REQ_OP_READ, (1u << 24) + i * 8, 4096);
		tdev_wait_held(h->d, 2);
		advance(h, MS);
		ck_assert(tdev_complete_held(h->d, 0));
		ck_assert(tdev_complete_held(h->d, 0));
		ck_assert_int_eq(tbio_wait(&tb[0]), 0);
		ck_assert_int_eq(tbio_wait(&tb[1]), 0);
		advance_run(h, think);
	}
}

START_TEST(test_think_time)
{
	struct hdev *h = hdev_new(8, false);

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	alternate(h, MS / 2, 8);
	ck_assert(cstats(h, 1, true).has_short_ttime);
	ck_assert(cstats(h, 2, true).has_short_ttime);
	ck_assert_uint_gt(cstats(h, 1, true).ttime_samples, 80);
	/* 5 ms: under slice_idle, over half of it. */
	alternate(h, 5 * MS, 16);
	ck_assert(!cstats(h, 1, true).has_short_ttime);
	ck_assert(!cstats(h, 2, true).has_short_ttime);
	ck_assert_uint_gt(cstats(h, 2, true).ttime_mean, 4 * MS);
	hdev_free(h);
}
END_TEST

/*
 * Think time is the time to issue I/O with none outstanding: a client
 * that always has a read in flight gives no sample, however long it
 * takes between reads.
 */
START_TEST(test_think_time_only_when_idle)
{
	struct hdev *h = hdev_new(8, false);
	struct tbio tb[2];
	unsigned long samples;
	unsigned int i;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	/* The first read is a sample (from "long ago"). */
	sub(h, &tb[0], 1, REQ_OP_READ, 0, 4096);
	tdev_wait_held(h->d, 1);
	samples = cstats(h, 1, true).ttime_samples;
	for (i = 1; i < 12; i++) {
		sub(h, &tb[i % 2], 1, REQ_OP_READ, i * 64, 4096);
		tdev_wait_held(h->d, 2);
		advance(h, 30 * MS);
		ck_assert(tdev_complete_held(h->d, 0));
		ck_assert_int_eq(tbio_wait(&tb[(i - 1) % 2]), 0);
	}
	ck_assert_uint_eq(cstats(h, 1, true).ttime_samples, samples);
	ck_assert(cstats(h, 1, true).has_short_ttime);
	hdev_free(h);
}
END_TEST

/* --- I/O intensity ---------------------------------------------------- */

/*
 * A client idle most of its life (1 ms of I/O, 20 ms of thinking) is not
 * I/O bound; once it keeps reads in flight for a while, it is again.
 */
START_TEST(test_io_intensity)
{
	struct hdev *h = hdev_new(8, false);
	struct tbio tb[2];
	unsigned int i;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	for (i = 0; i < 10; i++) {
		read_one(h, &tb[0], 1, i * 8, MS);
		advance_run(h, 20 * MS);
	}
	ck_assert(!cstats(h, 1, true).IO_bound);
	/* Back to back, two in flight, for 400 ms. */
	sub(h, &tb[0], 1, REQ_OP_READ, 1000, 4096);
	for (i = 1; i < 400; i++) {
		sub(h, &tb[i % 2], 1, REQ_OP_READ, 1000 + i * 8, 4096);
		tdev_wait_held(h->d, 2);
		advance(h, MS);
		ck_assert(tdev_complete_held(h->d, 0));
		ck_assert_int_eq(tbio_wait(&tb[(i - 1) % 2]), 0);
	}
	ck_assert(cstats(h, 1, true).IO_bound);
	hdev_free(h);
}
END_TEST

/* --- budget timeout charges time, at most the timeout ------------------- */

/*
 * A slow client: one 4 KiB read that takes 300 ms, its slot ending by
 * budget timeout (timeout_sync 125 ms).  It is charged the service the
 * device could have given in the timeout: the whole max budget, not its
 * 8 sectors.
 */
START_TEST(test_charge_time_bounded)
{
	struct hdev *h = hdev_new(8, true);
	struct tbio tb;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	read_one(h, &tb, 1, 0, 300 * MS);
	/* Idled for (alone): the slot ends when the idle slice does. */
	advance_run(h, 100 * MS);
	ck_assert_uint_eq(cstats(h, 1, true).charged, qstats(h).max_budget);
	hdev_free(h);
}
END_TEST

/* --- weight raising only for the default weight ------------------------- */

START_TEST(test_raising_default_weight_only)
{
	struct hdev *h = hdev_new(8, false);
	struct bfq_client_stats st;
	struct tbio tb[2];

	ck_assert_int_eq(set(h->d, "weights", "7:100"), 0);
	sub(h, &tb[0], 7, REQ_OP_READ, 0, 4096);
	tdev_wait_held(h->d, 1);
	st = cstats(h, 7, true);
	ck_assert_uint_eq(st.orig_weight, 100);
	ck_assert_uint_eq(st.wr_coeff, 1);
	sub(h, &tb[1], 8, REQ_OP_READ, 1u << 20, 4096);
	tdev_wait_held(h->d, 2);
	ck_assert_uint_eq(cstats(h, 8, true).wr_coeff, 30);
	hdev_free(h);
}
END_TEST

/* --- I/O priority classes --------------------------------------------- */

static void sub_prio(struct hdev *h, struct tbio *tb, uint64_t client,
		     uint64_t sector, uint16_t ioprio)
{
	tbio_init(tb, h->d, REQ_OP_READ, sector, 4096);
	tb->bio.bi_submitter = client;
	tb->bio.bi_ioprio = ioprio;
	tbio_submit(h->d, tb, 0);
}

/*
 * Wait (bounded) until the run that follows a completion (on kblockd) has
 * made bfq's next choice, so that it sees this clock and not the next
 * step's: the device holds a request and the next one waits parked for
 * it, or bfq has none left to give, or idles, or holds the others back
 * while the queue in service has requests in the device.
 */
static void settle(struct hdev *h)
{
	struct timespec t0, t;
	struct bfq_stats bs;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		bs = qstats(h);
		if (!bs.queued || bs.idling || bs.plugged ||
		    bs.rq_in_driver > (int)tdev_nheld(h->d))
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 10, "bfq never chose");
		sched_yield();
	}
}

/*
 * Complete one request at a time, n in all, moving the clock step each.
 * When bfq idles for a queue that ran dry with nothing in the device, the
 * slice runs out first (the test clock does not move by itself).
 */
static void complete_n(struct hdev *h, unsigned int n, uint64_t step)
{
	struct timespec t0, t;
	struct bfq_stats bs;
	unsigned int i;

	for (i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			settle(h);
			if (tdev_nheld(h->d))
				break;
			bs = qstats(h);
			if (bs.idling && !bs.rq_in_driver) {
				advance_run(h, 10 * MS);
				continue;
			}
			clock_gettime(CLOCK_MONOTONIC, &t);
			ck_assert_msg(t.tv_sec - t0.tv_sec < 10,
				      "the device never got a request");
			sched_yield();
		}
		advance(h, step);
		ck_assert(tdev_complete_held(h->d, 0));
	}
}

static unsigned int order_of(struct hdev *h, uint64_t sector)
{
	unsigned int i;

	for (i = 0; i < h->n; i++)
		if (h->order[i] == sector)
			return i;
	ck_abort_msg("sector %llu never dispatched",
		     (unsigned long long)sector);
	return 0;
}

/*
 * A best-effort client of the highest weight has reads queued on a
 * device that takes one at a time; a real-time client's read goes next
 * (after the one held and the one parked for the tag).
 */
START_TEST(test_rt_class_first)
{
	struct hdev *h = hdev_new(1, false);
	struct tbio be[8], rt;
	unsigned int i;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	ck_assert_int_eq(set(h->d, "weights", "1:1000"), 0);
	for (i = 0; i < 8; i++)
		sub_prio(h, &be[i], 1, i * 64, 0);
	wait_queued(h, 6);
	sub_prio(h, &rt, 2, 1u << 20, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 4));
	wait_queued(h, 7);
	ck_assert_uint_eq(cstats(h, 2, true).ioprio_class, IOPRIO_CLASS_RT);
	complete_n(h, 9, MS);
	ck_assert_uint_eq(order_of(h, 1u << 20), 2);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(tbio_wait(&be[i]), 0);
	ck_assert_int_eq(tbio_wait(&rt), 0);
	hdev_free(h);
}
END_TEST

/*
 * An idle-class client's read waits while a best-effort client has
 * reads queued; once the idle class has waited BFQ_CL_IDLE_TIMEOUT
 * (200 ms) it is served in its turn.
 */
static unsigned int idle_read_position(uint64_t step)
{
	struct hdev *h = hdev_new(1, false);
	struct tbio be[6], idle;
	unsigned int i, pos;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	for (i = 0; i < 6; i++)
		sub_prio(h, &be[i], 1, i * 64, 0);
	wait_queued(h, 4);
	sub_prio(h, &idle, 2, 1u << 20,
		 IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0));
	wait_queued(h, 5);
	complete_n(h, 7, step);
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(tbio_wait(&be[i]), 0);
	ck_assert_int_eq(tbio_wait(&idle), 0);
	pos = order_of(h, 1u << 20);
	hdev_free(h);
	return pos;
}

START_TEST(test_idle_class)
{
	ck_assert_uint_eq(idle_read_position(MS), 6);
	ck_assert_uint_lt(idle_read_position(300 * MS), 5);
}
END_TEST

/* --- the per-queue request limit ----------------------------------- */

/*
 * A device that takes one request at a time, its queue stopped so that
 * everything waits in bfq, and client 2's two reads b[0], b[1] queued.
 */
static struct hdev *limit_setup(struct tbio *b)
{
	struct hdev *h = hdev_new(1, false);

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	tdev_stop_queues(h->d);
	sub(h, &b[0], 2, REQ_OP_READ, 1u << 20, 4096);
	sub(h, &b[1], 2, REQ_OP_READ, (1u << 20) + 16, 4096);
	ck_assert_uint_eq(qstats(h).queued, 2);
	return h;
}

/* Start the queue and complete client 1's na and client 2's nb bios. */
static void limit_finish(struct hdev *h, struct tbio *a, unsigned int na,
			 struct tbio *b, unsigned int nb)
{
	unsigned int i;

	mq_start_hw_queues(h->d->q);
	complete_n(h, na + nb, MS);
	for (i = 0; i < na; i++)
		ck_assert_int_eq(tbio_wait(&a[i]), 0);
	for (i = 0; i < nb; i++)
		ck_assert_int_eq(tbio_wait(&b[i]), 0);
	hdev_free(h);
}

/*
 * bfqq_request_over_limit: a client holding more than its weight's
 * share of the scheduler tags gets about one at a time, so that another
 * active client still finds tags.  Two clients of one weight: client 2
 * has two reads queued, then client 1 sends 200 reads against 128
 * scheduler tags, then client 2 sends 8 more.  Client 1 stops at its
 * share (64): client 2's reads find tags.  Without the limit client 1
 * takes every tag left and client 2's reads wait for one.
 */
START_TEST(test_request_over_limit)
{
	static struct tbio a[200], b[10];
	struct hdev *h = limit_setup(b);
	unsigned int i, q1;

	for (i = 0; i < 200; i++)
		sub(h, &a[i], 1, REQ_OP_READ, i * 16, 4096);
	q1 = qstats(h).queued;
	ck_assert_uint_ge(q1 - 2, 60);
	ck_assert_uint_le(q1 - 2, 64);
	for (i = 2; i < 10; i++)
		sub(h, &b[i], 2, REQ_OP_READ, (1u << 20) + i * 16, 4096);
	ck_assert_uint_eq(qstats(h).queued, q1 + 8);
	limit_finish(h, a, 200, b, 10);
}
END_TEST

/*
 * The shared async queues are held to a share too, as in Linux: with
 * client 2's two reads queued, client 1's 100 plain writes stop at the
 * async queue's share of the async limit (half the 128 scheduler tags:
 * 64), beside client 2's sync queue of the same weight: 32.  Limiting
 * sync queues only, they would take the whole async limit (62 with the
 * two the reads hold).
 */
START_TEST(test_request_limit_async)
{
	static struct tbio a[100], b[2];
	struct hdev *h = limit_setup(b);
	unsigned int i;

	for (i = 0; i < 100; i++)
		sub(h, &a[i], 1, REQ_OP_WRITE, i * 16, 4096);
	ck_assert_uint_eq(qstats(h).queued - 2, 32);
	limit_finish(h, a, 100, b, 2);
}
END_TEST

/* --- injection while idling ------------------------------------------- */

/* Requests of client the device holds. */
static unsigned int held_of(struct hdev *h, uint64_t client)
{
	struct tdev *d = h->d;
	unsigned int i, n = 0;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->nheld; i++)
		n += d->held[i]->submitter == client;
	pthread_mutex_unlock(&d->lock);
	return n;
}

/* Run the queue: what dispatch would do now, it has done. */
static void run_now(struct hdev *h)
{
	tdev_run_now(h->d, 0);
}

/*
 * Stop dispatching, or start again (and dispatch now): requests
 * submitted meanwhile are all in bfq when it next chooses a queue.
 */
static void stop_queue(struct hdev *h)
{
	tdev_stop_queues(h->d);
}

static void start_queue(struct hdev *h)
{
	mq_start_hw_queue(h->d->q->queue_hw_ctx[0]);
}

/* Wait (bounded) until the device holds n requests, or fail. */
static void wait_held(struct hdev *h, unsigned int n)
{
	ck_assert_msg(tdev_wait_held_for(h->d, n, 10),
		      "the device never held %u requests (holds %u)", n,
		      tdev_nheld(h->d));
}

/*
 * Client 1 (weight 1000) and client 2 (the default weight) on flash:
 * asymmetric, so the device is idled for client 1 whenever it runs dry.
 * Client 1 reads (20 ms) and client 2 queues four reads at the same
 * time; client 1, of the higher weight, is served first, and its short
 * think time starts its inject_limit at 0: nothing of client 2's is
 * injected, neither while client 1's read is in flight nor while the
 * device idles for it afterwards.
 */
static struct hdev *inject_setup(struct tbio *a, struct tbio *b,
				 const char *slice_idle)
{
	struct hdev *h = hdev_new(8, false);
	struct bfq_client_stats st;
	unsigned int i;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	ck_assert_int_eq(set(h->d, "slice_idle", slice_idle), 0);
	ck_assert_int_eq(set(h->d, "weights", "1:1000"), 0);
	stop_queue(h);
	sub(h, &a[0], 1, REQ_OP_READ, 0, 4096);
	for (i = 0; i < 4; i++)
		sub(h, &b[i], 2, REQ_OP_READ, (1u << 24) + i * 8, 4096);
	wait_queued(h, 5);
	start_queue(h);
	wait_held(h, 1);
	ck_assert_uint_eq(held_of(h, 1), 1);
	run_now(h);
	ck_assert_uint_eq(tdev_nheld(h->d), 1);
	advance(h, 20 * MS);
	complete_client(h, 1);
	ck_assert_int_eq(tbio_wait(&a[0]), 0);
	run_now(h);
	st = cstats(h, 1, true);
	ck_assert(st.idling);
	ck_assert(st.has_short_ttime);
	ck_assert_uint_eq(st.inject_limit, 0);
	ck_assert_uint_eq(tdev_nheld(h->d), 0);
	ck_assert_uint_eq(qstats(h).queued, 4);
	return h;
}

/*
 * Client 1 reads again with the device empty: the 2 ms its read takes
 * are its baseline service time, and the limit becomes 1: while the
 * device idles for client 1 again, one read of client 2's is injected,
 * and only one.
 */
static void inject_baseline(struct hdev *h, struct tbio *a)
{
	struct bfq_client_stats st;

	sub(h, &a[1], 1, REQ_OP_READ, 8, 4096);
	wait_held(h, 1);
	ck_assert_uint_eq(held_of(h, 1), 1);
	advance(h, 2 * MS);
	complete_client(h, 1);
	ck_assert_int_eq(tbio_wait(&a[1]), 0);
	st = cstats(h, 1, true);
	ck_assert_uint_eq(st.last_serv_time_ns, 2 * MS);
	ck_assert_uint_eq(st.inject_limit, 1);
	wait_held(h, 1);
	run_now(h);
	ck_assert_uint_eq(held_of(h, 2), 1);
	ck_assert_uint_eq(tdev_nheld(h->d), 1);
	st = cstats(h, 1, true);
	ck_assert(st.in_service && st.idling);
}

START_TEST(test_injection_limit)
{
	struct tbio a[2], b[4];
	struct hdev *h = inject_setup(a, b, "8");
	struct bfq_client_stats st;

	inject_baseline(h, a);
	/*
	 * Client 1's idle slice ends: client 2's slot (kept while it runs
	 * dry, as the only busy queue) counts the read it had injected,
	 * besides its three others.
	 */
	advance_run(h, 10 * MS);
	wait_held(h, 4);
	st = cstats(h, 2, true);
	ck_assert(st.in_service);
	ck_assert_int_eq(st.service, 4 * 8);
	hdev_free(h);
}
END_TEST

/*
 * Then: client 1's next read arrives with the injected read in flight
 * and takes 2 ms, under 1.5x the baseline: injection did not hurt, the
 * limit grows to 2 and a second read of client 2's is injected.
 */
static void inject_grow(struct hdev *h, struct tbio *a)
{
	sub(h, &a[2], 1, REQ_OP_READ, 16, 4096);
	wait_held(h, 2);
	advance(h, 2 * MS);
	complete_client(h, 1);
	ck_assert_int_eq(tbio_wait(&a[2]), 0);
	ck_assert_uint_eq(cstats(h, 1, true).inject_limit, 2);
	wait_held(h, 2);
	ck_assert_uint_eq(held_of(h, 2), 2);
}

/*
 * The read after that takes 10 ms with two injected reads in the
 * device: injection hurt, the limit drops back to 1.
 */
START_TEST(test_inject_limit_adapts)
{
	struct tbio a[4], b[4];
	struct hdev *h = inject_setup(a, b, "8");

	inject_baseline(h, a);
	inject_grow(h, a);

	sub(h, &a[3], 1, REQ_OP_READ, 24, 4096);
	wait_held(h, 3);
	advance(h, 10 * MS);
	complete_client(h, 1);
	ck_assert_int_eq(tbio_wait(&a[3]), 0);
	ck_assert_uint_eq(cstats(h, 1, true).inject_limit, 1);
	ck_assert_uint_eq(cstats(h, 1, true).last_serv_time_ns, 2 * MS);
	hdev_free(h);
}
END_TEST

/*
 * An expiry ends the injection sampling (6.6's bfq_bfqq_expire resets
 * rqs_injected, wait_dispatch and waited_rq).  Client 1 idles alone; its
 * next read arrives with the device empty (and the queue stopped, 10 ms
 * after client 1's queue was made), which starts a sample: the
 * dispatch of its next request is to be timed.  Before anything is
 * dispatched, a real-time read of client 2's preempts client 1.  Client
 * 2's read, dispatched first, must not be taken for the one sampled: its
 * 1 ms would count from client 1's arrival 5 ms earlier and give client
 * 2 a baseline of 6 ms it never had.
 */
START_TEST(test_expiry_ends_inject_sampling)
{
	struct hdev *h = hdev_new(1, false);
	struct bfq_client_stats st;
	struct tbio a[2], rt;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	ck_assert_int_eq(set(h->d, "weights", "1:1000"), 0);
	sub(h, &a[0], 1, REQ_OP_READ, 0, 4096);
	wait_held(h, 1);
	advance(h, 2 * MS);
	complete_client(h, 1);
	ck_assert_int_eq(tbio_wait(&a[0]), 0);
	run_now(h);
	st = cstats(h, 1, true);
	ck_assert(st.in_service && st.idling);

	/* 10 ms since the queue was made: sampling may start (decrease_time).
	 */
	stop_queue(h);
	advance(h, 10 * MS);
	sub(h, &a[1], 1, REQ_OP_READ, 8, 4096);
	wait_queued(h, 1);
	ck_assert(cstats(h, 1, true).in_service);
	advance(h, 5 * MS);
	sub_prio(h, &rt, 2, 1u << 20, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 4));
	wait_queued(h, 2);
	ck_assert(!cstats(h, 1, true).in_service);
	start_queue(h);
	run_now(h);
	wait_held(h, 1);
	ck_assert_uint_eq(held_of(h, 2), 1);
	advance(h, MS);
	complete_client(h, 2);
	ck_assert_int_eq(tbio_wait(&rt), 0);
	st = cstats(h, 2, true);
	ck_assert_msg(st.last_serv_time_ns == 0, "client 2's baseline %llu ns",
		      (unsigned long long)st.last_serv_time_ns);
	hdev_free(h);
}
END_TEST

/*
 * Budget feedback after an expiry for "no more requests"
 * (__bfq_bfqq_recalc_budget): with slice_idle 0 nothing is idled for, so
 * a sync queue that runs dry expires for that reason, and its next budget
 * is the service it received, at least min_budget (512 sectors before
 * bfq has assigned 194 budgets).  40 reads of 16 KiB: 1280 sectors; then
 * one of 4 KiB: 8, so 512.  Each next read comes 10 ms after the last
 * completion: not in time to go on with the budget left.
 */
static int budget_after(struct hdev *h, struct tbio *tb, unsigned int n,
			uint32_t bytes, uint64_t *sector)
{
	unsigned int i;

	stop_queue(h);
	for (i = 0; i < n; i++, *sector += 64)
		sub(h, &tb[i], 1, REQ_OP_READ, *sector, bytes);
	wait_queued(h, n);
	start_queue(h);
	wait_held(h, n);
	advance(h, MS);
	while (tdev_complete_held(h->d, 0))
		;
	for (i = 0; i < n; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	advance(h, 10 * MS);
	/* The next read activates the queue with its new budget. */
	stop_queue(h);
	sub(h, &tb[n], 1, REQ_OP_READ, *sector, 4096);
	*sector += 64;
	wait_queued(h, 1);
	return cstats(h, 1, true).budget;
}

START_TEST(test_budget_after_no_more_requests)
{
	struct hdev *h = hdev_new(64, false);
	struct tbio tb[41];
	uint64_t sector = 0;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	ck_assert_int_eq(set(h->d, "slice_idle", "0"), 0);
	ck_assert_int_eq(budget_after(h, tb, 40, 16384, &sector), 40 * 32);
	start_queue(h);
	wait_held(h, 1);
	advance(h, MS);
	ck_assert(tdev_complete_held(h->d, 0));
	ck_assert_int_eq(tbio_wait(&tb[40]), 0);
	advance(h, 10 * MS);
	stop_queue(h);
	sub(h, &tb[0], 1, REQ_OP_READ, sector, 4096);
	wait_queued(h, 1);
	ck_assert_int_eq(cstats(h, 1, true).budget, 512);
	start_queue(h);
	hdev_free(h);
}
END_TEST

/*
 * Interactive weight raising ends once the queue has received
 * max_service_from_wr (120000 sectors) of service while raised, however
 * soon (bfq_update_wr_data).  A new client reads 64 KiB at a time, four
 * reads outstanding on a device that takes one (so its queue never runs
 * dry), 0.2 ms each: 1000 reads, 128000 sectors, in 200 ms of the clock,
 * far within the raising's duration (at least 3 s).  Raised until 900
 * reads (115200 sectors), no longer at 1000.
 */
START_TEST(test_wr_ends_by_service)
{
	struct hdev *h = hdev_new(1, false);
	struct tbio tb[4];
	struct bfq_client_stats st;
	uint64_t sector = 0;
	unsigned int i;

	for (i = 0; i < 4; i++, sector += 128)
		sub(h, &tb[i], 1, REQ_OP_READ, sector, 65536);
	for (i = 0; i < 1000; i++) {
		wait_held(h, 1);
		advance(h, 200000);
		ck_assert(tdev_complete_held(h->d, 0));
		ck_assert_int_eq(tbio_wait(&tb[i % 4]), 0);
		st = cstats(h, 1, true);
		if (i < 900)
			ck_assert_msg(st.wr_coeff == 30 && !st.soft_rt,
				      "read %u: wr_coeff %u soft_rt %d", i,
				      st.wr_coeff, st.soft_rt);
		sub(h, &tb[i % 4], 1, REQ_OP_READ, sector, 65536);
		sector += 128;
	}
	st = cstats(h, 1, true);
	ck_assert_msg(st.wr_coeff == 1, "still raised (x%u) after %llu sectors",
		      st.wr_coeff, (unsigned long long)st.sectors);
	hdev_free(h);
}
END_TEST

static void sub_mc(struct hdev *h, struct tbio *tb, struct mq_client *mc,
		   uint64_t sector)
{
	tbio_init(tb, h->d, REQ_OP_READ, sector, 4096);
	tb->bio.bi_submitter = mc->id;
	tb->bio.bi_client = mc;
	tbio_submit(h->d, tb, 0);
}

/*
 * Ours, not Linux's: clients 1 and 2 in groups of their own, both with
 * reads.  The one served first is idled for (two groups: asymmetric) and
 * gets a baseline that allows one injected request, yet nothing of the
 * other's is injected.
 */
START_TEST(test_no_injection_across_groups)
{
	struct hdev *h = hdev_new(8, false);
	struct mq_client mc[2] = {{.id = 1, .uid = 1}, {.id = 2, .uid = 2}};
	struct tbio tb[4];
	uint64_t x;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	ck_assert_int_eq(set(h->d, "groups", "g1:100 g2:100"), 0);
	ck_assert_int_eq(set(h->d, "group_map", "uid:1=g1 uid:2=g2"), 0);
	stop_queue(h);
	sub_mc(h, &tb[0], &mc[0], 0);
	sub_mc(h, &tb[1], &mc[1], 1u << 24);
	sub_mc(h, &tb[2], &mc[1], (1u << 24) + 8);
	wait_queued(h, 3);
	start_queue(h);
	wait_held(h, 1);
	x = qstats(h).in_service_client;
	ck_assert(x == 1 || x == 2);
	ck_assert_uint_eq(held_of(h, x), 1);
	advance(h, 20 * MS);
	complete_client(h, x);
	run_now(h);
	ck_assert(cstats(h, x, true).idling);
	/* The baseline: a read of x's alone in the device. */
	sub_mc(h, &tb[3], &mc[x - 1], 1u << 20);
	wait_held(h, 1);
	ck_assert_uint_eq(held_of(h, x), 1);
	advance(h, 2 * MS);
	complete_client(h, x);
	ck_assert_int_eq(tbio_wait(&tb[3]), 0);
	ck_assert_uint_eq(cstats(h, x, true).inject_limit, 1);
	run_now(h);
	ck_assert(cstats(h, x, true).idling);
	ck_assert_uint_eq(tdev_nheld(h->d), 0);
	hdev_free(h);
}
END_TEST

/*
 * Ours, not Linux's: on a disk, client 1 (weight 1000, thinking 30 ms
 * between reads, so idled for its share rather than for throughput)
 * gets a baseline that allows one injected request, yet nothing of
 * client 2's is injected.
 */
START_TEST(test_no_injection_on_disk)
{
	struct hdev *h = hdev_new(8, true);
	struct tbio a[2], b[2], tb;
	unsigned int i;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	ck_assert_int_eq(set(h->d, "weights", "1:1000"), 0);
	for (i = 0; i < 4; i++) {
		read_one(h, &tb, 1, i * 8, MS);
		advance_run(h, 30 * MS);
	}
	ck_assert(!cstats(h, 1, true).has_short_ttime);
	stop_queue(h);
	sub(h, &a[0], 1, REQ_OP_READ, 1u << 29, 4096);
	for (i = 0; i < 2; i++)
		sub(h, &b[i], 2, REQ_OP_READ, (1u << 24) + i * 8, 4096);
	wait_queued(h, 3);
	start_queue(h);
	wait_held(h, 1);
	ck_assert_uint_eq(held_of(h, 1), 1);
	advance(h, 20 * MS);
	complete_client(h, 1);
	run_now(h);
	ck_assert(cstats(h, 1, true).idling);
	sub(h, &a[1], 1, REQ_OP_READ, 1u << 28, 4096);
	wait_held(h, 1);
	ck_assert_uint_eq(held_of(h, 1), 1);
	advance(h, 2 * MS);
	complete_client(h, 1);
	ck_assert_int_eq(tbio_wait(&a[1]), 0);
	ck_assert_uint_eq(cstats(h, 1, true).inject_limit, 1);
	run_now(h);
	ck_assert(cstats(h, 1, true).idling);
	ck_assert_uint_eq(tdev_nheld(h->d), 0);
	hdev_free(h);
}
END_TEST

/*
 * An injected read that completes makes room under inject_limit: the
 * next one is injected at once, not when the idle slice (ten minutes
 * here) ends.
 */
START_TEST(test_inject_refill)
{
	struct tbio a[3], b[4];
	struct hdev *h = inject_setup(a, b, "600000");

	inject_baseline(h, a);
	inject_grow(h, a);
	complete_client(h, 2);
	ck_assert_int_eq(tbio_wait(&b[0]), 0);
	wait_held(h, 2);
	ck_assert_uint_eq(held_of(h, 2), 2);
	ck_assert(cstats(h, 1, true).idling);
	hdev_free(h);
}
END_TEST

/*
 * Client 2 reads; client 1 reads as soon as each read of client 2's
 * completes (it waits for client 2's I/O, say), 20 ms between rounds.
 * From its third read on client 1's think time is long; each of its
 * reads then follows a completion of client 2's within 4 ms, and the
 * third such (the fifth round) makes client 2 its waker.
 */
static void wake_rounds(struct hdev *h, unsigned int first, unsigned int n)
{
	struct tbio tb;
	unsigned int i;

	for (i = first; i < first + n; i++) {
		advance_run(h, 20 * MS);
		read_one(h, &tb, 2, (1u << 24) + i * 8, MS);
		read_one(h, &tb, 1, i * 8, MS);
	}
}

static struct hdev *waker_setup(const char *weights)
{
	struct hdev *h = hdev_new(8, false);
	struct bfq_client_stats st;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	ck_assert_int_eq(set(h->d, "weights", weights), 0);
	wake_rounds(h, 0, 4);
	st = cstats(h, 1, true);
	ck_assert(!st.has_short_ttime);
	ck_assert(!st.has_waker);
	wake_rounds(h, 4, 1);
	st = cstats(h, 1, true);
	ck_assert(st.has_waker);
	ck_assert_uint_eq(st.waker_client, 2);
	ck_assert(st.waker_sync);
	/* Client 2 has no waker: client 1's reads came 20 ms before. */
	ck_assert(!cstats(h, 2, true).has_waker);
	/* Long think time: one request may be injected for either. */
	ck_assert_uint_eq(st.inject_limit, 1);
	advance_run(h, 30 * MS);
	return h;
}

START_TEST(test_waker_detection)
{
	hdev_free(waker_setup("1:40"));
}
END_TEST

/* Each client reads its own place: 1 at 1 MiB, 2 at 16 MiB, 3 at 4 MiB. */
static uint64_t client_sector(uint64_t client)
{
	return client == 1 ? 1u << 20 : client == 2 ? 1u << 24 : 1u << 22;
}

/*
 * Client served (weight 1000) and client 3 read at the same time;
 * served is served first and kept in service, with its read in flight.
 * Client 3's read waits: one request in the device (served's own) is
 * all served's inject_limit allows.  A read of client injected (served's
 * waker, or the client served wakes), arriving after it, is injected at
 * once.
 */
static void check_injected_first(const char *weights, uint64_t served,
				 uint64_t injected)
{
	struct hdev *h = waker_setup(weights);
	struct tbio s, c, w;

	stop_queue(h);
	sub(h, &s, served, REQ_OP_READ, client_sector(served), 4096);
	sub(h, &c, 3, REQ_OP_READ, client_sector(3), 4096);
	wait_queued(h, 2);
	start_queue(h);
	wait_held(h, 1);
	ck_assert_uint_eq(held_of(h, served), 1);
	run_now(h);
	ck_assert_uint_eq(tdev_nheld(h->d), 1);
	sub(h, &w, injected, REQ_OP_READ, client_sector(injected), 4096);
	wait_held(h, 2);
	ck_assert_uint_eq(held_of(h, injected), 1);
	ck_assert_uint_eq(held_of(h, 3), 0);
	ck_assert(cstats(h, served, true).in_service);
	hdev_free(h);
}

/* Client 2 is client 1's waker: its read goes before client 3's. */
START_TEST(test_waker_injected_first)
{
	check_injected_first("1:1000", 1, 2);
}
END_TEST

/* The other way round: client 1, which client 2 wakes, goes first. */
START_TEST(test_woken_injected_first)
{
	check_injected_first("2:1000", 2, 1);
}
END_TEST

/*
 * Idling for a queue busy alone (Linux 6.6): clients 1 and 2 of equal
 * weight on flash each read once, far apart.  Client 1 is served first;
 * with client 2 busy beside it, it is not idled for and expires, its read
 * in the device.  Client 2, then the only busy queue, keeps the device
 * when it runs dry: when its read completes, the device is idled for it,
 * with client 1's read still in flight, instead of expiring it.
 */
START_TEST(test_idling_for_queue_busy_alone)
{
	struct hdev *h = hdev_new(8, false);
	struct bfq_client_stats st;
	struct tbio a, b;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	stop_queue(h);
	sub(h, &a, 1, REQ_OP_READ, 0, 4096);
	sub(h, &b, 2, REQ_OP_READ, 1u << 24, 4096);
	wait_queued(h, 2);
	start_queue(h);
	wait_held(h, 2);
	run_now(h);
	ck_assert(!cstats(h, 1, true).busy);
	st = cstats(h, 2, true);
	ck_assert(st.busy && st.in_service);
	advance(h, MS);
	complete_client(h, 2);
	ck_assert_int_eq(tbio_wait(&b), 0);
	run_now(h);
	ck_assert_uint_eq(held_of(h, 1), 1);
	st = cstats(h, 2, true);
	ck_assert(st.in_service && st.idling);
	/* Until the slice runs out. */
	advance_run(h, 10 * MS);
	ck_assert(!cstats(h, 2, true).in_service);
	hdev_free(h);
}
END_TEST

/*
 * Clients of two classes busy at once are an asymmetric scenario
 * (bfq_asymmetric_scenario's multiple_classes_busy): the device idles for
 * a best-effort reader between its reads, so that an idle-class client's
 * queued reads do not take the device each time the reader thinks.
 * Without the rule both queues have the default weight, nothing holds the
 * idle class back, and its four reads go to the device beside the
 * reader's first one.
 */
START_TEST(test_idling_for_a_higher_class)
{
	struct hdev *h = hdev_new(8, false);
	struct bfq_client_stats st;
	struct tbio a[2], b[4];
	unsigned int i;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	stop_queue(h);
	sub(h, &a[0], 1, REQ_OP_READ, 0, 4096);
	for (i = 0; i < 4; i++)
		sub_prio(h, &b[i], 2, (1u << 24) + i * 8,
			 IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0));
	wait_queued(h, 5);
	start_queue(h);
	wait_held(h, 1);
	run_now(h);
	ck_assert_uint_eq(held_of(h, 1), 1);
	ck_assert_uint_eq(tdev_nheld(h->d), 1);
	advance(h, MS);
	complete_client(h, 1);
	ck_assert_int_eq(tbio_wait(&a[0]), 0);
	run_now(h);
	st = cstats(h, 1, true);
	ck_assert(st.in_service && st.idling);
	ck_assert_uint_eq(tdev_nheld(h->d), 0);
	/* The reader's next read, within the slice, goes at once. */
	advance(h, MS);
	sub(h, &a[1], 1, REQ_OP_READ, 8, 4096);
	wait_held(h, 1);
	ck_assert_uint_eq(held_of(h, 1), 1);
	ck_assert_uint_eq(tdev_nheld(h->d), 1);
	hdev_free(h);
}
END_TEST

/*
 * Ours, not Linux's: a client over its share of the scheduler tags may
 * still take one tag more than the others hold, where Linux gives it a
 * depth of 1 (docs/schedulers.md).  Client 1 (weight 1000) reads, and
 * client 2's plain write queues beside it: client 1 keeps the device,
 * and the write holds its tag until the end.  Client 1's 199 more reads
 * take its share (123 of 128 tags), the rest wait for a tag, and as
 * client 1's reads complete they all get through, one at a time.  With
 * a depth of 1 they would wait for client 2's write to complete.
 */
START_TEST(test_request_limit_one_more_than_others)
{
	static struct tbio a[200];
	struct hdev *h = hdev_new(8, false);
	struct timespec t0, t;
	unsigned int i, done = 0;
	struct bfq_stats bs;
	struct tbio b;

	ck_assert_int_eq(set(h->d, "low_latency", "0"), 0);
	ck_assert_int_eq(set(h->d, "weights", "1:1000"), 0);
	sub(h, &a[0], 1, REQ_OP_READ, 0, 4096);
	wait_held(h, 1);
	sub(h, &b, 2, REQ_OP_WRITE, 1u << 20, 4096);
	wait_queued(h, 1);
	for (i = 1; i < 200; i++)
		sub(h, &a[i], 1, REQ_OP_READ, i * 16, 4096);
	/* Some wait for a tag: client 1 is over its share. */
	bs = qstats(h);
	ck_assert_uint_lt(bs.queued + (unsigned int)bs.rq_in_driver, 201);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done < 200) {
		if (held_of(h, 1)) {
			complete_client(h, 1);
			done++;
			continue;
		}
		run_now(h);
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 10,
			      "client 1 stuck after %u reads", done);
		sched_yield();
	}
	for (i = 0; i < 200; i++)
		ck_assert_int_eq(tbio_wait(&a[i]), 0);
	hdev_free(h);
}
END_TEST

static Suite *bfq_heur_suite(void)
{
	Suite *s = suite_create("bfq_heuristics");
	TCase *tc = tcase_create("bfq_heuristics");

	tcase_add_test(tc, test_fifo_expiry);
	tcase_add_test(tc, test_async_charge_factor);
	tcase_add_test(tc, test_hw_tag_detection);
	tcase_add_test(tc, test_peak_rate_estimation);
	tcase_add_test(tc, test_burst_detection);
	tcase_add_test(tc, test_soft_rt_raising);
	tcase_add_test(tc, test_think_time);
	tcase_add_test(tc, test_think_time_only_when_idle);
	tcase_add_test(tc, test_io_intensity);
	tcase_add_test(tc, test_charge_time_bounded);
	tcase_add_test(tc, test_raising_default_weight_only);
	tcase_add_test(tc, test_rt_class_first);
	tcase_add_test(tc, test_idle_class);
	tcase_add_test(tc, test_request_over_limit);
	tcase_add_test(tc, test_request_limit_async);
	tcase_add_test(tc, test_injection_limit);
	tcase_add_test(tc, test_inject_limit_adapts);
	tcase_add_test(tc, test_expiry_ends_inject_sampling);
	tcase_add_test(tc, test_budget_after_no_more_requests);
	tcase_add_test(tc, test_wr_ends_by_service);
	tcase_add_test(tc, test_inject_refill);
	tcase_add_test(tc, test_no_injection_across_groups);
	tcase_add_test(tc, test_no_injection_on_disk);
	tcase_add_test(tc, test_waker_detection);
	tcase_add_test(tc, test_waker_injected_first);
	tcase_add_test(tc, test_woken_injected_first);
	tcase_add_test(tc, test_idling_for_queue_busy_alone);
	tcase_add_test(tc, test_idling_for_a_higher_class);
	tcase_add_test(tc, test_request_limit_one_more_than_others);
	suite_add_tcase(s, tc);
	return s;
}

#else

START_TEST(test_bfq_not_built)
{
	ck_assert_ptr_null(elevator_find("bfq"));
}
END_TEST

static Suite *bfq_heur_suite(void)
{
	Suite *s = suite_create("bfq_heuristics");
	TCase *tc = tcase_create("bfq_heuristics");

	tcase_add_test(tc, test_bfq_not_built);
	suite_add_tcase(s, tc);
	return s;
}

#endif

int main(void)
{
	return tcheck_run(bfq_heur_suite());
}
