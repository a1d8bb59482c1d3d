/* SPDX-License-Identifier: GPL-2.0 */
/*
 * I/O priorities by client identity (queue/ioprio_map, server/mq/ioprio.c):
 * the syntax, hostile input, and the priority reaching mq-deadline
 * through the request: a real-time client's read goes before a
 * best-effort writer's queued writes, an idle client's only once the
 * others have nothing queued or in flight.
 */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "server/mq/elevator.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdev.h"

static struct mq_queue *plain_queue(struct tdev **d)
{
	*d = tdev_new(1, 4, 0, 0, tdev_complete);
	return (*d)->q;
}

START_TEST(test_parse_format)
{
	static const char *const good[] = {"rt/0", "rt/7", "be/0",
					   "be/4", "idle", "none"};
	static const char *const bad[] = {"rt/8",	 "be/-1",  "be/",  "rt",
					  "be/44",	 "idle/0", "RT/0", "",
					  "best-effort", "be/4 "};
	uint16_t p;
	char buf[16];
	unsigned int i;

	for (i = 0; i < sizeof(good) / sizeof(*good); i++) {
		ck_assert_int_eq(ioprio_parse(good[i], &p), 0);
		ck_assert(ioprio_valid(p));
		ck_assert_int_eq(ioprio_format(p, buf, sizeof(buf)),
				 (int)strlen(good[i]));
		ck_assert_str_eq(buf, good[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(ioprio_parse(bad[i], &p) == EINVAL, "%s", bad[i]);
	ck_assert_int_eq(ioprio_parse("rt/3", &p), 0);
	ck_assert_int_eq(IOPRIO_PRIO_CLASS(p), IOPRIO_CLASS_RT);
	ck_assert_int_eq(IOPRIO_PRIO_LEVEL(p), 3);
	ck_assert_int_eq(ioprio_format(p, buf, 4), -ENOSPC);
}
END_TEST

START_TEST(test_map_syntax)
{
	static const char *const bad[] = {
		"user:alice",  "alice=rt/0",	       "group:x=rt/0",
		"user:=rt/0",  "uid:abc=be/1",	       "uid:-1=be/1",
		"uid:+1=be/1", "uid:99999999999=rt/0", "addr:1.2.3.4=rt/9",
		"uid:1=fast",
	};
	struct tdev *d;
	struct mq_queue *q = plain_queue(&d);
	char buf[512], big[400];
	unsigned int i;

	ck_assert_int_eq(mq_show_ioprio_map(q, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(mq_set_ioprio_map(q,
					   "  user:ops-*=rt/0\tuid:1000=be/2\n"
					   "addr:10.0.*=idle uid:0=none "),
			 0);
	ck_assert_int_gt(mq_show_ioprio_map(q, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "user:ops-*=rt/0 uid:1000=be/2 addr:10.0.*=idle "
			      "uid:0=none");
	ck_assert_int_eq(mq_show_ioprio_map(q, buf, 10), -ENOSPC);
	/* A bad rule leaves the map as it was. */
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ck_assert_msg(mq_set_ioprio_map(q, bad[i]) == EINVAL, "%s",
			      bad[i]);
		mq_show_ioprio_map(q, buf, sizeof(buf));
		ck_assert_str_eq(buf, "user:ops-*=rt/0 uid:1000=be/2 "
				      "addr:10.0.*=idle uid:0=none");
	}
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(mq_set_ioprio_map(q, big), EINVAL);
	ck_assert_int_eq(mq_set_ioprio_map(q, ""), 0);
	ck_assert_int_eq(mq_show_ioprio_map(q, buf, sizeof(buf)), 0);
	tdev_free(d);
}
END_TEST

/* --- the priority reaches the scheduler ------------------------------ */

struct ctl {
	atomic_uint stop_at;
};

static enum mq_qrc complete_and_stop(struct tdev *d, struct request *rq)
{
	struct ctl *c = d->priv;

	mq_start_request(rq);
	mq_end_request(rq, 0);
	if (tdev_calls(d) == atomic_load(&c->stop_at))
		mq_stop_hw_queue(rq->mq_hctx);
	return MQ_QRC_OK;
}

static void submit_as(struct tdev *d, struct tbio *tb, enum req_op op,
		      uint64_t sector, const struct mq_client *client)
{
	tbio_init(tb, d, op, sector, 4096);
	tb->bio.bi_submitter = client->id;
	tb->bio.bi_client = client;
	tbio_submit(d, tb, 0);
}

static unsigned int log_index(struct tdev *d, uint64_t sector)
{
	unsigned int i;

	for (i = 0; i < d->nlog; i++)
		if (d->log_sector[i] == sector)
			return i;
	ck_abort_msg("sector %llu never dispatched",
		     (unsigned long long)sector);
	return 0;
}

/*
 * A writer (best effort) has 16 writes queued; then a reader whose uid
 * maps to rt/0 and one whose address maps to idle each read once.  The
 * real-time read is dispatched first, the idle one last.  Without the
 * map, the reader's read is one among the writer's.
 */
static void run_clients(struct ctl *c, struct tdev *d, const char *map)
{
	struct mq_client writer = {.id = 1, .uid = 2000};
	struct mq_client rt = {.id = 2, .uid = 1000};
	struct mq_client idle = {.id = 3, .uid = -1, .addr = "10.0.0.7:5000"};
	struct tbio w[16], r, i_;
	unsigned int i;

	ck_assert_int_eq(mq_set_ioprio_map(d->q, map), 0);
	tdev_stop_queues(d);
	submit_as(d, &i_, REQ_OP_READ, 0, &idle);
	for (i = 0; i < 16; i++)
		submit_as(d, &w[i], REQ_OP_WRITE, 1000 + 16 * i, &writer);
	submit_as(d, &r, REQ_OP_READ, 500000, &rt);
	atomic_store(&c->stop_at, 0);
	mq_start_hw_queues(d->q);
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(tbio_wait(&w[i]), 0);
	ck_assert_int_eq(tbio_wait(&r), 0);
	ck_assert_int_eq(tbio_wait(&i_), 0);
	ck_assert_uint_eq(d->nlog, 18);
}

START_TEST(test_map_orders_dispatch)
{
	struct ctl c = {0};
	struct tdev *d = tdev_new(1, 64, 0, 0, complete_and_stop);

	d->priv = &c;
	ck_assert_int_eq(elevator_switch(d->q, elevator_find("mq-deadline")),
			 0);
	run_clients(&c, d, "uid:1000=rt/0 addr:10.0.*=idle");
	ck_assert_uint_eq(log_index(d, 500000), 0);
	ck_assert_uint_eq(log_index(d, 0), 17);
	tdev_free(d);

	/*
	 * Without the map all three are best effort: this batch starts with
	 * the writes, and the real-time client's read comes last.
	 */
	d = tdev_new(1, 64, 0, 0, complete_and_stop);
	d->priv = &c;
	ck_assert_int_eq(elevator_switch(d->q, elevator_find("mq-deadline")),
			 0);
	run_clients(&c, d, "");
	ck_assert_uint_eq(log_index(d, 500000), 17);
	ck_assert_uint_eq(log_index(d, 0), 16);
	tdev_free(d);
}
END_TEST

/*
 * A bio that comes with a priority keeps it; one without a client gets
 * none; the first matching rule gives it.
 */
START_TEST(test_map_leaves_set_priorities)
{
	struct tdev *d = tdev_new(1, 4, 0, 0, tdev_complete);
	struct mq_client rt = {.id = 2, .uid = 1000};
	struct tbio a, b;

	/* The first rule that matches wins. */
	ck_assert_int_eq(mq_set_ioprio_map(d->q, "uid:1000=rt/0 uid:1000=be/3"),
			 0);
	tbio_init(&a, d, REQ_OP_READ, 0, 4096);
	a.bio.bi_client = &rt;
	a.bio.bi_ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 7);
	tbio_submit(d, &a, 0);
	ck_assert_int_eq(tbio_wait(&a), 0);
	ck_assert_uint_eq(a.bio.bi_ioprio,
			  IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 7));
	tbio_init(&b, d, REQ_OP_READ, 8, 4096);
	tbio_submit(d, &b, 0);
	ck_assert_int_eq(tbio_wait(&b), 0);
	ck_assert_uint_eq(b.bio.bi_ioprio, 0);
	tbio_init(&b, d, REQ_OP_READ, 8, 4096);
	b.bio.bi_client = &rt;
	tbio_submit(d, &b, 0);
	ck_assert_int_eq(tbio_wait(&b), 0);
	ck_assert_uint_eq(b.bio.bi_ioprio,
			  IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 0));
	tdev_free(d);
}
END_TEST

static Suite *ioprio_suite(void)
{
	Suite *s = suite_create("ioprio");
	TCase *tc = tcase_create("ioprio");

	tcase_add_test(tc, test_parse_format);
	tcase_add_test(tc, test_map_syntax);
	tcase_add_test(tc, test_map_orders_dispatch);
	tcase_add_test(tc, test_map_leaves_set_priorities);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(ioprio_suite());
}
