/*
 * report.c - render a tree of named values as aligned text, as JSON or as
 * Prometheus metrics.
 *
 * JSON is written as the calls come.  Text needs the widest key of each
 * section before the first line of it can be aligned, so text lines are
 * kept and laid out by report_finish().  Metrics are kept as samples and
 * printed by report_finish(), sorted by name, so that the series of one
 * name stand together under one `# HELP` and `# TYPE`.
 *
 * Only malloc, realloc and free are used, so a test can make them fail.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control/report.h"

#define ROOT_SECTION SIZE_MAX
#define MAX_DECIMALS 17
#define METRIC_PREFIX "ctsyncd"

struct growbuf {
	char *p;
	size_t len;
	size_t cap;
};

struct text_line {
	unsigned depth;         /* number of enclosing sections and items */
	bool heading;
	size_t key;             /* offset of the NUL-terminated key in the pool */
	size_t value;           /* offset of the value in the pool (not for headings) */
	size_t section;         /* index of the enclosing heading, or ROOT_SECTION */
	size_t width;           /* headings: widest key among the section's values */
};

enum frame_kind {
	FRAME_SECTION,
	FRAME_ARRAY,
	FRAME_ITEM,
};

/* An open section, array or item. */
struct frame {
	enum frame_kind kind;
	unsigned text_depth;    /* text: depth of the lines inside */
	size_t text_section;    /* text: heading of the lines inside, or ROOT_SECTION */
	size_t item;            /* arrays: pool offset of the item name */
	size_t prefix_len;      /* metrics: r->prefix.len before this frame */
	size_t labels_len;      /* metrics: r->labels.len before this frame */
	size_t info_len;        /* metrics: r->info.len before this frame */
};

enum sample_type {
	SAMPLE_COUNTER,
	SAMPLE_GAUGE,
	SAMPLE_UNTYPED,
};

/* One series of the metrics: pool offsets of its strings. */
struct sample {
	size_t name, help, labels, value;
	enum sample_type type;
};

struct report {
	enum report_format format;
	bool failed;
	bool finished;
	bool need_comma;        /* JSON: a member precedes in the current object */
	const char *label;      /* report_label() for the next call, or NULL */
	struct growbuf out;
	struct growbuf pool;    /* text lines' and samples' strings */
	struct frame *frames;   /* open sections, arrays and items */
	size_t depth, frames_cap;
	/* Text only. */
	struct text_line *lines;
	size_t nlines, lines_cap;
	size_t root_width;
	/* Metrics only. */
	struct growbuf prefix;  /* "ctsyncd_sync": the name of the open sections */
	struct growbuf labels;  /* `link="0",device="eth1"`: the open items' ids */
	struct growbuf info;    /* `,mode="FTFW"`: info labels of the open frames */
	struct sample *samples;
	size_t nsamples, samples_cap;
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


/* Grow an array of `size`-byte elements to hold one more; false on failure. */
static bool array_grow(struct report *r, void *pp, size_t *cap, size_t n, size_t size)
{
	void **p = pp;
	size_t ncap;
	void *np;

	if (r->failed)
		return false;
	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 32;
	if (ncap > SIZE_MAX / size) {
		r->failed = true;
		return false;
	}
	np = realloc(*p, ncap * size);
	if (!np) {
		r->failed = true;
		return false;
	}
	*p = np;
	*cap = ncap;
	return true;
}

struct report *report_new(enum report_format format)
{
	struct report *r = malloc(sizeof(*r));
	char head[40];

	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->format = format;
	if (format == REPORT_JSON) {
		snprintf(head, sizeof(head), "{\"schema_version\":%d", REPORT_SCHEMA_VERSION);
		buf_str(r, &r->out, head);
		r->need_comma = true;
	} else {
		buf_add(r, &r->out, "", 0);
	}
	buf_str(r, &r->prefix, METRIC_PREFIX);
	buf_add(r, &r->labels, "", 0);
	buf_add(r, &r->info, "", 0);
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
	free(r->frames);
	free(r->lines);
	free(r->prefix.p);
	free(r->labels.p);
	free(r->info.p);
	free(r->samples);
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

static const struct frame *top(const struct report *r)
{
	return r->depth ? &r->frames[r->depth - 1] : NULL;
}

static unsigned text_depth(const struct report *r)
{
	return r->depth ? top(r)->text_depth : 0;
}

static size_t text_section(const struct report *r)
{
	return r->depth ? top(r)->text_section : ROOT_SECTION;
}

static struct text_line *text_line_add(struct report *r)
{
	struct text_line *l;

