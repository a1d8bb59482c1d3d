// SPDX-License-Identifier: GPL-2.0
/*
 * Device parameters: KEY=VALUE pairs in the order given, each marked when
 * a getter reads it so that nothing the user typed is silently ignored.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "params.h"

struct mq_param {
	char *key;
	char *value;
	bool used;
	TAILQ_ENTRY(mq_param) entry;
};

struct mq_params {
	TAILQ_HEAD(, mq_param) list;
};

int mq_err_set(struct mq_err *e, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -1;
}

struct mq_params *mq_params_new(void)
{
	struct mq_params *p = malloc(sizeof(*p));

	if (!p)
		return NULL;
	TAILQ_INIT(&p->list);
	return p;
}

void mq_params_free(struct mq_params *p)
{
	struct mq_param *kv;

	if (!p)
		return;
	while ((kv = TAILQ_FIRST(&p->list))) {
		TAILQ_REMOVE(&p->list, kv, entry);
		free(kv->key);
		free(kv->value);
		free(kv);
	}
	free(p);
}

static struct mq_param *lookup(const struct mq_params *p, const char *key)
{
	struct mq_param *kv;

	TAILQ_FOREACH (kv, &p->list, entry)
		if (strcmp(kv->key, key) == 0)
			return kv;
	return NULL;
}

int mq_params_set(struct mq_params *p, const char *key, const char *value,
		  struct mq_err *e)
{
	struct mq_param *kv;
	char *v;

	if (!*key)
		return mq_err_set(e, "'=%s': empty key", value);

	v = strdup(value);
	if (!v)
		return mq_err_set(e, "%s: out of memory", key);

	kv = lookup(p, key);
	if (kv) {
		/* Keep the first position; the new value is unread. */
		free(kv->value);
		kv->value = v;
		kv->used = false;
		return 0;
	}

	kv = calloc(1, sizeof(*kv));
	if (!kv || !(kv->key = strdup(key))) {
		free(kv);
		free(v);
		return mq_err_set(e, "%s: out of memory", key);
	}
	kv->value = v;
	TAILQ_INSERT_TAIL(&p->list, kv, entry);
	return 0;
}

int mq_params_set_kv(struct mq_params *p, const char *kv, struct mq_err *e)
{
	const char *eq = strchr(kv, '=');
	char *key;
	int ret;

	if (!eq)
		return mq_err_set(e, "'%s': expected KEY=VALUE", kv);

	key = strndup(kv, eq - kv);
	if (!key)
		return mq_err_set(e, "%s: out of memory", kv);
	ret = mq_params_set(p, key, eq + 1, e);
	free(key);
	return ret;
}

bool mq_params_has(const struct mq_params *p, const char *key)
{
	return lookup(p, key) != NULL;
}

const char *mq_params_peek(const struct mq_params *p, const char *key)
{
	struct mq_param *kv = lookup(p, key);

	return kv ? kv->value : NULL;
}

const char *mq_params_first_unused(const struct mq_params *p)
{
	struct mq_param *kv;

	TAILQ_FOREACH (kv, &p->list, entry)
		if (!kv->used)
			return kv->key;
	return NULL;
}

int mq_params_foreach_prefix(struct mq_params *p, const char *prefix,
			     int (*fn)(const char *key, const char *value,
				       void *arg),
			     void *arg)
{
	size_t n = strlen(prefix);
	struct mq_param *kv;
	int ret;

	TAILQ_FOREACH (kv, &p->list, entry) {
		if (strncmp(kv->key, prefix, n) != 0)
			continue;
		kv->used = true;
		ret = fn(kv->key, kv->value, arg);
		if (ret)
			return ret;
	}
	return 0;
}

/* The value of key, marked as read, or NULL if absent. */
static const char *take(struct mq_params *p, const char *key)
{
	struct mq_param *kv = lookup(p, key);

	if (!kv)
		return NULL;
	kv->used = true;
	return kv->value;
}

int mq_param_str(struct mq_params *p, const char *key, const char *def,
		 const char **out, struct mq_err *e)
{
	const char *v = take(p, key);

	*out = v ? v : def;
	return 0;
}

/* Unsigned decimal: digits only, no sign, no spaces, no overflow. */
static int parse_u64(const char *s, uint64_t *out, const char **end)
{
	uint64_t v = 0;

	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned int d = *s - '0';

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	*end = s;
	return 0;
}

int mq_param_u64(struct mq_params *p, const char *key, uint64_t def,
		 uint64_t min, uint64_t max, uint64_t *out, struct mq_err *e)
{
	const char *v = take(p, key);
	const char *end;
	uint64_t n;

	if (!v) {
		*out = def;
		return 0;
	}
	if (parse_u64(v, &n, &end) || *end || n < min || n > max)
		return mq_err_set(e,
				  "%s=%s: must be an integer from %" PRIu64
				  " to %" PRIu64,
				  key, v, min, max);
	*out = n;
	return 0;
}

