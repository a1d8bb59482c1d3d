// SPDX-License-Identifier: GPL-2.0
/*
 * The raw flash chip (see mtd.h), after drivers/mtd/nand/raw/nandsim.c:
 * its cell array, its OOB, its wear, its defects and its power.
 *
 * The chip state lives in one mapping, laid out as the image file is:
 * a header page, the data, the OOB, the erase counters, the bad-block
 * table and one byte per page saying whether it was programmed since its
 * last erase.  With image= the mapping is the file (MAP_SHARED), so what
 * was programmed survives a restart; without it, anonymous memory.
 *
 * Timing: nandsim's do_delays busy-waits access_delay, program_delay and
 * erase_delay in the operation; the model sleeps tR, tPROG and tBERS
 * (scaled by time_scale) before applying an operation, outside the chip's
 * lock, so a power cut that lands meanwhile tears it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mtd.h"
#include "../device.h"
#include "../../server/mq/log.h"

#define MTD_IMAGE_MAGIC	  "MQBLKMTD"
#define MTD_IMAGE_VERSION 1
#define MTD_HDR_SIZE	  4096

/* The bad-block table's values */
#define BBT_GOOD    0
#define BBT_FACTORY 1
#define BBT_GROWN   2

struct mtd_image_hdr {
	char magic[8];
	uint32_t version;
	uint32_t type;
	uint64_t size;
	uint32_t erasesize;
	uint32_t writesize;
	uint32_t oobsize;
};

struct mtd_chip {
	struct mtd_chip_params p;
	double time_scale;
	uint32_t nr_blocks;
	uint32_t pages_per_block;
	uint64_t nr_pages;
	uint32_t page_size; /* writesize on NAND, erasesize on NOR */

	/* The mapping and its parts */
	int fd;
	void *map;
	size_t map_len;
	uint8_t *data;
	uint8_t *oob;
	uint32_t *erase_count;
	uint8_t *bbt;
	uint8_t *programmed;

	/* nandsim's volatile counters for weak and grave pages */
	uint32_t *weak_erases;	 /* per weakblocks= entry */
	uint32_t *weak_programs; /* per weakpages= entry */
	uint32_t *grave_reads;	 /* per gravepages= entry */

	pthread_mutex_t lock;
	bool powered;
	uint64_t power_gen;	/* bumped by every cut */
	uint32_t cut_countdown; /* programs/erases until a cut; 0: none */
	char last_cut[96];
	uint64_t rand_state;

	uint64_t reads, programs, erases, bytes_programmed;
	uint64_t ecc_corrected, ecc_failed;
};

/* ------------------------------------------------------------------ */
/* keys                                                                */

const struct mq_param_spec mtd_chip_param_specs[] = {
	{"type", "nand", "nand or nor"},
	{"size", "32M", "chip size, a multiple of erasesize"},
	{"erasesize", "128K", "erase block size"},
	{"writesize", "2048", "NAND page size (NOR: 1)"},
	{"oobsize", "64", "NAND out-of-band bytes per page (NOR: 0)"},
	{"cell", "slc", "timing and endurance preset: slc, mlc or tlc"},
	{"endurance", "100000", "erases a block takes before it wears out"},
	{"ecc_strength", "4", "bitflips ECC corrects per page"},
	{"bitflips", "0", "bits flipped in every page read"},
	{"t_read_us", "25", "tR: page read (nandsim access_delay)"},
	{"t_prog_us", "200", "tPROG: page program"},
	{"t_erase_us", "2000", "tBERS: block erase"},
	{"badblocks", NULL, "factory bad blocks: N[,N...]"},
	{"weakblocks", NULL, "BLOCK:ERASES[,...]: fail after that many erases"},
	{"weakpages", NULL,
	 "PAGE:PROGRAMS[,...]: fail after that many programs"},
	{"gravepages", NULL, "PAGE:READS[,...]: reads fail after that many"},
	{"image", NULL, "file holding data, OOB, erase counters, bad blocks"},
	{"parts", NULL,
	 "partition sizes: SIZE[,SIZE...], the rest is one more"},
	{"seed", "0", "random seed for power-cut tears and bitflips; 0: clock"},
	{"powercut_after", "0", "cut power during the Nth program or erase"},
	{NULL},
};

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* A size key ("128K") that fits in 32 bits, within [min, max]. */
static int param_size32(struct mq_params *p, const char *key, uint64_t def,
			uint64_t min, uint64_t max, uint32_t *out,
			struct mq_err *e)
{
	uint64_t v;

	if (mq_param_size(p, key, def, &v, e))
		return -1;
	if (v < min || v > max)
		return mq_err_set(
			e, "%s=%" PRIu64 ": must be %" PRIu64 " to %" PRIu64,
			key, v, min, max);
	*out = (uint32_t)v;
	return 0;
}

static int parse_list(const char *key, const char *s, bool pairs, uint32_t *nos,
		      struct mtd_weak *weak, uint32_t *nr, struct mq_err *e)
{
	const char *c = s;
	char *end;

