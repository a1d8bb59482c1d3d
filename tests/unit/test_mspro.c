// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the Memory Stick Pro model (backends/mspro) and the flash
 * card timing model, through the device layer and the request core.  Time
 * is off (time_scale=0): the card still moves every request page by page
 * on its interrupt thread, only without waiting.  Bios are waited on with
 * a condition variable, never with sleeps.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/device.h"
#include "backends/timing/flashcard.h"
#include "server/mq/elevator.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"
#include "tests/unit/helpers/tlog.h"
#include "tests/unit/helpers/tsync.h"

/* --- devices -------------------------------------------------------- */

#define MSPRO_NEW(...)                                                         \
	({                                                                     \
		struct mq_device *__d;                                         \
		struct mq_err __e = {{0}};                                     \
		if (tdevice_create(&__d, &__e, "mspro", __VA_ARGS__, NULL))    \
			ck_abort_msg("create failed: %s", __e.msg);            \
		__d;                                                           \
	})

static struct mq_hw_ctx *hctx0(struct mq_device *d)
{
	return tdevice_disk0(d)->queue->queue_hw_ctx[0];
}

static void assert_attr(struct mq_device *d, const char *name, const char *want)
{
	char buf[128];

	ck_assert_str_eq(tdevice_attr(d, name, buf, sizeof(buf)), want);
}

static int fault(struct mq_device *d, const char *name)
{
	return disk_fire_fault(tdevice_disk0(d), name, "1", NULL);
}

/* --- bios ----------------------------------------------------------- */

struct batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int pending;
	unsigned int errors;
	int last_status;
	unsigned int ended;
	/* If set: stop its hw queues as the stop_after-th bio ends. */
	struct mq_queue *stop_q;
	unsigned int stop_after;
};

/* A bio that notes, as it ends, how many pages the card had moved. */
struct tbio {
	struct bio bio;
	struct batch *b;
	struct mq_device *d;
	unsigned long pages_at_end;
	unsigned long syncs_at_end; /* fdatasync/fsync of the watched file */
	bool done;
	unsigned int ends; /* bi_end_io calls: must be 1 */
};

static void batch_init(struct batch *b)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->pending = 0;
	b->errors = 0;
	b->last_status = 0;
	b->ended = 0;
	b->stop_q = NULL;
	b->stop_after = 0;
}

static void batch_destroy(struct batch *b)
{
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}

