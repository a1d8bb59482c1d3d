// SPDX-License-Identifier: GPL-2.0
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tsync.h"

#include <check.h>

static atomic_ulong tsync_dev, tsync_ino, tsync_n;

void tsync_watch(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	atomic_store(&tsync_n, 0);
	atomic_store(&tsync_dev, (unsigned long)st.st_dev);
	atomic_store(&tsync_ino, (unsigned long)st.st_ino);
}

unsigned long tsync_count(void)
{
	return atomic_load(&tsync_n);
}

static void tsync_note(int fd)
{
	struct stat st;

	if (!fstat(fd, &st) &&
	    (unsigned long)st.st_ino == atomic_load(&tsync_ino) &&
	    (unsigned long)st.st_dev == atomic_load(&tsync_dev))
		atomic_fetch_add(&tsync_n, 1);
}

/* Counted after the kernel returned: the data is durable by then. */
int fdatasync(int fd)
{
	int rc = (int)syscall(SYS_fdatasync, fd);

	tsync_note(fd);
	return rc;
}

int fsync(int fd)
{
	int rc = (int)syscall(SYS_fsync, fd);

	tsync_note(fd);
	return rc;
}
