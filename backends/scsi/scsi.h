/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SCSI mid layer's objects, after Linux 6.6's include/scsi/scsi_host.h,
 * scsi_device.h and scsi_cmnd.h:
 *
 *  - a Scsi_Host owns one tag set with nr_hw_queues hardware queues, each
 *    can_queue deep (scsi_mq_setup_tags); with host_tagset the host's
 *    can_queue is shared by all of them, counted in host_busy;
 *  - a scsi_device (one LUN, one request queue) lends a dispatch budget
 *    per command, up to queue_depth = cmd_per_lun, and none while it is
 *    blocked (scsi_mq_get_budget, scsi_dev_queue_ready);
 *  - a scsi_cmnd is each request's pdu: its CDB, result and sense.
 *
 * sd.c is the upper driver (CDBs, probe), scsi_lib.c the request path,
 * scsi_error.c the disposition of results and the error handler;
 * scsi_debug.c is the low-level driver, the emulated target.
 */
#ifndef MQBLK_SCSI_H
#define MQBLK_SCSI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "scsi_proto.h"
#include "../../server/mq/blk-mq.h"

/* SCSI_QUEUE_DELAY: rerun after this when a budget is refused idle. */
#define SCSI_QUEUE_DELAY_MS 3
/* SCSI_DEFAULT_DEVICE_BLOCKED, SCSI_DEFAULT_HOST_BLOCKED */
#define SCSI_DEFAULT_DEVICE_BLOCKED 3
#define SCSI_DEFAULT_HOST_BLOCKED   7
/* sd's SD_MAX_RETRIES: how often a failed command is sent again. */
#define SD_MAX_RETRIES 5

struct scsi_device;

/* scsi_decide_disposition's answers */
enum scsi_disposition {
	SUCCESS = 0x2002,
	FAILED,
	NEEDS_RETRY,
	ADD_TO_MLQUEUE,
};

/* __scsi_queue_insert's reasons */
#define SCSI_MLQUEUE_HOST_BUSY	 0x1055
#define SCSI_MLQUEUE_DEVICE_BUSY 0x1056
#define SCSI_MLQUEUE_EH_RETRY	 0x1057

/* A data buffer for a command without bios: probes, UNMAP's list. */
struct scsi_data_buffer {
	void *buf;
	uint32_t length;
};

struct scsi_cmnd {
	struct scsi_device *device;
	uint8_t cmnd[16]; /* the CDB sd built */
	unsigned short cmd_len;
	bool write;	/* data out */
	int result;	/* host byte << 16 | ml byte << 8 | status byte */
	uint32_t resid; /* bytes not transferred, as the LLD says */
	int retries, allowed;
	bool eh_abort_scheduled; /* SCSI_EH_ABORT_SCHEDULED */
	/* SCMD_STATE_COMPLETE: scsi_done and scsi_timeout race for it */
	atomic_bool complete;
	/* bios carry the data of a block request; sdb that of the others */
	struct scsi_data_buffer sdb;
	uint8_t payload[24]; /* UNMAP's parameter list, sd's special page */
	uint8_t sense_buffer[SCSI_SENSE_BUFFERSIZE];
	uint64_t due_ns;   /* when the target completes it (CLOCK_MONOTONIC) */
	bool host_counted; /* counted in host_busy */
	bool lld_dropped;  /* scsi_debug ignored it (a timeout injected) */
	TAILQ_ENTRY(scsi_cmnd) entry; /* the target's in-flight list */
};

static inline struct request *scsi_cmd_to_rq(struct scsi_cmnd *cmd)
{
	return mq_rq_from_pdu(cmd);
}

/* The bytes the command moves: the request's, or its buffer's. */
static inline uint32_t scsi_bufflen(struct scsi_cmnd *cmd)
{
	struct request *rq = scsi_cmd_to_rq(cmd);

	return rq->bio ? blk_rq_bytes(rq) : cmd->sdb.length;
}

static inline bool blk_rq_is_passthrough(const struct request *rq)
{
	return rq->op == REQ_OP_DRV_IN || rq->op == REQ_OP_DRV_OUT;
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
	/* Error handling: SUCCESS or FAILED. */
	int (*eh_abort_handler)(struct scsi_cmnd *cmd);
	int (*eh_device_reset_handler)(struct scsi_cmnd *cmd);
	int (*eh_host_reset_handler)(struct scsi_cmnd *cmd);
	/*
	 * The TEST UNIT READY scsi_eh_test_devices sends after a reset
	 * (scsi_send_eh_cmnd): true if the LUN answers GOOD.  Linux sends
	 * it through queuecommand with its own timer; here the LLD answers
	 * it at once.
	 */
	bool (*eh_test_unit_ready)(struct scsi_device *sdev);
};

