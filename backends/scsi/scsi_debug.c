// SPDX-License-Identifier: GPL-2.0
/*
 * scsi and sata-ssd: a SCSI host with one disk LUN on scsi-mq, in the
 * manner of drivers/scsi/scsi_debug.c, the kernel's own emulated host.
 *
 *  - scsi: a scsi-mq host, nr_hw_queues=4, can_queue=64 tags shared by
 *    the host's hardware queues, cmd_per_lun=32 as the LUN's dispatch
 *    budget, a flash SSD behind a 12 Gb/s SAS link.  With 4 hardware
 *    queues the default policy gives it none.
 *  - sata-ssd: an AHCI port: one hardware queue, NCQ depth 32
 *    (can_queue = cmd_per_lun = 32), the SATA flash SSD of
 *    ssd-timing.h.  One queue: the default policy gives it bfq.
 *
 * queuecommand executes the command against memory at once and queues
 * it to complete when the timing model says; the host's completion
 * thread (scsi_debug's hrtimers) calls scsi_done then.  It sleeps on a
 * condition variable with a timer slack of 1 ns, as the irq thread of
 * backends/common does, and spins the last spin_us (50) before a command
 * is due, since a woken thread runs tens of microseconds late on a busy
 * machine; not when more commands are queued than the client's latency
 * could notice (sdebug_should_spin).  With time_scale=0 commands
 * complete inside queuecommand.
 *
 * use_blk_mq=0 asked for the legacy request path, which seed 002 made
 * non-default (2018) and Linux removed in 5.0: it is refused.
 *
 * Fault: stall=1 makes the target hold every command it gets (queued,
 * not completed, as a hung target would) until stall=0.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "scsi.h"
#include "ssd-timing.h"
#include "../device.h"
#include "../media/media.h"
#include "../../server/mq/log.h"

struct sdebug_host {
	struct Scsi_Host shost;
	struct scsi_device sdev;
	struct gendisk disk;
	struct mq_device *mdev;
	const char *model;
	struct media *media; /* the LUN's blocks */
	struct ssd_model ssd;
	bool ssd_ready;

	/* The completion thread and the commands it waits to complete. */
	pthread_t thread;
	bool thread_ready;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	bool sync_ready;
	TAILQ_HEAD(scsi_cmnd_list, scsi_cmnd) queued; /* by due_ns */
	unsigned int nr_queued;
	bool stalled;
	bool stopping;
	uint64_t spin_ns;
	/* How late the thread completed timed commands, for the benchmark. */
	uint64_t late_ns, nr_timed;

	atomic_ulong reads, writes, discards, zeroes, flushes;
};

/* ------------------------------------------------------------------ */
/* the target                                                          */

static int sdebug_do_bio(struct sdebug_host *h, struct bio *bio)
{
	uint64_t pos = bio->bi_sector << SECTOR_SHIFT;

	switch (bio->bi_op) {
	case REQ_OP_READ:
		return media_read(h->media, bio->bi_buf, bio->bi_size, pos);
	case REQ_OP_WRITE:
		return media_write(h->media, bio->bi_buf, bio->bi_size, pos);
	case REQ_OP_DISCARD:	  /* UNMAP, with LBPRZ: reads back zeroes */
	case REQ_OP_WRITE_ZEROES: /* WRITE SAME with UNMAP */
		return media_write_zeroes(
			h->media, bio->bi_size, pos,
			(bio->bi_flags & REQ_NOUNMAP) ? MEDIA_IO_NOUNMAP : 0);
	case REQ_OP_FLUSH: /* SYNCHRONIZE CACHE: nothing volatile */
		return 0;
	default:
		return EOPNOTSUPP;
	}
}

static void sdebug_count(struct sdebug_host *h, enum req_op op)
{
	switch (op) {
	case REQ_OP_READ:
		atomic_fetch_add(&h->reads, 1);
		break;
	case REQ_OP_WRITE:
		atomic_fetch_add(&h->writes, 1);
		break;
	case REQ_OP_DISCARD:
		atomic_fetch_add(&h->discards, 1);
		break;
	case REQ_OP_WRITE_ZEROES:
		atomic_fetch_add(&h->zeroes, 1);
		break;
	default:
		atomic_fetch_add(&h->flushes, 1);
		break;
	}
}

