// SPDX-License-Identifier: GPL-2.0
/*
 * Hierarchical Budget Worst-case Fair Weighted Fair Queueing (B-WF2Q+),
 * after block/bfq-wf2q.c: the engine that schedules entities (bfq_queues
 * and groups) by virtual start and finish times.
 *
 * Every sched_data (the root group's and each group's) has a service tree:
 * active entities in a tree ordered by virtual finish time and augmented
 * with the minimum virtual start time of each subtree, so the eligible
 * entity (start <= vtime) with the smallest finish is found in O(log n);
 * and idle entities, kept until the virtual time passes their finish so
 * that a quickly returning entity does not get a head start.  An entity's
 * finish is start + budget / weight in the WFQ_SERVICE_SHIFT fixed point.
 */
#include "bfq-iosched.h"

/* See bfq_delta(). */
#define WFQ_SERVICE_SHIFT 22

/* a > b, with wrap-around */
static inline bool bfq_gt(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) > 0;
}

struct bfq_queue *bfq_entity_to_bfqq(struct bfq_entity *entity)
{
	if (entity->my_sched_data)
		return NULL;
	return bfq_avl_entry(entity, struct bfq_queue, entity);
}

static struct bfq_group *bfq_entity_to_bfqg(struct bfq_entity *entity)
{
	return bfq_avl_entry(entity, struct bfq_group, entity);
}

static struct bfq_data *bfq_entity_bfqd(struct bfq_entity *entity)
{
	struct bfq_queue *bfqq = bfq_entity_to_bfqq(entity);

	return bfqq ? bfqq->bfqd : bfq_entity_to_bfqg(entity)->bfqd;
}

/* The group whose sched_data sd is. */
static struct bfq_group *bfq_sd_group(struct bfq_sched_data *sd)
{
	return bfq_avl_entry(sd, struct bfq_group, sched_data);
}

static struct bfq_entity *bfq_entity_of(struct bfq_avl_node *node)
{
	return node ? bfq_avl_entry(node, struct bfq_entity, rb_node) : NULL;
}

static int bfq_entity_cmp(const struct bfq_avl_node *a,
			  const struct bfq_avl_node *b)
{
	const struct bfq_entity *ea =
		bfq_avl_entry(a, struct bfq_entity, rb_node);
	const struct bfq_entity *eb =
		bfq_avl_entry(b, struct bfq_entity, rb_node);

	if (ea->tree_finish != eb->tree_finish)
		return bfq_gt(ea->tree_finish, eb->tree_finish) ? 1 : -1;
	if (ea->seq != eb->seq)
		return ea->seq > eb->seq ? 1 : -1;
	return 0;
}

/* bfq_update_active_node(): min_start over the subtree. */
static void bfq_update_min_start(struct bfq_avl_node *node)
{
	struct bfq_entity *entity = bfq_entity_of(node), *child;

	entity->min_start = entity->start;
	if (node->left) {
		child = bfq_entity_of(node->left);
		if (bfq_gt(entity->min_start, child->min_start))
			entity->min_start = child->min_start;
	}
	if (node->right) {
		child = bfq_entity_of(node->right);
		if (bfq_gt(entity->min_start, child->min_start))
			entity->min_start = child->min_start;
	}
}

static const struct bfq_avl_ops bfq_active_ops = {
	.cmp = bfq_entity_cmp,
	.update = bfq_update_min_start,
};

static const struct bfq_avl_ops bfq_idle_ops = {
	.cmp = bfq_entity_cmp,
};

void bfq_service_tree_init(struct bfq_service_tree *st)
{
	*st = (struct bfq_service_tree){0};
}

/* Groups are best effort; a queue is in the tree of its class. */
static unsigned int bfq_class_idx(struct bfq_entity *entity)
{
	struct bfq_queue *bfqq = bfq_entity_to_bfqq(entity);

	return bfqq ? bfqq->ioprio_class - 1 : IOPRIO_CLASS_BE - 1;
}

struct bfq_service_tree *bfq_entity_service_tree(struct bfq_entity *entity)
{
	return &entity->sched_data->service_tree[bfq_class_idx(entity)];
}

static struct bfq_entity *bfq_lookup_next_entity(struct bfq_sched_data *sd,
						 bool expiration);

/*
 * Returns true if this budget change may let next_in_service->parent
 * become the next_in_service entity for its parent entity.
 */
