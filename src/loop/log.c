/*
 * log.c - conntrackd-style log lines to stderr, a file and/or syslog; to
 * the journal's stderr stream, lines with the journal's priority prefix.
 */
#include "loop/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static struct {
	FILE *file;
	char path[256];
	bool to_stderr;
	bool to_syslog;
	bool stderr_is_journal;
	bool debug;
} sink = { .to_stderr = true };

static const char *const level_tag[] = {
	[LOG_LEVEL_ERROR] = "ERROR",
	[LOG_LEVEL_WARNING] = "WARNING",
	[LOG_LEVEL_NOTICE] = "notice",
	[LOG_LEVEL_DEBUG] = "debug",
};

static const int level_syslog[] = {
	[LOG_LEVEL_ERROR] = LOG_ERR,
	[LOG_LEVEL_WARNING] = LOG_WARNING,
	[LOG_LEVEL_NOTICE] = LOG_NOTICE,
	[LOG_LEVEL_DEBUG] = LOG_DEBUG,
};

static FILE *open_append(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "a");
	if (!f) {
		close(fd);
		return NULL;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	return f;
}

/*
 * systemd names the stream it connected to stderr in JOURNAL_STREAM
 * ("device:inode"); a stderr that is another file (redirected by a child's
 * shell, say) keeps the plain format.
 */
static bool stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int used = 0;

	if (!env || sscanf(env, "%llu:%llu%n", &dev, &ino, &used) != 2 || env[used] != '\0')
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

int log_open(const char *ident, const char *logfile, int syslog_facility, bool to_stderr)
{
	const char *dbg = getenv("CTSYNCD_DEBUG");

	sink.debug = dbg && strcmp(dbg, "0") != 0 && *dbg;
	sink.to_stderr = to_stderr;
	sink.stderr_is_journal = stderr_is_journal();
	if (syslog_facility >= 0) {
		openlog(ident, LOG_PID, syslog_facility);
		sink.to_syslog = true;
	}
	if (logfile && *logfile) {
		snprintf(sink.path, sizeof(sink.path), "%s", logfile);
		sink.file = open_append(logfile);
		if (!sink.file) {
			int err = errno;

			sink.path[0] = '\0';
			sink.to_stderr = true;
			return -err;
		}
	}
	return 0;
}

void log_detach_stderr(void)
{
	sink.to_stderr = false;
}

int log_reopen(void)
{
	FILE *f;

	if (!sink.path[0])
		return 0;
	f = open_append(sink.path);
	if (!f)
		return -errno;
	if (sink.file)
		fclose(sink.file);
	sink.file = f;
	return 0;
}

void log_close(void)
{
	if (sink.file)
		fclose(sink.file);
	sink.file = NULL;
	sink.path[0] = '\0';
	if (sink.to_syslog)
		closelog();
	sink.to_syslog = false;
	sink.to_stderr = true;
	sink.stderr_is_journal = false;
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char text[1024], stamp[32];
	time_t now;

	if (level == LOG_LEVEL_DEBUG && !sink.debug)
		return;
	vsnprintf(text, sizeof(text), fmt, ap);
	now = time(NULL);
	ctime_r(&now, stamp);
	stamp[strcspn(stamp, "\n")] = '\0';

	/*
	 * The journal stamps each line with the time and pid itself and takes
	 * "<N>" as its priority.  With syslog on, the syslog copy reaches the
	 * journal already, with the configured facility, so stderr stays quiet.
	 */
	if (sink.to_stderr && sink.stderr_is_journal) {
		if (!sink.to_syslog)
			fprintf(stderr, "<%d>%s\n", level_syslog[level], text);
	} else if (sink.to_stderr) {
		fprintf(stderr, "[%s] (pid=%d) [%s] %s\n", stamp, (int)getpid(), level_tag[level], text);
	}
	if (sink.file)
		fprintf(sink.file, "[%s] (pid=%d) [%s] %s\n", stamp, (int)getpid(), level_tag[level], text);
	if (sink.to_syslog)
		syslog(level_syslog[level], "%s", text);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
