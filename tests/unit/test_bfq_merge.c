/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests for BFQ's merging of cooperating queues (scheduler/bfq/
 * bfq-merge.c): clients reading one area interleaved end up in one
 * queue, served as one sequential stream; clients far apart do not; a
 * shared queue that turns seeky is split, each client getting its own
 * queue back with the state it had; a queue created right after another
 * is merged with it later (stable merge).  bfq runs on a clock the test
 * moves (bfq_set_clock) over a rotational test device that takes one
 * request at a time, so no result depends on the machine's speed.
 */
#include <check.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/mq/elevator.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdev.h"

#ifdef MQBLK_HAVE_BFQ
#include "scheduler/bfq/bfq.h"

#define MS  1000000ull
#define KB4 4096

struct hdev {
	struct tdev *d;
	_Atomic uint64_t clock;
	unsigned int n; /* requests the device accepted, in order: */
	uint64_t order[256];
};

/* The device: one request at a time, busy beyond. */
static enum mq_qrc hold_one(struct tdev *d, struct request *rq)
{
	struct hdev *h = d->priv;

	pthread_mutex_lock(&d->lock);
	if (d->nheld >= 1) {
		pthread_mutex_unlock(&d->lock);
		return MQ_QRC_BUSY;
	}
	if (h->n < 256)
		h->order[h->n++] = blk_rq_pos(rq);
	pthread_mutex_unlock(&d->lock);
	return tdev_hold(d, rq);
}

static struct hdev *hdev_new_flags(unsigned int flags)
{
	struct hdev *h = calloc(1, sizeof(*h));

	ck_assert_ptr_nonnull(h);
	h->d = tdev_new(1, 64, 0, flags, hold_one);
	h->d->priv = h;
	h->d->q->limits.rotational = true;
	ck_assert_int_eq(elevator_switch(h->d->q, elevator_find("bfq")), 0);
	ck_assert_int_eq(bfq_set_clock(h->d->q, &h->clock), 0);
	return h;
}

static struct hdev *hdev_new(void)
{
	return hdev_new_flags(0);
}

static struct bfq_stats qstats(struct hdev *h)
{
	struct bfq_stats bs;

	ck_assert_int_eq(bfq_stats(h->d->q, 0, &bs), 0);
	return bs;
}

static struct bfq_client_stats cstats(struct hdev *h, uint64_t client)
{
	struct bfq_client_stats st;

	ck_assert_int_eq(bfq_client_stats(h->d->q, 0, client, true, &st), 0);
	return st;
}

static void advance(struct hdev *h, uint64_t ns)
{
	atomic_fetch_add(&h->clock, ns);
}

static void run_now(struct hdev *h)
{
	tdev_run_now(h->d, 0);
}

static void sub(struct hdev *h, struct tbio *tb, uint64_t client,
		uint64_t sector)
{
	tbio_init(tb, h->d, REQ_OP_READ, sector, KB4);
	tb->bio.bi_submitter = client;
	tbio_submit(h->d, tb, 0);
}

/* Wait (bounded) until bfq holds exactly n requests not yet dispatched. */
static void wait_queued(struct hdev *h, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < 100000 && qstats(h).queued != n; i++)
		sched_yield();
	ck_assert_uint_eq(qstats(h).queued, n);
}

/*
 * Serve n requests one by one: whenever the device is empty, move the
 * clock past an idle slice and run the queue; each request takes 1 ms.
 */
static void serve(struct hdev *h, unsigned int n)
{
	unsigned int i, tries;

	for (i = 0; i < n; i++) {
		run_now(h);
		for (tries = 0; !tdev_nheld(h->d) && tries < 50; tries++) {
			advance(h, 10 * MS);
			run_now(h);
		}
		ck_assert_msg(tdev_wait_held_for(h->d, 1, 10),
			      "request %u never dispatched", i);
		advance(h, MS);
		ck_assert(tdev_complete_held(h->d, 0));
	}
}

