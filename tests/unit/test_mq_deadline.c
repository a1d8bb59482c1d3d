/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests for mq-deadline (scheduler/mq-deadline*.c), in-process
 * through the request core with the tdev test driver.  Dispatch order is
 * read from tdev's log; requests are made to wait in the scheduler by
 * stopping the hardware queue, which the driver policy below can also do
 * from queue_rq after a given number of requests, as a driver whose ring
 * is full would.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/tdev.h"
#include "server/mq/blk-mq-internal.h"
#include "server/mq/elevator.h"
#include "scheduler/mq-deadline.h"
#include "tests/unit/helpers/tcheck.h"

/* --- helpers -------------------------------------------------------- */

struct ctl {
	atomic_uint stop_at; /* stop the hw queue after this many calls */
};

/* Complete inline; stop the hw queue once stop_at requests were seen. */
static enum mq_qrc complete_and_stop(struct tdev *d, struct request *rq)
{
	struct ctl *c = d->priv;

	mq_start_request(rq);
	mq_end_request(rq, 0);
	if (c && tdev_calls(d) == atomic_load(&c->stop_at))
		mq_stop_hw_queue(rq->mq_hctx);
	return MQ_QRC_OK;
}

static struct tdev *dd_tdev(unsigned int depth, unsigned int flags,
			    tdev_policy_fn *policy, struct ctl *c)
{
	struct tdev *d = tdev_new(1, depth, 0, flags, policy);

	d->priv = c;
	ck_assert_int_eq(elevator_switch(d->q, elevator_find("mq-deadline")),
			 0);
	ck_assert_str_eq(mq_elevator_name(d->q), "mq-deadline");
	return d;
}

static const struct elv_fs_entry *attr_find(struct mq_queue *q,
					    const char *name)
{
	const struct elv_fs_entry *a;

	ck_assert_ptr_nonnull(q->elevator);
	for (a = q->elevator->type->elevator_attrs; a->name; a++)
		if (!strcmp(a->name, name))
			return a;
	ck_abort_msg("no attribute %s", name);
	return NULL;
}

static int attr_store(struct mq_queue *q, const char *name, const char *v)
{
	return attr_find(q, name)->store(q->elevator, v);
}

static const char *attr_show(struct mq_queue *q, const char *name, char *buf,
			     size_t len)
{
	ssize_t n = attr_find(q, name)->show(q->elevator, buf, len);

	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(strlen(buf), (size_t)n);
	return buf;
}

static void attr_set(struct mq_queue *q, const char *name, const char *v)
{
	ck_assert_int_eq(attr_store(q, name, v), 0);
}

/*
 * Stop the hardware queue, and wait for a dispatch loop already running
 * (a kblockd run left by the elevator switch) to leave, so that nothing
 * is dispatched until the test starts the queue again.
 */
static void stop_queue(struct tdev *d)
{
	mq_stop_hw_queues(d->q);
	mq_quiesce_queue(d->q);
	mq_unquiesce_queue(d->q);
}

/* Run the stopped queue until stop_at requests in all were dispatched. */
static void run_until(struct tdev *d, struct ctl *c, unsigned int stop_at)
{
	atomic_store(&c->stop_at, stop_at);
	mq_start_hw_queues(d->q);
	if (stop_at)
		tdev_wait_calls(d, stop_at);
}

static void submit(struct tdev *d, struct tbio *tb, enum req_op op,
		   uint64_t sector)
{
	tbio_init(tb, d, op, sector, 4096);
	tbio_submit(d, tb, 0);
}

