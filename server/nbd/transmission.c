// SPDX-License-Identifier: GPL-2.0
/*
 * The transmission phase: each request is checked as nbdkit checks it,
 * then goes to the device layer's byte-granular I/O (backends/bdev.h),
 * which submits its bios on the software queue of the loop thread that
 * owns the connection.  Nothing waits: the loop goes on reading requests
 * while the device works, and each completion queues its reply, in
 * whatever order the device finishes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mqblkd.h"

uint16_t nbd_export_eflags(const struct mq_export *e, bool structured)
{
	const struct queue_limits *lim = &e->disk->queue->limits;
	uint16_t f =
		NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_CACHE;

	if (e->readonly) {
		f |= NBD_FLAG_READ_ONLY;
	} else {
		/* The core emulates FUA where the device cannot do it. */
		f |= NBD_FLAG_SEND_FUA | NBD_FLAG_SEND_WRITE_ZEROES;
		if (lim->max_discard_sectors)
			f |= NBD_FLAG_SEND_TRIM;
		if ((e->disk->features & DISK_FAST_ZERO) &&
		    lim->max_write_zeroes_sectors)
			f |= NBD_FLAG_SEND_FAST_ZERO;
	}
	if (lim->rotational)
		f |= NBD_FLAG_ROTATIONAL;
	if (structured)
		f |= NBD_FLAG_SEND_DF;
	if (e->disk->features & DISK_MULTI_CONN)
		f |= NBD_FLAG_CAN_MULTI_CONN;
	return f;
}

/*
 * Requests and their buffers are kept per connection for reuse: in
 * steady state a connection allocates nothing, and large buffers are not
 * mapped, faulted in and unmapped again for every request.
 */
#define REQ_CACHE_MAX	    64
#define REQ_CACHE_MAX_BYTES (64u << 20)
#define REQ_CACHE_SEARCH    8

void nbd_req_free(struct nbd_req *req)
{
	struct nbd_conn *c = req->conn;

	c->req_bytes -= req->buf_cap;
	if (req->large)
		c->loop->nr_large--;
	free(req->extra);
	if (c->nr_req_cache < REQ_CACHE_MAX &&
	    c->req_cache_bytes + req->buf_cap <= REQ_CACHE_MAX_BYTES) {
		req->next_done = c->req_cache;
		c->req_cache = req;
		c->nr_req_cache++;
		c->req_cache_bytes += req->buf_cap;
		return;
	}
	free(req->buf);
	free(req);
}

void nbd_req_cache_drop(struct nbd_conn *c)
{
	struct nbd_req *req;

	while ((req = c->req_cache)) {
		c->req_cache = req->next_done;
		free(req->buf);
		free(req);
	}
	c->nr_req_cache = 0;
	c->req_cache_bytes = 0;
}

/* A cached request whose buffer is big enough, or else the first one. */
static struct nbd_req *req_cache_take(struct nbd_conn *c, size_t buflen)
{
	struct nbd_req **pp = &c->req_cache, *req;
	unsigned int i;

	for (i = 0; *pp && i < REQ_CACHE_SEARCH; i++, pp = &(*pp)->next_done)
		if ((*pp)->buf_cap >= buflen)
			break;
	if (!*pp || i == REQ_CACHE_SEARCH)
		pp = &c->req_cache;
	req = *pp;
	if (!req)
		return NULL;
	*pp = req->next_done;
	c->nr_req_cache--;
	c->req_cache_bytes -= req->buf_cap;
	return req;
}

static struct nbd_req *req_alloc(struct nbd_conn *c, uint16_t cmd,
				 uint16_t flags, uint64_t handle,
				 uint64_t offset, uint32_t count, size_t buflen)
{
	struct nbd_req *req = req_cache_take(c, buflen);
	void *buf = NULL;
	size_t cap = 0;

	if (req) {
		buf = req->buf;
		cap = req->buf_cap;
		memset(req, 0, sizeof(*req));
	} else {
		req = calloc(1, sizeof(*req));
		if (!req)
			return NULL;
	}
	/* Page-aligned: the file model may do O_DIRECT on it. */
	if (buflen > cap) {
		free(buf);
		cap = 0;
		if (posix_memalign(&buf, 4096, buflen)) {
			free(req);
			return NULL;
		}
		cap = buflen;
	}
	req->buf = buf;
	req->buf_cap = cap;
	c->req_bytes += cap;
	/* Adaptive polling does not spin while it moves (adaptive-poll.h). */
	req->large = buflen >= NBD_POLL_LARGE_IO;
	if (req->large)
		c->loop->nr_large++;
	req->conn = c;
	req->cmd = cmd;
	req->flags = flags;
	req->handle = handle;
	req->offset = offset;
	req->count = count;
	return req;
}

