/* SPDX-License-Identifier: GPL-2.0 */
/* Unit tests for the request core (server/mq), through the tdev driver. */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>

#include "helpers/tdev.h"
#include "server/mq/blk-trace.h"
#include "server/mq/blk-mq-internal.h"
#include "server/mq/elevator.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"

/* --- tags ----------------------------------------------------------- */

START_TEST(test_tag_exhaustion_and_reserved)
{
	/* 4 tags, 1 reserved: 3 normal requests may be in flight. */
	struct tdev *d = tdev_new(1, 4, 1, 0, tdev_hold);
	struct tbio tb[5];
	struct request *rq, *rq2;
	int i;

	for (i = 0; i < 5; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	tdev_wait_held(d, 3);
	ck_assert_uint_eq(tdev_calls(d), 3);
	ck_assert_uint_eq(tdev_nheld(d), 3);

	/* Normal pool is empty; the reserved tag is still there, once. */
	ck_assert_ptr_null(
		mq_alloc_request(d->q, REQ_OP_DRV_IN, MQ_REQ_NOWAIT));
	rq = mq_alloc_request(d->q, REQ_OP_DRV_IN,
			      MQ_REQ_NOWAIT | MQ_REQ_RESERVED);
	ck_assert_ptr_nonnull(rq);
	ck_assert(rq->rq_flags & RQF_RESERVED);
	ck_assert_int_eq(rq->tag, 0);
	rq2 = mq_alloc_request(d->q, REQ_OP_DRV_IN,
			       MQ_REQ_NOWAIT | MQ_REQ_RESERVED);
	ck_assert_ptr_null(rq2);
	mq_free_request(rq);

	/* Each completion hands its tag to a waiting bio. */
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb[0]), 0);
	tdev_wait_held(d, 3);
	ck_assert_uint_eq(tdev_calls(d), 4);
	for (i = 1; i < 5; i++) {
		tdev_wait_held(d, 1);
		ck_assert(tdev_complete_held(d, 0));
	}
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(tdev_calls(d), 5);
	tdev_free(d);
}
END_TEST

/*
 * A blocking mq_alloc_request (no NOWAIT) that waits, even for the
 * reserved tag, must not keep freed normal tags from a bio that waits for
 * one: the bio gets the next freed tag, before a bio submitted later.
 */
struct allocator {
	struct mq_queue *q;
	unsigned int flags;
	struct request *rq;
	atomic_bool done;
};

static void *alloc_thread(void *arg)
{
	struct allocator *a = arg;

	a->rq = mq_alloc_request(a->q, REQ_OP_DRV_IN, a->flags);
	atomic_store(&a->done, true);
	return NULL;
}

/* Is a blocking allocator of hctx's tags asleep yet?  Bounded poll. */
static bool wait_tag_sleeper(struct mq_tags *tags, bool reserved)
{
	time_t t0 = time(NULL);

	while (time(NULL) - t0 < 10) {
		bool asleep;
		struct bio *bio;

		pthread_mutex_lock(&tags->lock);
		if (reserved) {
			asleep = tags->nr_reserved_waiters > 0;
		} else {
			for (asleep = false, bio = tags->wait_head; bio;
			     bio = bio->bi_next)
				asleep |= bio->bi_op == REQ_OP_DRV_IN;
		}
		pthread_mutex_unlock(&tags->lock);
		if (asleep)
			return true;
		sched_yield();
	}
	return false;
}

START_TEST(test_blocking_alloc_keeps_bio_fifo)
{
	/* 4 tags, 1 reserved: 3 normal. */
	struct tdev *d = tdev_new(1, 4, 1, 0, tdev_hold);
	struct mq_tags *tags = d->q->queue_hw_ctx[0]->tags;
	struct allocator ar = {.q = d->q, .flags = MQ_REQ_RESERVED};
	struct allocator an = {.q = d->q};
	struct tbio tb[6];
	struct request *res;
	pthread_t tr, tn;
	int i;

	for (i = 0; i < 3; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	tdev_wait_held(d, 3);
	/* The reserved tag is taken: a blocking reserved allocation waits. */
	res = mq_alloc_request(d->q, REQ_OP_DRV_IN,
			       MQ_REQ_RESERVED | MQ_REQ_NOWAIT);
	ck_assert_ptr_nonnull(res);
	ck_assert_int_eq(pthread_create(&tr, NULL, alloc_thread, &ar), 0);
	ck_assert(wait_tag_sleeper(tags, true));
	/* A bio waits for a normal tag, beside the sleeping allocator. */
	tbio_init(&tb[3], d, REQ_OP_READ, 100 * 8, 4096);
	tbio_submit(d, &tb[3], 0);

	/* A normal tag is freed: the waiting bio gets it. */
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb[0]), 0);
	ck_assert_msg(tdev_wait_held_for(d, 3, 10),
		      "the waiting bio was stranded: %u held", tdev_nheld(d));
	/* and it went before one submitted after the free. */
	tbio_init(&tb[4], d, REQ_OP_READ, 200 * 8, 4096);
	tbio_submit(d, &tb[4], 0);
	ck_assert_uint_eq(d->log_sector[3], 100 * 8);

	/*
	 * A blocking allocator of a normal tag waits in the same FIFO: it
	 * sleeps behind tb[4] and is served after it, before tb[5].
	 */
	ck_assert_int_eq(pthread_create(&tn, NULL, alloc_thread, &an), 0);
	ck_assert(wait_tag_sleeper(tags, false));
	tbio_init(&tb[5], d, REQ_OP_READ, 300 * 8, 4096);
	tbio_submit(d, &tb[5], 0);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert(tdev_wait_held_for(d, 3, 10));
	ck_assert_uint_eq(d->log_sector[4], 200 * 8);
	ck_assert(!atomic_load(&an.done));
	ck_assert(tdev_complete_held(d, 0));
	pthread_join(tn, NULL);
	ck_assert_ptr_nonnull(an.rq);
	ck_assert_uint_eq(tdev_nheld(d), 2);
	mq_free_request(an.rq);
	ck_assert(tdev_wait_held_for(d, 3, 10));
	ck_assert_uint_eq(d->log_sector[5], 300 * 8);

	/* The reserved allocator gets the reserved tag when it is freed. */
	ck_assert(!atomic_load(&ar.done));
	mq_free_request(res);
	pthread_join(tr, NULL);
	ck_assert_ptr_nonnull(ar.rq);
	ck_assert(ar.rq->rq_flags & RQF_RESERVED);
	mq_free_request(ar.rq);
	while (tdev_complete_held(d, 0))
		;
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	tdev_free(d);
}
END_TEST

/* --- DEV_RESOURCE restart on a shared tag set ------------------------ */

/*
 * Two queues share one tag set; the "device" takes at most 2 commands at
 * once across both.  Above that queue_rq says DEV_RESOURCE, and only the
 * core's restart on free gets the refused queue going again.
 */
struct budget {
	atomic_int inflight;
	int max;
	atomic_uint refused;
};

static enum mq_qrc budget_policy(struct tdev *d, struct request *rq)
{
	struct budget *b = d->priv;

	if (atomic_fetch_add(&b->inflight, 1) >= b->max) {
		atomic_fetch_sub(&b->inflight, 1);
		atomic_fetch_add(&b->refused, 1);
		return MQ_QRC_DEV_RESOURCE;
	}
	return tdev_hold(d, rq);
}

struct completer {
	struct tdev *d[2];
	struct budget *b;
	atomic_bool stop;
	atomic_uint completed;
};

static void *completer_thread(void *arg)
{
	struct completer *c = arg;

	while (!atomic_load(&c->stop)) {
		/*
		 * Nothing completes before the device has refused once: a
		 * completer that keeps up would otherwise never let the budget
		 * run out, and the restart would go untested.
		 */
		if (!atomic_load(&c->b->refused)) {
			sched_yield();
			continue;
		}
		for (int i = 0; i < 2; i++) {
			struct tdev *d = c->d[i];
			struct request *rq = NULL;

			pthread_mutex_lock(&d->lock);
			if (d->nheld) {
				rq = d->held[0];
				memmove(&d->held[0], &d->held[1],
					(d->nheld - 1) * sizeof(d->held[0]));
				d->nheld--;
			}
			pthread_mutex_unlock(&d->lock);
			if (rq) {
				atomic_fetch_sub(&c->b->inflight, 1);
				mq_end_request(rq, 0);
				atomic_fetch_add(&c->completed, 1);
			}
		}
	}
	return NULL;
}

