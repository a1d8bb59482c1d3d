// SPDX-License-Identifier: GPL-2.0
/*
 * BFQ's tunables (queue/iosched/ in Linux), with Linux's names, units,
 * defaults and clamping:
 *
 *   slice_idle         8     ms to wait for a sync queue's next request
 *   slice_idle_us      8000  the same in us
 *   fifo_expire_sync   125   ms before a sync request is served out of order
 *   fifo_expire_async  250   ms, the same for async requests
 *   back_seek_max      16384 KiB: longest backward seek worth taking
 *   back_seek_penalty  2     cost of a backward seek over a forward one
 *   max_budget         0     sectors; 0 = auto-tuned from the peak rate
 *   timeout_sync       125   ms a queue may keep the device (budget timeout)
 *   low_latency        1     weight raising of interactive/soft rt clients
 *   strict_guarantees  0     1: always idle for sync queues, one request
 *                            at a time in the device; raises slice_idle to
 *                            8 ms if lower
 *
 * and, for what Linux gets from ioprio and cgroups:
 *
 *   weights    "ID:WEIGHT ..."  weight (1..1000) of clients by id; others
 *                               get 40, as an ioprio best-effort 4 process
 *   groups     "NAME:WEIGHT ..." groups and their weights (1..1000); a
 *                               group named only in group_map weighs 100
 *   group_map  "KIND:VALUE=NAME ..." which clients go to which group:
 *                               user:PATTERN (TLS user), uid:N (peer uid),
 *                               addr:PATTERN (peer address); PATTERN is a
 *                               glob, the first matching rule wins, the
 *                               others stay in the root group
 *
 * Each write replaces the whole list.  Clients pick up changes of these
 * three at their next request.  Unparsable values are refused (EINVAL);
 * numbers out of range are clamped as Linux does.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfq-iosched.h"
#include "../../server/mq/params.h"

/* Linux's defaults, as bfq_init_queue sets them. */
void bfq_conf_init(struct bfq_conf *conf)
{
	conf->fifo_expire[0] = NSEC_PER_SEC / 4;
	conf->fifo_expire[1] = NSEC_PER_SEC / 8;
	conf->slice_idle = NSEC_PER_SEC / 125;
	conf->timeout = NSEC_PER_SEC / 8;
	conf->back_max = 16 * 1024;
	conf->back_penalty = 2;
	conf->user_max_budget = 0;
	conf->strict_guarantees = false;
	conf->low_latency = true;
}

/* A new instance takes the current configuration; both locks held. */
void bfq_conf_apply(struct bfq_conf *conf, struct bfq_data *bfqd)
{
	bfqd->bfq_fifo_expire[0] = conf->fifo_expire[0];
	bfqd->bfq_fifo_expire[1] = conf->fifo_expire[1];
	bfqd->bfq_slice_idle = conf->slice_idle;
	bfqd->bfq_timeout = conf->timeout;
	bfqd->bfq_back_max = conf->back_max;
	bfqd->bfq_back_penalty = conf->back_penalty;
	bfqd->bfq_user_max_budget = conf->user_max_budget;
	if (conf->user_max_budget)
		bfqd->bfq_max_budget = conf->user_max_budget;
	bfqd->strict_guarantees = conf->strict_guarantees;
	bfqd->low_latency = conf->low_latency;
	bfqd->conf_gen = conf->gen;
}

typedef void bfq_apply_fn(struct bfq_data *bfqd, struct bfq_conf *conf);

/* Apply a stored value to every instance (lock order: bfqd, conf). */
static void bfq_for_each_bfqd(struct bfq_conf *conf, bfq_apply_fn *fn)
{
	unsigned int i;

	for (i = 0; i < conf->nr_hw; i++) {
		struct bfq_data *bfqd = conf->bfqds[i];

		if (!bfqd)
			continue;
		pthread_mutex_lock(&bfqd->lock);
		pthread_mutex_lock(&conf->lock);
		fn(bfqd, conf);
		pthread_mutex_unlock(&conf->lock);
		pthread_mutex_unlock(&bfqd->lock);
	}
}

