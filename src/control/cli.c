/*
 * cli.c - command-line parsing.  One table drives both the parser and the
 * usage text.  See cli.h for the upstream quirks kept and the differences.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "control/cli.h"
#include "config/config.h"
#include "control/proto.h"

/* How much of an offending word is quoted back in a message. */
#define QUOTE_MAX 64

enum opt_kind {
	OPT_DAEMON,
	OPT_CONFIG,
	OPT_CHECK,
	OPT_CHECK_CONFIGURED,
	OPT_REQUEST,
	OPT_XML,
	OPT_JSON,
	OPT_PROMETHEUS,
	OPT_VERBOSE,
	OPT_ORIGIN,
	OPT_HELP,
	OPT_VERSION,
	OPT_GENKEY,
};

enum opt_group {
	GROUP_DAEMON,
	GROUP_REQUEST,
	GROUP_OTHER,
};

/* What happens to a following word that is not one of `words`. */
enum word_policy {
	WORDS_NONE,     /* the option takes no sub-argument */
	WORDS_STRICT,   /* error (-s, -f) */
	WORDS_LENIENT,  /* ignored with a warning (-c, -i, -e, -F, -R) */
};

struct cli_word {
	const char *name;
	uint32_t request;
	const char *alias_of;   /* deprecated spelling: not advertised, warns */
};

struct cli_opt {
	char letter;            /* '\0' for a long-only option */
	const char *long_name;  /* NULL for a letter-only option */
	enum opt_kind kind;
	enum opt_group group;
	const char *arg;        /* usage text of a fixed argument, e.g. "<file>" */
	const char *help;
	const struct cli_word *words;   /* in matching order, NULL-terminated */
	enum word_policy policy;
	uint32_t dflt;          /* OPT_REQUEST: the request without a sub-argument */
};

static const struct cli_word commit_words[] = {
	{ "ct", CTL_COMMIT_CT, NULL },
	{ "expect", CTL_COMMIT_EXP, NULL },
	{ NULL, 0, NULL },
};

static const struct cli_word flush_cache_words[] = {
	{ "internal", CTL_FLUSH_INTERNAL, NULL },
	{ "external", CTL_FLUSH_EXTERNAL, NULL },
	{ NULL, 0, NULL },
};

static const struct cli_word flush_kernel_words[] = {
	{ "ct", CTL_FLUSH_KERNEL_CT, NULL },
	{ "expect", CTL_FLUSH_KERNEL_EXP, NULL },
	{ NULL, 0, NULL },
};

static const struct cli_word dump_internal_words[] = {
	{ "ct", CTL_DUMP_INTERNAL_CT, NULL },
	{ "expect", CTL_DUMP_INTERNAL_EXP, NULL },
	{ NULL, 0, NULL },
};

static const struct cli_word dump_external_words[] = {
	{ "ct", CTL_DUMP_EXTERNAL_CT, NULL },
	{ "expect", CTL_DUMP_EXTERNAL_EXP, NULL },
	{ NULL, 0, NULL },
};

static const struct cli_word resync_words[] = {
	{ "ct", CTL_RESYNC_KERNEL_CT, NULL },
	{ "expect", CTL_RESYNC_KERNEL_EXP, NULL },
	{ NULL, 0, NULL },
};

/* Order matters: prefixes pick the first match ("c" = cache, "r" = runtime). */
static const struct cli_word stats_words[] = {
	{ "network", CTL_STATS_NETWORK, NULL },
	{ "cache", CTL_STATS_CACHE, NULL },
	{ "runtime", CTL_STATS_RUNTIME, NULL },
	{ "link", CTL_STATS_LINK, NULL },
	{ "multicast", CTL_STATS_LINK, "link" },
	{ "rsqueue", CTL_STATS_RSQUEUE, NULL },
	{ "process", CTL_STATS_PROCESS, NULL },
	{ "queue", CTL_STATS_QUEUE, NULL },
	{ "ct", CTL_STATS, NULL },
	{ "expect", CTL_STATS_EXPECT, NULL },
	{ "health", CTL_STATS_HEALTH, NULL },
	{ NULL, 0, NULL },
};

