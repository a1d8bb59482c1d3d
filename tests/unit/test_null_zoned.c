/* SPDX-License-Identifier: GPL-2.0 */
/*
 * null_blk's zoned mode (zoned=1) and the zone state it shares with the
 * other zoned models (backends/common/zoned.c), through the device layer
 * and the request core: the keys and limits, the write pointer rules,
 * every zone condition transition, the open and active zone limits, TRIM
 * as zone reset, and the zone report.  1 MB zones on an 8 MB disk.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/device.h"
#include "backends/common/zoned.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"

#define ZS    2048u /* sectors: 1 MB */
#define ZB    (ZS * 512u)
#define NR_ZN 8u

static struct mq_device *zoned_new(const char *a, const char *b, const char *c)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	if (tdevice_create(&d, &e, "null", "zoned=1", "zone_size=1", "size=8M",
			   "memory_backed=1", "irqmode=0", a, b, c, NULL))
		ck_abort_msg("create failed: %s", e.msg);
	return d;
}

static const char *zoned_err(const char *a, const char *b)
{
	static struct mq_err e;
	struct mq_device *d = NULL;

	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(tdevice_create(&d, &e, "null", "zoned=1", "size=8M", a,
					b, NULL),
			 -1);
	return e.msg;
}

#define assert_zone(d, idx, want, wp_off)                                      \
	do {                                                                   \
		struct blk_zone __z = tdevice_zone(d, idx);                    \
		ck_assert_msg(__z.cond == (want), "zone %u: cond %s, want %s", \
			      (unsigned int)idx, blk_zone_cond_str(__z.cond),  \
			      blk_zone_cond_str(want));                        \
		ck_assert_uint_eq(__z.wp - __z.start, (wp_off));               \
	} while (0)

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

static int mgmt(struct mq_device *d, enum blk_zone_op op, unsigned int zone)
{
	return d->disks[0]->fops->zone_mgmt(d->disks[0], op, zone);
}

static int trim(struct mq_device *d, uint64_t sector, uint32_t len)
{
	return tio_io(d->disks[0]->queue, 0, REQ_OP_DISCARD, 0, sector, len,
		      NULL);
}

