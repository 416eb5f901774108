/*
 * parser.c - recursive descent over the conntrackd.conf grammar.
 *
 * Every block is described by a table of its options; the same table drives
 * the dispatch and the "expected ..." list of the error messages, so the two
 * cannot drift apart.  Handlers read their value tokens themselves, because
 * the meaning of a word (number, address, path, name) depends on the option.
 *
 * The parser checks single values (syntax, ranges, lengths) and the facts it
 * can only see while reading (address family of a link, kind of the links,
 * Default).  Checks across options and blocks live in config.c.
 *
 * Nesting depth is fixed by the grammar (at most five levels), so the
 * recursion cannot be driven deep by hostile input.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <syslog.h>

#include "config/config.h"
#include "lexer.h"
#include "parser.h"

/* No list (addresses, helpers, policies, helper names) grows beyond this. */
#define LIST_MAX 65536u

struct parser {
	struct lexer lx;
	struct token look;              /* the next token, already read */
	struct config *cfg;
	struct config_marks *marks;
	const char *name;
	struct config_error *err;
	config_warn_fn warn;
	void *warn_arg;
};

struct option;
typedef int (*option_fn)(struct parser *p, const struct token *kw,
			 const struct option *opt, void *obj);

struct option {
	const char *name;
	option_fn parse;
	size_t offset;                  /* of the field in `obj`, for the generic handlers */
	uint32_t min, max;              /* range of the generic number handlers */
	bool alias;                     /* accepted but not listed in messages */
};

struct block {
	const char *name;               /* as the messages call it */
	const struct option *options;   /* ends with a NULL name */
};

#define FIELD(type, member) offsetof(type, member)

/* ---- tokens and errors -------------------------------------------------- */

static void
next(struct parser *p, struct token *tok)
{
	*tok = p->look;
	lexer_next(&p->lx, &p->look);
}

