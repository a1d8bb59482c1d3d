// SPDX-License-Identifier: GPL-2.0
/*
 * The device layer's byte-granular I/O (backends/bdev.h): misaligned
 * reads, writes, zeroes and discards against a reference copy, and
 * misaligned writes sharing blocks from several threads at once, on
 * devices that complete inline (ram) and from their own threads (null
 * irqmode=1).
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/bdev.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"

#define KiB 1024u
#define MiB (1024u * KiB)

/* One request, driven as a front end drives it: wait, continue. */
struct sync_io {
	struct mq_bdev_io io;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stage_done;
	unsigned int stages;
};

static void sync_end_io(struct mq_bdev_io *io)
{
	struct sync_io *s = io->private;

	pthread_mutex_lock(&s->lock);
	s->stage_done = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static int do_io(struct gendisk *disk, unsigned int cpu, enum req_op op,
		 uint64_t off, uint32_t count, void *buf, unsigned int *stages)
{
	struct mq_ctx *ctx = mq_get_ctx(disk->queue, cpu);
	struct sync_io s = {
		.io = {.op = op,
		       .offset = off,
		       .count = count,
		       .buf = buf,
		       .submitter = cpu + 1,
		       .end_io = sync_end_io,
		       .private = &s},
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};

	mq_bdev_io_submit(disk, ctx, &s.io);
	for (;;) {
		pthread_mutex_lock(&s.lock);
		while (!s.stage_done)
			pthread_cond_wait(&s.cond, &s.lock);
		s.stage_done = false;
		s.stages++;
		pthread_mutex_unlock(&s.lock);
		if (mq_bdev_io_continue(ctx, &s.io))
			break;
	}
	if (stages)
		*stages = s.stages;
	return s.io.status;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 9)) ^ seed);
}

/* kv1 and kv2 may be NULL. */
static struct mq_device *make(const char *device, const char *bs,
			      const char *kv1, const char *kv2)
{
	struct mq_device *dev;
	struct mq_err e;

	ck_assert_msg(tdevice_create(&dev, &e, device, "size=16M", bs, kv1, kv2,
				     NULL) == 0,
		      "%s", e.msg);
	return dev;
}

/* The whole disk must equal ref. */
static void check_disk(struct gendisk *disk, const uint8_t *ref, size_t size)
{
	uint8_t *got = malloc(size);
	size_t i;

	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(
		do_io(disk, 0, REQ_OP_READ, 0, (uint32_t)size, got, NULL), 0);
	for (i = 0; i < size && got[i] == ref[i]; i++)
		;
	ck_assert_msg(i == size, "byte %zu: %u, expected %u", i, got[i],
		      ref[i]);
	free(got);
}

static void unaligned_on(const char *device, const char *bs_kv, const char *kv1,
			 const char *kv2)
{
	struct mq_device *dev = make(device, bs_kv, kv1, kv2);
	struct gendisk *disk = dev->disks[0];
	uint32_t bs = disk->queue->limits.logical_block_size;
	size_t size = 4 * MiB;
	uint8_t *ref = calloc(1, size), *buf = malloc(2 * MiB);
	static const struct {
		uint64_t off;
		uint32_t len;
	} cases[] = {
		{1, 100},	  {0, MiB + 14}, {1, MiB + 14}, {4095, 2},
		{4096, 1},	  {7, 4096},	 {8191, 8194},	{12288, 4096},
		{3 * MiB - 3, 7}, {511, 1},	 {2047, 3},
	};
	unsigned int i, stages;

	ck_assert_ptr_nonnull(ref);
	ck_assert_ptr_nonnull(buf);
	/* Known contents first, so a neighbour that changes shows. */
	fill(ref, size, 1);
	ck_assert_int_eq(
		do_io(disk, 0, REQ_OP_WRITE, 0, (uint32_t)size, ref, &stages),
		0);
	ck_assert_uint_eq(stages, 1); /* aligned: one stage */

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t off = cases[i].off;
		uint32_t len = cases[i].len;

		fill(buf, len, 10 + i);
		ck_assert_int_eq(do_io(disk, i % 4, REQ_OP_WRITE, off, len, buf,
				       &stages),
				 0);
		memcpy(ref + off, buf, len);
		if ((off | len) % bs)
			ck_assert_uint_eq(stages, 2); /* read, then write */
		memset(buf, 0, len);
		ck_assert_int_eq(
			do_io(disk, 1, REQ_OP_READ, off, len, buf, NULL), 0);
		ck_assert_msg(memcmp(buf, ref + off, len) == 0,
			      "case %u: read back differs", i);
	}
	check_disk(disk, ref, size);

	/* Zeroes: exactly the bytes asked for. */
	ck_assert_int_eq(
		do_io(disk, 2, REQ_OP_WRITE_ZEROES, 5, 3 * bs, NULL, NULL), 0);
	memset(ref + 5, 0, 3 * bs);
	check_disk(disk, ref, size);

	/* A discard inside one block changes nothing at all. */
	if (disk->queue->limits.max_discard_sectors) {
		ck_assert_int_eq(do_io(disk, 0, REQ_OP_DISCARD, bs + 1, bs - 2,
				       NULL, &stages),
				 0);
		check_disk(disk, ref, size);
	}
	free(buf);
	free(ref);
	mq_device_destroy(dev);
}

