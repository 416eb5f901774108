/*
 * exp.c - expectation messages (EXP_NEW, EXP_UPD, EXP_DEL) <->
 * struct flow_exp (protocol.md §2.10, §2.11 step 7).
 */
#include "tlv.h"

#include <errno.h>
#include <string.h>

/*
 * Ids 0..11 are three tuples of four attributes each, in the same order:
 * IPV4, IPV6, L4PROTO, PORT.  The group of an attribute is its tuple.
 */
enum exp_group {
	E_MASTER = 0,
	E_TUPLE,
	E_MASK,
	E_NAT,
	E_OTHER,
};

enum { ROLE_IPV4, ROLE_IPV6, ROLE_L4PROTO, ROLE_PORT };

_Static_assert(WIRE_HDR_LEN + WIRE_EXP_TUPLES_SPACE(NTA_IPV4_SIZE) + 3 * WIRE_TLV_SPACE(NTA_U32_SIZE) +
	       WIRE_EXP_NAT_SPACE + NTA_HELPER_LEN_MAX + NTA_EXP_FN_LEN_MAX <= WIRE_EXP_MAX_LEN,
	       "an IPv4 expectation with NAT must fit in WIRE_EXP_MAX_LEN");

static const struct tlv_rule exp_attrs[NTA_EXP_MAX] = {
	[NTA_EXP_MASTER_IPV4]   = TLV_FIXED("MASTER_IPV4", NTA_IPV4_SIZE, E_MASTER),
	[NTA_EXP_MASTER_IPV6]   = TLV_FIXED("MASTER_IPV6", NTA_IPV6_SIZE, E_MASTER),
	[NTA_EXP_MASTER_L4PROTO] = TLV_FIXED("MASTER_L4PROTO", NTA_U8_SIZE, E_MASTER),
	[NTA_EXP_MASTER_PORT]   = TLV_FIXED("MASTER_PORT", NTA_PORT_SIZE, E_MASTER),
	[NTA_EXP_EXPECT_IPV4]   = TLV_FIXED("EXPECT_IPV4", NTA_IPV4_SIZE, E_TUPLE),
	[NTA_EXP_EXPECT_IPV6]   = TLV_FIXED("EXPECT_IPV6", NTA_IPV6_SIZE, E_TUPLE),
	[NTA_EXP_EXPECT_L4PROTO] = TLV_FIXED("EXPECT_L4PROTO", NTA_U8_SIZE, E_TUPLE),
	[NTA_EXP_EXPECT_PORT]   = TLV_FIXED("EXPECT_PORT", NTA_PORT_SIZE, E_TUPLE),
	[NTA_EXP_MASK_IPV4]     = TLV_FIXED("MASK_IPV4", NTA_IPV4_SIZE, E_MASK),
	[NTA_EXP_MASK_IPV6]     = TLV_FIXED("MASK_IPV6", NTA_IPV6_SIZE, E_MASK),
	[NTA_EXP_MASK_L4PROTO]  = TLV_FIXED("MASK_L4PROTO", NTA_U8_SIZE, E_MASK),
	[NTA_EXP_MASK_PORT]     = TLV_FIXED("MASK_PORT", NTA_PORT_SIZE, E_MASK),
	[NTA_EXP_TIMEOUT]       = TLV_FIXED("TIMEOUT", NTA_U32_SIZE, E_OTHER),
	[NTA_EXP_FLAGS]         = TLV_FIXED("FLAGS", NTA_U32_SIZE, E_OTHER),
	[NTA_EXP_CLASS]         = TLV_FIXED("CLASS", NTA_U32_SIZE, E_OTHER),
	[NTA_EXP_NAT_IPV4]      = TLV_FIXED("NAT_IPV4", NTA_IPV4_SIZE, E_NAT),
	[NTA_EXP_NAT_PORT]      = TLV_FIXED("NAT_PORT", NTA_PORT_SIZE, E_NAT),
	[NTA_EXP_NAT_L4PROTO]   = TLV_FIXED("NAT_L4PROTO", NTA_U8_SIZE, E_NAT),
	[NTA_EXP_NAT_DIR]       = TLV_FIXED("NAT_DIR", NTA_U32_SIZE, E_NAT),
	[NTA_EXP_HELPER_NAME]   = TLV_UPTO("HELPER_NAME", NTA_HELPER_LEN_MAX, E_OTHER),
	[NTA_EXP_FN]            = TLV_UPTO("FN", NTA_EXP_FN_LEN_MAX, E_OTHER),
};

