// SPDX-License-Identifier: GPL-2.0
/*
 * Zone state for zoned device models, after drivers/block/null_blk/zoned.c
 * in Linux (null_init_zoned_dev, null_zone_write, null_check_zone_resources,
 * null_open_zone, null_close_zone, null_finish_zone, null_reset_zone,
 * null_set_zone_cond, null_zone_valid_read_len).  See zoned.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoned.h"
#include "zone_file.h"
#include "../../server/mq/log.h"

int zoned_dev_init(struct zoned_dev *zd, const char *name,
		   const struct zoned_conf *c, struct mq_err *e)
{
	uint64_t zs = c->zone_sectors, cap = c->zone_cap_sectors, start;
	unsigned int i, nr_seq;
	int err;

	memset(zd, 0, sizeof(*zd));
	zd->name = name;
	if (!zs || (zs & (zs - 1)))
		return mq_err_set(e, "%s: zone size must be a power of two",
				  name);
	if (!cap)
		cap = zs;
	if (cap > zs)
		return mq_err_set(e,
				  "%s: zone capacity (%" PRIu64
				  " MB) larger than zone size (%" PRIu64 " MB)",
				  name, cap >> 11, zs >> 11);
	if (!c->capacity || c->capacity / zs > UINT32_MAX - 1)
		return mq_err_set(e,
				  "%s: %" PRIu64
				  " sectors: no room for zones of %" PRIu64
				  " sectors",
				  name, c->capacity, zs);
	zd->zone_sectors = zs;
	zd->zone_cap_sectors = cap;
	zd->nr_zones = (unsigned int)((c->capacity + zs - 1) / zs);
	zd->nr_conv = c->nr_conv;
	if (zd->nr_conv >= zd->nr_zones) {
		zd->nr_conv = zd->nr_zones - 1;
		pr_info("%s: changed the number of conventional zones to %u",
			name, zd->nr_conv);
	}
	nr_seq = zd->nr_zones - zd->nr_conv;
	zd->max_active = c->max_active;
	zd->max_open = c->max_open;
	/* Max active zones has to be < nbr of seq zones in order to be
	 * enforceable */
	if (zd->max_active >= nr_seq) {
		zd->max_active = 0;
		pr_info("%s: zone_max_active limit disabled, limit >= zone count",
			name);
	}
	/* Max open zones has to be <= max active zones */
	if (zd->max_active && zd->max_open > zd->max_active) {
		zd->max_open = zd->max_active;
		pr_info("%s: changed zone_max_open to %u to match zone_max_active",
			name, zd->max_open);
	} else if (zd->max_open >= nr_seq) {
		zd->max_open = 0;
		pr_info("%s: zone_max_open limit disabled, limit >= zone count",
			name);
	}

	zd->zones = calloc(zd->nr_zones, sizeof(*zd->zones));
	if (!zd->zones)
		return mq_err_set(e, "%s: out of memory for %u zones", name,
				  zd->nr_zones);
	for (i = 0, start = 0; i < zd->nr_zones; i++, start += zs) {
		struct blk_zone *z = &zd->zones[i];

		z->start = start;
		z->wp = start;
		/* The last zone may be smaller. */
		z->len = c->capacity - start < zs ? c->capacity - start : zs;
		if (i < zd->nr_conv) {
			z->type = BLK_ZONE_TYPE_CONVENTIONAL;
			z->cond = BLK_ZONE_COND_NOT_WP;
			z->capacity = z->len;
		} else {
			z->type = BLK_ZONE_TYPE_SEQWRITE_REQ;
			z->cond = BLK_ZONE_COND_EMPTY;
			z->capacity = cap < z->len ? cap : z->len;
		}
	}
	zd->zone_locks = calloc(zd->nr_zones, sizeof(*zd->zone_locks));
	if (!zd->zone_locks) {
		free(zd->zones);
		zd->zones = NULL;
		return mq_err_set(e, "%s: out of memory for %u zones", name,
				  zd->nr_zones);
	}
	err = pthread_mutex_init(&zd->lock, NULL);
	for (i = 0; !err && i < zd->nr_zones; i++) {
		err = pthread_mutex_init(&zd->zone_locks[i], NULL);
		if (err) {
			while (i--)
				pthread_mutex_destroy(&zd->zone_locks[i]);
			pthread_mutex_destroy(&zd->lock);
		}
	}
	if (err) {
		free(zd->zone_locks);
		free(zd->zones);
		zd->zones = NULL;
		return mq_err_set(e, "%s: mutex: %s", name, mq_strerror(err));
	}
	return 0;
}

