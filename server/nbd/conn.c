// SPDX-License-Identifier: GPL-2.0
/*
 * One client connection, owned by one loop thread from accept to close.
 *
 * Input is read in large pieces into conn->inbuf and parsed from there
 * (parser.c); a big WRITE payload is read straight into its buffer.
 * Output is a queue of iovec lists (struct nbd_wbuf) written with writev,
 * or, under TLS, gathered into records.  A connection is "dirty" when
 * something happened to it; the loop services dirty connections once per
 * iteration, before it sleeps, so the replies of everything that
 * completed in one iteration leave in one writev.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include "mqblkd.h"
#include "tls/tls.h"

#define IOV_BATCH   256
#define STAGE_SIZE  16384
#define OBUF_MIN    4096
#define READ_ROUNDS 16

struct nbd_obuf {
	struct nbd_wbuf wb;
	struct iovec iov;
	size_t used, cap;
	uint8_t data[];
};

static void obuf_release(struct nbd_wbuf *wb)
{
	free(wb);
}

void nbd_conn_mark_dirty(struct nbd_conn *c)
{
	if (c->dirty)
		return;
	c->dirty = true;
	c->dirty_next = c->loop->dirty;
	c->loop->dirty = c;
}

void nbd_conn_queue(struct nbd_conn *c, struct nbd_wbuf *wb)
{
	unsigned int i;

	if (c->phase == PH_DEAD) {
		wb->release(wb);
		return;
	}
	wb->next = NULL;
	for (i = wb->cur; i < wb->niov; i++)
		c->out_bytes += wb->iov[i].iov_len;
	*c->out_tail = wb;
	c->out_tail = &wb->next;
	c->out_queued++;
	nbd_conn_mark_dirty(c);
}

int nbd_conn_send_copy(struct nbd_conn *c, const void *data, size_t len)
{
	struct nbd_obuf *ob = NULL;

	if (c->phase == PH_DEAD)
		return -1;
	if (c->out_head && (*c->out_tail == NULL)) {
		/* the tail item, if it is a copy buffer with room */
		struct nbd_wbuf *last =
			(struct nbd_wbuf *)((char *)c->out_tail -
					    offsetof(struct nbd_wbuf, next));

		if (last->release == obuf_release) {
			ob = (struct nbd_obuf *)last;
			if (ob->cap - ob->used < len)
				ob = NULL;
		}
	}
	if (!ob) {
		size_t cap = len > OBUF_MIN ? len : OBUF_MIN;

		ob = malloc(sizeof(*ob) + cap);
		if (!ob) {
			nbd_conn_kill(c, "out of memory");
			return -1;
		}
		ob->cap = cap;
		ob->used = 0;
		ob->iov = (struct iovec){ob->data, 0};
		ob->wb = (struct nbd_wbuf){
			.iov = &ob->iov,
			.niov = 1,
			.release = obuf_release,
		};
		nbd_conn_queue(c, &ob->wb);
	}
	memcpy(ob->data + ob->used, data, len);
	ob->used += len;
	ob->iov.iov_len += len;
	c->out_bytes += len;
	nbd_conn_mark_dirty(c);
	return 0;
}

/* n bytes of the queue are gone: release what is wholly written. */
static void out_advance(struct nbd_conn *c, size_t n)
{
	struct nbd_wbuf *wb;

	while ((wb = c->out_head)) {
		while (wb->cur < wb->niov) {
			struct iovec *v = &wb->iov[wb->cur];

			if (v->iov_len > n) {
				v->iov_base = (char *)v->iov_base + n;
				v->iov_len -= n;
				c->out_bytes -= n;
				return;
			}
			n -= v->iov_len;
			c->out_bytes -= v->iov_len;
			wb->cur++;
		}
		c->out_head = wb->next;
		if (!c->out_head)
			c->out_tail = &c->out_head;
		wb->release(wb);
	}
}

void nbd_conn_discard_output(struct nbd_conn *c)
{
	struct nbd_wbuf *wb;

	while ((wb = c->out_head)) {
		c->out_head = wb->next;
		wb->release(wb);
	}
	c->out_tail = &c->out_head;
	c->out_bytes = 0;
	c->stage_off = c->stage_len = 0;
}

