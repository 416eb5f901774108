/*
 * check_flow_filter.c - the Filter: protocol, address (exact and CIDR,
 * IPv4 and IPv6, DNAT) and TCP state parts, Accept and Ignore, the order of
 * the parts, the counters, and a randomized cross-check of the address
 * lookup against a linear scan.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config/config.h"
#include "flow/flow.h"
#include "flow/filter.h"

/* Kernel tcp_conntrack numbers (protocol.md §2.7, NTA 4). */
enum { TCP_SYN_SENT = 1, TCP_ESTABLISHED = 3, TCP_TIME_WAIT = 7, TCP_CLOSE = 8 };

/* "a.b.c.d[/n]" or "x:y::z[/n]" as the config parser would give it. */
static struct config_addr caddr(const char *text)
{
	struct config_addr a;
	char buf[64];
	char *slash;

	memset(&a, 0, sizeof(a));
	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, &a.u.v4) == 1) {
		a.family = AF_INET;
		a.prefix = 32;
	} else {
		ck_assert_msg(inet_pton(AF_INET6, buf, &a.u.v6) == 1, "bad test address %s", text);
		a.family = AF_INET6;
		a.prefix = 128;
	}
	if (slash)
		a.prefix = (uint8_t)atoi(slash + 1);
	return a;
}

/* A flow src -> dst with l4proto, ports, optional TCP state. */
static void make_flow(struct flow_full *ff, const char *src, const char *dst, uint8_t l4proto)
{
	int family = strchr(src, ':') ? AF_INET6 : AF_INET;

	memset(ff, 0, sizeof(*ff));
	ff->flow.orig.family = (uint8_t)family;
	ff->flow.orig.l4proto = l4proto;
	ck_assert(inet_pton(family, src, &ff->flow.orig.src) == 1);
	ck_assert(inet_pton(family, dst, &ff->flow.orig.dst) == 1);
	if (l4proto == IPPROTO_TCP || l4proto == IPPROTO_UDP || l4proto == IPPROTO_SCTP) {
		ff->flow.attrs |= FLOW_A_PORTS;
		ff->flow.orig.l4.port.sport = htons(40000);
		ff->flow.orig.l4.port.dport = htons(80);
	}
	if (l4proto == IPPROTO_TCP) {
		ff->flow.attrs |= FLOW_A_PROTO_STATE;
		ff->flow.proto_state = TCP_ESTABLISHED;
	}
}

static void set_dnat(struct flow_full *ff, const char *to)
{
	ff->flow.attrs |= FLOW_A_DNAT;
	ck_assert(inet_pton(ff->flow.orig.family, to, &ff->ext.dnat) == 1);
}

static struct flow_filter *build(const struct config_filter *cfg)
{
	int err = 0;
	struct flow_filter *f = flow_filter_new(cfg, &err);

	ck_assert_msg(f != NULL, "flow_filter_new failed: %d", err);
	return f;
}

/* A filter with only an Address part listing `addrs`. */
static struct flow_filter *addr_filter(bool accept, const char *const *addrs, unsigned n)
{
	struct config_filter cfg;
	struct config_addr *list = calloc(n ? n : 1, sizeof(*list));
	struct flow_filter *f;

	memset(&cfg, 0, sizeof(cfg));
	for (unsigned i = 0; i < n; i++)
		list[i] = caddr(addrs[i]);
	cfg.set = true;
	cfg.addresses.set = true;
	cfg.addresses.accept = accept;
	cfg.addresses.count = n;
	cfg.addresses.addrs = list;
	f = build(&cfg);
	free(list);             /* the filter must not keep pointers into the config */
	return f;
}

static enum flow_filter_verdict verdict(const struct flow_filter *f, const char *src,
					const char *dst)
{
	struct flow_full ff;

	make_flow(&ff, src, dst, IPPROTO_UDP);
	return flow_filter_check(f, &ff.flow, &ff.ext);
}

