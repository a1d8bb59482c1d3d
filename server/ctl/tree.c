// SPDX-License-Identifier: GPL-2.0
/*
 * The attribute tree: a sorted array of leaf nodes by path.  Directories
 * are implied by the paths under them, as kernfs shows them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

struct ctl_tree {
	struct ctl_node *nodes;
	size_t nr, cap;
	struct ctl_disk **disks;
	size_t nr_disks;
	unsigned int freeze_timeout_ms;
};

struct ctl_tree *ctl_tree_new(unsigned int freeze_timeout_ms)
{
	struct ctl_tree *t = calloc(1, sizeof(struct ctl_tree));

	if (t)
		t->freeze_timeout_ms = freeze_timeout_ms
					       ? freeze_timeout_ms
					       : CTL_FREEZE_TIMEOUT_MS;
	return t;
}

void ctl_tree_free(struct ctl_tree *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr; i++)
		free(t->nodes[i].path);
	free(t->nodes);
	for (i = 0; i < t->nr_disks; i++) {
		pthread_mutex_destroy(&t->disks[i]->elv_lock);
		free(t->disks[i]);
	}
	free(t->disks);
	free(t);
}

struct ctl_disk *ctl_tree_new_disk(struct ctl_tree *t)
{
	struct ctl_disk **v, *cd;

	v = realloc(t->disks, (t->nr_disks + 1) * sizeof(*v));
	if (!v)
		return NULL;
	t->disks = v;
	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return NULL;
	if (pthread_mutex_init(&cd->elv_lock, NULL)) {
		free(cd);
		return NULL;
	}
	cd->freeze_timeout_ms = t->freeze_timeout_ms;
	t->disks[t->nr_disks++] = cd;
	return cd;
}

bool ctl_path_valid(const char *path)
{
	const char *p = path, *part = path;

	if (!*path || strlen(path) > 255)
		return false;
	for (;; p++) {
		if (*p == '/' || *p == '\0') {
			size_t n = p - part;

			if (n == 0 || (n == 1 && part[0] == '.') ||
			    (n == 2 && part[0] == '.' && part[1] == '.'))
				return false;
			if (*p == '\0')
				return true;
			part = p + 1;
		} else if ((unsigned char)*p <= ' ' ||
			   (unsigned char)*p >= 0x7f) {
			return false;
		}
	}
}

static int node_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ctl_node *)a)->path,
		      ((const struct ctl_node *)b)->path);
}

/* Index of the first node whose path is >= key. */
static size_t lower_bound(const struct ctl_tree *t, const char *key)
{
	size_t lo = 0, hi = t->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(t->nodes[mid].path, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ctl_tree_add(struct ctl_tree *t, const char *path,
		 const struct ctl_node_ops *ops, struct gendisk *disk,
		 struct ctl_disk *cd, const void *data, unsigned int idx)
{
	size_t at;

	if (!ctl_path_valid(path) || !ops || !ops->show)
		return -EINVAL;
	at = lower_bound(t, path);
	if (at < t->nr && !strcmp(t->nodes[at].path, path))
		return -EEXIST;
	if (t->nr == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct ctl_node *n = realloc(t->nodes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->nodes = n;
		t->cap = cap;
	}
	memmove(&t->nodes[at + 1], &t->nodes[at],
		(t->nr - at) * sizeof(t->nodes[0]));
	t->nodes[at] = (struct ctl_node){
		.path = strdup(path),
		.ops = ops,
		.disk = disk,
		.cd = cd,
		.data = data,
		.idx = idx,
	};
	if (!t->nodes[at].path) {
		memmove(&t->nodes[at], &t->nodes[at + 1],
			(t->nr - at) * sizeof(t->nodes[0]));
		return -ENOMEM;
	}
	t->nr++;
	return 0;
}

size_t ctl_tree_remove(struct ctl_tree *t, const char *name)
{
	size_t n = strlen(name), i, j, k, removed = 0;

	for (i = j = 0; i < t->nr; i++) {
		if (!strncmp(t->nodes[i].path, name, n) &&
		    (t->nodes[i].path[n] == '/' || !t->nodes[i].path[n])) {
			free(t->nodes[i].path);
			removed++;
			continue;
		}
		t->nodes[j++] = t->nodes[i];
	}
	t->nr = j;
	/* The shared state of the removed nodes, if no other node has it. */
	for (k = j = 0; k < t->nr_disks; k++) {
		struct ctl_disk *cd = t->disks[k];
		bool used = false;

		for (i = 0; i < t->nr && !used; i++)
			used = t->nodes[i].cd == cd;
		if (used) {
			t->disks[j++] = cd;
			continue;
		}
		pthread_mutex_destroy(&cd->elv_lock);
		free(cd);
	}
	t->nr_disks = j;
	return removed;
}

/* An elevator's node is asked under the lock a switch holds. */
static bool node_visible(const struct ctl_node *n)
{
	bool v;

	if (!n->ops->visible)
		return true;
	if (n->ops->elv && n->cd)
		pthread_mutex_lock(&n->cd->elv_lock);
	v = n->ops->visible(n);
	if (n->ops->elv && n->cd)
		pthread_mutex_unlock(&n->cd->elv_lock);
	return v;
}

const struct ctl_node *ctl_tree_find(struct ctl_tree *t, const char *path)
{
	struct ctl_node key = {.path = (char *)path};
	const struct ctl_node *n;

	if (!ctl_path_valid(path))
		return NULL;
	n = bsearch(&key, t->nodes, t->nr, sizeof(key), node_cmp);
	return n && node_visible(n) ? n : NULL;
}

int ctl_tree_ls(struct ctl_tree *t, const char *path, ctl_ls_fn *fn, void *arg)
{
	char prefix[260], last[260] = "";
	size_t plen, i;
	int count = 0;

	if (*path) {
		if (!ctl_path_valid(path))
			return -1;
		snprintf(prefix, sizeof(prefix), "%s/", path);
	} else {
		prefix[0] = '\0';
	}
	plen = strlen(prefix);
	for (i = lower_bound(t, prefix); i < t->nr; i++) {
		const struct ctl_node *n = &t->nodes[i];
		const char *rest, *slash;
		char name[260];

		if (strncmp(n->path, prefix, plen))
			break;
		rest = n->path + plen;
		slash = strchr(rest, '/');
		if (slash)
			snprintf(name, sizeof(name), "%.*s/",
				 (int)(slash - rest), rest);
		else
			snprintf(name, sizeof(name), "%s", rest);
		/* A directory shown already needs no more looks inside. */
		if (!strcmp(name, last) || !node_visible(n))
			continue;
		snprintf(last, sizeof(last), "%s", name);
		fn(arg, name);
		count++;
	}
	return count || !*path ? count : -1;
}

void ctl_tree_for_each(struct ctl_tree *t,
		       void (*fn)(const struct ctl_node *n, void *arg),
		       void *arg)
{
	size_t i;

	for (i = 0; i < t->nr; i++)
		if (node_visible(&t->nodes[i]))
			fn(&t->nodes[i], arg);
}

void ctl_buf_printf(struct ctl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->data ? b->data + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 1024;
		while (cap - b->len <= (size_t)n)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (!d) {
			b->failed = true;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
}

void ctl_buf_free(struct ctl_buf *b)
{
	free(b->data);
	*b = (struct ctl_buf){0};
}
