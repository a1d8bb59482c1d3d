// SPDX-License-Identifier: GPL-2.0
/*
 * The media layer: opening a store from its media string, the checks
 * every store shares (range, read-only), completion on the right thread,
 * and the blocking wrappers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media.h"
#include "../../server/mq/log.h"

const struct media_ops *media_store_find(const char *name)
{
	const struct media_ops *const *s;

	for (s = media_stores; *s; s++)
		if (strcmp((*s)->name, name) == 0)
			return *s;
	return NULL;
}

void media_store_usages(char *buf, size_t len)
{
	const struct media_ops *const *s;
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (s = media_stores; *s; s++) {
		int n = snprintf(buf + used, len - used, "%s%s",
				 used ? "|" : "", (*s)->usage);

		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
}

const char *media_op_name(enum media_op op)
{
	switch (op) {
	case MEDIA_READ:
		return "read";
	case MEDIA_WRITE:
		return "write";
	case MEDIA_FLUSH:
		return "flush";
	case MEDIA_DISCARD:
		return "discard";
	case MEDIA_WRITE_ZEROES:
		return "write zeroes";
	}
	return "unknown op";
}

const char *media_spec_split(const char *spec, char *name, size_t len,
			     bool *bad)
{
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);

	*bad = !n || n >= len;
	if (*bad) {
		if (len)
			name[0] = '\0';
		return NULL;
	}
	memcpy(name, spec, n);
	name[n] = '\0';
	return colon ? colon + 1 : NULL;
}

int media_open(const char *spec, const struct media_open_args *a,
	       struct media **mp, struct mq_err *e)
{
	const char *key = a->key ? a->key : "media";
	const struct media_ops *ops;
	char usages[160], name[16];
	struct media *m;
	const char *arg;
	bool bad;

	*mp = NULL;
	media_store_usages(usages, sizeof(usages));
	if (!spec)
		return mq_err_set(e, "%s: no store given; accepted: %s", key,
				  usages);
	arg = media_spec_split(spec, name, sizeof(name), &bad);
	ops = bad ? NULL : media_store_find(name);
	if (!ops)
		return mq_err_set(e, "%s=%s: unknown store; accepted: %s", key,
				  spec, usages);
	if (!a->block_size || (a->block_size & (a->block_size - 1)))
		return mq_err_set(e,
				  "%s=%s: block size %u is not a power of two",
				  key, spec, a->block_size);

	m = calloc(1, sizeof(*m));
	if (!m)
		return mq_err_set(e, "%s=%s: out of memory", key, spec);
	m->ops = ops;
	snprintf(m->name, sizeof(m->name), "%s", a->name ? a->name : ops->name);
	snprintf(m->desc, sizeof(m->desc), "%s", spec);
	if (ops->flags & MEDIA_OPS_LIBRARY_THREADS) {
		char tname[16];

		snprintf(tname, sizeof(tname), "%.10s-cq", m->name);
		m->cq = irq_thread_create(tname);
		if (!m->cq) {
			mq_err_set(e, "%s=%s: cannot start a thread: %s", key,
				   spec, mq_strerror(errno));
			free(m);
			return -1;
		}
	}
	if (ops->open(m, arg, a, e)) {
		if (m->cq)
			irq_thread_destroy(m->cq);
		free(m);
		return -1;
	}
	if (!m->size || m->size % a->block_size) {
		mq_err_set(e,
			   "%s=%s: size %llu is not a non-zero multiple of the "
			   "block size %u",
			   key, spec, (unsigned long long)m->size,
			   a->block_size);
		media_close(m);
		return -1;
	}
	if (a->read_only)
		m->read_only = true;
	*mp = m;
	return 0;
}

void media_close(struct media *m)
{
	if (!m)
		return;
	m->ops->close(m);
	/* After the store: its last completions run before the thread ends. */
	if (m->cq)
		irq_thread_destroy(m->cq);
	free(m);
}

static bool media_op_writes(enum media_op op)
{
	return op == MEDIA_WRITE || op == MEDIA_DISCARD ||
	       op == MEDIA_WRITE_ZEROES;
}

void media_submit(struct media *m, struct media_io *io)
{
	io->media = m;
	io->status = 0;
	if (io->op != MEDIA_FLUSH &&
	    (io->offset > m->size || io->len > m->size - io->offset)) {
		media_io_end(io, EINVAL);
		return;
	}
	if (m->read_only &&
	    (media_op_writes(io->op) || io->op == MEDIA_FLUSH)) {
		/* A flush of a read-only store has nothing to do. */
		media_io_end(io, io->op == MEDIA_FLUSH ? 0 : EROFS);
		return;
	}
	if ((io->op == MEDIA_READ || io->op == MEDIA_WRITE) &&
	    io->len > UINT32_MAX) {
		media_io_end(io, EINVAL);
		return;
	}
	if (!io->len && io->op != MEDIA_FLUSH) {
		media_io_end(io, 0);
		return;
	}
	m->ops->submit(m, io);
}

static void media_end_work(struct irq_work *work)
{
	struct media_io *io =
		(struct media_io *)((char *)work -
				    offsetof(struct media_io, work));

	io->end_io(io);
}

void media_io_end(struct media_io *io, int status)
{
	io->status = status;
	if (io->irq)
		irq_raise(io->irq, &io->work, media_end_work, 0);
	else
		io->end_io(io);
}

void media_io_end_async(struct media_io *io, int status)
{
	struct irq_thread *t = io->irq ? io->irq : io->media->cq;

	io->status = status;
	if (t)
		irq_raise(t, &io->work, media_end_work, 0);
	else
		io->end_io(io); /* a store that said it needs no cq thread */
}

struct media_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void media_wait_end(struct media_io *io)
{
	struct media_wait *w = io->private;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int media_rw(struct media *m, enum media_op op, void *buf, uint64_t len,
	     uint64_t offset, unsigned int flags)
{
	struct media_wait w = {
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	struct media_io io = {
		.op = op,
		.offset = offset,
		.len = len,
		.buf = buf,
		.flags = flags,
		.end_io = media_wait_end,
		.private = &w,
	};

	media_submit(m, &io);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return io.status;
}

int media_extents(struct media *m, uint64_t offset, uint64_t len, extent_fn *fn,
		  void *arg)
{
	if (offset >= m->size)
		return 0;
	if (len > m->size - offset)
		len = m->size - offset;
	if (!m->ops->extents) {
		fn(arg, offset, len, 0);
		return 0;
	}
	return m->ops->extents(m, offset, len, fn, arg);
}
