/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The modelled drives: what sits at the other end of the cable.
 *
 * ata_dev is an ATA disk.  It executes the taskfile the driver built (READ
 * DMA, WRITE DMA (EXT), FLUSH CACHE (EXT), PIO variants), moves the data of
 * the request through its store, and answers in the status and error
 * registers of the command, with the service time of its rotational model.
 *
 * atapi_dev is an ATAPI CD-ROM.  It executes packet commands (READ_10,
 * REQUEST SENSE, TEST UNIT READY), has a tray and a medium, keeps the
 * sense data of its last CHECK CONDITION until a REQUEST SENSE reads it,
 * reports NOT READY / becoming ready while it spins up after an insert,
 * and times reads with the optical model.
 */
#ifndef MQBLK_IDE_DEV_H
#define MQBLK_IDE_DEV_H

#include <limits.h>
#include <pthread.h>

#include "ide.h"

struct ata_dev {
	struct media *media;
	uint64_t nr_sectors;
	bool lba48; /* the drive speaks LBA48 (IDENTIFY word 83, bit 10) */
	bool write_cache;
	struct rotational_model timing;
};

/* Takes over the store m.  Returns 0 or an errno. */
int ata_dev_init(struct ata_dev *d, struct media *m,
		 const struct rotational_params *rp);
void ata_dev_destroy(struct ata_dev *d);
/*
 * Execute cmd's taskfile with rq's data; set cmd->status and cmd->error.
 * Returns the nominal service time in ns.
 */
uint64_t ata_dev_exec(struct ata_dev *d, struct ide_cmd *cmd,
		      struct request *rq);

#define ATAPI_MAX_BAD 16

struct atapi_dev {
	pthread_mutex_t lock;
	const struct mq_device *mdev; /* for time_scale */
	struct media *media;	      /* NULL: no medium */
	bool has_medium;
	bool tray_open;
	/* The last medium's store, for insert without a path ("file:PATH"). */
	char spec[PATH_MAX + 8];
	uint64_t nr_blocks; /* 2048-byte blocks */
	uint64_t ready_at_ns;
	bool becoming_ready; /* has not yet said so since the insert */
	/* Sense data of the last CHECK CONDITION, until REQUEST SENSE. */
	uint8_t sense_key, asc, ascq;
	/* Unreadable blocks (media_error fault); ~0: the next read. */
	uint64_t bad[ATAPI_MAX_BAD];
	unsigned int nr_bad;
	bool fail_next_read;
	struct optical_model timing;
};

/*
 * Takes over the store m, which may be NULL: an empty tray; spec is what
 * opened it, for an insert that names no medium.  Returns 0 or an errno.
 */
int atapi_dev_init(struct atapi_dev *d, const struct mq_device *mdev,
		   struct media *m, const char *spec,
		   const struct optical_params *op);
void atapi_dev_destroy(struct atapi_dev *d);
/* The medium: its image's path, or the store ("nbd:URI"). */
const char *atapi_dev_medium_name(const struct atapi_dev *d);
uint64_t atapi_dev_exec(struct atapi_dev *d, struct ide_cmd *cmd,
			struct request *rq);

/* The tray: open and remove the medium, or load one and spin up. */
int atapi_dev_eject(struct atapi_dev *d);
/* path NULL or "": the last medium.  Returns 0 or an errno. */
int atapi_dev_insert(struct atapi_dev *d, const char *path, uint64_t *nr_blocks,
		     struct mq_err *e);
/* Block lba (2048 bytes) becomes unreadable; UINT64_MAX: the next read. */
int atapi_dev_media_error(struct atapi_dev *d, uint64_t lba);
int atapi_dev_show_media(struct atapi_dev *d, char *buf, size_t len);

#endif
