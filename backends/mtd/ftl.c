// SPDX-License-Identifier: GPL-2.0
/*
 * ftl: a power-safe flash translation layer for NAND, ours (Linux's
 * drivers/mtd/ftl.c is the PCMCIA format; this one writes like a log, as
 * UBI and UBIFS do, and uses the blktrans background hook for garbage
 * collection as mtdswap does).
 *
 * Every write of a logical page (writesize bytes) goes to the next erased
 * page of the open erase block, with its metadata in the page's OOB: the
 * logical page number, a sequence number that grows with every program,
 * and a CRC over both and the data.  Nothing else is ever written: the
 * map from logical to physical pages lives in RAM and is rebuilt at
 * start-up and after a power cut by scanning every page's OOB; where two
 * pages claim the same logical page, the higher sequence number wins, and
 * a page whose CRC does not match (a torn program) is ignored.
 *
 * Sectors (512 bytes) are gathered in a one-page write buffer, programmed
 * when the page is complete, when a write goes to another page, and on
 * FLUSH: FLUSH is the durability point.  A page is only ever erased after
 * every valid page in its block has been programmed elsewhere, so a cut
 * during garbage collection loses nothing that was programmed.
 *
 * Garbage collection picks the full block with the fewest valid pages; it
 * runs in the foreground when fewer than FTL_GC_RESERVE blocks are free,
 * and in the idle background hook below FTL_BG_FREE.  New blocks are the
 * free ones with the lowest erase count (dynamic wear levelling); when the
 * spread of erase counts passes FTL_WL_THRESHOLD, the background hook moves
 * the data of the least-worn full block (cold data) so that the block
 * takes its share of the erases (static wear levelling).  A block whose
 * erase fails (worn, weak) is retired; a program that fails closes its
 * block, which garbage collection then reclaims.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blktrans.h"
#include "../../server/mq/log.h"
#include "../common/crc32.h"

#define FTL_MAGIC	 0x46544c31u /* "FTL1" */
#define FTL_OOB_OFFSET	 2	     /* bytes 0-1: bad-block marker */
#define FTL_GC_RESERVE	 2	     /* free blocks user writes leave to GC */
#define FTL_BG_FREE	 4	     /* the background collects below this */
#define FTL_WL_THRESHOLD 16 /* erase-count spread that moves cold data */
#define FTL_UNMAPPED	 UINT32_MAX

enum ftl_block_state { BLK_FREE, BLK_OPEN, BLK_FULL, BLK_BAD };

struct ftl_oob {
	uint32_t magic;
	uint32_t lpn;
	uint64_t seq;
	uint32_t crc;
} __attribute__((packed));

struct ftl_dev {
	struct mtd_blktrans_dev *mbd;
	struct mtd_info *mtd;
	uint32_t nr_blocks, ppb, spp; /* pages a block, sectors a page */
	uint32_t nr_lpn;	      /* logical pages exported */
	uint32_t *map;		      /* lpn -> ppn */
	uint32_t *p2l;		      /* ppn -> lpn of a valid page */
	uint32_t *valid;	      /* valid pages per block */
	uint8_t *state;		      /* enum ftl_block_state */
	uint32_t free_blocks;
	uint32_t open_block, next_page; /* open_block UINT32_MAX: none */
	uint64_t seq;

	uint8_t *wbuf; /* the page being gathered */
	uint32_t wbuf_lpn;
	bool wbuf_dirty;
	uint8_t *rbuf; /* the last page read */
	uint32_t rbuf_lpn;
	uint8_t *gcbuf;

	/*
	 * A block changed state (and erases come with one) since the
	 * background hook last looked at the erase counts: only then can
	 * its wear-levelling answer differ.
	 */
	bool wl_stale;
	uint64_t gc_runs, wl_moves, wl_scans, programs, recovered_pages;
};

static uint32_t ftl_page_crc(const uint8_t *data, size_t len,
			     const struct ftl_oob *o)
{
	uint32_t crc = crc32_ieee(0, data, len);

	return crc32_ieee(crc, o, offsetof(struct ftl_oob, crc));
}

static uint32_t blk_of(struct ftl_dev *ftl, uint32_t ppn)
{
	return ppn / ftl->ppb;
}

static uint64_t ppn_ofs(struct ftl_dev *ftl, uint32_t ppn)
{
	return (uint64_t)ppn * ftl->mtd->writesize;
}

