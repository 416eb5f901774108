/*
 * fuzz_cli.c - libFuzzer harness for the command-line parser.
 *
 * The input is split on NUL bytes into argv[1..] (argv[0] is "ctsyncd").
 * Whatever the words, cli_parse() must return a consistent result: an
 * error carries a message and exit status 0 or 1, a request is a known
 * code, and --json, --prometheus or --verbose (never two of them) only
 * ever rides on a statistics request.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/cli.h"
#include "control/proto.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_ARGS + 2];
	struct cli_options o;
	char *buf, *p, *end;
	int argc = 0, ret, formats;

	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[argc++] = "ctsyncd";
	/* Empty input: no argument at all. */
	for (p = buf, end = buf + size; size > 0 && argc <= MAX_ARGS; p += strlen(p) + 1) {
		argv[argc++] = p;
		if (p + strlen(p) >= end)
			break;
	}
	argv[argc] = NULL;

	ret = cli_parse(argc, argv, &o);

	if (memchr(o.message, '\0', sizeof(o.message)) == NULL)
		abort();
	if (!o.config_path || strlen(o.config_path) >= PATH_MAX)
		abort();
	switch (o.action) {
	case CLI_USAGE_ERROR:
		if (ret != -EINVAL || o.message[0] == '\0')
			abort();
		/* 3 (UNKNOWN): a usage error of -s health, as a monitoring plugin reports it. */
		if (o.exit_status != 0 && o.exit_status != 1 && o.exit_status != 3)
			abort();
		break;
	case CLI_CLIENT_REQUEST:
		if (ret != 0)
			abort();
		if ((o.request & ~(CTL_FLAG_JSON | CTL_FLAG_PROMETHEUS | CTL_FLAG_VERBOSE)) >=
		    CTL_REQUEST_MAX)
			abort();
		if (strcmp(ctl_request_name(o.request), "unknown request") == 0)
			abort();
		formats = !!(o.request & CTL_FLAG_JSON) + !!(o.request & CTL_FLAG_PROMETHEUS) +
			  !!(o.request & CTL_FLAG_VERBOSE);
		if (formats > 0 && !ctl_request_is_stats(o.request))
			abort();
		if (formats > 1)
			abort();
		break;
	case CLI_HELP:
	case CLI_VERSION:
	case CLI_GENKEY:
		if (ret != 0 || o.exit_status != 0)
			abort();
		break;
	case CLI_DAEMON:
	case CLI_CHECK_CONFIG:
		if (ret != 0 || o.request != 0)
			abort();
		break;
	default:
		abort();
	}
	free(buf);
	return 0;
}
