/*
 * fuzz_wire.c - the wire codec fed arbitrary datagrams and streams.
 *
 * The input is split as one datagram; every message is classified and, if
 * it is of a data type, decoded as a conntrack or expectation message.
 * Every accepted message is encoded again and decoded again: the second
 * decode must equal the first, the size function must agree with the
 * encoder, and the encoder must stop at a capacity one byte short.  The
 * same input split as a TCP stream must give the same messages.  Any
 * disagreement abort()s.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ALL_OPTS (WIRE_ENC_TIMEOUT | WIRE_ENC_WSCALE | WIRE_ENC_UDPLITE_PORTS)
#define CANARY 0xa5

static void check(bool ok)
{
	if (!ok)
		abort();
}

/* Decoded flows are normalised: equal flows are equal bytes, labels up to `words`. */
static bool same_flow(const struct flow_full *a, const struct flow_full *b)
{
	if (memcmp(&a->flow, &b->flow, sizeof(a->flow)) || memcmp(&a->ext, &b->ext, sizeof(a->ext)))
		return false;
	if (a->labels.words != b->labels.words)
		return false;
	return !(a->flow.attrs & FLOW_A_LABELS) ||
	       memcmp(a->labels.w, b->labels.w, a->labels.words * sizeof(a->labels.w[0])) == 0;
}

/* Encoding into one byte less than needed fails and writes nothing past it. */
static void check_short_buffer(uint8_t *buf, size_t bufsize, int len, int ret)
{
	check(ret == -ENOSPC);
	for (size_t i = (size_t)len - 1; i < bufsize; i++)
		check(buf[i] == CANARY);
}

static void ct_roundtrip(const struct flow_full *first, uint8_t type)
{
	static uint8_t buf[WIRE_CT_MAX_LEN + 16];
	static struct flow_full second;
	struct wire_hdr h = { .type = type, .flags = WIRE_F_HELLO, .seq = 1 };
	unsigned omitted = ~0u;
	int len, ret;

	len = wire_ct_encode(buf, WIRE_CT_MAX_LEN, &h, first, ALL_OPTS, &omitted);
	check(len >= WIRE_HDR_LEN && len <= WIRE_CT_MAX_LEN && len % 4 == 0);
	check(len == wire_ct_size(first, ALL_OPTS));
	/* A decoded flow holds nothing that 1.4.7 could not take. */
	check(omitted == 0);
	check(wire_ct_decode(buf, (size_t)len, &second) == WIRE_OK);
	/* All-zero synproxy values are not sent again (ct_encode.c): the rest must match. */
	if (!(first->flow.attrs & FLOW_A_SYNPROXY_EXT))
		second.flow.attrs |= first->flow.attrs & FLOW_A_SYNPROXY;
	check(same_flow(first, &second));
	memset(buf, CANARY, sizeof(buf));
	ret = wire_ct_encode(buf, (size_t)len - 1, &h, first, ALL_OPTS, NULL);
	check_short_buffer(buf, sizeof(buf), len, ret);
}

static void exp_roundtrip(const struct flow_exp *first, uint8_t type)
{
	static uint8_t buf[WIRE_EXP_MAX_LEN + 16];
	static struct flow_exp second;
	struct wire_hdr h = { .type = type, .seq = 2 };
	unsigned omitted = ~0u;
	int len, ret;

	len = wire_exp_encode(buf, WIRE_EXP_MAX_LEN, &h, first, ALL_OPTS, &omitted);
	check(len >= WIRE_HDR_LEN && len <= WIRE_EXP_MAX_LEN && len % 4 == 0);
	check(len == wire_exp_size(first, ALL_OPTS));
	check(omitted == 0);
	check(wire_exp_decode(buf, (size_t)len, &second) == WIRE_OK);
	check(memcmp(first, &second, sizeof(second)) == 0);
	memset(buf, CANARY, sizeof(buf));
	ret = wire_exp_encode(buf, (size_t)len - 1, &h, first, ALL_OPTS, NULL);
	check_short_buffer(buf, sizeof(buf), len, ret);
}