void zoned_dev_destroy(struct zoned_dev *zd)
{
	unsigned int i;

	if (!zd->zones)
		return;
	zone_file_close(zd->zf);
	zd->zf = NULL;
	for (i = 0; i < zd->nr_zones; i++)
		pthread_mutex_destroy(&zd->zone_locks[i]);
	free(zd->zone_locks);
	pthread_mutex_destroy(&zd->lock);
	free(zd->zones);
	zd->zones = NULL;
}

void zoned_set_limits(const struct zoned_dev *zd, struct queue_limits *lim)
{
	lim->zoned = BLK_ZONED_HM;
	lim->chunk_sectors = (unsigned int)zd->zone_sectors;
	lim->nr_zones = zd->nr_zones;
	lim->nr_conv_zones = zd->nr_conv;
	lim->max_open_zones = zd->max_open;
	lim->max_active_zones = zd->max_active;
	/* Zone append is emulated nowhere: at most a zone, as Linux caps it. */
	lim->max_zone_append_sectors = lim->max_sectors < zd->zone_sectors
					       ? lim->max_sectors
					       : (unsigned int)zd->zone_sectors;
}

/* ---- resources: zd->lock held ------------------------------------ */

static int zoned_check_active(struct zoned_dev *zd)
{
	if (!zd->max_active)
		return 0;
	if (zd->nr_exp_open + zd->nr_imp_open + zd->nr_closed < zd->max_active)
		return 0;
	return BLK_STS_ZONE_ACTIVE_RESOURCE;
}

static int __zoned_close_zone(struct zoned_dev *zd, struct blk_zone *z)
{
	switch (z->cond) {
	case BLK_ZONE_COND_CLOSED:
		return 0; /* close operation on closed is not an error */
	case BLK_ZONE_COND_IMP_OPEN:
		zd->nr_imp_open--;
		break;
	case BLK_ZONE_COND_EXP_OPEN:
		zd->nr_exp_open--;
		break;
	default:
		return EIO;
	}
	if (z->wp == z->start) {
		z->cond = BLK_ZONE_COND_EMPTY;
	} else {
		z->cond = BLK_ZONE_COND_CLOSED;
		zd->nr_closed++;
	}
	return 0;
}

/* null_close_imp_open_zone: round robin over the implicitly open ones. */
static void zoned_close_imp_open_zone(struct zoned_dev *zd)
{
	unsigned int i, zno = zd->imp_close_zone_no;

	if (zno >= zd->nr_zones)
		zno = zd->nr_conv;
	for (i = zd->nr_conv; i < zd->nr_zones; i++) {
		struct blk_zone *z = &zd->zones[zno];

		zno++;
		if (zno >= zd->nr_zones)
			zno = zd->nr_conv;
		if (z->cond == BLK_ZONE_COND_IMP_OPEN) {
			__zoned_close_zone(zd, z);
			zd->imp_close_zone_no = zno;
			return;
		}
	}
}

static int zoned_check_open(struct zoned_dev *zd)
{
	if (!zd->max_open)
		return 0;
	if (zd->nr_exp_open + zd->nr_imp_open < zd->max_open)
		return 0;
	if (zd->nr_imp_open && !zoned_check_active(zd)) {
		zoned_close_imp_open_zone(zd);
		return 0;
	}
	return BLK_STS_ZONE_OPEN_RESOURCE;
}