START_TEST(test_keys_and_limits)
{
	struct mq_device *d = zoned_new("zone_nr_conv=2", "zone_max_open=3",
					"zone_max_active=4");
	struct mq_queue *q = d->disks[0]->queue;

	ck_assert_int_eq(q->limits.zoned, BLK_ZONED_HM);
	ck_assert_uint_eq(q->limits.chunk_sectors, ZS);
	ck_assert_uint_eq(q->limits.nr_zones, NR_ZN);
	ck_assert_uint_eq(q->limits.nr_conv_zones, 2);
	ck_assert_uint_eq(q->limits.max_open_zones, 3);
	ck_assert_uint_eq(q->limits.max_active_zones, 4);
	ck_assert_uint_le(q->limits.max_zone_append_sectors, ZS);
	ck_assert_uint_gt(q->limits.max_zone_append_sectors, 0);
	ck_assert_uint_eq(q->limits.max_discard_sectors % ZS, 0);
	ck_assert(q->zone_write_plugging);
	ck_assert_str_eq(
		d->disks[0]->description,
		"null_blk nullb0 (memory backed, zoned host-managed: 8 zones of 1 MB, 2 conventional)");
	ck_assert_int_eq(tdevice_zone(d, 0).type, BLK_ZONE_TYPE_CONVENTIONAL);
	ck_assert_int_eq(tdevice_zone(d, 1).cond, BLK_ZONE_COND_NOT_WP);
	ck_assert_int_eq(tdevice_zone(d, 2).type, BLK_ZONE_TYPE_SEQWRITE_REQ);
	assert_zone(d, 2, BLK_ZONE_COND_EMPTY, 0);
	mq_device_destroy(d);

	/* The default zone size is 256 MB. */
	{
		struct mq_device *d2 = NULL;
		struct mq_err e = {{0}};

		ck_assert_int_eq(tdevice_create(&d2, &e, "null", "zoned=1",
						"size=1G", NULL),
				 0);
		ck_assert_uint_eq(d2->disks[0]->queue->limits.chunk_sectors,
				  256u << 11);
		ck_assert_uint_eq(d2->disks[0]->queue->limits.nr_zones, 4);
		mq_device_destroy(d2);
	}

	/* zone_capacity: writes stop short of the zone end. */
	d = zoned_new("zone_capacity=0", NULL, NULL);
	ck_assert_uint_eq(tdevice_zone(d, 0).capacity, ZS);
	mq_device_destroy(d);

	/* Limits of no effect are turned off, too many conventional cut. */
	d = zoned_new("zone_nr_conv=99", "zone_max_active=7", NULL);
	q = d->disks[0]->queue;
	ck_assert_uint_eq(q->limits.nr_conv_zones, NR_ZN - 1);
	ck_assert_uint_eq(q->limits.max_active_zones, 0);
	mq_device_destroy(d);
	d = zoned_new("zone_max_open=5", "zone_max_active=3", NULL);
	ck_assert_uint_eq(d->disks[0]->queue->limits.max_open_zones, 3);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_bad_keys)
{
	ck_assert_str_eq(zoned_err("zone_size=3", NULL),
			 "null: zone_size=3: must be a power of two (MB)");
	ck_assert_str_eq(zoned_err("zone_size=4", "zone_capacity=8"),
			 "null: zone_capacity=8 larger than zone_size=4 (MB)");
	ck_assert_str_eq(
		zoned_err("zone_size=16", NULL),
		"null: zone_size=16 MB larger than the device (8388608 bytes)");
	ck_assert(strstr(zoned_err("zone_size=0", NULL), "zone_size"));
	/* zone_write_plugging is a key of zoned disks only. */
	{
		struct mq_device *d = NULL;
		struct mq_err e = {{0}};

		ck_assert_int_eq(tdevice_create(&d, &e, "null", "size=8M",
						"zone_write_plugging=0", NULL),
				 -1);
		ck_assert(strstr(e.msg, "unknown key 'zone_write_plugging'"));
	}
}
END_TEST

