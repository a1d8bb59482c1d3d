// SPDX-License-Identifier: GPL-2.0
/*
 * scsi and sata-ssd: a SCSI host with one disk LUN on scsi-mq, the LLD
 * after Linux 6.6's drivers/scsi/scsi_debug.c, the kernel's own emulated
 * host.  sd.c builds the CDBs, scsi_lib.c and scsi_error.c are the mid
 * layer; this file executes the CDBs against the store.
 *
 *  - scsi: nr_hw_queues=4, can_queue=64 tags per hardware queue (shared
 *    with host_tagset=1), cmd_per_lun=32 as the LUN's dispatch budget, a
 *    flash SSD behind a 12 Gb/s SAS link, UNMAP (lbpu=1).  With 4
 *    hardware queues the default policy gives it no scheduler.
 *  - sata-ssd: an AHCI port through libata's SAT: one hardware queue,
 *    NCQ depth 32, the SATA flash SSD of ssd-timing.h, TRIM as WRITE
 *    SAME 16 with UNMAP (lbpws=1), MODE SENSE 10.  One queue: bfq.
 *
 * Commands: INQUIRY (VPD 0x00, 0xb0 block limits, 0xb2 provisioning),
 * READ CAPACITY 16, MODE SENSE 6/10 (the caching page: WCE unless wce=0
 * or opts 0x1000; DPOFUA), REPORT LUNS, TEST UNIT READY, READ/WRITE
 * 10/16, SYNCHRONIZE CACHE 10/16, UNMAP, WRITE SAME 16.  Anything else
 * is ILLEGAL REQUEST 05/20/00; errors are sense data, fixed or (dsense=1)
 * descriptor format.  A new device reports UNIT ATTENTION 29/00 first.
 * scsi_debug's fault injection: opts bits and every_nth, with its names
 * and values, medium_error_start/medium_error_count.  With wce=1 writes
 * wait in a volatile cache (sdebug-cache.h, ours) until SYNCHRONIZE
 * CACHE; FUA writes go through.
 *
 * queuecommand executes the command at once and queues it to complete
 * when the timing model says; the host's completion thread (scsi_debug's
 * hrtimers) calls scsi_done then.  It sleeps on a condition variable
 * with a timer slack of 1 ns, as the irq thread of backends/common does,
 * and spins the last spin_us (50) before a command is due, since a woken
 * thread runs tens of microseconds late on a busy machine; not when more
 * commands are queued than the client's latency could notice
 * (sdebug_should_spin).  With time_scale=0 commands complete inside
 * queuecommand.
 *
 * use_blk_mq=0 asked for the legacy request path, which seed 002 made
 * non-default (2018) and Linux removed in 5.0: it is refused.
 *
 * Fault: stall=1 makes the target hold every command it gets, as a hung
 * target would, until stall=0; held past io_timeout, they go through
 * error handling, and a hung target answers no abort, reset or TEST UNIT
 * READY (ours: scsi_debug's always succeed).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "scsi.h"
#include "sdebug-cache.h"
#include "ssd-timing.h"
#include "../device.h"
#include "../media/media.h"
#include "../../server/mq/log.h"

struct sdebug_host {
	struct Scsi_Host shost;
	struct scsi_device sdev;
	struct gendisk disk;
	struct mq_device *mdev;
	const char *model;
	struct media *media; /* the LUN's blocks */
	struct ssd_model ssd;
	bool ssd_ready;

	/* The completion thread and the commands it waits to complete. */
	pthread_t thread;
	bool thread_ready;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	bool sync_ready;
	TAILQ_HEAD(scsi_cmnd_list, scsi_cmnd) queued; /* by due_ns */
	unsigned int nr_queued;
	bool stalled;
	bool stopping;
	uint64_t spin_ns;
	/* How late the thread completed timed commands, for the benchmark. */
	uint64_t late_ns, nr_timed;

	atomic_ulong reads, writes, discards, zeroes, flushes;

	/* The LUN as scsi_debug answers for it. */
	uint64_t capacity; /* logical blocks */
	unsigned int bs;
	uint32_t max_xfer_blocks;
	bool lbpu, lbpws, lbprz, lbp, dsense, wce;
	char inq_vendor[9], inq_product[17];
	atomic_bool ua_por;	   /* SDEBUG_UA_POR pending */
	struct sdebug_cache cache; /* the volatile write cache (wce=1) */

	/* scsi_debug's fault injection */
	/* keys, and fault/ triggers while it runs */
	atomic_uint opts, every_nth;
	_Atomic uint64_t medium_error_start, medium_error_count;
	atomic_ulong cmnd_count;
	atomic_int queue_full_left; /* fault/queue_full: TSFs to send */
	atomic_ulong medium_errors, recovered_errors, unit_attentions, tsf_sent,
		host_busy_injected, timeouts_injected;
};

#define SDEBUG_MAX_WS_BLOCKS 0x7fffff

/* ------------------------------------------------------------------ */
/* the target                                                          */

/* scsi_debug's opts bits (drivers/scsi/scsi_debug.c) */
#define SDEBUG_OPT_MEDIUM_ERR	 0x2
#define SDEBUG_OPT_TIMEOUT	 0x4
#define SDEBUG_OPT_RECOVERED_ERR 0x8
#define SDEBUG_OPT_MAC_TIMEOUT	 0x80
#define SDEBUG_OPT_RARE_TSF	 0x800
#define SDEBUG_OPT_N_WCE	 0x1000
#define SDEBUG_OPT_HOST_BUSY	 0x8000
#define SDEBUG_OPT_KNOWN                                                       \
	(SDEBUG_OPT_MEDIUM_ERR | SDEBUG_OPT_TIMEOUT |                          \
	 SDEBUG_OPT_RECOVERED_ERR | SDEBUG_OPT_MAC_TIMEOUT |                   \
	 SDEBUG_OPT_RARE_TSF | SDEBUG_OPT_N_WCE | SDEBUG_OPT_HOST_BUSY)

/* OPT_MEDIUM_ERR_ADDR, OPT_MEDIUM_ERR_NUM */
#define SDEBUG_MEDIUM_ERR_ADDR 0x1234
#define SDEBUG_MEDIUM_ERR_NUM  10

/* device_qfull_result, as 6.6 has it (DID_ABORT since 5.13) */
#define SDEBUG_QFULL_RESULT ((DID_ABORT << 16) | SAM_STAT_TASK_SET_FULL)

static void mk_sense_buffer(struct sdebug_host *h, struct scsi_cmnd *cmd,
			    uint8_t key, uint8_t asc, uint8_t ascq)
{
	scsi_build_sense(cmd, h->dsense, key, asc, ascq);
}

/* fill_from_dev_buffer: copy a response into the command's buffer. */
static void fill_from_dev_buffer(struct scsi_cmnd *cmd, const void *arr,
				 uint32_t len)
{
	uint32_t n = len < cmd->sdb.length ? len : cmd->sdb.length;

	if (cmd->sdb.buf)
		memcpy(cmd->sdb.buf, arr, n);
	cmd->resid = cmd->sdb.length - n;
}

static int check_device_access_params(struct sdebug_host *h,
				      struct scsi_cmnd *cmd, uint64_t lba,
				      uint64_t num)
{
	if (lba + num > h->capacity || lba + num < lba) {
		mk_sense_buffer(h, cmd, ILLEGAL_REQUEST, LBA_OUT_OF_RANGE, 0);
		return SAM_STAT_CHECK_CONDITION;
	}
	if (num > h->max_xfer_blocks) {
		mk_sense_buffer(h, cmd, ILLEGAL_REQUEST, INVALID_FIELD_IN_CDB,
				0);
		return SAM_STAT_CHECK_CONDITION;
	}
	return 0;
}

