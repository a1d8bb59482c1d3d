// SPDX-License-Identifier: GPL-2.0
/*
 * The default scheduler policy, row by row as docs/design.md "Default
 * scheduler policy" has it:
 *
 *   1  the tag set has NO_SCHED             none, and no other may be set
 *   2  the driver asks NO_SCHED_BY_DEFAULT  none
 *   3  nr_hw_queues != 1 (unless row 4)     none
 *   4  zoned, sequential-write-required,    mq-deadline, whatever the number
 *      with zone_write_plugging=0           of hw queues; bfq, kyber refused
 *   5  single queue                         bfq, else mq-deadline, else none
 *
 * Row 4 is looked at before row 3, as Linux 5.4 to 6.9 gave every zoned
 * disk mq-deadline (ELEVATOR_F_ZBD_SEQ_WRITE).  With zone write plugging
 * on (the default, Linux 6.10) the core keeps each zone's write order and
 * a zoned disk takes rows 3 and 5 like any other.
 *
 * A rules file overrides rows 2 to 5 and an explicit scheduler= key
 * overrides the rules.  Neither can get past row 1 or the zoned check.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"
#include "rules.h"
#include "../server/mq/log.h"

#define REASON_MAX sizeof(((struct mq_queue *)0)->sched_reason)

static const char *elv_name(const struct elevator_type *et)
{
	return et ? et->elevator_name : "none";
}

void elv_known_names(char *buf, size_t len)
{
	size_t used;
	unsigned int i;

	if (!len)
		return;
	snprintf(buf, len, "none");
	for (i = 0; mq_elevators[i]; i++) {
		used = strlen(buf);
		snprintf(buf + used, len - used, ", %s",
			 mq_elevators[i]->elevator_name);
	}
}

int elv_lookup(const char *name, const struct elevator_type **et,
	       struct mq_err *e)
{
	char known[256];

	*et = NULL;
	if (!strcmp(name, "none"))
		return 0;
	*et = elevator_find(name);
	if (*et)
		return 0;
	elv_known_names(known, sizeof(known));
	return mq_err_set(e, "unknown scheduler '%s' (known: %s)", name, known);
}

/*
 * Host-managed, with at least one zone past the conventional ones, and
 * the order of its writes left to the scheduler (zone write plugging off).
 */
static bool has_seq_zones(struct gendisk *disk)
{
	const struct queue_limits *lim = &disk->queue->limits;

	if (lim->zoned != BLK_ZONED_HM || disk->queue->zone_write_plugging)
		return false;
	if (!lim->chunk_sectors)
		return true;
	return (uint64_t)lim->nr_conv_zones * lim->chunk_sectors <
	       get_capacity(disk);
}

/*
 * Schedulers that keep the order of writes to a sequential zone: what
 * Linux calls ELEVATOR_F_ZBD_SEQ_WRITE, which only mq-deadline has (its
 * zone write locking).  bfq and kyber reorder writes freely.
 */
static bool keeps_zone_write_order(const struct elevator_type *et)
{
	return !et || !strcmp(et->elevator_name, "mq-deadline");
}

int elv_policy_check(struct gendisk *disk, const struct elevator_type *et,
		     struct mq_err *e)
{
	struct mq_queue *q = disk->queue;

	if (et && (q->tag_set->flags & MQ_F_NO_SCHED))
		return mq_err_set(
			e,
			"%s takes no I/O scheduler (its tag set has NO_SCHED): only none",
			disk->disk_name);
	if (has_seq_zones(disk) && !keeps_zone_write_order(et))
		return mq_err_set(
			e,
			"%s does not keep write order on sequential zones (%s is zoned host-managed, zone_write_plugging=0): use mq-deadline or none",
			et->elevator_name, disk->disk_name);
	return 0;
}

const struct elevator_type *elv_policy_default(struct gendisk *disk,
					       char *reason, size_t len)
{
	struct mq_queue *q = disk->queue;
	unsigned int flags = q->tag_set->flags;
	const struct elevator_type *et;

	if (flags & MQ_F_NO_SCHED) {
		snprintf(reason, len, "row 1: NO_SCHED");
		return NULL;
	}
	if (flags & MQ_F_NO_SCHED_BY_DEFAULT) {
		snprintf(reason, len, "row 2: NO_SCHED_BY_DEFAULT");
		return NULL;
	}
	if (has_seq_zones(disk)) {
		snprintf(reason, len, "row 4: zoned host-managed");
		return elevator_find("mq-deadline");
	}
	if (q->nr_hw_queues != 1) {
		snprintf(reason, len, "row 3: %u hw queues", q->nr_hw_queues);
		return NULL;
	}
	snprintf(reason, len, "row 5: single queue");
	et = elevator_find("bfq");
	if (!et)
		et = elevator_find("mq-deadline");
	return et;
}

