/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests for the timing models (backends/timing): their arithmetic,
 * in nominal nanoseconds.  Nothing here sleeps; the real-time figures are
 * measured by bench/timing-bench.sh.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mq/params.h"
#include "backends/timing/optical.h"
#include "backends/timing/rotational.h"
#include "tests/unit/helpers/tcheck.h"

#define MS	     1e6
#define DISK_SECTORS ((80ULL << 30) >> 9) /* 80 GiB */

/* A small deterministic generator: the same sequence on every run. */
static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 11;
}

static void disk_init(struct rotational_model *m)
{
	struct rotational_params p;

	rotational_params_default(&p);
	rotational_init(m, &p, DISK_SECTORS);
}

/* Mean service time of n random 4 KiB reads over the whole disk. */
static double mean_random_read_ns(struct rotational_model *m, unsigned int n)
{
	uint64_t s = 42, total = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint64_t sector = rng_next(&s) % (DISK_SECTORS - 8) & ~7ULL;

		total += timing_service_ns(&m->base, TIMING_READ, sector, 4096);
	}
	return (double)total / n;
}

START_TEST(test_rotational_defaults)
{
	struct rotational_params p;

	rotational_params_default(&p);
	ck_assert_uint_eq(p.rpm, 7200);
	ck_assert(fabs(p.seek_ms - 8.5) < 1e-9);
	ck_assert(fabs(p.track_seek_ms - 0.8) < 1e-9);
	ck_assert_int_eq(p.udma, 5);
	ck_assert(p.write_cache);
}
END_TEST

START_TEST(test_rotational_seek_curve)
{
	struct rotational_model m;
	uint64_t s = 7;
	double sum = 0;
	unsigned int i, n = 200000;

	disk_init(&m);
	ck_assert(rotational_seek_ns(&m, 100, 100) == 0);
	/* One track over: the track-to-track time, or a hair more. */
	ck_assert(fabs(rotational_seek_ns(&m, 100, 101) - 0.8 * MS) < 0.1 * MS);
	/* Full stroke: longer than the average, shorter than twice it. */
	ck_assert(rotational_seek_ns(&m, 0, m.nr_tracks - 1) > 8.5 * MS);
	ck_assert(rotational_seek_ns(&m, 0, m.nr_tracks - 1) < 17 * MS);
	/* Longer seeks never take less time. */
	ck_assert(rotational_seek_ns(&m, 0, 1000) <
		  rotational_seek_ns(&m, 0, 100000));
	/* Random pairs of tracks average the nominal 8.5 ms. */
	for (i = 0; i < n; i++) {
		uint64_t a = rng_next(&s) % m.nr_tracks;
		uint64_t b = rng_next(&s) % m.nr_tracks;

		sum += rotational_seek_ns(&m, a, b);
	}
	ck_assert_msg(fabs(sum / n - 8.5 * MS) < 0.1 * MS, "mean seek %.3f ms",
		      sum / n / MS);
	rotational_destroy(&m);
}
END_TEST

START_TEST(test_rotational_latency_from_rpm)
{
	struct rotational_params p;
	struct rotational_model m;

	rotational_params_default(&p);
	rotational_init(&m, &p, DISK_SECTORS);
	/* 7200 rpm: 8.33 ms a turn, 4.17 ms on average. */
	ck_assert(fabs(m.rev_ns - 8.333333 * MS) < 0.001 * MS);
	ck_assert(fabs(rotational_avg_latency_ns(&m) - 4.166667 * MS) <
		  0.001 * MS);
	rotational_destroy(&m);

	p.rpm = 5400;
	rotational_init(&m, &p, DISK_SECTORS);
	ck_assert(fabs(rotational_avg_latency_ns(&m) - 5.555556 * MS) <
		  0.001 * MS);
	rotational_destroy(&m);
}
END_TEST

