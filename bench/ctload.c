/*
 * ctload.c - the load generator of the benchmark: creates, updates and
 * deletes conntrack entries through batched ctnetlink, counts and flushes
 * the table, and listens to events, in the network namespace it runs in.
 *
 * One table of commands drives dispatch and the usage text; one table of
 * options says which command accepts which option.  Results are one line
 * of key=value pairs, or the same keys as one JSON object with --json.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <linux/netfilter/nf_conntrack_tcp.h>

#include "ctload.h"

#define DEFAULT_TIMEOUT 3600
#define DEFAULT_UPDATE_MARK 1
#define DEFAULT_BATCH (256 * 1024)
#define DEFAULT_RCVBUF (32 * 1024 * 1024)
#define MAX_BUFFER (1024 * 1024 * 1024)
/* Sequence numbers map replies to entries, so one run stays below 2^32. */
#define MAX_ENTRIES UINT32_MAX

enum opt_id {
	O_RATE, O_PROTO, O_FAMILY, O_BASE_ADDR, O_DST_ADDR, O_ZONE, O_TIMEOUT,
	O_MARK, O_TCP_STATE, O_OFFSET, O_BATCH, O_ACK, O_RCVBUF, O_JSON,
	O_ALLOW_FAILURES, O_STATS, O_SECONDS, O_UNTIL_COUNT, O_IDLE, O_HELP,
	O_COUNT_
};

#define BIT(o) (1u << (o))
#define ENTRY_OPTS (BIT(O_PROTO) | BIT(O_FAMILY) | BIT(O_BASE_ADDR) | BIT(O_DST_ADDR) | \
		    BIT(O_ZONE) | BIT(O_OFFSET) | BIT(O_BATCH) | BIT(O_ACK) | BIT(O_RCVBUF) | \
		    BIT(O_JSON) | BIT(O_ALLOW_FAILURES))

static const struct option long_opts[] = {
	[O_RATE] = { "rate", required_argument, NULL, O_RATE },
	[O_PROTO] = { "proto", required_argument, NULL, O_PROTO },
	[O_FAMILY] = { "family", required_argument, NULL, O_FAMILY },
	[O_BASE_ADDR] = { "base-addr", required_argument, NULL, O_BASE_ADDR },
	[O_DST_ADDR] = { "dst-addr", required_argument, NULL, O_DST_ADDR },
	[O_ZONE] = { "zone", required_argument, NULL, O_ZONE },
	[O_TIMEOUT] = { "timeout", required_argument, NULL, O_TIMEOUT },
	[O_MARK] = { "mark", required_argument, NULL, O_MARK },
	[O_TCP_STATE] = { "tcp-state", required_argument, NULL, O_TCP_STATE },
	[O_OFFSET] = { "offset", required_argument, NULL, O_OFFSET },
	[O_BATCH] = { "batch", required_argument, NULL, O_BATCH },
	[O_ACK] = { "ack", no_argument, NULL, O_ACK },
	[O_RCVBUF] = { "rcvbuf", required_argument, NULL, O_RCVBUF },
	[O_JSON] = { "json", no_argument, NULL, O_JSON },
	[O_ALLOW_FAILURES] = { "allow-failures", no_argument, NULL, O_ALLOW_FAILURES },
	[O_STATS] = { "stats", no_argument, NULL, O_STATS },
	[O_SECONDS] = { "seconds", required_argument, NULL, O_SECONDS },
	[O_UNTIL_COUNT] = { "until-count", required_argument, NULL, O_UNTIL_COUNT },
	[O_IDLE] = { "idle", required_argument, NULL, O_IDLE },
	[O_HELP] = { "help", no_argument, NULL, O_HELP },
	[O_COUNT_] = { NULL, 0, NULL, 0 },
};

