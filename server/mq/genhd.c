/* SPDX-License-Identifier: GPL-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "genhd.h"

int disk_fire_fault(struct gendisk *disk, const char *name, const char *value,
		    struct mq_err *e)
{
	const struct disk_fault *f;

	for (f = disk->faults; f && f->name; f++)
		if (!strcmp(f->name, name))
			return f->fire(disk, value, e);
	return ENOENT;
}

const char *blk_zone_cond_str(enum blk_zone_cond cond)
{
	switch (cond) {
	case BLK_ZONE_COND_NOT_WP:
		return "nw";
	case BLK_ZONE_COND_EMPTY:
		return "em";
	case BLK_ZONE_COND_IMP_OPEN:
		return "oi";
	case BLK_ZONE_COND_EXP_OPEN:
		return "oe";
	case BLK_ZONE_COND_CLOSED:
		return "cl";
	case BLK_ZONE_COND_READONLY:
		return "ro";
	case BLK_ZONE_COND_FULL:
		return "fu";
	case BLK_ZONE_COND_OFFLINE:
		return "of";
	}
	return "?";
}

static const char *blk_zone_type_str(enum blk_zone_type type)
{
	switch (type) {
	case BLK_ZONE_TYPE_CONVENTIONAL:
		return "CONVENTIONAL";
	case BLK_ZONE_TYPE_SEQWRITE_REQ:
		return "SEQ_WRITE_REQUIRED";
	case BLK_ZONE_TYPE_SEQWRITE_PREF:
		return "SEQ_WRITE_PREFERRED";
	}
	return "?";
}

int blk_zone_format(const struct blk_zone *z, char *buf, size_t len)
{
	uint64_t wp = z->type == BLK_ZONE_TYPE_CONVENTIONAL ||
				      z->cond == BLK_ZONE_COND_READONLY ||
				      z->cond == BLK_ZONE_COND_OFFLINE
			      ? 0
			      : z->wp - z->start;
	int n = snprintf(buf, len,
			 "  start: 0x%09" PRIx64 ", len 0x%06" PRIx64
			 ", cap 0x%06" PRIx64 ", wptr 0x%06" PRIx64
			 " reset:0 non-seq:0, zcond:%2u(%s) [type: %u(%s)]",
			 z->start, z->len, z->capacity, wp,
			 (unsigned int)z->cond, blk_zone_cond_str(z->cond),
			 (unsigned int)z->type, blk_zone_type_str(z->type));

	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}
