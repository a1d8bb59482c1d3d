/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A disk the server renames because another of its disks has the name
 * already (two null_blk devices would both make nullb0; the export table
 * calls mq_disk_rename): the queue, the description the model wrote and
 * the model's own log lines all say the new name.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/device.h"
#include "server/mq/blk-mq.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tlog.h"

static struct mq_device *make(const char *device, ...)
{
	struct mq_device *d;
	struct mq_err e;
	va_list ap;
	int ret;

	va_start(ap, device);
	ret = tdevice_vcreate(&d, &e, device, ap);
	va_end(ap);
	ck_assert_msg(ret == 0, "%s", e.msg);
	return d;
}

static void rename_to(struct gendisk *disk, const char *name)
{
	ck_assert_int_eq(mq_disk_rename(disk, name), 0);
	ck_assert_str_eq(disk->disk_name, name);
	ck_assert_str_eq(disk->queue->name, name);
	tlog_clear();
}

static void fire(struct gendisk *disk, const char *fault, const char *value)
{
	struct mq_err e = {0};

	ck_assert_msg(disk_fire_fault(disk, fault, value, &e) == 0, "%s: %s",
		      fault, e.msg);
}

static void ck_log(const char *line)
{
	ck_assert_msg(tlog_has(line), "no '%s' in the log:\n%s", line,
		      tlog_text());
}

START_TEST(test_description_follows)
{
	struct mq_device *d = make("ram", "size=1M", NULL);
	struct gendisk *disk = tdevice_disk0(d);
	char desc[512], longname[MQ_NAME_MAX + 1];

	ck_assert_str_eq(disk->description, "RAM disk ram0");
	rename_to(disk, "ram1");
	ck_assert_str_eq(disk->description, "RAM disk ram1");
	mq_disk_describe(disk, desc, sizeof(desc));
	ck_assert_msg(!strncmp(desc, "RAM disk ram1: ", 15), "%s", desc);

	/* A name that does not fit changes nothing. */
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	errno = 0;
	ck_assert_int_eq(mq_disk_rename(disk, longname), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(disk->disk_name, "ram1");
	ck_assert_str_eq(disk->description, "RAM disk ram1");
	mq_device_destroy(d);
}
END_TEST

/* Only the name standing as a word of its own is replaced. */
START_TEST(test_description_word)
{
	struct gendisk disk;

	memset(&disk, 0, sizeof(disk));
	strcpy(disk.disk_name, "hd");
	strcpy(disk.description, "hda, hd/x, xhd: the hd drive");
	ck_assert_int_eq(mq_disk_rename(&disk, "hdz"), 0);
	ck_assert_str_eq(disk.description, "hda, hd/x, xhd: the hdz drive");
	ck_assert_str_eq(disk.disk_name, "hdz");

	/* Not in the description at all: only the name changes. */
	strcpy(disk.description, "a disk");
	ck_assert_int_eq(mq_disk_rename(&disk, "hdy"), 0);
	ck_assert_str_eq(disk.description, "a disk");
}
END_TEST

START_TEST(test_null_blk)
{
	struct mq_device *d = make("null", "zoned=1", "zone_size=4", "size=16M",
				   "memory_backed=1", NULL);
	struct gendisk *disk = tdevice_disk0(d);

	rename_to(disk, "nullb1");
	ck_assert_msg(!strncmp(disk->description, "null_blk nullb1 (", 17),
		      "%s", disk->description);
	fire(disk, "zone_offline", "2");
	ck_log("nullb1: zone 2: offline toggled");
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_smr)
{
	struct mq_device *d =
		make("smr", "capacity=256M", "zone_size=16M", NULL);
	struct gendisk *disk = tdevice_disk0(d);

	rename_to(disk, "smr1");
	ck_assert_msg(strstr(disk->description, "SMR disk smr1 ("), "%s",
		      disk->description);
	fire(disk, "zone_offline", "3");
	ck_log("smr1: zone 3: offline toggled");
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_ide_cd)
{
	char img[] = "/tmp/mqblk-rename-XXXXXX", kv[64];
	struct mq_device *d;
	struct gendisk *disk;
	int fd = mkstemp(img);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 32 * 2048), 0);
	close(fd);
	snprintf(kv, sizeof(kv), "image=%s", img);
	d = make("ide-cd", kv, NULL);
	disk = tdevice_disk0(d);
	rename_to(disk, "hdc");
	ck_assert_msg(!strncmp(disk->description, "hdc: ", 5), "%s",
		      disk->description);
	fire(disk, "eject", NULL);
	ck_log("hdc: medium ejected, tray open");
	mq_device_destroy(d);
	unlink(img);
}
END_TEST

START_TEST(test_sunvdc)
{
	struct mq_device *d = make("sunvdc", "size=4M", NULL);
	struct gendisk *disk = tdevice_disk0(d);

	rename_to(disk, "vdiskc");
	fire(disk, "ldc_reset", NULL);
	ck_log("vdiskc: ldc_reset fault: the channel resets");
	mq_device_destroy(d);
}
END_TEST

static Suite *rename_suite(void)
{
	Suite *s = suite_create("disk_rename");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_description_follows);
	tcase_add_test(tc, test_description_word);
	tcase_add_test(tc, test_null_blk);
	tcase_add_test(tc, test_smr);
	tcase_add_test(tc, test_ide_cd);
	tcase_add_test(tc, test_sunvdc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(rename_suite());
}
