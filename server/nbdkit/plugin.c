// SPDX-License-Identifier: GPL-2.0
/*
 * nbdkit-mqblk-plugin: serve mqblk's device models through nbdkit.
 *
 *   nbdkit mqblk device=ram size=1G
 *   nbdkit ./build/nbdkit-mqblk-plugin.so null memory_backed=1 size=64M
 *
 * Every KEY=VALUE goes to the device layer unread; the device model takes
 * what it knows and refuses the rest.  Each gendisk the device offers is
 * an export.  What the plugin advertises (sizes, flags, description) is
 * read from the gendisk and its queue limits, so it is the model's truth.
 */
#include <errno.h>
#include <grp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"
#include "server/ctl/ctl.h"
#include "server/mq/log.h"

/* The build may pass the project's version; this is the fallback. */
#ifndef MQBLK_VERSION
#define MQBLK_VERSION "0.1.0"
#endif

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/*
 * Everything the plugin keeps between callbacks.  params is filled by
 * config; dev is made in after_fork (its threads must be started after
 * nbdkit forks) and torn down in cleanup.  help is built when the .so is
 * loaded.  Nothing here changes while connections are served, but for
 * the counter that numbers them.
 */
static struct {
	struct mq_params *params;
	struct mq_device *dev;
	char *help;
	char *control; /* control=PATH: the control socket, absolute */
	struct ctl_opts ctl_opts; /* control-group=, control-timeout=, ... */
	char *trace_dir;	  /* trace-dir=DIR, absolute */
	char *metrics;		  /* metrics=[ADDR:]PORT: HTTP */
	struct ctl_server *ctl;	  /* serving control, made with dev */
	int ctl_fd; /* the control socket, listening from get_ready */
	atomic_uint_fast64_t nr_clients; /* handles opened: the next id - 1 */
} mqblk;

static struct nbdkit_plugin plugin;

/*
 * nbdkit copies the plugin struct before calling .load, so config_help
 * has to be in place by the time the library's constructors have run.
 */
__attribute__((constructor)) static void mqblk_help_init(void)
{
	mqblk.help = mqblk_build_help();
	if (mqblk.help)
		plugin.config_help = mqblk.help;
}

__attribute__((destructor)) static void mqblk_help_exit(void)
{
	free(mqblk.help);
}

static void mqblk_log_sink(enum mq_log_level level, const char *msg)
{
	if (level <= MQ_LOG_WARN)
		nbdkit_error("%s", msg);
	else
		nbdkit_debug("%s", msg);
}

/*
 * The sink goes in before any device exists (config_complete makes a
 * trial one), so even the trial's log lines go through nbdkit.
 */
static void mqblk_load(void)
{
	mq_log_set_sink(mqblk_log_sink);
	mqblk.ctl_fd = -1;
}

static void mqblk_cleanup(void)
{
	ctl_server_stop(mqblk.ctl); /* its thread reads the device */
	mqblk.ctl = NULL;
	if (mqblk.ctl_fd >= 0) { /* listened, never served */
		close(mqblk.ctl_fd);
		unlink(mqblk.control);
		mqblk.ctl_fd = -1;
	}
	if (mqblk.dev) {
		mq_device_destroy(mqblk.dev);
		mqblk.dev = NULL;
	}
}

static void mqblk_unload(void)
{
	mqblk_cleanup();
	mq_params_free(mqblk.params);
	mqblk.params = NULL;
	free(mqblk.control);
	mqblk.control = NULL;
	free(mqblk.trace_dir);
	mqblk.trace_dir = NULL;
	free(mqblk.metrics);
	mqblk.metrics = NULL;
	mqblk.ctl_opts.http = NULL;
}

