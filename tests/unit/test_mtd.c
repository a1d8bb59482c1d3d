// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the raw flash chip (backends/mtd/nandsim.c): what a
 * program and an erase do to the cells, NAND's program-once rule, wear,
 * nandsim's weak and grave pages, bitflips against ECC, the image, and
 * torn operations at a power cut.  Time is off (time_scale 0).
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/mtd/mtd.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tlog.h"

#define PAGE  2048
#define OOB   64
#define EBS   (16 * PAGE) /* small erase blocks: 16 pages */
#define CHIPS "size=512K" /* 16 blocks */

/* A chip from "key=value" strings ending with NULL, on partition *mtd. */
static struct mtd_chip *chip_new(struct mtd_info *mtd, ...)
{
	struct mtd_chip_params cp;
	struct mq_params *p = mq_params_new();
	struct mtd_chip *chip;
	struct mq_err e = {{0}};
	const char *kv;
	va_list ap;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(mq_params_set_kv(p, "erasesize=32K", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, CHIPS, &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "seed=7", &e), 0);
	va_start(ap, mtd);
	while ((kv = va_arg(ap, const char *)))
		ck_assert_int_eq(mq_params_set_kv(p, kv, &e), 0);
	va_end(ap);
	ck_assert_msg(mtd_chip_params_read(&cp, p, &e) == 0, "%s", e.msg);
	chip = mtd_chip_create(&cp, 0, &e);
	ck_assert_msg(chip != NULL, "%s", e.msg);
	ck_assert_int_eq(mtd_parse_parts(chip, NULL, mtd, 1, &e), 1);
	mq_params_free(p);
	return chip;
}

static int chip_refused(struct mq_err *e, ...)
{
	struct mtd_chip_params cp;
	struct mq_params *p = mq_params_new();
	struct mtd_chip *chip = NULL;
	const char *kv;
	va_list ap;
	int ret;

	va_start(ap, e);
	while ((kv = va_arg(ap, const char *)))
		ck_assert_int_eq(mq_params_set_kv(p, kv, e), 0);
	va_end(ap);
	ret = mtd_chip_params_read(&cp, p, e);
	if (!ret) {
		chip = mtd_chip_create(&cp, 0, e);
		ret = chip ? 0 : -1;
	}
	mtd_chip_destroy(chip);
	mq_params_free(p);
	return ret;
}

static void fill(uint8_t *b, size_t n, uint8_t v)
{
	memset(b, v, n);
}

