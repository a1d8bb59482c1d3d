// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness: the bytes a client could send, from the greeting on,
 * fed through mqblkd's own parser, handshake and transmission code on a
 * buffer-fed connection (no socket).  Requests reach real devices: a ram
 * export completing inline and a null export (no memory, so WRITE_ZEROES
 * is emulated) completing on its irq thread.
 *
 * Input: byte 0 picks the TLS mode (off, on, require; STARTTLS "succeeds"
 * on a buffer-fed connection and what follows counts as inside TLS) and
 * how the rest is cut into reads; the rest is the client's byte stream.
 *
 *   CC=clang cmake -S . -B build-fuzz -DMQBLK_FUZZ=ON
 *   cmake --build build-fuzz --target fuzz_nbd
 *   build-fuzz/fuzz_nbd -max_total_time=60 CORPUS_DIR
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/nbd/mqblkd.h"

static struct {
	struct mqblkd_config cfg[3];
	struct nbd_server srv[3];
	struct nbd_loop loop[3];
} fz;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char ini[] = "[rw]\ndevice=ram\nsize=1M\ntime_scale=0\n"
				  "[nofast]\ndevice=null\nmemory_backed=0\n"
				  "irqmode=1\nsize=1M\ntime_scale=0\n";
	char path[] = "/tmp/fuzz_nbd.XXXXXX";
	int fd, i;

	mqblkd_log_init(-1, false);
	fd = mkstemp(path);
	if (fd < 0 || write(fd, ini, sizeof(ini) - 1) != sizeof(ini) - 1) {
		perror("fuzz_nbd: config");
		exit(1);
	}
	close(fd);
	for (i = 0; i < 3; i++) {
		fz.cfg[i] = (struct mqblkd_config){
			.threads = 1,
			.max_connections = 100,
			.tls = (enum tls_mode)i,
			.config_file = path,
		};
	}
	for (i = 0; i < 3; i++) {
		struct mq_exports ex;

		if (nbd_exports_build(&fz.cfg[i], &ex) ||
		    nbd_server_init(&fz.srv[i], &fz.cfg[i], &ex)) {
			unlink(path);
			exit(1);
		}
	}
	unlink(path);
	for (i = 0; i < 3; i++) {
		fz.srv[i].nr_loops = 1;
		fz.srv[i].loops = &fz.loop[i];
		if (nbd_loop_init(&fz.loop[i], &fz.srv[i], 0))
			exit(1);
	}
	return 0;
}

/* Until the connection is gone: completions, then services. */
static void settle(struct nbd_loop *l)
{
	while (!TAILQ_EMPTY(&l->conns)) {
		nbd_loop_run_pending(l);
		if (!TAILQ_EMPTY(&l->conns))
			sched_yield(); /* null's irq thread is finishing */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t cuts[] = {1, 3, 16, 28, 100, 4096, 1u << 20};
	struct mq_client client = {.id = 1, .uid = -1, .addr = "fuzz"};
	struct nbd_loop *l;
	struct nbd_conn *c;
	size_t cut, off = 0;

	if (size < 1)
		return 0;
	l = &fz.loop[data[0] % 3];
	cut = cuts[(data[0] / 3) % (sizeof(cuts) / sizeof(cuts[0]))];
	nbd_set_current_loop(l);
	c = nbd_conn_new(l, -1, &client);
	if (!c)
		return 0;
	data++;
	size--;
	/* Check the list before c: a finished connection is freed. */
	while (off < size && !TAILQ_EMPTY(&l->conns) && c->phase != PH_DEAD &&
	       c->phase != PH_CLOSING) {
		size_t n = size - off < cut ? size - off : cut;
		size_t took = nbd_conn_feed(c, data + off, n);

		off += took;
		nbd_loop_run_pending(l);
		if (!took) {
			if (TAILQ_EMPTY(&l->conns) || !c->inflight)
				break;
			sched_yield(); /* back-pressure: devices catch up */
		}
	}
	if (!TAILQ_EMPTY(&l->conns))
		nbd_conn_kill(c, "end of input");
	settle(l);
	nbd_set_current_loop(NULL);
	return 0;
}
