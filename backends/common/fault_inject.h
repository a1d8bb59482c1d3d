/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault injection attributes, as lib/fault-inject.c defines them and
 * null_blk takes them: "interval,probability,space,times".
 */
#ifndef MQBLK_FAULT_INJECT_H
#define MQBLK_FAULT_INJECT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../server/mq/params.h"

struct fault_attr {
	pthread_mutex_t lock;
	atomic_bool enabled;	   /* read without the lock on every request */
	unsigned long interval;	   /* fail every Nth eligible call */
	unsigned long probability; /* percent */
	unsigned long space;	   /* bytes to let through first */
	long times;		   /* failures left; -1: no limit */
	unsigned long count;
	uint64_t rand_state;
};

void fault_attr_init(struct fault_attr *attr);
void fault_attr_destroy(struct fault_attr *attr);
/* Parse "interval,probability,space,times"; -1 with e set on error. */
int fault_attr_parse(struct fault_attr *attr, const char *str,
		     struct mq_err *e);
bool should_fail(struct fault_attr *attr, uint64_t size);

#endif
