/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests for the IDE stack (backends/ide), made through the device
 * layer and driven with bios, with time off (time_scale=0): the channel
 * lock shared by hda and hdb, REQUEST SENSE from the reserved tag at the
 * head of the queue, breather requeues while the CD spins up, read-only
 * refusal, eject and insert, LBA28 against LBA48, FLUSH CACHE from the
 * prep step.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/device.h"
#include "backends/ide/ide.h"
#include "backends/ide/ide-dev.h"
#include "server/mq/elevator.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"
#include "tests/unit/helpers/tlog.h"
#include "tests/unit/helpers/tsync.h"

#define ck_assert_log(s)                                                       \
	ck_assert_msg(tlog_has(s), "log lacks '%s':\n%s", s, tlog_text())

/* --- devices -------------------------------------------------------- */

/* Make a device from "key=value" strings ending with NULL; NULL on error. */
static struct mq_device *try_new(struct mq_err *e, const char *device, ...)
{
	struct mq_device *d = NULL;
	va_list ap;

	va_start(ap, device);
	if (tdevice_vcreate(&d, e, device, ap))
		d = NULL;
	va_end(ap);
	return d;
}

#define IDE_NEW(dev, ...)                                                      \
	({                                                                     \
		struct mq_err __e = {{0}};                                     \
		struct mq_device *__d = try_new(&__e, dev, __VA_ARGS__, NULL); \
		if (!__d)                                                      \
			ck_abort_msg("create failed: %s", __e.msg);            \
		__d;                                                           \
	})

static struct ide_drive *drive_of(struct mq_device *d, const char *name)
{
	struct gendisk *disk = mq_device_find_disk(d, name);

	ck_assert_msg(disk != NULL, "no disk %s", name);
	return disk->private_data;
}

static int show(struct gendisk *disk, const char *attr, char *buf, size_t len)
{
	const struct disk_attr *a;

	for (a = disk->attrs; a && a->name; a++)
		if (!strcmp(a->name, attr))
			return a->show(disk, buf, len);
	ck_abort_msg("%s has no attribute %s", disk->disk_name, attr);
	return -1;
}

/* --- bios ----------------------------------------------------------- */

struct batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int pending;
	unsigned int errors;
	int last_status;
	/* completion order: the drive tag of each bio */
	char order[256];
	unsigned int done;
};

struct tbio {
	struct bio bio;
	struct batch *b;
	char tag;
	unsigned long syncs_at_end; /* fdatasync/fsync of the watched file */
};

static void batch_init(struct batch *b)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
}

static void batch_destroy(struct batch *b)
{
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}

