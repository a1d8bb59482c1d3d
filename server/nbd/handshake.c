// SPDX-License-Identifier: GPL-2.0
/*
 * Fixed newstyle option haggling.  Each option is read whole (up to
 * MQBLKD_MAX_OPT_LEN) or skipped, then answered.  What the spec leaves
 * open is decided as nbdkit decides it: more than MQBLKD_MAX_OPTIONS
 * options (plus MQBLKD_OPTIONS_PER_EXPORT for each export, since
 * `nbdinfo --list` asks INFO and LIST_META_CONTEXT of every one), a bad
 * magic or unknown client flags end the connection;
 * malformed option data gets NBD_REP_ERR_INVALID.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqblkd.h"

static const uint8_t zeroes[124];

void nbd_hs_start(struct nbd_conn *c)
{
	uint8_t greeting[18];

	put_be64(greeting, NBD_MAGIC);
	put_be64(greeting + 8, NBD_IHAVEOPT);
	put_be16(greeting + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
	c->phase = PH_HANDSHAKE;
	if (nbd_conn_send_copy(c, greeting, sizeof(greeting)))
		return;
	nbd_rx_expect(c, RX_CLIENT_FLAGS, c->hdr, 4);
}

void nbd_hs_client_flags(struct nbd_conn *c)
{
	c->cflags = get_be32(c->hdr);
	if (c->cflags & ~(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES)) {
		nbd_conn_kill(c, "unknown client flags");
		return;
	}
	/* TLS needs fixed newstyle; without it we cannot require it. */
	if (c->srv->cfg->tls == TLS_MODE_REQUIRE &&
	    !(c->cflags & NBD_FLAG_C_FIXED_NEWSTYLE)) {
		nbd_conn_kill(c, "TLS is required but the client is not "
				 "fixed newstyle");
		return;
	}
	nbd_rx_expect(c, RX_OPT_HDR, c->hdr, NBD_OPT_HDR_LEN);
}

static void next_option(struct nbd_conn *c)
{
	if (c->phase == PH_HANDSHAKE)
		nbd_rx_expect(c, RX_OPT_HDR, c->hdr, NBD_OPT_HDR_LEN);
}

/* Throw the option data away, then answer with type. */
static void refuse_after_skip(struct nbd_conn *c, uint32_t type)
{
	c->opt_refusal = type;
	nbd_rx_skip(c, RX_OPT_SKIP, c->optlen);
}

void nbd_hs_option_header(struct nbd_conn *c)
{
	const struct mqblkd_config *cfg = c->srv->cfg;

	if (get_be64(c->hdr) != NBD_IHAVEOPT) {
		nbd_conn_kill(c, "bad option magic");
		return;
	}
	c->opt = get_be32(c->hdr + 8);
	c->optlen = get_be32(c->hdr + 12);
	if (++c->nr_options >
	    MQBLKD_MAX_OPTIONS +
		    MQBLKD_OPTIONS_PER_EXPORT * nbd_exports_count(c->srv)) {
		nbd_conn_kill(c, "too many options");
		return;
	}
	log_debug("client %llu: option %s (%u), %u bytes",
		  (unsigned long long)c->client.id, nbd_opt_name(c->opt),
		  c->opt, c->optlen);

	if (c->opt == NBD_OPT_EXPORT_NAME) {
		/* It cannot be refused with an error reply. */
		if (c->optlen > NBD_MAX_STRING) {
			nbd_conn_kill(c, "export name too long");
			return;
		}
		if (cfg->tls == TLS_MODE_REQUIRE && !c->tls_active) {
			nbd_conn_kill(c, "NBD_OPT_EXPORT_NAME without TLS");
			return;
		}
	}
	if (c->optlen > MQBLKD_MAX_OPT_LEN) {
		if (c->optlen > MQBLKD_OPT_SKIP_LIMIT) {
			nbd_conn_kill(c, "option data too long");
			return;
		}
		refuse_after_skip(c, NBD_REP_ERR_TOO_BIG);
		return;
	}
	if (cfg->tls == TLS_MODE_REQUIRE && !c->tls_active &&
	    c->opt != NBD_OPT_STARTTLS && c->opt != NBD_OPT_ABORT) {
		refuse_after_skip(c, NBD_REP_ERR_TLS_REQD);
		return;
	}
	if (atomic_load(&c->srv->draining) && c->opt != NBD_OPT_ABORT) {
		refuse_after_skip(c, NBD_REP_ERR_SHUTDOWN);
		return;
	}
	if (!c->optbuf) {
		c->optbuf = malloc(MQBLKD_MAX_OPT_LEN + 1);
		if (!c->optbuf) {
			nbd_conn_kill(c, "out of memory");
			return;
		}
	}
	nbd_rx_expect(c, RX_OPT_DATA, c->optbuf, c->optlen);
}

