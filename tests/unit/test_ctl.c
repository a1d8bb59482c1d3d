/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests for the control plane (server/ctl): the attribute tree of a
 * null device, the line protocol with hostile input, the socket server,
 * null's fault nodes and the metrics text.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "backends/device.h"
#include "server/ctl/ctl.h"
#include "tests/unit/helpers/tcheck.h"

static struct mq_device *null_new(const char *extra)
{
	struct mq_params *p = mq_params_new();
	struct mq_device *dev;
	struct mq_err e = {{0}};

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(mq_params_set_kv(p, "device=null", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "time_scale=0", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "size=16M", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "submit_queues=2", &e), 0);
	if (extra) {
		/* "k=v k=v ...": several keys */
		char *copy = strdup(extra), *save = NULL, *kv;

		ck_assert_ptr_nonnull(copy);
		for (kv = strtok_r(copy, " ", &save); kv;
		     kv = strtok_r(NULL, " ", &save))
			ck_assert_int_eq(mq_params_set_kv(p, kv, &e), 0);
		free(copy);
	}
	if (mq_device_create(p, 2, &dev, &e))
		ck_abort_msg("create: %s", e.msg);
	mq_params_free(p);
	return dev;
}

struct fixture {
	struct mq_device *dev;
	struct ctl_ctx c;
	struct ctl_buf out;
};

/*
 * The trace directory: named by mkdtemp once per process, made again
 * under that name by later fixtures (fx_fini removes it).  Not told by
 * an X left in the name: mkdtemp's own letters may be X.
 */
static const char trace_template[] = "/tmp/test_ctl_root.XXXXXX";
static char trace_root[sizeof(trace_template)];
static bool trace_root_named;

/* The export is called after its disk, nullb0, as the plugin names it. */
static void fx_init(struct fixture *f, const char *extra)
{
	struct ctl_export ex;
	struct ctl_opts o = {.trace_dir = trace_root};
	struct mq_err e = {{0}};

	f->dev = null_new(extra);
	ex = (struct ctl_export){"nullb0", f->dev->disks[0]};
	if (trace_root_named) {
		ck_assert_int_eq(mkdir(trace_root, 0700), 0);
	} else {
		memcpy(trace_root, trace_template, sizeof(trace_template));
		ck_assert_ptr_nonnull(mkdtemp(trace_root));
		trace_root_named = true;
	}
	if (ctl_ctx_init(&f->c, &ex, 1, &o, &e))
		ck_abort_msg("ctx: %s", e.msg);
	f->out = (struct ctl_buf){0};
}

static void fx_fini(struct fixture *f)
{
	ctl_buf_free(&f->out);
	ctl_ctx_fini(&f->c);
	mq_device_destroy(f->dev);
	ck_assert_int_eq(rmdir(trace_root), 0);
}

/* Answer line, returned as a string owned by f->out. */
static const char *ask(struct fixture *f, const char *line)
{
	f->out.len = 0;
	ctl_handle_line(&f->c, line, strlen(line), &f->out);
	ck_assert(!f->out.failed);
	ctl_buf_printf(&f->out, "%s", "");
	return f->out.data;
}

/* Every answer is "+..." lines then exactly one final ok/err line. */
static void check_framing(const char *a)
{
	const char *p = a, *nl;
	bool final = false;

	ck_assert_ptr_nonnull(a);
	while (*p) {
		nl = strchr(p, '\n');
		ck_assert_msg(nl, "unterminated line in '%s'", a);
		ck_assert_msg(!final, "data after the final line in '%s'", a);
		if (*p != '+') {
			ck_assert_msg(!strncmp(p, "ok\n", 3) ||
					      !strncmp(p, "err ", 4),
				      "bad line in '%s'", a);
			final = true;
		}
		p = nl + 1;
	}
	ck_assert_msg(final, "no final line in '%s'", a);
}

static bool is_ok(const char *a)
{
	size_t n = strlen(a);

	check_framing(a);
	return n >= 3 && !strcmp(a + n - 3, "ok\n");
}

START_TEST(test_path_valid)
{
	ck_assert(ctl_path_valid("nullb0/queue/scheduler"));
	ck_assert(!ctl_path_valid(""));
	ck_assert(!ctl_path_valid("/nullb0"));
	ck_assert(!ctl_path_valid("nullb0/"));
	ck_assert(!ctl_path_valid("nullb0//stat"));
	ck_assert(!ctl_path_valid("nullb0/../etc"));
	ck_assert(!ctl_path_valid(".."));
	ck_assert(!ctl_path_valid("nullb0/./stat"));
	ck_assert(!ctl_path_valid("a b"));
	ck_assert(!ctl_path_valid("a\x01"));
	ck_assert(!ctl_path_valid("a\xff"));
}
END_TEST

static void count_node(const struct ctl_node *n, void *arg)
{
	char buf[CTL_VALUE_MAX];
	int r = n->ops->show(n, buf, sizeof(buf));

	ck_assert_msg(r >= 0, "%s: %d", n->path, r);
	ck_assert_msg(!strchr(buf, '\n'), "%s has a newline", n->path);
	(*(unsigned int *)arg)++;
}