/* Complete everything left and free the device (bounded). */
static void hdev_free(struct hdev *h)
{
	unsigned int i;
	struct bfq_stats bs;

	for (i = 0; i < 1000; i++) {
		advance(h, 10000 * MS);
		mq_run_hw_queues(h->d->q, false);
		while (tdev_complete_held(h->d, 0))
			;
		bs = qstats(h);
		if (!bs.queued && !bs.rq_in_driver && !tdev_nheld(h->d))
			break;
		sched_yield();
	}
	ck_assert_msg(i < 1000, "requests left");
	tdev_free(h->d);
	free(h);
}

static void check_order(struct hdev *h, unsigned int from, const uint64_t *want,
			unsigned int n)
{
	unsigned int i;

	ck_assert_uint_ge(h->n, from + n);
	for (i = 0; i < n; i++)
		ck_assert_msg(h->order[from + i] == want[i],
			      "dispatch %u: sector %llu, want %llu", from + i,
			      (unsigned long long)h->order[from + i],
			      (unsigned long long)want[i]);
}

/*
 * Client 1 reads 0, client 2 reads 16 (200 ms later: no stable merge)
 * and 48, then client 1 reads 32, all with dispatch stopped: client 1's
 * read at 32 lands next to client 2's queued read at 16 (the position
 * tree), so client 1 is redirected to client 2's queue.  Served: 0 (the
 * last request of client 1's own queue), then the shared queue in
 * sector order, 16, 32, 48.  Without merging client 1's queue would go
 * on with 32 before 16.  Then each client queues two more interleaved
 * reads: one stream again.
 */
START_TEST(test_interleaved_merged)
{
	static const uint64_t first[] = {0, 16, 32, 48};
	static const uint64_t then[] = {64, 80, 96, 112};
	struct hdev *h = hdev_new();
	struct bfq_client_stats a, b;
	struct tbio t[8];

	tdev_stop_queues(h->d);
	sub(h, &t[0], 1, 0);
	advance(h, 200 * MS);
	sub(h, &t[1], 2, 16);
	sub(h, &t[2], 2, 48);
	sub(h, &t[3], 1, 32);
	wait_queued(h, 4);
	a = cstats(h, 1);
	b = cstats(h, 2);
	ck_assert(a.shared);
	ck_assert_int_eq(a.clients, 2);
	ck_assert_uint_eq(a.queue_owner, b.queue_owner);
	mq_start_hw_queue(h->d->q->queue_hw_ctx[0]);
	serve(h, 4);
	check_order(h, 0, first, 4);

	tdev_stop_queues(h->d);
	sub(h, &t[4], 1, 64);
	sub(h, &t[5], 1, 96);
	sub(h, &t[6], 2, 80);
	sub(h, &t[7], 2, 112);
	wait_queued(h, 4);
	mq_start_hw_queue(h->d->q->queue_hw_ctx[0]);
	serve(h, 4);
	check_order(h, 4, then, 4);
	ck_assert(cstats(h, 2).shared);
	ck_assert_uint_eq(cstats(h, 1).queue_owner, cstats(h, 2).queue_owner);
	hdev_free(h);
}
END_TEST

/* The same with client 2 reading 8 GiB away: two queues, no merge. */
START_TEST(test_far_apart_not_merged)
{
	const uint64_t far = 16ull << 20;
	struct hdev *h = hdev_new();
	struct bfq_client_stats a, b;
	struct tbio t[4];

	tdev_stop_queues(h->d);
	sub(h, &t[0], 1, 0);
	advance(h, 200 * MS);
	sub(h, &t[1], 2, far + 16);
	sub(h, &t[2], 2, far + 48);
	sub(h, &t[3], 1, 32);
	wait_queued(h, 4);
	a = cstats(h, 1);
	b = cstats(h, 2);
	ck_assert(!a.shared);
	ck_assert(!b.shared);
	ck_assert_int_eq(a.clients, 1);
	ck_assert_int_eq(b.clients, 1);
	ck_assert_uint_eq(a.queue_owner, 1);
	ck_assert_uint_eq(b.queue_owner, 2);
	mq_start_hw_queue(h->d->q->queue_hw_ctx[0]);
	serve(h, 4);
	hdev_free(h);
}
END_TEST

