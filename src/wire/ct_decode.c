/*
 * ct_decode.c - conntrack message -> struct flow_full: 1.4.7's checks
 * (protocol.md §2.7, §2.11 step 7), then ctsyncd's (wire.h, enum wire_reason).
 */
#include "tlv.h"

#include <string.h>

/* ---- the attribute table ---------------------------------------------- */

/* The protocols an attribute belongs to; checked once the whole message is read. */
enum ct_group {
	G_ANY = 0,
	G_PORTS,                        /* wire_l4_has_ports() */
	G_TCP,
	G_SCTP,
	G_DCCP,
	G_ICMP,                         /* ICMP and ICMPv6 */
};

static const struct tlv_rule ct_attrs[NTA_MAX] = {
	[NTA_IPV4]              = TLV_FIXED("IPV4", NTA_IPV4_SIZE, G_ANY),
	[NTA_IPV6]              = TLV_FIXED("IPV6", NTA_IPV6_SIZE, G_ANY),
	[NTA_L4PROTO]           = TLV_FIXED("L4PROTO", NTA_U8_SIZE, G_ANY),
	[NTA_PORT]              = TLV_FIXED("PORT", NTA_PORT_SIZE, G_PORTS),
	[NTA_TCP_STATE]         = TLV_FIXED("TCP_STATE", NTA_U8_SIZE, G_TCP),
	[NTA_STATUS]            = TLV_FIXED("STATUS", NTA_U32_SIZE, G_ANY),
	[NTA_TIMEOUT]           = TLV_FIXED("TIMEOUT", NTA_U32_SIZE, G_ANY),
	[NTA_MARK]              = TLV_FIXED("MARK", NTA_U32_SIZE, G_ANY),
	[NTA_MASTER_IPV4]       = TLV_FIXED("MASTER_IPV4", NTA_IPV4_SIZE, G_ANY),
	[NTA_MASTER_IPV6]       = TLV_FIXED("MASTER_IPV6", NTA_IPV6_SIZE, G_ANY),
	[NTA_MASTER_L4PROTO]    = TLV_FIXED("MASTER_L4PROTO", NTA_U8_SIZE, G_ANY),
	[NTA_MASTER_PORT]       = TLV_FIXED("MASTER_PORT", NTA_PORT_SIZE, G_ANY),
	[NTA_SNAT_IPV4]         = TLV_FIXED("SNAT_IPV4", NTA_NAT4_SIZE, G_ANY),
	[NTA_DNAT_IPV4]         = TLV_FIXED("DNAT_IPV4", NTA_NAT4_SIZE, G_ANY),
	/*
	 * Not G_PORTS: 1.4.7 decides "port NAT" by comparing raw l4 bytes of
	 * the two directions, for any protocol.  Whether that ever fires for
	 * a non-port protocol is unverified; the NAT ports are not part of
	 * the key, so they are accepted whatever the protocol.
	 */
	[NTA_SPAT_PORT]         = TLV_FIXED("SPAT_PORT", NTA_U16_SIZE, G_ANY),
	[NTA_DPAT_PORT]         = TLV_FIXED("DPAT_PORT", NTA_U16_SIZE, G_ANY),
	[NTA_NAT_SEQ_ADJ]       = TLV_FIXED("NAT_SEQ_ADJ", NTA_NAT_SEQ_SIZE, G_ANY),
	[NTA_SCTP_STATE]        = TLV_FIXED("SCTP_STATE", NTA_U8_SIZE, G_SCTP),
	[NTA_SCTP_VTAG_ORIG]    = TLV_FIXED("SCTP_VTAG_ORIG", NTA_U32_SIZE, G_SCTP),
	[NTA_SCTP_VTAG_REPL]    = TLV_FIXED("SCTP_VTAG_REPL", NTA_U32_SIZE, G_SCTP),
	[NTA_DCCP_STATE]        = TLV_FIXED("DCCP_STATE", NTA_U8_SIZE, G_DCCP),
	[NTA_DCCP_ROLE]         = TLV_FIXED("DCCP_ROLE", NTA_U8_SIZE, G_DCCP),
	[NTA_ICMP_TYPE]         = TLV_FIXED("ICMP_TYPE", NTA_U8_SIZE, G_ICMP),
	[NTA_ICMP_CODE]         = TLV_FIXED("ICMP_CODE", NTA_U8_SIZE, G_ICMP),
	[NTA_ICMP_ID]           = TLV_FIXED("ICMP_ID", NTA_U16_SIZE, G_ICMP),
	[NTA_TCP_WSCALE_ORIG]   = TLV_FIXED("TCP_WSCALE_ORIG", NTA_U8_SIZE, G_TCP),
	[NTA_TCP_WSCALE_REPL]   = TLV_FIXED("TCP_WSCALE_REPL", NTA_U8_SIZE, G_TCP),
	[NTA_HELPER_NAME]       = TLV_UPTO("HELPER_NAME", NTA_HELPER_LEN_MAX, G_ANY),
	[NTA_LABELS]            = TLV_UPTO("LABELS", NTA_LABELS_LEN_MAX, G_ANY),
	[NTA_SNAT_IPV6]         = TLV_FIXED("SNAT_IPV6", NTA_NAT6_SIZE, G_ANY),
	[NTA_DNAT_IPV6]         = TLV_FIXED("DNAT_IPV6", NTA_NAT6_SIZE, G_ANY),
	[NTA_SYNPROXY]          = TLV_FIXED("SYNPROXY", NTA_SYNPROXY_SIZE, G_ANY),
	[NTA_ZONE]              = TLV_FIXED("ZONE", NTA_U16_SIZE, G_ANY),
};