int elv_attr_store(struct mq_queue *q, const char *name, const char *value,
		   struct mq_err *e)
{
	const struct elv_fs_entry *a;
	char list[256];
	size_t used;
	int err;

	if (!q->elevator)
		return mq_err_set(e, "scheduler none has no tunables");
	list[0] = '\0';
	for (a = q->elevator->type->elevator_attrs; a && a->name; a++) {
		if (!strcmp(a->name, name))
			break;
		used = strlen(list);
		snprintf(list + used, sizeof(list) - used, "%s%s",
			 used ? ", " : "", a->name);
	}
	if (!a || !a->name)
		return mq_err_set(e, "%s has no tunable '%s' (tunables: %s)",
				  q->elevator->type->elevator_name, name,
				  list[0] ? list : "none");
	if (!a->store)
		return mq_err_set(e, "%s: %s is read-only",
				  q->elevator->type->elevator_name, name);
	err = a->store(q->elevator, value);
	if (err)
		return mq_err_set(e, "%s refuses %s=%s: %s",
				  q->elevator->type->elevator_name, name, value,
				  strerror(err < 0 ? -err : err));
	return 0;
}

/* Attach et unless it is attached already. */
static int attach(struct gendisk *disk, const struct elevator_type *et,
		  unsigned int timeout_ms, struct mq_err *e)
{
	struct mq_queue *q = disk->queue;
	int err;

	if ((q->elevator ? q->elevator->type : NULL) == et)
		return 0;
	err = elevator_switch_timeout(q, et, timeout_ms);
	if (err == EBUSY)
		return mq_err_set(e,
				  "%s: scheduler %s: the queue did not drain "
				  "in %u %s; %s stays (%s)",
				  disk->disk_name, elv_name(et),
				  timeout_ms % 1000 ? timeout_ms
						    : timeout_ms / 1000,
				  timeout_ms % 1000 ? "ms" : "s",
				  mq_elevator_name(q), strerror(EBUSY));
	if (err)
		return mq_err_set(e, "%s: cannot attach scheduler %s: %s",
				  disk->disk_name, elv_name(et), strerror(err));
	return 0;
}

/* ------------------------------------------------------------------ */
/* start-up                                                            */

struct policy_ctx {
	struct gendisk *disk;
	struct mq_err *e;
};

static int iosched_key(const char *key, const char *value, void *arg)
{
	struct policy_ctx *ctx = arg;
	struct mq_err why;

	if (elv_attr_store(ctx->disk->queue, key + strlen("iosched."), value,
			   &why))
		return mq_err_set(ctx->e, "%s: %s=%s: %s", ctx->disk->disk_name,
				  key, value, why.msg);
	return 0;
}

/* "rule PATH:LINE", or "rule FILE:LINE" when the path does not fit. */
static void set_rule_reason(char *reason, const char *where)
{
	const char *slash = strrchr(where, '/');

	if (strlen(where) + 6 > REASON_MAX && slash)
		where = slash + 1;
	snprintf(reason, REASON_MAX, "rule %.*s", (int)(REASON_MAX - 6), where);
}

/* rules_check_fn: what a write to queue/scheduler would be refused for */
static int rules_check(const char *name, void *arg, struct mq_err *why)
{
	const struct elevator_type *et;

	return elv_lookup(name, &et, why) || elv_policy_check(arg, et, why) ? -1
									    : 0;
}

/*
 * Run the rules file; *et and reason change if a rule chose.  As in udev,
 * a rule whose choice is refused is logged and changes nothing.
 */
static int apply_rules(struct gendisk *disk, const char *path,
		       const struct elevator_type **et, char *reason,
		       struct rules_result *res, struct mq_err *e)
{
	struct udev_rules *rules;
	int ret;

