// SPDX-License-Identifier: GPL-2.0
/*
 * An LD_PRELOAD shim for test-durability.sh: it logs, in the order they
 * happen, the writes to regular files, the fdatasync/fsync calls and the
 * NBD replies a server sends, to the file $MQBLK_SYNCLOG, one line each:
 *
 *   W dev:ino D      a write to a regular file returned (D=1: the file is
 *                    open O_DSYNC/O_SYNC or the call asked RWF_DSYNC, so
 *                    the write was durable when it returned)
 *   SB tid dev:ino   an fdatasync/fsync is about to start
 *   SE tid dev:ino R it returned R (0 or an errno)
 *   R cookie         a reply with this cookie (16 hex digits, as on the
 *                    wire) is about to be sent on a socket
 *
 * A write is logged after it returned, a sync's start before it starts
 * and its end after it returned, a reply before it is sent; the log is
 * written under one lock.  So "W, then SB, SE, then R" in the log proves
 * the sync started after the write had ended and had returned before the
 * reply left.  Replies are found by their magic (simple, structured and
 * extended headers); the test sends no reads, so no payload is scanned.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef RWF_DSYNC
#define RWF_DSYNC 0x00000002
#endif
#ifndef RWF_SYNC
#define RWF_SYNC 0x00000004
#endif

static pthread_mutex_t shim_lock = PTHREAD_MUTEX_INITIALIZER;
static int shim_fd = -2;

static void shim_log(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	pthread_mutex_lock(&shim_lock);
	if (shim_fd == -2) {
		const char *path = getenv("MQBLK_SYNCLOG");

		shim_fd = path ? (int)syscall(SYS_openat, AT_FDCWD, path,
					      O_WRONLY | O_CREAT | O_APPEND |
						      O_CLOEXEC,
					      0600)
			       : -1;
	}
	if (shim_fd >= 0 && syscall(SYS_write, shim_fd, line, (size_t)n) != n)
		abort(); /* a lost line would make the log lie */
	pthread_mutex_unlock(&shim_lock);
}

static void *shim_real(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	if (!fn)
		abort();
	return fn;
}

