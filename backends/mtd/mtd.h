/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A raw flash chip, NAND or NOR, modelled the way drivers/mtd/nand/raw/
 * nandsim.c simulates one, and the MTD calls the translation layers use on
 * it (mtd_read, mtd_write, mtd_erase, the OOB and bad-block calls of
 * include/linux/mtd/mtd.h).  The raw chip is not an export; mtdblock and
 * ftl (mtd_blkdevs.c) are.
 *
 * Semantics:
 *  - a program only clears bits (new = old & data); an erase sets the whole
 *    erase block to 0xFF;
 *  - NAND: programs are whole pages (data and OOB in one operation), once
 *    per page per erase: a second program fails with -EIO.  NOR: any byte
 *    range, bit-clearing rewrites allowed, no OOB;
 *  - every block has an erase counter; once it reaches endurance, the
 *    block's next program or erase fails and it becomes a grown bad block;
 *    badblocks= lists factory bad blocks; weakblocks=, weakpages= and
 *    gravepages= are nandsim's keys of the same names;
 *  - bitflips=N flips N random bits in every page read; ECC corrects up to
 *    ecc_strength per page (-EUCLEAN, "corrected"), beyond that the read
 *    fails with -EBADMSG;
 *  - power: a power cut tears the program or erase in progress (UBIFS's
 *    tst_recovery way: written from the start up to a random offset, the
 *    rest left as it was or random), then every call fails with -EIO until
 *    mtd_chip_poweron();
 *  - image=PATH holds data, OOB, erase counters, bad blocks and the
 *    programmed state of every page, mapped shared, so a restart or a
 *    power-on finds the chip as it was.
 *
 * Errors are negative errnos, as in the kernel.
 */
#ifndef MQBLK_MTD_H
#define MQBLK_MTD_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../device.h"

enum mtd_type {
	MTD_NANDFLASH,
	MTD_NORFLASH,
};

/* nandsim's cell presets: tR, tPROG, tBERS and endurance. */
enum mtd_cell {
	MTD_CELL_SLC,
	MTD_CELL_MLC,
	MTD_CELL_TLC,
};

#define MTD_MAX_LIST 64 /* entries in badblocks=, weakblocks=, ... */

struct mtd_weak {
	uint32_t no;  /* block or page */
	uint32_t max; /* erases, programs or reads that succeed */
};

struct mtd_chip_params {
	enum mtd_type type;
	enum mtd_cell cell;
	uint64_t size;
	uint32_t erasesize;
	uint32_t writesize;
	uint32_t oobsize;
	uint32_t endurance;
	uint32_t ecc_strength; /* bits corrected per page */
	uint32_t bitflips;     /* bits flipped per page read */
	double t_read_us, t_prog_us, t_erase_us;
	const char *image;
	uint64_t seed;		 /* tears and bitflips; 0: from the clock */
	uint32_t powercut_after; /* cut at the Nth program or erase; 0: no */
	uint32_t nr_badblocks;
	uint32_t badblocks[MTD_MAX_LIST];
	uint32_t nr_weakblocks, nr_weakpages, nr_gravepages;
	struct mtd_weak weakblocks[MTD_MAX_LIST];
	struct mtd_weak weakpages[MTD_MAX_LIST];
	struct mtd_weak gravepages[MTD_MAX_LIST];
};

/* The chip keys, for the drivers' key lists (ends with { NULL }). */
extern const struct mq_param_spec mtd_chip_param_specs[];
/*
 * Why the flash drivers refuse media=: the chip's array is more than
 * bytes (OOB, erase counters, bad blocks, program-once pages).
 */
#define MTD_NO_MEDIA                                                           \
	"the flash chip (data, OOB, erase counters, bad blocks) is the "       \
	"model itself and keeps its array in memory; image=PATH persists it"

/* Read the chip keys; -1 with e set on a bad value or geometry. */
int mtd_chip_params_read(struct mtd_chip_params *cp, struct mq_params *p,
			 struct mq_err *e);