/* kstrtoul, in the syntax every scheduler's tunables share. */
static int bfq_var_store(const char *s, unsigned long long *v)
{
	int64_t val;
	int err = mq_attr_number(s, 0, INT64_MAX, &val);

	if (!err)
		*v = (unsigned long long)val;
	return err;
}

static unsigned long long
clamp_ull(unsigned long long v, unsigned long long min, unsigned long long max)
{
	return v < min ? min : v > max ? max : v;
}

static struct bfq_conf *eq_conf(struct elevator_queue *eq)
{
	return eq->elevator_data;
}

static ssize_t bfq_show_u64(struct elevator_queue *eq, char *buf, size_t len,
			    const uint64_t *field, uint64_t div)
{
	struct bfq_conf *conf = eq_conf(eq);
	unsigned long long v;
	int n;

	pthread_mutex_lock(&conf->lock);
	v = *field / div;
	pthread_mutex_unlock(&conf->lock);
	n = snprintf(buf, len, "%llu\n", v);
	return n < 0 ? -1 : (ssize_t)((size_t)n < len ? (size_t)n : len - 1);
}

/* ---------------- times ---------------- */

static void apply_times(struct bfq_data *bfqd, struct bfq_conf *conf)
{
	bfqd->bfq_fifo_expire[0] = conf->fifo_expire[0];
	bfqd->bfq_fifo_expire[1] = conf->fifo_expire[1];
	bfqd->bfq_slice_idle = conf->slice_idle;
}

static int bfq_store_time(struct elevator_queue *eq, const char *value,
			  uint64_t *field, unsigned long long min,
			  unsigned long long max, uint64_t unit)
{
	struct bfq_conf *conf = eq_conf(eq);
	unsigned long long v;
	int err = bfq_var_store(value, &v);

	if (err)
		return err;
	v = clamp_ull(v, min, max);
	pthread_mutex_lock(&conf->lock);
	*field = v * unit;
	pthread_mutex_unlock(&conf->lock);
	bfq_for_each_bfqd(conf, apply_times);
	return 0;
}

static ssize_t fifo_expire_sync_show(struct elevator_queue *eq, char *buf,
				     size_t len)
{
	return bfq_show_u64(eq, buf, len, &eq_conf(eq)->fifo_expire[1],
			    NSEC_PER_MSEC);
}

static int fifo_expire_sync_store(struct elevator_queue *eq, const char *v)
{
	return bfq_store_time(eq, v, &eq_conf(eq)->fifo_expire[1], 1, INT_MAX,
			      NSEC_PER_MSEC);
}

static ssize_t fifo_expire_async_show(struct elevator_queue *eq, char *buf,
				      size_t len)
{
	return bfq_show_u64(eq, buf, len, &eq_conf(eq)->fifo_expire[0],
			    NSEC_PER_MSEC);
}

static int fifo_expire_async_store(struct elevator_queue *eq, const char *v)
{
	return bfq_store_time(eq, v, &eq_conf(eq)->fifo_expire[0], 1, INT_MAX,
			      NSEC_PER_MSEC);
}

static ssize_t slice_idle_show(struct elevator_queue *eq, char *buf, size_t len)
{
	return bfq_show_u64(eq, buf, len, &eq_conf(eq)->slice_idle,
			    NSEC_PER_MSEC);
}

static int slice_idle_store(struct elevator_queue *eq, const char *v)
{
	return bfq_store_time(eq, v, &eq_conf(eq)->slice_idle, 0, INT_MAX,
			      NSEC_PER_MSEC);
}

static ssize_t slice_idle_us_show(struct elevator_queue *eq, char *buf,
				  size_t len)
{
	return bfq_show_u64(eq, buf, len, &eq_conf(eq)->slice_idle,
			    NSEC_PER_USEC);
}

static int slice_idle_us_store(struct elevator_queue *eq, const char *v)
{
	return bfq_store_time(eq, v, &eq_conf(eq)->slice_idle, 0, UINT_MAX,
			      NSEC_PER_USEC);
}

