/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mtd-wear: the wear study of docs/devices.md.
 *
 *   mtd-wear [-w WARMUP] DEVICE NR_WRITES OUT [KEY=VALUE...]
 *
 * Makes DEVICE (mtdblock or ftl, time_scale=0 unless a key says
 * otherwise), writes NR_WRITES random 4 KiB blocks (uniform over the
 * export, seeded, so both devices see the same offsets), FLUSHes once,
 * and prints one line:
 *
 *   DEVICE writes N wall_s S mb_s R erase_counts "..."
 *   write_amplification W ops "..." modelled_s M modelled_mb_s T
 *
 * wall_s and mb_s are measured around the writes and the FLUSH; with
 * time_scale=1 they are the measured throughput.  ops, modelled_s and
 * modelled_mb_s count the chip's operations during those writes only:
 * modelled_s is what they would take at time_scale=1, reads x tR +
 * programs x tPROG + erases x tBERS (the SLC preset, or t_read_us,
 * t_prog_us and t_erase_us when given).  OUT gets "BLOCK ERASES" lines
 * for gnuplot.
 *
 * -w WARMUP (needs an image= key) first makes the device with
 * time_scale=0, writes the whole export once in order and then WARMUP
 * random 4 KiB blocks, FLUSHes and closes it; the measured device then
 * opens the same image, so a short timed run starts from a full,
 * steady-state chip (ftl's GC busy) rather than an empty one.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/device.h"

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

static int io(struct mq_ctx *ctx, enum req_op op, uint64_t sector, uint32_t len,
	      void *buf)
{
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			   false, 0};
	struct bio bio;

	bio_init(&bio, op, sector, len, buf);
	bio.bi_end_io = end_io;
	bio.bi_private = &w;
	bio.bi_submitter = 1;
	mq_submit_bio(ctx, &bio);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.status;
}

static const char *attr(struct gendisk *disk, const char *name, char *buf,
			size_t len)
{
	const struct disk_attr *a;

	for (a = disk->attrs; a && a->name; a++)
		if (!strcmp(a->name, name) && a->show(disk, buf, len) >= 0)
			return buf;
	return "?";
}

static uint64_t xorshift(uint64_t *rng)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return *rng;
}

static void read_ops(struct gendisk *disk, uint64_t *r, uint64_t *pr,
		     uint64_t *er)
{
	char ops[256];

	*r = *pr = *er = 0;
	attr(disk, "ops", ops, sizeof(ops));
	sscanf(ops, "reads %" SCNu64 " programs %" SCNu64 " erases %" SCNu64, r,
	       pr, er);
}

/*
 * The warm-up: DEVICE with the keys and time_scale=0, the whole export
 * written once in 128 KiB pieces, then nr random 4 KiB writes and a FLUSH.
 * Returns 0, or 1 after printing why.
 */