static uint32_t erase_count(struct ftl_dev *ftl, uint32_t b)
{
	return mtd_chip_erase_count(
		ftl->mtd->chip,
		(uint32_t)(ftl->mtd->offset / ftl->mtd->erasesize) + b);
}

static void set_state(struct ftl_dev *ftl, uint32_t b,
		      enum ftl_block_state state)
{
	ftl->state[b] = state;
	ftl->wl_stale = true;
}

/* ------------------------------------------------------------------ */
/* allocation, programs and garbage collection                         */

static int ftl_gc_block(struct ftl_dev *ftl, uint32_t victim);

static void ftl_invalidate(struct ftl_dev *ftl, uint32_t ppn)
{
	if (ppn == FTL_UNMAPPED)
		return;
	ftl->p2l[ppn] = FTL_UNMAPPED;
	ftl->valid[blk_of(ftl, ppn)]--;
}

static uint32_t ftl_pick_free(struct ftl_dev *ftl)
{
	uint32_t b, best = UINT32_MAX, best_ec = UINT32_MAX;

	for (b = 0; b < ftl->nr_blocks; b++) {
		uint32_t ec;

		if (ftl->state[b] != BLK_FREE)
			continue;
		ec = erase_count(ftl, b);
		if (ec < best_ec) {
			best = b;
			best_ec = ec;
		}
	}
	return best;
}

/* The full block with the fewest valid pages, the least worn first. */
static uint32_t ftl_pick_victim(struct ftl_dev *ftl)
{
	uint32_t b, best = UINT32_MAX;

	for (b = 0; b < ftl->nr_blocks; b++) {
		if (ftl->state[b] != BLK_FULL || ftl->valid[b] >= ftl->ppb)
			continue;
		if (best == UINT32_MAX || ftl->valid[b] < ftl->valid[best] ||
		    (ftl->valid[b] == ftl->valid[best] &&
		     erase_count(ftl, b) < erase_count(ftl, best)))
			best = b;
	}
	return best;
}

/* The next erased page; user writes keep FTL_GC_RESERVE blocks for GC. */
static int ftl_alloc_page(struct ftl_dev *ftl, bool for_gc, uint32_t *ppn)
{
	uint32_t b;
	int ret;

	if (ftl->open_block != UINT32_MAX && ftl->next_page < ftl->ppb) {
		*ppn = ftl->open_block * ftl->ppb + ftl->next_page++;
		return 0;
	}
	if (ftl->open_block != UINT32_MAX) {
		set_state(ftl, ftl->open_block, BLK_FULL);
		ftl->open_block = UINT32_MAX;
	}
	while (!for_gc && ftl->free_blocks <= FTL_GC_RESERVE) {
		uint32_t victim = ftl_pick_victim(ftl);

		if (victim == UINT32_MAX)
			return -ENOSPC;
		ret = ftl_gc_block(ftl, victim);
		if (ret)
			return ret;
		/* the copies may have opened a block with room left */
		if (ftl->open_block != UINT32_MAX &&
		    ftl->next_page < ftl->ppb) {
			*ppn = ftl->open_block * ftl->ppb + ftl->next_page++;
			return 0;
		}
	}
	b = ftl_pick_free(ftl);
	if (b == UINT32_MAX)
		return -ENOSPC;
	set_state(ftl, b, BLK_OPEN);
	ftl->free_blocks--;
	ftl->open_block = b;
	ftl->next_page = 0;
	*ppn = b * ftl->ppb + ftl->next_page++;
	return 0;
}

/* Program logical page lpn with data at a new place and map it there. */
static int ftl_write_page(struct ftl_dev *ftl, uint32_t lpn,
			  const uint8_t *data, bool for_gc)
{
	uint8_t oob[ftl->mtd->oobsize];
	struct ftl_oob o;
	uint32_t ppn;
	int tries, ret;

	for (tries = 0; tries < 8; tries++) {
		ret = ftl_alloc_page(ftl, for_gc, &ppn);
		if (ret)
			return ret;
		o.magic = FTL_MAGIC;
		o.lpn = lpn;
		o.seq = ftl->seq++;
		o.crc = ftl_page_crc(data, ftl->mtd->writesize, &o);
		memset(oob, 0xFF, sizeof(oob));
		memcpy(oob + FTL_OOB_OFFSET, &o, sizeof(o));
		ret = mtd_write_oob(ftl->mtd, ppn_ofs(ftl, ppn), data, oob);
		if (!ret)
			break;
		if (!mtd_chip_powered(ftl->mtd->chip))
			return -EIO;
		/* The page failed: close its block; GC reclaims it. */
		pr_warn("%s: program of page %u failed: closing block %u",
			ftl->mbd->disk.disk_name, ppn, blk_of(ftl, ppn));
		if (ftl->open_block == blk_of(ftl, ppn)) {
			set_state(ftl, ftl->open_block, BLK_FULL);
			ftl->open_block = UINT32_MAX;
		}
	}
	if (ret)
		return ret;
	ftl->programs++;
	mtd_blktrans_programmed(ftl->mbd, ftl->mtd->writesize);
	ftl_invalidate(ftl, ftl->map[lpn]);
	ftl->map[lpn] = ppn;
	ftl->p2l[ppn] = lpn;
	ftl->valid[blk_of(ftl, ppn)]++;
	return 0;
}

