// SPDX-License-Identifier: GPL-2.0
/*
 * Clients: what Linux keeps per process in a bfq_io_cq.  A client is
 * named by rq->submitter (the NBD connection); it gets a sync and an
 * async queue, a weight (the "weights" tunable, "ID:WEIGHT ...", or the
 * default of an ioprio best-effort 4 process, 40) and a group.
 *
 * Linux frees a bfq_io_cq when its process exits; a connection that goes
 * away says nothing here, so a client is forgotten once it has had no
 * request for BFQ_BIC_IDLE_NS, checked on the oldest clients whenever a
 * new one arrives.  A returning client then starts afresh, as a new
 * process would.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bfq-iosched.h"
#include "../../server/mq/hash.h"

#define BFQ_BIC_IDLE_NS	  (10ull * NSEC_PER_SEC)
#define BFQ_BIC_HASH_BITS 6

static unsigned int bic_hash(uint64_t id, unsigned int bits)
{
	return hash_64(id, bits);
}

int bfq_bic_init(struct bfq_data *bfqd)
{
	bfqd->bic_hash_bits = BFQ_BIC_HASH_BITS;
	bfqd->bic_hash =
		calloc(1u << bfqd->bic_hash_bits, sizeof(*bfqd->bic_hash));
	TAILQ_INIT(&bfqd->bic_lru);
	return bfqd->bic_hash ? 0 : ENOMEM;
}

/* Teardown: no request is left, queues are freed by the caller. */
void bfq_bic_exit(struct bfq_data *bfqd)
{
	struct bfq_io_cq *bic;

	while ((bic = TAILQ_FIRST(&bfqd->bic_lru))) {
		TAILQ_REMOVE(&bfqd->bic_lru, bic, lru);
		free(bic);
	}
	free(bfqd->bic_hash);
	bfqd->bic_hash = NULL;
}

struct bfq_io_cq *bfq_bic_lookup(struct bfq_data *bfqd, uint64_t id)
{
	struct bfq_io_cq *bic = bfqd->last_bic;

	if (bic && bic->id == id)
		return bic;
	for (bic = bfqd->bic_hash[bic_hash(id, bfqd->bic_hash_bits)]; bic;
	     bic = bic->hash_next)
		if (bic->id == id)
			return bic;
	return NULL;
}

static void bic_hash_del(struct bfq_data *bfqd, struct bfq_io_cq *bic)
{
	struct bfq_io_cq **p =
		&bfqd->bic_hash[bic_hash(bic->id, bfqd->bic_hash_bits)];

	while (*p != bic)
		p = &(*p)->hash_next;
	*p = bic->hash_next;
}

/* Double the buckets when clients outnumber them twice; best effort. */
static void bic_hash_grow(struct bfq_data *bfqd)
{
	unsigned int bits = bfqd->bic_hash_bits + 1, i, h;
	struct bfq_io_cq **table, *bic, *next;

	if (bfqd->nr_bics <= 2u << bfqd->bic_hash_bits || bits > 20)
		return;
	table = calloc(1u << bits, sizeof(*table));
	if (!table)
		return;
	for (i = 0; i < 1u << bfqd->bic_hash_bits; i++) {
		for (bic = bfqd->bic_hash[i]; bic; bic = next) {
			next = bic->hash_next;
			h = bic_hash(bic->id, bits);
			bic->hash_next = table[h];
			table[h] = bic;
		}
	}
	free(bfqd->bic_hash);
	bfqd->bic_hash = table;
	bfqd->bic_hash_bits = bits;
}

/* The client goes away: bfq_exit_icq. */
static void bfq_bic_free(struct bfq_data *bfqd, struct bfq_io_cq *bic)
{
	int i;

	if (bic->stable_merge_bfqq) {
		bfq_put_stable_ref(bic->stable_merge_bfqq);
		bic->stable_merge_bfqq = NULL;
	}
	for (i = 1; i >= 0; i--) {
		struct bfq_queue *bfqq = bic->bfqq[i];

		if (bfqq) {
			bic->bfqq[i] = NULL;
			bfq_exit_bfqq(bfqd, bfqq);
		}
	}
	bfqg_put(bic->bfqg);
	bic_hash_del(bfqd, bic);
	TAILQ_REMOVE(&bfqd->bic_lru, bic, lru);
	if (bfqd->last_bic == bic)
		bfqd->last_bic = NULL;
	bfqd->nr_bics--;
	free(bic);
}

/* Forget up to two clients idle for long. */
static void bfq_bic_reap(struct bfq_data *bfqd, uint64_t now)
{
	struct bfq_io_cq *bic;
	int n;

	for (n = 0; n < 2; n++) {
		bic = TAILQ_FIRST(&bfqd->bic_lru);
		if (!bic || bic->nr_rqs ||
		    now - bic->last_used < BFQ_BIC_IDLE_NS)
			return;
		if ((bic->bfqq[1] &&
		     (bic->bfqq[1]->dispatched || bfq_bfqq_busy(bic->bfqq[1]))))
			return;
		bfq_bic_free(bfqd, bic);
	}
}

