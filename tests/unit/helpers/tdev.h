/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A test driver for the core: queue_rq asks a policy what to do, requests
 * can be held and completed later, and bios are waited on with a condition
 * variable, never with sleeps.
 */
#ifndef MQBLK_TEST_TDEV_H
#define MQBLK_TEST_TDEV_H

#include <pthread.h>
#include <stdatomic.h>

#include "server/mq/blk-mq.h"

struct tdev;
typedef enum mq_qrc(tdev_policy_fn)(struct tdev *d, struct request *rq);

#define TDEV_LOG 4096

struct tdev {
	struct mq_tag_set set;
	struct mq_queue *q;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	tdev_policy_fn *policy;
	void *priv;
	atomic_uint calls; /* queue_rq calls */
	atomic_uint timeouts;
	/* requests the policy held back, completed by the test */
	struct request *held[1024];
	unsigned int nheld;
	/* what queue_rq was given, in order */
	enum req_op log_op[TDEV_LOG];
	unsigned int log_bios[TDEV_LOG];
	uint64_t log_sector[TDEV_LOG];
	unsigned int nlog;
	/* sizes of the batches queue_rqs was given (tdev_take_batches) */
	unsigned int batch_size[TDEV_LOG];
	unsigned int nbatches;
	pthread_t last_thread;
	/* If set, the timeout handler instead of failing with ETIMEDOUT. */
	enum mq_eh_timer_return (*on_timeout)(struct tdev *d,
					      struct request *rq);
};

struct tbio {
	struct bio bio;
	struct tdev *d;
	atomic_int done;
	char buf[4096];
};

/* Policies */
enum mq_qrc tdev_complete(struct tdev *d, struct request *rq);
enum mq_qrc tdev_hold(struct tdev *d, struct request *rq);

/* depth includes reserved; flags MQ_F_*. */
struct tdev *tdev_new(unsigned int nr_hw, unsigned int depth,
		      unsigned int reserved, unsigned int flags,
		      tdev_policy_fn *policy);
void tdev_free(struct tdev *d);
/*
 * Give the driver queue_rqs (batches a plug holds come in one call and
 * are logged in batch_size); before any I/O.
 */
void tdev_take_batches(struct tdev *d);
/*
 * Stop the hardware queues so that nothing submitted from now on reaches
 * the driver until they start again.  A stopped queue only keeps new runs
 * from starting: a dispatch loop already past its check (a delayed run on
 * kblockd) still takes a request queued meanwhile, so this also waits for
 * it to leave (mq_quiesce_queue), as Linux callers pair the two.
 */
void tdev_stop_queues(struct tdev *d);

void tbio_init(struct tbio *tb, struct tdev *d, enum req_op op, uint64_t sector,
	       uint32_t bytes);
void tbio_submit(struct tdev *d, struct tbio *tb, unsigned int cpu);
/* Wait until the bio completed; returns its status. */
int tbio_wait(struct tbio *tb);
/* Wait until at least n requests are held. */
void tdev_wait_held(struct tdev *d, unsigned int n);
/* The same, giving up after secs seconds: false if fewer are held. */
bool tdev_wait_held_for(struct tdev *d, unsigned int n, unsigned int secs);
/* Complete the oldest held request with status; false if none. */
bool tdev_complete_held(struct tdev *d, int status);
unsigned int tdev_nheld(struct tdev *d);
/*
 * Run hw queue n here and return once no dispatch loop runs on it: what
 * dispatch would do now, it has done, whichever thread did it.
 */
void tdev_run_now(struct tdev *d, unsigned int n);
unsigned int tdev_calls(struct tdev *d);
/* Wait until queue_rq has been called at least n times. */
void tdev_wait_calls(struct tdev *d, unsigned int n);

#endif
