// SPDX-License-Identifier: GPL-2.0
/*
 * Everything mqblkd sends after the greeting: option replies, simple
 * replies, and structured reply chunks.  A request's reply is a few
 * iovecs over its own header bytes and data buffer, written with writev
 * together with whatever else is queued; the request is freed once the
 * last byte is out.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqblkd.h"

const char *nbd_opt_name(uint32_t opt)
{
	static const char *const names[] = {
		[NBD_OPT_EXPORT_NAME] = "NBD_OPT_EXPORT_NAME",
		[NBD_OPT_ABORT] = "NBD_OPT_ABORT",
		[NBD_OPT_LIST] = "NBD_OPT_LIST",
		[NBD_OPT_STARTTLS] = "NBD_OPT_STARTTLS",
		[NBD_OPT_INFO] = "NBD_OPT_INFO",
		[NBD_OPT_GO] = "NBD_OPT_GO",
		[NBD_OPT_STRUCTURED_REPLY] = "NBD_OPT_STRUCTURED_REPLY",
		[NBD_OPT_LIST_META_CONTEXT] = "NBD_OPT_LIST_META_CONTEXT",
		[NBD_OPT_SET_META_CONTEXT] = "NBD_OPT_SET_META_CONTEXT",
	};

	if (opt < sizeof(names) / sizeof(names[0]) && names[opt])
		return names[opt];
	return "unknown option";
}

const char *nbd_cmd_name(uint16_t cmd)
{
	static const char *const names[] = {
		[NBD_CMD_READ] = "NBD_CMD_READ",
		[NBD_CMD_WRITE] = "NBD_CMD_WRITE",
		[NBD_CMD_DISC] = "NBD_CMD_DISC",
		[NBD_CMD_FLUSH] = "NBD_CMD_FLUSH",
		[NBD_CMD_TRIM] = "NBD_CMD_TRIM",
		[NBD_CMD_CACHE] = "NBD_CMD_CACHE",
		[NBD_CMD_WRITE_ZEROES] = "NBD_CMD_WRITE_ZEROES",
		[NBD_CMD_BLOCK_STATUS] = "NBD_CMD_BLOCK_STATUS",
	};

	if (cmd < sizeof(names) / sizeof(names[0]) && names[cmd])
		return names[cmd];
	return "unknown command";
}

uint32_t nbd_errno(int err)
{
	switch (err) {
	case 0:
		return NBD_SUCCESS;
	case EPERM:
	case EROFS:
		return NBD_EPERM;
	case EIO:
		return NBD_EIO;
	case ENOMEM:
		return NBD_ENOMEM;
	case EINVAL:
		return NBD_EINVAL;
	case ENOSPC:
	case EFBIG:
	case EDQUOT:
		return NBD_ENOSPC;
	case ESHUTDOWN:
		return NBD_ESHUTDOWN;
	case EOVERFLOW:
		return NBD_EOVERFLOW;
	case ENOTSUP:
		return NBD_ENOTSUP;
	default:
		return NBD_EIO;
	}
}

int nbd_opt_reply(struct nbd_conn *c, uint32_t opt, uint32_t type,
		  const void *data, size_t len)
{
	uint8_t hdr[NBD_OPT_REPLY_HDR_LEN];

	put_be64(hdr, NBD_REP_MAGIC);
	put_be32(hdr + 8, opt);
	put_be32(hdr + 12, type);
	put_be32(hdr + 16, (uint32_t)len);
	if (nbd_conn_send_copy(c, hdr, sizeof(hdr)))
		return -1;
	if (len && nbd_conn_send_copy(c, data, len))
		return -1;
	return 0;
}

int nbd_opt_reply_msg(struct nbd_conn *c, uint32_t opt, uint32_t type,
		      const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	return nbd_opt_reply(c, opt, type, msg, (size_t)n);
}

static void put_simple(uint8_t *p, uint64_t handle, int err)
{
	put_be32(p, NBD_SIMPLE_REPLY_MAGIC);
	put_be32(p + 4, nbd_errno(err));
	put_be64(p + 8, handle);
}

static void put_chunk(uint8_t *p, uint64_t handle, uint16_t flags,
		      uint16_t type, uint32_t len)
{
	put_be32(p, NBD_STRUCTURED_REPLY_MAGIC);
	put_be16(p + 4, flags);
	put_be16(p + 6, type);
	put_be64(p + 8, handle);
	put_be32(p + 16, len);
}

/*
 * An error chunk with a short message into p (at most 64 bytes).
 * Returns its length.
 */