static const struct {
	const char *arg;
	const char *help;
} opt_help[O_COUNT_] = {
	[O_RATE] = { "R", "pace at R entries/s in ~1 ms batches (default: as fast as possible)" },
	[O_PROTO] = { "P", "tcp, udp, icmp or mixed (default tcp)" },
	[O_FAMILY] = { "F", "4 or 6 (default 4; count: both unless given)" },
	[O_BASE_ADDR] = { "A", "source address of entry 0 (198.18.0.1 / 2001:db8:1::1)" },
	[O_DST_ADDR] = { "A", "destination address (198.19.0.1 / 2001:db8:2::1)" },
	[O_ZONE] = { "Z", "conntrack zone 0-65535 (default: none sent, zone 0)" },
	[O_TIMEOUT] = { "S", "timeout in seconds (default 3600)" },
	[O_MARK] = { "M", "mark (create: none by default; update: default 1)" },
	[O_TCP_STATE] = { "S", "TCP state of created entries (default established)" },
	[O_OFFSET] = { "K", "index of the first entry (default 0)" },
	[O_BATCH] = { "BYTES", "bytes of requests per sendmsg (default 256K)" },
	[O_ACK] = { NULL, "ask an ACK for every request (default: only errors come back)" },
	[O_RCVBUF] = { "BYTES", "receive buffer, SO_RCVBUFFORCE (default 32M)" },
	[O_JSON] = { NULL, "print the result as one JSON object" },
	[O_ALLOW_FAILURES] = { NULL, "exit 0 even if some requests failed or events were lost" },
	[O_STATS] = { NULL, "count: read the kernel's counter instead of dumping" },
	[O_SECONDS] = { "S", "listen: stop after S seconds" },
	[O_UNTIL_COUNT] = { "N", "listen: stop after N events (fails if not reached)" },
	[O_IDLE] = { "S", "listen: stop S seconds after the last event" },
	[O_HELP] = { NULL, "this text" },
};

struct command {
	const char *name;
	const char *args;       /* positional arguments, for the usage text */
	int (*run)(struct ctl_opts *o);
	unsigned int opts;      /* BIT(O_*) accepted */
	bool needs_n;
	const char *help;
};

static int cmd_create(struct ctl_opts *o);
static int cmd_update(struct ctl_opts *o);
static int cmd_delete(struct ctl_opts *o);
static int cmd_count(struct ctl_opts *o);
static int cmd_flush(struct ctl_opts *o);
static int cmd_listen(struct ctl_opts *o);
static int cmd_raw_rate(struct ctl_opts *o);

static const struct command commands[] = {
	{ "create", "N", cmd_create,
	  ENTRY_OPTS | BIT(O_RATE) | BIT(O_TIMEOUT) | BIT(O_MARK) | BIT(O_TCP_STATE), true,
	  "create N entries (ESTABLISHED, SEEN_REPLY|ASSURED)" },
	{ "update", "N", cmd_update,
	  ENTRY_OPTS | BIT(O_RATE) | BIT(O_TIMEOUT) | BIT(O_MARK), true,
	  "set the mark and timeout of the same N entries" },
	{ "delete", "N", cmd_delete, ENTRY_OPTS | BIT(O_RATE), true,
	  "delete the same N entries" },
	{ "count", "", cmd_count, BIT(O_FAMILY) | BIT(O_STATS) | BIT(O_JSON), false,
	  "count the entries of the table with a dump" },
	{ "flush", "", cmd_flush, BIT(O_JSON), false,
	  "flush the table" },
	{ "listen", "", cmd_listen,
	  BIT(O_SECONDS) | BIT(O_UNTIL_COUNT) | BIT(O_IDLE) | BIT(O_RCVBUF) | BIT(O_JSON) |
	  BIT(O_ALLOW_FAILURES), false,
	  "count NEW/UPDATE/DESTROY events on one socket" },
	{ "raw-rate", "N", cmd_raw_rate,
	  ENTRY_OPTS | BIT(O_TIMEOUT) | BIT(O_MARK) | BIT(O_TCP_STATE), true,
	  "flush, create N as fast as possible, report, flush" },
};

static const char *cmd_name = "ctload";

