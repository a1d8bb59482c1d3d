// SPDX-License-Identifier: GPL-2.0
/*
 * I/O priorities by client identity: queue/ioprio_map.  NBD has no I/O
 * priority, so a bio that comes without one takes the first rule that
 * matches who sent it: "user:PATTERN=PRIO" (TLS user or PSK identity),
 * "uid:N=PRIO" (peer uid on a Unix socket), "addr:PATTERN=PRIO" (peer
 * address); patterns are fnmatch(3) globs.  PRIO is rt/0-7, be/0-7, idle
 * or none.  The map is replaced whole; bios already in the queue keep
 * the priority they got.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blk-mq-internal.h"

enum mq_ioprio_kind {
	MQ_IOPRIO_USER,
	MQ_IOPRIO_UID,
	MQ_IOPRIO_ADDR,
};

#define MQ_IOPRIO_PATTERN_MAX 64

struct mq_ioprio_rule {
	enum mq_ioprio_kind kind;
	long uid;
	char pattern[MQ_IOPRIO_PATTERN_MAX];
	uint16_t ioprio;
};

struct mq_ioprio_map {
	unsigned int nr;
	struct mq_ioprio_rule rules[];
};

static const char *const ioprio_kind_names[] = {
	[MQ_IOPRIO_USER] = "user",
	[MQ_IOPRIO_UID] = "uid",
	[MQ_IOPRIO_ADDR] = "addr",
};

int ioprio_parse(const char *s, uint16_t *ioprio)
{
	int cls;

	if (!strcmp(s, "none")) {
		*ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_NONE, 0);
		return 0;
	}
	if (!strcmp(s, "idle")) {
		*ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0);
		return 0;
	}
	if (!strncmp(s, "rt/", 3))
		cls = IOPRIO_CLASS_RT;
	else if (!strncmp(s, "be/", 3))
		cls = IOPRIO_CLASS_BE;
	else
		return EINVAL;
	if (s[3] < '0' || s[3] > '7' || s[4])
		return EINVAL;
	*ioprio = IOPRIO_PRIO_VALUE(cls, s[3] - '0');
	return 0;
}

int ioprio_format(uint16_t ioprio, char *buf, size_t len)
{
	int n;

	switch (IOPRIO_PRIO_CLASS(ioprio)) {
	case IOPRIO_CLASS_RT:
		n = snprintf(buf, len, "rt/%u", IOPRIO_PRIO_LEVEL(ioprio));
		break;
	case IOPRIO_CLASS_BE:
		n = snprintf(buf, len, "be/%u", IOPRIO_PRIO_LEVEL(ioprio));
		break;
	case IOPRIO_CLASS_IDLE:
		n = snprintf(buf, len, "idle");
		break;
	default:
		n = snprintf(buf, len, "none");
		break;
	}
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

/* One "KIND:VALUE=PRIO" token into r; EINVAL if it is not one. */
static int parse_rule(char *tok, struct mq_ioprio_rule *r)
{
	char *colon = strchr(tok, ':'), *eq = strrchr(tok, '='), *end;
	unsigned int k;
	long uid;

	if (!colon || !eq || eq < colon)
		return EINVAL;
	*colon = *eq = '\0';
	for (k = 0; k < sizeof(ioprio_kind_names) / sizeof(*ioprio_kind_names);
	     k++)
		if (!strcmp(tok, ioprio_kind_names[k]))
			break;
	if (k == sizeof(ioprio_kind_names) / sizeof(*ioprio_kind_names))
		return EINVAL;
	if (!colon[1] || strlen(colon + 1) >= MQ_IOPRIO_PATTERN_MAX)
		return EINVAL;
	r->kind = (enum mq_ioprio_kind)k;
	r->uid = -1;
	if (r->kind == MQ_IOPRIO_UID) {
		errno = 0;
		uid = strtol(colon + 1, &end, 10);
		if (errno || *end || uid < 0 || uid > INT32_MAX ||
		    colon[1] == '-' || colon[1] == '+')
			return EINVAL;
		r->uid = uid;
	}
	snprintf(r->pattern, sizeof(r->pattern), "%s", colon + 1);
	return ioprio_parse(eq + 1, &r->ioprio);
}

