/*
 * bpf_filter.c - the Filter as a classic BPF program (see kernel_bpf.h).
 *
 * Layout of what the program reads: the nlmsghdr (16 bytes; nlmsg_type at
 * 4, in host order), the nfgenmsg (family at 16), then the attributes from
 * 20.  The kernel's SKF_AD_NLATTR finds a top-level attribute by type
 * (A = where to start, X = type; A becomes its offset, 0 if absent) and
 * SKF_AD_NLATTR_NEST one inside the nest at A; loads with X = that offset
 * then read the payload at X + 4.  Classic BPF only jumps forward and its
 * conditional jumps reach 255 instructions, so every far jump is a JA to a
 * label, fixed up at the end.
 *
 * Scratch memory: M[0] the original tuple's offset, M[1] the protocol,
 * M[2] the endpoint being matched.
 */
#include "kernel/bpf.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#define ATTRS_AT        20u     /* nlmsghdr + nfgenmsg */
#define FAMILY_AT       16u
/* The bytes of nlmsg_type (host order): subsystem in the high one. */
#if __BYTE_ORDER == __LITTLE_ENDIAN
#define SUBSYS_AT       5u
#else
#define SUBSYS_AT       4u
#endif
#define MAX_LABELS      4096
#define ACCEPT_ALL      0xffffffffu

enum { L_ACCEPT, L_DROP, L_FIRST_FREE };

struct gen {
	struct sock_filter *p;
	size_t n, cap;
	bool full;
	unsigned nlabels;
	int at[MAX_LABELS];             /* instruction index of each label, -1 until placed */
	/* JA instructions to fix up: index and label */
	unsigned fix_insn[MAX_LABELS * 2];
	unsigned fix_label[MAX_LABELS * 2];
	unsigned nfix;
};

static void emit(struct gen *g, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf)
{
	if (g->n == g->cap) {
		g->full = true;
		return;
	}
	g->p[g->n++] = (struct sock_filter){ .code = code, .jt = jt, .jf = jf, .k = k };
}

static void stmt(struct gen *g, uint16_t code, uint32_t k)
{
	emit(g, code, k, 0, 0);
}

static unsigned label(struct gen *g)
{
	if (g->nlabels == MAX_LABELS) {
		g->full = true;
		return L_DROP;
	}
	g->at[g->nlabels] = -1;
	return g->nlabels++;
}

static void place(struct gen *g, unsigned l)
{
	g->at[l] = (int)g->n;
}

static void jump(struct gen *g, unsigned l)
{
	if (g->nfix == sizeof(g->fix_insn) / sizeof(g->fix_insn[0])) {
		g->full = true;
		return;
	}
	g->fix_insn[g->nfix] = (unsigned)g->n;
	g->fix_label[g->nfix++] = l;
	stmt(g, BPF_JMP | BPF_JA, 0);
}

/* if (A == k) goto l */
static void if_eq(struct gen *g, uint32_t k, unsigned l)
{
	emit(g, BPF_JMP | BPF_JEQ | BPF_K, k, 0, 1);
	jump(g, l);
}

/* if (A != k) goto l */
static void if_ne(struct gen *g, uint32_t k, unsigned l)
{
	emit(g, BPF_JMP | BPF_JEQ | BPF_K, k, 1, 0);
	jump(g, l);
}

/* A = offset of top-level attribute `type`; absent: pass the event on (to user space). */
static void find_top(struct gen *g, uint32_t type)
{
	stmt(g, BPF_LD | BPF_IMM, ATTRS_AT);
	stmt(g, BPF_LDX | BPF_IMM, type);
	stmt(g, BPF_LD | BPF_B | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_NLATTR));
	if_eq(g, 0, L_ACCEPT);
}

/* A = offset of attribute `type` inside the nest at A; absent: pass the event on. */
static void find_nested(struct gen *g, uint32_t type)
{
	stmt(g, BPF_LDX | BPF_IMM, type);
	stmt(g, BPF_LD | BPF_B | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_NLATTR_NEST));
	if_eq(g, 0, L_ACCEPT);
}

static bool proto_listed(const struct config_filter_protocols *p, unsigned proto)
{
	return p->bitmap[proto / 8] & (1u << (proto % 8));
}

