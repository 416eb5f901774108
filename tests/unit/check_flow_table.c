/*
 * check_flow_table.c - the flow table: keys, upsert results, out-of-line
 * parts (ext, interned labels), dead entries, iteration under change,
 * HashLimit, collisions, allocation failure, a randomized comparison with
 * a plain array model, and the memory cost of a million plain states.
 *
 * Linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc so that a test
 * can make the n-th allocation fail.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "flow/flow.h"
#include "flow/keyset.h"
#include "flow/table.h"

/*
 * A successful ck_assert_* records a mark point (a write to Check's pipe);
 * in loops of millions of checks that is most of the run time.  REQUIRE
 * reports only failures, with the same message.
 */
#define REQUIRE(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)
/* Compare two integers, each evaluated once (all values here fit a long long). */
#define REQUIRE_CMP(a, op, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (!(a_ op b_)) \
		ck_abort_msg("%s %s %s: %lld vs %lld", #a, #op, #b, a_, b_); \
} while (0)

/* ---- allocation failure injection ---------------------------------- */

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *ptr, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *ptr, size_t size);

/*
 * Check is linked statically and allocates in its assertions, so only the
 * calls made while `alloc_armed` is set count down.
 */
static long alloc_countdown = -1;       /* < 0: never fail; n: the (n+1)-th call fails */
static long alloc_failures;
static bool alloc_armed;

