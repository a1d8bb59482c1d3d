// SPDX-License-Identifier: GPL-2.0
/*
 * An optical drive's service time: seek, constant linear velocity transfer
 * and spin-up after insert.  See optical.h.
 */
#include <math.h>
#include <stdio.h>

#include "optical.h"

#define MEAN_SQRT_DISTANCE (8.0 / 15.0)

void optical_params_default(struct optical_params *p)
{
	p->speed = 12;
	p->seek_ms = 100;
	p->min_seek_ms = 2;
	p->spinup_ms = 1500;
}

int optical_params_read(struct optical_params *op, struct mq_params *p,
			const char *prefix, struct mq_err *e)
{
	char k[64];

	optical_params_default(op);
	mq_param_key(k, sizeof(k), prefix, "speed");
	if (mq_param_uint(p, k, op->speed, 1, 72, &op->speed, e))
		return -1;
	mq_param_key(k, sizeof(k), prefix, "seek_ms");
	if (mq_param_double(p, k, op->seek_ms, 0, 10000, &op->seek_ms, e))
		return -1;
	mq_param_key(k, sizeof(k), prefix, "spinup_ms");
	if (mq_param_double(p, k, op->spinup_ms, 0, 60000, &op->spinup_ms, e))
		return -1;
	if (op->min_seek_ms > op->seek_ms)
		op->min_seek_ms = op->seek_ms;
	return 0;
}

static uint64_t optical_ops_service_ns(struct timing_model *tm,
				       enum timing_op op, uint64_t sector,
				       uint32_t bytes)
{
	return optical_service_ns((struct optical_model *)tm, op, sector,
				  bytes);
}

static const struct timing_model_ops optical_ops = {
	.name = "optical",
	.service_ns = optical_ops_service_ns,
};

void optical_init(struct optical_model *m, const struct optical_params *p,
		  uint64_t nr_sectors)
{
	double min, avg;

	timing_model_init(&m->base, &optical_ops);
	m->p = *p;
	if (!m->p.speed)
		m->p.speed = 1;
	m->nr_sectors = nr_sectors;
	m->rate = (double)OPTICAL_1X_RATE * m->p.speed;
	min = m->p.min_seek_ms * 1e6;
	avg = m->p.seek_ms * 1e6;
	if (min > avg)
		min = avg;
	m->full_seek_ns = min + (avg - min) / MEAN_SQRT_DISTANCE;
	m->head = 0;
}

void optical_destroy(struct optical_model *m)
{
	timing_model_destroy(&m->base);
}

double optical_rate(const struct optical_model *m)
{
	return m->rate;
}

static double optical_seek_ns(const struct optical_model *m, uint64_t from,
			      uint64_t to)
{
	double min = m->p.min_seek_ms * 1e6;
	uint64_t d = from > to ? from - to : to - from;
	uint64_t cap = m->nr_sectors ? m->nr_sectors : 1;

	if (!d)
		return 0;
	if (min > m->full_seek_ns)
		min = m->full_seek_ns;
	if (d > cap)
		d = cap;
	return min + (m->full_seek_ns - min) * sqrt((double)d / cap);
}

uint64_t optical_service_ns(struct optical_model *m, enum timing_op op,
			    uint64_t sector, uint32_t bytes)
{
	double ns;

	if (op != TIMING_READ && op != TIMING_WRITE)
		return 0;
	ns = optical_seek_ns(m, m->head, sector) + bytes / m->rate * 1e9;
	m->head = sector + (bytes + 511) / 512;
	return (uint64_t)ns;
}

uint64_t optical_insert(struct optical_model *m, uint64_t nr_sectors)
{
	pthread_mutex_lock(&m->base.lock);
	m->nr_sectors = nr_sectors;
	m->head = 0;
	pthread_mutex_unlock(&m->base.lock);
	return (uint64_t)(m->p.spinup_ms * 1e6);
}
