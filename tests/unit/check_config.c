/*
 * check_config.c - the conntrackd.conf grammar, its checks and its printer.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "config/config.h"

#define DEBIAN_EXAMPLES "/usr/share/doc/conntrackd/examples"

/* A valid UDP link, to complete Sync snippets that test something else. */
#define UDP_LINK "UDP { IPv4_Destination_Address 10.0.0.2 Port 3780 Interface eth1 } "

/* ---- helpers ------------------------------------------------------------ */

struct warnings {
	unsigned count;
	char last[700];
};

static void
collect_warning(void *arg, const struct config_error *w)
{
	struct warnings *ws = arg;

	ws->count++;
	snprintf(ws->last, sizeof(ws->last), "%u:%u: %s", w->line, w->column, w->message);
}

/* Parse `text`; fail the test with the error if it does not parse. */
static void
parse_ok(struct config *cfg, const char *text, struct warnings *ws)
{
	struct config_error err;
	int ret;

	ret = config_parse_buffer(cfg, "test.conf", text, strlen(text), &err,
				  ws ? collect_warning : NULL, ws);
	ck_assert_msg(ret == 0, "expected the snippet to parse, got %u:%u: %s\nsnippet: %s",
		      err.line, err.column, err.message, text);
}

/* "line:column: message" of a failed parse, or "" if it parsed. */
static const char *
parse_error(const char *text, size_t len, char *buf, size_t buflen)
{
	struct config_error err;
	struct config cfg;

	if (config_parse_buffer(&cfg, "test.conf", text, len, &err, NULL, NULL) == 0) {
		config_free(&cfg);
		snprintf(buf, buflen, "%s", "");
		return buf;
	}
	ck_assert_str_eq(err.file, "test.conf");
	snprintf(buf, buflen, "%u:%u: %s", err.line, err.column, err.message);
	return buf;
}

static char *
print_to_string(const struct config *cfg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(out);
	config_print(cfg, out);
	fclose(out);
	return text;
}

/*
 * Field-by-field comparison; writes the first difference into `why`.  The
 * `line` of links is left out: it depends on the layout, not the meaning.
 */
#define SAME(field) do { \
	if (a->field != b->field) { \
		snprintf(why, len, "%s: %lld vs %lld", #field, \
			 (long long)a->field, (long long)b->field); \
		return false; \
	} \
} while (0)
#define SAME_STR(field) do { \
	if (strcmp(a->field, b->field) != 0) { \
		snprintf(why, len, "%s: '%s' vs '%s'", #field, a->field, b->field); \
		return false; \
	} \
} while (0)
#define SAME_MEM(field) do { \
	if (memcmp(&a->field, &b->field, sizeof(a->field)) != 0) { \
		snprintf(why, len, "%s differs", #field); \
		return false; \
	} \
} while (0)

static bool
same_addr(const struct config_addr *x, const struct config_addr *y)
{
	if (x->family != y->family || x->prefix != y->prefix)
		return false;
	if (x->family == AF_INET)
		return x->u.v4.s_addr == y->u.v4.s_addr;
	if (x->family == AF_INET6)
		return memcmp(&x->u.v6, &y->u.v6, sizeof(x->u.v6)) == 0;
	return true;
}

static bool
config_same(const struct config *a, const struct config *b, char *why, size_t len)
{
	unsigned i;

	SAME(role);
	SAME(general.hash_size);
	SAME(general.hash_limit);
	SAME_STR(general.logfile);
	SAME(general.syslog_facility);
	SAME_STR(general.lockfile);
	SAME_STR(general.unix_path);
	SAME(general.unix_backlog);
	SAME_STR(general.unix_group);
	SAME(general.unix_gid);
	SAME(general.netlink_buffer_size);
	SAME(general.netlink_buffer_max_growth);
	SAME(general.netlink_overrun_resync);
	SAME(general.netlink_events_reliable);
	SAME(general.poll_secs);
	SAME(general.event_iteration_limit);
	SAME(general.nice);
	SAME(general.sched_policy);
	SAME(general.sched_priority);
	SAME(general.sched_priority_set);
	SAME(general.systemd);
	SAME(general.filter.set);
	SAME(general.filter.kernelspace);
	SAME(general.filter.protocols.set);
	SAME(general.filter.protocols.accept);
	SAME_MEM(general.filter.protocols.bitmap);
	SAME(general.filter.addresses.set);
	SAME(general.filter.addresses.accept);
	SAME(general.filter.addresses.count);
	for (i = 0; i < a->general.filter.addresses.count; i++)
		if (!same_addr(&a->general.filter.addresses.addrs[i], &b->general.filter.addresses.addrs[i])) {
			snprintf(why, len, "general.filter.addresses.addrs[%u] differs", i);
			return false;
		}
	SAME(general.filter.states.set);
	SAME(general.filter.states.accept);
	SAME(general.filter.states.tcp_states);

	SAME(sync.mode);
	SAME(sync.resend_queue_size);
	SAME(sync.ack_window_size);
	SAME(sync.commit_timeout);
	SAME(sync.purge_timeout);
	SAME(sync.refresh_time);
	SAME(sync.cache_timeout);
	SAME(sync.disable_external_cache);
	SAME(sync.disable_internal_cache);
	SAME(sync.startup_resync);
	SAME(sync.nlinks);
	SAME(sync.default_link);
	for (i = 0; i < a->sync.nlinks; i++) {
		SAME(sync.links[i].kind);
		SAME(sync.links[i].is_default);
		SAME(sync.links[i].family);
		SAME(sync.links[i].mcast_ifaddr.s_addr);
		SAME_STR(sync.links[i].ifname);
		SAME(sync.links[i].port);
		SAME(sync.links[i].sndbuf);
		SAME(sync.links[i].rcvbuf);
		SAME(sync.links[i].checksum);
		SAME(sync.links[i].error_queue_len);
		if (!same_addr(&a->sync.links[i].local, &b->sync.links[i].local) ||
		    !same_addr(&a->sync.links[i].dest, &b->sync.links[i].dest)) {
			snprintf(why, len, "sync.links[%u] addresses differ", i);
			return false;
		}
	}
	SAME(sync.tcp_window_tracking);
	SAME(sync.expectation_sync);
	SAME(sync.expect_helper_count);
	for (i = 0; i < a->sync.expect_helper_count; i++)
		SAME_STR(sync.expect_helpers[i]);

	SAME_STR(stats.logfile);
	SAME(stats.syslog_facility);

	return true;
}

/* print(cfg) parses back to an equal config, and prints the same again. */
static void
assert_round_trip(const struct config *cfg, const char *origin)
{
	struct config_error err;
	struct config again;
	char *first, *second, why[256];

	first = print_to_string(cfg);
	ck_assert_msg(config_parse_buffer(&again, "printed", first, strlen(first), &err, NULL, NULL) == 0,
		      "printed config of %s does not parse: %u:%u: %s\n%s", origin,
		      err.line, err.column, err.message, first);
	ck_assert_msg(config_same(cfg, &again, why, sizeof(why)),
		      "round trip of %s changed %s\n%s", origin, why, first);
	second = print_to_string(&again);
	/* Only the header comment names the source. */
	ck_assert_str_eq(strchr(first, '\n'), strchr(second, '\n'));
	free(first);
	free(second);
	config_free(&again);
}

static const char *
srcdir(void)
{
	const char *s = getenv("top_srcdir");

	return s && *s ? s : ".";
}

/* ---- rejected snippets: exact position and message ---------------------- */

#define GENERAL_OPTS "HashSize, HashLimit, LogFile, Syslog, LockFile, UNIX, NetlinkBufferSize, " \
	"NetlinkBufferSizeMaxGrowth, NetlinkOverrunResync, NetlinkEventsReliable, PollSecs, " \
	"EventIterationLimit, EventSource, Nice, Scheduler, Systemd or Filter"
#define SYNC_OPTS "Mode, Key, PeerTimeout, AliveInterval, Health, Multicast, UDP, TCP, Options, RefreshTime, " \
	"CacheTimeout, " \
	"CommitTimeout or PurgeTimeout"
#define FTFW_OPTS "ResendQueueSize, ACKWindowSize, CommitTimeout, PurgeTimeout, " \
	"DisableExternalCache, StartupResync, HotStandby, ConfirmQueue, ConfirmTimeout or ConfirmHeldMax"
#define UDP_OPTS "IPv4_address, IPv6_address, IPv4_Destination_Address, " \
	"IPv6_Destination_Address, Port, Interface, SndSocketBuffer, RcvSocketBuffer or Checksum"
#define PROTO_EXPECTED "a protocol name (TCP, UDP, UDPLITE, SCTP, DCCP, ICMP, IPv6-ICMP, " \
	"GRE, ESP, AH, ...), a protocol number 0..255, or '}'"
#define STATES "SYN_SENT, SYN_RECV, ESTABLISHED, FIN_WAIT, CLOSE_WAIT, LAST_ACK, " \
	"TIME_WAIT, CLOSE, CLOSED or LISTEN"
#define NAME_RULE "expected a letter followed by letters, digits, '.', '_' or '-'"

struct bad_case {
	const char *behaviour;
	const char *text;
	const char *expected;       /* "line:column: message" */
};

