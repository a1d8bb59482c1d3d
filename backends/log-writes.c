// SPDX-License-Identifier: GPL-2.0
/*
 * dm-log-writes' log, written from the device layer's completions: see
 * log-writes.h.  Entries wait in memory (a copy of their data) until
 * they are on the platter; then they are queued for the log's writer
 * thread (dm-log-writes' log_kthread), which appends them in queue order,
 * one header block and the data per entry, with pwritev, and rewrites
 * the super block with the new count.  The I/O path only copies and
 * queues; it waits for the writer only when more than LW_MAX_QUEUED
 * bytes are queued, and a mark waits until it is written.  dm-log-writes
 * updates its super only after FUA and MARK entries; we update it after every
 * batch (the format is the same), so a log read while the server runs or after
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
/* Queued bytes past which a completion waits for the writer. */
#define LW_MAX_QUEUED (64u << 20)
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
	pthread_cond_t wake; /* the writer: something queued, or stop */
	pthread_cond_t done; /* waiters: a batch written, or room */
	pthread_t writer;
	int fd;
	char *path;
	uint32_t sectorsize;
	/* The writer's own: */
	uint64_t nr_entries;
	uint64_t next_off; /* bytes: where the next entry goes */
	void *zeroes;	   /* LW_ZERO_CHUNK of them */
	uint8_t *super;	   /* the super block's sector */
	/* Under lock: */
	struct lw_list waiting; /* for a FLUSH */
	uint64_t waiting_entries, waiting_bytes;
	struct lw_list queued; /* for the writer */
	uint64_t queued_bytes;
	uint64_t queued_seq, written_seq; /* batches */
	uint64_t shown_entries, shown_off;
	bool stop;
	int failed; /* the errno that turned logging off, or 0 */
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
	struct lw_entry *e = malloc(sizeof(*e) + l->sectorsize + data);

	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e) + l->sectorsize);
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

/* Turn logging off for good, saying why once; lock held. */
static int log_failed(struct log_writes *l, int err)
{
	if (!l->failed)
		pr_err("log_writes=%s: %s; logging stops here", l->path,
		       mq_strerror(err));
	l->failed = err;
	return err;
}

/* The writer: append the entries of list in order and free them. */
static int write_list(struct log_writes *l, struct lw_list *list)
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
	return err;
}

static void *writer_main(void *arg)
{
	struct log_writes *l = arg;
	struct lw_list list;
	uint64_t seq;
	int err;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		while (!l->queued.head && !l->stop)
			pthread_cond_wait(&l->wake, &l->lock);
		if (!l->queued.head)
			break; /* stopped, and everything is written */
		list = l->queued;
		list_init(&l->queued);
		seq = l->queued_seq;
		l->queued_bytes = 0;
		if (l->failed) {
			list_free(&list);
			err = 0;
		} else {
			pthread_mutex_unlock(&l->lock);
			err = write_list(l, &list);
			pthread_mutex_lock(&l->lock);
		}
		if (err)
			log_failed(l, err);
		l->shown_entries = l->nr_entries;
		l->shown_off = l->next_off;
		l->written_seq = seq;
		pthread_cond_broadcast(&l->done);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/*
 * Hand list to the writer (it is emptied); lock held.  Returns the
 * batch's number, for waiting on it.  With too much queued, wait for
 * the writer first, as a log device's queue would push back.
 */
static uint64_t queue_locked(struct log_writes *l, struct lw_list *list)
{
	struct lw_entry *e;

	for (e = list->head; e; e = e->next)
		l->queued_bytes += l->sectorsize + entry_data_bytes(l, e);
	if (list->head) {
		*l->queued.tail = list->head;
		l->queued.tail = list->tail;
		list_init(list);
	}
	l->queued_seq++;
	pthread_cond_signal(&l->wake);
	while (l->queued_bytes > LW_MAX_QUEUED && !l->failed)
		pthread_cond_wait(&l->done, &l->lock);
	return l->queued_seq;
}

/* ---- the interface ------------------------------------------------ */

static void log_free(struct log_writes *l)
{
	free(l->path);
	free(l->zeroes);
	free(l->super);
	free(l);
}

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
	if (!l->path || !l->zeroes || !l->super) {
		log_free(l);
		return mq_err_set(e, "log_writes=%s: out of memory", path);
	}
	l->sectorsize = sectorsize;
	l->next_off = sectorsize;
	l->shown_off = sectorsize;
	list_init(&l->waiting);
	list_init(&l->queued);
	l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	err = l->fd < 0 ? errno : write_super(l);
	if (err) {
		mq_err_set(e, "log_writes=%s: %s", path, mq_strerror(err));
		goto fail_fd;
	}
	if ((err = pthread_mutex_init(&l->lock, NULL)))
		goto fail_err;
	if ((err = pthread_cond_init(&l->wake, NULL)))
		goto fail_lock;
	if ((err = pthread_cond_init(&l->done, NULL)))
		goto fail_wake;
	if ((err = pthread_create(&l->writer, NULL, writer_main, l)))
		goto fail_done;
	*lp = l;
	return 0;

fail_done:
	pthread_cond_destroy(&l->done);
fail_wake:
	pthread_cond_destroy(&l->wake);
fail_lock:
	pthread_mutex_destroy(&l->lock);
fail_err:
	mq_err_set(e, "log_writes=%s: %s", path, mq_strerror(err));
fail_fd:
	if (l->fd >= 0)
		close(l->fd);
	log_free(l);
	return -1;
}

