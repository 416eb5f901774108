/*
 * check_wire.c - the conntrackd-1.4.7 wire codec: golden byte vectors from
 * the reference (protocol.md §2), round trips of every attribute and protocol, every
 * rejection rule of protocol.md §2.11 and ours, the splitter, and buffer bounds.
 */
#include <arpa/inet.h>
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_conntrack_tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/wire.h"

#ifndef IPPROTO_UDPLITE
#define IPPROTO_UDPLITE 136
#endif

#define ALL_OPTS (WIRE_ENC_TIMEOUT | WIRE_ENC_WSCALE | WIRE_ENC_UDPLITE_PORTS)

/* ---- helpers: hex, byte comparison ------------------------------------- */

/* "10 00 0054 ..." -> bytes; blanks and '|' are ignored. */
static size_t unhex(uint8_t *out, size_t cap, const char *s)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v;

		if (isspace((unsigned char)*s) || *s == '|')
			continue;
		ck_assert_msg(isxdigit((unsigned char)*s), "bad hex digit '%c' in test vector", *s);
		v = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
		if (hi < 0) {
			hi = v;
			continue;
		}
		ck_assert_msg(n < cap, "test vector longer than %zu bytes", cap);
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	ck_assert_msg(hi < 0, "odd number of hex digits in test vector");
	return n;
}

/* A hex dump, 16 bytes a line in groups of 4, a '*' before the byte at `mark`. */
static char *hexdump(const uint8_t *p, size_t n, size_t mark)
{
	size_t cap = n * 4 + 64, len = 0;
	char *s = malloc(cap);

	ck_assert_ptr_nonnull(s);
	s[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *sep = i % 16 == 0 ? (i ? "\n    " : "    ") : i % 4 == 0 ? "  " : " ";

		len += (size_t)snprintf(s + len, cap - len, "%s%s%02x", sep, i == mark ? "*" : "", p[i]);
	}
	if (n == 0)
		snprintf(s, cap, "    (empty)");
	return s;
}

static size_t first_difference(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t i;

	for (i = 0; i < alen && i < blen; i++)
		if (a[i] != b[i])
			return i;
	return i;
}

#define assert_bytes(got, glen, want, wlen) \
	check_bytes(__FILE__, __LINE__, (const uint8_t *)(got), (glen), (const uint8_t *)(want), (wlen))

static void check_bytes(const char *file, int line, const uint8_t *got, size_t glen,
			const uint8_t *want, size_t wlen)
{
	size_t d;
	char *g, *w;

	if (glen == wlen && memcmp(got, want, glen) == 0)
		return;
	d = first_difference(got, glen, want, wlen);
	g = hexdump(got, glen, d);
	w = hexdump(want, wlen, d);
	ck_abort_msg("%s:%d: bytes differ at offset %zu (* marks it)\nexpected (%zu bytes):\n%s\n"
		     "actual (%zu bytes):\n%s", file, line, d, wlen, w, glen, g);
}

#define assert_hex(got, glen, hex) do { \
		uint8_t want_[2048]; \
		size_t wlen_ = unhex(want_, sizeof(want_), hex); \
		assert_bytes(got, glen, want_, wlen_); \
	} while (0)

#define assert_reason(got, want) do { \
		enum wire_reason g_ = (got), w_ = (want); \
		ck_assert_msg(g_ == w_, "expected reason \"%s\" (%d), got \"%s\" (%d)", \
			      wire_reason_name(w_), w_, wire_reason_name(g_), g_); \
	} while (0)

/* ---- helpers: messages built by hand ----------------------------------- */

/* A message built byte by byte, independently of the encoder under test. */
struct mb {
	uint8_t b[2048];
	size_t n;
};

static void mb_init(struct mb *m, uint8_t type)
{
	memset(m, 0, sizeof(*m));
	m->b[0] = (uint8_t)(0x10 | type);
	m->b[7] = 1;                    /* seq 1 */
	m->n = 8;
}

static void mb_hex(struct mb *m, const char *hex)
{
	m->n += unhex(m->b + m->n, sizeof(m->b) - m->n, hex);
}

/* An attribute whose nta_len is 4 + n, payload, zero padding. */
static void mb_attr(struct mb *m, uint16_t id, const void *payload, size_t n)
{
	size_t nta_len = 4 + n;

	ck_assert(m->n + nta_len + 3 <= sizeof(m->b));
	m->b[m->n] = (uint8_t)(nta_len >> 8);
	m->b[m->n + 1] = (uint8_t)nta_len;
	m->b[m->n + 2] = (uint8_t)(id >> 8);
	m->b[m->n + 3] = (uint8_t)id;
	memcpy(m->b + m->n + 4, payload, n);
	m->n += (nta_len + 3) & ~(size_t)3;
}

/* Fill in the header's length; returns it. */
static size_t mb_end(struct mb *m)
{
	m->b[2] = (uint8_t)(m->n >> 8);
	m->b[3] = (uint8_t)m->n;
	return m->n;
}

/* IPV4 10.0.0.1 -> 10.0.0.2, L4PROTO TCP, PORT 1234 -> 80: the smallest keyable message. */
#define TCP_KEY "000c 0000 0a000001 0a000002  0005 0002 06 000000  0008 0003 04d2 0050"
#define ICMP_KEY "000c 0000 0a000001 0a000002  0005 0002 01 000000"
#define UDP_KEY "000c 0000 0a000001 0a000002  0005 0002 11 000000  0008 0003 1388 0035"
#define IPV6_TCP_KEY "0024 0001 20010db8000000000000000000000001 20010db8000000000000000000000002" \
	"  0005 0002 06 000000  0008 0003 04d2 0050"

static enum wire_reason decode_hex(uint8_t type, const char *body, struct flow_full *out)
{
	struct mb m;

	mb_init(&m, type);
	mb_hex(&m, body);
	return wire_ct_decode(m.b, mb_end(&m), out);
}

static enum wire_reason decode_exp_hex(uint8_t type, const char *body, struct flow_exp *out)
{
	struct mb m;

	mb_init(&m, type);
	mb_hex(&m, body);
	return wire_exp_decode(m.b, mb_end(&m), out);
}

/* ---- helpers: flows ------------------------------------------------------ */

static void flow_init(struct flow_full *ff, int family, uint8_t proto, const char *src, const char *dst)
{
	struct flow_tuple *t = &ff->flow.orig;

	memset(ff, 0, sizeof(*ff));
	t->family = (uint8_t)family;
	t->l4proto = proto;
	ck_assert_int_eq(inet_pton(family, src, t->src.bytes), 1);
	ck_assert_int_eq(inet_pton(family, dst, t->dst.bytes), 1);
}

static void flow_ports(struct flow_full *ff, uint16_t sport, uint16_t dport)
{
	ff->flow.orig.l4.port.sport = htons(sport);
	ff->flow.orig.l4.port.dport = htons(dport);
	ff->flow.attrs |= FLOW_A_PORTS;
}

/* protocol.md §2.7's annotated capture: TCP 10.0.0.1:1234 -> 10.0.0.2:80, ESTABLISHED, mark 7, timeout 300. */
static void capture_flow(struct flow_full *ff)
{
	flow_init(ff, AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.2");
	flow_ports(ff, 1234, 80);
	ff->flow.status = IPS_SEEN_REPLY | IPS_ASSURED | IPS_CONFIRMED;
	ff->flow.proto_state = TCP_CONNTRACK_ESTABLISHED;
	ff->flow.timeout = 300;
	ff->flow.mark = 7;
	ff->flow.attrs |= FLOW_A_STATUS | FLOW_A_PROTO_STATE | FLOW_A_TIMEOUT | FLOW_A_MARK;
}

#define CAPTURE_ATTRS \
	"000c 0000 0a000001 0a000002" \
	"0008 0005 0000000e" \
	"0005 0002 06 000000" \
	"0008 0003 04d2 0050" \
	"0005 0004 03 000000" \
	"0008 0006 0000012c" \
	"0008 0007 00000007"

static const char capture_hex[] =
	"10 00 0054 6b027a96" CAPTURE_ATTRS "0010 001f 00000000 00000000 00000000";

/* The same state as ctsyncd sends it: without the zero SYNPROXY (ct_encode.c says why). */
static const char ours_hex[] = "10 00 0044 6b027a96" CAPTURE_ATTRS;

struct field {
	const char *name;
	size_t off, size;
};

#define F(type, m) { #m, offsetof(type, m), sizeof(((type *)0)->m) }
static const struct field flow_fields[] = {
	F(struct flow, orig.src), F(struct flow, orig.dst), F(struct flow, orig.l4),
	F(struct flow, orig.family), F(struct flow, orig.l4proto), F(struct flow, orig.zone),
	F(struct flow, status), F(struct flow, timeout), F(struct flow, mark), F(struct flow, attrs),
	F(struct flow, proto_state), F(struct flow, dccp_role), F(struct flow, wscale_orig),
	F(struct flow, wscale_repl), F(struct flow, ext),
};
static const struct field ext_fields[] = {
	F(struct flow_ext, snat), F(struct flow_ext, dnat), F(struct flow_ext, spat),
	F(struct flow_ext, dpat), F(struct flow_ext, sctp_vtag_orig), F(struct flow_ext, sctp_vtag_repl),
	F(struct flow_ext, nat_seq), F(struct flow_ext, synproxy), F(struct flow_ext, master),
	F(struct flow_ext, helper),
};
#undef F

static const char *field_at(const struct field *fs, size_t n, size_t off)
{
	for (size_t i = 0; i < n; i++)
		if (off >= fs[i].off && off < fs[i].off + fs[i].size)
			return fs[i].name;
	return "(padding)";
}

#define assert_flow_eq(got, want) check_flow(__FILE__, __LINE__, (got), (want))

/* Flows are normalised, so equal flows are equal bytes (labels: up to `words`). */
static void check_flow(const char *file, int line, const struct flow_full *got,
		       const struct flow_full *want)
{
	const uint8_t *g = (const uint8_t *)&got->flow, *w = (const uint8_t *)&want->flow;
	size_t d;

	if (memcmp(g, w, sizeof(got->flow))) {
		d = first_difference(g, sizeof(got->flow), w, sizeof(want->flow));
		ck_abort_msg("%s:%d: struct flow differs at byte %zu (%s)\nexpected:\n%s\nactual:\n%s",
			     file, line, d, field_at(flow_fields, sizeof(flow_fields) / sizeof(flow_fields[0]), d),
			     hexdump(w, sizeof(want->flow), d), hexdump(g, sizeof(got->flow), d));
	}
	g = (const uint8_t *)&got->ext;
	w = (const uint8_t *)&want->ext;
	if (memcmp(g, w, sizeof(got->ext))) {
		d = first_difference(g, sizeof(got->ext), w, sizeof(want->ext));
		ck_abort_msg("%s:%d: struct flow_ext differs at byte %zu (%s)\nexpected:\n%s\nactual:\n%s",
			     file, line, d, field_at(ext_fields, sizeof(ext_fields) / sizeof(ext_fields[0]), d),
			     hexdump(w, sizeof(want->ext), d), hexdump(g, sizeof(got->ext), d));
	}
	if (want->flow.attrs & FLOW_A_LABELS) {
		ck_assert_msg(got->labels.words == want->labels.words, "%s:%d: expected %u label words, got %u",
			      file, line, want->labels.words, got->labels.words);
		assert_bytes(got->labels.w, got->labels.words * 4u, want->labels.w, want->labels.words * 4u);
	}
}

/* The ids of the attributes of an encoded message, in order; also checks the framing. */
static size_t attr_ids(const uint8_t *msg, size_t len, uint16_t *ids, size_t max)
{
	size_t off = 8, n = 0;

	ck_assert_uint_eq(len % 4, 0);
	ck_assert_uint_eq((size_t)(msg[2] << 8 | msg[3]), len);
	while (off < len) {
		size_t nta_len = (size_t)(msg[off] << 8 | msg[off + 1]);

		ck_assert_msg(nta_len >= 4 && off + nta_len <= len, "bad nta_len %zu at %zu", nta_len, off);
		ck_assert(n < max);
		ids[n++] = (uint16_t)(msg[off + 2] << 8 | msg[off + 3]);
		for (size_t i = off + nta_len; i < off + ((nta_len + 3) & ~(size_t)3); i++)
			ck_assert_msg(msg[i] == 0, "padding byte %zu is %02x", i, msg[i]);
		off += (nta_len + 3) & ~(size_t)3;
	}
	return n;
}

static bool has_attr(const uint8_t *msg, size_t len, uint16_t id)
{
	uint16_t ids[64];
	size_t n = attr_ids(msg, len, ids, 64);

	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* The first attribute ID of an encoded message: its value and nta_len - 4. */
static bool find_attr(const uint8_t *msg, size_t len, uint16_t id, const uint8_t **v, size_t *vlen)
{
	for (size_t off = 8; off + 4 <= len;) {
		size_t nta_len = (size_t)(msg[off] << 8 | msg[off + 1]);

		if (nta_len < 4)
			return false;
		if ((uint16_t)(msg[off + 2] << 8 | msg[off + 3]) == id) {
			*v = msg + off + 4;
			*vlen = nta_len - 4;
			return true;
		}
		off += (nta_len + 3) & ~(size_t)3;
	}
	return false;
}

/* Encode, check the size function, the framing and the ids, decode; returns the length. */
static int roundtrip(const struct flow_full *in, unsigned opts, struct flow_full *out,
		     uint8_t *buf, unsigned *omitted)
{
	struct wire_hdr h = { .type = WIRE_T_CT_UPD, .flags = WIRE_F_HELLO, .seq = 77 };
	uint16_t ids[64];
	enum wire_reason r;
	int n;

	n = wire_ct_encode(buf, WIRE_CT_MAX_LEN, &h, in, opts, omitted);
	ck_assert_msg(n > 0, "encode failed: %d", n);
	ck_assert_int_eq(wire_ct_size(in, opts), n);
	ck_assert_int_le(n, WIRE_CT_MAX_LEN);
	for (size_t i = 0, k = attr_ids(buf, (size_t)n, ids, 64); i < k; i++)
		ck_assert_msg(ids[i] < NTA_MAX, "emitted attribute id %u", ids[i]);
	memset(out, 0xa5, sizeof(*out));        /* the decoder must clear what it does not set */
	r = wire_ct_decode(buf, (size_t)n, out);
	ck_assert_msg(r == WIRE_OK, "decode of our own encoding failed: %s\n%s", wire_reason_name(r),
		      hexdump(buf, (size_t)n, (size_t)-1));
	return n;
}

/* Round trip with every option on; the result must equal the input. */
static void assert_roundtrip(const struct flow_full *in)
{
	static struct flow_full out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	unsigned omitted;

	roundtrip(in, ALL_OPTS, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, 0);
	assert_flow_eq(&out, in);
}

/* ---- golden byte vectors (protocol.md §2.2, §2.4, §2.7) ------------------------------ */

START_TEST(golden_capture_encodes_byte_for_byte)
{
	struct wire_hdr h = { .type = WIRE_T_CT_NEW, .seq = 0x6b027a96 };
	struct flow_full ff;
	uint8_t buf[256];
	unsigned omitted = 99;
	int n;

	capture_flow(&ff);
	n = wire_ct_encode(buf, sizeof(buf), &h, &ff, WIRE_ENC_TIMEOUT, &omitted);
	ck_assert_int_eq(n, 68);
	ck_assert_uint_eq(omitted, 0);
	assert_hex(buf, (size_t)n, ours_hex);
	/* Values other than zero are sent, 16 bytes more, as 1.4.7 sends them. */
	ff.flow.attrs |= FLOW_A_SYNPROXY | FLOW_A_SYNPROXY_EXT;
	ff.ext.synproxy[2] = 1;
	n = wire_ct_encode(buf, sizeof(buf), &h, &ff, WIRE_ENC_TIMEOUT, &omitted);
	ck_assert_int_eq(n, 84);
	assert_hex(buf + 68, 16, "0010 001f 00000000 00000000 00000001");
}
END_TEST

START_TEST(golden_capture_decodes)
{
	struct flow_full want, got;
	uint8_t msg[128];
	size_t n = unhex(msg, sizeof(msg), capture_hex);
	struct wire_split s;
	struct wire_msg m;

	capture_flow(&want);
	want.flow.attrs |= FLOW_A_SYNPROXY;     /* 1.4.7 sends the zeros */
	wire_split_init(&s, msg, n, false);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_MSG);
	assert_reason(m.reason, WIRE_OK);
	ck_assert_int_eq(m.kind, WIRE_K_DATA);
	ck_assert_uint_eq(m.hdr.version, 1);
	ck_assert_uint_eq(m.hdr.type, WIRE_T_CT_NEW);
	ck_assert_uint_eq(m.hdr.len, 84);
	ck_assert_uint_eq(m.hdr.seq, 0x6b027a96);
	assert_reason(wire_ct_decode(m.data, m.len, &got), WIRE_OK);
	assert_flow_eq(&got, &want);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_END);
}
END_TEST

