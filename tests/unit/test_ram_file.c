// SPDX-License-Identifier: GPL-2.0
/*
 * ram and file through the request core: devices are made with
 * mq_device_create, bios go in with mq_submit_bio, and completions are
 * waited for on a condition variable.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/device.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tio.h"

#define KiB 1024u
#define MiB (1024u * KiB)

/* ---- submitting and waiting ---- */

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int done;
};

#define WAITER_INIT                                                            \
	{                                                                      \
		PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0         \
	}

static void end_io(struct bio *bio)
{
	struct waiter *w = bio->bi_private;

	pthread_mutex_lock(&w->lock);
	w->done++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void wait_for(struct waiter *w, unsigned int n)
{
	pthread_mutex_lock(&w->lock);
	while (w->done < n)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

static void submit(struct mq_queue *q, unsigned int cpu, struct bio *bio,
		   struct waiter *w, enum req_op op, unsigned int flags,
		   uint64_t sector, uint32_t bytes, void *buf)
{
	bio_init(bio, op, sector, bytes, buf);
	bio->bi_flags = flags;
	bio->bi_end_io = end_io;
	bio->bi_private = w;
	bio->bi_submitter = cpu + 1;
	mq_submit_bio(mq_get_ctx(q, cpu), bio);
}

/* The last error logged, for tests of log lines. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_err[512];

static void capture(enum mq_log_level level, const char *msg)
{
	if (level != MQ_LOG_ERR)
		return;
	pthread_mutex_lock(&log_lock);
	snprintf(last_err, sizeof(last_err), "%s", msg);
	pthread_mutex_unlock(&log_lock);
}

/* ---- devices ---- */

static struct mq_device *make(const char *const *kv, unsigned int nr_ctx,
			      struct mq_err *e)
{
	struct mq_params *p = mq_params_new();
	struct mq_device *dev = NULL;

	ck_assert_ptr_nonnull(p);
	for (; *kv; kv++)
		ck_assert_int_eq(mq_params_set_kv(p, *kv, e), 0);
	memset(e->msg, 0, sizeof(e->msg));
	if (mq_device_create(p, nr_ctx, &dev, e))
		dev = NULL;
	mq_params_free(p);
	return dev;
}

static struct mq_device *make_ok(const char *const *kv, unsigned int nr_ctx)
{
	struct mq_err e;
	struct mq_device *dev = make(kv, nr_ctx, &e);

	ck_assert_msg(dev != NULL, "%s", e.msg);
	ck_assert_uint_eq(dev->nr_disks, 1);
	return dev;
}

struct ext_list {
	uint64_t off[64], len[64];
	unsigned int type[64];
	unsigned int n;
};

static int collect(void *arg, uint64_t off, uint64_t len, unsigned int type)
{
	struct ext_list *l = arg;

	ck_assert_uint_lt(l->n, 64);
	l->off[l->n] = off;
	l->len[l->n] = len;
	l->type[l->n++] = type;
	return 0;
}

/* The type of the extent covering byte off of the disk. */
static unsigned int extent_at(struct gendisk *disk, uint64_t off)
{
	struct ext_list l = {.n = 0};

	ck_assert_int_eq(disk->fops->extents(disk, off, 4096, collect, &l), 0);
	ck_assert_uint_ge(l.n, 1);
	ck_assert_uint_eq(l.off[0], off);
	return l.type[0];
}

/* ---- ram ---- */

START_TEST(ram_rw)
{
	static const char *const kv[] = {"device=ram", "size=64M",
					 "time_scale=0", NULL};
	struct mq_device *dev = make_ok(kv, 4);
	struct gendisk *disk = dev->disks[0];
	struct mq_queue *q = disk->queue;
	size_t big = 40 * MiB; /* more than max_sectors: the core splits */
	unsigned char *in = malloc(big), *out = malloc(big);

	ck_assert_str_eq(disk->disk_name, "ram0");
	ck_assert_str_eq(disk->description, "RAM disk ram0");
	ck_assert_uint_eq(get_capacity(disk), 64 * MiB / 512);
	ck_assert_uint_eq(disk->features, DISK_FAST_ZERO | DISK_MULTI_CONN);
	ck_assert_uint_eq(q->nr_hw_queues, 4);
	ck_assert_uint_eq(q->tag_set->queue_depth, 128);
	ck_assert(q->tag_set->flags & MQ_F_NO_SCHED_BY_DEFAULT);
	ck_assert(!(q->tag_set->flags & MQ_F_SHOULD_MERGE));
	ck_assert_uint_eq(q->limits.logical_block_size, 512);
	ck_assert_uint_eq(q->limits.max_sectors, 65536);
	ck_assert(!q->limits.write_cache);

	/* Everything starts as a hole. */
	ck_assert_uint_eq(extent_at(disk, 0), MQ_EXTENT_HOLE | MQ_EXTENT_ZERO);

	tio_fill(in, big, 1);
	ck_assert_int_eq(tio_io(q, 1, REQ_OP_WRITE, 0, 8, big, in), 0);
	memset(out, 0xee, big);
	ck_assert_int_eq(tio_io(q, 3, REQ_OP_READ, 0, 8, big, out), 0);
	ck_assert_mem_eq(in, out, big);
	ck_assert_uint_eq(extent_at(disk, 1 * MiB), 0);

	/* Discard 1 MiB in the middle: zeroes there, data around it. */
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_DISCARD, 0, 4096, MiB, NULL), 0);
	ck_assert_int_eq(tio_io(q, 2, REQ_OP_READ, 0, 4096 - 8, 3 * MiB, out),
			 0);
	/* out starts at sector 4088, which holds in from sector 8 on */
	ck_assert_mem_eq(out, in + (4088 - 8) * 512, 8 * 512);
	ck_assert(tio_all_zero(out + 8 * 512, MiB));
	/* out + 4 KiB + 1 MiB is byte 3 MiB of the disk, 3 MiB - 4 KiB of in */
	ck_assert_mem_eq(out + 8 * 512 + MiB, in + 3 * MiB - 8 * 512,
			 2 * MiB - 8 * 512);
	ck_assert_uint_eq(extent_at(disk, 2 * MiB + 32 * KiB),
			  MQ_EXTENT_HOLE | MQ_EXTENT_ZERO);

	/* Write zeroes, with and without NOUNMAP. */
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE_ZEROES, REQ_NOUNMAP, 10000,
				4096, NULL),
			 0);
	ck_assert_int_eq(
		tio_io(q, 1, REQ_OP_WRITE_ZEROES, 0, 20001, 1024, NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 10000, 4096, out), 0);
	ck_assert(tio_all_zero(out, 4096));
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 20000, 2048, out), 0);
	ck_assert_mem_eq(out, in + (20000 - 8) * 512, 512);
	ck_assert(tio_all_zero(out + 512, 1024));
	ck_assert_mem_eq(out + 1536, in + (20003 - 8) * 512, 512);

	/* FLUSH and FUA are accepted (no volatile cache). */
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_FLUSH, 0, 0, 0, NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, REQ_FUA, 0, 512, in), 0);

	mq_device_destroy(dev);
	free(in);
	free(out);
}
END_TEST

