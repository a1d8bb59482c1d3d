// SPDX-License-Identifier: GPL-2.0
/*
 * Scheduler rules in the syntax of udev rules (see rules.h).  A rule is a
 * line of KEY[{ATTR}] OP "VALUE" pairs separated by commas; a backslash at
 * the end of a line continues it; '#' starts a comment line.  As in udev,
 * a rule's assignments happen only when all of its matches hold, a match
 * value is a list of fnmatch(3) globs separated by '|', and a key this
 * server cannot evaluate (PROGRAM, DRIVERS, ...) makes the rule not match.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../server/mq/elevator.h"
#include "rules.h"
#include "../server/mq/log.h"

enum rule_op {
	OP_MATCH,	 /* == */
	OP_NOMATCH,	 /* != */
	OP_ASSIGN,	 /* = */
	OP_ASSIGN_FINAL, /* := */
	OP_ADD,		 /* += */
	OP_REMOVE,	 /* -= */
};

static const char *const op_names[] = {
	[OP_MATCH] = "==",	  [OP_NOMATCH] = "!=", [OP_ASSIGN] = "=",
	[OP_ASSIGN_FINAL] = ":=", [OP_ADD] = "+=",     [OP_REMOVE] = "-=",
};

struct rule_token {
	char *key;
	char *attr; /* the {...} part, or NULL */
	enum rule_op op;
	char *value;
};

struct rule {
	const char *file; /* one of udev_rules.files */
	unsigned int line;
	struct rule_token *tokens;
	unsigned int nr_tokens;
	const char *label;	/* LABEL="..." or NULL; points into a token */
	const char *goto_label; /* GOTO="..." or NULL */
	int goto_target;	/* index of the rule with the label, or -1 */
};

struct udev_rules {
	char **files; /* the files read, in order */
	unsigned int nr_files;
	struct rule *rules;
	unsigned int nr_rules;
};

static bool is_match_op(enum rule_op op)
{
	return op == OP_MATCH || op == OP_NOMATCH;
}

/* Keys that only match: an assignment to one is a syntax error in udev. */
static bool key_is_match_only(const char *key)
{
	static const char *const keys[] = {
		"ACTION",  "DEVPATH",	 "KERNEL",  "SUBSYSTEM", "DRIVER",
		"KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS",	 "TAGS",
		"TEST",	   "PROGRAM",	 "RESULT",
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

static bool key_needs_attr(const char *key)
{
	return !strcmp(key, "ATTR") || !strcmp(key, "ATTRS") ||
	       !strcmp(key, "ENV") || !strcmp(key, "SYSCTL");
}

/* ------------------------------------------------------------------ */
/* parsing                                                             */

static void free_rule(struct rule *rule)
{
	unsigned int i;

	for (i = 0; i < rule->nr_tokens; i++) {
		free(rule->tokens[i].key);
		free(rule->tokens[i].attr);
		free(rule->tokens[i].value);
	}
	free(rule->tokens);
}

void udev_rules_free(struct udev_rules *rules)
{
	unsigned int i;

	if (!rules)
		return;
	for (i = 0; i < rules->nr_rules; i++)
		free_rule(&rules->rules[i]);
	free(rules->rules);
	for (i = 0; i < rules->nr_files; i++)
		free(rules->files[i]);
	free(rules->files);
	free(rules);
}

static int add_token(struct rule *rule, struct rule_token *tok)
{
	struct rule_token *t;

	t = realloc(rule->tokens, (rule->nr_tokens + 1) * sizeof(*t));
	if (!t)
		return -1;
	rule->tokens = t;
	rule->tokens[rule->nr_tokens++] = *tok;
	return 0;
}

static void skip_blanks(const char **s)
{
	while (**s == ' ' || **s == '\t')
		(*s)++;
}

static enum rule_op parse_op(const char **s, bool *ok)
{
	static const struct {
		const char *text;
		enum rule_op op;
	} ops[] = {
		{"==", OP_MATCH},  {"!=", OP_NOMATCH},	    {"+=", OP_ADD},
		{"-=", OP_REMOVE}, {":=", OP_ASSIGN_FINAL}, {"=", OP_ASSIGN},
	};
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i].text);

		if (!strncmp(*s, ops[i].text, n)) {
			*s += n;
			*ok = true;
			return ops[i].op;
		}
	}
	*ok = false;
	return OP_MATCH;
}