static void usage(FILE *f)
{
	fprintf(f, "usage: ctload COMMAND [ARGS] [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %-2s  %s\n", commands[i].name, commands[i].args, commands[i].help);
	fprintf(f, "\noptions (a command refuses those that do not apply to it):\n");
	for (int i = 0; i < O_COUNT_; i++) {
		char left[32];

		snprintf(left, sizeof(left), "--%s%s%s", long_opts[i].name,
			 opt_help[i].arg ? " " : "", opt_help[i].arg ? opt_help[i].arg : "");
		fprintf(f, "  %-22s %s\n", left, opt_help[i].help);
	}
	fprintf(f, "\nCounts take k/M suffixes (x1000, x1000000); sizes take K/M/G (x1024^n).\n"
		"Exit status: 0 on success, 1 on a bad argument or any failed request.\n");
}

static void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ctload %s: ", cmd_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Digits with an optional multiplier suffix from `suffixes` ("kM" etc.). */
static uint64_t parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, bool binary)
{
	uint64_t v = 0, mult = 1;
	const char *p = s;

	if (!*p)
		die("%s: expected a number, got an empty string", what);
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && p[2]) {
		for (p += 2; *p; p++) {
			int d = *p >= '0' && *p <= '9' ? *p - '0' :
				(*p | 0x20) >= 'a' && (*p | 0x20) <= 'f' ? (*p | 0x20) - 'a' + 10 : -1;
			if (d < 0 || v > (UINT64_MAX >> 4))
				die("%s: '%s' is not a number", what, s);
			v = v << 4 | (uint64_t)d;
		}
	} else {
		for (; *p >= '0' && *p <= '9'; p++) {
			if (v > (UINT64_MAX - 9) / 10)
				die("%s: '%s' is too large", what, s);
			v = v * 10 + (uint64_t)(*p - '0');
		}
		if (p == s)
			die("%s: '%s' is not a number", what, s);
		if (*p && !p[1]) {
			switch (*p) {
			case 'k': case 'K': mult = binary ? 1024 : 1000; break;
			case 'm': case 'M': mult = binary ? 1024 * 1024 : 1000000; break;
			case 'g': case 'G': mult = binary ? 1024 * 1024 * 1024 : 1000000000; break;
			default: die("%s: '%s' has an unknown suffix '%c'", what, s, *p);
			}
		} else if (*p) {
			die("%s: '%s' is not a number", what, s);
		}
		if (v > UINT64_MAX / mult)
			die("%s: '%s' is too large", what, s);
		v *= mult;
	}
	if (v < min || v > max)
		die("%s: %s is out of range [%" PRIu64 ", %" PRIu64 "]", what, s, min, max);
	return v;
}

static double parse_seconds(const char *what, const char *s, bool allow_zero)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || (!allow_zero && v == 0))
		die("%s: expected a %snumber, got '%s'", what, allow_zero ? "non-negative " : "positive ", s);
	return v;
}

static uint8_t parse_tcp_state(const char *s)
{
	static const char *const names[] = {
		[TCP_CONNTRACK_NONE] = "none",
		[TCP_CONNTRACK_SYN_SENT] = "syn_sent",
		[TCP_CONNTRACK_SYN_RECV] = "syn_recv",
		[TCP_CONNTRACK_ESTABLISHED] = "established",
		[TCP_CONNTRACK_FIN_WAIT] = "fin_wait",
		[TCP_CONNTRACK_CLOSE_WAIT] = "close_wait",
		[TCP_CONNTRACK_LAST_ACK] = "last_ack",
		[TCP_CONNTRACK_TIME_WAIT] = "time_wait",
		[TCP_CONNTRACK_CLOSE] = "close",
		[TCP_CONNTRACK_SYN_SENT2] = "syn_sent2",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i] && !strcasecmp(s, names[i]))
			return (uint8_t)i;
	die("--tcp-state: unknown state '%s' (none, syn_sent, syn_recv, established, "
	    "fin_wait, close_wait, last_ack, time_wait, close, syn_sent2)", s);
}

