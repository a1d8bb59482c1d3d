// SPDX-License-Identifier: GPL-2.0
/*
 * The Kyber I/O scheduler, after block/kyber-iosched.c: latency is held
 * to a target by throttling how many requests of each kind may be in the
 * device at once.
 *
 * Requests fall into four domains (read, write, discard, other).  A
 * request takes one of its domain's tokens when it is dispatched and gives
 * it back when it is freed.  Completions record the total latency (from
 * allocation) and the I/O latency (from mq_start_request) in histograms
 * whose buckets are quarters of the domain's target.  A timer, armed by
 * completions and firing 100 ms later, reads the histograms: if any
 * domain's p90 I/O latency misses its target the device is congested, and
 * every domain whose p99 total latency meets its target is throttled in
 * proportion; a domain whose own p99 misses its target is let go the same
 * way, and only then does a domain win depth back.  So when reads miss
 * read_lat_nsec, writes lose depth; when the reads stop, writes that pile
 * up behind their few tokens miss write_lat_nsec and regain it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../server/mq/elevator.h"
#include "kyber.h"
#include "../server/mq/log.h"
#include "../server/mq/params.h"

#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_SEC  1000000000ull

/* Async requests get 75% of the scheduler tags; 25% stay for sync. */
#define KYBER_ASYNC_PERCENT 75

/* The timer fires this long after the first completion that armed it. */
#define KYBER_TIMER_NS (100 * NSEC_PER_MSEC)

/* Percentiles need this many samples, or this long since the first. */
#define KYBER_MIN_SAMPLES	500
#define KYBER_SAMPLE_TIMEOUT_NS NSEC_PER_SEC

/*
 * Maximum depth of each domain, device-wide.  A device saturates with a
 * fraction of its tags, so these are capped; not by nr_requests, as in
 * 6.6: the scheduler tags limit a domain deeper than them anyway.
 */
static const unsigned int kyber_depth[] = {
	[KYBER_READ] = 256,
	[KYBER_WRITE] = 128,
	[KYBER_DISCARD] = 64,
	[KYBER_OTHER] = 16,
};

/* Default latency targets; OTHER has none and is never resized. */
static const uint64_t kyber_latency_targets[] = {
	[KYBER_READ] = 2 * NSEC_PER_MSEC,
	[KYBER_WRITE] = 10 * NSEC_PER_MSEC,
	[KYBER_DISCARD] = 5 * NSEC_PER_SEC,
};

/* Requests dispatched from one domain in a row.  Reads are favoured. */
static const unsigned int kyber_batch_size[] = {
	[KYBER_READ] = 16,
	[KYBER_WRITE] = 8,
	[KYBER_DISCARD] = 1,
	[KYBER_OTHER] = 1,
};

static const char *const kyber_domain_names[] = {
	[KYBER_READ] = "READ",
	[KYBER_WRITE] = "WRITE",
	[KYBER_DISCARD] = "DISCARD",
	[KYBER_OTHER] = "OTHER",
};

/*
 * Histogram buckets are 1/4 of the target wide: four "good" buckets up to
 * the target, four "bad" ones past it, the last open-ended.
 */
enum {
	KYBER_LATENCY_SHIFT = 2,
	KYBER_GOOD_BUCKETS = 1 << KYBER_LATENCY_SHIFT,
	KYBER_LATENCY_BUCKETS = 2 << KYBER_LATENCY_SHIFT,
};

enum {
	KYBER_TOTAL_LATENCY, /* from allocation */
	KYBER_IO_LATENCY,    /* from mq_start_request */
	KYBER_NUM_LAT_TYPES,
};

/*
 * A domain's tokens: what Linux keeps in an sbitmap_queue.  Only the
 * count matters here.  busy may exceed depth for a while after a shrink;
 * no token is taken back, new ones are just refused.
 */
struct kyber_tokens {
	atomic_uint depth;
	atomic_uint busy;
	atomic_uint nr_waiters; /* hctxs waiting for a token */
};

struct kyber_queue_data {
	struct mq_queue *q;

	struct kyber_tokens domain_tokens[KYBER_NUM_DOMAINS];
	unsigned int max_depth[KYBER_NUM_DOMAINS];

	/* Number of scheduler tags async requests may use. */
	atomic_uint async_depth;

	/* Completions add samples here; the timer drains them. */
	atomic_uint cpu_buckets[KYBER_OTHER][KYBER_NUM_LAT_TYPES]
			       [KYBER_LATENCY_BUCKETS];