static void apply_timeout(struct bfq_data *bfqd, struct bfq_conf *conf)
{
	bfqd->bfq_timeout = conf->timeout;
	if (bfqd->bfq_user_max_budget == 0)
		bfqd->bfq_max_budget = bfq_calc_max_budget(bfqd);
}

static ssize_t timeout_sync_show(struct elevator_queue *eq, char *buf,
				 size_t len)
{
	return bfq_show_u64(eq, buf, len, &eq_conf(eq)->timeout, NSEC_PER_MSEC);
}

/* Named after CFQ's, but the timeout is for sync and async queues. */
static int timeout_sync_store(struct elevator_queue *eq, const char *value)
{
	struct bfq_conf *conf = eq_conf(eq);
	unsigned long long v;
	int err = bfq_var_store(value, &v);

	if (err)
		return err;
	v = clamp_ull(v, 1, INT_MAX);
	pthread_mutex_lock(&conf->lock);
	conf->timeout = v * NSEC_PER_MSEC;
	pthread_mutex_unlock(&conf->lock);
	bfq_for_each_bfqd(conf, apply_timeout);
	return 0;
}

/* ---------------- integers ---------------- */

static ssize_t bfq_show_uint(struct elevator_queue *eq, char *buf, size_t len,
			     const void *field, size_t size)
{
	struct bfq_conf *conf = eq_conf(eq);
	unsigned long long v;
	int n;

	pthread_mutex_lock(&conf->lock);
	if (size == sizeof(bool))
		v = *(const bool *)field;
	else
		v = *(const unsigned int *)field;
	pthread_mutex_unlock(&conf->lock);
	n = snprintf(buf, len, "%llu\n", v);
	return n < 0 ? -1 : (ssize_t)((size_t)n < len ? (size_t)n : len - 1);
}

static void apply_seek(struct bfq_data *bfqd, struct bfq_conf *conf)
{
	bfqd->bfq_back_max = conf->back_max;
	bfqd->bfq_back_penalty = conf->back_penalty;
}

static int bfq_store_seek(struct elevator_queue *eq, const char *value,
			  unsigned int *field, unsigned long long min)
{
	struct bfq_conf *conf = eq_conf(eq);
	unsigned long long v;
	int err = bfq_var_store(value, &v);

	if (err)
		return err;
	v = clamp_ull(v, min, INT_MAX);
	pthread_mutex_lock(&conf->lock);
	*field = (unsigned int)v;
	pthread_mutex_unlock(&conf->lock);
	bfq_for_each_bfqd(conf, apply_seek);
	return 0;
}

static ssize_t back_seek_max_show(struct elevator_queue *eq, char *buf,
				  size_t len)
{
	return bfq_show_uint(eq, buf, len, &eq_conf(eq)->back_max,
			     sizeof(unsigned int));
}

static int back_seek_max_store(struct elevator_queue *eq, const char *v)
{
	return bfq_store_seek(eq, v, &eq_conf(eq)->back_max, 0);
}

static ssize_t back_seek_penalty_show(struct elevator_queue *eq, char *buf,
				      size_t len)
{
	return bfq_show_uint(eq, buf, len, &eq_conf(eq)->back_penalty,
			     sizeof(unsigned int));
}

static int back_seek_penalty_store(struct elevator_queue *eq, const char *v)
{
	return bfq_store_seek(eq, v, &eq_conf(eq)->back_penalty, 1);
}

static void apply_max_budget(struct bfq_data *bfqd, struct bfq_conf *conf)
{
	bfqd->bfq_user_max_budget = conf->user_max_budget;
	if (conf->user_max_budget == 0)
		bfqd->bfq_max_budget = bfq_calc_max_budget(bfqd);
	else
		bfqd->bfq_max_budget = conf->user_max_budget;
}

static ssize_t max_budget_show(struct elevator_queue *eq, char *buf, size_t len)
{
	return bfq_show_uint(eq, buf, len, &eq_conf(eq)->user_max_budget,
			     sizeof(unsigned int));
}

