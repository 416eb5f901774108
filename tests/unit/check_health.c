/*
 * check_health.c - the judgement of `ctsyncd -s health` (src/control/health.c):
 * facts and thresholds in, the monitoring-plugin state and line out; the
 * client's reading of the line; the watch that dates failures.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "control/health.h"

static const struct health_limits LIMITS = {
	.peer_silent_warning = 10, .backlog_warning = 10, .backlog_critical = 60,
	.recent_errors = 300,
};

/* One UDP peer, up, heard 0.5 s ago; FTFW; nothing wrong. */
static struct health_facts healthy(void)
{
	struct health_facts f = {
		.ftfw = true, .uptime_ms = 600000, .peer_timeout_ms = 30000, .npeers = 1,
		.internal_complete = true, .external_complete = true,
		.overrun_age_ms = HEALTH_NEVER, .commit_failure_age_ms = HEALTH_NEVER,
		.write_failure_age_ms = HEALTH_NEVER,
	};

	snprintf(f.peers[0].addr, sizeof(f.peers[0].addr), "198.18.0.2");
	f.peers[0].state = HEALTH_PEER_UP;
	f.peers[0].heard = true;
	f.peers[0].silent_ms = 500;
	return f;
}

static char line[HEALTH_LINE_MAX];

static enum health_state judge(const struct health_facts *f)
{
	enum health_state s = health_judge(f, &LIMITS, line, sizeof(line));
	size_t len = strlen(line);

	ck_assert_msg(len > 0 && line[len - 1] == '\n' && !memchr(line, '\n', len - 1),
		      "not one line: \"%s\"", line);
	ck_assert_msg(health_parse_answer(line, len) == (int)s,
		      "the client reads %d from \"%s\", the judge said %d",
		      health_parse_answer(line, len), line, s);
	return s;
}

#define EXPECT_STATE(want, f, text) do { \
	enum health_state got_ = judge(f); \
	ck_assert_msg(got_ == (want), "state %s, expected %s: %s", health_state_name(got_), \
		      health_state_name(want), line); \
	ck_assert_msg(strstr(line, (text)) != NULL, "\"%s\" lacks \"%s\"", line, (text)); \
} while (0)

START_TEST(all_well_is_ok_with_a_summary_and_perfdata)
{
	struct health_facts f = healthy();

	EXPECT_STATE(HEALTH_OK, &f, "CTSYNCD OK - 1/1 peers up, resend backlog 0 s, caches complete | ");
	ck_assert_msg(strstr(line, "peers_up=1;;;0;1 ") != NULL, "%s", line);
	ck_assert_msg(strstr(line, "backlog=0s;10;60 ") != NULL, "%s", line);
}
END_TEST

START_TEST(peer_down_is_critical_and_named)
{
	struct health_facts f = healthy();

	f.peers[0].state = HEALTH_PEER_DOWN;
	f.peers[0].silent_ms = 31400;
	EXPECT_STATE(HEALTH_CRITICAL, &f,
		     "CTSYNCD CRITICAL - peer 198.18.0.2 down (silent for 31 s); 0/1 peers up");
}
END_TEST

START_TEST(peer_never_heard_is_a_warning_then_critical)
{
	struct health_facts f = healthy();

	f.peers[0].heard = false;
	f.peers[0].state = HEALTH_PEER_WAITING;
	f.uptime_ms = 4000;
	EXPECT_STATE(HEALTH_WARNING, &f, "peer 198.18.0.2 not heard yet (4 s since start)");
	f.peers[0].state = HEALTH_PEER_DOWN;
	f.uptime_ms = 45000;
	EXPECT_STATE(HEALTH_CRITICAL, &f, "peer 198.18.0.2 down (never heard, 45 s since start)");
}
END_TEST