	/* The timer's own, touched by nobody else. */
	unsigned int latency_buckets[KYBER_OTHER][KYBER_NUM_LAT_TYPES]
				    [KYBER_LATENCY_BUCKETS];
	uint64_t latency_timeout[KYBER_OTHER];
	int domain_p99[KYBER_OTHER];

	/* Target latencies in nanoseconds (read_lat_nsec, write_lat_nsec). */
	_Atomic uint64_t latency_targets[KYBER_OTHER];

	/*
	 * The timer: a thread that sleeps until timer_expires.  Completions
	 * arm it when it is not armed (timer_reduce to now + 100 ms).
	 */
	pthread_t timer_thread;
	pthread_mutex_t timer_lock;
	pthread_cond_t timer_cond;
	uint64_t timer_expires; /* 0: not armed; under timer_lock */
	bool timer_exit;	/* under timer_lock */
	atomic_bool timer_armed;
	atomic_ulong timer_runs;

	/*
	 * Tests only (kyber_set_clock): latencies and the timer on this
	 * clock.  Requests carry their own start stamps then (elv_priv[1] at
	 * allocation, fifo_time, which kyber has no other use for, at
	 * dispatch), and a completion at or past test_timer_expires runs the
	 * timer itself.
	 */
	const _Atomic uint64_t *test_clock;
	_Atomic uint64_t test_timer_expires; /* 0: not armed */
};

/* A software queue's requests, per domain, kept for merging. */
struct kyber_ctx_queue {
	pthread_mutex_t lock;
	struct rq_list rq_list[KYBER_NUM_DOMAINS];
};

struct kyber_hctx_data {
	/*
	 * Flushed from the kcqs, or inserted at the head or by the driver;
	 * under hctx->lock, which dispatch_request is called with.
	 */
	struct rq_list rqs[KYBER_NUM_DOMAINS];
	unsigned int cur_domain;
	unsigned int batching;

	struct kyber_ctx_queue *kcqs;
	unsigned int nr_kcqs;
	atomic_uint kcq_pending[KYBER_NUM_DOMAINS]; /* requests in kcqs */
	atomic_uint nr_queued; /* requests in kcqs and rqs */

	/* Waiting for a token of the domain: run the hctx when one frees. */
	atomic_bool waiting[KYBER_NUM_DOMAINS];
};

/* elv_priv[0] says whether the request holds a token of its domain. */
#define KYBER_HAS_TOKEN ((void *)1)

static unsigned int kyber_sched_domain(enum req_op op)
{
	switch (op) {
	case REQ_OP_READ:
		return KYBER_READ;
	case REQ_OP_WRITE:
		return KYBER_WRITE;
	case REQ_OP_DISCARD:
		return KYBER_DISCARD;
	default:
		return KYBER_OTHER;
	}
}

static struct kyber_queue_data *kqd_of(struct mq_queue *q)
{
	return q->elevator->elevator_data;
}

/* ------------------------------------------------------------------ */
/* tokens                                                              */

static bool kyber_token_get(struct kyber_tokens *t)
{
	unsigned int busy = atomic_load(&t->busy);

	while (busy < atomic_load(&t->depth))
		if (atomic_compare_exchange_weak(&t->busy, &busy, busy + 1))
			return true;
	return false;
}

/* Run every hctx that waits for a token of the domain (kyber_domain_wake) */
static void kyber_domain_wake(struct kyber_queue_data *kqd,
			      unsigned int sched_domain)
{
	struct kyber_tokens *t = &kqd->domain_tokens[sched_domain];
	struct mq_queue *q = kqd->q;
	struct mq_hw_ctx *hctx;
	unsigned int i;

	if (!atomic_load(&t->nr_waiters))
		return;
	queue_for_each_hw_ctx (q, hctx, i) {
		struct kyber_hctx_data *khd = hctx->sched_data;

		if (khd &&
		    atomic_exchange(&khd->waiting[sched_domain], false)) {
			atomic_fetch_sub(&t->nr_waiters, 1);
			mq_run_hw_queue(hctx, true);
		}
	}
}

static void kyber_token_put(struct kyber_queue_data *kqd,
			    unsigned int sched_domain)
{
	atomic_fetch_sub(&kqd->domain_tokens[sched_domain].busy, 1);
	kyber_domain_wake(kqd, sched_domain);
}

/*
 * Take a token of the current domain.  On failure, make sure the hctx runs
 * again when one frees: mark it waiting, then try once more, since a token
 * may have been freed before the mark was seen (the waker reads the mark
 * after giving its token back; both are sequentially consistent).
 */
static bool kyber_get_domain_token(struct kyber_queue_data *kqd,
				   struct kyber_hctx_data *khd)
{
	unsigned int sched_domain = khd->cur_domain;
	struct kyber_tokens *t = &kqd->domain_tokens[sched_domain];

