// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the GD-ROM model (backends/gdrom.c), through the device
 * layer and the request core, on a disc image made for each test.  Time is
 * off (time_scale=0) except where a test is about a timeout.  Bios are
 * waited on with a condition variable, never with sleeps.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/device.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"
#include "tests/unit/helpers/tlog.h"

#define BLK	    2048
#define NR_BLOCKS   64
#define SESSION_OFF 150

/* --- the disc ------------------------------------------------------- */

/* Byte i of block b. */
static unsigned char disc_byte(unsigned int b, unsigned int i)
{
	return (unsigned char)(b * 37 + i * 13 + (i >> 8));
}

static void disc_block(unsigned int b, unsigned char *buf)
{
	unsigned int i;

	for (i = 0; i < BLK; i++)
		buf[i] = disc_byte(b, i);
}

/* An image of NR_BLOCKS blocks; its path goes in path. */
static void make_image(char *path, size_t len, off_t size)
{
	unsigned char buf[BLK];
	unsigned int b;
	int fd;

	snprintf(path, len, "/tmp/gdrom-test-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	for (b = 0; (off_t)(b + 1) * BLK <= size; b++) {
		disc_block(b, buf);
		ck_assert_int_eq(pwrite(fd, buf, BLK, (off_t)b * BLK), BLK);
	}
	ck_assert_int_eq(ftruncate(fd, size), 0);
	close(fd);
}

static char image[64];

static void image_setup(void)
{
	make_image(image, sizeof(image), (off_t)NR_BLOCKS * BLK);
}

static void image_teardown(void)
{
	unlink(image);
}

/* --- devices -------------------------------------------------------- */

/* A gdrom on this test's image, with more keys. */
#define GDROM_NEW(...)                                                         \
	({                                                                     \
		struct mq_device *__d;                                         \
		struct mq_err __e = {{0}};                                     \
		char __kv[96];                                                 \
		snprintf(__kv, sizeof(__kv), "image=%s", image);               \
		if (tdevice_create(&__d, &__e, "gdrom", __kv, ##__VA_ARGS__,   \
				   NULL))                                      \
			ck_abort_msg("create failed: %s", __e.msg);            \
		__d;                                                           \
	})

/* --- bios ----------------------------------------------------------- */

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int status;
};

static void waiter_init(struct waiter *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->done = false;
	w->status = 0;
}

static void waiter_done(struct waiter *w, int status)
{
	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->status = status;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static int waiter_wait(struct waiter *w)
{
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	return w->status;
}

/* Read blocks [b, b+n) and check them against the image. */
static void expect_blocks(struct mq_device *d, unsigned int b, unsigned int n)
{
	unsigned char *buf = malloc((size_t)n * BLK), want[BLK];
	unsigned int i;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0xaa, (size_t)n * BLK);
	ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_READ, 0,
				(uint64_t)b * 4, n * BLK, buf),
			 0);
	for (i = 0; i < n; i++) {
		disc_block(b + i, want);
		ck_assert_msg(memcmp(buf + (size_t)i * BLK, want, BLK) == 0,
			      "block %u differs from the image", b + i);
	}
	free(buf);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- configuration -------------------------------------------------- */

