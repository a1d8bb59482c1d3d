// SPDX-License-Identifier: GPL-2.0
/*
 * Budget Fair Queueing (BFQ), after block/bfq-iosched.c.
 *
 * BFQ gives each client (process, in Linux) a bfq_queue and schedules the
 * queues with B-WF2Q+ (bfq-wf2q.c) by budgets in sectors: the queue in
 * service keeps the device until it exhausts its budget, its budget
 * timeout fires, or it has nothing more to do.  Budgets adapt to each
 * queue's behaviour and are capped by the peak rate of the device times
 * timeout_sync.  A sync queue that empties may be waited for (idling,
 * slice_idle) when that boosts throughput or is needed to keep service
 * guarantees.  With low_latency, newly active (interactive) and soft
 * real-time queues are weight raised.
 *
 * Locking: bfqd->lock covers everything here.  dispatch_request and
 * has_work run with hctx->lock held; nothing here takes hctx->lock, and
 * queue runs are only asked for after bfqd->lock is dropped (or through
 * mq_delay_run_hw_queue, which takes only kblockd's lock).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bfq-iosched.h"
#include "bfq.h"

/* The tunables and their defaults are in bfq-attrs.c (bfq_conf_init). */
/* The default idle slice, charged to a slow queue on a rotational disk. */
static const uint64_t bfq_slice_idle = NSEC_PER_SEC / 125;
/* Minimum number of assigned budgets for which stats are safe to use. */
static const int bfq_stats_min_budgets = 194;
/* Default maximum budget, sectors. */
static const int bfq_default_max_budget = 16 * 1024;
/* Async requests are charged this many times their size. */
static const int bfq_async_charge_factor = 3;

/* Below this think time (ns) it is deemed immediate. */
#define BFQ_MIN_TT (2 * NSEC_PER_MSEC)

/* hw_tag detection: parallel requests threshold and samples needed. */
#define BFQ_HW_QUEUE_THRESHOLD 3
#define BFQ_HW_QUEUE_SAMPLES   32

#define BFQQ_SEEK_THR	     (8 * 100)
#define BFQQ_SECT_THR_NONROT (2 * 32)
/* Random sync I/O must not pass for soft real-time. */
#define BFQQ_TOTALLY_SEEKY(bfqq) ((bfqq)->seek_history == UINT32_MAX)

/* Peak rate estimation: min samples, min and target intervals (ns). */
#define BFQ_RATE_MIN_SAMPLES  32
#define BFQ_RATE_MIN_INTERVAL (300 * NSEC_PER_MSEC)
#define BFQ_RATE_REF_INTERVAL NSEC_PER_SEC
/* Rates are in sectors/usec << BFQ_RATE_SHIFT. */
#define BFQ_RATE_SHIFT 16

/*
 * Reference peak rates of a rotational and a non-rotational device, and
 * the time to load a large application on them (ms): the weight raising
 * duration for interactive queues scales as ref_rate / peak_rate.
 */
static const uint32_t ref_rate[2] = {14000, 33000};
static const uint64_t ref_wr_duration_ms[2] = {7000, 2500};

/*
 * Start by assuming, optimistically, that the device peak rate is 2/3 of
 * the highest reference rate.
 */
void bfq_init_peak_rate(struct bfq_data *bfqd)
{
	int nonrot = !bfqd->queue->limits.rotational;

	bfqd->rate_dur_prod =
		(uint64_t)ref_rate[nonrot] * ref_wr_duration_ms[nonrot];
	bfqd->peak_rate = ref_rate[nonrot] * 2 / 3;
}

/* Weight raising ends after this much service, sectors. */
static const uint64_t max_service_from_wr = 120000;

#define bfq_sample_valid(samples) ((samples) > 80)

/* a before b, with wrap-around */
static inline bool bfq_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

static inline bool bfq_nonrot(const struct bfq_data *bfqd)
{
	return !bfqd->queue->limits.rotational;
}

static inline uint64_t bfq_u64_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline uint64_t bfq_u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ------------------------------------------------------------------ */
/* sector-sorted request lists                                         */

static inline struct request *bfq_node_rq(struct bfq_avl_node *node)
{
	return node ? bfq_avl_entry(node, struct bfq_rq, node)->rq : NULL;
}

static int bfq_rq_cmp(const struct bfq_avl_node *a,
		      const struct bfq_avl_node *b)
{
	const struct bfq_rq *ra = bfq_avl_entry(a, struct bfq_rq, node);
	const struct bfq_rq *rb = bfq_avl_entry(b, struct bfq_rq, node);
	uint64_t pa = ra->key, pb = rb->key;

	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ra->seq != rb->seq)
		return ra->seq < rb->seq ? -1 : 1;
	return 0;
}

static const struct bfq_avl_ops bfq_sort_ops = {
	.cmp = bfq_rq_cmp,
};

static void bfq_sort_add(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			 struct request *rq)
{
	struct bfq_rq *brq = RQ_BRQ(rq);

	brq->key = blk_rq_pos(rq);
	brq->seq = ++bfqd->rq_seq;
	bfq_avl_insert(&bfqq->sort_list, &brq->node, &bfq_sort_ops);
}

static void bfq_sort_del(struct bfq_queue *bfqq, struct request *rq)
{
	bfq_avl_erase(&bfqq->sort_list, &RQ_BRQ(rq)->node, &bfq_sort_ops);
}

/* A queued request starting at sector (elv_rb_find). */
static struct request *bfq_find_rq_at(struct bfq_queue *bfqq, uint64_t sector)
{
	struct bfq_avl_node *n = bfqq->sort_list.node;