static size_t put_error_chunk(uint8_t *p, uint64_t handle, int err,
			      const char *msg)
{
	size_t mlen = strlen(msg);

	if (mlen > 64 - NBD_CHUNK_HDR_LEN - 6)
		mlen = 64 - NBD_CHUNK_HDR_LEN - 6;
	put_chunk(p, handle, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_ERROR,
		  (uint32_t)(6 + mlen));
	put_be32(p + NBD_CHUNK_HDR_LEN, nbd_errno(err));
	put_be16(p + NBD_CHUNK_HDR_LEN + 4, (uint16_t)mlen);
	memcpy(p + NBD_CHUNK_HDR_LEN + 6, msg, mlen);
	return NBD_CHUNK_HDR_LEN + 6 + mlen;
}

void nbd_reply_error(struct nbd_conn *c, uint64_t handle, uint16_t cmd, int err,
		     const char *msg)
{
	uint8_t p[64];
	size_t len;

	if (c->structured) {
		len = put_error_chunk(p, handle, err, msg);
	} else {
		put_simple(p, handle, err);
		len = NBD_SIMPLE_REPLY_LEN;
	}
	nbd_conn_send_copy(c, p, len);
}

void nbd_reply_ok(struct nbd_conn *c, uint64_t handle)
{
	uint8_t p[NBD_SIMPLE_REPLY_LEN];

	put_simple(p, handle, 0);
	nbd_conn_send_copy(c, p, sizeof(p));
}

static void req_release(struct nbd_wbuf *wb)
{
	nbd_req_free(
		(struct nbd_req *)((char *)wb - offsetof(struct nbd_req, wb)));
}

static void queue_req(struct nbd_req *req, struct iovec *iov, unsigned int niov)
{
	req->wb.iov = iov;
	req->wb.niov = niov;
	req->wb.cur = 0;
	req->wb.release = req_release;
	nbd_conn_queue(req->conn, &req->wb);
}

static bool is_zero(const uint8_t *p, size_t len)
{
	static const uint8_t z[16];

	if (len <= 16)
		return !memcmp(p, z, len);
	return !memcmp(p, z, 16) && !memcmp(p, p + 16, len - 16);
}

#define HOLE_GRAIN 4096u

/* Could any part of buf be a hole?  Only if some block reads as zero. */
static bool may_have_hole(const struct nbd_req *req)
{
	const uint8_t *buf = req->buf;
	uint64_t end = req->offset + req->count;
	uint64_t pos =
		(req->offset + HOLE_GRAIN - 1) & ~(uint64_t)(HOLE_GRAIN - 1);

	if (req->count < HOLE_GRAIN)
		return is_zero(buf, req->count);
	for (; pos + HOLE_GRAIN <= end; pos += HOLE_GRAIN)
		if (buf[pos - req->offset] == 0 &&
		    is_zero(buf + (pos - req->offset), HOLE_GRAIN))
			return true;
	return false;
}

struct seg {
	uint64_t off;
	uint32_t len;
	bool hole;
};

struct hole_walk {
	const struct nbd_req *req;
	struct seg segs[MQBLKD_MAX_READ_CHUNKS];
	unsigned int nr;
	uint64_t pos; /* covered up to here */
};

static void add_seg(struct hole_walk *w, uint64_t off, uint64_t len, bool hole)
{
	struct seg *last = w->nr ? &w->segs[w->nr - 1] : NULL;

	if (!len)
		return;
	if (last && last->hole == hole) {
		last->len += (uint32_t)len;
	} else if (w->nr == MQBLKD_MAX_READ_CHUNKS) {
		/* Out of chunks: the rest goes out as data. */
		last->hole = false;
		last->len += (uint32_t)len;
	} else {
		w->segs[w->nr++] = (struct seg){off, (uint32_t)len, hole};
	}
	w->pos = off + len;
}

static int hole_extent(void *arg, uint64_t off, uint64_t len, unsigned int type)
{
	struct hole_walk *w = arg;
	const struct nbd_req *req = w->req;
	uint64_t end = req->offset + req->count;
	uint64_t e_end = off + len;
	const uint8_t *buf = req->buf;

	if (e_end <= w->pos)
		return 0;
	if (off > w->pos)
		add_seg(w, w->pos, off - w->pos, false);
	if (off < w->pos)
		off = w->pos;
	if (e_end > end)
		e_end = end;
	if (off >= e_end)
		return -1;
	/* Trust the map only where the data we read agrees with it. */
	add_seg(w, off, e_end - off,
		(type & MQ_EXTENT_ZERO) &&
			is_zero(buf + (off - req->offset), e_end - off));
	return w->pos >= end ? -1 : 0;
}

