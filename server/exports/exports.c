// SPDX-License-Identifier: GPL-2.0
/*
 * The export table, built once at start-up and read-only afterwards,
 * the same for every front end (mqblkd, mqblk-ublk).
 *
 *   PROG ram size=1G        one device; each of its disks is an export
 *                           named after the disk, the first is the default
 *   PROG -c FILE            one INI section per export: the section name
 *                           is the export name, device= and the keys
 *                           follow; a device with several disks gives
 *                           SECTION/DISK exports
 *   PROG --demo             one small RAM-backed export per device model
 *                           that can be made without an image
 *
 * A disk whose name another export's disk has (two null sections both
 * make nullb0) is renamed nullb1, as the kernel would number it.
 *
 * Devices get cfg->nr_ctx software queues: one per submitting thread
 * (mqblkd's event loops, mqblk-ublk's queue threads).
 */
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exports.h"

/*
 * One start-up error line on stderr.  Names and values come from the
 * command line or the file, which may hold any byte: escaped.
 */
size_t mq_escape(char *out, size_t outlen, const char *in, size_t inlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i;

	if (!outlen)
		return 0;
	for (i = 0; i < inlen; i++) {
		unsigned char ch = (unsigned char)in[i];
		char tmp[4];
		size_t n;

		if (ch == '\\') {
			tmp[0] = tmp[1] = '\\';
			n = 2;
		} else if (ch < 0x20 || ch == 0x7f) {
			tmp[0] = '\\';
			tmp[1] = 'x';
			tmp[2] = hex[ch >> 4];
			tmp[3] = hex[ch & 15];
			n = 4;
		} else {
			tmp[0] = (char)ch;
			n = 1;
		}
		if (o + n >= outlen)
			break;
		memcpy(out + o, tmp, n);
		o += n;
	}
	out[o] = '\0';
	return o;
}

