// SPDX-License-Identifier: GPL-2.0
/*
 * A rotating disk's service time: seek, rotational latency, transfer and
 * the write cache.  See rotational.h for the formulas.
 */
#include <math.h>
#include <stdio.h>

#include "rotational.h"

/* E[sqrt|x - y|] for x, y uniform on [0, 1]. */
#define MEAN_SQRT_DISTANCE (8.0 / 15.0)

/* ATA transfer modes, MB/s (10^6 bytes). */
static const double udma_mbs[] = {16.7, 25.0, 33.3, 44.4, 66.7, 100.0, 133.3};
static const double pio_mbs[] = {3.3, 5.2, 8.3, 11.1, 16.7};

double rotational_udma_rate(unsigned int mode)
{
	if (mode > 6)
		mode = 6;
	return udma_mbs[mode] * 1e6;
}

double rotational_pio_rate(unsigned int mode)
{
	if (mode > 4)
		mode = 4;
	return pio_mbs[mode] * 1e6;
}

void rotational_params_default(struct rotational_params *p)
{
	p->rpm = 7200;
	p->seek_ms = 8.5;
	p->track_seek_ms = 0.8;
	p->udma = 5;
	p->pio = 4;
	p->sectors_per_track = 1024;
	p->write_cache = true;
}

int rotational_params_read(struct rotational_params *rp, struct mq_params *p,
			   const char *prefix, struct mq_err *e)
{
	char k[64];
	unsigned int pio;
	uint64_t udma;
	bool has_pio;

	rotational_params_default(rp);
	if (mq_param_uint(p, mq_param_key(k, sizeof(k), prefix, "rpm"), rp->rpm,
			  1, 100000, &rp->rpm, e) ||
	    mq_param_double(p, mq_param_key(k, sizeof(k), prefix, "seek_ms"),
			    rp->seek_ms, 0, 1000, &rp->seek_ms, e) ||
	    mq_param_double(
		    p, mq_param_key(k, sizeof(k), prefix, "track_seek_ms"),
		    rp->track_seek_ms, 0, 1000, &rp->track_seek_ms, e) ||
	    mq_param_bool(p, mq_param_key(k, sizeof(k), prefix, "write_cache"),
			  rp->write_cache, &rp->write_cache, e))
		return -1;
	if (rp->track_seek_ms > rp->seek_ms) {
		mq_err_set(e, "%strack_seek_ms=%g: more than seek_ms=%g",
			   prefix, rp->track_seek_ms, rp->seek_ms);
		return -1;
	}
	has_pio = mq_params_has(p, mq_param_key(k, sizeof(k), prefix, "pio"));
	if (mq_param_uint(p, k, rp->pio, 0, 4, &pio, e))
		return -1;
	rp->pio = pio;
	/* udma=-1 means PIO; the getter takes unsigned, so accept "-1". */
	mq_param_key(k, sizeof(k), prefix, "udma");
	if (mq_params_has(p, k)) {
		const char *s;

		if (mq_param_str(p, k, NULL, &s, e))
			return -1;
		if (s[0] == '-' && s[1] == '1' && s[2] == '\0') {
			rp->udma = -1;
			return 0;
		}
		if (mq_param_u64(p, k, 5, 0, 6, &udma, e))
			return -1;
		rp->udma = (int)udma;
		if (has_pio) {
			mq_err_set(e, "%sudma and %spio: give one", prefix,
				   prefix);
			return -1;
		}
		return 0;
	}
	if (has_pio)
		rp->udma = -1;
	return 0;
}

static uint64_t rotational_ops_service_ns(struct timing_model *tm,
					  enum timing_op op, uint64_t sector,
					  uint32_t bytes)
{
	return rotational_service_ns((struct rotational_model *)tm, op, sector,
				     bytes);
}

static const struct timing_model_ops rotational_ops = {
	.name = "rotational",
	.service_ns = rotational_ops_service_ns,
};

