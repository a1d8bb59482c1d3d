// SPDX-License-Identifier: GPL-2.0
/*
 * nbd-ceiling: a do-nothing NBD server, the ceiling mqblkd is measured
 * against.  It negotiates as mqblkd does (fixed newstyle, no zeroes,
 * structured replies, NBD_OPT_GO with NBD_INFO_EXPORT), parses every
 * request, and answers it from a static buffer: reads with one
 * NBD_REPLY_TYPE_OFFSET_DATA chunk (a simple reply without structured
 * replies), everything else with a done chunk.  Written data is dropped.
 *
 * One thread a connection, blocking sockets: requests are read in large
 * reads and all the replies to what one read brought are sent with one
 * writev, so the server's cost is the parsing and the system calls.
 *
 * With --data, reads are answered from a buffer of the export's size,
 * filled at start-up, at the offset asked for: the kernel then brings
 * each read's bytes in from memory as it copies them into the socket,
 * as a server that holds real data has to once.  Without it, every read
 * sends the same hot buffer.
 *
 *   nbd-ceiling (-U SOCKET | -p PORT) [--size BYTES] [--data]
 *
 * Not a product: a benchmark tool, run by bench/perf-bench.sh.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "nbd-wire.h"

#define CEIL_RBUF   (4u << 20) /* request bytes read at once, at most */
#define CEIL_MAX_IO (1u << 20) /* the largest read answered from zero_buf */
#define CEIL_FLAGS                                                             \
	(NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA |        \
	 NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES |                     \
	 NBD_FLAG_CAN_MULTI_CONN)

static uint64_t export_size = 1ull << 30;
static char zero_buf[CEIL_MAX_IO];
static char *data_buf; /* --data: the export's bytes, set once at start */

struct ceil_conn {
	int fd;
	bool sr; /* structured replies negotiated */
	uint16_t cflags;
};

static bool opt_reply(struct ceil_conn *c, uint32_t opt, uint32_t type,
		      const void *data, uint32_t len)
{
	unsigned char hdr[NBD_OPT_REPLY_HDR_LEN];
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)data, len}};

	put_be64(hdr, NBD_REP_MAGIC);
	put_be32(hdr + 8, opt);
	put_be32(hdr + 12, type);
	put_be32(hdr + 16, len);
	return wire_writev(c->fd, iov, len ? 2 : 1);
}

/* NBD_REP_INFO with NBD_INFO_EXPORT, then NBD_REP_ACK. */
static bool send_info(struct ceil_conn *c, uint32_t opt)
{
	unsigned char info[12];

	put_be16(info, NBD_INFO_EXPORT);
	put_be64(info + 2, export_size);
	put_be16(info + 10, CEIL_FLAGS);
	return opt_reply(c, opt, NBD_REP_INFO, info, sizeof(info)) &&
	       opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
}

