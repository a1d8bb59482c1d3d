// SPDX-License-Identifier: GPL-2.0
/*
 * The media layer: media strings, the ram and file stores, the checks
 * every store shares and completion on the submitter's irq thread.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/media/media.h"
#include "backends/device.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"

#define MiB (1024ull * 1024)

static struct media *open_ok(const char *spec, uint64_t size)
{
	struct media_open_args a = {
		.size = size, .block_size = 512, .key = "media", .name = "t0"};
	struct media *m = NULL;
	struct mq_err e = {{0}};

	ck_assert_msg(media_open(spec, &a, &m, &e) == 0, "%s: %s", spec, e.msg);
	ck_assert_ptr_nonnull(m);
	return m;
}

static void open_bad(const char *spec, const char *key, const char *want)
{
	struct media_open_args a = {
		.size = MiB, .block_size = 512, .key = key, .name = "t0"};
	struct media *m = (struct media *)1;
	struct mq_err e = {{0}};

	ck_assert_int_eq(media_open(spec, &a, &m, &e), -1);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(e.msg, want), "%s: \"%s\" lacks \"%s\"",
		      spec ? spec : "(null)", e.msg, want);
}

START_TEST(bad_strings)
{
	open_bad("", "media",
		 "media=: unknown store; accepted: ram|file:PATH|nbd:URI");
	open_bad(":x", "media", "unknown store");
	open_bad("tape:/dev/st0", "media",
		 "media=tape:/dev/st0: unknown store");
	open_bad("averyveryverylongstorename:x", "media", "unknown store");
	open_bad("RAM", "media", "unknown store");
	open_bad("ram:x", "media", "ram takes no argument");
	open_bad(NULL, "image", "image: no store given");
	/* The key the user wrote is the one named. */
	open_bad("tape:", "image", "image=tape:");
}
END_TEST

START_TEST(ram_round_trip)
{
	struct media *m = open_ok("ram", 8 * MiB);
	unsigned char *in = malloc(65536), *out = malloc(65536);

	ck_assert_uint_eq(m->size, 8 * MiB);
	ck_assert(m->caps & MEDIA_CAN_TRIM);
	ck_assert(m->caps & MEDIA_TRIM_ZEROES);
	tio_fill(in, 65536, 7);
	ck_assert_int_eq(media_write(m, in, 65536, 4096), 0);
	ck_assert_int_eq(media_read(m, out, 65536, 4096), 0);
	ck_assert_mem_eq(in, out, 65536);
	ck_assert_int_eq(media_flush(m), 0);

	/* Zeroes and discards read back as zeroes. */
	ck_assert_int_eq(media_write_zeroes(m, 512, 4096, 0), 0);
	ck_assert_int_eq(media_discard(m, 512, 8192), 0);
	ck_assert_int_eq(media_read(m, out, 65536, 4096), 0);
	ck_assert(tio_all_zero(out, 512));
	ck_assert_mem_eq(in + 512, out + 512, 4096 - 512);
	ck_assert(tio_all_zero(out + 4096, 512));

	/* Outside the store: refused, nothing written. */
	ck_assert_int_eq(media_write(m, in, 512, 8 * MiB), EINVAL);
	ck_assert_int_eq(media_write(m, in, 1024, 8 * MiB - 512), EINVAL);
	ck_assert_int_eq(media_read(m, out, 512, UINT64_MAX - 100), EINVAL);
	ck_assert_int_eq(media_discard(m, UINT64_MAX, 512), EINVAL);
	free(in);
	free(out);
	media_close(m);
}
END_TEST

static int count_ext(void *arg, uint64_t off, uint64_t len, unsigned int type)
{
	uint64_t *data = arg;

	if (!(type & MQ_EXTENT_HOLE))
		*data += len;
	return 0;
}

START_TEST(ram_extents)
{
	struct media *m = open_ok("ram", 8 * MiB);
	static unsigned char buf[65536];
	uint64_t data = 0;

	memset(buf, 1, sizeof(buf));
	ck_assert_int_eq(media_extents(m, 0, 8 * MiB, count_ext, &data), 0);
	ck_assert_uint_eq(data, 0);
	ck_assert_int_eq(media_write(m, buf, sizeof(buf), 1 * MiB), 0);
	ck_assert_int_eq(media_extents(m, 0, 8 * MiB, count_ext, &data), 0);
	ck_assert_uint_ge(data, sizeof(buf));
	ck_assert_uint_lt(data, 8 * MiB);
	media_close(m);
}
END_TEST

