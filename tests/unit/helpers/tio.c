// SPDX-License-Identifier: GPL-2.0
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tio.h"

struct tio_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void tio_end_io(struct bio *bio)
{
	struct tio_wait *w = bio->bi_private;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int tio_io(struct mq_queue *q, unsigned int cpu, enum req_op op,
	   unsigned int flags, uint64_t sector, uint32_t len, void *buf)
{
	struct tio_wait w = {PTHREAD_MUTEX_INITIALIZER,
			     PTHREAD_COND_INITIALIZER, false};
	struct bio bio;

	bio_init(&bio, op, sector, len, buf);
	bio.bi_flags = flags;
	bio.bi_submitter = cpu + 1;
	bio.bi_end_io = tio_end_io;
	bio.bi_private = &w;
	mq_submit_bio(mq_get_ctx(q, cpu), &bio);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return bio.bi_status;
}

void tio_fill(void *buf, size_t len, unsigned int seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 9) + 1) | 1;
}

bool tio_all_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

void tio_round_trip(struct mq_queue *q, unsigned int cpu, uint64_t sector,
		    uint32_t len, unsigned int seed)
{
	unsigned char *w = malloc(len), *r = malloc(len);

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(r);
	tio_fill(w, len, seed);
	memset(r, 0xaa, len);
	ck_assert_int_eq(tio_io(q, cpu, REQ_OP_WRITE, 0, sector, len, w), 0);
	ck_assert_int_eq(tio_io(q, cpu, REQ_OP_READ, 0, sector, len, r), 0);
	ck_assert_msg(memcmp(w, r, len) == 0,
		      "sector %llu, %u bytes: read differs from written",
		      (unsigned long long)sector, len);
	free(w);
	free(r);
}