struct submitter {
	struct mq_queue *q;
	unsigned int cpu;
	int errors;
};

#define NR_SUBMITTERS 4
#define PER_SUBMITTER 256

/* Each thread writes its own 4 KiB blocks, many in flight at once. */
static void *submitter_fn(void *arg)
{
	struct submitter *s = arg;
	struct waiter w = WAITER_INIT;
	struct bio *bios = calloc(PER_SUBMITTER, sizeof(*bios));
	unsigned char *bufs = malloc(PER_SUBMITTER * 4096);
	unsigned int i;

	if (!bios || !bufs)
		abort();
	for (i = 0; i < PER_SUBMITTER; i++) {
		unsigned int blk = i * NR_SUBMITTERS + s->cpu;

		tio_fill(bufs + i * 4096, 4096, blk);
		submit(s->q, s->cpu, &bios[i], &w, REQ_OP_WRITE, 0, blk * 8,
		       4096, bufs + i * 4096);
	}
	wait_for(&w, PER_SUBMITTER);
	for (i = 0; i < PER_SUBMITTER; i++)
		s->errors += bios[i].bi_status != 0;
	free(bios);
	free(bufs);
	return NULL;
}

static void parallel_writes(struct mq_queue *q)
{
	struct submitter s[NR_SUBMITTERS];
	pthread_t th[NR_SUBMITTERS];
	unsigned int nr = NR_SUBMITTERS * PER_SUBMITTER;
	unsigned char *out = malloc(nr * 4096), expect[4096];
	unsigned int i;

	for (i = 0; i < NR_SUBMITTERS; i++) {
		s[i] = (struct submitter){q, i, 0};
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, submitter_fn, &s[i]), 0);
	}
	for (i = 0; i < NR_SUBMITTERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(s[i].errors, 0);
	}
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, nr * 4096, out), 0);
	for (i = 0; i < nr; i++) {
		tio_fill(expect, 4096, i);
		ck_assert_msg(memcmp(out + i * 4096, expect, 4096) == 0,
			      "block %u", i);
	}
	free(out);
}