static const struct bad_case bad_cases[] = {
	/* top level and braces */
	{ "rejects_unknown_top_level_block", "Foo { }",
	  "1:1: unknown block 'Foo' at top level; expected General, Sync, Stats or Helper" },
	{ "rejects_option_outside_any_block", "\n  HashSize 5",
	  "2:3: unknown block 'HashSize' at top level; expected General, Sync, Stats or Helper" },
	{ "rejects_closing_brace_at_top_level", "General { } }",
	  "1:13: expected General, Sync, Stats or Helper, got '}'" },
	{ "rejects_block_without_opening_brace", "General HashSize 5 }",
	  "1:9: expected '{' after General, got 'HashSize'" },
	{ "rejects_unclosed_block", "General {\n\tHashSize 5\n",
	  "3:1: unexpected end of file; block General opened at line 1 needs its closing '}'" },
	{ "rejects_brace_where_an_option_is_expected", "General { { } }",
	  "1:11: expected an option of block General (" GENERAL_OPTS ") or '}', got '{'" },
	{ "rejects_keywords_in_the_wrong_case", "general { }",
	  "1:1: unknown block 'general' at top level; expected General, Sync, Stats or Helper" },
	/* lexical */
	{ "rejects_control_byte_outside_comments", "General {\x01}",
	  "1:10: invalid character '\\x01' (control bytes are only allowed in comments); "
	  "expected an option of block General (" GENERAL_OPTS ") or '}'" },
	{ "rejects_eof_after_option_name", "General { HashSize",
	  "1:19: unexpected end of file; expected a decimal number (1..4294967295) after HashSize" },
	/* General */
	{ "rejects_unknown_option_in_general", "General {\n\tHashsize 5\n}",
	  "2:2: unknown option 'Hashsize' in block General; expected " GENERAL_OPTS },
	{ "rejects_hash_size_zero", "General { HashSize 0 }",
	  "1:20: HashSize '0' is out of range; expected 1..4294967295" },
	{ "rejects_hash_size_overflow", "General { HashSize 4294967296 }",
	  "1:20: HashSize '4294967296' is out of range; expected 1..4294967295" },
	{ "rejects_hash_limit_zero", "General { HashLimit 0 }",
	  "1:21: HashLimit '0' is out of range; expected 1..4294967295" },
	{ "rejects_non_numeric_value", "General { HashLimit lots }",
	  "1:21: expected a decimal number (1..4294967295) after HashLimit, got 'lots'" },
	{ "rejects_negative_number", "General { HashSize -5 }",
	  "1:20: expected a decimal number (1..4294967295) after HashSize, got '-5'" },
	{ "rejects_hex_number", "General { HashSize 0x10 }",
	  "1:20: expected a decimal number (1..4294967295) after HashSize, got '0x10'" },
	{ "rejects_missing_value", "General { HashSize }",
	  "1:20: expected a decimal number (1..4294967295) after HashSize, got '}'" },
	{ "rejects_relative_lock_file", "General { LockFile run/x.lock }",
	  "1:20: expected an absolute path (starting with '/') after LockFile, got 'run/x.lock'" },
	{ "rejects_path_longer_than_107_bytes", "General { LockFile /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa }",
	  "1:20: path of LockFile is too long (108 bytes); at most 107 bytes" },
	{ "rejects_bad_log_file_value", "General { LogFile maybe }",
	  "1:19: expected on, off or an absolute path (starting with '/') after LogFile, got 'maybe'" },
	{ "rejects_bad_boolean", "General { Systemd maybe }",
	  "1:19: expected on, off, yes or no after Systemd, got 'maybe'" },
	{ "rejects_poll_secs_zero", "General { PollSecs 0 }",
	  "1:20: PollSecs '0' is out of range; expected 1..2147483647" },
	{ "rejects_unknown_event_source", "General { EventSource ebpf }",
	  "1:23: expected ctnetlink or bpf after EventSource, got 'ebpf'" },
	{ "rejects_event_iteration_limit_zero", "General { EventIterationLimit 0 }",
	  "1:31: EventIterationLimit '0' is out of range; expected 1..2147483647" },
	{ "rejects_netlink_buffer_above_int_max", "General { NetlinkBufferSize 2147483648 }",
	  "1:29: NetlinkBufferSize '2147483648' is out of range; expected 0..2147483647" },
	{ "rejects_bad_overrun_resync", "General { NetlinkOverrunResync sometimes }",
	  "1:32: expected on, off or a number of seconds (0..2147483647) after NetlinkOverrunResync, got 'sometimes'" },
	{ "rejects_nice_below_minus_20", "General { Nice -21 }",
	  "1:16: Nice '-21' is out of range; expected -20..19" },
	{ "rejects_scheduler_priority_100", "General { Scheduler { Type RR Priority 100 } }",
	  "1:40: Priority '100' is out of range; expected 0..99" },
	{ "rejects_unknown_scheduler_type", "General { Scheduler { Type OTHER } }",
	  "1:28: expected RR or FIFO after Type, got 'OTHER'" },
	{ "rejects_relative_unix_path", "General { UNIX { Path ctsyncd.sock } }",
	  "1:23: expected an absolute path (starting with '/') after Path, got 'ctsyncd.sock'" },
	{ "rejects_unknown_option_in_unix", "General { UNIX { Mode 0600 } }",
	  "1:18: unknown option 'Mode' in block UNIX; expected Path, Backlog or Group" },
	{ "rejects_unix_group_that_is_not_a_name", "General { UNIX { Group wheel/adm } }",
	  "1:24: 'wheel/adm' is not a valid group name; expected a letter or '_' followed by "
	  "letters, digits, '.', '_' or '-', or a numeric gid" },
	{ "rejects_unix_group_gid_out_of_range", "General { UNIX { Group 4294967295 } }",
	  "1:24: Group '4294967295' is out of range; expected a gid 0..4294967294" },
	{ "rejects_unix_group_name_too_long",
	  "General { UNIX { Group abcdefghijabcdefghijabcdefghijabc } }",
	  "1:24: Group 'abcdefghijabcdefghijabcdefghijabc' is too long; at most 32 characters" },
	/* Filter */
	{ "rejects_unknown_option_in_filter", "General {\n\tFilter {\n\t\tProt Accept { TCP }\n\t}\n}\n",
	  "3:3: unknown option 'Prot' in block Filter; expected Protocol, Address or State" },
	{ "rejects_unknown_filter_origin", "General { Filter From Somewhere { } }",
	  "1:23: expected Userspace or Kernelspace after From, got 'Somewhere'" },
	{ "rejects_bad_filter_policy", "General { Filter { Address Allow { } } }",
	  "1:28: expected Accept or Ignore after Address, got 'Allow'" },
	{ "rejects_unknown_protocol", "General { Filter { Protocol Accept { TCP FOO } } }",
	  "1:42: unknown protocol 'FOO' in Protocol filter; expected " PROTO_EXPECTED },
	{ "rejects_protocol_number_above_255", "General { Filter { Protocol Accept { 256 } } }",
	  "1:38: unknown protocol '256' in Protocol filter; expected " PROTO_EXPECTED },
	{ "rejects_unclosed_protocol_list", "General { Filter { Protocol Accept { TCP",
	  "1:41: unexpected end of file; block Protocol opened at line 1 needs its closing '}'" },
	{ "rejects_ipv6_literal_as_ipv4_address",
	  "General { Filter { Address Accept { IPv4_address ::1 } } }",
	  "1:50: expected an IPv4 address (with an optional /prefix) after IPv4_address, got '::1'" },
	{ "rejects_unknown_option_in_address_filter",
	  "General { Filter { Address Ignore { Address 10.0.0.1 } } }",
	  "1:37: unknown option 'Address' in block Address; expected IPv4_address or IPv6_address" },
	{ "rejects_states_without_for_tcp", "General { Filter { State Ignore { LISTEN } } }",
	  "1:42: expected a TCP state (" STATES ") or 'for TCP', got '}'" },
	{ "rejects_unknown_tcp_state", "General { Filter { State Accept { ESTABLISHED NONE for TCP } } }",
	  "1:47: expected a TCP state (" STATES ") or 'for TCP', got 'NONE'" },
	{ "rejects_states_for_udp", "General { Filter { State Accept { ESTABLISHED for UDP } } }",
	  "1:51: expected TCP after 'for' (states only exist for TCP), got 'UDP'" },
	{ "rejects_lowercase_tcp_state", "General { Filter { State Accept { established for TCP } } }",
	  "1:35: expected a TCP state (" STATES ") or '}', got 'established'" },
	/* Sync */
	{ "rejects_sync_without_link", "Sync { Mode FTFW { } }",
	  "1:0: Sync needs a link block: UDP, Multicast or TCP" },
	{ "rejects_sync_and_stats_together", "Sync { " UDP_LINK "}\nStats { }",
	  "2:0: Sync and Stats cannot be used together (Sync at line 1, Stats at line 2); choose one role" },
	{ "rejects_general_option_in_sync", "Sync { HashSize 5 }",
	  "1:8: unknown option 'HashSize' in block Sync; expected " SYNC_OPTS },
	{ "rejects_unknown_mode", "Sync { Mode FAST { } }",
	  "1:13: expected FTFW, NOTRACK or ALARM after Mode, got 'FAST'" },
	{ "rejects_disable_internal_cache_outside_notrack",
	  "Sync { Mode FTFW { DisableInternalCache on } " UDP_LINK "}",
	  "1:20: option 'DisableInternalCache' is only accepted in Mode NOTRACK; Mode FTFW accepts " FTFW_OPTS },
	{ "rejects_disable_internal_cache_with_pollsecs",
	  "General { PollSecs 5 }\nSync { Mode NOTRACK { DisableInternalCache on } " UDP_LINK "}",
	  "2:0: DisableInternalCache cannot be combined with PollSecs (5): a poll finds what changed by "
	  "comparing the kernel table with the internal cache (conntrackd 1.4.7 would replicate nothing)" },
	{ "rejects_ftfw_option_in_alarm", "Sync { Mode ALARM { ACKWindowSize 5 } }",
	  "1:21: option 'ACKWindowSize' is only accepted in Mode FTFW; Mode ALARM accepts "
	  "RefreshTime, CacheTimeout, CommitTimeout or PurgeTimeout" },
	{ "rejects_ftfw_and_notrack_option_in_alarm",
	  "Sync { Mode ALARM { DisableExternalCache on } }",
	  "1:21: option 'DisableExternalCache' is only accepted in Mode FTFW and Mode NOTRACK; "
	  "Mode ALARM accepts RefreshTime, CacheTimeout, CommitTimeout or PurgeTimeout" },
	{ "rejects_ack_window_size_zero", "Sync { Mode FTFW { ACKWindowSize 0 } }",
	  "1:34: ACKWindowSize '0' is out of range; expected 1..2147483647" },
	{ "rejects_resend_queue_size_zero", "Sync { Mode FTFW { ResendQueueSize 0 } }",
	  "1:36: ResendQueueSize '0' is out of range; expected 1..2147483647" },
	{ "rejects_refresh_time_zero", "Sync { Mode ALARM { RefreshTime 0 } }",
	  "1:33: RefreshTime '0' is out of range; expected 1..2147483647" },
	{ "rejects_fifth_link",
	  "Sync {\n" UDP_LINK "\n" UDP_LINK "\n" UDP_LINK "\n" UDP_LINK "\n" UDP_LINK "}",
	  "6:1: too many link blocks; at most 4 (Multicast, UDP or TCP)" },
	{ "rejects_mixed_link_kinds",
	  "Sync {\n" UDP_LINK "\nTCP { IPv4_Destination_Address 10.0.0.2 Port 1 Interface eth2 } }",
	  "3:1: TCP cannot be mixed with UDP links (line 2); all links of Sync use one transport" },
	{ "rejects_second_default_link",
	  "Sync {\nUDP Default { IPv4_Destination_Address 10.0.0.2 Port 1 Interface eth1 }\n"
	  "UDP Default { IPv4_Destination_Address 10.0.1.2 Port 1 Interface eth2 } }",
	  "3:1: a second Default link; the link at line 2 is already the Default" },
	{ "rejects_link_without_interface", "Sync {\n UDP { IPv4_Destination_Address 10.0.0.2 Port 3780 }\n}",
	  "2:0: UDP block has no Interface; every link needs one (its MTU sizes the datagrams)" },
	{ "rejects_link_without_port", "Sync { TCP { IPv4_Destination_Address 10.0.0.2 Interface eth0 } }",
	  "1:0: TCP block has no Port; expected a UDP port number 1..65535" },
	{ "rejects_multicast_without_group_port",
	  "Sync { Multicast { IPv4_address 225.0.0.50 Interface eth0 } }",
	  "1:0: Multicast block has no Group; expected a UDP port number 1..65535" },
	{ "rejects_udp_without_destination", "Sync { UDP { IPv4_address 10.0.0.1 Port 3780 Interface eth0 } }",
	  "1:0: UDP block has no destination address; expected IPv4_Destination_Address or IPv6_Destination_Address" },
	{ "rejects_multicast_without_group_address", "Sync { Multicast { Group 3780 Interface eth0 } }",
	  "1:0: Multicast block has no group address; expected IPv4_address or IPv6_address" },
	{ "rejects_unicast_multicast_group", "Sync { Multicast { IPv4_address 192.168.1.1 } }",
	  "1:33: '192.168.1.1' is not a multicast address; the IPv4_address of a Multicast block "
	  "is the group (224.0.0.0/4)" },
	{ "rejects_unicast_ipv6_multicast_group", "Sync { Multicast { IPv6_address fe80::1 } }",
	  "1:33: 'fe80::1' is not a multicast address; the IPv6_address of a Multicast block "
	  "is the group (ff00::/8)" },
	{ "rejects_mixed_address_families_in_link",
	  "Sync { UDP { IPv4_address 10.0.0.1 IPv6_Destination_Address fe80::2 } }",
	  "1:36: IPv6_Destination_Address mixes address families in block UDP: a link uses "
	  "either IPv4 or IPv6 addresses" },
	{ "rejects_ipv4_interface_with_ipv6_group",
	  "Sync { Multicast { IPv6_address ff02::1 IPv4_interface 10.0.0.1 } }",
	  "1:41: IPv4_interface mixes address families in block Multicast: a link uses "
	  "either IPv4 or IPv6 addresses" },
	{ "rejects_prefix_on_link_address", "Sync { UDP { IPv4_address 10.0.0.1/24 } }",
	  "1:27: IPv4_address takes a plain address, without a /prefix; got '10.0.0.1/24'" },
	{ "rejects_port_zero", "Sync { UDP { Port 0 } }",
	  "1:19: Port '0' is out of range; expected 1..65535" },
	{ "rejects_port_above_65535", "Sync { UDP { Port 70000 } }",
	  "1:19: Port '70000' is out of range; expected 1..65535" },
	{ "rejects_interface_name_longer_than_15", "Sync { UDP { Interface abcdefghijklmnop } }",
	  "1:24: interface name 'abcdefghijklmnop' is too long; at most 15 characters" },
	{ "rejects_interface_name_starting_with_digit", "Sync { UDP { Interface 0eth } }",
	  "1:24: '0eth' is not a valid interface name; " NAME_RULE },
	{ "rejects_error_queue_length_in_udp", "Sync { UDP { ErrorQueueLength 5 } }",
	  "1:14: unknown option 'ErrorQueueLength' in block UDP; expected " UDP_OPTS },
	{ "rejects_destination_in_multicast", "Sync { Multicast { IPv4_Destination_Address 10.0.0.2 } }",
	  "1:20: unknown option 'IPv4_Destination_Address' in block Multicast; expected IPv4_address, "
	  "IPv6_address, IPv4_interface, IPv6_interface, Group, Interface, SndSocketBuffer, "
	  "RcvSocketBuffer or Checksum" },
	{ "rejects_empty_expectation_list", "Sync { Options { ExpectationSync { } } }",
	  "1:18: ExpectationSync { } lists no helper; write ExpectationSync on to synchronise "
	  "the expectations of every helper" },
	{ "rejects_bad_expectation_sync_value", "Sync { Options { ExpectationSync maybe } }",
	  "1:34: expected on, off or '{' with a list of helper names after ExpectationSync, got 'maybe'" },
	{ "rejects_expectation_helper_name_longer_than_15",
	  "Sync { Options { ExpectationSync { abcdefghijklmnop } } }",
	  "1:36: helper name 'abcdefghijklmnop' is too long; at most 15 characters" },
	/* Stats */
	{ "rejects_netlink_events_reliable_in_stats", "Stats { NetlinkEventsReliable on }",
	  "1:9: unknown option 'NetlinkEventsReliable' in block Stats; expected LogFile or Syslog" },
	/* Helper: refused, naming what is missing (issue 17) */
	{ "rejects_helper_block", "Helper { Setup off }",
	  "1:1: Helper: user-space conntrack helpers are not supported by ctsyncd (it runs no NFQUEUE "
	  "helper and does not use nfnetlink_cthelper), so packets queued for them would have no reader; "
	  "remove the Helper block and use the kernel's own helpers (nf_conntrack_ftp, ...) with an "
	  "nftables 'ct helper' rule" },
};