static void wait_all(struct tbio *tb, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		ck_assert_int_eq(tbio_wait(&tb[i]), 0);
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

/* Wait until every request has been freed: freeze, then thaw. */
static void drain(struct tdev *d)
{
	mq_freeze_queue(d->q);
	mq_unfreeze_queue(d->q);
}

static struct dd_stats be_stats(struct mq_queue *q)
{
	struct dd_stats st[DD_PRIO_COUNT];

	ck_assert_int_eq(dd_get_stats(q, 0, st), 0);
	return st[DD_BE_PRIO];
}

/* --- the sort tree -------------------------------------------------- */

struct knode {
	struct dd_rb_node rb;
	unsigned int key;
	bool in;
};

static void kinsert(struct dd_rb_root *root, struct knode *k)
{
	struct dd_rb_node **link = &root->node, *parent = NULL;

	while (*link) {
		parent = *link;
		if (k->key < dd_rb_entry(parent, struct knode, rb)->key)
			link = &parent->left;
		else
			link = &parent->right;
	}
	dd_rb_link_node(&k->rb, parent, link);
	dd_rb_insert_color(&k->rb, root);
	k->in = true;
}

START_TEST(test_rbtree)
{
	enum { N = 512 };
	struct knode *k = calloc(N, sizeof(*k));
	struct dd_rb_root root = DD_RB_ROOT;
	struct dd_rb_node *n;
	unsigned int i, step, count, prev;
	uint64_t rng = 88172645463325252ull;

	ck_assert_ptr_nonnull(k);

	for (step = 0; step < 20000; step++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		i = (unsigned int)(rng % N);
		if (k[i].in) {
			dd_rb_erase(&k[i].rb, &root);
			k[i].in = false;
		} else {
			k[i].key = (unsigned int)(rng >> 32) % 97;
			kinsert(&root, &k[i]);
		}
		if (step % 97)
			continue;
		ck_assert_int_gt(dd_rb_check(&root), 0);
		count = prev = 0;
		for (n = dd_rb_first(&root); n; n = dd_rb_next(n)) {
			unsigned int key =
				dd_rb_entry(n, struct knode, rb)->key;

			ck_assert_uint_ge(key, prev);
			prev = key;
			count++;
			if (dd_rb_prev(n))
				ck_assert_ptr_eq(dd_rb_next(dd_rb_prev(n)), n);
		}
		for (i = 0; i < N; i++)
			count -= k[i].in;
		ck_assert_uint_eq(count, 0);
	}
	free(k);
}
END_TEST

/* --- deadlines and batches ------------------------------------------ */

/*
 * Two reads start a sorted batch; then read A (far away, inserted first)
 * and 30 reads after the batch's position arrive.  The batch carries on
 * for fifo_batch requests; then, if A has expired, A goes next, else the
 * sorted order carries on and A, the highest sector, comes last.
 */
static unsigned int expired_read_position(bool expire)
{
	struct ctl c = {0};
	struct tdev *d = dd_tdev(64, 0, complete_and_stop, &c);
	struct tbio b[2], a, cs[30];
	unsigned int i, pos;

	stop_queue(d);
	submit(d, &b[0], REQ_OP_READ, 0);
	submit(d, &b[1], REQ_OP_READ, 16);
	run_until(d, &c, 2);
	ck_assert_uint_eq(d->nlog, 2);

	if (expire)
		attr_set(d->q, "read_expire", "0");
	submit(d, &a, REQ_OP_READ, 1000000);
	attr_set(d->q, "read_expire", "500");
	for (i = 0; i < 30; i++)
		submit(d, &cs[i], REQ_OP_READ, 32 + 16 * i);
	run_until(d, &c, 0);
	wait_all(b, 2);
	wait_all(&a, 1);
	wait_all(cs, 30);

	ck_assert_uint_eq(d->nlog, 33);
	pos = log_index(d, 1000000);
	/* Everything else in sector order. */
	for (i = 0; i < d->nlog; i++)
		if (i != pos)
			ck_assert_uint_eq(d->log_sector[i],
					  16 * (i - (i > pos)));
	tdev_free(d);
	return pos;
}

/*
 * A merged request keeps the earlier of the two deadlines (6.6's
 * dd_merged_requests): after the batch of expired_read_position, read N
 * (expired at once) is queued at 1000016, then R at 1000000 (500 ms),
 * and a read at 1000008 joins R and then N into one request, which must
 * count as expired and go right after the batch, not last.
 */
START_TEST(test_merged_request_keeps_earlier_deadline)
{
	struct ctl c = {0};
	struct tdev *d = dd_tdev(64, MQ_F_SHOULD_MERGE, complete_and_stop, &c);
	struct tbio b[2], n, r, bridge, cs[30];
	unsigned int i, pos;

	stop_queue(d);
	submit(d, &b[0], REQ_OP_READ, 0);
	submit(d, &b[1], REQ_OP_READ, 16);
	run_until(d, &c, 2);
	ck_assert_uint_eq(d->nlog, 2);

	attr_set(d->q, "read_expire", "0");
	submit(d, &n, REQ_OP_READ, 1000016);
	attr_set(d->q, "read_expire", "500");
	submit(d, &r, REQ_OP_READ, 1000000);
	submit(d, &bridge, REQ_OP_READ, 1000008);
	ck_assert_uint_eq(be_stats(d->q).merged, 1);
	for (i = 0; i < 30; i++)
		submit(d, &cs[i], REQ_OP_READ, 32 + 16 * i);
	run_until(d, &c, 0);
	wait_all(b, 2);
	wait_all(&n, 1);
	wait_all(&r, 1);
	wait_all(&bridge, 1);
	wait_all(cs, 30);

	ck_assert_uint_eq(d->nlog, 33);
	pos = log_index(d, 1000000);
	ck_assert_uint_eq(d->log_bios[pos], 3);
	/* B0 B1 C0..C13 (a batch of 16), then the merged request. */
	ck_assert_uint_eq(pos, 16);
	tdev_free(d);
}
END_TEST

START_TEST(test_expired_read_served_after_batch)
{
	/* B0 B1 C0..C13 (a batch of 16), then the expired A. */
	ck_assert_uint_eq(expired_read_position(true), 16);
	ck_assert_uint_eq(expired_read_position(false), 32);
}
END_TEST

/* --- I/O priorities -------------------------------------------------- */

static void submit_prio(struct tdev *d, struct tbio *tb, uint64_t sector,
			uint16_t ioprio)
{
	tbio_init(tb, d, REQ_OP_READ, sector, 4096);
	tb->bio.bi_ioprio = ioprio;
	tbio_submit(d, tb, 0);
}

/*
 * Eight best-effort reads and then one real-time read, far away, queued
 * together: the real-time one goes first; an idle-class read, the lowest
 * and oldest, goes last.
 */
START_TEST(test_ioprio_classes)
{
	struct ctl c = {0};
	struct tdev *d = dd_tdev(64, 0, complete_and_stop, &c);
	struct tbio be[8], rt, idle;
	unsigned int i;

	stop_queue(d);
	submit_prio(d, &idle, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0));
	for (i = 0; i < 8; i++)
		submit_prio(d, &be[i], 1000 + 16 * i,
			    IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 4));
	submit_prio(d, &rt, 1000000, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 0));
	run_until(d, &c, 0);
	wait_all(be, 8);
	wait_all(&rt, 1);
	wait_all(&idle, 1);
	ck_assert_uint_eq(d->nlog, 10);
	ck_assert_uint_eq(log_index(d, 1000000), 0);
	for (i = 0; i < 8; i++)
		ck_assert_uint_eq(d->log_sector[1 + i], 1000 + 16 * i);
	ck_assert_uint_eq(log_index(d, 0), 9);
	tdev_free(d);
}
END_TEST

/*
 * A best-effort read queued before eight real-time ones: served after
 * them, unless it has waited prio_aging_expire (0 here: at once).
 */
