// SPDX-License-Identifier: GPL-2.0
/*
 * The nodes of one export: queue/ and stat as block/blk-sysfs.c and
 * block/genhd.c show them, mq/N/ after block/blk-mq-debugfs.c,
 * queue/iosched/ from the elevators' elv_fs_entry tables, and device/
 * and fault/ from the gendisk.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "../mq/blk-mq.h"
#include "../mq/log.h"
#include "../../scheduler/policy.h"
#include "../../backends/bdev.h"
#include "../../backends/log-writes.h"

static int fit(int n, size_t len)
{
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

/* ---- queue/ ------------------------------------------------------ */

enum queue_attr {
	QA_NR_HW_QUEUES,
	QA_NR_REQUESTS,
	QA_ROTATIONAL,
	QA_ZONED,
	QA_LBS,
	QA_PBS,
	QA_MAX_SECTORS_KB,
	QA_WRITE_CACHE,
	QA_SCHED_REASON,
	QA_IOPRIO_MAP,
	NR_QUEUE_ATTRS,
};

static const char *const queue_attr_names[NR_QUEUE_ATTRS] = {
	[QA_NR_HW_QUEUES] = "nr_hw_queues",
	[QA_NR_REQUESTS] = "nr_requests",
	[QA_ROTATIONAL] = "rotational",
	[QA_ZONED] = "zoned",
	[QA_LBS] = "logical_block_size",
	[QA_PBS] = "physical_block_size",
	[QA_MAX_SECTORS_KB] = "max_sectors_kb",
	[QA_WRITE_CACHE] = "write_cache",
	[QA_SCHED_REASON] = "scheduler_reason",
	[QA_IOPRIO_MAP] = "ioprio_map",
};

static int queue_attr_show(const struct ctl_node *n, char *buf, size_t len)
{
	struct mq_queue *q = n->disk->queue;
	const struct queue_limits *lim = &q->limits;
	static const char *const zoned[] = {
		[BLK_ZONED_NONE] = "none",
		[BLK_ZONED_HA] = "host-aware",
		[BLK_ZONED_HM] = "host-managed",
	};

	switch ((enum queue_attr)n->idx) {
	case QA_NR_HW_QUEUES:
		return fit(snprintf(buf, len, "%u", q->nr_hw_queues), len);
	case QA_NR_REQUESTS:
		return fit(snprintf(buf, len, "%u", q->nr_requests), len);
	case QA_ROTATIONAL:
		return fit(snprintf(buf, len, "%d", lim->rotational), len);
	case QA_ZONED:
		return fit(snprintf(buf, len, "%s",
				    lim->zoned <= BLK_ZONED_HM
					    ? zoned[lim->zoned]
					    : "unknown"),
			   len);
	case QA_LBS:
		return fit(snprintf(buf, len, "%u", lim->logical_block_size),
			   len);
	case QA_PBS:
		return fit(snprintf(buf, len, "%u", lim->physical_block_size),
			   len);
	case QA_MAX_SECTORS_KB:
		return fit(snprintf(buf, len, "%u", lim->max_sectors >> 1),
			   len);
	case QA_WRITE_CACHE:
		return fit(snprintf(buf, len, "%s",
				    lim->write_cache ? "write back"
						     : "write through"),
			   len);
	case QA_SCHED_REASON:
		return fit(snprintf(buf, len, "%s", q->sched_reason), len);
	case QA_IOPRIO_MAP:
		return mq_show_ioprio_map(q, buf, len);
	default:
		return -EINVAL;
	}
}

static const struct ctl_node_ops queue_attr_ops = {.show = queue_attr_show};
/* scheduler_reason is written by a switch. */
static const struct ctl_node_ops sched_reason_ops = {
	.show = queue_attr_show,
	.elv = true,
};

/* Writable as in Linux's queue_requests_store(). */
static int nr_requests_store(const struct ctl_node *n, const char *value,
			     struct mq_err *e)
{
	struct mq_queue *q = n->disk->queue;
	unsigned int max = mq_max_nr_requests(q);
	int64_t v;

	if (mq_attr_number(value, 1, max, &v) ||
	    mq_update_nr_requests(q, (unsigned int)v))
		return mq_err_set(e, "nr_requests must be 1..%u", max);
	return 0;
}

/* I/O priorities by client identity, for bios that come without one. */
static int ioprio_map_store(const struct ctl_node *n, const char *value,
			    struct mq_err *e)
{
	int err = mq_set_ioprio_map(n->disk->queue, value);

