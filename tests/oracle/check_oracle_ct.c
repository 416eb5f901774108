/*
 * check_oracle_ct.c - ctsyncd's conntrack codec and printer against
 * libnetfilter_conntrack (the oracle), on seeded random states:
 *
 *   - kernel-shaped messages that the library builds (nfct_nlmsg_build, plus
 *     the attributes only the kernel sends) parse in ctsyncd to what the
 *     library reads in them, field by field;
 *   - the same messages, mutated: whatever ctsyncd accepts, the library
 *     reads the same way;
 *   - the requests ctsyncd builds (create, update, delete) parse in the
 *     library to what ctsyncd meant, attribute by attribute, and in
 *     ctsyncd as in the library;
 *   - the -i / -e lines and the -x XML of those states equal what
 *     nfct_snprintf() prints for conntrackd 1.4.7's object of the same
 *     state (doc/architecture.md, "Differences from libnetfilter_conntrack",
 *     lists where ctsyncd adds to or leaves out of the library's line).
 *
 * ORACLE_SEED and ORACLE_STATES replay or widen a run; ORACLE_HEX=1 also
 * prints the bytes of each mutated message read differently.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_conntrack_tcp.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#include "flow/format.h"
#include "kernel/kernel.h"
#include "oracle.h"

#define STATES_DEFAULT 20000u
#define SHOW_MAX 5              /* disagreements printed in full per check */

static unsigned states;
static uint64_t seed;

/* One disagreement: counted, and the first few printed with what replays them. */
static unsigned report(unsigned *count, const char *check, unsigned i, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static unsigned report(unsigned *count, const char *check, unsigned i, const char *fmt, ...)
{
	va_list ap;

	if ((*count)++ < SHOW_MAX) {
		fprintf(stderr, "%s: state %u (ORACLE_SEED=%#llx): ", check, i, (unsigned long long)seed);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	return *count;
}

/* A kernel message for state `i` of the run: its library object, bytes and event kind. */
struct sample {
	struct nf_conntrack *ct;        /* as generated */
	char msg[ORACLE_MSG_MAX];
	int len;
	enum kernel_event ev;
};

static void sample_make(struct rng *r, struct sample *s)
{
	static const struct {
		uint16_t type, flags;
		enum kernel_event ev;
	} kinds[] = {
		{ IPCTNL_MSG_CT_NEW, NLM_F_CREATE | NLM_F_EXCL, KERNEL_EV_NEW },
		{ IPCTNL_MSG_CT_NEW, 0, KERNEL_EV_UPDATE },
		{ IPCTNL_MSG_CT_NEW, NLM_F_MULTI, KERNEL_EV_NEW },       /* a dump entry */
		{ IPCTNL_MSG_CT_DELETE, 0, KERNEL_EV_DESTROY },
	};
	unsigned k = rng_below(r, 4);

	s->ct = nfct_new();
	ck_assert_ptr_nonnull(s->ct);
	oracle_random_ct(r, s->ct);
	s->len = oracle_kernel_msg(r, s->msg, sizeof(s->msg), s->ct, kinds[k].type, kinds[k].flags);
	ck_assert_int_gt(s->len, 0);
	s->ev = kinds[k].ev;
}

/* The library's reading of a message; NULL when it refuses it. */
static struct nf_conntrack *lib_parse(const void *msg)
{
	struct nf_conntrack *ct = nfct_new();

	ck_assert_ptr_nonnull(ct);
	if (nfct_nlmsg_parse(msg, ct) < 0) {
		nfct_destroy(ct);
		return NULL;
	}
	return ct;
}

/* ---- parse ------------------------------------------------------------------------------- */

START_TEST(kernel_messages_parse_as_the_library_reads_them)
{
	struct rng r = { seed };
	struct flow_full ours, want;
	struct sample s;
	unsigned bad = 0, rejected = 0;
	char why[512];

	for (unsigned i = 0; i < states; i++) {
		struct nf_conntrack *lib;
		enum kernel_event ev;
		enum kernel_reason res;

		sample_make(&r, &s);
		lib = lib_parse(s.msg);
		if (!lib) {
			report(&bad, "parse", i, "the library refuses a message it built");
			nfct_destroy(s.ct);
			continue;
		}
		res = kernel_ct_parse(s.msg, (size_t)s.len, &ours, &ev);
		if (res != KERNEL_OK) {
			rejected++;
			report(&bad, "parse", i, "ctsyncd rejects it: %s", kernel_reason_name(res));
		} else {
			oracle_model_flow(lib, &want);
			if (!oracle_flow_equal(&want, &ours, why, sizeof(why)))
				report(&bad, "parse", i, "%s", why);
			else if (ev != s.ev)
				report(&bad, "parse", i, "event kind: expected %d, got %d", s.ev, ev);
		}
		nfct_destroy(lib);
		nfct_destroy(s.ct);
	}
	printf("parse: %u kernel-shaped messages, %u disagreements (%u rejected)\n", states, bad, rejected);
	ck_assert_msg(bad == 0, "%u of %u messages parse differently (first ones above)", bad, states);
}
END_TEST

/*
 * One mutation: a flipped byte, a byte set to a boundary value, a length
 * field changed, or the message cut short.
 */
static size_t mutate(struct rng *r, uint8_t *m, size_t len)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)m;
	static const uint8_t edge[] = { 0x00, 0x01, 0x03, 0x04, 0x05, 0x08, 0x10, 0x7f, 0x80, 0xff };
	size_t at;

	if (len <= NLMSG_HDRLEN + 4 + 4)        /* no attribute left to change */
		return len;
	at = NLMSG_HDRLEN + 4 + rng_below(r, (uint32_t)(len - NLMSG_HDRLEN - 4));

	switch (rng_below(r, 5)) {
	case 0:
		m[at] ^= (uint8_t)(1u << rng_below(r, 8));
		break;
	case 1:
		m[at] = edge[rng_below(r, sizeof(edge))];
		break;
	case 2:                         /* an attribute length (the first two bytes of some attribute) */
		at &= ~(size_t)3;
		if (at + 2 <= len)
			m[at] = (uint8_t)(m[at] + (int)rng_below(r, 9) - 4);
		break;
	case 3:                         /* cut: the library reads nlmsg_len, so it says the new end */
		len = NLMSG_HDRLEN + 4 + rng_below(r, (uint32_t)(len - NLMSG_HDRLEN - 4));
		nlh->nlmsg_len = (uint32_t)len;
		break;
	default:                        /* an attribute type */
		at &= ~(size_t)3;
		if (at + 4 <= len)
			m[at + 2] = (uint8_t)rng_below(r, 32);
		break;
	}
	return len;
}

