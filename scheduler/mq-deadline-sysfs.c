/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mq-deadline tunables, queue/iosched/ in sysfs, in Linux units: expiry
 * times in milliseconds, the rest plain integers.  As in Linux a store
 * takes what kstrtoint() takes (mq_attr_number(), the syntax every
 * scheduler's tunables share) and clamps a number outside the tunable's
 * range into it; text that is not a number is refused with EINVAL, one
 * that does not fit an int with ERANGE.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "mq-deadline.h"
#include "../server/mq/params.h"

static int dd_store_int(_Atomic int *var, const char *value, int min, int max)
{
	int64_t v;
	int err = mq_attr_number(value, INT_MIN, INT_MAX, &v);

	if (err)
		return err;
	if (v < min)
		v = min;
	else if (v > max)
		v = max;
	atomic_store(var, (int)v);
	return 0;
}

static ssize_t dd_show_int(char *buf, size_t len, long long v)
{
	int n = snprintf(buf, len, "%lld", v);

	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

#define DD_ATTR_INT(name, field, min, max)                                     \
	static ssize_t deadline_##name##_show(struct elevator_queue *e,        \
					      char *buf, size_t len)           \
	{                                                                      \
		struct deadline_data *dd = e->elevator_data;                   \
                                                                               \
		return dd_show_int(buf, len, atomic_load(&dd->field));         \
	}                                                                      \
	static int deadline_##name##_store(struct elevator_queue *e,           \
					   const char *value)                  \
	{                                                                      \
		struct deadline_data *dd = e->elevator_data;                   \
                                                                               \
		return dd_store_int(&dd->field, value, min, max);              \
	}

DD_ATTR_INT(read_expire, fifo_expire[DD_READ], 0, INT_MAX)
DD_ATTR_INT(write_expire, fifo_expire[DD_WRITE], 0, INT_MAX)
DD_ATTR_INT(prio_aging_expire, prio_aging_expire, 0, INT_MAX)
DD_ATTR_INT(writes_starved, writes_starved, INT_MIN, INT_MAX)
DD_ATTR_INT(front_merges, front_merges, 0, 1)
DD_ATTR_INT(fifo_batch, fifo_batch, 0, INT_MAX)

static ssize_t deadline_async_depth_show(struct elevator_queue *e, char *buf,
					 size_t len)
{
	struct deadline_data *dd = e->elevator_data;

	return dd_show_int(buf, len, atomic_load(&dd->async_depth));
}

static int deadline_async_depth_store(struct elevator_queue *e,
				      const char *value)
{
	struct deadline_data *dd = e->elevator_data;
	int64_t v;
	int err = mq_attr_number(value, INT_MIN, INT_MAX, &v);

	if (err)
		return err;
	atomic_store(&dd->async_depth, v < 1 ? 1u : (unsigned int)v);
	return 0;
}

#define DD_ATTR(name)                                                          \
	{                                                                      \
#name, deadline_##name##_show, deadline_##name##_store         \
	}

const struct elv_fs_entry deadline_attrs[] = {
	DD_ATTR(read_expire),	    DD_ATTR(write_expire),
	DD_ATTR(writes_starved),    DD_ATTR(front_merges),
	DD_ATTR(async_depth),	    DD_ATTR(fifo_batch),
	DD_ATTR(prio_aging_expire), {NULL},
};
