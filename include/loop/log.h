/*
 * loop/log.h - logging in conntrackd's line format:
 *   [Sun Nov 22 06:35:12 2026] (pid=1234) [ERROR] text
 * to stderr (before daemonizing, or in the foreground), to a log file
 * and/or to syslog, as the configuration says.  When stderr is the
 * journal (systemd's JOURNAL_STREAM names it), a stderr line is "<N>text",
 * N the syslog priority, and with syslog on it is left out, since the
 * syslog copy reaches the journal too.
 */
#ifndef CTSYNCD_LOG_H
#define CTSYNCD_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum log_level {
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARNING,
	LOG_LEVEL_NOTICE,
	LOG_LEVEL_DEBUG,    /* only with CTSYNCD_DEBUG=1 in the environment */
};

/*
 * Open the configured sinks.  `logfile` "" = none; `syslog_facility` -1 =
 * none; `to_stderr` keeps stderr as a sink.  Returns 0 or -errno (the file
 * could not be opened), in which case stderr stays the only sink.
 */
int log_open(const char *ident, const char *logfile, int syslog_facility, bool to_stderr);
/* Stop writing to stderr (after daemonizing). */
void log_detach_stderr(void);
/* Re-open the log file (after rotation: SIGHUP). */
int log_reopen(void);
void log_close(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list ap);

#define log_error(...)   log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...)  log_msg(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_debug(...)   log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