static const struct cli_opt cli_opts[] = {
	{ 'd', NULL, OPT_DAEMON, GROUP_DAEMON, NULL,
	  "run in the background; returns once the daemon is ready", NULL, WORDS_NONE, 0 },
	{ 'C', NULL, OPT_CONFIG, GROUP_DAEMON, "<file>",
	  "configuration file (default " CONFIG_DEFAULT_PATH ")", NULL, WORDS_NONE, 0 },
	{ '\0', "check", OPT_CHECK, GROUP_DAEMON, NULL,
	  "check the configuration, print it with every default, exit", NULL, WORDS_NONE, 0 },
	{ '\0', "check-configured", OPT_CHECK_CONFIGURED, GROUP_DAEMON, NULL,
	  "exit 0 if there is a Sync or Stats block to run, 1 if none, 255 if invalid",
	  NULL, WORDS_NONE, 0 },

	{ 'c', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "commit the external cache into the kernel (waits until done)",
	  commit_words, WORDS_LENIENT, CTL_COMMIT_ALL },
	{ 'f', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "flush the internal and/or the external cache",
	  flush_cache_words, WORDS_STRICT, CTL_FLUSH_ALL },
	{ 'F', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "flush the kernel conntrack and/or expectation table",
	  flush_kernel_words, WORDS_LENIENT, CTL_FLUSH_KERNEL_ALL },
	{ 'i', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "dump the internal cache",
	  dump_internal_words, WORDS_LENIENT, CTL_DUMP_INTERNAL_CT },
	{ 'e', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "dump the external cache",
	  dump_external_words, WORDS_LENIENT, CTL_DUMP_EXTERNAL_CT },
	{ 'x', NULL, OPT_XML, GROUP_REQUEST, NULL,
	  "after -i or -e: dump in XML", NULL, WORDS_NONE, 0 },
	{ '\0', "origin", OPT_ORIGIN, GROUP_REQUEST, "<address>",
	  "with -c or -e: only the states the peer at this sync-link address sent",
	  NULL, WORDS_NONE, 0 },
	{ 's', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "show statistics",
	  stats_words, WORDS_STRICT, CTL_STATS },
	{ '\0', "json", OPT_JSON, GROUP_REQUEST, NULL,
	  "with -s: statistics as one JSON object", NULL, WORDS_NONE, 0 },
	{ '\0', "prometheus", OPT_PROMETHEUS, GROUP_REQUEST, NULL,
	  "with -s: statistics as Prometheus metrics", NULL, WORDS_NONE, 0 },
	{ '\0', "verbose", OPT_VERBOSE, GROUP_REQUEST, NULL,
	  "with -s: every counter of ctsyncd, as text (the default text is conntrackd 1.4.7's)",
	  NULL, WORDS_NONE, 0 },
	{ 'R', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "reload the kernel table into the internal cache",
	  resync_words, WORDS_LENIENT, CTL_RESYNC_KERNEL_ALL },
	{ 'B', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "send the whole internal cache to the peers", NULL, WORDS_NONE, CTL_SEND_BULK },
	{ 'n', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "ask the peer to send its whole cache", NULL, WORDS_NONE, CTL_REQUEST_RESYNC },
	{ 't', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "flush the kernel table after PurgeTimeout seconds", NULL, WORDS_NONE,
	  CTL_SCHEDULE_PURGE },
	{ 'k', NULL, OPT_REQUEST, GROUP_REQUEST, NULL,
	  "stop the daemon", NULL, WORDS_NONE, CTL_KILL },

	{ 'h', "help", OPT_HELP, GROUP_OTHER, NULL, "show this help", NULL, WORDS_NONE, 0 },
	{ 'v', "version", OPT_VERSION, GROUP_OTHER, NULL, "show the version", NULL,
	  WORDS_NONE, 0 },
	{ '\0', "genkey", OPT_GENKEY, GROUP_OTHER, NULL,
	  "print a new random sync key for the Key file, and exit", NULL, WORDS_NONE, 0 },
};

