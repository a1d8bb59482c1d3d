/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The device layer's interface to front ends: a registry of drivers
 * (device models), written once at start-up, and the devices made from
 * them.  Front ends see devices, their gendisks and the request core;
 * never a driver's insides.
 */
#ifndef MQBLK_DEVICE_H
#define MQBLK_DEVICE_H

#include "../server/mq/params.h"
#include "../server/mq/genhd.h"

/* A key a driver takes: for --help, docs and "accepted:" error lines. */
struct mq_param_spec {
	const char *key;
	const char *def; /* default, as text; NULL if none */
	const char *help;
	/*
	 * A heading for --help, printed above this key when it differs from
	 * the previous key's (ide: the keys of a disk, then of a CD); NULL
	 * for none.
	 */
	const char *group;
};

struct mq_device;
struct media;
struct media_open_args;

struct mq_driver {
	const char *name;
	const char *description;	    /* one line */
	const struct mq_param_spec *params; /* ends with { NULL } */
	/*
	 * Read the keys, build tag sets, queues and gendisks, and add each
	 * gendisk with mq_device_add_disk().  On failure set e, undo what
	 * was done and return -1.
	 */
	int (*probe)(struct mq_device *dev, struct mq_params *p,
		     struct mq_err *e);
	/* Tear down everything probe made.  No I/O is in flight. */
	void (*remove)(struct mq_device *dev);
	/* Make everything written so far durable (graceful shutdown). */
	int (*sync)(struct mq_device *dev);
	/*
	 * Optional: would these keys make zoned disks?  Asked before the
	 * device is made (a front end picks its threading by it); must not
	 * read the keys, only peek (mq_params_peek).
	 */
	bool (*zoned)(const struct mq_params *p);
	/*
	 * Set by a model that cannot keep its media in a store (why, for
	 * the error line): the device layer then refuses media=.
	 */
	const char *no_media;
};

#define MQ_MAX_DISKS 64
/* Queues a device keeps for itself, per device (sx8's out-of-band queue). */
#define MQ_MAX_INTERNAL 4

struct mq_device {
	const struct mq_driver *driver;
	struct gendisk *disks[MQ_MAX_DISKS];
	struct mq_bdev *bdevs[MQ_MAX_DISKS]; /* disks[i]->bdev, kept here */
	unsigned int nr_disks;
	/*
	 * Queues that are no export (sx8's out-of-band queue), each carried
	 * by a gendisk for its name, attrs and faults: front ends never
	 * serve them, the control plane shows their queue and attributes
	 * (mq_device_add_internal).
	 */
	struct gendisk *internal[MQ_MAX_INTERNAL];
	unsigned int nr_internal;
	void *private_data;
	/* Multiplies every modelled delay; 0 turns them off. */
	double time_scale;
	/* Request timeout for the device's tag sets, ms (key io_timeout). */
	unsigned int io_timeout_ms;
	/* Software queues per queue: the front end's submitting threads. */
	unsigned int nr_ctx;
	/* While probe runs: its keys, and why mq_device_add_disk refused. */
	struct mq_params *probe_params;
	struct mq_err probe_err;
};

/*
 * The queue key of zoned disks, read where the disk is added; a zoned
 * driver puts this entry in its params.
 */
#define MQ_ZONE_WRITE_PLUGGING_PARAM                                                        \
	{                                                                                   \
		"zone_write_plugging", "1",                                                 \
			"zoned: 1 serialises each zone's writes in the core (Linux 6.10); " \
			"0 leaves their order to mq-deadline, refusing bfq and kyber"       \
	}

/* Keys every device takes besides its driver's own ("device" apart). */
extern const struct mq_param_spec mq_common_params[];

/* The drivers compiled in, in the order --help lists them. */
extern const struct mq_driver *const mq_drivers[];

const struct mq_driver *mq_driver_find(const char *name);
/* "null, ram, file" for error lines. */
void mq_driver_names(char *buf, size_t len);

/*
 * Make a device from parameters: "device" names the driver; "size",
 * "time_scale" and "io_timeout" are common to all.  Any key neither the
 * common code nor the driver read is refused, naming the accepted keys.
 */
int mq_device_create(struct mq_params *p, unsigned int nr_ctx,
		     struct mq_device **devp, struct mq_err *e);
void mq_device_destroy(struct mq_device *dev);
/*
 * Would the device these keys make have zoned disks?  A front end that
 * may reorder a connection's requests between threads must not for these:
 * a zone's writes must reach the core in the order they were sent.
 */
bool mq_device_params_zoned(const struct mq_params *p);
int mq_device_sync(struct mq_device *dev);

/*
 * Add a disk the driver has set up (limits, zones, capacity), as Linux's
 * device_add_disk: here the disk gets its I/O scheduler, as
 * elevator_init_mq gives it there: the default policy, then the rules=
 * and scheduler= keys of the device being probed, then iosched.*.  -1
 * with errno set (EINVAL when the scheduler keys are refused, the reason
 * then reaching mq_device_create's error line).
 */
int mq_device_add_disk(struct mq_device *dev, struct gendisk *disk);
struct gendisk *mq_device_find_disk(struct mq_device *dev, const char *name);
/*
 * Publish a queue of the device's own that is no export: the control tree
 * shows it under its disk's name, its attrs directly beneath, so that its
 * state can be read and a scheduler written to it is refused with the
 * policy's reason.  It gets the default policy only (none for NO_SCHED),
 * never the user's scheduler keys, which are the exports'.  -1 with errno.
 */
int mq_device_add_internal(struct mq_device *dev, struct gendisk *disk);
/*
 * Give an added disk another name (the server's other disks have its
 * own): its queue and the description its driver wrote follow, and so do
 * the driver's log lines where the driver names the disk by its gendisk.
 * -1 with errno ENAMETOOLONG if name does not fit.
 */
int mq_disk_rename(struct gendisk *disk, const char *name);
/*
 * What both front ends tell clients about an export: "RAM disk ram0: 1 hw
 * queue, depth 128, scheduler bfq (row 5: single queue)".
 */
void mq_disk_describe(struct gendisk *disk, char *buf, size_t len);

/*
 * The store of a device (or of one of its drives: prefix "hdb." reads
 * hdb.media), from the key every model takes, media=ram|file:PATH|
 * nbd:URI|rbd:POOL/IMAGE, or from the model's older key for a file,
 * synonym (image=PATH is media=file:PATH; NULL for none).  Neither given:
 * def ("ram"), or NULL for no store (*mp NULL, 0 returned).  Both given:
 * refused.  a->key and a->name are filled here; the store reads its own
 * keys (nbd_connections, ...) from p.  -1 with e set.
 */
int mq_device_open_media(struct mq_device *dev, struct mq_params *p,
			 const char *prefix, const char *synonym,
			 const char *def, struct media_open_args *a,
			 struct media **mp, struct mq_err *e);

/* A modelled delay in ns, scaled by time_scale. */
static inline uint64_t mq_device_delay_ns(const struct mq_device *dev,
					  double nominal_ns)
{
	return (uint64_t)(nominal_ns * dev->time_scale);
}

#endif
