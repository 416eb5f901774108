/*
 * ct_attr.c - ctnetlink conntrack messages <-> struct flow_full.
 *
 * Pure: no system call, no allocation.  The parser walks the attributes
 * itself (one pass, a switch per level) and checks every length before it
 * reads; the builder uses libmnl's bounded put functions.
 */
#include "attr.h"
#include "kernel/tap_rec.h"
#include "kernel/kernel.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_conntrack_tcp.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#ifndef IPPROTO_UDPLITE
#define IPPROTO_UDPLITE 136
#endif

static const char *const reason_names[KERNEL_R_MAX] = {
	[KERNEL_OK] = "ok",
	[KERNEL_R_TRUNCATED] = "message truncated",
	[KERNEL_R_NOT_CONNTRACK] = "not a conntrack message",
	[KERNEL_R_FAMILY] = "unsupported address family",
	[KERNEL_R_ATTR_OVERRUN] = "attribute past its end",
	[KERNEL_R_ATTR_SIZE] = "attribute of the wrong size",
	[KERNEL_R_NO_TUPLE] = "no original tuple",
	[KERNEL_R_NO_ADDRESS] = "tuple without its addresses",
	[KERNEL_R_NO_L4PROTO] = "tuple without layer-4 protocol",
	[KERNEL_R_NO_PORTS] = "tuple without its ports",
	[KERNEL_R_NO_ICMP] = "ICMP tuple without id, type and code",
	[KERNEL_R_REPLY_MISMATCH] = "reply tuple of another protocol",
	[KERNEL_R_HELPER_NAME] = "bad helper name",
	[KERNEL_R_LABELS] = "bad labels",
};

const char *kernel_reason_name(enum kernel_reason r)
{
	if ((unsigned)r < KERNEL_R_MAX && reason_names[r])
		return reason_names[r];
	return "unknown reason";
}

/* Protocols whose kernel tuple carries two 16-bit ports (GRE: its keys). */
static bool l4_has_ports(uint8_t p)
{
	return p == IPPROTO_TCP || p == IPPROTO_UDP || p == IPPROTO_UDPLITE ||
	       p == IPPROTO_SCTP || p == IPPROTO_DCCP || p == IPPROTO_GRE;
}

/* Those for which the kernel refuses a tuple without ports (GRE may lack keys). */
static bool l4_needs_ports(uint8_t p)
{
	return l4_has_ports(p) && p != IPPROTO_GRE;
}

static bool l4_is_icmp(uint8_t p)
{
	return p == IPPROTO_ICMP || p == IPPROTO_ICMPV6;
}

/* ---- parsing ---------------------------------------------------------------- */

/*
 * Attribute walk over [p, p+len): each attribute must have nla_len >= 4 and
 * fit; the stride is the aligned length (the last one may lack its
 * padding).  Fewer than 4 trailing bytes are tolerated, as the kernel does.
 */
struct attr_iter {
	const uint8_t *p;
	size_t left;
};

static void iter_init(struct attr_iter *it, const void *p, size_t len)
{
	it->p = p;
	it->left = len;
}

/* 1 = *a is the next attribute, 0 = end, -1 = malformed. */
static int iter_next(struct attr_iter *it, const struct nlattr **a)
{
	const struct nlattr *n;
	size_t step;

	if (it->left < sizeof(struct nlattr))
		return 0;
	n = (const struct nlattr *)it->p;
	if (n->nla_len < sizeof(struct nlattr) || n->nla_len > it->left)
		return -1;
	step = MNL_ALIGN(n->nla_len);
	if (step > it->left)
		step = it->left;
	it->p += step;
	it->left -= step;
	*a = n;
	return 1;
}

static inline uint16_t a_type(const struct nlattr *a)
{
	return a->nla_type & NLA_TYPE_MASK;
}

static inline size_t a_len(const struct nlattr *a)
{
	return a->nla_len - sizeof(struct nlattr);
}

static inline const uint8_t *a_data(const struct nlattr *a)
{
	return (const uint8_t *)a + sizeof(struct nlattr);
}

static inline uint32_t a_be32(const struct nlattr *a)
{
	uint32_t v;

	memcpy(&v, a_data(a), 4);
	return ntohl(v);
}

/* Raw 16 bits, as they are (ports stay in network order). */
static inline uint16_t a_raw16(const struct nlattr *a)
{
	uint16_t v;

	memcpy(&v, a_data(a), 2);
	return v;
}

#define NEED(a, n) do { if (a_len(a) != (n)) return KERNEL_R_ATTR_SIZE; } while (0)

/* A tuple as the kernel sends it, before it is checked. */
struct raw_tuple {
	union flow_addr src, dst;
	uint8_t addr_family;            /* family of the addresses seen (0 = none) */
	uint8_t seen_src, seen_dst;
	bool has_proto;
	uint8_t l4proto;
	bool has_sport, has_dport, has_id, has_type, has_code;
	uint16_t sport, dport, id;      /* network order */
	uint8_t type, code;
	bool present;
};

static enum kernel_reason parse_tuple_ip(const struct nlattr *nest, struct raw_tuple *t)
{
	struct attr_iter it;
	const struct nlattr *a;
	int r;

	iter_init(&it, a_data(nest), a_len(nest));
	while ((r = iter_next(&it, &a)) > 0) {
		switch (a_type(a)) {
		case CTA_IP_V4_SRC:
		case CTA_IP_V4_DST:
			NEED(a, 4);
			if (t->addr_family && t->addr_family != AF_INET)
				return KERNEL_R_NO_ADDRESS;
			t->addr_family = AF_INET;
			if (a_type(a) == CTA_IP_V4_SRC) {
				memcpy(&t->src.v4, a_data(a), 4);
				t->seen_src = 1;
			} else {
				memcpy(&t->dst.v4, a_data(a), 4);
				t->seen_dst = 1;
			}
			break;
		case CTA_IP_V6_SRC:
		case CTA_IP_V6_DST:
			NEED(a, 16);
			if (t->addr_family && t->addr_family != AF_INET6)
				return KERNEL_R_NO_ADDRESS;
			t->addr_family = AF_INET6;
			if (a_type(a) == CTA_IP_V6_SRC) {
				memcpy(t->src.bytes, a_data(a), 16);
				t->seen_src = 1;
			} else {
				memcpy(t->dst.bytes, a_data(a), 16);
				t->seen_dst = 1;
			}
			break;
		default:
			break;
		}
	}
	return r < 0 ? KERNEL_R_ATTR_OVERRUN : KERNEL_OK;
}