START_TEST(no_filter_passes_everything)
{
	struct config_filter cfg;
	struct flow_filter *f;
	struct flow_full ff;

	memset(&cfg, 0, sizeof(cfg));
	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_ICMP);
	f = build(NULL);
	ck_assert(flow_filter_is_empty(f));
	ck_assert(flow_filter_pass_full(f, &ff));
	flow_filter_free(f);
	f = build(&cfg);
	ck_assert(flow_filter_is_empty(f));
	flow_filter_free(f);
	cfg.set = true;         /* Filter { } with no part */
	f = build(&cfg);
	ck_assert(flow_filter_is_empty(f));
	ck_assert(flow_filter_pass_full(f, &ff));
	flow_filter_free(f);
}
END_TEST

static struct flow_filter *proto_filter(bool accept, const uint8_t *protos, unsigned n)
{
	struct config_filter cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.set = true;
	cfg.protocols.set = true;
	cfg.protocols.accept = accept;
	for (unsigned i = 0; i < n; i++)
		cfg.protocols.bitmap[protos[i] / 8] |= (uint8_t)(1u << (protos[i] % 8));
	return build(&cfg);
}

START_TEST(protocol_accept_passes_only_listed)
{
	const uint8_t p[] = { IPPROTO_TCP, IPPROTO_UDP, 255 };
	struct flow_filter *f = proto_filter(true, p, 3);
	struct flow_full ff;

	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_TCP);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_PASS);
	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_UDP);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_PASS);
	make_flow(&ff, "10.0.0.1", "10.0.0.2", 255);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_PASS);
	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_ICMP);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_DROP_PROTO);
	make_flow(&ff, "2001:db8::1", "2001:db8::2", IPPROTO_ICMPV6);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_DROP_PROTO);
	flow_filter_free(f);
}
END_TEST

START_TEST(protocol_ignore_drops_only_listed)
{
	const uint8_t p[] = { IPPROTO_ICMP, IPPROTO_ICMPV6, 0 };
	struct flow_filter *f = proto_filter(false, p, 3);
	struct flow_full ff;

	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_ICMP);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_DROP_PROTO);
	make_flow(&ff, "2001:db8::1", "2001:db8::2", IPPROTO_ICMPV6);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_DROP_PROTO);
	make_flow(&ff, "10.0.0.1", "10.0.0.2", 0);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_DROP_PROTO);
	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_TCP);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_PASS);
	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_GRE);
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, NULL), FLOW_FILTER_PASS);
	flow_filter_free(f);
}
END_TEST

START_TEST(address_accept_matches_either_endpoint)
{
	const char *const a[] = { "192.168.1.1", "2001:db8::1" };
	struct flow_filter *f = addr_filter(true, a, 2);

	ck_assert_int_eq(verdict(f, "192.168.1.1", "8.8.8.8"), FLOW_FILTER_PASS);   /* orig src */
	ck_assert_int_eq(verdict(f, "8.8.8.8", "192.168.1.1"), FLOW_FILTER_PASS);   /* reply src */
	ck_assert_int_eq(verdict(f, "192.168.1.2", "8.8.8.8"), FLOW_FILTER_DROP_ADDR);
	ck_assert_int_eq(verdict(f, "2001:db8::1", "2001:db8::99"), FLOW_FILTER_PASS);
	ck_assert_int_eq(verdict(f, "2001:db8::99", "2001:db8::1"), FLOW_FILTER_PASS);
	ck_assert_int_eq(verdict(f, "2001:db8::2", "2001:db8::3"), FLOW_FILTER_DROP_ADDR);
	/* An IPv4 address never matches the IPv6 flow with the same first bytes. */
	ck_assert_int_eq(verdict(f, "c0a8:101::", "::1"), FLOW_FILTER_DROP_ADDR);
	flow_filter_free(f);
}
END_TEST

