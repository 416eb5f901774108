/*
 * check_cli.c - the command line: every option, sub-argument, prefix and
 * error of conntrackd 1.4.7's syntax, and ctsyncd's long options.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "control/cli.h"
#include "config/config.h"
#include "control/proto.h"

#define MAX_ARGS 10
#define DEF CONFIG_DEFAULT_PATH
#define NOMSG NULL
#define J(code) ((code) | CTL_FLAG_JSON)
#define P(code) ((code) | CTL_FLAG_PROMETHEUS)
#define V(code) ((code) | CTL_FLAG_VERBOSE)

struct cli_case {
	const char *args[MAX_ARGS];     /* after argv[0]; NULL-terminated */
	enum cli_action action;
	uint32_t request;               /* CLI_CLIENT_REQUEST only */
	int exit_status;                /* CLI_USAGE_ERROR, CLI_HELP, CLI_VERSION */
	bool daemonize;
	const char *config;
	const char *message;            /* substring expected in message; NULL = empty */
	bool show_usage;
};

/* Shorthands for the most common row shapes. */
#define REQ(code, ...) { { __VA_ARGS__, NULL }, CLI_CLIENT_REQUEST, (code), 0, false, DEF, NOMSG, false }
#define REQW(code, msg, ...) { { __VA_ARGS__, NULL }, CLI_CLIENT_REQUEST, (code), 0, false, DEF, (msg), false }
#define ERR(status, usage, msg, ...) { { __VA_ARGS__, NULL }, CLI_USAGE_ERROR, 0, (status), false, DEF, (msg), (usage) }

