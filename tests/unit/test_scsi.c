// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the scsi-mq models (backends/scsi): scsi and sata-ssd
 * through the device layer and the request core, time off
 * (time_scale=0), and the flash SSD timing model on its own.  The limits
 * are watched with the target stalled (fault stall=1), so that commands
 * stay in flight until the test lets them go; bios are waited on with a
 * condition variable, never with sleeps.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/device.h"
#include "backends/scsi/scsi.h"
#include "backends/scsi/ssd-timing.h"
#include "server/mq/blk-mq-internal.h"
#include "server/mq/elevator.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"

#define SCSI_NEW(_dev, ...)                                                    \
	({                                                                     \
		struct mq_device *__d;                                         \
		struct mq_err __e = {{0}};                                     \
		if (tdevice_create(&__d, &__e, _dev, __VA_ARGS__, NULL))       \
			ck_abort_msg("create failed: %s", __e.msg);            \
		__d;                                                           \
	})

static unsigned int dispatch_lists_len(struct mq_queue *q)
{
	struct mq_hw_ctx *hctx;
	struct request *rq;
	unsigned int i, n = 0;

	queue_for_each_hw_ctx (q, hctx, i) {
		pthread_mutex_lock(&hctx->lock);
		TAILQ_FOREACH (rq, &hctx->dispatch, queuelist)
			n++;
		pthread_mutex_unlock(&hctx->lock);
	}
	return n;
}

/* --- asynchronous bios ------------------------------------------------ */

struct abios {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int done;
	int errors;
	struct abio {
		struct bio bio;
		struct abios *all;
		char buf[4096];
	} b[64];
};

static void abio_end_io(struct bio *bio)
{
	struct abio *b = bio->bi_private;

	pthread_mutex_lock(&b->all->lock);
	b->all->done++;
	if (bio->bi_status)
		b->all->errors++;
	pthread_cond_broadcast(&b->all->cond);
	pthread_mutex_unlock(&b->all->lock);
}

static struct abios *abios_new(void)
{
	struct abios *a = calloc(1, sizeof(*a));

	ck_assert_ptr_nonnull(a);
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	return a;
}

/* Submit bio i: 4 KiB of op at sector, on software queue cpu. */
static void abio_submit(struct abios *a, unsigned int i, struct mq_queue *q,
			enum req_op op, uint64_t sector, unsigned int cpu)
{
	struct abio *b = &a->b[i];

	bio_init(&b->bio, op, sector, sizeof(b->buf), b->buf);
	b->bio.bi_end_io = abio_end_io;
	b->bio.bi_private = b;
	b->all = a;
	mq_submit_bio(mq_get_ctx(q, cpu), &b->bio);
}

static bool abios_wait(struct abios *a, unsigned int n)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	pthread_mutex_lock(&a->lock);
	while (a->done < n &&
	       pthread_cond_timedwait(&a->cond, &a->lock, &until) == 0)
		;
	ok = a->done >= n;
	pthread_mutex_unlock(&a->lock);
	return ok;
}

