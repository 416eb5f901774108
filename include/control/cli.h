/*
 * control/cli.h - the command line of ctsyncd, compatible with conntrackd 1.4.7
 * (ctsyncd(8), OPTIONS), plus a few long options of our own.
 *
 * cli_parse() is pure: it reads argv and fills a struct cli_options; it
 * prints nothing and never exits.  The caller prints `message` (an error
 * when action is CLI_USAGE_ERROR, otherwise a warning if non-empty), the
 * usage text when `show_usage` is set, and exits with `exit_status` for
 * CLI_HELP, CLI_VERSION and CLI_USAGE_ERROR.
 *
 * Compatibility notes (upstream behaviour we keep on purpose):
 *  - Only the second character of a dashed word is looked at, so "-stats"
 *    is "-s" and "-dx" is "-d".
 *  - A sub-argument is the next word unless it starts with '-'; it is
 *    matched as a prefix of the known words in table order ("-s c" is
 *    cache, not ct; "-s r" is runtime).  An empty word is a prefix of
 *    everything and so selects the first word ("-f ''" = internal).
 *  - An unknown word after -s or -f is an error; after -c, -i, -e, -F or
 *    -R it is ignored (we consume it, use the default request, and leave
 *    a warning in `message`).
 *  - An unknown option letter is a usage error with exit status 0.
 *  - The first error wins: "-z -s bogus" exits 0, "-s bogus -z" exits 1.
 *  - -h and -v act at once, ignoring the rest of the line.
 *
 * Deliberate differences from conntrackd 1.4.7:
 *  - Two different requests on one line ("-s -k") are a usage error
 *    (upstream silently kept the last one).  Repeating the same request
 *    ("-s -s") is accepted.
 *  - A word that does not start with '-' and is not a sub-argument is a
 *    usage error with exit status 1 (upstream read its second character
 *    as an option letter, so "stats" meant -t).
 *  - Long options (--help, --version, --json, --prometheus, --verbose, --check, ...) are ours; an
 *    unknown long option exits 1, so a typo in "--check" cannot pass for
 *    a valid configuration.
 */
#ifndef CTSYNCD_CLI_H
#define CTSYNCD_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "control/proto.h"

enum cli_action {
	CLI_DAEMON,          /* run the daemon (in the foreground unless daemonize) */
	CLI_CLIENT_REQUEST,  /* send `request` to a running daemon */
	CLI_CHECK_CONFIG,    /* --check: validate config_path, print it, exit 0/1 */
	CLI_HELP,            /* print cli_usage(stdout), exit 0 */
	CLI_VERSION,         /* print the version, exit 0 */
	CLI_GENKEY,          /* --genkey: print a new random sync key, exit 0 */
	CLI_USAGE_ERROR,     /* print message (and usage if show_usage), exit exit_status */
};

#define CLI_MESSAGE_MAX 256

struct cli_options {
	enum cli_action action;
	bool daemonize;              /* -d */
	bool config_given;           /* -C was on the line */
	const char *config_path;     /* points into argv, or CONFIG_DEFAULT_PATH */
	/*
	 * CLI_CLIENT_REQUEST only: an enum ctl_request code, with CTL_FLAG_JSON
	 * ORed in for "-s ... --json" (CTL_FLAG_PROMETHEUS for "--prometheus",
	 * CTL_FLAG_VERBOSE for "--verbose"; never two of them).
	 * CTL_FLAG_STATUS is left to the client (ctl_client_request() sets it).
	 */
	uint32_t request;
	bool json;                   /* --json was given (and is valid) */
	/*
	 * CLI_CHECK_CONFIG only: --check-configured, the systemd unit's
	 * ExecCondition (a file with nothing to run skips the service).
	 */
	bool check_configured;
	bool prometheus;             /* --prometheus was given (and is valid) */
	bool verbose;                /* --verbose was given (and is valid): CTL_FLAG_VERBOSE */
	bool has_origin;             /* --origin: the request takes one peer's states */
	struct ctl_origin origin;
	bool show_usage;             /* the caller should print cli_usage(stderr) */
	int exit_status;             /* for CLI_HELP, CLI_VERSION, CLI_USAGE_ERROR */
	char message[CLI_MESSAGE_MAX]; /* error or warning, "" if none; quotes the bad word */
};

/*
 * Parse argv[1..argc-1].  Returns 0, or -EINVAL for CLI_USAGE_ERROR (the
 * options are filled in either case).  Pointers in `opts` point into argv.
 */
int cli_parse(int argc, char *const argv[], struct cli_options *opts);

/* The usage text, generated from the same table the parser reads. */
void cli_usage(FILE *out);

#endif
