// SPDX-License-Identifier: GPL-2.0
/*
 * null_blk: the multiqueue path of drivers/block/null_blk, after seed 011
 * removed the legacy one.  Requests complete inline (irqmode=0), on the
 * device's irq thread (1), or there after completion_nsec (2).  The data is
 * thrown away unless memory_backed=1 (memory.c).  mbps throttles, and the
 * timeout, requeue and init_hctx faults are injected as in Linux.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "null_blk.h"
#include "../../server/mq/log.h"

/* The fault strings, valid while probe runs. */
struct null_faults {
	const char *timeout;
	const char *requeue;
	const char *init_hctx;
};

static inline long mb_per_tick(unsigned int mbps)
{
	return (long)(((uint64_t)mbps << 20) / NULLB_TICKS_PER_SEC);
}

/* The first error of a command sticks (a timeout is not overwritten). */
static void null_set_error(struct nullb_cmd *cmd, int err)
{
	int ok = 0;

	if (err)
		atomic_compare_exchange_strong(&cmd->error, &ok, err);
}

/* ops->complete: completion context, from mq_complete_request. */
static void null_complete_rq(struct request *rq)
{
	struct nullb_cmd *cmd = mq_rq_to_pdu(rq);

	mq_end_request(rq, atomic_load(&cmd->error));
}

/* irqmode=1: the "softirq" is the device's irq thread. */
static void null_softirq_done_fn(struct irq_work *work)
{
	struct nullb_cmd *cmd = container_of(work, struct nullb_cmd, work);

	mq_complete_request(mq_rq_from_pdu(cmd));
}

/* irqmode=2: the hrtimer is a timer on the irq thread. */
static void null_cmd_timer_expired(struct irq_work *work)
{
	struct nullb_cmd *cmd = container_of(work, struct nullb_cmd, work);

	mq_end_request(mq_rq_from_pdu(cmd), atomic_load(&cmd->error));
}

static void nullb_complete_cmd(struct nullb_cmd *cmd)
{
	struct request *rq = mq_rq_from_pdu(cmd);
	struct nullb *nullb = cmd->nq->nullb;
	struct null_blk *nb = nullb->host;

	/* Complete IO by inline, softirq or timer */
	switch (nullb->dev.irqmode) {
	case NULL_IRQ_SOFTIRQ:
		irq_raise(nb->irq, &cmd->work, null_softirq_done_fn, 0);
		break;
	case NULL_IRQ_NONE:
		mq_end_request(rq, atomic_load(&cmd->error));
		break;
	case NULL_IRQ_TIMER:
		irq_raise(
			nb->irq, &cmd->work, null_cmd_timer_expired,
			mq_device_delay_ns(nb->mdev,
					   (double)nullb->dev.completion_nsec));
		break;
	}
}

/* Reads of a device without memory return zeroes. */
static void nullb_zero_read_cmd_buffer(struct nullb_cmd *cmd)
{
	struct request *rq = mq_rq_from_pdu(cmd);
	struct bio *bio;

	rq_for_each_bio (bio, rq)
		memset(bio->bi_buf, 0, bio->bi_size);
}

static int null_process_cmd(struct nullb_cmd *cmd)
{
	struct request *rq = mq_rq_from_pdu(cmd);
	struct nullb *nullb = cmd->nq->nullb;
	struct nullb_device *dev = cmd->nq->dev;
	uint64_t pos = blk_rq_pos(rq) << SECTOR_SHIFT;
	uint64_t len = blk_rq_bytes(rq);

	if (pos > dev->size || len > dev->size - pos) {
		pr_err("%s: %s beyond the end of the device: sector %" PRIu64
		       ", %" PRIu64 " bytes",
		       nullb->disk_name, req_op_name(req_op(rq)),
		       blk_rq_pos(rq), len);
		return EIO;
	}

	if (dev->zoned) {
		int ret = null_process_zoned_cmd(
			cmd, req_op(rq), blk_rq_pos(rq), blk_rq_sectors(rq));

		if (ret)
			return ret < 0 ? 0 : ret;
	}

	switch (req_op(rq)) {
	case REQ_OP_READ:
		if (!dev->memory_backed) {
			nullb_zero_read_cmd_buffer(cmd);
			return 0;
		}
		return null_handle_data_transfer(cmd);
	case REQ_OP_WRITE:
		if (!dev->memory_backed)
			return 0;
		return null_handle_data_transfer(cmd);
	case REQ_OP_DISCARD:
		if (!dev->memory_backed)
			return 0;
		if (!dev->discard)
			return EOPNOTSUPP;
		return null_handle_discard(nullb, pos, len);
	case REQ_OP_WRITE_ZEROES:
		/* REQ_NOUNMAP is not honoured: memory is not provisioned */
		if (!dev->memory_backed)
			return 0;
		return null_handle_discard(nullb, pos, len);
	default:
		return EOPNOTSUPP;
	}
}

