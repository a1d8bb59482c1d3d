// SPDX-License-Identifier: GPL-2.0
/* What every timing model shares: the lock and the statistics. */
#include "timing.h"

void timing_model_init(struct timing_model *m,
		       const struct timing_model_ops *ops)
{
	m->ops = ops;
	pthread_mutex_init(&m->lock, NULL);
	m->busy_ns = 0;
	m->nr_cmds = 0;
}

void timing_model_destroy(struct timing_model *m)
{
	pthread_mutex_destroy(&m->lock);
}

uint64_t timing_service_ns(struct timing_model *m, enum timing_op op,
			   uint64_t sector, uint32_t bytes)
{
	uint64_t ns;

	pthread_mutex_lock(&m->lock);
	ns = m->ops->service_ns(m, op, sector, bytes);
	m->busy_ns += ns;
	m->nr_cmds++;
	pthread_mutex_unlock(&m->lock);
	return ns;
}