static bool alloc_should_fail(void)
{
	if (!alloc_armed || alloc_countdown < 0)
		return false;
	if (alloc_countdown == 0) {
		alloc_countdown = -1;
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

void *__wrap_calloc(size_t n, size_t size)
{
	return alloc_should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
	return alloc_should_fail() ? NULL : __real_realloc(ptr, size);
}

/* ---- helpers --------------------------------------------------------- */

static int upsert_armed(struct flow_table *t, const struct flow_full *ff, uint32_t now,
			uint32_t *h)
{
	int r;

	alloc_armed = true;
	r = flow_table_upsert(t, ff, now, h);
	alloc_armed = false;
	return r;
}

/* A small deterministic generator (xorshift64*), so every run is the same. */
static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s ? s : 1;
}

static uint32_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static struct flow_table *table_new(uint32_t buckets, uint32_t limit, uint32_t user_bytes,
				    uint32_t (*hash)(const struct flow_tuple *, uint32_t))
{
	struct flow_table_options o = {
		.buckets = buckets, .limit = limit, .seed = 0x5eed1234u,
		.user_bytes = user_bytes, .hash = hash,
	};
	struct flow_table *t = NULL;
	int r = flow_table_new(&o, &t);

	ck_assert_msg(r == 0, "flow_table_new: expected 0, got %d", r);
	return t;
}

/* A plain TCP/IPv4 state numbered i (distinct i, distinct key). */
static void make_v4(struct flow_full *ff, uint32_t i)
{
	memset(ff, 0, sizeof(*ff));
	ff->flow.orig.family = AF_INET;
	ff->flow.orig.l4proto = IPPROTO_TCP;
	ff->flow.orig.src.v4 = htonl(0x0a000000u | (i >> 16));
	ff->flow.orig.dst.v4 = htonl(0xc0a80001u);
	ff->flow.orig.l4.port.sport = htons((uint16_t)i);
	ff->flow.orig.l4.port.dport = htons(80);
	ff->flow.attrs = FLOW_A_PORTS | FLOW_A_STATUS | FLOW_A_TIMEOUT | FLOW_A_PROTO_STATE;
	ff->flow.status = 0x0e;
	ff->flow.timeout = 300;
	ff->flow.proto_state = 3;
}

static void make_v6(struct flow_full *ff, uint32_t i)
{
	memset(ff, 0, sizeof(*ff));
	ff->flow.orig.family = AF_INET6;
	ff->flow.orig.l4proto = IPPROTO_UDP;
	ff->flow.orig.src.bytes[0] = 0x20;
	ff->flow.orig.src.bytes[1] = 0x01;
	ff->flow.orig.src.v6[3] = htonl(i);
	ff->flow.orig.dst.bytes[0] = 0xfe;
	ff->flow.orig.dst.bytes[15] = 1;
	ff->flow.orig.l4.port.sport = htons(5000);
	ff->flow.orig.l4.port.dport = htons(53);
	ff->flow.attrs = FLOW_A_PORTS | FLOW_A_TIMEOUT;
	ff->flow.timeout = 30;
}

static void add_snat(struct flow_full *ff, uint32_t addr)
{
	ff->flow.attrs |= FLOW_A_SNAT | FLOW_A_SPAT;
	ff->ext.snat.v4 = htonl(addr);
	ff->ext.spat = htons(4000);
}

static void add_labels(struct flow_full *ff, unsigned words, uint32_t pattern)
{
	ff->flow.attrs |= FLOW_A_LABELS;
	ff->labels.words = (uint16_t)words;
	for (unsigned i = 0; i < words; i++)
		ff->labels.w[i] = pattern + i;
}

static uint32_t upsert_ok(struct flow_table *t, const struct flow_full *ff, uint32_t now,
			  int expect)
{
	uint32_t h = 0;
	int r = flow_table_upsert(t, ff, now, &h);

	REQUIRE(r == expect, "upsert: expected %d, got %d", expect, r);
	REQUIRE(h != 0, "upsert returned handle 0");
	return h;
}

/* The exported state equals `ff` (which the caller normalised). */
static void assert_exports(const struct flow_table *t, uint32_t h, const struct flow_full *ff)
{
	struct flow_full out;

	memset(&out, 0xa5, sizeof(out));
	REQUIRE_CMP(flow_table_export(t, h, &out), ==, 0);
	REQUIRE(memcmp(&out.flow, &ff->flow, sizeof(out.flow)) == 0,
		      "exported flow differs (attrs %#x vs %#x, timeout %u vs %u)",
		      out.flow.attrs, ff->flow.attrs, out.flow.timeout, ff->flow.timeout);
	REQUIRE(memcmp(&out.ext, &ff->ext, sizeof(out.ext)) == 0, "exported ext differs");
	REQUIRE_CMP(out.labels.words, ==, ff->labels.words);
	REQUIRE(memcmp(out.labels.w, ff->labels.w, ff->labels.words * 4u) == 0,
		      "exported labels differ");
}

static struct flow_table_stats stats_of(const struct flow_table *t)
{
	struct flow_table_stats s;

	flow_table_stats(t, &s);
	return s;
}

/* ---- basics ------------------------------------------------------------ */

START_TEST(insert_lookup_update_delete)
{
	struct flow_table *t = table_new(0, 0, 16, NULL);
	struct flow_full ff;
	uint32_t h, h2;

	make_v4(&ff, 1);
	h = upsert_ok(t, &ff, 100, FLOW_UPSERT_INSERTED);
	ck_assert_uint_eq(flow_table_lookup(t, &ff.flow.orig), h);
	ck_assert_uint_eq(flow_table_updated(t, h), 100);
	ck_assert_uint_eq(flow_table_flags(t, h), 0);
	ck_assert_ptr_null(flow_table_ext(t, h));
	assert_exports(t, h, &ff);

	ff.flow.timeout = 250;
	h2 = upsert_ok(t, &ff, 105, FLOW_UPSERT_UPDATED);
	ck_assert_uint_eq(h2, h);
	ck_assert_uint_eq(flow_table_flow(t, h)->timeout, 250);
	ck_assert_uint_eq(flow_table_updated(t, h), 105);
	ck_assert_uint_eq(flow_table_flags(t, h), FLOW_ENTRY_UPDATED);

	upsert_ok(t, &ff, 106, FLOW_UPSERT_UNCHANGED);
	ck_assert_uint_eq(flow_table_updated(t, h), 106);

	ck_assert_uint_eq(flow_table_count(t), 1);
	ck_assert_int_eq(flow_table_delete(t, h), 0);
	ck_assert_uint_eq(flow_table_lookup(t, &ff.flow.orig), 0);
	ck_assert_ptr_null(flow_table_flow(t, h));
	ck_assert_int_eq(flow_table_delete(t, h), -ENOENT);
	ck_assert_uint_eq(flow_table_count(t), 0);

	struct flow_table_stats s = stats_of(t);

	ck_assert_uint_eq(s.inserted, 1);
	ck_assert_uint_eq(s.updated, 2);
	ck_assert_uint_eq(s.deleted, 1);
	ck_assert_uint_eq(s.max_seen, 1);
	ck_assert_uint_eq(s.active, 0);
	flow_table_free(t);
}
END_TEST

/* 1.4.7's "[active since Ns]": the time of insertion, kept through updates and a death, new on revival. */
START_TEST(creation_time_survives_updates_and_restarts_on_revival)
{
	struct flow_table *t = table_new(0, 0, 16, NULL);
	struct flow_full ff;
	uint32_t h;

	make_v4(&ff, 1);
	h = upsert_ok(t, &ff, 100, FLOW_UPSERT_INSERTED);
	ck_assert_uint_eq(flow_table_created(t, h), 100);
	ff.flow.timeout = 250;
	upsert_ok(t, &ff, 150, FLOW_UPSERT_UPDATED);
	upsert_ok(t, &ff, 4000, FLOW_UPSERT_UNCHANGED);
	ck_assert_uint_eq(flow_table_updated(t, h), 4000);
	ck_assert_uint_eq(flow_table_created(t, h), 100);
	/* A clock that goes back changes nothing of the past. */
	upsert_ok(t, &ff, 3990, FLOW_UPSERT_UNCHANGED);
	ck_assert_uint_eq(flow_table_created(t, h), 3990 - 3900);
	ck_assert_int_eq(flow_table_mark_dead(t, h, 5000), 0);
	ck_assert_uint_eq(flow_table_created(t, h), 90);
	upsert_ok(t, &ff, 6000, FLOW_UPSERT_REVIVED);
	ck_assert_uint_eq(flow_table_created(t, h), 6000);
	/* Older than the 24-bit life holds: 194 days old at most. */
	upsert_ok(t, &ff, 6000 + 20000000u, FLOW_UPSERT_UNCHANGED);
	ck_assert_uint_eq(flow_table_created(t, h), 6000 + 20000000u - 0xffffffu);
	ck_assert_uint_eq(flow_table_created(t, 0), 0);
	flow_table_free(t);
}
END_TEST

/* The external cache's origin of a state: kept by updates and a death, 0 on insertion and revival. */
START_TEST(origin_is_kept_beside_the_flags)
{
	struct flow_table *t = table_new(0, 0, 0, NULL);
	struct flow_full ff;
	uint32_t h, h2;

	make_v4(&ff, 1);
	h = upsert_ok(t, &ff, 100, FLOW_UPSERT_INSERTED);
	ck_assert_uint_eq(flow_table_origin(t, h), 0);
	flow_table_set_origin(t, h, FLOW_TABLE_ORIGIN_MAX);
	ck_assert_uint_eq(flow_table_origin(t, h), FLOW_TABLE_ORIGIN_MAX);
	ck_assert_uint_eq(flow_table_flags(t, h), 0);
	flow_table_set_origin(t, h, 5);
	ck_assert_uint_eq(flow_table_origin(t, h), 5);
	/* Out of range: nothing changes. */
	flow_table_set_origin(t, h, FLOW_TABLE_ORIGIN_MAX + 1);
	ck_assert_uint_eq(flow_table_origin(t, h), 5);
	ff.flow.timeout = 250;
	upsert_ok(t, &ff, 150, FLOW_UPSERT_UPDATED);
	ck_assert_uint_eq(flow_table_origin(t, h), 5);
	ck_assert_uint_eq(flow_table_flags(t, h), FLOW_ENTRY_UPDATED);
	make_v4(&ff, 2);
	h2 = upsert_ok(t, &ff, 150, FLOW_UPSERT_INSERTED);
	ck_assert_uint_eq(flow_table_origin(t, h2), 0);
	ck_assert_int_eq(flow_table_mark_dead(t, h, 200), 0);
	ck_assert_uint_eq(flow_table_origin(t, h), 5);
	ck_assert_uint_eq(flow_table_flags(t, h), FLOW_ENTRY_UPDATED | FLOW_ENTRY_DEAD);
	make_v4(&ff, 1);
	upsert_ok(t, &ff, 300, FLOW_UPSERT_REVIVED);
	ck_assert_uint_eq(flow_table_origin(t, h), 0);
	ck_assert_uint_eq(flow_table_origin(t, 0), 0);
	flow_table_set_origin(t, 0, 3);
	flow_table_free(t);
}
END_TEST

START_TEST(invalid_handles_are_refused)
{
	struct flow_table *t = table_new(16, 0, 8, NULL);
	struct flow_full ff;
	unsigned words = 7;

	ck_assert_ptr_null(flow_table_flow(t, 0));
	ck_assert_ptr_null(flow_table_flow(t, 1));
	ck_assert_ptr_null(flow_table_user(t, 12345));
	ck_assert_ptr_null(flow_table_labels(t, 3, &words));
	ck_assert_uint_eq(words, 0);
	ck_assert_int_eq(flow_table_export(t, 0, &ff), -ENOENT);
	ck_assert_int_eq(flow_table_mark_dead(t, 99, 1), -ENOENT);
	ck_assert_int_eq(flow_table_delete(t, 0), -ENOENT);
	ck_assert_uint_eq(flow_table_flags(t, 5), 0);
	flow_table_free(t);
}
END_TEST

START_TEST(families_and_zones_are_distinct_keys)
{
	struct flow_table *t = table_new(16, 0, 0, NULL);
	struct flow_full a, b, c, d;
	uint32_t ha, hb, hc, hd;

	/* The same 4 address bytes and ports as IPv4 and as IPv6. */
	make_v4(&a, 7);
	b = a;
	b.flow.orig.family = AF_INET6;
	/* The same IPv4 key in zone 5. */
	c = a;
	c.flow.orig.zone = 5;
	c.flow.attrs |= FLOW_A_ZONE;
	/* Zone 0 given explicitly is the same key as no zone. */
	d = a;
	d.flow.attrs |= FLOW_A_ZONE;

	ha = upsert_ok(t, &a, 1, FLOW_UPSERT_INSERTED);
	hb = upsert_ok(t, &b, 1, FLOW_UPSERT_INSERTED);
	hc = upsert_ok(t, &c, 1, FLOW_UPSERT_INSERTED);
	ck_assert_uint_ne(ha, hb);
	ck_assert_uint_ne(ha, hc);
	ck_assert_uint_ne(hb, hc);
	hd = upsert_ok(t, &d, 2, FLOW_UPSERT_UPDATED);
	ck_assert_uint_eq(hd, ha);
	ck_assert_uint_eq(flow_table_count(t), 3);
	ck_assert_uint_eq(flow_table_lookup(t, &b.flow.orig), hb);
	ck_assert_uint_eq(flow_table_lookup(t, &c.flow.orig), hc);

	/* Another l4 protocol with the same addresses and ports: another key. */
	a.flow.orig.l4proto = IPPROTO_UDP;
	ck_assert_uint_eq(flow_table_lookup(t, &a.flow.orig), 0);
	flow_table_free(t);
}
END_TEST

START_TEST(rejects_unnormalised_keys)
{
	struct flow_table *t = table_new(16, 0, 0, NULL);
	struct flow_full ff;
	uint32_t h = 0;

	make_v4(&ff, 1);
	ff.flow.orig.src.bytes[7] = 1;          /* garbage beyond the IPv4 address */
	ck_assert_int_eq(flow_table_upsert(t, &ff, 1, &h), -EINVAL);
	make_v4(&ff, 1);
	ff.flow.attrs &= ~FLOW_A_PORTS;         /* ports without FLOW_A_PORTS */
	ck_assert_int_eq(flow_table_upsert(t, &ff, 1, &h), -EINVAL);
	make_v4(&ff, 1);
	ff.flow.orig.family = 0;
	ck_assert_int_eq(flow_table_upsert(t, &ff, 1, &h), -EINVAL);
	make_v4(&ff, 1);
	add_labels(&ff, 2, 1);
	ff.labels.words = FLOW_LABEL_WORDS_MAX + 1;
	ck_assert_int_eq(flow_table_upsert(t, &ff, 1, &h), -EINVAL);
	ck_assert_uint_eq(stats_of(t).einval, 4);
	ck_assert_uint_eq(flow_table_count(t), 0);

	/* flow_full_normalize() makes the first one acceptable. */
	make_v4(&ff, 1);
	ff.flow.orig.src.bytes[7] = 1;
	flow_full_normalize(&ff);
	upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	flow_table_free(t);
}
END_TEST

/* ---- ext and labels ---------------------------------------------------- */

START_TEST(ext_is_stored_replaced_and_released)
{
	struct flow_table *t = table_new(16, 0, 0, NULL);
	struct flow_full ff;
	uint32_t h;

	make_v4(&ff, 1);
	add_snat(&ff, 0xc0a80101u);
	ff.flow.attrs |= FLOW_A_HELPER;
	strcpy(ff.ext.helper, "ftp");
	h = upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	ck_assert_ptr_nonnull(flow_table_ext(t, h));
	ck_assert_uint_eq(ntohs(flow_table_ext(t, h)->spat), 4000);
	ck_assert_str_eq(flow_table_ext(t, h)->helper, "ftp");
	ck_assert_uint_eq(stats_of(t).ext, 1);
	assert_exports(t, h, &ff);

	/* Another NAT address: the same ext slot, new content. */
	ff.ext.snat.v4 = htonl(0xc0a80102u);
	upsert_ok(t, &ff, 2, FLOW_UPSERT_UPDATED);
	ck_assert_uint_eq(flow_table_ext(t, h)->snat.v4, htonl(0xc0a80102u));
	ck_assert_uint_eq(stats_of(t).ext, 1);
	assert_exports(t, h, &ff);

	/* No more ext: released. */
	make_v4(&ff, 1);
	upsert_ok(t, &ff, 3, FLOW_UPSERT_UPDATED);
	ck_assert_ptr_null(flow_table_ext(t, h));
	ck_assert_uint_eq(stats_of(t).ext, 0);
	assert_exports(t, h, &ff);

	/* Back again, with a master tuple. */
	ff.flow.attrs |= FLOW_A_MASTER;
	ff.ext.master.family = AF_INET;
	ff.ext.master.l4proto = IPPROTO_TCP;
	ff.ext.master.src.v4 = htonl(0x0a000001u);
	upsert_ok(t, &ff, 4, FLOW_UPSERT_UPDATED);
	ck_assert_uint_eq(stats_of(t).ext, 1);
	assert_exports(t, h, &ff);
	ck_assert_int_eq(flow_table_delete(t, h), 0);
	ck_assert_uint_eq(stats_of(t).ext, 0);
	flow_table_free(t);
}
END_TEST

START_TEST(labels_are_interned_and_refcounted)
{
	struct flow_table *t = table_new(64, 0, 0, NULL);
	struct flow_full ff;
	uint32_t h[100];
	const uint32_t *w0, *w1;
	unsigned words;

	for (uint32_t i = 0; i < 100; i++) {
		make_v4(&ff, i);
		add_labels(&ff, 4, 0x10);
		if (i % 2)
			add_snat(&ff, 0xc0a80101u);     /* labels reached through the ext slot too */
		h[i] = upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	}
	ck_assert_uint_eq(stats_of(t).label_sets, 1);
	w0 = flow_table_labels(t, h[0], &words);
	ck_assert_uint_eq(words, 4);
	w1 = flow_table_labels(t, h[1], &words);
	ck_assert_ptr_eq(w0, w1);               /* one copy */
	ck_assert_uint_eq(w0[3], 0x13);

	/* Trailing zero words do not make another set. */
	make_v4(&ff, 0);
	add_labels(&ff, 6, 0x10);
	ff.labels.w[4] = ff.labels.w[5] = 0;
	upsert_ok(t, &ff, 2, FLOW_UPSERT_UNCHANGED);
	ck_assert_uint_eq(stats_of(t).label_sets, 1);

	/* A second set for a few flows, then back. */
	for (uint32_t i = 0; i < 10; i++) {
		make_v4(&ff, i);
		add_labels(&ff, 1, 0x80000000u);
		if (i % 2)
			add_snat(&ff, 0xc0a80101u);
		upsert_ok(t, &ff, 3, FLOW_UPSERT_UPDATED);
		assert_exports(t, h[i], &ff);
	}
	ck_assert_uint_eq(stats_of(t).label_sets, 2);
	for (uint32_t i = 0; i < 10; i++) {
		make_v4(&ff, i);
		add_labels(&ff, 4, 0x10);
		if (i % 2)
			add_snat(&ff, 0xc0a80101u);
		upsert_ok(t, &ff, 4, FLOW_UPSERT_UPDATED);
	}
	ck_assert_uint_eq(stats_of(t).label_sets, 1);

	/* All-zero labels: no labels at all. */
	make_v4(&ff, 0);
	add_labels(&ff, 3, 0);
	ff.labels.w[0] = 0;
	ff.labels.w[1] = 0;
	ff.labels.w[2] = 0;
	upsert_ok(t, &ff, 5, FLOW_UPSERT_UPDATED);
	ck_assert_uint_eq(flow_table_flow(t, h[0])->attrs & FLOW_A_LABELS, 0);
	ck_assert_ptr_null(flow_table_labels(t, h[0], &words));
	ck_assert_uint_eq(words, 0);

	for (uint32_t i = 0; i < 100; i++)
		ck_assert_int_eq(flow_table_delete(t, h[i]), 0);
	ck_assert_uint_eq(stats_of(t).label_sets, 0);
	ck_assert_uint_eq(stats_of(t).ext, 0);
	flow_table_free(t);
}
END_TEST

START_TEST(labels_only_flows_need_no_ext_slot)
{
	struct flow_table *t = table_new(64, 0, 0, NULL);
	struct flow_full ff;
	uint32_t h;

	make_v6(&ff, 1);
	add_labels(&ff, 2, 0x5);
	h = upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	ck_assert_uint_eq(stats_of(t).ext, 0);
	ck_assert_ptr_null(flow_table_ext(t, h));
	assert_exports(t, h, &ff);
	/* Gaining NAT moves the labels reference into the ext slot. */
	add_snat(&ff, 0x01020304u);
	upsert_ok(t, &ff, 2, FLOW_UPSERT_UPDATED);
	ck_assert_uint_eq(stats_of(t).ext, 1);
	ck_assert_uint_eq(stats_of(t).label_sets, 1);
	assert_exports(t, h, &ff);
	/* And losing it moves it back. */
	make_v6(&ff, 1);
	add_labels(&ff, 2, 0x5);
	upsert_ok(t, &ff, 3, FLOW_UPSERT_UPDATED);
	ck_assert_uint_eq(stats_of(t).ext, 0);
	ck_assert_uint_eq(stats_of(t).label_sets, 1);
	assert_exports(t, h, &ff);
	flow_table_free(t);
}
END_TEST

START_TEST(full_state_round_trips)
{
	struct flow_table *t = table_new(16, 0, 32, NULL);
	struct flow_full ff;
	uint32_t h;

	make_v6(&ff, 9);
	ff.flow.orig.l4proto = IPPROTO_SCTP;
	ff.flow.attrs |= FLOW_A_STATUS | FLOW_A_MARK | FLOW_A_ZONE | FLOW_A_PROTO_STATE |
			 FLOW_A_SYNPROXY | FLOW_A_SNAT | FLOW_A_DNAT | FLOW_A_SPAT | FLOW_A_DPAT |
			 FLOW_A_NAT_SEQ | FLOW_A_SCTP_VTAGS | FLOW_A_MASTER | FLOW_A_HELPER |
			 FLOW_A_SYNPROXY_EXT;
	ff.flow.status = 0x198;
	ff.flow.mark = 0xdeadbeef;
	ff.flow.orig.zone = 7;
	ff.flow.proto_state = 3;
	for (unsigned i = 0; i < 4; i++) {
		ff.ext.snat.v6[i] = 0x11111111u * (i + 1);
		ff.ext.dnat.v6[i] = 0x22222222u * (i + 1);
	}
	ff.ext.spat = 1;
	ff.ext.dpat = 2;
	ff.ext.sctp_vtag_orig = 3;
	ff.ext.sctp_vtag_repl = 4;
	for (unsigned i = 0; i < 6; i++)
		ff.ext.nat_seq[i] = 100 + i;
	for (unsigned i = 0; i < 3; i++)
		ff.ext.synproxy[i] = 200 + i;
	ff.ext.master.family = AF_INET6;
	ff.ext.master.l4proto = IPPROTO_SCTP;
	ff.ext.master.src.v6[0] = 5;
	strcpy(ff.ext.helper, "sip-5060");
	add_labels(&ff, FLOW_LABEL_WORDS_MAX, 0x1000);
	flow_full_normalize(&ff);
	h = upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	assert_exports(t, h, &ff);
	upsert_ok(t, &ff, 2, FLOW_UPSERT_UNCHANGED);
	ff.ext.nat_seq[5]++;
	upsert_ok(t, &ff, 3, FLOW_UPSERT_UPDATED);
	ff.labels.w[100] ^= 1;
	upsert_ok(t, &ff, 4, FLOW_UPSERT_UPDATED);
	assert_exports(t, h, &ff);
	flow_table_free(t);
}
END_TEST

/* ---- dead entries, flags, user area ------------------------------------ */

START_TEST(dead_entries_stay_until_deleted_and_revive_as_new)
{
	struct flow_table *t = table_new(16, 0, 16, NULL);
	struct flow_full ff;
	uint64_t *user;
	uint32_t h, h2;

	make_v4(&ff, 3);
	h = upsert_ok(t, &ff, 10, FLOW_UPSERT_INSERTED);
	upsert_ok(t, &ff, 11, FLOW_UPSERT_UNCHANGED);
	user = flow_table_user(t, h);
	ck_assert_ptr_nonnull(user);
	ck_assert_uint_eq((uintptr_t)user % 8, 0);
	ck_assert_uint_eq(user[0], 0);
	ck_assert_uint_eq(user[1], 0);
	user[0] = 0x1122334455667788ull;        /* e.g. queue links */
	user[1] = 42;                           /* e.g. a sequence number */

	ck_assert_int_eq(flow_table_mark_dead(t, h, 20), 0);
	ck_assert_uint_eq(flow_table_flags(t, h), FLOW_ENTRY_DEAD | FLOW_ENTRY_UPDATED);
	ck_assert_uint_eq(flow_table_updated(t, h), 20);
	ck_assert_uint_eq(stats_of(t).dead, 1);
	ck_assert_uint_eq(stats_of(t).active, 0);
	ck_assert_int_eq(flow_table_mark_dead(t, h, 30), 0);   /* again: no change */
	ck_assert_uint_eq(stats_of(t).dead, 1);
	ck_assert_uint_eq(flow_table_updated(t, h), 20);
	ck_assert_uint_eq(flow_table_lookup(t, &ff.flow.orig), h);

	/* The kernel creates the same tuple again before the DEL is acknowledged. */
	ff.flow.timeout = 120;
	h2 = upsert_ok(t, &ff, 40, FLOW_UPSERT_REVIVED);
	ck_assert_uint_eq(h2, h);
	ck_assert_uint_eq(flow_table_flags(t, h), 0);
	ck_assert_uint_eq(stats_of(t).dead, 0);
	ck_assert_uint_eq(stats_of(t).active, 1);
	ck_assert_ptr_eq(flow_table_user(t, h), user);
	ck_assert_uint_eq(user[0], 0x1122334455667788ull);
	ck_assert_uint_eq(user[1], 42);

	/* After a real deletion a recycled slot starts with a zeroed user area. */
	ck_assert_int_eq(flow_table_delete(t, h), 0);
	make_v4(&ff, 4);
	h2 = upsert_ok(t, &ff, 50, FLOW_UPSERT_INSERTED);
	ck_assert_uint_eq(h2, h);               /* LIFO recycling */
	user = flow_table_user(t, h2);
	ck_assert_uint_eq(user[0], 0);
	ck_assert_uint_eq(user[1], 0);
	flow_table_free(t);
}
END_TEST

START_TEST(user_area_sizes)
{
	struct flow_table_options o = { .buckets = 16, .user_bytes = FLOW_TABLE_USER_MAX + 1 };
	struct flow_table *t = NULL;
	struct flow_full ff;

	ck_assert_int_eq(flow_table_new(&o, &t), -EINVAL);
	for (uint32_t ub = 0; ub <= FLOW_TABLE_USER_MAX; ub++) {
		uint32_t h[3];

		t = table_new(16, 0, ub, NULL);
		for (uint32_t i = 0; i < 3; i++) {
			make_v4(&ff, i);
			h[i] = upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
		}
		for (uint32_t i = 0; i < 3; i++) {
			unsigned char *u = flow_table_user(t, h[i]);

			if (!ub) {
				ck_assert_ptr_null(u);
				continue;
			}
			ck_assert_uint_eq((uintptr_t)u % 8, 0);
			memset(u, 0xff, ub);    /* must not spill into a neighbour */
		}
		for (uint32_t i = 0; i < 3; i++) {
			make_v4(&ff, i);
			assert_exports(t, h[i], &ff);
		}
		flow_table_free(t);
	}
}
END_TEST

/* ---- iteration --------------------------------------------------------- */

START_TEST(iteration_visits_each_entry_once_in_slices)
{
	struct flow_table *t = table_new(16, 0, 0, NULL);
	struct flow_full ff;
	static uint8_t seen[5000];
	uint32_t cursor = 0, h, n = 0;

	memset(seen, 0, sizeof(seen));
	for (uint32_t i = 0; i < 5000; i++) {
		make_v4(&ff, i);
		upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	}
	/* Free some slots so there are holes to skip. */
	for (uint32_t i = 0; i < 5000; i += 3) {
		make_v4(&ff, i);
		ck_assert_int_eq(flow_table_delete(t, flow_table_lookup(t, &ff.flow.orig)), 0);
	}
	/* Slices of 7, resuming from the saved cursor. */
	for (;;) {
		uint32_t k;

		for (k = 0; k < 7 && (h = flow_table_next(t, &cursor)) != 0; k++) {
			uint32_t i = ntohs(flow_table_flow(t, h)->orig.l4.port.sport);

			ck_assert_msg(!seen[i], "entry %u visited twice", i);
			seen[i] = 1;
			n++;
		}
		if (k < 7)
			break;
	}
	ck_assert_uint_eq(n, flow_table_count(t));
	for (uint32_t i = 0; i < 5000; i++)
		ck_assert_msg(seen[i] == (i % 3 != 0), "entry %u: seen %u", i, seen[i]);
	ck_assert_uint_eq(flow_table_next(t, &cursor), 0);      /* stays at the end */
	flow_table_free(t);
}
END_TEST

START_TEST(deletion_during_iteration)
{
	struct flow_table *t = table_new(16, 0, 0, NULL);
	struct flow_full ff;
	uint32_t cursor = 0, h, n = 0;

	for (uint32_t i = 0; i < 3000; i++) {
		make_v4(&ff, i);
		upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
		if (i % 4 == 0)
			flow_table_mark_dead(t, flow_table_lookup(t, &ff.flow.orig), 2);
	}
	/* A purge: delete every entry as it is visited, dead ones included. */
	while ((h = flow_table_next(t, &cursor)) != 0) {
		ck_assert_int_eq(flow_table_delete(t, h), 0);
		n++;
	}
	ck_assert_uint_eq(n, 3000);
	ck_assert_uint_eq(flow_table_count(t), 0);
	ck_assert_uint_eq(stats_of(t).dead, 0);
	ck_assert_uint_eq(stats_of(t).deleted, 3000);
	cursor = 0;
	ck_assert_uint_eq(flow_table_next(t, &cursor), 0);
	flow_table_free(t);
}
END_TEST

START_TEST(growth_while_iterating)
{
	struct flow_table *t = table_new(16, 0, 0, NULL);
	struct flow_full ff;
	static uint8_t seen[20000];
	uint32_t cursor = 0, h, visited_old = 0, next = 2000;
	uint32_t buckets0;

	memset(seen, 0, sizeof(seen));
	for (uint32_t i = 0; i < 2000; i++) {
		make_v4(&ff, i);
		upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	}
	buckets0 = stats_of(t).buckets;
	/* Each visit inserts 4 new entries: the index doubles several times and
	 * the arena gains chunks under the iteration. */
	while ((h = flow_table_next(t, &cursor)) != 0) {
		uint32_t i = ntohs(flow_table_flow(t, h)->orig.l4.port.sport) |
			     (ntohl(flow_table_flow(t, h)->orig.src.v4) & 0xffff) << 16;

		REQUIRE(!seen[i], "entry %u visited twice", i);
		seen[i] = 1;
		if (i < 2000) {
			visited_old++;
			for (int k = 0; k < 4 && next < 20000; k++) {
				make_v4(&ff, next++);
				upsert_ok(t, &ff, 2, FLOW_UPSERT_INSERTED);
			}
		}
	}
	REQUIRE_CMP(visited_old, ==, 2000);
	REQUIRE_CMP(stats_of(t).buckets, >, buckets0);
	for (uint32_t i = 0; i < next; i++) {
		make_v4(&ff, i);
		REQUIRE(flow_table_lookup(t, &ff.flow.orig) != 0, "entry %u lost", i);
	}
	flow_table_free(t);
}
END_TEST

START_TEST(clear_empties_and_gives_memory_back)
{
	struct flow_table *t = table_new(16, 0, 16, NULL);
	struct flow_full ff;
	size_t empty = flow_table_memory(t), full;
	uint32_t cursor = 0, h;

	for (uint32_t i = 0; i < 20000; i++) {
		make_v4(&ff, i);
		if (i % 5 == 0)
			add_snat(&ff, i);
		if (i % 7 == 0)
			add_labels(&ff, 2, i % 3);
		upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	}
	ck_assert_uint_eq(flow_table_next(t, &cursor), 1);
	full = flow_table_memory(t);
	ck_assert_uint_gt(full, empty);
	flow_table_clear(t);
	ck_assert_uint_eq(flow_table_count(t), 0);
	ck_assert_uint_eq(flow_table_memory(t), empty);
	ck_assert_uint_eq(stats_of(t).deleted, 20000);
	ck_assert_uint_eq(stats_of(t).label_sets, 0);
	ck_assert_uint_eq(stats_of(t).ext, 0);
	ck_assert_uint_eq(flow_table_next(t, &cursor), 0);      /* a stale cursor just ends */
	make_v4(&ff, 1);
	ck_assert_uint_eq(flow_table_lookup(t, &ff.flow.orig), 0);
	h = upsert_ok(t, &ff, 2, FLOW_UPSERT_INSERTED);
	ck_assert_uint_eq(h, 1);
	flow_table_free(t);
}
END_TEST

START_TEST(hashed_calls_agree_with_plain_ones_across_growth)
{
	struct flow_table *t = table_new(16, 0, 0, NULL);
	struct flow_full ff;
	static uint32_t hash[3000], handle[3000];

	for (uint32_t i = 0; i < 3000; i++) {
		make_v4(&ff, i);
		hash[i] = flow_table_hash(t, &ff.flow.orig);
		flow_table_prefetch(t, hash[i]);
		REQUIRE_CMP(flow_table_lookup_hashed(t, &ff.flow.orig, hash[i]), ==, 0);
		REQUIRE_CMP(flow_table_upsert_hashed(t, &ff, hash[i], 1, &handle[i]), ==,
			    FLOW_UPSERT_INSERTED);
	}
	/* Hashes computed at 16 buckets still work at 4096. */
	REQUIRE_CMP(stats_of(t).buckets, >=, 4096);
	for (uint32_t i = 0; i < 3000; i++) {
		make_v4(&ff, i);
		flow_table_prefetch(t, hash[i]);
		REQUIRE_CMP(flow_table_lookup_hashed(t, &ff.flow.orig, hash[i]), ==, handle[i]);
		REQUIRE_CMP(flow_table_lookup(t, &ff.flow.orig), ==, handle[i]);
		ff.flow.timeout = 1;
		REQUIRE_CMP(flow_table_upsert_hashed(t, &ff, hash[i], 2, &handle[i]), ==,
			    FLOW_UPSERT_UPDATED);
	}
	flow_table_free(t);
}
END_TEST

/* ---- HashLimit ---------------------------------------------------------- */

START_TEST(hash_limit_is_exact)
{
	struct flow_table *t = table_new(65536, 1000, 16, NULL);
	struct flow_full ff;
	uint32_t h = 0, dead_h;

	/* The index is not sized beyond what the limit can fill. */
	ck_assert_uint_le(stats_of(t).buckets, 2048);
	for (uint32_t i = 0; i < 1000; i++) {
		make_v4(&ff, i);
		upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	}
	make_v4(&ff, 1000);
	ck_assert_int_eq(flow_table_upsert(t, &ff, 1, &h), -ENOSPC);
	ck_assert_uint_eq(stats_of(t).enospc, 1);
	ck_assert_uint_eq(flow_table_count(t), 1000);
	ck_assert_uint_eq(flow_table_lookup(t, &ff.flow.orig), 0);
	/* The table is intact, and updates still work at the limit. */
	for (uint32_t i = 0; i < 1000; i++) {
		make_v4(&ff, i);
		ck_assert_msg(flow_table_lookup(t, &ff.flow.orig) != 0, "entry %u lost", i);
		ff.flow.timeout = 7;
		upsert_ok(t, &ff, 2, FLOW_UPSERT_UPDATED);
	}
	/* Dead entries count against the limit. */
	make_v4(&ff, 0);
	dead_h = flow_table_lookup(t, &ff.flow.orig);
	ck_assert_int_eq(flow_table_mark_dead(t, dead_h, 3), 0);
	make_v4(&ff, 1001);
	ck_assert_int_eq(flow_table_upsert(t, &ff, 3, &h), -ENOSPC);
	ck_assert_uint_eq(stats_of(t).enospc, 2);
	/* A deletion makes room for exactly one. */
	ck_assert_int_eq(flow_table_delete(t, dead_h), 0);
	upsert_ok(t, &ff, 4, FLOW_UPSERT_INSERTED);
	make_v4(&ff, 1002);
	ck_assert_int_eq(flow_table_upsert(t, &ff, 4, &h), -ENOSPC);
	ck_assert_uint_eq(stats_of(t).enospc, 3);
	ck_assert_uint_eq(stats_of(t).max_seen, 1000);
	flow_table_free(t);
}
END_TEST

/* ---- collisions ---------------------------------------------------------- */

static uint32_t hash_constant(const struct flow_tuple *k, uint32_t seed)
{
	(void)k;
	(void)seed;
	return 0xffffffffu;     /* home = the last bucket: every probe wraps */
}

static uint32_t hash_few(const struct flow_tuple *k, uint32_t seed)
{
	/* Eight distinct values, three of them in the last buckets. */
	static const uint32_t v[8] = {
		0, 1, 2, 3, 0xfffffffdu, 0xfffffffeu, 0xffffffffu, 0x80000000u,
	};

	return v[flow_tuple_hash(k, seed) % 8];
}

static void collision_round(uint32_t (*hash)(const struct flow_tuple *, uint32_t), uint32_t n)
{
	struct flow_table *t = table_new(16, 0, 0, hash);
	struct flow_full ff;

	for (uint32_t i = 0; i < n; i++) {
		make_v4(&ff, i);
		upsert_ok(t, &ff, 1, FLOW_UPSERT_INSERTED);
	}
	for (uint32_t i = 0; i < n; i++) {
		make_v4(&ff, i);
		REQUIRE(flow_table_lookup(t, &ff.flow.orig) != 0, "entry %u lost", i);
		upsert_ok(t, &ff, 2, FLOW_UPSERT_UNCHANGED);
	}
	/* Delete every other one (backward shifts through the wrapped cluster). */
	for (uint32_t i = 0; i < n; i += 2) {
		make_v4(&ff, i);
		REQUIRE_CMP(flow_table_delete(t, flow_table_lookup(t, &ff.flow.orig)), ==, 0);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t h;

		make_v4(&ff, i);
		h = flow_table_lookup(t, &ff.flow.orig);
		REQUIRE((h != 0) == (i % 2 == 1), "entry %u: handle %u", i, h);
		if (h)
			REQUIRE_CMP(ntohs(flow_table_flow(t, h)->orig.l4.port.sport), ==, i);
	}
	/* Misses on absent keys of the same hash terminate. */
	make_v4(&ff, n + 1);
	REQUIRE_CMP(flow_table_lookup(t, &ff.flow.orig), ==, 0);
	for (uint32_t i = 0; i < n; i += 2) {
		make_v4(&ff, i);
		upsert_ok(t, &ff, 3, FLOW_UPSERT_INSERTED);
	}
	REQUIRE_CMP(flow_table_count(t), ==, n);
	for (uint32_t i = 0; i < n; i++) {
		make_v4(&ff, i);
		REQUIRE_CMP(flow_table_delete(t, flow_table_lookup(t, &ff.flow.orig)), ==, 0);
	}
	REQUIRE_CMP(flow_table_count(t), ==, 0);
	flow_table_free(t);
}

START_TEST(collisions_all_in_one_bucket)
{
	collision_round(hash_constant, 1500);
}
END_TEST

START_TEST(collisions_few_hash_values_with_wraparound)
{
	collision_round(hash_few, 3000);
}
END_TEST

/* ---- allocation failure --------------------------------------------------- */

START_TEST(creation_fails_cleanly_without_memory)
{
	struct flow_table_options o = { .buckets = 1024 };
	struct flow_table *t = NULL;
	int r = -1;

	for (long k = 0; k < 4; k++) {
		alloc_countdown = k;
		alloc_armed = true;
		r = flow_table_new(&o, &t);
		alloc_armed = false;
		alloc_countdown = -1;
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
	}
	ck_assert_int_eq(r, 0);
	flow_table_free(t);
}
END_TEST

/* The i-th state of the allocation-failure runs: some NAT, many label sets. */
static void make_mixed(struct flow_full *ff, uint32_t i)
{
	make_v4(ff, i);
	if (i % 3 == 0)
		add_snat(ff, i);
	if (i % 5 == 0)
		add_labels(ff, 1 + i % 4, i / 50);
	flow_full_normalize(ff);
}

/*
 * Fail the k-th allocation of a run of mixed inserts (ext, labels, growth
 * of every structure), for each k: an upsert may fail with -ENOMEM, which
 * is counted, and the table must stay exactly as before it.
 */
START_TEST(allocation_failure_leaves_the_table_intact)
{
	bool saw_enomem = false;

	for (long k = 0; k < 60; k++) {
		struct flow_table *t = table_new(16, 0, 8, NULL);
		struct flow_full ff;
		uint32_t stored = 0, h = 0;
		static uint8_t in_table[6000];

		memset(in_table, 0, sizeof(in_table));
		alloc_countdown = k;
		for (uint32_t i = 0; i < 6000; i++) {
			int r;

			make_mixed(&ff, i);
			r = upsert_armed(t, &ff, 1, &h);
			if (r == -ENOMEM) {
				saw_enomem = true;
				REQUIRE_CMP(stats_of(t).enomem, ==, 1);
				REQUIRE_CMP(flow_table_lookup(t, &ff.flow.orig), ==, 0);
				continue;
			}
			REQUIRE_CMP(r, ==, FLOW_UPSERT_INSERTED);
			in_table[i] = 1;
			stored++;
		}
		alloc_countdown = -1;
		REQUIRE_CMP(flow_table_count(t), ==, stored);
		for (uint32_t i = 0; i < 6000; i++) {
			make_mixed(&ff, i);
			h = flow_table_lookup(t, &ff.flow.orig);
			REQUIRE((h != 0) == in_table[i], "k=%ld entry %u: handle %u", k, i, h);
			if (h)
				assert_exports(t, h, &ff);
		}
		/*
		 * An update that needs a new label set fails cleanly too: 200
		 * words is more than any recycled label buffer of this run holds.
		 */
		alloc_countdown = 0;
		make_v4(&ff, 1);
		add_labels(&ff, 200, 0xabc00000u);
		h = flow_table_lookup(t, &ff.flow.orig);
		if (h) {
			struct flow_full before;

			flow_table_export(t, h, &before);
			REQUIRE_CMP(upsert_armed(t, &ff, 2, &h), ==, -ENOMEM);
			assert_exports(t, h, &before);
		}
		alloc_countdown = -1;
		flow_table_free(t);
	}
	ck_assert(saw_enomem);
}
END_TEST

/* ---- randomized comparison with a model ----------------------------------- */

#define MODEL_KEYS 6000u

struct model_entry {
	bool present;
	bool dead;
	bool updated;
	uint32_t handle;
	uint32_t time;
	struct flow_full ff;
};

static void model_content(struct flow_full *ff, uint32_t key)
{
	uint32_t r = rng();

	if (key % 2)
		make_v6(ff, key);
	else
		make_v4(ff, key);
	ff->flow.timeout = r % 4;       /* few values: some upserts are UNCHANGED */
	if ((r >> 4) % 4 == 0)
		add_snat(ff, (r >> 8) % 3);
	if ((r >> 10) % 3 == 0) {
		add_labels(ff, 1 + (r >> 12) % 3, (r >> 16) % 4);
		flow_full_normalize(ff);
	}
	if ((r >> 20) % 8 == 0) {
		ff->flow.attrs |= FLOW_A_HELPER;
		strcpy(ff->ext.helper, "ftp");
	}
}

static void model_check_entry(const struct flow_table *t, const struct model_entry *m)
{
	unsigned flags = (m->dead ? FLOW_ENTRY_DEAD : 0u) | (m->updated ? FLOW_ENTRY_UPDATED : 0u);

	REQUIRE_CMP(flow_table_lookup(t, &m->ff.flow.orig), ==, m->handle);
	REQUIRE_CMP(flow_table_flags(t, m->handle), ==, flags);
	REQUIRE_CMP(flow_table_updated(t, m->handle), ==, m->time);
	assert_exports(t, m->handle, &m->ff);
}

static void model_run(uint32_t (*hash)(const struct flow_tuple *, uint32_t), uint64_t seed,
		      uint32_t ops)
{
	struct flow_table *t = table_new(16, 4000, 16, hash);
	struct model_entry *model = calloc(MODEL_KEYS, sizeof(*model));
	uint32_t count = 0, dead = 0;
	uint64_t enospc = 0;

	ck_assert_ptr_nonnull(model);
	rng_seed(seed);
	for (uint32_t op = 0; op < ops; op++) {
		uint32_t key = rng() % MODEL_KEYS, what = rng() % 100, h = 0;
		struct model_entry *m = &model[key];

		if (what < 55) {                        /* upsert */
			struct flow_full ff;
			int r, expect;

			model_content(&ff, key);
			if (!m->present)
				expect = count >= 4000 ? -ENOSPC : FLOW_UPSERT_INSERTED;
			else if (m->dead)
				expect = FLOW_UPSERT_REVIVED;
			else
				expect = memcmp(&ff.flow, &m->ff.flow, sizeof(ff.flow)) == 0 &&
					 memcmp(&ff.ext, &m->ff.ext, sizeof(ff.ext)) == 0 &&
					 ff.labels.words == m->ff.labels.words &&
					 memcmp(ff.labels.w, m->ff.labels.w, ff.labels.words * 4u) == 0 ?
					 FLOW_UPSERT_UNCHANGED : FLOW_UPSERT_UPDATED;
			r = flow_table_upsert(t, &ff, op, &h);
			REQUIRE(r == expect, "op %u key %u: upsert %d, expected %d", op, key, r, expect);
			if (r == -ENOSPC) {
				enospc++;
				continue;
			}
			if (!m->present) {
				count++;
				m->present = true;
				m->updated = false;
				m->handle = h;
			} else if (m->dead) {
				REQUIRE_CMP(h, ==, m->handle);
				dead--;
				m->dead = false;
				m->updated = false;
			} else {
				REQUIRE_CMP(h, ==, m->handle);
				m->updated = true;
			}
			m->ff = ff;
			m->time = op;
		} else if (what < 75) {                 /* delete */
			if (!m->present) {
				REQUIRE_CMP(flow_table_lookup(t, &m->ff.flow.orig), ==, 0);
				continue;
			}
			REQUIRE_CMP(flow_table_delete(t, m->handle), ==, 0);
			m->present = false;
			count--;
			if (m->dead)
				dead--;
			m->dead = false;
		} else if (what < 85) {                 /* mark dead */
			if (!m->present)
				continue;
			REQUIRE_CMP(flow_table_mark_dead(t, m->handle, op), ==, 0);
			if (!m->dead) {
				m->dead = true;
				m->time = op;
				dead++;
			}
		} else if (what < 99) {                 /* lookup and compare */
			if (m->present)
				model_check_entry(t, m);
		} else if (rng() % 50 == 0) {           /* full pass: iteration = model */
			uint32_t cursor = 0, n = 0;

			while ((h = flow_table_next(t, &cursor)) != 0)
				n++;
			REQUIRE_CMP(n, ==, count);
			for (uint32_t i = 0; i < MODEL_KEYS; i++)
				if (model[i].present)
					model_check_entry(t, &model[i]);
		}
		REQUIRE_CMP(flow_table_count(t), ==, count);
	}
	REQUIRE_CMP(stats_of(t).dead, ==, dead);
	REQUIRE_CMP(stats_of(t).active, ==, count - dead);
	REQUIRE_CMP(stats_of(t).enospc, ==, enospc);
	REQUIRE_CMP(enospc, >, 0);           /* the limit was exercised */
	for (uint32_t i = 0; i < MODEL_KEYS; i++) {
		if (!model[i].present)
			continue;
		model_check_entry(t, &model[i]);
		REQUIRE_CMP(flow_table_delete(t, model[i].handle), ==, 0);
	}
	REQUIRE_CMP(flow_table_count(t), ==, 0);
	REQUIRE_CMP(stats_of(t).label_sets, ==, 0);
	REQUIRE_CMP(stats_of(t).ext, ==, 0);
	free(model);
	flow_table_free(t);
}

START_TEST(randomized_against_array_model)
{
	model_run(NULL, 0x1234567890abcdefull, 100000);
}
END_TEST

static uint32_t hash_weak(const struct flow_tuple *k, uint32_t seed)
{
	/* 512 distinct values: clusters of ~8 keys per value at the limit. */
	return (flow_tuple_hash(k, seed) % 512) * 0x9e3779b1u;
}

START_TEST(randomized_against_array_model_weak_hash)
{
	model_run(hash_weak, 42, 100000);
}
END_TEST

/* ---- memory ------------------------------------------------------------------ */

START_TEST(memory_per_plain_state_at_1m)
{
	const uint32_t n = 1000000;
	struct flow_table *t = table_new(FLOW_TABLE_DEFAULT_BUCKETS, 0, 16, NULL);
	struct flow_full ff;
	double per_state;

	make_v4(&ff, 0);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t h;

		ff.flow.orig.src.v4 = htonl(0x0a000000u | (i >> 16));
		ff.flow.orig.l4.port.sport = htons((uint16_t)i);
		REQUIRE_CMP(flow_table_upsert(t, &ff, 1, &h), >=, 0);
	}
	REQUIRE_CMP(flow_table_count(t), ==, n);
	per_state = (double)flow_table_memory(t) / n;
	printf("flow table: %u plain states, 16-byte user area: %zu bytes allocated, "
	       "%.1f bytes/state, %u buckets\n",
	       n, flow_table_memory(t), per_state, stats_of(t).buckets);
	REQUIRE(per_state <= 128.0, "%.1f bytes per state, budget 128", per_state);
	flow_table_free(t);
}
END_TEST

