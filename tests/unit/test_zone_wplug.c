/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Zone write plugging in the core (server/mq/blk-zoned.c), through the
 * tdev test driver holding every request it is given: 32 writes to one
 * sequential zone, writes to two other sequential zones and to a
 * conventional one are in flight together, under none, bfq, kyber and
 * mq-deadline; then, with zone_write_plugging off, under mq-deadline,
 * whose zone write lock must then keep the order alone.  Held requests
 * are completed out of order; at every step no sequential zone has two
 * writes at the driver, and in the end each zone was written in the
 * order its writes were submitted.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "helpers/tdev.h"
#include "server/mq/elevator.h"
#include "server/mq/genhd.h"
#include "tests/unit/helpers/tcheck.h"

#define ZONE_SECTORS 256u /* 128 KiB zones */
#define NR_CONV	     1u
#define BIG_ZONE     1u /* takes 32 writes */
#define NR_BIG	     32u
#define NR_SMALL     4u /* writes to zones 2 and 3, and to zone 0 */
#define NR_ALL	     (NR_BIG + 3 * NR_SMALL)

static void set_zoned(struct mq_queue *q, bool plugging)
{
	q->limits.zoned = BLK_ZONED_HM;
	q->limits.chunk_sectors = ZONE_SECTORS;
	q->limits.nr_conv_zones = NR_CONV;
	q->limits.nr_zones = 4;
	q->limits.max_zone_append_sectors = ZONE_SECTORS;
	q->zone_write_plugging = plugging;
}

/* No two held writes in one sequential zone. */
static void check_one_write_per_zone(struct tdev *d)
{
	unsigned int i, j;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->nheld; i++) {
		uint64_t za = blk_rq_pos(d->held[i]) / ZONE_SECTORS;

		if (req_op(d->held[i]) != REQ_OP_WRITE || za < NR_CONV)
			continue;
		for (j = i + 1; j < d->nheld; j++)
			if (req_op(d->held[j]) == REQ_OP_WRITE &&
			    blk_rq_pos(d->held[j]) / ZONE_SECTORS == za)
				ck_abort_msg(
					"%s: two writes in flight in zone %llu",
					mq_elevator_name(d->q),
					(unsigned long long)za);
	}
	pthread_mutex_unlock(&d->lock);
}

/* Complete the held request at index pick % nheld. */
static void complete_one(struct tdev *d, unsigned int pick)
{
	struct request *rq;
	unsigned int i;

	pthread_mutex_lock(&d->lock);
	ck_assert_uint_gt(d->nheld, 0);
	i = pick % d->nheld;
	rq = d->held[i];
	memmove(&d->held[i], &d->held[i + 1],
		(d->nheld - i - 1) * sizeof(d->held[0]));
	d->nheld--;
	pthread_mutex_unlock(&d->lock);
	mq_end_request(rq, 0);
}

static bool all_done(struct tbio *tb, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!atomic_load(&tb[i].done))
			return false;
	return true;
}

