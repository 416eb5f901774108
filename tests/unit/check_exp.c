/*
 * check_exp.c - expectations (ExpectationSync): the table, the ctnetlink
 * conversion, the text form, and the sync engine sending them as it sends
 * flows (same sequence space, acknowledged, retransmitted, bulk-sent after
 * the flows, EXP_DEL on death, dead_acked with FTFW_EXP_HANDLE).
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

#include "flow/exp_table.h"
#include "flow/flow.h"
#include "flow/format.h"
#include "flow/table.h"
#include "kernel/kernel.h"
#include "sync/sync.h"
#include "wire/wire.h"

static void tuple4(struct flow_tuple *t, const char *src, const char *dst, uint16_t sport,
		   uint16_t dport)
{
	memset(t, 0, sizeof(*t));
	t->family = AF_INET;
	t->l4proto = IPPROTO_TCP;
	ck_assert_int_eq(inet_pton(AF_INET, src, t->src.bytes), 1);
	ck_assert_int_eq(inet_pton(AF_INET, dst, t->dst.bytes), 1);
	t->l4.port.sport = htons(sport);
	t->l4.port.dport = htons(dport);
}

/* An FTP data expectation for port `port`, as the kernel reports it (see expect.sh). */
static void ftp_exp(struct flow_exp *x, uint16_t port)
{
	memset(x, 0, sizeof(*x));
	tuple4(&x->master, "198.18.1.1", "198.18.1.1", 41480, 21);
	tuple4(&x->tuple, "198.18.1.1", "198.18.1.1", 0, port);
	tuple4(&x->mask, "255.255.255.255", "255.255.255.255", 0, 65535);
	x->timeout = 300;
	x->class = 0;
	x->attrs = FLOW_EXP_A_TIMEOUT | FLOW_EXP_A_CLASS | FLOW_EXP_A_HELPER;
	strcpy(x->helper, "ftp");
}

/* ---- the table ------------------------------------------------------------------ */

START_TEST(table_upsert_lookup_delete)
{
	struct exp_table_options o = { .seed = 7, .user_bytes = FTFW_USER_BYTES };
	struct exp_table *t;
	struct flow_exp a, b;
	uint32_t h, h2, cursor = 0, n = 0;

	ck_assert_int_eq(exp_table_new(&o, &t), 0);
	ftp_exp(&a, 50000);
	ck_assert_int_eq(exp_table_upsert(t, &a, 10, &h), FLOW_UPSERT_INSERTED);
	ck_assert_uint_ne(h, 0);
	ck_assert_uint_eq(exp_table_lookup(t, &a), h);
	ck_assert_int_eq(exp_table_upsert(t, &a, 11, &h2), FLOW_UPSERT_UNCHANGED);
	ck_assert_uint_eq(h2, h);
	ck_assert_uint_eq(exp_table_flags(t, h), FLOW_ENTRY_UPDATED);
	ck_assert_uint_eq(exp_table_updated(t, h), 11);
	/* Another timeout is the same key, another content. */
	a.timeout = 200;
	ck_assert_int_eq(exp_table_upsert(t, &a, 12, &h2), FLOW_UPSERT_UPDATED);
	ck_assert_uint_eq(exp_table_get(t, h)->timeout, 200);
	/* Another master with the same tuple and mask is the same key too (the kernel's). */
	b = a;
	b.master.l4.port.sport = htons(1);
	ck_assert_uint_eq(exp_table_lookup(t, &b), h);
	/* Another zone or another mask is another key. */
	b = a;
	b.master.zone = 3;
	ck_assert_uint_eq(exp_table_lookup(t, &b), 0);
	b = a;
	b.mask.l4.port.dport = 0;
	ck_assert_uint_eq(exp_table_lookup(t, &b), 0);
	/* Dead, revived with its handle. */
	ck_assert_int_eq(exp_table_mark_dead(t, h, 13), 0);
	ck_assert_uint_eq(exp_table_flags(t, h), FLOW_ENTRY_DEAD);
	ck_assert_int_eq(exp_table_upsert(t, &a, 14, &h2), FLOW_UPSERT_REVIVED);
	ck_assert_uint_eq(h2, h);
	ck_assert_uint_eq(exp_table_flags(t, h), 0);
	while (exp_table_next(t, &cursor))
		n++;
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(exp_table_delete(t, h), 0);
	ck_assert_int_eq(exp_table_delete(t, h), -ENOENT);
	ck_assert_ptr_null(exp_table_get(t, h));
	ck_assert_uint_eq(exp_table_lookup(t, &a), 0);
	ck_assert_uint_eq(exp_table_count(t), 0);
	/* A tuple without a family, or of mixed families, is refused. */
	b = a;
	b.mask.family = AF_INET6;
	ck_assert_int_eq(exp_table_upsert(t, &b, 1, &h), -EINVAL);
	exp_table_free(t);
}
END_TEST

