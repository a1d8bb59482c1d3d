// SPDX-License-Identifier: GPL-2.0
/* A fixed pool of worker threads over one FIFO of work items. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "workqueue.h"

struct workqueue {
	pthread_mutex_t lock;
	pthread_cond_t more; /* items queued, or stopping */
	STAILQ_HEAD(, work_item) items;
	bool stopping;
	unsigned int nr_idle; /* workers waiting on more */
	char name[12];
	unsigned int nr_workers;
	pthread_t workers[];
};

static void *worker_fn(void *arg)
{
	struct workqueue *wq = arg;
	struct work_item *item;
	sigset_t all;

	/* Signals belong to the front end's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);

	pthread_mutex_lock(&wq->lock);
	for (;;) {
		item = STAILQ_FIRST(&wq->items);
		if (!item) {
			if (wq->stopping)
				break;
			wq->nr_idle++;
			pthread_cond_wait(&wq->more, &wq->lock);
			wq->nr_idle--;
			continue;
		}
		STAILQ_REMOVE_HEAD(&wq->items, entry);
		pthread_mutex_unlock(&wq->lock);
		item->fn(item);
		pthread_mutex_lock(&wq->lock);
	}
	pthread_mutex_unlock(&wq->lock);
	return NULL;
}

static void stop_workers(struct workqueue *wq, unsigned int nr)
{
	unsigned int i;

	pthread_mutex_lock(&wq->lock);
	wq->stopping = true;
	pthread_cond_broadcast(&wq->more);
	pthread_mutex_unlock(&wq->lock);
	for (i = 0; i < nr; i++)
		pthread_join(wq->workers[i], NULL);
}

struct workqueue *workqueue_create(const char *name, unsigned int nr_workers)
{
	struct workqueue *wq;
	char tname[32];
	unsigned int i;
	int err;

	wq = calloc(1, sizeof(*wq) + nr_workers * sizeof(pthread_t));
	if (!wq)
		return NULL;
	snprintf(wq->name, sizeof(wq->name), "%s", name);
	STAILQ_INIT(&wq->items);
	err = pthread_mutex_init(&wq->lock, NULL);
	if (err)
		goto free_wq;
	err = pthread_cond_init(&wq->more, NULL);
	if (err)
		goto destroy_lock;

	for (i = 0; i < nr_workers; i++) {
		err = pthread_create(&wq->workers[i], NULL, worker_fn, wq);
		if (err) {
			stop_workers(wq, i);
			goto destroy_cond;
		}
		snprintf(tname, sizeof(tname), "%s/%u", wq->name, i);
		tname[15] = '\0'; /* the kernel's limit for thread names */
		pthread_setname_np(wq->workers[i], tname);
	}
	wq->nr_workers = nr_workers;
	return wq;

destroy_cond:
	pthread_cond_destroy(&wq->more);
destroy_lock:
	pthread_mutex_destroy(&wq->lock);
free_wq:
	free(wq);
	errno = err;
	return NULL;
}

void workqueue_destroy(struct workqueue *wq)
{
	if (!wq)
		return;
	stop_workers(wq, wq->nr_workers);
	pthread_cond_destroy(&wq->more);
	pthread_mutex_destroy(&wq->lock);
	free(wq);
}

void queue_work(struct workqueue *wq, struct work_item *item, work_fn *fn)
{
	item->fn = fn;
	pthread_mutex_lock(&wq->lock);
	STAILQ_INSERT_TAIL(&wq->items, item, entry);
	/* Wake one only if one sleeps: a busy worker will find the item. */
	if (wq->nr_idle)
		pthread_cond_signal(&wq->more);
	pthread_mutex_unlock(&wq->lock);
}
