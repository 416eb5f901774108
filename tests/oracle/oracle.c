/*
 * oracle.c - random kernel-shaped states in libnetfilter_conntrack's
 * objects, and the model of what ctsyncd makes of them (oracle.h).
 */
#include "oracle.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#ifndef IPPROTO_UDPLITE
#define IPPROTO_UDPLITE 136
#endif

/* ---- random numbers ------------------------------------------------------------ */

uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(rng_next(r) % n);
}

bool rng_one_in(struct rng *r, uint32_t n)
{
	return rng_below(r, n) == 0;
}

uint64_t oracle_seed(void)
{
	const char *s = getenv("ORACLE_SEED");

	return s && *s ? strtoull(s, NULL, 0) : 0x0c7a11e5u;
}

unsigned oracle_states(unsigned dflt)
{
	const char *s = getenv("ORACLE_STATES");
	unsigned long n;

	if (!s || !*s)
		return dflt;
	n = strtoul(s, NULL, 0);
	return n ? (unsigned)n : dflt;
}

bool oracle_l4_has_ports(uint8_t p)
{
	return p == IPPROTO_TCP || p == IPPROTO_UDP || p == IPPROTO_UDPLITE ||
	       p == IPPROTO_SCTP || p == IPPROTO_DCCP || p == IPPROTO_GRE;
}

static bool is_icmp(uint8_t p)
{
	return p == IPPROTO_ICMP || p == IPPROTO_ICMPV6;
}

/* ---- random conntracks -------------------------------------------------------- */

/*
 * Addresses from a small pool half of the time, so that NAT addresses
 * equal to the original ones (no NAT to derive) come up often.
 */
static void random_addr(struct rng *r, uint8_t family, uint8_t out[16])
{
	memset(out, 0, 16);
	if (rng_one_in(r, 2)) {
		out[0] = family == AF_INET ? 198 : 0x20;
		out[1] = family == AF_INET ? 18 : 0x01;
		out[family == AF_INET ? 3 : 15] = (uint8_t)(1 + rng_below(r, 4));
		return;
	}
	for (int i = 0; i < (family == AF_INET ? 4 : 16); i++)
		out[i] = (uint8_t)rng_next(r);
}

static uint16_t random_port(struct rng *r)
{
	static const uint16_t common[] = { 0, 21, 53, 80, 443, 1234, 5060, 65535 };

	if (rng_one_in(r, 3))
		return htons(common[rng_below(r, sizeof(common) / sizeof(common[0]))]);
	return (uint16_t)rng_next(r);
}

static void set_addr(struct nf_conntrack *ct, uint8_t family, int v4attr, int v6attr,
		     const uint8_t a[16])
{
	if (family == AF_INET) {
		uint32_t v;

		memcpy(&v, a, 4);
		nfct_set_attr_u32(ct, v4attr, v);
	} else {
		nfct_set_attr(ct, v6attr, a);
	}
}

/* ICMP types that open a conntrack (the kernel's "valid new" types), and some others. */
static uint8_t random_icmp_type(struct rng *r, uint8_t family)
{
	static const uint8_t v4[] = { 8, 13, 15, 17, 0, 14, 3, 11 };
	static const uint8_t v6[] = { 128, 139, 129, 140, 130, 1 };

	if (family == AF_INET)
		return v4[rng_one_in(r, 8) ? rng_below(r, 8) : rng_below(r, 4)];
	return v6[rng_one_in(r, 8) ? rng_below(r, 6) : rng_below(r, 2)];
}

