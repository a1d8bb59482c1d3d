/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests for the null device (backends/null_blk), made through the
 * device layer and driven with bios.  Bios are waited on with a condition
 * variable; time is off (time_scale=0) except where a test is about time.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/device.h"
#include "backends/common/sparse.h"
#include "backends/null_blk/null_blk.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"

/* --- helpers -------------------------------------------------------- */

#define NULL_NEW(...)                                                          \
	({                                                                     \
		struct mq_device *__d;                                         \
		struct mq_err __e = {{0}};                                     \
		if (tdevice_create(&__d, &__e, "null", __VA_ARGS__, NULL))     \
			ck_abort_msg("create failed: %s", __e.msg);            \
		__d;                                                           \
	})

static struct nullb *disk_nullb(struct mq_device *d, unsigned int i)
{
	ck_assert_uint_lt(i, d->nr_disks);
	return d->disks[i]->private_data;
}

static struct mq_queue *disk_queue(struct mq_device *d, unsigned int i)
{
	ck_assert_uint_lt(i, d->nr_disks);
	return d->disks[i]->queue;
}

/* Bios in flight, counted down by their end_io. */
struct batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int pending;
	unsigned int errors;
	int last_status;
};

static void batch_init(struct batch *b)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->pending = 0;
	b->errors = 0;
	b->last_status = 0;
}

static void batch_destroy(struct batch *b)
{
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}

static void batch_end_io(struct bio *bio)
{
	struct batch *b = bio->bi_private;

	pthread_mutex_lock(&b->lock);
	if (bio->bi_status)
		b->errors++;
	b->last_status = bio->bi_status;
	b->pending--;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static void batch_submit(struct batch *b, struct mq_queue *q, unsigned int cpu,
			 struct bio *bio, enum req_op op, unsigned int flags,
			 uint64_t sector, uint32_t len, void *buf)
{
	bio_init(bio, op, sector, len, buf);
	bio->bi_flags = flags;
	bio->bi_submitter = cpu + 1;
	bio->bi_end_io = batch_end_io;
	bio->bi_private = b;
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	mq_submit_bio(mq_get_ctx(q, cpu), bio);
}

static void batch_wait(struct batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

/* This suite's names for helpers/tio.h. */
#define io(...)		tio_io(__VA_ARGS__)
#define fill(...)	tio_fill(__VA_ARGS__)
#define is_zero(...)	tio_all_zero(__VA_ARGS__)
#define round_trip(...) tio_round_trip(__VA_ARGS__)

/* Extents, collected. */
struct ext {
	uint64_t off, len;
	unsigned int type;
};

struct ext_list {
	struct ext e[64];
	unsigned int n;
};

static int ext_collect(void *arg, uint64_t off, uint64_t len, unsigned int type)
{
	struct ext_list *l = arg;

	/* merge neighbours of the same type */
	if (l->n && l->e[l->n - 1].type == type &&
	    l->e[l->n - 1].off + l->e[l->n - 1].len == off) {
		l->e[l->n - 1].len += len;
		return 0;
	}
	if (l->n == 64)
		return -1;
	l->e[l->n++] = (struct ext){off, len, type};
	return 0;
}

static void extents(struct mq_device *d, uint64_t off, uint64_t len,
		    struct ext_list *l)
{
	struct gendisk *disk = d->disks[0];

	l->n = 0;
	ck_assert_ptr_nonnull(disk->fops);
	ck_assert_int_eq(disk->fops->extents(disk, off, len, ext_collect, l),
			 0);
}

/* Is [off, off+len) all of one type? */
static bool ext_is(const struct ext_list *l, uint64_t off, uint64_t len,
		   unsigned int type)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		if (l->e[i].off <= off &&
		    l->e[i].off + l->e[i].len >= off + len)
			return l->e[i].type == type;
	return false;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- configuration -------------------------------------------------- */

/* What the default store, sparse RAM, holds: its pages, white-box. */
static uint64_t ram_allocated(struct media *m)
{
	ck_assert_str_eq(m->ops->name, "ram");
	return sparse_store_allocated(m->priv);
}

START_TEST(test_queue_mode_1_refused)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	ck_assert_int_eq(tdevice_create(&d, &e, "null", "queue_mode=1", NULL),
			 -1);
	ck_assert_ptr_null(d);
	ck_assert_msg(strstr(e.msg, "legacy IO path no longer available"), "%s",
		      e.msg);
	ck_assert_msg(strstr(e.msg, "queue_mode"), "%s", e.msg);
}
END_TEST

START_TEST(test_unknown_key_lists_accepted)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	ck_assert_int_eq(tdevice_create(&d, &e, "null", "bogus=1", NULL), -1);
	ck_assert_msg(strstr(e.msg, "bogus"), "%s", e.msg);
	ck_assert_msg(strstr(e.msg, "accepted"), "%s", e.msg);
	ck_assert_msg(strstr(e.msg, "memory_backed"), "%s", e.msg);
	ck_assert_msg(strstr(e.msg, "init_hctx"), "%s", e.msg);

	/* home_node is Linux's, and not ours */
	ck_assert_int_eq(tdevice_create(&d, &e, "null", "home_node=0", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "home_node"), "%s", e.msg);
}
END_TEST

