// SPDX-License-Identifier: GPL-2.0
/*
 * -u USER and -g GROUP: the ids mqblkd serves as.  They are looked up
 * while the command line is read (a typo is one line before anything
 * starts) and taken once the listeners are bound and the pidfile is
 * written, as nbd-server's user/group and nbdkit's -u/-g do: a port
 * below 1024 and a socket in a root-owned directory need root, serving
 * does not.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mqblkd.h"

/* A name in the database, or a number. */
static int parse_id(const char *s, unsigned long *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno || *end || *v >= 0x7fffffffUL ? -1 : 0;
}

int mqblkd_ids_resolve(const char *user, const char *group,
		       struct mqblkd_ids *ids)
{
	unsigned long v;

	*ids = (struct mqblkd_ids){0};
	if (user) {
		struct passwd *pw = getpwnam(user);

		if (!pw && !parse_id(user, &v))
			pw = getpwuid((uid_t)v);
		if (!pw && (parse_id(user, &v) || !group)) {
			fprintf(stderr, "mqblkd: -u %s: no such user%s\n", user,
				parse_id(user, &v)
					? ""
					: " in the password database (give -g too)");
			return -1;
		}
		ids->set_uid = true;
		if (pw) {
			ids->uid = pw->pw_uid;
			ids->gid = pw->pw_gid;
			ids->set_gid = true;
			snprintf(ids->name, sizeof(ids->name), "%s",
				 pw->pw_name);
		} else {
			ids->uid = (uid_t)v;
		}
	}
	if (group) {
		struct group *gr = getgrnam(group);

		if (gr) {
			ids->gid = gr->gr_gid;
		} else if (!parse_id(group, &v)) {
			ids->gid = (gid_t)v;
		} else {
			fprintf(stderr, "mqblkd: -g %s: no such group\n",
				group);
			return -1;
		}
		ids->set_gid = true;
	}
	return 0;
}

int mqblkd_drop_privileges(const struct mqblkd_ids *ids)
{
	if (!ids->set_uid && !ids->set_gid)
		return 0;
	/*
	 * Supplementary groups first (root's would stay otherwise): the
	 * user's own from the group database, or none but GROUP.
	 */
	if (ids->set_uid && ids->name[0] ? initgroups(ids->name, ids->gid)
					 : setgroups(1, &ids->gid)) {
		log_err("-u/-g: cannot set the supplementary groups: %s",
			strerror(errno));
		return -1;
	}
	if (ids->set_gid && setgid(ids->gid)) {
		log_err("-g: setgid(%u): %s", (unsigned int)ids->gid,
			strerror(errno));
		return -1;
	}
	if (ids->set_uid && setuid(ids->uid)) {
		log_err("-u: setuid(%u): %s", (unsigned int)ids->uid,
			strerror(errno));
		return -1;
	}
	/* Dropped for good: root cannot be had back. */
	if (ids->set_uid && ids->uid != 0 && (!setuid(0) || !seteuid(0))) {
		log_err("-u: root could be regained after setuid(%u)",
			(unsigned int)ids->uid);
		return -1;
	}
	return 0;
}
