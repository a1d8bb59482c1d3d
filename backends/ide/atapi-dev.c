// SPDX-License-Identifier: GPL-2.0
/*
 * A modelled ATAPI CD-ROM drive: a tray, a medium (an ISO image), sense
 * data, spin-up after insert, and the optical timing model.
 *
 * Every insert makes the drive answer NOT READY, "in process of becoming
 * ready" (04/01) to at least one command, then to every command until the
 * spin-up time has passed.  A medium present at start-up is spun up.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ide-dev.h"
#include "../../server/mq/log.h"

int atapi_dev_init(struct atapi_dev *d, const struct mq_device *mdev,
		   struct media *m, const char *spec,
		   const struct optical_params *op)
{
	memset(d, 0, sizeof(*d));
	d->mdev = mdev;
	if (spec && strlen(spec) >= sizeof(d->spec))
		return ENAMETOOLONG;
	if (pthread_mutex_init(&d->lock, NULL))
		return ENOMEM;
	optical_init(&d->timing, op, 0);
	if (m) {
		d->media = m;
		snprintf(d->spec, sizeof(d->spec), "%s", spec ? spec : "");
		d->has_medium = true;
		d->nr_blocks = m->size / CD_FRAMESIZE;
		optical_insert(&d->timing, d->nr_blocks * 4);
	}
	return 0;
}

void atapi_dev_destroy(struct atapi_dev *d)
{
	media_close(d->media);
	d->media = NULL;
	optical_destroy(&d->timing);
	pthread_mutex_destroy(&d->lock);
}

/* CHECK CONDITION: the sense is kept until REQUEST SENSE reads it. */
static void atapi_check_condition(struct atapi_dev *d, struct ide_cmd *cmd,
				  uint8_t key, uint8_t asc, uint8_t ascq)
{
	d->sense_key = key;
	d->asc = asc;
	d->ascq = ascq;
	cmd->status = ATA_DRDY | ATA_ERR;
	cmd->error = (uint8_t)(key << 4) | ATA_ABORTED;
}

/* Medium present and spun up?  Sets the sense if not.  d->lock held. */
static bool atapi_ready(struct atapi_dev *d, struct ide_cmd *cmd)
{
	if (!d->has_medium) {
		atapi_check_condition(d, cmd, NOT_READY, ASC_NO_MEDIUM,
				      d->tray_open ? 0x02 : 0x01);
		return false;
	}
	if (d->becoming_ready || timing_now_ns() < d->ready_at_ns) {
		d->becoming_ready = false;
		atapi_check_condition(d, cmd, NOT_READY, ASC_NOT_READY, 0x01);
		return false;
	}
	return true;
}

static bool atapi_bad_block(struct atapi_dev *d, uint64_t lba, uint64_t n)
{
	unsigned int i;

	if (d->fail_next_read) {
		d->fail_next_read = false;
		return true;
	}
	for (i = 0; i < d->nr_bad; i++)
		if (d->bad[i] >= lba && d->bad[i] < lba + n)
			return true;
	return false;
}

static uint64_t atapi_read_10(struct atapi_dev *d, struct ide_cmd *cmd,
			      struct request *rq)
{
	const uint8_t *c = cmd->cmd;
	uint64_t lba = (uint64_t)c[2] << 24 | (uint64_t)c[3] << 16 |
		       (uint64_t)c[4] << 8 | c[5];
	uint64_t blocks = (uint64_t)c[7] << 8 | c[8];
	uint64_t pos = lba * CD_FRAMESIZE;
	struct bio *bio;

	if (!atapi_ready(d, cmd))
		return 0;
	if (lba >= d->nr_blocks || blocks > d->nr_blocks - lba) {
		atapi_check_condition(d, cmd, ILLEGAL_REQUEST,
				      ASC_LBA_OUT_OF_RANGE, 0);
		return 0;
	}
	if (blocks * CD_FRAMESIZE != blk_rq_bytes(rq)) {
		atapi_check_condition(d, cmd, ILLEGAL_REQUEST, 0x24, 0);
		return 0;
	}
	if (atapi_bad_block(d, lba, blocks)) {
		atapi_check_condition(d, cmd, MEDIUM_ERROR,
				      ASC_UNRECOVERED_READ, 0);
		/* It tried: the head went there and the disc turned. */
		return timing_service_ns(&d->timing.base, TIMING_READ, lba * 4,
					 CD_FRAMESIZE);
	}
	rq_for_each_bio (bio, rq) {
		if (media_read(d->media, bio->bi_buf, bio->bi_size, pos)) {
			atapi_check_condition(d, cmd, MEDIUM_ERROR,
					      ASC_UNRECOVERED_READ, 0);
			return 0;
		}
		pos += bio->bi_size;
	}
	return timing_service_ns(&d->timing.base, TIMING_READ, lba * 4,
				 (uint32_t)(blocks * CD_FRAMESIZE));
}

