// SPDX-License-Identifier: GPL-2.0
/*
 * The HTTP side of the control plane (libmicrohttpd): GET /metrics is the
 * Prometheus text of ctl_metrics(), GET /api/v1/exports the state of every
 * export as JSON (json-c) and GET / the status page built into the binary
 * (status.html, embedded at build time), which polls the JSON.  Read-only:
 * nothing here changes an export.  It listens on loopback unless the
 * operator names an address.
 */
#include <errno.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "../mq/blk-mq.h"
#include "../mq/log.h"

#define HTTP_MAX_CONNECTIONS 32
#define HTTP_TIMEOUT_S	     10

/* status-page.c, generated from status.html by CMake. */
extern const unsigned char ctl_status_html[];
extern const size_t ctl_status_html_len;

struct ctl_http {
	struct MHD_Daemon *d;
	struct ctl_ctx *ctx;
	int fd;
	unsigned int port;
	char url[INET6_ADDRSTRLEN + 16]; /* http://ADDR:PORT/ */
};

static const char *const op_names[NR_STAT_GROUPS] = {
	[STAT_READ] = "read",
	[STAT_WRITE] = "write",
	[STAT_DISCARD] = "discard",
	[STAT_FLUSH] = "flush",
};

/* A node's one-line value, under the elevator lock if it needs it. */
static int node_show(struct ctl_ctx *c, const char *export, const char *rel,
		     char *buf, size_t len)
{
	char path[CTL_LINE_MAX];
	const struct ctl_node *n;
	int r;

	snprintf(path, sizeof(path), "%s/%s", export, rel);
	n = ctl_tree_find(c->tree, path);
	if (!n || !n->ops->show)
		return -ENOENT;
	if (n->ops->elv && n->cd)
		pthread_mutex_lock(&n->cd->elv_lock);
	r = n->ops->show(n, buf, len);
	if (n->ops->elv && n->cd)
		pthread_mutex_unlock(&n->cd->elv_lock);
	return r < 0 ? r : 0;
}

/* The bracketed name of "none [mq-deadline] kyber", or the whole line. */
static void current_choice(char *s)
{
	char *open = strchr(s, '['), *close;

	if (!open)
		return;
	close = strchr(open, ']');
	if (!close)
		return;
	*close = '\0';
	memmove(s, open + 1, strlen(open + 1) + 1);
}

/* json-c objects: NULL from a failed allocation is caught at the end. */
static void put(struct json_object *o, const char *key, struct json_object *v,
		bool *failed)
{
	if (!v || json_object_object_add(o, key, v)) {
		json_object_put(v);
		*failed = true;
	}
}

static struct json_object *
export_json(struct ctl_ctx *c, const struct ctl_export *ex, bool *failed)
{
	struct mq_queue *q = ex->disk->queue;
	struct mq_queue_stats *st = &q->stats;
	struct json_object *o = json_object_new_object(), *ops;
	char val[CTL_VALUE_MAX];
	uint64_t ticks;
	unsigned int g;

	if (!o) {
		*failed = true;
		return NULL;
	}
	put(o, "name", json_object_new_string(ex->name), failed);
	put(o, "model", json_object_new_string(ex->model ? ex->model : ""),
	    failed);
	put(o, "description", json_object_new_string(ex->disk->description),
	    failed);
	val[0] = '\0';
	if (node_show(c, ex->name, "queue/scheduler", val, sizeof(val)) == 0) {
		val[sizeof(val) - 1] = '\0';
		current_choice(val);
	}
	put(o, "scheduler", json_object_new_string(val), failed);
	/* nr_requests changes under the elevator lock: read it so. */
	val[0] = '\0';
	node_show(c, ex->name, "queue/nr_requests", val, sizeof(val));
	val[sizeof(val) - 1] = '\0';
	put(o, "queue_depth", json_object_new_int64(strtoll(val, NULL, 10)),
	    failed);
	put(o, "nr_hw_queues", json_object_new_int64(q->nr_hw_queues), failed);
	put(o, "capacity_bytes",
	    json_object_new_uint64(get_capacity(ex->disk) << SECTOR_SHIFT),
	    failed);
	put(o, "read_only", json_object_new_boolean(ex->disk->read_only),
	    failed);
	put(o, "in_flight",
	    json_object_new_int64((int64_t)atomic_load(&st->in_flight[0]) +
				  atomic_load(&st->in_flight[1])),
	    failed);
	ticks = atomic_load(&st->io_ticks_ns);
	put(o, "io_ticks_seconds", json_object_new_double(ticks / 1e9), failed);
	ops = json_object_new_object();
	if (!ops) {
		*failed = true;
		return o;
	}
	for (g = 0; g < NR_STAT_GROUPS; g++) {
		struct json_object *op = json_object_new_object();

		if (!op) {
			*failed = true;
			break;
		}
		put(op, "requests",
		    json_object_new_uint64(atomic_load(&st->ios[g])), failed);
		put(op, "merges",
		    json_object_new_uint64(atomic_load(&st->merges[g])),
		    failed);
		put(op, "bytes",
		    json_object_new_uint64(
			    (uint64_t)atomic_load(&st->sectors[g])
			    << SECTOR_SHIFT),
		    failed);
		put(op, "time_seconds",
		    json_object_new_double(atomic_load(&st->nsecs[g]) / 1e9),
		    failed);
		put(op, "errors",
		    json_object_new_uint64(atomic_load(&st->errors[g])),
		    failed);
		put(ops, op_names[g], op, failed);
	}
	put(o, "ops", ops, failed);
	return o;
}