static unsigned int be_under_rt_position(const char *aging)
{
	struct ctl c = {0};
	struct tdev *d = dd_tdev(64, 0, complete_and_stop, &c);
	struct tbio be, rt[8];
	unsigned int i, pos;

	attr_set(d->q, "prio_aging_expire", aging);
	stop_queue(d);
	submit_prio(d, &be, 1000000, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 0));
	for (i = 0; i < 8; i++)
		submit_prio(d, &rt[i], 16 * i,
			    IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 4));
	run_until(d, &c, 0);
	wait_all(rt, 8);
	wait_all(&be, 1);
	ck_assert_uint_eq(d->nlog, 9);
	pos = log_index(d, 1000000);
	tdev_free(d);
	return pos;
}

START_TEST(test_ioprio_aging)
{
	ck_assert_uint_eq(be_under_rt_position("10000"), 8);
	ck_assert_uint_eq(be_under_rt_position("0"), 0);
}
END_TEST

/*
 * A best-effort read waits while a real-time one is in flight
 * (dd_queued).  When that one completes, no completion restarts the
 * queue (nothing marked it), so the core must have scheduled a run
 * itself when mq-deadline gave nothing while it had work, as
 * blk_mq_do_dispatch_sched does: the read goes without any other I/O.
 */
START_TEST(test_ioprio_lower_class_after_completion)
{
	struct tdev *d = dd_tdev(64, 0, tdev_hold, NULL);
	struct mq_hw_ctx *hctx = d->q->queue_hw_ctx[0];
	struct tbio rt, be;

	stop_queue(d);
	/* A run the switch left on kblockd would dispatch the read too. */
	kblockd_cancel(d->q->kblockd, &hctx->run_work);
	submit_prio(d, &rt, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 0));
	submit_prio(d, &be, 1000, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 4));
	mq_start_hw_queues(d->q); /* runs here: rt goes, be waits */
	ck_assert_uint_eq(tdev_nheld(d), 1);
	ck_assert_uint_eq(d->log_sector[0], 0);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&rt), 0);
	ck_assert_msg(tdev_wait_held_for(d, 1, 10),
		      "the best-effort read was never dispatched");
	ck_assert_uint_eq(d->log_sector[1], 1000);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert_int_eq(tbio_wait(&be), 0);
	tdev_free(d);
}
END_TEST

/* Adjacent reads of two priorities stay two requests. */
START_TEST(test_ioprio_no_merge)
{
	struct ctl c = {0};
	struct tdev *d = dd_tdev(64, MQ_F_SHOULD_MERGE, complete_and_stop, &c);
	struct tbio tb[3];

	stop_queue(d);
	submit_prio(d, &tb[0], 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 4));
	submit_prio(d, &tb[1], 8, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 2));
	submit_prio(d, &tb[2], 16, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 2));
	run_until(d, &c, 0);
	wait_all(tb, 3);
	/* tb[1] and tb[2] form one request; tb[0] its own. */
	ck_assert_uint_eq(d->nlog, 2);
	tdev_free(d);
}
END_TEST

/*
 * A batch of reads is running when four writes arrive.  The writes wait
 * for the batch to end and then for writes_starved more read batches.
 */
static unsigned int first_write_position(const char *writes_starved)
{
	struct ctl c = {0};
	struct tdev *d = dd_tdev(64, 0, complete_and_stop, &c);
	struct tbio r[64], w[4];
	unsigned int i, first;

	attr_set(d->q, "writes_starved", writes_starved);
	stop_queue(d);
	for (i = 0; i < 64; i++)
		submit(d, &r[i], REQ_OP_READ, 16 * i);
	run_until(d, &c, 1);
	for (i = 0; i < 4; i++)
		submit(d, &w[i], REQ_OP_WRITE, 100000 + 16 * i);
	run_until(d, &c, 0);
	wait_all(r, 64);
	wait_all(w, 4);

	ck_assert_uint_eq(d->nlog, 68);
	first = log_index(d, 100000);
	/* The writes go together, in order; reads in order around them. */
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(d->log_op[first + i], REQ_OP_WRITE);
		ck_assert_uint_eq(d->log_sector[first + i], 100000 + 16 * i);
	}
	for (i = 0; i < 68; i++)
		if (i < first || i >= first + 4)
			ck_assert_uint_eq(d->log_sector[i],
					  16 * (i - (i >= first ? 4 : 0)));
	tdev_free(d);
	return first;
}

START_TEST(test_starved_write_served)
{
	ck_assert_uint_eq(first_write_position("2"), 16 + 2 * 16);
	ck_assert_uint_eq(first_write_position("1"), 16 + 1 * 16);
	ck_assert_uint_eq(first_write_position("0"), 16);
}
END_TEST

/*
 * 4*fb writes and 8*fb reads queued together: batches of fifo_batch, two
 * read batches for each write batch (writes_starved 2).  The first batch
 * is of writes, as mq-deadline starts with last_dir = WRITE.
 */
static void check_batches(unsigned int fb)
{
	struct ctl c = {0};
	struct tdev *d = dd_tdev(128, 0, complete_and_stop, &c);
	struct tbio r[64], w[32];
	unsigned int i, run, len;
	char v[16];

	ck_assert_uint_le(8 * fb, 64);
	snprintf(v, sizeof(v), "%u", fb);
	attr_set(d->q, "fifo_batch", v);
	stop_queue(d);
	for (i = 0; i < 4 * fb; i++)
		submit(d, &w[i], REQ_OP_WRITE, 100000 + 16 * i);
	for (i = 0; i < 8 * fb; i++)
		submit(d, &r[i], REQ_OP_READ, 16 * i);
	run_until(d, &c, 0);
	wait_all(r, 8 * fb);
	wait_all(w, 4 * fb);

	ck_assert_uint_eq(d->nlog, 12 * fb);
	for (i = 0, run = 0; i < d->nlog; run++) {
		enum req_op op = d->log_op[i];

		for (len = 0; i < d->nlog && d->log_op[i] == op; i++)
			len++;
		ck_assert_int_eq(op, run % 2 ? REQ_OP_READ : REQ_OP_WRITE);
		ck_assert_uint_eq(len, run % 2 ? 2 * fb : fb);
	}
	ck_assert_uint_eq(run, 8);
	tdev_free(d);
}