START_TEST(table_grows_limits_and_clears)
{
	struct exp_table_options o = { .seed = 1, .limit = 3000, .user_bytes = 8 };
	struct flow_table_stats st;
	struct exp_table *t;
	struct flow_exp x;
	uint32_t h, cursor = 0, n = 0;

	ck_assert_int_eq(exp_table_new(&o, &t), 0);
	for (uint32_t i = 0; i < 3000; i++) {
		ftp_exp(&x, (uint16_t)(1000 + i));
		ck_assert_int_eq(exp_table_upsert(t, &x, i, &h), FLOW_UPSERT_INSERTED);
		*(uint64_t *)exp_table_user(t, h) = i;
	}
	ftp_exp(&x, 9);
	ck_assert_int_eq(exp_table_upsert(t, &x, 0, &h), -ENOSPC);
	/* Every one is found, its user area intact; delete the even ones. */
	for (uint32_t i = 0; i < 3000; i++) {
		ftp_exp(&x, (uint16_t)(1000 + i));
		h = exp_table_lookup(t, &x);
		ck_assert_uint_ne(h, 0);
		ck_assert_uint_eq(*(uint64_t *)exp_table_user(t, h), i);
		if (i % 2 == 0)
			ck_assert_int_eq(exp_table_delete(t, h), 0);
	}
	while ((h = exp_table_next(t, &cursor)) != 0) {
		ck_assert_uint_eq(ntohs(exp_table_get(t, h)->tuple.l4.port.dport) % 2, 1);
		n++;
	}
	ck_assert_uint_eq(n, 1500);
	exp_table_stats(t, &st);
	ck_assert_uint_eq(st.active, 1500);
	ck_assert_uint_eq(st.enospc, 1);
	exp_table_clear(t);
	ck_assert_uint_eq(exp_table_count(t), 0);
	ftp_exp(&x, 1001);
	ck_assert_uint_eq(exp_table_lookup(t, &x), 0);
	ck_assert_int_eq(exp_table_upsert(t, &x, 0, &h), FLOW_UPSERT_INSERTED);
	exp_table_free(t);
}
END_TEST

/* ---- ctnetlink ------------------------------------------------------------------------ */

START_TEST(netlink_build_then_parse)
{
	uint8_t buf[1024];
	struct flow_exp x, got;
	struct nlmsghdr *nlh;
	enum kernel_event ev;
	int n;

	ftp_exp(&x, 51210);
	x.master.zone = 5;
	x.flags = 1;                    /* PERMANENT */
	x.attrs |= FLOW_EXP_A_NAT | FLOW_EXP_A_FN;
	x.nat.family = AF_INET;
	x.nat.l4proto = IPPROTO_TCP;
	ck_assert_int_eq(inet_pton(AF_INET, "203.0.113.5", x.nat.src.bytes), 1);
	x.nat.l4.port.sport = htons(2020);
	x.nat_dir = 1;
	strcpy(x.fn, "nat-follow-master");
	n = kernel_exp_build(buf, sizeof(buf), KERNEL_OP_CREATE, &x, 300, KERNEL_BUILD_ACK, 77);
	ck_assert_int_gt(n, 0);
	nlh = (struct nlmsghdr *)buf;
	ck_assert_uint_eq(nlh->nlmsg_type, (NFNL_SUBSYS_CTNETLINK_EXP << 8) | IPCTNL_MSG_EXP_NEW);
	ck_assert_uint_eq(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK);
	ck_assert_uint_eq(nlh->nlmsg_seq, 77);
	ck_assert_int_eq(kernel_exp_parse(buf, (size_t)n, &got, &ev), KERNEL_OK);
	ck_assert_int_eq(ev, KERNEL_EV_NEW);
	ck_assert_mem_eq(&got, &x, sizeof(x));
	/* Too small a buffer: ENOSPC, at every size. */
	for (size_t cap = 0; cap < (size_t)n; cap += 7)
		ck_assert_int_eq(kernel_exp_build(buf, cap, KERNEL_OP_CREATE, &x, 300, 0, 1), -ENOSPC);
	/* A delete names the tuple and the zone only. */
	n = kernel_exp_build(buf, sizeof(buf), KERNEL_OP_DELETE, &x, 0, 0, 1);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(kernel_exp_parse(buf, (size_t)n, &got, &ev), KERNEL_R_NO_TUPLE);
	/* A flush has no attribute. */
	n = kernel_exp_build(buf, sizeof(buf), KERNEL_OP_FLUSH, NULL, 0, 0, 1);
	ck_assert_int_eq(n, NLMSG_HDRLEN + 4);
	ck_assert_int_eq(kernel_exp_build(buf, sizeof(buf), KERNEL_OP_CREATE, NULL, 0, 0, 1), -EINVAL);
}
END_TEST