static void __attribute__((format(printf, 2, 3)))
cfg_line(void (*out)(const char *line), const char *fmt, ...)
{
	char msg[MQ_EXPORT_NAME_MAX + 1024], safe[4 * sizeof(msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mq_escape(safe, sizeof(safe), msg, strlen(msg));
	out(safe);
}

#define cfg_err(...) cfg_line(cfg->err, __VA_ARGS__)

static int add_device(struct mq_exports *ex, struct mq_device *dev)
{
	struct mq_device **d;

	d = realloc(ex->devs, (ex->nr_devs + 1) * sizeof(*d));
	if (!d)
		return -1;
	ex->devs = d;
	ex->devs[ex->nr_devs++] = dev;
	return 0;
}

static int add_export(const struct mq_exports_cfg *cfg, struct mq_exports *ex,
		      const char *name, struct gendisk *disk, bool readonly)
{
	struct mq_export *v, *e;
	unsigned int i;

	for (i = 0; i < ex->nr; i++) {
		if (!strcmp(ex->v[i].name, name)) {
			cfg_err("export '%s' defined twice", name);
			return -1;
		}
	}
	if (strlen(name) > MQ_EXPORT_NAME_MAX) {
		cfg_err("export name '%.40s...' is longer "
			"than 4096 bytes",
			name);
		return -1;
	}
	v = realloc(ex->v, (ex->nr + 1) * sizeof(*v));
	if (!v)
		goto oom;
	ex->v = v;
	e = &ex->v[ex->nr];
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name)
		goto oom;
	e->disk = disk;
	e->readonly = readonly || disk->read_only;
	mq_disk_describe(disk, e->description, sizeof(e->description));
	ex->nr++;
	return 0;
oom:
	cfg_err("out of memory");
	return -1;
}

/* Whether another disk, of an export or of dev, is called name. */
static bool disk_name_taken(const struct mq_exports *ex,
			    const struct mq_device *dev,
			    const struct gendisk *self, const char *name)
{
	unsigned int i;

	for (i = 0; i < ex->nr; i++)
		if (!strcmp(ex->v[i].disk->disk_name, name))
			return true;
	for (i = 0; i < dev->nr_disks; i++)
		if (dev->disks[i] != self &&
		    !strcmp(dev->disks[i]->disk_name, name))
			return true;
	return false;
}

/*
 * Every disk of the server gets a name of its own, as the kernel numbers
 * a second null_blk disk nullb1: a taken name ending in a number counts
 * on (nullb0, nullb1...), one ending in a letter steps it (hda, hdb...),
 * else a number is added.  The export names stay as asked.
 */
static int unique_disk_name(const struct mq_exports_cfg *cfg,
			    const struct mq_exports *ex, struct mq_device *dev,
			    struct gendisk *disk)
{
	char name[MQ_NAME_MAX + 24], stem[MQ_NAME_MAX];
	size_t len = strlen(disk->disk_name), digits = 0;
	unsigned long n = 0;
	unsigned int tries;

	if (!disk_name_taken(ex, dev, disk, disk->disk_name))
		return 0;
	while (digits < len && disk->disk_name[len - 1 - digits] >= '0' &&
	       disk->disk_name[len - 1 - digits] <= '9')
		digits++;
	snprintf(stem, sizeof(stem), "%.*s", (int)(len - digits),
		 disk->disk_name);
	if (digits)
		n = strtoul(disk->disk_name + len - digits, NULL, 10);
	snprintf(name, sizeof(name), "%s", disk->disk_name);
	for (tries = 0; tries < 100000; tries++) {
		size_t sl = strlen(stem), nl;

		if (digits || !sl || stem[sl - 1] < 'a' ||
		    stem[sl - 1] >= 'z') {
			if (!digits) {
				digits = 1;
				n = 0;
			}
			snprintf(name, sizeof(name), "%s%lu", stem, ++n);
		} else {
			stem[sl - 1]++;
			snprintf(name, sizeof(name), "%s", stem);
		}
		nl = strlen(name);
		if (nl < sizeof(disk->disk_name) &&
		    nl < sizeof(disk->queue->name) &&
		    !disk_name_taken(ex, dev, disk, name)) {
			memcpy(disk->disk_name, name, nl + 1);
			memcpy(disk->queue->name, name, nl + 1);
			return 0;
		}
	}
	cfg_err("%s: no free disk name", disk->disk_name);
	return -1;
}

/*
 * PREFIX/DISK, or the disk's name alone without a prefix or when the
 * name starts with PREFIX/ already ("sx8/port0" in the demo's "sx8").
 */
static void export_name(char *buf, size_t len, const char *prefix,
			const struct gendisk *disk)
{
	size_t n = prefix ? strlen(prefix) : 0;

	if (!prefix ||
	    (!strncmp(disk->disk_name, prefix, n) && disk->disk_name[n] == '/'))
		snprintf(buf, len, "%s", disk->disk_name);
	else
		snprintf(buf, len, "%s/%s", prefix, disk->disk_name);
}

static int add_internal(const struct mq_exports_cfg *cfg, struct mq_exports *ex,
			const char *name, struct gendisk *disk)
{
	struct mq_export_internal *v;

	v = realloc(ex->internal, (ex->nr_internal + 1) * sizeof(*v));
	if (!v) {
		cfg_err("out of memory");
		return -1;
	}
	ex->internal = v;
	v[ex->nr_internal].disk = disk;
	v[ex->nr_internal].name = strdup(name);
	if (!v[ex->nr_internal].name) {
		cfg_err("out of memory");
		return -1;
	}
	ex->nr_internal++;
	return 0;
}

/*
 * Make a device; prefix names its exports (NULL: the disk names).  where
 * says what to name in the error line.
 */
static int make_device(const struct mq_exports_cfg *cfg, struct mq_exports *ex,
		       struct mq_params *p, const char *prefix,
		       const char *where, bool quiet)
{
	struct mq_device *dev;
	struct mq_err e;
	unsigned int i;

	if (mq_device_create(p, cfg->nr_ctx, &dev, &e)) {
		if (!quiet)
			cfg_err("%s%s%s", where ? where : "", where ? ": " : "",
				e.msg);
		return -1;
	}
	if (add_device(ex, dev)) {
		mq_device_destroy(dev);
		cfg_err("out of memory");
		return -1;
	}
	if (!dev->nr_disks) {
		cfg_err("%s%s%s: the device offers no disk", where ? where : "",
			where ? ": " : "", dev->driver->name);
		return -1;
	}
	for (i = 0; i < dev->nr_disks; i++) {
		struct gendisk *disk = dev->disks[i];
		char name[MQ_EXPORT_NAME_MAX + MQ_NAME_MAX + 2];

		if (unique_disk_name(cfg, ex, dev, disk))
			return -1;
		if (prefix && dev->nr_disks == 1)
			snprintf(name, sizeof(name), "%s", prefix);
		else
			export_name(name, sizeof(name), prefix, disk);
		if (add_export(cfg, ex, name, disk, cfg->readonly))
			return -1;
		ex->v[ex->nr - 1].model = dev->driver->name;
	}
	for (i = 0; i < dev->nr_internal; i++) {
		char name[MQ_EXPORT_NAME_MAX + MQ_NAME_MAX + 2];

		export_name(name, sizeof(name), prefix, dev->internal[i]);
		if (add_internal(cfg, ex, name, dev->internal[i]))
			return -1;
	}
	return 0;
}

/*
 * The argument before args[i] that names the device too (DEVICE first,
 * or device=), or NULL.  Other keys may be given again, the last value
 * wins (a test or a wrapper adds to a command line); the device may not.
 */
static const char *device_given(const struct mq_exports_cfg *cfg, int i)
{
	int j;

	if (strncmp(cfg->args[i], "device=", 7))
		return NULL;
	for (j = 0; j < i; j++) {
		const char *b = cfg->args[j];

		if ((j == 0 && !strchr(b, '=')) || !strncmp(b, "device=", 7))
			return b;
	}
	return NULL;
}

/* DEVICE [KEY=VALUE...], or KEY=VALUE... with device= among them. */
static int build_from_args(const struct mq_exports_cfg *cfg,
			   struct mq_exports *ex)
{
	struct mq_params *p = mq_params_new();
	const char *prev;
	struct mq_err e;
	int i, r = -1;

	if (!p) {
		cfg_err("out of memory");
		return -1;
	}
	for (i = 0; i < cfg->nr_args; i++) {
		const char *a = cfg->args[i];

		if (i == 0 && !strchr(a, '='))
			r = mq_params_set(p, "device", a, &e);
		else if (!strchr(a, '='))
			r = mq_err_set(&e, "'%s' is not KEY=VALUE", a);
		else if ((prev = device_given(cfg, i)))
			r = mq_err_set(&e, "'%s' and '%s': the device twice",
				       prev, a);
		else
			r = mq_params_set_kv(p, a, &e);
		if (r) {
			cfg_err("%s", e.msg);
			goto out;
		}
	}
	r = make_device(cfg, ex, p, NULL, NULL, false);
out:
	mq_params_free(p);
	return r;
}

struct ini_key {
	char *name;
	int line;
};

struct ini_section {
	char *name;
	struct mq_params *p;
	int line; /* of its [header] */
	struct ini_key *keys;
	unsigned int nr_keys;
};

struct ini_state {
	struct ini_section *v;
	unsigned int nr;
	struct mq_err e;
	bool failed;
	/* the reader's view: which line inih is at, and its text */
	FILE *f;
	int line;
	bool at_line_start;
	char text[256];
	/* [headers] as the reader sees them, to find a repeated one */
	struct ini_key *headers;
	unsigned int nr_headers;
};

static int remember(struct ini_key **v, unsigned int *nr, const char *name,
		    int line)
{
	struct ini_key *k = realloc(*v, (*nr + 1) * sizeof(*k));

	if (!k)
		return -1;
	*v = k;
	k[*nr].name = strdup(name);
	if (!k[*nr].name)
		return -1;
	k[*nr].line = line;
	(*nr)++;
	return 0;
}

static const struct ini_key *lookup(const struct ini_key *v, unsigned int nr,
				    const char *name)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

static void forget(struct ini_key *v, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		free(v[i].name);
	free(v);
}

/*
 * A section header on this line: the name between '[' and ']', as inih
 * takes it.  A section named twice is an error naming both lines.
 */
static void reader_header(struct ini_state *st, const char *line)
{
	const struct ini_key *prev;
	const char *end;
	char name[sizeof(st->text)];

	while (*line == ' ' || *line == '\t')
		line++;
	if (*line != '[' || !(end = strchr(line, ']')))
		return;
	snprintf(name, sizeof(name), "%.*s", (int)(end - line - 1), line + 1);
	prev = lookup(st->headers, st->nr_headers, name);
	if (prev) {
		mq_err_set(&st->e, "section [%s] again (first on line %d)",
			   name, prev->line);
		st->failed = true;
	} else if (remember(&st->headers, &st->nr_headers, name, st->line)) {
		mq_err_set(&st->e, "out of memory");
		st->failed = true;
	}
}

/*
 * inih's reader: fgets, counting lines (a line longer than inih's
 * buffer comes in pieces), so that the handler knows its line.
 */
static char *ini_reader_fn(char *str, int num, void *stream)
{
	struct ini_state *st = stream;
	size_t n;

	if (st->failed || !fgets(str, num, st->f))
		return NULL;
	if (st->at_line_start) {
		st->line++;
		snprintf(st->text, sizeof(st->text), "%s", str);
		reader_header(st, str);
		if (st->failed)
			return NULL;
	}
	n = strlen(str);
	st->at_line_start = n && str[n - 1] == '\n';
	return str;
}

static struct ini_section *ini_find(struct ini_state *st, const char *name)
{
	struct ini_section *v;
	unsigned int i;

	for (i = 0; i < st->nr; i++)
		if (!strcmp(st->v[i].name, name))
			return &st->v[i];
	v = realloc(st->v, (st->nr + 1) * sizeof(*v));
	if (!v)
		return NULL;
	st->v = v;
	v = &st->v[st->nr];
	memset(v, 0, sizeof(*v));
	v->name = strdup(name);
	v->p = mq_params_new();
	v->line = st->line;
	if (!v->name || !v->p) {
		free(v->name);
		mq_params_free(v->p);
		return NULL;
	}
	st->nr++;
	return v;
}

static int ini_kv(void *user, const char *section, const char *name,
		  const char *value)
{
	struct ini_state *st = user;
	const struct ini_key *prev;
	struct ini_section *s;

	if (st->failed)
		return 0;
	if (!section[0]) {
		mq_err_set(&st->e, "key '%s' outside any [export] section",
			   name);
		st->failed = true;
		return 0;
	}
	s = ini_find(st, section);
	if (!s) {
		mq_err_set(&st->e, "out of memory");
		st->failed = true;
		return 0;
	}
	prev = lookup(s->keys, s->nr_keys, name);
	if (prev) {
		/* inih passes an indented line on as more of the key before */
		if (st->text[0] == ' ' || st->text[0] == '\t')
			mq_err_set(&st->e,
				   "an indented line continues '%s' (line "
				   "%d); values take one line",
				   name, prev->line);
		else
			mq_err_set(&st->e,
				   "key '%s' again in [%s] (first on line %d)",
				   name, section, prev->line);
		st->failed = true;
		return 0;
	}
	if (remember(&s->keys, &s->nr_keys, name, st->line)) {
		mq_err_set(&st->e, "out of memory");
		st->failed = true;
		return 0;
	}
	if (mq_params_set(s->p, name, value, &st->e)) {
		st->failed = true;
		return 0;
	}
	return 1;
}

static int build_from_ini(const struct mq_exports_cfg *cfg,
			  struct mq_exports *ex)
{
	struct ini_state st = {.at_line_start = true};
	unsigned int i;
	int r;

	st.f = fopen(cfg->config_file, "r");
	if (!st.f) {
		cfg_err("%s: cannot open: %s", cfg->config_file,
			strerror(errno));
		return -1;
	}
	r = ini_parse_stream(ini_reader_fn, &st, ini_kv, &st);
	fclose(st.f);
	if (st.failed) {
		cfg_err("%s: line %d: %s", cfg->config_file, st.line, st.e.msg);
		r = -1;
	} else if (r) {
		cfg_err("%s: line %d: syntax error", cfg->config_file, r);
		r = -1;
	} else if (!st.nr) {
		cfg_err("%s: no [export] section", cfg->config_file);
		r = -1;
	}
	for (i = 0; !r && i < st.nr; i++) {
		char where[MQ_EXPORT_NAME_MAX + 64];

		snprintf(where, sizeof(where), "%s: [%s]", cfg->config_file,
			 st.v[i].name);
		r = make_device(cfg, ex, st.v[i].p, st.v[i].name, where, false);
	}
	for (i = 0; i < st.nr; i++) {
		free(st.v[i].name);
		mq_params_free(st.v[i].p);
		forget(st.v[i].keys, st.v[i].nr_keys);
	}
	free(st.v);
	forget(st.headers, st.nr_headers);
	return r;
}

/*
 * The demo rack.  Models known to need keys get them here (a model
 * with several hints is made once for each); "@DISC" is a
 * 4 MiB blank disc image made for the occasion (CD-ROM models cannot
 * start without one) and unlinked once the devices hold it open.  Every
 * other model is tried with a size, then bare; a model that fails both
 * (file= needs an image of the user's) is left out.
 */
/*
 * ide-disk and ide-cd are shorthands for a channel the "ide" entry already
 * shows; served too, they would be a second and third "hda".  mtdblock_ro
 * of a blank chip would be a second "mtdblock0", all 0xFF.
 */
static const char *const demo_skip[] = {"ide-disk", "ide-cd", "mtdblock_ro",
					NULL};

struct demo_hint {
	const char *driver;
	const char *keys[5];
	const char *export; /* NULL: the driver's name */
};

static const struct demo_hint demo_hints[] = {
	{"null", {"size=64M", "memory_backed=1"}},
	{"ide", {"hda.size=64M", "slave=cd", "hdb.image=@DISC"}},
	{"gdrom", {"image=@DISC"}},
	{"mspro", {"size=64M"}},
	/* flash: the ftl scans every page's OOB (tR each) at start */
	{"mtdblock", {"size=16M"}},
	{"ftl", {"size=16M"}},
	/* a Sun LDOM virtual disk and, on the next port, a virtual CD */
	{"sunvdc", {"size=64M"}, NULL},
	{"sunvdc", {"size=4M", "vdisk_mtype=cd", "dev_no=1"}, "sunvdc-cd"},
	{"smr", {"capacity=1G", "zone_size=64M"}},
	/*
	 * null_blk zoned (zone write plugging keeps each zone's order under
	 * bfq, which row 5 gives it)
	 */
	{"null",
	 {"size=64M", "memory_backed=1", "zoned=1", "zone_size=4",
	  "zone_nr_conv=1"},
	 "null-zoned"},
};

static const char *const demo_generic[][2] = {
	{"size=64M", NULL},
	{NULL},
};

#define DEMO_DISC_SIZE (4u << 20)

static int make_disc(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/mqblkd-demo-disc.XXXXXX",
		 dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, DEMO_DISC_SIZE)) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * One try: device=NAME and keys (NULL-terminated, at most 5), served as
 * export (NULL: NAME).
 */