static bool bfq_update_parent_budget(struct bfq_entity *next_in_service)
{
	struct bfq_group *bfqg = bfq_sd_group(next_in_service->sched_data);
	struct bfq_entity *bfqg_entity = bfqg->my_entity;
	bool ret = false;

	/* The root group never becomes an in-service entity. */
	if (bfqg_entity) {
		if (bfqg_entity->budget > next_in_service->budget)
			ret = true;
		bfqg_entity->budget = next_in_service->budget;
	}
	return ret;
}

/*
 * Update sd->next_in_service after new_entity (if any) was activated,
 * requeued or repositioned.  A full lookup is avoided when new_entity is
 * not next_in_service: it is enough to check whether it is eligible and
 * finishes before the current candidate.  Returns true if the change may
 * make entity->parent the next to serve for its own parent.
 */
static bool bfq_update_next_in_service(struct bfq_sched_data *sd,
				       struct bfq_entity *new_entity,
				       bool expiration)
{
	struct bfq_entity *next_in_service = sd->next_in_service;
	bool parent_sched_may_change = false;
	bool change_without_lookup = false;

	if (new_entity && new_entity != sd->next_in_service) {
		change_without_lookup = true;
		if (next_in_service) {
			unsigned int idx = bfq_class_idx(new_entity);
			struct bfq_service_tree *st = &sd->service_tree[idx];

			/* Within one class only: classes go by priority. */
			change_without_lookup =
				idx == bfq_class_idx(next_in_service) &&
				!bfq_gt(new_entity->start, st->vtime) &&
				bfq_gt(next_in_service->finish,
				       new_entity->finish);
		}
		if (change_without_lookup)
			next_in_service = new_entity;
	}
	if (!change_without_lookup)
		next_in_service = bfq_lookup_next_entity(sd, expiration);
	if (next_in_service)
		parent_sched_may_change =
			!sd->next_in_service ||
			bfq_update_parent_budget(next_in_service);
	sd->next_in_service = next_in_service;
	return parent_sched_may_change;
}

/*
 * Whether entity stops being a candidate for next service when it is set
 * in service: always for a queue; for a group only if it has no other
 * active child.
 */
static bool bfq_no_longer_next_in_service(struct bfq_entity *entity)
{
	if (bfq_entity_to_bfqq(entity))
		return true;
	return bfq_entity_to_bfqg(entity)->active_entities == 1;
}

/* Map service into the virtual time domain. */
static uint64_t bfq_delta(unsigned long service, unsigned long weight)
{
	return ((uint64_t)service << WFQ_SERVICE_SHIFT) / weight;
}

static void bfq_calc_finish(struct bfq_entity *entity, unsigned long service)
{
	entity->finish = entity->start + bfq_delta(service, entity->weight);
}

static void bfq_insert(struct bfq_avl_root *root, struct bfq_entity *entity,
		       const struct bfq_avl_ops *ops)
{
	/*
	 * The finish of an in-service group left on its tree is recomputed
	 * before it is extracted: the tree keeps the key it was sorted by.
	 */
	entity->seq = ++bfq_entity_bfqd(entity)->entity_seq;
	entity->tree_finish = entity->finish;
	bfq_avl_insert(root, &entity->rb_node, ops);
	entity->tree = root;
}

static void bfq_idle_extract(struct bfq_service_tree *st,
			     struct bfq_entity *entity)
{
	if (entity == st->first_idle)
		st->first_idle = bfq_entity_of(bfq_avl_next(
			&st->idle, &entity->rb_node, &bfq_idle_ops));
	if (entity == st->last_idle)
		st->last_idle = bfq_entity_of(bfq_avl_prev(
			&st->idle, &entity->rb_node, &bfq_idle_ops));
	bfq_avl_erase(&st->idle, &entity->rb_node, &bfq_idle_ops);
	entity->tree = NULL;
}

/* The parent group counts its active children. */
static void bfq_count_active(struct bfq_entity *entity, int delta)
{
	struct bfq_group *bfqg = bfq_sd_group(entity->sched_data);

	if (bfqg->my_entity)
		bfqg->active_entities += delta;
}

/*
 * Queues on an active tree are also on bfqd->active_list, the last
 * inserted first, where injection looks for candidates.
 */
