// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the Sun LDOM virtual disk client (backends/sunvdc/),
 * through the device layer and the request core, with time off
 * (time_scale=0).  The service domain is paused with the vds_pause fault
 * to hold descriptors in the ring, and resumed a given number at a time.
 * Conditions are polled with a bounded wait, never slept on.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/device.h"
#include "server/mq/log.h"
#include "tests/unit/helpers/tcheck.h"
#include "tests/unit/helpers/tdevice.h"
#include "tests/unit/helpers/tio.h"
#include "tests/unit/helpers/tlog.h"

#define RING	  512
#define IO_BYTES  4096
#define IO_STRIDE 16 /* sectors: 4 KiB I/Os with gaps, so none merge */

/* --- devices -------------------------------------------------------- */

#define VDC_NEW(...)                                                           \
	({                                                                     \
		struct mq_device *__d;                                         \
		struct mq_err __e = {{0}};                                     \
		if (tdevice_create(&__d, &__e, "sunvdc", "size=64M",           \
				   ##__VA_ARGS__, NULL))                       \
			ck_abort_msg("create failed: %s", __e.msg);            \
		__d;                                                           \
	})

static struct mq_hw_ctx *hctx0(struct mq_device *d)
{
	return tdevice_disk0(d)->queue->queue_hw_ctx[0];
}

static void fire(struct mq_device *d, const char *fault, const char *value)
{
	ck_assert_int_eq(disk_fire_fault(tdevice_disk0(d), fault, value, NULL),
			 0);
}

/* Poll cond(d, arg) every millisecond for at most 30 s. */
#define WAIT_FOR(cond, what)                                                   \
	do {                                                                   \
		struct timespec __ts = {0, 1000000};                           \
		int __n;                                                       \
		for (__n = 0; !(cond) && __n < 30000; __n++)                   \
			nanosleep(&__ts, NULL);                                \
		ck_assert_msg((cond), "timed out waiting for %s", what);       \
	} while (0)

/* --- asynchronous bios ---------------------------------------------- */

struct abio {
	struct bio bio;
	atomic_int done; /* times bi_end_io ran */
	int status;
	unsigned char buf[IO_BYTES];
};

static atomic_uint nr_done;

static void abio_end_io(struct bio *bio)
{
	struct abio *ab = bio->bi_private;

	ab->status = bio->bi_status;
	atomic_fetch_add(&ab->done, 1);
	atomic_fetch_add(&nr_done, 1);
}

/* n 4 KiB writes of pattern i at sector i * IO_STRIDE, from 4 ctxs. */
static struct abio *submit_writes(struct mq_device *d, unsigned int first,
				  unsigned int n)
{
	struct abio *ab = calloc(n, sizeof(*ab));
	unsigned int i;

	ck_assert_ptr_nonnull(ab);
	for (i = 0; i < n; i++) {
		unsigned int k = first + i;

		tio_fill(ab[i].buf, IO_BYTES, k);
		bio_init(&ab[i].bio, REQ_OP_WRITE, (uint64_t)k * IO_STRIDE,
			 IO_BYTES, ab[i].buf);
		ab[i].bio.bi_submitter = 1 + i % 4;
		ab[i].bio.bi_end_io = abio_end_io;
		ab[i].bio.bi_private = &ab[i];
		mq_submit_bio(mq_get_ctx(tdevice_disk0(d)->queue, i % 4),
			      &ab[i].bio);
	}
	return ab;
}

static unsigned int nr_completed(struct abio *ab, unsigned int n)
{
	unsigned int i, c = 0;

	for (i = 0; i < n; i++)
		c += atomic_load(&ab[i].done) > 0;
	return c;
}

/* Every bio ended exactly once, with status. */
static void expect_all_once(struct abio *ab, unsigned int n, int status)
{
	unsigned int i;

	WAIT_FOR(nr_completed(ab, n) == n, "every bio to complete");
	for (i = 0; i < n; i++) {
		ck_assert_msg(atomic_load(&ab[i].done) == 1,
			      "bio %u completed %d times", i,
			      atomic_load(&ab[i].done));
		ck_assert_msg(ab[i].status == status, "bio %u: status %d", i,
			      ab[i].status);
	}
}

/* Read back what submit_writes(first, n) wrote. */
static void verify_writes(struct mq_device *d, unsigned int first,
			  unsigned int n)
{
	unsigned char want[IO_BYTES], got[IO_BYTES];
	unsigned int i;

	for (i = 0; i < n; i++) {
		tio_fill(want, IO_BYTES, first + i);
		memset(got, 0, sizeof(got));
		ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_READ,
					0, (uint64_t)(first + i) * IO_STRIDE,
					IO_BYTES, got),
				 0);
		ck_assert_msg(memcmp(want, got, IO_BYTES) == 0,
			      "write %u did not reach the disk", first + i);
	}
}