START_TEST(test_disk)
{
	struct mq_device *d = GDROM_NEW();
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;
	char buf[64];

	ck_assert_str_eq(disk->disk_name, "gdrom");
	ck_assert_msg(strstr(disk->description, "Linux gdrom"), "%s",
		      disk->description);
	ck_assert(disk->read_only);
	ck_assert_uint_eq(get_capacity(disk), NR_BLOCKS * 4);
	ck_assert_uint_eq(q->nr_hw_queues, 1);
	ck_assert_uint_eq(q->tag_set->queue_depth, 1);
	ck_assert_uint_eq(q->tag_set->flags &
				  (MQ_F_SHOULD_MERGE | MQ_F_BLOCKING),
			  MQ_F_SHOULD_MERGE | MQ_F_BLOCKING);
	ck_assert_uint_eq(q->limits.logical_block_size, 2048);
	ck_assert_uint_eq(q->limits.max_segments, 1);
	ck_assert_uint_eq(q->limits.max_sectors, 0x40000 >> 9);
	ck_assert(q->limits.rotational && !q->limits.write_cache);
	ck_assert_str_eq(tdevice_attr(d, "media", buf, sizeof(buf)), "present");
	ck_assert_str_eq(tdevice_attr(d, "speed", buf, sizeof(buf)), "12x");
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_bad_config)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};
	char odd[64], kv[96];

	ck_assert_int_eq(tdevice_create(&d, &e, "gdrom", NULL), -1);
	ck_assert_msg(strstr(e.msg, "image=PATH"), "%s", e.msg);
	ck_assert_int_eq(
		tdevice_create(&d, &e, "gdrom", "image=/nonexistent.iso", NULL),
		-1);
	ck_assert_msg(strstr(e.msg, "/nonexistent.iso"), "%s", e.msg);

	make_image(odd, sizeof(odd), 3 * BLK + 512);
	snprintf(kv, sizeof(kv), "image=%s", odd);
	ck_assert_int_eq(tdevice_create(&d, &e, "gdrom", kv, NULL), -1);
	ck_assert_msg(strstr(e.msg, "2048-byte"), "%s", e.msg);
	unlink(odd);

	snprintf(kv, sizeof(kv), "image=%s", image);
	ck_assert_int_eq(tdevice_create(&d, &e, "gdrom", kv, "size=1M", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "size") && strstr(e.msg, "dma_timeout_ms"),
		      "%s", e.msg);
	ck_assert_ptr_null(d);
}
END_TEST

/* --- reads ---------------------------------------------------------- */

START_TEST(test_read)
{
	struct mq_device *d = GDROM_NEW();

	expect_blocks(d, 0, 1);
	expect_blocks(d, 5, 3);
	expect_blocks(d, NR_BLOCKS - 8, 8);
	expect_blocks(d, 0, NR_BLOCKS); /* split into 256 KiB DMAs */
	ck_assert_uint_ge(tdevice_counter(d, "reads"),
			  4 + NR_BLOCKS * BLK / 0x40000);
	mq_device_destroy(d);
}
END_TEST

/*
 * The driver builds the LBA with GD_SESSION_OFFSET: block 10 of the image
 * goes out as LBA 160 in the CD_READ packet, and the drive reads block 10.
 */
START_TEST(test_session_offset)
{
	struct mq_device *d = GDROM_NEW();
	char buf[128];

	tlog_clear();
	expect_blocks(d, 10, 2);
	/* 30 20 | LBA 00 00 a0 | 00 00 00 | count 00 00 02 | 00 */
	ck_assert_str_eq(tdevice_attr(d, "last_command", buf, sizeof(buf)),
			 "30 20 00 00 a0 00 00 00 00 00 02 00");
	ck_assert_msg(tlog_has("sector 40 is LBA 160"), "%s", tlog_text());
	ck_assert(tlog_has("GD_SESSION_OFFSET 150"));

	expect_blocks(d, 0, 1);
	ck_assert_str_eq(tdevice_attr(d, "last_command", buf, sizeof(buf)),
			 "30 20 00 00 96 00 00 00 00 00 01 00");
	mq_device_destroy(d);
}
END_TEST

/* --- refusals ------------------------------------------------------- */

START_TEST(test_write_refused)
{
	struct mq_device *d = GDROM_NEW();
	unsigned char buf[BLK];

	memset(buf, 0x55, sizeof(buf));
	tlog_clear();
	/* The front end never sends one; the queue gets it here. */
	ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_WRITE, 0, 8,
				BLK, buf),
			 EIO);
	ck_assert(tlog_has("gdrom: Read only device - write request ignored"));
	ck_assert_uint_eq(tdevice_counter(d, "refused"), 1);
	ck_assert_uint_eq(tdevice_counter(d, "reads"), 0);
	expect_blocks(d, 2, 1); /* untouched */
	mq_device_destroy(d);
}
END_TEST

static void drv_end_io(struct request *rq, int status)
{
	struct waiter *w = rq->end_io_data;

	mq_free_request(rq);
	waiter_done(w, status);
}

