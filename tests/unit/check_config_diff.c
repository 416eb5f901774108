/*
 * check_config_diff.c - every option classified for a reload: a change of
 * each option is reported by its row alone, with its class; live values
 * move into a running configuration and restart-only ones stay; the
 * printed effective configuration (what --check asks a daemon for) reads
 * back to the same configuration.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/diff.h"

#define MAX_CHANGES 80

static const char BASE_SYNC[] =
	"General {\n"
	" HashSize 8192\n HashLimit 10000\n LogFile /var/log/a.log\n Syslog off\n"
	" LockFile /run/x.lock\n"
	" UNIX { Path /run/x.sock Backlog 20 Group 0 }\n"
	" NetlinkBufferSize 2097152\n NetlinkBufferSizeMaxGrowth 8388608\n"
	" NetlinkOverrunResync on\n NetlinkEventsReliable off\n EventIterationLimit 100\n"
	" Scheduler { Type RR Priority 10 }\n Systemd on\n"
	" Filter From Userspace {\n"
	"  Protocol Accept { TCP UDP }\n"
	"  Address Ignore { IPv4_address 127.0.0.1 IPv4_address 10.9.0.0/16 }\n"
	"  State Accept { ESTABLISHED CLOSED for TCP }\n"
	" }\n"
	"}\n"
	"Sync {\n"
	" Mode FTFW { ResendQueueSize 131072 ACKWindowSize 300 CommitTimeout 0 PurgeTimeout 60"
	" DisableExternalCache off StartupResync off HotStandby off }\n"
	" RefreshTime 15\n CacheTimeout 40\n"
	" PeerTimeout 30\n AliveInterval 1000\n"
	" Health { PeerSilentWarning 10 ResendBacklogWarning 10 ResendBacklogCritical 60 RecentErrors 300 }\n"
	" Key /etc/k1\n"
	" UDP { IPv4_address 10.0.0.1 IPv4_Destination_Address 10.0.0.2 Port 3780 Interface eth1"
	" SndSocketBuffer 0 RcvSocketBuffer 0 Checksum on }\n"
	" Options { TCPWindowTracking off ExpectationSync off }\n"
	"}\n";

static const char BASE_NOTRACK[] =
	"Sync { Mode NOTRACK { DisableInternalCache off } "
	"UDP { IPv4_Destination_Address 10.0.0.2 Port 3780 Interface eth1 } }\n";

static const char BASE_TCP[] =
	"Sync { Mode FTFW { } TCP { IPv4_address 10.0.0.1 IPv4_Destination_Address 10.0.0.2 "
	"Port 3780 Interface eth1 ErrorQueueLength 128 } }\n";

static const char BASE_MCAST[] =
	"Sync { Mode FTFW { } Multicast { IPv4_address 225.0.0.50 IPv4_interface 10.0.0.1 "
	"Group 3780 Interface eth1 } }\n";

static const char BASE_STATS[] = "Stats { LogFile off Syslog off }\n";

struct change_case {
	const char *row;                /* the table's row that must report it */
	const char *base;               /* NULL: BASE_SYNC */
	const char *from, *to;          /* the first `from` of the base becomes `to` */
	enum config_when when;
	const char *old_value, *new_value;  /* NULL: not checked */
};

