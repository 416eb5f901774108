/*
 * report.c - render a tree of named values as aligned text or as JSON.
 *
 * JSON is written as the calls come.  Text needs the widest key of each
 * section before the first line of it can be aligned, so text lines are
 * kept and laid out by report_finish().
 *
 * Only malloc, realloc and free are used, so a test can make them fail.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/report.h"

#define ROOT_SECTION SIZE_MAX
#define MAX_DECIMALS 17

struct growbuf {
	char *p;
	size_t len;
	size_t cap;
};

struct text_line {
	unsigned depth;         /* number of enclosing sections */
	bool heading;
	size_t key;             /* offset of the NUL-terminated key in the pool */
	size_t value;           /* offset of the value in the pool (not for headings) */
	size_t section;         /* index of the enclosing heading, or ROOT_SECTION */
	size_t width;           /* headings: widest key among the section's values */
};

struct report {
	enum report_format format;
	bool failed;
	bool finished;
	unsigned depth;
	bool need_comma;        /* JSON: a member precedes in the current object */
	struct growbuf out;
	/* Text only. */
	struct growbuf pool;
	struct text_line *lines;
	size_t nlines, lines_cap;
	size_t *open;           /* heading index of each open section */
	size_t open_cap;
	size_t root_width;
};

static void buf_reserve(struct report *r, struct growbuf *b, size_t extra)
{
	size_t cap;
	char *p;

	if (r->failed)
		return;
	if (extra > SIZE_MAX - b->len - 1) {
		r->failed = true;
		return;
	}
	if (b->len + extra + 1 <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1) {
		if (cap > SIZE_MAX / 2) {
			cap = b->len + extra + 1;
			break;
		}
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (!p) {
		r->failed = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void buf_add(struct report *r, struct growbuf *b, const char *data, size_t len)
{
	buf_reserve(r, b, len);
	if (r->failed)
		return;
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
}

static void buf_str(struct report *r, struct growbuf *b, const char *s)
{
	buf_add(r, b, s, strlen(s));
}

static void buf_char(struct report *r, struct growbuf *b, char c)
{
	buf_add(r, b, &c, 1);
}

static void buf_spaces(struct report *r, struct growbuf *b, size_t n)
{
	buf_reserve(r, b, n);
	if (r->failed)
		return;
	memset(b->p + b->len, ' ', n);
	b->len += n;
	b->p[b->len] = '\0';
}

struct report *report_new(enum report_format format)
{
	struct report *r = malloc(sizeof(*r));

	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->format = format;
	if (format == REPORT_JSON)
		buf_char(r, &r->out, '{');
	else
		buf_add(r, &r->out, "", 0);
	if (r->failed) {
		report_free(r);
		return NULL;
	}
	return r;
}

void report_free(struct report *r)
{
	if (!r)
		return;
	free(r->out.p);
	free(r->pool.p);
	free(r->lines);
	free(r->open);
	free(r);
}

/*
 * Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if the
 * bytes there are not one: overlong forms, surrogates and code points
 * above U+10FFFF are invalid (RFC 3629).
 */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * A JSON string.  Control characters are escaped, valid UTF-8 passes
 * through, and a byte that is not part of valid UTF-8 becomes \u00XX (its
 * Latin-1 reading), so the output is always valid JSON.
 */
static void json_string(struct report *r, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	char esc[8];

	buf_char(r, &r->out, '"');
	while (n > 0) {
		size_t run = 0, k;

		/* Copy the longest run of bytes that need no escape at once. */
		while (run < n) {
			if (p[run] == '"' || p[run] == '\\' || p[run] < 0x20)
				break;
			k = utf8_seq_len(p + run, n - run);
			if (k == 0)
				break;
			run += k;
		}
		buf_add(r, &r->out, (const char *)p, run);
		p += run;
		n -= run;
		if (n == 0)
			break;
		switch (*p) {
		case '"':
			buf_str(r, &r->out, "\\\"");
			break;
		case '\\':
			buf_str(r, &r->out, "\\\\");
			break;
		case '\b':
			buf_str(r, &r->out, "\\b");
			break;
		case '\f':
			buf_str(r, &r->out, "\\f");
			break;
		case '\n':
			buf_str(r, &r->out, "\\n");
			break;
		case '\r':
			buf_str(r, &r->out, "\\r");
			break;
		case '\t':
			buf_str(r, &r->out, "\\t");
			break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			buf_str(r, &r->out, esc);
			break;
		}
		p++;
		n--;
	}
	buf_char(r, &r->out, '"');
}

static void json_key(struct report *r, const char *key)
{
	if (r->need_comma)
		buf_char(r, &r->out, ',');
	json_string(r, key ? key : "");
	buf_char(r, &r->out, ':');
}

/* Text: copy `s` into the pool, with spaces for underscores if asked and
 * '?' for control characters, so that one value stays on one line. */
static size_t pool_add(struct report *r, const char *s, bool underscores)
{
	size_t off = r->pool.len, n = strlen(s), i;

	buf_add(r, &r->pool, s, n);
	buf_char(r, &r->pool, '\0');
	if (r->failed)
		return 0;
	for (i = off; i < off + n; i++) {
		unsigned char c = (unsigned char)r->pool.p[i];

		if (underscores && c == '_')
			r->pool.p[i] = ' ';
		else if (c < 0x20 || c == 0x7f)
			r->pool.p[i] = '?';
	}
	return off;
}

static struct text_line *text_line_add(struct report *r)
{
	struct text_line *l;

	if (r->failed)
		return NULL;
	if (r->nlines == r->lines_cap) {
		size_t cap = r->lines_cap ? r->lines_cap * 2 : 32;

		if (cap > SIZE_MAX / sizeof(*l)) {
			r->failed = true;
			return NULL;
		}
		l = realloc(r->lines, cap * sizeof(*l));
		if (!l) {
			r->failed = true;
			return NULL;
		}
		r->lines = l;
		r->lines_cap = cap;
	}
	l = &r->lines[r->nlines++];
	memset(l, 0, sizeof(*l));
	l->depth = r->depth;
	l->section = r->depth ? r->open[r->depth - 1] : ROOT_SECTION;
	return l;
}

void report_begin(struct report *r, const char *name)
{
	struct text_line *l;

	if (r->finished || r->failed)
		return;
	if (!name)
		name = "";
	if (r->format == REPORT_JSON) {
		json_key(r, name);
		buf_char(r, &r->out, '{');
		r->need_comma = false;
		r->depth++;
		return;
	}
	if (r->depth == r->open_cap) {
		size_t cap = r->open_cap ? r->open_cap * 2 : 8;
		size_t *open = realloc(r->open, cap * sizeof(*open));

		if (!open) {
			r->failed = true;
			return;
		}
		r->open = open;
		r->open_cap = cap;
	}
	l = text_line_add(r);
	if (!l)
		return;
	l->heading = true;
	l->key = pool_add(r, name, true);
	r->open[r->depth++] = r->nlines - 1;
}

void report_end(struct report *r)
{
	if (r->finished || r->failed || r->depth == 0)
		return;
	r->depth--;
	if (r->format == REPORT_JSON) {
		buf_char(r, &r->out, '}');
		r->need_comma = true;
	}
}

/* One key and its value, already rendered for the report's format. */
static void add_value(struct report *r, const char *key, const char *text, bool json_quoted)
{
	struct text_line *l;
	size_t width;

	if (r->finished || r->failed)
		return;
	if (!key)
		key = "";
	if (r->format == REPORT_JSON) {
		json_key(r, key);
		if (json_quoted)
			json_string(r, text);
		else
			buf_str(r, &r->out, text);
		r->need_comma = true;
		return;
	}
	l = text_line_add(r);
	if (!l)
		return;
	l->key = pool_add(r, key, true);
	l->value = pool_add(r, text, false);
	width = strlen(key);
	if (l->section == ROOT_SECTION) {
		if (width > r->root_width)
			r->root_width = width;
	} else if (width > r->lines[l->section].width) {
		r->lines[l->section].width = width;
	}
}

void report_u64(struct report *r, const char *key, uint64_t value)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, value);
	add_value(r, key, num, false);
}

void report_i64(struct report *r, const char *key, int64_t value)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, value);
	add_value(r, key, num, false);
}