	*nr = 0;
	if (!s)
		return 0;
	while (*c) {
		unsigned long long no, max = 0;

		if (*nr == MTD_MAX_LIST)
			return mq_err_set(e, "%s=: at most %d entries", key,
					  MTD_MAX_LIST);
		errno = 0;
		no = strtoull(c, &end, 10);
		if (end == c || errno || no > UINT32_MAX)
			goto bad;
		c = end;
		if (pairs) {
			if (*c != ':')
				goto bad;
			c++;
			max = strtoull(c, &end, 10);
			if (end == c || errno || max > UINT32_MAX)
				goto bad;
			c = end;
			weak[*nr].no = (uint32_t)no;
			weak[*nr].max = (uint32_t)max;
		} else {
			nos[*nr] = (uint32_t)no;
		}
		(*nr)++;
		if (*c == ',')
			c++;
		else if (*c)
			goto bad;
	}
	return 0;
bad:
	return mq_err_set(e, "%s=%s: expected %s[,...]", key, s,
			  pairs ? "N:COUNT" : "N");
}

int mtd_chip_params_read(struct mtd_chip_params *cp, struct mq_params *p,
			 struct mq_err *e)
{
	static const double preset[3][4] = {
		/* tR, tPROG, tBERS (us), endurance */
		{25, 200, 2000, 100000},
		{50, 600, 3000, 10000},
		{75, 1500, 5000, 3000},
	};
	const char *type, *cell, *bb, *wb, *wp, *gp;
	bool nor;
	uint32_t i;
	int c;

	memset(cp, 0, sizeof(*cp));
	if (mq_param_str(p, "type", "nand", &type, e) ||
	    mq_param_str(p, "cell", "slc", &cell, e))
		return -1;
	if (strcmp(type, "nand") && strcmp(type, "nor"))
		return mq_err_set(e, "type=%s: accepted: nand, nor", type);
	nor = !strcmp(type, "nor");
	cp->type = nor ? MTD_NORFLASH : MTD_NANDFLASH;
	if (!strcmp(cell, "slc"))
		c = MTD_CELL_SLC;
	else if (!strcmp(cell, "mlc"))
		c = MTD_CELL_MLC;
	else if (!strcmp(cell, "tlc"))
		c = MTD_CELL_TLC;
	else
		return mq_err_set(e, "cell=%s: accepted: slc, mlc, tlc", cell);
	cp->cell = c;

	if (mq_param_size(p, "size", 32 << 20, &cp->size, e) ||
	    param_size32(p, "erasesize", 128 << 10, 512, 64 << 20,
			 &cp->erasesize, e) ||
	    param_size32(p, "writesize", nor ? 1 : 2048, 1, 1 << 16,
			 &cp->writesize, e) ||
	    mq_param_uint(p, "oobsize", nor ? 0 : 64, 0, 4096, &cp->oobsize,
			  e) ||
	    mq_param_uint(p, "endurance", (unsigned int)preset[c][3], 1,
			  UINT32_MAX, &cp->endurance, e) ||
	    mq_param_uint(p, "ecc_strength", nor ? 0 : 4, 0, 1024,
			  &cp->ecc_strength, e) ||
	    mq_param_uint(p, "bitflips", 0, 0, 1024, &cp->bitflips, e) ||
	    mq_param_double(p, "t_read_us", nor ? 1 : preset[c][0], 0, 1e7,
			    &cp->t_read_us, e) ||
	    mq_param_double(p, "t_prog_us", nor ? 20 : preset[c][1], 0, 1e7,
			    &cp->t_prog_us, e) ||
	    mq_param_double(p, "t_erase_us", nor ? 700000 : preset[c][2], 0,
			    1e8, &cp->t_erase_us, e) ||
	    mq_param_str(p, "image", NULL, &cp->image, e) ||
	    mq_param_u64(p, "seed", 0, 0, UINT64_MAX, &cp->seed, e) ||
	    mq_param_uint(p, "powercut_after", 0, 0, UINT32_MAX,
			  &cp->powercut_after, e) ||
	    mq_param_str(p, "badblocks", NULL, &bb, e) ||
	    mq_param_str(p, "weakblocks", NULL, &wb, e) ||
	    mq_param_str(p, "weakpages", NULL, &wp, e) ||
	    mq_param_str(p, "gravepages", NULL, &gp, e))
		return -1;

	if (!is_pow2(cp->erasesize))
		return mq_err_set(e, "erasesize=%u: must be a power of two",
				  cp->erasesize);
	if (nor && (cp->writesize != 1 || cp->oobsize))
		return mq_err_set(e, "type=nor: writesize is 1 and oobsize 0 "
				     "(NOR has bytes, not pages)");
	if (!nor && (!is_pow2(cp->writesize) || cp->writesize < 512 ||
		     cp->writesize > cp->erasesize))
		return mq_err_set(
			e, "writesize=%u: a power of two, 512 to erasesize",
			cp->writesize);
	if (!nor && cp->oobsize < 16)
		return mq_err_set(e, "oobsize=%u: NAND needs at least 16",
				  cp->oobsize);
	if (!cp->size || cp->size % cp->erasesize ||
	    cp->size / cp->erasesize > (1u << 24) || cp->size > (8ULL << 30))
		return mq_err_set(e,
				  "size=%" PRIu64
				  ": a multiple of erasesize=%u, at most 8G",
				  cp->size, cp->erasesize);