START_TEST(ram_parallel)
{
	static const char *const kv[] = {"device=ram", "size=16M",
					 "time_scale=0", NULL};
	struct mq_device *dev = make_ok(kv, NR_SUBMITTERS);

	parallel_writes(dev->disks[0]->queue);
	mq_device_destroy(dev);
}
END_TEST

START_TEST(ram_keys)
{
	static const char *const bs4k[] = {"device=ram", "size=1M", "bs=4096",
					   NULL};
	static const char *const badbs[] = {"device=ram", "bs=1000", NULL};
	static const char *const badsize[] = {"device=ram", "size=1026048",
					      "bs=4096", NULL};
	static const char *const zero[] = {"device=ram", "size=0", NULL};
	struct mq_device *dev = make_ok(bs4k, 1);
	struct mq_err e;

	ck_assert_uint_eq(dev->disks[0]->queue->limits.logical_block_size,
			  4096);
	ck_assert_uint_eq(dev->disks[0]->queue->limits.discard_granularity,
			  4096);
	ck_assert_uint_eq(get_capacity(dev->disks[0]), 2048);
	mq_device_destroy(dev);

	ck_assert_ptr_null(make(badbs, 1, &e));
	ck_assert_str_eq(e.msg,
			 "ram: bs=1000: must be a power of two from 512 to "
			 "4096");
	ck_assert_ptr_null(make(badsize, 1, &e));
	ck_assert_str_eq(e.msg, "ram: size=1026048: must be a non-zero "
				"multiple of bs=4096");
	ck_assert_ptr_null(make(zero, 1, &e));
	ck_assert_str_eq(e.msg,
			 "ram: size=0: must be a non-zero multiple of bs=512");
}
END_TEST

/* ---- file ---- */

struct tmpfile {
	char dir[256];
	char path[300];
	char kv[320]; /* "file=PATH" */
};

static void tmpfile_new(struct tmpfile *t, uint64_t size)
{
	const char *base = getenv("TMPDIR");
	int fd;

	snprintf(t->dir, sizeof(t->dir), "%s/mqblk-test-XXXXXX",
		 base ? base : "/var/tmp");
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	snprintf(t->path, sizeof(t->path), "%s/disk", t->dir);
	snprintf(t->kv, sizeof(t->kv), "file=%s", t->path);
	fd = open(t->path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, size), 0);
	close(fd);
}

static void tmpfile_free(struct tmpfile *t)
{
	unlink(t->path);
	rmdir(t->dir);
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_size;
}