/* {"time": seconds, "exports": [...]}: a string to free, or NULL. */
static char *exports_json(struct ctl_ctx *c)
{
	struct json_object *root = json_object_new_object(), *arr;
	bool failed = false;
	struct timespec ts;
	unsigned int i;
	char *s = NULL;

	if (!root)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	put(root, "time", json_object_new_double(ts.tv_sec + ts.tv_nsec / 1e9),
	    &failed);
	arr = json_object_new_array();
	put(root, "exports", arr, &failed);
	for (i = 0; arr && i < c->nr_exports; i++) {
		struct json_object *e = export_json(c, &c->exports[i], &failed);

		if (!e || json_object_array_add(arr, e)) {
			json_object_put(e);
			failed = true;
		}
	}
	if (!failed) {
		const char *t = json_object_to_json_string_ext(
			root, JSON_C_TO_STRING_PLAIN);

		s = t ? strdup(t) : NULL;
	}
	json_object_put(root);
	return s;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int code,
			     const char *type, void *data, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, data, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(data);
		return MHD_NO;
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) ==
		    MHD_NO ||
	    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
				    "no-store") == MHD_NO) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned int code,
			    const char *msg)
{
	return reply(conn, code, "text/plain; charset=utf-8", (void *)msg,
		     strlen(msg), MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct ctl_http *h = cls;

	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "only GET and HEAD\n");
	/* A GET with a body: refuse it rather than read it. */
	if (*upload_data_size)
		return MHD_NO;
	if (!strcmp(url, "/metrics")) {
		struct ctl_buf out = {0};

		pthread_rwlock_rdlock(&h->ctx->lock);
		ctl_metrics(h->ctx->exports, h->ctx->nr_exports, &out);
		pthread_rwlock_unlock(&h->ctx->lock);
		if (out.failed) {
			ctl_buf_free(&out);
			return text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "out of memory\n");
		}
		/* out.data belongs to the response now. */
		return reply(conn, MHD_HTTP_OK,
			     "text/plain; version=0.0.4; charset=utf-8",
			     out.data ? out.data : strdup(""), out.len,
			     MHD_RESPMEM_MUST_FREE);
	}
	if (!strcmp(url, "/api/v1/exports")) {
		char *s;

		pthread_rwlock_rdlock(&h->ctx->lock);
		s = exports_json(h->ctx);
		pthread_rwlock_unlock(&h->ctx->lock);

		if (!s)
			return text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "out of memory\n");
		return reply(conn, MHD_HTTP_OK, "application/json", s,
			     strlen(s), MHD_RESPMEM_MUST_FREE);
	}
	if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
		return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
			     (void *)ctl_status_html, ctl_status_html_len,
			     MHD_RESPMEM_PERSISTENT);
	return text(conn, MHD_HTTP_NOT_FOUND,
		    "not found (/, /metrics, /api/v1/exports)\n");
}

