// SPDX-License-Identifier: GPL-2.0
/*
 * mspro: a Sony Memory Stick Pro card, driven the way mspro_block drives
 * it after seed 006 converted it to blk-mq
 * (drivers/memstick/core/mspro_block.c).  The disk is "mspblk0", as Linux
 * names it; the card in the host's slot is "ms0".
 *
 * One hw queue of depth 2, SHOULD_MERGE.  The card does one request at a
 * time (msb->block_req): queue_rq refuses a second with DEV_RESOURCE, and
 * freeing the active one restarts the queue (the core reruns an hctx that
 * got DEV_RESOURCE whenever a request of its tag set is freed).  The
 * request moves a page at a time on the host's interrupt thread
 * (memstick.c), one data command for the whole mapped request (a chunk).
 * When every segment is moved and the card signals CED,
 * mspro_block_complete_req updates the request by the chunk's bytes with
 * mq_update_request and ends it with __mq_end_request; only an error
 * leaves a rest, which is issued again as a new chunk.
 *
 * Faults: "eject" fails what is queued and refuses what comes, as
 * mspro_block_remove does, and "insert" puts the card back; "suspend" and
 * "resume" stop and start the hw queues and power the card off and on;
 * nothing is lost across them; "page_error" makes one page transfer fail
 * (the card's ERR), which takes the driver's partial-error path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memstick.h"
#include "../../server/mq/log.h"

#define DRIVER_NAME "mspro_block"

#define MSPRO_BLOCK_MAX_SEGS  32
#define MSPRO_BLOCK_MAX_PAGES ((2 << 16) - 1)

#define MSPRO_DISK_NAME "mspblk0"
#define MSPRO_CARD_NAME "ms0"

/* rq_data_dir */
#define MSPRO_READ  0
#define MSPRO_WRITE 1

/* A piece of the request's memory: one bio, as the core counts segments. */
struct mspro_sg {
	void *buf;
	uint32_t length;
};

struct mspro_block_data {
	struct memstick_dev *card;
	struct memstick_host *host;
	struct gendisk disk;
	struct mq_queue *queue;
	struct request *block_req;
	struct mq_tag_set tag_set;
	pthread_mutex_t q_lock;

	unsigned short page_size;

	unsigned char system;
	unsigned char read_only : 1, data_dir : 1;
	/*
	 * Linux packs these with the two above; apart, the q_lock holders
	 * that flip them do not rewrite data_dir under the interrupt thread.
	 */
	bool eject, active;
	unsigned char transfer_cmd;

	memstick_handler_fn *mrq_handler;

	/*
	 * Default request setup function for data access method preferred by
	 * this host instance.
	 */
	void (*setup_transfer)(struct memstick_dev *card, uint64_t offset,
			       size_t length);

	struct mspro_param_register param; /* what WRITE_REG sends */

	struct mspro_sg req_sg[MSPRO_BLOCK_MAX_SEGS];
	unsigned int seg_count;
	unsigned int current_seg;
	unsigned int current_page;

	atomic_ulong requests; /* started on the card */
	atomic_ulong refused;  /* failed because the card was ejected */
	bool tag_set_ready;
	bool lock_ready;
};

static int mspro_block_complete_req(struct memstick_dev *card, int error);

/* The core's status is a positive errno; the memstick layer's negative. */
static int errno_to_blk_status(int error)
{
	if (!error)
		return 0;
	return error == -ENOMEM ? ENOMEM : EIO;
}

/* blk_rq_cur_bytes: what is left of the first bio. */
static uint32_t mspro_rq_cur_bytes(const struct request *rq)
{
	return rq->bio ? rq->bio->bi_size : blk_rq_bytes(rq);
}

/* blk_rq_map_sg: one segment per bio, each a whole number of pages. */
static unsigned int mspro_block_map_sg(struct mspro_block_data *msb,
				       struct request *rq)
{
	unsigned int n = 0;
	struct bio *bio;

	rq_for_each_bio (bio, rq) {
		if (n == MSPRO_BLOCK_MAX_SEGS || !bio->bi_buf ||
		    !bio->bi_size || bio->bi_size % msb->page_size)
			return 0;
		msb->req_sg[n].buf = bio->bi_buf;
		msb->req_sg[n].length = bio->bi_size;
		n++;
	}
	return n;
}