void oracle_random_ct(struct rng *r, struct nf_conntrack *ct)
{
	static const uint8_t protos[] = {
		IPPROTO_TCP, IPPROTO_TCP, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_UDP, IPPROTO_UDPLITE,
		IPPROTO_SCTP, IPPROTO_DCCP, IPPROTO_GRE, 0 /* ICMP of the family */, 50 /* ESP */,
	};
	uint8_t family = rng_one_in(r, 2) ? AF_INET : AF_INET6;
	uint8_t proto = protos[rng_below(r, sizeof(protos) / sizeof(protos[0]))];
	uint8_t a[16];
	uint32_t status = 0;
	bool has_status;

	if (proto == 0)
		proto = family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	nfct_set_attr_u8(ct, ATTR_L3PROTO, family);
	nfct_set_attr_u8(ct, ATTR_L4PROTO, proto);
	random_addr(r, family, a);
	set_addr(ct, family, ATTR_IPV4_SRC, ATTR_IPV6_SRC, a);
	random_addr(r, family, a);
	set_addr(ct, family, ATTR_IPV4_DST, ATTR_IPV6_DST, a);
	if (is_icmp(proto)) {
		nfct_set_attr_u8(ct, ATTR_ICMP_TYPE, random_icmp_type(r, family));
		nfct_set_attr_u8(ct, ATTR_ICMP_CODE, rng_one_in(r, 4) ? (uint8_t)rng_below(r, 16) : 0);
		nfct_set_attr_u16(ct, ATTR_ICMP_ID, (uint16_t)rng_next(r));
	} else if (oracle_l4_has_ports(proto)) {
		nfct_set_attr_u16(ct, ATTR_PORT_SRC, random_port(r));
		nfct_set_attr_u16(ct, ATTR_PORT_DST, random_port(r));
	}
	nfct_setobjopt(ct, NFCT_SOPT_SETUP_REPLY);

	/*
	 * NAT as the kernel records it: a translated reply tuple and its status
	 * bits.  Now and then no status at all (the kernel always sends one; a
	 * mutated message may lack it), and then no translation either.
	 */
	has_status = !rng_one_in(r, 32);
	if (has_status && rng_one_in(r, 3)) {
		random_addr(r, family, a);
		set_addr(ct, family, ATTR_REPL_IPV4_DST, ATTR_REPL_IPV6_DST, a);
		if (oracle_l4_has_ports(proto) && rng_one_in(r, 2))
			nfct_set_attr_u16(ct, ATTR_REPL_PORT_DST, random_port(r));
		status |= IPS_SRC_NAT | IPS_SRC_NAT_DONE;
	}
	if (has_status && rng_one_in(r, 3)) {
		random_addr(r, family, a);
		set_addr(ct, family, ATTR_REPL_IPV4_SRC, ATTR_REPL_IPV6_SRC, a);
		if (oracle_l4_has_ports(proto) && rng_one_in(r, 2))
			nfct_set_attr_u16(ct, ATTR_REPL_PORT_SRC, random_port(r));
		status |= IPS_DST_NAT | IPS_DST_NAT_DONE;
	}
	/* Any of the kernel's 16 status bits; now and then NAT bits without a translation. */
	{
		uint32_t more = (uint32_t)rng_next(r) & 0xffff;

		if (!rng_one_in(r, 4))
			more &= ~(uint32_t)(IPS_NAT_MASK | IPS_NAT_DONE_MASK);
		status |= more;
	}
	if (has_status)
		nfct_set_attr_u32(ct, ATTR_STATUS, status);

	if (!rng_one_in(r, 8))
		nfct_set_attr_u32(ct, ATTR_TIMEOUT, rng_one_in(r, 8) ? 0 : rng_below(r, 432001));
	if (rng_one_in(r, 2))
		nfct_set_attr_u32(ct, ATTR_MARK, rng_one_in(r, 4) ? 0 : (uint32_t)rng_next(r));
	if (rng_one_in(r, 4))
		nfct_set_attr_u16(ct, ATTR_ZONE, rng_one_in(r, 2) ? (uint16_t)rng_below(r, 4) :
							       (uint16_t)rng_next(r));

	switch (proto) {
	case IPPROTO_TCP:
		if (!rng_one_in(r, 8))
			nfct_set_attr_u8(ct, ATTR_TCP_STATE, (uint8_t)rng_below(r, rng_one_in(r, 16) ? 16 : 10));
		if (rng_one_in(r, 2)) {
			nfct_set_attr_u8(ct, ATTR_TCP_WSCALE_ORIG, (uint8_t)rng_below(r, 15));
			if (!rng_one_in(r, 8))
				nfct_set_attr_u8(ct, ATTR_TCP_WSCALE_REPL, (uint8_t)rng_below(r, 15));
		}
		if (rng_one_in(r, 2)) {
			nfct_set_attr_u8(ct, ATTR_TCP_FLAGS_ORIG, (uint8_t)rng_below(r, 64));
			nfct_set_attr_u8(ct, ATTR_TCP_MASK_ORIG, (uint8_t)rng_below(r, 64));
			nfct_set_attr_u8(ct, ATTR_TCP_FLAGS_REPL, (uint8_t)rng_below(r, 64));
			nfct_set_attr_u8(ct, ATTR_TCP_MASK_REPL, (uint8_t)rng_below(r, 64));
		}
		break;
	case IPPROTO_SCTP:
		if (!rng_one_in(r, 8))
			nfct_set_attr_u8(ct, ATTR_SCTP_STATE, (uint8_t)rng_below(r, 10));
		if (rng_one_in(r, 2)) {
			nfct_set_attr_u32(ct, ATTR_SCTP_VTAG_ORIG, (uint32_t)rng_next(r));
			if (!rng_one_in(r, 8))
				nfct_set_attr_u32(ct, ATTR_SCTP_VTAG_REPL, (uint32_t)rng_next(r));
		}
		break;
	case IPPROTO_DCCP:
		if (!rng_one_in(r, 8))
			nfct_set_attr_u8(ct, ATTR_DCCP_STATE, (uint8_t)rng_below(r, 10));
		if (rng_one_in(r, 2))
			nfct_set_attr_u8(ct, ATTR_DCCP_ROLE, (uint8_t)rng_below(r, 2));
		if (rng_one_in(r, 2))
			nfct_set_attr_u64(ct, ATTR_DCCP_HANDSHAKE_SEQ, rng_next(r));
		break;
	}

	if (rng_one_in(r, 6)) {
		static const char *const helpers[] = {
			"ftp", "sip", "tftp", "irc", "amanda", "pptp", "h245", "RAS", "Q.931",
			"netbios-ns", "snmp", "sane", "ftp-2121", "helper-15-chars",
		};

		nfct_set_attr(ct, ATTR_HELPER_NAME, helpers[rng_below(r, sizeof(helpers) / sizeof(helpers[0]))]);
	}
	if (rng_one_in(r, 8)) {
		/* A related flow: the master is TCP or UDP of the same family. */
		nfct_set_attr_u8(ct, ATTR_MASTER_L3PROTO, family);
		nfct_set_attr_u8(ct, ATTR_MASTER_L4PROTO, rng_one_in(r, 2) ? IPPROTO_TCP : IPPROTO_UDP);
		random_addr(r, family, a);
		set_addr(ct, family, ATTR_MASTER_IPV4_SRC, ATTR_MASTER_IPV6_SRC, a);
		random_addr(r, family, a);
		set_addr(ct, family, ATTR_MASTER_IPV4_DST, ATTR_MASTER_IPV6_DST, a);
		nfct_set_attr_u16(ct, ATTR_MASTER_PORT_SRC, random_port(r));
		nfct_set_attr_u16(ct, ATTR_MASTER_PORT_DST, random_port(r));
	}
	if (rng_one_in(r, 8)) {
		nfct_set_attr_u32(ct, ATTR_ORIG_NAT_SEQ_CORRECTION_POS, (uint32_t)rng_next(r));
		nfct_set_attr_u32(ct, ATTR_ORIG_NAT_SEQ_OFFSET_BEFORE, (uint32_t)rng_next(r));
		nfct_set_attr_u32(ct, ATTR_ORIG_NAT_SEQ_OFFSET_AFTER, (uint32_t)rng_next(r));
		if (!rng_one_in(r, 8)) {
			nfct_set_attr_u32(ct, ATTR_REPL_NAT_SEQ_CORRECTION_POS, (uint32_t)rng_next(r));
			nfct_set_attr_u32(ct, ATTR_REPL_NAT_SEQ_OFFSET_BEFORE, (uint32_t)rng_next(r));
			nfct_set_attr_u32(ct, ATTR_REPL_NAT_SEQ_OFFSET_AFTER, (uint32_t)rng_next(r));
		}
	}
	if (rng_one_in(r, 6)) {
		/* The kernel's 128 labels; now and then a longer map, or none set. */
		unsigned maxbit = rng_one_in(r, 8) ? 32 * (1 + rng_below(r, 8)) - 1 : 127;
		struct nfct_bitmask *b = nfct_bitmask_new(maxbit);
		unsigned n = rng_one_in(r, 8) ? 0 : 1 + rng_below(r, 6);

		for (unsigned i = 0; i < n; i++)
			nfct_bitmask_set_bit(b, rng_below(r, maxbit + 1));
		nfct_set_attr(ct, ATTR_CONNLABELS, b);   /* the object owns it now */
	}
	if (rng_one_in(r, 10)) {
		nfct_set_attr_u32(ct, ATTR_SYNPROXY_ISN, rng_one_in(r, 3) ? 0 : (uint32_t)rng_next(r));
		nfct_set_attr_u32(ct, ATTR_SYNPROXY_ITS, rng_one_in(r, 3) ? 0 : (uint32_t)rng_next(r));
		nfct_set_attr_u32(ct, ATTR_SYNPROXY_TSOFF, rng_one_in(r, 3) ? 0 : (uint32_t)rng_next(r));
	}
}

