/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TLS for mqblkd through OpenSSL 3: one server context made at start-up
 * (x509 certificates, TLS-PSK, or both), and one session per connection
 * that upgrades after NBD_OPT_STARTTLS.  Every call is non-blocking; the
 * caller's event loop waits for what TLS_WANT_* asks.
 */
#ifndef MQBLK_TLS_H
#define MQBLK_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tls_server;
struct tls_conn;

struct tls_server_opts {
	const char *certificates; /* DIR: ca-cert.pem, server-cert.pem,
				     server-key.pem; NULL: none */
	const char *psk_file;	  /* psktool's "user:hexkey" lines */
	bool verify_peer;	  /* require a client certificate */
};

/* NULL with err filled (one line) on failure. */
struct tls_server *tls_server_new(const struct tls_server_opts *opts, char *err,
				  size_t errlen);
void tls_server_free(struct tls_server *ts);

enum tls_status {
	TLS_DONE = 0,
	TLS_WANT_READ = 1,
	TLS_WANT_WRITE = 2,
	TLS_FAILED = -1,
};

/* A server session on a connected non-blocking socket. */
struct tls_conn *tls_conn_new(struct tls_server *ts, int fd);
void tls_conn_free(struct tls_conn *tc);

/* Drive the handshake; on TLS_FAILED, tls_error() says why. */
enum tls_status tls_handshake(struct tls_conn *tc);

/*
 * > 0: bytes moved.  0: the peer closed (recv only).  -1: errno is
 * EAGAIN and *want says which readiness to wait for, or another errno
 * for a failure.
 */
ssize_t tls_recv(struct tls_conn *tc, void *buf, size_t len,
		 enum tls_status *want);
ssize_t tls_send(struct tls_conn *tc, const void *buf, size_t len,
		 enum tls_status *want);
/* Decrypted bytes held inside the session, not yet read. */
bool tls_pending(struct tls_conn *tc);
/* Best effort close_notify; never blocks. */
void tls_close_notify(struct tls_conn *tc);

/* The PSK identity or the client certificate's CN, "" if none. */
const char *tls_peer_name(struct tls_conn *tc);
/* "TLSv1.3 TLS_AES_256_GCM_SHA384" for logs. */
void tls_describe(struct tls_conn *tc, char *buf, size_t len);
const char *tls_error(struct tls_conn *tc);

#endif
