// SPDX-License-Identifier: GPL-2.0
/*
 * A flash card's service time: a fixed cost per command, then pages at the
 * card's read or write bandwidth.  See flashcard.h.
 */
#include <stdio.h>

#include "flashcard.h"

void flashcard_params_default(struct flashcard_params *p)
{
	p->page_size = 512;
	p->read_mbps = 20;
	p->write_mbps = 10;
	p->cmd_overhead_us = 100;
}

int flashcard_params_read(struct flashcard_params *fp, struct mq_params *p,
			  const char *prefix, struct mq_err *e)
{
	char k[64];

	mq_param_key(k, sizeof(k), prefix, "page_size");
	if (mq_param_uint(p, k, fp->page_size, 512, 4096, &fp->page_size, e))
		return -1;
	if (fp->page_size & (fp->page_size - 1))
		return mq_err_set(e, "%s=%u: must be 512, 1024, 2048 or 4096",
				  k, fp->page_size);
	mq_param_key(k, sizeof(k), prefix, "read_mbps");
	if (mq_param_double(p, k, fp->read_mbps, 0.001, 100000, &fp->read_mbps,
			    e))
		return -1;
	mq_param_key(k, sizeof(k), prefix, "write_mbps");
	if (mq_param_double(p, k, fp->write_mbps, 0.001, 100000,
			    &fp->write_mbps, e))
		return -1;
	mq_param_key(k, sizeof(k), prefix, "cmd_overhead_us");
	if (mq_param_double(p, k, fp->cmd_overhead_us, 0, 10000000,
			    &fp->cmd_overhead_us, e))
		return -1;
	return 0;
}

static uint64_t flashcard_ops_service_ns(struct timing_model *tm,
					 enum timing_op op, uint64_t sector,
					 uint32_t bytes)
{
	struct flashcard_model *m = (struct flashcard_model *)tm;
	double ns;

	switch (op) {
	case TIMING_READ:
		ns = bytes * m->read_ns_per_byte;
		break;
	case TIMING_WRITE:
		ns = bytes * m->write_ns_per_byte;
		break;
	default:
		ns = 0; /* no cache to flush, no medium to wait for */
		break;
	}
	m->pages += (bytes + m->p.page_size - 1) / m->p.page_size;
	return (uint64_t)(m->p.cmd_overhead_us * 1e3 + ns);
}

static const struct timing_model_ops flashcard_ops = {
	.name = "flashcard",
	.service_ns = flashcard_ops_service_ns,
};

void flashcard_init(struct flashcard_model *m, const struct flashcard_params *p)
{
	timing_model_init(&m->base, &flashcard_ops);
	m->p = *p;
	m->read_ns_per_byte = 1e9 / (p->read_mbps * FLASHCARD_MB);
	m->write_ns_per_byte = 1e9 / (p->write_mbps * FLASHCARD_MB);
	m->pages = 0;
}

void flashcard_destroy(struct flashcard_model *m)
{
	timing_model_destroy(&m->base);
}

uint64_t flashcard_service_ns(struct flashcard_model *m, enum timing_op op,
			      uint64_t sector, uint32_t bytes)
{
	return timing_service_ns(&m->base, op, sector, bytes);
}

uint64_t flashcard_cmd_ns(struct flashcard_model *m)
{
	uint64_t ns = (uint64_t)(m->p.cmd_overhead_us * 1e3);

	pthread_mutex_lock(&m->base.lock);
	m->base.busy_ns += ns;
	m->base.nr_cmds++;
	pthread_mutex_unlock(&m->base.lock);
	return ns;
}

uint64_t flashcard_page_ns(struct flashcard_model *m, enum timing_op op)
{
	double per_byte =
		op == TIMING_WRITE ? m->write_ns_per_byte : m->read_ns_per_byte;
	uint64_t ns = (uint64_t)(m->p.page_size * per_byte);

	pthread_mutex_lock(&m->base.lock);
	m->base.busy_ns += ns;
	m->pages++;
	pthread_mutex_unlock(&m->base.lock);
	return ns;
}
