/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Scheduler rules in the syntax of udev rules, so that the files
 * distributions ship (60-ioschedulers.rules, 60-block-scheduler.rules)
 * apply to exports as they are:
 *
 *   ACTION=="add|change", KERNEL=="mmcblk[0-9]*", \
 *           ATTR{queue/rotational}=="0", ATTR{queue/scheduler}="bfq"
 *
 * KERNEL is the export name.  ATTR{queue/...} reads what the export's
 * queue would show in sysfs, plus nr_hw_queues, which udev never had.
 * Rules are evaluated as udev does for an "add" (or coldplug "change")
 * event of a disk in the block subsystem: in order, GOTO and LABEL
 * included, each assignment taking effect at once, so later rules
 * override earlier ones.
 */
#ifndef MQBLK_RULES_H
#define MQBLK_RULES_H

#include "../server/mq/params.h"
#include "../server/mq/genhd.h"

struct udev_rules;

/*
 * Parse a rules file, or every *.rules file of a directory in name order
 * as udev reads /etc/udev/rules.d.  Errors name the file and line.
 */
int udev_rules_load(const char *path, struct udev_rules **out,
		    struct mq_err *e);
void udev_rules_free(struct udev_rules *rules);

#define RULES_WHERE_MAX	   300 /* "PATH:LINE" */
#define RULES_MAX_TUNABLES 32

struct rules_tunable {
	char name[64];
	char value[128];
	char where[RULES_WHERE_MAX];
};

/* What the rules assigned for one export. */
struct rules_result {
	char scheduler[64];	     /* "" when no rule assigned one */
	char where[RULES_WHERE_MAX]; /* the rule that did, "PATH:LINE" */
	struct rules_tunable tunables[RULES_MAX_TUNABLES]; /* for it */
	unsigned int nr_tunables;
	/* ATTR{queue/ioprio_map}: the last one assigned; where "" if none */
	char ioprio_map[512];
	char ioprio_map_where[RULES_WHERE_MAX];
};

/*
 * May scheduler be written to the export's queue/scheduler?  0, or -1 with
 * why set.  A refused write is logged and changes nothing, as in udev.
 */
typedef int(rules_check_fn)(const char *scheduler, void *arg,
			    struct mq_err *why);

/*
 * Run the rules for disk, whose queue would have scheduler current (by the
 * default policy) when udev saw it.  Fills res; -1 with e set when an
 * assignment cannot be recorded.
 */
int udev_rules_apply(const struct udev_rules *rules, struct gendisk *disk,
		     const char *current, rules_check_fn *check,
		     void *check_arg, struct rules_result *res,
		     struct mq_err *e);

/*
 * What ATTR{NAME} of disk reads, scheduler being the current one; -1 for
 * an attribute these rules cannot see.  For tests and the control plane.
 */
int udev_rules_attr(struct gendisk *disk, const char *scheduler,
		    const char *name, char *buf, size_t len);

#endif
