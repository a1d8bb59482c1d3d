// SPDX-License-Identifier: GPL-2.0
/*
 * Merging of cooperating queues ("early queue merge", EQM), after Linux
 * 6.6's block/bfq-iosched.c: bfq_setup_cooperator and what it needs,
 * stable merging, and splitting.
 *
 * A "process" here is a client (one NBD connection by default).  A
 * client reading a file over several connections, each connection
 * reading every n-th block, makes interleaved sequential streams: each
 * queue alone looks seeky, or keeps being idled for, while together they
 * are sequential.  Their queues are merged into one, served as one
 * stream:
 * - on request arrival (and on a bio merge attempt), a sync queue
 *   created in the last 100 ms of its service, whose request lands
 *   within BFQQ_CLOSE_THR sectors of the in-service queue's last
 *   dispatch, or of another queue's next request (the per-group position
 *   trees), is scheduled to merge into that queue (bfqq->new_bfqq); the
 *   client is redirected there and its own queue dropped;
 * - stable merging: a sync queue created within the burst interval of
 *   the group's last created one (same class) is merged with it, at once
 *   on flash with internal queueing, else on its first request 600 ms
 *   after its creation, if both queues still have clients;
 * - a shared queue found seeky when it expires is split at the next
 *   request of each of its clients, unless merged stably: the client
 *   gets a new queue, with the state its own queue had when merged.
 * No merging on flash with internal queueing (bfq_nonrot_with_queueing):
 * there the device reorders requests itself.
 */
#include <stdlib.h>

#include "bfq-iosched.h"

/* Requests closer than this (sectors) are cooperating. */
#define BFQQ_CLOSE_THR (8ull * 1024)
/* A queue in service for longer than this is not merged any more. */
#define BFQ_MERGE_TIME_LIMIT (100 * NSEC_PER_MSEC)
/* Queues created this close may be stably merged (bfq_burst_interval). */
#define BFQ_ACTIVATION_STABLE_MERGING (600 * NSEC_PER_MSEC)
/* A scheduled stable merge is done no sooner than this after creation. */
#define BFQ_LATE_STABLE_MERGING (600 * NSEC_PER_MSEC)

static int bfq_pos_cmp(const struct bfq_avl_node *a,
		       const struct bfq_avl_node *b)
{
	const struct bfq_queue *qa =
		bfq_avl_entry(a, struct bfq_queue, pos_node);
	const struct bfq_queue *qb =
		bfq_avl_entry(b, struct bfq_queue, pos_node);

	if (qa->pos_key != qb->pos_key)
		return qa->pos_key < qb->pos_key ? -1 : 1;
	return 0;
}

static const struct bfq_avl_ops bfq_pos_ops = {
	.cmp = bfq_pos_cmp,
};

static struct bfq_queue *pos_bfqq(struct bfq_avl_node *n)
{
	return n ? bfq_avl_entry(n, struct bfq_queue, pos_node) : NULL;
}

/*
 * The queue whose next request starts at sector, or NULL and in *parent
 * the last queue looked at: the closest one on one side
 * (bfq_rq_pos_tree_lookup).
 */
static struct bfq_queue *bfq_rq_pos_tree_lookup(struct bfq_avl_root *root,
						uint64_t sector,
						struct bfq_queue **parent)
{
	struct bfq_avl_node *n = root->node;
	struct bfq_queue *bfqq;

	*parent = NULL;
	while (n) {
		bfqq = pos_bfqq(n);
		*parent = bfqq;
		if (sector < bfqq->pos_key)
			n = n->left;
		else if (sector > bfqq->pos_key)
			n = n->right;
		else
			return bfqq;
	}
	return NULL;
}

void bfq_pos_tree_del(struct bfq_queue *bfqq)
{
	if (bfqq->pos_root) {
		bfq_avl_erase(bfqq->pos_root, &bfqq->pos_node, &bfq_pos_ops);
		bfqq->pos_root = NULL;
	}
}

