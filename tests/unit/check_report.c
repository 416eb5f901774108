/*
 * check_report.c - the report renderer: aligned text, JSON (checked by a
 * small validator below and against exact strings), escaping, nesting,
 * and allocation failure; then `-s link` rendered from a link snapshot.
 *
 * Linked with -Wl,--wrap=malloc,--wrap=realloc so that a test can make the
 * n-th allocation fail.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control/link_report.h"
#include "control/report.h"

/* ---- allocation failure injection ---------------------------------- */

void *__real_malloc(size_t size);
void *__real_realloc(void *ptr, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_realloc(void *ptr, size_t size);

static long alloc_countdown = -1;       /* < 0: never fail */
static long alloc_failures;

static bool alloc_should_fail(void)
{
	if (alloc_countdown < 0)
		return false;
	if (alloc_countdown == 0) {
		alloc_failures++;
		return true;
	}
	alloc_countdown--;
	return false;
}

void *__wrap_malloc(size_t size)
{
	return alloc_should_fail() ? NULL : __real_malloc(size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
	return alloc_should_fail() ? NULL : __real_realloc(ptr, size);
}

/* ---- a strict little JSON validator (RFC 8259) ---------------------- */

struct json_check {
	const char *p, *end;
	int depth;
};

static bool jc_value(struct json_check *j);

static void jc_ws(struct json_check *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool jc_lit(struct json_check *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return false;
	j->p += n;
	return true;
}

static bool jc_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool jc_string(struct json_check *j)
{
	if (j->p >= j->end || *j->p != '"')
		return false;
	j->p++;
	while (j->p < j->end) {
		unsigned char c = (unsigned char)*j->p;

		if (c == '"') {
			j->p++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\') {
			j->p++;
			if (j->p >= j->end)
				return false;
			if (*j->p == 'u') {
				int k;

				for (k = 1; k <= 4; k++)
					if (j->p + k >= j->end || !jc_hex(j->p[k]))
						return false;
				j->p += 5;
				continue;
			}
			if (!strchr("\"\\/bfnrt", *j->p))
				return false;
			j->p++;
			continue;
		}
		if (c >= 0x80) {
			/* Well-formed UTF-8 only. */
			int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
			unsigned cp;
			int k;

			if (len == 0 || c > 0xf4 || j->end - j->p < len)
				return false;
			cp = c & (0xff >> (len + 1));
			for (k = 1; k < len; k++) {
				unsigned char cc = (unsigned char)j->p[k];

				if ((cc & 0xc0) != 0x80)
					return false;
				cp = (cp << 6) | (cc & 0x3f);
			}
			if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
			    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
				return false;
			j->p += len;
			continue;
		}
		j->p++;
	}
	return false;
}

static bool jc_number(struct json_check *j)
{
	const char *start = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end)
		return false;
	if (*j->p == '0') {
		j->p++;
	} else if (*j->p >= '1' && *j->p <= '9') {
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	} else {
		return false;
	}
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return false;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return false;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	return j->p > start;
}

static bool jc_object(struct json_check *j)
{
	j->p++;
	jc_ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		return true;
	}
	for (;;) {
		jc_ws(j);
		if (!jc_string(j))
			return false;
		jc_ws(j);
		if (j->p >= j->end || *j->p != ':')
			return false;
		j->p++;
		if (!jc_value(j))
			return false;
		jc_ws(j);
		if (j->p >= j->end)
			return false;
		if (*j->p == '}') {
			j->p++;
			return true;
		}
		if (*j->p != ',')
			return false;
		j->p++;
	}
}

static bool jc_array(struct json_check *j)
{
	j->p++;
	jc_ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		return true;
	}
	for (;;) {
		if (!jc_value(j))
			return false;
		jc_ws(j);
		if (j->p >= j->end)
			return false;
		if (*j->p == ']') {
			j->p++;
			return true;
		}
		if (*j->p != ',')
			return false;
		j->p++;
	}
}

static bool jc_value(struct json_check *j)
{
	bool ok;

	jc_ws(j);
	if (j->p >= j->end || ++j->depth > 64)
		return false;
	switch (*j->p) {
	case '{':
		ok = jc_object(j);
		break;
	case '[':
		ok = jc_array(j);
		break;
	case '"':
		ok = jc_string(j);
		break;
	case 't':
		ok = jc_lit(j, "true");
		break;
	case 'f':
		ok = jc_lit(j, "false");
		break;
	case 'n':
		ok = jc_lit(j, "null");
		break;
	default:
		ok = jc_number(j);
		break;
	}
	j->depth--;
	return ok;
}

/* One JSON object, then exactly one newline. */
static bool json_valid(const char *s, size_t len)
{
	struct json_check j = { s, s + len, 0 };

	if (len < 3 || s[0] != '{' || s[len - 1] != '\n' || strlen(s) != len)
		return false;
	if (!jc_value(&j))
		return false;
	return j.p == s + len - 1;
}