/* "VALUE" with \" for a quote; every other backslash is kept for globs. */
static char *parse_value(const char **s)
{
	const char *p = *s + 1;
	char *out, *o;

	out = malloc(strlen(p) + 1);
	if (!out)
		return NULL;
	for (o = out; *p && *p != '"'; p++) {
		if (p[0] == '\\' && p[1] == '"')
			p++;
		*o++ = *p;
	}
	*o = '\0';
	if (*p != '"') {
		free(out);
		errno = EINVAL;
		return NULL;
	}
	*s = p + 1;
	return out;
}

/* Check what udev refuses at load time. */
static int check_token(const char *where, const struct rule_token *t,
		       struct mq_err *e)
{
	if (key_needs_attr(t->key) && (!t->attr || !*t->attr))
		return mq_err_set(e, "%s: %s needs an attribute: %s{...}",
				  where, t->key, t->key);
	if (key_is_match_only(t->key) && !is_match_op(t->op))
		return mq_err_set(
			e,
			"%s: invalid operator '%s' for %s: it takes '==' or '!='",
			where, op_names[t->op], t->key);
	if ((!strcmp(t->key, "GOTO") || !strcmp(t->key, "LABEL")) &&
	    t->op != OP_ASSIGN)
		return mq_err_set(
			e, "%s: invalid operator '%s' for %s: it takes '='",
			where, op_names[t->op], t->key);
	if (!strcmp(t->key, "ATTR") && (t->op == OP_ADD || t->op == OP_REMOVE))
		return mq_err_set(e, "%s: invalid operator '%s' for ATTR",
				  where, op_names[t->op]);
	return 0;
}

static void free_token(struct rule_token *tok)
{
	free(tok->key);
	free(tok->attr);
	free(tok->value);
}

/* One token at *s into tok; *s moves past it. */
static int parse_token(const char *where, const char **sp,
		       struct rule_token *tok, struct mq_err *e)
{
	const char *s = *sp, *start = s;
	bool ok;

	while (isalnum((unsigned char)*s) || *s == '_')
		s++;
	if (s == start)
		return mq_err_set(e, "%s: expected a key, found '%c'", where,
				  *s);
	tok->key = strndup(start, s - start);
	if (!tok->key)
		return mq_err_set(e, "%s: out of memory", where);
	if (*s == '{') {
		const char *end = strchr(s, '}');

		if (!end)
			return mq_err_set(e, "%s: missing '}' after %s{", where,
					  tok->key);
		tok->attr = strndup(s + 1, end - s - 1);
		if (!tok->attr)
			return mq_err_set(e, "%s: out of memory", where);
		s = end + 1;
	}
	skip_blanks(&s);
	tok->op = parse_op(&s, &ok);
	if (!ok)
		return mq_err_set(e, "%s: expected '==' or '=' after %s", where,
				  tok->key);
	skip_blanks(&s);
	if (*s != '"')
		return mq_err_set(e, "%s: expected '\"' after %s%s", where,
				  tok->key, op_names[tok->op]);
	tok->value = parse_value(&s);
	if (!tok->value) {
		if (errno == EINVAL)
			return mq_err_set(e, "%s: missing closing '\"' in %s",
					  where, tok->key);
		return mq_err_set(e, "%s: out of memory", where);
	}
	if (*s && *s != ',' && *s != ' ' && *s != '\t')
		return mq_err_set(e, "%s: expected ',' after the value of %s",
				  where, tok->key);
	*sp = s;
	return check_token(where, tok, e);
}

