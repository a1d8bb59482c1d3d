/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unit tests for the IDE stack (backends/ide), made through the device
 * layer and driven with bios, with time off (time_scale=0): the channel
 * lock shared by hda and hdb and its 3 ms plug, REQUEST SENSE from the
 * reserved tag at the head of the queue, a read failed while the CD spins
 * up, read-only refusal, eject and insert, LBA28 against LBA48, FLUSH
 * CACHE from the prep step.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/device.h"
#include "backends/ide/ide.h"
#include "backends/ide/ide-dev.h"
#include "server/mq/blk-trace.h"
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

/* Submit with end_io, which must end in batch_end_io. */
static void submit_end_io(struct batch *b, struct tbio *tb, char tag,
			  struct mq_queue *q, enum req_op op, uint64_t sector,
			  uint32_t len, void *buf, bio_end_io_t *end_io)
{
	bio_init(&tb->bio, op, sector, len, buf);
	tb->bio.bi_submitter = 1;
	tb->bio.bi_end_io = end_io;
	tb->bio.bi_private = tb;
	tb->b = b;
	tb->tag = tag;
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	mq_submit_bio(mq_get_ctx(q, 0), &tb->bio);
}

static void submit(struct batch *b, struct tbio *tb, char tag,
		   struct mq_queue *q, enum req_op op, uint64_t sector,
		   uint32_t len, void *buf)
{
	submit_end_io(b, tb, tag, q, op, sector, len, buf, batch_end_io);
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

/* --- what the core traced, and the channel's interrupt held ------------ */

/*
 * The core's trace points for one queue, with their times (mq_now_ns):
 * D when a request goes to queue_rq, R when it is requeued, I when it is
 * inserted, C when it completes.
 */
struct ev_log {
	struct blk_trace bt;
	pthread_mutex_t lock;
	unsigned int n;
	struct ev_rec {
		enum blk_trace_act act;
		enum req_op op;
		uint64_t sector;
		uint64_t ns;
	} ev[1024];
};

static void ev_log_event(struct blk_trace *bt, const struct blk_trace_event *ev)
{
	struct ev_log *l = container_of(bt, struct ev_log, bt);

	pthread_mutex_lock(&l->lock);
	if (l->n < sizeof(l->ev) / sizeof(l->ev[0]))
		l->ev[l->n++] = (struct ev_rec){ev->act, ev->op, ev->sector,
						ev->time_ns};
	pthread_mutex_unlock(&l->lock);
}

static void ev_log_start(struct ev_log *l, struct mq_queue *q)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	l->bt.event = ev_log_event;
	blk_trace_set(q, &l->bt);
}

static void ev_log_stop(struct ev_log *l, struct mq_queue *q)
{
	blk_trace_set(q, NULL);
	pthread_mutex_destroy(&l->lock);
}

/* How many act events the request at sector had. */
static unsigned int ev_count(struct ev_log *l, enum blk_trace_act act,
			     uint64_t sector)
{
	unsigned int i, n = 0;

	pthread_mutex_lock(&l->lock);
	for (i = 0; i < l->n; i++)
		if (l->ev[i].act == act && l->ev[i].sector == sector)
			n++;
	pthread_mutex_unlock(&l->lock);
	return n;
}

/* Is the request at sector's last event act? */
static bool ev_last_is(struct ev_log *l, enum blk_trace_act act,
		       uint64_t sector)
{
	bool found = false, is = false;
	unsigned int i;

	pthread_mutex_lock(&l->lock);
	for (i = l->n; i-- > 0 && !found;)
		if (l->ev[i].sector == sector &&
		    l->ev[i].act != BLK_TRACE_QUEUE &&
		    l->ev[i].act != BLK_TRACE_GETRQ) {
			found = true;
			is = l->ev[i].act == act;
		}
	pthread_mutex_unlock(&l->lock);
	return is;
}

/*
 * Work on the channel's irq thread that holds it until released: an
 * interrupt raised meanwhile (a command the drive finished) waits.
 */
struct irq_gate {
	struct irq_work work;
	sem_t entered, release;
};

static void irq_gate_fn(struct irq_work *work)
{
	struct irq_gate *g = container_of(work, struct irq_gate, work);

	sem_post(&g->entered);
	while (sem_wait(&g->release))
		;
}