/* A control message encoded again reads back the same. */
static void ctl_roundtrip(const struct wire_msg *m)
{
	uint8_t buf[WIRE_CTL_RANGE_LEN];
	uint8_t bit[] = { [WIRE_K_ACK] = WIRE_F_ACK, [WIRE_K_NACK] = WIRE_F_NACK,
			  [WIRE_K_RESYNC] = WIRE_F_RESYNC, [WIRE_K_ALIVE] = WIRE_F_ALIVE };
	uint8_t flags = bit[m->kind] | (m->hdr.flags & WIRE_F_HELLO_MASK);
	struct wire_hdr h;
	int len;

	len = wire_ctl_encode(buf, sizeof(buf), flags, m->hdr.seq, m->hdr.from, m->hdr.to);
	check(len == (m->kind == WIRE_K_ALIVE ? WIRE_ALIVE_LEN : WIRE_CTL_RANGE_LEN));
	check(wire_hdr_decode(buf, (size_t)len, &h) == WIRE_OK);
	check(wire_classify(&h) == m->kind && h.seq == m->hdr.seq && h.len == len);
	check(h.from == m->hdr.from && h.to == m->hdr.to);
}

static void decode_message(const struct wire_msg *m)
{
	static struct flow_full f;
	static struct flow_exp e;
	enum wire_reason rc, re;

	rc = wire_ct_decode(m->data, m->len, &f);
	re = wire_exp_decode(m->data, m->len, &e);
	check(rc < WIRE_R_MAX && re < WIRE_R_MAX);
	check(*wire_reason_name(rc) && *wire_reason_name(re));
	/* Each type has one decoder; the other one says so. */
	if (wire_type_is_ct(m->hdr.type))
		check(re == WIRE_R_BAD_TYPE);
	else if (wire_type_is_exp(m->hdr.type))
		check(rc == WIRE_R_BAD_TYPE);
	else
		check(rc == WIRE_R_BAD_TYPE && re == WIRE_R_BAD_TYPE);
	if (rc == WIRE_OK)
		ct_roundtrip(&f, m->hdr.type);
	if (re == WIRE_OK)
		exp_roundtrip(&e, m->hdr.type);
}

/* Split as a datagram; returns the number of messages framed before the end or an error. */
static size_t split_datagram(const uint8_t *data, size_t size, size_t *ends)
{
	struct wire_split s;
	struct wire_msg m;
	enum wire_split_status st;
	size_t n = 0;

	wire_split_init(&s, data, size, false);
	while ((st = wire_split_next(&s, &m)) == WIRE_SPLIT_MSG) {
		check(m.data >= data && m.len >= WIRE_HDR_LEN && m.len == m.hdr.len);
		check((size_t)(m.data - data) + m.len <= size);
		check(m.kind == wire_classify(&m.hdr));
		ends[n++] = (size_t)(m.data - data) + m.len;
		if (m.reason == WIRE_R_WRONG_VERSION)
			continue;
		check(m.reason == WIRE_OK);
		/* Decoded whatever the kind: ALARM mode takes any flag-less message as data. */
		if (m.kind == WIRE_K_DATA || m.hdr.flags == 0)
			decode_message(&m);
		else if (m.kind != WIRE_K_BAD)
			ctl_roundtrip(&m);
	}
	check(st == WIRE_SPLIT_END || st == WIRE_SPLIT_ERROR);
	if (st == WIRE_SPLIT_ERROR)
		check(m.reason == WIRE_R_TRUNCATED || m.reason == WIRE_R_BAD_SIZE);
	else
		check(wire_split_offset(&s) == size);
	check(wire_split_next(&s, &m) == st);
	return n;
}

/* The stream splitter frames the same messages, then stops where the datagram one did. */
static void split_stream(const uint8_t *data, size_t size, const size_t *ends, size_t n)
{
	struct wire_split s;
	struct wire_msg m;
	enum wire_split_status st;
	size_t i = 0;

	wire_split_init(&s, data, size, true);
	while ((st = wire_split_next(&s, &m)) == WIRE_SPLIT_MSG) {
		check(i < n && (size_t)(m.data - data) + m.len == ends[i]);
		i++;
	}
	check(i == n);
	check(st != WIRE_SPLIT_END || wire_split_offset(&s) == size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static size_t ends[WIRE_RX_BUF / WIRE_HDR_LEN + 1];
	static struct flow_full f;
	static struct flow_exp e;
	size_t n;

	if (size > WIRE_RX_BUF)
		return 0;
	n = split_datagram(data, size, ends);
	split_stream(data, size, ends, n);
	/* The decoders alone, on the raw bytes, whatever the header says. */
	if (size >= WIRE_HDR_LEN) {
		if (wire_ct_decode(data, size, &f) == WIRE_OK)
			ct_roundtrip(&f, data[0] & 0x0f);
		if (wire_exp_decode(data, size, &e) == WIRE_OK)
			exp_roundtrip(&e, data[0] & 0x0f);
	}
	return 0;
}