static void run_workload(const char *sched, bool plugging)
{
	struct tdev *d = tdev_new(1, 64, 0, MQ_F_SHOULD_MERGE, tdev_hold);
	static struct tbio tb[NR_ALL];
	struct blk_zone_wplugs_info info;
	uint64_t last[4] = {0};
	unsigned int i, n = 0, nz[4] = {0};

	set_zoned(d->q, plugging);
	if (strcmp(sched, "none")) {
		if (!elevator_find(sched)) {
			tdev_free(d);
			return; /* not built */
		}
		ck_assert_int_eq(elevator_switch(d->q, elevator_find(sched)),
				 0);
	}
	/* 32 sequential writes filling zone 1, from one submitter. */
	for (i = 0; i < NR_BIG; i++, n++) {
		tbio_init(&tb[n], d, REQ_OP_WRITE,
			  BIG_ZONE * ZONE_SECTORS + i * 8, 4096);
		tbio_submit(d, &tb[n], 0);
	}
	/* Zones 2 and 3 from two others, and zone 0, not back to back. */
	for (i = 0; i < NR_SMALL; i++) {
		tbio_init(&tb[n], d, REQ_OP_WRITE, 2 * ZONE_SECTORS + i * 8,
			  4096);
		tbio_submit(d, &tb[n++], 1);
		tbio_init(&tb[n], d, REQ_OP_WRITE, 3 * ZONE_SECTORS + i * 8,
			  4096);
		tbio_submit(d, &tb[n++], 2);
		tbio_init(&tb[n], d, REQ_OP_WRITE, i * 32, 4096);
		tbio_submit(d, &tb[n++], 3);
	}
	blk_zone_wplugs_info(d->q, &info);
	if (plugging) {
		/* Everything but the first write of each zone waits. */
		ck_assert_uint_eq(info.nr_wplugs, 3);
		ck_assert_uint_eq(info.nr_plugged,
				  NR_BIG - 1 + 2 * (NR_SMALL - 1));
	} else {
		ck_assert_uint_eq(info.nr_wplugs, 0);
		ck_assert_uint_eq(info.nr_plugged, 0);
	}
	/* One write of each sequential zone, and the conventional ones. */
	tdev_wait_held(d, plugging ? 3 + NR_SMALL : 3);
	check_one_write_per_zone(d);

	/* Complete out of order until every bio is done. */
	for (i = 0; !all_done(tb, NR_ALL); i++) {
		ck_assert_msg(tdev_wait_held_for(d, 1, 10),
			      "%s: nothing dispatched after %u completions",
			      sched, i);
		check_one_write_per_zone(d);
		complete_one(d, i * 7 + 3);
	}
	for (i = 0; i < NR_ALL; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(tdev_nheld(d), 0);
	blk_zone_wplugs_info(d->q, &info);
	ck_assert_uint_eq(info.nr_wplugs, 0);
	ck_assert_uint_eq(info.nr_plugged, 0);

	/* Each sequential zone saw its writes once each, in order. */
	for (i = 0; i < d->nlog; i++) {
		uint64_t z = d->log_sector[i] / ZONE_SECTORS;

		ck_assert_int_eq(d->log_op[i], REQ_OP_WRITE);
		/* With plugging, a zone's writes never meet to merge. */
		if (plugging && z >= NR_CONV)
			ck_assert_uint_eq(d->log_bios[i], 1);
		nz[z] += d->log_bios[i];
		if (z < NR_CONV)
			continue;
		ck_assert_msg(d->log_sector[i] + 1 > last[z],
			      "%s: zone %llu written at %llu after %llu", sched,
			      (unsigned long long)z,
			      (unsigned long long)d->log_sector[i],
			      (unsigned long long)last[z] - 1);
		last[z] = d->log_sector[i] + 1;
	}
	ck_assert_uint_eq(nz[BIG_ZONE], NR_BIG);
	ck_assert_uint_eq(nz[2], NR_SMALL);
	ck_assert_uint_eq(nz[3], NR_SMALL);
	ck_assert_uint_eq(nz[0], NR_SMALL);
	tdev_free(d);
}

START_TEST(test_plugging_none)
{
	run_workload("none", true);
}
END_TEST

START_TEST(test_plugging_bfq)
{
	run_workload("bfq", true);
}
END_TEST

START_TEST(test_plugging_kyber)
{
	run_workload("kyber", true);
}
END_TEST

START_TEST(test_plugging_mq_deadline)
{
	run_workload("mq-deadline", true);
}
END_TEST

/* The 2018 behaviour: only mq-deadline's zone write lock keeps order. */
START_TEST(test_no_plugging_mq_deadline)
{
	run_workload("mq-deadline", false);
}
END_TEST

/* Reads and writes to conventional zones are never plugged. */
START_TEST(test_what_is_plugged)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_hold);
	struct blk_zone_wplugs_info info;
	struct tbio tb[6];
	unsigned int i;

	set_zoned(d->q, true);
	d->q->limits.max_write_zeroes_sectors = 2560;
	for (i = 0; i < 2; i++) {
		tbio_init(&tb[i], d, REQ_OP_READ, ZONE_SECTORS, 4096);
		tbio_submit(d, &tb[i], 0);
		tbio_init(&tb[2 + i], d, REQ_OP_WRITE, 0, 4096);
		tbio_submit(d, &tb[2 + i], 0);
	}
	/* WRITE_ZEROES is plugged like a write. */
	tbio_init(&tb[4], d, REQ_OP_WRITE_ZEROES, 2 * ZONE_SECTORS, 4096);
	tbio_submit(d, &tb[4], 0);
	tbio_init(&tb[5], d, REQ_OP_WRITE_ZEROES, 2 * ZONE_SECTORS + 8, 4096);
	tbio_submit(d, &tb[5], 0);
	blk_zone_wplugs_info(d->q, &info);
	ck_assert_uint_eq(info.nr_wplugs, 1);
	ck_assert_uint_eq(info.nr_plugged, 1);
	tdev_wait_held(d, 5);
	for (i = 0; i < 6; i++) {
		tdev_wait_held(d, 1);
		ck_assert(tdev_complete_held(d, 0));
	}
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	tdev_free(d);
}
END_TEST

