/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mqblkd: the native NBD server.  What its files share.
 *
 *   main.c          command line and configuration
 *   exports.c       the export table (server/exports) as mqblkd serves it:
 *                   refcounted devices, handshake lookups, SIGHUP reload
 *   server.c        listeners, accept, socket activation, signals, drain
 *   loop.c          event-loop threads, each a "CPU" with its own sw queues
 *   conn.c          one connection: buffered socket and TLS I/O
 *   parser.c        the byte-level state machine over the input buffer
 *   handshake.c     fixed newstyle option haggling
 *   transmission.c  commands become bios; completions become replies
 *   reply.c         option replies, simple and structured replies
 *
 * Threads: the main thread accepts and hands each connection to one loop
 * thread, which owns it from then on.  Device threads complete bios; the
 * completion reaches the connection's loop through an ev_async wake-up,
 * unless it happened inline on the loop thread itself.
 */
#ifndef MQBLKD_H
#define MQBLKD_H

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "backends/bdev.h"
#include "backends/device.h"
#include "adaptive-poll.h"
#include "nbd-proto.h"
#include "server/exports/exports.h"

/* Limits: see docs/mqblkd.md. */
#define MQBLKD_MAX_PAYLOAD	  (64u << 20) /* READ/WRITE, the advertised max */
#define MQBLKD_WRITE_SKIP_LIMIT	  (128u << 20) /* refused payloads consumed */
#define MQBLKD_MAX_OPT_LEN	  (64u << 10)  /* option data we read */
#define MQBLKD_OPT_SKIP_LIMIT	  (1u << 20)   /* option data skipped */
#define MQBLKD_MAX_OPTIONS	  32
#define MQBLKD_OPTIONS_PER_EXPORT 4
#define MQBLKD_INBUF_SIZE	  (256u << 10)
#define MQBLKD_MAX_INFLIGHT	  1024 /* per connection */
/*
 * What one connection may hold before its requests are no longer read:
 * payload buffers of requests in flight (WRITE data received, READ
 * buffers allocated) plus reply bytes queued.  One request may cross it.
 */
#define MQBLKD_MAX_BUFFERED    (64u << 20)
#define MQBLKD_MAX_READ_CHUNKS 64
#define MQBLKD_MAX_EXTENTS     1024
#define MQBLKD_DRAIN_TIMEOUT   30.0

/*
 * One cause of lines a client can repeat at will (a refused connection,
 * a failed accept): at most one line per second, which carries the
 * number of lines suppressed since the previous one.
 */
struct mqblkd_ratelimit {
	pthread_mutex_t lock;
	int64_t begin_ns; /* when the last line was printed */
	unsigned long missed;
	bool printed;
};
#define MQBLKD_RATELIMIT_INIT                                                  \
	{                                                                      \
		.lock = PTHREAD_MUTEX_INITIALIZER                              \
	}

enum tls_mode {
	TLS_MODE_OFF,
	TLS_MODE_ON,
	TLS_MODE_REQUIRE,
};

struct mqblkd_config {
	const char *port;      /* NULL: not given */
	const char *bind_addr; /* NULL: any */
	const char *unix_path;
	bool foreground;
	const char *pidfile;
	unsigned int threads;
	unsigned int poll_us; /* busy-poll window after activity, 0: off */
	const char *control;
	const char *control_group;    /* NULL: the owner's uid and root only */
	unsigned int control_timeout; /* seconds a switch waits to drain */
	const char *metrics;   /* --metrics [ADDR:]PORT: HTTP; NULL: none */
	const char *trace_dir; /* NULL: trace start is refused */
	bool readonly;
	unsigned int max_connections;
	double handshake_timeout;
	enum tls_mode tls;
	const char *tls_certificates;
	const char *tls_psk;
	bool tls_verify_peer;
	int verbose;
	const char *config_file;
	bool demo;
	const char *user;  /* -u USER: serve as USER once listening */
	const char *group; /* -g GROUP: and as GROUP */
	/* sockets systemd passed from fd 3 (socket activation), 0: none */
	unsigned int nr_listen_fds;
	/* DEVICE [KEY=VALUE...] from the command line */
	char **args;
	int nr_args;
};

/* ------------------------------------------------------------------ */
/* privs.c: -u USER, -g GROUP                                          */

struct mqblkd_ids {
	bool set_uid, set_gid;
	uid_t uid;
	gid_t gid;
	char name[256]; /* the user's name for initgroups; "" if none */
};

/* Look USER and GROUP (names or numbers; NULL: not given) up: 0, or -1
 * with one line on stderr. */