/* 0: all written; 1: the socket is full; -1: failed. */
static int flush_plain(struct nbd_conn *c)
{
	struct iovec iov[IOV_BATCH];

	while (c->out_head) {
		struct nbd_wbuf *wb;
		unsigned int i;
		int n = 0;
		ssize_t r;

		for (wb = c->out_head; wb && n < IOV_BATCH; wb = wb->next)
			for (i = wb->cur; i < wb->niov && n < IOV_BATCH; i++)
				if (wb->iov[i].iov_len)
					iov[n++] = wb->iov[i];
		if (!n) {
			out_advance(c, 0);
			continue;
		}
		r = writev(c->fd, iov, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 1;
			return -1;
		}
		out_advance(c, (size_t)r);
	}
	return 0;
}

static int flush_tls(struct nbd_conn *c)
{
	enum tls_status want;
	ssize_t r;

	for (;;) {
		struct iovec *v;

		if (c->stage_len) {
			r = tls_send(c->tls, c->stage + c->stage_off,
				     c->stage_len - c->stage_off, &want);
			if (r < 0)
				goto blocked;
			c->stage_off += (size_t)r;
			if (c->stage_off == c->stage_len)
				c->stage_off = c->stage_len = 0;
			continue;
		}
		out_advance(c, 0); /* drop empty items */
		if (!c->out_head)
			return 0;
		v = &c->out_head->iov[c->out_head->cur];
		if (v->iov_len >= STAGE_SIZE) {
			r = tls_send(c->tls, v->iov_base, v->iov_len, &want);
			if (r < 0)
				goto blocked;
			out_advance(c, (size_t)r);
			continue;
		}
		/* Gather small pieces into one record. */
		while (c->out_head && c->stage_len < STAGE_SIZE) {
			size_t n;

			v = &c->out_head->iov[c->out_head->cur];
			n = v->iov_len;
			if (n > STAGE_SIZE - c->stage_len)
				n = STAGE_SIZE - c->stage_len;
			memcpy(c->stage + c->stage_len, v->iov_base, n);
			c->stage_len += n;
			out_advance(c, n);
		}
	}
blocked:
	if (errno != EAGAIN)
		return -1;
	c->tls_want = want;
	return 1;
}

/*
 * Autocorking, as TCP does it for small writes: while the client has not
 * yet read what was last sent, more replies are held back and leave
 * together, up to a batch.  The client then finds a run of replies in one
 * socket buffer instead of one each.  Only inside the busy-poll window,
 * which looks at the connection again on every round, and for one window's
 * length at most: other clients can keep the loop's window open.
 *
 * Unix sockets only.  There SIOCOUTQ counts what the peer has not read;
 * on TCP it counts what the peer has not acknowledged, which takes a round
 * trip or a delayed ACK, and holding replies for that would be Nagle's
 * algorithm, which TCP_NODELAY turned off.
 */
#define CORK_MAX_REPLIES 16
#define CORK_MAX_BYTES	 (64u << 10)

static bool conn_cork(struct nbd_conn *c)
{
	ev_tstamp now;
	int unread;

	if (c->fd < 0 || !c->cork_ok || c->tls_active ||
	    c->phase != PH_TRANSMISSION || !c->out_head ||
	    c->out_queued >= CORK_MAX_REPLIES ||
	    c->out_bytes >= CORK_MAX_BYTES || !nbd_loop_polling(c->loop))
		return false;
	now = ev_now(c->loop->ev);
	if (c->corked && now - c->corked_since > c->loop->poll_s)
		return false;
	if (ioctl(c->fd, SIOCOUTQ, &unread) < 0 || unread <= 0)
		return false;
	if (!c->corked)
		c->corked_since = now;
	return true;
}

/* Whether conn_cork may hold this socket's replies: a Unix socket. */
static bool sock_can_cork(int fd)
{
	int domain;
	socklen_t len = sizeof(domain);

	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
	       domain == AF_UNIX;
}

static int conn_flush(struct nbd_conn *c)
{
	c->out_queued = 0;
	if (c->fd < 0) {
		nbd_conn_discard_output(c);
		return 0;
	}
	c->tls_want = TLS_DONE;
	if (c->tls_active)
		return flush_tls(c);
	return flush_plain(c);
}

/*
 * While a large batch of requests is parsed, let the first replies go:
 * the client starts on them while the rest are served.
 */