/* Writes at the write pointer only; reads above it are zeroes. */
START_TEST(test_write_pointer)
{
	struct mq_device *d = zoned_new("zone_nr_conv=1", NULL, NULL);
	struct mq_queue *q = d->disks[0]->queue;
	char *buf = malloc(ZB), *want = malloc(ZB);

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(want);
	/* Conventional: anywhere. */
	ck_assert_int_eq(wr(d, 100, 4096), 0);
	ck_assert_int_eq(wr(d, 8, 4096), 0);
	/* Zone 1: at its start, then at the wp only. */
	ck_assert_int_eq(wr(d, ZS + 8, 4096), EIO);
	assert_zone(d, 1, BLK_ZONE_COND_EMPTY, 0);
	ck_assert_int_eq(wr(d, ZS, 4096), 0);
	assert_zone(d, 1, BLK_ZONE_COND_IMP_OPEN, 8);
	ck_assert_int_eq(wr(d, ZS, 4096), EIO);	     /* behind the wp */
	ck_assert_int_eq(wr(d, ZS + 16, 4096), EIO); /* ahead of it */
	assert_zone(d, 1, BLK_ZONE_COND_IMP_OPEN, 8);
	ck_assert_int_eq(wr(d, ZS + 8, 8192), 0);
	assert_zone(d, 1, BLK_ZONE_COND_IMP_OPEN, 24);
	/* A conventional write may not run on into a sequential zone. */
	ck_assert_int_eq(wr(d, ZS - 8, 8192), EIO);

	/* Below the wp the data, above it zeroes, in one read too. */
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, ZS, 16384, buf), 0);
	tio_fill(want, 4096, ZS);
	ck_assert_mem_eq(buf, want, 4096);
	tio_fill(want, 8192, ZS + 8);
	ck_assert_mem_eq(buf + 4096, want, 8192);
	ck_assert(tio_all_zero(buf + 12288, 4096));

	/* Fill the zone in one big write (split, pieces plugged in order). */
	ck_assert_int_eq(wr(d, ZS + 24, ZB - 24 * 512), 0);
	assert_zone(d, 1, BLK_ZONE_COND_FULL, ZS);
	ck_assert_int_eq(wr(d, 2 * ZS - 8, 4096), EIO); /* full */
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 2 * ZS - 8, 4096, buf),
			 0);
	tio_fill(want, ZB - 24 * 512, ZS + 24);
	ck_assert_mem_eq(buf, want + ZB - 24 * 512 - 4096, 4096);

	/*
	 * A write across a zone end is split there, as Linux splits at
	 * chunk_sectors: each piece goes to its zone, in order.
	 */
	ck_assert_int_eq(wr(d, 2 * ZS, ZB - 4096), 0);
	ck_assert_int_eq(wr(d, 3 * ZS - 8, 8192), 0);
	assert_zone(d, 2, BLK_ZONE_COND_FULL, ZS);
	assert_zone(d, 3, BLK_ZONE_COND_IMP_OPEN, 8);
	/* One piece misplaced (zone 3's wp is at 8): the bio fails, the
	 * other piece stands, as in Linux. */
	ck_assert_int_eq(wr(d, 4 * ZS - 8, 8192), EIO);
	assert_zone(d, 3, BLK_ZONE_COND_IMP_OPEN, 8);
	assert_zone(d, 4, BLK_ZONE_COND_IMP_OPEN, 8);
	free(buf);
	free(want);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_zone_capacity)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	ck_assert_int_eq(tdevice_create(&d, &e, "null", "zoned=1",
					"zone_size=2", "zone_capacity=1",
					"size=8M", "irqmode=0", NULL),
			 0);
	ck_assert_uint_eq(tdevice_zone(d, 0).capacity, ZS);
	ck_assert_uint_eq(tdevice_zone(d, 0).len, 2 * ZS);
	ck_assert_int_eq(wr(d, 0, ZB - 4096), 0);
	ck_assert_int_eq(wr(d, ZS - 8, 8192), EIO); /* past the capacity */
	ck_assert_int_eq(wr(d, ZS - 8, 4096), 0);
	assert_zone(d, 0, BLK_ZONE_COND_FULL, ZS);
	/* finish moves the wp to the zone end, past the capacity */
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_FINISH, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_FULL, 2 * ZS);
	mq_device_destroy(d);
}
END_TEST