static const struct cli_case cases[] = {
	/* The daemon. */
	{ { NULL }, CLI_DAEMON, 0, 0, false, DEF, NOMSG, false },
	{ { "-d", NULL }, CLI_DAEMON, 0, 0, true, DEF, NOMSG, false },
	{ { "-daemon", NULL }, CLI_DAEMON, 0, 0, true, DEF, NOMSG, false },
	{ { "-C", "/x.conf", NULL }, CLI_DAEMON, 0, 0, false, "/x.conf", NOMSG, false },
	{ { "-d", "-C", "/x.conf", NULL }, CLI_DAEMON, 0, 0, true, "/x.conf", NOMSG, false },
	{ { "-C", "/x.conf", "-d", NULL }, CLI_DAEMON, 0, 0, true, "/x.conf", NOMSG, false },
	{ { "-d", "-d", NULL }, CLI_DAEMON, 0, 0, true, DEF, NOMSG, false },
	{ { "-C", "/a", "-C", "/b", NULL }, CLI_DAEMON, 0, 0, false, "/b", NOMSG, false },
	/* -C takes the next word whatever it is, as upstream. */
	{ { "-C", "-s", NULL }, CLI_DAEMON, 0, 0, false, "-s", NOMSG, false },

	/* -c */
	REQ(CTL_COMMIT_ALL, "-c"),
	REQ(CTL_COMMIT_CT, "-c", "ct"),
	REQ(CTL_COMMIT_CT, "-c", "c"),
	REQ(CTL_COMMIT_EXP, "-c", "expect"),
	REQ(CTL_COMMIT_EXP, "-c", "e"),
	REQ(CTL_COMMIT_EXP, "-c", "exp"),
	REQ(CTL_COMMIT_CT, "-c", ""),
	REQW(CTL_COMMIT_ALL, "ignoring unknown argument 'foo' for -c; expected ct or expect",
	     "-c", "foo"),
	REQW(CTL_COMMIT_ALL, "ignoring unknown argument 'cts' for -c", "-c", "cts"),
	REQ(CTL_COMMIT_ALL, "-commit"),
	REQW(CTL_COMMIT_ALL, "'foo'", "-c", "foo", "-c"),

	/* -f: strict */
	REQ(CTL_FLUSH_ALL, "-f"),
	REQ(CTL_FLUSH_INTERNAL, "-f", "internal"),
	REQ(CTL_FLUSH_INTERNAL, "-f", "i"),
	REQ(CTL_FLUSH_INTERNAL, "-f", ""),
	REQ(CTL_FLUSH_EXTERNAL, "-f", "external"),
	REQ(CTL_FLUSH_EXTERNAL, "-f", "ext"),
	ERR(1, false, "unknown argument 'foo' for -f; expected internal or external", "-f", "foo"),
	ERR(1, false, "unknown argument 'internals' for -f", "-f", "internals"),
	ERR(1, false, "unknown argument 'ct' for -f", "-f", "ct"),

	/* -F */
	REQ(CTL_FLUSH_KERNEL_ALL, "-F"),
	REQ(CTL_FLUSH_KERNEL_CT, "-F", "ct"),
	REQ(CTL_FLUSH_KERNEL_EXP, "-F", "expect"),
	REQ(CTL_FLUSH_KERNEL_EXP, "-F", "ex"),
	REQW(CTL_FLUSH_KERNEL_ALL, "ignoring unknown argument 'bar' for -F", "-F", "bar"),

	/* -i, -e, -x */
	REQ(CTL_DUMP_INTERNAL_CT, "-i"),
	REQ(CTL_DUMP_INTERNAL_CT, "-i", "ct"),
	REQ(CTL_DUMP_INTERNAL_EXP, "-i", "expect"),
	REQ(CTL_DUMP_INTERNAL_EXP, "-i", "e"),
	REQW(CTL_DUMP_INTERNAL_CT, "ignoring unknown argument 'all' for -i", "-i", "all"),
	REQ(CTL_DUMP_INTERNAL_CT_XML, "-i", "-x"),
	REQ(CTL_DUMP_INTERNAL_CT_XML, "-i", "ct", "-x"),
	REQ(CTL_DUMP_INTERNAL_EXP_XML, "-i", "expect", "-x"),
	{ { "-i", "-C", "/x", "-x", NULL }, CLI_CLIENT_REQUEST, CTL_DUMP_INTERNAL_CT_XML, 0, false, "/x",
	  NOMSG, false },
	REQ(CTL_DUMP_INTERNAL_CT_XML, "-i", "-x", "-i"),
	REQ(CTL_DUMP_INTERNAL_CT_XML, "-i", "-x", "-x"),
	REQ(CTL_DUMP_EXTERNAL_CT, "-e"),
	REQ(CTL_DUMP_EXTERNAL_CT, "-e", "ct"),
	REQ(CTL_DUMP_EXTERNAL_EXP, "-e", "expect"),
	REQ(CTL_DUMP_EXTERNAL_CT_XML, "-e", "-x"),
	REQ(CTL_DUMP_EXTERNAL_EXP_XML, "-e", "exp", "-x"),
	REQ(CTL_DUMP_EXTERNAL_CT_XML, "-external", "-xml"),
	REQW(CTL_DUMP_EXTERNAL_CT, "ignoring unknown argument 'zzz' for -e", "-e", "zzz"),
	ERR(1, true, "'-x' is only valid after -i or -e", "-x"),
	ERR(1, true, "'-x' is only valid after -i or -e", "-x", "-i"),
	ERR(1, true, "'-x' is only valid after -i or -e", "-s", "-x"),
	ERR(1, true, "'-x' is only valid after -i or -e", "-c", "-x"),
	ERR(1, true, "'-x' is only valid after -i or -e", "-d", "-x"),

	/* -k, -B, -n, -t */
	REQ(CTL_KILL, "-k"),
	REQ(CTL_SEND_BULK, "-B"),
	REQ(CTL_REQUEST_RESYNC, "-n"),
	REQ(CTL_SCHEDULE_PURGE, "-t"),
	{ { "-k", "-C", "/x", NULL }, CLI_CLIENT_REQUEST, CTL_KILL, 0, false, "/x", NOMSG, false },

	/* -s and every word, with prefixes in table order */
	REQ(CTL_STATS, "-s"),
	REQ(CTL_STATS, "-stats"),
	REQ(CTL_STATS_NETWORK, "-s", "network"),
	REQ(CTL_STATS_NETWORK, "-s", "n"),
	REQ(CTL_STATS_NETWORK, "-stats", "net"),
	REQ(CTL_STATS_NETWORK, "-s", ""),
	REQ(CTL_STATS_CACHE, "-s", "cache"),
	REQ(CTL_STATS_CACHE, "-s", "c"),
	REQ(CTL_STATS, "-s", "ct"),
	REQ(CTL_STATS_RUNTIME, "-s", "runtime"),
	REQ(CTL_STATS_RUNTIME, "-s", "r"),
	REQ(CTL_STATS_RSQUEUE, "-s", "rsqueue"),
	REQ(CTL_STATS_RSQUEUE, "-s", "rs"),
	REQ(CTL_STATS_LINK, "-s", "link"),
	REQ(CTL_STATS_LINK, "-s", "l"),
	REQW(CTL_STATS_LINK, "'-s multicast' is deprecated; use '-s link'", "-s", "multicast"),
	REQW(CTL_STATS_LINK, "deprecated", "-s", "m"),
	REQ(CTL_STATS_PROCESS, "-s", "process"),
	REQ(CTL_STATS_PROCESS, "-s", "p"),
	REQ(CTL_STATS_QUEUE, "-s", "queue"),
	REQ(CTL_STATS_QUEUE, "-s", "q"),
	REQ(CTL_STATS_EXPECT, "-s", "expect"),
	REQ(CTL_STATS_EXPECT, "-s", "e"),
	REQ(CTL_STATS_HEALTH, "-s", "health"),
	REQ(CTL_STATS_HEALTH, "-s", "h"),
	/* A monitoring plugin's usage error is UNKNOWN. */
	ERR(3, false, "'--json' does not apply to -s health", "-s", "health", "--json"),
	{ { "-s", "-C", "/x", NULL }, CLI_CLIENT_REQUEST, CTL_STATS, 0, false, "/x", NOMSG, false },
	ERR(1, false, "unknown argument 'foo' for -s; expected network, cache, runtime, link, "
	    "rsqueue, process, queue, ct, expect or health", "-s", "foo"),
	ERR(1, false, "unknown argument 'networks' for -s", "-s", "networks"),
	ERR(1, false, "unknown argument 'x' for -s", "-s", "x"),

	/* -R */
	REQ(CTL_RESYNC_KERNEL_ALL, "-R"),
	REQ(CTL_RESYNC_KERNEL_CT, "-R", "ct"),
	REQ(CTL_RESYNC_KERNEL_EXP, "-R", "expect"),
	REQW(CTL_RESYNC_KERNEL_ALL, "ignoring unknown argument 'x' for -R", "-R", "x"),

	/* --json */
	REQ(J(CTL_STATS), "-s", "--json"),
	REQ(J(CTL_STATS_CACHE), "--json", "-s", "cache"),
	REQ(J(CTL_STATS_EXPECT), "-s", "expect", "--json"),
	REQ(J(CTL_STATS_QUEUE), "-s", "queue", "--json", "--json"),
	ERR(1, true, "'--json' is only valid with -s", "-k", "--json"),
	ERR(1, true, "'--json' is only valid with -s", "--json", "-i"),
	ERR(1, true, "'--json' is only valid with -s", "--json"),
	ERR(1, true, "'--json' is only valid with -s", "-d", "--json"),
	ERR(1, true, "'--json' is only valid with -s", "--check", "--json"),
	/* --prometheus */
	REQ(P(CTL_STATS), "-s", "--prometheus"),
	REQ(P(CTL_STATS_LINK), "--prometheus", "-s", "link"),
	REQ(P(CTL_STATS_NETWORK), "-s", "network", "--prometheus", "--prometheus"),
	ERR(1, true, "'--prometheus' is only valid with -s", "-k", "--prometheus"),
	ERR(1, true, "'--prometheus' is only valid with -s", "--prometheus"),
	ERR(1, true, "'--prometheus' is only valid with -s", "-i", "--prometheus"),
	ERR(1, true, "'--prometheus' cannot be combined with '--json': give one format",
	    "-s", "--json", "--prometheus"),
	ERR(1, true, "'--prometheus' cannot be combined with '--json': give one format",
	    "--prometheus", "-s", "cache", "--json"),
	ERR(1, true, "unknown option '--prom'", "-s", "--prom"),
	/* --verbose: ctsyncd's own text instead of 1.4.7's */
	REQ(V(CTL_STATS), "-s", "--verbose"),
	REQ(V(CTL_STATS_CACHE), "--verbose", "-s", "cache"),
	REQ(V(CTL_STATS_RSQUEUE), "-s", "rsqueue", "--verbose", "--verbose"),
	ERR(1, true, "'--verbose' is only valid with -s", "-i", "--verbose"),
	ERR(1, true, "'--verbose' is only valid with -s", "--verbose"),
	ERR(1, true, "'--verbose' cannot be combined with '--json': give one format",
	    "-s", "--json", "--verbose"),
	ERR(1, true, "'--verbose' cannot be combined with '--prometheus': give one format",
	    "-s", "--verbose", "--prometheus"),
	ERR(3, false, "'--verbose' does not apply to -s health", "-s", "health", "--verbose"),

	/* One mode, one request. */
	ERR(1, true, "'-k' cannot be combined with '-s'", "-s", "-k"),
	ERR(1, true, "'-s' cannot be combined with '-d'", "-d", "-s"),
	ERR(1, true, "'-d' cannot be combined with '-s'", "-s", "-d"),
	ERR(1, true, "'-daemon' cannot be combined with '-c'", "-c", "ct", "-daemon"),
	ERR(1, true, "'-s' cannot be combined with '-s'", "-s", "network", "-s", "cache"),
	ERR(1, true, "'-c' cannot be combined with '-c'", "-c", "ct", "-c", "expect"),
	ERR(1, true, "'-i' cannot be combined with '-e'", "-e", "-i"),
	REQ(CTL_STATS, "-s", "-s"),
	REQ(CTL_STATS_NETWORK, "-s", "n", "-s", "network"),

	/* Unknown option letters: usage, error, but exit 0 (upstream). */
	ERR(0, true, "unknown option '-z'", "-z"),
	ERR(0, true, "unknown option '-z'", "-k", "-z"),
	ERR(0, true, "unknown option '-zap'", "-zap", "-s", "foo"),
	ERR(0, true, "unknown option '-'", "-"),
	ERR(0, true, "unknown option '-S'", "-S"),
	ERR(1, false, "unknown argument 'foo' for -s", "-s", "foo", "-z"),

	/* ctsyncd's own errors */
	ERR(1, true, "unknown option '--foo'", "--foo"),
	ERR(1, true, "unknown option '--'", "--"),
	ERR(1, true, "unknown option '--chek'", "--chek", "-C", "/x"),
	ERR(1, true, "unknown option '--json=yes'", "-s", "--json=yes"),
	ERR(1, true, "unexpected argument 'stats'", "stats"),
	ERR(1, true, "unexpected argument 'extra'", "-s", "network", "extra"),
	ERR(1, true, "unexpected argument ''", ""),
	ERR(1, true, "missing file name after '-C'", "-C"),
	ERR(1, true, "missing file name after '-C'", "-s", "-C"),

	/* --help, --version: at once */
	{ { "-h", NULL }, CLI_HELP, 0, 0, false, DEF, NOMSG, false },
	{ { "--help", NULL }, CLI_HELP, 0, 0, false, DEF, NOMSG, false },
	{ { "-help", NULL }, CLI_HELP, 0, 0, false, DEF, NOMSG, false },
	{ { "-h", "-s", "foo", NULL }, CLI_HELP, 0, 0, false, DEF, NOMSG, false },
	{ { "-s", "-d", "x", NULL }, CLI_USAGE_ERROR, 0, 1, false, DEF,
	  "'-d' cannot be combined with '-s'", true },
	{ { "-v", NULL }, CLI_VERSION, 0, 0, false, DEF, NOMSG, false },
	{ { "--version", NULL }, CLI_VERSION, 0, 0, false, DEF, NOMSG, false },
	{ { "--genkey", NULL }, CLI_GENKEY, 0, 0, false, DEF, NOMSG, false },
	{ { "-C", "/x.conf", "--genkey", NULL }, CLI_GENKEY, 0, 0, false, "/x.conf", NOMSG, false },
	{ { "-s", "-v", NULL }, CLI_VERSION, 0, 0, false, DEF, NOMSG, false },
	ERR(1, false, "unknown argument 'foo' for -s", "-s", "foo", "-h"),

	/* --check */
	{ { "--check", NULL }, CLI_CHECK_CONFIG, 0, 0, false, DEF, NOMSG, false },
	{ { "--check", "-C", "/x", NULL }, CLI_CHECK_CONFIG, 0, 0, false, "/x", NOMSG, false },
	{ { "-C", "/x", "--check", NULL }, CLI_CHECK_CONFIG, 0, 0, false, "/x", NOMSG, false },
	{ { "--check", "--check", NULL }, CLI_CHECK_CONFIG, 0, 0, false, DEF, NOMSG, false },
	ERR(1, true, "'-d' cannot be combined with '--check'", "--check", "-d"),
	ERR(1, true, "'--check' cannot be combined with '-s'", "-s", "--check"),
	ERR(1, true, "'-c' cannot be combined with '--check'", "--check", "-c"),
	{ { "--check-configured", "-C", "/x", NULL }, CLI_CHECK_CONFIG, 0, 0, false, "/x", NOMSG, false },
	ERR(1, true, "'-d' cannot be combined with '--check-configured'", "--check-configured", "-d"),
};