/* ---- the key set (flow/keyset.h) ------------------------------------------------ */

START_TEST(keyset_holds_what_was_added_across_growth)
{
	struct flow_keyset ks;
	struct flow_full ff, v6;

	flow_keyset_init(&ks, 7);
	make_v4(&ff, 1);
	ck_assert(!flow_keyset_has(&ks, &ff.flow.orig));
	for (uint32_t i = 1; i <= 5000; i++) {
		make_v4(&ff, i);
		ck_assert_int_eq(flow_keyset_add(&ks, &ff.flow.orig), 0);
	}
	make_v4(&ff, 77);
	ck_assert_int_eq(flow_keyset_add(&ks, &ff.flow.orig), 0);     /* twice: counted once */
	ck_assert_uint_eq(ks.count, 5000);
	for (uint32_t i = 1; i <= 5000; i++) {
		make_v4(&ff, i);
		if (!flow_keyset_has(&ks, &ff.flow.orig))
			ck_abort_msg("key %u added but not found", i);
	}
	for (uint32_t i = 5001; i <= 15000; i++) {
		make_v4(&ff, i);
		if (flow_keyset_has(&ks, &ff.flow.orig))
			ck_abort_msg("key %u never added but found", i);
	}
	/* The same tuple in another family or zone is another key. */
	make_v6(&v6, 1);
	ck_assert(!flow_keyset_has(&ks, &v6.flow.orig));
	make_v4(&ff, 1);
	ff.flow.orig.zone = 3;
	ck_assert(!flow_keyset_has(&ks, &ff.flow.orig));
	flow_keyset_clear(&ks);
	make_v4(&ff, 1);
	ck_assert(!flow_keyset_has(&ks, &ff.flow.orig));
	ck_assert_uint_eq(ks.count, 0);
	ck_assert_ptr_null(ks.slot);
}
END_TEST