START_TEST(address_accept_of_one_family_drops_the_other)
{
	const char *const a[] = { "10.0.0.0/8" };
	struct flow_filter *f = addr_filter(true, a, 1);

	ck_assert_int_eq(verdict(f, "10.1.1.1", "10.2.2.2"), FLOW_FILTER_PASS);
	ck_assert_int_eq(verdict(f, "2001:db8::1", "2001:db8::2"), FLOW_FILTER_DROP_ADDR);
	flow_filter_free(f);
}
END_TEST

START_TEST(address_ignore_drops_either_endpoint)
{
	const char *const a[] = { "127.0.0.1", "192.168.100.100", "::1", "fe80::1" };
	struct flow_filter *f = addr_filter(false, a, 4);

	ck_assert_int_eq(verdict(f, "127.0.0.1", "127.0.0.1"), FLOW_FILTER_DROP_ADDR);
	ck_assert_int_eq(verdict(f, "192.168.100.100", "10.0.0.1"), FLOW_FILTER_DROP_ADDR);
	ck_assert_int_eq(verdict(f, "10.0.0.1", "192.168.100.100"), FLOW_FILTER_DROP_ADDR);
	ck_assert_int_eq(verdict(f, "10.0.0.1", "10.0.0.2"), FLOW_FILTER_PASS);
	ck_assert_int_eq(verdict(f, "fe80::2", "fe80::1"), FLOW_FILTER_DROP_ADDR);
	ck_assert_int_eq(verdict(f, "::1", "::2"), FLOW_FILTER_DROP_ADDR);
	ck_assert_int_eq(verdict(f, "fe80::2", "fe80::3"), FLOW_FILTER_PASS);
	flow_filter_free(f);
}
END_TEST

struct cidr_case {
	const char *net;
	const char *inside[3];
	const char *outside[3];
};

static void check_cidr(const struct cidr_case *c)
{
	for (int accept = 0; accept <= 1; accept++) {
		struct flow_filter *f = addr_filter(accept, &c->net, 1);
		const char *other = strchr(c->net, ':') ? "3fff:ffff::1" : "203.0.113.77";

		for (int i = 0; i < 3 && c->inside[i]; i++) {
			enum flow_filter_verdict v = verdict(f, c->inside[i], other);

			ck_assert_msg(v == (accept ? FLOW_FILTER_PASS : FLOW_FILTER_DROP_ADDR),
				      "%s %s: %s should match, verdict %d",
				      accept ? "Accept" : "Ignore", c->net, c->inside[i], v);
			v = verdict(f, other, c->inside[i]);
			ck_assert_msg(v == (accept ? FLOW_FILTER_PASS : FLOW_FILTER_DROP_ADDR),
				      "%s %s: %s as reply src should match, verdict %d",
				      accept ? "Accept" : "Ignore", c->net, c->inside[i], v);
		}
		for (int i = 0; i < 3 && c->outside[i]; i++) {
			enum flow_filter_verdict v = verdict(f, c->outside[i], other);

			ck_assert_msg(v == (accept ? FLOW_FILTER_DROP_ADDR : FLOW_FILTER_PASS),
				      "%s %s: %s should not match, verdict %d",
				      accept ? "Accept" : "Ignore", c->net, c->outside[i], v);
		}
		flow_filter_free(f);
	}
}

START_TEST(cidr_ipv4_prefixes)
{
	static const struct cidr_case cases[] = {
		{ "0.0.0.0/0", { "1.2.3.4", "255.255.255.255", "0.0.0.0" }, { NULL } },
		{ "10.0.0.0/8", { "10.0.0.0", "10.255.255.255", "10.1.2.3" },
		  { "11.0.0.0", "9.255.255.255", "138.0.0.1" } },
		{ "192.168.7.0/24", { "192.168.7.0", "192.168.7.255", "192.168.7.9" },
		  { "192.168.6.255", "192.168.8.0", "192.169.7.1" } },
		{ "172.16.5.4/32", { "172.16.5.4" }, { "172.16.5.5", "172.16.5.3", "172.16.4.4" } },
		{ "172.16.0.0/12", { "172.16.0.0", "172.31.255.255" },
		  { "172.32.0.0", "172.15.255.255" } },
		/* Host bits beyond the prefix are masked away: this is 10.0.0.0/8. */
		{ "10.1.2.3/8", { "10.200.0.1", "10.1.2.3" }, { "11.1.2.3" } },
	};

	/* The "other" endpoint must not match /0, so /0 is checked as inside only. */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_cidr(&cases[i]);
}
END_TEST