/* Every transition of null_blk's zone state machine. */
START_TEST(test_transitions)
{
	struct mq_device *d = zoned_new("zone_nr_conv=1", NULL, NULL);

	/* EMPTY -> IMP_OPEN (write) -> CLOSED (close) -> IMP_OPEN (write) */
	ck_assert_int_eq(wr(d, ZS, 4096), 0);
	assert_zone(d, 1, BLK_ZONE_COND_IMP_OPEN, 8);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_CLOSED, 8);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 1), 0); /* no-op */
	ck_assert_int_eq(wr(d, ZS + 8, 4096), 0);
	assert_zone(d, 1, BLK_ZONE_COND_IMP_OPEN, 16);
	/* IMP_OPEN -> EXP_OPEN (open) -> CLOSED (close) -> EXP_OPEN (open) */
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_EXP_OPEN, 16);
	ck_assert_int_eq(wr(d, ZS + 16, 4096), 0); /* stays explicit */
	assert_zone(d, 1, BLK_ZONE_COND_EXP_OPEN, 24);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_CLOSED, 24);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_EXP_OPEN, 24);
	/* EXP_OPEN -> FULL (finish) -> EMPTY (reset) */
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_FINISH, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_FULL, ZS);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, 1), EIO);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 1), EIO);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_RESET, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_EMPTY, 0);
	/* EMPTY -> EXP_OPEN (open) -> EMPTY (close at the zone start) */
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_EXP_OPEN, 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_EMPTY, 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 1), EIO);
	/* EMPTY -> FULL (finish); IMP_OPEN -> FULL by writing it full */
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_FINISH, 1), 0);
	assert_zone(d, 1, BLK_ZONE_COND_FULL, ZS);
	ck_assert_int_eq(wr(d, 2 * ZS, ZB), 0);
	assert_zone(d, 2, BLK_ZONE_COND_FULL, ZS);
	/* CLOSED -> FULL (finish), CLOSED -> EMPTY (reset) */
	ck_assert_int_eq(wr(d, 3 * ZS, 4096), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 3), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_FINISH, 3), 0);
	assert_zone(d, 3, BLK_ZONE_COND_FULL, ZS);
	ck_assert_int_eq(wr(d, 4 * ZS, 4096), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 4), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_RESET, 4), 0);
	assert_zone(d, 4, BLK_ZONE_COND_EMPTY, 0);

	/* READONLY: reads, no writes, no management; again: EMPTY */
	ck_assert_int_eq(wr(d, 5 * ZS, 4096), 0);
	ck_assert_int_eq(
		disk_fire_fault(d->disks[0], "zone_readonly", "5", NULL), 0);
	ck_assert_int_eq(tdevice_zone(d, 5).cond, BLK_ZONE_COND_READONLY);
	ck_assert_int_eq(wr(d, 5 * ZS + 8, 4096), EIO);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_RESET, 5), EIO);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, 5), EIO);
	{
		char buf[4096], want[4096];

		ck_assert_int_eq(tio_io(d->disks[0]->queue, 0, REQ_OP_READ, 0,
					5 * ZS, 4096, buf),
				 0);
		tio_fill(want, 4096, 5 * ZS);
		ck_assert_mem_eq(buf, want, 4096);
	}
	ck_assert_int_eq(
		disk_fire_fault(d->disks[0], "zone_readonly", "5", NULL), 0);
	assert_zone(d, 5, BLK_ZONE_COND_EMPTY, 0);
	/* OFFLINE: no reads, no writes; the open count goes down with it */
	ck_assert_int_eq(wr(d, 6 * ZS, 4096), 0);
	ck_assert_int_eq(
		disk_fire_fault(d->disks[0], "zone_offline", "6", NULL), 0);
	ck_assert_int_eq(tdevice_zone(d, 6).cond, BLK_ZONE_COND_OFFLINE);
	{
		char buf[4096];

		ck_assert_int_eq(tio_io(d->disks[0]->queue, 0, REQ_OP_READ, 0,
					6 * ZS, 4096, buf),
				 EIO);
	}
	ck_assert_int_eq(wr(d, 6 * ZS + 8, 4096), EIO);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_FINISH, 6), EIO);
	{
		struct mq_err e = {""};

		ck_assert_int_eq(
			disk_fire_fault(d->disks[0], "zone_offline", "0", &e),
			EINVAL);
		ck_assert_str_eq(e.msg, "zone 0 is conventional");
		ck_assert_int_eq(
			disk_fire_fault(d->disks[0], "zone_offline", "x", &e),
			EINVAL);
		ck_assert_msg(strstr(e.msg, "takes a zone number 0.."), "%s",
			      e.msg);
	}
	/* Management of conventional or missing zones */
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_RESET, 0), EINVAL);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_RESET, NR_ZN), EINVAL);
	mq_device_destroy(d);
}
END_TEST

/*
 * zone_max_open: implicit opens close each other; explicit ones do not.
 * Out of open zones is BLK_STS_ZONE_OPEN_RESOURCE, as null_blk says it.
 */