/* UDP 10.0.0.1:5000 -> 10.0.0.2:53 SNATed to 192.168.1.1:4000 (protocol.md §2.7). */
static void udp_snat_flow(struct flow_full *ff)
{
	flow_init(ff, AF_INET, IPPROTO_UDP, "10.0.0.1", "10.0.0.2");
	flow_ports(ff, 5000, 53);
	ff->flow.status = IPS_CONFIRMED | IPS_SRC_NAT | IPS_SRC_NAT_DONE | IPS_DST_NAT_DONE;
	ff->flow.timeout = 30;
	ff->flow.attrs |= FLOW_A_STATUS | FLOW_A_TIMEOUT | FLOW_A_MARK | FLOW_A_SNAT | FLOW_A_SPAT;
	ck_assert_int_eq(inet_pton(AF_INET, "192.168.1.1", &ff->ext.snat.v4), 1);
	ff->ext.spat = htons(4000);
}

START_TEST(golden_udp_snat_address_raw_port_little_endian)
{
	struct wire_hdr h = { .type = WIRE_T_CT_NEW, .seq = 2 };
	struct flow_full ff, got;
	uint8_t buf[256];
	int n;

	udp_snat_flow(&ff);
	n = wire_ct_encode(buf, sizeof(buf), &h, &ff, WIRE_ENC_TIMEOUT, NULL);
	assert_hex(buf, (size_t)n,
		   "10 00 004c 00000002"
		   "000c 0000 0a000001 0a000002"
		   "0008 0005 00000198"
		   "0005 0002 11 000000"
		   "0008 0003 1388 0035"
		   "0008 0006 0000001e"
		   "0008 0007 00000000"
		   "0008 000c c0a80101"         /* SNAT_IPV4, raw */
		   "0006 000e a00f 0000");      /* SPAT_PORT 4000, little-endian */
	assert_reason(wire_ct_decode(buf, (size_t)n, &got), WIRE_OK);
	assert_flow_eq(&got, &ff);
	ck_assert_uint_eq(ntohs(got.ext.spat), 4000);
}
END_TEST

START_TEST(golden_zone_5_is_proper_big_endian)
{
	struct wire_hdr h = { .type = WIRE_T_CT_NEW, .seq = 0x6b027a96 };
	struct flow_full ff, got;
	uint8_t buf[256], want[256];
	size_t wlen = unhex(want, sizeof(want), ours_hex);
	int n;

	/* Our form of the capture, 8 bytes longer, with the zone last. */
	want[3] = 0x4c;
	wlen += unhex(want + wlen, sizeof(want) - wlen, "0006 0020 0005 0000");
	capture_flow(&ff);
	ff.flow.orig.zone = 5;
	ff.flow.attrs |= FLOW_A_ZONE;
	n = wire_ct_encode(buf, sizeof(buf), &h, &ff, WIRE_ENC_TIMEOUT, NULL);
	assert_bytes(buf, (size_t)n, want, wlen);
	assert_reason(wire_ct_decode(buf, (size_t)n, &got), WIRE_OK);
	ck_assert_uint_eq(got.flow.orig.zone, 5);
	assert_flow_eq(&got, &ff);
}
END_TEST

START_TEST(golden_icmp_id_is_little_endian)
{
	struct wire_hdr h = { .type = WIRE_T_CT_NEW, .seq = 3 };
	struct flow_full ff, got;
	uint8_t buf[256];
	int n;

	flow_init(&ff, AF_INET, IPPROTO_ICMP, "10.0.0.1", "10.0.0.2");
	ff.flow.orig.l4.icmp.type = 8;
	ff.flow.orig.l4.icmp.code = 0;
	ff.flow.orig.l4.icmp.id = htons(0x1234);
	ff.flow.attrs |= FLOW_A_ICMP;
	n = wire_ct_encode(buf, sizeof(buf), &h, &ff, 0, NULL);
	assert_hex(buf, (size_t)n,
		   "10 00 0034 00000003"
		   "000c 0000 0a000001 0a000002"
		   "0005 0002 01 000000"
		   "0005 0016 08 000000"
		   "0005 0017 00 000000"
		   "0006 0018 3412 0000");
	assert_reason(wire_ct_decode(buf, (size_t)n, &got), WIRE_OK);
	ck_assert_uint_eq(ntohs(got.flow.orig.l4.icmp.id), 0x1234);
	assert_flow_eq(&got, &ff);
}
END_TEST

START_TEST(golden_resync_request)
{
	uint8_t buf[16];

	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), WIRE_F_RESYNC, 0xdeadbeef, 0, 0), 16);
	assert_hex(buf, 16, "1a 02 0010 deadbeef 00000000 00000000");
}
END_TEST

START_TEST(golden_control_flag_bytes)
{
	uint8_t buf[16];

	/* The first keepalive of a starting FTFW node: HELLO|ALIVE (protocol.md §3.6). */
	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), WIRE_F_HELLO, 5, 0, 0), 8);
	assert_hex(buf, 8, "1a 30 0008 00000005");
	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), 0, 6, 0, 0), 8);
	assert_hex(buf, 8, "1a 10 0008 00000006");
	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), WIRE_F_ACK | WIRE_F_HELLO | WIRE_F_HELLO_BACK,
					 7, 100, 100), 16);
	assert_hex(buf, 16, "1a 68 0010 00000007 00000064 00000064");
	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), WIRE_F_ACK | WIRE_F_HELLO_BACK, 8, 1, 2), 16);
	assert_hex(buf, 16, "1a 48 0010 00000008 00000001 00000002");
	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), WIRE_F_ACK, 9, 1, 300), 16);
	assert_hex(buf, 16, "1a 08 0010 00000009 00000001 0000012c");
	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), WIRE_F_NACK, 10, 1002, 1005), 16);
	assert_hex(buf, 16, "1a 04 0010 0000000a 000003ea 000003ed");
}
END_TEST

START_TEST(golden_control_messages_decode)
{
	static const struct {
		const char *hex;
		enum wire_kind kind;
		uint8_t flags;
		uint32_t from, to;
	} v[] = {
		{ "1a 30 0008 00000005", WIRE_K_ALIVE, 0x30, 0, 0 },
		{ "1a 10 0008 00000006", WIRE_K_ALIVE, 0x10, 0, 0 },
		{ "1a 68 0010 00000007 00000064 00000064", WIRE_K_ACK, 0x68, 100, 100 },
		{ "1a 48 0010 00000008 00000001 00000002", WIRE_K_ACK, 0x48, 1, 2 },
		{ "1a 04 0010 0000000a 000003ea 000003ed", WIRE_K_NACK, 0x04, 1002, 1005 },
		{ "1a 02 0010 deadbeef 00000000 00000000", WIRE_K_RESYNC, 0x02, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t buf[16];
		size_t n = unhex(buf, sizeof(buf), v[i].hex);
		struct wire_split s;
		struct wire_msg m;

		wire_split_init(&s, buf, n, false);
		ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_MSG);
		ck_assert_msg(m.kind == v[i].kind, "%s: expected kind %s, got %s", v[i].hex,
			      wire_kind_name(v[i].kind), wire_kind_name(m.kind));
		ck_assert_uint_eq(m.hdr.type, WIRE_T_CTL);
		ck_assert_uint_eq(m.hdr.flags, v[i].flags);
		ck_assert_uint_eq(m.hdr.from, v[i].from);
		ck_assert_uint_eq(m.hdr.to, v[i].to);
		ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_END);
	}
}
END_TEST

START_TEST(ctl_encode_rejects_bad_flags_and_small_buffers)
{
	uint8_t buf[16];

	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), 0x01, 1, 0, 0), -EINVAL);
	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), 0x80, 1, 0, 0), -EINVAL);
	ck_assert_int_eq(wire_ctl_encode(buf, sizeof(buf), WIRE_F_ACK | WIRE_F_NACK, 1, 0, 0), -EINVAL);
	for (size_t cap = 0; cap <= 16; cap++) {
		uint8_t big[32];

		memset(big, 0xa5, sizeof(big));
		ck_assert_int_eq(wire_ctl_encode(big, cap, WIRE_F_NACK, 1, 2, 3), cap < 16 ? -ENOSPC : 16);
		for (size_t i = cap < 16 ? 0 : 16; i < sizeof(big); i++)
			ck_assert_msg(big[i] == 0xa5, "cap %zu: byte %zu written", cap, i);
		memset(big, 0xa5, sizeof(big));
		ck_assert_int_eq(wire_ctl_encode(big, cap, 0, 1, 0, 0), cap < 8 ? -ENOSPC : 8);
		for (size_t i = cap < 8 ? 0 : 8; i < sizeof(big); i++)
			ck_assert_msg(big[i] == 0xa5, "cap %zu: byte %zu written", cap, i);
	}
}
END_TEST

/* ---- classification (protocol.md §2.4) ------------------------------------------------ */

START_TEST(classify_priority_and_bad_headers)
{
	static const struct {
		uint8_t type, flags;
		enum wire_kind kind;
	} v[] = {
		{ WIRE_T_CT_NEW, 0, WIRE_K_DATA },
		{ WIRE_T_EXP_DEL, WIRE_F_HELLO | WIRE_F_HELLO_BACK, WIRE_K_DATA },
		{ WIRE_T_CT_UPD, WIRE_F_ACK, WIRE_K_BAD },       /* a data type with a control flag */
		{ WIRE_T_CT_UPD, 0x01, WIRE_K_BAD },
		{ 6, 0, WIRE_K_BAD },
		{ 9, 0, WIRE_K_BAD },
		{ 11, WIRE_F_ACK, WIRE_K_BAD },
		{ 15, 0, WIRE_K_BAD },
		{ WIRE_T_CTL, WIRE_F_ACK | WIRE_F_NACK | WIRE_F_RESYNC | WIRE_F_ALIVE, WIRE_K_ACK },
		{ WIRE_T_CTL, WIRE_F_NACK | WIRE_F_RESYNC | WIRE_F_ALIVE, WIRE_K_NACK },
		{ WIRE_T_CTL, WIRE_F_RESYNC | WIRE_F_ALIVE, WIRE_K_RESYNC },
		{ WIRE_T_CTL, WIRE_F_ALIVE | WIRE_F_HELLO, WIRE_K_ALIVE },
		{ WIRE_T_CTL, WIRE_F_HELLO, WIRE_K_BAD },
		{ WIRE_T_CTL, 0, WIRE_K_BAD },
		{ WIRE_T_CTL, 0x01, WIRE_K_BAD },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct wire_hdr h = { .version = 1, .type = v[i].type, .flags = v[i].flags };
		enum wire_kind k = wire_classify(&h);

		ck_assert_msg(k == v[i].kind, "type %u flags %#x: expected %s, got %s", v[i].type,
			      v[i].flags, wire_kind_name(v[i].kind), wire_kind_name(k));
	}
}
END_TEST