/*
 * A stage of the request's I/O ended.  Runs on any thread, possibly
 * inside mq_submit_bio() on our own loop: then the next stage or the
 * reply follows at once, without a hop.
 */
static void req_end_io(struct mq_bdev_io *io)
{
	struct nbd_req *req = io->private;
	struct nbd_loop *l = req->conn->loop;

	if (nbd_current_loop() == l)
		nbd_req_finish(req);
	else
		nbd_loop_complete(l, req);
}

static struct mq_ctx *conn_ctx(struct nbd_conn *c)
{
	return mq_get_ctx(c->exp->disk->queue, c->loop->index);
}

void nbd_req_finish(struct nbd_req *req)
{
	struct nbd_conn *c = req->conn;
	int err;

	/* The next stage (a read-modify-write's write) is on its way. */
	if (!mq_bdev_io_continue(conn_ctx(c), &req->io))
		return;
	/* NBD has no zone resource errors: EIO, as before them. */
	err = blk_status_nbd_errno(req->io.status);
	c->inflight--;
	c->loop->nr_awaited--;
	nbd_conn_mark_dirty(c);
	if (c->phase == PH_DEAD) {
		nbd_req_free(req);
		return;
	}
	if (err)
		log_debug("client %llu: %s of %u bytes at %llu: %s",
			  (unsigned long long)c->client.id,
			  nbd_cmd_name(req->cmd), req->count,
			  (unsigned long long)req->offset, strerror(err));
	nbd_reply_request(req, err);
}

/*
 * Hand the request to the device layer, which aligns it to the disk's
 * blocks where the client did not (read-modify-write) and emulates
 * WRITE_ZEROES where the queue has none.
 */
static void req_submit(struct nbd_req *req, enum req_op op, unsigned int flags)
{
	struct nbd_conn *c = req->conn;
	struct mq_bdev_io *io = &req->io;

	io->op = op;
	io->offset = op == REQ_OP_FLUSH ? 0 : req->offset;
	io->count = op == REQ_OP_FLUSH ? 0 : req->count;
	io->buf = req->buf;
	io->flags = flags;
	io->submitter = c->client.id;
	io->client = &c->client;
	io->end_io = req_end_io;
	io->private = req;
	c->inflight++;
	c->loop->nr_awaited++;
	mq_bdev_io_submit(c->exp->disk, conn_ctx(c), io);
}

/* 0, or the errno the request is refused with (and why, for the log). */
static int validate(struct nbd_conn *c, uint16_t cmd, uint16_t flags,
		    uint64_t off, uint32_t count, const char **why)
{
	const struct mq_export *e = c->exp;
	const struct queue_limits *lim = &e->disk->queue->limits;
	uint64_t size = get_capacity(e->disk) << SECTOR_SHIFT;
	const uint16_t known = NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE |
			       NBD_CMD_FLAG_DF | NBD_CMD_FLAG_REQ_ONE |
			       NBD_CMD_FLAG_FAST_ZERO;
	bool write_like = cmd == NBD_CMD_WRITE || cmd == NBD_CMD_TRIM ||
			  cmd == NBD_CMD_WRITE_ZEROES;

	switch (cmd) {
	case NBD_CMD_READ:
	case NBD_CMD_WRITE:
	case NBD_CMD_FLUSH:
	case NBD_CMD_TRIM:
	case NBD_CMD_CACHE:
	case NBD_CMD_WRITE_ZEROES:
	case NBD_CMD_BLOCK_STATUS:
		break;
	default:
		*why = "unknown command";
		return EINVAL;
	}
	if (write_like && e->readonly) {
		*why = "write to a read-only export";
		return EPERM;
	}
	if (flags & ~known) {
		*why = "unknown command flags";
		return EINVAL;
	}
	if ((flags & (NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_FAST_ZERO)) &&
	    cmd != NBD_CMD_WRITE_ZEROES) {
		*why = "NO_HOLE or FAST_ZERO on a command other than "
		       "WRITE_ZEROES";
		return EINVAL;
	}
	if ((flags & NBD_CMD_FLAG_DF) &&
	    (cmd != NBD_CMD_READ || !c->structured)) {
		*why = "DF without a structured READ";
		return EINVAL;
	}
	if ((flags & NBD_CMD_FLAG_REQ_ONE) && cmd != NBD_CMD_BLOCK_STATUS) {
		*why = "REQ_ONE on a command other than BLOCK_STATUS";
		return EINVAL;
	}
	if ((flags & NBD_CMD_FLAG_FUA) && e->readonly) {
		*why = "FUA was not advertised";
		return EINVAL;
	}
	if (cmd == NBD_CMD_FLUSH) {
		if (off || count) {
			*why = "FLUSH with an offset or a length";
			return EINVAL;
		}
		return 0;
	}
	if (!count) {
		*why = "zero-length request";
		return EINVAL;
	}
	if (off > size || count > size - off) {
		*why = "request beyond the end of the export";
		return cmd == NBD_CMD_WRITE || cmd == NBD_CMD_WRITE_ZEROES
			       ? ENOSPC
			       : EINVAL;
	}
	if ((cmd == NBD_CMD_READ || cmd == NBD_CMD_WRITE) &&
	    count > MQBLKD_MAX_PAYLOAD) {
		*why = "request larger than the maximum block size";
		return EINVAL;
	}
	if ((cmd == NBD_CMD_READ || write_like) && c->block_size_agreed &&
	    ((off | count) % lim->logical_block_size)) {
		*why = "request not aligned to the logical block size";
		return EINVAL;
	}
	if (cmd == NBD_CMD_TRIM && !lim->max_discard_sectors) {
		*why = "TRIM was not advertised";
		return EINVAL;
	}
	if (cmd == NBD_CMD_BLOCK_STATUS && !c->meta_base_alloc) {
		*why = "BLOCK_STATUS without base:allocation";
		return EINVAL;
	}
	if ((flags & NBD_CMD_FLAG_FAST_ZERO) &&
	    (!(e->disk->features & DISK_FAST_ZERO) ||
	     !lim->max_write_zeroes_sectors)) {
		*why = "this export cannot zero fast";
		return ENOTSUP;
	}
	return 0;
}