START_TEST(test_max_open)
{
	struct mq_device *d = zoned_new("zone_max_open=2", NULL, NULL);

	ck_assert_int_eq(wr(d, 0, 4096), 0);
	ck_assert_int_eq(wr(d, ZS, 4096), 0);
	/* A third implicit open closes the first (round robin). */
	ck_assert_int_eq(wr(d, 2 * ZS, 4096), 0);
	assert_zone(d, 0, BLK_ZONE_COND_CLOSED, 8);
	assert_zone(d, 1, BLK_ZONE_COND_IMP_OPEN, 8);
	assert_zone(d, 2, BLK_ZONE_COND_IMP_OPEN, 8);
	/* Two explicit opens take both; nothing else may open. */
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, 3), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, 4), 0);
	assert_zone(d, 1, BLK_ZONE_COND_CLOSED, 8);
	assert_zone(d, 2, BLK_ZONE_COND_CLOSED, 8);
	ck_assert_int_eq(wr(d, 5 * ZS, 4096), BLK_STS_ZONE_OPEN_RESOURCE);
	assert_zone(d, 5, BLK_ZONE_COND_EMPTY, 0);
	ck_assert_int_eq(
		wr(d, 8, 4096),
		BLK_STS_ZONE_OPEN_RESOURCE); /* closed, cannot reopen */
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, 5),
			 BLK_STS_ZONE_OPEN_RESOURCE);
	/* Writes to the open ones go on. */
	ck_assert_int_eq(wr(d, 3 * ZS, 4096), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 4), 0);
	ck_assert_int_eq(wr(d, 5 * ZS, 4096), 0);
	assert_zone(d, 5, BLK_ZONE_COND_IMP_OPEN, 8);
	/* close all, then open all opens the closed ones but one */
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, BLK_ALL_ZONES), 0);
	assert_zone(d, 3, BLK_ZONE_COND_CLOSED, 8);
	assert_zone(d, 5, BLK_ZONE_COND_CLOSED, 8);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, BLK_ALL_ZONES),
			 BLK_STS_ZONE_OPEN_RESOURCE);
	mq_device_destroy(d);
}
END_TEST

/*
 * zone_max_active: open and closed zones count; empty and full do not.
 * Out of active zones is BLK_STS_ZONE_ACTIVE_RESOURCE.
 */
START_TEST(test_max_active)
{
	struct mq_device *d = zoned_new("zone_max_active=2", NULL, NULL);

	ck_assert_int_eq(wr(d, 0, 4096), 0);
	ck_assert_int_eq(wr(d, ZS, 4096), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 0), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_CLOSE, 1), 0);
	ck_assert_int_eq(wr(d, 2 * ZS, 4096), BLK_STS_ZONE_ACTIVE_RESOURCE);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_OPEN, 2),
			 BLK_STS_ZONE_ACTIVE_RESOURCE);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_FINISH, 2),
			 BLK_STS_ZONE_ACTIVE_RESOURCE);
	assert_zone(d, 2, BLK_ZONE_COND_EMPTY, 0);
	/* A closed zone may reopen; a finished one frees its place. */
	ck_assert_int_eq(wr(d, 8, 4096), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_FINISH, 1), 0);
	ck_assert_int_eq(wr(d, 2 * ZS, 4096), 0);
	ck_assert_int_eq(mgmt(d, BLK_ZONE_OP_RESET, BLK_ALL_ZONES), 0);
	assert_zone(d, 0, BLK_ZONE_COND_EMPTY, 0);
	assert_zone(d, 1, BLK_ZONE_COND_EMPTY, 0);
	assert_zone(d, 2, BLK_ZONE_COND_EMPTY, 0);
	ck_assert_int_eq(wr(d, 3 * ZS, 4096), 0);
	ck_assert_int_eq(wr(d, 4 * ZS, 4096), 0);
	mq_device_destroy(d);
}
END_TEST

