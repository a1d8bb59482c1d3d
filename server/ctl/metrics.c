// SPDX-License-Identifier: GPL-2.0
/*
 * Prometheus text exposition (format 0.0.4) of every export: the stat
 * counters by op, per-hctx counters and the latency histograms.  Each
 * family's HELP and TYPE come once, before its samples.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "../mq/blk-mq.h"

static const char *const group_names[NR_STAT_GROUPS] = {
	[STAT_READ] = "read",
	[STAT_WRITE] = "write",
	[STAT_DISCARD] = "discard",
	[STAT_FLUSH] = "flush",
};

/* An export and its name as a label value (\\, \" and \n escaped). */
struct mexp {
	struct gendisk *disk;
	char name[2 * 256 + 1];
};

#define for_each_disk(m, nr, i, disk)                                          \
	for ((i) = 0; (i) < (nr) && ((disk) = (m)[i].disk); (i)++)

static void family(struct ctl_buf *out, const char *name, const char *type,
		   const char *help)
{
	ctl_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
		       type);
}

/*
 * A per-op counter of struct mq_queue_stats in base units: times kept in
 * nanoseconds are divided by div, counts multiplied by mul.
 */
static void queue_counter(struct ctl_buf *out, const struct mexp *m,
			  unsigned int nr, const char *name, const char *help,
			  size_t off, double div, unsigned long mul)
{
	struct gendisk *disk;
	unsigned int i, g;

	family(out, name, "counter", help);
	for_each_disk(m, nr, i, disk)
	{
		atomic_ulong *v =
			(atomic_ulong *)((char *)&disk->queue->stats + off);

		for (g = 0; g < NR_STAT_GROUPS; g++) {
			unsigned long x = atomic_load_explicit(
				&v[g], memory_order_relaxed);

			if (div == 1)
				ctl_buf_printf(
					out,
					"%s{export=\"%s\",op=\"%s\"} %lu\n",
					name, m[i].name, group_names[g],
					x * mul);
			else
				ctl_buf_printf(
					out,
					"%s{export=\"%s\",op=\"%s\"} %.9f\n",
					name, m[i].name, group_names[g],
					x / div);
		}
	}
}

/*
 * The core keeps log2 buckets of nanoseconds (bucket b: below 2^b ns).
 * Exposed are the bounds 2^10 ns (1 us) to 2^34 ns (17 s) every other
 * power of two: 13 buckets and +Inf.
 */
#define LAT_FIRST_BUCKET 10
#define LAT_LAST_BUCKET	 34
#define LAT_BUCKET_STEP	 2

static void latency(struct ctl_buf *out, const struct mexp *m, unsigned int nr)
{
	const char *name = "mqblk_request_latency_seconds";
	struct gendisk *disk;
	unsigned int i, g, b;

	family(out, name, "histogram",
	       "Request latency from allocation to completion.");
	for_each_disk(m, nr, i, disk)
	{
		struct mq_queue_stats *st = &disk->queue->stats;

		for (g = 0; g < NR_STAT_GROUPS; g++) {
			unsigned long sum = 0;

			for (b = 0; b < MQ_LAT_BUCKETS; b++) {
				sum += atomic_load_explicit(
					&st->lat_hist[g][b],
					memory_order_relaxed);
				if (b < LAT_FIRST_BUCKET ||
				    b > LAT_LAST_BUCKET ||
				    (b - LAT_FIRST_BUCKET) % LAT_BUCKET_STEP)
					continue;
				ctl_buf_printf(
					out,
					"%s_bucket{export=\"%s\",op=\"%s\",le=\"%.9g\"} %lu\n",
					name, m[i].name, group_names[g],
					(double)(1ull << b) / 1e9, sum);
			}
			ctl_buf_printf(
				out,
				"%s_bucket{export=\"%s\",op=\"%s\",le=\"+Inf\"} %lu\n",
				name, m[i].name, group_names[g], sum);
			ctl_buf_printf(out,
				       "%s_sum{export=\"%s\",op=\"%s\"} %.9f\n",
				       name, m[i].name, group_names[g],
				       atomic_load(&st->nsecs[g]) / 1e9);
			ctl_buf_printf(
				out, "%s_count{export=\"%s\",op=\"%s\"} %lu\n",
				name, m[i].name, group_names[g], sum);
		}
	}
}

static void queue_gauges(struct ctl_buf *out, const struct mexp *m,
			 unsigned int nr)
{
	struct gendisk *disk;
	unsigned int i;

	family(out, "mqblk_in_flight", "gauge",
	       "Requests started and not completed, by direction.");
	for_each_disk(m, nr, i, disk)
	{
		struct mq_queue_stats *st = &disk->queue->stats;

		ctl_buf_printf(
			out, "mqblk_in_flight{export=\"%s\",op=\"read\"} %u\n",
			m[i].name, atomic_load(&st->in_flight[0]));
		ctl_buf_printf(
			out, "mqblk_in_flight{export=\"%s\",op=\"write\"} %u\n",
			m[i].name, atomic_load(&st->in_flight[1]));
	}
	family(out, "mqblk_io_ticks_seconds_total", "counter",
	       "Time with at least one request in flight (stat field 10).");
	for_each_disk(m, nr, i, disk)
	{
		struct mq_queue_stats *st = &disk->queue->stats;
		uint64_t t;

		t = atomic_load(&st->io_ticks_ns);
		ctl_buf_printf(
			out,
			"mqblk_io_ticks_seconds_total{export=\"%s\"} %.9f\n",
			m[i].name, t / 1e9);
	}
	family(out, "mqblk_capacity_bytes", "gauge", "Export size.");
	for_each_disk(m, nr, i, disk) ctl_buf_printf(
		out, "mqblk_capacity_bytes{export=\"%s\"} %" PRIu64 "\n",
		m[i].name, get_capacity(disk) << SECTOR_SHIFT);
}

