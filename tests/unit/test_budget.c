/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Dispatch budgets (mq_ops get_budget/put_budget), as scsi-mq uses them
 * for cmd_per_lun: a request the device has no budget for stays in the
 * elevator or its software queue, never in the hctx dispatch list.
 *
 * The test driver counts budgets as scsi_dev_queue_ready counts
 * device_busy.  A request queue_rq gets without a budget (a core that did
 * not ask) is handled as scsi_queue_rq handled it before budgets: BUSY
 * when the device is at its limit, which parks it in the dispatch list.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "server/mq/blk-mq-internal.h"
#include "server/mq/elevator.h"
#include "tests/unit/helpers/tcheck.h"

struct bdev {
	struct mq_tag_set set;
	struct mq_queue *q;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int limit; /* cmd_per_lun */
	unsigned int busy;  /* budgets out, as sdev->device_busy */
	unsigned int restarts;
	unsigned int inflight, max_inflight;
	unsigned int max_dispatch_list;
	unsigned int calls, busy_returns;
	struct request *held[256];
	unsigned int nheld;
	unsigned int nr_bios_done;
};

static bool bdev_get_budget(struct mq_queue *q)
{
	struct bdev *d = q->queuedata;
	bool ok, idle;

	pthread_mutex_lock(&d->lock);
	ok = d->busy < d->limit;
	if (ok)
		d->busy++;
	else
		d->restarts++;
	idle = !d->inflight;
	pthread_mutex_unlock(&d->lock);
	/* Nothing of ours is in flight, so no completion will rerun us. */
	if (!ok && idle)
		mq_delay_run_hw_queues(q, MQ_BUDGET_DELAY_MS);
	return ok;
}

static void bdev_put_budget(struct mq_queue *q)
{
	struct bdev *d = q->queuedata;

	pthread_mutex_lock(&d->lock);
	d->busy--;
	pthread_mutex_unlock(&d->lock);
}

static unsigned int dispatch_list_len(struct mq_hw_ctx *hctx)
{
	struct request *rq;
	unsigned int n = 0;

	pthread_mutex_lock(&hctx->lock);
	TAILQ_FOREACH (rq, &hctx->dispatch, queuelist)
		n++;
	pthread_mutex_unlock(&hctx->lock);
	return n;
}

static unsigned int dispatch_lists_len(struct mq_queue *q)
{
	struct mq_hw_ctx *hctx;
	unsigned int i, n = 0;

	queue_for_each_hw_ctx (q, hctx, i)
		n += dispatch_list_len(hctx);
	return n;
}

static enum mq_qrc bdev_queue_rq(struct mq_hw_ctx *hctx,
				 const struct mq_queue_data *bd)
{
	struct bdev *d = hctx->queue->queuedata;
	unsigned int n = dispatch_lists_len(hctx->queue);

	pthread_mutex_lock(&d->lock);
	d->calls++;
	if (n > d->max_dispatch_list)
		d->max_dispatch_list = n;
	if (d->busy <= d->inflight) {
		/* Came without a budget: the pre-budget scsi_queue_rq. */
		if (d->busy >= d->limit) {
			d->busy_returns++;
			pthread_mutex_unlock(&d->lock);
			return MQ_QRC_BUSY;
		}
		d->busy++;
	}
	d->inflight++;
	if (d->inflight > d->max_inflight)
		d->max_inflight = d->inflight;
	/* Started before it is listed: the test may end it from then on. */
	mq_start_request(bd->rq);
	d->held[d->nheld++] = bd->rq;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	return MQ_QRC_OK;
}

static const struct mq_ops bdev_ops = {
	.queue_rq = bdev_queue_rq,
	.get_budget = bdev_get_budget,
	.put_budget = bdev_put_budget,
};

static struct bdev *bdev_new(unsigned int nr_hw, unsigned int limit)
{
	struct bdev *d = calloc(1, sizeof(*d));

