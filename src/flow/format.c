/*
 * format.c - flows and expectations as text lines, for dumps (-i, -e) and
 * logs, and flows as conntrackd's XML (-x).
 */
#include "flow/format.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <linux/netfilter/nf_conntrack_common.h>

struct out {
	char *buf;
	size_t cap;
	size_t len;         /* what would have been written, as snprintf counts */
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	size_t room = o->len < o->cap ? o->cap - o->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static const char *const tcp_states[] = {
	"NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT", "CLOSE_WAIT",
	"LAST_ACK", "TIME_WAIT", "CLOSE", "SYN_SENT2",
};

static const char *const sctp_states[] = {
	"NONE", "CLOSED", "COOKIE_WAIT", "COOKIE_ECHOED", "ESTABLISHED", "SHUTDOWN_SENT",
	"SHUTDOWN_RECD", "SHUTDOWN_ACK_SENT", "HEARTBEAT_SENT", "HEARTBEAT_ACKED",
};

static const char *const dccp_states[] = {
	"NONE", "REQUEST", "RESPOND", "PARTOPEN", "OPEN", "CLOSEREQ", "CLOSING",
	"TIMEWAIT", "IGNORE", "INVALID",
};

#define NAME_AT(table, i) ((i) < sizeof(table) / sizeof(table[0]) ? table[i] : NULL)

const char *flow_state_name(uint8_t l4proto, uint8_t state)
{
	switch (l4proto) {
	case IPPROTO_TCP:
		return NAME_AT(tcp_states, state);
	case IPPROTO_SCTP:
		return NAME_AT(sctp_states, state);
	case IPPROTO_DCCP:
		return NAME_AT(dccp_states, state);
	}
	return NULL;
}

static const char *proto_name(uint8_t p)
{
	switch (p) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_UDPLITE:
		return "udplite";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	case IPPROTO_SCTP:
		return "sctp";
	case IPPROTO_DCCP:
		return "dccp";
	case IPPROTO_GRE:
		return "gre";
	}
	return "unknown";
}

/*
 * The reply tuple's ICMP type, as the kernel inverts a tuple (its invmap in
 * nf_conntrack_proto_icmp.c / _icmpv6.c, both ways); 0xff if none.
 */
static uint8_t icmp_reply_type(uint8_t family, uint8_t type)
{
	if (family == AF_INET) {
		switch (type) {
		case 8: return 0;      /* echo */
		case 0: return 8;
		case 13: return 14;    /* timestamp */
		case 14: return 13;
		case 15: return 16;    /* information */
		case 16: return 15;
		case 17: return 18;    /* address mask */
		case 18: return 17;
		}
	} else {
		switch (type) {
		case 128: return 129;  /* echo */
		case 129: return 128;
		case 139: return 140;  /* node information */
		case 140: return 139;
		}
	}
	return 0xff;
}

void flow_reply_tuple(const struct flow_full *f, struct flow_tuple *r)
{
	const struct flow *o = &f->flow;

	memset(r, 0, sizeof(*r));
	r->family = o->orig.family;
	r->l4proto = o->orig.l4proto;
	r->zone = o->orig.zone;
	r->src = (o->attrs & FLOW_A_DNAT) ? f->ext.dnat : o->orig.dst;
	r->dst = (o->attrs & FLOW_A_SNAT) ? f->ext.snat : o->orig.src;
	if (o->attrs & FLOW_A_ICMP) {
		r->l4.icmp.id = o->orig.l4.icmp.id;
		r->l4.icmp.type = icmp_reply_type(o->orig.family, o->orig.l4.icmp.type);
		r->l4.icmp.code = o->orig.l4.icmp.code;
	} else if (o->attrs & FLOW_A_PORTS) {
		r->l4.port.sport = (o->attrs & FLOW_A_DPAT) ? f->ext.dpat : o->orig.l4.port.dport;
		r->l4.port.dport = (o->attrs & FLOW_A_SPAT) ? f->ext.spat : o->orig.l4.port.sport;
	}
}