START_TEST(rejects_bad_snippet)
{
	const struct bad_case *c = &bad_cases[_i];
	char got[1024];

	parse_error(c->text, strlen(c->text), got, sizeof(got));
	ck_assert_msg(strcmp(got, c->expected) == 0,
		      "%s:\n  snippet:  %s\n  expected: %s\n  actual:   %s",
		      c->behaviour, c->text, c->expected, got[0] ? got : "(parsed without error)");
}
END_TEST

/* ---- accepted snippets -------------------------------------------------- */

static const char *const good_cases[] = {
	"",
	"# only a comment",
	"General { }",
	"General { } General { HashSize 5 }",
	"General{HashSize 5}Stats{}",
	"Sync { " UDP_LINK "}",
	"Sync { Mode ftfw { } " UDP_LINK "}",
	"Sync { Mode Notrack { DisableInternalCache yes } " UDP_LINK "}",
	"Sync { Mode ALARM { } RefreshTime 5 CacheTimeout 9 CommitTimeout 3 PurgeTimeout 2 " UDP_LINK "}",
	"Sync { Mode FTFW { } Multicast Default { IPv6_address ff02::1 Group 1 Interface lo } }",
	"Sync { Mode FTFW { } TCP { IPv6_Destination_Address ::1 Port 65535 Interface lo "
	"ErrorQueueLength 1 } }",
	"General { Filter { Protocol Accept { } Address Ignore { } State Accept { } } }",
	"General { Filter { Protocol Accept { tcp } Protocol Accept { udp 0 255 } } }",
	"General { Nice +5 Nice 19 Nice -20 }",
	"General { LogFile OFF Syslog No Systemd YES }",
};

START_TEST(accepts_good_snippet)
{
	struct config cfg;

	parse_ok(&cfg, good_cases[_i], NULL);
	assert_round_trip(&cfg, good_cases[_i]);
	config_free(&cfg);
}
END_TEST

/* ---- defaults ----------------------------------------------------------- */