/*
 * This function matches the manage open zone resources function in the
 * ZBC standard, with the addition of max active zones support.
 */
static int zoned_check_zone_resources(struct zoned_dev *zd, struct blk_zone *z)
{
	int ret;

	switch (z->cond) {
	case BLK_ZONE_COND_EMPTY:
		ret = zoned_check_active(zd);
		if (ret)
			return ret;
		/* fallthrough */
	case BLK_ZONE_COND_CLOSED:
		return zoned_check_open(zd);
	default:
		return EIO; /* Should never be called for other states */
	}
}

/* ---- I/O ---------------------------------------------------------- */

static unsigned int zoned_zone_no(const struct zoned_dev *zd, uint64_t sector)
{
	return (unsigned int)(sector / zd->zone_sectors);
}

int zoned_write_begin(struct zoned_dev *zd, uint64_t sector,
		      uint64_t nr_sectors)
{
	unsigned int zno = zoned_zone_no(zd, sector);
	const char *why = NULL;
	struct blk_zone *z;
	int ret = 0;

	if (zno >= zd->nr_zones)
		return EIO;
	z = &zd->zones[zno];
	if (z->type == BLK_ZONE_TYPE_CONVENTIONAL) {
		/* A write may not run on into a sequential zone. */
		if (zoned_zone_no(zd, sector + nr_sectors - 1) >= zd->nr_conv)
			return EIO;
		return 0;
	}
	pthread_mutex_lock(&zd->zone_locks[zno]);
	pthread_mutex_lock(&zd->lock);
	switch (z->cond) {
	case BLK_ZONE_COND_FULL:
		why = "zone is full";
		break;
	case BLK_ZONE_COND_READONLY:
		why = "zone is read-only";
		break;
	case BLK_ZONE_COND_OFFLINE:
		why = "zone is offline";
		break;
	default:
		if (sector != z->wp)
			why = "not at the write pointer";
		else if (z->wp + nr_sectors > z->start + z->capacity)
			why = "past the zone capacity";
	}
	if (!why && (z->cond == BLK_ZONE_COND_CLOSED ||
		     z->cond == BLK_ZONE_COND_EMPTY)) {
		ret = zoned_check_zone_resources(zd, z);
		if (ret) {
			why = zd->nr_exp_open + zd->nr_imp_open >=
						      zd->max_open &&
					      zd->max_open
				      ? "no open zone left (max_open)"
				      : "no active zone left (max_active)";
		} else {
			if (z->cond == BLK_ZONE_COND_CLOSED)
				zd->nr_closed--;
			zd->nr_imp_open++;
			z->cond = BLK_ZONE_COND_IMP_OPEN;
		}
	}
	if (why) {
		if (zd->log_misplaced)
			pr_warn("%s: write of %" PRIu64
				" sectors refused in zone %u (wp 0x%" PRIx64
				", cond %s): offset 0x%" PRIx64
				" (sector 0x%" PRIx64 "): %s",
				zd->name, nr_sectors, zno, z->wp,
				blk_zone_cond_str(z->cond),
				sector << SECTOR_SHIFT, sector, why);
		pthread_mutex_unlock(&zd->lock);
		pthread_mutex_unlock(&zd->zone_locks[zno]);
		return ret ? ret : EIO;
	}
	pthread_mutex_unlock(&zd->lock);
	return 0;
}