static int mqblk_config(const char *key, const char *value)
{
	struct mq_err e;

	/* The front end's own key: never seen by the device layer. */
	if (!strcmp(key, "control")) {
		free(mqblk.control);
		mqblk.control = nbdkit_absolute_path(value);
		return mqblk.control ? 0 : -1;
	}
	if (!strcmp(key, "metrics")) {
		free(mqblk.metrics);
		mqblk.metrics = strdup(value);
		mqblk.ctl_opts.http = mqblk.metrics;
		if (!mqblk.metrics)
			nbdkit_error("out of memory");
		return mqblk.metrics ? 0 : -1;
	}
	if (!strcmp(key, "trace-dir")) {
		free(mqblk.trace_dir);
		mqblk.trace_dir = nbdkit_realpath(value);
		mqblk.ctl_opts.trace_dir = mqblk.trace_dir;
		return mqblk.trace_dir ? 0 : -1;
	}
	if (!strcmp(key, "control-group")) {
		struct group *g = getgrnam(value);
		char *end;
		unsigned long v;

		errno = 0;
		v = g ? g->gr_gid : strtoul(value, &end, 10);
		if (!g && (errno || end == value || *end || v > 0x7fffffffUL)) {
			nbdkit_error("control-group=%s: no such group", value);
			return -1;
		}
		mqblk.ctl_opts.group = true;
		mqblk.ctl_opts.gid = (gid_t)v;
		return 0;
	}
	if (!strcmp(key, "control-timeout")) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(value, &end, 10);
		if (errno || end == value || *end || v < 1 || v > 86400 ||
		    strchr(value, '-')) {
			nbdkit_error("control-timeout=%s: expected 1..86400 "
				     "seconds",
				     value);
			return -1;
		}
		mqblk.ctl_opts.freeze_timeout_ms = (unsigned int)v * 1000;
		return 0;
	}
	if (!mqblk.params) {
		mqblk.params = mq_params_new();
		if (!mqblk.params) {
			nbdkit_error("out of memory");
			return -1;
		}
	}
	if (mq_params_set(mqblk.params, key, value, &e) == -1) {
		nbdkit_error("%s", e.msg);
		return -1;
	}
	return 0;
}

static int mqblk_create(struct mq_device **devp)
{
	struct mq_err e;

	if (mq_device_create(mqblk.params, MQ_DEFAULT_NR_CTX, devp, &e) == -1) {
		nbdkit_error("%s", e.msg);
		return -1;
	}
	if ((*devp)->nr_disks == 0) {
		nbdkit_error("%s: the device offers no disk",
			     (*devp)->driver->name);
		mq_device_destroy(*devp);
		*devp = NULL;
		return -1;
	}
	return 0;
}

/*
 * Check the whole configuration now, so that a bad key, size or path
 * stops start-up with one line instead of failing every connection.  The
 * trial device is destroyed at once: its threads must not cross the fork.
 */
static int mqblk_config_complete(void)
{
	struct mq_device *dev;

	if (!mqblk.params || !mq_params_has(mqblk.params, "device")) {
		char names[256];

		mq_driver_names(names, sizeof(names));
		nbdkit_error("device=NAME is required (known: %s)", names);
		return -1;
	}
	if (mqblk_create(&dev) == -1)
		return -1;
	mq_device_destroy(dev);
	return 0;
}

/*
 * The control socket listens before nbdkit forks (into the background,
 * or to start --run): a client started then waits in its backlog until
 * after_fork starts the thread that serves it.
 */
static int mqblk_get_ready(void)
{
	struct mq_err e;

	if (!mqblk.control)
		return 0;
	mqblk.ctl_fd = ctl_server_listen(mqblk.control, &mqblk.ctl_opts, &e);
	if (mqblk.ctl_fd < 0) {
		nbdkit_error("%s", e.msg);
		return -1;
	}
	return 0;
}

static int mqblk_after_fork(void)
{
	struct mq_err e;

	if (mqblk_create(&mqblk.dev) == -1)
		return -1;
	if (mqblk.control || mqblk.metrics) {
		struct ctl_export ex[MQ_MAX_DISKS + MQ_MAX_INTERNAL];
		unsigned int i, n = 0;

		/*
		 * The plugin's exports are named after their disks, and so
		 * are the device's queues that are no export.
		 */
		for (i = 0; i < mqblk.dev->nr_disks; i++)
			ex[n++] = (struct ctl_export){
				mqblk.dev->disks[i]->disk_name,
				mqblk.dev->disks[i], false,
				mqblk.dev->driver->name};
		for (i = 0; i < mqblk.dev->nr_internal; i++)
			ex[n++] = (struct ctl_export){
				mqblk.dev->internal[i]->disk_name,
				mqblk.dev->internal[i], true};
		mqblk.ctl = ctl_server_start_on(mqblk.ctl_fd, mqblk.control,
						&mqblk.ctl_opts, ex, n, &e);
		mqblk.ctl_fd = -1; /* taken over, or closed */
		if (!mqblk.ctl) {
			nbdkit_error("%s", e.msg);
			return -1;
		}
	}
	return 0;
}

