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

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../../backends/device.h"

#define CTL_LINE_MAX  4096 /* a request line, newline included */
#define CTL_VALUE_MAX 1024 /* a value shown by get */

struct ctl_node;
struct ctl_buf;

/* What a switch waits for a queue to drain before it gives up, by default. */
#define CTL_FREEZE_TIMEOUT_MS 10000

/*
 * What the nodes of one export share: the lock that serializes the
 * elevator's nodes (a switch, the tunables, sched_tags) as the kernel's
 * elevator_lock does, and how long a switch may wait for the queue.
 * Every other node (stat, faults, device/) runs without it, so a fault
 * that frees a stuck queue is served while a switch waits on it.
 */
struct ctl_disk {
	pthread_mutex_t elv_lock;
	unsigned int freeze_timeout_ms;
};

struct ctl_node_ops {
	/* One line into buf (no newline); its length or -errno. */
	int (*show)(const struct ctl_node *n, char *buf, size_t len);
	/* NULL: read-only.  0, or -1 with e set to why the value was refused.
	 */
	int (*store)(const struct ctl_node *n, const char *value,
		     struct mq_err *e);
	/*
	 * Optional: what get answers, as many lines as it takes, each as
	 * "+LINE\n" appended to out; 0 or -errno.  show then gives the one
	 * line summary that listings use.
	 */
	int (*show_lines)(const struct ctl_node *n, struct ctl_buf *out);
	/* NULL: always there.  false hides the node (an absent tunable). */
	bool (*visible)(const struct ctl_node *n);
	/* Reads or changes the elevator: runs under cd->elv_lock. */
	bool elv;
};

struct ctl_node {
	char *path; /* "EXPORT/queue/scheduler" */
	const struct ctl_node_ops *ops;
	struct gendisk *disk;
	struct ctl_disk *cd; /* NULL for a node of no export */
	const void *data;    /* what ops need: a table entry, a name */
	unsigned int idx;    /* a hw queue number */
};

struct ctl_tree;

/* A switch waits freeze_timeout_ms at most for a queue (0: the default). */
struct ctl_tree *ctl_tree_new(unsigned int freeze_timeout_ms);
void ctl_tree_free(struct ctl_tree *t);
/* Add a node: 0, -EINVAL (bad path), -EEXIST or -ENOMEM. */
int ctl_tree_add(struct ctl_tree *t, const char *path,
		 const struct ctl_node_ops *ops, struct gendisk *disk,
		 struct ctl_disk *cd, const void *data, unsigned int idx);
/*
 * Remove every node at name/... (an export's or an internal queue's),
 * and the shared state no remaining node uses.  Returns how many nodes.
 */
size_t ctl_tree_remove(struct ctl_tree *t, const char *name);
/* The shared state of a new export's nodes, owned by the tree; NULL: OOM. */
struct ctl_disk *ctl_tree_new_disk(struct ctl_tree *t);
/*
 * Every node of the export called name: queue, stat, mq, iosched, device
 * (with device/disk_name), fault.
 */
int ctl_tree_add_disk(struct ctl_tree *t, const char *name,
		      struct gendisk *disk);
/*
 * The nodes of a device's queue that is no export (mq_device_add_internal):
 * queue, stat, mq and fault as an export has them, and the disk's attrs
 * directly under name ("sx8/host/state").
 */
int ctl_tree_add_internal(struct ctl_tree *t, const char *name,
			  struct gendisk *disk);

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

/*
 * An export as users name it, and its disk; or, with internal set, a
 * device's queue that is no export (in the tree, never in metrics or
 * traces).
 */
struct ctl_export {
	const char *name;
	struct gendisk *disk;
	bool internal;
	const char *model; /* the device model (a static string) or NULL */
};

/* metrics.c: Prometheus text exposition of every export. */
void ctl_metrics(const struct ctl_export *ex, unsigned int nr,
		 struct ctl_buf *out);

/* What the operator chose for a control server. */
struct ctl_opts {
	mode_t mode; /* of the socket: 0 means 0600 (0660 with group) */
	bool group;  /* members of gid may connect too */
	gid_t gid;   /* the socket's group when group is set */
	/*
	 * The uid the server will run as (mqblkd -u): the socket is made
	 * its file and it may connect, as the server's own uid does.
	 * false: geteuid().
	 */
	bool has_owner;
	uid_t owner;
	const char *trace_dir; /* "trace start" writes only under it; NULL:
				  tracing is refused */
	unsigned int freeze_timeout_ms; /* 0: CTL_FREEZE_TIMEOUT_MS */
	/*
	 * "[ADDR:]PORT": serve /metrics, /api/v1/exports and the status
	 * page over HTTP there (http.c); no ADDR: loopback.  NULL: no HTTP.
	 */
	const char *http;
};

/*
 * The state a server keeps for the protocol, shared by its clients.
 * lock guards the tree, the exports and the names: every request and
 * every HTTP answer reads them under it, ctl_ctx_add() and
 * ctl_ctx_remove() change them under it (a server that adds and drops
 * exports while it runs, mqblkd's reload).  trace_lock guards trace and
 * nests inside lock.
 */