static int max_budget_store(struct elevator_queue *eq, const char *value)
{
	struct bfq_conf *conf = eq_conf(eq);
	unsigned long long v;
	int err = bfq_var_store(value, &v);

	if (err)
		return err;
	v = clamp_ull(v, 0, INT_MAX);
	pthread_mutex_lock(&conf->lock);
	conf->user_max_budget = (int)v;
	pthread_mutex_unlock(&conf->lock);
	bfq_for_each_bfqd(conf, apply_max_budget);
	return 0;
}

static void apply_strict(struct bfq_data *bfqd, struct bfq_conf *conf)
{
	bfqd->bfq_slice_idle = conf->slice_idle;
	bfqd->strict_guarantees = conf->strict_guarantees;
}

static ssize_t strict_guarantees_show(struct elevator_queue *eq, char *buf,
				      size_t len)
{
	return bfq_show_uint(eq, buf, len, &eq_conf(eq)->strict_guarantees,
			     sizeof(bool));
}

static int strict_guarantees_store(struct elevator_queue *eq, const char *value)
{
	struct bfq_conf *conf = eq_conf(eq);
	unsigned long long v;
	int err = bfq_var_store(value, &v);

	if (err)
		return err;
	if (v > 1)
		v = 1;
	pthread_mutex_lock(&conf->lock);
	if (!conf->strict_guarantees && v == 1 &&
	    conf->slice_idle < 8 * NSEC_PER_MSEC)
		conf->slice_idle = 8 * NSEC_PER_MSEC;
	conf->strict_guarantees = v;
	pthread_mutex_unlock(&conf->lock);
	bfq_for_each_bfqd(conf, apply_strict);
	return 0;
}

static void apply_low_latency(struct bfq_data *bfqd, struct bfq_conf *conf)
{
	if (!conf->low_latency && bfqd->low_latency)
		bfq_end_wr(bfqd);
	bfqd->low_latency = conf->low_latency;
}

static ssize_t low_latency_show(struct elevator_queue *eq, char *buf,
				size_t len)
{
	return bfq_show_uint(eq, buf, len, &eq_conf(eq)->low_latency,
			     sizeof(bool));
}

static int low_latency_store(struct elevator_queue *eq, const char *value)
{
	struct bfq_conf *conf = eq_conf(eq);
	unsigned long long v;
	int err = bfq_var_store(value, &v);

	if (err)
		return err;
	pthread_mutex_lock(&conf->lock);
	conf->low_latency = v > 0;
	pthread_mutex_unlock(&conf->lock);
	bfq_for_each_bfqd(conf, apply_low_latency);
	return 0;
}

/* ---------------- clients and groups ---------------- */

static void apply_gen(struct bfq_data *bfqd, struct bfq_conf *conf)
{
	bfqd->conf_gen = conf->gen;
}

static void apply_groups(struct bfq_data *bfqd, struct bfq_conf *conf)
{
	bfqd->conf_gen = conf->gen;
	bfq_update_group_weights(bfqd);
}