START_TEST(header_decode_reads_range_only_for_16_byte_forms)
{
	uint8_t buf[16];
	struct wire_hdr h;

	unhex(buf, sizeof(buf), "1a 10 0010 00000001 00000002 00000003");
	assert_reason(wire_hdr_decode(buf, 16, &h), WIRE_OK);
	ck_assert_uint_eq(h.from, 0);
	ck_assert_uint_eq(h.to, 0);
	unhex(buf, sizeof(buf), "1a 08 0010 00000001 00000002 00000003");
	assert_reason(wire_hdr_decode(buf, 16, &h), WIRE_OK);
	ck_assert_uint_eq(h.from, 2);
	ck_assert_uint_eq(h.to, 3);
	assert_reason(wire_hdr_decode(buf, 12, &h), WIRE_OK);
	ck_assert_uint_eq(h.from, 0);
	assert_reason(wire_hdr_decode(buf, 7, &h), WIRE_R_TRUNCATED);
	/* The version is a nibble: 0x2a is version 2, type 10. */
	buf[0] = 0x2a;
	assert_reason(wire_hdr_decode(buf, 16, &h), WIRE_OK);
	ck_assert_uint_eq(h.version, 2);
	ck_assert_uint_eq(h.type, 10);
}
END_TEST

/* ---- round trips (protocol.md §2.7) ---------------------------------------------------- */

static const struct {
	const char *name;
	int family;
	uint8_t proto;
} protos[] = {
	{ "tcp4", AF_INET, IPPROTO_TCP }, { "tcp6", AF_INET6, IPPROTO_TCP },
	{ "udp4", AF_INET, IPPROTO_UDP }, { "udp6", AF_INET6, IPPROTO_UDP },
	{ "udplite4", AF_INET, IPPROTO_UDPLITE }, { "udplite6", AF_INET6, IPPROTO_UDPLITE },
	{ "icmp", AF_INET, IPPROTO_ICMP }, { "icmpv6", AF_INET6, IPPROTO_ICMPV6 },
	{ "sctp4", AF_INET, IPPROTO_SCTP }, { "sctp6", AF_INET6, IPPROTO_SCTP },
	{ "dccp4", AF_INET, IPPROTO_DCCP }, { "dccp6", AF_INET6, IPPROTO_DCCP },
	{ "gre4", AF_INET, IPPROTO_GRE }, { "gre6", AF_INET6, IPPROTO_GRE },
};
#define NPROTOS ((int)(sizeof(protos) / sizeof(protos[0])))

/* A flow of protos[i] with every field of its protocol set, and the common ones. */
static void proto_flow(struct flow_full *ff, int i)
{
	bool v4 = protos[i].family == AF_INET;

	flow_init(ff, protos[i].family, protos[i].proto, v4 ? "192.0.2.1" : "2001:db8::1",
		  v4 ? "198.51.100.7" : "2001:db8:ffff::7");
	ff->flow.status = IPS_CONFIRMED | IPS_SEEN_REPLY;
	ff->flow.timeout = 431999;
	ff->flow.mark = 0xdeadbeef;
	ff->flow.orig.zone = 65535;
	ff->flow.attrs |= FLOW_A_STATUS | FLOW_A_TIMEOUT | FLOW_A_MARK | FLOW_A_ZONE;
	switch (protos[i].proto) {
	case IPPROTO_TCP:
		flow_ports(ff, 40000, 443);
		ff->flow.proto_state = TCP_CONNTRACK_TIME_WAIT;
		ff->flow.wscale_orig = 7;
		ff->flow.wscale_repl = 14;
		ff->flow.attrs |= FLOW_A_PROTO_STATE | FLOW_A_WSCALE;
		break;
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
		flow_ports(ff, 1, 65535);
		break;
	case IPPROTO_SCTP:
		flow_ports(ff, 2905, 2905);
		ff->flow.proto_state = 3;
		ff->ext.sctp_vtag_orig = 0x01020304;
		ff->ext.sctp_vtag_repl = 0xfffefdfc;
		ff->flow.attrs |= FLOW_A_PROTO_STATE | FLOW_A_SCTP_VTAGS;
		break;
	case IPPROTO_DCCP:
		flow_ports(ff, 5001, 5004);
		ff->flow.proto_state = 4;
		ff->flow.dccp_role = 1;
		ff->flow.attrs |= FLOW_A_PROTO_STATE | FLOW_A_DCCP_ROLE;
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		ff->flow.orig.l4.icmp.type = v4 ? 8 : 128;
		ff->flow.orig.l4.icmp.code = 0;
		ff->flow.orig.l4.icmp.id = htons(0xbeef);
		ff->flow.attrs |= FLOW_A_ICMP;
		break;
	}
}

START_TEST(roundtrip_every_protocol)
{
	struct flow_full ff;

	proto_flow(&ff, _i);
	assert_roundtrip(&ff);
}
END_TEST

/* Which attributes 1.4.7 emits per protocol (protocol.md §2.7): PORT only for TCP, UDP, SCTP, DCCP. */
START_TEST(port_attribute_per_protocol)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	unsigned omitted;
	uint8_t p = protos[_i].proto;
	bool ports = p == IPPROTO_TCP || p == IPPROTO_UDP || p == IPPROTO_SCTP || p == IPPROTO_DCCP;
	int n;

	proto_flow(&ff, _i);
	n = roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, &omitted);
	ck_assert_msg(has_attr(buf, (size_t)n, NTA_PORT) == ports, "%s: PORT %s expected", protos[_i].name,
		      ports ? "" : "not");
	ck_assert_uint_eq(omitted, p == IPPROTO_UDPLITE ? WIRE_OMIT_PORTS : 0);
	ck_assert(has_attr(buf, (size_t)n, NTA_ICMP_ID) == (p == IPPROTO_ICMP || p == IPPROTO_ICMPV6));
	ck_assert(has_attr(buf, (size_t)n, NTA_SCTP_VTAG_ORIG) == (p == IPPROTO_SCTP));
	ck_assert(has_attr(buf, (size_t)n, NTA_DCCP_ROLE) == (p == IPPROTO_DCCP));
	ck_assert(has_attr(buf, (size_t)n, NTA_TCP_STATE) == (p == IPPROTO_TCP));
	ck_assert(has_attr(buf, (size_t)n, NTA_IPV4) == (protos[_i].family == AF_INET));
	ck_assert(has_attr(buf, (size_t)n, NTA_IPV6) == (protos[_i].family == AF_INET6));
}
END_TEST

/* TCP with every attribute there is, in the family of `family`. */
static void full_flow(struct flow_full *ff, int family)
{
	bool v4 = family == AF_INET;
	struct flow_tuple *m = &ff->ext.master;

	proto_flow(ff, v4 ? 0 : 1);
	ff->flow.attrs |= FLOW_A_MASTER | FLOW_A_SNAT | FLOW_A_DNAT | FLOW_A_SPAT | FLOW_A_DPAT |
			  FLOW_A_NAT_SEQ | FLOW_A_HELPER | FLOW_A_LABELS | FLOW_A_SYNPROXY |
			  FLOW_A_SYNPROXY_EXT;
	m->family = (uint8_t)family;
	m->l4proto = IPPROTO_TCP;
	ck_assert_int_eq(inet_pton(family, v4 ? "192.0.2.1" : "2001:db8::1", m->src.bytes), 1);
	ck_assert_int_eq(inet_pton(family, v4 ? "198.51.100.7" : "2001:db8:ffff::7", m->dst.bytes), 1);
	m->l4.port.sport = htons(40001);
	m->l4.port.dport = htons(21);
	ck_assert_int_eq(inet_pton(family, v4 ? "203.0.113.9" : "2001:db8:9::9", ff->ext.snat.bytes), 1);
	ck_assert_int_eq(inet_pton(family, v4 ? "10.1.2.3" : "fd00::1:2:3", ff->ext.dnat.bytes), 1);
	ff->ext.spat = htons(61000);
	ff->ext.dpat = htons(8443);
	for (int i = 0; i < 6; i++)
		ff->ext.nat_seq[i] = 0x11111111u * (uint32_t)(i + 1);
	ff->ext.synproxy[0] = 1;
	ff->ext.synproxy[1] = 0x80000000u;
	ff->ext.synproxy[2] = 0xffffffffu;
	strcpy(ff->ext.helper, "ftp");
	ff->labels.words = 4;
	ff->labels.w[0] = 1;
	ff->labels.w[3] = 0x80000000u;
}

START_TEST(roundtrip_every_attribute_ipv4)
{
	struct flow_full ff;

	full_flow(&ff, AF_INET);
	assert_roundtrip(&ff);
}
END_TEST

START_TEST(roundtrip_every_attribute_ipv6)
{
	struct flow_full ff;

	full_flow(&ff, AF_INET6);
	assert_roundtrip(&ff);
}
END_TEST

START_TEST(emission_order_is_147s)
{
	static const uint16_t v4[] = {
		NTA_IPV4, NTA_STATUS, NTA_L4PROTO, NTA_PORT, NTA_TCP_STATE, NTA_TCP_WSCALE_ORIG,
		NTA_TCP_WSCALE_REPL, NTA_TIMEOUT, NTA_MARK, NTA_MASTER_IPV4, NTA_MASTER_L4PROTO,
		NTA_MASTER_PORT, NTA_SNAT_IPV4, NTA_DNAT_IPV4, NTA_SPAT_PORT, NTA_DPAT_PORT,
		NTA_NAT_SEQ_ADJ, NTA_HELPER_NAME, NTA_LABELS, NTA_SYNPROXY, NTA_ZONE,
	};
	static const uint16_t v6[] = {
		NTA_IPV6, NTA_STATUS, NTA_L4PROTO, NTA_PORT, NTA_TCP_STATE, NTA_TCP_WSCALE_ORIG,
		NTA_TCP_WSCALE_REPL, NTA_TIMEOUT, NTA_MARK, NTA_MASTER_IPV6, NTA_MASTER_L4PROTO,
		NTA_MASTER_PORT, NTA_SNAT_IPV6, NTA_DNAT_IPV6, NTA_SPAT_PORT, NTA_DPAT_PORT,
		NTA_NAT_SEQ_ADJ, NTA_HELPER_NAME, NTA_LABELS, NTA_SYNPROXY, NTA_ZONE,
	};
	static const uint16_t sctp[] = {
		NTA_IPV4, NTA_STATUS, NTA_L4PROTO, NTA_PORT, NTA_SCTP_STATE, NTA_SCTP_VTAG_ORIG,
		NTA_SCTP_VTAG_REPL, NTA_TIMEOUT, NTA_MARK, NTA_ZONE,
	};
	static const uint16_t dccp[] = {
		NTA_IPV4, NTA_STATUS, NTA_L4PROTO, NTA_PORT, NTA_DCCP_STATE, NTA_DCCP_ROLE,
		NTA_TIMEOUT, NTA_MARK, NTA_ZONE,
	};
	static const uint16_t icmp[] = {
		NTA_IPV4, NTA_STATUS, NTA_L4PROTO, NTA_ICMP_TYPE, NTA_ICMP_CODE, NTA_ICMP_ID,
		NTA_TIMEOUT, NTA_MARK, NTA_ZONE,
	};
	static const struct {
		const uint16_t *ids;
		size_t n;
		int family, proto_index;
	} cases[] = {
		{ v4, sizeof(v4) / 2, AF_INET, -1 }, { v6, sizeof(v6) / 2, AF_INET6, -1 },
		{ sctp, sizeof(sctp) / 2, 0, 8 }, { dccp, sizeof(dccp) / 2, 0, 10 },
		{ icmp, sizeof(icmp) / 2, 0, 6 },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct flow_full ff, out;
		uint8_t buf[WIRE_CT_MAX_LEN];
		uint16_t ids[64];
		size_t n;

		if (cases[c].proto_index < 0)
			full_flow(&ff, cases[c].family);
		else
			proto_flow(&ff, cases[c].proto_index);
		n = attr_ids(buf, (size_t)roundtrip(&ff, ALL_OPTS, &out, buf, NULL), ids, 64);
		for (size_t i = 0; i < n && i < cases[c].n; i++)
			ck_assert_msg(ids[i] == cases[c].ids[i], "case %zu: attribute %zu is %s, expected %s",
				      c, i, wire_ct_attr_name(ids[i]), wire_ct_attr_name(cases[c].ids[i]));
		ck_assert_uint_eq(n, cases[c].n);
	}
}
END_TEST

START_TEST(roundtrip_nat_ipv4_with_ports)
{
	struct flow_full ff;

	udp_snat_flow(&ff);
	ff.flow.attrs |= FLOW_A_DNAT | FLOW_A_DPAT;
	ck_assert_int_eq(inet_pton(AF_INET, "10.9.8.7", &ff.ext.dnat.v4), 1);
	ff.ext.dpat = htons(8080);
	assert_roundtrip(&ff);
}
END_TEST

START_TEST(roundtrip_nat_ipv6_with_ports)
{
	struct flow_full ff;

	proto_flow(&ff, 3);     /* udp6 */
	ff.flow.attrs |= FLOW_A_SNAT | FLOW_A_SPAT | FLOW_A_DNAT | FLOW_A_DPAT;
	ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8:5::5", ff.ext.snat.bytes), 1);
	ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8:6::6", ff.ext.dnat.bytes), 1);
	ff.ext.spat = htons(1);
	ff.ext.dpat = htons(65535);
	assert_roundtrip(&ff);
}
END_TEST

START_TEST(roundtrip_master_tuples)
{
	struct flow_full ff;

	/* An FTP data flow (related) with its IPv4 control flow as master. */
	proto_flow(&ff, 0);
	ff.flow.attrs |= FLOW_A_MASTER | FLOW_A_HELPER;
	ff.ext.master = ff.flow.orig;
	ff.ext.master.zone = 0;
	ff.ext.master.l4.port.dport = htons(21);
	strcpy(ff.ext.helper, "ftp");
	assert_roundtrip(&ff);
	/* IPv6, UDP master (SIP). */
	proto_flow(&ff, 3);
	ff.flow.attrs |= FLOW_A_MASTER;
	ff.ext.master = ff.flow.orig;
	ff.ext.master.zone = 0;
	ff.ext.master.l4.port.dport = htons(5060);
	assert_roundtrip(&ff);
	/* A master without ports (GRE): no MASTER_PORT. */
	proto_flow(&ff, 12);
	ff.flow.attrs |= FLOW_A_MASTER;
	ff.ext.master = ff.flow.orig;
	ff.ext.master.zone = 0;
	assert_roundtrip(&ff);
}
END_TEST