	ck_assert_ptr_nonnull(d);
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->limit = limit;
	d->set.ops = &bdev_ops;
	d->set.nr_hw_queues = nr_hw;
	d->set.queue_depth = 32;
	d->set.flags = MQ_F_SHOULD_MERGE;
	ck_assert_int_eq(mq_alloc_tag_set(&d->set), 0);
	d->q = mq_init_queue(&d->set, 4, "budget");
	ck_assert_ptr_nonnull(d->q);
	d->q->queuedata = d;
	return d;
}

static void bdev_free(struct bdev *d)
{
	mq_cleanup_queue(d->q);
	mq_free_tag_set(&d->set);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* Wait (bounded) until at least n requests are held. */
static bool bdev_wait_held(struct bdev *d, unsigned int n)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	pthread_mutex_lock(&d->lock);
	while (d->nheld < n &&
	       pthread_cond_timedwait(&d->cond, &d->lock, &until) == 0)
		;
	ok = d->nheld >= n;
	pthread_mutex_unlock(&d->lock);
	return ok;
}

/*
 * Complete the oldest held request, give its budget back, and rerun the
 * queue if a dispatch went without one meanwhile (scsi_run_queue_async).
 * Returns the number of bios it carried.
 */
static unsigned int bdev_complete_one(struct bdev *d)
{
	struct request *rq;
	struct bio *bio;
	unsigned int n = 0;
	bool rerun;

	pthread_mutex_lock(&d->lock);
	ck_assert_uint_gt(d->nheld, 0);
	rq = d->held[0];
	memmove(&d->held[0], &d->held[1], (d->nheld - 1) * sizeof(d->held[0]));
	d->nheld--;
	d->inflight--;
	d->busy--;
	rerun = d->restarts != 0;
	d->restarts = 0;
	pthread_mutex_unlock(&d->lock);
	rq_for_each_bio (bio, rq)
		n++;
	mq_end_request(rq, 0);
	if (rerun)
		mq_run_hw_queues(d->q, true);
	return n;
}

struct bbio {
	struct bio bio;
	struct bdev *d;
	bool done;
	char buf[4096];
};

static void bbio_end_io(struct bio *bio)
{
	struct bbio *b = bio->bi_private;

	pthread_mutex_lock(&b->d->lock);
	b->done = true;
	b->d->nr_bios_done++;
	pthread_cond_broadcast(&b->d->cond);
	pthread_mutex_unlock(&b->d->lock);
}

static void bbio_submit(struct bdev *d, struct bbio *b, enum req_op op,
			uint64_t sector, unsigned int cpu)
{
	bio_init(&b->bio, op, sector, sizeof(b->buf), b->buf);
	b->bio.bi_end_io = bbio_end_io;
	b->bio.bi_private = b;
	b->d = d;
	b->done = false;
	mq_submit_bio(mq_get_ctx(d->q, cpu), &b->bio);
}

static bool bdev_wait_bios(struct bdev *d, unsigned int n)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	pthread_mutex_lock(&d->lock);
	while (d->nr_bios_done < n &&
	       pthread_cond_timedwait(&d->cond, &d->lock, &until) == 0)
		;
	ok = d->nr_bios_done >= n;
	pthread_mutex_unlock(&d->lock);
	return ok;
}

/*
 * cmd_per_lun 2 under mq-deadline: two reads take the budget; eight
 * sequential writes then wait in the scheduler (none in the dispatch
 * list), where they merge into one request.  Without the budget check
 * the first write is taken off the scheduler, refused, and parked in the
 * dispatch list, out of reach of the merges that follow.
 */