static enum kernel_reason parse_tuple_proto(const struct nlattr *nest, struct raw_tuple *t)
{
	struct attr_iter it;
	const struct nlattr *a;
	int r;

	iter_init(&it, a_data(nest), a_len(nest));
	while ((r = iter_next(&it, &a)) > 0) {
		switch (a_type(a)) {
		case CTA_PROTO_NUM:
			NEED(a, 1);
			t->l4proto = a_data(a)[0];
			t->has_proto = true;
			break;
		case CTA_PROTO_SRC_PORT:
			NEED(a, 2);
			t->sport = a_raw16(a);
			t->has_sport = true;
			break;
		case CTA_PROTO_DST_PORT:
			NEED(a, 2);
			t->dport = a_raw16(a);
			t->has_dport = true;
			break;
		case CTA_PROTO_ICMP_ID:
		case CTA_PROTO_ICMPV6_ID:
			NEED(a, 2);
			t->id = a_raw16(a);
			t->has_id = true;
			break;
		case CTA_PROTO_ICMP_TYPE:
		case CTA_PROTO_ICMPV6_TYPE:
			NEED(a, 1);
			t->type = a_data(a)[0];
			t->has_type = true;
			break;
		case CTA_PROTO_ICMP_CODE:
		case CTA_PROTO_ICMPV6_CODE:
			NEED(a, 1);
			t->code = a_data(a)[0];
			t->has_code = true;
			break;
		default:
			break;
		}
	}
	return r < 0 ? KERNEL_R_ATTR_OVERRUN : KERNEL_OK;
}

static enum kernel_reason parse_tuple(const struct nlattr *nest, struct raw_tuple *t)
{
	struct attr_iter it;
	const struct nlattr *a;
	enum kernel_reason why;
	int r;

	memset(t, 0, sizeof(*t));
	t->present = true;
	iter_init(&it, a_data(nest), a_len(nest));
	while ((r = iter_next(&it, &a)) > 0) {
		switch (a_type(a)) {
		case CTA_TUPLE_IP:
			if ((why = parse_tuple_ip(a, t)) != KERNEL_OK)
				return why;
			break;
		case CTA_TUPLE_PROTO:
			if ((why = parse_tuple_proto(a, t)) != KERNEL_OK)
				return why;
			break;
		default:                /* CTA_TUPLE_ZONE: per-direction zones are not kept */
			break;
		}
	}
	return r < 0 ? KERNEL_R_ATTR_OVERRUN : KERNEL_OK;
}

/* Check a raw tuple against the message's family and fill a flow_tuple (zone left alone). */
static enum kernel_reason tuple_to_flow(const struct raw_tuple *t, uint8_t family,
					struct flow_tuple *out, uint32_t *attrs)
{
	if (!t->seen_src || !t->seen_dst || t->addr_family != family)
		return KERNEL_R_NO_ADDRESS;
	if (!t->has_proto)
		return KERNEL_R_NO_L4PROTO;
	out->src = t->src;
	out->dst = t->dst;
	out->family = family;
	out->l4proto = t->l4proto;
	out->l4.raw = 0;
	if (l4_is_icmp(t->l4proto)) {
		if (!t->has_id || !t->has_type || !t->has_code)
			return KERNEL_R_NO_ICMP;
		out->l4.icmp.id = t->id;
		out->l4.icmp.type = t->type;
		out->l4.icmp.code = t->code;
		if (attrs)
			*attrs |= FLOW_A_ICMP;
	} else if (l4_has_ports(t->l4proto) && t->has_sport && t->has_dport) {
		out->l4.port.sport = t->sport;
		out->l4.port.dport = t->dport;
		if (attrs)
			*attrs |= FLOW_A_PORTS;
	} else if (l4_needs_ports(t->l4proto)) {
		return KERNEL_R_NO_PORTS;
	}
	return KERNEL_OK;
}

static enum kernel_reason parse_protoinfo(const struct nlattr *nest, struct flow_full *ff)
{
	struct flow *f = &ff->flow;
	struct attr_iter it, in;
	const struct nlattr *a, *b;
	int r, s;

	/* A repeated CTA_PROTOINFO replaces the earlier one whole (see kernel_ct_parse()). */
	f->attrs &= ~(uint32_t)(FLOW_A_PROTO_STATE | FLOW_A_WSCALE | FLOW_A_DCCP_ROLE | FLOW_A_SCTP_VTAGS);
	f->proto_state = f->dccp_role = f->wscale_orig = f->wscale_repl = 0;
	ff->ext.sctp_vtag_orig = ff->ext.sctp_vtag_repl = 0;
	iter_init(&it, a_data(nest), a_len(nest));
	while ((r = iter_next(&it, &a)) > 0) {
		unsigned wscale = 0;
		unsigned vtags = 0;

		iter_init(&in, a_data(a), a_len(a));
		switch (a_type(a)) {
		case CTA_PROTOINFO_TCP:
			while ((s = iter_next(&in, &b)) > 0) {
				switch (a_type(b)) {
				case CTA_PROTOINFO_TCP_STATE:
					NEED(b, 1);
					f->proto_state = a_data(b)[0];
					f->attrs |= FLOW_A_PROTO_STATE;
					break;
				case CTA_PROTOINFO_TCP_WSCALE_ORIGINAL:
					NEED(b, 1);
					f->wscale_orig = a_data(b)[0];
					wscale |= 1;
					break;
				case CTA_PROTOINFO_TCP_WSCALE_REPLY:
					NEED(b, 1);
					f->wscale_repl = a_data(b)[0];
					wscale |= 2;
					break;
				default:        /* the flags are not replicated */
					break;
				}
			}
			if (wscale == 3)
				f->attrs |= FLOW_A_WSCALE;
			break;
		case CTA_PROTOINFO_SCTP:
			while ((s = iter_next(&in, &b)) > 0) {
				switch (a_type(b)) {
				case CTA_PROTOINFO_SCTP_STATE:
					NEED(b, 1);
					f->proto_state = a_data(b)[0];
					f->attrs |= FLOW_A_PROTO_STATE;
					break;
				case CTA_PROTOINFO_SCTP_VTAG_ORIGINAL:
					NEED(b, 4);
					ff->ext.sctp_vtag_orig = a_be32(b);
					vtags |= 1;
					break;
				case CTA_PROTOINFO_SCTP_VTAG_REPLY:
					NEED(b, 4);
					ff->ext.sctp_vtag_repl = a_be32(b);
					vtags |= 2;
					break;
				default:
					break;
				}
			}
			if (vtags == 3)
				f->attrs |= FLOW_A_SCTP_VTAGS;
			break;
		case CTA_PROTOINFO_DCCP:
			while ((s = iter_next(&in, &b)) > 0) {
				switch (a_type(b)) {
				case CTA_PROTOINFO_DCCP_STATE:
					NEED(b, 1);
					f->proto_state = a_data(b)[0];
					f->attrs |= FLOW_A_PROTO_STATE;
					break;
				case CTA_PROTOINFO_DCCP_ROLE:
					NEED(b, 1);
					f->dccp_role = a_data(b)[0];
					f->attrs |= FLOW_A_DCCP_ROLE;
					break;
				default:
					break;
				}
			}
			break;
		default:
			s = 0;
			break;
		}
		if (s < 0)
			return KERNEL_R_ATTR_OVERRUN;
	}
	return r < 0 ? KERNEL_R_ATTR_OVERRUN : KERNEL_OK;
}