START_TEST(master_port_of_udplite_master_needs_the_option)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	unsigned omitted;
	int n;

	proto_flow(&ff, 0);
	ff.flow.attrs |= FLOW_A_MASTER;
	ff.ext.master = ff.flow.orig;
	ff.ext.master.zone = 0;
	ff.ext.master.l4proto = IPPROTO_UDPLITE;
	n = roundtrip(&ff, WIRE_ENC_TIMEOUT | WIRE_ENC_WSCALE, &out, buf, &omitted);
	ck_assert(!has_attr(buf, (size_t)n, NTA_MASTER_PORT));
	ck_assert_uint_eq(omitted, WIRE_OMIT_PORTS);
	ck_assert_uint_eq(out.ext.master.l4.raw, 0);
	n = roundtrip(&ff, ALL_OPTS, &out, buf, &omitted);
	ck_assert(has_attr(buf, (size_t)n, NTA_MASTER_PORT));
	ck_assert_uint_eq(omitted, 0);
	assert_flow_eq(&out, &ff);
}
END_TEST

START_TEST(roundtrip_labels_1_4_256_words)
{
	static const unsigned words[] = { 1, 4, 256 };
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	unsigned w = words[_i];
	int n;

	proto_flow(&ff, 0);
	ff.flow.attrs |= FLOW_A_LABELS;
	ff.labels.words = (uint16_t)w;
	for (unsigned i = 0; i < w; i++)
		ff.labels.w[i] = 0x01000001u * (i + 1);
	n = roundtrip(&ff, ALL_OPTS, &out, buf, NULL);
	ck_assert_int_eq(n, 92 + 4 + 4 * (int)w);     /* the TCP flow, plus LABELS */
	assert_flow_eq(&out, &ff);
	ck_assert_uint_eq(out.labels.words, w);
	for (unsigned i = w; i < FLOW_LABEL_WORDS_MAX; i++)
		ck_assert_uint_eq(out.labels.w[i], 0);
}
END_TEST

START_TEST(labels_word_count_follows_the_highest_bit)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	struct wire_hdr h = { .type = WIRE_T_CT_NEW };
	int n;

	/* 4 words held, only bit 33 set: 2 words on the wire (protocol.md §2.7). */
	proto_flow(&ff, 2);
	ff.flow.attrs |= FLOW_A_LABELS;
	ff.labels.words = 4;
	ff.labels.w[1] = 2;
	n = roundtrip(&ff, 0, &out, buf, NULL);
	ck_assert_uint_eq(out.labels.words, 2);
	ck_assert_uint_eq(out.labels.w[1], 2);
	ck_assert(has_attr(buf, (size_t)n, NTA_LABELS));
	/* No bit set: no attribute at all. */
	ff.labels.w[1] = 0;
	n = wire_ct_encode(buf, sizeof(buf), &h, &ff, 0, NULL);
	ck_assert(!has_attr(buf, (size_t)n, NTA_LABELS));
	/* Words past 256 are never sent. */
	ff.labels.words = 300;
	ff.labels.w[255] = 1;
	n = roundtrip(&ff, 0, &out, buf, NULL);
	ck_assert_uint_eq(out.labels.words, 256);
}
END_TEST

/*
 * Labels removed from a state: one all-zero word, which a merging peer
 * (1.4.7) takes as "no label"; we decode it as no labels, and gone.
 */
START_TEST(labels_gone_sends_one_zero_word)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	const uint8_t *v;
	size_t len;
	int n;

	proto_flow(&ff, 0);
	n = wire_ct_size(&ff, 0);
	ff.flow.attrs |= FLOW_A_LABELS_GONE;
	ck_assert_int_eq(roundtrip(&ff, 0, &out, buf, NULL), n + 8);
	n += 8;
	ck_assert(find_attr(buf, (size_t)n, NTA_LABELS, &v, &len));
	ck_assert_uint_eq(len, 4);
	ck_assert_uint_eq(v[0] | v[1] | v[2] | v[3], 0);
	ck_assert(!(out.flow.attrs & FLOW_A_LABELS));
	ck_assert(out.flow.attrs & FLOW_A_LABELS_GONE);
	ck_assert_uint_eq(out.labels.words, 0);
	/* Labels back: they are sent, not the zero word. */
	ff.flow.attrs |= FLOW_A_LABELS;
	ff.labels.words = 1;
	ff.labels.w[0] = 8;
	n = roundtrip(&ff, 0, &out, buf, NULL);
	ck_assert(find_attr(buf, (size_t)n, NTA_LABELS, &v, &len));
	ck_assert_uint_eq(len, 4);
	ck_assert_uint_eq(v[3], 8);
	ck_assert(!(out.flow.attrs & FLOW_A_LABELS_GONE));
}
END_TEST

START_TEST(synproxy_zeros_and_values)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	int n;

	/* Zeros (what the kernel reports for most states) are not sent. */
	capture_flow(&ff);
	ff.flow.attrs |= FLOW_A_SYNPROXY;
	n = roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, NULL);
	ck_assert_int_eq(n, 68);
	ck_assert(!has_attr(buf, (size_t)n, NTA_SYNPROXY));
	ck_assert_uint_eq(out.flow.attrs & (FLOW_A_SYNPROXY | FLOW_A_SYNPROXY_EXT), 0);
	/* Values: its, isn, tsoff in that order. */
	ff.flow.attrs |= FLOW_A_SYNPROXY_EXT;
	ff.ext.synproxy[0] = 0x0a0b0c0d;
	ff.ext.synproxy[1] = 2;
	ff.ext.synproxy[2] = 3;
	n = roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, NULL);
	assert_hex(buf + 68, 16, "0010 001f 0a0b0c0d 00000002 00000003");
	assert_flow_eq(&out, &ff);
	/* None: no attribute. */
	ff.flow.attrs &= ~(FLOW_A_SYNPROXY | FLOW_A_SYNPROXY_EXT);
	memset(ff.ext.synproxy, 0, sizeof(ff.ext.synproxy));
	n = roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, NULL);
	ck_assert_int_eq(n, 68);
	assert_flow_eq(&out, &ff);
}
END_TEST

START_TEST(key_only_for_deletes)
{
	struct wire_hdr h = { .type = WIRE_T_CT_DEL, .seq = 9 };
	struct flow_full ff, got;
	uint8_t buf[256];
	int n;

	/* The capture's state, in zone 5: addresses, protocol, ports, zone; no state, timeout, mark. */
	capture_flow(&ff);
	ff.flow.orig.zone = 5;
	ff.flow.attrs |= FLOW_A_ZONE;
	n = wire_ct_encode(buf, sizeof(buf), &h, &ff, WIRE_ENC_TIMEOUT | WIRE_ENC_KEY_ONLY, NULL);
	assert_hex(buf, (size_t)n, "12 00 002c 00000009 " TCP_KEY " 0006 0020 0005 0000");
	ck_assert_int_eq(wire_ct_size(&ff, WIRE_ENC_TIMEOUT | WIRE_ENC_KEY_ONLY), n);
	assert_reason(wire_ct_decode(buf, (size_t)n, &got), WIRE_OK);
	ck_assert(flow_tuple_equal(&got.flow.orig, &ff.flow.orig));
	/* ICMP: its id, type and code are the key. */
	flow_init(&ff, AF_INET, IPPROTO_ICMP, "10.0.0.1", "10.0.0.2");
	ff.flow.orig.l4.icmp.type = 8;
	ff.flow.orig.l4.icmp.id = htons(0x1234);
	ff.flow.attrs |= FLOW_A_ICMP | FLOW_A_STATUS | FLOW_A_TIMEOUT;
	n = wire_ct_encode(buf, sizeof(buf), &h, &ff, WIRE_ENC_TIMEOUT | WIRE_ENC_KEY_ONLY, NULL);
	assert_reason(wire_ct_decode(buf, (size_t)n, &got), WIRE_OK);
	ck_assert(flow_tuple_equal(&got.flow.orig, &ff.flow.orig));
	ck_assert_uint_eq(got.flow.attrs & (FLOW_A_STATUS | FLOW_A_TIMEOUT), 0);
}
END_TEST

START_TEST(roundtrip_zone_mark_status)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	int n;

	capture_flow(&ff);
	ff.flow.status = 0xffffffffu;
	ff.flow.mark = 0;
	ff.flow.orig.zone = 0;
	ff.flow.attrs |= FLOW_A_ZONE;
	assert_roundtrip(&ff);
	/* Absent status, mark and zone are not sent and not invented. */
	ff.flow.attrs &= ~(FLOW_A_STATUS | FLOW_A_MARK | FLOW_A_ZONE);
	ff.flow.status = 0;
	n = roundtrip(&ff, ALL_OPTS, &out, buf, NULL);
	ck_assert(!has_attr(buf, (size_t)n, NTA_STATUS));
	ck_assert(!has_attr(buf, (size_t)n, NTA_MARK));
	ck_assert(!has_attr(buf, (size_t)n, NTA_ZONE));
	assert_flow_eq(&out, &ff);
}
END_TEST

START_TEST(timeout_only_when_asked)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	int n;

	capture_flow(&ff);
	n = roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, NULL);
	ck_assert(has_attr(buf, (size_t)n, NTA_TIMEOUT));
	ck_assert_uint_eq(out.flow.timeout, 300);
	ck_assert(out.flow.attrs & FLOW_A_TIMEOUT);
	/* CommitTimeout set on the sender: no TIMEOUT, and the receiver has none. */
	n = roundtrip(&ff, 0, &out, buf, NULL);
	ck_assert_int_eq(n, 60);
	ck_assert(!has_attr(buf, (size_t)n, NTA_TIMEOUT));
	ck_assert_uint_eq(out.flow.timeout, 0);
	ck_assert(!(out.flow.attrs & FLOW_A_TIMEOUT));
}
END_TEST

START_TEST(wscale_only_when_asked)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	int n;

	proto_flow(&ff, 0);
	n = roundtrip(&ff, WIRE_ENC_WSCALE, &out, buf, NULL);
	ck_assert(has_attr(buf, (size_t)n, NTA_TCP_WSCALE_ORIG));
	ck_assert(has_attr(buf, (size_t)n, NTA_TCP_WSCALE_REPL));
	ck_assert_uint_eq(out.flow.wscale_orig, 7);
	ck_assert_uint_eq(out.flow.wscale_repl, 14);
	n = roundtrip(&ff, 0, &out, buf, NULL);
	ck_assert(!has_attr(buf, (size_t)n, NTA_TCP_WSCALE_ORIG));
	ck_assert(!has_attr(buf, (size_t)n, NTA_TCP_WSCALE_REPL));
	ck_assert(!(out.flow.attrs & FLOW_A_WSCALE));
	ck_assert_uint_eq(out.flow.wscale_orig, 0);
}
END_TEST

START_TEST(helper_of_11_chars_is_sent)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	unsigned omitted;

	capture_flow(&ff);
	ff.flow.attrs |= FLOW_A_HELPER;
	strcpy(ff.ext.helper, "sip-5060-ab");
	ck_assert_int_eq(roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, &omitted), 84);
	ck_assert_uint_eq(omitted, 0);
	/* nta_len 16 = the limit, no padding. */
	assert_hex(buf + 68, 16, "0010 001b 7369702d 35303630 2d616200");
	assert_flow_eq(&out, &ff);
}
END_TEST

START_TEST(helper_of_12_chars_is_left_out_and_reported)
{
	struct flow_full ff, out, want;
	uint8_t buf[WIRE_CT_MAX_LEN];
	unsigned omitted;
	int n;

	capture_flow(&ff);
	want = ff;
	ff.flow.attrs |= FLOW_A_HELPER;
	strcpy(ff.ext.helper, "sip-5060-abc");
	n = roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, WIRE_OMIT_HELPER);
	ck_assert(!has_attr(buf, (size_t)n, NTA_HELPER_NAME));
	assert_hex(buf + 8, (size_t)n - 8, ours_hex + 19);
	assert_flow_eq(&out, &want);
	/* A name without its NUL in the 16 bytes is too long as well. */
	memset(ff.ext.helper, 'x', sizeof(ff.ext.helper));
	roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, WIRE_OMIT_HELPER);
	/* An empty name is no helper: nothing sent, nothing reported. */
	memset(ff.ext.helper, 0, sizeof(ff.ext.helper));
	n = roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, 0);
	ck_assert_int_eq(n, 68);
}
END_TEST

START_TEST(udplite_ports_only_with_the_option)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	unsigned omitted;
	int n;

	proto_flow(&ff, 4);
	n = roundtrip(&ff, 0, &out, buf, &omitted);
	ck_assert(!has_attr(buf, (size_t)n, NTA_PORT));
	ck_assert_uint_eq(omitted, WIRE_OMIT_PORTS);
	ck_assert(!(out.flow.attrs & FLOW_A_PORTS));
	ck_assert_uint_eq(out.flow.orig.l4.raw, 0);
	n = roundtrip(&ff, WIRE_ENC_UDPLITE_PORTS, &out, buf, &omitted);
	ck_assert(has_attr(buf, (size_t)n, NTA_PORT));
	ck_assert_uint_eq(omitted, 0);
	ck_assert(out.flow.attrs & FLOW_A_PORTS);
	ck_assert_uint_eq(out.flow.orig.l4.raw, ff.flow.orig.l4.raw);
}
END_TEST

START_TEST(tcp_port_is_sent_even_without_state)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];
	int n;

	capture_flow(&ff);
	ff.flow.attrs &= ~FLOW_A_PROTO_STATE;
	ff.flow.proto_state = 0;
	n = roundtrip(&ff, WIRE_ENC_TIMEOUT, &out, buf, NULL);
	ck_assert(has_attr(buf, (size_t)n, NTA_PORT));
	ck_assert(!has_attr(buf, (size_t)n, NTA_TCP_STATE));
	assert_flow_eq(&out, &ff);
}
END_TEST

