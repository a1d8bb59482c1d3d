/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fdatasync and fsync, counted: the test executables define both (the
 * call goes on to the kernel), so a test can see whether, and before
 * which completion, the code under test made a file durable.  Only calls
 * on the watched file count.
 */
#ifndef MQBLK_TEST_TSYNC_H
#define MQBLK_TEST_TSYNC_H

/* Count the syncs of the file at path from now on (0 again). */
void tsync_watch(const char *path);
/* Syncs of the watched file since tsync_watch. */
unsigned long tsync_count(void);

#endif