static void bfq_active_insert(struct bfq_service_tree *st,
			      struct bfq_entity *entity)
{
	struct bfq_queue *bfqq = bfq_entity_to_bfqq(entity);

	bfq_insert(&st->active, entity, &bfq_active_ops);
	bfq_count_active(entity, 1);
	if (bfqq && !bfqq->on_active_list) {
		TAILQ_INSERT_HEAD(&bfqq->bfqd->active_list, bfqq, active_node);
		bfqq->on_active_list = true;
	}
}

static void bfq_active_extract(struct bfq_service_tree *st,
			       struct bfq_entity *entity)
{
	struct bfq_queue *bfqq = bfq_entity_to_bfqq(entity);

	bfq_avl_erase(&st->active, &entity->rb_node, &bfq_active_ops);
	entity->tree = NULL;
	bfq_count_active(entity, -1);
	if (bfqq && bfqq->on_active_list) {
		TAILQ_REMOVE(&bfqq->bfqd->active_list, bfqq, active_node);
		bfqq->on_active_list = false;
	}
}

static void bfq_idle_insert(struct bfq_service_tree *st,
			    struct bfq_entity *entity)
{
	struct bfq_entity *first_idle = st->first_idle;
	struct bfq_entity *last_idle = st->last_idle;

	if (!first_idle || bfq_gt(first_idle->finish, entity->finish))
		st->first_idle = entity;
	if (!last_idle || bfq_gt(entity->finish, last_idle->finish))
		st->last_idle = entity;
	bfq_insert(&st->idle, entity, &bfq_idle_ops);
}

/*
 * Taking an entity onto a service tree pins it: a queue is referenced,
 * a group too (Linux pins groups through their blkg).
 */
static void bfq_get_entity(struct bfq_entity *entity)
{
	struct bfq_queue *bfqq = bfq_entity_to_bfqq(entity);

	if (bfqq)
		bfqq->ref++;
	else
		bfqg_get(bfq_entity_to_bfqg(entity));
}

/*
 * Forget everything about entity.  An in-service queue keeps its
 * reference until __bfq_bfqd_reset_in_service().
 */
static void bfq_forget_entity(struct bfq_service_tree *st,
			      struct bfq_entity *entity, bool is_in_service)
{
	struct bfq_queue *bfqq = bfq_entity_to_bfqq(entity);

	entity->on_st = false;
	st->wsum -= entity->weight;
	if (bfqq) {
		if (!is_in_service)
			bfq_put_queue(bfqq);
	} else {
		bfqg_put(bfq_entity_to_bfqg(entity));
	}
}

void bfq_put_idle_entity(struct bfq_service_tree *st, struct bfq_entity *entity)
{
	bfq_idle_extract(st, entity);
	bfq_forget_entity(st, entity,
			  entity == entity->sched_data->in_service_entity);
}

/*
 * Drop at most one idle entity whose finish the virtual time passed,
 * keeping the O(log n) bound; the idle tree cannot grow without bound.
 */
static void bfq_forget_idle(struct bfq_service_tree *st)
{
	struct bfq_entity *first_idle = st->first_idle;
	struct bfq_entity *last_idle = st->last_idle;

	if (bfq_avl_empty(&st->active) && last_idle &&
	    !bfq_gt(last_idle->finish, st->vtime)) {
		/* Forget the whole idle tree, pushing vtime past it. */
		st->vtime = last_idle->finish;
	}
	if (first_idle && !bfq_gt(first_idle->finish, st->vtime))
		bfq_put_idle_entity(st, first_idle);
}

/*
 * Apply a pending weight change (new_weight, or a change of the weight
 * raising coefficient of a queue).  Like Linux, the change takes effect
 * at once, which may cause a little unfairness.
 */
struct bfq_service_tree *
__bfq_entity_update_weight_prio(struct bfq_service_tree *old_st,
				struct bfq_entity *entity)
{
	struct bfq_service_tree *st = old_st;
	struct bfq_queue *bfqq;
	unsigned int prev_weight, new_weight;