/*
 * The layer-4 part of a tuple by its protocol, as libnetfilter_conntrack
 * prints it: zeros for a part the state lacks (the fields are zero then),
 * GRE's keys in hex, nothing for a protocol without ports.
 */
static void put_l4(struct out *o, const struct flow_tuple *t)
{
	switch (t->l4proto) {
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		put(o, " type=%u code=%u id=%u", t->l4.icmp.type, t->l4.icmp.code, ntohs(t->l4.icmp.id));
		break;
	case IPPROTO_GRE:
		put(o, " srckey=0x%x dstkey=0x%x", ntohs(t->l4.port.sport), ntohs(t->l4.port.dport));
		break;
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
	case IPPROTO_DCCP:
		put(o, " sport=%u dport=%u", ntohs(t->l4.port.sport), ntohs(t->l4.port.dport));
		break;
	}
}

/* The same in XML; ICMP's id, type and code are not printed: the library leaves them out. */
static void put_xml_l4(struct out *o, const struct flow_tuple *t)
{
	switch (t->l4proto) {
	case IPPROTO_GRE:
		put(o, "<srckey>0x%x</srckey><dstkey>0x%x</dstkey>", ntohs(t->l4.port.sport),
		    ntohs(t->l4.port.dport));
		break;
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
	case IPPROTO_DCCP:
		put(o, "<sport>%u</sport><dport>%u</dport>", ntohs(t->l4.port.sport), ntohs(t->l4.port.dport));
		break;
	}
}

static void put_tuple(struct out *o, const struct flow_tuple *t)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	int af = t->family == AF_INET6 ? AF_INET6 : AF_INET;

	inet_ntop(af, &t->src, src, sizeof(src));
	inet_ntop(af, &t->dst, dst, sizeof(dst));
	put(o, " src=%s dst=%s", src, dst);
	put_l4(o, t);
}

static void put_counters(struct out *o, const struct flow_full *f, int dir, unsigned opts)
{
	if ((opts & FLOW_FMT_COUNTERS) && f->counters.present)
		put(o, " packets=%llu bytes=%llu", (unsigned long long)f->counters.packets[dir],
		    (unsigned long long)f->counters.bytes[dir]);
}