static void batch_end_io(struct bio *bio)
{
	struct tbio *tb = bio->bi_private;
	struct batch *b = tb->b;

	tb->syncs_at_end = tsync_count();
	pthread_mutex_lock(&b->lock);
	if (bio->bi_status)
		b->errors++;
	b->last_status = bio->bi_status;
	if (b->done < sizeof(b->order) - 1)
		b->order[b->done] = tb->tag;
	b->done++;
	b->pending--;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static void submit(struct batch *b, struct tbio *tb, char tag,
		   struct mq_queue *q, enum req_op op, uint64_t sector,
		   uint32_t len, void *buf)
{
	bio_init(&tb->bio, op, sector, len, buf);
	tb->bio.bi_submitter = 1;
	tb->bio.bi_end_io = batch_end_io;
	tb->bio.bi_private = tb;
	tb->b = b;
	tb->tag = tag;
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	mq_submit_bio(mq_get_ctx(q, 0), &tb->bio);
}

static void batch_wait(struct batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

/* helpers/tio.h, as this suite calls it: client 1 on software queue 0. */
#define fill(...) tio_fill(__VA_ARGS__)

static int io(struct mq_queue *q, enum req_op op, uint64_t sector, uint32_t len,
	      void *buf)
{
	return tio_io(q, 0, op, 0, sector, len, buf);
}

static void round_trip(struct mq_queue *q, uint64_t sector, uint32_t len,
		       unsigned int seed)
{
	tio_round_trip(q, 0, sector, len, seed);
}

/* Wait, without sleeping, until cond holds; fail after 10 s. */
#define wait_until(cond)                                                       \
	do {                                                                   \
		time_t __t0 = time(NULL);                                      \
		while (!(cond)) {                                              \
			ck_assert_msg(time(NULL) - __t0 < 10,                  \
				      "timed out waiting for " #cond);         \
			sched_yield();                                         \
		}                                                              \
	} while (0)

/* A CD image: nblocks 2048-byte blocks, block i filled with seed i. */
static char *make_image(unsigned int nblocks)
{
	char *path = strdup("/tmp/mqblk-ide-XXXXXX");
	unsigned char blk[CD_FRAMESIZE];
	unsigned int i;
	int fd;

	ck_assert_ptr_nonnull(path);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	for (i = 0; i < nblocks; i++) {
		fill(blk, sizeof(blk), i);
		ck_assert_int_eq(write(fd, blk, sizeof(blk)), sizeof(blk));
	}
	close(fd);
	return path;
}

static void free_image(char *path)
{
	unlink(path);
	free(path);
}

/* Read block lba of a CD and check it holds what make_image put there. */
static void check_cd_block(struct mq_queue *q, uint64_t lba)
{
	unsigned char want[CD_FRAMESIZE], got[CD_FRAMESIZE];

	fill(want, sizeof(want), (unsigned int)lba);
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(io(q, REQ_OP_READ, lba * 4, CD_FRAMESIZE, got), 0);
	ck_assert(memcmp(want, got, sizeof(want)) == 0);
}

/* --- configuration -------------------------------------------------- */

START_TEST(test_disk_defaults)
{
	struct mq_device *d = IDE_NEW("ide-disk", "size=1G");
	struct gendisk *disk = d->disks[0];
	struct mq_queue *q = disk->queue;
	struct mq_tag_set *set = q->tag_set;

	ck_assert_uint_eq(d->nr_disks, 1);
	ck_assert_str_eq(disk->disk_name, "hda");
	ck_assert_uint_eq(set->nr_hw_queues, 1);
	ck_assert_uint_eq(set->queue_depth, 32);
	ck_assert_uint_eq(set->reserved_tags, 1);
	ck_assert_uint_eq(set->flags & (MQ_F_SHOULD_MERGE | MQ_F_BLOCKING),
			  MQ_F_SHOULD_MERGE | MQ_F_BLOCKING);
	ck_assert_uint_eq(q->limits.max_sectors, 256);
	ck_assert_uint_eq(q->limits.logical_block_size, 512);
	ck_assert(q->limits.rotational);
	ck_assert(q->limits.write_cache);
	ck_assert(!disk->read_only);
	ck_assert_uint_eq(get_capacity(disk), (1ULL << 30) >> 9);
	ck_assert_msg(strstr(disk->description, "MQBLK HARDDISK") &&
			      strstr(disk->description, "LBA28") &&
			      strstr(disk->description, "UDMA/100") &&
			      strstr(disk->description, "7200 rpm") &&
			      strstr(disk->description, "write cache on") &&
			      strstr(disk->description, "serial MQ00001"),
		      "%s", disk->description);
	mq_device_destroy(d);

	d = IDE_NEW("ide-disk", "model=Maxtor 6L080M0", "firmware=BAH41BM0",
		    "serial=L3ABC", "pio=3", "rpm=5400", "write_cache=0");
	disk = d->disks[0];
	ck_assert_uint_eq(get_capacity(disk), (80ULL << 30) >> 9);
	ck_assert(!disk->queue->limits.write_cache);
	ck_assert_msg(strstr(disk->description, "Maxtor 6L080M0") &&
			      strstr(disk->description, "BAH41BM0") &&
			      strstr(disk->description, "L3ABC") &&
			      strstr(disk->description, "PIO3") &&
			      strstr(disk->description, "5400 rpm") &&
			      strstr(disk->description, "write cache off"),
		      "%s", disk->description);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_channel_config)
{
	struct mq_device *d;
	struct mq_err e = {{0}};

	d = IDE_NEW("ide", "channels=2", "slave=cd", "hdd=none", "hda.size=64M",
		    "hdc.size=32M", "hdc.rpm=5400", "hdb.speed=24");
	ck_assert_uint_eq(d->nr_disks, 3);
	ck_assert_uint_eq(drive_of(d, "hda")->media, ide_disk);
	ck_assert_uint_eq(drive_of(d, "hdb")->media, ide_cdrom);
	ck_assert_uint_eq(drive_of(d, "hdc")->media, ide_disk);
	ck_assert_ptr_null(mq_device_find_disk(d, "hdd"));
	ck_assert_ptr_eq(drive_of(d, "hda")->hwif, drive_of(d, "hdb")->hwif);
	ck_assert_ptr_ne(drive_of(d, "hda")->hwif, drive_of(d, "hdc")->hwif);
	/* Each drive has its own tag set, as in Linux. */
	ck_assert_ptr_ne(drive_of(d, "hda")->queue->tag_set,
			 drive_of(d, "hdb")->queue->tag_set);
	ck_assert_uint_eq(get_capacity(mq_device_find_disk(d, "hdc")),
			  (32ULL << 20) >> 9);
	ck_assert(strstr(mq_device_find_disk(d, "hdb")->description,
			 "ATAPI 24X CD-ROM"));
	ck_assert(strstr(mq_device_find_disk(d, "hdb")->description,
			 "empty tray"));
	mq_device_destroy(d);

	/* A disk key on a CD is nobody's key. */
	ck_assert_ptr_null(
		try_new(&e, "ide", "slave=cd", "hdb.rpm=5400", NULL));
	ck_assert_msg(strstr(e.msg, "hdb.rpm"), "%s", e.msg);
	ck_assert_ptr_null(try_new(&e, "ide", "hdc=disk", NULL));
	ck_assert_msg(strstr(e.msg, "channels=2"), "%s", e.msg);
	ck_assert_ptr_null(try_new(&e, "ide", "slave=tape", NULL));
	ck_assert_msg(strstr(e.msg, "disk, cd or none"), "%s", e.msg);
	ck_assert_ptr_null(try_new(&e, "ide", "master=none", NULL));
	ck_assert_msg(strstr(e.msg, "no drives"), "%s", e.msg);
	ck_assert_ptr_null(
		try_new(&e, "ide-cd", "image=/nonexistent.iso", NULL));
	ck_assert_msg(strstr(e.msg, "nonexistent"), "%s", e.msg);
	ck_assert_ptr_null(try_new(&e, "ide-disk", "size=1000", NULL));
	ck_assert_msg(strstr(e.msg, "size"), "%s", e.msg);
}
END_TEST

/* --- ide-disk ------------------------------------------------------- */

START_TEST(test_lba28_vs_lba48)
{
	struct mq_device *d;
	struct ide_drive *drive;
	struct mq_queue *q;
	unsigned char a[4096], b[4096];
	char buf[512];

	/* 128 GiB is the last size LBA28 addresses. */
	d = IDE_NEW("ide-disk", "size=128G");
	drive = drive_of(d, "hda");
	q = drive->queue;
	ck_assert(!drive->lba48);
	ck_assert(strstr(drive->disk.description, "LBA28"));
	ck_assert_int_gt(show(&drive->disk, "lba", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "LBA28");
	round_trip(q, 0, 4096, 1);
	round_trip(q, (1ULL << 28) - 8, 4096, 2); /* the last 4 KiB */
	ck_assert_uint_ge(atomic_load(&drive->cmds[ATA_CMD_WRITE]), 2);
	ck_assert_uint_ge(atomic_load(&drive->cmds[ATA_CMD_READ]), 2);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_READ_EXT]), 0);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_WRITE_EXT]), 0);
	mq_device_destroy(d);

	/* Past 128 GiB: every command is an EXT one. */
	d = IDE_NEW("ide-disk", "size=200G");
	drive = drive_of(d, "hda");
	q = drive->queue;
	ck_assert(drive->lba48);
	ck_assert(strstr(drive->disk.description, "LBA48"));
	show(&drive->disk, "lba", buf, sizeof(buf));
	ck_assert_str_eq(buf, "LBA48");
	/* A sector past 2^28 must not alias the one 2^28 below it. */
	fill(a, sizeof(a), 3);
	fill(b, sizeof(b), 4);
	ck_assert_int_eq(io(q, REQ_OP_WRITE, 64, 4096, a), 0);
	ck_assert_int_eq(io(q, REQ_OP_WRITE, (1ULL << 28) + 64, 4096, b), 0);
	memset(a, 0, sizeof(a));
	ck_assert_int_eq(io(q, REQ_OP_READ, 64, 4096, a), 0);
	fill(b, sizeof(b), 3);
	ck_assert(memcmp(a, b, sizeof(a)) == 0);
	round_trip(q, (200ULL << 21) - 8, 4096, 5); /* the very end */
	ck_assert_uint_ge(atomic_load(&drive->cmds[ATA_CMD_WRITE_EXT]), 3);
	ck_assert_uint_ge(atomic_load(&drive->cmds[ATA_CMD_READ_EXT]), 2);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_READ]), 0);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_WRITE]), 0);
	show(&drive->disk, "commands", buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "READ_DMA_EXT=2"), "%s", buf);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_pio_commands)
{
	struct mq_device *d = IDE_NEW("ide-disk", "size=64M", "udma=-1");
	struct ide_drive *drive = drive_of(d, "hda");

	round_trip(drive->queue, 8, 8192, 6);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_PIO_WRITE]), 1);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_PIO_READ]), 1);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_READ]), 0);
	mq_device_destroy(d);
}
END_TEST