	if (!array_grow(r, &r->lines, &r->lines_cap, r->nlines, sizeof(*l)))
		return NULL;
	l = &r->lines[r->nlines++];
	memset(l, 0, sizeof(*l));
	l->depth = text_depth(r);
	l->section = text_section(r);
	return l;
}

/* Inside an array only items may come: anything else is left out, in every format. */
static bool in_array(const struct report *r)
{
	return r->depth > 0 && r->frames[r->depth - 1].kind == FRAME_ARRAY;
}

/* The label report_label() set for this call (NULL: none), used up. */
static const char *take_label(struct report *r)
{
	const char *label = r->label;

	r->label = NULL;
	return label;
}

/* ---- metrics ---------------------------------------------------------------- */

/* A name part: [a-z0-9_], anything else becomes '_'. */
static void metric_name_add(struct report *r, struct growbuf *b, const char *s)
{
	size_t off = b->len;

	buf_str(r, b, s);
	if (r->failed)
		return;
	for (size_t i = off; i < b->len; i++) {
		char c = b->p[i];

		if (c >= 'A' && c <= 'Z')
			b->p[i] = (char)(c - 'A' + 'a');
		else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			b->p[i] = '_';
	}
}

/*
 * A label value or a help text as the exposition format wants it: `\`,
 * `"` (label values only) and newline escaped, and every byte that is not
 * part of valid UTF-8 replaced by U+FFFD.
 */
static void metric_escape(struct report *r, struct growbuf *b, const char *s, bool quote)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n > 0) {
		size_t k = utf8_seq_len(p, n);

		if (k == 0) {
			buf_str(r, b, "\xef\xbf\xbd");
			k = 1;
		} else if (*p == '\\') {
			buf_str(r, b, "\\\\");
		} else if (*p == '\n') {
			buf_str(r, b, "\\n");
		} else if (*p == '"' && quote) {
			buf_str(r, b, "\\\"");
		} else {
			buf_add(r, b, (const char *)p, k);
		}
		p += k;
		n -= k;
	}
}

/* `name="value"` onto b, after a comma if `comma`. */
static void metric_label_add(struct report *r, struct growbuf *b, bool comma, const char *name,
			     const char *value)
{
	if (comma)
		buf_char(r, b, ',');
	metric_name_add(r, b, name);
	buf_str(r, b, "=\"");
	metric_escape(r, b, value, true);
	buf_char(r, b, '"');
}

/*
 * One series: <prefix>_<name><suffix>{<labels><extra>} value.  `extra`
 * (more labels, starting with a comma) may be NULL.
 */
static void sample_add(struct report *r, const char *name, const char *suffix,
		       enum sample_type type, const char *help, const char *extra,
		       const char *value)
{
	struct sample *s;
	size_t off;

	if (in_array(r) || !array_grow(r, &r->samples, &r->samples_cap, r->nsamples, sizeof(*s)))
		return;
	s = &r->samples[r->nsamples];
	s->type = type;
	s->name = r->pool.len;
	buf_add(r, &r->pool, r->prefix.p, r->prefix.len);
	buf_char(r, &r->pool, '_');
	metric_name_add(r, &r->pool, name);
	off = r->pool.len;
	/* A counter named "..._total" already is not given a second suffix. */
	if (r->failed || strcmp(suffix, "_total") != 0 || off - s->name < 6 ||
	    memcmp(r->pool.p + off - 6, "_total", 6) != 0)
		buf_str(r, &r->pool, suffix);
	buf_char(r, &r->pool, '\0');
	s->help = r->pool.len;
	metric_escape(r, &r->pool, help, false);
	buf_char(r, &r->pool, '\0');
	s->labels = r->pool.len;
	buf_add(r, &r->pool, r->labels.p, r->labels.len);
	if (extra && *extra)
		buf_str(r, &r->pool, r->labels.len > 0 ? extra : extra + 1);
	buf_char(r, &r->pool, '\0');
	s->value = r->pool.len;
	buf_str(r, &r->pool, value);
	buf_char(r, &r->pool, '\0');
	if (!r->failed)
		r->nsamples++;
}

