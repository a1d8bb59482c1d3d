// SPDX-License-Identifier: GPL-2.0
/*
 * The virtual disk server (vds) in the service domain, the peer of
 * sunvdc.c.  See vds.h.
 *
 * Descriptors are served in the order their DRING_DATA messages came, one
 * after the other, as one server thread does: each finishes at
 * max(now, the previous one's end) + its service time.  A paused server
 * holds the messages it gets and serves them, still in order, when it is
 * resumed, all of them or a given number.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "vds.h"
#include "../common/irq.h"
#include "../common/sparse.h"
#include "../../server/mq/log.h"

struct vds_msg {
	struct irq_work work; /* first: the irq thread hands it back */
	struct vds *vds;
	uint64_t sid;
	uint32_t idx;
	TAILQ_ENTRY(vds_msg) entry;
};

TAILQ_HEAD(vds_msg_list, vds_msg);

struct vds {
	struct mq_device *mdev;
	struct vds_params p;
	pthread_mutex_t *lock; /* the channel lock */
	struct vdc_port *port;
	struct vio_dring_state *dr; /* the client's ring, exported to us */
	struct sparse_store *store;
	struct irq_thread *irq;

	/* the link, under the channel lock */
	bool link_up;
	bool dead;
	uint64_t sid;	 /* the current session */
	uint64_t hs_sid; /* the session the last handshake opened */
	unsigned int busy;
	bool nack_armed;
	bool paused;
	unsigned long budget; /* while paused: how many more to serve */
	struct vds_msg_list held;
	uint64_t busy_until_ns;
	unsigned long served;
};

/* The timing model: a fixed cost per descriptor, then the transfer. */
static uint64_t vds_service_ns(const struct vds *vds, uint64_t bytes)
{
	double ns = vds->p.latency_us * 1e3;

	if (vds->p.mbps > 0)
		ns += (double)bytes * 1e3 / vds->p.mbps;
	return mq_device_delay_ns(vds->mdev, ns);
}

static void vds_serve(struct irq_work *work);

/* Queue msg to be served after the descriptors before it; lock held. */
static void vds_schedule(struct vds *vds, struct vds_msg *msg)
{
	uint64_t now = mq_now_ns(), start, bytes = 0;

	if (vds->dr->base && msg->idx < vds->dr->num_entries)
		bytes = vio_dring_entry(vds->dr, msg->idx)->size;
	start = vds->busy_until_ns > now ? vds->busy_until_ns : now;
	vds->busy_until_ns = start + vds_service_ns(vds, bytes);
	irq_raise(vds->irq, &msg->work, vds_serve, vds->busy_until_ns - now);
}

/* Move held messages to the thread, as far as the budget goes. */
static void vds_release_held(struct vds *vds)
{
	struct vds_msg *msg;

	while ((msg = TAILQ_FIRST(&vds->held))) {
		if (vds->paused) {
			if (!vds->budget)
				break;
			vds->budget--;
		}
		TAILQ_REMOVE(&vds->held, msg, entry);
		vds_schedule(vds, msg);
	}
}

/* Bytes of descriptor desc through its cookies; lock held. */
static uint32_t vds_do_io(struct vds *vds, struct vio_disk_desc *desc)
{
	uint64_t off = desc->offset * vds->p.vdisk_block_size;
	uint32_t i;

	if (vds->p.size == VDS_SIZE_RESERVED || off > vds->p.size ||
	    desc->size > vds->p.size - off)
		return EIO;
	if (desc->operation == VD_OP_BWRITE &&
	    vds->p.vdisk_mtype != VD_MEDIA_TYPE_FIXED && desc->size)
		return EROFS;
	for (i = 0; i < desc->ncookies; i++) {
		struct ldc_trans_cookie *c = &desc->cookies[i];

		if (desc->operation == VD_OP_BREAD) {
			sparse_store_read(vds->store, c->cookie_addr,
					  c->cookie_size, off);
		} else if (sparse_store_write(vds->store, c->cookie_addr,
					      c->cookie_size, off)) {
			return ENOSPC;
		}
		off += c->cookie_size;
	}
	return 0;
}