START_TEST(encode_rejects_bad_type_flags_and_family)
{
	struct flow_full ff;
	uint8_t buf[WIRE_CT_MAX_LEN];
	struct wire_hdr h = { .type = WIRE_T_CT_DEL };

	capture_flow(&ff);
	ck_assert_int_gt(wire_ct_encode(buf, sizeof(buf), &h, &ff, 0, NULL), 0);
	h.type = WIRE_T_EXP_NEW;
	ck_assert_int_eq(wire_ct_encode(buf, sizeof(buf), &h, &ff, 0, NULL), -EINVAL);
	h.type = WIRE_T_CTL;
	ck_assert_int_eq(wire_ct_encode(buf, sizeof(buf), &h, &ff, 0, NULL), -EINVAL);
	h.type = WIRE_T_CT_NEW;
	h.flags = WIRE_F_ACK;
	ck_assert_int_eq(wire_ct_encode(buf, sizeof(buf), &h, &ff, 0, NULL), -EINVAL);
	h.flags = WIRE_F_HELLO_BACK;
	ck_assert_int_gt(wire_ct_encode(buf, sizeof(buf), &h, &ff, 0, NULL), 0);
	ck_assert_uint_eq(buf[1], WIRE_F_HELLO_BACK);
	ff.flow.orig.family = 0;
	ck_assert_int_eq(wire_ct_encode(buf, sizeof(buf), &h, &ff, 0, NULL), -EINVAL);
	ck_assert_int_eq(wire_ct_size(&ff, 0), -EINVAL);
	capture_flow(&ff);
	ff.flow.attrs |= FLOW_A_MASTER;
	ck_assert_int_eq(wire_ct_encode(buf, sizeof(buf), &h, &ff, 0, NULL), -EINVAL);
}
END_TEST

START_TEST(encoder_never_writes_past_capacity)
{
	struct wire_hdr h = { .type = WIRE_T_CT_NEW, .seq = 1 };
	static uint8_t buf[WIRE_CT_MAX_LEN + 64];
	struct flow_full ff;
	int len;

	full_flow(&ff, _i ? AF_INET6 : AF_INET);
	len = wire_ct_size(&ff, ALL_OPTS);
	ck_assert_int_gt(len, 0);
	for (int cap = 0; cap <= len; cap++) {
		int n;

		memset(buf, 0xa5, sizeof(buf));
		n = wire_ct_encode(buf, (size_t)cap, &h, &ff, ALL_OPTS, NULL);
		ck_assert_msg(n == (cap < len ? -ENOSPC : len), "cap %d of %d: returned %d", cap, len, n);
		for (size_t i = (size_t)cap; i < sizeof(buf); i++)
			ck_assert_msg(buf[i] == 0xa5, "cap %d: byte %zu written (%02x)", cap, i, buf[i]);
	}
}
END_TEST

START_TEST(largest_flow_is_wire_ct_max_len)
{
	struct flow_full ff, out;
	uint8_t buf[WIRE_CT_MAX_LEN];

	full_flow(&ff, AF_INET6);
	strcpy(ff.ext.helper, "12345678901");
	ff.labels.words = 256;
	ff.labels.w[255] = 0xffffffffu;
	ck_assert_int_eq(WIRE_CT_MAX_LEN, 1312);
	ck_assert_int_eq(roundtrip(&ff, ALL_OPTS, &out, buf, NULL), WIRE_CT_MAX_LEN);
	assert_flow_eq(&out, &ff);
	ck_assert_int_lt(WIRE_CT_MAX_LEN, WIRE_MSG_MAX);
}
END_TEST

START_TEST(decode_normalises_unused_bytes)
{
	struct flow_full got, want;

	/* An IPv4 flow decoded over garbage: the 12 unused address bytes, l4 and ext are zero. */
	memset(&got, 0x5a, sizeof(got));
	assert_reason(decode_hex(WIRE_T_CT_NEW, ICMP_KEY, &got), WIRE_OK);
	flow_init(&want, AF_INET, IPPROTO_ICMP, "10.0.0.1", "10.0.0.2");
	assert_flow_eq(&got, &want);
	ck_assert_uint_eq(got.labels.words, 0);
	ck_assert_uint_eq(got.flow.ext, 0);
	/* Equal keys hash alike and compare equal. */
	ck_assert(flow_tuple_equal(&got.flow.orig, &want.flow.orig));
}
END_TEST

START_TEST(decode_is_order_independent_and_duplicates_overwrite)
{
	struct flow_full a, b;

	/* The capture's attributes backwards decode to the same flow. */
	assert_reason(decode_hex(WIRE_T_CT_NEW,
				 "0010 001f 00000000 00000000 00000000  0008 0007 00000007"
				 "0008 0006 0000012c  0005 0004 03 000000  0008 0003 04d2 0050"
				 "0005 0002 06 000000  0008 0005 0000000e  000c 0000 0a000001 0a000002", &a),
		      WIRE_OK);
	capture_flow(&b);
	b.flow.attrs |= FLOW_A_SYNPROXY;
	assert_flow_eq(&a, &b);
	/* Two MARKs: the last wins, as in 1.4.7. */
	assert_reason(decode_hex(WIRE_T_CT_UPD, TCP_KEY " 0008 0007 00000001  0008 0007 00000002", &a),
		      WIRE_OK);
	ck_assert_uint_eq(a.flow.mark, 2);
}
END_TEST

/* ---- 1.4.7's rejection rules (protocol.md §2.11 step 7) --------------------------------- */

START_TEST(rejects_attr_id_33)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0008 0021 00000000", &f), WIRE_R_ATTR_UNKNOWN);
}
END_TEST

START_TEST(rejects_attr_id_65535)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0008 ffff 00000000", &f), WIRE_R_ATTR_UNKNOWN);
	/* Empty, it is checked too, unless it is the last 4 bytes (trailing, ignored). */
	assert_reason(decode_hex(WIRE_T_CT_NEW, "0004 ffff" TCP_KEY, &f), WIRE_R_ATTR_UNKNOWN);
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0004 ffff", &f), WIRE_OK);
}
END_TEST

START_TEST(accepts_attr_id_32)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0006 0020 0001 0000", &f), WIRE_OK);
	ck_assert_uint_eq(f.flow.orig.zone, 1);
}
END_TEST

START_TEST(rejects_l4proto_with_len_8)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, "000c 0000 0a000001 0a000002  0008 0002 06000000", &f),
		      WIRE_R_ATTR_SIZE);
}
END_TEST

START_TEST(rejects_ipv4_with_len_11)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, "000b 0000 0a000001 0a0000 00  0005 0002 01 000000", &f),
		      WIRE_R_ATTR_SIZE);
}
END_TEST

START_TEST(rejects_every_fixed_attribute_of_another_size)
{
	/* Payload sizes of protocol.md §2.7; 0 for the variable ones. */
	static const int size[NTA_MAX] = {
		8, 32, 1, 4, 1, 4, 4, 4, 8, 32, 1, 4, 4, 4, 2, 2, 24, 1, 4, 4, 1, 1, 1, 1, 2,
		1, 1, 0, 0, 16, 16, 12, 2,
	};

	for (uint16_t id = 0; id < NTA_MAX; id++) {
		uint8_t payload[64] = { 0 };
		struct flow_full f;
		struct mb m;

		if (size[id] == 0)
			continue;
		/* From 1: an empty attribute at the end is 4 trailing bytes, ignored. */
		for (int n = 1; n <= 40; n++) {
			enum wire_reason r;

			mb_init(&m, WIRE_T_CT_NEW);
			mb_attr(&m, id, payload, (size_t)n);
			r = wire_ct_decode(m.b, mb_end(&m), &f);
			ck_assert_msg((r == WIRE_R_ATTR_SIZE) == (n != size[id]),
				      "%s with %d bytes: got \"%s\"", wire_ct_attr_name(id), n,
				      wire_reason_name(r));
		}
	}
}
END_TEST

START_TEST(rejects_nta_len_below_4)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0003 0007 00000000", &f), WIRE_R_ATTR_SHORT);
	assert_reason(decode_hex(WIRE_T_CT_NEW, "0000 0000 0000 0000" TCP_KEY, &f), WIRE_R_ATTR_SHORT);
}
END_TEST

START_TEST(rejects_nta_len_past_the_end)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 000c 0007 00000007", &f), WIRE_R_ATTR_OVERRUN);
}
END_TEST

START_TEST(accepts_4_trailing_bytes)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " deadbeef", &f), WIRE_OK);
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " ffff", &f), WIRE_OK);
}
END_TEST

START_TEST(rejects_5_trailing_bytes)
{
	struct flow_full f;

	/* More than 4 bytes are read as an attribute header, here nta_len 0. */
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 00000000 00", &f), WIRE_R_ATTR_SHORT);
}
END_TEST

START_TEST(accepts_unpadded_last_attribute)
{
	struct flow_full f;

	/* 1.4.7 steps over padding that is not there: the message may end right after the value. */
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0005 0004 03", &f), WIRE_OK);
	ck_assert_uint_eq(f.flow.proto_state, 3);
	ck_assert(f.flow.attrs & FLOW_A_PROTO_STATE);
}
END_TEST

START_TEST(rejects_helper_nta_len_17)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0011 001b 61626364 65666768 696a6b6c 00 000000", &f),
		      WIRE_R_ATTR_TOO_LONG);
}
END_TEST

START_TEST(accepts_helper_nta_len_16)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0010 001b 61626364 65666768 696a6b00", &f), WIRE_OK);
	ck_assert_str_eq(f.ext.helper, "abcdefghijk");
	ck_assert(f.flow.attrs & FLOW_A_HELPER);
}
END_TEST

START_TEST(rejects_labels_nta_len_1032)
{
	uint8_t words[1028] = { 1 };
	struct flow_full f;
	struct mb m;

	mb_init(&m, WIRE_T_CT_NEW);
	mb_hex(&m, TCP_KEY);
	mb_attr(&m, NTA_LABELS, words, 1028);
	assert_reason(wire_ct_decode(m.b, mb_end(&m), &f), WIRE_R_ATTR_TOO_LONG);
	/* 1024 bytes of payload (nta_len 1028) is the most 1.4.7 takes. */
	mb_init(&m, WIRE_T_CT_NEW);
	mb_hex(&m, TCP_KEY);
	mb_attr(&m, NTA_LABELS, words, 1024);
	assert_reason(wire_ct_decode(m.b, mb_end(&m), &f), WIRE_OK);
	ck_assert_uint_eq(f.labels.words, 1);
	ck_assert_uint_eq(f.labels.w[0], 0x01000000u);
}
END_TEST

START_TEST(ignores_labels_not_multiple_of_4)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0007 001c 000001 00", &f), WIRE_OK);
	ck_assert(!(f.flow.attrs & FLOW_A_LABELS));
	ck_assert_uint_eq(f.labels.words, 0);
}
END_TEST

START_TEST(ignores_empty_and_all_zero_labels)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0004 001c", &f), WIRE_OK);
	ck_assert(!(f.flow.attrs & FLOW_A_LABELS));
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 000c 001c 00000000 00000000", &f), WIRE_OK);
	ck_assert(!(f.flow.attrs & FLOW_A_LABELS));
	ck_assert_uint_eq(f.labels.words, 0);
	/* Trailing zero words are dropped: 3 words with bit 32 set is 2 words. */
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0010 001c 00000000 00000001 00000000", &f),
		      WIRE_OK);
	ck_assert(f.flow.attrs & FLOW_A_LABELS);
	ck_assert_uint_eq(f.labels.words, 2);
}
END_TEST

START_TEST(rejects_other_message_types)
{
	struct flow_full f;
	struct flow_exp e;

	assert_reason(decode_hex(WIRE_T_EXP_NEW, TCP_KEY, &f), WIRE_R_BAD_TYPE);
	assert_reason(decode_hex(WIRE_T_CTL, TCP_KEY, &f), WIRE_R_BAD_TYPE);
	assert_reason(decode_hex(7, TCP_KEY, &f), WIRE_R_BAD_TYPE);
	assert_reason(decode_exp_hex(WIRE_T_CT_NEW, TCP_KEY, &e), WIRE_R_BAD_TYPE);
	assert_reason(wire_ct_decode("\x10\x00\x00\x04", 4, &f), WIRE_R_BAD_SIZE);
}
END_TEST

/* ---- ctsyncd's own rejections: keys and tables stay sound ---------------------- */

START_TEST(rejects_without_address)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, "0005 0002 06 000000  0008 0003 04d2 0050", &f),
		      WIRE_R_NO_ADDRESS);
	assert_reason(decode_hex(WIRE_T_CT_NEW, "", &f), WIRE_R_NO_ADDRESS);
}
END_TEST

START_TEST(rejects_ipv4_and_ipv6)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0024 0001 20010db8000000000000000000000001"
				 "20010db8000000000000000000000002", &f), WIRE_R_TWO_FAMILIES);
}
END_TEST

START_TEST(rejects_without_l4proto)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, "000c 0000 0a000001 0a000002  0008 0003 04d2 0050", &f),
		      WIRE_R_NO_L4PROTO);
}
END_TEST

START_TEST(rejects_port_protocol_without_port)
{
	static const char *const protos_hex[] = { "06", "11", "84", "21" };     /* TCP UDP SCTP DCCP */

	for (size_t i = 0; i < 4; i++) {
		char hex[128];
		struct flow_full f;

		snprintf(hex, sizeof(hex), "000c 0000 0a000001 0a000002  0005 0002 %s 000000", protos_hex[i]);
		assert_reason(decode_hex(WIRE_T_CT_NEW, hex, &f), WIRE_R_NO_PORTS);
	}
}
END_TEST

START_TEST(accepts_udplite_and_gre_without_port)
{
	struct flow_full f;

	/* That is what 1.4.7 sends for them (protocol.md §2.7): their key has no ports. */
	assert_reason(decode_hex(WIRE_T_CT_NEW, "000c 0000 0a000001 0a000002  0005 0002 88 000000", &f),
		      WIRE_OK);
	ck_assert(!(f.flow.attrs & FLOW_A_PORTS));
	assert_reason(decode_hex(WIRE_T_CT_NEW, "000c 0000 0a000001 0a000002  0005 0002 2f 000000", &f),
		      WIRE_OK);
	/* UDPlite with PORT (ctsyncd's option) is taken. */
	assert_reason(decode_hex(WIRE_T_CT_NEW, "000c 0000 0a000001 0a000002  0005 0002 88 000000"
				 "0008 0003 04d2 0050", &f), WIRE_OK);
	ck_assert(f.flow.attrs & FLOW_A_PORTS);
	ck_assert_uint_eq(ntohs(f.flow.orig.l4.port.sport), 1234);
}
END_TEST