/* ---- kernel-shaped messages ---------------------------------------------------------- */

static void put_be64(struct nlmsghdr *nlh, uint16_t type, uint64_t v)
{
	uint32_t w[2] = { htonl((uint32_t)(v >> 32)), htonl((uint32_t)v) };

	mnl_attr_put(nlh, type, 8, w);
}

int oracle_kernel_msg(struct rng *r, void *buf, size_t cap, const struct nf_conntrack *ct,
		      uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;

	if (cap < ORACLE_MSG_MAX)
		return -1;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | type;
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_seq = (uint32_t)rng_next(r);
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = nfct_get_attr_u8(ct, ATTR_L3PROTO);
	nfg->version = NFNETLINK_V0;
	nfg->res_id = 0;
	if (nfct_nlmsg_build(nlh, ct) < 0)
		return -1;

	/* What only the kernel sends: nf_conntrack_acct, _timestamp, the id, use, secmark. */
	if (rng_one_in(r, 3)) {
		for (uint16_t dir = CTA_COUNTERS_ORIG; dir <= CTA_COUNTERS_REPLY; dir++) {
			struct nlattr *n = mnl_attr_nest_start(nlh, dir);

			if (rng_one_in(r, 8)) {     /* the old 32-bit counters */
				mnl_attr_put_u32(nlh, CTA_COUNTERS32_PACKETS, htonl((uint32_t)rng_next(r)));
				mnl_attr_put_u32(nlh, CTA_COUNTERS32_BYTES, htonl((uint32_t)rng_next(r)));
			} else {
				put_be64(nlh, CTA_COUNTERS_PACKETS, rng_next(r) >> rng_below(r, 64));
				put_be64(nlh, CTA_COUNTERS_BYTES, rng_next(r) >> rng_below(r, 64));
			}
			mnl_attr_nest_end(nlh, n);
		}
	}
	if (rng_one_in(r, 4)) {
		struct nlattr *n = mnl_attr_nest_start(nlh, CTA_TIMESTAMP);
		uint64_t start = 1700000000ull * 1000000000ull + (rng_next(r) >> 20);

		put_be64(nlh, CTA_TIMESTAMP_START, start);
		if (rng_one_in(r, 2))
			put_be64(nlh, CTA_TIMESTAMP_STOP, start + (rng_next(r) >> 24));
		mnl_attr_nest_end(nlh, n);
	}
	if (rng_one_in(r, 2))
		mnl_attr_put_u32(nlh, CTA_ID, htonl((uint32_t)rng_next(r)));
	if (rng_one_in(r, 2))
		mnl_attr_put_u32(nlh, CTA_USE, htonl(1 + rng_below(r, 3)));
	if (rng_one_in(r, 16) && !nfct_attr_is_set(ct, ATTR_SECMARK))
		mnl_attr_put_u32(nlh, CTA_SECMARK, htonl((uint32_t)rng_next(r)));
	return (int)nlh->nlmsg_len;
}

