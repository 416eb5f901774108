/*
 * check_bpf_filter.c - `Filter From Kernelspace`: the compiled BPF program
 * runs in a small classic-BPF interpreter (with the kernel's netlink
 * helpers SKF_AD_NLATTR and SKF_AD_NLATTR_NEST, as net/core/filter.c
 * implements them) over conntrack events built here, and must give the
 * user-space filter's verdict on the same event, for thousands of random
 * events and several filters.  Events it cannot classify (expectations,
 * missing attributes) must pass.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netfilter/nf_conntrack_common.h>

#include "flow/filter.h"
#include "kernel/kernel.h"
#include "kernel/bpf.h"

/* ---- the interpreter ----------------------------------------------------------------- */

/* nla_find(): the first attribute of `type` (flags masked) in [at, at + len). */
static uint32_t nla_find_at(const uint8_t *pkt, uint32_t at, uint32_t len, uint32_t type)
{
	while (len >= 4) {
		uint16_t nla_len, nla_type;

		memcpy(&nla_len, pkt + at, 2);
		memcpy(&nla_type, pkt + at + 2, 2);
		if (nla_len < 4 || nla_len > len)
			return 0;
		if ((nla_type & NLA_TYPE_MASK) == type)
			return at;
		nla_len = (uint16_t)((nla_len + 3) & ~3u);
		if (nla_len >= len)
			return 0;
		at += nla_len;
		len -= nla_len;
	}
	return 0;
}

static uint32_t bpf_run(const struct sock_filter *prog, int n, const uint8_t *pkt, uint32_t len)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };

	for (int pc = 0; pc < n; pc++) {
		const struct sock_filter *f = &prog[pc];
		uint32_t k = f->k, off;

		switch (f->code) {
		case BPF_LD | BPF_IMM: A = k; break;
		case BPF_LDX | BPF_IMM: X = k; break;
		case BPF_LD | BPF_MEM: A = M[k]; break;
		case BPF_LDX | BPF_MEM: X = M[k]; break;
		case BPF_ST: M[k] = A; break;
		case BPF_MISC | BPF_TAX: X = A; break;
		case BPF_MISC | BPF_TXA: A = X; break;
		case BPF_ALU | BPF_AND | BPF_K: A &= k; break;
		case BPF_RET | BPF_K: return k;
		case BPF_JMP | BPF_JA: pc += (int)k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += A == k ? f->jt : f->jf; break;
		case BPF_LD | BPF_B | BPF_ABS:
			if (k == (uint32_t)(SKF_AD_OFF + SKF_AD_NLATTR)) {
				A = A > len - 4 ? 0 : nla_find_at(pkt, A, len - A, X);
				break;
			}
			if (k == (uint32_t)(SKF_AD_OFF + SKF_AD_NLATTR_NEST)) {
				uint16_t nl;

				if (A > len - 4)
					return A = 0, 0;
				memcpy(&nl, pkt + A, 2);
				A = nl > len - A || nl < 4 ? 0 : nla_find_at(pkt, A + 4, nl - 4u, X);
				break;
			}
			if (k >= len)
				return 0;
			A = pkt[k];
			break;
		case BPF_LD | BPF_B | BPF_IND:
			off = X + k;
			if (off >= len)
				return 0;       /* the kernel's out-of-bounds load: drop */
			A = pkt[off];
			break;
		case BPF_LD | BPF_W | BPF_IND:
			off = X + k;
			if (off + 4 > len)
				return 0;
			A = (uint32_t)pkt[off] << 24 | (uint32_t)pkt[off + 1] << 16 |
			    (uint32_t)pkt[off + 2] << 8 | pkt[off + 3];
			break;
		default:
			ck_abort_msg("instruction %d: code 0x%x not expected from the compiler", pc, f->code);
		}
		ck_assert_int_lt(pc, n);
	}
	ck_abort_msg("ran off the end of the program");
	return 0;
}

/* ---- events ------------------------------------------------------------------------- */

struct ev {
	int family;
	uint8_t proto;
	const char *src, *dst, *reply_src;      /* reply_src: the DNAT'ed address, or dst */
	int state;                              /* TCP state, or -1: no protoinfo (an update) */
	bool destroy;
	bool dnat_done;                         /* IPS_DST_NAT_DONE in the status */
};

static void put_tuple(struct nlmsghdr *nlh, uint16_t type, int family, const char *src, const char *dst,
		      uint8_t proto, uint16_t sport, uint16_t dport)
{
	struct nlattr *t = mnl_attr_nest_start(nlh, type), *n;
	uint8_t a[16];

	n = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
	ck_assert_int_eq(inet_pton(family, src, a), 1);
	mnl_attr_put(nlh, family == AF_INET ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, family == AF_INET ? 4 : 16, a);
	ck_assert_int_eq(inet_pton(family, dst, a), 1);
	mnl_attr_put(nlh, family == AF_INET ? CTA_IP_V4_DST : CTA_IP_V6_DST, family == AF_INET ? 4 : 16, a);
	mnl_attr_nest_end(nlh, n);
	n = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
	mnl_attr_put_u8(nlh, CTA_PROTO_NUM, proto);
	mnl_attr_put_u16(nlh, CTA_PROTO_SRC_PORT, htons(sport));
	mnl_attr_put_u16(nlh, CTA_PROTO_DST_PORT, htons(dport));
	mnl_attr_nest_end(nlh, n);
	mnl_attr_nest_end(nlh, t);
}

