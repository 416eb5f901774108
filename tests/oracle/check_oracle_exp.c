/*
 * check_oracle_exp.c - ctsyncd's expectation codec and printer against
 * libnetfilter_conntrack, on seeded random expectations:
 *
 *   - messages the library builds (nfexp_nlmsg_build, plus the kernel's
 *     CTA_EXPECT_ID) parse in ctsyncd to what the library reads in them
 *     (master, tuple, mask, timeout, zone, flags, helper: the library's
 *     netlink functions neither build nor read the class, the NAT and the
 *     expect function; tests/unit/check_exp.c covers those);
 *   - the create and delete requests ctsyncd builds parse in the library
 *     to what ctsyncd meant;
 *   - -i expect / -e expect lines and their -x XML equal nfexp_snprintf()
 *     of the same expectation (ctsyncd's NAT and expect-function extras
 *     aside, doc/architecture.md).
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#include "flow/format.h"
#include "kernel/kernel.h"
#include "oracle.h"

#define STATES_DEFAULT 20000u
#define SHOW_MAX 5

static unsigned states;
static uint64_t seed;

static void report(unsigned *count, const char *check, unsigned i, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void report(unsigned *count, const char *check, unsigned i, const char *fmt, ...)
{
	va_list ap;

	if ((*count)++ >= SHOW_MAX)
		return;
	fprintf(stderr, "%s: expectation %u (ORACLE_SEED=%#llx): ", check, i, (unsigned long long)seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- random expectations ---------------------------------------------------------- */

static void random_addr(struct rng *r, uint8_t family, uint8_t out[16])
{
	memset(out, 0, 16);
	for (int i = 0; i < (family == AF_INET ? 4 : 16); i++)
		out[i] = (uint8_t)rng_next(r);
}

static void set_addrs(struct nf_conntrack *ct, uint8_t family, const uint8_t s[16], const uint8_t d[16])
{
	if (family == AF_INET) {
		uint32_t v;

		memcpy(&v, s, 4);
		nfct_set_attr_u32(ct, ATTR_IPV4_SRC, v);
		memcpy(&v, d, 4);
		nfct_set_attr_u32(ct, ATTR_IPV4_DST, v);
	} else {
		nfct_set_attr(ct, ATTR_IPV6_SRC, s);
		nfct_set_attr(ct, ATTR_IPV6_DST, d);
	}
}

/* A tuple object: `addrs` 0 random, 1 all ones (a mask), 2 source only (a NAT tuple). */
static struct nf_conntrack *random_tuple(struct rng *r, uint8_t family, uint8_t proto, int addrs,
					 bool mask_ports)
{
	struct nf_conntrack *ct = nfct_new();
	uint8_t s[16], d[16];

	nfct_set_attr_u8(ct, ATTR_L3PROTO, family);
	nfct_set_attr_u8(ct, ATTR_L4PROTO, proto);
	random_addr(r, family, s);
	random_addr(r, family, d);
	if (addrs == 1) {
		memset(d, 0xff, sizeof(d));
		if (rng_one_in(r, 2))
			memset(s, 0xff, sizeof(s));
		else if (rng_one_in(r, 2))
			memset(s, 0, sizeof(s));
	} else if (addrs == 2) {
		memset(d, 0, sizeof(d));
	}
	set_addrs(ct, family, s, d);
	if (oracle_l4_has_ports(proto)) {
		uint16_t sp = (uint16_t)rng_next(r), dp = (uint16_t)rng_next(r);

		if (mask_ports) {
			sp = rng_one_in(r, 2) ? 0 : 0xffff;
			dp = 0xffff;
		} else if (addrs == 2) {
			dp = 0;
		} else if (rng_one_in(r, 3)) {
			sp = 0;
		}
		nfct_set_attr_u16(ct, ATTR_PORT_SRC, sp);
		nfct_set_attr_u16(ct, ATTR_PORT_DST, dp);
	}
	return ct;
}

