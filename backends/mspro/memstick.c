// SPDX-License-Identifier: GPL-2.0
/*
 * The Memory Stick host and its card: TPCs run on the host's interrupt
 * thread, one at a time, each after the time the card takes for it.  See
 * memstick.h for the protocol.
 *
 * The host runs a chain of TPCs: it asks the card driver for the next one
 * (memstick_next_req), runs it, and asks again when it is done, until the
 * driver returns an error.  TPCs that take no time are run in a loop on
 * the spot; one that takes time arms the interrupt for when it is done.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "memstick.h"
#include "../../server/mq/log.h"

struct memstick_host {
	char name[16];
	const struct mq_device *mdev;
	struct irq_thread *irq;
	struct irq_work work; /* the host's interrupt */

	pthread_mutex_t lock;
	bool busy;	     /* a chain runs, or is held */
	bool pending_new;    /* memstick_new_req while busy */
	uint64_t new_req_ns; /* when the driver asked */
	pthread_t irq_tid;   /* the interrupt thread, once known */
	bool irq_tid_known;
	bool powered;		       /* power on the slot */
	bool present;		       /* a card in the slot */
	struct memstick_request *held; /* waits for power */

	/* The interrupt thread's own. */
	struct memstick_request *req;	  /* the TPC in flight */
	uint64_t req_due_ns;		  /* and when it is done */
	struct memstick_request *restart; /* a held TPC to run again */
	bool restart_clock;
	uint64_t origin_ns;	/* a new chain's command starts from here */
	uint64_t busy_until_ns; /* when the bus is done, scaled clock */
	bool slack_set;

	/* The card: its registers and the data command it runs. */
	struct mspro_param_register param;
	unsigned char cmd; /* running READ_DATA or WRITE_DATA, 0 if none */
	uint32_t cmd_next; /* its next page */
	uint32_t cmd_left; /* and the pages it has left */
	uint64_t nr_pages; /* the card's capacity */
	/* page_error fault: the page whose next transfer fails, once */
	_Atomic uint64_t fail_page;

	struct memstick_dev card;
	struct memstick_media media;
	struct flashcard_model timing;
	struct memstick_stats stats;
};

static void memstick_host_irq(struct irq_work *work);

/* ------------------------------------------------------------------ */
/* the medium                                                          */

static int memstick_media_rw(struct memstick_host *host, bool write, void *buf,
			     uint32_t len, uint64_t pos)
{
	struct memstick_media *m = &host->media;

	if (write)
		return media_write(m->store, buf, len, pos);
	return media_read(m->store, buf, len, pos);
}

static void memstick_media_release(struct memstick_media *m)
{
	media_close(m->store);
	m->store = NULL;
}

/* ------------------------------------------------------------------ */
/* the card: what each TPC does, and how long it takes                 */

static bool memstick_present(struct memstick_host *host)
{
	bool present;

	pthread_mutex_lock(&host->lock);
	present = host->present;
	pthread_mutex_unlock(&host->lock);
	return present;
}

/* SET_CMD READ_DATA or WRITE_DATA: the card checks it and starts it. */
static uint64_t memstick_card_data_cmd(struct memstick_host *host,
				       struct memstick_request *mrq,
				       unsigned char cmd)
{
	const struct mspro_param_register *param = &host->param;
	uint64_t end = (uint64_t)param->data_address + param->data_count;

	if (cmd == MSPRO_CMD_WRITE_DATA && host->media.write_protected) {
		pr_err("%s: card is write-protected: WRITE_DATA of %u pages at page %" PRIu32
		       " refused",
		       host->card.name, param->data_count, param->data_address);
		mrq->int_reg = MEMSTICK_INT_CMDNAK;
		return 0;
	}
	if (!param->data_count || end > host->nr_pages) {
		pr_err("%s: %s of %u pages at page %" PRIu32
		       " is outside the card's %" PRIu64 " pages",
		       host->card.name,
		       cmd == MSPRO_CMD_READ_DATA ? "READ_DATA" : "WRITE_DATA",
		       param->data_count, param->data_address, host->nr_pages);
		mrq->int_reg = MEMSTICK_INT_CMDNAK;
		return 0;
	}

	mrq->int_reg = MEMSTICK_INT_BREQ;
	host->cmd = cmd;
	host->cmd_next = param->data_address;
	host->cmd_left = param->data_count;
	host->restart_clock = true;
	atomic_fetch_add(&host->stats.commands, 1);
	return flashcard_cmd_ns(&host->timing);
}

