// SPDX-License-Identifier: GPL-2.0
/*
 * A sparse byte store: 32 KiB pages under a radix directory, like a page
 * table.  The depth is chosen from the store's size (two levels for 1 GiB,
 * four for 8 EiB) and directories below the root are allocated on first
 * write, so memory follows the data written.
 *
 * Locking: reads and writes take the rwlock shared, so they run in
 * parallel.  A write that finds a page or directory missing installs a new
 * one with compare-and-swap, so concurrent writers need no exclusive lock;
 * as on a real disk, overlapping concurrent I/O has no defined result.
 * Only zeroing, which frees pages, takes the lock exclusively.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sparse.h"

#define PAGE_SHIFT 15
#define PAGE_SIZE  (UINT64_C(1) << PAGE_SHIFT)
#define PAGE_MASK  (PAGE_SIZE - 1)
#define DIR_SHIFT  12 /* 4096 entries, 32 KiB per directory */
#define DIR_SIZE   (1u << DIR_SHIFT)
#define DIR_MASK   (DIR_SIZE - 1)

/* A directory entry: a lower directory, or at level 1 a page. */
typedef _Atomic(void *) slot_t;

struct sparse_store {
	pthread_rwlock_t lock;
	uint64_t size;
	unsigned int levels;	 /* levels of directories, >= 1 */
	unsigned int root_shift; /* page index >> root_shift = root slot */
	size_t root_entries;
	slot_t *root;
	atomic_uint_fast64_t nr_pages;
};

/* Pages covered by one entry of a directory at this level. */
static inline unsigned int level_shift(unsigned int level)
{
	return DIR_SHIFT * (level - 1);
}

static bool is_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i, head = len < 16 ? len : 16;

	for (i = 0; i < head; i++)
		if (p[i])
			return false;
	/* The first 16 bytes are zero: compare the rest against itself. */
	return len <= 16 || memcmp(p, p + 16, len - 16) == 0;
}

struct sparse_store *sparse_store_new(uint64_t size)
{
	struct sparse_store *s;
	pthread_rwlockattr_t attr;
	uint64_t nr_pages = (size >> PAGE_SHIFT) + !!(size & PAGE_MASK);
	int err;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->size = size;
	if (!nr_pages)
		nr_pages = 1;

	/* Enough levels that the root, at full width, covers every page. */
	s->levels = 1;
	while (s->levels * DIR_SHIFT < 64 &&
	       (nr_pages - 1) >> (s->levels * DIR_SHIFT))
		s->levels++;
	s->root_shift = level_shift(s->levels);
	s->root_entries = ((nr_pages - 1) >> s->root_shift) + 1;
	s->root = calloc(s->root_entries, sizeof(slot_t));
	if (!s->root) {
		free(s);
		return NULL;
	}

	/* A long trim must not wait behind an endless stream of reads. */
	err = pthread_rwlockattr_init(&attr);
	if (!err) {
		pthread_rwlockattr_setkind_np(
			&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		err = pthread_rwlock_init(&s->lock, &attr);
		pthread_rwlockattr_destroy(&attr);
	}
	if (err) {
		free(s->root);
		free(s);
		return NULL;
	}
	return s;
}

/* Free a subtree, returning how many pages it held. */
static uint64_t free_tree(void *node, unsigned int level)
{
	slot_t *dir = node;
	uint64_t pages = 0;
	unsigned int i;

	if (level == 0) {
		free(node);
		return 1;
	}
	for (i = 0; i < DIR_SIZE; i++) {
		void *child =
			atomic_load_explicit(&dir[i], memory_order_relaxed);

		if (child)
			pages += free_tree(child, level - 1);
	}
	free(dir);
	return pages;
}

void sparse_store_free(struct sparse_store *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->root_entries; i++) {
		void *child =
			atomic_load_explicit(&s->root[i], memory_order_relaxed);

		if (child)
			free_tree(child, s->levels - 1);
	}
	free(s->root);
	pthread_rwlock_destroy(&s->lock);
	free(s);
}

/* The slot holding page pg, or NULL if a directory on the way is missing. */
static slot_t *find_slot(struct sparse_store *s, uint64_t pg)
{
	slot_t *slot = &s->root[pg >> s->root_shift];
	unsigned int level;

	for (level = s->levels - 1; level > 0; level--) {
		slot_t *dir = atomic_load_explicit(slot, memory_order_acquire);

		if (!dir)
			return NULL;
		slot = &dir[(pg >> level_shift(level)) & DIR_MASK];
	}
	return slot;
}

static void *find_page(struct sparse_store *s, uint64_t pg)
{
	slot_t *slot = find_slot(s, pg);

	return slot ? atomic_load_explicit(slot, memory_order_acquire) : NULL;
}

/* Install a zeroed object of len bytes in slot unless a racer did. */
static void *install(slot_t *slot, size_t len)
{
	void *expected = NULL;
	void *obj = calloc(1, len);

	if (!obj)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(slot, &expected, obj,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		free(obj);
		return expected;
	}
	return obj;
}