START_TEST(test_fifo_batch_bounds_batch)
{
	check_batches(4);
	check_batches(2);
	check_batches(8);
}
END_TEST

/* --- merging -------------------------------------------------------- */

/* Submit bios at the given sectors with the queue stopped, then run it. */
static struct tdev *merge_run(const uint64_t *sectors, unsigned int n,
			      bool front_merges, struct tbio *tb)
{
	struct tdev *d = dd_tdev(32, MQ_F_SHOULD_MERGE, tdev_complete, NULL);
	unsigned int i;

	attr_set(d->q, "front_merges", front_merges ? "1" : "0");
	stop_queue(d);
	for (i = 0; i < n; i++)
		submit(d, &tb[i], REQ_OP_WRITE, sectors[i]);
	mq_start_hw_queues(d->q);
	wait_all(tb, n);
	drain(d);
	return d;
}

START_TEST(test_merges)
{
	static const uint64_t back[] = {0, 8, 16};
	static const uint64_t front[] = {16, 8, 0};
	/* [0,8) and [16,24) queued, then [8,16) joins all three. */
	static const uint64_t bridge[] = {0, 16, 8};
	/* last_merge stays on 8; the bio at 92 only fits in front of 100. */
	static const uint64_t tree[] = {8, 100, 92};
	struct tbio tb[3];
	struct dd_stats st;
	struct tdev *d;

	d = merge_run(back, 3, true, tb);
	ck_assert_uint_eq(d->nlog, 1);
	ck_assert_uint_eq(d->log_sector[0], 0);
	ck_assert_uint_eq(d->log_bios[0], 3);
	st = be_stats(d->q);
	ck_assert_uint_eq(st.inserted, 1);
	ck_assert_uint_eq(st.bio_merged, 2);
	tdev_free(d);

	d = merge_run(front, 3, true, tb);
	ck_assert_uint_eq(d->nlog, 1);
	ck_assert_uint_eq(d->log_sector[0], 0);
	ck_assert_uint_eq(d->log_bios[0], 3);
	tdev_free(d);

	/* A back merge that closes a gap merges the two requests. */
	d = merge_run(bridge, 3, true, tb);
	ck_assert_uint_eq(d->nlog, 1);
	ck_assert_uint_eq(d->log_sector[0], 0);
	ck_assert_uint_eq(d->log_bios[0], 3);
	st = be_stats(d->q);
	ck_assert_uint_eq(st.inserted, 2);
	ck_assert_uint_eq(st.merged, 1);
	ck_assert_uint_eq(st.dispatched, 1);
	ck_assert_uint_eq(st.completed, 2);
	ck_assert_uint_eq(st.queued, 0);
	tdev_free(d);

	/* Front merges through the sort tree obey front_merges. */
	d = merge_run(tree, 3, true, tb);
	ck_assert_uint_eq(d->nlog, 2);
	ck_assert_uint_eq(d->log_sector[0], 8);
	ck_assert_uint_eq(d->log_sector[1], 92);
	ck_assert_uint_eq(d->log_bios[1], 2);
	tdev_free(d);
	d = merge_run(tree, 3, false, tb);
	ck_assert_uint_eq(d->nlog, 3);
	tdev_free(d);
}
END_TEST

/*
 * Front merges search the sort tree of the bio's class (6.6's
 * dd_request_merge): the tree pattern of test_merges, every read real
 * time, then idle, merges the bio at 92 in front of 100 as best-effort
 * reads do.
 */
START_TEST(test_front_merge_by_class)
{
	static const uint64_t tree[] = {8, 100, 92};
	static const uint16_t classes[] = {IOPRIO_CLASS_RT, IOPRIO_CLASS_IDLE};
	static const enum dd_prio prios[] = {DD_RT_PRIO, DD_IDLE_PRIO};
	struct dd_stats st[DD_PRIO_COUNT];
	struct tbio tb[3];
	unsigned int c, i;

	for (c = 0; c < 2; c++) {
		struct tdev *d =
			dd_tdev(32, MQ_F_SHOULD_MERGE, tdev_complete, NULL);

		stop_queue(d);
		for (i = 0; i < 3; i++)
			submit_prio(d, &tb[i], tree[i],
				    IOPRIO_PRIO_VALUE(classes[c], 0));
		mq_start_hw_queues(d->q);
		wait_all(tb, 3);
		drain(d);
		ck_assert_msg(d->nlog == 2, "class %u: %u requests", classes[c],
			      d->nlog);
		ck_assert_uint_eq(d->log_sector[1], 92);
		ck_assert_uint_eq(d->log_bios[1], 2);
		ck_assert_int_eq(dd_get_stats(d->q, 0, st), 0);
		ck_assert_uint_eq(st[prios[c]].inserted, 2);
		ck_assert_uint_eq(st[DD_BE_PRIO].inserted, 0);
		tdev_free(d);
	}
}
END_TEST

/*
 * Two adjacent writes that waited for tags become two requests; the
 * second joins the first as it is inserted, and mq-deadline's books
 * balance (requests_merged for a request it never queued).
 */