static void parse_addr(const char *what, const char *s, int family, union ctl_addr *a)
{
	if (inet_pton(family, s, a) != 1)
		die("%s: '%s' is not an IPv%d address (the family is --family %d)", what, s,
		    family == AF_INET ? 4 : 6, family == AF_INET ? 4 : 6);
}

/* --- the result line --------------------------------------------------- */

struct report {
	bool json;
};

static void rep_begin(struct report *rp, const char *op)
{
	printf(rp->json ? "{\"op\":\"%s\"" : "%s", op);
}

static void rep_u64(struct report *rp, const char *key, uint64_t v)
{
	printf(rp->json ? ",\"%s\":%" PRIu64 : " %s=%" PRIu64, key, v);
}

static void rep_num(struct report *rp, const char *key, double v, int decimals)
{
	printf(rp->json ? ",\"%s\":%.*f" : " %s=%.*f", key, decimals, v);
}

static void rep_str(struct report *rp, const char *key, const char *v)
{
	printf(rp->json ? ",\"%s\":\"%s\"" : " %s=%s", key, v);
}

static const char *errno_name(int e, char *buf, size_t len)
{
	const char *name = e < CTL_ERRNO_SLOTS - 1 ? strerrorname_np(e) : NULL;

	if (name)
		return name;
	snprintf(buf, len, "E%d", e);
	return buf;
}

/* errors=EEXIST:1000,ENOENT:2 (omitted when none), or "errors":{...}. */
static void rep_errors(struct report *rp, const uint64_t *errors)
{
	bool any = false;
	char buf[16];

	for (int e = 0; e < CTL_ERRNO_SLOTS; e++) {
		if (!errors[e])
			continue;
		if (rp->json)
			printf("%s\"%s\":%" PRIu64, any ? "," : ",\"errors\":{",
			       errno_name(e, buf, sizeof(buf)), errors[e]);
		else
			printf("%s%s:%" PRIu64, any ? "," : " errors=",
			       errno_name(e, buf, sizeof(buf)), errors[e]);
		any = true;
	}
	if (rp->json)
		printf(any ? "}" : ",\"errors\":{}");
}

static void rep_end(struct report *rp)
{
	printf(rp->json ? "}\n" : "\n");
	fflush(stdout);
}

static double per_second(uint64_t n, double seconds)
{
	return seconds > 0 ? (double)n / seconds : 0;
}

/* --- commands ---------------------------------------------------------- */

static const char *const op_names[] = {
	[CTL_OP_CREATE] = "create", [CTL_OP_UPDATE] = "update", [CTL_OP_DELETE] = "delete",
};

static void warn_if_table_too_small(const struct ctl_opts *o)
{
	uint64_t entries, max;

	if (ctl_count_stats(&entries, &max) < 0 || !max || entries + o->n <= max)
		return;
	fprintf(stderr, "ctload %s: warning: the table holds %" PRIu64 " and nf_conntrack_max is %"
		PRIu64 "; creates past it fail with ENOMEM (raise "
		"/proc/sys/net/netfilter/nf_conntrack_max in the initial namespace)\n",
		cmd_name, entries, max);
}