/* ---- the model of ctsyncd's reading --------------------------------------------------- */

void oracle_tuple_of_ct(const struct nf_conntrack *ct, enum oracle_dir dir, struct flow_tuple *t,
			bool *has_ports, bool *has_icmp)
{
	static const int attrs[3][7] = {
		/* l3, l4, v4 src, v4 dst, v6 src, v6 dst, sport (dport = +1) */
		{ ATTR_ORIG_L3PROTO, ATTR_ORIG_L4PROTO, ATTR_ORIG_IPV4_SRC, ATTR_ORIG_IPV4_DST,
		  ATTR_ORIG_IPV6_SRC, ATTR_ORIG_IPV6_DST, ATTR_ORIG_PORT_SRC },
		{ ATTR_REPL_L3PROTO, ATTR_REPL_L4PROTO, ATTR_REPL_IPV4_SRC, ATTR_REPL_IPV4_DST,
		  ATTR_REPL_IPV6_SRC, ATTR_REPL_IPV6_DST, ATTR_REPL_PORT_SRC },
		{ ATTR_MASTER_L3PROTO, ATTR_MASTER_L4PROTO, ATTR_MASTER_IPV4_SRC, ATTR_MASTER_IPV4_DST,
		  ATTR_MASTER_IPV6_SRC, ATTR_MASTER_IPV6_DST, ATTR_MASTER_PORT_SRC },
	};
	const int *at = attrs[dir];

	memset(t, 0, sizeof(*t));
	*has_ports = *has_icmp = false;
	t->family = nfct_get_attr_u8(ct, at[0]);
	t->l4proto = nfct_get_attr_u8(ct, at[1]);
	if (nfct_attr_is_set(ct, at[2]))
		t->src.v4 = nfct_get_attr_u32(ct, at[2]);
	if (nfct_attr_is_set(ct, at[3]))
		t->dst.v4 = nfct_get_attr_u32(ct, at[3]);
	if (nfct_attr_is_set(ct, at[4]))
		memcpy(t->src.bytes, nfct_get_attr(ct, at[4]), 16);
	if (nfct_attr_is_set(ct, at[5]))
		memcpy(t->dst.bytes, nfct_get_attr(ct, at[5]), 16);
	if (dir == ORACLE_ORIG && is_icmp(t->l4proto)) {
		*has_icmp = nfct_attr_is_set(ct, ATTR_ICMP_TYPE) && nfct_attr_is_set(ct, ATTR_ICMP_CODE) &&
			    nfct_attr_is_set(ct, ATTR_ICMP_ID);
		if (*has_icmp) {
			t->l4.icmp.type = nfct_get_attr_u8(ct, ATTR_ICMP_TYPE);
			t->l4.icmp.code = nfct_get_attr_u8(ct, ATTR_ICMP_CODE);
			t->l4.icmp.id = nfct_get_attr_u16(ct, ATTR_ICMP_ID);
		}
	} else if (oracle_l4_has_ports(t->l4proto) && nfct_attr_is_set(ct, at[6]) &&
		   nfct_attr_is_set(ct, at[6] + 1)) {
		*has_ports = true;
		t->l4.port.sport = nfct_get_attr_u16(ct, at[6]);
		t->l4.port.dport = nfct_get_attr_u16(ct, at[6] + 1);
	}
}

