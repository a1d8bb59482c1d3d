// SPDX-License-Identifier: GPL-2.0
/*
 * mqblkctl: drive a server's control socket from a shell.
 *
 *   mqblkctl [-s PATH] [--json] ls [PATH] | get PATH | set PATH [VALUE]
 *                    | stat EXPORT | metrics | trace start DIR | trace stop
 *                    | watch [-i SECONDS] [EXPORT|GLOB] [COUNT]
 *
 * Prints the data lines of the answer (or, with --json, a JSON document
 * built with json-c); see usage() for the exit codes.
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
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

/* The path the systemd unit (mqblkd.service) gives --control. */
#define MQBLK_CONTROL_DEFAULT "/run/mqblk/control.sock"

/* Exit codes. */
enum {
	EXIT_OK = 0,
	EXIT_REFUSED = 1, /* the server answered err, or nothing matched */
	EXIT_USAGE = 2,	  /* bad arguments, no connection, a broken answer */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mqblkctl [-s|--socket SOCKET] [-j|--json] COMMAND\n"
		"       mqblkctl --help | --version\n"
		"SOCKET defaults to $MQBLK_CONTROL, else " MQBLK_CONTROL_DEFAULT
		".\n"
		"Commands:\n"
		"  ls [PATH]            list a directory of the tree\n"
		"  get PATH             print an attribute\n"
		"  set PATH [VALUE]     write an attribute (fire a fault; some "
		"take no value)\n"
		"  stat EXPORT          the /sys/block/X/stat fields, by name\n"
		"  metrics              Prometheus text metrics\n"
		"  trace start DIR      write blktrace files into DIR, under the "
		"server's\n"
		"                       trace directory\n"
		"  trace stop\n"
		"  watch [-i SECONDS] [EXPORT|GLOB] [COUNT]\n"
		"                       iostat-like rates with a timestamp every "
		"SECONDS\n"
		"                       (default 1), of the exports matching GLOB "
		"(default\n"
		"                       all), COUNT times (a positive number; "
		"none: until\n"
		"                       interrupted)\n"
		"--json (also accepted after ls, get, stat, metrics and watch) "
		"prints JSON;\n"
		"watch prints one JSON object per line and round.\n"
		"Exit status: 0 success; 1 the server refused the request (its "
		"message is\n"
		"on stderr) or no export matched; 2 usage error, no connection or "
		"a broken\n"
		"answer.\n");
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
	(void)arg;
	puts(line);
}

/* ---- collecting answers ---------------------------------------------- */

struct lines {
	char **v;
	size_t n, cap;
	bool oom;
};

static void add_line(const char *line, void *arg)
{
	struct lines *l = arg;
	char *dup;

	if (l->oom)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->oom = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	dup = strdup(line);
	if (!dup) {
		l->oom = true;
		return;
	}
	l->v[l->n++] = dup;
}