int zoned_write_end(struct zoned_dev *zd, uint64_t sector, uint64_t nr_sectors,
		    int err, bool fua)
{
	unsigned int zno = zoned_zone_no(zd, sector);
	struct blk_zone *z = &zd->zones[zno];

	if (z->type == BLK_ZONE_TYPE_CONVENTIONAL)
		return err;
	/* Only a transfer that worked moves the write pointer. */
	if (!err) {
		pthread_mutex_lock(&zd->lock);
		z->wp += nr_sectors;
		if (z->wp == z->start + z->capacity) {
			if (z->cond == BLK_ZONE_COND_EXP_OPEN)
				zd->nr_exp_open--;
			else if (z->cond == BLK_ZONE_COND_IMP_OPEN)
				zd->nr_imp_open--;
			z->cond = BLK_ZONE_COND_FULL;
		}
		pthread_mutex_unlock(&zd->lock);
		if (fua && zd->zf && zone_file_store(zd, zno))
			err = EIO;
	}
	pthread_mutex_unlock(&zd->zone_locks[zno]);
	return err;
}

int zoned_flush(struct zoned_dev *zd, int (*flush)(void *arg), void *arg)
{
	if (zd->zf)
		return zone_file_sync(zd, flush, arg);
	return flush ? flush(arg) : 0;
}

int64_t zoned_read_valid(struct zoned_dev *zd, uint64_t sector,
			 uint64_t nr_sectors)
{
	unsigned int zno = zoned_zone_no(zd, sector);
	struct blk_zone *z;
	int64_t ret;

	if (zno >= zd->nr_zones)
		return -EIO;
	z = &zd->zones[zno];
	if (z->type == BLK_ZONE_TYPE_CONVENTIONAL)
		return (int64_t)nr_sectors;
	pthread_mutex_lock(&zd->lock);
	if (z->cond == BLK_ZONE_COND_OFFLINE)
		ret = -EIO;
	else if (z->cond == BLK_ZONE_COND_READONLY ||
		 sector + nr_sectors <= z->wp)
		ret = (int64_t)nr_sectors;
	else if (sector > z->wp)
		ret = 0;
	else
		ret = (int64_t)(z->wp - sector);
	pthread_mutex_unlock(&zd->lock);
	return ret;
}

/* ---- zone management: zd->lock held ------------------------------ */

static int zoned_open_zone(struct zoned_dev *zd, struct blk_zone *z)
{
	int ret;

	switch (z->cond) {
	case BLK_ZONE_COND_EXP_OPEN:
		return 0; /* open operation on exp open is not an error */
	case BLK_ZONE_COND_EMPTY:
		ret = zoned_check_zone_resources(zd, z);
		if (ret)
			return ret;
		break;
	case BLK_ZONE_COND_IMP_OPEN:
		zd->nr_imp_open--;
		break;
	case BLK_ZONE_COND_CLOSED:
		ret = zoned_check_zone_resources(zd, z);
		if (ret)
			return ret;
		zd->nr_closed--;
		break;
	default:
		return EIO;
	}
	z->cond = BLK_ZONE_COND_EXP_OPEN;
	zd->nr_exp_open++;
	return 0;
}

static int zoned_finish_zone(struct zoned_dev *zd, struct blk_zone *z)
{
	int ret;

	switch (z->cond) {
	case BLK_ZONE_COND_FULL:
		return 0; /* finish operation on full is not an error */
	case BLK_ZONE_COND_EMPTY:
		ret = zoned_check_zone_resources(zd, z);
		if (ret)
			return ret;
		break;
	case BLK_ZONE_COND_IMP_OPEN:
		zd->nr_imp_open--;
		break;
	case BLK_ZONE_COND_EXP_OPEN:
		zd->nr_exp_open--;
		break;
	case BLK_ZONE_COND_CLOSED:
		ret = zoned_check_zone_resources(zd, z);
		if (ret)
			return ret;
		zd->nr_closed--;
		break;
	default:
		return EIO;
	}
	z->cond = BLK_ZONE_COND_FULL;
	z->wp = z->start + z->len;
	return 0;
}

