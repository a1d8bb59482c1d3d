// SPDX-License-Identifier: GPL-2.0
/*
 * Event-loop threads.  Each is a "CPU" to the request core: loop i
 * submits on software queue i of every export.  Two things cross threads
 * and both come in through one ev_async: new connections from the
 * acceptor, and completions from device threads, pushed on a lock-free
 * stack.  Before the loop sleeps, its prepare watcher services every
 * connection something happened to.
 *
 * Busy polling (--poll-us): for a short window after the last input or
 * completion the loop does not sleep; it polls its sockets without
 * blocking, yielding the CPU between rounds.  A client that sends its
 * next request within the window then finds the loop awake, and does not
 * pay for waking it, which at QD1 is most of a round trip.  The window is
 * also what lets conn.c hold replies back (autocorking): a corked
 * connection is looked at again on every round, and the window's end
 * sends whatever is still held.
 *
 * Polling is adaptive (adaptive-poll.h): a loop stops spinning after a
 * few windows in which spinning found nothing, starts again when it is
 * woken sooner than a window after it slept, and never spins while more
 * threads are running or runnable than the server has CPUs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "mqblkd.h"

static __thread struct nbd_loop *current_loop;

struct nbd_loop *nbd_current_loop(void)
{
	return current_loop;
}

void nbd_set_current_loop(struct nbd_loop *l)
{
	current_loop = l;
}

void nbd_loop_complete(struct nbd_loop *l, struct nbd_req *req)
{
	struct nbd_req *head;

	atomic_fetch_add_explicit(&l->completers, 1, memory_order_relaxed);
	head = atomic_load_explicit(&l->done, memory_order_relaxed);
	do {
		req->next_done = head;
	} while (!atomic_compare_exchange_weak_explicit(&l->done, &head, req,
							memory_order_release,
							memory_order_relaxed));
	if (l->ev)
		ev_async_send(l->ev, &l->wake);
	atomic_fetch_sub_explicit(&l->completers, 1, memory_order_release);
}

static void run_completions(struct nbd_loop *l)
{
	struct nbd_req *list, *prev = NULL, *next;

	list = atomic_exchange_explicit(&l->done, NULL, memory_order_acquire);
	/* The stack is newest first; answer in completion order. */
	while (list) {
		next = list->next_done;
		list->next_done = prev;
		prev = list;
		list = next;
	}
	for (; prev; prev = next) {
		next = prev->next_done;
		nbd_req_finish(prev);
	}
}

static void take_incoming(struct nbd_loop *l)
{
	struct nbd_incoming *in, *next;

	pthread_mutex_lock(&l->lock);
	in = l->incoming;
	l->incoming = NULL;
	pthread_mutex_unlock(&l->lock);
	for (; in; in = next) {
		struct nbd_conn *c;

		next = in->next;
		if (l->draining) {
			close(in->fd);
			atomic_fetch_sub(&l->srv->nr_conns, 1);
		} else {
			c = nbd_conn_new(l, in->fd, &in->client);
			if (c) {
				c->counted = true;
			} else {
				log_err("client %llu: out of memory",
					(unsigned long long)in->client.id);
				close(in->fd);
				atomic_fetch_sub(&l->srv->nr_conns, 1);
			}
		}
		free(in);
	}
}

static void start_drain(struct nbd_loop *l)
{
	struct nbd_conn *c, *tmp;

	l->draining = true;
	for (c = TAILQ_FIRST(&l->conns); c; c = tmp) {
		tmp = TAILQ_NEXT(c, link);
		nbd_conn_drain(c);
	}
	if (l->ev)
		ev_timer_start(l->ev, &l->drain_timer);
}

void nbd_loop_run_pending(struct nbd_loop *l)
{
	struct nbd_conn *c;

	do {
		run_completions(l);
		while ((c = l->dirty)) {
			l->dirty = c->dirty_next;
			c->dirty = false;
			nbd_conn_service(c);
		}
	} while (atomic_load_explicit(&l->done, memory_order_acquire));
}

/* How often a loop reads /proc/loadavg's running count, at most. */
#define NBD_POLL_SAMPLE_S 0.005