#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static const char *action_name(enum cli_action a)
{
	switch (a) {
	case CLI_DAEMON: return "DAEMON";
	case CLI_CLIENT_REQUEST: return "CLIENT_REQUEST";
	case CLI_CHECK_CONFIG: return "CHECK_CONFIG";
	case CLI_HELP: return "HELP";
	case CLI_VERSION: return "VERSION";
	case CLI_GENKEY: return "GENKEY";
	case CLI_USAGE_ERROR: return "USAGE_ERROR";
	}
	return "?";
}

static void describe(const struct cli_case *c, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; c->args[i] && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s'%s'", i ? " " : "", c->args[i]);
}

START_TEST(parses_table_row)
{
	const struct cli_case *c = &cases[_i];
	char *argv[MAX_ARGS + 1];
	struct cli_options o;
	char desc[256];
	int argc = 0, ret;

	argv[argc++] = (char *)"ctsyncd";
	while (c->args[argc - 1])
		argv[argc] = (char *)c->args[argc - 1], argc++;
	argv[argc] = NULL;
	describe(c, desc, sizeof(desc));

	ret = cli_parse(argc, argv, &o);
	ck_assert_msg(o.action == c->action, "[%s]: action %s, expected %s (message \"%s\")",
		      desc, action_name(o.action), action_name(c->action), o.message);
	ck_assert_msg(ret == (c->action == CLI_USAGE_ERROR ? -EINVAL : 0),
		      "[%s]: returned %d", desc, ret);
	if (c->action == CLI_CLIENT_REQUEST)
		ck_assert_msg(o.request == c->request, "[%s]: request 0x%x, expected 0x%x",
			      desc, o.request, c->request);
	if (c->action == CLI_USAGE_ERROR || c->action == CLI_HELP || c->action == CLI_VERSION)
		ck_assert_msg(o.exit_status == c->exit_status, "[%s]: exit status %d, expected %d",
			      desc, o.exit_status, c->exit_status);
	if (c->action == CLI_USAGE_ERROR)
		ck_assert_msg(o.show_usage == c->show_usage, "[%s]: show_usage %d, expected %d",
			      desc, o.show_usage, c->show_usage);
	if (c->action == CLI_DAEMON)
		ck_assert_msg(o.daemonize == c->daemonize, "[%s]: daemonize %d, expected %d",
			      desc, o.daemonize, c->daemonize);
	if (c->action != CLI_USAGE_ERROR)
		ck_assert_msg(strcmp(o.config_path, c->config) == 0,
			      "[%s]: config \"%s\", expected \"%s\"", desc, o.config_path, c->config);
	if (c->message)
		ck_assert_msg(strstr(o.message, c->message) != NULL,
			      "[%s]: message \"%s\" does not contain \"%s\"", desc, o.message,
			      c->message);
	else
		ck_assert_msg(o.message[0] == '\0', "[%s]: unexpected message \"%s\"", desc,
			      o.message);
	/* The status flag is the client's business, never the parser's. */
	ck_assert_msg(!(o.request & CTL_FLAG_STATUS), "[%s]: CTL_FLAG_STATUS set", desc);
}
END_TEST