static void random_exp(struct rng *r, struct nf_expect *e)
{
	static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_UDP, IPPROTO_GRE,
					  IPPROTO_SCTP, IPPROTO_DCCP, IPPROTO_UDPLITE };
	static const char *const helpers[] = { "ftp", "sip", "tftp", "h245", "Q.931", "pptp", "irc", "amanda" };
	static const char *const fns[] = { "nat-follow-master", "sip", "callforwarding" };
	uint8_t family = rng_one_in(r, 2) ? AF_INET : AF_INET6;
	uint8_t proto = protos[rng_below(r, sizeof(protos))];
	struct nf_conntrack *t;

	t = random_tuple(r, family, rng_one_in(r, 2) ? IPPROTO_TCP : IPPROTO_UDP, 0, false);
	nfexp_set_attr(e, ATTR_EXP_MASTER, t);
	nfct_destroy(t);                /* the expectation keeps a copy */
	t = random_tuple(r, family, proto, 0, false);
	nfexp_set_attr(e, ATTR_EXP_EXPECTED, t);
	nfct_destroy(t);
	t = random_tuple(r, family, proto, 1, true);
	nfexp_set_attr(e, ATTR_EXP_MASK, t);
	nfct_destroy(t);
	if (!rng_one_in(r, 8))
		nfexp_set_attr_u32(e, ATTR_EXP_TIMEOUT, rng_below(r, 3601));
	if (rng_one_in(r, 4))
		nfexp_set_attr_u16(e, ATTR_EXP_ZONE, rng_one_in(r, 2) ? (uint16_t)rng_below(r, 4) :
								       (uint16_t)rng_next(r));
	if (!rng_one_in(r, 4))
		nfexp_set_attr_u32(e, ATTR_EXP_FLAGS, rng_below(r, 8));
	if (rng_one_in(r, 3))
		nfexp_set_attr_u32(e, ATTR_EXP_CLASS, rng_below(r, 4));
	if (rng_one_in(r, 2))
		nfexp_set_attr(e, ATTR_EXP_HELPER_NAME, helpers[rng_below(r, sizeof(helpers) / sizeof(helpers[0]))]);
	if (rng_one_in(r, 4)) {
		t = random_tuple(r, family, proto, 2, false);
		nfexp_set_attr(e, ATTR_EXP_NAT_TUPLE, t);
		nfct_destroy(t);
		nfexp_set_attr_u8(e, ATTR_EXP_NAT_DIR, (uint8_t)rng_below(r, 2));
	}
	if (rng_one_in(r, 4))
		nfexp_set_attr(e, ATTR_EXP_FN, fns[rng_below(r, sizeof(fns) / sizeof(fns[0]))]);
}

static int exp_msg(struct rng *r, void *buf, const struct nf_expect *e, uint8_t family)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *nfg;

	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK_EXP << 8) |
			  (rng_one_in(r, 4) ? IPCTNL_MSG_EXP_DELETE : IPCTNL_MSG_EXP_NEW);
	nlh->nlmsg_flags = NLM_F_CREATE;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = family;
	nfg->version = NFNETLINK_V0;
	if (nfexp_nlmsg_build(nlh, e) < 0)
		return -1;
	if (rng_one_in(r, 2))
		mnl_attr_put_u32(nlh, CTA_EXPECT_ID, htonl((uint32_t)rng_next(r)));
	return (int)nlh->nlmsg_len;
}

/* ---- the model of ctsyncd's reading ---------------------------------------------- */

static void tuple_of(const struct nf_expect *e, int attr, struct flow_tuple *t)
{
	bool p, ic;

	oracle_tuple_of_ct(nfexp_get_attr(e, attr), ORACLE_ORIG, t, &p, &ic);
}

