/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sx8: the Promise SATA SX8 "looks-like-I2O" host, driven the way
 * drivers/block/sx8.c drives it after seed 005 ("sx8: convert to blk-mq").
 *
 * One host with 8 ports (4 with the 4-port firmware).  Each port is an
 * export (sx8/port0 ...) with its own tag set: 1 hw queue, depth
 * max_queue (default 1), SHOULD_MERGE.  The ports share what the host
 * has: CARM_MAX_REQ (64) command messages, of which carm_get_request
 * hands out the first max_queue, as the driver does; a budget of 600
 * scatter/gather entries, refused once 568 (600 - 32) are in use; and the
 * firmware's 48-slot message queue.  A port that finds the host out of
 * messages or S/G entries is pushed on the host's wait ring
 * (carm_push_q, CARM_MAX_WAIT_Q = 9 entries) and stopped; completions
 * restart the waiting queues in turn (carm_round_robin).
 *
 * The out-of-band queue (depth 1, NO_SCHED, no export) carries the probe
 * state machine's messages; the control tree shows it as sx8/host.
 *
 * The firmware side (sx8-fw.c) executes the messages: reads and writes on
 * each port's disk, with the rotational timing of a SATA disk, and the
 * probe's MISC, IOCTL and ARRAY messages; its responses arrive on the
 * host's interrupt thread (carm_interrupt -> carm_handle_resp).
 */
#ifndef MQBLK_SX8_H
#define MQBLK_SX8_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "../device.h"
#include "../common/irq.h"
#include "../media/media.h"
#include "../common/workqueue.h"
#include "../timing/rotational.h"
#include "../../server/mq/blk-mq.h"
#include "../../server/mq/genhd.h"

#define DRV_NAME "sx8"

enum {
	/* adapter-wide limits */
	CARM_MAX_PORTS = 8,
	CARM_MAX_WAIT_Q = CARM_MAX_PORTS + 1,

	/* command message queue limits */
	CARM_MAX_REQ = 64,			 /* max command msgs per host */
	CARM_MSG_LOW_WATER = (CARM_MAX_REQ / 4), /* refill mark */

	/* S/G limits, host-wide and per-request */
	CARM_MAX_REQ_SG = 32,	/* max s/g entries per request */
	CARM_MAX_HOST_SG = 600, /* max s/g entries per host */
	CARM_SG_LOW_WATER = (CARM_MAX_HOST_SG / 4), /* re-fill mark */

	/* command messages */
	CARM_MSG_READ = 1,
	CARM_MSG_WRITE = 2,
	CARM_MSG_IOCTL = 6,
	CARM_MSG_ARRAY = 8,
	CARM_MSG_MISC = 9,
	CARM_MSG_SIZE = 288,
	CARM_Q_LEN = 48,

	/* CARM_MSG_IOCTL messages */
	CARM_IOC_SCAN_CHAN = 5, /* scan channels for devices */
	IOC_SCAN_CHAN_NODEV = 0x1f,

	/* CARM_MSG_ARRAY messages */
	CARM_ARRAY_INFO = 0,

	/* response messages */
	RMSG_OK = 1, /* bit indicating msg was successful */

	/* CARM_MSG_MISC messages */
	MISC_GET_FW_VER = 2,
	MISC_ALLOC_MEM = 3,
	MISC_SET_TIME = 5,

	/* MISC_GET_FW_VER feature bits */
	FW_VER_4PORT = (1 << 2),    /* 1=4 ports, 0=8 ports */
	FW_VER_NON_RAID = (1 << 1), /* 1=non-RAID firmware, 0=RAID */

	/* carm_host flags */
	FL_NON_RAID = FW_VER_NON_RAID,
	FL_4PORT = FW_VER_4PORT,
	FL_FW_VER_MASK = (FW_VER_NON_RAID | FW_VER_4PORT),
};

/* The driver's default and the most it warns about (MODULE_PARM_DESC). */
#define CARM_DEFAULT_MAX_QUEUE 1
#define CARM_SAFE_MAX_QUEUE    30

/* 0xf is just arbitrary, non-zero noise; this is sorta like poisoning */
#define TAG_ENCODE(tag) (((tag) << 16) | 0xf)
#define TAG_DECODE(tag) (((tag) >> 16) & 0x3f)
#define TAG_VALID(tag)                                                         \
	((((tag)&0xf) == 0xf) && (TAG_DECODE(tag) < CARM_MAX_REQ))

enum host_states {
	HST_INVALID,	    /* invalid state; never used */
	HST_ALLOC_BUF,	    /* setting up master SHM area */
	HST_ERROR,	    /* we never leave here */
	HST_PORT_SCAN,	    /* start dev scan */
	HST_DEV_SCAN_START, /* start per-device probe */
	HST_DEV_SCAN,	    /* continue per-device probe */
	HST_DEV_ACTIVATE,   /* activate devices we found */
	HST_PROBE_FINISHED, /* probe is complete */
	HST_PROBE_START,    /* initiate probe */
	HST_SYNC_TIME,	    /* tell firmware what time it is */
	HST_GET_FW_VER,	    /* get firmware version, adapter port cnt */
};