START_TEST(read_only)
{
	struct media_open_args a = {.size = MiB,
				    .block_size = 512,
				    .read_only = true,
				    .key = "media"};
	struct media *m;
	struct mq_err e;
	char buf[512] = {1};

	ck_assert_int_eq(media_open("ram", &a, &m, &e), 0);
	ck_assert(m->read_only);
	ck_assert_int_eq(media_write(m, buf, 512, 0), EROFS);
	ck_assert_int_eq(media_write_zeroes(m, 512, 0, 0), EROFS);
	ck_assert_int_eq(media_discard(m, 512, 0), EROFS);
	ck_assert_int_eq(media_flush(m), 0);
	ck_assert_int_eq(media_read(m, buf, 512, 0), 0);
	media_close(m);
}
END_TEST

/* Completion reaches the irq thread given with the io. */
struct irq_check {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool done;
};

struct irq_probe {
	struct irq_work work;
	struct irq_check *c;
};

static void record_thread(struct irq_work *w)
{
	struct irq_probe *p = (struct irq_probe *)w;

	pthread_mutex_lock(&p->c->lock);
	p->c->thread = pthread_self();
	p->c->done = true;
	pthread_cond_signal(&p->c->cond);
	pthread_mutex_unlock(&p->c->lock);
}

static void end_on_irq(struct media_io *io)
{
	struct irq_check *c = io->private;

	pthread_mutex_lock(&c->lock);
	c->thread = pthread_self();
	c->done = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void wait_done(struct irq_check *c)
{
	pthread_mutex_lock(&c->lock);
	while (!c->done)
		pthread_cond_wait(&c->cond, &c->lock);
	c->done = false;
	pthread_mutex_unlock(&c->lock);
}

START_TEST(completion_on_irq_thread)
{
	struct irq_check c = {PTHREAD_MUTEX_INITIALIZER,
			      PTHREAD_COND_INITIALIZER};
	struct irq_thread *t = irq_thread_create("t-irq");
	struct media *m = open_ok("ram", MiB);
	struct irq_probe probe = {.c = &c};
	struct media_io io = {0};
	pthread_t irq_tid;
	char buf[512];

	ck_assert_ptr_nonnull(t);
	/* Learn the irq thread's id. */
	irq_raise(t, &probe.work, record_thread, 0);
	wait_done(&c);
	irq_tid = c.thread;
	ck_assert(!pthread_equal(irq_tid, pthread_self()));

	io.op = MEDIA_READ;
	io.len = sizeof(buf);
	io.buf = buf;
	io.irq = t;
	io.end_io = end_on_irq;
	io.private = &c;
	media_submit(m, &io);
	wait_done(&c);
	ck_assert(pthread_equal(c.thread, irq_tid));
	ck_assert_int_eq(io.status, 0);

	/* Errors too. */
	io.offset = 2 * MiB;
	media_submit(m, &io);
	wait_done(&c);
	ck_assert(pthread_equal(c.thread, irq_tid));
	ck_assert_int_eq(io.status, EINVAL);

	irq_thread_destroy(t);
	media_close(m);
}
END_TEST

START_TEST(file_store)
{
	char path[] = "/tmp/test_media_XXXXXX";
	int fd = mkstemp(path);
	unsigned char *in = malloc(65536), *out = malloc(65536);
	char spec[64];
	struct media *m;
	struct stat st;

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s", path);
	/* An empty file is extended to the size asked for. */
	m = open_ok(spec, 4 * MiB);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 4 * MiB);
	ck_assert(m->caps & MEDIA_CAN_FLUSH);
	ck_assert(m->caps & MEDIA_CAN_EXTENTS);

	tio_fill(in, 65536, 3);
	ck_assert_int_eq(media_write(m, in, 65536, 512), 0);
	ck_assert_int_eq(
		media_rw(m, MEDIA_WRITE, in, 512, 3 * MiB, MEDIA_IO_FUA), 0);
	ck_assert_int_eq(media_flush(m), 0);
	media_close(m);

	/* The bytes are in the file: reopen at the file's own size. */
	m = open_ok(spec, 0);
	ck_assert_uint_eq(m->size, 4 * MiB);
	ck_assert_int_eq(media_read(m, out, 65536, 512), 0);
	ck_assert_mem_eq(in, out, 65536);
	ck_assert_int_eq(media_read(m, out, 512, 3 * MiB), 0);
	ck_assert_mem_eq(in, out, 512);
	/* WRITE_ZEROES reads back as zeroes, with or without NOUNMAP. */
	ck_assert_int_eq(media_write_zeroes(m, 1024, 512, 0), 0);
	ck_assert_int_eq(media_write_zeroes(m, 1024, 2048, MEDIA_IO_NOUNMAP),
			 0);
	ck_assert_int_eq(media_read(m, out, 4096, 512), 0);
	ck_assert(tio_all_zero(out, 1024));
	ck_assert_mem_eq(in + 1024, out + 1024, 512);
	ck_assert(tio_all_zero(out + 1536, 1024));
	ck_assert_int_eq(media_write(m, in, 512, 4 * MiB), EINVAL);
	media_close(m);

	/* Errors name the key the user gave and the path. */
	unlink(path);
	open_bad(spec, "media", "media=file:/tmp/test_media_");
	open_bad(spec, "media", "No such file or directory");
	open_bad(spec, "image", "image=/tmp/test_media_");
	open_bad("file:", "media", "media=file:PATH: the path is missing");
	open_bad("file:/dev/null", "media",
		 "media=file:/dev/null: not a regular file or block device");
	free(in);
	free(out);
}
END_TEST