/*
 * Move every valid page out of victim, then erase it.  The erase comes
 * only after every copy is programmed: a cut in between leaves two copies,
 * and the scan takes the newer.
 */
static int ftl_gc_block(struct ftl_dev *ftl, uint32_t victim)
{
	uint32_t i, ppn, lpn;
	size_t retlen;
	int ret;

	set_state(ftl, victim, BLK_FULL); /* not a free-page source meanwhile */
	for (i = 0; i < ftl->ppb && ftl->valid[victim]; i++) {
		ppn = victim * ftl->ppb + i;
		lpn = ftl->p2l[ppn];
		if (lpn == FTL_UNMAPPED)
			continue;
		ret = mtd_read(ftl->mtd, ppn_ofs(ftl, ppn), ftl->mtd->writesize,
			       &retlen, ftl->gcbuf);
		if (ret && !mtd_is_bitflip(ret)) {
			if (!mtd_chip_powered(ftl->mtd->chip))
				return -EIO;
			pr_err("%s: GC cannot read page %u (logical %u): its "
			       "data is lost",
			       ftl->mbd->disk.disk_name, ppn, lpn);
			ftl_invalidate(ftl, ppn);
			ftl->map[lpn] = FTL_UNMAPPED;
			continue;
		}
		ret = ftl_write_page(ftl, lpn, ftl->gcbuf, true);
		if (ret)
			return ret;
	}
	ret = mtd_erase(ftl->mtd, (uint64_t)victim * ftl->mtd->erasesize,
			ftl->mtd->erasesize);
	ftl->gc_runs++;
	if (ret) {
		if (!mtd_chip_powered(ftl->mtd->chip))
			return -EIO;
		set_state(ftl, victim, BLK_BAD);
		pr_warn("%s: block %u retired (erase failed, %u erases)",
			ftl->mbd->disk.disk_name, victim,
			erase_count(ftl, victim));
		return 0;
	}
	set_state(ftl, victim, BLK_FREE);
	ftl->free_blocks++;
	return 0;
}

static int ftl_write_wbuf(struct ftl_dev *ftl)
{
	int ret;

	if (!ftl->wbuf_dirty)
		return 0;
	ret = ftl_write_page(ftl, ftl->wbuf_lpn, ftl->wbuf, false);
	/* as mtdblock does: a failed page is not retried forever */
	ftl->wbuf_dirty = false;
	return ret;
}

/* ------------------------------------------------------------------ */
/* the blktrans ops                                                    */

static int ftl_read_lpn(struct ftl_dev *ftl, uint32_t lpn, uint8_t *out)
{
	size_t retlen;
	int ret;

	if (ftl->map[lpn] == FTL_UNMAPPED) {
		memset(out, 0xFF, ftl->mtd->writesize);
		return 0;
	}
	ret = mtd_read(ftl->mtd, ppn_ofs(ftl, ftl->map[lpn]),
		       ftl->mtd->writesize, &retlen, out);
	if (ret && !mtd_is_bitflip(ret))
		return ret;
	return 0;
}

static int ftl_readsect(struct mtd_blktrans_dev *dev, unsigned long block,
			char *buf)
{
	struct ftl_dev *ftl = dev->priv;
	uint32_t lpn = (uint32_t)(block / ftl->spp);
	size_t off = (block % ftl->spp) * 512;

	if (ftl->wbuf_dirty && ftl->wbuf_lpn == lpn) {
		memcpy(buf, ftl->wbuf + off, 512);
		return 0;
	}
	if (ftl->rbuf_lpn != lpn) {
		ftl->rbuf_lpn = FTL_UNMAPPED;
		if (ftl_read_lpn(ftl, lpn, ftl->rbuf))
			return 1;
		ftl->rbuf_lpn = lpn;
	}
	memcpy(buf, ftl->rbuf + off, 512);
	return 0;
}