static void mqblk_dump_plugin(void)
{
	char names[256];

	mq_driver_names(names, sizeof(names));
	printf("mqblk_devices=%s\n", names);
}

static int mqblk_list_exports(int readonly, int is_tls,
			      struct nbdkit_exports *exports)
{
	char desc[512];
	unsigned int i;

	for (i = 0; i < mqblk.dev->nr_disks; i++) {
		struct gendisk *disk = mqblk.dev->disks[i];

		mq_disk_describe(disk, desc, sizeof(desc));
		if (nbdkit_add_export(exports, disk->disk_name, desc) == -1)
			return -1;
	}
	return 0;
}

static const char *mqblk_default_export(int readonly, int is_tls)
{
	return mqblk.dev->disks[0]->disk_name;
}

static void mqblk_export_names(char *buf, size_t len)
{
	size_t off = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < mqblk.dev->nr_disks && off < len; i++) {
		int n = snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
				 mqblk.dev->disks[i]->disk_name);
		if (n < 0)
			break;
		off += n;
	}
}

static void *mqblk_open(int readonly)
{
	const char *name = nbdkit_export_name();
	struct mqblk_handle *h;
	struct gendisk *disk;

	if (!name || !*name)
		disk = mqblk.dev->disks[0];
	else
		disk = mq_device_find_disk(mqblk.dev, name);
	if (!disk) {
		char names[512];

		mqblk_export_names(names, sizeof(names));
		nbdkit_error("unknown export '%s' (exports: %s)", name, names);
		return NULL;
	}

	h = malloc(sizeof(*h));
	if (!h) {
		nbdkit_error("out of memory");
		return NULL;
	}
	h->disk = disk;
	h->readonly = readonly;
	mqblk_client_init(h, atomic_fetch_add(&mqblk.nr_clients, 1) + 1);
	/* nbdkit ends a handle only once its requests are done. */
	atomic_init(&h->client.gone, false);
	return h;
}

static void mqblk_close(void *handle)
{
	free(handle);
}

static const char *mqblk_export_description(void *handle)
{
	struct mqblk_handle *h = handle;
	char desc[512];

	mq_disk_describe(h->disk, desc, sizeof(desc));
	return nbdkit_strdup_intern(desc);
}

static int64_t mqblk_get_size(void *handle)
{
	struct mqblk_handle *h = handle;

	return (int64_t)(get_capacity(h->disk) << SECTOR_SHIFT);
}

static bool is_power_of_2(unsigned int n)
{
	return n && !(n & (n - 1));
}

/*
 * minimum: 1.  Misaligned requests are served by read-modify-write in the
 * device layer (backends/bdev.h), and nbdkit cannot tell us whether a
 * client asked for the block size, so every client may send them.
 * preferred: io_opt if the model sets one, else the physical block, at
 * least the logical block: what avoids the read-modify-write.  nbdkit
 * wants a power of two of at least 512.  maximum: nbdkit's own limit on a
 * request, 64 MiB; the core splits what the queue limits do not allow.
 */
#define MQBLK_MAX_REQUEST (64u << 20)

static int mqblk_block_size(void *handle, uint32_t *minimum,
			    uint32_t *preferred, uint32_t *maximum)
{
	struct mqblk_handle *h = handle;
	const struct queue_limits *lim = &h->disk->queue->limits;
	unsigned int pref = lim->physical_block_size;

	if (lim->io_opt > pref && is_power_of_2(lim->io_opt) &&
	    lim->io_opt <= 32 * 1024 * 1024)
		pref = lim->io_opt;
	if (!is_power_of_2(pref) || pref < lim->logical_block_size)
		pref = lim->logical_block_size;
	if (pref < 512)
		pref = 512;

	*minimum = 1;
	*preferred = pref;
	*maximum = MQBLK_MAX_REQUEST;
	return 0;
}