START_TEST(test_dev_resource_restart_shared_set)
{
	struct budget b = {.max = 2};
	struct tdev *a = tdev_new(1, 8, 0, 0, budget_policy);
	struct mq_queue *q2;
	struct tdev *d2 = calloc(1, sizeof(*d2));
	struct completer c = {.b = &b};
	enum { N = 2000 };
	struct tbio *tb = calloc(2 * N, sizeof(*tb));
	pthread_t thr;
	int i;

	/* A second queue on a's tag set, with its own tdev state. */
	pthread_mutex_init(&d2->lock, NULL);
	pthread_cond_init(&d2->cond, NULL);
	d2->policy = budget_policy;
	d2->priv = &b;
	a->priv = &b;
	q2 = mq_init_queue(&a->set, 4, "tdev2");
	ck_assert_ptr_nonnull(q2);
	q2->queuedata = d2;
	d2->q = q2;
	ck_assert(a->set.flags & MQ_F_TAG_SHARED);

	c.d[0] = a;
	c.d[1] = d2;
	pthread_create(&thr, NULL, completer_thread, &c);
	for (i = 0; i < N; i++) {
		tbio_init(&tb[2 * i], a, REQ_OP_READ, i * 8, 4096);
		tbio_submit(a, &tb[2 * i], i);
		tbio_init(&tb[2 * i + 1], d2, REQ_OP_READ, i * 8, 4096);
		tbio_submit(d2, &tb[2 * i + 1], i);
	}
	for (i = 0; i < 2 * N; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	atomic_store(&c.stop, true);
	pthread_join(thr, NULL);
	ck_assert_uint_eq(atomic_load(&c.completed), 2 * N);
	/* The budget really was hit, so restarts really happened. */
	ck_assert_uint_gt(
		atomic_load(&a->q->queue_hw_ctx[0]->stats.dev_resource) +
			atomic_load(&q2->queue_hw_ctx[0]->stats.dev_resource),
		0);
	mq_cleanup_queue(q2);
	free(d2);
	tdev_free(a);
	free(tb);
}
END_TEST

/*
 * Fair share of a shared tag set, as hctx_may_queue: a greedy queue that
 * holds every tag, and a light one that starts later.  Each freed tag goes
 * to the light queue until both hold half the depth, though the greedy
 * queue's bios waited first; then the greedy queue gets its half back.
 */
static struct tdev *tdev_share(struct tdev *a, const char *name)
{
	struct tdev *d = calloc(1, sizeof(*d));

	ck_assert_ptr_nonnull(d);
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->policy = a->policy;
	d->q = mq_init_queue(&a->set, 4, name);
	ck_assert_ptr_nonnull(d->q);
	d->q->queuedata = d;
	return d;
}

static void tdev_unshare(struct tdev *d)
{
	mq_cleanup_queue(d->q);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static const char *const share_elevators[] = {"none", "mq-deadline"};

START_TEST(test_shared_set_fair_share)
{
	struct tdev *greedy = tdev_new(1, 8, 0, 0, tdev_hold);
	struct tdev *light = tdev_share(greedy, "light");
	struct tbio *tg = calloc(24, sizeof(*tg)), tl[4];
	const struct elevator_type *et = NULL;
	int i;

	ck_assert_ptr_nonnull(tg);
	ck_assert(greedy->set.flags & MQ_F_TAG_SHARED);
	/*
	 * Without a scheduler a bio waits for its driver tag in the tag
	 * FIFO; with one, its request waits for one at dispatch.
	 */
	if (strcmp(share_elevators[_i], "none")) {
		et = elevator_find(share_elevators[_i]);
		ck_assert_ptr_nonnull(et);
	}
	ck_assert_int_eq(elevator_switch(greedy->q, et), 0);
	ck_assert_int_eq(elevator_switch(light->q, et), 0);
	/* Alone, the greedy queue may take the whole depth. */
	for (i = 0; i < 24; i++) {
		tbio_init(&tg[i], greedy, REQ_OP_READ, i * 8, 4096);
		tbio_submit(greedy, &tg[i], 0);
	}
	tdev_wait_held(greedy, 8);
	ck_assert_uint_eq(tdev_nheld(greedy), 8);

	/* The light queue arrives: its share is 4 of the 8. */
	for (i = 0; i < 4; i++) {
		tbio_init(&tl[i], light, REQ_OP_READ, i * 8, 4096);
		tbio_submit(light, &tl[i], 0);
	}
	for (i = 1; i <= 4; i++) {
		ck_assert(tdev_complete_held(greedy, 0));
		ck_assert_msg(tdev_wait_held_for(light, (unsigned int)i, 10),
			      "light queue holds %u after %d frees",
			      tdev_nheld(light), i);
	}
	ck_assert_uint_eq(tdev_nheld(greedy), 4);
	ck_assert_uint_eq(tdev_nheld(light), 4);
	ck_assert_uint_eq(atomic_load(&greedy->q->queue_hw_ctx[0]->nr_active),
			  4);
	ck_assert_uint_eq(atomic_load(&light->q->queue_hw_ctx[0]->nr_active),
			  4);

	/* Below its share again, the greedy queue gets the next one. */
	ck_assert(tdev_complete_held(greedy, 0));
	ck_assert(tdev_wait_held_for(greedy, 4, 10));
	ck_assert_uint_eq(tdev_nheld(light), 4);

	/* The light queue finishes and goes idle: greedy may fill the set. */
	while (tdev_complete_held(light, 0))
		;
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(tbio_wait(&tl[i]), 0);
	ck_assert(tdev_wait_held_for(greedy, 8, 10));
	while (tdev_nheld(greedy) || !atomic_load(&tg[23].done)) {
		if (!tdev_complete_held(greedy, 0))
			sched_yield();
	}
	for (i = 0; i < 24; i++)
		ck_assert_int_eq(tbio_wait(&tg[i]), 0);
	tdev_unshare(light);
	tdev_free(greedy);
	free(tg);
}
END_TEST

/* --- RESOURCE: rerun after a delay with nothing else happening -------- */

/*
 * The rerun after RESOURCE must be the delayed one: it runs from the hctx's
 * run work, and that work was armed MQ_RESOURCE_DELAY_MS after the refusal,
 * not for at once (kblockd never runs a work before its time).
 */
struct resource_seen {
	uint64_t refused_ns; /* just before queue_rq said RESOURCE */
	uint64_t armed_for;  /* when the work that reran us was due */
	uint64_t rerun_ns;   /* when it ran */
	pthread_t rerun_thread;
};

static enum mq_qrc resource_once(struct tdev *d, struct request *rq)
{
	struct resource_seen *seen = d->priv;

	if (tdev_calls(d) == 1) {
		seen->refused_ns = mq_now_ns();
		return MQ_QRC_RESOURCE;
	}
	seen->rerun_ns = mq_now_ns();
	seen->armed_for = rq->mq_hctx->run_work.when_ns;
	seen->rerun_thread = pthread_self();
	return tdev_complete(d, rq);
}

START_TEST(test_resource_delayed_rerun)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, resource_once);
	struct resource_seen seen = {0};
	struct tbio tb;

	d->priv = &seen;
	tbio_init(&tb, d, REQ_OP_WRITE, 0, 4096);
	tbio_submit(d, &tb, 0);
	/* Nothing is in flight to restart it: only the delayed run can. */
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 2);
	ck_assert_uint_eq(atomic_load(&d->q->queue_hw_ctx[0]->stats.resource),
			  1);
	/* The rerun came from the run work, on kblockd, not from us, */
	ck_assert(!pthread_equal(seen.rerun_thread, pthread_self()));
	/* and that work was armed for the delay after the refusal. */
	ck_assert_msg(seen.armed_for >= seen.refused_ns + MQ_RESOURCE_DELAY_MS *
								  1000000ull,
		      "rerun armed %lld ns after the refusal, not %u ms",
		      (long long)(seen.armed_for - seen.refused_ns),
		      MQ_RESOURCE_DELAY_MS);
	ck_assert_uint_ge(seen.rerun_ns, seen.armed_for);
	tdev_free(d);
}
END_TEST

/* --- kblockd: arming a work wakes the thread only when it must -------- */

struct counted_work {
	struct mq_delayed_work work;
	sem_t ran;
};

static void counted_work_fn(struct mq_delayed_work *work)
{
	sem_post(&container_of(work, struct counted_work, work)->ran);
}

/*
 * BFQ arms its idle slice on nearly every completion and disarms it on
 * the next request.  With a work due earlier already, arming one due later
 * must not wake the thread (a context switch per request); arming one due
 * sooner must, or it would run late.
 */
START_TEST(test_kblockd_wakes_only_for_earlier_work)
{
	struct mq_kblockd *kb = kblockd_create("test");
	struct counted_work far = {.work.fn = counted_work_fn};
	struct counted_work later = {.work.fn = counted_work_fn};
	struct counted_work now = {.work.fn = counted_work_fn};
	struct timespec until;
	uint64_t woken, wakes, sleep_until;
	int i;

	ck_assert_ptr_nonnull(kb);
	sem_init(&far.ran, 0, 0);
	sem_init(&later.ran, 0, 0);
	sem_init(&now.ran, 0, 0);
	kblockd_schedule(kb, &far.work, 600 * 1000000000ull);
	/* Until the thread sleeps until far is due. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	for (;;) {
		struct timespec t;

		kblockd_peek(kb, &woken, &sleep_until);
		if (sleep_until == far.work.when_ns)
			break;
		clock_gettime(CLOCK_REALTIME, &t);
		ck_assert_msg(t.tv_sec < until.tv_sec, "kblockd never slept");
		sched_yield();
	}
	for (i = 0; i < 1000; i++) {
		kblockd_schedule(kb, &later.work, 900 * 1000000000ull);
		kblockd_cancel(kb, &later.work);
	}
	kblockd_peek(kb, &wakes, &sleep_until);
	ck_assert_uint_eq(wakes, woken);

	kblockd_schedule(kb, &now.work, 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	ck_assert_int_eq(sem_timedwait(&now.ran, &until), 0);
	kblockd_peek(kb, &wakes, &sleep_until);
	ck_assert_uint_eq(wakes, woken + 1);
	ck_assert_int_ne(sem_trywait(&far.ran), 0);

	kblockd_cancel(kb, &far.work);
	kblockd_destroy(kb);
	sem_destroy(&far.ran);
	sem_destroy(&later.ran);
	sem_destroy(&now.ran);
}
END_TEST

/* --- the log: lines above the level never reach the sink -------------- */

static int lines_seen[MQ_LOG_DEBUG + 1];

static void count_lines(enum mq_log_level level, const char *msg)
{
	(void)msg;
	lines_seen[level]++;
}

/* Device models log every command at debug level: off, it must cost nothing. */
START_TEST(test_log_level_drops_lines)
{
	memset(lines_seen, 0, sizeof(lines_seen));
	mq_log_set_sink(count_lines);
	mq_log_set_level(MQ_LOG_WARN);
	pr_debug("hda: reading: block=%d", 8);
	pr_info("dropped");
	pr_warn("kept");
	pr_err("kept");
	ck_assert_int_eq(lines_seen[MQ_LOG_DEBUG], 0);
	ck_assert_int_eq(lines_seen[MQ_LOG_INFO], 0);
	ck_assert_int_eq(lines_seen[MQ_LOG_WARN], 1);
	ck_assert_int_eq(lines_seen[MQ_LOG_ERR], 1);
	/* The default lets everything through to the sink. */
	mq_log_set_level(MQ_LOG_DEBUG);
	pr_debug("hda: reading: block=%d", 16);
	ck_assert_int_eq(lines_seen[MQ_LOG_DEBUG], 1);
	/* -1: silent. */
	mq_log_set_level(-1);
	pr_err("dropped");
	ck_assert_int_eq(lines_seen[MQ_LOG_ERR], 1);
	mq_log_set_level(MQ_LOG_DEBUG);
	mq_log_set_sink(NULL);
}
END_TEST

/* BUSY with nothing in flight is also retried rather than lost. */
static enum mq_qrc busy_twice(struct tdev *d, struct request *rq)
{
	if (tdev_calls(d) <= 2)
		return MQ_QRC_BUSY;
	return tdev_complete(d, rq);
}

/*
 * A blktrace sink that keeps, for each of the first few 64-sector slots,
 * the letters blkparse would print for its request's issue, requeue and
 * completion.  Events may come on any thread, so what does not fit is
 * counted for the main thread to check rather than asserted here.
 */
#define LETTER_SLOTS 8

struct letter_trace {
	struct blk_trace bt;
	pthread_mutex_t lock;
	char letters[LETTER_SLOTS][16];
	unsigned int lost; /* events outside the slots or past their end */
};

static void letter_event(struct blk_trace *bt, const struct blk_trace_event *ev)
{
	struct letter_trace *lt = container_of(bt, struct letter_trace, bt);
	uint64_t slot = ev->sector / 64;
	char c;
	size_t n;

	if (ev->act == BLK_TRACE_ISSUE)
		c = 'D';
	else if (ev->act == BLK_TRACE_REQUEUE)
		c = 'R';
	else if (ev->act == BLK_TRACE_COMPLETE)
		c = 'C';
	else
		return;
	pthread_mutex_lock(&lt->lock);
	n = slot < LETTER_SLOTS ? strlen(lt->letters[slot]) : 0;
	if (slot >= LETTER_SLOTS || n + 1 >= sizeof(lt->letters[slot]))
		lt->lost++;
	else
		lt->letters[slot][n] = c;
	pthread_mutex_unlock(&lt->lock);
}

static void letter_trace_init(struct letter_trace *lt)
{
	memset(lt, 0, sizeof(*lt));
	lt->bt.event = letter_event;
	pthread_mutex_init(&lt->lock, NULL);
}

/* After blk_trace_set(q, NULL): no event is in the sink any more. */
static void letter_trace_fini(struct letter_trace *lt)
{
	ck_assert_uint_eq(lt->lost, 0);
	pthread_mutex_destroy(&lt->lock);
}

/*
 * A refused request is retried, and the trace says so as Linux's does for
 * a request queue_rq returned busy: issue, requeue, issue again.
 */
START_TEST(test_busy_retried)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, busy_twice);
	struct letter_trace lt;
	struct tbio tb;

	letter_trace_init(&lt);
	blk_trace_set(d->q, &lt.bt);
	tbio_init(&tb, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 3);
	ck_assert_uint_eq(atomic_load(&d->q->queue_hw_ctx[0]->stats.busy), 2);
	blk_trace_set(d->q, NULL);
	letter_trace_fini(&lt);
	ck_assert_str_eq(lt.letters[0], "DRDRDC");
	tdev_free(d);
}
END_TEST