START_TEST(test_bad_values)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	ck_assert_int_eq(tdevice_create(&d, &e, "null", "bs=1000", NULL), -1);
	ck_assert_msg(strstr(e.msg, "bs"), "%s", e.msg);
	ck_assert_int_eq(tdevice_create(&d, &e, "null", "bs=8192", NULL), -1);
	ck_assert_msg(strstr(e.msg, "bs"), "%s", e.msg);
	ck_assert_int_eq(
		tdevice_create(&d, &e, "null", "bs=4096", "size=6144", NULL),
		-1);
	ck_assert_msg(strstr(e.msg, "size"), "%s", e.msg);
	ck_assert_int_eq(tdevice_create(&d, &e, "null", "irqmode=3", NULL), -1);
	ck_assert_msg(strstr(e.msg, "irqmode"), "%s", e.msg);
	ck_assert_int_eq(tdevice_create(&d, &e, "null", "timeout=1,2", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "timeout"), "%s", e.msg);
	ck_assert_ptr_null(d);
}
END_TEST

START_TEST(test_init_hctx_fault)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	ck_assert_int_eq(tdevice_create(&d, &e, "null", "submit_queues=2",
					"init_hctx=1,100,0,1", NULL),
			 -1);
	ck_assert_ptr_null(d);
	ck_assert_msg(strstr(e.msg, "init_hctx fault"), "%s", e.msg);
}
END_TEST

START_TEST(test_defaults_and_disk)
{
	struct mq_device *d = NULL_NEW("rotational=1");
	struct gendisk *disk = d->disks[0];
	struct mq_queue *q = disk_queue(d, 0);
	struct nullb *nullb = disk_nullb(d, 0);
	struct ext_list l;

	ck_assert_uint_eq(d->nr_disks, 1);
	ck_assert_str_eq(disk->disk_name, "nullb0");
	ck_assert_str_eq(disk->description,
			 "null_blk nullb0 (not memory backed)");
	ck_assert_uint_eq(get_capacity(disk), (250ULL << 30) >> SECTOR_SHIFT);
	ck_assert(disk->features & DISK_MULTI_CONN);
	ck_assert(!(disk->features & DISK_FAST_ZERO));
	ck_assert_uint_eq(nullb->dev.irqmode, NULL_IRQ_SOFTIRQ);
	ck_assert_uint_eq(q->nr_hw_queues, 1);
	ck_assert_uint_eq(q->tag_set->queue_depth, 64);
	ck_assert(q->tag_set->flags & MQ_F_SHOULD_MERGE);
	ck_assert(!(q->tag_set->flags & (MQ_F_NO_SCHED | MQ_F_BLOCKING |
					 MQ_F_NO_SCHED_BY_DEFAULT)));
	ck_assert_uint_eq(q->limits.logical_block_size, 512);
	ck_assert_uint_eq(q->limits.max_sectors, 255);
	ck_assert_uint_eq(q->limits.max_segments, 128);
	ck_assert(q->limits.rotational);
	ck_assert(!q->limits.write_cache);
	ck_assert(!q->limits.fua);
	ck_assert_uint_eq(q->limits.max_discard_sectors, 0);
	ck_assert_uint_eq(q->limits.max_write_zeroes_sectors, 0);

	/* nothing is allocated, everything reads as zeroes */
	extents(d, 0, 250ULL << 30, &l);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_uint_eq(l.e[0].len, 250ULL << 30);
	ck_assert_uint_eq(l.e[0].type, MQ_EXTENT_HOLE | MQ_EXTENT_ZERO);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_flags_from_keys)
{
	struct mq_device *d;
	struct mq_queue *q;

	d = NULL_NEW("queue_mode=0", "submit_queues=3", "hw_queue_depth=8",
		     "bs=4096", "size=16M");
	q = disk_queue(d, 0);
	ck_assert(q->tag_set->flags & MQ_F_NO_SCHED);
	ck_assert(!(q->tag_set->flags & MQ_F_SHOULD_MERGE));
	ck_assert_uint_eq(q->nr_hw_queues, 3);
	ck_assert_uint_eq(q->tag_set->queue_depth, 8);
	ck_assert_uint_eq(q->limits.logical_block_size, 4096);
	ck_assert_uint_eq(q->limits.physical_block_size, 4096);
	ck_assert_uint_eq(get_capacity(d->disks[0]), 32768);
	{
		unsigned char buf[4096];

		fill(buf, sizeof(buf), 1);
		ck_assert_int_eq(io(q, 2, REQ_OP_WRITE, 0, 8, 4096, buf), 0);
		ck_assert_int_eq(io(q, 3, REQ_OP_READ, 0, 8, 4096, buf), 0);
		ck_assert(is_zero(buf, sizeof(buf)));
	}
	mq_device_destroy(d);

	d = NULL_NEW("no_sched=1", "blocking=1", "size=1G");
	q = disk_queue(d, 0);
	ck_assert(q->tag_set->flags & MQ_F_NO_SCHED_BY_DEFAULT);
	ck_assert(q->tag_set->flags & MQ_F_BLOCKING);
	ck_assert(q->tag_set->flags & MQ_F_SHOULD_MERGE);
	mq_device_destroy(d);
}
END_TEST