	if (kyber_token_get(t))
		return true;
	if (!atomic_exchange(&khd->waiting[sched_domain], true))
		atomic_fetch_add(&t->nr_waiters, 1);
	if (!kyber_token_get(t))
		return false;
	/* Got one after all: leave the wait queue so wakeups go elsewhere. */
	if (atomic_exchange(&khd->waiting[sched_domain], false))
		atomic_fetch_sub(&t->nr_waiters, 1);
	return true;
}

static void rq_clear_domain_token(struct kyber_queue_data *kqd,
				  struct request *rq)
{
	if (rq->elv_priv[0] != KYBER_HAS_TOKEN)
		return;
	rq->elv_priv[0] = NULL;
	kyber_token_put(kqd, kyber_sched_domain(rq->op));
}

static void kyber_resize_domain(struct kyber_queue_data *kqd,
				unsigned int sched_domain, unsigned int depth)
{
	struct kyber_tokens *t = &kqd->domain_tokens[sched_domain];
	unsigned int orig = atomic_load(&t->depth);

	if (depth < 1)
		depth = 1;
	if (depth > kqd->max_depth[sched_domain])
		depth = kqd->max_depth[sched_domain];
	if (depth == orig)
		return;
	/*
	 * Like sbitmap_queue_resize, no wakeup: an hctx waits only while
	 * every token is held, and the next one given back runs it.  (The
	 * timer must not touch the hctxs: exit_hctx frees their data before
	 * exit_sched stops the timer.)
	 */
	atomic_store(&t->depth, depth);
	pr_debug("%s: kyber: %s depth %u -> %u", kqd->q->name,
		 kyber_domain_names[sched_domain], orig, depth);
}

/* ------------------------------------------------------------------ */
/* latency histograms and the timer                                    */

static void flush_latency_buckets(struct kyber_queue_data *kqd,
				  unsigned int sched_domain, unsigned int type)
{
	unsigned int *buckets = kqd->latency_buckets[sched_domain][type];
	atomic_uint *cpu_buckets = kqd->cpu_buckets[sched_domain][type];
	unsigned int bucket;

	for (bucket = 0; bucket < KYBER_LATENCY_BUCKETS; bucket++)
		buckets[bucket] += atomic_exchange(&cpu_buckets[bucket], 0);
}

/*
 * The bucket holding the given percentile, or -1 without enough samples:
 * 500, or one second since the first sample, whichever comes first.
 */
static int calculate_percentile(struct kyber_queue_data *kqd,
				unsigned int sched_domain, unsigned int type,
				unsigned int percentile, uint64_t now)
{
	unsigned int *buckets = kqd->latency_buckets[sched_domain][type];
	unsigned int bucket, samples = 0, percentile_samples;

	for (bucket = 0; bucket < KYBER_LATENCY_BUCKETS; bucket++)
		samples += buckets[bucket];
	if (!samples)
		return -1;

	if (!kqd->latency_timeout[sched_domain])
		kqd->latency_timeout[sched_domain] =
			now + KYBER_SAMPLE_TIMEOUT_NS;
	if (samples < KYBER_MIN_SAMPLES &&
	    now < kqd->latency_timeout[sched_domain])
		return -1;
	kqd->latency_timeout[sched_domain] = 0;

	percentile_samples = (samples * percentile + 99) / 100;
	for (bucket = 0; bucket < KYBER_LATENCY_BUCKETS - 1; bucket++) {
		if (buckets[bucket] >= percentile_samples)
			break;
		percentile_samples -= buckets[bucket];
	}
	memset(buckets, 0, sizeof(kqd->latency_buckets[sched_domain][type]));
	pr_debug("%s: kyber: %s %s p%u in bucket %u/%u of %u samples",
		 kqd->q->name, kyber_domain_names[sched_domain],
		 type == KYBER_TOTAL_LATENCY ? "total" : "I/O", percentile,
		 bucket + 1, KYBER_GOOD_BUCKETS, samples);
	return (int)bucket;
}

static uint64_t kyber_now(const struct kyber_queue_data *kqd)
{
	if (kqd->test_clock)
		return atomic_load(kqd->test_clock);
	return mq_now_ns();
}