int flow_format(char *buf, size_t cap, const struct flow_full *f, unsigned opts)
{
	const struct flow *fl = &f->flow;
	struct out o = { .buf = buf, .cap = cap };
	const char *state = NULL;

	if (cap)
		buf[0] = '\0';
	put(&o, "%-8s %u", proto_name(fl->orig.l4proto), fl->orig.l4proto);
	if (opts & FLOW_FMT_TIMEOUT)
		put(&o, " %u", fl->timeout);
	/* A state out of its protocol's table prints as NONE, as libnetfilter_conntrack has it. */
	if ((fl->attrs & FLOW_A_PROTO_STATE) && flow_state_name(fl->orig.l4proto, 0))
		state = flow_state_name(fl->orig.l4proto, fl->proto_state);
	if (state || ((fl->attrs & FLOW_A_PROTO_STATE) && flow_state_name(fl->orig.l4proto, 0)))
		put(&o, " %s", state ? state : "NONE");
	put_tuple(&o, &fl->orig);
	put_counters(&o, f, 0, opts);
	if ((fl->attrs & FLOW_A_STATUS) && !(fl->status & IPS_SEEN_REPLY))
		put(&o, " [UNREPLIED]");
	if (opts & FLOW_FMT_REPLY) {
		struct flow_tuple reply;

		flow_reply_tuple(f, &reply);
		put_tuple(&o, &reply);
		put_counters(&o, f, 1, opts);
	}
	/* As libnetfilter_conntrack: an offloaded flow says so in place of ASSURED. */
	if ((fl->attrs & FLOW_A_STATUS) && (fl->status & IPS_HW_OFFLOAD))
		put(&o, " [HW_OFFLOAD]");
	else if ((fl->attrs & FLOW_A_STATUS) && (fl->status & IPS_OFFLOAD))
		put(&o, " [OFFLOAD]");
	else if ((fl->attrs & FLOW_A_STATUS) && (fl->status & IPS_ASSURED))
		put(&o, " [ASSURED]");
	/* As 1.4.7's dumps: a mark only when the state carries one (the kernel
	 * leaves a zero mark out of its events, and 1.4.7 out of its messages). */
	if (fl->attrs & FLOW_A_MARK)
		put(&o, " mark=%u", fl->mark);
	if (fl->orig.zone || (fl->attrs & FLOW_A_ZONE))
		put(&o, " zone=%u", fl->orig.zone);
	/* As libnetfilter_conntrack counts it: whole seconds of the stop less those of the start. */
	if ((opts & FLOW_FMT_COUNTERS) && f->counters.times && f->counters.stop_ns)
		put(&o, " delta-time=%llu", (unsigned long long)(f->counters.stop_ns / 1000000000u -
								  f->counters.start_ns / 1000000000u));
	if (fl->attrs & FLOW_A_HELPER)
		put(&o, " helper=%s", f->ext.helper);
	if (opts & FLOW_FMT_PLAIN)
		return (int)o.len;
	if ((fl->attrs & FLOW_A_LABELS) && f->labels.words) {
		/* The label bitmap as one hex number, most significant word first. */
		put(&o, " labels=0x");
		for (unsigned i = f->labels.words; i-- > 0;)
			put(&o, "%08x", f->labels.w[i]);
	}
	if (fl->attrs & FLOW_A_MASTER) {
		char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
		int af = f->ext.master.family == AF_INET6 ? AF_INET6 : AF_INET;

		inet_ntop(af, &f->ext.master.src, src, sizeof(src));
		inet_ntop(af, &f->ext.master.dst, dst, sizeof(dst));
		put(&o, " master=%s:%s-%s", proto_name(f->ext.master.l4proto), src, dst);
	}
	return (int)o.len;
}

/* ---- XML, as conntrackd 1.4.7 prints -i -x and -e -x ------------------------------- */

static void put_xml_tuple(struct out *o, const char *dir, const struct flow_tuple *t)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	bool v6 = t->family == AF_INET6;

	inet_ntop(v6 ? AF_INET6 : AF_INET, &t->src, src, sizeof(src));
	inet_ntop(v6 ? AF_INET6 : AF_INET, &t->dst, dst, sizeof(dst));
	put(o, "<meta direction=\"%s\"><layer3 protonum=\"%u\" protoname=\"%s\"><src>%s</src>"
	    "<dst>%s</dst></layer3><layer4 protonum=\"%u\" protoname=\"%s\">", dir,
	    v6 ? AF_INET6 : AF_INET, v6 ? "ipv6" : "ipv4", src, dst, t->l4proto, proto_name(t->l4proto));
	put_xml_l4(o, t);
	put(o, "</layer4></meta>");
}