/* --- data ----------------------------------------------------------- */

START_TEST(test_irqmode_round_trip)
{
	/* _i is 0, 1, 2: none, softirq, timer */
	char irqmode[32];
	struct mq_device *d;
	struct mq_queue *q;
	struct nullb *nullb;
	unsigned int i;

	snprintf(irqmode, sizeof(irqmode), "irqmode=%d", _i);
	d = NULL_NEW("size=64M", "memory_backed=1", irqmode);
	q = disk_queue(d, 0);
	nullb = disk_nullb(d, 0);
	ck_assert_uint_eq(nullb->dev.irqmode, (unsigned int)_i);
	ck_assert_str_eq(d->disks[0]->description,
			 "null_blk nullb0 (memory backed)");
	ck_assert(d->disks[0]->features & DISK_FAST_ZERO);
	for (i = 0; i < 8; i++)
		round_trip(q, i % 4, i * 1000, 4096 * (i + 1), i);
	/* the last sectors of the device */
	round_trip(q, 0, (64ULL << 11) - 8, 4096, 99);
	mq_device_destroy(d);
}
END_TEST

/* irqmode=2 with real time: completions wait completion_nsec. */
START_TEST(test_irqmode_timer_real_time)
{
	struct mq_device *d =
		NULL_NEW("time_scale=1", "irqmode=2", "completion_nsec=2000000",
			 "memory_backed=1", "size=16M");
	double t0 = now_s();

	round_trip(disk_queue(d, 0), 0, 0, 8192, 3);
	ck_assert(now_s() - t0 >= 0.004); /* two I/Os of 2 ms each */
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_not_memory_backed_reads_zeroes)
{
	struct mq_device *d = NULL_NEW("size=64M");
	struct mq_queue *q = disk_queue(d, 0);
	unsigned char buf[8192];
	struct ext_list l;

	fill(buf, sizeof(buf), 5);
	ck_assert_int_eq(io(q, 0, REQ_OP_WRITE, 0, 16, sizeof(buf), buf), 0);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(io(q, 1, REQ_OP_READ, 0, 16, sizeof(buf), buf), 0);
	ck_assert(is_zero(buf, sizeof(buf)));
	ck_assert_int_eq(io(q, 0, REQ_OP_FLUSH, 0, 0, 0, NULL), 0);
	/* no discard without memory: the core refuses it */
	ck_assert_uint_eq(q->limits.max_discard_sectors, 0);

	extents(d, 0, 64 << 20, &l);
	ck_assert_uint_eq(l.n, 1);
	ck_assert(ext_is(&l, 0, 64 << 20, MQ_EXTENT_HOLE | MQ_EXTENT_ZERO));
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_out_of_range_is_eio)
{
	struct mq_device *d = NULL_NEW("size=1M", "memory_backed=1");
	unsigned char buf[4096];

	fill(buf, sizeof(buf), 1);
	ck_assert_int_eq(
		io(disk_queue(d, 0), 0, REQ_OP_WRITE, 0, 2046, 4096, buf), EIO);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_discard_frees)
{
	struct mq_device *d;
	struct mq_queue *q;
	struct nullb *nullb;
	unsigned char *buf = malloc(1 << 20);
	struct ext_list l;

	ck_assert_ptr_nonnull(buf);

	/* discard=1 without memory is ignored, as Linux does */
	d = NULL_NEW("size=64M", "discard=1");
	ck_assert_uint_eq(disk_queue(d, 0)->limits.max_discard_sectors, 0);
	mq_device_destroy(d);

	d = NULL_NEW("size=64M", "memory_backed=1", "discard=1");
	q = disk_queue(d, 0);
	nullb = disk_nullb(d, 0);
	ck_assert_uint_gt(q->limits.max_discard_sectors, 0);
	ck_assert_uint_gt(q->limits.max_write_zeroes_sectors, 0);

	fill(buf, 1 << 20, 7);
	ck_assert_int_eq(io(q, 0, REQ_OP_WRITE, 0, 2048, 1 << 20, buf), 0);
	ck_assert_uint_ge(ram_allocated(nullb->dev.data), 1 << 20);
	extents(d, 0, 64 << 20, &l);
	ck_assert(ext_is(&l, 1 << 20, 1 << 20, 0));
	ck_assert(ext_is(&l, 0, 1 << 20, MQ_EXTENT_HOLE | MQ_EXTENT_ZERO));

	ck_assert_int_eq(io(q, 0, REQ_OP_DISCARD, 0, 2048, 1 << 20, NULL), 0);
	ck_assert_uint_eq(ram_allocated(nullb->dev.data), 0);
	memset(buf, 0xff, 1 << 20);
	ck_assert_int_eq(io(q, 0, REQ_OP_READ, 0, 2048, 1 << 20, buf), 0);
	ck_assert(is_zero(buf, 1 << 20));
	extents(d, 0, 64 << 20, &l);
	ck_assert_uint_eq(l.n, 1);

	/* write zeroes: the same, without discard=1 being needed */
	round_trip(q, 1, 100, 65536, 8);
	ck_assert_int_eq(io(q, 1, REQ_OP_WRITE_ZEROES, 0, 100, 65536, NULL), 0);
	ck_assert_int_eq(io(q, 1, REQ_OP_READ, 0, 100, 65536, buf), 0);
	ck_assert(is_zero(buf, 65536));
	mq_device_destroy(d);

	/* memory backed without discard=1: no discard advertised */
	d = NULL_NEW("size=64M", "memory_backed=1");
	ck_assert_uint_eq(disk_queue(d, 0)->limits.max_discard_sectors, 0);
	mq_device_destroy(d);
	free(buf);
}
END_TEST

