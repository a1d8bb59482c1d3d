// SPDX-License-Identifier: GPL-2.0
/*
 * The SCSI disk upper driver, after Linux 6.6's drivers/scsi/sd.c:
 *
 *  - sd_init_command builds a request's CDB: READ/WRITE 10, or 16 when
 *    the LBA or the length does not fit or the capacity is past 2^32
 *    blocks (use_16_for_rw), with FUA; SYNCHRONIZE CACHE (10) for a
 *    flush; UNMAP or WRITE SAME 16 with UNMAP for a discard, as
 *    provisioning_mode says; WRITE SAME 16 for write-zeroes;
 *  - sd_done says how many bytes of a failed command are good
 *    (sd_completed_bytes for MEDIUM and HARDWARE ERROR);
 *  - sd_revalidate_disk asks the LUN what it is, with commands through
 *    the request queue as sd_probe does: TEST UNIT READY until the unit
 *    attention of its power-on clears, READ CAPACITY 16, INQUIRY VPD
 *    0x00, 0xb0 and 0xb2, MODE SENSE's caching page; and sets the queue's
 *    limits (block size, write cache and FUA, discard) from the answers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "scsi.h"
#include "../../server/mq/log.h"
#include "../../server/mq/params.h"

#define SD_MAX_WS16_BLOCKS 0x7fffff
#define SD_MAX_XFER_BLOCKS 0xffffffff

static enum sd_prep sd_setup_rw_cmnd(struct scsi_cmnd *cmd, struct request *rq)
{
	struct scsi_device *sdp = cmd->device;
	unsigned int shift = __builtin_ctz(sdp->sector_size) - SECTOR_SHIFT;
	uint64_t lba = blk_rq_pos(rq) >> shift;
	uint32_t nr_blocks = blk_rq_sectors(rq) >> shift;
	bool write = req_op(rq) == REQ_OP_WRITE;
	uint8_t fua = (rq->cmd_flags & REQ_FUA) ? 0x8 : 0;

	if (blk_rq_pos(rq) + blk_rq_sectors(rq) > sdp->capacity << shift ||
	    ((blk_rq_pos(rq) | blk_rq_sectors(rq)) & ((1u << shift) - 1)))
		return SD_PREP_IOERR;
	cmd->write = write;
	if (sdp->use_16_for_rw || nr_blocks > 0xffff || lba > 0xffffffff) {
		cmd->cmnd[0] = write ? WRITE_16 : READ_16;
		cmd->cmnd[1] = fua;
		put_be64(cmd->cmnd + 2, lba);
		put_be32(cmd->cmnd + 10, nr_blocks);
		cmd->cmnd[14] = cmd->cmnd[15] = 0;
		cmd->cmd_len = 16;
	} else {
		cmd->cmnd[0] = write ? WRITE_10 : READ_10;
		cmd->cmnd[1] = fua;
		put_be32(cmd->cmnd + 2, (uint32_t)lba);
		cmd->cmnd[6] = 0;
		put_be16(cmd->cmnd + 7, (uint16_t)nr_blocks);
		cmd->cmnd[9] = 0;
		cmd->cmd_len = 10;
	}
	return SD_PREP_OK;
}

static void sd_setup_ws16(struct scsi_cmnd *cmd, uint64_t lba,
			  uint32_t nr_blocks, bool unmap)
{
	memset(cmd->cmnd, 0, 16);
	cmd->cmnd[0] = WRITE_SAME_16;
	cmd->cmnd[1] = unmap ? 0x8 : 0;
	put_be64(cmd->cmnd + 2, lba);
	put_be32(cmd->cmnd + 10, nr_blocks);
	cmd->cmd_len = 16;
	cmd->write = true;
	/* sd sends one zeroed block (its special page); the LLD reads it. */
	cmd->sdb.buf = NULL;
	cmd->sdb.length = cmd->device->sector_size;
}

static enum sd_prep sd_setup_discard(struct scsi_cmnd *cmd, struct request *rq)
{
	struct scsi_device *sdp = cmd->device;
	unsigned int shift = __builtin_ctz(sdp->sector_size) - SECTOR_SHIFT;
	uint64_t lba = blk_rq_pos(rq) >> shift;
	uint32_t nr_blocks = blk_rq_sectors(rq) >> shift;

