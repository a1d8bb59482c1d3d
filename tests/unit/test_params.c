// SPDX-License-Identifier: GPL-2.0
/* Device parameters: sizes, bools, ranges, and the errors users see. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "backends/device.h"
#include "tests/unit/helpers/tcheck.h"

static uint64_t size_of(const char *s)
{
	uint64_t v = 12345;

	ck_assert_msg(mq_parse_size(s, &v) == 0, "'%s' refused", s);
	return v;
}

static bool size_refused(const char *s)
{
	uint64_t v = 12345;

	return mq_parse_size(s, &v) == -1 && v == 12345;
}

START_TEST(parse_size_suffixes)
{
	ck_assert_uint_eq(size_of("0"), 0);
	ck_assert_uint_eq(size_of("512"), 512);
	ck_assert_uint_eq(size_of("512B"), 512);
	ck_assert_uint_eq(size_of("4k"), 4096);
	ck_assert_uint_eq(size_of("4K"), 4096);
	ck_assert_uint_eq(size_of("4KB"), 4096);
	ck_assert_uint_eq(size_of("4KiB"), 4096);
	ck_assert_uint_eq(size_of("4kib"), 4096);
	ck_assert_uint_eq(size_of("3M"), 3ull << 20);
	ck_assert_uint_eq(size_of("1G"), 1ull << 30);
	ck_assert_uint_eq(size_of("2gb"), 2ull << 30);
	ck_assert_uint_eq(size_of("1T"), 1ull << 40);
	ck_assert_uint_eq(size_of("1P"), 1ull << 50);
	ck_assert_uint_eq(size_of("8E"), 8ull << 60);
	ck_assert_uint_eq(size_of("15E"), 15ull << 60);
	ck_assert_uint_eq(size_of("18446744073709551615"), UINT64_MAX);
}
END_TEST

START_TEST(parse_size_errors)
{
	static const char *const bad[] = {
		"",
		"abc",
		"-1",
		"+1",
		" 1",
		"1 ",
		"1X",
		"1.5G",
		"1iB",
		"1KiBB",
		"1Ki",
		"1KBB",
		"G",
		"0x10",
		"16E",
		"16777216T",
		"18446744073709551616",
		"99999999999999999999",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(size_refused(bad[i]), "'%s' accepted", bad[i]);
}
END_TEST

static struct mq_params *params(const char *const *kv)
{
	struct mq_params *p = mq_params_new();
	struct mq_err e = {""};

	ck_assert_ptr_nonnull(p);
	for (; *kv; kv++)
		ck_assert_msg(mq_params_set_kv(p, *kv, &e) == 0, "%s", e.msg);
	return p;
}

START_TEST(getters)
{
	static const char *const kv[] = {"bs=4096",  "n=7",    "big=8E",
					 "flag=On",  "off=no", "d=0.25",
					 "name=x=y", NULL};
	struct mq_params *p = params(kv);
	struct mq_err e = {""};
	const char *s;
	unsigned int u;
	uint64_t v;
	double d;
	bool b;

	ck_assert_int_eq(mq_param_uint(p, "bs", 512, 512, 4096, &u, &e), 0);
	ck_assert_uint_eq(u, 4096);
	ck_assert_int_eq(mq_param_u64(p, "n", 1, 0, 10, &v, &e), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(mq_param_size(p, "big", 0, &v, &e), 0);
	ck_assert_uint_eq(v, 8ull << 60);
	ck_assert_int_eq(mq_param_bool(p, "flag", false, &b, &e), 0);
	ck_assert(b);
	ck_assert_int_eq(mq_param_bool(p, "off", true, &b, &e), 0);
	ck_assert(!b);
	ck_assert_int_eq(mq_param_double(p, "d", 1, 0, 1, &d, &e), 0);
	ck_assert_double_eq(d, 0.25);
	ck_assert_int_eq(mq_param_str(p, "name", NULL, &s, &e), 0);
	ck_assert_str_eq(s, "x=y");

	/* Absent keys give the default. */
	ck_assert_int_eq(mq_param_uint(p, "absent", 9, 0, 10, &u, &e), 0);
	ck_assert_uint_eq(u, 9);
	ck_assert_int_eq(mq_param_str(p, "absent", NULL, &s, &e), 0);
	ck_assert_ptr_null(s);
	ck_assert_ptr_null(mq_params_first_unused(p));
	mq_params_free(p);
}
END_TEST