static int demo_try(const struct mq_exports_cfg *cfg, struct mq_exports *ex,
		    const char *name, const char *const *keys, const char *disc,
		    const char *export)
{
	struct mq_params *p = mq_params_new();
	struct mq_err e;
	size_t k;
	int r;

	if (!p)
		return -1;
	r = mq_params_set(p, "device", name, &e);
	for (k = 0; !r && k < 5 && keys[k]; k++) {
		if (!strcmp(keys[k] + strcspn(keys[k], "="), "=@DISC")) {
			char key[64];

			if (!disc) {
				r = -1;
				break;
			}
			snprintf(key, sizeof(key), "%.*s",
				 (int)strcspn(keys[k], "="), keys[k]);
			r = mq_params_set(p, key, disc, &e);
		} else {
			r = mq_params_set_kv(p, keys[k], &e);
		}
	}
	if (!r)
		r = make_device(cfg, ex, p, export ? export : name, NULL, true);
	mq_params_free(p);
	return r;
}

static int build_demo(const struct mq_exports_cfg *cfg, struct mq_exports *ex)
{
	const struct mq_driver *const *d;
	char disc[4096];
	bool have_disc = !make_disc(disc, sizeof(disc));

	for (d = mq_drivers; *d; d++) {
		bool done = false;
		size_t t;

		for (t = 0; demo_skip[t]; t++)
			if (!strcmp(demo_skip[t], (*d)->name))
				done = true;
		if (done)
			continue;

		for (t = 0; t < sizeof(demo_hints) / sizeof(demo_hints[0]); t++)
			if (!strcmp(demo_hints[t].driver, (*d)->name))
				done |= !demo_try(cfg, ex, (*d)->name,
						  demo_hints[t].keys,
						  have_disc ? disc : NULL,
						  demo_hints[t].export);
		for (t = 0; !done &&
			    t < sizeof(demo_generic) / sizeof(demo_generic[0]);
		     t++)
			done = !demo_try(cfg, ex, (*d)->name, demo_generic[t],
					 NULL, NULL);
		if (!done)
			cfg_line(cfg->info,
				 "demo: %s left out (it needs an image or "
				 "keys of its own)",
				 (*d)->name);
	}
	if (have_disc)
		unlink(disc);
	if (!ex->nr) {
		cfg_err("--demo: no device model could be "
			"made");
		return -1;
	}
	return 0;
}