	if (parse_list("badblocks", bb, false, cp->badblocks, NULL,
		       &cp->nr_badblocks, e) ||
	    parse_list("weakblocks", wb, true, NULL, cp->weakblocks,
		       &cp->nr_weakblocks, e) ||
	    parse_list("weakpages", wp, true, NULL, cp->weakpages,
		       &cp->nr_weakpages, e) ||
	    parse_list("gravepages", gp, true, NULL, cp->gravepages,
		       &cp->nr_gravepages, e))
		return -1;
	for (i = 0; i < cp->nr_badblocks; i++)
		if (cp->badblocks[i] >= cp->size / cp->erasesize)
			return mq_err_set(e,
					  "badblocks=: block %u is past the "
					  "chip's end",
					  cp->badblocks[i]);
	for (i = 0; i < cp->nr_weakblocks; i++)
		if (cp->weakblocks[i].no >= cp->size / cp->erasesize)
			return mq_err_set(e,
					  "weakblocks=: block %u is past "
					  "the chip's end",
					  cp->weakblocks[i].no);
	if (nor && (cp->nr_weakpages || cp->nr_gravepages))
		return mq_err_set(e,
				  "weakpages= and gravepages= are NAND keys");
	return 0;
}

/* ------------------------------------------------------------------ */
/* helpers                                                             */

static uint64_t chip_rand(struct mtd_chip *chip)
{
	uint64_t x = chip->rand_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	chip->rand_state = x;
	return x;
}

