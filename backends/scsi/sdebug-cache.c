// SPDX-License-Identifier: GPL-2.0
/* The LUN's volatile write cache: see sdebug-cache.h. */
#include <errno.h>
#include <stdlib.h>

#include "sdebug-cache.h"
#include "../common/sparse.h"
#include "../media/media.h"

#define SDEBUG_BOUNCE (1u << 20)

int sdebug_cache_init(struct sdebug_cache *c, struct media *m, uint64_t size,
		      bool enabled)
{
	c->media = m;
	c->enabled = enabled;
	if (!enabled)
		return 0;
	if (pthread_mutex_init(&c->lock, NULL))
		return ENOMEM;
	c->lock_ready = true;
	c->data = sparse_store_new(size);
	c->dirty = calloc(SDEBUG_CACHE_EXTENTS, sizeof(*c->dirty));
	c->bounce = malloc(SDEBUG_BOUNCE);
	if (!c->data || !c->dirty || !c->bounce)
		return ENOMEM;
	return 0;
}

void sdebug_cache_destroy(struct sdebug_cache *c)
{
	if (c->data)
		sparse_store_free(c->data);
	free(c->dirty);
	free(c->bounce);
	if (c->lock_ready)
		pthread_mutex_destroy(&c->lock);
	c->data = NULL;
	c->dirty = NULL;
	c->bounce = NULL;
	c->lock_ready = false;
}

static bool overlaps(const struct sdebug_extent *x, uint64_t pos, uint64_t len)
{
	return x->offset < pos + len && pos < x->offset + x->len;
}

/* Write every dirty extent back to the store; under c->lock. */
static int sdebug_cache_writeback(struct sdebug_cache *c)
{
	unsigned int i;
	int err;

	for (i = 0; i < c->nr_dirty; i++) {
		struct sdebug_extent *x = &c->dirty[i];
		uint64_t done = 0;

		while (done < x->len) {
			uint32_t n = x->len - done < SDEBUG_BOUNCE
					     ? (uint32_t)(x->len - done)
					     : SDEBUG_BOUNCE;

			sparse_store_read(c->data, c->bounce, n,
					  x->offset + done);
			err = media_write(c->media, c->bounce, n,
					  x->offset + done);
			if (err)
				return err; /* the rest stays dirty */
			done += n;
		}
	}
	for (i = 0; i < c->nr_dirty; i++)
		sparse_store_zero(c->data, c->dirty[i].len, c->dirty[i].offset);
	if (c->nr_dirty)
		c->writebacks++;
	c->nr_dirty = 0;
	c->dirty_bytes = 0;
	return 0;
}

int sdebug_cache_read(struct sdebug_cache *c, void *buf, uint32_t len,
		      uint64_t pos)
{
	unsigned int i;
	int err;

	if (!c->enabled)
		return media_read(c->media, buf, len, pos);
	pthread_mutex_lock(&c->lock);
	err = media_read(c->media, buf, len, pos);
	/* the cached bytes over the store's, extent by extent */
	for (i = 0; !err && i < c->nr_dirty; i++) {
		const struct sdebug_extent *x = &c->dirty[i];
		uint64_t from, to;

		if (!overlaps(x, pos, len))
			continue;
		from = x->offset > pos ? x->offset : pos;
		to = x->offset + x->len < pos + len ? x->offset + x->len
						    : pos + len;
		sparse_store_read(c->data, (char *)buf + (from - pos),
				  (uint32_t)(to - from), from);
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

int sdebug_cache_write(struct sdebug_cache *c, const void *buf, uint32_t len,
		       uint64_t pos, bool fua)
{
	struct sdebug_extent *last;
	unsigned int i;
	int err = 0;

	if (!c->enabled)
		return media_write(c->media, buf, len, pos);
	pthread_mutex_lock(&c->lock);
	if (fua) {
		/* through to the store; the cached copy is kept in step */
		err = media_write(c->media, buf, len, pos);
		for (i = 0; !err && i < c->nr_dirty; i++)
			if (overlaps(&c->dirty[i], pos, len)) {
				err = sparse_store_write(c->data, buf, len,
							 pos);
				break;
			}
		goto out;
	}
	last = c->nr_dirty ? &c->dirty[c->nr_dirty - 1] : NULL;
	/* a write right after the last one (sequential) extends it */
	if (!(last && last->offset + last->len == pos) &&
	    c->nr_dirty == SDEBUG_CACHE_EXTENTS) {
		err = sdebug_cache_writeback(c);
		if (err)
			goto out;
		last = NULL;
	}
	err = sparse_store_write(c->data, buf, len, pos);
	if (err)
		goto out;
	if (last && last->offset + last->len == pos)
		last->len += len;
	else
		c->dirty[c->nr_dirty++] = (struct sdebug_extent){pos, len};
	c->dirty_bytes += len;
out:
	pthread_mutex_unlock(&c->lock);
	return err;
}

int sdebug_cache_zero(struct sdebug_cache *c, uint64_t len, uint64_t pos,
		      bool unmap)
{
	unsigned int flags = unmap ? 0 : MEDIA_IO_NOUNMAP;
	unsigned int i;
	int err = 0;

	if (!c->enabled)
		return media_write_zeroes(c->media, len, pos, flags);
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->nr_dirty; i++)
		if (overlaps(&c->dirty[i], pos, len)) {
			err = sdebug_cache_writeback(c);
			break;
		}
	if (!err)
		err = media_write_zeroes(c->media, len, pos, flags);
	pthread_mutex_unlock(&c->lock);
	return err;
}

int sdebug_cache_sync(struct sdebug_cache *c)
{
	int err;

	if (!c->enabled)
		return 0;
	pthread_mutex_lock(&c->lock);
	err = sdebug_cache_writeback(c);
	pthread_mutex_unlock(&c->lock);
	return err;
}

void sdebug_cache_stats(struct sdebug_cache *c, unsigned int *extents,
			uint64_t *bytes, unsigned long *writebacks)
{
	*extents = 0;
	*bytes = 0;
	*writebacks = 0;
	if (!c->enabled)
		return;
	pthread_mutex_lock(&c->lock);
	*extents = c->nr_dirty;
	*bytes = c->dirty_bytes;
	*writebacks = c->writebacks;
	pthread_mutex_unlock(&c->lock);
}
