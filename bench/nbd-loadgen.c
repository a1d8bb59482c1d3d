// SPDX-License-Identifier: GPL-2.0
/*
 * nbd-loadgen: an NBD load generator that costs the client little, so
 * that the server, not the client, is what a run measures.  Several
 * threads, one connection each, QD requests in flight on each; every
 * batch of new requests goes out in one writev and replies are read in
 * large reads and parsed in place.  Structured replies are negotiated
 * (as fio's nbd engine, through libnbd, does), then NBD_OPT_GO.
 *
 *   nbd-loadgen (-U SOCKET | -p PORT [-H HOST]) [-e EXPORT] [-c CONNS]
 *               [-q QD] [-b BYTES] [--write] [-s SECONDS] [-r RAMP]
 *               [--pid SERVER_PID]
 *
 * It prints one line of KEY=VALUE pairs: iops, mbps, the requests
 * counted over SECONDS after RAMP, errors, and with --pid the server's
 * CPU microseconds per request (utime + stime from /proc/PID/stat over
 * the same window), and the client's own (getrusage).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "nbd-wire.h"

#define LG_RBUF	  (8u << 20)
#define LG_MAX_IO (1u << 20)

struct lg_cfg {
	const char *path, *host, *port, *export;
	unsigned int conns, qd, bs;
	bool write;
	double seconds, ramp;
};

struct lg_thread {
	const struct lg_cfg *cfg;
	pthread_t thread;
	int fd;
	bool sr;
	uint64_t size;
	uint64_t rng;
	atomic_ulong done;
	atomic_ulong errors;
	bool failed;
};

static atomic_bool stop;
static pthread_barrier_t ready;
static char wbuf[LG_MAX_IO];

static uint64_t lg_rand(struct lg_thread *t)
{
	/* xorshift64* */
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 2685821657736338717ull;
}

static int lg_connect(const struct lg_cfg *cfg)
{
	int fd, one = 1;

	if (cfg->path) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};

		if (strlen(cfg->path) >= sizeof(sa.sun_path))
			return -1;
		strcpy(sa.sun_path, cfg->path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			close(fd);
			return -1;
		}
		return fd;
	}
	{
		struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai, *p;

		if (getaddrinfo(cfg->host, cfg->port, &hints, &ai))
			return -1;
		fd = -1;
		for (p = ai; p; p = p->ai_next) {
			fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC,
				    p->ai_protocol);
			if (fd < 0)
				continue;
			if (!connect(fd, p->ai_addr, p->ai_addrlen))
				break;
			close(fd);
			fd = -1;
		}
		freeaddrinfo(ai);
		if (fd >= 0)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
		return fd;
	}
}

static bool send_opt(int fd, uint32_t opt, const void *data, uint32_t len)
{
	unsigned char hdr[NBD_OPT_HDR_LEN];
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)data, len}};

	put_be64(hdr, NBD_IHAVEOPT);
	put_be32(hdr + 8, opt);
	put_be32(hdr + 12, len);
	return wire_writev(fd, iov, len ? 2 : 1);
}

/* Read one option reply; its payload (up to cap bytes) into data. */
static bool read_opt_reply(int fd, uint32_t *type, unsigned char *data,
			   uint32_t cap, uint32_t *len)
{
	unsigned char hdr[NBD_OPT_REPLY_HDR_LEN];

	if (!wire_read(fd, hdr, sizeof(hdr)) || get_be64(hdr) != NBD_REP_MAGIC)
		return false;
	*type = get_be32(hdr + 12);
	*len = get_be32(hdr + 16);
	if (*len > cap)
		return false;
	return wire_read(fd, data, *len);
}