int mqblkd_ids_resolve(const char *user, const char *group,
		       struct mqblkd_ids *ids);
/* Become them for good (groups, gid, then uid): 0, or -1 logged. */
int mqblkd_drop_privileges(const struct mqblkd_ids *ids);

/* ------------------------------------------------------------------ */
/* exports.c                                                           */

struct nbd_server;

/*
 * One device and what it serves (server/exports), refcounted: the export
 * table holds one reference, and so does each connection that chose one
 * of its exports (GO, EXPORT_NAME) or selected a meta context on one.
 * The last put hands it to the main thread (nbd_exports_reap), which
 * takes its nodes out of the control tree, flushes and destroys it.
 */
struct nbd_dev {
	struct mq_export_dev ed; /* first: server/exports allocates it all */
	atomic_uint refs;
	struct nbd_dev *next_dead;
	/* main thread: removed by a reload, still serving connections */
	bool dropped;
	struct nbd_dev *next_dropped;
};

/*
 * mqblkd's export table (struct mq_exports) is what a handshake may
 * choose, and holds a reference on each of its devices.  A reload builds
 * a new one and swaps it in whole under nbd_server.exports_lock.
 */

/*
 * Build the export table from the configuration.  On failure log one
 * line (naming the section or key) and return -1.
 */
int nbd_exports_build(const struct mqblkd_config *cfg, struct mq_exports *ex);
/*
 * Drop the table's references: devices nobody else holds go to the main
 * thread's list (nbd_exports_reap frees them).
 */
void nbd_exports_destroy(struct nbd_server *srv, struct mq_exports *ex);
/* Flush every persistent backend; returns the first error or 0. */
int nbd_exports_sync(struct mq_exports *ex);

/*
 * Handshakes (loop threads).  The export called name ("" is the default
 * export, the first) with a reference on its device, or NULL if none.
 */
const struct mq_export *nbd_export_get(struct nbd_server *srv, const char *name,
				       size_t len);
/* Drop that reference; NULL is ignored.  Any thread. */
void nbd_export_put(struct nbd_server *srv, const struct mq_export *e);
/* "a, b, c" for error lines. */
void nbd_export_names(struct nbd_server *srv, char *buf, size_t len);
unsigned int nbd_exports_count(struct nbd_server *srv);
/*
 * Call fn on every export of the table, in order, with the table
 * locked (fn must not block); stops at the first non-zero return.
 */
int nbd_exports_each(struct nbd_server *srv,
		     int (*fn)(void *arg, const struct mq_export *e),
		     void *arg);

/*
 * SIGHUP, on the main thread: read -c FILE again.  A new section
 * becomes a new export; one gone is no longer offered, its connections
 * go on and its device goes with the last of them; a changed one is
 * refused with a line naming its keys and serves on unchanged.  A file
 * that does not parse, or a new device that cannot be made, changes
 * nothing.  Without -c: a line saying there is nothing to reload.
 * Every outcome is logged; returns 0 if the table is the file's.
 */
int nbd_exports_reload(struct nbd_server *srv);
/* The main thread: destroy the devices whose last reference went. */
void nbd_exports_reap(struct nbd_server *srv);

/* ------------------------------------------------------------------ */
/* the server                                                          */

struct tls_server;
struct tls_conn;
struct nbd_loop;
struct ctl_server;

struct nbd_server {
	const struct mqblkd_config *cfg;
	/* the table; its pointer changes under exports_lock (a reload) */
	pthread_mutex_t exports_lock;
	struct mq_exports *exports;
	struct ctl_server *ctl; /* NULL: no control tree */
	/* devices whose last reference went, for the main thread */
	pthread_mutex_t dead_lock;
	struct nbd_dev *dead;
	struct ev_loop *main_ev; /* NULL until it runs */
	ev_async reaper;
	struct nbd_dev *dropped; /* main thread only */
	struct tls_server *tls;	 /* NULL when --tls=off */
	struct nbd_loop *loops;
	unsigned int nr_loops;
	atomic_uint nr_conns;
	atomic_uint_fast64_t next_client_id;
	atomic_bool draining;
	/* an error line any client can cause at will: one a second */
	struct mqblkd_ratelimit rl_unknown_export;
};

/* Zero srv and set up its locks, with the table ex (owned from now). */
int nbd_server_init(struct nbd_server *srv, const struct mqblkd_config *cfg,
		    struct mq_exports *ex);
/* Drop the table, destroy every device and the locks (loops stopped). */
void nbd_server_fini(struct nbd_server *srv);

/* ------------------------------------------------------------------ */
/* requests                                                            */

struct nbd_conn;

