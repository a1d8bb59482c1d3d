/* SPDX-License-Identifier: GPL-2.0 */
#include <errno.h>
#include <string.h>

#include "genhd.h"

int disk_fire_fault(struct gendisk *disk, const char *name, const char *value)
{
	const struct disk_fault *f;

	for (f = disk->faults; f && f->name; f++)
		if (!strcmp(f->name, name))
			return f->fire(disk, value);
	return ENOENT;
}