START_TEST(sync_with_one_udp_link_has_every_default)
{
	struct config cfg;
	const struct config_general *g = &cfg.general;
	const struct config_sync *s = &cfg.sync;
	const struct config_link *l = &s->links[0];
	struct warnings ws = { 0 };

	parse_ok(&cfg, "Sync {\n\tMode FTFW { }\n\tUDP { IPv4_Destination_Address 10.0.0.2 "
		 "Port 3780 Interface eth1 }\n}\n", &ws);
	ck_assert_uint_eq(ws.count, 0);
	ck_assert_int_eq(cfg.role, CONFIG_ROLE_SYNC);

	ck_assert_uint_eq(g->hash_size, 65536);
	ck_assert_uint_eq(g->hash_limit, 262144);
	ck_assert_str_eq(g->logfile, "");
	ck_assert_int_eq(g->syslog_facility, -1);
	ck_assert_str_eq(g->lockfile, "/run/ctsyncd/ctsyncd.lock");
	ck_assert_str_eq(g->unix_path, "/run/ctsyncd/ctsyncd.sock");
	ck_assert_uint_eq(g->unix_backlog, 100);
	ck_assert_str_eq(g->unix_group, "");
	ck_assert_uint_eq(g->unix_gid, CONFIG_NO_GID);
	ck_assert_uint_eq(g->netlink_buffer_size, 0);
	ck_assert_uint_eq(g->netlink_buffer_max_growth, 0);
	ck_assert_uint_eq(g->netlink_overrun_resync, 2);
	ck_assert(!g->netlink_events_reliable);
	ck_assert_uint_eq(g->poll_secs, 0);
	ck_assert_uint_eq(g->event_iteration_limit, 100);
	ck_assert_int_eq(g->nice, 0);
	ck_assert_int_eq(g->sched_policy, SCHED_RR);
	ck_assert_int_eq(g->sched_priority, 99);
	ck_assert(!g->sched_priority_set);
	ck_assert(g->systemd);
	ck_assert(!g->filter.set);

	ck_assert_int_eq(s->mode, CONFIG_MODE_FTFW);
	ck_assert_uint_eq(s->resend_queue_size, 131072);
	ck_assert_uint_eq(s->ack_window_size, 300);
	ck_assert_uint_eq(s->commit_timeout, 0);
	ck_assert_uint_eq(s->purge_timeout, 60);
	ck_assert_uint_eq(s->refresh_time, 60);
	ck_assert_uint_eq(s->cache_timeout, 180);
	ck_assert(!s->disable_external_cache);
	ck_assert(!s->disable_internal_cache);
	ck_assert(!s->startup_resync);
	ck_assert(!s->tcp_window_tracking);
	ck_assert(!s->expectation_sync);
	ck_assert_uint_eq(s->expect_helper_count, 0);

	ck_assert_uint_eq(s->nlinks, 1);
	ck_assert_uint_eq(s->default_link, 0);
	ck_assert_int_eq(l->kind, CONFIG_LINK_UDP);
	ck_assert(!l->is_default);
	ck_assert_int_eq(l->family, AF_INET);
	ck_assert_int_eq(l->local.family, 0);
	ck_assert_int_eq(l->dest.family, AF_INET);
	ck_assert_uint_eq(ntohl(l->dest.u.v4.s_addr), 0x0a000002);
	ck_assert_str_eq(l->ifname, "eth1");
	ck_assert_uint_eq(l->port, 3780);
	ck_assert_uint_eq(l->sndbuf, 0);
	ck_assert_uint_eq(l->rcvbuf, 0);
	ck_assert(l->checksum);
	ck_assert_uint_eq(l->error_queue_len, 128);
	ck_assert_uint_eq(l->line, 3);

	ck_assert_str_eq(cfg.stats.logfile, "");
	ck_assert_int_eq(cfg.stats.syslog_facility, -1);
	config_free(&cfg);
}
END_TEST

START_TEST(empty_file_has_no_role_and_defaults)
{
	struct config cfg, def;
	char why[256];

	parse_ok(&cfg, "", NULL);
	config_defaults(&def);
	ck_assert_int_eq(cfg.role, CONFIG_ROLE_NONE);
	ck_assert_msg(config_same(&cfg, &def, why, sizeof(why)), "empty file differs from defaults: %s", why);
	ck_assert_str_eq(cfg.path, "test.conf");
	config_free(&cfg);
	config_free(&def);
}
END_TEST

START_TEST(stats_block_selects_stats_role_and_log_file_on_means_ctsyncd_path)
{
	struct config cfg;

	parse_ok(&cfg, "General { LogFile on Syslog on } Stats { LogFile on Syslog daemon }", NULL);
	ck_assert_int_eq(cfg.role, CONFIG_ROLE_STATS);
	ck_assert_str_eq(cfg.general.logfile, "/var/log/ctsyncd.log");
	ck_assert_int_eq(cfg.general.syslog_facility, LOG_DAEMON);
	ck_assert_str_eq(cfg.stats.logfile, "/var/log/ctsyncd-stats.log");
	ck_assert_int_eq(cfg.stats.syslog_facility, LOG_DAEMON);
	config_free(&cfg);
	parse_ok(&cfg, "Stats { Syslog local7 }", NULL);
	ck_assert_int_eq(cfg.general.syslog_facility, -1);
	ck_assert_int_eq(cfg.stats.syslog_facility, LOG_LOCAL7);
	config_free(&cfg);
}
END_TEST

START_TEST(conflicting_stats_syslog_facility_follows_general_with_a_warning)
{
	struct warnings ws = { 0 };
	struct config cfg;

	parse_ok(&cfg, "General { Syslog local1 }\nStats { Syslog local2 }", &ws);
	ck_assert_int_eq(cfg.stats.syslog_facility, LOG_LOCAL1);
	ck_assert_uint_eq(ws.count, 1);
	ck_assert_str_eq(ws.last, "2:0: Syslog of Stats (local2) differs from Syslog of General "
			 "(local1); using local1");
	config_free(&cfg);
}
END_TEST

START_TEST(default_path_is_under_sysconfdir_ctsyncd)
{
	const char *suffix = "/ctsyncd/ctsyncd.conf";
	size_t n = strlen(CONFIG_DEFAULT_PATH);

	ck_assert_uint_gt(n, strlen(suffix));
	ck_assert_str_eq(CONFIG_DEFAULT_PATH + n - strlen(suffix), suffix);
}
END_TEST

/* ---- options, aliases, legacy names ------------------------------------- */

START_TEST(socket_buffer_aliases_set_netlink_buffer_options)
{
	const char *const growth[] = { "SocketBufferSizeMaxGrown", "SocketBufferSizeMaxGrowth",
				       "NetlinkBufferSizeMaxGrowth" };
	struct config cfg;
	char text[200];
	unsigned i;

	for (i = 0; i < 3; i++) {
		snprintf(text, sizeof(text), "General { SocketBufferSize 262142 %s 655355 }", growth[i]);
		parse_ok(&cfg, text, NULL);
		ck_assert_msg(cfg.general.netlink_buffer_size == 262142 &&
			      cfg.general.netlink_buffer_max_growth == 655355,
			      "%s: expected 262142/655355, got %u/%u", growth[i],
			      cfg.general.netlink_buffer_size, cfg.general.netlink_buffer_max_growth);
		config_free(&cfg);
	}
}
END_TEST

/*
 * What conntrackd 1.4.7 starts with, with a warning, ctsyncd starts with
 * too, meaning the same (issue 17): each case, its warning and its effect.
 */
START_TEST(what_1_4_7_only_warns_about_starts_with_a_warning)
{
	struct warnings ws = { 0 };
	struct config cfg;

	parse_ok(&cfg, "General { Syslog local9 }", &ws);
	ck_assert_uint_eq(ws.count, 1);
	ck_assert_msg(strstr(ws.last, "'local9' is not a syslog facility") != NULL, "got %s", ws.last);
	ck_assert_int_eq(cfg.general.syslog_facility, -1);
	config_free(&cfg);

	memset(&ws, 0, sizeof(ws));
	parse_ok(&cfg, "General { Filter { Protocol Accept { TCP } Protocol Ignore { UDP } } }", &ws);
	ck_assert_uint_eq(ws.count, 1);
	ck_assert_msg(strstr(ws.last, "1:44: Protocol Ignore after an earlier Protocol Accept") != NULL,
		      "got %s", ws.last);
	/* The last policy, for the entries of both blocks. */
	ck_assert(!cfg.general.filter.protocols.accept);
	ck_assert(cfg.general.filter.protocols.bitmap[IPPROTO_TCP / 8] & (1u << (IPPROTO_TCP % 8)));
	ck_assert(cfg.general.filter.protocols.bitmap[IPPROTO_UDP / 8] & (1u << (IPPROTO_UDP % 8)));
	config_free(&cfg);

	memset(&ws, 0, sizeof(ws));
	parse_ok(&cfg, "General { Filter { Address Ignore { IPv4_address 10.0.0.0/33 IPv4_address 10.1.0.0/16 "
		 "IPv6_address 2001:db8::/129 } } }", &ws);
	ck_assert_uint_eq(ws.count, 2);
	ck_assert_msg(strstr(ws.last, "prefix length of '2001:db8::/129' is longer than /128") != NULL,
		      "got %s", ws.last);
	ck_assert_uint_eq(cfg.general.filter.addresses.count, 1);
	ck_assert_uint_eq(cfg.general.filter.addresses.addrs[0].prefix, 16);
	config_free(&cfg);

	memset(&ws, 0, sizeof(ws));
	parse_ok(&cfg, "Sync {\nMode FTFW { ACKWindowSize 9 }\nMode ALARM { RefreshTime 7 } " UDP_LINK "}", &ws);
	ck_assert_uint_eq(ws.count, 1);
	ck_assert_msg(strstr(ws.last, "3:1: a second Mode ('ALARM'): it replaces the Mode of line 2") != NULL,
		      "got %s", ws.last);
	ck_assert_int_eq(cfg.sync.mode, CONFIG_MODE_ALARM);
	ck_assert_uint_eq(cfg.sync.refresh_time, 7);
	ck_assert_uint_eq(cfg.sync.ack_window_size, 9);
	config_free(&cfg);

	/* Every name of the system's protocol list, as 1.4.7's getprotobyname() finds them. */
	memset(&ws, 0, sizeof(ws));
	parse_ok(&cfg, "General { Filter { Protocol Accept { vrrp OSPF l2tp ipip pim 253 } } }", &ws);
	ck_assert_uint_eq(ws.count, 0);
	ck_assert(cfg.general.filter.protocols.bitmap[112 / 8] & (1u << (112 % 8)));
	ck_assert(cfg.general.filter.protocols.bitmap[89 / 8] & (1u << (89 % 8)));
	ck_assert(cfg.general.filter.protocols.bitmap[115 / 8] & (1u << (115 % 8)));
	ck_assert(cfg.general.filter.protocols.bitmap[94 / 8] & (1u << (94 % 8)));
	ck_assert(cfg.general.filter.protocols.bitmap[103 / 8] & (1u << (103 % 8)));
	config_free(&cfg);
}
END_TEST

