/*
 * stats_log.c - Stats mode's log of destroyed flows (see stats_log.h).
 *
 * The file is written through stdio's buffer and flushed by a timer, so a
 * burst of a hundred thousand destroyed flows costs a few write(2) calls,
 * not one each.  A write error is logged once per kind of error and never
 * stops the daemon: the lines are lost, the flows are not.
 */
#include "stats_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "flow/format.h"
#include "loop/log.h"
#include "loop/loop.h"

#define FLUSH_MS 200u
#define FILE_BUFFER (64 * 1024)

struct stats_log {
	const struct config_stats *cfg;
	struct loop_timer *flush_timer;
	FILE *file;
	int last_errno;                 /* of the last failed write, to log each kind once */
	char line[FLOW_FORMAT_MAX + 64];
};

static FILE *open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	FILE *f;

	if (fd < 0)
		return NULL;
	if (!(f = fdopen(fd, "a"))) {
		close(fd);
		return NULL;
	}
	setvbuf(f, NULL, _IOFBF, FILE_BUFFER);
	return f;
}

static void flush(struct stats_log *s)
{
	if (s->file && fflush(s->file) != 0 && errno != s->last_errno) {
		s->last_errno = errno;
		log_error("Stats log %s: cannot write: %s (destroyed flows go unlogged until it works)",
			  s->cfg->logfile, strerror(errno));
	}
	if (s->file)
		clearerr(s->file);
}

static void on_flush_timer(struct loop *loop, struct loop_timer *t, void *arg)
{
	(void)loop;
	(void)t;
	flush(arg);
}

int stats_log_open(struct stats_log **out, const struct config_stats *cfg, struct loop *loop)
{
	struct stats_log *s;

	*out = NULL;
	if (!cfg->logfile[0] && cfg->syslog_facility < 0)
		return 0;
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->cfg = cfg;
	if (cfg->logfile[0] && !(s->file = open_file(cfg->logfile))) {
		int err = -errno;

		free(s);
		return err;
	}
	if (!(s->flush_timer = loop_timer_new(loop, on_flush_timer, s))) {
		stats_log_free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void stats_log_flow(struct stats_log *s, const struct flow_full *ff)
{
	time_t now = time(NULL);
	struct tm tm;
	size_t n;
	int m;

	if (!s)
		return;
	/* The date as ctime(3) writes it, without its newline, then a tab (1.4.7's form). */
	n = strftime(s->line, sizeof(s->line), "%a %b %e %H:%M:%S %Y\t", localtime_r(&now, &tm));
	m = flow_format(s->line + n, sizeof(s->line) - n, ff,
			FLOW_FMT_REPLY | FLOW_FMT_COUNTERS | FLOW_FMT_PLAIN);
	if (m < 0)
		return;
	if ((size_t)m >= sizeof(s->line) - n)
		m = (int)(sizeof(s->line) - n - 1);
	if (s->cfg->syslog_facility >= 0)
		syslog(LOG_MAKEPRI(s->cfg->syslog_facility, LOG_INFO), "%s", s->line + n);
	if (s->file) {
		fwrite(s->line, 1, n + (size_t)m, s->file);
		fputc('\n', s->file);
		if (!loop_timer_armed(s->flush_timer))
			loop_timer_arm(s->flush_timer, FLUSH_MS);
	}
}

int stats_log_reopen(struct stats_log *s)
{
	FILE *f;

	if (!s || !s->file)
		return 0;
	if (!(f = open_file(s->cfg->logfile)))
		return -errno;
	flush(s);
	fclose(s->file);
	s->file = f;
	s->last_errno = 0;
	return 0;
}

void stats_log_free(struct stats_log *s)
{
	if (!s)
		return;
	if (s->file) {
		flush(s);
		fclose(s->file);
	}
	loop_timer_free(s->flush_timer);
	free(s);
}