static void abios_free(struct abios *a)
{
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* --- the models --------------------------------------------------------- */

START_TEST(test_scsi_defaults)
{
	struct mq_device *d = SCSI_NEW("scsi", "time_scale=0");
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;
	char buf[256];

	ck_assert_str_eq(disk->disk_name, "sda");
	ck_assert_msg(strstr(disk->description, "scsi-mq"), "%s",
		      disk->description);
	ck_assert_uint_eq(q->nr_hw_queues, 4);
	/* Each hardware queue can_queue deep; host_busy caps the sum. */
	ck_assert_uint_eq(q->tag_set->queue_depth, 64);
	ck_assert_uint_eq(tdevice_counter(d, "can_queue"), 64);
	ck_assert_uint_eq(tdevice_counter(d, "cmd_per_lun"), 32);
	ck_assert_uint_eq(tdevice_counter(d, "queue_depth"), 32);
	ck_assert_ptr_nonnull(q->tag_set->ops->get_budget);
	ck_assert(!q->limits.rotational);
	/* Row 3 of the default policy: several hardware queues, none. */
	ck_assert_str_eq(mq_elevator_name(q), "none");
	ck_assert_str_eq(tdevice_attr(d, "model", buf, sizeof(buf)),
			 "SCSI SSD");
	/* time_scale=0: every command completes inside queuecommand. */
	ck_assert_str_eq(tdevice_attr(d, "late", buf, sizeof(buf)),
			 "0.0 us over 0");
	ck_assert_str_eq(tdevice_attr(d, "stall", buf, sizeof(buf)),
			 "0 (0 held)");
	mq_device_destroy(d);

	d = SCSI_NEW("sata-ssd", "time_scale=0");
	disk = tdevice_disk0(d);
	q = disk->queue;
	ck_assert_uint_eq(q->nr_hw_queues, 1);
	ck_assert_uint_eq(q->tag_set->queue_depth, 32);
	ck_assert_uint_eq(tdevice_counter(d, "cmd_per_lun"), 32);
	ck_assert_msg(strstr(disk->description, "SATA SSD"), "%s",
		      disk->description);
#ifdef MQBLK_HAVE_BFQ
	/* Row 5: a single queue gets bfq (seed 001). */
	ck_assert_str_eq(mq_elevator_name(q), "bfq");
#endif
	ck_assert_str_eq(
		tdevice_attr(d, "timing", buf, sizeof(buf)),
		"read 100us write 120us iops 90000 link 550MB/s dies 16");
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_scsi_bad_config)
{
	struct mq_device *d;
	struct mq_err e = {{0}};

	/* The legacy request path is refused, with the reason. */
	ck_assert_int_eq(tdevice_create(&d, &e, "scsi", "use_blk_mq=0", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "use_blk_mq=0") &&
			      strstr(e.msg, "legacy") &&
			      strstr(e.msg, "d5038a13eca7"),
		      "%s", e.msg);
	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(
		tdevice_create(&d, &e, "sata-ssd", "use_blk_mq=0", NULL), -1);
	ck_assert_msg(strstr(e.msg, "legacy"), "%s", e.msg);
	/* sata-ssd has one hardware queue, not a key. */
	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(
		tdevice_create(&d, &e, "sata-ssd", "nr_hw_queues=2", NULL), -1);
	ck_assert_msg(strstr(e.msg, "nr_hw_queues"), "%s", e.msg);
	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(tdevice_create(&d, &e, "scsi", "can_queue=0", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "can_queue"), "%s", e.msg);
	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(tdevice_create(&d, &e, "scsi", "iops=1000", NULL), -1);
	ck_assert_msg(strstr(e.msg, "read_us"), "%s", e.msg);
}
END_TEST

START_TEST(test_scsi_round_trip)
{
	static const char *const models[] = {"scsi", "sata-ssd"};
	struct mq_device *d = SCSI_NEW(models[_i], "time_scale=0", "size=64M");
	struct mq_queue *q = tdevice_disk0(d)->queue;
	unsigned int cpu;

	for (cpu = 0; cpu < 4; cpu++)
		tio_round_trip(q, cpu, cpu * 4096 + 8, 65536 + cpu * 512,
			       cpu + 1);
	ck_assert_uint_gt(tdevice_counter(d, "writes"), 0);
	ck_assert_uint_gt(tdevice_counter(d, "reads"), 0);
	ck_assert_uint_eq(tdevice_counter(d, "host_busy"), 0);
	ck_assert_uint_eq(tdevice_counter(d, "device_busy"), 0);
	mq_device_destroy(d);
}
END_TEST

/*
 * host_tagset=1: can_queue is the host's: with the LUN's budget out of the way
 * (cmd_per_lun 64), 32 commands from four CPUs on four hardware queues,
 * each queue 8 tags deep, never have more than 8 in flight at the target.
 */
START_TEST(test_scsi_can_queue_shared)
{
	struct mq_device *d = SCSI_NEW("scsi", "time_scale=0", "can_queue=8",
				       "cmd_per_lun=64", "host_tagset=1");
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;
	struct abios *a = abios_new();
	unsigned int i;

	ck_assert_int_eq(disk_fire_fault(disk, "stall", "1", NULL), 0);
	for (i = 0; i < 32; i++)
		abio_submit(a, i, q, i % 2 ? REQ_OP_READ : REQ_OP_WRITE,
			    (uint64_t)i * 1024, i % 4);
	ck_assert_uint_eq(tdevice_counter(d, "host_busy"), 8);
	ck_assert_uint_eq(tdevice_counter(d, "max_host_busy"), 8);
	ck_assert_uint_gt(tdevice_counter(d, "host_refused"), 0);
	ck_assert_int_eq(disk_fire_fault(disk, "stall", "0", NULL), 0);
	ck_assert(abios_wait(a, 32));
	ck_assert_int_eq(a->errors, 0);
	ck_assert_uint_eq(tdevice_counter(d, "max_host_busy"), 8);
	ck_assert_uint_eq(
		tdevice_counter(d, "reads") + tdevice_counter(d, "writes"), 32);
	abios_free(a);
	mq_device_destroy(d);
}
END_TEST

/*
 * Without host_tagset (the default, as Linux since 5.10), each hardware
 * queue has can_queue tags of its own: 32 commands from four CPUs on
 * four queues 8 deep are all at the target at once.
 */
START_TEST(test_scsi_can_queue_per_hctx)
{
	struct mq_device *d = SCSI_NEW("scsi", "time_scale=0", "can_queue=8",
				       "cmd_per_lun=64");
	struct gendisk *disk = tdevice_disk0(d);
	struct abios *a = abios_new();
	unsigned int i;

	ck_assert_uint_eq(tdevice_counter(d, "host_tagset"), 0);
	ck_assert_int_eq(disk_fire_fault(disk, "stall", "1", NULL), 0);
	for (i = 0; i < 32; i++)
		abio_submit(a, i, disk->queue, REQ_OP_READ, (uint64_t)i * 1024,
			    i % 4);
	ck_assert_uint_eq(tdevice_counter(d, "host_busy"), 32);
	ck_assert_uint_eq(tdevice_counter(d, "host_refused"), 0);
	ck_assert_int_eq(disk_fire_fault(disk, "stall", "0", NULL), 0);
	ck_assert(abios_wait(a, 32));
	ck_assert_int_eq(a->errors, 0);
	abios_free(a);
	mq_device_destroy(d);
}
END_TEST

/*
 * sd's probe asks the LUN with commands and sets the limits from the
 * answers: the unit attention of power-on is seen by TEST UNIT READY,
 * the caching page's WCE and DPOFUA give write_cache and fua, the
 * provisioning VPD page chooses UNMAP (scsi) or WRITE SAME 16 (sata-ssd).
 */
START_TEST(test_scsi_probe_commands)
{
	struct mq_device *d = SCSI_NEW("scsi", "time_scale=0", "size=64M");
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;
	char buf[128];
	static char data[4096];

	ck_assert_uint_eq(tdevice_counter(d, "unit_attentions"), 1);
	ck_assert(q->limits.write_cache);
	ck_assert(q->limits.fua);
	ck_assert_str_eq(tdevice_attr(d, "provisioning_mode", buf, sizeof(buf)),
			 "unmap");
	ck_assert_uint_gt(q->limits.max_discard_sectors, 0);
	/* A discard is an UNMAP; the blocks read back as zeroes (LBPRZ). */
	tio_fill(data, sizeof(data), 7);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, 0, 64, 4096, data), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_DISCARD, 0, 64, 4096, NULL), 0);
	ck_assert_uint_eq(tdevice_counter(d, "discards"), 1);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 64, 4096, data), 0);
	ck_assert(tio_all_zero(data, sizeof(data)));
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_FLUSH, 0, 0, 0, NULL), 0);
	ck_assert_uint_eq(tdevice_counter(d, "flushes"), 1);
	mq_device_destroy(d);

	d = SCSI_NEW("sata-ssd", "time_scale=0", "size=64M");
	ck_assert_str_eq(tdevice_attr(d, "provisioning_mode", buf, sizeof(buf)),
			 "writesame_16");
	mq_device_destroy(d);

	/* No WCE (wce=0, or scsi_debug's opts N_WCE): no flush, no FUA. */
	d = SCSI_NEW("scsi", "time_scale=0", "wce=0");
	q = tdevice_disk0(d)->queue;
	ck_assert(!q->limits.write_cache);
	ck_assert(!q->limits.fua);
	mq_device_destroy(d);
	d = SCSI_NEW("sata-ssd", "time_scale=0", "opts=0x1000");
	ck_assert(!tdevice_disk0(d)->queue->limits.write_cache);
	mq_device_destroy(d);

	/* No provisioning: sd configures no discard. */
	d = SCSI_NEW("scsi", "time_scale=0", "lbpu=0");
	ck_assert_str_eq(tdevice_attr(d, "provisioning_mode", buf, sizeof(buf)),
			 "disabled");
	ck_assert_uint_eq(tdevice_disk0(d)->queue->limits.max_discard_sectors,
			  0);
	mq_device_destroy(d);
}
END_TEST