START_TEST(test_tree_every_node)
{
	struct fixture f;
	unsigned int n = 0;
	const char *a;

	fx_init(&f, NULL);
	ctl_tree_for_each(f.c.tree, count_node, &n);
	/* 10 queue, stat, inflight, 2 x 7 mq, 4 device, 2 fault at least */
	ck_assert_uint_ge(n, 10 + 2 + 14 + 4 + 2);

	a = ask(&f, "ls");
	ck_assert(is_ok(a));
	ck_assert_str_eq(a, "+nullb0/\nok\n");
	a = ask(&f, "ls nullb0");
	ck_assert(is_ok(a));
	ck_assert_ptr_nonnull(strstr(a, "+queue/\n"));
	ck_assert_ptr_nonnull(strstr(a, "+mq/\n"));
	ck_assert_ptr_nonnull(strstr(a, "+stat\n"));
	ck_assert_ptr_nonnull(strstr(a, "+fault/\n"));
	a = ask(&f, "ls nullb0/mq");
	ck_assert_str_eq(a, "+0/\n+1/\n+frozen\nok\n");
	a = ask(&f, "get nullb0/mq/1/state");
	ck_assert_str_eq(a, "+\nok\n");
	a = ask(&f, "get nullb0/queue/nr_hw_queues");
	ck_assert_str_eq(a, "+2\nok\n");
	a = ask(&f, "get nullb0/queue/logical_block_size");
	ck_assert_str_eq(a, "+512\nok\n");
	a = ask(&f, "get nullb0/queue/zoned");
	ck_assert_str_eq(a, "+none\nok\n");
	a = ask(&f, "get nullb0/stat");
	ck_assert_str_eq(a, "+0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nok\n");
	a = ask(&f, "get nullb0/inflight");
	ck_assert_str_eq(a, "+0 0\nok\n");
	fx_fini(&f);
}
END_TEST

static int bio_io(struct mq_device *dev, enum req_op op, uint64_t sector,
		  uint32_t len, void *buf);

/* A zoned null: queue limits, the zone report, the zone/ triggers. */
START_TEST(test_zones)
{
	struct fixture f;
	static char buf[4096];
	const char *a;

	fx_init(&f, "zoned=1 zone_size=4 zone_nr_conv=1 memory_backed=1 "
		    "irqmode=0 zone_max_open=2");
	a = ask(&f, "get nullb0/queue/zoned");
	ck_assert_str_eq(a, "+host-managed\nok\n");
	a = ask(&f, "get nullb0/queue/nr_zones");
	ck_assert_str_eq(a, "+4\nok\n");
	a = ask(&f, "get nullb0/queue/chunk_sectors");
	ck_assert_str_eq(a, "+8192\nok\n");
	a = ask(&f, "get nullb0/queue/max_open_zones");
	ck_assert_str_eq(a, "+2\nok\n");
	a = ask(&f, "get nullb0/queue/zone_write_plugging");
	ck_assert_str_eq(a, "+1\nok\n");
	ck_assert(is_ok(ask(&f, "get nullb0/queue/max_active_zones")));
	ck_assert(is_ok(ask(&f, "get nullb0/queue/zone_append_max_bytes")));

	memset(buf, 0xab, sizeof(buf));
	ck_assert_int_eq(bio_io(f.dev, REQ_OP_WRITE, 8192, 4096, buf), 0);
	a = ask(&f, "get nullb0/zones");
	ck_assert_str_eq(
		a,
		"+  start: 0x000000000, len 0x002000, cap 0x002000, wptr 0x000000 reset:0 non-seq:0, zcond: 0(nw) [type: 1(CONVENTIONAL)]\n"
		"+  start: 0x000002000, len 0x002000, cap 0x002000, wptr 0x000008 reset:0 non-seq:0, zcond: 2(oi) [type: 2(SEQ_WRITE_REQUIRED)]\n"
		"+  start: 0x000004000, len 0x002000, cap 0x002000, wptr 0x000000 reset:0 non-seq:0, zcond: 1(em) [type: 2(SEQ_WRITE_REQUIRED)]\n"
		"+  start: 0x000006000, len 0x002000, cap 0x002000, wptr 0x000000 reset:0 non-seq:0, zcond: 1(em) [type: 2(SEQ_WRITE_REQUIRED)]\n"
		"ok\n");
	a = ask(&f, "ls nullb0/zone");
	ck_assert_str_eq(a, "+close\n+finish\n+open\n+reset\nok\n");

	ck_assert(is_ok(ask(&f, "set nullb0/zone/close 1")));
	ck_assert(is_ok(ask(&f, "set nullb0/zone/open 2")));
	ck_assert(is_ok(ask(&f, "set nullb0/zone/finish 3")));
	a = ask(&f, "get nullb0/zones");
	ck_assert(strstr(a, "wptr 0x000008 reset:0 non-seq:0, zcond: 4(cl)"));
	ck_assert(strstr(a, "wptr 0x000000 reset:0 non-seq:0, zcond: 3(oe)"));
	ck_assert(strstr(a, "wptr 0x002000 reset:0 non-seq:0, zcond:14(fu)"));
	ck_assert(is_ok(ask(&f, "set nullb0/zone/reset all")));
	a = ask(&f, "get nullb0/zones");
	ck_assert(!strstr(a, "(cl)") && !strstr(a, "(oe)") &&
		  !strstr(a, "(fu)"));
	/* The write pointer is back: zone 1 takes a write at its start. */
	ck_assert_int_eq(bio_io(f.dev, REQ_OP_WRITE, 8192, 4096, buf), 0);
	ck_assert_int_eq(bio_io(f.dev, REQ_OP_WRITE, 8192, 4096, buf), EIO);

	a = ask(&f, "set nullb0/zone/reset 0");
	ck_assert_str_eq(
		a,
		"err nullb0/zone/reset: zone reset 0: Invalid argument (a conventional zone)\n");
	a = ask(&f, "set nullb0/zone/open 4");
	ck_assert_str_eq(
		a,
		"err nullb0/zone/open: zone/open takes a zone number 0..3 or all\n");
	ck_assert(!is_ok(ask(&f, "set nullb0/zone/open -1")));
	ck_assert(!is_ok(ask(&f, "set nullb0/zone/open x")));
	ck_assert(!is_ok(ask(&f, "set nullb0/zone/open ")));
	ck_assert(
		!is_ok(ask(&f, "set nullb0/zone/finish 99999999999999999999")));
	ck_assert(!is_ok(ask(&f, "set nullb0/zones 1")));
	fx_fini(&f);

	/* Not zoned: no zone nodes. */
	fx_init(&f, NULL);
	ck_assert(!is_ok(ask(&f, "get nullb0/zones")));
	ck_assert(!is_ok(ask(&f, "get nullb0/queue/nr_zones")));
	ck_assert(!is_ok(ask(&f, "set nullb0/zone/reset all")));
	fx_fini(&f);
}
END_TEST

