/* SPDX-License-Identifier: GPL-2.0 */
/*
 * null_blk: a block device that does nothing, fast, as drivers/block/null_blk
 * does in Linux.  Optionally memory backed, with a volatile write cache, a
 * bandwidth throttle and fault injection.
 *
 * What Linux keeps in module globals (the g_* parameters, the shared tag
 * set, the device list) lives in struct null_blk, one per mq_device.  Each
 * exported disk is a struct nullb with its own configuration copy and
 * storage in struct nullb_device, as in Linux.
 */
#ifndef MQBLK_NULL_BLK_H
#define MQBLK_NULL_BLK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "../device.h"
#include "../common/fault_inject.h"
#include "../common/irq.h"
#include "../media/media.h"
#include "../common/zoned.h"
#include "../../server/mq/blk-mq.h"
#include "../../server/mq/genhd.h"

enum {
	NULL_IRQ_NONE = 0,
	NULL_IRQ_SOFTIRQ = 1,
	NULL_IRQ_TIMER = 2,
};

/* Historic queue modes; only MQ is real, BIO means "no elevator". */
enum {
	NULL_Q_BIO = 0,
	NULL_Q_RQ = 1,
	NULL_Q_MQ = 2,
};

/* The write cache works in pages of this size, as null_blk does. */
#define NULLB_PAGE_SHIFT 12
#define NULLB_PAGE_SIZE	 (1u << NULLB_PAGE_SHIFT)

/* Bandwidth throttle: the budget is refilled every millisecond. */
#define NULLB_THROTTLE_TICK_NS 1000000ULL
#define NULLB_TICKS_PER_SEC    1000ULL

struct nullb;

/* One page of the write cache: a full copy of the backing page, dirty. */
struct nullb_page {
	uint64_t idx; /* offset >> NULLB_PAGE_SHIFT */
	TAILQ_ENTRY(nullb_page) lru;
	unsigned char data[NULLB_PAGE_SIZE];
};

TAILQ_HEAD(nullb_page_list, nullb_page);

/* The configuration (the keys) and the storage of one disk. */
struct nullb_device {
	struct nullb *nullb;

	/* memory_backed=1: the data, and the volatile cache in front of it */
	struct media *data; /* media= (sparse RAM by default) */
	void *cache;	    /* tsearch tree of nullb_page by idx */
	struct nullb_page_list cache_lru; /* oldest first */
	uint64_t curr_cache;		  /* bytes held by the cache */

	struct fault_attr timeout_config;
	struct fault_attr requeue_config;
	bool fault_ready;

	uint64_t size; /* bytes */
	uint64_t completion_nsec;
	uint64_t cache_size; /* MiB */
	unsigned int submit_queues;
	unsigned int hw_queue_depth;
	unsigned int queue_mode;
	unsigned int irqmode;
	unsigned int blocksize;
	unsigned int mbps;
	bool memory_backed;
	bool discard;
	bool blocking;
	bool shared_tags;
	bool no_sched;
	bool rotational;

	/* zoned=1, with Linux's keys (drivers/block/null_blk/zoned.c) */
	bool zoned;
	uint64_t zone_size;	/* MB, a power of two */
	uint64_t zone_capacity; /* MB; 0: the zone size */
	unsigned int zone_nr_conv;
	unsigned int zone_max_open;
	unsigned int zone_max_active;
	struct zoned_dev zd; /* the zones, when zoned */
};

/* Per hw queue driver data (hctx->driver_data). */
struct nullb_queue {
	struct nullb *nullb;
	struct nullb_device *dev;
	atomic_uint requeue_selection; /* requeue fault: which path next */
};

/* The per-request pdu (tag_set->cmd_size). */
struct nullb_cmd {
	struct nullb_queue *nq;
	atomic_int error; /* 0 or a positive errno; the first one sticks */
	bool fake_timeout;
	struct irq_work work; /* irqmode 1 and 2 */
};

/* Fault and throttle counters, for the control plane. */
struct nullb_stats {
	atomic_ulong timeouts; /* requests dropped by the timeout fault */
	atomic_ulong requeues; /* requests requeued by the requeue fault */
	atomic_ulong requeue_resource; /* of those, by RESOURCE to the core */
	atomic_ulong throttled; /* DEV_RESOURCE returns from the throttle */
};

struct null_blk;

/* One exported disk: nullbN. */
struct nullb {
	struct null_blk *host;
	struct nullb_device dev;
	unsigned int index;
	const char *disk_name; /* disk.disk_name: a rename shows */

	struct mq_queue *q;
	struct mq_tag_set *tag_set; /* &__tag_set, or the shared one */
	struct mq_tag_set __tag_set;
	bool tag_set_ready;
	struct nullb_queue *queues;
	unsigned int nr_queues;
	struct gendisk disk;

	pthread_mutex_t lock; /* the write cache */
	bool lock_ready;

	/* mbps throttle */
	bool throttled;
	atomic_long cur_bytes;
	struct irq_tick bw_timer;

	struct nullb_stats stats;
};

/* One per mq_device: what the module and its globals are in Linux. */
struct null_blk {
	struct mq_device *mdev;
	struct irq_thread *irq; /* irqmode 1, 2 and the mbps tick */

	struct mq_tag_set tag_set; /* shared_tags=1 */
	bool tag_set_ready;

	struct fault_attr init_hctx_attr;
	bool init_hctx_ready;
	atomic_ulong init_hctx_faults;

	unsigned int nr_devices;
	struct nullb *nullbs[MQ_MAX_DISKS];
	/* While probing: each disk's store, until null_add_dev takes it. */
	struct media *media[MQ_MAX_DISKS];
};

extern const struct mq_driver null_blk_driver;

/* attrs.c: device/ and fault/ nodes for the control plane */
extern const struct disk_attr null_disk_attrs[];
extern const struct disk_fault null_disk_faults[];

/* memory.c: the backing store and the write cache */
/* Takes over m (NULL unless memory_backed). */
int null_setup_storage(struct nullb_device *dev, struct media *m);
void null_free_device_storage(struct nullb_device *dev);
static inline bool null_cache_active(const struct nullb_device *dev)
{
	return dev->memory_backed && dev->cache_size > 0;
}
int null_handle_flush(struct nullb *nullb);
int null_handle_discard(struct nullb *nullb, uint64_t pos, uint64_t len);
int null_handle_data_transfer(struct nullb_cmd *cmd);
int null_report_extents(struct gendisk *disk, uint64_t offset, uint64_t length,
			extent_fn *fn, void *arg);

/* zoned.c: zoned=1 */
int null_init_zoned_dev(struct nullb_device *dev, struct mq_err *e);
void null_free_zoned_dev(struct nullb_device *dev);
int null_zoned_attach_store(struct nullb_device *dev, struct mq_err *e);
int null_zoned_flush(struct nullb *nullb);
int null_process_zoned_cmd(struct nullb_cmd *cmd, enum req_op op,
			   uint64_t sector, uint64_t nr_sectors);
int null_report_zones(struct gendisk *disk, unsigned int idx, unsigned int nr,
		      report_zones_cb *cb, void *data);
int null_zone_mgmt(struct gendisk *disk, enum blk_zone_op op,
		   unsigned int zone);

#endif
