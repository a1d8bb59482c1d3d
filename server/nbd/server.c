// SPDX-License-Identifier: GPL-2.0
/*
 * The main thread: listeners (TCP, Unix, or the sockets systemd passes
 * with LISTEN_PID/LISTEN_FDS), accept, --max-connections, and the drain
 * on SIGTERM or SIGINT: stop accepting, let every loop finish what is in
 * flight, flush the persistent backends, exit 0.  SIGHUP re-reads -c
 * FILE (exports.c); devices a reload removed are destroyed here, on the
 * main thread, once their last connection lets go.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "mqblkd.h"
#include "server/ctl/unix-socket.h"

#define MAX_LISTENERS 16
/* Out of descriptors: how long accepting pauses before it tries again. */
#define ACCEPT_PAUSE 0.1

struct listener {
	ev_io io;
	int fd;
	struct server_state *st;
};

struct server_state {
	struct nbd_server *srv;
	struct ev_loop *ev;
	struct listener ls[MAX_LISTENERS];
	unsigned int nr_ls;
	ev_signal sigterm, sigint, sighup;
	ev_timer accept_pause; /* listeners off while out of descriptors */
	unsigned int next_loop;
	bool unix_created;
	struct mqblkd_ratelimit rl_refused, rl_accept;
};

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static int add_listener(struct server_state *st, int fd)
{
	if (st->nr_ls == MAX_LISTENERS) {
		log_err("too many listening sockets (at most %d)",
			MAX_LISTENERS);
		close(fd);
		return -1;
	}
	st->ls[st->nr_ls].fd = fd;
	st->ls[st->nr_ls].st = st;
	st->nr_ls++;
	return 0;
}

int mqblkd_socket_activation(struct mqblkd_config *cfg)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	char *end;
	long n, i;

	cfg->nr_listen_fds = 0;
	if (!pid || !fds || strtol(pid, NULL, 10) != (long)getpid())
		return 0;
	errno = 0;
	n = strtol(fds, &end, 10);
	if (errno || end == fds || *end || n < 1 || n > MAX_LISTENERS) {
		fprintf(stderr, "mqblkd: LISTEN_FDS=%s: expected 1..%d\n", fds,
			MAX_LISTENERS);
		return -1;
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	for (i = 0; i < n; i++) {
		int fd = 3 + (int)i;

		if (set_nonblock(fd)) {
			fprintf(stderr,
				"mqblkd: socket activation: fd %d: %s\n", fd,
				strerror(errno));
			return -1;
		}
	}
	cfg->nr_listen_fds = (unsigned int)n;
	return 0;
}

/* The sockets mqblkd_socket_activation() took: these and no others. */
static int take_activated(struct server_state *st, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (add_listener(st, 3 + (int)i))
			return -1;
	log_info("socket activation: %u socket%s", n, n == 1 ? "" : "s");
	return 0;
}

static int listen_unix(struct server_state *st, const char *path)
{
	char err[512];
	int fd;

	/* A socket left by a previous run is replaced, a live one is not. */
	fd = mq_unix_listen(path, 0, SOCK_NONBLOCK | SOCK_CLOEXEC, SOMAXCONN,
			    err, sizeof(err));
	if (fd < 0) {
		log_err("-U %s", err);
		return -1;
	}
	st->unix_created = true;
	return add_listener(st, fd);
}

static int listen_tcp(struct server_state *st, const char *addr,
		      const char *port)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_ADDRCONFIG,
	};
	struct addrinfo *res, *ai;
	int err, one = 1, nr = 0, last_errno = 0;

	err = getaddrinfo(addr, port, &hints, &res);
	if (err) {
		log_err("%s:%s: %s", addr ? addr : "*", port,
			gai_strerror(err));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family,
				ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);

		if (fd < 0) {
			last_errno = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				   sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) ||
		    listen(fd, SOMAXCONN)) {
			last_errno = errno;
			close(fd);
			continue;
		}
		if (add_listener(st, fd))
			break;
		nr++;
	}
	freeaddrinfo(res);
	if (!nr) {
		log_err("%s:%s: %s", addr ? addr : "*", port,
			strerror(last_errno ? last_errno : EADDRNOTAVAIL));
		return -1;
	}
	return 0;
}

/* Append s to buf (size len) at *off; false once it no longer fits. */
static bool append(char *buf, size_t len, size_t *off, const char *s)
{
	size_t n = strlen(s);

	if (*off + n >= len)
		return false;
	memcpy(buf + *off, s, n + 1);
	*off += n;
	return true;
}

/* A socket path as a URI query value: RFC 3986 unreserved bytes and '/'
 * as they are, the rest %XX. */