static const struct change_case cases[] = {
	{ "role (Sync or Stats block)", BASE_STATS, "Stats { LogFile off Syslog off }", "",
	  CONFIG_RESTART, "Stats", "none" },
	{ "HashSize", NULL, "HashSize 8192", "HashSize 4096", CONFIG_RESTART, "8192", "4096" },
	{ "HashLimit", NULL, "HashLimit 10000", "HashLimit 50", CONFIG_LIVE, "10000", "50" },
	{ "LogFile", NULL, "LogFile /var/log/a.log", "LogFile off", CONFIG_LIVE, "/var/log/a.log", "off" },
	{ "Syslog", NULL, "Syslog off", "Syslog local3", CONFIG_LIVE, "off", "local3" },
	{ "LockFile", NULL, "LockFile /run/x.lock", "LockFile /run/y.lock", CONFIG_RESTART,
	  "/run/x.lock", "/run/y.lock" },
	{ "UNIX Path", NULL, "Path /run/x.sock", "Path /run/y.sock", CONFIG_RESTART, NULL, NULL },
	{ "UNIX Backlog", NULL, "Backlog 20", "Backlog 30", CONFIG_RESTART, "20", "30" },
	{ "UNIX Group", NULL, "Group 0", "Group 4", CONFIG_LIVE, "0", "4" },
	{ "NetlinkBufferSize", NULL, "NetlinkBufferSize 2097152", "NetlinkBufferSize 4194304",
	  CONFIG_LIVE, NULL, NULL },
	{ "NetlinkBufferSizeMaxGrowth", NULL, "NetlinkBufferSizeMaxGrowth 8388608",
	  "NetlinkBufferSizeMaxGrowth 16777216", CONFIG_LIVE, NULL, NULL },
	{ "NetlinkOverrunResync", NULL, "NetlinkOverrunResync on", "NetlinkOverrunResync off",
	  CONFIG_LIVE, "30", "off" },
	{ "NetlinkEventsReliable", NULL, "NetlinkEventsReliable off", "NetlinkEventsReliable on",
	  CONFIG_LIVE, "off", "on" },
	{ "PollSecs", NULL, "EventIterationLimit 100", "EventIterationLimit 100 PollSecs 5",
	  CONFIG_RESTART, "0", "5" },
	{ "EventIterationLimit", NULL, "EventIterationLimit 100", "EventIterationLimit 7",
	  CONFIG_LIVE, "100", "7" },
	{ "Nice", NULL, "Systemd on", "Systemd on Nice -5", CONFIG_LIVE, "0", "-5" },
	{ "Scheduler Type", NULL, "Type RR", "Type FIFO", CONFIG_LIVE, "RR", "FIFO" },
	{ "Scheduler Priority", NULL, "Priority 10", "Priority 20", CONFIG_LIVE, "10", "20" },
	{ "Systemd", NULL, "Systemd on", "Systemd off", CONFIG_RESTART, "on", "off" },
	{ "EventSource", NULL, "Systemd on", "Systemd on EventSource bpf", CONFIG_RESTART, "ctnetlink", "bpf" },
	{ "Filter", NULL, "Filter From Userspace", "Filter From Kernelspace", CONFIG_LIVE,
	  "From Userspace", "From Kernelspace" },
	{ "Filter Protocol", NULL, "Accept { TCP UDP }", "Accept { TCP }", CONFIG_LIVE,
	  "Accept { TCP UDP }", "Accept { TCP }" },
	{ "Filter Address", NULL, "IPv4_address 127.0.0.1 ", "IPv4_address 127.0.0.1 "
	  "IPv4_address 198.18.5.5 ", CONFIG_LIVE, "Ignore { 127.0.0.1 10.9.0.0/16 }",
	  "Ignore { 127.0.0.1 198.18.5.5 10.9.0.0/16 }" },
	{ "Filter State", NULL, "ESTABLISHED CLOSED", "ESTABLISHED", CONFIG_LIVE,
	  "Accept { ESTABLISHED CLOSE }", "Accept { ESTABLISHED }" },
	{ "Mode", NULL, "Mode FTFW { ResendQueueSize 131072 ACKWindowSize 300", "Mode NOTRACK {",
	  CONFIG_RESTART, "FTFW", "NOTRACK" },
	{ "ResendQueueSize", NULL, "ResendQueueSize 131072", "ResendQueueSize 1000", CONFIG_LIVE,
	  "131072", "1000" },
	{ "ACKWindowSize", NULL, "ACKWindowSize 300", "ACKWindowSize 20", CONFIG_LIVE, "300", "20" },
	{ "ConfirmQueue", NULL, "ACKWindowSize 300", "ACKWindowSize 300 ConfirmQueue 3",
	  CONFIG_RESTART, "-1", "3" },
	{ "ConfirmTimeout", NULL, "ACKWindowSize 300", "ACKWindowSize 300 ConfirmTimeout 20",
	  CONFIG_LIVE, "100", "20" },
	{ "ConfirmHeldMax", NULL, "ACKWindowSize 300", "ACKWindowSize 300 ConfirmHeldMax 8",
	  CONFIG_LIVE, "4096", "8" },
	{ "CommitTimeout", NULL, "CommitTimeout 0", "CommitTimeout 180", CONFIG_LIVE, "0", "180" },
	{ "PurgeTimeout", NULL, "PurgeTimeout 60", "PurgeTimeout 5", CONFIG_LIVE, "60", "5" },
	{ "RefreshTime", NULL, "RefreshTime 15", "RefreshTime 5", CONFIG_LIVE, "15", "5" },
	{ "CacheTimeout", NULL, "CacheTimeout 40", "CacheTimeout 20", CONFIG_LIVE, "40", "20" },
	{ "PeerTimeout", NULL, "PeerTimeout 30", "PeerTimeout 2500ms", CONFIG_LIVE, "30", "2500ms" },
	{ "AliveInterval", NULL, "AliveInterval 1000", "AliveInterval 200", CONFIG_LIVE, "1000", "200" },
	{ "Health PeerSilentWarning", NULL, "PeerSilentWarning 10", "PeerSilentWarning 4", CONFIG_LIVE,
	  "10", "4" },
	{ "Health ResendBacklogWarning", NULL, "ResendBacklogWarning 10", "ResendBacklogWarning 20",
	  CONFIG_LIVE, "10", "20" },
	{ "Health ResendBacklogCritical", NULL, "ResendBacklogCritical 60", "ResendBacklogCritical 90",
	  CONFIG_LIVE, "60", "90" },
	{ "Health RecentErrors", NULL, "RecentErrors 300", "RecentErrors 30", CONFIG_LIVE, "300", "30" },
	{ "DisableExternalCache", NULL, "DisableExternalCache off", "DisableExternalCache on",
	  CONFIG_RESTART, "off", "on" },
	{ "DisableInternalCache", BASE_NOTRACK, "DisableInternalCache off", "DisableInternalCache on",
	  CONFIG_RESTART, "off", "on" },
	{ "StartupResync", NULL, "StartupResync off", "StartupResync on", CONFIG_LIVE, "off", "on" },
	{ "HotStandby", NULL, "HotStandby off", "HotStandby on", CONFIG_RESTART, "off", "on" },
	{ "Key", NULL, "Key /etc/k1", "Key /etc/k2 Key /etc/k1", CONFIG_LIVE,
	  "/etc/k1", "/etc/k2, /etc/k1" },
	{ "link blocks", NULL, " Options {", " UDP { IPv4_Destination_Address 10.1.0.2 Port 3781 "
	  "Interface eth2 } Options {", CONFIG_RESTART, "1 UDP", "2 UDP" },
	{ "Default", NULL, "UDP {", "UDP Default {", CONFIG_RESTART, "off", "on" },
	{ "IPv4_address", NULL, "IPv4_address 10.0.0.1", "IPv4_address 10.0.0.3", CONFIG_RESTART,
	  "10.0.0.1", "10.0.0.3" },
	{ "IPv4_Destination_Address", NULL, "Destination_Address 10.0.0.2",
	  "Destination_Address 10.0.0.4", CONFIG_RESTART, "10.0.0.2", "10.0.0.4" },
	{ "IPv4_interface", BASE_MCAST, "IPv4_interface 10.0.0.1", "IPv4_interface 10.0.0.7",
	  CONFIG_RESTART, "10.0.0.1", "10.0.0.7" },
	{ "Interface", NULL, "Interface eth1", "Interface eth3", CONFIG_RESTART, "eth1", "eth3" },
	{ "Port", NULL, "Port 3780", "Port 3781", CONFIG_RESTART, "3780", "3781" },
	{ "SndSocketBuffer", NULL, "SndSocketBuffer 0", "SndSocketBuffer 65536", CONFIG_RESTART,
	  "0", "65536" },
	{ "RcvSocketBuffer", NULL, "RcvSocketBuffer 0", "RcvSocketBuffer 65536", CONFIG_RESTART,
	  "0", "65536" },
	{ "Checksum", NULL, "Checksum on", "Checksum off", CONFIG_RESTART, "on", "off" },
	{ "ErrorQueueLength", BASE_TCP, "ErrorQueueLength 128", "ErrorQueueLength 64",
	  CONFIG_RESTART, "128", "64" },
	{ "TCPWindowTracking", NULL, "TCPWindowTracking off", "TCPWindowTracking on", CONFIG_LIVE,
	  "off", "on" },
	{ "ExpectationSync", NULL, "ExpectationSync off", "ExpectationSync { ftp sip }",
	  CONFIG_RESTART, "off", "{ ftp sip }" },
	{ "Stats LogFile", BASE_STATS, "LogFile off", "LogFile /var/log/s.log", CONFIG_LIVE,
	  "off", "/var/log/s.log" },
	{ "Stats Syslog", BASE_STATS, "Syslog off", "Syslog on", CONFIG_LIVE, "off", "daemon" },
};