/*
 * The library's reading of a mutated message, in the model, or false when
 * it refuses it.  In a child process: on some malformed attributes the
 * library prints "ctnetlink kernel ABI is broken" and exits.
 */
static bool lib_model_forked(const void *msg, struct flow_full *want)
{
	int fd[2], status;
	ssize_t got = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(fd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct nf_conntrack *lib;
		const uint8_t *p = (const uint8_t *)want;
		size_t left = sizeof(*want);

		close(fd[0]);
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		lib = lib_parse(msg);
		if (!lib)
			_exit(1);
		oracle_model_flow(lib, want);
		while (left > 0) {
			ssize_t n = write(fd[1], p, left);

			if (n <= 0)
				_exit(2);
			p += n;
			left -= (size_t)n;
		}
		_exit(0);
	}
	close(fd[1]);
	for (;;) {
		ssize_t n = read(fd[0], (uint8_t *)want + got, sizeof(*want) - (size_t)got);

		if (n <= 0)
			break;
		got += n;
	}
	close(fd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == (ssize_t)sizeof(*want);
}

START_TEST(mutated_messages_read_alike_where_ctsyncd_accepts_them)
{
	struct rng r = { seed ^ 0xf022u };
	struct flow_full ours, want;
	struct sample s;
	unsigned n = states / 4, bad = 0, both = 0, ours_only = 0, rejected = 0;
	char why[512];

	for (unsigned i = 0; i < n; i++) {
		enum kernel_event ev;
		size_t len;
		bool ok;

		sample_make(&r, &s);
		len = (size_t)s.len;
		for (unsigned k = 1 + rng_below(&r, 3); k > 0; k--)
			len = mutate(&r, (uint8_t *)s.msg, len);
		ok = kernel_ct_parse(s.msg, len, &ours, &ev) == KERNEL_OK;
		if (!ok) {
			rejected++;
		} else if (lib_model_forked(s.msg, &want)) {
			both++;
			/*
			 * The library has no ICMP part for a master tuple (a mutated
			 * protocol number makes one; helpers master TCP and UDP only):
			 * nothing to compare there.
			 */
			if ((want.flow.attrs & FLOW_A_MASTER) && (want.ext.master.l4proto == IPPROTO_ICMP ||
								  want.ext.master.l4proto == IPPROTO_ICMPV6))
				want.ext.master.l4 = ours.ext.master.l4;
			if (!oracle_flow_equal(&want, &ours, why, sizeof(why))) {
				report(&bad, "mutated", i, "%s", why);
				if (getenv("ORACLE_HEX")) {
					for (size_t k = 0; k < len; k++)
						fprintf(stderr, "%02x%s", (uint8_t)s.msg[k], k % 16 == 15 ? "\n" : " ");
					fputc('\n', stderr);
				}
			}
		} else {
			ours_only++;
		}
		nfct_destroy(s.ct);
	}
	printf("mutated: %u messages: ctsyncd rejects %u, accepts %u; of those the library reads %u "
	       "(%u differently) and refuses %u\n", n, rejected, both + ours_only, both, bad, ours_only);
	ck_assert_msg(bad == 0, "%u of %u mutated messages read differently (first ones above)", bad, both);
}
END_TEST

/* ---- build -------------------------------------------------------------------------------- */

/* The reply tuple the library makes from the original (nfct_setobjopt SETUP_REPLY). */
static void lib_inverted_reply(const struct flow_full *ff, struct flow_tuple *rt)
{
	struct nf_conntrack *ct = nfct_new();
	struct flow_full plain = *ff;
	bool p, ic;

	plain.flow.attrs &= ~(uint32_t)(FLOW_A_SNAT | FLOW_A_DNAT | FLOW_A_SPAT | FLOW_A_DPAT | FLOW_A_MASTER |
					FLOW_A_HELPER | FLOW_A_LABELS);
	oracle_ct_of_flow(&plain, true, ct);
	oracle_tuple_of_ct(ct, ORACLE_REPL, rt, &p, &ic);
	nfct_destroy(ct);
}

static bool req_u32(const struct nf_conntrack *ct, int attr, bool want, uint32_t v, const char *name,
		    char *why, size_t cap)
{
	if (nfct_attr_is_set(ct, attr) != want) {
		snprintf(why, cap, "%s: expected %s, got %s", name, want ? "present" : "absent",
			 want ? "absent" : "present");
		return false;
	}
	if (want && nfct_get_attr_u32(ct, attr) != v) {
		snprintf(why, cap, "%s: expected %u, got %u", name, v, nfct_get_attr_u32(ct, attr));
		return false;
	}
	return true;
}

static bool req_u8(const struct nf_conntrack *ct, int attr, bool want, uint8_t v, const char *name,
		   char *why, size_t cap)
{
	if (nfct_attr_is_set(ct, attr) != want) {
		snprintf(why, cap, "%s: expected %s, got %s", name, want ? "present" : "absent",
			 want ? "absent" : "present");
		return false;
	}
	if (want && nfct_get_attr_u8(ct, attr) != v) {
		snprintf(why, cap, "%s: expected %u, got %u", name, v, nfct_get_attr_u8(ct, attr));
		return false;
	}
	return true;
}

/* CTA_NAT_SRC / _DST is a request-only attribute the library does not read: walk it here. */
struct nat_req {
	bool present, port;
	union flow_addr min, max;
	uint16_t pmin, pmax;
};

static void nat_of_msg(const struct nlmsghdr *nlh, uint16_t type, struct nat_req *n)
{
	const struct nlattr *a, *b, *c;

	memset(n, 0, sizeof(*n));
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		if (mnl_attr_get_type(a) != type)
			continue;
		n->present = true;
		mnl_attr_for_each_nested(b, a) {
			switch (mnl_attr_get_type(b)) {
			case CTA_NAT_V4_MINIP:
			case CTA_NAT_V6_MINIP:
				memcpy(n->min.bytes, mnl_attr_get_payload(b), mnl_attr_get_payload_len(b));
				break;
			case CTA_NAT_V4_MAXIP:
			case CTA_NAT_V6_MAXIP:
				memcpy(n->max.bytes, mnl_attr_get_payload(b), mnl_attr_get_payload_len(b));
				break;
			case CTA_NAT_PROTO:
				n->port = true;
				mnl_attr_for_each_nested(c, b) {
					if (mnl_attr_get_type(c) == CTA_PROTONAT_PORT_MIN)
						n->pmin = mnl_attr_get_u16(c);
					else if (mnl_attr_get_type(c) == CTA_PROTONAT_PORT_MAX)
						n->pmax = mnl_attr_get_u16(c);
				}
				break;
			}
		}
	}
}