	switch (sdp->provisioning_mode) {
	case SD_LBP_UNMAP: /* sd_setup_unmap_cmnd */
		memset(cmd->cmnd, 0, 10);
		cmd->cmnd[0] = UNMAP;
		put_be16(cmd->cmnd + 7, 24);
		cmd->cmd_len = 10;
		memset(cmd->payload, 0, sizeof(cmd->payload));
		put_be16(cmd->payload, 6 + 16);
		put_be16(cmd->payload + 2, 16);
		put_be64(cmd->payload + 8, lba);
		put_be32(cmd->payload + 16, nr_blocks);
		cmd->sdb.buf = cmd->payload;
		cmd->sdb.length = 24;
		cmd->write = true;
		return SD_PREP_OK;
	case SD_LBP_WS16:
		sd_setup_ws16(cmd, lba, nr_blocks, true);
		return SD_PREP_OK;
	default:
		return SD_PREP_TARGET;
	}
}

enum sd_prep sd_init_command(struct scsi_cmnd *cmd)
{
	struct request *rq = scsi_cmd_to_rq(cmd);
	struct scsi_device *sdp = cmd->device;
	unsigned int shift = __builtin_ctz(sdp->sector_size) - SECTOR_SHIFT;

	cmd->sdb.buf = NULL;
	cmd->sdb.length = 0;
	cmd->write = false;
	cmd->allowed = SD_MAX_RETRIES;
	switch (req_op(rq)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		return sd_setup_rw_cmnd(cmd, rq);
	case REQ_OP_FLUSH: /* sd_setup_flush_cmnd */
		memset(cmd->cmnd, 0, 10);
		cmd->cmnd[0] = SYNCHRONIZE_CACHE;
		cmd->cmd_len = 10;
		return SD_PREP_OK;
	case REQ_OP_DISCARD:
		return sd_setup_discard(cmd, rq);
	case REQ_OP_WRITE_ZEROES: /* sd_setup_write_zeroes_cmnd */
		sd_setup_ws16(cmd, blk_rq_pos(rq) >> shift,
			      blk_rq_sectors(rq) >> shift,
			      !(rq->cmd_flags & REQ_NOUNMAP) && sdp->lbprz &&
				      sdp->provisioning_mode == SD_LBP_WS16);
		return SD_PREP_OK;
	default:
		return SD_PREP_IOERR;
	}
}

/*
 * sd_completed_bytes: the blocks before the one the sense names are good,
 * but no more than the target says it transferred (bufflen - resid).
 */
static unsigned int sd_completed_bytes(struct scsi_cmnd *cmd)
{
	struct request *rq = scsi_cmd_to_rq(cmd);
	struct scsi_device *sdp = cmd->device;
	unsigned int shift = __builtin_ctz(sdp->sector_size) - SECTOR_SHIFT;
	uint64_t start_lba = blk_rq_pos(rq) >> shift;
	uint64_t end_lba = start_lba + (scsi_bufflen(cmd) / sdp->sector_size);
	uint32_t transferred = scsi_bufflen(cmd) - cmd->resid;
	uint64_t bad_lba, good;

	if (!scsi_get_sense_info_fld(cmd->sense_buffer, SCSI_SENSE_BUFFERSIZE,
				     &bad_lba))
		return 0;
	if (scsi_bufflen(cmd) <= sdp->sector_size)
		return 0;
	if (bad_lba < start_lba || bad_lba >= end_lba)
		return 0;
	good = (bad_lba - start_lba) * sdp->sector_size;
	return good < transferred ? (unsigned int)good : transferred;
}

unsigned int sd_done(struct scsi_cmnd *cmd)
{
	struct scsi_sense_hdr sshdr;
	unsigned int good_bytes = cmd->result ? 0 : scsi_bufflen(cmd);

	if (status_byte(cmd->result) != SAM_STAT_CHECK_CONDITION ||
	    !scsi_normalize_sense(cmd->sense_buffer, SCSI_SENSE_BUFFERSIZE,
				  &sshdr))
		return good_bytes;
	switch (sshdr.sense_key) {
	case HARDWARE_ERROR:
	case MEDIUM_ERROR:
		return sd_completed_bytes(cmd);
	case RECOVERED_ERROR:
		return scsi_bufflen(cmd);
	case ILLEGAL_REQUEST:
		/* sd stops sending what the target refuses */
		if ((sshdr.asc == INVALID_OPCODE ||
		     sshdr.asc == INVALID_FIELD_IN_CDB) &&
		    (cmd->cmnd[0] == UNMAP || cmd->cmnd[0] == WRITE_SAME_16))
			cmd->device->provisioning_mode = SD_LBP_DISABLE;
		return good_bytes;
	default:
		return good_bytes;
	}
}

