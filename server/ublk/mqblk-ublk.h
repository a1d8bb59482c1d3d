/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mqblk-ublk: every export a local block device, /dev/ublkbN, through
 * the Linux ublk driver (Linux 6.5 or later, with USER_COPY).
 *
 *   main.c   command line, the export table, signals
 *   ctrl.c   /dev/ublk-control: GET_FEATURES, ADD_DEV, SET_PARAMS,
 *            START_DEV, STOP_DEV, DEL_DEV
 *   queue.c  one thread per ublk queue: FETCH_REQ for every tag,
 *            requests into the core, COMMIT_AND_FETCH_REQ on completion
 *
 * Each queue thread is a software queue ("CPU") of the core, as an event
 * loop is in mqblkd: ublk queue N submits through mq_ctx N.  Completions
 * come back to it through a lock-free stack and an eventfd its ring
 * reads, or directly when the model completed inline on the thread.
 */
#ifndef MQBLK_UBLK_H
#define MQBLK_UBLK_H

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/bdev.h"
#include "server/exports/exports.h"
#include "ublk-abi.h"

struct ublk_queue;

/* One tag of a queue: the request the kernel handed us under it. */
struct ublk_io {
	struct ublk_queue *q;
	uint16_t tag;
	uint8_t op;		/* UBLK_IO_OP_* */
	bool busy;		/* in the core, between FETCH and COMMIT */
	bool append_reserved;	/* holds a place in its zone's appends */
	uint64_t append_sector; /* ZONE_APPEND: where the data went */
	void *buf;
	size_t cap;
	struct mq_bdev_io io;
	struct ublk_io *next_done;
};

struct ublk_dev;

struct ublk_queue {
	struct ublk_dev *dev;
	unsigned int qid;
	unsigned int depth;
	struct io_uring ring;
	bool ring_ok;
	const struct ublksrv_io_desc *descs;
	size_t descs_len;
	int efd; /* completions from other threads wake the ring */
	uint64_t efd_val;
	_Atomic(struct ublk_io *) done;
	atomic_uint waking; /* other threads inside io_end's wake-up */
	struct ublk_io *ios;
	unsigned int nr_cmds; /* FETCH/COMMIT commands the kernel holds */
	unsigned int nr_busy; /* requests in the core */
	atomic_bool stopping;
	struct mq_ctx *ctx;
	struct mq_client client;
	pthread_t thread;
	bool started;
	/* the thread's start: 0 once every tag is fetched, else -errno */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool ready;
	int err;
};

struct ublk_ctrl {
	int fd; /* /dev/ublk-control */
	struct io_uring ring;
	uint64_t features;
};

struct ublk_opts {
	unsigned int nr_ctx; /* software queues per device */
	bool readonly;
	int verbose;
};

struct ublk_dev {
	const struct mq_export *exp;
	struct ublk_ctrl *ctrl;
	const struct ublk_opts *opts;
	struct ublksrv_ctrl_dev_info info;
	struct ublk_params params;
	int cdev_fd;
	struct ublk_queue *queues;
	unsigned int nr_queues;
	bool added, started;
	bool recovered; /* taken over from a server that died */
	/*
	 * Zone append, which the core has no op for, is a write at the
	 * zone's write pointer: appends in flight to a zone reserve the
	 * sectors past it, under append_lock.
	 */
	pthread_mutex_t append_lock;
	uint64_t *append_next;	     /* per zone: the next free sector */
	unsigned int *append_flight; /* per zone: appends in flight */
	unsigned int nr_zones;
};

/* ctrl.c: -1 with one line on stderr on failure. */
int ublk_ctrl_open(struct ublk_ctrl *c);
void ublk_ctrl_close(struct ublk_ctrl *c);
/* ADD_DEV, SET_PARAMS, the queue threads, START_DEV. */
int ublk_dev_start(struct ublk_ctrl *c, struct ublk_dev *d);
/* STOP_DEV, drain, join, DEL_DEV; safe on a device half started. */
void ublk_dev_stop(struct ublk_dev *d);

/* queue.c */
int ublk_queue_start(struct ublk_dev *d, unsigned int qid);
/* Tell the thread to leave once its requests are answered. */
void ublk_queue_stop(struct ublk_queue *q);
void ublk_queue_join(struct ublk_queue *q);

/* logging: one line each, prefixed "mqblk-ublk: " */
void ublk_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ublk_log_init(int verbose);
#define ublk_err(...)	ublk_log(0, __VA_ARGS__)
#define ublk_info(...)	ublk_log(1, __VA_ARGS__)
#define ublk_debug(...) ublk_log(2, __VA_ARGS__)

#endif
