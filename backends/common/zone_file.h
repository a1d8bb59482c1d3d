/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The zone file: a zoned model's zone state kept beside its image, so
 * that a restart finds the write pointers a real drive would keep.
 * media=file:PATH keeps it in PATH.zones; no other store keeps it (ram
 * forgets everything, and nbd: and rbd: offer nowhere to put it: their
 * zones start empty at every start, with a log line saying so).
 *
 * PATH.zones, little-endian:
 *   bytes 0..4095: the header, written once when the file is made
 *     (PATH.zones.tmp, fsync, rename, fsync of the directory):
 *     "MQBLKZN1", u32 version (1), u32 header size (4096), u64 capacity
 *     (sectors), u64 zone size (sectors), u64 zone capacity (sectors),
 *     u32 number of zones, u32 conventional zones, u32 CRC-32 of the 48
 *     bytes before it.
 *   then 16 bytes a zone: u64 write pointer (sector), u8 condition
 *     (BLK_ZONE_COND_*), u8 type, u16 zero, u32 CRC-32 of the zone's
 *     number (u32) and the 12 bytes before it.
 * A zone's entry is rewritten in place, one pwrite that never crosses a
 * sector, when its state must be durable: after a FUA write to it, a
 * zone management command or a fault on it, and at FLUSH for every zone
 * whose state changed, from a snapshot taken before the device's cache
 * is flushed (fdatasync after).  Each entry holds an old or a new state
 * of its zone, both of which lie below data that reached the store, so a
 * kill -9 at any moment leaves every write pointer past every write
 * acknowledged with FUA or before a completed FLUSH, and never past data
 * that was not written.
 */
#ifndef MQBLK_ZONE_FILE_H
#define MQBLK_ZONE_FILE_H

#include <stdbool.h>

#include "zoned.h"
#include "../media/media.h"

struct zone_file;

/*
 * For zd (built by zoned_dev_init) kept in m: open PATH.zones and take
 * the zones from it, or make it when it is missing and the image holds
 * no data in the sequential zones (a fresh image).  size_key names the
 * device's capacity key for error lines.  keep_open: open and closed
 * zones stay so (null_blk); otherwise open zones come back closed, as a
 * ZBC drive's after a power cycle.  A missing zone file over data, a
 * zone file made for other keys, a bad entry: -1, e naming the key or
 * the zone.  A store that cannot keep it: 0, zd->zf NULL, a log line.
 */
int zone_file_attach(struct zoned_dev *zd, struct media *m,
		     const char *size_key, bool keep_open, struct mq_err *e);
void zone_file_close(struct zone_file *zf);
/* Keep zone zno's state now (its zone lock held).  0 or an errno. */
int zone_file_store(struct zoned_dev *zd, unsigned int zno);
/* FLUSH: snapshot, flush(arg), keep the snapshot.  0 or an errno. */
int zone_file_sync(struct zoned_dev *zd, int (*flush)(void *arg), void *arg);

#endif
