/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A sparse byte store in memory: pages are allocated on first write and
 * freed when trimmed, so memory follows the data written, not the size.
 * Thread-safe; readers run in parallel.  After nbdkit's sparse allocator.
 */
#ifndef MQBLK_SPARSE_H
#define MQBLK_SPARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "../../server/mq/genhd.h"

struct sparse_store;

struct sparse_store *sparse_store_new(uint64_t size);
void sparse_store_free(struct sparse_store *s);

/* Unwritten bytes read as zero. */
void sparse_store_read(struct sparse_store *s, void *buf, uint32_t len,
		       uint64_t offset);
/*
 * Start bringing in the first bytes at each offset, so that the reads of
 * a batch that follow wait for their cache misses together rather than
 * one after another.  Only a hint: nothing is read or checked.
 */
void sparse_store_prefetch(struct sparse_store *s, const uint64_t *offsets,
			   unsigned int n);
/* Returns 0 or ENOMEM. */
int sparse_store_write(struct sparse_store *s, const void *buf, uint32_t len,
		       uint64_t offset);
/* Zero the range; pages wholly inside it are freed. */
void sparse_store_zero(struct sparse_store *s, uint64_t len, uint64_t offset);
/* Report allocated and unallocated runs, as gendisk extents. */
int sparse_store_extents(struct sparse_store *s, uint64_t offset, uint64_t len,
			 extent_fn *fn, void *arg);
uint64_t sparse_store_allocated(struct sparse_store *s);

#endif