/* Queue cmd in due order; the thread is woken if it comes first. */
static void sdebug_queue_cmd(struct sdebug_host *h, struct scsi_cmnd *cmd)
{
	struct scsi_cmnd *pos;

	pthread_mutex_lock(&h->lock);
	pos = TAILQ_LAST(&h->queued, scsi_cmnd_list);
	while (pos && pos->due_ns > cmd->due_ns)
		pos = TAILQ_PREV(pos, scsi_cmnd_list, entry);
	if (pos)
		TAILQ_INSERT_AFTER(&h->queued, pos, cmd, entry);
	else
		TAILQ_INSERT_HEAD(&h->queued, cmd, entry);
	h->nr_queued++;
	if (TAILQ_FIRST(&h->queued) == cmd)
		pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

static int sdebug_queuecommand(struct Scsi_Host *shost, struct scsi_cmnd *cmd)
{
	struct sdebug_host *h = shost->hostdata;
	struct request *rq = scsi_cmd_to_rq(cmd);
	enum req_op op = req_op(rq);
	enum ssd_op sop;
	struct bio *bio;
	bool now;

	sdebug_count(h, op);
	rq_for_each_bio (bio, rq) {
		cmd->result = sdebug_do_bio(h, bio);
		if (cmd->result)
			break;
	}
	sop = op == REQ_OP_READ	   ? SSD_READ
	      : op == REQ_OP_WRITE ? SSD_WRITE
				   : SSD_FLUSH;
	cmd->due_ns = ssd_model_submit(
		&h->ssd, sop,
		op == REQ_OP_READ || op == REQ_OP_WRITE ? blk_rq_bytes(rq) : 0,
		mq_now_ns());

	pthread_mutex_lock(&h->lock);
	/* A command after the thread stopped (none should come) ends now. */
	now = (h->ssd.scale <= 0 && !h->stalled) || h->stopping;
	pthread_mutex_unlock(&h->lock);
	if (now)
		scsi_done(cmd);
	else
		sdebug_queue_cmd(h, cmd);
	return 0;
}

static inline void sdebug_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Spin before a due time only for a command with at most
 * SDEBUG_SPIN_MAX_QUEUED commands queued, itself included.  Then the
 * thread's lateness is the client's latency.  With more queued, the
 * controller stays busy whatever the thread's lateness: a late
 * completion only takes up slack that the commands queued behind it
 * leave.  At 90k IOPS commands come due 11 us apart, so a thread that
 * spun to each of them would spin all the time and take a whole CPU
 * from the client and the server's event loops.  It sleeps to the due
 * time instead, and on waking completes whatever has come due.
 */
#define SDEBUG_SPIN_MAX_QUEUED 2

bool sdebug_should_spin(unsigned int nr_queued, uint64_t spin_ns)
{
	return spin_ns && nr_queued <= SDEBUG_SPIN_MAX_QUEUED;
}

/*
 * Sleep until due_ns, or until woken.  A thread wakes up tens of
 * microseconds late on a busy machine, a lot against a 100 us read, so
 * the last spin_us are spun, as a polling driver would, where
 * sdebug_should_spin says so.
 */
static void sdebug_wait_until(struct sdebug_host *h, uint64_t due_ns)
{
	uint64_t spin_ns =
		sdebug_should_spin(h->nr_queued, h->spin_ns) ? h->spin_ns : 0;
	uint64_t sleep_to = due_ns > spin_ns ? due_ns - spin_ns : 0;
	struct timespec ts = {
		.tv_sec = (time_t)(sleep_to / 1000000000ull),
		.tv_nsec = (long)(sleep_to % 1000000000ull),
	};

	if (mq_now_ns() < sleep_to) {
		pthread_cond_timedwait(&h->cond, &h->lock, &ts);
		return;
	}
	pthread_mutex_unlock(&h->lock);
	while (mq_now_ns() < due_ns)
		sdebug_cpu_relax();
	pthread_mutex_lock(&h->lock);
}

/*
 * The completion thread: complete each command at its due time, as
 * scsi_debug's hrtimer callback does.  Stopping completes what is left.
 */
static void *sdebug_completion_thread(void *arg)
{
	struct sdebug_host *h = arg;
	struct scsi_cmnd *cmd;

	/* Best effort: without it the waits are up to 50 us later. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0))
		pr_debug("scsi_debug: no 1 ns timer slack: %s",
			 strerror(errno));
	pthread_setname_np(pthread_self(), "scsi_done");
	pthread_mutex_lock(&h->lock);
	for (;;) {
		cmd = TAILQ_FIRST(&h->queued);
		if (!cmd) {
			if (h->stopping)
				break;
			pthread_cond_wait(&h->cond, &h->lock);
			continue;
		}
		if (!h->stopping) {
			if (h->stalled) {
				pthread_cond_wait(&h->cond, &h->lock);
				continue;
			}
			if (cmd->due_ns > mq_now_ns()) {
				sdebug_wait_until(h, cmd->due_ns);
				continue;
			}
		}
		TAILQ_REMOVE(&h->queued, cmd, entry);
		h->nr_queued--;
		if (!h->stopping) {
			uint64_t now = mq_now_ns();

			h->late_ns += now > cmd->due_ns ? now - cmd->due_ns : 0;
			h->nr_timed++;
		}
		pthread_mutex_unlock(&h->lock);
		scsi_done(cmd);
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

static const struct scsi_host_template sdebug_driver_template = {
	.name = "scsi_debug",
	.queuecommand = sdebug_queuecommand,
};

/* ------------------------------------------------------------------ */
/* faults and attributes                                               */

static int sdebug_fault_stall(struct gendisk *disk, const char *value,
			      struct mq_err *e)
{
	struct sdebug_host *h = disk->private_data;
	bool on;

	if (!value || !strcmp(value, "1") || !strcmp(value, ""))
		on = true;
	else if (!strcmp(value, "0"))
		on = false;
	else {
		mq_err_set(e, "takes 1 (or nothing) or 0");
		return EINVAL;
	}
	pthread_mutex_lock(&h->lock);
	h->stalled = on;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
	pr_warn("%s: stall=%d: the target %s", disk->disk_name, on,
		on ? "holds every command until stall=0"
		   : "completes commands again");
	return 0;
}

static const struct disk_fault sdebug_faults[] = {
	{"stall",
	 "1: the target holds every command (a hung target) until stall=0",
	 sdebug_fault_stall},
	{NULL},
};

#define SDEBUG_SHOW(_name, ...)                                                \
	static int sdebug_show_##_name(struct gendisk *disk, char *buf,        \
				       size_t len)                             \
	{                                                                      \
		struct sdebug_host *h = disk->private_data;                    \
                                                                               \
		(void)h;                                                       \
		return snprintf(buf, len, __VA_ARGS__);                        \
	}

SDEBUG_SHOW(model, "%s", h->model)
SDEBUG_SHOW(can_queue, "%u", h->shost.can_queue)
SDEBUG_SHOW(cmd_per_lun, "%u", h->shost.cmd_per_lun)
SDEBUG_SHOW(queue_depth, "%u", h->sdev.queue_depth)
SDEBUG_SHOW(host_busy, "%u", atomic_load(&h->shost.host_busy))
SDEBUG_SHOW(device_busy, "%u", atomic_load(&h->sdev.device_busy))
SDEBUG_SHOW(max_host_busy, "%u", atomic_load(&h->sdev.max_host_busy))
SDEBUG_SHOW(max_device_busy, "%u", atomic_load(&h->sdev.max_device_busy))
SDEBUG_SHOW(budget_refused, "%lu", atomic_load(&h->sdev.budget_refused))
SDEBUG_SHOW(host_refused, "%lu", atomic_load(&h->shost.host_refused))
SDEBUG_SHOW(reads, "%lu", atomic_load(&h->reads))
SDEBUG_SHOW(writes, "%lu", atomic_load(&h->writes))
SDEBUG_SHOW(discards, "%lu", atomic_load(&h->discards))
SDEBUG_SHOW(write_zeroes, "%lu", atomic_load(&h->zeroes))
SDEBUG_SHOW(flushes, "%lu", atomic_load(&h->flushes))
SDEBUG_SHOW(timing, "read %gus write %gus iops %g link %gMB/s dies %u",
	    h->ssd.p.read_us, h->ssd.p.write_us, h->ssd.p.iops,
	    h->ssd.p.link_mbps, h->ssd.p.nr_dies)

static int sdebug_show_stall(struct gendisk *disk, char *buf, size_t len)
{
	struct sdebug_host *h = disk->private_data;
	bool stalled;
	unsigned int n;

	pthread_mutex_lock(&h->lock);
	stalled = h->stalled;
	n = h->nr_queued;
	pthread_mutex_unlock(&h->lock);
	return snprintf(buf, len, "%d (%u held)", stalled, n);
}

/* "12.3 us over 4567": the mean lateness of timed completions. */
static int sdebug_show_late(struct gendisk *disk, char *buf, size_t len)
{
	struct sdebug_host *h = disk->private_data;
	uint64_t late, n;

	pthread_mutex_lock(&h->lock);
	late = h->late_ns;
	n = h->nr_timed;
	pthread_mutex_unlock(&h->lock);
	return snprintf(buf, len, "%.1f us over %" PRIu64,
			n ? (double)late / (double)n / 1000.0 : 0.0, n);
}

static const struct disk_attr sdebug_attrs[] = {
	{"model", sdebug_show_model},
	{"can_queue", sdebug_show_can_queue},
	{"cmd_per_lun", sdebug_show_cmd_per_lun},
	{"queue_depth", sdebug_show_queue_depth},
	{"host_busy", sdebug_show_host_busy},
	{"device_busy", sdebug_show_device_busy},
	{"max_host_busy", sdebug_show_max_host_busy},
	{"max_device_busy", sdebug_show_max_device_busy},
	{"budget_refused", sdebug_show_budget_refused},
	{"host_refused", sdebug_show_host_refused},
	{"reads", sdebug_show_reads},
	{"writes", sdebug_show_writes},
	{"discards", sdebug_show_discards},
	{"write_zeroes", sdebug_show_write_zeroes},
	{"flushes", sdebug_show_flushes},
	{"timing", sdebug_show_timing},
	{"stall", sdebug_show_stall},
	{"late", sdebug_show_late},
	{NULL},
};

static int sdebug_extents(struct gendisk *disk, uint64_t offset,
			  uint64_t length, extent_fn *fn, void *arg)
{
	struct sdebug_host *h = disk->private_data;

	return media_extents(h->media, offset, length, fn, arg);
}

static const struct block_device_operations sdebug_fops = {
	.extents = sdebug_extents,
};

/* ------------------------------------------------------------------ */
/* probe and remove                                                    */

static void sdebug_free(struct sdebug_host *h)
{
	if (h->thread_ready) {
		pthread_mutex_lock(&h->lock);
		h->stopping = true;
		pthread_cond_signal(&h->cond);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->thread, NULL);
	}
	scsi_remove_sdev(&h->sdev);
	scsi_mq_free_tags(&h->shost);
	if (h->ssd_ready)
		ssd_model_destroy(&h->ssd);
	if (h->sync_ready) {
		pthread_cond_destroy(&h->cond);
		pthread_mutex_destroy(&h->lock);
	}
	media_close(h->media);
	free(h);
}