START_TEST(test_non_fs_refused)
{
	struct mq_device *d = GDROM_NEW();
	struct mq_queue *q = tdevice_disk0(d)->queue;
	struct request *rq;
	struct waiter w;

	tlog_clear();
	rq = mq_alloc_request(q, REQ_OP_DRV_IN, 0);
	ck_assert_ptr_nonnull(rq);
	waiter_init(&w);
	rq->end_io = drv_end_io;
	rq->end_io_data = &w;
	mq_sched_insert_request(rq, false, true, false);
	ck_assert_int_eq(waiter_wait(&w), EIO);
	ck_assert(tlog_has("gdrom: Non-fs request ignored"));
	ck_assert_uint_eq(tdevice_counter(d, "refused"), 1);
	mq_device_destroy(d);
}
END_TEST

/* --- the DMA stall -------------------------------------------------- */

START_TEST(test_dma_stall)
{
	struct mq_device *d = GDROM_NEW("dma_timeout_ms=150");
	unsigned char buf[BLK];
	char a[16];
	double t;

	ck_assert_int_eq(
		disk_fire_fault(tdevice_disk0(d), "dma_stall", "", NULL), 0);
	ck_assert_str_eq(tdevice_attr(d, "dma_stall", a, sizeof(a)), "1");
	tlog_clear();
	t = now_s();
	ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_READ, 0, 12,
				BLK, buf),
			 EIO);
	/* it waited for GDROM_DEFAULT_TIMEOUT (dma_timeout_ms) first */
	ck_assert_msg(now_s() - t >= 0.14, "failed after %.3f s", now_s() - t);
	ck_assert(tlog_has("dma_stall"));
	ck_assert(tlog_has("timed out after 150 ms"));
	ck_assert_uint_eq(tdevice_counter(d, "dma_timeouts"), 1);
	ck_assert_str_eq(tdevice_attr(d, "dma_stall", a, sizeof(a)), "0");

	/* the read after it works */
	expect_blocks(d, 3, 1);
	expect_blocks(d, 3, 4);
	ck_assert_uint_eq(tdevice_counter(d, "dma_timeouts"), 1);
	ck_assert_int_eq(disk_fire_fault(tdevice_disk0(d), "bogus", "", NULL),
			 ENOENT);
	mq_device_destroy(d);
}
END_TEST

/*
 * A DMA that finishes after its read timed out must not land in that
 * read's buffer, nor complete the next read.  Real time: the drive spins
 * up for 400 ms, the first read gives up after 250, the second is issued
 * then and its DMA lands after the first's late one.
 */
START_TEST(test_late_dma_dropped)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};
	unsigned char late[BLK], good[BLK], want[BLK];
	char kv[96];
	unsigned int i;

	snprintf(kv, sizeof(kv), "image=%s", image);
	ck_assert_int_eq(tdevice_create(&d, &e, "gdrom", kv, "time_scale=1",
					"spinup_ms=400", "seek_ms=0",
					"dma_timeout_ms=250", NULL),
			 0);
	memset(late, 0xaa, sizeof(late));
	ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_READ, 0,
				4 * 7, BLK, late),
			 EIO);
	ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_READ, 0,
				4 * 9, BLK, good),
			 0);
	disc_block(9, want);
	ck_assert(memcmp(good, want, BLK) == 0);
	for (i = 0; i < BLK; i++)
		ck_assert_uint_eq(late[i], 0xaa);
	ck_assert_uint_eq(tdevice_counter(d, "dma_timeouts"), 1);
	mq_device_destroy(d);
}
END_TEST

static Suite *gdrom_suite(void)
{
	Suite *s = suite_create("gdrom");
	TCase *tc;

	tc = tcase_create("config");
	tcase_add_checked_fixture(tc, image_setup, image_teardown);
	tcase_add_test(tc, test_disk);
	tcase_add_test(tc, test_bad_config);
	suite_add_tcase(s, tc);

	tc = tcase_create("read");
	tcase_add_checked_fixture(tc, image_setup, image_teardown);
	tcase_add_test(tc, test_read);
	tcase_add_test(tc, test_session_offset);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_add_checked_fixture(tc, image_setup, image_teardown);
	tcase_add_test(tc, test_write_refused);
	tcase_add_test(tc, test_non_fs_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("stall");
	tcase_add_checked_fixture(tc, image_setup, image_teardown);
	tcase_add_test(tc, test_dma_stall);
	tcase_add_test(tc, test_late_dma_dropped);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(gdrom_suite());
}
