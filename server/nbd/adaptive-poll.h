/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Adaptive busy polling for an event loop (--poll-us), in the manner of
 * KVM's halt polling (virt/kvm/kvm_main.c: grow_halt_poll_ns and
 * shrink_halt_poll_ns): spin only while spinning pays.
 *
 *  - A poll window that ends with nothing found is empty.  After
 *    NBD_POLL_MAX_EMPTY empty windows in a row the loop stops spinning
 *    and sleeps at once.
 *  - A loop that sleeps and is woken sooner than one window after it
 *    went to sleep would have caught that event spinning: it is under
 *    load again, and spins again.
 *  - It never spins when that would keep a runnable thread off a CPU:
 *    when more threads are running or runnable than there are CPUs (the
 *    running count of /proc/loadavg, which counts this loop's thread
 *    too, so other loops of ours, clients and CPU hogs alike), or when
 *    the server has more event loops than CPUs.
 *  - While the loop waits for requests that another thread of ours
 *    completes (a device's completion thread, a scheduler's dispatch
 *    work), that thread counts as running: it is the one that brings
 *    the loop its work, and it is mostly asleep between its due times
 *    when /proc/loadavg is read.  A loop that spun beside a client
 *    and such a thread on two CPUs took CPU from both.
 *  - It never spins while one of its requests moves a large payload
 *    (NBD_POLL_LARGE_IO or more, either way): copying that takes tens
 *    of microseconds or more, beside which the wake-up a spin saves is
 *    lost, and the spin takes a CPU those copies (the client's, the
 *    kernel's, a device thread's) may want.  Its input also comes in
 *    socket-buffer pieces, each of which a spin would find, so the
 *    window would never run out empty.
 *
 * Pure decisions on plain numbers, so that a unit test can check each
 * rule; loop.c feeds them.
 */
#ifndef MQBLKD_ADAPTIVE_POLL_H
#define MQBLKD_ADAPTIVE_POLL_H

#include <stdbool.h>
#include <stdlib.h>

#define NBD_POLL_MAX_EMPTY 3
#define NBD_POLL_LARGE_IO  (128u << 10)

struct nbd_poll_state {
	unsigned int empty; /* empty windows in a row */
	bool found;	    /* the current spin caught an event */
};

/* A spin began: nothing found yet. */
static inline void nbd_poll_spin_start(struct nbd_poll_state *p)
{
	p->found = false;
}

/* Input or a completion arrived while the loop was spinning. */
static inline void nbd_poll_spin_found(struct nbd_poll_state *p)
{
	p->found = true;
}

/* The window ran out and the loop stops spinning. */
static inline void nbd_poll_spin_end(struct nbd_poll_state *p)
{
	if (p->found)
		p->empty = 0;
	else if (p->empty < NBD_POLL_MAX_EMPTY)
		p->empty++;
	p->found = false;
}

/* Woken slept_s after the loop went to sleep, with a window of window_s. */
static inline void nbd_poll_woken(struct nbd_poll_state *p, double slept_s,
				  double window_s)
{
	if (slept_s < window_s)
		p->empty = 0;
}

/*
 * May the loop spin now?  nr_running: running and runnable threads on
 * the machine, this one included (0 if unknown); nr_cpus: CPUs the
 * server may use; nr_loops: its event loops; awaits_others: requests of
 * this loop wait for another thread to complete them; moves_large: a
 * request of this loop moves NBD_POLL_LARGE_IO bytes or more.
 */
static inline bool nbd_poll_may_spin(const struct nbd_poll_state *p,
				     unsigned int nr_running,
				     unsigned int nr_cpus,
				     unsigned int nr_loops, bool awaits_others,
				     bool moves_large)
{
	if (nr_loops > nr_cpus || moves_large)
		return false;
	if (nr_running && nr_running + awaits_others > nr_cpus)
		return false;
	return p->empty < NBD_POLL_MAX_EMPTY;
}

/*
 * nbd_poll_may_spin() with the running count from read_running(arg),
 * which is asked only when the count can change the answer: reading it
 * costs system calls (three for /proc/loadavg), and while the other rules
 * already say no (a large payload moving, the empty windows used up, more
 * loops than CPUs) it would be read for nothing on every wake-up.
 */
static inline bool nbd_poll_decide(const struct nbd_poll_state *p,
				   unsigned int (*read_running)(void *arg),
				   void *arg, unsigned int nr_cpus,
				   unsigned int nr_loops, bool awaits_others,
				   bool moves_large)
{
	if (!nbd_poll_may_spin(p, 0, nr_cpus, nr_loops, awaits_others,
			       moves_large))
		return false;
	return nbd_poll_may_spin(p, read_running(arg), nr_cpus, nr_loops,
				 awaits_others, moves_large);
}

/* The running count of a /proc/loadavg line ("0.1 0.2 0.3 R/T PID"). */
static inline unsigned int nbd_poll_parse_loadavg(const char *s)
{
	unsigned int i;
	char *end;
	unsigned long r;

	for (i = 0; i < 3; i++) {
		while (*s && *s != ' ')
			s++;
		while (*s == ' ')
			s++;
	}
	r = strtoul(s, &end, 10);
	if (end == s || *end != '/')
		return 0;
	return r > 1u << 20 ? 1u << 20 : (unsigned int)r;
}

#endif