/* The bits set in CTA_LABELS_MASK; -1 when there is none. */
static int labels_mask_of_msg(const struct nlmsghdr *nlh)
{
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		const uint8_t *p = mnl_attr_get_payload(a);
		int bits = 0;

		if (mnl_attr_get_type(a) != CTA_LABELS_MASK)
			continue;
		for (uint16_t i = 0; i < mnl_attr_get_payload_len(a); i++)
			bits += __builtin_popcount(p[i]);
		return bits;
	}
	return -1;
}

static bool nat_as_meant(const struct nlmsghdr *nlh, const struct flow_full *ff, bool src,
			 char *why, size_t cap)
{
	const struct flow *f = &ff->flow;
	uint32_t a_addr = src ? FLOW_A_SNAT : FLOW_A_DNAT, a_port = src ? FLOW_A_SPAT : FLOW_A_DPAT;
	bool want = f->attrs & (a_addr | a_port);
	bool want_port = (f->attrs & a_port) && (f->attrs & FLOW_A_PORTS) && oracle_l4_has_ports(f->orig.l4proto);
	const union flow_addr *addr = (f->attrs & a_addr) ? (src ? &ff->ext.snat : &ff->ext.dnat) :
				      (src ? &f->orig.src : &f->orig.dst);
	uint16_t port = src ? ff->ext.spat : ff->ext.dpat;
	struct nat_req n;
	size_t alen = f->orig.family == AF_INET ? 4 : 16;

	nat_of_msg(nlh, src ? CTA_NAT_SRC : CTA_NAT_DST, &n);
	if (n.present != want || (want && n.port != want_port)) {
		snprintf(why, cap, "%s: expected %s%s, got %s%s", src ? "CTA_NAT_SRC" : "CTA_NAT_DST",
			 want ? "present" : "absent", want_port ? " with a port" : "",
			 n.present ? "present" : "absent", n.port ? " with a port" : "");
		return false;
	}
	if (want && (memcmp(n.min.bytes, addr->bytes, alen) || memcmp(n.max.bytes, addr->bytes, alen))) {
		snprintf(why, cap, "%s: not the single address meant", src ? "CTA_NAT_SRC" : "CTA_NAT_DST");
		return false;
	}
	if (want_port && (n.pmin != port || n.pmax != port)) {
		snprintf(why, cap, "%s: ports %u-%u, meant %u", src ? "CTA_NAT_SRC" : "CTA_NAT_DST",
			 ntohs(n.pmin), ntohs(n.pmax), ntohs(port));
		return false;
	}
	return true;
}