START_TEST(legacy_mode_names_are_accepted_with_a_warning)
{
	struct warnings ws = { 0 };
	struct config cfg;

	parse_ok(&cfg, "Sync { Mode persistent { RefreshTime 7 } " UDP_LINK "}", &ws);
	ck_assert_int_eq(cfg.sync.mode, CONFIG_MODE_ALARM);
	ck_assert_uint_eq(cfg.sync.refresh_time, 7);
	ck_assert_uint_eq(ws.count, 1);
	ck_assert_str_eq(ws.last, "1:13: Mode persistent is the old name of Mode ALARM; please rename it");
	config_free(&cfg);

	memset(&ws, 0, sizeof(ws));
	parse_ok(&cfg, "Sync { Mode NACK { ACKWindowSize 9 } " UDP_LINK "}", &ws);
	ck_assert_int_eq(cfg.sync.mode, CONFIG_MODE_FTFW);
	ck_assert_uint_eq(cfg.sync.ack_window_size, 9);
	ck_assert_uint_eq(ws.count, 1);
	ck_assert_str_eq(ws.last, "1:13: Mode nack is the old name of Mode FTFW; please rename it");
	config_free(&cfg);
}
END_TEST

START_TEST(missing_mode_means_ftfw_with_a_warning)
{
	struct warnings ws = { 0 };
	struct config cfg;

	parse_ok(&cfg, "\nSync { " UDP_LINK "}", &ws);
	ck_assert_int_eq(cfg.sync.mode, CONFIG_MODE_FTFW);
	ck_assert_uint_eq(ws.count, 1);
	ck_assert_str_eq(ws.last, "2:0: Sync has no Mode block; using Mode FTFW");
	config_free(&cfg);
}
END_TEST

START_TEST(nice_and_ipv6_interface_are_accepted_with_a_warning)
{
	struct warnings ws = { 0 };
	struct config cfg;

	parse_ok(&cfg, "General { Nice -1 }", &ws);
	ck_assert_int_eq(cfg.general.nice, -1);
	ck_assert_uint_eq(ws.count, 1);
	config_free(&cfg);
	memset(&ws, 0, sizeof(ws));
	parse_ok(&cfg, "Sync { Mode FTFW { } Multicast { IPv4_address 225.0.0.50 IPv6_interface ::1 "
		 "Group 3780 Interface eth0 } }", &ws);
	ck_assert_uint_eq(ws.count, 1);
	ck_assert_msg(strstr(ws.last, "IPv6_interface is ignored") != NULL, "got warning %s", ws.last);
	config_free(&cfg);
}
END_TEST

START_TEST(sync_level_timers_apply_to_the_mode)
{
	struct config cfg;

	parse_ok(&cfg, "Sync { Mode ALARM { } RefreshTime 5 CacheTimeout 9 CommitTimeout 3 "
		 "PurgeTimeout 2 " UDP_LINK "}", NULL);
	ck_assert_uint_eq(cfg.sync.refresh_time, 5);
	ck_assert_uint_eq(cfg.sync.cache_timeout, 9);
	ck_assert_uint_eq(cfg.sync.commit_timeout, 3);
	ck_assert_uint_eq(cfg.sync.purge_timeout, 2);
	config_free(&cfg);
}
END_TEST

START_TEST(disable_external_cache_forces_commit_timeout_zero)
{
	struct warnings ws = { 0 };
	struct config cfg;

	parse_ok(&cfg, "Sync { Mode NOTRACK { CommitTimeout 30 DisableExternalCache on } " UDP_LINK "}", &ws);
	ck_assert(cfg.sync.disable_external_cache);
	ck_assert_uint_eq(cfg.sync.commit_timeout, 0);
	ck_assert_uint_eq(ws.count, 1);
	config_free(&cfg);
}
END_TEST

START_TEST(hot_standby_parses_and_excludes_disable_external_cache)
{
	struct warnings ws = { 0 };
	struct config cfg;
	char buf[512];
	static const char bad[] = "Sync {\nMode FTFW { HotStandby on DisableExternalCache on }\n" UDP_LINK "}";

	parse_ok(&cfg, "Sync { Mode FTFW { HotStandby on } " UDP_LINK "}", &ws);
	ck_assert(cfg.sync.hot_standby);
	assert_round_trip(&cfg, "HotStandby");
	config_free(&cfg);
	parse_ok(&cfg, "Sync { Mode NOTRACK { HotStandby yes } " UDP_LINK "}", &ws);
	ck_assert(cfg.sync.hot_standby);
	config_free(&cfg);
	parse_ok(&cfg, "Sync { Mode FTFW { } " UDP_LINK "}", &ws);
	ck_assert(!cfg.sync.hot_standby);
	config_free(&cfg);
	ck_assert_str_eq(parse_error(bad, strlen(bad), buf, sizeof(buf)),
			 "2:0: HotStandby keeps the external cache and also writes it into "
			 "the kernel; it cannot be combined with DisableExternalCache on");
}
END_TEST

START_TEST(peer_timeout_and_health_thresholds)
{
	struct warnings ws = { 0 };
	struct config cfg;
	char buf[512];
	static const char inverted[] = "Sync {\nHealth { ResendBacklogWarning 20 ResendBacklogCritical 5 }\n"
				       UDP_LINK "}";
	static const char zero[] = "Sync { PeerTimeout 0 " UDP_LINK "}";

	parse_ok(&cfg, "Sync { Mode FTFW { } " UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.peer_timeout_ms, 30000);
	ck_assert_uint_eq(cfg.sync.health.peer_silent_warning, 10);
	ck_assert_uint_eq(cfg.sync.health.backlog_warning, 10);
	ck_assert_uint_eq(cfg.sync.health.backlog_critical, 60);
	ck_assert_uint_eq(cfg.sync.health.recent_errors, 300);
	config_free(&cfg);
	parse_ok(&cfg, "Sync { PeerTimeout 3 Health { PeerSilentWarning 2 ResendBacklogWarning 0 "
		 "ResendBacklogCritical 7 RecentErrors 60 } " UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.peer_timeout_ms, 3000);
	ck_assert_uint_eq(cfg.sync.health.peer_silent_warning, 2);
	ck_assert_uint_eq(cfg.sync.health.backlog_warning, 0);
	ck_assert_uint_eq(cfg.sync.health.backlog_critical, 7);
	ck_assert_uint_eq(cfg.sync.health.recent_errors, 60);
	assert_round_trip(&cfg, "PeerTimeout and Health");
	config_free(&cfg);
	/* ALARM peers send refreshes only: the timeout outlasts RefreshTime, silence alone is no warning. */
	parse_ok(&cfg, "Sync { Mode ALARM { RefreshTime 90 } " UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.peer_timeout_ms, 92000);
	ck_assert_uint_eq(cfg.sync.health.peer_silent_warning, 0);
	config_free(&cfg);
	parse_ok(&cfg, "Sync { Mode ALARM { RefreshTime 5 } PeerTimeout 4 "
		 "Health { PeerSilentWarning 3 } " UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.peer_timeout_ms, 4000);
	ck_assert_uint_eq(cfg.sync.health.peer_silent_warning, 3);
	config_free(&cfg);
	parse_ok(&cfg, "Sync { Mode ALARM { RefreshTime 5 } " UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.peer_timeout_ms, 30000);
	config_free(&cfg);
	ck_assert_str_eq(parse_error(inverted, strlen(inverted), buf, sizeof(buf)),
			 "1:0: Health: ResendBacklogWarning (20 s) is above ResendBacklogCritical "
			 "(5 s); the warning must come first");
	ck_assert_msg(strstr(parse_error(zero, strlen(zero), buf, sizeof(buf)), "PeerTimeout") != NULL,
		      "%s", buf);
}
END_TEST