int mq_param_uint(struct mq_params *p, const char *key, unsigned int def,
		  unsigned int min, unsigned int max, unsigned int *out,
		  struct mq_err *e)
{
	uint64_t n;

	if (mq_param_u64(p, key, def, min, max, &n, e))
		return -1;
	*out = (unsigned int)n;
	return 0;
}

int mq_parse_size(const char *s, uint64_t *out)
{
	static const char suffixes[] = "KMGTPE";
	const char *end, *sfx;
	unsigned int shift = 0;
	uint64_t n;

	if (parse_u64(s, &n, &end))
		return -1;
	if (*end && (sfx = strchr(suffixes, toupper((unsigned char)*end)))) {
		shift = 10 * (sfx - suffixes + 1);
		end++;
		/* "K", "KB" and "KiB" all mean 1024 */
		if (*end == 'i' || *end == 'I')
			end++;
		else if (!*end)
			goto done;
		if (*end != 'b' && *end != 'B')
			return -1;
		end++;
	} else if (*end == 'b' || *end == 'B') {
		end++;
	}
	if (*end)
		return -1;
done:
	if (n > (UINT64_MAX >> shift))
		return -1;
	*out = n << shift;
	return 0;
}

int mq_param_size(struct mq_params *p, const char *key, uint64_t def,
		  uint64_t *out, struct mq_err *e)
{
	const char *v = take(p, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (mq_parse_size(v, out))
		return mq_err_set(
			e,
			"%s=%s: must be a size in bytes, optionally with a K, M, G, T, P or E suffix, below 16E",
			key, v);
	return 0;
}

int mq_param_bool(struct mq_params *p, const char *key, bool def, bool *out,
		  struct mq_err *e)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};
	const char *v = take(p, key);
	size_t i;

	if (!v) {
		*out = def;
		return 0;
	}
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return mq_err_set(
		e, "%s=%s: must be one of 1, 0, true, false, yes, no, on, off",
		key, v);
}

int mq_param_double(struct mq_params *p, const char *key, double def,
		    double min, double max, double *out, struct mq_err *e)
{
	const char *v = take(p, key);
	char *end;
	double d;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	d = strtod(v, &end);
	if (end == v || *end || errno || isnan(d) || d < min || d > max) {
		if (isinf(max))
			return mq_err_set(e, "%s=%s: must be a number >= %g",
					  key, v, min);
		return mq_err_set(e, "%s=%s: must be a number from %g to %g",
				  key, v, min, max);
	}
	*out = d;
	return 0;
}

const char *mq_param_key(char *buf, size_t len, const char *prefix,
			 const char *key)
{
	int n = snprintf(buf, len, "%s%s", prefix, key);

	if (n < 0 || (size_t)n >= len)
		buf[0] = '\0';
	return buf;
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : 99;
}

int mq_attr_number(const char *s, int64_t min, int64_t max, int64_t *out)
{
	unsigned int base = 10, n = 0;
	bool neg = false, range = false;
	uint64_t v = 0;
	int64_t r;
	int d;

	if (!s)
		return EINVAL;
	if (*s == '+' || (*s == '-' && min < 0))
		neg = *s++ == '-';
	/* The radix as _parse_integer_fixup_radix() chooses it for base 0. */
	if (s[0] == '0') {
		base = 8;
		if (tolower((unsigned char)s[1]) == 'x' &&
		    isxdigit((unsigned char)s[2])) {
			base = 16;
			s += 2;
		}
	}
	for (; (d = digit_value(*s)) < (int)base; s++, n++) {
		if (v > (UINT64_MAX - (unsigned int)d) / base)
			range = true;
		v = v * base + (unsigned int)d;
	}
	if (*s == '\n')
		s++;
	if (!n || *s)
		return EINVAL;
	if (range || v > (uint64_t)INT64_MAX + neg)
		return ERANGE;
	r = neg ? (int64_t)(0 - v) : (int64_t)v;
	if (r < min || r > max)
		return ERANGE;
	*out = r;
	return 0;
}

int mq_param_bool_alias(struct mq_params *p, const char *key, const char *alias,
			bool def, bool *out, struct mq_err *e)
{
	bool has_key = mq_params_has(p, key), a, b;

	if (mq_param_bool(p, key, def, &a, e) ||
	    mq_param_bool(p, alias, a, &b, e))
		return -1;
	if (!has_key)
		a = b;
	if (a != b)
		return mq_err_set(e,
				  "%s=%d and %s=%d disagree (one key, two "
				  "spellings)",
				  key, a, alias, b);
	*out = a;
	return 0;
}
