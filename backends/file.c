// SPDX-License-Identifier: GPL-2.0
/*
 * file: a loop device over a regular file or a host block device, after
 * drivers/block/loop.c.  queue_rq starts the request and hands it to a
 * pool of workers, which do the blocking pread/pwrite/fallocate and end
 * it.  Like loop, it keeps the elevator at none (seed 001).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "device.h"
#include "common/workqueue.h"
#include "../server/mq/log.h"

#define LOOP_DIO_MEM_ALIGN 4096u
/* O_DIRECT from an unaligned buffer bounces this much at a time. */
#define LOOP_BOUNCE_MAX (1u << 20)

struct loop_cmd {
	struct work_item work; /* first: the item is the pdu */
};

struct loop_dev {
	struct mq_tag_set tag_set;
	struct mq_queue *queue;
	struct gendisk disk;
	struct workqueue *wq;
	char *path;
	int fd;	    /* through the page cache (O_DSYNC with sync) */
	int dio_fd; /* O_DIRECT, or -1 */
	unsigned int dio_align;
	uint64_t size;
	bool is_bdev;
	bool read_only;
	bool can_punch;
	atomic_bool can_zero_range; /* until the filesystem says otherwise */
	atomic_bool warned_dio;
};

/* Read or write all of [pos, pos + len) on fd; reads past EOF are zeroes. */
static int rw_full(int fd, bool write, char *buf, size_t len, uint64_t pos,
		   size_t *done)
{
	while (*done < len) {
		size_t left = len - *done;
		ssize_t n;

		if (write)
			n = pwrite(fd, buf + *done, left, pos + *done);
		else
			n = pread(fd, buf + *done, left, pos + *done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0) {
			if (write)
				return EIO;
			memset(buf + *done, 0, left);
			n = left;
		}
		*done += n;
	}
	return 0;
}

/* O_DIRECT, through an aligned bounce buffer when buf is not aligned. */
static int rw_direct(struct loop_dev *lo, bool write, char *buf, size_t len,
		     uint64_t pos, size_t *done)
{
	size_t cap = len < LOOP_BOUNCE_MAX ? len : LOOP_BOUNCE_MAX;
	void *bounce;
	int err = 0;

	if (!((uintptr_t)buf & (LOOP_DIO_MEM_ALIGN - 1)))
		return rw_full(lo->dio_fd, write, buf, len, pos, done);

	err = posix_memalign(&bounce, LOOP_DIO_MEM_ALIGN, cap);
	if (err)
		return err;
	while (*done < len && !err) {
		size_t n = len - *done < cap ? len - *done : cap;
		size_t got = 0;

		if (write)
			memcpy(bounce, buf + *done, n);
		err = rw_full(lo->dio_fd, write, bounce, n, pos + *done, &got);
		if (!write)
			memcpy(buf + *done, bounce, got);
		*done += got;
	}
	free(bounce);
	return err;
}

static int loop_rw(struct loop_dev *lo, bool write, char *buf, size_t len,
		   uint64_t pos)
{
	size_t done = 0;
	int err;

	if (lo->dio_fd >= 0 && !((pos | len) & (lo->dio_align - 1))) {
		err = rw_direct(lo, write, buf, len, pos, &done);
		if (err != EINVAL)
			return err;
		/* The filesystem wants a larger alignment: use the cache. */
		if (!atomic_exchange(&lo->warned_dio, true))
			pr_warn("%s: O_DIRECT refused at sector %" PRIu64
				"; misaligned I/O goes through the page cache",
				lo->disk.disk_name, pos >> SECTOR_SHIFT);
	}
	return rw_full(lo->fd, write, buf, len, pos, &done);
}

static int loop_fallocate(struct loop_dev *lo, int mode, uint64_t pos,
			  uint64_t len)
{
	return fallocate(lo->fd, mode, pos, len) ? errno : 0;
}

static int loop_write_zeroes_slow(struct loop_dev *lo, uint64_t pos,
				  uint64_t len)
{
	static const char zeroes[65536];

	while (len) {
		size_t n = len < sizeof(zeroes) ? len : sizeof(zeroes);
		size_t done = 0;
		int err = rw_full(lo->fd, true, (char *)zeroes, n, pos, &done);

		if (err)
			return err;
		pos += n;
		len -= n;
	}
	return 0;
}