static enum mq_qrc ioerr_policy(struct tdev *d, struct request *rq)
{
	return MQ_QRC_IOERR;
}

START_TEST(test_ioerr_fails_request)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, ioerr_policy);
	struct tbio tb;

	tbio_init(&tb, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), EIO);
	tdev_free(d);
}
END_TEST

/* --- stop and start --------------------------------------------------- */

START_TEST(test_stop_start)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, tdev_complete);
	struct mq_hw_ctx *hctx = d->q->queue_hw_ctx[0];
	struct tbio tb;

	mq_stop_hw_queue(hctx);
	ck_assert(mq_hctx_stopped(hctx));
	tbio_init(&tb, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &tb, 0);
	/* Dispatch would have been inline: a stopped queue never called. */
	ck_assert_uint_eq(tdev_calls(d), 0);
	ck_assert_int_eq(atomic_load(&tb.done), 0);
	mq_run_hw_queue(hctx, false);
	ck_assert_uint_eq(tdev_calls(d), 0);

	mq_start_stopped_hw_queues(d->q, false);
	ck_assert(!mq_hctx_stopped(hctx));
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 1);
	tdev_free(d);
}
END_TEST

/* --- requeue ------------------------------------------------------------ */

static enum mq_qrc requeue_first_kick(struct tdev *d, struct request *rq)
{
	mq_start_request(rq);
	if (tdev_calls(d) == 1) {
		mq_requeue_request(rq, true);
		return MQ_QRC_OK;
	}
	mq_end_request(rq, 0);
	return MQ_QRC_OK;
}

START_TEST(test_requeue_kick)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, requeue_first_kick);
	struct tbio tb;

	tbio_init(&tb, d, REQ_OP_READ, 16, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 2);
	ck_assert_uint_eq(d->log_sector[1], 16);
	ck_assert_uint_eq(atomic_load(&d->q->queue_hw_ctx[0]->stats.requeued),
			  1);
	tdev_free(d);
}
END_TEST

static enum mq_qrc requeue_first_nokick(struct tdev *d, struct request *rq)
{
	mq_start_request(rq);
	if (tdev_calls(d) == 1) {
		mq_requeue_request(rq, false);
		return MQ_QRC_OK;
	}
	mq_end_request(rq, 0);
	return MQ_QRC_OK;
}

START_TEST(test_requeue_delayed_kick)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, requeue_first_nokick);
	struct tbio tb;

	tbio_init(&tb, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &tb, 0);
	/* Without a kick the request stays on the requeue list. */
	ck_assert_uint_eq(tdev_calls(d), 1);
	pthread_mutex_lock(&d->q->requeue_lock);
	ck_assert(!TAILQ_EMPTY(&d->q->requeue_list));
	pthread_mutex_unlock(&d->q->requeue_lock);
	ck_assert_int_eq(atomic_load(&tb.done), 0);

	mq_delay_kick_requeue_list(d->q, 5);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 2);
	tdev_free(d);
}
END_TEST

/* --- freeze and quiesce ---------------------------------------------- */

struct freezer {
	struct mq_queue *q;
	atomic_bool returned;
};

static void *freeze_thread(void *arg)
{
	struct freezer *f = arg;

	mq_freeze_queue(f->q);
	atomic_store(&f->returned, true);
	return NULL;
}

START_TEST(test_freeze_waits_for_inflight)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, tdev_hold);
	struct freezer f = {.q = d->q};
	struct tbio tb, late;
	pthread_t thr;

	tbio_init(&tb, d, REQ_OP_WRITE, 0, 4096);
	tbio_submit(d, &tb, 0);
	tdev_wait_held(d, 1);

	pthread_create(&thr, NULL, freeze_thread, &f);
	/* Wait for the freezer to mark the queue; it cannot return yet. */
	while (!atomic_load(&d->q->frozen))
		sched_yield();
	ck_assert(!atomic_load(&f.returned));

	/* A bio arriving now is held, not dispatched. */
	tbio_init(&late, d, REQ_OP_WRITE, 64, 4096);
	tbio_submit(d, &late, 1);
	ck_assert_uint_eq(tdev_calls(d), 1);

	ck_assert(tdev_complete_held(d, 0));
	pthread_join(thr, NULL);
	ck_assert(atomic_load(&f.returned));
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 1);

	mq_unfreeze_queue(d->q);
	tdev_wait_held(d, 1);
	ck_assert_uint_eq(tdev_calls(d), 2);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&late), 0);
	tdev_free(d);
}
END_TEST

START_TEST(test_quiesce_holds_dispatch)
{
	struct tdev *d = tdev_new(2, 4, 0, 0, tdev_complete);
	struct tbio tb[2];

	mq_quiesce_queue(d->q);
	tbio_init(&tb[0], d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &tb[0], 0);
	tbio_init(&tb[1], d, REQ_OP_READ, 8, 4096);
	tbio_submit(d, &tb[1], 1);
	mq_run_hw_queues(d->q, false);
	ck_assert_uint_eq(tdev_calls(d), 0);
	mq_unquiesce_queue(d->q);
	ck_assert_int_eq(tbio_wait(&tb[0]), 0);
	ck_assert_int_eq(tbio_wait(&tb[1]), 0);
	ck_assert_uint_eq(tdev_calls(d), 2);
	tdev_free(d);
}
END_TEST

/* --- partial completion ------------------------------------------------ */

START_TEST(test_partial_completion)
{
	struct tdev *d = tdev_new(1, 4, 0, MQ_F_SHOULD_MERGE, tdev_hold);
	struct tbio a, b;
	struct request *rq;

	mq_stop_hw_queues(d->q);
	tbio_init(&a, d, REQ_OP_READ, 0, 4096);
	tbio_init(&b, d, REQ_OP_READ, 8, 4096);
	tbio_submit(d, &a, 0);
	tbio_submit(d, &b, 0);
	mq_start_hw_queues(d->q);
	tdev_wait_held(d, 1);
	rq = d->held[0];
	ck_assert_uint_eq(blk_rq_bytes(rq), 8192);

	/* Half of the first bio: nothing completes yet. */
	ck_assert(mq_update_request(rq, 0, 2048));
	ck_assert_int_eq(atomic_load(&a.done), 0);
	ck_assert_uint_eq(blk_rq_pos(rq), 4);
	/* The rest of the first bio completes it alone. */
	ck_assert(mq_update_request(rq, 0, 2048));
	ck_assert_int_eq(atomic_load(&a.done), 1);
	ck_assert_int_eq(atomic_load(&b.done), 0);
	ck_assert_uint_eq(blk_rq_pos(rq), 8);
	/* The last chunk, then __mq_end_request frees it. */
	ck_assert(!mq_update_request(rq, 0, 4096));
	d->nheld = 0;
	__mq_end_request(rq, 0);
	ck_assert_int_eq(tbio_wait(&b), 0);
	ck_assert_int_eq(a.bio.bi_status, 0);
	tdev_free(d);
}
END_TEST

/* --- merging ------------------------------------------------------------ */

START_TEST(test_merge_adjacent)
{
	struct tdev *d = tdev_new(1, 8, 0, MQ_F_SHOULD_MERGE, tdev_complete);
	struct tbio tb[6];
	int i;

	mq_stop_hw_queues(d->q);
	/* Four adjacent writes: back merges, then a front merge. */
	tbio_init(&tb[0], d, REQ_OP_WRITE, 8, 4096);
	tbio_init(&tb[1], d, REQ_OP_WRITE, 16, 4096);
	tbio_init(&tb[2], d, REQ_OP_WRITE, 24, 4096);
	tbio_init(&tb[3], d, REQ_OP_WRITE, 0, 4096);
	/* A flush is never merged; a read is not merged into writes. */
	tbio_init(&tb[4], d, REQ_OP_FLUSH, 0, 0);
	tbio_init(&tb[5], d, REQ_OP_READ, 32, 4096);
	d->q->limits.write_cache = true;
	for (i = 0; i < 6; i++)
		tbio_submit(d, &tb[i], 0);
	mq_start_hw_queues(d->q);
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(tdev_calls(d), 3);
	ck_assert_int_eq(d->log_op[0], REQ_OP_WRITE);
	ck_assert_uint_eq(d->log_bios[0], 4);
	ck_assert_uint_eq(d->log_sector[0], 0);
	ck_assert_int_eq(d->log_op[1], REQ_OP_FLUSH);
	ck_assert_uint_eq(d->log_bios[1], 1);
	ck_assert_int_eq(d->log_op[2], REQ_OP_READ);
	ck_assert_uint_eq(atomic_load(&d->q->queue_hw_ctx[0]->stats.merged), 3);
	ck_assert_uint_eq(atomic_load(&d->q->stats.merges[STAT_WRITE]), 3);
	tdev_free(d);
}
END_TEST