/* "PORT", "ADDR:PORT", "[V6]:PORT" into host (loopback if none) and port. */
static int split_listen(const char *spec, char *host, size_t hlen,
			const char **port, struct mq_err *e)
{
	const char *colon;
	size_t n;

	if (spec[0] == '[') {
		const char *end = strchr(spec, ']');

		if (!end || end[1] != ':')
			return mq_err_set(e, "http: '%s': expected [ADDR]:PORT",
					  spec);
		n = end - spec - 1;
		colon = end + 1;
		spec++;
	} else {
		colon = strrchr(spec, ':');
		n = colon ? (size_t)(colon - spec) : 0;
	}
	if (n >= hlen)
		return mq_err_set(e, "http: '%s': address too long", spec);
	if (n)
		memcpy(host, spec, n);
	else
		strcpy(host, "127.0.0.1"); /* loopback unless told otherwise */
	host[n ? n : strlen(host)] = '\0';
	*port = colon ? colon + 1 : spec;
	if (!**port || strspn(*port, "0123456789") != strlen(*port) ||
	    strtoul(*port, NULL, 10) > 65535)
		return mq_err_set(e, "http: '%s': expected [ADDR:]PORT", spec);
	return 0;
}

static int http_listen(const char *spec, struct ctl_http *h, struct mq_err *e)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
	};
	struct addrinfo *res, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256];
	const char *port = NULL;
	int fd = -1, err = 0, r;
	const int one = 1;

	if (split_listen(spec, host, sizeof(host), &port, e))
		return -1;
	r = getaddrinfo(host, port, &hints, &res);
	if (r)
		return mq_err_set(e, "http: %s: %s", spec, gai_strerror(r));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
			       sizeof(one)) ||
		    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16)) {
			err = errno;
			close(fd);
			fd = -1;
			continue;
		}
		break;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return mq_err_set(e, "http: cannot listen on %s: %s", spec,
				  mq_strerror(err));
	if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		mq_err_set(e, "http: getsockname: %s", mq_strerror(errno));
		close(fd);
		return -1;
	}
	h->port = ntohs(ss.ss_family == AF_INET6
				? ((struct sockaddr_in6 *)&ss)->sin6_port
				: ((struct sockaddr_in *)&ss)->sin_port);
	if (getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), NULL, 0,
			NI_NUMERICHOST))
		snprintf(host, sizeof(host), "?");
	snprintf(h->url, sizeof(h->url),
		 ss.ss_family == AF_INET6 ? "http://[%.46s]:%u/"
					  : "http://%.46s:%u/",
		 host, h->port);
	return fd;
}

struct ctl_http *ctl_http_start(const char *spec, struct ctl_ctx *c,
				struct mq_err *e)
{
	struct ctl_http *h = calloc(1, sizeof(*h));

	if (!h) {
		mq_err_set(e, "http: out of memory");
		return NULL;
	}
	h->ctx = c;
	h->fd = http_listen(spec, h, e);
	if (h->fd < 0) {
		free(h);
		return NULL;
	}
	/*
	 * A thread a connection: /api/v1/exports waits for a scheduler
	 * switch (it reads the scheduler under the elevator lock), and, as
	 * on the control socket, that holds up only its own client, not
	 * /metrics or the status page of the others.
	 */
	h->d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD |
			MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
		0, NULL, NULL, handle, h, MHD_OPTION_LISTEN_SOCKET, h->fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_MAX_CONNECTIONS,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_TIMEOUT_S,
		MHD_OPTION_END);
	if (!h->d) {
		mq_err_set(e, "http: cannot start the server on %s", spec);
		close(h->fd);
		free(h);
		return NULL;
	}
	pr_info("http: listening on %s (metrics, api/v1/exports, status page)",
		h->url);
	return h;
}

unsigned int ctl_http_port(const struct ctl_http *h)
{
	return h->port;
}

void ctl_http_stop(struct ctl_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d); /* waits for its thread and handlers */
	close(h->fd);
	free(h);
}
