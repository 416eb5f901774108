/*
 * config/diff.h - what a reload would change, option by option.
 *
 * One table (src/config/diff.c) lists every option of the grammar with
 * whether a running daemon applies a change of it (live) or keeps its old
 * value until a restart, and which step applies it.  The reload
 * (src/daemon/reload.c) and `ctsyncd -C FILE --check` against a running
 * daemon both use it, so the two cannot disagree.  Pure: no system call.
 */
#ifndef CTSYNCD_CONFIG_DIFF_H
#define CTSYNCD_CONFIG_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

enum config_when {
	CONFIG_LIVE,        /* a reload applies it */
	CONFIG_RESTART,     /* a reload keeps the old value; a restart takes the new one */
};

/*
 * The steps that apply live options, as bits: the reload runs each step
 * that one of the changed options names, once, after the values are in
 * the running configuration.  CONFIG_APPLY_NONE: the option is read where
 * it is used, so the new value counts from then on.
 */
enum config_apply {
	CONFIG_APPLY_NONE       = 0,
	CONFIG_APPLY_LOG        = 1u << 0,  /* General LogFile, Syslog: the log sinks */
	CONFIG_APPLY_STATS_LOG  = 1u << 1,  /* Stats LogFile, Syslog: the log of destroyed flows */
	CONFIG_APPLY_SCHEDULER  = 1u << 2,  /* Scheduler Type, Priority */
	CONFIG_APPLY_GROUP      = 1u << 3,  /* UNIX Group: the socket's and its directory's group */
	CONFIG_APPLY_LIMITS     = 1u << 4,  /* HashLimit of every table */
	CONFIG_APPLY_FILTER     = 1u << 5,  /* Filter: the user-space filter and the BPF program */
	CONFIG_APPLY_NETLINK    = 1u << 6,  /* the event socket's buffer, growth, reliability, reads */
	CONFIG_APPLY_SYNC       = 1u << 7,  /* the sync engine's queue, window, timers, encoding */
	CONFIG_APPLY_EXPIRY     = 1u << 8,  /* ALARM's CacheTimeout */
	CONFIG_APPLY_WRITER     = 1u << 9,  /* how states are written into the kernel */
	CONFIG_APPLY_KEYS       = 1u << 10, /* the Key files, read again */
	CONFIG_APPLY_LINKS      = 1u << 11, /* the links' read batch (EventIterationLimit) */
};

struct config_option_info;

/* The table: every option of ctsyncd.conf(5), config_option_at(0 .. count - 1). */
unsigned config_option_count(void);
const struct config_option_info *config_option_at(unsigned i);

/* Its name as messages give it ("HashLimit", "Filter Address", "UNIX Path"). */
const char *config_option_name(const struct config_option_info *opt);
enum config_when config_option_when(const struct config_option_info *opt);
unsigned config_option_apply(const struct config_option_info *opt);
/* Why a restart is needed (one clause), or "" for a live option. */
const char *config_option_why(const struct config_option_info *opt);
/* The entry named `name` (as config_option_name() gives it), or NULL. */
const struct config_option_info *config_option_find(const char *name);

#define CONFIG_VALUE_MAX 128

/* One option whose value differs. */
struct config_change {
	const struct config_option_info *opt;
	/*
	 * How this change is classified: mostly the option's own class, but a
	 * Key added where there was none (or all removed) needs a restart.
	 */
	enum config_when when;
	char name[48];                      /* "UDP Port" for a link's option */
	char old_value[CONFIG_VALUE_MAX];   /* as the file would write it; long lists end in "..." */
	char new_value[CONFIG_VALUE_MAX];
};

/*
 * Compare `old` and `new` option by option.  Fills at most `max` entries
 * of `out` in the table's order and returns how many options differ
 * (which may exceed `max`).  Options of a role that one of the two does
 * not have (the Sync options of a Stats daemon) are not compared: the
 * role itself differs, and that needs a restart.
 */
unsigned config_diff(const struct config *old, const struct config *new,
		     struct config_change *out, unsigned max);

/*
 * Put the value of `ch`'s option in `src` into `dst` (a live change being
 * applied).  Lists that the configs own are swapped, not copied, so that
 * config_free(src) releases what `dst` held before; `src` must not be used
 * for anything else afterwards.
 */
void config_take(struct config *dst, struct config *src, const struct config_change *ch);

/* Counts of a diff, for the summary line. */
void config_diff_count(const struct config_change *ch, unsigned n, unsigned *live,
		       unsigned *restart);

#endif