/*** Protocol handlers ***/

/*
 * Functions prefixed with "h_" are protocol callbacks.  They are called
 * from the host's interrupt thread.  Return value of 0 means that request
 * processing is still ongoing, while special error value of -EAGAIN means
 * that current request is finished (and request processor should come back
 * some time later).
 */

static int h_mspro_block_req_init(struct memstick_dev *card,
				  struct memstick_request **mrq)
{
	struct mspro_block_data *msb = memstick_get_drvdata(card);

	*mrq = &card->current_mrq;
	card->next_request = msb->mrq_handler;
	return 0;
}

static int h_mspro_block_default(struct memstick_dev *card,
				 struct memstick_request **mrq)
{
	return mspro_block_complete_req(card, (*mrq)->error);
}

static int h_mspro_block_default_bad(struct memstick_dev *card,
				     struct memstick_request **mrq)
{
	return -ENXIO;
}

/* The last page is in, but the card has not said CED yet: ask until it does. */
static int h_mspro_block_wait_for_ced(struct memstick_dev *card,
				      struct memstick_request **mrq)
{
	if (!(*mrq)->error) {
		if ((*mrq)->int_reg & (MEMSTICK_INT_CMDNAK | MEMSTICK_INT_ERR))
			(*mrq)->error = -EFAULT;
		else if (!((*mrq)->int_reg & MEMSTICK_INT_CED))
			return 0;
	}

	return mspro_block_complete_req(card, (*mrq)->error);
}

/*
 * The data command of one chunk (the whole mapped request): WRITE_REG,
 * SET_CMD, then a LONG_DATA TPC per page.  The block layer hears of it
 * once, when every segment is moved and the card signals CED, as in
 * Linux: complete_req then updates the request by all the chunk's bytes.
 */
static int h_mspro_block_transfer_data(struct memstick_dev *card,
				       struct memstick_request **mrq)
{
	struct mspro_block_data *msb = memstick_get_drvdata(card);
	unsigned char t_val = 0;
	struct mspro_sg *sg;

	if ((*mrq)->error)
		return mspro_block_complete_req(card, (*mrq)->error);

	switch ((*mrq)->tpc) {
	case MS_TPC_WRITE_REG:
		memstick_init_req(*mrq, MS_TPC_SET_CMD, &msb->transfer_cmd, 1);
		return 0;
	case MS_TPC_SET_CMD:
		/* parallel mode: the INT register comes with the TPC */
		t_val = (*mrq)->int_reg;
		goto has_int_reg;
	case MS_TPC_GET_INT:
		t_val = (*mrq)->int_reg;
	has_int_reg:
		if (t_val & (MEMSTICK_INT_CMDNAK | MEMSTICK_INT_ERR)) {
			msb->transfer_cmd = MSPRO_CMD_STOP;
			memstick_init_req(*mrq, MS_TPC_SET_CMD,
					  &msb->transfer_cmd, 1);
			card->next_request = h_mspro_block_default;
			return 0;
		}

		if (msb->current_page ==
		    msb->req_sg[msb->current_seg].length / msb->page_size) {
			msb->current_page = 0;
			msb->current_seg++;

			if (msb->current_seg == msb->seg_count) {
				if (t_val & MEMSTICK_INT_CED)
					return mspro_block_complete_req(card,
									0);
				card->next_request = h_mspro_block_wait_for_ced;
				memstick_init_req(*mrq, MS_TPC_GET_INT, NULL,
						  0);
				return 0;
			}
		}

		if (!(t_val & MEMSTICK_INT_BREQ)) {
			memstick_init_req(*mrq, MS_TPC_GET_INT, NULL, 0);
			return 0;
		}

		sg = &msb->req_sg[msb->current_seg];
		memstick_init_req(
			*mrq,
			msb->data_dir == MSPRO_READ ? MS_TPC_READ_LONG_DATA
						    : MS_TPC_WRITE_LONG_DATA,
			(char *)sg->buf + msb->current_page * msb->page_size,
			msb->page_size);
		return 0;
	case MS_TPC_READ_LONG_DATA:
	case MS_TPC_WRITE_LONG_DATA:
		msb->current_page++;
		t_val = (*mrq)->int_reg;
		goto has_int_reg;
	default:
		return mspro_block_complete_req(card, -EINVAL);
	}
}