static int ftl_writesect(struct mtd_blktrans_dev *dev, unsigned long block,
			 char *buf)
{
	struct ftl_dev *ftl = dev->priv;
	uint32_t lpn = (uint32_t)(block / ftl->spp);
	uint32_t idx = (uint32_t)(block % ftl->spp);

	if (ftl->wbuf_dirty && ftl->wbuf_lpn != lpn && ftl_write_wbuf(ftl))
		return 1;
	if (!ftl->wbuf_dirty) {
		/* a page of one sector needs no old data */
		if (ftl->spp > 1) {
			if (ftl->rbuf_lpn == lpn)
				memcpy(ftl->wbuf, ftl->rbuf,
				       ftl->mtd->writesize);
			else if (ftl_read_lpn(ftl, lpn, ftl->wbuf))
				return 1;
		}
		ftl->wbuf_lpn = lpn;
		ftl->wbuf_dirty = true;
	}
	memcpy(ftl->wbuf + (size_t)idx * 512, buf, 512);
	if (ftl->rbuf_lpn == lpn)
		ftl->rbuf_lpn = FTL_UNMAPPED;
	/* the page's last sector: program it now */
	if (idx == ftl->spp - 1 && ftl_write_wbuf(ftl))
		return 1;
	return 0;
}

static int ftl_flush(struct mtd_blktrans_dev *dev)
{
	struct ftl_dev *ftl = dev->priv;
	int ret = ftl_write_wbuf(ftl);

	mtd_sync(dev->mtd);
	return ret;
}

/* Once per idle period: one GC victim, or one cold block moved. */
static void ftl_background(struct mtd_blktrans_dev *dev)
{
	struct ftl_dev *ftl = dev->priv;
	uint32_t b, cold = UINT32_MAX, min_ec = UINT32_MAX, max_ec = 0;

	if (!mtd_chip_powered(dev->mtd->chip))
		return;
	if (ftl->free_blocks < FTL_BG_FREE) {
		b = ftl_pick_victim(ftl);
		if (b != UINT32_MAX && ftl->free_blocks >= 1)
			ftl_gc_block(ftl, b);
		return;
	}
	if (!ftl->wl_stale)
		return;
	ftl->wl_stale = false;
	ftl->wl_scans++;
	for (b = 0; b < ftl->nr_blocks; b++) {
		uint32_t ec;

		if (ftl->state[b] == BLK_BAD)
			continue;
		ec = erase_count(ftl, b);
		if (ec > max_ec)
			max_ec = ec;
		if (ftl->state[b] == BLK_FULL && ec < min_ec) {
			min_ec = ec;
			cold = b;
		}
	}
	if (cold != UINT32_MAX && ftl->free_blocks >= 2 &&
	    max_ec - min_ec > FTL_WL_THRESHOLD) {
		ftl->wl_moves++;
		pr_debug("%s: wear levelling: moving block %u (%u erases, "
			 "most worn %u)",
			 dev->disk.disk_name, cold, min_ec, max_ec);
		ftl_gc_block(ftl, cold);
	}
}

/*
 * Build the map from the flash: every page's OOB, the newest sequence
 * number winning.  A block is free only if every page in it is erased.
 */
