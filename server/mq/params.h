/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Device parameters: the KEY=VALUE pairs both front ends pass through,
 * and the error line every layer reports with.  They sit in the core, the
 * bottom layer, so that drivers and the scheduler policy read them alike.
 * Each getter marks its key as used, so that mq_device_create() can
 * refuse any key nobody read.
 */
#ifndef MQBLK_PARAMS_H
#define MQBLK_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One error line for the user, e.g. "null: bs=513: must be 512..4096". */
struct mq_err {
	char msg[512];
};

int mq_err_set(struct mq_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct mq_params;

struct mq_params *mq_params_new(void);
void mq_params_free(struct mq_params *p);
/* A later value for the same key replaces the earlier one. */
int mq_params_set(struct mq_params *p, const char *key, const char *value,
		  struct mq_err *e);
/* "KEY=VALUE" form. */
int mq_params_set_kv(struct mq_params *p, const char *kv, struct mq_err *e);
bool mq_params_has(const struct mq_params *p, const char *key);
/* The value of key, or NULL, without counting it as read. */
const char *mq_params_peek(const struct mq_params *p, const char *key);

/*
 * Getters: return 0 and store the default when the key is absent, 0 and
 * the parsed value when it is valid, -1 with e set when it is not.
 */
int mq_param_str(struct mq_params *p, const char *key, const char *def,
		 const char **out, struct mq_err *e);
int mq_param_u64(struct mq_params *p, const char *key, uint64_t def,
		 uint64_t min, uint64_t max, uint64_t *out, struct mq_err *e);
int mq_param_uint(struct mq_params *p, const char *key, unsigned int def,
		  unsigned int min, unsigned int max, unsigned int *out,
		  struct mq_err *e);
/* Bytes, with an optional K, M, G, T, P or E suffix (powers of 1024). */
int mq_param_size(struct mq_params *p, const char *key, uint64_t def,
		  uint64_t *out, struct mq_err *e);
int mq_param_bool(struct mq_params *p, const char *key, bool def, bool *out,
		  struct mq_err *e);
/*
 * A boolean with two spellings (readonly, read_only): either is taken;
 * given both, they must agree.
 */
int mq_param_bool_alias(struct mq_params *p, const char *key, const char *alias,
			bool def, bool *out, struct mq_err *e);
int mq_param_double(struct mq_params *p, const char *key, double def,
		    double min, double max, double *out, struct mq_err *e);

/* Parse "1G", "512", "4k" into bytes.  -1 on error. */
int mq_parse_size(const char *s, uint64_t *out);

/*
 * Call fn on every key that starts with prefix, in the order given, and
 * mark each as read.  Stops at and returns fn's first non-zero return.
 */
int mq_params_foreach_prefix(struct mq_params *p, const char *prefix,
			     int (*fn)(const char *key, const char *value,
				       void *arg),
			     void *arg);

/*
 * PREFIX and KEY joined in buf ("hdb." "model"), for models whose keys
 * repeat per drive or per timing model; returns buf.  A name too long for
 * buf comes back empty, a key no user can set, never cut short into
 * another key.
 */
const char *mq_param_key(char *buf, size_t len, const char *prefix,
			 const char *key);

/*
 * A number stored to a tunable (queue/iosched/NAME), read as the kernel's
 * kstrto* family reads sysfs stores, for every scheduler alike: an
 * optional '+' (or '-' when min < 0, as kstrtoint takes it and kstrtoul
 * does not), then decimal, 0x hex or 0-prefixed octal digits, then at
 * most one newline, nothing else (no spaces).  Returns 0, EINVAL when s
 * is not a number of that form (or NULL), ERANGE when it lies outside
 * [min, max]; *out is set only on success.
 */
int mq_attr_number(const char *s, int64_t min, int64_t max, int64_t *out);

/* The first key no getter has read, or NULL. */
const char *mq_params_first_unused(const struct mq_params *p);

#endif