static unsigned int fua(uint16_t flags)
{
	return flags & NBD_CMD_FLAG_FUA ? REQ_FUA : 0;
}

struct bs_walk {
	uint8_t *d;
	uint32_t nr, max;
	uint32_t last_flags;
	uint64_t pos, end;
};

static int bs_extent(void *arg, uint64_t off, uint64_t len, unsigned int type)
{
	struct bs_walk *w = arg;
	uint64_t e_end = off + len;
	uint32_t flags = 0;

	if (type & MQ_EXTENT_HOLE)
		flags |= NBD_STATE_HOLE;
	if (type & MQ_EXTENT_ZERO)
		flags |= NBD_STATE_ZERO;
	/* Gaps and overlaps in the model's map are not ours to send. */
	if (off != w->pos || e_end <= off)
		return -1;
	if (e_end > w->end)
		e_end = w->end;
	if (w->nr && w->last_flags == flags) {
		put_be32(w->d + 8 * (w->nr - 1),
			 get_be32(w->d + 8 * (w->nr - 1)) +
				 (uint32_t)(e_end - off));
	} else {
		if (w->nr == w->max)
			return -1;
		put_be32(w->d + 8 * w->nr, (uint32_t)(e_end - off));
		put_be32(w->d + 8 * w->nr + 4, flags);
		w->last_flags = flags;
		w->nr++;
	}
	w->pos = e_end;
	return w->pos >= w->end ? -1 : 0;
}

static void block_status(struct nbd_conn *c, uint16_t flags, uint64_t handle,
			 uint64_t off, uint32_t count)
{
	struct gendisk *disk = c->exp->disk;
	struct nbd_req *req;
	struct bs_walk w = {
		.max = flags & NBD_CMD_FLAG_REQ_ONE ? 1 : MQBLKD_MAX_EXTENTS,
		.pos = off,
		.end = off + count,
	};
	int r = 0;

	req = req_alloc(c, NBD_CMD_BLOCK_STATUS, flags, handle, off, count, 0);
	if (req)
		req->extra = w.d = malloc(8 * w.max);
	if (!req || !req->extra) {
		if (req)
			nbd_req_free(req);
		nbd_reply_error(c, handle, NBD_CMD_BLOCK_STATUS, ENOMEM,
				"out of memory");
		return;
	}
	if (disk->fops && disk->fops->extents)
		r = disk->fops->extents(disk, off, count, bs_extent, &w);
	if (!w.nr) {
		if (r) {
			log_err("%s: extents: %s", disk->disk_name,
				strerror(r));
			nbd_req_free(req);
			nbd_reply_error(c, handle, NBD_CMD_BLOCK_STATUS, r,
					strerror(r));
			return;
		}
		/* No map: everything is data. */
		put_be32(w.d, count);
		put_be32(w.d + 4, 0);
		w.nr = 1;
	}
	req->nr_desc = w.nr;
	nbd_reply_block_status(req);
}