/* One queued piece of output: iovecs written in order, then released. */
struct nbd_wbuf {
	struct nbd_wbuf *next;
	struct iovec *iov;
	unsigned int niov;
	unsigned int cur; /* first iovec not yet fully written */
	void (*release)(struct nbd_wbuf *wb);
};

struct nbd_req {
	struct nbd_conn *conn;
	struct nbd_req *next_done; /* the loop's completion stack */
	uint64_t handle;
	uint64_t offset;
	uint32_t count;
	uint16_t cmd;
	uint16_t flags;
	void *buf; /* READ and WRITE data, MQBLKD_MAX_PAYLOAD at most */
	size_t buf_cap;
	bool large;	      /* counted in the loop's nr_large */
	struct mq_bdev_io io; /* the I/O, through the device layer */
	uint32_t nr_desc;     /* BLOCK_STATUS descriptors in extra */

	/* the reply */
	struct nbd_wbuf wb;
	struct iovec iov_inline[3];
	uint8_t hdr[64];
	uint8_t *extra; /* chunk headers or extent descriptors */
};

/* ------------------------------------------------------------------ */
/* connections                                                         */

enum rx_state {
	RX_PAUSED,	 /* read nothing (TLS switch, closing) */
	RX_CLIENT_FLAGS, /* 4 bytes */
	RX_OPT_HDR,	 /* 16 bytes */
	RX_OPT_DATA,	 /* optlen bytes into optbuf */
	RX_OPT_SKIP,	 /* optlen bytes thrown away */
	RX_REQ_HDR,	 /* 28 bytes */
	RX_REQ_DATA,	 /* a WRITE payload into its buffer */
	RX_REQ_SKIP,	 /* a refused WRITE payload thrown away */
};

enum conn_phase {
	PH_HANDSHAKE,
	PH_TLS_SWITCH, /* STARTTLS acknowledged; TLS handshake next */
	PH_TRANSMISSION,
	PH_CLOSING, /* no more input; close once output and I/O are done */
	PH_DEAD,    /* socket gone; free once I/O is done */
};

struct nbd_conn {
	struct nbd_server *srv;
	struct nbd_loop *loop;
	int fd; /* -1: a buffer-fed connection (fuzzing) */
	struct mq_client client;
	enum conn_phase phase;

	ev_io io;
	unsigned int io_events;
	ev_timer hs_timer;

	/* input */
	uint8_t *inbuf;
	size_t in_start, in_end;
	enum rx_state rx;
	uint8_t *rx_ptr;
	size_t rx_need;
	uint64_t skip_left;
	bool rx_after_direct; /* the last payload went straight in */
	uint8_t hdr[32];

	/* handshake */
	uint32_t cflags;
	uint32_t opt;
	uint32_t optlen;
	uint32_t opt_refusal; /* reply after skipping the option data */
	uint8_t *optbuf;
	unsigned int nr_options;
	bool structured;
	/*
	 * The client asked for NBD_INFO_BLOCK_SIZE in its GO, so it obeys
	 * the disk's minimum and is refused what is finer.  Otherwise it
	 * gets the default constraints (a minimum of 1): misaligned
	 * requests are served by read-modify-write (backends/bdev.h).
	 */
	bool block_size_agreed;
	bool meta_base_alloc;
	const struct mq_export *meta_export;

	/* transmission */
	const struct mq_export *exp;
	uint16_t eflags;
	struct nbd_req *rx_req; /* WRITE whose payload is being read */
	uint64_t skip_handle;
	uint16_t skip_cmd;
	int skip_err;
	unsigned int inflight;	   /* requests not yet replied (loop thread) */
	size_t req_bytes;	   /* payload buffers of live requests */
	struct nbd_req *req_cache; /* freed requests, kept for reuse */
	unsigned int nr_req_cache;
	size_t req_cache_bytes; /* their buffers */

	/* output */
	struct nbd_wbuf *out_head;
	struct nbd_wbuf **out_tail;
	size_t out_bytes;
	unsigned int out_queued; /* replies queued since the last flush */

	/* TLS */
	struct tls_conn *tls;
	bool tls_active;
	int tls_want;	/* enum tls_status the session waits for */
	uint8_t *stage; /* small writes gathered into one record */
	size_t stage_off, stage_len;

	/* the loop's lists */
	TAILQ_ENTRY(nbd_conn) link;
	struct nbd_conn *dirty_next;
	bool dirty;
	bool cork_ok; /* a Unix socket: replies may be held (conn.c) */
	bool corked;  /* replies held back while the client catches up */
	ev_tstamp corked_since;
	bool counted; /* holds a place in srv->nr_conns */
};

