// SPDX-License-Identifier: GPL-2.0
/*
 * The nbd store: the bytes live on another NBD server, reached with
 * libnbd's asynchronous API.  One thread of the store's own drives every
 * connection: it polls the connections' sockets (nbd_aio_get_fd, with the
 * direction nbd_aio_get_direction asks for) and an eventfd that submitters
 * ring, issues the nbd_aio_* calls, and ends each I/O from libnbd's
 * completion callback, which runs on this thread inside nbd_aio_notify_*.
 *
 * nbd_connections=N opens N connections when the remote offers multi-conn
 * (round robin over them).  A remote that goes away (EOF, reset, or no
 * answer for io_timeout): without retry= every I/O in flight or queued
 * fails with EIO; with retry=SECONDS the store reconnects every SECONDS,
 * as nbdkit's retry filter does, and an I/O still not done io_timeout
 * after it was submitted fails with EIO.  Each of these is one log line.
 */
#include <errno.h>
#include <inttypes.h>
#include <libnbd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "media.h"
#include "../../server/mq/log.h"

#define NBD_MAX_CONNECTIONS 16
/* Internal op: block status for nbd_extents(), never a media_op. */
#define NBD_OP_EXTENTS ((enum media_op)0x100)

enum conn_state { CONN_DOWN, CONN_CONNECTING, CONN_READY };

struct nbd_store;

struct nbd_conn {
	struct nbd_store *s;
	struct nbd_handle *h;
	enum conn_state state;
	struct media_io *inflight; /* doubly linked: io->next, priv->prev */
	unsigned int nr_inflight;
	bool closing;	    /* completion callbacks ignore what they are told */
	bool shutting_down; /* the server answered ESHUTDOWN: reconnect */
};

/* The store's per-I/O state, in media_io.store_private. */
struct nbd_io_priv {
	uint64_t deadline_ns;
	struct nbd_conn *conn; /* in flight on, or NULL */
	struct media_io *prev;
	unsigned int phase; /* 1: the flush after a write with FUA */
};
_Static_assert(sizeof(struct nbd_io_priv) <=
		       sizeof(((struct media_io *)0)->store_private),
	       "nbd_io_priv must fit in media_io.store_private");

/* A block status query from nbd_extents(), waited for. */
struct nbd_extents_req {
	struct media_io io; /* op NBD_OP_EXTENTS */
	extent_fn *fn;
	void *arg;
	uint64_t next; /* the first offset not yet reported */
	bool stopped;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

struct nbd_store {
	struct media *m;
	char *uri;
	unsigned int nr_conns;
	struct nbd_conn conns[NBD_MAX_CONNECTIONS];
	unsigned int rr; /* round robin */
	uint64_t io_timeout_ns;
	uint64_t retry_ns; /* 0: no reconnection */
	uint64_t next_attempt_ns;
	uint64_t remote_size;
	bool can_fua, can_flush, can_trim, can_zero, can_fast_zero;
	bool can_extents;
	bool lost;	 /* poll thread: an outage was logged */
	bool logged_eio; /* poll thread: its EIO was logged */
	uint64_t lost_since_ns;

	pthread_t thread;
	bool thread_started;
	int efd;
	pthread_mutex_t lock;
	struct media_io *incoming, **incoming_tail; /* under lock */
	bool stopping;				    /* under lock */

	/* Poll thread only: submitted, not yet sent (FIFO). */
	struct media_io *waiting, **waiting_tail;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct nbd_io_priv *io_priv(struct media_io *io)
{
	return (struct nbd_io_priv *)io->store_private;
}

static void waiting_push(struct nbd_store *s, struct media_io *io)
{
	io->next = NULL;
	*s->waiting_tail = io;
	s->waiting_tail = &io->next;
}

/* At the head: an I/O taken back from a lost connection goes first. */
static void waiting_push_head(struct nbd_store *s, struct media_io *io)
{
	io->next = s->waiting;
	s->waiting = io;
	if (s->waiting_tail == &s->waiting)
		s->waiting_tail = &io->next;
}

static struct media_io *waiting_pop(struct nbd_store *s)
{
	struct media_io *io = s->waiting;