int flow_format_xml(char *buf, size_t cap, const struct flow_full *f, unsigned opts)
{
	const struct flow *fl = &f->flow;
	struct out o = { .buf = buf, .cap = cap };
	bool independent;

	if (cap)
		buf[0] = '\0';
	put(&o, "<flow>");
	put_xml_tuple(&o, "original", &fl->orig);
	if (opts & FLOW_FMT_REPLY) {
		struct flow_tuple reply;

		flow_reply_tuple(f, &reply);
		put_xml_tuple(&o, "reply", &reply);
	} else {
		/* 1.4.7 prints an external state's missing reply tuple this way. */
		put(&o, "<meta direction=\"reply\"><layer3 protonum=\"0\" protoname=\"unknown\"><src></src>"
		    "<dst></dst></layer3><layer4 protonum=\"0\" protoname=\"unknown\"></layer4></meta>");
	}
	/*
	 * libnetfilter_conntrack opens the independent part only for a state
	 * with one of these (labels open it though they print nothing in it).
	 */
	independent = (fl->attrs & (FLOW_A_STATUS | FLOW_A_MARK | FLOW_A_ZONE | FLOW_A_LABELS)) ||
		      fl->orig.zone || (opts & FLOW_FMT_TIMEOUT) ||
		      ((fl->attrs & FLOW_A_PROTO_STATE) && flow_state_name(fl->orig.l4proto, 0));
	if (independent)
		put(&o, "<meta direction=\"independent\">");
	/*
	 * libnetfilter_conntrack names SCTP's and DCCP's states from the TCP
	 * table too (SCTP ESTABLISHED, 4, prints as FIN_WAIT; DCCP OPEN, 4,
	 * too), and one out of the table as NONE: 1.4.7's XML does, so we do.
	 */
	if ((fl->orig.l4proto == IPPROTO_TCP || fl->orig.l4proto == IPPROTO_SCTP ||
	     fl->orig.l4proto == IPPROTO_DCCP) && (fl->attrs & FLOW_A_PROTO_STATE)) {
		const char *name = flow_state_name(IPPROTO_TCP, fl->proto_state);

		put(&o, "<state>%s</state>", name ? name : "NONE");
	}
	if (opts & FLOW_FMT_TIMEOUT)
		put(&o, "<timeout>%u</timeout>", fl->timeout);
	if (fl->attrs & FLOW_A_MARK)
		put(&o, "<mark>%u</mark>", fl->mark);
	if (fl->orig.zone || (fl->attrs & FLOW_A_ZONE))
		put(&o, "<zone>%u</zone>", fl->orig.zone);
	if ((fl->attrs & FLOW_A_STATUS) && (fl->status & IPS_ASSURED))
		put(&o, "<assured/>");
	if ((fl->attrs & FLOW_A_STATUS) && !(fl->status & IPS_SEEN_REPLY))
		put(&o, "<unreplied/>");
	if (independent)
		put(&o, "</meta>");
	if ((fl->attrs & FLOW_A_HELPER) && f->ext.helper[0])
		put(&o, "<helper>%s</helper>", f->ext.helper);
	put(&o, "</flow>");
	return (int)o.len;
}

/* ---- expectations ---------------------------------------------------------------------- */

/* NF_CT_EXPECT_* (linux/netfilter/nf_conntrack_common.h), as conntrack prints them. */
static const struct {
	uint32_t bit;
	const char *name, *xml;
} exp_flags[] = {
	{ 1u << 0, "PERMANENT", "permanent" },
	{ 1u << 1, "INACTIVE", "inactive" },
	{ 1u << 2, "USERSPACE", "userspace" },
};

/* Each tuple's layer 4 by its own protocol: a PPTP master (TCP) of a GRE expectation keeps its ports. */
static void put_exp_tuple(struct out *o, const char *prefix, const struct flow_tuple *t)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

	inet_ntop(t->family, t->src.bytes, src, sizeof(src));
	inet_ntop(t->family, t->dst.bytes, dst, sizeof(dst));
	put(o, " %ssrc=%s %sdst=%s", prefix, src, prefix, dst);
	put_l4(o, t);
}

static bool exp_has_ports(const struct flow_exp *x)
{
	uint8_t p = x->tuple.l4proto;

	return p == IPPROTO_TCP || p == IPPROTO_UDP || p == IPPROTO_UDPLITE || p == IPPROTO_SCTP ||
	       p == IPPROTO_DCCP;
}