static void null_handle_cmd(struct nullb_cmd *cmd)
{
	struct request *rq = mq_rq_from_pdu(cmd);
	int err;

	if (req_op(rq) == REQ_OP_FLUSH && cmd->nq->dev->zoned)
		err = null_zoned_flush(cmd->nq->nullb);
	else if (req_op(rq) == REQ_OP_FLUSH)
		err = null_handle_flush(cmd->nq->nullb);
	else
		err = null_process_cmd(cmd);

	/* Do not overwrite errors (e.g. timeout errors) */
	null_set_error(cmd, err);
	nullb_complete_cmd(cmd);
}

/* The bandwidth timer: refill the budget every tick, restart the queues. */
static void nullb_bwtimer_fn(struct irq_tick *tick)
{
	struct nullb *nullb = container_of(tick, struct nullb, bw_timer);
	long budget = mb_per_tick(nullb->dev.mbps);
	long cur = atomic_load(&nullb->cur_bytes);
	long next;

	do {
		if (cur >= budget)
			return;
		next = cur + budget < budget ? cur + budget : budget;
	} while (!atomic_compare_exchange_weak(&nullb->cur_bytes, &cur, next));

	if (next > 0)
		mq_start_stopped_hw_queues(nullb->q, true);
}

/*
 * Linux refuses a request that would take the budget below zero.  Here a
 * request goes through while any budget is left and the debt is paid back
 * by later ticks, so a request larger than one tick's budget (1 MiB/s is
 * 1048 bytes a millisecond) still passes, at the rate asked for.
 */
static enum mq_qrc null_handle_throttled(struct nullb_cmd *cmd)
{
	struct nullb *nullb = cmd->nq->nullb;
	struct request *rq = mq_rq_from_pdu(cmd);

	if (atomic_load(&nullb->cur_bytes) > 0) {
		atomic_fetch_sub(&nullb->cur_bytes, (long)blk_rq_bytes(rq));
		return MQ_QRC_OK;
	}

	atomic_fetch_add(&nullb->stats.throttled, 1);
	mq_stop_hw_queues(nullb->q);
	/* race with timer */
	if (atomic_load(&nullb->cur_bytes) > 0)
		mq_start_stopped_hw_queues(nullb->q, true);
	/* requeue request */
	return MQ_QRC_DEV_RESOURCE;
}

static bool should_timeout_request(struct request *rq)
{
	struct nullb_cmd *cmd = mq_rq_to_pdu(rq);
	struct nullb_device *dev = cmd->nq->dev;

	return should_fail(&dev->timeout_config, 1);
}

static bool should_requeue_request(struct request *rq)
{
	struct nullb_cmd *cmd = mq_rq_to_pdu(rq);
	struct nullb_device *dev = cmd->nq->dev;

	return should_fail(&dev->requeue_config, 1);
}

static bool should_init_hctx_fail(struct null_blk *nb)
{
	return should_fail(&nb->init_hctx_attr, 1);
}

static enum mq_eh_timer_return null_timeout_rq(struct request *rq)
{
	struct nullb_cmd *cmd = mq_rq_to_pdu(rq);
	struct nullb *nullb = cmd->nq->nullb;

	pr_err("%s: rq %p (%s, sector %" PRIu64
	       ", %u bytes) timed out%s; failing it with EIO",
	       nullb->disk_name, (void *)rq, req_op_name(req_op(rq)),
	       blk_rq_pos(rq), blk_rq_bytes(rq),
	       cmd->fake_timeout ? " (timeout fault injected)" : "");