/*
 * nr_running from /proc/loadavg, read again if the last is stale.  The
 * file is opened for each read (a few hundred a second at most) so that
 * a loop holds no descriptor for it.
 */
static unsigned int read_running(void *arg)
{
	struct nbd_loop *l = arg;
	double now = ev_now(l->ev);
	char buf[128];
	ssize_t n = -1;
	int fd;

	if (now - l->sampled_at < NBD_POLL_SAMPLE_S)
		return l->nr_running;
	l->sampled_at = now;
	fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0) {
		l->nr_running = 0; /* unknown: the other rules decide */
		return 0;
	}
	buf[n] = '\0';
	l->nr_running = nbd_poll_parse_loadavg(buf);
	return l->nr_running;
}

void nbd_loop_note_activity(struct nbd_loop *l)
{
	double now;

	if (l->poll_s <= 0 || !l->ev)
		return;
	now = ev_now(l->ev);
	if (ev_is_active(&l->poll))
		nbd_poll_spin_found(&l->poll_state);
	else
		nbd_poll_woken(&l->poll_state, now - l->slept_at, l->poll_s);
	l->last_active = now;
	l->spin_ok = nbd_poll_decide(&l->poll_state, read_running, l,
				     l->nr_cpus, l->srv->nr_loops,
				     l->nr_awaited > 0, l->nr_large > 0);
}

bool nbd_loop_polling(const struct nbd_loop *l)
{
	return l->poll_s > 0 && l->ev && l->spin_ok &&
	       ev_now(l->ev) - l->last_active <= l->poll_s;
}

static void wake_cb(struct ev_loop *ev, ev_async *w, int revents)
{
	struct nbd_loop *l = w->data;

	nbd_loop_note_activity(l);
	take_incoming(l);
	run_completions(l);
	if (atomic_load(&l->drain_requested) && !l->draining)
		start_drain(l);
}

/*
 * The loop is about to sleep without spinning: replies corked while it
 * could still spin (the decision changes with the load) would wait for
 * the next wake-up, which the client, waiting for them, may never cause.
 * Send them.
 */
static void flush_corked(struct nbd_loop *l)
{
	struct nbd_conn *c;
	bool any = false;

	TAILQ_FOREACH (c, &l->conns, link)
		if (c->corked) {
			nbd_conn_mark_dirty(c);
			any = true;
		}
	if (any)
		nbd_loop_run_pending(l);
}

static void prepare_cb(struct ev_loop *ev, ev_prepare *w, int revents)
{
	struct nbd_loop *l = w->data;

	nbd_loop_run_pending(l);
	if (l->draining && TAILQ_EMPTY(&l->conns)) {
		ev_break(ev, EVBREAK_ALL);
	} else if (nbd_loop_polling(l)) {
		if (!ev_is_active(&l->poll)) {
			nbd_poll_spin_start(&l->poll_state);
			ev_idle_start(ev, &l->poll);
		}
	} else if (l->poll_s > 0) {
		if (!ev_is_active(&l->poll))
			flush_corked(l);
		/* About to sleep: a wake-up soon after means load. */
		ev_now_update(ev);
		l->slept_at = ev_now(ev);
	}
}

/*
 * One round of the busy-poll window; an active idle watcher makes libev
 * poll without blocking.  Corked connections are looked at again; once
 * the window has passed they are sent uncorked and the loop may sleep.
 */
static void poll_cb(struct ev_loop *ev, ev_idle *w, int revents)
{
	struct nbd_loop *l = w->data;
	struct nbd_conn *c;

	TAILQ_FOREACH (c, &l->conns, link)
		if (c->corked)
			nbd_conn_mark_dirty(c);
	if (!nbd_loop_polling(l)) {
		ev_idle_stop(ev, w);
		nbd_poll_spin_end(&l->poll_state);
		return;
	}
	/* Let a client or device thread on this CPU run; cannot fail. */
	sched_yield();
}