START_TEST(config_path_points_into_argv)
{
	char *argv[] = { "ctsyncd", "-C", "/etc/conntrackd/conntrackd.conf", "-s", NULL };
	struct cli_options o;

	ck_assert_int_eq(cli_parse(4, argv, &o), 0);
	ck_assert_ptr_eq(o.config_path, argv[2]);
	ck_assert(o.config_given);
	ck_assert_int_eq(cli_parse(2, (char *[]){ "ctsyncd", "-s", NULL }, &o), 0);
	ck_assert(!o.config_given);
	ck_assert_str_eq(o.config_path, CONFIG_DEFAULT_PATH);
}
END_TEST

START_TEST(rejects_config_path_longer_than_path_max)
{
	char *path = malloc(PATH_MAX + 1);
	char *argv[] = { "ctsyncd", "-C", path, NULL };
	struct cli_options o;

	memset(path, 'a', PATH_MAX);
	path[PATH_MAX] = '\0';
	ck_assert_int_eq(cli_parse(3, argv, &o), -EINVAL);
	ck_assert_int_eq(o.action, CLI_USAGE_ERROR);
	ck_assert_int_eq(o.exit_status, 1);
	ck_assert_msg(strstr(o.message, "too long") != NULL, "message \"%s\"", o.message);
	path[PATH_MAX - 1] = '\0';
	ck_assert_int_eq(cli_parse(3, argv, &o), 0);
	ck_assert_int_eq(o.action, CLI_DAEMON);
	free(path);
}
END_TEST

