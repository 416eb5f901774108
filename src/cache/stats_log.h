/*
 * stats_log.h - Stats mode's log of destroyed flows (Stats { LogFile ...
 * Syslog ... }): one line per flow, as conntrackd 1.4.7 writes it: the
 * date, a tab, and the flow in conntrack's format with its packet and byte
 * counters.
 */
#ifndef CTSYNCD_STATS_LOG_H
#define CTSYNCD_STATS_LOG_H

#include <stdint.h>

struct config_stats;
struct flow_full;
struct loop;
struct stats_log;

/*
 * Open the file (appending) and/or prepare syslog.  0 and *out (NULL when
 * the configuration logs nowhere), or -errno (the file cannot be opened).
 */
int stats_log_open(struct stats_log **out, const struct config_stats *cfg, struct loop *loop);
/* One destroyed flow.  Written through a buffer flushed within 200 ms. */
void stats_log_flow(struct stats_log *s, const struct flow_full *ff);
/* SIGHUP: reopen the file (after a rotation).  0 or -errno; the old file is kept on error. */
int stats_log_reopen(struct stats_log *s);
/* Flush and close. */
void stats_log_free(struct stats_log *s);

#endif