/*
 * A device for the plugs to ask: the zones of set_zoned, which the test
 * sets, report_zones and zone_mgmt counted; with fake_hold_policy its
 * write pointers follow the writes it is given.
 */
struct fake_disk {
	struct gendisk disk;
	pthread_mutex_t lock;
	struct blk_zone z[4];
	atomic_uint reports, mgmts;
	atomic_uint misplaced; /* writes away from the write pointer */
};

static int fake_report(struct gendisk *disk, unsigned int idx, unsigned int nr,
		       report_zones_cb *cb, void *data)
{
	struct fake_disk *f = container_of(disk, struct fake_disk, disk);
	struct blk_zone z;
	unsigned int i;

	atomic_fetch_add(&f->reports, 1);
	for (i = 0; i < nr && idx + i < 4; i++) {
		pthread_mutex_lock(&f->lock);
		z = f->z[idx + i];
		pthread_mutex_unlock(&f->lock);
		if (cb(&z, idx + i, data))
			return -EIO;
	}
	return (int)i;
}

static int fake_mgmt(struct gendisk *disk, enum blk_zone_op op,
		     unsigned int zone)
{
	struct fake_disk *f = container_of(disk, struct fake_disk, disk);

	atomic_fetch_add(&f->mgmts, 1);
	pthread_mutex_lock(&f->lock);
	if (op == BLK_ZONE_OP_RESET) {
		f->z[zone].wp = f->z[zone].start;
		f->z[zone].cond = BLK_ZONE_COND_EMPTY;
	} else if (op == BLK_ZONE_OP_FINISH) {
		f->z[zone].wp = f->z[zone].start + f->z[zone].len;
		f->z[zone].cond = BLK_ZONE_COND_FULL;
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static const struct block_device_operations fake_fops = {
	.report_zones = fake_report,
	.zone_mgmt = fake_mgmt,
};

static void fake_attach(struct fake_disk *f, struct tdev *d)
{
	unsigned int i;

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	for (i = 0; i < 4; i++) {
		f->z[i].start = f->z[i].wp = (uint64_t)i * ZONE_SECTORS;
		f->z[i].len = f->z[i].capacity = ZONE_SECTORS;
		f->z[i].type = i < NR_CONV ? BLK_ZONE_TYPE_CONVENTIONAL
					   : BLK_ZONE_TYPE_SEQWRITE_REQ;
		f->z[i].cond = i < NR_CONV ? BLK_ZONE_COND_NOT_WP
					   : BLK_ZONE_COND_EMPTY;
	}
	f->disk.queue = d->q;
	f->disk.capacity = 4 * ZONE_SECTORS;
	f->disk.fops = &fake_fops;
	d->q->disk = &f->disk;
	d->priv = f;
}

static void fake_set_wp(struct fake_disk *f, unsigned int zone, uint64_t off)
{
	pthread_mutex_lock(&f->lock);
	f->z[zone].wp = f->z[zone].start + off;
	f->z[zone].cond = off ? BLK_ZONE_COND_IMP_OPEN : BLK_ZONE_COND_EMPTY;
	pthread_mutex_unlock(&f->lock);
}

/* The device's rule for a write; the request held for the test. */
static enum mq_qrc fake_hold_policy(struct tdev *d, struct request *rq)
{
	struct fake_disk *f = d->priv;
	uint64_t zone = blk_rq_pos(rq) / ZONE_SECTORS;

	if (req_op(rq) == REQ_OP_WRITE && zone >= NR_CONV) {
		pthread_mutex_lock(&f->lock);
		if (blk_rq_pos(rq) != f->z[zone].wp)
			atomic_fetch_add(&f->misplaced, 1);
		f->z[zone].wp = blk_rq_pos(rq) + blk_rq_sectors(rq);
		f->z[zone].cond = BLK_ZONE_COND_IMP_OPEN;
		pthread_mutex_unlock(&f->lock);
	}
	return tdev_hold(d, rq);
}

static void tbio_append(struct tbio *tb, struct tdev *d, unsigned int zone)
{
	tbio_init(tb, d, REQ_OP_WRITE, (uint64_t)zone * ZONE_SECTORS, 4096);
	tb->bio.bi_flags |= REQ_ZONE_APPEND;
}

/*
 * A failed write fails the writes plugged behind it without sending them
 * (disk_zone_wplug_abort) and leaves the plug NEED_WP_UPDATE: the next
 * write of the zone reads the write pointer from the device first.
 */
START_TEST(test_error_aborts_plugged)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_hold);
	struct blk_zone_wplugs_info info;
	struct fake_disk f;
	struct tbio tb[4];
	unsigned int i;

	set_zoned(d->q, true);
	fake_attach(&f, d);
	for (i = 0; i < 3; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, ZONE_SECTORS + i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	tdev_wait_held(d, 1);
	/* A new plug asked the device where its zone's write pointer is. */
	ck_assert_uint_eq(atomic_load(&f.reports), 1);
	ck_assert(tdev_complete_held(d, EIO));
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), EIO);
	ck_assert_uint_eq(tdev_calls(d), 1);
	ck_assert_uint_eq(d->nlog, 1);
	blk_zone_wplugs_info(d->q, &info);
	ck_assert_uint_eq(info.nr_aborted, 2);
	ck_assert_uint_eq(info.nr_plugged, 0);
	ck_assert_uint_eq(info.nr_wplugs, 0);

	/* The device wrote 8 sectors before failing: an append goes after. */
	fake_set_wp(&f, 1, 8);
	tbio_append(&tb[3], d, 1);
	tbio_submit(d, &tb[3], 0);
	tdev_wait_held(d, 1);
	ck_assert_uint_eq(atomic_load(&f.reports), 2);
	ck_assert_uint_eq(d->log_sector[1], ZONE_SECTORS + 8);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb[3]), 0);
	ck_assert_uint_eq(tb[3].bio.bi_append_sector, ZONE_SECTORS + 8);
	tdev_free(d);
}
END_TEST

