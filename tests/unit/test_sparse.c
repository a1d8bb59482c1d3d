// SPDX-License-Identifier: GPL-2.0
/* The sparse store: data, zeroing, extents and what it allocates. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/sparse.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tio.h"

#define PG  32768u /* the store's page size */
#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define TiB (1024ull * GiB)
#define EiB (1024ull * 1024 * TiB)
#define HZ  (MQ_EXTENT_HOLE | MQ_EXTENT_ZERO)

struct ext {
	uint64_t off, len;
	unsigned int type;
};

struct ext_list {
	struct ext e[64];
	unsigned int n;
	unsigned int stop_after; /* 0: never stop */
};

static int collect(void *arg, uint64_t off, uint64_t len, unsigned int type)
{
	struct ext_list *l = arg;

	ck_assert_uint_lt(l->n, 64);
	l->e[l->n++] = (struct ext){off, len, type};
	return l->stop_after && l->n >= l->stop_after ? -1 : 0;
}

static void expect_ext(const struct ext_list *l, unsigned int i, uint64_t off,
		       uint64_t len, unsigned int type)
{
	ck_assert_uint_gt(l->n, i);
	ck_assert_uint_eq(l->e[i].off, off);
	ck_assert_uint_eq(l->e[i].len, len);
	ck_assert_uint_eq(l->e[i].type, type);
}

START_TEST(read_back)
{
	struct sparse_store *s = sparse_store_new(8 * MiB);
	unsigned char *in = malloc(200000), *out = malloc(200000);

	ck_assert_ptr_nonnull(s);
	tio_fill(in, 200000, 1);
	/* Unwritten bytes read as zero. */
	memset(out, 0xff, 200000);
	sparse_store_read(s, out, 200000, 12345);
	ck_assert(tio_all_zero(out, 200000));
	ck_assert_uint_eq(sparse_store_allocated(s), 0);

	/* Across several page boundaries, at an odd offset. */
	ck_assert_int_eq(sparse_store_write(s, in, 200000, 3 * PG - 77), 0);
	sparse_store_read(s, out, 200000, 3 * PG - 77);
	ck_assert_mem_eq(in, out, 200000);
	/* Pages 2..9 are touched. */
	ck_assert_uint_eq(sparse_store_allocated(s), 8 * PG);

	/* The bytes around it are still zero. */
	sparse_store_read(s, out, 100, 3 * PG - 177);
	ck_assert(tio_all_zero(out, 100));
	sparse_store_read(s, out, 100, 3 * PG - 77 + 200000);
	ck_assert(tio_all_zero(out, 100));

	/* The last byte of the store. */
	ck_assert_int_eq(sparse_store_write(s, in, 1, 8 * MiB - 1), 0);
	sparse_store_read(s, out, 1, 8 * MiB - 1);
	ck_assert_uint_eq(out[0], in[0]);
	/* Past the end is refused. */
	ck_assert_int_eq(sparse_store_write(s, in, 2, 8 * MiB - 1), EINVAL);

	sparse_store_free(s);
	free(in);
	free(out);
}
END_TEST

START_TEST(zero_writes_stay_holes)
{
	struct sparse_store *s = sparse_store_new(1 * MiB);
	unsigned char *zero = calloc(1, 2 * PG);
	unsigned char out[16];

	ck_assert_int_eq(sparse_store_write(s, zero, 2 * PG, PG), 0);
	ck_assert_uint_eq(sparse_store_allocated(s), 0);
	/* A zero write into an allocated page does overwrite it. */
	memset(out, 0xab, sizeof(out));
	ck_assert_int_eq(sparse_store_write(s, out, 16, 100), 0);
	ck_assert_uint_eq(sparse_store_allocated(s), PG);
	ck_assert_int_eq(sparse_store_write(s, zero, 16, 100), 0);
	sparse_store_read(s, out, 16, 100);
	ck_assert(tio_all_zero(out, 16));
	sparse_store_free(s);
	free(zero);
}
END_TEST

