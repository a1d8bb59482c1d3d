// SPDX-License-Identifier: GPL-2.0
/* Listening Unix sockets that never take a live server's path. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "unix-socket.h"

/*
 * Whether something accepts connections at sa.  Non-blocking: a live
 * server with a full backlog answers EAGAIN, a dead one ECONNREFUSED.
 */
static bool socket_is_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ||
	       errno == EAGAIN;
	close(fd);
	return live;
}

int mq_unix_listen(const char *path, mode_t mode, int type_flags, int backlog,
		   char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket",
				 path);
			return -1;
		}
		if (socket_is_live(&sa)) {
			snprintf(err, errlen,
				 "%s: another server listens there", path);
			return -1;
		}
		if (unlink(path)) {
			snprintf(err, errlen, "unlink %s: %s", path,
				 strerror(errno));
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | type_flags, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	/* The mode the socket file is created with (Linux takes it). */
	if ((mode && fchmod(fd, mode)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (mode && chmod(path, mode)) || listen(fd, backlog)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}