static bool all(const uint8_t *b, size_t n, uint8_t v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

START_TEST(test_nor_clears_bits_and_erase_sets_ff)
{
	struct mtd_info mtd;
	struct mtd_chip *chip = chip_new(&mtd, "type=nor", NULL);
	uint8_t w[100], r[100];
	size_t n;

	ck_assert_int_eq(mtd_read(&mtd, 1000, 100, &n, r), 0);
	ck_assert(all(r, 100, 0xFF));
	fill(w, 100, 0xF0);
	ck_assert_int_eq(mtd_write(&mtd, 1000, 100, &n, w), 0);
	fill(w, 100, 0x3C);
	/* NOR takes a second program of the same bytes: only clearing */
	ck_assert_int_eq(mtd_write(&mtd, 1000, 100, &n, w), 0);
	ck_assert_int_eq(mtd_read(&mtd, 1000, 100, &n, r), 0);
	ck_assert(all(r, 100, 0x30));
	ck_assert_int_eq(mtd_erase(&mtd, 0, EBS), 0);
	ck_assert_int_eq(mtd_read(&mtd, 1000, 100, &n, r), 0);
	ck_assert(all(r, 100, 0xFF));
	ck_assert_uint_eq(mtd_chip_erase_count(chip, 0), 1);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_nand_program_once)
{
	struct mtd_info mtd;
	struct mtd_chip *chip = chip_new(&mtd, NULL);
	uint8_t w[PAGE], r[PAGE];
	size_t n;

	fill(w, PAGE, 0xA5);
	ck_assert_int_eq(mtd_write(&mtd, PAGE, PAGE, &n, w), 0);
	/* the same page again, even with the same bytes: EIO */
	ck_assert_int_eq(mtd_write(&mtd, PAGE, PAGE, &n, w), -EIO);
	/* pages only: part of one is refused */
	ck_assert_int_eq(mtd_write(&mtd, 2 * PAGE + 512, 512, &n, w), -EINVAL);
	ck_assert_int_eq(mtd_read(&mtd, PAGE, PAGE, &n, r), 0);
	ck_assert(all(r, PAGE, 0xA5));
	ck_assert_int_eq(mtd_erase(&mtd, 0, EBS), 0);
	ck_assert_int_eq(mtd_read(&mtd, PAGE, PAGE, &n, r), 0);
	ck_assert(all(r, PAGE, 0xFF));
	fill(w, PAGE, 0x0F);
	ck_assert_int_eq(mtd_write(&mtd, PAGE, PAGE, &n, w), 0);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_nand_oob_with_page)
{
	struct mtd_info mtd;
	struct mtd_chip *chip = chip_new(&mtd, NULL);
	uint8_t w[PAGE], r[PAGE], o[OOB], ro[OOB];

	fill(w, PAGE, 0x11);
	fill(o, OOB, 0x22);
	ck_assert_int_eq(mtd_write_oob(&mtd, 3 * PAGE, w, o), 0);
	ck_assert_int_eq(mtd_read_oob(&mtd, 3 * PAGE, r, ro), 0);
	ck_assert(all(r, PAGE, 0x11));
	ck_assert(all(ro, OOB, 0x22));
	/* the OOB is part of the page's one program */
	ck_assert_int_eq(mtd_write_oob(&mtd, 3 * PAGE, w, o), -EIO);
	ck_assert_int_eq(mtd_read_oob(&mtd, 4 * PAGE, r, ro), 0);
	ck_assert(all(ro, OOB, 0xFF));
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_endurance_grows_bad_blocks)
{
	struct mtd_info mtd;
	struct mtd_chip *chip = chip_new(&mtd, "endurance=3", NULL);
	struct mtd_chip_stats st;
	uint8_t w[PAGE];
	size_t n;
	int i;

	fill(w, PAGE, 0);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(mtd_erase(&mtd, 0, EBS), 0);
		ck_assert_int_eq(mtd_erase(&mtd, EBS, EBS), 0);
	}
	ck_assert_int_eq(mtd_block_isbad(&mtd, 0), 0);
	/* worn: the next erase (block 0) or program (block 1) fails */
	ck_assert_int_eq(mtd_erase(&mtd, 0, EBS), -EIO);
	ck_assert_int_eq(mtd_write(&mtd, EBS, PAGE, &n, w), -EIO);
	ck_assert_int_eq(mtd_block_isbad(&mtd, 0), 1);
	ck_assert_int_eq(mtd_block_isbad(&mtd, EBS), 1);
	ck_assert_int_eq(mtd_block_isbad(&mtd, 2 * EBS), 0);
	/* and stays bad */
	ck_assert_int_eq(mtd_erase(&mtd, EBS, EBS), -EIO);
	mtd_chip_get_stats(chip, 0, 16, &st);
	ck_assert_uint_eq(st.bad_blocks, 2);
	ck_assert_uint_eq(st.max_erase, 3);
	ck_assert_uint_eq(st.min_erase, 0);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_factory_bad_blocks)
{
	struct mtd_info mtd;
	struct mtd_chip *chip = chip_new(&mtd, "badblocks=2,5", NULL);
	char list[64];
	uint8_t w[PAGE];
	size_t n;

	fill(w, PAGE, 0);
	ck_assert_int_eq(mtd_block_isbad(&mtd, 2 * EBS), 1);
	ck_assert_int_eq(mtd_block_isbad(&mtd, 5 * EBS), 1);
	ck_assert_int_eq(mtd_block_isbad(&mtd, 3 * EBS), 0);
	ck_assert_int_eq(mtd_erase(&mtd, 2 * EBS, EBS), -EIO);
	ck_assert_int_eq(mtd_write(&mtd, 5 * EBS, PAGE, &n, w), -EIO);
	ck_assert_int_eq(mtd_block_markbad(&mtd, 7 * EBS), 0);
	mtd_chip_bad_list(chip, 0, 16, list, sizeof(list));
	ck_assert_str_eq(list, "2f 5f 7");
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_weak_blocks_and_pages)
{
	struct mtd_info mtd;
	struct mtd_chip *chip =
		chip_new(&mtd, "weakblocks=1:2", "weakpages=40:1", NULL);
	uint8_t w[PAGE];
	size_t n;

	fill(w, PAGE, 0);
	ck_assert_int_eq(mtd_erase(&mtd, EBS, EBS), 0);
	ck_assert_int_eq(mtd_erase(&mtd, EBS, EBS), 0);
	ck_assert_int_eq(mtd_erase(&mtd, EBS, EBS), -EIO);
	ck_assert_int_eq(mtd_block_isbad(&mtd, EBS), 1);
	/* page 40 is in block 2: one program, then it fails */
	ck_assert_int_eq(mtd_write(&mtd, 40 * PAGE, PAGE, &n, w), 0);
	ck_assert_int_eq(mtd_erase(&mtd, 2 * EBS, EBS), 0);
	ck_assert_int_eq(mtd_write(&mtd, 40 * PAGE, PAGE, &n, w), -EIO);
	ck_assert_int_eq(mtd_write(&mtd, 41 * PAGE, PAGE, &n, w), 0);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_grave_pages)
{
	struct mtd_info mtd;
	struct mtd_chip *chip = chip_new(&mtd, "gravepages=3:2", NULL);
	uint8_t r[PAGE];
	size_t n;

	ck_assert_int_eq(mtd_read(&mtd, 3 * PAGE, PAGE, &n, r), 0);
	ck_assert_int_eq(mtd_read(&mtd, 3 * PAGE, PAGE, &n, r), 0);
	ck_assert_int_eq(mtd_read(&mtd, 3 * PAGE, PAGE, &n, r), -EBADMSG);
	ck_assert_int_eq(mtd_read(&mtd, 4 * PAGE, PAGE, &n, r), 0);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_bitflips_within_ecc)
{
	struct mtd_info mtd;
	struct mtd_chip *chip =
		chip_new(&mtd, "bitflips=3", "ecc_strength=4", NULL);
	struct mtd_chip_stats st;
	uint8_t w[PAGE], r[PAGE];
	size_t n;

	fill(w, PAGE, 0x5A);
	ck_assert_int_eq(mtd_write(&mtd, 0, PAGE, &n, w), 0);
	tlog_clear();
	ck_assert_int_eq(mtd_read(&mtd, 0, PAGE, &n, r), -EUCLEAN);
	ck_assert(mtd_is_bitflip(-EUCLEAN));
	ck_assert(all(r, PAGE, 0x5A));
	ck_assert_msg(tlog_has("corrected"), "%s", tlog_text());
	mtd_chip_get_stats(chip, 0, 16, &st);
	ck_assert_uint_eq(st.ecc_corrected, 3);
	ck_assert_uint_eq(st.ecc_failed, 0);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_bitflips_beyond_ecc)
{
	struct mtd_info mtd;
	struct mtd_chip *chip =
		chip_new(&mtd, "bitflips=5", "ecc_strength=4", NULL);
	struct mtd_chip_stats st;
	uint8_t w[PAGE], r[PAGE];
	size_t n;

	fill(w, PAGE, 0x5A);
	ck_assert_int_eq(mtd_write(&mtd, 0, PAGE, &n, w), 0);
	tlog_clear();
	ck_assert_int_eq(mtd_read(&mtd, 0, PAGE, &n, r), -EBADMSG);
	ck_assert(!all(r, PAGE, 0x5A));
	ck_assert_msg(tlog_has("EBADMSG"), "%s", tlog_text());
	mtd_chip_get_stats(chip, 0, 16, &st);
	ck_assert_uint_eq(st.ecc_failed, 1);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_image_persists)
{
	char path[] = "/tmp/mtd-test-XXXXXX";
	struct mtd_info mtd;
	struct mtd_chip *chip;
	uint8_t w[PAGE], r[PAGE], o[OOB], ro[OOB];
	struct mq_err e = {{0}};
	char img[64], list[32];
	size_t n;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(img, sizeof(img), "image=%s", path);
	chip = chip_new(&mtd, img, NULL);
	fill(w, PAGE, 0x42);
	fill(o, OOB, 0x24);
	ck_assert_int_eq(mtd_erase(&mtd, 3 * EBS, EBS), 0);
	ck_assert_int_eq(mtd_write_oob(&mtd, 3 * EBS, w, o), 0);
	ck_assert_int_eq(mtd_block_markbad(&mtd, 9 * EBS), 0);
	mtd_chip_destroy(chip);

	chip = chip_new(&mtd, img, NULL);
	ck_assert_int_eq(mtd_read_oob(&mtd, 3 * EBS, r, ro), 0);
	ck_assert(all(r, PAGE, 0x42));
	ck_assert(all(ro, OOB, 0x24));
	ck_assert_uint_eq(mtd_chip_erase_count(chip, 3), 1);
	mtd_chip_bad_list(chip, 0, 16, list, sizeof(list));
	ck_assert_str_eq(list, "9");
	/* still programmed since its erase */
	ck_assert_int_eq(mtd_write(&mtd, 3 * EBS, PAGE, &n, w), -EIO);
	mtd_chip_destroy(chip);

	/* a different geometry is refused, naming what the image holds */
	ck_assert_int_eq(
		chip_refused(&e, img, "size=1M", "erasesize=32K", NULL), -1);
	ck_assert_msg(strstr(e.msg, "give the same keys"), "%s", e.msg);
	unlink(path);
}
END_TEST