	/*
	 * Linux fails it with BLK_STS_TIMEOUT; the NBD client gets EIO.  A
	 * real timeout (irqmode=2 slower than io_timeout) is still completed
	 * by its timer, with this error.  Only fake timeouts are ours to
	 * complete.
	 */
	atomic_store(&cmd->error, EIO);
	if (cmd->fake_timeout)
		mq_complete_request(rq);
	return MQ_EH_DONE;
}

static enum mq_qrc null_queue_rq(struct mq_hw_ctx *hctx,
				 const struct mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct nullb_cmd *cmd = mq_rq_to_pdu(rq);
	struct nullb_queue *nq = hctx->driver_data;
	struct nullb *nullb = nq->nullb;

	atomic_store(&cmd->error, 0);
	cmd->nq = nq;
	cmd->fake_timeout = false;

	if (should_requeue_request(rq)) {
		atomic_fetch_add(&nullb->stats.requeues, 1);
		/*
		 * Alternate between hitting the core BUSY path, and the
		 * driver driven requeue path (as Linux's null_queue_rq).
		 */
		if ((atomic_fetch_add(&nq->requeue_selection, 1) + 1) & 1) {
			atomic_fetch_add(&nullb->stats.requeue_resource, 1);
			pr_debug("%s: requeue fault injected: rq %p: RESOURCE",
				 nullb->disk_name, (void *)rq);
			return MQ_QRC_RESOURCE;
		}
		pr_debug("%s: requeue fault injected: rq %p: requeued",
			 nullb->disk_name, (void *)rq);
		mq_requeue_request(rq, true);
		return MQ_QRC_OK;
	}

	if (nullb->throttled) {
		enum mq_qrc sts = null_handle_throttled(cmd);

		if (sts != MQ_QRC_OK)
			return sts;
	}

	/* Decided before the timer is armed, so null_timeout_rq sees it. */
	cmd->fake_timeout = should_timeout_request(rq);

	mq_start_request(rq);

	if (cmd->fake_timeout) {
		/* just ignore the request: the timeout handler ends it */
		atomic_fetch_add(&nullb->stats.timeouts, 1);
		return MQ_QRC_OK;
	}

	null_handle_cmd(cmd);
	return MQ_QRC_OK;
}

static int null_init_hctx(struct mq_hw_ctx *hctx, void *driver_data,
			  unsigned int hctx_idx)
{
	struct null_blk *nb = driver_data;

	if (should_init_hctx_fail(nb)) {
		atomic_fetch_add(&nb->init_hctx_faults, 1);
		pr_err("null: init_hctx fault injected on hw queue %u",
		       hctx_idx);
		return -EFAULT;
	}
	return 0;
}

static const struct mq_ops null_mq_ops = {
	.queue_rq = null_queue_rq,
	.complete = null_complete_rq,
	.timeout = null_timeout_rq,
	.init_hctx = null_init_hctx,
};

static const struct block_device_operations null_ops = {
	.extents = null_report_extents,
};

static const struct block_device_operations null_zoned_ops = {
	.extents = null_report_extents,
	.report_zones = null_report_zones,
	.zone_mgmt = null_zone_mgmt,
};

/* After mq_init_queue: point every hctx at its nullb_queue. */
static int null_init_queues(struct nullb *nullb)
{
	struct mq_hw_ctx *hctx;
	unsigned int i;

	nullb->nr_queues = nullb->q->nr_hw_queues;
	nullb->queues = calloc(nullb->nr_queues, sizeof(*nullb->queues));
	if (!nullb->queues)
		return ENOMEM;

	queue_for_each_hw_ctx (nullb->q, hctx, i) {
		struct nullb_queue *nq = &nullb->queues[i];

		nq->nullb = nullb;
		nq->dev = &nullb->dev;
		hctx->driver_data = nq;
	}
	return 0;
}

