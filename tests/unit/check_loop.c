/*
 * check_loop.c - the event loop: timers, fd events, signals, hooks.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loop/loop.h"

struct trace {
	char log[256];
	int count;
};

static void trace_add(struct trace *t, const char *what)
{
	strncat(t->log, what, sizeof(t->log) - strlen(t->log) - 1);
	t->count++;
}

struct named_timer {
	struct trace *trace;
	const char *name;
};

static void on_named_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct named_timer *nt = arg;

	trace_add(nt->trace, nt->name);
}

static void run_until(struct loop *loop, struct trace *t, int count, int max_iterations)
{
	for (int i = 0; i < max_iterations && t->count < count; i++)
		ck_assert_int_eq(loop_run_once(loop, 200), 0);
}

START_TEST(timers_fire_in_deadline_order)
{
	struct loop *loop = loop_new();
	struct trace t = { 0 };
	struct named_timer a = { &t, "a" }, b = { &t, "b" }, c = { &t, "c" };
	struct loop_timer *ta = loop_timer_new(loop, on_named_timer, &a);
	struct loop_timer *tb = loop_timer_new(loop, on_named_timer, &b);
	struct loop_timer *tc = loop_timer_new(loop, on_named_timer, &c);

	loop_timer_arm(ta, 30);
	loop_timer_arm(tb, 10);
	loop_timer_arm(tc, 20);
	run_until(loop, &t, 3, 50);
	ck_assert_msg(strcmp(t.log, "bca") == 0, "expected order bca, got '%s'", t.log);
	ck_assert(!loop_timer_armed(ta));
	loop_timer_free(ta);
	loop_timer_free(tb);
	loop_timer_free(tc);
	loop_free(loop);
}
END_TEST

START_TEST(rearming_replaces_deadline_and_disarm_cancels)
{
	struct loop *loop = loop_new();
	struct trace t = { 0 };
	struct named_timer a = { &t, "a" }, b = { &t, "b" };
	struct loop_timer *ta = loop_timer_new(loop, on_named_timer, &a);
	struct loop_timer *tb = loop_timer_new(loop, on_named_timer, &b);

	loop_timer_arm(ta, 10);
	loop_timer_arm(tb, 20);
	loop_timer_arm(ta, 40);     /* now after b */
	run_until(loop, &t, 2, 50);
	ck_assert_msg(strcmp(t.log, "ba") == 0, "expected ba, got '%s'", t.log);

	t = (struct trace){ 0 };
	loop_timer_arm(ta, 5);
	loop_timer_arm(tb, 10);
	loop_timer_disarm(ta);
	run_until(loop, &t, 1, 50);
	for (int i = 0; i < 3; i++)
		loop_run_once(loop, 20);
	ck_assert_msg(strcmp(t.log, "b") == 0, "expected only b, got '%s'", t.log);
	loop_timer_free(ta);
	loop_timer_free(tb);
	loop_free(loop);
}
END_TEST

static void on_self_free(struct loop *loop, struct loop_timer *timer, void *arg)
{
	(*(int *)arg)++;
	loop_timer_free(timer);
}

START_TEST(timer_may_free_itself_in_its_callback)
{
	struct loop *loop = loop_new();
	int fired = 0;
	struct loop_timer *t = loop_timer_new(loop, on_self_free, &fired);

	loop_timer_arm(t, 0);
	for (int i = 0; i < 5 && !fired; i++)
		loop_run_once(loop, 50);
	ck_assert_int_eq(fired, 1);
	loop_free(loop);
}
END_TEST

static void on_rearm(struct loop *loop, struct loop_timer *timer, void *arg)
{
	if (++*(int *)arg < 3)
		loop_timer_arm(timer, 0);
}

START_TEST(zero_delay_rearm_runs_once_per_iteration)
{
	struct loop *loop = loop_new();
	int fired = 0;
	struct loop_timer *t = loop_timer_new(loop, on_rearm, &fired);

	loop_timer_arm(t, 0);
	loop_run_once(loop, 0);
	ck_assert_msg(fired == 1, "a 0 ms re-arm must wait for the next iteration, fired %d", fired);
	loop_run_once(loop, 0);
	loop_run_once(loop, 0);
	ck_assert_int_eq(fired, 3);
	loop_timer_free(t);
	loop_free(loop);
}
END_TEST

static void on_readable(struct loop *loop, int fd, unsigned events, void *arg)
{
	char buf[16];
	ssize_t n = read(fd, buf, sizeof(buf));

	ck_assert_int_gt(n, 0);
	ck_assert(events & LOOP_READ);
	trace_add(arg, "r");
}

START_TEST(fd_events_reach_their_callback_until_unwatched)
{
	struct loop *loop = loop_new();
	struct trace t = { 0 };
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(loop_watch(loop, p[0], LOOP_READ, on_readable, &t), 0);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	run_until(loop, &t, 1, 10);
	ck_assert_int_eq(t.count, 1);

	loop_unwatch(loop, p[0]);
	ck_assert_int_eq(write(p[1], "y", 1), 1);
	loop_run_once(loop, 20);
	ck_assert_msg(t.count == 1, "unwatched fd still delivered events (%d)", t.count);
	ck_assert_int_eq(loop_watch(loop, p[0], 0, on_readable, &t), -EINVAL);
	close(p[0]);
	close(p[1]);
	loop_free(loop);
}
END_TEST

static void on_hook(struct loop *loop, void *arg)
{
	trace_add(arg, "h");
}

static void on_stop_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	trace_add(arg, "t");
	loop_stop(loop);
}