static struct nlmsghdr *build(uint8_t *buf, const struct ev *e)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *nfg;

	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | (e->destroy ? IPCTNL_MSG_CT_DELETE : IPCTNL_MSG_CT_NEW);
	nlh->nlmsg_flags = e->destroy ? 0 : NLM_F_CREATE;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = (uint8_t)e->family;
	put_tuple(nlh, CTA_TUPLE_ORIG, e->family, e->src, e->dst, e->proto, 1000, 80);
	put_tuple(nlh, CTA_TUPLE_REPLY, e->family, e->reply_src, e->src, e->proto, 80, 1000);
	mnl_attr_put_u32(nlh, CTA_STATUS, htonl(IPS_CONFIRMED | (e->dnat_done ? IPS_DST_NAT_DONE : 0)));
	if (e->state >= 0 && e->proto == IPPROTO_TCP) {
		struct nlattr *p = mnl_attr_nest_start(nlh, CTA_PROTOINFO), *t;

		t = mnl_attr_nest_start(nlh, CTA_PROTOINFO_TCP);
		mnl_attr_put_u8(nlh, CTA_PROTOINFO_TCP_STATE, (uint8_t)e->state);
		mnl_attr_nest_end(nlh, t);
		mnl_attr_nest_end(nlh, p);
	}
	return nlh;
}

/* The program's verdict and the user-space filter's must agree on `e`. */
static void agree(const struct sock_filter *prog, int n, struct flow_filter *uf, const struct ev *e)
{
	static uint8_t buf[4096];
	struct nlmsghdr *nlh = build(buf, e);
	struct flow_full ff;
	enum kernel_event kind;
	bool bpf_pass, user_pass;

	ck_assert_int_eq(kernel_ct_parse(nlh, nlh->nlmsg_len, &ff, &kind), KERNEL_OK);
	user_pass = flow_filter_check(uf, &ff.flow, &ff.ext) == FLOW_FILTER_PASS;
	bpf_pass = bpf_run(prog, n, buf, nlh->nlmsg_len) != 0;
	ck_assert_msg(bpf_pass == user_pass, "BPF %s, user space %s: %s %u %s -> %s (reply from %s%s) state %d",
		      bpf_pass ? "passes" : "drops", user_pass ? "passes" : "drops",
		      e->family == AF_INET ? "v4" : "v6", e->proto, e->src, e->dst, e->reply_src,
		      e->dnat_done ? ", DNAT done" : "", e->state);
}

/* ---- filters ---------------------------------------------------------------------------- */

static struct config_addr caddr(const char *text)
{
	struct config_addr a = { 0 };
	char ip[64];
	const char *slash = strchr(text, '/');
	size_t n = slash ? (size_t)(slash - text) : strlen(text);

	memcpy(ip, text, n);
	ip[n] = '\0';
	a.family = strchr(ip, ':') ? AF_INET6 : AF_INET;
	ck_assert_int_eq(inet_pton(a.family, ip, &a.u), 1);
	a.prefix = (uint8_t)(slash ? atoi(slash + 1) : a.family == AF_INET ? 32 : 128);
	return a;
}

static const char *const v4_pool[] = { "10.0.0.1", "10.0.0.2", "10.1.2.3", "10.1.200.9", "192.168.7.7",
					"10.9.0.1", "172.16.5.4", "10.1.2.4" };
static const char *const v6_pool[] = { "2001:db8::1", "2001:db8::2", "2001:db8:9::5", "2001:db8:9:ff::1",
					"fd00::7", "2001:db8:8000::1", "::1", "2001:db9::1" };
static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP, IPPROTO_DCCP, IPPROTO_UDPLITE };

/* Random events (a fixed seed) against the filter `cfg`. */
static void check_filter(struct config_filter *cfg)
{
	static struct sock_filter prog[BPF_MAXINSNS];
	struct flow_filter *uf;
	int n, err = 0;

	cfg->set = true;
	cfg->kernelspace = true;
	n = kernel_bpf_compile(cfg, prog, BPF_MAXINSNS);
	ck_assert_int_gt(n, 0);
	uf = flow_filter_new(cfg, &err);
	ck_assert_ptr_nonnull(uf);
	srand(7);
	for (int i = 0; i < 4000; i++) {
		bool v6 = rand() % 2;
		const char *const *pool = v6 ? v6_pool : v4_pool;
		struct ev e = {
			.family = v6 ? AF_INET6 : AF_INET,
			.proto = protos[rand() % 5],
			.src = pool[rand() % 8], .dst = pool[rand() % 8],
			.state = rand() % 12 - 1,
			.destroy = rand() % 4 == 0,
		};

		e.reply_src = rand() % 3 ? e.dst : pool[rand() % 8];
		/* Mostly as the kernel sends it (NAT'ed iff the reply source moved), not always. */
		e.dnat_done = rand() % 8 ? strcmp(e.reply_src, e.dst) != 0 : rand() % 2;
		agree(prog, n, uf, &e);
	}
	flow_filter_free(uf);
}