static void kyber_timer_fn(struct kyber_queue_data *kqd)
{
	uint64_t now = kyber_now(kqd);
	unsigned int sched_domain;
	bool bad = false;

	atomic_fetch_add(&kqd->timer_runs, 1);
	for (sched_domain = 0; sched_domain < KYBER_OTHER; sched_domain++) {
		flush_latency_buckets(kqd, sched_domain, KYBER_TOTAL_LATENCY);
		flush_latency_buckets(kqd, sched_domain, KYBER_IO_LATENCY);
	}

	/*
	 * A high I/O latency in any domain means the device is congested.
	 * The p90, so that a few outliers do not count.
	 */
	for (sched_domain = 0; sched_domain < KYBER_OTHER; sched_domain++) {
		int p90 = calculate_percentile(kqd, sched_domain,
					       KYBER_IO_LATENCY, 90, now);

		if (p90 >= KYBER_GOOD_BUCKETS)
			bad = true;
	}

	/*
	 * Under congestion, throttle every domain with good latencies;
	 * either way, ease off domains with bad ones.  The new depth scales
	 * with the p99 against the target: a p99 at 3/4 of the target gives
	 * 3/4 of the depth, twice the target gives twice the depth.
	 */
	for (sched_domain = 0; sched_domain < KYBER_OTHER; sched_domain++) {
		unsigned int orig_depth, depth;
		int p99;

		p99 = calculate_percentile(kqd, sched_domain,
					   KYBER_TOTAL_LATENCY, 99, now);
		/*
		 * Domains do not reach enough samples in the same window:
		 * remember a p99 for the next congestion, and once it has
		 * been used, wait for new data before throttling again.
		 */
		if (bad) {
			if (p99 < 0)
				p99 = kqd->domain_p99[sched_domain];
			kqd->domain_p99[sched_domain] = -1;
		} else if (p99 >= 0) {
			kqd->domain_p99[sched_domain] = p99;
		}
		if (p99 < 0)
			continue;

		if (bad || p99 >= KYBER_GOOD_BUCKETS) {
			orig_depth = atomic_load(
				&kqd->domain_tokens[sched_domain].depth);
			depth = (orig_depth * (unsigned int)(p99 + 1)) >>
				KYBER_LATENCY_SHIFT;
			kyber_resize_domain(kqd, sched_domain, depth);
		}
	}
}

static void *kyber_timer_thread(void *arg)
{
	struct kyber_queue_data *kqd = arg;
	struct timespec ts;
	uint64_t now;

	pthread_mutex_lock(&kqd->timer_lock);
	for (;;) {
		while (!kqd->timer_exit && !kqd->timer_expires)
			pthread_cond_wait(&kqd->timer_cond, &kqd->timer_lock);
		if (kqd->timer_exit)
			break;
		now = mq_now_ns();
		if (now < kqd->timer_expires) {
			ts.tv_sec = (time_t)(kqd->timer_expires / NSEC_PER_SEC);
			ts.tv_nsec = (long)(kqd->timer_expires % NSEC_PER_SEC);
			pthread_cond_timedwait(&kqd->timer_cond,
					       &kqd->timer_lock, &ts);
			continue;
		}
		kqd->timer_expires = 0;
		atomic_store(&kqd->timer_armed, false);
		pthread_mutex_unlock(&kqd->timer_lock);
		kyber_timer_fn(kqd);
		pthread_mutex_lock(&kqd->timer_lock);
	}
	pthread_mutex_unlock(&kqd->timer_lock);
	return NULL;
}

/* timer_reduce(jiffies + HZ / 10): arm unless already armed (sooner). */
static void kyber_timer_arm(struct kyber_queue_data *kqd, uint64_t now)
{
	if (kqd->test_clock) {
		uint64_t expires = atomic_load(&kqd->test_timer_expires);

		if (!expires)
			atomic_compare_exchange_strong(&kqd->test_timer_expires,
						       &expires,
						       now + KYBER_TIMER_NS);
		else if (now >= expires &&
			 atomic_compare_exchange_strong(
				 &kqd->test_timer_expires, &expires, 0))
			kyber_timer_fn(kqd);
		return;
	}
	if (atomic_load(&kqd->timer_armed))
		return;
	pthread_mutex_lock(&kqd->timer_lock);
	if (!kqd->timer_expires) {
		kqd->timer_expires = now + KYBER_TIMER_NS;
		atomic_store(&kqd->timer_armed, true);
		pthread_cond_signal(&kqd->timer_cond);
	}
	pthread_mutex_unlock(&kqd->timer_lock);
}

static void add_latency_sample(struct kyber_queue_data *kqd,
			       unsigned int sched_domain, unsigned int type,
			       uint64_t target, uint64_t latency)
{
	unsigned int bucket = 0;
	uint64_t divisor, b;

	if (latency > 0) {
		divisor = target >> KYBER_LATENCY_SHIFT;
		if (!divisor)
			divisor = 1;
		b = (latency - 1) / divisor;
		bucket = b < KYBER_LATENCY_BUCKETS - 1
				 ? (unsigned int)b
				 : KYBER_LATENCY_BUCKETS - 1;
	}
	atomic_fetch_add(&kqd->cpu_buckets[sched_domain][type][bucket], 1);
}