static int zoned_reset_zone(struct zoned_dev *zd, struct blk_zone *z)
{
	switch (z->cond) {
	case BLK_ZONE_COND_EMPTY:
		return 0; /* reset operation on empty is not an error */
	case BLK_ZONE_COND_IMP_OPEN:
		zd->nr_imp_open--;
		break;
	case BLK_ZONE_COND_EXP_OPEN:
		zd->nr_exp_open--;
		break;
	case BLK_ZONE_COND_CLOSED:
		zd->nr_closed--;
		break;
	case BLK_ZONE_COND_FULL:
		break;
	default:
		return EIO;
	}
	z->cond = BLK_ZONE_COND_EMPTY;
	z->wp = z->start; /* the caller drops the data (zoned_mgmt_zone) */
	return 0;
}

static int zoned_mgmt_one(struct zoned_dev *zd, enum blk_zone_op op,
			  struct blk_zone *z)
{
	switch (op) {
	case BLK_ZONE_OP_RESET:
		return zoned_reset_zone(zd, z);
	case BLK_ZONE_OP_OPEN:
		return zoned_open_zone(zd, z);
	case BLK_ZONE_OP_CLOSE:
		return __zoned_close_zone(zd, z);
	case BLK_ZONE_OP_FINISH:
		return zoned_finish_zone(zd, z);
	}
	return EINVAL;
}

/*
 * Whether an "all" operation touches z, as ZBC's ALL bit: reset the
 * open, closed and full ones, open the closed ones, close the open ones,
 * finish the open and closed ones.
 */
static bool zoned_all_applies(enum blk_zone_op op, const struct blk_zone *z)
{
	switch (z->cond) {
	case BLK_ZONE_COND_IMP_OPEN:
	case BLK_ZONE_COND_EXP_OPEN:
		return op != BLK_ZONE_OP_OPEN;
	case BLK_ZONE_COND_CLOSED:
		return op != BLK_ZONE_OP_CLOSE;
	case BLK_ZONE_COND_FULL:
		return op == BLK_ZONE_OP_RESET;
	default:
		return false;
	}
}

/*
 * op on zone zno (when all: only if the ALL bit applies to it), under its
 * zone lock, so that it waits for a write in flight.  The zone file keeps
 * the result before a reset zone's data is dropped: a crash in between
 * leaves the write pointer at the zone start over old data, which reads
 * as zeroes and is overwritten, never a write pointer over dropped data.
 */
static int zoned_mgmt_zone(struct zoned_dev *zd, enum blk_zone_op op,
			   unsigned int zno, bool all)
{
	struct blk_zone *z = &zd->zones[zno];
	bool zero = false;
	int ret = 0;

	pthread_mutex_lock(&zd->zone_locks[zno]);
	pthread_mutex_lock(&zd->lock);
	if (!all || zoned_all_applies(op, z)) {
		zero = op == BLK_ZONE_OP_RESET &&
		       z->cond != BLK_ZONE_COND_EMPTY;
		ret = zoned_mgmt_one(zd, op, z);
	}
	pthread_mutex_unlock(&zd->lock);
	if (!ret && zd->zf && zone_file_store(zd, zno))
		ret = EIO;
	if (!ret && zero && zd->zero)
		zd->zero(zd, z->start, z->len);
	pthread_mutex_unlock(&zd->zone_locks[zno]);
	return ret;
}

int zoned_mgmt(struct zoned_dev *zd, enum blk_zone_op op, unsigned int zone)
{
	unsigned int i;
	int ret = 0;

	if (zone != BLK_ALL_ZONES &&
	    (zone >= zd->nr_zones ||
	     zd->zones[zone].type == BLK_ZONE_TYPE_CONVENTIONAL))
		return EINVAL;
	if (zone != BLK_ALL_ZONES)
		ret = zoned_mgmt_zone(zd, op, zone, false);
	else
		for (i = zd->nr_conv; i < zd->nr_zones && !ret; i++)
			ret = zoned_mgmt_zone(zd, op, i, true);
	return ret;
}