/* conn.c */
struct nbd_conn *nbd_conn_new(struct nbd_loop *loop, int fd,
			      const struct mq_client *client);
/* Queue bytes (copied) for the client. */
int nbd_conn_send_copy(struct nbd_conn *c, const void *data, size_t len);
void nbd_conn_queue(struct nbd_conn *c, struct nbd_wbuf *wb);
/* Ask the loop to flush and re-arm this connection before it sleeps. */
void nbd_conn_mark_dirty(struct nbd_conn *c);
/* Called by the loop for dirty connections: flush, resume input. */
void nbd_conn_service(struct nbd_conn *c);
/* Stop reading; close once in-flight requests are answered and sent. */
void nbd_conn_close_after_flush(struct nbd_conn *c, const char *why);
/* Drop the socket now; in-flight requests are waited for, not answered. */
void nbd_conn_kill(struct nbd_conn *c, const char *why);
/* Free if nothing refers to it any more.  Returns true if freed. */
bool nbd_conn_reap(struct nbd_conn *c);
/* Drain: close idle handshakes, let transmission finish. */
void nbd_conn_drain(struct nbd_conn *c);
/* Put the socket under TLS once the STARTTLS reply is out. */
void nbd_conn_start_tls(struct nbd_conn *c);
/* Buffer-fed connections (the fuzzer): append input, drop output. */
size_t nbd_conn_feed(struct nbd_conn *c, const void *data, size_t len);
void nbd_conn_discard_output(struct nbd_conn *c);
/* Mid-batch: write what is queued if enough has piled up. */
void nbd_conn_flush_early(struct nbd_conn *c);

/* parser.c */
void nbd_rx_expect(struct nbd_conn *c, enum rx_state st, void *ptr, size_t len);
void nbd_rx_skip(struct nbd_conn *c, enum rx_state st, uint64_t len);
/* Consume what the input buffer holds. */
void nbd_conn_parse(struct nbd_conn *c);
/* Where the next bytes from the socket may go straight to. */
bool nbd_rx_direct(struct nbd_conn *c, void **ptr, size_t *len);
void nbd_rx_direct_done(struct nbd_conn *c, size_t n);
size_t nbd_rx_read_len(struct nbd_conn *c, size_t room);
bool nbd_rx_paused(const struct nbd_conn *c);

/* handshake.c */
void nbd_hs_start(struct nbd_conn *c);
void nbd_hs_client_flags(struct nbd_conn *c);
void nbd_hs_option_header(struct nbd_conn *c);
void nbd_hs_option(struct nbd_conn *c);
void nbd_hs_option_skipped(struct nbd_conn *c);
/* The TLS handshake finished: forget everything negotiated before. */
void nbd_hs_tls_done(struct nbd_conn *c);

/* transmission.c */
void nbd_tx_request(struct nbd_conn *c);
void nbd_tx_write_payload(struct nbd_conn *c);
void nbd_tx_write_skipped(struct nbd_conn *c);
/* A completion popped from the loop's stack, on the loop thread. */
void nbd_req_finish(struct nbd_req *req);
void nbd_req_free(struct nbd_req *req);
void nbd_req_cache_drop(struct nbd_conn *c);
uint16_t nbd_export_eflags(const struct mq_export *exp, bool structured);

/* reply.c */
int nbd_opt_reply(struct nbd_conn *c, uint32_t opt, uint32_t type,
		  const void *data, size_t len);
