/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every scheduler's tunables read numbers in one syntax (mq_attr_number,
 * the kernel's kstrto*): the same text is accepted, with the same value,
 * or refused, with the same errno, by mq-deadline, bfq and kyber.  Only
 * the sign differs, by type as in Linux: mq-deadline's tunables are ints
 * (kstrtoint takes "-7" and the store clamps it), bfq's and kyber's
 * unsigned (kstrtoul refuses it); test_attr_number covers that.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/mq/elevator.h"
#include "server/mq/params.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdev.h"

/* One unsigned tunable of each scheduler, each taking 0..INT_MAX as is. */
static const struct {
	const char *elv, *attr;
} tunables[] = {
	{"mq-deadline", "fifo_batch"},
	{"kyber", "read_lat_nsec"},
	{"bfq", "back_seek_max"},
};

#define NR_TUNABLES (sizeof(tunables) / sizeof(tunables[0]))

static const struct elv_fs_entry *attr_of(struct mq_queue *q, const char *name)
{
	const struct elv_fs_entry *a;

	for (a = q->elevator->type->elevator_attrs; a && a->name; a++)
		if (!strcmp(a->name, name))
			return a;
	ck_abort_msg("no tunable %s", name);
	return NULL;
}

/* Store text; on success read the value back as a number. */
static int store(struct tdev *d, const char *attr, const char *text,
		 unsigned long long *val)
{
	const struct elv_fs_entry *a = attr_of(d->q, attr);
	char buf[64];
	int err = a->store(d->q->elevator, text);

	if (err)
		return err;
	ck_assert_int_gt(a->show(d->q->elevator, buf, sizeof(buf)), 0);
	*val = strtoull(buf, NULL, 10);
	return 0;
}

static const struct {
	const char *text;
	int err;
	unsigned long long val;
} cases[] = {
	{"7", 0, 7},
	{"+7", 0, 7},
	{"7\n", 0, 7},
	{"0", 0, 0},
	{"0x1f", 0, 31},
	{"0X1F\n", 0, 31},
	{"017", 0, 15},
	{"+0x10", 0, 16},
	{"2147483647", 0, 2147483647},
	{"", EINVAL, 0},
	{"\n", EINVAL, 0},
	{" 7", EINVAL, 0},
	{"7 ", EINVAL, 0},
	{"\t7", EINVAL, 0},
	{"7\n\n", EINVAL, 0},
	{"7\r\n", EINVAL, 0},
	{"7x", EINVAL, 0},
	{"0x", EINVAL, 0},
	{"0xg", EINVAL, 0},
	{"08", EINVAL, 0},
	{"+", EINVAL, 0},
	{"-", EINVAL, 0},
	{"++7", EINVAL, 0},
	{"1.5", EINVAL, 0},
	{"1e3", EINVAL, 0},
	{"7ms", EINVAL, 0},
	{"abc", EINVAL, 0},
	{"99999999999999999999999", ERANGE, 0},
	{"0x10000000000000000", ERANGE, 0},
};

START_TEST(test_same_syntax)
{
	struct tdev *d[NR_TUNABLES];
	unsigned int i, t, n = 0;

	for (t = 0; t < NR_TUNABLES; t++) {
		const struct elevator_type *et = elevator_find(tunables[t].elv);

		if (!et) /* bfq may be left out of the build */
			continue;
		d[n] = tdev_new(1, 8, 0, 0, tdev_complete);
		ck_assert_int_eq(elevator_switch(d[n]->q, et), 0);
		n++;
	}
	ck_assert_uint_ge(n, 2);

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (t = 0; t < n; t++) {
			unsigned long long v = ~0ull;
			int err = store(d[t], tunables[t].attr, cases[i].text,
					&v);

			ck_assert_msg(err == cases[i].err,
				      "%s %s '%s': errno %d, want %d",
				      tunables[t].elv, tunables[t].attr,
				      cases[i].text, err, cases[i].err);
			if (!err)
				ck_assert_msg(
					v == cases[i].val,
					"%s '%s' reads back %llu, want %llu",
					tunables[t].elv, cases[i].text, v,
					cases[i].val);
		}
	for (t = 0; t < n; t++)
		tdev_free(d[t]);
}
END_TEST

/* The parser itself: ranges and signs. */
START_TEST(test_attr_number)
{
	int64_t v = 42;

	ck_assert_int_eq(mq_attr_number("-7", -10, 10, &v), 0);
	ck_assert_int_eq(v, -7);
	ck_assert_int_eq(mq_attr_number("-0x10\n", INT64_MIN, 0, &v), 0);
	ck_assert_int_eq(v, -16);
	ck_assert_int_eq(mq_attr_number("-9223372036854775808", INT64_MIN,
					INT64_MAX, &v),
			 0);
	ck_assert(v == INT64_MIN);
	ck_assert_int_eq(
		mq_attr_number("9223372036854775808", INT64_MIN, INT64_MAX, &v),
		ERANGE);
	ck_assert_int_eq(mq_attr_number("11", -10, 10, &v), ERANGE);
	ck_assert_int_eq(mq_attr_number("-11", -10, 10, &v), ERANGE);
	/* A '-' belongs to signed tunables alone, as kstrtoul refuses it. */
	ck_assert_int_eq(mq_attr_number("-1", 0, 10, &v), EINVAL);
	ck_assert_int_eq(mq_attr_number(NULL, 0, 10, &v), EINVAL);
	/* Nothing is written on failure. */
	v = 42;
	ck_assert_int_eq(mq_attr_number("4x", 0, 10, &v), EINVAL);
	ck_assert_int_eq(v, 42);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("attr_syntax");
	TCase *tc = tcase_create("attr_syntax");

	tcase_add_test(tc, test_same_syntax);
	tcase_add_test(tc, test_attr_number);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