#define REAL(ret, name, ...)                                                   \
	static ret (*real_##name)(__VA_ARGS__);                                \
	if (!real_##name)                                                      \
	real_##name = (ret(*)(__VA_ARGS__))shim_real(#name)

static bool shim_stat(int fd, struct stat *st)
{
	return fd >= 0 && !fstat(fd, st);
}

/* After a write to fd returned rc: log it if fd is a regular file. */
static void shim_wrote(int fd, ssize_t rc, int rwf)
{
	struct stat st;
	int fl;

	if (rc <= 0 || !shim_stat(fd, &st) || !S_ISREG(st.st_mode))
		return;
	fl = fcntl(fd, F_GETFL);
	shim_log("W %lu:%lu %d\n", (unsigned long)st.st_dev,
		 (unsigned long)st.st_ino,
		 (fl >= 0 && (fl & O_DSYNC)) || (rwf & (RWF_DSYNC | RWF_SYNC))
			 ? 1
			 : 0);
}

static const uint32_t shim_magics[] = {
	0x67446698, /* simple reply */
	0x668e33ef, /* structured reply chunk */
	0x6e8a278c, /* extended reply chunk */
};

/* Before bytes go out on fd: log the reply headers they carry. */
static void shim_scan(int fd, const unsigned char *p, size_t len)
{
	struct stat st;
	size_t i, k;

	if (!shim_stat(fd, &st) || !S_ISSOCK(st.st_mode))
		return;
	for (i = 0; i + 16 <= len; i++) {
		uint32_t m = (uint32_t)p[i] << 24 | (uint32_t)p[i + 1] << 16 |
			     (uint32_t)p[i + 2] << 8 | p[i + 3];

		for (k = 0; k < sizeof(shim_magics) / sizeof(*shim_magics); k++)
			if (m == shim_magics[k])
				break;
		if (k == sizeof(shim_magics) / sizeof(*shim_magics))
			continue;
		shim_log("R %02x%02x%02x%02x%02x%02x%02x%02x\n", p[i + 8],
			 p[i + 9], p[i + 10], p[i + 11], p[i + 12], p[i + 13],
			 p[i + 14], p[i + 15]);
		i += 15;
	}
}

/* The iovecs' first 1 MiB, in one piece, so that no header is split. */
static void shim_scan_iov(int fd, const struct iovec *iov, int n)
{
	struct stat st;
	unsigned char *buf;
	size_t len = 0, off = 0;
	int i;

	if (!shim_stat(fd, &st) || !S_ISSOCK(st.st_mode))
		return;
	for (i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (len > (1u << 20))
		len = 1u << 20;
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	for (i = 0; i < n && off < len; i++) {
		size_t c =
			iov[i].iov_len < len - off ? iov[i].iov_len : len - off;

		memcpy(buf + off, iov[i].iov_base, c);
		off += c;
	}
	shim_scan(fd, buf, len);
	free(buf);
}

static void shim_sync_begin(int fd, struct stat *st)
{
	if (shim_stat(fd, st) && S_ISREG(st->st_mode))
		shim_log("SB %ld %lu:%lu\n", (long)syscall(SYS_gettid),
			 (unsigned long)st->st_dev, (unsigned long)st->st_ino);
	else
		st->st_mode = 0;
}

static void shim_sync_end(const struct stat *st, int rc, int err)
{
	if (S_ISREG(st->st_mode))
		shim_log("SE %ld %lu:%lu %d\n", (long)syscall(SYS_gettid),
			 (unsigned long)st->st_dev, (unsigned long)st->st_ino,
			 rc ? err : 0);
}

int fdatasync(int fd)
{
	struct stat st;
	int rc, err;

	REAL(int, fdatasync, int);
	shim_sync_begin(fd, &st);
	rc = real_fdatasync(fd);
	err = errno;
	shim_sync_end(&st, rc, err);
	errno = err;
	return rc;
}

int fsync(int fd)
{
	struct stat st;
	int rc, err;

	REAL(int, fsync, int);
	shim_sync_begin(fd, &st);
	rc = real_fsync(fd);
	err = errno;
	shim_sync_end(&st, rc, err);
	errno = err;
	return rc;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	ssize_t rc;
	int err;

	REAL(ssize_t, write, int, const void *, size_t);
	shim_scan(fd, buf, len);
	rc = real_write(fd, buf, len);
	err = errno;
	shim_wrote(fd, rc, 0);
	errno = err;
	return rc;
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	ssize_t rc;
	int err;

	REAL(ssize_t, writev, int, const struct iovec *, int);
	shim_scan_iov(fd, iov, n);
	rc = real_writev(fd, iov, n);
	err = errno;
	shim_wrote(fd, rc, 0);
	errno = err;
	return rc;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	ssize_t rc;
	int err;

	REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
	rc = real_pwrite(fd, buf, len, off);
	err = errno;
	shim_wrote(fd, rc, 0);
	errno = err;
	return rc;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	ssize_t rc;
	int err;

	REAL(ssize_t, pwrite64, int, const void *, size_t, off_t);
	rc = real_pwrite64(fd, buf, len, off);
	err = errno;
	shim_wrote(fd, rc, 0);
	errno = err;
	return rc;
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	ssize_t rc;
	int err;

	REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t);
	rc = real_pwritev(fd, iov, n, off);
	err = errno;
	shim_wrote(fd, rc, 0);
	errno = err;
	return rc;
}

ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
	ssize_t rc;
	int err;

	REAL(ssize_t, pwritev2, int, const struct iovec *, int, off_t, int);
	rc = real_pwritev2(fd, iov, n, off, flags);
	err = errno;
	shim_wrote(fd, rc, flags);
	errno = err;
	return rc;
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	REAL(ssize_t, send, int, const void *, size_t, int);
	shim_scan(fd, buf, len);
	return real_send(fd, buf, len, flags);
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags,
	       const struct sockaddr *to, socklen_t tolen)
{
	REAL(ssize_t, sendto, int, const void *, size_t, int,
	     const struct sockaddr *, socklen_t);
	shim_scan(fd, buf, len);
	return real_sendto(fd, buf, len, flags, to, tolen);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	REAL(ssize_t, sendmsg, int, const struct msghdr *, int);
	shim_scan_iov(fd, msg->msg_iov, (int)msg->msg_iovlen);
	return real_sendmsg(fd, msg, flags);
}