/* Page pg, allocating it and its directories if missing.  Shared lock. */
static void *get_page(struct sparse_store *s, uint64_t pg)
{
	slot_t *slot = &s->root[pg >> s->root_shift];
	unsigned int level;
	void *page;

	for (level = s->levels - 1; level > 0; level--) {
		slot_t *dir = atomic_load_explicit(slot, memory_order_acquire);

		if (!dir && !(dir = install(slot, DIR_SIZE * sizeof(slot_t))))
			return NULL;
		slot = &dir[(pg >> level_shift(level)) & DIR_MASK];
	}
	page = atomic_load_explicit(slot, memory_order_acquire);
	if (!page) {
		void *expected = NULL;

		page = calloc(1, PAGE_SIZE);
		if (!page)
			return NULL;
		if (atomic_compare_exchange_strong_explicit(
			    slot, &expected, page, memory_order_acq_rel,
			    memory_order_acquire)) {
			atomic_fetch_add(&s->nr_pages, 1);
		} else {
			free(page);
			page = expected;
		}
	}
	return page;
}

static bool in_range(const struct sparse_store *s, uint64_t len,
		     uint64_t offset)
{
	return offset <= s->size && len <= s->size - offset;
}

void sparse_store_read(struct sparse_store *s, void *buf, uint32_t len,
		       uint64_t offset)
{
	unsigned char *p = buf;

	if (!in_range(s, len, offset)) {
		memset(buf, 0, len);
		return;
	}
	pthread_rwlock_rdlock(&s->lock);
	while (len) {
		uint64_t in_pg = offset & PAGE_MASK;
		uint32_t n = PAGE_SIZE - in_pg < len ? PAGE_SIZE - in_pg : len;
		unsigned char *page = find_page(s, offset >> PAGE_SHIFT);

		if (page)
			memcpy(p, page + in_pg, n);
		else
			memset(p, 0, n);
		p += n;
		offset += n;
		len -= n;
	}
	pthread_rwlock_unlock(&s->lock);
}

void sparse_store_prefetch(struct sparse_store *s, const uint64_t *offsets,
			   unsigned int n)
{
	unsigned int i;

	/* Shared: a trim frees pages under the exclusive lock. */
	pthread_rwlock_rdlock(&s->lock);
	for (i = 0; i < n; i++) {
		unsigned char *page;

		if (offsets[i] >= s->size)
			continue;
		page = find_page(s, offsets[i] >> PAGE_SHIFT);
		if (page)
			__builtin_prefetch(page + (offsets[i] & PAGE_MASK), 0,
					   0);
	}
	pthread_rwlock_unlock(&s->lock);
}

int sparse_store_write(struct sparse_store *s, const void *buf, uint32_t len,
		       uint64_t offset)
{
	const unsigned char *p = buf;
	int ret = 0;

	if (!in_range(s, len, offset))
		return EINVAL;
	pthread_rwlock_rdlock(&s->lock);
	while (len) {
		uint64_t in_pg = offset & PAGE_MASK;
		uint32_t n = PAGE_SIZE - in_pg < len ? PAGE_SIZE - in_pg : len;
		uint64_t pg = offset >> PAGE_SHIFT;
		unsigned char *page = find_page(s, pg);

		/* Zeroes into a hole change nothing: keep it a hole. */
		if (!page && !is_zero(p, n) && !(page = get_page(s, pg))) {
			ret = ENOMEM;
			break;
		}
		if (page)
			memcpy(page + in_pg, p, n);
		p += n;
		offset += n;
		len -= n;
	}
	pthread_rwlock_unlock(&s->lock);
	return ret;
}

/* Zero part of page pg; free it if nothing but zeroes is left.  Exclusive. */
static void zero_partial(struct sparse_store *s, uint64_t pg, uint64_t in_pg,
			 uint64_t n)
{
	slot_t *slot = find_slot(s, pg);
	unsigned char *page;

	if (!slot || !(page = atomic_load_explicit(slot, memory_order_relaxed)))
		return;
	memset(page + in_pg, 0, n);
	if (is_zero(page, PAGE_SIZE)) {
		atomic_store_explicit(slot, NULL, memory_order_relaxed);
		free(page);
		atomic_fetch_sub(&s->nr_pages, 1);
	}
}

static bool dir_empty(slot_t *dir)
{
	unsigned int i;

	for (i = 0; i < DIR_SIZE; i++)
		if (atomic_load_explicit(&dir[i], memory_order_relaxed))
			return false;
	return true;
}

/*
 * Free pages [first, end) below a directory at this level whose first
 * page is base, with nr entries.  Subtrees wholly inside go at once;
 * directories left empty are freed too.  Returns the pages freed.
 */
