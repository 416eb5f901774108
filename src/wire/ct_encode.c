/*
 * ct_encode.c - struct flow_full -> conntrack message (CT_NEW, CT_UPD,
 * CT_DEL), in 1.4.7's order and with its quirks (protocol.md §2.7).
 */
#include "tlv.h"

#include <errno.h>
#include <string.h>

static void put_ports_of(struct tlv_out *o, const struct flow *f, unsigned opts, unsigned *omit)
{
	uint8_t p = f->orig.l4proto;

	/* 1.4.7 sends PORT for these four whether or not the state is known. */
	if (l4_ports_sent_by_147(p))
		tlv_put_ports(o, NTA_PORT, &f->orig.l4);
	else if (p == L4_UDPLITE && (f->attrs & FLOW_A_PORTS)) {
		if (opts & WIRE_ENC_UDPLITE_PORTS)
			tlv_put_ports(o, NTA_PORT, &f->orig.l4);
		else
			*omit |= WIRE_OMIT_PORTS;
	}
}

static void put_icmp(struct tlv_out *o, const struct flow *f)
{
	if (f->attrs & FLOW_A_ICMP) {
		tlv_put_u8(o, NTA_ICMP_TYPE, f->orig.l4.icmp.type);
		tlv_put_u8(o, NTA_ICMP_CODE, f->orig.l4.icmp.code);
		tlv_put_swapped16(o, NTA_ICMP_ID, f->orig.l4.icmp.id);
	}
}

/* The per-protocol group, in 1.4.7's order (protocol.md §2.7). */
static void put_proto(struct tlv_out *o, const struct flow_full *ff, unsigned opts, unsigned *omit)
{
	const struct flow *f = &ff->flow;
	uint32_t a = f->attrs;

	put_ports_of(o, f, opts, omit);
	switch (f->orig.l4proto) {
	case L4_TCP:
		if (a & FLOW_A_PROTO_STATE)
			tlv_put_u8(o, NTA_TCP_STATE, f->proto_state);
		if ((a & FLOW_A_WSCALE) && (opts & WIRE_ENC_WSCALE)) {
			tlv_put_u8(o, NTA_TCP_WSCALE_ORIG, f->wscale_orig);
			tlv_put_u8(o, NTA_TCP_WSCALE_REPL, f->wscale_repl);
		}
		break;
	case L4_SCTP:
		if (a & FLOW_A_PROTO_STATE)
			tlv_put_u8(o, NTA_SCTP_STATE, f->proto_state);
		if (a & FLOW_A_SCTP_VTAGS) {
			tlv_put_be32(o, NTA_SCTP_VTAG_ORIG, ff->ext.sctp_vtag_orig);
			tlv_put_be32(o, NTA_SCTP_VTAG_REPL, ff->ext.sctp_vtag_repl);
		}
		break;
	case L4_DCCP:
		if (a & FLOW_A_PROTO_STATE)
			tlv_put_u8(o, NTA_DCCP_STATE, f->proto_state);
		if (a & FLOW_A_DCCP_ROLE)
			tlv_put_u8(o, NTA_DCCP_ROLE, f->dccp_role);
		break;
	case L4_ICMP:
	case L4_ICMPV6:
		put_icmp(o, f);
		break;
	}
}

/* What names the state besides its addresses: ports, or ICMP's id, type and code. */
static void put_key_l4(struct tlv_out *o, const struct flow *f, unsigned opts, unsigned *omit)
{
	put_ports_of(o, f, opts, omit);
	if (f->orig.l4proto == L4_ICMP || f->orig.l4proto == L4_ICMPV6)
		put_icmp(o, f);
}

static void put_master(struct tlv_out *o, const struct flow_tuple *m, unsigned opts, unsigned *omit)
{
	tlv_put_addrs(o, NTA_MASTER_IPV4, NTA_MASTER_IPV6, m);
	tlv_put_u8(o, NTA_MASTER_L4PROTO, m->l4proto);
	if (l4_ports_sent_by_147(m->l4proto) ||
	    (m->l4proto == L4_UDPLITE && (opts & WIRE_ENC_UDPLITE_PORTS)))
		tlv_put_ports(o, NTA_MASTER_PORT, &m->l4);
	else if (m->l4proto == L4_UDPLITE)
		*omit |= WIRE_OMIT_PORTS;
}