static bool bfq_too_late_for_merging(const struct bfq_queue *bfqq, uint64_t now)
{
	return bfqq->service_from_backlogged > 0 &&
	       bfqq->first_IO_time + BFQ_MERGE_TIME_LIMIT < now;
}

/*
 * (Re)position bfqq in its group's tree by its next request; only sync
 * queues that may still be merged are there, one per sector.
 */
void bfq_pos_tree_add_move(struct bfq_data *bfqd, struct bfq_queue *bfqq)
{
	struct bfq_avl_root *root = &bfqq->bfqg->rq_pos_tree;
	struct bfq_queue *parent;

	bfq_pos_tree_del(bfqq);
	if (bfq_nonrot_with_queueing(bfqd) || !bfq_bfqq_sync(bfqq) ||
	    bfq_too_late_for_merging(bfqq, bfq_now(bfqd)) ||
	    bfq_class_idle(bfqq) || !bfqq->next_rq)
		return;
	if (bfq_rq_pos_tree_lookup(root, blk_rq_pos(bfqq->next_rq), &parent))
		return;
	bfqq->pos_key = blk_rq_pos(bfqq->next_rq);
	bfqq->pos_root = root;
	bfq_avl_insert(root, &bfqq->pos_node, &bfq_pos_ops);
}

static bool bfq_close_to_sector(uint64_t pos, uint64_t sector)
{
	return (pos > sector ? pos - sector : sector - pos) <= BFQQ_CLOSE_THR;
}

/* A queue of bfqq's group with its next request close to sector. */
static struct bfq_queue *bfqq_find_close(struct bfq_queue *bfqq,
					 uint64_t sector)
{
	struct bfq_avl_root *root = &bfqq->bfqg->rq_pos_tree;
	struct bfq_queue *__bfqq, *parent;
	struct bfq_avl_node *node;

	if (bfq_avl_empty(root))
		return NULL;
	/* First, one whose next request starts where bfqq's would. */
	__bfqq = bfq_rq_pos_tree_lookup(root, sector, &parent);
	if (__bfqq)
		return __bfqq;
	/* Else the closest on one side, then on the other. */
	if (bfq_close_to_sector(parent->pos_key, sector))
		return parent;
	if (parent->pos_key < sector)
		node = bfq_avl_next(root, &parent->pos_node, &bfq_pos_ops);
	else
		node = bfq_avl_prev(root, &parent->pos_node, &bfq_pos_ops);
	__bfqq = pos_bfqq(node);
	if (__bfqq && bfq_close_to_sector(__bfqq->pos_key, sector))
		return __bfqq;
	return NULL;
}

static struct bfq_queue *bfq_find_close_cooperator(struct bfq_queue *cur,
						   uint64_t sector)
{
	struct bfq_queue *bfqq = bfqq_find_close(cur, sector);

	return bfqq == cur ? NULL : bfqq;
}

static int bfqq_process_refs(const struct bfq_queue *bfqq)
{
	return bfqq->process_refs;
}

/*
 * Schedule the merge of bfqq into new_bfqq (the end of its own merge
 * chain): bfqq's clients will be redirected there as they issue I/O, and
 * new_bfqq takes a reference for each of them now.
 */
static struct bfq_queue *bfq_setup_merge(struct bfq_queue *bfqq,
					 struct bfq_queue *new_bfqq)
{
	struct bfq_queue *__bfqq;
	int process_refs;

	/* Without clients, the chain may hold freed queues. */
	if (!bfqq_process_refs(new_bfqq) || new_bfqq == bfqq)
		return NULL;
	/* No circular chain; skip interim merges. */
	while ((__bfqq = new_bfqq->new_bfqq)) {
		if (__bfqq == bfqq)
			return NULL;
		new_bfqq = __bfqq;
	}
	process_refs = bfqq_process_refs(bfqq);
	if (process_refs == 0 || bfqq_process_refs(new_bfqq) == 0)
		return NULL;
	/* The groups may have changed since the queues were found. */
	if (new_bfqq->bfqg != bfqq->bfqg)
		return NULL;
	bfqq->new_bfqq = new_bfqq;
	new_bfqq->ref += process_refs;
	new_bfqq->process_refs += process_refs;
	return new_bfqq;
}