static void tbio_end_io(struct bio *bio)
{
	struct tbio *tb = bio->bi_private;
	struct batch *b = tb->b;

	tb->pages_at_end = tdevice_counter(tb->d, "pages");
	tb->syncs_at_end = tsync_count();
	pthread_mutex_lock(&b->lock);
	tb->done = true;
	tb->ends++;
	if (++b->ended == b->stop_after && b->stop_q)
		mq_stop_hw_queues(b->stop_q);
	if (bio->bi_status)
		b->errors++;
	b->last_status = bio->bi_status;
	b->pending--;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static void submit(struct batch *b, struct mq_device *d, struct tbio *tb,
		   unsigned int cpu, enum req_op op, uint64_t sector,
		   uint32_t len, void *buf)
{
	struct mq_queue *q = tdevice_disk0(d)->queue;

	memset(tb, 0, sizeof(*tb));
	bio_init(&tb->bio, op, sector, len, buf);
	tb->bio.bi_submitter = cpu + 1;
	tb->bio.bi_end_io = tbio_end_io;
	tb->bio.bi_private = tb;
	tb->b = b;
	tb->d = d;
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	mq_submit_bio(mq_get_ctx(q, cpu), &tb->bio);
}

static void batch_wait(struct batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

static unsigned int batch_pending(struct batch *b)
{
	unsigned int n;

	pthread_mutex_lock(&b->lock);
	n = b->pending;
	pthread_mutex_unlock(&b->lock);
	return n;
}

/* helpers/tio.h on the card's disk: client 1 on software queue 0. */
#define fill(...) tio_fill(__VA_ARGS__)

static int io(struct mq_device *d, enum req_op op, uint64_t sector,
	      uint32_t len, void *buf)
{
	return tio_io(tdevice_disk0(d)->queue, 0, op, 0, sector, len, buf);
}

static void *xmalloc(size_t len)
{
	void *p = malloc(len);

	ck_assert_ptr_nonnull(p);
	return p;
}

static void round_trip(struct mq_device *d, uint64_t sector, uint32_t len,
		       unsigned int seed)
{
	tio_round_trip(tdevice_disk0(d)->queue, 0, sector, len, seed);
}

/* Is [sector, +len) what fill(seed) wrote? */
static void expect_data(struct mq_device *d, uint64_t sector, uint32_t len,
			unsigned int seed)
{
	unsigned char *w = xmalloc(len), *r = xmalloc(len);

	fill(w, len, seed);
	ck_assert_int_eq(io(d, REQ_OP_READ, sector, len, r), 0);
	ck_assert_msg(memcmp(w, r, len) == 0, "sector %llu: data differs",
		      (unsigned long long)sector);
	free(w);
	free(r);
}

/* --- the timing model ----------------------------------------------- */

START_TEST(test_flashcard_model)
{
	struct flashcard_params fp;
	struct flashcard_model m;

	flashcard_params_default(&fp);
	ck_assert_uint_eq(fp.page_size, 512);
	ck_assert(fp.read_mbps == 20 && fp.write_mbps == 10);
	ck_assert(fp.cmd_overhead_us == 100);
	flashcard_init(&m, &fp);

	/* 512 bytes at 20 MB/s is 25.6 us, at 10 MB/s 51.2 us */
	ck_assert_uint_eq(flashcard_page_ns(&m, TIMING_READ), 25600);
	ck_assert_uint_eq(flashcard_page_ns(&m, TIMING_WRITE), 51200);
	ck_assert_uint_eq(flashcard_cmd_ns(&m), 100000);
	/* a whole 1 MB read: overhead plus 50 ms, wherever it lies */
	ck_assert_uint_eq(flashcard_service_ns(&m, TIMING_READ, 0, 1000000),
			  100000 + 50000000);
	ck_assert_uint_eq(
		flashcard_service_ns(&m, TIMING_READ, 123456, 1000000),
		100000 + 50000000);
	ck_assert_uint_eq(flashcard_service_ns(&m, TIMING_WRITE, 0, 1000000),
			  100000 + 100000000);
	ck_assert_uint_eq(m.base.nr_cmds, 4);
	ck_assert_uint_eq(m.pages, 2 + 3 * 1954);
	flashcard_destroy(&m);
}
END_TEST

START_TEST(test_flashcard_params)
{
	struct flashcard_params fp;
	struct mq_params *p = mq_params_new();
	struct mq_err e = {{0}};

	ck_assert_int_eq(mq_params_set_kv(p, "page_size=2048", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "read_mbps=40", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "cmd_overhead_us=0", &e), 0);
	flashcard_params_default(&fp);
	ck_assert_int_eq(flashcard_params_read(&fp, p, "", &e), 0);
	ck_assert_uint_eq(fp.page_size, 2048);
	ck_assert(fp.read_mbps == 40 && fp.write_mbps == 10);
	ck_assert(fp.cmd_overhead_us == 0);
	ck_assert_ptr_null(mq_params_first_unused(p));
	mq_params_free(p);

	p = mq_params_new();
	ck_assert_int_eq(mq_params_set_kv(p, "page_size=1536", &e), 0);
	flashcard_params_default(&fp);
	ck_assert_int_eq(flashcard_params_read(&fp, p, "", &e), -1);
	ck_assert_msg(strstr(e.msg, "page_size=1536"), "%s", e.msg);
	mq_params_free(p);
}
END_TEST

/* --- configuration -------------------------------------------------- */

START_TEST(test_defaults)
{
	struct mq_device *d = MSPRO_NEW("time_scale=0");
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;

	ck_assert_str_eq(disk->disk_name, "mspblk0");
	ck_assert_msg(strstr(disk->description, "mspro_block"), "%s",
		      disk->description);
	ck_assert_msg(strstr(disk->description, "ms0"), "%s",
		      disk->description);
	ck_assert_uint_eq(get_capacity(disk), (1ull << 30) >> SECTOR_SHIFT);
	ck_assert(!disk->read_only);
	ck_assert_uint_eq(q->nr_hw_queues, 1);
	ck_assert_uint_eq(q->tag_set->queue_depth, 2);
	ck_assert_uint_eq(q->tag_set->flags &
				  (MQ_F_SHOULD_MERGE | MQ_F_BLOCKING),
			  MQ_F_SHOULD_MERGE);
	ck_assert_uint_eq(q->limits.logical_block_size, 512);
	ck_assert_uint_eq(q->limits.max_segments, 32);
	ck_assert_uint_eq(q->limits.max_sectors, 65535);
	ck_assert_uint_eq(q->limits.max_discard_sectors, 0);
	ck_assert(!q->limits.write_cache && !q->limits.rotational);
	assert_attr(d, "state", "active");
	assert_attr(d, "media", "present");
	assert_attr(d, "read_only", "0");
	assert_attr(
		d, "timing",
		"page_size=512 read_mbps=20 write_mbps=10 cmd_overhead_us=100");
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_bad_config)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};
	char path[] = "/tmp/mspro-test-XXXXXX";
	int fd;

	ck_assert_int_eq(tdevice_create(&d, &e, "mspro", "size=1000", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "size") && strstr(e.msg, "page_size"), "%s",
		      e.msg);
	ck_assert_int_eq(tdevice_create(&d, &e, "mspro", "page_size=100", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "page_size"), "%s", e.msg);
	ck_assert_int_eq(tdevice_create(&d, &e, "mspro", "read_mbps=0", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "read_mbps"), "%s", e.msg);
	ck_assert_int_eq(tdevice_create(&d, &e, "mspro",
					"image=/nonexistent/ms.img", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "/nonexistent/ms.img"), "%s", e.msg);
	ck_assert_int_eq(tdevice_create(&d, &e, "mspro", "bogus=1", NULL), -1);
	ck_assert_msg(strstr(e.msg, "bogus") &&
			      strstr(e.msg, "cmd_overhead_us"),
		      "%s", e.msg);

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
	ck_assert_int_eq(
		tdevice_create(&d, &e, "mspro", "size=1M", "image=", NULL), -1);
	ck_assert_ptr_null(d);
	{
		char kv[64];

		snprintf(kv, sizeof(kv), "image=%s", path);
		ck_assert_int_eq(
			tdevice_create(&d, &e, "mspro", "size=1M", kv, NULL),
			-1);
		ck_assert_msg(strstr(e.msg, "size="), "%s", e.msg);
	}
	unlink(path);
	ck_assert_ptr_null(d);
}
END_TEST

