/*
 * main.c - one binary: the daemon, or a client of it when given a request
 * flag (as conntrackd), or a configuration checker (--check).
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/cli.h"
#include "control/client.h"
#include "control/health.h"
#include "config/config.h"
#include "config/diff.h"
#include "daemon.h"
#include "envelope/envelope.h"
#include "keyfile.h"

static void print_version(void)
{
	printf("ctsyncd %s (%s), conntrack state replication; speaks conntrackd 1.4.7's protocol\n",
	       PACKAGE_VERSION,
#ifdef HAVE_SYSTEMD
	       "+systemd"
#else
	       "-systemd"
#endif
	);
}

static void print_config_error(const struct config_error *e, const char *kind)
{
	if (e->line)
		fprintf(stderr, "%s:%u:%u: %s%s\n", e->file, e->line, e->column, kind, e->message);
	else
		fprintf(stderr, "%s: %s%s\n", e->file, kind, e->message);
}

static void on_config_warning(void *arg, const struct config_error *w)
{
	print_config_error(w, "warning: ");
}

/* --genkey: as `wg genkey`, one line to store in the Key file of both nodes. */
static int print_new_key(void)
{
	uint8_t key[ENVELOPE_KEY_BYTES];
	char text[ENVELOPE_KEY_TEXT];
	int rc = 0;

	if (sodium_init() < 0) {
		fprintf(stderr, "ctsyncd: libsodium cannot start: no key made\n");
		return 1;
	}
	randombytes_buf(key, sizeof(key));
	envelope_key_format(key, text);
	if (printf("%s\n", text) < 0 || fflush(stdout) != 0) {
		perror("ctsyncd: --genkey");
		rc = 1;
	}
	sodium_memzero(key, sizeof(key));
	sodium_memzero(text, sizeof(text));
	return rc;
}

/* --check reads the key files too: a key the daemon would refuse fails the check. */
static int check_keys(const struct config *cfg)
{
	uint8_t keys[ENVELOPE_KEYS_MAX][ENVELOPE_KEY_BYTES];
	char why[512];
	int n;

	if (cfg->sync.nkeys == 0)
		return 0;
	if (sodium_init() < 0) {
		fprintf(stderr, "%s: libsodium cannot start; the Key cannot be checked\n", cfg->path);
		return -1;
	}
	n = keyfile_read_all(&cfg->sync, keys, why, sizeof(why));
	sodium_memzero(keys, sizeof(keys));
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", cfg->path, why);
		return -1;
	}
	return 0;
}

/* The reply of a request, read whole into memory (a memfd: no size limit, no temporary file). */
static char *request_text(const char *socket_path, uint32_t code, enum ctl_status *status, size_t *len,
			  char *err, size_t errlen)
{
	int fd = memfd_create("ctsyncd-reply", MFD_CLOEXEC);
	struct stat st;
	char *text = NULL;
	int r;

	if (fd < 0) {
		snprintf(err, errlen, "cannot make a buffer for the reply: %s", strerror(errno));
		return NULL;
	}
	r = ctl_client_request_ex(socket_path, code, fd, status, CTL_CLIENT_TIMEOUT_MS, err, errlen);
	if (r == 0 && fstat(fd, &st) == 0 && (text = malloc((size_t)st.st_size + 1)) &&
	    pread(fd, text, (size_t)st.st_size, 0) == st.st_size) {
		text[st.st_size] = '\0';
		*len = (size_t)st.st_size;
	} else if (r == 0) {
		snprintf(err, errlen, "cannot read the reply back: %s", strerror(errno ? errno : ENOMEM));
		free(text);
		text = NULL;
	}
	close(fd);
	return text;
}

/*
 * --check, second half: ask the daemon behind the file's control socket
 * for the configuration in effect, and say what a reload of the file would
 * change (the same diff as the reload itself).  Only informative: the
 * exit status is the file's validity.
 */