static void put_nat(struct tlv_out *o, const struct flow_full *ff)
{
	const struct flow_ext *x = &ff->ext;
	uint32_t a = ff->flow.attrs;
	bool v4 = ff->flow.orig.family == AF_INET;

	/* Addresses raw, as 1.4.7 sends them since it fixed their byte order (protocol.md §2.14). */
	if (a & FLOW_A_SNAT) {
		if (v4)
			tlv_put(o, NTA_SNAT_IPV4, &x->snat.v4, NTA_NAT4_SIZE);
		else
			tlv_put(o, NTA_SNAT_IPV6, x->snat.bytes, NTA_NAT6_SIZE);
	}
	if (a & FLOW_A_DNAT) {
		if (v4)
			tlv_put(o, NTA_DNAT_IPV4, &x->dnat.v4, NTA_NAT4_SIZE);
		else
			tlv_put(o, NTA_DNAT_IPV6, x->dnat.bytes, NTA_NAT6_SIZE);
	}
	/* ...but ports byte-swapped, still (protocol.md §2.7: port 4000 -> a0 0f). */
	if (a & FLOW_A_SPAT)
		tlv_put_swapped16(o, NTA_SPAT_PORT, x->spat);
	if (a & FLOW_A_DPAT)
		tlv_put_swapped16(o, NTA_DPAT_PORT, x->dpat);
	if (a & FLOW_A_NAT_SEQ) {
		uint8_t b[NTA_NAT_SEQ_SIZE];

		for (int i = 0; i < 6; i++) {
			uint32_t v = x->nat_seq[i];

			b[4 * i] = (uint8_t)(v >> 24);
			b[4 * i + 1] = (uint8_t)(v >> 16);
			b[4 * i + 2] = (uint8_t)(v >> 8);
			b[4 * i + 3] = (uint8_t)v;
		}
		tlv_put(o, NTA_NAT_SEQ_ADJ, b, sizeof(b));
	}
}

/*
 * 1.4.7 sends as many words as the highest set bit needs (protocol.md §2.7); so do we,
 * whatever labels.words says, and nothing when no bit is set.
 */
static void put_labels(struct tlv_out *o, const struct flow_labels *l)
{
	uint8_t b[NTA_LABELS_WORDS_MAX * 4];
	unsigned n = l->words < NTA_LABELS_WORDS_MAX ? l->words : NTA_LABELS_WORDS_MAX;

	while (n > 0 && l->w[n - 1] == 0)
		n--;
	if (n == 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		b[4 * i] = (uint8_t)(l->w[i] >> 24);
		b[4 * i + 1] = (uint8_t)(l->w[i] >> 16);
		b[4 * i + 2] = (uint8_t)(l->w[i] >> 8);
		b[4 * i + 3] = (uint8_t)l->w[i];
	}
	tlv_put(o, NTA_LABELS, b, 4 * n);
}

static void put_synproxy(struct tlv_out *o, const struct flow_full *ff)
{
	const uint32_t *v = ff->ext.synproxy;
	uint8_t b[NTA_SYNPROXY_SIZE];

	for (int i = 0; i < 3; i++) {
		b[4 * i] = (uint8_t)(v[i] >> 24);
		b[4 * i + 1] = (uint8_t)(v[i] >> 16);
		b[4 * i + 2] = (uint8_t)(v[i] >> 8);
		b[4 * i + 3] = (uint8_t)v[i];
	}
	tlv_put(o, NTA_SYNPROXY, b, sizeof(b));
}

static bool family_ok(uint8_t family)
{
	return family == AF_INET || family == AF_INET6;
}

