// SPDX-License-Identifier: GPL-2.0
/*
 * dm-log-writes' log, written from the device layer's completions: see
 * log-writes.h.  Entries wait in memory (a copy of their data) until
 * they are on the platter; then they are appended under the log's lock,
 * one header block and the data per entry, with pwritev, and the super
 * block is rewritten with the new count.  dm-log-writes updates its
 * super only after FUA and MARK entries; we update it after every batch
 * (the format is the same), so a log read while the server runs or after
 * a kill -9 counts every entry it holds.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log-writes.h"
#include "../server/mq/log.h"

/* The iovecs one pwritev takes at most here. */
#define LW_IOV 64
/* The zeroes a WRITE_ZEROES entry is written from, a piece at a time. */
#define LW_ZERO_CHUNK (1u << 20)

struct lw_entry {
	struct lw_entry *next;
	uint64_t sector, nr_sectors; /* logical blocks */
	uint32_t flags;
	uint32_t name_len; /* a MARK's name, inside the header block */
	bool zeroes;	   /* a write of zeroes: no copy kept */
	/* The header block (sectorsize), then a write's data. */
	uint8_t block[];
};

struct lw_list {
	struct lw_entry *head, **tail;
};

struct log_writes_batch {
	struct lw_list list;
};

struct log_writes {
	pthread_mutex_t lock;
	int fd;
	char *path;
	uint32_t sectorsize;
	uint64_t nr_entries;
	uint64_t next_off; /* bytes: where the next entry goes */
	struct lw_list waiting;
	uint64_t waiting_entries, waiting_bytes;
	int failed;	/* the errno that turned logging off, or 0 */
	void *zeroes;	/* LW_ZERO_CHUNK of them */
	uint8_t *super; /* the super block's sector */
};

static void list_init(struct lw_list *l)
{
	l->head = NULL;
	l->tail = &l->head;
}

static void list_add(struct lw_list *l, struct lw_entry *e)
{
	e->next = NULL;
	*l->tail = e;
	l->tail = &e->next;
}

/* Put b's entries (in order) before l's. */
static void list_prepend(struct lw_list *l, struct lw_list *b)
{
	if (!b->head)
		return;
	*b->tail = l->head;
	if (!l->head)
		l->tail = b->tail;
	l->head = b->head;
	list_init(b);
}

static void list_free(struct lw_list *l)
{
	struct lw_entry *e, *n;

	for (e = l->head; e; e = n) {
		n = e->next;
		free(e);
	}
	list_init(l);
}

static uint64_t entry_data_bytes(const struct log_writes *l,
				 const struct lw_entry *e)
{
	if (e->flags & (LOG_DISCARD_FLAG | LOG_MARK_FLAG | LOG_FLUSH_FLAG))
		return 0;
	return e->nr_sectors * l->sectorsize;
}

static struct lw_entry *entry_new(struct log_writes *l, uint64_t sector,
				  uint64_t nr, uint32_t flags, size_t data)
{
	struct lw_entry *e = calloc(1, sizeof(*e) + l->sectorsize + data);

	if (!e)
		return NULL;
	e->sector = sector;
	e->nr_sectors = nr;
	e->flags = flags;
	return e;
}

/* Fill the header block as struct log_write_entry, little-endian. */
static void entry_header(const struct lw_entry *e, uint8_t *block)
{
	uint64_t h[4] = {htole64(e->sector), htole64(e->nr_sectors),
			 htole64(e->flags), htole64(e->name_len)};

	memcpy(block, h, sizeof(h));
}

/* ---- writing ------------------------------------------------------ */

struct lw_iov {
	struct log_writes *l;
	struct iovec v[LW_IOV];
	int n;
	size_t bytes;
};

