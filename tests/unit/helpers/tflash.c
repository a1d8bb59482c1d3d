// SPDX-License-Identifier: GPL-2.0
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdevice.h"
#include "tflash.h"
#include "tio.h"

int tflash_fault(struct gendisk *disk, const char *name, const char *value)
{
	return disk_fire_fault(disk, name, value, NULL);
}

int tflash_write(struct mq_device *d, uint32_t sector, uint32_t n,
		 unsigned int seed)
{
	uint8_t *b = malloc((size_t)n * 512);
	int ret;

	ck_assert_ptr_nonnull(b);
	tio_fill(b, (size_t)n * 512, seed);
	ret = tio_io(tdevice_disk0(d)->queue, 0, REQ_OP_WRITE, 0, sector,
		     n * 512, b);
	free(b);
	return ret;
}

void tflash_pattern(unsigned int op, uint32_t s, uint8_t *buf)
{
	unsigned int i;

	if (!op) {
		memset(buf, 0xFF, 512);
		return;
	}
	memcpy(buf, &op, sizeof(op));
	memcpy(buf + 4, &s, sizeof(s));
	for (i = 8; i < 512; i++)
		buf[i] = (uint8_t)(op * 37 + s * 7 + i);
}

/* The sector holds the pattern of one of the allowed ops? */
static bool sector_ok(const uint8_t *got, uint32_t s, unsigned int durable,
		      const uint64_t *later, unsigned int nops)
{
	uint8_t want[512];
	unsigned int op;

	tflash_pattern(durable, s, want);
	if (!memcmp(got, want, 512))
		return true;
	for (op = 1; op <= nops; op++) {
		if (!(later[op / 64] & (1ULL << (op % 64))))
			continue;
		tflash_pattern(op, s, want);
		if (!memcmp(got, want, 512))
			return true;
	}
	return false;
}

unsigned int tflash_powercut_every_step(const char *device,
					const char *const *keys,
					const struct tflash_op *ops,
					unsigned int nops, uint32_t nsect,
					uint32_t exempt_sectors)
{
	unsigned int n, cuts = 0, words = nops / 64 + 1;

	for (n = 1;; n++) {
		struct mq_params *p = mq_params_new();
		unsigned int *durable = calloc(nsect, sizeof(*durable));
		unsigned int *latest = calloc(nsect, sizeof(*latest));
		uint64_t *later = calloc((size_t)nsect * words, 8);
		struct mq_err e = {{0}};
		struct mq_device *d;
		struct gendisk *disk;
		char kv[64], where[128] = "no cut";
		uint8_t *buf;
		const char *bs;
		uint32_t s, exempt_lo = 1, exempt_hi = 0;
		unsigned int i, k;
		bool cut = false;

		ck_assert(p && durable && latest && later);
		ck_assert_int_eq(mq_params_set(p, "device", device, &e), 0);
		ck_assert_int_eq(mq_params_set_kv(p, "time_scale=0", &e), 0);
		for (k = 0; keys[k]; k++)
			ck_assert_int_eq(mq_params_set_kv(p, keys[k], &e), 0);
		snprintf(kv, sizeof(kv), "powercut_after=%u", n);
		ck_assert_int_eq(mq_params_set_kv(p, kv, &e), 0);
		snprintf(kv, sizeof(kv), "seed=%u", n);
		ck_assert_int_eq(mq_params_set_kv(p, kv, &e), 0);
		ck_assert_msg(mq_device_create(p, 2, &d, &e) == 0, "%s", e.msg);
		mq_params_free(p);
		disk = d->disks[0];

		for (i = 0; i < nops && !cut; i++) {
			const struct tflash_op *op = &ops[i];

			if (op->kind == 'F') {
				if (tio_io(disk->queue, 0, REQ_OP_FLUSH, 0, 0,
					   0, NULL)) {
					cut = true;
					break;
				}
				for (s = 0; s < nsect; s++) {
					durable[s] = latest[s];
					memset(&later[(size_t)s * words], 0,
					       words * 8);
				}
				continue;
			}
			buf = malloc((size_t)op->count * 512);
			ck_assert_ptr_nonnull(buf);
			for (k = 0; k < op->count; k++) {
				s = op->sector + k;
				ck_assert_uint_lt(s, nsect);
				tflash_pattern(i + 1, s, buf + k * 512);
				later[(size_t)s * words + (i + 1) / 64] |=
					1ULL << ((i + 1) % 64);
				latest[s] = i + 1;
			}
			if (tio_io(disk->queue, 0, REQ_OP_WRITE, 0, op->sector,
				   op->count * 512, buf))
				cut = true;
			free(buf);
		}

		if (cut) {
			cuts++;
			tdisk_attr(disk, "power", where, sizeof(where));
			ck_assert_msg(!strcmp(where, "off"),
				      "n=%u: an I/O failed with the power on",
				      n);
			tdisk_attr(disk, "last_powercut", where, sizeof(where));
			ck_assert_int_eq(tflash_fault(disk, "poweron", ""), 0);
			bs = strstr(where, "block ");
			if (exempt_sectors && bs) {
				exempt_lo =
					(uint32_t)strtoul(bs + 6, NULL, 10) *
					exempt_sectors;
				exempt_hi = exempt_lo + exempt_sectors - 1;
			}
		}

		if (!cut) {
			/* The whole sequence ran: cut now, between operations.
			 */
			ck_assert_int_eq(tflash_fault(disk, "powercut", ""), 0);
			ck_assert_int_eq(tflash_fault(disk, "poweron", ""), 0);
		}

		buf = malloc(512);
		ck_assert_ptr_nonnull(buf);
		for (s = 0; s < nsect; s++) {
			if (s >= exempt_lo && s <= exempt_hi)
				continue;
			ck_assert_int_eq(tio_io(disk->queue, 0, REQ_OP_READ, 0,
						s, 512, buf),
					 0);
			ck_assert_msg(sector_ok(buf, s, durable[s],
						&later[(size_t)s * words],
						nops),
				      "n=%u (%s): sector %u holds neither its "
				      "flushed value (op %u) nor a later write",
				      n, where, s, durable[s]);
		}
		free(buf);
		mq_device_destroy(d);
		free(durable);
		free(latest);
		free(later);
		if (!cut)
			break;
	}
	return cuts;
}