/* Every attribute, in 1.4.7's emission order (protocol.md §2.7). */
static int put_ct(struct tlv_out *o, const struct flow_full *ff, unsigned opts, unsigned *omit)
{
	const struct flow *f = &ff->flow;
	uint32_t a = f->attrs;

	*omit = 0;
	if (!family_ok(f->orig.family) || ((a & FLOW_A_MASTER) && !family_ok(ff->ext.master.family)))
		return -EINVAL;
	tlv_put_addrs(o, NTA_IPV4, NTA_IPV6, &f->orig);
	if (opts & WIRE_ENC_KEY_ONLY) {
		tlv_put_u8(o, NTA_L4PROTO, f->orig.l4proto);
		put_key_l4(o, f, opts, omit);
		if (a & FLOW_A_ZONE)
			tlv_put_be16(o, NTA_ZONE, f->orig.zone);
		return 0;
	}
	if (a & FLOW_A_STATUS)
		tlv_put_be32(o, NTA_STATUS, f->status);
	tlv_put_u8(o, NTA_L4PROTO, f->orig.l4proto);
	put_proto(o, ff, opts, omit);
	/* 1.4.7 leaves the timeout out when CommitTimeout is set: the caller knows. */
	if ((a & FLOW_A_TIMEOUT) && (opts & WIRE_ENC_TIMEOUT))
		tlv_put_be32(o, NTA_TIMEOUT, f->timeout);
	if (a & FLOW_A_MARK)
		tlv_put_be32(o, NTA_MARK, f->mark);
	if (a & FLOW_A_MASTER)
		put_master(o, &ff->ext.master, opts, omit);
	put_nat(o, ff);
	/*
	 * 1.4.7 rejects the whole message for a name over 11 chars (protocol.md §2.7), so
	 * the flow goes without its helper and the caller is told.
	 */
	if ((a & FLOW_A_HELPER) && ff->ext.helper[0] &&
	    !tlv_put_name(o, NTA_HELPER_NAME, ff->ext.helper, sizeof(ff->ext.helper),
			  NTA_HELPER_LEN_MAX))
		*omit |= WIRE_OMIT_HELPER;
	if (a & FLOW_A_LABELS) {
		put_labels(o, &ff->labels);
	} else if (a & FLOW_A_LABELS_GONE) {
		static const uint8_t none[4];

		tlv_put(o, NTA_LABELS, none, sizeof(none));
	}
	/*
	 * Current kernels report a synproxy extension on every state, zeros
	 * unless the SYNPROXY target set it up, and 1.4.7 sends those 16
	 * bytes every time (a fifth of a TCP state's message).  The kernel
	 * gives every state it creates from netlink a zeroed extension, and
	 * the values of a live state never go back to zero, so leaving zeros
	 * out changes nothing on either receiver: a NEW replaces what it
	 * had, an UPD keeps it.  1.4.7 accepts a message without it, as it
	 * must from kernels that have no synproxy.
	 */
	if (a & FLOW_A_SYNPROXY_EXT)
		put_synproxy(o, ff);
	if (a & FLOW_A_ZONE)
		tlv_put_be16(o, NTA_ZONE, f->orig.zone);
	return 0;
}

int wire_ct_encode(void *buf, size_t cap, const struct wire_hdr *h, const struct flow_full *f,
		   unsigned opts, unsigned *omitted)
{
	struct tlv_out o;
	unsigned omit;
	int ret;

	if (!wire_type_is_ct(h->type) || (h->flags & ~WIRE_F_HELLO_MASK))
		return -EINVAL;
	tlv_out_init(&o, buf, cap);
	ret = put_ct(&o, f, opts, &omit);
	if (ret < 0)
		return ret;
	if (omitted)
		*omitted = omit;
	return tlv_out_finish(&o, h);
}

int wire_ct_size(const struct flow_full *f, unsigned opts)
{
	static const struct wire_hdr h = { .type = WIRE_T_CT_NEW };
	struct tlv_out o;
	unsigned omit;
	int ret;

	tlv_out_init(&o, NULL, 0);
	ret = put_ct(&o, f, opts, &omit);
	return ret < 0 ? ret : tlv_out_finish(&o, &h);
}