START_TEST(netlink_rejects_bad_messages)
{
	uint8_t buf[1024];
	struct flow_exp x, got;
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	enum kernel_event ev;
	int n;

	ftp_exp(&x, 51210);
	n = kernel_exp_build(buf, sizeof(buf), KERNEL_OP_CREATE, &x, 300, 0, 1);
	ck_assert_int_eq(kernel_exp_parse(buf, 10, &got, &ev), KERNEL_R_TRUNCATED);
	ck_assert_int_eq(kernel_exp_parse(buf, (size_t)n - 1, &got, &ev), KERNEL_R_TRUNCATED);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_NEW;
	ck_assert_int_eq(kernel_exp_parse(buf, (size_t)n, &got, &ev), KERNEL_R_NOT_CONNTRACK);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK_EXP << 8) | IPCTNL_MSG_EXP_DELETE;
	ck_assert_int_eq(kernel_exp_parse(buf, (size_t)n, &got, &ev), KERNEL_OK);
	ck_assert_int_eq(ev, KERNEL_EV_DESTROY);
	((struct nfgenmsg *)mnl_nlmsg_get_payload(nlh))->nfgen_family = AF_UNSPEC;
	ck_assert_int_eq(kernel_exp_parse(buf, (size_t)n, &got, &ev), KERNEL_R_FAMILY);
	/* A helper name without its NUL. */
	n = kernel_exp_build(buf, sizeof(buf), KERNEL_OP_CREATE, &x, 300, 0, 1);
	{
		struct nlattr *a;

		mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
			if (mnl_attr_get_type(a) == CTA_EXPECT_HELP_NAME)
				memset(mnl_attr_get_payload(a), 'x', mnl_attr_get_payload_len(a));
	}
	ck_assert_int_eq(kernel_exp_parse(buf, (size_t)n, &got, &ev), KERNEL_R_HELPER_NAME);
}
END_TEST