const char *wire_exp_attr_name(uint16_t id)
{
	return id < NTA_EXP_MAX ? exp_attrs[id].name : "?";
}

/* ---- encoding ------------------------------------------------------------ */

/*
 * 1.4.7 uses one port builder for all four tuples, and runs it only when
 * the *master's* protocol has ports (protocol.md §2.10).
 */
static bool exp_sends_ports(const struct flow_exp *e, unsigned opts, unsigned *omit)
{
	uint8_t p = e->master.l4proto;

	if (l4_ports_sent_by_147(p))
		return true;
	if (p != L4_UDPLITE)
		return false;
	if (opts & WIRE_ENC_UDPLITE_PORTS)
		return true;
	*omit |= WIRE_OMIT_PORTS;
	return false;
}

static void put_tuple(struct tlv_out *o, uint16_t base, const struct flow_tuple *t, bool ports)
{
	tlv_put_addrs(o, base + ROLE_IPV4, base + ROLE_IPV6, t);
	tlv_put_u8(o, base + ROLE_L4PROTO, t->l4proto);
	if (ports)
		tlv_put_ports(o, base + ROLE_PORT, &t->l4);
}

static void put_nat(struct tlv_out *o, const struct flow_exp *e, bool ports)
{
	uint8_t b[NTA_IPV4_SIZE];

	memcpy(b, &e->nat.src.v4, 4);
	memcpy(b + 4, &e->nat.dst.v4, 4);
	tlv_put(o, NTA_EXP_NAT_IPV4, b, sizeof(b));
	tlv_put_u8(o, NTA_EXP_NAT_L4PROTO, e->nat.l4proto);
	if (ports)
		tlv_put_ports(o, NTA_EXP_NAT_PORT, &e->nat.l4);
	tlv_put_be32(o, NTA_EXP_NAT_DIR, e->nat_dir);
}

static bool exp_family_ok(const struct flow_exp *e)
{
	uint8_t fam = e->master.family;

	return (fam == AF_INET || fam == AF_INET6) && e->tuple.family == fam && e->mask.family == fam;
}

/* Every attribute, in 1.4.7's emission order (protocol.md §2.10). */
static int put_exp(struct tlv_out *o, const struct flow_exp *e, unsigned opts, unsigned *omit)
{
	bool ports;

	*omit = 0;
	if (!exp_family_ok(e))
		return -EINVAL;
	ports = exp_sends_ports(e, opts, omit);
	put_tuple(o, NTA_EXP_MASTER_IPV4, &e->master, ports);
	put_tuple(o, NTA_EXP_EXPECT_IPV4, &e->tuple, ports);
	put_tuple(o, NTA_EXP_MASK_IPV4, &e->mask, ports);
	if ((e->attrs & FLOW_EXP_A_TIMEOUT) && (opts & WIRE_ENC_TIMEOUT))
		tlv_put_be32(o, NTA_EXP_TIMEOUT, e->timeout);
	tlv_put_be32(o, NTA_EXP_FLAGS, e->flags);
	if (e->attrs & FLOW_EXP_A_CLASS)
		tlv_put_be32(o, NTA_EXP_CLASS, e->class);
	if (e->attrs & FLOW_EXP_A_NAT) {
		/* 1.4.7 has no IPv6 NAT tuple for expectations (protocol.md §2.10, §8). */
		if (e->master.family == AF_INET)
			put_nat(o, e, ports);
		else
			*omit |= WIRE_OMIT_EXP_NAT;
	}
	if ((e->attrs & FLOW_EXP_A_HELPER) && e->helper[0] &&
	    !tlv_put_name(o, NTA_EXP_HELPER_NAME, e->helper, sizeof(e->helper), NTA_HELPER_LEN_MAX))
		*omit |= WIRE_OMIT_HELPER;
	if ((e->attrs & FLOW_EXP_A_FN) && e->fn[0] &&
	    !tlv_put_name(o, NTA_EXP_FN, e->fn, sizeof(e->fn), NTA_EXP_FN_LEN_MAX))
		*omit |= WIRE_OMIT_EXP_FN;
	return 0;
}

