/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control plane: an attribute tree in sysfs form per server, served on
 * a Unix socket with the line protocol of docs/control.md.
 *
 * The tree knows no device by name.  Its nodes come from generic code (the
 * queue, its hw queues and stats), from the attached elevator's
 * elv_fs_entry table and from the gendisk's attrs and faults, all through
 * ctl_tree_add().
 */
#ifndef MQBLK_CTL_H
#define MQBLK_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../../backends/device.h"

#define CTL_LINE_MAX  4096 /* a request line, newline included */
#define CTL_VALUE_MAX 1024 /* a value shown by get */

struct ctl_node;

struct ctl_node_ops {
	/* One line into buf (no newline); its length or -errno. */
	int (*show)(const struct ctl_node *n, char *buf, size_t len);
	/* NULL: read-only.  0, or -1 with e set to why the value was refused.
	 */
	int (*store)(const struct ctl_node *n, const char *value,
		     struct mq_err *e);
	/* NULL: always there.  false hides the node (an absent tunable). */
	bool (*visible)(const struct ctl_node *n);
};

struct ctl_node {
	char *path; /* "nullb0/queue/scheduler" */
	const struct ctl_node_ops *ops;
	struct gendisk *disk;
	const void *data; /* what ops need: a table entry, a name */
	unsigned int idx; /* a hw queue number */
};

struct ctl_tree;

struct ctl_tree *ctl_tree_new(void);
void ctl_tree_free(struct ctl_tree *t);
/* Add a node: 0, -EINVAL (bad path), -EEXIST or -ENOMEM. */
int ctl_tree_add(struct ctl_tree *t, const char *path,
		 const struct ctl_node_ops *ops, struct gendisk *disk,
		 const void *data, unsigned int idx);
/* Every node of an export: queue, stat, mq, iosched, device, fault. */
int ctl_tree_add_disk(struct ctl_tree *t, struct gendisk *disk);

/* Is path well formed: no "..", ".", empty part or unprintable byte. */
bool ctl_path_valid(const char *path);

/* The visible node at path, or NULL. */
const struct ctl_node *ctl_tree_find(struct ctl_tree *t, const char *path);

/*
 * The children of directory path ("" is the top), each once, in order,
 * with a trailing '/' on directories.  Returns how many, or -1 if path
 * is neither the top nor a directory.
 */
typedef void(ctl_ls_fn)(void *arg, const char *name);
int ctl_tree_ls(struct ctl_tree *t, const char *path, ctl_ls_fn *fn, void *arg);

/* Visit every visible node in path order. */
void ctl_tree_for_each(struct ctl_tree *t,
		       void (*fn)(const struct ctl_node *n, void *arg),
		       void *arg);

/* An output buffer that grows; ok is false once an allocation failed. */
struct ctl_buf {
	char *data;
	size_t len, cap;
	bool failed;
};

void ctl_buf_printf(struct ctl_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ctl_buf_free(struct ctl_buf *b);

/* metrics.c: Prometheus text exposition of every export. */
void ctl_metrics(struct mq_device *const *devs, unsigned int nr_devs,
		 struct ctl_buf *out);

/* The state one connection or one server keeps for the protocol. */
struct ctl_trace;
struct ctl_ctx {
	struct ctl_tree *tree;
	struct mq_device *const *devs;
	unsigned int nr_devs;
	struct ctl_trace *trace; /* NULL when not tracing */
};

/*
 * Answer one request line (no newline; may hold any bytes up to len):
 * "+DATA" lines then "ok" or "err MESSAGE", each ending in '\n'.
 */
void ctl_handle_line(struct ctl_ctx *c, const char *line, size_t len,
		     struct ctl_buf *out);

/* blktrace.c */
struct ctl_trace *ctl_trace_start(const char *dir,
				  struct mq_device *const *devs,
				  unsigned int nr_devs, struct mq_err *e);
void ctl_trace_stop(struct ctl_trace *t);

/*
 * server.c: serve the tree of devs on a Unix socket at path (mode 0 means
 * 0600) from a thread of its own.  NULL with e set if it cannot, for
 * instance when another server listens at path.  stop takes NULL too.
 */
struct ctl_server;
struct ctl_server *ctl_server_start(const char *path, mode_t mode,
				    struct mq_device *const *devs,
				    unsigned int nr_devs, struct mq_err *e);
void ctl_server_stop(struct ctl_server *s);

#endif