START_TEST(json_checker_rejects_bad_json)
{
	static const char *const bad[] = {
		"{\n", "{\"a\":}\n", "{\"a\":1,}\n", "{\"a\":01}\n", "{\"a\":NaN}\n",
		"{\"a\":\"\x01\"}\n", "{\"a\":\"\xff\"}\n", "{\"a\":\"\\x\"}\n", "{a:1}\n",
		"{\"a\":1}", "{\"a\":1}\n\n", "{\"a\":\"\xed\xa0\x80\"}\n", "{\"a\":1.}\n",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!json_valid(bad[i], strlen(bad[i])), "accepted %s", bad[i]);
	{
		const char *good = "{\"a\":[1,-2.5e3,true,null,{}],\"b\":\"\\u00e9\xc3\xa9\"}\n";

		ck_assert_msg(json_valid(good, strlen(good)), "rejected %s", good);
	}
}
END_TEST

/* ---- helpers --------------------------------------------------------- */

static void assert_output(struct report *r, const char *expected)
{
	size_t len = 12345;
	const char *out = report_finish(r, &len);

	ck_assert_msg(out != NULL, "report_finish returned NULL");
	ck_assert_msg(strcmp(out, expected) == 0, "output:\n%s\nexpected:\n%s", out, expected);
	ck_assert_uint_eq(len, strlen(expected));
}

static void assert_valid_json(struct report *r)
{
	size_t len;
	const char *out = report_finish(r, &len);

	ck_assert_msg(out != NULL, "report_finish returned NULL");
	ck_assert_msg(json_valid(out, len), "invalid JSON: %s", out);
}

/* The same tree for both renderings. */
static void fill_stats(struct report *r)
{
	report_begin(r, "cache_internal");
	report_u64(r, "current_active_connections", 4);
	report_u64(r, "created", 12);
	report_i64(r, "delta", -3);
	report_end(r);
	report_begin(r, "link");
	report_str(r, "interface", "eth1");
	report_bool(r, "up", true);
	report_double(r, "loss_ratio", 0.125, 2);
	report_begin(r, "tx");
	report_u64(r, "bytes", UINT64_MAX);
	report_end(r);
	report_end(r);
}

/* ---- text ------------------------------------------------------------ */

START_TEST(text_aligns_keys_per_section_and_nests)
{
	struct report *r = report_new(REPORT_TEXT);

	fill_stats(r);
	assert_output(r,
		"cache internal:\n"
		"  current active connections: 4\n"
		"  created:                    12\n"
		"  delta:                      -3\n"
		"\n"
		"link:\n"
		"  interface:  eth1\n"
		"  up:         yes\n"
		"  loss ratio: 0.12\n"
		"  tx:\n"
		"    bytes: 18446744073709551615\n");
	report_free(r);
}
END_TEST

START_TEST(text_root_keys_and_control_chars)
{
	struct report *r = report_new(REPORT_TEXT);

	report_str(r, "a_b", "line\nbreak\ttab");
	report_bool(r, "longer_key", false);
	report_str(r, "nothing", NULL);
	assert_output(r,
		"a b:        line?break?tab\n"
		"longer key: no\n"
		"nothing:    \n");
	report_free(r);
}
END_TEST

START_TEST(text_empty_report_is_empty_string)
{
	struct report *r = report_new(REPORT_TEXT);

	assert_output(r, "");
	report_free(r);
}
END_TEST

START_TEST(text_keeps_underscores_out_of_values)
{
	struct report *r = report_new(REPORT_TEXT);

	report_begin(r, "daemon");
	report_str(r, "config", "/etc/ct_syncd/x_y.conf");
	report_end(r);
	assert_output(r, "daemon:\n  config: /etc/ct_syncd/x_y.conf\n");
	report_free(r);
}
END_TEST

/* ---- JSON ------------------------------------------------------------ */

START_TEST(json_exact_nested_objects)
{
	struct report *r = report_new(REPORT_JSON);

	fill_stats(r);
	assert_output(r,
		"{\"schema_version\":1,\"cache_internal\":{\"current_active_connections\":4,\"created\":12,"
		"\"delta\":-3},\"link\":{\"interface\":\"eth1\",\"up\":true,"
		"\"loss_ratio\":0.12,\"tx\":{\"bytes\":18446744073709551615}}}\n");
	report_free(r);
}
END_TEST

START_TEST(json_empty_report_is_empty_object)
{
	struct report *r = report_new(REPORT_JSON);

	assert_output(r, "{\"schema_version\":1}\n");
	report_free(r);
}
END_TEST