const char *wire_ct_attr_name(uint16_t id)
{
	return id < NTA_MAX ? ct_attrs[id].name : "?";
}

#define SEEN(id)        (UINT64_C(1) << (id))

/*
 * The attributes of each group, as SEEN() bits, built from the table once
 * at start-up, so that a message's protocol is checked against all of its
 * attributes in one step instead of one table look-up per attribute.
 */
static uint64_t group_attrs[G_ICMP + 1];

__attribute__((constructor)) static void build_group_attrs(void)
{
	for (unsigned id = 0; id < NTA_MAX; id++)
		group_attrs[ct_attrs[id].group] |= SEEN(id);
}

/* The attributes a message of protocol `l4proto` may carry. */
static uint64_t attrs_allowed(uint8_t l4proto)
{
	uint64_t ok = group_attrs[G_ANY];

	if (wire_l4_has_ports(l4proto))
		ok |= group_attrs[G_PORTS];
	if (l4proto == L4_TCP)
		ok |= group_attrs[G_TCP];
	else if (l4proto == L4_SCTP)
		ok |= group_attrs[G_SCTP];
	else if (l4proto == L4_DCCP)
		ok |= group_attrs[G_DCCP];
	else if (l4proto == L4_ICMP || l4proto == L4_ICMPV6)
		ok |= group_attrs[G_ICMP];
	return ok;
}

static uint32_t be32_at(const uint8_t *v, int i)
{
	return tlv_be32(v + 4 * i);
}

static void get_labels(struct flow_full *ff, const struct tlv *a)
{
	struct flow_labels *l = &ff->labels;
	unsigned n = a->n / 4;

	/* 1.4.7 silently ignores an empty or ragged label array (protocol.md §2.7). */
	if (a->n == 0 || a->n % 4)
		return;
	memset(l->w, 0, sizeof(l->w));
	for (unsigned i = 0; i < n; i++)
		l->w[i] = be32_at(a->v, (int)i);
	while (n > 0 && l->w[n - 1] == 0)
		n--;
	l->words = (uint16_t)n;
	if (n) {
		ff->flow.attrs |= FLOW_A_LABELS;
		ff->flow.attrs &= ~FLOW_A_LABELS_GONE;
	} else {
		/* All zero: the sender's state lost its labels (FLOW_A_LABELS_GONE). */
		ff->flow.attrs &= ~FLOW_A_LABELS;
		ff->flow.attrs |= FLOW_A_LABELS_GONE;
	}
}

/* Store one attribute; duplicates overwrite, as in 1.4.7.  Returns a reason. */
static enum wire_reason get_attr(struct flow_full *ff, const struct tlv *a)
{
	struct flow *f = &ff->flow;
	struct flow_ext *x = &ff->ext;
	const uint8_t *v = a->v;