static int null_init_tag_set(struct null_blk *nb, struct mq_tag_set *set,
			     const struct nullb_device *dev)
{
	set->ops = &null_mq_ops;
	set->nr_hw_queues = dev->submit_queues;
	set->queue_depth = dev->hw_queue_depth;
	set->cmd_size = sizeof(struct nullb_cmd);
	set->timeout_ms = nb->mdev->io_timeout_ms;
	set->driver_data = nb;
	set->flags = 0;
	/* queue_mode=0 was bio based: no elevator, nothing merged */
	if (dev->queue_mode == NULL_Q_BIO)
		set->flags |= MQ_F_NO_SCHED;
	else
		set->flags |= MQ_F_SHOULD_MERGE;
	if (dev->no_sched)
		set->flags |= MQ_F_NO_SCHED_BY_DEFAULT;
	if (dev->blocking)
		set->flags |= MQ_F_BLOCKING;
	return mq_alloc_tag_set(set);
}

static void null_config_limits(struct nullb *nullb)
{
	struct queue_limits *lim = &nullb->q->limits;
	struct nullb_device *dev = &nullb->dev;

	lim->logical_block_size = dev->blocksize;
	lim->physical_block_size = dev->blocksize;
	/*
	 * null_blk of seed 011 never sets max_hw_sectors, so it keeps
	 * blk_set_default_limits()'s BLK_SAFE_MAX_SECTORS: 127.5 KiB.
	 */
	lim->max_sectors = 255;
	lim->max_segments = 128;
	lim->rotational = dev->rotational;
	lim->max_discard_sectors = 0;
	lim->max_write_zeroes_sectors = 0;
	if (dev->discard) {
		lim->max_discard_sectors = UINT32_MAX >> SECTOR_SHIFT;
		lim->discard_granularity = dev->blocksize;
	}
	if (dev->memory_backed)
		lim->max_write_zeroes_sectors = UINT32_MAX >> SECTOR_SHIFT;
	lim->write_cache = null_cache_active(dev);
	lim->fua = null_cache_active(dev);
	if (dev->zoned) {
		zoned_set_limits(&dev->zd, lim);
		/* TRIM resets whole zones: never split one in the middle. */
		lim->max_discard_sectors = (UINT32_MAX >> SECTOR_SHIFT) &
					   ~(lim->chunk_sectors - 1);
		lim->discard_granularity = lim->chunk_sectors << SECTOR_SHIFT;
	}
}

static int null_setup_fault(struct fault_attr *attr, const char *key,
			    const char *str, struct mq_err *e)
{
	struct mq_err pe;

	if (!str || !str[0])
		return 0;
	if (fault_attr_parse(attr, str, &pe) == 0)
		return 0;
	mq_err_set(e, "null: %s=%s", key, pe.msg);
	return -1;
}

static void null_del_dev(struct nullb *nullb)
{
	struct nullb_device *dev = &nullb->dev;

	if (nullb->q)
		mq_cleanup_queue(nullb->q);
	if (nullb->tag_set_ready)
		mq_free_tag_set(&nullb->__tag_set);
	free(nullb->queues);
	null_free_zoned_dev(dev);
	null_free_device_storage(dev);
	if (dev->fault_ready) {
		fault_attr_destroy(&dev->timeout_config);
		fault_attr_destroy(&dev->requeue_config);
	}
	if (nullb->lock_ready)
		pthread_mutex_destroy(&nullb->lock);
	free(nullb);
}

static int null_add_dev(struct null_blk *nb, const struct nullb_device *conf,
			unsigned int index, const struct null_faults *faults,
			struct mq_err *e)
{
	struct mq_device *mdev = nb->mdev;
	struct nullb_device *dev;
	struct nullb *nullb;
	struct gendisk *disk;
	int rv;

	nullb = calloc(1, sizeof(*nullb));
	if (!nullb) {
		mq_err_set(e, "null: out of memory");
		return -1;
	}
	nb->nullbs[index] = nullb;
	nullb->host = nb;
	nullb->index = index;
	snprintf(nullb->disk.disk_name, sizeof(nullb->disk.disk_name),
		 "nullb%u", index);
	nullb->disk_name = nullb->disk.disk_name;
	dev = &nullb->dev;
	*dev = *conf;
	dev->nullb = nullb;