START_TEST(json_escapes_strings)
{
	struct report *r = report_new(REPORT_JSON);

	report_str(r, "quote", "a\"b\\c/d");
	report_str(r, "ctl", "\n\r\t\b\f\x01\x1f\x7f");
	report_str(r, "utf8", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	report_str(r, "bad", "\xff\xc0\xaf\xed\xa0\x80\xe2\x82");
	report_str(r, "k\"ey", NULL);
	assert_output(r,
		"{\"schema_version\":1,\"quote\":\"a\\\"b\\\\c/d\","
		"\"ctl\":\"\\n\\r\\t\\b\\f\\u0001\\u001f\x7f\","
		"\"utf8\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
		"\"bad\":\"\\u00ff\\u00c0\\u00af\\u00ed\\u00a0\\u0080\\u00e2\\u0082\","
		"\"k\\\"ey\":null}\n");
	report_free(r);
}
END_TEST

START_TEST(json_invalid_utf8_always_valid_json)
{
	/* Every single byte, and every byte pair, as a value. */
	struct report *r = report_new(REPORT_JSON);
	char s[3];
	unsigned a, b;

	for (a = 1; a < 256; a++) {
		s[0] = (char)a;
		s[1] = '\0';
		report_str(r, "one", s);
		for (b = 1; b < 256; b += 7) {
			s[1] = (char)b;
			s[2] = '\0';
			report_str(r, "two", s);
		}
	}
	assert_valid_json(r);
	report_free(r);
}
END_TEST

START_TEST(json_doubles)
{
	struct report *r = report_new(REPORT_JSON);

	report_double(r, "a", 1.5, 2);
	report_double(r, "b", 2.0 / 3.0, 0);
	report_double(r, "c", -0.25, -4);
	report_double(r, "d", NAN, 3);
	report_double(r, "e", INFINITY, 3);
	report_double(r, "f", -INFINITY, 3);
	report_double(r, "g", 1e300, 1);
	report_double(r, "h", 0.1, 40);
	assert_valid_json(r);
	{
		const char *out = report_finish(r, NULL);

		ck_assert_msg(strstr(out, "\"a\":1.50,\"b\":1,\"c\":-0,\"d\":null,\"e\":null,"
				     "\"f\":null,") != NULL, "%s", out);
		/* At most 17 decimals. */
		ck_assert_msg(strstr(out, "\"h\":0.10000000000000001}") != NULL, "%s", out);
	}
	report_free(r);
}
END_TEST

START_TEST(text_doubles_not_finite)
{
	struct report *r = report_new(REPORT_TEXT);

	report_double(r, "a", NAN, 1);
	report_double(r, "b", INFINITY, 1);
	report_double(r, "c", -INFINITY, 1);
	report_double(r, "d", 3.14159, 3);
	assert_output(r, "a: nan\nb: inf\nc: -inf\nd: 3.142\n");
	report_free(r);
}
END_TEST

START_TEST(json_integers_extremes)
{
	struct report *r = report_new(REPORT_JSON);

	report_i64(r, "min", INT64_MIN);
	report_i64(r, "max", INT64_MAX);
	report_u64(r, "zero", 0);
	report_bool(r, "no", false);
	assert_output(r, "{\"schema_version\":1,\"min\":-9223372036854775808,\"max\":9223372036854775807,"
			 "\"zero\":0,\"no\":false}\n");
	report_free(r);
}
END_TEST

START_TEST(unbalanced_sections_are_closed)
{
	struct report *r = report_new(REPORT_JSON);

	report_end(r);                  /* ignored: nothing open */
	report_begin(r, "a");
	report_begin(r, "b");
	report_u64(r, "x", 1);
	assert_output(r, "{\"schema_version\":1,\"a\":{\"b\":{\"x\":1}}}\n");
	report_free(r);

	r = report_new(REPORT_TEXT);
	report_end(r);
	report_begin(r, "a");
	report_u64(r, "x", 1);
	assert_output(r, "a:\n  x: 1\n");
	report_free(r);
}
END_TEST

START_TEST(finish_is_idempotent_and_final)
{
	struct report *r = report_new(REPORT_JSON);
	const char *a, *b;

	report_u64(r, "x", 1);
	a = report_finish(r, NULL);
	report_u64(r, "y", 2);           /* ignored after finish */
	report_begin(r, "z");
	b = report_finish(r, NULL);
	ck_assert_ptr_eq(a, b);
	ck_assert_str_eq(b, "{\"schema_version\":1,\"x\":1}\n");
	report_free(r);
	report_free(NULL);
}
END_TEST

START_TEST(deep_and_large_reports)
{
	enum report_format fmt;

	for (fmt = REPORT_TEXT; fmt <= REPORT_PROMETHEUS; fmt++) {
		struct report *r = report_new(fmt);
		const char *out;
		size_t len, lines = 0, i;
		char key[32];

		for (i = 0; i < 40; i++)
			report_begin(r, "level");
		for (i = 0; i < 5000; i++) {
			snprintf(key, sizeof(key), "key_%zu", i);
			report_u64(r, key, i);
		}
		for (i = 0; i < 40; i++)
			report_end(r);
		for (i = 0; i < 2000; i++) {
			report_begin(r, "s");
			report_str(r, "v", "x");
			report_end(r);
		}
		out = report_finish(r, &len);
		ck_assert_ptr_nonnull(out);
		if (fmt == REPORT_JSON) {
			ck_assert_msg(json_valid(out, len), "invalid JSON (%zu bytes)", len);
		} else if (fmt == REPORT_PROMETHEUS) {
			for (i = 0; i < len; i++)
				lines += out[i] == '\n';
			/* HELP, TYPE and the series of each of the 5000 numbers; strings are no metrics. */
			ck_assert_uint_eq(lines, 3 * 5000);
		} else {
			for (i = 0; i < len; i++)
				lines += out[i] == '\n';
			/* 40 + 5000 + 2000 * 2 lines, and a blank line before each "s". */
			ck_assert_uint_eq(lines, 40 + 5000 + 4000 + 2000);
		}
		report_free(r);
	}
}
END_TEST

/* Make each allocation fail in turn: NULL from report_new or report_finish, never a crash. */
START_TEST(allocation_failure_gives_null)
{
	enum report_format fmt;

	for (fmt = REPORT_TEXT; fmt <= REPORT_PROMETHEUS; fmt++) {
		long n, null_finishes = 0;
		bool saw_success = false;

		for (n = 0; n < 200 && !saw_success; n++) {
			struct report *r;
			const char *out;
			int i;

			/* Armed only around report calls: Check allocates too. */
			alloc_failures = 0;
			alloc_countdown = n;
			r = report_new(fmt);
			if (r) {
				for (i = 0; i < 300; i++) {
					report_begin(r, "section_name");
					report_u64(r, "some_counter", (uint64_t)i);
					report_str(r, "text", "a value that takes some room in the buffer");
					report_end(r);
				}
				report_begin_array(r, "links", "link");
				for (i = 0; i < 50; i++) {
					report_begin_item(r, "link");
					report_id_u64(r, "index", "link", (uint64_t)i);
					report_info(r, "status", "RUNNING");
					report_counter(r, "bytes", (uint64_t)i, "Bytes.");
					report_time(r, "since", 1000 + i, "Since.");
					report_end(r);
				}
				report_end(r);
				out = report_finish(r, NULL);
				alloc_countdown = -1;
				if (alloc_failures) {
					ck_assert_msg(out == NULL, "n=%ld: output despite a failure", n);
					null_finishes++;
				}
				else
					saw_success = out != NULL;
				report_free(r);
			} else {
				alloc_countdown = -1;
				ck_assert_int_gt(alloc_failures, 0);
			}
		}
		ck_assert_msg(saw_success, "never succeeded within 200 allocations");
		ck_assert_msg(null_finishes > 0, "no failure reached report_finish");
	}
}
END_TEST

/* ---- arrays, labels, times ------------------------------------------------ */

/* Two items of an array, then a section: the same calls for every format. */
static void fill_array(struct report *r)
{
	report_begin_array(r, "links", "link");
	for (unsigned i = 0; i < 2; i++) {
		char heading[16];

		snprintf(heading, sizeof(heading), "link %u", i);
		report_begin_item(r, heading);
		report_label(r, "");
		report_id_u64(r, "index", "link", i);
		report_id_str(r, "device", "device", i ? "eth\"2\\" : "eth1");
		report_info(r, "status", "RUNNING");
		report_label(r, "mtu");
		report_gauge(r, "mtu_bytes", 1500, "MTU.");
		report_counter(r, "bytes_sent", 10 * (i + 1), "Bytes sent.");
		report_text(r, "tcp", "server=connected");
		report_end(r);
	}
	report_end(r);
	report_begin(r, "channel");
	report_flag(r, "up", true, "Up.");
	report_end(r);
}

START_TEST(array_text_items_are_sections)
{
	struct report *r = report_new(REPORT_TEXT);

	fill_array(r);
	assert_output(r,
		"link 0:\n"
		"  device:     eth1\n"
		"  status:     RUNNING\n"
		"  mtu:        1500\n"
		"  bytes sent: 10\n"
		"  tcp:        server=connected\n"
		"\n"
		"link 1:\n"
		"  device:     eth\"2\\\n"
		"  status:     RUNNING\n"
		"  mtu:        1500\n"
		"  bytes sent: 20\n"
		"  tcp:        server=connected\n"
		"\n"
		"channel:\n"
		"  up: yes\n");
	report_free(r);
}
END_TEST

START_TEST(array_json_is_an_array_of_objects)
{
	struct report *r = report_new(REPORT_JSON);

	fill_array(r);
	assert_output(r,
		"{\"schema_version\":1,\"links\":["
		"{\"index\":0,\"device\":\"eth1\",\"status\":\"RUNNING\",\"mtu_bytes\":1500,\"bytes_sent\":10},"
		"{\"index\":1,\"device\":\"eth\\\"2\\\\\",\"status\":\"RUNNING\",\"mtu_bytes\":1500,\"bytes_sent\":20}],"
		"\"channel\":{\"up\":true}}\n");
	report_free(r);

	/* An empty array, and what may not stand in an array directly (left out). */
	r = report_new(REPORT_JSON);
	report_begin_array(r, "peers", "peer");
	report_u64(r, "stray", 1);
	report_begin(r, "stray_section");
	report_begin_array(r, "stray_array", "x");
	report_end(r);
	report_begin_array(r, "more", "m");
	report_begin_item(r, "m 0");
	report_u64(r, "x", 1);
	assert_output(r, "{\"schema_version\":1,\"peers\":[],\"more\":[{\"x\":1}]}\n");
	report_free(r);

	/* An item outside an array is a section called "item". */
	r = report_new(REPORT_JSON);
	report_begin_item(r, "lonely");
	report_u64(r, "x", 1);
	report_end(r);
	assert_output(r, "{\"schema_version\":1,\"item\":{\"x\":1}}\n");
	report_free(r);
}
END_TEST

START_TEST(prometheus_names_types_labels)
{
	struct report *r = report_new(REPORT_PROMETHEUS);

	fill_array(r);
	/* Sorted by name; each name once with its HELP and TYPE; the ids label every series of the item. */
	assert_output(r,
		"# HELP ctsyncd_channel_up Up.\n"
		"# TYPE ctsyncd_channel_up gauge\n"
		"ctsyncd_channel_up 1\n"
		"# HELP ctsyncd_link_bytes_sent_total Bytes sent.\n"
		"# TYPE ctsyncd_link_bytes_sent_total counter\n"
		"ctsyncd_link_bytes_sent_total{link=\"0\",device=\"eth1\"} 10\n"
		"ctsyncd_link_bytes_sent_total{link=\"1\",device=\"eth\\\"2\\\\\"} 20\n"
		"# HELP ctsyncd_link_info What describes ctsyncd_link: its labels; the value is always 1.\n"
		"# TYPE ctsyncd_link_info gauge\n"
		"ctsyncd_link_info{link=\"0\",device=\"eth1\",status=\"RUNNING\"} 1\n"
		"ctsyncd_link_info{link=\"1\",device=\"eth\\\"2\\\\\",status=\"RUNNING\"} 1\n"
		"# HELP ctsyncd_link_mtu_bytes MTU.\n"
		"# TYPE ctsyncd_link_mtu_bytes gauge\n"
		"ctsyncd_link_mtu_bytes{link=\"0\",device=\"eth1\"} 1500\n"
		"ctsyncd_link_mtu_bytes{link=\"1\",device=\"eth\\\"2\\\\\"} 1500\n");
	report_free(r);
}
END_TEST

START_TEST(prometheus_escapes_and_repairs)
{
	struct report *r = report_new(REPORT_PROMETHEUS);

	report_begin(r, "Sec-Tion");
	report_info(r, "path", "/a\\b\n\"c\"\xff");
	report_counter(r, "errors_total", 3, "Errors, \\ and\nnewline.");
	report_counter(r, "x", 1, "First.");
	report_gauge(r, "x_total", 2, "The same name, another type: left out.");
	report_counter(r, "x", 5, "The same series again: left out.");
	report_gauge_double(r, "ratio", NAN, 2, "NaN.");
	report_gauge_double(r, "big", INFINITY, 2, "Inf.");
	report_gauge_double(r, "half", 0.5, 3, "Half.");
	report_time(r, "since", 31536000, "Since.");
	report_u64(r, "legacy", 7);
	report_str(r, "path_again", "not a metric");
	report_end(r);
	assert_output(r,
		"# HELP ctsyncd_sec_tion_big Inf.\n"
		"# TYPE ctsyncd_sec_tion_big gauge\n"
		"ctsyncd_sec_tion_big +Inf\n"
		"# HELP ctsyncd_sec_tion_errors_total Errors, \\\\ and\\nnewline.\n"
		"# TYPE ctsyncd_sec_tion_errors_total counter\n"
		"ctsyncd_sec_tion_errors_total 3\n"
		"# HELP ctsyncd_sec_tion_half Half.\n"
		"# TYPE ctsyncd_sec_tion_half gauge\n"
		"ctsyncd_sec_tion_half 0.500\n"
		"# HELP ctsyncd_sec_tion_info What describes ctsyncd_sec_tion: its labels; the value is always 1.\n"
		"# TYPE ctsyncd_sec_tion_info gauge\n"
		"ctsyncd_sec_tion_info{path=\"/a\\\\b\\n\\\"c\\\"\xef\xbf\xbd\"} 1\n"
		"# HELP ctsyncd_sec_tion_legacy ctsyncd_sec_tion_legacy (no description)\n"
		"# TYPE ctsyncd_sec_tion_legacy untyped\n"
		"ctsyncd_sec_tion_legacy 7\n"
		"# HELP ctsyncd_sec_tion_ratio NaN.\n"
		"# TYPE ctsyncd_sec_tion_ratio gauge\n"
		"ctsyncd_sec_tion_ratio NaN\n"
		"# HELP ctsyncd_sec_tion_since_timestamp_seconds Since.\n"
		"# TYPE ctsyncd_sec_tion_since_timestamp_seconds gauge\n"
		"ctsyncd_sec_tion_since_timestamp_seconds 31536000\n"
		"# HELP ctsyncd_sec_tion_x_total First.\n"
		"# TYPE ctsyncd_sec_tion_x_total counter\n"
		"ctsyncd_sec_tion_x_total 1\n");
	report_free(r);

	r = report_new(REPORT_PROMETHEUS);
	assert_output(r, "");
	report_free(r);
}
END_TEST

START_TEST(times_are_rfc3339_utc)
{
	char buf[32];
	struct report *r;

	/* UTC whatever the local time zone (a POSIX TZ: no tzdata needed). */
	setenv("TZ", "CET-1", 1);
	tzset();
	ck_assert_str_eq(report_rfc3339(buf, sizeof(buf), 31536000), "1971-01-01T00:00:00Z");
	ck_assert_str_eq(report_rfc3339(buf, sizeof(buf), 1795656015), "2026-11-26T01:20:15Z");
	ck_assert_str_eq(report_rfc3339(buf, sizeof(buf), 0), "");
	ck_assert_str_eq(report_rfc3339(buf, 5, 31536000), "");   /* too small: empty, not cut */

	r = report_new(REPORT_JSON);
	report_time(r, "started", 1795656015, "Start.");
	report_time(r, "last_poll", 0, "Never.");
	assert_output(r, "{\"schema_version\":1,\"started\":\"2026-11-26T01:20:15Z\","
			 "\"started_unix\":1795656015,\"last_poll\":null,\"last_poll_unix\":0}\n");
	report_free(r);

	r = report_new(REPORT_TEXT);
	report_time(r, "started", 1795656015, "Start.");
	report_time(r, "last_poll", 0, "Never.");
	assert_output(r, "started:   2026-11-26T01:20:15Z\nlast poll: never\n");
	report_free(r);
}
END_TEST

START_TEST(labels_change_the_text_only)
{
	struct report *r = report_new(REPORT_JSON);

	report_label(r, "Poll secs");
	report_gauge(r, "interval_seconds", 5, "Interval.");
	report_label(r, "");
	report_flag(r, "hidden_in_text", true, "Hidden.");
	report_label(r, "Heading");
	report_begin(r, "section");
	report_text(r, "note", "for people");
	report_end(r);
	report_u64(r, "unlabelled", 1);
	assert_output(r, "{\"schema_version\":1,\"interval_seconds\":5,\"hidden_in_text\":true,"
			 "\"section\":{},\"unlabelled\":1}\n");
	report_free(r);

	r = report_new(REPORT_TEXT);
	report_label(r, "Poll secs");
	report_gauge(r, "interval_seconds", 5, "Interval.");
	report_label(r, "");
	report_flag(r, "hidden_in_text", true, "Hidden.");
	report_label(r, "Heading");
	report_begin(r, "section");
	report_text(r, "note", "for people");
	report_end(r);
	report_u64(r, "unlabelled", 1);
	assert_output(r, "Poll secs:  5\n"
			 "\n"
			 "Heading:\n"
			 "  note: for people\n"
			 "unlabelled: 1\n");
	report_free(r);
}
END_TEST

/* ---- -s link, from what the link group exposes -------------------------- */

static struct link_stats link_stats_from(uint64_t base)
{
	return (struct link_stats){
		.bytes_sent = base + 1, .packets_sent = base + 2, .errors_sent = base + 3,
		.bytes_recv = base + 4, .packets_recv = base + 5, .errors_recv = base + 6,
		.blocked = base + 7, .connects = base + 8, .disconnects = base + 9,
		.accepts = base + 10, .strangers = base + 11,
	};
}

/* Two TCP links over IPv4: link 0 without carrier and unconnected, link 1 active. */
static unsigned tcp_links(struct link_info *l, struct link_channel_info *ch)
{
	for (unsigned i = 0; i < 2; i++) {
		l[i] = (struct link_info){
			.index = i, .kind = CONFIG_LINK_TCP, .mtu = 1500, .payload_max = 1460,
			.stats = link_stats_from(i * 100),
		};
		snprintf(l[i].ifname, sizeof(l[i].ifname), "veth%u", i);
		snprintf(l[i].local, sizeof(l[i].local), "10.0.%u.1:3780", i);
		snprintf(l[i].dest, sizeof(l[i].dest), "10.0.%u.2:3780", i);
	}
	l[0].status = "NO-CARRIER";
	l[1].status = "RUNNING";
	l[1].active = l[1].tcp_server_connected = l[1].tcp_client_connected = true;
	*ch = (struct link_channel_info){
		.active = 1, .payload_max = 1460, .buffered_bytes = 100, .queued_datagrams = 2,
		.queue_max = 4, .dropped_datagrams = 11, .dropped_bytes = 1100, .failovers = 3,
	};
	return 2;
}

/* Multicast over IPv6 (the group only), then a UDP link that is DOWN; 64-bit counters. */
static unsigned mcast_udp6_links(struct link_info *l, struct link_channel_info *ch)
{
	for (unsigned i = 0; i < 2; i++)
		l[i] = (struct link_info){
			.index = i, .mtu = 65536, .payload_max = 65488,
			.stats = link_stats_from(1000000000000ull * (i + 1)),
		};
	l[0].kind = CONFIG_LINK_MCAST;
	l[0].status = "RUNNING";
	l[0].active = true;
	snprintf(l[0].ifname, sizeof(l[0].ifname), "lo");
	snprintf(l[0].local, sizeof(l[0].local), "[ff02::1:2%%lo]:3780");
	snprintf(l[0].dest, sizeof(l[0].dest), "[ff02::1:2%%lo]:3780");
	l[1].kind = CONFIG_LINK_UDP;
	l[1].status = "DOWN";
	snprintf(l[1].ifname, sizeof(l[1].ifname), "eth-long-name1");
	snprintf(l[1].local, sizeof(l[1].local), "[fe80::1%%lo]:3781");
	snprintf(l[1].dest, sizeof(l[1].dest), "[2001:db8::2]:3781");
	*ch = (struct link_channel_info){
		.active = 0, .payload_max = 65488, .buffered_bytes = 100, .queued_datagrams = 2,
		.queue_max = 4, .dropped_datagrams = 11, .dropped_bytes = 1100, .failovers = 3,
	};
	return 2;
}

static struct report *link_report(enum report_format f,
				  unsigned (*fill)(struct link_info *, struct link_channel_info *))
{
	struct link_info links[CONFIG_MAX_LINKS];
	struct link_channel_info ch;
	struct report *r = report_new(f);
	unsigned n = fill(links, &ch);

	ck_assert_ptr_nonnull(r);
	control_report_links(r, links, n, &ch);
	return r;
}

START_TEST(link_report_text_shows_tcp_tokens_and_roles)
{
	struct report *r = link_report(REPORT_TEXT, tcp_links);

	assert_output(r,
		"link 0:\n"
		"  device:             veth0\n"
		"  status:             NO-CARRIER\n"
		"  role:               BACKUP\n"
		"  kind:               TCP\n"
		"  local:              10.0.0.1:3780\n"
		"  destination:        10.0.0.2:3780\n"
		"  mtu:                1500\n"
		"  payload max:        1460\n"
		"  bytes sent:         1\n"
		"  packets sent:       2\n"
		"  errors sent:        3\n"
		"  bytes received:     4\n"
		"  packets received:   5\n"
		"  errors received:    6\n"
		"  send blocked:       7\n"
		"  strangers dropped:  11\n"
		"  tcp:                server=disconnected client=disconnected\n"
		"  server connected:   no\n"
		"  client connected:   no\n"
		"  client connects:    8\n"
		"  client disconnects: 9\n"
		"  server accepts:     10\n"
		"\n"
		"link 1:\n"
		"  device:             veth1\n"
		"  status:             RUNNING\n"
		"  role:               ACTIVE\n"
		"  kind:               TCP\n"
		"  local:              10.0.1.1:3780\n"
		"  destination:        10.0.1.2:3780\n"
		"  mtu:                1500\n"
		"  payload max:        1460\n"
		"  bytes sent:         101\n"
		"  packets sent:       102\n"
		"  errors sent:        103\n"
		"  bytes received:     104\n"
		"  packets received:   105\n"
		"  errors received:    106\n"
		"  send blocked:       107\n"
		"  strangers dropped:  111\n"
		"  tcp:                server=connected client=connected\n"
		"  server connected:   yes\n"
		"  client connected:   yes\n"
		"  client connects:    108\n"
		"  client disconnects: 109\n"
		"  server accepts:     110\n"
		"\n"
		"channel:\n"
		"  active:            veth1\n"
		"  payload max:       1460\n"
		"  buffered bytes:    100\n"
		"  queued datagrams:  2\n"
		"  queue max:         4\n"
		"  dropped datagrams: 11\n"
		"  dropped bytes:     1100\n"
		"  failovers:         3\n");
	report_free(r);
}
END_TEST

START_TEST(link_report_json_keys_in_order_for_tcp)
{
	struct report *r = link_report(REPORT_JSON, tcp_links);

	assert_output(r,
		"{\"schema_version\":1,\"links\":[{\"index\":0,\"device\":\"veth0\",\"status\":\"NO-CARRIER\",\"role\":\"BACKUP\",\"kind\":\"TCP\",\"local\":\"10.0.0.1:3780\",\"destination\":\"10.0.0.2:3780\",\"mtu_bytes\":1500,\"payload_max_bytes\":1460,\"bytes_sent\":1,\"packets_sent\":2,\"errors_sent\":3,\"bytes_received\":4,\"packets_received\":5,\"errors_received\":6,\"send_blocked\":7,\"strangers_dropped\":11,\"up\":false,\"active\":false,\"server_connected\":false,\"client_connected\":false,\"client_connects\":8,\"client_disconnects\":9,\"server_accepts\":10},"
		"{\"index\":1,\"device\":\"veth1\",\"status\":\"RUNNING\",\"role\":\"ACTIVE\",\"kind\":\"TCP\",\"local\":\"10.0.1.1:3780\",\"destination\":\"10.0.1.2:3780\",\"mtu_bytes\":1500,\"payload_max_bytes\":1460,\"bytes_sent\":101,\"packets_sent\":102,\"errors_sent\":103,\"bytes_received\":104,\"packets_received\":105,\"errors_received\":106,\"send_blocked\":107,\"strangers_dropped\":111,\"up\":true,\"active\":true,\"server_connected\":true,\"client_connected\":true,\"client_connects\":108,\"client_disconnects\":109,\"server_accepts\":110}],"
		"\"channel\":{\"active\":\"veth1\",\"payload_max_bytes\":1460,\"buffered_bytes\":100,\"queued_datagrams\":2,\"queue_max\":4,\"dropped_datagrams\":11,\"dropped_bytes\":1100,\"failovers\":3}}\n");
	report_free(r);
	r = link_report(REPORT_JSON, tcp_links);
	assert_valid_json(r);
	report_free(r);
}
END_TEST

START_TEST(link_report_text_shows_the_multicast_group_only)
{
	struct report *r = link_report(REPORT_TEXT, mcast_udp6_links);

	assert_output(r,
		"link 0:\n"
		"  device:            lo\n"
		"  status:            RUNNING\n"
		"  role:              ACTIVE\n"
		"  kind:              Multicast\n"
		"  group:             [ff02::1:2%lo]:3780\n"
		"  mtu:               65536\n"
		"  payload max:       65488\n"
		"  bytes sent:        1000000000001\n"
		"  packets sent:      1000000000002\n"
		"  errors sent:       1000000000003\n"
		"  bytes received:    1000000000004\n"
		"  packets received:  1000000000005\n"
		"  errors received:   1000000000006\n"
		"  send blocked:      1000000000007\n"
		"  strangers dropped: 1000000000011\n"
		"\n"
		"link 1:\n"
		"  device:            eth-long-name1\n"
		"  status:            DOWN\n"
		"  role:              BACKUP\n"
		"  kind:              UDP\n"
		"  local:             [fe80::1%lo]:3781\n"
		"  destination:       [2001:db8::2]:3781\n"
		"  mtu:               65536\n"
		"  payload max:       65488\n"
		"  bytes sent:        2000000000001\n"
		"  packets sent:      2000000000002\n"
		"  errors sent:       2000000000003\n"
		"  bytes received:    2000000000004\n"
		"  packets received:  2000000000005\n"
		"  errors received:   2000000000006\n"
		"  send blocked:      2000000000007\n"
		"  strangers dropped: 2000000000011\n"
		"\n"
		"channel:\n"
		"  active:            lo\n"
		"  payload max:       65488\n"
		"  buffered bytes:    100\n"
		"  queued datagrams:  2\n"
		"  queue max:         4\n"
		"  dropped datagrams: 11\n"
		"  dropped bytes:     1100\n"
		"  failovers:         3\n");
	report_free(r);
}
END_TEST

START_TEST(link_report_json_for_multicast_and_udp)
{
	struct report *r = link_report(REPORT_JSON, mcast_udp6_links);

	assert_output(r,
		"{\"schema_version\":1,\"links\":[{\"index\":0,\"device\":\"lo\",\"status\":\"RUNNING\",\"role\":\"ACTIVE\",\"kind\":\"Multicast\",\"group\":\"[ff02::1:2%lo]:3780\",\"mtu_bytes\":65536,\"payload_max_bytes\":65488,\"bytes_sent\":1000000000001,\"packets_sent\":1000000000002,\"errors_sent\":1000000000003,\"bytes_received\":1000000000004,\"packets_received\":1000000000005,\"errors_received\":1000000000006,\"send_blocked\":1000000000007,\"strangers_dropped\":1000000000011,\"up\":true,\"active\":true},"
		"{\"index\":1,\"device\":\"eth-long-name1\",\"status\":\"DOWN\",\"role\":\"BACKUP\",\"kind\":\"UDP\",\"local\":\"[fe80::1%lo]:3781\",\"destination\":\"[2001:db8::2]:3781\",\"mtu_bytes\":65536,\"payload_max_bytes\":65488,\"bytes_sent\":2000000000001,\"packets_sent\":2000000000002,\"errors_sent\":2000000000003,\"bytes_received\":2000000000004,\"packets_received\":2000000000005,\"errors_received\":2000000000006,\"send_blocked\":2000000000007,\"strangers_dropped\":2000000000011,\"up\":false,\"active\":false}],"
		"\"channel\":{\"active\":\"lo\",\"payload_max_bytes\":65488,\"buffered_bytes\":100,\"queued_datagrams\":2,\"queue_max\":4,\"dropped_datagrams\":11,\"dropped_bytes\":1100,\"failovers\":3}}\n");
	report_free(r);
	r = link_report(REPORT_JSON, mcast_udp6_links);
	assert_valid_json(r);
	report_free(r);
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc;

	tc = tcase_create("text");
	tcase_add_test(tc, text_aligns_keys_per_section_and_nests);
	tcase_add_test(tc, text_root_keys_and_control_chars);
	tcase_add_test(tc, text_empty_report_is_empty_string);
	tcase_add_test(tc, text_keeps_underscores_out_of_values);
	tcase_add_test(tc, text_doubles_not_finite);
	suite_add_tcase(s, tc);

	tc = tcase_create("json");
	tcase_add_test(tc, json_checker_rejects_bad_json);
	tcase_add_test(tc, json_exact_nested_objects);
	tcase_add_test(tc, json_empty_report_is_empty_object);
	tcase_add_test(tc, json_escapes_strings);
	tcase_add_test(tc, json_invalid_utf8_always_valid_json);
	tcase_add_test(tc, json_doubles);
	tcase_add_test(tc, json_integers_extremes);
	tcase_add_test(tc, array_text_items_are_sections);
	tcase_add_test(tc, array_json_is_an_array_of_objects);
	tcase_add_test(tc, prometheus_names_types_labels);
	tcase_add_test(tc, prometheus_escapes_and_repairs);
	tcase_add_test(tc, times_are_rfc3339_utc);
	tcase_add_test(tc, labels_change_the_text_only);
	suite_add_tcase(s, tc);

	tc = tcase_create("robustness");
	tcase_add_test(tc, unbalanced_sections_are_closed);
	tcase_add_test(tc, finish_is_idempotent_and_final);
	tcase_add_test(tc, deep_and_large_reports);
	tcase_add_test(tc, allocation_failure_gives_null);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);

	tc = tcase_create("link");
	tcase_add_test(tc, link_report_text_shows_tcp_tokens_and_roles);
	tcase_add_test(tc, link_report_json_keys_in_order_for_tcp);
	tcase_add_test(tc, link_report_text_shows_the_multicast_group_only);
	tcase_add_test(tc, link_report_json_for_multicast_and_udp);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(report_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
