/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The default scheduler policy (docs/design.md, "Default scheduler
 * policy"), row by row, with the scheduler=, rules= and iosched.* keys,
 * their refusals, and the udev-style rules files under tests/rules.
 * Devices are made through mq_device_create; zoned and oddly named disks
 * (mmcblk0, sda, nvme0n1) come from a small test driver here, since no
 * device model offers them.
 *
 * The schedulers built in vary (bfq has a CMake switch, and each is its
 * own file): expectations follow elevator_find, and every case is written
 * for all of none, mq-deadline, bfq and kyber.
 */
#include <check.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/bdev.h"
#include "backends/device.h"
#include "server/mq/elevator.h"
#include "scheduler/kyber.h"
#include "scheduler/policy.h"
#include "scheduler/rules.h"
#include "server/mq/log.h"
#include "helpers/tdev.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tlog.h"

/* --- what is built ---------------------------------------------------- */

static bool built(const char *name)
{
	return elevator_find(name) != NULL;
}

/* Row 5: bfq if built, otherwise mq-deadline, otherwise none. */
static const char *row5_default(void)
{
	if (built("bfq"))
		return "bfq";
	if (built("mq-deadline"))
		return "mq-deadline";
	return "none";
}

/* --- devices through the device layer --------------------------------- */

static int create(struct mq_device **devp, struct mq_err *e, ...)
{
	va_list ap;
	int ret;

	tlog_clear();
	va_start(ap, e);
	ret = tdevice_vcreate(devp, e, NULL, ap);
	va_end(ap);
	return ret;
}

#define DEV_NEW(...)                                                           \
	({                                                                     \
		struct mq_device *__d;                                         \
		struct mq_err __e = {{0}};                                     \
		if (create(&__d, &__e, __VA_ARGS__, NULL))                     \
			ck_abort_msg("create failed: %s", __e.msg);            \
		__d;                                                           \
	})

/* The error line of a create that must fail. */
#define DEV_ERR(buf, ...)                                                      \
	do {                                                                   \
		struct mq_device *__d = NULL;                                  \
		struct mq_err __e = {{0}};                                     \
		ck_assert_int_eq(create(&__d, &__e, __VA_ARGS__, NULL), -1);   \
		ck_assert_ptr_null(__d);                                       \
		snprintf(buf, sizeof(buf), "%s", __e.msg);                     \
	} while (0)

static struct mq_queue *dev_queue(struct mq_device *d)
{
	ck_assert_uint_ge(d->nr_disks, 1);
	return d->disks[0]->queue;
}

static void assert_sched(struct mq_queue *q, const char *name,
			 const char *reason)
{
	ck_assert_str_eq(mq_elevator_name(q), name);
	ck_assert_str_eq(q->sched_reason, reason);
}

/* The path of a file under tests/rules, from this source's path. */
static const char *rules_file(const char *name)
{
	static char path[PATH_MAX];
	char src[PATH_MAX];

	snprintf(src, sizeof(src), "%s", __FILE__);
	snprintf(path, sizeof(path), "%s/../rules/%s", dirname(src), name);
	ck_assert_msg(access(path, R_OK) == 0, "%s: not readable", path);
	return path;
}

/* A rules file written for one test; the caller unlinks it. */
static char *write_rules(const char *text)
{
	char *path = strdup("/tmp/mqblk-rules-XXXXXX");
	FILE *f;
	int fd;

	ck_assert_ptr_nonnull(path);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

static char *kv(const char *key, const char *value)
{
	static char buf[4][PATH_MAX + 32];
	static unsigned int n;
	char *b = buf[n++ % 4];

	snprintf(b, sizeof(buf[0]), "%s=%s", key, value);
	return b;
}

/* --- a test driver for disks no device model offers -------------------- */

struct tdisk {
	struct tdev *d;
	struct gendisk disk;
};

struct tdisk_conf {
	const char *name;
	unsigned int nr_hw;
	unsigned int flags;
	enum blk_zoned_model zoned;
	unsigned int nr_conv_zones;
	bool rotational;
	/* Off unless set: the zoned rows as they were before Linux 6.10. */
	bool zone_write_plugging;
};

static struct tdisk *tdisk_new(const struct tdisk_conf *c)
{
	struct tdisk *t = calloc(1, sizeof(*t));

	ck_assert_ptr_nonnull(t);
	t->d = tdev_new(c->nr_hw ? c->nr_hw : 1, 64, 0, c->flags,
			tdev_complete);
	snprintf(t->disk.disk_name, sizeof(t->disk.disk_name), "%s", c->name);
	t->disk.queue = t->d->q;
	set_capacity(&t->disk, 1 << 21); /* 1 GiB: 4 zones of 256 MiB */
	t->d->q->limits.rotational = c->rotational;
	t->d->q->limits.zoned = c->zoned;
	t->d->q->zone_write_plugging = c->zone_write_plugging;
	if (c->zoned != BLK_ZONED_NONE) {
		t->d->q->limits.chunk_sectors = 1 << 19;
		t->d->q->limits.nr_conv_zones = c->nr_conv_zones;
	}
	return t;
}

static void tdisk_free(struct tdisk *t)
{
	tdev_free(t->d);
	free(t);
}

/* elv_policy_apply on a test disk with "key=value" strings. */
static int tdisk_apply(struct tdisk *t, struct mq_err *e, ...)
{
	struct mq_params *p = mq_params_new();
	const char *s;
	va_list ap;
	int ret;

	ck_assert_ptr_nonnull(p);
	va_start(ap, e);
	while ((s = va_arg(ap, const char *)))
		ck_assert_int_eq(mq_params_set_kv(p, s, e), 0);
	va_end(ap);
	tlog_clear();
	ret = elv_policy_apply(&t->disk, p, e);
	if (!ret)
		ck_assert_ptr_null(mq_params_first_unused(p));
	mq_params_free(p);
	return ret;
}

#define TAPPLY(t, ...)                                                         \
	({                                                                     \
		struct mq_err __e = {{0}};                                     \
		int __r = tdisk_apply(t, &__e, __VA_ARGS__, NULL);             \
		if (__r)                                                       \
			ck_abort_msg("apply failed: %s", __e.msg);             \
	})

/* --- row 1: NO_SCHED ----------------------------------------------------- */

START_TEST(row1_no_sched)
{
	static const char *const names[] = {"mq-deadline", "bfq", "kyber"};
	struct mq_device *d;
	char msg[512], key[64];
	unsigned int i;

	d = DEV_NEW("device=null", "queue_mode=0");
	assert_sched(dev_queue(d), "none", "row 1: NO_SCHED");
	ck_assert(tlog_has("nullb0: scheduler none (row 1: NO_SCHED)"));
	mq_device_destroy(d);

	/* Every scheduler but none is refused, built or not. */
	for (i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "scheduler=%s", names[i]);
		DEV_ERR(msg, "device=null", "queue_mode=0", key);
		ck_assert_msg(strncmp(msg, "null: nullb0: ", 14) == 0, "%s",
			      msg);
		ck_assert_msg(strstr(msg, key), "%s", msg);
		if (built(names[i]))
			ck_assert_msg(
				strstr(msg,
				       "nullb0 takes no I/O scheduler (its tag set has NO_SCHED): only none"),
				"%s", msg);
		else
			ck_assert_msg(strstr(msg, "unknown scheduler"), "%s",
				      msg);
	}
	/* The refusal with every word, kyber being always built here. */
	DEV_ERR(msg, "device=null", "queue_mode=0", "scheduler=kyber");
	ck_assert_str_eq(
		msg,
		"null: nullb0: scheduler=kyber: nullb0 takes no I/O scheduler (its tag set has NO_SCHED): only none");

	d = DEV_NEW("device=null", "queue_mode=0", "scheduler=none");
	assert_sched(dev_queue(d), "none", "scheduler= key");
	mq_device_destroy(d);
}
END_TEST

/* A rule cannot get past row 1 either: udev's write would fail. */
START_TEST(row1_rules_refused)
{
	char *path = write_rules(
		"KERNEL==\"nullb*\", ATTR{queue/scheduler}=\"kyber\"\n");
	struct mq_device *d;

	d = DEV_NEW("device=null", "queue_mode=0", kv("rules", path));
	assert_sched(dev_queue(d), "none", "row 1: NO_SCHED");
	ck_assert(tlog_has(
		":1: ATTR{queue/scheduler}=\"kyber\": nullb0 takes no I/O scheduler (its tag set has NO_SCHED): only none; ignored"));
	mq_device_destroy(d);
	unlink(path);
	free(path);
}
END_TEST

/* ATTR{queue/ioprio_map}= in a rules file sets the export's map. */
START_TEST(rules_ioprio_map)
{
	char *path = write_rules(
		"KERNEL==\"nullb*\", ATTR{queue/ioprio_map}=\"uid:1:2=rt/0\"\n"
		"KERNEL==\"nullb*\", ATTR{queue/ioprio_map}=\"uid:1000=rt/0 "
		"user:batch-*=idle\"\n");
	struct mq_device *d;
	char buf[256];

	d = DEV_NEW("device=null", kv("rules", path));
	ck_assert_int_gt(mq_show_ioprio_map(dev_queue(d), buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "uid:1000=rt/0 user:batch-*=idle");
	mq_device_destroy(d);
	unlink(path);
	free(path);

	/* The last assignment wins; one the queue refuses is logged. */
	path = write_rules("KERNEL==\"nullb*\", "
			   "ATTR{queue/ioprio_map}=\"uid:1000=rt/9\"\n");
	d = DEV_NEW("device=null", kv("rules", path));
	ck_assert_int_eq(mq_show_ioprio_map(dev_queue(d), buf, sizeof(buf)), 0);
	ck_assert(tlog_has(":1: ATTR{queue/ioprio_map}=\"uid:1000=rt/9\": "
			   "invalid; ignored"));
	mq_device_destroy(d);
	unlink(path);
	free(path);
}
END_TEST

/* --- row 2: NO_SCHED_BY_DEFAULT ------------------------------------------ */

START_TEST(row2_no_sched_by_default)
{
	char file[] = "/tmp/mqblk-policy-XXXXXX";
	struct mq_device *d;
	int fd;

	d = DEV_NEW("device=null", "no_sched=1");
	assert_sched(dev_queue(d), "none", "row 2: NO_SCHED_BY_DEFAULT");
	ck_assert(tlog_has(
		"nullb0: scheduler none (row 2: NO_SCHED_BY_DEFAULT)"));
	mq_device_destroy(d);

	d = DEV_NEW("device=ram", "size=1M");
	assert_sched(dev_queue(d), "none", "row 2: NO_SCHED_BY_DEFAULT");
	mq_device_destroy(d);

	fd = mkstemp(file);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
	d = DEV_NEW("device=file", kv("file", file));
	assert_sched(dev_queue(d), "none", "row 2: NO_SCHED_BY_DEFAULT");
	mq_device_destroy(d);

	/* scheduler= wins over row 2. */
	d = DEV_NEW("device=file", kv("file", file), "scheduler=kyber");
	assert_sched(dev_queue(d), "kyber", "scheduler= key");
	ck_assert(tlog_has("loop0: scheduler kyber (scheduler= key)"));
	mq_device_destroy(d);
	unlink(file);

	d = DEV_NEW("device=null", "no_sched=1", "scheduler=kyber");
	assert_sched(dev_queue(d), "kyber", "scheduler= key");
	mq_device_destroy(d);
}
END_TEST

/* --- row 3: multiqueue -------------------------------------------------- */

START_TEST(row3_multiqueue)
{
	struct mq_device *d;

	d = DEV_NEW("device=null", "submit_queues=2");
	ck_assert_uint_eq(dev_queue(d)->nr_hw_queues, 2);
	assert_sched(dev_queue(d), "none", "row 3: 2 hw queues");
	ck_assert(tlog_has("nullb0: scheduler none (row 3: 2 hw queues)"));
	mq_device_destroy(d);

	d = DEV_NEW("device=null", "submit_queues=2", "scheduler=kyber");
	assert_sched(dev_queue(d), "kyber", "scheduler= key");
	mq_device_destroy(d);

	/* ram has one hw queue per software queue. */
	d = DEV_NEW("device=ram", "size=1M", "scheduler=kyber");
	ck_assert_uint_eq(dev_queue(d)->nr_hw_queues, 4);
	assert_sched(dev_queue(d), "kyber", "scheduler= key");
	mq_device_destroy(d);
}
END_TEST

/* --- row 4: zoned -------------------------------------------------------- */

START_TEST(row4_zoned)
{
	struct tdisk_conf c = {.name = "zbc0", .zoned = BLK_ZONED_HM};
	struct mq_err e = {{0}};
	struct tdisk *t;
	char want[256];

	t = tdisk_new(&c);
	TAPPLY(t, "rules=/dev/null");
	assert_sched(t->disk.queue,
		     built("mq-deadline") ? "mq-deadline" : "none",
		     "row 4: zoned host-managed");
	snprintf(want, sizeof(want),
		 "zbc0: scheduler %s (row 4: zoned host-managed)",
		 mq_elevator_name(t->disk.queue));
	ck_assert(tlog_has(want));

	/* bfq is refused, and says why. */
	ck_assert_int_eq(tdisk_apply(t, &e, "scheduler=bfq", NULL), -1);
	if (built("bfq"))
		ck_assert_str_eq(
			e.msg,
			"zbc0: scheduler=bfq: bfq does not keep write order on sequential zones (zbc0 is zoned host-managed, zone_write_plugging=0): use mq-deadline or none");
	else
		ck_assert_msg(
			strstr(e.msg,
			       "zbc0: scheduler=bfq: unknown scheduler 'bfq' (known: none"),
			"%s", e.msg);
	/* So is kyber, for the same reason (Linux: ELEVATOR_F_ZBD_SEQ_WRITE) */
	ck_assert_int_eq(tdisk_apply(t, &e, "scheduler=kyber", NULL), -1);
	ck_assert_str_eq(
		e.msg,
		"zbc0: scheduler=kyber: kyber does not keep write order on sequential zones (zbc0 is zoned host-managed, zone_write_plugging=0): use mq-deadline or none");

	TAPPLY(t, "scheduler=none");
	assert_sched(t->disk.queue, "none", "scheduler= key");
	if (built("mq-deadline")) {
		TAPPLY(t, "scheduler=mq-deadline");
		assert_sched(t->disk.queue, "mq-deadline", "scheduler= key");
	}
	tdisk_free(t);
}
END_TEST

/*
 * Row 4 with zone write plugging on (the default since Linux 6.10): the
 * core keeps each zone's write order, so the zoned disk takes row 5 and
 * every scheduler may drive it, bfq and kyber too.
 */
START_TEST(row4_zoned_plugging)
{
	static const struct elevator_type fake_bfq = {.elevator_name = "bfq"};
	struct tdisk_conf c = {.name = "zbc2",
			       .zoned = BLK_ZONED_HM,
			       .zone_write_plugging = true};
	struct mq_err e = {{0}};
	struct tdisk *t = tdisk_new(&c);

	TAPPLY(t, "rules=/dev/null");
	assert_sched(t->disk.queue, row5_default(), "row 5: single queue");
	ck_assert_int_eq(elv_policy_check(&t->disk, &fake_bfq, &e), 0);
	if (built("bfq")) {
		TAPPLY(t, "scheduler=bfq");
		assert_sched(t->disk.queue, "bfq", "scheduler= key");
	}
	TAPPLY(t, "scheduler=kyber");
	assert_sched(t->disk.queue, "kyber", "scheduler= key");
	tdisk_free(t);
}
END_TEST

/* Through the device layer: the queue key, both ways, on a zoned null. */
START_TEST(row4_zone_write_plugging_key)
{
	struct mq_device *d;
	char err[512];

	d = DEV_NEW("device=null", "zoned=1", "submit_queues=1");
	ck_assert(dev_queue(d)->zone_write_plugging);
	assert_sched(dev_queue(d), row5_default(), "row 5: single queue");
	mq_device_destroy(d);

	d = DEV_NEW("device=null", "zoned=1", "submit_queues=2");
	assert_sched(dev_queue(d), "none", "row 3: 2 hw queues");
	mq_device_destroy(d);

	d = DEV_NEW("device=null", "zoned=1", "submit_queues=2",
		    "zone_write_plugging=0");
	ck_assert(!dev_queue(d)->zone_write_plugging);
	assert_sched(dev_queue(d),
		     built("mq-deadline") ? "mq-deadline" : "none",
		     "row 4: zoned host-managed");
	mq_device_destroy(d);

	if (built("bfq")) {
		DEV_ERR(err, "device=null", "zoned=1", "zone_write_plugging=0",
			"scheduler=bfq");
		ck_assert_msg(
			strstr(err,
			       "bfq does not keep write order on sequential zones (nullb0 is zoned host-managed, zone_write_plugging=0)"),
			"%s", err);
		d = DEV_NEW("device=null", "zoned=1", "scheduler=bfq");
		assert_sched(dev_queue(d), "bfq", "scheduler= key");
		mq_device_destroy(d);
	}
	DEV_ERR(err, "device=null", "zoned=1", "zone_write_plugging=2");
	ck_assert_msg(strstr(err, "zone_write_plugging"), "%s", err);
}
END_TEST

/* The check itself, with a stand-in bfq whatever is built. */
START_TEST(row4_bfq_message)
{
	static const struct elevator_type fake_bfq = {.elevator_name = "bfq"};
	struct tdisk_conf c = {.name = "sdz", .zoned = BLK_ZONED_HM};
	struct mq_err e = {{0}};
	struct tdisk *t = tdisk_new(&c);

	ck_assert_int_eq(elv_policy_check(&t->disk, &fake_bfq, &e), -1);
	ck_assert_str_eq(
		e.msg,
		"bfq does not keep write order on sequential zones (sdz is zoned host-managed, zone_write_plugging=0): use mq-deadline or none");
	ck_assert_int_eq(elv_policy_check(&t->disk, NULL, &e), 0);
	tdisk_free(t);

	/* Host-aware zones take writes anywhere: bfq may go there. */
	c.zoned = BLK_ZONED_HA;
	t = tdisk_new(&c);
	ck_assert_int_eq(elv_policy_check(&t->disk, &fake_bfq, &e), 0);
	tdisk_free(t);

	/* Only conventional zones: nothing sequential to protect. */
	c.zoned = BLK_ZONED_HM;
	c.nr_conv_zones = 4;
	t = tdisk_new(&c);
	ck_assert_int_eq(elv_policy_check(&t->disk, &fake_bfq, &e), 0);
	TAPPLY(t, "rules=/dev/null"); /* an empty rules file */
	ck_assert_str_eq(t->disk.queue->sched_reason, "row 5: single queue");
	tdisk_free(t);
}
END_TEST

/*
 * The rows are taken in order, but row 4 before row 3: a multiqueue zoned
 * disk without zone write plugging gets mq-deadline (Linux 5.4 to 6.9).
 */
START_TEST(row_order)
{
	struct tdisk_conf c = {
		.name = "zbc1", .nr_hw = 2, .zoned = BLK_ZONED_HM};
	struct tdisk *t = tdisk_new(&c);

	TAPPLY(t, "rules=/dev/null");
	assert_sched(t->disk.queue,
		     built("mq-deadline") ? "mq-deadline" : "none",
		     "row 4: zoned host-managed");
	tdisk_free(t);

	/* With zone write plugging it is row 3 like any multiqueue disk. */
	c.zone_write_plugging = true;
	t = tdisk_new(&c);
	TAPPLY(t, "rules=/dev/null");
	assert_sched(t->disk.queue, "none", "row 3: 2 hw queues");
	tdisk_free(t);
	c.zone_write_plugging = false;

	c.nr_hw = 1;
	c.flags = MQ_F_NO_SCHED_BY_DEFAULT;
	t = tdisk_new(&c);
	TAPPLY(t, "rules=/dev/null");
	assert_sched(t->disk.queue, "none", "row 2: NO_SCHED_BY_DEFAULT");
	tdisk_free(t);

	c.flags = MQ_F_NO_SCHED | MQ_F_NO_SCHED_BY_DEFAULT;
	t = tdisk_new(&c);
	TAPPLY(t, "rules=/dev/null");
	assert_sched(t->disk.queue, "none", "row 1: NO_SCHED");
	tdisk_free(t);
}
END_TEST

/* --- row 5: single queue ------------------------------------------------- */

START_TEST(row5_single_queue)
{
	struct mq_device *d;
	char want[128];

	d = DEV_NEW("device=null", "submit_queues=1");
	assert_sched(dev_queue(d), row5_default(), "row 5: single queue");
	snprintf(want, sizeof(want),
		 "nullb0: scheduler %s (row 5: single queue)", row5_default());
	ck_assert_msg(tlog_has(want), "%s", want);
	mq_device_destroy(d);

	/* Every disk of a device gets its own. */
	d = DEV_NEW("device=null", "nr_devices=2", "scheduler=kyber");
	ck_assert_uint_eq(d->nr_disks, 2);
	assert_sched(d->disks[0]->queue, "kyber", "scheduler= key");
	assert_sched(d->disks[1]->queue, "kyber", "scheduler= key");
	ck_assert(tlog_has("nullb1: scheduler kyber (scheduler= key)"));
	mq_device_destroy(d);

	d = DEV_NEW("device=null", "scheduler=none");
	assert_sched(dev_queue(d), "none", "scheduler= key");
	mq_device_destroy(d);
}
END_TEST

/*
 * The disk gets its scheduler where it is added (mq_device_add_disk, as
 * Linux's device_add_disk calls elevator_init_mq), not after the probe:
 * with the keys of the probe running, or the default outside one.
 */
START_TEST(add_disk_applies_policy)
{
	struct tdisk_conf c1 = {.name = "sda"};
	struct tdisk_conf c2 = {.name = "zbc0", .zoned = BLK_ZONED_HM};
	struct mq_device *dev = calloc(1, sizeof(*dev));
	struct mq_params *p = mq_params_new();
	struct tdisk *t1 = tdisk_new(&c1), *t2 = tdisk_new(&c2);
	struct mq_err e = {{0}};

	ck_assert_ptr_nonnull(dev);
	ck_assert_ptr_nonnull(p);
	tlog_clear();
	ck_assert_int_eq(mq_device_add_disk(dev, &t1->disk), 0);
	assert_sched(t1->disk.queue, row5_default(), "row 5: single queue");

	/* A choice the disk refuses refuses the disk, saying why. */
	ck_assert_int_eq(mq_params_set_kv(p, "zone_write_plugging=0", &e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "scheduler=kyber", &e), 0);
	dev->probe_params = p;
	errno = 0;
	ck_assert_int_eq(mq_device_add_disk(dev, &t2->disk), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(dev->nr_disks, 1);
	ck_assert_msg(
		strstr(dev->probe_err.msg,
		       "kyber does not keep write order on sequential zones"),
		"%s", dev->probe_err.msg);
	ck_assert_int_eq(mq_params_set_kv(p, "scheduler=none", &e), 0);
	ck_assert_int_eq(mq_device_add_disk(dev, &t2->disk), 0);
	assert_sched(t2->disk.queue, "none", "scheduler= key");
	ck_assert_uint_eq(dev->nr_disks, 2);

	mq_params_free(p);
	/* What mq_device_destroy does for a driver's disks. */
	for (unsigned int i = 0; i < dev->nr_disks; i++)
		mq_bdev_destroy(dev->bdevs[i]);
	tdisk_free(t1);
	tdisk_free(t2);
	free(dev);
}
END_TEST

/* --- names and keys ------------------------------------------------------ */

START_TEST(unknown_scheduler)
{
	char msg[512], known[256], want[512];

	elv_known_names(known, sizeof(known));
	ck_assert(strncmp(known, "none, ", 6) == 0);
	ck_assert(strstr(known, "kyber"));
	DEV_ERR(msg, "device=null", "scheduler=cfq");
	snprintf(
		want, sizeof(want),
		"null: nullb0: scheduler=cfq: unknown scheduler 'cfq' (known: %s)",
		known);
	ck_assert_str_eq(msg, want);
	DEV_ERR(msg, "device=null", "scheduler=");
	ck_assert(strstr(msg, "unknown scheduler '' (known: none"));
}
END_TEST

START_TEST(unknown_keys_still_refused)
{
	char msg[512];

	DEV_ERR(msg, "device=null", "scheduler=kyber", "schedular=bfq");
	ck_assert_msg(
		strstr(msg,
		       "null: unknown key 'schedular' (accepted: size, time_scale, io_timeout, scheduler, rules, iosched.*, "),
		"%s", msg);
	/* iosched.* keys are read, so never "unknown". */
	DEV_ERR(msg, "device=null", "scheduler=kyber",
		"iosched.read_lat_nsec=1", "colour=red");
	ck_assert_msg(strstr(msg, "unknown key 'colour'"), "%s", msg);
}
END_TEST

START_TEST(iosched_keys)
{
	struct mq_device *d;
	struct mq_queue *q;
	char msg[512], buf[64];
	const struct elv_fs_entry *a;

	d = DEV_NEW("device=null", "scheduler=kyber",
		    "iosched.read_lat_nsec=500000",
		    "iosched.write_lat_nsec=7000000");
	q = dev_queue(d);
	ck_assert_str_eq(mq_elevator_name(q), "kyber");
	for (a = q->elevator->type->elevator_attrs; a->name; a++) {
		a->show(q->elevator, buf, sizeof(buf));
		if (!strcmp(a->name, "read_lat_nsec"))
			ck_assert_str_eq(buf, "500000");
		else
			ck_assert_str_eq(buf, "7000000");
	}
	mq_device_destroy(d);

	DEV_ERR(msg, "device=null", "scheduler=kyber", "iosched.bogus=1");
	ck_assert_str_eq(
		msg,
		"null: nullb0: iosched.bogus=1: kyber has no tunable 'bogus' (tunables: read_lat_nsec, write_lat_nsec)");
	DEV_ERR(msg, "device=null", "scheduler=kyber",
		"iosched.read_lat_nsec=2ms");
	ck_assert_str_eq(
		msg,
		"null: nullb0: iosched.read_lat_nsec=2ms: kyber refuses read_lat_nsec=2ms: Invalid argument");
	DEV_ERR(msg, "device=null", "scheduler=kyber",
		"iosched.write_lat_nsec=-1");
	ck_assert(strstr(msg, "iosched.write_lat_nsec=-1: kyber refuses"));
	DEV_ERR(msg, "device=null", "submit_queues=2",
		"iosched.read_lat_nsec=1");
	ck_assert_str_eq(
		msg,
		"null: nullb0: iosched.read_lat_nsec=1: scheduler none has no tunables");
}
END_TEST

/* --- rules -----------------------------------------------------------------
 */

/* ATTR{queue/nr_hw_queues}, which udev never had. */
START_TEST(rules_nr_hw_queues)
{
	const char *path = rules_file("70-nr-hw-queues.rules");
	struct mq_device *d;
	char buf[64];

	d = DEV_NEW("device=null", kv("rules", path));
	ck_assert_str_eq(mq_elevator_name(dev_queue(d)), "kyber");
	ck_assert_msg(
		strstr(dev_queue(d)->sched_reason, "70-nr-hw-queues.rules:5"),
		"%s", dev_queue(d)->sched_reason);
	ck_assert(strncmp(dev_queue(d)->sched_reason, "rule ", 5) == 0);
	dev_queue(d)->elevator->type->elevator_attrs[0].show(
		dev_queue(d)->elevator, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1000000");
	mq_device_destroy(d);

	d = DEV_NEW("device=null", "submit_queues=2", kv("rules", path));
	ck_assert_str_eq(mq_elevator_name(dev_queue(d)), "none");
	ck_assert(
		strstr(dev_queue(d)->sched_reason, "70-nr-hw-queues.rules:8"));
	mq_device_destroy(d);

	/* The whole directory, as udev reads rules.d: the same outcome. */
	{
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s", path);
		*strrchr(dir, '/') = '\0';
		d = DEV_NEW("device=null", kv("rules", dir));
		ck_assert_str_eq(mq_elevator_name(dev_queue(d)), "kyber");
		ck_assert(strstr(dev_queue(d)->sched_reason,
				 "/70-nr-hw-queues.rules:5"));
		mq_device_destroy(d);
	}

	/* scheduler= wins over the rules; their tunables go with them. */
	d = DEV_NEW("device=null", kv("rules", path), "scheduler=none");
	assert_sched(dev_queue(d), "none", "scheduler= key");
	mq_device_destroy(d);
}
END_TEST

/* A distribution's file, as it is, on disks named as it expects. */
START_TEST(rules_distro_file)
{
	const char *path = rules_file("60-ioschedulers.rules");
	struct tdisk_conf mmc = {.name = "mmcblk0"};
	struct tdisk_conf hdd = {.name = "sda", .rotational = true};
	struct tdisk_conf ssd = {.name = "sdb"};
	struct tdisk_conf nvme = {.name = "nvme0n1", .nr_hw = 2};
	struct tdisk *t;
	char want[PATH_MAX + 64];

	t = tdisk_new(&mmc);
	TAPPLY(t, kv("rules", path));
	if (built("mq-deadline")) {
		snprintf(want, sizeof(want), "rule %s:9", path);
		assert_sched(t->disk.queue, "mq-deadline", want);
	} else {
		/* As udev: the write fails, is logged, changes nothing. */
		assert_sched(t->disk.queue, row5_default(),
			     "row 5: single queue");
		ck_assert(tlog_has("unknown scheduler 'mq-deadline'"));
	}
	tdisk_free(t);

	t = tdisk_new(&ssd);
	TAPPLY(t, kv("rules", path));
	ck_assert_str_eq(mq_elevator_name(t->disk.queue),
			 built("mq-deadline") ? "mq-deadline" : row5_default());
	tdisk_free(t);

	t = tdisk_new(&hdd);
	TAPPLY(t, kv("rules", path));
	if (built("bfq")) {
		snprintf(want, sizeof(want), "rule %s:13", path);
		assert_sched(t->disk.queue, "bfq", want);
	} else {
		ck_assert(tlog_has(
			":13: ATTR{queue/scheduler}=\"bfq\": unknown scheduler 'bfq'"));
	}
	tdisk_free(t);

	t = tdisk_new(&nvme);
	TAPPLY(t, kv("rules", path));
	snprintf(want, sizeof(want), "rule %s:6", path);
	assert_sched(t->disk.queue, "none", want);
	tdisk_free(t);

	/* nullb0 is none of these: the default stands. */
	{
		struct mq_device *d = DEV_NEW("device=null", kv("rules", path));

		assert_sched(dev_queue(d), row5_default(),
			     "row 5: single queue");
		mq_device_destroy(d);
	}
}
END_TEST

/* systemd's style: GOTO, LABEL, ENV{DEVTYPE}, TEST!= an iosched file. */
START_TEST(rules_systemd_file)
{
	const char *path = rules_file("60-block-scheduler.rules");
	struct tdisk_conf mmc = {.name = "mmcblk1"};
	struct tdisk_conf part = {.name = "sda1"};
	struct tdisk *t;
	char want[PATH_MAX + 64];

	t = tdisk_new(&mmc);
	TAPPLY(t, kv("rules", path));
	if (built("bfq") && !strcmp(row5_default(), "bfq")) {
		/* bfq already has slice_idle: the rule leaves it be. */
		assert_sched(t->disk.queue, "bfq", "row 5: single queue");
	} else if (built("bfq")) {
		snprintf(want, sizeof(want), "rule %s:7", path);
		assert_sched(t->disk.queue, "bfq", want);
	} else {
		assert_sched(t->disk.queue, row5_default(),
			     "row 5: single queue");
		ck_assert(tlog_has(
			":7: ATTR{queue/scheduler}=\"bfq\": unknown scheduler 'bfq'"));
	}
	tdisk_free(t);

	/* sd*[!0-9] leaves partitions out. */
	t = tdisk_new(&part);
	TAPPLY(t, kv("rules", path));
	assert_sched(t->disk.queue, row5_default(), "row 5: single queue");
	ck_assert(!tlog_has("ATTR{queue/scheduler}"));
	tdisk_free(t);
}
END_TEST

/* Matching: globs, alternatives, !=, every attribute, unknown keys. */
START_TEST(rules_matching)
{
	struct tdisk_conf zc = {.name = "zbc7", .zoned = BLK_ZONED_HM};
	struct tdisk *t;
	char *path;

	path = write_rules(
		"# comment\n"
		"\n"
		"   # indented comment\n"
		"KERNEL==\"nullb*\", ATTR{queue/logical_block_size}==\"4096\", "
		"ATTR{queue/scheduler}=\"kyber\"\n"
		"KERNEL==\"nullb*\", ATTR{queue/physical_block_size}!=\"4096\","
		"ATTR{queue/scheduler}=\"none\"\n");
	{
		struct mq_device *d =
			DEV_NEW("device=null", "bs=4096", kv("rules", path));

		ck_assert_str_eq(mq_elevator_name(dev_queue(d)), "kyber");
		ck_assert(strstr(dev_queue(d)->sched_reason, ":4"));
		mq_device_destroy(d);
		d = DEV_NEW("device=null", "bs=512", kv("rules", path));
		ck_assert_str_eq(mq_elevator_name(dev_queue(d)), "none");
		ck_assert(strstr(dev_queue(d)->sched_reason, ":5"));
		mq_device_destroy(d);
	}
	unlink(path);
	free(path);

	/* Keys this server cannot evaluate make the rule not match. */
	path = write_rules(
		"KERNEL==\"zbc*\", PROGRAM==\"/bin/true\", ATTR{queue/scheduler}=\"none\"\n"
		"KERNEL==\"zbc*\", DRIVERS==\"*\", ATTR{queue/scheduler}=\"none\"\n"
		"KERNEL==\"zbc*\", ATTR{queue/no_such_thing}==\"*\", ATTR{queue/scheduler}=\"none\"\n"
		"KERNEL==\"zbc*\", ENV{ID_BUS}==\"usb\", ATTR{queue/scheduler}=\"none\"\n"
		"ACTION==\"remove\", ATTR{queue/scheduler}=\"none\"\n"
		"SUBSYSTEM==\"net\", ATTR{queue/scheduler}=\"none\"\n");
	t = tdisk_new(&zc);
	TAPPLY(t, kv("rules", path));
	assert_sched(t->disk.queue,
		     built("mq-deadline") ? "mq-deadline" : "none",
		     "row 4: zoned host-managed");
	tdisk_free(t);
	unlink(path);
	free(path);

	/* Attributes: zoned, nr_requests, rotational, current scheduler. */
	path = write_rules(
		"ATTR{queue/zoned}==\"host-managed\", ATTR{queue/rotational}==\"0\", "
		"ENV{DEVTYPE}==\"disk\", SUBSYSTEM==\"block\", ACTION==\"change\", "
		"ATTR{queue/scheduler}=\"none\"\n"
		"ATTR{queue/scheduler}==\"none\", ATTR{queue/nr_requests}==\"64\", "
		"ATTR{queue/max_sectors_kb}==\"[0-9]*\", ATTR{queue/scheduler}=\"mq-deadline|x\"\n"
		"ATTR{queue/scheduler}==\"*[[]none[]]*\", ENV{UNSET}==\"\", "
		"ATTR{queue/iosched/anything}=\"1\"\n");
	t = tdisk_new(&zc);
	TAPPLY(t, kv("rules", path));
	/* Line 2 sees none (line 1 wrote it) and asks for an unknown name. */
	ck_assert_str_eq(mq_elevator_name(t->disk.queue), "none");
	ck_assert(strstr(t->disk.queue->sched_reason, ":1"));
	ck_assert(tlog_has(
		":2: ATTR{queue/scheduler}=\"mq-deadline|x\": unknown scheduler 'mq-deadline|x'"));
	/* Line 3 matched the sysfs form and set a tunable none lacks. */
	ck_assert(tlog_has(
		":3: ATTR{queue/iosched/anything}=\"1\": scheduler none has no tunables; ignored"));
	tdisk_free(t);
	unlink(path);
	free(path);
}
END_TEST

/* Later rules override, := is final, GOTO skips, continuations join. */
START_TEST(rules_order)
{
	struct mq_device *d;
	char *path;

	path = write_rules(
		"KERNEL==\"nullb0\", ATTR{queue/scheduler}=\"none\"\n"
		"KERNEL==\"null*\", \\\n"
		"    ATTR{queue/scheduler}=\"kyber\", \\\n"
		"    ATTR{queue/iosched/write_lat_nsec}=\"1234\"\n"
		"KERNEL==\"nullb0\", ATTR{queue/iosched/read_lat_nsec}=\"99\"\n");
	d = DEV_NEW("device=null", kv("rules", path));
	ck_assert_str_eq(mq_elevator_name(dev_queue(d)), "kyber");
	ck_assert(strstr(dev_queue(d)->sched_reason, ":2"));
	{
		char buf[32];
		const struct elv_fs_entry *a =
			dev_queue(d)->elevator->type->elevator_attrs;

		a[0].show(dev_queue(d)->elevator, buf, sizeof(buf));
		ck_assert_str_eq(buf, "99");
		a[1].show(dev_queue(d)->elevator, buf, sizeof(buf));
		ck_assert_str_eq(buf, "1234");
	}
	mq_device_destroy(d);

	/* iosched.* keys come after the rules' tunables. */
	d = DEV_NEW("device=null", kv("rules", path),
		    "iosched.read_lat_nsec=7");
	{
		char buf[32];

		dev_queue(d)->elevator->type->elevator_attrs[0].show(
			dev_queue(d)->elevator, buf, sizeof(buf));
		ck_assert_str_eq(buf, "7");
	}
	mq_device_destroy(d);
	unlink(path);
	free(path);

	path = write_rules(
		"KERNEL==\"nullb0\", ATTR{queue/scheduler}:=\"kyber\"\n"
		"KERNEL==\"nullb0\", ATTR{queue/scheduler}=\"none\"\n");
	d = DEV_NEW("device=null", kv("rules", path));
	ck_assert_str_eq(mq_elevator_name(dev_queue(d)), "kyber");
	ck_assert(strstr(dev_queue(d)->sched_reason, ":1"));
	mq_device_destroy(d);
	unlink(path);
	free(path);

	path = write_rules(
		"KERNEL!=\"nullb0\", GOTO=\"end\"\n"
		"ATTR{queue/scheduler}=\"kyber\"\n"
		"LABEL=\"end\"\n"
		"KERNEL==\"nullb1\", ATTR{queue/scheduler}=\"none\"\n");
	d = DEV_NEW("device=null", "nr_devices=2", kv("rules", path));
	ck_assert_str_eq(mq_elevator_name(d->disks[0]->queue), "kyber");
	ck_assert_str_eq(mq_elevator_name(d->disks[1]->queue), "none");
	ck_assert(strstr(d->disks[1]->queue->sched_reason, ":4"));
	mq_device_destroy(d);
	unlink(path);
	free(path);
}
END_TEST

/* Parse errors name the file and the line. */
START_TEST(rules_parse_errors)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{"\n\n# c\n\n\n\nKERNEL \"sd*\"\n",
		 ":7: expected '==' or '=' after KERNEL"},
		{"KERNEL==sd*\n", ":1: expected '\"' after KERNEL=="},
		{"KERNEL==\"sd*\n", ":1: missing closing '\"' in KERNEL"},
		{"ATTR{queue/rotational==\"0\"\n",
		 ":1: missing '}' after ATTR{"},
		{"ATTR==\"0\"\n", ":1: ATTR needs an attribute: ATTR{...}"},
		{"KERNEL=\"sd*\"\n",
		 ":1: invalid operator '=' for KERNEL: it takes '==' or '!='"},
		{"ATTR{queue/scheduler}+=\"bfq\"\n",
		 ":1: invalid operator '+=' for ATTR"},
		{"KERNEL==\"a\"\"b\"\n",
		 ":1: expected ',' after the value of KERNEL"},
		{"KERNEL==\"a\", \\\n  ==\"b\"\n",
		 ":1: expected a key, found '='"},
		{"GOTO==\"x\"\n",
		 ":1: invalid operator '==' for GOTO: it takes '='"},
	};
	char msg[512], want[PATH_MAX + 128];
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = write_rules(cases[i].text);

		DEV_ERR(msg, "device=null", kv("rules", path));
		snprintf(want, sizeof(want), "null: %s%s", path, cases[i].msg);
		ck_assert_str_eq(msg, want);
		unlink(path);
		free(path);
	}
	DEV_ERR(msg, "device=null", "rules=/nonexistent/x.rules");
	ck_assert_str_eq(
		msg,
		"null: rules=/nonexistent/x.rules: No such file or directory");
}
END_TEST

/* What rules see, straight from the attribute reader. */
START_TEST(rules_attrs)
{
	struct mq_device *d = DEV_NEW("device=null", "submit_queues=2",
				      "hw_queue_depth=32", "rotational=1");
	struct gendisk *disk = d->disks[0];
	char buf[64];

	ck_assert_int_eq(udev_rules_attr(disk, "none", "queue/nr_hw_queues",
					 buf, sizeof(buf)),
			 0);
	ck_assert_str_eq(buf, "2");
	udev_rules_attr(disk, "none", "queue/rotational", buf, sizeof(buf));
	ck_assert_str_eq(buf, "1");
	udev_rules_attr(disk, "none", "queue/nr_requests", buf, sizeof(buf));
	ck_assert_str_eq(buf, "32");
	udev_rules_attr(disk, "kyber", "queue/nr_requests", buf, sizeof(buf));
	ck_assert_str_eq(buf, "64");
	udev_rules_attr(disk, "none", "queue/zoned", buf, sizeof(buf));
	ck_assert_str_eq(buf, "none");
	udev_rules_attr(disk, "none", "queue/max_sectors_kb", buf, sizeof(buf));
	ck_assert_str_eq(buf, "127");
	udev_rules_attr(disk, "none", "queue/logical_block_size", buf,
			sizeof(buf));
	ck_assert_str_eq(buf, "512");
	udev_rules_attr(disk, "kyber", "queue/scheduler", buf, sizeof(buf));
	ck_assert_str_eq(buf, "kyber");
	ck_assert_int_eq(
		udev_rules_attr(disk, "none", "queue/bogus", buf, sizeof(buf)),
		-1);
	ck_assert_int_eq(
		udev_rules_attr(disk, "none", "device/model", buf, sizeof(buf)),
		-1);
	mq_device_destroy(d);
}
END_TEST

/* --- run time ---------------------------------------------------------------
 */

START_TEST(runtime_switch)
{
	struct mq_device *d = DEV_NEW("device=ram", "size=1M");
	struct mq_err e = {{0}};

	ck_assert_int_eq(elv_policy_switch(d->disks[0], "kyber", "ctl", &e), 0);
	assert_sched(dev_queue(d), "kyber", "ctl");
	ck_assert_int_eq(elv_policy_switch(d->disks[0], "none", "ctl2", &e), 0);
	assert_sched(dev_queue(d), "none", "ctl2");
	ck_assert_int_eq(elv_policy_switch(d->disks[0], "noop", "x", &e), -1);
	ck_assert(strstr(e.msg,
			 "ram0: scheduler noop: unknown scheduler 'noop'"));
	mq_device_destroy(d);

	d = DEV_NEW("device=null", "queue_mode=0");
	ck_assert_int_eq(elv_policy_switch(d->disks[0], "kyber", "x", &e), -1);
	ck_assert_str_eq(
		e.msg,
		"nullb0: scheduler kyber: nullb0 takes no I/O scheduler (its tag set has NO_SCHED): only none");
	assert_sched(dev_queue(d), "none", "row 1: NO_SCHED");
	mq_device_destroy(d);
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("policy");

	tcase_add_test(tc, row1_no_sched);
	tcase_add_test(tc, row1_rules_refused);
	tcase_add_test(tc, rules_ioprio_map);
	tcase_add_test(tc, row2_no_sched_by_default);
	tcase_add_test(tc, row3_multiqueue);
	tcase_add_test(tc, row4_zoned);
	tcase_add_test(tc, row4_bfq_message);
	tcase_add_test(tc, row4_zoned_plugging);
	tcase_add_test(tc, row4_zone_write_plugging_key);
	tcase_add_test(tc, row_order);
	tcase_add_test(tc, row5_single_queue);
	tcase_add_test(tc, add_disk_applies_policy);
	tcase_add_test(tc, unknown_scheduler);
	tcase_add_test(tc, unknown_keys_still_refused);
	tcase_add_test(tc, iosched_keys);
	tcase_add_test(tc, rules_nr_hw_queues);
	tcase_add_test(tc, rules_distro_file);
	tcase_add_test(tc, rules_systemd_file);
	tcase_add_test(tc, rules_matching);
	tcase_add_test(tc, rules_order);
	tcase_add_test(tc, rules_parse_errors);
	tcase_add_test(tc, rules_attrs);
	tcase_add_test(tc, runtime_switch);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(policy_suite());
}
