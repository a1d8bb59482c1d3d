// SPDX-License-Identifier: GPL-2.0
/*
 * The export table, the same for every front end (mqblkd, mqblk-ublk).
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
#include <sys/stat.h>
#include <unistd.h>

#include "exports.h"
#include "server/ctl/ctl.h"

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

/* One line through out (the front end escapes it on its way out). */
static void __attribute__((format(printf, 2, 3)))
cfg_line(void (*out)(const char *line), const char *fmt, ...)
{
	char msg[MQ_EXPORT_NAME_MAX + 1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	out(msg);
}

/* A table under construction. */
struct build {
	const struct mq_exports_cfg *cfg;
	struct mq_exports *ex;
};

#define cfg_err(...) cfg_line(b->cfg->err, __VA_ARGS__)

void mq_export_dev_free(struct mq_export_dev *d)
{
	unsigned int i;

	for (i = 0; i < d->nr; i++)
		free(d->v[i].name);
	free(d->v);
	for (i = 0; i < d->nr_internal; i++)
		free(d->internal[i].name);
	free(d->internal);
	for (i = 0; i < d->nr_kv; i++) {
		free(d->kv[i].key);
		free(d->kv[i].value);
	}
	free(d->kv);
	free(d->section);
	if (d->dev)
		mq_device_destroy(d->dev);
	free(d);
}

int mq_exports_add(struct mq_exports *ex, struct mq_export_dev *d,
		   void (*err)(const char *line))
{
	struct mq_export **v;
	struct mq_export_dev **devs;
	unsigned int i, j;

	for (i = 0; i < d->nr; i++)
		for (j = 0; j < ex->nr; j++)
			if (!strcmp(ex->v[j]->name, d->v[i].name)) {
				cfg_line(err, "export '%s' defined twice",
					 d->v[i].name);
				return -1;
			}
	v = realloc(ex->v, (ex->nr + d->nr) * sizeof(*v));
	if (!v)
		goto oom;
	ex->v = v;
	devs = realloc(ex->devs, (ex->nr_devs + 1) * sizeof(*devs));
	if (!devs)
		goto oom;
	ex->devs = devs;
	for (i = 0; i < d->nr; i++)
		ex->v[ex->nr++] = &d->v[i];
	ex->devs[ex->nr_devs++] = d;
	return 0;
oom:
	cfg_line(err, "out of memory");
	return -1;
}

static bool disks_have(const struct mq_exports *ex, const char *name)
{
	unsigned int i;

	for (i = 0; ex && i < ex->nr; i++)
		if (!strcmp(ex->v[i]->disk->disk_name, name))
			return true;
	return false;
}

/*
 * Whether another disk is called name: of the table being built, of what
 * the front end still serves (cfg->disk_taken: a reload), or of dev.
 */
static bool disk_name_taken(const struct build *b, const struct mq_device *dev,
			    const struct gendisk *self, const char *name)
{
	unsigned int i;

	if (disks_have(b->ex, name))
		return true;
	if (b->cfg->disk_taken && b->cfg->disk_taken(b->cfg->arg, name))
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
static int unique_disk_name(const struct build *b, struct mq_device *dev,
			    struct gendisk *disk)
{
	char name[MQ_NAME_MAX + 24], stem[MQ_NAME_MAX];
	size_t len = strlen(disk->disk_name), digits = 0;
	unsigned long n = 0;
	unsigned int tries;

	if (!disk_name_taken(b, dev, disk, disk->disk_name))
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
		    !disk_name_taken(b, dev, disk, name))
			return mq_disk_rename(disk, name);
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

/* d's exports and internal queues, named after prefix. */
static int name_disks(const struct build *b, struct mq_export_dev *d,
		      const char *prefix)
{
	struct mq_device *dev = d->dev;
	unsigned int i;

	d->v = calloc(dev->nr_disks, sizeof(*d->v));
	d->internal = calloc(dev->nr_internal ? dev->nr_internal : 1,
			     sizeof(*d->internal));
	if (!d->v || !d->internal)
		goto oom;
	for (i = 0; i < dev->nr_disks; i++) {
		struct gendisk *disk = dev->disks[i];
		struct mq_export *e = &d->v[i];
		char name[MQ_EXPORT_NAME_MAX + MQ_NAME_MAX + 2];

		if (unique_disk_name(b, dev, disk))
			return -1;
		if (prefix && dev->nr_disks == 1)
			snprintf(name, sizeof(name), "%s", prefix);
		else
			export_name(name, sizeof(name), prefix, disk);
		if (strlen(name) > MQ_EXPORT_NAME_MAX) {
			cfg_err("export name '%.40s...' is longer "
				"than 4096 bytes",
				name);
			return -1;
		}
		e->name = strdup(name);
		if (!e->name)
			goto oom;
		d->nr++;
		e->disk = disk;
		e->readonly = b->cfg->readonly || disk->read_only;
		e->model = dev->driver->name;
		e->owner = d;
		mq_disk_describe(disk, e->description, sizeof(e->description));
	}
	for (i = 0; i < dev->nr_internal; i++) {
		char name[MQ_EXPORT_NAME_MAX + MQ_NAME_MAX + 2];

		export_name(name, sizeof(name), prefix, dev->internal[i]);
		d->internal[i].disk = dev->internal[i];
		d->internal[i].name = strdup(name);
		if (!d->internal[i].name)
			goto oom;
		d->nr_internal++;
	}
	return 0;
oom:
	cfg_err("out of memory");
	return -1;
}

/*
 * Make a device and add it to the table; prefix names its exports
 * (NULL: the disk names).  where says what to name in the error line.
 */
static int make_device(const struct build *b, struct mq_params *p,
		       const char *prefix, const char *where, bool quiet,
		       struct mq_export_dev **out)
{
	size_t size = b->cfg->dev_size > sizeof(struct mq_export_dev)
			      ? b->cfg->dev_size
			      : sizeof(struct mq_export_dev);
	struct mq_export_dev *d = calloc(1, size);
	struct mq_err e;

	if (!d) {
		cfg_err("out of memory");
		return -1;
	}
	if (mq_device_create(p, b->cfg->nr_ctx, &d->dev, &e)) {
		if (!quiet)
			cfg_err("%s%s%s", where ? where : "", where ? ": " : "",
				e.msg);
		d->dev = NULL;
		free(d);
		return -1;
	}
	if (!d->dev->nr_disks) {
		cfg_err("%s%s%s: the device offers no disk", where ? where : "",
			where ? ": " : "", d->dev->driver->name);
		mq_export_dev_free(d);
		return -1;
	}
	if (name_disks(b, d, prefix) || mq_exports_add(b->ex, d, b->cfg->err)) {
		mq_export_dev_free(d);
		return -1;
	}
	if (out)
		*out = d;
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
static int build_from_args(const struct build *b)
{
	const struct mq_exports_cfg *cfg = b->cfg;
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
	r = make_device(b, p, NULL, NULL, false, NULL);
out:
	mq_params_free(p);
	return r;
}

struct ini_key {
	char *name;
	char *value; /* a key's, as the file has it; NULL for a [header] */
	int line;
};

struct ini_section {
	char *name;
	struct mq_params *p;
	int line; /* of its [header] */
	struct ini_key *keys;
	unsigned int nr_keys;
};

struct mq_ini {
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
		    const char *value, int line)
{
	struct ini_key *k = realloc(*v, (*nr + 1) * sizeof(*k));

	if (!k)
		return -1;
	*v = k;
	k[*nr].name = strdup(name);
	k[*nr].value = value ? strdup(value) : NULL;
	if (!k[*nr].name || (value && !k[*nr].value)) {
		free(k[*nr].name);
		free(k[*nr].value);
		return -1;
	}
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

	for (i = 0; i < nr; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

/*
 * A section header on this line: the name between '[' and ']', as inih
 * takes it.  A section named twice is an error naming both lines.
 */
static void reader_header(struct mq_ini *st, const char *line)
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
	} else if (remember(&st->headers, &st->nr_headers, name, NULL,
			    st->line)) {
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
	struct mq_ini *st = stream;
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

static struct ini_section *ini_find(struct mq_ini *st, const char *name)
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
	struct mq_ini *st = user;
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
	if (remember(&s->keys, &s->nr_keys, name, value, st->line)) {
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

static void ini_free(struct mq_ini *st)
{
	unsigned int i;

	for (i = 0; i < st->nr; i++) {
		free(st->v[i].name);
		mq_params_free(st->v[i].p);
		forget(st->v[i].keys, st->v[i].nr_keys);
	}
	free(st->v);
	forget(st->headers, st->nr_headers);
	memset(st, 0, sizeof(*st));
}

/* Read path into st: 0, or -1 with why in err (and st freed). */
static int ini_load(const char *path, struct mq_ini *st, char *err, size_t len)
{
	struct stat sb;
	int r;

	memset(st, 0, sizeof(*st));
	st->at_line_start = true;
	st->f = fopen(path, "r");
	if (!st->f) {
		snprintf(err, len, "%s: cannot open: %s", path,
			 strerror(errno));
		return -1;
	}
	/* A directory opens, and reads as an empty file: say what it is. */
	if (!fstat(fileno(st->f), &sb) && S_ISDIR(sb.st_mode)) {
		snprintf(err, len, "%s: is a directory, not a config file",
			 path);
		fclose(st->f);
		st->f = NULL;
		return -1;
	}
	r = ini_parse_stream(ini_reader_fn, st, ini_kv, st);
	fclose(st->f);
	st->f = NULL;
	if (st->failed) {
		snprintf(err, len, "%s: line %d: %s", path, st->line,
			 st->e.msg);
		r = -1;
	} else if (r) {
		snprintf(err, len, "%s: line %d: syntax error", path, r);
		r = -1;
	} else if (!st->nr) {
		snprintf(err, len, "%s: no [export] section", path);
		r = -1;
	}
	if (r)
		ini_free(st);
	return r;
}

/* What the device of section s was made from: its keys, moved into d. */
static int keep_keys(const struct build *b, struct mq_export_dev *d,
		     struct ini_section *s)
{
	unsigned int i;

	d->section = strdup(s->name);
	d->kv = calloc(s->nr_keys ? s->nr_keys : 1, sizeof(*d->kv));
	if (!d->section || !d->kv) {
		cfg_err("out of memory");
		return -1;
	}
	for (i = 0; i < s->nr_keys; i++) {
		d->kv[i].key = s->keys[i].name;
		d->kv[i].value = s->keys[i].value;
		s->keys[i].name = s->keys[i].value = NULL;
	}
	d->nr_kv = s->nr_keys;
	return 0;
}

static int build_from_ini(const struct build *b)
{
	const char *path = b->cfg->config_file;
	struct mq_ini st;
	char err[MQ_EXPORT_NAME_MAX + 1024];
	unsigned int i;
	int r = 0;

	if (ini_load(path, &st, err, sizeof(err))) {
		cfg_err("%s", err);
		return -1;
	}
	for (i = 0; !r && i < st.nr; i++) {
		char where[MQ_EXPORT_NAME_MAX + 64];
		struct mq_export_dev *d;

		snprintf(where, sizeof(where), "%s: [%s]", path, st.v[i].name);
		r = mq_exports_add_section(b->cfg, b->ex, &st, i, where, &d);
	}
	ini_free(&st);
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
 * of a blank chip would be a second "mtdblock0", all 0xFF.  nbd needs a
 * server of the user's to forward to; rbd a Ceph cluster of the user's
 * (tried here it would wait connect_timeout for monitors that may not
 * exist).
 */
static const char *const demo_skip[] = {"ide-disk", "ide-cd", "mtdblock_ro",
					"nbd",	    "rbd",    NULL};

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
static int demo_try(const struct build *b, const char *name,
		    const char *const *keys, const char *disc,
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
		r = make_device(b, p, export ? export : name, NULL, true, NULL);
	mq_params_free(p);
	return r;
}

static int build_demo(const struct build *b)
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
				done |= !demo_try(b, (*d)->name,
						  demo_hints[t].keys,
						  have_disc ? disc : NULL,
						  demo_hints[t].export);
		for (t = 0; !done &&
			    t < sizeof(demo_generic) / sizeof(demo_generic[0]);
		     t++)
			done = !demo_try(b, (*d)->name, demo_generic[t], NULL,
					 NULL);
		if (!done)
			cfg_line(b->cfg->info,
				 "demo: %s left out (it needs an image or "
				 "keys of its own)",
				 (*d)->name);
	}
	if (have_disc)
		unlink(disc);
	if (!b->ex->nr) {
		cfg_err("--demo: no device model could be "
			"made");
		return -1;
	}
	return 0;
}

int mq_exports_build(const struct mq_exports_cfg *cfg, struct mq_exports *ex)
{
	struct build b = {.cfg = cfg, .ex = ex};
	int r;

	memset(ex, 0, sizeof(*ex));
	if (cfg->config_file)
		r = build_from_ini(&b);
	else if (cfg->nr_args)
		r = build_from_args(&b);
	else
		r = build_demo(&b);
	if (r)
		mq_exports_destroy(ex);
	return r;
}

void mq_exports_release(struct mq_exports *ex)
{
	free(ex->devs);
	free(ex->v);
	memset(ex, 0, sizeof(*ex));
}

void mq_exports_destroy(struct mq_exports *ex)
{
	unsigned int i;

	for (i = 0; i < ex->nr_devs; i++)
		mq_export_dev_free(ex->devs[i]);
	mq_exports_release(ex);
}

int mq_exports_sync(struct mq_exports *ex, void (*err)(const char *line))
{
	unsigned int i;
	int r, first = 0;

	for (i = 0; i < ex->nr_devs; i++) {
		struct mq_device *dev = ex->devs[i]->dev;

		r = mq_device_sync(dev);
		if (r) {
			cfg_line(err, "%s: sync failed: %s", dev->driver->name,
				 strerror(r < 0 ? -r : r));
			if (!first)
				first = r;
		}
	}
	return first;
}

struct mq_export *mq_export_find(const struct mq_exports *ex, const char *name,
				 size_t len)
{
	unsigned int i;

	if (!len)
		return ex->nr ? ex->v[0] : NULL;
	for (i = 0; i < ex->nr; i++)
		if (strlen(ex->v[i]->name) == len &&
		    !memcmp(ex->v[i]->name, name, len))
			return ex->v[i];
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
				 ex->v[i]->name);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

struct ctl_export *mq_export_devs_ctl(struct mq_export_dev *const *devs,
				      unsigned int nr, unsigned int *count)
{
	struct ctl_export *v;
	unsigned int i, j, n = 0;

	for (i = 0; i < nr; i++)
		n += devs[i]->nr + devs[i]->nr_internal;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return NULL;
	n = 0;
	for (i = 0; i < nr; i++) {
		const struct mq_export_dev *d = devs[i];

		for (j = 0; j < d->nr; j++)
			v[n++] = (struct ctl_export){d->v[j].name, d->v[j].disk,
						     false, d->v[j].model};
		/* The devices' queues that are no export: in the tree only. */
		for (j = 0; j < d->nr_internal; j++)
			v[n++] = (struct ctl_export){d->internal[j].name,
						     d->internal[j].disk, true};
	}
	*count = n;
	return v;
}

/* ---- -c FILE, section by section ------------------------------------ */

int mq_ini_load(const char *path, struct mq_ini **out, char *err, size_t len)
{
	struct mq_ini *ini = malloc(sizeof(*ini));

	if (!ini) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	if (ini_load(path, ini, err, len)) {
		free(ini);
		return -1;
	}
	*out = ini;
	return 0;
}

void mq_ini_free(struct mq_ini *ini)
{
	if (!ini)
		return;
	ini_free(ini);
	free(ini);
}

unsigned int mq_ini_nr(const struct mq_ini *ini)
{
	return ini->nr;
}

const char *mq_ini_section(const struct mq_ini *ini, unsigned int i)
{
	return ini->v[i].name;
}

int mq_exports_add_section(const struct mq_exports_cfg *cfg,
			   struct mq_exports *ex, struct mq_ini *ini,
			   unsigned int i, const char *where,
			   struct mq_export_dev **out)
{
	const struct build bb = {.cfg = cfg, .ex = ex}, *b = &bb;
	struct mq_export_dev *d;

	if (make_device(b, ini->v[i].p, ini->v[i].name, where, false, &d))
		return -1;
	/* in ex already: the caller's failure path frees it with ex's own */
	*out = d;
	return keep_keys(b, d, &ini->v[i]);
}

static const char *kv_value(const struct mq_export_dev *d, const char *key)
{
	unsigned int i;

	for (i = 0; i < d->nr_kv; i++)
		if (!strcmp(d->kv[i].key, key))
			return d->kv[i].value;
	return NULL;
}

static void list_add(char *buf, size_t len, const char *word)
{
	size_t off = strlen(buf);

	snprintf(buf + off, len - off, "%s%s", off ? ", " : "", word);
}

void mq_export_dev_changed(const struct mq_export_dev *d,
			   const struct mq_ini *ini, unsigned int i, char *buf,
			   size_t len)
{
	const struct ini_section *s = &ini->v[i];
	unsigned int k;

	buf[0] = '\0';
	for (k = 0; k < s->nr_keys; k++) {
		const char *v = kv_value(d, s->keys[k].name);

		if (!v || strcmp(v, s->keys[k].value))
			list_add(buf, len, s->keys[k].name);
	}
	for (k = 0; k < d->nr_kv; k++)
		if (!lookup(s->keys, s->nr_keys, d->kv[k].key))
			list_add(buf, len, d->kv[k].key);
}
