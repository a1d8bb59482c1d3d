// SPDX-License-Identifier: GPL-2.0
/*
 * The line protocol of docs/control.md: one request line in, "+DATA"
 * lines and a final "ok" or "err MESSAGE" out.  Whatever arrives is
 * answered; nothing here trusts the bytes it is given.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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
	val[0] = '\0';
	r = n->ops->show(n, val, sizeof(val));
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
	if (n->ops->store(n, value, &e)) {
		reply_err(out, "%s: %s", path, e.msg[0] ? e.msg : "refused");
		return;
	}
	ctl_buf_printf(out, "ok\n");
}

static void do_metrics(struct ctl_ctx *c, struct ctl_buf *out)
{
	struct ctl_buf m = {0};
	char *line, *save = NULL;

	ctl_metrics(c->devs, c->nr_devs, &m);
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
		if (c->trace) {
			reply_err(out, "a trace is already running");
			return;
		}
		c->trace = ctl_trace_start(dir, c->devs, c->nr_devs, &e);
		if (!c->trace) {
			reply_err(out, "trace: %s", e.msg);
			return;
		}
		ctl_buf_printf(out, "ok\n");
	} else if (what && !strcmp(what, "stop") && !next_word(&args)) {
		if (!c->trace) {
			reply_err(out, "no trace is running");
			return;
		}
		ctl_trace_stop(c->trace);
		c->trace = NULL;
		ctl_buf_printf(out, "ok\n");
	} else {
		reply_err(out, "usage: trace start DIR | trace stop");
	}
}

void ctl_handle_line(struct ctl_ctx *c, const char *line, size_t len,
		     struct ctl_buf *out)
{
	char buf[CTL_LINE_MAX], *rest = buf, *verb;
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

		if (!path || !*rest)
			reply_err(out, "usage: set PATH VALUE");
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