/* --- data ----------------------------------------------------------- */

START_TEST(test_round_trip)
{
	struct mq_device *d = MSPRO_NEW("size=64M");

	round_trip(d, 0, 512, 1);
	round_trip(d, 7, 4096, 2);
	round_trip(d, 1000, 300 * 512, 3);
	round_trip(d, (64 << 11) - 2048, 1 << 20, 4); /* the last MiB */
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_page_size_2048)
{
	struct mq_device *d = MSPRO_NEW("size=64M", "page_size=2048");
	unsigned long pages = tdevice_counter(d, "pages");

	ck_assert_uint_eq(tdevice_disk0(d)->queue->limits.logical_block_size,
			  2048);
	round_trip(d, 16, 64 * 1024, 5);
	/* 64 KiB out and back in, 2 KiB a page */
	ck_assert_uint_eq(tdevice_counter(d, "pages") - pages, 2 * 32);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_image_backed)
{
	char path[] = "/tmp/mspro-test-XXXXXX", kv[64];
	unsigned char *w = xmalloc(8192), *r = xmalloc(8192);
	struct mq_device *d;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
	snprintf(kv, sizeof(kv), "image=%s", path);
	d = MSPRO_NEW(kv);
	ck_assert_uint_eq(get_capacity(tdevice_disk0(d)),
			  (4 << 20) >> SECTOR_SHIFT);
	/* The image's holes are reported, as the file store finds them. */
	ck_assert_ptr_nonnull(tdevice_disk0(d)->fops);
	fill(w, 8192, 9);
	ck_assert_int_eq(io(d, REQ_OP_WRITE, 64, 8192, w), 0);
	ck_assert_int_eq(mq_device_sync(d), 0);
	/* it is in the file, where sector 64 is */
	ck_assert_int_eq(pread(fd, r, 8192, 64 * 512), 8192);
	ck_assert(memcmp(w, r, 8192) == 0);
	expect_data(d, 64, 8192, 9);
	mq_device_destroy(d);
	close(fd);
	unlink(path);
	free(w);
	free(r);
}
END_TEST

/*
 * The card has no volatile cache (the queue says so, and no FLUSH ever
 * reaches it), so a write on an image completes only once it is durable:
 * the image was fdatasync'ed before the bio ended.  Reads sync nothing.
 */
START_TEST(test_image_write_through)
{
	char path[] = "/tmp/mspro-test-XXXXXX", kv[64];
	unsigned char *w = xmalloc(65536);
	struct mq_device *d;
	struct tbio tb;
	struct batch bt;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
	snprintf(kv, sizeof(kv), "image=%s", path);
	d = MSPRO_NEW(kv);
	ck_assert(!tdevice_disk0(d)->queue->limits.write_cache);
	tsync_watch(path);
	fill(w, 65536, 13);
	batch_init(&bt);
	submit(&bt, d, &tb, 0, REQ_OP_WRITE, 256, 65536, w);
	batch_wait(&bt);
	ck_assert_uint_eq(bt.errors, 0);
	ck_assert_uint_ge(tb.syncs_at_end, 1);
	/* once a command, not once a page */
	ck_assert_uint_eq(tsync_count(), 1);
	expect_data(d, 256, 65536, 13);
	ck_assert_uint_eq(tsync_count(), 1);
	batch_destroy(&bt);
	mq_device_destroy(d);
	close(fd);
	unlink(path);
	free(w);
}
END_TEST