START_TEST(cidr_ipv6_prefixes)
{
	static const struct cidr_case cases[] = {
		{ "::/0", { "::", "2001:db8::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" },
		  { NULL } },
		{ "2001:db8:1:2::/64", { "2001:db8:1:2::", "2001:db8:1:2:ffff:ffff:ffff:ffff" },
		  { "2001:db8:1:3::", "2001:db8:1:1:ffff:ffff:ffff:ffff", "2001:db9:1:2::" } },
		{ "2001:db8::5/128", { "2001:db8::5" },
		  { "2001:db8::4", "2001:db8::6", "2001:db8:0:1::5" } },
		{ "2001:db8:abcd::/48", { "2001:db8:abcd:ffff::1" }, { "2001:db8:abce::1" } },
		{ "fe80::/10", { "fe80::1", "febf:ffff::1" }, { "fec0::1", "fe7f::1" } },
		{ "2001:db8::2/127", { "2001:db8::2", "2001:db8::3" },
		  { "2001:db8::4", "2001:db8::1" } },
		{ "2001:db8:0:0:1::/65", { "2001:db8::1:0:0:1", "2001:db8::7fff:0:0:0" },
		  { "2001:db8::8000:0:0:0", "2001:db8:0:1::" } },
		{ "2001:db8::/33", { "2001:db8:7fff::1" }, { "2001:db8:8000::1" } },
		{ "2001:db8::/96", { "2001:db8::ffff:ffff" }, { "2001:db8::1:0:0" } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_cidr(&cases[i]);
}
END_TEST

START_TEST(dnat_reply_source_is_the_real_server)
{
	/* Client 198.51.100.7 -> VIP 203.0.113.10:80, DNAT'ed to 10.0.0.5. */
	const char *const server[] = { "10.0.0.5" };
	const char *const vip[] = { "203.0.113.10" };
	struct flow_filter *acc = addr_filter(true, server, 1);
	struct flow_filter *acc_vip = addr_filter(true, vip, 1);
	struct flow_filter *ign = addr_filter(false, server, 1);
	struct flow_full ff;

	make_flow(&ff, "198.51.100.7", "203.0.113.10", IPPROTO_TCP);
	set_dnat(&ff, "10.0.0.5");
	ck_assert_int_eq(flow_filter_check(acc, &ff.flow, &ff.ext), FLOW_FILTER_PASS);
	ck_assert_int_eq(flow_filter_check(ign, &ff.flow, &ff.ext), FLOW_FILTER_DROP_ADDR);
	/* The pre-DNAT destination is not an endpoint of the connection. */
	ck_assert_int_eq(flow_filter_check(acc_vip, &ff.flow, &ff.ext), FLOW_FILTER_DROP_ADDR);
	/* Without DNAT the destination is the reply source. */
	make_flow(&ff, "198.51.100.7", "203.0.113.10", IPPROTO_TCP);
	ck_assert_int_eq(flow_filter_check(acc_vip, &ff.flow, &ff.ext), FLOW_FILTER_PASS);
	ck_assert_int_eq(flow_filter_check(acc, &ff.flow, &ff.ext), FLOW_FILTER_DROP_ADDR);
	flow_filter_free(acc);
	flow_filter_free(acc_vip);
	flow_filter_free(ign);
}
END_TEST

START_TEST(dnat_ipv6)
{
	const char *const server[] = { "2001:db8:10::/64" };
	struct flow_filter *acc = addr_filter(true, server, 1);
	struct flow_full ff;

	make_flow(&ff, "2001:db8:99::7", "2001:db8:1::10", IPPROTO_UDP);
	ck_assert_int_eq(flow_filter_check(acc, &ff.flow, &ff.ext), FLOW_FILTER_DROP_ADDR);
	set_dnat(&ff, "2001:db8:10::5");
	ck_assert_int_eq(flow_filter_check(acc, &ff.flow, &ff.ext), FLOW_FILTER_PASS);
	flow_filter_free(acc);
}
END_TEST

START_TEST(snat_address_is_not_an_endpoint)
{
	/* LAN 10.0.0.5 -> 8.8.8.8, SNAT'ed to 203.0.113.1: endpoints are 10.0.0.5 and 8.8.8.8. */
	const char *const pub[] = { "203.0.113.1" };
	struct flow_filter *acc = addr_filter(true, pub, 1);
	struct flow_full ff;

	make_flow(&ff, "10.0.0.5", "8.8.8.8", IPPROTO_UDP);
	ff.flow.attrs |= FLOW_A_SNAT;
	ck_assert(inet_pton(AF_INET, "203.0.113.1", &ff.ext.snat) == 1);
	ck_assert_int_eq(flow_filter_check(acc, &ff.flow, &ff.ext), FLOW_FILTER_DROP_ADDR);
	flow_filter_free(acc);
}
END_TEST

START_TEST(empty_address_lists)
{
	struct flow_filter *acc = addr_filter(true, NULL, 0);
	struct flow_filter *ign = addr_filter(false, NULL, 0);

	ck_assert(!flow_filter_is_empty(acc));
	ck_assert_int_eq(verdict(acc, "10.0.0.1", "10.0.0.2"), FLOW_FILTER_DROP_ADDR);
	ck_assert_int_eq(verdict(ign, "10.0.0.1", "10.0.0.2"), FLOW_FILTER_PASS);
	flow_filter_free(acc);
	flow_filter_free(ign);
}
END_TEST

START_TEST(duplicate_and_overlapping_entries)
{
	const char *const a[] = { "10.0.0.1", "10.0.0.1", "10.0.0.0/24", "10.0.0.0/24",
				  "10.0.0.9/24", "10.0.0.0/16" };
	struct flow_filter *f = addr_filter(true, a, 6);

	ck_assert_int_eq(verdict(f, "10.0.0.1", "1.1.1.1"), FLOW_FILTER_PASS);
	ck_assert_int_eq(verdict(f, "10.0.0.200", "1.1.1.1"), FLOW_FILTER_PASS);
	ck_assert_int_eq(verdict(f, "10.0.200.1", "1.1.1.1"), FLOW_FILTER_PASS);
	ck_assert_int_eq(verdict(f, "10.1.0.1", "1.1.1.1"), FLOW_FILTER_DROP_ADDR);
	flow_filter_free(f);
}
END_TEST

START_TEST(rejects_invalid_addresses)
{
	struct config_filter cfg;
	struct config_addr a[2];
	int err = 0;

	memset(&cfg, 0, sizeof(cfg));
	a[0] = caddr("10.0.0.1");
	a[1] = caddr("10.0.0.2");
	a[1].prefix = 33;
	cfg.set = true;
	cfg.addresses.set = true;
	cfg.addresses.count = 2;
	cfg.addresses.addrs = a;
	ck_assert_ptr_null(flow_filter_new(&cfg, &err));
	ck_assert_int_eq(err, -EINVAL);
	a[1] = caddr("::1");
	a[1].prefix = 129;
	err = 0;
	ck_assert_ptr_null(flow_filter_new(&cfg, &err));
	ck_assert_int_eq(err, -EINVAL);
	a[1].family = 0;
	err = 0;
	ck_assert_ptr_null(flow_filter_new(&cfg, &err));
	ck_assert_int_eq(err, -EINVAL);
}
END_TEST

static struct flow_filter *state_filter(bool accept, uint16_t states)
{
	struct config_filter cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.set = true;
	cfg.states.set = true;
	cfg.states.accept = accept;
	cfg.states.tcp_states = states;
	return build(&cfg);
}

static enum flow_filter_verdict state_verdict(const struct flow_filter *f, uint8_t l4proto,
					      int state)
{
	struct flow_full ff;

	make_flow(&ff, "10.0.0.1", "10.0.0.2", l4proto);
	if (state < 0) {
		ff.flow.attrs &= ~FLOW_A_PROTO_STATE;
		ff.flow.proto_state = 0;
	} else {
		ff.flow.attrs |= FLOW_A_PROTO_STATE;
		ff.flow.proto_state = (uint8_t)state;
	}
	return flow_filter_check(f, &ff.flow, &ff.ext);
}

START_TEST(state_accept_concerns_tcp_only)
{
	struct flow_filter *f = state_filter(true, 1u << TCP_ESTABLISHED);

	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, TCP_ESTABLISHED), FLOW_FILTER_PASS);
	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, TCP_SYN_SENT), FLOW_FILTER_DROP_STATE);
	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, TCP_TIME_WAIT), FLOW_FILTER_DROP_STATE);
	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, 0), FLOW_FILTER_DROP_STATE);    /* NONE */
	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, 200), FLOW_FILTER_DROP_STATE);  /* junk */
	/* Not concerned: TCP without a state, and every other protocol. */
	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, -1), FLOW_FILTER_PASS);
	ck_assert_int_eq(state_verdict(f, IPPROTO_UDP, -1), FLOW_FILTER_PASS);
	ck_assert_int_eq(state_verdict(f, IPPROTO_SCTP, 1), FLOW_FILTER_PASS);
	ck_assert_int_eq(state_verdict(f, IPPROTO_DCCP, 2), FLOW_FILTER_PASS);
	ck_assert_int_eq(state_verdict(f, IPPROTO_ICMP, -1), FLOW_FILTER_PASS);
	flow_filter_free(f);
}
END_TEST

