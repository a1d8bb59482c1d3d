// SPDX-License-Identifier: GPL-2.0
/*
 * The zone file, PATH.zones beside media=file:PATH (format and crash
 * rules in zone_file.h).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zone_file.h"
#include "../../server/mq/log.h"
#include "crc32.h"

#define ZF_MAGIC      "MQBLKZN1"
#define ZF_VERSION    1
#define ZF_HEADER     4096
#define ZF_HEADER_CRC 48 /* the header's CRC covers the bytes before it */
#define ZF_ENTRY      16

struct zone_file {
	int fd;
	char *path;
	/* Orders the entries' writes, so the newest state lands last. */
	pthread_mutex_t lock;
	struct blk_zone *stored; /* what the file holds, zone by zone */
	struct blk_zone *snap;	 /* zone_file_sync's snapshot */
};

static void put32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}
static void put64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}
static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}
static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static uint64_t zd_capacity(const struct zoned_dev *zd)
{
	const struct blk_zone *last = &zd->zones[zd->nr_zones - 1];

	return last->start + last->len;
}

static void zf_header(const struct zoned_dev *zd, unsigned char *h)
{
	memset(h, 0, ZF_HEADER);
	memcpy(h, ZF_MAGIC, 8);
	put32(h + 8, ZF_VERSION);
	put32(h + 12, ZF_HEADER);
	put64(h + 16, zd_capacity(zd));
	put64(h + 24, zd->zone_sectors);
	put64(h + 32, zd->zone_cap_sectors);
	put32(h + 40, zd->nr_zones);
	put32(h + 44, zd->nr_conv);
	put32(h + ZF_HEADER_CRC, crc32_ieee(0, h, ZF_HEADER_CRC));
}

static uint32_t zf_entry_crc(unsigned int zno, const unsigned char *e)
{
	unsigned char n[4];

	put32(n, zno);
	return crc32_ieee(crc32_ieee(0, n, 4), e, 12);
}

static void zf_entry(unsigned int zno, const struct blk_zone *z,
		     unsigned char *e)
{
	memset(e, 0, ZF_ENTRY);
	put64(e, z->wp);
	e[8] = (unsigned char)z->cond;
	e[9] = (unsigned char)z->type;
	put32(e + 12, zf_entry_crc(zno, e));
}

static off_t zf_entry_off(unsigned int zno)
{
	return (off_t)ZF_HEADER + (off_t)zno * ZF_ENTRY;
}