/*** Transfer setup functions for different access methods. ***/

/*
 * Setup data transfer request for SET_CMD TPC with arguments in card
 * registers.
 *
 *  @card    Current media instance
 *  @offset  Target data offset in bytes
 *  @length  Required transfer length in bytes.
 */
static void h_mspro_block_setup_cmd(struct memstick_dev *card, uint64_t offset,
				    size_t length)
{
	struct mspro_block_data *msb = memstick_get_drvdata(card);

	msb->param = (struct mspro_param_register){
		.system = msb->system,
		.data_count = (uint16_t)(length / msb->page_size),
		.data_address = (uint32_t)(offset / msb->page_size),
		.tpc_param = 0,
	};

	card->next_request = h_mspro_block_req_init;
	msb->mrq_handler = h_mspro_block_transfer_data;
	memstick_init_req(&card->current_mrq, MS_TPC_WRITE_REG, &msb->param,
			  sizeof(msb->param));
}

/*** Data transfer ***/

/* Called with q_lock held. */
static int mspro_block_issue_req(struct memstick_dev *card, bool chunk)
{
	struct mspro_block_data *msb = memstick_get_drvdata(card);
	uint64_t t_off;
	unsigned int count;

	while (chunk) {
		msb->current_page = 0;
		msb->current_seg = 0;
		msb->seg_count = mspro_block_map_sg(msb, msb->block_req);

		if (!msb->seg_count) {
			unsigned int bytes = mspro_rq_cur_bytes(msb->block_req);

			chunk = mq_update_request(msb->block_req, ENOMEM,
						  bytes);
			if (chunk)
				continue;
			__mq_end_request(msb->block_req, ENOMEM);
			msb->block_req = NULL;
			break;
		}

		t_off = blk_rq_pos(msb->block_req);
		t_off <<= SECTOR_SHIFT;
		count = blk_rq_bytes(msb->block_req);

		msb->setup_transfer(card, t_off, count);

		msb->data_dir = op_is_write(req_op(msb->block_req))
					? MSPRO_WRITE
					: MSPRO_READ;
		msb->transfer_cmd = msb->data_dir == MSPRO_READ
					    ? MSPRO_CMD_READ_DATA
					    : MSPRO_CMD_WRITE_DATA;

		memstick_new_req(card->host);
		return 0;
	}

	return -EAGAIN;
}

static int mspro_block_complete_req(struct memstick_dev *card, int error)
{
	struct mspro_block_data *msb = memstick_get_drvdata(card);
	unsigned int cnt;
	bool chunk;
	unsigned int t_len = 0;

	pthread_mutex_lock(&msb->q_lock);

	if (msb->block_req) {
		/* Nothing to do - not really an error */
		if (error == -EAGAIN)
			error = 0;

		/*
		 * The card refused the command (CMDNAK) and it was stopped.
		 * Linux tests current_mrq.tpc == MSPRO_CMD_STOP here, which
		 * never matches a TPC, and completes such a request as if
		 * it had worked; here it fails.
		 */
		if (!error && msb->transfer_cmd == MSPRO_CMD_STOP)
			error = -EIO;

		/*
		 * As Linux 4.20 counts what is done: on an error, for a read
		 * the segments moved and the pages of the current one but
		 * the last (current_page counts the page that failed); for a
		 * write nothing, so the first bio fails whole.  The rest is
		 * issued again as a new chunk.
		 */
		if (error) {
			if (msb->data_dir == MSPRO_READ) {
				for (cnt = 0; cnt < msb->current_seg; cnt++)
					t_len += msb->req_sg[cnt].length /
						 msb->page_size;
				if (msb->current_page)
					t_len += msb->current_page - 1;
				t_len *= msb->page_size;
			}
		} else {
			t_len = blk_rq_bytes(msb->block_req);
		}

		if (error && !t_len)
			t_len = mspro_rq_cur_bytes(msb->block_req);

		chunk = mq_update_request(msb->block_req,
					  errno_to_blk_status(error), t_len);
		if (chunk) {
			error = mspro_block_issue_req(card, chunk);
			if (!error)
				goto out;
		} else {
			__mq_end_request(msb->block_req,
					 errno_to_blk_status(error));
			msb->block_req = NULL;
		}
	} else {
		if (!error)
			error = -EAGAIN;
	}

	card->next_request = h_mspro_block_default_bad;
	/* Request finished: the host may go idle. */
	if (!error)
		error = -EAGAIN;
out:
	pthread_mutex_unlock(&msb->q_lock);
	return error;
}

