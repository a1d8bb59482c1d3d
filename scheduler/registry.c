/* SPDX-License-Identifier: GPL-2.0 */
/* The elevator registry, written once. */
#include <string.h>

#include "../server/mq/elevator.h"

extern const struct elevator_type mq_deadline_elv;
extern const struct elevator_type kyber_elv;
#ifdef MQBLK_HAVE_BFQ
extern const struct elevator_type bfq_elv;
#endif

/* In the order queue/scheduler lists them, after none. */
const struct elevator_type *const mq_elevators[] = {
	&mq_deadline_elv,
	&kyber_elv,
#ifdef MQBLK_HAVE_BFQ
	&bfq_elv,
#endif
	NULL,
};

const struct elevator_type *elevator_find(const char *name)
{
	unsigned int i;

	for (i = 0; mq_elevators[i]; i++)
		if (!strcmp(mq_elevators[i]->elevator_name, name))
			return mq_elevators[i];
	return NULL;
}

const char *mq_elevator_name(struct mq_queue *q)
{
	return q->elevator ? q->elevator->type->elevator_name : "none";
}