/*
 * A zone reset or finish goes through the zone's plug: the writes plugged
 * behind the one in flight fail unsent, and the plug's write pointer is
 * the zone start (reset) or its end (finish), not what a report says
 * (blk_zone_wplug_handle_reset_or_finish).  So does a TRIM that resets
 * whole zones.
 */
START_TEST(test_reset_finish_abort_plugged)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_hold);
	struct blk_zone_wplugs_info info;
	struct fake_disk f;
	struct tbio tb[12];
	unsigned int i, reports;

	set_zoned(d->q, true);
	fake_attach(&f, d);
	/* reset: zone 2 */
	for (i = 0; i < 3; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, 2 * ZONE_SECTORS + i * 8,
			  4096);
		tbio_submit(d, &tb[i], 0);
	}
	tdev_wait_held(d, 1);
	ck_assert_int_eq(blkdev_zone_mgmt(&f.disk, BLK_ZONE_OP_RESET, 2), 0);
	ck_assert_uint_eq(atomic_load(&f.mgmts), 1);
	ck_assert_int_eq(tbio_wait(&tb[1]), EIO);
	ck_assert_int_eq(tbio_wait(&tb[2]), EIO);
	ck_assert_uint_eq(tdev_calls(d), 1);
	/* Plugged behind the write still out; the reset's wp, no report. */
	fake_set_wp(&f, 2, 64);
	reports = atomic_load(&f.reports);
	tbio_append(&tb[3], d, 2);
	tbio_submit(d, &tb[3], 0);
	blk_zone_wplugs_info(d->q, &info);
	ck_assert_uint_eq(info.nr_plugged, 1);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb[0]), 0);
	tdev_wait_held(d, 1);
	ck_assert_uint_eq(d->log_sector[1], 2 * ZONE_SECTORS);
	ck_assert_uint_eq(atomic_load(&f.reports), reports);

	/* finish: zone 2 again, with the append out and two plugged */
	tbio_init(&tb[4], d, REQ_OP_WRITE, 2 * ZONE_SECTORS + 8, 4096);
	tbio_submit(d, &tb[4], 0);
	tbio_append(&tb[5], d, 2);
	tbio_submit(d, &tb[5], 0);
	ck_assert_int_eq(blkdev_zone_mgmt(&f.disk, BLK_ZONE_OP_FINISH, 2), 0);
	ck_assert_int_eq(tbio_wait(&tb[4]), EIO);
	ck_assert_int_eq(tbio_wait(&tb[5]), EIO);
	/* An append to the finished zone fails here: the plug is full. */
	tbio_append(&tb[6], d, 2);
	tbio_submit(d, &tb[6], 0);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb[3]), 0);
	ck_assert_int_eq(tbio_wait(&tb[6]), EIO);
	ck_assert_uint_eq(tdev_calls(d), 2);

	/* TRIM of zone 3, a write out and one plugged: the plugged fails. */
	for (i = 7; i < 9; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE,
			  3 * ZONE_SECTORS + (i - 7) * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	tdev_wait_held(d, 1);
	tbio_init(&tb[9], d, REQ_OP_DISCARD, 3 * ZONE_SECTORS,
		  ZONE_SECTORS << SECTOR_SHIFT);
	tb[9].bio.bi_buf = NULL;
	tbio_submit(d, &tb[9], 0);
	ck_assert_int_eq(tbio_wait(&tb[8]), EIO);
	/* A TRIM of part of a zone resets nothing. */
	tbio_init(&tb[10], d, REQ_OP_WRITE, 3 * ZONE_SECTORS + 8, 4096);
	tbio_submit(d, &tb[10], 0);
	tbio_init(&tb[11], d, REQ_OP_DISCARD, 3 * ZONE_SECTORS, 4096);
	tbio_submit(d, &tb[11], 0);
	blk_zone_wplugs_info(d->q, &info);
	ck_assert_uint_eq(info.nr_plugged, 1);
	while (!all_done(tb, 12)) {
		ck_assert(tdev_wait_held_for(d, 1, 10));
		ck_assert(tdev_complete_held(d, 0));
	}
	ck_assert_int_eq(tbio_wait(&tb[10]), 0);
	blk_zone_wplugs_info(d->q, &info);
	ck_assert_uint_eq(info.nr_aborted, 5);
	ck_assert_uint_eq(info.nr_wplugs, 0);
	tdev_free(d);
}
END_TEST