	switch (a->id) {
	case NTA_IPV4:
		tlv_get_addr4(&f->orig.src, &f->orig.dst, v);
		f->orig.family = AF_INET;
		break;
	case NTA_IPV6:
		tlv_get_addr6(&f->orig.src, &f->orig.dst, v);
		f->orig.family = AF_INET6;
		break;
	case NTA_L4PROTO:
		f->orig.l4proto = v[0];
		break;
	case NTA_PORT:
		memcpy(&f->orig.l4.port.sport, v, 2);
		memcpy(&f->orig.l4.port.dport, v + 2, 2);
		f->attrs |= FLOW_A_PORTS;
		break;
	case NTA_TCP_STATE:
	case NTA_SCTP_STATE:
	case NTA_DCCP_STATE:
		f->proto_state = v[0];
		f->attrs |= FLOW_A_PROTO_STATE;
		break;
	case NTA_STATUS:
		f->status = tlv_be32(v);
		f->attrs |= FLOW_A_STATUS;
		break;
	case NTA_TIMEOUT:
		f->timeout = tlv_be32(v);
		f->attrs |= FLOW_A_TIMEOUT;
		break;
	case NTA_MARK:
		f->mark = tlv_be32(v);
		f->attrs |= FLOW_A_MARK;
		break;
	case NTA_MASTER_IPV4:
		tlv_get_addr4(&x->master.src, &x->master.dst, v);
		x->master.family = AF_INET;
		break;
	case NTA_MASTER_IPV6:
		tlv_get_addr6(&x->master.src, &x->master.dst, v);
		x->master.family = AF_INET6;
		break;
	case NTA_MASTER_L4PROTO:
		x->master.l4proto = v[0];
		break;
	case NTA_MASTER_PORT:
		memcpy(&x->master.l4.port.sport, v, 2);
		memcpy(&x->master.l4.port.dport, v + 2, 2);
		break;
	case NTA_SNAT_IPV4:
		memset(&x->snat, 0, sizeof(x->snat));
		memcpy(&x->snat.v4, v, 4);
		f->attrs |= FLOW_A_SNAT;
		break;
	case NTA_SNAT_IPV6:
		memcpy(x->snat.bytes, v, 16);
		f->attrs |= FLOW_A_SNAT;
		break;
	case NTA_DNAT_IPV4:
		memset(&x->dnat, 0, sizeof(x->dnat));
		memcpy(&x->dnat.v4, v, 4);
		f->attrs |= FLOW_A_DNAT;
		break;
	case NTA_DNAT_IPV6:
		memcpy(x->dnat.bytes, v, 16);
		f->attrs |= FLOW_A_DNAT;
		break;
	case NTA_SPAT_PORT:
		x->spat = tlv_swapped16(v);
		f->attrs |= FLOW_A_SPAT;
		break;
	case NTA_DPAT_PORT:
		x->dpat = tlv_swapped16(v);
		f->attrs |= FLOW_A_DPAT;
		break;
	case NTA_NAT_SEQ_ADJ:
		for (int i = 0; i < 6; i++)
			x->nat_seq[i] = be32_at(v, i);
		f->attrs |= FLOW_A_NAT_SEQ;
		break;
	case NTA_SCTP_VTAG_ORIG:
		x->sctp_vtag_orig = tlv_be32(v);
		f->attrs |= FLOW_A_SCTP_VTAGS;
		break;
	case NTA_SCTP_VTAG_REPL:
		x->sctp_vtag_repl = tlv_be32(v);
		f->attrs |= FLOW_A_SCTP_VTAGS;
		break;
	case NTA_DCCP_ROLE:
		f->dccp_role = v[0];
		f->attrs |= FLOW_A_DCCP_ROLE;
		break;
	case NTA_ICMP_TYPE:
		f->orig.l4.icmp.type = v[0];
		f->attrs |= FLOW_A_ICMP;
		break;
	case NTA_ICMP_CODE:
		f->orig.l4.icmp.code = v[0];
		f->attrs |= FLOW_A_ICMP;
		break;
	case NTA_ICMP_ID:
		f->orig.l4.icmp.id = tlv_swapped16(v);
		f->attrs |= FLOW_A_ICMP;
		break;
	case NTA_TCP_WSCALE_ORIG:
		f->wscale_orig = v[0];
		f->attrs |= FLOW_A_WSCALE;
		break;
	case NTA_TCP_WSCALE_REPL:
		f->wscale_repl = v[0];
		f->attrs |= FLOW_A_WSCALE;
		break;
	case NTA_HELPER_NAME:
		if (!tlv_get_name(x->helper, sizeof(x->helper), a))
			return WIRE_R_STRING_UNTERMINATED;
		if (x->helper[0])
			f->attrs |= FLOW_A_HELPER;
		else
			f->attrs &= ~FLOW_A_HELPER;
		break;
	case NTA_LABELS:
		get_labels(ff, a);
		break;
	case NTA_SYNPROXY:
		for (int i = 0; i < 3; i++)
			x->synproxy[i] = be32_at(v, i);
		f->attrs |= FLOW_A_SYNPROXY;
		/* Current kernels report zeros for every flow: keep those inline (flow.h). */
		if (x->synproxy[0] | x->synproxy[1] | x->synproxy[2])
			f->attrs |= FLOW_A_SYNPROXY_EXT;
		else
			f->attrs &= ~FLOW_A_SYNPROXY_EXT;
		break;
	case NTA_ZONE:
		f->orig.zone = tlv_be16(v);
		f->attrs |= FLOW_A_ZONE;
		break;
	}
	return WIRE_OK;
}

