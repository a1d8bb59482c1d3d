// SPDX-License-Identifier: GPL-2.0
/*
 * null_blk memory backing (memory_backed=1) and its volatile write cache
 * (cache_size=MiB), after copy_to_nullb, copy_from_nullb and
 * null_make_cache_space in Linux.
 *
 * The data lives in a sparse store.  With a cache, writes land in cache
 * pages instead: each is a full copy of one backing page, made when the page
 * is first written, and dirty until it is written back.  Reads look in the
 * cache first.  FLUSH writes every cache page back; so does running out of
 * cache space, oldest page first (Linux walks the radix tree round robin;
 * first in, first out is close enough).  FUA writes go to the backing store
 * and keep any cached copy coherent.  All cache work is done under
 * nullb->lock, as Linux does it under its spinlock.
 */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "null_blk.h"
#include "../../server/mq/log.h"

#define NULLB_PAGE_MASK ((uint64_t)NULLB_PAGE_SIZE - 1)

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Tree nodes are nullb_pages, keyed by their first member, idx. */
static int nullb_page_cmp(const void *a, const void *b)
{
	uint64_t ia = *(const uint64_t *)a;
	uint64_t ib = *(const uint64_t *)b;

	return (ia > ib) - (ia < ib);
}

int null_setup_storage(struct nullb_device *dev, struct media *m)
{
	dev->cache = NULL;
	TAILQ_INIT(&dev->cache_lru);
	dev->curr_cache = 0;
	dev->data = m;
	if (dev->memory_backed && !m)
		return ENOMEM;
	return 0;
}

static void null_free_page(void *page)
{
	free(page);
}

void null_free_device_storage(struct nullb_device *dev)
{
	if (dev->cache)
		tdestroy(dev->cache, null_free_page);
	dev->cache = NULL;
	TAILQ_INIT(&dev->cache_lru);
	dev->curr_cache = 0;
	media_close(dev->data);
	dev->data = NULL;
}

/* The bytes of page idx that lie inside the device. */
static uint32_t null_page_len(struct nullb_device *dev, uint64_t idx)
{
	uint64_t start = idx << NULLB_PAGE_SHIFT;

	return (uint32_t)min_u64(NULLB_PAGE_SIZE, dev->size - start);
}

static struct nullb_page *null_lookup_cache_page(struct nullb_device *dev,
						 uint64_t idx)
{
	void **slot;

	if (!dev->cache)
		return NULL;
	slot = tfind(&idx, &dev->cache, nullb_page_cmp);
	return slot ? *slot : NULL;
}

static void null_drop_cache_page(struct nullb_device *dev,
				 struct nullb_page *c_page)
{
	tdelete(c_page, &dev->cache, nullb_page_cmp);
	TAILQ_REMOVE(&dev->cache_lru, c_page, lru);
	dev->curr_cache -= NULLB_PAGE_SIZE;
	free(c_page);
}