/* A sub-second PeerTimeout, with ALIVEs often enough that a live peer never looks dead. */
START_TEST(peer_timeout_takes_milliseconds_and_alive_interval_bounds_it)
{
	struct warnings ws = { 0 };
	struct config cfg;
	char buf[512];
	static const char short_to[] = "Sync {\nAliveInterval 100\nPeerTimeout 150ms\n" UDP_LINK "}";
	static const char too_short[] = "Sync { PeerTimeout 40ms " UDP_LINK "}";
	static const char bad_unit[] = "Sync { PeerTimeout 3m " UDP_LINK "}";
	static const char alarm[] = "Sync { Mode ALARM { }\nAliveInterval 200 " UDP_LINK "}";
	static const char alive_big[] = "Sync { AliveInterval 2000 " UDP_LINK "}";

	parse_ok(&cfg, "Sync { PeerTimeout 300ms AliveInterval 100 " UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.peer_timeout_ms, 300);
	ck_assert_uint_eq(cfg.sync.alive_interval_ms, 100);
	assert_round_trip(&cfg, "PeerTimeout 300ms");
	config_free(&cfg);
	parse_ok(&cfg, "Sync { PeerTimeout 2s " UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.peer_timeout_ms, 2000);
	ck_assert_uint_eq(cfg.sync.alive_interval_ms, 1000);
	config_free(&cfg);
	parse_ok(&cfg, "Sync { PeerTimeout 2500MS " UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.peer_timeout_ms, 2500);
	assert_round_trip(&cfg, "PeerTimeout 2500ms");
	config_free(&cfg);
	ck_assert_str_eq(parse_error(short_to, strlen(short_to), buf, sizeof(buf)),
			 "3:0: PeerTimeout 150ms is shorter than two AliveInterval (100 ms): an idle "
			 "live peer would be taken for a dead one");
	ck_assert_msg(strstr(parse_error(too_short, strlen(too_short), buf, sizeof(buf)),
			     "'40ms' is out of range; expected 50ms..86400s") != NULL, "%s", buf);
	ck_assert_msg(strstr(parse_error(bad_unit, strlen(bad_unit), buf, sizeof(buf)), "'3m'") != NULL,
		      "%s", buf);
	ck_assert_str_eq(parse_error(alarm, strlen(alarm), buf, sizeof(buf)),
			 "2:0: AliveInterval does not apply to Mode ALARM, which sends no ALIVE (its "
			 "peers are heard through their refreshes)");
	ck_assert_msg(strstr(parse_error(alive_big, strlen(alive_big), buf, sizeof(buf)), "2000") != NULL,
		      "%s", buf);
}
END_TEST

START_TEST(key_takes_at_most_two_absolute_paths)
{
	struct warnings ws = { 0 };
	struct config cfg;
	char buf[512];
	static const char three[] = "Sync { Key /k1\nKey /k2\nKey /k3\n" UDP_LINK "}";
	static const char twice[] = "Sync { Key /k1\nKey /k1\n" UDP_LINK "}";
	static const char relative[] = "Sync { Key k1\n" UDP_LINK "}";

	parse_ok(&cfg, "Sync { Mode FTFW { } " UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.nkeys, 0);
	config_free(&cfg);
	parse_ok(&cfg, "Sync { Mode FTFW { } Key /etc/ctsyncd/new.key\nKey /etc/ctsyncd/old.key\n"
		       UDP_LINK "}", &ws);
	ck_assert_uint_eq(cfg.sync.nkeys, 2);
	ck_assert_str_eq(cfg.sync.keys[0], "/etc/ctsyncd/new.key");
	ck_assert_str_eq(cfg.sync.keys[1], "/etc/ctsyncd/old.key");
	assert_round_trip(&cfg, "Key /etc/ctsyncd/old.key");
	config_free(&cfg);
	ck_assert_str_eq(parse_error(three, strlen(three), buf, sizeof(buf)),
			 "3:1: a third Key (/k3); at most two: the key that sends, and the one still "
			 "accepted while a pair rolls over (lines 1 and 2)");
	ck_assert_str_eq(parse_error(twice, strlen(twice), buf, sizeof(buf)),
			 "2:1: Key /k1 is given twice (line 1)");
	ck_assert_ptr_nonnull(strstr(parse_error(relative, strlen(relative), buf, sizeof(buf)),
				     "k1"));
}
END_TEST

START_TEST(booleans_ignore_case)
{
	const char *const words[] = { "on", "ON", "On", "yes", "YES", "off", "OFF", "no", "No" };
	struct config cfg;
	char text[100];
	unsigned i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		snprintf(text, sizeof(text), "General { NetlinkEventsReliable %s }", words[i]);
		parse_ok(&cfg, text, NULL);
		ck_assert_msg(cfg.general.netlink_events_reliable == (i < 5),
			      "'%s' read as %d", words[i], cfg.general.netlink_events_reliable);
		config_free(&cfg);
	}
}
END_TEST

START_TEST(overrun_resync_takes_on_off_or_seconds)
{
	struct config cfg;

	parse_ok(&cfg, "General { NetlinkOverrunResync off }", NULL);
	ck_assert_uint_eq(cfg.general.netlink_overrun_resync, 0);
	config_free(&cfg);
	parse_ok(&cfg, "General { NetlinkOverrunResync 0 NetlinkOverrunResync On }", NULL);
	ck_assert_uint_eq(cfg.general.netlink_overrun_resync, 30);
	config_free(&cfg);
	parse_ok(&cfg, "General { NetlinkOverrunResync 7 }", NULL);
	ck_assert_uint_eq(cfg.general.netlink_overrun_resync, 7);
	config_free(&cfg);
}
END_TEST

START_TEST(scheduler_type_and_priority)
{
	struct config cfg;

	parse_ok(&cfg, "General { Scheduler { Type fifo Priority 0 } }", NULL);
	ck_assert_int_eq(cfg.general.sched_policy, SCHED_FIFO);
	ck_assert_int_eq(cfg.general.sched_priority, 0);
	ck_assert(cfg.general.sched_priority_set);
	config_free(&cfg);
}
END_TEST

