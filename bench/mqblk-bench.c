/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mqblk-bench: benchmarks of the request core and its schedulers.
 *
 *   mqblk-bench core [--seconds N] [--sched LIST] [--inflight N]
 *                    [--write-pct P] [--device KEY=VALUE,...] [--cpu]
 *
 * "core" measures scheduler overhead: a null device with inline
 * completion (irqmode=0) and one submitting thread that keeps a fixed
 * number of 4 KiB random bios circulating, each bio's end_io submitting
 * it again.  It prints one line per scheduler: NAME REQUESTS_PER_SECOND.
 * --device times another model the same way (its own timing, no front
 * end): "device=sata-ssd,size=1G" gives the SSD's IOPS at --inflight.
 * --cpu adds a third column: the process's CPU time over the run
 * (CLOCK_PROCESS_CPUTIME_ID, every thread: the submitter, kblockd, the
 * device's) divided by the requests completed, in microseconds.  It is
 * what a request costs in CPU, not in wall time, so a loaded machine
 * moves it less than it moves the rate.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/device.h"
#include "server/mq/elevator.h"

#define BENCH_MAX_INFLIGHT 1024
#define BENCH_BS	   4096u
#define BENCH_SIZE	   (1ull << 30)
/* Look at the clock once every this many completions. */
#define BENCH_CLOCK_EVERY 1024u

struct bench_run;

struct bench_io {
	struct bio bio;
	struct bench_run *run;
	char buf[BENCH_BS];
};

struct bench_run {
	struct mq_ctx *ctx;
	uint64_t deadline_ns;
	uint64_t rng;
	unsigned int write_pct;
	/*
	 * Completion is usually inline in this thread, but a scheduler that
	 * idles (bfq) completes some from kblockd after a delayed run.
	 */
	atomic_ulong completed;
	atomic_ulong errors;
	atomic_uint inflight;
	atomic_bool stop;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	struct bench_io *ios;
};

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static void bench_end_io(struct bio *bio);

static void bench_submit(struct bench_run *run, struct bench_io *io)
{
	uint64_t r = xorshift64(&run->rng);
	uint64_t nr_blocks = BENCH_SIZE / BENCH_BS;
	enum req_op op =
		(r >> 56) % 100 < run->write_pct ? REQ_OP_WRITE : REQ_OP_READ;

	bio_init(&io->bio, op, (r % nr_blocks) * (BENCH_BS >> SECTOR_SHIFT),
		 BENCH_BS, io->buf);
	io->bio.bi_end_io = bench_end_io;
	io->bio.bi_private = io;
	io->bio.bi_submitter = 1;
	mq_submit_bio(run->ctx, &io->bio);
}

static void bench_end_io(struct bio *bio)
{
	struct bench_io *io = bio->bi_private;
	struct bench_run *run = io->run;

	if (bio->bi_status)
		atomic_fetch_add(&run->errors, 1);
	if ((atomic_fetch_add(&run->completed, 1) + 1) % BENCH_CLOCK_EVERY ==
		    0 &&
	    mq_now_ns() >= run->deadline_ns)
		atomic_store(&run->stop, true);
	if (atomic_load(&run->stop)) {
		if (atomic_fetch_sub(&run->inflight, 1) == 1) {
			pthread_mutex_lock(&run->lock);
			pthread_cond_signal(&run->idle);
			pthread_mutex_unlock(&run->lock);
		}
		return;
	}
	bench_submit(run, io);
}

/* The process's CPU time, every thread; 0 if the clock cannot be read. */
static uint64_t cpu_now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Queue every bio with the hardware queue stopped, then start it: the
 * dispatch loop runs in this thread, each inline completion resubmits its
 * bio, and the loop returns once the deadline has stopped them all.
 * *rate is requests a second of wall time; *cpu_us the process's CPU
 * microseconds per request over the same window (0 if no request
 * completed or the CPU clock could not be read).
 */
static int bench_core_one(struct mq_queue *q, unsigned int inflight,
			  unsigned int write_pct, unsigned int seconds,
			  double *rate, double *cpu_us)
{
	struct bench_run run = {
		.ctx = mq_get_ctx(q, 0),
		.rng = 0x9e3779b97f4a7c15ull,
		.write_pct = write_pct,
	};
	uint64_t t0, t1, c0, c1;
	unsigned long done;
	unsigned int i;

	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.idle, NULL);
	run.ios = calloc(inflight, sizeof(*run.ios));
	if (!run.ios)
		return ENOMEM;
	mq_stop_hw_queues(q);
	run.deadline_ns = UINT64_MAX;
	for (i = 0; i < inflight; i++) {
		run.ios[i].run = &run;
		run.inflight++;
		bench_submit(&run, &run.ios[i]);
	}
	c0 = cpu_now_ns();
	t0 = mq_now_ns();
	run.deadline_ns = t0 + (uint64_t)seconds * 1000000000ull;
	mq_start_hw_queues(q);
	/* The bios are ours: none may be freed while the core holds it. */
	pthread_mutex_lock(&run.lock);
	while (atomic_load(&run.inflight))
		pthread_cond_wait(&run.idle, &run.lock);
	pthread_mutex_unlock(&run.lock);
	t1 = mq_now_ns();
	c1 = cpu_now_ns();
	if (atomic_load(&run.errors))
		fprintf(stderr, "mqblk-bench: %lu bios failed\n",
			atomic_load(&run.errors));
	done = atomic_load(&run.completed);
	*rate = (double)done * 1e9 / (double)(t1 - t0);
	*cpu_us = done && c0 && c1 > c0 ? (double)(c1 - c0) / 1e3 / (double)done
					: 0;
	free(run.ios);
	pthread_cond_destroy(&run.idle);
	pthread_mutex_destroy(&run.lock);
	return atomic_load(&run.errors) ? EIO : 0;
}

