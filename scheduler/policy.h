/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which I/O scheduler an export gets: the table in docs/design.md
 * "Default scheduler policy" (Linux's elevator_init_mq, plus checks for
 * what cannot work), overridden by a rules file (rules=PATH) and then by
 * an explicit scheduler= key; iosched.TUNABLE=VALUE keys set the chosen
 * one's tunables.  A choice that cannot work is refused with the reason.
 */
#ifndef MQBLK_POLICY_H
#define MQBLK_POLICY_H

#include "../server/mq/elevator.h"
#include "../server/mq/params.h"
#include "../server/mq/genhd.h"

/*
 * Choose, check and attach the scheduler of disk's queue from the keys
 * scheduler=, rules= and iosched.*, which it reads (marking them used).
 * Writes q->sched_reason ("row 5: single queue", "rule PATH:3",
 * "scheduler= key") and logs "nullb0: scheduler bfq (row 5: single
 * queue)".  Returns 0, or -1 with e set to one line naming the key.
 */
int elv_policy_apply(struct gendisk *disk, struct mq_params *p,
		     struct mq_err *e);

/* Rows 1 to 5 alone.  NULL means none; reason gets the row. */
const struct elevator_type *elv_policy_default(struct gendisk *disk,
					       char *reason, size_t len);

/*
 * Can et (NULL: none) be attached to disk's queue?  0, or -1 with e set to
 * why not, e.g. "bfq does not keep write order on sequential zones".
 */
int elv_policy_check(struct gendisk *disk, const struct elevator_type *et,
		     struct mq_err *e);

/* A scheduler by name, "none" giving NULL.  -1 lists the known ones. */
int elv_lookup(const char *name, const struct elevator_type **et,
	       struct mq_err *e);

/* "none, kyber, mq-deadline, bfq": every name elv_lookup knows. */
void elv_known_names(char *buf, size_t len);

/* Store a tunable of the attached scheduler through its elv_fs_entry. */
int elv_attr_store(struct mq_queue *q, const char *name, const char *value,
		   struct mq_err *e);

/*
 * Switch a live export to the scheduler called name, checked as at
 * start-up; for the control plane and tests.  reason goes to
 * q->sched_reason.
 */
int elv_policy_switch(struct gendisk *disk, const char *name,
		      const char *reason, struct mq_err *e);
/*
 * The same, refused with an error when the queue has not drained within
 * timeout_ms (0: no limit), the old scheduler left in place.
 */
int elv_policy_switch_timeout(struct gendisk *disk, const char *name,
			      const char *reason, unsigned int timeout_ms,
			      struct mq_err *e);

#endif