static void kyber_completed_request(struct request *rq, uint64_t now)
{
	struct kyber_queue_data *kqd = kqd_of(rq->q);
	unsigned int sched_domain = kyber_sched_domain(rq->op);
	uint64_t target, start = rq->start_time_ns;
	uint64_t io_start = rq->io_start_time_ns;

	if (sched_domain == KYBER_OTHER)
		return;
	if (kqd->test_clock) {
		if (!(rq->rq_flags & RQF_ELVPRIV))
			return; /* no stamps */
		now = kyber_now(kqd);
		start = (uint64_t)(uintptr_t)rq->elv_priv[1];
		io_start = rq->fifo_time;
	}
	target = atomic_load(&kqd->latency_targets[sched_domain]);
	add_latency_sample(kqd, sched_domain, KYBER_TOTAL_LATENCY, target,
			   now > start ? now - start : 0);
	/* A request failed before it started has no I/O latency. */
	if (io_start)
		add_latency_sample(kqd, sched_domain, KYBER_IO_LATENCY, target,
				   now > io_start ? now - io_start : 0);
	kyber_timer_arm(kqd, now);
}

/* ------------------------------------------------------------------ */
/* set-up and tear-down                                                */

static void kyber_timer_stop(struct kyber_queue_data *kqd)
{
	pthread_mutex_lock(&kqd->timer_lock);
	kqd->timer_exit = true;
	pthread_cond_signal(&kqd->timer_cond);
	pthread_mutex_unlock(&kqd->timer_lock);
	pthread_join(kqd->timer_thread, NULL);
}

static void kyber_free_kqd(struct kyber_queue_data *kqd)
{
	pthread_cond_destroy(&kqd->timer_cond);
	pthread_mutex_destroy(&kqd->timer_lock);
	free(kqd);
}

static int kyber_init_sched(struct mq_queue *q, struct elevator_type *e)
{
	struct kyber_queue_data *kqd;
	pthread_condattr_t attr;
	char name[16];
	unsigned int i;
	int err;

	kqd = calloc(1, sizeof(*kqd));
	if (!kqd)
		return ENOMEM;
	kqd->q = q;
	for (i = 0; i < KYBER_NUM_DOMAINS; i++) {
		kqd->max_depth[i] = kyber_depth[i];
		atomic_init(&kqd->domain_tokens[i].depth, kqd->max_depth[i]);
	}
	for (i = 0; i < KYBER_OTHER; i++) {
		kqd->domain_p99[i] = -1;
		atomic_init(&kqd->latency_targets[i], kyber_latency_targets[i]);
	}
	atomic_init(&kqd->async_depth,
		    q->nr_requests * KYBER_ASYNC_PERCENT / 100u);

	err = pthread_condattr_init(&attr);
	if (err) {
		free(kqd);
		return err;
	}
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	err = pthread_cond_init(&kqd->timer_cond, &attr);
	pthread_condattr_destroy(&attr);
	if (err) {
		free(kqd);
		return err;
	}
	pthread_mutex_init(&kqd->timer_lock, NULL);
	err = pthread_create(&kqd->timer_thread, NULL, kyber_timer_thread, kqd);
	if (err) {
		pr_err("%s: kyber: cannot start the timer thread: %s", q->name,
		       strerror(err));
		kyber_free_kqd(kqd);
		return err;
	}
	/* The kernel's limit for thread names is 15 characters. */
	snprintf(name, sizeof(name), "kyber/%.9s", q->name);
	pthread_setname_np(kqd->timer_thread, name);

	q->elevator->elevator_data = kqd;
	return 0;
}

static void kyber_exit_sched(struct elevator_queue *eq)
{
	struct kyber_queue_data *kqd = eq->elevator_data;
	unsigned int i;

	kyber_timer_stop(kqd);
	for (i = 0; i < KYBER_NUM_DOMAINS; i++)
		if (atomic_load(&kqd->domain_tokens[i].busy))
			pr_warn("%s: kyber: %u %s tokens still held at exit",
				kqd->q->name,
				atomic_load(&kqd->domain_tokens[i].busy),
				kyber_domain_names[i]);
	kyber_free_kqd(kqd);
	eq->elevator_data = NULL;
}

