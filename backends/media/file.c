// SPDX-License-Identifier: GPL-2.0
/*
 * The file store: a regular file or a host block device, as the loop
 * driver keeps one.  Reads past EOF are zeroes, O_DIRECT goes through an
 * aligned bounce buffer when the caller's buffer is not aligned, FLUSH is
 * fdatasync, DISCARD punches holes, WRITE_ZEROES uses fallocate where it
 * can (nbdkit's file plugin's fallbacks).  The I/O is blocking and ends
 * inline, on the submitter's thread: the file device runs it on its
 * workers, the emulated devices on their hardware threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "media.h"
#include "../../server/mq/log.h"

#define FILE_DIO_MEM_ALIGN 4096u
/* O_DIRECT from an unaligned buffer bounces this much at a time. */
#define FILE_BOUNCE_MAX (1u << 20)

struct file_store {
	char *path;
	int fd;	    /* through the page cache (O_DSYNC with sync) */
	int dio_fd; /* O_DIRECT, or -1 */
	unsigned int dio_align;
	bool is_bdev;
	bool sync;
	bool can_punch;
	atomic_bool can_zero_range; /* until the filesystem says otherwise */
	atomic_bool warned_dio;
	/* "file=", "image=" or "media=file:": what error lines print. */
	char label[32];
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
static int rw_direct(struct file_store *f, bool write, char *buf, size_t len,
		     uint64_t pos, size_t *done)
{
	size_t cap = len < FILE_BOUNCE_MAX ? len : FILE_BOUNCE_MAX;
	void *bounce;
	int err = 0;

	if (!((uintptr_t)buf & (FILE_DIO_MEM_ALIGN - 1)))
		return rw_full(f->dio_fd, write, buf, len, pos, done);

	err = posix_memalign(&bounce, FILE_DIO_MEM_ALIGN, cap);
	if (err)
		return err;
	while (*done < len && !err) {
		size_t n = len - *done < cap ? len - *done : cap;
		size_t got = 0;

		if (write)
			memcpy(bounce, buf + *done, n);
		err = rw_full(f->dio_fd, write, bounce, n, pos + *done, &got);
		if (!write)
			memcpy(buf + *done, bounce, got);
		*done += got;
	}
	free(bounce);
	return err;
}

static int file_rw(struct media *m, bool write, char *buf, size_t len,
		   uint64_t pos)
{
	struct file_store *f = m->priv;
	size_t done = 0;
	int err;

	if (f->dio_fd >= 0 && !((pos | len) & (f->dio_align - 1))) {
		err = rw_direct(f, write, buf, len, pos, &done);
		if (err != EINVAL)
			return err;
		/* The filesystem wants a larger alignment: use the cache. */
		if (!atomic_exchange(&f->warned_dio, true))
			pr_warn("%s: O_DIRECT refused at byte %" PRIu64
				"; misaligned I/O goes through the page cache",
				m->name, pos);
	}
	return rw_full(f->fd, write, buf, len, pos, &done);
}

static int file_fallocate(struct file_store *f, int mode, uint64_t pos,
			  uint64_t len)
{
	return fallocate(f->fd, mode, pos, len) ? errno : 0;
}

static int file_write_zeroes_slow(struct file_store *f, uint64_t pos,
				  uint64_t len)
{
	static const char zeroes[65536];

	while (len) {
		size_t n = len < sizeof(zeroes) ? len : sizeof(zeroes);
		size_t done = 0;
		int err = rw_full(f->fd, true, (char *)zeroes, n, pos, &done);

		if (err)
			return err;
		pos += n;
		len -= n;
	}
	return 0;
}

/* As lo_fallocate, with nbdkit's file plugin's fallbacks. */
static int file_write_zeroes(struct file_store *f, uint64_t pos, uint64_t len,
			     bool nounmap)
{
	int err;

	if (!nounmap && f->can_punch)
		return file_fallocate(
			f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, pos,
			len);

	if (atomic_load(&f->can_zero_range)) {
		err = file_fallocate(f,
				     FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
				     pos, len);
		if (err != EOPNOTSUPP)
			return err;
		atomic_store(&f->can_zero_range, false);
	}

	/* Keep the blocks allocated: punch, then allocate again. */
	if (f->can_punch && !f->is_bdev &&
	    !file_fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, pos,
			    len) &&
	    !file_fallocate(f, FALLOC_FL_KEEP_SIZE, pos, len))
		return 0;

	return file_write_zeroes_slow(f, pos, len);
}