/*
 * The write the plug released is at the driver: a write submitted now
 * must wait in the plug (the released one made the plug PLUGGED again).
 */
START_TEST(test_released_write_keeps_plug)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_hold);
	struct blk_zone_wplugs_info info;
	struct tbio tb[3];
	unsigned int i;

	set_zoned(d->q, true);
	for (i = 0; i < 2; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, ZONE_SECTORS + i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	tdev_wait_held(d, 1);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb[0]), 0);
	tdev_wait_held(d, 1); /* the second, from the plug's bio work */
	ck_assert_uint_eq(d->nlog, 2);
	tbio_init(&tb[2], d, REQ_OP_WRITE, ZONE_SECTORS + 16, 4096);
	tbio_submit(d, &tb[2], 0);
	tdev_run_now(d, 0);
	blk_zone_wplugs_info(d->q, &info);
	ck_assert_uint_eq(info.nr_plugged, 1);
	ck_assert_uint_eq(tdev_nheld(d), 1);
	check_one_write_per_zone(d);
	for (i = 0; i < 2; i++) {
		tdev_wait_held(d, 1);
		ck_assert(tdev_complete_held(d, 0));
	}
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	tdev_free(d);
}
END_TEST

/*
 * Zone appends from two threads on two hardware queues into one zone:
 * each is written where the plug's write pointer was when it let it go,
 * so the device sees them at its write pointer, in order, each lands
 * once, and the completion says where; one more does not fit and fails
 * unsent.
 */