struct Scsi_Host {
	const struct scsi_host_template *hostt;
	unsigned int can_queue;
	unsigned int cmd_per_lun;
	unsigned int nr_hw_queues;
	/*
	 * host_tagset: can_queue is the host's, shared by every hardware
	 * queue (one tag space, as BLK_MQ_F_TAG_HCTX_SHARED); without it,
	 * as Linux since 5.10, each hardware queue has can_queue of its own.
	 */
	bool host_tagset;
	struct mq_tag_set tag_set;
	bool tag_set_ready;
	atomic_uint host_busy;	  /* commands the LLD holds, all hw queues */
	atomic_uint host_blocked; /* after SCSI_MLQUEUE_HOST_BUSY */
	unsigned int max_host_blocked;
	atomic_ulong host_refused; /* queue_rq refusals at can_queue */
	/*
	 * queuecommand may sleep, so the tag set is BLOCKING (Linux 6.1 has
	 * it in the host template; here the LLD sets it, by its store).
	 */
	bool queuecommand_may_sleep;
	void *hostdata; /* the LLD's */
};

enum scsi_device_state {
	SDEV_RUNNING,
	SDEV_OFFLINE,
};

/* sd's discard modes (sd_config_discard) */
enum sd_lbp {
	SD_LBP_DISABLE,
	SD_LBP_UNMAP,
	SD_LBP_WS16,
};

struct scsi_device {
	struct Scsi_Host *host;
	struct mq_queue *request_queue;
	unsigned int queue_depth;   /* cmd_per_lun */
	atomic_uint device_busy;    /* budgets lent */
	atomic_uint restarts;	    /* budgets refused since the last rerun */
	atomic_uint device_blocked; /* after QUEUE FULL, BUSY, a retry */
	unsigned int max_device_blocked;
	_Atomic int sdev_state;
	atomic_ulong budget_refused;
	atomic_ulong blocked_refused; /* budgets refused while blocked */
	atomic_uint max_device_busy, max_host_busy; /* high-water marks */

	/* What sd learnt at probe (sd_revalidate_disk). */
	unsigned int sector_size;
	uint64_t capacity; /* logical blocks */
	bool use_16_for_rw, use_10_for_ms, wce, dpofua, lbpme, lbprz;
	enum sd_lbp provisioning_mode;
	uint32_t max_unmap_blocks, max_ws_blocks;

	/* What the mid layer did with errors (device/ attributes). */
	atomic_ulong retried, requeued_busy, failed, eh_aborts,
		eh_device_resets, eh_host_resets, eh_offlined, timeouts;
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
 * scsi_execute_cmd: send cdb to sdev through its request queue and wait.
 * Returns the command's result (0: GOOD), or -errno if it could not be
 * sent; sense gets the sense data (SCSI_SENSE_BUFFERSIZE bytes) if not
 * NULL.
 */
int scsi_execute_cmd(struct scsi_device *sdev, const uint8_t *cdb,
		     unsigned int cdb_len, bool write, void *buf, uint32_t len,
		     uint8_t *sense);

/* scsi_error.c */
struct scsi_sense_hdr {
	uint8_t response_code, sense_key, asc, ascq;
};
bool scsi_normalize_sense(const uint8_t *sense, unsigned int len,
			  struct scsi_sense_hdr *sshdr);
bool scsi_get_sense_info_fld(const uint8_t *sense, unsigned int len,
			     uint64_t *info);
/* scsi_build_sense: fixed (0x70) or descriptor (0x72) format. */
void scsi_build_sense(struct scsi_cmnd *cmd, bool desc, uint8_t key,
		      uint8_t asc, uint8_t ascq);
enum scsi_disposition scsi_decide_disposition(struct scsi_cmnd *cmd);
/* The errno a filesystem sees for a result (scsi_result_to_blk_status). */
int scsi_result_to_errno(int result);
/* scsi_timeout and the error handler: abort, device reset, offline. */
enum mq_eh_timer_return scsi_timeout(struct request *rq);

/* lib internals the error handler uses */
void scsi_finish_command(struct scsi_cmnd *cmd);
void __scsi_queue_insert(struct scsi_cmnd *cmd, int reason, bool unbusy);
void scsi_device_unbusy(struct scsi_device *sdev, struct scsi_cmnd *cmd);

/* sd.c: the upper driver */
enum sd_prep {
	SD_PREP_OK,
	SD_PREP_IOERR,	/* BLK_STS_IOERR: out of range, misaligned */
	SD_PREP_TARGET, /* BLK_STS_TARGET: the device cannot (no discard) */
};
enum sd_prep sd_init_command(struct scsi_cmnd *cmd);
/* sd_done: the bytes that are good. */
unsigned int sd_done(struct scsi_cmnd *cmd);
/*
 * sd_revalidate_disk: TEST UNIT READY, READ CAPACITY 16, INQUIRY VPD,
 * MODE SENSE through the request queue; sets sdev's fields and the
 * queue's limits.  0 or -1 with e set.
 */
struct mq_err;
int sd_revalidate_disk(struct scsi_device *sdev, struct mq_err *e);

/*
 * scsi_debug's completion thread: whether it spins the last spin_ns
 * before a command's due time, with nr_queued commands queued to it.
 */
bool sdebug_should_spin(unsigned int nr_queued, uint64_t spin_ns);

#endif