static enum kernel_reason parse_helper(const struct nlattr *nest, struct flow_full *ff)
{
	struct attr_iter it;
	const struct nlattr *a;
	int r;

	ff->flow.attrs &= ~(uint32_t)FLOW_A_HELPER;
	memset(ff->ext.helper, 0, sizeof(ff->ext.helper));
	iter_init(&it, a_data(nest), a_len(nest));
	while ((r = iter_next(&it, &a)) > 0) {
		size_t n;

		if (a_type(a) != CTA_HELP_NAME)
			continue;
		n = strnlen((const char *)a_data(a), a_len(a));
		if (n == a_len(a) || n >= FLOW_HELPER_NAME_MAX)
			return KERNEL_R_HELPER_NAME;
		memcpy(ff->ext.helper, a_data(a), n);
		ff->ext.helper[n] = '\0';
		if (n)
			ff->flow.attrs |= FLOW_A_HELPER;
		else
			ff->flow.attrs &= ~(uint32_t)FLOW_A_HELPER;
	}
	return r < 0 ? KERNEL_R_ATTR_OVERRUN : KERNEL_OK;
}

/* CTA_COUNTERS_ORIG / _REPLY: packets and bytes of one direction (64-bit, or the old 32-bit). */
static enum kernel_reason parse_counters(const struct nlattr *nest, struct flow_counters *c, int dir)
{
	struct attr_iter it;
	const struct nlattr *a;
	int r;

	c->packets[dir] = c->bytes[dir] = 0;
	iter_init(&it, a_data(nest), a_len(nest));
	while ((r = iter_next(&it, &a)) > 0) {
		uint64_t v;

		switch (a_type(a)) {
		case CTA_COUNTERS_PACKETS:
		case CTA_COUNTERS_BYTES:
			NEED(a, 8);
			v = (uint64_t)a_be32(a) << 32;
			v |= ntohl(*(const uint32_t *)(a_data(a) + 4));
			break;
		case CTA_COUNTERS32_PACKETS:
		case CTA_COUNTERS32_BYTES:
			NEED(a, 4);
			v = a_be32(a);
			break;
		default:
			continue;
		}
		if (a_type(a) == CTA_COUNTERS_PACKETS || a_type(a) == CTA_COUNTERS32_PACKETS)
			c->packets[dir] = v;
		else
			c->bytes[dir] = v;
		c->present = true;
	}
	return r < 0 ? KERNEL_R_ATTR_OVERRUN : KERNEL_OK;
}

/* CTA_TIMESTAMP: the flow's start and stop, ns (the stop only once it ended). */
static enum kernel_reason parse_timestamp(const struct nlattr *nest, struct flow_counters *c)
{
	struct attr_iter it;
	const struct nlattr *a;
	int r;

	c->times = false;
	c->start_ns = c->stop_ns = 0;
	iter_init(&it, a_data(nest), a_len(nest));
	while ((r = iter_next(&it, &a)) > 0) {
		uint64_t v;

		if (a_type(a) != CTA_TIMESTAMP_START && a_type(a) != CTA_TIMESTAMP_STOP)
			continue;
		NEED(a, 8);
		v = (uint64_t)a_be32(a) << 32 | ntohl(*(const uint32_t *)(a_data(a) + 4));
		if (a_type(a) == CTA_TIMESTAMP_START) {
			c->start_ns = v;
			c->times = true;
		} else {
			c->stop_ns = v;
		}
	}
	return r < 0 ? KERNEL_R_ATTR_OVERRUN : KERNEL_OK;
}

/* CTA_SEQ_ADJ_ORIG / _REPLY into nat_seq[base..base+2]; returns the bits seen (7 = all). */
static enum kernel_reason parse_seq_adj(const struct nlattr *nest, uint32_t *out, unsigned *seen)
{
	struct attr_iter it;
	const struct nlattr *a;
	int r;

	*seen = 0;
	out[0] = out[1] = out[2] = 0;
	iter_init(&it, a_data(nest), a_len(nest));
	while ((r = iter_next(&it, &a)) > 0) {
		unsigned i;

		switch (a_type(a)) {
		case CTA_SEQADJ_CORRECTION_POS: i = 0; break;
		case CTA_SEQADJ_OFFSET_BEFORE: i = 1; break;
		case CTA_SEQADJ_OFFSET_AFTER: i = 2; break;
		default: continue;
		}
		NEED(a, 4);
		out[i] = a_be32(a);
		*seen |= 1u << i;
	}
	return r < 0 ? KERNEL_R_ATTR_OVERRUN : KERNEL_OK;
}

static enum kernel_reason parse_synproxy(const struct nlattr *nest, struct flow_full *ff)
{
	struct attr_iter it;
	const struct nlattr *a;
	unsigned seen = 0;
	int r;