/* media= through the device layer: one place parses it for every model. */
static void device_bad(const char *device, const char *kv1, const char *kv2,
		       const char *want)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	ck_assert_int_eq(
		tdevice_create(&d, &e, device, "time_scale=0", kv1, kv2, NULL),
		-1);
	ck_assert_ptr_null(d);
	ck_assert_msg(strstr(e.msg, want), "%s %s %s: \"%s\" lacks \"%s\"",
		      device, kv1, kv2 ? kv2 : "", e.msg, want);
}

START_TEST(device_media_keys)
{
	char path[] = "/tmp/test_media_dev_XXXXXX", kv[64], img[64];
	int fd = mkstemp(path);
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 8 << 20), 0);
	close(fd);
	snprintf(kv, sizeof(kv), "media=file:%s", path);
	snprintf(img, sizeof(img), "image=%s", path);

	/* A model with a store takes the file's size. */
	ck_assert_msg(tdevice_create(&d, &e, "ide-disk", "time_scale=0", kv,
				     NULL) == 0,
		      "%s", e.msg);
	ck_assert_uint_eq(get_capacity(tdevice_disk0(d)), (8 << 20) >> 9);
	mq_device_destroy(d);
	ck_assert_msg(
		tdevice_create(&d, &e, "scsi", "time_scale=0", kv, NULL) == 0,
		"%s", e.msg);
	ck_assert_uint_eq(get_capacity(tdevice_disk0(d)), (8 << 20) >> 9);
	mq_device_destroy(d);

	/* Bad strings, each answered with the key and the reason. */
	device_bad("ide-disk", "media=tape:0", NULL,
		   "media=tape:0: unknown store; accepted: ram|file:PATH");
	device_bad("ide-disk", "media=", NULL, "unknown store");
	device_bad("scsi", "media=ram:", NULL, "ram takes no argument");
	device_bad("mspro", "media=file:", NULL,
		   "media=file:PATH: the path is missing");
	device_bad("smr", "media=nbd:", NULL,
		   "media=nbd:URI: the URI is missing");
	device_bad("ide-disk", kv, img, "give one of them");
	device_bad("ide", kv, NULL, "give hdX.media=");
	device_bad("sx8", kv, NULL, "would be shared by 8 ports");
	device_bad("null", "media=ram", NULL, "needs memory_backed=1");
	/* Models that cannot keep media elsewhere say why. */
	device_bad("ram", "media=ram", NULL, "ram: media= is not taken");
	device_bad("mtdblock", "media=ram", NULL,
		   "mtdblock: media= is not taken: the flash chip");
	device_bad("ftl", kv, NULL, "image=PATH persists it");
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("media");
	TCase *tc = tcase_create("media");

	tcase_add_test(tc, bad_strings);
	tcase_add_test(tc, ram_round_trip);
	tcase_add_test(tc, ram_extents);
	tcase_add_test(tc, read_only);
	tcase_add_test(tc, completion_on_irq_thread);
	tcase_add_test(tc, file_store);
	tcase_add_test(tc, device_media_keys);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