/* As lo_fallocate, with nbdkit's file plugin's fallbacks. */
static int loop_write_zeroes(struct loop_dev *lo, struct bio *bio)
{
	uint64_t pos = bio->bi_sector << SECTOR_SHIFT;
	uint64_t len = bio->bi_size;
	int err;

	if (!(bio->bi_flags & REQ_NOUNMAP) && lo->can_punch)
		return loop_fallocate(
			lo, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, pos,
			len);

	if (atomic_load(&lo->can_zero_range)) {
		err = loop_fallocate(lo,
				     FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
				     pos, len);
		if (err != EOPNOTSUPP)
			return err;
		atomic_store(&lo->can_zero_range, false);
	}

	/* Keep the blocks allocated: punch, then allocate again. */
	if (lo->can_punch && !lo->is_bdev &&
	    !loop_fallocate(lo, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, pos,
			    len) &&
	    !loop_fallocate(lo, FALLOC_FL_KEEP_SIZE, pos, len))
		return 0;

	return loop_write_zeroes_slow(lo, pos, len);
}

static int loop_flush(struct loop_dev *lo)
{
	return fdatasync(lo->fd) ? errno : 0;
}

static int loop_do_bio(struct loop_dev *lo, struct bio *bio)
{
	uint64_t pos = bio->bi_sector << SECTOR_SHIFT;

	if (lo->read_only && op_is_write(bio->bi_op))
		return EROFS;

	switch (bio->bi_op) {
	case REQ_OP_READ:
		return loop_rw(lo, false, bio->bi_buf, bio->bi_size, pos);
	case REQ_OP_WRITE:
		return loop_rw(lo, true, bio->bi_buf, bio->bi_size, pos);
	case REQ_OP_FLUSH:
		return loop_flush(lo);
	case REQ_OP_DISCARD:
		if (!lo->can_punch)
			return EOPNOTSUPP;
		return loop_fallocate(
			lo, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, pos,
			bio->bi_size);
	case REQ_OP_WRITE_ZEROES:
		return loop_write_zeroes(lo, bio);
	default:
		return EOPNOTSUPP;
	}
}

static const char *loop_op_name(enum req_op op)
{
	switch (op) {
	case REQ_OP_READ:
		return "read";
	case REQ_OP_WRITE:
		return "write";
	case REQ_OP_FLUSH:
		return "flush";
	case REQ_OP_DISCARD:
		return "discard";
	case REQ_OP_WRITE_ZEROES:
		return "write zeroes";
	default:
		return req_op_name(op);
	}
}

static void loop_handle_cmd(struct work_item *item)
{
	struct request *rq = mq_rq_from_pdu(item);
	struct loop_dev *lo = rq->q->queuedata;
	struct bio *bio;
	int err = 0;

	if (req_op(rq) == REQ_OP_FLUSH) {
		err = loop_flush(lo);
		if (err)
			pr_err("%s: flush: %s", lo->disk.disk_name,
			       mq_strerror(err));
	} else {
		rq_for_each_bio (bio, rq) {
			err = loop_do_bio(lo, bio);
			if (!err)
				continue;
			pr_err("%s: %s at sector %" PRIu64 ": %s",
			       lo->disk.disk_name, loop_op_name(bio->bi_op),
			       bio->bi_sector, mq_strerror(err));
			break;
		}
	}
	mq_end_request(rq, err);
}

static enum mq_qrc loop_queue_rq(struct mq_hw_ctx *hctx,
				 const struct mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct loop_dev *lo = rq->q->queuedata;
	struct loop_cmd *cmd = mq_rq_to_pdu(rq);

	mq_start_request(rq);
	queue_work(lo->wq, &cmd->work, loop_handle_cmd);
	return MQ_QRC_OK;
}

static const struct mq_ops loop_mq_ops = {
	.queue_rq = loop_queue_rq,
};