static bool link_is(struct mq_device *d, const char *state)
{
	char buf[32];

	return !strcmp(tdevice_attr(d, "link_state", buf, sizeof(buf)), state);
}

/* --- configuration -------------------------------------------------- */

START_TEST(test_disk)
{
	struct mq_device *d = VDC_NEW();
	struct gendisk *disk = tdevice_disk0(d);
	struct mq_queue *q = disk->queue;
	char buf[64];

	ck_assert_str_eq(disk->disk_name, "vdiska");
	ck_assert_msg(strstr(disk->description, "Linux sunvdc"), "%s",
		      disk->description);
	ck_assert(!disk->read_only);
	ck_assert_uint_eq(get_capacity(disk), 64 * 2048);
	ck_assert_uint_eq(q->nr_hw_queues, 1);
	ck_assert_uint_eq(q->tag_set->queue_depth, RING);
	ck_assert_uint_eq(q->tag_set->flags & MQ_F_SHOULD_MERGE,
			  MQ_F_SHOULD_MERGE);
	ck_assert_uint_eq(q->limits.logical_block_size, 512);
	ck_assert_uint_eq(q->limits.physical_block_size, 512);
	/* max_xfer_size: 128 KiB in 512-byte blocks */
	ck_assert_uint_eq(q->limits.max_sectors, 256);
	/* MAX_RING_COOKIES: 128 KiB of 8 KiB pages, plus 2 */
	ck_assert_uint_eq(q->limits.max_segments, 18);
	ck_assert_str_eq(tdevice_attr(d, "link_state", buf, sizeof(buf)), "up");
	ck_assert_str_eq(tdevice_attr(d, "vio_version", buf, sizeof(buf)),
			 "1.2");
	ck_assert_str_eq(tdevice_attr(d, "vdisk_mtype", buf, sizeof(buf)),
			 "disk");
	/* one slot is kept free: see vio_dring_avail */
	ck_assert_uint_eq(tdevice_counter(d, "ring_avail"), RING - 1);
	tio_round_trip(q, 0, 0, 4096, 1);
	tio_round_trip(q, 1, 64 * 2048 - 256, 128 * 1024, 2);
	tio_round_trip(q, 2, 1000, 512 * 1024, 3); /* split at 128 KiB */
	ck_assert_uint_eq(tdevice_counter(d, "ring_avail"), RING - 1);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_dev_no)
{
	struct mq_device *d = VDC_NEW("dev_no=1");

	ck_assert_str_eq(tdevice_disk0(d)->disk_name, "vdiskb");
	mq_device_destroy(d);
	d = VDC_NEW("dev_no=27");
	ck_assert_str_eq(tdevice_disk0(d)->disk_name, "vdiskab");
	mq_device_destroy(d);
}
END_TEST

