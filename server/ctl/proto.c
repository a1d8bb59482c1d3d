// SPDX-License-Identifier: GPL-2.0
/*
 * The line protocol of docs/control.md: one request line in, "+DATA"
 * lines and a final "ok" or "err MESSAGE" out.  Whatever arrives is
 * answered; nothing here trusts the bytes it is given.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "../mq/log.h"

static void reply_err(struct ctl_buf *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void reply_err(struct ctl_buf *out, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	char *p;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (p = msg; *p; p++)
		if ((unsigned char)*p < ' ' || (unsigned char)*p == 0x7f)
			*p = '?';
	ctl_buf_printf(out, "err %s\n", msg);
}

/* Split off the next space-separated word; NULL at the end. */
static char *next_word(char **s)
{
	char *w;

	while (**s == ' ' || **s == '\t')
		(*s)++;
	if (!**s)
		return NULL;
	w = *s;
	while (**s && **s != ' ' && **s != '\t')
		(*s)++;
	if (**s)
		*(*s)++ = '\0';
	return w;
}

static void ls_one(void *arg, const char *name)
{
	ctl_buf_printf(arg, "+%s\n", name);
}

static void do_ls(struct ctl_ctx *c, const char *path, struct ctl_buf *out)
{
	size_t mark = out->len;

	if (*path && !ctl_path_valid(path)) {
		reply_err(out, "bad path '%s'", path);
		return;
	}
	if (ctl_tree_ls(c->tree, path, ls_one, out) < 0) {
		out->len = mark;
		if (ctl_tree_find(c->tree, path))
			reply_err(out, "%s: not a directory", path);
		else
			reply_err(out, "%s: no such attribute", path);
		return;
	}
	ctl_buf_printf(out, "ok\n");
}

static void ls_none(void *arg, const char *name)
{
}

static const struct ctl_node *lookup(struct ctl_ctx *c, const char *path,
				     struct ctl_buf *out)
{
	const struct ctl_node *n;

	if (!path) {
		reply_err(out, "a path is needed");
		return NULL;
	}
	if (!ctl_path_valid(path)) {
		reply_err(out, "bad path '%s'", path);
		return NULL;
	}
	n = ctl_tree_find(c->tree, path);
	if (!n) {
		if (ctl_tree_ls(c->tree, path, ls_none, NULL) > 0)
			reply_err(out, "%s: is a directory", path);
		else
			reply_err(out, "%s: no such attribute", path);
	}
	return n;
}

static void do_get(struct ctl_ctx *c, const char *path, struct ctl_buf *out)
{
	const struct ctl_node *n = lookup(c, path, out);
	char val[CTL_VALUE_MAX];
	int r;

	if (!n)
		return;
	if (n->ops->show_lines) {
		struct ctl_buf lines = {0};

		r = n->ops->show_lines(n, &lines);
		if (!r && lines.failed)
			r = -ENOMEM;
		if (r < 0)
			reply_err(out, "%s: %s", path, mq_strerror(-r));
		else
			ctl_buf_printf(out, "%.*sok\n", (int)lines.len,
				       lines.data ? lines.data : "");
		ctl_buf_free(&lines);
		return;
	}
	val[0] = '\0';
	if (n->ops->elv && n->cd)
		pthread_mutex_lock(&n->cd->elv_lock);
	r = n->ops->show(n, val, sizeof(val));
	if (n->ops->elv && n->cd)
		pthread_mutex_unlock(&n->cd->elv_lock);
	if (r < 0) {
		reply_err(out, "%s: %s", path, mq_strerror(-r));
		return;
	}
	val[sizeof(val) - 1] = '\0';
	for (char *p = val; *p; p++)
		if (*p == '\n')
			*p = ' ';
	ctl_buf_printf(out, "+%s\nok\n", val);
}

static void do_set(struct ctl_ctx *c, const char *path, char *value,
		   struct ctl_buf *out)
{
	const struct ctl_node *n = lookup(c, path, out);
	struct mq_err e = {""};
	size_t vlen;
	int r;