static bool bfq_may_be_close_cooperator(struct bfq_queue *bfqq,
					struct bfq_queue *new_bfqq,
					uint64_t now)
{
	if (bfq_too_late_for_merging(new_bfqq, now))
		return false;
	if (bfq_class_idle(bfqq) || bfq_class_idle(new_bfqq) ||
	    bfqq->ioprio_class != new_bfqq->ioprio_class)
		return false;
	/* A seeky queue would not make the other one sequential. */
	if (BFQQ_SEEKY(bfqq) || BFQQ_SEEKY(new_bfqq))
		return false;
	/* Interleaved I/O is done for reads: sync queues only. */
	return bfq_bfqq_sync(bfqq) && bfq_bfqq_sync(new_bfqq);
}

void bfq_put_stable_ref(struct bfq_queue *bfqq)
{
	bfqq->stable_ref--;
	bfq_put_queue(bfqq);
}

static struct bfq_queue *bfq_setup_stable_merge(struct bfq_queue *bfqq,
						struct bfq_queue *stable,
						struct bfq_io_cq *bic)
{
	int proc_ref = bfqq_process_refs(bfqq) < bfqq_process_refs(stable)
			       ? bfqq_process_refs(bfqq)
			       : bfqq_process_refs(stable);
	struct bfq_queue *new_bfqq = NULL;

	bic->stable_merge_bfqq = NULL;
	/* Done or given up here: no longer scheduled. */
	if (proc_ref)
		new_bfqq = bfq_setup_merge(bfqq, stable);
	bfq_put_stable_ref(stable);
	if (new_bfqq) {
		bic->stably_merged = true;
		if (new_bfqq->bic)
			new_bfqq->bic->stably_merged = true;
	}
	return new_bfqq;
}

/*
 * The queue bfqq's I/O at pos (of its client bic) should go to instead,
 * with the merge scheduled; or NULL.
 */
struct bfq_queue *bfq_setup_cooperator(struct bfq_data *bfqd,
				       struct bfq_queue *bfqq, uint64_t pos,
				       struct bfq_io_cq *bic, uint64_t now)
{
	struct bfq_queue *in_service, *new_bfqq;

	/* A merge already scheduled goes first. */
	if (bfqq->new_bfqq)
		return bfqq->new_bfqq;
	/* A delayed stable merge, on disks and flash without queueing. */
	if (!bfq_nonrot_with_queueing(bfqd) && bfq_bfqq_sync(bfqq) &&
	    bic->stable_merge_bfqq && !bfq_bfqq_just_created(bfqq) &&
	    bfqq->split_time + BFQ_LATE_STABLE_MERGING < now &&
	    bfqq->creation_time + BFQ_LATE_STABLE_MERGING < now)
		return bfq_setup_stable_merge(bfqq, bic->stable_merge_bfqq,
					      bic);
	/* A queueing flash device reorders requests itself. */
	if (bfq_nonrot_with_queueing(bfqd))
		return NULL;
	/* Cooperators start together: long after, it is a coincidence. */
	if (bfq_too_late_for_merging(bfqq, now))
		return NULL;
	if (bfq_tot_busy_queues(bfqd) == 1)
		return NULL;
	in_service = bfqd->in_service_queue;
	if (in_service && in_service != bfqq &&
	    bfq_close_to_sector(pos, bfqd->in_serv_last_pos) &&
	    bfqq->bfqg == in_service->bfqg &&
	    bfq_may_be_close_cooperator(bfqq, in_service, now)) {
		new_bfqq = bfq_setup_merge(bfqq, in_service);
		if (new_bfqq)
			return new_bfqq;
	}
	new_bfqq = bfq_find_close_cooperator(bfqq, pos);
	if (new_bfqq && bfq_may_be_close_cooperator(bfqq, new_bfqq, now))
		return bfq_setup_merge(bfqq, new_bfqq);
	return NULL;
}