START_TEST(test_insert_merge)
{
	struct tdev *d = dd_tdev(8, MQ_F_SHOULD_MERGE, tdev_hold, NULL);
	struct tbio busy[2], tb[2];
	struct dd_stats st;
	unsigned int i;

	attr_set(d->q, "async_depth", "2");
	for (i = 0; i < 2; i++)
		submit(d, &busy[i], REQ_OP_WRITE, 1000 + 100 * i);
	tdev_wait_held(d, 2);
	stop_queue(d);
	for (i = 0; i < 2; i++)
		submit(d, &tb[i], REQ_OP_WRITE, 100 + 8 * i);
	ck_assert_uint_eq(be_stats(d->q).inserted, 2);
	ck_assert(tdev_complete_held(d, 0));
	ck_assert(tdev_complete_held(d, 0));
	wait_all(busy, 2);
	st = be_stats(d->q);
	ck_assert_uint_eq(st.inserted, 4);
	ck_assert_uint_eq(st.merged, 1);
	ck_assert_uint_eq(st.completed, 3);
	ck_assert_uint_eq(st.queued, 1);

	mq_start_hw_queues(d->q);
	tdev_wait_held(d, 1);
	ck_assert_uint_eq(tdev_calls(d), 3);
	ck_assert_uint_eq(d->log_sector[2], 100);
	ck_assert_uint_eq(d->log_bios[2], 2);
	ck_assert(tdev_complete_held(d, 0));
	wait_all(tb, 2);
	drain(d);
	st = be_stats(d->q);
	ck_assert_uint_eq(st.dispatched, 3);
	ck_assert_uint_eq(st.completed, 4);
	ck_assert_uint_eq(st.queued, 0);
	tdev_free(d);
}
END_TEST

/* --- zone write locking --------------------------------------------- */

#define ZONE_SECTORS 64

/* Check that no two held writes target the same sequential zone. */
static void check_one_write_per_zone(struct tdev *d, unsigned int nr_conv)
{
	unsigned int i, j;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->nheld; i++) {
		struct request *a = d->held[i];
		uint64_t za = blk_rq_pos(a) / ZONE_SECTORS;

		if (req_op(a) != REQ_OP_WRITE || za < nr_conv)
			continue;
		for (j = i + 1; j < d->nheld; j++) {
			struct request *b = d->held[j];

			if (req_op(b) == REQ_OP_WRITE &&
			    blk_rq_pos(b) / ZONE_SECTORS == za)
				ck_abort_msg(
					"two writes in flight in zone %llu",
					(unsigned long long)za);
		}
	}
	pthread_mutex_unlock(&d->lock);
}

static void set_zoned(struct mq_queue *q)
{
	q->limits.zoned = BLK_ZONED_HM;
	q->limits.chunk_sectors = ZONE_SECTORS;
	q->limits.nr_conv_zones = 1;
	/* The 2018 behaviour: mq-deadline's zone write lock keeps order. */
	q->zone_write_plugging = false;
}

START_TEST(test_zone_write_lock)
{
	/* zone 0 conventional; zones 1-3 sequential, 3 submitted unsorted */
	static const uint64_t wr[] = {64, 72, 80,  88,	128, 136,
				      0,  8,  216, 192, 208, 200};
	enum { NW = sizeof(wr) / sizeof(wr[0]) };
	struct tdev *d = tdev_new(1, 64, 0, 0, tdev_hold);
	struct tbio tw[NW], rd;
	uint64_t last[4] = {0};
	unsigned int i, done;

	set_zoned(d->q);
	ck_assert_int_eq(elevator_switch(d->q, elevator_find("mq-deadline")),
			 0);
	stop_queue(d);
	for (i = 0; i < NW; i++)
		submit(d, &tw[i], REQ_OP_WRITE, wr[i]);
	mq_start_hw_queues(d->q);
	/* Both conventional writes, one per sequential zone. */
	tdev_wait_held(d, 5);
	mq_quiesce_queue(d->q);
	mq_unquiesce_queue(d->q);
	ck_assert_uint_eq(tdev_nheld(d), 5);
	check_one_write_per_zone(d, 1);

	/* A read of a locked zone is not held back. */
	submit(d, &rd, REQ_OP_READ, 96);
	tdev_wait_held(d, 6);

	for (done = 0; done < NW + 1; done++) {
		tdev_wait_held(d, 1);
		check_one_write_per_zone(d, 1);
		ck_assert(tdev_complete_held(d, 0));
	}
	wait_all(tw, NW);
	wait_all(&rd, 1);
	ck_assert_uint_eq(tdev_nheld(d), 0);

	/* Each sequential zone was written in position order. */
	for (i = 0; i < d->nlog; i++) {
		uint64_t z = d->log_sector[i] / ZONE_SECTORS;

		if (d->log_op[i] != REQ_OP_WRITE || z == 0)
			continue;
		ck_assert_uint_gt(d->log_sector[i] + 1, last[z]);
		last[z] = d->log_sector[i] + 1;
	}
	tdev_free(d);
}
END_TEST

/*
 * Writes requeued by the driver give their zone lock back while they wait
 * and come back at the head; still only one per zone in flight.
 */
struct requeue_ctl {
	pthread_mutex_t lock;
	uint64_t seen[64];
	unsigned int nseen;
};

static enum mq_qrc requeue_once(struct tdev *d, struct request *rq)
{
	struct requeue_ctl *c = d->priv;
	bool first = true;
	unsigned int i;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->nseen; i++)
		if (c->seen[i] == blk_rq_pos(rq))
			first = false;
	if (first && c->nseen < 64)
		c->seen[c->nseen++] = blk_rq_pos(rq);
	pthread_mutex_unlock(&c->lock);
	if (first && req_op(rq) == REQ_OP_WRITE) {
		mq_requeue_request(rq, true);
		return MQ_QRC_OK;
	}
	return tdev_hold(d, rq);
}