START_TEST(quotes_long_words_truncated)
{
	char word[1000];
	char *argv[] = { "ctsyncd", "-s", word, NULL };
	struct cli_options o;

	memset(word, 'w', sizeof(word) - 1);
	word[sizeof(word) - 1] = '\0';
	ck_assert_int_eq(cli_parse(3, argv, &o), -EINVAL);
	/* The list of expected words survives a long bad word. */
	ck_assert_msg(strstr(o.message, "expected network,") != NULL, "message \"%s\"", o.message);
	ck_assert(strlen(o.message) < CLI_MESSAGE_MAX);
}
END_TEST

START_TEST(json_flag_recorded)
{
	char *argv[] = { "ctsyncd", "-s", "runtime", "--json", NULL };
	struct cli_options o;

	ck_assert_int_eq(cli_parse(4, argv, &o), 0);
	ck_assert(o.json);
	ck_assert_uint_eq(o.request & CTL_CODE_MASK, CTL_STATS_RUNTIME);
	ck_assert_uint_eq(o.request & CTL_FLAG_JSON, CTL_FLAG_JSON);
}
END_TEST

START_TEST(argc_zero_or_one_is_daemon)
{
	char *argv[] = { "ctsyncd", NULL };
	struct cli_options o;

	ck_assert_int_eq(cli_parse(0, argv, &o), 0);
	ck_assert_int_eq(o.action, CLI_DAEMON);
	ck_assert_int_eq(cli_parse(1, argv, &o), 0);
	ck_assert_int_eq(o.action, CLI_DAEMON);
	ck_assert(!o.daemonize);
}
END_TEST

