/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a drive's bytes live: a sparse store in memory, or an image file
 * (read-only for a CD).  Offsets and lengths are in bytes.
 */
#ifndef MQBLK_IDE_STORE_H
#define MQBLK_IDE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "../../server/mq/genhd.h"

struct sparse_store;

struct ide_store {
	struct sparse_store *mem; /* or */
	int fd;			  /* -1 when in memory */
	uint64_t size;
	bool read_only;
};

/* A sparse store of size bytes.  Returns 0 or ENOMEM. */
int ide_store_init_mem(struct ide_store *s, uint64_t size);
/*
 * Open an image file.  size is its length, rounded down to a multiple of
 * align.  Returns 0 or an errno.
 */
int ide_store_open(struct ide_store *s, const char *path, bool read_only,
		   unsigned int align);
void ide_store_close(struct ide_store *s);

/* Return 0 or an errno. */
int ide_store_read(struct ide_store *s, void *buf, uint32_t len, uint64_t off);
int ide_store_write(struct ide_store *s, const void *buf, uint32_t len,
		    uint64_t off);
/* fdatasync an image file; nothing for memory.  0 or an errno. */
int ide_store_flush(struct ide_store *s);
int ide_store_extents(struct ide_store *s, uint64_t off, uint64_t len,
		      extent_fn *fn, void *arg);

#endif
