// SPDX-License-Identifier: GPL-2.0
/*
 * Byte-granular I/O for front ends: bounce buffers for misaligned reads,
 * read-modify-write for misaligned writes, and a per-disk range tracker
 * that keeps a read-modify-write apart from every write it overlaps.
 * See bdev.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "log-writes.h"

/* Emulated WRITE_ZEROES: plain writes of at most this much each. */
#define ZERO_EMUL_CHUNK (1u << 20)

enum {
	ST_NEW,
	ST_WAIT_LOCK, /* queued behind an overlapping write */
	ST_READ,      /* a READ (bounced or not) */
	ST_RMW_READ,  /* reading the partial blocks of a write */
	ST_WRITE,     /* the write-like bios, or a FLUSH */
	ST_DONE,      /* nothing left to do */
};

struct mq_bdev {
	pthread_mutex_t lock;
	TAILQ_HEAD(, mq_bdev_io) held;	  /* write-likes granted their range */
	TAILQ_HEAD(, mq_bdev_io) waiting; /* in arrival order */
	unsigned int nr_held_rmw;
	struct log_writes *log; /* key log_writes=, or NULL */
};

struct mq_bdev *mq_bdev_create(struct gendisk *disk)
{
	struct mq_bdev *b = calloc(1, sizeof(*b));

	(void)disk;
	if (!b)
		return NULL;
	if (pthread_mutex_init(&b->lock, NULL)) {
		free(b);
		return NULL;
	}
	TAILQ_INIT(&b->held);
	TAILQ_INIT(&b->waiting);
	return b;
}