	if (!entity->prio_changed)
		return old_st;
	bfqq = bfq_entity_to_bfqq(entity);
	old_st->wsum -= entity->weight;
	/* A new class: the entity moves to that class's tree. */
	if (bfqq && bfqq->ioprio_class != bfqq->new_ioprio_class) {
		bfqq->ioprio_class = bfqq->new_ioprio_class;
		st = bfq_entity_service_tree(entity);
		entity->start = st->vtime;
	}
	if (entity->new_weight != entity->orig_weight) {
		if (entity->new_weight < BFQ_MIN_WEIGHT)
			entity->new_weight = BFQ_MIN_WEIGHT;
		else if (entity->new_weight > BFQ_MAX_WEIGHT)
			entity->new_weight = BFQ_MAX_WEIGHT;
		entity->orig_weight = entity->new_weight;
	}
	entity->prio_changed = false;

	prev_weight = entity->weight;
	new_weight = entity->orig_weight * (bfqq ? bfqq->wr_coeff : 1);
	/*
	 * A queue changing weight leaves its weight counter; it joins the
	 * counter of its new weight unless weight raised.
	 */
	if (prev_weight != new_weight && bfqq)
		__bfq_weights_tree_remove(bfqq);
	entity->weight = new_weight;
	if (prev_weight != new_weight && bfqq && bfqq->wr_coeff == 1)
		bfq_weights_tree_add(bfqq);
	st->wsum += entity->weight;
	return st;
}

/*
 * Account served sectors to bfqq and its ancestors, and advance the
 * virtual time of each level.
 */
void bfq_bfqq_served(struct bfq_queue *bfqq, int served, uint64_t now)
{
	struct bfq_entity *entity = &bfqq->entity;
	struct bfq_service_tree *st;

	if (!bfqq->service_from_backlogged)
		bfqq->first_IO_time = now;
	if (bfqq->wr_coeff > 1)
		bfqq->service_from_wr += served;
	bfqq->service_from_backlogged += served;
	bfqq->stat_charged += served;
	for_each_entity(entity)
	{
		st = bfq_entity_service_tree(entity);
		entity->service += served;
		st->vtime += bfq_delta(served, st->wsum);
		bfq_forget_idle(st);
	}
}

/*
 * Charge a slow queue the service it would have received at peak rate in
 * time_ms, giving it time fairness rather than service fairness.
 */
void bfq_bfqq_charge_time(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			  unsigned long time_ms, uint64_t now)
{
	struct bfq_entity *entity = &bfqq->entity;
	unsigned long timeout_ms = bfqd->bfq_timeout / NSEC_PER_MSEC;
	unsigned long bounded_time_ms;
	int tot_serv_to_charge;

	if (!timeout_ms)
		timeout_ms = 1;
	/*
	 * A slot longer than the timeout (it ended by budget timeout) is
	 * charged as a whole timeout's worth of service, never less: a
	 * queue charged only its sectors there would get more than its
	 * share of the device's time.
	 */
	bounded_time_ms = time_ms < timeout_ms ? time_ms : timeout_ms;
	tot_serv_to_charge =
		(int)(((uint64_t)bfqd->bfq_max_budget * bounded_time_ms) /
		      timeout_ms);
	if (tot_serv_to_charge < entity->service)
		tot_serv_to_charge = entity->service;
	/* Increase budget to avoid inconsistencies */
	if (tot_serv_to_charge > entity->budget)
		entity->budget = tot_serv_to_charge;
	bfq_bfqq_served(bfqq, tot_serv_to_charge - entity->service, now);
}

static void bfq_update_fin_time_enqueue(struct bfq_entity *entity,
					struct bfq_service_tree *st,
					bool backshifted)
{
	struct bfq_queue *bfqq = bfq_entity_to_bfqq(entity);

	st = __bfq_entity_update_weight_prio(st, entity);
	bfq_calc_finish(entity, entity->budget);
	/*
	 * Push backshifted timestamps up just enough for the finish to be
	 * the virtual time, so that queues that often idle briefly cannot
	 * accumulate finishes far below it and then monopolise the device.
	 * Weight-raised queues are pushed less.
	 */
	if (backshifted && bfq_gt(st->vtime, entity->finish)) {
		uint64_t delta = st->vtime - entity->finish;

		if (bfqq)
			delta /= bfqq->wr_coeff;
		entity->start += delta;
		entity->finish += delta;
	}
	bfq_active_insert(st, entity);
}