/* The server's side of the handshake chooses what the driver gets. */
START_TEST(test_versions)
{
	struct mq_device *d;
	char buf[32];

	/* 1.2: the physical block size comes with the attributes */
	d = VDC_NEW("phys_block_size=4096");
	ck_assert_str_eq(tdevice_attr(d, "vio_version", buf, sizeof(buf)),
			 "1.2");
	ck_assert_uint_eq(tdevice_disk0(d)->queue->limits.physical_block_size,
			  4096);
	mq_device_destroy(d);

	/* 1.1: it does not, and 512 stands; the size still does */
	d = VDC_NEW("vio_version=1.1", "phys_block_size=4096");
	ck_assert_str_eq(tdevice_attr(d, "vio_version", buf, sizeof(buf)),
			 "1.1");
	ck_assert_uint_eq(tdevice_disk0(d)->queue->limits.physical_block_size,
			  512);
	ck_assert_uint_eq(get_capacity(tdevice_disk0(d)), 64 * 2048);
	mq_device_destroy(d);

	/*
	 * 1.0: no size in the attributes: VD_OP_GET_DISKGEOM through the
	 * ring, and the disk is whole cylinders of 255 x 63 blocks.
	 */
	d = VDC_NEW("vio_version=1.0");
	ck_assert_str_eq(tdevice_attr(d, "vio_version", buf, sizeof(buf)),
			 "1.0");
	ck_assert_uint_eq(get_capacity(tdevice_disk0(d)),
			  (64 * 2048 / 16065) * 16065);
	tio_round_trip(tdevice_disk0(d)->queue, 0, 8, 8192, 4);
	mq_device_destroy(d);

	/* a smaller max_xfer_size from the server wins */
	d = VDC_NEW("max_xfer_size=64");
	ck_assert_uint_eq(tdevice_disk0(d)->queue->limits.max_sectors, 64);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_bad_config)
{
	struct mq_device *d = NULL;
	struct mq_err e = {{0}};

	tlog_clear();
	ck_assert_int_eq(tdevice_create(&d, &e, "sunvdc", "size=-1", NULL), -1);
	ck_assert_msg(strstr(e.msg, "ENODEV") &&
			      strstr(e.msg, "reserved by another system"),
		      "%s", e.msg);
	/* 1.2 without a physical block size: reserved too */
	ck_assert_int_eq(
		tdevice_create(&d, &e, "sunvdc", "phys_block_size=0", NULL),
		-1);
	ck_assert_msg(strstr(e.msg, "reserved by another system"), "%s", e.msg);
	/* ... which 1.1 never asks about */
	ck_assert_int_eq(tdevice_create(&d, &e, "sunvdc", "size=1M",
					"phys_block_size=0", "vio_version=1.1",
					NULL),
			 0);
	mq_device_destroy(d);
	d = NULL;

	/* vdc_handle_attr refuses a block size above its own 512 */
	ck_assert_int_eq(
		tdevice_create(&d, &e, "sunvdc", "vdisk_block_size=4096", NULL),
		-1);
	ck_assert_msg(tlog_has("BLOCK size increased 512 --> 4096"), "%s",
		      tlog_text());
	ck_assert_msg(strstr(e.msg, "vdisk_block_size"), "%s", e.msg);

	ck_assert_int_eq(
		tdevice_create(&d, &e, "sunvdc", "vio_version=2.0", NULL), -1);
	ck_assert_msg(strstr(e.msg, "1.0, 1.1, 1.2"), "%s", e.msg);
	ck_assert_int_eq(
		tdevice_create(&d, &e, "sunvdc", "vdisk_mtype=tape", NULL), -1);
	ck_assert_msg(strstr(e.msg, "disk, cd, dvd"), "%s", e.msg);
	ck_assert_int_eq(tdevice_create(&d, &e, "sunvdc", "size=1000", NULL),
			 -1);
	ck_assert_msg(strstr(e.msg, "size=1000"), "%s", e.msg);
	ck_assert_int_eq(tdevice_create(&d, &e, "sunvdc", "bogus=1", NULL), -1);
	ck_assert_msg(strstr(e.msg, "ldc_timeout"), "%s", e.msg);
	ck_assert_ptr_null(d);
}
END_TEST

/* A CD is read-only (the server refuses writes too); 1.0 cannot say so. */
START_TEST(test_cd)
{
	struct mq_device *d = VDC_NEW("vdisk_mtype=cd", "size=4M");
	unsigned char buf[4096];
	char a[16];

	ck_assert(tdevice_disk0(d)->read_only);
	ck_assert_msg(strstr(tdevice_disk0(d)->description, "Virtual CDROM"),
		      "%s", tdevice_disk0(d)->description);
	ck_assert_str_eq(tdevice_attr(d, "vdisk_mtype", a, sizeof(a)), "cd");
	memset(buf, 0x55, sizeof(buf));
	ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_READ, 0, 0,
				sizeof(buf), buf),
			 0);
	ck_assert(tio_all_zero(buf, sizeof(buf)));
	/* The front ends refuse it first; the queue gets it here. */
	ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_WRITE, 0, 0,
				sizeof(buf), buf),
			 EIO);
	mq_device_destroy(d);

	d = VDC_NEW("vdisk_mtype=cd", "vio_version=1.0");
	ck_assert(!tdevice_disk0(d)->read_only);
	mq_device_destroy(d);
}
END_TEST

