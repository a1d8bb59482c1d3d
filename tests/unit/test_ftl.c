// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the ftl layer (backends/mtd/ftl.c) through the device
 * layer and the request core: the mapping and its rebuild from the OOB,
 * FLUSH as the durability point, garbage collection, wear levelling,
 * grown bad blocks, and a power cut at every program and erase of a
 * sequence of writes and FLUSHes.  Time is off (time_scale=0).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/device.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tflash.h"
#include "tests/unit/helpers/tio.h"
#include "tests/unit/helpers/tlog.h"

#define SPP 4 /* sectors a 2048-byte page */

#define FTL_NEW(...)                                                           \
	({                                                                     \
		struct mq_device *__d;                                         \
		struct mq_err __e = {{0}};                                     \
		if (tdevice_create(&__d, &__e, "ftl", "size=1M",               \
				   "erasesize=32K", "seed=3", ##__VA_ARGS__,   \
				   NULL))                                      \
			ck_abort_msg("create failed: %s", __e.msg);            \
		__d;                                                           \
	})

static const char *attr(struct mq_device *d, const char *name)
{
	static __thread char buf[256];

	return tdisk_attr(d->disks[0], name, buf, sizeof(buf));
}

static unsigned long num(struct mq_device *d, const char *name)
{
	return strtoul(attr(d, name), NULL, 10);
}

static struct mq_queue *q0(struct mq_device *d)
{
	return d->disks[0]->queue;
}

static bool same(struct mq_device *d, uint32_t sector, uint32_t n,
		 unsigned int seed)
{
	uint8_t *b = malloc((size_t)n * 512), *w = malloc((size_t)n * 512);
	bool ok;

	ck_assert(b && w);
	tio_fill(w, (size_t)n * 512, seed);
	ck_assert_int_eq(tio_io(q0(d), 0, REQ_OP_READ, 0, sector, n * 512, b),
			 0);
	ok = !memcmp(b, w, (size_t)n * 512);
	free(b);
	free(w);
	return ok;
}

static bool erased(struct mq_device *d, uint32_t sector)
{
	uint8_t b[512];
	int i;

	ck_assert_int_eq(tio_io(q0(d), 0, REQ_OP_READ, 0, sector, 512, b), 0);
	for (i = 0; i < 512; i++)
		if (b[i] != 0xFF)
			return false;
	return true;
}

static int flush(struct mq_device *d)
{
	return tio_io(q0(d), 0, REQ_OP_FLUSH, 0, 0, 0, NULL);
}

START_TEST(test_mapping_round_trip)
{
	struct mq_device *d = FTL_NEW();

	ck_assert_str_eq(d->disks[0]->disk_name, "ftl0");
	/* 32 blocks of 16 pages, 4 kept back */
	ck_assert_str_eq(attr(d, "logical_pages"), "448");
	ck_assert_uint_eq(get_capacity(d->disks[0]), 448 * SPP);
	ck_assert(erased(d, 17));
	ck_assert_int_eq(tflash_write(d, 0, 16, 1), 0);
	ck_assert_int_eq(tflash_write(d, 1000, 3, 2), 0); /* part of a page */
	ck_assert(same(d, 0, 16, 1));
	ck_assert(same(d, 1000, 3, 2));
	ck_assert(erased(d, 1003));
	ck_assert_int_eq(tflash_write(d, 1001, 1, 3), 0);
	ck_assert(same(d, 1001, 1, 3));
	ck_assert(same(d, 1000, 1, 2));
	ck_assert_int_eq(flush(d), 0);
	ck_assert(same(d, 1000, 1, 2));
	ck_assert(same(d, 1001, 1, 3));
	ck_assert(same(d, 1002, 1, 2) == false); /* seed 2's 3rd sector */
	ck_assert_int_eq(tflash_write(d, 448 * SPP, 1, 1), EIO);
	mq_device_destroy(d);
}
END_TEST

/* mtd_blktrans_work runs the hook once each time its list runs dry. */
START_TEST(test_background_once_per_idle_period)
{
	struct mq_device *d = FTL_NEW();
	unsigned long before = num(d, "background_runs");
	int i;

	for (i = 0; i < 5; i++)
		ck_assert_int_eq(tflash_write(d, (uint32_t)i * 64, 1, 1), 0);
	ck_assert_int_eq(flush(d), 0);
	/*
	 * The hook runs after the request has ended: quiescing waits until
	 * queue_rq, and the work loop inside it, have returned.
	 */
	mq_quiesce_queue(q0(d));
	mq_unquiesce_queue(q0(d));
	/* one request at a time: each leaves the list empty once */
	ck_assert_uint_eq(num(d, "background_runs") - before, 6);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_nor_refused)
{
	struct mq_device *d;
	struct mq_err e = {{0}};

	ck_assert_int_eq(tdevice_create(&d, &e, "ftl", "type=nor", NULL), -1);
	ck_assert_msg(strstr(e.msg, "cannot open the translation"), "%s",
		      e.msg);
}
END_TEST

