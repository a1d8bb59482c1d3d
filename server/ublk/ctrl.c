// SPDX-License-Identifier: GPL-2.0
/*
 * The control device, /dev/ublk-control: commands go as IORING_OP_URING_CMD
 * on a ring of 128-byte SQEs, one at a time, from the main thread.
 *
 * A device's life: ADD_DEV (queues, depth, flags; the kernel picks the
 * number), SET_PARAMS (what the model's queue limits say), the queue
 * threads fetch every tag, START_DEV (the kernel waits for those fetches,
 * then adds /dev/ublkbN).  Stopping: STOP_DEV (the kernel deletes the
 * disk, which drains every request through our threads), the threads
 * leave, the char device is closed, DEL_DEV.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mqblk-ublk.h"

#define UBLK_CONTROL "/dev/ublk-control"

/* One command; the kernel's result (>= 0) or -errno. */
static int ctrl_cmd(struct ublk_ctrl *c, unsigned int op,
		    const struct ublksrv_ctrl_cmd *cmd)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int r;

	sqe = io_uring_get_sqe(&c->ring);
	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe)); /* a 128-byte SQE */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = c->fd;
	sqe->cmd_op = op;
	memcpy(sqe->cmd, cmd, sizeof(*cmd));
	do {
		r = io_uring_submit_and_wait(&c->ring, 1);
	} while (r == -EINTR);
	if (r < 0)
		return r;
	do {
		r = io_uring_wait_cqe(&c->ring, &cqe);
	} while (r == -EINTR);
	if (r < 0)
		return r;
	r = cqe->res;
	io_uring_cqe_seen(&c->ring, cqe);
	return r;
}

int ublk_ctrl_open(struct ublk_ctrl *c)
{
	struct ublksrv_ctrl_cmd cmd = {.dev_id = UINT32_MAX,
				       .queue_id = UINT16_MAX};
	int r;

	memset(c, 0, sizeof(*c));
	c->fd = open(UBLK_CONTROL, O_RDWR | O_CLOEXEC);
	if (c->fd < 0) {
		int err = errno;

		if (err == ENOENT && access("/sys/module/ublk_drv", F_OK))
			fprintf(stderr,
				"mqblk-ublk: no " UBLK_CONTROL
				": this kernel has no ublk driver loaded "
				"(modprobe ublk_drv; it needs "
				"CONFIG_BLK_DEV_UBLK, Linux 6.0 or later)\n");
		else
			fprintf(stderr, "mqblk-ublk: " UBLK_CONTROL ": %s\n",
				strerror(err));
		return -1;
	}
	r = io_uring_queue_init(4, &c->ring, IORING_SETUP_SQE128);
	if (r < 0) {
		fprintf(stderr,
			"mqblk-ublk: io_uring with 128-byte SQEs: %s "
			"(ublk needs Linux 6.0 or later)\n",
			strerror(-r));
		close(c->fd);
		return -1;
	}
	cmd.addr = (uint64_t)(uintptr_t)&c->features;
	cmd.len = sizeof(c->features);
	r = ctrl_cmd(c, UBLK_U_CMD_GET_FEATURES, &cmd);
	if (r < 0) {
		fprintf(stderr,
			"mqblk-ublk: GET_FEATURES: %s: this kernel's ublk is "
			"older than Linux 6.5, which mqblk-ublk needs "
			"(USER_COPY)\n",
			strerror(-r));
		goto fail;
	}
	if (!(c->features & UBLK_F_USER_COPY)) {
		fprintf(stderr, "mqblk-ublk: this kernel's ublk lacks "
				"UBLK_F_USER_COPY (Linux 6.5), which "
				"mqblk-ublk moves data with\n");
		goto fail;
	}
	if (!(c->features & UBLK_F_CMD_IOCTL_ENCODE)) {
		fprintf(stderr, "mqblk-ublk: this kernel's ublk lacks "
				"UBLK_F_CMD_IOCTL_ENCODE\n");
		goto fail;
	}
	return 0;
fail:
	io_uring_queue_exit(&c->ring);
	close(c->fd);
	return -1;
}

void ublk_ctrl_close(struct ublk_ctrl *c)
{
	io_uring_queue_exit(&c->ring);
	close(c->fd);
}

static unsigned int ilog2(unsigned int v)
{
	unsigned int r = 0;

	while (v >>= 1)
		r++;
	return r;
}

static bool is_pow2(unsigned int v)
{
	return v && !(v & (v - 1));
}