START_TEST(test_budget_holds_requests_in_scheduler)
{
	struct bdev *d = bdev_new(1, 2);
	struct bbio rd[2], wr[8];
	unsigned int i, bios;

	ck_assert_int_eq(elevator_switch(d->q, elevator_find("mq-deadline")),
			 0);
	bbio_submit(d, &rd[0], REQ_OP_READ, 0, 0);
	bbio_submit(d, &rd[1], REQ_OP_READ, 10000, 0);
	ck_assert(bdev_wait_held(d, 2));
	for (i = 0; i < 8; i++)
		bbio_submit(d, &wr[i], REQ_OP_WRITE, 20000 + i * 8, 0);

	/* Submission ran the queue inline: the state is settled. */
	ck_assert_uint_eq(dispatch_lists_len(d->q), 0);
	ck_assert(d->q->elevator->type->ops.has_work(d->q->queue_hw_ctx[0]));
	pthread_mutex_lock(&d->lock);
	ck_assert_uint_eq(d->nheld, 2);
	ck_assert_uint_eq(d->busy_returns, 0);
	pthread_mutex_unlock(&d->lock);

	/* Each completion lends its budget to the next request. */
	ck_assert_uint_eq(bdev_complete_one(d), 1);
	ck_assert(bdev_wait_held(d, 2));
	ck_assert_uint_eq(bdev_complete_one(d), 1);
	/* The eight writes went out as one request. */
	ck_assert_uint_eq(bdev_complete_one(d), 8);
	ck_assert(bdev_wait_bios(d, 10));
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(wr[i].bio.bi_status, 0);

	pthread_mutex_lock(&d->lock);
	bios = d->calls;
	ck_assert_uint_le(d->max_inflight, 2);
	ck_assert_uint_eq(d->max_dispatch_list, 0);
	ck_assert_uint_eq(d->busy, 0);
	pthread_mutex_unlock(&d->lock);
	ck_assert_uint_eq(bios, 3);
	bdev_free(d);
}
END_TEST

/*
 * The budget is the device's, shared by its hardware queues: four hctxs
 * fed from four CPUs never have more than cmd_per_lun in flight between
 * them, the rest wait in their software queues (none), and completions
 * let every one of them through.  Loop 0: none; 1: mq-deadline.
 */
START_TEST(test_budget_shared_by_hw_queues)
{
	struct bdev *d = bdev_new(4, 3);
	struct bbio b[24];
	unsigned int i, done = 0;

	if (_i == 1)
		ck_assert_int_eq(
			elevator_switch(d->q, elevator_find("mq-deadline")), 0);
	/* Far apart, so nothing merges: 24 requests. */
	for (i = 0; i < 24; i++)
		bbio_submit(d, &b[i], i % 2 ? REQ_OP_READ : REQ_OP_WRITE,
			    (uint64_t)i * 1000, i % 4);
	ck_assert(bdev_wait_held(d, 3));
	ck_assert_uint_eq(dispatch_lists_len(d->q), 0);
	while (done < 24) {
		ck_assert(bdev_wait_held(d, 1));
		done += bdev_complete_one(d);
		pthread_mutex_lock(&d->lock);
		ck_assert_uint_le(d->inflight, 3);
		pthread_mutex_unlock(&d->lock);
	}
	ck_assert(bdev_wait_bios(d, 24));
	pthread_mutex_lock(&d->lock);
	ck_assert_uint_eq(d->max_inflight, 3);
	ck_assert_uint_eq(d->max_dispatch_list, 0);
	ck_assert_uint_eq(d->busy_returns, 0);
	ck_assert_uint_eq(d->busy, 0);
	pthread_mutex_unlock(&d->lock);
	bdev_free(d);
}
END_TEST

/* A FIFO elevator without has_work: dispatch cannot ask it first. */
struct nohw_data {
	pthread_mutex_t lock;
	struct rq_list list;
};

static int nohw_init_sched(struct mq_queue *q, struct elevator_type *e)
{
	struct nohw_data *nd = calloc(1, sizeof(*nd));

	if (!nd)
		return ENOMEM;
	pthread_mutex_init(&nd->lock, NULL);
	TAILQ_INIT(&nd->list);
	q->elevator->elevator_data = nd;
	return 0;
}