/* Power-on reloads the image the keys named, after probe freed them. */
START_TEST(test_poweron_reloads_the_image)
{
	char path[] = "/tmp/mtd-test-XXXXXX";
	struct mtd_info mtd;
	struct mtd_chip *chip;
	uint8_t w[PAGE], r[PAGE];
	char *img = malloc(64);
	size_t n;
	int fd = mkstemp(path);

	ck_assert(fd >= 0 && img);
	close(fd);
	snprintf(img, 64, "image=%s", path);
	chip = chip_new(&mtd, img, NULL);
	memset(img, 'x', 63); /* what the keys held is gone */
	free(img);
	fill(w, PAGE, 0x3C);
	ck_assert_int_eq(mtd_write(&mtd, 5 * PAGE, PAGE, &n, w), 0);
	mtd_chip_powercut(chip);
	ck_assert_int_eq(mtd_chip_poweron(chip), 0);
	ck_assert_int_eq(mtd_read(&mtd, 5 * PAGE, PAGE, &n, r), 0);
	ck_assert(all(r, PAGE, 0x3C));
	mtd_chip_destroy(chip);
	unlink(path);
}
END_TEST

START_TEST(test_bad_keys_refused)
{
	struct mq_err e = {{0}};

	ck_assert_int_eq(chip_refused(&e, "type=emmc", NULL), -1);
	ck_assert_msg(strstr(e.msg, "nand, nor"), "%s", e.msg);
	ck_assert_int_eq(chip_refused(&e, "erasesize=100K", NULL), -1);
	ck_assert_int_eq(chip_refused(&e, "size=100K", NULL), -1);
	ck_assert_int_eq(chip_refused(&e, "badblocks=1,x", NULL), -1);
	ck_assert_int_eq(chip_refused(&e, "weakpages=3", NULL), -1);
	ck_assert_int_eq(chip_refused(&e, "badblocks=4096", NULL), -1);
	ck_assert_int_eq(chip_refused(&e, "type=nor", "writesize=2048", NULL),
			 -1);
	ck_assert_int_eq(chip_refused(&e, "cell=qlc", NULL), -1);
}
END_TEST