int wire_exp_encode(void *buf, size_t cap, const struct wire_hdr *h, const struct flow_exp *e,
		    unsigned opts, unsigned *omitted)
{
	struct tlv_out o;
	unsigned omit;
	int ret;

	if (!wire_type_is_exp(h->type) || (h->flags & ~WIRE_F_HELLO_MASK))
		return -EINVAL;
	tlv_out_init(&o, buf, cap);
	ret = put_exp(&o, e, opts, &omit);
	if (ret < 0)
		return ret;
	if (omitted)
		*omitted = omit;
	return tlv_out_finish(&o, h);
}

int wire_exp_size(const struct flow_exp *e, unsigned opts)
{
	static const struct wire_hdr h = { .type = WIRE_T_EXP_NEW };
	struct tlv_out o;
	unsigned omit;
	int ret;

	tlv_out_init(&o, NULL, 0);
	ret = put_exp(&o, e, opts, &omit);
	return ret < 0 ? ret : tlv_out_finish(&o, &h);
}

/* ---- decoding ------------------------------------------------------------ */

#define SEEN(id)        (UINT32_C(1) << (id))

static enum wire_reason get_name(char *dst, size_t size, uint32_t *attrs, uint32_t bit,
				 const struct tlv *a)
{
	if (!tlv_get_name(dst, size, a))
		return WIRE_R_STRING_UNTERMINATED;
	if (dst[0])
		*attrs |= bit;
	else
		*attrs &= ~bit;
	return WIRE_OK;
}

/* One attribute of the master, expected or mask tuple (ids 0..11). */
static void get_tuple_attr(struct flow_tuple *t, unsigned role, const uint8_t *v)
{
	switch (role) {
	case ROLE_IPV4:
		tlv_get_addr4(&t->src, &t->dst, v);
		t->family = AF_INET;
		break;
	case ROLE_IPV6:
		tlv_get_addr6(&t->src, &t->dst, v);
		t->family = AF_INET6;
		break;
	case ROLE_L4PROTO:
		t->l4proto = v[0];
		break;
	case ROLE_PORT:
		memcpy(&t->l4.port.sport, v, 2);
		memcpy(&t->l4.port.dport, v + 2, 2);
		break;
	}
}

static enum wire_reason get_attr(struct flow_exp *e, const struct tlv *a)
{
	struct flow_tuple *tuples[] = { &e->master, &e->tuple, &e->mask };
	const uint8_t *v = a->v;

	if (a->id <= NTA_EXP_MASK_PORT) {
		get_tuple_attr(tuples[a->id / 4], a->id % 4, v);
		return WIRE_OK;
	}
	switch (a->id) {
	case NTA_EXP_TIMEOUT:
		e->timeout = tlv_be32(v);
		e->attrs |= FLOW_EXP_A_TIMEOUT;
		break;
	case NTA_EXP_FLAGS:
		e->flags = tlv_be32(v);
		break;
	case NTA_EXP_CLASS:
		e->class = tlv_be32(v);
		e->attrs |= FLOW_EXP_A_CLASS;
		break;
	case NTA_EXP_NAT_IPV4:
		tlv_get_addr4(&e->nat.src, &e->nat.dst, v);
		e->nat.family = AF_INET;
		e->attrs |= FLOW_EXP_A_NAT;
		break;
	case NTA_EXP_NAT_PORT:
		get_tuple_attr(&e->nat, ROLE_PORT, v);
		break;
	case NTA_EXP_NAT_L4PROTO:
		e->nat.l4proto = v[0];
		break;
	case NTA_EXP_NAT_DIR:
		e->nat_dir = tlv_be32(v);
		break;
	case NTA_EXP_HELPER_NAME:
		return get_name(e->helper, sizeof(e->helper), &e->attrs, FLOW_EXP_A_HELPER, a);
	case NTA_EXP_FN:
		return get_name(e->fn, sizeof(e->fn), &e->attrs, FLOW_EXP_A_FN, a);
	}
	return WIRE_OK;
}

