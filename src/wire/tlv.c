/*
 * tlv.c - writing and reading the TLV attributes of data messages (protocol.md §2.6).
 */
#include "tlv.h"

#include <errno.h>
#include <string.h>

void tlv_out_init(struct tlv_out *o, void *buf, size_t cap)
{
	o->buf = buf;
	o->cap = buf ? cap : SIZE_MAX;
	o->len = WIRE_HDR_LEN;          /* the header is written last, by tlv_out_finish() */
	o->full = o->cap < WIRE_HDR_LEN;
}

/* Reserve `space` bytes at the end; NULL when measuring or when they do not fit. */
static uint8_t *reserve(struct tlv_out *o, size_t space)
{
	uint8_t *p = NULL;

	if (o->full || space > o->cap - o->len)
		o->full = true;
	else if (o->buf)
		p = o->buf + o->len;
	o->len += space;
	return p;
}

void tlv_put(struct tlv_out *o, uint16_t id, const void *payload, size_t n)
{
	size_t nta_len = WIRE_TLV_HDR_LEN + n;
	size_t space = WIRE_ALIGNED(nta_len);
	uint8_t *p = reserve(o, space);

	if (p == NULL)
		return;
	/* nta_len counts the header and the payload, not the padding (protocol.md §2.6). */
	p[0] = (uint8_t)(nta_len >> 8);
	p[1] = (uint8_t)nta_len;
	p[2] = (uint8_t)(id >> 8);
	p[3] = (uint8_t)id;
	if (n)
		memcpy(p + WIRE_TLV_HDR_LEN, payload, n);
	memset(p + nta_len, 0, space - nta_len);
}

void tlv_put_u8(struct tlv_out *o, uint16_t id, uint8_t v)
{
	tlv_put(o, id, &v, 1);
}

void tlv_put_be16(struct tlv_out *o, uint16_t id, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	tlv_put(o, id, b, sizeof(b));
}

void tlv_put_be32(struct tlv_out *o, uint16_t id, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };

	tlv_put(o, id, b, sizeof(b));
}

/*
 * 1.4.7 passes the network-order port through htons() once more, so an x86
 * peer puts it on the wire least significant byte first (protocol.md §2.7, §2.14).  We
 * reproduce the bytes, not the mechanism: the two bytes of the network-order
 * value, swapped, whatever our own byte order.
 */
void tlv_put_swapped16(struct tlv_out *o, uint16_t id, uint16_t net)
{
	uint8_t n[2], b[2];

	memcpy(n, &net, sizeof(n));
	b[0] = n[1];
	b[1] = n[0];
	tlv_put(o, id, b, sizeof(b));
}

bool tlv_put_name(struct tlv_out *o, uint16_t id, const char *name, size_t size, size_t max_len)
{
	size_t n = strnlen(name, size);

	if (n == size || WIRE_TLV_HDR_LEN + n + 1 > max_len)
		return false;
	tlv_put(o, id, name, n + 1);
	return true;
}

int tlv_out_finish(struct tlv_out *o, const struct wire_hdr *h)
{
	uint8_t *p = o->buf;

	if (o->full)
		return -ENOSPC;
	if (p) {
		p[WIRE_OFF_VERTYPE] = (uint8_t)(WIRE_VERSION << 4 | (h->type & 0x0f));
		p[WIRE_OFF_FLAGS] = h->flags;
		p[WIRE_OFF_LEN] = (uint8_t)(o->len >> 8);
		p[WIRE_OFF_LEN + 1] = (uint8_t)o->len;
		p[WIRE_OFF_SEQ] = (uint8_t)(h->seq >> 24);
		p[WIRE_OFF_SEQ + 1] = (uint8_t)(h->seq >> 16);
		p[WIRE_OFF_SEQ + 2] = (uint8_t)(h->seq >> 8);
		p[WIRE_OFF_SEQ + 3] = (uint8_t)h->seq;
	}
	return (int)o->len;
}

void tlv_in_init(struct tlv_in *in, const void *msg, size_t len,
		 const struct tlv_rule *rules, unsigned nrules)
{
	in->p = (const uint8_t *)msg + WIRE_HDR_LEN;
	in->end = (const uint8_t *)msg + len;
	in->rules = rules;
	in->nrules = nrules;
}

bool tlv_get_name(char *dst, size_t size, const struct tlv *a)
{
	const uint8_t *nul = memchr(a->v, '\0', a->n);
	size_t n;

	if (nul == NULL)
		return false;
	n = (size_t)(nul - a->v);
	if (n >= size)                  /* cannot happen with the size rules; be safe */
		return false;
	memcpy(dst, a->v, n);
	memset(dst + n, 0, size - n);
	return true;
}

void tlv_get_addr4(union flow_addr *src, union flow_addr *dst, const uint8_t *v)
{
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	memcpy(&src->v4, v, 4);
	memcpy(&dst->v4, v + 4, 4);
}

void tlv_get_addr6(union flow_addr *src, union flow_addr *dst, const uint8_t *v)
{
	memcpy(src->bytes, v, 16);
	memcpy(dst->bytes, v + 16, 16);
}

void tlv_put_addrs(struct tlv_out *o, uint16_t id4, uint16_t id6, const struct flow_tuple *t)
{
	uint8_t b[NTA_IPV6_SIZE];

	if (t->family == AF_INET) {
		memcpy(b, &t->src.v4, 4);
		memcpy(b + 4, &t->dst.v4, 4);
		tlv_put(o, id4, b, NTA_IPV4_SIZE);
	} else {
		memcpy(b, t->src.bytes, 16);
		memcpy(b + 16, t->dst.bytes, 16);
		tlv_put(o, id6, b, NTA_IPV6_SIZE);
	}
}

/* Ports are copied as the kernel tuple holds them: network order (protocol.md §2.7). */
void tlv_put_ports(struct tlv_out *o, uint16_t id, const union flow_l4 *l4)
{
	uint8_t b[NTA_PORT_SIZE];

	memcpy(b, &l4->port.sport, 2);
	memcpy(b + 2, &l4->port.dport, 2);
	tlv_put(o, id, b, sizeof(b));
}