static void mspro_block_start(struct memstick_dev *card)
{
	struct mspro_block_data *msb = memstick_get_drvdata(card);

	mq_start_hw_queues(msb->queue);
}

static enum mq_qrc mspro_queue_rq(struct mq_hw_ctx *hctx,
				  const struct mq_queue_data *bd)
{
	struct memstick_dev *card = hctx->queue->queuedata;
	struct mspro_block_data *msb = memstick_get_drvdata(card);

	pthread_mutex_lock(&msb->q_lock);

	if (msb->block_req) {
		pthread_mutex_unlock(&msb->q_lock);
		return MQ_QRC_DEV_RESOURCE;
	}

	if (msb->eject) {
		pthread_mutex_unlock(&msb->q_lock);
		atomic_fetch_add(&msb->refused, 1);
		pr_err("%s: card ejected: %s of %u bytes at sector %" PRIu64
		       " fails",
		       card->name, req_op_name(req_op(bd->rq)),
		       blk_rq_bytes(bd->rq), blk_rq_pos(bd->rq));
		mq_start_request(bd->rq);
		return MQ_QRC_IOERR;
	}

	msb->block_req = bd->rq;
	mq_start_request(bd->rq);
	atomic_fetch_add(&msb->requests, 1);

	if (mspro_block_issue_req(card, true))
		msb->block_req = NULL;

	pthread_mutex_unlock(&msb->q_lock);
	return MQ_QRC_OK;
}

/*** Card events: removal and power ***/

static void mspro_block_remove(struct memstick_dev *card)
{
	struct mspro_block_data *msb = memstick_get_drvdata(card);

	pthread_mutex_lock(&msb->q_lock);
	msb->eject = true;
	pthread_mutex_unlock(&msb->q_lock);
	mq_start_hw_queues(msb->queue);
}

static int mspro_block_suspend(struct memstick_dev *card)
{
	struct mspro_block_data *msb = memstick_get_drvdata(card);

	mq_stop_hw_queues(msb->queue);

	pthread_mutex_lock(&msb->q_lock);
	msb->active = false;
	pthread_mutex_unlock(&msb->q_lock);

	return 0;
}

/*
 * Linux re-reads the card's attributes under CONFIG_MEMSTICK_UNSAFE_RESUME
 * and marks it active if they match; the card here is always the same one.
 */
static int mspro_block_resume(struct memstick_dev *card)
{
	struct mspro_block_data *msb = memstick_get_drvdata(card);

	pthread_mutex_lock(&msb->q_lock);
	msb->active = true;
	pthread_mutex_unlock(&msb->q_lock);

	mspro_block_start(card);
	return 0;
}

/* Faults: EXPORT/fault/{eject,insert,suspend,resume}. */

static int mspro_fault_eject(struct gendisk *disk, const char *value,
			     struct mq_err *e)
{
	struct mspro_block_data *msb = disk->private_data;
	struct memstick_dev *card = msb->card;
	bool ejected;

	pthread_mutex_lock(&msb->q_lock);
	ejected = msb->eject;
	pthread_mutex_unlock(&msb->q_lock);
	if (ejected) {
		mq_err_set(e, "no card in the slot");
		return ENODEV;
	}

	pr_err("%s: card ejected: queued and new I/O on %s fails with EIO",
	       card->name, disk->disk_name);
	/* The card leaves the slot, then the bus removes its driver. */
	memstick_remove_card(msb->host);
	mspro_block_remove(card);
	return 0;
}