/* 1 MiB is cut into 256-sector commands. */
START_TEST(test_max_sectors)
{
	struct mq_device *d = IDE_NEW("ide-disk", "size=64M");
	struct ide_drive *drive = drive_of(d, "hda");

	round_trip(drive->queue, 2048, 1 << 20, 7);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_WRITE]), 8);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_READ]), 8);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_flush_becomes_flush_cache)
{
	struct mq_device *d;
	struct ide_drive *drive;
	unsigned char buf[4096];

	fill(buf, sizeof(buf), 8);
	d = IDE_NEW("ide-disk", "size=1G");
	drive = drive_of(d, "hda");
	ck_assert_ptr_nonnull(drive->prep_rq);
	ck_assert_int_eq(io(drive->queue, REQ_OP_WRITE, 0, 4096, buf), 0);
	ck_assert_int_eq(io(drive->queue, REQ_OP_FLUSH, 0, 0, NULL), 0);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_FLUSH]), 1);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_FLUSH_EXT]), 0);
	/* The drive saw FLUSH CACHE after the write. */
	ck_assert_uint_eq(drive->trace[drive->trace_n - 1].op, ATA_CMD_FLUSH);
	mq_device_destroy(d);

	d = IDE_NEW("ide-disk", "size=200G");
	drive = drive_of(d, "hda");
	ck_assert_int_eq(io(drive->queue, REQ_OP_FLUSH, 0, 0, NULL), 0);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_FLUSH_EXT]), 1);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_FLUSH]), 0);
	mq_device_destroy(d);

	/* No write cache: no prep step, and no FLUSH reaches the drive. */
	d = IDE_NEW("ide-disk", "size=1G", "write_cache=0");
	drive = drive_of(d, "hda");
	ck_assert_ptr_null(drive->prep_rq);
	ck_assert_int_eq(io(drive->queue, REQ_OP_WRITE, 0, 4096, buf), 0);
	ck_assert_int_eq(io(drive->queue, REQ_OP_FLUSH, 0, 0, NULL), 0);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_FLUSH]), 0);
	ck_assert_uint_eq(atomic_load(&drive->cmds[ATA_CMD_FLUSH_EXT]), 0);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_disk_image)
{
	char path[] = "/tmp/mqblk-ide-disk-XXXXXX";
	unsigned char w[4096], r[4096];
	struct mq_device *d;
	struct mq_err e;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 8 << 20), 0);
	{
		char kv[4200];

		snprintf(kv, sizeof(kv), "image=%s", path);
		d = IDE_NEW("ide-disk", kv);
		ck_assert_uint_eq(get_capacity(d->disks[0]), (8 << 20) >> 9);
		round_trip(d->disks[0]->queue, 100, 4096, 9);
		ck_assert_int_eq(
			io(d->disks[0]->queue, REQ_OP_FLUSH, 0, 0, NULL), 0);
		ck_assert_int_eq(mq_device_sync(d), 0);
		mq_device_destroy(d);
		/* The bytes are in the file. */
		fill(w, sizeof(w), 9);
		ck_assert_int_eq(pread(fd, r, sizeof(r), 100 * 512), sizeof(r));
		ck_assert(memcmp(w, r, sizeof(w)) == 0);
		ck_assert_ptr_null(
			try_new(&e, "ide-disk", kv, "size=1G", NULL));
		ck_assert_msg(strstr(e.msg, "not both"), "%s", e.msg);
	}
	close(fd);
	unlink(path);
}
END_TEST