/* Write out what iov holds at next_off: 0 or an errno. */
static int iov_flush(struct lw_iov *iov)
{
	struct iovec *v = iov->v;
	int n = iov->n;

	while (n > 0) {
		ssize_t r = pwritev(iov->l->fd, v, n, (off_t)iov->l->next_off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (r == 0)
			return EIO;
		iov->l->next_off += (uint64_t)r;
		while (n > 0 && (size_t)r >= v->iov_len) {
			r -= (ssize_t)v->iov_len;
			v++;
			n--;
		}
		if (n > 0) {
			v->iov_base = (uint8_t *)v->iov_base + r;
			v->iov_len -= (size_t)r;
		}
	}
	iov->n = 0;
	iov->bytes = 0;
	return 0;
}

static int iov_add(struct lw_iov *iov, const void *buf, size_t len)
{
	int err;

	if (iov->n == LW_IOV && (err = iov_flush(iov)))
		return err;
	iov->v[iov->n].iov_base = (void *)buf;
	iov->v[iov->n++].iov_len = len;
	iov->bytes += len;
	return 0;
}

static int write_super(struct log_writes *l)
{
	uint8_t *block = l->super;
	uint64_t h[3] = {htole64(LOG_WRITES_MAGIC), htole64(LOG_WRITES_VERSION),
			 htole64(l->nr_entries)};
	uint32_t ss = htole32(l->sectorsize);
	size_t done = 0;
	int err = 0;

	memcpy(block, h, sizeof(h));
	memcpy(block + sizeof(h), &ss, sizeof(ss));
	while (done < l->sectorsize) {
		ssize_t r = pwrite(l->fd, block + done, l->sectorsize - done,
				   (off_t)done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? errno : EIO;
			break;
		}
		done += (size_t)r;
	}
	return err;
}

/* Turn logging off for good, saying why once. */
static int log_failed(struct log_writes *l, int err)
{
	if (!l->failed)
		pr_err("log_writes=%s: %s; logging stops here", l->path,
		       mq_strerror(err));
	l->failed = err;
	return err;
}

/* Append the entries of list in order and free them; lock held. */
static int append_locked(struct log_writes *l, struct lw_list *list)
{
	struct lw_iov iov = {.l = l};
	struct lw_entry *e;
	int err = 0;

	for (e = list->head; e && !err; e = e->next) {
		uint64_t data = entry_data_bytes(l, e);

		entry_header(e, e->block);
		if (e->zeroes) {
			err = iov_add(&iov, e->block, l->sectorsize);
			while (!err && data) {
				size_t n = data < LW_ZERO_CHUNK ? data
								: LW_ZERO_CHUNK;

				err = iov_add(&iov, l->zeroes, n);
				data -= n;
			}
		} else {
			err = iov_add(&iov, e->block, l->sectorsize + data);
		}
		if (!err)
			l->nr_entries++;
	}
	if (!err && iov.n)
		err = iov_flush(&iov);
	list_free(list);
	if (!err)
		err = write_super(l);
	return err ? log_failed(l, err) : 0;
}

/* ---- the interface ------------------------------------------------ */

int log_writes_open(const char *path, uint32_t sectorsize,
		    struct log_writes **lp, struct mq_err *e)
{
	struct log_writes *l;
	int err;

	*lp = NULL;
	if (!path || !*path)
		return mq_err_set(e, "log_writes=: the path is empty");
	if (sectorsize < 512 || (sectorsize & (sectorsize - 1)))
		return mq_err_set(e, "log_writes=%s: sector size %u", path,
				  sectorsize);
	l = calloc(1, sizeof(*l));
	if (!l)
		return mq_err_set(e, "log_writes=%s: out of memory", path);
	l->path = strdup(path);
	l->zeroes = calloc(1, LW_ZERO_CHUNK);
	l->super = calloc(1, sectorsize);
	if (!l->path || !l->zeroes || !l->super ||
	    pthread_mutex_init(&l->lock, NULL)) {
		free(l->path);
		free(l->zeroes);
		free(l->super);
		free(l);
		return mq_err_set(e, "log_writes=%s: out of memory", path);
	}
	l->sectorsize = sectorsize;
	l->next_off = sectorsize;
	list_init(&l->waiting);
	l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	err = l->fd < 0 ? errno : write_super(l);
	if (err) {
		mq_err_set(e, "log_writes=%s: %s", path, mq_strerror(err));
		if (l->fd >= 0)
			close(l->fd);
		pthread_mutex_destroy(&l->lock);
		free(l->path);
		free(l->zeroes);
		free(l->super);
		free(l);
		return -1;
	}
	*lp = l;
	return 0;
}

void log_writes_close(struct log_writes *l)
{
	struct mq_err e;

	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	if (!l->failed)
		append_locked(l, &l->waiting);
	pthread_mutex_unlock(&l->lock);
	log_writes_mark(l, LOG_WRITES_END_MARK, &e);
	list_free(&l->waiting);
	if (close(l->fd))
		pr_err("log_writes=%s: close: %s", l->path, mq_strerror(errno));
	pthread_mutex_destroy(&l->lock);
	free(l->path);
	free(l->zeroes);
	free(l->super);
	free(l);
}

int log_writes_write(struct log_writes *l, uint64_t off, uint64_t len,
		     const void *data, bool discard, bool fua)
{
	uint32_t flags =
		(discard ? LOG_DISCARD_FLAG : 0) | (fua ? LOG_FUA_FLAG : 0);
	bool zeroes = !discard && !data;
	size_t copy = discard || zeroes ? 0 : (size_t)len;
	struct lw_entry *e;
	struct lw_list one;
	int err = 0;

	if (l->failed)
		return l->failed;
	e = entry_new(l, off / l->sectorsize, len / l->sectorsize, flags, copy);
	if (!e) {
		pthread_mutex_lock(&l->lock);
		err = log_failed(l, ENOMEM);
		pthread_mutex_unlock(&l->lock);
		return err;
	}
	e->zeroes = zeroes;
	if (copy)
		memcpy(e->block + l->sectorsize, data, copy);
	pthread_mutex_lock(&l->lock);
	if (l->failed) {
		err = l->failed;
		free(e);
	} else if (fua) {
		list_init(&one);
		list_add(&one, e);
		err = append_locked(l, &one);
	} else {
		list_add(&l->waiting, e);
		l->waiting_entries++;
		l->waiting_bytes += copy;
	}
	pthread_mutex_unlock(&l->lock);
	return err;
}

struct log_writes_batch *log_writes_flush_start(struct log_writes *l)
{
	struct log_writes_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	pthread_mutex_lock(&l->lock);
	b->list = l->waiting;
	if (!b->list.head)
		b->list.tail = &b->list.head;
	list_init(&l->waiting);
	l->waiting_entries = 0;
	l->waiting_bytes = 0;
	pthread_mutex_unlock(&l->lock);
	return b;
}

int log_writes_flush_end(struct log_writes *l, struct log_writes_batch *b,
			 int err)
{
	struct lw_entry *flush = NULL, *x;
	int ret = 0;

	if (!err && b)
		flush = entry_new(l, 0, 0, LOG_FLUSH_FLAG, 0);
	pthread_mutex_lock(&l->lock);
	if (!b) {
		/* nothing was taken: the writes wait for the next FLUSH */
	} else if (err || l->failed || !flush) {
		for (x = b->list.head; x; x = x->next) {
			l->waiting_entries++;
			l->waiting_bytes += entry_data_bytes(l, x);
		}
		list_prepend(&l->waiting, &b->list);
		if (!err && !flush)
			ret = log_failed(l, ENOMEM);
	} else {
		list_add(&b->list, flush);
		flush = NULL;
		ret = append_locked(l, &b->list);
	}
	pthread_mutex_unlock(&l->lock);
	free(flush);
	free(b);
	return ret;
}

int log_writes_mark(struct log_writes *l, const char *name, struct mq_err *e)
{
	size_t max = l->sectorsize - 4 * sizeof(uint64_t) - 1;
	size_t n = strnlen(name, max);
	struct lw_entry *m;
	struct lw_list one;
	int err;

	if (!n)
		return mq_err_set(e, "a mark needs a name");
	m = entry_new(l, 0, 0, LOG_MARK_FLAG, 0);
	if (!m)
		return mq_err_set(e, "out of memory");
	m->name_len = (uint32_t)n;
	memcpy(m->block + 4 * sizeof(uint64_t), name, n);
	list_init(&one);
	list_add(&one, m);
	pthread_mutex_lock(&l->lock);
	err = l->failed;
	if (err)
		list_free(&one);
	else
		err = append_locked(l, &one);
	pthread_mutex_unlock(&l->lock);
	if (err)
		return mq_err_set(e, "log_writes=%s: %s", l->path,
				  mq_strerror(err));
	return 0;
}

int log_writes_show(struct log_writes *l, char *buf, size_t len)
{
	int n;

	pthread_mutex_lock(&l->lock);
	if (l->failed)
		n = snprintf(buf, len, "off: %s", mq_strerror(l->failed));
	else
		n = snprintf(buf, len,
			     "entries %llu, waiting for a flush %llu (%llu "
			     "bytes), log %llu bytes",
			     (unsigned long long)l->nr_entries,
			     (unsigned long long)l->waiting_entries,
			     (unsigned long long)l->waiting_bytes,
			     (unsigned long long)l->next_off);
	pthread_mutex_unlock(&l->lock);
	if (n < 0)
		return -EIO;
	return (size_t)n >= len ? (int)len - 1 : n;
}