#define NR_APPEND 16u
struct appender {
	struct tdev *d;
	unsigned int cpu;
	struct tbio tb[NR_APPEND];
};

static bool appends_done(struct appender *a)
{
	return all_done(a[0].tb, NR_APPEND) && all_done(a[1].tb, NR_APPEND);
}

static void *append_thread(void *arg)
{
	struct appender *a = arg;
	unsigned int i;

	for (i = 0; i < NR_APPEND; i++) {
		tbio_append(&a->tb[i], a->d, 1);
		tbio_submit(a->d, &a->tb[i], a->cpu);
	}
	return NULL;
}

START_TEST(test_append_two_queues)
{
	struct tdev *d = tdev_new(2, 64, 0, 0, fake_hold_policy);
	struct appender a[2];
	bool seen[2 * NR_APPEND] = {false};
	struct fake_disk f;
	struct tbio extra;
	pthread_t t[2];
	unsigned int i, j;

	memset(a, 0, sizeof(a));
	set_zoned(d->q, true);
	fake_attach(&f, d);
	ck_assert_ptr_ne(mq_get_ctx(d->q, 0)->hctx, mq_get_ctx(d->q, 1)->hctx);
	for (i = 0; i < 2; i++) {
		a[i].d = d;
		a[i].cpu = i;
		ck_assert_int_eq(
			pthread_create(&t[i], NULL, append_thread, &a[i]), 0);
	}
	/* One at the device at a time, completed as they come. */
	while (!appends_done(a)) {
		ck_assert(tdev_wait_held_for(d, 1, 10));
		check_one_write_per_zone(d);
		ck_assert(tdev_complete_held(d, 0));
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 2; i++)
		for (j = 0; j < NR_APPEND; j++) {
			uint64_t s;

			ck_assert_int_eq(tbio_wait(&a[i].tb[j]), 0);
			s = a[i].tb[j].bio.bi_append_sector;
			ck_assert_uint_ge(s, ZONE_SECTORS);
			ck_assert_uint_eq((s - ZONE_SECTORS) % 8, 0);
			ck_assert(!seen[(s - ZONE_SECTORS) / 8]);
			seen[(s - ZONE_SECTORS) / 8] = true;
			/* one thread's appends land in the order it sent */
			if (j)
				ck_assert_uint_gt(
					s, a[i].tb[j - 1].bio.bi_append_sector);
		}
	ck_assert_uint_eq(atomic_load(&f.misplaced), 0);
	ck_assert_uint_eq(d->nlog, 2 * NR_APPEND);
	for (i = 0; i < d->nlog; i++)
		ck_assert_uint_eq(d->log_sector[i], ZONE_SECTORS + i * 8);
	/* The zone is full. */
	tbio_append(&extra, d, 1);
	tbio_submit(d, &extra, 0);
	ck_assert_int_eq(tbio_wait(&extra), EIO);
	ck_assert_uint_eq(d->nlog, 2 * NR_APPEND);
	/* Into a conventional zone: refused. */
	tbio_append(&extra, d, 0);
	tbio_submit(d, &extra, 1);
	ck_assert_int_eq(tbio_wait(&extra), EIO);
	tdev_free(d);
}
END_TEST

