/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Linux ublk ABI (drivers/block/ublk_drv.c, Linux 6.12) as far as
 * mqblk-ublk uses it: command numbers, feature flags and the layouts of
 * the structures the kernel reads and writes.  Written here because
 * Debian 12's kernel headers (6.1) predate the ioctl-encoded commands,
 * GET_FEATURES, USER_COPY and ZONED.
 */
#ifndef MQBLK_UBLK_ABI_H
#define MQBLK_UBLK_ABI_H

#include <stdint.h>
#include <sys/ioctl.h>

/* Control commands on /dev/ublk-control, ioctl-encoded ('u', nr). */
enum {
	UBLK_CMD_NR_GET_DEV_INFO = 0x02,
	UBLK_CMD_NR_ADD_DEV = 0x04,
	UBLK_CMD_NR_DEL_DEV = 0x05,
	UBLK_CMD_NR_START_DEV = 0x06,
	UBLK_CMD_NR_STOP_DEV = 0x07,
	UBLK_CMD_NR_SET_PARAMS = 0x08,
	UBLK_CMD_NR_GET_PARAMS = 0x09,
	UBLK_CMD_NR_START_USER_RECOVERY = 0x10,
	UBLK_CMD_NR_END_USER_RECOVERY = 0x11,
	UBLK_CMD_NR_GET_DEV_INFO2 = 0x12,
	UBLK_CMD_NR_GET_FEATURES = 0x13,
};

/* I/O commands on /dev/ublkcN. */
enum {
	UBLK_IO_NR_FETCH_REQ = 0x20,
	UBLK_IO_NR_COMMIT_AND_FETCH_REQ = 0x21,
};

struct ublksrv_ctrl_cmd {
	uint32_t dev_id;   /* the device, or -1 to let ADD_DEV choose */
	uint16_t queue_id; /* -1 when the command is for no queue */
	uint16_t len;	   /* of the buffer at addr */
	uint64_t addr;
	uint64_t data[1]; /* inline argument (START_DEV: the server's pid) */
	uint16_t dev_path_len;
	uint16_t pad;
	uint32_t reserved;
};

struct ublksrv_io_cmd {
	uint16_t q_id;
	uint16_t tag;
	int32_t result; /* COMMIT: bytes done or -errno */
	uint64_t addr;	/* 0 with USER_COPY; the LBA of a zone append */
};

#define UBLK_U_CMD(nr, rw) rw('u', nr, struct ublksrv_ctrl_cmd)
#define UBLK_U_IO(nr)	   _IOWR('u', nr, struct ublksrv_io_cmd)

#define UBLK_U_CMD_GET_DEV_INFO UBLK_U_CMD(UBLK_CMD_NR_GET_DEV_INFO, _IOR)
#define UBLK_U_CMD_ADD_DEV	UBLK_U_CMD(UBLK_CMD_NR_ADD_DEV, _IOWR)
#define UBLK_U_CMD_DEL_DEV	UBLK_U_CMD(UBLK_CMD_NR_DEL_DEV, _IOWR)
#define UBLK_U_CMD_START_DEV	UBLK_U_CMD(UBLK_CMD_NR_START_DEV, _IOWR)
#define UBLK_U_CMD_STOP_DEV	UBLK_U_CMD(UBLK_CMD_NR_STOP_DEV, _IOWR)
#define UBLK_U_CMD_SET_PARAMS	UBLK_U_CMD(UBLK_CMD_NR_SET_PARAMS, _IOWR)
#define UBLK_U_CMD_GET_PARAMS	UBLK_U_CMD(UBLK_CMD_NR_GET_PARAMS, _IOR)
#define UBLK_U_CMD_GET_FEATURES UBLK_U_CMD(UBLK_CMD_NR_GET_FEATURES, _IOR)
#define UBLK_U_CMD_START_USER_RECOVERY                                         \
	UBLK_U_CMD(UBLK_CMD_NR_START_USER_RECOVERY, _IOWR)
#define UBLK_U_CMD_END_USER_RECOVERY                                           \
	UBLK_U_CMD(UBLK_CMD_NR_END_USER_RECOVERY, _IOWR)
#define UBLK_U_IO_FETCH_REQ UBLK_U_IO(UBLK_IO_NR_FETCH_REQ)
#define UBLK_U_IO_COMMIT_AND_FETCH_REQ                                         \
	UBLK_U_IO(UBLK_IO_NR_COMMIT_AND_FETCH_REQ)

/* A fetch completed with this: the device is going away. */
#define UBLK_IO_RES_ABORT_ERRNO 19 /* -ENODEV */

/* Device flags (ADD_DEV) and features (GET_FEATURES). */
#define UBLK_F_URING_CMD_COMP_IN_TASK (1ULL << 1)
#define UBLK_F_NEED_GET_DATA	      (1ULL << 2)
#define UBLK_F_USER_RECOVERY	      (1ULL << 3)
#define UBLK_F_USER_RECOVERY_REISSUE  (1ULL << 4)
#define UBLK_F_UNPRIVILEGED_DEV	      (1ULL << 5)
#define UBLK_F_CMD_IOCTL_ENCODE	      (1ULL << 6)
#define UBLK_F_USER_COPY	      (1ULL << 7)
#define UBLK_F_ZONED		      (1ULL << 8)

#define UBLK_S_DEV_DEAD	    0
#define UBLK_S_DEV_LIVE	    1
#define UBLK_S_DEV_QUIESCED 2