static int zf_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int zf_pread(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : ENODATA; /* short: truncated */
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* ---- making a fresh one ------------------------------------------- */

static int zf_extent_data(void *arg, uint64_t off, uint64_t len,
			  unsigned int type)
{
	(void)off;
	(void)len;
	if (!(type & (MQ_EXTENT_HOLE | MQ_EXTENT_ZERO)))
		*(bool *)arg = true;
	return 0;
}

/* PATH.zones.tmp with every zone as zd has it, then renamed in place. */
static int zf_create(const struct zoned_dev *zd, const char *path,
		     struct mq_err *e)
{
	size_t len = ZF_HEADER + (size_t)zd->nr_zones * ZF_ENTRY;
	char *tmp = NULL, *dir = NULL;
	unsigned char *buf;
	int fd = -1, dfd, err = 0;
	unsigned int i;

	buf = malloc(len);
	if (!buf || asprintf(&tmp, "%s.tmp", path) < 0) {
		free(buf);
		return mq_err_set(e, "%s: out of memory", zd->name);
	}
	zf_header(zd, buf);
	for (i = 0; i < zd->nr_zones; i++)
		zf_entry(i, &zd->zones[i], buf + zf_entry_off(i));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		err = errno;
	if (!err)
		err = zf_pwrite(fd, buf, len, 0);
	if (!err && fsync(fd))
		err = errno;
	if (fd >= 0 && close(fd) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		unlink(tmp);
		mq_err_set(e, "%s: cannot make the zone file %s: %s", zd->name,
			   path, mq_strerror(err));
	} else {
		/* The rename itself durable. */
		dir = strdup(path);
		dfd = dir ? open(dirname(dir),
				 O_RDONLY | O_DIRECTORY | O_CLOEXEC)
			  : -1;
		if (dfd >= 0) {
			if (fsync(dfd))
				pr_warn("%s: fsync of %s's directory: %s",
					zd->name, path, mq_strerror(errno));
			close(dfd);
		}
		free(dir);
	}
	free(tmp);
	free(buf);
	return err ? -1 : 0;
}

/* ---- loading one --------------------------------------------------- */

static int zf_check_header(const struct zoned_dev *zd, const char *path,
			   const unsigned char *h, const char *size_key,
			   struct mq_err *e)
{
	if (memcmp(h, ZF_MAGIC, 8) || get32(h + 8) != ZF_VERSION ||
	    get32(h + 12) != ZF_HEADER)
		return mq_err_set(e, "%s: %s is not a zone file of version %d",
				  zd->name, path, ZF_VERSION);
	if (get32(h + ZF_HEADER_CRC) != crc32_ieee(0, h, ZF_HEADER_CRC))
		return mq_err_set(e, "%s: %s: the header's checksum is wrong",
				  zd->name, path);
	if (get64(h + 16) != zd_capacity(zd))
		return mq_err_set(e,
				  "%s: %s=%" PRIu64 " but the zone file %s "
				  "was made for %" PRIu64 " bytes",
				  zd->name, size_key,
				  zd_capacity(zd) << SECTOR_SHIFT, path,
				  get64(h + 16) << SECTOR_SHIFT);
	if (get64(h + 24) != zd->zone_sectors)
		return mq_err_set(e,
				  "%s: zone_size=%" PRIu64
				  "M but the zone file "
				  "%s was made for %" PRIu64 "M zones",
				  zd->name, zd->zone_sectors >> 11, path,
				  get64(h + 24) >> 11);
	if (get64(h + 32) != zd->zone_cap_sectors)
		return mq_err_set(e,
				  "%s: zone_capacity=%" PRIu64 "M but the zone "
				  "file %s was made for %" PRIu64 "M",
				  zd->name, zd->zone_cap_sectors >> 11, path,
				  get64(h + 32) >> 11);
	if (get32(h + 40) != zd->nr_zones) /* follows from the above */
		return mq_err_set(e, "%s: %s holds %u zones, not %u", zd->name,
				  path, get32(h + 40), zd->nr_zones);
	if (get32(h + 44) != zd->nr_conv)
		return mq_err_set(e,
				  "%s: zone_nr_conv=%u but the zone file %s "
				  "was made for %u",
				  zd->name, zd->nr_conv, path, get32(h + 44));
	return 0;
}

/* One entry into z (zd->zones[zno] as built): -1 with e when bad. */
static int zf_load_entry(const struct zoned_dev *zd, const char *path,
			 unsigned int zno, const unsigned char *en,
			 struct blk_zone *z, struct mq_err *e)
{
	uint64_t wp = get64(en);
	unsigned int cond = en[8];
	bool ok;

	if (get32(en + 12) != zf_entry_crc(zno, en) || en[9] != z->type)
		return mq_err_set(e, "%s: %s: zone %u: bad entry", zd->name,
				  path, zno);
	if (z->type == BLK_ZONE_TYPE_CONVENTIONAL)
		ok = cond == BLK_ZONE_COND_NOT_WP && wp == z->start;
	else
		switch (cond) {
		case BLK_ZONE_COND_EMPTY:
			ok = wp == z->start;
			break;
		case BLK_ZONE_COND_IMP_OPEN:
		case BLK_ZONE_COND_EXP_OPEN:
		case BLK_ZONE_COND_CLOSED:
			ok = wp >= z->start && wp < z->start + z->capacity;
			break;
		case BLK_ZONE_COND_FULL:
			ok = wp >= z->start + z->capacity &&
			     wp <= z->start + z->len;
			break;
		case BLK_ZONE_COND_READONLY:
		case BLK_ZONE_COND_OFFLINE:
			ok = wp == UINT64_MAX;
			break;
		default:
			ok = false;
		}
	if (!ok)
		return mq_err_set(e,
				  "%s: %s: zone %u: condition %u with write "
				  "pointer 0x%" PRIx64 " is impossible",
				  zd->name, path, zno, cond, wp);
	z->wp = wp;
	z->cond = (enum blk_zone_cond)cond;
	return 0;
}

static int zf_load(struct zoned_dev *zd, struct zone_file *zf,
		   const char *size_key, bool keep_open, struct mq_err *e)
{
	size_t len = (size_t)zd->nr_zones * ZF_ENTRY;
	unsigned char *buf = malloc(ZF_HEADER + len);
	unsigned int i;
	int err;

	if (!buf)
		return mq_err_set(e, "%s: out of memory", zd->name);
	err = zf_pread(zf->fd, buf, ZF_HEADER, 0);
	if (err) {
		mq_err_set(e, "%s: %s: cannot read its header: %s", zd->name,
			   zf->path,
			   err == ENODATA ? "too short" : mq_strerror(err));
		goto out;
	}
	if (zf_check_header(zd, zf->path, buf, size_key, e)) {
		err = EINVAL;
		goto out;
	}
	err = zf_pread(zf->fd, buf + ZF_HEADER, len, ZF_HEADER);
	if (err) {
		mq_err_set(e, "%s: %s: cannot read its zones: %s", zd->name,
			   zf->path,
			   err == ENODATA ? "too short" : mq_strerror(err));
		goto out;
	}
	for (i = 0; i < zd->nr_zones; i++) {
		/* stored: what the file says, before keep_open's change */
		struct blk_zone *z = &zd->zones[i];

		zf->stored[i] = *z;
		if (zf_load_entry(zd, zf->path, i, buf + zf_entry_off(i),
				  &zf->stored[i], e)) {
			err = EINVAL;
			goto out;
		}
		*z = zf->stored[i];
		/* ZBC: a power cycle closes the open zones. */
		if (!keep_open && (z->cond == BLK_ZONE_COND_IMP_OPEN ||
				   z->cond == BLK_ZONE_COND_EXP_OPEN))
			z->cond = z->wp == z->start ? BLK_ZONE_COND_EMPTY
						    : BLK_ZONE_COND_CLOSED;
	}
	/* The counts follow the conditions. */
	zd->nr_imp_open = zd->nr_exp_open = zd->nr_closed = 0;
	for (i = zd->nr_conv; i < zd->nr_zones; i++) {
		switch (zd->zones[i].cond) {
		case BLK_ZONE_COND_IMP_OPEN:
			zd->nr_imp_open++;
			break;
		case BLK_ZONE_COND_EXP_OPEN:
			zd->nr_exp_open++;
			break;
		case BLK_ZONE_COND_CLOSED:
			zd->nr_closed++;
			break;
		default:
			break;
		}
	}
	if (zd->max_open && zd->nr_imp_open + zd->nr_exp_open > zd->max_open) {
		mq_err_set(e, "%s: zone_max_open=%u but %s has %u open zones",
			   zd->name, zd->max_open, zf->path,
			   zd->nr_imp_open + zd->nr_exp_open);
		err = EINVAL;
	} else if (zd->max_active &&
		   zd->nr_imp_open + zd->nr_exp_open + zd->nr_closed >
			   zd->max_active) {
		mq_err_set(e,
			   "%s: zone_max_active=%u but %s has %u active zones",
			   zd->name, zd->max_active, zf->path,
			   zd->nr_imp_open + zd->nr_exp_open + zd->nr_closed);
		err = EINVAL;
	}
out:
	free(buf);
	return err ? -1 : 0;
}

/* ---- attach, close ------------------------------------------------- */

int zone_file_attach(struct zoned_dev *zd, struct media *m,
		     const char *size_key, bool keep_open, struct mq_err *e)
{
	struct zone_file *zf;
	const char *image;
	bool data = false;
	int err;

	zd->zf = NULL;
	if (!strcmp(m->ops->name, "ram"))
		return 0; /* forgets the data too */
	if (strcmp(m->ops->name, "file")) {
		pr_info("%s: media=%s keeps no zone state: every zone starts "
			"empty",
			zd->name, m->desc);
		return 0;
	}
	if (strncmp(m->desc, "file:", 5) ||
	    strlen(m->desc) >= sizeof(m->desc) - 1)
		return mq_err_set(e,
				  "%s: media=%s: the path is too long for "
				  "a zone file beside it",
				  zd->name, m->desc);
	image = m->desc + 5;
	zf = calloc(1, sizeof(*zf));
	if (!zf)
		return mq_err_set(e, "%s: out of memory", zd->name);
	zf->fd = -1;
	zf->stored = calloc(zd->nr_zones, sizeof(*zf->stored));
	zf->snap = calloc(zd->nr_zones, sizeof(*zf->snap));
	if (!zf->stored || !zf->snap ||
	    asprintf(&zf->path, "%s.zones", image) < 0) {
		zf->path = NULL;
		mq_err_set(e, "%s: out of memory", zd->name);
		goto fail;
	}
	err = pthread_mutex_init(&zf->lock, NULL);
	if (err) {
		mq_err_set(e, "%s: mutex: %s", zd->name, mq_strerror(err));
		goto fail;
	}
	zf->fd = open(zf->path, O_RDWR | O_CLOEXEC);
	if (zf->fd < 0 && errno == ENOENT) {
		/* A fresh image starts empty; one with data lost its zones. */
		const struct blk_zone *first = &zd->zones[zd->nr_conv];
		uint64_t from = first->start << SECTOR_SHIFT;

		err = media_extents(m, from,
				    (zd_capacity(zd) << SECTOR_SHIFT) - from,
				    zf_extent_data, &data);
		if (err) {
			mq_err_set(e,
				   "%s: media=%s: cannot tell whether it "
				   "holds data: %s",
				   zd->name, m->desc, mq_strerror(err));
			goto fail_lock;
		}
		if (data) {
			mq_err_set(e,
				   "%s: media=%s holds data in its sequential "
				   "zones but its zone file %s is missing: the "
				   "write pointers are lost (start from an "
				   "empty image)",
				   zd->name, m->desc, zf->path);
			goto fail_lock;
		}
		if (zf_create(zd, zf->path, e))
			goto fail_lock;
		memcpy(zf->stored, zd->zones,
		       zd->nr_zones * sizeof(*zf->stored));
		zf->fd = open(zf->path, O_RDWR | O_CLOEXEC);
		if (zf->fd < 0) {
			mq_err_set(e, "%s: %s: %s", zd->name, zf->path,
				   mq_strerror(errno));
			goto fail_lock;
		}
		pr_info("%s: zone state kept in %s (new)", zd->name, zf->path);
	} else if (zf->fd < 0) {
		mq_err_set(e, "%s: %s: %s", zd->name, zf->path,
			   mq_strerror(errno));
		goto fail_lock;
	} else {
		if (zf_load(zd, zf, size_key, keep_open, e))
			goto fail_lock;
		pr_info("%s: zone state from %s", zd->name, zf->path);
	}
	zd->zf = zf;
	return 0;

fail_lock:
	pthread_mutex_destroy(&zf->lock);
fail:
	if (zf->fd >= 0)
		close(zf->fd);
	free(zf->path);
	free(zf->stored);
	free(zf->snap);
	free(zf);
	return -1;
}

void zone_file_close(struct zone_file *zf)
{
	if (!zf)
		return;
	if (fdatasync(zf->fd))
		pr_warn("%s: fdatasync: %s", zf->path, mq_strerror(errno));
	close(zf->fd);
	pthread_mutex_destroy(&zf->lock);
	free(zf->path);
	free(zf->stored);
	free(zf->snap);
	free(zf);
}

/* ---- keeping the state --------------------------------------------- */

static bool zf_same(const struct blk_zone *a, const struct blk_zone *b)
{
	return a->wp == b->wp && a->cond == b->cond;
}

/* Write zone zno's entry as z says when it changed; zf->lock held. */
static int zf_put(struct zone_file *zf, unsigned int zno,
		  const struct blk_zone *z)
{
	unsigned char en[ZF_ENTRY];
	int err;

	if (zf_same(&zf->stored[zno], z))
		return 0;
	zf_entry(zno, z, en);
	err = zf_pwrite(zf->fd, en, sizeof(en), zf_entry_off(zno));
	if (err) {
		pr_err("%s: zone %u: %s", zf->path, zno, mq_strerror(err));
		return err;
	}
	zf->stored[zno] = *z;
	return 0;
}

int zone_file_store(struct zoned_dev *zd, unsigned int zno)
{
	struct zone_file *zf = zd->zf;
	struct blk_zone z;
	int err;

	pthread_mutex_lock(&zf->lock);
	pthread_mutex_lock(&zd->lock);
	z = zd->zones[zno];
	pthread_mutex_unlock(&zd->lock);
	err = zf_put(zf, zno, &z);
	pthread_mutex_unlock(&zf->lock);
	return err;
}

int zone_file_sync(struct zoned_dev *zd, int (*flush)(void *arg), void *arg)
{
	struct zone_file *zf = zd->zf;
	bool changed = false;
	unsigned int i;
	int err = 0;

	pthread_mutex_lock(&zf->lock);
	/*
	 * The snapshot first: every write below its write pointers has
	 * reached the device (its cache or its store), so the flush that
	 * follows makes all of it durable.
	 */
	pthread_mutex_lock(&zd->lock);
	memcpy(zf->snap, zd->zones, zd->nr_zones * sizeof(*zf->snap));
	pthread_mutex_unlock(&zd->lock);
	if (flush)
		err = flush(arg);
	for (i = zd->nr_conv; !err && i < zd->nr_zones; i++) {
		changed |= !zf_same(&zf->stored[i], &zf->snap[i]);
		err = zf_put(zf, i, &zf->snap[i]);
	}
	if (!err && changed && fdatasync(zf->fd)) {
		err = errno;
		pr_err("%s: fdatasync: %s", zf->path, mq_strerror(err));
	}
	pthread_mutex_unlock(&zf->lock);
	return err;
}
