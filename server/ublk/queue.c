// SPDX-License-Identifier: GPL-2.0
/*
 * One thread per ublk queue.  It owns a ring on which it keeps a FETCH_REQ
 * (later a COMMIT_AND_FETCH_REQ) outstanding for every tag, and a read on
 * its eventfd.  A completed fetch is a request: its descriptor says what;
 * a WRITE's data is read from /dev/ublkcN (USER_COPY), and the request
 * goes into the core through this thread's software queue.  When the
 * model completes it (any thread), the request lands on the queue's
 * completion stack; a READ's data is written to /dev/ublkcN and the
 * result committed with the next fetch.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mqblk-ublk.h"

#define EFD_TAG UINT64_MAX /* user_data of the eventfd read */

static int grow(struct ublk_io *io, size_t len);

static _Thread_local struct ublk_queue *current_queue;

static off_t io_buf_offset(const struct ublk_queue *q, uint16_t tag)
{
	return (off_t)(UBLK_IO_BUF_OFFSET + ((uint64_t)q->qid << UBLK_QID_OFF) +
		       ((uint64_t)tag << UBLK_TAG_OFF));
}

static struct io_uring_sqe *get_sqe(struct ublk_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {
		/* full: hand what is queued to the kernel and try again */
		io_uring_submit(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
	}
	return sqe;
}

/* FETCH_REQ, or COMMIT_AND_FETCH_REQ with the result of the last request. */
static int queue_cmd(struct ublk_queue *q, uint16_t tag, unsigned int op,
		     int32_t result, uint64_t addr)
{
	struct io_uring_sqe *sqe = get_sqe(q);
	struct ublksrv_io_cmd *cmd;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->dev->cdev_fd;
	sqe->cmd_op = op;
	cmd = (struct ublksrv_io_cmd *)sqe->cmd;
	cmd->q_id = (uint16_t)q->qid;
	cmd->tag = tag;
	cmd->result = result;
	/* USER_COPY: the data moves by pread/pwrite; a zone append's LBA */
	cmd->addr = addr;
	io_uring_sqe_set_data64(sqe, tag);
	q->nr_cmds++;
	return 0;
}

static void arm_eventfd(struct ublk_queue *q)
{
	struct io_uring_sqe *sqe = get_sqe(q);

	if (!sqe)
		return;
	io_uring_prep_read(sqe, q->efd, &q->efd_val, sizeof(q->efd_val), 0);
	io_uring_sqe_set_data64(sqe, EFD_TAG);
}

static void append_done(struct ublk_dev *d, struct ublk_io *io);

static void commit(struct ublk_queue *q, struct ublk_io *io, int32_t result)
{
	if (io->append_reserved)
		append_done(q->dev, io);
	io->busy = false;
	q->nr_busy--;
	if (queue_cmd(q, io->tag, UBLK_U_IO_COMMIT_AND_FETCH_REQ, result,
		      io->op == UBLK_IO_OP_ZONE_APPEND ? io->append_sector : 0))
		ublk_err("queue %u tag %u: no room to commit", q->qid, io->tag);
}

/* A stage of the request ended, on any thread. */
static void io_end(struct mq_bdev_io *bio)
{
	struct ublk_io *io = bio->private;
	struct ublk_queue *q = io->q;
	bool remote = current_queue != q;
	struct ublk_io *head;

	/*
	 * Counted from before the push: once the request is on the stack
	 * the queue thread may finish it, see nothing busy and leave, and
	 * its eventfd must outlive our write.
	 */
	if (remote)
		atomic_fetch_add(&q->waking, 1);
	head = atomic_load(&q->done);
	do {
		io->next_done = head;
	} while (!atomic_compare_exchange_weak(&q->done, &head, io));
	if (remote) {
		uint64_t one = 1;

		if (write(q->efd, &one, sizeof(one)) != sizeof(one))
			ublk_err("queue %u: eventfd: %s", q->qid,
				 strerror(errno));
		atomic_fetch_sub(&q->waking, 1);
	}
}

static int32_t io_result(const struct ublk_io *io)
{
	if (io->io.status)
		return -io->io.status;
	if (io->op == UBLK_IO_OP_READ || io->op == UBLK_IO_OP_WRITE ||
	    io->op == UBLK_IO_OP_ZONE_APPEND)
		return (int32_t)io->io.count;
	return 0;
}

/* ---- zones ---------------------------------------------------------- */

static unsigned int zone_of(const struct ublk_dev *d, uint64_t sector)
{
	return (unsigned int)(sector /
			      d->exp->disk->queue->limits.chunk_sectors);
}

struct zone_fill {
	struct ublk_blk_zone *v;
	unsigned int nr;
};

static int zone_fill_cb(const struct blk_zone *z, unsigned int idx, void *data)
{
	struct zone_fill *f = data;
	struct ublk_blk_zone *o = &f->v[f->nr];

	(void)idx;
	memset(o, 0, sizeof(*o));
	o->start = z->start;
	o->len = z->len;
	o->wp = z->wp;
	o->capacity = z->capacity;
	o->type = (uint8_t)z->type;
	o->cond = (uint8_t)z->cond;
	f->nr++;
	return 0;
}

/* REPORT_ZONES: up to nr zones from the one holding sector, into the
 * request's buffer; the bytes written, or -errno. */
static int32_t report_zones(struct ublk_queue *q, struct ublk_io *io,
			    uint64_t sector, unsigned int nr)
{
	struct ublk_dev *d = q->dev;
	struct gendisk *disk = d->exp->disk;
	unsigned int first = zone_of(d, sector);
	struct zone_fill f;
	size_t len;
	ssize_t n;
	int r;

	if (first >= d->nr_zones)
		return -EINVAL;
	if (nr > d->nr_zones - first)
		nr = d->nr_zones - first;
	if (nr > d->info.max_io_buf_bytes / sizeof(struct ublk_blk_zone))
		nr = d->info.max_io_buf_bytes / sizeof(struct ublk_blk_zone);
	len = nr * sizeof(struct ublk_blk_zone);
	if (grow(io, len))
		return -ENOMEM;
	f.v = io->buf;
	f.nr = 0;
	r = blkdev_report_zones(disk, first, nr, zone_fill_cb, &f);
	if (r < 0)
		return r;
	len = f.nr * sizeof(struct ublk_blk_zone);
	if (!len)
		return 0;
	n = pwrite(d->cdev_fd, io->buf, len, io_buf_offset(q, io->tag));
	if (n != (ssize_t)len)
		return -EIO;
	return (int32_t)len;
}

static int32_t zone_mgmt(struct ublk_dev *d, enum blk_zone_op op,
			 unsigned int zone)
{
	struct gendisk *disk = d->exp->disk;
	int err;

	if (zone != BLK_ALL_ZONES && zone >= d->nr_zones)
		return -EINVAL;
	/* Through the zone write plugs: a reset or finish moves theirs. */
	err = blkdev_zone_mgmt(disk, op, zone);
	return err ? -err : 0;
}

static int one_zone_cb(const struct blk_zone *z, unsigned int idx, void *data)
{
	(void)idx;
	*(struct blk_zone *)data = *z;
	return 0;
}

/*
 * A zone append becomes a write at the zone's write pointer, or past the
 * appends already on their way to it.  0, or the -errno to commit.
 */
static int32_t append_reserve(struct ublk_dev *d, struct ublk_io *io,
			      uint64_t sector, uint32_t nr_sectors)
{
	struct gendisk *disk = d->exp->disk;
	unsigned int zone = zone_of(d, sector);
	struct blk_zone z;
	int32_t r = 0;

	if (zone >= d->nr_zones || !disk->fops || !disk->fops->report_zones)
		return -EINVAL;
	pthread_mutex_lock(&d->append_lock);
	if (disk->fops->report_zones(disk, zone, 1, one_zone_cb, &z) != 1) {
		r = -EIO;
		goto out;
	}
	if (z.type == BLK_ZONE_TYPE_CONVENTIONAL) {
		r = -EINVAL;
		goto out;
	}
	if (!d->append_flight[zone])
		d->append_next[zone] = z.wp;
	if (z.cond == BLK_ZONE_COND_FULL ||
	    d->append_next[zone] + nr_sectors > z.start + z.capacity) {
		r = -EIO;
		goto out;
	}
	io->append_sector = d->append_next[zone];
	d->append_next[zone] += nr_sectors;
	d->append_flight[zone]++;
	io->append_reserved = true;
out:
	pthread_mutex_unlock(&d->append_lock);
	return r;
}

static void append_done(struct ublk_dev *d, struct ublk_io *io)
{
	unsigned int zone = zone_of(d, io->append_sector);

	pthread_mutex_lock(&d->append_lock);
	if (zone < d->nr_zones && d->append_flight[zone])
		d->append_flight[zone]--;
	pthread_mutex_unlock(&d->append_lock);
	io->append_reserved = false;
}

/* -------------------------------------------------------------------- */

static void finish(struct ublk_queue *q, struct ublk_io *io)
{
	int32_t res;

	/* the next stage (a read-modify-write's write) is on its way */
	if (!mq_bdev_io_continue(q->ctx, &io->io))
		return;
	res = io_result(io);
	if (res > 0 && io->op == UBLK_IO_OP_READ) {
		ssize_t n = pwrite(q->dev->cdev_fd, io->buf, io->io.count,
				   io_buf_offset(q, io->tag));

		if (n != (ssize_t)io->io.count) {
			ublk_err("queue %u tag %u: read data to the kernel: %s",
				 q->qid, io->tag,
				 n < 0 ? strerror(errno) : "short");
			res = -EIO;
		}
	}
	if (res < 0)
		ublk_debug("queue %u: %s of %u bytes at %llu: %s", q->qid,
			   req_op_name(io->io.op), io->io.count,
			   (unsigned long long)io->io.offset, strerror(-res));
	commit(q, io, res);
}

/*
 * Until the stack stays empty: a stage started from finish() may end
 * inline, on this thread, which pushes without waking the ring.
 */
static void run_completions(struct ublk_queue *q)
{
	struct ublk_io *list;

	while ((list = atomic_exchange(&q->done, NULL))) {
		struct ublk_io *rev = NULL;

		while (list) { /* oldest first */
			struct ublk_io *next = list->next_done;

			list->next_done = rev;
			rev = list;
			list = next;
		}
		while (rev) {
			struct ublk_io *next = rev->next_done;

			finish(q, rev);
			rev = next;
		}
	}
}

static int grow(struct ublk_io *io, size_t len)
{
	void *b;

	if (io->cap >= len)
		return 0;
	b = realloc(io->buf, len);
	if (!b)
		return -ENOMEM;
	io->buf = b;
	io->cap = len;
	return 0;
}

/* The kernel handed us a request under this tag. */
static void handle_request(struct ublk_queue *q, struct ublk_io *io)
{
	const struct ublksrv_io_desc *iod = &q->descs[io->tag];
	uint32_t op_flags = iod->op_flags;
	uint64_t off = iod->start_sector << 9;
	uint32_t len = iod->nr_sectors << 9;
	struct mq_bdev_io *bio = &io->io;

	io->op = op_flags & 0xff;
	io->busy = true;
	q->nr_busy++;
	memset(bio, 0, sizeof(*bio));
	switch (io->op) {
	case UBLK_IO_OP_READ:
		bio->op = REQ_OP_READ;
		break;
	case UBLK_IO_OP_WRITE:
		bio->op = REQ_OP_WRITE;
		break;
	case UBLK_IO_OP_FLUSH:
		bio->op = REQ_OP_FLUSH;
		off = 0;
		len = 0;
		break;
	case UBLK_IO_OP_DISCARD:
		bio->op = REQ_OP_DISCARD;
		break;
	case UBLK_IO_OP_WRITE_ZEROES:
		bio->op = REQ_OP_WRITE_ZEROES;
		if (op_flags & UBLK_IO_F_NOUNMAP)
			bio->flags |= REQ_NOUNMAP;
		break;
	case UBLK_IO_OP_ZONE_APPEND: {
		int32_t r = append_reserve(q->dev, io, iod->start_sector,
					   iod->nr_sectors);

		if (r) {
			commit(q, io, r);
			return;
		}
		bio->op = REQ_OP_WRITE;
		off = io->append_sector << 9;
		break;
	}
	case UBLK_IO_OP_ZONE_OPEN:
	case UBLK_IO_OP_ZONE_CLOSE:
	case UBLK_IO_OP_ZONE_FINISH:
	case UBLK_IO_OP_ZONE_RESET: {
		static const enum blk_zone_op zop[] = {
			[UBLK_IO_OP_ZONE_OPEN] = BLK_ZONE_OP_OPEN,
			[UBLK_IO_OP_ZONE_CLOSE] = BLK_ZONE_OP_CLOSE,
			[UBLK_IO_OP_ZONE_FINISH] = BLK_ZONE_OP_FINISH,
			[UBLK_IO_OP_ZONE_RESET] = BLK_ZONE_OP_RESET,
		};

		commit(q, io,
		       q->dev->nr_zones
			       ? zone_mgmt(q->dev, zop[io->op],
					   zone_of(q->dev, iod->start_sector))
			       : -EOPNOTSUPP);
		return;
	}
	case UBLK_IO_OP_ZONE_RESET_ALL:
		commit(q, io,
		       q->dev->nr_zones ? zone_mgmt(q->dev, BLK_ZONE_OP_RESET,
						    BLK_ALL_ZONES)
					: -EOPNOTSUPP);
		return;
	case UBLK_IO_OP_REPORT_ZONES:
		commit(q, io,
		       q->dev->nr_zones ? report_zones(q, io, iod->start_sector,
						       iod->nr_sectors)
					: -EOPNOTSUPP);
		return;
	default:
		ublk_debug("queue %u: op %u not supported", q->qid, io->op);
		commit(q, io, -EOPNOTSUPP);
		return;
	}
	if (op_flags & UBLK_IO_F_FUA)
		bio->flags |= REQ_FUA;
	if (off + len < off || off + len > get_capacity(q->dev->exp->disk)
						   << SECTOR_SHIFT) {
		commit(q, io, -EIO);
		return;
	}
	if (bio->op == REQ_OP_READ || bio->op == REQ_OP_WRITE) {
		if (grow(io, len)) {
			commit(q, io, -ENOMEM);
			return;
		}
		bio->buf = io->buf;
	}
	if (bio->op == REQ_OP_WRITE) {
		ssize_t n = pread(q->dev->cdev_fd, io->buf, len,
				  io_buf_offset(q, io->tag));

		if (n != (ssize_t)len) {
			ublk_err("queue %u tag %u: write data from the "
				 "kernel: %s",
				 q->qid, io->tag,
				 n < 0 ? strerror(errno) : "short");
			commit(q, io, -EIO);
			return;
		}
	}
	bio->offset = off;
	bio->count = len;
	bio->submitter = q->client.id;
	bio->client = &q->client;
	bio->end_io = io_end;
	bio->private = io;
	mq_bdev_io_submit(q->dev->exp->disk, q->ctx, bio);
}

static void handle_cqe(struct ublk_queue *q, const struct io_uring_cqe *cqe)
{
	uint64_t tag = io_uring_cqe_get_data64(cqe);
	struct ublk_io *io;

	if (tag == EFD_TAG) {
		arm_eventfd(q);
		return;
	}
	if (tag >= q->depth)
		return;
	io = &q->ios[tag];
	q->nr_cmds--;
	if (cqe->res == 0) { /* UBLK_IO_RES_OK: a request */
		handle_request(q, io);
		return;
	}
	if (cqe->res != -UBLK_IO_RES_ABORT_ERRNO)
		ublk_err("queue %u tag %u: fetch: %s", q->qid, io->tag,
			 strerror(-cqe->res));
}

static void signal_ready(struct ublk_queue *q, int err)
{
	pthread_mutex_lock(&q->lock);
	q->ready = true;
	q->err = err;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static void *queue_thread(void *arg)
{
	struct ublk_queue *q = arg;
	unsigned int t;
	int r;

	current_queue = q;
	for (t = 0; t < q->depth; t++)
		queue_cmd(q, (uint16_t)t, UBLK_U_IO_FETCH_REQ, -1, 0);
	arm_eventfd(q);
	r = io_uring_submit(&q->ring);
	signal_ready(q, r < 0 ? r : 0);
	if (r < 0)
		return NULL;

	/*
	 * Until the kernel holds no command of ours (STOP_DEV aborted them)
	 * or we are told to leave with nothing in the core.
	 */
	while (q->nr_cmds || q->nr_busy) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;

		if (atomic_load(&q->stopping) && !q->nr_busy)
			break;
		r = io_uring_submit_and_wait(&q->ring, 1);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
			ublk_err("queue %u: io_uring: %s", q->qid,
				 strerror(-r));
			break;
		}
		io_uring_for_each_cqe(&q->ring, head, cqe)
		{
			handle_cqe(q, cqe);
			n++;
		}
		io_uring_cq_advance(&q->ring, n);
		run_completions(q);
	}
	/* a completing thread may still be writing our eventfd */
	while (atomic_load(&q->waking))
		sched_yield();
	return NULL;
}