static void parse(struct config *cfg, const char *text)
{
	struct config_error err;

	ck_assert_msg(config_parse_buffer(cfg, "t.conf", text, strlen(text), &err, NULL, NULL) == 0,
		      "parse failed: %u:%u: %s\n%s", err.line, err.column, err.message, text);
}

/* `base` with its first `from` replaced by `to`. */
static char *replaced(const char *base, const char *from, const char *to)
{
	const char *p = strstr(base, from);
	size_t n;
	char *s;

	ck_assert_msg(p != NULL, "'%s' is not in the base text", from);
	n = strlen(base) - strlen(from) + strlen(to) + 1;
	s = malloc(n);
	ck_assert_ptr_nonnull(s);
	snprintf(s, n, "%.*s%s%s", (int)(p - base), base, to, p + strlen(from));
	return s;
}

START_TEST(each_option_is_reported_by_its_row_alone)
{
	const struct change_case *c = &cases[_i];
	const char *base = c->base ? c->base : BASE_SYNC;
	char *text = replaced(base, c->from, c->to);
	struct config_change ch[MAX_CHANGES];
	struct config a, b;
	unsigned n;

	parse(&a, base);
	parse(&b, text);
	n = config_diff(&a, &b, ch, MAX_CHANGES);
	ck_assert_msg(n == 1, "%s: expected 1 change, got %u (first: %s)", c->row, n,
		      n ? ch[0].name : "-");
	ck_assert_str_eq(config_option_name(ch[0].opt), c->row);
	ck_assert_msg(ch[0].when == c->when, "%s: expected %s, got %s", c->row,
		      c->when == CONFIG_LIVE ? "live" : "restart",
		      ch[0].when == CONFIG_LIVE ? "live" : "restart");
	if (c->old_value)
		ck_assert_str_eq(ch[0].old_value, c->old_value);
	if (c->new_value)
		ck_assert_str_eq(ch[0].new_value, c->new_value);
	/* Nothing differs from itself. */
	ck_assert_uint_eq(config_diff(&b, &b, ch, MAX_CHANGES), 0);
	config_free(&a);
	config_free(&b);
	free(text);
}
END_TEST