	if (err == ENOMEM)
		return mq_err_set(e, "out of memory");
	if (err)
		return mq_err_set(e, "ioprio_map: KIND:VALUE=PRIO ..., KIND "
				     "user, uid or addr, PRIO rt/0-7, be/0-7, "
				     "idle or none");
	return 0;
}

static const struct ctl_node_ops ioprio_map_ops = {
	.show = queue_attr_show,
	.store = ioprio_map_store,
};

/* Under the elevator lock: a switch in progress replaces the depths. */
static const struct ctl_node_ops nr_requests_ops = {
	.show = queue_attr_show,
	.store = nr_requests_store,
	.elv = true,
};

/* "none mq-deadline kyber [bfq]", as elv_iosched_show with none first. */
static int scheduler_show(const struct ctl_node *n, char *buf, size_t len)
{
	struct mq_queue *q = n->disk->queue;
	const char *cur = mq_elevator_name(q);
	size_t used = 0;
	unsigned int i;
	int r;

	r = snprintf(buf, len, strcmp(cur, "none") ? "none" : "[none]");
	if (fit(r, len) < 0)
		return -ENOSPC;
	used = r;
	if (q->tag_set->flags & MQ_F_NO_SCHED)
		return used;
	for (i = 0; mq_elevators[i]; i++) {
		const char *name = mq_elevators[i]->elevator_name;

		r = snprintf(buf + used, len - used,
			     strcmp(cur, name) ? " %s" : " [%s]", name);
		if (fit(r, len - used) < 0)
			return -ENOSPC;
		used += r;
	}
	return used;
}

static int scheduler_store(const struct ctl_node *n, const char *value,
			   struct mq_err *e)
{
	return elv_policy_switch_timeout(
		n->disk, value, "set by control",
		n->cd ? n->cd->freeze_timeout_ms : CTL_FREEZE_TIMEOUT_MS, e);
}

static const struct ctl_node_ops scheduler_ops = {
	.show = scheduler_show,
	.store = scheduler_store,
	.elv = true,
};

/* ---- queue/iosched/ ---------------------------------------------- */

static const struct elv_fs_entry *iosched_entry(const struct ctl_node *n)
{
	struct elevator_queue *eq = n->disk->queue->elevator;
	const struct elv_fs_entry *a;

	if (!eq)
		return NULL;
	for (a = eq->type->elevator_attrs; a && a->name; a++)
		if (!strcmp(a->name, n->data))
			return a;
	return NULL;
}

static bool iosched_visible(const struct ctl_node *n)
{
	return iosched_entry(n) != NULL;
}

static int iosched_show(const struct ctl_node *n, char *buf, size_t len)
{
	const struct elv_fs_entry *a = iosched_entry(n);
	ssize_t r;

	if (!a || !a->show)
		return -ENOENT;
	r = a->show(n->disk->queue->elevator, buf, len);
	if (r < 0)
		return (int)r;
	if ((size_t)r >= len)
		return -ENOSPC;
	buf[r] = '\0';
	while (r > 0 && buf[r - 1] == '\n')
		buf[--r] = '\0';
	return (int)r;
}

static int iosched_store(const struct ctl_node *n, const char *value,
			 struct mq_err *e)
{
	return elv_attr_store(n->disk->queue, n->data, value, e);
}

static const struct ctl_node_ops iosched_ops = {
	.show = iosched_show,
	.store = iosched_store,
	.visible = iosched_visible,
	.elv = true,
};

/* ---- stat and inflight --------------------------------------------- */

#define NS_PER_MS 1000000ull