START_TEST(test_flush_is_the_durability_point)
{
	struct mq_device *d = FTL_NEW();

	ck_assert_int_eq(tflash_write(d, 40, 1, 5), 0);
	ck_assert_int_eq(flush(d), 0);
	ck_assert_int_eq(tflash_fault(d->disks[0], "powercut", ""), 0);
	ck_assert_int_eq(tflash_write(d, 90, 1, 6), EIO);
	ck_assert_int_eq(tflash_fault(d->disks[0], "poweron", ""), 0);
	ck_assert(same(d, 40, 1, 5));
	ck_assert_str_eq(attr(d, "recovered_pages"), "1");
	/* unflushed, in the page buffer only: lost */
	ck_assert_int_eq(tflash_write(d, 80, 1, 6), 0);
	ck_assert(same(d, 80, 1, 6));
	ck_assert_int_eq(tflash_fault(d->disks[0], "powercut", ""), 0);
	ck_assert_int_eq(tflash_fault(d->disks[0], "poweron", ""), 0);
	ck_assert(erased(d, 80));
	ck_assert(same(d, 40, 1, 5));
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_image_restart)
{
	char path[] = "/tmp/ftl-test-XXXXXX", img[64];
	struct mq_device *d;
	int fd = mkstemp(path), i;

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(img, sizeof(img), "image=%s", path);
	d = FTL_NEW(img);
	for (i = 0; i < 50; i++)
		ck_assert_int_eq(
			tflash_write(d, (uint32_t)(i * 7) % 400, 8, 100 + i),
			0);
	ck_assert_int_eq(tflash_write(d, 1500, 1, 9), 0);
	mq_device_destroy(d); /* release writes the last page */

	d = FTL_NEW(img);
	ck_assert(same(d, 1500, 1, 9));
	ck_assert(same(d, (49 * 7) % 400, 8, 149));
	ck_assert_uint_gt(num(d, "recovered_pages"), 50);
	mq_device_destroy(d);
	unlink(path);
}
END_TEST

/*
 * A page whose data no longer matches its OOB's CRC (here: one bit
 * cleared in the image, as a cell that leaked) is not taken by the scan.
 * The image layout is the chip's: a 4 KiB header, the data, then 64 bytes
 * of OOB a page; ftl's OOB record starts at byte 2 with its magic and the
 * logical page.
 */
START_TEST(test_scan_refuses_a_bad_crc)
{
	char path[] = "/tmp/ftl-test-XXXXXX", img[64];
	const uint32_t magic = 0x46544c31, lpn = 5;
	struct mq_device *d;
	uint8_t oob[64], byte;
	off_t data_at = -1;
	uint32_t ppn;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(img, sizeof(img), "image=%s", path);
	d = FTL_NEW(img);
	ck_assert_int_eq(tflash_write(d, lpn * SPP, SPP, 77), 0);
	mq_device_destroy(d);

	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	for (ppn = 0; ppn < 512 && data_at < 0; ppn++) {
		ck_assert_int_eq(
			pread(fd, oob, 64, 4096 + (1 << 20) + ppn * 64), 64);
		if (!memcmp(oob + 2, &magic, 4) && !memcmp(oob + 6, &lpn, 4))
			data_at = 4096 + (off_t)ppn * 2048;
	}
	ck_assert_msg(data_at >= 0, "logical page 5 not found in the image");
	/* clear one set bit of the page's data */
	ck_assert_int_eq(pread(fd, &byte, 1, data_at + 100), 1);
	ck_assert_uint_ne(byte, 0);
	byte &= (uint8_t)(byte - 1);
	ck_assert_int_eq(pwrite(fd, &byte, 1, data_at + 100), 1);
	close(fd);

	d = FTL_NEW(img);
	ck_assert(erased(d, lpn * SPP));
	ck_assert_str_eq(attr(d, "recovered_pages"), "0");
	mq_device_destroy(d);
	unlink(path);
}
END_TEST

/* Random page overwrites against a model of what each page holds. */
static void churn(struct mq_device *d, uint32_t pages, unsigned int n,
		  unsigned int *model, unsigned int seed0)
{
	unsigned int i, r = seed0;

	for (i = 0; i < n; i++) {
		uint32_t p;

		r = r * 1103515245u + 12345u;
		p = (r >> 8) % pages;
		model[p] = seed0 + i + 1;
		ck_assert_int_eq(tflash_write(d, p * SPP, SPP, model[p]), 0);
	}
}

START_TEST(test_gc_keeps_the_data)
{
	struct mq_device *d = FTL_NEW();
	unsigned int model[440] = {0};
	uint32_t p;

	churn(d, 440, 6000, model, 1);
	ck_assert_uint_gt(num(d, "gc_runs"), 100);
	for (p = 0; p < 440; p++)
		if (model[p])
			ck_assert_msg(same(d, p * SPP, SPP, model[p]),
				      "page %u", p);
	ck_assert_int_eq(flush(d), 0);
	ck_assert_int_eq(tflash_fault(d->disks[0], "powercut", ""), 0);
	ck_assert_int_eq(tflash_fault(d->disks[0], "poweron", ""), 0);
	for (p = 0; p < 440; p++)
		if (model[p])
			ck_assert_msg(same(d, p * SPP, SPP, model[p]),
				      "page %u after power-on", p);
	mq_device_destroy(d);
}
END_TEST