	while (n) {
		uint64_t pos = bfq_avl_entry(n, struct bfq_rq, node)->key;

		if (sector < pos)
			n = n->left;
		else if (sector > pos)
			n = n->right;
		else
			return bfq_node_rq(n);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */

/*
 * Linux's bfq_schedule_dispatch runs the hw queues whenever BFQ may have
 * refused work that it can now give.  Here insertions are always followed
 * by a run of the queue, the dispatch hook re-arms a delayed run while
 * idling, and a completion runs the queue only if dispatch had refused
 * work (bfqd->stalled) and the completion may change that: a run per
 * completion would cost a thread wake-up per request.
 */

/*
 * Lifted from AS: choose which of rq1 and rq2 is best served now, the
 * closer one to the head; distance behind the head is penalised and only
 * allowed up to back_seek_max.
 */
static struct request *bfq_choose_req(struct bfq_data *bfqd,
				      struct request *rq1, struct request *rq2,
				      uint64_t last)
{
	uint64_t s1, s2, d1 = 0, d2 = 0;
	unsigned long back_max;
#define BFQ_RQ1_WRAP 0x01 /* request 1 wraps */
#define BFQ_RQ2_WRAP 0x02 /* request 2 wraps */
	unsigned int wrap = 0;

	if (!rq1 || rq1 == rq2)
		return rq2;
	if (!rq2)
		return rq1;
	if (bfq_rq_is_sync(rq1) && !bfq_rq_is_sync(rq2))
		return rq1;
	else if (bfq_rq_is_sync(rq2) && !bfq_rq_is_sync(rq1))
		return rq2;

	s1 = blk_rq_pos(rq1);
	s2 = blk_rq_pos(rq2);
	/* By definition, 1KiB is 2 sectors. */
	back_max = bfqd->bfq_back_max * 2;

	/*
	 * Strict one way elevator except for short backward seeks, which
	 * cost back_seek_penalty times a forward seek of the same length.
	 */
	if (s1 >= last)
		d1 = s1 - last;
	else if (s1 + back_max >= last)
		d1 = (last - s1) * bfqd->bfq_back_penalty;
	else
		wrap |= BFQ_RQ1_WRAP;

	if (s2 >= last)
		d2 = s2 - last;
	else if (s2 + back_max >= last)
		d2 = (last - s2) * bfqd->bfq_back_penalty;
	else
		wrap |= BFQ_RQ2_WRAP;

	switch (wrap) {
	case 0: /* neither wrapped */
		if (d1 < d2)
			return rq1;
		else if (d2 < d1)
			return rq2;
		return s1 >= s2 ? rq1 : rq2;
	case BFQ_RQ2_WRAP:
		return rq1;
	case BFQ_RQ1_WRAP:
		return rq2;
	default:
		/* Both wrapped: start with the one further behind. */
		return s1 <= s2 ? rq1 : rq2;
	}
#undef BFQ_RQ1_WRAP
#undef BFQ_RQ2_WRAP
}

/* Active: on a service tree, or the one in service. */
static bool bfq_entity_active(const struct bfq_entity *entity)
{
	return entity->on_st || entity->sched_data->in_service_entity == entity;
}

/*
 * bfqq_request_over_limit: has bfqq, or a group above it, taken more of
 * limit requests than its weight's share?  From the root down, each
 * level gets its share of what the level above got, weight over the
 * weights active beside it; bfqq's own level counts the weights of the
 * higher classes too, multiplied, so that a low level of a higher class
 * gets more than a high level of a lower one.  An entity not active at
 * some level is never over: its requests must get in for bfq to see it
 * has work.  bfqd->lock held.
 */
static bool bfqq_request_over_limit(struct bfq_queue *bfqq, unsigned int limit)
{
	struct bfq_entity *entities[BFQ_MAX_DEPTH], *entity = &bfqq->entity;
	int class_idx = bfqq->ioprio_class - 1, level = 0, i;
	struct bfq_sched_data *sd = entity->sched_data;
	unsigned long wsum;

	for_each_entity(entity)
	{
		if (!bfq_entity_active(entity) || level == BFQ_MAX_DEPTH)
			return false;
		entities[level++] = entity;
	}
	while (level-- > 0) {
		entity = entities[level];
		if (level > 0) {
			wsum = bfq_entity_service_tree(entity)->wsum;
		} else {
			wsum = 0;
			for (i = 0; i <= class_idx; i++)
				wsum = wsum * IOPRIO_BE_NR +
				       sd->service_tree[i].wsum;
		}
		if (!wsum)
			continue;
		/* DIV_ROUND_CLOSEST(limit * weight, wsum) */
		limit = (unsigned int)(((unsigned long)limit * entity->weight +
					wsum / 2) /
				       wsum);
		if (entity->allocated >= (int)limit)
			return true;
	}
	return false;
}

/*
 * bfq_limit_depth: async I/O can starve sync I/O by taking all the tags,
 * and sync writes can starve sync reads, so their depths are limited as
 * bfq_update_depths does, in whole tags: async 50% (18.75% while queues
 * are weight raised), sync writes 75% (37.5%); sync reads have them all.
 * And a client whose queue (or group) holds more requests than its share
 * of that limit gets about one tag at a time (below), so that it cannot
 * take the tags the others need.
 */
void bfq_limit_depth(struct mq_hw_ctx *hctx, const struct bio *bio,
		     unsigned int *depth)
{
	struct bfq_data *bfqd = hctx->sched_data;
	bool sync = op_is_sync(bio->bi_op, bio->bi_flags);
	unsigned int d = *depth, limit = d;
	struct bfq_queue *bfqq;
	struct bfq_io_cq *bic;
	bool wr_busy;

	if (!bfqd)
		return;
	if (op_is_write(bio->bi_op)) {
		wr_busy = __atomic_load_n(&bfqd->wr_busy_queues,
					  __ATOMIC_RELAXED);
		if (sync)
			limit = wr_busy ? (d * 6) >> 4 : (d * 3) >> 2;
		else
			limit = wr_busy ? (d * 3) >> 4 : d >> 1;
		if (limit < 1)
			limit = 1;
	}
	pthread_mutex_lock(&bfqd->lock);
	bic = bfq_bic_lookup(bfqd, bio->bi_submitter);
	/*
	 * The client's queue of this kind (sync, or the shared async one),
	 * as in Linux.  Over its share, Linux gives it a shallow depth of
	 * 1: the first tag of each bitmap word, whoever holds the others,
	 * so it still gets a tag now and then.  Our core counts the tags in
	 * use, where a depth of 1 would wait until every other client's
	 * request is done, which a busy client may never let happen: it
	 * may take one tag more than the others hold instead.
	 */
	bfqq = bic ? bic->bfqq[sync] : NULL;
	if (bfqq && bfqq_request_over_limit(bfqq, limit))
		limit = (unsigned int)(bfqd->allocated -
				       bfqq->entity.allocated) +
			1;
	pthread_mutex_unlock(&bfqd->lock);
	if (limit < *depth)
		*depth = limit;
}

/* ------------------------------------------------------------------ */
/* weight counters: is the scenario symmetric?                         */

#define BFQ_WEIGHT_COUNTERS_KEPT 8

static unsigned int bfq_weight_counters(const struct bfq_data *bfqd,
					unsigned int *nr_active)
{
	const struct bfq_weight_counter *c;
	unsigned int n = 0;

	*nr_active = 0;
	for (c = bfqd->queue_weights; c; c = c->next) {
		n++;
		if (c->num_active)
			(*nr_active)++;
	}
	return n;
}

/*
 * Count bfqq, not weight raised and active (busy or with requests in the
 * driver), under its weight.  Counters are kept in a short sorted list;
 * a few empty ones are kept to spare allocations.
 */
void bfq_weights_tree_add(struct bfq_queue *bfqq)
{
	struct bfq_data *bfqd = bfqq->bfqd;
	struct bfq_weight_counter **p = &bfqd->queue_weights, *c;
	unsigned int w = bfqq->entity.weight;

	if (bfqq->weight_counter)
		return;
	while ((c = *p) && c->weight < w)
		p = &c->next;
	if (!c || c->weight != w) {
		c = calloc(1, sizeof(*c));
		/* Without a counter the scenario may be deemed symmetric. */
		if (!c)
			return;
		c->weight = w;
		c->next = *p;
		*p = c;
	}
	c->num_active++;
	bfqq->weight_counter = c;
	bfqq->ref++;
}

void __bfq_weights_tree_remove(struct bfq_queue *bfqq)
{
	struct bfq_data *bfqd = bfqq->bfqd;
	struct bfq_weight_counter *c = bfqq->weight_counter, **p;
	unsigned int nr_active;

	if (!c)
		return;
	if (--c->num_active == 0 &&
	    bfq_weight_counters(bfqd, &nr_active) > BFQ_WEIGHT_COUNTERS_KEPT) {
		for (p = &bfqd->queue_weights; *p != c; p = &(*p)->next)
			;
		*p = c->next;
		free(c);
	}
	bfqq->weight_counter = NULL;
	bfq_put_queue(bfqq);
}

/* bfqq has no request queued or in the driver any more. */
void bfq_weights_tree_remove(struct bfq_queue *bfqq)
{
	bfq_del_bfqq_in_groups_with_pending_reqs(bfqq);
	/* Last: it may free bfqq. */
	__bfq_weights_tree_remove(bfqq);
}

/*
 * False if every active queue must get the same share (symmetric), or if
 * bfqq must get no more than any other: then a sync bfqq keeps its share
 * without dispatch plugging.  Asymmetric: active queues of different
 * weights, busy queues of more than one class (a higher class must not
 * lose the device each time its queue runs dry), or more than one group
 * with requests pending.
 */
static bool bfq_asymmetric_scenario(struct bfq_data *bfqd,
				    struct bfq_queue *bfqq)
{
	struct bfq_weight_counter *smallest = bfqd->queue_weights;
	unsigned int nr_active;
	bool smallest_weight, varied_queue_weights, multiple_classes_busy;
	const unsigned int *busy = bfqd->busy_in_class;

	while (smallest && !smallest->num_active)
		smallest = smallest->next;
	smallest_weight = bfqq && bfqq->weight_counter &&
			  bfqq->weight_counter == smallest;
	varied_queue_weights = false;
	if (!smallest_weight && smallest && smallest->next) {
		bfq_weight_counters(bfqd, &nr_active);
		varied_queue_weights = nr_active > 1;
	}
	multiple_classes_busy = (busy[0] && busy[1]) || (busy[0] && busy[2]) ||
				(busy[1] && busy[2]);
	return varied_queue_weights || multiple_classes_busy ||
	       bfqd->num_groups_with_pending_reqs > 1;
}

/* ------------------------------------------------------------------ */
/* next request of a queue                                             */

/* An expired request, checked once per service slot, or NULL. */
static struct request *bfq_check_fifo(struct bfq_queue *bfqq,
				      struct request *last, uint64_t now)
{
	struct request *rq;

	if (bfq_bfqq_fifo_expire(bfqq))
		return NULL;
	bfq_mark_bfqq_fifo_expire(bfqq);
	rq = TAILQ_FIRST(&bfqq->fifo);
	if (!rq || rq == last || bfq_before(now, rq->fifo_time))
		return NULL;
	return rq;
}

static struct request *bfq_find_next_rq(struct bfq_data *bfqd,
					struct bfq_queue *bfqq,
					struct request *last, uint64_t now)
{
	struct bfq_avl_node *node = &RQ_BRQ(last)->node;
	struct request *next, *prev;

	next = bfq_check_fifo(bfqq, last, now);
	if (next)
		return next;
	prev = bfq_node_rq(bfq_avl_prev(&bfqq->sort_list, node, &bfq_sort_ops));
	next = bfq_node_rq(bfq_avl_next(&bfqq->sort_list, node, &bfq_sort_ops));
	if (!next) {
		next = bfq_node_rq(bfq_avl_first(&bfqq->sort_list));
		if (next == last)
			next = NULL;
	}
	return bfq_choose_req(bfqd, next, prev, blk_rq_pos(last));
}

/* Sectors to charge: async requests count bfq_async_charge_factor times. */
static int bfq_serv_to_charge(struct request *rq, struct bfq_queue *bfqq)
{
	uint32_t sectors = blk_rq_sectors(rq);

	/* Keep budgets in int range whatever a discard covers. */
	if (sectors > (1u << 26))
		sectors = 1u << 26;
	if (bfq_bfqq_sync(bfqq) || bfqq->wr_coeff > 1 ||
	    bfq_asymmetric_scenario(bfqq->bfqd, bfqq))
		return (int)sectors;
	return (int)sectors * bfq_async_charge_factor;
}

/*
 * The first request of a queue changed: make sure the (not in-service)
 * queue has budget for it.
 */
static void bfq_updated_next_req(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	struct bfq_entity *entity = &bfqq->entity;
	struct request *next_rq = bfqq->next_rq;
	int new_budget;

	if (!next_rq)
		return;
	/* Budgets cannot change once the queue has been selected. */
	if (bfqq == bfqd->in_service_queue)
		return;
	new_budget = bfqq->max_budget;
	if (bfq_serv_to_charge(next_rq, bfqq) > new_budget)
		new_budget = bfq_serv_to_charge(next_rq, bfqq);
	if (entity->service > new_budget)
		new_budget = entity->service;
	if (entity->budget != new_budget) {
		entity->budget = new_budget;
		bfq_requeue_bfqq(bfqd, bfqq, false);
	}
}

/* Interactive weight raising lasts ref_rate / peak_rate * ref duration. */
uint64_t bfq_wr_duration(struct bfq_data *bfqd)
{
	uint64_t dur_ms;

	if (bfqd->bfq_wr_max_time > 0)
		return bfqd->bfq_wr_max_time;
	dur_ms = bfqd->rate_dur_prod / bfqd->peak_rate;
	/* Between 3 and 25 seconds. */
	if (dur_ms < 3000)
		dur_ms = 3000;
	else if (dur_ms > 25000)
		dur_ms = 25000;
	return dur_ms * NSEC_PER_MSEC;
}

static void switch_back_to_interactive_wr(struct bfq_queue *bfqq,
					  struct bfq_data *bfqd)
{
	bfqq->wr_coeff = bfqd->bfq_wr_coeff;
	bfqq->wr_cur_max_time = bfq_wr_duration(bfqd);
	bfqq->last_wr_start_finish = bfqq->wr_start_at_switch_to_srt;
}

/* ------------------------------------------------------------------ */
/* large bursts of queue creations                                     */

static void bfq_burst_list_del(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	if (bfqq->in_burst_list) {
		TAILQ_REMOVE(&bfqd->burst_list, bfqq, burst_list);
		bfqq->in_burst_list = false;
	}
}

void bfq_burst_list_add(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	TAILQ_INSERT_HEAD(&bfqd->burst_list, bfqq, burst_list);
	bfqq->in_burst_list = true;
}

/* Empty the burst list and add just bfqq. */
static void bfq_reset_burst_list(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	struct bfq_queue *item;

	while ((item = TAILQ_FIRST(&bfqd->burst_list)))
		bfq_burst_list_del(bfqd, item);
	/* Start a new list only if no queue is active. */
	if (bfq_tot_busy_queues(bfqd) == 0) {
		bfq_burst_list_add(bfqd, bfqq);
		bfqd->burst_size = 1;
	} else {
		bfqd->burst_size = 0;
	}
	bfqd->burst_parent_entity = bfqq->entity.parent;
}

static void bfq_add_to_burst(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	struct bfq_queue *item;

	bfqd->burst_size++;
	if (bfqd->burst_size == (int)bfqd->bfq_large_burst_thresh) {
		/* Large burst: mark its queues; the list is not needed. */
		bfqd->large_burst = true;
		TAILQ_FOREACH (item, &bfqd->burst_list, burst_list)
			bfq_mark_bfqq_in_large_burst(item);
		bfq_mark_bfqq_in_large_burst(bfqq);
		while ((item = TAILQ_FIRST(&bfqd->burst_list)))
			bfq_burst_list_del(bfqd, item);
	} else {
		bfq_burst_list_add(bfqd, bfqq);
	}
}

/*
 * Many queues of the same group created shortly after each other are
 * usually the threads of one service or application that wants
 * throughput (git grep, a boot): their queues are not weight raised.
 */
static void bfq_handle_burst(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			     uint64_t now)
{
	if (bfqq->in_burst_list || bfq_bfqq_in_large_burst(bfqq))
		return;
	if (bfq_before(bfqd->last_ins_in_burst + bfqd->bfq_burst_interval,
		       now) ||
	    bfqq->entity.parent != bfqd->burst_parent_entity) {
		bfqd->large_burst = false;
		bfq_reset_burst_list(bfqd, bfqq);
		goto end;
	}
	if (bfqd->large_burst) {
		bfq_mark_bfqq_in_large_burst(bfqq);
		goto end;
	}
	bfq_add_to_burst(bfqd, bfqq);
end:
	bfqd->last_ins_in_burst = now;
}

/* ------------------------------------------------------------------ */
/* budgets                                                             */

static int bfq_bfqq_budget_left(struct bfq_queue *bfqq)
{
	return bfqq->entity.budget - bfqq->entity.service;
}

/* The auto-tuned max budget once enough budgets were assigned. */
static int bfq_max_budget(struct bfq_data *bfqd)
{
	if (bfqd->budgets_assigned < bfq_stats_min_budgets)
		return bfq_default_max_budget;
	return bfqd->bfq_max_budget;
}

static int bfq_min_budget(struct bfq_data *bfqd)
{
	if (bfqd->budgets_assigned < bfq_stats_min_budgets)
		return bfq_default_max_budget / 32;
	return bfqd->bfq_max_budget / 32;
}

/*
 * bfqq switched from idle to busy: set its budget.  If it expired only
 * because it waited for its next request, which then arrived in time, it
 * goes on with the budget it had left (its timestamps are back-shifted
 * on activation) and may preempt the queue in service to recover the
 * service hole.  Returns true in that case.
 */
static bool bfq_bfqq_update_budg_for_activation(struct bfq_data *bfqd,
						struct bfq_queue *bfqq,
						bool arrived_in_time)
{
	struct bfq_entity *entity = &bfqq->entity;

	if (bfq_bfqq_non_blocking_wait_rq(bfqq) && arrived_in_time &&
	    bfq_bfqq_budget_left(bfqq) > 0) {
		entity->budget = bfq_bfqq_budget_left(bfqq);
		if (entity->budget > bfqq->max_budget)
			entity->budget = bfqq->max_budget;
		entity->service = 0;
		return true;
	}
	entity->service = 0;
	entity->budget = bfqq->max_budget;
	if (bfq_serv_to_charge(bfqq->next_rq, bfqq) > entity->budget)
		entity->budget = bfq_serv_to_charge(bfqq->next_rq, bfqq);
	bfq_clear_bfqq_non_blocking_wait_rq(bfqq);
	return false;
}

static void bfq_update_bfqq_wr_on_rq_arrival(struct bfq_data *bfqd,
					     struct bfq_queue *bfqq,
					     unsigned int old_wr_coeff,
					     bool wr_or_deserves_wr,
					     bool interactive, bool in_burst,
					     bool soft_rt, uint64_t now)
{
	if (old_wr_coeff == 1 && wr_or_deserves_wr) {
		/* start a weight-raising period */
		if (interactive) {
			bfqq->service_from_wr = 0;
			bfqq->wr_coeff = bfqd->bfq_wr_coeff;
			bfqq->wr_cur_max_time = bfq_wr_duration(bfqd);
		} else {
			/* No interactive raising in progress to resume. */
			bfqq->wr_start_at_switch_to_srt = 0;
			bfqq->wr_coeff =
				bfqd->bfq_wr_coeff * BFQ_SOFTRT_WEIGHT_FACTOR;
			bfqq->wr_cur_max_time = bfqd->bfq_wr_rt_max_time;
		}
		/* Keep the budget close to the backlog, for latency. */
		if (bfqq->entity.budget > 2 * bfq_min_budget(bfqd))
			bfqq->entity.budget = 2 * bfq_min_budget(bfqd);
	} else if (old_wr_coeff > 1) {
		if (interactive) { /* update wr coeff and duration */
			bfqq->wr_coeff = bfqd->bfq_wr_coeff;
			bfqq->wr_cur_max_time = bfq_wr_duration(bfqd);
		} else if (in_burst) {
			bfqq->wr_coeff = 1;
		} else if (soft_rt) {
			/*
			 * Still soft real-time: recharge the raising with the
			 * soft real-time duration before it ends.
			 */
			if (bfqq->wr_cur_max_time != bfqd->bfq_wr_rt_max_time) {
				bfqq->wr_start_at_switch_to_srt =
					bfqq->last_wr_start_finish;
				bfqq->wr_cur_max_time =
					bfqd->bfq_wr_rt_max_time;
				bfqq->wr_coeff = bfqd->bfq_wr_coeff *
						 BFQ_SOFTRT_WEIGHT_FACTOR;
			}
			bfqq->last_wr_start_finish = now;
		}
	}
}

static bool bfq_bfqq_idle_for_long_time(struct bfq_data *bfqd,
					struct bfq_queue *bfqq, uint64_t now)
{
	return bfqq->dispatched == 0 &&
	       bfq_before(bfqq->budget_timeout + bfqd->bfq_wr_min_idle_time,
			  now);
}

/* bfqq has a higher class, or weight, than the in-service queue. */
static bool bfq_bfqq_higher_class_or_weight(struct bfq_queue *bfqq,
					    struct bfq_queue *in_serv_bfqq)
{
	unsigned int bfqq_weight, in_serv_weight;

	if (bfqq->ioprio_class < in_serv_bfqq->ioprio_class)
		return true;
	if (in_serv_bfqq->entity.parent == bfqq->entity.parent) {
		bfqq_weight = bfqq->entity.weight;
		in_serv_weight = in_serv_bfqq->entity.weight;
	} else {
		bfqq_weight = bfqq->entity.parent ? bfqq->entity.parent->weight
						  : bfqq->entity.weight;
		in_serv_weight = in_serv_bfqq->entity.parent
					 ? in_serv_bfqq->entity.parent->weight
					 : in_serv_bfqq->entity.weight;
	}
	return bfqq_weight > in_serv_weight;
}

static bool bfq_better_to_idle(struct bfq_queue *bfqq);

static void bfq_bfqq_handle_idle_busy_switch(struct bfq_data *bfqd,
					     struct bfq_queue *bfqq,
					     unsigned int old_wr_coeff,
					     bool *interactive, uint64_t now)
{
	bool soft_rt, in_burst, wr_or_deserves_wr, bfqq_wants_to_preempt;
	bool idle_for_long_time = bfq_bfqq_idle_for_long_time(bfqd, bfqq, now);
	/* See bfq_bfqq_update_budg_for_activation(). */
	bool arrived_in_time = !bfq_before(
		bfqq->ttime.last_end_request + bfqd->bfq_slice_idle * 3, now);

	/*
	 * bfqq deserves raising if sync, not in a large burst, idle for
	 * long enough (interactive) or soft real-time, not shared, and of
	 * the default weight: a weight that was set says how much the
	 * client should get, raising would override it.
	 */
	in_burst = bfq_bfqq_in_large_burst(bfqq);
	soft_rt = bfqd->bfq_wr_max_softrt_rate > 0 &&
		  !BFQQ_TOTALLY_SEEKY(bfqq) && !in_burst &&
		  bfq_before(bfqq->soft_rt_next_start, now) &&
		  bfqq->dispatched == 0 &&
		  bfqq->entity.new_weight == BFQ_DEFAULT_QUEUE_WEIGHT;
	*interactive = !in_burst && idle_for_long_time &&
		       bfqq->entity.new_weight == BFQ_DEFAULT_QUEUE_WEIGHT;
	wr_or_deserves_wr =
		bfqd->low_latency &&
		(bfqq->wr_coeff > 1 || (bfq_bfqq_sync(bfqq) && bfqq->bic &&
					(*interactive || soft_rt)));

	bfqq_wants_to_preempt = bfq_bfqq_update_budg_for_activation(
		bfqd, bfqq, arrived_in_time);

	/*
	 * A queue activated in a burst but idle for much longer than an
	 * interactive one is done with the burst's I/O.
	 */
	if (!bfq_bfqq_just_created(bfqq) && idle_for_long_time &&
	    bfq_before(bfqq->budget_timeout + 10 * NSEC_PER_SEC, now)) {
		bfq_burst_list_del(bfqd, bfqq);
		bfq_clear_bfqq_in_large_burst(bfqq);
	}
	bfq_clear_bfqq_just_created(bfqq);

	if (bfqd->low_latency) {
		bfq_update_bfqq_wr_on_rq_arrival(
			bfqd, bfqq, old_wr_coeff, wr_or_deserves_wr,
			*interactive, in_burst, soft_rt, now);
		if (old_wr_coeff != bfqq->wr_coeff)
			bfqq->entity.prio_changed = true;
	}

	bfqq->last_idle_bklogged = now;
	bfqq->service_from_backlogged = 0;
	bfq_clear_bfqq_softrt_update(bfqq);

	bfq_add_bfqq_busy(bfqd, bfqq);

	/*
	 * Preempt the queue in service when needed for guarantees: bfqq has
	 * a hole to recover and is at least as raised, or it has a higher
	 * weight.  Or when the queue in service would not be idled for
	 * (async, or seeky where idling cannot help): keeping it gains
	 * nothing, as Linux has done since 2019.  Only if bfqq may actually be
	 * next.
	 */
	if (bfqd->in_service_queue &&
	    ((bfqq_wants_to_preempt &&
	      bfqq->wr_coeff >= bfqd->in_service_queue->wr_coeff) ||
	     bfq_bfqq_higher_class_or_weight(bfqq, bfqd->in_service_queue) ||
	     !bfq_better_to_idle(bfqd->in_service_queue)) &&
	    next_queue_may_preempt(bfqd))
		bfq_bfqq_expire(bfqd, bfqd->in_service_queue, false,
				BFQQE_PREEMPTED, now);
}

/*
 * I/O intensity: a sync queue is I/O bound unless it was idle (empty,
 * nothing in flight) for over a fifth of its recent life, measured on a
 * window that halves every 200 ms.  It replaced counting requests that
 * arrive within a timer, which took long to notice a change.
 */
static void bfq_update_io_intensity(struct bfq_queue *bfqq, uint64_t now)
{
	uint64_t tot_io_time = now - bfqq->io_start_time;

	if (bfq_avl_empty(&bfqq->sort_list) && bfqq->dispatched == 0 &&
	    !bfq_before(now, bfqq->ttime.last_end_request))
		bfqq->tot_idle_time += now - bfqq->ttime.last_end_request;
	if (bfq_bfqq_just_created(bfqq))
		return;
	if (bfqq->tot_idle_time * 5 > tot_io_time)
		bfq_clear_bfqq_IO_bound(bfqq);
	else
		bfq_mark_bfqq_IO_bound(bfqq);
	if (tot_io_time > 200 * NSEC_PER_MSEC) {
		bfqq->io_start_time = now - (tot_io_time >> 1);
		bfqq->tot_idle_time >>= 1;
	}
}

/* ------------------------------------------------------------------ */
/* waker detection and the injection limit                             */

/*
 * Start inject_limit again from what the think time suggests: 0 for a
 * short think time (an injected request may outlast it and delay the
 * queue's next one), 1 for a long one (one request is unlikely to
 * outlast it, and such a queue seldom gives a sample to learn from).
 * The baseline service time is forgotten.
 */
static void bfq_reset_inject_limit(struct bfq_data *bfqd,
				   struct bfq_queue *bfqq, uint64_t now)
{
	bfqq->last_serv_time_ns = 0;
	bfqd->waited_rq = NULL;
	bfqq->inject_limit = bfq_bfqq_has_short_ttime(bfqq) ? 0 : 1;
	bfqq->decrease_time = now;
}

/*
 * bfqq, with a long think time, got I/O right after (4 ms) a request of
 * another queue completed: that queue may be what it waits for.  The
 * third time in a row within 128 idle slices makes it bfqq's waker, and
 * bfqq joins the waker's woken list.
 */
static void bfq_check_waker(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			    uint64_t now)
{
	struct bfq_queue *waker = bfqd->last_completed_rq_bfqq;

	if (!waker || waker == bfqq || bfq_bfqq_has_short_ttime(bfqq) ||
	    now - bfqd->last_completion >= 4 * NSEC_PER_MSEC)
		return;
	/* Too long since the first detection: wakeups are rare. */
	if (waker != bfqq->tentative_waker_bfqq ||
	    now > bfqq->waker_detection_started + 128 * bfqd->bfq_slice_idle) {
		bfqq->tentative_waker_bfqq = waker;
		bfqq->num_waker_detections = 1;
		bfqq->waker_detection_started = now;
	} else {
		bfqq->num_waker_detections++;
	}
	if (bfqq->num_waker_detections == 3) {
		if (bfqq->on_woken_list)
			TAILQ_REMOVE(&bfqq->waker_bfqq->woken_list, bfqq,
				     woken_list_node);
		bfqq->waker_bfqq = waker;
		bfqq->tentative_waker_bfqq = NULL;
		TAILQ_INSERT_HEAD(&waker->woken_list, bfqq, woken_list_node);
		bfqq->on_woken_list = true;
	}
}

/*
 * A sync queue got I/O with nothing else of its client queued or in
 * flight: look for its waker, reset inject_limit once a second (so that
 * it can drop if the workload changed), and, if it is in service, start
 * sampling the total service time of this request: with the device
 * empty, as the baseline; with injected requests in flight, to see what
 * injection costs it.
 */
static void bfq_inject_on_arrival(struct bfq_data *bfqd, struct bfq_queue *bfqq,
				  uint64_t now)
{
	bfq_check_waker(bfqd, bfqq, now);
	if (!bfq_before(now, bfqq->decrease_time + NSEC_PER_SEC))
		bfq_reset_inject_limit(bfqd, bfqq, now);
	if (bfqq == bfqd->in_service_queue &&
	    (bfqd->rq_in_driver == 0 ||
	     (bfqq->last_serv_time_ns > 0 && bfqd->rqs_injected &&
	      bfqd->rq_in_driver > 0)) &&
	    !bfq_before(now, bfqq->decrease_time + 10 * NSEC_PER_MSEC)) {
		bfqd->last_empty_occupied_ns = now;
		/* The dispatch of the request sets waited_rq. */
		bfqd->wait_dispatch = true;
		/* Injection before this arrival does not delay it. */
		if (bfqd->rq_in_driver == 0)
			bfqd->rqs_injected = false;
	}
}

/*
 * waited_rq completed (before rq_in_driver counts it out): its total
 * service time, from arrival to completion, against the baseline.  With
 * injection in between, within 1.5x the baseline lets the limit grow (up
 * to what the device was seen holding), beyond it makes it shrink.
 * Without injection and nothing else in flight, the time is the new
 * baseline (a first baseline allows injecting at least one request).
 */
static void bfq_update_inject_limit(struct bfq_data *bfqd,
				    struct bfq_queue *bfqq, uint64_t now)
{
	uint64_t tot_time_ns = now - bfqd->last_empty_occupied_ns;
	unsigned int old_limit = bfqq->inject_limit;

	if (bfqq->last_serv_time_ns > 0 && bfqd->rqs_injected) {
		uint64_t threshold = (bfqq->last_serv_time_ns * 3) >> 1;

		if (tot_time_ns >= threshold && old_limit > 0) {
			bfqq->inject_limit--;
			bfqq->decrease_time = now;
		} else if (tot_time_ns < threshold &&
			   old_limit <= (unsigned int)bfqd->max_rq_in_driver) {
			bfqq->inject_limit++;
		}
	}
	if ((bfqq->last_serv_time_ns == 0 && bfqd->rq_in_driver == 1) ||
	    tot_time_ns < bfqq->last_serv_time_ns) {
		if (bfqq->last_serv_time_ns == 0 && old_limit < 1)
			bfqq->inject_limit = 1;
		bfqq->last_serv_time_ns = tot_time_ns;
	} else if (!bfqd->rqs_injected && bfqd->rq_in_driver == 1) {
		/* The baseline varies with request sizes and locality. */
		bfqq->last_serv_time_ns = tot_time_ns;
	}
	bfqd->waited_rq = NULL;
	bfqd->rqs_injected = false;
}

static void bfq_add_request(struct bfq_data *bfqd, struct request *rq,
			    uint64_t now)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq);
	struct request *next_rq, *prev;
	unsigned int old_wr_coeff = bfqq->wr_coeff;
	bool interactive = false;