START_TEST(test_zone_write_lock_requeue)
{
	struct requeue_ctl c = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct tdev *d = tdev_new(1, 64, 0, 0, requeue_once);
	struct tbio tw[8];
	unsigned int i;

	d->priv = &c;
	set_zoned(d->q);
	ck_assert_int_eq(elevator_switch(d->q, elevator_find("mq-deadline")),
			 0);
	for (i = 0; i < 8; i++)
		submit(d, &tw[i], REQ_OP_WRITE, 64 + 8 * i);
	for (i = 0; i < 8; i++) {
		tdev_wait_held(d, 1);
		ck_assert_uint_eq(tdev_nheld(d), 1);
		check_one_write_per_zone(d, 1);
		ck_assert(tdev_complete_held(d, 0));
		ck_assert_int_eq(tbio_wait(&tw[i]), 0);
	}
	drain(d);
	ck_assert_uint_eq(be_stats(d->q).queued, 0);
	tdev_free(d);
}
END_TEST

/*
 * Two hardware queues: each has its own lists, the zone locks are the
 * queue's.  Writes to one zone from both stay one at a time.
 */
START_TEST(test_two_hw_queues)
{
	struct tdev *d = tdev_new(2, 16, 0, 0, tdev_hold);
	struct dd_stats st[DD_PRIO_COUNT];
	struct tbio tw[8], tr[8];
	unsigned int i, inserted = 0;

	set_zoned(d->q);
	ck_assert_int_eq(elevator_switch(d->q, elevator_find("mq-deadline")),
			 0);
	/* cpus 0 and 1 map to hw queues 0 and 1 */
	for (i = 0; i < 8; i++) {
		tbio_init(&tw[i], d, REQ_OP_WRITE, 64 + 8 * i, 4096);
		tbio_submit(d, &tw[i], i % 2);
		tbio_init(&tr[i], d, REQ_OP_READ, 8 * i, 4096);
		tbio_submit(d, &tr[i], i % 2);
	}
	tdev_wait_held(d, 9);
	for (i = 0; i < 16; i++) {
		tdev_wait_held(d, 1);
		check_one_write_per_zone(d, 1);
		ck_assert(tdev_complete_held(d, 0));
	}
	wait_all(tw, 8);
	wait_all(tr, 8);
	drain(d);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(dd_get_stats(d->q, i, st), 0);
		ck_assert_uint_eq(st[DD_BE_PRIO].queued, 0);
		ck_assert_uint_eq(st[DD_BE_PRIO].dispatched, 8);
		inserted += st[DD_BE_PRIO].inserted;
	}
	ck_assert_uint_eq(inserted, 16);
	ck_assert_int_eq(dd_get_stats(d->q, 2, st), ENOENT);
	tdev_free(d);
}
END_TEST

/* --- async_depth ---------------------------------------------------- */

/*
 * queue/nr_requests bounds the tags bios take, and mq-deadline hears of
 * it through depth_updated: async_depth follows at 3/4.
 */
START_TEST(test_nr_requests_depth_updated)
{
	struct tdev *d = dd_tdev(8, 0, tdev_complete, NULL);
	struct tbio tr[10];
	char buf[32];
	unsigned int i;

	ck_assert_uint_eq(mq_max_nr_requests(d->q), 16);
	ck_assert_int_eq(mq_update_nr_requests(d->q, 0), EINVAL);
	ck_assert_int_eq(mq_update_nr_requests(d->q, 17), EINVAL);
	ck_assert_uint_eq(d->q->nr_requests, 16);

	ck_assert_int_eq(mq_update_nr_requests(d->q, 8), 0);
	ck_assert_uint_eq(d->q->nr_requests, 8);
	ck_assert_str_eq(attr_show(d->q, "async_depth", buf, sizeof(buf)), "6");
	/* Reads are not throttled by async_depth, only by nr_requests. */
	stop_queue(d);
	for (i = 0; i < 10; i++)
		submit(d, &tr[i], REQ_OP_READ, 16 * i);
	ck_assert_uint_eq(be_stats(d->q).inserted, 8);
	mq_start_hw_queues(d->q);
	wait_all(tr, 10);
	drain(d);
	ck_assert_uint_eq(be_stats(d->q).inserted, 10);

	ck_assert_int_eq(mq_update_nr_requests(d->q, 16), 0);
	ck_assert_str_eq(attr_show(d->q, "async_depth", buf, sizeof(buf)),
			 "12");
	tdev_free(d);
}
END_TEST

START_TEST(test_async_depth)
{
	struct tdev *d = dd_tdev(8, 0, tdev_complete, NULL);
	struct tbio tw[20], tw2[10];
	char buf[32];
	unsigned int i;

	/* 16 scheduler tags; writes may take 3/4 of them. */
	ck_assert_uint_eq(d->q->nr_requests, 16);
	ck_assert_str_eq(attr_show(d->q, "async_depth", buf, sizeof(buf)),
			 "12");
	stop_queue(d);
	for (i = 0; i < 20; i++)
		submit(d, &tw[i], REQ_OP_WRITE, 16 * i);
	ck_assert_uint_eq(be_stats(d->q).inserted, 12);
	mq_start_hw_queues(d->q);
	wait_all(tw, 20);
	drain(d);
	ck_assert_uint_eq(be_stats(d->q).inserted, 20);

	attr_set(d->q, "async_depth", "3");
	stop_queue(d);
	for (i = 0; i < 10; i++)
		submit(d, &tw2[i], REQ_OP_WRITE, 16 * i);
	ck_assert_uint_eq(be_stats(d->q).inserted, 23);
	mq_start_hw_queues(d->q);
	wait_all(tw2, 10);
	drain(d);
	ck_assert_uint_eq(be_stats(d->q).inserted, 30);
	ck_assert_uint_eq(be_stats(d->q).queued, 0);
	tdev_free(d);
}
END_TEST

/* --- tunables ------------------------------------------------------- */