/*
 * The card that was pulled out goes back in.  Linux probes a new card and
 * a new disk; here the export stays, so the card's driver takes it up
 * again as mspro_block_resume would: the queue runs and I/O reaches the
 * card.
 */
static int mspro_fault_insert(struct gendisk *disk, const char *value,
			      struct mq_err *e)
{
	struct mspro_block_data *msb = disk->private_data;
	struct memstick_dev *card = msb->card;
	int err;

	err = memstick_insert_card(msb->host);
	if (err) {
		mq_err_set(e, "a card is already in the slot");
		return err;
	}
	pthread_mutex_lock(&msb->q_lock);
	msb->eject = false;
	msb->active = true;
	pthread_mutex_unlock(&msb->q_lock);
	mspro_block_start(card);
	pr_info("%s: card inserted: %s's I/O reaches the card again",
		card->name, disk->disk_name);
	return 0;
}

static int mspro_fault_suspend(struct gendisk *disk, const char *value,
			       struct mq_err *e)
{
	struct mspro_block_data *msb = disk->private_data;
	struct memstick_dev *card = msb->card;
	bool ejected, active;

	pthread_mutex_lock(&msb->q_lock);
	ejected = msb->eject;
	active = msb->active;
	pthread_mutex_unlock(&msb->q_lock);
	if (ejected) {
		mq_err_set(e, "no card in the slot");
		return ENODEV;
	}
	if (!active)
		return 0;

	/* The card is suspended before its host, as children are. */
	mspro_block_suspend(card);
	memstick_suspend_host(msb->host);
	pr_info("%s: suspended: %s's queue is stopped until resume", card->name,
		disk->disk_name);
	return 0;
}

static int mspro_fault_resume(struct gendisk *disk, const char *value,
			      struct mq_err *e)
{
	struct mspro_block_data *msb = disk->private_data;
	struct memstick_dev *card = msb->card;
	bool ejected, active;

	pthread_mutex_lock(&msb->q_lock);
	ejected = msb->eject;
	active = msb->active;
	pthread_mutex_unlock(&msb->q_lock);
	if (ejected) {
		mq_err_set(e, "no card in the slot");
		return ENODEV;
	}
	if (active)
		return 0;

	/* The host is resumed before the card. */
	memstick_resume_host(msb->host);
	mspro_block_resume(card);
	pr_info("%s: resumed: %s's queue is running", card->name,
		disk->disk_name);
	return 0;
}

/* page_error[=PAGE]: the next transfer of PAGE (or of any page) fails. */
static int mspro_fault_page_error(struct gendisk *disk, const char *value,
				  struct mq_err *e)
{
	struct mspro_block_data *msb = disk->private_data;
	uint64_t page = MEMSTICK_NEXT_PAGE;
	char *end;

	if (value && value[0]) {
		errno = 0;
		page = strtoull(value, &end, 0);
		if (errno || *end || page >= MEMSTICK_NEXT_PAGE) {
			mq_err_set(e, "takes a page number, or nothing for "
				      "the next page");
			return EINVAL;
		}
	}
	memstick_fail_page(msb->host, page);
	if (page == MEMSTICK_NEXT_PAGE)
		pr_info("%s: page_error fault: the next page transferred "
			"fails",
			msb->card->name);
	else
		pr_info("%s: page_error fault: the next transfer of page "
			"%" PRIu64 " fails",
			msb->card->name, page);
	return 0;
}

static const struct disk_fault mspro_faults[] = {
	{"eject", "pull the card out: queued I/O fails, new I/O is refused",
	 mspro_fault_eject},
	{"insert", "put the ejected card back: I/O reaches it again",
	 mspro_fault_insert},
	{"suspend", "suspend the card: stop the hw queues, power off",
	 mspro_fault_suspend},
	{"resume", "resume the card: power on, start the hw queues",
	 mspro_fault_resume},
	{"page_error",
	 "fail the next transfer of page PAGE once (default: the next page)",
	 mspro_fault_page_error},
	{NULL},
};

/* Attributes: EXPORT/device/NAME. */

static int mspro_show_state(struct gendisk *disk, char *buf, size_t len)
{
	struct mspro_block_data *msb = disk->private_data;
	const char *state;

	pthread_mutex_lock(&msb->q_lock);
	state = msb->eject ? "ejected" : msb->active ? "active" : "suspended";
	pthread_mutex_unlock(&msb->q_lock);
	return snprintf(buf, len, "%s", state);
}