/* TRIM of whole sequential zones resets them; any other, EINVAL. */
START_TEST(test_trim_reset)
{
	struct mq_device *d = zoned_new("zone_nr_conv=1", "discard=1", NULL);
	char buf[4096];

	ck_assert_int_eq(wr(d, ZS, ZB), 0);
	ck_assert_int_eq(wr(d, 2 * ZS, 8192), 0);
	ck_assert_int_eq(trim(d, ZS, 4096), EINVAL);
	ck_assert_int_eq(trim(d, ZS + 8, ZB - 4096), EINVAL);
	ck_assert_int_eq(trim(d, 0, 2 * ZB), EINVAL); /* conv + seq */
	ck_assert_int_eq(trim(d, ZS, ZB + 4096), EINVAL);
	assert_zone(d, 1, BLK_ZONE_COND_FULL, ZS);
	assert_zone(d, 2, BLK_ZONE_COND_IMP_OPEN, 16);
	ck_assert_int_eq(trim(d, ZS, ZB), 0);
	assert_zone(d, 1, BLK_ZONE_COND_EMPTY, 0);
	ck_assert_int_eq(
		tio_io(d->disks[0]->queue, 0, REQ_OP_READ, 0, ZS, 4096, buf),
		0);
	ck_assert(tio_all_zero(buf, sizeof(buf)));
	/* Two zones at once; then the first may be written from its start. */
	ck_assert_int_eq(wr(d, ZS, 4096), 0);
	ck_assert_int_eq(trim(d, ZS, 2 * ZB), 0);
	assert_zone(d, 1, BLK_ZONE_COND_EMPTY, 0);
	assert_zone(d, 2, BLK_ZONE_COND_EMPTY, 0);
	ck_assert_int_eq(wr(d, ZS, 4096), 0);
	/* Conventional zones are discarded as usual. */
	ck_assert_int_eq(wr(d, 0, 4096), 0);
	ck_assert_int_eq(trim(d, 0, 4096), 0);
	ck_assert_int_eq(
		tio_io(d->disks[0]->queue, 0, REQ_OP_READ, 0, 0, 4096, buf), 0);
	ck_assert(tio_all_zero(buf, sizeof(buf)));
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_report_format)
{
	struct mq_device *d = zoned_new("zone_nr_conv=1", NULL, NULL);
	struct blk_zone z;
	char line[256];

	ck_assert_int_eq(wr(d, ZS, 4096), 0);
	z = tdevice_zone(d, 0);
	ck_assert_int_gt(blk_zone_format(&z, line, sizeof(line)), 0);
	ck_assert_str_eq(
		line,
		"  start: 0x000000000, len 0x000800, cap 0x000800, wptr 0x000000 reset:0 non-seq:0, zcond: 0(nw) [type: 1(CONVENTIONAL)]");
	z = tdevice_zone(d, 1);
	blk_zone_format(&z, line, sizeof(line));
	ck_assert_str_eq(
		line,
		"  start: 0x000000800, len 0x000800, cap 0x000800, wptr 0x000008 reset:0 non-seq:0, zcond: 2(oi) [type: 2(SEQ_WRITE_REQUIRED)]");
	ck_assert_int_eq(blk_zone_format(&z, line, 10), -ENOSPC);
	/* A report past the last zone stops there. */
	ck_assert_int_eq(d->disks[0]->fops->report_zones(d->disks[0], 6, 5,
							 tdevice_copy_zone, &z),
			 2);
	mq_device_destroy(d);
}
END_TEST

static Suite *null_zoned_suite(void)
{
	Suite *s = suite_create("null-zoned");
	TCase *tc = tcase_create("null-zoned");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_keys_and_limits);
	tcase_add_test(tc, test_bad_keys);
	tcase_add_test(tc, test_write_pointer);
	tcase_add_test(tc, test_zone_capacity);
	tcase_add_test(tc, test_transitions);
	tcase_add_test(tc, test_max_open);
	tcase_add_test(tc, test_max_active);
	tcase_add_test(tc, test_trim_reset);
	tcase_add_test(tc, test_report_format);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(null_zoned_suite());
}