/* VD_OP_GET_DISKGEOM: 255 heads, 63 sectors, as many cylinders as fit. */
static uint32_t vds_get_geom(struct vds *vds, struct vio_disk_desc *desc)
{
	struct vio_disk_geom geom = {.num_hd = 255, .num_sec = 63};
	uint64_t blocks;

	if (vds->p.size == VDS_SIZE_RESERVED || !desc->ncookies ||
	    desc->cookies[0].cookie_size < sizeof(geom))
		return EIO;
	blocks = vds->p.size / VDC_DEFAULT_BLK_SIZE;
	geom.num_cyl =
		blocks / (255 * 63) > 0xffff ? 0xffff : blocks / (255 * 63);
	memcpy(desc->cookies[0].cookie_addr, &geom, sizeof(geom));
	return 0;
}

static void vds_serve(struct irq_work *work)
{
	struct vds_msg *msg = (struct vds_msg *)work;
	struct vds *vds = msg->vds;
	struct vio_disk_desc *desc;
	enum vio_msg_type reply = VIO_DRING_ACK;
	uint64_t sid = msg->sid;
	uint32_t idx = msg->idx;

	free(msg);
	pthread_mutex_lock(vds->lock);
	/* A message of an old session, or the ring it named is gone. */
	if (vds->dead || !vds->link_up || sid != vds->hs_sid ||
	    !vds->dr->base || idx >= vds->dr->num_entries) {
		pthread_mutex_unlock(vds->lock);
		return;
	}
	desc = vio_dring_entry(vds->dr, idx);
	if (desc->state != VIO_DESC_READY) {
		pthread_mutex_unlock(vds->lock);
		return;
	}
	if (vds->nack_armed) {
		vds->nack_armed = false;
		reply = VIO_DRING_NACK;
		pr_warn("sunvdc: vds: nack fault: descriptor %u NACKed", idx);
	} else {
		if (desc->operation == VD_OP_GET_DISKGEOM)
			desc->status = vds_get_geom(vds, desc);
		else if (desc->operation == VD_OP_FLUSH)
			desc->status = 0;
		else
			desc->status = vds_do_io(vds, desc);
		desc->state = VIO_DESC_DONE;
		vds->served++;
	}
	pthread_mutex_unlock(vds->lock);
	vdc_event(vds->port, LDC_EVENT_DATA_READY, reply, sid, idx);
}

int vds_ldc_write(struct vds *vds, uint64_t sid, uint32_t idx)
{
	struct vds_msg *msg;

	if (vds->dead || !vds->link_up || sid != vds->hs_sid ||
	    vds->sid != vds->hs_sid)
		return -ENOTCONN;
	if (vds->busy) {
		vds->busy--;
		return -EAGAIN;
	}
	msg = calloc(1, sizeof(*msg));
	if (!msg)
		return -ENOMEM;
	msg->vds = vds;
	msg->sid = sid;
	msg->idx = idx;
	if (vds->paused || !TAILQ_EMPTY(&vds->held)) {
		TAILQ_INSERT_TAIL(&vds->held, msg, entry);
		vds_release_held(vds);
	} else {
		vds_schedule(vds, msg);
	}
	return 1;
}

int vds_handshake(struct vds *vds, const struct vio_version *versions,
		  unsigned int nr_versions, const struct vio_disk_attr_info *in,
		  struct vio_version *ver, uint64_t *sid,
		  struct vio_disk_attr_info *out)
{
	unsigned int i;

	if (vds->dead || !vds->link_up)
		return -ENOTCONN;
	/* VER_INFO: the first the client offers that we speak, at most ours */
	for (i = 0; i < nr_versions; i++)
		if (versions[i].major == vds->p.ver.major)
			break;
	if (i == nr_versions)
		return -EPROTONOSUPPORT;
	ver->major = versions[i].major;
	ver->minor = versions[i].minor < vds->p.ver.minor ? versions[i].minor
							  : vds->p.ver.minor;

	/* ATTR_INFO: our disk, in the fields this version has */
	memset(out, 0, sizeof(*out));
	out->ack = 1;
	out->xfer_mode = in->xfer_mode;
	out->vdisk_type = VD_DISK_TYPE_DISK;
	out->vdisk_block_size = vds->p.vdisk_block_size;
	out->operations = 1ull << VD_OP_BREAD | 1ull << VD_OP_BWRITE |
			  1ull << VD_OP_FLUSH | 1ull << VD_OP_GET_DISKGEOM;
	out->max_xfer_size = vds->p.max_xfer_size;
	if (ver->minor >= 1) {
		out->vdisk_size =
			vds->p.size == VDS_SIZE_RESERVED
				? (uint64_t)-1
				: vds->p.size / vds->p.vdisk_block_size;
		out->vdisk_mtype = vds->p.vdisk_mtype;
	}
	if (ver->minor >= 2)
		out->phys_block_size = vds->p.phys_block_size;