static uint64_t free_range(slot_t *dir, size_t nr, unsigned int level,
			   uint64_t base, uint64_t first, uint64_t end)
{
	unsigned int shift = level_shift(level);
	uint64_t i = (first - base) >> shift;
	uint64_t last = (end - 1 - base) >> shift;
	uint64_t pages = 0;

	for (; i <= last && i < nr; i++) {
		uint64_t cbase = base + (i << shift);
		uint64_t cend = cbase + (UINT64_C(1) << shift);
		void *child =
			atomic_load_explicit(&dir[i], memory_order_relaxed);

		if (!child)
			continue;
		if (first <= cbase && cend <= end) {
			pages += free_tree(child, level - 1);
		} else {
			pages += free_range(child, DIR_SIZE, level - 1, cbase,
					    first > cbase ? first : cbase,
					    end < cend ? end : cend);
			if (!dir_empty(child))
				continue;
			free(child);
		}
		atomic_store_explicit(&dir[i], NULL, memory_order_relaxed);
	}
	return pages;
}

void sparse_store_zero(struct sparse_store *s, uint64_t len, uint64_t offset)
{
	uint64_t end, first, last;

	if (offset >= s->size || !len)
		return;
	if (len > s->size - offset)
		len = s->size - offset;
	end = offset + len;
	first = (offset >> PAGE_SHIFT) + !!(offset & PAGE_MASK); /* whole */
	last = end >> PAGE_SHIFT;

	pthread_rwlock_wrlock(&s->lock);
	if (first > last) {
		/* Inside one page. */
		zero_partial(s, offset >> PAGE_SHIFT, offset & PAGE_MASK, len);
	} else {
		if (offset & PAGE_MASK)
			zero_partial(s, offset >> PAGE_SHIFT,
				     offset & PAGE_MASK,
				     PAGE_SIZE - (offset & PAGE_MASK));
		if (end & PAGE_MASK)
			zero_partial(s, last, 0, end & PAGE_MASK);
		if (first < last)
			atomic_fetch_sub(&s->nr_pages,
					 free_range(s->root, s->root_entries,
						    s->levels, 0, first, last));
	}
	pthread_rwlock_unlock(&s->lock);
}

/* Extents are merged here before they reach the caller. */
struct ext_walk {
	extent_fn *fn;
	void *arg;
	uint64_t start, end; /* the range asked for, bytes */
	uint64_t run_start, run_end;
	unsigned int run_type;
	bool stopped;
};

static void ext_flush(struct ext_walk *w)
{
	if (w->run_end > w->run_start && !w->stopped &&
	    w->fn(w->arg, w->run_start, w->run_end - w->run_start,
		  w->run_type) < 0)
		w->stopped = true;
	w->run_start = w->run_end;
}

/* Add pages [pg, pg + nr) of one type, clipped to the range. */
static void ext_add(struct ext_walk *w, uint64_t pg, uint64_t nr,
		    unsigned int type)
{
	uint64_t last_pg = (w->end - 1) >> PAGE_SHIFT;
	uint64_t a, b; /* b is the last byte: no overflow near 2^64 */

	if (nr > last_pg - pg + 1)
		nr = last_pg - pg + 1;
	a = pg << PAGE_SHIFT;
	b = ((pg + nr - 1) << PAGE_SHIFT) + PAGE_MASK;
	if (a < w->start)
		a = w->start;
	if (b > w->end - 1)
		b = w->end - 1;
	if (type != w->run_type) {
		ext_flush(w);
		w->run_start = a;
		w->run_type = type;
	}
	w->run_end = b + 1;
}

static void ext_walk(struct ext_walk *w, slot_t *dir, size_t nr,
		     unsigned int level, uint64_t base, uint64_t first,
		     uint64_t end)
{
	unsigned int shift = level_shift(level);
	uint64_t i = (first - base) >> shift;
	uint64_t last = (end - 1 - base) >> shift;

	for (; i <= last && i < nr && !w->stopped; i++) {
		uint64_t cbase = base + (i << shift);
		uint64_t cend = cbase + (UINT64_C(1) << shift);
		void *child =
			atomic_load_explicit(&dir[i], memory_order_acquire);

		if (!child)
			ext_add(w, cbase, cend - cbase,
				MQ_EXTENT_HOLE | MQ_EXTENT_ZERO);
		else if (level == 1)
			ext_add(w, cbase, 1, 0);
		else
			ext_walk(w, child, DIR_SIZE, level - 1, cbase,
				 first > cbase ? first : cbase,
				 end < cend ? end : cend);
	}
}

int sparse_store_extents(struct sparse_store *s, uint64_t offset, uint64_t len,
			 extent_fn *fn, void *arg)
{
	struct ext_walk w = {
		.fn = fn,
		.arg = arg,
		.start = offset,
		.run_start = offset,
		.run_end = offset,
		.run_type = 0,
	};

	if (offset >= s->size || !len)
		return 0;
	if (len > s->size - offset)
		len = s->size - offset;
	w.end = offset + len;

	pthread_rwlock_rdlock(&s->lock);
	ext_walk(&w, s->root, s->root_entries, s->levels, 0,
		 offset >> PAGE_SHIFT, ((w.end - 1) >> PAGE_SHIFT) + 1);
	pthread_rwlock_unlock(&s->lock);
	ext_flush(&w);
	return 0;
}

uint64_t sparse_store_allocated(struct sparse_store *s)
{
	return atomic_load(&s->nr_pages) << PAGE_SHIFT;
}