static int file_flush(struct file_store *f)
{
	return fdatasync(f->fd) ? errno : 0;
}

static int file_do(struct media *m, struct media_io *io)
{
	struct file_store *f = m->priv;
	int err;

	switch (io->op) {
	case MEDIA_READ:
		return file_rw(m, false, io->buf, io->len, io->offset);
	case MEDIA_WRITE:
		err = file_rw(m, true, io->buf, io->len, io->offset);
		break;
	case MEDIA_FLUSH:
		return file_flush(f);
	case MEDIA_DISCARD:
		if (!f->can_punch)
			return EOPNOTSUPP;
		return file_fallocate(
			f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			io->offset, io->len);
	case MEDIA_WRITE_ZEROES:
		err = file_write_zeroes(f, io->offset, io->len,
					io->flags & MEDIA_IO_NOUNMAP);
		break;
	default:
		return EOPNOTSUPP;
	}
	if (!err && (io->flags & MEDIA_IO_FUA) && !f->sync)
		err = file_flush(f);
	return err;
}

static void file_submit(struct media *m, struct media_io *io)
{
	media_io_end(io, file_do(m, io));
}

/* The allocation map from SEEK_DATA/SEEK_HOLE. */
static int file_extents(struct media *m, uint64_t offset, uint64_t length,
			extent_fn *fn, void *arg)
{
	struct file_store *f = m->priv;
	uint64_t end = offset + length;
	off_t data, hole;

	if (end > m->size || end < offset)
		end = m->size;
	while (offset < end) {
		data = lseek(f->fd, offset, SEEK_DATA);
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

		hole = lseek(f->fd, offset, SEEK_HOLE);
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
		FILE *fp;
		int n;

		snprintf(path, sizeof(path), fmt[i], major(rdev), minor(rdev));
		fp = fopen(path, "re");
		if (!fp)
			continue;
		n = fscanf(fp, "%llu", &max);
		fclose(fp);
		if (n == 1)
			return max > 0;
	}
	return false;
}

static int file_open_fd(struct media *m, const struct media_open_args *a,
			struct mq_err *e)
{
	struct file_store *f = m->priv;
	int flags = O_CLOEXEC | (a->sync ? O_DSYNC : 0);

	m->read_only = a->read_only;
	f->fd = open(f->path, flags | (m->read_only ? O_RDONLY : O_RDWR));
	if (f->fd < 0 && !m->read_only &&
	    (errno == EACCES || errno == EROFS || errno == EPERM)) {
		pr_info("%s: %s is read-only; exporting it read-only", m->name,
			f->path);
		m->read_only = true;
		f->fd = open(f->path, flags | O_RDONLY);
	}
	if (f->fd < 0)
		return mq_err_set(e, "%s%s: %s", f->label, f->path,
				  mq_strerror(errno));
	return 0;
}

static int file_open_direct(struct media *m, const struct media_open_args *a,
			    struct mq_err *e)
{
	struct file_store *f = m->priv;
	int flags = O_CLOEXEC | O_DIRECT | (a->sync ? O_DSYNC : 0) |
		    (m->read_only ? O_RDONLY : O_RDWR);

	f->dio_fd = open(f->path, flags);
	if (f->dio_fd < 0) {
		if (errno == EINVAL)
			return mq_err_set(
				e,
				"direct=1: the filesystem of %s does not support O_DIRECT",
				f->path);
		return mq_err_set(e, "%s%s: %s", f->label, f->path,
				  mq_strerror(errno));
	}
	return 0;
}

/* The size: the file's, or a->size (growing a regular file). */
static int file_size(struct media *m, const struct stat *st,
		     const struct media_open_args *a, struct mq_err *e)
{
	struct file_store *f = m->priv;
	unsigned int bs = a->block_size;
	uint64_t have = st->st_size, want = a->size;

	if (f->is_bdev && ioctl(f->fd, BLKGETSIZE64, &have))
		return mq_err_set(e, "%s%s: BLKGETSIZE64: %s", f->label,
				  f->path, mq_strerror(errno));

	if (!want) {
		if (!have)
			return mq_err_set(
				e,
				"%s%s is empty; give size=BYTES to extend it",
				f->label, f->path);
		if (have % bs)
			return mq_err_set(e,
					  "%s%s: its size %" PRIu64
					  " is not a multiple of bs=%u",
					  f->label, f->path, have, bs);
		m->size = have;
		return 0;
	}

	if (want % bs || want > INT64_MAX)
		return mq_err_set(e,
				  "size=%" PRIu64
				  ": must be a non-zero multiple of bs=%u",
				  want, bs);
	if (want > have) {
		if (f->is_bdev)
			return mq_err_set(
				e,
				"size=%" PRIu64
				": larger than the block device %s (%" PRIu64
				" bytes)",
				want, f->path, have);
		if (m->read_only)
			return mq_err_set(
				e,
				"size=%" PRIu64
				": cannot extend the read-only file %s (%" PRIu64
				" bytes)",
				want, f->path, have);
		if (ftruncate(f->fd, want))
			return mq_err_set(e,
					  "size=%" PRIu64 ": extending %s: %s",
					  want, f->path, mq_strerror(errno));
	}
	m->size = want;
	return 0;
}

