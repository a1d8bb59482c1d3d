// SPDX-License-Identifier: GPL-2.0
/*
 * mqblk-ublk [OPTIONS] DEVICE [KEY=VALUE...]
 * mqblk-ublk [OPTIONS] -c FILE
 *
 * Every export of the table (the same keys and INI file as mqblkd) becomes
 * a ublk device, /dev/ublkbN, until SIGTERM or SIGINT: then each device is
 * stopped (the kernel drains it through our queues), deleted, and the
 * models are synced.  See docs/ublk.md.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mqblk-ublk.h"
#include "server/ctl/ctl.h"
#include "server/mq/log.h"

#ifndef MQBLK_VERSION
#define MQBLK_VERSION "0.1.0"
#endif

static int log_verbose; /* set once, before any thread starts */

void ublk_log_init(int verbose)
{
	log_verbose = verbose;
	/* The core's own lines: its stderr sink, at that sink's level. */
	mq_log_set_sink(NULL);
}

void ublk_log(int level, const char *fmt, ...)
{
	char msg[1024], safe[4 * sizeof(msg)];
	va_list ap;

	if (level > log_verbose + 1)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mq_escape(safe, sizeof(safe), msg, strlen(msg));
	fprintf(stderr, "mqblk-ublk: %s\n", safe);
}

struct ublk_config {
	struct ublk_opts opts;
	const char *config_file;
	const char *control;
	char **args;
	int nr_args;
};

static const char usage[] =
	"Usage: mqblk-ublk [OPTIONS] DEVICE [KEY=VALUE...]\n"
	"       mqblk-ublk [OPTIONS] -c FILE\n"
	"Serve emulated block devices as local /dev/ublkbN devices through\n"
	"the Linux ublk driver (Linux 6.5 or later, run as root).  The keys\n"
	"and the INI file are mqblkd's; mqblkd --help lists the models.\n"
	"\n"
	"  -c, --config FILE      one INI section per export\n"
	"  -t, --threads N        software queues of each device (default: "
	"CPUs)\n"
	"  -r, --readonly         every device read-only\n"
	"      --control PATH     serve the attribute tree on a Unix socket\n"
	"                         (mqblkctl -s PATH)\n"
	"  -v, --verbose          more log lines (twice: per request errors)\n"
	"  -h, --help             this text\n"
	"  -V, --version          the version\n";

enum { OPT_CONTROL = 256 };

static const struct option long_opts[] = {
	{"config", required_argument, NULL, 'c'},
	{"threads", required_argument, NULL, 't'},
	{"readonly", no_argument, NULL, 'r'},
	{"control", required_argument, NULL, OPT_CONTROL},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static int parse_args(int argc, char **argv, struct ublk_config *cfg)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char *end;
	int c;

	memset(cfg, 0, sizeof(*cfg));
	cfg->opts.nr_ctx = cpus > 0 ? (unsigned int)cpus : 1;
	if (cfg->opts.nr_ctx > 256)
		cfg->opts.nr_ctx = 256;
	while ((c = getopt_long(argc, argv, "+c:t:rvhV", long_opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'c':
			cfg->config_file = optarg;
			break;
		case 't': {
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 ||
			    v > 256) {
				fprintf(stderr,
					"mqblk-ublk: --threads %s: a number "
					"from 1 to 256\n",
					optarg);
				return -1;
			}
			cfg->opts.nr_ctx = (unsigned int)v;
			break;
		}
		case 'r':
			cfg->opts.readonly = true;
			break;
		case OPT_CONTROL:
			cfg->control = optarg;
			break;
		case 'v':
			cfg->opts.verbose++;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case 'V':
			printf("mqblk-ublk %s\n", MQBLK_VERSION);
			exit(0);
		default:
			fputs(usage, stderr);
			return -1;
		}
	}
	cfg->args = argv + optind;
	cfg->nr_args = argc - optind;
	if (cfg->config_file && cfg->nr_args) {
		fprintf(stderr, "mqblk-ublk: -c FILE takes no DEVICE\n");
		return -1;
	}
	if (!cfg->config_file && !cfg->nr_args) {
		fprintf(stderr, "mqblk-ublk: a DEVICE or -c FILE is needed "
				"(mqblk-ublk --help)\n");
		return -1;
	}
	return 0;
}

static void exports_err(const char *line)
{
	char safe[4 * (MQ_EXPORT_NAME_MAX + 1024)];

	mq_escape(safe, sizeof(safe), line, strlen(line));
	fprintf(stderr, "mqblk-ublk: %s\n", safe);
}

static void exports_info(const char *line)
{
	ublk_info("%s", line);
}

static struct ctl_server *start_control(const struct ublk_config *cfg,
					const struct mq_exports *exports)
{
	struct ctl_opts o = {0};
	struct ctl_export *ex;
	struct ctl_server *ctl;
	struct mq_err e;
	unsigned int n;

	ex = mq_export_devs_ctl(exports->devs, exports->nr_devs, &n);
	if (!ex) {
		fprintf(stderr, "mqblk-ublk: out of memory\n");
		return NULL;
	}
	ctl = ctl_server_start(cfg->control, &o, ex, n, &e);
	if (!ctl)
		fprintf(stderr, "mqblk-ublk: %s\n", e.msg);
	free(ex);
	return ctl;
}

int main(int argc, char **argv)
{
	struct ublk_config cfg;
	struct mq_exports_cfg ecfg;
	struct mq_exports exports;
	struct ctl_server *ctl = NULL;
	struct ublk_ctrl ctrl;
	struct ublk_dev *devs = NULL;
	unsigned int i, nr_devs = 0;
	sigset_t sigs;
	int sig, r = 1;

	if (parse_args(argc, argv, &cfg))
		return 1;
	ublk_log_init(cfg.opts.verbose);
	/* Every thread started from here on leaves the signals to sigwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (ublk_ctrl_open(&ctrl))
		return 1;
	ecfg = (struct mq_exports_cfg){
		.config_file = cfg.config_file,
		.args = cfg.args,
		.nr_args = cfg.nr_args,
		.readonly = cfg.opts.readonly,
		.nr_ctx = cfg.opts.nr_ctx,
		.err = exports_err,
		.info = exports_info,
	};
	if (mq_exports_build(&ecfg, &exports))
		goto out_ctrl;
	if (cfg.control) {
		ctl = start_control(&cfg, &exports);
		if (!ctl)
			goto out_exports;
	}
	devs = calloc(exports.nr, sizeof(*devs));
	if (!devs) {
		fprintf(stderr, "mqblk-ublk: out of memory\n");
		goto out_exports;
	}
	for (i = 0; i < exports.nr; i++) {
		struct ublk_dev *d = &devs[i];

		d->exp = exports.v[i];
		d->opts = &cfg.opts;
		nr_devs++;
		if (ublk_dev_start(&ctrl, d))
			goto out_devs;
		printf("%s: /dev/ublkb%u: %s\n", d->exp->name, d->info.dev_id,
		       d->exp->description);
	}
	fflush(stdout);

	do {
		if (sigwait(&sigs, &sig))
			break;
	} while (sig == SIGHUP);
	ublk_info("signal %d: stopping", sig);
	r = 0;
out_devs:
	for (i = nr_devs; i-- > 0;)
		ublk_dev_stop(&devs[i]);
	free(devs);
	if (mq_exports_sync(&exports, exports_err))
		r = 1;
out_exports:
	ctl_server_stop(ctl);
	mq_exports_destroy(&exports);
out_ctrl:
	ublk_ctrl_close(&ctrl);
	return r;
}
