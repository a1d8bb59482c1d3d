/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A write log in the on-disk format of Linux's dm-log-writes (version 1,
 * drivers/md/dm-log-writes.c), kept for one disk by the device layer
 * (key log_writes=PATH), so that xfstests' replay-log and our
 * mqblk-replay-log can rebuild the disk as it stood at any entry.
 *
 * The format, all little-endian: the super block (magic, version,
 * nr_entries, sectorsize) fills the first sectorsize bytes; then, for
 * each entry, a header (sector, nr_sectors, flags, data_len) padded to
 * sectorsize, followed by nr_sectors * sectorsize bytes of data for a
 * write.  sector and nr_sectors count the disk's logical blocks
 * (sectorsize), as dm-log-writes counts them.  A MARK keeps its name
 * (data_len bytes) inside its header block; DISCARD and FLUSH entries
 * have no data.  So the log is sectorsize * (1 + nr_entries) plus the
 * data written.
 *
 * The order is dm-log-writes': what reached the platter, not the cache.
 * A completed write waits in memory until a FLUSH submitted after it
 * completes; then the writes it covers are logged in their completion
 * order, followed by a FLUSH entry.  A FUA write is logged when it
 * completes.  Discards (and WRITE_ZEROES, logged as writes of zeroes)
 * wait for a FLUSH as writes do.  Failed writes and flushes log nothing:
 * a failed FLUSH leaves its writes waiting for the next one.
 */
#ifndef MQBLK_LOG_WRITES_H
#define MQBLK_LOG_WRITES_H

#include <stdint.h>

#include "../server/mq/params.h"

#define LOG_WRITES_MAGIC   0x6a736677736872ULL
#define LOG_WRITES_VERSION 1ULL

#define LOG_FLUSH_FLAG	 (1u << 0)
#define LOG_FUA_FLAG	 (1u << 1)
#define LOG_DISCARD_FLAG (1u << 2)
#define LOG_MARK_FLAG	 (1u << 3)

/* The mark dm-log-writes appends when its target is removed. */
#define LOG_WRITES_END_MARK "dm-log-writes-end"

struct log_writes;
/* The writes a FLUSH covers, taken when it was submitted. */
struct log_writes_batch;

/*
 * Create (truncate) the log at path for a disk of logical blocks of
 * sectorsize bytes, and write its empty super block.  -1 with e set.
 */
int log_writes_open(const char *path, uint32_t sectorsize,
		    struct log_writes **lp, struct mq_err *e);
/*
 * Log what still waits for a FLUSH, then the end mark, as dm-log-writes'
 * destructor does; update the super block and close.  NULL is allowed.
 */
void log_writes_close(struct log_writes *l);

/*
 * A write-like request completed: off and len in bytes, aligned to the
 * sector size.  data is the bytes written (NULL: zeroes); discard for a
 * DISCARD.  With fua it is logged now, else it waits for a FLUSH.  0, or
 * an errno (the log is then off, and says so once in the server's log).
 */
int log_writes_write(struct log_writes *l, uint64_t off, uint64_t len,
		     const void *data, bool discard, bool fua);
/* A FLUSH is submitted: it covers every write completed so far. */
struct log_writes_batch *log_writes_flush_start(struct log_writes *l);
/*
 * That FLUSH completed with status err (a positive errno or 0): on
 * success its writes and a FLUSH entry are logged; on failure its writes
 * wait again, ahead of those completed since.  b may be NULL (no memory
 * at start: then the writes simply wait for the next FLUSH).
 */
int log_writes_flush_end(struct log_writes *l, struct log_writes_batch *b,
			 int err);
/*
 * A MARK entry named name (at most sectorsize - 33 bytes kept, as
 * dm-log-writes keeps), logged at once.  0, or -1 with e set.
 */
int log_writes_mark(struct log_writes *l, const char *name, struct mq_err *e);
/* "entries N, waiting M, bytes B" or "off: REASON", for the control tree. */
int log_writes_show(struct log_writes *l, char *buf, size_t len);

#endif