/*
 * The in-service queue's merge: client 1 is in service, its reads at 0
 * and 20000 dispatched (the second waits in the core: the device takes
 * one at a time); client 2 has a read queued 8 GiB away, then reads at
 * 20016, right after client 1's last dispatch: client 2 joins client 1's
 * queue (no queue has its next request near, so only the in-service
 * check finds it) and its read is served in client 1's slot.
 */
START_TEST(test_in_service_merge)
{
	static const uint64_t want[] = {0, 20000, 20016};
	const uint64_t far = 16ull << 20;
	struct hdev *h = hdev_new();
	struct bfq_client_stats b;
	struct tbio t[4];

	tdev_stop_queues(h->d);
	sub(h, &t[0], 1, 0);
	sub(h, &t[3], 1, 20000);
	advance(h, 200 * MS);
	sub(h, &t[1], 2, far);
	wait_queued(h, 3);
	mq_start_hw_queue(h->d->q->queue_hw_ctx[0]);
	ck_assert(tdev_wait_held_for(h->d, 1, 10));
	ck_assert_uint_eq(h->order[0], 0);
	ck_assert(qstats(h).in_service);
	ck_assert_uint_eq(qstats(h).in_service_client, 1);
	sub(h, &t[2], 2, 20016);
	b = cstats(h, 2);
	ck_assert(b.shared);
	ck_assert_uint_eq(b.queue_owner, 1);
	ck_assert_int_eq(b.clients, 2);
	advance(h, MS);
	ck_assert(tdev_complete_held(h->d, 0));
	serve(h, 3);
	check_order(h, 0, want, 3);
	hdev_free(h);
}
END_TEST

/*
 * On a bio's merge attempt (bfq_allow_bio_merge): with bio merging on,
 * client 1 has a read at 0 queued and client 2 one 8 GiB away; client
 * 2's read at 8 would extend client 1's request, which is not in client
 * 2's queue.  Asked whether it may, bfq first merges client 2's queue
 * with client 1's (the position tree finds it next to 8), and the bio
 * then joins client 1's request: still two requests queued.
 */
START_TEST(test_bio_merge_cooperator)
{
	const uint64_t far = 16ull << 20;
	struct hdev *h = hdev_new_flags(MQ_F_SHOULD_MERGE);
	struct mq_hw_ctx *hctx = h->d->q->queue_hw_ctx[0];
	struct bfq_client_stats b;
	struct tbio t[3];
	unsigned long merged;

	tdev_stop_queues(h->d);
	sub(h, &t[0], 1, 0);
	advance(h, 200 * MS);
	sub(h, &t[1], 2, far);
	wait_queued(h, 2);
	merged = atomic_load(&hctx->stats.merged);
	sub(h, &t[2], 2, 8);
	merged = atomic_load(&hctx->stats.merged) - merged;
	ck_assert_uint_eq(merged, 1);
	ck_assert_uint_eq(qstats(h).queued, 2);
	b = cstats(h, 2);
	ck_assert(b.shared);
	ck_assert_uint_eq(b.queue_owner, 1);
	mq_start_hw_queue(hctx);
	serve(h, 2);
	ck_assert_uint_eq(h->order[0], 0);
	hdev_free(h);
}
END_TEST

/*
 * Merged as above.  Client 1's think-time history then has one sample
 * (weight 32) of 16 ms, the most a sample counts (two idle slices).
 * Then client 2 alone reads far and wide through the shared queue: the
 * queue turns seeky and, at an expiration, is marked for splitting.  The
 * next read of each client takes it out of the shared queue (the first
 * to come gets a new queue, the other keeps the old one), each with the
 * state it had when merged: for client 1, its think time (16 ms, and one
 * more sample makes the weight 60) instead of the shared queue's (client
 * 2's reads came at once, weight near 256) or a new queue's (weight 32).
 */