struct mtd_chip;

/* NULL with e set.  time_scale stretches tR, tPROG and tBERS. */
struct mtd_chip *mtd_chip_create(const struct mtd_chip_params *cp,
				 double time_scale, struct mq_err *e);
void mtd_chip_destroy(struct mtd_chip *chip);
/* msync the image (a no-op without one): 0 or -errno. */
int mtd_chip_sync(struct mtd_chip *chip);

/* Power. */
bool mtd_chip_powered(struct mtd_chip *chip);
/* Cut now: an operation in progress is torn. */
void mtd_chip_powercut(struct mtd_chip *chip);
/* Cut during the nth program or erase from now (1: the next). */
void mtd_chip_powercut_after(struct mtd_chip *chip, uint32_t n);
/* Reload from the image (or keep memory) and power up: 0 or -errno. */
int mtd_chip_poweron(struct mtd_chip *chip);
/* Where the last cut struck: "erase of block 3", "none". */
void mtd_chip_last_cut(struct mtd_chip *chip, char *buf, size_t len);

/* Statistics and state, for the attribute tree. */
struct mtd_chip_stats {
	uint64_t reads, programs, erases;
	uint64_t bytes_programmed;
	uint64_t ecc_corrected, ecc_failed;
	uint32_t bad_blocks;
	uint32_t min_erase, max_erase;
	double mean_erase, stddev_erase;
};
void mtd_chip_get_stats(struct mtd_chip *chip, uint32_t first_block,
			uint32_t nr_blocks, struct mtd_chip_stats *st);
/* Bad blocks in [first, first+nr) as "3 17" (relative), "" if none. */
void mtd_chip_bad_list(struct mtd_chip *chip, uint32_t first_block,
		       uint32_t nr_blocks, char *buf, size_t len);
uint32_t mtd_chip_erase_count(struct mtd_chip *chip, uint32_t block);

/*
 * A partition: what the kernel calls an mtd_info.  Offsets given to the
 * calls below are relative to the partition.
 */
struct mtd_info {
	char name[32]; /* "mtd0" */
	int index;
	enum mtd_type type;
	uint64_t size;
	uint32_t erasesize;
	uint32_t writesize;
	uint32_t oobsize;
	uint64_t offset; /* in the chip */
	struct mtd_chip *chip;
};

static inline bool mtd_type_is_nand(const struct mtd_info *mtd)
{
	return mtd->type == MTD_NANDFLASH;
}

/* -EUCLEAN: bitflips were corrected; the data is good. */
static inline bool mtd_is_bitflip(int err)
{
	return err == -EUCLEAN;
}

/*
 * Split the chip into partitions by parts= ("4M,4M": sizes, each a
 * multiple of erasesize; what is left over is one more partition).
 * Returns the count, or -1 with e set.
 */
int mtd_parse_parts(struct mtd_chip *chip, const char *parts,
		    struct mtd_info *mtds, int max, struct mq_err *e);

int mtd_read(struct mtd_info *mtd, uint64_t from, size_t len, size_t *retlen,
	     void *buf);
int mtd_write(struct mtd_info *mtd, uint64_t to, size_t len, size_t *retlen,
	      const void *buf);
/* Erase [ofs, ofs+len), whole erase blocks. */
int mtd_erase(struct mtd_info *mtd, uint64_t ofs, uint64_t len);
/* One NAND page with its OOB (oob may be NULL: left 0xFF / not read). */
int mtd_write_oob(struct mtd_info *mtd, uint64_t to, const void *data,
		  const void *oob);
int mtd_read_oob(struct mtd_info *mtd, uint64_t from, void *data, void *oob);
int mtd_block_isbad(struct mtd_info *mtd, uint64_t ofs);
int mtd_block_markbad(struct mtd_info *mtd, uint64_t ofs);
/* mtd_sync: make everything programmed durable (the image). */
int mtd_sync(struct mtd_info *mtd);

#endif