static void free_lines(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* request() into l; an allocation failure is a local error (2). */
static int collect(struct conn *c, const char *req, struct lines *l)
{
	int rc = request(c, req, add_line, l);

	if (!rc && l->oom) {
		fprintf(stderr, "mqblkctl: out of memory\n");
		rc = EXIT_USAGE;
	}
	return rc;
}

/* ---- JSON helpers ------------------------------------------------------ */

/* Add val under key (obj) or at the end (array); false on any failure. */
static bool jset(struct json_object *obj, const char *key,
		 struct json_object *val)
{
	if (!obj || !val) {
		json_object_put(val);
		return false;
	}
	if (json_object_object_add(obj, key, val)) {
		json_object_put(val);
		return false;
	}
	return true;
}

static bool jpush(struct json_object *arr, struct json_object *val)
{
	if (!arr || !val) {
		json_object_put(val);
		return false;
	}
	if (json_object_array_add(arr, val)) {
		json_object_put(val);
		return false;
	}
	return true;
}

static struct json_object *jdouble(double d)
{
	/* JSON has no infinities or NaN: those go as strings. */
	if (!isfinite(d))
		return json_object_new_string(isnan(d) ? "NaN"
					      : d > 0  ? "+Inf"
						       : "-Inf");
	return json_object_new_double(d);
}

/* Print and free a document; 0, or 2 when it could not be built. */
static int jprint(struct json_object *doc, bool ok, int flags)
{
	const char *s =
		ok && doc ? json_object_to_json_string_ext(
				    doc, flags | JSON_C_TO_STRING_NOSLASHESCAPE)
			  : NULL;

	if (!s) {
		fprintf(stderr, "mqblkctl: out of memory building JSON\n");
		json_object_put(doc);
		return EXIT_USAGE;
	}
	puts(s);
	json_object_put(doc);
	return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
}

/* ---- ls, get ------------------------------------------------------------ */

static int cmd_ls(struct conn *c, const char *req, const char *path, bool json)
{
	struct lines l = {0};
	struct json_object *doc, *arr;
	bool ok;
	size_t i;
	int rc = collect(c, req, &l);

	if (rc || !json) {
		for (i = 0; !rc && i < l.n; i++)
			puts(l.v[i]);
		free_lines(&l);
		return rc;
	}
	doc = json_object_new_object();
	arr = json_object_new_array();
	ok = jset(doc, "path", json_object_new_string(path));
	ok = jset(doc, "entries", arr) && ok;
	for (i = 0; ok && i < l.n; i++) {
		size_t len = strlen(l.v[i]);
		bool dir = len && l.v[i][len - 1] == '/';
		struct json_object *e = json_object_new_object();

		ok = jpush(arr, e);
		ok = ok &&
		     jset(e, "name",
			  json_object_new_string_len(l.v[i], (int)len - dir));
		ok = ok && jset(e, "type",
				json_object_new_string(dir ? "directory"
							   : "attribute"));
	}
	free_lines(&l);
	return jprint(doc, ok, JSON_C_TO_STRING_PRETTY);
}

static int cmd_get(struct conn *c, const char *req, const char *path, bool json)
{
	struct lines l = {0};
	struct json_object *doc;
	char *value;
	size_t i, len = 0;
	bool ok;
	int rc = collect(c, req, &l);

	if (rc || !json) {
		for (i = 0; !rc && i < l.n; i++)
			puts(l.v[i]);
		free_lines(&l);
		return rc;
	}
	/* A value of several lines (zones) is joined with newlines. */
	for (i = 0; i < l.n; i++)
		len += strlen(l.v[i]) + 1;
	value = malloc(len + 1);
	if (!value) {
		free_lines(&l);
		fprintf(stderr, "mqblkctl: out of memory\n");
		return EXIT_USAGE;
	}
	value[0] = '\0';
	for (i = 0, len = 0; i < l.n; i++)
		len += sprintf(value + len, "%s%s", i ? "\n" : "", l.v[i]);
	doc = json_object_new_object();
	ok = jset(doc, "path", json_object_new_string(path));
	ok = jset(doc, "value", json_object_new_string(value)) && ok;
	free(value);
	free_lines(&l);
	return jprint(doc, ok, JSON_C_TO_STRING_PRETTY);
}

/* ---- stat ------------------------------------------------------------- */

/* Documentation/block/stat.rst, in its order; the ticks are in ms. */
static const char *const stat_names[17] = {
	"read_ios",	  "read_merges",     "read_sectors",  "read_ticks",
	"write_ios",	  "write_merges",    "write_sectors", "write_ticks",
	"in_flight",	  "io_ticks",	     "time_in_queue", "discard_ios",
	"discard_merges", "discard_sectors", "discard_ticks", "flush_ios",
	"flush_ticks",
};

struct disk_stat {
	unsigned long long f[17];
	bool valid;
};

static void parse_stat(const char *line, void *arg)
{
	struct disk_stat *st = arg;
	int end = 0;

	st->valid =
		sscanf(line,
		       "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		       "%llu %llu %llu %llu %llu %llu %llu %n",
		       &st->f[0], &st->f[1], &st->f[2], &st->f[3], &st->f[4],
		       &st->f[5], &st->f[6], &st->f[7], &st->f[8], &st->f[9],
		       &st->f[10], &st->f[11], &st->f[12], &st->f[13],
		       &st->f[14], &st->f[15], &st->f[16], &end) == 17 &&
		!line[end];
}

/* get EXPORT/stat; 0 with st filled, else the exit code (reported). */
static int read_stat(struct conn *c, const char *export, struct disk_stat *st)
{
	char req[300];
	int rc;

	if (snprintf(req, sizeof(req), "get %s/stat", export) >=
	    (int)sizeof(req)) {
		fprintf(stderr, "mqblkctl: %s: name too long\n", export);
		return EXIT_USAGE;
	}
	st->valid = false;
	rc = request(c, req, parse_stat, st);
	if (!rc && !st->valid) {
		fprintf(stderr,
			"mqblkctl: %s/stat: not the 17 fields of a "
			"disk's stat\n",
			export);
		rc = EXIT_USAGE;
	}
	return rc;
}

static int cmd_stat(struct conn *c, const char *export, bool json)
{
	struct disk_stat st;
	struct json_object *doc;
	unsigned int i;
	bool ok;
	int rc = read_stat(c, export, &st);

	if (rc)
		return rc;
	if (!json) {
		for (i = 0; i < 17; i++)
			printf("%-16s %llu\n", stat_names[i], st.f[i]);
		return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
	}
	doc = json_object_new_object();
	ok = jset(doc, "export", json_object_new_string(export));
	for (i = 0; ok && i < 17; i++)
		ok = jset(doc, stat_names[i], json_object_new_uint64(st.f[i]));
	return jprint(doc, ok, JSON_C_TO_STRING_PRETTY);
}

/* ---- metrics ------------------------------------------------------------ */

static bool metric_name_char(char ch, bool first)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       ch == '_' || ch == ':' || (!first && ch >= '0' && ch <= '9');
}