START_TEST(state_ignore_concerns_tcp_only)
{
	struct flow_filter *f = state_filter(false, 1u << TCP_TIME_WAIT | 1u << TCP_CLOSE);

	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, TCP_TIME_WAIT), FLOW_FILTER_DROP_STATE);
	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, TCP_CLOSE), FLOW_FILTER_DROP_STATE);
	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, TCP_ESTABLISHED), FLOW_FILTER_PASS);
	ck_assert_int_eq(state_verdict(f, IPPROTO_TCP, -1), FLOW_FILTER_PASS);
	ck_assert_int_eq(state_verdict(f, IPPROTO_SCTP, TCP_TIME_WAIT), FLOW_FILTER_PASS);
	ck_assert_int_eq(state_verdict(f, IPPROTO_UDP, -1), FLOW_FILTER_PASS);
	flow_filter_free(f);
}
END_TEST

START_TEST(parts_combine_in_order_and_are_counted)
{
	struct config_filter cfg;
	struct config_addr ign = caddr("192.168.0.0/16");
	struct flow_filter_stats st;
	struct flow_filter *f;
	struct flow_full ff;

	/* Protocol Accept { TCP UDP } Address Ignore { 192.168/16 } State Accept { ESTABLISHED } */
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = true;
	cfg.protocols.set = true;
	cfg.protocols.accept = true;
	cfg.protocols.bitmap[IPPROTO_TCP / 8] |= 1u << (IPPROTO_TCP % 8);
	cfg.protocols.bitmap[IPPROTO_UDP / 8] |= 1u << (IPPROTO_UDP % 8);
	cfg.addresses.set = true;
	cfg.addresses.accept = false;
	cfg.addresses.count = 1;
	cfg.addresses.addrs = &ign;
	cfg.states.set = true;
	cfg.states.accept = true;
	cfg.states.tcp_states = 1u << TCP_ESTABLISHED;
	f = build(&cfg);

	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_TCP);            /* passes all */
	ck_assert(flow_filter_pass_full(f, &ff));
	make_flow(&ff, "192.168.1.1", "10.0.0.2", IPPROTO_ICMP);        /* protocol first */
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, &ff.ext), FLOW_FILTER_DROP_PROTO);
	ck_assert(!flow_filter_pass_full(f, &ff));
	make_flow(&ff, "192.168.1.1", "10.0.0.2", IPPROTO_TCP);         /* then address */
	ff.flow.proto_state = TCP_SYN_SENT;
	ck_assert_int_eq(flow_filter_check(f, &ff.flow, &ff.ext), FLOW_FILTER_DROP_ADDR);
	ck_assert(!flow_filter_pass_full(f, &ff));
	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_TCP);            /* then state */
	ff.flow.proto_state = TCP_SYN_SENT;
	ck_assert(!flow_filter_pass_full(f, &ff));
	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_UDP);            /* state n/a */
	ck_assert(flow_filter_pass_full(f, &ff));

	flow_filter_stats(f, &st);
	ck_assert_uint_eq(st.checked, 5);
	ck_assert_uint_eq(st.passed, 2);
	ck_assert_uint_eq(st.part_passed[FLOW_FILTER_PROTO], 4);
	ck_assert_uint_eq(st.part_dropped[FLOW_FILTER_PROTO], 1);
	ck_assert_uint_eq(st.part_passed[FLOW_FILTER_ADDR], 3);
	ck_assert_uint_eq(st.part_dropped[FLOW_FILTER_ADDR], 1);
	ck_assert_uint_eq(st.part_passed[FLOW_FILTER_STATE], 2);
	ck_assert_uint_eq(st.part_dropped[FLOW_FILTER_STATE], 1);
	flow_filter_free(f);
}
END_TEST