START_TEST(test_cache)
{
	struct mq_device *d = NULL_NEW("size=64M", "memory_backed=1",
				       "cache_size=1", "discard=1");
	struct mq_queue *q = disk_queue(d, 0);
	struct nullb *nullb = disk_nullb(d, 0);
	struct nullb_device *dev = &nullb->dev;
	unsigned char *w = malloc(4 << 20), *r = malloc(4 << 20);
	struct ext_list l;

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(r);
	ck_assert(q->limits.write_cache);
	ck_assert(q->limits.fua);

	/* a write stays in the cache, and reads see it there */
	fill(w, 65536, 11);
	ck_assert_int_eq(io(q, 0, REQ_OP_WRITE, 0, 1000, 65536, w), 0);
	ck_assert_uint_eq(dev->curr_cache, 65536);
	ck_assert_uint_eq(ram_allocated(dev->data), 0);
	ck_assert_int_eq(io(q, 1, REQ_OP_READ, 0, 1000, 65536, r), 0);
	ck_assert(memcmp(w, r, 65536) == 0);
	/* cached data counts as data */
	extents(d, 0, 64 << 20, &l);
	ck_assert(ext_is(&l, 1000 * 512, 65536, 0));
	ck_assert(ext_is(&l, 0, 1000 * 512 - 4096,
			 MQ_EXTENT_HOLE | MQ_EXTENT_ZERO));

	/* FLUSH writes it back */
	ck_assert_int_eq(io(q, 0, REQ_OP_FLUSH, 0, 0, 0, NULL), 0);
	ck_assert_uint_eq(dev->curr_cache, 0);
	ck_assert_uint_ge(ram_allocated(dev->data), 65536);
	memset(r, 0, 65536);
	ck_assert_int_eq(io(q, 1, REQ_OP_READ, 0, 1000, 65536, r), 0);
	ck_assert(memcmp(w, r, 65536) == 0);

	/* a FUA write bypasses the cache, and updates a cached copy */
	fill(w, 8192, 12);
	ck_assert_int_eq(io(q, 0, REQ_OP_WRITE, 0, 0, 4096, w), 0);
	ck_assert_uint_eq(dev->curr_cache, 4096);
	ck_assert_int_eq(io(q, 0, REQ_OP_WRITE, REQ_FUA, 0, 8192, w), 0);
	ck_assert_uint_eq(dev->curr_cache, 4096);
	ck_assert_int_eq(io(q, 0, REQ_OP_READ, 0, 0, 8192, r), 0);
	ck_assert(memcmp(w, r, 8192) == 0);

	/* discard drops cached pages too */
	ck_assert_int_eq(io(q, 0, REQ_OP_DISCARD, 0, 0, 8192, NULL), 0);
	ck_assert_uint_eq(dev->curr_cache, 0);
	ck_assert_int_eq(io(q, 0, REQ_OP_READ, 0, 0, 8192, r), 0);
	ck_assert(is_zero(r, 8192));

	/* over cache_size the oldest pages are written back */
	fill(w, 4 << 20, 13);
	ck_assert_int_eq(io(q, 2, REQ_OP_WRITE, 0, 8192, 1 << 20, w), 0);
	ck_assert_int_eq(
		io(q, 2, REQ_OP_WRITE, 0, 8192 + 2048, 1 << 20, w + (1 << 20)),
		0);
	ck_assert_int_eq(
		io(q, 2, REQ_OP_WRITE, 0, 8192 + 4096, 2 << 20, w + (2 << 20)),
		0);
	ck_assert_uint_le(dev->curr_cache, 1 << 20);
	ck_assert_uint_gt(dev->curr_cache, 0);
	ck_assert_uint_ge(ram_allocated(dev->data), 3 << 20);
	memset(r, 0, 4 << 20);
	ck_assert_int_eq(io(q, 3, REQ_OP_READ, 0, 8192, 1 << 20, r), 0);
	ck_assert_int_eq(
		io(q, 3, REQ_OP_READ, 0, 8192 + 2048, 3 << 20, r + (1 << 20)),
		0);
	ck_assert(memcmp(w, r, 4 << 20) == 0);
	ck_assert_int_eq(mq_device_sync(d), 0);
	ck_assert_uint_eq(dev->curr_cache, 0);

	mq_device_destroy(d);
	free(w);
	free(r);
}
END_TEST

