// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket: a thread of its own accepts clients, checks each
 * peer's credentials and serves each client on a thread of its own,
 * answering request lines with ctl_handle_line().  An operation that
 * waits (a scheduler switch on a stuck queue, a trace stop) holds only
 * its own client; the fault that unsticks the queue comes in on another.
 * Operations on an export's elevator are serialized by its elv_lock
 * (nodes.c), as the kernel's elevator_lock does for sysfs writers.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "unix-socket.h"
#include "../mq/log.h"

#define CTL_MAX_CLIENTS 16

struct ctl_server;

struct ctl_client {
	struct ctl_server *s;
	int fd; /* -1: the slot is free */
	pthread_t thread;
	bool done; /* the thread has returned: join it, close fd */
};

struct ctl_server {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int listen_fd;
	int wake[2]; /* a byte on wake[1] stops the accepting thread */
	pthread_t thread;
	struct ctl_ctx ctx;
	struct ctl_http *http; /* NULL: no HTTP server */
	bool threaded;	       /* thread runs: path was given */
	uid_t owner;
	bool group;
	gid_t gid;
	pthread_mutex_t lock; /* clients[].done */
	struct ctl_client clients[CTL_MAX_CLIENTS];
};

static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static int answer(struct ctl_server *s, int fd, const char *line, size_t len)
{
	struct ctl_buf out = {0};
	int r;

	ctl_handle_line(&s->ctx, line, len, &out);
	if (out.failed)
		r = send_all(fd, "err out of memory\n", 18);
	else
		r = send_all(fd, out.data, out.len);
	ctl_buf_free(&out);
	return r;
}

/* One client: read lines and answer each, until it leaves or is cut. */
static void *client_thread(void *arg)
{
	struct ctl_client *cl = arg;
	struct ctl_server *s = cl->s;
	char in[CTL_LINE_MAX];
	bool discarding = false; /* inside an over-long line, answered */
	size_t len = 0;

	for (;;) {
		ssize_t n = read(cl->fd, in + len, sizeof(in) - len);
		size_t start = 0, i;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
		for (i = 0; i < len; i++) {
			if (in[i] != '\n')
				continue;
			if (!discarding &&
			    answer(s, cl->fd, in + start, i - start))
				goto out;
			discarding = false;
			start = i + 1;
		}
		memmove(in, in + start, len - start);
		len -= start;
		if (len == sizeof(in)) {
			/* No newline in a full buffer: refuse it, skip on. */
			if (!discarding && answer(s, cl->fd, in, sizeof(in)))
				goto out;
			discarding = true;
			len = 0;
		}
	}
out:
	pthread_mutex_lock(&s->lock);
	cl->done = true;
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Join a finished client's thread and free its slot. */
static void client_reap(struct ctl_client *cl)
{
	pthread_join(cl->thread, NULL);
	close(cl->fd);
	cl->fd = -1;
	cl->done = false;
}

/* Whether the peer on fd may use the socket; why not in why. */
static bool peer_allowed(struct ctl_server *s, int fd, char *why, size_t len)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	gid_t groups[256];
	socklen_t gl = sizeof(groups);
	unsigned int i;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl)) {
		snprintf(why, len, "cannot read the peer's credentials: %s",
			 mq_strerror(errno));
		return false;
	}
	if (cr.uid == 0 || cr.uid == s->owner)
		return true;
	if (s->group) {
		if (cr.gid == s->gid)
			return true;
		if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl))
			for (i = 0; i < gl / sizeof(groups[0]); i++)
				if (groups[i] == s->gid)
					return true;
	}
	snprintf(why, len,
		 "permission denied: uid %u may not use this control socket",
		 (unsigned int)cr.uid);
	return false;
}

