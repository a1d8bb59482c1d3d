/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kyber's inside, for tests and the control plane: what Linux shows under
 * debugfs (read_tokens, write_tokens, ..., async_depth).
 */
#ifndef MQBLK_KYBER_H
#define MQBLK_KYBER_H

#include "../server/mq/elevator.h"

/* Scheduling domains: the device is divided by request type. */
enum {
	KYBER_READ,
	KYBER_WRITE,
	KYBER_DISCARD,
	KYBER_OTHER,
	KYBER_NUM_DOMAINS,
};

extern const struct elevator_type kyber_elv;

/*
 * The current token depth of a domain and the tokens in use, or 0 when
 * kyber is not the queue's elevator.  The queue must not be switching.
 */
unsigned int kyber_domain_depth(struct mq_queue *q, unsigned int domain);
unsigned int kyber_domain_busy(struct mq_queue *q, unsigned int domain);
unsigned int kyber_async_depth(struct mq_queue *q);
/* Timer runs so far: each one looked at the latency histograms. */
unsigned long kyber_timer_runs(struct mq_queue *q);

/*
 * Tests only: latencies and the timer on *clock (ns) instead of the
 * monotonic clock, NULL to go back; before any I/O.  ENOENT when kyber
 * is not the queue's elevator.
 */
int kyber_set_clock(struct mq_queue *q, const _Atomic uint64_t *clock);

#endif