static int mqblk_is_rotational(void *handle)
{
	struct mqblk_handle *h = handle;

	return h->disk->queue->limits.rotational;
}

static int mqblk_can_write(void *handle)
{
	struct mqblk_handle *h = handle;

	return !h->readonly && !h->disk->read_only;
}

/*
 * NBD FLUSH only means something with a volatile write cache, but nbdkit
 * answers EINVAL to a flush when can_flush is false, and clients send
 * one anyway.  A FLUSH on a queue without write_cache is a no-op the core
 * completes at once, so flush is always accepted.
 */
static int mqblk_can_flush(void *handle)
{
	return 1;
}

/*
 * The core emulates FUA with a post-flush where the device has a write
 * cache but no native FUA, and drops it where there is no write cache.
 */
static int mqblk_can_fua(void *handle)
{
	return NBDKIT_FUA_NATIVE;
}

static int mqblk_can_trim(void *handle)
{
	struct mqblk_handle *h = handle;

	return h->disk->queue->limits.max_discard_sectors > 0;
}

/*
 * For a plugin this is a boolean: true sends zero requests to .zero,
 * false has nbdkit write zeroes with .pwrite.  Either way clients see
 * write-zeroes support.
 */
static int mqblk_can_zero(void *handle)
{
	struct mqblk_handle *h = handle;

	return h->disk->queue->limits.max_write_zeroes_sectors > 0;
}

static int mqblk_can_fast_zero(void *handle)
{
	struct mqblk_handle *h = handle;

	return !!(h->disk->features & DISK_FAST_ZERO);
}

static int mqblk_can_multi_conn(void *handle)
{
	struct mqblk_handle *h = handle;

	return !!(h->disk->features & DISK_MULTI_CONN);
}

static int mqblk_can_extents(void *handle)
{
	struct mqblk_handle *h = handle;

	return h->disk->fops && h->disk->fops->extents;
}

static int mqblk_can_cache(void *handle)
{
	return NBDKIT_CACHE_NONE;
}

/*
 * nbdkit's parallel model hands a connection's requests to several
 * threads, which may submit them in any order; a zone's writes must
 * reach the core in the order the client sent them, so a zoned device
 * is served one request at a time per connection (mqblkd keeps the
 * order without that).
 */
static int mqblk_thread_model(void)
{
	if (mqblk.params && mq_device_params_zoned(mqblk.params))
		return NBDKIT_THREAD_MODEL_SERIALIZE_REQUESTS;
	return THREAD_MODEL;
}

static struct nbdkit_plugin plugin = {
	.name = "mqblk",
	.longname = "mqblk emulated block devices",
	.version = MQBLK_VERSION,
	.description = "Serves mqblk device models (null, ram, file, ...) "
		       "through a userspace blk-mq request core",
	.load = mqblk_load,
	.unload = mqblk_unload,
	.config = mqblk_config,
	.config_complete = mqblk_config_complete,
	.config_help = "device=NAME [KEY=VALUE ...]",
	.magic_config_key = "device",
	.dump_plugin = mqblk_dump_plugin,
	.get_ready = mqblk_get_ready,
	.after_fork = mqblk_after_fork,
	.thread_model = mqblk_thread_model,
	.cleanup = mqblk_cleanup,
	.list_exports = mqblk_list_exports,
	.default_export = mqblk_default_export,
	.open = mqblk_open,
	.close = mqblk_close,
	.export_description = mqblk_export_description,
	.get_size = mqblk_get_size,
	.block_size = mqblk_block_size,
	.is_rotational = mqblk_is_rotational,
	.can_write = mqblk_can_write,
	.can_flush = mqblk_can_flush,
	.can_fua = mqblk_can_fua,
	.can_trim = mqblk_can_trim,
	.can_zero = mqblk_can_zero,
	.can_fast_zero = mqblk_can_fast_zero,
	.can_multi_conn = mqblk_can_multi_conn,
	.can_extents = mqblk_can_extents,
	.can_cache = mqblk_can_cache,
	.pread = mqblk_pread,
	.pwrite = mqblk_pwrite,
	.flush = mqblk_flush,
	.trim = mqblk_trim,
	.zero = mqblk_zero,
	.extents = mqblk_extents,
};

NBDKIT_REGISTER_PLUGIN(plugin)