/*
 * One sample line of the text format, "name{k="v",...} value [ts]", into
 * an object {name, labels, value}; NULL when it is not one.
 */
static struct json_object *parse_sample(const char *p)
{
	struct json_object *o = json_object_new_object(), *labels;
	const char *start = p;
	char *buf = NULL, *end;
	bool ok = o != NULL;
	double v;

	if (!metric_name_char(*p, true))
		goto bad;
	while (metric_name_char(*p, false))
		p++;
	ok = jset(o, "name", json_object_new_string_len(start, p - start));
	labels = json_object_new_object();
	ok = jset(o, "labels", labels) && ok;
	if (!ok)
		goto bad;
	buf = malloc(strlen(p) + 1);
	if (!buf)
		goto bad;
	if (*p == '{') {
		p++;
		while (*p != '}') {
			char key[128];
			size_t k = 0, n = 0;

			if (!metric_name_char(*p, true))
				goto bad;
			while (metric_name_char(*p, false) &&
			       k < sizeof(key) - 1)
				key[k++] = *p++;
			key[k] = '\0';
			if (p[0] != '=' || p[1] != '"')
				goto bad;
			for (p += 2; *p != '"'; p++) {
				if (!*p)
					goto bad;
				if (*p == '\\') {
					p++;
					if (*p == 'n')
						buf[n++] = '\n';
					else if (*p == '\\' || *p == '"')
						buf[n++] = *p;
					else
						goto bad;
				} else {
					buf[n++] = *p;
				}
			}
			p++;
			if (!jset(labels, key,
				  json_object_new_string_len(buf, (int)n)))
				goto bad;
			if (*p == ',')
				p++;
			else if (*p != '}')
				goto bad;
		}
		p++;
	}
	if (*p != ' ')
		goto bad;
	errno = 0;
	v = strtod(p, &end);
	if (end == p || errno == ERANGE || (*end && *end != ' '))
		goto bad;
	if (!jset(o, "value", jdouble(v)))
		goto bad;
	free(buf);
	return o;
bad:
	free(buf);
	json_object_put(o);
	return NULL;
}

static int cmd_metrics(struct conn *c, bool json)
{
	struct lines l = {0};
	struct json_object *doc, *arr;
	char family[256] = "", type[32] = "untyped";
	bool ok;
	size_t i;
	int rc = collect(c, "metrics", &l);

	if (rc || !json) {
		for (i = 0; !rc && i < l.n; i++)
			puts(l.v[i]);
		free_lines(&l);
		return rc;
	}
	doc = json_object_new_object();
	arr = json_object_new_array();
	ok = jset(doc, "metrics", arr);
	for (i = 0; ok && i < l.n; i++) {
		const char *line = l.v[i];
		struct json_object *o;
		size_t flen;

		if (line[0] == '#') {
			char f[256], t[32];

			if (sscanf(line, "# TYPE %255s %31s", f, t) == 2) {
				strcpy(family, f);
				strcpy(type, t);
			}
			continue;
		}
		if (!line[0])
			continue;
		o = parse_sample(line);
		if (!o) {
			fprintf(stderr, "mqblkctl: bad metrics line: %s\n",
				line);
			free_lines(&l);
			json_object_put(doc);
			return EXIT_USAGE;
		}
		/* X_bucket, X_sum, X_count belong to the family X. */
		flen = strlen(family);
		if (flen && !strncmp(line, family, flen)) {
			ok = jset(o, "family", json_object_new_string(family));
			ok = ok &&
			     jset(o, "type", json_object_new_string(type));
		} else {
			ok = jset(o, "type", json_object_new_string("untyped"));
		}
		ok = jpush(arr, o) && ok;
	}
	free_lines(&l);
	return jprint(doc, ok, JSON_C_TO_STRING_PRETTY);
}