/* The allocation map from SEEK_DATA/SEEK_HOLE. */
static int loop_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
			extent_fn *fn, void *arg)
{
	struct loop_dev *lo = disk->private_data;
	uint64_t end = offset + length;
	off_t data, hole;

	if (end > lo->size || end < offset)
		end = lo->size;
	while (offset < end) {
		data = lseek(lo->fd, offset, SEEK_DATA);
		if (data < 0 && errno != ENXIO) {
			/* No SEEK_DATA here: call it all data. */
			fn(arg, offset, end - offset, 0);
			return 0;
		}
		if (data < 0)
			data = end; /* ENXIO: a hole to EOF */
		if ((uint64_t)data > end)
			data = end;
		if ((uint64_t)data > offset) {
			if (fn(arg, offset, data - offset,
			       MQ_EXTENT_HOLE | MQ_EXTENT_ZERO) < 0)
				return 0;
			offset = data;
			continue;
		}

		hole = lseek(lo->fd, offset, SEEK_HOLE);
		if (hole < 0 && errno != ENXIO)
			return errno;
		/* Past EOF (the file shrank under us), or a bad answer. */
		if (hole < 0 || (uint64_t)hole > end ||
		    (uint64_t)hole <= offset)
			hole = end;
		if (fn(arg, offset, hole - offset, 0) < 0)
			return 0;
		offset = hole;
	}
	return 0;
}

static const struct block_device_operations loop_fops = {
	.extents = loop_extents,
};

static void loop_free(struct loop_dev *lo)
{
	if (lo->queue)
		mq_cleanup_queue(lo->queue);
	if (lo->tag_set.tags)
		mq_free_tag_set(&lo->tag_set);
	workqueue_destroy(lo->wq);
	if (lo->fd >= 0) {
		if (!lo->read_only && fdatasync(lo->fd))
			pr_err("%s: fdatasync %s: %s", lo->disk.disk_name,
			       lo->path, mq_strerror(errno));
		close(lo->fd);
	}
	if (lo->dio_fd >= 0)
		close(lo->dio_fd);
	free(lo->path);
	free(lo);
}

/* Does the block device zero out ranges without writing (sysfs says)? */
static bool bdev_can_write_zeroes(dev_t rdev)
{
	static const char *const fmt[] = {
		"/sys/dev/block/%u:%u/queue/write_zeroes_max_bytes",
		"/sys/dev/block/%u:%u/../queue/write_zeroes_max_bytes",
	};
	unsigned long long max = 0;
	char path[128];
	size_t i;

	for (i = 0; i < 2; i++) {
		FILE *f;
		int n;

		snprintf(path, sizeof(path), fmt[i], major(rdev), minor(rdev));
		f = fopen(path, "re");
		if (!f)
			continue;
		n = fscanf(f, "%llu", &max);
		fclose(f);
		if (n == 1)
			return max > 0;
	}
	return false;
}

static int loop_open(struct loop_dev *lo, bool readonly, bool sync,
		     struct mq_err *e)
{
	int flags = O_CLOEXEC | (sync ? O_DSYNC : 0);

	lo->read_only = readonly;
	lo->fd = open(lo->path, flags | (readonly ? O_RDONLY : O_RDWR));
	if (lo->fd < 0 && !readonly &&
	    (errno == EACCES || errno == EROFS || errno == EPERM)) {
		pr_info("file: %s is read-only; exporting it read-only",
			lo->path);
		lo->read_only = true;
		lo->fd = open(lo->path, flags | O_RDONLY);
	}
	if (lo->fd < 0)
		return mq_err_set(e, "file=%s: %s", lo->path,
				  mq_strerror(errno));
	return 0;
}

static int loop_open_direct(struct loop_dev *lo, bool sync, struct mq_err *e)
{
	int flags = O_CLOEXEC | O_DIRECT | (sync ? O_DSYNC : 0) |
		    (lo->read_only ? O_RDONLY : O_RDWR);

	lo->dio_fd = open(lo->path, flags);
	if (lo->dio_fd < 0) {
		if (errno == EINVAL)
			return mq_err_set(
				e,
				"direct=1: the filesystem of %s does not support O_DIRECT",
				lo->path);
		return mq_err_set(e, "file=%s: %s", lo->path,
				  mq_strerror(errno));
	}
	return 0;
}

/* The size to export: the file's, or size= (growing a regular file). */
static int loop_size(struct loop_dev *lo, const struct stat *st,
		     struct mq_params *p, unsigned int bs, struct mq_err *e)
{
	uint64_t have = st->st_size, want;

