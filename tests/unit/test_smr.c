/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host-managed SMR disk (backends/smr/): keys and limits, misplaced
 * writes (EIO, a log line naming zone, write pointer and offset, the zone
 * unchanged), reads above the write pointer, the open zone limit, TRIM as
 * zone reset, and the media model's arithmetic (a sequential stream pays
 * only its transfer at 235 MiB/s, a jump pays a seek and half a turn).
 * Devices run with time_scale=0.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/device.h"
#include "backends/smr/smr.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"
#include "tests/unit/helpers/tlog.h"

#define ZS (2048u * 16) /* 16 MiB zones */

static struct mq_device *smr_new(const char *a, const char *b)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	tlog_clear();
	if (tdevice_create(&d, &e, "smr", "capacity=256M", "zone_size=16M", a,
			   b, NULL))
		ck_abort_msg("create failed: %s", e.msg);
	return d;
}

static int wr(struct mq_device *d, uint64_t sector, uint32_t len)
{
	void *buf = malloc(len);
	int ret;

	ck_assert_ptr_nonnull(buf);
	tio_fill(buf, len, (unsigned int)sector);
	ret = tio_io(d->disks[0]->queue, 0, REQ_OP_WRITE, 0, sector, len, buf);
	free(buf);
	return ret;
}

START_TEST(test_defaults)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};
	struct mq_queue *q;

	ck_assert_int_eq(tdevice_create(&d, &e, "smr", NULL), 0);
	q = d->disks[0]->queue;
	ck_assert_str_eq(d->disks[0]->disk_name, "smr0");
	ck_assert_uint_eq(get_capacity(d->disks[0]), (16ULL << 30) >> 9);
	ck_assert_int_eq(q->limits.zoned, BLK_ZONED_HM);
	ck_assert_uint_eq(q->limits.chunk_sectors, (256u << 20) >> 9);
	ck_assert_uint_eq(q->limits.nr_zones, 64);
	ck_assert_uint_eq(q->limits.nr_conv_zones, 1);
	ck_assert_uint_eq(q->limits.max_open_zones, 0); /* 128 >= 63 */
	ck_assert(q->limits.rotational);
	ck_assert_uint_eq(q->nr_hw_queues, 1);
	ck_assert_uint_eq(q->tag_set->queue_depth, 32);
	ck_assert(q->zone_write_plugging);
	/* Zone write plugging: row 5, bfq where it is built. */
	ck_assert_str_eq(q->sched_reason, "row 5: single queue");
	ck_assert_str_eq(
		d->disks[0]->description,
		"host-managed SMR disk smr0 (zoned host-managed: 64 zones of 256 MB, 1 conventional; 235 MiB/s, 7200 rpm)");
	mq_device_destroy(d);

	ck_assert_int_eq(tdevice_create(&d, &e, "smr", "zone_size=3M", NULL),
			 -1);
	ck_assert_str_eq(e.msg,
			 "smr: zone_size=3145728: must be a power of two, 1M "
			 "to 2G");
	ck_assert_int_eq(tdevice_create(&d, &e, "smr", "capacity=100M", NULL),
			 -1);
	ck_assert(strstr(e.msg, "capacity=104857600"));
	ck_assert_int_eq(tdevice_create(&d, &e, "smr", "zone_write_plugging=0",
					"scheduler=kyber", NULL),
			 -1);
	ck_assert(strstr(e.msg, "kyber does not keep write order"));
}
END_TEST

START_TEST(test_misplaced_write)
{
	struct mq_device *d = smr_new(NULL, NULL);
	struct blk_zone before, after;
	char buf[4096];

	ck_assert_int_eq(wr(d, ZS, 8192), 0);
	before = tdevice_zone(d, 1);
	ck_assert_int_eq(before.cond, BLK_ZONE_COND_IMP_OPEN);
	ck_assert_int_eq(wr(d, ZS + 64, 4096), EIO);
	ck_assert_msg(
		tlog_has(
			"smr0: write of 8 sectors refused in zone 1 (wp 0x8010, cond oi): offset 0x1008000 (sector 0x8040): not at the write pointer"),
		"%s", tlog_text());
	after = tdevice_zone(d, 1);
	ck_assert_mem_eq(&before, &after, sizeof(before));
	/* Reads: the data below the write pointer, zeroes above it. */
	ck_assert_int_eq(tio_io(d->disks[0]->queue, 0, REQ_OP_READ, 0, ZS + 8,
				4096, buf),
			 0);
	{
		char want[8192];

		tio_fill(want, sizeof(want), ZS);
		ck_assert_mem_eq(buf, want + 4096, 4096);
	}
	ck_assert_int_eq(tio_io(d->disks[0]->queue, 0, REQ_OP_READ, 0, ZS + 16,
				4096, buf),
			 0);
	ck_assert(tio_all_zero(buf, sizeof(buf)));
	/* A conventional zone takes writes anywhere. */
	ck_assert_int_eq(wr(d, 4096, 4096), 0);
	ck_assert_int_eq(wr(d, 8, 4096), 0);
	mq_device_destroy(d);
}
END_TEST