/* ---- watch -------------------------------------------------------- */

#define WATCH_MAX 64

struct names {
	char name[WATCH_MAX][256];
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
 * The exports under dir ("" the top) whose names match pattern (NULL:
 * all): a directory with a stat leaf is an export ("ide/hda" lives under
 * "ide/").
 */
static int find_exports(struct conn *c, const char *dir, unsigned int depth,
			const char *pattern, struct names *nm)
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
			if (nm->n < WATCH_MAX &&
			    (!pattern || !fnmatch(pattern, dir, 0)))
				snprintf(nm->name[nm->n++], 256, "%s", dir);
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
		rc = find_exports(c, sub, depth + 1, pattern, nm);
		if (rc)
			return rc;
	}
	return 0;
}

static double per_io(unsigned long long dt, unsigned long long dn)
{
	return dn ? (double)dt / dn : 0.0;
}

struct watch_args {
	double interval; /* seconds */
	long count;	 /* rounds; 0: until interrupted */
	const char *pattern;
	bool json;
};

/* The rates of one export over ms milliseconds. */
struct rates {
	double r_s, w_s, rkb_s, wkb_s, r_await, w_await, aqu_sz, util;
};

static void rates_of(const unsigned long long *a, const unsigned long long *b,
		     double ms, struct rates *r)
{
	double s = ms / 1000.0;

	r->r_s = (b[0] - a[0]) / s;
	r->w_s = (b[4] - a[4]) / s;
	r->rkb_s = (b[2] - a[2]) / 2.0 / s;
	r->wkb_s = (b[6] - a[6]) / 2.0 / s;
	r->r_await = per_io(b[3] - a[3], b[0] - a[0]);
	r->w_await = per_io(b[7] - a[7], b[4] - a[4]);
	r->aqu_sz = (b[10] - a[10]) / ms;
	r->util = (b[9] - a[9]) * 100.0 / ms;
}

static int watch_print_json(const struct names *nm,
			    const struct disk_stat *prev,
			    const struct disk_stat *cur, double ms,
			    const struct timespec *now)
{
	struct json_object *doc = json_object_new_object(), *arr;
	char stamp[64];
	struct tm tm;
	unsigned int i;
	bool ok;

	if (!gmtime_r(&now->tv_sec, &tm) ||
	    !strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm))
		stamp[0] = '\0';
	ok = jset(doc, "time", json_object_new_string(stamp));
	ok = ok &&
	     jset(doc, "timestamp",
		  json_object_new_double(now->tv_sec + now->tv_nsec / 1e9));
	ok = ok && jset(doc, "interval", json_object_new_double(ms / 1000.0));
	arr = json_object_new_array();
	ok = jset(doc, "exports", arr) && ok;
	for (i = 0; ok && i < nm->n; i++) {
		struct json_object *e = json_object_new_object();
		struct rates r;

		rates_of(prev[i].f, cur[i].f, ms, &r);
		ok = jpush(arr, e);
		ok = ok &&
		     jset(e, "export", json_object_new_string(nm->name[i]));
		ok = ok &&
		     jset(e, "reads_per_s", json_object_new_double(r.r_s));
		ok = ok &&
		     jset(e, "writes_per_s", json_object_new_double(r.w_s));
		ok = ok &&
		     jset(e, "read_kB_per_s", json_object_new_double(r.rkb_s));
		ok = ok &&
		     jset(e, "write_kB_per_s", json_object_new_double(r.wkb_s));
		ok = ok &&
		     jset(e, "r_await_ms", json_object_new_double(r.r_await));
		ok = ok &&
		     jset(e, "w_await_ms", json_object_new_double(r.w_await));
		ok = ok && jset(e, "aqu_sz", json_object_new_double(r.aqu_sz));
		ok = ok &&
		     jset(e, "util_percent", json_object_new_double(r.util));
	}
	return jprint(doc, ok, JSON_C_TO_STRING_PLAIN);
}