START_TEST(bools)
{
	static const char *const yes[] = {"1", "true", "YES", "on"};
	static const char *const no[] = {"0", "False", "no", "OFF"};
	struct mq_params *p = mq_params_new();
	struct mq_err e = {""};
	size_t i;
	bool b;

	for (i = 0; i < 4; i++) {
		mq_params_set(p, "k", yes[i], &e);
		ck_assert_int_eq(mq_param_bool(p, "k", false, &b, &e), 0);
		ck_assert_msg(b, "%s", yes[i]);
		mq_params_set(p, "k", no[i], &e);
		ck_assert_int_eq(mq_param_bool(p, "k", true, &b, &e), 0);
		ck_assert_msg(!b, "%s", no[i]);
	}
	mq_params_set(p, "k", "2", &e);
	ck_assert_int_eq(mq_param_bool(p, "k", true, &b, &e), -1);
	ck_assert_str_eq(e.msg, "k=2: must be one of 1, 0, true, false, yes, "
				"no, on, off");
	mq_params_free(p);
}
END_TEST

START_TEST(range_errors)
{
	static const char *const kv[] = {
		"bs=5000", "n=12x", "huge=99999999999999999999",
		"size=1Q", "t=-1",  "u=abc",
		NULL};
	struct mq_params *p = params(kv);
	struct mq_err e = {""};
	unsigned int u = 77;
	uint64_t v;
	double d;

	ck_assert_int_eq(mq_param_uint(p, "bs", 512, 512, 4096, &u, &e), -1);
	ck_assert_str_eq(e.msg, "bs=5000: must be an integer from 512 to 4096");
	ck_assert_uint_eq(u, 77);
	ck_assert_int_eq(mq_param_uint(p, "n", 1, 0, 100, &u, &e), -1);
	ck_assert_str_eq(e.msg, "n=12x: must be an integer from 0 to 100");
	ck_assert_int_eq(mq_param_u64(p, "huge", 1, 0, UINT64_MAX, &v, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "huge=99999999999999999999: "));
	ck_assert_int_eq(mq_param_size(p, "size", 0, &v, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "size=1Q: must be a size"));
	ck_assert_int_eq(mq_param_double(p, "t", 1, 0, 1e300 * 1e300, &d, &e),
			 -1);
	ck_assert_str_eq(e.msg, "t=-1: must be a number >= 0");
	ck_assert_int_eq(mq_param_double(p, "u", 1, 0, 2, &d, &e), -1);
	ck_assert_str_eq(e.msg, "u=abc: must be a number from 0 to 2");
	mq_params_free(p);
}
END_TEST

START_TEST(set_and_unused)
{
	struct mq_params *p = mq_params_new();
	struct mq_err e = {""};
	unsigned int u;

	ck_assert_int_eq(mq_params_set_kv(p, "noequals", &e), -1);
	ck_assert_str_eq(e.msg, "'noequals': expected KEY=VALUE");
	ck_assert_int_eq(mq_params_set_kv(p, "=v", &e), -1);
	ck_assert_int_eq(mq_params_set_kv(p, "a=1", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "b=2", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "c=3", &e), 0);
	ck_assert(mq_params_has(p, "b"));
	ck_assert(!mq_params_has(p, "d"));
	/* Unused keys come back in insertion order. */
	ck_assert_str_eq(mq_params_first_unused(p), "a");
	mq_param_uint(p, "a", 0, 0, 9, &u, &e);
	ck_assert_str_eq(mq_params_first_unused(p), "b");
	/* A later value replaces the earlier one and is unread again. */
	mq_params_set_kv(p, "a=5", &e);
	ck_assert_str_eq(mq_params_first_unused(p), "a");
	mq_param_uint(p, "a", 0, 0, 9, &u, &e);
	ck_assert_uint_eq(u, 5);
	mq_param_uint(p, "b", 0, 0, 9, &u, &e);
	ck_assert_str_eq(mq_params_first_unused(p), "c");
	mq_param_uint(p, "c", 0, 0, 9, &u, &e);
	ck_assert_ptr_null(mq_params_first_unused(p));
	mq_params_free(p);
}
END_TEST

/* mq_device_create's one-line refusal for kv. */
static const char *create_error(const char *const *kv)
{
	static struct mq_err e;
	struct mq_params *p = params(kv);
	struct mq_device *dev = (void *)1;

	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(mq_device_create(p, 2, &dev, &e), -1);
	ck_assert_ptr_null(dev);
	mq_params_free(p);
	return e.msg;
}

