// SPDX-License-Identifier: GPL-2.0
/*
 * The bfq elevator: set-up and teardown of the scheduler instances (one
 * per hw queue, sharing a configuration) and the elevator_type.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bfq-iosched.h"
#include "bfq.h"

/* bfq-iosched.c */
void bfq_limit_depth(struct mq_hw_ctx *hctx, const struct bio *bio,
		     unsigned int *depth);
bool bfq_allow_bio_merge(struct mq_queue *q, struct request *rq,
			 struct bio *bio);
bool bfq_bio_merge(struct mq_hw_ctx *hctx, struct bio *bio);
enum elv_merge bfq_request_merge(struct mq_hw_ctx *hctx, struct request **req,
				 struct bio *bio);
void bfq_request_merged(struct mq_queue *q, struct request *req,
			enum elv_merge type);
void bfq_requests_merged(struct mq_queue *q, struct request *rq,
			 struct request *next);
struct request *bfq_next_request(struct mq_queue *q, struct request *rq);
struct request *bfq_former_request(struct mq_queue *q, struct request *rq);
bool bfq_has_work(struct mq_hw_ctx *hctx);
struct request *bfq_dispatch_request(struct mq_hw_ctx *hctx);
void bfq_insert_requests(struct mq_hw_ctx *hctx, struct rq_list *list,
			 bool at_head);
void bfq_completed_request_hook(struct request *rq, uint64_t now_ns);
void bfq_requeue_request(struct request *rq);
void bfq_finish_request(struct request *rq);
void bfq_prepare_request(struct request *rq);

static int bfq_init_queue(struct mq_queue *q, struct elevator_type *e)
{
	struct bfq_conf *conf = calloc(1, sizeof(*conf));

	if (!conf)
		return ENOMEM;
	conf->bfqds = calloc(q->nr_hw_queues, sizeof(*conf->bfqds));
	if (!conf->bfqds) {
		free(conf);
		return ENOMEM;
	}
	pthread_mutex_init(&conf->lock, NULL);
	conf->q = q;
	conf->nr_hw = q->nr_hw_queues;
	bfq_conf_init(conf);
	q->elevator->elevator_data = conf;
	return 0;
}

static void bfq_exit_queue(struct elevator_queue *eq)
{
	struct bfq_conf *conf = eq->elevator_data;

	pthread_mutex_destroy(&conf->lock);
	free(conf->groups);
	free(conf->rules);
	free(conf->weights);
	free(conf->bfqds);
	free(conf);
}

static void bfq_free_bfqd(struct bfq_data *bfqd)
{
	struct bfq_weight_counter *c;
	struct bfq_queue *bfqq;

	/* No request is left: free everything, whatever the references. */
	bfq_bic_exit(bfqd);
	while ((bfqq = TAILQ_FIRST(&bfqd->queues))) {
		TAILQ_REMOVE(&bfqd->queues, bfqq, all_list);
		free(bfqq);
	}
	while ((c = bfqd->queue_weights)) {
		bfqd->queue_weights = c->next;
		free(c);
	}
	bfq_free_groups(bfqd);
	free(bfqd->rqs);
	pthread_mutex_destroy(&bfqd->lock);
	free(bfqd);
}