void report_str(struct report *r, const char *key, const char *value)
{
	if (!value) {
		add_value(r, key, r->format == REPORT_JSON ? "null" : "", false);
		return;
	}
	add_value(r, key, value, true);
}

void report_bool(struct report *r, const char *key, bool value)
{
	if (r->format == REPORT_JSON)
		add_value(r, key, value ? "true" : "false", false);
	else
		add_value(r, key, value ? "yes" : "no", false);
}

void report_double(struct report *r, const char *key, double value, int decimals)
{
	char num[384];
	char *p;

	if (!isfinite(value)) {
		/* JSON has no NaN or infinity. */
		if (r->format == REPORT_JSON)
			snprintf(num, sizeof(num), "null");
		else
			snprintf(num, sizeof(num), "%s", isnan(value) ? "nan" :
				 value > 0 ? "inf" : "-inf");
		add_value(r, key, num, false);
		return;
	}
	if (decimals < 0)
		decimals = 0;
	if (decimals > MAX_DECIMALS)
		decimals = MAX_DECIMALS;
	/* 1e308 with 17 decimals needs 309 + 1 + 17 digits: num is big enough. */
	snprintf(num, sizeof(num), "%.*f", decimals, value);
	/* The daemon runs in the C locale, but a ',' would break JSON. */
	p = strchr(num, ',');
	if (p)
		*p = '.';
	add_value(r, key, num, false);
}

static void render_text(struct report *r)
{
	size_t i;

	r->out.len = 0;
	buf_add(r, &r->out, "", 0);
	for (i = 0; i < r->nlines && !r->failed; i++) {
		const struct text_line *l = &r->lines[i];
		const char *key = r->pool.p + l->key;
		size_t width;

		if (l->heading) {
			/* A blank line between top-level blocks, as in conntrackd's output. */
			if (l->depth == 0 && r->out.len > 0)
				buf_char(r, &r->out, '\n');
			buf_spaces(r, &r->out, 2 * (size_t)l->depth);
			buf_str(r, &r->out, key);
			buf_str(r, &r->out, ":\n");
			continue;
		}
		width = l->section == ROOT_SECTION ? r->root_width : r->lines[l->section].width;
		buf_spaces(r, &r->out, 2 * (size_t)l->depth);
		buf_str(r, &r->out, key);
		buf_char(r, &r->out, ':');
		buf_spaces(r, &r->out, width - strlen(key) + 1);
		buf_str(r, &r->out, r->pool.p + l->value);
		buf_char(r, &r->out, '\n');
	}
}

const char *report_finish(struct report *r, size_t *len)
{
	if (!r->finished && !r->failed) {
		if (r->format == REPORT_JSON) {
			while (r->depth > 0)
				report_end(r);
			buf_str(r, &r->out, "}\n");
		} else {
			r->depth = 0;
			render_text(r);
		}
		r->finished = true;
	}
	if (r->failed) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = r->out.len;
	return r->out.p;
}