/* --- queue_rq: the full ring ---------------------------------------- */

/*
 * 800 writes against a paused server: 511 fill the ring, the 512th meets
 * a full ring (stop, DEV_RESOURCE), the rest wait for tags.  ACKs that
 * leave 255 slots free do not start the queue; the 256th (50%) does.
 */
START_TEST(test_ring_full)
{
	struct mq_device *d = VDC_NEW("scheduler=none");
	struct mq_hw_ctx *hctx = hctx0(d);
	struct abio *ab;
	const unsigned int n = 800;

	fire(d, "vds_pause", "");
	ab = submit_writes(d, 0, n);
	WAIT_FOR(tdevice_counter(d, "dev_resource") >= 1 &&
			 mq_hctx_stopped(hctx),
		 "the full ring to stop the queue");
	ck_assert_uint_eq(tdevice_counter(d, "ring_avail"), 0);
	ck_assert_uint_eq(atomic_load(&hctx->stats.dispatched), RING - 1);
	WAIT_FOR(atomic_load(&hctx->stats.dev_resource) >= 1,
		 "the core to count the DEV_RESOURCE");
	ck_assert_uint_eq(nr_completed(ab, n), 0);

	fire(d, "vds_resume", "255");
	WAIT_FOR(tdevice_counter(d, "ring_avail") == 255, "255 ACKs");
	ck_assert_msg(mq_hctx_stopped(hctx),
		      "the queue started with less than half the ring free");
	ck_assert_uint_eq(atomic_load(&hctx->stats.dispatched), RING - 1);

	fire(d, "vds_resume", "1");
	WAIT_FOR(atomic_load(&hctx->stats.dispatched) > RING - 1,
		 "the queue to start at 50% free");

	fire(d, "vds_resume", "");
	expect_all_once(ab, n, 0);
	verify_writes(d, 0, n);
	ck_assert_uint_eq(tdevice_counter(d, "ring_avail"), RING - 1);
	ck_assert_uint_eq(tdevice_counter(d, "served"), n + n);
	free(ab);
	mq_device_destroy(d);
}
END_TEST

/* --- queue_rq: the link reset --------------------------------------- */

/*
 * 512 requests in flight (511 in the ring, one refused by the full ring)
 * when the channel resets: each in the ring is requeued exactly once,
 * none is lost, every bio completes once and the data is on the disk.
 */
START_TEST(test_ldc_reset_inflight)
{
	struct mq_device *d = VDC_NEW("scheduler=none");
	struct mq_hw_ctx *hctx = hctx0(d);
	struct abio *ab;

	fire(d, "vds_pause", "");
	ab = submit_writes(d, 0, RING);
	WAIT_FOR(atomic_load(&hctx->stats.dispatched) == RING - 1 &&
			 mq_hctx_stopped(hctx),
		 "a full ring");
	/* the refused one is uncounted once the dispatch loop has it back */
	WAIT_FOR(atomic_load(&hctx->stats.active) == RING - 1,
		 "511 requests in flight");

	tlog_clear();
	fire(d, "ldc_reset", "");
	WAIT_FOR(tdevice_counter(d, "requeued") == RING - 1, "the requeue");
	WAIT_FOR(link_is(d, "up"), "the handshake");
	ck_assert(tlog_has("vdiska ldc link reset"));
	ck_assert_uint_eq(tdevice_counter(d, "resets"), 1);
	ck_assert_uint_eq(nr_completed(ab, RING), 0);

	fire(d, "vds_resume", "");
	expect_all_once(ab, RING, 0);
	ck_assert_uint_eq(tdevice_counter(d, "requeued"), RING - 1);
	ck_assert_uint_eq(atomic_load(&hctx->stats.requeued), RING - 1);
	verify_writes(d, 0, RING);
	free(ab);
	mq_device_destroy(d);
}
END_TEST