static char *usage_text(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	cli_usage(f);
	fclose(f);
	return buf;
}

START_TEST(usage_lists_every_option_and_word)
{
	static const char *const expected[] = {
		"-d ", "-C <file>", "--check", "-c [ct|expect]", "-f [internal|external]",
		"-F [ct|expect]", "-i [ct|expect]", "-e [ct|expect]", "-x ", "-k ",
		"-s [network|cache|runtime|link|rsqueue|process|queue|ct|expect|health]", "--json",
		"--prometheus", "--verbose",
		"-R [ct|expect]", "-B ", "-n ", "-t ", "-h, --help", "-v, --version", "--genkey",
		CONFIG_DEFAULT_PATH,
	};
	char *text = usage_text();
	size_t i;

	for (i = 0; i < sizeof(expected) / sizeof(expected[0]); i++)
		ck_assert_msg(strstr(text, expected[i]) != NULL, "usage lacks \"%s\":\n%s",
			      expected[i], text);
	/* The deprecated alias is accepted but not advertised. */
	ck_assert_msg(strstr(text, "multicast") == NULL, "usage shows multicast:\n%s", text);
	free(text);
}
END_TEST

/* --origin limits a commit or an external dump to one peer's states. */
START_TEST(origin_goes_with_commit_and_external_dumps)
{
	struct cli_options o;
	char *commit[] = { "ctsyncd", "-c", "--origin", "198.18.3.2", NULL };
	char *dump6[] = { "ctsyncd", "--origin", "2001:db8::7", "-e", "expect", "-x", NULL };
	char *stats[] = { "ctsyncd", "-s", "--origin", "198.18.3.2", NULL };
	char *internal[] = { "ctsyncd", "-i", "--origin", "198.18.3.2", NULL };
	char *bad[] = { "ctsyncd", "-c", "--origin", "198.18.3", NULL };
	char *missing[] = { "ctsyncd", "-c", "--origin", NULL };
	char *daemon[] = { "ctsyncd", "--origin", "198.18.3.2", NULL };

	ck_assert_int_eq(cli_parse(4, commit, &o), 0);
	ck_assert_int_eq(o.action, CLI_CLIENT_REQUEST);
	ck_assert_uint_eq(o.request, CTL_COMMIT_ALL);
	ck_assert(o.has_origin);
	ck_assert_uint_eq(o.origin.family, AF_INET);
	ck_assert_mem_eq(o.origin.addr, "\xc6\x12\x03\x02\0\0\0\0", 8);

	ck_assert_int_eq(cli_parse(6, dump6, &o), 0);
	ck_assert_uint_eq(o.request, CTL_DUMP_EXTERNAL_EXP_XML);
	ck_assert_uint_eq(o.origin.family, AF_INET6);
	ck_assert_uint_eq(o.origin.addr[0], 0x20);
	ck_assert_uint_eq(o.origin.addr[15], 7);

	ck_assert_int_eq(cli_parse(4, stats, &o), -EINVAL);
	ck_assert_str_eq(o.message, "'--origin' is only valid with -c or -e");
	ck_assert_int_eq(cli_parse(4, internal, &o), -EINVAL);
	ck_assert_int_eq(cli_parse(3, daemon, &o), -EINVAL);
	ck_assert_int_eq(o.exit_status, 1);
	ck_assert_int_eq(cli_parse(4, bad, &o), -EINVAL);
	ck_assert_str_eq(o.message, "'198.18.3' after '--origin' is not an IPv4 or IPv6 address");
	ck_assert_int_eq(cli_parse(3, missing, &o), -EINVAL);
	ck_assert_str_eq(o.message, "missing address after '--origin'");
}
END_TEST