/* What the model's queue limits say, as SET_PARAMS takes it. */
static void fill_params(struct ublk_dev *d)
{
	const struct gendisk *disk = d->exp->disk;
	const struct queue_limits *lim = &disk->queue->limits;
	struct ublk_params *p = &d->params;
	unsigned int max_sectors = lim->max_sectors;

	memset(p, 0, sizeof(*p));
	p->len = sizeof(*p);
	p->types = UBLK_PARAM_TYPE_BASIC;
	if (d->exp->readonly || d->opts->readonly)
		p->basic.attrs |= UBLK_ATTR_READ_ONLY;
	if (lim->rotational)
		p->basic.attrs |= UBLK_ATTR_ROTATIONAL;
	if (lim->write_cache)
		p->basic.attrs |= UBLK_ATTR_VOLATILE_CACHE;
	if (lim->fua)
		p->basic.attrs |= UBLK_ATTR_FUA;
	p->basic.logical_bs_shift = (uint8_t)ilog2(lim->logical_block_size);
	p->basic.physical_bs_shift = (uint8_t)ilog2(
		lim->physical_block_size > lim->logical_block_size
			? lim->physical_block_size
			: lim->logical_block_size);
	p->basic.io_min_shift = p->basic.physical_bs_shift;
	if (is_pow2(lim->io_opt))
		p->basic.io_opt_shift = (uint8_t)ilog2(lim->io_opt);
	if (!max_sectors || max_sectors > d->info.max_io_buf_bytes >> 9)
		max_sectors = d->info.max_io_buf_bytes >> 9;
	p->basic.max_sectors = max_sectors;
	p->basic.dev_sectors = get_capacity(disk);

	if (d->nr_zones) {
		p->types |= UBLK_PARAM_TYPE_ZONED;
		p->basic.chunk_sectors = lim->chunk_sectors;
		p->zoned.max_open_zones = lim->max_open_zones;
		p->zoned.max_active_zones = lim->max_active_zones;
		p->zoned.max_zone_append_sectors =
			lim->max_zone_append_sectors
				? lim->max_zone_append_sectors
				: lim->chunk_sectors;
		if (p->zoned.max_zone_append_sectors > max_sectors)
			p->zoned.max_zone_append_sectors = max_sectors;
	}

	if (lim->max_discard_sectors || lim->max_write_zeroes_sectors) {
		p->types |= UBLK_PARAM_TYPE_DISCARD;
		p->discard.discard_granularity =
			lim->discard_granularity ? lim->discard_granularity
						 : lim->logical_block_size;
		p->discard.max_discard_sectors = lim->max_discard_sectors;
		p->discard.max_write_zeroes_sectors =
			lim->max_write_zeroes_sectors;
		p->discard.max_discard_segments =
			lim->max_discard_sectors ? 1 : 0;
	}
}

/* The char device appears (devtmpfs, udev) once ADD_DEV returned. */
static int open_cdev(struct ublk_dev *d)
{
	char path[64];
	int i;

	snprintf(path, sizeof(path), "/dev/ublkc%u", d->info.dev_id);
	for (i = 0; i < 500; i++) {
		d->cdev_fd = open(path, O_RDWR | O_CLOEXEC);
		if (d->cdev_fd >= 0)
			return 0;
		if (errno != ENOENT)
			break;
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	ublk_err("%s: %s", path, strerror(errno));
	return -1;
}

/*
 * The kernel's own scheduler would reorder what the model's scheduler is
 * there to order, and hide the model's depth: none, so that the device
 * the kernel sees is the emulated one.
 */
static void scheduler_none(struct ublk_dev *d)
{
	char path[96];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/block/ublkb%u/queue/scheduler",
		 d->info.dev_id);
	f = fopen(path, "w");
	if (!f || fputs("none", f) < 0 || fclose(f)) {
		ublk_err("%s: cannot set none: %s", path, strerror(errno));
		if (f)
			fclose(f);
	}
}

/*
 * What names an export across restarts, kept by the kernel in the
 * device's ublksrv_flags: its name, model, size and block size.
 */
static uint64_t export_key(const struct ublk_dev *d)
{
	const struct gendisk *disk = d->exp->disk;
	uint64_t h = 0xcbf29ce484222325ULL, v[2];
	const char *strs[2] = {d->exp->name,
			       d->exp->model ? d->exp->model : ""};
	unsigned int i;
	size_t k;

	for (i = 0; i < 2; i++)
		for (k = 0; k <= strlen(strs[i]); k++)
			h = (h ^ (uint8_t)strs[i][k]) * 0x100000001b3ULL;
	v[0] = get_capacity(disk);
	v[1] = disk->queue->limits.logical_block_size;
	for (i = 0; i < 2; i++)
		for (k = 0; k < 8; k++)
			h = (h ^ (uint8_t)(v[i] >> (8 * k))) * 0x100000001b3ULL;
	return h;
}

/*
 * A device of this export whose server died (kill -9, a crash): its
 * number, or -1.  The kernel keeps it, its requests held, until a server
 * recovers it (UBLK_F_USER_RECOVERY_REISSUE).
 */
