/*
 * check_holdset.c - the packets a-priori mode holds (src/daemon/holdset.c):
 * release by flow, by deadline, by the engine's word and all at once, in
 * arrival order; the limit; growth and a new timeout with packets held;
 * and a random run against a plain list as the model.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/holdset.h"

/* What the release callback saw, in order. */
struct seen {
	uint32_t id[4096];
	uint64_t since[4096];
	int why[4096];
	unsigned n;
};

static void record(void *arg, uint32_t id, uint64_t since_us, int why)
{
	struct seen *s = arg;

	ck_assert_uint_lt(s->n, 4096);
	s->id[s->n] = id;
	s->since[s->n] = since_us;
	s->why[s->n] = why;
	s->n++;
}

static struct seen seen;
static struct holdset hs;

static void setup(void)
{
	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(holdset_init(&hs, 8), 0);
}

static void teardown(void)
{
	holdset_free(&hs);
}

/* Packet id is 100 + i, flow handle h, deadline 1000 + 10 i, arrival i. */
static void add(uint32_t i, uint32_t h)
{
	ck_assert_int_eq(holdset_add(&hs, 100 + i, h, 1000 + 10 * i, i), 0);
}

START_TEST(release_by_flow_in_arrival_order)
{
	uint64_t d;

	add(0, 7);
	add(1, 9);
	add(2, 7);
	add(3, 7);
	ck_assert_uint_eq(hs.n, 4);
	ck_assert_uint_eq(holdset_release_handle(&hs, 7, 5, record, &seen), 3);
	ck_assert_uint_eq(seen.n, 3);
	ck_assert_uint_eq(seen.id[0], 100);
	ck_assert_uint_eq(seen.id[1], 102);
	ck_assert_uint_eq(seen.id[2], 103);
	ck_assert_uint_eq(seen.since[2], 3);
	ck_assert_int_eq(seen.why[0], 5);
	ck_assert_uint_eq(hs.n, 1);
	/* the one left is the first now */
	ck_assert(holdset_next_deadline(&hs, &d));
	ck_assert_uint_eq(d, 1010);
	/* a flow with nothing held, and flow 7 again: nothing */
	ck_assert_uint_eq(holdset_release_handle(&hs, 8, 5, record, &seen), 0);
	ck_assert_uint_eq(holdset_release_handle(&hs, 7, 5, record, &seen), 0);
	ck_assert_uint_eq(seen.n, 3);
}
END_TEST

START_TEST(release_by_deadline)
{
	uint64_t d;

	ck_assert(!holdset_next_deadline(&hs, &d));
	for (uint32_t i = 0; i < 5; i++)
		add(i, i);
	ck_assert_uint_eq(holdset_release_expired(&hs, 999, 2, record, &seen), 0);
	/* at or before: 1000, 1010, 1020 */
	ck_assert_uint_eq(holdset_release_expired(&hs, 1020, 2, record, &seen), 3);
	ck_assert_uint_eq(seen.id[0], 100);
	ck_assert_uint_eq(seen.id[2], 102);
	ck_assert(holdset_next_deadline(&hs, &d));
	ck_assert_uint_eq(d, 1030);
	/* a released packet's flow no longer finds it */
	ck_assert_uint_eq(holdset_release_handle(&hs, 1, 3, record, &seen), 0);
	ck_assert_uint_eq(holdset_release_all(&hs, 4, record, &seen), 2);
	ck_assert_uint_eq(seen.id[3], 103);
	ck_assert_uint_eq(seen.id[4], 104);
	ck_assert_int_eq(seen.why[4], 4);
	ck_assert_uint_eq(hs.n, 0);
	ck_assert(!holdset_next_deadline(&hs, &d));
}
END_TEST