START_TEST(test_seeky_split)
{
	struct hdev *h = hdev_new();
	struct bfq_client_stats a, b;
	struct tbio t[40];
	unsigned int i, n = 0;

	tdev_stop_queues(h->d);
	sub(h, &t[n++], 1, 0);
	advance(h, 200 * MS);
	sub(h, &t[n++], 2, 16);
	sub(h, &t[n++], 2, 48);
	sub(h, &t[n++], 1, 32);
	wait_queued(h, 4);
	ck_assert(cstats(h, 1).shared);
	ck_assert_int_eq(cstats(h, 2).clients, 2);
	mq_start_hw_queue(h->d->q->queue_hw_ctx[0]);
	serve(h, 4);

	/* Client 2 alone: 24 reads, each far from the one before. */
	for (i = 0; i < 24; i++) {
		sub(h, &t[n++], 2, (i & 1 ? 1ull << 24 : 1ull << 22) + i * 8);
		serve(h, 1);
	}
	/* If it is idled for, its idle slice runs out: it expires. */
	advance(h, 20 * MS);
	run_now(h);

	sub(h, &t[n++], 1, 1ull << 26);
	serve(h, 1);
	sub(h, &t[n++], 2, 1ull << 27);
	serve(h, 1);
	a = cstats(h, 1);
	b = cstats(h, 2);
	ck_assert(!a.shared);
	ck_assert_int_eq(a.clients, 1);
	ck_assert(!b.shared);
	ck_assert_int_eq(b.clients, 1);
	ck_assert_uint_gt(a.ttime_samples, 32);
	ck_assert_uint_lt(a.ttime_samples, 100);
	ck_assert_uint_ge(a.ttime_mean, 8 * MS);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(tbio_wait(&t[i]), 0);
	hdev_free(h);
}
END_TEST

/*
 * Stable merge: client 2's queue is created 50 ms after client 1's, its
 * first read right after client 1's; client 3's at the same time, but
 * its first read 8 GiB away; client 4's 300 ms after client 1's, next to
 * it.  No queue is merged at first.  600 ms after their creation, the
 * next read of client 2 (far from anything, so no cooperator merge)
 * merges its queue with client 1's; clients 3 and 4 keep theirs.
 */
START_TEST(test_stable_merge)
{
	const uint64_t far = 16ull << 20;
	struct hdev *h = hdev_new();
	struct bfq_client_stats b;
	struct tbio t[8];
	uint64_t c;

	sub(h, &t[0], 1, 0);
	serve(h, 1);
	advance(h, 50 * MS);
	sub(h, &t[1], 2, 64);
	serve(h, 1);
	sub(h, &t[2], 3, far);
	serve(h, 1);
	advance(h, 250 * MS);
	sub(h, &t[3], 4, 128);
	serve(h, 1);
	for (c = 1; c <= 4; c++)
		ck_assert(!cstats(h, c).shared);

	advance(h, 700 * MS);
	sub(h, &t[4], 2, 2 * far);
	sub(h, &t[5], 3, 3 * far);
	sub(h, &t[6], 4, 4 * far);
	serve(h, 3);
	b = cstats(h, 2);
	ck_assert(b.shared);
	ck_assert_int_eq(b.clients, 2);
	ck_assert_uint_eq(b.queue_owner, 1);
	ck_assert_uint_eq(cstats(h, 1).queue_owner, 1);
	ck_assert(!cstats(h, 3).shared);
	ck_assert_int_eq(cstats(h, 3).clients, 1);
	ck_assert(!cstats(h, 4).shared);
	ck_assert_int_eq(cstats(h, 4).clients, 1);
	hdev_free(h);
}
END_TEST

static Suite *bfq_merge_suite(void)
{
	Suite *s = suite_create("bfq_merge");
	TCase *tc = tcase_create("bfq_merge");

	tcase_add_test(tc, test_interleaved_merged);
	tcase_add_test(tc, test_far_apart_not_merged);
	tcase_add_test(tc, test_in_service_merge);
	tcase_add_test(tc, test_bio_merge_cooperator);
	tcase_add_test(tc, test_seeky_split);
	tcase_add_test(tc, test_stable_merge);
	suite_add_tcase(s, tc);
	return s;
}

#else

START_TEST(test_bfq_not_built)
{
	ck_assert_ptr_null(elevator_find("bfq"));
}
END_TEST

static Suite *bfq_merge_suite(void)
{
	Suite *s = suite_create("bfq_merge");
	TCase *tc = tcase_create("bfq_merge");

	tcase_add_test(tc, test_bfq_not_built);
	suite_add_tcase(s, tc);
	return s;
}

#endif

int main(void)
{
	return tcheck_run(bfq_merge_suite());
}