#define EARLY_FLUSH_REPLIES 16
#define EARLY_FLUSH_BYTES   (256u << 10)

void nbd_conn_flush_early(struct nbd_conn *c)
{
	if (c->fd < 0 || c->phase != PH_TRANSMISSION)
		return;
	if (c->out_queued < EARLY_FLUSH_REPLIES &&
	    c->out_bytes < EARLY_FLUSH_BYTES)
		return;
	if (conn_flush(c) < 0)
		nbd_conn_kill(c, c->tls_active ? tls_error(c->tls)
					       : strerror(errno));
}

static ssize_t conn_recv(struct nbd_conn *c, void *buf, size_t len)
{
	ssize_t r;

	if (c->tls_active) {
		enum tls_status want;

		r = tls_recv(c->tls, buf, len, &want);
		if (r < 0 && errno == EAGAIN)
			c->tls_want = want;
		return r;
	}
	do {
		r = read(c->fd, buf, len);
	} while (r < 0 && errno == EINTR);
	return r;
}

static void conn_read(struct nbd_conn *c)
{
	struct mq_plug plug;
	int round;

	for (round = 0; round < READ_ROUNDS; round++) {
		bool direct;
		void *p;
		size_t len;
		ssize_t r;

		if (c->phase != PH_HANDSHAKE && c->phase != PH_TRANSMISSION)
			return;
		if (nbd_rx_paused(c))
			return;
		direct = nbd_rx_direct(c, &p, &len);
		if (!direct) {
			if (c->in_start && MQBLKD_INBUF_SIZE - c->in_end <
						   MQBLKD_INBUF_SIZE / 4) {
				memmove(c->inbuf, c->inbuf + c->in_start,
					c->in_end - c->in_start);
				c->in_end -= c->in_start;
				c->in_start = 0;
			}
			p = c->inbuf + c->in_end;
			len = MQBLKD_INBUF_SIZE - c->in_end;
			if (!len)
				return; /* the parser is waiting on output */
			len = nbd_rx_read_len(c, len);
		}
		r = conn_recv(c, p, len);
		if (r == 0) {
			nbd_conn_kill(
				c,
				c->phase == PH_TRANSMISSION &&
						(c->inflight || c->rx_req)
					? "client hung up with requests pending"
					: "client closed the connection");
			return;
		}
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			nbd_conn_kill(c, c->tls_active ? tls_error(c->tls)
						       : strerror(errno));
			return;
		}
		/*
		 * What one read brought is one batch: the core reads the
		 * clock for it once (struct mq_plug).
		 */
		mq_start_plug(&plug);
		if (direct) {
			nbd_rx_direct_done(c, (size_t)r);
		} else {
			c->in_end += (size_t)r;
			nbd_conn_parse(c);
		}
		mq_finish_plug(&plug);
		/* A short plain read means the socket is empty. */
		if (!c->tls_active && (size_t)r < len)
			return;
	}
	/* Fairness: come back next iteration for the rest. */
	nbd_conn_mark_dirty(c);
}

static void conn_update_io(struct nbd_conn *c)
{
	unsigned int ev = 0;

	if (c->fd < 0 || c->phase == PH_DEAD)
		return;
	if (c->phase == PH_TLS_SWITCH && c->tls) {
		ev = c->tls_want == TLS_WANT_WRITE ? EV_WRITE : EV_READ;
	} else {
		if ((c->phase == PH_HANDSHAKE || c->phase == PH_TRANSMISSION) &&
		    !nbd_rx_paused(c))
			ev |= EV_READ;
		/* corked output waits for the poll window, not the socket */
		if ((c->out_head && !c->corked) || c->stage_len)
			ev |= EV_WRITE;
		if (c->tls_want == TLS_WANT_WRITE)
			ev |= EV_WRITE;
		if (c->tls_want == TLS_WANT_READ)
			ev |= EV_READ;
	}
	if (ev == c->io_events)
		return;
	ev_io_stop(c->loop->ev, &c->io);
	ev_io_set(&c->io, c->fd, ev);
	if (ev)
		ev_io_start(c->loop->ev, &c->io);
	c->io_events = ev;
}