/*
 * The card moves a request a page at a time, one interrupt each, under a
 * single data command: WRITE_REG, SET_CMD, then one LONG_DATA per page.
 * The request is completed once, when the chunk is in and the card says
 * CED (mspro_block_complete_req), not page by page: a page-wise driver
 * would set the command up again for every page.
 */
START_TEST(test_chunked_completion)
{
	struct mq_device *d = MSPRO_NEW("size=64M");
	unsigned long pages = tdevice_counter(d, "pages");
	unsigned long cmds = tdevice_counter(d, "commands");
	unsigned long reqs = tdevice_counter(d, "requests");
	unsigned long tpcs = tdevice_counter(d, "tpcs");

	round_trip(d, 128, 64 * 1024, 6);
	/* 128 pages each way, and one command per request */
	ck_assert_uint_eq(tdevice_counter(d, "pages") - pages, 2 * 128);
	ck_assert_uint_eq(tdevice_counter(d, "requests") - reqs, 2);
	ck_assert_uint_eq(tdevice_counter(d, "commands") - cmds, 2);
	/* the last page brings CED: no GET_INT, no second set-up */
	ck_assert_uint_eq(tdevice_counter(d, "tpcs") - tpcs, 2 * (2 + 128));
	ck_assert_uint_eq(tdevice_counter(d, "errors"), 0);
	mq_device_destroy(d);
}
END_TEST

/*
 * Two bios merged into one request are one chunk: both end together
 * (mq_update_request by the whole chunk) once all 128 pages are in, as in
 * Linux; the first does not end when its own 64 pages are.
 */
START_TEST(test_merged_completion)
{
	struct mq_device *d = MSPRO_NEW("size=64M");
	struct mq_hw_ctx *hctx = hctx0(d);
	unsigned char *a = xmalloc(32768), *b = xmalloc(32768);
	unsigned long pages, reqs, merged, cmds, tpcs;
	struct tbio ta, tb;
	struct batch bt;

	/* No elevator: the software queue merges, as SHOULD_MERGE asks. */
	ck_assert_int_eq(elevator_switch(tdevice_disk0(d)->queue, NULL), 0);
	fill(a, 32768, 11);
	fill(b, 32768, 12);
	pages = tdevice_counter(d, "pages");
	reqs = tdevice_counter(d, "requests");
	cmds = tdevice_counter(d, "commands");
	tpcs = tdevice_counter(d, "tpcs");
	merged = atomic_load(&hctx->stats.merged);

	batch_init(&bt);
	ck_assert_int_eq(fault(d, "suspend"), 0);
	submit(&bt, d, &ta, 0, REQ_OP_WRITE, 0, 32768, a);
	submit(&bt, d, &tb, 0, REQ_OP_WRITE, 64, 32768, b);
	ck_assert_int_eq(fault(d, "resume"), 0);
	batch_wait(&bt);
	ck_assert_uint_eq(bt.errors, 0);

	ck_assert_uint_eq(atomic_load(&hctx->stats.merged) - merged, 1);
	ck_assert_uint_eq(tdevice_counter(d, "requests") - reqs, 1);
	ck_assert_uint_eq(tdevice_counter(d, "pages") - pages, 128);
	ck_assert_uint_eq(tdevice_counter(d, "commands") - cmds, 1);
	ck_assert_uint_eq(tdevice_counter(d, "tpcs") - tpcs, 2 + 128);
	ck_assert_uint_eq(ta.pages_at_end - pages, 128);
	ck_assert_uint_eq(tb.pages_at_end - pages, 128);
	expect_data(d, 0, 32768, 11);
	expect_data(d, 64, 32768, 12);
	batch_destroy(&bt);
	free(a);
	free(b);
	mq_device_destroy(d);
}
END_TEST

/*
 * A chunk that fails midway (page_error: the card answers ERR for one
 * page): mspro_block_complete_req updates the request by what Linux 4.20
 * counts as done, with the error, and issues the rest as a new chunk,
 * which works.  For a read that is the segments moved and the pages of
 * the current one before the failed page; for a write nothing, so the
 * first bio fails whole.  Two bios A (pages 0-63) and B (64-127), merged
 * into one request; what each client gets:
 *   write, page 20 fails: A EIO (pages 0-19 written, 20-63 not: the rest
 *     is retried from B), B written, OK;
 *   write, page 80 fails: A EIO although written whole, B retried whole,
 *     OK;
 *   read, page 20 fails: A EIO, B OK;
 *   read, page 80 fails: A EIO although read whole (completed with the
 *     error), B EIO (its first 16 pages completed with it).
 */
