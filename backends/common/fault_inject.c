// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection with the semantics of Linux lib/fault-inject.c
 * (should_fail_ex): times, space, interval and probability, checked in
 * that order.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "fault_inject.h"
#include "../../server/mq/blk-mq.h"

void fault_attr_init(struct fault_attr *attr)
{
	*attr = (struct fault_attr){
		.interval = 1,
		.times = 1,
	};
	pthread_mutex_init(&attr->lock, NULL);
	/* Any non-zero seed will do; vary it between attributes and runs. */
	attr->rand_state = mq_now_ns() ^ (uintptr_t)attr;
	if (!attr->rand_state)
		attr->rand_state = 0x9e3779b97f4a7c15ull;
}

void fault_attr_destroy(struct fault_attr *attr)
{
	pthread_mutex_destroy(&attr->lock);
}

/* One decimal field of the list, followed by sep; -1 if malformed. */
static int parse_field(const char **s, long long min, long long max, char sep,
		       long long *out)
{
	const char *p = *s;
	bool neg = *p == '-';
	unsigned long long v = 0;

	if (neg)
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (unsigned long long)LLONG_MAX / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (*p != sep || v > (unsigned long long)LLONG_MAX)
		return -1;
	*out = neg ? -(long long)v : (long long)v;
	if (*out < min || *out > max)
		return -1;
	*s = sep ? p + 1 : p;
	return 0;
}

int fault_attr_parse(struct fault_attr *attr, const char *str, struct mq_err *e)
{
	long long interval, probability, space, times;
	const char *p = str;

	if (parse_field(&p, 0, LONG_MAX, ',', &interval) ||
	    parse_field(&p, 0, 100, ',', &probability) ||
	    parse_field(&p, 0, LONG_MAX, ',', &space) ||
	    parse_field(&p, -1, LONG_MAX, '\0', &times))
		return mq_err_set(
			e,
			"must be interval,probability,space,times (integers; probability 0 to 100; times -1 for no limit)");

	pthread_mutex_lock(&attr->lock);
	attr->interval = interval;
	attr->probability = probability;
	attr->space = space;
	attr->times = times;
	attr->count = 0;
	atomic_store(&attr->enabled, true);
	pthread_mutex_unlock(&attr->lock);
	return 0;
}

/* xorshift64: fast and good enough to pick which requests fail. */
static uint32_t rand_below_100(struct fault_attr *attr)
{
	uint64_t x = attr->rand_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	attr->rand_state = x;
	return (uint32_t)(((x >> 32) * 100) >> 32);
}

static bool __should_fail(struct fault_attr *attr, uint64_t size)
{
	if (attr->probability == 0 || attr->times == 0)
		return false;

	if (attr->space > size) {
		attr->space -= size;
		return false;
	}

	if (attr->interval > 1) {
		attr->count++;
		if (attr->count % attr->interval)
			return false;
	}

	if (attr->probability <= rand_below_100(attr))
		return false;

	if (attr->times > 0)
		attr->times--;
	return true;
}

bool should_fail(struct fault_attr *attr, uint64_t size)
{
	bool fail;

	/* The common case, never armed, takes no lock. */
	if (!atomic_load_explicit(&attr->enabled, memory_order_acquire))
		return false;
	pthread_mutex_lock(&attr->lock);
	fail = __should_fail(attr, size);
	pthread_mutex_unlock(&attr->lock);
	return fail;
}
