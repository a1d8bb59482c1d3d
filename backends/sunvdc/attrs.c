// SPDX-License-Identifier: GPL-2.0
/*
 * The faults a port's gendisk offers under EXPORT/fault/ and the state
 * it shows under EXPORT/device/ (see docs/devices.md, sunvdc).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "sunvdc.h"
#include "../../server/mq/log.h"

static int vdc_fault_ldc_reset(struct gendisk *disk, const char *value,
			       struct mq_err *e)
{
	struct vdc_port *port = disk->private_data;

	pr_warn(PFX "%s: ldc_reset fault: the channel resets", port->disk_name);
	vds_link_reset(port->vds);
	return 0;
}

static int vdc_fault_link_down(struct gendisk *disk, const char *value,
			       struct mq_err *e)
{
	struct vdc_port *port = disk->private_data;

	pr_warn(PFX "%s: link_down fault: the channel is down until link_up",
		port->disk_name);
	vds_link_down(port->vds);
	return 0;
}

static int vdc_fault_link_up(struct gendisk *disk, const char *value,
			     struct mq_err *e)
{
	struct vdc_port *port = disk->private_data;

	pr_warn(PFX "%s: link_up fault: the channel is up", port->disk_name);
	vds_link_up(port->vds);
	return 0;
}

static int vdc_fault_nack(struct gendisk *disk, const char *value,
			  struct mq_err *e)
{
	struct vdc_port *port = disk->private_data;

	pr_warn(PFX "%s: nack fault: the server NACKs the next descriptor",
		port->disk_name);
	vds_arm_nack(port->vds);
	return 0;
}

static int vdc_fault_number(const char *value, int64_t max, int64_t *n,
			    struct mq_err *e)
{
	int err;

	if (!value || !*value) {
		*n = 0;
		return 0;
	}
	err = mq_attr_number(value, 0, max, n);
	if (err)
		mq_err_set(e, "takes a count 0..%" PRId64 ", or nothing", max);
	return err;
}

static int vdc_fault_ldc_busy(struct gendisk *disk, const char *value,
			      struct mq_err *e)
{
	struct vdc_port *port = disk->private_data;
	int64_t n;
	int err = vdc_fault_number(value, 1000, &n, e);

	if (err)
		return err;
	if (!n)
		n = 1;
	pr_warn(PFX "%s: ldc_busy fault: the next %" PRId64
		    " sends find the channel full (EAGAIN)",
		port->disk_name, n);
	vds_set_busy(port->vds, (unsigned int)n);
	return 0;
}

static int vdc_fault_vds_pause(struct gendisk *disk, const char *value,
			       struct mq_err *e)
{
	struct vdc_port *port = disk->private_data;

	pr_warn(PFX "%s: vds_pause fault: the server stops serving descriptors",
		port->disk_name);
	vds_pause(port->vds);
	return 0;
}

static int vdc_fault_vds_resume(struct gendisk *disk, const char *value,
				struct mq_err *e)
{
	struct vdc_port *port = disk->private_data;
	int64_t n;
	int err = vdc_fault_number(value, INT32_MAX, &n, e);

	if (err)
		return err;
	pr_warn(PFX "%s: vds_resume fault: the server serves %s",
		port->disk_name,
		n ? "the given number of descriptors" : "again");
	vds_resume(port->vds, (unsigned long)n);
	return 0;
}

const struct disk_fault vdc_faults[] = {
	{"ldc_reset",
	 "the channel resets: requests in flight are requeued, then the "
	 "handshake is done again after ldc_handshake_ms",
	 vdc_fault_ldc_reset},
	{"link_down", "the channel goes down and stays down until link_up",
	 vdc_fault_link_down},
	{"link_up", "the channel comes back up; the handshake follows",
	 vdc_fault_link_up},
	{"nack",
	 "the server NACKs the next descriptor; the driver does nothing with "
	 "it",
	 vdc_fault_nack},
	{"ldc_busy", "the next N sends (default 1) get EAGAIN",
	 vdc_fault_ldc_busy},
	{"vds_pause", "the server stops serving descriptors",
	 vdc_fault_vds_pause},
	{"vds_resume",
	 "the server serves N more descriptors (empty: all, and "
	 "stops pausing)",
	 vdc_fault_vds_resume},
	{NULL},
};

static int vdc_show_link_state(struct gendisk *disk, char *buf, size_t len)
{
	struct vdc_port *port = disk->private_data;
	const char *s;

	pthread_mutex_lock(&port->vio.lock);
	if (port->drain)
		s = "draining";
	else if (port->vio.hs_complete)
		s = "up";
	else if (vds_link_is_up(port->vds))
		s = "handshake";
	else
		s = "down";
	pthread_mutex_unlock(&port->vio.lock);
	return snprintf(buf, len, "%s", s);
}

static int vdc_show_ring_avail(struct gendisk *disk, char *buf, size_t len)
{
	struct vdc_port *port = disk->private_data;
	struct vio_dring_state *dr = &port->vio.drings[VIO_DRIVER_TX_RING];
	uint32_t avail;

	pthread_mutex_lock(&port->vio.lock);
	avail = dr->base ? vdc_tx_dring_avail(dr) : 0;
	pthread_mutex_unlock(&port->vio.lock);
	return snprintf(buf, len, "%u", avail);
}

static int vdc_show_vio_version(struct gendisk *disk, char *buf, size_t len)
{
	struct vdc_port *port = disk->private_data;
	struct vio_version ver;

	pthread_mutex_lock(&port->vio.lock);
	ver = port->vio.ver;
	pthread_mutex_unlock(&port->vio.lock);
	return snprintf(buf, len, "%u.%u", ver.major, ver.minor);
}

static int vdc_show_vdisk_mtype(struct gendisk *disk, char *buf, size_t len)
{
	struct vdc_port *port = disk->private_data;

	switch (port->vdisk_mtype) {
	case VD_MEDIA_TYPE_CD:
		return snprintf(buf, len, "cd");
	case VD_MEDIA_TYPE_DVD:
		return snprintf(buf, len, "dvd");
	default:
		return snprintf(buf, len, "disk");
	}
}

static int vdc_show_vds_paused(struct gendisk *disk, char *buf, size_t len)
{
	struct vdc_port *port = disk->private_data;
	bool paused;

	pthread_mutex_lock(&port->vio.lock);
	paused = vds_paused(port->vds);
	pthread_mutex_unlock(&port->vio.lock);
	return snprintf(buf, len, "%d", paused);
}

static int vdc_show_served(struct gendisk *disk, char *buf, size_t len)
{
	struct vdc_port *port = disk->private_data;
	unsigned long n;

	pthread_mutex_lock(&port->vio.lock);
	n = vds_served(port->vds);
	pthread_mutex_unlock(&port->vio.lock);
	return snprintf(buf, len, "%lu", n);
}

#define VDC_SHOW_COUNTER(_name)                                                \
	static int vdc_show_##_name(struct gendisk *disk, char *buf,           \
				    size_t len)                                \
	{                                                                      \
		struct vdc_port *port = disk->private_data;                    \
                                                                               \
		return snprintf(buf, len, "%lu", atomic_load(&port->_name));   \
	}

VDC_SHOW_COUNTER(requeued)
VDC_SHOW_COUNTER(drained)
VDC_SHOW_COUNTER(resets)
VDC_SHOW_COUNTER(nacks)
VDC_SHOW_COUNTER(eagain)
VDC_SHOW_COUNTER(dev_resource)
VDC_SHOW_COUNTER(reset_waits)

const struct disk_attr vdc_attrs[] = {
	{"link_state",
	 vdc_show_link_state}, /* up, handshake, down or draining */
	{"ring_avail", vdc_show_ring_avail},
	{"vio_version", vdc_show_vio_version},
	{"vdisk_mtype", vdc_show_vdisk_mtype},
	{"requeued", vdc_show_requeued},
	{"drained", vdc_show_drained},
	{"resets", vdc_show_resets},
	{"nacks", vdc_show_nacks},
	{"eagain", vdc_show_eagain},
	{"dev_resource", vdc_show_dev_resource},
	{"reset_waits", vdc_show_reset_waits},
	{"vds_paused", vdc_show_vds_paused},
	{"served", vdc_show_served},
	{NULL},
};