/* ------------------------------------------------------------------ */
/* probe                                                               */

static int sd_exec(struct scsi_device *sdp, const uint8_t *cdb,
		   unsigned int len, void *buf, uint32_t buflen,
		   struct scsi_sense_hdr *sshdr)
{
	uint8_t sense[SCSI_SENSE_BUFFERSIZE] = {0};
	int res = scsi_execute_cmd(sdp, cdb, len, false, buf, buflen, sense);

	if (sshdr)
		scsi_normalize_sense(sense, sizeof(sense), sshdr);
	return res;
}

/* sd_spinup_disk: TEST UNIT READY until no unit attention is left. */
static int sd_spinup_disk(struct scsi_device *sdp, struct mq_err *e)
{
	static const uint8_t tur[6] = {TEST_UNIT_READY};
	struct scsi_sense_hdr sshdr;
	int res = 0, retries;

	for (retries = 0; retries < 3; retries++) {
		res = sd_exec(sdp, tur, 6, NULL, 0, &sshdr);
		if (res == 0)
			return 0;
		if (res < 0 || sshdr.sense_key != UNIT_ATTENTION)
			break;
	}
	return mq_err_set(e, "TEST UNIT READY: result 0x%x, sense %x/%02x/%02x",
			  res, sshdr.sense_key, sshdr.asc, sshdr.ascq);
}

static int sd_read_capacity(struct scsi_device *sdp, struct mq_err *e)
{
	uint8_t cdb[16] = {SERVICE_ACTION_IN_16, SAI_READ_CAPACITY_16};
	uint8_t buf[32] = {0};
	int res;

	put_be32(cdb + 10, sizeof(buf));
	res = sd_exec(sdp, cdb, 16, buf, sizeof(buf), NULL);
	if (res)
		return mq_err_set(e, "READ CAPACITY(16): result 0x%x", res);
	sdp->capacity = get_be64(buf) + 1;
	sdp->sector_size = get_be32(buf + 8);
	sdp->lbpme = buf[14] & 0x80;
	sdp->lbprz = buf[14] & 0x40;
	if (sdp->sector_size < 512 || sdp->sector_size > 4096 ||
	    (sdp->sector_size & (sdp->sector_size - 1)))
		return mq_err_set(e, "READ CAPACITY(16): block size %u",
				  sdp->sector_size);
	if (sdp->capacity > 0xffffffff)
		sdp->use_16_for_rw = true;
	return 0;
}

static int sd_inquiry_vpd(struct scsi_device *sdp, uint8_t page, uint8_t *buf,
			  uint16_t len)
{
	uint8_t cdb[6] = {INQUIRY, 1, page};

	put_be16(cdb + 3, len);
	memset(buf, 0, len);
	return sd_exec(sdp, cdb, 6, buf, len, NULL);
}

/* sd_read_block_limits, sd_read_block_provisioning, sd_config_discard */
static void sd_read_vpd(struct scsi_device *sdp)
{
	uint8_t pages[64], b0[64], b2[8];
	bool has_b0 = false, has_b2 = false, lbpu = false, lbpws = false;
	unsigned int i, n;

	sdp->provisioning_mode = SD_LBP_DISABLE;
	if (sd_inquiry_vpd(sdp, 0x00, pages, sizeof(pages)))
		return;
	n = get_be16(pages + 2);
	for (i = 0; i < n && 4 + i < sizeof(pages); i++) {
		has_b0 |= pages[4 + i] == 0xb0;
		has_b2 |= pages[4 + i] == 0xb2;
	}
	if (has_b0 && !sd_inquiry_vpd(sdp, 0xb0, b0, sizeof(b0))) {
		sdp->max_unmap_blocks = get_be32(b0 + 20);
		sdp->max_ws_blocks = (uint32_t)get_be64(b0 + 36);
	}
	if (has_b2 && !sd_inquiry_vpd(sdp, 0xb2, b2, sizeof(b2))) {
		lbpu = b2[5] & 0x80;
		lbpws = b2[5] & 0x40;
	}
	if (!sdp->lbpme)
		return;
	if (!has_b2)
		sdp->provisioning_mode =
			sdp->max_unmap_blocks ? SD_LBP_UNMAP : SD_LBP_WS16;
	else if (lbpu && sdp->max_unmap_blocks)
		sdp->provisioning_mode = SD_LBP_UNMAP;
	else if (lbpws)
		sdp->provisioning_mode = SD_LBP_WS16;
}