static bool negotiate(struct lg_thread *t)
{
	const char *name = t->cfg->export;
	unsigned char greet[18], cf[4], data[NBD_MAX_STRING], go[4 + 4096 + 2];
	uint32_t type, len, nlen = (uint32_t)strlen(name);

	if (!wire_read(t->fd, greet, sizeof(greet)) ||
	    get_be64(greet) != NBD_MAGIC || get_be64(greet + 8) != NBD_IHAVEOPT)
		return false;
	put_be32(cf, NBD_FLAG_C_FIXED_NEWSTYLE |
			     (get_be16(greet + 16) & NBD_FLAG_NO_ZEROES));
	if (!wire_write(t->fd, cf, sizeof(cf)) ||
	    !send_opt(t->fd, NBD_OPT_STRUCTURED_REPLY, NULL, 0) ||
	    !read_opt_reply(t->fd, &type, data, sizeof(data), &len))
		return false;
	t->sr = type == NBD_REP_ACK;
	if (nlen > 4096)
		return false;
	put_be32(go, nlen);
	memcpy(go + 4, name, nlen);
	put_be16(go + 4 + nlen, 0);
	if (!send_opt(t->fd, NBD_OPT_GO, go, 4 + nlen + 2))
		return false;
	for (;;) {
		if (!read_opt_reply(t->fd, &type, data, sizeof(data), &len))
			return false;
		if (type == NBD_REP_ACK)
			return t->size > 0;
		if (type & 0x80000000u) {
			fprintf(stderr,
				"nbd-loadgen: NBD_OPT_GO refused (%#x)\n",
				type);
			return false;
		}
		if (type == NBD_REP_INFO && len >= 12 &&
		    get_be16(data) == NBD_INFO_EXPORT)
			t->size = get_be64(data + 2);
	}
}

/* Queue request slot's next I/O: header in hdr, iovs appended. */
static void lg_request(struct lg_thread *t, unsigned int slot,
		       unsigned char *hdr, struct iovec *iov, unsigned int *nr)
{
	const struct lg_cfg *cfg = t->cfg;
	uint64_t blocks = t->size / cfg->bs;
	uint64_t off = (lg_rand(t) % blocks) * cfg->bs;

	put_be32(hdr, NBD_REQUEST_MAGIC);
	put_be16(hdr + 4, 0);
	put_be16(hdr + 6, cfg->write ? NBD_CMD_WRITE : NBD_CMD_READ);
	put_be64(hdr + 8, slot);
	put_be64(hdr + 16, off);
	put_be32(hdr + 24, cfg->bs);
	iov[(*nr)++] = (struct iovec){hdr, NBD_REQUEST_LEN};
	if (cfg->write)
		iov[(*nr)++] = (struct iovec){wbuf, cfg->bs};
}

/*
 * Parse the replies in buf[0..have); returns the bytes consumed.  Each
 * finished request's slot goes into fin[].
 */
static size_t lg_parse(struct lg_thread *t, const unsigned char *buf,
		       size_t have, unsigned int *fin, unsigned int *nr_fin,
		       bool *bad)
{
	size_t pos = 0;

	while (have - pos >= 4) {
		const unsigned char *r = buf + pos;
		uint32_t magic = get_be32(r);

		if (*nr_fin == t->cfg->qd) {
			*bad = true; /* more replies than requests */
			break;
		}
		if (magic == NBD_SIMPLE_REPLY_MAGIC) {
			size_t need = NBD_SIMPLE_REPLY_LEN;
			uint32_t err;

			if (have - pos < need)
				break;
			err = get_be32(r + 4);
			if (!err && !t->cfg->write)
				need += t->cfg->bs;
			if (have - pos < need)
				break;
			if (err)
				atomic_fetch_add(&t->errors, 1);
			fin[(*nr_fin)++] = (unsigned int)get_be64(r + 8);
			pos += need;
		} else if (magic == NBD_STRUCTURED_REPLY_MAGIC) {
			uint16_t flags, type;
			size_t need;

			if (have - pos < NBD_CHUNK_HDR_LEN)
				break;
			flags = get_be16(r + 4);
			type = get_be16(r + 6);
			need = NBD_CHUNK_HDR_LEN + (size_t)get_be32(r + 16);
			if (need > LG_RBUF) {
				*bad = true;
				break;
			}
			if (have - pos < need)
				break;
			if (type & 0x8000)
				atomic_fetch_add(&t->errors, 1);
			if (flags & NBD_REPLY_FLAG_DONE)
				fin[(*nr_fin)++] =
					(unsigned int)get_be64(r + 8);
			pos += need;
		} else {
			*bad = true;
			break;
		}
	}
	return pos;
}