void mq_bdev_destroy(struct mq_bdev *b)
{
	if (!b)
		return;
	log_writes_close(b->log);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

void mq_bdev_set_log_writes(struct mq_bdev *b, struct log_writes *l)
{
	b->log = l;
}

struct log_writes *mq_bdev_log_writes(const struct mq_bdev *b)
{
	return b ? b->log : NULL;
}

/* ------------------------------------------------------------------ */
/* the range tracker                                                   */

static bool conflicts(const struct mq_bdev_io *a, const struct mq_bdev_io *b)
{
	return (a->rmw || b->rmw) && a->lo < b->hi && b->lo < a->hi;
}

/*
 * May io take its range now?  Not if it conflicts with a held range, or
 * with one that waits ahead of it (before is where io's turn is: NULL for
 * a newcomer, which waits behind everyone).
 */
static bool may_grant(struct mq_bdev *b, const struct mq_bdev_io *io,
		      const struct mq_bdev_io *before)
{
	const struct mq_bdev_io *x;

	if (!io->rmw && !b->nr_held_rmw && TAILQ_FIRST(&b->waiting) == before)
		return true;
	TAILQ_FOREACH (x, &b->held, link)
		if (conflicts(x, io))
			return false;
	TAILQ_FOREACH (x, &b->waiting, link) {
		if (x == before)
			break;
		if (conflicts(x, io))
			return false;
	}
	return true;
}

static void hold(struct mq_bdev *b, struct mq_bdev_io *io)
{
	TAILQ_INSERT_TAIL(&b->held, io, link);
	if (io->rmw)
		b->nr_held_rmw++;
}

/* Register io's range: true if granted, false if it waits its turn. */
static bool track(struct mq_bdev *b, struct mq_bdev_io *io)
{
	bool granted;

	pthread_mutex_lock(&b->lock);
	io->tracked = true;
	granted = may_grant(b, io, NULL);
	if (granted)
		hold(b, io);
	else
		TAILQ_INSERT_TAIL(&b->waiting, io, link);
	pthread_mutex_unlock(&b->lock);
	return granted;
}

/* Release io's range and wake (through end_io) whoever may go now. */
static void untrack(struct mq_bdev *b, struct mq_bdev_io *io)
{
	struct mq_bdev_io *w, *next, *granted = NULL, **tail = &granted;

	pthread_mutex_lock(&b->lock);
	TAILQ_REMOVE(&b->held, io, link);
	if (io->rmw)
		b->nr_held_rmw--;
	io->tracked = false;
	for (w = TAILQ_FIRST(&b->waiting); w; w = next) {
		next = TAILQ_NEXT(w, link);
		if (!may_grant(b, w, w))
			continue;
		TAILQ_REMOVE(&b->waiting, w, link);
		hold(b, w);
		w->grant_next = NULL;
		*tail = w;
		tail = &w->grant_next;
	}
	pthread_mutex_unlock(&b->lock);
	/* Each granted io may be reused once its end_io ran: read first. */
	for (w = granted; w; w = next) {
		next = w->grant_next;
		w->end_io(w);
	}
}

/* ------------------------------------------------------------------ */
/* bios                                                                */

static void io_set_error(struct mq_bdev_io *io, int err)
{
	int none = 0;

	if (err)
		atomic_compare_exchange_strong(&io->error, &none, err);
}

/* Drop one reference; the last one ends the stage. */
static void io_put(struct mq_bdev_io *io)
{
	if (atomic_fetch_sub(&io->pending, 1) == 1)
		io->end_io(io);
}

static void io_bio_end(struct bio *bio)
{
	struct mq_bdev_io *io = bio->bi_private;

	/* A zone append (one aligned bio) says where it went. */
	if ((bio->bi_flags & REQ_ZONE_APPEND) && !bio->bi_status)
		io->offset = bio->bi_append_sector << SECTOR_SHIFT;
	io_set_error(io, bio->bi_status);
	io_put(io);
}

static struct bio *io_bio(struct mq_bdev_io *io, struct bio *bio,
			  enum req_op op, uint64_t off, uint64_t len, void *buf,
			  unsigned int flags)
{
	bio_init(bio, op, off >> SECTOR_SHIFT, (uint32_t)len, buf);
	bio->bi_flags = flags;
	bio->bi_submitter = io->submitter;
	bio->bi_client = io->client;
	bio->bi_end_io = io_bio_end;
	bio->bi_private = io;
	return bio;
}

/*
 * Submit the bios of one stage: v[0..n) and the emulated zero pieces.
 * io may be finished and reused once the last one completes, so nothing
 * of io is read after the final io_put().
 */
static void io_submit_stage(struct mq_ctx *ctx, struct mq_bdev_io *io,
			    unsigned int stage, struct bio **v, unsigned int n,
			    unsigned int nz)
{
	unsigned int i;
	struct bio *z = io->zbios;

	io->stage = stage;
	atomic_store(&io->pending, (int)(n + nz + 1));
	for (i = 0; i < n; i++)
		mq_submit_bio(ctx, v[i]);
	for (i = 0; i < nz; i++)
		mq_submit_bio(ctx, &z[i]);
	io_put(io);
}

/* End the stage at once, with err (nothing was submitted). */
static void io_end_now(struct mq_bdev_io *io, int err)
{
	io_set_error(io, err);
	io->stage = ST_DONE;
	io->end_io(io);
}

/* ------------------------------------------------------------------ */
/* geometry                                                            */

struct geom {
	uint32_t bs;
	uint64_t end;		 /* offset + count */
	bool head, tail;	 /* first and last blocks are partial */
	bool single;		 /* one block holds the whole request */
	uint64_t tail_lo;	 /* where the last block starts */
	size_t tail_idx;	 /* its place in the bounce buffer, bytes */
	uint64_t mid_lo, mid_hi; /* the whole blocks between */
	unsigned int nr_partial;
};

static void geom(const struct mq_bdev_io *io, struct geom *g)
{
	g->bs = io->disk->queue->limits.logical_block_size;
	g->end = io->offset + io->count;
	g->head = io->offset % g->bs != 0;
	g->tail = g->end % g->bs != 0;
	g->single = io->hi - io->lo == g->bs;
	g->tail_lo = io->hi - g->bs;
	g->nr_partial = g->single ? 1 : (unsigned int)g->head + g->tail;
	g->tail_idx = g->single || !g->head ? 0 : g->bs;
	g->mid_lo = g->head ? io->lo + g->bs : io->lo;
	g->mid_hi = g->tail ? io->hi - g->bs : io->hi;
	if (g->mid_hi < g->mid_lo)
		g->mid_hi = g->mid_lo;
}

struct bounce_part {
	uint8_t *bounce;
	uint64_t off; /* in the request */
	uint64_t len;
};

/* Copy between the request's bytes and the bounced partial blocks. */
static void bounce_copy(struct mq_bdev_io *io, const struct geom *g,
			bool to_bounce)
{
	struct bounce_part part[2];
	unsigned int n = 0, i;

	if (g->single) {
		part[n++] = (struct bounce_part){
			io->bounce + (io->offset - io->lo), 0, io->count};
	} else {
		if (g->head)
			part[n++] = (struct bounce_part){
				io->bounce + (io->offset - io->lo), 0,
				io->lo + g->bs - io->offset};
		if (g->tail)
			part[n++] = (struct bounce_part){
				io->bounce + g->tail_idx,
				g->tail_lo - io->offset, g->end - g->tail_lo};
	}
	for (i = 0; i < n; i++) {
		if (io->op == REQ_OP_WRITE_ZEROES)
			memset(part[i].bounce, 0, part[i].len);
		else if (to_bounce)
			memcpy(part[i].bounce, (uint8_t *)io->buf + part[i].off,
			       part[i].len);
		else
			memcpy((uint8_t *)io->buf + part[i].off, part[i].bounce,
			       part[i].len);
	}
}

/* Bios for the partial blocks (into or out of the bounce buffer). */
static unsigned int partial_bios(struct mq_bdev_io *io, const struct geom *g,
				 enum req_op op, unsigned int flags,
				 struct bio **v)
{
	unsigned int n = 0;

	if (g->head || g->single)
		v[n++] = io_bio(io, &io->bios[0], op, io->lo, g->bs, io->bounce,
				flags);
	if (g->tail && !g->single)
		v[n++] = io_bio(io, &io->bios[2], op, g->tail_lo, g->bs,
				io->bounce + g->tail_idx, flags);
	return n;
}

/*
 * Zero [lo, hi): one WRITE_ZEROES where the queue has it, else plain
 * writes from one zeroed buffer, as nbdkit does for plugins that cannot
 * zero.  Returns the number of pieces in io->zbios (0: v got the bio),
 * or -1 with ENOMEM.
 */
static int zero_bios(struct mq_bdev_io *io, uint64_t lo, uint64_t hi,
		     struct bio **v, unsigned int *n)
{
	const struct queue_limits *lim = &io->disk->queue->limits;
	unsigned int fua = io->flags & REQ_FUA;
	uint64_t chunk, nr, i;

	if (lo >= hi)
		return 0;
	if (lim->max_write_zeroes_sectors) {
		v[(*n)++] = io_bio(io, &io->bios[1], REQ_OP_WRITE_ZEROES, lo,
				   hi - lo, NULL, io->flags);
		return 0;
	}
	chunk = hi - lo < ZERO_EMUL_CHUNK ? hi - lo : ZERO_EMUL_CHUNK;
	nr = (hi - lo + chunk - 1) / chunk;
	io->zeroes = calloc(1, chunk);
	io->zbios = calloc(nr, sizeof(struct bio));
	if (!io->zeroes || !io->zbios)
		return -1;
	for (i = 0; i < nr; i++) {
		uint64_t off = lo + i * chunk;
		uint64_t len = hi - off < chunk ? hi - off : chunk;

		io_bio(io, &io->zbios[i], REQ_OP_WRITE, off, len, io->zeroes,
		       fua);
	}
	return (int)nr;
}

/* The stage that writes: the partial blocks (patched) and the middle. */
static bool start_write(struct mq_ctx *ctx, struct mq_bdev_io *io)
{
	struct bio *v[3];
	unsigned int n = 0, fua = io->flags & REQ_FUA;
	uint64_t lo = io->lo, hi = io->hi;
	int nz = 0;
	struct geom g;

	if (io->op == REQ_OP_FLUSH) {
		struct log_writes *l = mq_bdev_log_writes(io->disk->bdev);

		/* It covers the writes completed before it was submitted. */
		if (l)
			io->lw_batch = log_writes_flush_start(l);
		v[n++] = io_bio(io, &io->bios[0], REQ_OP_FLUSH, 0, 0, NULL,
				io->flags);
		io_submit_stage(ctx, io, ST_WRITE, v, n, 0);
		return false;
	}
	if (io->rmw) {
		geom(io, &g);
		bounce_copy(io, &g, true);
		n = partial_bios(io, &g, REQ_OP_WRITE, fua, v);
		lo = g.mid_lo;
		hi = g.mid_hi;
	}
	if (lo < hi) {
		switch (io->op) {
		case REQ_OP_WRITE:
			v[n++] = io_bio(
				io, &io->bios[1], REQ_OP_WRITE, lo, hi - lo,
				(uint8_t *)io->buf + (lo - io->offset), fua);
			break;
		case REQ_OP_DISCARD:
			v[n++] = io_bio(io, &io->bios[1], REQ_OP_DISCARD, lo,
					hi - lo, NULL, io->flags);
			break;
		default: /* REQ_OP_WRITE_ZEROES */
			nz = zero_bios(io, lo, hi, v, &n);
			break;
		}
	}
	if (nz < 0) {
		io_set_error(io, ENOMEM);
		return true;
	}
	if (!n && !nz) {
		/* a DISCARD with no whole block inside */
		return true;
	}
	io_submit_stage(ctx, io, ST_WRITE, v, n, (unsigned int)nz);
	return false;
}

/* First I/O stage once the range (if any) is held. */
static bool start_io(struct mq_ctx *ctx, struct mq_bdev_io *io)
{
	bool aligned = io->lo == io->offset && io->hi == io->offset + io->count;
	struct bio *v[3];
	unsigned int n;
	struct geom g;

	if (io->op != REQ_OP_READ && !io->rmw)
		return start_write(ctx, io);
	if (aligned) {
		v[0] = io_bio(io, &io->bios[1], REQ_OP_READ, io->offset,
			      io->count, io->buf, io->flags);
		io_submit_stage(ctx, io, ST_READ, v, 1, 0);
		return false;
	}
	geom(io, &g);
	if (posix_memalign((void **)&io->bounce, 4096,
			   (size_t)g.nr_partial * g.bs)) {
		io->bounce = NULL;
		io_set_error(io, ENOMEM);
		return true;
	}
	n = partial_bios(io, &g, REQ_OP_READ, 0, v);
	if (io->op == REQ_OP_READ && g.mid_lo < g.mid_hi)
		v[n++] =
			io_bio(io, &io->bios[1], REQ_OP_READ, g.mid_lo,
			       g.mid_hi - g.mid_lo,
			       (uint8_t *)io->buf + (g.mid_lo - io->offset), 0);
	io_submit_stage(ctx, io, io->rmw ? ST_RMW_READ : ST_READ, v, n, 0);
	return false;
}

/*
 * The write stage of io ended: tell the disk's log (log-writes.h) what
 * reached the device, block-aligned: [lo, hi) as written, the partial
 * blocks patched in the bounce buffer.
 */
static void log_completion(struct mq_bdev_io *io)
{
	struct log_writes *l = mq_bdev_log_writes(io->disk->bdev);
	int err = atomic_load(&io->error);
	bool fua = io->flags & REQ_FUA;
	uint8_t *data = NULL;
	struct geom g;

	if (!l)
		return;
	if (io->op == REQ_OP_FLUSH) {
		log_writes_flush_end(l, io->lw_batch, err);
		io->lw_batch = NULL;
		return;
	}
	if (err)
		return; /* not known to be on the device */
	if (io->op == REQ_OP_DISCARD) {
		log_writes_write(l, io->lo, io->hi - io->lo, NULL, true, false);
		return;
	}
	if (!io->rmw) {
		log_writes_write(l, io->lo, io->hi - io->lo,
				 io->op == REQ_OP_WRITE ? io->buf : NULL, false,
				 fua);
		return;
	}
	data = malloc(io->hi - io->lo);
	if (!data) {
		/* the log turns itself off, saying why */
		log_writes_write(l, io->lo, io->hi - io->lo, NULL, false, fua);
		return;
	}
	geom(io, &g);
	if (g.mid_lo < g.mid_hi) {
		if (io->op == REQ_OP_WRITE)
			memcpy(data + (g.mid_lo - io->lo),
			       (uint8_t *)io->buf + (g.mid_lo - io->offset),
			       g.mid_hi - g.mid_lo);
		else
			memset(data + (g.mid_lo - io->lo), 0,
			       g.mid_hi - g.mid_lo);
	}
	if (g.head || g.single)
		memcpy(data, io->bounce, g.bs);
	if (g.tail && !g.single)
		memcpy(data + (g.tail_lo - io->lo), io->bounce + g.tail_idx,
		       g.bs);
	log_writes_write(l, io->lo, io->hi - io->lo, data, false, fua);
	free(data);
}

/* Release what io holds and publish its result. */
static bool io_finish(struct mq_bdev_io *io)
{
	if (io->tracked)
		untrack(io->disk->bdev, io);
	free(io->bounce);
	free(io->zbios);
	free(io->zeroes);
	io->bounce = NULL;
	io->zbios = NULL;
	io->zeroes = NULL;
	io->status = atomic_load(&io->error);
	io->stage = ST_DONE;
	return true;
}

void mq_bdev_io_submit(struct gendisk *disk, struct mq_ctx *ctx,
		       struct mq_bdev_io *io)
{
	uint32_t bs = disk->queue->limits.logical_block_size;
	bool write_like = io->op == REQ_OP_WRITE || io->op == REQ_OP_DISCARD ||
			  io->op == REQ_OP_WRITE_ZEROES;
	uint64_t end = io->offset + io->count;

	io->disk = disk;
	io->stage = ST_NEW;
	io->status = 0;
	atomic_init(&io->error, 0);
	io->bounce = NULL;
	io->zbios = NULL;
	io->zeroes = NULL;
	io->tracked = false;
	io->lw_batch = NULL;
	io->lo = io->offset - io->offset % bs;
	io->hi = end % bs ? end - end % bs + bs : end;
	io->rmw = (io->op == REQ_OP_WRITE || io->op == REQ_OP_WRITE_ZEROES) &&
		  (io->lo != io->offset || io->hi != end);
	if (io->op == REQ_OP_DISCARD) {
		/* Only the whole blocks inside: the rest is left alone. */
		io->lo = io->offset % bs ? io->lo + bs : io->offset;
		io->hi = end - end % bs;
		if (io->lo >= io->hi) {
			io_end_now(io, 0);
			return;
		}
	}
	if (write_like && disk->bdev && !track(disk->bdev, io)) {
		io->stage = ST_WAIT_LOCK;
		return; /* untrack() calls end_io when it is our turn */
	}
	if (start_io(ctx, io)) {
		/* failed before any bio went out */
		int err = atomic_load(&io->error);

		io_finish(io);
		io_end_now(io, err);
	}
}

bool mq_bdev_io_continue(struct mq_ctx *ctx, struct mq_bdev_io *io)
{
	struct geom g;

	switch (io->stage) {
	case ST_WAIT_LOCK:
		if (!start_io(ctx, io))
			return false;
		break;
	case ST_READ:
		if (io->bounce && !atomic_load(&io->error)) {
			geom(io, &g);
			bounce_copy(io, &g, false);
		}
		break;
	case ST_RMW_READ:
		if (!atomic_load(&io->error) && !start_write(ctx, io))
			return false;
		break;
	case ST_WRITE:
		log_completion(io);
		break;
	default:
		break;
	}
	return io_finish(io);
}