static void protocols(struct config_filter *f, bool accept, const uint8_t *list, int count)
{
	f->protocols.set = true;
	f->protocols.accept = accept;
	for (int i = 0; i < count; i++)
		f->protocols.bitmap[list[i] / 8] |= (uint8_t)(1u << (list[i] % 8));
}

static struct config_addr addr_list[16];

static void addresses(struct config_filter *f, bool accept, const char *const *list, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		addr_list[i] = caddr(list[i]);
	f->addresses.set = true;
	f->addresses.accept = accept;
	f->addresses.count = count;
	f->addresses.addrs = addr_list;
}

static const char *const some[] = { "10.1.0.0/16", "192.168.7.7", "2001:db8:9::/48", "fd00::7", "0.0.0.0/31" };

START_TEST(each_part_alone_and_together)
{
	static const uint8_t tcp_udp[] = { IPPROTO_TCP, IPPROTO_UDP };
	struct config_filter f;
	int accept = _i % 2;

	memset(&f, 0, sizeof(f));
	switch (_i / 2) {
	case 0:
		protocols(&f, accept, tcp_udp, 2);
		break;
	case 1:
		addresses(&f, accept, some, 5);
		break;
	case 2:
		f.states.set = true;
		f.states.accept = accept;
		f.states.tcp_states = (1u << 3) | (1u << 1) | (1u << 9);
		break;
	case 3:
		protocols(&f, accept, tcp_udp, 2);
		addresses(&f, !accept, some, 5);
		f.states.set = true;
		f.states.accept = accept;
		f.states.tcp_states = 1u << 3;
		break;
	case 4:                 /* only IPv4 entries: Accept drops every IPv6 event */
		addresses(&f, accept, some, 2);
		break;
	case 5:                 /* an empty list */
		addresses(&f, accept, some, 0);
		break;
	}
	check_filter(&f);
}
END_TEST

START_TEST(passes_what_it_cannot_classify)
{
	static struct sock_filter prog[BPF_MAXINSNS];
	static uint8_t buf[4096];
	struct config_filter f;
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;
	int n;

	memset(&f, 0, sizeof(f));
	addresses(&f, true, some, 1);           /* accept 10.1.0.0/16 only */
	f.set = true;
	n = kernel_bpf_compile(&f, prog, BPF_MAXINSNS);
	ck_assert_int_gt(n, 0);
	/* An expectation event. */
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK_EXP << 8) | IPCTNL_MSG_EXP_NEW;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_INET;
	put_tuple(nlh, CTA_EXPECT_MASTER, AF_INET, "192.168.7.7", "192.168.7.8", IPPROTO_TCP, 1, 21);
	ck_assert_uint_ne(bpf_run(prog, n, buf, nlh->nlmsg_len), 0);
	/* A conntrack event without its original tuple. */
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_NEW;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_INET;
	mnl_attr_put_u32(nlh, CTA_STATUS, htonl(IPS_CONFIRMED));
	ck_assert_uint_ne(bpf_run(prog, n, buf, nlh->nlmsg_len), 0);
	/* And one it can: dropped. */
	nlh = build(buf, &(struct ev){ AF_INET, IPPROTO_TCP, "192.168.7.7", "192.168.7.8", "192.168.7.8", 3,
				       false, false });
	ck_assert_uint_eq(bpf_run(prog, n, buf, nlh->nlmsg_len), 0);
}
END_TEST

START_TEST(sizes_and_errors)
{
	static struct sock_filter prog[BPF_MAXINSNS];
	static struct config_addr many[3000];
	struct config_filter f;

	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(kernel_bpf_compile(&f, prog, BPF_MAXINSNS), 0);      /* nothing to filter */
	for (int i = 0; i < 3000; i++) {
		many[i].family = AF_INET;
		many[i].u.v4.s_addr = htonl(0x0a000000u + (uint32_t)i);
		many[i].prefix = 32;
	}
	f.addresses.set = true;
	f.addresses.addrs = many;
	f.addresses.count = 3000;
	ck_assert_int_eq(kernel_bpf_compile(&f, prog, BPF_MAXINSNS - 16), -E2BIG);
	f.addresses.count = 500;
	ck_assert_int_gt(kernel_bpf_compile(&f, prog, BPF_MAXINSNS - 16), 0);
	many[3].family = AF_UNSPEC;
	ck_assert_int_eq(kernel_bpf_compile(&f, prog, BPF_MAXINSNS - 16), -EINVAL);
}
END_TEST

static Suite *bpf_suite(void)
{
	Suite *s = suite_create("bpf_filter");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, each_part_alone_and_together, 0, 12);
	tcase_add_test(tc, passes_what_it_cannot_classify);
	tcase_add_test(tc, sizes_and_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(bpf_suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