static int find_orphan(struct ublk_ctrl *c, struct ublk_dev *d)
{
	uint64_t key = export_key(d);
	struct dirent *de;
	DIR *dir;
	int found = -1;

	dir = opendir("/sys/class/ublk-char");
	if (!dir)
		return -1;
	while (found < 0 && (de = readdir(dir))) {
		struct ublksrv_ctrl_dev_info info;
		struct ublksrv_ctrl_cmd cmd = {.queue_id = UINT16_MAX};
		unsigned int id;
		char tail;

		if (sscanf(de->d_name, "ublkc%u%c", &id, &tail) != 1)
			continue;
		memset(&info, 0, sizeof(info));
		cmd.dev_id = id;
		cmd.addr = (uint64_t)(uintptr_t)&info;
		cmd.len = sizeof(info);
		if (ctrl_cmd(c, UBLK_U_CMD_GET_DEV_INFO, &cmd) < 0)
			continue;
		if (info.ublksrv_flags != key ||
		    !(info.flags & UBLK_F_USER_RECOVERY) ||
		    info.state == UBLK_S_DEV_DEAD)
			continue;
		if (info.ublksrv_pid > 0 && kill(info.ublksrv_pid, 0) == 0)
			continue; /* its server lives */
		d->info = info;
		found = (int)id;
	}
	closedir(dir);
	return found;
}

/*
 * Take over an orphan: START_USER_RECOVERY once the kernel has quiesced
 * it (the dead server's ring may take a moment to go), fetch every tag,
 * END_USER_RECOVERY, and the requests it held are issued again.
 */
