/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An optical drive at constant linear velocity.
 *
 *  - Transfer: speed x 150 KiB/s (data CD, 2048-byte sectors, 75 per second
 *    at 1x).  12x gives 1.8 MB/s.
 *  - Seek: 0 when the request follows the last one, otherwise
 *      min + (full - min) * sqrt(distance / capacity)
 *    with full chosen so that random pairs average seek_ms.  The seek
 *    includes the wait for the sector to come round.
 *  - Spin-up: after a medium is inserted the drive is not ready for
 *    spinup_ms.  The model gives the time; the driver keeps the deadline
 *    (ready_at = now + mq_device_delay_ns(dev, optical_insert(m))).
 */
#ifndef MQBLK_TIMING_OPTICAL_H
#define MQBLK_TIMING_OPTICAL_H

#include "timing.h"
#include "../../server/mq/params.h"

#define OPTICAL_1X_RATE (150 * 1024) /* bytes per second */

struct optical_params {
	unsigned int speed; /* 12 (x) */
	double seek_ms;	    /* average access, 100 */
	double min_seek_ms; /* short seek, 2 */
	double spinup_ms;   /* after insert, 1500 */
};

void optical_params_default(struct optical_params *p);

/*
 * Read speed, seek_ms and spinup_ms as PREFIX KEY (prefix may be "").
 * Returns 0, or -1 with e set.
 */
int optical_params_read(struct optical_params *op, struct mq_params *p,
			const char *prefix, struct mq_err *e);

struct optical_model {
	struct timing_model base;
	struct optical_params p;
	uint64_t nr_sectors; /* medium capacity, 512-byte sectors */
	double rate;	     /* bytes per second */
	double full_seek_ns;
	uint64_t head; /* sector after the last transfer */
};

/* nr_sectors may be 0 (empty tray); optical_insert() sets it later. */
void optical_init(struct optical_model *m, const struct optical_params *p,
		  uint64_t nr_sectors);
void optical_destroy(struct optical_model *m);

/* Nominal ns; the same as timing_service_ns(&m->base, ...). */
uint64_t optical_service_ns(struct optical_model *m, enum timing_op op,
			    uint64_t sector, uint32_t bytes);

/*
 * A medium of nr_sectors was inserted: park the head and return the
 * nominal spin-up time in ns.
 */
uint64_t optical_insert(struct optical_model *m, uint64_t nr_sectors);

/* Bytes per second at the configured speed. */
double optical_rate(const struct optical_model *m);

#endif