START_TEST(the_limit_and_reuse)
{
	for (uint32_t i = 0; i < 8; i++)
		add(i, i % 3);
	ck_assert_int_eq(holdset_add(&hs, 999, 1, 5000, 0), -ENOSPC);
	ck_assert_uint_eq(hs.n, 8);
	/* freed slots are taken again */
	ck_assert_uint_eq(holdset_release_handle(&hs, 1, 1, record, &seen), 3);
	for (uint32_t i = 8; i < 11; i++)
		add(i, 50);
	ck_assert_int_eq(holdset_add(&hs, 999, 1, 5000, 0), -ENOSPC);
	ck_assert_uint_eq(holdset_release_all(&hs, 1, record, &seen), 8);
	/* arrival order survives the reuse: 0, 2, 3, 5, 6, 8, 9, 10 */
	ck_assert_uint_eq(seen.id[3], 100);
	ck_assert_uint_eq(seen.id[4], 102);
	ck_assert_uint_eq(seen.id[10], 110);
}
END_TEST

/* 1 for flows 2 and 4, 2 for flow 3, else keep: the engine's word. */
static int decide(void *arg, uint32_t handle)
{
	(void)arg;
	return handle == 2 || handle == 4 ? 1 : handle == 3 ? 2 : 0;
}

START_TEST(release_if)
{
	for (uint32_t i = 0; i < 6; i++)
		add(i, i);
	ck_assert_uint_eq(holdset_release_if(&hs, decide, record, &seen), 3);
	ck_assert_uint_eq(seen.id[0], 102);
	ck_assert_int_eq(seen.why[0], 1);
	ck_assert_uint_eq(seen.id[1], 103);
	ck_assert_int_eq(seen.why[1], 2);
	ck_assert_uint_eq(seen.id[2], 104);
	ck_assert_uint_eq(hs.n, 3);
	ck_assert_uint_eq(holdset_release_handle(&hs, 5, 9, record, &seen), 1);
	ck_assert_uint_eq(holdset_release_handle(&hs, 0, 9, record, &seen), 1);
	ck_assert_uint_eq(holdset_release_handle(&hs, 1, 9, record, &seen), 1);
	ck_assert_uint_eq(hs.n, 0);
}
END_TEST

START_TEST(grow_keeps_what_is_held)
{
	uint64_t d;

	for (uint32_t i = 0; i < 8; i++)
		add(i, i % 2);
	ck_assert_int_eq(holdset_grow(&hs, 4), 0);      /* smaller: nothing to do */
	ck_assert_int_eq(holdset_grow(&hs, 1000), 0);
	ck_assert_uint_eq(hs.cap, 1000);
	for (uint32_t i = 8; i < 1000; i++)
		add(i, i % 2);
	ck_assert_int_eq(holdset_add(&hs, 1, 1, 1, 1), -ENOSPC);
	ck_assert(holdset_next_deadline(&hs, &d));
	ck_assert_uint_eq(d, 1000);
	/* the chains were rebuilt: flow 1's 500 packets, in order (past 64, by the FIFO) */
	ck_assert_uint_eq(holdset_release_handle(&hs, 1, 1, record, &seen), 500);
	for (unsigned k = 0; k < 500; k++)
		ck_assert_uint_eq(seen.id[k], 100 + 2 * k + 1);
	ck_assert_uint_eq(holdset_release_handle(&hs, 0, 1, record, &seen), 500);
	ck_assert_uint_eq(hs.n, 0);
}
END_TEST

START_TEST(a_new_timeout)
{
	uint64_t d;

	for (uint32_t i = 0; i < 4; i++)
		add(i, i);
	holdset_shift_deadlines(&hs, -995);             /* 5, 15, 25, 35 */
	ck_assert(holdset_next_deadline(&hs, &d));
	ck_assert_uint_eq(d, 5);
	ck_assert_uint_eq(holdset_release_expired(&hs, 20, 1, record, &seen), 2);
	holdset_shift_deadlines(&hs, 100);              /* 125, 135 */
	ck_assert_uint_eq(holdset_release_expired(&hs, 130, 1, record, &seen), 1);
	ck_assert_uint_eq(seen.id[2], 102);
}
END_TEST