static void kyber_depth_updated(struct mq_hw_ctx *hctx)
{
	struct kyber_queue_data *kqd = kqd_of(hctx->queue);

	atomic_store(&kqd->async_depth,
		     hctx->queue->nr_requests * KYBER_ASYNC_PERCENT / 100u);
}

static int kyber_init_hctx(struct mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	struct kyber_hctx_data *khd;
	unsigned int i, d;

	khd = calloc(1, sizeof(*khd));
	if (!khd)
		return ENOMEM;
	khd->nr_kcqs = hctx->nr_ctx;
	khd->kcqs = calloc(khd->nr_kcqs ? khd->nr_kcqs : 1, sizeof(*khd->kcqs));
	if (!khd->kcqs) {
		free(khd);
		return ENOMEM;
	}
	for (i = 0; i < khd->nr_kcqs; i++) {
		pthread_mutex_init(&khd->kcqs[i].lock, NULL);
		for (d = 0; d < KYBER_NUM_DOMAINS; d++)
			TAILQ_INIT(&khd->kcqs[i].rq_list[d]);
	}
	for (d = 0; d < KYBER_NUM_DOMAINS; d++)
		TAILQ_INIT(&khd->rqs[d]);
	hctx->sched_data = khd;
	kyber_depth_updated(hctx);
	return 0;
}

static void kyber_exit_hctx(struct mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	struct kyber_hctx_data *khd = hctx->sched_data;
	unsigned int i;

	if (!khd)
		return;
	for (i = 0; i < khd->nr_kcqs; i++)
		pthread_mutex_destroy(&khd->kcqs[i].lock);
	free(khd->kcqs);
	free(khd);
	hctx->sched_data = NULL;
}

/* ------------------------------------------------------------------ */
/* the request path                                                    */

/* The kcq of a software queue: ctx->index_hw in Linux. */
static struct kyber_ctx_queue *
kcq_of(struct mq_hw_ctx *hctx, struct kyber_hctx_data *khd, struct mq_ctx *ctx)
{
	unsigned int i = ctx->cpu / hctx->queue->nr_hw_queues;

	if (i < hctx->nr_ctx && hctx->ctxs[i] == ctx)
		return &khd->kcqs[i];
	for (i = 0; i < hctx->nr_ctx; i++)
		if (hctx->ctxs[i] == ctx)
			return &khd->kcqs[i];
	return &khd->kcqs[0]; /* not reached: every ctx maps to its hctx */
}

static void kyber_limit_depth(struct mq_hw_ctx *hctx, const struct bio *bio,
			      unsigned int *depth)
{
	struct kyber_queue_data *kqd = kqd_of(hctx->queue);
	unsigned int async_depth;

	/* Scheduler tags are the queueing tokens; async ones are limited. */
	if (op_is_sync(bio->bi_op, bio->bi_flags))
		return;
	async_depth = atomic_load(&kqd->async_depth);
	if (async_depth < *depth)
		*depth = async_depth ? async_depth : 1;
}

static bool kyber_bio_merge(struct mq_hw_ctx *hctx, struct bio *bio)
{
	struct kyber_hctx_data *khd = hctx->sched_data;
	struct kyber_ctx_queue *kcq = kcq_of(hctx, khd, bio->bi_ctx);
	unsigned int sched_domain = kyber_sched_domain(bio->bi_op);
	bool merged;

	pthread_mutex_lock(&kcq->lock);
	merged = mq_bio_list_merge(hctx->queue, &kcq->rq_list[sched_domain],
				   bio);
	pthread_mutex_unlock(&kcq->lock);
	return merged;
}

static void kyber_prepare_request(struct request *rq)
{
	struct kyber_queue_data *kqd = kqd_of(rq->q);

	rq->elv_priv[0] = NULL;
	if (kqd->test_clock)
		rq->elv_priv[1] = (void *)(uintptr_t)kyber_now(kqd);
}