/*
 * The background hook runs each time the queue goes idle, but its
 * wear-levelling look at every block's erase count only reruns once a
 * block changed state: a stretch of reads costs no scans.
 */
START_TEST(test_wear_levelling_scans_only_after_a_change)
{
	struct mq_device *d = FTL_NEW();
	unsigned long runs, scans;
	int i;

	ck_assert_int_eq(tflash_write(d, 0, SPP, 11), 0);
	ck_assert_int_eq(flush(d), 0);
	ck_assert(same(d, 0, SPP, 11)); /* one idle period after the flush */
	runs = num(d, "background_runs");
	scans = num(d, "wl_scans");
	ck_assert_uint_gt(scans, 0); /* mounting and opening a block count */
	for (i = 0; i < 20; i++)
		ck_assert(same(d, 0, SPP, 11));
	mq_quiesce_queue(q0(d));
	mq_unquiesce_queue(q0(d));
	ck_assert_uint_ge(num(d, "background_runs") - runs, 20);
	ck_assert_uint_eq(num(d, "wl_scans"), scans);
	/* A new block opened: the next idle period looks again. */
	for (i = 1; i <= 17; i++)
		ck_assert_int_eq(tflash_write(d, (uint32_t)i * 64, SPP, i), 0);
	ck_assert_int_eq(flush(d), 0);
	mq_quiesce_queue(q0(d));
	mq_unquiesce_queue(q0(d));
	ck_assert_uint_gt(num(d, "wl_scans"), scans);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_wear_levelling_spreads_erases)
{
	struct mq_device *d = FTL_NEW();
	unsigned int model[448] = {0};
	unsigned int i, lo, hi;
	char counts[128];

	/* cold data over two thirds of the disk, never rewritten */
	for (i = 0; i < 300; i++)
		ck_assert_int_eq(tflash_write(d, i * SPP, SPP, 7000 + i), 0);
	/* then a hot page, flushed every time */
	for (i = 0; i < 8000; i++) {
		ck_assert_int_eq(tflash_write(d, 400 * SPP, 1, i), 0);
		ck_assert_int_eq(flush(d), 0);
	}
	snprintf(counts, sizeof(counts), "%s", attr(d, "erase_counts"));
	ck_assert_int_eq(sscanf(counts, "min %u mean %*f max %u", &lo, &hi), 2);
	ck_assert_msg(hi - lo <= 20, "erase counts: %s", counts);
	ck_assert_uint_gt(num(d, "wl_moves"), 0);
	for (i = 0; i < 300; i++)
		ck_assert(same(d, i * SPP, SPP, 7000 + i));
	(void)model;
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_worn_blocks_retired)
{
	/* three weak blocks fail their 2nd, 3rd and 4th erase */
	struct mq_device *d = FTL_NEW("weakblocks=3:1,7:2,12:3");
	unsigned int model[200] = {0}, round;
	uint32_t p;

	for (round = 0; round < 40; round++)
		churn(d, 200, 100, model, 50 + round * 100);
	ck_assert_str_eq(attr(d, "bad_blocks"), "3: 3 7 12");
	for (p = 0; p < 200; p++)
		if (model[p])
			ck_assert_msg(same(d, p * SPP, SPP, model[p]),
				      "page %u", p);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_powercut_every_step)
{
	static const char *const keys[] = {"size=64K", "erasesize=2K",
					   "writesize=512", "oobsize=32", NULL};
	struct tflash_op ops[160];
	unsigned int i, r = 11, cuts;

	for (i = 0; i < 160; i++) {
		r = r * 1103515245u + 12345u;
		if (i % 7 == 6 || i == 159) {
			ops[i] = (struct tflash_op){'F', 0, 0};
			continue;
		}
		ops[i] = (struct tflash_op){'W', (r >> 8) % 40,
					    1 + (r >> 20) % 3};
	}
	cuts = tflash_powercut_every_step("ftl", keys, ops, 160, 48, 0);
	ck_assert_uint_gt(cuts, 150);
}
END_TEST

static Suite *ftl_suite(void)
{
	Suite *s = suite_create("ftl");
	TCase *tc = tcase_create("ftl");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_mapping_round_trip);
	tcase_add_test(tc, test_background_once_per_idle_period);
	tcase_add_test(tc, test_nor_refused);
	tcase_add_test(tc, test_flush_is_the_durability_point);
	tcase_add_test(tc, test_image_restart);
	tcase_add_test(tc, test_scan_refuses_a_bad_crc);
	tcase_add_test(tc, test_gc_keeps_the_data);
	tcase_add_test(tc, test_wear_levelling_spreads_erases);
	tcase_add_test(tc, test_wear_levelling_scans_only_after_a_change);
	tcase_add_test(tc, test_worn_blocks_retired);
	tcase_add_test(tc, test_powercut_every_step);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(ftl_suite());
}