static void check_against_daemon(const struct config *file)
{
	unsigned max = config_option_count(), n, live, restart;
	struct config_change *ch = calloc(max, sizeof(*ch));
	enum ctl_status status = CTL_STATUS_FAILED;
	struct config running;
	struct config_error cerr;
	char err[512] = "", *text;
	size_t len = 0;

	if (!ch)
		return;
	text = request_text(file->general.unix_path, CTL_DUMP_CONFIG, &status, &len, err, sizeof(err));
	if (!text) {
		fprintf(stderr, "ctsyncd: no daemon answered on %s (%s); nothing to compare with\n",
			file->general.unix_path, err);
		free(ch);
		return;
	}
	if (status != CTL_STATUS_OK) {
		fprintf(stderr, "ctsyncd: the daemon on %s did not give its configuration (%s): %s",
			file->general.unix_path, ctl_status_name(status), text);
		free(text);
		free(ch);
		return;
	}
	if (config_parse_buffer(&running, "the running configuration", text, len, &cerr, NULL, NULL) < 0) {
		fprintf(stderr, "ctsyncd: the configuration of the daemon on %s cannot be read: %u:%u: %s\n",
			file->general.unix_path, cerr.line, cerr.column, cerr.message);
		free(text);
		free(ch);
		return;
	}
	free(text);
	n = config_diff(&running, file, ch, max);
	config_diff_count(ch, n, &live, &restart);
	if (n == 0)
		fprintf(stderr, "ctsyncd: the daemon on %s runs with this configuration; a reload "
			"would change nothing\n", file->general.unix_path);
	else
		fprintf(stderr, "ctsyncd: a reload of the daemon on %s would apply %u option%s live; "
			"%u need%s a restart:\n", file->general.unix_path, live, live == 1 ? "" : "s",
			restart, restart == 1 ? "s" : "");
	for (unsigned i = 0; i < n; i++) {
		if (ch[i].when == CONFIG_LIVE)
			fprintf(stderr, "  live:    %s: %s -> %s\n", ch[i].name, ch[i].old_value,
				ch[i].new_value);
		else
			fprintf(stderr, "  restart: %s: %s -> %s (a reload keeps %s)\n", ch[i].name,
				ch[i].old_value, ch[i].new_value, ch[i].old_value);
	}
	if (running.sync.nkeys && file->sync.nkeys)
		fprintf(stderr, "  (the Key files are read again by every reload)\n");
	config_free(&running);
	free(ch);
}

/*
 * --check-configured, for the unit's ExecCondition: systemd skips the
 * service (not failed) on 1..254 and fails it on 255.  So a shipped file
 * that runs nothing yet is 1, and a broken file stays a loud failure.
 */
#define EXIT_NOT_CONFIGURED 1
#define EXIT_INVALID 255

static int check_configured(const char *path)
{
	struct config cfg;
	struct config_error err;
	int rc = 0;

	if (config_parse_file(&cfg, path, &err, on_config_warning, NULL) < 0) {
		print_config_error(&err, "");
		return EXIT_INVALID;
	}
	if (cfg.role == CONFIG_ROLE_NONE) {
		fprintf(stderr, "ctsyncd: %s has no Sync or Stats block: nothing to run until one is "
			"configured (see ctsyncd.conf(5))\n", cfg.path);
		rc = EXIT_NOT_CONFIGURED;
	} else if (check_keys(&cfg) < 0) {
		rc = EXIT_INVALID;
	}
	config_free(&cfg);
	return rc;
}

/*
 * -k found no daemon behind a socket file that is still there: a daemon
 * killed with SIGKILL left it.  If nobody holds the lock file either (a
 * daemon holds it from before its socket exists until after it is gone),
 * the socket is stale and goes, so that what tests for the file, such as
 * Pacemaker's ocf:heartbeat:conntrackd monitor, sees the daemon stopped
 * rather than failed.  The exit status stays 1, as 1.4.7's: nothing was
 * killed.
 */
static void remove_stale_socket(const struct config *cfg)
{
	const char *sock = cfg->general.unix_path;
	struct stat st;
	int fd;

	if (lstat(sock, &st) < 0 || !S_ISSOCK(st.st_mode))
		return;
	fd = open(cfg->general.lockfile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		bool held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;

		close(fd);
		if (held)
			return;
	} else if (errno != ENOENT) {
		return;
	}
	if (unlink(sock) == 0)
		fprintf(stderr, "ctsyncd: no daemon runs (lock file %s not held); removed its stale socket %s\n",
			cfg->general.lockfile, sock);
}

