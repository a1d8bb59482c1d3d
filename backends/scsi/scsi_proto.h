/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SCSI protocol constants as Linux 6.6 names them (include/scsi/scsi_proto.h,
 * scsi_status.h): the opcodes sd and scsi_debug use, status, host and
 * mid-layer bytes of a result, sense keys, and the big-endian helpers
 * CDBs are built with.
 */
#ifndef MQBLK_SCSI_PROTO_H
#define MQBLK_SCSI_PROTO_H

#include <stdint.h>

/* opcodes */
#define TEST_UNIT_READY	     0x00
#define REQUEST_SENSE	     0x03
#define INQUIRY		     0x12
#define MODE_SENSE	     0x1a
#define READ_10		     0x28
#define WRITE_10	     0x2a
#define SYNCHRONIZE_CACHE    0x35
#define UNMAP		     0x42
#define MODE_SENSE_10	     0x5a
#define READ_16		     0x88
#define WRITE_16	     0x8a
#define SYNCHRONIZE_CACHE_16 0x91
#define WRITE_SAME_16	     0x93
#define SERVICE_ACTION_IN_16 0x9e
#define SAI_READ_CAPACITY_16 0x10
#define REPORT_LUNS	     0xa0

/* status byte (SAM) */
#define SAM_STAT_GOOD		 0x00
#define SAM_STAT_CHECK_CONDITION 0x02
#define SAM_STAT_BUSY		 0x08
#define SAM_STAT_TASK_SET_FULL	 0x28

/* host byte: result bits 16-23 */
#define DID_OK	       0x00
#define DID_NO_CONNECT 0x01
#define DID_BUS_BUSY   0x02
#define DID_TIME_OUT   0x03
#define DID_BAD_TARGET 0x04
#define DID_ABORT      0x05
#define DID_ERROR      0x07
#define DID_RESET      0x08
#define DID_SOFT_ERROR 0x0b
#define DID_IMM_RETRY  0x0c
#define DID_REQUEUE    0x0d

/* the mid layer's own byte (6.0 on): result bits 8-15 */
#define SCSIML_STAT_OK		0x00
#define SCSIML_STAT_MED_ERROR	0x03
#define SCSIML_STAT_TGT_FAILURE 0x04

static inline int host_byte(int result)
{
	return (result >> 16) & 0xff;
}
static inline int scsi_ml_byte(int result)
{
	return (result >> 8) & 0xff;
}
static inline int status_byte(int result)
{
	return result & 0xff;
}

/* sense keys */
#define NO_SENSE	0x00
#define RECOVERED_ERROR 0x01
#define NOT_READY	0x02
#define MEDIUM_ERROR	0x03
#define HARDWARE_ERROR	0x04
#define ILLEGAL_REQUEST 0x05
#define UNIT_ATTENTION	0x06
#define DATA_PROTECT	0x07
#define ABORTED_COMMAND 0x0b

/* additional sense codes scsi_debug sends */
#define UNRECOVERED_READ_ERR 0x11
#define INVALID_OPCODE	     0x20
#define LBA_OUT_OF_RANGE     0x21
#define INVALID_FIELD_IN_CDB 0x24
#define UA_RESET_ASC	     0x29 /* power on, reset or bus device reset */
#define THRESHOLD_EXCEEDED   0x5d

#define SCSI_SENSE_BUFFERSIZE 32 /* Linux: 96; scsi_debug writes <= 20 */

static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}
static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}
static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}
static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)get_be16(p) << 16 | get_be16(p + 2);
}
static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

#endif
