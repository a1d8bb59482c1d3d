// SPDX-License-Identifier: GPL-2.0
/*
 * `nbdkit mqblk --help`: the keys every device takes, then each driver
 * with its own keys, straight from the registry so it cannot go stale.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

static void print_params(FILE *f, const struct mq_param_spec *spec,
			 const char *indent)
{
	const char *group = NULL;

	for (; spec && spec->key; spec++) {
		int pad = 24 - (int)strlen(spec->key);

		if (spec->group && (!group || strcmp(group, spec->group)))
			fprintf(f, "%s%s\n", indent, spec->group);
		group = spec->group;
		fprintf(f, "%s%s=%-*s", indent, spec->key, pad > 0 ? pad : 1,
			spec->def ? spec->def : "<...>");
		fprintf(f, " %s\n", spec->help ? spec->help : "");
	}
}

char *mqblk_build_help(void)
{
	const struct mq_driver *const *drv;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fprintf(f, "device=%-*s %s\n", 24 - 6, "NAME",
		"(required) the device model, one of those below");
	print_params(f, mq_common_params, "");
	fprintf(f, "\nThe control socket (mqblkctl), keys of the plugin:\n"
		   "control=PATH              serve the tree there (mode 0600: "
		   "this uid and root)\n"
		   "control-group=GROUP       members of GROUP may use it too "
		   "(mode 0660)\n"
		   "control-timeout=10        seconds a scheduler switch waits "
		   "for the queue\n"
		   "trace-dir=DIR             'trace start' writes under DIR "
		   "only\n"
		   "metrics=[ADDR:]PORT       HTTP /metrics, /api/v1/exports "
		   "and a status page\n"
		   "                          at /; no ADDR: 127.0.0.1\n");
	fprintf(f, "\nDevices (device=NAME) and their keys:\n");
	for (drv = mq_drivers; *drv; drv++) {
		fprintf(f, "\n%s: %s\n", (*drv)->name, (*drv)->description);
		if ((*drv)->no_media)
			fprintf(f, "  (media= is not taken: %s)\n",
				(*drv)->no_media);
		print_params(f, (*drv)->params, "  ");
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	/* nbdkit adds its own final newline. */
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return buf;
}