START_TEST(rejects_port_on_icmp_and_gre)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, ICMP_KEY " 0008 0003 04d2 0050", &f), WIRE_R_PROTO_MISMATCH);
	assert_reason(decode_hex(WIRE_T_CT_NEW, "000c 0000 0a000001 0a000002  0005 0002 2f 000000"
				 "0008 0003 04d2 0050", &f), WIRE_R_PROTO_MISMATCH);
}
END_TEST

START_TEST(rejects_attributes_of_another_protocol)
{
	static const char *const v[] = {
		TCP_KEY " 0005 0016 08 000000",         /* ICMP_TYPE on TCP */
		TCP_KEY " 0006 0018 3412 0000",         /* ICMP_ID on TCP */
		UDP_KEY " 0005 0004 03 000000",         /* TCP_STATE on UDP */
		UDP_KEY " 0005 0019 07 000000",         /* WSCALE on UDP */
		TCP_KEY " 0008 0012 00000001",          /* SCTP_VTAG on TCP */
		TCP_KEY " 0005 0011 01 000000",         /* SCTP_STATE on TCP */
		UDP_KEY " 0005 0015 01 000000",         /* DCCP_ROLE on UDP */
		ICMP_KEY " 0005 0014 01 000000",        /* DCCP_STATE on ICMP */
	};
	struct flow_full f;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		enum wire_reason r = decode_hex(WIRE_T_CT_NEW, v[i], &f);

		ck_assert_msg(r == WIRE_R_PROTO_MISMATCH, "case %zu: expected %s, got %s", i,
			      wire_reason_name(WIRE_R_PROTO_MISMATCH), wire_reason_name(r));
	}
}
END_TEST

START_TEST(accepts_nat_ports_on_icmp)
{
	struct flow_full f;

	/* Not part of the key; 1.4.7 may send them for any protocol. */
	assert_reason(decode_hex(WIRE_T_CT_NEW, ICMP_KEY " 0008 000c c0a80101  0006 000e 0000 0000", &f),
		      WIRE_OK);
	ck_assert(f.flow.attrs & FLOW_A_SPAT);
}
END_TEST

START_TEST(rejects_snat_ipv4_in_ipv6_flow)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, IPV6_TCP_KEY " 0008 000c c0a80101", &f), WIRE_R_NAT_FAMILY);
	assert_reason(decode_hex(WIRE_T_CT_NEW, IPV6_TCP_KEY " 0008 000d c0a80101", &f), WIRE_R_NAT_FAMILY);
}
END_TEST

START_TEST(rejects_dnat_ipv6_in_ipv4_flow)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0014 001e 20010db8000000000000000000000009", &f),
		      WIRE_R_NAT_FAMILY);
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0014 001d 20010db8000000000000000000000009", &f),
		      WIRE_R_NAT_FAMILY);
}
END_TEST

START_TEST(rejects_incomplete_master)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 000c 0008 0a000001 0a000002", &f),
		      WIRE_R_MASTER_INCOMPLETE);
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0005 000a 06 000000", &f), WIRE_R_MASTER_INCOMPLETE);
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0008 000b 04d2 0015", &f), WIRE_R_MASTER_INCOMPLETE);
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 000c 0008 0a000001 0a000002  0005 000a 06 000000",
				 &f), WIRE_OK);
	ck_assert(f.flow.attrs & FLOW_A_MASTER);
	ck_assert_uint_eq(f.ext.master.family, AF_INET);
}
END_TEST

START_TEST(rejects_master_with_two_families)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 000c 0008 0a000001 0a000002  0005 000a 06 000000"
				 "0024 0009 20010db8000000000000000000000001 20010db8000000000000000000000002",
				 &f), WIRE_R_MASTER_TWO_FAMILIES);
}
END_TEST

START_TEST(rejects_master_port_of_portless_master)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 000c 0008 0a000001 0a000002  0005 000a 01 000000"
				 "0008 000b 04d2 0015", &f), WIRE_R_PROTO_MISMATCH);
}
END_TEST

START_TEST(rejects_unterminated_helper)
{
	struct flow_full f;

	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0007 001b 667470 00", &f),
		      WIRE_R_STRING_UNTERMINATED);
	assert_reason(decode_hex(WIRE_T_CT_NEW, "0004 001b" TCP_KEY, &f), WIRE_R_STRING_UNTERMINATED);
	/* A bare NUL is no helper. */
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0005 001b 00 000000", &f), WIRE_OK);
	ck_assert(!(f.flow.attrs & FLOW_A_HELPER));
	/* Bytes after the NUL are ignored. */
	assert_reason(decode_hex(WIRE_T_CT_NEW, TCP_KEY " 0008 001b 667470 00  0008 001b 6100 6263", &f),
		      WIRE_OK);
	ck_assert_str_eq(f.ext.helper, "a");
}
END_TEST

/* ---- expectations (protocol.md §2.10) ----------------------------------------------------- */

static void tuple_set(struct flow_tuple *t, int family, uint8_t proto, const char *src, const char *dst,
		      uint16_t sport, uint16_t dport)
{
	memset(t, 0, sizeof(*t));
	t->family = (uint8_t)family;
	t->l4proto = proto;
	ck_assert_int_eq(inet_pton(family, src, t->src.bytes), 1);
	ck_assert_int_eq(inet_pton(family, dst, t->dst.bytes), 1);
	t->l4.port.sport = htons(sport);
	t->l4.port.dport = htons(dport);
}

/* An active-FTP data expectation of the control flow 10.0.0.1:40000 -> 10.0.0.2:21. */
static void ftp_expect(struct flow_exp *e)
{
	memset(e, 0, sizeof(*e));
	tuple_set(&e->master, AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.2", 40000, 21);
	tuple_set(&e->tuple, AF_INET, IPPROTO_TCP, "10.0.0.2", "10.0.0.1", 0, 50000);
	tuple_set(&e->mask, AF_INET, IPPROTO_TCP, "255.255.255.255", "255.255.255.255", 0, 0xffff);
	e->timeout = 300;
	strcpy(e->helper, "ftp");
	e->attrs = FLOW_EXP_A_TIMEOUT | FLOW_EXP_A_HELPER;
}

static const char ftp_expect_hex[] =
	"13 00 0074 00000005"
	"000c 0000 0a000001 0a000002  0005 0002 06 000000  0008 0003 9c40 0015"  /* master */
	"000c 0004 0a000002 0a000001  0005 0006 06 000000  0008 0007 0000 c350"  /* expected */
	"000c 0008 ffffffff ffffffff  0005 000a 06 000000  0008 000b 0000 ffff"  /* mask */
	"0008 000c 0000012c"                                                     /* timeout */
	"0008 000d 00000000"                                                     /* flags */
	"0008 0013 66747000";                                                    /* helper */

#define assert_exp_eq(got, want) do { \
		const struct flow_exp *g__ = (got), *w__ = (want); \
		if (memcmp(g__, w__, sizeof(*g__))) \
			assert_bytes(g__, sizeof(*g__), w__, sizeof(*w__)); \
	} while (0)

static int exp_roundtrip(const struct flow_exp *in, unsigned opts, struct flow_exp *out,
			 uint8_t *buf, unsigned *omitted)
{
	struct wire_hdr h = { .type = WIRE_T_EXP_UPD, .seq = 5 };
	uint16_t ids[64];
	enum wire_reason r;
	int n;

	n = wire_exp_encode(buf, WIRE_EXP_MAX_LEN, &h, in, opts, omitted);
	ck_assert_msg(n > 0, "encode failed: %d", n);
	ck_assert_int_eq(wire_exp_size(in, opts), n);
	for (size_t i = 0, k = attr_ids(buf, (size_t)n, ids, 64); i < k; i++)
		ck_assert_msg(ids[i] < NTA_EXP_MAX, "emitted attribute id %u", ids[i]);
	memset(out, 0xa5, sizeof(*out));
	r = wire_exp_decode(buf, (size_t)n, out);
	ck_assert_msg(r == WIRE_OK, "decode of our own encoding failed: %s\n%s", wire_reason_name(r),
		      hexdump(buf, (size_t)n, (size_t)-1));
	return n;
}

START_TEST(golden_expectation_in_147_order)
{
	struct wire_hdr h = { .type = WIRE_T_EXP_NEW, .seq = 5 };
	struct flow_exp e, got;
	uint8_t buf[WIRE_EXP_MAX_LEN];
	int n;

	ftp_expect(&e);
	n = wire_exp_encode(buf, sizeof(buf), &h, &e, WIRE_ENC_TIMEOUT, NULL);
	assert_hex(buf, (size_t)n, ftp_expect_hex);
	assert_reason(wire_exp_decode(buf, (size_t)n, &got), WIRE_OK);
	assert_exp_eq(&got, &e);
}
END_TEST

