/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kyber (scheduler/kyber.c): domain tokens taken at dispatch and given
 * back at finish, with the hctx run again when one frees; the dispatch
 * batches; async requests limited to 75% of the scheduler tags; and the
 * timer-driven depth scaling on a slow device, on kyber's test clock.
 *
 * Every test uses the tdev test driver, which holds requests until the
 * test completes them; everything is waited for on conditions.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	/* kyber's own maxima, whatever nr_requests (128) says, as in 6.6 */
	ck_assert_uint_eq(d->q->nr_requests, 128);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_READ), 256);
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
	/*
	 * A small queue (16 scheduler tags) caps nothing, as in 6.6: the
	 * tags limit the domains, and only async requests get less.
	 */
	ck_assert_uint_eq(d->q->nr_requests, 16);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_READ), 256);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_WRITE), 128);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_OTHER), 16);
	ck_assert_uint_eq(kyber_async_depth(d->q), 12);
	tdev_free(d);
}
END_TEST

/* --- depth scaling on the test clock ---------------------------------- */

/*
 * Clients on kyber's test clock: n_reads reads and n_writes writes kept
 * in flight by the test thread; the device serves the oldest request it
 * holds in 3 ms of the clock, one at a time, and nothing else moves the
 * clock, so latencies are those of the queueing alone, whatever the
 * machine does.
 */
#define LAT_READS      16
#define LAT_WRITES     96
#define LAT_SERVICE_NS 3000000ull

struct lat_load {
	struct tdev *d;
	_Atomic uint64_t clock;
	struct tbio reads[LAT_READS], writes[LAT_WRITES];
	unsigned int n_reads, n_writes; /* kept in flight */
	bool inflight_r[LAT_READS], inflight_w[LAT_WRITES];
	uint64_t next_sector;
	unsigned long completed_reads;
};

static void lat_submit(struct lat_load *l, struct tbio *tb, enum req_op op)
{
	/* 4 KiB every 32 KiB: nothing merges. */
	tbio_init(tb, l->d, op, l->next_sector, 4096);
	l->next_sector += 64;
	tbio_submit(l->d, tb, 0);
}

/* Resubmit what completed, up to the depths wanted, and start new ones. */
static void lat_refill(struct lat_load *l)
{
	unsigned int i;

	for (i = 0; i < LAT_READS; i++) {
		if (l->inflight_r[i] && atomic_load(&l->reads[i].done)) {
			ck_assert_int_eq(l->reads[i].bio.bi_status, 0);
			l->inflight_r[i] = false;
			l->completed_reads++;
		}
		if (!l->inflight_r[i] && i < l->n_reads) {
			l->inflight_r[i] = true;
			lat_submit(l, &l->reads[i], REQ_OP_READ);
		}
	}
	for (i = 0; i < LAT_WRITES; i++) {
		if (l->inflight_w[i] && atomic_load(&l->writes[i].done)) {
			ck_assert_int_eq(l->writes[i].bio.bi_status, 0);
			l->inflight_w[i] = false;
		}
		if (!l->inflight_w[i] && i < l->n_writes) {
			l->inflight_w[i] = true;
			lat_submit(l, &l->writes[i], REQ_OP_WRITE);
		}
	}
}

/* One request served: 3 ms pass, the oldest held completes. */
static void lat_serve_one(struct lat_load *l)
{
	tdev_run_now(l->d, 0);
	tdev_wait_held(l->d, 1);
	atomic_fetch_add(&l->clock, LAT_SERVICE_NS);
	ck_assert(tdev_complete_held(l->d, 0));
	lat_refill(l);
}

/*
 * Serve up to max requests until the write depth is at most (below) or
 * at least bound; returns the depth, and the extreme seen in *extreme.
 */
static unsigned int lat_serve_until(struct lat_load *l, bool below,
				    unsigned int bound, unsigned int max,
				    unsigned int *extreme)
{
	unsigned int i, depth = 0;

	for (i = 0; i < max; i++) {
		lat_serve_one(l);
		depth = kyber_domain_depth(l->d->q, KYBER_WRITE);
		if (below ? depth < *extreme : depth > *extreme)
			*extreme = depth;
		if (below ? depth <= bound : depth >= bound)
			break;
	}
	return depth;
}

/* Serve until nothing is in flight (no resubmission). */
static void lat_drain(struct lat_load *l)
{
	unsigned int i;
	bool busy = true;

	l->n_reads = l->n_writes = 0;
	while (busy) {
		busy = false;
		for (i = 0; i < LAT_READS; i++)
			busy |= l->inflight_r[i];
		for (i = 0; i < LAT_WRITES; i++)
			busy |= l->inflight_w[i];
		if (busy)
			lat_serve_one(l);
	}
}