/*
 * What kernel_ct_build() promises (include/kernel/kernel.h), read back by
 * the library from the request.
 */
static bool request_as_meant(const struct nlmsghdr *nlh, const struct nf_conntrack *ct,
			     enum kernel_op op, const struct flow_full *ff, uint32_t timeout,
			     unsigned opts, char *why, size_t cap)
{
	const struct flow *f = &ff->flow;
	bool create = op == KERNEL_OP_CREATE, del = op == KERNEL_OP_DELETE;
	bool tcp = f->orig.l4proto == IPPROTO_TCP;
	struct flow_tuple want, got;
	bool p, ic;
	uint32_t st;

	/* The original tuple, always with its ports or ICMP id, type and code. */
	want = f->orig;
	want.zone = 0;
	if (!(f->attrs & (FLOW_A_PORTS | FLOW_A_ICMP)))
		want.l4.raw = 0;
	oracle_tuple_of_ct(ct, ORACLE_ORIG, &got, &p, &ic);
	if (memcmp(&want, &got, sizeof(want)) || nfct_get_attr_u8(ct, ATTR_L3PROTO) != f->orig.family) {
		snprintf(why, cap, "original tuple differs");
		return false;
	}
	if (oracle_l4_has_ports(f->orig.l4proto) != p || (f->orig.l4proto == IPPROTO_ICMP ||
							  f->orig.l4proto == IPPROTO_ICMPV6) != ic) {
		snprintf(why, cap, "original tuple: ports %d, icmp %d", p, ic);
		return false;
	}
	if (nfct_attr_is_set(ct, ATTR_ZONE) != ((f->attrs & FLOW_A_ZONE) || f->orig.zone) ||
	    (nfct_attr_is_set(ct, ATTR_ZONE) && nfct_get_attr_u16(ct, ATTR_ZONE) != f->orig.zone)) {
		snprintf(why, cap, "zone: meant %u", f->orig.zone);
		return false;
	}
	/* A create's reply tuple: the library's own inversion of the original. */
	if (nfct_attr_is_set(ct, ATTR_REPL_L3PROTO) != create) {
		snprintf(why, cap, "reply tuple: expected %s", create ? "present" : "absent");
		return false;
	}
	if (create) {
		lib_inverted_reply(ff, &want);
		oracle_tuple_of_ct(ct, ORACLE_REPL, &got, &p, &ic);
		if (ic || f->orig.l4proto == IPPROTO_ICMP || f->orig.l4proto == IPPROTO_ICMPV6) {
			/* The library keeps one ICMP type and code, of the original: compare the bytes. */
			got.l4 = want.l4;
		}
		if (memcmp(&want, &got, sizeof(want))) {
			snprintf(why, cap, "reply tuple is not the inverted original");
			return false;
		}
	}
	if (del) {
		static const int none[] = { ATTR_STATUS, ATTR_TIMEOUT, ATTR_MARK, ATTR_TCP_STATE,
					    ATTR_MASTER_L3PROTO, ATTR_HELPER_NAME, ATTR_CONNLABELS };

		for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
			if (nfct_attr_is_set(ct, none[i])) {
				snprintf(why, cap, "delete carries attribute %d", none[i]);
				return false;
			}
		return true;
	}

	st = f->status & ~(uint32_t)(IPS_DYING | IPS_NAT_MASK | IPS_NAT_DONE_MASK);
	if (create)
		st &= ~(uint32_t)IPS_EXPECTED;
	if (!req_u32(ct, ATTR_STATUS, create || (f->attrs & FLOW_A_STATUS), st | IPS_CONFIRMED, "status",
		     why, cap) ||
	    !req_u32(ct, ATTR_TIMEOUT, create || timeout != KERNEL_TIMEOUT_KEEP,
		     timeout == KERNEL_TIMEOUT_KEEP ? f->timeout : timeout, "timeout", why, cap) ||
	    !req_u32(ct, ATTR_MARK, f->attrs & FLOW_A_MARK, f->mark, "mark", why, cap))
		return false;

	if (!req_u8(ct, ATTR_TCP_STATE, tcp && (f->attrs & FLOW_A_PROTO_STATE), f->proto_state, "tcp state",
		    why, cap) ||
	    !req_u8(ct, ATTR_SCTP_STATE, f->orig.l4proto == IPPROTO_SCTP && (f->attrs & FLOW_A_PROTO_STATE),
		    f->proto_state, "sctp state", why, cap) ||
	    !req_u8(ct, ATTR_DCCP_STATE, f->orig.l4proto == IPPROTO_DCCP && (f->attrs & FLOW_A_PROTO_STATE),
		    f->proto_state, "dccp state", why, cap) ||
	    !req_u8(ct, ATTR_DCCP_ROLE, f->orig.l4proto == IPPROTO_DCCP && (f->attrs & FLOW_A_DCCP_ROLE),
		    f->dccp_role, "dccp role", why, cap) ||
	    !req_u32(ct, ATTR_SCTP_VTAG_ORIG, f->orig.l4proto == IPPROTO_SCTP && (f->attrs & FLOW_A_SCTP_VTAGS),
		     ff->ext.sctp_vtag_orig, "sctp vtag", why, cap))
		return false;
	if (tcp) {
		bool tracking = opts & KERNEL_BUILD_WINDOW_TRACKING;
		bool scales = tracking && (f->attrs & FLOW_A_WSCALE);
		uint8_t fl = !tracking ? IP_CT_TCP_FLAG_BE_LIBERAL : scales ? IP_CT_TCP_FLAG_WINDOW_SCALE : 0;

		if (!req_u8(ct, ATTR_TCP_WSCALE_ORIG, scales, f->wscale_orig, "wscale orig", why, cap) ||
		    !req_u8(ct, ATTR_TCP_WSCALE_REPL, scales, f->wscale_repl, "wscale reply", why, cap) ||
		    !req_u8(ct, ATTR_TCP_FLAGS_ORIG, fl, fl, "tcp flags orig", why, cap) ||
		    !req_u8(ct, ATTR_TCP_MASK_ORIG, fl, fl, "tcp mask orig", why, cap) ||
		    !req_u8(ct, ATTR_TCP_FLAGS_REPL, fl, fl, "tcp flags reply", why, cap) ||
		    !req_u8(ct, ATTR_TCP_MASK_REPL, fl, fl, "tcp mask reply", why, cap))
			return false;
	}
	if (create && (!nat_as_meant(nlh, ff, true, why, cap) || !nat_as_meant(nlh, ff, false, why, cap)))
		return false;
	if (!create) {
		struct nat_req n;

		nat_of_msg(nlh, CTA_NAT_SRC, &n);
		if (n.present) {
			snprintf(why, cap, "an update carries CTA_NAT_SRC");
			return false;
		}
	}
	if (nfct_attr_is_set(ct, ATTR_MASTER_L3PROTO) != (create && (f->attrs & FLOW_A_MASTER))) {
		snprintf(why, cap, "master tuple presence");
		return false;
	}
	if (create && (f->attrs & FLOW_A_MASTER)) {
		oracle_tuple_of_ct(ct, ORACLE_MASTER, &got, &p, &ic);
		want = ff->ext.master;
		want.zone = 0;
		if (memcmp(&want, &got, sizeof(want))) {
			snprintf(why, cap, "master tuple differs");
			return false;
		}
	}
	if (nfct_attr_is_set(ct, ATTR_HELPER_NAME) != (create && (f->attrs & FLOW_A_HELPER)) ||
	    (nfct_attr_is_set(ct, ATTR_HELPER_NAME) && strcmp(nfct_get_attr(ct, ATTR_HELPER_NAME), ff->ext.helper))) {
		snprintf(why, cap, "helper: meant \"%s\"", create ? ff->ext.helper : "");
		return false;
	}
	for (int i = 0; i < 6; i++) {
		static const int seq[6] = {
			ATTR_ORIG_NAT_SEQ_CORRECTION_POS, ATTR_ORIG_NAT_SEQ_OFFSET_BEFORE,
			ATTR_ORIG_NAT_SEQ_OFFSET_AFTER, ATTR_REPL_NAT_SEQ_CORRECTION_POS,
			ATTR_REPL_NAT_SEQ_OFFSET_BEFORE, ATTR_REPL_NAT_SEQ_OFFSET_AFTER,
		};

		if (!req_u32(ct, seq[i], f->attrs & FLOW_A_NAT_SEQ, ff->ext.nat_seq[i], "nat seq", why, cap))
			return false;
	}
	{
		bool labels = (f->attrs & FLOW_A_LABELS) ||
			      ((f->attrs & FLOW_A_LABELS_GONE) && op == KERNEL_OP_UPDATE);

		int mask = labels_mask_of_msg(nlh);

		/* The library does not read CTA_LABELS_MASK (a request-only attribute): walked here. */
		if (nfct_attr_is_set(ct, ATTR_CONNLABELS) != labels || (mask >= 0) != labels) {
			snprintf(why, cap, "labels: expected %s, got labels %d mask %d",
				 labels ? "labels and mask" : "none", nfct_attr_is_set(ct, ATTR_CONNLABELS),
				 mask >= 0);
			return false;
		}
		if (labels && mask != 128) {
			snprintf(why, cap, "labels mask: %d bits of 128 set", mask);
			return false;
		}
		if (labels) {
			const struct nfct_bitmask *b = nfct_get_attr(ct, ATTR_CONNLABELS);

			if (nfct_bitmask_maxbit(b) != 127) {
				snprintf(why, cap, "labels: %d bits, the kernel has 128", nfct_bitmask_maxbit(b) + 1);
				return false;
			}
			for (unsigned bit = 0; bit < 128; bit++) {
				bool w = (f->attrs & FLOW_A_LABELS) && bit / 32 < ff->labels.words &&
					 (ff->labels.w[bit / 32] >> (bit % 32) & 1);

				if (nfct_bitmask_test_bit(b, bit) != w) {
					snprintf(why, cap, "label %u: meant %d", bit, w);
					return false;
				}
			}
		}
	}
	if (!req_u32(ct, ATTR_SYNPROXY_ITS, f->attrs & FLOW_A_SYNPROXY_EXT, ff->ext.synproxy[0], "synproxy its",
		     why, cap) ||
	    !req_u32(ct, ATTR_SYNPROXY_ISN, f->attrs & FLOW_A_SYNPROXY_EXT, ff->ext.synproxy[1], "synproxy isn",
		     why, cap) ||
	    !req_u32(ct, ATTR_SYNPROXY_TSOFF, f->attrs & FLOW_A_SYNPROXY_EXT, ff->ext.synproxy[2],
		     "synproxy tsoff", why, cap))
		return false;
	return true;
}

