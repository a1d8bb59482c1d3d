/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The registers and opcodes the driver and the modelled drives share:
 * the ATA taskfile (include/linux/ata.h, struct ide_taskfile) and the
 * ATAPI packet commands and sense data (include/scsi/scsi_proto.h,
 * include/uapi/linux/cdrom.h).
 */
#ifndef MQBLK_IDE_ATA_H
#define MQBLK_IDE_ATA_H

#include <stdint.h>

/* Status register */
#define ATA_BUSY (1u << 7)
#define ATA_DRDY (1u << 6)
#define ATA_DF	 (1u << 5)
#define ATA_DSC	 (1u << 4)
#define ATA_DRQ	 (1u << 3)
#define ATA_ERR	 (1u << 0)

/* Error register (ATA) */
#define ATA_UNC	    (1u << 6) /* uncorrectable data error */
#define ATA_IDNF    (1u << 4) /* sector id not found */
#define ATA_ABORTED (1u << 2)

/* Device register */
#define ATA_LBA (1u << 6)

/* ATA commands */
#define ATA_CMD_PIO_READ      0x20
#define ATA_CMD_PIO_READ_EXT  0x24
#define ATA_CMD_READ_EXT      0x25
#define ATA_CMD_PIO_WRITE     0x30
#define ATA_CMD_PIO_WRITE_EXT 0x34
#define ATA_CMD_WRITE_EXT     0x35
#define ATA_CMD_PACKET	      0xa0
#define ATA_CMD_READ	      0xc8
#define ATA_CMD_WRITE	      0xca
#define ATA_CMD_FLUSH	      0xe7
#define ATA_CMD_FLUSH_EXT     0xea

/* LBA28 addresses 2^28 sectors: 128 GiB. */
#define ATA_LBA28_LIMIT (1ULL << 28)

/* struct ide_taskfile: the shadow registers. */
struct ide_taskfile {
	uint8_t feature; /* error on the way back */
	uint8_t nsect;
	uint8_t lbal;
	uint8_t lbam;
	uint8_t lbah;
	uint8_t device;
	uint8_t command; /* status on the way back */
};

/* cmd->tf_flags */
#define IDE_TFLAG_LBA48 (1u << 0)
#define IDE_TFLAG_WRITE (1u << 1)
#define IDE_TFLAG_FS	(1u << 2) /* a read or write of the medium */
#define IDE_TFLAG_DMA	(1u << 3)

/* ATAPI packet commands */
#define ATAPI_CDB_LEN	      12
#define GPCMD_TEST_UNIT_READY 0x00
#define GPCMD_REQUEST_SENSE   0x03
#define GPCMD_READ_10	      0x28
#define GPCMD_WRITE_10	      0x2a

/* Sense keys */
#define NO_SENSE	0x00
#define RECOVERED_ERROR 0x01
#define NOT_READY	0x02
#define MEDIUM_ERROR	0x03
#define HARDWARE_ERROR	0x04
#define ILLEGAL_REQUEST 0x05
#define UNIT_ATTENTION	0x06
#define DATA_PROTECT	0x07
#define BLANK_CHECK	0x08
#define ABORTED_COMMAND 0x0b

/* Additional sense codes the model reports */
#define ASC_NOT_READY	     0x04 /* ascq 1: becoming ready */
#define ASC_UNRECOVERED_READ 0x11
#define ASC_INVALID_OPCODE   0x20
#define ASC_LBA_OUT_OF_RANGE 0x21
#define ASC_WRITE_PROTECTED  0x27
#define ASC_MEDIUM_CHANGED   0x28
#define ASC_NO_MEDIUM	     0x3a /* ascq 1: tray closed, 2: tray open */

/* Fixed-format sense data (struct request_sense), 18 bytes. */
#define ATAPI_SENSE_LEN 18
#define SENSE_KEY(s)	((s)[2] & 0x0f)
#define SENSE_ASC(s)	((s)[12])
#define SENSE_ASCQ(s)	((s)[13])

#define CD_FRAMESIZE 2048

#endif
