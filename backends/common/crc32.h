/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CRC-32 (IEEE 802.3, the zlib and ethernet one), for the checksums the
 * models keep on their media: the FTL's pages and the zone file's
 * entries.  Small buffers only: a nibble table, no 1 KiB of tables.
 */
#ifndef MQBLK_CRC32_H
#define MQBLK_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* crc of the bytes before buf (0 to start), extended over buf. */
uint32_t crc32_ieee(uint32_t crc, const void *buf, size_t len);

#endif
