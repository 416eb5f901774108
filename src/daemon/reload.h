/*
 * reload.h - SIGHUP: read the configuration file again, and apply to the
 * running daemon every option that can change live (config/diff.h).
 */
#ifndef CTSYNCD_RELOAD_H
#define CTSYNCD_RELOAD_H

#include <stdbool.h>

struct cache;
struct config;
struct control_server;
struct replication;

/* What a reload changes: the running configuration, in place, and the modules made from it. */
struct reload_ctx {
	struct config *running;     /* every module reads this one; it never moves */
	const char *path;           /* the file, as an absolute path */
	bool log_to_stderr;         /* the log keeps stderr as a sink (not detached) */
	struct cache *cache;        /* NULL without Sync or Stats */
	struct replication *replication; /* NULL without Sync */
	struct control_server *ctl;
};

/*
 * Parse and validate the file into a new configuration.  On any error
 * (the file, a Key file) log it as file:line:column and keep everything
 * as it is.  Otherwise, option by option: a live one is put into the
 * running configuration and applied, a restart-only one is logged with
 * its old and new value and kept; then one summary line.  The caches and
 * the peer sessions stay.
 */
void reload_run(const struct reload_ctx *x);

/* Scheduler Type and Priority, at start and on reload; a failure is only a warning. */
void reload_apply_scheduler(const struct config *cfg);

#endif