void rotational_init(struct rotational_model *m,
		     const struct rotational_params *p, uint64_t nr_sectors)
{
	double t2t, avg;

	timing_model_init(&m->base, &rotational_ops);
	m->p = *p;
	if (!m->p.sectors_per_track)
		m->p.sectors_per_track = 1024;
	if (!m->p.rpm)
		m->p.rpm = 7200;
	m->nr_sectors = nr_sectors;
	m->nr_tracks = nr_sectors / m->p.sectors_per_track;
	if (m->nr_tracks < 1)
		m->nr_tracks = 1;
	m->rev_ns = 60.0 * 1e9 / m->p.rpm;
	t2t = m->p.track_seek_ms * 1e6;
	avg = m->p.seek_ms * 1e6;
	m->full_seek_ns = t2t + (avg - t2t) / MEAN_SQRT_DISTANCE;
	m->rate = m->p.udma >= 0 ? rotational_udma_rate((unsigned)m->p.udma)
				 : rotational_pio_rate(m->p.pio);
	m->head_track = 0;
	m->head_angle = 0;
	m->dirty_extents = 0;
	m->dirty_bytes = 0;
	m->dirty_end = UINT64_MAX;
}

void rotational_destroy(struct rotational_model *m)
{
	timing_model_destroy(&m->base);
}

double rotational_seek_ns(const struct rotational_model *m, uint64_t from_track,
			  uint64_t to_track)
{
	double t2t = m->p.track_seek_ms * 1e6;
	uint64_t d;

	d = from_track > to_track ? from_track - to_track
				  : to_track - from_track;
	if (!d)
		return 0;
	return t2t + (m->full_seek_ns - t2t) * sqrt((double)d / m->nr_tracks);
}

double rotational_avg_latency_ns(const struct rotational_model *m)
{
	return m->rev_ns / 2;
}

static double sector_angle(const struct rotational_model *m, uint64_t sector)
{
	return (double)(sector % m->p.sectors_per_track) /
	       m->p.sectors_per_track;
}

/* Move the head to sector, wait for it to come round, transfer bytes. */
static double mechanical_ns(struct rotational_model *m, uint64_t sector,
			    uint32_t bytes)
{
	uint64_t track = sector / m->p.sectors_per_track;
	uint64_t end = sector + (bytes + 511) / 512;
	double seek, arrive, wait, xfer;

	if (track >= m->nr_tracks)
		track = m->nr_tracks - 1;
	seek = rotational_seek_ns(m, m->head_track, track);
	/* The platter turned while the arm moved. */
	arrive = m->head_angle + seek / m->rev_ns;
	arrive -= floor(arrive);
	wait = sector_angle(m, sector) - arrive;
	if (wait < 0)
		wait += 1;
	/* Rounding: right under the head is no wait, not a whole turn. */
	if (wait > 1 - 1e-9)
		wait = 0;
	xfer = bytes / m->rate * 1e9;
	m->head_track = end / m->p.sectors_per_track;
	if (m->head_track >= m->nr_tracks)
		m->head_track = m->nr_tracks - 1;
	m->head_angle = sector_angle(m, end);
	return seek + wait * m->rev_ns + xfer;
}

uint64_t rotational_service_ns(struct rotational_model *m, enum timing_op op,
			       uint64_t sector, uint32_t bytes)
{
	double ns = 0;

	switch (op) {
	case TIMING_READ:
		ns = mechanical_ns(m, sector, bytes);
		break;
	case TIMING_WRITE:
		if (!m->p.write_cache) {
			ns = mechanical_ns(m, sector, bytes);
			break;
		}
		/* Into the cache: a sequential write extends the extent. */
		if (sector != m->dirty_end)
			m->dirty_extents++;
		m->dirty_bytes += bytes;
		m->dirty_end = sector + (bytes + 511) / 512;
		ns = bytes / m->rate * 1e9;
		break;
	case TIMING_FLUSH:
		/*
		 * The drive writes its cache back in sorted order: a short
		 * seek and on average half a turn per extent, then the data
		 * at the media rate (taken as the interface rate).
		 */
		ns = m->dirty_extents *
			     (m->p.track_seek_ms * 1e6 + m->rev_ns / 2) +
		     m->dirty_bytes / m->rate * 1e9;
		m->dirty_extents = 0;
		m->dirty_bytes = 0;
		m->dirty_end = UINT64_MAX;
		break;
	case TIMING_OTHER:
		break;
	}
	return (uint64_t)ns;
}