/* Runs one batched operation and prints its result line; returns the exit status. */
static int run_op(struct ctl_opts *o, enum ctl_op op, const char *label)
{
	struct report rp = { .json = o->json };
	struct ctl_result r;
	int err;

	err = ctl_run_batch(o, op, &r);
	if (err < 0)
		die("%s failed: %s", op_names[op], strerror(-err));

	rep_begin(&rp, label);
	rep_str(&rp, "proto", o->proto == CTL_TCP ? "tcp" : o->proto == CTL_UDP ? "udp" :
		o->proto == CTL_ICMP ? "icmp" : "mixed");
	rep_u64(&rp, "family", o->family == AF_INET ? 4 : 6);
	rep_u64(&rp, "requested", o->n);
	rep_u64(&rp, "ok", r.ok);
	rep_u64(&rp, "failed", r.failed);
	rep_errors(&rp, r.errors);
	rep_u64(&rp, "unreported", r.unreported);
	rep_u64(&rp, "overruns", r.overruns);
	rep_num(&rp, "elapsed_s", r.elapsed, 6);
	rep_num(&rp, "rate_per_s", per_second(r.ok, r.elapsed), 0);
	rep_num(&rp, "cpu_s", r.cpu, 3);
	rep_num(&rp, "rate_per_cpu_s", per_second(r.ok, r.cpu), 0);
	rep_end(&rp);

	if (r.first_failed >= 0) {
		char what[160], name[16];

		ctl_describe_entry(o, (uint64_t)r.first_failed, what, sizeof(what));
		fprintf(stderr, "ctload %s: %" PRIu64 " of %" PRIu64 " failed; first: entry %" PRId64
			" (%s): %s (%s)\n", cmd_name, r.failed, o->n, r.first_failed, what,
			strerror(r.first_errno), errno_name(r.first_errno, name, sizeof(name)));
	}
	if (r.unreported || r.overruns)
		fprintf(stderr, "ctload %s: replies were lost (our receive buffer overran): "
			"raise --rcvbuf or lower --batch\n", cmd_name);
	if (o->allow_failures)
		return 0;
	return r.failed || r.unreported || r.overruns || r.ok != o->n ? 1 : 0;
}

static int cmd_create(struct ctl_opts *o)
{
	warn_if_table_too_small(o);
	return run_op(o, CTL_OP_CREATE, "create");
}

static int cmd_update(struct ctl_opts *o)
{
	if (!o->has_mark) {
		o->has_mark = true;
		o->mark = DEFAULT_UPDATE_MARK;
	}
	return run_op(o, CTL_OP_UPDATE, "update");
}

static int cmd_delete(struct ctl_opts *o)
{
	return run_op(o, CTL_OP_DELETE, "delete");
}

static int cmd_count(struct ctl_opts *o)
{
	struct report rp = { .json = o->json };
	uint64_t entries, max;
	double elapsed;
	int err;

	if (o->stats) {
		double start = ctl_now();

		err = ctl_count_stats(&entries, &max);
		elapsed = ctl_now() - start;
	} else {
		err = ctl_count_dump(o->family, &entries, &elapsed);
	}
	if (err < 0)
		die("%s failed: %s", o->stats ? "reading the counter" : "the dump", strerror(-err));
	rep_begin(&rp, "count");
	rep_u64(&rp, "entries", entries);
	if (o->stats)
		rep_u64(&rp, "max", max);
	rep_str(&rp, "source", o->stats ? "stats" : "dump");
	rep_num(&rp, "elapsed_s", elapsed, 6);
	rep_end(&rp);
	return 0;
}

static int cmd_flush(struct ctl_opts *o)
{
	struct report rp = { .json = o->json };
	double elapsed;
	int err = ctl_flush(&elapsed);

	if (err < 0)
		die("flush failed: %s", strerror(-err));
	rep_begin(&rp, "flush");
	rep_num(&rp, "elapsed_s", elapsed, 6);
	rep_end(&rp);
	return 0;
}