/*
 * write_cache=0 on an image: the drive has no volatile cache, the queue
 * says so and no FLUSH CACHE ever comes, so each write completes only
 * once the image is durable (fdatasync returned before the bio ended).
 * With the cache on, a write does not sync; FLUSH does.
 */
START_TEST(test_disk_write_through)
{
	char path[] = "/tmp/mqblk-ide-disk-XXXXXX", kv[4200];
	unsigned char w[8192];
	struct mq_device *d;
	struct mq_queue *q;
	struct batch b;
	struct tbio tb;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 8 << 20), 0);
	snprintf(kv, sizeof(kv), "image=%s", path);
	fill(w, sizeof(w), 17);

	d = IDE_NEW("ide-disk", kv, "write_cache=0");
	q = d->disks[0]->queue;
	ck_assert(!q->limits.write_cache);
	tsync_watch(path);
	batch_init(&b);
	submit(&b, &tb, 'w', q, REQ_OP_WRITE, 64, sizeof(w), w);
	batch_wait(&b);
	ck_assert_uint_eq(b.errors, 0);
	ck_assert_uint_ge(tb.syncs_at_end, 1);
	batch_destroy(&b);
	mq_device_destroy(d);

	d = IDE_NEW("ide-disk", kv, "write_cache=1");
	q = d->disks[0]->queue;
	tsync_watch(path);
	ck_assert_int_eq(io(q, REQ_OP_WRITE, 64, sizeof(w), w), 0);
	ck_assert_uint_eq(tsync_count(), 0);
	ck_assert_int_eq(io(q, REQ_OP_FLUSH, 0, 0, NULL), 0);
	ck_assert_uint_eq(tsync_count(), 1);
	mq_device_destroy(d);
	close(fd);
	unlink(path);
}
END_TEST

/* --- the channel lock ----------------------------------------------- */

/*
 * The test holds the port while both drives get work: every queue_rq
 * finds it busy, requeues its request and plugs the queue for 3 ms
 * (ide_requeue_and_plug), as seed 009 does; none is refused with
 * DEV_RESOURCE.  When the port is let go, the plugged queues come back
 * and both drives are served, though each has its own tag set.
 */
START_TEST(test_port_lock_contention)
{
	struct mq_device *d =
		IDE_NEW("ide", "slave=disk", "hda.size=64M", "hdb.size=64M");
	struct ide_drive *hda = drive_of(d, "hda"), *hdb = drive_of(d, "hdb");
	struct ide_hwif *hwif = hda->hwif;
	struct mq_hw_ctx *ha = hda->queue->queue_hw_ctx[0];
	struct mq_hw_ctx *hb = hdb->queue->queue_hw_ctx[0];
	enum { N = 16 };
	static unsigned char bufs[2 * N][4096];
	struct tbio tbs[2 * N];
	struct batch b;
	unsigned int i, a_done = 0, b_done = 0;

	batch_init(&b);
	ck_assert_ptr_eq(hwif, hdb->hwif);
	ck_assert_int_eq(ide_lock_port(hwif), 0);
	/* Taken: nobody else can have it. */
	ck_assert_int_eq(ide_lock_port(hwif), 1);

	for (i = 0; i < N; i++) {
		/* Far apart, so nothing merges. */
		submit(&b, &tbs[2 * i], 'a', hda->queue, REQ_OP_READ,
		       i * 1024ULL, 4096, bufs[2 * i]);
		submit(&b, &tbs[2 * i + 1], 'b', hdb->queue, REQ_OP_READ,
		       i * 1024ULL, 4096, bufs[2 * i + 1]);
	}
	/*
	 * Both took the loser's path, and came back for another try.  The
	 * driver counts port_busy before it requeues, so wait for both
	 * counters: the second requeue may still be on its way.
	 */
	wait_until(atomic_load(&hda->port_busy) >= 2 &&
		   atomic_load(&hdb->port_busy) >= 2 &&
		   atomic_load(&ha->stats.requeued) >= 2 &&
		   atomic_load(&hb->stats.requeued) >= 2);
	ck_assert_uint_eq(b.done, 0);

	ide_unlock_port(hwif);
	batch_wait(&b);
	ck_assert_uint_eq(b.errors, 0);
	ck_assert_uint_eq(b.done, 2 * N);
	for (i = 0; i < 2 * N; i++) {
		if (b.order[i] == 'a')
			a_done++;
		else
			b_done++;
	}
	ck_assert_uint_eq(a_done, N);
	ck_assert_uint_eq(b_done, N);
	/* Requeued and plugged, never refused. */
	ck_assert_uint_eq(atomic_load(&ha->stats.dev_resource), 0);
	ck_assert_uint_eq(atomic_load(&hb->stats.dev_resource), 0);
	batch_destroy(&b);
	mq_device_destroy(d);
}
END_TEST