	bfqq->queued[bfq_rq_is_sync(rq)]++;
	/* One atomic store: bfq_has_work reads it without the lock. */
	bfq_set_queued(bfqd, bfqd->queued + 1);

	if (bfq_bfqq_sync(bfqq))
		bfq_update_io_intensity(bfqq, now);
	if (bfq_bfqq_sync(bfqq) && RQ_BRQ(rq)->bic->nr_rqs <= 1)
		bfq_inject_on_arrival(bfqd, bfqq, now);
	bfq_sort_add(bfqd, bfqq, rq);
	RQ_BRQ(rq)->queued = true;

	/* Is this request a better next-serve candidate? */
	prev = bfqq->next_rq;
	next_rq = bfq_choose_req(bfqd, bfqq->next_rq, rq, bfqd->last_position);
	bfqq->next_rq = next_rq;
	if (prev != bfqq->next_rq)
		bfq_pos_tree_add_move(bfqd, bfqq);

	if (!bfq_bfqq_busy(bfqq)) { /* switching to busy ... */
		bfq_bfqq_handle_idle_busy_switch(bfqd, bfqq, old_wr_coeff,
						 &interactive, now);
	} else {
		/* Async queues are raised after a long enough pause. */
		if (bfqd->low_latency && old_wr_coeff == 1 &&
		    !bfq_rq_is_sync(rq) &&
		    bfq_before(bfqq->last_wr_start_finish +
				       bfqd->bfq_wr_min_inter_arr_async,
			       now)) {
			bfqq->wr_coeff = bfqd->bfq_wr_coeff;
			bfqq->wr_cur_max_time = bfq_wr_duration(bfqd);
			bfq_set_wr_busy(bfqd, bfqd->wr_busy_queues + 1);
			bfqq->entity.prio_changed = true;
		}
		if (prev != bfqq->next_rq)
			bfq_updated_next_req(bfqd, bfqq);
	}

	/*
	 * last_wr_start_finish: for a queue not raised, the arrival of its
	 * last request; for a raised one, when raising (re)started.
	 */
	if (bfqd->low_latency &&
	    (old_wr_coeff == 1 || bfqq->wr_coeff == 1 || interactive))
		bfqq->last_wr_start_finish = now;
}