void nbd_hs_option_skipped(struct nbd_conn *c)
{
	if (nbd_opt_reply(c, c->opt, c->opt_refusal, NULL, 0))
		return;
	next_option(c);
}

/* Strings in options: at most 4096 bytes and no NUL. */
static bool valid_string(const uint8_t *s, uint32_t len)
{
	return len <= NBD_MAX_STRING && !memchr(s, '\0', len);
}

static void enter_transmission(struct nbd_conn *c, const struct mq_export *e)
{
	c->exp = e; /* with its reference, until the connection ends */
	c->eflags = nbd_export_eflags(e, c->structured);
	if (c->meta_export != e)
		c->meta_base_alloc = false;
	nbd_export_put(c->srv, c->meta_export);
	c->meta_export = NULL;
	c->phase = PH_TRANSMISSION;
	if (c->fd >= 0)
		ev_timer_stop(c->loop->ev, &c->hs_timer);
	free(c->optbuf);
	c->optbuf = NULL;
	log_info("client %llu (%s): export '%s'%s%s",
		 (unsigned long long)c->client.id, c->client.addr, e->name,
		 c->structured ? ", structured replies" : "",
		 c->tls_active ? ", TLS" : "");
	nbd_rx_expect(c, RX_REQ_HDR, c->hdr, NBD_REQUEST_LEN);
}

static void opt_export_name(struct nbd_conn *c)
{
	const struct mq_export *e;
	uint8_t reply[10];
	char names[512];

	if (memchr(c->optbuf, '\0', c->optlen)) {
		nbd_conn_kill(c, "export name contains NUL");
		return;
	}
	e = nbd_export_get(c->srv, (char *)c->optbuf, c->optlen);
	if (!e) {
		nbd_export_names(c->srv, names, sizeof(names));
		c->optbuf[c->optlen] = '\0';
		mqblkd_log_rl(&c->srv->rl_unknown_export, 0,
			      "client %llu: unknown export '%s' (exports: %s)",
			      (unsigned long long)c->client.id,
			      (char *)c->optbuf, names);
		nbd_conn_kill(c, "unknown export");
		return;
	}
	put_be64(reply, get_capacity(e->disk) << SECTOR_SHIFT);
	put_be16(reply + 8, nbd_export_eflags(e, c->structured));
	if (nbd_conn_send_copy(c, reply, sizeof(reply)) ||
	    (!(c->cflags & NBD_FLAG_C_NO_ZEROES) &&
	     nbd_conn_send_copy(c, zeroes, sizeof(zeroes)))) {
		nbd_export_put(c->srv, e);
		return;
	}
	enter_transmission(c, e);
}

/* One NBD_REP_SERVER reply; non-zero stops the listing. */
static int list_one(void *arg, const struct mq_export *e)
{
	struct nbd_conn *c = arg;
	size_t nl = strlen(e->name), dl = strlen(e->description);
	uint8_t *p = malloc(4 + nl + dl);
	int r;

	if (!p) {
		nbd_conn_kill(c, "out of memory");
		return -1;
	}
	put_be32(p, (uint32_t)nl);
	memcpy(p + 4, e->name, nl);
	memcpy(p + 4 + nl, e->description, dl);
	r = nbd_opt_reply(c, c->opt, NBD_REP_SERVER, p, 4 + nl + dl);
	free(p);
	return r;
}

static void opt_list(struct nbd_conn *c)
{
	if (c->optlen) {
		nbd_opt_reply(c, c->opt, NBD_REP_ERR_INVALID, NULL, 0);
		return;
	}
	/* The table as it is now: a reload waits for the listing. */
	if (nbd_exports_each(c->srv, list_one, c))
		return;
	nbd_opt_reply(c, c->opt, NBD_REP_ACK, NULL, 0);
}

static void opt_starttls(struct nbd_conn *c)
{
	if (c->optlen) {
		nbd_opt_reply(c, c->opt, NBD_REP_ERR_INVALID, NULL, 0);
		return;
	}
	if (c->srv->cfg->tls == TLS_MODE_OFF) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_POLICY,
				  "TLS is not enabled on this server");
		return;
	}
	if (c->tls_active) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "TLS is already active");
		return;
	}
	if (nbd_opt_reply(c, c->opt, NBD_REP_ACK, NULL, 0))
		return;
	/*
	 * Anything the client pipelined after STARTTLS was sent in clear
	 * before it saw our answer: it must not count.
	 */
	c->in_start = c->in_end = 0;
	c->phase = PH_TLS_SWITCH;
	nbd_rx_expect(c, RX_PAUSED, NULL, 0);
	nbd_conn_start_tls(c);
}