	rv = pthread_mutex_init(&nullb->lock, NULL);
	if (rv) {
		mq_err_set(e, "null: %s: mutex: %s", nullb->disk_name,
			   mq_strerror(rv));
		return -1;
	}
	nullb->lock_ready = true;

	fault_attr_init(&dev->timeout_config);
	fault_attr_init(&dev->requeue_config);
	dev->fault_ready = true;
	if (null_setup_fault(&dev->timeout_config, "timeout", faults->timeout,
			     e) ||
	    null_setup_fault(&dev->requeue_config, "requeue", faults->requeue,
			     e))
		return -1;

	if (dev->zoned && null_init_zoned_dev(dev, e))
		return -1;

	rv = null_setup_storage(dev, nb->media[index]);
	nb->media[index] = NULL; /* the device's now */
	if (rv) {
		mq_err_set(e, "null: %s: cannot allocate the backing store",
			   nullb->disk_name);
		return -1;
	}
	if (dev->zoned && null_zoned_attach_store(dev, e))
		return -1;

	if (dev->shared_tags) {
		nullb->tag_set = &nb->tag_set;
	} else {
		nullb->tag_set = &nullb->__tag_set;
		rv = null_init_tag_set(nb, nullb->tag_set, dev);
		if (rv) {
			mq_err_set(e,
				   "null: %s: cannot allocate the tag set: %s",
				   nullb->disk_name, mq_strerror(rv));
			return -1;
		}
		nullb->tag_set_ready = true;
	}

	nullb->q =
		mq_init_queue(nullb->tag_set, mdev->nr_ctx, nullb->disk_name);
	if (!nullb->q) {
		if (atomic_load(&nb->init_hctx_faults))
			mq_err_set(
				e,
				"null: %s: init_hctx fault injected: hw queue setup failed",
				nullb->disk_name);
		else
			mq_err_set(e, "null: %s: cannot create the queue",
				   nullb->disk_name);
		return -1;
	}
	nullb->q->queuedata = nullb;
	if (null_init_queues(nullb)) {
		mq_err_set(e, "null: out of memory");
		return -1;
	}
	null_config_limits(nullb);

	if (dev->mbps && mdev->time_scale > 0) {
		uint64_t tick =
			mq_device_delay_ns(mdev, NULLB_THROTTLE_TICK_NS);

		nullb->throttled = true;
		atomic_store(&nullb->cur_bytes, mb_per_tick(dev->mbps));
		rv = irq_tick_start(nb->irq, &nullb->bw_timer, nullb_bwtimer_fn,
				    tick ? tick : 1);
		if (rv) {
			mq_err_set(e, "null: %s: cannot start the mbps timer",
				   nullb->disk_name);
			return -1;
		}
	}

	disk = &nullb->disk;
	if (dev->zoned)
		snprintf(
			disk->description, sizeof(disk->description),
			"null_blk %s (%s, zoned host-managed: %u zones of %" PRIu64
			" MB, %u conventional)",
			nullb->disk_name,
			dev->memory_backed ? "memory backed"
					   : "not memory backed",
			dev->zd.nr_zones, dev->zone_size, dev->zd.nr_conv);
	else
		snprintf(disk->description, sizeof(disk->description),
			 "null_blk %s (%s)", nullb->disk_name,
			 dev->memory_backed ? "memory backed"
					    : "not memory backed");
	disk->queue = nullb->q;
	set_capacity(disk, dev->size >> SECTOR_SHIFT);
	disk->features = DISK_MULTI_CONN;
	if (dev->memory_backed)
		disk->features |= DISK_FAST_ZERO;
	disk->fops = dev->zoned ? &null_zoned_ops : &null_ops;
	disk->attrs = null_disk_attrs;
	disk->faults = null_disk_faults;
	disk->private_data = nullb;

	pr_debug("null: disk %s created", nullb->disk_name);
	return 0;
}