/* Both drives busy from several threads: everything completes. */
struct hammer_arg {
	struct mq_queue *q;
	unsigned int seed;
	unsigned int errors;
};

static void *hammer(void *p)
{
	struct hammer_arg *a = p;
	unsigned int i;

	for (i = 0; i < 100; i++) {
		unsigned char w[4096], r[4096];
		uint64_t sector = ((a->seed * 7919 + i * 104729) % 8192) * 8;

		fill(w, sizeof(w), a->seed + i);
		if (io(a->q, REQ_OP_WRITE, sector, sizeof(w), w) ||
		    io(a->q, REQ_OP_READ, sector, sizeof(r), r) ||
		    memcmp(w, r, sizeof(w)))
			a->errors++;
	}
	return NULL;
}

START_TEST(test_both_drives_busy)
{
	struct mq_device *d =
		IDE_NEW("ide", "slave=disk", "hda.size=64M", "hdb.size=64M");
	struct hammer_arg args[4];
	pthread_t t[4];
	unsigned int i;

	for (i = 0; i < 4; i++) {
		args[i] = (struct hammer_arg){
			.q = drive_of(d, i % 2 ? "hdb" : "hda")->queue,
			.seed = i * 1000,
		};
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, &args[i]),
				 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_uint_eq(args[i].errors, 0);
	}
	mq_device_destroy(d);
}
END_TEST

/* --- ide-cd --------------------------------------------------------- */

START_TEST(test_cd_read_only)
{
	char *img = make_image(64), kv[256];
	struct mq_device *d;
	struct ide_drive *drive;
	unsigned char buf[CD_FRAMESIZE] = {0};

	snprintf(kv, sizeof(kv), "image=%s", img);
	d = IDE_NEW("ide-cd", kv);
	drive = drive_of(d, "hda");
	ck_assert(drive->disk.read_only);
	ck_assert_uint_eq(drive->queue->limits.logical_block_size, 2048);
	ck_assert_uint_eq(drive->queue->limits.physical_block_size, 2048);
	ck_assert(!drive->queue->limits.write_cache);
	ck_assert_uint_eq(get_capacity(&drive->disk), 64 * 4);
	ck_assert_uint_eq(drive->queue->tag_set->reserved_tags, 1);
	check_cd_block(drive->queue, 0);
	check_cd_block(drive->queue, 63);
	/* READ_10 built by the prep step */
	ck_assert_uint_eq(atomic_load(&drive->cmds[GPCMD_READ_10]), 2);

	tlog_clear();
	ck_assert_int_eq(io(drive->queue, REQ_OP_WRITE, 8, CD_FRAMESIZE, buf),
			 EPERM);
	ck_assert_log("hda: write to a read-only CD-ROM refused");
	/* It never reached the drive. */
	ck_assert_uint_eq(atomic_load(&drive->cmds[GPCMD_WRITE_10]), 0);
	/* Misaligned: refused before the drive. */
	ck_assert_int_eq(io(drive->queue, REQ_OP_READ, 1, 512, buf), EIO);
	ck_assert_log("misaligned");
	mq_device_destroy(d);
	free_image(img);
}
END_TEST

/*
 * A read of a bad block ends in CHECK CONDITION; the REQUEST SENSE comes
 * from the reserved tag and is the next command the drive sees, ahead of
 * reads that were queued before it.
 */
static const char *const elevators[] = {"none", "mq-deadline", "kyber", "bfq"};