/* The protocol part: M[1] holds the protocol. */
static void gen_protocols(struct gen *g, const struct config_filter_protocols *p)
{
	unsigned listed = label(g), next = label(g);

	stmt(g, BPF_LD | BPF_MEM, 1);
	for (unsigned proto = 0; proto < 256; proto++)
		if (proto_listed(p, proto))
			if_eq(g, proto, listed);
	jump(g, p->accept ? L_DROP : next);
	place(g, listed);
	jump(g, p->accept ? next : L_DROP);
	place(g, next);
}

static uint32_t mask32(unsigned bits)
{
	return bits == 0 ? 0 : bits >= 32 ? 0xffffffffu : 0xffffffffu << (32 - bits);
}

/* One endpoint (its address attribute's offset in M[2]) against the IPv4 entries. */
static void gen_match_v4(struct gen *g, const struct config_filter_addresses *a, unsigned match)
{
	stmt(g, BPF_LDX | BPF_MEM, 2);
	/* One load and mask per prefix length, then a comparison per entry of that length. */
	for (int prefix = 32; prefix >= 0; prefix--) {
		bool any = false;

		for (unsigned i = 0; i < a->count; i++) {
			const struct config_addr *e = &a->addrs[i];

			if (e->family != AF_INET || e->prefix != prefix)
				continue;
			if (!any) {
				stmt(g, BPF_LD | BPF_W | BPF_IND, 4);
				if (prefix < 32)
					stmt(g, BPF_ALU | BPF_AND | BPF_K, mask32((unsigned)prefix));
				any = true;
			}
			if_eq(g, ntohl(e->u.v4.s_addr) & mask32((unsigned)prefix), match);
		}
	}
}

/* The same for IPv6: four words per entry, each masked by its share of the prefix. */
static void gen_match_v6(struct gen *g, const struct config_filter_addresses *a, unsigned match)
{
	stmt(g, BPF_LDX | BPF_MEM, 2);
	for (unsigned i = 0; i < a->count; i++) {
		const struct config_addr *e = &a->addrs[i];
		unsigned next;

		if (e->family != AF_INET6)
			continue;
		next = label(g);
		for (unsigned w = 0; w < 4; w++) {
			int bits = (int)e->prefix - 32 * (int)w;
			uint32_t m = mask32(bits < 0 ? 0 : (unsigned)bits), word;

			if (!m)
				break;
			memcpy(&word, &e->u.v6.s6_addr[4 * w], 4);
			stmt(g, BPF_LD | BPF_W | BPF_IND, 4 + 4 * w);
			if (m != 0xffffffffu)
				stmt(g, BPF_ALU | BPF_AND | BPF_K, m);
			if_ne(g, ntohl(word) & m, next);
		}
		jump(g, match);
		place(g, next);
	}
}

/*
 * The address part: the original source, then the other real endpoint,
 * of the event's family.  That one is what the user-space filter takes
 * (flow_filter.h): the reply source when the kernel says the destination
 * was NAT'ed (IPS_DST_NAT_DONE: the DNAT'ed address), else the original
 * destination.
 */
static void gen_addresses(struct gen *g, const struct config_filter_addresses *a)
{
	unsigned match = label(g), nomatch = label(g), next = label(g), v6 = label(g);

	stmt(g, BPF_LD | BPF_B | BPF_ABS, FAMILY_AT);
	if_eq(g, AF_INET6, v6);
	if_ne(g, AF_INET, L_ACCEPT);
	for (int fam = 0; fam < 2; fam++) {
		uint32_t src = fam ? CTA_IP_V6_SRC : CTA_IP_V4_SRC;
		uint32_t dst = fam ? CTA_IP_V6_DST : CTA_IP_V4_DST;
		unsigned orig_dst = label(g), other = label(g);

		if (fam)
			place(g, v6);
		/* the original source */
		stmt(g, BPF_LD | BPF_MEM, 0);
		find_nested(g, CTA_TUPLE_IP);
		find_nested(g, src);
		stmt(g, BPF_ST, 2);
		fam ? gen_match_v6(g, a, match) : gen_match_v4(g, a, match);
		/* the other endpoint */
		find_top(g, CTA_STATUS);
		stmt(g, BPF_MISC | BPF_TAX, 0);
		stmt(g, BPF_LD | BPF_W | BPF_IND, 4);
		stmt(g, BPF_ALU | BPF_AND | BPF_K, IPS_DST_NAT_DONE);
		if_eq(g, 0, orig_dst);
		find_top(g, CTA_TUPLE_REPLY);
		find_nested(g, CTA_TUPLE_IP);
		find_nested(g, src);
		jump(g, other);
		place(g, orig_dst);
		stmt(g, BPF_LD | BPF_MEM, 0);
		find_nested(g, CTA_TUPLE_IP);
		find_nested(g, dst);
		place(g, other);
		stmt(g, BPF_ST, 2);
		fam ? gen_match_v6(g, a, match) : gen_match_v4(g, a, match);
		jump(g, nomatch);
	}
	place(g, match);
	jump(g, a->accept ? next : L_DROP);
	place(g, nomatch);
	jump(g, a->accept ? L_DROP : next);
	place(g, next);
}