/*
 * A minimal elevator that keeps its requests in one list sorted by sector
 * and leaves merging to the core, to see the hooks the core calls.
 */
struct sorted_elv {
	pthread_mutex_t lock;
	struct rq_list list;
	unsigned int queued;
	unsigned int requests_merged;
	struct request *merged_away;
	unsigned int finished;
	unsigned int finished_empty; /* freed without bios */
};

static int sorted_init_hctx(struct mq_hw_ctx *hctx, unsigned int idx)
{
	struct sorted_elv *se = calloc(1, sizeof(*se));

	(void)idx;
	if (!se)
		return ENOMEM;
	pthread_mutex_init(&se->lock, NULL);
	TAILQ_INIT(&se->list);
	hctx->sched_data = se;
	return 0;
}

/* The test reads the counters before switching away. */
static void sorted_exit_hctx(struct mq_hw_ctx *hctx, unsigned int idx)
{
	(void)idx;
	hctx->sched_data = NULL;
}

static void sorted_insert(struct mq_hw_ctx *hctx, struct rq_list *list,
			  bool at_head)
{
	struct sorted_elv *se = hctx->sched_data;
	struct request *rq, *pos;

	(void)at_head;
	pthread_mutex_lock(&se->lock);
	while ((rq = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, rq, queuelist);
		TAILQ_FOREACH (pos, &se->list, queuelist)
			if (blk_rq_pos(pos) > blk_rq_pos(rq))
				break;
		if (pos)
			TAILQ_INSERT_BEFORE(pos, rq, queuelist);
		else
			TAILQ_INSERT_TAIL(&se->list, rq, queuelist);
		se->queued++;
		if (rq_mergeable(rq)) {
			elv_rqhash_add(hctx, rq);
			if (!hctx->merge.last_merge)
				hctx->merge.last_merge = rq;
		}
	}
	pthread_mutex_unlock(&se->lock);
}

static void sorted_remove(struct mq_hw_ctx *hctx, struct request *rq)
{
	struct sorted_elv *se = hctx->sched_data;

	TAILQ_REMOVE(&se->list, rq, queuelist);
	se->queued--;
	elv_rqhash_del(hctx, rq);
}

static struct request *sorted_dispatch(struct mq_hw_ctx *hctx)
{
	struct sorted_elv *se = hctx->sched_data;
	struct request *rq;

	pthread_mutex_lock(&se->lock);
	rq = TAILQ_FIRST(&se->list);
	if (rq)
		sorted_remove(hctx, rq);
	pthread_mutex_unlock(&se->lock);
	return rq;
}

static bool sorted_has_work(struct mq_hw_ctx *hctx)
{
	struct sorted_elv *se = hctx->sched_data;
	bool ret;

	pthread_mutex_lock(&se->lock);
	ret = !TAILQ_EMPTY(&se->list);
	pthread_mutex_unlock(&se->lock);
	return ret;
}

static bool sorted_bio_merge(struct mq_hw_ctx *hctx, struct bio *bio)
{
	struct sorted_elv *se = hctx->sched_data;
	struct request *free = NULL;
	bool ret;

	pthread_mutex_lock(&se->lock);
	ret = mq_sched_try_merge(hctx, bio, &free);
	pthread_mutex_unlock(&se->lock);
	if (free)
		mq_free_request(free);
	return ret;
}

static struct request *sorted_next(struct mq_queue *q, struct request *rq)
{
	(void)q;
	return TAILQ_NEXT(rq, queuelist);
}

static struct request *sorted_former(struct mq_queue *q, struct request *rq)
{
	(void)q;
	return TAILQ_PREV(rq, rq_list, queuelist);
}

static void sorted_requests_merged(struct mq_queue *q, struct request *rq,
				   struct request *next)
{
	struct sorted_elv *se = rq->mq_hctx->sched_data;

	(void)q;
	se->requests_merged++;
	se->merged_away = next;
	sorted_remove(rq->mq_hctx, next);
}

static void sorted_finish(struct request *rq)
{
	struct sorted_elv *se = rq->mq_hctx->sched_data;

	se->finished++;
	if (!rq->bio && rq->op == REQ_OP_WRITE)
		se->finished_empty++;
}

static void sorted_prepare(struct request *rq)
{
	(void)rq;
}

static const struct elevator_type sorted_elv_type = {
	.elevator_name = "test-sorted",
	.ops =
		{
			.init_hctx = sorted_init_hctx,
			.exit_hctx = sorted_exit_hctx,
			.bio_merge = sorted_bio_merge,
			.requests_merged = sorted_requests_merged,
			.next_request = sorted_next,
			.former_request = sorted_former,
			.prepare_request = sorted_prepare,
			.finish_request = sorted_finish,
			.insert_requests = sorted_insert,
			.dispatch_request = sorted_dispatch,
			.has_work = sorted_has_work,
		},
};

/*
 * Any elevator gets request merging from the core: a bio that closes the
 * gap between two queued requests joins the first, which absorbs the
 * second; the elevator is told (requests_merged) and the emptied request
 * is freed, so its books balance after the drain.
 */
START_TEST(test_core_request_merge)
{
	struct tdev *d = tdev_new(1, 8, 0, MQ_F_SHOULD_MERGE, tdev_complete);
	static const uint64_t sectors[3] = {0, 16, 8};
	struct sorted_elv *se;
	struct request *second;
	struct tbio tb[3];
	unsigned int i;

	ck_assert_int_eq(elevator_switch(d->q, &sorted_elv_type), 0);
	se = d->q->queue_hw_ctx[0]->sched_data;
	mq_stop_hw_queues(d->q);
	for (i = 0; i < 3; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, sectors[i], 4096);
		tbio_submit(d, &tb[i], 0);
	}
	pthread_mutex_lock(&se->lock);
	second = TAILQ_LAST(&se->list, rq_list);
	ck_assert_uint_eq(se->requests_merged, 1);
	ck_assert_uint_eq(se->queued, 1);
	ck_assert_uint_eq(se->finished_empty, 1);
	pthread_mutex_unlock(&se->lock);
	ck_assert_ptr_eq(second, TAILQ_FIRST(&se->list));
	ck_assert_ptr_ne(se->merged_away, second);
	ck_assert_uint_eq(blk_rq_bytes(second), 3 * 4096);

	mq_start_hw_queues(d->q);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(tdev_calls(d), 1);
	ck_assert_uint_eq(d->log_bios[0], 3);
	mq_freeze_queue(d->q);
	mq_unfreeze_queue(d->q);
	ck_assert_uint_eq(se->queued, 0);
	ck_assert_uint_eq(se->finished, 2);
	ck_assert_ptr_null(d->q->queue_hw_ctx[0]->merge.last_merge);
	ck_assert_int_eq(elevator_switch(d->q, NULL), 0);
	pthread_mutex_destroy(&se->lock);
	free(se);
	tdev_free(d);
}
END_TEST

/*
 * Writes at 0, 16 and then 8 (4 KiB each) through the sorted elevator,
 * the last with op and flags given, with one limit changed: how many
 * requests reach the driver.
 */
enum merge_case { MC_NONE, MC_MAX_SECTORS, MC_MAX_SEGMENTS, MC_CHUNK };

static unsigned int gap_fill(enum merge_case mc, enum req_op op,
			     unsigned int flags)
{
	struct tdev *d = tdev_new(1, 8, 0, MQ_F_SHOULD_MERGE, tdev_complete);
	static const uint64_t sectors[3] = {0, 16, 8};
	struct sorted_elv *se;
	struct tbio tb[3];
	unsigned int i, calls;

	if (mc == MC_MAX_SECTORS)
		d->q->limits.max_sectors = 16;
	else if (mc == MC_MAX_SEGMENTS)
		d->q->limits.max_segments = 2;
	else if (mc == MC_CHUNK)
		d->q->limits.chunk_sectors = 16;
	/* A device with a cache and native FUA keeps the flag. */
	d->q->limits.write_cache = d->q->limits.fua = true;
	ck_assert_int_eq(elevator_switch(d->q, &sorted_elv_type), 0);
	se = d->q->queue_hw_ctx[0]->sched_data;
	mq_stop_hw_queues(d->q);
	for (i = 0; i < 3; i++) {
		tbio_init(&tb[i], d, i == 2 ? op : REQ_OP_WRITE, sectors[i],
			  4096);
		if (i == 2)
			tb[i].bio.bi_flags = flags;
		tbio_submit(d, &tb[i], 0);
	}
	mq_start_hw_queues(d->q);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	calls = tdev_calls(d);
	mq_freeze_queue(d->q);
	mq_unfreeze_queue(d->q);
	ck_assert_uint_eq(se->queued, 0);
	/* Every request made was freed, merged away or not. */
	ck_assert_uint_eq(se->finished, calls + se->requests_merged);
	ck_assert_int_eq(elevator_switch(d->q, NULL), 0);
	pthread_mutex_destroy(&se->lock);
	free(se);
	tdev_free(d);
	return calls;
}

/*
 * Request merges obey the limits and rules bio merges do, as Linux's
 * attempt_merge: max_sectors, max_segments, chunk_sectors, op, FUA.
 */
START_TEST(test_core_request_merge_rules)
{
	ck_assert_uint_eq(gap_fill(MC_NONE, REQ_OP_WRITE, 0), 1);
	/* The gap is filled, but the two halves would be too big. */
	ck_assert_uint_eq(gap_fill(MC_MAX_SECTORS, REQ_OP_WRITE, 0), 2);
	ck_assert_uint_eq(gap_fill(MC_MAX_SEGMENTS, REQ_OP_WRITE, 0), 2);
	/* Never across a chunk (zone) boundary at sector 16. */
	ck_assert_uint_eq(gap_fill(MC_CHUNK, REQ_OP_WRITE, 0), 2);
	/* A FUA write and a read join nothing. */
	ck_assert_uint_eq(gap_fill(MC_NONE, REQ_OP_WRITE, REQ_FUA), 3);
	ck_assert_uint_eq(gap_fill(MC_NONE, REQ_OP_READ, 0), 3);
}
END_TEST