/* The benchmark's figure, in arithmetic: 80-90 random 4k reads/s at QD1. */
START_TEST(test_rotational_random_iops)
{
	struct rotational_model m;
	double mean, expect, iops;

	disk_init(&m);
	mean = mean_random_read_ns(&m, 50000);
	/* seek + half a turn + 4 KiB at 100 MB/s */
	expect = 8.5 * MS + m.rev_ns / 2 + 4096 / 100e6 * 1e9;
	ck_assert_msg(fabs(mean - expect) < 0.02 * expect,
		      "mean %.3f ms, expected %.3f ms", mean / MS, expect / MS);
	iops = 1e9 / mean;
	ck_assert_msg(iops > 76.5 && iops < 93.5, "%.1f IOPS", iops);
	rotational_destroy(&m);
}
END_TEST

START_TEST(test_rotational_sequential_beats_random)
{
	struct rotational_model m;
	uint64_t seq = 0, ns;
	unsigned int i;
	double rnd;

	disk_init(&m);
	/* After the first, sequential reads cost the transfer alone. */
	timing_service_ns(&m.base, TIMING_READ, 1000000, 4096);
	for (i = 1; i <= 1000; i++) {
		ns = timing_service_ns(&m.base, TIMING_READ, 1000000 + i * 8ULL,
				       4096);
		ck_assert_uint_eq(ns, (uint64_t)(4096 / 100e6 * 1e9));
		seq += ns;
	}
	rnd = mean_random_read_ns(&m, 1000) * 1000;
	ck_assert_msg(seq * 100 < rnd, "sequential %lu ns, random %.0f ns",
		      (unsigned long)seq, rnd);
	rotational_destroy(&m);
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The same requests in sorted order take less time: the head moves less. */
START_TEST(test_rotational_sorted_beats_unsorted)
{
	struct rotational_model m;
	uint64_t sectors[256], s = 99, unsorted = 0, sorted = 0;
	unsigned int i;

	for (i = 0; i < 256; i++)
		sectors[i] = rng_next(&s) % (DISK_SECTORS - 8) & ~7ULL;
	disk_init(&m);
	for (i = 0; i < 256; i++)
		unsorted += timing_service_ns(&m.base, TIMING_READ, sectors[i],
					      4096);
	rotational_destroy(&m);

	qsort(sectors, 256, sizeof(sectors[0]), cmp_u64);
	disk_init(&m);
	for (i = 0; i < 256; i++)
		sorted += timing_service_ns(&m.base, TIMING_READ, sectors[i],
					    4096);
	rotational_destroy(&m);
	ck_assert_msg(sorted * 3 < unsorted * 2, "sorted %lu, unsorted %lu",
		      (unsigned long)sorted, (unsigned long)unsorted);
}
END_TEST

START_TEST(test_rotational_transfer_modes)
{
	struct rotational_params p;
	struct rotational_model m;
	uint64_t ns;

	ck_assert(fabs(rotational_udma_rate(6) - 133.3e6) < 1);
	ck_assert(fabs(rotational_udma_rate(2) - 33.3e6) < 1);
	ck_assert(fabs(rotational_pio_rate(4) - 16.7e6) < 1);
	ck_assert(fabs(rotational_pio_rate(0) - 3.3e6) < 1);

	/* A sequential 128 KiB read costs 128 KiB at the mode's rate. */
	rotational_params_default(&p);
	p.udma = 2;
	rotational_init(&m, &p, DISK_SECTORS);
	timing_service_ns(&m.base, TIMING_READ, 0, 4096);
	ns = timing_service_ns(&m.base, TIMING_READ, 8, 131072);
	ck_assert_uint_eq(ns, (uint64_t)(131072 / 33.3e6 * 1e9));
	rotational_destroy(&m);

	p.udma = -1;
	p.pio = 4;
	rotational_init(&m, &p, DISK_SECTORS);
	timing_service_ns(&m.base, TIMING_READ, 0, 4096);
	ns = timing_service_ns(&m.base, TIMING_READ, 8, 131072);
	ck_assert_uint_eq(ns, (uint64_t)(131072 / 16.7e6 * 1e9));
	rotational_destroy(&m);
}
END_TEST

START_TEST(test_rotational_write_cache)
{
	struct rotational_params p;
	struct rotational_model m;
	uint64_t xfer = (uint64_t)(4096 / 100e6 * 1e9), ns;

	rotational_params_default(&p);
	rotational_init(&m, &p, DISK_SECTORS);
	/* Cached writes cost their transfer, wherever they go. */
	ck_assert_uint_eq(
		timing_service_ns(&m.base, TIMING_WRITE, 123456789, 4096),
		xfer);
	ck_assert_uint_eq(timing_service_ns(&m.base, TIMING_WRITE, 999, 4096),
			  xfer);
	ck_assert_uint_eq(m.dirty_extents, 2);
	/* The flush pays for them; a second flush has nothing to do. */
	ns = timing_service_ns(&m.base, TIMING_FLUSH, 0, 0);
	ck_assert(ns > 2 * m.rev_ns / 2);
	ck_assert_uint_eq(timing_service_ns(&m.base, TIMING_FLUSH, 0, 0), 0);
	rotational_destroy(&m);

	p.write_cache = false;
	rotational_init(&m, &p, DISK_SECTORS);
	timing_service_ns(&m.base, TIMING_READ, 0, 4096);
	ns = timing_service_ns(&m.base, TIMING_WRITE, DISK_SECTORS / 2, 4096);
	ck_assert(ns > 5 * MS); /* a seek across half the disk */
	ck_assert_uint_eq(timing_service_ns(&m.base, TIMING_FLUSH, 0, 0), 0);
	ck_assert_uint_eq(m.base.nr_cmds, 3);
	rotational_destroy(&m);
}
END_TEST

static struct mq_params *params(const char *kv1, const char *kv2)
{
	struct mq_params *p = mq_params_new();
	struct mq_err e;

	ck_assert_ptr_nonnull(p);
	if (kv1)
		ck_assert_int_eq(mq_params_set_kv(p, kv1, &e), 0);
	if (kv2)
		ck_assert_int_eq(mq_params_set_kv(p, kv2, &e), 0);
	return p;
}

START_TEST(test_rotational_params_read)
{
	struct rotational_params rp;
	struct mq_params *p;
	struct mq_err e;

	p = params("hdb.rpm=5400", "hdb.udma=-1");
	ck_assert_int_eq(rotational_params_read(&rp, p, "hdb.", &e), 0);
	ck_assert_uint_eq(rp.rpm, 5400);
	ck_assert_int_eq(rp.udma, -1);
	ck_assert_ptr_null(mq_params_first_unused(p));
	mq_params_free(p);

	p = params("pio=2", NULL);
	ck_assert_int_eq(rotational_params_read(&rp, p, "", &e), 0);
	ck_assert_int_eq(rp.udma, -1);
	ck_assert_uint_eq(rp.pio, 2);
	mq_params_free(p);

	p = params("udma=7", NULL);
	ck_assert_int_eq(rotational_params_read(&rp, p, "", &e), -1);
	mq_params_free(p);

	p = params("udma=4", "pio=2");
	ck_assert_int_eq(rotational_params_read(&rp, p, "", &e), -1);
	mq_params_free(p);

	p = params("seek_ms=0.5", NULL); /* below track-to-track */
	ck_assert_int_eq(rotational_params_read(&rp, p, "", &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "track_seek_ms"));
	mq_params_free(p);
}
END_TEST

static void cd_init(struct optical_model *m, unsigned int speed)
{
	struct optical_params p;

	optical_params_default(&p);
	p.speed = speed;
	optical_init(m, &p, (700ULL << 20) >> 9);
}

/* 12x CLV: 12 x 150 KiB/s = 1.8 MB/s. */
START_TEST(test_optical_clv_rate)
{
	struct optical_model m;
	uint64_t total = 0;
	unsigned int i;
	double rate;

	cd_init(&m, 12);
	ck_assert(fabs(optical_rate(&m) - 1843200.0) < 1e-6);
	/* Sequential reads from the start: no seek, the CLV rate. */
	for (i = 0; i < 100; i++)
		total += timing_service_ns(&m.base, TIMING_READ, i * 128ULL,
					   65536);
	rate = 100 * 65536.0 / (total / 1e9);
	ck_assert_msg(fabs(rate - 1843200.0) < 1000, "%.0f B/s", rate);
	optical_destroy(&m);

	cd_init(&m, 1);
	ck_assert(fabs(optical_rate(&m) - 153600.0) < 1e-6);
	/* One 2048-byte frame at 1x is 1/75 s. */
	ck_assert_uint_eq(timing_service_ns(&m.base, TIMING_READ, 0, 2048),
			  (uint64_t)(2048 / 153600.0 * 1e9));
	optical_destroy(&m);
}
END_TEST

START_TEST(test_optical_seek_and_spinup)
{
	struct optical_model m;
	uint64_t s = 5, sectors = (700ULL << 20) >> 9;
	double sum = 0, xfer = 2048 / 1843200.0 * 1e9;
	unsigned int i, n = 20000;

	cd_init(&m, 12);
	for (i = 0; i < n; i++)
		sum += timing_service_ns(&m.base, TIMING_READ,
					 rng_next(&s) % (sectors - 4) & ~3ULL,
					 2048) -
		       xfer;
	ck_assert_msg(fabs(sum / n - 100 * MS) < 2 * MS, "mean access %.2f ms",
		      sum / n / MS);
	/* Insert: the spin-up time, and the head goes back to the start. */
	ck_assert_uint_eq(optical_insert(&m, sectors), 1500 * MS);
	ck_assert_uint_eq(m.head, 0);
	ck_assert_uint_eq(timing_service_ns(&m.base, TIMING_READ, 0, 2048),
			  (uint64_t)xfer);
	/* Nothing else costs time. */
	ck_assert_uint_eq(timing_service_ns(&m.base, TIMING_OTHER, 0, 0), 0);
	optical_destroy(&m);
}
END_TEST

START_TEST(test_optical_params_read)
{
	struct optical_params op;
	struct mq_params *p;
	struct mq_err e;

	p = params("speed=52", "spinup_ms=2500");
	ck_assert_int_eq(optical_params_read(&op, p, "", &e), 0);
	ck_assert_uint_eq(op.speed, 52);
	ck_assert(fabs(op.spinup_ms - 2500) < 1e-9);
	ck_assert(fabs(op.seek_ms - 100) < 1e-9);
	mq_params_free(p);

	p = params("hdc.speed=0", NULL);
	ck_assert_int_eq(optical_params_read(&op, p, "hdc.", &e), -1);
	mq_params_free(p);
}
END_TEST

static Suite *timing_suite(void)
{
	Suite *s = suite_create("timing");
	TCase *tc = tcase_create("rotational");

	tcase_add_test(tc, test_rotational_defaults);
	tcase_add_test(tc, test_rotational_seek_curve);
	tcase_add_test(tc, test_rotational_latency_from_rpm);
	tcase_add_test(tc, test_rotational_random_iops);
	tcase_add_test(tc, test_rotational_sequential_beats_random);
	tcase_add_test(tc, test_rotational_sorted_beats_unsorted);
	tcase_add_test(tc, test_rotational_transfer_modes);
	tcase_add_test(tc, test_rotational_write_cache);
	tcase_add_test(tc, test_rotational_params_read);
	suite_add_tcase(s, tc);

	tc = tcase_create("optical");
	tcase_add_test(tc, test_optical_clv_rate);
	tcase_add_test(tc, test_optical_seek_and_spinup);
	tcase_add_test(tc, test_optical_params_read);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(timing_suite());
}