/* The 17 fields of Documentation/block/stat.rst, times in ms. */
static int stat_show(const struct ctl_node *n, char *buf, size_t len)
{
	struct mq_queue_stats *st = &n->disk->queue->stats;
	unsigned long v[NR_STAT_GROUPS][4];
	uint64_t io_ticks, in_queue;
	unsigned int inflight, g;

	for (g = 0; g < NR_STAT_GROUPS; g++) {
		v[g][0] =
			atomic_load_explicit(&st->ios[g], memory_order_relaxed);
		v[g][1] = atomic_load_explicit(&st->merges[g],
					       memory_order_relaxed);
		v[g][2] = atomic_load_explicit(&st->sectors[g],
					       memory_order_relaxed);
		v[g][3] = atomic_load_explicit(&st->nsecs[g],
					       memory_order_relaxed) /
			  NS_PER_MS;
	}
	inflight =
		atomic_load(&st->in_flight[0]) + atomic_load(&st->in_flight[1]);
	io_ticks = atomic_load(&st->io_ticks_ns) / NS_PER_MS;
	in_queue = atomic_load(&st->time_in_queue_ns) / NS_PER_MS;
	return fit(snprintf(buf, len,
			    "%lu %lu %lu %lu %lu %lu %lu %lu %u %" PRIu64
			    " %" PRIu64 " %lu %lu %lu %lu %lu %lu",
			    v[STAT_READ][0], v[STAT_READ][1], v[STAT_READ][2],
			    v[STAT_READ][3], v[STAT_WRITE][0], v[STAT_WRITE][1],
			    v[STAT_WRITE][2], v[STAT_WRITE][3], inflight,
			    io_ticks, in_queue, v[STAT_DISCARD][0],
			    v[STAT_DISCARD][1], v[STAT_DISCARD][2],
			    v[STAT_DISCARD][3], v[STAT_FLUSH][0],
			    v[STAT_FLUSH][3]),
		   len);
}

static int inflight_show(const struct ctl_node *n, char *buf, size_t len)
{
	struct mq_queue_stats *st = &n->disk->queue->stats;

	return fit(snprintf(buf, len, "%u %u", atomic_load(&st->in_flight[0]),
			    atomic_load(&st->in_flight[1])),
		   len);
}

static const struct ctl_node_ops stat_ops = {.show = stat_show};
static const struct ctl_node_ops inflight_ops = {.show = inflight_show};

/* ---- mq/N/ ------------------------------------------------------- */

enum hctx_attr {
	HA_TAGS,
	HA_SCHED_TAGS,
	HA_DISPATCHED,
	HA_QUEUED,
	HA_RUN,
	HA_ACTIVE,
	HA_STATE,
	NR_HCTX_ATTRS,
};

static const char *const hctx_attr_names[NR_HCTX_ATTRS] = {
	[HA_TAGS] = "tags",
	[HA_SCHED_TAGS] = "sched_tags",
	[HA_DISPATCHED] = "dispatched",
	[HA_QUEUED] = "queued",
	[HA_RUN] = "run",
	[HA_ACTIVE] = "active",
	[HA_STATE] = "state",
};

static int tags_show(struct mq_tags *tags, char *buf, size_t len)
{
	struct mq_tags_info info;

	if (!mq_tags_info(tags, &info))
		return fit(snprintf(buf, len, "none"), len);
	return fit(snprintf(buf, len, "nr_tags=%u nr_reserved_tags=%u busy=%u",
			    info.nr_tags, info.nr_reserved_tags, info.busy),
		   len);
}

static int state_show(unsigned int state, char *buf, size_t len)
{
	static const char *const names[] = {"STOPPED", "SCHED_RESTART",
					    "TAG_WAITING"};
	size_t used = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int r;

		if (!(state & (1u << i)))
			continue;
		r = snprintf(buf + used, len - used, "%s%s", used ? "|" : "",
			     names[i]);
		if (fit(r, len - used) < 0)
			return -ENOSPC;
		used += r;
	}
	return used;
}

/*
 * The elevator switch frees and reallocates sched_tags while the queue is
 * frozen; switches run under the export's elv_lock, as this does, so the
 * pointer read here is stable.
 */
static int hctx_show(const struct ctl_node *n, char *buf, size_t len)
{
	struct mq_queue *q = n->disk->queue;
	struct mq_hw_ctx *hctx;
	unsigned int a = n->idx & 0xff, i = n->idx >> 8;

	if (i >= q->nr_hw_queues)
		return -ENOENT;
	hctx = q->queue_hw_ctx[i];
	switch ((enum hctx_attr)a) {
	case HA_TAGS:
		return tags_show(hctx->tags, buf, len);
	case HA_SCHED_TAGS:
		return tags_show(hctx->sched_tags, buf, len);
	case HA_DISPATCHED:
		return fit(snprintf(buf, len, "%lu",
				    atomic_load(&hctx->stats.dispatched)),
			   len);
	case HA_QUEUED:
		return fit(snprintf(buf, len, "%lu",
				    atomic_load(&hctx->stats.queued)),
			   len);
	case HA_RUN:
		return fit(snprintf(buf, len, "%lu",
				    atomic_load(&hctx->stats.run)),
			   len);
	case HA_ACTIVE:
		return fit(snprintf(buf, len, "%u",
				    atomic_load(&hctx->stats.active)),
			   len);
	case HA_STATE:
		return state_show(atomic_load(&hctx->state), buf, len);
	default:
		return -EINVAL;
	}
}