static void partial_chunk(struct mq_device *d, enum req_op op,
			  unsigned int fail_page, int want_a, int want_b)
{
	struct mq_hw_ctx *hctx = hctx0(d);
	unsigned char *a = xmalloc(32768), *b = xmalloc(32768);
	unsigned long reqs, cmds, errors, merged;
	char page[32];
	struct tbio ta, tb;
	struct batch bt;

	if (op == REQ_OP_WRITE) {
		fill(a, 32768, 40);
		fill(b, 32768, 41);
	} else {
		memset(a, 0, 32768);
		memset(b, 0, 32768);
	}
	reqs = tdevice_counter(d, "requests");
	cmds = tdevice_counter(d, "commands");
	errors = tdevice_counter(d, "errors");
	merged = atomic_load(&hctx->stats.merged);
	snprintf(page, sizeof(page), "%u", fail_page);

	batch_init(&bt);
	ck_assert_int_eq(fault(d, "suspend"), 0);
	submit(&bt, d, &ta, 0, op, 0, 32768, a);
	submit(&bt, d, &tb, 0, op, 64, 32768, b);
	ck_assert_int_eq(
		disk_fire_fault(tdevice_disk0(d), "page_error", page, NULL), 0);
	ck_assert_int_eq(fault(d, "resume"), 0);
	batch_wait(&bt);

	/* One request, two chunks: the failed one and the rest. */
	ck_assert_uint_eq(atomic_load(&hctx->stats.merged) - merged, 1);
	ck_assert_uint_eq(tdevice_counter(d, "requests") - reqs, 1);
	ck_assert_uint_eq(tdevice_counter(d, "commands") - cmds, 2);
	ck_assert_uint_eq(tdevice_counter(d, "errors") - errors, 1);
	ck_assert_msg(ta.bio.bi_status == want_a && tb.bio.bi_status == want_b,
		      "%s, page %u fails: A %d B %d, want %d %d",
		      op == REQ_OP_WRITE ? "write" : "read", fail_page,
		      ta.bio.bi_status, tb.bio.bi_status, want_a, want_b);
	if (op == REQ_OP_READ && !want_b) {
		unsigned char *w = xmalloc(32768);

		fill(w, 32768, 31);
		ck_assert(memcmp(w, b, 32768) == 0);
		free(w);
	}
	batch_destroy(&bt);
	free(a);
	free(b);
}

START_TEST(test_partial_error)
{
	struct mq_device *d = MSPRO_NEW("size=64M", "scheduler=none");
	unsigned char *r = xmalloc(32768), *w = xmalloc(32768);
	unsigned int i;

	/* Writes: the rest is retried from the second bio. */
	partial_chunk(d, REQ_OP_WRITE, 20, EIO, 0);
	ck_assert_int_eq(io(d, REQ_OP_READ, 0, 32768, r), 0);
	fill(w, 32768, 40);
	ck_assert(memcmp(w, r, 20 * 512) == 0); /* before the failed page */
	for (i = 20 * 512; i < 32768; i++)	/* the rest of A: never sent */
		ck_assert_uint_eq(r[i], 0);
	expect_data(d, 64, 32768, 41);

	partial_chunk(d, REQ_OP_WRITE, 80, EIO, 0);
	expect_data(d, 0, 32768, 40); /* A is there, though it failed */
	expect_data(d, 64, 32768, 41);

	/* Reads of known data. */
	round_trip(d, 0, 32768, 30);
	round_trip(d, 64, 32768, 31);
	partial_chunk(d, REQ_OP_READ, 20, EIO, 0);
	partial_chunk(d, REQ_OP_READ, 80, EIO, EIO);

	/* The fault is spent: the same I/O works again. */
	round_trip(d, 0, 65536, 32);
	ck_assert_int_eq(
		disk_fire_fault(tdevice_disk0(d), "page_error", "x", NULL),
		EINVAL);
	free(r);
	free(w);
	mq_device_destroy(d);
}
END_TEST

/*
 * One request at a time: with two dispatched at once the second gets
 * DEV_RESOURCE, and the end of the first restarts the queue.  Both are
 * queued while the card is suspended and dispatched together on resume;
 * whether the card is still busy with the first when the second comes is
 * a race (time is off), so try until it happens.  No scheduler: bfq
 * (the default) may give the second write a depth of 1 while the first
 * holds a tag (bfqq_request_over_limit), and then it never races.
 */
