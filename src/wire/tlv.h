/*
 * tlv.h - the TLV writer and reader shared by the conntrack and
 * expectation codecs (internal to src/wire).
 */
#ifndef CTSYNCD_WIRE_TLV_H
#define CTSYNCD_WIRE_TLV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>         /* AF_INET, AF_INET6: constants only */

#include "wire/wire.h"

/* ---- writer ------------------------------------------------------------- */

/*
 * A message being built.  With buf == NULL it only measures, so that the
 * size functions and the encoders run the same code and cannot disagree.
 * Once something does not fit, `full` is set and nothing more is written,
 * but `len` keeps counting.
 */
struct tlv_out {
	uint8_t *buf;
	size_t cap;
	size_t len;
	bool full;
};

void tlv_out_init(struct tlv_out *o, void *buf, size_t cap);
/* Append one attribute: unpadded nta_len, payload, zero padding (protocol.md §2.6). */
void tlv_put(struct tlv_out *o, uint16_t id, const void *payload, size_t n);
void tlv_put_u8(struct tlv_out *o, uint16_t id, uint8_t v);
void tlv_put_be16(struct tlv_out *o, uint16_t id, uint16_t v);
void tlv_put_be32(struct tlv_out *o, uint16_t id, uint32_t v);
/* A network-order u16 put on the wire byte-swapped (protocol.md §2.7 quirk of 14, 15, 24). */
void tlv_put_swapped16(struct tlv_out *o, uint16_t id, uint16_t net);
/* Put a NUL-terminated name if it fits in max_len (nta_len); false if not. */
bool tlv_put_name(struct tlv_out *o, uint16_t id, const char *name, size_t size, size_t max_len);
/*
 * Write the header at the start and return the length, or -ENOSPC if
 * anything did not fit.
 */
int tlv_out_finish(struct tlv_out *o, const struct wire_hdr *h);

/* ---- reader ------------------------------------------------------------- */

/*
 * One row of an attribute table, indexed by id (protocol.md §2.7, §2.10): the
 * receiver's size rule, plus what the codec using the table needs.
 */
struct tlv_rule {
	const char *name;
	uint16_t len;                   /* exact nta_len, or 0 when variable */
	uint16_t max;                   /* largest nta_len of a variable attribute */
	uint8_t group;                  /* the codec's own class of the attribute */
};

#define TLV_FIXED(name, n, group)       { name, WIRE_TLV_HDR_LEN + (n), 0, group }
#define TLV_UPTO(name, max, group)      { name, 0, max, group }

struct tlv_in {
	const uint8_t *p;
	const uint8_t *end;
	const struct tlv_rule *rules;
	unsigned nrules;                /* ids >= nrules are unknown */
};

struct tlv {
	uint16_t id;
	uint16_t n;                     /* payload length: nta_len - 4 */
	const uint8_t *v;
};

/* Start reading the TLVs after the header of `msg` (len >= WIRE_HDR_LEN). */
void tlv_in_init(struct tlv_in *in, const void *msg, size_t len,
		 const struct tlv_rule *rules, unsigned nrules);
static inline uint16_t tlv_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * The next attribute, checked as 1.4.7 checks it (protocol.md §2.11 step 7): returns
 * 1 with *a filled, 0 at the end (at most 4 bytes left), or -reason.
 * Inline: it runs for every attribute of every received state, and the
 * decoders' loops then see their rule table.
 */
static inline int tlv_next(struct tlv_in *in, struct tlv *a)
{
	size_t left = (size_t)(in->end - in->p);
	const struct tlv_rule *r;
	uint16_t nta_len;

	/* Up to 4 trailing bytes are not an attribute (protocol.md §2.11 step 7). */
	if (in->p >= in->end || left <= WIRE_TLV_TRAILER_MAX)
		return 0;
	nta_len = tlv_be16(in->p);
	a->id = tlv_be16(in->p + 2);
	if (nta_len > left)
		return -WIRE_R_ATTR_OVERRUN;
	if (nta_len < WIRE_TLV_HDR_LEN)
		return -WIRE_R_ATTR_SHORT;
	if (a->id >= in->nrules)
		return -WIRE_R_ATTR_UNKNOWN;
	r = &in->rules[a->id];
	if (r->len && nta_len != r->len)
		return -WIRE_R_ATTR_SIZE;
	if (!r->len && nta_len > r->max)
		return -WIRE_R_ATTR_TOO_LONG;
	a->n = (uint16_t)(nta_len - WIRE_TLV_HDR_LEN);
	a->v = in->p + WIRE_TLV_HDR_LEN;
	/*
	 * 1.4.7 steps over the padding without checking that it is inside the
	 * message: a last attribute may end unpadded.  Stop there, then.
	 */
	if (WIRE_ALIGNED((size_t)nta_len) >= left)
		in->p = in->end;
	else
		in->p += WIRE_ALIGNED((size_t)nta_len);
	return 1;
}

static inline uint32_t tlv_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The inverse of tlv_put_swapped16(): wire bytes to a network-order u16. */
static inline uint16_t tlv_swapped16(const uint8_t *p)
{
	uint8_t b[2] = { p[1], p[0] };
	uint16_t net;

	__builtin_memcpy(&net, b, sizeof(net));
	return net;
}

/*
 * Copy a received name into dst[size]: it must hold a NUL (1.4.7 sends
 * strlen + 1 bytes).  Returns false if it does not.  Bytes after the
 * first NUL are ignored; dst is zero-filled past the name.
 */
bool tlv_get_name(char *dst, size_t size, const struct tlv *a);

/* Helpers for tuples: address/port attributes to and from struct flow_tuple. */
void tlv_get_addr4(union flow_addr *src, union flow_addr *dst, const uint8_t *v);
void tlv_get_addr6(union flow_addr *src, union flow_addr *dst, const uint8_t *v);
void tlv_put_addrs(struct tlv_out *o, uint16_t id4, uint16_t id6, const struct flow_tuple *t);
void tlv_put_ports(struct tlv_out *o, uint16_t id, const union flow_l4 *l4);

/* IP protocol numbers, without pulling <netinet/in.h> into every file. */
enum {
	L4_ICMP = 1,
	L4_TCP = 6,
	L4_UDP = 17,
	L4_DCCP = 33,
	L4_GRE = 47,
	L4_ICMPV6 = 58,
	L4_SCTP = 132,
	L4_UDPLITE = 136,
};

/* The protocols 1.4.7 emits port attributes for (protocol.md §2.7, §2.10): not UDPlite. */
static inline bool l4_ports_sent_by_147(uint8_t p)
{
	return p == L4_TCP || p == L4_UDP || p == L4_SCTP || p == L4_DCCP;
}

#endif