/* Under every scheduler: a reset with requests in flight loses nothing. */
START_TEST(test_ldc_reset_schedulers)
{
	static const char *const scheds[] = {
		"scheduler=none", "scheduler=mq-deadline", "scheduler=kyber",
#ifdef MQBLK_HAVE_BFQ
		"scheduler=bfq",
#endif
		NULL};
	unsigned int s;

	for (s = 0; scheds[s]; s++) {
		struct mq_device *d = VDC_NEW(scheds[s]);
		struct abio *ab;

		fire(d, "vds_pause", "");
		ab = submit_writes(d, 0, 64);
		WAIT_FOR(tdevice_counter(d, "ring_avail") < RING - 1,
			 "a descriptor");
		fire(d, "ldc_reset", "");
		WAIT_FOR(tdevice_counter(d, "resets") == 1 && link_is(d, "up"),
			 "the handshake");
		fire(d, "vds_resume", "");
		expect_all_once(ab, 64, 0);
		ck_assert_uint_ge(tdevice_counter(d, "requeued"), 1);
		verify_writes(d, 0, 64);
		free(ab);
		mq_device_destroy(d);
	}
}
END_TEST

/*
 * Resets while requests keep arriving, from a thread that writes the
 * same 32 blocks batch after batch.  A request that meets queue_rq after
 * the channel reset and before the handshake is sent on the dead
 * channel: ENOTCONN resets the port and the request ends with EIO, as in
 * Linux.  wait_for_handshake=1 (ours) holds it until the handshake
 * instead.  Either way every bio ends exactly once (a lost one times the
 * batch out), and with 0 or EIO.
 */
struct racer {
	struct mq_device *d;
	atomic_bool stop;
	atomic_uint eio, other, batches;
	atomic_uint ok[32]; /* per block: writes that succeeded */
};

static void *racer_fn(void *arg)
{
	struct racer *r = arg;
	unsigned int i;

	while (!atomic_load(&r->stop)) {
		struct abio *ab = submit_writes(r->d, 0, 32);

		WAIT_FOR(nr_completed(ab, 32) == 32, "a batch");
		for (i = 0; i < 32; i++) {
			if (atomic_load(&ab[i].done) != 1)
				atomic_fetch_add(&r->other, 1);
			else if (ab[i].status == EIO)
				atomic_fetch_add(&r->eio, 1);
			else if (ab[i].status)
				atomic_fetch_add(&r->other, 1);
			else
				atomic_fetch_add(&r->ok[i], 1);
		}
		free(ab);
		atomic_fetch_add(&r->batches, 1);
	}
	return NULL;
}

/*
 * Reset until cond holds (the race has been met) or 2000 rounds have
 * gone by; each round waits for the handshake and for a batch after it.
 */
#define RACE_UNTIL(r, cond)                                                    \
	do {                                                                   \
		unsigned int __round;                                          \
		for (__round = 0; __round < 2000 && !(cond); __round++) {      \
			unsigned int __b = atomic_load(&(r)->batches);         \
			unsigned long __resets =                               \
				tdevice_counter((r)->d, "resets");             \
			fire((r)->d, "ldc_reset", "");                         \
			WAIT_FOR(tdevice_counter((r)->d, "resets") >           \
						 __resets &&                   \
					 link_is((r)->d, "up"),                \
				 "the handshake");                             \
			WAIT_FOR(atomic_load(&(r)->batches) > __b + 1,         \
				 "I/O after the reset");                       \
		}                                                              \
	} while (0)

static void racer_stop(struct racer *r, pthread_t t)
{
	unsigned int i;

	atomic_store(&r->stop, true);
	pthread_join(t, NULL);
	ck_assert_uint_eq(atomic_load(&r->other), 0);
	ck_assert_uint_gt(atomic_load(&r->batches), 0);
	/* the rest succeeded after the handshake: every block is written */
	for (i = 0; i < 32; i++)
		ck_assert_msg(atomic_load(&r->ok[i]) > 0,
			      "no write of block %u succeeded", i);
	verify_writes(r->d, 0, 32);
}