/* The option haggling; true when transmission starts. */
static bool negotiate(struct ceil_conn *c)
{
	unsigned char greet[18], hdr[NBD_OPT_HDR_LEN], cf[4];
	static unsigned char data[NBD_MAX_STRING];

	put_be64(greet, NBD_MAGIC);
	put_be64(greet + 8, NBD_IHAVEOPT);
	put_be16(greet + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
	if (!wire_write(c->fd, greet, sizeof(greet)) ||
	    !wire_read(c->fd, cf, sizeof(cf)))
		return false;
	c->cflags = (uint16_t)get_be32(cf);
	if (!(c->cflags & NBD_FLAG_C_FIXED_NEWSTYLE))
		return false;
	for (;;) {
		uint32_t opt, len;
		unsigned char discard[512];

		if (!wire_read(c->fd, hdr, sizeof(hdr)) ||
		    get_be64(hdr) != NBD_IHAVEOPT)
			return false;
		opt = get_be32(hdr + 8);
		len = get_be32(hdr + 12);
		if (len > sizeof(data) && opt != NBD_OPT_EXPORT_NAME) {
			/* Read and drop an option too long to bother with. */
			while (len) {
				uint32_t n = len > sizeof(discard)
						     ? sizeof(discard)
						     : len;

				if (!wire_read(c->fd, discard, n))
					return false;
				len -= n;
			}
			if (!opt_reply(c, opt, NBD_REP_ERR_TOO_BIG, NULL, 0))
				return false;
			continue;
		}
		if (len > sizeof(data) || !wire_read(c->fd, data, len))
			return false;
		switch (opt) {
		case NBD_OPT_EXPORT_NAME: {
			unsigned char reply[10 + 124] = {0};

			put_be64(reply, export_size);
			put_be16(reply + 8, CEIL_FLAGS);
			return wire_write(c->fd, reply,
					  c->cflags & NBD_FLAG_C_NO_ZEROES
						  ? 10
						  : sizeof(reply));
		}
		case NBD_OPT_ABORT:
			opt_reply(c, opt, NBD_REP_ACK, NULL, 0);
			return false;
		case NBD_OPT_STRUCTURED_REPLY:
			if (len) {
				if (!opt_reply(c, opt, NBD_REP_ERR_INVALID,
					       NULL, 0))
					return false;
				break;
			}
			c->sr = true;
			if (!opt_reply(c, opt, NBD_REP_ACK, NULL, 0))
				return false;
			break;
		case NBD_OPT_INFO:
		case NBD_OPT_GO:
			if (!send_info(c, opt))
				return false;
			if (opt == NBD_OPT_GO)
				return true;
			break;
		case NBD_OPT_LIST: {
			unsigned char name[4] = {0}; /* the default export */

			if (!opt_reply(c, opt, NBD_REP_SERVER, name,
				       sizeof(name)) ||
			    !opt_reply(c, opt, NBD_REP_ACK, NULL, 0))
				return false;
			break;
		}
		default:
			if (!opt_reply(c, opt, NBD_REP_ERR_UNSUP, NULL, 0))
				return false;
			break;
		}
	}
}

/* Reply headers for one batch; data comes from zero_buf. */
struct ceil_out {
	unsigned char (*hdr)[NBD_CHUNK_HDR_LEN + 8];
	struct iovec *iov;
	unsigned int nr_hdr, nr_iov, max;
};

static bool out_flush(struct ceil_conn *c, struct ceil_out *o)
{
	bool ok = !o->nr_iov || wire_writev(c->fd, o->iov, (int)o->nr_iov);

	o->nr_hdr = o->nr_iov = 0;
	return ok;
}

static bool reply(struct ceil_conn *c, struct ceil_out *o, uint64_t handle,
		  uint16_t type, uint64_t offset, uint32_t len, uint32_t error)
{
	unsigned char *h;
	size_t hlen;

	if (o->nr_hdr == o->max && !out_flush(c, o))
		return false;
	h = o->hdr[o->nr_hdr++];
	if (!c->sr) {
		put_be32(h, NBD_SIMPLE_REPLY_MAGIC);
		put_be32(h + 4, error);
		put_be64(h + 8, handle);
		hlen = NBD_SIMPLE_REPLY_LEN;
		if (error || type != NBD_CMD_READ)
			len = 0;
	} else if (error) {
		put_be32(h, NBD_STRUCTURED_REPLY_MAGIC);
		put_be16(h + 4, NBD_REPLY_FLAG_DONE);
		put_be16(h + 6, NBD_REPLY_TYPE_ERROR);
		put_be64(h + 8, handle);
		put_be32(h + 16, 6);
		put_be32(h + 20, error);
		put_be16(h + 24, 0);
		hlen = NBD_CHUNK_HDR_LEN + 6;
		len = 0;
	} else if (type == NBD_CMD_READ) {
		put_be32(h, NBD_STRUCTURED_REPLY_MAGIC);
		put_be16(h + 4, NBD_REPLY_FLAG_DONE);
		put_be16(h + 6, NBD_REPLY_TYPE_OFFSET_DATA);
		put_be64(h + 8, handle);
		put_be32(h + 16, len + 8);
		put_be64(h + 20, offset);
		hlen = NBD_CHUNK_HDR_LEN + 8;
	} else {
		put_be32(h, NBD_STRUCTURED_REPLY_MAGIC);
		put_be16(h + 4, NBD_REPLY_FLAG_DONE);
		put_be16(h + 6, NBD_REPLY_TYPE_NONE);
		put_be64(h + 8, handle);
		put_be32(h + 16, 0);
		hlen = NBD_CHUNK_HDR_LEN;
		len = 0;
	}
	o->iov[o->nr_iov++] = (struct iovec){h, hlen};
	if (len)
		o->iov[o->nr_iov++] = (struct iovec){
			data_buf ? data_buf + offset : zero_buf, len};
	return true;
}

static void transmission(struct ceil_conn *c)
{
	struct ceil_out o = {.max = 1024};
	unsigned char *buf = malloc(CEIL_RBUF);
	size_t have = 0, pos;
	uint64_t skip = 0; /* write payload still to drop */

	o.hdr = calloc(o.max, sizeof(*o.hdr));
	o.iov = calloc(2 * (size_t)o.max, sizeof(*o.iov));
	if (!buf || !o.hdr || !o.iov)
		goto out;
	for (;;) {
		ssize_t n = read(c->fd, buf + have, CEIL_RBUF - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto out;
		have += (size_t)n;
		pos = 0;
		if (skip) {
			size_t k = skip < have ? skip : have;

			pos += k;
			skip -= k;
		}
		while (!skip && have - pos >= NBD_REQUEST_LEN) {
			const unsigned char *r = buf + pos;
			uint16_t type = get_be16(r + 6);
			uint64_t handle = get_be64(r + 8);
			uint64_t offset = get_be64(r + 16);
			uint32_t len = get_be32(r + 24), error = 0;

			if (get_be32(r) != NBD_REQUEST_MAGIC)
				goto out;
			pos += NBD_REQUEST_LEN;
			if (type == NBD_CMD_DISC)
				goto out;
			if (type == NBD_CMD_WRITE) {
				size_t k = have - pos < len ? have - pos : len;

				pos += k;
				skip = len - k;
			}
			if (offset > export_size || len > export_size - offset)
				error = NBD_EINVAL;
			else if (type == NBD_CMD_READ && len > CEIL_MAX_IO)
				error = NBD_EOVERFLOW;
			else if (type > NBD_CMD_WRITE_ZEROES ||
				 type == NBD_CMD_CACHE)
				error = NBD_EINVAL;
			if (!reply(c, &o, handle, type, offset, len, error))
				goto out;
		}
		if (!out_flush(c, &o))
			goto out;
		memmove(buf, buf + pos, have - pos);
		have -= pos;
	}
out:
	free(o.iov);
	free(o.hdr);
	free(buf);
}

static void *conn_thread(void *arg)
{
	struct ceil_conn *c = arg;

	if (negotiate(c))
		transmission(c);
	close(c->fd);
	free(c);
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nbd-ceiling (-U SOCKET | -p PORT) [--size BYTES] "
		   "[--data]\n"
		   "  a do-nothing NBD server (answers from a static buffer)\n"
		   "  -p 0 picks a free loopback port and prints it\n"
		   "  --data answers reads from a filled buffer of the "
		   "export's size\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"unix", required_argument, NULL, 'U'},
		{"port", required_argument, NULL, 'p'},
		{"size", required_argument, NULL, 's'},
		{"data", no_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *path = NULL;
	long port = -1;
	bool data = false;
	int o, lfd;

	while ((o = getopt_long(argc, argv, "U:p:s:dh", opts, NULL)) != -1) {
		switch (o) {
		case 'U':
			path = optarg;
			break;
		case 'p':
			port = strtol(optarg, NULL, 10);
			break;
		case 's':
			export_size = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			data = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!path == (port < 0) || port > 65535 || !export_size) {
		usage(stderr);
		return 2;
	}
	if (data) {
		data_buf = mmap(NULL, export_size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (data_buf == MAP_FAILED) {
			perror("nbd-ceiling: mmap");
			return 1;
		}
		/* Every page its own, as a filled disk's are. */
		memset(data_buf, 0xa5, export_size);
	}
	signal(SIGPIPE, SIG_IGN);
	if (path) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};

		if (strlen(path) >= sizeof(sa.sun_path)) {
			fprintf(stderr, "nbd-ceiling: %s: path too long\n",
				path);
			return 1;
		}
		strcpy(sa.sun_path, path);
		lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		unlink(path);
		if (lfd < 0 ||
		    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			perror("nbd-ceiling: bind");
			return 1;
		}
	} else {
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr =
						 htonl(INADDR_LOOPBACK)};
		socklen_t sl = sizeof(sa);
		int one = 1;

		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (lfd < 0 ||
		    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one,
			       sizeof(one)) < 0 ||
		    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
			perror("nbd-ceiling: bind");
			return 1;
		}
		printf("%u\n", ntohs(sa.sin_port));
		fflush(stdout);
	}
	if (listen(lfd, 64) < 0) {
		perror("nbd-ceiling: listen");
		return 1;
	}
	for (;;) {
		struct ceil_conn *c;
		pthread_t th;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), one = 1, err;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED ||
			    errno == EMFILE || errno == ENFILE)
				continue;
			perror("nbd-ceiling: accept");
			return 1;
		}
		if (!path)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		err = pthread_create(&th, NULL, conn_thread, c);
		if (err) {
			fprintf(stderr, "nbd-ceiling: pthread_create: %s\n",
				strerror(err));
			close(fd);
			free(c);
			continue;
		}
		pthread_detach(th);
	}
}