/*
 * The device: spec is NULL (the null device above) or --device's
 * comma-separated KEY=VALUE list, e.g. "device=sata-ssd,size=1G", to
 * time a model's own figures without a front end in the way.
 */
static int make_device(struct mq_device **devp, const char *spec)
{
	static const char *const kv[] = {
		"device=null",	     "irqmode=0",	"size=1G",
		"hw_queue_depth=64", "submit_queues=1",
	};
	struct mq_params *p = mq_params_new();
	struct mq_err e = {{0}};
	char *copy = NULL, *tok, *save = NULL;
	unsigned int i;
	int err = 0;

	if (!p)
		return ENOMEM;
	if (spec) {
		copy = strdup(spec);
		if (!copy)
			err = ENOMEM;
		for (tok = copy ? strtok_r(copy, ",", &save) : NULL;
		     tok && !err; tok = strtok_r(NULL, ",", &save))
			if (mq_params_set_kv(p, tok, &e))
				err = EINVAL;
		free(copy);
	} else {
		for (i = 0; i < sizeof(kv) / sizeof(kv[0]) && !err; i++)
			if (mq_params_set_kv(p, kv[i], &e))
				err = EINVAL;
	}
	if (!err && mq_device_create(p, 1, devp, &e))
		err = EINVAL;
	if (err)
		fprintf(stderr, "mqblk-bench: %s: %s\n", spec ? spec : "null",
			e.msg[0] ? e.msg : strerror(err));
	mq_params_free(p);
	return err;
}

static int bench_core(unsigned int seconds, const char *list,
		      unsigned int inflight, unsigned int write_pct,
		      const char *spec, bool cpu)
{
	struct mq_device *dev;
	struct mq_queue *q;
	char *names, *name, *save = NULL;
	int err, ret = 0;

	err = make_device(&dev, spec);
	if (err)
		return 1;
	q = dev->disks[0]->queue;
	names = strdup(list);
	if (!names) {
		mq_device_destroy(dev);
		return 1;
	}
	for (name = strtok_r(names, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		const struct elevator_type *e = NULL;
		double rate, cpu_us;

		if (strcmp(name, "none")) {
			e = elevator_find(name);
			if (!e) {
				printf("%s skipped: not built in\n", name);
				fflush(stdout);
				continue;
			}
		}
		err = elevator_switch(q, e);
		if (err) {
			fprintf(stderr, "mqblk-bench: cannot attach %s: %s\n",
				name, strerror(err));
			ret = 1;
			continue;
		}
		err = bench_core_one(q, inflight, write_pct, seconds, &rate,
				     &cpu_us);
		if (err) {
			ret = 1;
			continue;
		}
		if (cpu)
			printf("%s %.0f %.3f\n", name, rate, cpu_us);
		else
			printf("%s %.0f\n", name, rate);
		fflush(stdout);
	}
	elevator_switch(q, NULL);
	free(names);
	mq_device_destroy(dev);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mqblk-bench core [--seconds N] [--sched LIST] "
		   "[--inflight N] [--write-pct P]\n"
		   "                   [--device KEY=VALUE,...] [--cpu]\n"
		   "  LIST: comma-separated schedulers "
		   "(default none,mq-deadline,bfq,kyber)\n"
		   "  --device: the device instead of null irqmode=0, e.g. "
		   "device=sata-ssd,size=1G\n"
		   "  --cpu: a third column, CPU microseconds per request "
		   "(all threads)\n");
}

static int parse_uint(const char *s, unsigned int min, unsigned int max,
		      unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

int main(int argc, char **argv)
{
	const char *sched = "none,mq-deadline,bfq,kyber";
	const char *spec = NULL;
	unsigned int seconds = 3, inflight = 32, write_pct = 0;
	bool cpu = false;
	int i;

	if (argc < 2 || strcmp(argv[1], "core")) {
		usage(stderr);
		return 2;
	}
	/* every option but --help and --cpu takes a value: they go in pairs */
	for (i = 2; i < argc; i += 2) {
		const char *arg = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : 0;
		int bad = !val;

		if (!strcmp(arg, "--cpu")) {
			cpu = true;
			i--; /* no value */
			continue;
		}
		if (!strcmp(arg, "--seconds"))
			bad = bad || parse_uint(val, 1, 3600, &seconds);
		else if (!strcmp(arg, "--sched"))
			sched = val;
		else if (!strcmp(arg, "--inflight"))
			bad = bad ||
			      parse_uint(val, 1, BENCH_MAX_INFLIGHT, &inflight);
		else if (!strcmp(arg, "--device"))
			spec = val;
		else if (!strcmp(arg, "--write-pct"))
			bad = bad || parse_uint(val, 0, 100, &write_pct);
		else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			return 0;
		} else
			bad = 1;
		if (bad) {
			fprintf(stderr, "mqblk-bench: bad argument: %s\n", arg);
			usage(stderr);
			return 2;
		}
	}
	return bench_core(seconds, sched, inflight, write_pct, spec, cpu);
}