START_TEST(test_scheduler_switch)
{
	struct fixture f;
	const char *a;

	fx_init(&f, NULL);
	a = ask(&f, "set nullb0/queue/scheduler mq-deadline");
	ck_assert_str_eq(a, "ok\n");
	a = ask(&f, "get nullb0/queue/scheduler");
	ck_assert(is_ok(a));
	ck_assert_ptr_nonnull(strstr(a, "[mq-deadline]"));
	ck_assert(!strncmp(a, "+none ", 6));
	a = ask(&f, "get nullb0/queue/scheduler_reason");
	ck_assert_str_eq(a, "+set by control\nok\n");
	/* The tag maps through the core's public mq_tags_info(). */
	a = ask(&f, "get nullb0/mq/0/sched_tags");
	ck_assert_msg(!strncmp(a, "+nr_tags=", 9) &&
			      strstr(a, " nr_reserved_tags=0 busy=0\n"),
		      "%s", a);
	a = ask(&f, "get nullb0/mq/1/tags");
	ck_assert_msg(!strncmp(a, "+nr_tags=", 9) && strstr(a, " busy=0\n"),
		      "%s", a);
	a = ask(&f, "ls nullb0/queue/iosched");
	ck_assert_ptr_nonnull(strstr(a, "+read_expire\n"));
	ck_assert(is_ok(a));
	a = ask(&f, "set nullb0/queue/iosched/read_expire 123");
	ck_assert_str_eq(a, "ok\n");
	a = ask(&f, "get nullb0/queue/iosched/read_expire");
	ck_assert_str_eq(a, "+123\nok\n");
	a = ask(&f, "set nullb0/queue/iosched/read_expire banana");
	ck_assert(!is_ok(a));
	a = ask(&f, "set nullb0/queue/scheduler none");
	ck_assert_str_eq(a, "ok\n");
	a = ask(&f, "get nullb0/queue/scheduler");
	ck_assert(!strncmp(a, "+[none] ", 8));
	a = ask(&f, "get nullb0/mq/0/sched_tags");
	ck_assert_str_eq(a, "+none\nok\n");
	/* The tunables went with the scheduler. */
	a = ask(&f, "get nullb0/queue/iosched/read_expire");
	ck_assert(!is_ok(a));
	ck_assert_ptr_nonnull(strstr(a, "no such attribute"));
	a = ask(&f, "set nullb0/queue/scheduler noop");
	ck_assert(!is_ok(a));
	ck_assert_ptr_nonnull(strstr(a, "noop"));
	fx_fini(&f);
}
END_TEST

/* queue/ioprio_map: priorities by client identity, read and written. */
START_TEST(test_ioprio_map)
{
	struct fixture f;
	const char *a;

	fx_init(&f, NULL);
	a = ask(&f, "get nullb0/queue/ioprio_map");
	ck_assert_str_eq(a, "+\nok\n");
	a = ask(&f, "set nullb0/queue/ioprio_map uid:1000=rt/0 addr:10.*=idle");
	ck_assert_str_eq(a, "ok\n");
	a = ask(&f, "get nullb0/queue/ioprio_map");
	ck_assert_str_eq(a, "+uid:1000=rt/0 addr:10.*=idle\nok\n");
	a = ask(&f, "set nullb0/queue/ioprio_map uid:1000=rt/8");
	ck_assert(!is_ok(a));
	ck_assert_ptr_nonnull(strstr(a, "PRIO rt/0-7"));
	a = ask(&f, "get nullb0/queue/ioprio_map");
	ck_assert_str_eq(a, "+uid:1000=rt/0 addr:10.*=idle\nok\n");
	a = ask(&f, "set nullb0/queue/ioprio_map ");
	ck_assert_str_eq(a, "ok\n");
	a = ask(&f, "get nullb0/queue/ioprio_map");
	ck_assert_str_eq(a, "+\nok\n");
	fx_fini(&f);
}
END_TEST

