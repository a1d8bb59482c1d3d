// SPDX-License-Identifier: GPL-2.0
/*
 * mqblkd [OPTIONS] DEVICE [KEY=VALUE...]
 * mqblkd [OPTIONS] -c FILE
 * mqblkd [OPTIONS] [--demo]
 *
 * The command line, the configuration, and start-up: daemonize (the
 * parent exits once the child serves, with the child's status), make
 * the devices, TLS and listeners, then serve until SIGTERM or SIGINT;
 * SIGHUP re-reads -c FILE.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mqblkd.h"
#include "server/ctl/ctl.h"
#include "tls/tls.h"

#ifndef MQBLK_VERSION
#define MQBLK_VERSION "0.1.0"
#endif

enum {
	OPT_PIDFILE = 256,
	OPT_CONTROL,
	OPT_MAX_CONN,
	OPT_HS_TIMEOUT,
	OPT_TLS,
	OPT_TLS_CERTS,
	OPT_TLS_PSK,
	OPT_TLS_VERIFY,
	OPT_DEMO,
	OPT_POLL_US,
	OPT_CONTROL_GROUP,
	OPT_CONTROL_TIMEOUT,
	OPT_TRACE_DIR,
	OPT_METRICS,
};

static const struct option long_opts[] = {
	{"port", required_argument, NULL, 'p'},
	{"bind", required_argument, NULL, 'b'},
	{"unix", required_argument, NULL, 'U'},
	{"foreground", no_argument, NULL, 'f'},
	{"pidfile", required_argument, NULL, OPT_PIDFILE},
	{"threads", required_argument, NULL, 't'},
	{"poll-us", required_argument, NULL, OPT_POLL_US},
	{"control", required_argument, NULL, OPT_CONTROL},
	{"control-group", required_argument, NULL, OPT_CONTROL_GROUP},
	{"control-timeout", required_argument, NULL, OPT_CONTROL_TIMEOUT},
	{"trace-dir", required_argument, NULL, OPT_TRACE_DIR},
	{"metrics", required_argument, NULL, OPT_METRICS},
	{"readonly", no_argument, NULL, 'r'},
	{"read-only", no_argument, NULL, 'r'},
	{"max-connections", required_argument, NULL, OPT_MAX_CONN},
	{"handshake-timeout", required_argument, NULL, OPT_HS_TIMEOUT},
	{"tls", required_argument, NULL, OPT_TLS},
	{"tls-certificates", required_argument, NULL, OPT_TLS_CERTS},
	{"tls-psk", required_argument, NULL, OPT_TLS_PSK},
	{"tls-verify-peer", no_argument, NULL, OPT_TLS_VERIFY},
	{"config", required_argument, NULL, 'c'},
	{"demo", no_argument, NULL, OPT_DEMO},
	{"user", required_argument, NULL, 'u'},
	{"group", required_argument, NULL, 'g'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static const char usage_text[] =
	"Usage: mqblkd [OPTIONS] DEVICE [KEY=VALUE...]\n"
	"       mqblkd [OPTIONS] -c FILE\n"
	"       mqblkd [OPTIONS] [--demo]\n"
	"\n"
	"Serve mqblk's emulated block devices over NBD (fixed newstyle).\n"
	"Without DEVICE or -c, serve one small RAM-backed export per device\n"
	"model (--demo).\n"
	"\n"
	"  -p, --port PORT           TCP port (default 10809)\n"
	"  -b, --bind ADDR           TCP address (default: all)\n"
	"  -U, --unix SOCKET         Unix socket; TCP too if -p or -b is given\n"
	"  -f, --foreground          do not daemonize; log to stderr\n"
	"      --pidfile FILE        write the server's pid there\n"
	"  -t, --threads N           event loops (default: CPUs)\n"
	"      --poll-us N           busy-poll N microseconds after each "
	"request\n"
	"                            before sleeping, while polling finds "
	"work and\n"
	"                            no thread waits for a CPU (default 50, "
	"0: off)\n"
	"      --control PATH        control socket for mqblkctl (mode 0600:\n"
	"                            this uid and root only)\n"
	"      --control-group GROUP members of GROUP may use it too (0660)\n"
	"      --control-timeout S   a scheduler switch waits S seconds at "
	"most\n"
	"                            for the queue to drain (default 10)\n"
	"      --trace-dir DIR       'trace start' writes under DIR only "
	"(default:\n"
	"                            tracing is refused)\n"
	"      --metrics [ADDR:]PORT HTTP: /metrics (Prometheus), "
	"/api/v1/exports\n"
	"                            (JSON) and a status page at /; no ADDR: "
	"127.0.0.1\n"
	"  -r, --readonly            every export read-only\n"
	"      --max-connections N   default 100\n"
	"      --handshake-timeout S seconds to finish negotiating (default "
	"10)\n"
	"      --tls=off|on|require  STARTTLS refused, offered, or required\n"
	"      --tls-certificates=DIR  ca-cert.pem, server-cert.pem, "
	"server-key.pem\n"
	"      --tls-psk=FILE        psktool's user:hexkey lines\n"
	"      --tls-verify-peer     clients must authenticate: a certificate "
	"signed\n"
	"                            by ca-cert.pem, or a --tls-psk identity\n"
	"  -c, --config FILE         INI: [export] sections with device= and "
	"keys;\n"
	"                            SIGHUP reads it again (new sections "
	"added,\n"
	"                            removed ones drained, changed ones "
	"refused)\n"
	"      --demo                the built-in rack of devices\n"
	"  -u, --user USER           serve as USER once listening (the "
	"pidfile\n"
	"                            and sockets are made first); its group\n"
	"                            unless -g is given\n"
	"  -g, --group GROUP         serve as GROUP once listening\n"
	"  -v, --verbose             connections (-v), protocol detail (-vv)\n"
	"  -h, --help                this text, and every device's keys\n"
	"  -V, --version\n";

static void print_params(const struct mq_param_spec *spec, const char *indent)
{
	const char *group = NULL;

	for (; spec && spec->key; spec++) {
		int pad = 24 - (int)strlen(spec->key);

		if (spec->group && (!group || strcmp(group, spec->group)))
			printf("%s%s\n", indent, spec->group);
		group = spec->group;
		printf("%s%s=%-*s %s\n", indent, spec->key, pad > 0 ? pad : 1,
		       spec->def ? spec->def : "<...>",
		       spec->help ? spec->help : "");
	}
}

static void usage(void)
{
	const struct mq_driver *const *drv;

	fputs(usage_text, stdout);
	printf("\nKeys every device takes:\n");
	print_params(mq_common_params, "  ");
	printf("\nDevices (DEVICE or device=NAME) and their keys:\n");
	for (drv = mq_drivers; *drv; drv++) {
		printf("\n%s: %s\n", (*drv)->name, (*drv)->description);
		if ((*drv)->no_media)
			printf("  (media= is not taken: %s)\n",
			       (*drv)->no_media);
		print_params((*drv)->params, "  ");
	}
}

static int parse_uint(const char *opt, const char *s, unsigned int min,
		      unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max || strchr(s, '-')) {
		fprintf(stderr, "mqblkd: %s=%s: expected %u..%u\n", opt, s, min,
			max);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct mqblkd_config *cfg)
{
	bool tls_given = false;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int u;
	int c;

	*cfg = (struct mqblkd_config){
		.threads = cpus > 0 ? (unsigned int)cpus : 1,
		.max_connections = 100,
		.handshake_timeout = 10,
		.poll_us = 50,
		.control_timeout = 10,
	};
	if (cfg->threads > 256)
		cfg->threads = 256;
	while ((c = getopt_long(argc, argv, "+p:b:U:ft:rc:u:g:vhV", long_opts,
				NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_uint("--port", optarg, 0, 65535, &u))
				return -1;
			cfg->port = optarg;
			break;
		case 'b':
			cfg->bind_addr = optarg;
			break;
		case 'U':
			cfg->unix_path = optarg;
			break;
		case 'f':
			cfg->foreground = true;
			break;
		case OPT_PIDFILE:
			cfg->pidfile = optarg;
			break;
		case 't':
			if (parse_uint("--threads", optarg, 1, 256,
				       &cfg->threads))
				return -1;
			break;
		case OPT_POLL_US:
			if (parse_uint("--poll-us", optarg, 0, 1000000,
				       &cfg->poll_us))
				return -1;
			break;
		case OPT_CONTROL:
			cfg->control = optarg;
			break;
		case OPT_CONTROL_GROUP:
			cfg->control_group = optarg;
			break;
		case OPT_CONTROL_TIMEOUT:
			if (parse_uint("--control-timeout", optarg, 1, 86400,
				       &cfg->control_timeout))
				return -1;
			break;
		case OPT_TRACE_DIR:
			cfg->trace_dir = optarg;
			break;
		case OPT_METRICS:
			cfg->metrics = optarg;
			break;
		case 'r':
			cfg->readonly = true;
			break;
		case OPT_MAX_CONN:
			if (parse_uint("--max-connections", optarg, 1, 1000000,
				       &cfg->max_connections))
				return -1;
			break;
		case OPT_HS_TIMEOUT:
			if (parse_uint("--handshake-timeout", optarg, 0, 86400,
				       &u))
				return -1;
			cfg->handshake_timeout = u;
			break;
		case OPT_TLS:
			tls_given = true;
			if (!strcmp(optarg, "off")) {
				cfg->tls = TLS_MODE_OFF;
			} else if (!strcmp(optarg, "on")) {
				cfg->tls = TLS_MODE_ON;
			} else if (!strcmp(optarg, "require")) {
				cfg->tls = TLS_MODE_REQUIRE;
			} else {
				fprintf(stderr,
					"mqblkd: --tls=%s: expected "
					"off, on or require\n",
					optarg);
				return -1;
			}
			break;
		case OPT_TLS_CERTS:
			cfg->tls_certificates = optarg;
			break;
		case OPT_TLS_PSK:
			cfg->tls_psk = optarg;
			break;
		case OPT_TLS_VERIFY:
			cfg->tls_verify_peer = true;
			break;
		case 'c':
			cfg->config_file = optarg;
			break;
		case OPT_DEMO:
			cfg->demo = true;
			break;
		case 'u':
			cfg->user = optarg;
			break;
		case 'g':
			cfg->group = optarg;
			break;
		case 'v':
			cfg->verbose++;
			break;
		case 'h':
			usage();
			exit(0);
		case 'V':
			printf("mqblkd %s\n", MQBLK_VERSION);
			exit(0);
		default:
			fprintf(stderr, "Try 'mqblkd --help'.\n");
			return -1;
		}
	}
	cfg->args = argv + optind;
	cfg->nr_args = argc - optind;

	if (cfg->config_file && (cfg->nr_args || cfg->demo)) {
		fprintf(stderr, "mqblkd: -c FILE takes no DEVICE and no "
				"--demo\n");
		return -1;
	}
	if (cfg->demo && cfg->nr_args) {
		fprintf(stderr, "mqblkd: --demo takes no DEVICE\n");
		return -1;
	}
	/* Credentials alone mean --tls=on. */
	if (!tls_given && (cfg->tls_certificates || cfg->tls_psk))
		cfg->tls = TLS_MODE_ON;
	if (cfg->tls != TLS_MODE_OFF && !cfg->tls_certificates &&
	    !cfg->tls_psk) {
		fprintf(stderr,
			"mqblkd: --tls=%s needs --tls-certificates "
			"or --tls-psk\n",
			cfg->tls == TLS_MODE_ON ? "on" : "require");
		return -1;
	}
	if (cfg->tls_verify_peer && !cfg->tls_certificates) {
		fprintf(stderr, "mqblkd: --tls-verify-peer needs "
				"--tls-certificates\n");
		return -1;
	}
	return 0;
}