static uint64_t get_sdist(uint64_t last_pos, struct request *rq)
{
	uint64_t pos = blk_rq_pos(rq);

	if (!last_pos)
		return 0;
	return pos > last_pos ? pos - last_pos : last_pos - pos;
}

static bool bfq_rq_seeky(struct bfq_data *bfqd, uint64_t last_pos,
			 struct request *rq)
{
	return get_sdist(last_pos, rq) > BFQQ_SEEK_THR &&
	       (!bfq_nonrot(bfqd) || blk_rq_sectors(rq) < BFQQ_SECT_THR_NONROT);
}

static void bfq_remove_request(struct bfq_data *bfqd, struct request *rq,
			       uint64_t now)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq);
	const int sync = bfq_rq_is_sync(rq);

	if (bfqq->next_rq == rq) {
		bfqq->next_rq = bfq_find_next_rq(bfqd, bfqq, rq, now);
		bfq_updated_next_req(bfqd, bfqq);
	}
	TAILQ_REMOVE(&bfqq->fifo, rq, queuelist);
	elv_rqhash_del(bfqd->hctx, rq);
	bfqq->queued[sync]--;
	bfq_set_queued(bfqd, bfqd->queued - 1);
	bfq_sort_del(bfqq, rq);
	RQ_BRQ(rq)->queued = false;

	if (bfq_avl_empty(&bfqq->sort_list)) {
		bfqq->next_rq = NULL;
		if (bfq_bfqq_busy(bfqq) && bfqq != bfqd->in_service_queue) {
			bfq_del_bfqq_busy(bfqd, bfqq, false);
			/*
			 * Emptied while not in service: service and budget
			 * do not describe the last slot, reset them.
			 */
			bfqq->entity.budget = bfqq->entity.service = 0;
		}
		bfq_pos_tree_del(bfqq);
	} else {
		bfq_pos_tree_add_move(bfqd, bfqq);
	}
}

/* ------------------------------------------------------------------ */
/* merging                                                             */

/*
 * Called with bfqd->lock held, from mq_rq_merge_ok() in bfq_bio_merge():
 * a bio may only join a request of the queue it would be queued in, and a
 * sync bio never joins an async request.
 */
bool bfq_allow_bio_merge(struct mq_queue *q, struct request *rq,
			 struct bio *bio)
{
	struct bfq_data *bfqd = rq->mq_hctx->sched_data;

	(void)q;
	if (op_is_sync(bio->bi_op, bio->bi_flags) && !bfq_rq_is_sync(rq))
		return false;
	if (!bfqd || !bfqd->bio_bfqq)
		return false;
	/* An early merge of the bio's queue with a cooperator's. */
	return bfq_merge_on_bio(bfqd, bio, bfq_now(bfqd)) == RQ_BFQQ(rq);
}

/*
 * A queued request of the bio's queue that starts where the bio ends:
 * bfq_request_merge() with bfq_find_rq_fmerge().  The core has tried its
 * last merge and back-merge hash already.
 */
enum elv_merge bfq_request_merge(struct mq_hw_ctx *hctx, struct request **req,
				 struct bio *bio)
{
	struct bfq_data *bfqd = hctx->sched_data;
	struct request *rq;

	if (!bfqd->bio_bfqq)
		return ELEVATOR_NO_MERGE;
	rq = bfq_find_rq_at(bfqd->bio_bfqq, bio_end_sector(bio));
	if (rq && mq_rq_merge_ok(rq, bio)) {
		*req = rq;
		return ELEVATOR_FRONT_MERGE;
	}
	return ELEVATOR_NO_MERGE;
}

/* A front merge moved req: reposition it and revisit next_rq. */
void bfq_request_merged(struct mq_queue *q, struct request *req,
			enum elv_merge type)
{
	struct bfq_queue *bfqq = RQ_BFQQ(req);
	struct bfq_rq *brq = RQ_BRQ(req);
	struct request *prev, *next_rq;
	struct bfq_data *bfqd;

	(void)q;
	if (type != ELEVATOR_FRONT_MERGE || !bfqq || !brq || !brq->queued)
		return;
	bfqd = bfqq->bfqd;
	bfq_sort_del(bfqq, req);
	bfq_sort_add(bfqd, bfqq, req);
	prev = bfqq->next_rq;
	next_rq = bfq_choose_req(bfqd, bfqq->next_rq, req, bfqd->last_position);
	bfqq->next_rq = next_rq;
	if (prev != bfqq->next_rq)
		bfq_updated_next_req(bfqd, bfqq);
	bfq_pos_tree_add_move(bfqd, bfqq);
}

/*
 * next was appended to rq: rq takes next's FIFO place if next is older,
 * and next leaves its queue.  bfq_requests_merged().
 */
void bfq_requests_merged(struct mq_queue *q, struct request *rq,
			 struct request *next)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq), *next_bfqq = RQ_BFQQ(next);
	struct bfq_rq *brq = RQ_BRQ(rq), *bnext = RQ_BRQ(next);
	struct bfq_data *bfqd = rq->mq_hctx->sched_data;

	(void)q;
	if (bfqq && bfqq == next_bfqq && brq && brq->queued && bnext &&
	    bnext->queued && next->fifo_time < rq->fifo_time) {
		TAILQ_REMOVE(&bfqq->fifo, rq, queuelist);
		TAILQ_INSERT_BEFORE(next, rq, queuelist);
		rq->fifo_time = next->fifo_time;
	}
	if (bfqq && bfqq->next_rq == next)
		bfqq->next_rq = rq;
	if (bnext && bnext->queued)
		bfq_remove_request(bfqd, next, bfq_now(bfqd));
}

/* elv_rb_latter_request and elv_rb_former_request on a queue's list. */
struct request *bfq_next_request(struct mq_queue *q, struct request *rq)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq);
	struct bfq_rq *brq = RQ_BRQ(rq);

	(void)q;
	if (!bfqq || !brq || !brq->queued)
		return NULL;
	return bfq_node_rq(
		bfq_avl_next(&bfqq->sort_list, &brq->node, &bfq_sort_ops));
}

struct request *bfq_former_request(struct mq_queue *q, struct request *rq)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq);
	struct bfq_rq *brq = RQ_BRQ(rq);

	(void)q;
	if (!bfqq || !brq || !brq->queued)
		return NULL;
	return bfq_node_rq(
		bfq_avl_prev(&bfqq->sort_list, &brq->node, &bfq_sort_ops));
}

bool bfq_bio_merge(struct mq_hw_ctx *hctx, struct bio *bio)
{
	struct bfq_data *bfqd = hctx->sched_data;
	struct request *free = NULL;
	struct bfq_io_cq *bic;
	struct bfq_queue *bfqq;
	bool ret = false;

	if (!bfqd)
		return false;
	pthread_mutex_lock(&bfqd->lock);
	bic = bfq_bic_lookup(bfqd, bio->bi_submitter);
	bfqq = bic ? bic->bfqq[op_is_sync(bio->bi_op, bio->bi_flags)] : NULL;
	/*
	 * Only a request of the bio's own queue may take it, or of the
	 * queue it is merged with on the way (bfq_allow_bio_merge).
	 */
	if (bfqq) {
		bfqd->bio_bfqq = bfqq;
		bfqd->bio_bic = bic;
		ret = mq_sched_try_merge(hctx, bio, &free);
		bfqd->bio_bfqq = NULL;
		bfqd->bio_bic = NULL;
	}
	pthread_mutex_unlock(&bfqd->lock);
	/* Its finish_request takes bfqd->lock. */
	if (free)
		mq_free_request(free);
	return ret;
}

/* ------------------------------------------------------------------ */
/* weight raising end                                                  */

void bfq_bfqq_end_wr(struct bfq_queue *bfqq, uint64_t now)
{
	struct bfq_data *bfqd = bfqq->bfqd;

	/*
	 * Interactive raising did not compute soft_rt_next_start: a queue
	 * that ends it may be deemed soft real-time from now on.
	 */
	if (bfqq->wr_cur_max_time != bfqd->bfq_wr_rt_max_time)
		bfqq->soft_rt_next_start = now;
	if (bfq_bfqq_busy(bfqq) && bfqq->wr_coeff > 1)
		bfq_set_wr_busy(bfqd, bfqd->wr_busy_queues - 1);
	bfqq->wr_coeff = 1;
	bfqq->wr_cur_max_time = 0;
	bfqq->last_wr_start_finish = now;
	/* The weight changes at the next __bfq_entity_update_weight_prio. */
	bfqq->entity.prio_changed = true;
}

void bfq_end_wr(struct bfq_data *bfqd)
{
	struct bfq_queue *bfqq;
	uint64_t now = bfq_now(bfqd);

	TAILQ_FOREACH (bfqq, &bfqd->queues, all_list)
		if (bfqq->wr_coeff > 1)
			bfq_bfqq_end_wr(bfqq, now);
}

/* ------------------------------------------------------------------ */
/* service slots                                                       */

/* The time a queue has to consume its budget: time slices for seeky ones. */
static void bfq_set_budget_timeout(struct bfq_data *bfqd,
				   struct bfq_queue *bfqq, uint64_t now)
{
	unsigned int timeout_coeff;

	if (bfqq->wr_cur_max_time == bfqd->bfq_wr_rt_max_time)
		timeout_coeff = 1;
	else
		timeout_coeff = bfqq->entity.weight / bfqq->entity.orig_weight;
	bfqd->last_budget_start = now;
	bfqq->budget_timeout = now + bfqd->bfq_timeout * timeout_coeff;
}

static void __bfq_set_in_service_queue(struct bfq_data *bfqd,
				       struct bfq_queue *bfqq, uint64_t now)
{
	if (bfqq) {
		bfq_clear_bfqq_fifo_expire(bfqq);
		bfqd->budgets_assigned = (bfqd->budgets_assigned * 7 + 256) / 8;
		if (bfq_before(bfqq->last_wr_start_finish, now) &&
		    bfqq->wr_coeff > 1 &&
		    bfqq->wr_cur_max_time == bfqd->bfq_wr_rt_max_time &&
		    bfq_before(bfqq->budget_timeout, now)) {
			/*
			 * Soft real-time queues: move the start of raising
			 * forward by the time the queue went without service,
			 * or a long service delay would end raising.
			 */
			if (bfq_before(bfqq->last_wr_start_finish,
				       bfqq->budget_timeout))
				bfqq->last_wr_start_finish +=
					now - bfqq->budget_timeout;
			else
				bfqq->last_wr_start_finish = now;
		}
		bfq_set_budget_timeout(bfqd, bfqq, now);
	}
	bfqd->in_service_queue = bfqq;
}

static struct bfq_queue *bfq_set_in_service_queue(struct bfq_data *bfqd,
						  uint64_t now)
{
	struct bfq_queue *bfqq = bfq_get_next_queue(bfqd);

	__bfq_set_in_service_queue(bfqd, bfqq, now);
	return bfqq;
}