static bool append_escaped(char *buf, size_t len, size_t *off, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char tmp[4];

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~/", ch)) {
			tmp[0] = (char)ch;
			tmp[1] = '\0';
		} else {
			tmp[0] = '%';
			tmp[1] = hex[ch >> 4];
			tmp[2] = hex[ch & 15];
			tmp[3] = '\0';
		}
		if (!append(buf, len, off, tmp))
			return false;
	}
	return true;
}

/*
 * The NBD URI (the syntax libnbd and qemu take) a client uses to reach
 * the default export through listening socket fd, or "" when it has
 * none (an abstract Unix socket).  A wildcard address becomes
 * "localhost", as nbdkit's --print-uri says.
 */
static void listener_uri(int fd, bool tls, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN + 2], cwd[4096];
	size_t off = 0;

	out[0] = '\0';
	memset(&ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
		unsigned int port;
		char a[INET6_ADDRSTRLEN];

		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *in = (const void *)&ss;

			port = ntohs(in->sin_port);
			if (in->sin_addr.s_addr == htonl(INADDR_ANY))
				snprintf(host, sizeof(host), "localhost");
			else
				snprintf(host, sizeof(host), "%s",
					 inet_ntop(AF_INET, &in->sin_addr, a,
						   sizeof(a))
						 ?: "?");
		} else {
			const struct sockaddr_in6 *in6 = (const void *)&ss;

			port = ntohs(in6->sin6_port);
			if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
				snprintf(host, sizeof(host), "localhost");
			else
				snprintf(host, sizeof(host), "[%s]",
					 inet_ntop(AF_INET6, &in6->sin6_addr, a,
						   sizeof(a))
						 ?: "?");
		}
		snprintf(out, len, "%s://%s:%u/", tls ? "nbds" : "nbd", host,
			 port);
	} else if (ss.ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const void *)&ss;
		char path[sizeof(un->sun_path) + 1];
		size_t plen =
			sl > offsetof(struct sockaddr_un, sun_path)
				? sl - offsetof(struct sockaddr_un, sun_path)
				: 0;

		if (plen > sizeof(un->sun_path))
			plen = sizeof(un->sun_path);
		if (!plen || un->sun_path[0] == '\0')
			return; /* unnamed or abstract: no path to name */
		memcpy(path, un->sun_path, plen);
		path[plen] = '\0';
		if (!append(out, len, &off,
			    tls ? "nbds+unix:///?socket="
				: "nbd+unix:///?socket="))
			goto too_long;
		if (path[0] != '/') {
			if (!getcwd(cwd, sizeof(cwd)) ||
			    !append_escaped(out, len, &off, cwd) ||
			    !append(out, len, &off, "/"))
				goto too_long;
		}
		if (!append_escaped(out, len, &off, path))
			goto too_long;
	}
	return;
too_long:
	out[0] = '\0';
}

void mqblkd_print_uris(struct server_state *st)
{
	bool tls = st->srv->cfg->tls == TLS_MODE_REQUIRE;
	char line[4096], uri[1024];
	size_t off = 0;
	unsigned int i;

	line[0] = '\0';
	for (i = 0; i < st->nr_ls; i++) {
		listener_uri(st->ls[i].fd, tls, uri, sizeof(uri));
		if (!uri[0])
			continue;
		/* v4 and v6 wildcards are both "localhost": name it once */
		if (strstr(line, uri))
			continue;
		if ((off && !append(line, sizeof(line), &off, " ")) ||
		    !append(line, sizeof(line), &off, uri))
			break;
	}
	if (off)
		mqblkd_log_notice("listening on %s", line);
	else
		mqblkd_log_notice("listening on %u socket%s with no URI "
				  "(abstract or unnamed)",
				  st->nr_ls, st->nr_ls == 1 ? "" : "s");
}

static void client_identity(int fd, const struct sockaddr_storage *ss,
			    struct mq_client *cl)
{
	char host[INET6_ADDRSTRLEN];

	cl->uid = -1;
	cl->addr[0] = '\0';
	cl->tls_user[0] = '\0';
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(cl->addr, sizeof(cl->addr), "%s:%u", host,
			 ntohs(in->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(cl->addr, sizeof(cl->addr), "[%s]:%u", host,
			 ntohs(in6->sin6_port));
	} else if (ss->ss_family == AF_UNIX) {
		struct ucred cred;
		socklen_t len = sizeof(cred);

		if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
			cl->uid = cred.uid;
			snprintf(cl->addr, sizeof(cl->addr),
				 "unix:pid=%d,uid=%u", (int)cred.pid,
				 (unsigned int)cred.uid);
		} else {
			snprintf(cl->addr, sizeof(cl->addr), "unix");
		}
	}
}

