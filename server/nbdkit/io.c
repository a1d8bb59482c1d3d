// SPDX-License-Identifier: GPL-2.0
/*
 * The data path: each NBD command goes to the device layer's byte-granular
 * I/O (backends/bdev.h), which makes bios of it, submitted on the
 * software queue of the nbdkit worker thread that carries it, and the
 * thread sleeps until they complete.  nbdkit has no asynchronous reply,
 * so the queue depth a connection reaches is its thread count.
 *
 * The plugin advertises a minimum block size of 1 (plugin.c): nbdkit
 * cannot tell it whether a client asked for the block size, so every
 * misaligned request is served, by read-modify-write in the device layer.
 *
 * This path is benchmarked against nbdkit's memory plugin: for an aligned
 * request no allocation, no lock (reads), and no system call when the
 * device completes inline.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backends/bdev.h"
#include "plugin.h"
#include "server/mq/log.h"

enum {
	IO_PENDING,  /* submitted, the waiter has not slept yet */
	IO_SLEEPING, /* the waiter sleeps on the futex */
	IO_DONE,     /* bi_end_io ran; bio.bi_status is final */
};

struct mqblk_io {
	struct mq_bdev_io io;
	_Atomic uint32_t state;
};

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * May run on any thread, possibly inside mq_submit_bio() on the waiter's
 * own thread.  Once state is IO_DONE the waiter may return and its stack
 * frame (io) is gone, so the wake only uses the address.  A stale wake is
 * harmless: every futex waiter rechecks its word.
 */
static void mqblk_end_io(struct mq_bdev_io *bio)
{
	struct mqblk_io *io = bio->private;

	if (atomic_exchange_explicit(&io->state, IO_DONE,
				     memory_order_acq_rel) == IO_SLEEPING)
		futex_wake(&io->state);
}

static void mqblk_wait(struct mqblk_io *io)
{
	uint32_t s = IO_PENDING;

	if (!atomic_compare_exchange_strong_explicit(
		    &io->state, &s, IO_SLEEPING, memory_order_acquire,
		    memory_order_acquire))
		return; /* already done */
	do {
		futex_wait(&io->state, IO_SLEEPING);
	} while (atomic_load_explicit(&io->state, memory_order_acquire) !=
		 IO_DONE);
}

/*
 * Which software queue ("CPU") this worker thread submits on.  nbdkit's
 * worker threads live as long as their connection, so the thread id is
 * read once per thread.  This is a per-thread cache, not shared state.
 */
static __thread unsigned int mqblk_cpu = UINT_MAX;

static struct mq_ctx *mqblk_ctx(struct mq_queue *q)
{
	if (mqblk_cpu == UINT_MAX)
		mqblk_cpu = (unsigned int)gettid();
	return mq_get_ctx(q, mqblk_cpu);
}

/*
 * Submit one request on behalf of the handle's client and wait for it.
 * The device layer serves misaligned requests by read-modify-write
 * (backends/bdev.h), in stages: between them this thread carries on.
 */
static int mqblk_submit(struct mqblk_handle *h, enum req_op op, void *buf,
			uint32_t count, uint64_t offset, unsigned int flags)
{
	struct mq_ctx *ctx = mqblk_ctx(h->disk->queue);
	struct mqblk_io io = {
		.io =
			{
				.op = op,
				.offset = offset,
				.count = count,
				.buf = buf,
				.flags = flags,
				.submitter = h->client.id,
				.client = &h->client,
				.end_io = mqblk_end_io,
				.private = &io,
			},
	};

	atomic_init(&io.state, IO_PENDING);
	mq_bdev_io_submit(h->disk, ctx, &io.io);
	for (;;) {
		mqblk_wait(&io);
		atomic_store(&io.state, IO_PENDING);
		if (mq_bdev_io_continue(ctx, &io.io))
			break;
	}

	/* The device has logged why; the client gets the errno. */
	if (io.io.status) {
		nbdkit_set_error(blk_status_nbd_errno(io.io.status));
		return -1;
	}
	return 0;
}

static unsigned int fua_flag(uint32_t flags)
{
	return flags & NBDKIT_FLAG_FUA ? REQ_FUA : 0;
}

int mqblk_pread(void *handle, void *buf, uint32_t count, uint64_t offset,
		uint32_t flags)
{
	return mqblk_submit(handle, REQ_OP_READ, buf, count, offset, 0);
}

/* The device only reads from buf on a write, so dropping const is safe. */
int mqblk_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
		 uint32_t flags)
{
	return mqblk_submit(handle, REQ_OP_WRITE, (void *)buf, count, offset,
			    fua_flag(flags));
}

int mqblk_flush(void *handle, uint32_t flags)
{
	return mqblk_submit(handle, REQ_OP_FLUSH, NULL, 0, 0, 0);
}

int mqblk_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	return mqblk_submit(handle, REQ_OP_DISCARD, NULL, count, offset,
			    fua_flag(flags));
}

/*
 * Only called when the queue has write-zeroes (can_zero is true);
 * otherwise nbdkit writes zeroes itself.
 */
int mqblk_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct mqblk_handle *h = handle;
	unsigned int rq_flags = fua_flag(flags);

	if ((flags & NBDKIT_FLAG_FAST_ZERO) &&
	    !(h->disk->features & DISK_FAST_ZERO)) {
		nbdkit_set_error(ENOTSUP);
		return -1;
	}
	if (!(flags & NBDKIT_FLAG_MAY_TRIM))
		rq_flags |= REQ_NOUNMAP;
	return mqblk_submit(h, REQ_OP_WRITE_ZEROES, NULL, count, offset,
			    rq_flags);
}

struct mqblk_extents_walk {
	struct nbdkit_extents *extents;
	bool req_one;
	unsigned int nr; /* extents added */
	int err;	 /* from nbdkit_add_extent */
};

static int mqblk_add_extent(void *arg, uint64_t offset, uint64_t length,
			    unsigned int type)
{
	struct mqblk_extents_walk *w = arg;
	uint32_t nbd_type = 0;

	if (type & MQ_EXTENT_HOLE)
		nbd_type |= NBDKIT_EXTENT_HOLE;
	if (type & MQ_EXTENT_ZERO)
		nbd_type |= NBDKIT_EXTENT_ZERO;
	if (nbdkit_add_extent(w->extents, offset, length, nbd_type) == -1) {
		w->err = errno ? errno : EIO;
		return -1;
	}
	w->nr++;
	return w->req_one ? -1 : 0;
}

int mqblk_extents(void *handle, uint32_t count, uint64_t offset, uint32_t flags,
		  struct nbdkit_extents *extents)
{
	struct mqblk_handle *h = handle;
	struct mqblk_extents_walk w = {
		.extents = extents,
		.req_one = flags & NBDKIT_FLAG_REQ_ONE,
	};
	int r;

	r = h->disk->fops->extents(h->disk, offset, count, mqblk_add_extent,
				   &w);
	if (w.err) {
		nbdkit_set_error(w.err);
		return -1;
	}
	/* A walk we stopped for REQ_ONE is a success, whatever it returns. */
	if (r && !(w.req_one && w.nr)) {
		nbdkit_error("%s: extents: %s", h->disk->disk_name,
			     mq_strerror(r));
		nbdkit_set_error(r);
		return -1;
	}
	return 0;
}