/* Idle the device waiting for the in-service queue's next request. */
static void bfq_arm_slice_timer(struct bfq_data *bfqd, uint64_t now)
{
	struct bfq_queue *bfqq = bfqd->in_service_queue;
	uint64_t sl = bfqd->bfq_slice_idle, ms;

	bfq_mark_bfqq_wait_request(bfqq);
	/*
	 * Grant only a minimal idle time to a seeky queue, unless it is
	 * raised or the scenario asymmetric: then long idling is needed to
	 * guarantee its share.
	 */
	if (BFQQ_SEEKY(bfqq) && bfqq->wr_coeff == 1 &&
	    !bfq_asymmetric_scenario(bfqd, bfqq))
		sl = bfq_u64_min(sl, BFQ_MIN_TT);
	else if (bfqq->wr_coeff > 1)
		sl = bfq_u64_max(sl, 20 * NSEC_PER_MSEC);
	bfqd->last_idling_start = now;
	bfqd->idle_deadline = now + sl;
	/* The timer: a delayed run of the hw queue (dispatch does the rest). */
	ms = (sl + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC;
	mq_delay_run_hw_queue(bfqd->hctx, ms ? ms : 1);
}

/* Sectors transferable in a timeout at the estimated peak rate. */
int bfq_calc_max_budget(struct bfq_data *bfqd)
{
	uint64_t b = (uint64_t)bfqd->peak_rate * 1000 *
			     (bfqd->bfq_timeout / NSEC_PER_MSEC) >>
		     BFQ_RATE_SHIFT;

	if (b > INT32_MAX / 4)
		b = INT32_MAX / 4;
	return b ? (int)b : 1;
}

static void update_thr_responsiveness_params(struct bfq_data *bfqd)
{
	if (bfqd->bfq_user_max_budget == 0)
		bfqd->bfq_max_budget = bfq_calc_max_budget(bfqd);
}

static void bfq_reset_rate_computation(struct bfq_data *bfqd,
				       struct request *rq, uint64_t now)
{
	if (rq) { /* new dispatch now, start a new observation */
		bfqd->last_dispatch = bfqd->first_dispatch = now;
		bfqd->peak_rate_samples = 1;
		bfqd->sequential_samples = 0;
		bfqd->tot_sectors_dispatched = bfqd->last_rq_max_size =
			blk_rq_sectors(rq);
	} else { /* full re-init on next dispatch */
		bfqd->peak_rate_samples = 0;
	}
}

static void bfq_update_rate_reset(struct bfq_data *bfqd, struct request *rq,
				  uint64_t now)
{
	uint32_t weight, divisor;
	uint64_t rate, usecs;

	/* Enough samples over a long enough interval, or start again. */
	if (bfqd->peak_rate_samples < BFQ_RATE_MIN_SAMPLES ||
	    bfqd->delta_from_first < BFQ_RATE_MIN_INTERVAL)
		goto reset_computation;
	/* Extend the interval to the last completion if later. */
	bfqd->delta_from_first =
		bfq_u64_max(bfqd->delta_from_first,
			    bfqd->last_completion - bfqd->first_dispatch);
	usecs = bfqd->delta_from_first / NSEC_PER_USEC;
	rate = (bfqd->tot_sectors_dispatched << BFQ_RATE_SHIFT) / usecs;
	/*
	 * Not updated if under 3/4 of the dispatches were sequential and
	 * the rate is below the estimate, or if unreasonably high (> 20M
	 * sectors/s).
	 */
	if ((bfqd->sequential_samples < (3 * bfqd->peak_rate_samples) >> 2 &&
	     rate <= bfqd->peak_rate) ||
	    rate > 20 << BFQ_RATE_SHIFT)
		goto reset_computation;
	/*
	 * Low-pass filter, weighting the new sample by how sequential the
	 * workload and how long the interval were: from 1/10 to 1/2.
	 */
	weight = (9 * bfqd->sequential_samples) / bfqd->peak_rate_samples;
	weight = (uint32_t)bfq_u64_min(8, (weight * bfqd->delta_from_first) /
						  BFQ_RATE_REF_INTERVAL);
	divisor = 10 - weight;
	bfqd->peak_rate *= divisor - 1;
	bfqd->peak_rate /= divisor;
	rate /= divisor;
	bfqd->peak_rate += (uint32_t)rate;
	/* Never 0: it divides. */
	if (!bfqd->peak_rate)
		bfqd->peak_rate = 1;
	update_thr_responsiveness_params(bfqd);
reset_computation:
	bfq_reset_rate_computation(bfqd, rq, now);
}

/*
 * Estimate the device's peak rate from the dispatch rate: in the long
 * run, as queues are bounded, dispatches and completions converge.
 * Called on every dispatch.
 */
static void bfq_update_peak_rate(struct bfq_data *bfqd, struct request *rq,
				 uint64_t now)
{
	if (bfqd->peak_rate_samples == 0) { /* first dispatch */
		bfq_reset_rate_computation(bfqd, rq, now);
		goto update_last_values;
	}
	/* Device idle for long: close the interval, start a new one. */
	if (now - bfqd->last_dispatch > 100 * NSEC_PER_MSEC &&
	    bfqd->rq_in_driver == 0)
		goto update_rate_and_reset;

	bfqd->peak_rate_samples++;
	if ((bfqd->rq_in_driver > 0 ||
	     now - bfqd->last_completion < BFQ_MIN_TT) &&
	    !bfq_rq_seeky(bfqd, bfqd->last_position, rq))
		bfqd->sequential_samples++;
	bfqd->tot_sectors_dispatched += blk_rq_sectors(rq);
	/* Reset max observed rq size every 32 dispatches */
	if (bfqd->peak_rate_samples % 32) {
		if (blk_rq_sectors(rq) > bfqd->last_rq_max_size)
			bfqd->last_rq_max_size = blk_rq_sectors(rq);
	} else {
		bfqd->last_rq_max_size = blk_rq_sectors(rq);
	}
	bfqd->delta_from_first = now - bfqd->first_dispatch;
	if (bfqd->delta_from_first < BFQ_RATE_REF_INTERVAL)
		goto update_last_values;
update_rate_and_reset:
	bfq_update_rate_reset(bfqd, rq, now);
update_last_values:
	bfqd->last_position = blk_rq_pos(rq) + blk_rq_sectors(rq);
	if (RQ_BFQQ(rq) == bfqd->in_service_queue)
		bfqd->in_serv_last_pos = bfqd->last_position;
	bfqd->last_dispatch = now;
}

static void bfq_dispatch_remove(struct bfq_data *bfqd, struct request *rq,
				uint64_t now)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq);

	/* Counted first, so that the queue does not look idle meanwhile. */
	bfqq->dispatched++;
	bfq_update_peak_rate(bfqd, rq, now);
	bfq_remove_request(bfqd, rq, now);
}

/*
 * Process references: the client owning a sync queue; async ones: any.
 * While the request queue is frozen (a scheduler switch, teardown) no
 * request can arrive either: as without a process, idling cannot help.
 */
static int bfqq_process_refs(const struct bfq_queue *bfqq)
{
	if (atomic_load_explicit(&bfqq->bfqd->queue->frozen,
				 memory_order_relaxed))
		return 0;
	if (bfq_bfqq_sync(bfqq))
		return bfqq->process_refs;
	return 1;
}

/*
 * Idling needed to preserve bfqq's share: bfqq is raised while others
 * are not (or much other I/O is in flight), the scenario is
 * asymmetric, or bfqq is the only busy queue.  See the long comment in Linux
 * for the reasoning: in symmetric scenarios preemption alone keeps the shares,
 * without the throughput cost of plugging.
 */
static bool idling_needed_for_service_guarantees(struct bfq_data *bfqd,
						 struct bfq_queue *bfqq)
{
	unsigned int tot_busy_queues = bfq_tot_busy_queues(bfqd);

	if (!bfqq_process_refs(bfqq))
		return false;
	/*
	 * And for a queue busy alone: plugging costs the others
	 * nothing, and it keeps a queue that becomes busy meanwhile from
	 * filling the device before bfqq's next request (Linux 6.6).
	 */
	return (bfqq->wr_coeff > 1 &&
		(bfqd->wr_busy_queues < tot_busy_queues ||
		 bfqd->rq_in_driver >= bfqq->dispatched + 4)) ||
	       bfq_asymmetric_scenario(bfqd, bfqq) || tot_busy_queues == 1;
}

/* Returns true if bfqq was freed. */
static bool __bfq_bfqq_expire(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			      enum bfqq_expiration reason, uint64_t now)
{
	/* Shared and seeky: split at the next request (bfq-merge.c). */
	if (bfq_bfqq_coop(bfqq) && BFQQ_SEEKY(bfqq))
		bfq_mark_bfqq_split_coop(bfqq);
	/*
	 * An empty queue leaves the service tree, unless this is a
	 * preemption and it needs plugging for its guarantees: then it is
	 * requeued, so that it is served before queues with higher finish
	 * times.
	 */
	if (bfq_avl_empty(&bfqq->sort_list) &&
	    !(reason == BFQQE_PREEMPTED &&
	      idling_needed_for_service_guarantees(bfqd, bfqq))) {
		/* When it went empty without outstanding requests. */
		if (bfqq->dispatched == 0)
			bfqq->budget_timeout = now;
		bfq_del_bfqq_busy(bfqd, bfqq, true);
	} else {
		bfq_requeue_bfqq(bfqd, bfqq, true);
		if (!bfq_avl_empty(&bfqq->sort_list))
			bfq_pos_tree_add_move(bfqd, bfqq);
	}
	return __bfq_bfqd_reset_in_service(bfqd);
}

/* Adapt the budget of bfqq to its behaviour, at expiration. */
static void __bfq_bfqq_recalc_budget(struct bfq_data *bfqd,
				     struct bfq_queue *bfqq,
				     enum bfqq_expiration reason)
{
	struct request *next_rq;
	int budget, min_budget;

	min_budget = bfq_min_budget(bfqd);
	if (bfqq->wr_coeff == 1)
		budget = bfqq->max_budget;
	else /* a low constant budget for raised queues, for latency */
		budget = 2 * min_budget;

	if (bfq_bfqq_sync(bfqq) && bfqq->wr_coeff == 1) {
		switch (reason) {
		case BFQQE_TOO_IDLE:
			/*
			 * The only case where the budget may shrink: with
			 * nothing in flight the batch would have fit a smaller
			 * budget.  With requests in flight the process may be
			 * waiting for them: grow it instead.
			 */
			if (bfqq->dispatched > 0)
				budget = budget * 2 < bfqd->bfq_max_budget
						 ? budget * 2
						 : bfqd->bfq_max_budget;
			else if (budget > 5 * min_budget)
				budget -= 4 * min_budget;
			else
				budget = min_budget;
			break;
		case BFQQE_BUDGET_TIMEOUT:
			/* Maybe not seeky, just slow: give it more. */
			budget = budget * 2 < bfqd->bfq_max_budget
					 ? budget * 2
					 : bfqd->bfq_max_budget;
			break;
		case BFQQE_BUDGET_EXHAUSTED:
			/* Backlogged, fast, short think time: boost it. */
			budget = budget * 4 < bfqd->bfq_max_budget
					 ? budget * 4
					 : bfqd->bfq_max_budget;
			break;
		case BFQQE_NO_MORE_REQUESTS:
			/*
			 * Keep the budget close to the service the queue
			 * asks for before waiting, against timestamp
			 * misalignment on back-shifted reactivations.
			 */
			budget = bfqq->entity.service > min_budget
					 ? bfqq->entity.service
					 : min_budget;
			break;
		default:
			return;
		}
	} else if (!bfq_bfqq_sync(bfqq)) {
		/* Async queues always get the maximum budget. */
		budget = bfqd->bfq_max_budget;
	}

	bfqq->max_budget = budget;
	if (bfqd->budgets_assigned >= bfq_stats_min_budgets &&
	    !bfqd->bfq_user_max_budget &&
	    bfqq->max_budget > bfqd->bfq_max_budget)
		bfqq->max_budget = bfqd->bfq_max_budget;

	/* With backlog, the new budget must fit the next request. */
	next_rq = bfqq->next_rq;
	if (next_rq) {
		int charge = bfq_serv_to_charge(next_rq, bfqq);

		bfqq->entity.budget =
			bfqq->max_budget > charge ? bfqq->max_budget : charge;
	}
}

/*
 * A sync queue is "slow" if it consumed its budget at under half the
 * peak rate over a long enough slot (or, for short slots, if seeky):
 * it is then charged time instead of service.
 */
static bool bfq_bfqq_is_slow(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			     bool compensate, unsigned long *delta_ms,
			     uint64_t now)
{
	uint64_t delta, delta_usecs;
	bool slow = BFQQ_SEEKY(bfqq);

	if (!bfq_bfqq_sync(bfqq))
		return false;
	delta = (compensate ? bfqd->last_idling_start : now) -
		bfqd->last_budget_start;
	delta_usecs = delta / NSEC_PER_USEC;
	/* don't use too short time intervals */
	if (delta_usecs < 1000) {
		if (bfq_nonrot(bfqd))
			/* same worst-case guarantees as idling for seeky */
			*delta_ms = BFQ_MIN_TT / NSEC_PER_MSEC;
		else /* charge at least one seek */
			*delta_ms = bfq_slice_idle / NSEC_PER_MSEC;
		return slow;
	}
	*delta_ms = delta_usecs / 1000;
	/* Long intervals only, against spikes; half the peak rate. */
	if (delta_usecs > 20000)
		slow = bfqq->entity.service < bfqd->bfq_max_budget / 2;
	return slow;
}

/*
 * Soft real-time: after a batch, the next one may start only late enough
 * for the average rate to stay under bfq_wr_max_softrt_rate, and not
 * before slice_idle plus a few jiffies (filtering greedy processes), and
 * not before the last value (filtering greedy processes slowed down).
 */
static uint64_t bfq_bfqq_softrt_next_start(struct bfq_data *bfqd,
					   struct bfq_queue *bfqq, uint64_t now)
{
	uint64_t a = bfqq->soft_rt_next_start;
	uint64_t b = bfqq->last_idle_bklogged +
		     NSEC_PER_SEC * bfqq->service_from_backlogged /
			     bfqd->bfq_wr_max_softrt_rate;
	uint64_t c = now + bfqd->bfq_slice_idle + 4 * NSEC_PER_MSEC;

	return bfq_u64_max(a, bfq_u64_max(b, c));
}

/*
 * Expire bfqq.  Slow (typically seeky) and timed-out queues are charged
 * the time they were in service rather than the service received: B-WF2Q+
 * then schedules them by time slices, the others by service.
 */
void bfq_bfqq_expire(struct bfq_data *bfqd, struct bfq_queue *bfqq,
		     bool compensate, enum bfqq_expiration reason, uint64_t now)
{
	struct bfq_entity *entity = &bfqq->entity;
	unsigned long delta = 0;
	bool slow;

	slow = bfq_bfqq_is_slow(bfqd, bfqq, compensate, &delta, now);
	/* Not those that consumed 2/3 of their budget before a timeout. */
	if (bfqq->wr_coeff == 1 &&
	    (slow || (reason == BFQQE_BUDGET_TIMEOUT &&
		      bfq_bfqq_budget_left(bfqq) >= entity->budget / 3)))
		bfq_bfqq_charge_time(bfqd, bfqq, delta, now);

	if (reason == BFQQE_TOO_IDLE &&
	    entity->service <= 2 * entity->budget / 10)
		bfq_clear_bfqq_IO_bound(bfqq);

	if (bfqd->low_latency && bfqq->wr_coeff == 1)
		bfqq->last_wr_start_finish = now;

	if (bfqd->low_latency && bfqd->bfq_wr_max_softrt_rate > 0 &&
	    bfq_avl_empty(&bfqq->sort_list)) {
		/*
		 * Nothing outstanding: the pattern is isochronous, compute
		 * soft_rt_next_start (not during interactive raising, which
		 * may be loading a soft real-time application).  With
		 * requests in flight, wait for them.
		 */
		if (bfqq->dispatched == 0 &&
		    bfqq->wr_coeff != bfqd->bfq_wr_coeff)
			bfqq->soft_rt_next_start =
				bfq_bfqq_softrt_next_start(bfqd, bfqq, now);
		else if (bfqq->dispatched > 0)
			bfq_mark_bfqq_softrt_update(bfqq);
	}

	/*
	 * No total service time is being measured for bfqq any more: a
	 * sample left running would time the next queue's request from
	 * bfqq's arrival.
	 */
	bfqd->rqs_injected = bfqd->wait_dispatch = false;
	bfqd->waited_rq = NULL;

	__bfq_bfqq_recalc_budget(bfqd, bfqq, reason);
	if (__bfq_bfqq_expire(bfqd, bfqq, reason, now))
		return; /* bfqq is gone */

	/*
	 * Waiting for a request: keep the service received, to go on with
	 * the same budget if the request arrives in time.
	 */
	if (!bfq_bfqq_busy(bfqq) && reason != BFQQE_BUDGET_TIMEOUT &&
	    reason != BFQQE_BUDGET_EXHAUSTED)
		bfq_mark_bfqq_non_blocking_wait_rq(bfqq);
	else
		entity->service = 0;

	/* Parents' service restarts in any case. */
	entity = entity->parent;
	for_each_entity(entity) entity->service = 0;
}