static void model_exp(const struct nf_expect *e, struct flow_exp *x)
{
	memset(x, 0, sizeof(*x));
	tuple_of(e, ATTR_EXP_MASTER, &x->master);
	tuple_of(e, ATTR_EXP_EXPECTED, &x->tuple);
	tuple_of(e, ATTR_EXP_MASK, &x->mask);
	/* The mask's layer-3 protocol is the message's family; the library names none. */
	x->mask.family = x->tuple.family;
	if (nfexp_attr_is_set(e, ATTR_EXP_ZONE))
		x->master.zone = nfexp_get_attr_u16(e, ATTR_EXP_ZONE);
	if (nfexp_attr_is_set(e, ATTR_EXP_TIMEOUT)) {
		x->timeout = nfexp_get_attr_u32(e, ATTR_EXP_TIMEOUT);
		x->attrs |= FLOW_EXP_A_TIMEOUT;
	}
	if (nfexp_attr_is_set(e, ATTR_EXP_FLAGS))
		x->flags = nfexp_get_attr_u32(e, ATTR_EXP_FLAGS);
	if (nfexp_attr_is_set(e, ATTR_EXP_CLASS)) {
		x->class = nfexp_get_attr_u32(e, ATTR_EXP_CLASS);
		x->attrs |= FLOW_EXP_A_CLASS;
	}
	if (nfexp_attr_is_set(e, ATTR_EXP_HELPER_NAME)) {
		snprintf(x->helper, sizeof(x->helper), "%s", (const char *)nfexp_get_attr(e, ATTR_EXP_HELPER_NAME));
		if (x->helper[0])
			x->attrs |= FLOW_EXP_A_HELPER;
	}
	if (nfexp_attr_is_set(e, ATTR_EXP_FN)) {
		snprintf(x->fn, sizeof(x->fn), "%s", (const char *)nfexp_get_attr(e, ATTR_EXP_FN));
		if (x->fn[0])
			x->attrs |= FLOW_EXP_A_FN;
	}
	if (nfexp_attr_is_set(e, ATTR_EXP_NAT_TUPLE) && nfexp_attr_is_set(e, ATTR_EXP_NAT_DIR)) {
		tuple_of(e, ATTR_EXP_NAT_TUPLE, &x->nat);
		x->nat_dir = nfexp_get_attr_u8(e, ATTR_EXP_NAT_DIR);
		x->attrs |= FLOW_EXP_A_NAT;
	}
}

static struct nf_expect *lib_parse(const void *msg)
{
	struct nf_expect *e = nfexp_new();

	ck_assert_ptr_nonnull(e);
	if (nfexp_nlmsg_parse(msg, e) < 0) {
		nfexp_destroy(e);
		return NULL;
	}
	return e;
}

/* One random expectation of the run, as the kernel would send it. */
struct sample {
	struct nf_expect *e;
	char msg[ORACLE_MSG_MAX];
	int len;
};

static void sample_make(struct rng *r, struct sample *s)
{
	s->e = nfexp_new();
	ck_assert_ptr_nonnull(s->e);
	random_exp(r, s->e);
	s->len = exp_msg(r, s->msg, s->e, nfct_get_attr_u8(nfexp_get_attr(s->e, ATTR_EXP_MASTER), ATTR_L3PROTO));
	ck_assert_int_gt(s->len, 0);
}

START_TEST(expectation_messages_parse_as_the_library_reads_them)
{
	struct rng r = { seed ^ 0xe4u };
	struct flow_exp ours, want;
	struct sample s;
	unsigned bad = 0;
	char why[512];

	for (unsigned i = 0; i < states; i++) {
		struct nf_expect *lib;
		enum kernel_event ev;
		enum kernel_reason res;

		sample_make(&r, &s);
		lib = lib_parse(s.msg);
		res = kernel_exp_parse(s.msg, (size_t)s.len, &ours, &ev);
		if (!lib) {
			report(&bad, "parse", i, "the library refuses a message it built");
		} else if (res != KERNEL_OK) {
			report(&bad, "parse", i, "ctsyncd rejects it: %s", kernel_reason_name(res));
		} else {
			model_exp(lib, &want);
			if (!oracle_exp_equal(&want, &ours, why, sizeof(why)))
				report(&bad, "parse", i, "%s", why);
		}
		if (lib)
			nfexp_destroy(lib);
		nfexp_destroy(s.e);
	}
	printf("parse: %u expectation messages, %u disagreements\n", states, bad);
	ck_assert_msg(bad == 0, "%u of %u expectation messages parse differently (first ones above)", bad,
		      states);
}
END_TEST