#define N_OPTS (sizeof(cli_opts) / sizeof(cli_opts[0]))

static const struct {
	uint32_t plain;
	uint32_t xml;
} xml_variants[] = {
	{ CTL_DUMP_INTERNAL_CT, CTL_DUMP_INTERNAL_CT_XML },
	{ CTL_DUMP_EXTERNAL_CT, CTL_DUMP_EXTERNAL_CT_XML },
	{ CTL_DUMP_INTERNAL_EXP, CTL_DUMP_INTERNAL_EXP_XML },
	{ CTL_DUMP_EXTERNAL_EXP, CTL_DUMP_EXTERNAL_EXP_XML },
};

enum parse_mode {
	MODE_NONE,
	MODE_DAEMON,
	MODE_CLIENT,
	MODE_CHECK,
};

struct parse_state {
	enum parse_mode mode;
	const char *mode_word;           /* the word that chose the mode */
	const struct cli_opt *req_opt;   /* the option that chose the request */
	uint32_t base_request;           /* the request before -x */
	const char *json_word;
	const char *prometheus_word;
	const char *verbose_word;
	const char *origin_word;
};

static void set_message(struct cli_options *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_message(struct cli_options *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->message, sizeof(o->message), fmt, ap);
	va_end(ap);
}

/* Keep the first warning: it is the one nearest the start of the line. */
static void set_warning(struct cli_options *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_warning(struct cli_options *o, const char *fmt, ...)
{
	va_list ap;

	if (o->message[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(o->message, sizeof(o->message), fmt, ap);
	va_end(ap);
}

static int usage_error(struct cli_options *o, bool show_usage, int status)
{
	o->action = CLI_USAGE_ERROR;
	o->show_usage = show_usage;
	o->exit_status = status;
	o->request = 0;
	return -EINVAL;
}

static const struct cli_opt *find_letter(char c)
{
	size_t i;

	for (i = 0; i < N_OPTS; i++)
		if (cli_opts[i].letter != '\0' && cli_opts[i].letter == c)
			return &cli_opts[i];
	return NULL;
}

static const struct cli_opt *find_long(const char *name)
{
	size_t i;

	for (i = 0; i < N_OPTS; i++)
		if (cli_opts[i].long_name && strcmp(cli_opts[i].long_name, name) == 0)
			return &cli_opts[i];
	return NULL;
}

/* Upstream matching: the word is a prefix of a known word (so "" matches the first). */
static const struct cli_word *match_word(const struct cli_word *words, const char *arg)
{
	size_t len = strlen(arg);
	const struct cli_word *w;

	for (w = words; w->name; w++)
		if (strncmp(arg, w->name, len) == 0)
			return w;
	return NULL;
}

/* "ct or expect", "network, cache, ... ct or expect": advertised words only. */
static void expected_words(const struct cli_word *words, char *buf, size_t size)
{
	const struct cli_word *w;
	size_t n = 0, k = 0, len = 0;

	for (w = words; w->name; w++)
		if (!w->alias_of)
			n++;
	buf[0] = '\0';
	for (w = words; w->name; w++) {
		const char *sep;
		int r;

		if (w->alias_of)
			continue;
		sep = k == 0 ? "" : (k + 1 == n ? " or " : ", ");
		r = snprintf(buf + len, size - len, "%s%s", sep, w->name);
		if (r < 0 || (size_t)r >= size - len)
			return;
		len += (size_t)r;
		k++;
	}
}

/* "[ct|expect]" */
static void words_synopsis(const struct cli_word *words, char *buf, size_t size)
{
	const struct cli_word *w;
	size_t len = 1;
	int r;

	snprintf(buf, size, "[");
	for (w = words; w->name; w++) {
		if (w->alias_of)
			continue;
		r = snprintf(buf + len, size - len, "%s%s", len > 1 ? "|" : "", w->name);
		if (r < 0 || (size_t)r >= size - len)
			return;
		len += (size_t)r;
	}
	snprintf(buf + len, size - len, "]");
}

static int set_mode(struct cli_options *o, struct parse_state *st, enum parse_mode mode,
		    const char *word)
{
	if (st->mode == MODE_NONE) {
		st->mode = mode;
		st->mode_word = word;
		return 0;
	}
	if (st->mode == mode)
		return 0;
	set_message(o, "'%.*s' cannot be combined with '%.*s'",
		    QUOTE_MAX, word, QUOTE_MAX, st->mode_word);
	return usage_error(o, true, 1);
}

static int parse_request(struct cli_options *o, struct parse_state *st,
			 const struct cli_opt *opt, int argc, char *const argv[], int *i)
{
	const char *word = argv[*i];
	uint32_t request = opt->dflt;
	int ret;

	ret = set_mode(o, st, MODE_CLIENT, word);
	if (ret < 0)
		return ret;

	/* As upstream, a following word is a sub-argument unless it starts with '-'. */
	if (opt->words && *i + 1 < argc && argv[*i + 1][0] != '-') {
		const char *arg = argv[*i + 1];
		const struct cli_word *w = match_word(opt->words, arg);
		char expected[128];

		(*i)++;
		if (w) {
			request = w->request;
			if (w->alias_of)
				set_warning(o, "'-%c %s' is deprecated; use '-%c %s'",
					    opt->letter, w->name, opt->letter, w->alias_of);
		} else {
			expected_words(opt->words, expected, sizeof(expected));
			if (opt->policy == WORDS_STRICT) {
				set_message(o, "unknown argument '%.*s' for -%c; expected %s",
					    QUOTE_MAX, arg, opt->letter, expected);
				return usage_error(o, false, 1);
			}
			set_warning(o, "ignoring unknown argument '%.*s' for -%c; expected %s",
				    QUOTE_MAX, arg, opt->letter, expected);
		}
	}

	if (st->req_opt) {
		/* "-s -s" is harmless; two different requests are a mistake. */
		if (st->req_opt == opt && st->base_request == request)
			return 0;
		set_message(o, "'%.*s' cannot be combined with '%.*s': give one request at a time",
			    QUOTE_MAX, word, QUOTE_MAX, st->mode_word);
		return usage_error(o, true, 1);
	}
	st->req_opt = opt;
	st->base_request = request;
	o->request = request;
	return 0;
}

static int parse_xml(struct cli_options *o, struct parse_state *st, const char *word)
{
	size_t k;

	if (st->mode == MODE_CLIENT) {
		for (k = 0; k < sizeof(xml_variants) / sizeof(xml_variants[0]); k++) {
			if (st->base_request == xml_variants[k].plain) {
				o->request = xml_variants[k].xml;
				return 0;
			}
		}
	}
	set_message(o, "'%.*s' is only valid after -i or -e", QUOTE_MAX, word);
	return usage_error(o, true, 1);
}

/* --origin ADDRESS: an IPv4 or IPv6 address, the peer's on the sync link. */
static int parse_origin(struct cli_options *o, struct parse_state *st, int argc, char *const argv[],
			int *i)
{
	const char *word = argv[*i];

	if (*i + 1 >= argc) {
		set_message(o, "missing address after '%.*s'", QUOTE_MAX, word);
		return usage_error(o, true, 1);
	}
	(*i)++;
	memset(&o->origin, 0, sizeof(o->origin));
	if (inet_pton(AF_INET, argv[*i], o->origin.addr) == 1) {
		o->origin.family = AF_INET;
	} else if (inet_pton(AF_INET6, argv[*i], o->origin.addr) == 1) {
		o->origin.family = AF_INET6;
	} else {
		set_message(o, "'%.*s' after '%.*s' is not an IPv4 or IPv6 address", QUOTE_MAX,
			    argv[*i], QUOTE_MAX, word);
		return usage_error(o, false, 1);
	}
	o->has_origin = true;
	st->origin_word = word;
	return 0;
}

static int parse_one(struct cli_options *o, struct parse_state *st, const struct cli_opt *opt,
		     int argc, char *const argv[], int *i)
{
	const char *word = argv[*i];

	switch (opt->kind) {
	case OPT_DAEMON:
		o->daemonize = true;
		return set_mode(o, st, MODE_DAEMON, word);
	case OPT_CHECK:
		return set_mode(o, st, MODE_CHECK, word);
	case OPT_CHECK_CONFIGURED:
		o->check_configured = true;
		return set_mode(o, st, MODE_CHECK, word);
	case OPT_CONFIG:
		if (*i + 1 >= argc) {
			set_message(o, "missing file name after '%.*s'", QUOTE_MAX, word);
			return usage_error(o, true, 1);
		}
		(*i)++;
		if (strlen(argv[*i]) >= PATH_MAX) {
			set_message(o, "configuration path is too long (%zu bytes, at most %d)",
				    strlen(argv[*i]), PATH_MAX - 1);
			return usage_error(o, false, 1);
		}
		o->config_path = argv[*i];
		o->config_given = true;
		return 0;
	case OPT_REQUEST:
		return parse_request(o, st, opt, argc, argv, i);
	case OPT_XML:
		return parse_xml(o, st, word);
	case OPT_JSON:
		o->json = true;
		st->json_word = word;
		return 0;
	case OPT_PROMETHEUS:
		o->prometheus = true;
		st->prometheus_word = word;
		return 0;
	case OPT_VERBOSE:
		o->verbose = true;
		st->verbose_word = word;
		return 0;
	case OPT_ORIGIN:
		return parse_origin(o, st, argc, argv, i);
	case OPT_HELP:
		o->action = CLI_HELP;
		o->exit_status = 0;
		return 1;
	case OPT_VERSION:
		o->action = CLI_VERSION;
		o->exit_status = 0;
		return 1;
	case OPT_GENKEY:
		o->action = CLI_GENKEY;
		o->exit_status = 0;
		return 1;
	}
	return 0;
}

int cli_parse(int argc, char *const argv[], struct cli_options *o)
{
	struct parse_state st = { .mode = MODE_NONE };
	int i, ret;

	memset(o, 0, sizeof(*o));
	o->action = CLI_DAEMON;
	o->config_path = CONFIG_DEFAULT_PATH;

	for (i = 1; i < argc; i++) {
		const char *word = argv[i];
		const struct cli_opt *opt;

		if (word[0] != '-') {
			set_message(o, "unexpected argument '%.*s'", QUOTE_MAX, word);
			return usage_error(o, true, 1);
		}
		if (word[1] == '-') {
			opt = find_long(word + 2);
			if (!opt) {
				set_message(o, "unknown option '%.*s'", QUOTE_MAX, word);
				return usage_error(o, true, 1);
			}
		} else {
			/* Only the letter after the dash counts: "-stats" is -s. */
			opt = find_letter(word[1]);
			if (!opt || opt->letter == '\0') {
				/* Upstream prints the usage and exits 0 here. */
				set_message(o, "unknown option '%.*s'", QUOTE_MAX, word);
				return usage_error(o, true, 0);
			}
		}
		ret = parse_one(o, &st, opt, argc, argv, &i);
		if (ret < 0)
			return ret;
		if (ret > 0)
			return 0;       /* -h / -v: done, as upstream */
	}

	switch (st.mode) {
	case MODE_NONE:
	case MODE_DAEMON:
		o->action = CLI_DAEMON;
		break;
	case MODE_CHECK:
		o->action = CLI_CHECK_CONFIG;
		break;
	case MODE_CLIENT:
		o->action = CLI_CLIENT_REQUEST;
		break;
	}

	if (o->json) {
		if (o->action != CLI_CLIENT_REQUEST || !ctl_request_is_stats(o->request)) {
			set_message(o, "'%.*s' is only valid with -s", QUOTE_MAX, st.json_word);
			return usage_error(o, true, 1);
		}
		/* A monitoring plugin's usage error is UNKNOWN (3), like any answer it cannot give. */
		if (o->request == CTL_STATS_HEALTH) {
			set_message(o, "'%.*s' does not apply to -s health, which prints one line for "
				    "monitoring; -s --json has the peers and counters", QUOTE_MAX,
				    st.json_word);
			return usage_error(o, false, 3);
		}
		o->request |= CTL_FLAG_JSON;
	}
	if (o->prometheus) {
		if (o->action != CLI_CLIENT_REQUEST || !ctl_request_is_stats(o->request)) {
			set_message(o, "'%.*s' is only valid with -s", QUOTE_MAX, st.prometheus_word);
			return usage_error(o, true, 1);
		}
		if (o->json) {
			set_message(o, "'%.*s' cannot be combined with '%.*s': give one format",
				    QUOTE_MAX, st.prometheus_word, QUOTE_MAX, st.json_word);
			return usage_error(o, true, 1);
		}
		o->request |= CTL_FLAG_PROMETHEUS;
	}
	if (o->has_origin &&
	    (o->action != CLI_CLIENT_REQUEST || !ctl_request_takes_origin(o->request))) {
		set_message(o, "'%.*s' is only valid with -c or -e", QUOTE_MAX, st.origin_word);
		return usage_error(o, true, 1);
	}
	if (o->verbose) {
		if (o->action != CLI_CLIENT_REQUEST || !ctl_request_is_stats(o->request)) {
			set_message(o, "'%.*s' is only valid with -s", QUOTE_MAX, st.verbose_word);
			return usage_error(o, true, 1);
		}
		if (o->json || o->prometheus) {
			set_message(o, "'%.*s' cannot be combined with '%.*s': give one format",
				    QUOTE_MAX, st.verbose_word, QUOTE_MAX,
				    o->json ? st.json_word : st.prometheus_word);
			return usage_error(o, true, 1);
		}
		if ((o->request & CTL_CODE_MASK) == CTL_STATS_HEALTH) {
			set_message(o, "'%.*s' does not apply to -s health, which prints one line for "
				    "monitoring; -s --verbose has the peers and counters", QUOTE_MAX,
				    st.verbose_word);
			return usage_error(o, false, 3);
		}
		o->request |= CTL_FLAG_VERBOSE;
	}
	return 0;
}

static const char *const group_titles[] = {
	[GROUP_DAEMON] = "Daemon:",
	[GROUP_REQUEST] = "Requests to a running daemon:",
	[GROUP_OTHER] = "Other:",
};

#define USAGE_COLUMN 26

void cli_usage(FILE *out)
{
	size_t g, i;

	fprintf(out, "Usage: ctsyncd [-C <file>] [-d]          run the daemon\n"
		     "       ctsyncd [-C <file>] <request>     send a request to the daemon\n"
		     "       ctsyncd [-C <file>] --check       check the configuration\n");
	for (g = 0; g < sizeof(group_titles) / sizeof(group_titles[0]); g++) {
		fprintf(out, "%s\n", group_titles[g]);
		for (i = 0; i < N_OPTS; i++) {
			const struct cli_opt *opt = &cli_opts[i];
			char names[160], args[128] = "";
			int len;

			if (opt->group != g)
				continue;
			if (opt->words)
				words_synopsis(opt->words, args, sizeof(args));
			else if (opt->arg)
				snprintf(args, sizeof(args), "%s", opt->arg);

			if (opt->letter && opt->long_name)
				snprintf(names, sizeof(names), "-%c, --%s", opt->letter,
					 opt->long_name);
			else if (opt->letter)
				snprintf(names, sizeof(names), "-%c%s%s", opt->letter,
					 args[0] ? " " : "", args);
			else
				snprintf(names, sizeof(names), "--%s", opt->long_name);

			len = fprintf(out, "  %s", names);
			if (len >= USAGE_COLUMN)
				fprintf(out, "\n%*s", USAGE_COLUMN, "");
			else
				fprintf(out, "%*s", USAGE_COLUMN - len, "");
			fprintf(out, "%s\n", opt->help);
		}
	}
}