START_TEST(test_merge_limits)
{
	struct tdev *d = tdev_new(1, 16, 0, MQ_F_SHOULD_MERGE, tdev_complete);
	struct tbio tb[8];
	int i;

	/* max_sectors 16 (8 KiB): pairs only. */
	d->q->limits.max_sectors = 16;
	mq_stop_hw_queues(d->q);
	for (i = 0; i < 4; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	mq_start_hw_queues(d->q);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(tdev_calls(d), 2);
	ck_assert_uint_eq(d->log_bios[0], 2);
	ck_assert_uint_eq(d->log_bios[1], 2);

	/* max_segments 3: three bios of 1 KiB, then a new request. */
	d->nlog = 0;
	d->q->limits.max_sectors = 2560;
	d->q->limits.max_segments = 3;
	mq_stop_hw_queues(d->q);
	for (i = 0; i < 5; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, 1000 + i * 2, 1024);
		tbio_submit(d, &tb[i], 0);
	}
	/* Without SHOULD_MERGE nothing merges: checked on another queue. */
	mq_start_hw_queues(d->q);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(d->nlog, 2);
	ck_assert_uint_eq(d->log_bios[0], 3);
	ck_assert_uint_eq(d->log_bios[1], 2);
	tdev_free(d);

	d = tdev_new(1, 16, 0, 0, tdev_complete);
	mq_stop_hw_queues(d->q);
	for (i = 0; i < 4; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	mq_start_hw_queues(d->q);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(tdev_calls(d), 4);
	tdev_free(d);
}
END_TEST

START_TEST(test_merged_bios_share_status)
{
	struct tdev *d = tdev_new(1, 8, 0, MQ_F_SHOULD_MERGE, tdev_hold);
	struct tbio tb[3];
	int i;

	mq_stop_hw_queues(d->q);
	for (i = 0; i < 3; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	mq_start_hw_queues(d->q);
	tdev_wait_held(d, 1);
	ck_assert_uint_eq(d->log_bios[0], 3);
	ck_assert(tdev_complete_held(d, EIO));
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), EIO);
	tdev_free(d);
}
END_TEST

/* --- splitting ----------------------------------------------------------- */

START_TEST(test_split_large_bio)
{
	struct tdev *d = tdev_new(1, 8, 0, 0, tdev_complete);
	struct tbio tb;

	d->q->limits.max_sectors = 2; /* 1 KiB pieces */
	tbio_init(&tb, d, REQ_OP_WRITE, 0, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_int_eq(atomic_load(&tb.done), 1);
	ck_assert_uint_eq(tdev_calls(d), 4);
	ck_assert_uint_eq(d->log_sector[3], 6);

	/* An op the queue cannot do at all. */
	tbio_init(&tb, d, REQ_OP_DISCARD, 0, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), EOPNOTSUPP);
	tdev_free(d);
}
END_TEST

/* --- flush and FUA --------------------------------------------------- */

START_TEST(test_flush_and_fua)
{
	struct tdev *d = tdev_new(1, 8, 0, 0, tdev_complete);
	struct tbio tb;

	/* No volatile cache: FLUSH never reaches the driver, FUA dropped. */
	tbio_init(&tb, d, REQ_OP_FLUSH, 0, 0);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 0);

	/* Cache, no native FUA: WRITE then FLUSH, then completion. */
	d->q->limits.write_cache = true;
	tbio_init(&tb, d, REQ_OP_WRITE, 0, 4096);
	tb.bio.bi_flags |= REQ_FUA;
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 2);
	ck_assert_int_eq(d->log_op[0], REQ_OP_WRITE);
	ck_assert_int_eq(d->log_op[1], REQ_OP_FLUSH);

	/* Native FUA: one write carrying the flag. */
	d->q->limits.fua = true;
	tbio_init(&tb, d, REQ_OP_WRITE, 0, 4096);
	tb.bio.bi_flags |= REQ_FUA;
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 3);
	tdev_free(d);
}
END_TEST

/* --- timeouts ------------------------------------------------------------ */

START_TEST(test_timeout_calls_driver)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, tdev_hold);
	struct tbio tb, ok;

	/* A short timeout for this queue only. */
	d->q->rq_timeout_ns = 30 * 1000000ull;

	tbio_init(&tb, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), ETIMEDOUT);
	ck_assert_uint_eq(atomic_load(&d->timeouts), 1);

	d->policy = tdev_complete;
	tbio_init(&ok, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &ok, 0);
	ck_assert_int_eq(tbio_wait(&ok), 0);
	tdev_free(d);
}
END_TEST

/*
 * RQF_TIMED_OUT: a request whose handler said DONE (the driver will end
 * it) is not timed out again by later scans, which another request that
 * keeps resetting its timer causes; one that said RESET_TIMER may be.
 */
struct timeout_counts {
	/* the request handled with DONE; set while kblockd may scan */
	struct request *_Atomic first;
	atomic_uint first_calls, other_calls;
};

static enum mq_eh_timer_return count_timeout(struct tdev *d, struct request *rq)
{
	struct timeout_counts *c = d->priv;

	if (rq == atomic_load(&c->first)) {
		atomic_fetch_add(&c->first_calls, 1);
		return MQ_EH_DONE;
	}
	atomic_fetch_add(&c->other_calls, 1);
	return MQ_EH_RESET_TIMER;
}

START_TEST(test_timeout_handled_once)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, tdev_hold);
	struct timeout_counts c = {0};
	struct tbio a, b;
	time_t t0;

	d->priv = &c;
	d->on_timeout = count_timeout;
	d->q->rq_timeout_ns = 2 * 1000000ull;
	tbio_init(&a, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &a, 0);
	tdev_wait_held(d, 1);
	atomic_store(&c.first, d->held[0]);
	tbio_init(&b, d, REQ_OP_READ, 64, 4096);
	tbio_submit(d, &b, 0);
	tdev_wait_held(d, 2);
	/* The other request's timer fires again and again. */
	t0 = time(NULL);
	while (atomic_load(&c.other_calls) < 10 && time(NULL) - t0 < 10)
		sched_yield();
	ck_assert_uint_ge(atomic_load(&c.other_calls), 10);
	ck_assert_uint_eq(atomic_load(&c.first_calls), 1);
	/* The driver ends both; each completes once. */
	ck_assert(tdev_complete_held(d, 0));
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&a), 0);
	ck_assert_int_eq(tbio_wait(&b), 0);
	tdev_free(d);
}
END_TEST

/*
 * The timeout scan marks a request from kblockd while the driver's side
 * requeues and redispatches it, which clears and sets other flags: the
 * flags must stay whole (ThreadSanitizer's build checks the race itself).
 */
static enum mq_eh_timer_return reset_timeout(struct tdev *d, struct request *rq)
{
	(void)d;
	(void)rq;
	return MQ_EH_RESET_TIMER;
}

START_TEST(test_flags_vs_timeout_scan)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, tdev_hold);
	unsigned int requeues = 0;
	struct request *rq;
	struct tbio tb;
	time_t t0 = time(NULL);

	d->on_timeout = reset_timeout;
	d->q->rq_timeout_ns = 1000000ull;
	tbio_init(&tb, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &tb, 0);
	/*
	 * Requeued at once, a request rarely stays past its 1 ms deadline,
	 * so every tenth one is held until the timeout scan has marked it
	 * (the handler counts it): the scan then races the requeue's flag
	 * updates of the others.  The time bound only guards against a hang.
	 */
	while ((requeues < 200 || atomic_load(&d->timeouts) < 20) &&
	       time(NULL) - t0 < 60) {
		tdev_wait_held(d, 1);
		pthread_mutex_lock(&d->lock);
		rq = d->held[--d->nheld];
		pthread_mutex_unlock(&d->lock);
		if (requeues % 10 == 0) {
			unsigned int seen = atomic_load(&d->timeouts);
			const struct timespec tick = {0, 100000};

			while (atomic_load(&d->timeouts) == seen &&
			       time(NULL) - t0 < 60)
				nanosleep(&tick, NULL);
		}
		ck_assert(rq->rq_flags & RQF_STARTED);
		mq_requeue_request(rq, true);
		requeues++;
	}
	ck_assert_uint_ge(requeues, 200);
	ck_assert_uint_ge(atomic_load(&d->timeouts), 20);
	tdev_wait_held(d, 1);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(atomic_load(&d->q->stats.in_flight[0]), 0);
	tdev_free(d);
}
END_TEST

/*
 * A queue being removed (mq_cleanup_queue waiting for a request in
 * flight) is dying: a new bio ends with EIO instead of parking behind the
 * removal's freeze for ever, and a sleeping allocation gives up.
 */
struct cleaner {
	struct mq_queue *q;
	atomic_bool done;
};

static void *cleanup_thread(void *arg)
{
	struct cleaner *c = arg;

	mq_cleanup_queue(c->q);
	atomic_store(&c->done, true);
	return NULL;
}

START_TEST(test_dying_queue_refuses)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, tdev_hold);
	struct cleaner c = {.q = d->q};
	struct allocator al = {.q = d->q};
	struct tbio held, late;
	pthread_t tc, ta;
	time_t t0;

	tbio_init(&held, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &held, 0);
	tdev_wait_held(d, 1);
	ck_assert_int_eq(pthread_create(&tc, NULL, cleanup_thread, &c), 0);
	t0 = time(NULL);
	while (!atomic_load(&d->q->frozen) && time(NULL) - t0 < 10)
		sched_yield();
	ck_assert(atomic_load(&d->q->dying) && atomic_load(&d->q->frozen));

	tbio_init(&late, d, REQ_OP_READ, 64, 4096);
	tbio_submit(d, &late, 0);
	t0 = time(NULL);
	while (!atomic_load(&late.done) && time(NULL) - t0 < 10)
		sched_yield();
	ck_assert_msg(atomic_load(&late.done), "a bio parked on a dying queue");
	ck_assert_int_eq(late.bio.bi_status, EIO);
	ck_assert_ptr_null(
		mq_alloc_request(d->q, REQ_OP_DRV_IN, MQ_REQ_NOWAIT));
	ck_assert_int_eq(pthread_create(&ta, NULL, alloc_thread, &al), 0);
	t0 = time(NULL);
	while (!atomic_load(&al.done) && time(NULL) - t0 < 10)
		sched_yield();
	ck_assert_msg(atomic_load(&al.done),
		      "an allocation slept on a dying queue");
	pthread_join(ta, NULL);
	ck_assert_ptr_null(al.rq);

	/* The request in flight still completes, and the removal ends. */
	ck_assert(!atomic_load(&c.done));
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&held), 0);
	pthread_join(tc, NULL);
	mq_free_tag_set(&d->set);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
