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

/* A failed write lets the next one of its zone go, which fails or not. */
START_TEST(test_error_releases_plug)
{
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_hold);
	struct tbio tb[3];
	unsigned int i;

	set_zoned(d->q, true);
	for (i = 0; i < 3; i++) {
		tbio_init(&tb[i], d, REQ_OP_WRITE, ZONE_SECTORS + i * 8, 4096);
		tbio_submit(d, &tb[i], 0);
	}
	tdev_wait_held(d, 1);
	ck_assert(tdev_complete_held(d, EIO));
	ck_assert_int_eq(tbio_wait(&tb[0]), EIO);
	tdev_wait_held(d, 1);
	ck_assert_uint_eq(d->log_sector[1], ZONE_SECTORS + 8);
	ck_assert(tdev_complete_held(d, 0));
	tdev_wait_held(d, 1);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&tb[1]), 0);
	ck_assert_int_eq(tbio_wait(&tb[2]), 0);
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
	tcase_add_test(tc, test_error_releases_plug);
	tcase_add_test(tc, test_fua_sequence);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(zone_wplug_suite());
}
