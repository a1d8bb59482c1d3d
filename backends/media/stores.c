// SPDX-License-Identifier: GPL-2.0
/* The media stores compiled in.  Written once, read by media_open(). */
#include "media.h"

extern const struct media_ops ram_media_ops;
extern const struct media_ops file_media_ops;
extern const struct media_ops nbd_media_ops;
extern const struct media_ops rbd_media_ops;

/* clang-format off */
const struct media_ops *const media_stores[] = {
	&ram_media_ops,
	&file_media_ops,
	&nbd_media_ops,
	&rbd_media_ops,
	NULL,
};
/* clang-format on */