static int sdebug_init_sync(struct sdebug_host *h, struct mq_err *e)
{
	pthread_condattr_t attr;
	int err;

	err = pthread_mutex_init(&h->lock, NULL);
	if (err)
		return mq_err_set(e, "mutex: %s", strerror(err));
	err = pthread_condattr_init(&attr);
	if (!err) {
		err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		if (!err)
			err = pthread_cond_init(&h->cond, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (err) {
		pthread_mutex_destroy(&h->lock);
		return mq_err_set(e, "condition variable: %s", strerror(err));
	}
	h->sync_ready = true;
	TAILQ_INIT(&h->queued);
	return 0;
}

struct sdebug_defaults {
	const char *model;
	const char *disk_name;
	unsigned int nr_hw_queues;
	unsigned int can_queue;
	unsigned int cmd_per_lun;
	double iops;
	double link_mbps;
};

static int sdebug_probe(struct mq_device *dev, struct mq_params *p,
			struct mq_err *e, const struct sdebug_defaults *def)
{
	struct ssd_params sp;
	struct sdebug_host *h;
	struct queue_limits *lim;
	uint64_t size;
	unsigned int bs, spin_us, nr_hw = def->nr_hw_queues;
	bool use_blk_mq;
	int err;

	if (mq_param_bool(p, "use_blk_mq", true, &use_blk_mq, e))
		return -1;
	if (!use_blk_mq)
		return mq_err_set(
			e,
			"use_blk_mq=0: the legacy SCSI request path is gone: scsi-mq has been the default since 2018 (commit d5038a13eca7) and the only path since Linux 5.0");

	h = calloc(1, sizeof(*h));
	if (!h)
		return mq_err_set(e, "out of memory");
	h->mdev = dev;
	h->model = def->model;

	ssd_params_default(&sp);
	sp.iops = def->iops;
	sp.link_mbps = def->link_mbps;
	if (mq_param_size(p, "size", UINT64_C(1) << 30, &size, e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &bs, e) ||
	    (nr_hw > 1 &&
	     mq_param_uint(p, "nr_hw_queues", nr_hw, 1, 64, &nr_hw, e)) ||
	    mq_param_uint(p, "can_queue", def->can_queue, 1, MQ_MAX_DEPTH,
			  &h->shost.can_queue, e) ||
	    mq_param_uint(p, "cmd_per_lun", def->cmd_per_lun, 1, MQ_MAX_DEPTH,
			  &h->shost.cmd_per_lun, e) ||
	    mq_param_uint(p, "spin_us", 50, 0, 1000, &spin_us, e) ||
	    ssd_params_read(&sp, p, e))
		goto fail;
	h->spin_ns = (uint64_t)spin_us * 1000;
	if (bs & (bs - 1)) {
		mq_err_set(e, "bs=%u: must be a power of two from 512 to 4096",
			   bs);
		goto fail;
	}
	if (!size || size % bs) {
		mq_err_set(e,
			   "size=%" PRIu64
			   ": must be a non-zero multiple of bs=%u",
			   size, bs);
		goto fail;
	}
	h->shost.nr_hw_queues = nr_hw;
	h->shost.hostt = &sdebug_driver_template;
	h->shost.hostdata = h;

	if (sdebug_init_sync(h, e))
		goto fail;
	{
		struct media_open_args a = {.block_size = bs, .name = "sda"};
		const char *media = mq_params_peek(p, "media");

		/* size= sizes RAM; other stores have their own size. */
		if (!media || !strcmp(media, "ram") || mq_params_has(p, "size"))
			a.size = size;
		if (mq_device_open_media(dev, p, NULL, NULL, "ram", &a,
					 &h->media, e))
			goto fail;
		size = h->media->size;
		/* queuecommand reads and writes the store itself. */
		h->shost.queuecommand_may_sleep = media_may_sleep(h->media);
	}
	err = ssd_model_init(&h->ssd, &sp, dev->time_scale);
	if (err) {
		mq_err_set(e, "timing model: %s", strerror(err));
		goto fail;
	}
	h->ssd_ready = true;

	err = scsi_mq_setup_tags(&h->shost, dev->io_timeout_ms);
	if (err) {
		mq_err_set(e, "cannot allocate the tag set: %s", strerror(err));
		goto fail;
	}
	err = scsi_alloc_sdev(&h->shost, &h->sdev, dev->nr_ctx, def->disk_name);
	if (err) {
		mq_err_set(e, "cannot create the queue");
		goto fail;
	}
	err = pthread_create(&h->thread, NULL, sdebug_completion_thread, h);
	if (err) {
		mq_err_set(e, "cannot start the completion thread: %s",
			   strerror(err));
		goto fail;
	}
	h->thread_ready = true;

	/* sd_revalidate_disk: what the LUN reports. */
	lim = &h->sdev.request_queue->limits;
	lim->logical_block_size = bs;
	lim->physical_block_size = bs > 4096 ? bs : 4096;
	lim->max_sectors = 2560; /* BLK_DEF_MAX_SECTORS: 1280 KiB */
	lim->max_segments = 128; /* SG_ALL */
	lim->max_discard_sectors = UINT32_MAX >> SECTOR_SHIFT;
	lim->max_write_zeroes_sectors = UINT32_MAX >> SECTOR_SHIFT;
	lim->discard_granularity = 4096;
	lim->write_cache = false; /* nothing volatile: FLUSH never comes */
	lim->fua = false;
	lim->rotational = false;

	snprintf(h->disk.disk_name, sizeof(h->disk.disk_name), "%s",
		 def->disk_name);
	snprintf(h->disk.description, sizeof(h->disk.description),
		 "%s %s (scsi-mq): can_queue %u host-wide, cmd_per_lun %u, "
		 "flash %gus read %gus write %gk IOPS",
		 def->model, def->disk_name, h->shost.can_queue,
		 h->shost.cmd_per_lun, sp.read_us, sp.write_us, sp.iops / 1000);
	h->disk.queue = h->sdev.request_queue;
	set_capacity(&h->disk, size >> SECTOR_SHIFT);
	h->disk.read_only = h->media->read_only;
	h->disk.features = DISK_FAST_ZERO | DISK_MULTI_CONN;
	h->disk.fops = &sdebug_fops;
	h->disk.attrs = sdebug_attrs;
	h->disk.faults = sdebug_faults;
	h->disk.private_data = h;

	dev->private_data = h;
	h->disk.features |= media_disk_features(h->media);
	if (mq_device_add_disk(dev, &h->disk)) {
		dev->private_data = NULL;
		if (!e->msg[0])
			mq_err_set(e, "cannot add disk %s", def->disk_name);
		goto fail;
	}
	return 0;

fail:
	sdebug_free(h);
	return -1;
}

static void sdebug_remove(struct mq_device *dev)
{
	if (!dev->private_data)
		return;
	sdebug_free(dev->private_data);
	dev->private_data = NULL;
}

static int scsi_probe(struct mq_device *dev, struct mq_params *p,
		      struct mq_err *e)
{
	static const struct sdebug_defaults def = {
		.model = "SCSI SSD",
		.disk_name = "sda",
		.nr_hw_queues = 4,
		.can_queue = 64,
		.cmd_per_lun = 32,
		.iops = 180000,
		.link_mbps = 1100, /* 12 Gb/s SAS */
	};

	return sdebug_probe(dev, p, e, &def);
}

static int sata_ssd_probe(struct mq_device *dev, struct mq_params *p,
			  struct mq_err *e)
{
	static const struct sdebug_defaults def = {
		.model = "SATA SSD",
		.disk_name = "sda",
		.nr_hw_queues = 1,
		.can_queue = 32, /* ATA_MAX_QUEUE: NCQ */
		.cmd_per_lun = 32,
		.iops = 90000,
		.link_mbps = 550, /* 6 Gb/s SATA */
	};

	return sdebug_probe(dev, p, e, &def);
}

/* The keys of both models: the LUN and its flash timing. */
/* clang-format off */
#define SDEBUG_LUN_PARAMS \
	{"size", "1G", "size in bytes (K, M, G, T, P, E suffixes)"}, \
	{"bs", "512", "logical block size, 512 to 4096, a power of two"}, \
	{"cmd_per_lun", "32", "the LUN's queue depth: its dispatch budget"}, \
	{"read_us", "100", "a 4 KiB read alone (QD1), us"}, \
	{"write_us", "120", "a 4 KiB write alone (QD1), us"}, \
	{"dies", "16", "flash dies working in parallel"}, \
	{"spin_us", "50", \
	 "spin the last us before a command is due, not wake up late, while at most 2 are queued (0: sleep)"}, \
	{"use_blk_mq", "1", \
	 "0 (the legacy request path) is refused: scsi-mq only"}
/* clang-format on */

static const struct mq_param_spec scsi_params[] = {
	SDEBUG_LUN_PARAMS,
	{"nr_hw_queues", "4", "hardware queues (1 to 64)"},
	{"can_queue", "64", "the host's tags, shared by its hardware queues"},
	{"iops", "180000", "4 KiB random reads a second at depth"},
	{"link_mbps", "1100", "link speed, MB/s (12 Gb/s SAS)"},
	{NULL},
};

static const struct mq_param_spec sata_ssd_params[] = {
	SDEBUG_LUN_PARAMS,
	{"can_queue", "32", "NCQ tags (one hardware queue)"},
	{"iops", "90000", "4 KiB random reads a second at depth"},
	{"link_mbps", "550", "link speed, MB/s (6 Gb/s SATA)"},
	{NULL},
};

const struct mq_driver scsi_driver = {
	.name = "scsi",
	.description = "scsi-mq disk on an emulated host (scsi_debug): "
		       "exports sda; 4 hw queues sharing can_queue, "
		       "cmd_per_lun budget, flash SSD timing",
	.params = scsi_params,
	.probe = scsi_probe,
	.remove = sdebug_remove,
};

const struct mq_driver sata_ssd_driver = {
	.name = "sata-ssd",
	.description = "SATA flash SSD on scsi-mq: exports sda; 1 hw queue, "
		       "NCQ depth 32, 100 us reads, 90k IOPS at QD32",
	.params = sata_ssd_params,
	.probe = sata_ssd_probe,
	.remove = sdebug_remove,
};
