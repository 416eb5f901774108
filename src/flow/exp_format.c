/*
 * exp_format.c - an expectation as one line of text, in the shape of
 * `conntrack -L expect` and `conntrackd -i expect`:
 *
 *   297 proto=6 src=10.0.0.2 dst=10.0.0.3 sport=0 dport=41739
 *       mask-src=255.255.255.255 mask-dst=255.255.255.255 sport=0 dport=65535
 *       master-src=10.0.0.2 master-dst=10.0.0.3 sport=36390 dport=21 class=0 helper=ftp
 *
 * (one line).  Pure: writes into a caller's buffer.
 */
#include "flow_format.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>

/* NF_CT_EXPECT_* (linux/netfilter/nf_conntrack_common.h), as conntrack prints them. */
static const struct {
	uint32_t bit;
	const char *name;
} exp_flags[] = {
	{ 1u << 0, "PERMANENT" },
	{ 1u << 1, "INACTIVE" },
	{ 1u << 2, "USERSPACE" },
};

struct out {
	char *buf;
	size_t cap, len;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->len < o->cap ? o->buf + o->len : NULL, o->len < o->cap ? o->cap - o->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static void put_tuple(struct out *o, const char *prefix, const struct flow_tuple *t, bool ports)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

	inet_ntop(t->family, t->src.bytes, src, sizeof(src));
	inet_ntop(t->family, t->dst.bytes, dst, sizeof(dst));
	put(o, " %ssrc=%s %sdst=%s", prefix, src, prefix, dst);
	if (ports)
		put(o, " sport=%u dport=%u", ntohs(t->l4.port.sport), ntohs(t->l4.port.dport));
}

int flow_exp_format(char *buf, size_t cap, const struct flow_exp *x)
{
	struct out o = { buf, cap, 0 };
	bool ports = x->tuple.l4proto == IPPROTO_TCP || x->tuple.l4proto == IPPROTO_UDP ||
		     x->tuple.l4proto == IPPROTO_UDPLITE || x->tuple.l4proto == IPPROTO_SCTP ||
		     x->tuple.l4proto == IPPROTO_DCCP;

	if (cap)
		buf[0] = '\0';
	put(&o, "%u proto=%u", x->attrs & FLOW_EXP_A_TIMEOUT ? x->timeout : 0, x->tuple.l4proto);
	put_tuple(&o, "", &x->tuple, ports);
	put_tuple(&o, "mask-", &x->mask, ports);
	put_tuple(&o, "master-", &x->master, ports);
	for (size_t i = 0; i < sizeof(exp_flags) / sizeof(exp_flags[0]); i++)
		if (x->flags & exp_flags[i].bit)
			put(&o, " %s", exp_flags[i].name);
	if (x->attrs & FLOW_EXP_A_CLASS)
		put(&o, " class=%u", x->class);
	if (x->master.zone)
		put(&o, " zone=%u", x->master.zone);
	if (x->attrs & FLOW_EXP_A_HELPER)
		put(&o, " helper=%s", x->helper);
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