static int bfq_init_hctx(struct mq_hw_ctx *hctx, unsigned int idx)
{
	struct mq_queue *q = hctx->queue;
	struct bfq_conf *conf = q->elevator->elevator_data;
	struct bfq_data *bfqd = calloc(1, sizeof(*bfqd));
	uint64_t now = mq_now_ns();

	if (!bfqd)
		return ENOMEM;
	pthread_mutex_init(&bfqd->lock, NULL);
	bfqd->queue = q;
	bfqd->hctx = hctx;
	bfqd->conf = conf;
	bfqd->clock_base = now - BFQ_TIME_ORIGIN;
	TAILQ_INIT(&bfqd->groups);
	TAILQ_INIT(&bfqd->burst_list);
	TAILQ_INIT(&bfqd->dispatch);
	TAILQ_INIT(&bfqd->queues);
	TAILQ_INIT(&bfqd->active_list);
	bfqd->nr_rqs = q->nr_requests;
	bfqd->rqs = calloc(bfqd->nr_rqs, sizeof(*bfqd->rqs));
	bfqd->root_group = bfq_create_root_group(bfqd);
	if (!bfqd->rqs || !bfqd->root_group || bfq_bic_init(bfqd)) {
		bfq_free_bfqd(bfqd);
		return ENOMEM;
	}

	bfqd->hw_tag = -1;
	bfqd->bfq_max_budget = 16 * 1024; /* bfq_default_max_budget */
	bfqd->bfq_large_burst_thresh = 8;
	bfqd->bfq_burst_interval = 180 * NSEC_PER_MSEC;
	/* Trade-off between responsiveness and fairness. */
	bfqd->bfq_wr_coeff = 30;
	bfqd->bfq_wr_rt_max_time = 300 * NSEC_PER_MSEC;
	bfqd->bfq_wr_max_time = 0;
	bfqd->bfq_wr_min_idle_time = 2000 * NSEC_PER_MSEC;
	bfqd->bfq_wr_min_inter_arr_async = 500 * NSEC_PER_MSEC;
	/* Approximate rate to play or record a compressed HD video. */
	bfqd->bfq_wr_max_softrt_rate = 7000;
	bfq_init_peak_rate(bfqd);

	pthread_mutex_lock(&bfqd->lock);
	pthread_mutex_lock(&conf->lock);
	bfq_conf_apply(conf, bfqd);
	pthread_mutex_unlock(&conf->lock);
	pthread_mutex_unlock(&bfqd->lock);

	hctx->sched_data = bfqd;
	if (idx < conf->nr_hw)
		conf->bfqds[idx] = bfqd;
	return 0;
}

static void bfq_exit_hctx(struct mq_hw_ctx *hctx, unsigned int idx)
{
	struct bfq_data *bfqd = hctx->sched_data;
	struct bfq_conf *conf = hctx->queue->elevator->elevator_data;

	if (!bfqd)
		return;
	if (idx < conf->nr_hw)
		conf->bfqds[idx] = NULL;
	hctx->sched_data = NULL;
	bfq_free_bfqd(bfqd);
}

const struct elevator_type bfq_elv = {
	.elevator_name = "bfq",
	.ops =
		{
			.init_sched = bfq_init_queue,
			.exit_sched = bfq_exit_queue,
			.init_hctx = bfq_init_hctx,
			.exit_hctx = bfq_exit_hctx,
			.allow_merge = bfq_allow_bio_merge,
			.bio_merge = bfq_bio_merge,
			.request_merge = bfq_request_merge,
			.request_merged = bfq_request_merged,
			.requests_merged = bfq_requests_merged,
			.next_request = bfq_next_request,
			.former_request = bfq_former_request,
			.limit_depth = bfq_limit_depth,
			.prepare_request = bfq_prepare_request,
			.finish_request = bfq_finish_request,
			.insert_requests = bfq_insert_requests,
			.dispatch_request = bfq_dispatch_request,
			.has_work = bfq_has_work,
			.completed_request = bfq_completed_request_hook,
			.requeue_request = bfq_requeue_request,
		},
	.elevator_attrs = bfq_attrs,
};

/* ------------------------------------------------------------------ */
/* statistics                                                          */

static struct bfq_data *bfq_lookup_bfqd(struct mq_queue *q, unsigned int idx)
{
	if (!q->elevator || q->elevator->type != &bfq_elv ||
	    idx >= q->nr_hw_queues)
		return NULL;
	return q->queue_hw_ctx[idx]->sched_data;
}

