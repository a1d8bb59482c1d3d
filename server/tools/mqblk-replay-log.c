// SPDX-License-Identifier: GPL-2.0
/*
 * mqblk-replay-log: replay a write log in dm-log-writes' format (ours,
 * from log_writes=PATH, or one Linux's dm-log-writes wrote) onto a file,
 * a block device or an NBD export, with the options of xfstests'
 * replay-log and their meaning.  The format is described in
 * backends/log-writes.h.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libnbd.h>
#include <stdarg.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../backends/log-writes.h"

#ifndef MQBLK_VERSION
#define MQBLK_VERSION "0.1.0"
#endif

#define ENTRY_HEADER 32 /* struct log_write_entry */

/* Where the entries go: a file or block device, or an NBD export. */
struct target {
	int fd;
	bool blkdev;
	struct nbd_handle *nbd;
};

struct log {
	int fd;
	uint32_t sectorsize;
	uint64_t nr_entries;
	uint64_t cur_entry; /* the next entry's number */
	uint64_t cur_pos;   /* its offset in the log, bytes */
	uint8_t *block;	    /* the entry's header block */
	uint8_t *data;
	size_t data_cap;
};

struct entry {
	uint64_t sector, nr_sectors, flags, data_len;
	const char *mark; /* a MARK's name, NUL-terminated, in log->block */
};

static int verbose;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mqblk-replay-log --log LOG [OPTIONS]\n"
		"       mqblk-replay-log --help | --version\n"
		"Replays a dm-log-writes log (mqblkd's log_writes=PATH) onto a\n"
		"file, a block device or an NBD URI.  Without --replay it prints\n"
		"the log's version, sector size and number of entries.\n"
		"Options:\n"
		"  --log LOG            the log to read\n"
		"  --replay TARGET      a file, a block device, or an NBD URI\n"
		"                       (nbd://, nbds://, nbd+unix://...)\n"
		"  --limit N            replay (or find) N entries at most\n"
		"  --start-entry N      skip the first N entries\n"
		"  --start-mark NAME    skip up to and including mark NAME\n"
		"  --end-mark NAME      stop after mark NAME\n"
		"  --next-flush         stop after the next FLUSH entry\n"
		"  --next-fua           stop after the next FUA entry\n"
		"  --find               replay nothing: print ENTRY@SECTOR of the\n"
		"                       entry the stop options name\n"
		"  --num-entries        print the number of entries in the log\n"
		"  --no-discard         skip DISCARD entries\n"
		"  --check N|flush|fua  run --fsck every N entries, after every\n"
		"                       FLUSH or after every FUA entry\n"
		"  --fsck CMD           the check (a shell command); a non-zero\n"
		"                       exit stops the replay, exit status 1\n"
		"  -v, --verbose        print each entry replayed (-vv: skipped\n"
		"                       ones too)\n"
		"Exit status: 0 done; 1 an error, a failed check, or --find\n"
		"found nothing.\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("mqblk-replay-log: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t parse_u64(const char *opt, const char *s, bool nonzero)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || (nonzero && !v))
		die("--%s %s: expected a %snumber", opt, s,
		    nonzero ? "positive " : "");
	return v;
}

/* ---- reading the log --------------------------------------------- */

static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (uint8_t *)buf + done, len - done,
				  (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = ENODATA; /* the log ends early */
			return -1;
		}
		done += (size_t)r;
	}
	return 0;
}