	ff->flow.attrs &= ~(uint32_t)(FLOW_A_SYNPROXY | FLOW_A_SYNPROXY_EXT);
	memset(ff->ext.synproxy, 0, sizeof(ff->ext.synproxy));
	iter_init(&it, a_data(nest), a_len(nest));
	while ((r = iter_next(&it, &a)) > 0) {
		unsigned i;

		/* flow_ext keeps conntrackd's wire order: its, isn, tsoff. */
		switch (a_type(a)) {
		case CTA_SYNPROXY_ITS: i = 0; break;
		case CTA_SYNPROXY_ISN: i = 1; break;
		case CTA_SYNPROXY_TSOFF: i = 2; break;
		default: continue;
		}
		NEED(a, 4);
		ff->ext.synproxy[i] = a_be32(a);
		seen = 1;
	}
	/* Present with at least one value, as the library reads it; an empty nest says nothing. */
	if (seen)
		ff->flow.attrs |= FLOW_A_SYNPROXY;
	if (ff->ext.synproxy[0] | ff->ext.synproxy[1] | ff->ext.synproxy[2])
		ff->flow.attrs |= FLOW_A_SYNPROXY_EXT;
	return r < 0 ? KERNEL_R_ATTR_OVERRUN : KERNEL_OK;
}

/*
 * The kernel sends its label bitmap as an array of unsigned long in host
 * order; flow_labels holds 32-bit words (word i bit b = label 32*i+b).
 */
static enum kernel_reason parse_labels(const struct nlattr *a, struct flow_full *ff)
{
	size_t len = a_len(a);
	const uint8_t *p = a_data(a);
	unsigned words;

	if (len == 0 || len % 4 || len > FLOW_LABEL_WORDS_MAX * 4)
		return KERNEL_R_LABELS;
	words = (unsigned)(len / 4);
	if (sizeof(unsigned long) == 8 && len % 8 == 0) {
		for (unsigned i = 0; i < words / 2; i++) {
			unsigned long l;

			memcpy(&l, p + 8 * i, 8);
			ff->labels.w[2 * i] = (uint32_t)l;
			ff->labels.w[2 * i + 1] = (uint32_t)((uint64_t)l >> 32);
		}
	} else {
		memcpy(ff->labels.w, p, len);
	}
	ff->labels.words = (uint16_t)words;
	ff->flow.attrs |= FLOW_A_LABELS;
	return KERNEL_OK;
}