START_TEST(expectation_requests_parse_in_the_library_as_meant)
{
	struct rng r = { seed ^ 0xe5u };
	struct flow_exp ours, want, got;
	struct sample s;
	unsigned bad = 0, built = 0;
	char why[512], req[ORACLE_MSG_MAX];

	for (unsigned i = 0; i < states; i++) {
		enum kernel_event ev;

		sample_make(&r, &s);
		if (kernel_exp_parse(s.msg, (size_t)s.len, &ours, &ev) != KERNEL_OK) {
			nfexp_destroy(s.e);
			continue;
		}
		for (enum kernel_op op = KERNEL_OP_CREATE; op <= KERNEL_OP_DELETE; op++) {
			uint32_t timeout = rng_below(&r, 3601);
			struct nf_expect *lib;
			int len;

			if (op == KERNEL_OP_UPDATE)
				continue;       /* the same message as a create (exp_attr.c) */
			len = kernel_exp_build(req, sizeof(req), op, &ours, timeout, (unsigned)rng_below(&r, 2), i);
			if (len <= 0) {
				report(&bad, "build", i, "kernel_exp_build() returns %d", len);
				continue;
			}
			built++;
			lib = lib_parse(req);
			if (!lib) {
				report(&bad, "build", i, "the library refuses the request");
				continue;
			}
			if (op == KERNEL_OP_CREATE) {
				want = ours;
				want.timeout = timeout;
				want.attrs |= FLOW_EXP_A_TIMEOUT;
				model_exp(lib, &got);
				if (!oracle_exp_equal(&want, &got, why, sizeof(why)))
					report(&bad, "build create", i, "%s", why);
			} else {
				struct flow_tuple t;

				tuple_of(lib, ATTR_EXP_EXPECTED, &t);
				/* Without a master the library leaves the family out: the message has it. */
				t.family = ((const struct nfgenmsg *)mnl_nlmsg_get_payload((void *)req))->nfgen_family;
				if (memcmp(&t, &ours.tuple, sizeof(t)))
					report(&bad, "build delete", i, "the tuple differs: family %u/%u proto %u/%u l4 %08x/%08x", t.family, ours.tuple.family, t.l4proto, ours.tuple.l4proto, t.l4.raw, ours.tuple.l4.raw);
				else if (nfexp_attr_is_set(lib, ATTR_EXP_ZONE) != (ours.master.zone != 0) ||
					 (ours.master.zone &&
					  nfexp_get_attr_u16(lib, ATTR_EXP_ZONE) != ours.master.zone))
					report(&bad, "build delete", i, "zone: meant %u", ours.master.zone);
				else if (nfexp_attr_is_set(lib, ATTR_EXP_MASTER) ||
					 nfexp_attr_is_set(lib, ATTR_EXP_TIMEOUT))
					report(&bad, "build delete", i, "more than the tuple and zone");
			}
			nfexp_destroy(lib);
		}
		nfexp_destroy(s.e);
	}
	printf("build: %u expectation requests (create, delete), %u disagreements\n", built, bad);
	ck_assert_msg(bad == 0, "%u of %u requests read differently in the library (first ones above)", bad,
		      built);
}
END_TEST

/* ctsyncd's extras after the library's line: the NAT and the expect function. */
static void extras_of(const struct flow_exp *x, char *out, size_t cap)
{
	size_t n = 0;

	out[0] = '\0';
	if (x->attrs & FLOW_EXP_A_NAT) {
		char nat[INET6_ADDRSTRLEN];

		inet_ntop(x->nat.family, x->nat.src.bytes, nat, sizeof(nat));
		n += (size_t)snprintf(out + n, cap - n, " nat-dir=%s nat-src=%s", x->nat_dir ? "reply" : "original",
				      nat);
		if (oracle_l4_has_ports(x->tuple.l4proto) && x->tuple.l4proto != IPPROTO_GRE)
			n += (size_t)snprintf(out + n, cap - n, " nat-sport=%u", ntohs(x->nat.l4.port.sport));
	}
	if (x->attrs & FLOW_EXP_A_FN)
		snprintf(out + n, cap - n, " fn=%s", x->fn);
}

static void check_line(unsigned *bad, const char *what, unsigned i, const char *lib, const char *ours)
{
	size_t at = 0;

	if (!strcmp(lib, ours))
		return;
	while (lib[at] && lib[at] == ours[at])
		at++;
	at = at > 40 ? at - 40 : 0;
	report(bad, what, i, "\n  library: %s\n  ctsyncd: %s\n  from:    ...%s\n  vs:      ...%s", lib, ours,
	       lib + at, ours + at);
}

