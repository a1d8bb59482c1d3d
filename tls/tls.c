// SPDX-License-Identifier: GPL-2.0
/*
 * OpenSSL 3 for mqblkd.  One SSL_CTX for the server, TLS 1.2 and 1.3:
 *
 *   x509: DIR/server-cert.pem and DIR/server-key.pem, DIR/ca-cert.pem
 *         to verify client certificates (--tls-verify-peer);
 *   PSK:  the file psktool writes, "identity:hexkey" per line, served
 *         through the PSK server callback (TLS 1.2 PSK cipher suites and
 *         TLS 1.3 external PSKs with SHA-256).
 *
 * Sessions run on the connection's non-blocking socket (SSL_set_fd);
 * WANT_READ and WANT_WRITE go back to the event loop.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls.h"

#define PSK_MAX_KEY 256

struct psk_entry {
	char *identity;
	unsigned char key[PSK_MAX_KEY];
	size_t key_len;
};

struct tls_server {
	SSL_CTX *ctx;
	struct psk_entry *psk;
	size_t nr_psk;
	bool verify_peer;
};

struct tls_conn {
	SSL *ssl;
	bool verify_peer;
	char psk_identity[64]; /* the identity a PSK callback found */
	char peer[64];	       /* set once the handshake proved it */
	char err[256];
};

static int ex_index_server = -1;

/*
 * tls logs nothing itself: every failure goes back to its caller as one
 * line, which the front end logs.  The errno text is the untranslated
 * one, as the rest of the server's log lines use.
 */
static const char *errno_text(int errnum)
{
	const char *desc = strerrordesc_np(errnum);

	return desc ? desc : "Unknown error";
}

static void set_ossl_err(char *err, size_t len, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256];

	if (e) {
		ERR_error_string_n(e, buf, sizeof(buf));
		/* OpenSSL's text may be cut to fit; the start says enough. */
		snprintf(err, len, "%s: %.200s", what, buf);
	} else {
		snprintf(err, len, "%s: %s", what, errno_text(errno));
	}
	ERR_clear_error();
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int load_psk(struct tls_server *ts, const char *path, char *err,
		    size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int lineno = 0;

	if (!f) {
		snprintf(err, errlen, "--tls-psk %s: %s", path,
			 strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *colon, *hex, *end;
		struct psk_entry *v, *p;
		size_t n, i;

		lineno++;
		end = line + strcspn(line, "\r\n");
		*end = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		colon = strchr(line, ':');
		hex = colon ? colon + 1 : NULL;
		n = hex ? strlen(hex) : 0;
		if (!colon || colon == line || !n || n % 2 ||
		    n / 2 > PSK_MAX_KEY || colon - line >= 64) {
			snprintf(err, errlen,
				 "--tls-psk %s: line %d: expected "
				 "identity:hexkey",
				 path, lineno);
			goto fail;
		}
		v = realloc(ts->psk, (ts->nr_psk + 1) * sizeof(*v));
		if (!v) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		ts->psk = v;
		p = &v[ts->nr_psk];
		memset(p, 0, sizeof(*p));
		for (i = 0; i < n / 2; i++) {
			int hi = hexval(hex[2 * i]),
			    lo = hexval(hex[2 * i + 1]);

			if (hi < 0 || lo < 0) {
				snprintf(err, errlen,
					 "--tls-psk %s: line %d: bad hex key",
					 path, lineno);
				goto fail;
			}
			p->key[i] = (unsigned char)(hi << 4 | lo);
		}
		p->key_len = n / 2;
		*colon = '\0';
		p->identity = strdup(line);
		if (!p->identity) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		ts->nr_psk++;
	}
	fclose(f);
	if (!ts->nr_psk) {
		snprintf(err, errlen, "--tls-psk %s: no key", path);
		return -1;
	}
	return 0;
fail:
	fclose(f);
	return -1;
}

static const struct psk_entry *find_psk(const struct tls_server *ts,
					const char *identity)
{
	size_t i;

	for (i = 0; identity && i < ts->nr_psk; i++)
		if (!strcmp(ts->psk[i].identity, identity))
			return &ts->psk[i];
	return NULL;
}

static struct tls_conn *conn_of(SSL *ssl)
{
	return SSL_get_app_data(ssl);
}

/* TLS 1.2 PSK, and TLS 1.3 through OpenSSL's compatibility path. */
static unsigned int psk_server_cb(SSL *ssl, const char *identity,
				  unsigned char *psk, unsigned int max_len)
{
	const struct tls_server *ts =
		SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ex_index_server);
	const struct psk_entry *p = find_psk(ts, identity);
	struct tls_conn *tc = conn_of(ssl);

	if (!p || p->key_len > max_len)
		return 0;
	memcpy(psk, p->key, p->key_len);
	if (tc)
		snprintf(tc->psk_identity, sizeof(tc->psk_identity), "%s",
			 p->identity);
	return (unsigned int)p->key_len;
}