/*
 * MEDIUM ERROR 03/11/00 on LBAs 100-101: a read that covers them fails
 * with what Linux gives a filesystem (BLK_STS_MEDIUM: ENODATA), once, not
 * retried; the reads beside it succeed.  scsi_debug reports the whole
 * transfer as residue, so sd_completed_bytes finds nothing good.
 */
START_TEST(test_scsi_medium_error)
{
	static const char *const sense[] = {"dsense=0", "dsense=1"};
	struct mq_device *d = SCSI_NEW("scsi", "time_scale=0", "size=64M",
				       "opts=2", "medium_error_start=100",
				       "medium_error_count=2", sense[_i]);
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;
	static char data[4096];

	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 96, 4096, data), ENODATA);
	ck_assert_uint_eq(tdevice_counter(d, "medium_errors"), 1);
	ck_assert_uint_eq(tdevice_counter(d, "retried"), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 88, 4096, data), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 104, 4096, data), 0);
	/* writes there succeed */
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, 0, 96, 4096, data), 0);
	/* the fault trigger moves it */
	ck_assert_int_eq(disk_fire_fault(disk, "medium_error", "300,1", NULL),
			 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 96, 4096, data), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 300, 512, data), ENODATA);
	ck_assert_int_eq(disk_fire_fault(disk, "medium_error", "0", NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 300, 512, data), 0);
	ck_assert_int_ne(disk_fire_fault(disk, "medium_error", "x", NULL), 0);
	mq_device_destroy(d);
}
END_TEST