/* Tear down what probe built, in any state of completion. */
static void null_blk_free(struct null_blk *nb)
{
	unsigned int i;

	/*
	 * The order matters.  A dispatch may still be on its way out of
	 * queue_rq, past the irq_raise() whose completion ended the last bio:
	 * quiescing waits for it.  Then the irq thread goes, so that nothing
	 * ticks or completes on a queue being torn down, and only then the
	 * queues, tag sets and stores.
	 */
	for (i = 0; i < MQ_MAX_DISKS; i++)
		if (nb->nullbs[i] && nb->nullbs[i]->q)
			mq_quiesce_queue(nb->nullbs[i]->q);
	if (nb->irq)
		irq_thread_destroy(nb->irq);
	for (i = 0; i < MQ_MAX_DISKS; i++)
		if (nb->nullbs[i])
			null_del_dev(nb->nullbs[i]);
	if (nb->tag_set_ready)
		mq_free_tag_set(&nb->tag_set);
	if (nb->init_hctx_ready)
		fault_attr_destroy(&nb->init_hctx_attr);
	for (i = 0; i < MQ_MAX_DISKS; i++)
		media_close(nb->media[i]); /* opened, never taken */
	free(nb);
}

/* Read and check every key, as null_validate_conf does. */
static int null_validate_conf(struct mq_device *mdev, struct nullb_device *dev,
			      unsigned int *nr_devices,
			      struct null_faults *faults, struct mq_params *p,
			      struct mq_err *e)
{
	unsigned int gb, nr_ctx;

	if (mq_param_uint(p, "queue_mode", NULL_Q_MQ, NULL_Q_BIO, NULL_Q_MQ,
			  &dev->queue_mode, e) ||
	    mq_param_uint(p, "submit_queues", 1, 1, 1024, &dev->submit_queues,
			  e) ||
	    mq_param_uint(p, "hw_queue_depth", 64, 1, MQ_MAX_DEPTH,
			  &dev->hw_queue_depth, e) ||
	    mq_param_uint(p, "irqmode", NULL_IRQ_SOFTIRQ, NULL_IRQ_NONE,
			  NULL_IRQ_TIMER, &dev->irqmode, e) ||
	    mq_param_u64(p, "completion_nsec", 10000, 0, 3600000000000ULL,
			 &dev->completion_nsec, e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &dev->blocksize, e) ||
	    mq_param_uint(p, "gb", 250, 1, 1u << 20, &gb, e) ||
	    mq_param_size(p, "size", (uint64_t)gb << 30, &dev->size, e) ||
	    mq_param_uint(p, "nr_devices", 1, 1, MQ_MAX_DISKS, nr_devices, e) ||
	    mq_param_bool(p, "memory_backed", false, &dev->memory_backed, e) ||
	    mq_param_bool(p, "discard", false, &dev->discard, e) ||
	    mq_param_u64(p, "cache_size", 0, 0, 1ULL << 30, &dev->cache_size,
			 e) ||
	    mq_param_uint(p, "mbps", 0, 0, 40 * 1024, &dev->mbps, e) ||
	    mq_param_bool(p, "blocking", false, &dev->blocking, e) ||
	    mq_param_bool(p, "shared_tags", false, &dev->shared_tags, e) ||
	    mq_param_bool(p, "no_sched", false, &dev->no_sched, e) ||
	    mq_param_bool(p, "rotational", false, &dev->rotational, e) ||
	    mq_param_bool(p, "zoned", false, &dev->zoned, e) ||
	    mq_param_u64(p, "zone_size", 256, 1, 2048, &dev->zone_size, e) ||
	    mq_param_u64(p, "zone_capacity", 0, 0, 2048, &dev->zone_capacity,
			 e) ||
	    mq_param_uint(p, "zone_nr_conv", 0, 0, UINT32_MAX,
			  &dev->zone_nr_conv, e) ||
	    mq_param_uint(p, "zone_max_open", 0, 0, UINT32_MAX,
			  &dev->zone_max_open, e) ||
	    mq_param_uint(p, "zone_max_active", 0, 0, UINT32_MAX,
			  &dev->zone_max_active, e) ||
	    mq_param_str(p, "timeout", NULL, &faults->timeout, e) ||
	    mq_param_str(p, "requeue", NULL, &faults->requeue, e) ||
	    mq_param_str(p, "init_hctx", NULL, &faults->init_hctx, e))
		return -1;