START_TEST(roundtrip_expectations)
{
	struct flow_exp e, out;
	uint8_t buf[WIRE_EXP_MAX_LEN];
	unsigned omitted;

	/* IPv4 with everything: NAT tuple, class, expectfn. */
	ftp_expect(&e);
	e.flags = 0x3;
	e.class = 1;
	e.nat_dir = 1;
	tuple_set(&e.nat, AF_INET, IPPROTO_TCP, "203.0.113.1", "0.0.0.0", 50001, 0);
	strcpy(e.fn, "nf_nat_follow_master");
	e.attrs |= FLOW_EXP_A_CLASS | FLOW_EXP_A_NAT | FLOW_EXP_A_FN;
	exp_roundtrip(&e, ALL_OPTS, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, 0);
	assert_exp_eq(&out, &e);
	/* IPv6, UDP (SIP's RTP). */
	memset(&e, 0, sizeof(e));
	tuple_set(&e.master, AF_INET6, IPPROTO_UDP, "2001:db8::1", "2001:db8::2", 5060, 5060);
	tuple_set(&e.tuple, AF_INET6, IPPROTO_UDP, "::", "2001:db8::1", 0, 16384);
	tuple_set(&e.mask, AF_INET6, IPPROTO_UDP, "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0, 0xffff);
	strcpy(e.helper, "sip");
	e.class = 2;
	e.attrs = FLOW_EXP_A_HELPER | FLOW_EXP_A_CLASS;
	exp_roundtrip(&e, ALL_OPTS, &out, buf, &omitted);
	assert_exp_eq(&out, &e);
	/* A master without ports (GRE): no port attribute anywhere. */
	memset(&e, 0, sizeof(e));
	tuple_set(&e.master, AF_INET, IPPROTO_GRE, "10.0.0.1", "10.0.0.2", 0, 0);
	tuple_set(&e.tuple, AF_INET, IPPROTO_GRE, "10.0.0.2", "10.0.0.1", 0, 0);
	tuple_set(&e.mask, AF_INET, IPPROTO_GRE, "255.255.255.255", "255.255.255.255", 0, 0);
	exp_roundtrip(&e, ALL_OPTS, &out, buf, &omitted);
	assert_exp_eq(&out, &e);
	ck_assert(!has_attr(buf, (size_t)wire_exp_size(&e, 0), NTA_EXP_MASTER_PORT));
}
END_TEST

START_TEST(exp_ports_follow_the_master_protocol)
{
	struct flow_exp e, out;
	uint8_t buf[WIRE_EXP_MAX_LEN];
	unsigned omitted;
	int n;

	/* PPTP: a TCP master expects GRE; the expected tuple's "ports" (GRE keys) go out. */
	memset(&e, 0, sizeof(e));
	tuple_set(&e.master, AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.2", 40000, 1723);
	tuple_set(&e.tuple, AF_INET, IPPROTO_GRE, "10.0.0.2", "10.0.0.1", 7, 9);
	tuple_set(&e.mask, AF_INET, IPPROTO_GRE, "255.255.255.255", "255.255.255.255", 0, 0xffff);
	n = exp_roundtrip(&e, 0, &out, buf, &omitted);
	ck_assert(has_attr(buf, (size_t)n, NTA_EXP_EXPECT_PORT));
	assert_exp_eq(&out, &e);
	/* A UDPlite master: ports only with the option. */
	e.master.l4proto = IPPROTO_UDPLITE;
	n = exp_roundtrip(&e, 0, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, WIRE_OMIT_PORTS);
	ck_assert(!has_attr(buf, (size_t)n, NTA_EXP_EXPECT_PORT));
	n = exp_roundtrip(&e, WIRE_ENC_UDPLITE_PORTS, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, 0);
	assert_exp_eq(&out, &e);
}
END_TEST

START_TEST(exp_timeout_only_when_asked)
{
	struct flow_exp e, out;
	uint8_t buf[WIRE_EXP_MAX_LEN];
	int n;

	ftp_expect(&e);
	n = exp_roundtrip(&e, 0, &out, buf, NULL);
	ck_assert_int_eq(n, 0x74 - 8);
	ck_assert(!(out.attrs & FLOW_EXP_A_TIMEOUT));
	ck_assert_uint_eq(out.timeout, 0);
	n = exp_roundtrip(&e, WIRE_ENC_TIMEOUT, &out, buf, NULL);
	ck_assert_int_eq(n, 0x74);
	assert_exp_eq(&out, &e);
}
END_TEST

START_TEST(exp_omits_what_147_cannot_take)
{
	struct flow_exp e, out, want;
	uint8_t buf[WIRE_EXP_MAX_LEN];
	unsigned omitted;

	/* NAT of an IPv6 expectation. */
	memset(&e, 0, sizeof(e));
	tuple_set(&e.master, AF_INET6, IPPROTO_TCP, "2001:db8::1", "2001:db8::2", 40000, 21);
	tuple_set(&e.tuple, AF_INET6, IPPROTO_TCP, "2001:db8::2", "2001:db8::1", 0, 50000);
	tuple_set(&e.mask, AF_INET6, IPPROTO_TCP, "::", "::", 0, 0xffff);
	want = e;
	e.attrs |= FLOW_EXP_A_NAT;
	e.nat.family = AF_INET;
	exp_roundtrip(&e, ALL_OPTS, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, WIRE_OMIT_EXP_NAT);
	assert_exp_eq(&out, &want);
	/* A 12-char helper and a 28-char expectfn; 11 and 27 pass. */
	ftp_expect(&e);
	strcpy(e.helper, "abcdefghijkl");
	memset(e.fn, 'f', 28);
	e.attrs |= FLOW_EXP_A_FN;
	exp_roundtrip(&e, ALL_OPTS, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, WIRE_OMIT_HELPER | WIRE_OMIT_EXP_FN);
	ck_assert(!(out.attrs & (FLOW_EXP_A_HELPER | FLOW_EXP_A_FN)));
	e.helper[11] = '\0';
	e.fn[27] = '\0';
	exp_roundtrip(&e, ALL_OPTS, &out, buf, &omitted);
	ck_assert_uint_eq(omitted, 0);
	assert_exp_eq(&out, &e);
}
END_TEST

START_TEST(exp_encode_rejects_bad_input_and_never_overflows)
{
	struct wire_hdr h = { .type = WIRE_T_CT_NEW };
	static uint8_t buf[WIRE_EXP_MAX_LEN + 32];
	struct flow_exp e;
	int len;

	ftp_expect(&e);
	ck_assert_int_eq(wire_exp_encode(buf, sizeof(buf), &h, &e, 0, NULL), -EINVAL);
	h.type = WIRE_T_EXP_DEL;
	h.flags = WIRE_F_NACK;
	ck_assert_int_eq(wire_exp_encode(buf, sizeof(buf), &h, &e, 0, NULL), -EINVAL);
	h.flags = 0;
	e.mask.family = AF_INET6;
	ck_assert_int_eq(wire_exp_encode(buf, sizeof(buf), &h, &e, 0, NULL), -EINVAL);
	ck_assert_int_eq(wire_exp_size(&e, 0), -EINVAL);
	ftp_expect(&e);
	e.attrs |= FLOW_EXP_A_NAT | FLOW_EXP_A_CLASS | FLOW_EXP_A_FN;
	strcpy(e.fn, "x");
	len = wire_exp_size(&e, ALL_OPTS);
	for (int cap = 0; cap <= len; cap++) {
		int n;

		memset(buf, 0xa5, sizeof(buf));
		n = wire_exp_encode(buf, (size_t)cap, &h, &e, ALL_OPTS, NULL);
		ck_assert_msg(n == (cap < len ? -ENOSPC : len), "cap %d of %d: returned %d", cap, len, n);
		for (size_t i = (size_t)cap; i < sizeof(buf); i++)
			ck_assert_msg(buf[i] == 0xa5, "cap %d: byte %zu written", cap, i);
	}
}
END_TEST

START_TEST(largest_expectation_is_wire_exp_max_len)
{
	struct flow_exp e, out;
	uint8_t buf[WIRE_EXP_MAX_LEN];

	memset(&e, 0, sizeof(e));
	tuple_set(&e.master, AF_INET6, IPPROTO_TCP, "2001:db8::1", "2001:db8::2", 40000, 21);
	tuple_set(&e.tuple, AF_INET6, IPPROTO_TCP, "2001:db8::2", "2001:db8::1", 0, 50000);
	tuple_set(&e.mask, AF_INET6, IPPROTO_TCP, "::", "::", 0, 0xffff);
	strcpy(e.helper, "abcdefghijk");
	memset(e.fn, 'f', 27);
	e.attrs = FLOW_EXP_A_TIMEOUT | FLOW_EXP_A_CLASS | FLOW_EXP_A_HELPER | FLOW_EXP_A_FN;
	ck_assert_int_eq(exp_roundtrip(&e, ALL_OPTS, &out, buf, NULL), WIRE_EXP_MAX_LEN);
	assert_exp_eq(&out, &e);
}
END_TEST

#define EXP_MASTER4 "000c 0000 0a000001 0a000002  0005 0002 06 000000"
#define EXP_TUPLE4 "000c 0004 0a000002 0a000001  0005 0006 06 000000"
#define EXP_MASK4 "000c 0008 ffffffff ffffffff  0005 000a 06 000000"
#define EXP_KEY4 EXP_MASTER4 EXP_TUPLE4 EXP_MASK4

START_TEST(exp_rejects_attr_id_21)
{
	struct flow_exp e;

	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 0008 0015 00000000", &e), WIRE_R_ATTR_UNKNOWN);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4, &e), WIRE_OK);
}
END_TEST

START_TEST(exp_rejects_wrong_fixed_sizes)
{
	struct flow_exp e;

	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 0008 0002 06000000", &e), WIRE_R_ATTR_SIZE);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 000c 000f 0a000001", &e), WIRE_R_ATTR_OVERRUN);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 0008 000f 0a000001", &e), WIRE_R_ATTR_SIZE);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 0006 000d 0000 0000", &e), WIRE_R_ATTR_SIZE);
}
END_TEST

START_TEST(exp_rejects_fn_nta_len_33)
{
	uint8_t name[29];
	struct flow_exp e;
	struct mb m;

	memset(name, 'f', sizeof(name));
	name[28] = '\0';
	mb_init(&m, WIRE_T_EXP_NEW);
	mb_hex(&m, EXP_KEY4);
	mb_attr(&m, NTA_EXP_FN, name, 29);
	assert_reason(wire_exp_decode(m.b, mb_end(&m), &e), WIRE_R_ATTR_TOO_LONG);
	name[27] = '\0';
	mb_init(&m, WIRE_T_EXP_NEW);
	mb_hex(&m, EXP_KEY4);
	mb_attr(&m, NTA_EXP_FN, name, 28);
	assert_reason(wire_exp_decode(m.b, mb_end(&m), &e), WIRE_OK);
	ck_assert_uint_eq(strlen(e.fn), 27);
	/* And the helper's limit is the conntrack one. */
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 0011 0013 61626364 65666768 696a6b6c 00", &e),
		      WIRE_R_ATTR_TOO_LONG);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 0007 0014 616263", &e),
		      WIRE_R_STRING_UNTERMINATED);
}
END_TEST

START_TEST(exp_rejects_missing_tuples)
{
	struct flow_exp e;

	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_TUPLE4 EXP_MASK4, &e), WIRE_R_EXP_NO_MASTER);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_MASTER4 EXP_MASK4, &e), WIRE_R_EXP_NO_TUPLE);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_MASTER4 EXP_TUPLE4, &e), WIRE_R_EXP_NO_MASK);
	/* An address without its l4proto is no tuple either. */
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_MASTER4 EXP_TUPLE4 "000c 0008 ffffffff ffffffff", &e),
		      WIRE_R_EXP_NO_MASK);
}
END_TEST

START_TEST(exp_rejects_mixed_families)
{
	struct flow_exp e;

	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 0024 0005 20010db8000000000000000000000001"
				     "20010db8000000000000000000000002", &e), WIRE_R_TWO_FAMILIES);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_MASTER4 EXP_TUPLE4
				     "0024 0009 ffffffffffffffffffffffffffffffff ffffffffffffffffffffffffffffffff"
				     "0005 000a 06 000000", &e), WIRE_R_EXP_FAMILY_MISMATCH);
}
END_TEST

START_TEST(exp_rejects_nat_of_ipv6_and_incomplete_nat)
{
	struct flow_exp e;

	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW,
				     "0024 0001 20010db8000000000000000000000001 20010db8000000000000000000000002"
				     "0005 0002 11 000000"
				     "0024 0005 20010db8000000000000000000000002 20010db8000000000000000000000001"
				     "0005 0006 11 000000"
				     "0024 0009 ffffffffffffffffffffffffffffffff ffffffffffffffffffffffffffffffff"
				     "0005 000a 11 000000"
				     "000c 000f cb007101 00000000", &e), WIRE_R_NAT_FAMILY);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 0008 0012 00000001", &e),
		      WIRE_R_EXP_NAT_INCOMPLETE);
	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, EXP_KEY4 " 000c 000f cb007101 00000000  0008 0012 00000001",
				     &e), WIRE_OK);
	ck_assert(e.attrs & FLOW_EXP_A_NAT);
	ck_assert_uint_eq(e.nat_dir, 1);
}
END_TEST

START_TEST(exp_rejects_ports_of_portless_master)
{
	struct flow_exp e;

	assert_reason(decode_exp_hex(WIRE_T_EXP_NEW, "000c 0000 0a000001 0a000002  0005 0002 2f 000000"
				     EXP_TUPLE4 EXP_MASK4 "0008 0007 0000 c350", &e), WIRE_R_PROTO_MISMATCH);
}
END_TEST

/* ---- the splitter (protocol.md §2.11 steps 1-5) ----------------------------------------------- */

/* Split `hex` as a datagram; the statuses and reasons, as "MSG:ok MSG:ok ERROR:bad size". */
static const char *split_trace(const char *hex, bool stream)
{
	static char out[512];
	uint8_t buf[1024];
	size_t n = unhex(buf, sizeof(buf), hex), len = 0;
	static const char *const st[] = { "MSG", "END", "ERROR", "MORE" };
	struct wire_split s;
	struct wire_msg m;
	enum wire_split_status r;

	out[0] = '\0';
	wire_split_init(&s, buf, n, stream);
	do {
		r = wire_split_next(&s, &m);
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s", len ? " " : "", st[r]);
		if (r == WIRE_SPLIT_MSG || r == WIRE_SPLIT_ERROR)
			len += (size_t)snprintf(out + len, sizeof(out) - len, ":%s", wire_reason_name(m.reason));
		if (r == WIRE_SPLIT_MSG && m.reason == WIRE_OK)
			len += (size_t)snprintf(out + len, sizeof(out) - len, ":%s", wire_kind_name(m.kind));
	} while (r == WIRE_SPLIT_MSG);
	return out;
}

#define ALIVE_HEX " 1a10 0008 00000001 "
#define ACK_HEX " 1a08 0010 00000002 00000001 00000001 "

START_TEST(split_two_messages_in_one_datagram)
{
	uint8_t buf[256];
	size_t n = unhex(buf, sizeof(buf), capture_hex);
	struct flow_full f;
	struct wire_split s;
	struct wire_msg m;

	n += unhex(buf + n, sizeof(buf) - n, capture_hex);
	buf[84 + 7] = 0x97;     /* the second one's seq */
	wire_split_init(&s, buf, n, false);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_MSG);
	ck_assert_uint_eq(m.hdr.seq, 0x6b027a96);
	ck_assert_ptr_eq(m.data, buf);
	assert_reason(wire_ct_decode(m.data, m.len, &f), WIRE_OK);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_MSG);
	ck_assert_uint_eq(m.hdr.seq, 0x6b027a97);
	ck_assert_ptr_eq(m.data, buf + 84);
	assert_reason(wire_ct_decode(m.data, m.len, &f), WIRE_OK);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_END);
	ck_assert_uint_eq(wire_split_offset(&s), n);
	ck_assert_str_eq(split_trace(ALIVE_HEX ACK_HEX ALIVE_HEX, false),
			 "MSG:ok:alive MSG:ok:ack MSG:ok:alive END");
}
END_TEST

START_TEST(split_zero_length_stops_the_datagram)
{
	ck_assert_str_eq(split_trace(ALIVE_HEX "1010 0000 00000002" ALIVE_HEX, false),
			 "MSG:ok:alive ERROR:bad size");
}
END_TEST

START_TEST(split_length_past_the_end_is_bad_size)
{
	ck_assert_str_eq(split_trace(ALIVE_HEX "1000 0010 00000002 0000", false), "MSG:ok:alive ERROR:bad size");
}
END_TEST

START_TEST(split_short_tail_is_truncated)
{
	ck_assert_str_eq(split_trace(ALIVE_HEX "1a10 0008 00", false), "MSG:ok:alive ERROR:truncated");
}
END_TEST

START_TEST(split_short_control_messages)
{
	/* An ACK needs its 16 bytes: 12 left is truncated... */
	ck_assert_str_eq(split_trace("1a08 000c 00000001 00000001", false), "ERROR:truncated");
	/* ...16 left but len 12 is bad size, and so is an ACK of len 8. */
	ck_assert_str_eq(split_trace("1a08 000c 00000001 00000001 00000001", false), "ERROR:bad size");
	ck_assert_str_eq(split_trace("1a08 0008 00000001" ALIVE_HEX, false), "ERROR:bad size");
	ck_assert_str_eq(split_trace("1a04 0008 00000001" ALIVE_HEX, false), "ERROR:bad size");
	ck_assert_str_eq(split_trace("1a02 0008 00000001" ALIVE_HEX, false), "ERROR:bad size");
	/* Other messages need their 8. */
	ck_assert_str_eq(split_trace("1a10 0004 00000001" ALIVE_HEX, false), "ERROR:bad size");
	ck_assert_str_eq(split_trace("1000 0007 00000001" ALIVE_HEX, false), "ERROR:bad size");
	/* A 16-byte ACK followed by more is fine; a longer one too. */
	ck_assert_str_eq(split_trace(ACK_HEX "1a08 0014 00000002 00000001 00000001 00000000", false),
			 "MSG:ok:ack MSG:ok:ack END");
}
END_TEST

START_TEST(split_wrong_version_is_skipped_and_the_next_parsed)
{
	ck_assert_str_eq(split_trace("2000 000c 00000001 deadbeef" ALIVE_HEX, false),
			 "MSG:wrong version MSG:ok:alive END");
	/* The framing checks come first: a foreign version with len 0 still stops the datagram. */
	ck_assert_str_eq(split_trace("2000 0000 00000001" ALIVE_HEX, false), "ERROR:bad size");
	ck_assert_str_eq(split_trace("0a10 0008 00000001" ALIVE_HEX, false),
			 "MSG:wrong version MSG:ok:alive END");
}
END_TEST

