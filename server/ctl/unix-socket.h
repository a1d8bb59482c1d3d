/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Listening Unix sockets for the control socket and for mqblkd's -U: a
 * socket file left by a server that is gone is replaced, one that a live
 * server listens on is not, nor is anything that is not a socket.
 */
#ifndef MQBLK_UNIX_SOCKET_H
#define MQBLK_UNIX_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Bind PATH and listen with BACKLOG.  type_flags: SOCK_NONBLOCK and
 * SOCK_CLOEXEC as socket(2) takes them.  mode: the socket file's mode,
 * 0 for the umask's.  The descriptor, or -1 with one line in err
 * ("PATH: another server listens there").
 */
int mq_unix_listen(const char *path, mode_t mode, int type_flags, int backlog,
		   char *err, size_t errlen);

#endif