START_TEST(test_tunables)
{
	static const struct {
		const char *name, *def;
	} defs[] = {
		{"read_expire", "500"},		{"write_expire", "5000"},
		{"writes_starved", "2"},	{"front_merges", "1"},
		{"async_depth", "96"},		{"fifo_batch", "16"},
		{"prio_aging_expire", "10000"},
	};
	static const char *const junk[] = {"",	"abc", "12abc", " 5", "5 ",
					   "-", "0x",  "1.5",	"08", "5\n\n"};
	struct tdev *d = dd_tdev(64, 0, tdev_complete, NULL);
	struct mq_queue *q = d->q;
	char buf[32];
	unsigned int i, j;

	/* Linux's defaults; async_depth is 3/4 of 2 * 64 scheduler tags. */
	for (i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		ck_assert_str_eq(attr_show(q, defs[i].name, buf, sizeof(buf)),
				 defs[i].def);

	/* What is written reads back; junk is refused, nothing changes. */
	for (i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		const char *v =
			strcmp(defs[i].name, "front_merges") ? "7" : "0";

		attr_set(q, defs[i].name, v);
		ck_assert_str_eq(attr_show(q, defs[i].name, buf, sizeof(buf)),
				 v);
		for (j = 0; j < sizeof(junk) / sizeof(junk[0]); j++)
			ck_assert_int_eq(attr_store(q, defs[i].name, junk[j]),
					 EINVAL);
		ck_assert_int_eq(attr_store(q, defs[i].name, "99999999999"),
				 ERANGE);
		ck_assert_int_eq(attr_store(q, defs[i].name, NULL), EINVAL);
		ck_assert_str_eq(attr_show(q, defs[i].name, buf, sizeof(buf)),
				 v);
	}
	/* kstrtoint forms, and Linux's clamping into each range. */
	attr_set(q, "fifo_batch", "0x20\n");
	ck_assert_str_eq(attr_show(q, "fifo_batch", buf, sizeof(buf)), "32");
	attr_set(q, "read_expire", "010");
	ck_assert_str_eq(attr_show(q, "read_expire", buf, sizeof(buf)), "8");
	attr_set(q, "fifo_batch", "-3");
	ck_assert_str_eq(attr_show(q, "fifo_batch", buf, sizeof(buf)), "0");
	attr_set(q, "front_merges", "5");
	ck_assert_str_eq(attr_show(q, "front_merges", buf, sizeof(buf)), "1");
	attr_set(q, "async_depth", "0");
	ck_assert_str_eq(attr_show(q, "async_depth", buf, sizeof(buf)), "1");
	attr_set(q, "writes_starved", "-1");
	ck_assert_str_eq(attr_show(q, "writes_starved", buf, sizeof(buf)),
			 "-1");
	attr_set(q, "write_expire", "+2000");
	ck_assert_str_eq(attr_show(q, "write_expire", buf, sizeof(buf)),
			 "2000");
	/* A buffer too small is an error, not a truncated number. */
	ck_assert_int_lt(
		attr_find(q, "write_expire")->show(q->elevator, buf, 3), 0);
	tdev_free(d);
}
END_TEST

/* --- flushes and driver requests bypass scheduling ------------------ */

static void sense_end_io(struct request *rq, int status)
{
	atomic_int *seen = rq->end_io_data;

	atomic_fetch_add(seen, 1);
	mq_free_request(rq);
}

START_TEST(test_bypass)
{
	struct tdev *d = dd_tdev(8, 0, tdev_complete, NULL);
	struct tbio tr, tf;
	struct request *rq;
	atomic_int seen = 0;
	struct dd_stats st;

	d->q->limits.write_cache = true;
	stop_queue(d);
	submit(d, &tr, REQ_OP_READ, 64);
	tbio_init(&tf, d, REQ_OP_FLUSH, 0, 0);
	tbio_submit(d, &tf, 0);
	rq = mq_alloc_request(d->q, REQ_OP_DRV_IN, MQ_REQ_NOWAIT);
	ck_assert_ptr_nonnull(rq);
	rq->end_io = sense_end_io;
	rq->end_io_data = &seen;
	mq_sched_insert_request(rq, true, false, false);
	mq_start_hw_queues(d->q);
	ck_assert_int_eq(tbio_wait(&tr), 0);
	ck_assert_int_eq(tbio_wait(&tf), 0);
	ck_assert_int_eq(atomic_load(&seen), 1);
	drain(d);
	/* The driver request first (head), the flush, then the read. */
	ck_assert_uint_eq(d->nlog, 3);
	ck_assert_int_eq(d->log_op[0], REQ_OP_DRV_IN);
	ck_assert_int_eq(d->log_op[1], REQ_OP_FLUSH);
	ck_assert_int_eq(d->log_op[2], REQ_OP_READ);
	st = be_stats(d->q);
	ck_assert_uint_eq(st.inserted, 1);
	ck_assert_uint_eq(st.completed, 1);
	tdev_free(d);
}
END_TEST

/* --- switching under load ------------------------------------------- */

enum { SW_SLOTS = 16, SW_THREADS = 2, SW_SWITCHES = 200 };

struct sw_thread;

/* What the submitters share with the switching thread. */
struct sw_shared {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long progress; /* bios submitted, all threads */
	bool stop;
};

struct sw_io {
	struct bio bio;
	struct sw_thread *t;
	bool busy;
	char buf[4096];
};

struct sw_thread {
	pthread_t th;
	struct tdev *d;
	struct sw_shared *sh;
	unsigned int cpu;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct sw_io io[SW_SLOTS];
	unsigned long submitted, completed, errors, dups;
	uint64_t rng;
};

static void sw_end_io(struct bio *bio)
{
	struct sw_io *io = bio->bi_private;
	struct sw_thread *t = io->t;

	pthread_mutex_lock(&t->lock);
	if (!io->busy)
		t->dups++;
	io->busy = false;
	t->completed++;
	if (bio->bi_status)
		t->errors++;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static bool sw_stopped(struct sw_shared *sh)
{
	bool stop;

	pthread_mutex_lock(&sh->lock);
	stop = sh->stop;
	pthread_mutex_unlock(&sh->lock);
	return stop;
}

static void *sw_main(void *arg)
{
	struct sw_thread *t = arg;
	struct sw_shared *sh = t->sh;
	unsigned int i;

	while (!sw_stopped(sh)) {
		struct sw_io *io = NULL;
		uint64_t r;

		pthread_mutex_lock(&t->lock);
		while (!io) {
			for (i = 0; i < SW_SLOTS && !io; i++)
				if (!t->io[i].busy)
					io = &t->io[i];
			if (!io)
				pthread_cond_wait(&t->cond, &t->lock);
		}
		io->busy = true;
		t->submitted++;
		pthread_mutex_unlock(&t->lock);

		t->rng ^= t->rng << 13;
		t->rng ^= t->rng >> 7;
		t->rng ^= t->rng << 17;
		r = t->rng;
		/* A small range, so that bios meet and merge. */
		bio_init(&io->bio, r & 1 ? REQ_OP_WRITE : REQ_OP_READ,
			 ((r >> 8) % 128) * 8, 4096, io->buf);
		io->bio.bi_end_io = sw_end_io;
		io->bio.bi_private = io;
		mq_submit_bio(mq_get_ctx(t->d->q, t->cpu), &io->bio);

		pthread_mutex_lock(&sh->lock);
		sh->progress++;
		pthread_cond_broadcast(&sh->cond);
		pthread_mutex_unlock(&sh->lock);
	}
	pthread_mutex_lock(&t->lock);
	for (i = 0; i < SW_SLOTS; i++)
		while (t->io[i].busy)
			pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* Wait until the submitters have sent n more bios. */
static void sw_wait_progress(struct sw_shared *sh, unsigned long n)
{
	unsigned long target;

	pthread_mutex_lock(&sh->lock);
	target = sh->progress + n;
	while (sh->progress < target)
		pthread_cond_wait(&sh->cond, &sh->lock);
	pthread_mutex_unlock(&sh->lock);
}

/*
 * Two threads keep bios going while the queue switches none ->
 * mq-deadline -> none 200 times, each switch after some more I/O: every
 * bio completes exactly once and none fails.
 */
START_TEST(test_switch_under_load)
{
	struct tdev *d = tdev_new(1, 16, 0, MQ_F_SHOULD_MERGE, tdev_complete);
	const struct elevator_type *dl = elevator_find("mq-deadline");
	struct sw_shared sh = {
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	struct sw_thread t[SW_THREADS];
	unsigned long total = 0;
	unsigned int i, n;

	ck_assert_ptr_nonnull(dl);
	for (i = 0; i < SW_THREADS; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].d = d;
		t[i].sh = &sh;
		t[i].cpu = i;
		t[i].rng = 0x2545f4914f6cdd1dull * (i + 1);
		pthread_mutex_init(&t[i].lock, NULL);
		pthread_cond_init(&t[i].cond, NULL);
		for (n = 0; n < SW_SLOTS; n++)
			t[i].io[n].t = &t[i];
		ck_assert_int_eq(pthread_create(&t[i].th, NULL, sw_main, &t[i]),
				 0);
	}
	for (n = 0; n < SW_SWITCHES; n++) {
		sw_wait_progress(&sh, 16);
		ck_assert_int_eq(elevator_switch(d->q, dl), 0);
		ck_assert_str_eq(mq_elevator_name(d->q), "mq-deadline");
		sw_wait_progress(&sh, 16);
		ck_assert_int_eq(elevator_switch(d->q, NULL), 0);
		ck_assert_str_eq(mq_elevator_name(d->q), "none");
	}
	pthread_mutex_lock(&sh.lock);
	sh.stop = true;
	pthread_mutex_unlock(&sh.lock);
	for (i = 0; i < SW_THREADS; i++) {
		ck_assert_int_eq(pthread_join(t[i].th, NULL), 0);
		ck_assert_uint_eq(t[i].completed, t[i].submitted);
		ck_assert_uint_eq(t[i].errors, 0);
		ck_assert_uint_eq(t[i].dups, 0);
		total += t[i].submitted;
		pthread_cond_destroy(&t[i].cond);
		pthread_mutex_destroy(&t[i].lock);
	}
	ck_assert_uint_ge(total, SW_SWITCHES * 32);
	tdev_free(d);
}
END_TEST

static Suite *mq_deadline_suite(void)
{
	Suite *s = suite_create("mq-deadline");
	TCase *tc = tcase_create("mq-deadline");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_rbtree);
	tcase_add_test(tc, test_expired_read_served_after_batch);
	tcase_add_test(tc, test_merged_request_keeps_earlier_deadline);
	tcase_add_test(tc, test_starved_write_served);
	tcase_add_test(tc, test_ioprio_classes);
	tcase_add_test(tc, test_ioprio_aging);
	tcase_add_test(tc, test_ioprio_lower_class_after_completion);
	tcase_add_test(tc, test_ioprio_no_merge);
	tcase_add_test(tc, test_fifo_batch_bounds_batch);
	tcase_add_test(tc, test_merges);
	tcase_add_test(tc, test_front_merge_by_class);
	tcase_add_test(tc, test_insert_merge);
	tcase_add_test(tc, test_zone_write_lock);
	tcase_add_test(tc, test_zone_write_lock_requeue);
	tcase_add_test(tc, test_two_hw_queues);
	tcase_add_test(tc, test_async_depth);
	tcase_add_test(tc, test_nr_requests_depth_updated);
	tcase_add_test(tc, test_tunables);
	tcase_add_test(tc, test_bypass);
	tcase_add_test(tc, test_switch_under_load);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(mq_deadline_suite());
}
