// SPDX-License-Identifier: GPL-2.0
/*
 * The virtual disk server (vds) in the service domain, the peer of
 * sunvdc.c.  See vds.h.
 *
 * Descriptors are served in the order their DRING_DATA messages came, one
 * after the other, by the server's own thread: each finishes at
 * max(now, the previous one's end) + its service time, and the thread
 * sleeps until then with clock_nanosleep's precision.  A paused server
 * holds the messages it gets and serves them, still in order, when it is
 * resumed, all of them or a given number.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/queue.h>

#include "vds.h"
#include "../../server/mq/log.h"

struct vds_msg {
	struct vds *vds;
	uint64_t sid;
	uint32_t idx;
	uint64_t due_ns; /* when the server is done with it */
	TAILQ_ENTRY(vds_msg) entry;
};

TAILQ_HEAD(vds_msg_list, vds_msg);

struct vds {
	struct mq_device *mdev;
	struct vds_params p;
	pthread_mutex_t *lock; /* the channel lock */
	struct vdc_port *port;
	struct vio_dring_state *dr; /* the client's ring, exported to us */
	struct media *store;	    /* the disk's bytes (media=) */
	pthread_t thread;
	pthread_cond_t kick;
	bool kick_ready, stop;
	struct vds_msg_list ready; /* scheduled, in due order */

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

/* Queue msg to be served after the descriptors before it; lock held. */
static void vds_schedule(struct vds *vds, struct vds_msg *msg)
{
	uint64_t now = mq_now_ns(), start, bytes = 0;

	if (vds->dr->base && msg->idx < vds->dr->num_entries)
		bytes = vio_dring_entry(vds->dr, msg->idx)->size;
	start = vds->busy_until_ns > now ? vds->busy_until_ns : now;
	vds->busy_until_ns = start + vds_service_ns(vds, bytes);
	msg->due_ns = vds->busy_until_ns;
	TAILQ_INSERT_TAIL(&vds->ready, msg, entry);
	pthread_cond_signal(&vds->kick);
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

		int err;

		if (desc->operation == VD_OP_BREAD)
			err = media_read(vds->store, c->cookie_addr,
					 c->cookie_size, off);
		else
			err = media_write(vds->store, c->cookie_addr,
					  c->cookie_size, off);
		if (err)
			return err == ENOMEM ? ENOSPC : err;
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

static void vds_serve(struct vds_msg *msg)
{
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

/* The server's thread: each message at its due time, in order. */
static void *vds_thread(void *arg)
{
	struct vds *vds = arg;
	struct vds_msg *msg;
	struct timespec ts;

	pthread_mutex_lock(vds->lock);
	while (!vds->stop) {
		msg = TAILQ_FIRST(&vds->ready);
		if (!msg) {
			pthread_cond_wait(&vds->kick, vds->lock);
			continue;
		}
		if (mq_now_ns() < msg->due_ns) {
			ts.tv_sec = msg->due_ns / 1000000000ull;
			ts.tv_nsec = msg->due_ns % 1000000000ull;
			pthread_cond_timedwait(&vds->kick, vds->lock, &ts);
			continue;
		}
		TAILQ_REMOVE(&vds->ready, msg, entry);
		pthread_mutex_unlock(vds->lock);
		vds_serve(msg);
		pthread_mutex_lock(vds->lock);
	}
	while ((msg = TAILQ_FIRST(&vds->ready))) {
		TAILQ_REMOVE(&vds->ready, msg, entry);
		free(msg);
	}
	pthread_mutex_unlock(vds->lock);
	return NULL;
}

void vds_link_reset(struct vds *vds)
{
	pthread_mutex_lock(vds->lock);
	vds->sid++;
	vds_drop_held(vds);
	vdc_link_event(vds->port, LDC_EVENT_RESET);
	pthread_mutex_unlock(vds->lock);
}

void vds_link_down(struct vds *vds)
{
	pthread_mutex_lock(vds->lock);
	vds->link_up = false;
	vds->sid++;
	vds_drop_held(vds);
	vdc_link_event(vds->port, LDC_EVENT_RESET);
	pthread_mutex_unlock(vds->lock);
}

void vds_link_up(struct vds *vds)
{
	bool was_up;

	pthread_mutex_lock(vds->lock);
	was_up = vds->link_up;
	vds->link_up = true;
	if (!was_up)
		vdc_link_event(vds->port, LDC_EVENT_UP);
	pthread_mutex_unlock(vds->lock);
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

static void vds_free(struct vds *vds)
{
	if (vds->kick_ready)
		pthread_cond_destroy(&vds->kick);
	media_close(vds->store);
	free(vds);
}

struct vds *vds_create(struct mq_device *mdev, const struct vds_params *p,
		       pthread_mutex_t *lock, struct vdc_port *port,
		       struct vio_dring_state *dr)
{
	struct vds *vds = calloc(1, sizeof(*vds));
	pthread_condattr_t attr;
	int err;

	if (!vds) {
		media_close(p->media);
		return NULL;
	}
	vds->mdev = mdev;
	vds->p = *p;
	vds->lock = lock;
	vds->port = port;
	vds->dr = dr;
	vds->link_up = true;
	vds->sid = 1;
	TAILQ_INIT(&vds->held);
	TAILQ_INIT(&vds->ready);
	vds->store = p->media;
	vds->p.media = NULL;
	err = pthread_condattr_init(&attr);
	if (!err) {
		err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		if (!err)
			err = pthread_cond_init(&vds->kick, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (err)
		goto fail;
	vds->kick_ready = true;
	err = pthread_create(&vds->thread, NULL, vds_thread, vds);
	if (err) {
		pr_err("sunvdc: cannot start the service domain thread: %s",
		       strerror(err));
		goto fail;
	}
	pthread_setname_np(vds->thread, "sunvdc-vds");
	return vds;
fail:
	vds_free(vds);
	return NULL;
}

void vds_destroy(struct vds *vds)
{
	if (!vds)
		return;
	pthread_mutex_lock(vds->lock);
	vds->dead = true;
	vds->link_up = false;
	vds->stop = true;
	vds_drop_held(vds);
	pthread_cond_signal(&vds->kick);
	pthread_mutex_unlock(vds->lock);
	/* What the thread still holds is dropped (dead). */
	pthread_join(vds->thread, NULL);
	vds_free(vds);
}