	if (dev->queue_mode == NULL_Q_RQ) {
		mq_err_set(
			e,
			"null: queue_mode=1: legacy IO path no longer available");
		return -1;
	}
	if (dev->blocksize & (dev->blocksize - 1)) {
		mq_err_set(e, "null: bs=%u: must be 512, 1024, 2048 or 4096",
			   dev->blocksize);
		return -1;
	}
	if (dev->size == 0 || dev->size % dev->blocksize) {
		mq_err_set(e,
			   "null: size=%" PRIu64
			   ": must be a non-zero multiple of bs=%u",
			   dev->size, dev->blocksize);
		return -1;
	}

	nr_ctx = mdev->nr_ctx ? mdev->nr_ctx : MQ_DEFAULT_NR_CTX;
	if (dev->submit_queues > nr_ctx) {
		pr_info("null: submit_queues=%u: set to %u, the number of software queues",
			dev->submit_queues, nr_ctx);
		dev->submit_queues = nr_ctx;
	}
	if (dev->discard && !dev->memory_backed) {
		pr_info("null: discard option is ignored without memory backing");
		dev->discard = false;
	}
	/* cache is meaningless without memory */
	if (!dev->memory_backed)
		dev->cache_size = 0;
	return 0;
}

/*
 * memory_backed=1: each disk's data in a store, media= (sparse RAM by
 * default).  size= (or gb=) stays the disk's size whatever the store.
 */
static int null_open_media(struct null_blk *nb, struct nullb_device *conf,
			   unsigned int nr_devices, struct mq_params *p,
			   struct mq_err *e)
{
	const char *media = mq_params_peek(p, "media");
	unsigned int i;

	if (!conf->memory_backed) {
		if (media)
			return mq_err_set(e,
					  "null: media=%s needs "
					  "memory_backed=1 (without it "
					  "null_blk keeps no data)",
					  media);
		return 0;
	}
	if (media && strcmp(media, "ram") && nr_devices > 1)
		return mq_err_set(e,
				  "null: media=%s: would be shared by %u "
				  "devices (nr_devices=1, or media=ram)",
				  media, nr_devices);
	for (i = 0; i < nr_devices; i++) {
		struct media_open_args a = {
			.size = conf->size,
			.block_size = conf->blocksize,
			.name = "nullb",
		};

		if (mq_device_open_media(nb->mdev, p, NULL, NULL, "ram", &a,
					 &nb->media[i], e))
			return -1;
		if (nb->media[i]->read_only)
			return mq_err_set(e, "null: media=%s is read-only",
					  nb->media[i]->desc);
		/*
		 * queue_rq copies to and from the store (and a FLUSH writes
		 * the cache back) itself: off the submitters, as blocking=1.
		 */
		if (media_may_sleep(nb->media[i]))
			conf->blocking = true;
	}
	return 0;
}

static int null_probe(struct mq_device *mdev, struct mq_params *p,
		      struct mq_err *e)
{
	struct nullb_device conf = {0};
	struct null_faults faults = {0};
	unsigned int nr_devices, i;
	struct null_blk *nb;

	nb = calloc(1, sizeof(*nb));
	if (!nb) {
		mq_err_set(e, "null: out of memory");
		return -1;
	}
	nb->mdev = mdev;

	if (null_validate_conf(mdev, &conf, &nr_devices, &faults, p, e) ||
	    null_open_media(nb, &conf, nr_devices, p, e))
		goto fail;

	fault_attr_init(&nb->init_hctx_attr);
	nb->init_hctx_ready = true;
	if (null_setup_fault(&nb->init_hctx_attr, "init_hctx", faults.init_hctx,
			     e))
		goto fail;

	if (conf.irqmode != NULL_IRQ_NONE ||
	    (conf.mbps && mdev->time_scale > 0)) {
		nb->irq = irq_thread_create("null_blk");
		if (!nb->irq) {
			mq_err_set(e, "null: cannot start the irq thread");
			goto fail;
		}
	}

	if (conf.shared_tags) {
		int rv = null_init_tag_set(nb, &nb->tag_set, &conf);

		if (rv) {
			mq_err_set(
				e,
				"null: cannot allocate the shared tag set: %s",
				mq_strerror(rv));
			goto fail;
		}
		nb->tag_set_ready = true;
	}