/* The help of an untyped value: its place in the tree. */
static void untyped_add(struct report *r, const char *key, const char *value)
{
	char help[256];

	snprintf(help, sizeof(help), "%s_%s (no description)", r->prefix.p, key);
	sample_add(r, key, "", SAMPLE_UNTYPED, help, NULL, value);
}

/* A closing frame's info labels, as the series <prefix>_info 1. */
static void info_flush(struct report *r, size_t from)
{
	char help[256];

	if (r->failed || r->info.len <= from)
		return;
	snprintf(help, sizeof(help), "What describes %s: its labels; the value is always 1.",
		 r->prefix.p);
	sample_add(r, "info", "", SAMPLE_GAUGE, help, r->info.p + from, "1");
	r->info.len = from;
	r->info.p[from] = '\0';
}

/* ---- sections, arrays, items ------------------------------------------------ */

static struct frame *frame_push(struct report *r, enum frame_kind kind)
{
	struct frame *f;

	if (!array_grow(r, &r->frames, &r->frames_cap, r->depth, sizeof(*f)))
		return NULL;
	f = &r->frames[r->depth];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->text_depth = text_depth(r);
	f->text_section = text_section(r);
	f->prefix_len = r->prefix.len;
	f->labels_len = r->labels.len;
	f->info_len = r->info.len;
	return f;
}

/* A section or an item: a heading in text; returns false if it failed. */
static bool text_heading(struct report *r, struct frame *f, const char *text, bool underscores)
{
	struct text_line *l = text_line_add(r);

	if (!l)
		return false;
	l->heading = true;
	l->key = pool_add(r, text, underscores);
	f->text_depth++;
	f->text_section = r->nlines - 1;
	return !r->failed;
}

void report_begin(struct report *r, const char *name)
{
	const char *label = take_label(r);
	struct frame *f;

	if (r->finished || r->failed || in_array(r))
		return;
	if (!name)
		name = "";
	f = frame_push(r, FRAME_SECTION);
	if (!f)
		return;
	switch (r->format) {
	case REPORT_JSON:
		json_key(r, name);
		buf_char(r, &r->out, '{');
		r->need_comma = false;
		break;
	case REPORT_TEXT:
		if (!text_heading(r, f, label ? label : name, !label))
			return;
		break;
	case REPORT_PROMETHEUS:
		buf_char(r, &r->prefix, '_');
		metric_name_add(r, &r->prefix, name);
		break;
	}
	if (!r->failed)
		r->depth++;
}

void report_begin_array(struct report *r, const char *name, const char *item)
{
	struct frame *f;

	r->label = NULL;
	if (r->finished || r->failed || in_array(r))
		return;
	f = frame_push(r, FRAME_ARRAY);
	if (!f)
		return;
	if (r->format == REPORT_JSON) {
		json_key(r, name ? name : "");
		buf_char(r, &r->out, '[');
		r->need_comma = false;
	} else if (r->format == REPORT_PROMETHEUS) {
		f->item = r->pool.len;
		buf_str(r, &r->pool, item ? item : name ? name : "");
		buf_char(r, &r->pool, '\0');
	}
	if (!r->failed)
		r->depth++;
}