/* What bfqq's client gets back if split off: bfq_bfqq_save_state. */
static void bfq_bfqq_save_state(struct bfq_queue *bfqq, uint64_t now)
{
	struct bfq_io_cq *bic = bfqq->bic;
	struct bfq_data *bfqd = bfqq->bfqd;

	/* Shared, or redirected already: saved then. */
	if (!bic)
		return;
	bic->saved_last_serv_time_ns = bfqq->last_serv_time_ns;
	bic->saved_inject_limit = bfqq->inject_limit;
	bic->saved_decrease_time = bfqq->decrease_time;
	bic->saved_weight = bfqq->entity.orig_weight;
	bic->saved_ttime = bfqq->ttime;
	bic->saved_has_short_ttime = bfq_bfqq_has_short_ttime(bfqq);
	bic->saved_IO_bound = bfq_bfqq_IO_bound(bfqq);
	bic->saved_io_start_time = bfqq->io_start_time;
	bic->saved_tot_idle_time = bfqq->tot_idle_time;
	bic->saved_in_large_burst = bfq_bfqq_in_large_burst(bfqq);
	bic->was_in_burst_list = bfqq->in_burst_list;
	if (bfq_bfqq_just_created(bfqq) && !bfq_bfqq_in_large_burst(bfqq) &&
	    bfqd->low_latency) {
		/*
		 * Merged before its first request could raise it: keep the
		 * interactive raising it would have had, for a split soon.
		 */
		bic->saved_wr_coeff = bfqd->bfq_wr_coeff;
		bic->saved_wr_start_at_switch_to_srt = 0;
		bic->saved_wr_cur_max_time = bfq_wr_duration(bfqd);
		bic->saved_last_wr_start_finish = now;
	} else {
		bic->saved_wr_coeff = bfqq->wr_coeff;
		bic->saved_wr_start_at_switch_to_srt =
			bfqq->wr_start_at_switch_to_srt;
		bic->saved_service_from_wr = bfqq->service_from_wr;
		bic->saved_last_wr_start_finish = bfqq->last_wr_start_finish;
		bic->saved_wr_cur_max_time = bfqq->wr_cur_max_time;
	}
}

static void bfq_set_waker(struct bfq_queue *bfqq, struct bfq_queue *waker)
{
	bfqq->waker_bfqq = waker;
	bfqq->tentative_waker_bfqq = NULL;
	/* On the waker's woken list, so that the pointer is cut with it. */
	TAILQ_INSERT_HEAD(&waker->woken_list, bfqq, woken_list_node);
	bfqq->on_woken_list = true;
}

/* Redirect bic from bfqq to new_bfqq, which becomes shared. */
void bfq_merge_bfqqs(struct bfq_data *bfqd, struct bfq_io_cq *bic,
		     struct bfq_queue *bfqq, struct bfq_queue *new_bfqq)
{
	uint64_t now = bfq_now(bfqd);

	bfq_bfqq_save_state(bfqq, now);
	bfq_bfqq_save_state(new_bfqq, now);
	if (bfq_bfqq_IO_bound(bfqq))
		bfq_mark_bfqq_IO_bound(new_bfqq);
	bfq_clear_bfqq_IO_bound(bfqq);
	/* bfqq's waker may inject for all the cooperators. */
	if (bfqq->waker_bfqq && !new_bfqq->waker_bfqq &&
	    bfqq->waker_bfqq != new_bfqq && !new_bfqq->on_woken_list)
		bfq_set_waker(new_bfqq, bfqq->waker_bfqq);
	/* Raising goes with the client. */
	if (new_bfqq->wr_coeff == 1 && bfqq->wr_coeff > 1) {
		new_bfqq->wr_coeff = bfqq->wr_coeff;
		new_bfqq->wr_cur_max_time = bfqq->wr_cur_max_time;
		new_bfqq->last_wr_start_finish = bfqq->last_wr_start_finish;
		new_bfqq->wr_start_at_switch_to_srt =
			bfqq->wr_start_at_switch_to_srt;
		if (bfq_bfqq_busy(new_bfqq))
			bfq_set_wr_busy(bfqd, bfqd->wr_busy_queues + 1);
		new_bfqq->entity.prio_changed = true;
	}
	if (bfqq->wr_coeff > 1) {
		bfqq->wr_coeff = 1;
		bfqq->entity.prio_changed = true;
		if (bfq_bfqq_busy(bfqq))
			bfq_set_wr_busy(bfqd, bfqd->wr_busy_queues - 1);
	}
	bic->bfqq[1] = new_bfqq;
	bfq_mark_bfqq_coop(new_bfqq);
	/* Shared now, or soon without clients: no single owner. */
	new_bfqq->bic = NULL;
	bfqq->bic = NULL;
	if (bfqq->bfqg->last_bfqq_created == bfqq)
		bfqq->bfqg->last_bfqq_created = new_bfqq;
	bfq_release_process_ref(bfqd, bfqq);
}