static int
perr(struct parser *p, const struct token *tok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
perr(struct parser *p, const struct token *tok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_set_verror(p->err, p->name, tok->line, tok->column, fmt, ap);
	va_end(ap);
	return -1;
}

static void
pwarn(struct parser *p, const struct token *tok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
pwarn(struct parser *p, const struct token *tok, const char *fmt, ...)
{
	struct config_error w;
	va_list ap;

	if (p->warn == NULL)
		return;
	va_start(ap, fmt);
	config_set_verror(&w, p->name, tok->line, tok->column, fmt, ap);
	va_end(ap);
	p->warn(p->warn_arg, &w);
}

/*
 * The one message for "this token cannot stand here": it names the token
 * (or the end of file, or a control byte) and what the grammar wanted.
 */
static int
unexpected(struct parser *p, const struct token *tok, const char *expected)
{
	char q[TOKEN_QUOTE_MAX];

	switch (tok->type) {
	case TOK_EOF:
		return perr(p, tok, "unexpected end of file; expected %s", expected);
	case TOK_INVALID:
		return perr(p, tok, "invalid character %s (control bytes are only allowed "
			    "in comments); expected %s", token_quote(tok, q, sizeof(q)), expected);
	default:
		return perr(p, tok, "expected %s, got %s", expected, token_quote(tok, q, sizeof(q)));
	}
}

static int
expect_lbrace(struct parser *p, const char *after)
{
	struct token tok;
	char what[96];

	next(p, &tok);
	if (tok.type == TOK_LBRACE)
		return 0;
	snprintf(what, sizeof(what), "'{' after %s", after);
	return unexpected(p, &tok, what);
}

/* The value `tok` of option `kw` is not `what`. */
static int
bad_value(struct parser *p, const struct token *kw, const struct token *tok, const char *what)
{
	char expected[200];

	snprintf(expected, sizeof(expected), "%s after %.*s", what, (int)kw->len, kw->text);
	return unexpected(p, tok, expected);
}

/* Read the value of option `kw`; it must be a word. */
static int
value_word(struct parser *p, const struct token *kw, const char *what, struct token *tok)
{
	next(p, tok);
	if (tok->type == TOK_WORD)
		return 0;
	return bad_value(p, kw, tok, what);
}

/* "A, B or C" from the visible options of a block. */
static void
list_options(const struct option *opts, char *buf, size_t len)
{
	const struct option *o;
	size_t used = 0, total = 0, i = 0;

	for (o = opts; o->name; o++)
		if (!o->alias)
			total++;
	buf[0] = '\0';
	for (o = opts; o->name; o++) {
		const char *sep;
		int n;

		if (o->alias)
			continue;
		sep = i == 0 ? "" : i + 1 == total ? " or " : ", ";
		n = snprintf(buf + used, len - used, "%s%s", sep, o->name);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
		i++;
	}
}

static const struct option *
find_option(const struct option *opts, const struct token *tok)
{
	const struct option *o;

	for (o = opts; o->name; o++)
		if (token_is(tok, o->name))
			return o;
	return NULL;
}

static const struct block block_ftfw, block_notrack, block_alarm;

/*
 * An option of another Mode is a common slip (DisableInternalCache under
 * FTFW); say which Mode takes it rather than just "unknown".
 */
static int
unknown_option(struct parser *p, const struct block *b, const struct token *tok)
{
	static const struct block *const modes[] = { &block_ftfw, &block_notrack, &block_alarm };
	char q[TOKEN_QUOTE_MAX], list[400], owners[64] = "";
	size_t i;

	list_options(b->options, list, sizeof(list));
	if (tok->type != TOK_WORD) {
		char what[480];

		snprintf(what, sizeof(what), "an option of block %s (%s) or '}'", b->name, list);
		return unexpected(p, tok, what);
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (b == modes[i] || (b != &block_ftfw && b != &block_notrack && b != &block_alarm))
			continue;
		if (find_option(modes[i]->options, tok))
			snprintf(owners + strlen(owners), sizeof(owners) - strlen(owners), "%s%s",
				 owners[0] ? " and " : "", modes[i]->name);
	}
	if (owners[0])
		return perr(p, tok, "option %s is only accepted in %s; %s accepts %s",
			    token_quote(tok, q, sizeof(q)), owners, b->name, list);
	return perr(p, tok, "unknown option %s in block %s; expected %s",
		    token_quote(tok, q, sizeof(q)), b->name, list);
}

/* The body of a block, after its '{', up to and including its '}'. */
static int
parse_block(struct parser *p, const struct block *b, const struct token *open, void *obj)
{
	const struct option *o;
	struct token tok;

	for (;;) {
		next(p, &tok);
		if (tok.type == TOK_RBRACE)
			return 0;
		if (tok.type == TOK_EOF)
			return perr(p, &tok, "unexpected end of file; block %s opened at line %u "
				    "needs its closing '}'", b->name, open->line);
		o = tok.type == TOK_WORD ? find_option(b->options, &tok) : NULL;
		if (o == NULL)
			return unknown_option(p, b, &tok);
		if (o->parse(p, &tok, o, obj) < 0)
			return -1;
	}
}

/* ---- values ------------------------------------------------------------- */

static bool
all_digits(const struct token *tok, size_t from)
{
	size_t i;

	if (tok->len <= from)
		return false;
	for (i = from; i < tok->len; i++)
		if (tok->text[i] < '0' || tok->text[i] > '9')
			return false;
	return true;
}

/* The word ends with `suffix` (in any case). */
static bool
token_suffix_is(const struct token *tok, const char *suffix)
{
	size_t n = strlen(suffix);

	return tok->len >= n && strncasecmp(tok->text + tok->len - n, suffix, n) == 0;
}

/* Decimal digits to a number, saturating just above `max` so overflow is seen. */
static uint64_t
digits_value(const struct token *tok, size_t from, uint64_t max)
{
	uint64_t v = 0;
	size_t i;

	for (i = from; i < tok->len; i++) {
		v = v * 10 + (uint64_t)(tok->text[i] - '0');
		if (v > max)
			return max + 1;
	}
	return v;
}

static int
read_u32(struct parser *p, const struct token *kw, uint32_t min, uint32_t max, uint32_t *out)
{
	struct token tok;
	char what[64], q[TOKEN_QUOTE_MAX];
	uint64_t v;

	snprintf(what, sizeof(what), "a decimal number (%u..%u)", min, max);
	if (value_word(p, kw, what, &tok) < 0)
		return -1;
	if (!all_digits(&tok, 0))
		return bad_value(p, kw, &tok, what);
	v = digits_value(&tok, 0, max);
	if (v < min || v > max)
		return perr(p, &tok, "%.*s %s is out of range; expected %u..%u",
			    (int)kw->len, kw->text, token_quote(&tok, q, sizeof(q)), min, max);
	*out = (uint32_t)v;
	return 0;
}

/* on/off/yes/no in any case; false (and *value untouched) for any other word. */
static bool
word_bool(const struct token *tok, bool *value)
{
	if (token_is_nocase(tok, "on") || token_is_nocase(tok, "yes")) {
		*value = true;
		return true;
	}
	if (token_is_nocase(tok, "off") || token_is_nocase(tok, "no")) {
		*value = false;
		return true;
	}
	return false;
}

static bool
name_char(char c, bool first)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
		return true;
	return !first && ((c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-');
}

/* A name as conntrackd.conf knows it: [A-Za-z][A-Za-z0-9._-]*, at most `max` bytes. */
static int
check_name(struct parser *p, const struct token *tok, const char *what, size_t max)
{
	char q[TOKEN_QUOTE_MAX];
	size_t i;

	for (i = 0; i < tok->len; i++)
		if (!name_char(tok->text[i], i == 0))
			return perr(p, tok, "%s is not a valid %s; expected a letter followed by "
				    "letters, digits, '.', '_' or '-'",
				    token_quote(tok, q, sizeof(q)), what);
	if (tok->len > max)
		return perr(p, tok, "%s %s is too long; at most %zu characters",
			    what, token_quote(tok, q, sizeof(q)), max);
	return 0;
}

static int
read_name(struct parser *p, const struct token *kw, const char *what, size_t max,
	  char *out, struct token *tok)
{
	char expected[64];

	snprintf(expected, sizeof(expected), "a %s", what);
	if (value_word(p, kw, expected, tok) < 0 || check_name(p, tok, what, max) < 0)
		return -1;
	memcpy(out, tok->text, tok->len);
	out[tok->len] = '\0';
	return 0;
}

static int
check_path(struct parser *p, const struct token *kw, const struct token *tok, char *out)
{
	if (tok->len >= CONFIG_PATH_MAX)
		return perr(p, tok, "path of %.*s is too long (%zu bytes); at most %d bytes",
			    (int)kw->len, kw->text, tok->len, CONFIG_PATH_MAX - 1);
	memcpy(out, tok->text, tok->len);
	out[tok->len] = '\0';
	return 0;
}

/*
 * An address literal, with "/prefix" only where `prefix_ok`.  inet_pton is a
 * pure function of its input, so the parser stays free of system calls.
 * Returns 0, -1 on an error, or 1 when a prefix too long for the family
 * leaves the entry out (warned).
 */
static int
read_addr(struct parser *p, const struct token *kw, int family, bool prefix_ok,
	  struct config_addr *out, struct token *tok)
{
	const char *what = family == AF_INET ? "an IPv4 address" : "an IPv6 address";
	char buf[INET6_ADDRSTRLEN + 8], expected[64], q[TOKEN_QUOTE_MAX];
	unsigned maxprefix = family == AF_INET ? 32 : 128;
	size_t alen;
	const char *slash;

	snprintf(expected, sizeof(expected), "%s%s", what, prefix_ok ? " (with an optional /prefix)" : "");
	if (value_word(p, kw, expected, tok) < 0)
		return -1;
	slash = memchr(tok->text, '/', tok->len);
	alen = slash ? (size_t)(slash - tok->text) : tok->len;
	if (alen >= sizeof(buf))
		return bad_value(p, kw, tok, expected);
	memcpy(buf, tok->text, alen);
	buf[alen] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(family, buf, &out->u) != 1)
		return bad_value(p, kw, tok, expected);
	out->family = family;
	out->prefix = (uint8_t)maxprefix;
	if (slash == NULL)
		return 0;
	if (!prefix_ok)
		return perr(p, tok, "%.*s takes a plain address, without a /prefix; got %s",
			    (int)kw->len, kw->text, token_quote(tok, q, sizeof(q)));
	{
		struct token pt = *tok;
		uint64_t v;

		pt.text = slash + 1;
		pt.len = tok->len - alen - 1;
		if (!all_digits(&pt, 0))
			return perr(p, tok, "bad prefix length in %s; expected /0../%u",
				    token_quote(tok, q, sizeof(q)), maxprefix);
		/* A number, but too long for the family: 1.4.7 warns and leaves the entry out. */
		if ((v = digits_value(&pt, 0, maxprefix)) > maxprefix) {
			pwarn(p, tok, "prefix length of %s is longer than /%u: this entry is left out, as "
			      "conntrackd 1.4.7 leaves it out", token_quote(tok, q, sizeof(q)), maxprefix);
			return 1;
		}
		out->prefix = (uint8_t)v;
	}
	return 0;
}

/* Clear the host bits, so that consumers can compare networks directly. */
static void
mask_addr(struct config_addr *a)
{
	uint8_t *b = a->family == AF_INET ? (uint8_t *)&a->u.v4 : a->u.v6.s6_addr;
	unsigned nbytes = a->family == AF_INET ? 4 : 16, i;

	for (i = 0; i < nbytes; i++) {
		unsigned bit = i * 8;

		if (bit >= a->prefix)
			b[i] = 0;
		else if (a->prefix - bit < 8)
			b[i] &= (uint8_t)(0xff << (8 - (a->prefix - bit)));
	}
}

/* Grow a list by one element; `what` names it in the error. */
static int
list_grow(struct parser *p, const struct token *at, void **arr, unsigned count,
	  size_t elem, const char *what)
{
	void *n;

	if (count >= LIST_MAX)
		return perr(p, at, "too many entries in %s; at most %u", what, LIST_MAX);
	/*
	 * The capacity is not stored: it is 4, then doubles each time the
	 * count reaches a power of two (count < LIST_MAX, so no overflow).
	 */
	if (count != 0 && (count < 4 || (count & (count - 1)) != 0))
		return 0;
	n = realloc(*arr, (count ? (size_t)count * 2 : 4) * elem);
	if (n == NULL)
		return perr(p, at, "out of memory while reading %s", what);
	*arr = n;
	return 0;
}

/* ---- generic option handlers -------------------------------------------- */

static void *
field(void *obj, const struct option *opt)
{
	return (char *)obj + opt->offset;
}

static int
opt_u32(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return read_u32(p, kw, opt->min, opt->max, field(obj, opt));
}

static int
opt_u16(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	uint32_t v;

	if (read_u32(p, kw, opt->min, opt->max, &v) < 0)
		return -1;
	*(uint16_t *)field(obj, opt) = (uint16_t)v;
	return 0;
}

static int
opt_bool(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct token tok;

	if (value_word(p, kw, "on, off, yes or no", &tok) < 0)
		return -1;
	if (!word_bool(&tok, field(obj, opt)))
		return bad_value(p, kw, &tok, "on, off, yes or no");
	return 0;
}

/* EventSource ctnetlink|bpf (doc/bpf-events.md) */
static int
opt_event_source(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct token tok;

	if (value_word(p, kw, "ctnetlink or bpf", &tok) < 0)
		return -1;
	if (token_is(&tok, "bpf"))
		*(bool *)field(obj, opt) = true;
	else if (token_is(&tok, "ctnetlink"))
		*(bool *)field(obj, opt) = false;
	else
		return bad_value(p, kw, &tok, "ctnetlink or bpf");
	return 0;
}

static int
opt_path(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct token tok;

	if (value_word(p, kw, "an absolute path", &tok) < 0)
		return -1;
	if (tok.text[0] != '/')
		return bad_value(p, kw, &tok, "an absolute path (starting with '/')");
	return check_path(p, kw, &tok, field(obj, opt));
}

/* LogFile on|off|/path; `opt->min` says which default file "on" means. */
static int
opt_logfile(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	const char *on_path = opt->min ? CONFIG_DEFAULT_STATS_LOGFILE : CONFIG_DEFAULT_LOGFILE;
	char *out = field(obj, opt);
	struct token tok;
	bool on;

	if (value_word(p, kw, "on, off or an absolute path", &tok) < 0)
		return -1;
	if (word_bool(&tok, &on)) {
		snprintf(out, CONFIG_PATH_MAX, "%s", on ? on_path : "");
		return 0;
	}
	if (tok.text[0] != '/')
		return bad_value(p, kw, &tok, "on, off or an absolute path (starting with '/')");
	return check_path(p, kw, &tok, out);
}

static int
opt_syslog(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	const struct config_name_value *f;
	int *out = field(obj, opt);
	struct token tok;
	bool on;

	if (value_word(p, kw, "on, off, daemon or local0..local7", &tok) < 0)
		return -1;
	if (word_bool(&tok, &on)) {
		*out = on ? LOG_DAEMON : -1;
		return 0;
	}
	for (f = config_syslog_names; f->name; f++) {
		if (token_is_nocase(&tok, f->name)) {
			*out = f->value;
			return 0;
		}
	}
	/* conntrackd 1.4.7 starts with a warning; so do we, and the setting stays as it was. */
	{
		char q[TOKEN_QUOTE_MAX];

		pwarn(p, &tok, "%s is not a syslog facility (on, off, daemon, local0..local7): this %.*s "
		      "line is ignored, as conntrackd 1.4.7 ignores it", token_quote(&tok, q, sizeof(q)),
		      (int)kw->len, kw->text);
	}
	return 0;
}

/* ---- General ------------------------------------------------------------ */

static int
opt_overrun_resync(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	uint32_t *out = field(obj, opt);
	struct token tok;
	bool on;

	if (value_word(p, kw, "on, off or a number of seconds", &tok) < 0)
		return -1;
	if (word_bool(&tok, &on)) {
		*out = on ? CONFIG_OVERRUN_RESYNC_ON : 0;
		return 0;
	}
	if (!all_digits(&tok, 0))
		return bad_value(p, kw, &tok, "on, off or a number of seconds (0..2147483647)");
	if (digits_value(&tok, 0, INT32_MAX) > INT32_MAX) {
		char q[TOKEN_QUOTE_MAX];

		return perr(p, &tok, "NetlinkOverrunResync %s is out of range; expected 0..%d",
			    token_quote(&tok, q, sizeof(q)), INT32_MAX);
	}
	*out = (uint32_t)digits_value(&tok, 0, INT32_MAX);
	return 0;
}

/* Upstream ignores Nice with a warning; the value is kept only to be printed back. */
static int
opt_nice(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_general *g = obj;
	const char *expected = "a number between -20 and 19";
	char q[TOKEN_QUOTE_MAX];
	struct token tok;
	size_t from = 0;
	uint64_t v;

	if (value_word(p, kw, expected, &tok) < 0)
		return -1;
	if (tok.text[0] == '-' || tok.text[0] == '+')
		from = 1;
	if (!all_digits(&tok, from))
		return bad_value(p, kw, &tok, expected);
	v = digits_value(&tok, from, 20);
	if (v > (tok.text[0] == '-' ? 20u : 19u))
		return perr(p, &tok, "Nice %s is out of range; expected -20..19",
			    token_quote(&tok, q, sizeof(q)));
	g->nice = tok.text[0] == '-' ? -(int)v : (int)v;
	pwarn(p, kw, "Nice is obsolete and has no effect; set the priority of the process "
	      "with nice(1) instead");
	return 0;
}

static bool
group_char(char c, size_t i, size_t len)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_')
		return true;
	if (i == 0)
		return false;
	return (c >= '0' && c <= '9') || c == '.' || c == '-' || (c == '$' && i + 1 == len);
}

/*
 * UNIX { Group name|gid }, ctsyncd's own: who besides root may use the
 * socket.  A number is taken as it is; a name is only checked for its form
 * here (the parser makes no system call) and looked up by
 * config_parse_file(), which reports an unknown one at this position.
 */
static int
opt_unix_group(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	const char *expected = "a group name or a numeric gid";
	struct config_general *g = obj;
	char q[TOKEN_QUOTE_MAX];
	struct token tok;
	size_t i;

	if (value_word(p, kw, expected, &tok) < 0)
		return -1;
	if (all_digits(&tok, 0)) {
		uint64_t v = digits_value(&tok, 0, UINT32_MAX - 1);

		if (v > UINT32_MAX - 1)
			return perr(p, &tok, "Group %s is out of range; expected a gid 0..%u",
				    token_quote(&tok, q, sizeof(q)), UINT32_MAX - 1);
		g->unix_gid = (gid_t)v;
	} else {
		for (i = 0; i < tok.len; i++)
			if (!group_char(tok.text[i], i, tok.len))
				return perr(p, &tok, "%s is not a valid group name; expected a letter "
					    "or '_' followed by letters, digits, '.', '_' or '-', or a "
					    "numeric gid", token_quote(&tok, q, sizeof(q)));
		g->unix_gid = CONFIG_NO_GID;
	}
	if (tok.len >= sizeof(g->unix_group))
		return perr(p, &tok, "Group %s is too long; at most %zu characters",
			    token_quote(&tok, q, sizeof(q)), sizeof(g->unix_group) - 1);
	memcpy(g->unix_group, tok.text, tok.len);
	g->unix_group[tok.len] = '\0';
	g->unix_group_line = tok.line;
	g->unix_group_column = tok.column;
	return 0;
}

static const struct option unix_options[] = {
	{ "Path", opt_path, FIELD(struct config_general, unix_path), 0, 0, false },
	{ "Backlog", opt_u32, FIELD(struct config_general, unix_backlog), 0, INT32_MAX, false },
	{ "Group", opt_unix_group, 0, 0, 0, false },
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct block block_unix = { "UNIX", unix_options };

static int
opt_sched_type(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_general *g = obj;
	struct token tok;

	if (value_word(p, kw, "RR or FIFO", &tok) < 0)
		return -1;
	if (token_is_nocase(&tok, "RR"))
		g->sched_policy = SCHED_RR;
	else if (token_is_nocase(&tok, "FIFO"))
		g->sched_policy = SCHED_FIFO;
	else
		return bad_value(p, kw, &tok, "RR or FIFO");
	return 0;
}

static int
opt_sched_priority(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_general *g = obj;
	uint32_t v;

	if (read_u32(p, kw, 0, 99, &v) < 0)
		return -1;
	g->sched_priority = (int)v;
	g->sched_priority_set = true;
	return 0;
}

static const struct option scheduler_options[] = {
	{ "Type", opt_sched_type, 0, 0, 0, false },
	{ "Priority", opt_sched_priority, 0, 0, 0, false },
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct block block_scheduler = { "Scheduler", scheduler_options };

static int
opt_subblock(struct parser *p, const struct token *kw, const struct block *b, void *obj)
{
	if (expect_lbrace(p, b->name) < 0)
		return -1;
	return parse_block(p, b, kw, obj);
}

static int
opt_unix(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return opt_subblock(p, kw, &block_unix, obj);
}

static int
opt_scheduler(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return opt_subblock(p, kw, &block_scheduler, obj);
}

/* ---- Filter ------------------------------------------------------------- */

/* "Accept" or "Ignore" after Protocol/Address/State; returns 1 for Accept. */
static int
read_policy(struct parser *p, const struct token *kw)
{
	struct token tok;

	if (value_word(p, kw, "Accept or Ignore", &tok) < 0)
		return -1;
	if (token_is(&tok, "Accept"))
		return 1;
	if (token_is(&tok, "Ignore"))
		return 0;
	return bad_value(p, kw, &tok, "Accept or Ignore");
}

/*
 * A Filter part has one policy.  conntrackd 1.4.7 lets a later block
 * silently replace an earlier one's, for the entries of both blocks; we
 * do the same, so that such a config means the same, and warn, since it
 * is almost always a mistake.
 */
static int
set_policy(struct parser *p, const struct token *kw, bool *set, bool *accept, int policy)
{
	if (*set && *accept != (policy == 1))
		pwarn(p, kw, "%.*s %s after an earlier %.*s %s: a Filter part has one policy, and as in "
		      "conntrackd 1.4.7 the last one applies to the entries of both blocks (all are %s)",
		      (int)kw->len, kw->text, policy ? "Accept" : "Ignore", (int)kw->len, kw->text,
		      policy ? "Ignore" : "Accept", policy ? "accepted" : "ignored");
	*set = true;
	*accept = policy == 1;
	return 0;
}

static int
opt_filter_protocol(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_filter_protocols *fp = &((struct config_filter *)obj)->protocols;
	const char *expected = "a protocol name (TCP, UDP, UDPLITE, SCTP, DCCP, ICMP, IPv6-ICMP, "
		"GRE, ESP, AH, ...), a protocol number 0..255, or '}'";
	const struct config_name_value *pn;
	struct token tok;
	int policy;

	if ((policy = read_policy(p, kw)) < 0 || set_policy(p, kw, &fp->set, &fp->accept, policy) < 0)
		return -1;
	if (expect_lbrace(p, "Protocol Accept|Ignore") < 0)
		return -1;
	for (;;) {
		int proto = -1;

		next(p, &tok);
		if (tok.type == TOK_RBRACE)
			return 0;
		if (tok.type != TOK_WORD) {
			if (tok.type == TOK_EOF)
				return perr(p, &tok, "unexpected end of file; block Protocol opened "
					    "at line %u needs its closing '}'", kw->line);
			return unexpected(p, &tok, expected);
		}
		if (all_digits(&tok, 0)) {
			uint64_t v = digits_value(&tok, 0, 255);

			if (v <= 255)
				proto = (int)v;
		} else {
			for (pn = config_protocol_names; pn->name; pn++) {
				if (token_is_nocase(&tok, pn->name)) {
					proto = pn->value;
					break;
				}
			}
		}
		if (proto < 0) {
			char q[TOKEN_QUOTE_MAX];

			return perr(p, &tok, "unknown protocol %s in Protocol filter; expected %s",
				    token_quote(&tok, q, sizeof(q)), expected);
		}
		fp->bitmap[proto / 8] |= (uint8_t)(1u << (proto % 8));
	}
}

static int
filter_address(struct parser *p, const struct token *kw, int family, void *obj)
{
	struct config_filter_addresses *fa = obj;
	struct config_addr a;
	struct token tok;

	switch (read_addr(p, kw, family, true, &a, &tok)) {
	case 0:
		break;
	case 1:
		return 0;       /* left out, with a warning */
	default:
		return -1;
	}
	mask_addr(&a);
	if (list_grow(p, &tok, (void **)&fa->addrs, fa->count, sizeof(*fa->addrs), "Address filter") < 0)
		return -1;
	fa->addrs[fa->count++] = a;
	return 0;
}

static int
opt_filter_ipv4(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return filter_address(p, kw, AF_INET, obj);
}

static int
opt_filter_ipv6(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return filter_address(p, kw, AF_INET6, obj);
}

static const struct option address_options[] = {
	{ "IPv4_address", opt_filter_ipv4, 0, 0, 0, false },
	{ "IPv6_address", opt_filter_ipv6, 0, 0, 0, false },
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct block block_address = { "Address", address_options };

static int
opt_filter_address(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_filter_addresses *fa = &((struct config_filter *)obj)->addresses;
	int policy;

	if ((policy = read_policy(p, kw)) < 0 || set_policy(p, kw, &fa->set, &fa->accept, policy) < 0)
		return -1;
	if (expect_lbrace(p, "Address Accept|Ignore") < 0)
		return -1;
	return parse_block(p, &block_address, kw, fa);
}

/* State Accept|Ignore { STATE... for TCP [STATE... for TCP]... } */
static int
opt_filter_state(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_filter_states *fs = &((struct config_filter *)obj)->states;
	const char *expected = "a TCP state (SYN_SENT, SYN_RECV, ESTABLISHED, FIN_WAIT, "
		"CLOSE_WAIT, LAST_ACK, TIME_WAIT, CLOSE, CLOSED or LISTEN)";
	const struct config_name_value *sn;
	struct token tok;
	unsigned pending = 0;   /* states read since the last "for TCP" */
	int policy;

	if ((policy = read_policy(p, kw)) < 0 || set_policy(p, kw, &fs->set, &fs->accept, policy) < 0)
		return -1;
	if (expect_lbrace(p, "State Accept|Ignore") < 0)
		return -1;
	for (;;) {
		next(p, &tok);
		if (tok.type == TOK_RBRACE && pending == 0)
			return 0;
		if (tok.type == TOK_EOF && pending == 0)
			return perr(p, &tok, "unexpected end of file; block State opened at line "
				    "%u needs its closing '}'", kw->line);
		if (token_is(&tok, "for") && pending > 0) {
			struct token proto;

			next(p, &proto);
			if (!token_is(&proto, "TCP"))
				return unexpected(p, &proto, "TCP after 'for' (states only exist for TCP)");
			pending = 0;
			continue;
		}
		for (sn = config_tcp_state_names; sn->name; sn++)
			if (token_is(&tok, sn->name))
				break;
		if (sn->name == NULL) {
			char what[256];

			snprintf(what, sizeof(what), "%s%s", expected,
				 pending ? " or 'for TCP'" : " or '}'");
			return unexpected(p, &tok, what);
		}
		fs->tcp_states |= (uint16_t)(1u << sn->value);
		pending++;
	}
}

static const struct option filter_options[] = {
	{ "Protocol", opt_filter_protocol, 0, 0, 0, false },
	{ "Address", opt_filter_address, 0, 0, 0, false },
	{ "State", opt_filter_state, 0, 0, 0, false },
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct block block_filter = { "Filter", filter_options };

/* Filter [From Userspace|Kernelspace] { ... } */
static int
opt_filter(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_filter *f = &((struct config_general *)obj)->filter;
	struct token from, tok;

	f->set = true;
	if (token_is(&p->look, "From")) {
		next(p, &from);
		if (value_word(p, &from, "Userspace or Kernelspace", &tok) < 0)
			return -1;
		if (token_is(&tok, "Kernelspace"))
			f->kernelspace = true;
		else if (token_is(&tok, "Userspace"))
			f->kernelspace = false;
		else
			return bad_value(p, &from, &tok, "Userspace or Kernelspace");
	}
	if (expect_lbrace(p, "Filter") < 0)
		return -1;
	return parse_block(p, &block_filter, kw, f);
}

#define G(member) FIELD(struct config_general, member)
static const struct option general_options[] = {
	{ "HashSize", opt_u32, G(hash_size), 1, UINT32_MAX, false },
	{ "HashLimit", opt_u32, G(hash_limit), 1, UINT32_MAX, false },
	{ "LogFile", opt_logfile, G(logfile), 0, 0, false },
	{ "Syslog", opt_syslog, G(syslog_facility), 0, 0, false },
	{ "LockFile", opt_path, G(lockfile), 0, 0, false },
	{ "UNIX", opt_unix, 0, 0, 0, false },
	{ "NetlinkBufferSize", opt_u32, G(netlink_buffer_size), 0, INT32_MAX, false },
	{ "SocketBufferSize", opt_u32, G(netlink_buffer_size), 0, INT32_MAX, true },
	{ "NetlinkBufferSizeMaxGrowth", opt_u32, G(netlink_buffer_max_growth), 0, INT32_MAX, false },
	{ "SocketBufferSizeMaxGrowth", opt_u32, G(netlink_buffer_max_growth), 0, INT32_MAX, true },
	{ "SocketBufferSizeMaxGrown", opt_u32, G(netlink_buffer_max_growth), 0, INT32_MAX, true },
	{ "NetlinkOverrunResync", opt_overrun_resync, G(netlink_overrun_resync), 0, 0, false },
	{ "NetlinkEventsReliable", opt_bool, G(netlink_events_reliable), 0, 0, false },
	{ "PollSecs", opt_u32, G(poll_secs), 1, INT32_MAX, false },
	{ "EventIterationLimit", opt_u32, G(event_iteration_limit), 1, INT32_MAX, false },
	{ "EventSource", opt_event_source, G(event_bpf), 0, 0, false },
	{ "Nice", opt_nice, 0, 0, 0, false },
	{ "Scheduler", opt_scheduler, 0, 0, 0, false },
	{ "Systemd", opt_bool, G(systemd), 0, 0, false },
	{ "Filter", opt_filter, 0, 0, 0, false },
	{ NULL, NULL, 0, 0, 0, false },
};
#undef G
static const struct block block_general = { "General", general_options };

/* ---- Sync: modes -------------------------------------------------------- */

#define S(member) FIELD(struct config_sync, member)
#define OPT_COMMIT { "CommitTimeout", opt_u32, S(commit_timeout), 0, INT32_MAX, false }
#define OPT_PURGE { "PurgeTimeout", opt_u32, S(purge_timeout), 0, INT32_MAX, false }
#define OPT_REFRESH { "RefreshTime", opt_u32, S(refresh_time), 1, INT32_MAX, false }
#define OPT_CACHE { "CacheTimeout", opt_u32, S(cache_timeout), 1, INT32_MAX, false }
#define OPT_NO_EXT { "DisableExternalCache", opt_bool, S(disable_external_cache), 0, 0, false }
#define OPT_RESYNC { "StartupResync", opt_bool, S(startup_resync), 0, 0, false }
#define OPT_HOT { "HotStandby", opt_bool, S(hot_standby), 0, 0, false }

/* A-priori mode (doc/apriori.md): ConfirmQueue turns it on. */
static int
opt_confirm_queue(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	uint32_t v;

	if (read_u32(p, kw, opt->min, opt->max, &v) < 0)
		return -1;
	((struct config_sync *)obj)->confirm_queue = (int)v;
	return 0;
}

/* It waits for acknowledgements, which only FTFW has. */
static int
opt_confirm_elsewhere(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return perr(p, kw, "%.*s: a-priori mode waits for every peer's acknowledgement of a new "
		    "connection, which only Mode FTFW gives; move it into Mode FTFW { }",
		    (int)kw->len, kw->text);
}

#define OPT_CONFIRM_ELSEWHERE \
	{ "ConfirmQueue", opt_confirm_elsewhere, 0, 0, 0, true }, \
	{ "ConfirmTimeout", opt_confirm_elsewhere, 0, 0, 0, true }, \
	{ "ConfirmHeldMax", opt_confirm_elsewhere, 0, 0, 0, true }

static const struct option ftfw_options[] = {
	{ "ResendQueueSize", opt_u32, S(resend_queue_size), 1, INT32_MAX, false },
	{ "ACKWindowSize", opt_u32, S(ack_window_size), 1, INT32_MAX, false },
	OPT_COMMIT, OPT_PURGE, OPT_NO_EXT, OPT_RESYNC, OPT_HOT,
	{ "ConfirmQueue", opt_confirm_queue, 0, 0, 65535, false },
	{ "ConfirmTimeout", opt_u32, S(confirm_timeout_ms), 1, 10000, false },
	{ "ConfirmHeldMax", opt_u32, S(confirm_held_max), 1, 1048576, false },
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct option notrack_options[] = {
	OPT_COMMIT, OPT_PURGE,
	{ "DisableInternalCache", opt_bool, S(disable_internal_cache), 0, 0, false },
	OPT_NO_EXT, OPT_RESYNC, OPT_HOT, OPT_CONFIRM_ELSEWHERE,
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct option alarm_options[] = {
	OPT_REFRESH, OPT_CACHE, OPT_COMMIT, OPT_PURGE, OPT_CONFIRM_ELSEWHERE,
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct block block_ftfw = { "Mode FTFW", ftfw_options };
static const struct block block_notrack = { "Mode NOTRACK", notrack_options };
static const struct block block_alarm = { "Mode ALARM", alarm_options };

static int
opt_mode(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_sync *s = obj;
	const struct block *b;
	struct token tok;

	if (value_word(p, kw, "FTFW, NOTRACK or ALARM", &tok) < 0)
		return -1;
	/* conntrackd 1.4.7 takes the last Mode; so do we, with a word about it. */
	if (p->marks->mode_line) {
		char q[TOKEN_QUOTE_MAX];

		pwarn(p, kw, "a second Mode (%s): it replaces the Mode of line %u, as in conntrackd 1.4.7; "
		      "the options of both blocks apply", token_quote(&tok, q, sizeof(q)), p->marks->mode_line);
	}
	if (token_is_nocase(&tok, "FTFW")) {
		s->mode = CONFIG_MODE_FTFW;
	} else if (token_is_nocase(&tok, "NOTRACK")) {
		s->mode = CONFIG_MODE_NOTRACK;
	} else if (token_is_nocase(&tok, "ALARM")) {
		s->mode = CONFIG_MODE_ALARM;
	} else if (token_is_nocase(&tok, "nack")) {
		s->mode = CONFIG_MODE_FTFW;
		pwarn(p, &tok, "Mode nack is the old name of Mode FTFW; please rename it");
	} else if (token_is_nocase(&tok, "persistent")) {
		s->mode = CONFIG_MODE_ALARM;
		pwarn(p, &tok, "Mode persistent is the old name of Mode ALARM; please rename it");
	} else {
		return bad_value(p, kw, &tok, "FTFW, NOTRACK or ALARM");
	}
	p->marks->mode_line = kw->line;
	b = s->mode == CONFIG_MODE_FTFW ? &block_ftfw :
	    s->mode == CONFIG_MODE_NOTRACK ? &block_notrack : &block_alarm;
	if (expect_lbrace(p, b->name) < 0)
		return -1;
	return parse_block(p, b, kw, s);
}

/* ---- Sync: links -------------------------------------------------------- */

static int
link_family(struct parser *p, const struct token *kw, struct config_link *l, int family)
{
	if (l->family != 0 && l->family != family)
		return perr(p, kw, "%.*s mixes address families in block %s: a link uses "
			    "either IPv4 or IPv6 addresses", (int)kw->len, kw->text,
			    config_link_kind_name(l->kind));
	l->family = family;
	return 0;
}

static bool
is_multicast(const struct config_addr *a)
{
	if (a->family == AF_INET)
		return (ntohl(a->u.v4.s_addr) & 0xf0000000u) == 0xe0000000u;
	return a->u.v6.s6_addr[0] == 0xff;
}

static int
link_address(struct parser *p, const struct token *kw, void *obj, int family, bool dest)
{
	struct config_link *l = obj;
	struct config_addr a;
	struct token tok;

	if (read_addr(p, kw, family, false, &a, &tok) < 0 || link_family(p, kw, l, family) < 0)
		return -1;
	if (l->kind == CONFIG_LINK_MCAST && !is_multicast(&a)) {
		char q[TOKEN_QUOTE_MAX];

		return perr(p, &tok, "%s is not a multicast address; the %.*s of a Multicast "
			    "block is the group (%s)", token_quote(&tok, q, sizeof(q)),
			    (int)kw->len, kw->text,
			    family == AF_INET ? "224.0.0.0/4" : "ff00::/8");
	}
	if (dest)
		l->dest = a;
	else
		l->local = a;
	return 0;
}

static int
opt_link_ipv4(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return link_address(p, kw, obj, AF_INET, false);
}

static int
opt_link_ipv6(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return link_address(p, kw, obj, AF_INET6, false);
}

static int
opt_link_ipv4_dest(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return link_address(p, kw, obj, AF_INET, true);
}

static int
opt_link_ipv6_dest(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return link_address(p, kw, obj, AF_INET6, true);
}

static int
opt_mcast_ifaddr(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_link *l = obj;
	struct config_addr a;
	struct token tok;

	if (read_addr(p, kw, AF_INET, false, &a, &tok) < 0 || link_family(p, kw, l, AF_INET) < 0)
		return -1;
	l->mcast_ifaddr = a.u.v4;
	return 0;
}

/* Upstream reads it and does nothing with it: IPv6 uses the Interface's index. */
static int
opt_mcast_ipv6_ifaddr(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_addr a;
	struct token tok;

	if (read_addr(p, kw, AF_INET6, false, &a, &tok) < 0)
		return -1;
	pwarn(p, kw, "IPv6_interface is ignored; an IPv6 multicast link uses the device "
	      "named by Interface");
	return 0;
}

static int
opt_interface(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_link *l = obj;
	struct token tok;

	return read_name(p, kw, "interface name", IF_NAMESIZE - 1, l->ifname, &tok);
}

#define L(member) FIELD(struct config_link, member)
#define LINK_COMMON \
	{ "Interface", opt_interface, 0, 0, 0, false }, \
	{ "SndSocketBuffer", opt_u32, L(sndbuf), 0, INT32_MAX, false }, \
	{ "RcvSocketBuffer", opt_u32, L(rcvbuf), 0, INT32_MAX, false }, \
	{ "Checksum", opt_bool, L(checksum), 0, 0, false }

static const struct option mcast_options[] = {
	{ "IPv4_address", opt_link_ipv4, 0, 0, 0, false },
	{ "IPv6_address", opt_link_ipv6, 0, 0, 0, false },
	{ "IPv4_interface", opt_mcast_ifaddr, 0, 0, 0, false },
	{ "IPv6_interface", opt_mcast_ipv6_ifaddr, 0, 0, 0, false },
	{ "Group", opt_u16, L(port), 1, 65535, false },
	LINK_COMMON,
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct option udp_options[] = {
	{ "IPv4_address", opt_link_ipv4, 0, 0, 0, false },
	{ "IPv6_address", opt_link_ipv6, 0, 0, 0, false },
	{ "IPv4_Destination_Address", opt_link_ipv4_dest, 0, 0, 0, false },
	{ "IPv6_Destination_Address", opt_link_ipv6_dest, 0, 0, 0, false },
	{ "Port", opt_u16, L(port), 1, 65535, false },
	LINK_COMMON,
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct option tcp_options[] = {
	{ "IPv4_address", opt_link_ipv4, 0, 0, 0, false },
	{ "IPv6_address", opt_link_ipv6, 0, 0, 0, false },
	{ "IPv4_Destination_Address", opt_link_ipv4_dest, 0, 0, 0, false },
	{ "IPv6_Destination_Address", opt_link_ipv6_dest, 0, 0, 0, false },
	{ "Port", opt_u16, L(port), 1, 65535, false },
	LINK_COMMON,
	{ "ErrorQueueLength", opt_u32, L(error_queue_len), 1, INT32_MAX, false },
	{ NULL, NULL, 0, 0, 0, false },
};
#undef L
static const struct block block_mcast = { "Multicast", mcast_options };
static const struct block block_udp = { "UDP", udp_options };
static const struct block block_tcp = { "TCP", tcp_options };

/* Multicast|UDP|TCP [Default] { ... }; opt->min is the link kind. */
static int
opt_link(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	enum config_link_kind kind = (enum config_link_kind)opt->min;
	const struct block *b = kind == CONFIG_LINK_MCAST ? &block_mcast :
				kind == CONFIG_LINK_UDP ? &block_udp : &block_tcp;
	struct config_sync *s = obj;
	struct config_link *l;
	struct token tok;
	bool is_default = false;
	unsigned i;

	if (token_is(&p->look, "Default")) {
		next(p, &tok);
		is_default = true;
	}
	if (s->nlinks >= CONFIG_MAX_LINKS)
		return perr(p, kw, "too many link blocks; at most %d (Multicast, UDP or TCP)",
			    CONFIG_MAX_LINKS);
	if (s->nlinks > 0 && s->links[0].kind != kind)
		return perr(p, kw, "%s cannot be mixed with %s links (line %u); all links of "
			    "Sync use one transport", b->name,
			    config_link_kind_name(s->links[0].kind), s->links[0].line);
	for (i = 0; is_default && i < s->nlinks; i++)
		if (s->links[i].is_default)
			return perr(p, kw, "a second Default link; the link at line %u is "
				    "already the Default", s->links[i].line);
	l = &s->links[s->nlinks++];
	memset(l, 0, sizeof(*l));
	l->kind = kind;
	l->is_default = is_default;
	l->checksum = true;
	l->error_queue_len = CONFIG_DEFAULT_ERROR_QUEUE_LEN;
	l->line = kw->line;
	if (expect_lbrace(p, is_default ? "Default" : b->name) < 0)
		return -1;
	return parse_block(p, b, kw, l);
}

/* ---- Sync: Options ------------------------------------------------------ */

static int
opt_expectation_sync(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	const char *expected = "on, off or '{' with a list of helper names";
	struct config_sync *s = obj;
	struct token tok;
	bool on;

	next(p, &tok);
	if (tok.type == TOK_WORD && word_bool(&tok, &on)) {
		s->expectation_sync = on;
		s->expect_helper_count = 0;
		return 0;
	}
	if (tok.type != TOK_LBRACE)
		return bad_value(p, kw, &tok, expected);
	s->expect_helper_count = 0;
	for (;;) {
		next(p, &tok);
		if (tok.type == TOK_RBRACE)
			break;
		if (tok.type != TOK_WORD)
			return unexpected(p, &tok, "a helper name or '}'");
		if (check_name(p, &tok, "helper name", CONFIG_HELPER_NAME_MAX - 1) < 0 ||
		    list_grow(p, &tok, (void **)&s->expect_helpers, s->expect_helper_count,
			      sizeof(*s->expect_helpers), "ExpectationSync") < 0)
			return -1;
		memcpy(s->expect_helpers[s->expect_helper_count], tok.text, tok.len);
		s->expect_helpers[s->expect_helper_count][tok.len] = '\0';
		s->expect_helper_count++;
	}
	if (s->expect_helper_count == 0)
		return perr(p, kw, "ExpectationSync { } lists no helper; write ExpectationSync "
			    "on to synchronise the expectations of every helper");
	s->expectation_sync = true;
	return 0;
}

static const struct option sync_opts_options[] = {
	{ "TCPWindowTracking", opt_bool, S(tcp_window_tracking), 0, 0, false },
	{ "ExpectationSync", opt_expectation_sync, 0, 0, 0, false },
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct block block_sync_opts = { "Options", sync_opts_options };

static int
opt_sync_opts(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return opt_subblock(p, kw, &block_sync_opts, obj);
}

/*
 * Key /path: at most twice (the key that sends, then one still accepted
 * during a roll-over).  Only the path is kept; the daemon reads the file.
 */
static int
opt_key(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_sync *s = obj;
	struct token tok;
	char path[CONFIG_PATH_MAX];

	(void)opt;
	if (value_word(p, kw, "the absolute path of a key file", &tok) < 0)
		return -1;
	if (tok.text[0] != '/')
		return bad_value(p, kw, &tok, "the absolute path of a key file (starting with '/')");
	if (check_path(p, kw, &tok, path) < 0)
		return -1;
	if (s->nkeys == CONFIG_MAX_KEYS)
		return perr(p, kw, "a third Key (%s); at most two: the key that sends, and the one "
			    "still accepted while a pair rolls over (lines %u and %u)",
			    path, s->key_lines[0], s->key_lines[1]);
	if (s->nkeys == 1 && strcmp(s->keys[0], path) == 0)
		return perr(p, kw, "Key %s is given twice (line %u)", path, s->key_lines[0]);
	memcpy(s->keys[s->nkeys], path, sizeof(path));
	s->key_lines[s->nkeys++] = kw->line;
	return 0;
}

/*
 * A duration: seconds as a plain number, as every timer of the file is
 * written ("30", "30s"), or milliseconds with "ms" ("300ms").  `min_ms`
 * and `max_s` bound it.
 */
static int
read_duration_ms(struct parser *p, const struct token *kw, uint32_t min_ms, uint32_t max_s,
		 uint32_t *out)
{
	struct token tok, num;
	char what[96], q[TOKEN_QUOTE_MAX];
	uint64_t v, scale = 1000;

	snprintf(what, sizeof(what), "a duration: seconds (\"30\") or milliseconds (\"300ms\"), "
		 "%ums..%us", min_ms, max_s);
	if (value_word(p, kw, what, &tok) < 0)
		return -1;
	num = tok;
	if (num.len > 2 && token_suffix_is(&num, "ms")) {
		num.len -= 2;
		scale = 1;
	} else if (num.len > 1 && token_suffix_is(&num, "s")) {
		num.len -= 1;
	}
	if (!all_digits(&num, 0))
		return bad_value(p, kw, &tok, what);
	v = digits_value(&num, 0, (uint64_t)max_s * 1000u) * scale;
	if (v < min_ms || v > (uint64_t)max_s * 1000u)
		return perr(p, &tok, "%.*s %s is out of range; expected %ums..%us", (int)kw->len, kw->text,
			    token_quote(&tok, q, sizeof(q)), min_ms, max_s);
	*out = (uint32_t)v;
	return 0;
}

/* PeerTimeout and PeerSilentWarning: ALARM's defaults differ, unless written (config.c). */
static int
opt_peer_timeout(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	struct config_sync *s = obj;

	(void)opt;
	s->peer_timeout_set = true;
	p->marks->peer_timeout_line = kw->line;
	return read_duration_ms(p, kw, CONFIG_MIN_PEER_TIMEOUT_MS, 86400, &s->peer_timeout_ms);
}

static int
opt_alive_interval(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	p->marks->alive_line = kw->line;
	return opt_u32(p, kw, opt, obj);
}

static int
opt_silent_warning(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	((struct config_sync *)obj)->health.peer_silent_warning_set = true;
	return opt_u32(p, kw, opt, obj);
}

/* Sync { Health { ... } }, ctsyncd's own: the thresholds of `-s health`. */
static const struct option health_options[] = {
	{ "PeerSilentWarning", opt_silent_warning, S(health.peer_silent_warning), 0, 86400, false },
	{ "ResendBacklogWarning", opt_u32, S(health.backlog_warning), 0, 86400, false },
	{ "ResendBacklogCritical", opt_u32, S(health.backlog_critical), 0, 86400, false },
	{ "RecentErrors", opt_u32, S(health.recent_errors), 1, 86400, false },
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct block block_health = { "Health", health_options };

static int
opt_health(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return opt_subblock(p, kw, &block_health, obj);
}

static const struct option sync_options[] = {
	{ "Mode", opt_mode, 0, 0, 0, false },
	{ "Key", opt_key, 0, 0, 0, false },
	{ "PeerTimeout", opt_peer_timeout, 0, 0, 0, false },
	{ "AliveInterval", opt_alive_interval, S(alive_interval_ms), CONFIG_MIN_ALIVE_INTERVAL_MS,
	  CONFIG_DEFAULT_ALIVE_INTERVAL_MS, false },
	{ "Health", opt_health, 0, 0, 0, false },
	{ "Multicast", opt_link, 0, CONFIG_LINK_MCAST, 0, false },
	{ "UDP", opt_link, 0, CONFIG_LINK_UDP, 0, false },
	{ "TCP", opt_link, 0, CONFIG_LINK_TCP, 0, false },
	{ "Options", opt_sync_opts, 0, 0, 0, false },
	OPT_REFRESH, OPT_CACHE, OPT_COMMIT, OPT_PURGE,
	{ NULL, NULL, 0, 0, 0, false },
};
#undef S
static const struct block block_sync = { "Sync", sync_options };

/* ---- Stats ------------------------------------------------------------- */

static const struct option stats_options[] = {
	{ "LogFile", opt_logfile, FIELD(struct config_stats, logfile), 1, 0, false },
	{ "Syslog", opt_syslog, FIELD(struct config_stats, syslog_facility), 0, 0, false },
	{ NULL, NULL, 0, 0, 0, false },
};
static const struct block block_stats = { "Stats", stats_options };


/* ---- top level ---------------------------------------------------------- */

static int
top_general(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return opt_subblock(p, kw, &block_general, &p->cfg->general);
}

static int
top_sync(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	if (p->marks->sync_line == 0)
		p->marks->sync_line = kw->line;
	return opt_subblock(p, kw, &block_sync, &p->cfg->sync);
}

static int
top_stats(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	if (p->marks->stats_line == 0)
		p->marks->stats_line = kw->line;
	return opt_subblock(p, kw, &block_stats, &p->cfg->stats);
}

/*
 * conntrackd's user-space helpers need the kernel's nfnetlink_cthelper and
 * a reader of each helper's NFQUEUE.  ctsyncd runs none: a Helper block it
 * took would leave the rules' queued packets unread, and those
 * connections stalled, so it is refused, naming what is missing.
 */
static int
top_helper(struct parser *p, const struct token *kw, const struct option *opt, void *obj)
{
	return perr(p, kw, "Helper: user-space conntrack helpers are not supported by ctsyncd (it runs no "
		    "NFQUEUE helper and does not use nfnetlink_cthelper), so packets queued for them "
		    "would have no reader; remove the Helper block and use the kernel's own helpers "
		    "(nf_conntrack_ftp, ...) with an nftables 'ct helper' rule");
}

static const struct option top_options[] = {
	{ "General", top_general, 0, 0, 0, false },
	{ "Sync", top_sync, 0, 0, 0, false },
	{ "Stats", top_stats, 0, 0, 0, false },
	{ "Helper", top_helper, 0, 0, 0, false },
	{ NULL, NULL, 0, 0, 0, false },
};

int
config_parse_text(struct config *cfg, struct config_marks *marks, const char *name,
		  const char *text, size_t len, struct config_error *err,
		  config_warn_fn warn, void *warn_arg)
{
	struct parser p = {
		.cfg = cfg, .marks = marks, .name = name, .err = err,
		.warn = warn, .warn_arg = warn_arg,
	};
	const struct option *o;
	struct token tok;

	lexer_init(&p.lx, text, len);
	lexer_next(&p.lx, &p.look);
	for (;;) {
		next(&p, &tok);
		if (tok.type == TOK_EOF)
			return 0;
		o = find_option(top_options, &tok);
		if (o == NULL) {
			char q[TOKEN_QUOTE_MAX];

			if (tok.type == TOK_WORD)
				return perr(&p, &tok, "unknown block %s at top level; expected "
					    "General, Sync, Stats or Helper",
					    token_quote(&tok, q, sizeof(q)));
			return unexpected(&p, &tok, "General, Sync, Stats or Helper");
		}
		if (o->parse(&p, &tok, o, NULL) < 0)
			return -1;
	}
}