static void log_open(struct log *log, const char *path)
{
	uint8_t super[28];
	uint64_t magic, version;
	uint32_t ss;

	log->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (log->fd < 0)
		die("%s: %s", path, strerror(errno));
	if (read_full(log->fd, super, sizeof(super), 0))
		die("%s: cannot read the super block: %s", path,
		    strerror(errno));
	memcpy(&magic, super, 8);
	memcpy(&version, super + 8, 8);
	memcpy(&log->nr_entries, super + 16, 8);
	memcpy(&ss, super + 24, 4);
	magic = le64toh(magic);
	version = le64toh(version);
	log->nr_entries = le64toh(log->nr_entries);
	log->sectorsize = le32toh(ss);
	if (magic != LOG_WRITES_MAGIC)
		die("%s: not a dm-log-writes log (magic %#" PRIx64 ")", path,
		    magic);
	if (version != LOG_WRITES_VERSION)
		die("%s: log version %" PRIu64 ", only %llu is known", path,
		    version, LOG_WRITES_VERSION);
	if (log->sectorsize < 512 || log->sectorsize > (1u << 20) ||
	    (log->sectorsize & (log->sectorsize - 1)))
		die("%s: sector size %u", path, log->sectorsize);
	log->block = malloc(log->sectorsize + 1);
	if (!log->block)
		die("out of memory");
	log->cur_pos = log->sectorsize;
}

/*
 * Read the next entry's header (and, with data, its data): 0, 1 at the
 * end of the log, or an exit on a broken log.
 */
static int log_next(struct log *log, struct entry *e, bool data)
{
	uint64_t h[4], bytes;

	if (log->cur_entry >= log->nr_entries)
		return 1;
	if (read_full(log->fd, log->block, log->sectorsize, log->cur_pos))
		die("entry %" PRIu64 " at byte %" PRIu64 ": %s", log->cur_entry,
		    log->cur_pos, strerror(errno));
	memcpy(h, log->block, sizeof(h));
	e->sector = le64toh(h[0]);
	e->nr_sectors = le64toh(h[1]);
	e->flags = le64toh(h[2]);
	e->data_len = le64toh(h[3]);
	e->mark = NULL;
	if (e->flags & LOG_MARK_FLAG) {
		size_t n = e->data_len < log->sectorsize - ENTRY_HEADER
				   ? e->data_len
				   : log->sectorsize - ENTRY_HEADER;

		log->block[ENTRY_HEADER + n] = '\0';
		e->mark = (const char *)log->block + ENTRY_HEADER;
	}
	log->cur_pos += log->sectorsize;
	bytes = e->flags & (LOG_DISCARD_FLAG | LOG_MARK_FLAG)
			? 0
			: e->nr_sectors * log->sectorsize;
	if (e->nr_sectors > UINT64_MAX / log->sectorsize ||
	    bytes > ((uint64_t)1 << 32))
		die("entry %" PRIu64 ": %" PRIu64 " sectors is too long",
		    log->cur_entry, e->nr_sectors);
	if (data && bytes) {
		if (bytes > log->data_cap) {
			free(log->data);
			log->data = malloc(bytes);
			if (!log->data)
				die("out of memory");
			log->data_cap = bytes;
		}
		if (read_full(log->fd, log->data, bytes, log->cur_pos))
			die("entry %" PRIu64 "'s data at byte %" PRIu64 ": %s",
			    log->cur_entry, log->cur_pos, strerror(errno));
	}
	log->cur_pos += bytes;
	log->cur_entry++;
	return 0;
}

static void log_close(struct log *log)
{
	free(log->block);
	free(log->data);
	close(log->fd);
}

/* ---- the target -------------------------------------------------- */

static bool is_uri(const char *s)
{
	return !strncmp(s, "nbd://", 6) || !strncmp(s, "nbds://", 7) ||
	       !strncmp(s, "nbd+unix://", 11) ||
	       !strncmp(s, "nbds+unix://", 12) ||
	       !strncmp(s, "nbd+vsock://", 12) ||
	       !strncmp(s, "nbds+vsock://", 13);
}