START_TEST(device_errors)
{
	static const char *const none[] = {"size=1M", NULL};
	static const char *const unknown[] = {"device=floppy", NULL};
	static const char *const badkey[] = {"device=ram", "size=1M",
					     "colour=blue", NULL};
	static const char *const badscale[] = {"device=ram", "time_scale=-2",
					       NULL};
	static const char *const badtimeout[] = {"device=ram", "io_timeout=0",
						 NULL};
	static const char *const badsize[] = {"device=ram", "size=1000", NULL};
	static const char *const filekey[] = {"device=file", "file=/dev/null",
					      "bogus=1", NULL};
	char names[128];

	mq_driver_names(names, sizeof(names));
	ck_assert_str_eq(
		names,
		"null, ram, file, nbd, rbd, ide, ide-disk, ide-cd, mspro, gdrom, mtdblock, mtdblock_ro, ftl, sunvdc, sx8, smr, scsi, sata-ssd");
	ck_assert_str_eq(
		create_error(none),
		"device=NAME is required (known: null, ram, file, nbd, rbd, ide, ide-disk, ide-cd, mspro, gdrom, mtdblock, mtdblock_ro, ftl, sunvdc, sx8, smr, scsi, sata-ssd)");
	ck_assert_str_eq(
		create_error(unknown),
		"unknown device 'floppy' (known: null, ram, file, nbd, rbd, ide, ide-disk, ide-cd, mspro, gdrom, mtdblock, mtdblock_ro, ftl, sunvdc, sx8, smr, scsi, sata-ssd)");
	ck_assert_str_eq(
		create_error(badkey),
		"ram: unknown key 'colour' (accepted: size, "
		"time_scale, io_timeout, scheduler, rules, iosched.*, log_writes, bs)");
	ck_assert_str_eq(create_error(badscale),
			 "ram: time_scale=-2: must be a number >= 0");
	ck_assert_str_eq(create_error(badtimeout),
			 "ram: io_timeout=0: must be an integer from 1 to "
			 "3600000");
	ck_assert_str_eq(create_error(badsize),
			 "ram: size=1000: must be a non-zero multiple of "
			 "bs=512");
	/* /dev/null is a character device; the key check comes later. */
	ck_assert_str_eq(create_error(filekey),
			 "file: file=/dev/null: not a regular file or block "
			 "device");
}
END_TEST

START_TEST(device_ok)
{
	static const char *const kv[] = {"device=ram", "size=4M",
					 "time_scale=0", "io_timeout=500",
					 NULL};
	struct mq_params *p = params(kv);
	struct mq_err e = {""};
	struct mq_device *dev = NULL;

	ck_assert_msg(mq_device_create(p, 3, &dev, &e) == 0, "%s", e.msg);
	ck_assert_ptr_eq(dev->driver, mq_driver_find("ram"));
	ck_assert_double_eq(dev->time_scale, 0);
	ck_assert_uint_eq(dev->io_timeout_ms, 500);
	ck_assert_uint_eq(dev->nr_ctx, 3);
	ck_assert_uint_eq(dev->nr_disks, 1);
	ck_assert_ptr_eq(mq_device_find_disk(dev, "ram0"), dev->disks[0]);
	ck_assert_ptr_null(mq_device_find_disk(dev, "ram1"));
	ck_assert_uint_eq(get_capacity(dev->disks[0]), 8192);
	ck_assert_int_eq(mq_device_sync(dev), 0);
	mq_device_destroy(dev);
	mq_params_free(p);
}
END_TEST

/* Prefixed keys: joined whole, or empty, never cut into another key. */
START_TEST(prefixed_keys)
{
	struct mq_params *p = mq_params_new();
	struct mq_err e = {{0}};
	const char *v = NULL;
	char k[8];

	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(mq_param_key(k, sizeof(k), "hdb.", "rpm"), "hdb.rpm");
	ck_assert_ptr_eq(mq_param_key(k, sizeof(k), "", "speed"), k);
	ck_assert_str_eq(k, "speed");
	/* "hdb.model" does not fit: not "hdb.mod", a key someone may set */
	ck_assert_int_eq(mq_params_set_kv(p, "hdb.mod=x", &e), 0);
	ck_assert_str_eq(mq_param_key(k, sizeof(k), "hdb.", "model"), "");
	ck_assert_int_eq(mq_param_str(p, k, "def", &v, &e), 0);
	ck_assert_str_eq(v, "def");
	mq_params_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("params");
	TCase *tc = tcase_create("params");

	tcase_add_test(tc, parse_size_suffixes);
	tcase_add_test(tc, parse_size_errors);
	tcase_add_test(tc, getters);
	tcase_add_test(tc, bools);
	tcase_add_test(tc, range_errors);
	tcase_add_test(tc, set_and_unused);
	tcase_add_test(tc, device_errors);
	tcase_add_test(tc, device_ok);
	tcase_add_test(tc, prefixed_keys);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