void report_begin_item(struct report *r, const char *heading)
{
	bool array = in_array(r);
	size_t item = array ? top(r)->item : 0;
	struct frame *f;

	r->label = NULL;
	if (r->finished || r->failed)
		return;
	f = frame_push(r, FRAME_ITEM);
	if (!f)
		return;
	switch (r->format) {
	case REPORT_JSON:
		/* An item outside an array is a section called "item". */
		if (!array)
			json_key(r, "item");
		else if (r->need_comma)
			buf_char(r, &r->out, ',');
		buf_char(r, &r->out, '{');
		r->need_comma = false;
		break;
	case REPORT_TEXT:
		if (!text_heading(r, f, heading ? heading : "", false))
			return;
		break;
	case REPORT_PROMETHEUS:
		buf_char(r, &r->prefix, '_');
		metric_name_add(r, &r->prefix, array ? r->pool.p + item : "item");
		break;
	}
	if (!r->failed)
		r->depth++;
}

void report_end(struct report *r)
{
	const struct frame *f;

	r->label = NULL;
	if (r->finished || r->failed || r->depth == 0)
		return;
	f = top(r);
	switch (r->format) {
	case REPORT_JSON:
		buf_char(r, &r->out, f->kind == FRAME_ARRAY ? ']' : '}');
		r->need_comma = true;
		break;
	case REPORT_TEXT:
		break;
	case REPORT_PROMETHEUS:
		info_flush(r, f->info_len);
		if (r->failed)
			return;
		r->prefix.len = f->prefix_len;
		r->prefix.p[r->prefix.len] = '\0';
		r->labels.len = f->labels_len;
		r->labels.p[r->labels.len] = '\0';
		break;
	}
	r->depth--;
}

void report_label(struct report *r, const char *text)
{
	r->label = text;
}

/* ---- values ----------------------------------------------------------------- */

/* Text and JSON: one key and its value, already rendered for the format. */
static void add_value(struct report *r, const char *key, const char *text, bool json_quoted)
{
	const char *label = take_label(r);
	struct text_line *l;
	size_t width;

	if (r->finished || r->failed || in_array(r))
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
	if (r->format != REPORT_TEXT || (label && !*label))
		return;
	l = text_line_add(r);
	if (!l)
		return;
	l->key = pool_add(r, label ? label : key, !label);
	l->value = pool_add(r, text, false);
	if (r->failed)
		return;
	width = strlen(r->pool.p + l->key);
	if (l->section == ROOT_SECTION) {
		if (width > r->root_width)
			r->root_width = width;
	} else if (width > r->lines[l->section].width) {
		r->lines[l->section].width = width;
	}
}

/* Whether a metric may be added now. */
static bool metrics_open(struct report *r)
{
	if (r->format != REPORT_PROMETHEUS)
		return false;
	r->label = NULL;
	return !r->finished && !r->failed;
}

static void u64_text(char *num, size_t size, uint64_t value)
{
	snprintf(num, size, "%" PRIu64, value);
}

void report_u64(struct report *r, const char *key, uint64_t value)
{
	char num[24];

	u64_text(num, sizeof(num), value);
	if (metrics_open(r))
		untyped_add(r, key ? key : "", num);
	else
		add_value(r, key, num, false);
}

void report_i64(struct report *r, const char *key, int64_t value)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, value);
	if (metrics_open(r))
		untyped_add(r, key ? key : "", num);
	else
		add_value(r, key, num, false);
}

void report_str(struct report *r, const char *key, const char *value)
{
	if (r->format == REPORT_PROMETHEUS) {
		r->label = NULL;
		return;
	}
	if (!value) {
		add_value(r, key, r->format == REPORT_JSON ? "null" : "", false);
		return;
	}
	add_value(r, key, value, true);
}

void report_bool(struct report *r, const char *key, bool value)
{
	if (metrics_open(r))
		untyped_add(r, key ? key : "", value ? "1" : "0");
	else if (r->format == REPORT_JSON)
		add_value(r, key, value ? "true" : "false", false);
	else
		add_value(r, key, value ? "yes" : "no", false);
}