/* Start mrq: set what the card answers and return the nominal time. */
static uint64_t memstick_tpc_start(struct memstick_host *host,
				   struct memstick_request *mrq)
{
	unsigned char cmd;
	bool write;

	mrq->error = 0;
	mrq->int_reg = 0;
	if (!memstick_present(host)) {
		mrq->error = -ENODEV;
		return 0;
	}

	switch (mrq->tpc) {
	case MS_TPC_WRITE_REG:
		if (mrq->data_len != sizeof(host->param)) {
			mrq->error = -EINVAL;
			return 0;
		}
		memcpy(&host->param, mrq->data, sizeof(host->param));
		return 0;
	case MS_TPC_SET_CMD:
		cmd = *(unsigned char *)mrq->data;
		if (cmd == MSPRO_CMD_READ_DATA || cmd == MSPRO_CMD_WRITE_DATA)
			return memstick_card_data_cmd(host, mrq, cmd);
		if (cmd == MSPRO_CMD_STOP) {
			host->cmd = 0;
			host->cmd_left = 0;
			mrq->int_reg = MEMSTICK_INT_CED;
			return 0;
		}
		mrq->int_reg = MEMSTICK_INT_CMDNAK;
		return 0;
	case MS_TPC_GET_INT:
		mrq->int_reg =
			host->cmd_left ? MEMSTICK_INT_BREQ : MEMSTICK_INT_CED;
		return 0;
	case MS_TPC_READ_LONG_DATA:
	case MS_TPC_WRITE_LONG_DATA:
		write = mrq->tpc == MS_TPC_WRITE_LONG_DATA;
		if (!host->cmd_left ||
		    host->cmd != (write ? MSPRO_CMD_WRITE_DATA
					: MSPRO_CMD_READ_DATA) ||
		    mrq->data_len != host->timing.p.page_size) {
			mrq->int_reg = MEMSTICK_INT_ERR;
			return 0;
		}
		return flashcard_page_ns(&host->timing,
					 write ? TIMING_WRITE : TIMING_READ);
	default:
		mrq->error = -EINVAL;
		return 0;
	}
}

/* Is page the one the page_error fault armed?  Disarms it if so. */
static bool memstick_page_fails(struct memstick_host *host, uint64_t page)
{
	uint64_t want = atomic_load(&host->fail_page);

	if (want == MEMSTICK_NO_PAGE ||
	    (want != MEMSTICK_NEXT_PAGE && want != page))
		return false;
	return atomic_compare_exchange_strong(&host->fail_page, &want,
					      MEMSTICK_NO_PAGE);
}

void memstick_fail_page(struct memstick_host *host, uint64_t page)
{
	atomic_store(&host->fail_page, page);
}

/* mrq's time is over: the page lands, the INT register settles. */
static void memstick_tpc_end(struct memstick_host *host,
			     struct memstick_request *mrq)
{
	bool write = mrq->tpc == MS_TPC_WRITE_LONG_DATA;
	uint32_t page_size = host->timing.p.page_size;
	int err;

	atomic_fetch_add(&host->stats.tpcs, 1);
	if (!mrq->error && !memstick_present(host))
		mrq->error = -ENODEV; /* pulled out while it ran */
	if (mrq->error ||
	    (mrq->int_reg & (MEMSTICK_INT_CMDNAK | MEMSTICK_INT_ERR))) {
		atomic_fetch_add(&host->stats.errors, 1);
		return;
	}
	if (mrq->tpc != MS_TPC_READ_LONG_DATA && !write)
		return;