/* Past max_open explicitly open zones, a write to a new zone fails with
 * BLK_STS_ZONE_OPEN_RESOURCE (-ETOOMANYREFS through ublk). */
START_TEST(test_max_open)
{
	struct mq_device *d = smr_new("max_open=2", "zone_nr_conv=0");
	struct gendisk *disk = d->disks[0];

	ck_assert_uint_eq(disk->queue->limits.max_open_zones, 2);
	ck_assert_int_eq(disk->fops->zone_mgmt(disk, BLK_ZONE_OP_OPEN, 0), 0);
	ck_assert_int_eq(disk->fops->zone_mgmt(disk, BLK_ZONE_OP_OPEN, 1), 0);
	ck_assert_int_eq(wr(d, 2 * ZS, 4096), BLK_STS_ZONE_OPEN_RESOURCE);
	ck_assert(tlog_has("no open zone left (max_open)"));
	ck_assert_int_eq(tdevice_zone(d, 2).cond, BLK_ZONE_COND_EMPTY);
	ck_assert_int_eq(wr(d, ZS, 4096), 0);
	ck_assert_int_eq(disk->fops->zone_mgmt(disk, BLK_ZONE_OP_CLOSE, 0), 0);
	ck_assert_int_eq(wr(d, 2 * ZS, 4096), 0);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_trim_reset)
{
	struct mq_device *d = smr_new(NULL, NULL);
	struct mq_queue *q = d->disks[0]->queue;

	ck_assert_int_eq(wr(d, ZS, 65536), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_DISCARD, 0, ZS, 4096, NULL),
			 EINVAL);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_DISCARD, 0, ZS, ZS * 512u, NULL),
			 0);
	ck_assert_int_eq(tdevice_zone(d, 1).cond, BLK_ZONE_COND_EMPTY);
	ck_assert_int_eq(wr(d, ZS, 4096), 0);
	mq_device_destroy(d);
}
END_TEST

/* The media model: sequential at the media rate, a jump seeks. */
START_TEST(test_timing)
{
	struct smr_timing_params p;
	struct smr_timing t;
	uint64_t seq, jump, cap = (16ULL << 30) >> 9;
	double rev = 60e9 / 7200;

	smr_timing_params_default(&p);
	ck_assert(p.mbps == 235 && p.rpm == 7200);
	smr_timing_init(&t, &p, cap);
	/* First command at 0: no seek (the head starts there). */
	seq = timing_service_ns(&t.base, TIMING_WRITE, 0, 1 << 20);
	ck_assert_uint_eq(seq, (uint64_t)((1 << 20) * 1e9 / (235 * 1048576.0)));
	ck_assert_uint_eq(
		timing_service_ns(&t.base, TIMING_WRITE, 2048, 1 << 20), seq);
	ck_assert_uint_eq(t.seeks, 0);
	/* To the middle of the disk: a seek and half a turn on top. */
	jump = timing_service_ns(&t.base, TIMING_READ, cap / 2, 1 << 20);
	ck_assert_uint_eq(t.seeks, 1);
	ck_assert(fabs((double)jump - seq -
		       smr_timing_seek_ns(&t, 4096, cap / 2) - rev / 2) < 2);
	/* Seeks grow with distance, from track-to-track to the full stroke. */
	ck_assert(smr_timing_seek_ns(&t, 0, 1) >= 0.8e6);
	ck_assert(smr_timing_seek_ns(&t, 0, cap / 64) <
		  smr_timing_seek_ns(&t, 0, cap / 2));
	ck_assert(smr_timing_seek_ns(&t, 0, cap) > 8.5e6);
	smr_timing_destroy(&t);
}
END_TEST

static Suite *smr_suite(void)
{
	Suite *s = suite_create("smr");
	TCase *tc = tcase_create("smr");

	mq_log_set_sink(tlog_sink);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_misplaced_write);
	tcase_add_test(tc, test_max_open);
	tcase_add_test(tc, test_trim_reset);
	tcase_add_test(tc, test_timing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(smr_suite());
}