/*
 * A slow device: every request takes 3 ms of kyber's clock.  Reads miss
 * a 1 ms target, so the device counts as congested and kyber throttles
 * the writes, whose own latency is fine (a 10 s target).  When the reads
 * stop and the write target goes back to 10 ms, the writes pile up behind
 * their few tokens and miss it, and kyber gives them their depth back.
 * The timer runs every 100 ms of the clock, and a percentile needs 500
 * samples or 1 s, so each depth change takes a few hundred requests.
 */
START_TEST(depth_follows_read_latency)
{
	struct lat_load *l = calloc(1, sizeof(*l));
	unsigned int depth, low = 128, high = 0;
	const struct elv_fs_entry *a;
	struct tdev *d;

	ck_assert_ptr_nonnull(l);
	d = kyber_tdev(64);
	l->d = d;
	ck_assert_int_eq(kyber_set_clock(d->q, &l->clock), 0);
	a = d->q->elevator->type->elevator_attrs;
	ck_assert_str_eq(a[0].name, "read_lat_nsec");
	ck_assert_str_eq(a[1].name, "write_lat_nsec");
	ck_assert_int_eq(a[0].store(d->q->elevator, "1000000"), 0);
	ck_assert_int_eq(a[1].store(d->q->elevator, "10000000000"), 0);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_WRITE), 128);

	/* Reads that miss their target, and a few writes. */
	l->n_reads = LAT_READS;
	l->n_writes = 8;
	lat_refill(l);
	depth = lat_serve_until(l, true, 8, 20000, &low);
	ck_assert_msg(depth <= 8, "write depth %u after 60 s of missed reads",
		      depth);
	ck_assert_uint_eq(kyber_domain_depth(d->q, KYBER_READ), 256);
	ck_assert_uint_ge(l->completed_reads, 500);

	/* No more reads; the writer has a backlog now. */
	l->n_reads = 0;
	ck_assert_int_eq(a[1].store(d->q->elevator, "10000000"), 0);
	high = low;
	l->n_writes = LAT_WRITES;
	lat_refill(l);
	depth = lat_serve_until(l, false, 24, 20000, &high);
	ck_assert_msg(depth >= 24 && depth >= 3 * low,
		      "write depth %u, low %u: did not grow back", depth, low);
	ck_assert_uint_gt(kyber_timer_runs(d->q), 5);
	printf("kyber: write depth 128, down to %u with reads missing their target, back to %u without them\n",
	       low, depth);
	lat_drain(l);
	ck_assert_uint_eq(tokens_busy(d->q), 0);
	ck_assert_int_eq(kyber_set_clock(d->q, NULL), 0);
	tdev_free(d);
	free(l);
}
END_TEST

/* One request alone in the device, taking ns of the test clock. */
static void lone_request(struct tdev *d, _Atomic uint64_t *clock,
			 enum req_op op, uint64_t sector, uint64_t ns)
{
	struct tbio tb;

	tbio_init(&tb, d, op, sector, 4096);
	tbio_submit(d, &tb, 0);
	tdev_run_now(d, 0);
	tdev_wait_held(d, 1);
	atomic_fetch_add(clock, ns);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb), 0);
}

/*
 * The write depth after 1500 rounds of a read whose I/O latency is
 * read_pct percent of its 2 ms target and a write well within its own:
 * a read p90 over the target (from 1 to 1.25 times it, the first bad
 * bucket) means congestion, and kyber throttles the writes (to 8 or 32,
 * depending on where the timer runs fall); one at the target does not.
 * Each domain gets its 500 samples in about 1.1 s of
 * the clock, so both latencies are judged in the same timer run (at
 * fewer, a domain's I/O and total percentiles take turns with the one
 * timeout they share, as in 6.6, and the writes' p99 never comes).
 */
static unsigned int write_depth_after_reads_at(unsigned int read_pct)
{
	struct tdev *d = kyber_tdev(64);
	_Atomic uint64_t clock = 0;
	unsigned int i, depth;

	ck_assert_int_eq(kyber_set_clock(d->q, &clock), 0);
	for (i = 0; i < 1500; i++) {
		lone_request(d, &clock, REQ_OP_READ, i * 64,
			     2000000ull * read_pct / 100);
		lone_request(d, &clock, REQ_OP_WRITE, (1u << 20) + i * 64,
			     100000);
	}
	depth = kyber_domain_depth(d->q, KYBER_WRITE);
	ck_assert_uint_gt(kyber_timer_runs(d->q), 5);
	ck_assert_int_eq(kyber_set_clock(d->q, NULL), 0);
	tdev_free(d);
	return depth;
}

START_TEST(congestion_threshold)
{
	ck_assert_uint_eq(write_depth_after_reads_at(100), 128);
	ck_assert_uint_le(write_depth_after_reads_at(105), 32);
	ck_assert_uint_le(write_depth_after_reads_at(124), 32);
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
	tcase_add_test(tc, congestion_threshold);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(kyber_suite());
}