START_TEST(test_powercut_tears_a_program)
{
	struct mtd_info mtd;
	struct mtd_chip *chip;
	uint8_t w[PAGE], r[PAGE], o[OOB], ro[OOB];
	char seed[32];
	size_t n;

	snprintf(seed, sizeof(seed), "seed=%d", _i + 1);
	chip = chip_new(&mtd, seed, "powercut_after=2", NULL);
	fill(w, PAGE, 0);
	fill(o, OOB, 0);
	ck_assert_int_eq(mtd_write_oob(&mtd, 0, w, o), 0);
	ck_assert_int_eq(mtd_write_oob(&mtd, PAGE, w, o), -EIO);
	ck_assert(!mtd_chip_powered(chip));
	/* off: everything fails */
	ck_assert_int_eq(mtd_read(&mtd, 0, PAGE, &n, r), -EIO);
	ck_assert_int_eq(mtd_erase(&mtd, EBS, EBS), -EIO);
	ck_assert_int_eq(mtd_chip_poweron(chip), 0);
	ck_assert_int_eq(mtd_read_oob(&mtd, 0, r, ro), 0);
	ck_assert(all(r, PAGE, 0) && all(ro, OOB, 0));
	ck_assert_int_eq(mtd_read_oob(&mtd, PAGE, r, ro), 0);
	/* the torn page: programmed from its start, not to its end */
	ck_assert(!(all(r, PAGE, 0) && all(ro, OOB, 0)));
	/* and it counts as programmed */
	ck_assert_int_eq(mtd_write_oob(&mtd, PAGE, w, o), -EIO);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_powercut_tears_an_erase)
{
	struct mtd_info mtd;
	struct mtd_chip *chip;
	uint8_t *b = malloc(EBS);
	char seed[32], where[128];
	size_t n;

	ck_assert_ptr_nonnull(b);
	snprintf(seed, sizeof(seed), "seed=%d", _i + 1);
	chip = chip_new(&mtd, "type=nor", seed, "powercut_after=2", NULL);
	memset(b, 0, EBS);
	ck_assert_int_eq(mtd_write(&mtd, 0, EBS, &n, b), 0);
	ck_assert_int_eq(mtd_erase(&mtd, 0, EBS), -EIO);
	mtd_chip_last_cut(chip, where, sizeof(where));
	ck_assert_msg(strstr(where, "erase of block 0"), "%s", where);
	ck_assert_int_eq(mtd_chip_poweron(chip), 0);
	ck_assert_int_eq(mtd_read(&mtd, 0, EBS, &n, b), 0);
	ck_assert(!all(b, EBS, 0xFF));
	free(b);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_powercut_now)
{
	struct mtd_info mtd;
	struct mtd_chip *chip = chip_new(&mtd, NULL);
	uint8_t r[PAGE];
	size_t n;

	mtd_chip_powercut(chip);
	ck_assert_int_eq(mtd_read(&mtd, 0, PAGE, &n, r), -EIO);
	ck_assert_int_eq(mtd_chip_poweron(chip), 0);
	ck_assert_int_eq(mtd_read(&mtd, 0, PAGE, &n, r), 0);
	mtd_chip_destroy(chip);
}
END_TEST