START_TEST(test_dev_resource)
{
	struct mq_device *d = MSPRO_NEW("size=64M", "scheduler=none");
	struct mq_hw_ctx *hctx = hctx0(d);
	const uint32_t len = 256 * 1024;
	unsigned char *a = xmalloc(len), *b = xmalloc(len);
	unsigned long dispatched, reqs = tdevice_counter(d, "requests");
	unsigned int round;

	for (round = 0; round < 200 && !atomic_load(&hctx->stats.dev_resource);
	     round++) {
		struct tbio ta, tb;
		struct batch bt;

		fill(a, len, 2 * round);
		fill(b, len, 2 * round + 1);
		batch_init(&bt);
		ck_assert_int_eq(fault(d, "suspend"), 0);
		dispatched = atomic_load(&hctx->stats.dispatched);
		submit(&bt, d, &ta, 0, REQ_OP_WRITE, 0, len, a);
		submit(&bt, d, &tb, 1, REQ_OP_WRITE, 8192, len, b);
		ck_assert_uint_eq(batch_pending(&bt), 2);
		ck_assert_uint_eq(atomic_load(&hctx->stats.dispatched),
				  dispatched);
		ck_assert_int_eq(fault(d, "resume"), 0);
		batch_wait(&bt);
		ck_assert_uint_eq(bt.errors, 0);
		batch_destroy(&bt);
		expect_data(d, 0, len, 2 * round);
		expect_data(d, 8192, len, 2 * round + 1);
	}
	ck_assert_msg(atomic_load(&hctx->stats.dev_resource) > 0,
		      "no DEV_RESOURCE in %u rounds", round);
	/* refused ones are not started twice on the card */
	ck_assert_uint_eq(tdevice_counter(d, "requests") - reqs, 4 * round);
	free(a);
	free(b);
	mq_device_destroy(d);
}
END_TEST

/* Many writers at once: every one served, one request at a time. */
struct writer {
	struct mq_device *d;
	unsigned int cpu;
	unsigned int errors;
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	unsigned char buf[8192], r[8192];
	unsigned int i;

	for (i = 0; i < 50; i++) {
		uint64_t sector = (w->cpu * 64 + i % 4 * 16) * 16;

		fill(buf, sizeof(buf), w->cpu * 1000 + i);
		if (io(w->d, REQ_OP_WRITE, sector, sizeof(buf), buf) ||
		    io(w->d, REQ_OP_READ, sector, sizeof(r), r) ||
		    memcmp(buf, r, sizeof(r)))
			w->errors++;
	}
	return NULL;
}

START_TEST(test_concurrent_writers)
{
	struct mq_device *d = MSPRO_NEW("size=64M");
	struct writer w[4];
	pthread_t t[4];
	unsigned int i;

	for (i = 0; i < 4; i++) {
		w[i] = (struct writer){.d = d, .cpu = i};
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer_fn, &w[i]),
				 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_uint_eq(w[i].errors, 0);
	}
	mq_device_destroy(d);
}
END_TEST

/* --- faults --------------------------------------------------------- */

START_TEST(test_suspend_resume)
{
	struct mq_device *d = MSPRO_NEW("size=64M");
	struct mq_hw_ctx *hctx = hctx0(d);
	unsigned char *buf = xmalloc(8 * 4096);
	unsigned long dispatched, runs;
	struct tbio tb[8];
	struct batch bt;
	unsigned int i;

	ck_assert_int_eq(fault(d, "suspend"), 0);
	assert_attr(d, "state", "suspended");
	ck_assert_int_eq(fault(d, "suspend"), 0); /* already: nothing to do */
	ck_assert(mq_hctx_stopped(hctx));

	dispatched = atomic_load(&hctx->stats.dispatched);
	runs = tdevice_counter(d, "requests");
	batch_init(&bt);
	for (i = 0; i < 8; i++) {
		fill(buf + i * 4096, 4096, 100 + i);
		submit(&bt, d, &tb[i], i % 4, REQ_OP_WRITE, i * 64, 4096,
		       buf + i * 4096);
	}
	/* Nothing reaches the card while it sleeps. */
	ck_assert_uint_eq(batch_pending(&bt), 8);
	ck_assert_uint_eq(atomic_load(&hctx->stats.dispatched), dispatched);
	ck_assert_uint_eq(tdevice_counter(d, "requests"), runs);

	ck_assert_int_eq(fault(d, "resume"), 0);
	assert_attr(d, "state", "active");
	batch_wait(&bt);
	ck_assert_uint_eq(bt.errors, 0);
	for (i = 0; i < 8; i++)
		expect_data(d, i * 64, 4096, 100 + i);
	ck_assert_int_eq(fault(d, "resume"), 0); /* already awake */
	batch_destroy(&bt);
	free(buf);
	mq_device_destroy(d);
}
END_TEST

/* Suspend and resume while I/O flows: nothing lost, nothing corrupted. */
struct flipper {
	struct mq_device *d;
	atomic_bool stop;
};

