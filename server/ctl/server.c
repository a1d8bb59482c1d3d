// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket: a thread of its own polls the listening Unix socket
 * and its clients, and answers each request line with ctl_handle_line().
 * Every tree operation runs on this thread, so a scheduler switch and a
 * read of its tunables never race each other.
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

struct ctl_client {
	int fd;
	char in[CTL_LINE_MAX];
	size_t len;
	bool discarding; /* inside an over-long line, answered already */
};

struct ctl_server {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int listen_fd;
	int wake[2]; /* a byte on wake[1] stops the thread */
	pthread_t thread;
	struct ctl_ctx ctx;
	struct ctl_client clients[CTL_MAX_CLIENTS];
};

static void client_close(struct ctl_client *cl)
{
	close(cl->fd);
	cl->fd = -1;
	cl->len = 0;
	cl->discarding = false;
}

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

static int answer(struct ctl_server *s, struct ctl_client *cl, const char *line,
		  size_t len)
{
	struct ctl_buf out = {0};
	int r;

	ctl_handle_line(&s->ctx, line, len, &out);
	if (out.failed)
		r = send_all(cl->fd, "err out of memory\n", 18);
	else
		r = send_all(cl->fd, out.data, out.len);
	ctl_buf_free(&out);
	return r;
}

/* Read what is there and answer every complete line; -1 closes. */
static int client_read(struct ctl_server *s, struct ctl_client *cl)
{
	ssize_t n = read(cl->fd, cl->in + cl->len, sizeof(cl->in) - cl->len);
	size_t start = 0, i;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	cl->len += n;
	for (i = 0; i < cl->len; i++) {
		if (cl->in[i] != '\n')
			continue;
		if (!cl->discarding && answer(s, cl, cl->in + start, i - start))
			return -1;
		cl->discarding = false;
		start = i + 1;
	}
	memmove(cl->in, cl->in + start, cl->len - start);
	cl->len -= start;
	if (cl->len == sizeof(cl->in)) {
		/* No newline in a full buffer: refuse it, skip to the next. */
		if (!cl->discarding && answer(s, cl, cl->in, sizeof(cl->in)))
			return -1;
		cl->discarding = true;
		cl->len = 0;
	}
	return 0;
}

static void client_accept(struct ctl_server *s)
{
	struct timeval tv = {.tv_sec = 2};
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	unsigned int i;

	if (fd < 0)
		return;
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
	s->clients[i].len = 0;
	s->clients[i].discarding = false;
}

static void *ctl_thread(void *arg)
{
	struct ctl_server *s = arg;
	struct pollfd pfd[2 + CTL_MAX_CLIENTS];
	int map[2 + CTL_MAX_CLIENTS];

	for (;;) {
		unsigned int n = 2, i;

		pfd[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
		for (i = 0; i < CTL_MAX_CLIENTS; i++) {
			if (s->clients[i].fd < 0)
				continue;
			map[n] = i;
			pfd[n++] = (struct pollfd){.fd = s->clients[i].fd,
						   .events = POLLIN};
		}
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			pr_err("control: poll: %s", mq_strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		for (i = 2; i < n; i++) {
			struct ctl_client *cl = &s->clients[map[i]];

			if (pfd[i].revents && client_read(s, cl))
				client_close(cl);
		}
		if (pfd[1].revents & POLLIN)
			client_accept(s);
	}
	return NULL;
}

static int listen_on(const char *path, mode_t mode, struct mq_err *e)
{
	char err[sizeof(e->msg) - 16];
	int fd = mq_unix_listen(path, mode, SOCK_CLOEXEC, 8, err, sizeof(err));

	if (fd < 0)
		mq_err_set(e, "control: %s", err);
	return fd;
}

struct ctl_server *ctl_server_start(const char *path, mode_t mode,
				    struct mq_device *const *devs,
				    unsigned int nr_devs, struct mq_err *e)
{
	struct ctl_server *s;
	unsigned int d, i;
	int rv;

	s = calloc(1, sizeof(*s));
	if (!s) {
		mq_err_set(e, "control: out of memory");
		return NULL;
	}
	s->listen_fd = s->wake[0] = s->wake[1] = -1;
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		s->clients[i].fd = -1;
	s->ctx.devs = devs;
	s->ctx.nr_devs = nr_devs;
	s->ctx.tree = ctl_tree_new();
	if (!s->ctx.tree) {
		mq_err_set(e, "control: out of memory");
		goto fail;
	}
	for (d = 0; d < nr_devs; d++)
		for (i = 0; i < devs[d]->nr_disks; i++)
			if (ctl_tree_add_disk(s->ctx.tree, devs[d]->disks[i])) {
				mq_err_set(e,
					   "control: %s: cannot build its tree",
					   devs[d]->disks[i]->disk_name);
				goto fail;
			}
	if (pipe2(s->wake, O_CLOEXEC)) {
		mq_err_set(e, "control: pipe: %s", mq_strerror(errno));
		goto fail;
	}
	s->listen_fd = listen_on(path, mode ? mode : 0600, e);
	if (s->listen_fd < 0)
		goto fail;
	snprintf(s->path, sizeof(s->path), "%s", path);
	rv = pthread_create(&s->thread, NULL, ctl_thread, s);
	if (rv) {
		mq_err_set(e, "control: thread: %s", mq_strerror(rv));
		unlink(s->path);
		goto fail;
	}
	pr_info("control: listening on %s", path);
	return s;
fail:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	ctl_tree_free(s->ctx.tree);
	free(s);
	return NULL;
}

void ctl_server_stop(struct ctl_server *s)
{
	unsigned int i;

	if (!s)
		return;
	if (write(s->wake[1], "x", 1) != 1) {
		/* The thread still runs: leave it its memory. */
		pr_err("control: cannot wake the thread: %s",
		       mq_strerror(errno));
		return;
	}
	pthread_join(s->thread, NULL);
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (s->clients[i].fd >= 0)
			close(s->clients[i].fd);
	if (s->ctx.trace)
		ctl_trace_stop(s->ctx.trace);
	close(s->listen_fd);
	close(s->wake[0]);
	close(s->wake[1]);
	unlink(s->path);
	ctl_tree_free(s->ctx.tree);
	free(s);
}
