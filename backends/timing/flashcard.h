/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A flash memory card behind a slow card bus (Memory Stick Pro, SD, CF).
 *
 *  - Every command costs cmd_overhead_us before data moves: the bus
 *    transactions that set it up (for a Memory Stick, WRITE_REG, SET_CMD
 *    and GET_INT), the controller's mapping lookup and the first flash
 *    access.
 *  - Data then moves one page at a time at read_mbps or write_mbps.  MB is
 *    10^6 bytes, as card makers count.  No seek: where the data lies does
 *    not matter.
 *
 * The defaults are those of a plausible 2005 card (a Memory Stick Pro Duo
 * on a 4-bit parallel bus): 512-byte pages, 20 MB/s read, 10 MB/s write,
 * 100 us a command.  Figures are nominal (time_scale=1); callers scale them
 * with mq_device_delay_ns().
 */
#ifndef MQBLK_TIMING_FLASHCARD_H
#define MQBLK_TIMING_FLASHCARD_H

#include <stdbool.h>

#include "timing.h"
#include "../../server/mq/params.h"

#define FLASHCARD_MB 1000000.0 /* bytes in a card maker's MB */

struct flashcard_params {
	unsigned int page_size; /* bytes per data burst, 512 */
	double read_mbps;	/* 20 */
	double write_mbps;	/* 10 */
	double cmd_overhead_us; /* 100 */
};

void flashcard_params_default(struct flashcard_params *p);

/*
 * Read page_size, read_mbps, write_mbps and cmd_overhead_us as PREFIX KEY
 * (prefix may be ""), starting from *fp as the defaults.  Returns 0, or -1
 * with e set.
 */
int flashcard_params_read(struct flashcard_params *fp, struct mq_params *p,
			  const char *prefix, struct mq_err *e);

struct flashcard_model {
	struct timing_model base;
	struct flashcard_params p;
	double read_ns_per_byte;
	double write_ns_per_byte;
	uint64_t pages; /* pages moved, for statistics */
};

void flashcard_init(struct flashcard_model *m,
		    const struct flashcard_params *p);
void flashcard_destroy(struct flashcard_model *m);

/*
 * A whole command of bytes: overhead plus transfer.  The same as
 * timing_service_ns(&m->base, ...).
 */
uint64_t flashcard_service_ns(struct flashcard_model *m, enum timing_op op,
			      uint64_t sector, uint32_t bytes);

/*
 * For drivers that move a command page by page: the overhead, paid once
 * when the card starts a command (counted as one command), and the time
 * of one page (counted as one page).
 */
uint64_t flashcard_cmd_ns(struct flashcard_model *m);
uint64_t flashcard_page_ns(struct flashcard_model *m, enum timing_op op);

#endif
