/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Zone write plugging, after block/blk-zoned.c in Linux 6.10
 * (blk_zone_plug_bio, disk_zone_wplug_add_bio, blk_zone_wplug_bio_work,
 * blk_zone_write_plug_bio_endio).
 *
 * On a host-managed queue, WRITE and WRITE_ZEROES bios to a sequential
 * zone are serialised per zone before they become requests: the first is
 * let through and marks its zone's write plug busy; those that follow
 * wait in the plug, in the order they were submitted, until it completes;
 * then the queue's kblockd submits the next one.  One write per zone is
 * thus in flight and a zone's writes reach the scheduler, and the device,
 * in the order the client sent them, whatever the scheduler does with
 * them.  Linux 6.10 replaced mq-deadline's zone write locking with this;
 * with the queue key zone_write_plugging=0 the core does not plug and the
 * 2018 behaviour returns (mq-deadline-zoned.c).
 *
 * Unlike Linux, the plug does not track the write pointer (there is no
 * zone append to emulate): the device judges where a write lands, and a
 * misplaced write fails there, with the device's own log line.
 *
 * A plug lives while its zone has a write in flight or plugged, in a hash
 * keyed by zone number; one lock per queue guards them all.  Plugged bios
 * hold no queue reference, so a freeze waits only for the write in flight;
 * the next one then parks behind the freeze like any other bio.
 */
#include <errno.h>
#include <stdlib.h>

#include "blk-mq-internal.h"
#include "hash.h"
#include "log.h"

#define ZONE_WPLUG_HASH_BITS 8

struct blk_zone_wplug {
	struct blk_zone_wplugs *wplugs;
	uint64_t zone_no;
	bool in_flight;	      /* BLK_ZONE_WPLUG_PLUGGED: a write is out */
	bool on_ready;	      /* queued for the bio work */
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
	zwplug->bio_tail = &zwplug->bio_head;
	LIST_INSERT_HEAD(&w->hash[wplug_bucket(zone_no)], zwplug, node);
	w->nr_wplugs++;
	return zwplug;
}

/* wplugs->lock held: a plug with nothing in flight nor plugged goes. */
static void disk_put_zone_wplug(struct blk_zone_wplug *zwplug)
{
	if (zwplug->in_flight || zwplug->bio_head || zwplug->on_ready)
		return;
	LIST_REMOVE(zwplug, node);
	zwplug->wplugs->nr_wplugs--;
	free(zwplug);
}

static bool bio_needs_zone_write_plugging(struct mq_queue *q,
					  const struct bio *bio)
{
	return q->zone_write_plugging && blk_op_is_zoned_write(bio->bi_op) &&
	       blk_zone_is_seq(&q->limits, bio->bi_sector);
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
		bio->bi_status = EIO;
		bio_endio(bio);
		return true;
	}
	if (zwplug->in_flight || zwplug->bio_head) {
		/* disk_zone_wplug_add_bio: wait behind the one in flight. */
		bio->bi_next = NULL;
		*zwplug->bio_tail = bio;
		zwplug->bio_tail = &bio->bi_next;
		zwplug->nr_plugged++;
		w->nr_plugged++;
		pthread_mutex_unlock(&w->lock);
		return true;
	}
	zwplug->in_flight = true;
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

	bio->bi_zone_wplug = NULL;
	pthread_mutex_lock(&w->lock);
	zwplug->in_flight = false;
	if (zwplug->bio_head)
		disk_zone_wplug_schedule_bio_work(w, zwplug);
	else
		disk_put_zone_wplug(zwplug);
	pthread_mutex_unlock(&w->lock);
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
		if (!bio || zwplug->in_flight) {
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
		zwplug->in_flight = true;
		bio->bi_zone_wplug = zwplug;
		pthread_mutex_unlock(&w->lock);
		__mq_submit_bio(bio->bi_ctx, bio, true);
	}
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
	pthread_mutex_unlock(&w->lock);
}