/* The data of a READ or WRITE: the request's bios, in order. */
static int sdebug_rw_bios(struct sdebug_host *h, struct scsi_cmnd *cmd,
			  uint64_t pos, uint64_t len)
{
	struct request *rq = scsi_cmd_to_rq(cmd);
	struct bio *bio;
	int err = 0;

	rq_for_each_bio (bio, rq) {
		uint32_t n = bio->bi_size < len ? bio->bi_size : (uint32_t)len;

		if (!n)
			break;
		err = cmd->write ? sdebug_cache_write(&h->cache, bio->bi_buf, n,
						      pos, cmd->cmnd[1] & 0x8)
				 : sdebug_cache_read(&h->cache, bio->bi_buf, n,
						     pos);
		if (err)
			break;
		pos += n;
		len -= n;
	}
	return err;
}

static bool sdebug_medium_error_hit(struct sdebug_host *h, uint64_t lba,
				    uint32_t num)
{
	uint64_t start = atomic_load(&h->medium_error_start);
	uint64_t count = atomic_load(&h->medium_error_count);

	return lba + num > start && lba < start + count;
}

static int sdebug_parse_u64(const char *v, uint64_t *out)
{
	char *end;

	if (!v || !*v || *v == '-')
		return EINVAL;
	errno = 0;
	*out = strtoull(v, &end, 0);
	return errno || *end ? EINVAL : 0;
}

static int sdebug_check_opts(unsigned int opts, struct mq_err *e)
{
	if (!(opts & ~SDEBUG_OPT_KNOWN))
		return 0;
	mq_err_set(e,
		   "opts=0x%x: this model knows 0x%x (medium error 0x2, "
		   "timeout 0x4, recovered error 0x8, mac timeout 0x80, "
		   "rare tsf 0x800, n_wce 0x1000, host busy 0x8000)",
		   opts, SDEBUG_OPT_KNOWN);
	return EINVAL;
}

static int resp_read_write(struct sdebug_host *h, struct scsi_cmnd *cmd,
			   bool inject, unsigned int opts)
{
	const uint8_t *c = cmd->cmnd;
	bool is16 = c[0] == READ_16 || c[0] == WRITE_16;
	uint64_t lba = is16 ? get_be64(c + 2) : get_be32(c + 2);
	uint32_t num = is16 ? get_be32(c + 10) : get_be16(c + 7);
	int ret;

	ret = check_device_access_params(h, cmd, lba, num);
	if (ret)
		return ret;
	if (!cmd->write && (opts & SDEBUG_OPT_MEDIUM_ERR) &&
	    sdebug_medium_error_hit(h, lba, num)) {
		/* claim unrecoverable read error */
		mk_sense_buffer(h, cmd, MEDIUM_ERROR, UNRECOVERED_READ_ERR, 0);
		/* the info field of fixed sense, as scsi_debug fills it */
		if ((cmd->sense_buffer[0] & 0x7f) == 0x70) {
			cmd->sense_buffer[0] |= 0x80;
			put_be32(cmd->sense_buffer + 3,
				 (uint32_t)(lba < SDEBUG_MEDIUM_ERR_ADDR
						    ? SDEBUG_MEDIUM_ERR_ADDR
						    : lba));
		}
		cmd->resid = scsi_bufflen(cmd);
		atomic_fetch_add(&h->medium_errors, 1);
		return SAM_STAT_CHECK_CONDITION;
	}
	if (sdebug_rw_bios(h, cmd, lba * h->bs, (uint64_t)num * h->bs)) {
		mk_sense_buffer(h, cmd, MEDIUM_ERROR, UNRECOVERED_READ_ERR, 0);
		return SAM_STAT_CHECK_CONDITION;
	}
	if (inject && (opts & SDEBUG_OPT_RECOVERED_ERR)) {
		mk_sense_buffer(h, cmd, RECOVERED_ERROR, THRESHOLD_EXCEEDED, 0);
		atomic_fetch_add(&h->recovered_errors, 1);
		return SAM_STAT_CHECK_CONDITION;
	}
	return 0;
}

static int resp_inquiry(struct sdebug_host *h, struct scsi_cmnd *cmd)
{
	const uint8_t *c = cmd->cmnd;
	uint8_t arr[96] = {0};

	if (!(c[1] & 1)) {  /* standard INQUIRY */
		arr[0] = 0; /* direct-access block device */
		arr[2] = 7; /* SPC-5 */
		arr[3] = 2; /* response data format 2 */
		arr[4] = 92;
		arr[7] = 0x02; /* CMDQUE */
		memcpy(arr + 8, h->inq_vendor, 8);
		memcpy(arr + 16, h->inq_product, 16);
		memcpy(arr + 32, "0191", 4);
		fill_from_dev_buffer(cmd, arr, 96);
		return 0;
	}
	arr[1] = c[2];
	switch (c[2]) {
	case 0x00: /* supported VPD pages */
		arr[3] = h->lbp ? 3 : 2;
		arr[4] = 0x00;
		arr[5] = 0xb0;
		arr[6] = 0xb2;
		fill_from_dev_buffer(cmd, arr, 4u + arr[3]);
		return 0;
	case 0xb0: /* block limits */
		put_be16(arr + 2, 0x3c);
		put_be32(arr + 8, h->max_xfer_blocks);
		if (h->lbpu) {
			put_be32(arr + 20, 0xffffffff); /* max unmap LBAs */
			put_be32(arr + 24, 1);		/* descriptors */
		}
		put_be32(arr + 28, 1); /* unmap granularity */
		put_be64(arr + 36, h->lbpws ? SDEBUG_MAX_WS_BLOCKS : 0);
		fill_from_dev_buffer(cmd, arr, 64);
		return 0;
	case 0xb2: /* logical block provisioning */
		if (!h->lbp)
			break;
		put_be16(arr + 2, 4);
		arr[5] = (h->lbpu ? 0x80 : 0) | (h->lbpws ? 0x40 : 0) |
			 (h->lbprz ? 0x04 : 0);
		arr[6] = 0x02; /* thin provisioned */
		fill_from_dev_buffer(cmd, arr, 8);
		return 0;
	default:
		break;
	}
	mk_sense_buffer(h, cmd, ILLEGAL_REQUEST, INVALID_FIELD_IN_CDB, 0);
	return SAM_STAT_CHECK_CONDITION;
}

static int resp_readcap16(struct sdebug_host *h, struct scsi_cmnd *cmd)
{
	uint8_t arr[32] = {0};

	put_be64(arr, h->capacity - 1);
	put_be32(arr + 8, h->bs);
	arr[13] = (uint8_t)(__builtin_ctz(4096 / h->bs)); /* LBPPBE */
	if (h->lbp)
		arr[14] = 0x80 | (h->lbprz ? 0x40 : 0); /* LBPME, LBPRZ */
	fill_from_dev_buffer(cmd, arr, 32);
	return 0;
}

/* resp_mode_sense: the caching page (WCE), DPOFUA in the header. */
static int resp_mode_sense(struct sdebug_host *h, struct scsi_cmnd *cmd)
{
	const uint8_t *c = cmd->cmnd;
	bool ten = c[0] == MODE_SENSE_10;
	uint8_t page = c[2] & 0x3f, arr[64] = {0};
	unsigned int off = ten ? 8 : 4;

	if (page != 0x08 && page != 0x3f) {
		mk_sense_buffer(h, cmd, ILLEGAL_REQUEST, INVALID_FIELD_IN_CDB,
				0);
		return SAM_STAT_CHECK_CONDITION;
	}
	/* caching page: WCE unless SDEBUG_OPT_N_WCE */
	arr[off] = 0x08;
	arr[off + 1] = 18;
	arr[off + 2] = h->wce ? 0x14 : 0x10;
	if (ten) {
		put_be16(arr, (uint16_t)(off + 20 - 2));
		arr[3] = 0x10; /* DPOFUA */
	} else {
		arr[0] = (uint8_t)(off + 20 - 1);
		arr[2] = 0x10;
	}
	fill_from_dev_buffer(cmd, arr, off + 20);
	return 0;
}