	for (i = 0; i < nr_devices; i++) {
		if (null_add_dev(nb, &conf, i, &faults, e))
			goto fail;
		nb->nr_devices++;
	}

	for (i = 0; i < nr_devices; i++) {
		nb->nullbs[i]->disk.features |=
			media_disk_features(nb->nullbs[i]->dev.data);
		if (mq_device_add_disk(mdev, &nb->nullbs[i]->disk)) {
			mq_err_set(e, "null: cannot add disk %s",
				   nb->nullbs[i]->disk_name);
			/* take back the disks added so far: they are ours */
			while (mdev->nr_disks)
				mdev->disks[--mdev->nr_disks] = NULL;
			goto fail;
		}
	}

	mdev->private_data = nb;
	return 0;

fail:
	null_blk_free(nb);
	return -1;
}

static void null_remove(struct mq_device *mdev)
{
	struct null_blk *nb = mdev->private_data;

	if (!nb)
		return;
	null_blk_free(nb);
	mdev->private_data = NULL;
}

/* Graceful shutdown: write the caches back (they are memory too). */
static int null_sync(struct mq_device *mdev)
{
	struct null_blk *nb = mdev->private_data;
	unsigned int i;
	int err = 0;

	for (i = 0; nb && i < nb->nr_devices; i++) {
		int ret = null_handle_flush(nb->nullbs[i]);

		if (ret && !err)
			err = ret;
	}
	return err;
}

static const struct mq_param_spec null_params[] = {
	{"queue_mode", "2", "0 bio (no elevator), 1 rq (refused), 2 mq"},
	{"submit_queues", "1", "number of hw queues"},
	{"hw_queue_depth", "64", "depth of each hw queue"},
	{"irqmode", "1",
	 "completion: 0 inline, 1 on the irq thread, 2 after completion_nsec"},
	{"completion_nsec", "10000", "irqmode=2 completion time, ns"},
	{"size", "250G", "bytes, with a K, M, G or T suffix (default: gb GiB)"},
	{"bs", "512", "block size: 512, 1024, 2048 or 4096"},
	{"gb", "250", "size in GiB when size= is not given"},
	{"nr_devices", "1", "disks to export: nullb0 .. nullbN-1"},
	{"memory_backed", "0", "keep the data; 0 discards it, reads zeroes"},
	{"discard", "0", "support discard (memory_backed=1 only)"},
	{"cache_size", "0", "volatile write cache, MiB (memory_backed=1)"},
	{"mbps", "0", "bandwidth limit, MiB/s; 0 is unlimited"},
	{"blocking", "0", "queue_rq may sleep: dispatch from a worker"},
	{"shared_tags", "0", "all disks share one tag set"},
	{"no_sched", "0", "no I/O scheduler by default"},
	{"rotational", "0", "report a rotational device"},
	{"zoned", "0", "host-managed zoned: sequential write required zones"},
	{"zone_size", "256", "zoned: zone size, MB, a power of two, <= 2048"},
	{"zone_capacity", "0", "zoned: writable MB of a zone; 0: zone_size"},
	{"zone_nr_conv", "0", "zoned: conventional zones, the first ones"},
	{"zone_max_open", "0", "zoned: open zones at most; 0: no limit"},
	{"zone_max_active", "0", "zoned: open or closed zones; 0: no limit"},
	MQ_ZONE_WRITE_PLUGGING_PARAM,
	{"timeout", NULL, "fault: interval,probability,space,times"},
	{"requeue", NULL, "fault: interval,probability,space,times"},
	{"init_hctx", NULL, "fault: interval,probability,space,times"},
	{NULL},
};

static bool null_zoned(const struct mq_params *p)
{
	const char *v = mq_params_peek(p, "zoned");

	return v && (!strcmp(v, "1") || !strcasecmp(v, "true") ||
		     !strcasecmp(v, "yes") || !strcasecmp(v, "on"));
}

const struct mq_driver null_blk_driver = {
	.name = "null",
	.description = "null_blk: discards or keeps data in memory, fast",
	.params = null_params,
	.probe = null_probe,
	.remove = null_remove,
	.sync = null_sync,
	.zoned = null_zoned,
};