static int ftl_scan(struct ftl_dev *ftl)
{
	uint32_t ws = ftl->mtd->writesize, os = ftl->mtd->oobsize;
	uint64_t *seqof = calloc(ftl->nr_lpn, sizeof(uint64_t));
	uint8_t *oob = malloc(os);
	uint32_t b, i, ppn;
	int ret = 0;

	if (!seqof || !oob) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ftl->nr_lpn; i++)
		ftl->map[i] = FTL_UNMAPPED;
	for (i = 0; i < ftl->nr_blocks * ftl->ppb; i++)
		ftl->p2l[i] = FTL_UNMAPPED;
	memset(ftl->valid, 0, ftl->nr_blocks * sizeof(uint32_t));
	ftl->free_blocks = 0;
	ftl->open_block = UINT32_MAX;
	ftl->seq = 1;
	ftl->wbuf_dirty = false;
	ftl->rbuf_lpn = FTL_UNMAPPED;
	ftl->recovered_pages = 0;

	for (b = 0; b < ftl->nr_blocks; b++) {
		bool erased = true;

		if (mtd_block_isbad(ftl->mtd,
				    (uint64_t)b * ftl->mtd->erasesize)) {
			set_state(ftl, b, BLK_BAD);
			continue;
		}
		for (i = 0; i < ftl->ppb; i++) {
			struct ftl_oob o;
			uint32_t k;

			ppn = b * ftl->ppb + i;
			ret = mtd_read_oob(ftl->mtd, ppn_ofs(ftl, ppn),
					   ftl->gcbuf, oob);
			if (ret == -EIO || ret == -EINVAL)
				goto out;
			if (ret == -EBADMSG) {
				ret = 0;
				erased = false;
				continue;
			}
			ret = 0;
			for (k = 0; k < os && oob[k] == 0xFF; k++)
				;
			if (k == os) {
				for (k = 0; k < ws && ftl->gcbuf[k] == 0xFF;
				     k++)
					;
				if (k == ws)
					continue; /* erased */
			}
			erased = false;
			memcpy(&o, oob + FTL_OOB_OFFSET, sizeof(o));
			if (o.magic != FTL_MAGIC || o.lpn >= ftl->nr_lpn ||
			    o.crc != ftl_page_crc(ftl->gcbuf, ws, &o))
				continue; /* torn or foreign */
			if (o.seq >= ftl->seq)
				ftl->seq = o.seq + 1;
			if (ftl->map[o.lpn] != FTL_UNMAPPED &&
			    seqof[o.lpn] > o.seq)
				continue;
			if (ftl->map[o.lpn] != FTL_UNMAPPED)
				ftl->p2l[ftl->map[o.lpn]] = FTL_UNMAPPED;
			ftl->map[o.lpn] = ppn;
			ftl->p2l[ppn] = o.lpn;
			seqof[o.lpn] = o.seq;
		}
		set_state(ftl, b, erased ? BLK_FREE : BLK_FULL);
		if (erased)
			ftl->free_blocks++;
	}
	for (i = 0; i < ftl->nr_lpn; i++)
		if (ftl->map[i] != FTL_UNMAPPED) {
			ftl->valid[blk_of(ftl, ftl->map[i])]++;
			ftl->recovered_pages++;
		}
out:
	free(seqof);
	free(oob);
	return ret;
}

static void ftl_free(struct ftl_dev *ftl)
{
	free(ftl->map);
	free(ftl->p2l);
	free(ftl->valid);
	free(ftl->state);
	free(ftl->wbuf);
	free(ftl->rbuf);
	free(ftl->gcbuf);
	free(ftl);
}

static int ftl_open(struct mtd_blktrans_dev *dev)
{
	struct mtd_info *mtd = dev->mtd;
	struct ftl_dev *ftl;
	uint32_t reserve, npages;
	int ret;

	if (!mtd_type_is_nand(mtd) ||
	    mtd->oobsize < FTL_OOB_OFFSET + sizeof(struct ftl_oob)) {
		pr_err("%s: ftl keeps its map in the OOB: it needs type=nand "
		       "with oobsize >= %zu",
		       dev->disk.disk_name,
		       FTL_OOB_OFFSET + sizeof(struct ftl_oob));
		return -EINVAL;
	}
	ftl = calloc(1, sizeof(*ftl));
	if (!ftl)
		return -ENOMEM;
	ftl->mbd = dev;
	ftl->mtd = mtd;
	ftl->nr_blocks = (uint32_t)(mtd->size / mtd->erasesize);
	ftl->ppb = mtd->erasesize / mtd->writesize;
	ftl->spp = mtd->writesize / 512;
	/* over-provisioning: room for GC and for blocks that go bad */
	reserve = ftl->nr_blocks / 8;
	if (reserve < FTL_GC_RESERVE + 2)
		reserve = FTL_GC_RESERVE + 2;
	if (ftl->nr_blocks <= reserve) {
		pr_err("%s: ftl needs more than %u erase blocks",
		       dev->disk.disk_name, reserve);
		ftl_free(ftl);
		return -EINVAL;
	}
	ftl->nr_lpn = (ftl->nr_blocks - reserve) * ftl->ppb;
	npages = ftl->nr_blocks * ftl->ppb;
	ftl->map = calloc(ftl->nr_lpn, sizeof(uint32_t));
	ftl->p2l = calloc(npages, sizeof(uint32_t));
	ftl->valid = calloc(ftl->nr_blocks, sizeof(uint32_t));
	ftl->state = calloc(ftl->nr_blocks, 1);
	ftl->wbuf = malloc(mtd->writesize);
	ftl->rbuf = malloc(mtd->writesize);
	ftl->gcbuf = malloc(mtd->writesize);
	if (!ftl->map || !ftl->p2l || !ftl->valid || !ftl->state ||
	    !ftl->wbuf || !ftl->rbuf || !ftl->gcbuf) {
		ftl_free(ftl);
		return -ENOMEM;
	}
	ret = ftl_scan(ftl);
	if (ret) {
		ftl_free(ftl);
		return ret;
	}
	dev->priv = ftl;
	dev->size = (uint64_t)ftl->nr_lpn * ftl->spp;
	pr_debug("%s: %u logical pages, %u found on flash, %u free blocks",
		 dev->disk.disk_name, ftl->nr_lpn,
		 (unsigned int)ftl->recovered_pages, ftl->free_blocks);
	return 0;
}