const char *carm_state_name(unsigned int state);

struct carm_host;

/* What the firmware answers to ARRAY_INFO: struct carm_array_info. */
struct carm_array_info {
	uint64_t size; /* sectors */
	uint16_t cyl, head, sect;
	char name[40];
	bool no_exist; /* ARRAY_NO_EXIST */
};

struct carm_request {
	unsigned int tag;
	int n_elem;
	unsigned int msg_type;
	unsigned int msg_subtype;
	unsigned int msg_bucket;
	struct request *rq;
	struct carm_port *port;

	/* The message as the firmware reads it. */
	unsigned int array_id; /* ARRAY_INFO, SCAN_CHAN's port */
	uint64_t lba;	       /* READ, WRITE */
	uint32_t lba_count;
	/* What the firmware writes back into the message buffer. */
	uint32_t fw_version;
	uint8_t fw_features;
	uint8_t scan[CARM_MAX_PORTS];
	struct carm_array_info info;

	/* The firmware's response: status, then the interrupt. */
	uint32_t status;
	struct irq_work work;
	STAILQ_ENTRY(carm_request) stalled;
};

struct carm_port {
	unsigned int port_no;
	struct gendisk disk;
	struct carm_host *host;
	struct mq_tag_set tag_set;
	bool tag_set_ready;
	bool added;

	/* attached device characteristics */
	uint64_t capacity;
	char name[41];
	uint16_t dev_geom_head;
	uint16_t dev_geom_sect;
	uint16_t dev_geom_cyl;

	/* The SATA disk behind the port (the firmware's side). */
	struct sx8_disk {
		bool present;
		uint64_t size;	     /* bytes */
		struct media *media; /* where its sectors live */
		struct rotational_model timing;
		bool timing_ready;
		uint64_t busy_until_ns; /* one command at a time */
	} drive;

	unsigned int n_msgs;	/* messages in flight, under host->lock */
	atomic_ulong completed; /* requests ended */
	atomic_ulong pushed;	/* times put on the wait ring */
	atomic_ulong restarted; /* times restarted from it */
};

struct carm_host {
	unsigned long flags;
	struct mq_device *mdev;
	char name[32];

	pthread_mutex_t lock;
	unsigned int state;
	uint32_t fw_ver;

	struct mq_tag_set tag_set; /* the out-of-band queue's */
	bool tag_set_ready;
	struct mq_queue *oob_q;
	struct gendisk oob_disk; /* the tree's sx8/host: no export */
	unsigned int n_oob;

	unsigned int hw_sg_used;
	unsigned int max_queue;
	unsigned int nr_ports; /* the firmware we model: 8 or 4 */

	unsigned int wait_q_prod;
	unsigned int wait_q_cons;
	struct mq_queue *wait_q[CARM_MAX_WAIT_Q];
	struct mq_queue *rr_queue; /* restarted last: may take a message */
	bool yield_to_waiters;	   /* the key: ours, off by default */

	unsigned int n_msgs;
	uint64_t msg_alloc;
	struct carm_request req[CARM_MAX_REQ];

	int cur_scan_dev;
	unsigned long dev_active;
	unsigned long dev_present;
	struct carm_port port[CARM_MAX_PORTS];

	struct workqueue *fsm_wq;
	struct work_item fsm_task;

	pthread_cond_t probe_cond; /* probe_comp */
	bool probe_done;
	unsigned int failed_state; /* the step that went to HST_ERROR */

	/* The firmware. */
	struct irq_thread *irq;
	unsigned int hw_q_used; /* messages in its 48-slot queue */
	bool stalled;		/* fault/stall: responses held */
	STAILQ_HEAD(, carm_request) stalled_list;
	unsigned int fail_msg;	   /* probe_fail: this message fails */
	unsigned int fail_subtype; /* ... with this subtype */

	/* Peaks and counters for the tree and the tests. */
	unsigned int max_msgs_seen;
	unsigned int max_sg_seen;
	unsigned int max_sg_at_alloc; /* hw_sg_used when a message was given */
	unsigned long q_full;	      /* carm_send_msg found CARM_Q_FULL */
	unsigned long ring_overrun;
	unsigned long yielded;

	bool lock_ready, cond_ready;
};

/* sx8-fw.c: the firmware's side of the message queue. */
/* Post crq's message (CARM_IHQP); -EBUSY if the queue is full.  Locked. */
int carm_fw_post(struct carm_host *host, struct carm_request *crq);
/* fault/stall: hold (true) or release (false) the responses. */
void carm_fw_stall(struct carm_host *host, bool stall);
/* Answer the oldest response held by a stall; false if none is held. */
bool carm_fw_step(struct carm_host *host);
/* carm_handle_resp, in sx8.c: the interrupt for crq's response. */
void carm_handle_resp(struct carm_host *host, uint32_t handle, uint32_t status);

#endif