/*
 * A unit attention (after a reset) is retried by scsi_io_completion
 * (ACTION_RETRY); a recovered error counts as success.
 */
START_TEST(test_scsi_unit_attention_and_recovered)
{
	struct mq_device *d = SCSI_NEW("sata-ssd", "time_scale=0");
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;
	static char data[4096];

	ck_assert_int_eq(disk_fire_fault(disk, "unit_attention", NULL, NULL),
			 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, data), 0);
	ck_assert_uint_eq(tdevice_counter(d, "unit_attentions"), 2);
	ck_assert_uint_eq(tdevice_counter(d, "retried"), 1);

	ck_assert_int_eq(disk_fire_fault(disk, "opts", "0x8", NULL), 0);
	ck_assert_int_eq(disk_fire_fault(disk, "every_nth", "1", NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, data), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, 0, 8, 4096, data), 0);
	ck_assert_uint_eq(tdevice_counter(d, "recovered_errors"), 2);
	ck_assert_uint_eq(tdevice_counter(d, "failed"), 0);
	ck_assert_int_ne(disk_fire_fault(disk, "opts", "0x1", NULL), 0);
	mq_device_destroy(d);
}
END_TEST

/*
 * TASK SET FULL with DID_OK (fault/queue_full): ADD_TO_MLQUEUE blocks the
 * device (device_blocked = max_device_blocked) and requeues; an idle
 * blocked device counts down a dispatch try at a time, then the command
 * succeeds.  scsi_debug's own every_nth TSF (opts 0x800) comes with
 * DID_ABORT, as 6.6 sends it: the command fails.  Host busy (opts
 * 0x8000) blocks the host and the command goes again.
 */