START_TEST(unknown_family_matches_no_address)
{
	const char *const a[] = { "0.0.0.0/0", "::/0" };
	struct flow_filter *acc = addr_filter(true, a, 2);
	struct flow_full ff;

	make_flow(&ff, "10.0.0.1", "10.0.0.2", IPPROTO_UDP);
	ff.flow.orig.family = 0;
	ck_assert_int_eq(flow_filter_check(acc, &ff.flow, NULL), FLOW_FILTER_DROP_ADDR);
	flow_filter_free(acc);
}
END_TEST

/* ---- randomized cross-check ---------------------------------------------- */

static uint64_t rs = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return (uint32_t)((rs * 0x2545f4914f6cdd1dull) >> 32);
}

static bool in_net(const struct config_addr *n, const union flow_addr *a)
{
	unsigned words = n->family == AF_INET ? 1 : 4;
	uint32_t net[4] = { 0 };

	memcpy(net, &n->u, words * 4);
	for (unsigned i = 0; i < words; i++) {
		unsigned bits = n->prefix > 32 * i ? n->prefix - 32 * i : 0;
		uint32_t m = bits >= 32 ? 0xffffffffu : bits ? htonl(~0u << (32 - bits)) : 0;

		if ((net[i] & m) != (a->v6[i] & m))
			return false;
	}
	return true;
}