	if (!n)
		return;
	if (!n->ops->store) {
		reply_err(out, "%s: read-only attribute", path);
		return;
	}
	while (*value == ' ' || *value == '\t')
		value++;
	vlen = strlen(value);
	while (vlen && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
		value[--vlen] = '\0';
	/* An empty value is a store of nothing, as "echo > attr" makes. */
	if (n->ops->elv && n->cd)
		pthread_mutex_lock(&n->cd->elv_lock);
	r = n->ops->store(n, value, &e);
	if (n->ops->elv && n->cd)
		pthread_mutex_unlock(&n->cd->elv_lock);
	if (r) {
		reply_err(out, "%s: %s", path, e.msg[0] ? e.msg : "refused");
		return;
	}
	ctl_buf_printf(out, "ok\n");
}

static void do_metrics(struct ctl_ctx *c, struct ctl_buf *out)
{
	struct ctl_buf m = {0};
	char *line, *save = NULL;

	ctl_metrics(c->exports, c->nr_exports, &m);
	if (m.failed) {
		ctl_buf_free(&m);
		reply_err(out, "metrics: out of memory");
		return;
	}
	for (line = m.data ? strtok_r(m.data, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		ctl_buf_printf(out, "+%s\n", line);
	ctl_buf_free(&m);
	ctl_buf_printf(out, "ok\n");
}

static void do_trace(struct ctl_ctx *c, char *args, struct ctl_buf *out)
{
	char *what = next_word(&args);
	struct mq_err e;

	if (what && !strcmp(what, "start")) {
		char *dir = next_word(&args);

		if (!dir || next_word(&args)) {
			reply_err(out, "usage: trace start DIR");
			return;
		}
		if (!c->trace_dir) {
			reply_err(out, "tracing is off: the server was started "
				       "without a trace directory");
			return;
		}
		pthread_mutex_lock(&c->trace_lock);
		if (c->trace) {
			pthread_mutex_unlock(&c->trace_lock);
			reply_err(out, "a trace is already running");
			return;
		}
		c->trace = ctl_trace_start(c->trace_dir, dir, c->exports,
					   c->nr_exports, &e);
		pthread_mutex_unlock(&c->trace_lock);
		if (!c->trace) {
			reply_err(out, "trace: %s", e.msg);
			return;
		}
		ctl_buf_printf(out, "ok\n");
	} else if (what && !strcmp(what, "stop") && !next_word(&args)) {
		pthread_mutex_lock(&c->trace_lock);
		if (!c->trace) {
			pthread_mutex_unlock(&c->trace_lock);
			reply_err(out, "no trace is running");
			return;
		}
		ctl_trace_stop(c->trace);
		c->trace = NULL;
		pthread_mutex_unlock(&c->trace_lock);
		ctl_buf_printf(out, "ok\n");
	} else {
		reply_err(out, "usage: trace start DIR | trace stop");
	}
}

static void dispatch(struct ctl_ctx *c, char *rest, struct ctl_buf *out);

void ctl_handle_line(struct ctl_ctx *c, const char *line, size_t len,
		     struct ctl_buf *out)
{
	char buf[CTL_LINE_MAX];
	size_t i;

	if (len >= sizeof(buf)) {
		reply_err(out, "line too long (at most %d bytes)",
			  CTL_LINE_MAX - 1);
		return;
	}
	for (i = 0; i < len; i++) {
		unsigned char ch = line[i];

		if ((ch < ' ' && ch != '\t' && !(ch == '\r' && i == len - 1)) ||
		    ch == 0x7f) {
			reply_err(out, "bad byte 0x%02x at %zu", ch, i);
			return;
		}
	}
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (len && buf[len - 1] == '\r')
		buf[len - 1] = '\0';

	pthread_rwlock_rdlock(&c->lock);
	dispatch(c, buf, out);
	pthread_rwlock_unlock(&c->lock);
}

/* One request, its line split off, under the context's lock. */
static void dispatch(struct ctl_ctx *c, char *rest, struct ctl_buf *out)
{
	char *verb;

	verb = next_word(&rest);
	if (!verb) {
		reply_err(out, "empty request");
	} else if (!strcmp(verb, "ls")) {
		char *path = next_word(&rest);

		if (next_word(&rest))
			reply_err(out, "usage: ls [PATH]");
		else
			do_ls(c, path ? path : "", out);
	} else if (!strcmp(verb, "get")) {
		char *path = next_word(&rest);

		if (next_word(&rest))
			reply_err(out, "usage: get PATH");
		else
			do_get(c, path, out);
	} else if (!strcmp(verb, "set")) {
		char *path = next_word(&rest);

		if (!path)
			reply_err(out, "usage: set PATH [VALUE]");
		else
			do_set(c, path, rest, out);
	} else if (!strcmp(verb, "metrics")) {
		do_metrics(c, out);
	} else if (!strcmp(verb, "trace")) {
		do_trace(c, rest, out);
	} else {
		reply_err(out,
			  "unknown verb '%.32s' (ls, get, set, metrics, trace)",
			  verb);
	}
}

/* Is a a directory of b in the tree: "a" and "a/b". */
static bool is_dir_of(const char *a, const char *b)
{
	size_t n = strlen(a);

	return !strncmp(a, b, n) && b[n] == '/';
}

/* Can name join the tree beside names (nr of them): 0, or -1 with e. */
static int name_fits(const char *name, char *const *names, unsigned int nr,
		     struct mq_err *e)
{
	unsigned int j;

	/* The tree is addressed by export name: it must be a path. */
	if (!ctl_path_valid(name))
		return mq_err_set(e,
				  "control: export '%.64s' cannot be named in "
				  "the tree (a control path has no space, "
				  "control byte, '.' or '..' part and at most "
				  "255 bytes)",
				  name);
	for (j = 0; j < nr; j++) {
		if (!strcmp(name, names[j]))
			return mq_err_set(e,
					  "control: export '%.64s' is in the "
					  "tree already",
					  name);
		if (is_dir_of(name, names[j]) || is_dir_of(names[j], name))
			return mq_err_set(
				e,
				"control: exports '%.64s' and "
				"'%.64s': the first is a directory "
				"of the second in the tree",
				is_dir_of(name, names[j]) ? name : names[j],
				is_dir_of(name, names[j]) ? names[j] : name);
	}
	return 0;
}

/* Drop the export or internal queue at names[i] (lock held for writing). */
static void drop_name(struct ctl_ctx *c, unsigned int i)
{
	const char *name = c->names[i];
	unsigned int j;

	for (j = 0; j < c->nr_exports; j++) {
		if (strcmp(c->exports[j].name, name))
			continue;
		pthread_mutex_lock(&c->trace_lock);
		if (c->trace)
			ctl_trace_forget(c->trace, c->exports[j].disk);
		pthread_mutex_unlock(&c->trace_lock);
		free((char *)c->exports[j].name);
		memmove(&c->exports[j], &c->exports[j + 1],
			(c->nr_exports - j - 1) * sizeof(c->exports[0]));
		c->nr_exports--;
		break;
	}
	ctl_tree_remove(c->tree, name);
	free(c->names[i]);
	memmove(&c->names[i], &c->names[i + 1],
		(c->nr_names - i - 1) * sizeof(c->names[0]));
	c->nr_names--;
}

/* ctl_ctx_add() with the lock held for writing (or no reader yet). */
static int add_locked(struct ctl_ctx *c, const struct ctl_export *ex,
		      unsigned int nr, struct mq_err *e)
{
	unsigned int i, first = c->nr_names;
	struct ctl_export *v;
	char **names;

	names = realloc(c->names, (c->nr_names + nr + 1) * sizeof(*names));
	if (!names)
		return mq_err_set(e, "control: out of memory");
	c->names = names;
	v = realloc(c->exports, (c->nr_exports + nr + 1) * sizeof(*v));
	if (!v)
		return mq_err_set(e, "control: out of memory");
	c->exports = v;
	for (i = 0; i < nr; i++) {
		char *name;
		unsigned int n;

		if (name_fits(ex[i].name, c->names, c->nr_names, e))
			goto undo;
		name = strdup(ex[i].name);
		if (!name) {
			mq_err_set(e, "control: out of memory");
			goto undo;
		}
		c->names[c->nr_names++] = name;
		if (ex[i].internal) {
			/* In the tree only: no export to list or trace. */
			if (ctl_tree_add_internal(c->tree, ex[i].name,
						  ex[i].disk)) {
				mq_err_set(e,
					   "control: %s: cannot build its tree",
					   ex[i].name);
				goto undo;
			}
			continue;
		}
		n = c->nr_exports;
		c->exports[n].disk = ex[i].disk;
		c->exports[n].model = ex[i].model;
		c->exports[n].internal = false;
		c->exports[n].name = strdup(ex[i].name);
		if (!c->exports[n].name) {
			mq_err_set(e, "control: out of memory");
			goto undo;
		}
		c->nr_exports = n + 1;
		if (ctl_tree_add_disk(c->tree, ex[i].name, ex[i].disk)) {
			mq_err_set(e, "control: %s: cannot build its tree",
				   ex[i].name);
			goto undo;
		}
	}
	return 0;
undo:
	while (c->nr_names > first)
		drop_name(c, c->nr_names - 1);
	return -1;
}

int ctl_ctx_init(struct ctl_ctx *c, const struct ctl_export *ex,
		 unsigned int nr, const struct ctl_opts *o, struct mq_err *e)
{
	int r;

	memset(c, 0, sizeof(*c));
	if (pthread_mutex_init(&c->trace_lock, NULL))
		return mq_err_set(e, "control: mutex: %s", mq_strerror(errno));
	/*
	 * Readers first (glibc's default): a request is read-locked for as
	 * long as it runs, a scheduler switch up to the control timeout, and
	 * the fault/resume that lets the switch's queue drain comes after
	 * it.  Were a reload waiting to write-lock able to hold back new
	 * requests, it would hold back that resume too, the switch would
	 * run out its timeout and fail, and every client would wait with it.
	 */
	r = pthread_rwlock_init(&c->lock, NULL);
	if (r) {
		pthread_mutex_destroy(&c->trace_lock);
		return mq_err_set(e, "control: rwlock: %s", mq_strerror(r));
	}
	c->tree = ctl_tree_new(o ? o->freeze_timeout_ms : 0);
	c->exports = calloc(1, sizeof(*c->exports));
	if (!c->tree || !c->exports) {
		mq_err_set(e, "control: out of memory");
		goto fail;
	}
	if (add_locked(c, ex, nr, e))
		goto fail;
	if (o && o->trace_dir) {
		char *dir = realpath(o->trace_dir, NULL);

		if (!dir) {
			mq_err_set(e, "control: trace directory %s: %s",
				   o->trace_dir, mq_strerror(errno));
			goto fail;
		}
		c->trace_dir = dir;
	}
	return 0;
fail:
	ctl_ctx_fini(c);
	return -1;
}

int ctl_ctx_add(struct ctl_ctx *c, const struct ctl_export *ex, unsigned int nr,
		struct mq_err *e)
{
	int r;

	pthread_rwlock_wrlock(&c->lock);
	r = add_locked(c, ex, nr, e);
	pthread_rwlock_unlock(&c->lock);
	return r;
}

int ctl_ctx_remove(struct ctl_ctx *c, const char *name)
{
	unsigned int i;
	int r = -ENOENT;

	pthread_rwlock_wrlock(&c->lock);
	for (i = 0; i < c->nr_names; i++) {
		if (!strcmp(c->names[i], name)) {
			drop_name(c, i);
			r = 0;
			break;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return r;
}

void ctl_ctx_fini(struct ctl_ctx *c)
{
	unsigned int i;

	if (c->trace)
		ctl_trace_stop(c->trace);
	for (i = 0; i < c->nr_exports; i++)
		free((char *)c->exports[i].name);
	free(c->exports);
	for (i = 0; i < c->nr_names; i++)
		free(c->names[i]);
	free(c->names);
	ctl_tree_free(c->tree);
	free(c->trace_dir);
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->trace_lock);
	memset(c, 0, sizeof(*c));
}