/*
 * A random run of adds and every kind of release against a model: an
 * array of (id, handle, deadline) in arrival order.  Deadlines grow with
 * arrival, as under one timeout.
 */
struct model {
	uint32_t id[64], handle[64];
	uint64_t deadline[64];
	unsigned n;
};

static void model_remove(struct model *m, unsigned k)
{
	memmove(&m->id[k], &m->id[k + 1], (m->n - k - 1) * sizeof(m->id[0]));
	memmove(&m->handle[k], &m->handle[k + 1], (m->n - k - 1) * sizeof(m->handle[0]));
	memmove(&m->deadline[k], &m->deadline[k + 1], (m->n - k - 1) * sizeof(m->deadline[0]));
	m->n--;
}

enum { BY_FLOW, BY_DEADLINE, BY_PARITY, ALL };

static bool model_match(const struct model *m, unsigned k, int kind, uint64_t arg)
{
	switch (kind) {
	case BY_FLOW:
		return m->handle[k] == arg;
	case BY_DEADLINE:
		return m->deadline[k] <= arg;
	case BY_PARITY:
		return m->handle[k] % 2 == arg;
	default:
		return true;
	}
}

/* The model's side of a release: exactly its matching packets, in arrival order, are what the set released. */
static void model_release(struct model *m, int kind, uint64_t arg)
{
	unsigned k = 0, at = 0;

	while (k < m->n) {
		if (!model_match(m, k, kind, arg)) {
			k++;
			continue;
		}
		ck_assert_uint_lt(at, seen.n);
		ck_assert_uint_eq(seen.id[at++], m->id[k]);
		model_remove(m, k);
	}
	ck_assert_uint_eq(at, seen.n);
}

static uint32_t odd_flow;

static int decide_odd(void *arg, uint32_t handle)
{
	(void)arg;
	return handle % 2 == odd_flow ? 1 : 0;
}

START_TEST(random_against_a_model)
{
	struct model m = { .n = 0 };
	uint64_t now = 0, d;
	uint32_t next_id = 1;

	srandom(12345);
	holdset_free(&hs);
	ck_assert_int_eq(holdset_init(&hs, 64), 0);
	for (int step = 0; step < 200000; step++) {
		long r = random() % 100;
		uint32_t h = (uint32_t)(random() % 20);

		seen.n = 0;
		now += (uint64_t)(random() % 3);
		if (r < 50) {
			int rc = holdset_add(&hs, next_id, h, now + 50, now);

			if (m.n == 64) {
				ck_assert_int_eq(rc, -ENOSPC);
			} else {
				ck_assert_int_eq(rc, 0);
				m.id[m.n] = next_id;
				m.handle[m.n] = h;
				m.deadline[m.n] = now + 50;
				m.n++;
			}
			next_id++;
		} else if (r < 75) {
			holdset_release_handle(&hs, h, 1, record, &seen);
			model_release(&m, BY_FLOW, h);
		} else if (r < 95) {
			/* deadlines grow with arrival: the expired are a prefix */
			holdset_release_expired(&hs, now, 2, record, &seen);
			model_release(&m, BY_DEADLINE, now);
		} else if (r < 99) {
			odd_flow = h % 2;
			holdset_release_if(&hs, decide_odd, record, &seen);
			model_release(&m, BY_PARITY, odd_flow);
		} else {
			holdset_release_all(&hs, 3, record, &seen);
			model_release(&m, ALL, 0);
		}
		ck_assert_uint_eq(hs.n, m.n);
		ck_assert_int_eq(holdset_next_deadline(&hs, &d), m.n > 0);
		if (m.n)
			ck_assert_uint_eq(d, m.deadline[0]);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("holdset");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, release_by_flow_in_arrival_order);
	tcase_add_test(tc, release_by_deadline);
	tcase_add_test(tc, the_limit_and_reuse);
	tcase_add_test(tc, release_if);
	tcase_add_test(tc, grow_keeps_what_is_held);
	tcase_add_test(tc, a_new_timeout);
	tcase_add_test(tc, random_against_a_model);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