int flow_exp_format(char *buf, size_t cap, const struct flow_exp *x, unsigned opts)
{
	struct out o = { buf, cap, 0 };
	bool ports = exp_has_ports(x);

	if (cap)
		buf[0] = '\0';
	if (opts & FLOW_FMT_TIMEOUT)
		put(&o, "%u ", x->attrs & FLOW_EXP_A_TIMEOUT ? x->timeout : 0);
	put(&o, "proto=%u", x->tuple.l4proto);
	put_exp_tuple(&o, "", &x->tuple);
	put_exp_tuple(&o, "mask-", &x->mask);
	put_exp_tuple(&o, "master-", &x->master);
	/* In libnetfilter_conntrack's order: the zone, the flags joined by commas, the class. */
	if (x->master.zone)
		put(&o, " zone=%u", x->master.zone);
	for (size_t i = 0, n = 0; i < sizeof(exp_flags) / sizeof(exp_flags[0]); i++)
		if (x->flags & exp_flags[i].bit)
			put(&o, "%s%s", n++ ? "," : " ", exp_flags[i].name);
	if (x->attrs & FLOW_EXP_A_CLASS)
		put(&o, " class=%u", x->class);
	if (x->attrs & FLOW_EXP_A_HELPER)
		put(&o, " helper=%s", x->helper);
	if (opts & FLOW_FMT_PLAIN)
		return (int)o.len;
	if (x->attrs & FLOW_EXP_A_NAT) {
		char nat[INET6_ADDRSTRLEN];

		inet_ntop(x->nat.family, x->nat.src.bytes, nat, sizeof(nat));
		put(&o, " nat-dir=%s nat-src=%s", x->nat_dir ? "reply" : "original", nat);
		if (ports)
			put(&o, " nat-sport=%u", ntohs(x->nat.l4.port.sport));
	}
	if (x->attrs & FLOW_EXP_A_FN)
		put(&o, " fn=%s", x->fn);
	return (int)o.len;
}

/* One side (layer 3 or 4) of the three tuples, as 1.4.7's expectation XML has them. */
static void put_exp_xml_part(struct out *o, const struct flow_exp *x, bool l4)
{
	static const char *const names[] = { "expected", "mask", "master" };
	const struct flow_tuple *t[] = { &x->tuple, &x->mask, &x->master };

	for (int i = 0; i < 3; i++) {
		char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

		if (l4) {
			put(o, "<%s>", names[i]);
			put_xml_l4(o, t[i]);
			put(o, "</%s>", names[i]);
			continue;
		}
		inet_ntop(t[i]->family, t[i]->src.bytes, src, sizeof(src));
		inet_ntop(t[i]->family, t[i]->dst.bytes, dst, sizeof(dst));
		put(o, "<%s><src>%s</src><dst>%s</dst></%s>", names[i], src, dst, names[i]);
	}
}

int flow_exp_format_xml(char *buf, size_t cap, const struct flow_exp *x, unsigned opts)
{
	struct out o = { buf, cap, 0 };
	bool v6 = x->tuple.family == AF_INET6;

	if (cap)
		buf[0] = '\0';
	put(&o, "<flow><layer3 protonum=\"%u\" protoname=\"%s\">", v6 ? AF_INET6 : AF_INET,
	    v6 ? "ipv6" : "ipv4");
	put_exp_xml_part(&o, x, false);
	put(&o, "</layer3><layer4 protonum=\"%u\" protoname=\"%s\">", x->tuple.l4proto,
	    proto_name(x->tuple.l4proto));
	put_exp_xml_part(&o, x, true);
	put(&o, "</layer4><meta>");
	if (x->attrs & FLOW_EXP_A_HELPER)
		put(&o, "<helper-name>%s</helper-name>", x->helper);
	if ((opts & FLOW_FMT_TIMEOUT) && (x->attrs & FLOW_EXP_A_TIMEOUT))
		put(&o, "<timeout>%u</timeout>", x->timeout);
	if (x->attrs & FLOW_EXP_A_CLASS)
		put(&o, "<class>%u</class>", x->class);
	if (x->master.zone)
		put(&o, "<zone>%u</zone>", x->master.zone);
	for (size_t i = 0; i < sizeof(exp_flags) / sizeof(exp_flags[0]); i++)
		if (x->flags & exp_flags[i].bit)
			put(&o, "<%s/>", exp_flags[i].xml);
	put(&o, "</meta></flow>");
	return (int)o.len;
}
