// SPDX-License-Identifier: GPL-2.0
/* A drive's bytes: sparse memory or an image file. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ide-store.h"
#include "../common/sparse.h"

int ide_store_init_mem(struct ide_store *s, uint64_t size)
{
	s->fd = -1;
	s->size = size;
	s->read_only = false;
	s->mem = sparse_store_new(size);
	return s->mem ? 0 : ENOMEM;
}

int ide_store_open(struct ide_store *s, const char *path, bool read_only,
		   unsigned int align)
{
	struct stat st;
	int err;

	s->mem = NULL;
	s->read_only = read_only;
	s->fd = open(path, (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (s->fd < 0)
		return errno;
	if (fstat(s->fd, &st) < 0) {
		err = errno;
		close(s->fd);
		s->fd = -1;
		return err;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		close(s->fd);
		s->fd = -1;
		return EINVAL;
	}
	if (S_ISBLK(st.st_mode)) {
		off_t end = lseek(s->fd, 0, SEEK_END);

		if (end < 0) {
			err = errno;
			close(s->fd);
			s->fd = -1;
			return err;
		}
		st.st_size = end;
	}
	s->size = (uint64_t)st.st_size / align * align;
	return 0;
}

void ide_store_close(struct ide_store *s)
{
	if (s->mem)
		sparse_store_free(s->mem);
	s->mem = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int ide_store_read(struct ide_store *s, void *buf, uint32_t len, uint64_t off)
{
	char *p = buf;
	ssize_t n;

	if (s->mem) {
		sparse_store_read(s->mem, buf, len, off);
		return 0;
	}
	while (len) {
		n = pread(s->fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0)
			return EIO; /* the image shrank under us */
		p += n;
		len -= (uint32_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int ide_store_write(struct ide_store *s, const void *buf, uint32_t len,
		    uint64_t off)
{
	const char *p = buf;
	ssize_t n;

	if (s->read_only)
		return EROFS;
	if (s->mem)
		return sparse_store_write(s->mem, buf, len, off);
	while (len) {
		n = pwrite(s->fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		p += n;
		len -= (uint32_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int ide_store_flush(struct ide_store *s)
{
	if (s->mem || s->read_only)
		return 0;
	return fdatasync(s->fd) < 0 ? errno : 0;
}

int ide_store_extents(struct ide_store *s, uint64_t off, uint64_t len,
		      extent_fn *fn, void *arg)
{
	if (s->mem)
		return sparse_store_extents(s->mem, off, len, fn, arg);
	fn(arg, off, len, 0);
	return 0;
}