static bool addr_eq(const union flow_addr *a, const union flow_addr *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/* protocol.md §2.7: NAT as conntrackd sees it, from the reply tuple and the status. */
static void derive_nat(struct flow_full *ff, const struct flow_tuple *reply)
{
	struct flow *f = &ff->flow;
	const struct flow_tuple *o = &f->orig;
	bool ports = (f->attrs & FLOW_A_PORTS) && l4_has_ports(o->l4proto);

	if (f->status & IPS_SRC_NAT_DONE) {
		if (!addr_eq(&reply->dst, &o->src)) {
			ff->ext.snat = reply->dst;
			f->attrs |= FLOW_A_SNAT;
		}
		if (ports && reply->l4.port.dport != o->l4.port.sport) {
			ff->ext.spat = reply->l4.port.dport;
			f->attrs |= FLOW_A_SPAT;
		}
	}
	if (f->status & IPS_DST_NAT_DONE) {
		if (!addr_eq(&reply->src, &o->dst)) {
			ff->ext.dnat = reply->src;
			f->attrs |= FLOW_A_DNAT;
		}
		if (ports && reply->l4.port.sport != o->l4.port.dport) {
			ff->ext.dpat = reply->l4.port.sport;
			f->attrs |= FLOW_A_DPAT;
		}
	}
}

/* The conntrack attributes at `p` (`len` bytes): a message's, or the nest of an NFQUEUE packet's. */
static enum kernel_reason parse_ct_attrs(const void *p, size_t len, uint8_t family,
					 struct flow_full *ff)
{
	struct raw_tuple orig = { 0 }, reply = { 0 }, master = { 0 };
	struct flow_counters counters = { 0 };
	struct flow *f = &ff->flow;
	struct attr_iter it;
	const struct nlattr *a;
	enum kernel_reason why;
	unsigned seq_seen[2] = { 0, 0 };
	int r;

	/* Only the parts that the attrs bits can leave unset need clearing. */
	memset(f, 0, sizeof(*f));
	memset(&ff->ext, 0, sizeof(ff->ext));
	ff->labels.words = 0;

	iter_init(&it, p, len);
	while ((r = iter_next(&it, &a)) > 0) {
		why = KERNEL_OK;
		switch (a_type(a)) {
		case CTA_TUPLE_ORIG:
			why = parse_tuple(a, &orig);
			break;
		case CTA_TUPLE_REPLY:
			why = parse_tuple(a, &reply);
			break;
		case CTA_TUPLE_MASTER:
			why = parse_tuple(a, &master);
			break;
		case CTA_STATUS:
			NEED(a, 4);
			f->status = a_be32(a);
			f->attrs |= FLOW_A_STATUS;
			break;
		case CTA_TIMEOUT:
			NEED(a, 4);
			f->timeout = a_be32(a);
			f->attrs |= FLOW_A_TIMEOUT;
			break;
		case CTA_MARK:
			NEED(a, 4);
			f->mark = a_be32(a);
			f->attrs |= FLOW_A_MARK;
			break;
		case CTA_ZONE:
			NEED(a, 2);
			f->orig.zone = ntohs(a_raw16(a));
			f->attrs |= FLOW_A_ZONE;
			break;
		case CTA_PROTOINFO:
			why = parse_protoinfo(a, ff);
			break;
		case CTA_HELP:
			why = parse_helper(a, ff);
			break;
		case CTA_SEQ_ADJ_ORIG:
			why = parse_seq_adj(a, &ff->ext.nat_seq[0], &seq_seen[0]);
			break;
		case CTA_COUNTERS_ORIG:
			why = parse_counters(a, &counters, 0);
			break;
		case CTA_COUNTERS_REPLY:
			why = parse_counters(a, &counters, 1);
			break;
		case CTA_TIMESTAMP:
			why = parse_timestamp(a, &counters);
			break;
		case CTA_SEQ_ADJ_REPLY:
			why = parse_seq_adj(a, &ff->ext.nat_seq[3], &seq_seen[1]);
			break;
		case CTA_LABELS:
			why = parse_labels(a, ff);
			break;
		case CTA_SYNPROXY:
			why = parse_synproxy(a, ff);
			break;
		default:
			break;
		}
		if (why != KERNEL_OK)
			return why;
	}
	if (r < 0)
		return KERNEL_R_ATTR_OVERRUN;

	if (!orig.present)
		return KERNEL_R_NO_TUPLE;
	if ((why = tuple_to_flow(&orig, family, &f->orig, &f->attrs)) != KERNEL_OK)
		return why;
	if (reply.present) {
		struct flow_tuple rt;

		if ((why = tuple_to_flow(&reply, family, &rt, NULL)) != KERNEL_OK)
			return why;
		if (rt.l4proto != f->orig.l4proto)
			return KERNEL_R_REPLY_MISMATCH;
		derive_nat(ff, &rt);
	}
	if (master.present) {
		uint32_t ignored = 0;

		if ((why = tuple_to_flow(&master, family, &ff->ext.master, &ignored)) != KERNEL_OK)
			return why;
		f->attrs |= FLOW_A_MASTER;
	}
	if (seq_seen[0] == 7 && seq_seen[1] == 7)
		f->attrs |= FLOW_A_NAT_SEQ;
	flow_full_normalize(ff);
	ff->counters = counters;
	return KERNEL_OK;
}

/* A tap tuple into a flow tuple (zone left alone); ports and ICMP as tuple_to_flow() keeps them. */
static enum kernel_reason tap_tuple_to_flow(const struct tap_tuple *t, struct flow_tuple *out, uint32_t *attrs)
{
	if (t->l3num != AF_INET && t->l3num != AF_INET6)
		return KERNEL_R_FAMILY;
	memset(out, 0, sizeof(*out));
	memcpy(&out->src, t->src, t->l3num == AF_INET ? 4 : 16);
	memcpy(&out->dst, t->dst, t->l3num == AF_INET ? 4 : 16);
	out->family = (uint8_t)t->l3num;
	out->l4proto = t->l4proto;
	if (l4_is_icmp(t->l4proto)) {
		const uint8_t *tc = (const uint8_t *)&t->dst_l4;

		out->l4.icmp.id = t->src_l4;
		out->l4.icmp.type = tc[0];
		out->l4.icmp.code = tc[1];
		if (attrs)
			*attrs |= FLOW_A_ICMP;
	} else if (l4_has_ports(t->l4proto)) {
		out->l4.port.sport = t->src_l4;
		out->l4.port.dport = t->dst_l4;
		if (attrs)
			*attrs |= FLOW_A_PORTS;
	}
	return KERNEL_OK;
}

enum kernel_reason kernel_ct_from_tap(const struct tap_ct *r, size_t len, struct flow_full *ff,
				      enum kernel_event *ev)
{
	struct flow *f = &ff->flow;
	struct flow_tuple reply;
	enum kernel_reason why;

	if (len < sizeof(*r))
		return KERNEL_R_TRUNCATED;
	if (r->hdr.kind != TAP_REC_NEW && r->hdr.kind != TAP_REC_UPDATE)
		return KERNEL_R_NOT_CONNTRACK;
	memset(f, 0, sizeof(*f));
	memset(&ff->ext, 0, sizeof(ff->ext));
	ff->labels.words = 0;
	memset(&ff->counters, 0, sizeof(ff->counters));
	if ((why = tap_tuple_to_flow(&r->tuple[0], &f->orig, &f->attrs)) != KERNEL_OK ||
	    (why = tap_tuple_to_flow(&r->tuple[1], &reply, NULL)) != KERNEL_OK)
		return why;
	if (reply.family != f->orig.family || reply.l4proto != f->orig.l4proto)
		return KERNEL_R_REPLY_MISMATCH;
	f->status = r->status;
	f->mark = r->mark;
	f->attrs |= FLOW_A_STATUS | FLOW_A_MARK;
	if (r->flags & TAP_CT_TIMEOUT) {
		f->timeout = r->timeout_s;
		f->attrs |= FLOW_A_TIMEOUT;
	}
	if (r->zone) {
		f->orig.zone = r->zone;
		f->attrs |= FLOW_A_ZONE;
	}
	if (f->orig.l4proto == IPPROTO_TCP) {
		f->proto_state = r->tcp_state;
		f->wscale_orig = r->wscale[0];
		f->wscale_repl = r->wscale[1];
		f->attrs |= FLOW_A_PROTO_STATE | FLOW_A_WSCALE;
	}
	derive_nat(ff, &reply);
	flow_full_normalize(ff);
	*ev = r->hdr.kind == TAP_REC_NEW ? KERNEL_EV_NEW : KERNEL_EV_UPDATE;
	return KERNEL_OK;
}

enum kernel_reason kernel_ct_parse(const void *msg, size_t len, struct flow_full *ff,
				   enum kernel_event *ev)
{
	const struct nlmsghdr *nlh = msg;
	const struct nfgenmsg *nfg;
	uint8_t family;

	if (len < NLMSG_HDRLEN + sizeof(*nfg) || nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(*nfg) ||
	    nlh->nlmsg_len > len)
		return KERNEL_R_TRUNCATED;
	if ((nlh->nlmsg_type >> 8) != NFNL_SUBSYS_CTNETLINK)
		return KERNEL_R_NOT_CONNTRACK;
	switch (nlh->nlmsg_type & 0xff) {
	case IPCTNL_MSG_CT_NEW:
		*ev = (nlh->nlmsg_flags & (NLM_F_CREATE | NLM_F_MULTI)) ? KERNEL_EV_NEW : KERNEL_EV_UPDATE;
		break;
	case IPCTNL_MSG_CT_DELETE:
		*ev = KERNEL_EV_DESTROY;
		break;
	default:
		return KERNEL_R_NOT_CONNTRACK;
	}
	nfg = (const struct nfgenmsg *)((const uint8_t *)msg + NLMSG_HDRLEN);
	family = nfg->nfgen_family;
	if (family != AF_INET && family != AF_INET6)
		return KERNEL_R_FAMILY;

	return parse_ct_attrs((const uint8_t *)msg + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(*nfg)),
			      nlh->nlmsg_len - NLMSG_HDRLEN - NLMSG_ALIGN(sizeof(*nfg)), family, ff);
}

