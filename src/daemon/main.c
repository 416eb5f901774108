/*
 * main.c - one binary: the daemon, or a client of it when given a request
 * flag (as conntrackd), or a configuration checker (--check).
 */
#include "build-config.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/cli.h"
#include "control/client.h"
#include "config/config.h"
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

static int run_client(const struct config *cfg, uint32_t request)
{
	enum ctl_status status = CTL_STATUS_FAILED;

	if (ctl_client_request(cfg->general.unix_path, request, STDOUT_FILENO, &status) < 0)
		return 1;
	return status == CTL_STATUS_OK ? 0 : 1;
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
		return 1;
	}
	switch (opts.action) {
	case CLI_CHECK_CONFIG:
		if (check_keys(&cfg) < 0) {
			rc = 1;
			break;
		}
		config_print(&cfg, stdout);
		fprintf(stderr, "ctsyncd: %s is valid\n", cfg.path);
		rc = 0;
		break;
	case CLI_CLIENT_REQUEST:
		rc = run_client(&cfg, opts.request);
		break;
	default:
		rc = daemon_run(&cfg, opts.daemonize);
		break;
	}
	config_free(&cfg);
	return rc;
}