static void watch_print_text(const struct names *nm,
			     const struct disk_stat *prev,
			     const struct disk_stat *cur, double ms,
			     const struct timespec *now)
{
	char stamp[16];
	struct tm tm;
	unsigned int i;

	if (!localtime_r(&now->tv_sec, &tm) ||
	    !strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm))
		strcpy(stamp, "-");
	printf("%-8s %-12s %9s %9s %10s %10s %8s %8s %7s %6s\n", "time",
	       "export", "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await",
	       "aqu-sz", "%util");
	for (i = 0; i < nm->n; i++) {
		struct rates r;

		rates_of(prev[i].f, cur[i].f, ms, &r);
		printf("%-8s %-12s %9.1f %9.1f %10.1f %10.1f %8.2f %8.2f %7.2f %6.1f\n",
		       stamp, nm->name[i], r.r_s, r.w_s, r.rkb_s, r.wkb_s,
		       r.r_await, r.w_await, r.aqu_sz, r.util);
	}
	fflush(stdout);
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static int watch(struct conn *c, const struct watch_args *wa)
{
	static struct disk_stat prev[WATCH_MAX], cur[WATCH_MAX];
	struct names nm = {.n = 0};
	struct timespec next, now;
	double t_prev = 0, t_cur;
	unsigned int i;
	long round;
	int rc;

	rc = find_exports(c, "", 0, wa->pattern, &nm);
	if (rc)
		return rc;
	if (!nm.n) {
		fprintf(stderr, "mqblkctl: watch: no export matches '%s'\n",
			wa->pattern ? wa->pattern : "*");
		return EXIT_REFUSED;
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (round = 0; wa->count <= 0 || round <= wa->count; round++) {
		for (i = 0; i < nm.n; i++) {
			rc = read_stat(c, nm.name[i], &cur[i]);
			if (rc)
				return rc;
		}
		t_cur = mono_ms();
		clock_gettime(CLOCK_REALTIME, &now);
		if (round > 0 && t_cur > t_prev) {
			if (wa->json) {
				rc = watch_print_json(&nm, prev, cur,
						      t_cur - t_prev, &now);
				if (rc)
					return rc;
			} else {
				watch_print_text(&nm, prev, cur, t_cur - t_prev,
						 &now);
			}
		}
		memcpy(prev, cur, sizeof(prev));
		t_prev = t_cur;
		if (wa->count > 0 && round == wa->count)
			break;
		/* Absolute deadlines: the rounds do not drift. */
		next.tv_sec += (time_t)wa->interval;
		next.tv_nsec +=
			(long)((wa->interval - (time_t)wa->interval) * 1e9);
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
				       NULL) == EINTR)
			;
	}
	return 0;
}

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

/*
 * watch's arguments: -i SECONDS (a number above 0, at most a day), at
 * most one EXPORT or GLOB and at most one COUNT, a whole number of at
 * least 1.
 */
static int parse_watch(int argc, char **argv, struct watch_args *wa)
{
	char *end;
	int i;

	wa->interval = 1.0;
	wa->count = 0;
	wa->pattern = NULL;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-i") || !strcmp(a, "--interval")) {
			if (++i == argc)
				goto bad_interval;
			errno = 0;
			wa->interval = strtod(argv[i], &end);
			if (errno || end == argv[i] || *end ||
			    !(wa->interval >= 0.001 && wa->interval <= 86400))
				goto bad_interval;
		} else if (all_digits(a)) {
			if (wa->count)
				goto bad_count;
			errno = 0;
			wa->count = strtol(a, &end, 10);
			if (errno || wa->count < 1)
				goto bad_count;
		} else if (a[0] == '-') {
			goto bad_count;
		} else {
			if (wa->pattern) {
				fprintf(stderr, "mqblkctl: watch: one EXPORT "
						"or GLOB at most\n");
				return -1;
			}
			wa->pattern = a;
		}
	}
	return 0;
bad_interval:
	fprintf(stderr, "mqblkctl: watch -i SECONDS: a number of seconds "
			"above 0, at most 86400\n");
	return -1;
