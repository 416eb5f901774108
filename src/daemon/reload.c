/*
 * reload.c - SIGHUP: the new file is parsed and validated apart, then the
 * difference to the running configuration is applied option by option
 * (src/config/diff.c says which options can change live and how); a
 * broken file leaves the daemon untouched.
 *
 * Every module keeps a pointer into the running configuration, which
 * stays where it is: a live value is copied into it, and the step that
 * applies it (config_option_apply()) tells the module that holds a copy
 * of it (the tables' limit, the filter, the engine's window...).  A value
 * that a module reads where it uses it needs no step at all.
 */
#include "build-config.h"
#include "reload.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "config/config.h"
#include "config/diff.h"
#include "control/server.h"
#include "loop/log.h"
#include "replication.h"
#include "rundir.h"

void reload_apply_scheduler(const struct config *cfg)
{
	struct sched_param sp = { .sched_priority = cfg->general.sched_priority };
	const char *name = cfg->general.sched_policy == SCHED_FIFO ? "FIFO" : "RR";

	if (sched_setscheduler(0, cfg->general.sched_policy, &sp) < 0)
		log_warning("cannot set scheduler %s with priority %d: %s; running with the default scheduler",
			    name, sp.sched_priority, strerror(errno));
}

static void log_config_error(const struct config_error *e, const char *kind)
{
	if (e->line)
		log_msg(kind[0] ? LOG_LEVEL_WARNING : LOG_LEVEL_ERROR, "%s:%u:%u: %s%s", e->file,
			e->line, e->column, kind, e->message);
	else
		log_msg(kind[0] ? LOG_LEVEL_WARNING : LOG_LEVEL_ERROR, "%s: %s%s", e->file, kind,
			e->message);
}

static void on_warning(void *arg, const struct config_error *w)
{
	(void)arg;
	log_config_error(w, "warning: ");
}

/* LogFile, Syslog: the sinks again; a file that cannot be opened keeps the previous ones. */
static int apply_log(const struct reload_ctx *x, const char *old_file, int old_facility)
{
	struct config_general *g = &x->running->general;
	int err;

	log_close();
	err = log_open("ctsyncd", g->logfile, g->syslog_facility, x->log_to_stderr);
	if (err == 0) {
		log_notice("log: LogFile %s, Syslog %s", g->logfile[0] ? g->logfile : "off",
			   g->syslog_facility >= 0 ? "on" : "off");
		return 0;
	}
	log_close();
	log_open("ctsyncd", old_file, old_facility, x->log_to_stderr);
	log_error("LogFile: cannot open %s: %s; logging goes on to %s", g->logfile, strerror(-err),
		  old_file[0] ? old_file : "the previous sinks");
	snprintf(g->logfile, sizeof(g->logfile), "%s", old_file);
	g->syslog_facility = old_facility;
	return -1;
}

/* UNIX Group: the socket's group and mode, and its directory's when it is ours. */
static int apply_group(const struct reload_ctx *x)
{
	const struct config_general *g = &x->running->general;
	gid_t gid = g->unix_group[0] ? g->unix_gid : CONTROL_NO_GROUP;
	int err = 0;

	if (rundir_holds(CONFIG_RUNTIME_DIR, g->unix_path))
		err = rundir_prepare(CONFIG_RUNTIME_DIR, gid);
	if (err == 0 && x->ctl)
		err = control_server_set_group(x->ctl, gid);
	if (err < 0) {
		log_error("UNIX Group: cannot give the control socket %s to group %s: %s", g->unix_path,
			  g->unix_group[0] ? g->unix_group : "(none)", strerror(-err));
		return -1;
	}
	return 0;
}

static unsigned apply_steps(const struct reload_ctx *x, unsigned apply, const char *old_file,
			    int old_facility)
{
	unsigned failed = 0;

	if (apply & CONFIG_APPLY_LOG)
		failed += apply_log(x, old_file, old_facility) < 0;
	if (apply & CONFIG_APPLY_SCHEDULER)
		reload_apply_scheduler(x->running);
	if (apply & CONFIG_APPLY_GROUP)
		failed += apply_group(x) < 0;
	if (x->cache)
		failed += (unsigned)cache_apply_config(x->cache, apply);
	if (x->replication)
		failed += (unsigned)replication_apply_config(x->replication, apply);
	return failed;
}

void reload_run(const struct reload_ctx *x)
{
	struct config *run = x->running;
	unsigned max = config_option_count(), n, live, restart, apply = 0, failed;
	struct config_change *ch = calloc(max, sizeof(*ch));
	char old_file[CONFIG_PATH_MAX];
	int old_facility = run->general.syslog_facility;
	struct config next;
	struct config_error err;

	if (!ch) {
		log_error("reload of %s failed: out of memory; the running configuration stays", x->path);
		return;
	}
	log_notice("reloading %s (SIGHUP)", x->path);
	if (config_parse_file(&next, x->path, &err, on_warning, NULL) < 0) {
		log_config_error(&err, "");
		log_error("reload of %s failed; the running configuration stays", x->path);
		free(ch);
		return;
	}
	n = config_diff(run, &next, ch, max);
	/*
	 * The Key files are read on every reload, changed or not (a roll may
	 * keep the paths); a bad one refuses the whole reload, like a bad file.
	 */
	if (x->replication && run->sync.nkeys && next.sync.nkeys &&
	    replication_reload_keys(x->replication, &next.sync) < 0) {
		log_error("reload of %s failed; the running configuration stays", x->path);
		config_free(&next);
		free(ch);
		return;
	}
	snprintf(old_file, sizeof(old_file), "%s", run->general.logfile);
	for (unsigned i = 0; i < n; i++) {
		if (ch[i].when == CONFIG_LIVE) {
			log_notice("%s: changed from %s to %s; applied", ch[i].name, ch[i].old_value,
				   ch[i].new_value);
			config_take(run, &next, &ch[i]);
			apply |= config_option_apply(ch[i].opt);
		} else {
			log_warning("%s: changed from %s to %s; needs a restart, keeping %s (%s)",
				    ch[i].name, ch[i].old_value, ch[i].new_value, ch[i].old_value,
				    config_option_why(ch[i].opt)[0] ? config_option_why(ch[i].opt) :
				    "sealing is turned on or off at start only");
		}
	}
	config_free(&next);
	failed = apply_steps(x, apply, old_file, old_facility);
	config_diff_count(ch, n, &live, &restart);
	if (n == 0)
		log_notice("reloaded %s: no option changed", x->path);
	else
		log_notice("reloaded %s: %u option%s applied, %u need%s a restart%s", x->path, live,
			   live == 1 ? "" : "s", restart, restart == 1 ? "s" : "",
			   failed ? " (some could not be applied: see above)" : "");
	free(ch);
}