END_TEST

/* --- BLOCKING sets dispatch from the hctx worker ---------------------- */

START_TEST(test_blocking_worker)
{
	struct tdev *d = tdev_new(2, 4, 0, MQ_F_BLOCKING, tdev_complete);
	struct tbio tb[8];
	int i;

	for (i = 0; i < 8; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, i * 8, 4096);
		tbio_submit(d, &tb[i], i);
	}
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert(!pthread_equal(d->last_thread, pthread_self()));
	tdev_free(d);
}
END_TEST

/* --- driver requests inserted at the head ---------------------------- */

static void sense_end_io(struct request *rq, int status)
{
	int *seen = rq->end_io_data;

	*seen = 1;
	mq_free_request(rq);
}

START_TEST(test_sched_insert_at_head)
{
	struct tdev *d = tdev_new(1, 8, 1, 0, tdev_complete);
	struct tbio tb[2];
	struct request *rq;
	int seen = 0;

	mq_stop_hw_queues(d->q);
	tbio_init(&tb[0], d, REQ_OP_READ, 0, 4096);
	tbio_init(&tb[1], d, REQ_OP_READ, 64, 4096);
	tbio_submit(d, &tb[0], 0);
	tbio_submit(d, &tb[1], 0);

	rq = mq_alloc_request(d->q, REQ_OP_DRV_IN,
			      MQ_REQ_RESERVED | MQ_REQ_NOWAIT);
	ck_assert_ptr_nonnull(rq);
	rq->end_io = sense_end_io;
	rq->end_io_data = &seen;
	mq_sched_insert_request(rq, true, false, false);
	mq_start_hw_queues(d->q);

	ck_assert_int_eq(tbio_wait(&tb[0]), 0);
	ck_assert_int_eq(tbio_wait(&tb[1]), 0);
	ck_assert_int_eq(seen, 1);
	ck_assert_uint_eq(tdev_calls(d), 3);
	ck_assert_int_eq(d->log_op[0], REQ_OP_DRV_IN);
	ck_assert_int_eq(d->log_op[1], REQ_OP_READ);
	tdev_free(d);
}
END_TEST

/* --- stress: every request completes exactly once --------------------- */

enum { STRESS_PER_THREAD = 50000 };

struct stress {
	struct tdev *d;
	atomic_int *count; /* completions per bio */
	struct bio *bios;
	int base;
	atomic_int remaining;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void stress_end_io(struct bio *bio)
{
	struct stress *s = bio->bi_private;

	atomic_fetch_add(&s->count[bio - s->bios], 1);
	if (atomic_fetch_sub(&s->remaining, 1) == 1) {
		pthread_mutex_lock(&s->lock);
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
}

struct submitter {
	struct stress *s;
	int first;
	unsigned int cpu;
};

static void *stress_submit(void *arg)
{
	struct submitter *sub = arg;
	struct stress *s = sub->s;

	for (int i = 0; i < STRESS_PER_THREAD; i++) {
		struct bio *bio = &s->bios[sub->first + i];

		bio_init(bio, (i & 1) ? REQ_OP_WRITE : REQ_OP_READ,
			 (uint64_t)(sub->first + i) * 8, 4096, NULL);
		bio->bi_end_io = stress_end_io;
		bio->bi_private = s;
		bio->bi_submitter = sub->cpu;
		mq_submit_bio(mq_get_ctx(s->d->q, sub->cpu), bio);
	}
	return NULL;
}

static void *stress_complete(void *arg)
{
	struct stress *s = arg;
	struct tdev *d = s->d;

	while (atomic_load(&s->remaining) > 0) {
		if (!tdev_complete_held(d, 0)) {
			pthread_mutex_lock(&d->lock);
			if (!d->nheld && atomic_load(&s->remaining) > 0) {
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_nsec += 1000000;
				if (ts.tv_nsec >= 1000000000) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000;
				}
				pthread_cond_timedwait(&d->cond, &d->lock, &ts);
			}
			pthread_mutex_unlock(&d->lock);
		}
	}
	return NULL;
}

START_TEST(test_stress_exactly_once)
{
	enum { N = 2 * STRESS_PER_THREAD };
	struct stress s = {0};
	struct submitter sub[2];
	pthread_t thr[3];
	int i;

	s.d = tdev_new(2, 32, 0, MQ_F_SHOULD_MERGE, tdev_hold);
	s.count = calloc(N, sizeof(*s.count));
	s.bios = calloc(N, sizeof(*s.bios));
	atomic_store(&s.remaining, N);
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);

	pthread_create(&thr[2], NULL, stress_complete, &s);
	for (i = 0; i < 2; i++) {
		sub[i] = (struct submitter){&s, i * STRESS_PER_THREAD, i};
		pthread_create(&thr[i], NULL, stress_submit, &sub[i]);
	}
	pthread_join(thr[0], NULL);
	pthread_join(thr[1], NULL);
	pthread_mutex_lock(&s.lock);
	while (atomic_load(&s.remaining) > 0)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	pthread_join(thr[2], NULL);

	for (i = 0; i < N; i++)
		ck_assert_int_eq(atomic_load(&s.count[i]), 1);
	for (i = 0; i < N; i++)
		ck_assert_int_eq(s.bios[i].bi_status, 0);
	tdev_free(s.d);
	free(s.count);
	free(s.bios);
}
END_TEST

/* --- the elevator hook points, with a FIFO test elevator --------------- */

struct fifo_data {
	pthread_mutex_t lock;
	struct rq_list list;
	atomic_uint inserted, dispatched, prepared, finished, completed;
};

static int fifo_init_sched(struct mq_queue *q, struct elevator_type *e)
{
	struct fifo_data *fd = calloc(1, sizeof(*fd));

	if (!fd)
		return ENOMEM;
	pthread_mutex_init(&fd->lock, NULL);
	TAILQ_INIT(&fd->list);
	q->elevator->elevator_data = fd;
	return 0;
}

static struct fifo_data *fifo_last;

static void fifo_exit_sched(struct elevator_queue *eq)
{
	fifo_last = eq->elevator_data; /* the test reads the counters */
}

static void fifo_insert(struct mq_hw_ctx *hctx, struct rq_list *list,
			bool at_head)
{
	struct fifo_data *fd = hctx->queue->elevator->elevator_data;
	struct request *rq;

	pthread_mutex_lock(&fd->lock);
	while ((rq = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, rq, queuelist);
		if (at_head)
			TAILQ_INSERT_HEAD(&fd->list, rq, queuelist);
		else
			TAILQ_INSERT_TAIL(&fd->list, rq, queuelist);
		atomic_fetch_add(&fd->inserted, 1);
	}
	pthread_mutex_unlock(&fd->lock);
}

static struct request *fifo_dispatch(struct mq_hw_ctx *hctx)
{
	struct fifo_data *fd = hctx->queue->elevator->elevator_data;
	struct request *rq;

	pthread_mutex_lock(&fd->lock);
	rq = TAILQ_FIRST(&fd->list);
	if (rq) {
		TAILQ_REMOVE(&fd->list, rq, queuelist);
		atomic_fetch_add(&fd->dispatched, 1);
	}
	pthread_mutex_unlock(&fd->lock);
	return rq;
}

static bool fifo_has_work(struct mq_hw_ctx *hctx)
{
	struct fifo_data *fd = hctx->queue->elevator->elevator_data;
	bool work;

	pthread_mutex_lock(&fd->lock);
	work = !TAILQ_EMPTY(&fd->list);
	pthread_mutex_unlock(&fd->lock);
	return work;
}

static void fifo_prepare(struct request *rq)
{
	struct fifo_data *fd = rq->q->elevator->elevator_data;

	atomic_fetch_add(&fd->prepared, 1);
}

static void fifo_finish(struct request *rq)
{
	struct fifo_data *fd = rq->q->elevator->elevator_data;

	atomic_fetch_add(&fd->finished, 1);
}

static void fifo_completed(struct request *rq, uint64_t now)
{
	struct fifo_data *fd = rq->q->elevator->elevator_data;

	atomic_fetch_add(&fd->completed, 1);
}

static const struct elevator_type fifo_elv = {
	.elevator_name = "test-fifo",
	.ops =
		{
			.init_sched = fifo_init_sched,
			.exit_sched = fifo_exit_sched,
			.insert_requests = fifo_insert,
			.dispatch_request = fifo_dispatch,
			.has_work = fifo_has_work,
			.prepare_request = fifo_prepare,
			.finish_request = fifo_finish,
			.completed_request = fifo_completed,
		},
};

START_TEST(test_elevator_hooks_and_switch)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, tdev_hold);
	struct tbio tb[12];
	struct fifo_data *fd;
	int i;

	ck_assert_str_eq(mq_elevator_name(d->q), "none");
	ck_assert_int_eq(elevator_switch(d->q, &fifo_elv), 0);
	ck_assert_str_eq(mq_elevator_name(d->q), "test-fifo");
	/* Scheduler tags: 2 * min(depth, 128). */
	ck_assert_uint_eq(d->q->nr_requests, 8);
	fd = d->q->elevator->elevator_data;

	/* 8 requests fit in sched tags; only 4 driver tags exist. */
	for (i = 0; i < 8; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, i * 8, 4096);
		tbio_submit(d, &tb[i], i);
	}
	tdev_wait_held(d, 4);
	ck_assert_uint_eq(tdev_calls(d), 4);
	ck_assert_uint_eq(atomic_load(&fd->inserted), 8);
	/* Completions free driver tags and restart dispatch. */
	for (i = 0; i < 8; i++) {
		tdev_wait_held(d, 1);
		ck_assert(tdev_complete_held(d, 0));
	}
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(atomic_load(&fd->dispatched), 8);
	ck_assert_uint_eq(atomic_load(&fd->prepared), 8);
	ck_assert_uint_eq(atomic_load(&fd->completed), 8);
	ck_assert_uint_eq(atomic_load(&fd->finished), 8);

	/* Switch back with a request in flight: it completes, none lost. */
	d->policy = tdev_complete;
	tbio_init(&tb[8], d, REQ_OP_WRITE, 0, 4096);
	tbio_submit(d, &tb[8], 0);
	ck_assert_int_eq(elevator_switch(d->q, NULL), 0);
	ck_assert_ptr_eq(fifo_last, fd);
	free(fd);
	ck_assert_int_eq(tbio_wait(&tb[8]), 0);
	ck_assert_str_eq(mq_elevator_name(d->q), "none");
	ck_assert_uint_eq(d->q->nr_requests, 4);
	tdev_free(d);

	/* NO_SCHED refuses every elevator. */
	d = tdev_new(1, 4, 0, MQ_F_NO_SCHED, tdev_complete);
	ck_assert_int_eq(elevator_switch(d->q, &fifo_elv), EINVAL);
	ck_assert_str_eq(mq_elevator_name(d->q), "none");
	tdev_free(d);
}
END_TEST