#define HCTX_STAT(f)                                                           \
	{                                                                      \
#f, offsetof(struct mq_hctx_stats, f)                          \
	}

static const struct {
	const char *name;
	size_t off;
} hctx_counters[] = {
	HCTX_STAT(queued),   HCTX_STAT(merged), HCTX_STAT(dispatched),
	HCTX_STAT(requeued), HCTX_STAT(busy),	HCTX_STAT(dev_resource),
	HCTX_STAT(resource), HCTX_STAT(run),	HCTX_STAT(completed),
};

static void hctx_metrics(struct ctl_buf *out, const struct mexp *m,
			 unsigned int nr)
{
	struct gendisk *disk;
	unsigned int i, c, h;

	for (c = 0; c < sizeof(hctx_counters) / sizeof(hctx_counters[0]); c++) {
		ctl_buf_printf(out,
			       "# HELP mqblk_hctx_%s_total Per hw queue: %s.\n"
			       "# TYPE mqblk_hctx_%s_total counter\n",
			       hctx_counters[c].name, hctx_counters[c].name,
			       hctx_counters[c].name);
		for_each_disk(m, nr, i, disk)
		{
			struct mq_queue *q = disk->queue;

			for (h = 0; h < q->nr_hw_queues; h++) {
				atomic_ulong *v =
					(atomic_ulong
						 *)((char *)&q->queue_hw_ctx[h]
							    ->stats +
						    hctx_counters[c].off);

				ctl_buf_printf(
					out,
					"mqblk_hctx_%s_total{export=\"%s\",hctx=\"%u\"} %lu\n",
					hctx_counters[c].name, m[i].name, h,
					atomic_load(v));
			}
		}
	}
	family(out, "mqblk_hctx_active", "gauge",
	       "Requests handed to queue_rq and not completed.");
	for_each_disk(m, nr, i, disk)
	{
		struct mq_queue *q = disk->queue;

		for (h = 0; h < q->nr_hw_queues; h++)
			ctl_buf_printf(
				out,
				"mqblk_hctx_active{export=\"%s\",hctx=\"%u\"} %u\n",
				m[i].name, h,
				atomic_load(&q->queue_hw_ctx[h]->stats.active));
	}
	family(out, "mqblk_hctx_tags_busy", "gauge", "Driver tags in use.");
	for_each_disk(m, nr, i, disk)
	{
		struct mq_queue *q = disk->queue;

		for (h = 0; h < q->nr_hw_queues; h++) {
			struct mq_tags_info info = {0};

			mq_tags_info(q->queue_hw_ctx[h]->tags, &info);
			ctl_buf_printf(
				out,
				"mqblk_hctx_tags_busy{export=\"%s\",hctx=\"%u\"} %u\n",
				m[i].name, h, info.busy);
		}
	}
}

static void escape_label(char *dst, const char *src)
{
	for (; *src; src++) {
		if (*src == '\\' || *src == '"')
			*dst++ = '\\';
		if (*src == '\n') {
			*dst++ = '\\';
			*dst++ = 'n';
			continue;
		}
		*dst++ = *src;
	}
	*dst = '\0';
}

void ctl_metrics(const struct ctl_export *ex, unsigned int nr_devs,
		 struct ctl_buf *out)
{
	struct mexp *m = calloc(nr_devs ? nr_devs : 1, sizeof(*m));
	unsigned int i;

	if (!m) {
		out->failed = true;
		return;
	}
	for (i = 0; i < nr_devs; i++) {
		m[i].disk = ex[i].disk;
		/* Export names in the tree are at most 255 bytes. */
		if (strlen(ex[i].name) > 255)
			snprintf(m[i].name, sizeof(m[i].name), "%.255s",
				 ex[i].name);
		else
			escape_label(m[i].name, ex[i].name);
	}
	queue_counter(out, m, nr_devs, "mqblk_requests_total",
		      "Requests completed (stat fields 1, 5, 12, 16).",
		      offsetof(struct mq_queue_stats, ios), 1, 1);
	queue_counter(out, m, nr_devs, "mqblk_merges_total",
		      "Bios merged into a request (stat fields 2, 6, 13).",
		      offsetof(struct mq_queue_stats, merges), 1, 1);
	queue_counter(out, m, nr_devs, "mqblk_bytes_total",
		      "Bytes completed (stat fields 3, 7, 14 times 512).",
		      offsetof(struct mq_queue_stats, sectors), 1,
		      1ul << SECTOR_SHIFT);
	queue_counter(out, m, nr_devs, "mqblk_request_time_seconds_total",
		      "Time requests spent, summed (stat fields 4, 8, 15, 17).",
		      offsetof(struct mq_queue_stats, nsecs), 1e9, 1);
	queue_counter(out, m, nr_devs, "mqblk_errors_total",
		      "Requests completed with an error.",
		      offsetof(struct mq_queue_stats, errors), 1, 1);
	queue_gauges(out, m, nr_devs);
	hctx_metrics(out, m, nr_devs);
	latency(out, m, nr_devs);
	free(m);
}
