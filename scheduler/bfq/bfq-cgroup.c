// SPDX-License-Identifier: GPL-2.0
/*
 * Groups, after block/bfq-cgroup.c.  A group is what a cgroup is to Linux
 * BFQ: an entity with a weight, scheduled by B-WF2Q+ in the root group's
 * service tree, holding its own service tree of queues.  One level, like
 * cgroups directly under the root; clients not mapped to a group stay in
 * the root group, competing with the groups.
 *
 * Groups are defined by the "groups" tunable ("NAME:WEIGHT ...", weights
 * 1..1000, 100 when not given) and clients are mapped to them by the
 * "group_map" tunable: "user:PATTERN=NAME" matches the TLS user name,
 * "uid:N=NAME" the peer uid, "addr:PATTERN=NAME" the peer address;
 * patterns are fnmatch(3) globs and the first rule that matches wins.
 * Each scheduler instance makes the groups it needs on first use and
 * frees them when no queue, client or tree holds them.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfq-iosched.h"

static void bfq_init_sched_data(struct bfq_sched_data *sd)
{
	unsigned int i;

	sd->in_service_entity = NULL;
	sd->next_in_service = NULL;
	for (i = 0; i < BFQ_IOPRIO_CLASSES; i++)
		bfq_service_tree_init(&sd->service_tree[i]);
}

struct bfq_group *bfq_create_root_group(struct bfq_data *bfqd)
{
	struct bfq_group *bfqg = calloc(1, sizeof(*bfqg));

	if (!bfqg)
		return NULL;
	bfqg->bfqd = bfqd;
	bfqg->ref = 1; /* freed with the scheduler */
	bfq_init_sched_data(&bfqg->sched_data);
	bfqg->sched_data.bfq_class_idle_last_service = bfq_now(bfqd);
	TAILQ_INIT(&bfqg->async_queues);
	return bfqg;
}

void bfqg_get(struct bfq_group *bfqg)
{
	bfqg->ref++;
}

void bfqg_put(struct bfq_group *bfqg)
{
	if (--bfqg->ref || !bfqg->my_entity)
		return;
	/* Nothing refers to it: no queue, no client, not on a tree. */
	TAILQ_REMOVE(&bfqg->bfqd->groups, bfqg, list);
	free(bfqg);
}

/* The group called name, made if needed; the root group for NULL. */
struct bfq_group *bfq_find_set_group(struct bfq_data *bfqd, const char *name)
{
	struct bfq_group *bfqg;
	unsigned int weight;

	if (!name || !*name)
		return bfqd->root_group;
	TAILQ_FOREACH (bfqg, &bfqd->groups, list)
		if (!strcmp(bfqg->name, name))
			return bfqg;
	bfqg = calloc(1, sizeof(*bfqg));
	if (!bfqg)
		return bfqd->root_group; /* as Linux falls back to the root */
	pthread_mutex_lock(&bfqd->conf->lock);
	weight = bfq_conf_group_weight(bfqd->conf, name);
	pthread_mutex_unlock(&bfqd->conf->lock);
	bfqg->bfqd = bfqd;
	snprintf(bfqg->name, sizeof(bfqg->name), "%s", name);
	bfq_init_sched_data(&bfqg->sched_data);
	bfqg->sched_data.bfq_class_idle_last_service = bfq_now(bfqd);
	TAILQ_INIT(&bfqg->async_queues);
	bfqg->my_entity = &bfqg->entity;
	bfqg->entity.my_sched_data = &bfqg->sched_data;
	bfqg->entity.weight = bfqg->entity.orig_weight =
		bfqg->entity.new_weight = weight;
	/* Directly under the root group. */
	bfqg->entity.parent = NULL;
	bfqg->entity.sched_data = &bfqd->root_group->sched_data;
	TAILQ_INSERT_TAIL(&bfqd->groups, bfqg, list);
	return bfqg;
}

void bfq_free_groups(struct bfq_data *bfqd)
{
	struct bfq_group *bfqg;

	while ((bfqg = TAILQ_FIRST(&bfqd->groups))) {
		TAILQ_REMOVE(&bfqd->groups, bfqg, list);
		free(bfqg);
	}
	free(bfqd->root_group);
	bfqd->root_group = NULL;
}