static void irq_gate_close(struct irq_gate *g, struct ide_hwif *hwif)
{
	ck_assert_int_eq(sem_init(&g->entered, 0, 0), 0);
	ck_assert_int_eq(sem_init(&g->release, 0, 0), 0);
	irq_raise(hwif->irq, &g->work, irq_gate_fn, 0);
	while (sem_wait(&g->entered))
		;
}

static void irq_gate_open(struct irq_gate *g)
{
	sem_post(&g->release);
}

static void irq_gate_destroy(struct irq_gate *g)
{
	sem_destroy(&g->entered);
	sem_destroy(&g->release);
}

static unsigned int trace_count(struct ide_drive *drive)
{
	unsigned int n;

	pthread_mutex_lock(&drive->hwif->lock);
	n = drive->trace_n;
	pthread_mutex_unlock(&drive->hwif->lock);
	return n;
}

static bool port_busy(struct ide_hwif *hwif)
{
	bool busy;

	pthread_mutex_lock(&hwif->lock);
	busy = hwif->busy;
	pthread_mutex_unlock(&hwif->lock);
	return busy;
}

/* No dispatch loop runs on hctx (after a stop: none will reach queue_rq). */
static bool dispatch_idle(struct mq_hw_ctx *hctx)
{
	bool running;

	pthread_mutex_lock(&hctx->lock);
	running = hctx->running;
	pthread_mutex_unlock(&hctx->lock);
	return !running;
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

/*
 * The plug of ide_requeue_and_plug with a request: requeued, and the
 * requeue list kicked IDE_REQUEUE_DELAY (3) ms later, so a request that
 * found the port busy reaches queue_rq again no sooner than 3 ms after its
 * requeue, and does so by itself, with nothing else happening.  Times are
 * the core's trace clock; kblockd never runs a work before its time, so a
 * shorter gap means a kick that came early.
 */
START_TEST(test_requeue_plug_delay)
{
	struct mq_device *d = IDE_NEW("ide-disk", "size=64M", "scheduler=none");
	struct ide_drive *drive = drive_of(d, "hda");
	struct mq_queue *q = drive->queue;
	const uint64_t plug_ns = IDE_REQUEUE_DELAY * 1000000ull;
	static unsigned char buf[4096];
	struct ev_log evl;
	struct batch b;
	struct tbio tb;
	uint64_t requeued_ns = 0;
	unsigned int i, gaps = 0;

	batch_init(&b);
	ev_log_start(&evl, q);
	ck_assert_int_eq(ide_lock_port(drive->hwif), 0);
	submit(&b, &tb, 'r', q, REQ_OP_READ, 64, sizeof(buf), buf);
	/* Three tries on a port the test holds: two came back by themselves. */
	wait_until(ev_count(&evl, BLK_TRACE_ISSUE, 64) >= 3);
	ck_assert_uint_eq(b.done, 0);
	ide_unlock_port(drive->hwif);
	batch_wait(&b);
	ev_log_stop(&evl, q);
	ck_assert_int_eq(tb.bio.bi_status, 0);
	ck_assert_uint_ge(atomic_load(&drive->port_busy), 2);

	/* Every requeue, then the next issue at least 3 ms later. */
	for (i = 0; i < evl.n; i++) {
		const struct ev_rec *e = &evl.ev[i];

		if (e->sector != 64)
			continue;
		if (e->act == BLK_TRACE_REQUEUE) {
			requeued_ns = e->ns;
		} else if (e->act == BLK_TRACE_ISSUE && requeued_ns) {
			ck_assert_msg(e->ns >= requeued_ns + plug_ns,
				      "issued again %.3f ms after its requeue, "
				      "not %u ms",
				      (e->ns - requeued_ns) / 1e6,
				      IDE_REQUEUE_DELAY);
			requeued_ns = 0;
			gaps++;
		}
	}
	ck_assert_uint_ge(gaps, 2);
	batch_destroy(&b);
	mq_device_destroy(d);
}
END_TEST

/*
 * ide_intr's plug_device: once the handler is done and the port let go,
 * the drive's queue runs again 3 ms later (mq_delay_run_hw_queue), not at
 * once.  The bio ends inside the handler, before that; the next run of
 * the idle queue is that delayed one, from the hctx's run work armed for
 * 3 ms after the interrupt.  No elevator, so that no other delayed run is
 * armed (mq-deadline, bfq and kyber may rerun themselves after 3 ms too).
 */
struct intr_seen {
	struct tbio tb;
	struct mq_hw_ctx *hctx;
	uint64_t end_ns;
	unsigned long runs_at_end;
};

static void intr_seen_end_io(struct bio *bio)
{
	struct intr_seen *s = container_of(bio, struct intr_seen, tb.bio);

	s->end_ns = mq_now_ns();
	s->runs_at_end = atomic_load(&s->hctx->stats.run);
	batch_end_io(bio);
}

START_TEST(test_intr_plug_delay)
{
	struct mq_device *d = IDE_NEW("ide-disk", "size=64M", "scheduler=none");
	struct ide_drive *drive = drive_of(d, "hda");
	struct mq_queue *q = drive->queue;
	struct mq_hw_ctx *hctx = q->queue_hw_ctx[0];
	const uint64_t plug_ns = IDE_REQUEUE_DELAY * 1000000ull;
	static unsigned char buf[4096];
	struct intr_seen s = {.hctx = hctx};
	struct batch b;
	uint64_t seen_ns;
	unsigned int round;

	for (round = 0; round < 3; round++) {
		batch_init(&b);
		submit_end_io(&b, &s.tb, 'r', q, REQ_OP_READ, 128 * round,
			      sizeof(buf), buf, intr_seen_end_io);
		batch_wait(&b);
		ck_assert_int_eq(s.tb.bio.bi_status, 0);
		wait_until(atomic_load(&hctx->stats.run) > s.runs_at_end);
		seen_ns = mq_now_ns();
		ck_assert_msg(seen_ns >= s.end_ns + plug_ns,
			      "the queue ran %.3f ms after the interrupt, not "
			      "%u ms",
			      (seen_ns - s.end_ns) / 1e6, IDE_REQUEUE_DELAY);
		ck_assert_msg(
			hctx->run_work.when_ns >= s.end_ns + plug_ns,
			"the run work was armed for %.3f ms after the "
			"interrupt, not %u ms",
			((double)hctx->run_work.when_ns - (double)s.end_ns) /
				1e6,
			IDE_REQUEUE_DELAY);
		batch_destroy(&b);
	}
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
 * from the reserved tag and goes in at the head of the queue
 * (mq_sched_insert_request(rq, true, ...), seed 008), ahead of reads that
 * are queued already.  Nothing keeps those reads off the drive otherwise
 * (seed 009 has no such rule): the head insertion alone puts the sense
 * first.
 *
 * The scene, made the same every time: READ(5) is on the wire and its
 * interrupt held on the channel's irq thread; three reads find the port
 * busy, are requeued (at the head of the elevator, as every requeue is)
 * and wait in the stopped queue.  Then READ(5)'s interrupt runs, its sense
 * is inserted, and the queue starts: the drive's next command tells where
 * the sense went.  With no elevator and with bfq the sense and the
 * requeued reads share a list, so a sense at the tail would come after
 * them; mq-deadline takes the driver's own requests (its bypass list)
 * before any other, head or tail; kyber serves them by domain and goes on
 * with its batch of reads first, so there only the outcome is checked.
 */
static const char *const elevators[] = {"none", "mq-deadline", "kyber", "bfq"};

START_TEST(test_sense_at_head)
{
	const char *elv = elevators[_i];
	char *img = make_image(64), kv[256], buf[256];
	bool order_shows = strcmp(elv, "kyber") != 0;
	struct mq_device *d;
	struct ide_drive *drive;
	struct mq_hw_ctx *hctx;
	static unsigned char bufs[4][CD_FRAMESIZE];
	struct irq_gate gate;
	struct ev_log evl;
	struct tbio tbs[4];
	struct batch b;
	unsigned int i, t0, t1;

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

	batch_init(&b);
	tlog_clear();
	ev_log_start(&evl, drive->queue);
	/* READ(5) goes to the drive; its interrupt waits behind the gate. */
	irq_gate_close(&gate, drive->hwif);
	t0 = trace_count(drive);
	submit(&b, &tbs[0], '5', drive->queue, REQ_OP_READ, 5 * 4, CD_FRAMESIZE,
	       bufs[0]);
	wait_until(trace_count(drive) == t0 + 1);
	ck_assert_uint_eq(drive->trace[t0 % IDE_TRACE_LEN].sector, 5 * 4);
	/* The others find the port busy and are requeued. */
	for (i = 1; i < 4; i++)
		submit(&b, &tbs[i], '0' + i, drive->queue, REQ_OP_READ,
		       i * 16 * 4ULL, CD_FRAMESIZE, bufs[i]);
	wait_until(atomic_load(&drive->port_busy) >= 3 &&
		   atomic_load(&hctx->stats.requeued) >= 3);
	/* Stop the queue; once no dispatch runs, they wait inserted. */
	mq_stop_hw_queues(drive->queue);
	wait_until(dispatch_idle(hctx));
	for (i = 1; i < 4; i++)
		wait_until(ev_last_is(&evl, BLK_TRACE_INSERT, i * 16 * 4ULL));
	ck_assert_uint_eq(trace_count(drive), t0 + 1);

	/* READ(5)'s interrupt: CHECK CONDITION, the sense is inserted. */
	irq_gate_open(&gate);
	wait_until(!port_busy(drive->hwif));
	ck_assert_ptr_nonnull(drive->sense_rq);
	ck_assert_uint_eq(trace_count(drive), t0 + 1);
	t1 = t0 + 1;
	mq_start_hw_queues(drive->queue);
	batch_wait(&b);
	ev_log_stop(&evl, drive->queue);
	irq_gate_destroy(&gate);

	ck_assert_uint_eq(b.errors, 1);
	ck_assert_int_eq(tbs[0].bio.bi_status, EIO);
	for (i = 1; i < 4; i++)
		ck_assert_int_eq(tbs[i].bio.bi_status, 0);
	for (i = 1; i < 4; i++) {
		unsigned char want[CD_FRAMESIZE];

		fill(want, sizeof(want), i * 16);
		ck_assert(memcmp(want, bufs[i], sizeof(want)) == 0);
	}

	/* The drive's commands: READ(5), then the sense and the reads. */
	ck_assert_uint_eq(trace_count(drive) - t0, 5);
	ck_assert_uint_eq(drive->trace[t0 % IDE_TRACE_LEN].op, GPCMD_READ_10);
	{
		unsigned int senses = 0;

		for (i = t1; i < t0 + 5; i++)
			if (drive->trace[i % IDE_TRACE_LEN].op ==
			    GPCMD_REQUEST_SENSE)
				senses++;
		ck_assert_uint_eq(senses, 1);
	}
	if (order_shows)
		ck_assert_msg(
			drive->trace[t1 % IDE_TRACE_LEN].op ==
				GPCMD_REQUEST_SENSE,
			"%s: the drive got 0x%02x (sector %llu) before "
			"the REQUEST SENSE",
			elv, drive->trace[t1 % IDE_TRACE_LEN].op,
			(unsigned long long)drive->trace[t1 % IDE_TRACE_LEN]
				.sector);

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

/*
 * Until its REQUEST SENSE has run, nothing holds the drive's other
 * requests back (seed 009 has no such rule; only the head insertion puts
 * the sense first).  Under kyber the sense (domain "other") waits while
 * the read batch goes on: a read queued before the sense reaches the
 * drive first, and the failed read still ends with its sense, which the
 * modelled drive keeps over a command that succeeds.
 */
START_TEST(test_sense_holds_nothing_back)
{
	char *img = make_image(64), kv[256];
	static unsigned char bufs[2][CD_FRAMESIZE];
	struct mq_device *d;
	struct ide_drive *drive;
	struct mq_hw_ctx *hctx;
	struct irq_gate gate;
	struct tbio tbs[2];
	struct batch b;
	unsigned int t0;

	snprintf(kv, sizeof(kv), "image=%s", img);
	d = IDE_NEW("ide-cd", kv);
	drive = drive_of(d, "hda");
	hctx = drive->queue->queue_hw_ctx[0];
	ck_assert_int_eq(elevator_switch(drive->queue, elevator_find("kyber")),
			 0);
	ck_assert_int_eq(
		disk_fire_fault(&drive->disk, "media_error", "5", NULL), 0);
	batch_init(&b);
	tlog_clear();
	irq_gate_close(&gate, drive->hwif);
	t0 = trace_count(drive);
	submit(&b, &tbs[0], '5', drive->queue, REQ_OP_READ, 5 * 4, CD_FRAMESIZE,
	       bufs[0]);
	wait_until(trace_count(drive) == t0 + 1);
	/* A read queued while READ(5) is on the wire, its queue stopped. */
	mq_stop_hw_queues(drive->queue);
	wait_until(dispatch_idle(hctx));
	submit(&b, &tbs[1], '1', drive->queue, REQ_OP_READ, 16 * 4,
	       CD_FRAMESIZE, bufs[1]);
	/* READ(5) fails; its sense goes in behind the read's batch. */
	irq_gate_open(&gate);
	wait_until(!port_busy(drive->hwif));
	ck_assert_ptr_nonnull(drive->sense_rq);
	mq_start_hw_queues(drive->queue);
	batch_wait(&b);
	irq_gate_destroy(&gate);

	ck_assert_int_eq(tbs[0].bio.bi_status, EIO);
	ck_assert_int_eq(tbs[1].bio.bi_status, 0);
	ck_assert_uint_eq(trace_count(drive) - t0, 3);
	ck_assert_uint_eq(drive->trace[(t0 + 1) % IDE_TRACE_LEN].op,
			  GPCMD_READ_10);
	ck_assert_uint_eq(drive->trace[(t0 + 1) % IDE_TRACE_LEN].sector,
			  16 * 4);
	ck_assert_uint_eq(drive->trace[(t0 + 2) % IDE_TRACE_LEN].op,
			  GPCMD_REQUEST_SENSE);
	ck_assert_log("hda: media error (bad sector): read failed at block 5");
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
 * ready.  A read it is not ready for fails, as cdrom_decode_status fails
 * it ("tray open"): only writes take breathers.  Once the drive is ready
 * (with time off, after the one NOT READY), reads work.
 */
START_TEST(test_eject_insert_not_ready)
{
	char *img = make_image(32), *img2 = make_image(48), kv[256];
	char media[512], sense[256];
	struct mq_device *d;
	struct ide_drive *drive;
	unsigned char buf[CD_FRAMESIZE];
	unsigned long reads, senses;

	snprintf(kv, sizeof(kv), "image=%s", img);
	d = IDE_NEW("ide-cd", kv);
	drive = drive_of(d, "hda");
	check_cd_block(drive->queue, 3);

	ck_assert_int_eq(disk_fire_fault(&drive->disk, "eject", NULL, NULL), 0);
	ck_assert_uint_eq(get_capacity(&drive->disk), 0);
	show(&drive->disk, "media", media, sizeof(media));
	ck_assert_str_eq(media, "none (tray open)");
	tlog_clear();
	ck_assert_int_eq(io(drive->queue, REQ_OP_READ, 0, CD_FRAMESIZE, buf),
			 EIO);
	ck_assert_log("hda: no medium: read failed");
	ck_assert_log("tray open");

	/* The same disc again: the first read finds it spinning up. */
	ck_assert_int_eq(disk_fire_fault(&drive->disk, "insert", "", NULL), 0);
	ck_assert_uint_eq(get_capacity(&drive->disk), 32 * 4);
	show(&drive->disk, "media", media, sizeof(media));
	ck_assert_msg(strstr(media, "spinning-up"), "%s", media);
	reads = atomic_load(&drive->cmds[GPCMD_READ_10]);
	senses = atomic_load(&drive->cd->sense_requests);
	tlog_clear();
	ck_assert_int_eq(
		io(drive->queue, REQ_OP_READ, 7 * 4, CD_FRAMESIZE, buf), EIO);
	ck_assert_log("hda: tray open: read failed (sense key 0x2 NOT READY, "
		      "asc 0x04, ascq 0x01: becoming ready)");
	show(&drive->disk, "sense", sense, sizeof(sense));
	ck_assert_str_eq(sense, "key=0x2 asc=0x04 ascq=0x01 (NOT READY)");
	/*
	 * Failed through its sense, with no breather: the read went to the
	 * drive once.  (The sense itself may find the port still held by
	 * the read's interrupt and be requeued with the plug.)
	 */
	ck_assert_uint_eq(atomic_load(&drive->cd->sense_requests), senses + 1);
	ck_assert_uint_eq(atomic_load(&drive->cd->breathers), 0);
	ck_assert_uint_eq(atomic_load(&drive->cmds[GPCMD_READ_10]), reads + 1);
	/* Ready now: the read works, still without a breather. */
	check_cd_block(drive->queue, 7);
	check_cd_block(drive->queue, 8);
	ck_assert_uint_eq(atomic_load(&drive->cd->breathers), 0);
	show(&drive->disk, "media", media, sizeof(media));
	ck_assert_msg(strstr(media, "ready") && strstr(media, img), "%s",
		      media);

	/* Another disc. */
	ck_assert_int_eq(disk_fire_fault(&drive->disk, "eject", "", NULL), 0);
	ck_assert_int_eq(disk_fire_fault(&drive->disk, "insert", img2, NULL),
			 0);
	ck_assert_uint_eq(get_capacity(&drive->disk), 48 * 4);
	ck_assert_int_eq(
		io(drive->queue, REQ_OP_READ, 47 * 4, CD_FRAMESIZE, buf), EIO);
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
 * and that sense must be let into the frozen queue (PREEMPT).  The read
 * fails either way, as Linux fails a read the drive is not ready for; let
 * in, the sense says why, and the switch completes.  Each try holds the
 * read back (stopped hw queue) until the freeze has begun, so the sense
 * is always allocated inside the freeze.
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

START_TEST(test_switch_during_sense)
{
	char *img = make_image(32), kv[256], sense[256];
	unsigned char got[CD_FRAMESIZE];
	unsigned long senses, unqueued;
	struct mq_device *d;
	struct ide_drive *drive;
	struct mq_queue *q;
	struct switch_arg sa;
	struct batch b;
	struct tbio tb;
	pthread_t t;
	unsigned int i;

	snprintf(kv, sizeof(kv), "image=%s", img);
	d = IDE_NEW("ide-cd", kv);
	drive = drive_of(d, "hda");
	q = drive->queue;
	check_cd_block(q, 1);
	senses = atomic_load(&drive->cd->sense_requests);
	unqueued = atomic_load(&drive->cd->sense_unqueued);
	for (i = 0; i < 50; i++) {
		const char *elv = elevators[(i + 1) % 4];

		ck_assert_int_eq(
			disk_fire_fault(&drive->disk, "insert", "", NULL), 0);
		mq_stop_hw_queues(q);
		batch_init(&b);
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
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_int_eq(sa.err, 0);
		ck_assert_str_eq(mq_elevator_name(q), elv);
		ck_assert_msg(tb.bio.bi_status == EIO,
			      "try %u (to %s): status %d", i, elv,
			      tb.bio.bi_status);
		/* Its sense ran, inside the freeze. */
		ck_assert_msg(
			atomic_load(&drive->cd->sense_requests) ==
				senses + i + 1,
			"try %u (to %s): %lu senses, %lu unqueued", i, elv,
			atomic_load(&drive->cd->sense_requests) - senses,
			atomic_load(&drive->cd->sense_unqueued) - unqueued);
		show(&drive->disk, "sense", sense, sizeof(sense));
		ck_assert_str_eq(sense,
				 "key=0x2 asc=0x04 ascq=0x01 (NOT READY)");
		batch_destroy(&b);
	}
	ck_assert_uint_eq(atomic_load(&drive->cd->sense_unqueued), unqueued);
	ck_assert_uint_eq(atomic_load(&drive->cd->breathers), 0);
	/* Ready after the last try's NOT READY. */
	check_cd_block(q, 5);
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
	 * Each failure asks for its sense on the reserved tag.  A read of
	 * block 41 that fails while the last one's sense is still queued
	 * (the reserved tag taken; nothing keeps the drive's other reads
	 * back until the sense has run) ends without one, as in Linux, where
	 * ide_queue_sense_rq finds no sense armed: counted apart.  So does
	 * one whose tag a timeout scan still held a moment.
	 */
	ck_assert_uint_eq(atomic_load(&cd->cd->sense_reserved),
			  atomic_load(&cd->cd->sense_requests));
	ck_assert_uint_eq(atomic_load(&cd->cd->sense_requests) +
				  atomic_load(&cd->cd->sense_unqueued),
			  10);
	ck_assert_uint_ge(atomic_load(&cd->cd->sense_requests), 1);
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
	tcase_add_test(tc, test_requeue_plug_delay);
	tcase_add_test(tc, test_intr_plug_delay);
	tcase_add_test(tc, test_both_drives_busy);
	suite_add_tcase(s, tc);

	tc = tcase_create("cd");
	tcase_add_test(tc, test_cd_read_only);
	tcase_add_loop_test(tc, test_sense_at_head, 0,
			    sizeof(elevators) / sizeof(elevators[0]));
	tcase_add_test(tc, test_sense_holds_nothing_back);
	tcase_add_test(tc, test_no_medium);
	tcase_add_test(tc, test_eject_insert_not_ready);
	tcase_add_test(tc, test_cd_and_disk_channel);
	tcase_add_test(tc, test_switch_during_sense);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(ide_suite());
}