static int mspro_show_media(struct gendisk *disk, char *buf, size_t len)
{
	struct mspro_block_data *msb = disk->private_data;

	return snprintf(buf, len, "%s",
			memstick_card_present(msb->host) ? "present"
							 : "absent");
}

static int mspro_show_read_only(struct gendisk *disk, char *buf, size_t len)
{
	struct mspro_block_data *msb = disk->private_data;

	return snprintf(buf, len, "%d", msb->read_only);
}

static int mspro_show_timing(struct gendisk *disk, char *buf, size_t len)
{
	struct mspro_block_data *msb = disk->private_data;
	const struct flashcard_params *fp = memstick_host_timing(msb->host);

	return snprintf(
		buf, len,
		"page_size=%u read_mbps=%g write_mbps=%g cmd_overhead_us=%g",
		fp->page_size, fp->read_mbps, fp->write_mbps,
		fp->cmd_overhead_us);
}

#define MSPRO_SHOW_COUNTER(_name, _expr)                                       \
	static int mspro_show_##_name(struct gendisk *disk, char *buf,         \
				      size_t len)                              \
	{                                                                      \
		struct mspro_block_data *msb = disk->private_data;             \
		const struct memstick_stats *st =                              \
			memstick_host_stats(msb->host);                        \
                                                                               \
		(void)st;                                                      \
		return snprintf(buf, len, "%lu", (unsigned long)(_expr));      \
	}

MSPRO_SHOW_COUNTER(requests, atomic_load(&msb->requests))
MSPRO_SHOW_COUNTER(refused, atomic_load(&msb->refused))
MSPRO_SHOW_COUNTER(commands, atomic_load(&st->commands))
MSPRO_SHOW_COUNTER(pages, atomic_load(&st->pages))
MSPRO_SHOW_COUNTER(tpcs, atomic_load(&st->tpcs))
MSPRO_SHOW_COUNTER(errors, atomic_load(&st->errors))

static const struct disk_attr mspro_attrs[] = {
	{"state", mspro_show_state},	     /* active, suspended, ejected */
	{"media", mspro_show_media},	     /* present, absent */
	{"read_only", mspro_show_read_only}, /* the write-protect switch */
	{"timing", mspro_show_timing},
	{"requests", mspro_show_requests}, /* started on the card */
	{"refused", mspro_show_refused},   /* failed: card ejected */
	{"commands", mspro_show_commands}, /* data commands (overhead) */
	{"pages", mspro_show_pages},	   /* pages moved, one irq each */
	{"tpcs", mspro_show_tpcs},
	{"errors", mspro_show_errors}, /* TPCs failed or refused */
	{NULL},
};

static int mspro_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
			 extent_fn *fn, void *arg)
{
	struct mspro_block_data *msb = disk->private_data;

	return media_extents(memstick_media_store(msb->host), offset, length,
			     fn, arg);
}

static const struct block_device_operations mspro_sparse_fops = {
	.extents = mspro_extents,
};

/*** Initialization ***/

static const struct mq_ops mspro_mq_ops = {
	.queue_rq = mspro_queue_rq,
};

static void mspro_block_free(struct mspro_block_data *msb)
{
	/*
	 * A dispatch may still be leaving queue_rq after the last bio ended:
	 * quiesce waits for it.  Then the host's interrupt thread stops, and
	 * only then do the queue and tag set go.
	 */
	if (msb->queue)
		mq_quiesce_queue(msb->queue);
	memstick_free_host(msb->host);
	if (msb->queue)
		mq_cleanup_queue(msb->queue);
	if (msb->tag_set_ready)
		mq_free_tag_set(&msb->tag_set);
	if (msb->lock_ready)
		pthread_mutex_destroy(&msb->q_lock);
	free(msb);
}

static int mspro_block_init_disk(struct mspro_block_data *msb,
				 struct mq_device *dev, struct mq_err *e)
{
	struct mq_tag_set *set = &msb->tag_set;
	const struct flashcard_params *fp = memstick_host_timing(msb->host);
	struct queue_limits *lim;
	uint64_t size = get_capacity(&msb->disk) << SECTOR_SHIFT;
	unsigned int max_sectors;
	int rc;

