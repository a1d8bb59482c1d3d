// SPDX-License-Identifier: GPL-2.0
/*
 * mqblkctl: drive a server's control socket from a shell.
 *
 *   mqblkctl -s PATH ls [PATH] | get PATH | set PATH [VALUE] | metrics
 *                    | trace start DIR | trace stop | watch [COUNT]
 *
 * Prints the data lines of the answer; an "err" answer goes to stderr and
 * the exit status is 1 (2 for usage and connection errors).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef MQBLK_VERSION
#define MQBLK_VERSION "0.1.0"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mqblkctl [-s|--socket SOCKET] COMMAND\n"
		"       mqblkctl --help | --version\n"
		"SOCKET defaults to $MQBLK_CONTROL.  Commands:\n"
		"  ls [PATH]            list a directory of the tree\n"
		"  get PATH             print an attribute\n"
		"  set PATH [VALUE]     write an attribute (fire a fault; some "
		"take no value)\n"
		"  metrics              Prometheus text metrics\n"
		"  trace start DIR      write blktrace files into DIR, under the "
		"server's\n"
		"                       trace directory\n"
		"  trace stop\n"
		"  watch [COUNT]        iostat-like rates every second, COUNT "
		"times\n"
		"                       (COUNT a positive number; none: until "
		"interrupted)\n");
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "mqblkctl: %s: path too long\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "mqblkctl: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

struct conn {
	int fd;
	FILE *in;
};

/*
 * Send one request; call fn on each data line (without "+").  Returns 0
 * on "ok", 1 on "err" (printed), 2 on a broken connection.
 */