	if (lo->is_bdev && ioctl(lo->fd, BLKGETSIZE64, &have))
		return mq_err_set(e, "file=%s: BLKGETSIZE64: %s", lo->path,
				  mq_strerror(errno));

	if (!mq_params_has(p, "size")) {
		if (!have)
			return mq_err_set(
				e,
				"file=%s is empty; give size=BYTES to extend it",
				lo->path);
		if (have % bs)
			return mq_err_set(e,
					  "file=%s: its size %" PRIu64
					  " is not a multiple of bs=%u",
					  lo->path, have, bs);
		lo->size = have;
		return 0;
	}

	if (mq_param_size(p, "size", 0, &want, e))
		return -1;
	if (!want || want % bs || want > INT64_MAX)
		return mq_err_set(e,
				  "size=%" PRIu64
				  ": must be a non-zero multiple of bs=%u",
				  want, bs);
	if (want > have) {
		if (lo->is_bdev)
			return mq_err_set(
				e,
				"size=%" PRIu64
				": larger than the block device %s (%" PRIu64
				" bytes)",
				want, lo->path, have);
		if (lo->read_only)
			return mq_err_set(
				e,
				"size=%" PRIu64
				": cannot extend the read-only file %s (%" PRIu64
				" bytes)",
				want, lo->path, have);
		if (ftruncate(lo->fd, want))
			return mq_err_set(e,
					  "size=%" PRIu64 ": extending %s: %s",
					  want, lo->path, mq_strerror(errno));
	}
	lo->size = want;
	return 0;
}

/* Can we punch holes?  Try past the exported range, where it is harmless. */
static void loop_probe_discard(struct loop_dev *lo, const struct stat *st)
{
	if (lo->read_only)
		lo->can_punch = false;
	else if (lo->is_bdev)
		lo->can_punch = bdev_can_write_zeroes(st->st_rdev);
	else
		lo->can_punch = !loop_fallocate(
			lo, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			lo->size, 4096);
	atomic_init(&lo->can_zero_range, !lo->read_only);
}

static void loop_set_limits(struct loop_dev *lo, const struct stat *st,
			    unsigned int bs, bool sync)
{
	struct queue_limits *lim = &lo->queue->limits;
	unsigned int blksize = st->st_blksize;

	lim->logical_block_size = bs;
	lim->physical_block_size = bs;
	if (!lo->is_bdev && blksize >= bs && blksize <= (1u << 20) &&
	    !(blksize & (blksize - 1)))
		lim->io_opt = blksize;
	lim->max_sectors = 65536;
	lim->max_segments = 128;
	if (lo->can_punch) {
		lim->max_discard_sectors = UINT32_MAX >> SECTOR_SHIFT;
		lim->discard_granularity = lim->io_opt > bs ? lim->io_opt : bs;
	}
	if (!lo->read_only)
		lim->max_write_zeroes_sectors = UINT32_MAX >> SECTOR_SHIFT;
	lim->write_cache = !sync;
	lim->fua = false; /* the core sends a FLUSH after the write */
	lim->rotational = false;
}

static int loop_init_disk(struct mq_device *dev, struct loop_dev *lo,
			  struct mq_err *e)
{
	struct gendisk *disk = &lo->disk;

	snprintf(disk->description, sizeof(disk->description),
		 "file-backed loop device loop0 (%s)", lo->path);
	disk->queue = lo->queue;
	set_capacity(disk, lo->size >> SECTOR_SHIFT);
	disk->read_only = lo->read_only;
	disk->features = DISK_MULTI_CONN;
	/*
	 * Probed: with hole punching, every WRITE_ZEROES is a fallocate
	 * (ZERO_RANGE, or punch then allocate for NOUNMAP).  Without it
	 * ZERO_RANGE may still work, but nothing promises it.
	 */
	if (lo->can_punch)
		disk->features |= DISK_FAST_ZERO;
	disk->fops = &loop_fops;
	disk->private_data = lo;
	if (mq_device_add_disk(dev, disk))
		return mq_err_set(e, "cannot add disk loop0");
	return 0;
}

static int loop_probe(struct mq_device *dev, struct mq_params *p,
		      struct mq_err *e)
{
	const char *path;
	bool direct, sync, readonly;
	unsigned int bs, workers;
	struct loop_dev *lo;
	struct stat st;

