// SPDX-License-Identifier: GPL-2.0
/*
 * The rbd device and store without a cluster: what is refused before
 * librados is asked anything, and what librados's own refusals become.
 * The cluster tests are tests/integration/test-rbd*.sh.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/device.h"
#include "backends/media/media.h"
#include "tests/unit/helpers/tcheck.h"

static void store_bad(const char *spec, const char *want)
{
	struct media_open_args a = {
		.block_size = 512, .key = "media", .name = "t0"};
	struct media *m = (struct media *)1;
	struct mq_err e = {{0}};

	ck_assert_int_eq(media_open(spec, &a, &m, &e), -1);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(e.msg, want), "%s: \"%s\" lacks \"%s\"", spec,
		      e.msg, want);
}

START_TEST(store_strings)
{
	store_bad("rbd", "media=rbd: give rbd:POOL/IMAGE");
	store_bad("rbd:", "media=rbd: give rbd:POOL/IMAGE");
	store_bad("rbd:img", "media=rbd:img: give rbd:POOL/IMAGE[@SNAP]");
	store_bad("rbd:/img", "give rbd:POOL/IMAGE[@SNAP]");
	store_bad("rbd:pool/", "give rbd:POOL/IMAGE[@SNAP]");
	store_bad("rbd:pool/@s", "give rbd:POOL/IMAGE[@SNAP]");
	store_bad("rbd:pool/img@", "give rbd:POOL/IMAGE[@SNAP]");
}
END_TEST

/* mq_device_create's one-line refusal for the keys kv. */
static void device_bad(const char *const *kv, const char *want)
{
	struct mq_params *p = mq_params_new();
	struct mq_device *dev = (void *)1;
	struct mq_err e = {{0}};

	ck_assert_ptr_nonnull(p);
	for (; *kv; kv++)
		ck_assert_msg(mq_params_set_kv(p, *kv, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(mq_device_create(p, 2, &dev, &e), -1);
	ck_assert_ptr_null(dev);
	mq_params_free(p);
	ck_assert_msg(strstr(e.msg, want), "\"%s\" lacks \"%s\"", e.msg, want);
	ck_assert_msg(!strchr(e.msg, '\n'), "not one line: %s", e.msg);
}

START_TEST(device_keys)
{
	static const char *const noimage[] = {"device=rbd", NULL};
	static const char *const slash[] = {"device=rbd", "image=a/b", NULL};
	static const char *const cache[] = {"device=rbd", "image=a",
					    "cache=maybe", NULL};
	static const char *const snapcreate[] = {"device=rbd", "image=a",
						 "snap=s", "create=1M", NULL};
	static const char *const media[] = {"device=rbd", "image=a",
					    "media=ram", NULL};
	static const char *const noconf[] = {
		"device=rbd", "image=a", "conf=/nonexistent/ceph.conf", NULL};
	static const char *const timeout[] = {"device=rbd", "image=a",
					      "connect_timeout=0", NULL};

	device_bad(noimage, "rbd: image=NAME is required");
	device_bad(slash, "names without '/' or '@'");
	device_bad(cache, "rbd: cache=maybe: must be on or off");
	device_bad(snapcreate, "create= and snap= exclude each other");
	device_bad(media, "media= is not taken: it is the rbd store itself");
	device_bad(noconf, "rbd: conf=/nonexistent/ceph.conf: ");
	device_bad(timeout, "connect_timeout=0");
}
END_TEST

/* A monitor nobody answers at: the line names it, within the timeout. */
START_TEST(unreachable_monitor)
{
	char conf[] = "/tmp/test_rbd.XXXXXX", kv[64];
	const char *keys[] = {"device=rbd",	   "image=a",		kv,
			      "connect_timeout=1", "keyring=/dev/null", NULL};
	FILE *f;
	int fd = mkstemp(conf);

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	/* Port 9 (discard) on loopback: refused or silent, never Ceph. */
	fprintf(f, "[global]\nmon host = [v1:127.0.0.1:9]\n"
		   "auth client required = none\n");
	fclose(f);
	snprintf(kv, sizeof(kv), "conf=%s", conf);
	device_bad(keys,
		   "rbd: cannot reach the Ceph monitors at [v1:127.0.0.1:9] "
		   "within connect_timeout=1 s");
	unlink(conf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rbd");
	TCase *tc = tcase_create("rbd");

	tcase_add_test(tc, store_strings);
	tcase_add_test(tc, device_keys);
	tcase_add_test(tc, unreachable_monitor);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