/* Append to buf at *pos, keeping it terminated; truncates silently. */
static void buf_add(char *buf, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void buf_add(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos + 1 >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos = *pos + (size_t)n < len ? *pos + (size_t)n : len - 1;
}

static ssize_t weights_show(struct elevator_queue *eq, char *buf, size_t len)
{
	struct bfq_conf *conf = eq_conf(eq);
	size_t pos = 0;
	unsigned int i;

	if (!len)
		return 0;
	buf[0] = '\0';
	pthread_mutex_lock(&conf->lock);
	for (i = 0; i < conf->nr_weights; i++)
		buf_add(buf, len, &pos, "%s%llu:%u", i ? " " : "",
			(unsigned long long)conf->weights[i].id,
			conf->weights[i].weight);
	pthread_mutex_unlock(&conf->lock);
	buf_add(buf, len, &pos, "\n");
	return (ssize_t)pos;
}

static int weights_store(struct elevator_queue *eq, const char *value)
{
	struct bfq_conf *conf = eq_conf(eq);
	struct bfq_weight_rule *rules, *old;
	unsigned int nr;
	int err = bfq_parse_weights(value, &rules, &nr);

	if (err)
		return err;
	pthread_mutex_lock(&conf->lock);
	old = conf->weights;
	conf->weights = rules;
	conf->nr_weights = nr;
	conf->gen++;
	pthread_mutex_unlock(&conf->lock);
	free(old);
	bfq_for_each_bfqd(conf, apply_gen);
	return 0;
}

static ssize_t groups_show(struct elevator_queue *eq, char *buf, size_t len)
{
	struct bfq_conf *conf = eq_conf(eq);
	size_t pos = 0;
	unsigned int i;

	if (!len)
		return 0;
	buf[0] = '\0';
	pthread_mutex_lock(&conf->lock);
	for (i = 0; i < conf->nr_groups; i++)
		buf_add(buf, len, &pos, "%s%s:%u", i ? " " : "",
			conf->groups[i].name, conf->groups[i].weight);
	pthread_mutex_unlock(&conf->lock);
	buf_add(buf, len, &pos, "\n");
	return (ssize_t)pos;
}

static int groups_store(struct elevator_queue *eq, const char *value)
{
	struct bfq_conf *conf = eq_conf(eq);
	struct bfq_group_def *defs, *old;
	unsigned int nr;
	int err = bfq_parse_groups(value, &defs, &nr);

	if (err)
		return err;
	pthread_mutex_lock(&conf->lock);
	old = conf->groups;
	conf->groups = defs;
	conf->nr_groups = nr;
	conf->gen++;
	pthread_mutex_unlock(&conf->lock);
	free(old);
	bfq_for_each_bfqd(conf, apply_groups);
	return 0;
}

static const char *const bfq_map_kind_names[] = {
	[BFQ_MAP_USER] = "user",
	[BFQ_MAP_UID] = "uid",
	[BFQ_MAP_ADDR] = "addr",
};

static ssize_t group_map_show(struct elevator_queue *eq, char *buf, size_t len)
{
	struct bfq_conf *conf = eq_conf(eq);
	size_t pos = 0;
	unsigned int i;

	if (!len)
		return 0;
	buf[0] = '\0';
	pthread_mutex_lock(&conf->lock);
	for (i = 0; i < conf->nr_rules; i++) {
		const struct bfq_map_rule *r = &conf->rules[i];

		buf_add(buf, len, &pos, "%s%s:%s=%s", i ? " " : "",
			bfq_map_kind_names[r->kind], r->pattern, r->group);
	}
	pthread_mutex_unlock(&conf->lock);
	buf_add(buf, len, &pos, "\n");
	return (ssize_t)pos;
}

static int group_map_store(struct elevator_queue *eq, const char *value)
{
	struct bfq_conf *conf = eq_conf(eq);
	struct bfq_map_rule *rules, *old;
	unsigned int nr;
	int err = bfq_parse_group_map(value, &rules, &nr);

	if (err)
		return err;
	pthread_mutex_lock(&conf->lock);
	old = conf->rules;
	conf->rules = rules;
	conf->nr_rules = nr;
	conf->gen++;
	pthread_mutex_unlock(&conf->lock);
	free(old);
	bfq_for_each_bfqd(conf, apply_gen);
	return 0;
}

#define BFQ_ATTR(name)                                                         \
	{                                                                      \
#name, name##_show, name##_store                               \
	}

const struct elv_fs_entry bfq_attrs[] = {
	BFQ_ATTR(fifo_expire_sync),  BFQ_ATTR(fifo_expire_async),
	BFQ_ATTR(back_seek_max),     BFQ_ATTR(back_seek_penalty),
	BFQ_ATTR(slice_idle),	     BFQ_ATTR(slice_idle_us),
	BFQ_ATTR(max_budget),	     BFQ_ATTR(timeout_sync),
	BFQ_ATTR(strict_guarantees), BFQ_ATTR(low_latency),
	BFQ_ATTR(weights),	     BFQ_ATTR(groups),
	BFQ_ATTR(group_map),	     {NULL},
};