void nbd_hs_tls_done(struct nbd_conn *c)
{
	c->tls_active = true;
	c->structured = false;
	c->meta_base_alloc = false;
	nbd_export_put(c->srv, c->meta_export);
	c->meta_export = NULL;
	c->phase = PH_HANDSHAKE;
	nbd_rx_expect(c, RX_OPT_HDR, c->hdr, NBD_OPT_HDR_LEN);
}

static int send_info_export(struct nbd_conn *c, const struct mq_export *e)
{
	uint8_t p[12];

	put_be16(p, NBD_INFO_EXPORT);
	put_be64(p + 2, get_capacity(e->disk) << SECTOR_SHIFT);
	put_be16(p + 10, nbd_export_eflags(e, c->structured));
	return nbd_opt_reply(c, c->opt, NBD_REP_INFO, p, sizeof(p));
}

static int send_info_string(struct nbd_conn *c, uint16_t type, const char *s)
{
	size_t len = strlen(s);
	uint8_t p[2 + NBD_MAX_STRING];

	if (len > NBD_MAX_STRING)
		len = NBD_MAX_STRING;
	put_be16(p, type);
	memcpy(p + 2, s, len);
	return nbd_opt_reply(c, c->opt, NBD_REP_INFO, p, 2 + len);
}

static bool is_power_of_2(unsigned int n)
{
	return n && !(n & (n - 1));
}

static int send_info_block_size(struct nbd_conn *c, const struct mq_export *e)
{
	const struct queue_limits *lim = &e->disk->queue->limits;
	unsigned int pref = lim->physical_block_size;
	uint8_t p[14];

	if (lim->io_opt > pref && is_power_of_2(lim->io_opt) &&
	    lim->io_opt <= MQBLKD_MAX_PAYLOAD)
		pref = lim->io_opt;
	if (!is_power_of_2(pref) || pref < lim->logical_block_size)
		pref = lim->logical_block_size;
	if (pref < 512)
		pref = 512;
	put_be16(p, NBD_INFO_BLOCK_SIZE);
	put_be32(p + 2, lim->logical_block_size);
	put_be32(p + 6, pref);
	put_be32(p + 10, MQBLKD_MAX_PAYLOAD);
	return nbd_opt_reply(c, c->opt, NBD_REP_INFO, p, sizeof(p));
}

/* NBD_OPT_INFO and NBD_OPT_GO: name, info requests, then replies. */
static void opt_info_go(struct nbd_conn *c)
{
	const uint8_t *d = c->optbuf;
	const struct mq_export *e;
	uint32_t namelen;
	uint16_t nr, i;
	bool sent[4] = {false};
	char names[512];

	if (c->optlen < 6) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "option too short");
		return;
	}
	namelen = get_be32(d);
	if (namelen > c->optlen - 6) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "export name longer than the option");
		return;
	}
	nr = get_be16(d + 4 + namelen);
	if (c->optlen != 4 + namelen + 2 + 2u * nr) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "option length does not match its contents");
		return;
	}
	if (!valid_string(d + 4, namelen)) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "invalid export name");
		return;
	}
	e = nbd_export_get(c->srv, (const char *)d + 4, namelen);
	if (!e) {
		nbd_export_names(c->srv, names, sizeof(names));
		log_info("client %llu: unknown export '%.*s' (exports: %s)",
			 (unsigned long long)c->client.id, (int)namelen,
			 (const char *)d + 4, names);
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_UNKNOWN,
				  "unknown export '%.*s' (exports: %s)",
				  (int)namelen, (const char *)d + 4, names);
		return;
	}

	/* NBD_INFO_EXPORT always goes out, asked for or not. */
	if (send_info_export(c, e))
		goto out;
	sent[NBD_INFO_EXPORT] = true;
	for (i = 0; i < nr; i++) {
		uint16_t type = get_be16(d + 4 + namelen + 2 + 2u * i);
		int r = 0;

		if (type >= 4 || sent[type])
			continue; /* unknown types are ignored */
		sent[type] = true;
		if (type == NBD_INFO_NAME)
			r = send_info_string(c, type, e->name);
		else if (type == NBD_INFO_DESCRIPTION && e->description[0])
			r = send_info_string(c, type, e->description);
		else if (type == NBD_INFO_BLOCK_SIZE)
			r = send_info_block_size(c, e);
		if (r)
			goto out;
	}
	if (nbd_opt_reply(c, c->opt, NBD_REP_ACK, NULL, 0))
		goto out;
	if (c->opt == NBD_OPT_GO) {
		/* Only a GO that asked binds the client to the minimum. */
		c->block_size_agreed = sent[NBD_INFO_BLOCK_SIZE];
		enter_transmission(c, e);
		return;
	}
out:
	nbd_export_put(c->srv, e);
}

static void opt_structured_reply(struct nbd_conn *c)
{
	if (c->optlen) {
		nbd_opt_reply(c, c->opt, NBD_REP_ERR_INVALID, NULL, 0);
		return;
	}
	if (c->structured) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "structured replies already negotiated");
		return;
	}
	if (nbd_opt_reply(c, c->opt, NBD_REP_ACK, NULL, 0))
		return;
	c->structured = true;
}

