// SPDX-License-Identifier: GPL-2.0
/* Fault injection: lib/fault-inject.c semantics and the attribute syntax. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backends/common/fault_inject.h"
#include "tests/unit/helpers/tcheck.h"

static void setup(struct fault_attr *attr, const char *str)
{
	struct mq_err e = {""};

	fault_attr_init(attr);
	ck_assert_msg(fault_attr_parse(attr, str, &e) == 0, "%s: %s", str,
		      e.msg);
}

/* How many of n calls of size bytes fail. */
static unsigned int failures(struct fault_attr *attr, unsigned int n,
			     uint64_t size)
{
	unsigned int i, f = 0;

	for (i = 0; i < n; i++)
		f += should_fail(attr, size);
	return f;
}

START_TEST(parse)
{
	static const char *const good[] = {"1,100,0,1", "0,0,0,0",
					   "10,50,4096,-1", "3,100,0,9999"};
	static const char *const bad[] = {
		"",	      "1,100,0",    "1,100,0,1,5", "1,101,0,1",
		"a,1,0,1",    "1,100,0,-2", "-1,100,0,1",  "1,100,-1,1",
		"1, 100,0,1", "1,100,0,1x", "1,,0,1",
	};
	struct fault_attr attr;
	struct mq_err e = {""};
	size_t i;

	fault_attr_init(&attr);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(fault_attr_parse(&attr, good[i], &e) == 0,
			      "'%s' refused: %s", good[i], e.msg);
	ck_assert_uint_eq(attr.interval, 3);
	ck_assert_uint_eq(attr.probability, 100);
	ck_assert_int_eq(attr.times, 9999);
	ck_assert(attr.enabled);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.msg[0] = '\0';
		ck_assert_msg(fault_attr_parse(&attr, bad[i], &e) == -1,
			      "'%s' accepted", bad[i]);
		ck_assert_str_eq(e.msg,
				 "must be interval,probability,space,times "
				 "(integers; probability 0 to 100; times -1 "
				 "for no limit)");
	}
	fault_attr_destroy(&attr);
}
END_TEST

START_TEST(disabled_by_default)
{
	struct fault_attr attr;

	fault_attr_init(&attr);
	ck_assert_uint_eq(failures(&attr, 100, 1), 0);
	fault_attr_destroy(&attr);
}
END_TEST

START_TEST(times)
{
	struct fault_attr attr;

	/* times=0: never, even at 100%. */
	setup(&attr, "1,100,0,0");
	ck_assert_uint_eq(failures(&attr, 100, 1), 0);
	fault_attr_destroy(&attr);

	/* times=3: the first three calls fail, then none. */
	setup(&attr, "1,100,0,3");
	ck_assert(should_fail(&attr, 1));
	ck_assert(should_fail(&attr, 1));
	ck_assert(should_fail(&attr, 1));
	ck_assert_int_eq(attr.times, 0);
	ck_assert_uint_eq(failures(&attr, 100, 1), 0);
	fault_attr_destroy(&attr);

	/* times=-1: no limit. */
	setup(&attr, "1,100,0,-1");
	ck_assert_uint_eq(failures(&attr, 1000, 1), 1000);
	ck_assert_int_eq(attr.times, -1);
	fault_attr_destroy(&attr);
}
END_TEST

START_TEST(probability_zero)
{
	struct fault_attr attr;

	setup(&attr, "1,0,0,-1");
	ck_assert_uint_eq(failures(&attr, 1000, 1), 0);
	fault_attr_destroy(&attr);
}
END_TEST

START_TEST(interval)
{
	struct fault_attr attr;
	unsigned int i;

	/* Every third call fails. */
	setup(&attr, "3,100,0,-1");
	for (i = 1; i <= 30; i++)
		ck_assert_msg(should_fail(&attr, 1) == (i % 3 == 0), "call %u",
			      i);
	fault_attr_destroy(&attr);

	/* interval 0 and 1 both mean every call. */
	setup(&attr, "0,100,0,-1");
	ck_assert_uint_eq(failures(&attr, 10, 1), 10);
	fault_attr_destroy(&attr);
}
END_TEST

START_TEST(space)
{
	struct fault_attr attr;

	/* 10 bytes pass: 4 (6 left), 4 (2 left), then 4 > 2 fails. */
	setup(&attr, "1,100,10,-1");
	ck_assert(!should_fail(&attr, 4));
	ck_assert(!should_fail(&attr, 4));
	ck_assert(should_fail(&attr, 4));
	ck_assert(should_fail(&attr, 4));
	fault_attr_destroy(&attr);

	/* A call of exactly the remaining space fails (space > size). */
	setup(&attr, "1,100,8,-1");
	ck_assert(should_fail(&attr, 8));
	fault_attr_destroy(&attr);
}
END_TEST

START_TEST(probability)
{
	struct fault_attr attr;
	unsigned int f;

	setup(&attr, "1,50,0,-1");
	attr.rand_state = 42; /* reproducible */
	f = failures(&attr, 10000, 1);
	ck_assert_uint_gt(f, 4500);
	ck_assert_uint_lt(f, 5500);
	fault_attr_destroy(&attr);

	setup(&attr, "1,5,0,-1");
	attr.rand_state = 7;
	f = failures(&attr, 10000, 1);
	ck_assert_uint_gt(f, 300);
	ck_assert_uint_lt(f, 700);
	fault_attr_destroy(&attr);
}
END_TEST

struct rearm_race {
	struct fault_attr attr;
	atomic_bool armed; /* the worker has seen a failure */
	atomic_bool stop;
};

static void *call_until_stopped(void *arg)
{
	struct rearm_race *r = arg;

	while (!atomic_load(&r->stop))
		if (should_fail(&r->attr, 1))
			atomic_store(&r->armed, true);
	return NULL;
}

/*
 * The control plane re-arms a fault while requests check it: a data race
 * unless the unlocked check of "enabled" is atomic (ThreadSanitizer, which
 * CI runs the unit suites under, reports it otherwise).
 */
START_TEST(rearm_while_checked)
{
	struct rearm_race r = {0};
	struct mq_err e = {""};
	pthread_t t;
	int i;

	fault_attr_init(&r.attr);
	ck_assert_int_eq(pthread_create(&t, NULL, call_until_stopped, &r), 0);
	for (i = 0; i < 200; i++) {
		ck_assert_int_eq(fault_attr_parse(&r.attr, "1,100,0,1", &e), 0);
		sched_yield();
	}
	/* Armed with no limit: the worker's very next call fails. */
	ck_assert_int_eq(fault_attr_parse(&r.attr, "1,100,0,-1", &e), 0);
	while (!atomic_load(&r.armed))
		sched_yield();
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	fault_attr_destroy(&r.attr);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fault_inject");
	TCase *tc = tcase_create("fault_inject");

	tcase_add_test(tc, parse);
	tcase_add_test(tc, disabled_by_default);
	tcase_add_test(tc, times);
	tcase_add_test(tc, probability_zero);
	tcase_add_test(tc, interval);
	tcase_add_test(tc, space);
	tcase_add_test(tc, probability);
	tcase_add_test(tc, rearm_while_checked);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