START_TEST(test_sense_at_head)
{
	const char *elv = elevators[_i];
	char *img = make_image(64), kv[256], buf[256];
	struct mq_device *d;
	struct ide_drive *drive;
	struct mq_hw_ctx *hctx;
	static unsigned char bufs[4][CD_FRAMESIZE];
	struct tbio tbs[4];
	struct batch b;
	unsigned int i, t0, n, p;

	snprintf(kv, sizeof(kv), "image=%s", img);
	d = IDE_NEW("ide-cd", kv);
	drive = drive_of(d, "hda");
	hctx = drive->queue->queue_hw_ctx[0];
	if (strcmp(elv, "none")) {
		const struct elevator_type *et = elevator_find(elv);

		ck_assert_msg(et != NULL, "no elevator %s", elv);
		ck_assert_int_eq(elevator_switch(drive->queue, et), 0);
	} else {
		ck_assert_int_eq(elevator_switch(drive->queue, NULL), 0);
	}
	ck_assert_str_eq(mq_elevator_name(drive->queue), elv);
	ck_assert_int_eq(
		disk_fire_fault(&drive->disk, "media_error", "5", NULL), 0);

	/* Hold the port so that all four are queued together. */
	ck_assert_int_eq(ide_lock_port(drive->hwif), 0);
	batch_init(&b);
	tlog_clear();
	t0 = drive->trace_n;
	submit(&b, &tbs[0], '5', drive->queue, REQ_OP_READ, 5 * 4, CD_FRAMESIZE,
	       bufs[0]);
	for (i = 1; i < 4; i++)
		submit(&b, &tbs[i], '0' + i, drive->queue, REQ_OP_READ,
		       i * 16 * 4ULL, CD_FRAMESIZE, bufs[i]);
	/* all four took the loser's path: requeued, the queue plugged */
	wait_until(atomic_load(&drive->port_busy) >= 4 &&
		   atomic_load(&hctx->stats.requeued) >= 4);
	ide_unlock_port(drive->hwif);
	batch_wait(&b);

	ck_assert_uint_eq(b.errors, 1);
	ck_assert_int_eq(tbs[0].bio.bi_status, EIO);
	for (i = 1; i < 4; i++)
		ck_assert_int_eq(tbs[i].bio.bi_status, 0);

	/*
	 * The drive's commands: READ(5), REQUEST SENSE at once, the other
	 * reads around them.  READ(5) is usually first; a requeue that
	 * raced the test's submissions may send one read before it, but
	 * the sense still jumps the reads queued behind it.
	 */
	n = drive->trace_n - t0;
	ck_assert_uint_eq(n, 5);
	for (p = 0; p < 5; p++)
		if (drive->trace[(t0 + p) % IDE_TRACE_LEN].op ==
			    GPCMD_READ_10 &&
		    drive->trace[(t0 + p) % IDE_TRACE_LEN].sector == 20)
			break;
	ck_assert_msg(p < 3, "READ(5) at %u of 5: nothing queued behind it", p);
	ck_assert_uint_eq(drive->trace[(t0 + p + 1) % IDE_TRACE_LEN].op,
			  GPCMD_REQUEST_SENSE);
	for (i = 0; i < 5; i++)
		if (i != p + 1)
			ck_assert_uint_eq(
				drive->trace[(t0 + i) % IDE_TRACE_LEN].op,
				GPCMD_READ_10);

	ck_assert_uint_eq(atomic_load(&drive->cd->sense_requests), 1);
	ck_assert_uint_eq(atomic_load(&drive->cd->sense_reserved), 1);
	ck_assert_log("hda: media error (bad sector): read failed at block 5");
	ck_assert_log("sense key 0x3 MEDIUM ERROR, asc 0x11, ascq 0x00");
	show(&drive->disk, "sense", buf, sizeof(buf));
	ck_assert_str_eq(buf, "key=0x3 asc=0x11 ascq=0x00 (MEDIUM ERROR)");

	/* The bad block stays bad; the others read. */
	ck_assert_int_eq(
		io(drive->queue, REQ_OP_READ, 5 * 4, CD_FRAMESIZE, bufs[0]),
		EIO);
	check_cd_block(drive->queue, 4);
	check_cd_block(drive->queue, 6);
	/* The reserved tag went back each time. */
	ck_assert_uint_eq(atomic_load(&drive->cd->sense_reserved), 2);
	ck_assert_ptr_null(drive->sense_rq);

	/* The one-shot form: the next read fails, the one after works. */
	ck_assert_int_eq(disk_fire_fault(&drive->disk, "media_error", "", NULL),
			 0);
	ck_assert_int_eq(
		io(drive->queue, REQ_OP_READ, 8, CD_FRAMESIZE, bufs[1]), EIO);
	check_cd_block(drive->queue, 2);
	ck_assert_int_eq(
		disk_fire_fault(&drive->disk, "media_error", "x", NULL),
		EINVAL);
	batch_destroy(&b);
	mq_device_destroy(d);
	free_image(img);
}
END_TEST

/* Empty tray: reads fail with EIO, and the log says why. */
START_TEST(test_no_medium)
{
	struct mq_device *d = IDE_NEW("ide", "master=none", "slave=cd");
	struct ide_drive *drive = drive_of(d, "hdb");
	unsigned char buf[CD_FRAMESIZE];
	char media[256];

	ck_assert_uint_eq(get_capacity(&drive->disk), 0);
	show(&drive->disk, "media", media, sizeof(media));
	ck_assert_str_eq(media, "none (tray closed)");
	tlog_clear();
	ck_assert_int_eq(io(drive->queue, REQ_OP_READ, 0, CD_FRAMESIZE, buf),
			 EIO);
	ck_assert_log("hdb: no medium: read failed");
	ck_assert_log("asc 0x3a");
	ck_assert_uint_eq(atomic_load(&drive->cd->sense_requests), 1);
	ck_assert_uint_eq(atomic_load(&drive->cd->sense_reserved), 1);
	/* insert without a path and nothing ever inserted: the answer says so
	 */
	{
		struct mq_err e = {""};

		ck_assert_int_eq(
			disk_fire_fault(&drive->disk, "insert", "", &e),
			ENOENT);
		ck_assert_str_eq(e.msg, "no medium was ever inserted");
	}
	mq_device_destroy(d);
}
END_TEST

