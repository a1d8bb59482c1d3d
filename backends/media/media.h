/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Media stores: where a device model keeps its bytes, apart from how the
 * model behaves.  A device's timing and queue semantics are the model's;
 * the store only holds the bytes, in memory (ram), in a file or host block
 * device (file), in another NBD server (nbd) or in a Ceph RBD image (rbd).
 *
 * A store is opened from a media string, "ram", "file:PATH", "nbd:URI" or
 * "rbd:POOL/IMAGE", plus the device's keys (the store reads its own, so
 * that a key nobody read is still refused by the device layer).
 *
 * I/O is asynchronous: fill a struct media_io and media_submit() it.  The
 * store ends it by calling media_io_end(), which runs io->end_io:
 *
 *   - on io->irq's thread when the submitter gave one (a device's
 *     interrupt thread, backends/common/irq.h): the device then gets its
 *     completion where its model runs, exactly as its timers do;
 *   - otherwise on the thread the store ended it on, which is always the
 *     submitter's own thread (ram and file end I/O inline, before
 *     media_submit returns) or a thread the store owns (nbd's poll
 *     thread, the completion thread media_io_end_async hands over to):
 *     never a library's internal thread (libnbd's or librbd's callbacks).
 *
 * A store whose library calls back on threads of its own (librbd) ends
 * its I/O with media_io_end_async(), which hands the completion over to
 * io->irq, or to a completion thread the media layer keeps for the store
 * (opened when its ops have MEDIA_OPS_LIBRARY_THREADS).
 *
 * media_rw() and friends are the blocking convenience for models whose
 * "hardware" thread is synchronous: submit and wait.
 */
#ifndef MQBLK_MEDIA_H
#define MQBLK_MEDIA_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/irq.h"
#include "../../server/mq/genhd.h"
#include "../../server/mq/params.h"

struct media;
struct media_io;

/* What a store does; mirrors NBD's flags so that they pass through. */
#define MEDIA_CAN_FLUSH	     (1u << 0) /* has a volatile cache to flush */
#define MEDIA_CAN_FUA	     (1u << 1) /* MEDIA_IO_FUA is honoured natively */
#define MEDIA_CAN_TRIM	     (1u << 2) /* DISCARD does something */
#define MEDIA_CAN_ZERO	     (1u << 3) /* WRITE_ZEROES without writing data */
#define MEDIA_CAN_FAST_ZERO  (1u << 4) /* WRITE_ZEROES never writes zeroes */
#define MEDIA_CAN_EXTENTS    (1u << 5) /* holes are reported */
#define MEDIA_CAN_MULTI_CONN (1u << 6) /* a flush covers every writer */
/* Zeroing unmapped ranges (DISCARD, unmapping WRITE_ZEROES) reads back 0. */
#define MEDIA_TRIM_ZEROES (1u << 7)

enum media_op {
	MEDIA_READ,
	MEDIA_WRITE,
	MEDIA_FLUSH,
	MEDIA_DISCARD,	    /* contents afterwards: unspecified */
	MEDIA_WRITE_ZEROES, /* reads back as zeroes afterwards */
};

/*
 * media_io.flags.  Every store honours FUA: natively (MEDIA_CAN_FUA) or
 * with a flush after the write.
 */
#define MEDIA_IO_FUA	 (1u << 0) /* WRITE/WRITE_ZEROES durable at end */
#define MEDIA_IO_NOUNMAP (1u << 1) /* WRITE_ZEROES: keep blocks allocated */

typedef void(media_end_io_t)(struct media_io *io);

struct media_io {
	/* Filled by the submitter. */
	enum media_op op;
	uint64_t offset; /* bytes */
	uint64_t len;	 /* bytes; 0 for FLUSH; READ/WRITE below 4 GiB */
	/*
	 * READ and WRITE.  The submitter leaves it alone until end_io: the
	 * nbd and rbd stores send writes straight from it.
	 */
	void *buf;
	unsigned int flags;
	/* Where end_io runs (see above); NULL: the store's thread. */
	struct irq_thread *irq;
	media_end_io_t *end_io;
	void *private;

	/* Set before end_io: 0 or a positive errno (EIO, EROFS, ...). */
	int status;

	/* The media layer's and the store's. */
	struct media *media;
	struct irq_work work;	/* the hand-over to irq */
	void *store_private[4]; /* a store's per-I/O scratch space */
	struct media_io *next;	/* a store's lists */
};

/* What media_open() is told by the device. */
struct media_open_args {
	/*
	 * The size the device wants, bytes.  ram: the store's size
	 * (required).  file: 0 takes the file's size, more extends a
	 * regular file.  nbd/rbd: 0 takes the remote's size, anything else
	 * must not exceed it (the device then uses the first size bytes).
	 */
	uint64_t size;
	/* The device's logical block size: the store's size is rounded to it.
	 */
	unsigned int block_size;
	bool read_only; /* open read-only (a CD, readonly=1) */
	/* file: O_DIRECT and O_DSYNC, as the file device's direct= and sync=.
	 */
	bool direct;
	bool sync;
	/*
	 * The key the user gave the string with, for error lines
	 * ("media", "image", "file", "nbd").
	 */
	const char *key;
	/* Name for threads and log lines ("hda", "sx8p0"). */
	const char *name;
	/*
	 * The device's keys: a store reads its own here (nbd_connections,
	 * retry, conf, snap, ...); may be NULL (then defaults).
	 */
	struct mq_params *params;
	/* Request timeout for the remote stores, ms (0: their default). */
	unsigned int io_timeout_ms;
};

