// SPDX-License-Identifier: GPL-2.0
/*
 * Direct MTD block device access, as drivers/mtd/mtdblock.c does it: a
 * single erase-block cache in front of the flash.
 *
 * A write smaller than an erase block reads the whole block into the
 * cache (CLEAN), changes it there (DIRTY), and writes it back, erase then
 * program, when a write goes to another block, on FLUSH and on release.
 * A write that covers a whole erase block goes straight to erase and
 * program.  After a write-back, successful or failed with EIO, the cache
 * is EMPTY, so a bad block is not rewritten again and again.
 *
 * What a power cut costs (the kernel's design, modelled as it is): the
 * cached block's writes not yet written back are lost; and a cut during a
 * write-back, between its erase and the end of its program, loses that
 * whole erase block, including what was flushed to it before.  Every
 * other block is intact.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blktrans.h"
#include "../../server/mq/log.h"

struct mtdblk_dev {
	struct mtd_blktrans_dev *mbd;
	unsigned char *cache_data;
	unsigned long cache_offset;
	unsigned int cache_size;
	enum { STATE_EMPTY, STATE_CLEAN, STATE_DIRTY } cache_state;
	uint64_t writebacks;
};

/*
 * Cache stuff...
 *
 * Since typical flash erasable sectors are much larger than what Linux's
 * buffer cache can handle, we must implement read-modify-write on flash
 * sectors for each block write requests.  To avoid over-erasing flash
 * sectors and to speed things up, we locally cache a whole flash sector
 * while it is being written to until a different sector is required.
 */
static int erase_write(struct mtdblk_dev *mtdblk, unsigned long pos,
		       unsigned int len, const char *buf)
{
	struct mtd_info *mtd = mtdblk->mbd->mtd;
	size_t retlen;
	int ret;

	/* First, let's erase the flash block. */
	ret = mtd_erase(mtd, pos, len);
	if (ret) {
		pr_warn("mtdblock: erase of region [0x%lx, 0x%x] on \"%s\" failed",
			pos, len, mtd->name);
		return ret;
	}

	/* Next, write the data to flash. */
	ret = mtd_write(mtd, pos, len, &retlen, buf);
	mtd_blktrans_programmed(mtdblk->mbd, retlen);
	if (ret)
		return ret;
	if (retlen != len)
		return -EIO;
	return 0;
}

static int write_cached_data(struct mtdblk_dev *mtdblk)
{
	struct mtd_info *mtd = mtdblk->mbd->mtd;
	int ret;

	if (mtdblk->cache_state != STATE_DIRTY)
		return 0;

	pr_debug("mtdblock: writing cached data for \"%s\" at 0x%lx, size 0x%x",
		 mtd->name, mtdblk->cache_offset, mtdblk->cache_size);

	ret = erase_write(mtdblk, mtdblk->cache_offset, mtdblk->cache_size,
			  (const char *)mtdblk->cache_data);
	mtdblk->writebacks++;

	/*
	 * Here we could arguably set the cache state to STATE_CLEAN.
	 * However this could lead to inconsistency since we will not
	 * be notified if this content is altered on the flash by other
	 * means.  Let's declare it empty and leave buffering tasks to
	 * the buffer cache instead.
	 *
	 * If this cache_offset points to a bad block, data cannot be
	 * written to the device.  Clear cache_state to avoid writing to
	 * bad blocks repeatedly.
	 */
	if (ret == 0 || ret == -EIO)
		mtdblk->cache_state = STATE_EMPTY;
	return ret;
}

