// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for mtdblock and mtdblock_ro (backends/mtd/mtdblock.c,
 * mtd_blkdevs.c) through the device layer and the request core: the
 * erase-block cache's states, write-back on FLUSH and on a write to
 * another block, a failed write-back emptying the cache, what a power cut
 * loses at every step of a sequence, and the read-only variant.  Time is
 * off (time_scale=0).
 */
#include <check.h>
#include <errno.h>
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

#define EBS_SECT 64 /* erasesize=32K */

#define FLASH_NEW(dev, ...)                                                    \
	({                                                                     \
		struct mq_device *__d;                                         \
		struct mq_err __e = {{0}};                                     \
		if (tdevice_create(&__d, &__e, dev, "size=1M",                 \
				   "erasesize=32K", ##__VA_ARGS__, NULL))      \
			ck_abort_msg("create failed: %s", __e.msg);            \
		__d;                                                           \
	})

static const char *attr(struct mq_device *d, const char *name)
{
	static __thread char buf[256];

	return tdisk_attr(d->disks[0], name, buf, sizeof(buf));
}

static struct mq_queue *q0(struct mq_device *d)
{
	return d->disks[0]->queue;
}

static void check(struct mq_device *d, uint32_t sector, uint32_t n,
		  unsigned int seed)
{
	uint8_t *b = malloc((size_t)n * 512), *w = malloc((size_t)n * 512);

	ck_assert(b && w);
	tio_fill(w, (size_t)n * 512, seed);
	ck_assert_int_eq(tio_io(q0(d), 0, REQ_OP_READ, 0, sector, n * 512, b),
			 0);
	ck_assert_msg(!memcmp(b, w, (size_t)n * 512),
		      "sectors %u+%u differ from seed %u", sector, n, seed);
	free(b);
	free(w);
}

static int flush(struct mq_device *d)
{
	return tio_io(q0(d), 0, REQ_OP_FLUSH, 0, 0, 0, NULL);
}

START_TEST(test_tag_set_shape)
{
	struct mq_device *d = FLASH_NEW("mtdblock");
	struct mq_queue *q = q0(d);

	ck_assert_str_eq(d->disks[0]->disk_name, "mtdblock0");
	ck_assert_uint_eq(q->tag_set->queue_depth, 2);
	ck_assert_uint_eq(q->tag_set->nr_hw_queues, 1);
	ck_assert(q->tag_set->flags & MQ_F_SHOULD_MERGE);
	ck_assert(q->tag_set->flags & MQ_F_BLOCKING);
	ck_assert(q->limits.write_cache);
	ck_assert_uint_eq(get_capacity(d->disks[0]), 2048);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_cache_states)
{
	struct mq_device *d = FLASH_NEW("mtdblock");

	ck_assert_str_eq(attr(d, "cache_state"), "empty");
	ck_assert_int_eq(tflash_write(d, 3, 2, 1), 0);
	ck_assert_str_eq(attr(d, "cache_state"), "dirty 0x0");
	/* reads come from the cache */
	check(d, 3, 2, 1);
	ck_assert_str_eq(attr(d, "cache_writebacks"), "0");
	/* a write to another block writes the cached one back */
	ck_assert_int_eq(tflash_write(d, EBS_SECT + 1, 1, 2), 0);
	ck_assert_str_eq(attr(d, "cache_state"), "dirty 0x8000");
	ck_assert_str_eq(attr(d, "cache_writebacks"), "1");
	/* FLUSH writes back and leaves the cache empty */
	ck_assert_int_eq(flush(d), 0);
	ck_assert_str_eq(attr(d, "cache_state"), "empty");
	ck_assert_str_eq(attr(d, "cache_writebacks"), "2");
	/* a flush with nothing dirty writes nothing */
	ck_assert_int_eq(flush(d), 0);
	ck_assert_str_eq(attr(d, "cache_writebacks"), "2");
	check(d, 3, 2, 1);
	check(d, EBS_SECT + 1, 1, 2);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_small_writes_erase_the_same_block)
{
	struct mq_device *d = FLASH_NEW("mtdblock");
	int i;

	for (i = 0; i < 10; i++) {
		ck_assert_int_eq(tflash_write(d, 5, 1, 10 + i), 0);
		ck_assert_int_eq(flush(d), 0);
	}
	ck_assert_str_eq(attr(d, "erase_counts"),
			 "min 0 mean 0.31 max 10 stddev 1.74");
	/* 512 bytes a write, a whole erase block programmed for each */
	ck_assert_str_eq(attr(d, "write_amplification"), "64.00");
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_whole_block_write_skips_the_cache)
{
	/* erase blocks of one sector: every write covers a whole block */
	struct mq_device *d =
		FLASH_NEW("mtdblock", "type=nor", "erasesize=512", "size=64K");

	ck_assert_int_eq(tflash_write(d, 0, 8, 3), 0);
	ck_assert_str_eq(attr(d, "cache_state"), "empty");
	ck_assert_str_eq(attr(d, "cache_writebacks"), "0");
	check(d, 0, 8, 3);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_failed_writeback_empties_the_cache)
{
	struct mq_device *d = FLASH_NEW("mtdblock");

	ck_assert_int_eq(tflash_fault(d->disks[0], "badblock", "0"), 0);
	ck_assert_str_eq(attr(d, "bad_blocks"), "1: 0");
	ck_assert_int_eq(tflash_write(d, 0, 1, 4), 0);
	ck_assert_str_eq(attr(d, "cache_state"), "dirty 0x0");
	ck_assert_int_eq(flush(d), EIO);
	/* empty: the bad block is not rewritten by the next flush */
	ck_assert_str_eq(attr(d, "cache_state"), "empty");
	ck_assert_int_eq(flush(d), 0);
	ck_assert_str_eq(attr(d, "cache_writebacks"), "1");
	ck_assert_int_eq(tflash_fault(d->disks[0], "badblock", "32"), EINVAL);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_nand_advice_logged)
{
	struct mq_device *d;

	tlog_clear();
	d = FLASH_NEW("mtdblock");
	ck_assert_msg(tlog_has("is NAND, please consider using UBI"), "%s",
		      tlog_text());
	mq_device_destroy(d);
	tlog_clear();
	d = FLASH_NEW("mtdblock", "type=nor");
	ck_assert(!tlog_has("please consider using UBI"));
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_parts_make_disks)
{
	struct mq_device *d = FLASH_NEW("mtdblock", "parts=256K,256K");

	ck_assert_uint_eq(d->nr_disks, 3);
	ck_assert_str_eq(d->disks[2]->disk_name, "mtdblock2");
	ck_assert_uint_eq(get_capacity(d->disks[2]), 1024);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_readonly_variant)
{
	char path[] = "/tmp/mtdblock-test-XXXXXX";
	char img[64];
	struct mq_device *d;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(img, sizeof(img), "image=%s", path);
	d = FLASH_NEW("mtdblock", img);
	ck_assert_int_eq(tflash_write(d, 100, 4, 5), 0);
	mq_device_destroy(d); /* release writes the cache back */

	d = FLASH_NEW("mtdblock_ro", img);
	ck_assert(d->disks[0]->read_only);
	check(d, 100, 4, 5);
	ck_assert_int_eq(tflash_write(d, 100, 1, 6), EIO);
	check(d, 100, 4, 5);
	mq_device_destroy(d);
	unlink(path);
}
END_TEST

START_TEST(test_powercut_loses_the_dirty_cache)
{
	struct mq_device *d = FLASH_NEW("mtdblock");

	ck_assert_int_eq(tflash_write(d, 0, 1, 7), 0);
	ck_assert_int_eq(flush(d), 0);
	ck_assert_int_eq(tflash_write(d, 0, 1, 8), 0);
	ck_assert_int_eq(tflash_write(d, 1, 1, 9), 0);
	ck_assert_int_eq(tflash_fault(d->disks[0], "powercut", ""), 0);
	ck_assert_str_eq(attr(d, "power"), "off");
	ck_assert_int_eq(flush(d), EIO);
	ck_assert_int_eq(tflash_write(d, 70, 1, 9), EIO);
	ck_assert_int_eq(tflash_fault(d->disks[0], "poweron", ""), 0);
	ck_assert_str_eq(attr(d, "cache_state"), "empty");
	check(d, 0, 1, 7); /* the flushed value; 8 and 9 were in the cache */
	mq_device_destroy(d);
}
END_TEST

static const struct tflash_op seq[] = {
	{'W', 0, 1},	{'W', 3, 2},   {'F'},	     {'W', 64, 8},
	{'W', 1, 1},	{'W', 130, 4}, {'F'},	     {'W', 0, 64},
	{'W', 200, 3},	{'W', 65, 1},  {'F'},	     {'W', 10, 1},
	{'W', 300, 16}, {'F'},	       {'W', 70, 1}, {'W', 71, 1},
	{'W', 2, 1},	{'F'},
};

START_TEST(test_powercut_every_step)
{
	static const char *const keys[] = {"size=1M", "erasesize=32K", NULL};
	unsigned int cuts = tflash_powercut_every_step(
		"mtdblock", keys, seq, sizeof(seq) / sizeof(seq[0]), 400,
		EBS_SECT);

	/* every program and erase of the sequence was a cut point */
	ck_assert_uint_gt(cuts, 50);
}
END_TEST

static Suite *mtdblock_suite(void)
{
	Suite *s = suite_create("mtdblock");
	TCase *tc = tcase_create("mtdblock");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_tag_set_shape);
	tcase_add_test(tc, test_cache_states);
	tcase_add_test(tc, test_small_writes_erase_the_same_block);
	tcase_add_test(tc, test_whole_block_write_skips_the_cache);
	tcase_add_test(tc, test_failed_writeback_empties_the_cache);
	tcase_add_test(tc, test_nand_advice_logged);
	tcase_add_test(tc, test_parts_make_disks);
	tcase_add_test(tc, test_readonly_variant);
	tcase_add_test(tc, test_powercut_loses_the_dirty_cache);
	tcase_add_test(tc, test_powercut_every_step);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(mtdblock_suite());
}