	if (memstick_page_fails(host, host->cmd_next)) {
		pr_err("%s: %s of page %" PRIu32 " failed (page_error fault)",
		       host->card.name, write ? "write" : "read",
		       host->cmd_next);
		atomic_fetch_add(&host->stats.errors, 1);
		mrq->int_reg = MEMSTICK_INT_ERR;
		return;
	}
	err = memstick_media_rw(host, write, mrq->data, page_size,
				(uint64_t)host->cmd_next * page_size);
	if (err) {
		pr_err("%s: %s of page %" PRIu32 " failed: %s", host->card.name,
		       write ? "write" : "read", host->cmd_next, strerror(err));
		atomic_fetch_add(&host->stats.errors, 1);
		mrq->int_reg = MEMSTICK_INT_ERR;
		return;
	}
	atomic_fetch_add(&host->stats.pages, 1);
	host->cmd_next++;
	if (--host->cmd_left == 0)
		host->cmd = 0;
	/*
	 * The card has no volatile cache: the command is done (CED) when its
	 * pages are on flash.  For a store with a cache (an image file),
	 * that is after its flush; the driver completes the request only
	 * on CED.
	 */
	if (!host->cmd_left && write &&
	    (host->media.store->caps & MEDIA_CAN_FLUSH) &&
	    (err = media_flush(host->media.store))) {
		pr_err("%s: WRITE_DATA ending at page %" PRIu32 ": flush: %s",
		       host->card.name, host->cmd_next - 1, strerror(err));
		atomic_fetch_add(&host->stats.errors, 1);
		mrq->int_reg = MEMSTICK_INT_ERR;
		return;
	}
	mrq->int_reg = host->cmd_left ? MEMSTICK_INT_BREQ : MEMSTICK_INT_CED;
}

/* ------------------------------------------------------------------ */
/* the host: running the chain                                         */

/*
 * A page (25.6 us) or a command (100 us) is short against a thread's
 * wake-up.  Waits under MEMSTICK_SLEEP_NS are slept on the host's
 * interrupt thread, which serves this card alone and would be busy with
 * the TPC anyway; longer ones arm the interrupt a little early and sleep
 * the rest.
 */
#define MEMSTICK_SLEEP_NS 2000000ull