START_TEST(every_row_has_a_case)
{
	for (unsigned i = 0; i < config_option_count(); i++) {
		const char *name = config_option_name(config_option_at(i));
		bool found = false;

		for (size_t j = 0; j < sizeof(cases) / sizeof(cases[0]); j++)
			found |= strcmp(cases[j].row, name) == 0;
		ck_assert_msg(found, "row %s has no test case", name);
		ck_assert_ptr_eq(config_option_find(name), config_option_at(i));
		ck_assert_msg((config_option_when(config_option_at(i)) == CONFIG_RESTART) ==
			      (config_option_why(config_option_at(i))[0] != '\0'),
			      "row %s: a restart-only option says why, a live one does not", name);
	}
}
END_TEST

START_TEST(link_options_are_named_by_their_block)
{
	char *text = replaced(BASE_MCAST, "Group 3780", "Group 3790");
	struct config_change ch[MAX_CHANGES];
	struct config a, b;

	parse(&a, BASE_MCAST);
	parse(&b, text);
	ck_assert_uint_eq(config_diff(&a, &b, ch, MAX_CHANGES), 1);
	ck_assert_str_eq(ch[0].name, "Multicast Group");
	config_free(&a);
	config_free(&b);
	free(text);
	text = replaced(BASE_SYNC, "Port 3780", "Port 3781");
	parse(&a, BASE_SYNC);
	parse(&b, text);
	ck_assert_uint_eq(config_diff(&a, &b, ch, MAX_CHANGES), 1);
	ck_assert_str_eq(ch[0].name, "UDP Port");
	config_free(&a);
	config_free(&b);
	free(text);
}
END_TEST

START_TEST(sealing_on_or_off_needs_a_restart)
{
	char *text = replaced(BASE_SYNC, "Key /etc/k1", "");
	struct config_change ch[MAX_CHANGES];
	struct config a, b;

	parse(&a, BASE_SYNC);
	parse(&b, text);
	ck_assert_uint_eq(config_diff(&a, &b, ch, MAX_CHANGES), 1);
	ck_assert_str_eq(ch[0].name, "Key");
	ck_assert_int_eq(ch[0].when, CONFIG_RESTART);
	ck_assert_uint_eq(config_diff(&b, &a, ch, MAX_CHANGES), 1);
	ck_assert_int_eq(ch[0].when, CONFIG_RESTART);
	config_free(&a);
	config_free(&b);
	free(text);
}
END_TEST

