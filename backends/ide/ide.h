/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The IDE stack after seed 009 ("ide: convert to blk-mq"): a channel
 * (hwif) carries a master and a slave drive, each with its own tag set
 * (1 hw queue, depth 32, one reserved tag for REQUEST SENSE,
 * SHOULD_MERGE | BLOCKING) and its own export.  Only one command runs on a
 * channel at a time: ide_queue_rq() takes the port lock, and while it is
 * held requeues the request and plugs the queue for 3 ms.
 *
 * The driver side (ide-io.c, ide-disk.c, ide-cd.c, ide-atapi.c) mirrors
 * drivers/ide.  The drives themselves are modelled in ata-dev.c (an ATA
 * disk executing taskfiles) and atapi-dev.c (an ATAPI CD-ROM executing
 * packet commands, with a tray and sense data); the driver talks to them
 * through struct ide_cmd, the way it talks to registers in Linux.
 */
#ifndef MQBLK_IDE_H
#define MQBLK_IDE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../device.h"
#include "../common/irq.h"
#include "../timing/optical.h"
#include "../timing/rotational.h"
#include "../../server/mq/blk-mq.h"
#include "../../server/mq/genhd.h"
#include "ata.h"
#include "../media/media.h"

#define MAX_HWIFS  2 /* channels=2: ide0 (hda, hdb) and ide1 (hdc, hdd) */
#define MAX_DRIVES 2 /* per channel */

#define IDE_QUEUE_DEPTH	   32
#define IDE_RESERVED_TAGS  1
#define IDE_MAX_SECTORS	   256
#define IDE_REQUEUE_DELAY  3 /* ms, "the old plug delay" */
#define IDE_BREATHE_DELAY  1 /* ms, ide_cd_breathe */
#define IDE_CD_ERROR_MAX   8 /* ERROR_MAX: retries after UNIT ATTENTION */
#define ATAPI_WAIT_BUSY_MS 10000
#define IDE_TRACE_LEN	   64

enum ide_media {
	ide_none,
	ide_disk,
	ide_cdrom,
};

typedef enum {
	ide_stopped, /* the command is over; the channel may be released */
	ide_started, /* an interrupt will come */
} ide_startstop_t;

struct ide_drive;
struct ide_hwif;
struct ide_cmd;

/* What runs on the irq thread when the drive raises its interrupt. */
typedef ide_startstop_t(ide_handler_t)(struct ide_drive *drive,
				       struct request *rq);

/*
 * The per-request pdu: what Linux keeps in struct ide_request (the packet
 * CDB of scsi_request) and in the hwif's struct ide_cmd (the taskfile),
 * plus what the modelled drive answers in its status and error registers.
 */
enum ata_priv_type {
	ATA_PRIV_FS,	   /* a read or write of the medium */
	ATA_PRIV_TASKFILE, /* a prepared taskfile (FLUSH CACHE) */
	ATA_PRIV_PC,	   /* an ATAPI packet of the driver's (sense) */
};

struct ide_cmd {
	struct ide_drive *drive;
	struct irq_work work;
	ide_handler_t *handler;
	enum ata_priv_type type;

	/* ATA: the taskfile and, for LBA48, the high-order bytes. */
	struct ide_taskfile tf;
	struct ide_taskfile hob;
	unsigned int tf_flags; /* IDE_TFLAG_* */

	/* ATAPI: the packet. */
	uint8_t cmd[ATAPI_CDB_LEN];
	unsigned int cmd_len;
	void *buf; /* DRV_IN data (the sense buffer) */
	unsigned int buflen;
	int result; /* retries so far (scsi_req(rq)->result) */
	uint64_t breathe_deadline_ns;

	/* The drive's answer. */
	uint8_t status; /* ATA_DRDY, ATA_ERR, ... */
	uint8_t error;	/* ATA: ABRT, IDNF...; ATAPI: sense key << 4 */
};

/* struct cdrom_info: the CD side of a drive. */
struct cdrom_info {
	struct atapi_dev *dev; /* the modelled drive */
	atomic_ulong breathers;
	atomic_ulong sense_requests;
	atomic_ulong media_errors;
	atomic_ulong sense_reserved; /* REQUEST SENSEs from the reserved tag */
	/*
	 * Failed commands ended without a sense: the reserved tag was not
	 * back yet (ide_queue_sense_rq), because another failed command's
	 * sense is still queued, or because a timeout scan on another
	 * thread holds the last sense's reference a moment after its
	 * completion, as in Linux.
	 */
	atomic_ulong sense_unqueued;
	/* The last sense data read, for the attribute. */
	atomic_uint last_sense; /* key << 16 | asc << 8 | ascq */
};