/*
 * mq/frozen: 1 while a freeze holds the queue (a switch waiting for it
 * to drain, say), as debugfs's state shows a queue's flags.  Read
 * without the elevator lock: it answers while a switch waits.
 */
static int frozen_show(const struct ctl_node *n, char *buf, size_t len)
{
	return fit(snprintf(buf, len, "%d",
			    atomic_load(&n->disk->queue->frozen) ? 1 : 0),
		   len);
}

static const struct ctl_node_ops frozen_ops = {.show = frozen_show};

static const struct ctl_node_ops hctx_ops = {.show = hctx_show};
/* sched_tags are freed and made anew by a switch. */
static const struct ctl_node_ops hctx_sched_ops = {
	.show = hctx_show,
	.elv = true,
};

/* ---- zoned: queue/ limits, zones, zone/ ---------------------------- */

enum zoned_attr {
	ZA_NR_ZONES,
	ZA_CHUNK_SECTORS,
	ZA_MAX_OPEN_ZONES,
	ZA_MAX_ACTIVE_ZONES,
	ZA_ZONE_APPEND_MAX_BYTES,
	ZA_ZONE_WRITE_PLUGGING,
	NR_ZONED_ATTRS,
};

static const char *const zoned_attr_names[NR_ZONED_ATTRS] = {
	[ZA_NR_ZONES] = "nr_zones",
	[ZA_CHUNK_SECTORS] = "chunk_sectors",
	[ZA_MAX_OPEN_ZONES] = "max_open_zones",
	[ZA_MAX_ACTIVE_ZONES] = "max_active_zones",
	[ZA_ZONE_APPEND_MAX_BYTES] = "zone_append_max_bytes",
	[ZA_ZONE_WRITE_PLUGGING] = "zone_write_plugging",
};

static int zoned_attr_show(const struct ctl_node *n, char *buf, size_t len)
{
	struct mq_queue *q = n->disk->queue;
	const struct queue_limits *lim = &q->limits;
	uint64_t v;

	switch ((enum zoned_attr)n->idx) {
	case ZA_NR_ZONES:
		v = lim->nr_zones;
		break;
	case ZA_CHUNK_SECTORS:
		v = lim->chunk_sectors;
		break;
	case ZA_MAX_OPEN_ZONES:
		v = lim->max_open_zones;
		break;
	case ZA_MAX_ACTIVE_ZONES:
		v = lim->max_active_zones;
		break;
	case ZA_ZONE_APPEND_MAX_BYTES:
		v = (uint64_t)lim->max_zone_append_sectors << SECTOR_SHIFT;
		break;
	case ZA_ZONE_WRITE_PLUGGING:
		v = q->zone_write_plugging;
		break;
	default:
		return -EINVAL;
	}
	return fit(snprintf(buf, len, "%" PRIu64, v), len);
}

static const struct ctl_node_ops zoned_attr_ops = {.show = zoned_attr_show};

static int zones_show(const struct ctl_node *n, char *buf, size_t len)
{
	const struct queue_limits *lim = &n->disk->queue->limits;

	return fit(snprintf(buf, len,
			    "%u zones of %u sectors, %u conventional (get "
			    "prints one line per zone)",
			    lim->nr_zones, lim->chunk_sectors,
			    lim->nr_conv_zones),
		   len);
}

static int zone_line(const struct blk_zone *z, unsigned int idx, void *data)
{
	char line[192];

	(void)idx;
	if (blk_zone_format(z, line, sizeof(line)) < 0)
		return -ENOSPC;
	ctl_buf_printf(data, "+%s\n", line);
	return 0;
}

/* blkzone report: one line per zone. */
static int zones_show_lines(const struct ctl_node *n, struct ctl_buf *out)
{
	struct gendisk *disk = n->disk;
	int r = blkdev_report_zones(disk, 0, disk->queue->limits.nr_zones,
				    zone_line, out);

	return r < 0 ? r : 0;
}

static const struct ctl_node_ops zones_ops = {
	.show = zones_show,
	.show_lines = zones_show_lines,
};