/*
 * TLS 1.3 external PSKs.  The old-style callback above also serves 1.3,
 * but OpenSSL then falls back to certificates when it has some; a
 * session made here wins.  The key is for SHA-256, as GnuTLS uses it.
 */
static int psk_find_session_cb(SSL *ssl, const unsigned char *id, size_t id_len,
			       SSL_SESSION **sess)
{
	static const unsigned char aes128gcm_sha256[] = {0x13, 0x01};
	const struct tls_server *ts =
		SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ex_index_server);
	struct tls_conn *tc = conn_of(ssl);
	const struct psk_entry *p = NULL;
	const SSL_CIPHER *cipher;
	SSL_SESSION *s;
	size_t i;

	*sess = NULL;
	for (i = 0; i < ts->nr_psk; i++)
		if (strlen(ts->psk[i].identity) == id_len &&
		    !memcmp(ts->psk[i].identity, id, id_len))
			p = &ts->psk[i];
	if (!p)
		return 1; /* unknown identity: no PSK, not an error */
	cipher = SSL_CIPHER_find(ssl, aes128gcm_sha256);
	s = SSL_SESSION_new();
	if (!cipher || !s ||
	    !SSL_SESSION_set1_master_key(s, p->key, p->key_len) ||
	    !SSL_SESSION_set_cipher(s, cipher) ||
	    !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
		SSL_SESSION_free(s);
		return 0;
	}
	/*
	 * Only a candidate: OpenSSL still checks the client's binder, and
	 * drops the PSK for a full handshake when the suite's hash differs.
	 */
	if (tc)
		snprintf(tc->psk_identity, sizeof(tc->psk_identity), "%s",
			 p->identity);
	*sess = s;
	return 1;
}

