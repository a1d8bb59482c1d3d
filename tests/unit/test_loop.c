// SPDX-License-Identifier: GPL-2.0
/*
 * The loop core (backends/loop.c) under its drivers: file (workers doing
 * blocking I/O) and nbd over a ram store (bios sent to the store and
 * ended on its thread).  rbd, the core's third user, needs a cluster:
 * tests/integration/test-rbd.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/device.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"
#include "tests/unit/helpers/tlog.h"

#define BLK 4096u

static char image[64];

static void image_setup(void)
{
	int fd;

	snprintf(image, sizeof(image), "/tmp/mqblk-loop-XXXXXX");
	fd = mkstemp(image);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
}

static void image_teardown(void)
{
	unlink(image);
}

static struct mq_device *file_new(void)
{
	struct mq_device *d;
	struct mq_err e = {{0}};
	char kv[96];

	snprintf(kv, sizeof(kv), "file=%s", image);
	if (tdevice_create(&d, &e, "file", kv, NULL))
		ck_abort_msg("create failed: %s", e.msg);
	return d;
}

static struct mq_device *nbd_ram_new(void)
{
	struct mq_device *d;
	struct mq_err e = {{0}};

	if (tdevice_create(&d, &e, "nbd", "media=ram", "size=1M", NULL))
		ck_abort_msg("create failed: %s", e.msg);
	return d;
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int status;
};

static void drv_end_io(struct request *rq, int status)
{
	struct waiter *w = rq->end_io_data;

	mq_free_request(rq);
	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->status = status;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* A driver-private request (DRV_IN) straight into the queue. */
static int drv_in(struct mq_device *d)
{
	struct mq_queue *q = tdevice_disk0(d)->queue;
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			   false, 0};
	struct request *rq;

	rq = mq_alloc_request(q, REQ_OP_DRV_IN, 0);
	ck_assert_ptr_nonnull(rq);
	rq->end_io = drv_end_io;
	rq->end_io_data = &w;
	mq_sched_insert_request(rq, false, true, false);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.status;
}

/* Data, FUA and flush through both ways of running a request. */
static void exercise(struct mq_device *d)
{
	struct mq_queue *q = tdevice_disk0(d)->queue;
	unsigned char *buf = malloc(2 * BLK), *back = malloc(2 * BLK);

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(back);
	tio_round_trip(q, 0, 8, 2 * BLK, 1);
	tio_fill(buf, 2 * BLK, 2);
	ck_assert_int_eq(tio_io(q, 1, REQ_OP_WRITE, REQ_FUA, 64, 2 * BLK, buf),
			 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_FLUSH, 0, 0, 0, NULL), 0);
	ck_assert_int_eq(tio_io(q, 2, REQ_OP_READ, 0, 64, 2 * BLK, back), 0);
	ck_assert_mem_eq(back, buf, 2 * BLK);
	ck_assert_int_eq(tio_io(q, 3, REQ_OP_WRITE_ZEROES, 0, 64, BLK, NULL),
			 0);
	ck_assert_int_eq(tio_io(q, 3, REQ_OP_READ, 0, 64, 2 * BLK, back), 0);
	ck_assert(tio_all_zero(back, BLK));
	ck_assert_mem_eq(back + BLK, buf + BLK, BLK);
	free(buf);
	free(back);
}

/* Both ways of running a request, then the drivers' sync. */
START_TEST(io)
{
	struct mq_device *d[2] = {file_new(), nbd_ram_new()};
	unsigned int i;

	for (i = 0; i < 2; i++) {
		exercise(d[i]);
		ck_assert_int_eq(mq_device_sync(d[i]), 0);
		mq_device_destroy(d[i]);
	}
}
END_TEST

/*
 * An operation with no store counterpart (a driver-private request) is
 * EIO, as in Linux's loop and rbd.  nbd once sent it on as a flush, and
 * file's workers, finding no bio in it, ended it with success.
 */
START_TEST(drv_refused)
{
	struct mq_device *d = nbd_ram_new();

	ck_assert_int_eq(drv_in(d), EIO);
	mq_device_destroy(d);
	d = file_new();
	ck_assert_int_eq(drv_in(d), EIO);
	mq_device_destroy(d);
}
END_TEST

static Suite *loop_suite(void)
{
	Suite *s = suite_create("loop");
	TCase *tc = tcase_create("loop");

	tcase_add_checked_fixture(tc, image_setup, image_teardown);
	tcase_add_test(tc, io);
	tcase_add_test(tc, drv_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(loop_suite());
}