static const char *const zone_op_names[] = {
	[BLK_ZONE_OP_RESET] = "reset",
	[BLK_ZONE_OP_OPEN] = "open",
	[BLK_ZONE_OP_CLOSE] = "close",
	[BLK_ZONE_OP_FINISH] = "finish",
};

static int zone_op_show(const struct ctl_node *n, char *buf, size_t len)
{
	return fit(snprintf(buf, len, "write N or all: %s zone N, or all zones",
			    zone_op_names[n->idx]),
		   len);
}

static int zone_op_store(const struct ctl_node *n, const char *value,
			 struct mq_err *e)
{
	struct gendisk *disk = n->disk;
	unsigned int nr = disk->queue->limits.nr_zones;
	int64_t zone = BLK_ALL_ZONES;
	int err;

	if (strcmp(value, "all") &&
	    (!nr || mq_attr_number(value, 0, nr - 1, &zone)))
		return mq_err_set(e, "zone/%s takes a zone number 0..%u or all",
				  zone_op_names[n->idx], nr ? nr - 1 : 0);
	err = blkdev_zone_mgmt(disk, (enum blk_zone_op)n->idx,
			       (unsigned int)zone);
	if (err == BLK_STS_ZONE_OPEN_RESOURCE)
		return mq_err_set(e, "zone %s %s: no open zone left (max_open)",
				  zone_op_names[n->idx], value);
	if (err == BLK_STS_ZONE_ACTIVE_RESOURCE)
		return mq_err_set(
			e, "zone %s %s: no active zone left (max_active)",
			zone_op_names[n->idx], value);
	if (err)
		return mq_err_set(e, "zone %s %s: %s%s", zone_op_names[n->idx],
				  value, mq_strerror(err),
				  err == EINVAL ? " (a conventional zone)"
				  : err == EIO	? " (its condition forbids it)"
						: "");
	pr_info("%s: zone %s %s", disk->disk_name, zone_op_names[n->idx],
		value);
	return 0;
}

static const struct ctl_node_ops zone_op_ops = {
	.show = zone_op_show,
	.store = zone_op_store,
};

/* ---- device/ and fault/ -------------------------------------------- */

static int device_show(const struct ctl_node *n, char *buf, size_t len)
{
	const struct disk_attr *a = n->data;

	return a->show(n->disk, buf, len);
}

static const struct ctl_node_ops device_ops = {.show = device_show};

static int fault_show(const struct ctl_node *n, char *buf, size_t len)
{
	const struct disk_fault *f = n->data;

	return fit(snprintf(buf, len, "%s", f->help ? f->help : ""), len);
}

static int fault_store(const struct ctl_node *n, const char *value,
		       struct mq_err *e)
{
	const struct disk_fault *f = n->data;
	struct mq_err why = {""};
	int err = f->fire(n->disk, value, &why);

	if (err)
		return mq_err_set(e, "fault %s refused '%s': %s", f->name,
				  value,
				  why.msg[0] ? why.msg : mq_strerror(err));
	return 0;
}

static const struct ctl_node_ops fault_ops = {
	.show = fault_show,
	.store = fault_store,
};

/* ---- log_writes/ ---------------------------------------------------- */

static int lw_state_show(const struct ctl_node *n, char *buf, size_t len)
{
	return log_writes_show(mq_bdev_log_writes(n->disk->bdev), buf, len);
}

static const struct ctl_node_ops lw_state_ops = {.show = lw_state_show};

static int lw_mark_show(const struct ctl_node *n, char *buf, size_t len)
{
	return fit(snprintf(buf, len, "write NAME to log a MARK entry"), len);
}

static int lw_mark_store(const struct ctl_node *n, const char *value,
			 struct mq_err *e)
{
	return log_writes_mark(mq_bdev_log_writes(n->disk->bdev), value, e);
}

static const struct ctl_node_ops lw_mark_ops = {
	.show = lw_mark_show,
	.store = lw_mark_store,
};

/* ---- registration ------------------------------------------------ */

/* The disk's own name: the export's name is the tree's. */
static int disk_name_show(const struct ctl_node *n, char *buf, size_t len)
{
	return fit(snprintf(buf, len, "%s", n->disk->disk_name), len);
}

static const struct ctl_node_ops disk_name_ops = {.show = disk_name_show};

struct adding {
	struct ctl_tree *t;
	struct gendisk *disk;
	struct ctl_disk *cd;
};