	vds->hs_sid = vds->sid;
	*sid = vds->sid;
	return 0;
}

/* ---- the link and the faults ------------------------------------- */

/* Messages held for a session that is over; lock held. */
static void vds_drop_held(struct vds *vds)
{
	struct vds_msg *msg;

	while ((msg = TAILQ_FIRST(&vds->held))) {
		TAILQ_REMOVE(&vds->held, msg, entry);
		free(msg);
	}
}

void vds_link_reset(struct vds *vds)
{
	pthread_mutex_lock(vds->lock);
	vds->sid++;
	vds_drop_held(vds);
	pthread_mutex_unlock(vds->lock);
	vdc_event(vds->port, LDC_EVENT_RESET, 0, 0, 0);
}

void vds_link_down(struct vds *vds)
{
	pthread_mutex_lock(vds->lock);
	vds->link_up = false;
	vds->sid++;
	vds_drop_held(vds);
	pthread_mutex_unlock(vds->lock);
	vdc_event(vds->port, LDC_EVENT_RESET, 0, 0, 0);
}

void vds_link_up(struct vds *vds)
{
	bool was_up;

	pthread_mutex_lock(vds->lock);
	was_up = vds->link_up;
	vds->link_up = true;
	pthread_mutex_unlock(vds->lock);
	if (!was_up)
		vdc_event(vds->port, LDC_EVENT_UP, 0, 0, 0);
}

void vds_arm_nack(struct vds *vds)
{
	pthread_mutex_lock(vds->lock);
	vds->nack_armed = true;
	pthread_mutex_unlock(vds->lock);
}

void vds_set_busy(struct vds *vds, unsigned int nr_eagain)
{
	pthread_mutex_lock(vds->lock);
	vds->busy = nr_eagain;
	pthread_mutex_unlock(vds->lock);
}

void vds_pause(struct vds *vds)
{
	pthread_mutex_lock(vds->lock);
	vds->paused = true;
	vds->budget = 0;
	pthread_mutex_unlock(vds->lock);
}

void vds_resume(struct vds *vds, unsigned long nr)
{
	pthread_mutex_lock(vds->lock);
	if (nr)
		vds->budget += nr;
	else
		vds->paused = false;
	vds_release_held(vds);
	pthread_mutex_unlock(vds->lock);
}

bool vds_link_is_up(const struct vds *vds)
{
	return vds->link_up;
}

bool vds_paused(const struct vds *vds)
{
	return vds->paused;
}

unsigned long vds_served(const struct vds *vds)
{
	return vds->served;
}

/* ---- life ---------------------------------------------------------- */

struct vds *vds_create(struct mq_device *mdev, const struct vds_params *p,
		       pthread_mutex_t *lock, struct vdc_port *port,
		       struct vio_dring_state *dr)
{
	struct vds *vds = calloc(1, sizeof(*vds));

	if (!vds)
		return NULL;
	vds->mdev = mdev;
	vds->p = *p;
	vds->lock = lock;
	vds->port = port;
	vds->dr = dr;
	vds->link_up = true;
	vds->sid = 1;
	TAILQ_INIT(&vds->held);
	vds->store = sparse_store_new(
		p->size == VDS_SIZE_RESERVED ? VDC_DEFAULT_BLK_SIZE : p->size);
	if (!vds->store)
		goto fail;
	vds->irq = irq_thread_create("sunvdc-vds");
	if (!vds->irq)
		goto fail;
	return vds;
fail:
	if (vds->store)
		sparse_store_free(vds->store);
	free(vds);
	return NULL;
}

void vds_destroy(struct vds *vds)
{
	if (!vds)
		return;
	pthread_mutex_lock(vds->lock);
	vds->dead = true;
	vds->link_up = false;
	vds_drop_held(vds);
	pthread_mutex_unlock(vds->lock);
	/* What is left on the thread runs now and is dropped (dead). */
	irq_thread_destroy(vds->irq);
	sparse_store_free(vds->store);
	free(vds);
}