START_TEST(silent_peer_warns_at_the_threshold_only)
{
	struct health_facts f = healthy();
	struct health_limits off = LIMITS;

	f.peers[0].silent_ms = 9999;
	EXPECT_STATE(HEALTH_OK, &f, "OK");
	f.peers[0].silent_ms = 10000;
	EXPECT_STATE(HEALTH_WARNING, &f, "CTSYNCD WARNING - peer 198.18.0.2 silent for 10 s; 1/1 peers up");
	off.peer_silent_warning = 0;
	ck_assert_int_eq(health_judge(&f, &off, line, sizeof(line)), HEALTH_OK);
}
END_TEST

START_TEST(backlog_warns_then_is_critical_in_ftfw_only)
{
	struct health_facts f = healthy();

	f.backlog_ms = 9999;
	EXPECT_STATE(HEALTH_OK, &f, "resend backlog 9 s");
	f.backlog_ms = 10000;
	EXPECT_STATE(HEALTH_WARNING, &f, "WARNING - resend backlog 10 s; ");
	f.backlog_ms = 60000;
	EXPECT_STATE(HEALTH_CRITICAL, &f, "CRITICAL - resend backlog 60 s; ");
	f.ftfw = false;
	EXPECT_STATE(HEALTH_OK, &f, "CTSYNCD OK - 1/1 peers up, caches complete");
}
END_TEST

START_TEST(incomplete_cache_is_critical)
{
	struct health_facts f = healthy();

	f.external_complete = false;
	f.external_refused = 20;
	EXPECT_STATE(HEALTH_CRITICAL, &f, "external cache incomplete (20 states refused since start)");
	ck_assert_msg(strstr(line, "caches incomplete") && strstr(line, "refused=20 "), "%s", line);
	f = healthy();
	f.internal_complete = false;
	EXPECT_STATE(HEALTH_CRITICAL, &f, "internal cache incomplete");
}
END_TEST

START_TEST(recent_failures_warn_within_the_window)
{
	struct health_facts f = healthy();

	f.overruns = 3;
	f.overrun_age_ms = 299999;
	EXPECT_STATE(HEALTH_WARNING, &f, "netlink event overrun 299 s ago");
	f.overrun_age_ms = 300000;
	EXPECT_STATE(HEALTH_OK, &f, "overruns=3 ");
	f = healthy();
	f.commit_failure_age_ms = 1000;
	EXPECT_STATE(HEALTH_WARNING, &f, "commit failures 1 s ago");
	f = healthy();
	f.hot_standby = true;
	f.write_failure_age_ms = 0;
	EXPECT_STATE(HEALTH_WARNING, &f, "hot-standby mirror errors 0 s ago");
	f.hot_standby = false;
	EXPECT_STATE(HEALTH_WARNING, &f, "kernel write failures 0 s ago");
}
END_TEST

/* The worst check wins; critical problems are listed before warnings. */
START_TEST(worst_wins_and_critical_comes_first)
{
	struct health_facts f = healthy();

	f.backlog_ms = 15000;
	f.external_complete = false;
	EXPECT_STATE(HEALTH_CRITICAL, &f,
		     "CRITICAL - external cache incomplete (0 states refused since start); "
		     "resend backlog 15 s; 1/1 peers up");
}
END_TEST

START_TEST(multicast_counts_peers_and_wants_one)
{
	struct health_facts f = healthy();

	f.multicast = true;
	f.npeers = 2;
	f.peers[1] = f.peers[0];
	snprintf(f.peers[1].addr, sizeof(f.peers[1].addr), "198.18.0.3");
	f.peers[1].state = HEALTH_PEER_DOWN;
	f.peers[1].silent_ms = 40000;
	EXPECT_STATE(HEALTH_CRITICAL, &f, "peer 198.18.0.3 down (silent for 40 s); 1/2 peers up");
	f.npeers = 0;
	f.uptime_ms = 5000;
	EXPECT_STATE(HEALTH_WARNING, &f, "no peer heard on the group yet");
	f.uptime_ms = 30000;
	EXPECT_STATE(HEALTH_CRITICAL, &f, "no peer heard on the group (30 s since start)");
}
END_TEST

