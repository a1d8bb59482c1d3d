/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Zone write plugging, after block/blk-zoned.c in Linux 6.12 as its
 * stable releases have it (6.12.118 in Debian 12; commit fe0418eb9bd6
 * "block: Prevent potential deadlocks in zone write plug error
 * recovery", from 6.13, replaced 6.12.0's error work):
 * blk_zone_plug_bio, blk_zone_wplug_handle_write,
 * blk_zone_wplug_prepare_bio, disk_zone_wplug_add_bio,
 * blk_zone_wplug_bio_work, blk_zone_write_plug_bio_endio,
 * disk_zone_wplug_abort, disk_zone_wplug_set_wp_offset,
 * blk_zone_wplug_handle_reset_or_finish and disk_report_zones_cb.
 *
 * On a host-managed queue, WRITE and WRITE_ZEROES bios to a sequential
 * zone are serialised per zone before they become requests: the first is
 * let through and marks its zone's write plug busy (PLUGGED); those that
 * follow wait in the plug, in the order they were submitted, until it
 * completes; then the queue's kblockd submits the next one.  One write
 * per zone is thus in flight and a zone's writes reach the scheduler, and
 * the device, in the order the client sent them, whatever the scheduler
 * does with them.  Linux 6.10 replaced mq-deadline's zone write locking
 * with this; with the queue key zone_write_plugging=0 the core does not
 * plug ordinary writes and the 2018 behaviour returns
 * (mq-deadline-zoned.c).
 *
 * The plug keeps its zone's write pointer (wp_offset), as Linux does, to
 * emulate zone append (REQ_ZONE_APPEND): an append becomes a write at the
 * write pointer when the plug lets it go, so appends land in the order
 * they reached the plug, and the write pointer moves on by its length.
 * A write that fails aborts the writes plugged behind it (they fail with
 * EIO and never reach the device) and marks the plug NEED_WP_UPDATE; a
 * zone report, a reset or a finish gives it a write pointer again, and
 * so, where 6.12 would fail the zone's writes until one of those came
 * (NBD clients have no zone report to send), does the next write: the
 * plug reads its zone from the device first.  A reset or finish sets the
 * write pointer and aborts what is plugged, before the device sees it.
 *
 * Unlike Linux: a plug lives only while its zone has a write in flight or
 * plugged (Linux keeps one for each partly written zone from
 * revalidation on), so a new plug starts NEED_WP_UPDATE and reads its
 * write pointer from the device before its first write.  An ordinary
 * write is not failed early for missing the write pointer: the device
 * judges where it lands, with its own log line, and the plug's write
 * pointer follows the write.
 *
 * Plugs are kept in a hash keyed by zone number; one lock per queue
 * guards them all.  Plugged bios hold no queue reference, so a freeze
 * waits only for the write in flight; the next one then parks behind the
 * freeze like any other bio.
 */
#include <errno.h>
#include <stdlib.h>

#include "blk-mq-internal.h"
#include "genhd.h"
#include "hash.h"
#include "log.h"

#define ZONE_WPLUG_HASH_BITS 8

/*
 * Zone write plug flags, as Linux's: PLUGGED, a write is out (bios that
 * come meanwhile wait in the plug); NEED_WP_UPDATE, wp_offset is not to
 * be trusted (a write failed, or the plug is new).
 */
#define BLK_ZONE_WPLUG_PLUGGED	      (1u << 0)
#define BLK_ZONE_WPLUG_NEED_WP_UPDATE (1u << 1)

struct blk_zone_wplug {
	struct blk_zone_wplugs *wplugs;
	uint64_t zone_no;
	unsigned int flags;
	bool on_ready;	      /* queued for the bio work */
	uint64_t wp_offset;   /* sectors from the zone start */
	uint64_t capacity;    /* sectors writable in the zone */
	struct bio *bio_head; /* plugged bios, in order, through bi_next */
	struct bio **bio_tail;
	unsigned int nr_plugged;
	LIST_ENTRY(blk_zone_wplug) node;
	TAILQ_ENTRY(blk_zone_wplug) ready;
};

struct blk_zone_wplugs {
	struct mq_queue *q;
	pthread_mutex_t lock;
	LIST_HEAD(, blk_zone_wplug) hash[1u << ZONE_WPLUG_HASH_BITS];
	TAILQ_HEAD(, blk_zone_wplug) ready;
	struct mq_delayed_work bio_work;
	unsigned int nr_wplugs;
	unsigned int nr_plugged;
	unsigned int nr_aborted;
	unsigned int nr_wp_syncs;
	bool dead; /* the queue is being cleaned up: no more work */
};

static unsigned int wplug_bucket(uint64_t zone_no)
{
	return hash_64(zone_no, ZONE_WPLUG_HASH_BITS);
}

/* wplugs->lock held */
static struct blk_zone_wplug *disk_get_zone_wplug(struct blk_zone_wplugs *w,
						  uint64_t zone_no)
{
	struct blk_zone_wplug *zwplug;

	LIST_FOREACH(zwplug, &w->hash[wplug_bucket(zone_no)], node)
	if (zwplug->zone_no == zone_no)
		return zwplug;
	return NULL;
}

/* wplugs->lock held; NULL when out of memory */
static struct blk_zone_wplug *
disk_get_or_alloc_zone_wplug(struct blk_zone_wplugs *w, uint64_t zone_no)
{
	struct blk_zone_wplug *zwplug = disk_get_zone_wplug(w, zone_no);

	if (zwplug)
		return zwplug;
	zwplug = calloc(1, sizeof(*zwplug));
	if (!zwplug)
		return NULL;
	zwplug->wplugs = w;
	zwplug->zone_no = zone_no;
	/* Its write pointer is the device's, read before its first write. */
	zwplug->flags = BLK_ZONE_WPLUG_NEED_WP_UPDATE;
	zwplug->capacity = w->q->limits.chunk_sectors;
	zwplug->bio_tail = &zwplug->bio_head;
	LIST_INSERT_HEAD(&w->hash[wplug_bucket(zone_no)], zwplug, node);
	w->nr_wplugs++;
	return zwplug;
}

/* wplugs->lock held: a plug with nothing in flight nor plugged goes. */
static void disk_put_zone_wplug(struct blk_zone_wplug *zwplug)
{
	if ((zwplug->flags & BLK_ZONE_WPLUG_PLUGGED) || zwplug->bio_head ||
	    zwplug->on_ready)
		return;
	LIST_REMOVE(zwplug, node);
	zwplug->wplugs->nr_wplugs--;
	free(zwplug);
}

/*
 * wplugs->lock held: disk_zone_wplug_abort, the plugged bios onto *failed
 * (ended with EIO by the caller, once the lock is dropped).
 */
static void disk_zone_wplug_abort(struct blk_zone_wplug *zwplug,
				  struct bio **failed)
{
	struct blk_zone_wplugs *w = zwplug->wplugs;
	struct bio *bio;

	if (zwplug->bio_head)
		pr_warn("%s: zone %llu: aborting %u plugged writes", w->q->name,
			(unsigned long long)zwplug->zone_no,
			zwplug->nr_plugged);
	while ((bio = zwplug->bio_head)) {
		zwplug->bio_head = bio->bi_next;
		bio->bi_next = *failed;
		*failed = bio;
		w->nr_plugged--;
		w->nr_aborted++;
	}
	zwplug->bio_tail = &zwplug->bio_head;
	zwplug->nr_plugged = 0;
}

static void bios_fail(struct bio *failed)
{
	struct bio *bio;

	while ((bio = failed)) {
		failed = bio->bi_next;
		bio->bi_next = NULL;
		bio->bi_status = EIO;
		bio_endio(bio);
	}
}

/* wplugs->lock held: disk_zone_wplug_set_wp_offset */
static void disk_zone_wplug_set_wp_offset(struct blk_zone_wplug *zwplug,
					  uint64_t wp_offset,
					  struct bio **failed)
{
	zwplug->flags &= ~BLK_ZONE_WPLUG_NEED_WP_UPDATE;
	zwplug->wp_offset = wp_offset;
	disk_zone_wplug_abort(zwplug, failed);
}

/* blk_zone_wp_offset: where a reported zone's writes go next. */
static uint64_t blk_zone_wp_offset(const struct blk_zone *z)
{
	switch (z->cond) {
	case BLK_ZONE_COND_IMP_OPEN:
	case BLK_ZONE_COND_EXP_OPEN:
	case BLK_ZONE_COND_CLOSED:
		return z->wp - z->start;
	case BLK_ZONE_COND_FULL:
		return z->len;
	case BLK_ZONE_COND_EMPTY:
		return 0;
	default:
		/* Conventional, offline and read-only: no write pointer. */
		return UINT64_MAX;
	}
}

static int one_zone_cb(const struct blk_zone *z, unsigned int idx, void *data)
{
	(void)idx;
	*(struct blk_zone *)data = *z;
	return 0;
}

/*
 * wplugs->lock held: read the zone's write pointer from the device (ours:
 * 6.12 waits for the user's report zones).  Stays NEED_WP_UPDATE if the
 * device cannot say.
 */
static void disk_zone_wplug_sync_wp_offset(struct blk_zone_wplug *zwplug)
{
	struct blk_zone_wplugs *w = zwplug->wplugs;
	struct gendisk *disk = w->q->disk;
	struct blk_zone z;

	if (!disk || !disk->fops || !disk->fops->report_zones ||
	    zwplug->zone_no > UINT32_MAX ||
	    disk->fops->report_zones(disk, (unsigned int)zwplug->zone_no, 1,
				     one_zone_cb, &z) != 1)
		return;
	w->nr_wp_syncs++;
	zwplug->flags &= ~BLK_ZONE_WPLUG_NEED_WP_UPDATE;
	zwplug->wp_offset = blk_zone_wp_offset(&z);
	zwplug->capacity = z.capacity;
}

static uint64_t zone_start(const struct blk_zone_wplug *zwplug)
{
	return zwplug->zone_no * zwplug->wplugs->q->limits.chunk_sectors;
}

/*
 * wplugs->lock held: blk_zone_wplug_prepare_bio, for the bio the plug
 * lets go now.  False: fail it (an append with no write pointer known,
 * or one that does not fit in the zone).
 */
static bool disk_zone_wplug_prepare_bio(struct blk_zone_wplug *zwplug,
					struct bio *bio)
{
	uint64_t nr = bio->bi_size >> SECTOR_SHIFT;

	if (zwplug->flags & BLK_ZONE_WPLUG_NEED_WP_UPDATE)
		disk_zone_wplug_sync_wp_offset(zwplug);
	if (bio->bi_flags & REQ_ZONE_APPEND) {
		if ((zwplug->flags & BLK_ZONE_WPLUG_NEED_WP_UPDATE) ||
		    zwplug->wp_offset > zwplug->capacity ||
		    nr > zwplug->capacity - zwplug->wp_offset)
			return false;
		/* A write at the write pointer: no merging, as Linux. */
		bio->bi_sector = zone_start(zwplug) + zwplug->wp_offset;
		bio->bi_append_sector = bio->bi_sector;
	} else {
		/* The device judges it; the write pointer follows it. */
		zwplug->flags &= ~BLK_ZONE_WPLUG_NEED_WP_UPDATE;
		zwplug->wp_offset = bio->bi_sector - zone_start(zwplug);
	}
	zwplug->wp_offset += nr;
	return true;
}

static bool bio_needs_zone_write_plugging(struct mq_queue *q,
					  const struct bio *bio)
{
	return (q->zone_write_plugging || (bio->bi_flags & REQ_ZONE_APPEND)) &&
	       blk_op_is_zoned_write(bio->bi_op) &&
	       blk_zone_is_seq(&q->limits, bio->bi_sector);
}

static void bio_io_error(struct bio *bio)
{
	bio->bi_status = EIO;
	bio_endio(bio);
}

bool blk_zone_plug_bio(struct mq_queue *q, struct bio *bio)
{
	struct blk_zone_wplugs *w = q->zone_wplugs;
	struct blk_zone_wplug *zwplug;

	if (bio->bi_zone_wplug || !w || !bio_needs_zone_write_plugging(q, bio))
		return false;
	pthread_mutex_lock(&w->lock);
	zwplug = disk_get_or_alloc_zone_wplug(
		w, blk_zone_no(&q->limits, bio->bi_sector));
	if (!zwplug || w->dead) {
		if (zwplug)
			disk_put_zone_wplug(zwplug);
		pthread_mutex_unlock(&w->lock);
		/* As Linux does when it cannot get a plug: bio_io_error. */
		pr_warn("%s: no zone write plug for sector %llu: %s", q->name,
			(unsigned long long)bio->bi_sector,
			zwplug ? "queue dying" : "out of memory");
		bio_io_error(bio);
		return true;
	}
	if ((zwplug->flags & BLK_ZONE_WPLUG_PLUGGED) || zwplug->bio_head) {
		/* disk_zone_wplug_add_bio: wait behind the one in flight. */
		bio->bi_next = NULL;
		*zwplug->bio_tail = bio;
		zwplug->bio_tail = &bio->bi_next;
		zwplug->nr_plugged++;
		w->nr_plugged++;
		pthread_mutex_unlock(&w->lock);
		return true;
	}
	if (!disk_zone_wplug_prepare_bio(zwplug, bio)) {
		disk_put_zone_wplug(zwplug);
		pthread_mutex_unlock(&w->lock);
		bio_io_error(bio);
		return true;
	}
	zwplug->flags |= BLK_ZONE_WPLUG_PLUGGED;
	bio->bi_zone_wplug = zwplug;
	pthread_mutex_unlock(&w->lock);
	return false;
}

/* wplugs->lock held: let the next plugged write of zwplug go. */
static void disk_zone_wplug_schedule_bio_work(struct blk_zone_wplugs *w,
					      struct blk_zone_wplug *zwplug)
{
	if (zwplug->on_ready || w->dead)
		return;
	zwplug->on_ready = true;
	TAILQ_INSERT_TAIL(&w->ready, zwplug, ready);
	kblockd_schedule(w->q->kblockd, &w->bio_work, 0);
}

void blk_zone_write_plug_bio_endio(struct bio *bio)
{
	struct blk_zone_wplug *zwplug = bio->bi_zone_wplug;
	struct blk_zone_wplugs *w = zwplug->wplugs;
	struct bio *failed = NULL;

	bio->bi_zone_wplug = NULL;
	pthread_mutex_lock(&w->lock);
	zwplug->flags &= ~BLK_ZONE_WPLUG_PLUGGED;
	if (bio->bi_status) {
		/* Nothing behind it can land where it meant to. */
		disk_zone_wplug_abort(zwplug, &failed);
		zwplug->flags |= BLK_ZONE_WPLUG_NEED_WP_UPDATE;
	}
	if (zwplug->bio_head)
		disk_zone_wplug_schedule_bio_work(w, zwplug);
	else
		disk_put_zone_wplug(zwplug);
	pthread_mutex_unlock(&w->lock);
	bios_fail(failed);
}

void blk_zone_write_plug_transfer(struct bio *from, struct bio *to)
{
	to->bi_zone_wplug = from->bi_zone_wplug;
	from->bi_zone_wplug = NULL;
}

/*
 * blk_zone_wplug_bio_work: submit the first plugged write of each ready
 * zone, from kblockd (never from the completion that freed the zone).
 */
static void blk_zone_wplug_bio_work(struct mq_delayed_work *work)
{
	struct blk_zone_wplugs *w =
		container_of(work, struct blk_zone_wplugs, bio_work);
	struct blk_zone_wplug *zwplug;
	struct bio *bio;

	for (;;) {
		pthread_mutex_lock(&w->lock);
		zwplug = TAILQ_FIRST(&w->ready);
		if (!zwplug || w->dead) {
			pthread_mutex_unlock(&w->lock);
			return;
		}
		TAILQ_REMOVE(&w->ready, zwplug, ready);
		zwplug->on_ready = false;
		bio = zwplug->bio_head;
		if (!bio || (zwplug->flags & BLK_ZONE_WPLUG_PLUGGED)) {
			disk_put_zone_wplug(zwplug);
			pthread_mutex_unlock(&w->lock);
			continue;
		}
		zwplug->bio_head = bio->bi_next;
		if (!zwplug->bio_head)
			zwplug->bio_tail = &zwplug->bio_head;
		bio->bi_next = NULL;
		zwplug->nr_plugged--;
		w->nr_plugged--;
		if (!disk_zone_wplug_prepare_bio(zwplug, bio)) {
			/* Fail it and look at the next one. */
			if (zwplug->bio_head)
				disk_zone_wplug_schedule_bio_work(w, zwplug);
			else
				disk_put_zone_wplug(zwplug);
			pthread_mutex_unlock(&w->lock);
			bio_io_error(bio);
			continue;
		}
		zwplug->flags |= BLK_ZONE_WPLUG_PLUGGED;
		bio->bi_zone_wplug = zwplug;
		pthread_mutex_unlock(&w->lock);
		__mq_submit_bio(bio->bi_ctx, bio, true);
	}
}

/*
 * blk_zone_wplug_handle_reset_or_finish (and _reset_all): before the
 * device resets or finishes zone (BLK_ALL_ZONES: every zone), its plug
 * takes the new write pointer and fails what is plugged behind the write
 * in flight, which the device will fail anyway.  wp_offset UINT64_MAX:
 * the zone's length (finish).
 */
static void disk_zone_wplugs_set_wp(struct mq_queue *q, unsigned int zone,
				    uint64_t wp_offset)
{
	struct blk_zone_wplugs *w = q->zone_wplugs;
	struct blk_zone_wplug *zwplug;
	struct bio *failed = NULL;
	unsigned int i;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	for (i = 0; i < (1u << ZONE_WPLUG_HASH_BITS); i++)
		LIST_FOREACH(zwplug, &w->hash[i], node)
	if (zone == BLK_ALL_ZONES || zwplug->zone_no == zone)
		disk_zone_wplug_set_wp_offset(
			zwplug,
			wp_offset == UINT64_MAX ? zwplug->capacity : wp_offset,
			&failed);
	pthread_mutex_unlock(&w->lock);
	bios_fail(failed);
}

/* After a reset or finish the device refused: ask it again (ours). */
static void disk_zone_wplugs_lost_wp(struct mq_queue *q, unsigned int zone)
{
	struct blk_zone_wplugs *w = q->zone_wplugs;
	struct blk_zone_wplug *zwplug;
	unsigned int i;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	for (i = 0; i < (1u << ZONE_WPLUG_HASH_BITS); i++)
		LIST_FOREACH(zwplug, &w->hash[i], node)
	if (zone == BLK_ALL_ZONES || zwplug->zone_no == zone)
		zwplug->flags |= BLK_ZONE_WPLUG_NEED_WP_UPDATE;
	pthread_mutex_unlock(&w->lock);
}

int blkdev_zone_mgmt(struct gendisk *disk, enum blk_zone_op op,
		     unsigned int zone)
{
	struct mq_queue *q = disk->queue;
	bool moves_wp = op == BLK_ZONE_OP_RESET || op == BLK_ZONE_OP_FINISH;
	int err;

	if (!disk->fops || !disk->fops->zone_mgmt)
		return EOPNOTSUPP;
	/* Conventional zones: the device answers, no plug is touched. */
	if (moves_wp &&
	    (zone == BLK_ALL_ZONES ||
	     blk_zone_is_seq(&q->limits,
			     (uint64_t)zone * q->limits.chunk_sectors)))
		disk_zone_wplugs_set_wp(
			q, zone, op == BLK_ZONE_OP_RESET ? 0 : UINT64_MAX);
	err = disk->fops->zone_mgmt(disk, op, zone);
	if (err && moves_wp)
		disk_zone_wplugs_lost_wp(q, zone);
	return err;
}

/* disk_report_zones_cb: a plug that lost its write pointer takes it. */
struct report_args {
	struct mq_queue *q;
	report_zones_cb *cb;
	void *data;
};

static int disk_report_zones_cb(const struct blk_zone *z, unsigned int idx,
				void *data)
{
	struct report_args *a = data;
	struct blk_zone_wplugs *w = a->q->zone_wplugs;
	struct blk_zone_wplug *zwplug;
	struct bio *failed = NULL;

	if (w && z->type != BLK_ZONE_TYPE_CONVENTIONAL) {
		pthread_mutex_lock(&w->lock);
		zwplug = disk_get_zone_wplug(w, idx);
		if (zwplug && (zwplug->flags & BLK_ZONE_WPLUG_NEED_WP_UPDATE)) {
			disk_zone_wplug_set_wp_offset(
				zwplug, blk_zone_wp_offset(z), &failed);
			zwplug->capacity = z->capacity;
		}
		pthread_mutex_unlock(&w->lock);
		bios_fail(failed);
	}
	return a->cb(z, idx, a->data);
}

int blkdev_report_zones(struct gendisk *disk, unsigned int idx, unsigned int nr,
			report_zones_cb *cb, void *data)
{
	struct report_args a = {disk->queue, cb, data};

	if (!disk->fops || !disk->fops->report_zones)
		return -EOPNOTSUPP;
	return disk->fops->report_zones(disk, idx, nr, disk_report_zones_cb,
					&a);
}

/*
 * A TRIM of whole sequential zones resets them in the models
 * (zoned_discard): the plugs of those zones are reset first, as for a
 * zone reset.
 */
void blk_zone_plug_discard(struct mq_queue *q, const struct bio *bio)
{
	const struct queue_limits *lim = &q->limits;
	uint64_t end = bio_end_sector(bio), zs = lim->chunk_sectors, s;
	uint64_t cap = q->disk ? get_capacity(q->disk) : UINT64_MAX;

	if (!blk_zone_is_seq(lim, bio->bi_sector) || bio->bi_sector % zs ||
	    (end % zs && end != cap) || end <= bio->bi_sector)
		return;
	for (s = bio->bi_sector; s < end; s += zs)
		disk_zone_wplugs_set_wp(q, (unsigned int)(s / zs), 0);
}

/*
 * blk_check_zone_append and the conventional-zone check of
 * blk_zone_wplug_handle_write: a WRITE within the zone append limit, to
 * a sequential zone, not across it.
 */
bool blk_zone_append_check(struct mq_queue *q, struct bio *bio)
{
	const struct queue_limits *lim = &q->limits;
	uint64_t nr = bio->bi_size >> SECTOR_SHIFT;

	if (bio->bi_op == REQ_OP_WRITE &&
	    blk_zone_is_seq(lim, bio->bi_sector) && nr &&
	    nr <= lim->max_zone_append_sectors &&
	    nr <= lim->chunk_sectors - bio->bi_sector % lim->chunk_sectors)
		return false;
	bio_io_error(bio);
	return true;
}

int disk_alloc_zone_resources(struct mq_queue *q)
{
	struct blk_zone_wplugs *w = calloc(1, sizeof(*w));
	unsigned int i;

	if (!w)
		return -1;
	w->q = q;
	pthread_mutex_init(&w->lock, NULL);
	for (i = 0; i < (1u << ZONE_WPLUG_HASH_BITS); i++)
		LIST_INIT(&w->hash[i]);
	TAILQ_INIT(&w->ready);
	w->bio_work.fn = blk_zone_wplug_bio_work;
	q->zone_wplugs = w;
	return 0;
}

/*
 * After the queue's kblockd has stopped: fail what is still plugged (the
 * queue is dying, as disk_free_zone_resources does at del_gendisk).
 */
void disk_free_zone_resources(struct mq_queue *q)
{
	struct blk_zone_wplugs *w = q->zone_wplugs;
	struct blk_zone_wplug *zwplug;
	struct bio *bio, *failed = NULL;
	unsigned int i;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->dead = true;
	for (i = 0; i < (1u << ZONE_WPLUG_HASH_BITS); i++) {
		while ((zwplug = LIST_FIRST(&w->hash[i]))) {
			while ((bio = zwplug->bio_head)) {
				zwplug->bio_head = bio->bi_next;
				bio->bi_next = failed;
				failed = bio;
			}
			LIST_REMOVE(zwplug, node);
			free(zwplug);
		}
	}
	pthread_mutex_unlock(&w->lock);
	while ((bio = failed)) {
		failed = bio->bi_next;
		bio->bi_next = NULL;
		bio->bi_status = EIO;
		bio_endio(bio);
	}
	pthread_mutex_destroy(&w->lock);
	free(w);
	q->zone_wplugs = NULL;
}

void blk_zone_wplugs_info(struct mq_queue *q, struct blk_zone_wplugs_info *info)
{
	struct blk_zone_wplugs *w = q->zone_wplugs;

	*info = (struct blk_zone_wplugs_info){0};
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	info->nr_wplugs = w->nr_wplugs;
	info->nr_plugged = w->nr_plugged;
	info->nr_aborted = w->nr_aborted;
	info->nr_wp_syncs = w->nr_wp_syncs;
	pthread_mutex_unlock(&w->lock);
}
