/*
 * header.c - the 8/16-byte message header, control messages and the
 * classification of received headers (protocol.md §2.2-protocol.md §2.4).
 */
#include "tlv.h"

#include <errno.h>

static bool hdr_has_range(uint8_t type, uint8_t flags)
{
	return type == WIRE_T_CTL && (flags & WIRE_F_RANGE_MASK);
}

enum wire_reason wire_hdr_decode(const void *buf, size_t len, struct wire_hdr *h)
{
	const uint8_t *p = buf;

	if (len < WIRE_HDR_LEN)
		return WIRE_R_TRUNCATED;
	/* Nibbles, not bitfields: the same bytes on any host (protocol.md §2.2). */
	h->version = p[WIRE_OFF_VERTYPE] >> 4;
	h->type = p[WIRE_OFF_VERTYPE] & 0x0f;
	h->flags = p[WIRE_OFF_FLAGS];
	h->len = tlv_be16(p + WIRE_OFF_LEN);
	h->seq = tlv_be32(p + WIRE_OFF_SEQ);
	h->from = 0;
	h->to = 0;
	if (hdr_has_range(h->type, h->flags) && len >= WIRE_CTL_RANGE_LEN) {
		h->from = tlv_be32(p + WIRE_OFF_FROM);
		h->to = tlv_be32(p + WIRE_OFF_TO);
	}
	return WIRE_OK;
}

/* protocol.md §2.4: data, ACK, NACK, RESYNC, ALIVE; the first that matches wins. */
enum wire_kind wire_classify(const struct wire_hdr *h)
{
	if (h->type <= WIRE_T_DATA_MAX && !(h->flags & ~WIRE_F_HELLO_MASK))
		return WIRE_K_DATA;
	if (h->type != WIRE_T_CTL)
		return WIRE_K_BAD;
	if (h->flags & WIRE_F_ACK)
		return WIRE_K_ACK;
	if (h->flags & WIRE_F_NACK)
		return WIRE_K_NACK;
	if (h->flags & WIRE_F_RESYNC)
		return WIRE_K_RESYNC;
	if (h->flags & WIRE_F_ALIVE)
		return WIRE_K_ALIVE;
	return WIRE_K_BAD;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int wire_ctl_encode(void *buf, size_t cap, uint8_t flags, uint32_t seq, uint32_t from, uint32_t to)
{
	uint8_t range = flags & WIRE_F_RANGE_MASK;
	uint8_t *p = buf;
	size_t len;

	if (flags & ~(WIRE_F_CTL_MASK | WIRE_F_HELLO_MASK))
		return -EINVAL;
	/* Two range kinds would share one range; the peer would see only the first. */
	if (range & (range - 1))
		return -EINVAL;
	if (range) {
		len = WIRE_CTL_RANGE_LEN;
	} else {
		len = WIRE_ALIVE_LEN;
		flags |= WIRE_F_ALIVE;
	}
	if (cap < len)
		return -ENOSPC;
	p[WIRE_OFF_VERTYPE] = WIRE_VERSION << 4 | WIRE_T_CTL;
	p[WIRE_OFF_FLAGS] = flags;
	p[WIRE_OFF_LEN] = 0;
	p[WIRE_OFF_LEN + 1] = (uint8_t)len;
	put_be32(p + WIRE_OFF_SEQ, seq);
	if (range) {
		put_be32(p + WIRE_OFF_FROM, from);
		put_be32(p + WIRE_OFF_TO, to);
	}
	return (int)len;
}

const char *wire_kind_name(enum wire_kind k)
{
	static const char *const names[] = {
		[WIRE_K_DATA] = "data",
		[WIRE_K_ACK] = "ack",
		[WIRE_K_NACK] = "nack",
		[WIRE_K_RESYNC] = "resync",
		[WIRE_K_ALIVE] = "alive",
		[WIRE_K_BAD] = "bad",
	};

	if ((unsigned)k < sizeof(names) / sizeof(names[0]))
		return names[k];
	return "?";
}

const char *wire_type_name(uint8_t type)
{
	static const char *const names[] = {
		[WIRE_T_CT_NEW] = "CT_NEW",
		[WIRE_T_CT_UPD] = "CT_UPD",
		[WIRE_T_CT_DEL] = "CT_DEL",
		[WIRE_T_EXP_NEW] = "EXP_NEW",
		[WIRE_T_EXP_UPD] = "EXP_UPD",
		[WIRE_T_EXP_DEL] = "EXP_DEL",
		[WIRE_T_CTL] = "CTL",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "?";
}

bool wire_l4_has_ports(uint8_t l4proto)
{
	return l4_ports_sent_by_147(l4proto) || l4proto == L4_UDPLITE;
}