/* sd_read_cache_type: WCE from the caching page, DPOFUA from the header. */
static void sd_read_cache_type(struct scsi_device *sdp)
{
	uint8_t buf[64] = {0}, cdb[10] = {0};
	unsigned int hdr, bd_len, off;
	int res;

	if (sdp->use_10_for_ms) {
		cdb[0] = MODE_SENSE_10;
		cdb[2] = 0x08;
		put_be16(cdb + 7, sizeof(buf));
		res = sd_exec(sdp, cdb, 10, buf, sizeof(buf), NULL);
		hdr = 8;
		bd_len = get_be16(buf + 6);
		sdp->dpofua = buf[3] & 0x10;
	} else {
		cdb[0] = MODE_SENSE;
		cdb[2] = 0x08;
		cdb[4] = sizeof(buf);
		res = sd_exec(sdp, cdb, 6, buf, sizeof(buf), NULL);
		hdr = 4;
		bd_len = buf[3];
		sdp->dpofua = buf[2] & 0x10;
	}
	off = hdr + bd_len;
	if (res || off + 3 > sizeof(buf) || (buf[off] & 0x3f) != 0x08) {
		/* "Assuming drive cache: write through" */
		sdp->wce = false;
		sdp->dpofua = false;
		return;
	}
	sdp->wce = buf[off + 2] & 0x04;
}

int sd_revalidate_disk(struct scsi_device *sdp, struct mq_err *e)
{
	struct queue_limits *lim = &sdp->request_queue->limits;
	unsigned int bs;
	uint64_t max;

	/* Until READ CAPACITY says, the smallest block. */
	sdp->sector_size = 512;
	sdp->capacity = UINT64_MAX >> 10;
	if (sd_spinup_disk(sdp, e) || sd_read_capacity(sdp, e))
		return -1;
	sd_read_vpd(sdp);
	sd_read_cache_type(sdp);

	bs = sdp->sector_size;
	lim->logical_block_size = bs;
	lim->physical_block_size = bs > 4096 ? bs : 4096;
	lim->max_sectors = 2560; /* BLK_DEF_MAX_SECTORS: 1280 KiB */
	lim->max_segments = 128; /* SG_ALL */
	lim->rotational = false;
	/* sd_set_flush_flag */
	lim->write_cache = sdp->wce;
	lim->fua = sdp->wce && sdp->dpofua;
	lim->max_discard_sectors = 0;
	lim->discard_granularity = 0;
	switch (sdp->provisioning_mode) {
	case SD_LBP_UNMAP:
		max = sdp->max_unmap_blocks < SD_MAX_XFER_BLOCKS
			      ? sdp->max_unmap_blocks
			      : SD_MAX_XFER_BLOCKS;
		break;
	case SD_LBP_WS16:
		max = sdp->max_ws_blocks &&
				      sdp->max_ws_blocks < SD_MAX_WS16_BLOCKS
			      ? sdp->max_ws_blocks
			      : SD_MAX_WS16_BLOCKS;
		break;
	default:
		max = 0;
		break;
	}
	max = max * (bs >> SECTOR_SHIFT);
	lim->max_discard_sectors =
		(uint32_t)(max < UINT32_MAX >> SECTOR_SHIFT
				   ? max
				   : UINT32_MAX >> SECTOR_SHIFT);
	if (max)
		lim->discard_granularity = lim->physical_block_size;
	/* sd_config_write_same: WRITE SAME 16, up to SD_MAX_WS16_BLOCKS */
	max = (uint64_t)(sdp->max_ws_blocks &&
					 sdp->max_ws_blocks < SD_MAX_WS16_BLOCKS
				 ? sdp->max_ws_blocks
				 : SD_MAX_WS16_BLOCKS) *
	      (bs >> SECTOR_SHIFT);
	lim->max_write_zeroes_sectors =
		(uint32_t)(max < UINT32_MAX >> SECTOR_SHIFT
				   ? max
				   : UINT32_MAX >> SECTOR_SHIFT);
	pr_info("%s: %" PRIu64 " %u-byte logical blocks, write cache: %s, "
		"%s FUA, discard: %s",
		sdp->request_queue->name, sdp->capacity, bs,
		sdp->wce ? "enabled" : "disabled",
		sdp->dpofua ? "supports" : "doesn't support",
		sdp->provisioning_mode == SD_LBP_UNMAP	? "UNMAP"
		: sdp->provisioning_mode == SD_LBP_WS16 ? "WRITE SAME(16)"
							: "none");
	return 0;
}