int mq_exports_build(const struct mq_exports_cfg *cfg, struct mq_exports *ex)
{
	int r;

	memset(ex, 0, sizeof(*ex));
	if (cfg->config_file)
		r = build_from_ini(cfg, ex);
	else if (cfg->nr_args)
		r = build_from_args(cfg, ex);
	else
		r = build_demo(cfg, ex);
	if (r)
		mq_exports_destroy(ex);
	return r;
}

void mq_exports_destroy(struct mq_exports *ex)
{
	unsigned int i;

	for (i = 0; i < ex->nr; i++)
		free(ex->v[i].name);
	free(ex->v);
	for (i = 0; i < ex->nr_internal; i++)
		free(ex->internal[i].name);
	free(ex->internal);
	for (i = 0; i < ex->nr_devs; i++)
		mq_device_destroy(ex->devs[i]);
	free(ex->devs);
	memset(ex, 0, sizeof(*ex));
}

int mq_exports_sync(struct mq_exports *ex, void (*err)(const char *line))
{
	unsigned int i;
	int r, first = 0;

	for (i = 0; i < ex->nr_devs; i++) {
		r = mq_device_sync(ex->devs[i]);
		if (r) {
			cfg_line(err, "%s: sync failed: %s",
				 ex->devs[i]->driver->name,
				 strerror(r < 0 ? -r : r));
			if (!first)
				first = r;
		}
	}
	return first;
}

const struct mq_export *mq_export_find(const struct mq_exports *ex,
				       const char *name, size_t len)
{
	unsigned int i;

	if (!len)
		return ex->nr ? &ex->v[0] : NULL;
	for (i = 0; i < ex->nr; i++)
		if (strlen(ex->v[i].name) == len &&
		    !memcmp(ex->v[i].name, name, len))
			return &ex->v[i];
	return NULL;
}

void mq_export_names(const struct mq_exports *ex, char *buf, size_t len)
{
	size_t off = 0;
	unsigned int i;

	if (!len)
		return;
	buf[0] = '\0';
	for (i = 0; i < ex->nr && off + 1 < len; i++) {
		int n = snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
				 ex->v[i].name);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}