/* Does the message hold a whole tuple starting at id `base`? */
static enum wire_reason check_tuple(uint32_t seen, uint16_t base, enum wire_reason missing)
{
	uint32_t v4 = SEEN(base + ROLE_IPV4), v6 = SEEN(base + ROLE_IPV6);

	if ((seen & v4) && (seen & v6))
		return WIRE_R_TWO_FAMILIES;
	if (!(seen & (v4 | v6)) || !(seen & SEEN(base + ROLE_L4PROTO)))
		return missing;
	return WIRE_OK;
}

/* What 1.4.7 does not check but a table and the kernel need (wire.h). */
static enum wire_reason check_exp(const struct flow_exp *e, uint32_t seen)
{
	const uint32_t ports = SEEN(NTA_EXP_MASTER_PORT) | SEEN(NTA_EXP_EXPECT_PORT) |
			       SEEN(NTA_EXP_MASK_PORT) | SEEN(NTA_EXP_NAT_PORT);
	const uint32_t nat_rest = SEEN(NTA_EXP_NAT_PORT) | SEEN(NTA_EXP_NAT_L4PROTO) |
				  SEEN(NTA_EXP_NAT_DIR);
	enum wire_reason r;

	if ((r = check_tuple(seen, NTA_EXP_MASTER_IPV4, WIRE_R_EXP_NO_MASTER)) ||
	    (r = check_tuple(seen, NTA_EXP_EXPECT_IPV4, WIRE_R_EXP_NO_TUPLE)) ||
	    (r = check_tuple(seen, NTA_EXP_MASK_IPV4, WIRE_R_EXP_NO_MASK)))
		return r;
	if (e->tuple.family != e->master.family || e->mask.family != e->master.family)
		return WIRE_R_EXP_FAMILY_MISMATCH;
	if ((seen & ports) && !wire_l4_has_ports(e->master.l4proto))
		return WIRE_R_PROTO_MISMATCH;
	if ((seen & nat_rest) && !(seen & SEEN(NTA_EXP_NAT_IPV4)))
		return WIRE_R_EXP_NAT_INCOMPLETE;
	if ((seen & SEEN(NTA_EXP_NAT_IPV4)) && e->master.family != AF_INET)
		return WIRE_R_NAT_FAMILY;
	return WIRE_OK;
}

enum wire_reason wire_exp_decode(const void *msg, size_t len, struct flow_exp *out)
{
	const uint8_t *p = msg;
	struct tlv_in in;
	struct tlv a;
	uint32_t seen = 0;
	int ret;

	if (len < WIRE_HDR_LEN)
		return WIRE_R_BAD_SIZE;
	if (!wire_type_is_exp(p[WIRE_OFF_VERTYPE] & 0x0f))
		return WIRE_R_BAD_TYPE;
	memset(out, 0, sizeof(*out));
	tlv_in_init(&in, msg, len, exp_attrs, NTA_EXP_MAX);
	while ((ret = tlv_next(&in, &a)) > 0) {
		enum wire_reason r = get_attr(out, &a);

		if (r != WIRE_OK)
			return r;
		seen |= SEEN(a.id);
	}
	if (ret < 0)
		return (enum wire_reason)-ret;
	return check_exp(out, seen);
}
