/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SCSI mid layer's objects, after include/scsi/scsi_host.h,
 * scsi_device.h and scsi_cmnd.h, as scsi-mq (seed 002) uses them:
 *
 *  - a Scsi_Host owns one tag set with nr_hw_queues hardware queues, each
 *    can_queue deep (scsi_mq_setup_tags), and counts host_busy across
 *    all of them, so that can_queue is the host's limit however many
 *    hardware queues feed it (scsi_host_queue_ready);
 *  - a scsi_device (one LUN, one request queue) lends a dispatch budget
 *    per command, up to queue_depth = cmd_per_lun (scsi_mq_get_budget,
 *    scsi_dev_queue_ready): past it, requests wait in the elevator;
 *  - a scsi_cmnd is each request's pdu.
 *
 * scsi_lib.c is the mid layer (scsi_queue_rq and friends); the low-level
 * driver below it, scsi_debug.c, is the emulated target: it executes
 * commands against memory and completes them with scsi_done() when its
 * timing model says they are done.
 */
#ifndef MQBLK_SCSI_H
#define MQBLK_SCSI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "../../server/mq/blk-mq.h"

/* SCSI_QUEUE_DELAY: rerun after this when a budget is refused idle. */
#define SCSI_QUEUE_DELAY_MS 3

struct scsi_device;

struct scsi_cmnd {
	struct scsi_device *device;
	int result;	   /* 0 or an errno */
	uint64_t due_ns;   /* when the target completes it (CLOCK_MONOTONIC) */
	bool host_counted; /* counted in host_busy */
	TAILQ_ENTRY(scsi_cmnd) entry; /* the target's in-flight list */
};

static inline struct request *scsi_cmd_to_rq(struct scsi_cmnd *cmd)
{
	return mq_rq_from_pdu(cmd);
}

struct Scsi_Host;

/* What the low-level driver offers the mid layer. */
struct scsi_host_template {
	const char *name;
	/*
	 * Take the command.  0: it is the driver's, which calls scsi_done()
	 * later (or at once).  SCSI_MLQUEUE_HOST_BUSY: not now.
	 */
	int (*queuecommand)(struct Scsi_Host *shost, struct scsi_cmnd *cmd);
};

#define SCSI_MLQUEUE_HOST_BUSY 0x1055

struct Scsi_Host {
	const struct scsi_host_template *hostt;
	unsigned int can_queue;
	unsigned int cmd_per_lun;
	unsigned int nr_hw_queues;
	struct mq_tag_set tag_set;
	bool tag_set_ready;
	atomic_uint host_busy;	   /* commands the LLD holds, all hw queues */
	atomic_ulong host_refused; /* queue_rq refusals at can_queue */
	/*
	 * queuecommand may sleep, so the tag set is BLOCKING (Linux 6.1 has
	 * it in the host template; here the LLD sets it, by its store).
	 */
	bool queuecommand_may_sleep;
	void *hostdata; /* the LLD's */
};

struct scsi_device {
	struct Scsi_Host *host;
	struct mq_queue *request_queue;
	unsigned int queue_depth; /* cmd_per_lun */
	atomic_uint device_busy;  /* budgets lent */
	atomic_uint restarts;	  /* budgets refused since the last rerun */
	atomic_ulong budget_refused;
	atomic_uint max_device_busy, max_host_busy; /* high-water marks */
};

/* The tag set (scsi_mq_setup_tags): 0 or an errno. */
int scsi_mq_setup_tags(struct Scsi_Host *shost, unsigned int timeout_ms);
void scsi_mq_free_tags(struct Scsi_Host *shost);
/* A LUN's request queue on the host's tag set (scsi_alloc_sdev). */
int scsi_alloc_sdev(struct Scsi_Host *shost, struct scsi_device *sdev,
		    unsigned int nr_ctx, const char *name);
void scsi_remove_sdev(struct scsi_device *sdev);

/* The LLD is done with cmd (any thread). */
void scsi_done(struct scsi_cmnd *cmd);

/*
 * scsi_debug's completion thread: whether it spins the last spin_ns
 * before a command's due time, with nr_queued commands queued to it.
 */
bool sdebug_should_spin(unsigned int nr_queued, uint64_t spin_ns);

#endif