/* --- accounting ---------------------------------------------------------- */

START_TEST(test_stats)
{
	struct tdev *d = tdev_new(1, 8, 0, 0, tdev_complete);
	struct mq_queue_stats *st = &d->q->stats;
	struct tbio tb;
	unsigned long hist = 0;
	int i;

	for (i = 0; i < 3; i++) {
		tbio_init(&tb, d, REQ_OP_READ, i * 8, 4096);
		tbio_submit(d, &tb, 0);
		ck_assert_int_eq(tbio_wait(&tb), 0);
	}
	tbio_init(&tb, d, REQ_OP_WRITE, 0, 2048);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);

	ck_assert_uint_eq(atomic_load(&st->ios[STAT_READ]), 3);
	ck_assert_uint_eq(atomic_load(&st->sectors[STAT_READ]), 24);
	ck_assert_uint_eq(atomic_load(&st->ios[STAT_WRITE]), 1);
	ck_assert_uint_eq(atomic_load(&st->sectors[STAT_WRITE]), 4);
	ck_assert_uint_eq(atomic_load(&st->in_flight[0]), 0);
	for (i = 0; i < MQ_LAT_BUCKETS; i++)
		hist += atomic_load(&st->lat_hist[STAT_READ][i]);
	ck_assert_uint_eq(hist, 3);
	ck_assert_uint_eq(atomic_load(&d->q->queue_hw_ctx[0]->stats.dispatched),
			  4);
	tdev_free(d);
}
END_TEST

/*
 * A plug (struct mq_plug): the core reads the clock for a batch once.
 * Every request of the batch carries that time as its start and dispatch
 * time; after the plug, and after a nested plug's end, it does not.
 */
#define PLUG_RQS 4

struct plug_times {
	uint64_t start[PLUG_RQS], io_start[PLUG_RQS];
	unsigned int n;
};

static enum mq_qrc record_times(struct tdev *d, struct request *rq)
{
	struct plug_times *t = d->priv;

	mq_start_request(rq);
	if (t->n < PLUG_RQS) {
		t->start[t->n] = rq->start_time_ns;
		t->io_start[t->n] = rq->io_start_time_ns;
		t->n++;
	}
	mq_end_request(rq, 0);
	return MQ_QRC_OK;
}

START_TEST(test_plug_caches_time)
{
	struct tdev *d = tdev_new(1, 8, 0, 0, record_times);
	struct plug_times t = {.n = 0};
	struct mq_plug plug, inner;
	struct tbio tb;
	uint64_t before, cached;
	unsigned int i;

	d->priv = &t;
	before = mq_now_ns();
	mq_start_plug(&plug);
	cached = mq_time_get_ns();
	ck_assert_uint_ge(cached, before);
	for (i = 0; i < 2; i++) {
		tbio_init(&tb, d, REQ_OP_READ, i * 8, 4096);
		tbio_submit(d, &tb, 0);
		ck_assert_int_eq(tbio_wait(&tb), 0);
	}
	/* A nested plug changes nothing, nor does its end. */
	mq_start_plug(&inner);
	mq_finish_plug(&inner);
	tbio_init(&tb, d, REQ_OP_READ, 16, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	mq_finish_plug(&plug);
	ck_assert_uint_eq(t.n, 3);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(t.start[i], cached);
		ck_assert_uint_eq(t.io_start[i], cached);
	}
	/* Their latency reads 0: they completed inside the plug. */
	ck_assert_uint_eq(atomic_load(&d->q->stats.nsecs[STAT_READ]), 0);

	/* After the plug the clock is read again. */
	while (mq_now_ns() == cached)
		;
	tbio_init(&tb, d, REQ_OP_READ, 24, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(t.n, 4);
	ck_assert_uint_gt(t.start[3], cached);
	tdev_free(d);
}
END_TEST

/*
 * Under a plug, requests for a driver with queue_rqs wait in the plug and
 * reach it in one call, in submission order, when the plug ends.
 */
START_TEST(test_plug_batches_for_queue_rqs)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_complete);
	struct mq_hw_ctx *hctx = d->q->queue_hw_ctx[0];
	struct tbio tb[5];
	struct mq_plug plug;
	unsigned int i;

	tdev_take_batches(d);
	mq_start_plug(&plug);
	for (i = 0; i < 5; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, (4 - i) * 64, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	ck_assert_uint_eq(tdev_calls(d), 0);
	ck_assert_uint_eq(atomic_load(&hctx->stats.queued), 5);
	mq_finish_plug(&plug);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(d->nbatches, 1);
	ck_assert_uint_eq(d->batch_size[0], 5);
	for (i = 0; i < 5; i++)
		ck_assert_uint_eq(d->log_sector[i], (4 - i) * 64);
	ck_assert_uint_eq(atomic_load(&hctx->stats.dispatched), 5);
	ck_assert_uint_eq(atomic_load(&hctx->stats.active), 0);
	tdev_free(d);
}
END_TEST

/* Refuses, unstarted, the first offer of a request at an odd multiple of 64. */
static enum mq_qrc refuse_odd_once(struct tdev *d, struct request *rq)
{
	unsigned long *offered = d->priv;
	uint64_t i = blk_rq_pos(rq) / 64;

	if ((i & 1) && !(*offered & (1UL << i))) {
		*offered |= 1UL << i;
		return MQ_QRC_BUSY;
	}
	return tdev_complete(d, rq);
}

/*
 * What queue_rqs leaves on the list it refused: the core offers each to
 * queue_rq once more, alone, and counts every request dispatched and in
 * flight once, as Linux issues queue_rqs's leftovers directly.
 */
START_TEST(test_plug_offers_what_queue_rqs_left)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, refuse_odd_once);
	struct mq_hw_ctx *hctx = d->q->queue_hw_ctx[0];
	unsigned long offered = 0;
	struct letter_trace lt;
	struct tbio tb[5];
	struct mq_plug plug;
	unsigned int i;

	d->priv = &offered;
	letter_trace_init(&lt);
	blk_trace_set(d->q, &lt.bt);
	tdev_take_batches(d);
	mq_start_plug(&plug);
	for (i = 0; i < 5; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, i * 64, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	mq_finish_plug(&plug);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	/* One batch of five; then the two it refused, one at a time. */
	ck_assert_uint_eq(d->nbatches, 1);
	ck_assert_uint_eq(d->batch_size[0], 5);
	ck_assert_uint_eq(tdev_calls(d), 7);
	ck_assert_uint_eq(d->log_sector[5], 64);
	ck_assert_uint_eq(d->log_sector[6], 3 * 64);
	ck_assert_uint_eq(atomic_load(&hctx->stats.dispatched), 5);
	ck_assert_uint_eq(atomic_load(&hctx->stats.busy), 0);
	ck_assert_uint_eq(atomic_load(&hctx->stats.active), 0);
	ck_assert_uint_eq(atomic_load(&d->set.nr_active), 0);
	/* Each refusal is traced as a requeue, as a busy queue_rq's is. */
	blk_trace_set(d->q, NULL);
	letter_trace_fini(&lt);
	for (i = 0; i < 5; i++)
		ck_assert_str_eq(lt.letters[i], i & 1 ? "DRDC" : "DC");
	tdev_free(d);
}
END_TEST

/* A bio whose completion submits the next one, as a read-modify-write. */
struct chained_tbio {
	struct tbio tb;
	struct tbio *next;
};

static void chained_end_io(struct bio *bio)
{
	struct chained_tbio *c = bio->bi_private;
	struct tdev *d = c->tb.d;

	tbio_submit(d, c->next, 0);
	pthread_mutex_lock(&d->lock);
	atomic_fetch_add(&c->tb.done, 1);
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

/*
 * The end of a plug sends what completions sent into it while it was
 * being emptied: the write after a read-modify-write's read.
 */
START_TEST(test_plug_sends_what_completions_add)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_complete);
	struct chained_tbio first;
	struct mq_plug plug;
	struct tbio second;

	tdev_take_batches(d);
	tbio_init(&first.tb, d, REQ_OP_READ, 0, 4096);
	first.tb.bio.bi_end_io = chained_end_io;
	first.tb.bio.bi_private = &first;
	first.next = &second;
	tbio_init(&second, d, REQ_OP_WRITE, 0, 4096);
	mq_start_plug(&plug);
	tbio_submit(d, &first.tb, 0);
	mq_finish_plug(&plug);
	/* Both went before the plug ended, each in a batch of its own. */
	ck_assert_uint_eq(tdev_calls(d), 2);
	ck_assert_uint_eq(d->nbatches, 2);
	ck_assert_int_eq(tbio_wait(&first.tb), 0);
	ck_assert_int_eq(tbio_wait(&second), 0);
	tdev_free(d);
}
END_TEST