static void tls_step(struct nbd_conn *c)
{
	char desc[128];
	enum tls_status st;

	if (!c->tls) {
		c->tls = tls_conn_new(c->srv->tls, c->fd);
		c->stage = malloc(STAGE_SIZE);
		if (!c->tls || !c->stage) {
			nbd_conn_kill(c, "cannot start TLS");
			return;
		}
	}
	st = tls_handshake(c->tls);
	if (st == TLS_FAILED) {
		log_err("client %llu (%s): TLS handshake failed: %s",
			(unsigned long long)c->client.id, c->client.addr,
			tls_error(c->tls));
		nbd_conn_kill(c, "TLS handshake failed");
		return;
	}
	c->tls_want = st;
	if (st != TLS_DONE)
		return;
	snprintf(c->client.tls_user, sizeof(c->client.tls_user), "%s",
		 tls_peer_name(c->tls));
	tls_describe(c->tls, desc, sizeof(desc));
	log_info("client %llu (%s): TLS %s%s%s",
		 (unsigned long long)c->client.id, c->client.addr, desc,
		 c->client.tls_user[0] ? ", user " : "", c->client.tls_user);
	nbd_hs_tls_done(c);
	/* The session may already hold the client's next option. */
	conn_read(c);
}

void nbd_conn_start_tls(struct nbd_conn *c)
{
	if (c->fd < 0) {
		/* buffer-fed: the bytes that follow count as "TLS" */
		snprintf(c->client.tls_user, sizeof(c->client.tls_user),
			 "fuzz");
		nbd_hs_tls_done(c);
		return;
	}
	nbd_conn_mark_dirty(c);
}

static void io_cb(struct ev_loop *ev, ev_io *w, int revents)
{
	struct nbd_conn *c = w->data;

	if (c->phase == PH_TLS_SWITCH) {
		if (c->tls)
			tls_step(c);
	} else if (revents & EV_READ ||
		   (c->tls_active && c->tls_want == TLS_WANT_WRITE)) {
		conn_read(c);
	}
	if (revents & EV_READ)
		nbd_loop_note_activity(c->loop);
	nbd_conn_mark_dirty(c);
}

static void hs_timeout_cb(struct ev_loop *ev, ev_timer *w, int revents)
{
	struct nbd_conn *c = w->data;

	if (c->phase == PH_HANDSHAKE || c->phase == PH_TLS_SWITCH) {
		log_info("client %llu (%s): handshake timeout",
			 (unsigned long long)c->client.id, c->client.addr);
		nbd_conn_kill(c, "handshake timeout");
	}
}

struct nbd_conn *nbd_conn_new(struct nbd_loop *l, int fd,
			      const struct mq_client *client)
{
	struct nbd_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->inbuf = malloc(MQBLKD_INBUF_SIZE);
	if (!c->inbuf) {
		free(c);
		return NULL;
	}
	c->srv = l->srv;
	c->loop = l;
	c->fd = fd;
	c->client = *client;
	atomic_init(&c->client.gone, false);
	c->out_tail = &c->out_head;
	TAILQ_INSERT_TAIL(&l->conns, c, link);
	atomic_fetch_add(&l->nr_conns, 1);
	if (fd >= 0) {
		c->cork_ok = sock_can_cork(fd);
		ev_io_init(&c->io, io_cb, fd, 0);
		c->io.data = c;
		ev_timer_init(&c->hs_timer, hs_timeout_cb,
			      c->srv->cfg->handshake_timeout, 0);
		c->hs_timer.data = c;
		if (c->srv->cfg->handshake_timeout > 0)
			ev_timer_start(l->ev, &c->hs_timer);
	}
	log_info("client %llu: connected from %s",
		 (unsigned long long)c->client.id, c->client.addr);
	nbd_hs_start(c);
	nbd_conn_mark_dirty(c);
	return c;
}