int nbd_opt_reply_msg(struct nbd_conn *c, uint32_t opt, uint32_t type,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Queue req's reply (its status and data); req is freed once sent. */
void nbd_reply_request(struct nbd_req *req, int err);
/* A reply for a request that never got a struct nbd_req. */
void nbd_reply_error(struct nbd_conn *c, uint64_t handle, uint16_t cmd, int err,
		     const char *msg);
void nbd_reply_block_status(struct nbd_req *req);
/* A simple success reply with no payload (CACHE). */
void nbd_reply_ok(struct nbd_conn *c, uint64_t handle);

/* loop.c */
struct nbd_loop {
	struct nbd_server *srv;
	unsigned int index;
	struct ev_loop *ev;
	pthread_t thread;
	bool started;
	ev_async wake;
	ev_prepare prepare;
	ev_idle poll;	    /* active while the loop spins */
	double poll_s;	    /* the window; 0: never poll */
	double last_active; /* ev_now() of the last input or completion */
	/* Adaptive polling (adaptive-poll.h); loop thread only. */
	struct nbd_poll_state poll_state;
	bool spin_ok;		 /* the last decision: may spin */
	double slept_at;	 /* when the loop last went to sleep */
	double sampled_at;	 /* when nr_running was last read */
	unsigned int nr_running; /* /proc/loadavg's running count, or 0 */
	/* Requests submitted and not yet finished, of every connection. */
	unsigned int nr_awaited;
	/* Requests moving NBD_POLL_LARGE_IO bytes or more, header to reply. */
	unsigned int nr_large;
	unsigned int nr_cpus; /* CPUs the server may use */
	ev_timer drain_timer;
	_Atomic(struct nbd_req *) done;
	/*
	 * Threads inside nbd_loop_complete: the last completion is pushed
	 * before its thread wakes the loop, and the loop may end in between;
	 * nbd_loop_destroy waits for them.
	 */
	atomic_uint completers;
	pthread_mutex_t lock;
	struct nbd_incoming *incoming; /* under lock */
	atomic_bool drain_requested;
	bool draining;
	TAILQ_HEAD(, nbd_conn) conns;
	struct nbd_conn *dirty;
	atomic_uint nr_conns;
};

struct nbd_incoming {
	struct nbd_incoming *next;
	int fd;
	struct mq_client client;
};

int nbd_loop_init(struct nbd_loop *l, struct nbd_server *srv,
		  unsigned int index);
int nbd_loop_start(struct nbd_loop *l);
int nbd_loop_join(struct nbd_loop *l); /* -1: its counts did not balance */
void nbd_loop_destroy(struct nbd_loop *l);
/* From the main thread: a new connection for this loop. */
int nbd_loop_hand_over(struct nbd_loop *l, int fd,
		       const struct mq_client *client);
void nbd_loop_request_drain(struct nbd_loop *l);
/* Any thread: a request finished. */
void nbd_loop_complete(struct nbd_loop *l, struct nbd_req *req);
/* Run completions and dirty connections (the fuzzer calls this). */
void nbd_loop_run_pending(struct nbd_loop *l);
/*
 * Input or a completion arrived: (re)open the busy-poll window, and
 * decide whether the loop may spin in it (adaptive-poll.h).
 */
void nbd_loop_note_activity(struct nbd_loop *l);
/*
 * Is the busy-poll window open and is the loop spinning in it (it will
 * look again very soon)?
 */
bool nbd_loop_polling(const struct nbd_loop *l);
/* The loop whose thread this is, or NULL. */
struct nbd_loop *nbd_current_loop(void);
void nbd_set_current_loop(struct nbd_loop *l);

/* server.c */
struct server_state;
/*
 * systemd socket activation, before anything forks: when LISTEN_PID is
 * this process, take LISTEN_FDS sockets from fd 3 into
 * cfg->nr_listen_fds.  -1 with a line on stderr when they are unusable.
 */
int mqblkd_socket_activation(struct mqblkd_config *cfg);
/* Open the listeners (or take systemd's); errors are logged. */
int mqblkd_listen(struct nbd_server *srv, struct server_state **stp);
/*
 * One line at the default verbosity naming each listener as an NBD URI
 * (nbd://127.0.0.1:10809/, nbd+unix:///?socket=/run/x.sock; nbds with
 * --tls=require), like nbdkit's --print-uri.
 */
void mqblkd_print_uris(struct server_state *st);
/* Start the loops and serve until SIGTERM/SIGINT, then drain. */
int mqblkd_run(struct nbd_server *srv, struct server_state *st);

/* logging: errors, warnings and notices always, the rest with -v */
void mqblkd_log_init(int verbose, bool use_syslog);
void mqblkd_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* At the default verbosity, at syslog's LOG_NOTICE: facts an operator
 * wants without -v (where the server listens). */
void mqblkd_log_notice(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/*
 * Quote what may come from a client for a log line: backslash, control
 * bytes and DEL become \\ and \xNN.  Stops at what fits; always ends
 * out with NUL; returns its length.  Every log line goes through it.
 */
size_t mqblkd_escape(char *out, size_t outlen, const char *in, size_t inlen);
void mqblkd_log_rl(struct mqblkd_ratelimit *rl, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* At exit: one line with the lines suppressed since the last one. */
void mqblkd_ratelimit_flush(struct mqblkd_ratelimit *rl, int level,
			    const char *cause);
#define log_err(...)   mqblkd_log(0, __VA_ARGS__)
#define log_warn(...)  mqblkd_log(1, __VA_ARGS__)
#define log_info(...)  mqblkd_log(2, __VA_ARGS__)
#define log_debug(...) mqblkd_log(3, __VA_ARGS__)

#endif