START_TEST(text_form_is_conntracks)
{
	char line[FLOW_FORMAT_MAX];
	struct flow_exp x;

	ftp_exp(&x, 51210);
	flow_exp_format(line, sizeof(line), &x, FLOW_FMT_TIMEOUT);
	/* What `conntrack -L expect` printed for this expectation (tests/integration/expect.sh). */
	ck_assert_str_eq(line, "300 proto=6 src=198.18.1.1 dst=198.18.1.1 sport=0 dport=51210 "
			 "mask-src=255.255.255.255 mask-dst=255.255.255.255 sport=0 dport=65535 "
			 "master-src=198.18.1.1 master-dst=198.18.1.1 sport=41480 dport=21 class=0 "
			 "helper=ftp");
	ck_assert_int_eq(flow_exp_format(line, 10, &x, FLOW_FMT_TIMEOUT), (int)strlen("300 proto=6 src=198.18.1.1 dst=198.18.1.1 sport=0 dport=51210 "
			 "mask-src=255.255.255.255 mask-dst=255.255.255.255 sport=0 dport=65535 "
			 "master-src=198.18.1.1 master-dst=198.18.1.1 sport=41480 dport=21 class=0 "
			 "helper=ftp"));
	ck_assert_uint_eq(strlen(line), 9);
	/* conntrackd's -i expect has no timeout; its -x (1.4.7's output for such an expectation): */
	flow_exp_format(line, sizeof(line), &x, 0);
	ck_assert_str_eq(line, "proto=6 src=198.18.1.1 dst=198.18.1.1 sport=0 dport=51210 "
			 "mask-src=255.255.255.255 mask-dst=255.255.255.255 sport=0 dport=65535 "
			 "master-src=198.18.1.1 master-dst=198.18.1.1 sport=41480 dport=21 class=0 "
			 "helper=ftp");
	flow_exp_format_xml(line, sizeof(line), &x, 0);
	ck_assert_str_eq(line, "<flow><layer3 protonum=\"2\" protoname=\"ipv4\"><expected><src>198.18.1.1</src>"
			 "<dst>198.18.1.1</dst></expected><mask><src>255.255.255.255</src><dst>255.255.255.255"
			 "</dst></mask><master><src>198.18.1.1</src><dst>198.18.1.1</dst></master></layer3>"
			 "<layer4 protonum=\"6\" protoname=\"tcp\"><expected><sport>0</sport><dport>51210"
			 "</dport></expected><mask><sport>0</sport><dport>65535</dport></mask><master><sport>"
			 "41480</sport><dport>21</dport></master></layer4><meta><helper-name>ftp</helper-name>"
			 "<class>0</class></meta></flow>");
}
END_TEST

/*
 * A PPTP expectation (GRE, its master TCP) with a zone and two flags: what
 * libnetfilter_conntrack 1.0.9's nfexp_snprintf() prints (1.4.7's -i expect
 * and -x); tests/oracle compares the two on random expectations.
 */
START_TEST(gre_expectation_with_zone_and_flags_as_the_library)
{
	char line[1024];
	struct flow_exp x;

	memset(&x, 0, sizeof(x));
	x.master.family = x.tuple.family = x.mask.family = AF_INET;
	x.master.l4proto = IPPROTO_TCP;
	x.tuple.l4proto = x.mask.l4proto = IPPROTO_GRE;
	inet_pton(AF_INET, "198.18.1.1", x.master.src.bytes);
	inet_pton(AF_INET, "198.18.1.2", x.master.dst.bytes);
	x.master.l4.port.sport = htons(1234);
	x.master.l4.port.dport = htons(1723);
	x.master.zone = 3;
	x.tuple.src = x.master.dst;
	x.tuple.dst = x.master.src;
	x.tuple.l4.port.dport = htons(0x1388);
	memset(x.mask.src.bytes, 0xff, 4);
	memset(x.mask.dst.bytes, 0xff, 4);
	x.mask.l4.port.sport = x.mask.l4.port.dport = 0xffff;
	x.flags = 5;                    /* PERMANENT, USERSPACE */
	x.attrs = FLOW_EXP_A_HELPER;
	strcpy(x.helper, "pptp");
	flow_exp_format(line, sizeof(line), &x, 0);
	ck_assert_str_eq(line, "proto=47 src=198.18.1.2 dst=198.18.1.1 srckey=0x0 dstkey=0x1388 "
			 "mask-src=255.255.255.255 mask-dst=255.255.255.255 srckey=0xffff dstkey=0xffff "
			 "master-src=198.18.1.1 master-dst=198.18.1.2 sport=1234 dport=1723 zone=3 "
			 "PERMANENT,USERSPACE helper=pptp");
	flow_exp_format_xml(line, sizeof(line), &x, 0);
	ck_assert_str_eq(line, "<flow><layer3 protonum=\"2\" protoname=\"ipv4\"><expected><src>198.18.1.2</src>"
			 "<dst>198.18.1.1</dst></expected><mask><src>255.255.255.255</src><dst>255.255.255.255"
			 "</dst></mask><master><src>198.18.1.1</src><dst>198.18.1.2</dst></master></layer3>"
			 "<layer4 protonum=\"47\" protoname=\"gre\"><expected><srckey>0x0</srckey><dstkey>0x1388"
			 "</dstkey></expected><mask><srckey>0xffff</srckey><dstkey>0xffff</dstkey></mask><master>"
			 "<sport>1234</sport><dport>1723</dport></master></layer4><meta><helper-name>pptp"
			 "</helper-name><zone>3</zone><permanent/><userspace/></meta></flow>");
}
END_TEST