static int warm_up(int argc, char **argv, uint64_t nr, uint64_t *rng)
{
	struct mq_params *p = mq_params_new();
	struct mq_err e = {{0}};
	static char chunk[128 << 10];
	uint64_t i, sectors, s, len;
	struct mq_device *d;
	struct gendisk *disk;
	struct mq_ctx *ctx;
	int k;

	if (!p) {
		fprintf(stderr, "mtd-wear: out of memory\n");
		return 1;
	}
	if (mq_params_set(p, "device", argv[1], &e))
		goto fail;
	for (k = 4; k < argc; k++)
		if (mq_params_set_kv(p, argv[k], &e))
			goto fail;
	if (mq_params_set_kv(p, "time_scale=0", &e) ||
	    mq_device_create(p, 1, &d, &e))
		goto fail;
	disk = d->disks[0];
	ctx = mq_get_ctx(disk->queue, 0);
	sectors = get_capacity(disk);
	memset(chunk, 0x5A, sizeof(chunk));
	for (s = 0; s < sectors; s += len) {
		len = sectors - s < sizeof(chunk) / 512 ? sectors - s
							: sizeof(chunk) / 512;
		if (io(ctx, REQ_OP_WRITE, s, (uint32_t)len * 512, chunk)) {
			fprintf(stderr, "mtd-wear: warm-up fill failed\n");
			return 1;
		}
	}
	for (i = 0; i < nr; i++)
		if (io(ctx, REQ_OP_WRITE, (xorshift(rng) % (sectors / 8)) * 8,
		       4096, chunk)) {
			fprintf(stderr, "mtd-wear: warm-up write failed\n");
			return 1;
		}
	if (io(ctx, REQ_OP_FLUSH, 0, 0, NULL)) {
		fprintf(stderr, "mtd-wear: warm-up flush failed\n");
		return 1;
	}
	mq_device_destroy(d);
	mq_params_free(p);
	return 0;
fail:
	fprintf(stderr, "mtd-wear: warm-up: %s\n", e.msg);
	mq_params_free(p);
	return 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct mq_params *p = mq_params_new();
	double tr = 25, tprog = 200, terase = 2000, t0, wall;
	uint64_t nr, i, rng = 0x9E3779B97F4A7C15ull, blocks, warmup = 0;
	uint64_t reads = 0, programs = 0, erases = 0, r0, p0, e0;
	static char big[1 << 16];
	char buf[4096], sum[256], wa[64], ops[256];
	struct mq_device *d;
	struct gendisk *disk;
	struct mq_ctx *ctx;
	struct mq_err e = {{0}};
	FILE *out;
	char *c;
	int k;

	if (argc > 2 && !strcmp(argv[1], "-w")) {
		warmup = strtoull(argv[2], NULL, 10);
		argv[2] = argv[0];
		argv += 2;
		argc -= 2;
	}
	if (argc < 4 || !p) {
		fprintf(stderr, "usage: mtd-wear [-w WARMUP] DEVICE NR_WRITES "
				"OUT [KEY=VALUE...]\n");
		return 2;
	}
	nr = strtoull(argv[2], NULL, 10);
	if (warmup) {
		for (k = 4; k < argc && strncmp(argv[k], "image=", 6); k++)
			;
		if (k == argc) {
			fprintf(stderr, "mtd-wear: -w needs an image= key\n");
			return 2;
		}
		if (warm_up(argc, argv, warmup, &rng))
			return 1;
	}
	if (mq_params_set(p, "device", argv[1], &e) ||
	    mq_params_set_kv(p, "time_scale=0", &e))
		goto fail;
	for (k = 4; k < argc; k++) {
		if (mq_params_set_kv(p, argv[k], &e))
			goto fail;
		if (!strncmp(argv[k], "t_read_us=", 10))
			tr = atof(argv[k] + 10);
		if (!strncmp(argv[k], "t_prog_us=", 10))
			tprog = atof(argv[k] + 10);
		if (!strncmp(argv[k], "t_erase_us=", 11))
			terase = atof(argv[k] + 11);
	}
	if (mq_device_create(p, 1, &d, &e))
		goto fail;
	disk = d->disks[0];
	ctx = mq_get_ctx(disk->queue, 0);
	blocks = get_capacity(disk) / 8;
	memset(buf, 0xA5, sizeof(buf));

	read_ops(disk, &r0, &p0, &e0);
	t0 = now_s();
	for (i = 0; i < nr; i++) {
		memcpy(buf, &i, sizeof(i));
		if (io(ctx, REQ_OP_WRITE, (xorshift(&rng) % blocks) * 8, 4096,
		       buf)) {
			fprintf(stderr, "mtd-wear: write %" PRIu64 " failed\n",
				i);
			return 1;
		}
	}
	if (io(ctx, REQ_OP_FLUSH, 0, 0, NULL)) {
		fprintf(stderr, "mtd-wear: flush failed\n");
		return 1;
	}
	wall = now_s() - t0;

	attr(disk, "erase_counts", sum, sizeof(sum));
	attr(disk, "write_amplification", wa, sizeof(wa));
	read_ops(disk, &reads, &programs, &erases);
	reads -= r0;
	programs -= p0;
	erases -= e0;
	snprintf(ops, sizeof(ops),
		 "reads %" PRIu64 " programs %" PRIu64 " erases %" PRIu64,
		 reads, programs, erases);
	{
		double ms = ((double)reads * tr + (double)programs * tprog +
			     (double)erases * terase) /
			    1e6;

		printf("%s writes %" PRIu64 " wall_s %.1f mb_s %.3f "
		       "erase_counts \"%s\" write_amplification %s ops \"%s\" "
		       "modelled_s %.1f modelled_mb_s %.3f\n",
		       argv[1], nr, wall, (double)nr * 4096 / 1e6 / wall, sum,
		       wa, ops, ms, (double)nr * 4096 / 1e6 / ms);
	}
	out = fopen(argv[3], "w");
	if (!out) {
		perror(argv[3]);
		return 1;
	}
	attr(disk, "erase_count_list", big, sizeof(big));
	for (c = strtok(big, " "), k = 0; c; c = strtok(NULL, " "), k++)
		fprintf(out, "%d %s\n", k, c);
	fclose(out);
	mq_device_destroy(d);
	mq_params_free(p);
	return 0;
fail:
	fprintf(stderr, "mtd-wear: %s\n", e.msg);
	return 1;
}