/* `value` with `decimals` digits after the point, as the format spells it. */
static void double_text(const struct report *r, char *num, size_t size, double value,
			int decimals)
{
	char *p;

	if (!isfinite(value)) {
		/* JSON has no NaN or infinity; the exposition format spells them its way. */
		if (r->format == REPORT_JSON)
			snprintf(num, size, "null");
		else if (r->format == REPORT_PROMETHEUS)
			snprintf(num, size, "%s", isnan(value) ? "NaN" : value > 0 ? "+Inf" : "-Inf");
		else
			snprintf(num, size, "%s", isnan(value) ? "nan" : value > 0 ? "inf" : "-inf");
		return;
	}
	if (decimals < 0)
		decimals = 0;
	if (decimals > MAX_DECIMALS)
		decimals = MAX_DECIMALS;
	snprintf(num, size, "%.*f", decimals, value);
	/* The daemon runs in the C locale, but a ',' would break JSON. */
	p = strchr(num, ',');
	if (p)
		*p = '.';
}

/* 1e308 with 17 decimals needs 309 + 1 + 17 digits. */
#define DOUBLE_TEXT_MAX 384

void report_double(struct report *r, const char *key, double value, int decimals)
{
	char num[DOUBLE_TEXT_MAX];

	double_text(r, num, sizeof(num), value, decimals);
	if (metrics_open(r))
		untyped_add(r, key ? key : "", num);
	else
		add_value(r, key, num, false);
}

void report_counter(struct report *r, const char *name, uint64_t value, const char *help)
{
	char num[24];

	u64_text(num, sizeof(num), value);
	if (metrics_open(r))
		sample_add(r, name ? name : "", "_total", SAMPLE_COUNTER, help ? help : "", NULL, num);
	else
		add_value(r, name, num, false);
}

void report_gauge(struct report *r, const char *name, uint64_t value, const char *help)
{
	char num[24];

	u64_text(num, sizeof(num), value);
	if (metrics_open(r))
		sample_add(r, name ? name : "", "", SAMPLE_GAUGE, help ? help : "", NULL, num);
	else
		add_value(r, name, num, false);
}

void report_gauge_double(struct report *r, const char *name, double value, int decimals,
			 const char *help)
{
	char num[DOUBLE_TEXT_MAX];

	double_text(r, num, sizeof(num), value, decimals);
	if (metrics_open(r))
		sample_add(r, name ? name : "", "", SAMPLE_GAUGE, help ? help : "", NULL, num);
	else
		add_value(r, name, num, false);
}

void report_flag(struct report *r, const char *name, bool value, const char *help)
{
	if (metrics_open(r))
		sample_add(r, name ? name : "", "", SAMPLE_GAUGE, help ? help : "", NULL,
			   value ? "1" : "0");
	else if (r->format == REPORT_JSON)
		add_value(r, name, value ? "true" : "false", false);
	else
		add_value(r, name, value ? "yes" : "no", false);
}