START_TEST(zero_frees_pages)
{
	struct sparse_store *s = sparse_store_new(64 * MiB);
	size_t len = 10 * PG;
	unsigned char *in = malloc(len), *out = malloc(len);

	tio_fill(in, len, 2);
	ck_assert_int_eq(sparse_store_write(s, in, len, 0), 0);
	ck_assert_uint_eq(sparse_store_allocated(s), 10 * PG);

	/* Pages 2..4 wholly, plus parts of 1 and 5: 3 pages go. */
	sparse_store_zero(s, 4 * PG, PG + 10);
	ck_assert_uint_eq(sparse_store_allocated(s), 7 * PG);
	sparse_store_read(s, out, len, 0);
	ck_assert_mem_eq(out, in, PG + 10);
	ck_assert(tio_all_zero(out + PG + 10, 4 * PG));
	ck_assert_mem_eq(out + 5 * PG + 10, in + 5 * PG + 10,
			 len - 5 * PG - 10);

	/* Zeroing the rest of a partial page frees it. */
	sparse_store_zero(s, 10, PG);
	ck_assert_uint_eq(sparse_store_allocated(s), 6 * PG);
	/* Inside one page: only zeroed, the page stays. */
	sparse_store_zero(s, 100, 7 * PG + 50);
	ck_assert_uint_eq(sparse_store_allocated(s), 6 * PG);
	sparse_store_read(s, out, 200, 7 * PG);
	ck_assert_mem_eq(out, in + 7 * PG, 50);
	ck_assert(tio_all_zero(out + 50, 100));
	ck_assert_mem_eq(out + 150, in + 7 * PG + 150, 50);

	/* Everything, and past the end: all pages go. */
	sparse_store_zero(s, 128 * MiB, 0);
	ck_assert_uint_eq(sparse_store_allocated(s), 0);
	sparse_store_read(s, out, len, 0);
	ck_assert(tio_all_zero(out, len));
	sparse_store_free(s);
	free(in);
	free(out);
}
END_TEST

START_TEST(extents)
{
	struct sparse_store *s = sparse_store_new(1 * MiB);
	unsigned char buf[4096];
	struct ext_list l = {.n = 0};

	tio_fill(buf, sizeof(buf), 3);
	/* Nothing written: one hole, clipped to the store. */
	sparse_store_extents(s, 0, 2 * MiB, collect, &l);
	ck_assert_uint_eq(l.n, 1);
	expect_ext(&l, 0, 0, 1 * MiB, HZ);

	/* Pages 2 and 3 (adjacent: one extent), and page 31 (the last). */
	sparse_store_write(s, buf, sizeof(buf), 2 * PG + 100);
	sparse_store_write(s, buf, sizeof(buf), 3 * PG);
	sparse_store_write(s, buf, 1, 1 * MiB - 1);
	l.n = 0;
	sparse_store_extents(s, 0, 1 * MiB, collect, &l);
	ck_assert_uint_eq(l.n, 4);
	expect_ext(&l, 0, 0, 2 * PG, HZ);
	expect_ext(&l, 1, 2 * PG, 2 * PG, 0);
	expect_ext(&l, 2, 4 * PG, 27 * PG, HZ);
	expect_ext(&l, 3, 31 * PG, PG, 0);

	/* Clipped at both ends, to unaligned offsets. */
	l.n = 0;
	sparse_store_extents(s, 2 * PG + 5, 3 * PG, collect, &l);
	ck_assert_uint_eq(l.n, 2);
	expect_ext(&l, 0, 2 * PG + 5, 2 * PG - 5, 0);
	expect_ext(&l, 1, 4 * PG, PG + 5, HZ);

	/* The callback can stop the walk. */
	l.n = 0;
	l.stop_after = 2;
	sparse_store_extents(s, 0, 1 * MiB, collect, &l);
	ck_assert_uint_eq(l.n, 2);

	/* After a trim the hole is back and merged with its neighbours. */
	l.n = 0;
	l.stop_after = 0;
	sparse_store_zero(s, 2 * PG, 2 * PG);
	sparse_store_extents(s, 0, 1 * MiB, collect, &l);
	ck_assert_uint_eq(l.n, 2);
	expect_ext(&l, 0, 0, 31 * PG, HZ);
	expect_ext(&l, 1, 31 * PG, PG, 0);
	sparse_store_free(s);
}
END_TEST

