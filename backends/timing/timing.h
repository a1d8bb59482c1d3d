/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Timing models: how long a command takes on a modelled device.
 *
 * A model answers one question: given the command (op, first sector,
 * bytes), how many nanoseconds of service time does it take?  The answer is
 * nominal, i.e. at time_scale=1; callers scale it with
 * mq_device_delay_ns(dev, ns) (time_scale=0 turns every delay off) and
 * complete the command on their irq thread after that delay.
 *
 * A model keeps state between commands (head position, write cache, spin
 * state), so the same request costs less after a neighbour than after a
 * far-away one.  Calls on one model are serialised by its own lock, so a
 * model may be shared by several queues.
 *
 * Sectors are always 512-byte units, as in Linux, whatever the device's
 * logical block size.
 */
#ifndef MQBLK_TIMING_H
#define MQBLK_TIMING_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define TIMING_NSEC_PER_MSEC 1000000ULL
#define TIMING_NSEC_PER_SEC  1000000000ULL

enum timing_op {
	TIMING_READ,
	TIMING_WRITE,
	TIMING_FLUSH,
	/* A command without data transfer or head movement (sense, identify).
	 */
	TIMING_OTHER,
};

struct timing_model;

struct timing_model_ops {
	const char *name;
	/* Called with m->lock held. */
	uint64_t (*service_ns)(struct timing_model *m, enum timing_op op,
			       uint64_t sector, uint32_t bytes);
};

/* Embedded first in every model. */
struct timing_model {
	const struct timing_model_ops *ops;
	pthread_mutex_t lock;
	/* Statistics, nominal ns and commands served. */
	uint64_t busy_ns;
	uint64_t nr_cmds;
};

void timing_model_init(struct timing_model *m,
		       const struct timing_model_ops *ops);
void timing_model_destroy(struct timing_model *m);

/* Nominal service time of one command; updates the model's state. */
uint64_t timing_service_ns(struct timing_model *m, enum timing_op op,
			   uint64_t sector, uint32_t bytes);

/* CLOCK_MONOTONIC in ns, for "ready at" deadlines. */
static inline uint64_t timing_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * TIMING_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

#endif