static int recover(struct ublk_ctrl *c, struct ublk_dev *d)
{
	struct ublksrv_ctrl_cmd cmd = {.dev_id = d->info.dev_id,
				       .queue_id = UINT16_MAX};
	unsigned int i;
	int r, tries;

	for (tries = 0; tries < 1000; tries++) {
		r = ctrl_cmd(c, UBLK_U_CMD_START_USER_RECOVERY, &cmd);
		if (r != -EBUSY)
			break;
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	if (r < 0) {
		ublk_err("%s: START_USER_RECOVERY of ublkb%u: %s", d->exp->name,
			 d->info.dev_id, strerror(-r));
		return -1;
	}
	d->added = true;
	if (open_cdev(d))
		return -1;
	d->queues = calloc(d->info.nr_hw_queues, sizeof(*d->queues));
	if (!d->queues) {
		ublk_err("out of memory");
		return -1;
	}
	for (i = 0; i < d->info.nr_hw_queues; i++) {
		if (ublk_queue_start(d, i))
			return -1;
		d->nr_queues++;
	}
	cmd.data[0] = (uint64_t)getpid();
	r = ctrl_cmd(c, UBLK_U_CMD_END_USER_RECOVERY, &cmd);
	if (r < 0) {
		ublk_err("%s: END_USER_RECOVERY of ublkb%u: %s", d->exp->name,
			 d->info.dev_id, strerror(-r));
		return -1;
	}
	d->started = true;
	d->recovered = true;
	ublk_info("%s: ublkb%u recovered from a server that died", d->exp->name,
		  d->info.dev_id);
	return 0;
}

int ublk_dev_start(struct ublk_ctrl *c, struct ublk_dev *d)
{
	struct gendisk *disk = d->exp->disk;
	struct mq_queue *q = disk->queue;
	struct ublksrv_ctrl_cmd cmd = {.dev_id = UINT32_MAX,
				       .queue_id = UINT16_MAX};
	unsigned int depth, i, max_bytes;
	int r;

	d->ctrl = c;
	d->cdev_fd = -1;
	pthread_mutex_init(&d->append_lock, NULL);
	if (blk_queue_is_zoned(&q->limits)) {
		if (!(c->features & UBLK_F_ZONED)) {
			ublk_err("%s: a zoned export, and this kernel's ublk "
				 "lacks UBLK_F_ZONED (Linux 6.6)",
				 d->exp->name);
			return -1;
		}
		if (get_capacity(disk) % q->limits.chunk_sectors) {
			/* ublk counts whole zones: a short last one would
			 * be lost */
			ublk_err("%s: the capacity is not a whole number of "
				 "zones, which ublk requires",
				 d->exp->name);
			return -1;
		}
		d->nr_zones = (unsigned int)(get_capacity(disk) /
					     q->limits.chunk_sectors);
		d->append_next = calloc(d->nr_zones, sizeof(uint64_t));
		d->append_flight = calloc(d->nr_zones, sizeof(unsigned int));
		if (!d->append_next || !d->append_flight) {
			ublk_err("out of memory");
			return -1;
		}
	}
	depth = q->tag_set->queue_depth - q->tag_set->reserved_tags;
	if (!depth)
		depth = 1;
	if (depth > UBLK_MAX_QUEUE_DEPTH)
		depth = UBLK_MAX_QUEUE_DEPTH;
	max_bytes = q->limits.max_sectors << 9;
	if (!max_bytes || max_bytes > UBLK_MAX_IO_BYTES)
		max_bytes = UBLK_MAX_IO_BYTES;
	if (max_bytes < 4096)
		max_bytes = 4096;
	max_bytes &= ~4095u;

	if ((c->features & UBLK_F_USER_RECOVERY_REISSUE) &&
	    find_orphan(c, d) >= 0)
		return recover(c, d);

	memset(&d->info, 0, sizeof(d->info));
	d->info.nr_hw_queues = (uint16_t)q->nr_hw_queues;
	d->info.queue_depth = (uint16_t)depth;
	d->info.max_io_buf_bytes = max_bytes;
	d->info.dev_id = UINT32_MAX;
	d->info.flags = UBLK_F_USER_COPY | UBLK_F_CMD_IOCTL_ENCODE;
	if (d->nr_zones)
		d->info.flags |= UBLK_F_ZONED;
	/*
	 * Reissue: when the server dies the kernel holds the device and its
	 * requests; the next server with this export takes it over.
	 */
	if (c->features & UBLK_F_USER_RECOVERY_REISSUE)
		d->info.flags |=
			UBLK_F_USER_RECOVERY | UBLK_F_USER_RECOVERY_REISSUE;
	d->info.ublksrv_flags = export_key(d);
	cmd.addr = (uint64_t)(uintptr_t)&d->info;
	cmd.len = sizeof(d->info);
	r = ctrl_cmd(c, UBLK_U_CMD_ADD_DEV, &cmd);
	if (r < 0) {
		ublk_err("%s: ADD_DEV: %s", d->exp->name, strerror(-r));
		return -1;
	}
	d->added = true;
	if (d->info.nr_hw_queues != q->nr_hw_queues)
		ublk_info("%s: the kernel gives %u queues of the model's %u "
			  "(it has that many CPUs)",
			  d->exp->name, d->info.nr_hw_queues, q->nr_hw_queues);

	fill_params(d);
	cmd = (struct ublksrv_ctrl_cmd){.dev_id = d->info.dev_id,
					.queue_id = UINT16_MAX,
					.addr = (uint64_t)(uintptr_t)&d->params,
					.len = sizeof(d->params)};
	r = ctrl_cmd(c, UBLK_U_CMD_SET_PARAMS, &cmd);
	if (r < 0) {
		ublk_err("%s: SET_PARAMS: %s", d->exp->name, strerror(-r));
		return -1;
	}
	if (open_cdev(d))
		return -1;

	d->queues = calloc(d->info.nr_hw_queues, sizeof(*d->queues));
	if (!d->queues) {
		ublk_err("out of memory");
		return -1;
	}
	for (i = 0; i < d->info.nr_hw_queues; i++) {
		if (ublk_queue_start(d, i))
			return -1;
		d->nr_queues++;
	}

	cmd = (struct ublksrv_ctrl_cmd){.dev_id = d->info.dev_id,
					.queue_id = UINT16_MAX};
	cmd.data[0] = (uint64_t)getpid();
	r = ctrl_cmd(c, UBLK_U_CMD_START_DEV, &cmd);
	if (r < 0) {
		ublk_err("%s: START_DEV: %s", d->exp->name, strerror(-r));
		return -1;
	}
	d->started = true;
	scheduler_none(d);
	return 0;
}

void ublk_dev_stop(struct ublk_dev *d)
{
	struct ublksrv_ctrl_cmd cmd = {.dev_id = d->info.dev_id,
				       .queue_id = UINT16_MAX};
	unsigned int i;
	int r;

	if (d->added) {
		/* Deletes the disk, which drains it through our threads. */
		r = ctrl_cmd(d->ctrl, UBLK_U_CMD_STOP_DEV, &cmd);
		if (r < 0)
			ublk_err("%s: STOP_DEV: %s", d->exp->name,
				 strerror(-r));
	}
	for (i = 0; i < d->nr_queues; i++)
		ublk_queue_stop(&d->queues[i]);
	for (i = 0; i < d->nr_queues; i++)
		ublk_queue_join(&d->queues[i]);
	free(d->queues);
	d->queues = NULL;
	d->nr_queues = 0;
	if (d->cdev_fd >= 0)
		close(d->cdev_fd);
	d->cdev_fd = -1;
	if (d->added) {
		r = ctrl_cmd(d->ctrl, UBLK_U_CMD_DEL_DEV, &cmd);
		if (r < 0)
			ublk_err("%s: DEL_DEV: %s", d->exp->name, strerror(-r));
		d->added = false;
	}
	free(d->append_next);
	free(d->append_flight);
	d->append_next = NULL;
	d->append_flight = NULL;
	pthread_mutex_destroy(&d->append_lock);
}