/* A MARK entry, or NULL with e set. */
static struct lw_entry *mark_new(struct log_writes *l, const char *name,
				 struct mq_err *e)
{
	size_t max = l->sectorsize - 4 * sizeof(uint64_t) - 1;
	size_t n = strnlen(name, max);
	struct lw_entry *m;

	if (!n) {
		mq_err_set(e, "a mark needs a name");
		return NULL;
	}
	m = entry_new(l, 0, 0, LOG_MARK_FLAG, 0);
	if (!m) {
		mq_err_set(e, "out of memory");
		return NULL;
	}
	m->name_len = (uint32_t)n;
	memcpy(m->block + 4 * sizeof(uint64_t), name, n);
	return m;
}

void log_writes_close(struct log_writes *l)
{
	struct lw_entry *m;
	struct lw_list end;
	struct mq_err e;

	if (!l)
		return;
	m = mark_new(l, LOG_WRITES_END_MARK, &e);
	pthread_mutex_lock(&l->lock);
	if (!l->failed) {
		/* as dm-log-writes' destructor: what waits, then the mark */
		queue_locked(l, &l->waiting);
		list_init(&end);
		if (m)
			list_add(&end, m);
		queue_locked(l, &end);
		m = NULL;
	}
	l->stop = true;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->writer, NULL);
	free(m);
	list_free(&l->waiting);
	list_free(&l->queued);
	if (close(l->fd))
		pr_err("log_writes=%s: close: %s", l->path, mq_strerror(errno));
	pthread_cond_destroy(&l->done);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	log_free(l);
}

int log_writes_write(struct log_writes *l, uint64_t off, uint64_t len,
		     const void *data, bool discard, bool fua)
{
	uint32_t flags =
		(discard ? LOG_DISCARD_FLAG : 0) | (fua ? LOG_FUA_FLAG : 0);
	bool zeroes = !discard && !data;
	size_t copy = discard || zeroes ? 0 : (size_t)len;
	struct lw_entry *e = entry_new(l, off / l->sectorsize,
				       len / l->sectorsize, flags, copy);
	struct lw_list one;
	int err = 0;

	if (e && copy)
		memcpy(e->block + l->sectorsize, data, copy);
	pthread_mutex_lock(&l->lock);
	if (l->failed) {
		err = l->failed;
	} else if (!e) {
		err = log_failed(l, ENOMEM);
	} else {
		e->zeroes = zeroes;
		if (fua) {
			list_init(&one);
			list_add(&one, e);
			queue_locked(l, &one);
		} else {
			list_add(&l->waiting, e);
			l->waiting_entries++;
			l->waiting_bytes += copy;
		}
		e = NULL;
	}
	pthread_mutex_unlock(&l->lock);
	free(e);
	return err;
}

struct log_writes_batch *log_writes_flush_start(struct log_writes *l)
{
	struct log_writes_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	list_init(&b->list);
	pthread_mutex_lock(&l->lock);
	if (l->waiting.head) {
		b->list = l->waiting;
		list_init(&l->waiting);
	}
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
		ret = ret ? ret : l->failed;
	} else {
		list_add(&b->list, flush);
		flush = NULL;
		queue_locked(l, &b->list);
	}
	pthread_mutex_unlock(&l->lock);
	free(flush);
	free(b);
	return ret;
}

int log_writes_mark(struct log_writes *l, const char *name, struct mq_err *e)
{
	struct lw_entry *m = mark_new(l, name, e);
	struct lw_list one;
	uint64_t seq;
	int err;

	if (!m)
		return -1;
	list_init(&one);
	list_add(&one, m);
	pthread_mutex_lock(&l->lock);
	err = l->failed;
	if (err) {
		list_free(&one);
	} else {
		/* written when this returns, with everything logged before */
		seq = queue_locked(l, &one);
		while (l->written_seq < seq && !l->failed)
			pthread_cond_wait(&l->done, &l->lock);
		err = l->failed;
	}
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
			     (unsigned long long)l->shown_entries,
			     (unsigned long long)l->waiting_entries,
			     (unsigned long long)l->waiting_bytes,
			     (unsigned long long)l->shown_off);
	pthread_mutex_unlock(&l->lock);
	if (n < 0)
		return -EIO;
	return (size_t)n >= len ? (int)len - 1 : n;
}