static bool null_page_is_zero(const unsigned char *p, uint32_t len)
{
	return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

/* Write one cache page back into the backing store and forget it. */
static int null_flush_cache_page(struct nullb_device *dev,
				 struct nullb_page *c_page)
{
	uint64_t pos = c_page->idx << NULLB_PAGE_SHIFT;
	uint32_t len = null_page_len(dev, c_page->idx);

	/* Keep the store sparse: a page of zeroes is a hole. */
	int err;

	if (null_page_is_zero(c_page->data, len))
		err = media_write_zeroes(dev->data, len, pos, 0);
	else
		err = media_write(dev->data, c_page->data, len, pos);
	if (err)
		return err == ENOMEM ? ENOSPC : err;

	null_drop_cache_page(dev, c_page);
	return 0;
}

/* Write back the oldest pages until n more bytes fit in the cache. */
static int null_make_cache_space(struct nullb_device *dev, uint64_t n)
{
	uint64_t limit = dev->cache_size << 20;
	int err;

	while (dev->curr_cache + n > limit && !TAILQ_EMPTY(&dev->cache_lru)) {
		err = null_flush_cache_page(dev, TAILQ_FIRST(&dev->cache_lru));
		if (err)
			return err;
	}
	return 0;
}

static struct nullb_page *null_insert_cache_page(struct nullb_device *dev,
						 uint64_t idx)
{
	struct nullb_page *c_page;

	c_page = null_lookup_cache_page(dev, idx);
	if (c_page)
		return c_page;

	if (null_make_cache_space(dev, NULLB_PAGE_SIZE))
		return NULL;

	c_page = malloc(sizeof(*c_page));
	if (!c_page)
		return NULL;
	c_page->idx = idx;
	memset(c_page->data, 0, sizeof(c_page->data));
	if (media_read(dev->data, c_page->data, null_page_len(dev, idx),
		       idx << NULLB_PAGE_SHIFT)) {
		free(c_page);
		return NULL;
	}
	if (!tsearch(c_page, &dev->cache, nullb_page_cmp)) {
		free(c_page);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&dev->cache_lru, c_page, lru);
	dev->curr_cache += NULLB_PAGE_SIZE;
	return c_page;
}

/* Bytes from pos to the end of its cache page, at most n. */
static uint32_t null_page_chunk(uint64_t pos, uint64_t n)
{
	return (uint32_t)min_u64(n, NULLB_PAGE_SIZE - (pos & NULLB_PAGE_MASK));
}

static int copy_to_nullb(struct nullb *nullb, const unsigned char *source,
			 uint64_t pos, uint32_t n, bool is_fua)
{
	struct nullb_device *dev = &nullb->dev;
	struct nullb_page *c_page;
	uint32_t count = 0, temp;

	if (!null_cache_active(dev) || is_fua) {
		int err = media_write(dev->data, source, n, pos);

		if (err)
			return err == ENOMEM ? ENOSPC : err;
		if (!null_cache_active(dev) || !dev->curr_cache)
			return 0;
	}

	while (count < n) {
		temp = null_page_chunk(pos, n - count);
		if (is_fua)
			/* the store has it; keep a cached copy coherent */
			c_page = null_lookup_cache_page(
				dev, pos >> NULLB_PAGE_SHIFT);
		else
			c_page = null_insert_cache_page(
				dev, pos >> NULLB_PAGE_SHIFT);
		if (c_page)
			memcpy(c_page->data + (pos & NULLB_PAGE_MASK),
			       source + count, temp);
		else if (!is_fua)
			return ENOSPC;
		count += temp;
		pos += temp;
	}
	return 0;
}

static int copy_from_nullb(struct nullb *nullb, unsigned char *dest,
			   uint64_t pos, uint32_t n)
{
	struct nullb_device *dev = &nullb->dev;
	struct nullb_page *c_page;
	uint32_t count = 0, temp;
	int err;

	if (!null_cache_active(dev) || !dev->curr_cache)
		return media_read(dev->data, dest, n, pos);

	while (count < n) {
		temp = null_page_chunk(pos, n - count);
		c_page = null_lookup_cache_page(dev, pos >> NULLB_PAGE_SHIFT);
		if (c_page)
			memcpy(dest + count,
			       c_page->data + (pos & NULLB_PAGE_MASK), temp);
		else if ((err = media_read(dev->data, dest + count, temp, pos)))
			return err;
		count += temp;
		pos += temp;
	}
	return 0;
}

static void null_lock(struct nullb *nullb)
{
	if (null_cache_active(&nullb->dev))
		pthread_mutex_lock(&nullb->lock);
}

static void null_unlock(struct nullb *nullb)
{
	if (null_cache_active(&nullb->dev))
		pthread_mutex_unlock(&nullb->lock);
}

int null_handle_data_transfer(struct nullb_cmd *cmd)
{
	struct request *rq = mq_rq_from_pdu(cmd);
	struct nullb *nullb = cmd->nq->nullb;
	bool is_write = req_op(rq) == REQ_OP_WRITE;
	bool is_fua = rq->cmd_flags & REQ_FUA;
	struct bio *bio;
	int err = 0;

	null_lock(nullb);
	rq_for_each_bio (bio, rq) {
		uint64_t pos = bio->bi_sector << SECTOR_SHIFT;

		if (is_write)
			err = copy_to_nullb(nullb, bio->bi_buf, pos,
					    bio->bi_size, is_fua);
		else
			err = copy_from_nullb(nullb, bio->bi_buf, pos,
					      bio->bi_size);
		if (err)
			break;
	}
	null_unlock(nullb);
	return err;
}

/*
 * DISCARD and WRITE_ZEROES: the range reads as zeroes afterwards and its
 * memory is given back, in the store and in the cache.
 */
int null_handle_discard(struct nullb *nullb, uint64_t pos, uint64_t len)
{
	struct nullb_device *dev = &nullb->dev;
	struct nullb_page *c_page, *next;
	uint64_t end = pos + len;
	int err;

	if (!dev->data)
		return 0; /* no memory: nothing to forget */
	null_lock(nullb);
	err = media_write_zeroes(dev->data, len, pos, 0);
	for (c_page = TAILQ_FIRST(&dev->cache_lru); c_page; c_page = next) {
		uint64_t start = c_page->idx << NULLB_PAGE_SHIFT;
		uint64_t stop = start + NULLB_PAGE_SIZE;
		uint64_t from, to;

		next = TAILQ_NEXT(c_page, lru);
		if (stop <= pos || start >= end)
			continue;
		if (start >= pos && stop <= end) {
			null_drop_cache_page(dev, c_page);
			continue;
		}
		from = start > pos ? start : pos;
		to = stop < end ? stop : end;
		memset(c_page->data + (from - start), 0, to - from);
	}
	null_unlock(nullb);
	return err == ENOMEM ? ENOSPC : err;
}

int null_handle_flush(struct nullb *nullb)
{
	struct nullb_device *dev = &nullb->dev;
	int err = 0;

	if (!null_cache_active(dev))
		return 0;

	pthread_mutex_lock(&nullb->lock);
	while (!TAILQ_EMPTY(&dev->cache_lru)) {
		err = null_flush_cache_page(dev, TAILQ_FIRST(&dev->cache_lru));
		if (err)
			break;
	}
	/* A store with a cache of its own (a file) flushes it too. */
	if (!err && (dev->data->caps & MEDIA_CAN_FLUSH))
		err = media_flush(dev->data);
	pthread_mutex_unlock(&nullb->lock);
	return err;
}

/*
 * Extents with a cache: the store's holes are split around cached pages,
 * which count as data.  pages[] is sorted.
 */
struct null_extent_walk {
	extent_fn *fn;
	void *arg;
	const uint64_t *pages;
	size_t nr, pos;
};

static int null_extent_merge(void *opaque, uint64_t off, uint64_t len,
			     unsigned int type)
{
	struct null_extent_walk *w = opaque;
	uint64_t end = off + len;

	if (!(type & MQ_EXTENT_HOLE))
		return w->fn(w->arg, off, len, type);

	while (off < end) {
		uint64_t cstart, cend;

		while (w->pos < w->nr &&
		       (w->pages[w->pos] + 1) << NULLB_PAGE_SHIFT <= off)
			w->pos++;
		if (w->pos == w->nr ||
		    w->pages[w->pos] << NULLB_PAGE_SHIFT >= end)
			return w->fn(w->arg, off, end - off, type);

		cstart = w->pages[w->pos] << NULLB_PAGE_SHIFT;
		if (cstart > off) {
			if (w->fn(w->arg, off, cstart - off, type) < 0)
				return -1;
			off = cstart;
		}
		/* a run of consecutive cached pages is one data extent */
		while (w->pos + 1 < w->nr &&
		       w->pages[w->pos + 1] == w->pages[w->pos] + 1)
			w->pos++;
		cend = min_u64((w->pages[w->pos] + 1) << NULLB_PAGE_SHIFT, end);
		if (w->fn(w->arg, off, cend - off, 0) < 0)
			return -1;
		off = cend;
	}
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	return nullb_page_cmp(a, b);
}

int null_report_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
			extent_fn *fn, void *arg)
{
	struct nullb *nullb = disk->private_data;
	struct nullb_device *dev = &nullb->dev;
	struct null_extent_walk w = {.fn = fn, .arg = arg};
	struct nullb_page *c_page;
	uint64_t *pages = NULL;
	size_t nr = 0;
	int ret;

	if (!dev->memory_backed) {
		fn(arg, offset, length, MQ_EXTENT_HOLE | MQ_EXTENT_ZERO);
		return 0;
	}
	if (!null_cache_active(dev))
		return media_extents(dev->data, offset, length, fn, arg);

	pthread_mutex_lock(&nullb->lock);
	if (dev->curr_cache) {
		pages = malloc((dev->curr_cache >> NULLB_PAGE_SHIFT) *
			       sizeof(*pages));
		if (!pages) {
			pthread_mutex_unlock(&nullb->lock);
			return ENOMEM;
		}
		TAILQ_FOREACH (c_page, &dev->cache_lru, lru) {
			uint64_t start = c_page->idx << NULLB_PAGE_SHIFT;

			if (start < offset + length &&
			    start + NULLB_PAGE_SIZE > offset)
				pages[nr++] = c_page->idx;
		}
		qsort(pages, nr, sizeof(*pages), u64_cmp);
	}
	w.pages = pages;
	w.nr = nr;
	ret = media_extents(dev->data, offset, length, null_extent_merge, &w);
	pthread_mutex_unlock(&nullb->lock);
	free(pages);
	return ret;
}