static void conn_teardown(struct nbd_conn *c)
{
	if (c->fd >= 0) {
		ev_io_stop(c->loop->ev, &c->io);
		ev_timer_stop(c->loop->ev, &c->hs_timer);
		c->io_events = 0;
	}
	if (c->tls) {
		tls_conn_free(c->tls);
		c->tls = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	/* Nobody waits for its requests: those not started are dropped. */
	atomic_store(&c->client.gone, true);
	nbd_conn_discard_output(c);
	if (c->rx_req) {
		nbd_req_free(c->rx_req);
		c->rx_req = NULL;
	}
	c->phase = PH_DEAD;
	nbd_rx_expect(c, RX_PAUSED, NULL, 0);
	nbd_conn_mark_dirty(c);
}

void nbd_conn_kill(struct nbd_conn *c, const char *why)
{
	if (c->phase == PH_DEAD)
		return;
	log_info("client %llu (%s): closing: %s",
		 (unsigned long long)c->client.id, c->client.addr, why);
	conn_teardown(c);
}

void nbd_conn_close_after_flush(struct nbd_conn *c, const char *why)
{
	if (c->phase == PH_DEAD || c->phase == PH_CLOSING)
		return;
	log_info("client %llu (%s): %s", (unsigned long long)c->client.id,
		 c->client.addr, why);
	c->phase = PH_CLOSING;
	nbd_rx_expect(c, RX_PAUSED, NULL, 0);
	if (c->fd >= 0)
		ev_timer_stop(c->loop->ev, &c->hs_timer);
	nbd_conn_mark_dirty(c);
}

void nbd_conn_drain(struct nbd_conn *c)
{
	switch (c->phase) {
	case PH_HANDSHAKE:
	case PH_TLS_SWITCH:
		nbd_conn_kill(c, "server shutting down");
		break;
	case PH_TRANSMISSION:
		nbd_conn_close_after_flush(c, "server shutting down: "
					      "finishing requests in flight");
		break;
	default:
		break;
	}
}

void nbd_conn_service(struct nbd_conn *c)
{
	int r;

	if (c->phase == PH_DEAD) {
		nbd_conn_reap(c);
		return;
	}
	/* Input held back (back-pressure, TLS) may be parseable now. */
	if (!nbd_rx_paused(c) && c->in_end > c->in_start) {
		struct mq_plug plug;

		mq_start_plug(&plug);
		nbd_conn_parse(c);
		mq_finish_plug(&plug);
	}
	if (c->tls && c->tls_active && !nbd_rx_paused(c) && tls_pending(c->tls))
		conn_read(c);
	if (c->phase == PH_DEAD) {
		nbd_conn_reap(c);
		return;
	}

	c->corked = conn_cork(c);
	r = c->corked ? 1 : conn_flush(c);
	if (r < 0) {
		nbd_conn_kill(c, c->tls_active ? tls_error(c->tls)
					       : strerror(errno));
		nbd_conn_reap(c);
		return;
	}
	if (c->phase == PH_TLS_SWITCH && !c->tls && r == 0 && c->fd >= 0)
		tls_step(c);
	if (c->phase == PH_CLOSING && !c->inflight && !c->out_head &&
	    !c->stage_len) {
		if (c->tls)
			tls_close_notify(c->tls);
		conn_teardown(c);
	}
	if (c->phase == PH_DEAD) {
		nbd_conn_reap(c);
		return;
	}
	conn_update_io(c);
}

bool nbd_conn_reap(struct nbd_conn *c)
{
	if (c->phase != PH_DEAD || c->inflight || c->dirty)
		return false;
	TAILQ_REMOVE(&c->loop->conns, c, link);
	atomic_fetch_sub(&c->loop->nr_conns, 1);
	if (c->counted)
		atomic_fetch_sub(&c->srv->nr_conns, 1);
	log_debug("client %llu: freed", (unsigned long long)c->client.id);
	nbd_req_cache_drop(c);
	/* Its export's device may go with it (a reload removed it). */
	nbd_export_put(c->srv, c->exp);
	nbd_export_put(c->srv, c->meta_export);
	free(c->stage);
	free(c->optbuf);
	free(c->inbuf);
	free(c);
	return true;
}

size_t nbd_conn_feed(struct nbd_conn *c, const void *data, size_t len)
{
	size_t room;

	if (c->phase == PH_DEAD || c->phase == PH_CLOSING)
		return len; /* nobody listens any more */
	if (c->in_start) {
		memmove(c->inbuf, c->inbuf + c->in_start,
			c->in_end - c->in_start);
		c->in_end -= c->in_start;
		c->in_start = 0;
	}
	room = MQBLKD_INBUF_SIZE - c->in_end;
	if (len > room)
		len = room;
	memcpy(c->inbuf + c->in_end, data, len);
	c->in_end += len;
	nbd_conn_parse(c);
	return len;
}