static void memstick_sleep_until(uint64_t when_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(when_ns / 1000000000ull),
		.tv_nsec = (long)(when_ns % 1000000000ull),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* The scaled delay until a TPC of nominal ns is done; 0 if it is now. */
static uint64_t memstick_host_delay(struct memstick_host *host,
				    uint64_t nominal_ns)
{
	uint64_t ns = mq_device_delay_ns(host->mdev, (double)nominal_ns);
	uint64_t now;

	if (!ns)
		return 0;
	/*
	 * Within a command the bus is never idle: each page is due one page
	 * time after the last one was, however late the host woke for it,
	 * so wake-up latency does not slow the card down.  A new command
	 * starts when the driver issued it (the host's wake-up is the
	 * host's business, not the card's), or now: idle time is not
	 * banked.
	 */
	now = mq_now_ns();
	if (host->restart_clock) {
		uint64_t start = host->origin_ns ? host->origin_ns : now;

		if (host->busy_until_ns < start)
			host->busy_until_ns = start;
		host->restart_clock = false;
		host->origin_ns = 0;
	}
	host->busy_until_ns += ns;
	return host->busy_until_ns > now ? host->busy_until_ns - now : 0;
}

/* memstick_next_req in Linux, without the retries. */
static int memstick_next_req(struct memstick_host *host,
			     struct memstick_request **mrq)
{
	struct memstick_dev *card = &host->card;
	int rc = -ENXIO;

	if (card->next_request)
		rc = card->next_request(card, mrq);
	if (rc)
		*mrq = NULL;
	return rc;
}

/* The chain ended.  Go idle, unless a new request came meanwhile. */
static bool memstick_host_idle(struct memstick_host *host)
{
	bool idle;

	pthread_mutex_lock(&host->lock);
	idle = !host->pending_new;
	host->pending_new = false;
	if (idle)
		host->busy = false;
	host->origin_ns = idle ? 0 : host->new_req_ns;
	pthread_mutex_unlock(&host->lock);
	return idle;
}

/* Hold mrq if the slot has no power; true if held. */
static bool memstick_host_hold(struct memstick_host *host,
			       struct memstick_request *mrq)
{
	bool held = false;

	pthread_mutex_lock(&host->lock);
	if (host->present && !host->powered) {
		host->held = mrq;
		held = true;
	}
	pthread_mutex_unlock(&host->lock);
	return held;
}

/*
 * Run the chain from mrq: done says it has run and its time is over;
 * NULL asks the driver first.
 */
static void memstick_host_run(struct memstick_host *host,
			      struct memstick_request *mrq, bool done)
{
	uint64_t delay;

	for (;;) {
		if (mrq && done)
			memstick_tpc_end(host, mrq);
		if (!mrq || done) {
			if (memstick_next_req(host, &mrq)) {
				if (memstick_host_idle(host))
					return;
				mrq = NULL;
				continue;
			}
		}
		if (memstick_host_hold(host, mrq))
			return;
		delay = memstick_host_delay(host,
					    memstick_tpc_start(host, mrq));
		if (delay > MEMSTICK_SLEEP_NS) {
			host->req = mrq;
			host->req_due_ns = host->busy_until_ns;
			irq_raise(host->irq, &host->work, memstick_host_irq,
				  delay - MEMSTICK_SLEEP_NS / 2);
			return;
		}
		if (delay)
			memstick_sleep_until(host->busy_until_ns);
		done = true;
	}
}

static void memstick_host_irq(struct irq_work *work)
{
	struct memstick_host *host =
		container_of(work, struct memstick_host, work);
	struct memstick_request *mrq;

	if (!host->slack_set) {
		/* wake when asked: nanosleep's default slack is 50 us */
		prctl(PR_SET_TIMERSLACK, 1000UL);
		pthread_mutex_lock(&host->lock);
		host->irq_tid = pthread_self();
		host->irq_tid_known = true;
		pthread_mutex_unlock(&host->lock);
		host->slack_set = true;
	}
	if ((mrq = host->req)) {
		host->req = NULL;
		if (mq_now_ns() < host->req_due_ns)
			memstick_sleep_until(host->req_due_ns);
		memstick_host_run(host, mrq, true);
	} else if ((mrq = host->restart)) {
		host->restart = NULL;
		/* power came back (or the card left): time starts now */
		host->restart_clock = true;
		host->origin_ns = 0;
		memstick_host_run(host, mrq, false);
	} else {
		pthread_mutex_lock(&host->lock);
		host->origin_ns = host->new_req_ns;
		pthread_mutex_unlock(&host->lock);
		memstick_host_run(host, NULL, false);
	}
}

void memstick_new_req(struct memstick_host *host)
{
	pthread_mutex_lock(&host->lock);
	/*
	 * From the interrupt thread, that is from a handler in the chain:
	 * its return value carries the chain on with the TPC it set up, as
	 * Linux host drivers do when their request function finds a request
	 * in flight.
	 */
	if (host->irq_tid_known &&
	    pthread_equal(host->irq_tid, pthread_self())) {
		pthread_mutex_unlock(&host->lock);
		return;
	}
	host->new_req_ns = mq_now_ns();
	if (host->busy) {
		host->pending_new = true;
		pthread_mutex_unlock(&host->lock);
		return;
	}
	host->busy = true;
	pthread_mutex_unlock(&host->lock);
	irq_raise(host->irq, &host->work, memstick_host_irq, 0);
}

/* Run a held TPC again: after power-on, or to fail it after removal. */
static void memstick_host_release(struct memstick_host *host,
				  struct memstick_request *mrq)
{
	if (!mrq)
		return;
	host->restart = mrq;
	irq_raise(host->irq, &host->work, memstick_host_irq, 0);
}

void memstick_suspend_host(struct memstick_host *host)
{
	pthread_mutex_lock(&host->lock);
	host->powered = false;
	pthread_mutex_unlock(&host->lock);
	pr_info("%s: host suspended: card powered off", host->card.name);
}

void memstick_resume_host(struct memstick_host *host)
{
	struct memstick_request *mrq;

	pthread_mutex_lock(&host->lock);
	host->powered = true;
	mrq = host->held;
	host->held = NULL;
	pthread_mutex_unlock(&host->lock);
	pr_info("%s: host resumed: card powered on", host->card.name);
	memstick_host_release(host, mrq);
}

bool memstick_host_powered(struct memstick_host *host)
{
	bool powered;

	pthread_mutex_lock(&host->lock);
	powered = host->powered;
	pthread_mutex_unlock(&host->lock);
	return powered;
}

void memstick_remove_card(struct memstick_host *host)
{
	struct memstick_request *mrq;

	pthread_mutex_lock(&host->lock);
	host->present = false;
	mrq = host->held;
	host->held = NULL;
	pthread_mutex_unlock(&host->lock);
	memstick_host_release(host, mrq);
}

int memstick_insert_card(struct memstick_host *host)
{
	pthread_mutex_lock(&host->lock);
	if (host->present) {
		pthread_mutex_unlock(&host->lock);
		return EBUSY;
	}
	/* A card goes into a slot with power on. */
	host->present = true;
	host->powered = true;
	pthread_mutex_unlock(&host->lock);
	return 0;
}

bool memstick_card_present(struct memstick_host *host)
{
	return memstick_present(host);
}

/* ------------------------------------------------------------------ */
/* set-up                                                              */

struct memstick_host *memstick_alloc_host(const char *name,
					  struct memstick_media *media,
					  const struct flashcard_params *fp,
					  const struct mq_device *mdev,
					  struct mq_err *e)
{
	struct memstick_host *host = calloc(1, sizeof(*host));
	int err;

	if (!host) {
		memstick_media_release(media);
		mq_err_set(e, "out of memory");
		return NULL;
	}
	host->media = *media;
	media->store = NULL;

	snprintf(host->name, sizeof(host->name), "%s", name);
	snprintf(host->card.name, sizeof(host->card.name), "%s", name);
	host->card.host = host;
	host->mdev = mdev;
	host->powered = true;
	host->present = true;
	host->nr_pages = host->media.size / fp->page_size;
	atomic_init(&host->fail_page, MEMSTICK_NO_PAGE);
	flashcard_init(&host->timing, fp);

	err = pthread_mutex_init(&host->lock, NULL);
	if (err) {
		mq_err_set(e, "%s: mutex: %s", name, strerror(err));
		flashcard_destroy(&host->timing);
		memstick_media_release(&host->media);
		free(host);
		return NULL;
	}
	host->irq = irq_thread_create(name);
	if (!host->irq) {
		mq_err_set(e, "%s: cannot start the host's irq thread", name);
		memstick_free_host(host);
		return NULL;
	}
	return host;
}

void memstick_free_host(struct memstick_host *host)
{
	if (!host)
		return;
	if (host->irq)
		irq_thread_destroy(host->irq);
	pthread_mutex_destroy(&host->lock);
	flashcard_destroy(&host->timing);
	memstick_media_release(&host->media);
	free(host);
}

struct memstick_dev *memstick_host_card(struct memstick_host *host)
{
	return &host->card;
}

const struct memstick_stats *memstick_host_stats(struct memstick_host *host)
{
	return &host->stats;
}

const struct flashcard_params *memstick_host_timing(struct memstick_host *host)
{
	return &host->timing.p;
}

int memstick_media_sync(struct memstick_host *host)
{
	return media_flush(host->media.store);
}

struct media *memstick_media_store(struct memstick_host *host)
{
	return host->media.store;
}