START_TEST(keyset_without_memory_is_unchanged)
{
	struct flow_keyset ks;
	struct flow_full ff;

	flow_keyset_init(&ks, 7);
	make_v4(&ff, 1);
	alloc_countdown = 0;
	alloc_armed = true;
	ck_assert_int_eq(flow_keyset_add(&ks, &ff.flow.orig), -ENOMEM);
	alloc_armed = false;
	ck_assert(!flow_keyset_has(&ks, &ff.flow.orig));
	ck_assert_int_eq(flow_keyset_add(&ks, &ff.flow.orig), 0);
	ck_assert(flow_keyset_has(&ks, &ff.flow.orig));
	flow_keyset_clear(&ks);
}
END_TEST

static Suite *flow_table_suite(void)
{
	Suite *s = suite_create("flow_table");
	TCase *tc = tcase_create("core");
	TCase *heavy = tcase_create("heavy");

	tcase_add_test(tc, insert_lookup_update_delete);
	tcase_add_test(tc, creation_time_survives_updates_and_restarts_on_revival);
	tcase_add_test(tc, origin_is_kept_beside_the_flags);
	tcase_add_test(tc, invalid_handles_are_refused);
	tcase_add_test(tc, families_and_zones_are_distinct_keys);
	tcase_add_test(tc, rejects_unnormalised_keys);
	tcase_add_test(tc, ext_is_stored_replaced_and_released);
	tcase_add_test(tc, labels_are_interned_and_refcounted);
	tcase_add_test(tc, labels_only_flows_need_no_ext_slot);
	tcase_add_test(tc, full_state_round_trips);
	tcase_add_test(tc, dead_entries_stay_until_deleted_and_revive_as_new);
	tcase_add_test(tc, user_area_sizes);
	tcase_add_test(tc, iteration_visits_each_entry_once_in_slices);
	tcase_add_test(tc, deletion_during_iteration);
	tcase_add_test(tc, growth_while_iterating);
	tcase_add_test(tc, clear_empties_and_gives_memory_back);
	tcase_add_test(tc, hash_limit_is_exact);
	tcase_add_test(tc, hashed_calls_agree_with_plain_ones_across_growth);
	tcase_add_test(tc, creation_fails_cleanly_without_memory);
	tcase_add_test(tc, keyset_holds_what_was_added_across_growth);
	tcase_add_test(tc, keyset_without_memory_is_unchanged);
	suite_add_tcase(s, tc);

	/* Seconds under ASan and valgrind-free CI: give them room. */
	tcase_set_timeout(heavy, 120);
	tcase_add_test(heavy, collisions_all_in_one_bucket);
	tcase_add_test(heavy, collisions_few_hash_values_with_wraparound);
	tcase_add_test(heavy, allocation_failure_leaves_the_table_intact);
	tcase_add_test(heavy, randomized_against_array_model);
	tcase_add_test(heavy, randomized_against_array_model_weak_hash);
	tcase_add_test(heavy, memory_per_plain_state_at_1m);
	suite_add_tcase(s, heavy);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(flow_table_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