/*
 * Fork; the parent waits until the child says it serves (one byte on
 * the pipe) and exits 0, or exits 1 when the pipe closes without it.
 */
static int daemonize(void)
{
	int p[2];
	pid_t pid;
	char b;

	if (pipe2(p, O_CLOEXEC)) {
		perror("mqblkd: pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("mqblkd: fork");
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		exit(read(p[0], &b, 1) == 1 ? 0 : 1);
	}
	close(p[0]);
	if (setsid() < 0) {
		perror("mqblkd: setsid");
		exit(1);
	}
	return p[1];
}

static void detach(int ready_fd)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	if (write(ready_fd, "", 1) != 1)
		log_err("cannot tell the parent we serve: %s", strerror(errno));
	close(ready_fd);
}

static int write_pidfile(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
		fprintf(stderr, "mqblkd: --pidfile %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * A secret (the server's private key, a PSK file) that the group or
 * others may read is served all the same, with a warning: ssh refuses
 * such a key, nbdkit says nothing; we say it once at start-up.
 */
static void warn_if_readable(const char *opt, const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		log_warn("%s %s: %s", opt, path, strerror(errno));
		return;
	}
	if (st.st_mode & (S_IRGRP | S_IROTH))
		log_warn("warning: %s %s is readable by %s (mode %04o): it "
			 "holds a secret; chmod go-rwx it",
			 opt, path,
			 (st.st_mode & S_IROTH) ? "others" : "its group",
			 (unsigned int)(st.st_mode & 07777));
}

static struct tls_server *make_tls(const struct mqblkd_config *cfg)
{
	struct tls_server_opts o = {
		.certificates = cfg->tls_certificates,
		.psk_file = cfg->tls_psk,
		.verify_peer = cfg->tls_verify_peer,
	};
	struct tls_server *ts;
	char err[512];

	ts = tls_server_new(&o, err, sizeof(err));
	if (!ts) {
		fprintf(stderr, "mqblkd: %s\n", err);
		return NULL;
	}
	if (cfg->tls_certificates) {
		char key[4096];

		if (snprintf(key, sizeof(key), "%s/server-key.pem",
			     cfg->tls_certificates) < (int)sizeof(key))
			warn_if_readable("--tls-certificates", key);
	}
	if (cfg->tls_psk)
		warn_if_readable("--tls-psk", cfg->tls_psk);
	return ts;
}

/*
 * libev aborts when a system call it cannot do without fails (an
 * eventfd for an ev_async: every event loop has one).  Say what ran out
 * and exit 1 instead.
 */
static void ev_syserr(const char *msg)
{
	int err = errno;
	struct rlimit rl;
	char limit[64] = "";

	if ((err == EMFILE || err == ENFILE) &&
	    !getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		snprintf(limit, sizeof(limit),
			 " (the limit is %llu descriptors: ulimit -n)",
			 (unsigned long long)rl.rlim_cur);
	log_err("%s: %s%s", msg ? msg : "libev: system error", strerror(err),
		limit);
	_exit(1);
}

/* "sock" in /run/x becomes "/run/x/sock"; the file need not exist. */
static char *realpath_of_new(const char *path)
{
	char cwd[4096];
	char *abs;

	if (!getcwd(cwd, sizeof(cwd))) {
		perror("mqblkd: getcwd");
		return NULL;
	}
	if (asprintf(&abs, "%s/%s", cwd, path) < 0) {
		fprintf(stderr, "mqblkd: out of memory\n");
		return NULL;
	}
	return abs;
}

/* The group --control-group names: a name or a number. */
static int group_id(const char *name, gid_t *gid)
{
	struct group *g = getgrnam(name);
	char *end;
	unsigned long v;

	if (g) {
		*gid = g->gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(name, &end, 10);
	if (errno || end == name || *end || v > 0x7fffffffUL) {
		fprintf(stderr, "mqblkd: --control-group %s: no such group\n",
			name);
		return -1;
	}
	*gid = (gid_t)v;
	return 0;
}

/* The control server, its tree keyed by export name. */
static struct ctl_server *start_control(const struct mqblkd_config *cfg,
					const struct mqblkd_ids *ids,
					const struct mq_exports *exports)
{
	struct ctl_opts o = {
		.trace_dir = cfg->trace_dir,
		.freeze_timeout_ms = cfg->control_timeout * 1000,
		.http = cfg->metrics,
		.has_owner = ids->set_uid,
		.owner = ids->uid,
	};
	struct ctl_export *ex;
	struct ctl_server *ctl;
	struct mq_err e;
	unsigned int n;

	if (cfg->control_group && group_id(cfg->control_group, &o.gid))
		return NULL;
	o.group = cfg->control_group != NULL;
	ex = mq_export_devs_ctl(exports->devs, exports->nr_devs, &n);
	if (!ex) {
		fprintf(stderr, "mqblkd: out of memory\n");
		return NULL;
	}
	ctl = ctl_server_start(cfg->control, &o, ex, n, &e);
	if (!ctl)
		fprintf(stderr, "mqblkd: %s\n", e.msg);
	free(ex);
	return ctl;
}

int main(int argc, char **argv)
{
	struct mqblkd_config cfg;
	struct mq_exports exports;
	struct nbd_server srv;
	struct server_state *st = NULL;
	unsigned int i, nr_loops = 0;
	int ready_fd = -1, r = 1;
	char *control_abs = NULL;
	struct ctl_server *ctl = NULL;
	struct mqblkd_ids ids;

	if (parse_args(argc, argv, &cfg) ||
	    mqblkd_ids_resolve(cfg.user, cfg.group, &ids))
		return 1;
	signal(SIGPIPE, SIG_IGN);
	/* A SIGHUP before the loop watches for it is no reason to die. */
	signal(SIGHUP, SIG_IGN);
	ev_set_syserr_cb(ev_syserr);
	/* The daemon changes directory: keep a relative socket path here. */
	if (cfg.control && cfg.control[0] != '/') {
		cfg.control = control_abs = realpath_of_new(cfg.control);
		if (!control_abs)
			return 1;
	}
	/* LISTEN_PID names this process, not the daemon it forks. */
	if (mqblkd_socket_activation(&cfg))
		goto out_control;
	if (!cfg.foreground)
		ready_fd = daemonize();
	mqblkd_log_init(cfg.verbose, false);

	if (nbd_exports_build(&cfg, &exports) ||
	    nbd_server_init(&srv, &cfg, &exports))
		goto out_control;
	if (cfg.control || cfg.metrics) {
		ctl = start_control(&cfg, &ids, srv.exports);
		if (!ctl)
			goto out_exports;
		srv.ctl = ctl;
	}
	if (cfg.tls != TLS_MODE_OFF) {
		srv.tls = make_tls(&cfg);
		if (!srv.tls)
			goto out_exports;
	}
	srv.nr_loops = cfg.threads;
	srv.loops = calloc(cfg.threads, sizeof(*srv.loops));
	if (!srv.loops) {
		fprintf(stderr, "mqblkd: out of memory\n");
		goto out_tls;
	}
	for (nr_loops = 0; nr_loops < cfg.threads; nr_loops++)
		if (nbd_loop_init(&srv.loops[nr_loops], &srv, nr_loops))
			goto out_loops;
	if (mqblkd_listen(&srv, &st))
		goto out_loops;
	if (cfg.pidfile && write_pidfile(cfg.pidfile))
		goto out_loops;
	if (mqblkd_drop_privileges(&ids))
		goto out_pidfile;

	for (i = 0; i < srv.exports->nr; i++) {
		const struct mq_export *e = srv.exports->v[i];

		log_info("export '%s': %llu bytes%s: %s", e->name,
			 (unsigned long long)get_capacity(e->disk)
				 << SECTOR_SHIFT,
			 e->readonly ? ", read-only" : "", e->description);
	}
	mqblkd_print_uris(st);
	if (ready_fd >= 0) {
		mqblkd_log_init(cfg.verbose, true);
		detach(ready_fd);
	}
	r = mqblkd_run(&srv, st) ? 1 : 0;
out_pidfile:
	if (cfg.pidfile)
		unlink(cfg.pidfile);
out_loops:
	for (i = 0; i < nr_loops; i++)
		nbd_loop_destroy(&srv.loops[i]);
	free(srv.loops);
out_tls:
	if (srv.tls)
		tls_server_free(srv.tls);
out_exports:
	ctl_server_stop(ctl); /* its thread reads the devices */
	srv.ctl = NULL;
	nbd_server_fini(&srv);
out_control:
	free(control_abs);
	return r;
}