/* queue/nr_requests is writable and reaches the elevator (depth_updated). */
START_TEST(test_nr_requests)
{
	struct fixture f;
	const char *a;

	fx_init(&f, NULL);
	a = ask(&f, "set nullb0/queue/scheduler mq-deadline");
	ck_assert_str_eq(a, "ok\n");
	a = ask(&f, "set nullb0/queue/nr_requests 4");
	ck_assert_str_eq(a, "ok\n");
	a = ask(&f, "get nullb0/queue/nr_requests");
	ck_assert_str_eq(a, "+4\nok\n");
	a = ask(&f, "get nullb0/queue/iosched/async_depth");
	ck_assert_str_eq(a, "+3\nok\n");
	a = ask(&f, "set nullb0/queue/nr_requests 0");
	ck_assert(!is_ok(a));
	ck_assert_ptr_nonnull(strstr(a, "nr_requests must be 1.."));
	a = ask(&f, "set nullb0/queue/nr_requests banana");
	ck_assert(!is_ok(a));
	a = ask(&f, "set nullb0/queue/nr_requests 4x");
	ck_assert(!is_ok(a));
	a = ask(&f, "set nullb0/queue/nr_requests 99999999");
	ck_assert(!is_ok(a));
	a = ask(&f, "get nullb0/queue/nr_requests");
	ck_assert_str_eq(a, "+4\nok\n");
	/* Other queue attributes stay read-only. */
	a = ask(&f, "set nullb0/queue/rotational 1");
	ck_assert_str_eq(a,
			 "err nullb0/queue/rotational: read-only attribute\n");
	fx_fini(&f);
}
END_TEST

START_TEST(test_errors)
{
	struct fixture f;
	const char *a;

	fx_init(&f, NULL);
	a = ask(&f, "get nullb0/nope");
	ck_assert_str_eq(a, "err nullb0/nope: no such attribute\n");
	a = ask(&f, "set nullb0/stat 1");
	ck_assert_str_eq(a, "err nullb0/stat: read-only attribute\n");
	a = ask(&f, "get nullb0/queue");
	ck_assert_str_eq(a, "err nullb0/queue: is a directory\n");
	a = ask(&f, "ls nullb0/stat");
	ck_assert_str_eq(a, "err nullb0/stat: not a directory\n");
	a = ask(&f, "get");
	ck_assert(!is_ok(a));
	a = ask(&f, "set nullb0/queue/scheduler");
	ck_assert(!is_ok(a));
	a = ask(&f, "trace");
	ck_assert(!is_ok(a));
	a = ask(&f, "trace stop");
	ck_assert_str_eq(a, "err no trace is running\n");
	fx_fini(&f);
}
END_TEST

START_TEST(test_hostile)
{
	struct fixture f;
	char junk[6000];
	const char *a;
	unsigned int i, seed = 1;

	fx_init(&f, NULL);
	memset(junk, 'a', sizeof(junk));
	f.out.len = 0;
	ctl_handle_line(&f.c, junk, sizeof(junk), &f.out);
	ctl_buf_printf(&f.out, "%s", "");
	ck_assert(!strncmp(f.out.data, "err line too long", 17));
	a = ask(&f, "frobnicate nullb0");
	ck_assert(!strncmp(a, "err unknown verb", 16));
	a = ask(&f, "get nullb0/../nullb0/stat");
	ck_assert(!strncmp(a, "err bad path", 12));
	a = ask(&f, "ls ..");
	ck_assert(!strncmp(a, "err bad path", 12));
	a = ask(&f, "set ../../etc/passwd x");
	ck_assert(!strncmp(a, "err bad path", 12));
	a = ask(&f, "");
	ck_assert_str_eq(a, "err empty request\n");
	a = ask(&f, "   \t ");
	ck_assert_str_eq(a, "err empty request\n");
	/* Random bytes, NULs included: always one framed answer. */
	for (i = 0; i < 2000; i++) {
		size_t len = rand_r(&seed) % 300, j;

		for (j = 0; j < len; j++)
			junk[j] = (char)rand_r(&seed);
		if (i & 1)
			memcpy(junk, "get ", len < 4 ? len : 4);
		f.out.len = 0;
		ctl_handle_line(&f.c, junk, len, &f.out);
		ctl_buf_printf(&f.out, "%s", "");
		check_framing(f.out.data);
	}
	/* Still answering. */
	a = ask(&f, "get nullb0/queue/nr_hw_queues");
	ck_assert_str_eq(a, "+2\nok\n");
	fx_fini(&f);
}
END_TEST

/* ---- I/O ---------------------------------------------------------- */

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int status;
};