char *report_rfc3339(char *buf, size_t size, time_t t)
{
	struct tm tm;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (t == 0 || !gmtime_r(&t, &tm) ||
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		buf[0] = '\0';
	return buf;
}

void report_time(struct report *r, const char *name, time_t t, const char *help)
{
	char when[64], num[24], unix_key[128];

	snprintf(num, sizeof(num), "%lld", (long long)t);
	if (metrics_open(r)) {
		sample_add(r, name ? name : "", "_timestamp_seconds", SAMPLE_GAUGE,
			   help ? help : "", NULL, num);
		return;
	}
	report_rfc3339(when, sizeof(when), t);
	if (r->format == REPORT_TEXT) {
		add_value(r, name, when[0] ? when : "never", false);
		return;
	}
	if (when[0])
		add_value(r, name, when, true);
	else
		add_value(r, name, "null", false);
	snprintf(unix_key, sizeof(unix_key), "%s_unix", name ? name : "");
	add_value(r, unix_key, num, false);
}

void report_info(struct report *r, const char *name, const char *value)
{
	if (r->format != REPORT_PROMETHEUS) {
		report_str(r, name, value);
		return;
	}
	if (!metrics_open(r))
		return;
	/* Each with its comma: the ids of the series come before them. */
	metric_label_add(r, &r->info, true, name ? name : "", value ? value : "");
}

void report_text(struct report *r, const char *label, const char *value)
{
	if (r->format != REPORT_TEXT) {
		r->label = NULL;
		return;
	}
	r->label = label ? label : "?";
	add_value(r, label, value ? value : "", false);
}

void report_id_str(struct report *r, const char *name, const char *label, const char *value)
{
	if (r->format != REPORT_PROMETHEUS) {
		report_str(r, name, value);
		return;
	}
	if (!metrics_open(r))
		return;
	metric_label_add(r, &r->labels, r->labels.len > 0, label ? label : name ? name : "",
			 value ? value : "");
}

void report_id_u64(struct report *r, const char *name, const char *label, uint64_t value)
{
	char num[24];

	u64_text(num, sizeof(num), value);
	if (r->format != REPORT_PROMETHEUS) {
		add_value(r, name, num, false);
		return;
	}
	report_id_str(r, name, label, num);
}

/* ---- rendering -------------------------------------------------------------- */

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

/* By name, then labels, then order of arrival: a name's series together, repeats adjacent. */
static int sample_cmp(const void *a, const void *b, void *arg)
{
	const struct sample *x = a, *y = b;
	const char *pool = arg;
	int c = strcmp(pool + x->name, pool + y->name);

	if (c == 0)
		c = strcmp(pool + x->labels, pool + y->labels);
	if (c == 0)
		c = x->name < y->name ? -1 : x->name > y->name;
	return c;
}

static const char *const sample_type_names[] = {
	[SAMPLE_COUNTER] = "counter",
	[SAMPLE_GAUGE] = "gauge",
	[SAMPLE_UNTYPED] = "untyped",
};

static void render_metrics(struct report *r)
{
	const char *pool = r->pool.p;
	const struct sample *family = NULL, *prev = NULL;

	r->out.len = 0;
	buf_add(r, &r->out, "", 0);
	if (r->nsamples == 0 || r->failed)
		return;
	qsort_r(r->samples, r->nsamples, sizeof(r->samples[0]), sample_cmp, r->pool.p);
	for (size_t i = 0; i < r->nsamples && !r->failed; i++) {
		const struct sample *s = &r->samples[i];

		if (!family || strcmp(pool + family->name, pool + s->name) != 0) {
			family = s;
			prev = NULL;
			buf_str(r, &r->out, "# HELP ");
			buf_str(r, &r->out, pool + s->name);
			if (pool[s->help]) {
				buf_char(r, &r->out, ' ');
				buf_str(r, &r->out, pool + s->help);
			}
			buf_str(r, &r->out, "\n# TYPE ");
			buf_str(r, &r->out, pool + s->name);
			buf_char(r, &r->out, ' ');
			buf_str(r, &r->out, sample_type_names[s->type]);
			buf_char(r, &r->out, '\n');
		}
		if (s->type != family->type ||
		    (prev && strcmp(pool + prev->labels, pool + s->labels) == 0))
			continue;
		prev = s;
		buf_str(r, &r->out, pool + s->name);
		if (pool[s->labels]) {
			buf_char(r, &r->out, '{');
			buf_str(r, &r->out, pool + s->labels);
			buf_char(r, &r->out, '}');
		}
		buf_char(r, &r->out, ' ');
		buf_str(r, &r->out, pool + s->value);
		buf_char(r, &r->out, '\n');
	}
}

const char *report_finish(struct report *r, size_t *len)
{
	if (!r->finished && !r->failed) {
		switch (r->format) {
		case REPORT_JSON:
			while (r->depth > 0)
				report_end(r);
			buf_str(r, &r->out, "}\n");
			break;
		case REPORT_TEXT:
			r->depth = 0;
			render_text(r);
			break;
		case REPORT_PROMETHEUS:
			while (r->depth > 0 && !r->failed)
				report_end(r);
			info_flush(r, 0);
			render_metrics(r);
			break;
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