static void *flipper_fn(void *arg)
{
	struct flipper *f = arg;

	while (!atomic_load(&f->stop)) {
		ck_assert_int_eq(fault(f->d, "suspend"), 0);
		ck_assert_int_eq(fault(f->d, "resume"), 0);
	}
	return NULL;
}

START_TEST(test_suspend_under_load)
{
	struct mq_device *d = MSPRO_NEW("size=64M");
	struct flipper f = {.d = d};
	struct writer w = {.d = d, .cpu = 2};
	pthread_t t;

	atomic_init(&f.stop, false);
	ck_assert_int_eq(pthread_create(&t, NULL, flipper_fn, &f), 0);
	writer_fn(&w);
	atomic_store(&f.stop, true);
	pthread_join(t, NULL);
	ck_assert_uint_eq(w.errors, 0);
	assert_attr(d, "state", "active");
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_eject)
{
	struct mq_device *d = MSPRO_NEW("size=64M");
	unsigned char *buf = xmalloc(3 * 4096);
	struct tbio tb[3];
	struct batch bt;
	unsigned int i;

	round_trip(d, 0, 4096, 20);
	ck_assert_int_eq(fault(d, "suspend"), 0);
	batch_init(&bt);
	for (i = 0; i < 3; i++)
		submit(&bt, d, &tb[i], i, i ? REQ_OP_WRITE : REQ_OP_READ,
		       i * 1024, 4096, buf + i * 4096);
	ck_assert_uint_eq(batch_pending(&bt), 3);

	tlog_clear();
	ck_assert_int_eq(fault(d, "eject"), 0);
	batch_wait(&bt);
	/* Everything queued failed, and the log says why. */
	ck_assert_uint_eq(bt.errors, 3);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tb[i].bio.bi_status, EIO);
	ck_assert(tlog_has("ms0: card ejected"));
	assert_attr(d, "state", "ejected");
	assert_attr(d, "media", "absent");

	/* New I/O is refused. */
	tlog_clear();
	ck_assert_int_eq(io(d, REQ_OP_READ, 0, 4096, buf), EIO);
	ck_assert_int_eq(io(d, REQ_OP_WRITE, 8, 512, buf), EIO);
	ck_assert(tlog_has("ms0: card ejected"));
	ck_assert_uint_ge(tdevice_counter(d, "refused"), 5);

	/* There is no card left to eject, suspend or resume. */
	ck_assert_int_eq(fault(d, "eject"), ENODEV);
	ck_assert_int_eq(fault(d, "suspend"), ENODEV);
	ck_assert_int_eq(fault(d, "resume"), ENODEV);
	ck_assert_int_eq(disk_fire_fault(tdevice_disk0(d), "bogus", "", NULL),
			 ENOENT);

	/* The card goes back in: I/O reaches it again, its data intact. */
	ck_assert_int_eq(fault(d, "insert"), 0);
	assert_attr(d, "state", "active");
	assert_attr(d, "media", "present");
	expect_data(d, 0, 4096, 20);
	round_trip(d, 8, 4096, 21);
	{
		struct mq_err e = {""};

		ck_assert_int_eq(
			disk_fire_fault(tdevice_disk0(d), "insert", "", &e),
			EBUSY);
		ck_assert_str_eq(e.msg, "a card is already in the slot");
	}
	batch_destroy(&bt);
	free(buf);
	mq_device_destroy(d);
}
END_TEST

/*
 * Pulled out mid-stream, as mspro_block_remove does it: what completed
 * stays completed, everything queued goes through queue_rq and fails with
 * IOERR without reaching the card, and a request on the card fails with
 * it; every bio ends exactly once.  The queue is stopped as the 8th bio
 * ends (from its completion), so the eject finds the other 56 queued.
 * Far apart, nothing merges: a bio is a request.
 */