/* READ with structured replies: data chunks and hole chunks. */
static void reply_read_structured(struct nbd_req *req)
{
	struct gendisk *disk = req->conn->exp->disk;
	struct hole_walk *w;
	struct iovec *iov;
	unsigned int i, n = 0;
	uint8_t *h;

	/* Holes found for free, not at a round trip to another server. */
	if (!(req->flags & NBD_CMD_FLAG_DF) && disk->fops &&
	    disk->fops->extents && !(disk->features & DISK_EXTENTS_REMOTE) &&
	    may_have_hole(req)) {
		w = malloc(sizeof(*w));
		if (w) {
			w->req = req;
			w->nr = 0;
			w->pos = req->offset;
			disk->fops->extents(disk, req->offset, req->count,
					    hole_extent, w);
			add_seg(w, w->pos, req->offset + req->count - w->pos,
				false);
			if (w->nr > 1 || (w->nr == 1 && w->segs[0].hole))
				goto chunks;
			free(w);
		}
	}

	/* One data chunk, done. */
	put_chunk(req->hdr, req->handle, NBD_REPLY_FLAG_DONE,
		  NBD_REPLY_TYPE_OFFSET_DATA, req->count + 8);
	put_be64(req->hdr + NBD_CHUNK_HDR_LEN, req->offset);
	req->iov_inline[0] = (struct iovec){req->hdr, NBD_CHUNK_HDR_LEN + 8};
	req->iov_inline[1] = (struct iovec){req->buf, req->count};
	queue_req(req, req->iov_inline, 2);
	return;

chunks:
	req->extra = malloc(w->nr * (32 + 2 * sizeof(struct iovec)));
	if (!req->extra) {
		free(w);
		nbd_reply_request(req, ENOMEM);
		return;
	}
	iov = (struct iovec *)req->extra;
	h = req->extra + w->nr * 2 * sizeof(struct iovec);
	for (i = 0; i < w->nr; i++, h += 32) {
		const struct seg *s = &w->segs[i];
		uint16_t flags = i == w->nr - 1 ? NBD_REPLY_FLAG_DONE : 0;

		if (s->hole) {
			put_chunk(h, req->handle, flags,
				  NBD_REPLY_TYPE_OFFSET_HOLE, 12);
			put_be64(h + NBD_CHUNK_HDR_LEN, s->off);
			put_be32(h + NBD_CHUNK_HDR_LEN + 8, s->len);
			iov[n++] = (struct iovec){h, NBD_CHUNK_HDR_LEN + 12};
		} else {
			put_chunk(h, req->handle, flags,
				  NBD_REPLY_TYPE_OFFSET_DATA, s->len + 8);
			put_be64(h + NBD_CHUNK_HDR_LEN, s->off);
			iov[n++] = (struct iovec){h, NBD_CHUNK_HDR_LEN + 8};
			iov[n++] = (struct iovec){
				(uint8_t *)req->buf + (s->off - req->offset),
				s->len};
		}
	}
	free(w);
	queue_req(req, iov, n);
}

void nbd_reply_request(struct nbd_req *req, int err)
{
	struct nbd_conn *c = req->conn;
	size_t len;

	if (err) {
		if (c->structured) {
			len = put_error_chunk(req->hdr, req->handle, err,
					      strerror(err));
		} else {
			put_simple(req->hdr, req->handle, err);
			len = NBD_SIMPLE_REPLY_LEN;
		}
		req->iov_inline[0] = (struct iovec){req->hdr, len};
		queue_req(req, req->iov_inline, 1);
		return;
	}
	if (req->cmd == NBD_CMD_READ && c->structured) {
		reply_read_structured(req);
		return;
	}
	put_simple(req->hdr, req->handle, 0);
	req->iov_inline[0] = (struct iovec){req->hdr, NBD_SIMPLE_REPLY_LEN};
	if (req->cmd == NBD_CMD_READ) {
		req->iov_inline[1] = (struct iovec){req->buf, req->count};
		queue_req(req, req->iov_inline, 2);
		return;
	}
	queue_req(req, req->iov_inline, 1);
}

/* req->extra holds nr descriptors (length, flags), already big-endian. */
void nbd_reply_block_status(struct nbd_req *req)
{
	uint32_t nr = req->nr_desc;

	put_chunk(req->hdr, req->handle, NBD_REPLY_FLAG_DONE,
		  NBD_REPLY_TYPE_BLOCK_STATUS, 4 + 8 * nr);
	put_be32(req->hdr + NBD_CHUNK_HDR_LEN, NBD_META_ID_BASE_ALLOCATION);
	req->iov_inline[0] = (struct iovec){req->hdr, NBD_CHUNK_HDR_LEN + 4};
	req->iov_inline[1] = (struct iovec){req->extra, 8 * nr};
	queue_req(req, req->iov_inline, 2);
}