/* A true activation: entity was not active. */
static void __bfq_activate_entity(struct bfq_entity *entity,
				  bool non_blocking_wait_rq)
{
	struct bfq_service_tree *st = bfq_entity_service_tree(entity);
	bool backshifted = false;
	uint64_t min_vstart;

	/* See bfq_bfqq_update_budg_for_activation(). */
	if (non_blocking_wait_rq && bfq_gt(st->vtime, entity->finish)) {
		backshifted = true;
		min_vstart = entity->finish;
	} else {
		min_vstart = st->vtime;
	}

	if (entity->tree == &st->idle) {
		bfq_idle_extract(st, entity);
		entity->start = bfq_gt(min_vstart, entity->finish)
					? min_vstart
					: entity->finish;
	} else {
		/* The finish may be stale, and is in the past for sure. */
		entity->start = min_vstart;
		st->wsum += entity->weight;
		bfq_get_entity(entity);
		entity->on_st = true;
	}
	bfq_update_fin_time_enqueue(entity, st, backshifted);
}

/*
 * Requeue an entity that stops being served (its start moves past the
 * service received), or reposition one whose budget changed.
 */
static void __bfq_requeue_entity(struct bfq_entity *entity)
{
	struct bfq_sched_data *sd = entity->sched_data;
	struct bfq_service_tree *st = bfq_entity_service_tree(entity);

	if (entity == sd->in_service_entity) {
		bfq_calc_finish(entity, entity->service);
		entity->start = entity->finish;
		/* A group with other children stayed on the active tree. */
		if (entity->tree)
			bfq_active_extract(st, entity);
	} else {
		bfq_active_extract(st, entity);
	}
	bfq_update_fin_time_enqueue(entity, st, false);
}

static void __bfq_activate_requeue_entity(struct bfq_entity *entity,
					  struct bfq_sched_data *sd,
					  bool non_blocking_wait_rq)
{
	struct bfq_service_tree *st = bfq_entity_service_tree(entity);

	if (sd->in_service_entity == entity || entity->tree == &st->active)
		__bfq_requeue_entity(entity);
	else
		__bfq_activate_entity(entity, non_blocking_wait_rq);
}

/*
 * Activate or requeue a queue's entity, and activate, requeue or
 * reposition its ancestors as far as that changes their schedules.
 * requeue: the queue is expiring, so all ancestors stop being served.
 */
static void bfq_activate_requeue_entity(struct bfq_entity *entity,
					bool non_blocking_wait_rq, bool requeue,
					bool expiration)
{
	struct bfq_sched_data *sd;

	for_each_entity(entity)
	{
		sd = entity->sched_data;
		__bfq_activate_requeue_entity(entity, sd, non_blocking_wait_rq);
		if (!bfq_update_next_in_service(sd, entity, expiration) &&
		    !requeue)
			break;
	}
}

/*
 * Take entity off its service tree, onto the idle tree if allowed and its
 * finish is still ahead of the virtual time.  False if it was not on one.
 */
bool __bfq_deactivate_entity(struct bfq_entity *entity, bool ins_into_idle_tree)
{
	struct bfq_sched_data *sd = entity->sched_data;
	struct bfq_service_tree *st;
	bool is_in_service;

	if (!entity->on_st)
		return false;
	st = bfq_entity_service_tree(entity);
	is_in_service = entity == sd->in_service_entity;
	/*
	 * Charged what it received: an entity not in service got it by
	 * injection, and nobody else resets its service.
	 */
	bfq_calc_finish(entity, entity->service);
	if (is_in_service)
		sd->in_service_entity = NULL;
	else
		entity->service = 0;
	if (entity->tree == &st->active)
		bfq_active_extract(st, entity);
	else if (!is_in_service && entity->tree == &st->idle)
		bfq_idle_extract(st, entity);

	if (!ins_into_idle_tree || !bfq_gt(entity->finish, st->vtime))
		bfq_forget_entity(st, entity, is_in_service);
	else
		bfq_idle_insert(st, entity);
	return true;
}

static void bfq_deactivate_entity(struct bfq_entity *entity,
				  bool ins_into_idle_tree, bool expiration)
{
	struct bfq_sched_data *sd;
	struct bfq_entity *parent = NULL;

	for (; entity; entity = parent) {
		parent = entity->parent;
		sd = entity->sched_data;
		if (!__bfq_deactivate_entity(entity, ins_into_idle_tree))
			return; /* already inactive: nothing changes above */
		if (sd->next_in_service == entity)
			bfq_update_next_in_service(sd, NULL, expiration);
		/*
		 * The parent is still active if it has something next or in
		 * service: stop deactivating, but update its schedule.
		 */
		if (sd->next_in_service || sd->in_service_entity)
			break;
		/* The parent has become idle: go on, onto the idle tree. */
		ins_into_idle_tree = true;
	}
	entity = parent;
	for_each_entity(entity)
	{
		__bfq_requeue_entity(entity);
		sd = entity->sched_data;
		if (!bfq_update_next_in_service(sd, entity, expiration) &&
		    !expiration)
			break;
	}
}