static int resp_report_luns(struct sdebug_host *h, struct scsi_cmnd *cmd)
{
	uint8_t arr[16] = {0};

	(void)h;
	put_be32(arr, 8); /* one LUN: 0 */
	fill_from_dev_buffer(cmd, arr, 16);
	return 0;
}

static int resp_unmap_ws(struct sdebug_host *h, struct scsi_cmnd *cmd)
{
	const uint8_t *c = cmd->cmnd;
	uint64_t lba;
	uint32_t num;
	bool unmap;
	int ret;

	if (c[0] == UNMAP) {
		const uint8_t *p = cmd->sdb.buf;

		if (!h->lbpu || !p || cmd->sdb.length < 24) {
			mk_sense_buffer(h, cmd, ILLEGAL_REQUEST,
					INVALID_FIELD_IN_CDB, 0);
			return SAM_STAT_CHECK_CONDITION;
		}
		lba = get_be64(p + 8);
		num = get_be32(p + 16);
		unmap = true;
	} else {
		lba = get_be64(c + 2);
		num = get_be32(c + 10);
		unmap = c[1] & 0x8;
		if (unmap && !h->lbpws) {
			mk_sense_buffer(h, cmd, ILLEGAL_REQUEST,
					INVALID_FIELD_IN_CDB, 0);
			return SAM_STAT_CHECK_CONDITION;
		}
	}
	if (lba + num > h->capacity || lba + num < lba) {
		mk_sense_buffer(h, cmd, ILLEGAL_REQUEST, LBA_OUT_OF_RANGE, 0);
		return SAM_STAT_CHECK_CONDITION;
	}
	/* sd's WRITE SAME block is zeroes; an unmapped block reads zeroes */
	ret = sdebug_cache_zero(&h->cache, (uint64_t)num * h->bs, lba * h->bs,
				unmap);
	if (ret) {
		mk_sense_buffer(h, cmd, MEDIUM_ERROR, 0x0c,
				0); /* write error */
		return SAM_STAT_CHECK_CONDITION;
	}
	return 0;
}

/*
 * Execute the CDB: the result byte, with sense built on CHECK CONDITION.
 * A pending unit attention (power on, reset) is reported first, to any
 * command but INQUIRY, REPORT LUNS and REQUEST SENSE, as make_ua does.
 */
static int sdebug_execute(struct sdebug_host *h, struct scsi_cmnd *cmd,
			  bool inject, unsigned int opts)
{
	const uint8_t op = cmd->cmnd[0];

	if (op != INQUIRY && op != REPORT_LUNS && op != REQUEST_SENSE &&
	    atomic_exchange(&h->ua_por, false)) {
		mk_sense_buffer(h, cmd, UNIT_ATTENTION, UA_RESET_ASC, 0);
		atomic_fetch_add(&h->unit_attentions, 1);
		return SAM_STAT_CHECK_CONDITION;
	}
	switch (op) {
	case READ_10:
	case READ_16:
		atomic_fetch_add(&h->reads, 1);
		return resp_read_write(h, cmd, inject, opts);
	case WRITE_10:
	case WRITE_16:
		atomic_fetch_add(&h->writes, 1);
		return resp_read_write(h, cmd, inject, opts);
	case SYNCHRONIZE_CACHE:
	case SYNCHRONIZE_CACHE_16:
		atomic_fetch_add(&h->flushes, 1);
		if (sdebug_cache_sync(&h->cache)) {
			mk_sense_buffer(h, cmd, MEDIUM_ERROR, 0x0c, 0);
			return SAM_STAT_CHECK_CONDITION;
		}
		return 0;
	case UNMAP:
		atomic_fetch_add(&h->discards, 1);
		return resp_unmap_ws(h, cmd);
	case WRITE_SAME_16:
		atomic_fetch_add(cmd->cmnd[1] & 0x8 ? &h->discards : &h->zeroes,
				 1);
		return resp_unmap_ws(h, cmd);
	case TEST_UNIT_READY:
		return 0;
	case INQUIRY:
		return resp_inquiry(h, cmd);
	case SERVICE_ACTION_IN_16:
		if ((cmd->cmnd[1] & 0x1f) == SAI_READ_CAPACITY_16)
			return resp_readcap16(h, cmd);
		break;
	case MODE_SENSE:
	case MODE_SENSE_10:
		return resp_mode_sense(h, cmd);
	case REPORT_LUNS:
		return resp_report_luns(h, cmd);
	default:
		break;
	}
	mk_sense_buffer(h, cmd, ILLEGAL_REQUEST, INVALID_OPCODE, 0);
	return SAM_STAT_CHECK_CONDITION;
}

static bool sdebug_is_media_access(uint8_t op)
{
	return op == READ_10 || op == READ_16 || op == WRITE_10 ||
	       op == WRITE_16 || op == WRITE_SAME_16 || op == UNMAP ||
	       op == SYNCHRONIZE_CACHE || op == SYNCHRONIZE_CACHE_16;
}