/* Every option the usage shows is one the parser knows: they share a table. */
START_TEST(every_usage_option_parses)
{
	char *text = usage_text(), *line, *save = NULL;
	int seen = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char opt[32];
		char *argv[5] = { "ctsyncd", opt, NULL, NULL, NULL };
		struct cli_options o;
		int argc = 2;

		if (strncmp(line, "  -", 3) != 0)
			continue;
		sscanf(line + 2, "%31[^ ,]", opt);
		if (strcmp(opt, "--json") == 0 || strcmp(opt, "--prometheus") == 0 ||
		    strcmp(opt, "--verbose") == 0 || strcmp(opt, "-x") == 0) {
			/* Modifiers: valid only after their request. */
			argv[1] = strcmp(opt, "-x") == 0 ? "-i" : "-s";
			argv[2] = opt;
			argc = 3;
		} else if (strcmp(opt, "-C") == 0) {
			argv[2] = "/x";
			argc = 3;
		} else if (strcmp(opt, "--origin") == 0) {
			argv[1] = "-c";
			argv[2] = opt;
			argv[3] = "198.18.0.1";
			argc = 4;
		}
		ck_assert_msg(cli_parse(argc, argv, &o) == 0, "usage option %s: %s", opt, o.message);
		seen++;
	}
	ck_assert_int_ge(seen, 18);
	free(text);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, parses_table_row, 0, N_CASES);
	tcase_add_test(tc, config_path_points_into_argv);
	tcase_add_test(tc, rejects_config_path_longer_than_path_max);
	tcase_add_test(tc, quotes_long_words_truncated);
	tcase_add_test(tc, json_flag_recorded);
	tcase_add_test(tc, argc_zero_or_one_is_daemon);
	suite_add_tcase(s, tc);

	tc = tcase_create("usage");
	tcase_add_test(tc, usage_lists_every_option_and_word);
	tcase_add_test(tc, every_usage_option_parses);
	tcase_add_test(tc, origin_goes_with_commit_and_external_dumps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cli_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
