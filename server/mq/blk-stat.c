/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-queue accounting: the fields of /sys/block/X/stat (block/genhd.c,
 * part_stat) and latency histograms by op group.
 */
#include "blk-mq-internal.h"

enum mq_stat_group mq_stat_group(enum req_op op)
{
	switch (op) {
	case REQ_OP_READ:
	case REQ_OP_DRV_IN:
		return STAT_READ;
	case REQ_OP_DISCARD:
		return STAT_DISCARD;
	case REQ_OP_FLUSH:
		return STAT_FLUSH;
	default:
		return STAT_WRITE;
	}
}

static unsigned int lat_bucket(uint64_t ns)
{
	unsigned int b = ns ? 64 - (unsigned int)__builtin_clzll(ns) : 0;

	return b < MQ_LAT_BUCKETS ? b : MQ_LAT_BUCKETS - 1;
}

/*
 * io_ticks and time_in_queue advance while anything is in flight.  As
 * update_io_ticks does, whoever moves the stamp on accounts the time
 * since it, with a compare-and-swap instead of a lock, so event loops
 * starting and ending requests on one queue never wait for each other
 * here.  A loop whose swap fails leaves the time to the next round,
 * which counts from the stamp the winner set.
 */
static void mq_stat_round(struct mq_queue_stats *st, uint64_t now)
{
	uint64_t stamp =
		atomic_load_explicit(&st->stamp_ns, memory_order_relaxed);
	unsigned int inflight;

	if (now <= stamp ||
	    !atomic_compare_exchange_strong(&st->stamp_ns, &stamp, now))
		return;
	inflight =
		atomic_load(&st->in_flight[0]) + atomic_load(&st->in_flight[1]);
	if (inflight) {
		atomic_fetch_add_explicit(&st->io_ticks_ns, now - stamp,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&st->time_in_queue_ns,
					  inflight * (now - stamp),
					  memory_order_relaxed);
	}
}

void mq_stat_start(struct request *rq, uint64_t now)
{
	struct mq_queue_stats *st = &rq->q->stats;

	mq_stat_round(st, now);
	atomic_fetch_add(&st->in_flight[op_is_write(rq->op)], 1);
}

/* A started request went back (requeue, refusal): no longer in flight. */
void mq_stat_unstart(struct request *rq, uint64_t now)
{
	struct mq_queue_stats *st = &rq->q->stats;

	mq_stat_round(st, now);
	atomic_fetch_sub(&st->in_flight[op_is_write(rq->op)], 1);
}

void mq_stat_done(struct request *rq, int status, uint64_t now)
{
	struct mq_queue_stats *st = &rq->q->stats;
	enum mq_stat_group g = mq_stat_group(rq->op);
	/* A plug's time may predate a start stamped on another thread. */
	uint64_t lat = now > rq->start_time_ns ? now - rq->start_time_ns : 0;

	if (rq->rq_flags & RQF_STARTED) {
		mq_stat_round(st, now);
		atomic_fetch_sub(&st->in_flight[op_is_write(rq->op)], 1);
	}
	atomic_fetch_add_explicit(&st->ios[g], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st->sectors[g],
				  rq->stats_bytes >> SECTOR_SHIFT,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&st->nsecs[g], lat, memory_order_relaxed);
	atomic_fetch_add_explicit(&st->lat_hist[g][lat_bucket(lat)], 1,
				  memory_order_relaxed);
	if (status)
		atomic_fetch_add_explicit(&st->errors[g], 1,
					  memory_order_relaxed);
}

void mq_stat_merge(struct request *rq)
{
	atomic_fetch_add_explicit(&rq->q->stats.merges[mq_stat_group(rq->op)],
				  1, memory_order_relaxed);
}