static bool addr_eq(const union flow_addr *a, const union flow_addr *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

void oracle_model_flow(const struct nf_conntrack *ct, struct flow_full *ff)
{
	struct flow *f = &ff->flow;
	bool ports, icmp;

	memset(ff, 0, sizeof(*ff));
	oracle_tuple_of_ct(ct, ORACLE_ORIG, &f->orig, &ports, &icmp);
	if (ports)
		f->attrs |= FLOW_A_PORTS;
	if (icmp)
		f->attrs |= FLOW_A_ICMP;
	if (nfct_attr_is_set(ct, ATTR_STATUS)) {
		f->status = nfct_get_attr_u32(ct, ATTR_STATUS);
		f->attrs |= FLOW_A_STATUS;
	}
	if (nfct_attr_is_set(ct, ATTR_TIMEOUT)) {
		f->timeout = nfct_get_attr_u32(ct, ATTR_TIMEOUT);
		f->attrs |= FLOW_A_TIMEOUT;
	}
	if (nfct_attr_is_set(ct, ATTR_MARK)) {
		f->mark = nfct_get_attr_u32(ct, ATTR_MARK);
		f->attrs |= FLOW_A_MARK;
	}
	if (nfct_attr_is_set(ct, ATTR_ZONE)) {
		f->orig.zone = nfct_get_attr_u16(ct, ATTR_ZONE);
		f->attrs |= FLOW_A_ZONE;
	}
	/* The library keeps TCP, SCTP and DCCP state apart; the kernel sends only one. */
	if (nfct_attr_is_set(ct, ATTR_TCP_STATE)) {
		f->proto_state = nfct_get_attr_u8(ct, ATTR_TCP_STATE);
		f->attrs |= FLOW_A_PROTO_STATE;
	}
	if (nfct_attr_is_set(ct, ATTR_TCP_WSCALE_ORIG) && nfct_attr_is_set(ct, ATTR_TCP_WSCALE_REPL)) {
		f->wscale_orig = nfct_get_attr_u8(ct, ATTR_TCP_WSCALE_ORIG);
		f->wscale_repl = nfct_get_attr_u8(ct, ATTR_TCP_WSCALE_REPL);
		f->attrs |= FLOW_A_WSCALE;
	}
	if (nfct_attr_is_set(ct, ATTR_SCTP_STATE)) {
		f->proto_state = nfct_get_attr_u8(ct, ATTR_SCTP_STATE);
		f->attrs |= FLOW_A_PROTO_STATE;
	}
	if (nfct_attr_is_set(ct, ATTR_SCTP_VTAG_ORIG) && nfct_attr_is_set(ct, ATTR_SCTP_VTAG_REPL)) {
		ff->ext.sctp_vtag_orig = nfct_get_attr_u32(ct, ATTR_SCTP_VTAG_ORIG);
		ff->ext.sctp_vtag_repl = nfct_get_attr_u32(ct, ATTR_SCTP_VTAG_REPL);
		f->attrs |= FLOW_A_SCTP_VTAGS;
	}
	if (nfct_attr_is_set(ct, ATTR_DCCP_STATE)) {
		f->proto_state = nfct_get_attr_u8(ct, ATTR_DCCP_STATE);
		f->attrs |= FLOW_A_PROTO_STATE;
	}
	if (nfct_attr_is_set(ct, ATTR_DCCP_ROLE)) {
		f->dccp_role = nfct_get_attr_u8(ct, ATTR_DCCP_ROLE);
		f->attrs |= FLOW_A_DCCP_ROLE;
	}
	if (nfct_attr_is_set(ct, ATTR_HELPER_NAME)) {
		const char *h = nfct_get_attr(ct, ATTR_HELPER_NAME);

		snprintf(ff->ext.helper, sizeof(ff->ext.helper), "%s", h);
		if (h[0])
			f->attrs |= FLOW_A_HELPER;
	}
	if (nfct_attr_is_set(ct, ATTR_MASTER_L3PROTO)) {
		bool mp, mi;

		oracle_tuple_of_ct(ct, ORACLE_MASTER, &ff->ext.master, &mp, &mi);
		f->attrs |= FLOW_A_MASTER;
	}
	{
		/* All six values or none: the kernel sends both directions whole. */
		static const int seq[6] = {
			ATTR_ORIG_NAT_SEQ_CORRECTION_POS, ATTR_ORIG_NAT_SEQ_OFFSET_BEFORE,
			ATTR_ORIG_NAT_SEQ_OFFSET_AFTER, ATTR_REPL_NAT_SEQ_CORRECTION_POS,
			ATTR_REPL_NAT_SEQ_OFFSET_BEFORE, ATTR_REPL_NAT_SEQ_OFFSET_AFTER,
		};
		int n = 0;

		for (int i = 0; i < 6; i++)
			n += nfct_attr_is_set(ct, seq[i]);
		if (n == 6) {
			for (int i = 0; i < 6; i++)
				ff->ext.nat_seq[i] = nfct_get_attr_u32(ct, seq[i]);
			f->attrs |= FLOW_A_NAT_SEQ;
		}
	}
	if (nfct_attr_is_set(ct, ATTR_CONNLABELS)) {
		const struct nfct_bitmask *b = nfct_get_attr(ct, ATTR_CONNLABELS);
		unsigned max = (unsigned)nfct_bitmask_maxbit(b);

		ff->labels.words = (uint16_t)(max / 32 + 1);
		for (unsigned i = 0; i <= max; i++)
			if (nfct_bitmask_test_bit(b, i))
				ff->labels.w[i / 32] |= 1u << (i % 32);
		f->attrs |= FLOW_A_LABELS;
	}
	if (nfct_attr_is_set(ct, ATTR_SYNPROXY_ISN) || nfct_attr_is_set(ct, ATTR_SYNPROXY_ITS) ||
	    nfct_attr_is_set(ct, ATTR_SYNPROXY_TSOFF)) {
		ff->ext.synproxy[0] = nfct_get_attr_u32(ct, ATTR_SYNPROXY_ITS);
		ff->ext.synproxy[1] = nfct_get_attr_u32(ct, ATTR_SYNPROXY_ISN);
		ff->ext.synproxy[2] = nfct_get_attr_u32(ct, ATTR_SYNPROXY_TSOFF);
		f->attrs |= FLOW_A_SYNPROXY;
		if (ff->ext.synproxy[0] | ff->ext.synproxy[1] | ff->ext.synproxy[2])
			f->attrs |= FLOW_A_SYNPROXY_EXT;
	}
	/* doc/protocol.md §2.7: NAT is what the reply tuple says under the *_NAT_DONE bits. */
	if (nfct_attr_is_set(ct, ATTR_REPL_L3PROTO)) {
		struct flow_tuple rt;
		bool rp, ri;
		bool both_ports = (f->attrs & FLOW_A_PORTS) && oracle_l4_has_ports(f->orig.l4proto);

		oracle_tuple_of_ct(ct, ORACLE_REPL, &rt, &rp, &ri);
		if (f->status & IPS_SRC_NAT_DONE) {
			if (!addr_eq(&rt.dst, &f->orig.src)) {
				ff->ext.snat = rt.dst;
				f->attrs |= FLOW_A_SNAT;
			}
			if (both_ports && rt.l4.port.dport != f->orig.l4.port.sport) {
				ff->ext.spat = rt.l4.port.dport;
				f->attrs |= FLOW_A_SPAT;
			}
		}
		if (f->status & IPS_DST_NAT_DONE) {
			if (!addr_eq(&rt.src, &f->orig.dst)) {
				ff->ext.dnat = rt.src;
				f->attrs |= FLOW_A_DNAT;
			}
			if (both_ports && rt.l4.port.sport != f->orig.l4.port.dport) {
				ff->ext.dpat = rt.l4.port.sport;
				f->attrs |= FLOW_A_DPAT;
			}
		}
	}
	flow_full_normalize(ff);

	if (nfct_attr_is_set(ct, ATTR_ORIG_COUNTER_PACKETS) || nfct_attr_is_set(ct, ATTR_ORIG_COUNTER_BYTES) ||
	    nfct_attr_is_set(ct, ATTR_REPL_COUNTER_PACKETS) || nfct_attr_is_set(ct, ATTR_REPL_COUNTER_BYTES)) {
		ff->counters.present = true;
		ff->counters.packets[0] = nfct_get_attr_u64(ct, ATTR_ORIG_COUNTER_PACKETS);
		ff->counters.bytes[0] = nfct_get_attr_u64(ct, ATTR_ORIG_COUNTER_BYTES);
		ff->counters.packets[1] = nfct_get_attr_u64(ct, ATTR_REPL_COUNTER_PACKETS);
		ff->counters.bytes[1] = nfct_get_attr_u64(ct, ATTR_REPL_COUNTER_BYTES);
	}
	if (nfct_attr_is_set(ct, ATTR_TIMESTAMP_START)) {
		ff->counters.times = true;
		ff->counters.start_ns = nfct_get_attr_u64(ct, ATTR_TIMESTAMP_START);
	}
	if (nfct_attr_is_set(ct, ATTR_TIMESTAMP_STOP))
		ff->counters.stop_ns = nfct_get_attr_u64(ct, ATTR_TIMESTAMP_STOP);
}

/* ---- conntrackd's objects for printing -------------------------------------------------- */

static void set_tuple(struct nf_conntrack *ct, const struct flow_tuple *t, bool ports, bool icmp)
{
	set_addr(ct, t->family, ATTR_IPV4_SRC, ATTR_IPV6_SRC, t->src.bytes);
	set_addr(ct, t->family, ATTR_IPV4_DST, ATTR_IPV6_DST, t->dst.bytes);
	if (icmp) {
		nfct_set_attr_u8(ct, ATTR_ICMP_TYPE, t->l4.icmp.type);
		nfct_set_attr_u8(ct, ATTR_ICMP_CODE, t->l4.icmp.code);
		nfct_set_attr_u16(ct, ATTR_ICMP_ID, t->l4.icmp.id);
	} else if (ports) {
		nfct_set_attr_u16(ct, ATTR_PORT_SRC, t->l4.port.sport);
		nfct_set_attr_u16(ct, ATTR_PORT_DST, t->l4.port.dport);
	}
}

void oracle_ct_of_flow(const struct flow_full *ff, bool internal, struct nf_conntrack *ct)
{
	const struct flow *f = &ff->flow;

	nfct_set_attr_u8(ct, ATTR_L3PROTO, f->orig.family);
	nfct_set_attr_u8(ct, ATTR_L4PROTO, f->orig.l4proto);
	set_tuple(ct, &f->orig, f->attrs & FLOW_A_PORTS, f->attrs & FLOW_A_ICMP);
	if (internal) {
		nfct_setobjopt(ct, NFCT_SOPT_SETUP_REPLY);
		if (f->attrs & FLOW_A_SNAT)
			set_addr(ct, f->orig.family, ATTR_REPL_IPV4_DST, ATTR_REPL_IPV6_DST, ff->ext.snat.bytes);
		if (f->attrs & FLOW_A_DNAT)
			set_addr(ct, f->orig.family, ATTR_REPL_IPV4_SRC, ATTR_REPL_IPV6_SRC, ff->ext.dnat.bytes);
		if (f->attrs & FLOW_A_SPAT)
			nfct_set_attr_u16(ct, ATTR_REPL_PORT_DST, ff->ext.spat);
		if (f->attrs & FLOW_A_DPAT)
			nfct_set_attr_u16(ct, ATTR_REPL_PORT_SRC, ff->ext.dpat);
	} else {
		if (f->attrs & FLOW_A_SNAT) {
			if (f->orig.family == AF_INET)
				nfct_set_attr_u32(ct, ATTR_SNAT_IPV4, ff->ext.snat.v4);
			else
				nfct_set_attr(ct, ATTR_SNAT_IPV6, ff->ext.snat.bytes);
		}
		if (f->attrs & FLOW_A_DNAT) {
			if (f->orig.family == AF_INET)
				nfct_set_attr_u32(ct, ATTR_DNAT_IPV4, ff->ext.dnat.v4);
			else
				nfct_set_attr(ct, ATTR_DNAT_IPV6, ff->ext.dnat.bytes);
		}
		if (f->attrs & FLOW_A_SPAT)
			nfct_set_attr_u16(ct, ATTR_SNAT_PORT, ff->ext.spat);
		if (f->attrs & FLOW_A_DPAT)
			nfct_set_attr_u16(ct, ATTR_DNAT_PORT, ff->ext.dpat);
	}
	if (f->attrs & FLOW_A_STATUS)
		nfct_set_attr_u32(ct, ATTR_STATUS, f->status);
	if (f->attrs & FLOW_A_MARK)
		nfct_set_attr_u32(ct, ATTR_MARK, f->mark);
	if (f->attrs & FLOW_A_ZONE)
		nfct_set_attr_u16(ct, ATTR_ZONE, f->orig.zone);
	if (f->attrs & FLOW_A_PROTO_STATE) {
		switch (f->orig.l4proto) {
		case IPPROTO_TCP:
			nfct_set_attr_u8(ct, ATTR_TCP_STATE, f->proto_state);
			break;
		case IPPROTO_SCTP:
			nfct_set_attr_u8(ct, ATTR_SCTP_STATE, f->proto_state);
			break;
		case IPPROTO_DCCP:
			nfct_set_attr_u8(ct, ATTR_DCCP_STATE, f->proto_state);
			break;
		}
	}
	if (f->attrs & FLOW_A_HELPER)
		nfct_set_attr(ct, ATTR_HELPER_NAME, ff->ext.helper);
	if (f->attrs & FLOW_A_MASTER) {
		const struct flow_tuple *m = &ff->ext.master;

		nfct_set_attr_u8(ct, ATTR_MASTER_L3PROTO, m->family);
		nfct_set_attr_u8(ct, ATTR_MASTER_L4PROTO, m->l4proto);
		set_addr(ct, m->family, ATTR_MASTER_IPV4_SRC, ATTR_MASTER_IPV6_SRC, m->src.bytes);
		set_addr(ct, m->family, ATTR_MASTER_IPV4_DST, ATTR_MASTER_IPV6_DST, m->dst.bytes);
		nfct_set_attr_u16(ct, ATTR_MASTER_PORT_SRC, m->l4.port.sport);
		nfct_set_attr_u16(ct, ATTR_MASTER_PORT_DST, m->l4.port.dport);
	}
	if (f->attrs & FLOW_A_LABELS) {
		struct nfct_bitmask *b = nfct_bitmask_new(32u * ff->labels.words - 1);

		for (unsigned i = 0; i < 32u * ff->labels.words; i++)
			if (ff->labels.w[i / 32] & (1u << (i % 32)))
				nfct_bitmask_set_bit(b, i);
		nfct_set_attr(ct, ATTR_CONNLABELS, b);
	}
}

/* ---- comparison ------------------------------------------------------------------------- */

static bool differ(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool differ(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return false;
}

static void tuple_text(const struct flow_tuple *t, char *out, size_t cap)
{
	char s[INET6_ADDRSTRLEN] = "?", d[INET6_ADDRSTRLEN] = "?";
	int af = t->family == AF_INET6 ? AF_INET6 : AF_INET;

	inet_ntop(af, t->src.bytes, s, sizeof(s));
	inet_ntop(af, t->dst.bytes, d, sizeof(d));
	snprintf(out, cap, "family %u proto %u %s -> %s l4 %08x zone %u", t->family, t->l4proto, s, d,
		 t->l4.raw, t->zone);
}

static bool tuples_equal(const char *name, const struct flow_tuple *a, const struct flow_tuple *b,
			 char *why, size_t cap)
{
	char ta[160], tb[160];

	if (memcmp(a, b, sizeof(*a)) == 0)
		return true;
	tuple_text(a, ta, sizeof(ta));
	tuple_text(b, tb, sizeof(tb));
	return differ(why, cap, "%s: expected [%s], got [%s]", name, ta, tb);
}

#define FIELD(name, a, b, fmt)                                                           \
	do {                                                                             \
		if ((a) != (b))                                                          \
			return differ(why, cap, "%s: expected " fmt ", got " fmt, name,  \
				      (a), (b));                                         \
	} while (0)

bool oracle_flow_equal(const struct flow_full *want, const struct flow_full *got, char *why,
		       size_t cap)
{
	const struct flow *w = &want->flow, *g = &got->flow;
	const struct flow_ext *we = &want->ext, *ge = &got->ext;

	FIELD("attrs", w->attrs, g->attrs, "0x%08x");
	if (!tuples_equal("original tuple", &w->orig, &g->orig, why, cap))
		return false;
	FIELD("status", w->status, g->status, "0x%x");
	FIELD("timeout", w->timeout, g->timeout, "%u");
	FIELD("mark", w->mark, g->mark, "%u");
	FIELD("protocol state", w->proto_state, g->proto_state, "%u");
	FIELD("dccp role", w->dccp_role, g->dccp_role, "%u");
	FIELD("wscale orig", w->wscale_orig, g->wscale_orig, "%u");
	FIELD("wscale reply", w->wscale_repl, g->wscale_repl, "%u");
	if (memcmp(&we->snat, &ge->snat, sizeof(we->snat)))
		return differ(why, cap, "snat: expected %08x, got %08x", we->snat.v6[0], ge->snat.v6[0]);
	if (memcmp(&we->dnat, &ge->dnat, sizeof(we->dnat)))
		return differ(why, cap, "dnat: expected %08x, got %08x", we->dnat.v6[0], ge->dnat.v6[0]);
	FIELD("spat", ntohs(we->spat), ntohs(ge->spat), "%u");
	FIELD("dpat", ntohs(we->dpat), ntohs(ge->dpat), "%u");
	FIELD("sctp vtag orig", we->sctp_vtag_orig, ge->sctp_vtag_orig, "%u");
	FIELD("sctp vtag reply", we->sctp_vtag_repl, ge->sctp_vtag_repl, "%u");
	for (int i = 0; i < 6; i++)
		FIELD("nat seq", we->nat_seq[i], ge->nat_seq[i], "%u");
	for (int i = 0; i < 3; i++)
		FIELD("synproxy", we->synproxy[i], ge->synproxy[i], "%u");
	if (!tuples_equal("master tuple", &we->master, &ge->master, why, cap))
		return false;
	if (strcmp(we->helper, ge->helper))
		return differ(why, cap, "helper: expected \"%s\", got \"%s\"", we->helper, ge->helper);
	if (w->attrs & FLOW_A_LABELS) {
		FIELD("label words", want->labels.words, got->labels.words, "%u");
		for (unsigned i = 0; i < want->labels.words; i++)
			FIELD("label word", want->labels.w[i], got->labels.w[i], "0x%08x");
	}
	FIELD("counters present", want->counters.present, got->counters.present, "%d");
	for (int d = 0; d < 2; d++) {
		FIELD("packets", want->counters.packets[d], got->counters.packets[d], "%" PRIu64);
		FIELD("bytes", want->counters.bytes[d], got->counters.bytes[d], "%" PRIu64);
	}
	FIELD("timestamps present", want->counters.times, got->counters.times, "%d");
	FIELD("timestamp start", want->counters.start_ns, got->counters.start_ns, "%" PRIu64);
	FIELD("timestamp stop", want->counters.stop_ns, got->counters.stop_ns, "%" PRIu64);
	return true;
}

bool oracle_exp_equal(const struct flow_exp *w, const struct flow_exp *g, char *why, size_t cap)
{
	FIELD("attrs", w->attrs, g->attrs, "0x%x");
	if (!tuples_equal("master", &w->master, &g->master, why, cap) ||
	    !tuples_equal("expected tuple", &w->tuple, &g->tuple, why, cap) ||
	    !tuples_equal("mask", &w->mask, &g->mask, why, cap) ||
	    !tuples_equal("nat tuple", &w->nat, &g->nat, why, cap))
		return false;
	FIELD("timeout", w->timeout, g->timeout, "%u");
	FIELD("flags", w->flags, g->flags, "0x%x");
	FIELD("class", w->class, g->class, "%u");
	FIELD("nat dir", w->nat_dir, g->nat_dir, "%u");
	if (strcmp(w->helper, g->helper))
		return differ(why, cap, "helper: expected \"%s\", got \"%s\"", w->helper, g->helper);
	if (strcmp(w->fn, g->fn))
		return differ(why, cap, "expectfn: expected \"%s\", got \"%s\"", w->fn, g->fn);
	return true;
}