static void listeners_start(struct server_state *st, bool on)
{
	unsigned int i;

	for (i = 0; i < st->nr_ls; i++) {
		if (on)
			ev_io_start(st->ev, &st->ls[i].io);
		else
			ev_io_stop(st->ev, &st->ls[i].io);
	}
}

static void accept_pause_cb(struct ev_loop *ev, ev_timer *w, int revents)
{
	struct server_state *st = w->data;

	if (!atomic_load(&st->srv->draining))
		listeners_start(st, true);
}

/*
 * accept() failed for want of a descriptor or of memory: the pending
 * connection stays in the backlog and the listener stays readable, so
 * trying again at once would spin.  Stop listening for ACCEPT_PAUSE.
 */
static void accept_failed(struct server_state *st, int err)
{
	bool resource = err == EMFILE || err == ENFILE || err == ENOBUFS ||
			err == ENOMEM;

	mqblkd_log_rl(&st->rl_accept, 0, "accept: %s%s", strerror(err),
		      resource ? ": not accepting for 100 ms" : "");
	if (!resource)
		return;
	listeners_start(st, false);
	ev_timer_set(&st->accept_pause, ACCEPT_PAUSE, 0.);
	ev_timer_start(st->ev, &st->accept_pause);
}

static void accept_cb(struct ev_loop *ev, ev_io *w, int revents)
{
	struct listener *ls = w->data;
	struct server_state *st = ls->st;
	struct nbd_server *srv = st->srv;

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct mq_client cl;
		unsigned int n;
		int fd, one = 1;

		memset(&ss, 0, sizeof(ss));
		fd = accept4(ls->fd, (struct sockaddr *)&ss, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				accept_failed(st, errno);
			return;
		}
		if (atomic_load(&srv->draining)) {
			close(fd);
			continue;
		}
		client_identity(fd, &ss, &cl);
		n = atomic_fetch_add(&srv->nr_conns, 1);
		if (n >= srv->cfg->max_connections) {
			atomic_fetch_sub(&srv->nr_conns, 1);
			mqblkd_log_rl(&st->rl_refused, 1,
				      "too many connections (limit %u): "
				      "refusing %s",
				      srv->cfg->max_connections, cl.addr);
			close(fd);
			continue;
		}
		cl.id = atomic_fetch_add(&srv->next_client_id, 1) + 1;
		if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
		if (nbd_loop_hand_over(
			    &srv->loops[st->next_loop++ % srv->nr_loops], fd,
			    &cl)) {
			log_err("%s: out of memory", cl.addr);
			atomic_fetch_sub(&srv->nr_conns, 1);
			close(fd);
		}
	}
}

static void stop_listening(struct server_state *st)
{
	unsigned int i;

	if (st->ev)
		ev_timer_stop(st->ev, &st->accept_pause);
	for (i = 0; i < st->nr_ls; i++) {
		if (st->ev)
			ev_io_stop(st->ev, &st->ls[i].io);
		close(st->ls[i].fd);
	}
	st->nr_ls = 0;
	if (st->unix_created && st->srv->cfg->unix_path)
		unlink(st->srv->cfg->unix_path);
	st->unix_created = false;
}

static void signal_cb(struct ev_loop *ev, ev_signal *w, int revents)
{
	struct server_state *st = w->data;
	unsigned int i;

	log_info("signal %d: draining", w->signum);
	/* Type=notify: the stop is under way (NOTIFY_SOCKET, else nothing) */
	sd_notify(0, "STOPPING=1\nSTATUS=draining");
	atomic_store(&st->srv->draining, true);
	stop_listening(st);
	for (i = 0; i < st->srv->nr_loops; i++)
		nbd_loop_request_drain(&st->srv->loops[i]);
	ev_break(ev, EVBREAK_ALL);
}

/*
 * SIGHUP: reload, between RELOADING=1 and READY=1 as Type=notify-reload
 * services tell systemd (253 and later; older ones ignore the fields).
 */
static void sighup_cb(struct ev_loop *ev, ev_signal *w, int revents)
{
	struct server_state *st = w->data;
	struct nbd_server *srv = st->srv;
	struct timespec ts;
	unsigned int n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nSTATUS=reloading\nMONOTONIC_USEC=%llu",
		   (unsigned long long)ts.tv_sec * 1000000ULL +
			   (unsigned long long)ts.tv_nsec / 1000);
	log_info("signal %d: reloading", w->signum);
	nbd_exports_reload(srv);
	n = srv->exports->nr; /* the main thread is the one that swaps it */
	sd_notifyf(0, "READY=1\nSTATUS=serving %u export%s", n,
		   n == 1 ? "" : "s");
}

