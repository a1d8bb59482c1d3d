/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the benchmark's NBD client (nbd-loadgen) and do-nothing server
 * (nbd-ceiling) share: full reads and writes on a blocking socket, and
 * the protocol constants (the server's own nbd-proto.h).
 */
#ifndef MQBLK_BENCH_NBD_WIRE_H
#define MQBLK_BENCH_NBD_WIRE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../server/nbd/nbd-proto.h"

/* Read exactly len bytes; false on EOF or error. */
static inline bool wire_read(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* Write all of iov[0..cnt); false on error.  iov is consumed. */
static inline bool wire_writev(int fd, struct iovec *iov, int cnt)
{
	while (cnt > 0) {
		int batch = cnt > 1024 ? 1024 : cnt;
		ssize_t n = writev(fd, iov, batch);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		while (cnt > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return true;
}

static inline bool wire_write(int fd, const void *buf, size_t len)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return wire_writev(fd, &iov, 1);
}

#endif