/* Queue cmd in due order; the thread is woken if it comes first. */
static void sdebug_queue_cmd(struct sdebug_host *h, struct scsi_cmnd *cmd)
{
	struct scsi_cmnd *pos;

	pthread_mutex_lock(&h->lock);
	pos = TAILQ_LAST(&h->queued, scsi_cmnd_list);
	while (pos && pos->due_ns > cmd->due_ns)
		pos = TAILQ_PREV(pos, scsi_cmnd_list, entry);
	if (pos)
		TAILQ_INSERT_AFTER(&h->queued, pos, cmd, entry);
	else
		TAILQ_INSERT_HEAD(&h->queued, cmd, entry);
	h->nr_queued++;
	if (TAILQ_FIRST(&h->queued) == cmd)
		pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

static int sdebug_queuecommand(struct Scsi_Host *shost, struct scsi_cmnd *cmd)
{
	struct sdebug_host *h = shost->hostdata;
	struct request *rq = scsi_cmd_to_rq(cmd);
	uint8_t op = cmd->cmnd[0];
	enum ssd_op sop;
	unsigned int every_nth =
		atomic_load_explicit(&h->every_nth, memory_order_relaxed);
	unsigned int opts =
		atomic_load_explicit(&h->opts, memory_order_relaxed);
	bool now, inject = false;
	int status;

	/* every_nth: inject on every nth command (inject_on_this_cmd) */
	if (every_nth) {
		unsigned long n = atomic_fetch_add(&h->cmnd_count, 1) + 1;

		inject = n % every_nth == 0;
	}
	if (inject && (opts & SDEBUG_OPT_HOST_BUSY)) {
		atomic_fetch_add(&h->host_busy_injected, 1);
		return SCSI_MLQUEUE_HOST_BUSY;
	}
	if (inject &&
	    ((opts & SDEBUG_OPT_TIMEOUT) ||
	     ((opts & SDEBUG_OPT_MAC_TIMEOUT) && sdebug_is_media_access(op)))) {
		/* ignore the command: it times out */
		atomic_fetch_add(&h->timeouts_injected, 1);
		cmd->lld_dropped = true;
		return 0;
	}
	if (atomic_load(&h->queue_full_left) > 0 &&
	    atomic_fetch_sub(&h->queue_full_left, 1) > 0) {
		/* fault/queue_full: a target's TASK SET FULL (ours) */
		cmd->result = SAM_STAT_TASK_SET_FULL;
		atomic_fetch_add(&h->tsf_sent, 1);
		status = -1;
	} else if (inject && (opts & SDEBUG_OPT_RARE_TSF)) {
		cmd->result = SDEBUG_QFULL_RESULT;
		atomic_fetch_add(&h->tsf_sent, 1);
		status = -1;
	} else {
		status = sdebug_execute(h, cmd, inject, opts);
	}
	if (status >= 0)
		cmd->result = status; /* check_condition_result or good */

	sop = op == READ_10 || op == READ_16	 ? SSD_READ
	      : op == WRITE_10 || op == WRITE_16 ? SSD_WRITE
						 : SSD_FLUSH;
	cmd->due_ns = ssd_model_submit(
		&h->ssd, sop,
		sop != SSD_FLUSH && rq->bio ? blk_rq_bytes(rq) : 0,
		mq_now_ns());

	pthread_mutex_lock(&h->lock);
	/* A command after the thread stopped (none should come) ends now. */
	now = (h->ssd.scale <= 0 && !h->stalled) || h->stopping;
	pthread_mutex_unlock(&h->lock);
	if (now)
		scsi_done(cmd);
	else
		sdebug_queue_cmd(h, cmd);
	return 0;
}

/* scsi_debug_abort: take the command off the queue; found or not, done. */
static int sdebug_abort(struct scsi_cmnd *cmd)
{
	struct sdebug_host *h = cmd->device->host->hostdata;
	struct scsi_cmnd *pos;
	int ret = SUCCESS;

	pthread_mutex_lock(&h->lock);
	if (h->stalled) {
		ret = FAILED; /* ours: a hung target answers no abort */
	} else {
		TAILQ_FOREACH (pos, &h->queued, entry)
			if (pos == cmd) {
				TAILQ_REMOVE(&h->queued, cmd, entry);
				h->nr_queued--;
				break;
			}
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}

/* scsi_debug_device_reset: a unit attention follows (SDEBUG_UA_POR). */
static int sdebug_device_reset(struct scsi_cmnd *cmd)
{
	struct sdebug_host *h = cmd->device->host->hostdata;
	bool stalled;

	pthread_mutex_lock(&h->lock);
	stalled = h->stalled;
	pthread_mutex_unlock(&h->lock);
	if (stalled)
		return FAILED; /* ours: a hung target answers no reset */
	sdebug_abort(cmd);
	atomic_store(&h->ua_por, true);
	return SUCCESS;
}

/*
 * scsi_debug_host_reset: the host drops every command it holds.  The
 * others it completes with DID_RESET (scsi_debug leaves them to time
 * out); the failed one is the error handler's.
 */
static int sdebug_host_reset(struct scsi_cmnd *cmd)
{
	struct sdebug_host *h = cmd->device->host->hostdata;
	struct scsi_cmnd_list dropped = TAILQ_HEAD_INITIALIZER(dropped);
	struct scsi_cmnd *pos;

	pthread_mutex_lock(&h->lock);
	TAILQ_CONCAT(&dropped, &h->queued, entry);
	h->nr_queued = 0;
	pthread_mutex_unlock(&h->lock);
	while ((pos = TAILQ_FIRST(&dropped))) {
		TAILQ_REMOVE(&dropped, pos, entry);
		if (pos == cmd)
			continue;
		pos->result = DID_RESET << 16;
		scsi_done(pos);
	}
	atomic_store(&h->ua_por, true);
	return SUCCESS;
}

/* A hung target answers no TEST UNIT READY either. */
static bool sdebug_test_unit_ready(struct scsi_device *sdev)
{
	struct sdebug_host *h = sdev->host->hostdata;
	bool ok;

	pthread_mutex_lock(&h->lock);
	ok = !h->stalled;
	pthread_mutex_unlock(&h->lock);
	return ok;
}

static inline void sdebug_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Spin before a due time only for a command with at most
 * SDEBUG_SPIN_MAX_QUEUED commands queued, itself included.  Then the
 * thread's lateness is the client's latency.  With more queued, the
 * controller stays busy whatever the thread's lateness: a late
 * completion only takes up slack that the commands queued behind it
 * leave.  At 90k IOPS commands come due 11 us apart, so a thread that
 * spun to each of them would spin all the time and take a whole CPU
 * from the client and the server's event loops.  It sleeps to the due
 * time instead, and on waking completes whatever has come due.
 */
#define SDEBUG_SPIN_MAX_QUEUED 2

bool sdebug_should_spin(unsigned int nr_queued, uint64_t spin_ns)
{
	return spin_ns && nr_queued <= SDEBUG_SPIN_MAX_QUEUED;
}

/*
 * Sleep until due_ns, or until woken.  A thread wakes up tens of
 * microseconds late on a busy machine, a lot against a 100 us read, so
 * the last spin_us are spun, as a polling driver would, where
 * sdebug_should_spin says so.
 */
static void sdebug_wait_until(struct sdebug_host *h, uint64_t due_ns)
{
	uint64_t spin_ns =
		sdebug_should_spin(h->nr_queued, h->spin_ns) ? h->spin_ns : 0;
	uint64_t sleep_to = due_ns > spin_ns ? due_ns - spin_ns : 0;
	struct timespec ts = {
		.tv_sec = (time_t)(sleep_to / 1000000000ull),
		.tv_nsec = (long)(sleep_to % 1000000000ull),
	};

	if (mq_now_ns() < sleep_to) {
		pthread_cond_timedwait(&h->cond, &h->lock, &ts);
		return;
	}
	pthread_mutex_unlock(&h->lock);
	while (mq_now_ns() < due_ns)
		sdebug_cpu_relax();
	pthread_mutex_lock(&h->lock);
}

/*
 * The completion thread: complete each command at its due time, as
 * scsi_debug's hrtimer callback does.  Stopping completes what is left.
 */
static void *sdebug_completion_thread(void *arg)
{
	struct sdebug_host *h = arg;
	struct scsi_cmnd *cmd;

	/* Best effort: without it the waits are up to 50 us later. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0))
		pr_debug("scsi_debug: no 1 ns timer slack: %s",
			 strerror(errno));
	pthread_setname_np(pthread_self(), "scsi_done");
	pthread_mutex_lock(&h->lock);
	for (;;) {
		cmd = TAILQ_FIRST(&h->queued);
		if (!cmd) {
			if (h->stopping)
				break;
			pthread_cond_wait(&h->cond, &h->lock);
			continue;
		}
		if (!h->stopping) {
			if (h->stalled) {
				pthread_cond_wait(&h->cond, &h->lock);
				continue;
			}
			if (cmd->due_ns > mq_now_ns()) {
				sdebug_wait_until(h, cmd->due_ns);
				continue;
			}
		}
		TAILQ_REMOVE(&h->queued, cmd, entry);
		h->nr_queued--;
		if (!h->stopping) {
			uint64_t now = mq_now_ns();

			h->late_ns += now > cmd->due_ns ? now - cmd->due_ns : 0;
			h->nr_timed++;
		}
		pthread_mutex_unlock(&h->lock);
		scsi_done(cmd);
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

static const struct scsi_host_template sdebug_driver_template = {
	.name = "scsi_debug",
	.queuecommand = sdebug_queuecommand,
	.eh_abort_handler = sdebug_abort,
	.eh_device_reset_handler = sdebug_device_reset,
	.eh_host_reset_handler = sdebug_host_reset,
	.eh_test_unit_ready = sdebug_test_unit_ready,
};

/* ------------------------------------------------------------------ */
/* faults and attributes                                               */

static int sdebug_fault_stall(struct gendisk *disk, const char *value,
			      struct mq_err *e)
{
	struct sdebug_host *h = disk->private_data;
	bool on;

	if (!value || !strcmp(value, "1") || !strcmp(value, ""))
		on = true;
	else if (!strcmp(value, "0"))
		on = false;
	else {
		mq_err_set(e, "takes 1 (or nothing) or 0");
		return EINVAL;
	}
	pthread_mutex_lock(&h->lock);
	h->stalled = on;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
	pr_warn("%s: stall=%d: the target %s", disk->disk_name, on,
		on ? "holds every command until stall=0"
		   : "completes commands again");
	return 0;
}

/* medium_error=START[,COUNT]: MEDIUM ERROR on reads there; 0: off. */
static int sdebug_fault_medium_error(struct gendisk *disk, const char *value,
				     struct mq_err *e)
{
	struct sdebug_host *h = disk->private_data;
	char buf[64], *comma;
	uint64_t start, count = SDEBUG_MEDIUM_ERR_NUM;

	if (!value || strlen(value) >= sizeof(buf))
		goto bad;
	if (!strcmp(value, "0") || !strcmp(value, "off")) {
		atomic_fetch_and(&h->opts, ~SDEBUG_OPT_MEDIUM_ERR);
		pr_warn("%s: medium_error off", disk->disk_name);
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", value);
	comma = strchr(buf, ',');
	if (comma)
		*comma++ = 0;
	if (sdebug_parse_u64(buf, &start) ||
	    (comma && (sdebug_parse_u64(comma, &count) || !count)))
		goto bad;
	atomic_store(&h->medium_error_start, start);
	atomic_store(&h->medium_error_count, count);
	atomic_fetch_or(&h->opts, SDEBUG_OPT_MEDIUM_ERR);
	pr_warn("%s: medium_error: reads of LBA %" PRIu64 "-%" PRIu64
		" get MEDIUM ERROR 03/11/00",
		disk->disk_name, start, start + count - 1);
	return 0;
bad:
	mq_err_set(e, "takes START[,COUNT] (logical blocks), or 0 for off");
	return EINVAL;
}

static int sdebug_fault_opts(struct gendisk *disk, const char *value,
			     struct mq_err *e)
{
	struct sdebug_host *h = disk->private_data;
	uint64_t v;

	if (sdebug_parse_u64(value, &v) || v > UINT32_MAX) {
		mq_err_set(e, "takes scsi_debug's opts bits, e.g. 0x8");
		return EINVAL;
	}
	if (sdebug_check_opts((unsigned int)v, e))
		return EINVAL;
	atomic_store(&h->opts, (unsigned int)v);
	pr_warn("%s: opts=0x%x", disk->disk_name, (unsigned int)v);
	return 0;
}

static int sdebug_fault_every_nth(struct gendisk *disk, const char *value,
				  struct mq_err *e)
{
	struct sdebug_host *h = disk->private_data;
	uint64_t v;

	if (sdebug_parse_u64(value, &v) || v > UINT32_MAX) {
		mq_err_set(e, "takes a count: inject on every Nth command "
			      "(0: never)");
		return EINVAL;
	}
	atomic_store(&h->cmnd_count, 0);
	atomic_store(&h->every_nth, (unsigned int)v);
	pr_warn("%s: every_nth=%u", disk->disk_name, (unsigned int)v);
	return 0;
}

static int sdebug_fault_queue_full(struct gendisk *disk, const char *value,
				   struct mq_err *e)
{
	struct sdebug_host *h = disk->private_data;
	uint64_t v = 1;

	if (value && *value && (sdebug_parse_u64(value, &v) || v > 1000)) {
		mq_err_set(e, "takes a count of commands, 0 to 1000");
		return EINVAL;
	}
	atomic_store(&h->queue_full_left, (int)v);
	pr_warn("%s: queue_full: the next %u commands get TASK SET FULL",
		disk->disk_name, (unsigned int)v);
	return 0;
}

static int sdebug_fault_unit_attention(struct gendisk *disk, const char *value,
				       struct mq_err *e)
{
	struct sdebug_host *h = disk->private_data;

	(void)value;
	(void)e;
	atomic_store(&h->ua_por, true);
	pr_warn("%s: unit_attention: the next command gets UNIT ATTENTION "
		"29/00 (power on, reset)",
		disk->disk_name);
	return 0;
}

static const struct disk_fault sdebug_faults[] = {
	{"medium_error",
	 "START[,COUNT]: reads of those logical blocks get MEDIUM ERROR 03/11/00 (opts 0x2); 0: off",
	 sdebug_fault_medium_error},
	{"opts",
	 "scsi_debug's opts bits (0x2 0x4 0x8 0x80 0x800 0x1000 0x8000)",
	 sdebug_fault_opts},
	{"every_nth", "N: inject what opts says on every Nth command",
	 sdebug_fault_every_nth},
	{"queue_full",
	 "N: the next N commands get TASK SET FULL with DID_OK (ours): the mid layer blocks the device and requeues",
	 sdebug_fault_queue_full},
	{"unit_attention",
	 "the next command gets UNIT ATTENTION 29/00, as after a reset",
	 sdebug_fault_unit_attention},
	{"stall",
	 "1: the target holds every command (a hung target) until stall=0",
	 sdebug_fault_stall},
	{NULL},
};

#define SDEBUG_SHOW(_name, ...)                                                \
	static int sdebug_show_##_name(struct gendisk *disk, char *buf,        \
				       size_t len)                             \
	{                                                                      \
		struct sdebug_host *h = disk->private_data;                    \
                                                                               \
		(void)h;                                                       \
		return snprintf(buf, len, __VA_ARGS__);                        \
	}

SDEBUG_SHOW(model, "%s", h->model)
SDEBUG_SHOW(can_queue, "%u", h->shost.can_queue)
SDEBUG_SHOW(cmd_per_lun, "%u", h->shost.cmd_per_lun)
SDEBUG_SHOW(queue_depth, "%u", h->sdev.queue_depth)
SDEBUG_SHOW(host_busy, "%u", atomic_load(&h->shost.host_busy))
SDEBUG_SHOW(device_busy, "%u", atomic_load(&h->sdev.device_busy))
SDEBUG_SHOW(max_host_busy, "%u", atomic_load(&h->sdev.max_host_busy))
SDEBUG_SHOW(max_device_busy, "%u", atomic_load(&h->sdev.max_device_busy))
SDEBUG_SHOW(budget_refused, "%lu", atomic_load(&h->sdev.budget_refused))
SDEBUG_SHOW(host_refused, "%lu", atomic_load(&h->shost.host_refused))
SDEBUG_SHOW(reads, "%lu", atomic_load(&h->reads))
SDEBUG_SHOW(writes, "%lu", atomic_load(&h->writes))
SDEBUG_SHOW(discards, "%lu", atomic_load(&h->discards))
SDEBUG_SHOW(write_zeroes, "%lu", atomic_load(&h->zeroes))
SDEBUG_SHOW(flushes, "%lu", atomic_load(&h->flushes))
SDEBUG_SHOW(opts, "0x%x", atomic_load(&h->opts))
SDEBUG_SHOW(every_nth, "%u", atomic_load(&h->every_nth))
SDEBUG_SHOW(medium_error, "%" PRIu64 ",%" PRIu64 " %s",
	    atomic_load(&h->medium_error_start),
	    atomic_load(&h->medium_error_count),
	    atomic_load(&h->opts) & SDEBUG_OPT_MEDIUM_ERR ? "on" : "off")
SDEBUG_SHOW(host_tagset, "%d", h->shost.host_tagset)
SDEBUG_SHOW(wce, "%d", h->sdev.wce)

/* "3 extents, 12288 bytes, 1 writebacks": what the write cache holds. */
static int sdebug_show_cache(struct gendisk *disk, char *buf, size_t len)
{
	struct sdebug_host *h = disk->private_data;
	unsigned int extents;
	uint64_t bytes;
	unsigned long writebacks;

	sdebug_cache_stats(&h->cache, &extents, &bytes, &writebacks);
	return snprintf(buf, len,
			"%u extents, %" PRIu64 " bytes, %lu writebacks",
			extents, bytes, writebacks);
}
SDEBUG_SHOW(provisioning_mode, "%s",
	    h->sdev.provisioning_mode == SD_LBP_UNMAP  ? "unmap"
	    : h->sdev.provisioning_mode == SD_LBP_WS16 ? "writesame_16"
						       : "disabled")
SDEBUG_SHOW(state, "%s",
	    atomic_load(&h->sdev.sdev_state) == SDEV_OFFLINE ? "offline"
							     : "running")
SDEBUG_SHOW(device_blocked, "%u", atomic_load(&h->sdev.device_blocked))
SDEBUG_SHOW(max_device_blocked, "%u", h->sdev.max_device_blocked)
SDEBUG_SHOW(host_blocked, "%u", atomic_load(&h->shost.host_blocked))
SDEBUG_SHOW(blocked_refused, "%lu", atomic_load(&h->sdev.blocked_refused))
SDEBUG_SHOW(retried, "%lu", atomic_load(&h->sdev.retried))
SDEBUG_SHOW(requeued_busy, "%lu", atomic_load(&h->sdev.requeued_busy))
SDEBUG_SHOW(failed, "%lu", atomic_load(&h->sdev.failed))
SDEBUG_SHOW(timeouts, "%lu", atomic_load(&h->sdev.timeouts))
SDEBUG_SHOW(eh_aborts, "%lu", atomic_load(&h->sdev.eh_aborts))
SDEBUG_SHOW(eh_device_resets, "%lu", atomic_load(&h->sdev.eh_device_resets))
SDEBUG_SHOW(eh_host_resets, "%lu", atomic_load(&h->sdev.eh_host_resets))
SDEBUG_SHOW(eh_offlined, "%lu", atomic_load(&h->sdev.eh_offlined))
SDEBUG_SHOW(medium_errors, "%lu", atomic_load(&h->medium_errors))
SDEBUG_SHOW(recovered_errors, "%lu", atomic_load(&h->recovered_errors))
SDEBUG_SHOW(unit_attentions, "%lu", atomic_load(&h->unit_attentions))
SDEBUG_SHOW(tsf_sent, "%lu", atomic_load(&h->tsf_sent))
SDEBUG_SHOW(host_busy_injected, "%lu", atomic_load(&h->host_busy_injected))
SDEBUG_SHOW(timeouts_injected, "%lu", atomic_load(&h->timeouts_injected))
SDEBUG_SHOW(timing, "read %gus write %gus iops %g link %gMB/s dies %u",
	    h->ssd.p.read_us, h->ssd.p.write_us, h->ssd.p.iops,
	    h->ssd.p.link_mbps, h->ssd.p.nr_dies)

static int sdebug_show_stall(struct gendisk *disk, char *buf, size_t len)
{
	struct sdebug_host *h = disk->private_data;
	bool stalled;
	unsigned int n;

	pthread_mutex_lock(&h->lock);
	stalled = h->stalled;
	n = h->nr_queued;
	pthread_mutex_unlock(&h->lock);
	return snprintf(buf, len, "%d (%u held)", stalled, n);
}

/* "12.3 us over 4567": the mean lateness of timed completions. */
static int sdebug_show_late(struct gendisk *disk, char *buf, size_t len)
{
	struct sdebug_host *h = disk->private_data;
	uint64_t late, n;

	pthread_mutex_lock(&h->lock);
	late = h->late_ns;
	n = h->nr_timed;
	pthread_mutex_unlock(&h->lock);
	return snprintf(buf, len, "%.1f us over %" PRIu64,
			n ? (double)late / (double)n / 1000.0 : 0.0, n);
}

static const struct disk_attr sdebug_attrs[] = {
	{"model", sdebug_show_model},
	{"can_queue", sdebug_show_can_queue},
	{"cmd_per_lun", sdebug_show_cmd_per_lun},
	{"queue_depth", sdebug_show_queue_depth},
	{"host_busy", sdebug_show_host_busy},
	{"device_busy", sdebug_show_device_busy},
	{"max_host_busy", sdebug_show_max_host_busy},
	{"max_device_busy", sdebug_show_max_device_busy},
	{"budget_refused", sdebug_show_budget_refused},
	{"host_refused", sdebug_show_host_refused},
	{"reads", sdebug_show_reads},
	{"writes", sdebug_show_writes},
	{"discards", sdebug_show_discards},
	{"write_zeroes", sdebug_show_write_zeroes},
	{"flushes", sdebug_show_flushes},
	{"timing", sdebug_show_timing},
	{"opts", sdebug_show_opts},
	{"every_nth", sdebug_show_every_nth},
	{"medium_error", sdebug_show_medium_error},
	{"host_tagset", sdebug_show_host_tagset},
	{"wce", sdebug_show_wce},
	{"cache", sdebug_show_cache},
	{"provisioning_mode", sdebug_show_provisioning_mode},
	{"state", sdebug_show_state},
	{"device_blocked", sdebug_show_device_blocked},
	{"max_device_blocked", sdebug_show_max_device_blocked},
	{"host_blocked", sdebug_show_host_blocked},
	{"blocked_refused", sdebug_show_blocked_refused},
	{"retried", sdebug_show_retried},
	{"requeued_busy", sdebug_show_requeued_busy},
	{"failed", sdebug_show_failed},
	{"timeouts", sdebug_show_timeouts},
	{"eh_aborts", sdebug_show_eh_aborts},
	{"eh_device_resets", sdebug_show_eh_device_resets},
	{"eh_host_resets", sdebug_show_eh_host_resets},
	{"eh_offlined", sdebug_show_eh_offlined},
	{"medium_errors", sdebug_show_medium_errors},
	{"recovered_errors", sdebug_show_recovered_errors},
	{"unit_attentions", sdebug_show_unit_attentions},
	{"tsf_sent", sdebug_show_tsf_sent},
	{"host_busy_injected", sdebug_show_host_busy_injected},
	{"timeouts_injected", sdebug_show_timeouts_injected},
	{"stall", sdebug_show_stall},
	{"late", sdebug_show_late},
	{NULL},
};

static int sdebug_extents(struct gendisk *disk, uint64_t offset,
			  uint64_t length, extent_fn *fn, void *arg)
{
	struct sdebug_host *h = disk->private_data;

	return media_extents(h->media, offset, length, fn, arg);
}

static const struct block_device_operations sdebug_fops = {
	.extents = sdebug_extents,
};

/* ------------------------------------------------------------------ */
/* probe and remove                                                    */

static void sdebug_free(struct sdebug_host *h)
{
	if (h->thread_ready) {
		pthread_mutex_lock(&h->lock);
		h->stopping = true;
		pthread_cond_signal(&h->cond);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->thread, NULL);
	}
	scsi_remove_sdev(&h->sdev);
	scsi_mq_free_tags(&h->shost);
	if (h->ssd_ready)
		ssd_model_destroy(&h->ssd);
	if (h->sync_ready) {
		pthread_cond_destroy(&h->cond);
		pthread_mutex_destroy(&h->lock);
	}
	sdebug_cache_destroy(&h->cache);
	media_close(h->media);
	free(h);
}

static int sdebug_init_sync(struct sdebug_host *h, struct mq_err *e)
{
	pthread_condattr_t attr;
	int err;

	err = pthread_mutex_init(&h->lock, NULL);
	if (err)
		return mq_err_set(e, "mutex: %s", strerror(err));
	err = pthread_condattr_init(&attr);
	if (!err) {
		err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		if (!err)
			err = pthread_cond_init(&h->cond, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (err) {
		pthread_mutex_destroy(&h->lock);
		return mq_err_set(e, "condition variable: %s", strerror(err));
	}
	h->sync_ready = true;
	TAILQ_INIT(&h->queued);
	return 0;
}

struct sdebug_defaults {
	const char *model;
	const char *disk_name;
	unsigned int nr_hw_queues;
	unsigned int can_queue;
	unsigned int cmd_per_lun;
	double iops;
	double link_mbps;
	bool lbpu, lbpws;
	const char *vendor, *product;
};

static int sdebug_probe(struct mq_device *dev, struct mq_params *p,
			struct mq_err *e, const struct sdebug_defaults *def)
{
	struct ssd_params sp;
	struct sdebug_host *h;
	uint64_t size;
	unsigned int bs, spin_us, nr_hw = def->nr_hw_queues, opts, every_nth;
	uint64_t me_start, me_count, v64;
	const char *opts_str;
	bool use_blk_mq;
	int err;

	if (mq_param_bool(p, "use_blk_mq", true, &use_blk_mq, e))
		return -1;
	if (!use_blk_mq)
		return mq_err_set(
			e,
			"use_blk_mq=0: the legacy SCSI request path is gone: scsi-mq has been the default since 2018 (commit d5038a13eca7) and the only path since Linux 5.0");

	h = calloc(1, sizeof(*h));
	if (!h)
		return mq_err_set(e, "out of memory");
	h->mdev = dev;
	h->model = def->model;

	ssd_params_default(&sp);
	sp.iops = def->iops;
	sp.link_mbps = def->link_mbps;
	if (mq_param_size(p, "size", UINT64_C(1) << 30, &size, e) ||
	    mq_param_uint(p, "bs", 512, 512, 4096, &bs, e) ||
	    (nr_hw > 1 &&
	     mq_param_uint(p, "nr_hw_queues", nr_hw, 1, 64, &nr_hw, e)) ||
	    mq_param_uint(p, "can_queue", def->can_queue, 1, MQ_MAX_DEPTH,
			  &h->shost.can_queue, e) ||
	    mq_param_uint(p, "cmd_per_lun", def->cmd_per_lun, 1, MQ_MAX_DEPTH,
			  &h->shost.cmd_per_lun, e) ||
	    mq_param_uint(p, "spin_us", 50, 0, 1000, &spin_us, e) ||
	    mq_param_str(p, "opts", "0", &opts_str, e) ||
	    mq_param_uint(p, "every_nth", 0, 0, UINT32_MAX, &every_nth, e) ||
	    mq_param_u64(p, "medium_error_start", SDEBUG_MEDIUM_ERR_ADDR, 0,
			 UINT64_MAX, &me_start, e) ||
	    mq_param_u64(p, "medium_error_count", SDEBUG_MEDIUM_ERR_NUM, 0,
			 UINT64_MAX, &me_count, e) ||
	    mq_param_bool(p, "dsense", false, &h->dsense, e) ||
	    mq_param_bool(p, "lbpu", def->lbpu, &h->lbpu, e) ||
	    mq_param_bool(p, "lbpws", def->lbpws, &h->lbpws, e) ||
	    mq_param_bool(p, "lbprz", true, &h->lbprz, e) ||
	    mq_param_bool(p, "wce", true, &h->wce, e) ||
	    (nr_hw > 1 && mq_param_bool(p, "host_tagset", false,
					&h->shost.host_tagset, e)) ||
	    mq_param_uint(p, "max_device_blocked", SCSI_DEFAULT_DEVICE_BLOCKED,
			  1, 1000, &h->sdev.max_device_blocked, e) ||
	    ssd_params_read(&sp, p, e))
		goto fail;
	h->spin_ns = (uint64_t)spin_us * 1000;
	if (sdebug_parse_u64(opts_str, &v64) || v64 > UINT32_MAX) {
		mq_err_set(e, "opts=%s: scsi_debug's opts bits, e.g. 0x8",
			   opts_str);
		goto fail;
	}
	opts = (unsigned int)v64;
	if (sdebug_check_opts(opts, e))
		goto fail;
	atomic_store(&h->opts, opts);
	atomic_store(&h->every_nth, every_nth);
	atomic_store(&h->medium_error_start, me_start);
	atomic_store(&h->medium_error_count, me_count);
	if (opts & SDEBUG_OPT_N_WCE)
		h->wce = false;
	h->lbp = h->lbpu || h->lbpws;
	if (bs & (bs - 1)) {
		mq_err_set(e, "bs=%u: must be a power of two from 512 to 4096",
			   bs);
		goto fail;
	}
	if (!size || size % bs) {
		mq_err_set(e,
			   "size=%" PRIu64
			   ": must be a non-zero multiple of bs=%u",
			   size, bs);
		goto fail;
	}
	h->shost.nr_hw_queues = nr_hw;
	snprintf(h->inq_vendor, sizeof(h->inq_vendor), "%-8s", def->vendor);
	snprintf(h->inq_product, sizeof(h->inq_product), "%-16s", def->product);
	atomic_store(&h->ua_por, true); /* a new device: power on */
	/* libata sets use_10_for_ms; a SCSI disk starts with MODE SENSE 6 */
	h->sdev.use_10_for_ms = def->lbpws;
	h->shost.hostt = &sdebug_driver_template;
	h->shost.hostdata = h;

	if (sdebug_init_sync(h, e))
		goto fail;
	{
		struct media_open_args a = {.block_size = bs, .name = "sda"};
		const char *media = mq_params_peek(p, "media");

		/* size= sizes RAM; other stores have their own size. */
		if (!media || !strcmp(media, "ram") || mq_params_has(p, "size"))
			a.size = size;
		if (mq_device_open_media(dev, p, NULL, NULL, "ram", &a,
					 &h->media, e))
			goto fail;
		size = h->media->size;
		h->bs = bs;
		h->capacity = size / bs;
		h->max_xfer_blocks = 0xffffffff / bs; /* sdebug_store_sectors */
		err = sdebug_cache_init(&h->cache, h->media, size, h->wce);
		if (err) {
			mq_err_set(e, "write cache: %s", strerror(err));
			goto fail;
		}
		/* queuecommand reads and writes the store itself. */
		h->shost.queuecommand_may_sleep = media_may_sleep(h->media);
	}
	err = ssd_model_init(&h->ssd, &sp, dev->time_scale);
	if (err) {
		mq_err_set(e, "timing model: %s", strerror(err));
		goto fail;
	}
	h->ssd_ready = true;

	err = scsi_mq_setup_tags(&h->shost, dev->io_timeout_ms);
	if (err) {
		mq_err_set(e, "cannot allocate the tag set: %s", strerror(err));
		goto fail;
	}
	err = scsi_alloc_sdev(&h->shost, &h->sdev, dev->nr_ctx, def->disk_name);
	if (err) {
		mq_err_set(e, "cannot create the queue");
		goto fail;
	}
	err = pthread_create(&h->thread, NULL, sdebug_completion_thread, h);
	if (err) {
		mq_err_set(e, "cannot start the completion thread: %s",
			   strerror(err));
		goto fail;
	}
	h->thread_ready = true;

	/* sd_probe: sd asks the LUN what it is, with commands. */
	if (sd_revalidate_disk(&h->sdev, e))
		goto fail;

	snprintf(h->disk.disk_name, sizeof(h->disk.disk_name), "%s",
		 def->disk_name);
	snprintf(h->disk.description, sizeof(h->disk.description),
		 "%s %s (scsi-mq): can_queue %u %s, cmd_per_lun %u, "
		 "flash %gus read %gus write %gk IOPS",
		 def->model, def->disk_name, h->shost.can_queue,
		 h->shost.host_tagset || nr_hw == 1 ? "host-wide"
						    : "per hw queue",
		 h->shost.cmd_per_lun, sp.read_us, sp.write_us, sp.iops / 1000);
	h->disk.queue = h->sdev.request_queue;
	set_capacity(&h->disk, size >> SECTOR_SHIFT);
	h->disk.read_only = h->media->read_only;
	h->disk.features = DISK_FAST_ZERO | DISK_MULTI_CONN;
	h->disk.fops = &sdebug_fops;
	h->disk.attrs = sdebug_attrs;
	h->disk.faults = sdebug_faults;
	h->disk.private_data = h;

	dev->private_data = h;
	h->disk.features |= media_disk_features(h->media);
	if (mq_device_add_disk(dev, &h->disk)) {
		dev->private_data = NULL;
		if (!e->msg[0])
			mq_err_set(e, "cannot add disk %s", def->disk_name);
		goto fail;
	}
	return 0;

fail:
	sdebug_free(h);
	return -1;
}

static void sdebug_remove(struct mq_device *dev)
{
	struct sdebug_host *h = dev->private_data;
	int err;

	if (!h)
		return;
	/*
	 * sd_shutdown: a disk going away with its write cache on is sent
	 * SYNCHRONIZE CACHE, so a clean stop loses nothing (a kill -9 or a
	 * power cut still loses what was never synchronized).
	 */
	err = sdebug_cache_sync(&h->cache);
	if (err)
		pr_err("%s: synchronizing the write cache at removal: %s",
		       h->disk.disk_name, strerror(err));
	sdebug_free(h);
	dev->private_data = NULL;
}

static int scsi_probe(struct mq_device *dev, struct mq_params *p,
		      struct mq_err *e)
{
	static const struct sdebug_defaults def = {
		.model = "SCSI SSD",
		.disk_name = "sda",
		.nr_hw_queues = 4,
		.can_queue = 64,
		.cmd_per_lun = 32,
		.iops = 180000,
		.link_mbps = 1100, /* 12 Gb/s SAS */
		.lbpu = true,	   /* a SAS SSD: UNMAP */
		.vendor = "Linux",
		.product = "scsi_debug",
	};

	return sdebug_probe(dev, p, e, &def);
}

static int sata_ssd_probe(struct mq_device *dev, struct mq_params *p,
			  struct mq_err *e)
{
	static const struct sdebug_defaults def = {
		.model = "SATA SSD",
		.disk_name = "sda",
		.nr_hw_queues = 1,
		.can_queue = 32, /* ATA_MAX_QUEUE: NCQ */
		.cmd_per_lun = 32,
		.iops = 90000,
		.link_mbps = 550, /* 6 Gb/s SATA */
		/* libata's SAT: TRIM behind WRITE SAME 16 with UNMAP */
		.lbpws = true,
		.vendor = "ATA",
		.product = "SATA SSD",
	};

	return sdebug_probe(dev, p, e, &def);
}

/* The keys of both models: the LUN and its flash timing. */
/* clang-format off */
#define SDEBUG_LUN_PARAMS \
	{"size", "1G", "size in bytes (K, M, G, T, P, E suffixes)"}, \
	{"bs", "512", "logical block size, 512 to 4096, a power of two"}, \
	{"cmd_per_lun", "32", "the LUN's queue depth: its dispatch budget"}, \
	{"read_us", "100", "a 4 KiB read alone (QD1), us"}, \
	{"write_us", "120", "a 4 KiB write alone (QD1), us"}, \
	{"dies", "16", "flash dies working in parallel"}, \
	{"spin_us", "50", \
	 "spin the last us before a command is due, not wake up late, while at most 2 are queued (0: sleep)"}, \
	{"use_blk_mq", "1", \
	 "0 (the legacy request path) is refused: scsi-mq only"}, \
	{"opts", "0", \
	 "scsi_debug's opts: 0x2 medium error, 0x4 timeout, 0x8 recovered error, 0x80 media-access timeout, 0x800 task set full, 0x1000 no WCE, 0x8000 host busy"}, \
	{"every_nth", "0", "inject what opts says on every Nth command (0: never)"}, \
	{"medium_error_start", "4660", \
	 "first LBA that reads with MEDIUM ERROR when opts has 0x2"}, \
	{"medium_error_count", "10", "how many LBAs from medium_error_start"}, \
	{"dsense", "0", "1: descriptor-format sense data, 0: fixed"}, \
	{"lbprz", "1", "unmapped blocks read back as zeroes (LBPRZ)"}, \
	{"wce", "1", \
	 "a volatile write cache (WCE in the caching page): writes wait in it for FLUSH; FUA writes go through"}, \
	{"max_device_blocked", "3", \
	 "dispatch tries a blocked LUN (QUEUE FULL, BUSY, retry) waits when idle"}
/* clang-format on */

static const struct mq_param_spec scsi_params[] = {
	SDEBUG_LUN_PARAMS,
	{"nr_hw_queues", "4", "hardware queues (1 to 64)"},
	{"can_queue", "64",
	 "tags per hardware queue (the host's, with host_tagset=1)"},
	{"host_tagset", "0",
	 "1: can_queue is shared by all hardware queues (one tag space)"},
	{"lbpu", "1", "the LUN supports UNMAP: discard sends UNMAP"},
	{"lbpws", "0", "WRITE SAME 16 with UNMAP (used when lbpu=0)"},
	{"iops", "180000", "4 KiB random reads a second at depth"},
	{"link_mbps", "1100", "link speed, MB/s (12 Gb/s SAS)"},
	{NULL},
};

static const struct mq_param_spec sata_ssd_params[] = {
	SDEBUG_LUN_PARAMS,
	{"can_queue", "32", "NCQ tags (one hardware queue)"},
	{"lbpu", "0", "the LUN supports UNMAP"},
	{"lbpws", "1",
	 "WRITE SAME 16 with UNMAP, libata's TRIM: discard sends it"},
	{"iops", "90000", "4 KiB random reads a second at depth"},
	{"link_mbps", "550", "link speed, MB/s (6 Gb/s SATA)"},
	{NULL},
};

const struct mq_driver scsi_driver = {
	.name = "scsi",
	.description = "SCSI disk (sd) on scsi-mq over an emulated host "
		       "(scsi_debug), Linux 6.6: exports sda; 4 hw queues "
		       "of can_queue tags each, cmd_per_lun budget, flash "
		       "SSD timing",
	.params = scsi_params,
	.probe = scsi_probe,
	.remove = sdebug_remove,
};

const struct mq_driver sata_ssd_driver = {
	.name = "sata-ssd",
	.description = "SATA flash SSD on scsi-mq: exports sda; 1 hw queue, "
		       "NCQ depth 32, 100 us reads, 90k IOPS at QD32",
	.params = sata_ssd_params,
	.probe = sata_ssd_probe,
	.remove = sdebug_remove,
};