/* A plug holds MQ_PLUG_MAX at most, and one hardware queue's at a time. */
START_TEST(test_plug_flushes_when_full_or_elsewhere)
{
	struct tdev *d = tdev_new(2, 64, 0, 0, tdev_complete);
	struct tbio tb[MQ_PLUG_MAX + 3];
	struct mq_plug plug;
	unsigned int i, other;

	tdev_take_batches(d);
	mq_start_plug(&plug);
	for (i = 0; i < MQ_PLUG_MAX + 1; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	ck_assert_uint_eq(tdev_calls(d), MQ_PLUG_MAX);
	/* A request for another hardware queue sends the one held. */
	for (other = 1;
	     mq_get_ctx(d->q, other)->hctx == mq_get_ctx(d->q, 0)->hctx;
	     other++)
		ck_assert_uint_lt(other, 8);
	tbio_init(&tb[i], d, REQ_OP_READ, i * 8, 4096);
	tbio_submit(d, &tb[i], other);
	ck_assert_uint_eq(tdev_calls(d), MQ_PLUG_MAX + 1);
	i++;
	tbio_init(&tb[i], d, REQ_OP_READ, i * 8, 4096);
	tbio_submit(d, &tb[i], other);
	mq_finish_plug(&plug);
	for (i = 0; i < MQ_PLUG_MAX + 3; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(d->nbatches, 3);
	ck_assert_uint_eq(d->batch_size[0], MQ_PLUG_MAX);
	ck_assert_uint_eq(d->batch_size[1], 1);
	ck_assert_uint_eq(d->batch_size[2], 2);
	tdev_free(d);
}
END_TEST

/* A driver without queue_rqs gets each request as it comes, plug or not. */
START_TEST(test_plug_holds_nothing_without_queue_rqs)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_complete);
	struct mq_plug plug;
	struct tbio tb;

	mq_start_plug(&plug);
	tbio_init(&tb, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_uint_eq(tdev_calls(d), 1);
	mq_finish_plug(&plug);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	tdev_free(d);
}
END_TEST

/*
 * Nor does a plug hold what could not be issued directly: a request for
 * the head of the queue, or one an elevator has to see first.
 */
START_TEST(test_plug_holds_nothing_it_could_not_issue)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_complete);
	struct sorted_elv *se;
	struct mq_plug plug;
	struct tbio tb[2];

	tdev_take_batches(d);
	mq_start_plug(&plug);
	tbio_init(&tb[0], d, REQ_OP_READ, 0, 4096);
	tb[0].bio.bi_flags |= REQ_HEAD;
	tbio_submit(d, &tb[0], 0);
	ck_assert_uint_eq(tdev_calls(d), 1);
	mq_finish_plug(&plug);
	ck_assert_int_eq(tbio_wait(&tb[0]), 0);

	ck_assert_int_eq(elevator_switch(d->q, &sorted_elv_type), 0);
	se = d->q->queue_hw_ctx[0]->sched_data;
	mq_start_plug(&plug);
	tbio_init(&tb[1], d, REQ_OP_READ, 8, 4096);
	tbio_submit(d, &tb[1], 0);
	ck_assert_uint_eq(tdev_calls(d), 2);
	mq_finish_plug(&plug);
	ck_assert_int_eq(tbio_wait(&tb[1]), 0);
	ck_assert_uint_eq(d->nbatches, 0);
	ck_assert_int_eq(elevator_switch(d->q, NULL), 0);
	pthread_mutex_destroy(&se->lock);
	free(se);
	tdev_free(d);
}
END_TEST

/*
 * A thread about to sleep sends what its plug holds first: here the plug
 * holds both tags, and a blocking allocation waits for one of them.
 */
START_TEST(test_plug_flushes_before_sleeping)
{
	struct tdev *d = tdev_new(1, 2, 0, 0, tdev_complete);
	struct mq_plug plug;
	struct request *rq;
	struct tbio tb[2];
	unsigned int i;

	tdev_take_batches(d);
	mq_start_plug(&plug);
	for (i = 0; i < 2; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	ck_assert_uint_eq(tdev_calls(d), 0);
	rq = mq_alloc_request(d->q, REQ_OP_DRV_IN, 0);
	ck_assert_ptr_nonnull(rq);
	ck_assert_uint_eq(tdev_calls(d), 2);
	mq_free_request(rq);
	mq_finish_plug(&plug);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	tdev_free(d);
}
END_TEST

/*
 * A request started, then given back (requeue, or a refusal after the
 * start), counts in flight once: once everything completed, an idle queue
 * reads 0 in flight and io_ticks no longer grows while it stays idle.
 */
static enum mq_qrc started_then_back(struct tdev *d, struct request *rq)
{
	unsigned int how = *(unsigned int *)d->priv;

	mq_start_request(rq);
	if (tdev_calls(d) > 1) {
		mq_end_request(rq, 0);
		return MQ_QRC_OK;
	}
	switch (how) {
	case 0:
		mq_requeue_request(rq, true);
		return MQ_QRC_OK;
	case 1:
		return MQ_QRC_RESOURCE;
	case 2:
		return MQ_QRC_BUSY;
	default:
		return MQ_QRC_DEV_RESOURCE;
	}
}

static uint64_t io_ticks(struct mq_queue *q)
{
	return atomic_load(&q->stats.io_ticks_ns);
}

START_TEST(test_idle_after_requeue)
{
	unsigned int how = (unsigned int)_i;
	struct tdev *d = tdev_new(1, 4, 0, 0, started_then_back);
	struct mq_queue_stats *st = &d->q->stats;
	uint64_t t0, t_before, t_after, ticks;
	struct tbio tb;

	d->priv = &how;
	tbio_init(&tb, d, REQ_OP_WRITE, 0, 4096);
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	ck_assert_uint_eq(tdev_calls(d), 2);
	ck_assert_uint_eq(atomic_load(&st->in_flight[0]), 0);
	ck_assert_uint_eq(atomic_load(&st->in_flight[1]), 0);
	ck_assert_uint_eq(atomic_load(&st->ios[STAT_WRITE]), 1);

	/*
	 * io_ticks stops: after an idle stretch, one more I/O adds at most
	 * the time that I/O took.  A queue that believed a request still in
	 * flight would add the idle stretch too.
	 */
	t0 = mq_now_ns();
	while (mq_now_ns() - t0 < 50000000ull) /* let 50 ms of idle pass */
		sched_yield();
	ticks = io_ticks(d->q);
	tbio_init(&tb, d, REQ_OP_WRITE, 8, 4096);
	t_before = mq_now_ns();
	tbio_submit(d, &tb, 0);
	ck_assert_int_eq(tbio_wait(&tb), 0);
	t_after = mq_now_ns();
	ck_assert_msg(io_ticks(d->q) - ticks <= t_after - t_before,
		      "io_ticks grew by %llu ns over a %llu ns I/O",
		      (unsigned long long)(io_ticks(d->q) - ticks),
		      (unsigned long long)(t_after - t_before));
	ck_assert_uint_eq(atomic_load(&st->in_flight[1]), 0);
	tdev_free(d);
}
END_TEST

/* --- blktrace --------------------------------------------------------- */

struct count_trace {
	struct blk_trace bt;
	atomic_uint events;
};

static void count_event(struct blk_trace *bt, const struct blk_trace_event *ev)
{
	(void)ev;
	atomic_fetch_add(&((struct count_trace *)bt)->events, 1);
}

static void *remove_trace(void *arg)
{
	blk_trace_set(arg, NULL);
	return NULL;
}

/*
 * Removing a trace waits for the threads inside a trace point, not for
 * the requests in the queue: with a request the device holds forever it
 * still returns, and records nothing after.
 */
START_TEST(test_trace_remove_with_stuck_request)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, tdev_hold);
	struct count_trace ct = {.bt = {.event = count_event}};
	struct timespec deadline;
	unsigned int seen;
	pthread_t t;
	struct tbio tb;
	int rv;

	blk_trace_set(d->q, &ct.bt);
	tbio_init(&tb, d, REQ_OP_READ, 0, 4096);
	tbio_submit(d, &tb, 0);
	tdev_wait_held(d, 1);
	ck_assert_uint_gt(atomic_load(&ct.events), 0); /* queued, issued */

	ck_assert_int_eq(pthread_create(&t, NULL, remove_trace, d->q), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	rv = pthread_timedjoin_np(t, NULL, &deadline);
	seen = atomic_load(&ct.events);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb), 0);
	if (rv)
		pthread_join(t, NULL); /* freed by the completion */
	ck_assert_msg(rv == 0, "removing the trace waited for the request");
	ck_assert_uint_eq(atomic_load(&ct.events), seen);
	tdev_free(d);
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_tag_exhaustion_and_reserved);
	tcase_add_test(tc, test_blocking_alloc_keeps_bio_fifo);
	tcase_add_test(tc, test_dev_resource_restart_shared_set);
	tcase_add_loop_test(tc, test_shared_set_fair_share, 0, 2);
	tcase_add_test(tc, test_resource_delayed_rerun);
	tcase_add_test(tc, test_kblockd_wakes_only_for_earlier_work);
	tcase_add_test(tc, test_log_level_drops_lines);
	tcase_add_test(tc, test_busy_retried);
	tcase_add_test(tc, test_ioerr_fails_request);
	tcase_add_test(tc, test_stop_start);
	tcase_add_test(tc, test_requeue_kick);
	tcase_add_test(tc, test_requeue_delayed_kick);
	tcase_add_test(tc, test_freeze_waits_for_inflight);
	tcase_add_test(tc, test_quiesce_holds_dispatch);
	tcase_add_test(tc, test_partial_completion);
	tcase_add_test(tc, test_merge_adjacent);
	tcase_add_test(tc, test_merge_limits);
	tcase_add_test(tc, test_core_request_merge);
	tcase_add_test(tc, test_core_request_merge_rules);
	tcase_add_test(tc, test_merged_bios_share_status);
	tcase_add_test(tc, test_split_large_bio);
	tcase_add_test(tc, test_flush_and_fua);
	tcase_add_test(tc, test_timeout_calls_driver);
	tcase_add_test(tc, test_timeout_handled_once);
	tcase_add_test(tc, test_flags_vs_timeout_scan);
	tcase_add_test(tc, test_dying_queue_refuses);
	tcase_add_test(tc, test_blocking_worker);
	tcase_add_test(tc, test_sched_insert_at_head);
	tcase_add_test(tc, test_stress_exactly_once);
	tcase_add_test(tc, test_elevator_hooks_and_switch);
	tcase_add_test(tc, test_stats);
	tcase_add_test(tc, test_plug_caches_time);
	tcase_add_test(tc, test_plug_batches_for_queue_rqs);
	tcase_add_test(tc, test_plug_flushes_when_full_or_elsewhere);
	tcase_add_test(tc, test_plug_sends_what_completions_add);
	tcase_add_test(tc, test_plug_offers_what_queue_rqs_left);
	tcase_add_test(tc, test_plug_holds_nothing_without_queue_rqs);
	tcase_add_test(tc, test_plug_holds_nothing_it_could_not_issue);
	tcase_add_test(tc, test_plug_flushes_before_sleeping);
	tcase_add_loop_test(tc, test_idle_after_requeue, 0, 4);
	tcase_add_test(tc, test_trace_remove_with_stuck_request);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(core_suite());
}