START_TEST(expectation_lines_equal_nfexp_snprintf)
{
	struct rng r = { seed ^ 0xe6u };
	struct flow_exp ours;
	struct sample s;
	unsigned bad = 0, lines = 0;
	char lib[FLOW_FORMAT_MAX], mine[FLOW_FORMAT_MAX], extras[512], want[FLOW_FORMAT_MAX + 512];

	for (unsigned i = 0; i < states; i++) {
		struct nf_expect *e;
		enum kernel_event ev;
		int n;

		sample_make(&r, &s);
		e = lib_parse(s.msg);
		if (!e || kernel_exp_parse(s.msg, (size_t)s.len, &ours, &ev) != KERNEL_OK) {
			if (e)
				nfexp_destroy(e);
			nfexp_destroy(s.e);
			continue;
		}
		/*
		 * The class, the NAT and the expect function do not travel through
		 * the library's netlink functions: give the generated ones to both
		 * sides here, so that their printing is compared too.
		 */
		if (nfexp_attr_is_set(s.e, ATTR_EXP_CLASS)) {
			nfexp_set_attr_u32(e, ATTR_EXP_CLASS, nfexp_get_attr_u32(s.e, ATTR_EXP_CLASS));
			ours.class = nfexp_get_attr_u32(s.e, ATTR_EXP_CLASS);
			ours.attrs |= FLOW_EXP_A_CLASS;
		}
		if (nfexp_attr_is_set(s.e, ATTR_EXP_NAT_TUPLE)) {
			tuple_of(s.e, ATTR_EXP_NAT_TUPLE, &ours.nat);
			ours.nat_dir = nfexp_get_attr_u8(s.e, ATTR_EXP_NAT_DIR);
			ours.attrs |= FLOW_EXP_A_NAT;
		}
		if (nfexp_attr_is_set(s.e, ATTR_EXP_FN)) {
			snprintf(ours.fn, sizeof(ours.fn), "%s", (const char *)nfexp_get_attr(s.e, ATTR_EXP_FN));
			ours.attrs |= FLOW_EXP_A_FN;
		}
		/*
		 * conntrackd's -i / -e expect print no timeout.  The kernel sends
		 * no zone 0 (the generator makes some; ctsyncd keeps zone 0 as none).
		 */
		nfexp_attr_unset(e, ATTR_EXP_TIMEOUT);
		if (nfexp_attr_is_set(e, ATTR_EXP_ZONE) && nfexp_get_attr_u16(e, ATTR_EXP_ZONE) == 0)
			nfexp_attr_unset(e, ATTR_EXP_ZONE);
		nfexp_snprintf(lib, sizeof(lib), e, NFCT_T_UNKNOWN, NFCT_O_DEFAULT, 0);
		n = flow_exp_format(mine, sizeof(mine), &ours, FLOW_FMT_PLAIN);
		ck_assert_int_lt(n, (int)sizeof(mine));
		check_line(&bad, "-i expect", i, lib, mine);
		extras_of(&ours, extras, sizeof(extras));
		snprintf(want, sizeof(want), "%s%s", mine, extras);
		flow_exp_format(mine, sizeof(mine), &ours, 0);
		check_line(&bad, "-i expect extras", i, want, mine);
		nfexp_snprintf(lib, sizeof(lib), e, NFCT_T_UNKNOWN, NFCT_O_XML, 0);
		flow_exp_format_xml(mine, sizeof(mine), &ours, 0);
		check_line(&bad, "-i expect -x", i, lib, mine);
		lines += 3;
		nfexp_destroy(e);
		nfexp_destroy(s.e);
	}
	printf("print: %u expectation lines (text, with and without extras, and XML), %u disagreements\n",
	       lines, bad);
	ck_assert_msg(bad == 0, "%u of %u lines differ from nfexp_snprintf() (first ones above)", bad, lines);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oracle_exp");
	TCase *tc = tcase_create("libnetfilter_conntrack");
	SRunner *sr;
	int failed;

	seed = oracle_seed();
	states = oracle_states(STATES_DEFAULT);
	printf("oracle: ORACLE_SEED=%#llx ORACLE_STATES=%u\n", (unsigned long long)seed, states);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, expectation_messages_parse_as_the_library_reads_them);
	tcase_add_test(tc, expectation_requests_parse_in_the_library_as_meant);
	tcase_add_test(tc, expectation_lines_equal_nfexp_snprintf);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