/* cache_size means nothing without memory, as in Linux */
START_TEST(test_cache_needs_memory)
{
	struct mq_device *d = NULL_NEW("size=64M", "cache_size=16");

	ck_assert(!disk_queue(d, 0)->limits.write_cache);
	mq_device_destroy(d);
}
END_TEST

/* --- tag sets and dispatch ------------------------------------------ */

/*
 * A worker keeps WORKER_DEPTH bios in flight: a batch of writes to its own
 * sectors, then reads of them, compared.  Failures are counted for the
 * main thread to check; nothing is asserted off the test's thread.
 */
#define WORKER_DEPTH  8
#define WORKER_ROUNDS 25
#define WORKER_MAX    16384

struct worker {
	struct mq_queue *q;
	unsigned int cpu;
	unsigned int seed;
	unsigned int ios, errors, mismatches;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned char *wb = malloc(WORKER_DEPTH * WORKER_MAX);
	unsigned char *rb = malloc(WORKER_DEPTH * WORKER_MAX);
	struct bio bios[WORKER_DEPTH];
	struct batch b;
	unsigned int r, k;

	if (!wb || !rb) {
		w->errors++;
		goto out;
	}
	for (r = 0; r < WORKER_ROUNDS; r++) {
		for (int pass = 0; pass < 2; pass++) {
			batch_init(&b);
			if (pass)
				memset(rb, 0xaa, WORKER_DEPTH * WORKER_MAX);
			for (k = 0; k < WORKER_DEPTH; k++) {
				uint32_t len = 4096 * (1 + (r + k) % 4);
				uint64_t sector =
					(uint64_t)(w->cpu * WORKER_DEPTH + k) *
					(WORKER_MAX >> SECTOR_SHIFT);
				unsigned char *buf =
					(pass ? rb : wb) + k * WORKER_MAX;

				if (!pass)
					fill(buf, len, w->seed + r * 64 + k);
				batch_submit(&b, w->q, w->cpu, &bios[k],
					     pass ? REQ_OP_READ : REQ_OP_WRITE,
					     0, sector, len, buf);
			}
			batch_wait(&b);
			w->ios += WORKER_DEPTH;
			w->errors += b.errors;
			batch_destroy(&b);
		}
		for (k = 0; k < WORKER_DEPTH; k++)
			if (memcmp(wb + k * WORKER_MAX, rb + k * WORKER_MAX,
				   4096 * (1 + (r + k) % 4)))
				w->mismatches++;
	}
out:
	free(wb);
	free(rb);
	return NULL;
}