/* A queue's entity in bfqg; the queue pins the group. */
void bfq_init_entity(struct bfq_entity *entity, struct bfq_group *bfqg)
{
	struct bfq_queue *bfqq = bfq_entity_to_bfqq(entity);

	entity->weight = entity->new_weight;
	entity->orig_weight = entity->new_weight;
	if (bfqq) {
		bfqg_get(bfqg);
		bfqq->bfqg = bfqg;
	}
	entity->parent = bfqg->my_entity; /* NULL for the root group */
	entity->sched_data = &bfqg->sched_data;
}

/*
 * Groups with requests queued or in flight; with more than one (the root
 * group included) the scenario is asymmetric and sync queues are idled
 * for, as in Linux 6.3 and later.
 */
void bfq_add_bfqq_in_groups_with_pending_reqs(struct bfq_queue *bfqq)
{
	struct bfq_entity *entity = &bfqq->entity;

	if (!entity->in_groups_with_pending_reqs) {
		entity->in_groups_with_pending_reqs = true;
		if (!(bfqq_group(bfqq)->num_queues_with_pending_reqs++))
			bfqq->bfqd->num_groups_with_pending_reqs++;
	}
}

void bfq_del_bfqq_in_groups_with_pending_reqs(struct bfq_queue *bfqq)
{
	struct bfq_entity *entity = &bfqq->entity;

	if (entity->in_groups_with_pending_reqs) {
		entity->in_groups_with_pending_reqs = false;
		if (!(--bfqq_group(bfqq)->num_queues_with_pending_reqs))
			bfqq->bfqd->num_groups_with_pending_reqs--;
	}
}

/*
 * Move bfqq to bfqg (a client was mapped to another group).  The caller
 * holds a reference to bfqq.
 */
void bfq_bfqq_move(struct bfq_data *bfqd, struct bfq_queue *bfqq,
		   struct bfq_group *bfqg, uint64_t now)
{
	struct bfq_entity *entity = &bfqq->entity;
	struct bfq_group *old = bfqq->bfqg;
	bool pending = entity->in_groups_with_pending_reqs;

	if (old == bfqg)
		return;
	/* An empty queue in service leaves the tree on expiration. */
	if (bfqq == bfqd->in_service_queue)
		bfq_bfqq_expire(bfqd, bfqq, false, BFQQE_PREEMPTED, now);
	if (bfq_bfqq_busy(bfqq))
		bfq_deactivate_bfqq(bfqd, bfqq, false, false);
	else if (entity->on_st)
		bfq_put_idle_entity(bfq_entity_service_tree(entity), entity);
	if (pending)
		bfq_del_bfqq_in_groups_with_pending_reqs(bfqq);
	if (bfqq->on_async_list) {
		TAILQ_REMOVE(&old->async_queues, bfqq, async_list);
		bfqq->on_async_list = false;
	}
	bfqg_get(bfqg);
	bfqq->bfqg = bfqg;
	entity->parent = bfqg->my_entity;
	entity->sched_data = &bfqg->sched_data;
	bfq_merge_bfqq_moved(bfqd, bfqq, old);
	bfqg_put(old);
	if (pending)
		bfq_add_bfqq_in_groups_with_pending_reqs(bfqq);
	if (bfq_bfqq_busy(bfqq))
		bfq_activate_bfqq(bfqd, bfqq);
	/* Called on insertion, which runs the queue after. */
}

unsigned int bfq_conf_group_weight(struct bfq_conf *conf, const char *name)
{
	unsigned int i;

	for (i = 0; i < conf->nr_groups; i++)
		if (!strcmp(conf->groups[i].name, name))
			return conf->groups[i].weight;
	return BFQ_DEFAULT_GRP_WEIGHT;
}

void bfq_update_group_weights(struct bfq_data *bfqd)
{
	struct bfq_group *bfqg;
	unsigned int w;

	TAILQ_FOREACH (bfqg, &bfqd->groups, list) {
		w = bfq_conf_group_weight(bfqd->conf, bfqg->name);
		/* Applied at the next (re)activation, as bfq_group_set_weight
		 */
		if (bfqg->entity.new_weight != w) {
			bfqg->entity.new_weight = w;
			bfqg->entity.prio_changed = true;
		}
	}
}

