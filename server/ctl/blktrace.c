// SPDX-License-Identifier: GPL-2.0
/*
 * blktrace output: the core's trace points (server/mq/blk-trace.h) written
 * as struct blk_io_trace records, one file per hw queue named
 * DEV.blktrace.N as blktrace names its per-CPU files, so that blkparse -i
 * DEV and btt read them unchanged.  DEV is the export's name; the
 * directory is one under the operator's trace directory, and nothing is
 * made or written through a symbolic link.  The record layout and the action
 * encoding are those of include/uapi/linux/blktrace_api.h; the pid is the
 * client id, announced once per file with a process notify ("cN").
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "../mq/blk-trace.h"
#include "../mq/log.h"

/* From blktrace_api.h: categories, actions and the record. */
#define BLK_TC_READ	(1u << 0)
#define BLK_TC_WRITE	(1u << 1)
#define BLK_TC_FLUSH	(1u << 2)
#define BLK_TC_SYNC	(1u << 3)
#define BLK_TC_QUEUE	(1u << 4)
#define BLK_TC_REQUEUE	(1u << 5)
#define BLK_TC_ISSUE	(1u << 6)
#define BLK_TC_COMPLETE (1u << 7)
#define BLK_TC_FS	(1u << 8)
#define BLK_TC_NOTIFY	(1u << 10)
#define BLK_TC_DISCARD	(1u << 13)
#define BLK_TC_FUA	(1u << 15)
#define BLK_TC_ACT(act) ((act) << 16)

enum {
	__BLK_TA_QUEUE = 1,
	__BLK_TA_BACKMERGE,
	__BLK_TA_FRONTMERGE,
	__BLK_TA_GETRQ,
	__BLK_TA_SLEEPRQ,
	__BLK_TA_REQUEUE,
	__BLK_TA_ISSUE,
	__BLK_TA_COMPLETE,
	__BLK_TA_PLUG,
	__BLK_TA_UNPLUG_IO,
	__BLK_TA_UNPLUG_TIMER,
	__BLK_TA_INSERT,
};

#define __BLK_TN_PROCESS     0
#define BLK_IO_TRACE_MAGIC   0x65617400u
#define BLK_IO_TRACE_VERSION 0x07u

struct blk_io_trace {
	uint32_t magic;
	uint32_t sequence;
	uint64_t time;
	uint64_t sector;
	uint32_t bytes;
	uint32_t action;
	uint32_t pid;
	uint32_t device;
	uint32_t cpu;
	uint16_t error;
	uint16_t pdu_len;
};

_Static_assert(sizeof(struct blk_io_trace) == 48, "blk_io_trace layout");

/* dev_t as the kernel encodes it in the record (MINORBITS 20). */
#define TRACE_MAJOR   240 /* "local/experimental use" */
#define MKDEV(ma, mi) ((uint32_t)(ma) << 20 | (uint32_t)(mi))

static const uint32_t act_bits[] = {
	[BLK_TRACE_QUEUE] = __BLK_TA_QUEUE | BLK_TC_ACT(BLK_TC_QUEUE),
	[BLK_TRACE_BACKMERGE] = __BLK_TA_BACKMERGE | BLK_TC_ACT(BLK_TC_QUEUE),
	[BLK_TRACE_FRONTMERGE] = __BLK_TA_FRONTMERGE | BLK_TC_ACT(BLK_TC_QUEUE),
	[BLK_TRACE_GETRQ] = __BLK_TA_GETRQ | BLK_TC_ACT(BLK_TC_QUEUE),
	[BLK_TRACE_INSERT] = __BLK_TA_INSERT | BLK_TC_ACT(BLK_TC_QUEUE),
	[BLK_TRACE_ISSUE] = __BLK_TA_ISSUE | BLK_TC_ACT(BLK_TC_ISSUE),
	[BLK_TRACE_COMPLETE] = __BLK_TA_COMPLETE | BLK_TC_ACT(BLK_TC_COMPLETE),
	[BLK_TRACE_REQUEUE] = __BLK_TA_REQUEUE | BLK_TC_ACT(BLK_TC_REQUEUE),
	[BLK_TRACE_PLUG] = __BLK_TA_PLUG | BLK_TC_ACT(BLK_TC_QUEUE),
	[BLK_TRACE_UNPLUG] = __BLK_TA_UNPLUG_IO | BLK_TC_ACT(BLK_TC_QUEUE),
};

#define SEEN_PIDS 64

/* One output file: a hw queue of one export. */
struct trace_file {
	pthread_mutex_t lock;
	FILE *f;
	uint32_t sequence;
	uint32_t seen[SEEN_PIDS]; /* pids announced, a small ring */
	unsigned int nr_seen;
	unsigned long dropped;
};

struct disk_trace {
	struct blk_trace bt; /* first: the core hands us &bt */
	struct ctl_trace *t;
	struct gendisk *disk;
	const char *name; /* the export's */
	uint32_t device;
	unsigned int nr_files;
	struct trace_file *files;
	bool installed;
};