static void check_worker(const struct worker *w)
{
	ck_assert_msg(w->errors == 0 && w->mismatches == 0 &&
			      w->ios == 2 * WORKER_DEPTH * WORKER_ROUNDS,
		      "worker %u: %u I/Os, %u errors, %u mismatches", w->cpu,
		      w->ios, w->errors, w->mismatches);
}

/*
 * Two disks on one tag set of 4 tags, without a scheduler, so that a bio
 * takes its driver tag when it is submitted.  First the pool is exhausted for
 * certain: with the hw queues stopped nothing completes, so 12 bios (apart,
 * so none merges) take all 4 tags and the rest wait; started again, all
 * complete.  Then four workers, two a disk, keep 32 bios in flight over the 4
 * tags.
 */
START_TEST(test_shared_tags)
{
	struct mq_device *d = NULL_NEW(
		"size=64M", "memory_backed=1", "nr_devices=2", "shared_tags=1",
		"hw_queue_depth=4", "irqmode=1", "scheduler=none");
	static unsigned char bufs[12][4096], back[4096];
	struct bio bios[12];
	struct worker w[4];
	struct batch b;
	pthread_t t[4];
	unsigned int i, held;

	ck_assert_uint_eq(d->nr_disks, 2);
	ck_assert_str_eq(d->disks[0]->disk_name, "nullb0");
	ck_assert_str_eq(d->disks[1]->disk_name, "nullb1");
	ck_assert_ptr_eq(disk_queue(d, 0)->tag_set, disk_queue(d, 1)->tag_set);
	ck_assert(disk_queue(d, 0)->tag_set->flags & MQ_F_TAG_SHARED);
	ck_assert_ptr_ne(disk_nullb(d, 0)->dev.data,
			 disk_nullb(d, 1)->dev.data);

	mq_stop_hw_queues(disk_queue(d, 0));
	mq_stop_hw_queues(disk_queue(d, 1));
	batch_init(&b);
	for (i = 0; i < 12; i++) {
		fill(bufs[i], sizeof(bufs[i]), 500 + i);
		batch_submit(&b, disk_queue(d, i % 2), 0, &bios[i],
			     REQ_OP_WRITE, 0, 16 * (i / 2), sizeof(bufs[i]),
			     bufs[i]);
	}
	held = atomic_load(&disk_queue(d, 0)->queue_hw_ctx[0]->nr_active) +
	       atomic_load(&disk_queue(d, 1)->queue_hw_ctx[0]->nr_active);
	ck_assert_uint_eq(held, 4); /* every tag of the set */
	pthread_mutex_lock(&b.lock);
	ck_assert_uint_eq(b.pending, 12);
	pthread_mutex_unlock(&b.lock);
	mq_start_hw_queues(disk_queue(d, 0));
	mq_start_hw_queues(disk_queue(d, 1));
	batch_wait(&b);
	ck_assert_uint_eq(b.errors, 0);
	batch_destroy(&b);
	for (i = 0; i < 12; i++) {
		ck_assert_int_eq(io(disk_queue(d, i % 2), 0, REQ_OP_READ, 0,
				    16 * (i / 2), sizeof(back), back),
				 0);
		ck_assert(memcmp(back, bufs[i], sizeof(back)) == 0);
	}

	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){disk_queue(d, i % 2), i, i * 1000};
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_fn, &w[i]),
				 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 4; i++)
		check_worker(&w[i]);
	mq_device_destroy(d);

	/* without shared_tags every disk has its own */
	d = NULL_NEW("size=1M", "nr_devices=3");
	ck_assert_uint_eq(d->nr_disks, 3);
	ck_assert_ptr_ne(disk_queue(d, 0)->tag_set, disk_queue(d, 2)->tag_set);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_blocking)
{
	struct mq_device *d =
		NULL_NEW("size=64M", "memory_backed=1", "blocking=1",
			 "submit_queues=2", "irqmode=0");
	struct worker w[2];
	pthread_t t[2];
	unsigned int i;

	ck_assert(disk_queue(d, 0)->tag_set->flags & MQ_F_BLOCKING);
	for (i = 0; i < 2; i++) {
		w[i] = (struct worker){disk_queue(d, 0), i, i * 77};
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_fn, &w[i]),
				 0);
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 2; i++)
		check_worker(&w[i]);
	mq_device_destroy(d);
}
END_TEST