START_TEST(requests_parse_in_the_library_as_ctsyncd_meant_them)
{
	static const char *const op_names[] = { "create", "update", "delete" };
	struct rng r = { seed ^ 0xb111du };
	struct flow_full ours, again, want;
	struct sample s;
	unsigned bad = 0, built = 0;
	char why[512], req[ORACLE_MSG_MAX];

	for (unsigned i = 0; i < states; i++) {
		enum kernel_event ev;

		sample_make(&r, &s);
		if (kernel_ct_parse(s.msg, (size_t)s.len, &ours, &ev) != KERNEL_OK) {
			nfct_destroy(s.ct);
			continue;
		}
		/* What the external cache may hold too: labels that went away. */
		if (!(ours.flow.attrs & FLOW_A_LABELS) && rng_one_in(&r, 8))
			ours.flow.attrs |= FLOW_A_LABELS_GONE;
		for (enum kernel_op op = KERNEL_OP_CREATE; op <= KERNEL_OP_DELETE; op++) {
			uint32_t timeout = rng_one_in(&r, 4) ? KERNEL_TIMEOUT_KEEP : rng_below(&r, 432001);
			unsigned opts = (unsigned)rng_below(&r, 4);
			struct nf_conntrack *lib;
			int len = kernel_ct_build(req, sizeof(req), op, &ours, timeout, opts, i);

			if (len <= 0) {
				report(&bad, "build", i, "%s: kernel_ct_build() returns %d", op_names[op], len);
				continue;
			}
			built++;
			lib = lib_parse(req);
			if (!lib) {
				report(&bad, "build", i, "%s: the library refuses the request", op_names[op]);
				continue;
			}
			if (!request_as_meant((const struct nlmsghdr *)req, lib, op, &ours, timeout, opts, why,
					      sizeof(why)))
				report(&bad, "build", i, "%s: %s", op_names[op], why);
			/* Parsed by both, ctsyncd's own request reads alike too. */
			else if (kernel_ct_parse(req, (size_t)len, &again, &ev) != KERNEL_OK)
				report(&bad, "build", i, "%s: ctsyncd rejects its own request", op_names[op]);
			else {
				oracle_model_flow(lib, &want);
				if (!oracle_flow_equal(&want, &again, why, sizeof(why)))
					report(&bad, "build", i, "%s, read back: %s", op_names[op], why);
			}
			nfct_destroy(lib);
		}
		nfct_destroy(s.ct);
	}
	printf("build: %u requests (create, update, delete), %u disagreements\n", built, bad);
	ck_assert_msg(bad == 0, "%u of %u requests read differently in the library (first ones above)", bad,
		      built);
}
END_TEST

