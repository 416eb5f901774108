/*
 * splitter.c - cut a datagram or a TCP stream into messages, with 1.4.7's
 * framing checks in 1.4.7's order (protocol.md §2.11 steps 1-5), and the framing a
 * link asks its owner for.
 */
#include "tlv.h"

#include <errno.h>

void wire_split_init(struct wire_split *s, const void *buf, size_t len, bool stream)
{
	s->buf = buf;
	s->len = len;
	s->off = 0;
	s->stream = stream;
	s->stopped = false;
	s->stop_status = WIRE_SPLIT_END;
	s->stop_reason = WIRE_OK;
}

size_t wire_split_offset(const struct wire_split *s)
{
	return s->off;
}

static enum wire_split_status stop(struct wire_split *s, struct wire_msg *m,
				   enum wire_split_status st, enum wire_reason r)
{
	s->stopped = true;
	s->stop_status = st;
	s->stop_reason = r;
	m->reason = r;
	return st;
}

/*
 * A datagram ends for good at a framing error; a stream only lacks bytes
 * when the message could still be completed by the next read.
 */
static enum wire_split_status short_input(struct wire_split *s, struct wire_msg *m,
					  enum wire_reason r)
{
	return stop(s, m, s->stream ? WIRE_SPLIT_MORE : WIRE_SPLIT_ERROR, s->stream ? WIRE_OK : r);
}

enum wire_split_status wire_split_next(struct wire_split *s, struct wire_msg *m)
{
	const uint8_t *p = s->buf + s->off;
	size_t left = s->len - s->off;
	struct wire_hdr *h = &m->hdr;

	if (s->stopped) {
		m->reason = s->stop_reason;
		return s->stop_status;
	}
	if (left == 0)
		return stop(s, m, WIRE_SPLIT_END, WIRE_OK);
	/* 1: not even a header. */
	if (wire_hdr_decode(p, left, h) != WIRE_OK)
		return short_input(s, m, WIRE_R_TRUNCATED);
	/* 2: a zero length would loop forever; 1.4.7 drops the rest. */
	if (h->len == 0)
		return stop(s, m, WIRE_SPLIT_ERROR, WIRE_R_BAD_SIZE);
	/* 3 */
	if (h->len > left)
		return short_input(s, m, WIRE_R_BAD_SIZE);
	/* 4: the 16-byte forms of ACK, NACK and RESYNC. */
	if (h->type == WIRE_T_CTL && (h->flags & WIRE_F_RANGE_MASK)) {
		if (left < WIRE_CTL_RANGE_LEN && !s->stream)
			return stop(s, m, WIRE_SPLIT_ERROR, WIRE_R_TRUNCATED);
		if (h->len < WIRE_CTL_RANGE_LEN)
			return stop(s, m, WIRE_SPLIT_ERROR, WIRE_R_BAD_SIZE);
	} else if (h->len < WIRE_HDR_LEN) {
		return stop(s, m, WIRE_SPLIT_ERROR, WIRE_R_BAD_SIZE);
	}
	m->data = p;
	m->len = h->len;
	m->kind = wire_classify(h);
	/* 5: a foreign version is skipped before sequence tracking sees it. */
	m->reason = h->version == WIRE_VERSION ? WIRE_OK : WIRE_R_WRONG_VERSION;
	s->off += h->len;
	return WIRE_SPLIT_MSG;
}

long wire_frame_len(void *arg, const void *buf, size_t len, const char **why)
{
	struct wire_split s;
	struct wire_msg m;

	(void)arg;
	wire_split_init(&s, buf, len, true);
	switch (wire_split_next(&s, &m)) {
	case WIRE_SPLIT_MSG:
		return (long)m.len;
	case WIRE_SPLIT_ERROR:
		*why = wire_reason_name(m.reason);
		return -EBADMSG;
	default:
		return 0;
	}
}

bool wire_frame_valid(void *arg, const void *buf, size_t len)
{
	struct wire_split s;
	struct wire_msg m;

	(void)arg;
	wire_split_init(&s, buf, len, false);
	return wire_split_next(&s, &m) == WIRE_SPLIT_MSG && m.reason == WIRE_OK;
}