struct ctl_trace;
struct ctl_ctx {
	pthread_rwlock_t lock;
	struct ctl_tree *tree;
	struct ctl_export *exports; /* names copied */
	unsigned int nr_exports;
	char **names; /* the top of every export and internal queue */
	unsigned int nr_names;
	char *trace_dir; /* absolute, resolved; NULL: no tracing */
	pthread_mutex_t trace_lock;
	struct ctl_trace *trace; /* NULL when not tracing */
};

/*
 * Build the tree of the exports.  Each name must be a valid path of its
 * own and no name may be a directory of another ("a" beside "a/b").
 * 0, or -1 with e set.
 */
int ctl_ctx_init(struct ctl_ctx *c, const struct ctl_export *ex,
		 unsigned int nr, const struct ctl_opts *o, struct mq_err *e);
void ctl_ctx_fini(struct ctl_ctx *c);

/*
 * Add exports (and internal queues) to a running context, all or none,
 * under the same rules as ctl_ctx_init() against the names it has.
 * 0, or -1 with e set and nothing changed.
 */
int ctl_ctx_add(struct ctl_ctx *c, const struct ctl_export *ex, unsigned int nr,
		struct mq_err *e);
/*
 * Drop the export (or internal queue) called name and its nodes; a
 * trace that records it stops recording it.  Once it returns no request
 * refers to its disk any more.  -ENOENT if there is none.
 */
int ctl_ctx_remove(struct ctl_ctx *c, const char *name);

/*
 * Answer one request line (no newline; may hold any bytes up to len):
 * "+DATA" lines then "ok" or "err MESSAGE", each ending in '\n'.
 */
void ctl_handle_line(struct ctl_ctx *c, const char *line, size_t len,
		     struct ctl_buf *out);

/*
 * blktrace.c: trace every export into dir, a directory under root (both
 * absolute, or dir relative to root), made if need be without following
 * a symbolic link.  The files are EXPORT.blktrace.N, mode 0600 (an
 * export "a/b" writes a/b.blktrace.N).
 */
struct ctl_trace *ctl_trace_start(const char *root, const char *dir,
				  const struct ctl_export *ex, unsigned int nr,
				  struct mq_err *e);
void ctl_trace_stop(struct ctl_trace *t);
/* Stop recording disk (its files are closed); the rest trace on. */
void ctl_trace_forget(struct ctl_trace *t, const struct gendisk *disk);

/*
 * http.c: an HTTP server on listen ("[ADDR:]PORT", "[V6ADDR]:PORT"; no
 * ADDR: 127.0.0.1) answering GET /metrics (ctl_metrics), GET
 * /api/v1/exports (JSON) and GET / (the status page) from c, which must
 * outlive it.  NULL with e set if it cannot listen.  stop takes NULL.
 */
struct ctl_http;
struct ctl_http *ctl_http_start(const char *spec, struct ctl_ctx *c,
				struct mq_err *e);
/* The port it listens on (the one chosen when listen asked for 0). */
unsigned int ctl_http_port(const struct ctl_http *h);
void ctl_http_stop(struct ctl_http *h);

/*
 * server.c: serve the tree of the exports on a Unix socket at path, each
 * client on a thread of its own, to peers with the server's uid, root, or
 * (o->group) members of o->gid.  NULL with e set if it cannot, for
 * instance when another server listens at path.  stop takes NULL too.
 */
struct ctl_server;
/*
 * path may be NULL when o->http is set: HTTP only.  With o->http, the HTTP
 * server shares the tree (and its elevator locks) with the socket.
 */
struct ctl_server *ctl_server_start(const char *path, const struct ctl_opts *o,
				    const struct ctl_export *ex,
				    unsigned int nr, struct mq_err *e);
/*
 * The same in two steps, for a process that forks between them (nbdkit's
 * get_ready and after_fork): listen at path before the fork, so that a
 * client started right after it (nbdkit --run, or a script once a
 * daemonised nbdkit returns) waits in the backlog instead of finding no
 * socket; start the thread after it.  ctl_server_listen returns the
 * socket, or -1 with e set.  ctl_server_start_on takes listen_fd over
 * (closed and path unlinked if it fails); listen_fd is -1 when path is
 * NULL.
 */
int ctl_server_listen(const char *path, const struct ctl_opts *o,
		      struct mq_err *e);
struct ctl_server *ctl_server_start_on(int listen_fd, const char *path,
				       const struct ctl_opts *o,
				       const struct ctl_export *ex,
				       unsigned int nr, struct mq_err *e);
void ctl_server_stop(struct ctl_server *s);
/* ctl_ctx_add() and ctl_ctx_remove() on the server's tree. */
int ctl_server_add(struct ctl_server *s, const struct ctl_export *ex,
		   unsigned int nr, struct mq_err *e);
int ctl_server_remove(struct ctl_server *s, const char *name);

#endif