/* ---- print ---------------------------------------------------------------------------------- */

/*
 * The extras ctsyncd appends to the library's line (FLOW_FMT_PLAIN leaves
 * them out): its line must be the plain one followed by exactly these.
 */
static void extras_of(const struct flow_full *ff, char *out, size_t cap)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	size_t n = 0;

	out[0] = '\0';
	if ((ff->flow.attrs & FLOW_A_LABELS) && ff->labels.words) {
		n += (size_t)snprintf(out + n, cap - n, " labels=0x");
		for (unsigned i = ff->labels.words; i-- > 0;)
			n += (size_t)snprintf(out + n, cap - n, "%08x", ff->labels.w[i]);
	}
	if (ff->flow.attrs & FLOW_A_MASTER) {
		const struct flow_tuple *m = &ff->ext.master;

		inet_ntop(m->family, m->src.bytes, src, sizeof(src));
		inet_ntop(m->family, m->dst.bytes, dst, sizeof(dst));
		snprintf(out + n, cap - n, " master=%s:%s-%s", m->l4proto == IPPROTO_TCP ? "tcp" : "udp", src, dst);
	}
}

/*
 * conntrackd's -i object of a kernel state: what it caches (no counters,
 * no use count) and prints (no timeout).  The attributes ctsyncd does not
 * keep at all (secmark, timestamps, the id: doc/architecture.md) are
 * dropped too; `dropped` counts the states that had one.
 */