static void refuse(struct nbd_conn *c, uint64_t handle, uint16_t cmd, int err,
		   const char *why)
{
	log_debug("client %llu: %s refused: %s",
		  (unsigned long long)c->client.id, nbd_cmd_name(cmd), why);
	nbd_reply_error(c, handle, cmd, err, why);
}

void nbd_tx_request(struct nbd_conn *c)
{
	uint16_t flags = get_be16(c->hdr + 4);
	uint16_t cmd = get_be16(c->hdr + 6);
	uint64_t handle = get_be64(c->hdr + 8);
	uint64_t off = get_be64(c->hdr + 16);
	uint32_t count = get_be32(c->hdr + 24);
	const char *why = NULL;
	struct nbd_req *req;
	unsigned int f;
	int err;

	if (get_be32(c->hdr) != NBD_REQUEST_MAGIC) {
		nbd_conn_kill(c, "bad request magic");
		return;
	}
	/* The next header, unless this request says otherwise. */
	nbd_rx_expect(c, RX_REQ_HDR, c->hdr, NBD_REQUEST_LEN);
	if (cmd == NBD_CMD_DISC) {
		nbd_conn_close_after_flush(c, "client sent NBD_CMD_DISC");
		return;
	}

	err = validate(c, cmd, flags, off, count, &why);
	if (cmd == NBD_CMD_WRITE) {
		if (!err) {
			req = req_alloc(c, cmd, flags, handle, off, count,
					count);
			if (req) {
				c->rx_req = req;
				nbd_rx_expect(c, RX_REQ_DATA, req->buf, count);
				return;
			}
			err = ENOMEM;
			why = "out of memory";
		}
		/* The payload is on its way all the same: eat it. */
		if (count > MQBLKD_WRITE_SKIP_LIMIT) {
			refuse(c, handle, cmd, err, why);
			nbd_conn_close_after_flush(c, "write payload too large "
						      "to skip");
			return;
		}
		c->skip_handle = handle;
		c->skip_cmd = cmd;
		c->skip_err = err;
		log_debug("client %llu: %s refused: %s",
			  (unsigned long long)c->client.id, nbd_cmd_name(cmd),
			  why);
		nbd_rx_skip(c, RX_REQ_SKIP, count);
		return;
	}
	if (err) {
		refuse(c, handle, cmd, err, why);
		return;
	}

	switch (cmd) {
	case NBD_CMD_READ:
		req = req_alloc(c, cmd, flags, handle, off, count, count);
		if (!req)
			break;
		req_submit(req, REQ_OP_READ, 0);
		return;
	case NBD_CMD_FLUSH:
		req = req_alloc(c, cmd, flags, handle, 0, 0, 0);
		if (!req)
			break;
		req_submit(req, REQ_OP_FLUSH, 0);
		return;
	case NBD_CMD_TRIM:
		req = req_alloc(c, cmd, flags, handle, off, count, 0);
		if (!req)
			break;
		req_submit(req, REQ_OP_DISCARD, fua(flags));
		return;
	case NBD_CMD_WRITE_ZEROES:
		req = req_alloc(c, cmd, flags, handle, off, count, 0);
		if (!req)
			break;
		f = fua(flags);
		if (flags & NBD_CMD_FLAG_NO_HOLE)
			f |= REQ_NOUNMAP;
		req_submit(req, REQ_OP_WRITE_ZEROES, f);
		return;
	case NBD_CMD_CACHE:
		/* A hint: the models have nothing slower to fetch from. */
		nbd_reply_ok(c, handle);
		return;
	case NBD_CMD_BLOCK_STATUS:
		block_status(c, flags, handle, off, count);
		return;
	}
	refuse(c, handle, cmd, ENOMEM, "out of memory");
}

void nbd_tx_write_payload(struct nbd_conn *c)
{
	struct nbd_req *req = c->rx_req;

	c->rx_req = NULL;
	nbd_rx_expect(c, RX_REQ_HDR, c->hdr, NBD_REQUEST_LEN);
	req_submit(req, REQ_OP_WRITE, fua(req->flags));
}

void nbd_tx_write_skipped(struct nbd_conn *c)
{
	nbd_rx_expect(c, RX_REQ_HDR, c->hdr, NBD_REQUEST_LEN);
	nbd_reply_error(c, c->skip_handle, c->skip_cmd, c->skip_err,
			"write refused");
}