	set->ops = &mspro_mq_ops;
	set->nr_hw_queues = 1;
	set->queue_depth = 2;
	set->flags = MQ_F_SHOULD_MERGE;
	set->timeout_ms = dev->io_timeout_ms;
	set->driver_data = msb;
	rc = mq_alloc_tag_set(set);
	if (rc)
		return mq_err_set(e, "cannot allocate the tag set: %s",
				  strerror(rc));
	msb->tag_set_ready = true;

	msb->queue = mq_init_queue(set, dev->nr_ctx, MSPRO_DISK_NAME);
	if (!msb->queue)
		return mq_err_set(e, "cannot create the queue");
	msb->queue->queuedata = msb->card;

	/*
	 * MSPRO_BLOCK_MAX_PAGES, but no more pages than the parameter
	 * register's 16-bit count can name.
	 */
	max_sectors = 0xffffu * (msb->page_size >> SECTOR_SHIFT);
	if (max_sectors > MSPRO_BLOCK_MAX_PAGES)
		max_sectors = MSPRO_BLOCK_MAX_PAGES;
	max_sectors -= max_sectors % (msb->page_size >> SECTOR_SHIFT);

	lim = &msb->queue->limits;
	lim->logical_block_size = msb->page_size;
	lim->physical_block_size = msb->page_size;
	lim->max_sectors = max_sectors;
	lim->max_segments = MSPRO_BLOCK_MAX_SEGS;
	lim->max_discard_sectors = 0;
	lim->max_write_zeroes_sectors = 0;
	lim->write_cache = false;
	lim->fua = false;
	lim->rotational = false;

	snprintf(msb->disk.disk_name, sizeof(msb->disk.disk_name), "%s",
		 MSPRO_DISK_NAME);
	snprintf(msb->disk.description, sizeof(msb->disk.description),
		 "Sony Memory Stick Pro %s (Linux mspro_block) in slot %s: "
		 "%.1f MiB, %u-byte pages, %g MB/s read, %g MB/s write, "
		 "%g us a command%s",
		 MSPRO_DISK_NAME, msb->card->name, size / 1048576.0,
		 msb->page_size, fp->read_mbps, fp->write_mbps,
		 fp->cmd_overhead_us,
		 msb->read_only ? ", write-protected" : "");
	msb->disk.queue = msb->queue;
	msb->disk.read_only = msb->read_only;
	msb->disk.features = 0;
	if (memstick_media_store(msb->host)->caps & MEDIA_CAN_EXTENTS)
		msb->disk.fops = &mspro_sparse_fops;
	msb->disk.attrs = mspro_attrs;
	msb->disk.faults = mspro_faults;
	msb->disk.private_data = msb;

	msb->active = true;
	return 0;
}

/*
 * The card's medium: size= bytes of sparse RAM, image=PATH (the image's
 * size is the card's), or media=STORE.
 */
static int mspro_open_media(struct mq_device *dev, struct mq_params *p,
			    struct memstick_media *media, bool has_size,
			    uint64_t size, unsigned int page_size,
			    bool read_only, struct mq_err *e)
{
	struct media_open_args a = {
		.block_size = page_size,
		.read_only = read_only,
		.name = MSPRO_CARD_NAME,
	};
	const char *spec = mq_params_peek(p, "media");
	bool image = mq_params_has(p, "image");

	media->store = NULL;
	media->write_protected = read_only;
	if (!image && (!spec || !strcmp(spec, "ram") || has_size)) {
		if (size < page_size || size % page_size)
			return mq_err_set(
				e,
				"size=%" PRIu64
				": must be a non-zero multiple of page_size=%u",
				size, page_size);
		a.size = size;
	}
	if (mq_device_open_media(dev, p, NULL, "image", "ram", &a,
				 &media->store, e))
		return -1;
	size = media->store->size;
	if (size / page_size > UINT32_MAX) {
		mq_err_set(
			e,
			"%s: %" PRIu64
			" bytes is more pages than a Memory Stick Pro addresses",
			media->store->desc, size);
		media_close(media->store);
		media->store = NULL;
		return -1;
	}
	/* A store that cannot be written is a card with its WP switch on. */
	if (media->store->read_only)
		media->write_protected = true;
	media->size = size;
	return 0;
}