static void as_internal(struct nf_conntrack *ct, unsigned *dropped)
{
	static const int cached_not[] = {
		ATTR_TIMEOUT, ATTR_ORIG_COUNTER_PACKETS, ATTR_ORIG_COUNTER_BYTES, ATTR_REPL_COUNTER_PACKETS,
		ATTR_REPL_COUNTER_BYTES, ATTR_USE,
	};
	static const int kept_not[] = { ATTR_SECMARK, ATTR_TIMESTAMP_START, ATTR_TIMESTAMP_STOP, ATTR_ID };
	bool any = false;

	for (size_t i = 0; i < sizeof(cached_not) / sizeof(cached_not[0]); i++)
		nfct_attr_unset(ct, cached_not[i]);
	for (size_t i = 0; i < sizeof(kept_not) / sizeof(kept_not[0]); i++) {
		any |= nfct_attr_is_set(ct, kept_not[i]);
		nfct_attr_unset(ct, kept_not[i]);
	}
	*dropped += any;
	/* The kernel sends no labels rather than all-zero ones (the generator makes some). */
	if (nfct_attr_is_set(ct, ATTR_CONNLABELS)) {
		const struct nfct_bitmask *b = nfct_get_attr(ct, ATTR_CONNLABELS);
		bool none = true;

		for (int bit = 0; bit <= (int)nfct_bitmask_maxbit(b) && none; bit++)
			none = !nfct_bitmask_test_bit(b, (unsigned)bit);
		if (none)
			nfct_attr_unset(ct, ATTR_CONNLABELS);
	}
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

START_TEST(dump_lines_equal_nfct_snprintf)
{
	struct rng r = { seed ^ 0x9417u };
	struct flow_full ours;
	struct sample s;
	unsigned bad = 0, lines = 0, dropped = 0;
	char lib[FLOW_FORMAT_MAX], plain[FLOW_FORMAT_MAX], full[FLOW_FORMAT_MAX], want[2 * FLOW_FORMAT_MAX];
	char extras[FLOW_FORMAT_MAX];

	for (unsigned i = 0; i < states; i++) {
		struct nf_conntrack *in, *ex;
		enum kernel_event ev;

		sample_make(&r, &s);
		in = lib_parse(s.msg);
		if (!in || kernel_ct_parse(s.msg, (size_t)s.len, &ours, &ev) != KERNEL_OK) {
			if (in)
				nfct_destroy(in);
			nfct_destroy(s.ct);
			continue;
		}
		ours.counters = (struct flow_counters){ 0 };  /* the tables keep none */
		extras_of(&ours, extras, sizeof(extras));

		/* -i: the internal cache, with the kernel's reply tuple. */
		as_internal(in, &dropped);
		nfct_snprintf(lib, sizeof(lib), in, NFCT_T_UNKNOWN, NFCT_O_DEFAULT, 0);
		flow_format(plain, sizeof(plain), &ours, FLOW_FMT_REPLY | FLOW_FMT_PLAIN);
		check_line(&bad, "-i", i, lib, plain);
		flow_format(full, sizeof(full), &ours, FLOW_FMT_REPLY);
		snprintf(want, sizeof(want), "%s%s", plain, extras);
		check_line(&bad, "-i extras", i, want, full);

		nfct_snprintf(lib, sizeof(lib), in, NFCT_T_UNKNOWN, NFCT_O_XML, 0);
		flow_format_xml(plain, sizeof(plain), &ours, FLOW_FMT_REPLY);
		check_line(&bad, "-i -x", i, lib, plain);

		/* -e: the external cache, from the sync message: no reply tuple. */
		ex = nfct_new();
		oracle_ct_of_flow(&ours, false, ex);
		nfct_snprintf(lib, sizeof(lib), ex, NFCT_T_UNKNOWN, NFCT_O_DEFAULT, 0);
		flow_format(plain, sizeof(plain), &ours, FLOW_FMT_PLAIN);
		check_line(&bad, "-e", i, lib, plain);
		flow_format(full, sizeof(full), &ours, 0);
		snprintf(want, sizeof(want), "%s%s", plain, extras);
		check_line(&bad, "-e extras", i, want, full);

		nfct_snprintf(lib, sizeof(lib), ex, NFCT_T_UNKNOWN, NFCT_O_XML, 0);
		flow_format_xml(plain, sizeof(plain), &ours, 0);
		check_line(&bad, "-e -x", i, lib, plain);
		lines += 6;

		nfct_destroy(ex);
		nfct_destroy(in);
		nfct_destroy(s.ct);
	}
	printf("print: %u lines (-i, -e, as text and XML), %u disagreements; %u states had secmark, "
	       "timestamps or an id, which ctsyncd does not keep\n", lines, bad, dropped);
	ck_assert_msg(bad == 0, "%u of %u lines differ from nfct_snprintf() (first ones above)", bad, lines);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oracle_ct");
	TCase *tc = tcase_create("libnetfilter_conntrack");
	SRunner *sr;
	int failed;

	seed = oracle_seed();
	states = oracle_states(STATES_DEFAULT);
	printf("oracle: ORACLE_SEED=%#llx ORACLE_STATES=%u\n", (unsigned long long)seed, states);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, kernel_messages_parse_as_the_library_reads_them);
	tcase_add_test(tc, mutated_messages_read_alike_where_ctsyncd_accepts_them);
	tcase_add_test(tc, requests_parse_in_the_library_as_ctsyncd_meant_them);
	tcase_add_test(tc, dump_lines_equal_nfct_snprintf);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
