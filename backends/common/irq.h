/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A device's interrupt thread, on which modelled hardware completes work,
 * after a delay or at once (null_blk's irqmode 1 and 2).  Delays have
 * nanosecond resolution, as the kernel's hrtimers do: the thread keeps
 * its work in due order and sleeps until an absolute CLOCK_MONOTONIC
 * deadline with a timer slack of 1 ns.  irq_raise() may be called from
 * any thread.
 */
#ifndef MQBLK_IRQ_H
#define MQBLK_IRQ_H

#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>

struct irq_thread;
struct irq_work;
typedef void(irq_work_fn)(struct irq_work *work);

/* Embed in the driver's per-command data. */
struct irq_work {
	irq_work_fn *fn;
	uint64_t delay_ns;
	uint64_t due_ns; /* CLOCK_MONOTONIC, set by irq_raise */
	TAILQ_ENTRY(irq_work) entry;
};

/* A periodic tick on the irq thread (throttle refill, link polling). */
struct irq_tick {
	void (*fn)(struct irq_tick *tick);
	uint64_t interval_ns;
	struct irq_work work;
	struct irq_thread *t;
};

struct irq_thread *irq_thread_create(const char *name);
/* Stops the thread; work not yet run is run first, with no delay. */
void irq_thread_destroy(struct irq_thread *t);

/* Run fn(work) on the irq thread after delay_ns (0: as soon as it can). */
void irq_raise(struct irq_thread *t, struct irq_work *work, irq_work_fn *fn,
	       uint64_t delay_ns);

int irq_tick_start(struct irq_thread *t, struct irq_tick *tick,
		   void (*fn)(struct irq_tick *), uint64_t interval_ns);

#endif