int zoned_discard(struct zoned_dev *zd, uint64_t sector, uint64_t nr_sectors)
{
	uint64_t end = sector + nr_sectors;
	unsigned int zno = zoned_zone_no(zd, sector), last, i;
	int ret = 0;

	if (!nr_sectors || zno >= zd->nr_zones)
		return EINVAL;
	last = zoned_zone_no(zd, end - 1);
	if (last >= zd->nr_zones)
		return EINVAL;
	if (last < zd->nr_conv)
		return -1; /* conventional only: an ordinary discard */
	/* Whole sequential zones only, from a zone start to a zone end. */
	if (zno < zd->nr_conv || sector != zd->zones[zno].start ||
	    end != zd->zones[last].start + zd->zones[last].len)
		return EINVAL;
	for (i = zno; i <= last && !ret; i++)
		ret = zoned_mgmt_zone(zd, BLK_ZONE_OP_RESET, i, false);
	return ret;
}

int zoned_fire_cond(struct zoned_dev *zd, const char *value,
		    enum blk_zone_cond cond, struct mq_err *e)
{
	struct blk_zone *z;
	bool zero = false;
	int64_t zone;

	if (cond != BLK_ZONE_COND_READONLY && cond != BLK_ZONE_COND_OFFLINE)
		return EINVAL;
	if (mq_attr_number(value, 0, (int64_t)zd->nr_zones - 1, &zone)) {
		mq_err_set(e, "takes a zone number 0..%u", zd->nr_zones - 1);
		return EINVAL;
	}
	if (zd->zones[zone].type == BLK_ZONE_TYPE_CONVENTIONAL) {
		mq_err_set(e, "zone %" PRId64 " is conventional", zone);
		return EINVAL;
	}
	z = &zd->zones[zone];
	pthread_mutex_lock(&zd->zone_locks[zone]);
	pthread_mutex_lock(&zd->lock);
	/*
	 * If the read-only condition is requested again to zones already in
	 * read-only condition, restore back normal empty condition.  Do the
	 * same if the offline condition is requested for offline zones.
	 */
	if (z->cond == cond) {
		z->cond = BLK_ZONE_COND_EMPTY;
		z->wp = z->start;
		zero = true;
	} else {
		if (z->cond != BLK_ZONE_COND_READONLY &&
		    z->cond != BLK_ZONE_COND_OFFLINE) {
			/* finish it, without resource checks: it leaves */
			if (z->cond == BLK_ZONE_COND_IMP_OPEN)
				zd->nr_imp_open--;
			else if (z->cond == BLK_ZONE_COND_EXP_OPEN)
				zd->nr_exp_open--;
			else if (z->cond == BLK_ZONE_COND_CLOSED)
				zd->nr_closed--;
		}
		z->cond = cond;
		z->wp = UINT64_MAX;
	}
	pthread_mutex_unlock(&zd->lock);
	if (zd->zf && zone_file_store(zd, (unsigned int)zone))
		pr_err("%s: zone %" PRId64 ": the zone file did not keep it",
		       zd->name, zone);
	else if (zero && zd->zero)
		zd->zero(zd, z->start, z->len);
	pthread_mutex_unlock(&zd->zone_locks[zone]);
	pr_info("%s: zone %" PRId64 ": %s toggled", zd->name, zone,
		cond == BLK_ZONE_COND_READONLY ? "read-only" : "offline");
	return 0;
}

int zoned_report(struct zoned_dev *zd, unsigned int idx, unsigned int nr,
		 report_zones_cb *cb, void *data)
{
	struct blk_zone z;
	unsigned int i;
	int ret;

	for (i = 0; i < nr && idx + i < zd->nr_zones; i++) {
		pthread_mutex_lock(&zd->lock);
		z = zd->zones[idx + i];
		pthread_mutex_unlock(&zd->lock);
		ret = cb(&z, idx + i, data);
		if (ret)
			return ret < 0 ? ret : -ret;
	}
	return (int)i;
}
