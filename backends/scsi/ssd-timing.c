// SPDX-License-Identifier: GPL-2.0
/* The flash SSD timing model of ssd-timing.h. */
#include <errno.h>

#include "ssd-timing.h"

#define SSD_MB	      1000000.0
#define SSD_4K	      4096.0
#define SSD_NS_PER_US 1000.0

void ssd_params_default(struct ssd_params *p)
{
	p->read_us = 100;
	p->write_us = 120;
	p->iops = 90000;
	p->link_mbps = 550;
	p->nr_dies = 16;
}

int ssd_params_read(struct ssd_params *sp, struct mq_params *p,
		    struct mq_err *e)
{
	if (mq_param_double(p, "read_us", sp->read_us, 1, 1000000, &sp->read_us,
			    e) ||
	    mq_param_double(p, "write_us", sp->write_us, 1, 1000000,
			    &sp->write_us, e) ||
	    mq_param_double(p, "iops", sp->iops, 1, 100000000, &sp->iops, e) ||
	    mq_param_double(p, "link_mbps", sp->link_mbps, 1, 1000000,
			    &sp->link_mbps, e) ||
	    mq_param_uint(p, "dies", sp->nr_dies, 1, SSD_MAX_DIES, &sp->nr_dies,
			  e))
		return -1;
	/* The link alone must leave the controller time for a 4 KiB read. */
	if (SSD_4K / (sp->link_mbps * SSD_MB) * 1e9 > 1e9 / sp->iops)
		return mq_err_set(
			e,
			"iops=%g: a 4 KiB transfer at link_mbps=%g already takes longer than 1/iops",
			sp->iops, sp->link_mbps);
	if (1e9 / sp->iops >= sp->read_us * SSD_NS_PER_US)
		return mq_err_set(
			e, "read_us=%g: must be more than 1/iops (%g us)",
			sp->read_us, 1e6 / sp->iops);
	if (1e9 / sp->iops >= sp->write_us * SSD_NS_PER_US)
		return mq_err_set(
			e, "write_us=%g: must be more than 1/iops (%g us)",
			sp->write_us, 1e6 / sp->iops);
	return 0;
}

int ssd_model_init(struct ssd_model *m, const struct ssd_params *p,
		   double scale)
{
	int err;

	*m = (struct ssd_model){.p = *p, .scale = scale};
	m->link_ns_per_b = 1e9 / (p->link_mbps * SSD_MB);
	m->cmd_ns = 1e9 / p->iops - SSD_4K * m->link_ns_per_b;
	if (m->cmd_ns < 0 || p->nr_dies < 1 || p->nr_dies > SSD_MAX_DIES)
		return EINVAL;
	err = pthread_mutex_init(&m->lock, NULL);
	return err;
}

void ssd_model_destroy(struct ssd_model *m)
{
	pthread_mutex_destroy(&m->lock);
}

uint64_t ssd_model_submit(struct ssd_model *m, enum ssd_op op, uint32_t bytes,
			  uint64_t now_ns)
{
	double ctrl, flash, ctrl_4k = m->cmd_ns + SSD_4K * m->link_ns_per_b;
	uint64_t start, done;
	unsigned int i, die = 0;

	ctrl = m->cmd_ns + bytes * m->link_ns_per_b;
	switch (op) {
	case SSD_READ:
		flash = m->p.read_us * SSD_NS_PER_US - ctrl_4k;
		break;
	case SSD_WRITE:
		flash = m->p.write_us * SSD_NS_PER_US - ctrl_4k;
		break;
	default:
		flash = 0;
		break;
	}
	if (m->scale <= 0)
		return now_ns;

	pthread_mutex_lock(&m->lock);
	m->nr_cmds++;
	/* The controller and link, one command at a time. */
	start = m->ctrl_free_ns > now_ns ? m->ctrl_free_ns : now_ns;
	m->ctrl_free_ns = start + (uint64_t)(ctrl * m->scale);
	done = m->ctrl_free_ns;
	if (flash > 0) {
		/* Then the die that frees first. */
		for (i = 1; i < m->p.nr_dies; i++)
			if (m->die_free_ns[i] < m->die_free_ns[die])
				die = i;
		start = m->die_free_ns[die] > done ? m->die_free_ns[die] : done;
		done = start + (uint64_t)(flash * m->scale);
		m->die_free_ns[die] = done;
	}
	pthread_mutex_unlock(&m->lock);
	return done;
}