enum kernel_reason kernel_ct_parse_nest(const struct nlattr *nest, uint8_t family,
					struct flow_full *ff)
{
	if (family != AF_INET && family != AF_INET6)
		return KERNEL_R_FAMILY;
	return parse_ct_attrs(a_data(nest), a_len(nest), family, ff);
}

/* ---- building ------------------------------------------------------------------ */

/* A bounded writer over libmnl: the first failure sticks. */
struct out {
	struct nlmsghdr *nlh;
	size_t cap;
	bool full;
};

static void put(struct out *o, uint16_t type, size_t len, const void *data)
{
	if (!o->full && !mnl_attr_put_check(o->nlh, o->cap, type, len, data))
		o->full = true;
}

static void put_u8(struct out *o, uint16_t type, uint8_t v)
{
	put(o, type, 1, &v);
}

static void put_be16(struct out *o, uint16_t type, uint16_t host)
{
	uint16_t v = htons(host);

	put(o, type, 2, &v);
}

static void put_raw16(struct out *o, uint16_t type, uint16_t raw)
{
	put(o, type, 2, &raw);
}

static void put_be32(struct out *o, uint16_t type, uint32_t host)
{
	uint32_t v = htonl(host);

	put(o, type, 4, &v);
}

static struct nlattr *nest(struct out *o, uint16_t type)
{
	struct nlattr *n = NULL;

	if (!o->full && !(n = mnl_attr_nest_start_check(o->nlh, o->cap, type)))
		o->full = true;
	return n;
}

static void nest_end(struct out *o, struct nlattr *n)
{
	if (!o->full)
		mnl_attr_nest_end(o->nlh, n);
}

/* ICMP / ICMPv6 types with an answer: what the kernel's tuple inversion uses. */
static int icmp_reply_type(uint8_t proto, uint8_t type)
{
	if (proto == IPPROTO_ICMP) {
		switch (type) {
		case 8: return 0;       /* echo */
		case 0: return 8;
		case 13: return 14;     /* timestamp */
		case 14: return 13;
		case 15: return 16;     /* information */
		case 16: return 15;
		case 17: return 18;     /* address mask */
		case 18: return 17;
		}
	} else {
		switch (type) {
		case 128: return 129;   /* echo */
		case 129: return 128;
		case 139: return 140;   /* node information */
		case 140: return 139;
		}
	}
	return type;                    /* no answer: the kernel will refuse it */
}

static void put_tuple(struct out *o, uint16_t type, const struct flow_tuple *t, bool has_l4)
{
	struct nlattr *tn = nest(o, type), *n;

	n = nest(o, CTA_TUPLE_IP);
	if (t->family == AF_INET) {
		put(o, CTA_IP_V4_SRC, 4, &t->src.v4);
		put(o, CTA_IP_V4_DST, 4, &t->dst.v4);
	} else {
		put(o, CTA_IP_V6_SRC, 16, t->src.bytes);
		put(o, CTA_IP_V6_DST, 16, t->dst.bytes);
	}
	nest_end(o, n);
	n = nest(o, CTA_TUPLE_PROTO);
	put_u8(o, CTA_PROTO_NUM, t->l4proto);
	if (t->l4proto == IPPROTO_ICMP) {
		put_raw16(o, CTA_PROTO_ICMP_ID, t->l4.icmp.id);
		put_u8(o, CTA_PROTO_ICMP_TYPE, t->l4.icmp.type);
		put_u8(o, CTA_PROTO_ICMP_CODE, t->l4.icmp.code);
	} else if (t->l4proto == IPPROTO_ICMPV6) {
		put_raw16(o, CTA_PROTO_ICMPV6_ID, t->l4.icmp.id);
		put_u8(o, CTA_PROTO_ICMPV6_TYPE, t->l4.icmp.type);
		put_u8(o, CTA_PROTO_ICMPV6_CODE, t->l4.icmp.code);
	} else if (l4_has_ports(t->l4proto)) {
		/* Without FLOW_A_PORTS (a 1.4.7 peer's GRE, UDPlite) the ports are zero. */
		put_raw16(o, CTA_PROTO_SRC_PORT, has_l4 ? t->l4.port.sport : 0);
		put_raw16(o, CTA_PROTO_DST_PORT, has_l4 ? t->l4.port.dport : 0);
	}
	nest_end(o, n);
	nest_end(o, tn);
}

/* The original tuple as the kernel must see it: normalised copy. */
static void orig_tuple(const struct flow_full *ff, struct flow_tuple *t)
{
	*t = ff->flow.orig;
	if (t->family == AF_INET) {
		memset(&t->src.bytes[4], 0, 12);
		memset(&t->dst.bytes[4], 0, 12);
	}
}

/*
 * The reply tuple of a create: the plain inversion of the original, NAT
 * left to CTA_NAT_SRC / CTA_NAT_DST.  Measured on 6.18: a reply tuple that
 * already carries the NAT makes nf_nat_setup_info() find nothing to change,
 * so the entry gets SRC_NAT_DONE but not IPS_SRC_NAT and its packets would
 * not be translated; a NAT'ed reply tuple without CTA_NAT_* gets no NAT
 * status bit at all (the kernel ignores them in CTA_STATUS).
 */
static void reply_tuple(const struct flow_tuple *o, struct flow_tuple *r)
{
	*r = *o;
	r->src = o->dst;
	r->dst = o->src;
	if (l4_is_icmp(o->l4proto)) {
		r->l4.icmp.id = o->l4.icmp.id;
		r->l4.icmp.type = (uint8_t)icmp_reply_type(o->l4proto, o->l4.icmp.type);
		r->l4.icmp.code = o->l4.icmp.code;
	} else {
		r->l4.port.sport = o->l4.port.dport;
		r->l4.port.dport = o->l4.port.sport;
	}
}

/* CTA_NAT_SRC / CTA_NAT_DST: one address (and one port), as the kernel's range. */
static void put_nat(struct out *o, uint16_t type, uint8_t family, const union flow_addr *addr,
		    bool has_port, uint16_t port)
{
	struct nlattr *n = nest(o, type), *p;

	if (family == AF_INET) {
		put(o, CTA_NAT_V4_MINIP, 4, &addr->v4);
		put(o, CTA_NAT_V4_MAXIP, 4, &addr->v4);
	} else {
		put(o, CTA_NAT_V6_MINIP, 16, addr->bytes);
		put(o, CTA_NAT_V6_MAXIP, 16, addr->bytes);
	}
	if (has_port) {
		p = nest(o, CTA_NAT_PROTO);
		put_raw16(o, CTA_PROTONAT_PORT_MIN, port);
		put_raw16(o, CTA_PROTONAT_PORT_MAX, port);
		nest_end(o, p);
	}
	nest_end(o, n);
}