struct ublksrv_ctrl_dev_info {
	uint16_t nr_hw_queues;
	uint16_t queue_depth;
	uint16_t state;
	uint16_t pad0;
	uint32_t max_io_buf_bytes;
	uint32_t dev_id;
	int32_t ublksrv_pid;
	uint32_t pad1;
	uint64_t flags;
	uint64_t ublksrv_flags;
	uint32_t owner_uid;
	uint32_t owner_gid;
	uint64_t reserved1;
	uint64_t reserved2;
};

/* The request descriptors, mmap()ed read-only from /dev/ublkcN. */
#define UBLK_IO_OP_READ		  0
#define UBLK_IO_OP_WRITE	  1
#define UBLK_IO_OP_FLUSH	  2
#define UBLK_IO_OP_DISCARD	  3
#define UBLK_IO_OP_WRITE_SAME	  4
#define UBLK_IO_OP_WRITE_ZEROES	  5
#define UBLK_IO_OP_ZONE_OPEN	  10
#define UBLK_IO_OP_ZONE_CLOSE	  11
#define UBLK_IO_OP_ZONE_FINISH	  12
#define UBLK_IO_OP_ZONE_APPEND	  13
#define UBLK_IO_OP_ZONE_RESET_ALL 14
#define UBLK_IO_OP_ZONE_RESET	  15
#define UBLK_IO_OP_REPORT_ZONES	  18

#define UBLK_IO_F_FUA	  (1U << 13)
#define UBLK_IO_F_NOUNMAP (1U << 15)

struct ublksrv_io_desc {
	uint32_t op_flags;   /* op in bits 0-7, UBLK_IO_F_* above */
	uint32_t nr_sectors; /* REPORT_ZONES: the number of zones */
	uint64_t start_sector;
	uint64_t addr;
};

/* Where the descriptors of queue q are, and how far apart queues are. */
#define UBLK_MAX_QUEUE_DEPTH 4096
#define UBLK_CMD_BUF_OFFSET  0ULL
/* USER_COPY: pread/pwrite a request's data at this offset of /dev/ublkcN */
#define UBLK_IO_BUF_OFFSET 0x80000000ULL
#define UBLK_IO_BUF_BITS   25
#define UBLK_TAG_OFF	   UBLK_IO_BUF_BITS
#define UBLK_TAG_BITS	   16
#define UBLK_QID_OFF	   (UBLK_TAG_OFF + UBLK_TAG_BITS)
#define UBLK_MAX_IO_BYTES  (1U << UBLK_IO_BUF_BITS)

/* SET_PARAMS */
#define UBLK_ATTR_READ_ONLY	 (1U << 0)
#define UBLK_ATTR_ROTATIONAL	 (1U << 1)
#define UBLK_ATTR_VOLATILE_CACHE (1U << 2)
#define UBLK_ATTR_FUA		 (1U << 3)

#define UBLK_PARAM_TYPE_BASIC	(1U << 0)
#define UBLK_PARAM_TYPE_DISCARD (1U << 1)
#define UBLK_PARAM_TYPE_DEVT	(1U << 2)
#define UBLK_PARAM_TYPE_ZONED	(1U << 3)

struct ublk_param_basic {
	uint32_t attrs;
	uint8_t logical_bs_shift;
	uint8_t physical_bs_shift;
	uint8_t io_opt_shift;
	uint8_t io_min_shift;
	uint32_t max_sectors;
	uint32_t chunk_sectors;
	uint64_t dev_sectors;
	uint64_t virt_boundary_mask;
};

struct ublk_param_discard {
	uint32_t discard_alignment;
	uint32_t discard_granularity;
	uint32_t max_discard_sectors;
	uint32_t max_write_zeroes_sectors;
	uint16_t max_discard_segments;
	uint16_t reserved0;
};

struct ublk_param_devt {
	uint32_t char_major;
	uint32_t char_minor;
	uint32_t disk_major;
	uint32_t disk_minor;
};

struct ublk_param_zoned {
	uint32_t max_open_zones;
	uint32_t max_active_zones;
	uint32_t max_zone_append_sectors;
	uint8_t reserved[20];
};

struct ublk_params {
	uint32_t len; /* sizeof(struct ublk_params) */
	uint32_t types;
	struct ublk_param_basic basic;
	struct ublk_param_discard discard;
	struct ublk_param_devt devt;
	struct ublk_param_zoned zoned;
};

/* A zone as REPORT_ZONES returns it: Linux's struct blk_zone. */
struct ublk_blk_zone {
	uint64_t start; /* sectors */
	uint64_t len;
	uint64_t wp;
	uint8_t type;
	uint8_t cond;
	uint8_t non_seq;
	uint8_t reset;
	uint8_t resv[4];
	uint64_t capacity;
	uint8_t reserved[24];
};

_Static_assert(sizeof(struct ublk_blk_zone) == 64, "ublk ABI");
_Static_assert(sizeof(struct ublksrv_ctrl_cmd) == 32, "ublk ABI");
_Static_assert(sizeof(struct ublksrv_io_cmd) == 16, "ublk ABI");
_Static_assert(sizeof(struct ublksrv_ctrl_dev_info) == 64, "ublk ABI");
_Static_assert(sizeof(struct ublksrv_io_desc) == 24, "ublk ABI");
_Static_assert(sizeof(struct ublk_params) == 112, "ublk ABI");

#endif