/*
 * A FUA write on a queue with a volatile cache and no native FUA goes out
 * as a plain write then a FLUSH (blk-flush.c): the write step takes over
 * its zone's plug, so the next write of the zone goes once it is done,
 * and a write step is never plugged behind its own original.
 */
START_TEST(test_fua_sequence)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_hold);
	struct blk_zone_wplugs_info info;
	struct tbio tb[3];
	unsigned int i, done = 0;

	set_zoned(d->q, true);
	d->q->limits.write_cache = true;
	d->q->limits.fua = false;
	for (i = 0; i < 3; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, ZONE_SECTORS + i * 8, 4096);
		tb[i].bio.bi_flags |= REQ_FUA;
		tbio_submit(d, &tb[i], 0);
	}
	blk_zone_wplugs_info(d->q, &info);
	ck_assert_uint_eq(info.nr_plugged, 2);
	/* write, flush, write, flush, write, flush: one at a time here */
	while (!all_done(tb, 3)) {
		ck_assert_msg(tdev_wait_held_for(d, 1, 10),
			      "nothing dispatched after %u completions", done);
		check_one_write_per_zone(d);
		ck_assert(tdev_complete_held(d, 0));
		done++;
	}
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
	ck_assert_uint_eq(done, 6);
	/* The writes in order; a write's FLUSH may follow the next write. */
	{
		unsigned int w = 0, f = 0;

		ck_assert_uint_eq(d->nlog, 6);
		for (i = 0; i < d->nlog; i++) {
			if (d->log_op[i] == REQ_OP_FLUSH) {
				ck_assert_uint_lt(f++, w);
				continue;
			}
			ck_assert_int_eq(d->log_op[i], REQ_OP_WRITE);
			ck_assert_uint_eq(d->log_sector[i],
					  ZONE_SECTORS + w++ * 8);
		}
		ck_assert_uint_eq(w, 3);
		ck_assert_uint_eq(f, 3);
	}
	blk_zone_wplugs_info(d->q, &info);
	ck_assert_uint_eq(info.nr_wplugs, 0);
	tdev_free(d);
}
END_TEST

static Suite *zone_wplug_suite(void)
{
	Suite *s = suite_create("zone-wplug");
	TCase *tc = tcase_create("zone-wplug");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_plugging_none);
	tcase_add_test(tc, test_plugging_bfq);
	tcase_add_test(tc, test_plugging_kyber);
	tcase_add_test(tc, test_plugging_mq_deadline);
	tcase_add_test(tc, test_no_plugging_mq_deadline);
	tcase_add_test(tc, test_what_is_plugged);
	tcase_add_test(tc, test_error_aborts_plugged);
	tcase_add_test(tc, test_reset_finish_abort_plugged);
	tcase_add_test(tc, test_released_write_keeps_plug);
	tcase_add_test(tc, test_append_two_queues);
	tcase_add_test(tc, test_fua_sequence);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(zone_wplug_suite());
}