static int do_cached_write(struct mtdblk_dev *mtdblk, unsigned long pos,
			   unsigned int len, const char *buf)
{
	struct mtd_info *mtd = mtdblk->mbd->mtd;
	unsigned int sect_size = mtdblk->cache_size;
	size_t retlen;
	int ret;

	pr_debug("mtdblock: write on \"%s\" at 0x%lx, size 0x%x", mtd->name,
		 pos, len);

	if (!sect_size) {
		ret = mtd_write(mtd, pos, len, &retlen, buf);
		mtd_blktrans_programmed(mtdblk->mbd, retlen);
		return ret;
	}

	while (len > 0) {
		unsigned long sect_start = (pos / sect_size) * sect_size;
		unsigned int offset = pos - sect_start;
		unsigned int size = sect_size - offset;

		if (size > len)
			size = len;

		if (size == sect_size) {
			/*
			 * We are covering a whole sector.  Thus there is no
			 * need to bother with the cache while it may still be
			 * useful for other partial writes.  (Ours: a cache of
			 * that very sector would now be stale; drop it.)
			 */
			if (mtdblk->cache_state != STATE_EMPTY &&
			    mtdblk->cache_offset == sect_start)
				mtdblk->cache_state = STATE_EMPTY;
			ret = erase_write(mtdblk, pos, size, buf);
			if (ret)
				return ret;
		} else {
			/* Partial sector: need to use the cache */

			if (mtdblk->cache_state == STATE_DIRTY &&
			    mtdblk->cache_offset != sect_start) {
				ret = write_cached_data(mtdblk);
				if (ret)
					return ret;
			}

			if (mtdblk->cache_state == STATE_EMPTY ||
			    mtdblk->cache_offset != sect_start) {
				/* fill the cache with the current sector */
				mtdblk->cache_state = STATE_EMPTY;
				ret = mtd_read(mtd, sect_start, sect_size,
					       &retlen, mtdblk->cache_data);
				if (ret && !mtd_is_bitflip(ret))
					return ret;
				if (retlen != sect_size)
					return -EIO;

				mtdblk->cache_offset = sect_start;
				mtdblk->cache_size = sect_size;
				mtdblk->cache_state = STATE_CLEAN;
			}

			/* write data to our local cache */
			memcpy(mtdblk->cache_data + offset, buf, size);
			mtdblk->cache_state = STATE_DIRTY;
		}

		buf += size;
		pos += size;
		len -= size;
	}

	return 0;
}

static int do_cached_read(struct mtdblk_dev *mtdblk, unsigned long pos,
			  unsigned int len, char *buf)
{
	struct mtd_info *mtd = mtdblk->mbd->mtd;
	unsigned int sect_size = mtdblk->cache_size;
	size_t retlen;
	int ret;

	pr_debug("mtdblock: read on \"%s\" at 0x%lx, size 0x%x", mtd->name, pos,
		 len);

	if (!sect_size) {
		ret = mtd_read(mtd, pos, len, &retlen, buf);
		if (ret && !mtd_is_bitflip(ret))
			return ret;
		return 0;
	}

	while (len > 0) {
		unsigned long sect_start = (pos / sect_size) * sect_size;
		unsigned int offset = pos - sect_start;
		unsigned int size = sect_size - offset;

		if (size > len)
			size = len;

		/*
		 * Check if the requested data is already cached
		 * Read the requested amount of data from our internal cache
		 * if it contains what we want, otherwise we read the data
		 * directly from flash.
		 */
		if (mtdblk->cache_state != STATE_EMPTY &&
		    mtdblk->cache_offset == sect_start) {
			memcpy(buf, mtdblk->cache_data + offset, size);
		} else {
			ret = mtd_read(mtd, pos, size, &retlen, buf);
			if (ret && !mtd_is_bitflip(ret))
				return ret;
			if (retlen != size)
				return -EIO;
		}

		buf += size;
		pos += size;
		len -= size;
	}

	return 0;
}

static int mtdblock_readsect(struct mtd_blktrans_dev *dev, unsigned long block,
			     char *buf)
{
	struct mtdblk_dev *mtdblk = dev->priv;

	if (do_cached_read(mtdblk, block << 9, 512, buf))
		return 1;
	return 0;
}

static int mtdblock_writesect(struct mtd_blktrans_dev *dev, unsigned long block,
			      char *buf)
{
	struct mtdblk_dev *mtdblk = dev->priv;

	if (!mtdblk->cache_data) {
		mtdblk->cache_data = malloc(mtdblk->mbd->mtd->erasesize);
		if (!mtdblk->cache_data)
			return -EINTR;
		/*
		 * -EINTR is not really correct, but it is the best match
		 * documented in man 2 write for all cases.  We could also
		 * return -EAGAIN sometimes, but why bother?
		 */
	}
	if (do_cached_write(mtdblk, block << 9, 512, buf))
		return 1;
	return 0;
}