struct ide_drive {
	const char *name; /* "hda": disk.disk_name, so a rename shows */
	struct ide_hwif *hwif;
	unsigned int dn; /* 0 master, 1 slave */
	enum ide_media media;
	struct mq_device *mdev;

	struct mq_tag_set tag_set;
	bool tag_set_ready;
	struct mq_queue *queue;
	struct gendisk disk;
	bool disk_added;

	/* seed 009: drive->prep_rq replaces the queue's prep_rq_fn */
	int (*prep_rq)(struct ide_drive *drive, struct request *rq);

	/*
	 * The REQUEST SENSE in flight, from the reserved tag (ide_prep_sense,
	 * seed 009), and the failed request it is for.  Under hwif->lock.
	 */
	struct request *sense_rq;
	struct request *failed_rq;
	uint8_t sense_data[ATAPI_SENSE_LEN];

	char model[41];
	char firmware[9];
	char serial[21];

	/* Disk */
	struct ata_dev *ata;
	bool lba48; /* capacity past 2^28 sectors: LBA48 commands */
	bool wcache;

	/* CD */
	struct cdrom_info *cd;

	/* Commands the drive was given, by opcode (ATA or packet). */
	atomic_ulong cmds[256];
	/* The last IDE_TRACE_LEN commands, oldest first; under hwif->lock. */
	struct ide_trace_ent {
		uint8_t op;
		uint64_t sector;
	} trace[IDE_TRACE_LEN];
	unsigned int trace_n; /* commands traced so far */
	/* queue_rq found the port busy: requeued and plugged for 3 ms */
	atomic_ulong port_busy;
};

struct ide_host;

/* One channel: the lock both drives share, and its interrupt thread. */
struct ide_hwif {
	char name[16]; /* "ide0" */
	unsigned int index;
	struct ide_host *host;
	struct ide_drive *devices[MAX_DRIVES]; /* NULL: absent */
	struct irq_thread *irq;

	pthread_mutex_t lock;
	bool lock_ready;
	bool busy;		   /* ide_lock_port */
	struct ide_drive *cur_dev; /* the drive whose command runs */
	struct request *rq;	   /* the command on the wire */
};

struct ide_host {
	struct mq_device *mdev;
	unsigned int n_ports;
	struct ide_hwif ports[MAX_HWIFS];
};

/* ide-io.c */
enum mq_qrc ide_queue_rq(struct mq_hw_ctx *hctx,
			 const struct mq_queue_data *bd);
enum mq_eh_timer_return ide_timed_out(struct request *rq);
void ide_requeue_and_plug(struct ide_drive *drive, struct request *rq);
/* The port_busy attribute of both drive kinds. */
int ide_show_port_busy(struct gendisk *disk, char *buf, size_t len);
/* Raise the drive's interrupt after the modelled service time. */
void ide_issue(struct ide_drive *drive, struct request *rq,
	       ide_handler_t *handler, uint64_t service_ns);
void ide_complete_rq(struct ide_drive *drive, struct request *rq, int error);
/* Count and trace a command going to the drive. */
void ide_trace_cmd(struct ide_drive *drive, uint8_t op, uint64_t sector);
/* 0: the port (channel) is ours; 1: busy. */
int ide_lock_port(struct ide_hwif *hwif);
void ide_unlock_port(struct ide_hwif *hwif);

/* ide-disk.c */
ide_startstop_t ide_disk_do_request(struct ide_drive *drive,
				    struct request *rq);
int ide_disk_setup(struct ide_drive *drive, struct mq_params *p,
		   const char *prefix, struct mq_err *e);
void ide_disk_release(struct ide_drive *drive);
int ide_disk_sync(struct ide_drive *drive);

/* ide-cd.c */
int ide_cdrom_setup(struct ide_drive *drive, struct mq_params *p,
		    const char *prefix, struct mq_err *e);
void ide_cd_release(struct ide_drive *drive);
ide_startstop_t ide_cd_do_request(struct ide_drive *drive, struct request *rq);
/* Faults, also reached from the unit tests. */
int ide_cd_eject(struct ide_drive *drive);
int ide_cd_insert(struct ide_drive *drive, const char *path, struct mq_err *e);

/* ide-atapi.c */
int ide_queue_sense_rq(struct ide_drive *drive, struct request *failed_rq);
const char *ide_sense_key_name(uint8_t key);

/* ide-probe.c */
extern const struct mq_driver ide_driver;
extern const struct mq_driver ide_disk_driver;
extern const struct mq_driver ide_cd_driver;

/* "hda.rpm" or "rpm" */
/* Read model, firmware and serial into the drive, with defaults. */
int ide_read_identity(struct ide_drive *drive, struct mq_params *p,
		      const char *prefix, const char *def_model,
		      struct mq_err *e);

#endif
