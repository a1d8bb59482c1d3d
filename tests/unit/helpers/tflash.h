/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the flash suites (test_mtdblock, test_ftl): attributes and faults
 * of a disk by name, and power cuts at every step of a scripted sequence
 * of writes and FLUSHes, checked sector by sector against what the layer
 * promises.
 */
#ifndef MQBLK_TEST_TFLASH_H
#define MQBLK_TEST_TFLASH_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/device.h"
#include "tdevice.h" /* tdisk_attr */

int tflash_fault(struct gendisk *disk, const char *name, const char *value);

/* Write n sectors at sector of tio_fill(seed)'s pattern; 0 or an errno. */
int tflash_write(struct mq_device *d, uint32_t sector, uint32_t n,
		 unsigned int seed);

/* 'W': write count sectors at sector; 'F': FLUSH. */
struct tflash_op {
	char kind;
	uint32_t sector;
	uint32_t count;
};

/* What op number op writes to sector s (op 0: the erased 0xFF). */
void tflash_pattern(unsigned int op, uint32_t s, uint8_t *buf);

/*
 * For n = 1, 2, ...: make device (keys, then powercut_after=n and
 * seed=n), run ops until one fails, fire poweron, and check each sector
 * of [0, nsect): it holds what it held at the last completed FLUSH, or
 * something written after that.  exempt_sectors != 0: the erase block
 * (of that many sectors) named by device/last_powercut may hold anything
 * (mtdblock's write-back).  Stops at the first n whose run ends with no
 * cut; returns the number of runs that were cut.
 */
unsigned int tflash_powercut_every_step(const char *device,
					const char *const *keys,
					const struct tflash_op *ops,
					unsigned int nops, uint32_t nsect,
					uint32_t exempt_sectors);

#endif
