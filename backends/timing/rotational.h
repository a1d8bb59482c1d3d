/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A rotating disk: seek, rotational latency and transfer.
 *
 *  - Seek: 0 on the same track, otherwise
 *      t2t + (full - t2t) * sqrt(distance / tracks)
 *    with full chosen so that the mean over uniformly random pairs of
 *    positions equals the average seek time (E[sqrt|x-y|] = 8/15).
 *  - Rotational latency: the platter keeps turning during the seek; the
 *    model waits for the target sector to come under the head.  After a
 *    sequential request it is 0; for random ones it averages half a turn.
 *  - Transfer: bytes at the interface rate (UDMA mode 0-6 or PIO 0-4).
 *  - Write cache: with it on, a write costs only its transfer and is
 *    remembered as dirty; FLUSH then pays for writing the dirty extents.
 *    With it off, writes pay the full mechanical cost and FLUSH is free.
 */
#ifndef MQBLK_TIMING_ROTATIONAL_H
#define MQBLK_TIMING_ROTATIONAL_H

#include <stdbool.h>

#include "timing.h"
#include "../../server/mq/params.h"

struct rotational_params {
	unsigned int rpm;		/* 7200 */
	double seek_ms;			/* average seek, 8.5 */
	double track_seek_ms;		/* track-to-track seek, 0.8 */
	int udma;			/* UDMA mode 0-6, or -1 for PIO */
	unsigned int pio;		/* PIO mode 0-4, used when udma < 0 */
	unsigned int sectors_per_track; /* 512-byte sectors, 1024 */
	bool write_cache;		/* true */
};

/* The defaults above. */
void rotational_params_default(struct rotational_params *p);

/*
 * Read rpm, seek_ms, track_seek_ms, udma, pio and write_cache, each as
 * PREFIX KEY ("hdb." "rpm"; prefix may be "").  udma=-1 or pio=N selects
 * PIO.  Returns 0, or -1 with e set.
 */
int rotational_params_read(struct rotational_params *rp, struct mq_params *p,
			   const char *prefix, struct mq_err *e);

/* Interface rate in bytes per second for a UDMA (0-6) or PIO (0-4) mode. */
double rotational_udma_rate(unsigned int mode);
double rotational_pio_rate(unsigned int mode);

struct rotational_model {
	struct timing_model base;
	struct rotational_params p;
	uint64_t nr_sectors; /* capacity, 512-byte sectors */
	uint64_t nr_tracks;
	double rev_ns;	     /* one revolution */
	double full_seek_ns; /* full-stroke seek */
	double rate;	     /* bytes per second */
	/* State: head track and angle (0..1 of a turn) after the last op. */
	uint64_t head_track;
	double head_angle;
	/* Write cache contents not yet on the platter. */
	uint64_t dirty_extents;
	uint64_t dirty_bytes;
	uint64_t dirty_end; /* sector after the last cached write */
};

void rotational_init(struct rotational_model *m,
		     const struct rotational_params *p, uint64_t nr_sectors);
void rotational_destroy(struct rotational_model *m);

/* Nominal ns; the same as timing_service_ns(&m->base, ...). */
uint64_t rotational_service_ns(struct rotational_model *m, enum timing_op op,
			       uint64_t sector, uint32_t bytes);

/* Pure functions of the parameters, for tests and docs. */
double rotational_seek_ns(const struct rotational_model *m, uint64_t from_track,
			  uint64_t to_track);
double rotational_avg_latency_ns(const struct rotational_model *m);

#endif