START_TEST(test_scsi_blocked_states)
{
	struct mq_device *d = SCSI_NEW("sata-ssd", "time_scale=0");
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;
	static char data[4096];

	ck_assert_uint_eq(tdevice_counter(d, "max_device_blocked"), 3);
	ck_assert_int_eq(disk_fire_fault(disk, "queue_full", "2", NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, data), 0);
	ck_assert_uint_eq(tdevice_counter(d, "tsf_sent"), 2);
	ck_assert_uint_eq(tdevice_counter(d, "requeued_busy"), 2);
	/* each block: 2 refused tries, the third unblocks */
	ck_assert_uint_eq(tdevice_counter(d, "blocked_refused"), 4);
	ck_assert_uint_eq(tdevice_counter(d, "device_blocked"), 0);

	ck_assert_int_eq(disk_fire_fault(disk, "opts", "0x800", NULL), 0);
	ck_assert_int_eq(disk_fire_fault(disk, "every_nth", "1", NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, data), EIO);
	ck_assert_uint_eq(tdevice_counter(d, "tsf_sent"), 3);

	ck_assert_int_eq(disk_fire_fault(disk, "opts", "0x8000", NULL), 0);
	ck_assert_int_eq(disk_fire_fault(disk, "every_nth", "2", NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, data), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 8, 4096, data), 0);
	ck_assert_uint_eq(tdevice_counter(d, "host_busy_injected"), 1);
	ck_assert_uint_eq(tdevice_counter(d, "host_blocked"), 0);
	mq_device_destroy(d);
}
END_TEST

/*
 * Timeouts (io_timeout=50 ms, real time: the core has no fake clock).
 * scsi_debug ignoring every command (opts 0x4, every_nth 1): the first
 * timeout aborts and retries, the next ones go to the error handler,
 * whose device reset works, until the retries run out: EIO, device still
 * running.  A hung target (stall=1) answers no abort and no device reset;
 * the host reset's TEST UNIT READY gets no answer: the device goes
 * offline, and later I/O is refused.
 */
START_TEST(test_scsi_timeout_eh)
{
	struct mq_device *d =
		SCSI_NEW("sata-ssd", "time_scale=0", "io_timeout=50");
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;
	char buf[64];
	static char data[4096];

	ck_assert_int_eq(disk_fire_fault(disk, "opts", "0x4", NULL), 0);
	ck_assert_int_eq(disk_fire_fault(disk, "every_nth", "1", NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, data), EIO);
	ck_assert_uint_eq(tdevice_counter(d, "timeouts"), SD_MAX_RETRIES + 1);
	ck_assert_uint_eq(tdevice_counter(d, "eh_aborts"), 1);
	ck_assert_uint_eq(tdevice_counter(d, "eh_device_resets"),
			  SD_MAX_RETRIES);
	ck_assert_uint_eq(tdevice_counter(d, "eh_host_resets"), 0);
	ck_assert_str_eq(tdevice_attr(d, "state", buf, sizeof(buf)), "running");

	ck_assert_int_eq(disk_fire_fault(disk, "every_nth", "0", NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, data), 0);

	ck_assert_int_eq(disk_fire_fault(disk, "stall", "1", NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, data), EIO);
	ck_assert_uint_eq(tdevice_counter(d, "eh_aborts"), 2);
	ck_assert_uint_eq(tdevice_counter(d, "eh_host_resets"), 1);
	ck_assert_uint_eq(tdevice_counter(d, "eh_offlined"), 1);
	ck_assert_str_eq(tdevice_attr(d, "state", buf, sizeof(buf)), "offline");
	ck_assert_int_eq(disk_fire_fault(disk, "stall", "0", NULL), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 0, 4096, data), EIO);
	mq_device_destroy(d);
}
END_TEST

/*
 * The volatile write cache (wce=1, on a file store so that the store can
 * be read behind the model's back): a write is acknowledged from the
 * cache and reads back through the device, but the store has it only
 * after a FLUSH (SYNCHRONIZE CACHE); a FUA write goes through at once.
 * wce=0: every write goes through.
 */