static void client_accept(struct ctl_server *s)
{
	struct timeval tv = {.tv_sec = 2};
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	char why[128];
	unsigned int i;
	bool done;
	int rv;

	if (fd < 0)
		return;
	if (!peer_allowed(s, fd, why, sizeof(why))) {
		pr_info("control: refused a client: %s", why);
		send_all(fd, "err ", 4);
		send_all(fd, why, strlen(why));
		send_all(fd, "\n", 1);
		close(fd);
		return;
	}
	for (i = 0; i < CTL_MAX_CLIENTS; i++) {
		pthread_mutex_lock(&s->lock);
		done = s->clients[i].done;
		pthread_mutex_unlock(&s->lock);
		if (done)
			client_reap(&s->clients[i]);
	}
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (s->clients[i].fd < 0)
			break;
	if (i == CTL_MAX_CLIENTS) {
		send_all(fd, "err too many control clients\n", 29);
		close(fd);
		return;
	}
	/* A client that stops reading is dropped, not waited for. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		pr_warn("control: SO_SNDTIMEO: %s", mq_strerror(errno));
	s->clients[i].fd = fd;
	s->clients[i].done = false;
	rv = pthread_create(&s->clients[i].thread, NULL, client_thread,
			    &s->clients[i]);
	if (rv) {
		pr_warn("control: client thread: %s", mq_strerror(rv));
		send_all(fd, "err cannot serve: out of threads\n", 33);
		close(fd);
		s->clients[i].fd = -1;
	}
}

static void *ctl_thread(void *arg)
{
	struct ctl_server *s = arg;

	for (;;) {
		struct pollfd pfd[2] = {
			{.fd = s->wake[0], .events = POLLIN},
			{.fd = s->listen_fd, .events = POLLIN},
		};

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			pr_err("control: poll: %s", mq_strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents & POLLIN)
			client_accept(s);
	}
	return NULL;
}

static int listen_on(const char *path, mode_t mode, const struct ctl_opts *o,
		     struct mq_err *e)
{
	char err[sizeof(e->msg) - 16];
	int fd = mq_unix_listen(path, mode, SOCK_CLOEXEC, 8, err, sizeof(err));
	uid_t uid = o->has_owner ? o->owner : (uid_t)-1;
	gid_t gid = o->group ? o->gid : (gid_t)-1;

	if (fd < 0)
		return mq_err_set(e, "control: %s", err);
	/*
	 * The group that --control-group lets in (mode 0660), the user
	 * the server will run as.
	 */
	if ((o->group || o->has_owner) && chown(path, uid, gid)) {
		mq_err_set(e, "control: chown %s: %s", path,
			   mq_strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

static const struct ctl_opts no_opts;

int ctl_server_listen(const char *path, const struct ctl_opts *o,
		      struct mq_err *e)
{
	mode_t mode;

	if (!o)
		o = &no_opts;
	mode = o->mode ? o->mode : o->group ? 0660 : 0600;
	return listen_on(path, mode, o, e);
}

/* Give up a socket that no server thread took. */
static void unlisten(int fd, const char *path)
{
	if (fd < 0)
		return;
	close(fd);
	unlink(path);
}

struct ctl_server *ctl_server_start(const char *path, const struct ctl_opts *o,
				    const struct ctl_export *ex,
				    unsigned int nr, struct mq_err *e)
{
	int fd = -1;

	if (path) {
		fd = ctl_server_listen(path, o, e);
		if (fd < 0)
			return NULL;
	}
	return ctl_server_start_on(fd, path, o, ex, nr, e);
}

struct ctl_server *ctl_server_start_on(int listen_fd, const char *path,
				       const struct ctl_opts *o,
				       const struct ctl_export *ex,
				       unsigned int nr, struct mq_err *e)
{
	struct ctl_server *s;
	unsigned int i;
	int rv;

	if (!o)
		o = &no_opts;
	s = calloc(1, sizeof(*s));
	if (!s) {
		mq_err_set(e, "control: out of memory");
		unlisten(listen_fd, path);
		return NULL;
	}
	s->listen_fd = s->wake[0] = s->wake[1] = -1;
	for (i = 0; i < CTL_MAX_CLIENTS; i++) {
		s->clients[i].fd = -1;
		s->clients[i].s = s;
	}
	s->owner = o->has_owner ? o->owner : geteuid();
	s->group = o->group;
	s->gid = o->gid;
	rv = pthread_mutex_init(&s->lock, NULL);
	if (rv) {
		mq_err_set(e, "control: mutex: %s", mq_strerror(rv));
		free(s);
		unlisten(listen_fd, path);
		return NULL;
	}
	if (ctl_ctx_init(&s->ctx, ex, nr, o, e))
		goto fail;
	if (o->http) {
		s->http = ctl_http_start(o->http, &s->ctx, e);
		if (!s->http)
			goto fail;
	}
	if (!path) {
		if (s->http)
			return s;
		mq_err_set(e, "control: neither a socket nor HTTP to serve");
		goto fail;
	}
	if (pipe2(s->wake, O_CLOEXEC)) {
		mq_err_set(e, "control: pipe: %s", mq_strerror(errno));
		goto fail;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->listen_fd = listen_fd;
	rv = pthread_create(&s->thread, NULL, ctl_thread, s);
	if (rv) {
		mq_err_set(e, "control: thread: %s", mq_strerror(rv));
		goto fail;
	}
	s->threaded = true;
	pr_info("control: listening on %s", path);
	return s;
fail:
	ctl_http_stop(s->http);
	if (path)
		unlisten(listen_fd, path);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	ctl_ctx_fini(&s->ctx);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

void ctl_server_stop(struct ctl_server *s)
{
	unsigned int i;

	if (!s)
		return;
	/* Its handlers read the tree: gone before the tree is. */
	ctl_http_stop(s->http);
	s->http = NULL;
	if (!s->threaded)
		goto free;
	if (write(s->wake[1], "x", 1) != 1) {
		/* The thread still runs: leave it its memory. */
		pr_err("control: cannot wake the thread: %s",
		       mq_strerror(errno));
		return;
	}
	pthread_join(s->thread, NULL);
	/*
	 * Cut every client: a thread in read() returns at once, one in an
	 * operation when the operation ends (a switch waits its timeout at
	 * most).
	 */
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (s->clients[i].fd >= 0)
			shutdown(s->clients[i].fd, SHUT_RDWR);
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (s->clients[i].fd >= 0)
			client_reap(&s->clients[i]);
	close(s->listen_fd);
	close(s->wake[0]);
	close(s->wake[1]);
	unlink(s->path);
free:
	ctl_ctx_fini(&s->ctx);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int ctl_server_add(struct ctl_server *s, const struct ctl_export *ex,
		   unsigned int nr, struct mq_err *e)
{
	return ctl_ctx_add(&s->ctx, ex, nr, e);
}

int ctl_server_remove(struct ctl_server *s, const char *name)
{
	return ctl_ctx_remove(&s->ctx, name);
}
