/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A Ceph RBD image through librbd's C API: the connection, the image, and
 * asynchronous I/O whose completions run on a thread of ours.  librbd calls
 * back on its own threads; the callback only hands the completion over
 * (an eventfd wake of our irq thread), where the I/O is finished, a FUA
 * write's flush started and the submitter's end function called.
 *
 * Shared by the rbd device (backends/rbd/rbd.c) and the rbd media store.
 */
#ifndef MQBLK_RBD_CLIENT_H
#define MQBLK_RBD_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "../common/irq.h"
#include "../../server/mq/genhd.h"
#include "../../server/mq/params.h"

struct rbd_client;

struct rbd_client_opts {
	const char *pool;
	const char *image;
	const char *conf;     /* ceph.conf; NULL: librados's search */
	const char *id;	      /* client name without "client." */
	const char *keyring;  /* NULL: what ceph.conf says */
	const char *snap;     /* NULL: the head; else read-only */
	uint64_t create_size; /* 0: the image must exist */
	bool cache;	      /* librbd's cache */
	bool read_only;
	unsigned int connect_timeout_s;
	unsigned int io_timeout_ms; /* 0: wait for ever */
	const char *name;	    /* threads and log lines: "rbd0" */
};

/* The keys both the device and the store read, with their help lines. */
/* clang-format off */
#define RBD_CLIENT_PARAMS \
	{"conf", NULL, "ceph.conf path (default: librados's search)"}, \
	{"id", "admin", "cephx user name, without \"client.\""}, \
	{"keyring", NULL, "keyring file (default: what ceph.conf says)"}, \
	{"snap", NULL, "export this snapshot, read-only"}, \
	{"create", NULL, \
	 "create the image with this size (bytes, K/M/G/T) if it is missing"}, \
	{"cache", "off", \
	 "librbd's cache: on (writeback after the first flush) or off"}, \
	{"connect_timeout", "10", \
	 "seconds to reach the monitors at start-up, 1 to 3600"}
/* clang-format on */

/*
 * Read conf, id, keyring, snap, create, cache and connect_timeout into o
 * (pool and image are the caller's).  -1 with e set on a bad value.
 */
int rbd_client_read_params(struct mq_params *p, struct rbd_client_opts *o,
			   struct mq_err *e);

/*
 * Connect within connect_timeout, open (or create) the image.  On failure
 * one line in e: what failed, the monitor address and the reason.
 */
int rbd_client_open(const struct rbd_client_opts *o, struct rbd_client **cp,
		    struct mq_err *e);
/* No I/O may be in flight.  Flushes librbd's cache first.  NULL is fine. */
void rbd_client_close(struct rbd_client *c);

uint64_t rbd_client_size(const struct rbd_client *c);
bool rbd_client_read_only(const struct rbd_client *c);
/* "rbd/img@snap on 127.0.0.1:6789" for descriptions. */
const char *rbd_client_desc(const struct rbd_client *c);
/* The discard granularity librbd keeps (rbd_discard_granularity_bytes). */
unsigned int rbd_client_discard_granularity(const struct rbd_client *c);
/* The image's object size (4 MiB unless it was made otherwise). */
unsigned int rbd_client_object_size(const struct rbd_client *c);
/* Does block status tell holes (fast-diff)? */
bool rbd_client_has_extents(const struct rbd_client *c);

enum rbd_aio_op {
	RBD_AIO_READ,
	RBD_AIO_WRITE,
	RBD_AIO_FLUSH,
	RBD_AIO_DISCARD,
	RBD_AIO_WRITE_ZEROES,
};

#define RBD_AIO_FUA	(1u << 0) /* WRITE, WRITE_ZEROES: flush before the end */
#define RBD_AIO_NOUNMAP (1u << 1) /* WRITE_ZEROES: keep the range allocated */

struct rbd_aio;
typedef void(rbd_aio_end_fn)(struct rbd_aio *aio);

struct rbd_aio {
	/* Filled by the submitter. */
	enum rbd_aio_op op;
	unsigned int flags;
	uint64_t offset, len;	 /* bytes */
	const struct iovec *iov; /* READ, WRITE */
	int iovcnt;
	rbd_aio_end_fn *end; /* on the client's thread */
	void *private;
	/*
	 * Set before end: 0 or a positive errno.  A timeout (io_timeout) is
	 * EIO; every failure has been logged, naming the client.
	 */
	int status;

	/* The client's. */
	struct rbd_client *c;
	struct irq_work work;
	void *completion;
	bool flushing; /* the FUA flush after the write */
};

/* Start aio; it always ends through aio->end, on the client's thread. */
void rbd_client_submit(struct rbd_client *c, struct rbd_aio *aio);

/*
 * Holes from rbd_diff_iterate2 when fast-diff is enabled and valid; else
 * everything is data.  Blocks.  0 or a positive errno.
 */
int rbd_client_extents(struct rbd_client *c, uint64_t offset, uint64_t len,
		       extent_fn *fn, void *arg);
/* Blocking flush (graceful shutdown).  0 or a positive errno. */
int rbd_client_flush(struct rbd_client *c);

#endif