static int mtdblock_open(struct mtd_blktrans_dev *mbd)
{
	struct mtdblk_dev *mtdblk = calloc(1, sizeof(*mtdblk));

	pr_debug("mtdblock_open");
	if (!mtdblk)
		return -ENOMEM;
	mtdblk->mbd = mbd;
	mbd->priv = mtdblk;
	mbd->size = mbd->mtd->size >> 9;

	/* OK, it's not open. Create cache info for it */
	mtdblk->cache_state = STATE_EMPTY;
	mtdblk->cache_size = mbd->mtd->erasesize;

	if (mtd_type_is_nand(mbd->mtd))
		pr_warn("%s: MTD device '%s' is NAND, please consider using "
			"UBI block devices instead.",
			mbd->tr->name, mbd->mtd->name);
	pr_debug("ok");
	return 0;
}

static void mtdblock_release(struct mtd_blktrans_dev *mbd)
{
	struct mtdblk_dev *mtdblk = mbd->priv;

	pr_debug("mtdblock_release");
	if (write_cached_data(mtdblk))
		pr_err("%s: writing the cached erase block back at close "
		       "failed: its writes are lost",
		       mbd->disk.disk_name);
	mtd_sync(mbd->mtd);
	free(mtdblk->cache_data);
	free(mtdblk);
	mbd->priv = NULL;
	pr_debug("ok");
}

static int mtdblock_flush(struct mtd_blktrans_dev *dev)
{
	struct mtdblk_dev *mtdblk = dev->priv;
	int ret;

	ret = write_cached_data(mtdblk);
	mtd_sync(dev->mtd);
	return ret;
}

/* Ours: the cache was RAM; after a power cut it is empty. */
static int mtdblock_poweron(struct mtd_blktrans_dev *dev)
{
	struct mtdblk_dev *mtdblk = dev->priv;

	if (mtdblk->cache_state == STATE_DIRTY)
		pr_warn("%s: the cached erase block at 0x%lx was never "
			"written back: its writes are lost",
			dev->disk.disk_name, mtdblk->cache_offset);
	mtdblk->cache_state = STATE_EMPTY;
	return 0;
}

static int mtdblock_show_cache_state(struct gendisk *disk, char *buf,
				     size_t len)
{
	struct mtd_blktrans_dev *dev = disk->private_data;
	struct mtdblk_dev *mtdblk;
	static const char *const names[] = {"empty", "clean", "dirty"};
	int n;

	pthread_mutex_lock(&dev->lock);
	mtdblk = dev->priv;
	if (!mtdblk)
		n = snprintf(buf, len, "closed");
	else if (mtdblk->cache_state == STATE_EMPTY)
		n = snprintf(buf, len, "empty");
	else
		n = snprintf(buf, len, "%s 0x%lx", names[mtdblk->cache_state],
			     mtdblk->cache_offset);
	pthread_mutex_unlock(&dev->lock);
	return n;
}

static int mtdblock_show_writebacks(struct gendisk *disk, char *buf, size_t len)
{
	struct mtd_blktrans_dev *dev = disk->private_data;
	uint64_t n = 0;

	pthread_mutex_lock(&dev->lock);
	if (dev->priv)
		n = ((struct mtdblk_dev *)dev->priv)->writebacks;
	pthread_mutex_unlock(&dev->lock);
	return snprintf(buf, len, "%" PRIu64, n);
}

static const struct disk_attr mtdblock_attrs[] = {
	{"cache_state", mtdblock_show_cache_state},
	{"cache_writebacks", mtdblock_show_writebacks},
	{NULL},
};

const struct mtd_blktrans_ops mtdblock_tr = {
	.name = "mtdblock",
	.blksize = 512,
	.blkshift = 9,
	.open = mtdblock_open,
	.flush = mtdblock_flush,
	.release = mtdblock_release,
	.readsect = mtdblock_readsect,
	.writesect = mtdblock_writesect,
	.poweron = mtdblock_poweron,
	.attrs = mtdblock_attrs,
};