static int request(struct conn *c, const char *req,
		   void (*fn)(const char *line, void *arg), void *arg)
{
	size_t len = strlen(req);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 2;

	int werr = 0;

	/*
	 * A server that refuses us answers and closes before it reads: the
	 * write fails then, and the answer is still there to be read.
	 */
	if (write(c->fd, req, len) != (ssize_t)len ||
	    write(c->fd, "\n", 1) != 1)
		werr = errno;
	while ((n = getline(&line, &cap, c->in)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (line[0] == '+') {
			fn(line + 1, arg);
			continue;
		}
		if (!strcmp(line, "ok")) {
			rc = 0;
		} else if (!strncmp(line, "err ", 4)) {
			fprintf(stderr, "mqblkctl: %s\n", line + 4);
			rc = 1;
		} else {
			fprintf(stderr, "mqblkctl: bad answer: %s\n", line);
		}
		break;
	}
	if (rc == 2 && n <= 0) {
		if (werr)
			fprintf(stderr, "mqblkctl: write: %s\n",
				strerror(werr));
		else
			fprintf(stderr, "mqblkctl: connection closed\n");
	}
	free(line);
	return rc;
}

static void print_line(const char *line, void *arg)
{
	puts(line);
}

/* ---- watch -------------------------------------------------------- */

#define WATCH_MAX 64

struct disk_stat {
	char name[64];
	unsigned long long f[17];
	bool valid;
};

struct names {
	char name[WATCH_MAX][64];
	unsigned int n;
};

struct listing {
	char entry[WATCH_MAX][256];
	unsigned int n;
};

static void add_entry(const char *line, void *arg)
{
	struct listing *l = arg;

	if (l->n < WATCH_MAX && strlen(line) < sizeof(l->entry[0]))
		snprintf(l->entry[l->n++], sizeof(l->entry[0]), "%s", line);
}

/*
 * The exports under dir ("" the top): a directory with a stat leaf is an
 * export ("ide/hda" lives under "ide/").
 */
static int find_exports(struct conn *c, const char *dir, unsigned int depth,
			struct names *nm)
{
	static struct listing l[4];
	char req[300], sub[256];
	unsigned int i, j;
	int rc;

	if (depth >= sizeof(l) / sizeof(l[0]))
		return 0;
	l[depth].n = 0;
	snprintf(req, sizeof(req), "ls %s", dir);
	rc = request(c, req, add_entry, &l[depth]);
	if (rc)
		return rc;
	for (i = 0; i < l[depth].n; i++)
		if (!strcmp(l[depth].entry[i], "stat")) {
			if (nm->n < WATCH_MAX && strlen(dir) < 64)
				snprintf(nm->name[nm->n++], 64, "%s", dir);
			return 0;
		}
	for (i = 0; i < l[depth].n; i++) {
		size_t len = strlen(l[depth].entry[i]);

		if (!len || l[depth].entry[i][len - 1] != '/')
			continue;
		j = snprintf(sub, sizeof(sub), "%s%s%.*s", dir, *dir ? "/" : "",
			     (int)len - 1, l[depth].entry[i]);
		if (j >= sizeof(sub))
			continue;
		rc = find_exports(c, sub, depth + 1, nm);
		if (rc)
			return rc;
	}
	return 0;
}

static void parse_stat(const char *line, void *arg)
{
	struct disk_stat *st = arg;

	st->valid =
		sscanf(line,
		       "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		       "%llu %llu %llu %llu %llu %llu %llu",
		       &st->f[0], &st->f[1], &st->f[2], &st->f[3], &st->f[4],
		       &st->f[5], &st->f[6], &st->f[7], &st->f[8], &st->f[9],
		       &st->f[10], &st->f[11], &st->f[12], &st->f[13],
		       &st->f[14], &st->f[15], &st->f[16]) == 17;
}

static double ms_per_io(unsigned long long dt, unsigned long long dn)
{
	return dn ? (double)dt / dn : 0.0;
}

static int watch(struct conn *c, long count)
{
	static struct disk_stat prev[WATCH_MAX], cur[WATCH_MAX];
	struct names nm = {.n = 0};
	char req[128];
	unsigned int i;
	long round;
	int rc;

	rc = find_exports(c, "", 0, &nm);
	if (rc)
		return rc;
	for (round = 0; count <= 0 || round <= count; round++) {
		for (i = 0; i < nm.n; i++) {
			snprintf(req, sizeof(req), "get %s/stat", nm.name[i]);
			cur[i].valid = false;
			rc = request(c, req, parse_stat, &cur[i]);
			if (rc)
				return rc;
		}
		if (round > 0) {
			printf("%-12s %9s %9s %10s %10s %8s %8s %7s %6s\n",
			       "export", "r/s", "w/s", "rkB/s", "wkB/s",
			       "r_await", "w_await", "aqu-sz", "%util");
			for (i = 0; i < nm.n; i++) {
				unsigned long long *a = prev[i].f,
						   *b = cur[i].f;

				if (!prev[i].valid || !cur[i].valid)
					continue;
				printf("%-12s %9llu %9llu %10.1f %10.1f %8.2f %8.2f %7.2f %6.1f\n",
				       nm.name[i], b[0] - a[0], b[4] - a[4],
				       (b[2] - a[2]) / 2.0, (b[6] - a[6]) / 2.0,
				       ms_per_io(b[3] - a[3], b[0] - a[0]),
				       ms_per_io(b[7] - a[7], b[4] - a[4]),
				       (b[10] - a[10]) / 1000.0,
				       (b[9] - a[9]) / 10.0);
			}
			fflush(stdout);
		}
		memcpy(prev, cur, sizeof(prev));
		if (count > 0 && round == count)
			break;
		nanosleep(&(struct timespec){.tv_sec = 1}, NULL);
	}
	return 0;
}

/* watch's arguments: none (forever) or one positive COUNT. */
static int parse_count(int argc, char **argv, long *count)
{
	char *end;

	*count = 0;
	if (argc == 0)
		return 0;
	errno = 0;
	if (argc == 1)
		*count = strtol(argv[0], &end, 10);
	if (argc != 1 || errno || end == argv[0] || *end || *count < 1) {
		fprintf(stderr, "mqblkctl: watch [COUNT]: COUNT is a number of "
				"rounds, at least 1\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *sock = getenv("MQBLK_CONTROL");
	char req[4096];
	struct conn c;
	size_t used = 0;
	long count = 0;
	int opt, i, rc;

	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};

	while ((opt = getopt_long(argc, argv, "+s:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("mqblkctl %s\n", MQBLK_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (!sock || optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "watch") &&
	    parse_count(argc - optind - 1, argv + optind + 1, &count))
		return 2;
	c.fd = connect_to(sock);
	if (c.fd < 0)
		return 2;
	c.in = fdopen(dup(c.fd), "r");
	if (!c.in) {
		fprintf(stderr, "mqblkctl: fdopen: %s\n", strerror(errno));
		return 2;
	}
	if (!strcmp(argv[optind], "watch")) {
		rc = watch(&c, count);
	} else {
		req[0] = '\0';
		for (i = optind; i < argc; i++) {
			int n = snprintf(req + used, sizeof(req) - used, "%s%s",
					 i > optind ? " " : "", argv[i]);

			if (n < 0 || (size_t)n >= sizeof(req) - used ||
			    strchr(argv[i], '\n')) {
				fprintf(stderr, "mqblkctl: request too long\n");
				return 2;
			}
			used += n;
		}
		rc = request(&c, req, print_line, NULL);
	}
	fclose(c.in);
	close(c.fd);
	return rc;
}