static void ftl_release(struct mtd_blktrans_dev *dev)
{
	struct ftl_dev *ftl = dev->priv;

	if (mtd_chip_powered(dev->mtd->chip) && ftl_write_wbuf(ftl))
		pr_err("%s: the last page could not be written at close",
		       dev->disk.disk_name);
	mtd_sync(dev->mtd);
	ftl_free(ftl);
	dev->priv = NULL;
}

/* Power is back: RAM is gone, the flash tells what was written. */
static int ftl_poweron(struct mtd_blktrans_dev *dev)
{
	struct ftl_dev *ftl = dev->priv;
	int ret = ftl_scan(ftl);

	if (!ret)
		pr_info("%s: recovered %u logical pages from the OOB scan, "
			"%u free blocks",
			dev->disk.disk_name, (unsigned int)ftl->recovered_pages,
			ftl->free_blocks);
	return ret;
}

#define FTL_SHOW(_name, _expr)                                                 \
	static int ftl_show_##_name(struct gendisk *disk, char *buf,           \
				    size_t len)                                \
	{                                                                      \
		struct mtd_blktrans_dev *dev = disk->private_data;             \
		struct ftl_dev *ftl;                                           \
		uint64_t v = 0;                                                \
                                                                               \
		pthread_mutex_lock(&dev->lock);                                \
		ftl = dev->priv;                                               \
		if (ftl)                                                       \
			v = (_expr);                                           \
		pthread_mutex_unlock(&dev->lock);                              \
		return snprintf(buf, len, "%" PRIu64, v);                      \
	}

FTL_SHOW(free_blocks, ftl->free_blocks)
FTL_SHOW(gc_runs, ftl->gc_runs)
FTL_SHOW(wl_moves, ftl->wl_moves)
FTL_SHOW(wl_scans, ftl->wl_scans)
FTL_SHOW(logical_pages, ftl->nr_lpn)
FTL_SHOW(recovered_pages, ftl->recovered_pages)

static const struct disk_attr ftl_attrs[] = {
	{"free_blocks", ftl_show_free_blocks},
	{"gc_runs", ftl_show_gc_runs},
	{"wl_moves", ftl_show_wl_moves},
	{"wl_scans", ftl_show_wl_scans},
	{"logical_pages", ftl_show_logical_pages},
	{"recovered_pages", ftl_show_recovered_pages},
	{NULL},
};

const struct mtd_blktrans_ops ftl_tr = {
	.name = "ftl",
	.blksize = 512,
	.blkshift = 9,
	.open = ftl_open,
	.release = ftl_release,
	.readsect = ftl_readsect,
	.writesect = ftl_writesect,
	.flush = ftl_flush,
	.background = ftl_background,
	.poweron = ftl_poweron,
	.attrs = ftl_attrs,
};

static int ftl_probe(struct mq_device *dev, struct mq_params *p,
		     struct mq_err *e)
{
	return mtd_blktrans_probe(dev, p, e, &ftl_tr, false);
}

const struct mq_driver ftl_driver = {
	.name = "ftl",
	.description = "NAND flash chip (nandsim) through a power-safe "
		       "log-structured FTL with GC and wear levelling; exports "
		       "ftl0...",
	.params = mtd_chip_param_specs,
	.probe = ftl_probe,
	.remove = mtd_blktrans_remove,
	.sync = mtd_blktrans_sync,
	.no_media = MTD_NO_MEDIA,
};