unsigned int bfq_conf_client_weight(struct bfq_conf *conf, uint64_t id)
{
	unsigned int i;

	for (i = 0; i < conf->nr_weights; i++)
		if (conf->weights[i].id == id)
			return conf->weights[i].weight;
	return BFQ_DEFAULT_QUEUE_WEIGHT;
}

/* Weight and group name for a client; conf->lock taken here. */
static void bfq_conf_map(struct bfq_conf *conf, uint64_t id,
			 const struct mq_client *client, unsigned int *weight,
			 char *group)
{
	const char *name;

	pthread_mutex_lock(&conf->lock);
	*weight = bfq_conf_client_weight(conf, id);
	name = bfq_conf_match_group(conf, client);
	if (name)
		memcpy(group, name, BFQ_GROUP_NAME_MAX);
	else
		group[0] = '\0';
	pthread_mutex_unlock(&conf->lock);
}

struct bfq_io_cq *bfq_bic_get(struct bfq_data *bfqd, uint64_t id,
			      const struct mq_client *client, uint64_t now)
{
	struct bfq_io_cq *bic = bfq_bic_lookup(bfqd, id);
	char group[BFQ_GROUP_NAME_MAX];
	unsigned int h;

	if (bic) {
		if (bic != TAILQ_LAST(&bfqd->bic_lru, bfq_bic_lru)) {
			TAILQ_REMOVE(&bfqd->bic_lru, bic, lru);
			TAILQ_INSERT_TAIL(&bfqd->bic_lru, bic, lru);
		}
		bic->last_used = now;
		bfqd->last_bic = bic;
		return bic;
	}
	bfq_bic_reap(bfqd, now);
	bic = calloc(1, sizeof(*bic));
	if (!bic)
		return NULL;
	bic->id = id;
	bic->last_used = now;
	bic->gen = bfqd->conf_gen;
	bfq_conf_map(bfqd->conf, id, client, &bic->weight, group);
	bic->bfqg = bfq_find_set_group(bfqd, group);
	bfqg_get(bic->bfqg);
	h = bic_hash(id, bfqd->bic_hash_bits);
	bic->hash_next = bfqd->bic_hash[h];
	bfqd->bic_hash[h] = bic;
	TAILQ_INSERT_TAIL(&bfqd->bic_lru, bic, lru);
	bfqd->nr_bics++;
	bfqd->last_bic = bic;
	bic_hash_grow(bfqd);
	return bic;
}

/*
 * The configuration changed since the client was mapped: apply its new
 * weight and group.  A sync queue of the client moves with it (as Linux
 * moves a process's queue to its new cgroup); the async one is dropped,
 * the next async request gets the right shared queue.
 */
void bfq_bic_update_conf(struct bfq_data *bfqd, struct bfq_io_cq *bic,
			 const struct mq_client *client, uint64_t now)
{
	char group[BFQ_GROUP_NAME_MAX];
	struct bfq_group *bfqg;
	unsigned int weight;
	struct bfq_queue *async_bfqq;

	bfq_conf_map(bfqd->conf, bic->id, client, &weight, group);
	bic->gen = bfqd->conf_gen;
	bfqg = bfq_find_set_group(bfqd, group);
	if (bfqg != bic->bfqg || weight != bic->weight) {
		async_bfqq = bic->bfqq[0];
		if (async_bfqq) {
			bic->bfqq[0] = NULL;
			bfq_release_process_ref(bfqd, async_bfqq);
		}
	}
	if (bfqg != bic->bfqg) {
		bfqg_get(bfqg);
		if (bic->bfqq[1])
			bfq_sync_bfqq_move(bfqd, bic, bfqg, now);
		bfqg_put(bic->bfqg);
		bic->bfqg = bfqg;
	}
	if (weight != bic->weight) {
		bic->weight = weight;
		if (bic->bfqq[1]) {
			bic->bfqq[1]->entity.new_weight = weight;
			bic->bfqq[1]->entity.prio_changed = true;
		}
	}
}

/* "ID:WEIGHT ...": all or nothing. */
int bfq_parse_weights(const char *s, struct bfq_weight_rule **rules,
		      unsigned int *nr)
{
	struct bfq_weight_rule *r = NULL, *nr_;
	unsigned int n = 0, i;
	unsigned long long id, w;
	const char *p = s;
	char *end;

	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		if (!isdigit((unsigned char)*p))
			goto inval;
		errno = 0;
		id = strtoull(p, &end, 10);
		if (errno || *end != ':')
			goto inval;
		p = end + 1;
		if (!isdigit((unsigned char)*p))
			goto inval;
		w = strtoull(p, &end, 10);
		if (errno || (*end && !isspace((unsigned char)*end)) ||
		    w < BFQ_MIN_WEIGHT || w > BFQ_MAX_WEIGHT)
			goto inval;
		p = end;
		for (i = 0; i < n; i++)
			if (r[i].id == id)
				goto inval;
		nr_ = realloc(r, (n + 1) * sizeof(*r));
		if (!nr_) {
			free(r);
			return ENOMEM;
		}
		r = nr_;
		r[n].id = id;
		r[n].weight = (unsigned int)w;
		n++;
	}
	*rules = r;
	*nr = n;
	return 0;
inval:
	free(r);
	return EINVAL;
}