/* Many bios at once, merged or not, all complete once. */
START_TEST(test_many_in_flight)
{
	struct mq_device *d = NULL_NEW("size=64M", "memory_backed=1",
				       "hw_queue_depth=8", "submit_queues=2");
	struct mq_queue *q = disk_queue(d, 0);
	enum { N = 512 };
	struct bio *bios = calloc(N, sizeof(*bios));
	unsigned char *w = malloc(N * 4096), *r = malloc(N * 4096);
	struct batch b;
	unsigned int i;

	ck_assert(bios && w && r);
	batch_init(&b);
	fill(w, N * 4096, 21);
	for (i = 0; i < N; i++)
		batch_submit(&b, q, i % 4, &bios[i], REQ_OP_WRITE, 0, i * 8,
			     4096, w + i * 4096);
	batch_wait(&b);
	ck_assert_uint_eq(b.errors, 0);
	for (i = 0; i < N; i++)
		batch_submit(&b, q, i % 4, &bios[i], REQ_OP_READ, 0, i * 8,
			     4096, r + i * 4096);
	batch_wait(&b);
	ck_assert_uint_eq(b.errors, 0);
	ck_assert(memcmp(w, r, N * 4096) == 0);
	batch_destroy(&b);
	mq_device_destroy(d);
	free(bios);
	free(w);
	free(r);
}
END_TEST

/* --- faults --------------------------------------------------------- */

/*
 * The requeue fault alternates, as Linux's null_queue_rq does, between
 * BLK_STS_RESOURCE (the core's delayed-rerun path) and the driver's own
 * mq_requeue_request: RESOURCE first, then requeue, then RESOURCE.
 */
START_TEST(test_requeue_fault)
{
	struct mq_device *d =
		NULL_NEW("size=64M", "memory_backed=1", "requeue=1,100,0,3");
	struct nullb *nullb = disk_nullb(d, 0);
	struct mq_hw_ctx *hctx = disk_queue(d, 0)->queue_hw_ctx[0];
	unsigned long resource = atomic_load(&hctx->stats.resource);
	unsigned long requeued = atomic_load(&hctx->stats.requeued);

	round_trip(disk_queue(d, 0), 0, 64, 8192, 31);
	ck_assert_uint_eq(atomic_load(&nullb->stats.requeues), 3);
	/* both paths reached the core */
	ck_assert_uint_eq(atomic_load(&hctx->stats.resource) - resource, 2);
	ck_assert_uint_ge(atomic_load(&hctx->stats.requeued) - requeued, 1);
	ck_assert_uint_eq(atomic_load(&nullb->stats.requeue_resource), 2);
	round_trip(disk_queue(d, 0), 1, 128, 4096, 32);
	ck_assert_uint_eq(atomic_load(&nullb->stats.requeues), 3);
	ck_assert_uint_eq(atomic_load(&nullb->stats.requeue_resource), 2);
	ck_assert_uint_eq(atomic_load(&nullb->stats.timeouts), 0);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_timeout_fault)
{
	struct mq_device *d = NULL_NEW("size=64M", "memory_backed=1",
				       "io_timeout=100", "timeout=1,100,0,1");
	struct mq_queue *q = disk_queue(d, 0);
	struct nullb *nullb = disk_nullb(d, 0);
	unsigned char w[4096], r[4096];

	fill(w, sizeof(w), 41);
	ck_assert_int_eq(io(q, 0, REQ_OP_WRITE, 0, 8, sizeof(w), w), EIO);
	ck_assert_uint_eq(atomic_load(&nullb->stats.timeouts), 1);
	/* the next one goes through */
	fill(w, sizeof(w), 42);
	ck_assert_int_eq(io(q, 0, REQ_OP_WRITE, 0, 8, sizeof(w), w), 0);
	ck_assert_int_eq(io(q, 0, REQ_OP_READ, 0, 8, sizeof(r), r), 0);
	ck_assert(memcmp(w, r, sizeof(w)) == 0);
	ck_assert_uint_eq(atomic_load(&nullb->stats.timeouts), 1);
	mq_device_destroy(d);
}
END_TEST