const char *bfq_conf_match_group(struct bfq_conf *conf,
				 const struct mq_client *client)
{
	const struct bfq_map_rule *r;
	unsigned int i;

	if (!client)
		return NULL;
	for (i = 0; i < conf->nr_rules; i++) {
		r = &conf->rules[i];
		switch (r->kind) {
		case BFQ_MAP_USER:
			if (client->tls_user[0] &&
			    !fnmatch(r->pattern, client->tls_user, 0))
				return r->group;
			break;
		case BFQ_MAP_UID:
			if (client->uid >= 0 && client->uid == r->uid)
				return r->group;
			break;
		case BFQ_MAP_ADDR:
			if (client->addr[0] &&
			    !fnmatch(r->pattern, client->addr, 0))
				return r->group;
			break;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* parsing                                                             */

bool bfq_valid_group_name(const char *name)
{
	size_t n = strlen(name), i;

	if (!n || n >= BFQ_GROUP_NAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_.-", name[i]))
			return false;
	return true;
}

/* Next whitespace-separated token of *s into tok; false at the end. */
static bool next_token(const char **s, char *tok, size_t len, bool *too_long)
{
	const char *p = *s, *start;
	size_t n;

	while (isspace((unsigned char)*p))
		p++;
	if (!*p)
		return false;
	start = p;
	while (*p && !isspace((unsigned char)*p))
		p++;
	n = (size_t)(p - start);
	*too_long = n >= len;
	if (!*too_long) {
		memcpy(tok, start, n);
		tok[n] = '\0';
	}
	*s = p;
	return true;
}

static bool parse_uint(const char *s, unsigned long long max,
		       unsigned long long *out)
{
	unsigned long long v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
		v = v * 10 + (unsigned long long)(*s - '0');
		if (v > max)
			return false;
	}
	*out = v;
	return true;
}

/* "NAME:WEIGHT ...": all or nothing. */
int bfq_parse_groups(const char *s, struct bfq_group_def **defs,
		     unsigned int *nr)
{
	struct bfq_group_def *d = NULL, *nd;
	unsigned int n = 0, i;
	unsigned long long w;
	char tok[128], *colon;
	bool too_long;

	while (next_token(&s, tok, sizeof(tok), &too_long)) {
		if (too_long)
			goto inval;
		colon = strchr(tok, ':');
		if (!colon)
			goto inval;
		*colon = '\0';
		if (!bfq_valid_group_name(tok) ||
		    !parse_uint(colon + 1, BFQ_MAX_WEIGHT, &w) ||
		    w < BFQ_MIN_WEIGHT)
			goto inval;
		for (i = 0; i < n; i++)
			if (!strcmp(d[i].name, tok))
				goto inval;
		nd = realloc(d, (n + 1) * sizeof(*d));
		if (!nd) {
			free(d);
			return ENOMEM;
		}
		d = nd;
		memcpy(d[n].name, tok, strlen(tok) + 1); /* checked length */
		d[n].weight = (unsigned int)w;
		n++;
	}
	*defs = d;
	*nr = n;
	return 0;
inval:
	free(d);
	return EINVAL;
}

/* "KIND:VALUE=GROUP ...": all or nothing. */
int bfq_parse_group_map(const char *s, struct bfq_map_rule **rules,
			unsigned int *nr)
{
	struct bfq_map_rule *r = NULL, *nr_;
	unsigned int n = 0;
	char tok[256], *colon, *eq, *value;
	unsigned long long uid;
	enum bfq_map_kind kind;
	bool too_long;

	while (next_token(&s, tok, sizeof(tok), &too_long)) {
		if (too_long)
			goto inval;
		colon = strchr(tok, ':');
		eq = strrchr(tok, '=');
		if (!colon || !eq || eq < colon)
			goto inval;
		*colon = *eq = '\0';
		value = colon + 1;
		if (!strcmp(tok, "user"))
			kind = BFQ_MAP_USER;
		else if (!strcmp(tok, "uid"))
			kind = BFQ_MAP_UID;
		else if (!strcmp(tok, "addr"))
			kind = BFQ_MAP_ADDR;
		else
			goto inval;
		if (!*value || strlen(value) >= BFQ_MAP_VALUE_MAX ||
		    !bfq_valid_group_name(eq + 1))
			goto inval;
		if (kind == BFQ_MAP_UID && !parse_uint(value, INT32_MAX, &uid))
			goto inval;
		nr_ = realloc(r, (n + 1) * sizeof(*r));
		if (!nr_) {
			free(r);
			return ENOMEM;
		}
		r = nr_;
		memset(&r[n], 0, sizeof(r[n]));
		r[n].kind = kind;
		r[n].uid = kind == BFQ_MAP_UID ? (long)uid : -1;
		memcpy(r[n].pattern, value, strlen(value) + 1);
		memcpy(r[n].group, eq + 1, strlen(eq + 1) + 1);
		n++;
	}
	*rules = r;
	*nr = n;
	return 0;
inval:
	free(r);
	return EINVAL;
}