/* The seed's rule: some requests fail with EIO, the rest succeed. */
START_TEST(test_ldc_reset_racing_io)
{
	struct racer r = {.d = VDC_NEW("scheduler=none")};
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, racer_fn, &r), 0);
	RACE_UNTIL(&r, atomic_load(&r.eio) > 0);
	racer_stop(&r, t);
	ck_assert_msg(atomic_load(&r.eio) > 0,
		      "no request met the dead channel in 2000 resets");
	ck_assert_uint_eq(tdevice_counter(r.d, "reset_waits"), 0);
	mq_device_destroy(r.d);
}
END_TEST

/* wait_for_handshake=1: requests that meet the reset wait; none fails. */
START_TEST(test_ldc_reset_racing_io_wait)
{
	struct racer r = {
		.d = VDC_NEW("scheduler=none", "wait_for_handshake=1")};
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, racer_fn, &r), 0);
	RACE_UNTIL(&r, tdevice_counter(r.d, "reset_waits") > 0);
	racer_stop(&r, t);
	ck_assert_msg(tdevice_counter(r.d, "reset_waits") > 0,
		      "no request met the reset in 2000 resets");
	ck_assert_uint_eq(atomic_load(&r.eio), 0);
	mq_device_destroy(r.d);
}
END_TEST

/* --- queue_rq: the drain -------------------------------------------- */

/*
 * The link goes down with 32 requests in the ring and stays down: they
 * are requeued, 32 more queue behind the stopped queue, and after
 * ldc_timeout (1 s) the drain ends all 64 exactly once with EIO.  After
 * link_up, I/O works again.
 */
START_TEST(test_drain)
{
	struct mq_device *d = VDC_NEW("scheduler=none", "ldc_timeout=1");
	struct mq_hw_ctx *hctx = hctx0(d);
	struct abio *a, *b;

	fire(d, "vds_pause", "");
	a = submit_writes(d, 0, 32);
	WAIT_FOR(tdevice_counter(d, "ring_avail") == RING - 1 - 32,
		 "32 descriptors");

	tlog_clear();
	fire(d, "link_down", "");
	WAIT_FOR(tdevice_counter(d, "requeued") == 32, "the requeue");
	ck_assert(link_is(d, "down"));
	ck_assert(mq_hctx_stopped(hctx));
	b = submit_writes(d, 32, 32);

	expect_all_once(a, 32, EIO);
	expect_all_once(b, 32, EIO);
	ck_assert_uint_eq(tdevice_counter(d, "drained"), 64);
	ck_assert_msg(tlog_has("vdiska ldc down 1 seconds, draining queue"),
		      "%s", tlog_text());
	/*
	 * The requests end inside the drain; a request sent before it
	 * thaws the queue would be drained too.
	 */
	WAIT_FOR(link_is(d, "down"), "the end of the drain");

	/*
	 * The drain gave up on the link: the next request is sent, finds
	 * the link down (ENOTCONN), resets the port again and fails.
	 */
	ck_assert_uint_eq(tdevice_counter(d, "resets"), 1);
	tlog_clear();
	ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_WRITE, 0, 0,
				IO_BYTES, a[0].buf),
			 EIO);
	ck_assert_uint_eq(tdevice_counter(d, "resets"), 2);
	ck_assert_msg(tlog_has("vdc_tx_trigger() failure, err=-107"), "%s",
		      tlog_text());

	fire(d, "link_up", "");
	WAIT_FOR(link_is(d, "up"), "the handshake after link_up");
	fire(d, "vds_resume", "");
	tio_round_trip(tdevice_disk0(d)->queue, 0, 0, 8192, 9);
	ck_assert_uint_eq(tdevice_counter(d, "drained"), 64);
	free(a);
	free(b);
	mq_device_destroy(d);
}
END_TEST

/* Without ldc_timeout the requests wait for the link, and then succeed. */
START_TEST(test_link_down_waits)
{
	struct mq_device *d = VDC_NEW("scheduler=none");
	struct abio *ab;

	fire(d, "link_down", "");
	WAIT_FOR(link_is(d, "down") && mq_hctx_stopped(hctx0(d)), "the reset");
	ab = submit_writes(d, 0, 16);
	fire(d, "link_up", "");
	expect_all_once(ab, 16, 0);
	verify_writes(d, 0, 16);
	ck_assert_uint_eq(tdevice_counter(d, "drained"), 0);
	free(ab);
	mq_device_destroy(d);
}
END_TEST

