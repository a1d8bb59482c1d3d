/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The virtual disk client's port, shared by the driver (sunvdc.c) and
 * its faults and attributes (attrs.c).
 */
#ifndef MQBLK_SUNVDC_H
#define MQBLK_SUNVDC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vds.h"
#include "vio.h"
#include "../device.h"

#define DRV_MODULE_NAME "sunvdc"
#define PFX		DRV_MODULE_NAME ": "

#define WAITING_FOR_LINK_UP  0x01
#define WAITING_FOR_TX_SPACE 0x02
#define WAITING_FOR_GEN_CMD  0x04
#define WAITING_FOR_ANY	     -1

#define VDC_MAX_RETRIES 10

#define VDCBLK_NAME "vdisk"

/* vio_port_up retries every second (mod_timer(&vio->timer, jiffies+HZ)) */
#define VDC_HANDSHAKE_MS 1000

struct vdc_req_entry {
	struct request *req;
};

struct vio_completion {
	pthread_cond_t com;
	bool done;
	int err;
	int waiting_for;
};

/* What struct vio_driver_state holds for the driver. */
struct vio_driver_state {
	pthread_mutex_t lock;
	struct vio_dring_state drings[1];
	struct vio_version ver;
	bool hs_complete; /* hs_state & VIO_HS_COMPLETE */
	uint64_t sid;	  /* vio_send_sid: the session */
	struct vio_completion *cmp;
	const char *name; /* the port's disk_name */
};

#define VIO_DRIVER_TX_RING 0

struct vdc_port {
	struct vio_driver_state vio;

	struct gendisk *disk; /* NULL until probe_disk has made it */
	struct gendisk gendisk;
	struct mq_queue *queue;
	struct mq_tag_set tag_set;
	struct mq_device *mdev;

	uint64_t req_id;
	struct vdc_req_entry rq_arr[VDC_TX_RING_SIZE];

	unsigned long ring_cookies;

	uint64_t max_xfer_size;
	uint32_t vdisk_block_size;
	uint32_t drain;
	/*
	 * From LDC_EVENT_RESET (or a reset of our own) until the handshake
	 * completes or a drain gives up on the link.  Only the
	 * wait_for_handshake key (ours, off by default) looks at it.
	 */
	bool ldc_resetting;
	bool wait_for_handshake;

	uint64_t ldc_timeout;	   /* seconds */
	unsigned int handshake_ms; /* ldc_handshake_ms */

	/* The server fills these in for us in the disk attribute ACK. */
	uint64_t operations;
	uint64_t vdisk_size;
	uint8_t vdisk_type;
	uint8_t vdisk_mtype;
	uint32_t vdisk_phys_blksz;

	/* gendisk.disk_name, named at probe: a rename by the server shows. */
	const char *disk_name;

	struct vds *vds;
	/* sunvdc_wq: the reset work, the vio timer and the reset timer */
	struct irq_thread *wq;
	uint64_t vio_timer_gen;	      /* mod_timer/del_timer by generation */
	uint64_t ldc_reset_timer_gen; /* the same for the delayed work */
	bool removing;

	atomic_ulong requeued;
	atomic_ulong drained;
	atomic_ulong resets;
	atomic_ulong nacks;
	atomic_ulong eagain;
	atomic_ulong dev_resource;
	atomic_ulong reset_waits; /* wait_for_handshake: requests held */

	bool lock_ready;
	bool tag_set_ready;
};

static inline int vdc_version_supported(struct vdc_port *port, uint16_t major,
					uint16_t minor)
{
	return port->vio.ver.major == major && port->vio.ver.minor >= minor;
}

static inline uint32_t vdc_tx_dring_avail(struct vio_dring_state *dr)
{
	return vio_dring_avail(dr, VDC_TX_RING_SIZE);
}

/* The faults and attributes of a port's gendisk (attrs.c). */
extern const struct disk_fault vdc_faults[];
extern const struct disk_attr vdc_attrs[];

#endif