	if (udev_rules_load(path, &rules, e))
		return -1;
	ret = udev_rules_apply(rules, disk, elv_name(*et), rules_check, disk,
			       res, e);
	udev_rules_free(rules);
	if (ret || !res->scheduler[0])
		return ret;
	if (elv_lookup(res->scheduler, et, e))
		return -1; /* not reached: rules_check let it through */
	set_rule_reason(reason, res->where);
	return 0;
}

/*
 * The tunables the rules set, if they were for the scheduler chosen.  One
 * that cannot be stored is logged and skipped, as udev does.
 */
static void apply_rules_tunables(struct gendisk *disk,
				 const struct elevator_type *def,
				 const struct rules_result *res)
{
	const char *for_sched =
		res->scheduler[0] ? res->scheduler : elv_name(def);
	const char *chosen = mq_elevator_name(disk->queue);
	struct mq_err why;
	unsigned int i;

	for (i = 0; i < res->nr_tunables; i++) {
		const struct rules_tunable *t = &res->tunables[i];

		if (strcmp(for_sched, chosen)) {
			pr_debug(
				"%s: rule %s: ATTR{queue/iosched/%s} was for %s, not %s: ignored",
				disk->disk_name, t->where, t->name, for_sched,
				chosen);
			continue;
		}
		if (elv_attr_store(disk->queue, t->name, t->value, &why))
			pr_warn("%s: rule %s: ATTR{queue/iosched/%s}=\"%s\": %s; ignored",
				disk->disk_name, t->where, t->name, t->value,
				why.msg);
	}
}

int elv_policy_apply(struct gendisk *disk, struct mq_params *p,
		     struct mq_err *e)
{
	struct mq_queue *q = disk->queue;
	const struct elevator_type *def, *et;
	struct policy_ctx ctx = {.disk = disk, .e = e};
	const char *want, *rules_path;
	char reason[REASON_MAX];
	struct rules_result res = {0};
	struct mq_err why;

	mq_param_str(p, "scheduler", NULL, &want, e);
	mq_param_str(p, "rules", NULL, &rules_path, e);

	et = def = elv_policy_default(disk, reason, sizeof(reason));
	if (rules_path && apply_rules(disk, rules_path, &et, reason, &res, e))
		return -1;
	if (want) {
		if (elv_lookup(want, &et, &why) ||
		    elv_policy_check(disk, et, &why))
			return mq_err_set(e, "%s: scheduler=%s: %s",
					  disk->disk_name, want, why.msg);
		snprintf(reason, sizeof(reason), "scheduler= key");
	}
	if (attach(disk, et, 0, e))
		return -1;
	apply_rules_tunables(disk, def, &res);
	/* As udev: a value the attribute refuses is logged, nothing more. */
	if (res.ioprio_map_where[0] && mq_set_ioprio_map(q, res.ioprio_map))
		pr_warn("%s: rule %s: ATTR{queue/ioprio_map}=\"%s\": invalid; ignored",
			disk->disk_name, res.ioprio_map_where, res.ioprio_map);
	if (mq_params_foreach_prefix(p, "iosched.", iosched_key, &ctx))
		return -1;

	snprintf(q->sched_reason, sizeof(q->sched_reason), "%s", reason);
	pr_info("%s: scheduler %s (%s)", disk->disk_name, elv_name(et), reason);
	return 0;
}

/* ------------------------------------------------------------------ */
/* run time                                                            */

int elv_policy_switch(struct gendisk *disk, const char *name,
		      const char *reason, struct mq_err *e)
{
	return elv_policy_switch_timeout(disk, name, reason, 0, e);
}

int elv_policy_switch_timeout(struct gendisk *disk, const char *name,
			      const char *reason, unsigned int timeout_ms,
			      struct mq_err *e)
{
	struct mq_queue *q = disk->queue;
	const struct elevator_type *et;
	struct mq_err why;

	if (elv_lookup(name, &et, &why) || elv_policy_check(disk, et, &why))
		return mq_err_set(e, "%s: scheduler %s: %s", disk->disk_name,
				  name, why.msg);
	if (attach(disk, et, timeout_ms, e))
		return -1;
	snprintf(q->sched_reason, sizeof(q->sched_reason), "%s", reason);
	pr_info("%s: scheduler %s (%s)", disk->disk_name, elv_name(et), reason);
	return 0;
}