/* What a reload does: live values move in, restart-only ones stay; lists change hands. */
START_TEST(taking_the_live_changes_leaves_only_the_restart_ones)
{
	static const char *const edits[][2] = {
		{ "HashLimit 10000", "HashLimit 77" },
		{ "IPv4_address 127.0.0.1 ", "IPv4_address 198.18.9.9 IPv6_address ::1 " },
		{ "Accept { TCP UDP }", "Ignore { ICMP }" },
		{ "Port 3780", "Port 4000" },
		{ "CommitTimeout 0", "CommitTimeout 9" },
		{ "Key /etc/k1", "Key /etc/k2 Key /etc/k1" },
		{ "Group 0", "Group 5" },
		{ "HashSize 8192", "HashSize 1024" },
	};
	struct config_change ch[MAX_CHANGES];
	struct config run, b;
	char *text = strdup(BASE_SYNC), *next;
	unsigned n, live, restart;

	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		next = replaced(text, edits[i][0], edits[i][1]);
		free(text);
		text = next;
	}
	parse(&run, BASE_SYNC);
	parse(&b, text);
	n = config_diff(&run, &b, ch, MAX_CHANGES);
	config_diff_count(ch, n, &live, &restart);
	ck_assert_uint_eq(live, 6);
	ck_assert_uint_eq(restart, 2);
	for (unsigned i = 0; i < n; i++)
		config_take(&run, &b, &ch[i]);
	config_free(&b);        /* releases what `run` held before: `run` must not depend on it */
	ck_assert_uint_eq(run.general.hash_limit, 77);
	ck_assert_uint_eq(run.general.filter.addresses.count, 3);
	ck_assert_int_eq(run.general.filter.addresses.addrs[1].family, AF_INET6);
	ck_assert_uint_eq(run.sync.commit_timeout, 9);
	ck_assert_uint_eq(run.sync.nkeys, 2);
	ck_assert_str_eq(run.sync.keys[0], "/etc/k2");
	ck_assert_uint_eq(run.general.unix_gid, 5);
	ck_assert_uint_eq(run.sync.links[0].port, 3780);    /* restart: kept */
	ck_assert_uint_eq(run.general.hash_size, 8192);

	parse(&b, text);
	n = config_diff(&run, &b, ch, MAX_CHANGES);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(ch[0].name, "HashSize");
	ck_assert_str_eq(ch[1].name, "UDP Port");
	config_free(&b);
	config_free(&run);
	free(text);
}
END_TEST

/* --check diffs a daemon's printed configuration: reading it back must give the same one. */
START_TEST(printed_configuration_reads_back_unchanged)
{
	const char *bases[] = { BASE_SYNC, BASE_NOTRACK, BASE_TCP, BASE_MCAST, BASE_STATS,
				"Sync { Mode ALARM { RefreshTime 9 CacheTimeout 30 } Key /k/a "
				"UDP { IPv6_address fd00::1 IPv6_Destination_Address fd00::2 Port 1 "
				"Interface e } Options { ExpectationSync { ftp } } }\n" };
	const char *base = bases[_i];
	struct config_change ch[MAX_CHANGES];
	struct config a, b;
	char *printed = NULL;
	size_t len = 0;
	FILE *f;
	unsigned n;

	parse(&a, base);
	f = open_memstream(&printed, &len);
	ck_assert_ptr_nonnull(f);
	config_print(&a, f);
	fclose(f);
	parse(&b, printed);
	n = config_diff(&a, &b, ch, MAX_CHANGES);
	ck_assert_msg(n == 0, "printed config differs in %s: %s -> %s\n%s", n ? ch[0].name : "",
		      n ? ch[0].old_value : "", n ? ch[0].new_value : "", printed);
	config_free(&a);
	config_free(&b);
	free(printed);
}
END_TEST

START_TEST(long_values_are_cut_visibly)
{
	char text[8192] = "General { Filter { Address Accept {";
	struct config_change ch[MAX_CHANGES];
	struct config a, b;

	for (int i = 0; i < 200; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), " IPv4_address 198.18.%d.%d",
			 i / 250, i % 250);
	strcat(text, " } } }\n");
	parse(&a, "");
	parse(&b, text);
	ck_assert_uint_eq(config_diff(&a, &b, ch, MAX_CHANGES), 2);
	ck_assert_str_eq(ch[1].name, "Filter Address");
	ck_assert_uint_lt(strlen(ch[1].new_value), CONFIG_VALUE_MAX);
	ck_assert_str_eq(ch[1].new_value + strlen(ch[1].new_value) - 3, "...");
	config_free(&a);
	config_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("config_diff");
	TCase *tc = tcase_create("diff");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, each_option_is_reported_by_its_row_alone, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, every_row_has_a_case);
	tcase_add_test(tc, link_options_are_named_by_their_block);
	tcase_add_test(tc, sealing_on_or_off_needs_a_restart);
	tcase_add_test(tc, taking_the_live_changes_leaves_only_the_restart_ones);
	tcase_add_loop_test(tc, printed_configuration_reads_back_unchanged, 0, 6);
	tcase_add_test(tc, long_values_are_cut_visibly);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