/*
 * Eject, then insert: the drive spins up and answers NOT READY, becoming
 * ready; the read is requeued (a breather) until it is ready.
 */
START_TEST(test_eject_insert_breather)
{
	char *img = make_image(32), *img2 = make_image(48), kv[256];
	char media[512];
	struct mq_device *d;
	struct ide_drive *drive;
	struct mq_hw_ctx *hctx;
	unsigned char buf[CD_FRAMESIZE];
	unsigned long requeued;

	snprintf(kv, sizeof(kv), "image=%s", img);
	d = IDE_NEW("ide-cd", kv);
	drive = drive_of(d, "hda");
	hctx = drive->queue->queue_hw_ctx[0];
	check_cd_block(drive->queue, 3);
	ck_assert_uint_eq(atomic_load(&drive->cd->breathers), 0);

	ck_assert_int_eq(disk_fire_fault(&drive->disk, "eject", NULL, NULL), 0);
	ck_assert_uint_eq(get_capacity(&drive->disk), 0);
	show(&drive->disk, "media", media, sizeof(media));
	ck_assert_str_eq(media, "none (tray open)");
	tlog_clear();
	ck_assert_int_eq(io(drive->queue, REQ_OP_READ, 0, CD_FRAMESIZE, buf),
			 EIO);
	ck_assert_log("hda: no medium: read failed");
	ck_assert_log("tray open");

	/* The same disc again. */
	ck_assert_int_eq(disk_fire_fault(&drive->disk, "insert", "", NULL), 0);
	ck_assert_uint_eq(get_capacity(&drive->disk), 32 * 4);
	show(&drive->disk, "media", media, sizeof(media));
	ck_assert_msg(strstr(media, "spinning-up"), "%s", media);
	requeued = atomic_load(&hctx->stats.requeued);
	check_cd_block(drive->queue, 7);
	ck_assert_uint_ge(atomic_load(&drive->cd->breathers), 1);
	ck_assert_uint_gt(atomic_load(&hctx->stats.requeued), requeued);
	show(&drive->disk, "media", media, sizeof(media));
	ck_assert_msg(strstr(media, "ready") && strstr(media, img), "%s",
		      media);
	/* Ready now: no more breathers. */
	requeued = atomic_load(&drive->cd->breathers);
	check_cd_block(drive->queue, 8);
	ck_assert_uint_eq(atomic_load(&drive->cd->breathers), requeued);
	/* The breathers' requeues left nothing counted in flight. */
	wait_until(atomic_load(&drive->queue->stats.in_flight[0]) == 0);

	/* Another disc. */
	ck_assert_int_eq(disk_fire_fault(&drive->disk, "eject", "", NULL), 0);
	ck_assert_int_eq(disk_fire_fault(&drive->disk, "insert", img2, NULL),
			 0);
	ck_assert_uint_eq(get_capacity(&drive->disk), 48 * 4);
	check_cd_block(drive->queue, 47);
	ck_assert_int_eq(disk_fire_fault(&drive->disk, "insert",
					 "/nonexistent.iso", NULL),
			 ENOENT);
	/* A failed insert leaves the disc that was there. */
	check_cd_block(drive->queue, 40);
	mq_device_destroy(d);
	free_image(img);
	free_image(img2);
}
END_TEST

/*
 * A scheduler switch while the CD spins up after insert: the switch's
 * freeze waits for the read, the read's NOT READY needs a REQUEST SENSE,
 * and that sense must be let into the frozen queue, or the read fails with
 * EIO and the switch was what failed it.  Each try holds the read back
 * (stopped hw queue) until the freeze has begun, so the sense is always
 * allocated inside the freeze.
 */
struct switch_arg {
	struct mq_queue *q;
	const struct elevator_type *et;
	int err;
};

static void *switch_thread(void *p)
{
	struct switch_arg *a = p;

	a->err = elevator_switch(a->q, a->et);
	return NULL;
}