/* One logical line (continuations joined) into rule. */
static int parse_rule(const char *where, const char *s, struct rule *rule,
		      struct mq_err *e)
{
	for (;;) {
		struct rule_token tok = {0};

		while (*s == ' ' || *s == '\t' || *s == ',')
			s++;
		if (!*s)
			return 0;
		if (parse_token(where, &s, &tok, e)) {
			free_token(&tok);
			return -1;
		}
		if (add_token(rule, &tok)) {
			free_token(&tok);
			return mq_err_set(e, "%s: out of memory", where);
		}
		if (!strcmp(tok.key, "LABEL"))
			rule->label = tok.value;
		else if (!strcmp(tok.key, "GOTO"))
			rule->goto_label = tok.value;
	}
}

static int add_rule(struct udev_rules *rules, const char *file,
		    unsigned int line, const char *text, struct mq_err *e)
{
	char where[RULES_WHERE_MAX];
	struct rule rule = {.file = file, .line = line, .goto_target = -1};
	struct rule *r;

	snprintf(where, sizeof(where), "%s:%u", file, line);
	if (parse_rule(where, text, &rule, e)) {
		free_rule(&rule);
		return -1;
	}
	if (!rule.nr_tokens)
		return 0;
	r = realloc(rules->rules, (rules->nr_rules + 1) * sizeof(*r));
	if (!r) {
		free_rule(&rule);
		return mq_err_set(e, "%s: out of memory", where);
	}
	rules->rules = r;
	rules->rules[rules->nr_rules++] = rule;
	return 0;
}

/*
 * GOTO jumps forward to the first rule with the LABEL in the same file, as
 * in udev.
 */
static void resolve_gotos(struct udev_rules *rules)
{
	unsigned int i, j;

	for (i = 0; i < rules->nr_rules; i++) {
		struct rule *r = &rules->rules[i];

		if (!r->goto_label)
			continue;
		for (j = i + 1; j < rules->nr_rules; j++) {
			const char *label = rules->rules[j].label;

			if (rules->rules[j].file != r->file)
				break;
			if (label && !strcmp(label, r->goto_label)) {
				r->goto_target = (int)j;
				break;
			}
		}
		if (r->goto_target < 0)
			pr_warn("%s:%u: GOTO=\"%s\" has no matching LABEL, ignored",
				r->file, r->line, r->goto_label);
	}
}

/* Strip the newline; true if a backslash continues the line. */
static bool chomp(char *line, ssize_t *n)
{
	while (*n > 0 && (line[*n - 1] == '\n' || line[*n - 1] == '\r'))
		line[--*n] = '\0';
	if (*n > 0 && line[*n - 1] == '\\') {
		line[--*n] = '\0';
		return true;
	}
	return false;
}

static int append(char **buf, size_t *len, const char *s, size_t n)
{
	char *b = realloc(*buf, *len + n + 1);

	if (!b)
		return -1;
	memcpy(b + *len, s, n);
	*len += n;
	b[*len] = '\0';
	*buf = b;
	return 0;
}

static int load_lines(FILE *f, struct udev_rules *rules, const char *file,
		      struct mq_err *e)
{
	char *line = NULL, *logical = NULL;
	size_t cap = 0, len = 0;
	unsigned int lineno = 0, start = 0;
	ssize_t n;
	int ret = 0;

	while ((n = getline(&line, &cap, f)) >= 0) {
		bool more;
		const char *p;

		lineno++;
		more = chomp(line, &n);
		if (!len)
			start = lineno;
		if (append(&logical, &len, line, (size_t)n)) {
			ret = mq_err_set(e, "%s:%u: out of memory", file,
					 lineno);
			break;
		}
		if (more)
			continue;
		p = logical;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p && *p != '#' && add_rule(rules, file, start, p, e)) {
			ret = -1;
			break;
		}
		len = 0;
		logical[0] = '\0';
	}
	if (!ret && ferror(f))
		ret = mq_err_set(e, "%s: %s", file, strerror(errno));
	/* A continuation on the last line ends the rule there. */
	if (!ret && len) {
		const char *p = logical;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p && *p != '#' && add_rule(rules, file, start, p, e))
			ret = -1;
	}
	free(line);
	free(logical);
	return ret;
}