int bfq_client_stats(struct mq_queue *q, unsigned int hctx, uint64_t client,
		     bool sync, struct bfq_client_stats *st)
{
	struct bfq_data *bfqd = bfq_lookup_bfqd(q, hctx);
	struct bfq_io_cq *bic;
	struct bfq_queue *bfqq;
	int err = ENOENT;

	if (!bfqd)
		return ENOENT;
	pthread_mutex_lock(&bfqd->lock);
	bic = bfq_bic_lookup(bfqd, client);
	bfqq = bic ? bic->bfqq[sync] : NULL;
	if (bfqq) {
		memset(st, 0, sizeof(*st));
		st->weight = bfqq->entity.weight;
		st->orig_weight = bfqq->entity.orig_weight;
		if (bfqq->entity.prio_changed) /* not yet applied */
			st->orig_weight = bfqq->entity.new_weight;
		st->wr_coeff = bfqq->wr_coeff;
		st->busy = bfq_bfqq_busy(bfqq);
		st->in_service = bfqq == bfqd->in_service_queue;
		st->idling = st->in_service && bfq_bfqq_wait_request(bfqq);
		st->budget = bfqq->entity.budget;
		st->service = bfqq->entity.service;
		st->charged = bfqq->stat_charged;
		st->ioprio_class = bfqq->new_ioprio_class;
		st->has_short_ttime = bfq_bfqq_has_short_ttime(bfqq);
		st->IO_bound = bfq_bfqq_IO_bound(bfqq);
		st->in_large_burst = bfq_bfqq_in_large_burst(bfqq);
		st->soft_rt = bfqq->wr_coeff > 1 &&
			      bfqq->wr_cur_max_time == bfqd->bfq_wr_rt_max_time;
		st->ttime_samples = bfqq->ttime.ttime_samples;
		st->ttime_mean = bfqq->ttime.ttime_mean;
		st->sectors = bfqq->stat_sectors;
		st->requests = bfqq->stat_requests;
		memcpy(st->group, bfqq->bfqg->name, sizeof(st->group));
		st->has_waker = bfqq->waker_bfqq != NULL;
		st->waker_client = st->has_waker ? bfqq->waker_bfqq->client : 0;
		st->waker_sync =
			st->has_waker && bfq_bfqq_sync(bfqq->waker_bfqq);
		st->inject_limit = bfqq->inject_limit;
		st->last_serv_time_ns = bfqq->last_serv_time_ns;
		st->queue_owner = bfqq->client;
		st->shared = bfq_bfqq_coop(bfqq);
		st->clients = bfqq->process_refs;
		err = 0;
	}
	pthread_mutex_unlock(&bfqd->lock);
	return err;
}

int bfq_set_clock(struct mq_queue *q, const _Atomic uint64_t *clock)
{
	struct bfq_data *bfqd;
	unsigned int i;

	if (!q->elevator || q->elevator->type != &bfq_elv)
		return ENOENT;
	for (i = 0; i < q->nr_hw_queues; i++) {
		bfqd = bfq_lookup_bfqd(q, i);
		if (!bfqd)
			continue;
		pthread_mutex_lock(&bfqd->lock);
		if (clock) {
			/* Continuous: the fake clock starts at bfq's now. */
			bfqd->test_clock_off =
				bfq_now(bfqd) -
				atomic_load_explicit(clock,
						     memory_order_relaxed);
		} else {
			bfqd->clock_base = mq_now_ns() - bfq_now(bfqd);
		}
		bfqd->test_clock = clock;
		pthread_mutex_unlock(&bfqd->lock);
	}
	return 0;
}

int bfq_stats(struct mq_queue *q, unsigned int hctx, struct bfq_stats *st)
{
	struct bfq_data *bfqd = bfq_lookup_bfqd(q, hctx);
	struct bfq_queue *in_serv;
	struct bfq_group *bfqg;

	if (!bfqd)
		return ENOENT;
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&bfqd->lock);
	/* sectors/usec << 16 to sectors/s */
	st->peak_rate = ((uint64_t)bfqd->peak_rate * 1000000) >> 16;
	st->max_budget =
		bfqd->budgets_assigned < 194 ? 16 * 1024 : bfqd->bfq_max_budget;
	st->hw_tag = bfqd->hw_tag;
	st->budgets_assigned = bfqd->budgets_assigned;
	st->busy_queues = bfqd->busy_queues;
	st->wr_busy_queues = bfqd->wr_busy_queues;
	st->rq_in_driver = bfqd->rq_in_driver;
	st->queued = bfqd->queued;
	in_serv = bfqd->in_service_queue;
	st->in_service = in_serv != NULL;
	st->in_service_client = in_serv ? in_serv->client : 0;
	st->idling = in_serv && bfq_bfqq_wait_request(in_serv);
	st->plugged = in_serv && !bfq_bfqq_wait_request(in_serv) &&
		      !in_serv->queued[0] && !in_serv->queued[1] &&
		      in_serv->dispatched > 0;
	st->nr_clients = bfqd->nr_bics;
	TAILQ_FOREACH (bfqg, &bfqd->groups, list)
		st->nr_groups++;
	pthread_mutex_unlock(&bfqd->lock);
	return 0;
}