START_TEST(test_switch_during_breather)
{
	char *img = make_image(32), kv[256];
	unsigned char want[CD_FRAMESIZE], got[CD_FRAMESIZE];
	unsigned long breathers, senses;
	struct mq_device *d;
	struct ide_drive *drive;
	struct mq_queue *q;
	struct switch_arg sa;
	struct batch b;
	struct tbio tb;
	pthread_t t;
	unsigned int i, eio = 0;

	snprintf(kv, sizeof(kv), "image=%s", img);
	d = IDE_NEW("ide-cd", kv);
	drive = drive_of(d, "hda");
	q = drive->queue;
	check_cd_block(q, 1);
	breathers = atomic_load(&drive->cd->breathers);
	senses = atomic_load(&drive->cd->sense_requests);
	for (i = 0; i < 50; i++) {
		const char *elv = elevators[(i + 1) % 4];

		ck_assert_int_eq(
			disk_fire_fault(&drive->disk, "insert", "", NULL), 0);
		mq_stop_hw_queues(q);
		batch_init(&b);
		memset(got, 0, sizeof(got));
		submit(&b, &tb, 'r', q, REQ_OP_READ, (i % 32) * 4ULL,
		       CD_FRAMESIZE, got);
		sa = (struct switch_arg){
			.q = q,
			.et = strcmp(elv, "none") ? elevator_find(elv) : NULL,
		};
		ck_assert(sa.et || !strcmp(elv, "none"));
		ck_assert_int_eq(pthread_create(&t, NULL, switch_thread, &sa),
				 0);
		wait_until(atomic_load(&q->frozen));
		mq_start_hw_queues(q);
		batch_wait(&b);
		if (tb.bio.bi_status == EIO)
			eio++;
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_int_eq(sa.err, 0);
		ck_assert_str_eq(mq_elevator_name(q), elv);
		fill(want, sizeof(want), i % 32);
		ck_assert_msg(tb.bio.bi_status == 0 &&
				      !memcmp(want, got, sizeof(want)),
			      "try %u (to %s): status %d, %u EIO so far", i,
			      elv, tb.bio.bi_status, eio);
		batch_destroy(&b);
	}
	ck_assert_uint_eq(eio, 0);
	/* Every try took its breather, through a sense inside the freeze. */
	ck_assert_uint_ge(atomic_load(&drive->cd->breathers), breathers + 50);
	ck_assert_uint_ge(atomic_load(&drive->cd->sense_requests), senses + 50);
	/*
	 * Each breather requeued a started read: none is left in flight once
	 * the last request is freed (its bio ends a moment before that).
	 */
	wait_until(atomic_load(&q->stats.in_flight[0]) == 0);
	ck_assert_uint_eq(atomic_load(&q->stats.in_flight[1]), 0);
	mq_device_destroy(d);
	free_image(img);
}
END_TEST

/* A CD and a disk on one channel: the CD's sense and the disk's I/O mix. */
START_TEST(test_cd_and_disk_channel)
{
	char *img = make_image(64), kv[256];
	struct mq_device *d;
	struct ide_drive *cd, *disk;
	struct batch b;
	struct tbio tbs[40];
	static unsigned char bufs[40][CD_FRAMESIZE];
	unsigned int i;

	snprintf(kv, sizeof(kv), "hdb.image=%s", img);
	d = IDE_NEW("ide", "slave=cd", kv, "hda.size=64M");
	cd = drive_of(d, "hdb");
	disk = drive_of(d, "hda");
	ck_assert_int_eq(disk_fire_fault(&cd->disk, "media_error", "41", NULL),
			 0);
	batch_init(&b);
	for (i = 0; i < 20; i++) {
		submit(&b, &tbs[2 * i], 'c', cd->queue, REQ_OP_READ,
		       (i % 2 ? 41 : i) * 4ULL, CD_FRAMESIZE, bufs[2 * i]);
		submit(&b, &tbs[2 * i + 1], 'd', disk->queue, REQ_OP_READ,
		       i * 64ULL, CD_FRAMESIZE, bufs[2 * i + 1]);
	}
	batch_wait(&b);
	/* The ten reads of block 41 failed; everything else worked. */
	ck_assert_uint_eq(b.errors, 10);
	for (i = 0; i < 20; i++) {
		ck_assert_int_eq(tbs[2 * i].bio.bi_status, i % 2 ? EIO : 0);
		ck_assert_int_eq(tbs[2 * i + 1].bio.bi_status, 0);
	}
	/*
	 * Each failure asked for its sense on the reserved tag.  Rarely (a
	 * loaded ASan run) the last sense's tag is not back yet, held a
	 * moment by a timeout scan, and the read ends without one, as in
	 * Linux: counted apart.
	 */
	ck_assert_uint_eq(atomic_load(&cd->cd->sense_reserved),
			  atomic_load(&cd->cd->sense_requests));
	ck_assert_uint_eq(atomic_load(&cd->cd->sense_requests) +
				  atomic_load(&cd->cd->sense_unqueued),
			  10);
	ck_assert_uint_ge(atomic_load(&cd->cd->sense_requests), 5);
	batch_destroy(&b);
	mq_device_destroy(d);
	free_image(img);
}
END_TEST

static Suite *ide_suite(void)
{
	Suite *s = suite_create("ide");
	TCase *tc;

	tc = tcase_create("config");
	tcase_add_test(tc, test_disk_defaults);
	tcase_add_test(tc, test_channel_config);
	suite_add_tcase(s, tc);

	tc = tcase_create("disk");
	tcase_add_test(tc, test_lba28_vs_lba48);
	tcase_add_test(tc, test_pio_commands);
	tcase_add_test(tc, test_max_sectors);
	tcase_add_test(tc, test_flush_becomes_flush_cache);
	tcase_add_test(tc, test_disk_image);
	tcase_add_test(tc, test_disk_write_through);
	suite_add_tcase(s, tc);

	tc = tcase_create("channel");
	tcase_add_test(tc, test_port_lock_contention);
	tcase_add_test(tc, test_both_drives_busy);
	suite_add_tcase(s, tc);

	tc = tcase_create("cd");
	tcase_add_test(tc, test_cd_read_only);
	tcase_add_loop_test(tc, test_sense_at_head, 0,
			    sizeof(elevators) / sizeof(elevators[0]));
	tcase_add_test(tc, test_no_medium);
	tcase_add_test(tc, test_eject_insert_breather);
	tcase_add_test(tc, test_cd_and_disk_channel);
	tcase_add_test(tc, test_switch_during_breather);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(ide_suite());
}
