// SPDX-License-Identifier: GPL-2.0
/*
 * mqblkd's adaptive busy polling (server/nbd/adaptive-poll.h): each rule
 * of the decision, on numbers; no loop, no timing.
 */
#include <check.h>

#include "server/nbd/adaptive-poll.h"
#include "tests/unit/helpers/tcheck.h"

/* A window of 50 us; 2 CPUs, 2 loops, 1 thread running (the loop). */
#define WIN 50e-6

static bool may(const struct nbd_poll_state *p)
{
	return nbd_poll_may_spin(p, 1, 2, 2, false, false);
}

static void empty_window(struct nbd_poll_state *p)
{
	nbd_poll_spin_start(p);
	nbd_poll_spin_end(p);
}

START_TEST(stops_after_empty_windows)
{
	struct nbd_poll_state p = {0};
	unsigned int i;

	ck_assert(may(&p));
	for (i = 0; i < NBD_POLL_MAX_EMPTY - 1; i++) {
		empty_window(&p);
		ck_assert(may(&p));
	}
	empty_window(&p);
	ck_assert(!may(&p));
}
END_TEST

START_TEST(found_work_resets)
{
	struct nbd_poll_state p = {0};
	unsigned int i, n;

	/* Empty windows with fruitful ones between never add up. */
	for (n = 0; n < 10; n++) {
		for (i = 0; i < NBD_POLL_MAX_EMPTY - 1; i++)
			empty_window(&p);
		nbd_poll_spin_start(&p);
		nbd_poll_spin_found(&p);
		nbd_poll_spin_end(&p);
		ck_assert(may(&p));
	}
}
END_TEST

START_TEST(load_restarts)
{
	struct nbd_poll_state p = {0};
	unsigned int i;

	for (i = 0; i < NBD_POLL_MAX_EMPTY; i++)
		empty_window(&p);
	ck_assert(!may(&p));
	/* Idle: a wake-up long after the loop slept does not restart it. */
	nbd_poll_woken(&p, 10 * WIN, WIN);
	ck_assert(!may(&p));
	/* Under load: one inside a window would have been caught spinning. */
	nbd_poll_woken(&p, WIN / 2, WIN);
	ck_assert(may(&p));
}
END_TEST

START_TEST(never_when_cpu_wanted)
{
	struct nbd_poll_state p = {0};

	/* Running threads (this one too) up to the CPUs: spin. */
	ck_assert(nbd_poll_may_spin(&p, 2, 2, 2, false, false));
	/* One more running or runnable thread would wait for a CPU. */
	ck_assert(!nbd_poll_may_spin(&p, 3, 2, 2, false, false));
	ck_assert(!nbd_poll_may_spin(&p, 5, 4, 1, false, false));
	/* Unknown (0): the other rules decide. */
	ck_assert(nbd_poll_may_spin(&p, 0, 2, 2, false, false));
}
END_TEST

START_TEST(never_with_more_loops_than_cpus)
{
	struct nbd_poll_state p = {0};

	ck_assert(nbd_poll_may_spin(&p, 1, 4, 4, false, false));
	ck_assert(!nbd_poll_may_spin(&p, 1, 4, 5, false, false));
	ck_assert(!nbd_poll_may_spin(&p, 0, 1, 2, false, false));
}
END_TEST

/*
 * Requests waiting for another thread of ours (a device's completion
 * thread): that thread counts as running, since spinning would keep it
 * from the CPU it needs to bring the loop its work.
 */
START_TEST(never_when_awaited_thread_wants_cpu)
{
	struct nbd_poll_state p = {0};

	/* The loop and a client on 2 CPUs: no CPU left for the device's. */
	ck_assert(nbd_poll_may_spin(&p, 2, 2, 2, false, false));
	ck_assert(!nbd_poll_may_spin(&p, 2, 2, 2, true, false));
	/* The loop alone: the device's thread has the other CPU. */
	ck_assert(nbd_poll_may_spin(&p, 1, 2, 2, true, false));
	ck_assert(nbd_poll_may_spin(&p, 3, 4, 2, true, false));
	/* Unknown (0): the other rules decide. */
	ck_assert(nbd_poll_may_spin(&p, 0, 2, 2, true, false));
}
END_TEST

/*
 * A request moving a large payload (a 1 MiB read or write): its copies
 * dwarf the wake-up a spin saves, and its input arrives in pieces that
 * would keep a spin busy forever.  No spinning, whatever else holds.
 */
START_TEST(never_while_moving_large_payloads)
{
	struct nbd_poll_state p = {0};

	ck_assert(nbd_poll_may_spin(&p, 1, 2, 2, false, false));
	ck_assert(!nbd_poll_may_spin(&p, 1, 2, 2, false, true));
	ck_assert(!nbd_poll_may_spin(&p, 0, 64, 1, false, true));
}
END_TEST

/* A stand-in for /proc/loadavg that counts how often it is read. */
struct running_probe {
	unsigned int value;
	unsigned int reads;
};

static unsigned int probe_read(void *arg)
{
	struct running_probe *r = arg;

	r->reads++;
	return r->value;
}

/*
 * The running count is read only when it can change the answer: not
 * while a large payload moves, not once the empty windows are used up,
 * not with more loops than CPUs.  When it is read, it still decides.
 */
START_TEST(load_read_only_when_it_decides)
{
	struct nbd_poll_state p = {0};
	struct running_probe r = {.value = 1};

	ck_assert(!nbd_poll_decide(&p, probe_read, &r, 2, 2, false, true));
	ck_assert(!nbd_poll_decide(&p, probe_read, &r, 1, 2, false, false));
	ck_assert_uint_eq(r.reads, 0);

	ck_assert(nbd_poll_decide(&p, probe_read, &r, 2, 2, false, false));
	ck_assert_uint_eq(r.reads, 1);
	r.value = 3; /* a hog beside us and the client */
	ck_assert(!nbd_poll_decide(&p, probe_read, &r, 2, 2, false, false));
	ck_assert_uint_eq(r.reads, 2);

	r.value = 1;
	p.empty = NBD_POLL_MAX_EMPTY;
	ck_assert(!nbd_poll_decide(&p, probe_read, &r, 2, 2, false, false));
	ck_assert_uint_eq(r.reads, 2);
}
END_TEST

START_TEST(parse_loadavg)
{
	ck_assert_uint_eq(
		nbd_poll_parse_loadavg("0.52 0.58 0.59 3/467 12345\n"), 3);
	ck_assert_uint_eq(nbd_poll_parse_loadavg("10.1 7.2 5.0 12/80 1\n"), 12);
	ck_assert_uint_eq(nbd_poll_parse_loadavg(""), 0);
	ck_assert_uint_eq(nbd_poll_parse_loadavg("1 2 3 x/4 5"), 0);
	ck_assert_uint_eq(nbd_poll_parse_loadavg("1 2 3"), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("adaptive_poll");
	TCase *tc = tcase_create("adaptive_poll");

	tcase_add_test(tc, stops_after_empty_windows);
	tcase_add_test(tc, found_work_resets);
	tcase_add_test(tc, load_restarts);
	tcase_add_test(tc, never_when_cpu_wanted);
	tcase_add_test(tc, never_with_more_loops_than_cpus);
	tcase_add_test(tc, never_when_awaited_thread_wants_cpu);
	tcase_add_test(tc, never_while_moving_large_payloads);
	tcase_add_test(tc, load_read_only_when_it_decides);
	tcase_add_test(tc, parse_loadavg);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
