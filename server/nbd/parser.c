// SPDX-License-Identifier: GPL-2.0
/*
 * The input state machine.  Every protocol item has a known length once
 * its header is in: the parser says how many bytes it wants next and
 * where they go (nbd_rx_expect), takes them from the input buffer, and
 * calls the handler when the item is complete.  Refused payloads are
 * counted off without being stored (nbd_rx_skip).
 *
 * The same code runs over a socket, a TLS session or a plain buffer (the
 * fuzzer), because it only ever looks at conn->inbuf.
 */
#include <string.h>

#include "mqblkd.h"

void nbd_rx_expect(struct nbd_conn *c, enum rx_state st, void *ptr, size_t len)
{
	c->rx = st;
	c->rx_ptr = ptr;
	c->rx_need = len;
	c->skip_left = 0;
}

void nbd_rx_skip(struct nbd_conn *c, enum rx_state st, uint64_t len)
{
	c->rx = st;
	c->rx_ptr = NULL;
	c->rx_need = 0;
	c->skip_left = len;
}

bool nbd_rx_paused(const struct nbd_conn *c)
{
	if (c->rx == RX_PAUSED)
		return true;
	/*
	 * Back-pressure: let requests finish and replies drain before
	 * taking more.  Bytes count whether the device completes inline or
	 * later: payloads in flight as well as replies queued.  They stop
	 * the next request, not the payload of one already allotted.
	 */
	if (c->phase == PH_TRANSMISSION &&
	    (c->inflight >= MQBLKD_MAX_INFLIGHT ||
	     (c->rx == RX_REQ_HDR &&
	      c->req_bytes + c->out_bytes >= MQBLKD_MAX_BUFFERED)))
		return true;
	return false;
}

/* The current item is complete: hand it to its handler. */
static void rx_item_done(struct nbd_conn *c)
{
	switch (c->rx) {
	case RX_CLIENT_FLAGS:
		nbd_hs_client_flags(c);
		break;
	case RX_OPT_HDR:
		nbd_hs_option_header(c);
		break;
	case RX_OPT_DATA:
		nbd_hs_option(c);
		break;
	case RX_OPT_SKIP:
		nbd_hs_option_skipped(c);
		break;
	case RX_REQ_HDR:
		nbd_tx_request(c);
		nbd_conn_flush_early(c);
		break;
	case RX_REQ_DATA:
		nbd_tx_write_payload(c);
		break;
	case RX_REQ_SKIP:
		nbd_tx_write_skipped(c);
		break;
	case RX_PAUSED:
		break;
	}
}

static bool rx_item_complete(const struct nbd_conn *c)
{
	if (c->rx == RX_OPT_SKIP || c->rx == RX_REQ_SKIP)
		return c->skip_left == 0;
	return c->rx_need == 0;
}

void nbd_conn_parse(struct nbd_conn *c)
{
	while (!nbd_rx_paused(c)) {
		size_t avail = c->in_end - c->in_start;
		size_t n;

		if (rx_item_complete(c)) {
			/* zero-length items (empty options, skips) */
			rx_item_done(c);
			continue;
		}
		if (!avail)
			break;
		if (c->rx == RX_OPT_SKIP || c->rx == RX_REQ_SKIP) {
			n = avail < c->skip_left ? avail : (size_t)c->skip_left;
			c->skip_left -= n;
		} else {
			n = avail < c->rx_need ? avail : c->rx_need;
			memcpy(c->rx_ptr, c->inbuf + c->in_start, n);
			c->rx_ptr += n;
			c->rx_need -= n;
		}
		c->in_start += n;
		if (c->in_start == c->in_end)
			c->in_start = c->in_end = 0;
	}
}

/*
 * A large payload with nothing buffered goes straight from the socket
 * into its destination, saving a copy.  Skipped bytes never do.
 */
bool nbd_rx_direct(struct nbd_conn *c, void **ptr, size_t *len)
{
	if (c->in_start != c->in_end || nbd_rx_paused(c))
		return false;
	if (c->rx != RX_REQ_DATA || c->rx_need < MQBLKD_INBUF_SIZE / 4)
		return false;
	*ptr = c->rx_ptr;
	*len = c->rx_need;
	return true;
}

void nbd_rx_direct_done(struct nbd_conn *c, size_t n)
{
	c->rx_ptr += n;
	c->rx_need -= n;
	if (!c->rx_need) {
		c->rx_after_direct = true;
		rx_item_done(c);
	}
}

/*
 * How much to read into the input buffer, which has room bytes free.
 * After a payload that went straight into its buffer, the next header is
 * read alone: if it is another large write, its payload goes straight in
 * too, where a full read would have brought its first part into the
 * input buffer to be copied out.  One read more per large write; once a
 * header read alone is not followed by such a payload, reads are full
 * again.
 */
size_t nbd_rx_read_len(struct nbd_conn *c, size_t room)
{
	bool header_alone = c->rx_after_direct && c->rx == RX_REQ_HDR &&
			    c->in_start == c->in_end && c->rx_need < room;

	c->rx_after_direct = false;
	return header_alone ? c->rx_need : room;
}