/* Budget timeouts are checked on arrivals, completions and idle expiry. */
static bool bfq_bfqq_budget_timeout(struct bfq_queue *bfqq, uint64_t now)
{
	return !bfq_before(now, bfqq->budget_timeout);
}

/*
 * Not while the queue is waiting for a request (timestamp misalignment),
 * unless it is so slow that it should just be kicked off.
 */
static bool bfq_may_expire_for_budg_timeout(struct bfq_queue *bfqq,
					    uint64_t now)
{
	return (!bfq_bfqq_wait_request(bfqq) ||
		bfq_bfqq_budget_left(bfqq) >= bfqq->entity.budget / 3) &&
	       bfq_bfqq_budget_timeout(bfqq, now);
}

/*
 * Idling boosts throughput on rotational devices without queueing, and
 * for sequential I/O-bound queues unless the device is non-rotational
 * with internal queueing; not while queues are raised.
 */
static bool idling_boosts_thr_without_issues(struct bfq_data *bfqd,
					     struct bfq_queue *bfqq)
{
	bool nonrot = bfq_nonrot(bfqd);
	bool rot_without_queueing = !nonrot && !bfqd->hw_tag;
	bool bfqq_sequential_and_IO_bound, idling_boosts_thr;

	if (!bfqq_process_refs(bfqq))
		return false;
	bfqq_sequential_and_IO_bound = !BFQQ_SEEKY(bfqq) &&
				       bfq_bfqq_IO_bound(bfqq) &&
				       bfq_bfqq_has_short_ttime(bfqq);
	idling_boosts_thr =
		rot_without_queueing ||
		((!nonrot || !bfqd->hw_tag) && bfqq_sequential_and_IO_bound);
	return idling_boosts_thr && bfqd->wr_busy_queues == 0;
}

/*
 * Whether an empty sync queue is waited for: if idling boosts
 * throughput, or is needed for service guarantees; always with
 * strict_guarantees.
 */
static bool bfq_better_to_idle(struct bfq_queue *bfqq)
{
	struct bfq_data *bfqd = bfqq->bfqd;

	if (!bfqq_process_refs(bfqq))
		return false;
	if (bfqd->strict_guarantees)
		return true;
	if (bfqd->bfq_slice_idle == 0 || !bfq_bfqq_sync(bfqq) ||
	    bfq_class_idle(bfqq))
		return false;
	return idling_boosts_thr_without_issues(bfqd, bfqq) ||
	       idling_needed_for_service_guarantees(bfqd, bfqq);
}

static bool bfq_bfqq_must_idle(struct bfq_queue *bfqq)
{
	return bfq_avl_empty(&bfqq->sort_list) && bfq_better_to_idle(bfqq);
}

/* bfqq has a request that fits the budget it has left. */
static bool bfq_bfqq_can_serve_next(struct bfq_queue *bfqq)
{
	return bfq_bfqq_busy(bfqq) && bfqq->next_rq &&
	       bfq_serv_to_charge(bfqq->next_rq, bfqq) <=
		       bfq_bfqq_budget_left(bfqq);
}

/*
 * A queue to inject a request from while the device is plugged for the
 * in-service queue, or NULL: while fewer than its inject_limit requests
 * are in the device, the first queue on the active list (the last
 * activated first) with a request within its budget.  Only raised queues
 * if the in-service queue is raised and has a short think time (its
 * latency counts and it cannot absorb the delay).  On flash, at most one
 * large request in the device.
 */
static struct bfq_queue *bfq_choose_bfqq_for_injection(struct bfq_data *bfqd,
						       uint64_t now)
{
	struct bfq_queue *bfqq, *in_serv_bfqq = bfqd->in_service_queue;
	unsigned int limit = in_serv_bfqq->inject_limit;
	bool in_serv_always_inject = in_serv_bfqq->wr_coeff == 1 ||
				     !bfq_bfqq_has_short_ttime(in_serv_bfqq);

	/*
	 * No baseline yet, so a limit still 0, and the device idled for a
	 * whole slice already (possible for raised queues, whose slice is
	 * longer): allow one request.  Linux compares jiffies with the
	 * slice in ns here, which in effect never holds.
	 */
	if (limit == 0 && in_serv_bfqq->last_serv_time_ns == 0 &&
	    bfq_bfqq_wait_request(in_serv_bfqq) &&
	    !bfq_before(now, bfqd->last_idling_start + bfqd->bfq_slice_idle))
		limit = 1;
	if (bfqd->rq_in_driver >= (int)limit)
		return NULL;
	TAILQ_FOREACH (bfqq, &bfqd->active_list, active_node) {
		if (bfq_avl_empty(&bfqq->sort_list) ||
		    !(in_serv_always_inject || bfqq->wr_coeff > 1) ||
		    bfq_serv_to_charge(bfqq->next_rq, bfqq) >
			    bfq_bfqq_budget_left(bfqq))
			continue;
		/*
		 * Flash serves large requests much slower than small ones and
		 * prefers them: two in the device could hold the in-service
		 * queue's next request too long.
		 */
		if (bfq_nonrot(bfqd) &&
		    blk_rq_sectors(bfqq->next_rq) >= BFQQ_SECT_THR_NONROT &&
		    bfqd->rq_in_driver >= 1)
			continue;
		bfqd->rqs_injected = true;
		return bfqq;
	}
	return NULL;
}

/*
 * Select a queue for service: keep the one in service while it has
 * budget and requests, or is worth waiting for; else expire it and set a
 * new one in service.
 */
static struct bfq_queue *bfq_select_queue(struct bfq_data *bfqd, uint64_t now)
{
	struct bfq_queue *bfqq;
	struct request *next_rq;
	enum bfqq_expiration reason = BFQQE_BUDGET_TIMEOUT;

	bfqq = bfqd->in_service_queue;
	if (!bfqq)
		goto new_queue;
	/* Not for budget timeout if it may be about to idle. */
	if (bfq_may_expire_for_budg_timeout(bfqq, now) &&
	    !bfq_bfqq_must_idle(bfqq))
		goto expire;
check_queue:
	next_rq = bfqq->next_rq;
	if (next_rq) {
		if (bfq_serv_to_charge(next_rq, bfqq) >
		    bfq_bfqq_budget_left(bfqq)) {
			/* The next budget will fit the next request. */
			reason = BFQQE_BUDGET_EXHAUSTED;
			goto expire;
		}
		/* A request arrived while idling: stop idling. */
		if (bfq_bfqq_wait_request(bfqq))
			bfq_clear_bfqq_wait_request(bfqq);
		goto keep_queue;
	}
	/*
	 * Nothing queued, but waiting for a request, or requests in flight
	 * after which it may idle: keep it.  Meanwhile inject other I/O,
	 * the first that applies of:
	 * - the client's own async I/O, which cannot harm it;
	 * - its waker's I/O, which it is likely blocked on: serving it
	 *   brings its next request forward;
	 * - the I/O of the queue it wakes, which cannot take its bandwidth
	 *   (that queue soon runs dry unless this one is served);
	 * - unless idling is for throughput, or the queue is raised with a
	 *   short think time while no other queue is raised: any queue, up
	 *   to inject_limit requests in the device.  Ours: only on flash
	 *   and with one group with pending requests; with it on a disk, or
	 *   across groups, weight and group shares drifted far from their
	 *   targets (test_bfq, loaded machine).
	 */
	if (bfq_bfqq_wait_request(bfqq) ||
	    (bfqq->dispatched != 0 && bfq_better_to_idle(bfqq))) {
		struct bfq_queue *async_bfqq =
			bfqq->bic && bfqq->bic->bfqq[0] &&
					bfq_bfqq_busy(bfqq->bic->bfqq[0]) &&
					bfqq->bic->bfqq[0]->next_rq
				? bfqq->bic->bfqq[0]
				: NULL;
		struct bfq_queue *blocked_bfqq = TAILQ_FIRST(&bfqq->woken_list);

		if (async_bfqq &&
		    RQ_BRQ(async_bfqq->next_rq)->bic == bfqq->bic &&
		    bfq_serv_to_charge(async_bfqq->next_rq, async_bfqq) <=
			    bfq_bfqq_budget_left(async_bfqq))
			bfqq = async_bfqq;
		else if (bfqq->waker_bfqq &&
			 bfq_bfqq_can_serve_next(bfqq->waker_bfqq))
			bfqq = bfqq->waker_bfqq;
		else if (blocked_bfqq && bfq_bfqq_can_serve_next(blocked_bfqq))
			bfqq = blocked_bfqq;
		else if (bfq_nonrot(bfqd) &&
			 bfqd->num_groups_with_pending_reqs <= 1 &&
			 !idling_boosts_thr_without_issues(bfqd, bfqq) &&
			 (bfqq->wr_coeff == 1 || bfqd->wr_busy_queues > 1 ||
			  !bfq_bfqq_has_short_ttime(bfqq)))
			bfqq = bfq_choose_bfqq_for_injection(bfqd, now);
		else
			bfqq = NULL;
		goto keep_queue;
	}
	reason = BFQQE_NO_MORE_REQUESTS;
expire:
	bfq_bfqq_expire(bfqd, bfqq, false, reason, now);
new_queue:
	bfqq = bfq_set_in_service_queue(bfqd, now);
	if (bfqq)
		goto check_queue;
keep_queue:
	return bfqq;
}

static void bfq_update_wr_data(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			       uint64_t now)
{
	struct bfq_entity *entity = &bfqq->entity;

	if (bfqq->wr_coeff > 1) { /* queue is being weight-raised */
		/* In a burst, or raised for too long: end raising. */
		if (bfq_bfqq_in_large_burst(bfqq)) {
			bfq_bfqq_end_wr(bfqq, now);
		} else if (bfq_before(bfqq->last_wr_start_finish +
					      bfqq->wr_cur_max_time,
				      now)) {
			if (bfqq->wr_cur_max_time != bfqd->bfq_wr_rt_max_time ||
			    bfq_before(bfqq->wr_start_at_switch_to_srt +
					       bfq_wr_duration(bfqd),
				       now)) {
				bfq_bfqq_end_wr(bfqq, now);
			} else {
				switch_back_to_interactive_wr(bfqq, bfqd);
				bfqq->entity.prio_changed = true;
			}
		}
		if (bfqq->wr_coeff > 1 &&
		    bfqq->wr_cur_max_time != bfqd->bfq_wr_rt_max_time &&
		    bfqq->service_from_wr > max_service_from_wr)
			bfq_bfqq_end_wr(bfqq, now);
	}
	/* Apply a raise or a drop of the weight at once. */
	if ((entity->weight > entity->orig_weight) != (bfqq->wr_coeff > 1))
		__bfq_entity_update_weight_prio(bfq_entity_service_tree(entity),
						entity);
}

static struct request *bfq_dispatch_rq_from_bfqq(struct bfq_data *bfqd,
						 struct bfq_queue *bfqq,
						 uint64_t now)
{
	struct request *rq = bfqq->next_rq;
	int service_to_charge = bfq_serv_to_charge(rq, bfqq);

	bfq_bfqq_served(bfqq, service_to_charge, now);
	if (bfqq == bfqd->in_service_queue && bfqd->wait_dispatch) {
		bfqd->wait_dispatch = false;
		bfqd->waited_rq = rq;
	}
	bfqq->stat_sectors += blk_rq_sectors(rq);
	bfqq->stat_requests++;
	bfqq->bfqg->stat_sectors += blk_rq_sectors(rq);
	bfq_dispatch_remove(bfqd, rq, now);
	if (bfqq != bfqd->in_service_queue)
		return rq;
	/*
	 * End raising now if due, so that the queue is timestamped at
	 * expiration as if never raised in this slot.
	 */
	bfq_update_wr_data(bfqd, bfqq, now);
	/*
	 * An idle-class queue gets one request at a time: a higher class
	 * that arrives meanwhile is served next.
	 */
	if (bfq_class_idle(bfqq))
		bfq_bfqq_expire(bfqd, bfqq, false, BFQQE_BUDGET_EXHAUSTED, now);
	return rq;
}

bool bfq_has_work(struct mq_hw_ctx *hctx)
{
	struct bfq_data *bfqd = hctx->sched_data;

	/* Lock-free: a race costs at most a dispatch for nothing. */
	return bfqd && __atomic_load_n(&bfqd->queued, __ATOMIC_RELAXED) > 0;
}

