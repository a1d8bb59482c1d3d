/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A Memory Stick host controller with a Memory Stick Pro card in its slot,
 * as drivers/memstick/core/memstick.c presents them to mspro_block.
 *
 * The protocol is Linux's: the driver fills card->current_mrq with one TPC
 * (transport protocol command) and calls memstick_new_req().  The host runs
 * the TPC on its interrupt thread and calls card->next_request() with the
 * result; a handler returns 0 to run the TPC it left in *mrq, or an error
 * (-EAGAIN: request finished) to let the host go idle.
 *
 * The card understands the data commands mspro_block sends: WRITE_REG of
 * the parameter register (page address and count), SET_CMD READ_DATA or
 * WRITE_DATA, then one READ_LONG_DATA or WRITE_LONG_DATA TPC per page.  The
 * host runs in 4-bit parallel mode, where the card's INT register comes
 * back with every TPC (MEMSTICK_CAP_AUTO_GET_INT).  Time is spent where the
 * card spends it (backends/timing/flashcard.h): a new command costs the
 * command overhead at SET_CMD, each page its transfer time.
 */
#ifndef MQBLK_MEMSTICK_H
#define MQBLK_MEMSTICK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../device.h"
#include "../common/irq.h"
#include "../media/media.h"
#include "../timing/flashcard.h"

/* TPCs, include/linux/memstick.h */
#define MS_TPC_READ_LONG_DATA  0x02
#define MS_TPC_READ_REG	       0x04
#define MS_TPC_GET_INT	       0x07
#define MS_TPC_WRITE_REG       0x0b
#define MS_TPC_WRITE_LONG_DATA 0x0d
#define MS_TPC_SET_CMD	       0x0e

/* The card's INT register */
#define MEMSTICK_INT_CMDNAK 0x01
#define MEMSTICK_INT_BREQ   0x20
#define MEMSTICK_INT_ERR    0x40
#define MEMSTICK_INT_CED    0x80

/* Memory Stick Pro commands, sent with SET_CMD */
#define MSPRO_CMD_READ_DATA  0x20
#define MSPRO_CMD_WRITE_DATA 0x21
#define MSPRO_CMD_STOP	     0x25

#define MEMSTICK_SYS_PAR4 0x00

/* The parameter register a data command reads (host byte order here). */
struct mspro_param_register {
	unsigned char system;
	uint16_t data_count;   /* pages */
	uint32_t data_address; /* first page */
	unsigned char tpc_param;
};

struct memstick_request {
	unsigned char tpc;
	unsigned char int_reg; /* the INT register after the TPC */
	int error;	       /* 0 or -errno */
	void *data;	       /* WRITE_REG, SET_CMD: the bytes sent */
	unsigned int data_len; /* LONG_DATA: one page, in the request */
};

struct memstick_dev;
struct memstick_host;

typedef int(memstick_handler_fn)(struct memstick_dev *card,
				 struct memstick_request **mrq);

/* The card, as its driver sees it. */
struct memstick_dev {
	char name[16]; /* "ms0" */
	struct memstick_host *host;
	struct memstick_request current_mrq;
	memstick_handler_fn *next_request; /* called on the irq thread */
	void *drvdata;
};

static inline void *memstick_get_drvdata(struct memstick_dev *card)
{
	return card->drvdata;
}

static inline void memstick_set_drvdata(struct memstick_dev *card, void *data)
{
	card->drvdata = data;
}

static inline void memstick_init_req(struct memstick_request *mrq,
				     unsigned char tpc, void *buf,
				     unsigned int len)
{
	mrq->tpc = tpc;
	mrq->int_reg = 0;
	mrq->error = 0;
	mrq->data = buf;
	mrq->data_len = len;
}

/* What is in the slot: a sparse store, or an image file (fd >= 0). */
struct memstick_media {
	struct media *store;  /* owned by the host once allocated */
	uint64_t size;	      /* bytes, a multiple of the page size */
	bool write_protected; /* the WP switch */
};

/* Counters, shown as disk attributes. */
struct memstick_stats {
	atomic_ulong tpcs;     /* TPCs run */
	atomic_ulong commands; /* data commands started (overhead paid) */
	atomic_ulong pages;    /* pages moved: one interrupt each */
	atomic_ulong errors;   /* TPCs that failed or were refused */
};

/*
 * A host with the card inserted and powered.  Takes ownership of the media
 * (also on failure).  NULL with e set on failure.
 */
struct memstick_host *memstick_alloc_host(const char *name,
					  struct memstick_media *media,
					  const struct flashcard_params *fp,
					  const struct mq_device *mdev,
					  struct mq_err *e);
/* Stops the interrupt thread first; nothing may be in flight. */
void memstick_free_host(struct memstick_host *host);

struct memstick_dev *memstick_host_card(struct memstick_host *host);
const struct memstick_stats *memstick_host_stats(struct memstick_host *host);
const struct flashcard_params *memstick_host_timing(struct memstick_host *host);

/* Run card->current_mrq, through card->next_request.  Any thread. */
void memstick_new_req(struct memstick_host *host);

/*
 * Power: while off, the host holds the TPC it was about to run and runs
 * it when power comes back.  Nothing is lost.
 */
void memstick_suspend_host(struct memstick_host *host);
void memstick_resume_host(struct memstick_host *host);
bool memstick_host_powered(struct memstick_host *host);

/*
 * The card is pulled out: every TPC from now on fails with -ENODEV,
 * including one the host was holding for power.
 */
void memstick_remove_card(struct memstick_host *host);
/*
 * The same card goes back into the slot, powered: TPCs reach it again.
 * EBUSY if a card is in the slot.
 */
int memstick_insert_card(struct memstick_host *host);
bool memstick_card_present(struct memstick_host *host);

/*
 * The page_error fault: the next transfer of page (the card's page
 * number) fails once, the card answering ERR in its INT register; the
 * page is not moved.  MEMSTICK_NEXT_PAGE: the next page transferred.
 */
#define MEMSTICK_NO_PAGE   UINT64_MAX
#define MEMSTICK_NEXT_PAGE (UINT64_MAX - 1)
void memstick_fail_page(struct memstick_host *host, uint64_t page);

/* Make what was written durable (image files). 0 or an errno. */
int memstick_media_sync(struct memstick_host *host);
/* Allocation map of the card, for sparse media; NULL for image files. */
struct media *memstick_media_store(struct memstick_host *host);

#endif