static int cmd_listen(struct ctl_opts *o)
{
	struct report rp = { .json = o->json };
	struct ctl_listen_result r;
	uint64_t all;
	bool short_count;
	int err = ctl_listen(o, &r);

	if (err < 0)
		die("listening failed: %s", strerror(-err));
	all = r.new_events + r.update_events + r.destroy_events;
	rep_begin(&rp, "listen");
	rep_u64(&rp, "new", r.new_events);
	rep_u64(&rp, "update", r.update_events);
	rep_u64(&rp, "destroy", r.destroy_events);
	rep_u64(&rp, "total", all);
	rep_u64(&rp, "enobufs", r.enobufs);
	rep_u64(&rp, "truncated", r.truncated);
	rep_u64(&rp, "rcvbuf", (uint64_t)r.rcvbuf);
	rep_num(&rp, "span_s", r.span, 6);
	rep_num(&rp, "wall_s", r.wall, 6);
	rep_num(&rp, "rate_per_s", per_second(all, r.span), 0);
	rep_num(&rp, "cpu_s", r.cpu, 3);
	rep_end(&rp);

	short_count = o->until_count && all < o->until_count && !r.interrupted;
	if (short_count)
		fprintf(stderr, "ctload listen: %" PRIu64 " events of the %" PRIu64
			" awaited (--until-count)\n", all, o->until_count);
	if (r.enobufs)
		fprintf(stderr, "ctload listen: %" PRIu64 " overruns (ENOBUFS): events were lost\n",
			r.enobufs);
	return !o->allow_failures && (short_count || r.enobufs || r.truncated) ? 1 : 0;
}

static int cmd_raw_rate(struct ctl_opts *o)
{
	struct report rp = { .json = o->json };
	double flush_before, flush_after;
	uint64_t in_table = 0, max = 0;
	struct ctl_result r;
	int err;

	if ((err = ctl_flush(&flush_before)) < 0)
		die("flush failed: %s", strerror(-err));
	warn_if_table_too_small(o);
	if ((err = ctl_run_batch(o, CTL_OP_CREATE, &r)) < 0)
		die("create failed: %s", strerror(-err));
	if ((err = ctl_count_stats(&in_table, &max)) < 0)
		die("reading the counter failed: %s", strerror(-err));
	if ((err = ctl_flush(&flush_after)) < 0)
		die("flush failed: %s", strerror(-err));

	rep_begin(&rp, "raw-rate");
	rep_u64(&rp, "requested", o->n);
	rep_u64(&rp, "ok", r.ok);
	rep_u64(&rp, "failed", r.failed);
	rep_errors(&rp, r.errors);
	rep_u64(&rp, "in_table", in_table);
	rep_num(&rp, "elapsed_s", r.elapsed, 6);
	rep_num(&rp, "rate_per_s", per_second(r.ok, r.elapsed), 0);
	rep_num(&rp, "cpu_s", r.cpu, 3);
	rep_num(&rp, "rate_per_cpu_s", per_second(r.ok, r.cpu), 0);
	rep_num(&rp, "flush_s", flush_after, 6);
	rep_end(&rp);
	if (o->allow_failures)
		return 0;
	return r.failed || r.overruns || r.ok != o->n ? 1 : 0;
}

/* --- the command line --------------------------------------------------- */