/* ---- the engine -------------------------------------------------------------------------- */

static struct {
	struct flow_table *t;
	struct exp_table *x;
	struct ftfw *e;
	unsigned nout, exp_new, exp_del, ct_new;
	uint32_t last_seq;
	uint32_t dead[8];
	unsigned ndead;
	struct flow_exp rx[4];
	unsigned nrx;
	uint16_t applied_sport[4], prefetched_sport[4];
	unsigned napplied, nprefetched;
} E;

static void e_emit(void *arg, const void *msg, size_t len)
{
	struct wire_hdr h;

	(void)arg;
	ck_assert_int_eq(wire_hdr_decode(msg, len, &h), WIRE_OK);
	E.nout++;
	if (h.type == WIRE_T_EXP_NEW)
		E.exp_new++;
	if (h.type == WIRE_T_EXP_DEL)
		E.exp_del++;
	if (h.type == WIRE_T_CT_NEW)
		E.ct_new++;
	if (wire_type_is_exp(h.type)) {
		struct flow_exp got;

		ck_assert_int_eq(wire_exp_decode(msg, len, &got), WIRE_OK);
		ck_assert_uint_eq(ntohs(got.tuple.l4.port.dport), 51210);
		ck_assert_str_eq(got.helper, "ftp");
	}
	if (!(h.flags & (WIRE_F_ACK | WIRE_F_NACK | WIRE_F_RESYNC)) && h.type != WIRE_T_CTL)
		E.last_seq = h.seq;
}

static void e_apply(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	(void)arg, (void)peer, (void)type;
	if (E.napplied < 4)
		E.applied_sport[E.napplied++] = ntohs(f->flow.orig.l4.port.sport);
}

static void e_prefetch(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	(void)arg, (void)peer, (void)type;
	if (E.nprefetched < 4)
		E.prefetched_sport[E.nprefetched++] = ntohs(f->flow.orig.l4.port.sport);
}

static void e_apply_exp(void *arg, unsigned peer, uint8_t type, const struct flow_exp *x)
{
	(void)arg, (void)peer, (void)type;
	if (E.nrx < 4)
		E.rx[E.nrx++] = *x;
}

static void e_dead_acked(void *arg, uint32_t h)
{
	(void)arg;
	if (E.ndead < 8)
		E.dead[E.ndead++] = h;
}

static void engine_setup(enum ftfw_mode mode)
{
	static const struct ftfw_ops ops = { .emit = e_emit, .apply = e_apply, .apply_exp = e_apply_exp,
					     .prefetch = e_prefetch, .dead_acked = e_dead_acked };
	struct flow_table_options to = { .buckets = 16, .seed = 1, .user_bytes = FTFW_USER_BYTES };
	struct exp_table_options xo = { .seed = 2, .user_bytes = FTFW_USER_BYTES };
	struct ftfw_config c = { .mode = mode, .enc_opts = WIRE_ENC_TIMEOUT };

	memset(&E, 0, sizeof(E));
	ck_assert_int_eq(flow_table_new(&to, &E.t), 0);
	ck_assert_int_eq(exp_table_new(&xo, &E.x), 0);
	ck_assert_int_eq(ftfw_new(&c, &ops, NULL, E.t, 1000, 0, &E.e), 0);
	ck_assert_int_eq(ftfw_attach_expectations(E.e, E.x), 0);
}

static void engine_teardown(void)
{
	ftfw_free(E.e);
	exp_table_free(E.x);
	flow_table_free(E.t);
}

/* An ACK from the peer for [from, to]. */
static void peer_ack(uint32_t from, uint32_t to, uint64_t now)
{
	uint8_t buf[WIRE_CTL_RANGE_LEN];
	struct wire_split s;
	struct wire_msg m;

	static uint32_t seq = 5;        /* the peer's own numbers go on (a repeat is dropped as old) */

	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), WIRE_F_ACK | WIRE_F_HELLO_BACK, seq++, from, to),
			 WIRE_CTL_RANGE_LEN);
	wire_split_init(&s, buf, sizeof(buf), false);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_MSG);
	ck_assert_int_eq(ftfw_receive(E.e, 0, &m, now), 0);
}