struct ctl_trace {
	uint64_t start_ns;
	unsigned int nr_disks;
	struct disk_trace *disks;
};

static uint32_t action_of(const struct blk_trace_event *ev)
{
	uint32_t a = act_bits[ev->act];

	a |= BLK_TC_ACT(op_is_write(ev->op) ? BLK_TC_WRITE : BLK_TC_READ);
	if (ev->op == REQ_OP_FLUSH)
		a |= BLK_TC_ACT(BLK_TC_FLUSH);
	if (ev->op == REQ_OP_DISCARD)
		a |= BLK_TC_ACT(BLK_TC_DISCARD);
	if (op_is_sync(ev->op, ev->flags))
		a |= BLK_TC_ACT(BLK_TC_SYNC);
	if (ev->flags & REQ_FUA)
		a |= BLK_TC_ACT(BLK_TC_FUA);
	/* Request events are file-system requests, as blk_add_trace_rq. */
	if (ev->act >= BLK_TRACE_GETRQ && ev->act <= BLK_TRACE_REQUEUE)
		a |= BLK_TC_ACT(BLK_TC_FS);
	return a;
}

static void put(struct trace_file *tf, const void *p, size_t len)
{
	if (fwrite(p, 1, len, tf->f) != len)
		tf->dropped++;
}

/* Name the client once per file, as blktrace does for each new pid. */
static void announce(struct disk_trace *dt, struct trace_file *tf, uint32_t pid,
		     uint64_t time, unsigned int cpu)
{
	struct blk_io_trace rec;
	char name[16];
	unsigned int i, n = tf->nr_seen < SEEN_PIDS ? tf->nr_seen : SEEN_PIDS;

	for (i = 0; i < n; i++)
		if (tf->seen[i] == pid)
			return;
	tf->seen[tf->nr_seen++ % SEEN_PIDS] = pid;
	snprintf(name, sizeof(name), "c%u", pid);
	rec = (struct blk_io_trace){
		.magic = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION,
		.sequence = tf->sequence++,
		.time = time,
		.action = __BLK_TN_PROCESS | BLK_TC_ACT(BLK_TC_NOTIFY),
		.pid = pid,
		.device = dt->device,
		.cpu = cpu,
		.pdu_len = sizeof(name),
	};
	put(tf, &rec, sizeof(rec));
	put(tf, name, sizeof(name));
}

static void trace_event(struct blk_trace *bt, const struct blk_trace_event *ev)
{
	struct disk_trace *dt = (struct disk_trace *)bt;
	unsigned int cpu = ev->hctx < dt->nr_files ? ev->hctx : 0;
	struct trace_file *tf = &dt->files[cpu];
	uint64_t time = ev->time_ns > dt->t->start_ns
				? ev->time_ns - dt->t->start_ns
				: 0;
	struct blk_io_trace rec = {
		.magic = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION,
		.time = time,
		.sector = ev->sector,
		.bytes = ev->bytes,
		.action = action_of(ev),
		.pid = (uint32_t)ev->pid,
		.device = dt->device,
		.cpu = cpu,
		.error = (uint16_t)ev->error,
	};

	pthread_mutex_lock(&tf->lock);
	announce(dt, tf, rec.pid, time, cpu);
	rec.sequence = tf->sequence++;
	put(tf, &rec, sizeof(rec));
	pthread_mutex_unlock(&tf->lock);
}

static void disk_trace_close(struct disk_trace *dt)
{
	unsigned int i;

	if (dt->installed)
		blk_trace_set(dt->disk->queue, NULL);
	for (i = 0; i < dt->nr_files; i++) {
		struct trace_file *tf = &dt->files[i];

		if (!tf->f)
			continue;
		if (fclose(tf->f))
			tf->dropped++;
		if (tf->dropped)
			pr_err("%s: trace file %u: %lu records lost", dt->name,
			       i, tf->dropped);
		pthread_mutex_destroy(&tf->lock);
	}
	free(dt->files);
}

/*
 * The directory rel (parts split by '/', each checked by ctl_path_valid)
 * under the directory dirfd, made with mode 0700 where missing; a part
 * that is a symbolic link is refused.  Its fd, or -1 with e set.
 */
static int open_dirs(int dirfd, const char *rel, struct mq_err *e)
{
	char part[256];
	int fd = dup(dirfd);

	if (fd < 0)
		return mq_err_set(e, "dup: %s", mq_strerror(errno));
	while (*rel) {
		size_t n = strcspn(rel, "/");
		int next;

		if (n >= sizeof(part)) {
			close(fd);
			return mq_err_set(e, "name too long");
		}
		memcpy(part, rel, n);
		part[n] = '\0';
		rel += n + (rel[n] == '/');
		if (mkdirat(fd, part, 0700) && errno != EEXIST) {
			mq_err_set(e, "%s: %s", part, mq_strerror(errno));
			close(fd);
			return -1;
		}
		next = openat(fd, part,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			if (errno == ELOOP || errno == ENOTDIR)
				mq_err_set(e,
					   "%s: not a directory of the trace "
					   "directory (a symbolic link?)",
					   part);
			else
				mq_err_set(e, "%s: %s", part,
					   mq_strerror(errno));
			close(fd);
			return -1;
		}
		close(fd);
		fd = next;
	}
	return fd;
}

