/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Devices through the device layer, as the front ends make them, with
 * time off (time_scale=0, which a later string may override) and 4
 * software queues.
 */
#ifndef MQBLK_TEST_TDEVICE_H
#define MQBLK_TEST_TDEVICE_H

#include <stdarg.h>

#include "backends/device.h"

/*
 * Make device (NULL: a "device=" string names it) from "key=value"
 * strings ending with NULL.  0, or -1 with e set by the device layer.
 */
int tdevice_create(struct mq_device **devp, struct mq_err *e,
		   const char *device, ...);
int tdevice_vcreate(struct mq_device **devp, struct mq_err *e,
		    const char *device, va_list ap);

#endif