START_TEST(before_sleep_hook_runs_every_iteration_and_stop_ends_run)
{
	struct loop *loop = loop_new();
	struct trace t = { 0 };
	struct loop_timer *timer = loop_timer_new(loop, on_stop_timer, &t);

	ck_assert_int_eq(loop_before_sleep(loop, on_hook, &t), 0);
	loop_timer_arm(timer, 5);
	ck_assert_int_eq(loop_run(loop), 0);
	ck_assert_msg(t.log[0] == 'h' && strchr(t.log, 't') != NULL,
		      "expected hooks then the timer, got '%s'", t.log);
	loop_timer_free(timer);
	loop_free(loop);
}
END_TEST

static void on_flush_hook(struct loop *loop, void *arg)
{
	trace_add(arg, "F");
}

static void on_hook_b(struct loop *loop, void *arg)
{
	trace_add(arg, "b");
}

static void on_self_removing_hook(struct loop *loop, void *arg)
{
	trace_add(arg, "r");
	loop_hook_remove(loop, on_self_removing_hook, arg);
}

START_TEST(flush_hooks_run_after_every_other_hook)
{
	struct loop *loop = loop_new();
	struct trace t = { 0 };

	/* Registered first, it still runs last. */
	ck_assert_int_eq(loop_flush_hook(loop, on_flush_hook, &t), 0);
	ck_assert_int_eq(loop_before_sleep(loop, on_hook, &t), 0);
	ck_assert_int_eq(loop_before_sleep(loop, on_self_removing_hook, &t), 0);
	ck_assert_int_eq(loop_before_sleep(loop, on_hook_b, &t), 0);
	ck_assert_int_eq(loop_run_once(loop, 0), 0);
	ck_assert_int_eq(loop_run_once(loop, 0), 0);
	ck_assert_msg(strcmp(t.log, "hrbFhbF") == 0, "expected 'hrbFhbF', got '%s'", t.log);
	loop_hook_remove(loop, on_flush_hook, &t);
	ck_assert_int_eq(loop_run_once(loop, 0), 0);
	ck_assert_msg(strcmp(t.log, "hrbFhbFhb") == 0, "a removed hook ran: '%s'", t.log);
	loop_free(loop);
}
END_TEST

static void on_waking_hook(struct loop *loop, void *arg)
{
	loop_wake(loop);
}

START_TEST(wake_makes_the_coming_wait_return_at_once)
{
	struct loop *loop = loop_new();
	uint64_t before;

	ck_assert_int_eq(loop_before_sleep(loop, on_waking_hook, NULL), 0);
	before = loop_now_ms(loop);
	/* Without the wake this would block for 2 s: there is no fd and no timer. */
	ck_assert_int_eq(loop_run_once(loop, 2000), 0);
	ck_assert_msg(loop_now_ms(loop) - before < 1000, "the wait blocked for %llu ms",
		      (unsigned long long)(loop_now_ms(loop) - before));
	loop_free(loop);
}
END_TEST

static void on_usr1(struct loop *loop, int signo, void *arg)
{
	ck_assert_int_eq(signo, SIGUSR1);
	trace_add(arg, "s");
}

START_TEST(signals_are_delivered_on_the_loop)
{
	struct loop *loop = loop_new();
	struct trace t = { 0 };

	ck_assert_int_eq(loop_signal(loop, SIGUSR1, on_usr1, &t), 0);
	ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
	run_until(loop, &t, 1, 10);
	ck_assert_msg(strcmp(t.log, "s") == 0, "expected one signal, got '%s'", t.log);
	ck_assert_int_eq(loop_signal(loop, 0, on_usr1, &t), -EINVAL);
	loop_free(loop);
}
END_TEST

START_TEST(many_timers_keep_heap_order)
{
	struct loop *loop = loop_new();
	struct trace t = { 0 };
	enum { N = 200 };
	struct loop_timer *timers[N];
	int order[N], nfired = 0;

	for (int i = 0; i < N; i++) {
		order[i] = (i * 37) % N;   /* a permutation */
		timers[i] = loop_timer_new(loop, on_named_timer, &t);
		ck_assert_ptr_nonnull(timers[i]);
		loop_timer_arm(timers[i], 1000 + (uint64_t)order[i]);
	}
	/* Pull them off by disarming in deadline order: the heap must stay valid. */
	for (int i = 0; i < N; i++) {
		int idx = -1;

		for (int j = 0; j < N; j++)
			if (order[j] == i)
				idx = j;
		ck_assert(loop_timer_armed(timers[idx]));
		loop_timer_disarm(timers[idx]);
		nfired++;
	}
	ck_assert_int_eq(nfired, N);
	for (int i = 0; i < N; i++)
		loop_timer_free(timers[i]);
	loop_free(loop);
}
END_TEST

static Suite *loop_suite(void)
{
	Suite *s = suite_create("loop");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, timers_fire_in_deadline_order);
	tcase_add_test(tc, rearming_replaces_deadline_and_disarm_cancels);
	tcase_add_test(tc, timer_may_free_itself_in_its_callback);
	tcase_add_test(tc, zero_delay_rearm_runs_once_per_iteration);
	tcase_add_test(tc, fd_events_reach_their_callback_until_unwatched);
	tcase_add_test(tc, before_sleep_hook_runs_every_iteration_and_stop_ends_run);
	tcase_add_test(tc, flush_hooks_run_after_every_other_hook);
	tcase_add_test(tc, wake_makes_the_coming_wait_return_at_once);
	tcase_add_test(tc, signals_are_delivered_on_the_loop);
	tcase_add_test(tc, many_timers_keep_heap_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(loop_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