static int disk_trace_open(struct disk_trace *dt, int dirfd, struct mq_err *e)
{
	struct mq_queue *q = dt->disk->queue;
	const char *base = strrchr(dt->name, '/');
	unsigned int i;
	int dfd;

	/* An export "a/b" writes a/b.blktrace.N, as blkparse -i a/b reads. */
	if (base) {
		char sub[256];

		snprintf(sub, sizeof(sub), "%.*s", (int)(base - dt->name),
			 dt->name);
		dfd = open_dirs(dirfd, sub, e);
		if (dfd < 0)
			return -1;
		base++;
	} else {
		dfd = dup(dirfd);
		if (dfd < 0)
			return mq_err_set(e, "dup: %s", mq_strerror(errno));
		base = dt->name;
	}
	dt->bt.event = trace_event;
	dt->files = calloc(q->nr_hw_queues, sizeof(*dt->files));
	if (!dt->files) {
		close(dfd);
		return mq_err_set(e, "out of memory");
	}
	for (i = 0; i < q->nr_hw_queues; i++) {
		struct trace_file *tf = &dt->files[i];
		char path[300];
		int fd;

		snprintf(path, sizeof(path), "%s.blktrace.%u", base, i);
		fd = openat(dfd, path,
			    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				    O_CLOEXEC,
			    0600);
		/* An old file keeps its mode through O_TRUNC: reset it. */
		if (fd >= 0 && fchmod(fd, 0600)) {
			close(fd);
			fd = -1;
		}
		tf->f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!tf->f) {
			mq_err_set(e, "%s.blktrace.%u: %s", dt->name, i,
				   mq_strerror(errno));
			if (fd >= 0)
				close(fd);
			close(dfd);
			return -1;
		}
		pthread_mutex_init(&tf->lock, NULL);
		dt->nr_files = i + 1;
	}
	close(dfd);
	blk_trace_set(q, &dt->bt);
	dt->installed = true;
	return 0;
}

/*
 * dir inside root: root itself, an absolute path below it, or a path
 * relative to it; "." and ".." parts are refused.  The part below root,
 * or NULL with e set.
 */
static const char *below_root(const char *root, const char *dir,
			      struct mq_err *e)
{
	size_t n = strlen(root);

	if (dir[0] == '/') {
		if (n == 1)
			n = 0; /* root is "/" */
		if (strncmp(dir, root, n) || (dir[n] && dir[n] != '/')) {
			mq_err_set(e, "%s is outside the trace directory %s",
				   dir, root);
			return NULL;
		}
		dir += n;
		while (*dir == '/')
			dir++;
	}
	if (*dir && !ctl_path_valid(dir)) {
		mq_err_set(e,
			   "%s: a trace directory name has no '.', '..' or "
			   "empty part",
			   dir);
		return NULL;
	}
	return dir;
}

struct ctl_trace *ctl_trace_start(const char *root, const char *dir,
				  const struct ctl_export *ex, unsigned int nr,
				  struct mq_err *e)
{
	struct ctl_trace *t;
	const char *rel;
	unsigned int i;
	int rootfd, dirfd;

	rel = below_root(root, dir, e);
	if (!rel)
		return NULL;
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return mq_err_set(e, "%s: %s", root, mq_strerror(errno)), NULL;
	dirfd = open_dirs(rootfd, rel, e);
	close(rootfd);
	if (dirfd < 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t)
		t->disks = calloc(nr ? nr : 1, sizeof(*t->disks));
	if (!t || !t->disks) {
		free(t);
		close(dirfd);
		return mq_err_set(e, "out of memory"), NULL;
	}
	t->start_ns = mq_now_ns();
	for (i = 0; i < nr; i++) {
		struct disk_trace *dt = &t->disks[t->nr_disks++];

		dt->t = t;
		dt->disk = ex[i].disk;
		dt->name = ex[i].name;
		dt->device = MKDEV(TRACE_MAJOR, i);
		if (disk_trace_open(dt, dirfd, e)) {
			close(dirfd);
			ctl_trace_stop(t);
			return NULL;
		}
	}
	close(dirfd);
	pr_info("control: tracing %u export%s into %s%s%s", t->nr_disks,
		t->nr_disks == 1 ? "" : "s", root, *rel ? "/" : "", rel);
	return t;
}

void ctl_trace_forget(struct ctl_trace *t, const struct gendisk *disk)
{
	unsigned int i;

	for (i = 0; i < t->nr_disks; i++) {
		struct disk_trace *dt = &t->disks[i];

		if (dt->disk != disk)
			continue;
		disk_trace_close(dt);
		dt->files = NULL;
		dt->nr_files = 0;
		dt->installed = false;
	}
}

void ctl_trace_stop(struct ctl_trace *t)
{
	unsigned int i;

	for (i = 0; i < t->nr_disks; i++)
		disk_trace_close(&t->disks[i]);
	free(t->disks);
	free(t);
}
