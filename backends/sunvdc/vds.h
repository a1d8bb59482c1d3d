/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The virtual disk server in the service domain: the other end of the
 * LDC.  It answers the handshake (version and disk attributes), consumes
 * the client's descriptors in ring order on its own thread, taking the
 * time the timing model gives each (a fixed cost per descriptor and a
 * transfer rate), and ACKs or NACKs them.  It also owns the link: faults
 * reset it, take it down and bring it back.
 *
 * Every call that touches the ring or the link runs under the channel
 * lock, which is the client's vio.lock (the ring is memory both sides
 * see, mapped through LDC cookies).
 */
#ifndef MQBLK_SUNVDC_VDS_H
#define MQBLK_SUNVDC_VDS_H

#include <stdbool.h>
#include <stdint.h>

#include "vio.h"
#include "../device.h"
#include "../media/media.h"

#define VDS_SIZE_RESERVED UINT64_MAX /* vdisk_size -1 */

struct vds_params {
	struct vio_version ver;	   /* the highest the server speaks */
	uint64_t size;		   /* bytes, or VDS_SIZE_RESERVED */
	uint32_t vdisk_block_size; /* bytes */
	uint64_t max_xfer_size;	   /* blocks */
	uint8_t vdisk_mtype;	   /* VD_MEDIA_TYPE_* */
	uint32_t phys_block_size;  /* bytes; 0: not reported */
	double latency_us;	   /* per descriptor */
	double mbps;		   /* transfer rate, MB/s */
	struct media *media;	   /* the disk's bytes; vds_create owns it */
};

struct vds *vds_create(struct mq_device *mdev, const struct vds_params *p,
		       pthread_mutex_t *lock, struct vdc_port *port,
		       struct vio_dring_state *dr);
/* The link goes down for good; queued work is dropped. */
void vds_destroy(struct vds *vds);

/*
 * Called with the channel lock held.  The handshake: agree on the
 * highest version both speak (the client offers its list, largest
 * first), then the attribute exchange; *sid is the new session.
 * -ENOTCONN while the link is down, -EPROTONOSUPPORT without a common
 * version.
 */
int vds_handshake(struct vds *vds, const struct vio_version *versions,
		  unsigned int nr_versions, const struct vio_disk_attr_info *in,
		  struct vio_version *ver, uint64_t *sid,
		  struct vio_disk_attr_info *out);
/*
 * The DRING_DATA message for descriptor idx: > 0 when sent, -EAGAIN when
 * the channel's queue is full (the ldc_busy fault), -ENOTCONN when the
 * link is down or sid is not the current session.
 */
int vds_ldc_write(struct vds *vds, uint64_t sid, uint32_t idx);

/* Faults, with the channel lock not held. */
void vds_link_reset(struct vds *vds); /* a new session; the link stays up */
void vds_link_down(struct vds *vds);
void vds_link_up(struct vds *vds);
void vds_arm_nack(struct vds *vds);
void vds_set_busy(struct vds *vds, unsigned int nr_eagain);
void vds_pause(struct vds *vds);
/* Serve nr more descriptors (0: all, and stop pausing). */
void vds_resume(struct vds *vds, unsigned long nr);

/* With the channel lock held. */
bool vds_link_is_up(const struct vds *vds);
bool vds_paused(const struct vds *vds);
unsigned long vds_served(const struct vds *vds);

#endif
