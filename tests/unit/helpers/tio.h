/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Data through a queue, for the device suites: one synchronous bio, a
 * seeded pattern, a write-then-read check.  Waits on a condition
 * variable, never with sleeps.
 */
#ifndef MQBLK_TEST_TIO_H
#define MQBLK_TEST_TIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/mq/blk-mq.h"

/*
 * Submit one bio of op (flags REQ_*) on software queue cpu, as client
 * cpu + 1, and wait for it; returns its status.
 */
int tio_io(struct mq_queue *q, unsigned int cpu, enum req_op op,
	   unsigned int flags, uint64_t sector, uint32_t len, void *buf);

/* A pattern that depends on seed and offset and holds no zero byte. */
void tio_fill(void *buf, size_t len, unsigned int seed);

bool tio_all_zero(const void *buf, size_t len);

/* Write tio_fill(seed) to [sector, +len), read it back, compare. */
void tio_round_trip(struct mq_queue *q, unsigned int cpu, uint64_t sector,
		    uint32_t len, unsigned int seed);

#endif