START_TEST(split_reports_bad_headers_as_messages)
{
	/* Classified BAD, but framed: the sync layer counts it and goes on. */
	ck_assert_str_eq(split_trace("1600 0008 00000001" ALIVE_HEX, false), "MSG:ok:bad MSG:ok:alive END");
	ck_assert_str_eq(split_trace("1a20 0008 00000001" ALIVE_HEX, false), "MSG:ok:bad MSG:ok:alive END");
	ck_assert_str_eq(split_trace("1008 0008 00000001" ALIVE_HEX, false), "MSG:ok:bad MSG:ok:alive END");
}
END_TEST

START_TEST(split_after_an_error_stays_stopped)
{
	uint8_t buf[32];
	size_t n = unhex(buf, sizeof(buf), "1000 0000 00000001" ALIVE_HEX);
	struct wire_split s;
	struct wire_msg m;

	wire_split_init(&s, buf, n, false);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_ERROR);
	m.reason = WIRE_OK;
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_ERROR);
	assert_reason(m.reason, WIRE_R_BAD_SIZE);
	ck_assert_uint_eq(wire_split_offset(&s), 0);
	wire_split_init(&s, buf, 0, false);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_END);
	ck_assert_int_eq(wire_split_next(&s, &m), WIRE_SPLIT_END);
}
END_TEST

START_TEST(split_stream_partial_message_asks_for_more)
{
	ck_assert_str_eq(split_trace(ALIVE_HEX "1a10 00", true), "MSG:ok:alive MORE");
	ck_assert_str_eq(split_trace(ALIVE_HEX "1000 0054 6b027a96 000c", true), "MSG:ok:alive MORE");
	ck_assert_str_eq(split_trace(ALIVE_HEX "1a08 0010 00000002 0000", true), "MSG:ok:alive MORE");
	/* Lengths no more bytes can repair are errors in a stream too. */
	ck_assert_str_eq(split_trace(ALIVE_HEX "1a08 000c 00000002 00000000", true),
			 "MSG:ok:alive ERROR:bad size");
	ck_assert_str_eq(split_trace("1000 0000 00000002", true), "ERROR:bad size");
}
END_TEST

START_TEST(split_stream_reassembles_at_every_cut)
{
	uint8_t stream[512], pending[512];
	size_t total = 0;
	struct flow_full want, got;

	/* capture, ACK, ALIVE, a foreign version, capture: 84 + 16 + 8 + 12 + 84 bytes. */
	total += unhex(stream + total, sizeof(stream) - total, capture_hex);
	total += unhex(stream + total, sizeof(stream) - total, ACK_HEX ALIVE_HEX "2000 000c 00000001 00000000");
	total += unhex(stream + total, sizeof(stream) - total, capture_hex);
	capture_flow(&want);
	want.flow.attrs |= FLOW_A_SYNPROXY;
	for (size_t chunk = 1; chunk <= total; chunk++) {
		size_t have = 0, fed = 0;
		unsigned msgs = 0, skipped = 0;

		while (fed < total) {
			size_t k = chunk < total - fed ? chunk : total - fed;
			struct wire_split s;
			struct wire_msg m;
			enum wire_split_status r;

			memcpy(pending + have, stream + fed, k);
			have += k;
			fed += k;
			wire_split_init(&s, pending, have, true);
			while ((r = wire_split_next(&s, &m)) == WIRE_SPLIT_MSG) {
				if (m.reason != WIRE_OK) {
					skipped++;
					continue;
				}
				msgs++;
				if (m.kind == WIRE_K_DATA) {
					assert_reason(wire_ct_decode(m.data, m.len, &got), WIRE_OK);
					assert_flow_eq(&got, &want);
				}
			}
			ck_assert_msg(r == WIRE_SPLIT_MORE || r == WIRE_SPLIT_END, "chunk %zu: status %d", chunk, r);
			memmove(pending, pending + wire_split_offset(&s), have - wire_split_offset(&s));
			have -= wire_split_offset(&s);
		}
		ck_assert_msg(msgs == 4 && skipped == 1 && have == 0,
			      "chunk %zu: %u messages, %u skipped, %zu bytes left", chunk, msgs, skipped, have);
	}
}
END_TEST

/* ---- reasons -------------------------------------------------------------------- */

START_TEST(every_reason_has_a_distinct_name_and_counter)
{
	for (int a = 0; a < WIRE_R_MAX; a++) {
		const char *name = wire_reason_name((enum wire_reason)a);
		const char *key = wire_reason_key((enum wire_reason)a);

		ck_assert_msg(name && *name && strcmp(name, "?"), "reason %d has no name", a);
		ck_assert_msg(key && *key && strcmp(key, "unknown"), "reason %d has no key", a);
		for (const char *c = key; *c; c++)
			ck_assert_msg(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '_',
				      "key %s is not an identifier", key);
		for (int b = 0; b < a; b++) {
			ck_assert_str_ne(name, wire_reason_name((enum wire_reason)b));
			ck_assert_str_ne(key, wire_reason_key((enum wire_reason)b));
		}
		if (a != WIRE_OK)
			ck_assert_msg(wire_reason_counter((enum wire_reason)a) != WIRE_C_NONE,
				      "%s is counted nowhere", name);
		/* Our own rejections are counted as malformed payload, as 1.4.7 would count its own. */
		if (wire_reason_is_strict((enum wire_reason)a))
			ck_assert_int_eq(wire_reason_counter((enum wire_reason)a), WIRE_C_BAD_PAYLOAD);
	}
	ck_assert_int_eq(wire_reason_counter(WIRE_R_TRUNCATED), WIRE_C_TRUNCATED);
	ck_assert_int_eq(wire_reason_counter(WIRE_R_BAD_SIZE), WIRE_C_BAD_SIZE);
	ck_assert_int_eq(wire_reason_counter(WIRE_R_WRONG_VERSION), WIRE_C_WRONG_VERSION);
	ck_assert_int_eq(wire_reason_counter(WIRE_R_BAD_HEADER), WIRE_C_BAD_HEADER);
	ck_assert_int_eq(wire_reason_counter(WIRE_R_BAD_TYPE), WIRE_C_BAD_TYPE);
	ck_assert_int_eq(wire_reason_counter(WIRE_R_ATTR_UNKNOWN), WIRE_C_BAD_PAYLOAD);
	ck_assert(!wire_reason_is_strict(WIRE_R_ATTR_UNKNOWN));
	ck_assert(wire_reason_is_strict(WIRE_R_NO_PORTS));
	ck_assert_str_eq(wire_reason_name(WIRE_R_MAX), "?");
	ck_assert_str_eq(wire_type_name(WIRE_T_CT_DEL), "CT_DEL");
	ck_assert_str_eq(wire_type_name(WIRE_T_CTL), "CTL");
	ck_assert_str_eq(wire_type_name(7), "?");
	ck_assert_str_eq(wire_ct_attr_name(NTA_ZONE), "ZONE");
	ck_assert_str_eq(wire_ct_attr_name(NTA_MAX), "?");
	ck_assert_str_eq(wire_exp_attr_name(NTA_EXP_FN), "FN");
}
END_TEST

/* ---- suite ---------------------------------------------------------------------- */

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc;

	tc = tcase_create("golden");
	tcase_add_test(tc, golden_capture_encodes_byte_for_byte);
	tcase_add_test(tc, golden_capture_decodes);
	tcase_add_test(tc, golden_udp_snat_address_raw_port_little_endian);
	tcase_add_test(tc, golden_zone_5_is_proper_big_endian);
	tcase_add_test(tc, golden_icmp_id_is_little_endian);
	tcase_add_test(tc, golden_resync_request);
	tcase_add_test(tc, golden_control_flag_bytes);
	tcase_add_test(tc, golden_control_messages_decode);
	tcase_add_test(tc, golden_expectation_in_147_order);
	tcase_add_test(tc, ctl_encode_rejects_bad_flags_and_small_buffers);
	tcase_add_test(tc, classify_priority_and_bad_headers);
	tcase_add_test(tc, header_decode_reads_range_only_for_16_byte_forms);
	suite_add_tcase(s, tc);

	tc = tcase_create("roundtrip");
	tcase_add_loop_test(tc, roundtrip_every_protocol, 0, NPROTOS);
	tcase_add_loop_test(tc, port_attribute_per_protocol, 0, NPROTOS);
	tcase_add_test(tc, roundtrip_every_attribute_ipv4);
	tcase_add_test(tc, roundtrip_every_attribute_ipv6);
	tcase_add_test(tc, emission_order_is_147s);
	tcase_add_test(tc, roundtrip_nat_ipv4_with_ports);
	tcase_add_test(tc, roundtrip_nat_ipv6_with_ports);
	tcase_add_test(tc, roundtrip_master_tuples);
	tcase_add_test(tc, master_port_of_udplite_master_needs_the_option);
	tcase_add_loop_test(tc, roundtrip_labels_1_4_256_words, 0, 3);
	tcase_add_test(tc, labels_word_count_follows_the_highest_bit);
	tcase_add_test(tc, labels_gone_sends_one_zero_word);
	tcase_add_test(tc, synproxy_zeros_and_values);
	tcase_add_test(tc, key_only_for_deletes);
	tcase_add_test(tc, roundtrip_zone_mark_status);
	tcase_add_test(tc, timeout_only_when_asked);
	tcase_add_test(tc, wscale_only_when_asked);
	tcase_add_test(tc, helper_of_11_chars_is_sent);
	tcase_add_test(tc, helper_of_12_chars_is_left_out_and_reported);
	tcase_add_test(tc, udplite_ports_only_with_the_option);
	tcase_add_test(tc, tcp_port_is_sent_even_without_state);
	tcase_add_test(tc, encode_rejects_bad_type_flags_and_family);
	tcase_add_loop_test(tc, encoder_never_writes_past_capacity, 0, 2);
	tcase_add_test(tc, largest_flow_is_wire_ct_max_len);
	tcase_add_test(tc, decode_normalises_unused_bytes);
	tcase_add_test(tc, decode_is_order_independent_and_duplicates_overwrite);
	suite_add_tcase(s, tc);

	tc = tcase_create("rejects_147");
	tcase_add_test(tc, rejects_attr_id_33);
	tcase_add_test(tc, rejects_attr_id_65535);
	tcase_add_test(tc, accepts_attr_id_32);
	tcase_add_test(tc, rejects_l4proto_with_len_8);
	tcase_add_test(tc, rejects_ipv4_with_len_11);
	tcase_add_test(tc, rejects_every_fixed_attribute_of_another_size);
	tcase_add_test(tc, rejects_nta_len_below_4);
	tcase_add_test(tc, rejects_nta_len_past_the_end);
	tcase_add_test(tc, accepts_4_trailing_bytes);
	tcase_add_test(tc, rejects_5_trailing_bytes);
	tcase_add_test(tc, accepts_unpadded_last_attribute);
	tcase_add_test(tc, rejects_helper_nta_len_17);
	tcase_add_test(tc, accepts_helper_nta_len_16);
	tcase_add_test(tc, rejects_labels_nta_len_1032);
	tcase_add_test(tc, ignores_labels_not_multiple_of_4);
	tcase_add_test(tc, ignores_empty_and_all_zero_labels);
	tcase_add_test(tc, rejects_other_message_types);
	suite_add_tcase(s, tc);

	tc = tcase_create("rejects_ours");
	tcase_add_test(tc, rejects_without_address);
	tcase_add_test(tc, rejects_ipv4_and_ipv6);
	tcase_add_test(tc, rejects_without_l4proto);
	tcase_add_test(tc, rejects_port_protocol_without_port);
	tcase_add_test(tc, accepts_udplite_and_gre_without_port);
	tcase_add_test(tc, rejects_port_on_icmp_and_gre);
	tcase_add_test(tc, rejects_attributes_of_another_protocol);
	tcase_add_test(tc, accepts_nat_ports_on_icmp);
	tcase_add_test(tc, rejects_snat_ipv4_in_ipv6_flow);
	tcase_add_test(tc, rejects_dnat_ipv6_in_ipv4_flow);
	tcase_add_test(tc, rejects_incomplete_master);
	tcase_add_test(tc, rejects_master_with_two_families);
	tcase_add_test(tc, rejects_master_port_of_portless_master);
	tcase_add_test(tc, rejects_unterminated_helper);
	suite_add_tcase(s, tc);

	tc = tcase_create("expectations");
	tcase_add_test(tc, roundtrip_expectations);
	tcase_add_test(tc, exp_ports_follow_the_master_protocol);
	tcase_add_test(tc, exp_timeout_only_when_asked);
	tcase_add_test(tc, exp_omits_what_147_cannot_take);
	tcase_add_test(tc, exp_encode_rejects_bad_input_and_never_overflows);
	tcase_add_test(tc, largest_expectation_is_wire_exp_max_len);
	tcase_add_test(tc, exp_rejects_attr_id_21);
	tcase_add_test(tc, exp_rejects_wrong_fixed_sizes);
	tcase_add_test(tc, exp_rejects_fn_nta_len_33);
	tcase_add_test(tc, exp_rejects_missing_tuples);
	tcase_add_test(tc, exp_rejects_mixed_families);
	tcase_add_test(tc, exp_rejects_nat_of_ipv6_and_incomplete_nat);
	tcase_add_test(tc, exp_rejects_ports_of_portless_master);
	suite_add_tcase(s, tc);

	tc = tcase_create("splitter");
	tcase_add_test(tc, split_two_messages_in_one_datagram);
	tcase_add_test(tc, split_zero_length_stops_the_datagram);
	tcase_add_test(tc, split_length_past_the_end_is_bad_size);
	tcase_add_test(tc, split_short_tail_is_truncated);
	tcase_add_test(tc, split_short_control_messages);
	tcase_add_test(tc, split_wrong_version_is_skipped_and_the_next_parsed);
	tcase_add_test(tc, split_reports_bad_headers_as_messages);
	tcase_add_test(tc, split_after_an_error_stays_stopped);
	tcase_add_test(tc, split_stream_partial_message_asks_for_more);
	tcase_add_test(tc, split_stream_reassembles_at_every_cut);
	tcase_add_test(tc, every_reason_has_a_distinct_name_and_counter);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