static void chip_delay(struct mtd_chip *chip, double us)
{
	double ns = us * 1000.0 * chip->time_scale;
	struct timespec ts;

	if (ns < 1.0)
		return;
	ts.tv_sec = (time_t)(ns / 1e9);
	ts.tv_nsec = (long)(ns - (double)ts.tv_sec * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static size_t chip_layout(struct mtd_chip *chip, size_t *data, size_t *oob,
			  size_t *ec, size_t *bbt, size_t *prog)
{
	size_t off = MTD_HDR_SIZE;

	*data = off;
	off += chip->p.size;
	*oob = off;
	off += chip->nr_pages * chip->p.oobsize;
	off = (off + 7) & ~(size_t)7;
	*ec = off;
	off += (size_t)chip->nr_blocks * sizeof(uint32_t);
	*bbt = off;
	off += chip->nr_blocks;
	*prog = off;
	off += chip->nr_pages;
	return off;
}

static void chip_format(struct mtd_chip *chip)
{
	struct mtd_image_hdr *h = chip->map;
	uint32_t i;

	memset(chip->data, 0xFF, chip->p.size);
	memset(chip->oob, 0xFF, chip->nr_pages * chip->p.oobsize);
	memset(chip->erase_count, 0, chip->nr_blocks * sizeof(uint32_t));
	memset(chip->bbt, BBT_GOOD, chip->nr_blocks);
	memset(chip->programmed, 0, chip->nr_pages);
	for (i = 0; i < chip->p.nr_badblocks; i++)
		chip->bbt[chip->p.badblocks[i]] = BBT_FACTORY;
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, MTD_IMAGE_MAGIC, 8);
	h->version = MTD_IMAGE_VERSION;
	h->type = chip->p.type;
	h->size = chip->p.size;
	h->erasesize = chip->p.erasesize;
	h->writesize = chip->p.writesize;
	h->oobsize = chip->p.oobsize;
}

static void chip_unmap(struct mtd_chip *chip)
{
	if (chip->map && chip->map != MAP_FAILED)
		munmap(chip->map, chip->map_len);
	chip->map = NULL;
	if (chip->fd >= 0)
		close(chip->fd);
	chip->fd = -1;
}

/* Map the image (or memory); a new or empty image is formatted. */
static int chip_map(struct mtd_chip *chip, struct mq_err *e)
{
	size_t d, o, ec, bbt, prog;
	bool fresh = true;
	struct stat st;

	chip->map_len = chip_layout(chip, &d, &o, &ec, &bbt, &prog);
	if (!chip->p.image) {
		chip->map = mmap(NULL, chip->map_len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (chip->map == MAP_FAILED) {
			chip->map = NULL;
			return mq_err_set(e, "cannot map %zu bytes: %s",
					  chip->map_len, strerror(errno));
		}
	} else {
		chip->fd =
			open(chip->p.image, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (chip->fd < 0 || fstat(chip->fd, &st))
			return mq_err_set(e, "image=%s: %s", chip->p.image,
					  strerror(errno));
		if (!S_ISREG(st.st_mode))
			return mq_err_set(e, "image=%s: not a regular file",
					  chip->p.image);
		if (st.st_size) {
			struct mtd_image_hdr h;

			if (pread(chip->fd, &h, sizeof(h), 0) != sizeof(h) ||
			    memcmp(h.magic, MTD_IMAGE_MAGIC, 8) ||
			    h.version != MTD_IMAGE_VERSION)
				return mq_err_set(
					e, "image=%s: not an mqblk flash image",
					chip->p.image);
			if (h.type != chip->p.type || h.size != chip->p.size ||
			    h.erasesize != chip->p.erasesize ||
			    h.writesize != chip->p.writesize ||
			    h.oobsize != chip->p.oobsize ||
			    (uint64_t)st.st_size != chip->map_len)
				return mq_err_set(
					e,
					"image=%s: holds a %s chip of %" PRIu64
					" bytes, erasesize %u, writesize %u, "
					"oobsize %u: give the same keys",
					chip->p.image,
					h.type == MTD_NORFLASH ? "nor" : "nand",
					h.size, h.erasesize, h.writesize,
					h.oobsize);
			fresh = false;
		} else if (ftruncate(chip->fd, (off_t)chip->map_len)) {
			return mq_err_set(e, "image=%s: %s", chip->p.image,
					  strerror(errno));
		}
		chip->map = mmap(NULL, chip->map_len, PROT_READ | PROT_WRITE,
				 MAP_SHARED, chip->fd, 0);
		if (chip->map == MAP_FAILED) {
			chip->map = NULL;
			return mq_err_set(e, "image=%s: mmap: %s",
					  chip->p.image, strerror(errno));
		}
	}
	chip->data = (uint8_t *)chip->map + d;
	chip->oob = (uint8_t *)chip->map + o;
	chip->erase_count = (uint32_t *)((uint8_t *)chip->map + ec);
	chip->bbt = (uint8_t *)chip->map + bbt;
	chip->programmed = (uint8_t *)chip->map + prog;
	if (fresh)
		chip_format(chip);
	return 0;
}

struct mtd_chip *mtd_chip_create(const struct mtd_chip_params *cp,
				 double time_scale, struct mq_err *e)
{
	struct mtd_chip *chip = calloc(1, sizeof(*chip));
	int err;

	if (!chip) {
		mq_err_set(e, "out of memory");
		return NULL;
	}
	chip->p = *cp;
	chip->fd = -1;
	/* the keys' strings go when probe ends; power-on needs the path */
	if (cp->image && !(chip->p.image = strdup(cp->image))) {
		mq_err_set(e, "out of memory");
		free(chip);
		return NULL;
	}
	chip->time_scale = time_scale;
	chip->nr_blocks = (uint32_t)(cp->size / cp->erasesize);
	/* NOR has no pages: its "page" is the erase block. */
	chip->page_size =
		cp->type == MTD_NANDFLASH ? cp->writesize : cp->erasesize;
	chip->pages_per_block = cp->erasesize / chip->page_size;
	chip->nr_pages = cp->size / chip->page_size;
	chip->rand_state = cp->seed ? cp->seed
				    : (uint64_t)time(NULL) ^ (uint64_t)getpid()
								     << 32;
	if (!chip->rand_state)
		chip->rand_state = 1;
	chip->powered = true;
	chip->cut_countdown = cp->powercut_after;
	snprintf(chip->last_cut, sizeof(chip->last_cut), "none");
	err = pthread_mutex_init(&chip->lock, NULL);
	if (err) {
		mq_err_set(e, "mutex: %s", strerror(err));
		free((char *)chip->p.image);
		free(chip);
		return NULL;
	}
	chip->weak_erases = calloc(MTD_MAX_LIST, sizeof(uint32_t));
	chip->weak_programs = calloc(MTD_MAX_LIST, sizeof(uint32_t));
	chip->grave_reads = calloc(MTD_MAX_LIST, sizeof(uint32_t));
	if (!chip->weak_erases || !chip->weak_programs || !chip->grave_reads) {
		mq_err_set(e, "out of memory");
		goto fail;
	}
	if (chip_map(chip, e))
		goto fail;
	return chip;
fail:
	mtd_chip_destroy(chip);
	return NULL;
}

void mtd_chip_destroy(struct mtd_chip *chip)
{
	if (!chip)
		return;
	if (chip->map && chip->fd >= 0)
		msync(chip->map, chip->map_len, MS_SYNC);
	chip_unmap(chip);
	free(chip->weak_erases);
	free(chip->weak_programs);
	free(chip->grave_reads);
	free((char *)chip->p.image);
	pthread_mutex_destroy(&chip->lock);
	free(chip);
}

int mtd_chip_sync(struct mtd_chip *chip)
{
	if (chip->fd < 0)
		return 0;
	if (msync(chip->map, chip->map_len, MS_SYNC))
		return -errno;
	return 0;
}

/* ------------------------------------------------------------------ */
/* power                                                               */

bool mtd_chip_powered(struct mtd_chip *chip)
{
	bool on;

	pthread_mutex_lock(&chip->lock);
	on = chip->powered;
	pthread_mutex_unlock(&chip->lock);
	return on;
}

void mtd_chip_powercut(struct mtd_chip *chip)
{
	pthread_mutex_lock(&chip->lock);
	if (chip->powered) {
		chip->powered = false;
		chip->power_gen++;
		snprintf(chip->last_cut, sizeof(chip->last_cut),
			 "between operations");
	}
	chip->cut_countdown = 0;
	pthread_mutex_unlock(&chip->lock);
}

void mtd_chip_powercut_after(struct mtd_chip *chip, uint32_t n)
{
	pthread_mutex_lock(&chip->lock);
	chip->cut_countdown = n;
	pthread_mutex_unlock(&chip->lock);
}

int mtd_chip_poweron(struct mtd_chip *chip)
{
	struct mq_err e;
	int ret = 0;

	pthread_mutex_lock(&chip->lock);
	if (chip->p.image) {
		/* What the chip holds is what the image holds. */
		msync(chip->map, chip->map_len, MS_SYNC);
		chip_unmap(chip);
		if (chip_map(chip, &e)) {
			pr_err("mtd: power-on: %s", e.msg);
			ret = -EIO;
		}
	}
	memset(chip->grave_reads, 0, MTD_MAX_LIST * sizeof(uint32_t));
	chip->powered = ret == 0;
	pthread_mutex_unlock(&chip->lock);
	return ret;
}

void mtd_chip_last_cut(struct mtd_chip *chip, char *buf, size_t len)
{
	pthread_mutex_lock(&chip->lock);
	snprintf(buf, len, "%s", chip->last_cut);
	pthread_mutex_unlock(&chip->lock);
}

/*
 * Count one program or erase against powercut_after; true when this one
 * is to be torn (power goes with it).  Called with chip->lock held.
 */
static bool chip_cut_due(struct mtd_chip *chip)
{
	if (!chip->cut_countdown)
		return false;
	return --chip->cut_countdown == 0;
}

/*
 * Tear a program or erase of len bytes at dst: the first part done (dst
 * becomes want, with want already folded with the old bytes), the rest
 * left as it was or filled with random bytes, 50/50.  Power is then off.
 */
static void chip_tear(struct mtd_chip *chip, uint8_t *dst, const uint8_t *want,
		      size_t len, uint8_t *dst2, const uint8_t *want2,
		      size_t len2, const char *what)
{
	size_t total = len + len2;
	size_t cut = total ? (size_t)(chip_rand(chip) % total) : 0;
	bool random_rest = chip_rand(chip) & 1;
	size_t i;

	for (i = 0; i < total; i++) {
		uint8_t *d = i < len ? &dst[i] : &dst2[i - len];
		uint8_t w = i < len ? want[i] : want2[i - len];

		if (i < cut)
			*d = w;
		else if (random_rest)
			*d = (uint8_t)chip_rand(chip);
	}
	chip->powered = false;
	chip->power_gen++;
	chip->cut_countdown = 0;
	snprintf(chip->last_cut, sizeof(chip->last_cut),
		 "%s, torn at byte %zu of %zu (rest %s)", what, cut, total,
		 random_rest ? "random" : "as it was");
	pr_warn("mtd: power cut during %s: torn at byte %zu of %zu, the rest %s",
		what, cut, total, random_rest ? "random" : "left as it was");
}

/* ------------------------------------------------------------------ */
/* operations, on chip offsets                                         */

static uint32_t weak_index(const struct mtd_weak *w, uint32_t nr, uint32_t no)
{
	uint32_t i;

	for (i = 0; i < nr; i++)
		if (w[i].no == no)
			return i;
	return UINT32_MAX;
}

/* Grown bad: the block wore out or failed. */
static void chip_grow_bad(struct mtd_chip *chip, uint32_t block,
			  const char *why)
{
	if (chip->bbt[block] == BBT_GOOD) {
		chip->bbt[block] = BBT_GROWN;
		pr_warn("mtd: block %u is now bad (%s, %u erases)", block, why,
			chip->erase_count[block]);
	}
}

static int chip_erase_block(struct mtd_chip *chip, uint32_t block)
{
	bool cut_during;
	uint64_t gen;
	uint8_t *d;
	uint32_t w;
	size_t ps = chip->p.oobsize;
	uint64_t first = (uint64_t)block * chip->pages_per_block;

	pthread_mutex_lock(&chip->lock);
	gen = chip->power_gen;
	if (!chip->powered) {
		pthread_mutex_unlock(&chip->lock);
		return -EIO;
	}
	pthread_mutex_unlock(&chip->lock);
	chip_delay(chip, chip->p.t_erase_us);

	pthread_mutex_lock(&chip->lock);
	/* power went while the erase ran (tBERS): it is torn below */
	cut_during = gen != chip->power_gen && !chip->powered;
	if (gen != chip->power_gen && !cut_during) {
		pthread_mutex_unlock(&chip->lock);
		return -EIO;
	}
	if (chip->bbt[block] != BBT_GOOD) {
		pthread_mutex_unlock(&chip->lock);
		pr_err("mtd: erase of bad block %u refused", block);
		return -EIO;
	}
	if (chip->erase_count[block] >= chip->p.endurance) {
		chip_grow_bad(chip, block, "worn out: erase failed");
		pthread_mutex_unlock(&chip->lock);
		return -EIO;
	}
	w = weak_index(chip->p.weakblocks, chip->p.nr_weakblocks, block);
	if (w != UINT32_MAX &&
	    chip->weak_erases[w]++ >= chip->p.weakblocks[w].max) {
		chip_grow_bad(chip, block, "weak block: erase failed");
		pthread_mutex_unlock(&chip->lock);
		return -EIO;
	}
	chip->erases++;
	chip->erase_count[block]++;
	d = chip->data + (uint64_t)block * chip->p.erasesize;
	if (cut_during || chip_cut_due(chip)) {
		/* Partly erased: 0xFF from the start to the tear. */
		uint8_t *ff = malloc(chip->p.erasesize);
		char what[64];
		uint64_t i, upto;

		snprintf(what, sizeof(what), "erase of block %u", block);
		if (ff) {
			memset(ff, 0xFF, chip->p.erasesize);
			chip_tear(chip, d, ff, chip->p.erasesize, NULL, NULL, 0,
				  what);
			free(ff);
		} else {
			chip->powered = false;
			chip->power_gen++;
		}
		/* Pages wholly erased may be programmed again. */
		for (i = 0, upto = 0; i < chip->pages_per_block; i++) {
			const uint8_t *pg = d + i * chip->page_size;
			uint32_t k;

			for (k = 0; k < chip->page_size && pg[k] == 0xFF; k++)
				;
			if (k < chip->page_size)
				break;
			upto = i + 1;
		}
		for (i = 0; i < upto; i++) {
			if (ps)
				memset(chip->oob + (first + i) * ps, 0xFF, ps);
			chip->programmed[first + i] = 0;
		}
		pthread_mutex_unlock(&chip->lock);
		return -EIO;
	}
	memset(d, 0xFF, chip->p.erasesize);
	if (ps)
		memset(chip->oob + first * ps, 0xFF,
		       (size_t)chip->pages_per_block * ps);
	memset(chip->programmed + first, 0, chip->pages_per_block);
	pthread_mutex_unlock(&chip->lock);
	return 0;
}

/*
 * Program [ofs, ofs+len) inside one page (NAND: the whole page, with its
 * OOB when oob is set).  Bits only go from 1 to 0.
 */
static int chip_program(struct mtd_chip *chip, uint64_t ofs, size_t len,
			const uint8_t *buf, const uint8_t *oob)
{
	uint32_t block = (uint32_t)(ofs / chip->p.erasesize);
	uint64_t page = ofs / chip->page_size;
	bool nand = chip->p.type == MTD_NANDFLASH;
	uint8_t *d = chip->data + ofs;
	uint8_t *o = nand ? chip->oob + page * chip->p.oobsize : NULL;
	size_t olen = oob ? chip->p.oobsize : 0;
	uint8_t *want = NULL, *owant = NULL;
	bool cut_during;
	uint64_t gen;
	uint32_t w;
	size_t i;

	pthread_mutex_lock(&chip->lock);
	gen = chip->power_gen;
	if (!chip->powered)
		goto eio;
	pthread_mutex_unlock(&chip->lock);
	chip_delay(chip, chip->p.t_prog_us);

	pthread_mutex_lock(&chip->lock);
	/* power went while the program ran (tPROG): it is torn below */
	cut_during = gen != chip->power_gen && !chip->powered;
	if (gen != chip->power_gen && !cut_during)
		goto eio;
	if (chip->bbt[block] != BBT_GOOD) {
		pr_err("mtd: program of bad block %u refused", block);
		goto eio;
	}
	if (chip->erase_count[block] >= chip->p.endurance) {
		chip_grow_bad(chip, block, "worn out: program failed");
		goto eio;
	}
	if (nand && chip->programmed[page]) {
		pr_err("mtd: page %" PRIu64 " (block %u) programmed twice "
		       "since its erase: NAND refuses",
		       page, block);
		goto eio;
	}
	w = weak_index(chip->p.weakpages, chip->p.nr_weakpages, (uint32_t)page);
	if (w != UINT32_MAX &&
	    chip->weak_programs[w]++ >= chip->p.weakpages[w].max) {
		pr_err("mtd: weak page %" PRIu64 ": program failed", page);
		goto eio;
	}
	chip->programs++;
	chip->bytes_programmed += len;
	chip->programmed[page] = 1;
	if (cut_during || chip_cut_due(chip)) {
		char what[64];

		want = malloc(len + olen);
		if (want) {
			owant = want + len;
			for (i = 0; i < len; i++)
				want[i] = d[i] & buf[i];
			for (i = 0; i < olen; i++)
				owant[i] = o[i] & oob[i];
			snprintf(what, sizeof(what),
				 "program of page %" PRIu64 " (block %u)", page,
				 block);
			chip_tear(chip, d, want, len, o, owant, olen, what);
			free(want);
		} else {
			chip->powered = false;
			chip->power_gen++;
		}
		goto eio;
	}
	for (i = 0; i < len; i++)
		d[i] &= buf[i];
	for (i = 0; i < olen; i++)
		o[i] &= oob[i];
	pthread_mutex_unlock(&chip->lock);
	return 0;
eio:
	pthread_mutex_unlock(&chip->lock);
	return -EIO;
}

/* Read within one page; bitflips and ECC, grave pages. */
static int chip_read_page(struct mtd_chip *chip, uint64_t ofs, size_t len,
			  uint8_t *buf, uint8_t *oob)
{
	uint64_t page = ofs / chip->page_size;
	bool nand = chip->p.type == MTD_NANDFLASH;
	uint32_t w, flips = 0, i;
	int ret = 0;

	chip_delay(chip, chip->p.t_read_us);
	pthread_mutex_lock(&chip->lock);
	if (!chip->powered) {
		pthread_mutex_unlock(&chip->lock);
		return -EIO;
	}
	chip->reads++;
	if (buf)
		memcpy(buf, chip->data + ofs, len);
	if (oob)
		memcpy(oob, chip->oob + page * chip->p.oobsize,
		       chip->p.oobsize);
	w = weak_index(chip->p.gravepages, chip->p.nr_gravepages,
		       (uint32_t)page);
	if (w != UINT32_MAX &&
	    chip->grave_reads[w]++ >= chip->p.gravepages[w].max) {
		chip->ecc_failed++;
		pthread_mutex_unlock(&chip->lock);
		pr_err("mtd: grave page %" PRIu64 ": read failed: EBADMSG",
		       page);
		return -EBADMSG;
	}
	if (nand && chip->p.bitflips) {
		/*
		 * The flips land in the cells' read-out; ECC puts them back
		 * or gives up, so the caller's copy is either right or the
		 * read fails.
		 */
		flips = chip->p.bitflips;
		if (flips > chip->p.ecc_strength) {
			chip->ecc_failed++;
			ret = -EBADMSG;
		} else {
			chip->ecc_corrected += flips;
			ret = -EUCLEAN;
		}
	}
	pthread_mutex_unlock(&chip->lock);
	if (ret == -EBADMSG) {
		/* What ECC could not mend comes back as read. */
		if (buf)
			for (i = 0; i < flips; i++)
				buf[(ofs / 8 + i * 7919) % len] ^=
					(uint8_t)(1u << (i & 7));
		pr_err("mtd: page %" PRIu64 ": %u bitflips, ECC corrects %u: "
		       "uncorrectable, EBADMSG",
		       page, flips, chip->p.ecc_strength);
	} else if (ret == -EUCLEAN) {
		pr_debug("mtd: page %" PRIu64 ": ECC corrected %u bitflips",
			 page, flips);
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* the MTD calls                                                       */

static int mtd_check(struct mtd_info *mtd, uint64_t ofs, uint64_t len)
{
	if (ofs > mtd->size || len > mtd->size - ofs)
		return -EINVAL;
	if (!mtd_chip_powered(mtd->chip))
		return -EIO;
	return 0;
}

int mtd_read(struct mtd_info *mtd, uint64_t from, size_t len, size_t *retlen,
	     void *buf)
{
	struct mtd_chip *chip = mtd->chip;
	uint64_t pos = mtd->offset + from;
	bool nand = chip->p.type == MTD_NANDFLASH;
	int ret, worst = 0;

	*retlen = 0;
	ret = mtd_check(mtd, from, len);
	if (ret)
		return ret;
	while (*retlen < len) {
		/* NOR reads are not paged: one access per erase block. */
		uint64_t unit = nand ? chip->p.writesize : chip->p.erasesize;
		size_t n = (size_t)(unit - pos % unit);

		if (n > len - *retlen)
			n = len - *retlen;
		ret = chip_read_page(chip, pos, n, (uint8_t *)buf + *retlen,
				     NULL);
		if (ret == -EBADMSG)
			worst = ret;
		else if (ret == -EUCLEAN && !worst)
			worst = ret;
		else if (ret)
			return ret;
		pos += n;
		*retlen += n;
	}
	return worst;
}

int mtd_write(struct mtd_info *mtd, uint64_t to, size_t len, size_t *retlen,
	      const void *buf)
{
	struct mtd_chip *chip = mtd->chip;
	uint64_t pos = mtd->offset + to;
	int ret;

	*retlen = 0;
	ret = mtd_check(mtd, to, len);
	if (ret)
		return ret;
	if (mtd_type_is_nand(mtd) &&
	    (to % mtd->writesize || len % mtd->writesize))
		return -EINVAL;
	while (*retlen < len) {
		uint64_t unit = mtd_type_is_nand(mtd) ? chip->p.writesize
						      : chip->p.erasesize;
		size_t n = (size_t)(unit - pos % unit);

		if (n > len - *retlen)
			n = len - *retlen;
		ret = chip_program(chip, pos, n, (const uint8_t *)buf + *retlen,
				   NULL);
		if (ret)
			return ret;
		pos += n;
		*retlen += n;
	}
	return 0;
}

int mtd_erase(struct mtd_info *mtd, uint64_t ofs, uint64_t len)
{
	uint64_t b;
	int ret = mtd_check(mtd, ofs, len);

	if (ret)
		return ret;
	if (ofs % mtd->erasesize || len % mtd->erasesize)
		return -EINVAL;
	for (b = 0; b < len / mtd->erasesize; b++) {
		ret = chip_erase_block(
			mtd->chip,
			(uint32_t)((mtd->offset + ofs) / mtd->erasesize) +
				(uint32_t)b);
		if (ret)
			return ret;
	}
	return 0;
}

int mtd_write_oob(struct mtd_info *mtd, uint64_t to, const void *data,
		  const void *oob)
{
	int ret = mtd_check(mtd, to, mtd->writesize);

	if (ret)
		return ret;
	if (!mtd_type_is_nand(mtd) || to % mtd->writesize)
		return -EINVAL;
	return chip_program(mtd->chip, mtd->offset + to, mtd->writesize, data,
			    oob);
}

int mtd_read_oob(struct mtd_info *mtd, uint64_t from, void *data, void *oob)
{
	int ret = mtd_check(mtd, from, mtd->writesize);

	if (ret)
		return ret;
	if (!mtd_type_is_nand(mtd) || from % mtd->writesize)
		return -EINVAL;
	return chip_read_page(mtd->chip, mtd->offset + from, mtd->writesize,
			      data, oob);
}

int mtd_block_isbad(struct mtd_info *mtd, uint64_t ofs)
{
	struct mtd_chip *chip = mtd->chip;
	int bad;

	if (ofs >= mtd->size)
		return -EINVAL;
	pthread_mutex_lock(&chip->lock);
	bad = chip->bbt[(mtd->offset + ofs) / mtd->erasesize] != BBT_GOOD;
	pthread_mutex_unlock(&chip->lock);
	return bad;
}

int mtd_block_markbad(struct mtd_info *mtd, uint64_t ofs)
{
	struct mtd_chip *chip = mtd->chip;

	if (ofs >= mtd->size)
		return -EINVAL;
	pthread_mutex_lock(&chip->lock);
	chip_grow_bad(chip, (uint32_t)((mtd->offset + ofs) / mtd->erasesize),
		      "marked bad");
	pthread_mutex_unlock(&chip->lock);
	return 0;
}

int mtd_sync(struct mtd_info *mtd)
{
	return mtd_chip_sync(mtd->chip);
}

/* ------------------------------------------------------------------ */
/* partitions and statistics                                           */

int mtd_parse_parts(struct mtd_chip *chip, const char *parts,
		    struct mtd_info *mtds, int max, struct mq_err *e)
{
	uint64_t off = 0, sz;
	const char *c = parts;
	char item[64];
	int n = 0;

	for (;;) {
		if (c && *c) {
			size_t l = strcspn(c, ",");

			if (l >= sizeof(item) ||
			    (memcpy(item, c, l), item[l] = '\0',
			     mq_parse_size(item, &sz)) ||
			    !sz || sz % chip->p.erasesize)
				return mq_err_set(
					e,
					"parts=%s: sizes must be multiples of "
					"erasesize=%u",
					parts, chip->p.erasesize);
			c += l + (c[l] == ',');
		} else {
			sz = chip->p.size - off;
			if (!sz)
				break;
		}
		if (sz > chip->p.size - off)
			return mq_err_set(e,
					  "parts=%s: more than size=%" PRIu64,
					  parts, chip->p.size);
		if (n == max)
			return mq_err_set(e, "parts=%s: at most %d partitions",
					  parts, max);
		memset(&mtds[n], 0, sizeof(mtds[n]));
		snprintf(mtds[n].name, sizeof(mtds[n].name), "mtd%d", n);
		mtds[n].index = n;
		mtds[n].type = chip->p.type;
		mtds[n].size = sz;
		mtds[n].erasesize = chip->p.erasesize;
		mtds[n].writesize = chip->p.writesize;
		mtds[n].oobsize = chip->p.oobsize;
		mtds[n].offset = off;
		mtds[n].chip = chip;
		off += sz;
		n++;
		if (off == chip->p.size)
			break;
	}
	return n;
}

void mtd_chip_get_stats(struct mtd_chip *chip, uint32_t first, uint32_t nr,
			struct mtd_chip_stats *st)
{
	double sum = 0, sq = 0;
	uint32_t i;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&chip->lock);
	st->reads = chip->reads;
	st->programs = chip->programs;
	st->erases = chip->erases;
	st->bytes_programmed = chip->bytes_programmed;
	st->ecc_corrected = chip->ecc_corrected;
	st->ecc_failed = chip->ecc_failed;
	st->min_erase = UINT32_MAX;
	for (i = first; i < first + nr && i < chip->nr_blocks; i++) {
		uint32_t c = chip->erase_count[i];

		if (chip->bbt[i] != BBT_GOOD)
			st->bad_blocks++;
		if (c < st->min_erase)
			st->min_erase = c;
		if (c > st->max_erase)
			st->max_erase = c;
		sum += c;
		sq += (double)c * c;
	}
	pthread_mutex_unlock(&chip->lock);
	if (st->min_erase == UINT32_MAX)
		st->min_erase = 0;
	if (nr) {
		st->mean_erase = sum / nr;
		st->stddev_erase = sqrt(
			fmax(0, sq / nr - st->mean_erase * st->mean_erase));
	}
}

void mtd_chip_bad_list(struct mtd_chip *chip, uint32_t first, uint32_t nr,
		       char *buf, size_t len)
{
	size_t used = 0;
	uint32_t i;

	if (!len)
		return;
	buf[0] = '\0';
	pthread_mutex_lock(&chip->lock);
	for (i = first; i < first + nr && i < chip->nr_blocks; i++) {
		int n;

		if (chip->bbt[i] == BBT_GOOD)
			continue;
		n = snprintf(buf + used, len - used, "%s%u%s", used ? " " : "",
			     i - first, chip->bbt[i] == BBT_FACTORY ? "f" : "");
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	pthread_mutex_unlock(&chip->lock);
}

uint32_t mtd_chip_erase_count(struct mtd_chip *chip, uint32_t block)
{
	uint32_t c = 0;

	pthread_mutex_lock(&chip->lock);
	if (block < chip->nr_blocks)
		c = chip->erase_count[block];
	pthread_mutex_unlock(&chip->lock);
	return c;
}