	if (io) {
		s->waiting = io->next;
		if (!s->waiting)
			s->waiting_tail = &s->waiting;
		io->next = NULL;
	}
	return io;
}

static void inflight_add(struct nbd_conn *c, struct media_io *io)
{
	io_priv(io)->conn = c;
	io_priv(io)->prev = NULL;
	io->next = c->inflight;
	if (c->inflight)
		io_priv(c->inflight)->prev = io;
	c->inflight = io;
	c->nr_inflight++;
}

static void inflight_del(struct nbd_conn *c, struct media_io *io)
{
	struct nbd_io_priv *p = io_priv(io);

	if (p->prev)
		p->prev->next = io->next;
	else
		c->inflight = io->next;
	if (io->next)
		io_priv(io->next)->prev = p->prev;
	io->next = NULL;
	p->prev = NULL;
	p->conn = NULL;
	c->nr_inflight--;
}

static void extents_done(struct nbd_extents_req *r, int status)
{
	pthread_mutex_lock(&r->lock);
	r->io.status = status;
	r->done = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* End io on the poll thread (the store's): a media I/O or a query. */
static void io_finish(struct media_io *io, int status)
{
	if (io->op == NBD_OP_EXTENTS)
		extents_done((struct nbd_extents_req *)io, status);
	else
		media_io_end(io, status);
}

static bool conn_broken(struct nbd_conn *c)
{
	return nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h);
}

static int nbd_complete_cb(void *user_data, int *error)
{
	struct media_io *io = user_data;
	struct nbd_io_priv *p = io_priv(io);
	struct nbd_conn *c = p->conn;
	struct nbd_store *s;

	if (!c || c->closing)
		return 1; /* taken back by conn_lost(), which decides */
	s = c->s;
	inflight_del(c, io);
	if (*error &&
	    (conn_broken(c) || *error == ENOTCONN || *error == ESHUTDOWN)) {
		/*
		 * The connection went, or the server is going (nbdkit answers
		 * ESHUTDOWN while it stops): conn_lost() retries or fails it.
		 */
		if (*error == ESHUTDOWN)
			c->shutting_down = true;
		waiting_push_head(s, io);
		return 1;
	}
	if (!*error && io->op == MEDIA_WRITE && p->phase == 0 &&
	    (io->flags & MEDIA_IO_FUA) && !s->can_fua && s->can_flush) {
		p->phase = 1; /* FUA the remote lacks: a flush follows */
		waiting_push_head(s, io);
		return 1;
	}
	io_finish(io, *error ? *error : 0);
	return 1;
}

static int nbd_extent_cb(void *user_data, const char *metacontext,
			 uint64_t offset, uint32_t *entries, size_t nr_entries,
			 int *error)
{
	struct media_io *io = user_data;
	struct nbd_extents_req *r = (struct nbd_extents_req *)io;
	uint64_t end = io->offset + io->len;
	size_t i;

	if (strcmp(metacontext, LIBNBD_CONTEXT_BASE_ALLOCATION) != 0 ||
	    r->stopped)
		return 0;
	for (i = 0; i + 1 < nr_entries; i += 2) {
		uint64_t len = entries[i];
		unsigned int type = 0;

		if (offset >= end || !len)
			break;
		if (len > end - offset)
			len = end - offset;
		if (entries[i + 1] & LIBNBD_STATE_HOLE)
			type |= MQ_EXTENT_HOLE;
		if (entries[i + 1] & LIBNBD_STATE_ZERO)
			type |= MQ_EXTENT_ZERO;
		if (offset >= r->next) {
			if (r->fn(r->arg, offset, len, type) < 0) {
				r->stopped = true;
				return 0;
			}
			r->next = offset + len;
		}
		offset += len;
	}
	return 0;
}

/* Send io on c.  false: the handle refused it (the connection is gone). */
static bool conn_issue(struct nbd_conn *c, struct media_io *io)
{
	struct nbd_store *s = c->s;
	nbd_completion_callback cb = {.callback = nbd_complete_cb,
				      .user_data = io};
	uint32_t fl = 0;
	int64_t cookie;

	inflight_add(c, io);
	if ((io->flags & MEDIA_IO_FUA) && s->can_fua)
		fl |= LIBNBD_CMD_FLAG_FUA;
	if (io_priv(io)->phase == 1) {
		cookie = nbd_aio_flush(c->h, cb, 0);
		goto sent;
	}
	switch ((int)io->op) {
	case MEDIA_READ:
		cookie = nbd_aio_pread(c->h, io->buf, io->len, io->offset, cb,
				       0);
		break;
	case MEDIA_WRITE:
		cookie = nbd_aio_pwrite(c->h, io->buf, io->len, io->offset, cb,
					fl);
		break;
	case MEDIA_FLUSH:
		cookie = nbd_aio_flush(c->h, cb, 0);
		break;
	case MEDIA_DISCARD:
		cookie = nbd_aio_trim(c->h, io->len, io->offset, cb, fl);
		break;
	case MEDIA_WRITE_ZEROES:
		if (io->flags & MEDIA_IO_NOUNMAP)
			fl |= LIBNBD_CMD_FLAG_NO_HOLE;
		cookie = nbd_aio_zero(c->h, io->len, io->offset, cb, fl);
		break;
	case NBD_OP_EXTENTS: {
		nbd_extent_callback ecb = {.callback = nbd_extent_cb,
					   .user_data = io};

		cookie = nbd_aio_block_status(c->h, io->len, io->offset, ecb,
					      cb, 0);
		break;
	}
	default:
		inflight_del(c, io);
		io_finish(io, EOPNOTSUPP);
		return true;
	}
sent:
	if (cookie >= 0)
		return true;
	inflight_del(c, io);
	if (conn_broken(c)) {
		waiting_push_head(s, io);
		return false;
	}
	/* Refused by libnbd itself (a range or flag it will not send). */
	pr_err("%s: %s at byte %" PRIu64 ": %s", s->m->name,
	       io->op == NBD_OP_EXTENTS ? "block status"
					: media_op_name(io->op),
	       io->offset, nbd_get_error());
	io_finish(io, nbd_get_errno() ? nbd_get_errno() : EIO);
	return true;
}

static struct nbd_handle *nbd_new_handle(struct nbd_store *s, unsigned int i,
					 struct mq_err *e)
{
	struct nbd_handle *h = nbd_create();
	char name[48];

	if (!h) {
		if (e)
			mq_err_set(e, "nbd:%s: %s", s->uri, nbd_get_error());
		return NULL;
	}
	snprintf(name, sizeof(name), "%.30s-nbd%u", s->m->name, i);
	if (nbd_set_handle_name(h, name) == -1 ||
	    nbd_add_meta_context(h, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1) {
		if (e)
			mq_err_set(e, "nbd:%s: %s", s->uri, nbd_get_error());
		nbd_close(h);
		return NULL;
	}
	return h;
}

/* The connection is gone: take its I/O back, close it. */
static void conn_lost(struct nbd_store *s, struct nbd_conn *c, const char *why)
{
	struct media_io *io;

	if (!s->lost) {
		s->lost = true;
		s->logged_eio = false;
		s->lost_since_ns = now_ns();
		if (s->retry_ns)
			pr_err("%s: nbd:%s: connection lost (%s); reconnecting "
			       "every %" PRIu64 " s",
			       s->m->name, s->uri, why,
			       s->retry_ns / 1000000000u);
		else
			pr_err("%s: nbd:%s: connection lost (%s); I/O fails "
			       "with EIO (no retry=)",
			       s->m->name, s->uri, why);
		s->next_attempt_ns = now_ns() + s->retry_ns;
	}
	c->closing = true;
	while ((io = c->inflight)) {
		inflight_del(c, io);
		waiting_push_head(s, io);
	}
	if (c->h)
		nbd_close(c->h); /* libnbd forgets our buffers here */
	c->h = NULL;
	c->closing = false;
	c->shutting_down = false;
	c->state = CONN_DOWN;
}

static void conn_start(struct nbd_store *s, unsigned int i)
{
	struct nbd_conn *c = &s->conns[i];

	c->h = nbd_new_handle(s, i, NULL);
	if (!c->h)
		return;
	if (nbd_aio_connect_uri(c->h, s->uri) == -1) {
		nbd_close(c->h);
		c->h = NULL;
		return;
	}
	c->state = CONN_CONNECTING;
}

/* A reconnection finished: is it the same export? */
static void conn_check_ready(struct nbd_store *s, struct nbd_conn *c)
{
	int64_t size = nbd_get_size(c->h);

	if (size < 0 || (uint64_t)size != s->remote_size) {
		pr_err("%s: nbd:%s: the export came back with size %" PRId64
		       ", not %" PRIu64 "; not using it",
		       s->m->name, s->uri, size, s->remote_size);
		nbd_close(c->h);
		c->h = NULL;
		c->state = CONN_DOWN;
		return;
	}
	c->state = CONN_READY;
	if (s->lost) {
		pr_info("%s: nbd:%s: reconnected after %" PRIu64 " ms",
			s->m->name, s->uri,
			(now_ns() - s->lost_since_ns) / 1000000u);
		s->lost = false;
	}
}

static struct nbd_conn *conn_pick(struct nbd_store *s)
{
	unsigned int i;

	for (i = 0; i < s->nr_conns; i++) {
		struct nbd_conn *c = &s->conns[(s->rr + i) % s->nr_conns];

		if (c->state == CONN_READY) {
			s->rr = (s->rr + i + 1) % s->nr_conns;
			return c;
		}
	}
	return NULL;
}

static void fail_expired(struct nbd_store *s, uint64_t now, bool all)
{
	struct media_io *keep = NULL, **tail = &keep, *io;
	unsigned int failed = 0;

	while ((io = waiting_pop(s))) {
		if (all || io_priv(io)->deadline_ns <= now) {
			io_finish(io, EIO);
			failed++;
			continue;
		}
		*tail = io;
		tail = &io->next;
	}
	s->waiting = keep;
	s->waiting_tail = keep ? tail : &s->waiting;
	*s->waiting_tail = NULL;
	if (failed && !s->logged_eio) {
		s->logged_eio = true;
		pr_err("%s: nbd:%s: %s: failing I/O with EIO", s->m->name,
		       s->uri,
		       all ? "no connection" : "no answer within io_timeout");
	}
}

static void *nbd_thread(void *arg)
{
	struct nbd_store *s = arg;
	struct pollfd pfd[NBD_MAX_CONNECTIONS + 1];
	int map[NBD_MAX_CONNECTIONS + 1];
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		struct media_io *in, *io;
		uint64_t now, wake = UINT64_MAX, v;
		unsigned int i, n = 0;
		bool stopping, busy = false;
		int timeout, rc;

		pthread_mutex_lock(&s->lock);
		in = s->incoming;
		s->incoming = NULL;
		s->incoming_tail = &s->incoming;
		stopping = s->stopping;
		pthread_mutex_unlock(&s->lock);
		while (in) {
			io = in;
			in = in->next;
			waiting_push(s, io);
		}

		/* Send what waits, while a connection takes it. */
		while (s->waiting) {
			struct nbd_conn *c = conn_pick(s);

			if (!c)
				break;
			if (!conn_issue(c, waiting_pop(s)))
				conn_lost(s, c, nbd_get_error());
		}

		now = now_ns();
		/* An I/O past its time on a live connection: it hangs. */
		for (i = 0; i < s->nr_conns; i++) {
			struct nbd_conn *c = &s->conns[i];

			for (io = c->inflight; io; io = io->next)
				if (io_priv(io)->deadline_ns <= now)
					break;
			if (io)
				conn_lost(s, c, "no answer within io_timeout");
		}
		if (s->lost && s->waiting)
			fail_expired(s, now, !s->retry_ns);

		/* Reconnect. */
		if (s->lost && s->retry_ns && now >= s->next_attempt_ns) {
			for (i = 0; i < s->nr_conns; i++)
				if (s->conns[i].state == CONN_DOWN)
					conn_start(s, i);
			s->next_attempt_ns = now + s->retry_ns;
		}

		for (i = 0; i < s->nr_conns; i++) {
			struct nbd_conn *c = &s->conns[i];
			unsigned int dir;

			for (io = c->inflight; io; io = io->next)
				if (io_priv(io)->deadline_ns < wake)
					wake = io_priv(io)->deadline_ns;
			if (c->nr_inflight)
				busy = true;
			if (c->state == CONN_DOWN)
				continue;
			dir = nbd_aio_get_direction(c->h);
			pfd[n].fd = nbd_aio_get_fd(c->h);
			pfd[n].events = 0;
			if (dir & LIBNBD_AIO_DIRECTION_READ)
				pfd[n].events |= POLLIN;
			if (dir & LIBNBD_AIO_DIRECTION_WRITE)
				pfd[n].events |= POLLOUT;
			pfd[n].revents = 0;
			if (pfd[n].fd < 0)
				continue;
			map[n++] = (int)i;
		}
		for (io = s->waiting; io; io = io->next)
			if (io_priv(io)->deadline_ns < wake)
				wake = io_priv(io)->deadline_ns;
		if (s->waiting)
			busy = true;
		if (s->lost && s->retry_ns && s->next_attempt_ns < wake)
			wake = s->next_attempt_ns;

		if (stopping && !busy)
			break;

		pfd[n].fd = s->efd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		map[n] = -1;
		if (wake == UINT64_MAX)
			timeout = -1;
		else if (wake <= now)
			timeout = 0;
		else
			timeout = (int)((wake - now + 999999) / 1000000u);
		rc = poll(pfd, n + 1, timeout);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			pr_err("%s: nbd: poll: %s", s->m->name,
			       mq_strerror(errno));
			break;
		}
		if (pfd[n].revents & POLLIN) {
			if (read(s->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				pr_err("%s: nbd: eventfd: %s", s->m->name,
				       mq_strerror(errno));
		}
		for (i = 0; i < n; i++) {
			struct nbd_conn *c = &s->conns[map[i]];
			short re = pfd[i].revents;

			if (!re || !c->h)
				continue;
			if (re & (POLLIN | POLLHUP | POLLERR))
				nbd_aio_notify_read(c->h);
			else if (re & POLLOUT)
				nbd_aio_notify_write(c->h);
			if (conn_broken(c)) {
				conn_lost(s, c,
					  nbd_get_error() ? nbd_get_error()
							  : "closed");
				continue;
			}
			if (c->shutting_down) {
				conn_lost(s, c, "the server is shutting down");
				continue;
			}
			if (c->state == CONN_CONNECTING &&
			    nbd_aio_is_ready(c->h))
				conn_check_ready(s, c);
		}
	}
	return NULL;
}

static void nbd_queue(struct nbd_store *s, struct media_io *io)
{
	uint64_t one = 1;

	memset(io->store_private, 0, sizeof(io->store_private));
	io_priv(io)->deadline_ns = now_ns() + s->io_timeout_ns;
	io->next = NULL;
	pthread_mutex_lock(&s->lock);
	*s->incoming_tail = io;
	s->incoming_tail = &io->next;
	pthread_mutex_unlock(&s->lock);
	if (write(s->efd, &one, sizeof(one)) < 0)
		pr_err("%s: nbd: eventfd: %s", s->m->name, mq_strerror(errno));
}

static void nbd_submit(struct media *m, struct media_io *io)
{
	struct nbd_store *s = m->priv;

	switch (io->op) {
	case MEDIA_FLUSH:
		if (!s->can_flush) {
			media_io_end(io, 0); /* nothing volatile over there */
			return;
		}
		break;
	case MEDIA_DISCARD:
		if (!s->can_trim) {
			media_io_end(io, EOPNOTSUPP);
			return;
		}
		break;
	case MEDIA_WRITE_ZEROES:
		if (!s->can_zero) {
			media_io_end(io, EOPNOTSUPP);
			return;
		}
		break;
	default:
		break;
	}
	if (io->len > UINT32_MAX) {
		media_io_end(io, EINVAL);
		return;
	}
	nbd_queue(s, io);
}

static int nbd_extents(struct media *m, uint64_t offset, uint64_t len,
		       extent_fn *fn, void *arg)
{
	struct nbd_store *s = m->priv;
	struct nbd_extents_req r = {
		.fn = fn,
		.arg = arg,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	uint64_t end = offset + len;
	int err = 0;

	if (!s->can_extents) {
		fn(arg, offset, len, 0);
		return 0;
	}
	r.next = offset;
	while (r.next < end && !r.stopped && !err) {
		uint64_t chunk = end - r.next;

		if (chunk > (1u << 30))
			chunk = 1u << 30;
		r.io.op = NBD_OP_EXTENTS;
		r.io.offset = r.next;
		r.io.len = chunk;
		r.io.media = m;
		r.done = false;
		nbd_queue(s, &r.io);
		pthread_mutex_lock(&r.lock);
		while (!r.done)
			pthread_cond_wait(&r.cond, &r.lock);
		pthread_mutex_unlock(&r.lock);
		err = r.io.status;
		if (!err && r.next == r.io.offset)
			err = EIO; /* the server made no progress */
	}
	pthread_cond_destroy(&r.cond);
	pthread_mutex_destroy(&r.lock);
	return err;
}

static void nbd_store_free(struct nbd_store *s)
{
	unsigned int i;

	if (s->thread_started) {
		uint64_t one = 1;

		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_mutex_unlock(&s->lock);
		if (write(s->efd, &one, sizeof(one)) < 0)
			pr_err("%s: nbd: eventfd: %s", s->m->name,
			       mq_strerror(errno));
		pthread_join(s->thread, NULL);
	}
	for (i = 0; i < s->nr_conns; i++)
		if (s->conns[i].h) {
			if (s->conns[i].state == CONN_READY)
				nbd_shutdown(s->conns[i].h, 0);
			nbd_close(s->conns[i].h);
		}
	if (s->efd >= 0)
		close(s->efd);
	pthread_mutex_destroy(&s->lock);
	free(s->uri);
	free(s);
}

static void nbd_store_close(struct media *m)
{
	if (m->priv)
		nbd_store_free(m->priv);
	m->priv = NULL;
}

/* How the key gave the URI: nbd=URI, or media=nbd:URI. */
static const char *uri_prefix(const char *key)
{
	return strcmp(key, "nbd") ? "nbd:" : "";
}

/*
 * Connect h and negotiate, giving up after the store's io_timeout: libnbd's
 * own nbd_connect_uri waits for ever on a remote that accepts and then
 * never answers, and these connections are made while the server starts
 * or reloads.  0, or -1 with the reason (libnbd's error, or that the
 * remote did not answer within io_timeout) in *why.
 */
static int nbd_connect_bounded(struct nbd_store *s, struct nbd_handle *h,
			       const char **why)
{
	uint64_t deadline = now_ns() + s->io_timeout_ns;

	*why = NULL;
	if (nbd_aio_connect_uri(h, s->uri) == -1)
		goto failed;
	while (!nbd_aio_is_ready(h)) {
		uint64_t now = now_ns();
		int ms;

		if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h))
			goto failed;
		if (now >= deadline) {
			*why = "no answer within io_timeout";
			return -1;
		}
		ms = (int)((deadline - now + 999999) / 1000000);
		if (nbd_poll(h, ms) == -1)
			goto failed;
	}
	return 0;
failed:
	*why = nbd_get_error();
	if (!*why)
		*why = "the connection was closed";
	return -1;
}

/* The first connection, made here, decides what the store offers. */
static int nbd_first_connect(struct nbd_store *s, const char *key,
			     struct mq_err *e)
{
	struct nbd_handle *h = nbd_new_handle(s, 0, e);
	const char *why;
	int64_t size;

	if (!h)
		return -1;
	if (nbd_connect_bounded(s, h, &why)) {
		mq_err_set(e, "%s=%s%s: cannot connect: %s", key,
			   uri_prefix(key), s->uri, why);
		nbd_close(h);
		return -1;
	}
	size = nbd_get_size(h);
	if (size < 0) {
		mq_err_set(e, "%s=%s%s: %s", key, uri_prefix(key), s->uri,
			   nbd_get_error());
		nbd_close(h);
		return -1;
	}
	s->remote_size = (uint64_t)size;
	s->m->read_only = nbd_is_read_only(h) == 1;
	s->can_flush = nbd_can_flush(h) == 1;
	s->can_fua = nbd_can_fua(h) == 1;
	s->can_trim = nbd_can_trim(h) == 1;
	s->can_zero = nbd_can_zero(h) == 1;
	s->can_fast_zero = nbd_can_fast_zero(h) == 1;
	s->can_extents =
		nbd_can_meta_context(h, LIBNBD_CONTEXT_BASE_ALLOCATION) == 1;
	s->m->caps = 0;
	if (s->can_flush)
		s->m->caps |= MEDIA_CAN_FLUSH;
	if (s->can_fua)
		s->m->caps |= MEDIA_CAN_FUA;
	if (s->can_trim)
		s->m->caps |= MEDIA_CAN_TRIM;
	if (s->can_zero)
		s->m->caps |= MEDIA_CAN_ZERO;
	if (s->can_fast_zero)
		s->m->caps |= MEDIA_CAN_FAST_ZERO;
	if (s->can_extents)
		s->m->caps |= MEDIA_CAN_EXTENTS;
	if (nbd_can_multi_conn(h) == 1)
		s->m->caps |= MEDIA_CAN_MULTI_CONN;
	s->conns[0].h = h;
	s->conns[0].state = CONN_READY;
	return 0;
}

static int nbd_store_open(struct media *m, const char *arg,
			  const struct media_open_args *a, struct mq_err *e)
{
	const char *key = a->key ? a->key : "media";
	unsigned int conns = 1, retry = 0, i;
	struct nbd_store *s;

	if (!arg || !*arg)
		return mq_err_set(e, "%s=nbd:URI: the URI is missing", key);
	if (a->params &&
	    (mq_param_uint(a->params, "nbd_connections", 1, 1,
			   NBD_MAX_CONNECTIONS, &conns, e) ||
	     mq_param_uint(a->params, "retry", 0, 0, 3600, &retry, e)))
		return -1;

	s = calloc(1, sizeof(*s));
	if (!s)
		return mq_err_set(e, "out of memory");
	s->m = m;
	s->efd = -1;
	pthread_mutex_init(&s->lock, NULL);
	s->incoming_tail = &s->incoming;
	s->waiting_tail = &s->waiting;
	s->nr_conns = 1;
	s->io_timeout_ns =
		(uint64_t)(a->io_timeout_ms ? a->io_timeout_ms : 30000) *
		1000000u;
	s->retry_ns = (uint64_t)retry * 1000000000u;
	m->priv = s;
	s->uri = strdup(arg);
	if (!s->uri) {
		mq_err_set(e, "out of memory");
		goto fail;
	}
	for (i = 0; i < NBD_MAX_CONNECTIONS; i++)
		s->conns[i].s = s;
	if (nbd_first_connect(s, key, e))
		goto fail;
	if (conns > 1 && !(m->caps & MEDIA_CAN_MULTI_CONN)) {
		mq_err_set(e,
			   "nbd_connections=%u: nbd:%s does not offer "
			   "multi-conn; only 1 connection is safe",
			   conns, s->uri);
		goto fail;
	}
	for (i = 1; i < conns; i++) {
		struct nbd_conn *c = &s->conns[i];
		const char *why;

		s->nr_conns = i + 1;
		c->h = nbd_new_handle(s, i, e);
		if (!c->h)
			goto fail;
		if (nbd_connect_bounded(s, c->h, &why)) {
			mq_err_set(e, "%s=%s%s: connection %u: %s", key,
				   uri_prefix(key), s->uri, i + 1, why);
			goto fail;
		}
		c->state = CONN_READY;
	}

	m->size = s->remote_size / a->block_size * a->block_size;
	if (a->size) {
		if (a->size > m->size) {
			mq_err_set(e,
				   "size=%" PRIu64
				   ": larger than nbd:%s (%" PRIu64 " bytes)",
				   a->size, s->uri, s->remote_size);
			goto fail;
		}
		m->size = a->size;
	}
	if (!m->size) {
		mq_err_set(e,
			   "%s=%s%s: the export's %" PRIu64
			   " bytes hold no whole %u-byte block",
			   key, uri_prefix(key), s->uri, s->remote_size,
			   a->block_size);
		goto fail;
	}

	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->efd < 0) {
		mq_err_set(e, "eventfd: %s", mq_strerror(errno));
		goto fail;
	}
	if (pthread_create(&s->thread, NULL, nbd_thread, s)) {
		mq_err_set(e, "cannot start the nbd thread");
		goto fail;
	}
	s->thread_started = true;
	{
		char tname[16];

		snprintf(tname, sizeof(tname), "%.11s-nbd", m->name);
		pthread_setname_np(s->thread, tname);
	}
	return 0;

fail:
	nbd_store_close(m);
	return -1;
}

const struct media_ops nbd_media_ops = {
	.name = "nbd",
	.usage = "nbd:URI",
	.flags = MEDIA_OPS_REMOTE,
	.open = nbd_store_open,
	.close = nbd_store_close,
	.submit = nbd_submit,
	.extents = nbd_extents,
};