START_TEST(test_eject_under_load)
{
	struct mq_device *d = MSPRO_NEW("size=64M", "scheduler=none");
	struct mq_queue *q = tdevice_disk0(d)->queue;
	const unsigned int n = 64;
	unsigned char *buf = xmalloc(n * 16384), *r = xmalloc(16384);
	struct tbio *tb = xmalloc(n * sizeof(*tb));
	unsigned long started = tdevice_counter(d, "requests");
	unsigned long refused = tdevice_counter(d, "refused");
	unsigned int i, ok = 0, eio = 0;
	struct batch bt;

	batch_init(&bt);
	bt.stop_q = q;
	bt.stop_after = 8;
	for (i = 0; i < n; i++) {
		fill(buf + i * 16384, 16384, 500 + i);
		submit(&bt, d, &tb[i], i % 4, REQ_OP_WRITE, i * 64, 16384,
		       buf + i * 16384);
	}
	/* Wait for the 8th to end: from then on the card gets nothing. */
	for (;;) {
		pthread_mutex_lock(&bt.lock);
		i = bt.ended;
		pthread_mutex_unlock(&bt.lock);
		if (i >= 8)
			break;
		sched_yield();
	}
	ck_assert_int_eq(fault(d, "eject"), 0);
	batch_wait(&bt);

	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(tb[i].ends, 1);
		if (tb[i].bio.bi_status == 0)
			ok++;
		else if (tb[i].bio.bi_status == EIO)
			eio++;
	}
	ck_assert_uint_eq(ok + eio, n);
	started = tdevice_counter(d, "requests") - started;
	refused = tdevice_counter(d, "refused") - refused;
	/* Each reached the card once or was refused once; none both. */
	ck_assert_uint_eq(started + refused, n);
	ck_assert_msg(ok <= started, "%u completed, %lu reached the card", ok,
		      started);
	ck_assert_uint_eq(refused, eio - (started - ok));
	ck_assert_uint_le(started - ok, 1); /* the one on the card, if any */
	ck_assert_uint_ge(ok, 8);
	ck_assert_uint_ge(refused, n - 9);
	ck_assert_int_eq(io(d, REQ_OP_READ, 0, 512, buf), EIO);

	/* Back in: the completed writes are there, the refused never came. */
	ck_assert_int_eq(fault(d, "insert"), 0);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(io(d, REQ_OP_READ, i * 64, 16384, r), 0);
		if (tb[i].bio.bi_status == 0) {
			fill(buf, 16384, 500 + i);
			ck_assert_msg(memcmp(buf, r, 16384) == 0,
				      "bio %u completed, its data is not there",
				      i);
		} else if (started == ok) {
			unsigned int j;

			for (j = 0; j < 16384; j++)
				ck_assert_msg(r[j] == 0,
					      "bio %u was refused, yet written",
					      i);
		}
	}
	batch_destroy(&bt);
	free(tb);
	free(r);
	free(buf);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_read_only)
{
	struct mq_device *d = MSPRO_NEW("size=8M", "read_only=1");
	unsigned char buf[4096];

	ck_assert(tdevice_disk0(d)->read_only);
	assert_attr(d, "read_only", "1");
	ck_assert_msg(strstr(tdevice_disk0(d)->description, "write-protected"),
		      "%s", tdevice_disk0(d)->description);
	/* The front end refuses writes; one that reaches the card fails. */
	tlog_clear();
	memset(buf, 0x5a, sizeof(buf));
	ck_assert_int_eq(io(d, REQ_OP_WRITE, 0, sizeof(buf), buf), EIO);
	ck_assert(tlog_has("write-protected"));
	ck_assert_uint_gt(tdevice_counter(d, "errors"), 0);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_int_eq(io(d, REQ_OP_READ, 0, sizeof(buf), buf), 0);
	for (unsigned int i = 0; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_out_of_range)
{
	struct mq_device *d = MSPRO_NEW("size=1M");
	unsigned char buf[4096];

	tlog_clear();
	ck_assert_int_eq(io(d, REQ_OP_READ, 2048 - 4, sizeof(buf), buf), EIO);
	ck_assert(tlog_has("outside the card"));
	/* the card is still fine */
	round_trip(d, 0, 4096, 30);
	mq_device_destroy(d);
}
END_TEST

static Suite *mspro_suite(void)
{
	Suite *s = suite_create("mspro");
	TCase *tc;

	tc = tcase_create("timing");
	tcase_add_test(tc, test_flashcard_model);
	tcase_add_test(tc, test_flashcard_params);
	suite_add_tcase(s, tc);

	tc = tcase_create("config");
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_bad_config);
	suite_add_tcase(s, tc);

	tc = tcase_create("data");
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_page_size_2048);
	tcase_add_test(tc, test_image_backed);
	tcase_add_test(tc, test_image_write_through);
	tcase_add_test(tc, test_chunked_completion);
	tcase_add_test(tc, test_merged_completion);
	suite_add_tcase(s, tc);

	tc = tcase_create("dispatch");
	tcase_add_test(tc, test_dev_resource);
	tcase_add_test(tc, test_concurrent_writers);
	suite_add_tcase(s, tc);

	tc = tcase_create("faults");
	tcase_add_test(tc, test_suspend_resume);
	tcase_add_test(tc, test_suspend_under_load);
	tcase_add_test(tc, test_eject);
	tcase_add_test(tc, test_eject_under_load);
	tcase_add_test(tc, test_partial_error);
	tcase_add_test(tc, test_read_only);
	tcase_add_test(tc, test_out_of_range);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(mspro_suite());
}