START_TEST(address_lookup_agrees_with_linear_scan)
{
	enum { NADDR = 600, NFLOWS = 20000 };
	static const uint8_t p4[] = { 32, 32, 32, 24, 16, 8, 31, 12 };
	static const uint8_t p6[] = { 128, 128, 64, 48, 127, 65, 20 };
	struct config_addr *list = calloc(NADDR, sizeof(*list));
	struct config_filter cfg;
	struct flow_filter *f;

	/* Addresses drawn from small ranges so that flows hit them often. */
	for (unsigned i = 0; i < NADDR; i++) {
		struct config_addr *a = &list[i];

		if (i % 3) {
			a->family = AF_INET;
			a->u.v4.s_addr = htonl(0x0a000000u | (rnd() & 0x3ffff));
			a->prefix = p4[rnd() % sizeof(p4)];
		} else {
			a->family = AF_INET6;
			a->u.v6.s6_addr32[0] = htonl(0x20010db8u);
			a->u.v6.s6_addr32[1] = htonl(rnd() & 0x3);
			a->u.v6.s6_addr32[3] = htonl(rnd() & 0x3ff);
			a->prefix = p6[rnd() % sizeof(p6)];
		}
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = true;
	cfg.addresses.set = true;
	cfg.addresses.accept = true;
	cfg.addresses.count = NADDR;
	cfg.addresses.addrs = list;
	f = build(&cfg);
	for (unsigned i = 0; i < NFLOWS; i++) {
		struct flow_full ff;
		bool expect = false, pass;

		memset(&ff, 0, sizeof(ff));
		ff.flow.orig.l4proto = IPPROTO_UDP;
		if (i % 2) {
			ff.flow.orig.family = AF_INET;
			ff.flow.orig.src.v4 = htonl(0x0a000000u | (rnd() & 0x3ffff));
			ff.flow.orig.dst.v4 = htonl(0x0a000000u | (rnd() & 0x3ffff));
		} else {
			ff.flow.orig.family = AF_INET6;
			ff.flow.orig.src.v6[0] = ff.flow.orig.dst.v6[0] = htonl(0x20010db8u);
			ff.flow.orig.src.v6[1] = htonl(rnd() & 0x3);
			ff.flow.orig.src.v6[3] = htonl(rnd() & 0x3ff);
			ff.flow.orig.dst.v6[1] = htonl(rnd() & 0x3);
			ff.flow.orig.dst.v6[3] = htonl(rnd() & 0x3ff);
		}
		for (unsigned k = 0; k < NADDR && !expect; k++)
			if (list[k].family == ff.flow.orig.family)
				expect = in_net(&list[k], &ff.flow.orig.src) ||
					 in_net(&list[k], &ff.flow.orig.dst);
		pass = flow_filter_check(f, &ff.flow, &ff.ext) == FLOW_FILTER_PASS;
		ck_assert_msg(pass == expect,
			      "flow %u: filter says %d, the linear scan %d", i, pass, expect);
	}
	flow_filter_free(f);
	free(list);
}
END_TEST

static Suite *flow_filter_suite(void)
{
	Suite *s = suite_create("flow_filter");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, no_filter_passes_everything);
	tcase_add_test(tc, protocol_accept_passes_only_listed);
	tcase_add_test(tc, protocol_ignore_drops_only_listed);
	tcase_add_test(tc, address_accept_matches_either_endpoint);
	tcase_add_test(tc, address_accept_of_one_family_drops_the_other);
	tcase_add_test(tc, address_ignore_drops_either_endpoint);
	tcase_add_test(tc, cidr_ipv4_prefixes);
	tcase_add_test(tc, cidr_ipv6_prefixes);
	tcase_add_test(tc, dnat_reply_source_is_the_real_server);
	tcase_add_test(tc, dnat_ipv6);
	tcase_add_test(tc, snat_address_is_not_an_endpoint);
	tcase_add_test(tc, empty_address_lists);
	tcase_add_test(tc, duplicate_and_overlapping_entries);
	tcase_add_test(tc, rejects_invalid_addresses);
	tcase_add_test(tc, state_accept_concerns_tcp_only);
	tcase_add_test(tc, state_ignore_concerns_tcp_only);
	tcase_add_test(tc, parts_combine_in_order_and_are_counted);
	tcase_add_test(tc, unknown_family_matches_no_address);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, address_lookup_agrees_with_linear_scan);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(flow_filter_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