static void put_protoinfo(struct out *o, const struct flow_full *ff, unsigned opts)
{
	const struct flow *f = &ff->flow;
	struct nlattr *n, *p;

	switch (f->orig.l4proto) {
	case IPPROTO_TCP: {
		struct nf_ct_tcp_flags fl = { 0, 0 };
		bool tracking = opts & KERNEL_BUILD_WINDOW_TRACKING;

		n = nest(o, CTA_PROTOINFO);
		p = nest(o, CTA_PROTOINFO_TCP);
		if (f->attrs & FLOW_A_PROTO_STATE)
			put_u8(o, CTA_PROTOINFO_TCP_STATE, f->proto_state);
		if (tracking && (f->attrs & FLOW_A_WSCALE)) {
			/* The kernel takes the scales only with WINDOW_SCALE seen both ways. */
			fl.flags = fl.mask = IP_CT_TCP_FLAG_WINDOW_SCALE;
			put_u8(o, CTA_PROTOINFO_TCP_WSCALE_ORIGINAL, f->wscale_orig);
			put_u8(o, CTA_PROTOINFO_TCP_WSCALE_REPLY, f->wscale_repl);
		}
		if (!tracking)
			fl.flags = fl.mask = IP_CT_TCP_FLAG_BE_LIBERAL;
		if (fl.mask) {
			put(o, CTA_PROTOINFO_TCP_FLAGS_ORIGINAL, sizeof(fl), &fl);
			put(o, CTA_PROTOINFO_TCP_FLAGS_REPLY, sizeof(fl), &fl);
		}
		nest_end(o, p);
		nest_end(o, n);
		break;
	}
	case IPPROTO_SCTP:
		if (!(f->attrs & (FLOW_A_PROTO_STATE | FLOW_A_SCTP_VTAGS)))
			break;
		n = nest(o, CTA_PROTOINFO);
		p = nest(o, CTA_PROTOINFO_SCTP);
		if (f->attrs & FLOW_A_PROTO_STATE)
			put_u8(o, CTA_PROTOINFO_SCTP_STATE, f->proto_state);
		if (f->attrs & FLOW_A_SCTP_VTAGS) {
			put_be32(o, CTA_PROTOINFO_SCTP_VTAG_ORIGINAL, ff->ext.sctp_vtag_orig);
			put_be32(o, CTA_PROTOINFO_SCTP_VTAG_REPLY, ff->ext.sctp_vtag_repl);
		}
		nest_end(o, p);
		nest_end(o, n);
		break;
	case IPPROTO_DCCP:
		if (!(f->attrs & (FLOW_A_PROTO_STATE | FLOW_A_DCCP_ROLE)))
			break;
		n = nest(o, CTA_PROTOINFO);
		p = nest(o, CTA_PROTOINFO_DCCP);
		if (f->attrs & FLOW_A_PROTO_STATE)
			put_u8(o, CTA_PROTOINFO_DCCP_STATE, f->proto_state);
		if (f->attrs & FLOW_A_DCCP_ROLE)
			put_u8(o, CTA_PROTOINFO_DCCP_ROLE, f->dccp_role);
		nest_end(o, p);
		nest_end(o, n);
		break;
	default:
		break;
	}
}

static void put_seq_adj(struct out *o, uint16_t type, const uint32_t *v)
{
	struct nlattr *n = nest(o, type);

	put_be32(o, CTA_SEQADJ_CORRECTION_POS, v[0]);
	put_be32(o, CTA_SEQADJ_OFFSET_BEFORE, v[1]);
	put_be32(o, CTA_SEQADJ_OFFSET_AFTER, v[2]);
	nest_end(o, n);
}

/* The kernel holds 128 labels (NF_CT_LABELS_MAX_SIZE) and refuses a longer CTA_LABELS. */
#define KERNEL_LABEL_BYTES 16

/*
 * Labels: the kernel reads CTA_LABELS as 32-bit words laid over its array
 * of unsigned long, so build that array in host order.  All 128 bits go,
 * under a mask of all ones, so that an update replaces the entry's whole
 * set and clears the bits the state has lost; `l` NULL clears them all.
 */
static void put_labels(struct out *o, const struct flow_labels *l)
{
	unsigned long bits[KERNEL_LABEL_BYTES / sizeof(unsigned long)] = { 0 };
	unsigned long mask[KERNEL_LABEL_BYTES / sizeof(unsigned long)];
	const unsigned per_long = sizeof(unsigned long) / 4;
	unsigned words = l ? l->words : 0;

	if (words > KERNEL_LABEL_BYTES / 4)
		words = KERNEL_LABEL_BYTES / 4;
	for (unsigned w = 0; w < words; w++)
		bits[w / per_long] |= (unsigned long)l->w[w] << (32 * (w % per_long));
	memset(mask, 0xff, sizeof(mask));
	put(o, CTA_LABELS, sizeof(bits), bits);
	put(o, CTA_LABELS_MASK, sizeof(mask), mask);
}