struct media_ops {
	const char *name;   /* "ram", "file", "nbd", "rbd" */
	const char *usage;  /* "file:PATH", for error lines and --help */
	unsigned int flags; /* MEDIA_OPS_* */
	/*
	 * Open: arg is the text after "NAME:" (NULL after plain "NAME").
	 * Set m->size, m->caps, m->read_only and m->priv; on failure set e
	 * (one line, naming the key and the reason) and return -1.
	 */
	int (*open)(struct media *m, const char *arg,
		    const struct media_open_args *a, struct mq_err *e);
	/* Every I/O has ended.  Free what open made. */
	void (*close)(struct media *m);
	/* Start io; end it with media_io_end() or media_io_end_async(). */
	void (*submit)(struct media *m, struct media_io *io);
	/*
	 * Holes and zeroes in [offset, offset + len), as gendisk extents;
	 * may block.  NULL: everything is data.  0 or an errno.
	 */
	int (*extents)(struct media *m, uint64_t offset, uint64_t len,
		       extent_fn *fn, void *arg);
};

/* media_ops.flags */
/* The store's library calls back on its own threads: keep a cq thread. */
#define MEDIA_OPS_LIBRARY_THREADS (1u << 0)
/*
 * The store's I/O is memory copies that end inline: the blocking
 * wrappers below never sleep on it.  Every other store may (a file's
 * disk, a remote's round trip), so a model that calls them from
 * queue_rq asks the core for a BLOCKING tag set (media_may_sleep).
 */
#define MEDIA_OPS_NEVER_SLEEPS (1u << 1)
/* The store is another server: every call, extents too, is a round trip. */
#define MEDIA_OPS_REMOTE (1u << 2)

struct media {
	const struct media_ops *ops;
	uint64_t size;	   /* bytes, a multiple of the block size */
	unsigned int caps; /* MEDIA_CAN_* */
	bool read_only;
	unsigned int io_opt; /* the store's preferred I/O size, 0: none */
	char desc[256];	     /* "file:/tmp/x.img", for descriptions and logs */
	char name[32]; /* the device's name for it, from media_open_args */
	void *priv;    /* the store's */
	/* The media layer's: completion thread for MEDIA_OPS_LIBRARY_THREADS.
	 */
	struct irq_thread *cq;
};

/* The stores compiled in, in the order --help lists them; NULL-ended. */
extern const struct media_ops *const media_stores[];
const struct media_ops *media_store_find(const char *name);
/* "ram, file:PATH, nbd:URI" for error lines. */
void media_store_usages(char *buf, size_t len);

/*
 * Open a store from a media string ("ram", "file:PATH", "nbd:URI",
 * "rbd:POOL/IMAGE").  A bad string, an unknown store, a store that cannot
 * be opened: -1 and one line in e that names a->key.
 */
int media_open(const char *spec, const struct media_open_args *a,
	       struct media **mp, struct mq_err *e);
/* No I/O may be in flight.  NULL is fine. */
void media_close(struct media *m);

/* Start io on m (io->media is set here).  Never fails: errors end the io. */
void media_submit(struct media *m, struct media_io *io);
/* For stores: end io with status, on the thread rules above. */
void media_io_end(struct media_io *io, int status);
/* For stores on a library's thread: hand the completion over first. */
void media_io_end_async(struct media_io *io, int status);

/* Whether the blocking wrappers may sleep on m (see MEDIA_OPS_NEVER_SLEEPS). */
static inline bool media_may_sleep(const struct media *m)
{
	return !(m->ops->flags & MEDIA_OPS_NEVER_SLEEPS);
}

/*
 * The features a disk kept in m shows the front ends: DISK_EXTENTS_REMOTE
 * for a store on another server.  Models OR it into disk->features.
 */
static inline unsigned int media_disk_features(const struct media *m)
{
	return m && (m->ops->flags & MEDIA_OPS_REMOTE) ? DISK_EXTENTS_REMOTE
						       : 0;
}

/*
 * Blocking convenience: submit and wait; return 0 or a positive errno.
 * Safe from any thread but io->irq's own when the caller passes one (these
 * use no irq: the store's thread wakes the waiter).
 */
int media_rw(struct media *m, enum media_op op, void *buf, uint64_t len,
	     uint64_t offset, unsigned int flags);
static inline int media_read(struct media *m, void *buf, uint32_t len,
			     uint64_t offset)
{
	return media_rw(m, MEDIA_READ, buf, len, offset, 0);
}
static inline int media_write(struct media *m, const void *buf, uint32_t len,
			      uint64_t offset)
{
	return media_rw(m, MEDIA_WRITE, (void *)buf, len, offset, 0);
}
static inline int media_flush(struct media *m)
{
	return media_rw(m, MEDIA_FLUSH, NULL, 0, 0, 0);
}
static inline int media_discard(struct media *m, uint64_t len, uint64_t offset)
{
	return media_rw(m, MEDIA_DISCARD, NULL, len, offset, 0);
}
static inline int media_write_zeroes(struct media *m, uint64_t len,
				     uint64_t offset, unsigned int flags)
{
	return media_rw(m, MEDIA_WRITE_ZEROES, NULL, len, offset, flags);
}
/* Holes and zeroes; everything is data when the store cannot tell. */
int media_extents(struct media *m, uint64_t offset, uint64_t len, extent_fn *fn,
		  void *arg);

/* "read", "write", ... for log lines. */
const char *media_op_name(enum media_op op);

/*
 * Split "file:PATH" into the store name and its argument: copies the
 * name into name (at most len bytes) and returns the argument, or NULL
 * when there is none; -1 in *bad when spec is empty or the name too long.
 */
const char *media_spec_split(const char *spec, char *name, size_t len,
			     bool *bad);

#endif