static void target_open(struct target *t, const char *spec)
{
	struct stat st;

	if (is_uri(spec)) {
		t->nbd = nbd_create();
		if (!t->nbd || nbd_connect_uri(t->nbd, spec) == -1)
			die("%s: %s", spec, nbd_get_error());
		if (nbd_is_read_only(t->nbd) == 1)
			die("%s: the export is read-only", spec);
		return;
	}
	t->fd = open(spec, O_WRONLY | O_CLOEXEC);
	if (t->fd < 0)
		die("%s: %s", spec, strerror(errno));
	if (fstat(t->fd, &st))
		die("%s: %s", spec, strerror(errno));
	t->blkdev = S_ISBLK(st.st_mode);
}

static int write_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pwrite(fd, (const uint8_t *)buf + done, len - done,
				   (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static int target_write(struct target *t, const void *buf, size_t len,
			uint64_t off)
{
	if (t->nbd)
		return nbd_pwrite(t->nbd, buf, len, off, 0) == -1 ? -1 : 0;
	return write_full(t->fd, buf, len, off);
}

static int write_zeroes(struct target *t, uint64_t off, uint64_t len)
{
	static const uint8_t zero[65536];

	while (len) {
		size_t n = len < sizeof(zero) ? (size_t)len : sizeof(zero);

		if (target_write(t, zero, n, off))
			return -1;
		off += n;
		len -= n;
	}
	return 0;
}

/*
 * A DISCARD: a hole in a file, BLKDISCARD on a block device, TRIM on an
 * NBD export; where the target cannot, zeroes, as replay-log writes.
 */
static int target_discard(struct target *t, uint64_t off, uint64_t len)
{
	uint64_t range[2] = {off, len};

	if (t->nbd) {
		if (nbd_can_trim(t->nbd) == 1)
			return nbd_trim(t->nbd, len, off, 0) == -1 ? -1 : 0;
		if (nbd_can_zero(t->nbd) == 1)
			return nbd_zero(t->nbd, len, off, 0) == -1 ? -1 : 0;
		return write_zeroes(t, off, len);
	}
	if (t->blkdev && !ioctl(t->fd, BLKDISCARD, range))
		return 0;
	if (!t->blkdev &&
	    !fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       (off_t)off, (off_t)len))
		return 0;
	return write_zeroes(t, off, len);
}

static int target_sync(struct target *t)
{
	if (t->nbd)
		return nbd_flush(t->nbd, 0) == -1 ? -1 : 0;
	return fsync(t->fd);
}

static const char *target_error(const struct target *t)
{
	return t->nbd ? nbd_get_error() : strerror(errno);
}

static void target_close(struct target *t)
{
	if (t->nbd) {
		if (nbd_shutdown(t->nbd, 0) == -1)
			die("%s", nbd_get_error());
		nbd_close(t->nbd);
	} else if (t->fd >= 0 && close(t->fd)) {
		die("close: %s", strerror(errno));
	}
}

/* ---- replay ------------------------------------------------------ */

static void print_entry(const struct log *log, const struct entry *e,
			const char *what)
{
	if (e->flags & LOG_MARK_FLAG)
		printf("%s %" PRIu64 ": mark %s\n", what, log->cur_entry - 1,
		       e->mark);
	else
		printf("%s %" PRIu64 ": sector %" PRIu64 ", %" PRIu64
		       " sectors, flags %#" PRIx64 "%s%s%s\n",
		       what, log->cur_entry - 1, e->sector, e->nr_sectors,
		       e->flags, e->flags & LOG_FLUSH_FLAG ? " flush" : "",
		       e->flags & LOG_FUA_FLAG ? " fua" : "",
		       e->flags & LOG_DISCARD_FLAG ? " discard" : "");
}

static int replay_entry(struct log *log, struct target *t,
			const struct entry *e, bool discard)
{
	uint64_t off = e->sector * log->sectorsize;
	uint64_t len = e->nr_sectors * log->sectorsize;
	int r = 0;

	if (e->flags & LOG_MARK_FLAG)
		return 0;
	if (e->flags & LOG_DISCARD_FLAG) {
		if (!discard) {
			if (verbose > 1)
				print_entry(log, e, "skipped");
			return 0;
		}
		r = target_discard(t, off, len);
	} else if (len) {
		r = target_write(t, log->data, (size_t)len, off);
	}
	/* An NBD target gets the log's flushes, as a server would have. */
	if (!r && (e->flags & LOG_FLUSH_FLAG) && t->nbd)
		r = target_sync(t);
	if (r) {
		fprintf(stderr, "mqblk-replay-log: entry %" PRIu64 ": %s\n",
			log->cur_entry - 1, target_error(t));
		return -1;
	}
	if (verbose)
		print_entry(log, e, "replayed");
	return 0;
}

/* Does e stop the replay: a flag asked for, or the mark named? */
static bool should_stop(const struct entry *e, uint64_t stop_flags,
			const char *mark)
{
	if (!(e->flags & stop_flags))
		return false;
	/* a MARK only matches when --end-mark was given: by its name */
	if (e->flags & LOG_MARK_FLAG)
		return mark && !strcmp(e->mark, mark);
	return true;
}

static int run_fsck(struct target *t, const char *cmd)
{
	int st;

	if (target_sync(t)) {
		fprintf(stderr, "mqblk-replay-log: sync: %s\n",
			target_error(t));
		return -1;
	}
	fflush(stdout);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return 0;
}

enum check_mode { CHECK_NONE, CHECK_NUMBER, CHECK_FLUSH, CHECK_FUA };

int main(int argc, char **argv)
{
	enum {
		O_LOG = 256,
		O_REPLAY,
		O_LIMIT,
		O_START_ENTRY,
		O_START_MARK,
		O_END_MARK,
		O_NEXT_FLUSH,
		O_NEXT_FUA,
		O_FIND,
		O_NUM_ENTRIES,
		O_NO_DISCARD,
		O_CHECK,
		O_FSCK,
		O_HELP,
		O_VERSION,
	};
	static const struct option opts[] = {
		{"log", required_argument, NULL, O_LOG},
		{"replay", required_argument, NULL, O_REPLAY},
		{"limit", required_argument, NULL, O_LIMIT},
		{"start-entry", required_argument, NULL, O_START_ENTRY},
		{"start-mark", required_argument, NULL, O_START_MARK},
		{"end-mark", required_argument, NULL, O_END_MARK},
		{"next-flush", no_argument, NULL, O_NEXT_FLUSH},
		{"next-fua", no_argument, NULL, O_NEXT_FUA},
		{"find", no_argument, NULL, O_FIND},
		{"num-entries", no_argument, NULL, O_NUM_ENTRIES},
		{"no-discard", no_argument, NULL, O_NO_DISCARD},
		{"check", required_argument, NULL, O_CHECK},
		{"fsck", required_argument, NULL, O_FSCK},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, O_HELP},
		{"version", no_argument, NULL, O_VERSION},
		{NULL, 0, NULL, 0},
	};
	const char *log_path = NULL, *replay = NULL, *start_mark = NULL;
	const char *end_mark = NULL, *fsck = NULL;
	uint64_t limit = 0, start_entry = 0, check_every = 0, n = 0;
	uint64_t stop_flags = 0;
	enum check_mode check = CHECK_NONE;
	bool find = false, num_entries = false, discard = true;
	struct target t = {.fd = -1};
	struct log log = {0};
	struct entry e;
	int c, r, ret = 0;

	while ((c = getopt_long(argc, argv, "v", opts, NULL)) != -1) {
		switch (c) {
		case O_LOG:
			log_path = optarg;
			break;
		case O_REPLAY:
			replay = optarg;
			break;
		case O_LIMIT:
			limit = parse_u64("limit", optarg, true);
			break;
		case O_START_ENTRY:
			start_entry = parse_u64("start-entry", optarg, false);
			break;
		case O_START_MARK:
			start_mark = optarg;
			break;
		case O_END_MARK:
			end_mark = optarg;
			stop_flags |= LOG_MARK_FLAG;
			break;
		case O_NEXT_FLUSH:
			stop_flags |= LOG_FLUSH_FLAG;
			break;
		case O_NEXT_FUA:
			stop_flags |= LOG_FUA_FLAG;
			break;
		case O_FIND:
			find = true;
			break;
		case O_NUM_ENTRIES:
			num_entries = true;
			break;
		case O_NO_DISCARD:
			discard = false;
			break;
		case O_CHECK:
			if (!strcmp(optarg, "flush")) {
				check = CHECK_FLUSH;
			} else if (!strcmp(optarg, "fua")) {
				check = CHECK_FUA;
			} else {
				check = CHECK_NUMBER;
				check_every = parse_u64("check", optarg, true);
			}
			break;
		case O_FSCK:
			fsck = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case O_HELP:
			usage(stdout);
			return 0;
		case O_VERSION:
			printf("mqblk-replay-log %s\n", MQBLK_VERSION);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	if (!log_path)
		die("--log LOG is required (see --help)");
	if (!fsck != (check == CHECK_NONE))
		die("--check and --fsck go together");
	if (start_mark && start_entry)
		die("--start-entry and --start-mark: give one of them");
	log_open(&log, log_path);

	/* Skip to the first entry to replay. */
	while (start_mark || log.cur_entry < start_entry) {
		r = log_next(&log, &e, false);
		if (r && start_mark)
			die("no mark '%s' in the log", start_mark);
		if (r)
			die("the log has only %" PRIu64 " entries",
			    log.nr_entries);
		if (verbose > 1)
			print_entry(&log, &e, "skipped");
		if (start_mark && (e.flags & LOG_MARK_FLAG) &&
		    !strcmp(e.mark, start_mark))
			break;
	}
	if (find) {
		while (!(r = log_next(&log, &e, false))) {
			n++;
			if ((limit && n == limit) ||
			    should_stop(&e, stop_flags, end_mark)) {
				printf("%" PRIu64 "@%" PRIu64 "\n",
				       log.cur_entry - 1,
				       log.cur_pos / log.sectorsize);
				log_close(&log);
				return 0;
			}
		}
		fprintf(stderr, "mqblk-replay-log: no such entry\n");
		log_close(&log);
		return 1;
	}
	if (num_entries) {
		printf("%" PRIu64 "\n", log.nr_entries);
		log_close(&log);
		return 0;
	}
	if (!replay) {
		printf("Log version=%llu, sectorsize=%u, entries=%" PRIu64 "\n",
		       LOG_WRITES_VERSION, log.sectorsize, log.nr_entries);
		log_close(&log);
		return 0;
	}
	target_open(&t, replay);
	while (!(r = log_next(&log, &e, true))) {
		n++;
		if (replay_entry(&log, &t, &e, discard)) {
			ret = 1;
			break;
		}
		if ((check == CHECK_NUMBER && n % check_every == 0) ||
		    (check == CHECK_FLUSH && (e.flags & LOG_FLUSH_FLAG)) ||
		    (check == CHECK_FUA && (e.flags & LOG_FUA_FLAG))) {
			if (run_fsck(&t, fsck)) {
				fprintf(stderr,
					"mqblk-replay-log: fsck failed on entry "
					"%" PRIu64 "\n",
					log.cur_entry - 1);
				ret = 1;
				break;
			}
		}
		if ((limit && n == limit) ||
		    should_stop(&e, stop_flags, end_mark))
			break;
	}
	if (r == 1 && end_mark && !ret) {
		fprintf(stderr, "mqblk-replay-log: no mark '%s' in the log\n",
			end_mark);
		ret = 1;
	}
	if (target_sync(&t)) {
		fprintf(stderr, "mqblk-replay-log: sync: %s\n",
			target_error(&t));
		ret = 1;
	}
	target_close(&t);
	log_close(&log);
	return ret;
}
