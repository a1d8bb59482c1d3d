// SPDX-License-Identifier: GPL-2.0
/*
 * mqblkd's export table: server/exports builds it from the keys, the INI
 * file or the demo rack, as it does for every front end; here mqblkd's
 * options become its configuration and its lines mqblkd's.
 */
#include <stdio.h>

#include "mqblkd.h"

static void exports_err(const char *line)
{
	fprintf(stderr, "mqblkd: %s\n", line);
}

static void exports_info(const char *line)
{
	log_info("%s", line);
}

static void exports_log_err(const char *line)
{
	log_err("%s", line);
}

int nbd_exports_build(const struct mqblkd_config *cfg, struct mq_exports *ex)
{
	const struct mq_exports_cfg ecfg = {
		.config_file = cfg->config_file,
		.args = cfg->args,
		.nr_args = cfg->nr_args,
		.readonly = cfg->readonly,
		.nr_ctx = cfg->threads,
		.err = exports_err,
		.info = exports_info,
	};

	return mq_exports_build(&ecfg, ex);
}

int nbd_exports_sync(struct mq_exports *ex)
{
	return mq_exports_sync(ex, exports_log_err);
}
