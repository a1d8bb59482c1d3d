// SPDX-License-Identifier: GPL-2.0
#include <check.h>

#include "tdevice.h"

int tdevice_vcreate(struct mq_device **devp, struct mq_err *e,
		    const char *device, va_list ap)
{
	struct mq_params *p = mq_params_new();
	const char *kv;
	int ret;

	ck_assert_ptr_nonnull(p);
	if (device)
		ck_assert_int_eq(mq_params_set(p, "device", device, e), 0);
	ck_assert_int_eq(mq_params_set_kv(p, "time_scale=0", e), 0);
	while ((kv = va_arg(ap, const char *)))
		ck_assert_int_eq(mq_params_set_kv(p, kv, e), 0);
	ret = mq_device_create(p, 4, devp, e);
	mq_params_free(p);
	return ret;
}

int tdevice_create(struct mq_device **devp, struct mq_err *e,
		   const char *device, ...)
{
	va_list ap;
	int ret;

	va_start(ap, device);
	ret = tdevice_vcreate(devp, e, device, ap);
	va_end(ap);
	return ret;
}