/*
 * __bfq_insert_request: rq goes to the queue its queue is merged with,
 * if any (the merge is completed for its client now).
 */
struct bfq_queue *bfq_merge_on_insert(struct bfq_data *bfqd, struct request *rq,
				      uint64_t now)
{
	struct bfq_queue *bfqq = RQ_BFQQ(rq), *new_bfqq;
	struct bfq_io_cq *bic = RQ_BRQ(rq)->bic;

	if (!bfq_bfqq_sync(bfqq))
		return bfqq;
	new_bfqq = bfq_setup_cooperator(bfqd, bfqq, blk_rq_pos(rq), bic, now);
	if (!new_bfqq)
		return bfqq;
	/* The request's references move to the shared queue. */
	bfqq_request_allocated(new_bfqq, 1);
	bfqq_request_allocated(bfqq, -1);
	new_bfqq->ref++;
	/* Unless the client was redirected elsewhere meanwhile. */
	if (bic->bfqq[1] == bfqq)
		bfq_merge_bfqqs(bfqd, bic, bfqq, new_bfqq);
	bfq_clear_bfqq_just_created(bfqq);
	bfq_put_queue(bfqq);
	rq->elv_priv[1] = new_bfqq;
	return new_bfqq;
}

struct bfq_queue *bfq_merge_on_bio(struct bfq_data *bfqd, struct bio *bio,
				   uint64_t now)
{
	struct bfq_queue *bfqq = bfqd->bio_bfqq, *new_bfqq;

	if (!bfqd->bio_bic || !bfq_bfqq_sync(bfqq))
		return bfqq;
	new_bfqq = bfq_setup_cooperator(bfqd, bfqq, bio->bi_sector,
					bfqd->bio_bic, now);
	if (new_bfqq) {
		/* The bio's client still points to bfqq: merge now. */
		bfq_merge_bfqqs(bfqd, bfqd->bio_bic, bfqq, new_bfqq);
		/* This hook may run again for the same bio. */
		bfqd->bio_bfqq = bfqq = new_bfqq;
	}
	return bfqq;
}

/* Nonrot with queueing: the new queue joins the last created now. */
static struct bfq_queue *bfq_do_early_stable_merge(struct bfq_data *bfqd,
						   struct bfq_queue *bfqq,
						   struct bfq_io_cq *bic,
						   struct bfq_queue *last)
{
	struct bfq_queue *new_bfqq = bfq_setup_merge(bfqq, last);

	if (!new_bfqq)
		return bfqq;
	if (new_bfqq->bic)
		new_bfqq->bic->stably_merged = true;
	bic->stably_merged = true;
	bfq_merge_bfqqs(bfqd, bic, bfqq, new_bfqq);
	return new_bfqq;
}