static bool file_has(const char *path, uint64_t off, const char *data,
		     size_t len)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);
	bool same;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
	same = !memcmp(buf, data, len);
	return same;
}

START_TEST(test_scsi_write_cache)
{
	char path[] = "/tmp/test_scsi_wce_XXXXXX", kv[64];
	static char data[4096], back[4096];
	int fd = mkstemp(path);
	struct mq_device *d;
	struct mq_queue *q;
	char buf[128];

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 8 << 20), 0);
	close(fd);
	snprintf(kv, sizeof(kv), "media=file:%s", path);
	d = SCSI_NEW("sata-ssd", "time_scale=0", kv);
	q = tdevice_disk0(d)->queue;
	ck_assert(q->limits.write_cache && q->limits.fua);

	tio_fill(data, sizeof(data), 3);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, 0, 8, 4096, data), 0);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_READ, 0, 8, 4096, back), 0);
	ck_assert(!memcmp(back, data, sizeof(data)));
	ck_assert(!file_has(path, 8 * 512, data, sizeof(data)));
	ck_assert_str_eq(tdevice_attr(d, "cache", buf, sizeof(buf)),
			 "1 extents, 4096 bytes, 0 writebacks");
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_FLUSH, 0, 0, 0, NULL), 0);
	ck_assert(file_has(path, 8 * 512, data, sizeof(data)));
	ck_assert_str_eq(tdevice_attr(d, "cache", buf, sizeof(buf)),
			 "0 extents, 0 bytes, 1 writebacks");

	tio_fill(data, sizeof(data), 4);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, REQ_FUA, 64, 4096, data),
			 0);
	ck_assert(file_has(path, 64 * 512, data, sizeof(data)));
	mq_device_destroy(d);

	d = SCSI_NEW("sata-ssd", "time_scale=0", "wce=0", kv);
	q = tdevice_disk0(d)->queue;
	tio_fill(data, sizeof(data), 5);
	ck_assert_int_eq(tio_io(q, 0, REQ_OP_WRITE, 0, 128, 4096, data), 0);
	ck_assert(file_has(path, 128 * 512, data, sizeof(data)));
	mq_device_destroy(d);
	unlink(path);
}
END_TEST

/*
 * cmd_per_lun is a budget: with 4 of them and the target stalled, 24
 * requests leave 4 at the target and the rest in the elevator, none
 * parked in the dispatch list.  Loop: sata-ssd under each elevator, then
 * scsi (4 hardware queues) under none and mq-deadline.
 */
static const struct {
	const char *model, *sched;
} budget_cases[] = {
	{"sata-ssd", "none"},	 {"sata-ssd", "mq-deadline"},
	{"sata-ssd", "kyber"},	 {"scsi", "none"},
	{"scsi", "mq-deadline"},
#ifdef MQBLK_HAVE_BFQ
	{"sata-ssd", "bfq"},
#endif
};

START_TEST(test_scsi_budget_holds_requests)
{
	char sched[64];
	struct mq_device *d;
	struct gendisk *disk;
	struct mq_queue *q;
	struct abios *a = abios_new();
	unsigned int i;

	snprintf(sched, sizeof(sched), "scheduler=%s", budget_cases[_i].sched);
	d = SCSI_NEW(budget_cases[_i].model, "time_scale=0", "cmd_per_lun=4",
		     sched);
	disk = tdevice_disk0(d);
	q = disk->queue;
	ck_assert_str_eq(mq_elevator_name(q), budget_cases[_i].sched);
	ck_assert_int_eq(disk_fire_fault(disk, "stall", "1", NULL), 0);
	for (i = 0; i < 24; i++)
		abio_submit(a, i, q, i % 3 ? REQ_OP_READ : REQ_OP_WRITE,
			    (uint64_t)i * 2048, i % 4);
	ck_assert_uint_eq(tdevice_counter(d, "device_busy"), 4);
	ck_assert_uint_eq(tdevice_counter(d, "max_device_busy"), 4);
	ck_assert_uint_gt(tdevice_counter(d, "budget_refused"), 0);
	ck_assert_uint_eq(tdevice_counter(d, "host_refused"), 0);
	ck_assert_uint_eq(dispatch_lists_len(q), 0);
	ck_assert_int_eq(disk_fire_fault(disk, "stall", "0", NULL), 0);
	ck_assert(abios_wait(a, 24));
	ck_assert_int_eq(a->errors, 0);
	ck_assert_uint_eq(tdevice_counter(d, "max_device_busy"), 4);
	ck_assert_uint_eq(tdevice_counter(d, "device_busy"), 0);
	abios_free(a);
	mq_device_destroy(d);
}
END_TEST