static int run_client(const struct config *cfg, uint32_t request, const struct ctl_origin *origin)
{
	enum ctl_status status = CTL_STATUS_FAILED;
	int ret = ctl_client_request_origin(cfg->general.unix_path, request, origin, STDOUT_FILENO,
					    &status);

	if (ret == -ECONNREFUSED && request == CTL_KILL)
		remove_stale_socket(cfg);
	if (ret < 0)
		return 1;
	return status == CTL_STATUS_OK ? 0 : 1;
}

/*
 * -s health, as a monitoring plugin: one line on stdout, and the exit code
 * its state says; whatever keeps us from an answer is UNKNOWN (3).
 */
static int health_unknown(const char *why)
{
	printf("CTSYNCD UNKNOWN - %s\n", why);
	return HEALTH_UNKNOWN;
}

static int run_health(const struct config *cfg)
{
	enum ctl_status status = CTL_STATUS_FAILED;
	char answer[HEALTH_LINE_MAX + 1], err[512];
	size_t len = 0;
	int state;

	if (ctl_client_request_buf(cfg->general.unix_path, CTL_STATS_HEALTH, answer, sizeof(answer),
				   &len, &status, CTL_CLIENT_TIMEOUT_MS, err, sizeof(err)) < 0)
		return health_unknown(err);
	if (status != CTL_STATUS_OK) {
		/* "not available" and the like: the daemon's one-line reason, without its newline. */
		answer[strcspn(answer, "\n")] = '\0';
		return health_unknown(answer[0] ? answer : ctl_status_name(status));
	}
	state = health_parse_answer(answer, len);
	if (state < 0)
		return health_unknown("the daemon's answer to -s health is not a health line "
				      "(not ctsyncd, or another version?)");
	fwrite(answer, 1, len, stdout);
	return state;
}

int main(int argc, char *argv[])
{
	struct cli_options opts;
	struct config cfg;
	struct config_error err;
	int rc;

	cli_parse(argc, argv, &opts);
	switch (opts.action) {
	case CLI_HELP:
		cli_usage(stdout);
		return opts.exit_status;
	case CLI_VERSION:
		print_version();
		return opts.exit_status;
	case CLI_GENKEY:
		return print_new_key();
	case CLI_USAGE_ERROR:
		if (opts.message[0])
			fprintf(stderr, "ctsyncd: %s\n", opts.message);
		if (opts.show_usage)
			cli_usage(stderr);
		return opts.exit_status;
	case CLI_DAEMON:
	case CLI_CLIENT_REQUEST:
	case CLI_CHECK_CONFIG:
		break;
	}
	if (opts.message[0])
		fprintf(stderr, "ctsyncd: warning: %s\n", opts.message);
	if (opts.action == CLI_CHECK_CONFIG && opts.check_configured)
		return check_configured(opts.config_path);

	if (config_parse_file(&cfg, opts.config_path, &err, on_config_warning, NULL) < 0) {
		print_config_error(&err, "");
		if (opts.action == CLI_CLIENT_REQUEST && opts.request == CTL_STATS_HEALTH)
			return health_unknown("the configuration cannot be read (the reason is on stderr)");
		return 1;
	}
	switch (opts.action) {
	case CLI_CHECK_CONFIG:
		if (check_keys(&cfg) < 0) {
			rc = 1;
			break;
		}
		config_print(&cfg, stdout);
		fflush(stdout);
		fprintf(stderr, "ctsyncd: %s is valid\n", cfg.path);
		check_against_daemon(&cfg);
		rc = 0;
		break;
	case CLI_CLIENT_REQUEST:
		if (opts.request == CTL_STATS_HEALTH)
			rc = run_health(&cfg);
		else
			rc = run_client(&cfg, opts.request, opts.has_origin ? &opts.origin : NULL);
		break;
	default:
		rc = daemon_run(&cfg, opts.daemonize);
		break;
	}
	config_free(&cfg);
	return rc;
}
