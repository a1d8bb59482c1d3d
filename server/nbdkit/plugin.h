/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The nbdkit front end: what its files share.  plugin.c owns the device
 * and the nbdkit callbacks for the control path; io.c turns NBD commands
 * into bios; help.c builds --help from the driver registry.
 */
#ifndef MQBLK_NBDKIT_PLUGIN_H
#define MQBLK_NBDKIT_PLUGIN_H

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <stdbool.h>
#include <stdint.h>

#include "backends/device.h"

/*
 * One per open (nbdkit opens and closes a handle per OPT_INFO and per
 * OPT_GO, so a connection may have several over its life, one at a time).
 */
struct mqblk_handle {
	struct gendisk *disk;
	bool readonly;
	struct mq_client client; /* on every bio: BFQ's "process" */
};

/* client.c: fill h->client for the connection calling .open; id is new. */
void mqblk_client_init(struct mqblk_handle *h, uint64_t id);

/* io.c */
int mqblk_pread(void *handle, void *buf, uint32_t count, uint64_t offset,
		uint32_t flags);
int mqblk_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
		 uint32_t flags);
int mqblk_flush(void *handle, uint32_t flags);
int mqblk_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags);
int mqblk_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags);
int mqblk_extents(void *handle, uint32_t count, uint64_t offset, uint32_t flags,
		  struct nbdkit_extents *extents);

/* help.c: the config_help text, or NULL if out of memory.  Free it. */
char *mqblk_build_help(void);

#endif