/* The virtual time at which at least one entity is eligible. */
static uint64_t bfq_calc_vtime_jump(struct bfq_service_tree *st)
{
	struct bfq_entity *root_entity = bfq_entity_of(st->active.node);

	if (bfq_gt(root_entity->min_start, st->vtime))
		return root_entity->min_start;
	return st->vtime;
}

static void bfq_update_vtime(struct bfq_service_tree *st, uint64_t new_value)
{
	if (bfq_gt(new_value, st->vtime)) {
		st->vtime = new_value;
		bfq_forget_idle(st);
	}
}

/*
 * The eligible entity with the smallest finish: go left while the left
 * subtree holds an eligible entity, right only while none was found.
 */
static struct bfq_entity *bfq_first_active_entity(struct bfq_service_tree *st,
						  uint64_t vtime)
{
	struct bfq_avl_node *node = st->active.node;
	struct bfq_entity *entry, *first = NULL;

	while (node) {
		entry = bfq_entity_of(node);
	left:
		if (!bfq_gt(entry->start, vtime))
			first = entry;
		if (node->left) {
			entry = bfq_entity_of(node->left);
			if (!bfq_gt(entry->min_start, vtime)) {
				node = node->left;
				goto left;
			}
		}
		if (first)
			break;
		node = node->right;
	}
	return first;
}

/*
 * The first eligible entity of st.  Without an in-service entity the
 * virtual time is pushed up so that one is eligible.
 */
static struct bfq_entity *__bfq_lookup_next_entity(struct bfq_service_tree *st,
						   bool in_service)
{
	uint64_t new_vtime;

	if (bfq_avl_empty(&st->active))
		return NULL;
	new_vtime = bfq_calc_vtime_jump(st);
	if (!in_service)
		bfq_update_vtime(st, new_vtime);
	return bfq_first_active_entity(st, new_vtime);
}

static struct bfq_entity *bfq_lookup_next_entity(struct bfq_sched_data *sd,
						 bool expiration)
{
	struct bfq_service_tree *st = sd->service_tree;
	struct bfq_service_tree *idle_st = &st[BFQ_IOPRIO_CLASSES - 1];
	struct bfq_data *bfqd = bfq_sd_group(sd)->bfqd;
	struct bfq_entity *entity = NULL;
	unsigned int class_idx = 0;
	uint64_t now = bfq_now(bfqd);

	/*
	 * The idle class gets the device at least every
	 * BFQ_CL_IDLE_TIMEOUT, against priority inversion (a low priority
	 * client may hold what others wait for).
	 */
	if ((int64_t)(now - (sd->bfq_class_idle_last_service +
			     BFQ_CL_IDLE_TIMEOUT)) > 0) {
		if (!bfq_avl_empty(&idle_st->active))
			class_idx = BFQ_IOPRIO_CLASSES - 1;
		sd->bfq_class_idle_last_service = now;
	}
	/*
	 * The highest class with an eligible entity.  On the expiration
	 * path in_service_entity is still set but no longer in service.
	 */
	for (; class_idx < BFQ_IOPRIO_CLASSES; class_idx++) {
		entity = __bfq_lookup_next_entity(
			&st[class_idx], sd->in_service_entity && !expiration);
		if (entity)
			break;
	}
	return entity;
}

bool next_queue_may_preempt(struct bfq_data *bfqd)
{
	struct bfq_sched_data *sd = &bfqd->root_group->sched_data;

	return sd->next_in_service != sd->in_service_entity;
}

/* Set in service the entities from the root to the next leaf to serve. */
struct bfq_queue *bfq_get_next_queue(struct bfq_data *bfqd)
{
	struct bfq_entity *entity = NULL;
	struct bfq_sched_data *sd;
	struct bfq_queue *bfqq;

