// SPDX-License-Identifier: GPL-2.0
/*
 * mqblkd's input sizing (server/nbd/parser.c, nbd_rx_read_len): after a
 * payload read straight into its buffer, the next header is read alone,
 * so that a following large write goes straight in as well.
 */
#include <check.h>
#include <string.h>

#include "server/nbd/mqblkd.h"
#include "tests/unit/helpers/tcheck.h"

#define ROOM MQBLKD_INBUF_SIZE

static void waiting_for_header(struct nbd_conn *c)
{
	memset(c, 0, sizeof(*c));
	nbd_rx_expect(c, RX_REQ_HDR, c->hdr, NBD_REQUEST_LEN);
}

START_TEST(header_alone_after_direct_payload)
{
	struct nbd_conn c;

	waiting_for_header(&c);
	ck_assert_uint_eq(nbd_rx_read_len(&c, ROOM), ROOM);
	c.rx_after_direct = true;
	ck_assert_uint_eq(nbd_rx_read_len(&c, ROOM), NBD_REQUEST_LEN);
	/* Once: a header that brings no large write ends it. */
	ck_assert_uint_eq(nbd_rx_read_len(&c, ROOM), ROOM);
}
END_TEST

/* Only a payload read straight in to its end arms it. */
START_TEST(armed_by_a_whole_direct_payload)
{
	struct nbd_conn c;
	uint8_t payload[64];

	waiting_for_header(&c);
	/* RX_PAUSED: the item's handler does nothing, so no request runs. */
	c.rx = RX_PAUSED;
	c.rx_ptr = payload;
	c.rx_need = sizeof(payload);
	nbd_rx_direct_done(&c, 32);
	ck_assert(!c.rx_after_direct);
	nbd_rx_direct_done(&c, 32);
	ck_assert(c.rx_after_direct);
	ck_assert_ptr_eq(c.rx_ptr, payload + sizeof(payload));
}
END_TEST

START_TEST(full_reads_with_input_buffered)
{
	struct nbd_conn c;

	/* Bytes already buffered: the parser takes the header from them. */
	waiting_for_header(&c);
	c.rx_after_direct = true;
	c.in_end = 10;
	ck_assert_uint_eq(nbd_rx_read_len(&c, ROOM - 10), ROOM - 10);
	/* Not at a header (a handshake item, a skipped payload). */
	waiting_for_header(&c);
	c.rx_after_direct = true;
	c.rx = RX_REQ_SKIP;
	ck_assert_uint_eq(nbd_rx_read_len(&c, ROOM), ROOM);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nbd_rx");
	TCase *tc = tcase_create("nbd_rx");

	tcase_add_test(tc, header_alone_after_direct_payload);
	tcase_add_test(tc, armed_by_a_whole_direct_payload);
	tcase_add_test(tc, full_reads_with_input_buffered);
	suite_add_tcase(s, tc);
	return tcheck_run(s);
}
