/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Logical Domain Channel (LDC) between the virtual disk client
 * (sunvdc.c, the guest's driver) and the virtual disk server in the
 * service domain (vds.c), with the descriptor ring they share, after
 * arch/sparc/include/asm/vio.h and ldc.h.
 *
 * The client owns the transmit ring: it fills the descriptor at dr->prod,
 * marks it READY and sends a DRING_DATA message naming its index; the
 * server does the I/O through the descriptor's cookies, marks it DONE and
 * answers with an ACK (or a NACK) naming the same index.  Every message
 * carries the session id of the handshake it belongs to (vio_send_sid);
 * a link reset starts a new session, and messages of an old one are
 * dropped on both sides, as vio_validate_sid drops them.
 */
#ifndef MQBLK_SUNVDC_VIO_H
#define MQBLK_SUNVDC_VIO_H

#include <pthread.h>
#include <stdint.h>

#define VDC_TX_RING_SIZE     512
#define VDC_DEFAULT_BLK_SIZE 512

/* sparc64 pages are 8 KiB */
#define VIO_PAGE_SIZE	 8192
#define MAX_XFER_BLKS	 (128 * 1024)
#define MAX_XFER_SIZE	 (MAX_XFER_BLKS / VDC_DEFAULT_BLK_SIZE)
#define MAX_RING_COOKIES ((MAX_XFER_BLKS / VIO_PAGE_SIZE) + 2)

/* vio_disk_desc.operation: VD_OP_* */
#define VD_OP_BREAD	   0x01
#define VD_OP_BWRITE	   0x02
#define VD_OP_FLUSH	   0x03
#define VD_OP_GET_DISKGEOM 0x07

/* vdisk_type and vdisk_mtype from the attribute ACK */
#define VD_DISK_TYPE_SLICE  0x01
#define VD_DISK_TYPE_DISK   0x02
#define VD_MEDIA_TYPE_FIXED 0x01
#define VD_MEDIA_TYPE_CD    0x02
#define VD_MEDIA_TYPE_DVD   0x03

enum vio_desc_state {
	VIO_DESC_FREE,
	VIO_DESC_READY,
	VIO_DESC_ACCEPTED,
	VIO_DESC_DONE,
};

/* What ldc_map_sg hands the peer: a buffer it may read or write. */
struct ldc_trans_cookie {
	void *cookie_addr;
	uint32_t cookie_size;
};

struct vio_disk_desc {
	uint8_t state; /* hdr.state: enum vio_desc_state */
	uint64_t req_id;
	uint8_t operation;
	uint8_t slice;
	uint32_t status; /* 0 or an errno, ~0 until the server is done */
	uint64_t offset; /* in vdisk_block_size blocks */
	uint64_t size;	 /* bytes */
	uint32_t ncookies;
	struct ldc_trans_cookie cookies[MAX_RING_COOKIES];
};

struct vio_dring_state {
	uint64_t ident;
	uint64_t snd_nxt;
	uint32_t prod, cons;
	uint32_t pending; /* entries the ring has: VDC_TX_RING_SIZE */
	uint32_t num_entries;
	struct vio_disk_desc *base; /* NULL while the port is down */
};

static inline uint32_t vio_dring_next(struct vio_dring_state *dr,
				      uint32_t index)
{
	if (++index == dr->num_entries)
		index = 0;
	return index;
}

static inline struct vio_disk_desc *vio_dring_cur(struct vio_dring_state *dr)
{
	return &dr->base[dr->prod];
}

static inline struct vio_disk_desc *vio_dring_entry(struct vio_dring_state *dr,
						    unsigned int index)
{
	return &dr->base[index];
}

/*
 * Free entries.  Linux's vio_dring_avail() is pending minus the entries
 * in use, masked, so that a ring with every slot in use reads as empty;
 * the kernel's tag set, exactly as deep as the ring, never gets there.
 * Here one slot is kept free so that full and empty differ: the ring
 * takes 511 descriptors and the 512th request meets the full-ring branch
 * of vdc_queue_rq.
 */
static inline uint32_t vio_dring_avail(struct vio_dring_state *dr,
				       unsigned int ring_size)
{
	return dr->pending - ((dr->prod - dr->cons) & (ring_size - 1)) - 1;
}

/* The handshake's version, major.minor. */
struct vio_version {
	uint16_t major;
	uint16_t minor;
};

/* The attribute exchange (VIO_ATTR_INFO): the client's offer ... */
struct vio_disk_attr_info {
	uint8_t xfer_mode;
	uint8_t vdisk_type;
	uint8_t vdisk_mtype;
	uint32_t vdisk_block_size;
	uint64_t operations;
	uint64_t vdisk_size; /* from 1.1: blocks; -1: reserved elsewhere */
	uint64_t max_xfer_size;
	uint32_t phys_block_size; /* from 1.2 */
	int ack;		  /* VIO_SUBTYPE_ACK, else NACK */
};

struct vio_disk_geom {
	uint16_t num_cyl;
	uint16_t num_hd;
	uint16_t num_sec;
};

/* Messages the server sends the client (vdc_event's LDC_EVENT_DATA_READY). */
enum vio_msg_type {
	VIO_DRING_ACK,
	VIO_DRING_NACK,
};

/* LDC events the client's vdc_event() gets */
enum ldc_event {
	LDC_EVENT_RESET,
	LDC_EVENT_UP,
	LDC_EVENT_DATA_READY,
};

struct vds;
struct vdc_port;

/*
 * The client's side of the channel, for the server to call: vdc_event
 * without the channel lock, vdc_link_event (RESET or UP) with it held, so
 * that the client learns of a reset in the same moment as the session
 * ends.
 */
void vdc_event(struct vdc_port *port, enum ldc_event event,
	       enum vio_msg_type type, uint64_t sid, uint32_t idx);
void vdc_link_event(struct vdc_port *port, enum ldc_event event);

#endif