static void *lg_thread_fn(void *arg)
{
	struct lg_thread *t = arg;
	const struct lg_cfg *cfg = t->cfg;
	unsigned int qd = cfg->qd, inflight = 0, nr_fin, nr_iov, i;
	unsigned char *rbuf = malloc(LG_RBUF);
	unsigned char(*hdr)[NBD_REQUEST_LEN] = calloc(qd, sizeof(*hdr));
	struct iovec *iov = calloc(2 * (size_t)qd, sizeof(*iov));
	unsigned int *fin = calloc(qd, sizeof(*fin));
	size_t have = 0, used;
	bool ok = rbuf && hdr && iov && fin;

	ok = ok && (t->fd = lg_connect(cfg)) >= 0 && negotiate(t) &&
	     t->size >= cfg->bs;
	if (!ok)
		t->failed = true;
	pthread_barrier_wait(&ready);
	if (!ok)
		goto out;

	nr_iov = 0;
	for (i = 0; i < qd; i++)
		lg_request(t, i, hdr[i], iov, &nr_iov);
	inflight = qd;
	if (!wire_writev(t->fd, iov, (int)nr_iov))
		goto fail;
	while (inflight) {
		bool bad = false,
		     more = !atomic_load_explicit(&stop, memory_order_relaxed);
		ssize_t n = read(t->fd, rbuf + have, LG_RBUF - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		have += (size_t)n;
		nr_fin = 0;
		used = lg_parse(t, rbuf, have, fin, &nr_fin, &bad);
		if (bad)
			goto fail;
		memmove(rbuf, rbuf + used, have - used);
		have -= used;
		atomic_fetch_add_explicit(&t->done, nr_fin,
					  memory_order_relaxed);
		if (!more) {
			inflight -= nr_fin;
			continue;
		}
		nr_iov = 0;
		for (i = 0; i < nr_fin; i++) {
			if (fin[i] >= qd)
				goto fail;
			lg_request(t, fin[i], hdr[fin[i]], iov, &nr_iov);
		}
		if (nr_iov && !wire_writev(t->fd, iov, (int)nr_iov))
			goto fail;
	}
	{
		unsigned char disc[NBD_REQUEST_LEN] = {0};

		put_be32(disc, NBD_REQUEST_MAGIC);
		put_be16(disc + 6, NBD_CMD_DISC);
		wire_write(t->fd, disc, sizeof(disc));
	}
	goto out;
fail:
	t->failed = true;
out:
	if (t->fd >= 0)
		close(t->fd);
	free(fin);
	free(iov);
	free(hdr);
	free(rbuf);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s,
			      .tv_nsec = (long)((s - (time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* utime + stime of pid in clock ticks, or -1. */
static long long proc_ticks(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* comm may hold spaces */
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%llu %llu",
			 &ut, &st) != 2)
		return -1;
	return (long long)(ut + st);
}

static double self_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static unsigned long total(struct lg_thread *th, unsigned int n, bool errors)
{
	unsigned long sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		sum += atomic_load(errors ? &th[i].errors : &th[i].done);
	return sum;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nbd-loadgen (-U SOCKET | -p PORT [-H HOST]) [-e EXPORT]\n"
		"                   [-c CONNS] [-q QD] [-b BYTES] [--write]\n"
		"                   [-s SECONDS] [-r RAMP] [--pid SERVER_PID]\n"
		"  random reads (or writes) of BYTES (4096) at QD (32) on each\n"
		"  of CONNS (1) connections, one thread each\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"unix", required_argument, NULL, 'U'},
		{"host", required_argument, NULL, 'H'},
		{"port", required_argument, NULL, 'p'},
		{"export", required_argument, NULL, 'e'},
		{"conns", required_argument, NULL, 'c'},
		{"qd", required_argument, NULL, 'q'},
		{"bs", required_argument, NULL, 'b'},
		{"write", no_argument, NULL, 'w'},
		{"seconds", required_argument, NULL, 's'},
		{"ramp", required_argument, NULL, 'r'},
		{"pid", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct lg_cfg cfg = {.host = "127.0.0.1",
			     .export = "",
			     .conns = 1,
			     .qd = 32,
			     .bs = 4096,
			     .seconds = 5,
			     .ramp = 1};
	long pid = 0, hz = sysconf(_SC_CLK_TCK);
	long long tk0 = -1, tk1 = -1;
	struct lg_thread *th;
	unsigned long d0 = 0, d1 = 0;
	double t0 = 0, t1 = 1, c0 = 0, c1 = 0;
	unsigned int i;
	int o, err, failed = 0;

	while ((o = getopt_long(argc, argv, "U:H:p:e:c:q:b:ws:r:P:h", opts,
				NULL)) != -1) {
		switch (o) {
		case 'U':
			cfg.path = optarg;
			break;
		case 'H':
			cfg.host = optarg;
			break;
		case 'p':
			cfg.port = optarg;
			break;
		case 'e':
			cfg.export = optarg;
			break;
		case 'c':
			cfg.conns = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'q':
			cfg.qd = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			cfg.bs = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			cfg.write = true;
			break;
		case 's':
			cfg.seconds = strtod(optarg, NULL);
			break;
		case 'r':
			cfg.ramp = strtod(optarg, NULL);
			break;
		case 'P':
			pid = strtol(optarg, NULL, 10);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!cfg.path == !cfg.port || !cfg.conns || cfg.conns > 1024 ||
	    !cfg.qd || cfg.qd > 4096 || !cfg.bs || cfg.bs > LG_MAX_IO ||
	    cfg.seconds <= 0 || cfg.ramp < 0) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	th = calloc(cfg.conns, sizeof(*th));
	if (!th || pthread_barrier_init(&ready, NULL, cfg.conns + 1)) {
		fprintf(stderr, "nbd-loadgen: out of memory\n");
		return 1;
	}
	for (i = 0; i < cfg.conns; i++) {
		th[i].cfg = &cfg;
		th[i].fd = -1;
		th[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
		err = pthread_create(&th[i].thread, NULL, lg_thread_fn, &th[i]);
		if (err) {
			fprintf(stderr, "nbd-loadgen: pthread_create: %s\n",
				strerror(err));
			return 1;
		}
	}
	pthread_barrier_wait(&ready);
	for (i = 0; i < cfg.conns; i++)
		failed |= th[i].failed;
	if (!failed) {
		sleep_s(cfg.ramp);
		d0 = total(th, cfg.conns, false);
		if (pid)
			tk0 = proc_ticks(pid);
		c0 = self_cpu_s();
		t0 = now_s();
		sleep_s(cfg.seconds);
		d1 = total(th, cfg.conns, false);
		if (pid)
			tk1 = proc_ticks(pid);
		c1 = self_cpu_s();
		t1 = now_s();
	}
	atomic_store(&stop, true);
	for (i = 0; i < cfg.conns; i++) {
		pthread_join(th[i].thread, NULL);
		failed |= th[i].failed;
	}
	if (failed) {
		fprintf(stderr, "nbd-loadgen: a connection failed\n");
		return 1;
	}
	{
		double reqs = (double)(d1 - d0), secs = t1 - t0;

		printf("iops=%.0f mbps=%.1f reqs=%.0f secs=%.3f errors=%lu "
		       "client_cpu_us=%.2f",
		       reqs / secs, reqs * cfg.bs / secs / 1e6, reqs, secs,
		       total(th, cfg.conns, true),
		       reqs ? (c1 - c0) * 1e6 / reqs : 0);
		if (pid && tk0 >= 0 && tk1 >= 0)
			printf(" server_cpu_us=%.2f",
			       reqs ? (double)(tk1 - tk0) * 1e6 / hz / reqs
				    : 0);
		printf("\n");
	}
	err = total(th, cfg.conns, true) ? 1 : 0;
	free(th);
	return err;
}
