/*
 * check_compat_report.c - the text of `-s` in conntrackd 1.4.7's layout.
 *
 * tests/unit/stats-1.4.7/ holds what Debian's conntrackd 1.4.7 printed for
 * each word in network namespaces (FTFW over UDP, TCP and multicast,
 * NOTRACK, Stats mode, DisableExternalCache, DisableInternalCache, a
 * HashLimit of 3, two links with one down, a resend queue under loss).
 * Each test gives the renderer the counters those outputs show and expects
 * the very same bytes.  Since most of those counters are 0 or 1, one more
 * test gives every field its own number and checks where each one lands.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/compat_report.h"

static const char *srcdir(void)
{
	const char *s = getenv("top_srcdir");

	return s && *s ? s : ".";
}

/* The fixture's bytes (NUL-terminated; the caller frees them). */
static char *fixture(const char *name)
{
	char path[512];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/unit/stats-1.4.7/%s", srcdir(), name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The rendered text equals the fixture byte for byte; frees the text. */
static void expect_fixture(struct compat_text *t, const char *name)
{
	char *want = fixture(name);

	ck_assert(!t->failed);
	ck_assert_msg(t->p != NULL && strcmp(t->p, want) == 0,
		      "%s:\n--- expected (1.4.7)\n%s--- got\n%s", name, want, t->p ? t->p : "(nothing)");
	free(want);
	compat_text_free(t);
}

static struct compat_link link_of(enum config_link_kind kind, const char *ifname, uint64_t bs,
				  uint64_t br, uint64_t ps, uint64_t pr, uint64_t es, uint64_t er)
{
	struct compat_link l = {
		.kind = kind, .status = "RUNNING", .active = true,
		.bytes_sent = bs, .bytes_recv = br, .packets_sent = ps, .packets_recv = pr,
		.errors_sent = es, .errors_recv = er,
	};

	snprintf(l.ifname, sizeof(l.ifname), "%s", ifname);
	return l;
}

static struct compat_sync one_link(struct compat_link l)
{
	struct compat_sync s = { .ftfw = true, .nlinks = 1, .active = 0 };

	s.links[0] = l;
	return s;
}

/* The caches of the FTFW captures: one state made and one made and deleted on A, one from B. */
static struct compat_caches ftfw_caches(void)
{
	return (struct compat_caches){
		.internal = { .objects = 1, .active = 1, .created = 2, .deleted = 1 },
		.has_external = true,
		.external = { .objects = 1, .active = 1, .created = 1 },
	};
}

/* ---- -s --------------------------------------------------------------------- */

START_TEST(summary_ftfw_udp)
{
	struct compat_text t = { 0 };
	struct compat_caches c = ftfw_caches();
	struct compat_sync s = one_link(link_of(CONFIG_LINK_UDP, "syncA", 292, 140, 7, 5, 0, 0));

	compat_summary(&t, &c, &s);
	expect_fixture(&t, "ftfw-udp.s");
}
END_TEST

START_TEST(summary_tcp_names_both_connections)
{
	struct compat_text t = { 0 };
	struct compat_caches c = ftfw_caches();
	struct compat_sync s = one_link(link_of(CONFIG_LINK_TCP, "syncA", 292, 116, 7, 5, 1, 0));

	s.links[0].tcp_server_connected = s.links[0].tcp_client_connected = true;
	compat_summary(&t, &c, &s);
	expect_fixture(&t, "ftfw-tcp.s");
}
END_TEST

START_TEST(summary_multicast)
{
	struct compat_text t = { 0 };
	struct compat_caches c = { .has_external = true };
	struct compat_sync s = one_link(link_of(CONFIG_LINK_MCAST, "syncA", 24, 32, 2, 2, 0, 0));

	compat_summary(&t, &c, &s);
	expect_fixture(&t, "ftfw-mcast.s");
}
END_TEST

START_TEST(summary_stats_mode)
{
	struct compat_text t = { 0 };
	struct compat_caches c = {
		.stats_mode = true,
		.internal = { .objects = 1, .active = 1, .created = 2, .deleted = 1 },
	};

	compat_summary(&t, &c, NULL);
	expect_fixture(&t, "stats.s");
}
END_TEST

START_TEST(summary_hashlimit_failures)
{
	struct compat_text t = { 0 };
	struct compat_caches c = {
		.internal = { .objects = 3, .active = 2, .created = 3, .create_failed = 2, .no_space = 2,
			      .updated = 1, .deleted = 1 },
		.has_external = true,
	};
	struct compat_sync s = one_link(link_of(CONFIG_LINK_UDP, "syncA", 444, 0, 8, 0, 0, 0));

	compat_summary(&t, &c, &s);
	expect_fixture(&t, "limit.s");
}
END_TEST

START_TEST(summary_external_inject)
{
	struct compat_text t = { 0 };
	struct compat_caches c = {
		.has_external = true, .inject_external = true, .inject = { .created = 1 },
		/* what an external cache would say is not shown */
		.external = { .active = 99 },
	};
	struct compat_sync s = one_link(link_of(CONFIG_LINK_UDP, "syncA", 56, 140, 4, 5, 0, 0));

	compat_summary(&t, &c, &s);
	expect_fixture(&t, "noext.s");
}
END_TEST

START_TEST(summary_internal_bypass)
{
	struct compat_text t = { 0 };
	struct compat_caches c = {
		.bypass_internal = true, .bypass = { .created = 1 },
		.internal = { .active = 99 },
		.has_external = true,
	};
	struct compat_sync s = one_link(link_of(CONFIG_LINK_UDP, "syncA", 108, 32, 4, 4, 0, 0));

	compat_summary(&t, &c, &s);
	expect_fixture(&t, "noint.s");
}
END_TEST

/* ---- -s cache --------------------------------------------------------------- */

START_TEST(cache_hashlimit_failures)
{
	struct compat_text t = { 0 };
	struct compat_caches c = {
		.internal = { .objects = 3, .active = 2, .created = 3, .create_failed = 2, .no_space = 2,
			      .updated = 1, .deleted = 1 },
		.has_external = true,
	};

	compat_cache(&t, &c);
	expect_fixture(&t, "limit.cache");
}
END_TEST

START_TEST(cache_stats_mode)
{
	struct compat_text t = { 0 };
	struct compat_caches c = {
		.stats_mode = true,
		.internal = { .objects = 1, .active = 1, .created = 2, .deleted = 1 },
	};

	compat_cache(&t, &c);
	expect_fixture(&t, "stats.cache");
}
END_TEST

START_TEST(cache_external_inject)
{
	struct compat_text t = { 0 };
	struct compat_caches c = { .has_external = true, .inject_external = true, .inject = { .created = 1 } };

	compat_cache(&t, &c);
	expect_fixture(&t, "noext.cache");
}
END_TEST

START_TEST(cache_internal_bypass)
{
	struct compat_text t = { 0 };
	struct compat_caches c = { .bypass_internal = true, .bypass = { .created = 1 }, .has_external = true };

	compat_cache(&t, &c);
	expect_fixture(&t, "noint.cache");
}
END_TEST

/* ---- -s network, -s link ---------------------------------------------------- */

START_TEST(network_ftfw_udp)
{
	struct compat_text t = { 0 };
	struct compat_sync s = one_link(link_of(CONFIG_LINK_UDP, "syncA", 292, 140, 7, 5, 0, 0));

	compat_network(&t, &s);
	expect_fixture(&t, "ftfw-udp.network");
}
END_TEST

START_TEST(links_two_one_down)
{
	struct compat_text t = { 0 };
	struct compat_sync s = { .nlinks = 2, .active = 1 };

	s.links[0] = link_of(CONFIG_LINK_UDP, "syncA", 16, 0, 2, 0, 0, 0);
	s.links[0].status = "NO-CARRIER";
	s.links[0].active = false;
	s.links[1] = link_of(CONFIG_LINK_UDP, "syncA2", 24, 0, 3, 0, 0, 0);
	s.links[1].status = "NO-CARRIER";
	compat_links(&t, &s);
	expect_fixture(&t, "twolinks-down.link");
}
END_TEST

START_TEST(links_tcp_and_multicast)
{
	struct compat_text t = { 0 };
	struct compat_sync s = one_link(link_of(CONFIG_LINK_TCP, "syncA", 292, 116, 7, 5, 1, 0));

	compat_links(&t, &s);
	expect_fixture(&t, "ftfw-tcp.link");
	s = one_link(link_of(CONFIG_LINK_MCAST, "syncA", 232, 216, 7, 4, 0, 0));
	compat_links(&t, &s);
	expect_fixture(&t, "ftfw-mcast.link");
}
END_TEST

/* ---- -s queue, -s rsqueue --------------------------------------------------- */

START_TEST(queue_ftfw_has_the_resend_queue)
{
	struct compat_text t = { 0 };
	struct compat_sync s = {
		.ftfw = true, .queue_nodes = 1,
		.txq_max = 2147483647, .errq_max = 128,
		.rsq_len = 1, .rsq_max = 131072,
	};

	compat_queue(&t, &s);
	expect_fixture(&t, "ftfw-udp.queue");
	s.ftfw = false;
	s.queue_nodes = 0;
	compat_queue(&t, &s);
	expect_fixture(&t, "notrack-udp.queue");
}
END_TEST

START_TEST(rsqueue_control_and_objects)
{
	struct compat_text t = { 0 };
	struct compat_rsq_entry ctl = { .seq = 1795657441, .control = true, .flags = 8 };
	const uint32_t seqs[] = { 1795657874, 1795657875, 1795657877 };

	compat_rsqueue_head(&t, 1);
	compat_rsqueue_entry(&t, &ctl);
	expect_fixture(&t, "ftfw-udp.rsqueue");
	compat_rsqueue_head(&t, 3);
	for (unsigned i = 0; i < 3; i++) {
		struct compat_rsq_entry e = { .seq = seqs[i] };

		compat_rsqueue_entry(&t, &e);
	}
	expect_fixture(&t, "rsq.rsqueue");
}
END_TEST

/* ---- -s runtime ------------------------------------------------------------- */

START_TEST(runtime_ftfw_udp)
{
	struct compat_text t = { 0 };
	struct compat_runtime r = { .uptime_seconds = 59, .events_received = 3,
				    .netlink_buffer_bytes = 2097152 };

	compat_runtime(&t, &r);
	expect_fixture(&t, "ftfw-udp.runtime");
}
END_TEST

/* Each line of `uptimes` (1.4.7 under a fast clock, from 1 h to 1 day 10 h) read back and rendered. */
START_TEST(runtime_uptime_in_days_hours_minutes)
{
	char *all = fixture("uptimes"), *save = NULL, *line;
	unsigned n = 0;

	for (line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct compat_text t = { 0 };
		struct compat_runtime r = { 0 };
		const char *p = line + strlen("daemon uptime:");
		unsigned v, secs = 0;
		char unit[8];
		int used;

		ck_assert(strncmp(line, "daemon uptime:", strlen("daemon uptime:")) == 0);
		/* "<n> day(s)", "<n> h", "<n> min" */
		while (sscanf(p, " %u %7s%n", &v, unit, &used) == 2) {
			secs += v * (unit[0] == 'd' ? 86400u : unit[0] == 'h' ? 3600u : 60u);
			p += used;
		}
		r.uptime_seconds = secs + 30;
		compat_runtime(&t, &r);
		ck_assert(!t.failed);
		ck_assert_msg(strncmp(t.p, line, strlen(line)) == 0 && t.p[strlen(line)] == '\n',
			      "expected '%s', got '%.40s'", line, t.p);
		compat_text_free(&t);
		n++;
	}
	ck_assert_uint_ge(n, 20);
	free(all);
	/* and what the captures could not reach in one run: several days, minutes alone */
	{
		struct compat_text t = { 0 };
		struct compat_runtime r = { .uptime_seconds = 6 * 86400 + 9 * 3600 + 13 * 60 };

		compat_runtime(&t, &r);
		ck_assert_str_eq(strtok(t.p, "\n"), "daemon uptime: 6 days 9 h 13 min");
		compat_text_free(&t);
		r.uptime_seconds = 86400 + 59;
		compat_runtime(&t, &r);
		ck_assert_str_eq(strtok(t.p, "\n"), "daemon uptime: 1 day 0 h 0 min");
		compat_text_free(&t);
	}
}
END_TEST

/* ---- every field in its place ------------------------------------------------ */

START_TEST(each_counter_lands_on_its_line)
{
	struct compat_text t = { 0 };
	struct compat_caches c = {
		.internal = { .objects = 11, .active = 12, .created = 13, .create_failed = 14,
			      .no_memory = 15, .no_space = 16, .updated = 17, .update_failed = 18,
			      .update_not_found = 19, .deleted = 20, .delete_failed = 21,
			      .delete_not_found = 22 },
		.has_external = true,
		.external = { .active = 31, .created = 32, .create_failed = 33, .updated = 34,
			      .update_failed = 35, .deleted = 36, .delete_failed = 37 },
		.traffic_bytes = 41, .traffic_packets = 42,
	};
	struct compat_sync s = one_link(link_of(CONFIG_LINK_UDP, "eth9", 51, 52, 53, 54, 55, 56));
	struct compat_runtime r = {
		.uptime_seconds = 3600 * 25 + 60 * 7, .events_received = 61, .events_filtered = 62,
		.events_unknown = 63, .catch_failed = 64, .dump_unknown = 65, .overruns = 66,
		.kernel_flushes = 67, .kernel_resyncs = 68, .netlink_buffer_bytes = 69,
		.child_failed = 70, .child_segfault = 71, .child_termsig = 72, .select_failed = 73,
		.wait_failed = 74, .local_read_failed = 75, .local_unknown = 76,
	};

	s.malformed = 81;
	s.wrong_version = 82;
	s.bad_header = 83;
	s.bad_payload = 84;
	s.bad_type = 85;
	s.truncated = 86;
	s.bad_size = 87;
	s.send_malformed = 88;
	s.seq_lost = 89;
	s.seq_before = 90;
	s.queue_nodes = 91;
	s.txq_len = 92, s.txq_max = 93, s.txq_full = 94;
	s.errq_len = 95, s.errq_max = 96, s.errq_full = 97;
	s.rsq_len = 98, s.rsq_max = 99, s.rsq_full = 100;

	compat_summary(&t, &c, &s);
	ck_assert_str_eq(t.p,
		"cache internal:\n"
		"current active connections:\t          12\n"
		"connections created:\t\t          13\tfailed:\t          14\n"
		"connections updated:\t\t          17\tfailed:\t          18\n"
		"connections destroyed:\t\t          20\tfailed:\t          21\n"
		"\n"
		"cache external:\n"
		"current active connections:\t          31\n"
		"connections created:\t\t          32\tfailed:\t          33\n"
		"connections updated:\t\t          34\tfailed:\t          35\n"
		"connections destroyed:\t\t          36\tfailed:\t          37\n"
		"\n"
		"traffic processed:\n"
		"                  41 Bytes                        42 Pckts\n"
		"\n"
		"UDP traffic (active device=eth9):\n"
		"                  51 Bytes sent                   52 Bytes recv\n"
		"                  53 Pckts sent                   54 Pckts recv\n"
		"                  55 Error send                   56 Error recv\n"
		"\n"
		"message tracking:\n"
		"                  81 Malformed msgs                   89 Lost msgs\n"
		"\n");
	compat_text_free(&t);

	compat_cache(&t, &c);
	ck_assert_ptr_nonnull(strstr(t.p,
		"cache:internal\tactive objects:\t\t          11\n"
		"\tactive/total entries:\t\t          12/          11\n"
		"\tcreation OK/failed:\t\t          13/          14\n"
		"\t\tno memory available:\t          15\n"
		"\t\tno space left in cache:\t          16\n"
		"\tupdate OK/failed:\t\t          17/          18\n"
		"\t\tentry not found:\t          19\n"
		"\tdeletion created/failed:\t          20/          21\n"
		"\t\tentry not found:\t          22\n\n"));
	compat_text_free(&t);

	compat_network(&t, &s);
	ck_assert_ptr_nonnull(strstr(t.p,
		"\t\tMalformed messages:\t                  81\n"
		"\t\tWrong protocol version:\t                  82\n"
		"\t\tMalformed header:\t                  83\n"
		"\t\tMalformed payload:\t                  84\n"
		"\t\tBad message type:\t                  85\n"
		"\t\tTruncated message:\t                  86\n"
		"\t\tBad message size:\t                  87\n"
		"\tsend:\n"
		"\t\tMalformed messages:\t                  88\n\n"));
	ck_assert_ptr_nonnull(strstr(t.p,
		"\t\tPackets lost:\t\t                  89\n"
		"\t\tPackets before:\t\t                  90\n\n"));
	compat_text_free(&t);

	compat_queue(&t, &s);
	ck_assert_str_eq(t.p,
		"allocated queue nodes:\t\t          91\n\n"
		"queue txqueue:\ncurrent elements:\t\t          92\nmaximum elements:\t\t          93\n"
		"not enough space errors:\t          94\n\n"
		"queue errorq:\ncurrent elements:\t\t          95\nmaximum elements:\t\t          96\n"
		"not enough space errors:\t          97\n\n"
		"queue rsqueue:\ncurrent elements:\t\t          98\nmaximum elements:\t\t          99\n"
		"not enough space errors:\t         100\n\n");
	compat_text_free(&t);

	compat_runtime(&t, &r);
	ck_assert_str_eq(t.p,
		"daemon uptime: 1 day 1 h 7 min\n\n"
		"netlink stats:\n"
		"\tevents received:\t                  61\n"
		"\tevents filtered:\t                  62\n"
		"\tevents unknown type:\t\t          63\n"
		"\tcatch event failed:\t\t          64\n"
		"\tdump unknown type:\t\t          65\n"
		"\tnetlink overrun:\t\t          66\n"
		"\tflush kernel table:\t\t          67\n"
		"\tresync with kernel table:\t          68\n"
		"\tcurrent buffer size (in bytes):\t          69\n\n"
		"runtime stats:\n"
		"\tchild process failed:\t\t          70\n"
		"\t\tchild process segfault:\t          71\n"
		"\t\tchild process termsig:\t          72\n"
		"\tselect failed:\t\t\t          73\n"
		"\twait failed:\t\t\t          74\n"
		"\tlocal read failed:\t\t          75\n"
		"\tlocal unknown request:\t\t          76\n\n");
	compat_text_free(&t);
}
END_TEST

/* A number wider than its column pushes the line right instead of being cut. */
START_TEST(wide_numbers_are_never_cut)
{
	struct compat_text t = { 0 };
	struct compat_caches c = { .internal = { .active = 18446744073709551615ull } };

	compat_summary(&t, &c, NULL);
	ck_assert_ptr_nonnull(strstr(t.p, "current active connections:\t18446744073709551615\n"));
	compat_text_free(&t);
}
END_TEST

static Suite *compat_report_suite(void)
{
	Suite *s = suite_create("compat_report");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, summary_ftfw_udp);
	tcase_add_test(tc, summary_tcp_names_both_connections);
	tcase_add_test(tc, summary_multicast);
	tcase_add_test(tc, summary_stats_mode);
	tcase_add_test(tc, summary_hashlimit_failures);
	tcase_add_test(tc, summary_external_inject);
	tcase_add_test(tc, summary_internal_bypass);
	tcase_add_test(tc, cache_hashlimit_failures);
	tcase_add_test(tc, cache_stats_mode);
	tcase_add_test(tc, cache_external_inject);
	tcase_add_test(tc, cache_internal_bypass);
	tcase_add_test(tc, network_ftfw_udp);
	tcase_add_test(tc, links_two_one_down);
	tcase_add_test(tc, links_tcp_and_multicast);
	tcase_add_test(tc, queue_ftfw_has_the_resend_queue);
	tcase_add_test(tc, rsqueue_control_and_objects);
	tcase_add_test(tc, runtime_ftfw_udp);
	tcase_add_test(tc, runtime_uptime_in_days_hours_minutes);
	tcase_add_test(tc, each_counter_lands_on_its_line);
	tcase_add_test(tc, wide_numbers_are_never_cut);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(compat_report_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
