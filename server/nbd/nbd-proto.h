/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The NBD wire protocol (NetworkBlockDevice/nbd doc/proto.md): magics,
 * option and reply numbers, flags, and big-endian accessors.  Only what
 * the fixed newstyle server speaks.
 */
#ifndef MQBLKD_NBD_PROTO_H
#define MQBLKD_NBD_PROTO_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#define NBD_MAGIC		   0x4e42444d41474943ull /* "NBDMAGIC" */
#define NBD_IHAVEOPT		   0x49484156454f5054ull /* "IHAVEOPT" */
#define NBD_REP_MAGIC		   0x0003e889045565a9ull
#define NBD_REQUEST_MAGIC	   0x25609513u
#define NBD_SIMPLE_REPLY_MAGIC	   0x67446698u
#define NBD_STRUCTURED_REPLY_MAGIC 0x668e33efu

/* handshake flags (server) */
#define NBD_FLAG_FIXED_NEWSTYLE (1u << 0)
#define NBD_FLAG_NO_ZEROES	(1u << 1)
/* client flags */
#define NBD_FLAG_C_FIXED_NEWSTYLE (1u << 0)
#define NBD_FLAG_C_NO_ZEROES	  (1u << 1)

/* transmission flags */
#define NBD_FLAG_HAS_FLAGS	   (1u << 0)
#define NBD_FLAG_READ_ONLY	   (1u << 1)
#define NBD_FLAG_SEND_FLUSH	   (1u << 2)
#define NBD_FLAG_SEND_FUA	   (1u << 3)
#define NBD_FLAG_ROTATIONAL	   (1u << 4)
#define NBD_FLAG_SEND_TRIM	   (1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES (1u << 6)
#define NBD_FLAG_SEND_DF	   (1u << 7)
#define NBD_FLAG_CAN_MULTI_CONN	   (1u << 8)
#define NBD_FLAG_SEND_CACHE	   (1u << 10)
#define NBD_FLAG_SEND_FAST_ZERO	   (1u << 11)

/* options */
#define NBD_OPT_EXPORT_NAME	  1
#define NBD_OPT_ABORT		  2
#define NBD_OPT_LIST		  3
#define NBD_OPT_STARTTLS	  5
#define NBD_OPT_INFO		  6
#define NBD_OPT_GO		  7
#define NBD_OPT_STRUCTURED_REPLY  8
#define NBD_OPT_LIST_META_CONTEXT 9
#define NBD_OPT_SET_META_CONTEXT  10

/* option replies */
#define NBD_REP_ACK		    1u
#define NBD_REP_SERVER		    2u
#define NBD_REP_INFO		    3u
#define NBD_REP_META_CONTEXT	    4u
#define NBD_REP_ERR(n)		    (0x80000000u | (n))
#define NBD_REP_ERR_UNSUP	    NBD_REP_ERR(1)
#define NBD_REP_ERR_POLICY	    NBD_REP_ERR(2)
#define NBD_REP_ERR_INVALID	    NBD_REP_ERR(3)
#define NBD_REP_ERR_PLATFORM	    NBD_REP_ERR(4)
#define NBD_REP_ERR_TLS_REQD	    NBD_REP_ERR(5)
#define NBD_REP_ERR_UNKNOWN	    NBD_REP_ERR(6)
#define NBD_REP_ERR_SHUTDOWN	    NBD_REP_ERR(7)
#define NBD_REP_ERR_BLOCK_SIZE_REQD NBD_REP_ERR(8)
#define NBD_REP_ERR_TOO_BIG	    NBD_REP_ERR(9)

/* NBD_REP_INFO types */
#define NBD_INFO_EXPORT	     0
#define NBD_INFO_NAME	     1
#define NBD_INFO_DESCRIPTION 2
#define NBD_INFO_BLOCK_SIZE  3

/* commands */
#define NBD_CMD_READ	     0
#define NBD_CMD_WRITE	     1
#define NBD_CMD_DISC	     2
#define NBD_CMD_FLUSH	     3
#define NBD_CMD_TRIM	     4
#define NBD_CMD_CACHE	     5
#define NBD_CMD_WRITE_ZEROES 6
#define NBD_CMD_BLOCK_STATUS 7

/* command flags */
#define NBD_CMD_FLAG_FUA       (1u << 0)
#define NBD_CMD_FLAG_NO_HOLE   (1u << 1)
#define NBD_CMD_FLAG_DF	       (1u << 2)
#define NBD_CMD_FLAG_REQ_ONE   (1u << 3)
#define NBD_CMD_FLAG_FAST_ZERO (1u << 4)

/* structured replies */
#define NBD_REPLY_FLAG_DONE	    (1u << 0)
#define NBD_REPLY_TYPE_NONE	    0
#define NBD_REPLY_TYPE_OFFSET_DATA  1
#define NBD_REPLY_TYPE_OFFSET_HOLE  2
#define NBD_REPLY_TYPE_BLOCK_STATUS 5
#define NBD_REPLY_TYPE_ERROR	    0x8001
#define NBD_REPLY_TYPE_ERROR_OFFSET 0x8002

/* base:allocation */
#define NBD_STATE_HOLE (1u << 0)
#define NBD_STATE_ZERO (1u << 1)

/* error values */
#define NBD_SUCCESS   0
#define NBD_EPERM     1
#define NBD_EIO	      5
#define NBD_ENOMEM    12
#define NBD_EINVAL    22
#define NBD_ENOSPC    28
#define NBD_EOVERFLOW 75
#define NBD_ENOTSUP   95
#define NBD_ESHUTDOWN 108

/* Sizes on the wire. */
#define NBD_OPT_HDR_LEN	      16 /* IHAVEOPT, option, length */
#define NBD_OPT_REPLY_HDR_LEN 20 /* magic, option, type, length */
#define NBD_REQUEST_LEN	      28
#define NBD_SIMPLE_REPLY_LEN  16
#define NBD_CHUNK_HDR_LEN     20
#define NBD_MAX_STRING	      4096

#define NBD_META_BASE_ALLOCATION    "base:allocation"
#define NBD_META_ID_BASE_ALLOCATION 1u

static inline uint16_t get_be16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static inline uint32_t get_be32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline uint64_t get_be64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static inline void put_be16(void *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put_be32(void *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put_be64(void *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

const char *nbd_opt_name(uint32_t opt);
const char *nbd_cmd_name(uint16_t cmd);
/* A system errno as the NBD error a client sees (as nbdkit maps them). */
uint32_t nbd_errno(int err);

#endif
