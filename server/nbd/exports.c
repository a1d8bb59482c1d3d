// SPDX-License-Identifier: GPL-2.0
/*
 * mqblkd's export table.  server/exports builds it from the keys, the
 * INI file or the demo rack, as it does for every front end; here it is
 * served: devices are refcounted by the table and by connections, and
 * with -c FILE the table is built again on SIGHUP (nbd_exports_reload).
 *
 * Devices get one software queue per event loop.
 *
 * A table is never changed once handshakes can see it: a reload builds
 * a new one (keeping the devices of unchanged sections) and swaps the
 * pointer under srv->exports_lock, which a handshake takes only to look
 * a name up and take a reference (nbd-server and nbdkit keep a
 * connection's export alive the same way, by reference, not by lock).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqblkd.h"
#include "server/ctl/ctl.h"

_Static_assert(offsetof(struct nbd_dev, ed) == 0,
	       "server/exports frees a device by its mq_export_dev");

static inline struct nbd_dev *to_nbd_dev(struct mq_export_dev *ed)
{
	return (struct nbd_dev *)ed;
}

/* Lines of server/exports: logged (and escaped on their way out). */
static void exports_err(const char *line)
{
	log_err("%s", line);
}

static void exports_info(const char *line)
{
	log_info("%s", line);
}

static struct mq_exports_cfg exports_cfg(const struct mqblkd_config *cfg)
{
	return (struct mq_exports_cfg){
		.config_file = cfg->config_file,
		.args = cfg->args,
		.nr_args = cfg->nr_args,
		.readonly = cfg->readonly,
		.nr_ctx = cfg->threads,
		.err = exports_err,
		.info = exports_info,
		.dev_size = sizeof(struct nbd_dev),
	};
}

/* A device just made holds the reference its table will own. */
static void dev_init(struct mq_export_dev *ed)
{
	atomic_init(&to_nbd_dev(ed)->refs, 1);
}