int kernel_ct_build(void *buf, size_t cap, enum kernel_op op, const struct flow_full *ff,
		    uint32_t timeout, unsigned opts, uint32_t seq)
{
	struct out o = { .cap = cap };
	struct nfgenmsg *nfg;
	struct flow_tuple ot, rt;
	const struct flow *f;
	uint16_t type, flags = NLM_F_REQUEST;
	uint8_t family;

	if ((unsigned)op >= KERNEL_OP_MAX)
		return -EINVAL;
	if (op == KERNEL_OP_FLUSH)
		family = ff ? ff->flow.orig.family : AF_UNSPEC;
	else if (!ff || (ff->flow.orig.family != AF_INET && ff->flow.orig.family != AF_INET6))
		return -EINVAL;
	else
		family = ff->flow.orig.family;
	if (cap < NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(*nfg)))
		return -ENOSPC;

	switch (op) {
	case KERNEL_OP_CREATE:
		type = IPCTNL_MSG_CT_NEW;
		flags |= NLM_F_CREATE | NLM_F_EXCL;
		break;
	case KERNEL_OP_UPDATE:
		type = IPCTNL_MSG_CT_NEW;
		break;
	default:
		type = IPCTNL_MSG_CT_DELETE;
		break;
	}
	if (opts & KERNEL_BUILD_ACK)
		flags |= NLM_F_ACK;
	o.nlh = mnl_nlmsg_put_header(buf);
	o.nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | type;
	o.nlh->nlmsg_flags = flags;
	o.nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(o.nlh, sizeof(*nfg));
	nfg->nfgen_family = family;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = 0;
	if (op == KERNEL_OP_FLUSH)
		return (int)o.nlh->nlmsg_len;

	f = &ff->flow;
	orig_tuple(ff, &ot);
	put_tuple(&o, CTA_TUPLE_ORIG, &ot, f->attrs & (FLOW_A_PORTS | FLOW_A_ICMP));
	if (f->orig.zone || (f->attrs & FLOW_A_ZONE))
		put_be16(&o, CTA_ZONE, f->orig.zone);
	if (op == KERNEL_OP_DELETE)
		return o.full ? -ENOSPC : (int)o.nlh->nlmsg_len;

	if (op == KERNEL_OP_CREATE) {
		reply_tuple(&ot, &rt);
		put_tuple(&o, CTA_TUPLE_REPLY, &rt, f->attrs & (FLOW_A_PORTS | FLOW_A_ICMP));
	}
	/*
	 * The kernel refuses (EBUSY) a status whose CONFIRMED, EXPECTED or
	 * DYING bit differs from the entry's: a new entry is CONFIRMED and gets
	 * EXPECTED from the master itself.  The NAT bits are ignored, so they
	 * are cleared rather than sent.
	 */
	if (op == KERNEL_OP_CREATE) {
		uint32_t st = (f->attrs & FLOW_A_STATUS) ? f->status : 0;

		st &= ~(uint32_t)(IPS_EXPECTED | IPS_DYING | IPS_NAT_MASK | IPS_NAT_DONE_MASK);
		put_be32(&o, CTA_STATUS, st | IPS_CONFIRMED);
	} else if (f->attrs & FLOW_A_STATUS) {
		uint32_t st = f->status & ~(uint32_t)(IPS_DYING | IPS_NAT_MASK | IPS_NAT_DONE_MASK);

		put_be32(&o, CTA_STATUS, st | IPS_CONFIRMED);
	}
	if (timeout != KERNEL_TIMEOUT_KEEP || op == KERNEL_OP_CREATE)
		put_be32(&o, CTA_TIMEOUT, timeout == KERNEL_TIMEOUT_KEEP ? f->timeout : timeout);
	if (f->attrs & FLOW_A_MARK)
		put_be32(&o, CTA_MARK, f->mark);
	put_protoinfo(&o, ff, opts);

	if (op == KERNEL_OP_CREATE) {
		uint32_t a = f->attrs;
		bool ports = l4_has_ports(ot.l4proto);

		/* The kernel applies DST first, then SRC; each range is one address. */
		if (a & (FLOW_A_DNAT | FLOW_A_DPAT))
			put_nat(&o, CTA_NAT_DST, family, (a & FLOW_A_DNAT) ? &ff->ext.dnat : &ot.dst,
				ports && (a & FLOW_A_DPAT), ff->ext.dpat);
		if (a & (FLOW_A_SNAT | FLOW_A_SPAT))
			put_nat(&o, CTA_NAT_SRC, family, (a & FLOW_A_SNAT) ? &ff->ext.snat : &ot.src,
				ports && (a & FLOW_A_SPAT), ff->ext.spat);
		if (a & FLOW_A_MASTER) {
			struct flow_tuple mt = ff->ext.master;

			if (mt.family == AF_INET) {
				memset(&mt.src.bytes[4], 0, 12);
				memset(&mt.dst.bytes[4], 0, 12);
			}
			put_tuple(&o, CTA_TUPLE_MASTER, &mt, true);
		}
		if ((a & FLOW_A_HELPER) && ff->ext.helper[0]) {
			struct nlattr *n = nest(&o, CTA_HELP);
			size_t len = strnlen(ff->ext.helper, FLOW_HELPER_NAME_MAX - 1);
			char name[FLOW_HELPER_NAME_MAX] = { 0 };

			memcpy(name, ff->ext.helper, len);
			put(&o, CTA_HELP_NAME, len + 1, name);
			nest_end(&o, n);
		}
	}
	if (f->attrs & FLOW_A_NAT_SEQ) {
		put_seq_adj(&o, CTA_SEQ_ADJ_ORIG, &ff->ext.nat_seq[0]);
		put_seq_adj(&o, CTA_SEQ_ADJ_REPLY, &ff->ext.nat_seq[3]);
	}
	if (f->attrs & FLOW_A_LABELS)
		put_labels(&o, &ff->labels);
	else if ((f->attrs & FLOW_A_LABELS_GONE) && op == KERNEL_OP_UPDATE)
		put_labels(&o, NULL);   /* a new entry has none to clear */
	if (f->attrs & FLOW_A_SYNPROXY_EXT) {
		struct nlattr *n = nest(&o, CTA_SYNPROXY);

		put_be32(&o, CTA_SYNPROXY_ISN, ff->ext.synproxy[1]);
		put_be32(&o, CTA_SYNPROXY_ITS, ff->ext.synproxy[0]);
		put_be32(&o, CTA_SYNPROXY_TSOFF, ff->ext.synproxy[2]);
		nest_end(&o, n);
	}
	return o.full ? -ENOSPC : (int)o.nlh->nlmsg_len;
}

/* ---- tuples for exp_attr.c (attr.h) ---------------------------------------------- */

enum kernel_reason kernel_tuple_parse(const struct nlattr *nest, uint8_t family,
				      struct flow_tuple *out)
{
	struct raw_tuple raw;
	enum kernel_reason why = parse_tuple(nest, &raw);

	memset(out, 0, sizeof(*out));
	if (why != KERNEL_OK)
		return why;
	return tuple_to_flow(&raw, family, out, NULL);
}

bool kernel_tuple_put(struct nlmsghdr *nlh, size_t cap, uint16_t type, const struct flow_tuple *t)
{
	struct out o = { .nlh = nlh, .cap = cap };

	put_tuple(&o, type, t, true);
	return !o.full;
}