/*
 * A query matches base:allocation if it names it, or (when listing) if
 * it is the bare "base:" namespace.
 */
static bool query_matches(const uint8_t *q, uint32_t len, bool list)
{
	static const char name[] = NBD_META_BASE_ALLOCATION;

	if (len == sizeof(name) - 1 && !memcmp(q, name, len))
		return true;
	return list && len == 5 && !memcmp(q, "base:", 5);
}

/* NBD_OPT_LIST_META_CONTEXT and NBD_OPT_SET_META_CONTEXT. */
static void opt_meta_context(struct nbd_conn *c)
{
	const bool list = c->opt == NBD_OPT_LIST_META_CONTEXT;
	const uint8_t *d = c->optbuf;
	const struct mq_export *e;
	uint32_t namelen, nr, i, pos;
	bool match = false;

	/*
	 * SET replaces the selection "including when this command fails":
	 * whatever happens below, the earlier one is gone.
	 */
	if (!list) {
		c->meta_base_alloc = false;
		nbd_export_put(c->srv, c->meta_export);
		c->meta_export = NULL;
	}
	if (!c->structured) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "structured replies not negotiated");
		return;
	}
	if (c->optlen < 8) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "option too short");
		return;
	}
	namelen = get_be32(d);
	if (namelen > c->optlen - 8) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "export name longer than the option");
		return;
	}
	if (!valid_string(d + 4, namelen)) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "invalid export name");
		return;
	}
	nr = get_be32(d + 4 + namelen);
	/* Walk the queries once to validate them all before answering. */
	pos = 8 + namelen;
	for (i = 0; i < nr; i++) {
		uint32_t qlen;

		if (c->optlen - pos < 4) {
			nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
					  "query %u is truncated", i);
			return;
		}
		qlen = get_be32(d + pos);
		if (qlen > c->optlen - pos - 4 ||
		    !valid_string(d + pos + 4, qlen)) {
			nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
					  "query %u is invalid", i);
			return;
		}
		if (query_matches(d + pos + 4, qlen, list))
			match = true;
		pos += 4 + qlen;
	}
	if (pos != c->optlen) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_INVALID,
				  "option length does not match its contents");
		return;
	}
	e = nbd_export_get(c->srv, (const char *)d + 4, namelen);
	if (!e) {
		nbd_opt_reply_msg(c, c->opt, NBD_REP_ERR_UNKNOWN,
				  "unknown export '%.*s'", (int)namelen,
				  (const char *)d + 4);
		return;
	}
	/* An empty query list lists everything, and selects nothing. */
	if (list && nr == 0)
		match = true;
	if (list) {
		nbd_export_put(c->srv, e);
	} else {
		/* Held: the GO compares it, by pointer, with its export. */
		c->meta_base_alloc = match;
		c->meta_export = e;
	}
	if (match) {
		static const char name[] = NBD_META_BASE_ALLOCATION;
		uint8_t p[4 + sizeof(name) - 1];

		put_be32(p, list ? 0 : NBD_META_ID_BASE_ALLOCATION);
		memcpy(p + 4, name, sizeof(name) - 1);
		if (nbd_opt_reply(c, c->opt, NBD_REP_META_CONTEXT, p,
				  sizeof(p)))
			return;
	}
	nbd_opt_reply(c, c->opt, NBD_REP_ACK, NULL, 0);
}

void nbd_hs_option(struct nbd_conn *c)
{
	switch (c->opt) {
	case NBD_OPT_EXPORT_NAME:
		opt_export_name(c);
		return; /* it moves on by itself */
	case NBD_OPT_ABORT:
		if (nbd_opt_reply(c, c->opt, NBD_REP_ACK, NULL, 0))
			return;
		nbd_conn_close_after_flush(c, "client sent NBD_OPT_ABORT");
		return;
	case NBD_OPT_LIST:
		opt_list(c);
		break;
	case NBD_OPT_STARTTLS:
		opt_starttls(c);
		break;
	case NBD_OPT_INFO:
	case NBD_OPT_GO:
		opt_info_go(c);
		break;
	case NBD_OPT_STRUCTURED_REPLY:
		opt_structured_reply(c);
		break;
	case NBD_OPT_LIST_META_CONTEXT:
	case NBD_OPT_SET_META_CONTEXT:
		opt_meta_context(c);
		break;
	default:
		nbd_opt_reply(c, c->opt, NBD_REP_ERR_UNSUP, NULL, 0);
		break;
	}
	/* Unless the option changed phase (GO, STARTTLS, error): next. */
	if (c->rx == RX_OPT_DATA && c->rx_need == 0)
		next_option(c);
}