struct bfq_queue *bfq_do_or_sched_stable_merge(struct bfq_data *bfqd,
					       struct bfq_queue *bfqq,
					       struct bfq_io_cq *bic,
					       uint64_t pos)
{
	struct bfq_group *bfqg = bfqq->bfqg;
	struct bfq_queue *last = bfqg->last_bfqq_created;

	/* A weight set for a client stands for Linux's ioprio here. */
	if (!last ||
	    last->creation_time + BFQ_ACTIVATION_STABLE_MERGING <
		    bfqq->creation_time ||
	    bfqq->bfqg != last->bfqg ||
	    bfqq->new_ioprio_class != last->new_ioprio_class ||
	    bfqq->entity.new_weight != last->entity.new_weight) {
		bfqg->last_bfqq_created = bfqq;
	} else if (last->creation_time + bfqd->bfq_burst_interval >=
			   bfqq->creation_time &&
		   bfq_close_to_sector(pos, last->last_request_pos)) {
		/*
		 * Ours: the first request must also be close to the last
		 * one of the queue created before.  A "process" is a
		 * connection here, and unrelated clients often connect
		 * at the same time.
		 */
		if (bfq_nonrot_with_queueing(bfqd))
			/* Left alone it would gain nothing: merge now. */
			return bfq_do_early_stable_merge(bfqd, bfqq, bic, last);
		if (!bic->stable_merge_bfqq) {
			/* Decide later: keep last until then. */
			last->ref++;
			last->stable_ref++;
			bic->stable_merge_bfqq = last;
		}
	}
	return bfqq;
}

/*
 * If this queue was scheduled to merge into others, drop the references
 * the merge took on them for bfqq's leaving client.
 */
void bfq_put_cooperator(struct bfq_queue *bfqq)
{
	struct bfq_queue *__bfqq = bfqq->new_bfqq, *next;

	while (__bfqq) {
		next = __bfqq->new_bfqq;
		__bfqq->process_refs--;
		bfq_put_queue(__bfqq);
		__bfqq = next;
	}
}

/* bic leaves the shared bfqq: the queue, if bic was its only client. */
static struct bfq_queue *bfq_split_bfqq(struct bfq_data *bfqd,
					struct bfq_io_cq *bic,
					struct bfq_queue *bfqq)
{
	if (bfqq_process_refs(bfqq) == 1) {
		bfq_clear_bfqq_coop(bfqq);
		bfq_clear_bfqq_split_coop(bfqq);
		return bfqq;
	}
	bic->bfqq[1] = NULL;
	bfq_put_cooperator(bfqq);
	bfq_release_process_ref(bfqd, bfqq);
	return NULL;
}

struct bfq_queue *bfq_split_if_needed(struct bfq_data *bfqd,
				      struct bfq_io_cq *bic,
				      struct bfq_queue *bfqq,
				      unsigned short ioprio_class, uint64_t now,
				      bool *split, bool *existing)
{
	struct bfq_queue *old = bfqq;

	if (!bfq_bfqq_coop(bfqq) || !bfq_bfqq_split_coop(bfqq) ||
	    bic->stably_merged)
		return bfqq;
	if (bfq_bfqq_in_large_burst(bfqq))
		bic->saved_in_large_burst = true;
	*split = true;
	bfqq = bfq_split_bfqq(bfqd, bic, bfqq);
	if (bfqq) {
		*existing = true;
		return bfqq;
	}
	/* old keeps its other clients: it is still there. */
	bfqq = bfq_get_queue(bfqd, bic, true, ioprio_class, now);
	if (!bfqq)
		return NULL;
	bic->bfqq[1] = bfqq;
	if ((bic->was_in_burst_list && bfqd->large_burst) ||
	    bic->saved_in_large_burst) {
		bfq_mark_bfqq_in_large_burst(bfqq);
	} else {
		bfq_clear_bfqq_in_large_burst(bfqq);
		/* Back in the burst list it was in, without counting it. */
		if (bic->was_in_burst_list)
			bfq_burst_list_add(bfqd, bfqq);
	}
	bfqq->split_time = now;
	if (old->waker_bfqq)
		bfq_set_waker(bfqq, old->waker_bfqq);
	return bfqq;
}

