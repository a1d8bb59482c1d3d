/* SPDX-License-Identifier: GPL-2.0 */
/*
 * I/O priorities, after include/uapi/linux/ioprio.h: a class (RT, BE,
 * IDLE) and a level 0 (highest) to 7 in one 16-bit value carried by bios
 * and requests.  NBD carries none: the front ends set it from who the
 * client is.  IOPRIO_CLASS_NONE (the value 0) is served as best effort.
 */
#ifndef MQBLK_IOPRIO_H
#define MQBLK_IOPRIO_H

#include <stdbool.h>
#include <stdint.h>

enum {
	IOPRIO_CLASS_NONE = 0,
	IOPRIO_CLASS_RT = 1,
	IOPRIO_CLASS_BE = 2,
	IOPRIO_CLASS_IDLE = 3,
};

#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_NR_LEVELS   8
#define IOPRIO_BE_NR	   IOPRIO_NR_LEVELS
#define IOPRIO_PRIO_VALUE(class, level)                                        \
	((uint16_t)(((class) << IOPRIO_CLASS_SHIFT) | ((level)&7)))
#define IOPRIO_PRIO_CLASS(ioprio) (((ioprio) >> IOPRIO_CLASS_SHIFT) & 7)
#define IOPRIO_PRIO_LEVEL(ioprio) ((ioprio)&7)

static inline bool ioprio_valid(uint16_t ioprio)
{
	return IOPRIO_PRIO_CLASS(ioprio) <= IOPRIO_CLASS_IDLE &&
	       (ioprio & ~(uint16_t)((7u << IOPRIO_CLASS_SHIFT) | 7u)) == 0;
}

#endif
