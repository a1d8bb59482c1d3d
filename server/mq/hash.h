/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Multiplicative hashing with the golden ratio, after include/linux/hash.h:
 * the top bits of val * 2^64/phi spread keys that differ in any bit.
 */
#ifndef MQBLK_HASH_H
#define MQBLK_HASH_H

#include <stdint.h>

/* A bucket in [0, 2^bits), 1 <= bits <= 32. */
static inline unsigned int hash_64(uint64_t val, unsigned int bits)
{
	return (unsigned int)((val * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

#endif