static void file_pread(const char *path, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

START_TEST(file_rw)
{
	struct tmpfile t;
	const char *kv[] = {"device=file", NULL, "size=8M", "time_scale=0",
			    NULL};
	struct mq_device *dev;
	struct gendisk *disk;
	struct mq_queue *q;
	size_t len = 512 * KiB;
	unsigned char *in = malloc(len), *out = malloc(len);
	char desc[400];
	unsigned int i;

	tmpfile_new(&t, 0);
	kv[1] = t.kv;
	dev = make_ok(kv, 2);
	disk = dev->disks[0];
	q = disk->queue;

	/* The empty file was extended to size=. */
	ck_assert_uint_eq(file_size(t.path), 8 * MiB);
	ck_assert_uint_eq(get_capacity(disk), 8 * MiB / 512);
	ck_assert_str_eq(disk->disk_name, "loop0");
	snprintf(desc, sizeof(desc), "file-backed loop device loop0 (%s)",
		 t.path);
	ck_assert_str_eq(disk->description, desc);
	ck_assert(disk->features & DISK_MULTI_CONN);
	ck_assert(!disk->read_only);
	ck_assert_uint_eq(q->nr_hw_queues, 1);
	ck_assert(q->tag_set->flags & MQ_F_SHOULD_MERGE);
	ck_assert(q->tag_set->flags & MQ_F_NO_SCHED_BY_DEFAULT);
	ck_assert(q->limits.write_cache);
	ck_assert(!q->limits.fua);
	ck_assert_uint_eq(q->limits.max_sectors, 65536);

	/* Write, flush, and find the data in the file itself. */
	tio_fill(in, len, 4);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, 0, 100, len, in), 0);
	ck_assert_int_eq(tio_io(q, 1, REQ_OP_FLUSH, 0, 0, 0, NULL), 0);
	file_pread(t.path, out, len, 100 * 512);
	ck_assert_mem_eq(in, out, len);
	memset(out, 0, len);
	ck_assert_int_eq(tio_io(q, 1, REQ_OP_READ, 0, 100, len, out), 0);
	ck_assert_mem_eq(in, out, len);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, REQ_FUA, 0, 512, in), 0);

	/* Never written: a hole.  Written: data. */
	ck_assert_uint_eq(extent_at(disk, 4 * MiB),
			  MQ_EXTENT_HOLE | MQ_EXTENT_ZERO);
	ck_assert_uint_eq(extent_at(disk, 256 * KiB), 0);

	if (disk->features & DISK_FAST_ZERO) {
		/* Trim an aligned 128 KiB inside the data: reads zero, and
		 * the file has a hole there. */
		ck_assert_uint_gt(q->limits.max_discard_sectors, 0);
		ck_assert_int_eq(
			tio_io(q, 0, REQ_OP_DISCARD, 0, 256, 128 * KiB, NULL),
			0);
		ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 100, len, out),
				 0);
		ck_assert_mem_eq(out, in, (256 - 100) * 512);
		ck_assert(tio_all_zero(out + (256 - 100) * 512, 128 * KiB));
		ck_assert_mem_eq(out + (512 - 100) * 512,
				 in + (512 - 100) * 512,
				 len - (512 - 100) * 512);
		ck_assert_uint_eq(extent_at(disk, 128 * KiB + 4096),
				  MQ_EXTENT_HOLE | MQ_EXTENT_ZERO);
	}

	/* Write zeroes, both kinds, at unaligned places. */
	ck_assert_int_eq(
		tio_io(q, 0, REQ_OP_WRITE_ZEROES, REQ_NOUNMAP, 600, 1536, NULL),
		0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE_ZEROES, 0, 700, 8192, NULL),
			 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 599, 512 * 120, out), 0);
	ck_assert_mem_eq(out, in + (599 - 100) * 512, 512);
	ck_assert(tio_all_zero(out + 512, 1536));
	ck_assert_mem_eq(out + 2048, in + (603 - 100) * 512, 512 * 97);
	ck_assert(tio_all_zero(out + 512 * 101, 8192));
	ck_assert_mem_eq(out + 512 * 117, in + (716 - 100) * 512, 512 * 3);

	/* Adjacent writes in flight together (the core may merge them). */
	{
		struct waiter w = WAITER_INIT;
		struct bio bios[16];

		tio_fill(in, 64 * KiB, 9);
		for (i = 0; i < 16; i++)
			submit(q, 0, &bios[i], &w, REQ_OP_WRITE, 0,
			       4096 + i * 8, 4096, in + i * 4096);
		wait_for(&w, 16);
		for (i = 0; i < 16; i++)
			ck_assert_int_eq(bios[i].bi_status, 0);
		ck_assert_int_eq(
			tio_io(q, 1, REQ_OP_READ, 0, 4096, 64 * KiB, out), 0);
		ck_assert_mem_eq(in, out, 64 * KiB);
	}

	ck_assert_int_eq(mq_device_sync(dev), 0);
	mq_device_destroy(dev);
	tmpfile_free(&t);
	free(in);
	free(out);
}
END_TEST

START_TEST(file_parallel)
{
	struct tmpfile t;
	const char *kv[] = {"device=file",  NULL,	 "size=16M",
			    "time_scale=0", "workers=3", NULL};
	struct mq_device *dev;

	tmpfile_new(&t, 0);
	kv[1] = t.kv;
	dev = make_ok(kv, NR_SUBMITTERS);
	parallel_writes(dev->disks[0]->queue);
	mq_device_destroy(dev);
	tmpfile_free(&t);
}
END_TEST

START_TEST(file_direct)
{
	struct tmpfile t;
	const char *kv[] = {"device=file", NULL, "direct=1", "time_scale=0",
			    NULL};
	struct mq_device *dev;
	struct mq_queue *q;
	size_t len = 3 * MiB;
	unsigned char *in = malloc(len + 1), *out = malloc(len + 1);
	struct mq_err e;

	tmpfile_new(&t, 4 * MiB);
	kv[1] = t.kv;
	dev = make(kv, 1, &e);
	if (!dev && strstr(e.msg, "does not support O_DIRECT")) {
		/* tmpfs before Linux 6.6: nothing more to test here */
		tmpfile_free(&t);
		free(in);
		free(out);
		return;
	}
	ck_assert_msg(dev != NULL, "%s", e.msg);
	q = dev->disks[0]->queue;
	ck_assert_uint_eq(get_capacity(dev->disks[0]), 4 * MiB / 512);

	/* Buffers off by one byte: they go through the bounce buffer. */
	tio_fill(in + 1, len, 5);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, 0, 8, len, in + 1), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 8, len, out + 1), 0);
	ck_assert_mem_eq(in + 1, out + 1, len);
	/* O_DIRECT wrote through to the file. */
	file_pread(t.path, out, len, 8 * 512);
	ck_assert_mem_eq(in + 1, out, len);
	mq_device_destroy(dev);
	tmpfile_free(&t);
	free(in);
	free(out);
}
END_TEST