START_TEST(engine_sends_acks_and_deletes_expectations)
{
	struct flow_exp x;
	uint32_t h;
	struct ftfw_stats st;

	engine_setup(FTFW_MODE_FTFW);
	ftp_exp(&x, 51210);
	ck_assert_int_eq(exp_table_upsert(E.x, &x, 0, &h), FLOW_UPSERT_INSERTED);
	ck_assert_int_eq(ftfw_exp_changed(E.e, h), 0);
	ftfw_send(E.e, 10, SIZE_MAX);
	ck_assert_uint_eq(E.exp_new, 1);
	ftfw_stats(E.e, &st);
	ck_assert_uint_eq(st.inflight, 1);
	/* Unacknowledged: retransmitted after the RTO, with a fresh number. */
	ftfw_tick(E.e, 10 + FTFW_DEFAULT_RTO_MS + 1);
	ftfw_send(E.e, 10 + FTFW_DEFAULT_RTO_MS + 1, SIZE_MAX);
	ck_assert_uint_eq(E.exp_new, 2);
	peer_ack(1000, E.last_seq, 2000);
	ftfw_stats(E.e, &st);
	ck_assert_uint_eq(st.inflight, 0);
	/* Its end: EXP_DEL, and the DEL's ACK hands the handle back with the bit. */
	ck_assert_int_eq(exp_table_mark_dead(E.x, h, 3), 0);
	ck_assert_int_eq(ftfw_exp_changed(E.e, h), 0);
	ftfw_send(E.e, 3000, SIZE_MAX);
	ck_assert_uint_eq(E.exp_del, 1);
	peer_ack(1000, E.last_seq, 3001);
	ck_assert_uint_eq(E.ndead, 1);
	ck_assert_uint_eq(E.dead[0], h | FTFW_EXP_HANDLE);
	ck_assert(ftfw_idle(E.e));
	engine_teardown();
}
END_TEST

START_TEST(engine_bulk_sends_flows_then_expectations)
{
	struct flow_full ff;
	struct flow_exp x;
	uint32_t h;

	engine_setup(FTFW_MODE_NOTRACK);
	ftp_exp(&x, 51210);
	ck_assert_int_eq(exp_table_upsert(E.x, &x, 0, &h), FLOW_UPSERT_INSERTED);
	memset(&ff, 0, sizeof(ff));
	ff.flow.orig = x.master;
	ff.flow.attrs = FLOW_A_PORTS;
	ck_assert_int_ge(flow_table_upsert(E.t, &ff, 0, &h), 0);
	ftfw_bulk(E.e);
	ftfw_send(E.e, 1, SIZE_MAX);
	ck_assert_uint_eq(E.ct_new, 1);
	ck_assert_uint_eq(E.exp_new, 1);
	ck_assert_uint_eq(E.nout, 2);
	/* NOTRACK: a dead expectation's DEL is done once sent. */
	ck_assert_int_eq(exp_table_mark_dead(E.x, exp_table_lookup(E.x, &x), 2), 0);
	ftfw_exp_changed(E.e, exp_table_lookup(E.x, &x));
	ftfw_send(E.e, 2, SIZE_MAX);
	ck_assert_uint_eq(E.exp_del, 1);
	ck_assert_uint_eq(E.ndead, 1);
	ck_assert(E.dead[0] & FTFW_EXP_HANDLE);
	engine_teardown();
}
END_TEST

START_TEST(engine_delivers_received_expectations)
{
	uint8_t buf[512];
	struct wire_hdr h = { .type = WIRE_T_EXP_NEW, .seq = 77 };
	struct wire_split s;
	struct wire_msg m;
	struct flow_exp x;
	int n;

	engine_setup(FTFW_MODE_FTFW);
	ftp_exp(&x, 51210);
	n = wire_exp_encode(buf, sizeof(buf), &h, &x, WIRE_ENC_TIMEOUT, NULL);
	ck_assert_int_gt(n, 0);
	wire_split_init(&s, buf, (size_t)n, false);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_MSG);
	ck_assert_int_eq(ftfw_receive(E.e, 0, &m, 1), 0);
	ck_assert_uint_eq(E.nrx, 1);
	ck_assert_mem_eq(&E.rx[0].tuple, &x.tuple, sizeof(x.tuple));
	ck_assert_str_eq(E.rx[0].helper, "ftp");
	engine_teardown();
}
END_TEST