/* A huge store allocates only what is written, directories included. */
START_TEST(huge_store)
{
	static const uint64_t where[] = {0, 512 * GiB + 4096, TiB - 4096};
	struct sparse_store *s = sparse_store_new(TiB);
	unsigned char in[4096], out[4096];
	struct ext_list l = {.n = 0};
	size_t i;

	ck_assert_ptr_nonnull(s);
	for (i = 0; i < 3; i++) {
		tio_fill(in, sizeof(in), i + 10);
		ck_assert_int_eq(sparse_store_write(s, in, 4096, where[i]), 0);
	}
	ck_assert_uint_eq(sparse_store_allocated(s), 3 * PG);
	for (i = 0; i < 3; i++) {
		tio_fill(in, sizeof(in), i + 10);
		sparse_store_read(s, out, 4096, where[i]);
		ck_assert_mem_eq(in, out, 4096);
	}

	sparse_store_extents(s, 0, TiB, collect, &l);
	ck_assert_uint_eq(l.n, 5);
	expect_ext(&l, 0, 0, PG, 0);
	expect_ext(&l, 1, PG, 512 * GiB - PG, HZ);
	expect_ext(&l, 2, 512 * GiB, PG, 0);
	expect_ext(&l, 3, 512 * GiB + PG, 512 * GiB - 2 * PG, HZ);
	expect_ext(&l, 4, TiB - PG, PG, 0);

	/* Trimming the whole store is quick and frees everything. */
	sparse_store_zero(s, TiB, 0);
	ck_assert_uint_eq(sparse_store_allocated(s), 0);
	l.n = 0;
	sparse_store_extents(s, 0, TiB, collect, &l);
	ck_assert_uint_eq(l.n, 1);
	expect_ext(&l, 0, 0, TiB, HZ);
	sparse_store_free(s);

	/* 8 EiB, written at both ends. */
	s = sparse_store_new(8 * EiB);
	ck_assert_ptr_nonnull(s);
	tio_fill(in, sizeof(in), 7);
	ck_assert_int_eq(sparse_store_write(s, in, 4096, 8 * EiB - 4096), 0);
	ck_assert_int_eq(sparse_store_write(s, in, 4096, 0), 0);
	sparse_store_read(s, out, 4096, 8 * EiB - 4096);
	ck_assert_mem_eq(in, out, 4096);
	ck_assert_uint_eq(sparse_store_allocated(s), 2 * PG);
	l.n = 0;
	sparse_store_extents(s, 0, 8 * EiB, collect, &l);
	ck_assert_uint_eq(l.n, 3);
	expect_ext(&l, 2, 8 * EiB - PG, PG, 0);
	sparse_store_free(s);
}
END_TEST

/* A size that is not a whole number of pages. */
START_TEST(odd_size)
{
	struct sparse_store *s = sparse_store_new(100000);
	unsigned char in[1000], out[1000];
	struct ext_list l = {.n = 0};

	tio_fill(in, sizeof(in), 5);
	ck_assert_int_eq(sparse_store_write(s, in, 1000, 99000), 0);
	sparse_store_read(s, out, 1000, 99000);
	ck_assert_mem_eq(in, out, 1000);
	sparse_store_extents(s, 0, 100000, collect, &l);
	ck_assert_uint_eq(l.n, 2);
	expect_ext(&l, 0, 0, 3 * PG, HZ);
	expect_ext(&l, 1, 3 * PG, 100000 - 3 * PG, 0);
	sparse_store_free(s);
}
END_TEST

struct writer {
	struct sparse_store *s;
	unsigned int id;
};

#define NR_WRITERS 4
#define NR_BLOCKS  512

/* Each writer owns every NR_WRITERS-th 4 KiB block: they share pages. */
static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	unsigned char buf[4096];
	unsigned int i;

	for (i = w->id; i < NR_BLOCKS; i += NR_WRITERS) {
		tio_fill(buf, sizeof(buf), i);
		if (sparse_store_write(w->s, buf, 4096, i * 4096ull))
			return (void *)1;
	}
	return NULL;
}

START_TEST(parallel_writers)
{
	struct sparse_store *s = sparse_store_new(GiB);
	struct writer w[NR_WRITERS];
	pthread_t th[NR_WRITERS];
	unsigned char in[4096], out[4096];
	unsigned int i;
	void *ret;

	for (i = 0; i < NR_WRITERS; i++) {
		w[i] = (struct writer){s, i};
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_fn, &w[i]),
				 0);
	}
	for (i = 0; i < NR_WRITERS; i++) {
		pthread_join(th[i], &ret);
		ck_assert_ptr_null(ret);
	}
	for (i = 0; i < NR_BLOCKS; i++) {
		tio_fill(in, sizeof(in), i);
		sparse_store_read(s, out, 4096, i * 4096ull);
		ck_assert_mem_eq(in, out, 4096);
	}
	/* No page was allocated twice. */
	ck_assert_uint_eq(sparse_store_allocated(s), NR_BLOCKS * 4096ull);
	sparse_store_free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sparse");
	TCase *tc = tcase_create("sparse");

	tcase_add_test(tc, read_back);
	tcase_add_test(tc, zero_writes_stay_holes);
	tcase_add_test(tc, zero_frees_pages);
	tcase_add_test(tc, extents);
	tcase_add_test(tc, huge_store);
	tcase_add_test(tc, odd_size);
	tcase_add_test(tc, parallel_writers);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