static struct request *__bfq_dispatch_request(struct bfq_data *bfqd,
					      uint64_t now)
{
	struct request *rq = NULL;
	struct bfq_queue *bfqq;

	rq = TAILQ_FIRST(&bfqd->dispatch);
	if (rq) {
		TAILQ_REMOVE(&bfqd->dispatch, rq, queuelist);
		bfq_set_queued(bfqd, bfqd->queued - 1);
		bfqq = RQ_BFQQ(rq);
		if (!bfqq)
			return rq; /* not counted: no finish accounting */
		bfqq->dispatched++;
		goto inc_in_driver_start_rq;
	}
	/*
	 * bfqd->queued also counts the dispatch list: requests in queues
	 * exist only with busy queues.
	 */
	if (bfq_tot_busy_queues(bfqd) == 0)
		return NULL;
	/*
	 * strict_guarantees: one request at a time in the device, the only
	 * way to make a queueing device respect the service order.
	 */
	if (bfqd->strict_guarantees && bfqd->rq_in_driver > 0)
		return NULL;
	bfqq = bfq_select_queue(bfqd, now);
	if (!bfqq)
		return NULL;
	rq = bfq_dispatch_rq_from_bfqq(bfqd, bfqq, now);
inc_in_driver_start_rq:
	bfqd->rq_in_driver++;
	RQ_BRQ(rq)->in_driver = true;
	return rq;
}

/* The idle slice timer's work, done by dispatch once the deadline passed. */
static void bfq_idle_slice_timer_body(struct bfq_data *bfqd,
				      struct bfq_queue *bfqq, uint64_t now)
{
	enum bfqq_expiration reason;

	bfq_clear_bfqq_wait_request(bfqq);
	if (bfq_bfqq_budget_timeout(bfqq, now))
		reason = BFQQE_BUDGET_TIMEOUT;
	else if (bfqq->queued[0] == 0 && bfqq->queued[1] == 0)
		reason = BFQQE_TOO_IDLE;
	else
		return; /* a request arrived, dispatch serves it */
	bfq_bfqq_expire(bfqd, bfqq, true, reason, now);
}

struct request *bfq_dispatch_request(struct mq_hw_ctx *hctx)
{
	struct bfq_data *bfqd = hctx->sched_data;
	struct bfq_queue *bfqq;
	struct request *rq;
	uint64_t now;

	if (!bfqd)
		return NULL;
	pthread_mutex_lock(&bfqd->lock);
	now = bfq_now(bfqd);
	bfqq = bfqd->in_service_queue;
	/* Idle slice over, or no request can come while frozen. */
	if (bfqq && bfq_bfqq_wait_request(bfqq) &&
	    (!bfq_before(now, bfqd->idle_deadline) || !bfqq_process_refs(bfqq)))
		bfq_idle_slice_timer_body(bfqd, bfqq, now);
	rq = __bfq_dispatch_request(bfqd, now);
	if (rq) {
		bfqd->stalled = false;
	} else if (bfqd->queued) {
		/* A completion or the idle timer must run us again. */
		bfqd->stalled = true;
		bfqq = bfqd->in_service_queue;
		if (bfqq && bfq_bfqq_wait_request(bfqq)) {
			uint64_t left = bfqd->idle_deadline - now;

			mq_delay_run_hw_queue(hctx, (left + NSEC_PER_MSEC - 1) /
							    NSEC_PER_MSEC);
		}
	}
	pthread_mutex_unlock(&bfqd->lock);
	return rq;
}

/* ------------------------------------------------------------------ */
/* queues                                                              */

/*
 * References: the owning client(s), each request pointing to the queue,
 * the service tree, and the weight counter.  Lock held.
 */
void bfq_put_queue(struct bfq_queue *bfqq)
{
	struct bfq_data *bfqd = bfqq->bfqd;
	struct bfq_queue *item;

	if (--bfqq->ref)
		return;
	if (bfqq->in_burst_list) {
		bfq_burst_list_del(bfqd, bfqq);
		/* The process left: it no longer belongs to the burst. */
		if (bfqq->bic && bfqd->burst_size > 0)
			bfqd->burst_size--;
	}
	if (bfqq->on_async_list)
		TAILQ_REMOVE(&bfqq->bfqg->async_queues, bfqq, async_list);
	/* Waker pointers are weak: cut them both ways. */
	if (bfqq->on_woken_list)
		TAILQ_REMOVE(&bfqq->waker_bfqq->woken_list, bfqq,
			     woken_list_node);
	while ((item = TAILQ_FIRST(&bfqq->woken_list))) {
		TAILQ_REMOVE(&bfqq->woken_list, item, woken_list_node);
		item->on_woken_list = false;
		item->waker_bfqq = NULL;
	}
	TAILQ_FOREACH (item, &bfqd->queues, all_list)
		if (item->tentative_waker_bfqq == bfqq)
			item->tentative_waker_bfqq = NULL;
	if (bfqd->last_completed_rq_bfqq == bfqq)
		bfqd->last_completed_rq_bfqq = NULL;
	if (bfqq->bfqg->last_bfqq_created == bfqq)
		bfqq->bfqg->last_bfqq_created = NULL;
	bfq_pos_tree_del(bfqq);
	TAILQ_REMOVE(&bfqd->queues, bfqq, all_list);
	bfqg_put(bfqq->bfqg);
	free(bfqq);
}

void bfq_release_process_ref(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	bfqq->process_refs--;
	/* Kept busy though empty for its guarantees: no longer needed. */
	if (bfq_bfqq_busy(bfqq) && bfq_avl_empty(&bfqq->sort_list) &&
	    bfqq != bfqd->in_service_queue)
		bfq_del_bfqq_busy(bfqd, bfqq, false);
	bfq_put_queue(bfqq);
}

/* The client of bfqq goes away. */
void bfq_exit_bfqq(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	if (bfq_bfqq_sync(bfqq))
		bfqq->bic = NULL;
	if (bfqq == bfqd->in_service_queue) {
		/* Called on insertion, which runs the queue after. */
		__bfq_bfqq_expire(bfqd, bfqq, BFQQE_BUDGET_TIMEOUT,
				  bfq_now(bfqd));
	}
	bfq_put_cooperator(bfqq);
	bfq_release_process_ref(bfqd, bfqq);
}

static void bfq_init_bfqq(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			  struct bfq_io_cq *bic, bool is_sync, uint64_t now)
{
	bfqq->bfqd = bfqd;
	TAILQ_INIT(&bfqq->fifo);
	TAILQ_INIT(&bfqq->woken_list);
	/* inject_limit 0 and no baseline, reset a second from now */
	bfqq->decrease_time = now;
	if (is_sync) {
		/* tentatively: short think time */
		bfq_mark_bfqq_has_short_ttime(bfqq);
		bfq_mark_bfqq_sync(bfqq);
		bfq_mark_bfqq_just_created(bfqq);
		bfqq->bic = bic;
		bfqq->client = bic->id;
	}
	/* Think time "minus infinity from now". */
	bfqq->ttime.last_end_request = now + 1;
	bfqq->io_start_time = now;
	bfqq->tot_idle_time = 0;
	bfq_mark_bfqq_IO_bound(bfqq);
	/* Tentative initial value to trade off between thr and lat */
	bfqq->max_budget = (2 * bfq_max_budget(bfqd)) / 3;
	bfqq->budget_timeout = 0; /* far in the past */
	bfqq->wr_coeff = 1;
	bfqq->last_wr_start_finish = now;
	bfqq->wr_start_at_switch_to_srt = 0;
	/* No bandwidth consumed so far. */
	bfqq->soft_rt_next_start = now;
	/* first request is almost certainly seeky */
	bfqq->seek_history = 1;
	bfqq->creation_time = now;
}

/*
 * The queue of a client: its own sync queue, or the async queue of its
 * group for its weight.  Returns it with a process reference.
 */
struct bfq_queue *bfq_get_queue(struct bfq_data *bfqd, struct bfq_io_cq *bic,
				bool is_sync, unsigned short ioprio_class,
				uint64_t now)
{
	struct bfq_group *bfqg = bic->bfqg;
	struct bfq_queue *bfqq;

	if (!is_sync) {
		TAILQ_FOREACH (bfqq, &bfqg->async_queues, async_list) {
			if (bfqq->entity.new_weight == bic->weight &&
			    bfqq->new_ioprio_class == ioprio_class) {
				bfqq->ref++;
				bfqq->process_refs++;
				return bfqq;
			}
		}
	}
	bfqq = calloc(1, sizeof(*bfqq));
	if (!bfqq)
		return NULL;
	bfq_init_bfqq(bfqd, bfqq, bic, is_sync, now);
	bfqq->ioprio_class = bfqq->new_ioprio_class = ioprio_class;
	bfqq->entity.new_weight = bic->weight;
	bfqq->entity.prio_changed = true;
	bfq_init_entity(&bfqq->entity, bfqg);
	if (!is_sync) {
		TAILQ_INSERT_TAIL(&bfqg->async_queues, bfqq, async_list);
		bfqq->on_async_list = true;
	}
	TAILQ_INSERT_TAIL(&bfqd->queues, bfqq, all_list);
	bfqq->ref++; /* the process reference */
	bfqq->process_refs++;
	return bfqq;
}

static void bfq_update_io_thinktime(struct bfq_data *bfqd,
				    struct bfq_queue *bfqq, uint64_t now)
{
	struct bfq_ttime *ttime = &bfqq->ttime;
	uint64_t elapsed = 2 * bfqd->bfq_slice_idle;

	/*
	 * Think time is how long the client takes to issue I/O when it has
	 * none outstanding: not sampled while it has some.
	 */
	if (bfqq->dispatched || bfq_bfqq_busy(bfqq))
		return;
	if (!bfq_before(now, ttime->last_end_request))
		elapsed = bfq_u64_min(now - ttime->last_end_request, elapsed);
	ttime->ttime_samples = (7 * ttime->ttime_samples + 256) / 8;
	ttime->ttime_total = (7 * ttime->ttime_total + 256 * elapsed) / 8;
	ttime->ttime_mean = (ttime->ttime_total + 128) / ttime->ttime_samples;
}

static void bfq_update_io_seektime(struct bfq_data *bfqd,
				   struct bfq_queue *bfqq, struct request *rq,
				   uint64_t now)
{
	bfqq->seek_history <<= 1;
	bfqq->seek_history |= bfq_rq_seeky(bfqd, bfqq->last_request_pos, rq);
	if (bfqq->wr_coeff > 1 &&
	    bfqq->wr_cur_max_time == bfqd->bfq_wr_rt_max_time &&
	    BFQQ_TOTALLY_SEEKY(bfqq))
		bfq_bfqq_end_wr(bfqq, now);
}

static void bfq_update_has_short_ttime(struct bfq_data *bfqd,
				       struct bfq_queue *bfqq, uint64_t now)
{
	bool has_short_ttime = true, state_changed;

	/* No idling for async or idle-class queues, or without slice_idle. */
	if (!bfq_bfqq_sync(bfqq) || bfq_class_idle(bfqq) ||
	    bfqd->bfq_slice_idle == 0)
		return;
	/*
	 * Infinite without a client; else the mean think time decides,
	 * against half the idle slice: a whole slice is long enough to
	 * idle for a think time that idling cannot pay back.
	 */
	if (!bfqq_process_refs(bfqq) ||
	    (bfq_sample_valid(bfqq->ttime.ttime_samples) &&
	     bfqq->ttime.ttime_mean > bfqd->bfq_slice_idle >> 1))
		has_short_ttime = false;
	state_changed = has_short_ttime != bfq_bfqq_has_short_ttime(bfqq);
	if (has_short_ttime)
		bfq_mark_bfqq_has_short_ttime(bfqq);
	else
		bfq_clear_bfqq_has_short_ttime(bfqq);
	/*
	 * Without a baseline, inject_limit follows the think time (0 short,
	 * 1 long): reset it when that changed, at once for a change to
	 * long, else only 100 ms after its last update (a queue waiting for
	 * a waker's I/O looks short once injection serves the waker; a
	 * limit of 0 would then stop the injection that made it short).
	 */
	if (state_changed && bfqq->last_serv_time_ns == 0 &&
	    (!bfq_before(now, bfqq->decrease_time + 100 * NSEC_PER_MSEC) ||
	     !has_short_ttime))
		bfq_reset_inject_limit(bfqd, bfqq, now);
}

static void bfq_rq_enqueued(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			    struct request *rq, uint64_t now)
{
	bfqq->last_request_pos = blk_rq_pos(rq) + blk_rq_sectors(rq);
	if (bfqq == bfqd->in_service_queue && bfq_bfqq_wait_request(bfqq)) {
		bool small_req = bfqq->queued[bfq_rq_is_sync(rq)] == 1 &&
				 blk_rq_sectors(rq) < 32;
		bool budget_timeout = bfq_bfqq_budget_timeout(bfqq, now);

		/*
		 * A single small request while idling for throughput: keep
		 * waiting for it to grow by merges (the next dispatch run
		 * stops idling anyway).
		 */
		if (small_req && idling_boosts_thr_without_issues(bfqd, bfqq) &&
		    !budget_timeout)
			return;
		bfq_clear_bfqq_wait_request(bfqq);
		/* Not empty any more: safe to expire on budget timeout. */
		if (budget_timeout)
			bfq_bfqq_expire(bfqd, bfqq, false, BFQQE_BUDGET_TIMEOUT,
					now);
	}
}