/*
 * A datagram of states and expectations through ftfw_receive_batch(): the
 * states are decoded ahead (and hinted), the expectations are not, and
 * each message is delivered in order to apply() or apply_exp().
 */
START_TEST(engine_batch_receives_states_and_expectations)
{
	uint8_t buf[2048];
	struct wire_hdr h = { .type = WIRE_T_CT_NEW, .seq = 77 };
	struct wire_msg m[4];
	struct wire_split s;
	struct flow_full ff;
	struct flow_exp x;
	size_t len = 0;
	int n;

	engine_setup(FTFW_MODE_FTFW);
	ftp_exp(&x, 51210);
	memset(&ff, 0, sizeof(ff));
	ff.flow.orig = x.master;
	ff.flow.attrs = FLOW_A_PORTS;
	n = wire_ct_encode(buf, sizeof(buf), &h, &ff, WIRE_ENC_TIMEOUT, NULL);
	ck_assert_int_gt(n, 0);
	len += (size_t)n;
	h = (struct wire_hdr){ .type = WIRE_T_EXP_NEW, .seq = 78 };
	n = wire_exp_encode(buf + len, sizeof(buf) - len, &h, &x, WIRE_ENC_TIMEOUT, NULL);
	ck_assert_int_gt(n, 0);
	len += (size_t)n;
	h = (struct wire_hdr){ .type = WIRE_T_CT_UPD, .seq = 79 };
	ff.flow.orig.l4.port.sport = htons(41481);
	n = wire_ct_encode(buf + len, sizeof(buf) - len, &h, &ff, WIRE_ENC_TIMEOUT, NULL);
	ck_assert_int_gt(n, 0);
	len += (size_t)n;
	h = (struct wire_hdr){ .type = WIRE_T_EXP_DEL, .seq = 80 };
	n = wire_exp_encode(buf + len, sizeof(buf) - len, &h, &x, WIRE_ENC_TIMEOUT, NULL);
	ck_assert_int_gt(n, 0);
	len += (size_t)n;
	wire_split_init(&s, buf, len, false);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(wire_split_next(&s, &m[i]), WIRE_SPLIT_MSG);
	ck_assert_int_eq(wire_split_next(&s, &m[0]), WIRE_SPLIT_END);
	ck_assert_int_eq(ftfw_receive_batch(E.e, 0, m, 4, 1), 0);
	ck_assert_uint_eq(E.nprefetched, 2);
	ck_assert_uint_eq(E.prefetched_sport[0], 41480);
	ck_assert_uint_eq(E.prefetched_sport[1], 41481);
	ck_assert_uint_eq(E.napplied, 2);
	ck_assert_uint_eq(E.applied_sport[0], 41480);
	ck_assert_uint_eq(E.applied_sport[1], 41481);
	ck_assert_uint_eq(E.nrx, 2);
	ck_assert_mem_eq(&E.rx[0].tuple, &x.tuple, sizeof(x.tuple));
	ck_assert_str_eq(E.rx[0].helper, "ftp");
	ck_assert_mem_eq(&E.rx[1].tuple, &x.tuple, sizeof(x.tuple));
	engine_teardown();
}
END_TEST

static Suite *exp_suite(void)
{
	Suite *s = suite_create("exp");
	TCase *t = tcase_create("table");
	TCase *k = tcase_create("netlink");
	TCase *e = tcase_create("engine");

	tcase_add_test(t, table_upsert_lookup_delete);
	tcase_add_test(t, table_grows_limits_and_clears);
	tcase_add_test(k, netlink_build_then_parse);
	tcase_add_test(k, gre_expectation_with_zone_and_flags_as_the_library);
	tcase_add_test(k, netlink_rejects_bad_messages);
	tcase_add_test(k, text_form_is_conntracks);
	tcase_add_test(e, engine_sends_acks_and_deletes_expectations);
	tcase_add_test(e, engine_bulk_sends_flows_then_expectations);
	tcase_add_test(e, engine_delivers_received_expectations);
	tcase_add_test(e, engine_batch_receives_states_and_expectations);
	suite_add_tcase(s, t);
	suite_add_tcase(s, k);
	suite_add_tcase(s, e);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(exp_suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