/* --- the timing model ---------------------------------------------------- */

START_TEST(test_ssd_timing)
{
	struct ssd_params p;
	struct ssd_model m;
	uint64_t t0 = 1000000000ull, due, last = 0;
	unsigned int i;

	ssd_params_default(&p);
	ck_assert_int_eq(ssd_model_init(&m, &p, 1.0), 0);
	/* QD1: a 4 KiB read alone takes read_us, a write write_us. */
	due = ssd_model_submit(&m, SSD_READ, 4096, t0);
	ck_assert_uint_eq((due - t0 + 500) / 1000, 100);
	due = ssd_model_submit(&m, SSD_WRITE, 4096, t0 + 1000000);
	ck_assert_uint_eq((due - t0 - 1000000 + 500) / 1000, 120);
	/* Deep queue: 9000 reads at once finish after about 0.1 s. */
	for (i = 0; i < 9000; i++) {
		due = ssd_model_submit(&m, SSD_READ, 4096, t0 + 2000000);
		if (due > last)
			last = due;
	}
	ck_assert_uint_eq((last - t0 - 2000000 + 500000) / 1000000, 100);
	ssd_model_destroy(&m);

	/* time_scale=0: done at once. */
	ck_assert_int_eq(ssd_model_init(&m, &p, 0), 0);
	ck_assert_uint_eq(ssd_model_submit(&m, SSD_READ, 1 << 20, t0), t0);
	ssd_model_destroy(&m);
}
END_TEST

/*
 * The completion thread spins before a due time only while so few
 * commands are queued that its lateness would be the client's latency:
 * at QD32 a thread spinning to every due time (11 us apart at 90k IOPS)
 * would take a whole CPU.
 */
START_TEST(test_completion_spin_rule)
{
	const uint64_t spin_ns = 30000;

	ck_assert(sdebug_should_spin(1, spin_ns));
	ck_assert(sdebug_should_spin(2, spin_ns));
	ck_assert(!sdebug_should_spin(3, spin_ns));
	ck_assert(!sdebug_should_spin(32, spin_ns));
	/* spin_us=0: never */
	ck_assert(!sdebug_should_spin(1, 0));
}
END_TEST

static Suite *scsi_suite(void)
{
	Suite *s = suite_create("scsi");
	TCase *tc = tcase_create("scsi");

	tcase_add_test(tc, test_scsi_defaults);
	tcase_add_test(tc, test_scsi_bad_config);
	tcase_add_loop_test(tc, test_scsi_round_trip, 0, 2);
	tcase_add_test(tc, test_scsi_can_queue_shared);
	tcase_add_test(tc, test_scsi_can_queue_per_hctx);
	tcase_add_test(tc, test_scsi_probe_commands);
	tcase_add_loop_test(tc, test_scsi_medium_error, 0, 2);
	tcase_add_test(tc, test_scsi_unit_attention_and_recovered);
	tcase_add_test(tc, test_scsi_blocked_states);
	tcase_add_test(tc, test_scsi_timeout_eh);
	tcase_add_test(tc, test_scsi_write_cache);
	tcase_add_loop_test(tc, test_scsi_budget_holds_requests, 0,
			    sizeof(budget_cases) / sizeof(budget_cases[0]));
	tcase_add_test(tc, test_ssd_timing);
	tcase_add_test(tc, test_completion_spin_rule);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tcheck_run(scsi_suite());
}