static void __bfq_insert_request(struct bfq_data *bfqd, struct request *rq,
				 uint64_t now)
{
	/* It may go to a cooperating queue instead (bfq-merge.c). */
	struct bfq_queue *bfqq = bfq_merge_on_insert(bfqd, rq, now);

	bfq_update_io_thinktime(bfqd, bfqq, now);
	bfq_update_has_short_ttime(bfqd, bfqq, now);
	bfq_update_io_seektime(bfqd, bfqq, rq, now);
	bfq_add_request(bfqd, rq, now);
	rq->fifo_time = now + bfqd->bfq_fifo_expire[bfq_rq_is_sync(rq)];
	TAILQ_INSERT_TAIL(&bfqq->fifo, rq, queuelist);
	if (rq_mergeable(rq)) {
		elv_rqhash_add(bfqd->hctx, rq);
		if (!bfqd->hctx->merge.last_merge)
			bfqd->hctx->merge.last_merge = rq;
	}
	bfq_rq_enqueued(bfqd, bfqq, rq, now);
}

/* Count a request allocated to bfqq, or freed, in it and its groups. */
void bfqq_request_allocated(struct bfq_queue *bfqq, int n)
{
	struct bfq_entity *entity = &bfqq->entity;

	bfqq->bfqd->allocated += n;
	for_each_entity(entity) entity->allocated += n;
}

/*
 * Bind rq to its client's queue.  NULL for requests the elevator did not
 * prepare (driver-allocated ones), or without memory: those go to the
 * dispatch list.
 */
static struct bfq_queue *bfq_init_rq(struct bfq_data *bfqd, struct request *rq,
				     uint64_t now)
{
	struct bfq_io_cq *bic;
	struct bfq_queue *bfqq;
	unsigned short ioprio_class;
	struct bfq_rq *brq;
	bool is_sync, split = false, existing = false;

	if (!(rq->rq_flags & RQF_ELVPRIV))
		return NULL;
	if (RQ_BFQQ(rq))
		return RQ_BFQQ(rq);
	if (rq->internal_tag < 0 ||
	    (unsigned int)rq->internal_tag >= bfqd->nr_rqs)
		return NULL;
	bic = bfq_bic_get(bfqd, rq->submitter, rq->client, now);
	if (!bic)
		return NULL;
	if (bic->gen != bfqd->conf_gen)
		bfq_bic_update_conf(bfqd, bic, rq->client, now);
	is_sync = bfq_rq_is_sync(rq);
	ioprio_class = IOPRIO_PRIO_CLASS(rq->ioprio);
	if (ioprio_class == IOPRIO_CLASS_NONE ||
	    ioprio_class > IOPRIO_CLASS_IDLE)
		ioprio_class = IOPRIO_CLASS_BE;
	bfqq = bic->bfqq[is_sync];
	if (bfqq && bfqq->new_ioprio_class != ioprio_class) {
		if (is_sync) {
			/* Moves to its class's tree at its next activation. */
			bfqq->new_ioprio_class = ioprio_class;
			bfqq->entity.prio_changed = true;
		} else {
			/* Async queues are shared by class: take another. */
			bfq_release_process_ref(bfqd, bfqq);
			bic->bfqq[0] = bfqq = NULL;
		}
	}
	if (!bfqq) {
		bfqq = bfq_get_queue(bfqd, bic, is_sync, ioprio_class, now);
		if (!bfqq)
			return NULL;
		bic->bfqq[is_sync] = bfqq;
		if (is_sync)
			bfqq = bfq_do_or_sched_stable_merge(bfqd, bfqq, bic,
							    blk_rq_pos(rq));
	} else if (is_sync) {
		bfqq = bfq_split_if_needed(bfqd, bic, bfqq, ioprio_class, now,
					   &split, &existing);
		if (!bfqq)
			return NULL;
	}
	brq = &bfqd->rqs[rq->internal_tag];
	*brq = (struct bfq_rq){.rq = rq, .bic = bic};
	bfqq_request_allocated(bfqq, 1);
	bfqq->ref++;
	bic->nr_rqs++;
	rq->elv_priv[0] = brq;
	rq->elv_priv[1] = bfqq;
	if (is_sync)
		bfq_merge_rq_bound(bfqd, bic, bfqq, split, existing, now);
	/*
	 * A new queue may belong to a burst if one is going on or no other
	 * queue is active.
	 */
	if (bfq_bfqq_just_created(bfqq) &&
	    (bfqd->burst_size > 0 || bfq_tot_busy_queues(bfqd) == 0))
		bfq_handle_burst(bfqd, bfqq, now);
	return bfqq;
}

/* Drop what rq holds on its queue and client. */
static void bfq_rq_detach(struct request *rq)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq);
	struct bfq_rq *brq = RQ_BRQ(rq);

	brq->bic->nr_rqs--;
	brq->in_driver = false;
	rq->elv_priv[1] = NULL;
	bfqq_request_allocated(bfqq, -1);
	bfq_put_queue(bfqq);
}

static bool bfq_rq_passthrough(const struct request *rq)
{
	return rq->op == REQ_OP_DRV_IN || rq->op == REQ_OP_DRV_OUT;
}

void bfq_insert_requests(struct mq_hw_ctx *hctx, struct rq_list *list,
			 bool at_head)
{
	struct bfq_data *bfqd = hctx->sched_data;
	struct rq_list free = TAILQ_HEAD_INITIALIZER(free);
	struct bfq_queue *bfqq;
	struct request *rq;
	uint64_t now;

	pthread_mutex_lock(&bfqd->lock);
	now = bfq_now(bfqd);
	while ((rq = TAILQ_FIRST(list))) {
		TAILQ_REMOVE(list, rq, queuelist);
		bfqq = bfq_init_rq(bfqd, rq, now);
		/* It may join the back of a queued request instead. */
		if (bfqq && !at_head && !bfq_rq_passthrough(rq) &&
		    mq_sched_try_insert_merge(hctx, rq, &free))
			continue;
		if (!bfqq || at_head || bfq_rq_passthrough(rq)) {
			if (at_head)
				TAILQ_INSERT_HEAD(&bfqd->dispatch, rq,
						  queuelist);
			else
				TAILQ_INSERT_TAIL(&bfqd->dispatch, rq,
						  queuelist);
			bfq_set_queued(bfqd, bfqd->queued + 1);
		} else {
			__bfq_insert_request(bfqd, rq, now);
		}
	}
	pthread_mutex_unlock(&bfqd->lock);
	/* Merged away: finish_request takes bfqd->lock. */
	while ((rq = TAILQ_FIRST(&free))) {
		TAILQ_REMOVE(&free, rq, queuelist);
		mq_free_request(rq);
	}
}

static void bfq_update_hw_tag(struct bfq_data *bfqd)
{
	struct bfq_queue *bfqq = bfqd->in_service_queue;

	if (bfqd->rq_in_driver > bfqd->max_rq_in_driver)
		bfqd->max_rq_in_driver = bfqd->rq_in_driver;
	if (bfqd->hw_tag == 1)
		return;
	/* Valid samples need enough outstanding requests to queue. */
	if (bfqd->rq_in_driver + (int)bfqd->queued <= BFQ_HW_QUEUE_THRESHOLD)
		return;
	/* An in-service queue that may idle may not fill the device. */
	if (bfqq && bfq_bfqq_has_short_ttime(bfqq) &&
	    bfqq->dispatched + bfqq->queued[0] + bfqq->queued[1] <
		    BFQ_HW_QUEUE_THRESHOLD &&
	    bfqd->rq_in_driver < BFQ_HW_QUEUE_THRESHOLD)
		return;
	if (bfqd->hw_tag_samples++ < BFQ_HW_QUEUE_SAMPLES)
		return;
	bfqd->hw_tag = bfqd->max_rq_in_driver > BFQ_HW_QUEUE_THRESHOLD;
	bfqd->max_rq_in_driver = 0;
	bfqd->hw_tag_samples = 0;
}

static void bfq_completed_request(struct bfq_queue *bfqq, struct bfq_data *bfqd,
				  uint64_t now)
{
	uint64_t delta_us;

	bfq_update_hw_tag(bfqd);
	bfqd->rq_in_driver--;
	bfqq->dispatched--;
	if (!bfqq->dispatched && !bfq_bfqq_busy(bfqq)) {
		/* When it became empty with nothing in flight (wr). */
		bfqq->budget_timeout = now;
		bfq_weights_tree_remove(bfqq);
	}
	bfqq->ttime.last_end_request = now;

	/*
	 * A very slow completion (under 1M sectors/s for the largest recent
	 * request) closes the observation interval of the peak rate.
	 */
	delta_us = (now - bfqd->last_completion) / NSEC_PER_USEC;
	if (delta_us > BFQ_MIN_TT / NSEC_PER_USEC &&
	    ((uint64_t)bfqd->last_rq_max_size << BFQ_RATE_SHIFT) / delta_us <
		    1ull << (BFQ_RATE_SHIFT - 10))
		bfq_update_rate_reset(bfqd, NULL, now);
	bfqd->last_completion = now;
	/*
	 * For waker detection; shared queues get I/O at a high rate and
	 * would pass for wakers of other queues: left out, as in Linux.
	 */
	bfqd->last_completed_rq_bfqq = bfq_bfqq_coop(bfqq) ? NULL : bfqq;

	/* Isochrony confirmed: compute soft_rt_next_start now. */
	if (bfq_bfqq_softrt_update(bfqq) && bfqq->dispatched == 0 &&
	    bfq_avl_empty(&bfqq->sort_list) &&
	    bfqq->wr_coeff != bfqd->bfq_wr_coeff)
		bfqq->soft_rt_next_start =
			bfq_bfqq_softrt_next_start(bfqd, bfqq, now);

	/* The in-service queue: expire it, or idle if it is empty. */
	if (bfqd->in_service_queue == bfqq) {
		if (bfq_bfqq_must_idle(bfqq)) {
			if (bfqq->dispatched == 0)
				bfq_arm_slice_timer(bfqd, now);
			/*
			 * Not expired even on budget timeout: it must get
			 * its idling when the last request completes.
			 */
			return;
		} else if (bfq_may_expire_for_budg_timeout(bfqq, now)) {
			bfq_bfqq_expire(bfqd, bfqq, false, BFQQE_BUDGET_TIMEOUT,
					now);
		} else if (bfq_avl_empty(&bfqq->sort_list) &&
			   (bfqq->dispatched == 0 ||
			    !bfq_better_to_idle(bfqq))) {
			bfq_bfqq_expire(bfqd, bfqq, false,
					BFQQE_NO_MORE_REQUESTS, now);
		}
	}
	/* Linux: if (!rq_in_driver) bfq_schedule_dispatch(), see above. */
}

/*
 * Completion: the accounting Linux does in bfq_finish_requeue_request for
 * a started request.  If dispatch was refused meanwhile and this
 * completion can change that, run the queue again.
 */
void bfq_completed_request_hook(struct request *rq, uint64_t now_ns)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq);
	struct bfq_rq *brq = RQ_BRQ(rq);
	struct bfq_data *bfqd;
	struct bfq_queue *old_in_service, *in_serv;
	bool kick = false;
	uint64_t now;

	if (!bfqq || !brq || !brq->in_driver)
		return;
	bfqd = bfqq->bfqd;
	pthread_mutex_lock(&bfqd->lock);
	old_in_service = bfqd->in_service_queue;
	now = bfq_time(bfqd, now_ns);
	if (rq == bfqd->waited_rq)
		bfq_update_inject_limit(bfqd, bfqq, now);
	bfq_completed_request(bfqq, bfqd, now);
	/*
	 * Run again if dispatch refused work and this may change it: the
	 * device emptied, the in-service queue moved, or an injected
	 * request made room for another.
	 */
	in_serv = bfqd->in_service_queue;
	if (bfqd->stalled &&
	    (bfqd->rq_in_driver == 0 || bfqq == old_in_service ||
	     in_serv != old_in_service ||
	     (in_serv && bfqd->rq_in_driver < (int)in_serv->inject_limit))) {
		bfqd->stalled = false;
		kick = true;
	}
	bfq_rq_detach(rq);
	pthread_mutex_unlock(&bfqd->lock);
	if (kick)
		mq_run_hw_queue(bfqd->hctx, true);
}

/* Requeue: drop everything, as for a completion; reinsertion rebinds. */
void bfq_requeue_request(struct request *rq)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq);
	struct bfq_rq *brq = RQ_BRQ(rq);
	struct bfq_data *bfqd;
	bool kick = false;

	if (!bfqq || !brq)
		return;
	bfqd = bfqq->bfqd;
	pthread_mutex_lock(&bfqd->lock);
	if (brq->in_driver) {
		if (rq == bfqd->waited_rq)
			bfq_update_inject_limit(bfqd, bfqq, bfq_now(bfqd));
		bfq_completed_request(bfqq, bfqd, bfq_now(bfqd));
		kick = bfqd->stalled;
		bfqd->stalled = false;
	} else if (brq->queued) {
		bfq_remove_request(bfqd, rq, bfq_now(bfqd));
	}
	bfq_rq_detach(rq);
	pthread_mutex_unlock(&bfqd->lock);
	if (kick)
		mq_run_hw_queue(bfqd->hctx, true);
}

/* Freed: normally already detached at completion. */
void bfq_finish_request(struct request *rq)
{
	if (RQ_BFQQ(rq))
		bfq_requeue_request(rq);
}

void bfq_prepare_request(struct request *rq)
{
	rq->elv_priv[0] = rq->elv_priv[1] = NULL;
}