/* Can we punch holes?  Try past the used range, where it is harmless. */
static void file_probe_discard(struct media *m, const struct stat *st)
{
	struct file_store *f = m->priv;

	if (m->read_only)
		f->can_punch = false;
	else if (f->is_bdev)
		f->can_punch = bdev_can_write_zeroes(st->st_rdev);
	else
		f->can_punch = !file_fallocate(
			f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, m->size,
			4096);
	atomic_init(&f->can_zero_range, !m->read_only);
}

static void file_close(struct media *m)
{
	struct file_store *f = m->priv;

	if (!f)
		return;
	if (f->fd >= 0) {
		if (!m->read_only && fdatasync(f->fd))
			pr_err("%s: fdatasync %s: %s", m->name, f->path,
			       mq_strerror(errno));
		close(f->fd);
	}
	if (f->dio_fd >= 0)
		close(f->dio_fd);
	free(f->path);
	free(f);
	m->priv = NULL;
}

static int file_open(struct media *m, const char *arg,
		     const struct media_open_args *a, struct mq_err *e)
{
	const char *key = a->key ? a->key : "media";
	struct file_store *f;
	struct stat st;

	if (!arg || !*arg)
		return mq_err_set(e, "%s=file:PATH: the path is missing", key);

	f = calloc(1, sizeof(*f));
	if (!f)
		return mq_err_set(e, "out of memory");
	f->fd = f->dio_fd = -1;
	/* "file=PATH" and "image=PATH" name the path; "media=" the store. */
	if (strcmp(key, "media") == 0)
		snprintf(f->label, sizeof(f->label), "media=file:");
	else
		snprintf(f->label, sizeof(f->label), "%s=", key);
	f->dio_align = a->block_size;
	f->sync = a->sync;
	m->priv = f;
	f->path = strdup(arg);
	if (!f->path) {
		mq_err_set(e, "out of memory");
		goto fail;
	}
	if (stat(arg, &st)) {
		mq_err_set(e, "%s%s: %s", f->label, arg, mq_strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		mq_err_set(e, "%s%s: not a regular file or block device",
			   f->label, arg);
		goto fail;
	}
	f->is_bdev = S_ISBLK(st.st_mode);
	if (file_open_fd(m, a, e))
		goto fail;
	if (fstat(f->fd, &st)) {
		mq_err_set(e, "%s%s: %s", f->label, arg, mq_strerror(errno));
		goto fail;
	}
	if ((a->direct && file_open_direct(m, a, e)) || file_size(m, &st, a, e))
		goto fail;
	file_probe_discard(m, &st);
	if (!f->is_bdev && st.st_blksize >= a->block_size &&
	    st.st_blksize <= (1 << 20) &&
	    !(st.st_blksize & (st.st_blksize - 1)))
		m->io_opt = st.st_blksize;

	m->caps = MEDIA_CAN_ZERO | MEDIA_CAN_EXTENTS | MEDIA_CAN_MULTI_CONN;
	if (!a->sync)
		m->caps |= MEDIA_CAN_FLUSH;
	if (f->can_punch)
		m->caps |= MEDIA_CAN_TRIM | MEDIA_CAN_FAST_ZERO;
	if (f->can_punch && !f->is_bdev)
		m->caps |= MEDIA_TRIM_ZEROES;
	if (m->read_only)
		m->caps &= ~(MEDIA_CAN_ZERO | MEDIA_CAN_FLUSH);
	return 0;

fail:
	file_close(m);
	return -1;
}

const struct media_ops file_media_ops = {
	.name = "file",
	.usage = "file:PATH",
	.open = file_open,
	.close = file_close,
	.submit = file_submit,
	.extents = file_extents,
};