int mq_set_ioprio_map(struct mq_queue *q, const char *spec)
{
	struct mq_ioprio_map *map, *old;
	unsigned int nr = 0, cap = 0;
	const char *p = spec;
	char tok[256];
	size_t n;
	int err;

	map = calloc(1, sizeof(*map));
	if (!map)
		return ENOMEM;
	for (;;) {
		p += strspn(p, " \t\n");
		if (!*p)
			break;
		n = strcspn(p, " \t\n");
		if (n >= sizeof(tok)) {
			free(map);
			return EINVAL;
		}
		memcpy(tok, p, n);
		tok[n] = '\0';
		p += n;
		if (nr == cap) {
			struct mq_ioprio_map *m;

			cap = cap ? 2 * cap : 4;
			if (cap > 1024) {
				free(map);
				return EINVAL;
			}
			m = realloc(map,
				    sizeof(*map) + cap * sizeof(map->rules[0]));
			if (!m) {
				free(map);
				return ENOMEM;
			}
			map = m;
		}
		err = parse_rule(tok, &map->rules[nr]);
		if (err) {
			free(map);
			return err;
		}
		map->nr = ++nr;
	}
	if (!nr) {
		free(map);
		map = NULL;
	}
	pthread_mutex_lock(&q->ioprio_lock);
	old = q->ioprio_map;
	q->ioprio_map = map;
	atomic_store(&q->has_ioprio_map, map != NULL);
	pthread_mutex_unlock(&q->ioprio_lock);
	free(old);
	return 0;
}

int mq_show_ioprio_map(struct mq_queue *q, char *buf, size_t len)
{
	const struct mq_ioprio_rule *r;
	size_t off = 0;
	unsigned int i;
	char prio[16];
	int n = 0;

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	pthread_mutex_lock(&q->ioprio_lock);
	for (i = 0; q->ioprio_map && i < q->ioprio_map->nr; i++) {
		r = &q->ioprio_map->rules[i];
		ioprio_format(r->ioprio, prio, sizeof(prio));
		n = snprintf(buf + off, len - off, "%s%s:%s=%s", i ? " " : "",
			     ioprio_kind_names[r->kind], r->pattern, prio);
		if (n < 0 || (size_t)n >= len - off) {
			n = -ENOSPC;
			break;
		}
		off += (size_t)n;
	}
	pthread_mutex_unlock(&q->ioprio_lock);
	return n < 0 ? n : (int)off;
}

static bool rule_matches(const struct mq_ioprio_rule *r,
			 const struct mq_client *c)
{
	switch (r->kind) {
	case MQ_IOPRIO_USER:
		return c->tls_user[0] && !fnmatch(r->pattern, c->tls_user, 0);
	case MQ_IOPRIO_UID:
		return c->uid >= 0 && c->uid == r->uid;
	case MQ_IOPRIO_ADDR:
		return c->addr[0] && !fnmatch(r->pattern, c->addr, 0);
	}
	return false;
}

void mq_bio_set_ioprio(struct mq_queue *q, struct bio *bio)
{
	unsigned int i;

	if (bio->bi_ioprio || !bio->bi_client ||
	    !atomic_load_explicit(&q->has_ioprio_map, memory_order_relaxed))
		return;
	pthread_mutex_lock(&q->ioprio_lock);
	for (i = 0; q->ioprio_map && i < q->ioprio_map->nr; i++) {
		if (rule_matches(&q->ioprio_map->rules[i], bio->bi_client)) {
			bio->bi_ioprio = q->ioprio_map->rules[i].ioprio;
			break;
		}
	}
	pthread_mutex_unlock(&q->ioprio_lock);
}

void mq_free_ioprio_map(struct mq_queue *q)
{
	free(q->ioprio_map);
	q->ioprio_map = NULL;
	pthread_mutex_destroy(&q->ioprio_lock);
}