/* Read one file; its name stays in rules->files for the rules' sake. */
static int load_file(struct udev_rules *rules, const char *path,
		     struct mq_err *e)
{
	char **files, *file;
	FILE *f;
	int ret;

	files = realloc(rules->files,
			(rules->nr_files + 1) * sizeof(*rules->files));
	if (!files)
		return mq_err_set(e, "rules=%s: out of memory", path);
	rules->files = files;
	file = strdup(path);
	if (!file)
		return mq_err_set(e, "rules=%s: out of memory", path);
	rules->files[rules->nr_files++] = file;

	f = fopen(path, "re");
	if (!f)
		return mq_err_set(e, "rules=%s: %s", path, strerror(errno));
	ret = load_lines(f, rules, file, e);
	fclose(f);
	return ret;
}

static int rules_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 6 &&
	       !strcmp(d->d_name + n - 6, ".rules");
}

/* A directory, as udev reads /etc/udev/rules.d: *.rules, in name order. */
static int load_dir(struct udev_rules *rules, const char *path,
		    struct mq_err *e)
{
	struct dirent **names;
	char file[PATH_MAX];
	int i, n, ret = 0;

	n = scandir(path, &names, rules_filter, alphasort);
	if (n < 0)
		return mq_err_set(e, "rules=%s: %s", path, strerror(errno));
	for (i = 0; i < n; i++) {
		if (!ret) {
			snprintf(file, sizeof(file), "%s/%s", path,
				 names[i]->d_name);
			ret = load_file(rules, file, e);
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

int udev_rules_load(const char *path, struct udev_rules **out, struct mq_err *e)
{
	struct udev_rules *rules;
	struct stat st;
	int ret;

	*out = NULL;
	rules = calloc(1, sizeof(*rules));
	if (!rules)
		return mq_err_set(e, "rules=%s: out of memory", path);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		ret = load_dir(rules, path, e);
	else
		ret = load_file(rules, path, e);
	if (ret) {
		udev_rules_free(rules);
		return -1;
	}
	resolve_gotos(rules);
	*out = rules;
	return 0;
}

/* ------------------------------------------------------------------ */
/* what the rules can see                                              */

static const char *zoned_name(enum blk_zoned_model zoned)
{
	switch (zoned) {
	case BLK_ZONED_HA:
		return "host-aware";
	case BLK_ZONED_HM:
		return "host-managed";
	default:
		return "none";
	}
}

/* nr_requests as it reads with the given scheduler attached. */
static unsigned int nr_requests(struct mq_queue *q, const char *scheduler)
{
	unsigned int depth = q->tag_set->queue_depth;

	if (!strcmp(scheduler, "none"))
		return depth;
	return 2 * (depth < 128 ? depth : 128);
}

int udev_rules_attr(struct gendisk *disk, const char *scheduler,
		    const char *name, char *buf, size_t len)
{
	struct mq_queue *q = disk->queue;
	const struct queue_limits *lim = &q->limits;
	uint64_t v;

	if (!strcmp(name, "size"))
		v = get_capacity(disk);
	else if (!strcmp(name, "ro"))
		v = disk->read_only;
	else if (!strcmp(name, "removable"))
		v = 0;
	else if (strncmp(name, "queue/", 6))
		return -1;
	else if (!strcmp(name += 6, "scheduler"))
		return snprintf(buf, len, "%s", scheduler) < 0 ? -1 : 0;
	else if (!strcmp(name, "zoned"))
		return snprintf(buf, len, "%s", zoned_name(lim->zoned)) < 0 ? -1
									    : 0;
	else if (!strcmp(name, "write_cache"))
		return snprintf(buf, len, "%s",
				lim->write_cache ? "write back"
						 : "write through") < 0
			       ? -1
			       : 0;
	else if (!strcmp(name, "rotational"))
		v = lim->rotational;
	else if (!strcmp(name, "nr_hw_queues"))
		v = q->nr_hw_queues;
	else if (!strcmp(name, "logical_block_size") ||
		 !strcmp(name, "hw_sector_size"))
		v = lim->logical_block_size;
	else if (!strcmp(name, "physical_block_size") ||
		 !strcmp(name, "minimum_io_size"))
		v = lim->physical_block_size;
	else if (!strcmp(name, "optimal_io_size"))
		v = lim->io_opt;
	else if (!strcmp(name, "nr_requests"))
		v = nr_requests(q, scheduler);
	else if (!strcmp(name, "max_sectors_kb") ||
		 !strcmp(name, "max_hw_sectors_kb"))
		v = lim->max_sectors / 2;
	else if (!strcmp(name, "discard_max_bytes"))
		v = (uint64_t)lim->max_discard_sectors << SECTOR_SHIFT;
	else if (!strcmp(name, "discard_granularity"))
		v = lim->max_discard_sectors ? lim->discard_granularity : 0;
	else if (!strcmp(name, "write_zeroes_max_bytes"))
		v = (uint64_t)lim->max_write_zeroes_sectors << SECTOR_SHIFT;
	else if (!strcmp(name, "fua"))
		v = lim->fua;
	else if (!strcmp(name, "chunk_sectors"))
		v = lim->chunk_sectors;
	else if (!strcmp(name, "nr_zones"))
		v = lim->zoned != BLK_ZONED_NONE && lim->chunk_sectors
			    ? (get_capacity(disk) + lim->chunk_sectors - 1) /
				      lim->chunk_sectors
			    : 0;
	else
		return -1;
	return snprintf(buf, len, "%" PRIu64, v) < 0 ? -1 : 0;
}

/* queue/scheduler as sysfs shows it: "none mq-deadline [bfq] kyber". */
static void scheduler_line(const char *current, char *buf, size_t len)
{
	size_t used;
	unsigned int i;

	snprintf(buf, len, strcmp(current, "none") ? "none" : "[none]");
	for (i = 0; mq_elevators[i]; i++) {
		const char *name = mq_elevators[i]->elevator_name;

		used = strlen(buf);
		snprintf(buf + used, len - used,
			 strcmp(current, name) ? " %s" : " [%s]", name);
	}
}

/* ------------------------------------------------------------------ */
/* evaluation                                                          */

struct rules_eval {
	struct gendisk *disk;
	char scheduler[64]; /* current, as assignments change it */
	bool scheduler_final;
	rules_check_fn *check;
	void *check_arg;
	struct rules_result *res;
};

/* Does any '|' alternative of pattern match any of the values? */
static bool pattern_match(const char *pattern, const char *const *values,
			  unsigned int nr_values)
{
	const char *alt = pattern;

	for (;;) {
		const char *bar = strchr(alt, '|');
		size_t n = bar ? (size_t)(bar - alt) : strlen(alt);
		char *one = strndup(alt, n);
		unsigned int i;
		bool hit = false;

		if (!one)
			return false;
		for (i = 0; i < nr_values && !hit; i++)
			hit = fnmatch(one, values[i], 0) == 0;
		free(one);
		if (hit)
			return true;
		if (!bar)
			return false;
		alt = bar + 1;
	}
}

static bool elevator_has_attr(const char *scheduler, const char *attr)
{
	const struct elevator_type *et = elevator_find(scheduler);
	const struct elv_fs_entry *a;

	for (a = et ? et->elevator_attrs : NULL; a && a->name; a++)
		if (!strcmp(a->name, attr))
			return true;
	return false;
}

/* TEST=="PATH": does the file exist?  Relative paths are the device's. */
static bool test_exists(struct rules_eval *ev, const char *path)
{
	char buf[64];

	if (path[0] == '/')
		return access(path, F_OK) == 0;
	if (!strncmp(path, "queue/iosched/", 14))
		return elevator_has_attr(ev->scheduler, path + 14);
	if (!strcmp(path, "queue/iosched"))
		return strcmp(ev->scheduler, "none") != 0;
	return udev_rules_attr(ev->disk, ev->scheduler, path, buf,
			       sizeof(buf)) == 0;
}

static const char *env_value(struct rules_eval *ev, const char *name, char *buf,
			     size_t len)
{
	if (!strcmp(name, "DEVTYPE"))
		return "disk";
	if (!strcmp(name, "SUBSYSTEM"))
		return "block";
	if (!strcmp(name, "ACTION"))
		return "add";
	if (!strcmp(name, "DEVNAME")) {
		snprintf(buf, len, "/dev/%s", ev->disk->disk_name);
		return buf;
	}
	return ""; /* an unset variable reads as empty in udev */
}

/* 1 if the match token holds, 0 if not. */
static bool token_matches(struct rules_eval *ev, const struct rule *rule,
			  const struct rule_token *t)
{
	const char *values[2];
	unsigned int nr = 1;
	char buf[256], line[256];
	bool hit;

	if (!strcmp(t->key, "ACTION")) {
		/* An export is added; coldplug replays it as "change". */
		values[0] = "add";
		values[1] = "change";
		nr = 2;
	} else if (!strcmp(t->key, "KERNEL")) {
		values[0] = ev->disk->disk_name;
	} else if (!strcmp(t->key, "SUBSYSTEM")) {
		values[0] = "block";
	} else if (!strcmp(t->key, "ENV")) {
		values[0] = env_value(ev, t->attr, buf, sizeof(buf));
	} else if (!strcmp(t->key, "ATTR")) {
		if (udev_rules_attr(ev->disk, ev->scheduler, t->attr, buf,
				    sizeof(buf))) {
			pr_debug(
				"%s: %s:%u: ATTR{%s} is not known here, the rule does not match",
				ev->disk->disk_name, rule->file, rule->line,
				t->attr);
			return false;
		}
		values[0] = buf;
		if (!strcmp(t->attr, "queue/scheduler")) {
			scheduler_line(ev->scheduler, line, sizeof(line));
			values[1] = line;
			nr = 2;
		}
	} else if (!strcmp(t->key, "TEST")) {
		hit = test_exists(ev, t->value);
		return t->op == OP_MATCH ? hit : !hit;
	} else {
		pr_debug(
			"%s: %s:%u: %s cannot be evaluated here, the rule does not match",
			ev->disk->disk_name, rule->file, rule->line, t->key);
		return false;
	}
	hit = pattern_match(t->value, values, nr);
	return t->op == OP_MATCH ? hit : !hit;
}

/* Copy value without leading and trailing blanks, as sysfs stores do. */
static void copy_trimmed(char *dst, size_t len, const char *value)
{
	size_t n;

	while (isspace((unsigned char)*value))
		value++;
	n = strlen(value);
	while (n && isspace((unsigned char)value[n - 1]))
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(dst, value, n);
	dst[n] = '\0';
}

static int set_tunable(struct rules_eval *ev, const char *where,
		       const char *name, const char *value, struct mq_err *e)
{
	struct rules_result *res = ev->res;
	struct rules_tunable *t = NULL;
	unsigned int i;

	for (i = 0; i < res->nr_tunables; i++)
		if (!strcmp(res->tunables[i].name, name))
			t = &res->tunables[i];
	if (!t) {
		if (res->nr_tunables == RULES_MAX_TUNABLES)
			return mq_err_set(e,
					  "%s: more than %u iosched tunables",
					  where, RULES_MAX_TUNABLES);
		if (strlen(name) >= sizeof(t->name))
			return mq_err_set(
				e, "%s: ATTR{queue/iosched/%s}: name too long",
				where, name);
		t = &res->tunables[res->nr_tunables++];
		snprintf(t->name, sizeof(t->name), "%s", name);
	}
	copy_trimmed(t->value, sizeof(t->value), value);
	snprintf(t->where, sizeof(t->where), "%s", where);
	return 0;
}

static int assign(struct rules_eval *ev, const struct rule *rule,
		  const struct rule_token *t, struct mq_err *e)
{
	struct rules_result *res = ev->res;
	char where[RULES_WHERE_MAX], name[64];
	struct mq_err why;

	if (strcmp(t->key, "ATTR")) {
		if (strcmp(t->key, "GOTO") && strcmp(t->key, "LABEL"))
			pr_debug("%s: %s:%u: %s%s has no meaning here, ignored",
				 ev->disk->disk_name, rule->file, rule->line,
				 t->key, op_names[t->op]);
		return 0;
	}
	snprintf(where, sizeof(where), "%s:%u", rule->file, rule->line);
	if (!strcmp(t->attr, "queue/scheduler")) {
		if (ev->scheduler_final)
			return 0;
		copy_trimmed(name, sizeof(name), t->value);
		if (ev->check && ev->check(name, ev->check_arg, &why)) {
			pr_warn("%s: rule %s: ATTR{queue/scheduler}=\"%s\": %s; ignored",
				ev->disk->disk_name, where, name, why.msg);
			return 0;
		}
		/* A new scheduler starts from its own defaults. */
		if (strcmp(name, ev->scheduler))
			res->nr_tunables = 0;
		snprintf(ev->scheduler, sizeof(ev->scheduler), "%s", name);
		snprintf(res->scheduler, sizeof(res->scheduler), "%s", name);
		snprintf(res->where, sizeof(res->where), "%s", where);
		ev->scheduler_final = t->op == OP_ASSIGN_FINAL;
		return 0;
	}
	if (!strncmp(t->attr, "queue/iosched/", 14) && t->attr[14])
		return set_tunable(ev, where, t->attr + 14, t->value, e);
	if (!strcmp(t->attr, "queue/ioprio_map")) {
		if (strlen(t->value) >= sizeof(res->ioprio_map)) {
			pr_warn("%s: %s: ATTR{queue/ioprio_map}: value too long, ignored",
				ev->disk->disk_name, where);
			return 0;
		}
		snprintf(res->ioprio_map, sizeof(res->ioprio_map), "%s",
			 t->value);
		snprintf(res->ioprio_map_where, sizeof(res->ioprio_map_where),
			 "%s", where);
		return 0;
	}
	pr_warn("%s: %s: ATTR{%s} cannot be set on an export, ignored",
		ev->disk->disk_name, where, t->attr);
	return 0;
}

int udev_rules_apply(const struct udev_rules *rules, struct gendisk *disk,
		     const char *current, rules_check_fn *check,
		     void *check_arg, struct rules_result *res,
		     struct mq_err *e)
{
	struct rules_eval ev = {
		.disk = disk,
		.check = check,
		.check_arg = check_arg,
		.res = res,
	};
	unsigned int i = 0, j, steps = 0;

	memset(res, 0, sizeof(*res));
	snprintf(ev.scheduler, sizeof(ev.scheduler), "%s", current);
	while (i < rules->nr_rules) {
		const struct rule *r = &rules->rules[i];
		bool match = true;

		/* GOTOs only jump forward, so this ends; belt and braces. */
		if (++steps > 2 * rules->nr_rules + 1)
			break;
		for (j = 0; j < r->nr_tokens && match; j++)
			if (is_match_op(r->tokens[j].op))
				match = token_matches(&ev, r, &r->tokens[j]);
		if (!match) {
			i++;
			continue;
		}
		for (j = 0; j < r->nr_tokens; j++)
			if (!is_match_op(r->tokens[j].op) &&
			    assign(&ev, r, &r->tokens[j], e))
				return -1;
		i = r->goto_target >= 0 ? (unsigned int)r->goto_target : i + 1;
	}
	return 0;
}