static int mspro_probe(struct mq_device *dev, struct mq_params *p,
		       struct mq_err *e)
{
	struct flashcard_params fp;
	struct memstick_media media;
	struct mspro_block_data *msb;
	bool read_only, has_size = mq_params_has(p, "size");
	uint64_t size;
	int rc;

	flashcard_params_default(&fp);
	if (mq_param_size(p, "size", UINT64_C(1) << 30, &size, e) ||
	    mq_param_bool_alias(p, "readonly", "read_only", false, &read_only,
				e) ||
	    flashcard_params_read(&fp, p, "", e))
		return -1;
	if (mq_params_has(p, "image") && has_size)
		return mq_err_set(e, "size= cannot be given with image=: the "
				     "image's size is the card's");
	if (mspro_open_media(dev, p, &media, has_size, size, fp.page_size,
			     read_only, e))
		return -1;

	msb = calloc(1, sizeof(*msb));
	if (!msb) {
		media_close(media.store);
		return mq_err_set(e, "out of memory");
	}
	rc = pthread_mutex_init(&msb->q_lock, NULL);
	if (rc) {
		media_close(media.store);
		free(msb);
		return mq_err_set(e, "mutex: %s", strerror(rc));
	}
	msb->lock_ready = true;

	msb->host = memstick_alloc_host(MSPRO_CARD_NAME, &media, &fp, dev, e);
	if (!msb->host)
		goto fail;
	msb->card = memstick_host_card(msb->host);
	memstick_set_drvdata(msb->card, msb);

	/* mspro_block_init_card: a 4-bit parallel host, the card's pages. */
	msb->system = MEMSTICK_SYS_PAR4;
	msb->setup_transfer = h_mspro_block_setup_cmd;
	msb->page_size = (unsigned short)fp.page_size;
	msb->read_only = read_only;
	msb->card->next_request = h_mspro_block_default_bad;
	set_capacity(&msb->disk, media.size >> SECTOR_SHIFT);

	if (mspro_block_init_disk(msb, dev, e))
		goto fail;

	msb->disk.features |=
		media_disk_features(memstick_media_store(msb->host));
	dev->private_data = msb;
	if (mq_device_add_disk(dev, &msb->disk)) {
		dev->private_data = NULL;
		mq_err_set(e, "cannot add disk %s", msb->disk.disk_name);
		goto fail;
	}
	pr_debug("%s: %s", MSPRO_DISK_NAME, msb->disk.description);
	return 0;

fail:
	mspro_block_free(msb);
	return -1;
}

static void mspro_remove(struct mq_device *dev)
{
	if (!dev->private_data)
		return;
	mspro_block_free(dev->private_data);
	dev->private_data = NULL;
}

static int mspro_sync(struct mq_device *dev)
{
	struct mspro_block_data *msb = dev->private_data;

	return msb ? memstick_media_sync(msb->host) : 0;
}

static const struct mq_param_spec mspro_params[] = {
	{"size", "1G", "card size in bytes (K, M, G suffixes); sparse memory"},
	{"image", NULL,
	 "card image file instead of memory; its size is the card's"},
	{"readonly", "0",
	 "the card's write-protect switch (read_only= is taken too)"},
	{"page_size", "512", "card page size: 512, 1024, 2048 or 4096"},
	{"read_mbps", "20", "read bandwidth, MB/s (10^6 bytes)"},
	{"write_mbps", "10", "write bandwidth, MB/s (10^6 bytes)"},
	{"cmd_overhead_us", "100", "time to start each data command, us"},
	{NULL},
};

const struct mq_driver mspro_driver = {
	.name = "mspro",
	.description = "Sony Memory Stick Pro, Linux mspro_block: exports "
		       "mspblk0; depth 2, one request at a time, page by page",
	.params = mspro_params,
	.probe = mspro_probe,
	.remove = mspro_remove,
	.sync = mspro_sync,
};