START_TEST(unaligned_ram_4096)
{
	unaligned_on("ram", "bs=4096", NULL, NULL);
}
END_TEST

START_TEST(unaligned_null_2048_threaded)
{
	unaligned_on("null", "bs=2048", "memory_backed=1", "irqmode=1");
}
END_TEST

/* The Memory Stick has no WRITE_ZEROES: zeroes are written. */
START_TEST(unaligned_mspro_512_no_write_zeroes)
{
	unaligned_on("mspro", "page_size=512", NULL, NULL);
}
END_TEST

/* ---- writers sharing blocks ---- */

#define NR_WRITERS 4
#define PIECE	   37
#define ROUNDS	   300

struct writer {
	struct gendisk *disk;
	unsigned int id;
	uint64_t base;
	int errors;
};

/* Writer w owns pieces w, w + NR_WRITERS, ...: no byte is shared. */
static uint64_t piece_off(const struct writer *w, unsigned int k)
{
	return w->base + (uint64_t)(k * NR_WRITERS + w->id) * PIECE;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t buf[PIECE];
	unsigned int k;

	for (k = 0; k < ROUNDS; k++) {
		memset(buf, (int)(1 + (w->id * ROUNDS + k) % 251), PIECE);
		if (do_io(w->disk, w->id, REQ_OP_WRITE, piece_off(w, k), PIECE,
			  buf, NULL))
			w->errors++;
	}
	return NULL;
}

static void writers_on(const char *device, const char *kv1, const char *kv2)
{
	struct mq_device *dev = make(device, "bs=4096", kv1, kv2);
	struct gendisk *disk = dev->disks[0];
	struct writer w[NR_WRITERS];
	pthread_t t[NR_WRITERS];
	size_t span = (size_t)ROUNDS * NR_WRITERS * PIECE;
	uint8_t *got = malloc(span);
	unsigned int i, k;

	ck_assert_ptr_nonnull(got);
	for (i = 0; i < NR_WRITERS; i++) {
		w[i] = (struct writer){.disk = disk, .id = i, .base = 4096 + 3};
		ck_assert_int_eq(
			pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
	}
	for (i = 0; i < NR_WRITERS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(w[i].errors, 0);
	}
	ck_assert_int_eq(do_io(disk, 0, REQ_OP_READ, 4096 + 3, (uint32_t)span,
			       got, NULL),
			 0);
	for (i = 0; i < NR_WRITERS; i++)
		for (k = 0; k < ROUNDS; k++) {
			uint8_t want = (uint8_t)(1 + (i * ROUNDS + k) % 251);
			size_t at = piece_off(&w[i], k) - (4096 + 3), j;

			for (j = 0; j < PIECE; j++)
				ck_assert_msg(got[at + j] == want,
					      "writer %u piece %u byte %zu: "
					      "%u, expected %u",
					      i, k, j, got[at + j], want);
		}
	free(got);
	mq_device_destroy(dev);
}

START_TEST(writers_sharing_blocks_null_threaded)
{
	writers_on("null", "memory_backed=1", "irqmode=1");
}
END_TEST

START_TEST(writers_sharing_blocks_ram)
{
	writers_on("ram", NULL, NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bdev");
	TCase *tc = tcase_create("bdev");

	tcase_add_test(tc, unaligned_ram_4096);
	tcase_add_test(tc, unaligned_null_2048_threaded);
	tcase_add_test(tc, unaligned_mspro_512_no_write_zeroes);
	tcase_add_test(tc, writers_sharing_blocks_null_threaded);
	tcase_add_test(tc, writers_sharing_blocks_ram);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
