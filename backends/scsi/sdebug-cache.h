/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The LUN's volatile write cache (wce=1): a write without FUA lands in
 * the cache and is acknowledged; SYNCHRONIZE CACHE writes the dirty
 * extents back to the store; a FUA write goes through to the store.
 * Reads see the cache over the store.  The dirty data is a list of
 * extents (offset, length) over a sparse copy in memory, so that losing
 * the cache (a power cut) is dropping the list.  It holds up to
 * SDEBUG_CACHE_EXTENTS extents; a write that needs one more writes the
 * cache back first (a drive destaging when full).  Ours: scsi_debug
 * reports WCE but writes its RAM at once.
 */
#ifndef MQBLK_SDEBUG_CACHE_H
#define MQBLK_SDEBUG_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SDEBUG_CACHE_EXTENTS 256

struct media;
struct sparse_store;

struct sdebug_extent {
	uint64_t offset, len; /* bytes */
};

struct sdebug_cache {
	struct media *media;
	bool enabled; /* wce */
	pthread_mutex_t lock;
	bool lock_ready;
	struct sparse_store *data;   /* the cached bytes, sparse */
	struct sdebug_extent *dirty; /* SDEBUG_CACHE_EXTENTS, unordered */
	unsigned int nr_dirty;
	uint64_t dirty_bytes; /* sum of the extents (they may overlap) */
	void *bounce;	      /* write-back buffer */
	unsigned long writebacks;
};

/* 0 or an errno. */
int sdebug_cache_init(struct sdebug_cache *c, struct media *m, uint64_t size,
		      bool enabled);
void sdebug_cache_destroy(struct sdebug_cache *c);
int sdebug_cache_read(struct sdebug_cache *c, void *buf, uint32_t len,
		      uint64_t pos);
int sdebug_cache_write(struct sdebug_cache *c, const void *buf, uint32_t len,
		       uint64_t pos, bool fua);
/* UNMAP / WRITE SAME: the dirty data there is written back first. */
int sdebug_cache_zero(struct sdebug_cache *c, uint64_t len, uint64_t pos,
		      bool unmap);
/* SYNCHRONIZE CACHE: write every dirty extent back. */
int sdebug_cache_sync(struct sdebug_cache *c);
void sdebug_cache_stats(struct sdebug_cache *c, unsigned int *extents,
			uint64_t *bytes, unsigned long *writebacks);

#endif