static int load_x509(struct tls_server *ts, const char *dir, bool verify,
		     char *err, size_t errlen)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/server-cert.pem", dir);
	if (SSL_CTX_use_certificate_chain_file(ts->ctx, path) != 1) {
		set_ossl_err(err, errlen, path);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/server-key.pem", dir);
	if (SSL_CTX_use_PrivateKey_file(ts->ctx, path, SSL_FILETYPE_PEM) != 1) {
		set_ossl_err(err, errlen, path);
		return -1;
	}
	if (SSL_CTX_check_private_key(ts->ctx) != 1) {
		set_ossl_err(err, errlen,
			     "server-key.pem does not match "
			     "server-cert.pem");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/ca-cert.pem", dir);
	if (verify) {
		if (SSL_CTX_load_verify_locations(ts->ctx, path, NULL) != 1) {
			set_ossl_err(err, errlen, path);
			return -1;
		}
		SSL_CTX_set_verify(ts->ctx,
				   SSL_VERIFY_PEER |
					   SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
				   NULL);
	}
	return 0;
}

struct tls_server *tls_server_new(const struct tls_server_opts *opts, char *err,
				  size_t errlen)
{
	struct tls_server *ts = calloc(1, sizeof(*ts));

	if (!ts) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (ex_index_server < 0)
		ex_index_server =
			SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	ts->ctx = SSL_CTX_new(TLS_server_method());
	if (!ts->ctx) {
		set_ossl_err(err, errlen, "SSL_CTX_new");
		goto fail;
	}
	SSL_CTX_set_ex_data(ts->ctx, ex_index_server, ts);
	SSL_CTX_set_min_proto_version(ts->ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ts->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
					  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* No resumption tickets: every session authenticates afresh. */
	SSL_CTX_set_num_tickets(ts->ctx, 0);
	SSL_CTX_set_options(ts->ctx, SSL_OP_NO_TICKET |
					     SSL_OP_NO_RENEGOTIATION |
					     SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_session_cache_mode(ts->ctx, SSL_SESS_CACHE_OFF);
	/*
	 * OpenSSL refuses a TLS 1.3 PSK handshake under SSL_VERIFY_PEER
	 * ("session id context uninitialized") unless sessions have a
	 * context; nothing is cached, so one fixed name will do.
	 */
	if (SSL_CTX_set_session_id_context(
		    ts->ctx, (const unsigned char *)"mqblkd", 6) != 1) {
		set_ossl_err(err, errlen, "session id context");
		goto fail;
	}
	ts->verify_peer = opts->verify_peer;

	if (opts->certificates &&
	    load_x509(ts, opts->certificates, opts->verify_peer, err, errlen))
		goto fail;
	if (opts->psk_file) {
		if (load_psk(ts, opts->psk_file, err, errlen))
			goto fail;
		SSL_CTX_set_psk_server_callback(ts->ctx, psk_server_cb);
		SSL_CTX_set_psk_find_session_callback(ts->ctx,
						      psk_find_session_cb);
		/*
		 * A TLS 1.3 PSK is for SHA-256.  OpenSSL takes the client's
		 * favourite suite (often SHA-384) when it has a certificate
		 * to fall back on, and the PSK is then unusable: prefer
		 * SHA-256 suites ourselves.
		 */
		if (SSL_CTX_set_ciphersuites(ts->ctx,
					     "TLS_AES_128_GCM_SHA256:"
					     "TLS_CHACHA20_POLY1305_SHA256:"
					     "TLS_AES_256_GCM_SHA384") != 1) {
			set_ossl_err(err, errlen, "TLS 1.3 cipher suites");
			goto fail;
		}
		SSL_CTX_set_options(ts->ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
		/*
		 * PSK suites, and certificate suites when there is one.  Not
		 * RSA-PSK: it asks a PSK client for a certificate under
		 * --tls-verify-peer, and has no forward secrecy.
		 */
		if (SSL_CTX_set_cipher_list(ts->ctx,
					    opts->certificates
						    ? "DEFAULT:PSK:!kRSAPSK"
						    : "PSK:!kRSAPSK") != 1) {
			set_ossl_err(err, errlen, "PSK cipher suites");
			goto fail;
		}
	}
	return ts;
fail:
	tls_server_free(ts);
	return NULL;
}

void tls_server_free(struct tls_server *ts)
{
	size_t i;

	if (!ts)
		return;
	SSL_CTX_free(ts->ctx);
	for (i = 0; i < ts->nr_psk; i++) {
		OPENSSL_cleanse(ts->psk[i].key, sizeof(ts->psk[i].key));
		free(ts->psk[i].identity);
	}
	free(ts->psk);
	free(ts);
}

struct tls_conn *tls_conn_new(struct tls_server *ts, int fd)
{
	struct tls_conn *tc = calloc(1, sizeof(*tc));

	if (!tc)
		return NULL;
	tc->ssl = SSL_new(ts->ctx);
	if (!tc->ssl || SSL_set_fd(tc->ssl, fd) != 1) {
		SSL_free(tc->ssl);
		free(tc);
		ERR_clear_error();
		return NULL;
	}
	SSL_set_app_data(tc->ssl, tc);
	SSL_set_accept_state(tc->ssl);
	tc->verify_peer = ts->verify_peer;
	return tc;
}

void tls_conn_free(struct tls_conn *tc)
{
	if (!tc)
		return;
	SSL_free(tc->ssl);
	free(tc);
}

/* Map an SSL_* failure; -1 with errno EAGAIN for a want. */
static int failure(struct tls_conn *tc, int r, enum tls_status *want)
{
	int e = SSL_get_error(tc->ssl, r);

	switch (e) {
	case SSL_ERROR_WANT_READ:
		*want = TLS_WANT_READ;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		*want = TLS_WANT_WRITE;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		if (!ERR_peek_error()) {
			if (!errno)
				errno = ECONNRESET;
			snprintf(tc->err, sizeof(tc->err), "%s",
				 strerror(errno));
			ERR_clear_error();
			return -2;
		}
		/* fall through */
	default:
		set_ossl_err(tc->err, sizeof(tc->err), "TLS");
		errno = EPROTO;
		return -2;
	}
}

/* Did this handshake authenticate the client with a PSK? */
static bool psk_authenticated(struct tls_conn *tc)
{
	const SSL_CIPHER *c = SSL_get_current_cipher(tc->ssl);
	int kx;

	if (!c || !tc->psk_identity[0])
		return false;
	/* 1.3: tickets are off, so a resumed session is an external PSK. */
	if (SSL_version(tc->ssl) >= TLS1_3_VERSION)
		return SSL_session_reused(tc->ssl) == 1;
	kx = SSL_CIPHER_get_kx_nid(c);
	return kx == NID_kx_psk || kx == NID_kx_ecdhe_psk ||
	       kx == NID_kx_dhe_psk;
}

/*
 * Who the client proved to be: the PSK identity of a PSK handshake, or
 * the CN of a client certificate that verified against ca-cert.pem.
 * With --tls-verify-peer a client that proved neither is refused here,
 * whatever OpenSSL's own checks let through.
 */
static bool authenticate_peer(struct tls_conn *tc)
{
	X509 *cert;

	tc->peer[0] = '\0';
	if (psk_authenticated(tc)) {
		snprintf(tc->peer, sizeof(tc->peer), "%s", tc->psk_identity);
		return true;
	}
	cert = SSL_get1_peer_certificate(tc->ssl);
	if (cert && SSL_get_verify_result(tc->ssl) == X509_V_OK) {
		if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
					      NID_commonName, tc->peer,
					      sizeof(tc->peer)) < 0)
			tc->peer[0] = '\0';
		X509_free(cert);
		return true;
	}
	X509_free(cert);
	if (!tc->verify_peer)
		return true;
	snprintf(tc->err, sizeof(tc->err),
		 "--tls-verify-peer: the client proved neither a certificate "
		 "nor a PSK identity");
	return false;
}

enum tls_status tls_handshake(struct tls_conn *tc)
{
	enum tls_status want = TLS_FAILED;
	int r;

	ERR_clear_error();
	errno = 0;
	r = SSL_accept(tc->ssl);
	if (r == 1)
		return authenticate_peer(tc) ? TLS_DONE : TLS_FAILED;
	r = failure(tc, r, &want);
	if (r == -1)
		return want;
	if (r == 0)
		snprintf(tc->err, sizeof(tc->err),
			 "peer closed during the "
			 "handshake");
	return TLS_FAILED;
}

ssize_t tls_recv(struct tls_conn *tc, void *buf, size_t len,
		 enum tls_status *want)
{
	size_t n = 0;
	int r;

	ERR_clear_error();
	errno = 0;
	r = SSL_read_ex(tc->ssl, buf, len, &n);
	if (r == 1)
		return (ssize_t)n;
	r = failure(tc, 0, want);
	return r == -2 ? -1 : r;
}

ssize_t tls_send(struct tls_conn *tc, const void *buf, size_t len,
		 enum tls_status *want)
{
	size_t n = 0;
	int r;

	ERR_clear_error();
	errno = 0;
	r = SSL_write_ex(tc->ssl, buf, len, &n);
	if (r == 1)
		return (ssize_t)n;
	r = failure(tc, 0, want);
	if (r == 0) {
		errno = EPIPE;
		snprintf(tc->err, sizeof(tc->err), "peer closed the session");
	}
	return -1;
}

bool tls_pending(struct tls_conn *tc)
{
	return SSL_pending(tc->ssl) > 0;
}

void tls_close_notify(struct tls_conn *tc)
{
	ERR_clear_error();
	SSL_shutdown(tc->ssl);
	ERR_clear_error();
}

const char *tls_peer_name(struct tls_conn *tc)
{
	return tc->peer;
}

void tls_describe(struct tls_conn *tc, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s", SSL_get_version(tc->ssl),
		 SSL_get_cipher_name(tc->ssl));
}

const char *tls_error(struct tls_conn *tc)
{
	return tc->err[0] ? tc->err : "TLS failure";
}
