/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A fixed pool of threads that run queued work items in FIFO order, for
 * drivers whose I/O blocks (loop-like passthroughs).  Any worker may take
 * any item, so items carry no ordering between them.
 */
#ifndef MQBLK_WORKQUEUE_H
#define MQBLK_WORKQUEUE_H

#include <sys/queue.h>

struct work_item;
typedef void(work_fn)(struct work_item *item);

/* Embed in the driver's per-command data. */
struct work_item {
	work_fn *fn;
	STAILQ_ENTRY(work_item) entry;
};

struct workqueue;

/* Start nr_workers threads named "name/N".  NULL with errno on failure. */
struct workqueue *workqueue_create(const char *name, unsigned int nr_workers);
/* Run every queued item, then stop and join the workers. */
void workqueue_destroy(struct workqueue *wq);
void queue_work(struct workqueue *wq, struct work_item *item, work_fn *fn);

#endif
