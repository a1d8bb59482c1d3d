/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A flash SSD behind a serial link (SATA or SAS): a pipeline of two
 * stages, which is why it answers "when is this command done?" for a
 * moment in time, not "how long does it take?" as backends/timing does.
 *
 *  - The controller and the link take one command at a time: a fixed
 *    cost per command, then the data at link_mbps.  The fixed cost is
 *    derived so that a 4 KiB read costs 1/iops: this stage is what caps
 *    random 4 KiB reads at `iops` however deep the queue.
 *  - The flash array: nr_dies dies work in parallel; a command takes the
 *    die that frees first and holds it for the rest of its latency.  A
 *    4 KiB read alone (QD1) takes read_us end to end, a write write_us.
 *    Larger commands are striped over the dies, so they cost the array
 *    no more than a 4 KiB one; the link time grows with their size.
 *
 * Defaults are a SATA flash SSD of about 2018: 100 us a 4 KiB read
 * (10k IOPS at QD1), 90k IOPS at QD32, 120 us a write, 550 MB/s link,
 * 16 dies.  MB is 10^6 bytes.  Times are nominal and are multiplied by
 * the device's time_scale here, since the stages' clocks are real time.
 */
#ifndef MQBLK_SCSI_SSD_TIMING_H
#define MQBLK_SCSI_SSD_TIMING_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../server/mq/params.h"

#define SSD_MAX_DIES 64

struct ssd_params {
	double read_us;	      /* 4 KiB read at QD1, end to end: 100 */
	double write_us;      /* 4 KiB write at QD1: 120 */
	double iops;	      /* 4 KiB random reads a second at depth: 90000 */
	double link_mbps;     /* 550 */
	unsigned int nr_dies; /* 16 */
};

void ssd_params_default(struct ssd_params *p);
/* Read the keys above from p, starting from *sp.  0, or -1 with e set. */
int ssd_params_read(struct ssd_params *sp, struct mq_params *p,
		    struct mq_err *e);

enum ssd_op {
	SSD_READ,
	SSD_WRITE,
	SSD_FLUSH, /* no volatile cache: the controller stage only */
};

struct ssd_model {
	struct ssd_params p;
	double scale;	      /* the device's time_scale */
	double cmd_ns;	      /* controller cost per command, nominal */
	double link_ns_per_b; /* nominal */
	pthread_mutex_t lock;
	uint64_t ctrl_free_ns; /* when the controller can take the next */
	uint64_t die_free_ns[SSD_MAX_DIES];
	uint64_t nr_cmds;
};

/* 0, or an errno (parameters that leave no time for the flash). */
int ssd_model_init(struct ssd_model *m, const struct ssd_params *p,
		   double scale);
void ssd_model_destroy(struct ssd_model *m);

/*
 * A command of bytes arriving at now_ns (CLOCK_MONOTONIC): when it is
 * done.  With time_scale 0, now_ns.
 */
uint64_t ssd_model_submit(struct ssd_model *m, enum ssd_op op, uint32_t bytes,
			  uint64_t now_ns);

#endif