static void atapi_request_sense(struct atapi_dev *d, struct ide_cmd *cmd)
{
	uint8_t sense[ATAPI_SENSE_LEN] = {0};
	unsigned int len = cmd->cmd[4];

	sense[0] = 0x70; /* current error, fixed format */
	sense[2] = d->sense_key;
	sense[7] = ATAPI_SENSE_LEN - 8;
	sense[12] = d->asc;
	sense[13] = d->ascq;
	if (len > cmd->buflen)
		len = cmd->buflen;
	if (len > sizeof(sense))
		len = sizeof(sense);
	if (cmd->buf)
		memcpy(cmd->buf, sense, len);
	d->sense_key = NO_SENSE;
	d->asc = 0;
	d->ascq = 0;
}

uint64_t atapi_dev_exec(struct atapi_dev *d, struct ide_cmd *cmd,
			struct request *rq)
{
	uint64_t ns = 0;

	pthread_mutex_lock(&d->lock);
	cmd->status = ATA_DRDY;
	cmd->error = 0;
	switch (cmd->cmd[0]) {
	case GPCMD_REQUEST_SENSE:
		atapi_request_sense(d, cmd);
		break;
	case GPCMD_TEST_UNIT_READY:
		atapi_ready(d, cmd);
		break;
	case GPCMD_READ_10:
		/* Unlocked in the middle would let eject pull the disc. */
		ns = atapi_read_10(d, cmd, rq);
		break;
	case GPCMD_WRITE_10:
		if (atapi_ready(d, cmd))
			atapi_check_condition(d, cmd, DATA_PROTECT,
					      ASC_WRITE_PROTECTED, 0);
		break;
	default:
		atapi_check_condition(d, cmd, ILLEGAL_REQUEST,
				      ASC_INVALID_OPCODE, 0);
		break;
	}
	pthread_mutex_unlock(&d->lock);
	return ns;
}

int atapi_dev_eject(struct atapi_dev *d)
{
	pthread_mutex_lock(&d->lock);
	media_close(d->media);
	d->media = NULL;
	d->has_medium = false;
	d->tray_open = true;
	d->nr_blocks = 0;
	d->nr_bad = 0;
	d->fail_next_read = false;
	d->becoming_ready = false;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

int atapi_dev_insert(struct atapi_dev *d, const char *path, uint64_t *nr_blocks,
		     struct mq_err *e)
{
	struct media_open_args a = {
		.block_size = CD_FRAMESIZE,
		.read_only = true,
		.key = "insert",
		.name = "cd",
	};
	char spec[sizeof(d->spec)];
	struct media *m;
	uint64_t spinup;

	pthread_mutex_lock(&d->lock);
	if (!path || !path[0]) {
		if (!d->spec[0]) {
			pthread_mutex_unlock(&d->lock);
			mq_err_set(e, "no medium was ever inserted");
			return ENOENT;
		}
		memcpy(spec, d->spec, sizeof(spec));
	} else if ((size_t)snprintf(spec, sizeof(spec), "file:%s", path) >=
		   sizeof(spec)) {
		pthread_mutex_unlock(&d->lock);
		mq_err_set(e, "path longer than %zu bytes", sizeof(spec) - 6);
		return ENAMETOOLONG;
	}
	/* A path that is not there: the errno, as open(2) would say. */
	if (path && path[0] && access(path, R_OK)) {
		int err = errno;

		pthread_mutex_unlock(&d->lock);
		mq_err_set(e, "%s: %s", path, strerror(err));
		return err;
	}
	if (media_open(spec, &a, &m, e)) {
		pthread_mutex_unlock(&d->lock);
		return EIO;
	}
	media_close(d->media);
	d->media = m;
	memcpy(d->spec, spec, sizeof(spec));
	d->has_medium = true;
	d->tray_open = false;
	d->nr_blocks = m->size / CD_FRAMESIZE;
	d->nr_bad = 0;
	d->fail_next_read = false;
	spinup = optical_insert(&d->timing, d->nr_blocks * 4);
	d->ready_at_ns = timing_now_ns() + mq_device_delay_ns(d->mdev, spinup);
	d->becoming_ready = true;
	*nr_blocks = d->nr_blocks;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

int atapi_dev_media_error(struct atapi_dev *d, uint64_t lba)
{
	int err = 0;

	pthread_mutex_lock(&d->lock);
	if (lba == UINT64_MAX)
		d->fail_next_read = true;
	else if (d->nr_bad == ATAPI_MAX_BAD)
		err = ENOSPC;
	else
		d->bad[d->nr_bad++] = lba;
	pthread_mutex_unlock(&d->lock);
	return err;
}

const char *atapi_dev_medium_name(const struct atapi_dev *d)
{
	/* An image file shows as its path, as before stores existed. */
	return strncmp(d->spec, "file:", 5) == 0 ? d->spec + 5 : d->spec;
}

int atapi_dev_show_media(struct atapi_dev *d, char *buf, size_t len)
{
	int n;

	pthread_mutex_lock(&d->lock);
	if (!d->has_medium)
		n = snprintf(buf, len, "none (tray %s)",
			     d->tray_open ? "open" : "closed");
	else
		n = snprintf(buf, len, "%s %" PRIu64 " blocks %s",
			     atapi_dev_medium_name(d), d->nr_blocks,
			     d->becoming_ready ||
					     timing_now_ns() < d->ready_at_ns
				     ? "spinning-up"
				     : "ready");
	pthread_mutex_unlock(&d->lock);
	return n < 0 ? -EIO : n;
}