START_TEST(test_parts)
{
	struct mtd_info mtd[4];
	struct mtd_chip *chip = chip_new(&mtd[0], NULL);
	struct mq_err e = {{0}};
	uint8_t w[PAGE], r[PAGE];
	size_t n;

	ck_assert_int_eq(mtd_parse_parts(chip, "128K,256K", mtd, 4, &e), 3);
	ck_assert_uint_eq(mtd[0].size, 128 << 10);
	ck_assert_uint_eq(mtd[1].offset, 128 << 10);
	ck_assert_uint_eq(mtd[2].size, 128 << 10);
	ck_assert_str_eq(mtd[2].name, "mtd2");
	fill(w, PAGE, 0x77);
	ck_assert_int_eq(mtd_write(&mtd[1], 0, PAGE, &n, w), 0);
	ck_assert_int_eq(mtd_read(&mtd[0], 128 << 10, PAGE, &n, r), -EINVAL);
	ck_assert_int_eq(mtd_read(&mtd[1], 0, PAGE, &n, r), 0);
	ck_assert(all(r, PAGE, 0x77));
	ck_assert_int_eq(mtd_parse_parts(chip, "100K", mtd, 4, &e), -1);
	ck_assert_int_eq(mtd_parse_parts(chip, "1M", mtd, 4, &e), -1);
	mtd_chip_destroy(chip);
}
END_TEST

static Suite *mtd_suite(void)
{
	Suite *s = suite_create("mtd");
	TCase *tc = tcase_create("chip");

	tcase_add_test(tc, test_nor_clears_bits_and_erase_sets_ff);
	tcase_add_test(tc, test_nand_program_once);
	tcase_add_test(tc, test_nand_oob_with_page);
	tcase_add_test(tc, test_endurance_grows_bad_blocks);
	tcase_add_test(tc, test_factory_bad_blocks);
	tcase_add_test(tc, test_weak_blocks_and_pages);
	tcase_add_test(tc, test_grave_pages);
	tcase_add_test(tc, test_bitflips_within_ecc);
	tcase_add_test(tc, test_bitflips_beyond_ecc);
	tcase_add_test(tc, test_image_persists);
	tcase_add_test(tc, test_poweron_reloads_the_image);
	tcase_add_test(tc, test_bad_keys_refused);
	tcase_add_loop_test(tc, test_powercut_tears_a_program, 0, 16);
	tcase_add_loop_test(tc, test_powercut_tears_an_erase, 0, 16);
	tcase_add_test(tc, test_powercut_now);
	tcase_add_test(tc, test_parts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(mtd_suite());
}