START_TEST(filter_reads_protocols_addresses_and_states)
{
	const struct config_filter *f;
	struct config cfg;
	char buf[INET6_ADDRSTRLEN];

	parse_ok(&cfg, "General { Filter From Kernelspace {\n"
		 "Protocol Accept { TCP udp UDPlite SCTP DCCP ICMP IPv6-ICMP ICMPv6 GRE ESP AH 47 }\n"
		 "Address Ignore { IPv4_address 127.0.0.1 IPv4_address 192.168.7.9/16 "
		 "IPv6_address 2001:db8::1/32 IPv6_address ::1 }\n"
		 "State Accept { ESTABLISHED CLOSED for TCP SYN_SENT LISTEN for TCP }\n} }", NULL);
	f = &cfg.general.filter;
	ck_assert(f->set);
	ck_assert(f->kernelspace);
	ck_assert(f->protocols.set && f->protocols.accept);
	ck_assert(f->protocols.bitmap[6 / 8] & (1 << (6 % 8)));
	ck_assert(f->protocols.bitmap[17 / 8] & (1 << (17 % 8)));
	ck_assert(f->protocols.bitmap[136 / 8] & (1 << (136 % 8)));
	ck_assert(f->protocols.bitmap[132 / 8] & (1 << (132 % 8)));
	ck_assert(f->protocols.bitmap[33 / 8] & (1 << (33 % 8)));
	ck_assert(f->protocols.bitmap[1 / 8] & (1 << (1 % 8)));
	ck_assert(f->protocols.bitmap[58 / 8] & (1 << (58 % 8)));
	ck_assert(f->protocols.bitmap[47 / 8] & (1 << (47 % 8)));
	ck_assert(f->protocols.bitmap[50 / 8] & (1 << (50 % 8)));
	ck_assert(f->protocols.bitmap[51 / 8] & (1 << (51 % 8)));
	ck_assert(!(f->protocols.bitmap[2 / 8] & (1 << (2 % 8))));

	ck_assert(f->addresses.set && !f->addresses.accept);
	ck_assert_uint_eq(f->addresses.count, 4);
	ck_assert_int_eq(f->addresses.addrs[0].family, AF_INET);
	ck_assert_uint_eq(f->addresses.addrs[0].prefix, 32);
	/* host bits are cleared, so consumers can compare networks directly */
	inet_ntop(AF_INET, &f->addresses.addrs[1].u.v4, buf, sizeof(buf));
	ck_assert_str_eq(buf, "192.168.0.0");
	ck_assert_uint_eq(f->addresses.addrs[1].prefix, 16);
	inet_ntop(AF_INET6, &f->addresses.addrs[2].u.v6, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2001:db8::");
	ck_assert_uint_eq(f->addresses.addrs[2].prefix, 32);
	ck_assert_uint_eq(f->addresses.addrs[3].prefix, 128);

	ck_assert(f->states.set && f->states.accept);
	ck_assert_uint_eq(f->states.tcp_states, (1 << 3) | (1 << 8) | (1 << 1) | (1 << 9));
	assert_round_trip(&cfg, "filter snippet");
	config_free(&cfg);
}
END_TEST

START_TEST(links_read_every_option_and_the_default)
{
	const struct config_sync *s;
	struct config cfg;

	parse_ok(&cfg, "Sync { Mode FTFW { }\n"
		 "TCP { IPv6_address fe80::1 IPv6_Destination_Address fe80::2 Port 3780 Interface veth0 "
		 "SndSocketBuffer 1000 RcvSocketBuffer 2000 Checksum off ErrorQueueLength 64 }\n"
		 "TCP Default { IPv4_address 10.0.0.1 IPv4_Destination_Address 10.0.0.2 Port 3781 "
		 "Interface veth1 } }", NULL);
	s = &cfg.sync;
	ck_assert_uint_eq(s->nlinks, 2);
	ck_assert_uint_eq(s->default_link, 1);
	ck_assert(s->links[1].is_default && !s->links[0].is_default);
	ck_assert_int_eq(s->links[0].family, AF_INET6);
	ck_assert_int_eq(s->links[0].local.family, AF_INET6);
	ck_assert_uint_eq(s->links[0].sndbuf, 1000);
	ck_assert_uint_eq(s->links[0].rcvbuf, 2000);
	ck_assert(!s->links[0].checksum);
	ck_assert_uint_eq(s->links[0].error_queue_len, 64);
	ck_assert_uint_eq(s->links[0].line, 2);
	ck_assert_int_eq(s->links[1].family, AF_INET);
	ck_assert_uint_eq(s->links[1].port, 3781);
	ck_assert_uint_eq(s->links[1].line, 3);
	assert_round_trip(&cfg, "TCP links");
	config_free(&cfg);

	parse_ok(&cfg, "Sync { Mode NOTRACK { } Multicast { IPv4_address 225.0.0.50 Group 3780 "
		 "IPv4_interface 192.168.100.100 Interface eth2 } }", NULL);
	s = &cfg.sync;
	ck_assert_int_eq(s->links[0].kind, CONFIG_LINK_MCAST);
	ck_assert_uint_eq(ntohl(s->links[0].local.u.v4.s_addr), 0xe1000032);
	ck_assert_uint_eq(ntohl(s->links[0].mcast_ifaddr.s_addr), 0xc0a86464);
	ck_assert_uint_eq(s->links[0].port, 3780);
	assert_round_trip(&cfg, "Multicast link");
	config_free(&cfg);
}
END_TEST

START_TEST(options_read_expectation_helpers)
{
	struct config cfg;

	parse_ok(&cfg, "Sync { Mode FTFW { } " UDP_LINK
		 "Options { TCPWindowTracking on ExpectationSync { ftp ras q.931 h.245 sip } } }", NULL);
	ck_assert(cfg.sync.tcp_window_tracking);
	ck_assert(cfg.sync.expectation_sync);
	ck_assert_uint_eq(cfg.sync.expect_helper_count, 5);
	ck_assert_str_eq(cfg.sync.expect_helpers[2], "q.931");
	assert_round_trip(&cfg, "ExpectationSync list");
	config_free(&cfg);

	parse_ok(&cfg, "Sync { Mode FTFW { } " UDP_LINK "Options { ExpectationSync On } }", NULL);
	ck_assert(cfg.sync.expectation_sync);
	ck_assert_uint_eq(cfg.sync.expect_helper_count, 0);
	config_free(&cfg);
}
END_TEST

/* ctsyncd.conf(5), LEXICAL CONVENTIONS: the compact form, newlines and all, parses as is */
START_TEST(compact_one_line_config_parses)
{
	static const char text[] =
		"Sync {\n"
		"  Mode FTFW { ResendQueueSize 131072  ACKWindowSize 300  DisableExternalCache off  StartupResync off }\n"
		"  UDP { IPv4_address 198.18.100.2  IPv4_Destination_Address 198.18.100.3\n"
		"        Port 3780  Interface vA  Checksum on }\n"
		"  Options { TCPWindowTracking off  ExpectationSync off }\n"
		"}\n"
		"General { Systemd off  HashSize 8192  HashLimit 65535  LogFile /tmp/ctA/ct.log  Syslog off\n"
		"          LockFile /tmp/ctA/ct.lock  UNIX { Path /tmp/ctA/ct.ctl }\n"
		"          NetlinkBufferSize 2097152  NetlinkBufferSizeMaxGrowth 8388608 }\n";
	struct config cfg, flat;
	char oneline[sizeof(text)], why[256];
	size_t i;

	parse_ok(&cfg, text, NULL);
	ck_assert_int_eq(cfg.role, CONFIG_ROLE_SYNC);
	ck_assert(!cfg.general.systemd);
	ck_assert_uint_eq(cfg.general.hash_size, 8192);
	ck_assert_str_eq(cfg.general.unix_path, "/tmp/ctA/ct.ctl");
	ck_assert_str_eq(cfg.general.lockfile, "/tmp/ctA/ct.lock");
	ck_assert_str_eq(cfg.sync.links[0].ifname, "vA");
	ck_assert_uint_eq(cfg.general.netlink_buffer_max_growth, 8388608);

	/* the same with every newline turned into a space: one single line */
	for (i = 0; i < sizeof(text); i++)
		oneline[i] = text[i] == '\n' ? ' ' : text[i];
	parse_ok(&flat, oneline, NULL);
	ck_assert_msg(config_same(&cfg, &flat, why, sizeof(why)), "one-line form differs: %s", why);
	config_free(&flat);
	config_free(&cfg);
}
END_TEST

/* ---- robustness --------------------------------------------------------- */

START_TEST(nul_byte_in_comment_is_ignored_and_elsewhere_rejected)
{
	static const char ok[] = "# a \0 in a comment\nGeneral { HashSize 5 }";
	static const char bad[] = "General {\n HashSize 5\0 }";
	struct config_error err;
	struct config cfg;
	char got[1024];

	ck_assert_int_eq(config_parse_buffer(&cfg, "nul", ok, sizeof(ok) - 1, &err, NULL, NULL), 0);
	ck_assert_uint_eq(cfg.general.hash_size, 5);
	config_free(&cfg);
	parse_error(bad, sizeof(bad) - 1, got, sizeof(got));
	ck_assert_str_eq(got, "2:12: invalid character '\\x00' (control bytes are only allowed in "
			 "comments); expected an option of block General (" GENERAL_OPTS ") or '}'");
}
END_TEST

START_TEST(buffer_is_not_read_past_its_length)
{
	/* "HashSize 12" is cut to "HashSize 1": the parser must stop at len */
	static const char text[] = "General { HashSize 12 }";
	struct config_error err;
	struct config cfg;

	ck_assert_int_eq(config_parse_buffer(&cfg, "cut", text, 20, &err, NULL, NULL), -1);
	ck_assert_uint_eq(err.column, 21);
	ck_assert_msg(strstr(err.message, "end of file") != NULL, "got %s", err.message);
}
END_TEST

START_TEST(huge_token_is_quoted_short)
{
	size_t n = 1 << 20;
	char *text = malloc(n + 20);
	char got[1024];

	ck_assert_ptr_nonnull(text);
	memcpy(text, "General { ", 10);
	memset(text + 10, 'A', n);
	memcpy(text + 10 + n, " }", 2);
	parse_error(text, n + 12, got, sizeof(got));
	ck_assert_str_eq(got, "1:11: unknown option 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...' "
			 "in block General; expected " GENERAL_OPTS);
	free(text);
}
END_TEST

START_TEST(many_filter_addresses_are_kept)
{
	size_t cap = 40 * 5000 + 100, used = 0;
	char *text = malloc(cap);
	struct config cfg;
	unsigned i;

	ck_assert_ptr_nonnull(text);
	used += (size_t)snprintf(text, cap, "General { Filter { Address Ignore {\n");
	for (i = 0; i < 5000; i++)
		used += (size_t)snprintf(text + used, cap - used, "IPv4_address 10.%u.%u.1\n",
					 i / 256, i % 256);
	snprintf(text + used, cap - used, "} } }");
	parse_ok(&cfg, text, NULL);
	ck_assert_uint_eq(cfg.general.filter.addresses.count, 5000);
	ck_assert_uint_eq(ntohl(cfg.general.filter.addresses.addrs[4999].u.v4.s_addr),
			  (10u << 24) | (19u << 16) | (135u << 8) | 1u);
	assert_round_trip(&cfg, "5000 addresses");
	config_free(&cfg);
	free(text);
}
END_TEST

START_TEST(free_is_safe_on_zeroed_and_defaulted_configs)
{
	struct config cfg;

	memset(&cfg, 0, sizeof(cfg));
	config_free(&cfg);
	config_defaults(&cfg);
	config_free(&cfg);
	config_free(&cfg);
}
END_TEST

START_TEST(missing_file_is_reported_with_its_reason)
{
	struct config_error err;
	struct config cfg;

	ck_assert_int_eq(config_parse_file(&cfg, "/nonexistent/ctsyncd.conf", &err, NULL, NULL), -1);
	ck_assert_str_eq(err.file, "/nonexistent/ctsyncd.conf");
	ck_assert_msg(strstr(err.message, strerror(ENOENT)) != NULL, "got %s", err.message);
	config_free(&cfg);
}
END_TEST

/* ---- UNIX { Group }: ctsyncd's own ------------------------------------- */

/* Write `text` to a temporary file and parse it as the daemon does. */
static int
parse_temp_file(struct config *cfg, const char *text, struct config_error *err, char *path,
		size_t pathlen)
{
	int fd, ret;

	snprintf(path, pathlen, "/tmp/ctsyncd-check-config-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ret = config_parse_file(cfg, path, err, NULL, NULL);
	unlink(path);
	return ret;
}

START_TEST(unix_group_takes_a_numeric_gid_as_it_is)
{
	struct config cfg;
	char *text;

	parse_ok(&cfg, "General { UNIX { Path /run/x.sock Group 4242 } }", NULL);
	ck_assert_str_eq(cfg.general.unix_group, "4242");
	ck_assert_uint_eq(cfg.general.unix_gid, 4242);
	text = print_to_string(&cfg);
	ck_assert_msg(strstr(text, "\t\tGroup 4242\t# ctsyncd's own option\n") != NULL, "printed:\n%s", text);
	free(text);
	assert_round_trip(&cfg, "Group 4242");
	config_free(&cfg);
}
END_TEST

START_TEST(unix_group_name_is_looked_up_by_parse_file_and_printed)
{
	struct config_error err;
	struct config cfg;
	char path[64], *text;

	/* The parser alone makes no lookup... */
	parse_ok(&cfg, "General { UNIX { Group root } }", NULL);
	ck_assert_str_eq(cfg.general.unix_group, "root");
	ck_assert_uint_eq(cfg.general.unix_gid, CONFIG_NO_GID);
	config_free(&cfg);
	/* ...reading the file does: root is gid 0 everywhere. */
	ck_assert_msg(parse_temp_file(&cfg, "General {\n\tUNIX { Group root }\n}\n", &err, path,
				      sizeof(path)) == 0, "%u:%u: %s", err.line, err.column, err.message);
	ck_assert_str_eq(cfg.general.unix_group, "root");
	ck_assert_uint_eq(cfg.general.unix_gid, 0);
	text = print_to_string(&cfg);
	ck_assert_msg(strstr(text, "\t\tGroup root\t# gid 0; ctsyncd's own option\n") != NULL,
		      "printed:\n%s", text);
	free(text);
	config_free(&cfg);
}
END_TEST

START_TEST(rejects_unknown_unix_group_naming_it)
{
	struct config_error err;
	struct config cfg;
	char path[64];

	ck_assert_int_eq(parse_temp_file(&cfg, "General {\n\tUNIX {\n\t\tPath /run/x.sock\n"
					 "\t\tGroup ctsyncd-no-such-group\n\t}\n}\n", &err, path,
					 sizeof(path)), -1);
	ck_assert_str_eq(err.file, path);
	ck_assert_uint_eq(err.line, 4);
	ck_assert_uint_eq(err.column, 9);
	ck_assert_str_eq(err.message, "unknown group 'ctsyncd-no-such-group' in UNIX { Group }: no "
			 "such group in the group database; give an existing group or a numeric gid");
	config_free(&cfg);
}
END_TEST

START_TEST(names_of_modes_and_link_kinds)
{
	ck_assert_str_eq(config_mode_name(CONFIG_MODE_FTFW), "FTFW");
	ck_assert_str_eq(config_mode_name(CONFIG_MODE_NOTRACK), "NOTRACK");
	ck_assert_str_eq(config_mode_name(CONFIG_MODE_ALARM), "ALARM");
	ck_assert_str_eq(config_link_kind_name(CONFIG_LINK_MCAST), "Multicast");
	ck_assert_str_eq(config_link_kind_name(CONFIG_LINK_UDP), "UDP");
	ck_assert_str_eq(config_link_kind_name(CONFIG_LINK_TCP), "TCP");
}
END_TEST

/* ---- files: the sample, Debian's examples ------------------------------- */

static void
parse_file_ok(struct config *cfg, const char *path)
{
	struct config_error err;

	ck_assert_msg(config_parse_file(cfg, path, &err, NULL, NULL) == 0,
		      "%s:%u:%u: %s", err.file, err.line, err.column, err.message);
}

START_TEST(sample_file_parses_and_round_trips)
{
	struct config cfg;
	char path[4096];

	snprintf(path, sizeof(path), "%s/conntrackd.conf.sample", srcdir());
	parse_file_ok(&cfg, path);
	ck_assert_int_eq(cfg.role, CONFIG_ROLE_SYNC);
	assert_round_trip(&cfg, path);
	config_free(&cfg);
}
END_TEST

/* Every keyword of the grammar must be documented in the sample. */
START_TEST(sample_file_documents_every_option)
{
	static const char *const keywords[] = {
		"General", "HashSize", "HashLimit", "LogFile", "Syslog", "LockFile", "UNIX", "Path",
		"Backlog", "NetlinkBufferSize", "SocketBufferSize", "NetlinkBufferSizeMaxGrowth",
		"SocketBufferSizeMaxGrown", "SocketBufferSizeMaxGrowth", "NetlinkOverrunResync",
		"NetlinkEventsReliable", "PollSecs", "EventIterationLimit", "EventSource", "Nice", "Scheduler",
		"Type", "Priority", "Systemd", "Filter", "From", "Userspace", "Kernelspace",
		"Protocol", "Accept", "Ignore", "Address", "IPv4_address", "IPv6_address", "State",
		"for TCP", "Sync", "Mode", "FTFW", "NOTRACK", "ALARM", "ResendQueueSize",
		"ACKWindowSize", "CommitTimeout", "PurgeTimeout", "DisableExternalCache",
		"DisableInternalCache", "StartupResync", "HotStandby", "RefreshTime", "CacheTimeout", "Multicast",
		"UDP", "TCP", "Default", "IPv4_Destination_Address", "IPv6_Destination_Address",
		"IPv4_interface", "IPv6_interface", "Interface", "Group", "Port", "SndSocketBuffer",
		"RcvSocketBuffer", "Checksum", "ErrorQueueLength", "Options", "TCPWindowTracking",
		"ExpectationSync", "Stats", "Helper", "persistent", "nack", "PeerTimeout", "Health",
		"PeerSilentWarning", "ResendBacklogWarning", "ResendBacklogCritical", "RecentErrors",
	};
	char path[4096], *text;
	size_t i, len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/conntrackd.conf.sample", srcdir());
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
	text = calloc(1, 1 << 20);
	ck_assert_ptr_nonnull(text);
	len = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	ck_assert_uint_gt(len, 0);
	for (i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		ck_assert_msg(strstr(text, keywords[i]) != NULL,
			      "%s does not mention %s", path, keywords[i]);
	free(text);
}
END_TEST

static unsigned examples_found;
static char examples_failure[sizeof(((struct config_error *)0)->file) + 600];

static int
check_example(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *base = path + ftw->base;
	struct config_error err;
	struct config cfg;

	(void)st;
	if (type != FTW_F || strcmp(base, "conntrackd.conf") != 0)
		return 0;
	examples_found++;
	if (config_parse_file(&cfg, path, &err, NULL, NULL) < 0) {
		snprintf(examples_failure, sizeof(examples_failure), "%s:%u:%u: %s",
			 err.file, err.line, err.column, err.message);
		return 1;
	}
	assert_round_trip(&cfg, path);
	config_free(&cfg);
	return 0;
}

START_TEST(debian_examples_parse)
{
	struct stat st;

	ck_assert_msg(stat(DEBIAN_EXAMPLES, &st) == 0 && S_ISDIR(st.st_mode),
		      "%s is missing: install the conntrackd package (apt-get install conntrackd) "
		      "to check that its example configurations parse", DEBIAN_EXAMPLES);
	examples_found = 0;
	examples_failure[0] = '\0';
	ck_assert_int_eq(nftw(DEBIAN_EXAMPLES, check_example, 16, FTW_PHYS), examples_failure[0] ? 1 : 0);
	ck_assert_msg(examples_failure[0] == '\0', "example does not parse: %s", examples_failure);
	ck_assert_msg(examples_found >= 4, "expected at least 4 conntrackd.conf under %s, found %u",
		      DEBIAN_EXAMPLES, examples_found);
}
END_TEST

static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("rejects");
	tcase_add_loop_test(tc, rejects_bad_snippet, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	suite_add_tcase(s, tc);

	tc = tcase_create("accepts");
	tcase_add_loop_test(tc, accepts_good_snippet, 0, (int)(sizeof(good_cases) / sizeof(good_cases[0])));
	tcase_add_test(tc, sync_with_one_udp_link_has_every_default);
	tcase_add_test(tc, empty_file_has_no_role_and_defaults);
	tcase_add_test(tc, stats_block_selects_stats_role_and_log_file_on_means_ctsyncd_path);
	tcase_add_test(tc, conflicting_stats_syslog_facility_follows_general_with_a_warning);
	tcase_add_test(tc, default_path_is_under_sysconfdir_ctsyncd);
	tcase_add_test(tc, socket_buffer_aliases_set_netlink_buffer_options);
	tcase_add_test(tc, legacy_mode_names_are_accepted_with_a_warning);
	tcase_add_test(tc, what_1_4_7_only_warns_about_starts_with_a_warning);
	tcase_add_test(tc, missing_mode_means_ftfw_with_a_warning);
	tcase_add_test(tc, nice_and_ipv6_interface_are_accepted_with_a_warning);
	tcase_add_test(tc, sync_level_timers_apply_to_the_mode);
	tcase_add_test(tc, disable_external_cache_forces_commit_timeout_zero);
	tcase_add_test(tc, hot_standby_parses_and_excludes_disable_external_cache);
	tcase_add_test(tc, peer_timeout_and_health_thresholds);
	tcase_add_test(tc, peer_timeout_takes_milliseconds_and_alive_interval_bounds_it);
	tcase_add_test(tc, key_takes_at_most_two_absolute_paths);
	tcase_add_test(tc, booleans_ignore_case);
	tcase_add_test(tc, overrun_resync_takes_on_off_or_seconds);
	tcase_add_test(tc, scheduler_type_and_priority);
	tcase_add_test(tc, filter_reads_protocols_addresses_and_states);
	tcase_add_test(tc, links_read_every_option_and_the_default);
	tcase_add_test(tc, options_read_expectation_helpers);
	tcase_add_test(tc, compact_one_line_config_parses);
	suite_add_tcase(s, tc);

	tc = tcase_create("robustness");
	tcase_add_test(tc, nul_byte_in_comment_is_ignored_and_elsewhere_rejected);
	tcase_add_test(tc, buffer_is_not_read_past_its_length);
	tcase_add_test(tc, huge_token_is_quoted_short);
	tcase_add_test(tc, many_filter_addresses_are_kept);
	tcase_add_test(tc, free_is_safe_on_zeroed_and_defaulted_configs);
	tcase_add_test(tc, missing_file_is_reported_with_its_reason);
	tcase_add_test(tc, names_of_modes_and_link_kinds);
	tcase_add_test(tc, unix_group_takes_a_numeric_gid_as_it_is);
	tcase_add_test(tc, unix_group_name_is_looked_up_by_parse_file_and_printed);
	tcase_add_test(tc, rejects_unknown_unix_group_naming_it);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_test(tc, sample_file_parses_and_round_trips);
	tcase_add_test(tc, sample_file_documents_every_option);
	tcase_add_test(tc, debian_examples_parse);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