static void reaper_cb(struct ev_loop *ev, ev_async *w, int revents)
{
	nbd_exports_reap(w->data);
}

static int open_listeners(struct server_state *st)
{
	const struct mqblkd_config *cfg = st->srv->cfg;

	if (cfg->nr_listen_fds)
		return take_activated(st, cfg->nr_listen_fds);
	if (cfg->unix_path && listen_unix(st, cfg->unix_path))
		return -1;
	if (!cfg->unix_path || cfg->port || cfg->bind_addr)
		return listen_tcp(st, cfg->bind_addr,
				  cfg->port ? cfg->port : "10809");
	return 0;
}

int mqblkd_listen(struct nbd_server *srv, struct server_state **stp)
{
	struct server_state *st = calloc(1, sizeof(*st));

	if (!st) {
		log_err("out of memory");
		return -1;
	}
	st->srv = srv;
	st->rl_refused = (struct mqblkd_ratelimit)MQBLKD_RATELIMIT_INIT;
	st->rl_accept = (struct mqblkd_ratelimit)MQBLKD_RATELIMIT_INIT;
	ev_timer_init(&st->accept_pause, accept_pause_cb, ACCEPT_PAUSE, 0.);
	st->accept_pause.data = st;
	if (open_listeners(st)) {
		stop_listening(st);
		free(st);
		return -1;
	}
	*stp = st;
	return 0;
}

int mqblkd_run(struct nbd_server *srv, struct server_state *st)
{
	unsigned int i;
	int r = 0;

	st->ev = ev_default_loop(EVFLAG_AUTO);
	if (!st->ev) {
		log_err("ev_default_loop failed");
		return -1;
	}
	/* Before any connection can let a device go. */
	ev_async_init(&srv->reaper, reaper_cb);
	srv->reaper.data = srv;
	ev_async_start(st->ev, &srv->reaper);
	srv->main_ev = st->ev;
	for (i = 0; i < srv->nr_loops; i++) {
		if (nbd_loop_start(&srv->loops[i])) {
			r = -1;
			break;
		}
	}
	if (!r) {
		for (i = 0; i < st->nr_ls; i++) {
			ev_io_init(&st->ls[i].io, accept_cb, st->ls[i].fd,
				   EV_READ);
			st->ls[i].io.data = &st->ls[i];
			ev_io_start(st->ev, &st->ls[i].io);
		}
		ev_signal_init(&st->sigterm, signal_cb, SIGTERM);
		st->sigterm.data = st;
		ev_signal_start(st->ev, &st->sigterm);
		ev_signal_init(&st->sigint, signal_cb, SIGINT);
		st->sigint.data = st;
		ev_signal_start(st->ev, &st->sigint);
		ev_signal_init(&st->sighup, sighup_cb, SIGHUP);
		st->sighup.data = st;
		ev_signal_start(st->ev, &st->sighup);
		/*
		 * The exports answer from here: the loops run and the
		 * listeners are armed (a connection already waiting in the
		 * backlog is accepted by the first ev_run iteration).
		 */
		sd_notifyf(0, "READY=1\nSTATUS=serving %u export%s",
			   srv->exports->nr, srv->exports->nr == 1 ? "" : "s");
		ev_run(st->ev, 0);
	}

	/* Drain: stop accepting, then wait for every loop to empty. */
	atomic_store(&srv->draining, true);
	stop_listening(st);
	for (i = 0; i < srv->nr_loops; i++)
		nbd_loop_request_drain(&srv->loops[i]);
	for (i = 0; i < srv->nr_loops; i++)
		if (nbd_loop_join(&srv->loops[i]))
			r = -1;
	ev_signal_stop(st->ev, &st->sigterm);
	ev_signal_stop(st->ev, &st->sigint);
	ev_signal_stop(st->ev, &st->sighup);
	/* Every connection is gone: so are the removed devices. */
	srv->main_ev = NULL;
	ev_async_stop(st->ev, &srv->reaper);
	nbd_exports_reap(srv);
	if (nbd_exports_sync(srv->exports))
		r = -1;
	mqblkd_ratelimit_flush(&st->rl_refused, 1, "too many connections");
	mqblkd_ratelimit_flush(&st->rl_accept, 0, "accept");
	mqblkd_ratelimit_flush(&srv->rl_unknown_export, 0, "unknown export");
	log_info("drained%s", r ? " with errors" : "");
	free(st);
	return r;
}