static void end_io(struct bio *bio)
{
	struct waiter *w = bio->bi_private;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->status = bio->bi_status;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static int do_read(struct mq_device *dev, uint64_t sector)
{
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
	static char buf[4096];
	struct bio bio;

	bio_init(&bio, REQ_OP_READ, sector, sizeof(buf), buf);
	bio.bi_end_io = end_io;
	bio.bi_private = &w;
	mq_submit_bio(mq_get_ctx(dev->disks[0]->queue, 0), &bio);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.status;
}

static int bio_io(struct mq_device *dev, enum req_op op, uint64_t sector,
		  uint32_t len, void *buf)
{
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
	struct bio bio;

	bio_init(&bio, op, sector, len, buf);
	bio.bi_end_io = end_io;
	bio.bi_private = &w;
	mq_submit_bio(mq_get_ctx(dev->disks[0]->queue, 0), &bio);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.status;
}

START_TEST(test_fault_and_metrics)
{
	struct fixture f;
	const char *a;
	int i;

	fx_init(&f, NULL);
	a = ask(&f, "get nullb0/device/requeues");
	ck_assert_str_eq(a, "+0\nok\n");
	a = ask(&f, "set nullb0/fault/requeue 1,100,0,2");
	ck_assert_str_eq(a, "ok\n");
	a = ask(&f, "set nullb0/fault/requeue 1,200,0,2");
	ck_assert(!is_ok(a));
	ck_assert_ptr_nonnull(strstr(a, "fault requeue refused"));
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(do_read(f.dev, i * 8), 0);
	a = ask(&f, "get nullb0/device/requeues");
	ck_assert_str_eq(a, "+2\nok\n");
	a = ask(&f, "get nullb0/stat");
	ck_assert(!strncmp(a, "+3 0 24 ", 8));
	a = ask(&f, "metrics");
	ck_assert(is_ok(a));
	ck_assert_ptr_nonnull(strstr(
		a, "+mqblk_requests_total{export=\"nullb0\",op=\"read\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(
		a,
		"+mqblk_bytes_total{export=\"nullb0\",op=\"read\"} 12288\n"));
	ck_assert_ptr_nonnull(strstr(
		a,
		"+mqblk_request_latency_seconds_count{export=\"nullb0\",op=\"read\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(
		a,
		"+mqblk_request_latency_seconds_bucket{export=\"nullb0\",op=\"read\",le=\"+Inf\"} 3\n"));
	ck_assert_ptr_nonnull(
		strstr(a, "+# TYPE mqblk_hctx_requeued_total counter\n"));
	fx_fini(&f);
}
END_TEST

/* blktrace records: magic|version, then the action's low byte. */
struct rec {
	uint32_t magic, sequence;
	uint64_t time, sector;
	uint32_t bytes, action, pid, device, cpu;
	uint16_t error, pdu_len;
};

START_TEST(test_trace)
{
	struct fixture f;
	char dir[128], cmd[300], path[300];
	unsigned int seen[16] = {0}, q;
	const char *a;
	struct rec r;
	struct stat st;
	FILE *fp;

	fx_init(&f, NULL);
	/* Relative to the trace directory, made there. */
	a = ask(&f, "trace start run/1");
	ck_assert_str_eq(a, "ok\n");
	a = ask(&f, "trace start run/2");
	ck_assert_str_eq(a, "err a trace is already running\n");
	ck_assert_int_eq(do_read(f.dev, 64), 0);
	a = ask(&f, "trace stop");
	ck_assert_str_eq(a, "ok\n");
	ck_assert_int_eq(do_read(f.dev, 64), 0); /* not traced */

	snprintf(dir, sizeof(dir), "%s/run/1", trace_root);
	for (q = 0; q < 2; q++) {
		snprintf(path, sizeof(path), "%s/nullb0.blktrace.%u", dir, q);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq(st.st_mode & 0777, 0600);
		fp = fopen(path, "r");
		ck_assert_ptr_nonnull(fp);
		while (fread(&r, sizeof(r), 1, fp) == 1) {
			ck_assert_uint_eq(r.magic, 0x65617407);
			if (r.pdu_len) {
				ck_assert_int_eq(fseek(fp, r.pdu_len, SEEK_CUR),
						 0);
				continue;
			}
			ck_assert_uint_eq(r.sector, 64);
			ck_assert_uint_eq(r.bytes, 4096);
			ck_assert(r.action & (1u << 16)); /* BLK_TC_READ */
			seen[r.action & 0xf]++;
		}
		fclose(fp);
		ck_assert_int_eq(unlink(path), 0);
	}
	/* Q G I D C once each: 1 4 12 7 8 */
	ck_assert_uint_eq(seen[1], 1);
	ck_assert_uint_eq(seen[4], 1);
	ck_assert_uint_eq(seen[12], 1);
	ck_assert_uint_eq(seen[7], 1);
	ck_assert_uint_eq(seen[8], 1);

	/* An absolute path below the trace directory is taken too. */
	snprintf(cmd, sizeof(cmd), "trace start %s/run/1", trace_root);
	ck_assert_str_eq(ask(&f, cmd), "ok\n");
	ck_assert_str_eq(ask(&f, "trace stop"), "ok\n");
	for (q = 0; q < 2; q++) {
		snprintf(path, sizeof(path), "%s/nullb0.blktrace.%u", dir, q);
		ck_assert_int_eq(unlink(path), 0);
	}
	ck_assert_int_eq(rmdir(dir), 0);

	/* Nothing is made outside it: other trees, "..", symbolic links. */
	ck_assert(
		!strncmp(ask(&f, "trace start /tmp/test_ctl_out"), "err ", 4));
	ck_assert_int_eq(stat("/tmp/test_ctl_out", &st), -1);
	snprintf(cmd, sizeof(cmd), "trace start %s-x", trace_root);
	ck_assert(!strncmp(ask(&f, cmd), "err ", 4));
	snprintf(cmd, sizeof(cmd), "trace start %s/../test_ctl_out",
		 trace_root);
	ck_assert(!strncmp(ask(&f, cmd), "err ", 4));
	ck_assert(!strncmp(ask(&f, "trace start run/../../test_ctl_out"),
			   "err ", 4));
	ck_assert_int_eq(stat("/tmp/test_ctl_out", &st), -1);
	snprintf(path, sizeof(path), "%s/run/out", trace_root);
	ck_assert_int_eq(symlink("/tmp", path), 0);
	ck_assert(!strncmp(ask(&f, "trace start run/out/test_ctl_out"), "err ",
			   4));
	ck_assert(!strncmp(ask(&f, "trace start run/out"), "err ", 4));
	ck_assert_int_eq(stat("/tmp/test_ctl_out", &st), -1);
	ck_assert_int_eq(stat("/tmp/nullb0.blktrace.0", &st), -1);
	ck_assert_int_eq(unlink(path), 0);
	/* A file name that is a link out is not written through either. */
	snprintf(path, sizeof(path), "%s/run/nullb0.blktrace.0", trace_root);
	ck_assert_int_eq(symlink("/tmp/test_ctl_out", path), 0);
	ck_assert(!strncmp(ask(&f, "trace start run"), "err ", 4));
	ck_assert_int_eq(stat("/tmp/test_ctl_out", &st), -1);
	ck_assert_int_eq(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/run/nullb0.blktrace.1", trace_root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/run", trace_root);
	ck_assert_int_eq(rmdir(path), 0);
	ck_assert_str_eq(ask(&f, "trace stop"), "err no trace is running\n");
	fx_fini(&f);
}
END_TEST

/* Without a trace directory, tracing is refused. */
START_TEST(test_trace_off)
{
	struct mq_device *dev = null_new(NULL);
	struct ctl_export ex = {"nullb0", dev->disks[0]};
	struct ctl_buf out = {0};
	struct ctl_ctx c;
	struct mq_err e = {{0}};

	ck_assert_int_eq(ctl_ctx_init(&c, &ex, 1, NULL, &e), 0);
	ctl_handle_line(&c, "trace start /tmp/x", 18, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_msg(!strncmp(out.data, "err tracing is off", 18), "%s",
		      out.data);
	ctl_buf_free(&out);
	ctl_ctx_fini(&c);
	mq_device_destroy(dev);
}
END_TEST

/* The tree is keyed by export names; the disk's name is an attribute. */
START_TEST(test_export_names)
{
	struct mq_device *d1 = null_new(NULL), *d2 = null_new(NULL);
	struct ctl_export ex[2] = {{"fast", d1->disks[0]},
				   {"rack/slow", d2->disks[0]}};
	struct ctl_buf out = {0};
	struct ctl_ctx c;
	struct mq_err e = {{0}};

	/* Both devices call their disk nullb0: the tree does not care. */
	ck_assert_str_eq(d1->disks[0]->disk_name, d2->disks[0]->disk_name);
	if (ctl_ctx_init(&c, ex, 2, NULL, &e))
		ck_abort_msg("%s", e.msg);
	ctl_handle_line(&c, "ls", 2, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_str_eq(out.data, "+fast/\n+rack/\nok\n");
	out.len = 0;
	ctl_handle_line(&c, "get rack/slow/device/disk_name", 30, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_str_eq(out.data, "+nullb0\nok\n");
	out.len = 0;
	ctl_handle_line(&c, "set rack/slow/queue/scheduler kyber", 35, &out);
	ctl_handle_line(&c, "get fast/queue/scheduler", 24, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert(!strncmp(out.data, "ok\n+", 4));
	ck_assert_ptr_null(strstr(out.data, "[kyber]")); /* only slow's */
	out.len = 0;
	ctl_handle_line(&c, "metrics", 7, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_ptr_nonnull(
		strstr(out.data,
		       "+mqblk_in_flight{export=\"rack/slow\",op=\"read\"}"));
	ck_assert_ptr_null(strstr(out.data, "export=\"nullb0\""));
	ctl_buf_free(&out);
	ctl_ctx_fini(&c);

	/* A name that is no path, or a directory of another, is refused. */
	ex[0].name = "a b";
	ck_assert_int_eq(ctl_ctx_init(&c, ex, 2, NULL, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "'a b' cannot be named"));
	ex[0].name = "rack";
	ck_assert_int_eq(ctl_ctx_init(&c, ex, 2, NULL, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "is a directory of"));
	mq_device_destroy(d1);
	mq_device_destroy(d2);
}
END_TEST

/* An export dropped while a trace runs: its files end there, closed. */
START_TEST(test_trace_remove)
{
	struct fixture f;
	char path[2][300], dir[300];
	struct stat st[2];
	unsigned int q;

	fx_init(&f, NULL);
	ck_assert_str_eq(ask(&f, "trace start gone"), "ok\n");
	ck_assert_int_eq(do_read(f.dev, 64), 0);
	ck_assert_int_eq(ctl_ctx_remove(&f.c, "nullb0"), 0);
	/* Closed: every record is in the files, and no more come. */
	for (q = 0; q < 2; q++) {
		snprintf(path[q], sizeof(path[q]), "%s/gone/nullb0.blktrace.%u",
			 trace_root, q);
		ck_assert_int_eq(stat(path[q], &st[q]), 0);
	}
	ck_assert_int_gt(st[0].st_size + st[1].st_size, 0);
	ck_assert_int_eq(do_read(f.dev, 64), 0);
	ck_assert_str_eq(ask(&f, "trace stop"), "ok\n");
	for (q = 0; q < 2; q++) {
		struct stat now;

		ck_assert_int_eq(stat(path[q], &now), 0);
		ck_assert_int_eq(now.st_size, st[q].st_size);
		ck_assert_int_eq(unlink(path[q]), 0);
	}
	snprintf(dir, sizeof(dir), "%s/gone", trace_root);
	ck_assert_int_eq(rmdir(dir), 0);
	fx_fini(&f);
}
END_TEST

/* A running context takes exports and drops them (mqblkd's reload). */
START_TEST(test_add_remove)
{
	struct mq_device *d1 = null_new(NULL), *d2 = null_new(NULL),
			 *d3 = null_new(NULL);
	struct ctl_export one = {"one", d1->disks[0]};
	struct ctl_export more[2] = {{"two", d2->disks[0]},
				     {"one/x", d3->disks[0]}};
	struct ctl_buf out = {0};
	struct ctl_ctx c;
	struct mq_err e = {{0}};

	if (ctl_ctx_init(&c, &one, 1, NULL, &e))
		ck_abort_msg("%s", e.msg);
	/* All or none: "one/x" cannot sit under "one", so "two" is not in. */
	ck_assert_int_eq(ctl_ctx_add(&c, more, 2, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "is a directory of"));
	ck_assert_int_eq(ctl_ctx_add(&c, &one, 1, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "in the tree already"));
	ctl_handle_line(&c, "ls", 2, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_str_eq(out.data, "+one/\nok\n");
	ck_assert_uint_eq(c.nr_exports, 1);

	if (ctl_ctx_add(&c, more, 1, &e))
		ck_abort_msg("%s", e.msg);
	out.len = 0;
	ctl_handle_line(&c, "ls", 2, &out);
	ctl_handle_line(&c, "set two/queue/scheduler kyber", 29, &out);
	ctl_handle_line(&c, "metrics", 7, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert(!strncmp(out.data, "+one/\n+two/\nok\nok\n", 18));
	ck_assert_ptr_nonnull(strstr(
		out.data, "+mqblk_in_flight{export=\"two\",op=\"read\"}"));

	/* Dropped: its nodes, its metrics and its name go. */
	ck_assert_int_eq(ctl_ctx_remove(&c, "one"), 0);
	ck_assert_int_eq(ctl_ctx_remove(&c, "one"), -ENOENT);
	out.len = 0;
	ctl_handle_line(&c, "ls", 2, &out);
	ctl_handle_line(&c, "get one/queue/scheduler", 23, &out);
	ctl_handle_line(&c, "metrics", 7, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert(!strncmp(out.data,
			   "+two/\nok\nerr one/queue/scheduler: no such "
			   "attribute\n",
			   52));
	ck_assert_ptr_null(strstr(out.data, "export=\"one\""));
	/* The name is free again, and "one/x" may now come in. */
	if (ctl_ctx_add(&c, &more[1], 1, &e))
		ck_abort_msg("%s", e.msg);
	out.len = 0;
	ctl_handle_line(&c, "get one/x/queue/scheduler", 25, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert(!strncmp(out.data, "+", 1));
	ctl_buf_free(&out);
	ctl_ctx_fini(&c);
	mq_device_destroy(d1);
	mq_device_destroy(d2);
	mq_device_destroy(d3);
}
END_TEST

/* ---- the socket --------------------------------------------------- */

static int sock_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Read one answer, a byte at a time so that the next stays unread. */
static void read_answer(int fd, char *buf, size_t len)
{
	size_t used = 0, line = 0;

	for (;;) {
		ck_assert_uint_lt(used, len - 1);
		ck_assert_int_eq(read(fd, buf + used, 1), 1);
		buf[++used] = '\0';
		if (buf[used - 1] != '\n')
			continue;
		if (buf[line] != '+')
			return;
		line = used;
	}
}

/*
 * A device's queue that is no export (sx8's out-of-band queue): its
 * attrs sit at the top of its directory, its queue nodes as an export's;
 * a scheduler written to it is refused with the policy's reason; it is
 * in no metric.
 */
START_TEST(test_internal_queue)
{
	struct mq_params *p = mq_params_new();
	struct mq_device *dev;
	struct ctl_export ex[2];
	struct ctl_buf out = {0};
	struct ctl_ctx c;
	struct mq_err e = {{0}};

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(mq_params_set_kv(p, "device=sx8", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "time_scale=0", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "size=1M", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "ports=4", &e), 0);
	if (mq_device_create(p, 2, &dev, &e))
		ck_abort_msg("create: %s", e.msg);
	mq_params_free(p);
	ck_assert_uint_eq(dev->nr_internal, 1);
	ex[0] = (struct ctl_export){"sx8/port0", dev->disks[0]};
	ex[1] = (struct ctl_export){"sx8/host", dev->internal[0], true};
	if (ctl_ctx_init(&c, ex, 2, NULL, &e))
		ck_abort_msg("%s", e.msg);
	ck_assert_uint_eq(c.nr_exports, 1);

	ctl_handle_line(&c, "get sx8/host/state", 18, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_str_eq(out.data, "+HST_PROBE_FINISHED\nok\n");
	out.len = 0;
	ctl_handle_line(&c, "get sx8/host/queue/scheduler", 28, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_str_eq(out.data, "+[none]\nok\n");
	out.len = 0;
	ctl_handle_line(&c, "set sx8/host/queue/scheduler bfq", 32, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_msg(!strncmp(out.data, "err ", 4) &&
			      strstr(out.data, "NO_SCHED"),
		      "%s", out.data);
	out.len = 0;
	/* An export's attrs stay in device/. */
	ctl_handle_line(&c, "get sx8/port0/device/port", 25, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_str_eq(out.data, "+0\nok\n");
	out.len = 0;
	ctl_handle_line(&c, "metrics", 7, &out);
	ctl_buf_printf(&out, "%s", "");
	ck_assert_ptr_nonnull(strstr(out.data, "sx8/port0"));
	ck_assert_ptr_null(strstr(out.data, "sx8/host"));
	ctl_buf_free(&out);
	ctl_ctx_fini(&c);
	mq_device_destroy(dev);
}
END_TEST

START_TEST(test_server)
{
	struct mq_device *dev = null_new(NULL);
	struct ctl_export ex = {"nullb0", dev->disks[0]};
	char path[] = "/tmp/test_ctl.XXXXXX", sock[64], sock2[64], buf[8192];
	struct ctl_server *s, *s2;
	struct mq_err e;
	struct stat st;
	static char big[10000];
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(path));
	snprintf(sock, sizeof(sock), "%s/ctl", path);
	s = ctl_server_start(sock, NULL, &ex, 1, &e);
	ck_assert_ptr_nonnull(s);
	/* A live server's socket is not taken over... */
	ck_assert_ptr_null(ctl_server_start(sock, NULL, &ex, 1, &e));
	ck_assert_msg(strstr(e.msg, "another server listens there"), "%s",
		      e.msg);
	/* ...but a second server elsewhere runs beside the first. */
	snprintf(sock2, sizeof(sock2), "%s/ctl2", path);
	s2 = ctl_server_start(sock2, NULL, &ex, 1, &e);
	ck_assert_ptr_nonnull(s2);
	fd = sock_connect(sock2);
	ck_assert_int_eq(write(fd, "ls\n", 3), 3);
	read_answer(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "+nullb0/\nok\n");
	close(fd);
	ctl_server_stop(s2);
	ck_assert_int_eq(lstat(sock2, &st), -1);
	ck_assert_int_eq(lstat(sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0600);

	fd = sock_connect(sock);
	ck_assert_int_eq(write(fd, "get nullb0/queue/nr_hw_queues\n", 30), 30);
	read_answer(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "+2\nok\n");
	/* An over-long line is refused once, then the next line works. */
	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	ck_assert_int_eq(write(fd, "\nls\n", 4), 4);
	read_answer(fd, buf, sizeof(buf));
	ck_assert(!strncmp(buf, "err line too long", 17));
	read_answer(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "+nullb0/\nok\n");
	/* Two requests in one write, binary junk between. */
	ck_assert_int_eq(write(fd, "\x01\x02\0\xff\nget nullb0/inflight\n", 25),
			 25);
	read_answer(fd, buf, sizeof(buf));
	ck_assert(!strncmp(buf, "err bad byte", 12));
	read_answer(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "+0 0\nok\n");
	close(fd);

	ctl_server_stop(s);
	ck_assert_int_eq(lstat(sock, &st), -1);
	ctl_server_stop(NULL);
	ck_assert_int_eq(rmdir(path), 0);
	mq_device_destroy(dev);
}
END_TEST

static Suite *ctl_suite(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("ctl");

	tcase_add_test(tc, test_path_valid);
	tcase_add_test(tc, test_tree_every_node);
	tcase_add_test(tc, test_zones);
	tcase_add_test(tc, test_scheduler_switch);
	tcase_add_test(tc, test_nr_requests);
	tcase_add_test(tc, test_ioprio_map);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_fault_and_metrics);
	tcase_add_test(tc, test_trace);
	tcase_add_test(tc, test_trace_off);
	tcase_add_test(tc, test_export_names);
	tcase_add_test(tc, test_add_remove);
	tcase_add_test(tc, test_trace_remove);
	tcase_add_test(tc, test_internal_queue);
	tcase_add_test(tc, test_server);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(ctl_suite());
}
