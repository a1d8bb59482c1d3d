/* SPDX-License-Identifier: GPL-2.0 */
/*
 * smr: a host-managed shingled (SMR) disk, as Linux's sd driver sees one
 * through sd_zbc.c: sequential-write-required zones behind a few
 * conventional ones, a write pointer and a condition per zone (shared
 * zone code in backends/common/zoned.c), one hw queue of NCQ depth 32,
 * and a rotating-media timing model (smr-timing.c).
 */
#ifndef MQBLK_SMR_H
#define MQBLK_SMR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../device.h"
#include "../common/irq.h"
#include "../media/media.h"
#include "../common/zoned.h"
#include "../timing/timing.h"

/*
 * The drive has a cache of SMR_CACHE_BYTES between the link (SATA 6 Gb/s)
 * and the media, as drives do: a write completes once the link has moved
 * it and the cache has room, the media writing it behind; FLUSH and FUA
 * wait for the media.  A sequential stream keeps the media streaming
 * across the client's round trips (a read finds the drive's read-ahead),
 * as long as the gap is shorter than the cache's worth of media time.
 *
 * The media: a 7200 rpm drive whose outer tracks stream at mbps MiB/s.
 * A command that starts where the last one ended pays only its transfer
 * (the drive's track buffer hides the turn); any other pays a seek,
 * t2t + (full - t2t) * sqrt(distance / capacity) with full set so that
 * random pairs average seek_ms, and half a turn.
 */
#define SMR_CACHE_BYTES (8u << 20)
#define SMR_LINK_MIBPS	550.0 /* SATA 6 Gb/s after 8b/10b and framing */

struct smr_timing_params {
	double mbps;	      /* MiB/s, 235 */
	unsigned int rpm;     /* 7200 */
	double seek_ms;	      /* average, 8.5 */
	double track_seek_ms; /* 0.8 */
};

struct smr_timing {
	struct timing_model base;
	struct smr_timing_params p;
	uint64_t nr_sectors;
	double ns_per_byte;
	double rev_ns;
	double full_seek_ns;
	uint64_t head; /* sector after the last command */
	uint64_t seeks;
};

void smr_timing_params_default(struct smr_timing_params *p);
void smr_timing_init(struct smr_timing *t, const struct smr_timing_params *p,
		     uint64_t nr_sectors);
void smr_timing_destroy(struct smr_timing *t);
double smr_timing_seek_ns(const struct smr_timing *t, uint64_t from,
			  uint64_t to);

struct smr_cmd {
	struct irq_work work;
	int error;
};

struct smr_disk {
	struct mq_device *mdev;
	struct gendisk disk;
	struct mq_tag_set tag_set;
	bool tag_set_ready;
	struct mq_queue *q;
	struct irq_thread *irq;
	struct media *data; /* the platters (media=) */
	struct zoned_dev zd;
	struct smr_timing timing;
	bool timing_ready;
	pthread_mutex_t lock; /* media_until_ns, stream_end */
	bool lock_ready;
	uint64_t media_until_ns;  /* the media is busy until then */
	uint64_t stream_end;	  /* sector after the last command */
	uint64_t cache_ns;	  /* the cache's worth of media time, scaled */
	double iface_ns_per_byte; /* SATA 6 Gb/s, scaled */
	uint64_t capacity;	  /* sectors */
	atomic_ulong refused;	  /* writes refused by the zone rules */
};

extern const struct mq_driver smr_driver;

#endif