static void kyber_insert_requests(struct mq_hw_ctx *hctx, struct rq_list *list,
				  bool at_head)
{
	struct kyber_hctx_data *khd = hctx->sched_data;
	struct request *rq;

	while ((rq = TAILQ_FIRST(list))) {
		unsigned int sched_domain = kyber_sched_domain(rq->op);
		struct kyber_ctx_queue *kcq;

		TAILQ_REMOVE(list, rq, queuelist);
		if (at_head || !(rq->rq_flags & RQF_ELVPRIV)) {
			/*
			 * At the head: ahead of everything of its domain,
			 * flushed or not.  Requests the driver allocated
			 * itself skip the kcqs too, so that every request
			 * flushed from them needs a token.  The flushed
			 * lists belong to dispatch, under hctx->lock.
			 */
			pthread_mutex_lock(&hctx->lock);
			if (at_head)
				TAILQ_INSERT_HEAD(&khd->rqs[sched_domain], rq,
						  queuelist);
			else
				TAILQ_INSERT_TAIL(&khd->rqs[sched_domain], rq,
						  queuelist);
			atomic_fetch_add(&khd->nr_queued, 1);
			pthread_mutex_unlock(&hctx->lock);
			continue;
		}
		kcq = kcq_of(hctx, khd, rq->mq_ctx);
		pthread_mutex_lock(&kcq->lock);
		TAILQ_INSERT_TAIL(&kcq->rq_list[sched_domain], rq, queuelist);
		atomic_fetch_add(&khd->kcq_pending[sched_domain], 1);
		atomic_fetch_add(&khd->nr_queued, 1);
		pthread_mutex_unlock(&kcq->lock);
	}
}

/* Also the requeue hook: the token goes back until it is dispatched again */
static void kyber_finish_request(struct request *rq)
{
	rq_clear_domain_token(kqd_of(rq->q), rq);
}

/* Move every kcq's requests of the domain to the flushed list. */
static void kyber_flush_busy_kcqs(struct kyber_hctx_data *khd,
				  unsigned int sched_domain,
				  struct rq_list *list)
{
	unsigned int i, n;

	for (i = 0;
	     i < khd->nr_kcqs && atomic_load(&khd->kcq_pending[sched_domain]);
	     i++) {
		struct kyber_ctx_queue *kcq = &khd->kcqs[i];
		struct request *rq;

		pthread_mutex_lock(&kcq->lock);
		n = 0;
		TAILQ_FOREACH (rq, &kcq->rq_list[sched_domain], queuelist)
			n++;
		TAILQ_CONCAT(list, &kcq->rq_list[sched_domain], queuelist);
		atomic_fetch_sub(&khd->kcq_pending[sched_domain], n);
		pthread_mutex_unlock(&kcq->lock);
	}
}

/*
 * A request of the current domain with a token, or NULL if there is none
 * or no token.  Requests stay in the kcqs, where they can still merge,
 * until a token is in hand.  Requests the driver allocated itself carry no
 * elevator data and are never freed through finish_request, so they pass
 * without a token; they never sit in the kcqs (kyber_insert_requests).
 * Nothing here may give a token back: that runs hctxs, and for a BLOCKING
 * set running one takes its lock, while this one's is held.
 */
static struct request *kyber_dispatch_cur_domain(struct kyber_queue_data *kqd,
						 struct kyber_hctx_data *khd)
{
	unsigned int sched_domain = khd->cur_domain;
	struct rq_list *rqs = &khd->rqs[sched_domain];
	struct request *rq = TAILQ_FIRST(rqs);

	if (rq) {
		if (rq->rq_flags & RQF_ELVPRIV) {
			if (!kyber_get_domain_token(kqd, khd))
				return NULL;
			rq->elv_priv[0] = KYBER_HAS_TOKEN;
		}
	} else {
		if (!atomic_load(&khd->kcq_pending[sched_domain]) ||
		    !kyber_get_domain_token(kqd, khd))
			return NULL;
		kyber_flush_busy_kcqs(khd, sched_domain, rqs);
		rq = TAILQ_FIRST(rqs);
		rq->elv_priv[0] = KYBER_HAS_TOKEN;
	}
	khd->batching++;
	TAILQ_REMOVE(rqs, rq, queuelist);
	if (kqd->test_clock)
		rq->fifo_time = kyber_now(kqd);
	atomic_fetch_sub(&khd->nr_queued, 1);
	return rq;
}

/* Called with hctx->lock held, which serialises everything in khd->rqs. */
static struct request *kyber_dispatch_request(struct mq_hw_ctx *hctx)
{
	struct kyber_queue_data *kqd = kqd_of(hctx->queue);
	struct kyber_hctx_data *khd = hctx->sched_data;
	struct request *rq;
	unsigned int i;

	/* Carry on with the current batch while we are entitled to it. */
	if (khd->batching < kyber_batch_size[khd->cur_domain]) {
		rq = kyber_dispatch_cur_domain(kqd, khd);
		if (rq)
			return rq;
	}

	/*
	 * The batch is over, its domain is empty or out of tokens: start
	 * another, round robin, back to the same domain if no other has
	 * requests and tokens.
	 */
	khd->batching = 0;
	for (i = 0; i < KYBER_NUM_DOMAINS; i++) {
		khd->cur_domain = (khd->cur_domain + 1) % KYBER_NUM_DOMAINS;
		rq = kyber_dispatch_cur_domain(kqd, khd);
		if (rq)
			return rq;
	}
	return NULL;
}