/* The state part: TCP events that carry a state; the others pass it. */
static void gen_states(struct gen *g, const struct config_filter_states *s)
{
	unsigned listed = label(g);

	stmt(g, BPF_LD | BPF_MEM, 1);
	if_ne(g, IPPROTO_TCP, L_ACCEPT);
	find_top(g, CTA_PROTOINFO);
	find_nested(g, CTA_PROTOINFO_TCP);
	find_nested(g, CTA_PROTOINFO_TCP_STATE);
	stmt(g, BPF_MISC | BPF_TAX, 0);
	stmt(g, BPF_LD | BPF_B | BPF_IND, 4);
	for (unsigned st = 0; st < 16; st++)
		if (s->tcp_states & (1u << st))
			if_eq(g, st, listed);
	jump(g, s->accept ? L_DROP : L_ACCEPT);
	place(g, listed);
	jump(g, s->accept ? L_ACCEPT : L_DROP);
}

int kernel_bpf_compile(const struct config_filter *f, struct sock_filter *prog, size_t cap)
{
	static struct gen gen;          /* large (fix-up tables): not on the stack */
	struct gen *g = &gen;

	if (!f->protocols.set && !f->addresses.set && !f->states.set)
		return 0;
	for (unsigned i = 0; f->addresses.set && i < f->addresses.count; i++)
		if (f->addresses.addrs[i].family != AF_INET && f->addresses.addrs[i].family != AF_INET6)
			return -EINVAL;
	memset(g, 0, offsetof(struct gen, at));
	g->nfix = 0;
	g->p = prog;
	g->cap = cap;
	g->nlabels = L_FIRST_FREE;
	g->at[L_ACCEPT] = g->at[L_DROP] = -1;

	/* Conntrack events only: expectations and anything else go to user space as they are. */
	stmt(g, BPF_LD | BPF_B | BPF_ABS, SUBSYS_AT);
	if_ne(g, NFNL_SUBSYS_CTNETLINK, L_ACCEPT);
	find_top(g, CTA_TUPLE_ORIG);
	stmt(g, BPF_ST, 0);
	if (f->protocols.set || f->states.set) {
		find_nested(g, CTA_TUPLE_PROTO);
		find_nested(g, CTA_PROTO_NUM);
		stmt(g, BPF_MISC | BPF_TAX, 0);
		stmt(g, BPF_LD | BPF_B | BPF_IND, 4);
		stmt(g, BPF_ST, 1);
	}
	if (f->protocols.set)
		gen_protocols(g, &f->protocols);
	if (f->addresses.set)
		gen_addresses(g, &f->addresses);
	if (f->states.set)
		gen_states(g, &f->states);
	jump(g, L_ACCEPT);
	place(g, L_ACCEPT);
	stmt(g, BPF_RET | BPF_K, ACCEPT_ALL);
	place(g, L_DROP);
	stmt(g, BPF_RET | BPF_K, 0);
	if (g->full)
		return -E2BIG;
	for (unsigned i = 0; i < g->nfix; i++) {
		int to = g->at[g->fix_label[i]];

		if (to < 0)
			return -EINVAL;         /* a label never placed: a bug here */
		prog[g->fix_insn[i]].k = (uint32_t)(to - (int)g->fix_insn[i] - 1);
	}
	return (int)g->n;
}