/*
 * What 1.4.7 does not check but a table needs: one family, a protocol,
 * the ports of a port protocol, no attribute of another protocol, NAT
 * addresses of the flow's family, a whole master.
 */
static enum wire_reason check_ct(struct flow_full *ff, uint64_t seen)
{
	const uint64_t masters = SEEN(NTA_MASTER_IPV4) | SEEN(NTA_MASTER_IPV6) |
				 SEEN(NTA_MASTER_L4PROTO) | SEEN(NTA_MASTER_PORT);
	const uint64_t nat4 = SEEN(NTA_SNAT_IPV4) | SEEN(NTA_DNAT_IPV4);
	const uint64_t nat6 = SEEN(NTA_SNAT_IPV6) | SEEN(NTA_DNAT_IPV6);
	struct flow *f = &ff->flow;
	uint8_t p = f->orig.l4proto;

	if ((seen & SEEN(NTA_IPV4)) && (seen & SEEN(NTA_IPV6)))
		return WIRE_R_TWO_FAMILIES;
	if (!(seen & (SEEN(NTA_IPV4) | SEEN(NTA_IPV6))))
		return WIRE_R_NO_ADDRESS;
	if (!(seen & SEEN(NTA_L4PROTO)))
		return WIRE_R_NO_L4PROTO;
	if (seen & ~attrs_allowed(p))
		return WIRE_R_PROTO_MISMATCH;
	/* UDPlite is not here: 1.4.7 never sends its ports (protocol.md §2.7). */
	if (l4_ports_sent_by_147(p) && !(seen & SEEN(NTA_PORT)))
		return WIRE_R_NO_PORTS;
	if (seen & (f->orig.family == AF_INET ? nat6 : nat4))
		return WIRE_R_NAT_FAMILY;
	if (seen & masters) {
		struct flow_tuple *m = &ff->ext.master;

		if ((seen & SEEN(NTA_MASTER_IPV4)) && (seen & SEEN(NTA_MASTER_IPV6)))
			return WIRE_R_MASTER_TWO_FAMILIES;
		if (!(seen & (SEEN(NTA_MASTER_IPV4) | SEEN(NTA_MASTER_IPV6))) ||
		    !(seen & SEEN(NTA_MASTER_L4PROTO)))
			return WIRE_R_MASTER_INCOMPLETE;
		if ((seen & SEEN(NTA_MASTER_PORT)) && !wire_l4_has_ports(m->l4proto))
			return WIRE_R_PROTO_MISMATCH;
		f->attrs |= FLOW_A_MASTER;
	}
	return WIRE_OK;
}

enum wire_reason wire_ct_decode(const void *msg, size_t len, struct flow_full *out)
{
	const uint8_t *p = msg;
	struct tlv_in in;
	struct tlv a;
	uint64_t seen = 0;
	int ret;

	if (len < WIRE_HDR_LEN)
		return WIRE_R_BAD_SIZE;
	if (!wire_type_is_ct(p[WIRE_OFF_VERTYPE] & 0x0f))
		return WIRE_R_BAD_TYPE;
	memset(&out->flow, 0, sizeof(out->flow));
	memset(&out->ext, 0, sizeof(out->ext));
	memset(&out->counters, 0, sizeof(out->counters));
	out->labels.words = 0;
	tlv_in_init(&in, msg, len, ct_attrs, NTA_MAX);
	while ((ret = tlv_next(&in, &a)) > 0) {
		enum wire_reason r = get_attr(out, &a);

		if (r != WIRE_OK)
			return r;
		seen |= SEEN(a.id);
	}
	if (ret < 0)
		return (enum wire_reason)-ret;
	return check_ct(out, seen);
}