static bool kyber_has_work(struct mq_hw_ctx *hctx)
{
	struct kyber_hctx_data *khd = hctx->sched_data;

	return atomic_load(&khd->nr_queued) != 0;
}

/* ------------------------------------------------------------------ */
/* tunables                                                            */

static ssize_t kyber_lat_show(struct elevator_queue *eq, unsigned int domain,
			      char *buf, size_t len)
{
	struct kyber_queue_data *kqd = eq->elevator_data;

	return snprintf(buf, len, "%" PRIu64,
			atomic_load(&kqd->latency_targets[domain]));
}

/* kstrtoull, in the syntax every scheduler's tunables share. */
static int kyber_lat_store(struct elevator_queue *eq, unsigned int domain,
			   const char *value)
{
	struct kyber_queue_data *kqd = eq->elevator_data;
	int64_t nsec;
	int err = mq_attr_number(value, 0, INT64_MAX, &nsec);

	if (err)
		return err;
	atomic_store(&kqd->latency_targets[domain], (uint64_t)nsec);
	return 0;
}

static ssize_t kyber_read_lat_show(struct elevator_queue *eq, char *buf,
				   size_t len)
{
	return kyber_lat_show(eq, KYBER_READ, buf, len);
}

static int kyber_read_lat_store(struct elevator_queue *eq, const char *value)
{
	return kyber_lat_store(eq, KYBER_READ, value);
}

static ssize_t kyber_write_lat_show(struct elevator_queue *eq, char *buf,
				    size_t len)
{
	return kyber_lat_show(eq, KYBER_WRITE, buf, len);
}

static int kyber_write_lat_store(struct elevator_queue *eq, const char *value)
{
	return kyber_lat_store(eq, KYBER_WRITE, value);
}

static const struct elv_fs_entry kyber_sched_attrs[] = {
	{"read_lat_nsec", kyber_read_lat_show, kyber_read_lat_store},
	{"write_lat_nsec", kyber_write_lat_show, kyber_write_lat_store},
	{NULL},
};

const struct elevator_type kyber_elv = {
	.elevator_name = "kyber",
	.ops =
		{
			.init_sched = kyber_init_sched,
			.exit_sched = kyber_exit_sched,
			.init_hctx = kyber_init_hctx,
			.exit_hctx = kyber_exit_hctx,
			.depth_updated = kyber_depth_updated,
			.limit_depth = kyber_limit_depth,
			.bio_merge = kyber_bio_merge,
			.prepare_request = kyber_prepare_request,
			.insert_requests = kyber_insert_requests,
			.finish_request = kyber_finish_request,
			.requeue_request = kyber_finish_request,
			.completed_request = kyber_completed_request,
			.dispatch_request = kyber_dispatch_request,
			.has_work = kyber_has_work,
		},
	.elevator_attrs = kyber_sched_attrs,
};

/* ------------------------------------------------------------------ */
/* debugfs                                                             */

static struct kyber_queue_data *kyber_kqd(struct mq_queue *q)
{
	if (!q->elevator || q->elevator->type != &kyber_elv)
		return NULL;
	return q->elevator->elevator_data;
}

unsigned int kyber_domain_depth(struct mq_queue *q, unsigned int domain)
{
	struct kyber_queue_data *kqd = kyber_kqd(q);

	if (!kqd || domain >= KYBER_NUM_DOMAINS)
		return 0;
	return atomic_load(&kqd->domain_tokens[domain].depth);
}

unsigned int kyber_domain_busy(struct mq_queue *q, unsigned int domain)
{
	struct kyber_queue_data *kqd = kyber_kqd(q);

	if (!kqd || domain >= KYBER_NUM_DOMAINS)
		return 0;
	return atomic_load(&kqd->domain_tokens[domain].busy);
}

unsigned int kyber_async_depth(struct mq_queue *q)
{
	struct kyber_queue_data *kqd = kyber_kqd(q);

	return kqd ? atomic_load(&kqd->async_depth) : 0;
}

unsigned long kyber_timer_runs(struct mq_queue *q)
{
	struct kyber_queue_data *kqd = kyber_kqd(q);

	return kqd ? atomic_load(&kqd->timer_runs) : 0;
}

int kyber_set_clock(struct mq_queue *q, const _Atomic uint64_t *clock)
{
	struct kyber_queue_data *kqd = kyber_kqd(q);

	if (!kqd)
		return ENOENT;
	kqd->test_clock = clock;
	atomic_store(&kqd->test_timer_expires, 0);
	return 0;
}