START_TEST(line_is_cut_and_still_one_line)
{
	struct health_facts f = healthy();
	char small[64];

	f.external_complete = false;
	health_judge(&f, &LIMITS, small, sizeof(small));
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert_int_eq(small[sizeof(small) - 2], '\n');
	/* Sixteen peers down, each named: the line is cut at HEALTH_LINE_MAX, not overrun. */
	f = healthy();
	f.multicast = true;
	f.npeers = HEALTH_PEERS_MAX;
	for (unsigned i = 0; i < HEALTH_PEERS_MAX; i++) {
		f.peers[i] = f.peers[0];
		snprintf(f.peers[i].addr, sizeof(f.peers[i].addr), "2001:db8:ffff:ffff:ffff:ffff:ffff:%x", i);
		f.peers[i].state = HEALTH_PEER_DOWN;
	}
	ck_assert_int_eq(judge(&f), HEALTH_CRITICAL);
}
END_TEST

START_TEST(client_reads_only_a_health_line)
{
	static const char *const bad[] = {
		"", "\n", "CTSYNCD OK\n", "CTSYNCD FINE - x\n", "ctsyncd OK - x\n", "CTSYNCD OK - x",
		"CTSYNCD OK - x\nmore\n", "CTSYNCD OK - \tx\n", "stats: 1\n",
	};

	ck_assert_int_eq(health_parse_answer("CTSYNCD OK - x\n", 15), HEALTH_OK);
	ck_assert_int_eq(health_parse_answer("CTSYNCD WARNING - x\n", 20), HEALTH_WARNING);
	ck_assert_int_eq(health_parse_answer("CTSYNCD CRITICAL - x\n", 21), HEALTH_CRITICAL);
	ck_assert_int_eq(health_parse_answer("CTSYNCD UNKNOWN - x\n", 20), HEALTH_UNKNOWN);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(health_parse_answer(bad[i], strlen(bad[i])) == -1, "accepted \"%s\"", bad[i]);
}
END_TEST

START_TEST(watch_dates_the_latest_increase)
{
	struct health_watch w = { 0 };

	health_watch_sample(&w, 0, 1000);
	ck_assert_uint_eq(health_watch_age(&w, 5000), HEALTH_NEVER);
	health_watch_sample(&w, 0, 2000);
	ck_assert_uint_eq(health_watch_age(&w, 5000), HEALTH_NEVER);
	health_watch_sample(&w, 2, 3000);
	ck_assert_uint_eq(health_watch_age(&w, 5000), 2000);
	health_watch_sample(&w, 2, 4000);
	ck_assert_uint_eq(health_watch_age(&w, 9000), 6000);
	health_watch_sample(&w, 3, 8000);
	ck_assert_uint_eq(health_watch_age(&w, 9000), 1000);
	/* Failures before the first sample count as seen then. */
	w = (struct health_watch){ 0 };
	health_watch_sample(&w, 4, 100);
	ck_assert_uint_eq(health_watch_age(&w, 100), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("health");
	TCase *tc = tcase_create("judge");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, all_well_is_ok_with_a_summary_and_perfdata);
	tcase_add_test(tc, peer_down_is_critical_and_named);
	tcase_add_test(tc, peer_never_heard_is_a_warning_then_critical);
	tcase_add_test(tc, silent_peer_warns_at_the_threshold_only);
	tcase_add_test(tc, backlog_warns_then_is_critical_in_ftfw_only);
	tcase_add_test(tc, incomplete_cache_is_critical);
	tcase_add_test(tc, recent_failures_warn_within_the_window);
	tcase_add_test(tc, worst_wins_and_critical_comes_first);
	tcase_add_test(tc, multicast_counts_peers_and_wants_one);
	tcase_add_test(tc, line_is_cut_and_still_one_line);
	tcase_add_test(tc, client_reads_only_a_health_line);
	tcase_add_test(tc, watch_dates_the_latest_increase);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
