// SPDX-License-Identifier: GPL-2.0
/*
 * The SMR disk's media timing (see smr.h).  The defaults are those of a
 * 7200 rpm 3.5" host-managed SMR drive: 235 MiB/s sustained on the outer
 * tracks, 8.5 ms average seek, 0.8 ms track to track.  Nominal ns; the
 * driver scales them with time_scale.
 */
#include <math.h>

#include "smr.h"

/* E[sqrt|x - y|] for x, y uniform on [0, 1]. */
#define MEAN_SQRT_DISTANCE (8.0 / 15.0)

void smr_timing_params_default(struct smr_timing_params *p)
{
	*p = (struct smr_timing_params){
		.mbps = 235,
		.rpm = 7200,
		.seek_ms = 8.5,
		.track_seek_ms = 0.8,
	};
}

double smr_timing_seek_ns(const struct smr_timing *t, uint64_t from,
			  uint64_t to)
{
	double t2t = t->p.track_seek_ms * 1e6;
	uint64_t d = from > to ? from - to : to - from;

	if (!d)
		return 0;
	return t2t + (t->full_seek_ns - t2t) * sqrt((double)d / t->nr_sectors);
}

static uint64_t smr_service_ns(struct timing_model *m, enum timing_op op,
			       uint64_t sector, uint32_t bytes)
{
	struct smr_timing *t = (struct smr_timing *)m;
	double ns;

	if (op != TIMING_READ && op != TIMING_WRITE)
		return 0;
	ns = bytes * t->ns_per_byte;
	if (sector != t->head) {
		ns += smr_timing_seek_ns(t, t->head, sector) + t->rev_ns / 2;
		t->seeks++;
	}
	t->head = sector + bytes / 512;
	return (uint64_t)ns;
}

static const struct timing_model_ops smr_timing_ops = {
	.name = "smr",
	.service_ns = smr_service_ns,
};

void smr_timing_init(struct smr_timing *t, const struct smr_timing_params *p,
		     uint64_t nr_sectors)
{
	double t2t = p->track_seek_ms * 1e6, avg = p->seek_ms * 1e6;

	timing_model_init(&t->base, &smr_timing_ops);
	t->p = *p;
	t->nr_sectors = nr_sectors ? nr_sectors : 1;
	t->ns_per_byte = 1e9 / (p->mbps * 1048576.0);
	t->rev_ns = 60e9 / p->rpm;
	t->full_seek_ns = t2t + (avg - t2t) / MEAN_SQRT_DISTANCE;
	t->head = 0;
	t->seeks = 0;
}

void smr_timing_destroy(struct smr_timing *t)
{
	timing_model_destroy(&t->base);
}