/* --- the send path -------------------------------------------------- */

/*
 * __vdc_tx_trigger retries EAGAIN: 11 failures and the 12th try goes
 * through; with 12 the send gives up and the request ends with IOERR.
 */
START_TEST(test_eagain_retries)
{
	struct mq_device *d = VDC_NEW();
	unsigned char buf[4096];

	fire(d, "ldc_busy", "11");
	tio_round_trip(tdevice_disk0(d)->queue, 0, 0, 4096, 5);
	ck_assert_uint_eq(tdevice_counter(d, "eagain"), 11);

	tio_fill(buf, sizeof(buf), 6);
	fire(d, "ldc_busy", "12");
	tlog_clear();
	ck_assert_int_eq(tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_WRITE, 0, 64,
				sizeof(buf), buf),
			 EIO);
	ck_assert_uint_eq(tdevice_counter(d, "eagain"), 23);
	ck_assert(tlog_has("vdc_tx_trigger() failure"));
	/* no reset for EAGAIN, and the next send works */
	ck_assert_uint_eq(tdevice_counter(d, "resets"), 0);
	tio_round_trip(tdevice_disk0(d)->queue, 0, 64, 4096, 7);
	mq_device_destroy(d);
}
END_TEST

/*
 * A NACK does nothing in the driver: the request stays in the ring until
 * an LDC reset requeues it, and then it completes.
 */
START_TEST(test_nack)
{
	struct mq_device *d = VDC_NEW();
	struct abio *ab;

	tlog_clear();
	fire(d, "nack", "");
	ab = submit_writes(d, 0, 1);
	WAIT_FOR(tdevice_counter(d, "nacks") == 1, "the NACK");
	ck_assert(tlog_has("XXX Implement me XXX"));
	ck_assert_uint_eq(nr_completed(ab, 1), 0);
	ck_assert_uint_eq(tdevice_counter(d, "ring_avail"), RING - 2);

	fire(d, "ldc_reset", "");
	expect_all_once(ab, 1, 0);
	ck_assert_uint_eq(tdevice_counter(d, "requeued"), 1);
	verify_writes(d, 0, 1);
	free(ab);
	mq_device_destroy(d);
}
END_TEST

START_TEST(test_faults_refused)
{
	struct mq_device *d = VDC_NEW();

	ck_assert_int_eq(
		disk_fire_fault(tdevice_disk0(d), "ldc_busy", "x", NULL),
		EINVAL);
	ck_assert_int_eq(
		disk_fire_fault(tdevice_disk0(d), "vds_resume", "-1", NULL),
		EINVAL);
	{
		struct mq_err e = {""};

		ck_assert_int_eq(disk_fire_fault(tdevice_disk0(d), "ldc_busy",
						 "1001", &e),
				 ERANGE);
		ck_assert_str_eq(e.msg, "takes a count 0..1000, or nothing");
	}
	ck_assert_int_eq(disk_fire_fault(tdevice_disk0(d), "bogus", "", NULL),
			 ENOENT);
	mq_device_destroy(d);
}
END_TEST

static Suite *sunvdc_suite(void)
{
	Suite *s = suite_create("sunvdc");
	TCase *tc;

	tc = tcase_create("config");
	tcase_add_test(tc, test_disk);
	tcase_add_test(tc, test_dev_no);
	tcase_add_test(tc, test_versions);
	tcase_add_test(tc, test_bad_config);
	tcase_add_test(tc, test_cd);
	suite_add_tcase(s, tc);

	tc = tcase_create("ring");
	tcase_add_test(tc, test_ring_full);
	tcase_add_test(tc, test_eagain_retries);
	tcase_add_test(tc, test_nack);
	tcase_add_test(tc, test_faults_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("reset");
	tcase_add_test(tc, test_ldc_reset_inflight);
	tcase_add_test(tc, test_ldc_reset_schedulers);
	tcase_add_test(tc, test_ldc_reset_racing_io);
	tcase_add_test(tc, test_ldc_reset_racing_io_wait);
	tcase_add_test(tc, test_drain);
	tcase_add_test(tc, test_link_down_waits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	mq_log_set_sink(tlog_sink);
	return tcheck_run(sunvdc_suite());
}