int ublk_queue_start(struct ublk_dev *d, unsigned int qid)
{
	struct ublk_queue *q = &d->queues[qid];
	size_t per_queue =
		UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc);
	long page = sysconf(_SC_PAGESIZE);
	unsigned int t;
	void *m;
	int r;

	q->dev = d;
	q->qid = qid;
	q->depth = d->info.queue_depth;
	q->efd = -1;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	atomic_init(&q->done, NULL);
	atomic_init(&q->stopping, false);
	atomic_init(&q->waking, 0);
	q->ctx = mq_get_ctx(d->exp->disk->queue, qid);
	q->client.id = ((uint64_t)(d->info.dev_id + 1) << 16) | qid;
	snprintf(q->client.addr, sizeof(q->client.addr), "ublkb%u/q%u",
		 d->info.dev_id, qid);
	q->client.uid = -1;

	q->ios = calloc(q->depth, sizeof(*q->ios));
	if (!q->ios) {
		ublk_err("out of memory");
		return -1;
	}
	for (t = 0; t < q->depth; t++) {
		q->ios[t].q = q;
		q->ios[t].tag = (uint16_t)t;
	}
	q->descs_len =
		(q->depth * sizeof(struct ublksrv_io_desc) + (size_t)page - 1) &
		~((size_t)page - 1);
	m = mmap(NULL, q->descs_len, PROT_READ, MAP_SHARED | MAP_POPULATE,
		 d->cdev_fd,
		 (off_t)(UBLK_CMD_BUF_OFFSET +
			 qid * ((per_queue + (size_t)page - 1) &
				~((size_t)page - 1))));
	if (m == MAP_FAILED) {
		ublk_err("queue %u: mmap of the descriptors: %s", qid,
			 strerror(errno));
		return -1;
	}
	q->descs = m;
	q->efd = eventfd(0, EFD_CLOEXEC);
	if (q->efd < 0) {
		ublk_err("eventfd: %s", strerror(errno));
		return -1;
	}
	r = io_uring_queue_init(q->depth + 8, &q->ring, 0);
	if (r < 0) {
		ublk_err("queue %u: io_uring: %s", qid, strerror(-r));
		return -1;
	}
	q->ring_ok = true;
	r = pthread_create(&q->thread, NULL, queue_thread, q);
	if (r) {
		ublk_err("queue %u: thread: %s", qid, strerror(r));
		return -1;
	}
	q->started = true;
	pthread_mutex_lock(&q->lock);
	while (!q->ready)
		pthread_cond_wait(&q->cond, &q->lock);
	r = q->err;
	pthread_mutex_unlock(&q->lock);
	if (r < 0) {
		ublk_err("queue %u: fetching its tags: %s", qid, strerror(-r));
		return -1;
	}
	return 0;
}

void ublk_queue_stop(struct ublk_queue *q)
{
	uint64_t one = 1;

	atomic_store(&q->stopping, true);
	if (q->efd >= 0 && write(q->efd, &one, sizeof(one)) != sizeof(one))
		ublk_err("queue %u: eventfd: %s", q->qid, strerror(errno));
}

void ublk_queue_join(struct ublk_queue *q)
{
	unsigned int t;

	if (q->started)
		pthread_join(q->thread, NULL);
	q->started = false;
	/* Leaving the ring cancels the fetches the kernel still holds. */
	if (q->ring_ok)
		io_uring_queue_exit(&q->ring);
	q->ring_ok = false;
	if (q->descs)
		munmap((void *)q->descs, q->descs_len);
	q->descs = NULL;
	if (q->efd >= 0)
		close(q->efd);
	q->efd = -1;
	for (t = 0; q->ios && t < q->depth; t++)
		free(q->ios[t].buf);
	free(q->ios);
	q->ios = NULL;
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
}