static int add(struct adding *ad, const struct ctl_node_ops *ops,
	       const void *data, unsigned int idx, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int add(struct adding *ad, const struct ctl_node_ops *ops,
	       const void *data, unsigned int idx, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= sizeof(path))
		return -1;
	return ctl_tree_add(ad->t, path, ops, ad->disk, ad->cd, data, idx);
}

static int add_disk_nodes(struct ctl_tree *t, const char *name,
			  struct gendisk *disk, bool internal)
{
	struct adding ad = {.t = t, .disk = disk, .cd = ctl_tree_new_disk(t)};
	/* An export's attrs are in device/, an internal queue's at its top. */
	const char *attr_dir = internal ? "" : "device/";
	struct mq_queue *q = disk->queue;
	const struct disk_attr *da;
	const struct disk_fault *df;
	unsigned int i, a;

	if (!ad.cd)
		return -1;
	if (add(&ad, &disk_name_ops, NULL, 0, "%s/%sdisk_name", name,
		attr_dir) ||
	    add(&ad, &scheduler_ops, NULL, 0, "%s/queue/scheduler", name) ||
	    add(&ad, &stat_ops, NULL, 0, "%s/stat", name) ||
	    add(&ad, &frozen_ops, NULL, 0, "%s/mq/frozen", name) ||
	    add(&ad, &inflight_ops, NULL, 0, "%s/inflight", name))
		return -1;
	for (a = 0; a < NR_QUEUE_ATTRS; a++)
		if (add(&ad,
			a == QA_SCHED_REASON  ? &sched_reason_ops
			: a == QA_NR_REQUESTS ? &nr_requests_ops
			: a == QA_IOPRIO_MAP  ? &ioprio_map_ops
					      : &queue_attr_ops,
			NULL, a, "%s/queue/%s", name, queue_attr_names[a]))
			return -1;
	/* One node per tunable name; shown while the elevator has it. */
	for (i = 0; mq_elevators[i]; i++) {
		const struct elv_fs_entry *e;

		for (e = mq_elevators[i]->elevator_attrs; e && e->name; e++) {
			int r = add(&ad, &iosched_ops, e->name, 0,
				    "%s/queue/iosched/%s", name, e->name);

			if (r && r != -EEXIST)
				return -1;
		}
	}
	for (i = 0; i < q->nr_hw_queues; i++)
		for (a = 0; a < NR_HCTX_ATTRS; a++)
			if (add(&ad,
				a == HA_SCHED_TAGS ? &hctx_sched_ops
						   : &hctx_ops,
				NULL, i << 8 | a, "%s/mq/%u/%s", name, i,
				hctx_attr_names[a]))
				return -1;
	if (q->limits.zoned != BLK_ZONED_NONE) {
		for (a = 0; a < NR_ZONED_ATTRS; a++)
			if (add(&ad, &zoned_attr_ops, NULL, a, "%s/queue/%s",
				name, zoned_attr_names[a]))
				return -1;
	}
	if (disk->fops && disk->fops->report_zones &&
	    add(&ad, &zones_ops, NULL, 0, "%s/zones", name))
		return -1;
	for (a = 0; disk->fops && disk->fops->zone_mgmt &&
		    a < sizeof(zone_op_names) / sizeof(zone_op_names[0]);
	     a++)
		if (add(&ad, &zone_op_ops, NULL, a, "%s/zone/%s", name,
			zone_op_names[a]))
			return -1;
	for (da = disk->attrs; da && da->name; da++)
		if (add(&ad, &device_ops, da, 0, "%s/%s%s", name, attr_dir,
			da->name))
			return -1;
	for (df = disk->faults; df && df->name; df++)
		if (add(&ad, &fault_ops, df, 0, "%s/fault/%s", name, df->name))
			return -1;
	if (mq_bdev_log_writes(disk->bdev) &&
	    (add(&ad, &lw_mark_ops, NULL, 0, "%s/log_writes/mark", name) ||
	     add(&ad, &lw_state_ops, NULL, 0, "%s/log_writes/state", name)))
		return -1;
	return 0;
}

int ctl_tree_add_disk(struct ctl_tree *t, const char *name,
		      struct gendisk *disk)
{
	return add_disk_nodes(t, name, disk, false);
}

int ctl_tree_add_internal(struct ctl_tree *t, const char *name,
			  struct gendisk *disk)
{
	return add_disk_nodes(t, name, disk, true);
}