bad_count:
	fprintf(stderr, "mqblkctl: watch [-i SECONDS] [EXPORT|GLOB] [COUNT]: "
			"COUNT is a number of rounds, at least 1\n");
	return -1;
}

/* ---- main ------------------------------------------------------------- */

/* Drop "--json"/"-j" from a JSON-capable command's arguments. */
static int take_json(int argc, char **argv, bool *json)
{
	int i, n = 0;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			*json = true;
		else
			argv[n++] = argv[i];
	}
	return n;
}

/* The commands mqblkctl knows; anything else is a usage error. */
static bool known_command(const char *cmd)
{
	static const char *const cmds[] = {
		"ls", "get", "set", "stat", "metrics", "trace", "watch",
	};
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmd, cmds[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const char *sock = getenv("MQBLK_CONTROL");
	struct watch_args wa = {.interval = 1.0};
	char req[4096];
	const char *cmd;
	struct conn c;
	size_t used = 0;
	bool json = false;
	int opt, i, rc, nargs;
	char **args;

	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};

	while ((opt = getopt_long(argc, argv, "+s:jhV", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("mqblkctl %s\n", MQBLK_VERSION);
			return EXIT_OK;
		default:
			/* getopt said what is wrong, in one line. */
			fprintf(stderr, "Try 'mqblkctl --help'.\n");
			return EXIT_USAGE;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (!sock || !*sock)
		sock = MQBLK_CONTROL_DEFAULT;
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	args = argv + optind + 1;
	nargs = argc - optind - 1;
	if (!known_command(cmd)) {
		fprintf(stderr,
			"mqblkctl: %s: no such command (ls, get, set, stat, "
			"metrics, trace, watch); try 'mqblkctl --help'\n",
			cmd);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "ls") || !strcmp(cmd, "get") || !strcmp(cmd, "stat") ||
	    !strcmp(cmd, "metrics") || !strcmp(cmd, "watch"))
		nargs = take_json(nargs, args, &json);
	if (!strcmp(cmd, "watch") && parse_watch(nargs, args, &wa))
		return EXIT_USAGE;
	wa.json = json;
	if ((!strcmp(cmd, "stat") || !strcmp(cmd, "get")) && nargs != 1) {
		fprintf(stderr, "mqblkctl: %s takes one %s\n", cmd,
			!strcmp(cmd, "stat") ? "EXPORT" : "PATH");
		return EXIT_USAGE;
	}
	if ((!strcmp(cmd, "ls") && nargs > 1) ||
	    (!strcmp(cmd, "metrics") && nargs)) {
		fprintf(stderr, "mqblkctl: %s: too many arguments\n", cmd);
		return EXIT_USAGE;
	}
	/*
	 * "ls null/" is "ls null", and "ls /" the top: what a shell's
	 * completion of a directory gives.
	 */
	if (!strcmp(cmd, "ls") && nargs) {
		size_t len = strlen(args[0]);

		while (len && args[0][len - 1] == '/')
			args[0][--len] = '\0';
		if (!len)
			nargs = 0;
	}
	req[0] = '\0';
	for (i = -1; i < nargs; i++) {
		const char *w = i < 0 ? cmd : args[i];
		int n = snprintf(req + used, sizeof(req) - used, "%s%s",
				 i >= 0 ? " " : "", w);

		if (n < 0 || (size_t)n >= sizeof(req) - used ||
		    strchr(w, '\n')) {
			fprintf(stderr, "mqblkctl: request too long\n");
			return EXIT_USAGE;
		}
		used += n;
	}
	c.fd = connect_to(sock);
	if (c.fd < 0)
		return EXIT_USAGE;
	c.in = fdopen(dup(c.fd), "r");
	if (!c.in) {
		fprintf(stderr, "mqblkctl: fdopen: %s\n", strerror(errno));
		close(c.fd);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "watch"))
		rc = watch(&c, &wa);
	else if (!strcmp(cmd, "ls"))
		rc = cmd_ls(&c, req, nargs ? args[0] : "", json);
	else if (!strcmp(cmd, "get"))
		rc = cmd_get(&c, req, args[0], json);
	else if (!strcmp(cmd, "stat"))
		rc = cmd_stat(&c, args[0], json);
	else if (!strcmp(cmd, "metrics"))
		rc = cmd_metrics(&c, json);
	else
		rc = request(&c, req, print_line, NULL);
	fclose(c.in);
	close(c.fd);
	return rc;
}