/*
 * A real timeout: irqmode=2 slower than io_timeout.  The request is still
 * completed by its timer, with the timeout's error.
 */
START_TEST(test_real_timeout)
{
	struct mq_device *d = NULL_NEW("time_scale=1", "irqmode=2",
				       "completion_nsec=300000000",
				       "io_timeout=50", "size=16M");
	struct nullb *nullb = disk_nullb(d, 0);
	unsigned char buf[4096];

	ck_assert_int_eq(
		io(disk_queue(d, 0), 0, REQ_OP_READ, 0, 0, sizeof(buf), buf),
		EIO);
	ck_assert_uint_eq(atomic_load(&nullb->stats.timeouts), 0);
	mq_device_destroy(d);
}
END_TEST

/* mbps throttles with real time: 2 MiB at 2 MiB/s takes about 1 s. */
START_TEST(test_mbps_throttle)
{
	struct mq_device *d = NULL_NEW("time_scale=1", "size=64M", "mbps=2");
	struct mq_queue *q = disk_queue(d, 0);
	struct nullb *nullb = disk_nullb(d, 0);
	enum { N = 32, LEN = 65536 };
	struct bio bios[N];
	unsigned char *buf = calloc(1, LEN);
	struct batch b;
	unsigned int i;
	double t0, elapsed;

	ck_assert_ptr_nonnull(buf);
	ck_assert(nullb->throttled);
	batch_init(&b);
	t0 = now_s();
	for (i = 0; i < N; i++)
		batch_submit(&b, q, i % 4, &bios[i], REQ_OP_WRITE, 0,
			     i * (LEN >> SECTOR_SHIFT), LEN, buf);
	batch_wait(&b);
	elapsed = now_s() - t0;
	ck_assert_uint_eq(b.errors, 0);
	ck_assert_uint_ge(atomic_load(&nullb->stats.throttled), 1);
	ck_assert_msg(elapsed > 0.5, "2 MiB at 2 MiB/s took %.3f s", elapsed);
	batch_destroy(&b);
	free(buf);
	mq_device_destroy(d);

	/* time_scale=0: time is not modelled, so neither is bandwidth */
	d = NULL_NEW("size=64M", "mbps=1", "memory_backed=1");
	ck_assert(!disk_nullb(d, 0)->throttled);
	round_trip(disk_queue(d, 0), 0, 0, 1 << 20, 1);
	mq_device_destroy(d);
}
END_TEST

static Suite *null_blk_suite(void)
{
	Suite *s = suite_create("null_blk");
	TCase *tc;

	tc = tcase_create("config");
	tcase_add_test(tc, test_queue_mode_1_refused);
	tcase_add_test(tc, test_unknown_key_lists_accepted);
	tcase_add_test(tc, test_bad_values);
	tcase_add_test(tc, test_init_hctx_fault);
	tcase_add_test(tc, test_defaults_and_disk);
	tcase_add_test(tc, test_flags_from_keys);
	suite_add_tcase(s, tc);

	tc = tcase_create("data");
	tcase_add_loop_test(tc, test_irqmode_round_trip, 0, 3);
	tcase_add_test(tc, test_irqmode_timer_real_time);
	tcase_add_test(tc, test_not_memory_backed_reads_zeroes);
	tcase_add_test(tc, test_out_of_range_is_eio);
	tcase_add_test(tc, test_discard_frees);
	tcase_add_test(tc, test_cache);
	tcase_add_test(tc, test_cache_needs_memory);
	suite_add_tcase(s, tc);

	tc = tcase_create("dispatch");
	tcase_add_test(tc, test_shared_tags);
	tcase_add_test(tc, test_blocking);
	tcase_add_test(tc, test_many_in_flight);
	suite_add_tcase(s, tc);

	tc = tcase_create("faults");
	tcase_add_test(tc, test_requeue_fault);
	tcase_add_test(tc, test_timeout_fault);
	tcase_add_test(tc, test_real_timeout);
	tcase_add_test(tc, test_mbps_throttle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(null_blk_suite());
}