START_TEST(file_modes)
{
	struct tmpfile t;
	const char *ro[] = {"device=file", NULL, "readonly=yes", "time_scale=0",
			    NULL};
	const char *sync[] = {"device=file", NULL, "sync=1", "time_scale=0",
			      NULL};
	struct mq_device *dev;
	struct mq_queue *q;
	unsigned char buf[4096];

	tmpfile_new(&t, 1 * MiB);
	ro[1] = sync[1] = t.kv;

	dev = make_ok(ro, 1);
	q = dev->disks[0]->queue;
	ck_assert(dev->disks[0]->read_only);
	ck_assert_uint_eq(q->limits.max_discard_sectors, 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, buf), 0);
	ck_assert(tio_all_zero(buf, 4096));
	mq_log_set_sink(capture);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, 0, 8, 4096, buf), EROFS);
	mq_log_set_sink(NULL);
	/* Logged before the request ended, so visible now. */
	pthread_mutex_lock(&log_lock);
	ck_assert_str_eq(last_err,
			 "loop0: write at sector 8: Read-only file system");
	pthread_mutex_unlock(&log_lock);
	mq_device_destroy(dev);

	dev = make_ok(sync, 1);
	q = dev->disks[0]->queue;
	ck_assert(!q->limits.write_cache);
	tio_fill(buf, sizeof(buf), 6);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, 0, 16, 4096, buf), 0);
	mq_device_destroy(dev);
	{
		unsigned char got[4096], want[4096];

		tio_fill(want, sizeof(want), 6);
		file_pread(t.path, got, 4096, 16 * 512);
		ck_assert_mem_eq(got, want, 4096);
	}
	tmpfile_free(&t);
}
END_TEST

START_TEST(file_errors)
{
	struct tmpfile t;
	const char *missing[] = {"device=file", "file=/nonexistent/disk.img",
				 NULL};
	const char *nofile[] = {"device=file", NULL};
	const char *kv[] = {"device=file", NULL, NULL, NULL, NULL};
	char want[512];
	struct mq_err e;
	int fd;

	ck_assert_ptr_null(make(missing, 1, &e));
	ck_assert_str_eq(e.msg, "file: file=/nonexistent/disk.img: No such "
				"file or directory");
	ck_assert_ptr_null(make(nofile, 1, &e));
	ck_assert_str_eq(e.msg, "file: file=PATH is required");

	/* An empty file needs size=. */
	tmpfile_new(&t, 0);
	kv[1] = t.kv;
	ck_assert_ptr_null(make(kv, 1, &e));
	snprintf(want, sizeof(want),
		 "file: file=%s is empty; give size=BYTES to extend it",
		 t.path);
	ck_assert_str_eq(e.msg, want);

	/* A size that is not a multiple of bs. */
	fd = open(t.path, O_WRONLY);
	ck_assert_int_eq(ftruncate(fd, 1000), 0);
	close(fd);
	ck_assert_ptr_null(make(kv, 1, &e));
	snprintf(want, sizeof(want),
		 "file: file=%s: its size 1000 is not a multiple of bs=512",
		 t.path);
	ck_assert_str_eq(e.msg, want);
	kv[2] = "size=4097";
	ck_assert_ptr_null(make(kv, 1, &e));
	ck_assert_str_eq(e.msg, "file: size=4097: must be a non-zero multiple "
				"of bs=512");

	/* Unknown keys name the file driver's keys. */
	kv[2] = "size=4096";
	kv[3] = "colour=red";
	ck_assert_ptr_null(make(kv, 1, &e));
	ck_assert_str_eq(
		e.msg,
		"file: unknown key 'colour' (accepted: size, "
		"time_scale, io_timeout, scheduler, rules, iosched.*, media, log_writes, file, bs, direct, sync, "
		"readonly, workers)");
	tmpfile_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ram_file");
	TCase *tc = tcase_create("ram_file");

	tcase_add_test(tc, ram_rw);
	tcase_add_test(tc, ram_parallel);
	tcase_add_test(tc, ram_keys);
	tcase_add_test(tc, file_rw);
	tcase_add_test(tc, file_parallel);
	tcase_add_test(tc, file_direct);
	tcase_add_test(tc, file_modes);
	tcase_add_test(tc, file_errors);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