/* Clients that do not read their replies do not hold up shutdown. */
static void drain_timeout_cb(struct ev_loop *ev, ev_timer *w, int revents)
{
	struct nbd_loop *l = w->data;
	struct nbd_conn *c, *tmp;

	for (c = TAILQ_FIRST(&l->conns); c; c = tmp) {
		tmp = TAILQ_NEXT(c, link);
		nbd_conn_kill(c, "drain timeout");
	}
}

int nbd_loop_init(struct nbd_loop *l, struct nbd_server *srv,
		  unsigned int index)
{
	memset(l, 0, sizeof(*l));
	l->srv = srv;
	l->index = index;
	TAILQ_INIT(&l->conns);
	atomic_init(&l->done, NULL);
	if (pthread_mutex_init(&l->lock, NULL))
		return -1;
	ev_async_init(&l->wake, wake_cb);
	l->wake.data = l;
	ev_prepare_init(&l->prepare, prepare_cb);
	l->prepare.data = l;
	ev_idle_init(&l->poll, poll_cb);
	l->poll.data = l;
	l->poll_s = srv->cfg ? srv->cfg->poll_us / 1e6 : 0;
	if (l->poll_s > 0) {
		cpu_set_t set;

		l->nr_cpus = 1;
		if (!sched_getaffinity(0, sizeof(set), &set) &&
		    CPU_COUNT(&set) > 0)
			l->nr_cpus = (unsigned int)CPU_COUNT(&set);
	}
	ev_timer_init(&l->drain_timer, drain_timeout_cb, MQBLKD_DRAIN_TIMEOUT,
		      0);
	l->drain_timer.data = l;
	return 0;
}

static void *loop_thread(void *arg)
{
	struct nbd_loop *l = arg;

	nbd_set_current_loop(l);
	ev_run(l->ev, 0);
	return NULL;
}

int nbd_loop_start(struct nbd_loop *l)
{
	int err;

	l->ev = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
	if (!l->ev) {
		log_err("loop %u: ev_loop_new failed", l->index);
		return -1;
	}
	ev_async_start(l->ev, &l->wake);
	ev_prepare_start(l->ev, &l->prepare);
	err = pthread_create(&l->thread, NULL, loop_thread, l);
	if (err) {
		log_err("loop %u: pthread_create: %s", l->index, strerror(err));
		return -1;
	}
	l->started = true;
	return 0;
}

/*
 * A loop ends only once its last connection is reaped, which waits for
 * every request of it (nbd_conn_reap): what the loop counts per request
 * must be back at zero.  A count left over would keep a rule of the
 * adaptive poll on for good, unseen; say so, and fail the exit.
 */
int nbd_loop_join(struct nbd_loop *l)
{
	if (!l->started)
		return 0;
	pthread_join(l->thread, NULL);
	l->started = false;
	if (l->nr_awaited || l->nr_large) {
		log_err("loop %u: %u requests still counted as awaited and %u "
			"as large after its last connection (a bug)",
			l->index, l->nr_awaited, l->nr_large);
		return -1;
	}
	return 0;
}

void nbd_loop_destroy(struct nbd_loop *l)
{
	struct nbd_incoming *in, *next;

	/* A device thread may still be waking us for the last completion. */
	while (atomic_load_explicit(&l->completers, memory_order_acquire))
		sched_yield();

	for (in = l->incoming; in; in = next) {
		next = in->next;
		close(in->fd);
		free(in);
	}
	l->incoming = NULL;
	if (l->ev)
		ev_loop_destroy(l->ev);
	l->ev = NULL;
	pthread_mutex_destroy(&l->lock);
}

int nbd_loop_hand_over(struct nbd_loop *l, int fd,
		       const struct mq_client *client)
{
	struct nbd_incoming *in = malloc(sizeof(*in));

	if (!in)
		return -1;
	in->fd = fd;
	in->client = *client;
	pthread_mutex_lock(&l->lock);
	in->next = l->incoming;
	l->incoming = in;
	pthread_mutex_unlock(&l->lock);
	ev_async_send(l->ev, &l->wake);
	return 0;
}

void nbd_loop_request_drain(struct nbd_loop *l)
{
	atomic_store(&l->drain_requested, true);
	if (l->ev)
		ev_async_send(l->ev, &l->wake);
}