static void dev_put(struct nbd_server *srv, struct nbd_dev *d)
{
	if (atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	pthread_mutex_lock(&srv->dead_lock);
	d->next_dead = srv->dead;
	srv->dead = d;
	pthread_mutex_unlock(&srv->dead_lock);
	if (srv->main_ev)
		ev_async_send(srv->main_ev, &srv->reaper);
}

int nbd_exports_build(const struct mqblkd_config *cfg, struct mq_exports *ex)
{
	const struct mq_exports_cfg ecfg = exports_cfg(cfg);
	unsigned int i;

	if (mq_exports_build(&ecfg, ex))
		return -1;
	for (i = 0; i < ex->nr_devs; i++)
		dev_init(ex->devs[i]);
	return 0;
}

void nbd_exports_destroy(struct nbd_server *srv, struct mq_exports *ex)
{
	unsigned int i;

	for (i = 0; i < ex->nr_devs; i++)
		dev_put(srv, to_nbd_dev(ex->devs[i]));
	mq_exports_release(ex);
}

int nbd_exports_sync(struct mq_exports *ex)
{
	return mq_exports_sync(ex, exports_err);
}

/* ---- what handshakes see ------------------------------------------ */

const struct mq_export *nbd_export_get(struct nbd_server *srv, const char *name,
				       size_t len)
{
	const struct mq_export *e;

	pthread_mutex_lock(&srv->exports_lock);
	e = mq_export_find(srv->exports, name, len);
	if (e)
		atomic_fetch_add(&to_nbd_dev(e->owner)->refs, 1);
	pthread_mutex_unlock(&srv->exports_lock);
	return e;
}

void nbd_export_put(struct nbd_server *srv, const struct mq_export *e)
{
	if (e)
		dev_put(srv, to_nbd_dev(e->owner));
}

void nbd_export_names(struct nbd_server *srv, char *buf, size_t len)
{
	pthread_mutex_lock(&srv->exports_lock);
	mq_export_names(srv->exports, buf, len);
	pthread_mutex_unlock(&srv->exports_lock);
}

unsigned int nbd_exports_count(struct nbd_server *srv)
{
	unsigned int n;

	pthread_mutex_lock(&srv->exports_lock);
	n = srv->exports->nr;
	pthread_mutex_unlock(&srv->exports_lock);
	return n;
}

int nbd_exports_each(struct nbd_server *srv,
		     int (*fn)(void *arg, const struct mq_export *e), void *arg)
{
	unsigned int i;
	int r = 0;

	pthread_mutex_lock(&srv->exports_lock);
	for (i = 0; !r && i < srv->exports->nr; i++)
		r = fn(arg, srv->exports->v[i]);
	pthread_mutex_unlock(&srv->exports_lock);
	return r;
}

/* ---- the server's table -------------------------------------------- */

int nbd_server_init(struct nbd_server *srv, const struct mqblkd_config *cfg,
		    struct mq_exports *ex)
{
	memset(srv, 0, sizeof(*srv));
	srv->rl_unknown_export = (struct mqblkd_ratelimit)MQBLKD_RATELIMIT_INIT;
	srv->cfg = cfg;
	srv->exports = malloc(sizeof(*srv->exports));
	if (!srv->exports || pthread_mutex_init(&srv->exports_lock, NULL)) {
		free(srv->exports);
		srv->exports = NULL;
		mq_exports_destroy(ex);
		log_err("out of memory");
		return -1;
	}
	if (pthread_mutex_init(&srv->dead_lock, NULL)) {
		pthread_mutex_destroy(&srv->exports_lock);
		free(srv->exports);
		srv->exports = NULL;
		mq_exports_destroy(ex);
		log_err("out of memory");
		return -1;
	}
	*srv->exports = *ex;
	memset(ex, 0, sizeof(*ex));
	return 0;
}

void nbd_server_fini(struct nbd_server *srv)
{
	if (!srv->exports)
		return;
	nbd_exports_destroy(srv, srv->exports);
	free(srv->exports);
	srv->exports = NULL;
	nbd_exports_reap(srv);
	pthread_mutex_destroy(&srv->dead_lock);
	pthread_mutex_destroy(&srv->exports_lock);
}

/* The device went with its last reference: out of the tree, flushed. */
static void dev_retire(struct nbd_server *srv, struct nbd_dev *d)
{
	struct nbd_dev **pp;
	unsigned int i;
	int r;

	if (srv->ctl) {
		for (i = 0; i < d->ed.nr; i++)
			ctl_server_remove(srv->ctl, d->ed.v[i].name);
		for (i = 0; i < d->ed.nr_internal; i++)
			ctl_server_remove(srv->ctl, d->ed.internal[i].name);
	}
	if (d->dropped) {
		for (pp = &srv->dropped; *pp; pp = &(*pp)->next_dropped)
			if (*pp == d) {
				*pp = d->next_dropped;
				break;
			}
		r = mq_device_sync(d->ed.dev);
		if (r)
			log_err("[%s]: sync failed: %s", d->ed.section,
				strerror(r < 0 ? -r : r));
		mqblkd_log_notice("[%s]: removed, and no connection left: "
				  "device destroyed",
				  d->ed.section);
	}
	mq_export_dev_free(&d->ed);
}

void nbd_exports_reap(struct nbd_server *srv)
{
	struct nbd_dev *d, *next;

	pthread_mutex_lock(&srv->dead_lock);
	d = srv->dead;
	srv->dead = NULL;
	pthread_mutex_unlock(&srv->dead_lock);
	for (; d; d = next) {
		next = d->next_dead;
		dev_retire(srv, d);
	}
}

/* ---- reload ---------------------------------------------------------- */

static bool in_table(const struct mq_exports *ex, const struct mq_export_dev *d)
{
	unsigned int i;

	for (i = 0; i < ex->nr_devs; i++)
		if (ex->devs[i] == d)
			return true;
	return false;
}

/* A device of the live table or a removed one still serving, by section. */
static struct nbd_dev *section_dev(const struct nbd_server *srv,
				   const char *name, bool *dropped)
{
	struct nbd_dev *d;
	unsigned int i;

	*dropped = false;
	for (i = 0; i < srv->exports->nr_devs; i++) {
		d = to_nbd_dev(srv->exports->devs[i]);
		if (d->ed.section && !strcmp(d->ed.section, name))
			return d;
	}
	for (d = srv->dropped; d; d = d->next_dropped)
		if (!strcmp(d->ed.section, name)) {
			*dropped = true;
			return d;
		}
	return NULL;
}

/*
 * A disk name of the live table or of a removed device still serving:
 * a new device's disks are named apart from them.
 */
static bool disk_served(void *arg, const char *name)
{
	const struct nbd_server *srv = arg;
	const struct mq_exports *ex = srv->exports;
	const struct nbd_dev *d;
	unsigned int i;

	for (i = 0; i < ex->nr; i++)
		if (!strcmp(ex->v[i]->disk->disk_name, name))
			return true;
	for (d = srv->dropped; d; d = d->next_dropped)
		for (i = 0; i < d->ed.nr; i++)
			if (!strcmp(d->ed.v[i].disk->disk_name, name))
				return true;
	return false;
}

int nbd_exports_reload(struct nbd_server *srv)
{
	const struct mqblkd_config *cfg = srv->cfg;
	struct mq_exports_cfg ecfg = exports_cfg(cfg);
	struct mq_exports *old = srv->exports, *nt;
	struct mq_export_dev **fresh = NULL;
	unsigned int i, nr_fresh = 0, refused = 0, removed = 0;
	char err[NBD_MAX_STRING + 1024];
	struct mq_ini *ini;

	if (!cfg->config_file) {
		mqblkd_log_notice("SIGHUP: nothing to reload: the exports "
				  "come from %s, not from -c FILE",
				  cfg->nr_args ? "the command line" : "--demo");
		return 0;
	}
	if (mq_ini_load(cfg->config_file, &ini, err, sizeof(err))) {
		log_err("reload: %s: nothing changed", err);
		return -1;
	}
	ecfg.disk_taken = disk_served;
	ecfg.arg = srv;
	nt = calloc(1, sizeof(*nt));
	fresh = calloc(mq_ini_nr(ini), sizeof(*fresh));
	if (!nt || !fresh) {
		log_err("reload: out of memory: nothing changed");
		goto fail;
	}
	for (i = 0; i < mq_ini_nr(ini); i++) {
		const char *name = mq_ini_section(ini, i);
		char where[NBD_MAX_STRING + 64], keys[1024];
		bool dropped;
		struct nbd_dev *d = section_dev(srv, name, &dropped);
		struct mq_export_dev *ed;

		if (d && dropped) {
			log_err("reload: [%s] was removed and still serves "
				"connections: it can come back once they end; "
				"nothing changed",
				name);
			goto fail;
		}
		if (d) {
			mq_export_dev_changed(&d->ed, ini, i, keys,
					      sizeof(keys));
			if (keys[0]) {
				log_warn("reload: [%s] changed (%s): refused, "
					 "it serves on as it was (remove it, "
					 "reload, then add it back)",
					 name, keys);
				refused++;
			}
			atomic_fetch_add(&d->refs, 1);
			if (mq_exports_add(nt, &d->ed, exports_err)) {
				atomic_fetch_sub(&d->refs, 1);
				goto fail_said;
			}
			continue;
		}
		snprintf(where, sizeof(where), "reload: %s: [%s]",
			 cfg->config_file, name);
		/* On failure a device made is in nt, and freed with it. */
		if (mq_exports_add_section(&ecfg, nt, ini, i, where, &ed))
			goto fail_said;
		dev_init(ed);
		fresh[nr_fresh++] = ed;
	}
	if (srv->ctl && nr_fresh) {
		unsigned int n;
		struct ctl_export *v = mq_export_devs_ctl(fresh, nr_fresh, &n);
		struct mq_err e;

		if (!v) {
			log_err("reload: out of memory: nothing changed");
			goto fail;
		}
		if (ctl_server_add(srv->ctl, v, n, &e)) {
			free(v);
			log_err("reload: %s: nothing changed", e.msg);
			goto fail;
		}
		free(v);
	}

	/* From here on, handshakes see the new table. */
	pthread_mutex_lock(&srv->exports_lock);
	srv->exports = nt;
	pthread_mutex_unlock(&srv->exports_lock);

	for (i = 0; i < nr_fresh; i++)
		mqblkd_log_notice("reload: [%s] added: %u export%s, first '%s'",
				  fresh[i]->section, fresh[i]->nr,
				  fresh[i]->nr == 1 ? "" : "s",
				  fresh[i]->v[0].name);
	for (i = 0; i < old->nr_devs; i++) {
		struct nbd_dev *d = to_nbd_dev(old->devs[i]);

		if (in_table(nt, &d->ed))
			continue;
		removed++;
		d->dropped = true;
		d->next_dropped = srv->dropped;
		srv->dropped = d;
		mqblkd_log_notice("reload: [%s] removed: not offered any "
				  "more; its device goes with its last "
				  "connection",
				  d->ed.section);
	}
	nbd_exports_destroy(srv, old);
	free(old);
	mqblkd_log_notice("reload: %s: %u added, %u removed, %u refused, "
			  "%u export%s",
			  cfg->config_file, nr_fresh, removed, refused, nt->nr,
			  nt->nr == 1 ? "" : "s");
	free(fresh);
	mq_ini_free(ini);
	return refused ? -1 : 0;

fail_said:
	log_err("reload: %s: nothing changed", cfg->config_file);
fail:
	if (nt) {
		for (i = 0; i < nt->nr_devs; i++)
			if (in_table(old, nt->devs[i]))
				atomic_fetch_sub(&to_nbd_dev(nt->devs[i])->refs,
						 1);
			else
				mq_export_dev_free(nt->devs[i]);
		mq_exports_release(nt);
		free(nt);
	}
	free(fresh);
	mq_ini_free(ini);
	return -1;
}