	if (bfq_tot_busy_queues(bfqd) == 0)
		return NULL;
	for (sd = &bfqd->root_group->sched_data; sd;
	     sd = entity->my_sched_data) {
		entity = sd->next_in_service;
		if (!entity)
			return NULL; /* cannot happen with busy queues */
		sd->in_service_entity = entity;
		/*
		 * Not reset here (Linux stopped doing so): service is
		 * reset at expiration and activation, so what is left is
		 * what the queue got injected while another was in
		 * service, which its slot must count.
		 */
		if (bfq_no_longer_next_in_service(entity))
			bfq_active_extract(bfq_entity_service_tree(entity),
					   entity);
	}
	bfqq = bfq_entity_to_bfqq(entity);
	/* Now the next-to-serve entities can be updated bottom up. */
	for_each_entity(entity)
	{
		if (!bfq_update_next_in_service(entity->sched_data, NULL,
						false))
			break;
	}
	return bfqq;
}

/* Returns true if the queue that was in service was freed. */
bool __bfq_bfqd_reset_in_service(struct bfq_data *bfqd)
{
	struct bfq_queue *in_serv_bfqq = bfqd->in_service_queue;
	struct bfq_entity *in_serv_entity = &in_serv_bfqq->entity;
	struct bfq_entity *entity = in_serv_entity;

	bfq_clear_bfqq_wait_request(in_serv_bfqq);
	bfqd->in_service_queue = NULL;
	for_each_entity(entity) entity->sched_data->in_service_entity = NULL;
	/* Not on a tree any more: drop the reference it kept while served. */
	if (!in_serv_entity->on_st) {
		bool last = in_serv_bfqq->ref == 1;

		bfq_put_queue(in_serv_bfqq);
		return last;
	}
	return false;
}

void bfq_deactivate_bfqq(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			 bool ins_into_idle_tree, bool expiration)
{
	bfq_deactivate_entity(&bfqq->entity, ins_into_idle_tree, expiration);
}

void bfq_activate_bfqq(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	bfq_activate_requeue_entity(&bfqq->entity,
				    bfq_bfqq_non_blocking_wait_rq(bfqq), false,
				    false);
	bfq_clear_bfqq_non_blocking_wait_rq(bfqq);
}

void bfq_requeue_bfqq(struct bfq_data *bfqd, struct bfq_queue *bfqq,
		      bool expiration)
{
	bfq_activate_requeue_entity(&bfqq->entity, false,
				    bfqq == bfqd->in_service_queue, expiration);
}

/* bfqq has no more requests: take it off the service tree. */
void bfq_del_bfqq_busy(struct bfq_data *bfqd, struct bfq_queue *bfqq,
		       bool expiration)
{
	bfq_clear_bfqq_busy(bfqq);
	bfqd->busy_queues--;
	bfqd->busy_in_class[bfqq->busy_class]--;
	if (!bfqq->dispatched)
		bfq_weights_tree_remove(bfqq);
	if (bfqq->wr_coeff > 1)
		bfq_set_wr_busy(bfqd, bfqd->wr_busy_queues - 1);
	bfq_deactivate_bfqq(bfqd, bfqq, true, expiration);
}

/* An inactive queue got a request. */
void bfq_add_bfqq_busy(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	bfq_activate_bfqq(bfqd, bfqq);
	bfq_mark_bfqq_busy(bfqq);
	bfqd->busy_queues++;
	/* The class activation put in effect; a change waits for the next. */
	bfqq->busy_class = bfqq->ioprio_class - 1;
	bfqd->busy_in_class[bfqq->busy_class]++;
	if (!bfqq->dispatched) {
		bfq_add_bfqq_in_groups_with_pending_reqs(bfqq);
		if (bfqq->wr_coeff == 1)
			bfq_weights_tree_add(bfqq);
	}
	if (bfqq->wr_coeff > 1)
		bfq_set_wr_busy(bfqd, bfqd->wr_busy_queues + 1);
	/* First in its waker's woken list: the one injected for it. */
	if (bfqq->on_woken_list &&
	    TAILQ_FIRST(&bfqq->waker_bfqq->woken_list) != bfqq) {
		TAILQ_REMOVE(&bfqq->waker_bfqq->woken_list, bfqq,
			     woken_list_node);
		TAILQ_INSERT_HEAD(&bfqq->waker_bfqq->woken_list, bfqq,
				  woken_list_node);
	}
}