static void nohw_exit_sched(struct elevator_queue *eq)
{
	struct nohw_data *nd = eq->elevator_data;

	pthread_mutex_destroy(&nd->lock);
	free(nd);
}

static void nohw_insert(struct mq_hw_ctx *hctx, struct rq_list *list,
			bool at_head)
{
	struct nohw_data *nd = hctx->queue->elevator->elevator_data;
	struct request *rq;

	pthread_mutex_lock(&nd->lock);
	while ((rq = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, rq, queuelist);
		TAILQ_INSERT_TAIL(&nd->list, rq, queuelist);
	}
	pthread_mutex_unlock(&nd->lock);
}

static struct request *nohw_dispatch(struct mq_hw_ctx *hctx)
{
	struct nohw_data *nd = hctx->queue->elevator->elevator_data;
	struct request *rq;

	pthread_mutex_lock(&nd->lock);
	rq = TAILQ_FIRST(&nd->list);
	if (rq)
		TAILQ_REMOVE(&nd->list, rq, queuelist);
	pthread_mutex_unlock(&nd->lock);
	return rq;
}

static const struct elevator_type nohw_elv = {
	.elevator_name = "test-no-has-work",
	.ops =
		{
			.init_sched = nohw_init_sched,
			.exit_sched = nohw_exit_sched,
			.insert_requests = nohw_insert,
			.dispatch_request = nohw_dispatch,
		},
};

/* Whether every budget is back within 10 s. */
static bool budgets_returned(struct bdev *d)
{
	uint64_t t0 = mq_now_ns();
	bool back;

	do {
		pthread_mutex_lock(&d->lock);
		back = d->busy == 0;
		pthread_mutex_unlock(&d->lock);
		if (!back)
			sched_yield();
	} while (!back && mq_now_ns() - t0 < 10000000000ull);
	return back;
}

/*
 * An elevator without has_work may have work, as Linux assumes: with a
 * budget of 1, three reads still go out one after another.
 */
START_TEST(test_budget_elevator_without_has_work)
{
	struct bdev *d = bdev_new(1, 1);
	struct bbio b[3];
	unsigned int i;

	ck_assert_int_eq(elevator_switch(d->q, &nohw_elv), 0);
	for (i = 0; i < 3; i++)
		bbio_submit(d, &b[i], REQ_OP_READ, i * 1000, 0);
	for (i = 0; i < 3; i++) {
		ck_assert(bdev_wait_held(d, 1));
		ck_assert_uint_eq(bdev_complete_one(d), 1);
	}
	ck_assert(bdev_wait_bios(d, 3));
	pthread_mutex_lock(&d->lock);
	ck_assert_uint_eq(d->max_inflight, 1);
	pthread_mutex_unlock(&d->lock);
	/*
	 * A queue run that took a budget and found the elevator empty puts
	 * it back just after: wait for that, bounded.
	 */
	ck_assert_msg(budgets_returned(d), "a budget was never put back");
	bdev_free(d);
}
END_TEST

/* get_budget without put_budget (or the reverse) is refused. */
static const struct mq_ops half_ops = {
	.queue_rq = bdev_queue_rq,
	.get_budget = bdev_get_budget,
};

START_TEST(test_budget_ops_paired)
{
	struct mq_tag_set set = {
		.ops = &half_ops,
		.nr_hw_queues = 1,
		.queue_depth = 4,
	};

	ck_assert_int_eq(mq_alloc_tag_set(&set), EINVAL);
}
END_TEST

static Suite *budget_suite(void)
{
	Suite *s = suite_create("budget");
	TCase *tc = tcase_create("budget");

	tcase_add_test(tc, test_budget_holds_requests_in_scheduler);
	tcase_add_loop_test(tc, test_budget_shared_by_hw_queues, 0, 2);
	tcase_add_test(tc, test_budget_elevator_without_has_work);
	tcase_add_test(tc, test_budget_ops_paired);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(budget_suite());
}
