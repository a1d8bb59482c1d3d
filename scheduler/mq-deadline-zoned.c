/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Zone write locking for mq-deadline, after blk_req_zone_write_lock() and
 * friends in Linux (block/blk-zoned.c, 4.16 to 6.9, before zone write
 * plugging); only with the queue key zone_write_plugging=0.  On
 * a host-managed queue, a WRITE or WRITE_ZEROES to a sequential zone locks
 * the zone when dispatched and unlocks it when freed or requeued, so that
 * at most one write per sequential zone is ever in flight and writes reach
 * the device in order.
 *
 * Zones are q->limits.chunk_sectors long; the first nr_conv_zones are
 * conventional.  The queue does not know its capacity, so instead of
 * Linux's bitmap the locked zones are kept in a hash, each entry living in
 * the request that holds the lock.  All but the first three functions are
 * called with dd->zone_lock held.
 */
#include "mq-deadline.h"
#include "../server/mq/hash.h"

/* With zone write plugging on, the core keeps the order (Linux 6.10). */
bool dd_queue_is_zoned(const struct mq_queue *q)
{
	return blk_queue_is_zoned(&q->limits) && !q->zone_write_plugging;
}

uint64_t dd_zone_no(const struct mq_queue *q, uint64_t sector)
{
	return sector / q->limits.chunk_sectors;
}

/* blk_rq_is_seq_zoned_write(): does rq need its zone write locked? */
bool dd_rq_is_seq_zoned_write(const struct request *rq)
{
	const struct mq_queue *q = rq->q;

	if (!dd_queue_is_zoned(q))
		return false;
	if (req_op(rq) != REQ_OP_WRITE && req_op(rq) != REQ_OP_WRITE_ZEROES)
		return false;
	return dd_zone_no(q, blk_rq_pos(rq)) >= q->limits.nr_conv_zones;
}

static unsigned int dd_zone_bucket(uint64_t zone_no)
{
	return hash_64(zone_no, DD_HASH_BITS);
}

static bool dd_zone_is_locked(struct deadline_data *dd, uint64_t zone_no)
{
	struct dd_rq *drq;

	LIST_FOREACH(drq, &dd->zone_hash[dd_zone_bucket(zone_no)], zone)
	if (drq->zone_no == zone_no)
		return true;
	return false;
}

/* blk_req_can_dispatch_to_zone() */
bool dd_can_dispatch_to_zone(struct deadline_data *dd, struct request *rq)
{
	if (!dd_rq_is_seq_zoned_write(rq))
		return true;
	return !dd_zone_is_locked(dd, dd_zone_no(rq->q, blk_rq_pos(rq)));
}

void dd_zone_write_lock(struct deadline_data *dd, struct dd_rq *drq)
{
	struct request *rq = drq->rq;

	drq->zone_no = dd_zone_no(rq->q, blk_rq_pos(rq));
	LIST_INSERT_HEAD(&dd->zone_hash[dd_zone_bucket(drq->zone_no)], drq,
			 zone);
	drq->flags |= DD_RQ_ZONE_LOCKED;
}

void dd_zone_write_unlock(struct deadline_data *dd, struct dd_rq *drq)
{
	(void)dd;
	if (!(drq->flags & DD_RQ_ZONE_LOCKED))
		return;
	LIST_REMOVE(drq, zone);
	drq->flags &= ~DD_RQ_ZONE_LOCKED;
}