int main(int argc, char **argv)
{
	const char *base = NULL, *dst = NULL;
	const struct command *cmd = NULL;
	struct ctl_opts o = {
		.proto = CTL_TCP,
		.family = AF_INET,
		.timeout = DEFAULT_TIMEOUT,
		.tcp_state = TCP_CONNTRACK_ESTABLISHED,
		.batch_bytes = DEFAULT_BATCH,
		.rcvbuf = DEFAULT_RCVBUF,
	};
	bool family_given = false;
	int c;

	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			cmd = &commands[i];
	if (!cmd) {
		fprintf(stderr, "ctload: unknown command '%s' (try ctload --help)\n", argv[1]);
		return 1;
	}
	cmd_name = cmd->name;

	/* Parse after the command word: argv[1] plays getopt's argv[0]. */
	opterr = 0;
	while ((c = getopt_long(argc - 1, argv + 1, ":", long_opts, NULL)) != -1) {
		char flag[40];

		if (c == ':')
			die("option '%s' needs a value", argv[optind]);
		if (c < 0 || c >= O_COUNT_)
			die("unknown option '%s' (try ctload --help)", argv[optind]);
		if (c == O_HELP) {
			usage(stdout);
			return 0;
		}
		snprintf(flag, sizeof(flag), "--%s", long_opts[c].name);
		if (!(cmd->opts & BIT(c)))
			die("option %s does not apply to %s", flag, cmd->name);
		switch (c) {
		case O_RATE:
			o.rate = parse_seconds(flag, optarg, false);
			break;
		case O_PROTO:
			if (!strcmp(optarg, "tcp"))
				o.proto = CTL_TCP;
			else if (!strcmp(optarg, "udp"))
				o.proto = CTL_UDP;
			else if (!strcmp(optarg, "icmp"))
				o.proto = CTL_ICMP;
			else if (!strcmp(optarg, "mixed"))
				o.proto = CTL_MIXED;
			else
				die("--proto: '%s' is not tcp, udp, icmp or mixed", optarg);
			break;
		case O_FAMILY:
			if (!strcmp(optarg, "4") || !strcmp(optarg, "ipv4"))
				o.family = AF_INET;
			else if (!strcmp(optarg, "6") || !strcmp(optarg, "ipv6"))
				o.family = AF_INET6;
			else
				die("--family: '%s' is not 4 or 6", optarg);
			family_given = true;
			break;
		case O_BASE_ADDR:
			base = optarg;
			break;
		case O_DST_ADDR:
			dst = optarg;
			break;
		case O_ZONE:
			o.zone = (uint16_t)parse_u64(flag, optarg, 0, UINT16_MAX, false);
			o.has_zone = true;
			break;
		case O_TIMEOUT:
			o.timeout = (uint32_t)parse_u64(flag, optarg, 1, UINT32_MAX, false);
			break;
		case O_MARK:
			o.mark = (uint32_t)parse_u64(flag, optarg, 0, UINT32_MAX, false);
			o.has_mark = true;
			break;
		case O_TCP_STATE:
			o.tcp_state = parse_tcp_state(optarg);
			break;
		case O_OFFSET:
			o.offset = parse_u64(flag, optarg, 0, MAX_ENTRIES, false);
			break;
		case O_BATCH:
			o.batch_bytes = parse_u64(flag, optarg, 4096, 64 * 1024 * 1024, true);
			break;
		case O_ACK:
			o.ack = true;
			break;
		case O_RCVBUF:
			o.rcvbuf = parse_u64(flag, optarg, 4096, MAX_BUFFER, true);
			break;
		case O_JSON:
			o.json = true;
			break;
		case O_ALLOW_FAILURES:
			o.allow_failures = true;
			break;
		case O_STATS:
			o.stats = true;
			break;
		case O_SECONDS:
			o.seconds = parse_seconds(flag, optarg, false);
			break;
		case O_UNTIL_COUNT:
			o.until_count = parse_u64(flag, optarg, 1, UINT64_MAX, false);
			break;
		case O_IDLE:
			o.idle = parse_seconds(flag, optarg, false);
			break;
		}
	}

	optind++;       /* back to indexes of argv */
	if (cmd->needs_n) {
		if (optind >= argc)
			die("missing the number of entries N (ctload %s N [options])", cmd->name);
		o.n = parse_u64("N", argv[optind++], 1, MAX_ENTRIES, false);
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);

	if (!strcmp(cmd->name, "count") && !family_given)
		o.family = AF_UNSPEC;
	if (o.family != AF_UNSPEC) {
		parse_addr("--base-addr", base ? base : o.family == AF_INET ? "198.18.0.1" :
			   "2001:db8:1::1", o.family, &o.src);
		parse_addr("--dst-addr", dst ? dst : o.family == AF_INET ? "198.19.0.1" :
			   "2001:db8:2::1", o.family, &o.dst);
	}
	if (cmd->needs_n && (o.offset > MAX_ENTRIES - o.n || o.offset + o.n > ctl_max_entries(&o)))
		die("entries %" PRIu64 "..%" PRIu64 " do not fit: %" PRIu64 " at most from "
		    "--base-addr %s (16384 per address)", o.offset, o.offset + o.n - 1,
		    ctl_max_entries(&o) < MAX_ENTRIES ? ctl_max_entries(&o) : MAX_ENTRIES,
		    base ? base : "198.18.0.1");
	return cmd->run(&o);
}