/* bfq_bfqq_resume_state: the client's own queue again. */
static void bfq_bfqq_resume_state(struct bfq_queue *bfqq, struct bfq_data *bfqd,
				  struct bfq_io_cq *bic, bool existing,
				  uint64_t now)
{
	unsigned int old_wr_coeff = 1;
	bool busy = existing && bfq_bfqq_busy(bfqq);

	if (bic->saved_has_short_ttime)
		bfq_mark_bfqq_has_short_ttime(bfqq);
	else
		bfq_clear_bfqq_has_short_ttime(bfqq);
	if (bic->saved_IO_bound)
		bfq_mark_bfqq_IO_bound(bfqq);
	else
		bfq_clear_bfqq_IO_bound(bfqq);
	bfqq->last_serv_time_ns = bic->saved_last_serv_time_ns;
	bfqq->inject_limit = bic->saved_inject_limit;
	bfqq->decrease_time = bic->saved_decrease_time;
	if (bic->saved_weight)
		bfqq->entity.new_weight = bic->saved_weight;
	bfqq->ttime = bic->saved_ttime;
	bfqq->io_start_time = bic->saved_io_start_time;
	bfqq->tot_idle_time = bic->saved_tot_idle_time;
	if (bfqd->low_latency) {
		old_wr_coeff = bfqq->wr_coeff;
		bfqq->wr_coeff = bic->saved_wr_coeff;
	}
	bfqq->service_from_wr = bic->saved_service_from_wr;
	bfqq->wr_start_at_switch_to_srt = bic->saved_wr_start_at_switch_to_srt;
	bfqq->last_wr_start_finish = bic->saved_last_wr_start_finish;
	bfqq->wr_cur_max_time = bic->saved_wr_cur_max_time;
	if (bfqq->wr_coeff > 1 &&
	    (bfq_bfqq_in_large_burst(bfqq) ||
	     bfqq->last_wr_start_finish + bfqq->wr_cur_max_time < now))
		bfqq->wr_coeff = 1;
	bfqq->entity.prio_changed = true;
	if (!busy)
		return;
	if (old_wr_coeff == 1 && bfqq->wr_coeff > 1)
		bfq_set_wr_busy(bfqd, bfqd->wr_busy_queues + 1);
	else if (old_wr_coeff > 1 && bfqq->wr_coeff == 1)
		bfq_set_wr_busy(bfqd, bfqd->wr_busy_queues - 1);
}

void bfq_merge_rq_bound(struct bfq_data *bfqd, struct bfq_io_cq *bic,
			struct bfq_queue *bfqq, bool split, bool existing,
			uint64_t now)
{
	/* A queue of one client is owned by it (again). */
	if (bfqq->new_bfqq || bfqq_process_refs(bfqq) != 1)
		return;
	bfqq->bic = bic;
	if (split)
		bfq_bfqq_resume_state(bfqq, bfqd, bic, existing, now);
}

void bfq_sync_bfqq_move(struct bfq_data *bfqd, struct bfq_io_cq *bic,
			struct bfq_group *bfqg, uint64_t now)
{
	struct bfq_queue *sync_bfqq = bic->bfqq[1], *bfqq;

	if (!sync_bfqq->new_bfqq && !bfq_bfqq_coop(sync_bfqq)) {
		/* Its own queue: it moves. */
		bfq_bfqq_move(bfqd, sync_bfqq, bfqg, now);
		return;
	}
	/*
	 * Shared or to be merged: if any queue of the chain is in another
	 * group, the client leaves it and gets a new queue at its next
	 * request, in its new group.
	 */
	for (bfqq = sync_bfqq; bfqq; bfqq = bfqq->new_bfqq)
		if (bfqq->bfqg != bfqg)
			break;
	if (bfqq) {
		bfq_put_cooperator(sync_bfqq);
		bic->bfqq[1] = NULL;
		if (sync_bfqq->bic == bic)
			sync_bfqq->bic = NULL;
		bfq_release_process_ref(bfqd, sync_bfqq);
	}
}

void bfq_merge_bfqq_moved(struct bfq_data *bfqd, struct bfq_queue *bfqq,
			  struct bfq_group *old)
{
	if (old->last_bfqq_created == bfqq)
		old->last_bfqq_created = NULL;
	if (bfqq->pos_root)
		bfq_pos_tree_add_move(bfqd, bfqq);
}