	if (mq_param_str(p, "file", NULL, &path, e) ||
	    mq_param_bool(p, "direct", false, &direct, e) ||
	    mq_param_bool(p, "sync", false, &sync, e) ||
	    mq_param_bool_alias(p, "readonly", "read_only", false, &readonly,
				e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &bs, e) ||
	    mq_param_uint(p, "workers", 4, 1, 64, &workers, e))
		return -1;
	if (!path || !*path)
		return mq_err_set(e, "file=PATH is required");
	if (bs & (bs - 1))
		return mq_err_set(
			e, "bs=%u: must be a power of two from 512 to 4096",
			bs);
	if (stat(path, &st))
		return mq_err_set(e, "file=%s: %s", path, mq_strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return mq_err_set(
			e, "file=%s: not a regular file or block device", path);

	lo = calloc(1, sizeof(*lo));
	if (!lo)
		return mq_err_set(e, "out of memory");
	lo->fd = lo->dio_fd = -1;
	snprintf(lo->disk.disk_name, sizeof(lo->disk.disk_name), "loop0");
	lo->is_bdev = S_ISBLK(st.st_mode);
	lo->dio_align = bs;
	lo->path = strdup(path);
	if (!lo->path) {
		mq_err_set(e, "out of memory");
		goto fail;
	}
	if (loop_open(lo, readonly, sync, e))
		goto fail;
	if (fstat(lo->fd, &st)) {
		mq_err_set(e, "file=%s: %s", path, mq_strerror(errno));
		goto fail;
	}
	if ((direct && loop_open_direct(lo, sync, e)) ||
	    loop_size(lo, &st, p, bs, e))
		goto fail;
	loop_probe_discard(lo, &st);

	lo->wq = workqueue_create("loop0", workers);
	if (!lo->wq) {
		mq_err_set(e, "cannot start %u workers: %s", workers,
			   mq_strerror(errno));
		goto fail;
	}

	lo->tag_set.ops = &loop_mq_ops;
	lo->tag_set.nr_hw_queues = 1;
	lo->tag_set.queue_depth = 128;
	lo->tag_set.cmd_size = sizeof(struct loop_cmd);
	lo->tag_set.timeout_ms = dev->io_timeout_ms;
	lo->tag_set.flags = MQ_F_SHOULD_MERGE | MQ_F_NO_SCHED_BY_DEFAULT;
	lo->tag_set.driver_data = lo;
	if (mq_alloc_tag_set(&lo->tag_set)) {
		lo->tag_set.tags = NULL;
		mq_err_set(e, "cannot allocate the tag set");
		goto fail;
	}
	lo->queue = mq_init_queue(&lo->tag_set, dev->nr_ctx, "loop0");
	if (!lo->queue) {
		mq_err_set(e, "cannot create the queue");
		goto fail;
	}
	lo->queue->queuedata = lo;
	loop_set_limits(lo, &st, bs, sync);

	dev->private_data = lo;
	if (loop_init_disk(dev, lo, e))
		goto fail;
	return 0;

fail:
	dev->private_data = NULL;
	loop_free(lo);
	return -1;
}

static void loop_remove(struct mq_device *dev)
{
	loop_free(dev->private_data);
	dev->private_data = NULL;
}

static int loop_sync(struct mq_device *dev)
{
	struct loop_dev *lo = dev->private_data;

	return lo->read_only ? 0 : loop_flush(lo);
}

static const struct mq_param_spec loop_params[] = {
	{"file", NULL, "path of a regular file or block device (required)"},
	{"size", NULL, "size in bytes; a smaller regular file is extended"},
	{"bs", "512", "logical block size, 512 to 4096, a power of two"},
	{"direct", "0", "use O_DIRECT, bypassing the host page cache"},
	{"sync", "0", "open with O_DSYNC: no volatile cache, no flushes"},
	{"readonly", "0", "export read-only (read_only= is taken too)"},
	{"workers", "4", "I/O threads, 1 to 64"},
	{NULL},
};

const struct mq_driver file_driver = {
	.name = "file",
	.description = "loop device over a file or block device",
	.params = loop_params,
	.probe = loop_probe,
	.remove = loop_remove,
	.sync = loop_sync,
};
