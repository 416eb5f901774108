/*
 * check_link.c - the pure parts of the link module: the channel buffer
 * (packing, exact fit, oversized messages, queue overflow), TCP stream
 * reassembly through the owner's framing, payload limits and the failover
 * choice; then groups on loopback.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/link_report.h"
#include "internal.h"
#include "loop/loop.h"
#include "control/report.h"
#include "wire/wire.h"

/* A data message of `len` bytes (>= 8) carrying `seq`, its padding derived from seq. */
static void make_msg(uint8_t *p, size_t len, uint32_t seq)
{
	uint16_t l16 = htons((uint16_t)len);
	uint32_t s32 = htonl(seq);

	p[0] = (WIRE_VERSION << 4) | WIRE_T_CT_UPD;
	p[1] = 0;
	memcpy(p + 2, &l16, 2);
	memcpy(p + 4, &s32, 4);
	for (size_t i = WIRE_HDR_LEN; i < len; i++)
		p[i] = (uint8_t)(seq * 7 + i);
}

/*
 * The daemon's framing (wire_frame_len): a stream is cut where the wire
 * splitter ends a message; a datagram is the peer's when it starts with a
 * whole message of our version.  Counted, to show how often the link asks.
 */
static unsigned frame_calls;

static long counted_frame_len(void *arg, const void *buf, size_t len, const char **why)
{
	frame_calls++;
	return wire_frame_len(arg, buf, len, why);
}

/* Close the open batch and list the waiting datagrams' sizes. */
static unsigned drain_sizes(struct link_channel *ch, size_t *sizes, unsigned max)
{
	unsigned n = 0;

	link_channel_close(ch);
	while (link_channel_queued(ch) > 0 && n < max) {
		size_t len;

		ck_assert_ptr_nonnull(link_channel_peek(ch, 0, &len));
		sizes[n++] = len;
		link_channel_pop(ch, 1);
	}
	return n;
}

/* ---- channel ------------------------------------------------------------------ */

START_TEST(packs_84_byte_messages_17_per_mtu_1500_datagram)
{
	struct link_channel ch;
	uint8_t msg[84];
	size_t sizes[8];
	size_t limit = link_payload_limit(CONFIG_LINK_UDP, AF_INET, 1500);
	unsigned n;

	ck_assert_int_eq(link_channel_init(&ch, 16, 1472), 0);
	for (uint32_t i = 0; i < 40; i++) {
		make_msg(msg, sizeof(msg), i);
		ck_assert_int_ge(link_channel_append(&ch, msg, sizeof(msg), limit), 0);
	}
	n = drain_sizes(&ch, sizes, 8);
	/* The datagrams 1.4.7 sends for the same bulk on a 1500-byte veth (protocol.md §5.1). */
	ck_assert_uint_eq(n, 3);
	ck_assert_msg(sizes[0] == 1428 && sizes[1] == 1428 && sizes[2] == 504,
		      "expected 1428 1428 504, got %zu %zu %zu", sizes[0], sizes[1], sizes[2]);
	link_channel_free(&ch);
}
END_TEST

START_TEST(message_that_fills_the_datagram_exactly_goes_in)
{
	struct link_channel ch;
	uint8_t msg[92];
	size_t sizes[4];
	unsigned n;

	/* 16 x 92 = 1472: a full datagram with <=; 1.4.7's < would send 15 + 1. */
	ck_assert_int_eq(link_channel_init(&ch, 4, 1472), 0);
	for (uint32_t i = 0; i < 16; i++) {
		make_msg(msg, sizeof(msg), i);
		ck_assert_int_eq(link_channel_append(&ch, msg, sizeof(msg), 1472), 0);
	}
	ck_assert_uint_eq(link_channel_open_len(&ch), 1472);
	ck_assert_uint_eq(link_channel_queued(&ch), 0);
	/* The 17th closes it. */
	ck_assert_int_eq(link_channel_append(&ch, msg, sizeof(msg), 1472), 1);
	n = drain_sizes(&ch, sizes, 4);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(sizes[0], 1472);
	ck_assert_uint_eq(sizes[1], 92);
	link_channel_free(&ch);
}
END_TEST

START_TEST(message_over_the_limit_goes_alone)
{
	struct link_channel ch;
	uint8_t small[40], big[200];
	size_t sizes[4];
	unsigned n;

	ck_assert_int_eq(link_channel_init(&ch, 4, 4096), 0);
	make_msg(small, sizeof(small), 1);
	make_msg(big, sizeof(big), 2);
	ck_assert_int_eq(link_channel_append(&ch, small, sizeof(small), 100), 0);
	/* Closes the batch before it, and itself. */
	ck_assert_int_eq(link_channel_append(&ch, big, sizeof(big), 100), 2);
	ck_assert_uint_eq(link_channel_open_len(&ch), 0);
	ck_assert_int_eq(link_channel_append(&ch, small, sizeof(small), 100), 0);
	n = drain_sizes(&ch, sizes, 4);
	ck_assert_uint_eq(n, 3);
	ck_assert_msg(sizes[0] == 40 && sizes[1] == 200 && sizes[2] == 40,
		      "expected 40 200 40, got %zu %zu %zu", sizes[0], sizes[1], sizes[2]);
	link_channel_free(&ch);
}
END_TEST

START_TEST(datagram_bytes_are_the_messages_in_order)
{
	struct link_channel ch;
	uint8_t all[30 * 84], got[30 * 84];
	size_t off = 0, len;
	const uint8_t *p;

	ck_assert_int_eq(link_channel_init(&ch, 8, 1472), 0);
	for (uint32_t i = 0; i < 30; i++) {
		make_msg(all + i * 84, 84, i);
		ck_assert_int_ge(link_channel_append(&ch, all + i * 84, 84, 1472), 0);
	}
	link_channel_close(&ch);
	while ((p = link_channel_peek(&ch, 0, &len)) != NULL) {
		memcpy(got + off, p, len);
		off += len;
		link_channel_pop(&ch, 1);
	}
	ck_assert_uint_eq(off, sizeof(all));
	ck_assert(memcmp(all, got, sizeof(all)) == 0);
	link_channel_free(&ch);
}
END_TEST

START_TEST(full_queue_drops_the_oldest_datagram)
{
	struct link_channel ch;
	uint8_t msg[60];
	size_t len;
	const uint8_t *p;

	/* limit 60: every message is a datagram of its own once the next one comes. */
	ck_assert_int_eq(link_channel_init(&ch, 3, 100), 0);
	for (uint32_t i = 0; i < 6; i++) {
		make_msg(msg, sizeof(msg), i);
		ck_assert_int_ge(link_channel_append(&ch, msg, sizeof(msg), 60), 0);
	}
	/* Closed so far: 0..4, queue of 3 keeps 2, 3, 4; 5 is open. */
	ck_assert_uint_eq(link_channel_queued(&ch), 3);
	ck_assert_uint_eq(ch.dropped, 2);
	ck_assert_uint_eq(ch.dropped_bytes, 120);
	link_channel_close(&ch);	/* drops 2 */
	ck_assert_uint_eq(ch.dropped, 3);
	for (uint32_t want = 3; want <= 5; want++) {
		uint32_t seq;

		p = link_channel_peek(&ch, 0, &len);
		ck_assert_ptr_nonnull(p);
		memcpy(&seq, p + 4, 4);
		ck_assert_msg(ntohl(seq) == want, "expected seq %u first, got %u", want, ntohl(seq));
		link_channel_pop(&ch, 1);
	}
	ck_assert_ptr_null(link_channel_peek(&ch, 0, &len));
	link_channel_free(&ch);
}
END_TEST

START_TEST(half_written_head_is_never_dropped)
{
	struct link_channel ch;
	uint8_t msg[60];
	size_t len;
	const uint8_t *p;
	uint32_t seq;

	ck_assert_int_eq(link_channel_init(&ch, 2, 100), 0);
	for (uint32_t i = 0; i < 3; i++) {
		make_msg(msg, sizeof(msg), i);
		ck_assert_int_ge(link_channel_append(&ch, msg, sizeof(msg), 60), 0);
	}
	ck_assert_uint_eq(link_channel_queued(&ch), 2);	/* 0, 1 waiting; 2 open */
	ch.head_off = 10;				/* datagram 0 is half written */
	link_channel_close(&ch);			/* full: 1 goes, not 0 */
	ck_assert_uint_eq(ch.dropped, 1);
	ck_assert_uint_eq(ch.head_off, 10);
	p = link_channel_peek(&ch, 0, &len);
	memcpy(&seq, p + 4, 4);
	ck_assert_uint_eq(ntohl(seq), 0);
	p = link_channel_peek(&ch, 1, &len);
	memcpy(&seq, p + 4, 4);
	ck_assert_uint_eq(ntohl(seq), 2);
	link_channel_pop(&ch, 1);
	ck_assert_uint_eq(ch.head_off, 0);
	link_channel_free(&ch);
}
END_TEST

START_TEST(rejects_empty_and_oversized_messages)
{
	struct link_channel ch;
	static uint8_t msg[5000];

	ck_assert_int_eq(link_channel_init(&ch, 2, 4096), 0);
	ck_assert_int_eq(link_channel_append(&ch, msg, 0, 1472), -EINVAL);
	ck_assert_int_eq(link_channel_append(&ch, msg, 4097, 1472), -EMSGSIZE);
	link_channel_free(&ch);
	ck_assert_int_eq(link_channel_init(&ch, 0, 4096), -EINVAL);
	link_channel_free(&ch);
}
END_TEST

/* A seal for the tests: "<len>" in a 4-byte head, the messages, then "TT". */
static size_t test_seal(void *arg, uint8_t *buf, size_t len, size_t cap)
{
	(void)arg;
	if (len + 6 > cap)
		return 0;
	buf[0] = 'H';
	buf[1] = 'H';
	buf[2] = (uint8_t)(len >> 8);
	buf[3] = (uint8_t)len;
	memcpy(buf + 4 + len, "TT", 2);
	return len + 6;
}

/*
 * With a seal, each closed batch is sealed in place: the head before the
 * messages, the tail after, and the batches leave room for both; a pushed
 * datagram goes after the open batch, as it is.
 */
START_TEST(sealed_batches_leave_room_for_the_seal)
{
	struct link_channel ch;
	uint8_t msg[100];
	const uint8_t *d;
	size_t len;

	ck_assert_int_eq(link_channel_init(&ch, 16, 1000 + 6), 0);
	ch.seal = test_seal;
	ch.headroom = 4;
	ch.reserve = 6;
	for (unsigned i = 0; i < 15; i++) {
		memset(msg, 'a' + (int)i, sizeof(msg));
		ck_assert_int_ge(link_channel_append(&ch, msg, sizeof(msg), 1000), 0);
	}
	ck_assert_int_eq(link_channel_push(&ch, "CTL", 3), 0);
	ck_assert_uint_eq(link_channel_queued(&ch), 3);
	d = link_channel_peek(&ch, 0, &len);
	ck_assert_uint_eq(len, 10 * 100 + 6);
	ck_assert(d[0] == 'H' && d[2] == (1000 >> 8) && d[3] == (1000 & 0xff));
	ck_assert(d[4] == 'a' && d[4 + 999] == 'j' && d[1004] == 'T' && d[1005] == 'T');
	d = link_channel_peek(&ch, 1, &len);
	ck_assert_uint_eq(len, 5 * 100 + 6);
	ck_assert(d[4] == 'k' && d[504] == 'T');
	d = link_channel_peek(&ch, 2, &len);
	ck_assert_uint_eq(len, 3);
	ck_assert(memcmp(d, "CTL", 3) == 0);
	/* The largest message still fits, sealed; one more byte does not. */
	static uint8_t big[1001];
	ck_assert_int_eq(link_channel_append(&ch, big, 1000, 500), 1);
	ck_assert_int_eq(link_channel_append(&ch, big, 1001, 500), -EMSGSIZE);
	link_channel_free(&ch);
}
END_TEST

START_TEST(slots_are_reused_after_the_queue_drains)
{
	struct link_channel ch;
	uint8_t msg[84];

	ck_assert_int_eq(link_channel_init(&ch, 4, 1472), 0);
	for (int round = 0; round < 1000; round++) {
		for (uint32_t i = 0; i < 20; i++) {
			make_msg(msg, sizeof(msg), i);
			ck_assert_int_ge(link_channel_append(&ch, msg, sizeof(msg), 1472), 0);
		}
		link_channel_close(&ch);
		ck_assert_uint_eq(link_channel_queued(&ch), 2);
		link_channel_pop(&ch, 2);
	}
	ck_assert_uint_eq(ch.dropped, 0);
	link_channel_free(&ch);
}
END_TEST

/* ---- stream reassembly ----------------------------------------------------------- */

/* ALIVE, ACK, data of 84, data of 1100: every form the splitter knows. */
static size_t make_stream(uint8_t *buf, size_t *ends, unsigned *nends)
{
	size_t off = 0;
	int n;

	n = wire_ctl_encode(buf + off, 64, 0, 1, 0, 0);
	ck_assert_int_eq(n, WIRE_ALIVE_LEN);
	off += (size_t)n;
	ends[0] = off;
	n = wire_ctl_encode(buf + off, 64, WIRE_F_ACK, 2, 10, 20);
	ck_assert_int_eq(n, WIRE_CTL_RANGE_LEN);
	off += (size_t)n;
	ends[1] = off;
	make_msg(buf + off, 84, 3);
	off += 84;
	ends[2] = off;
	make_msg(buf + off, 1100, 4);
	off += 1100;
	ends[3] = off;
	*nends = 4;
	return off;
}

static bool is_end(const size_t *ends, unsigned n, size_t at)
{
	for (unsigned i = 0; i < n; i++)
		if (ends[i] == at)
			return true;
	return false;
}

START_TEST(reassembles_messages_cut_at_every_byte)
{
	uint8_t in[2048], out[2048];
	size_t ends[4], total, delivered = 0;
	unsigned nends;
	struct link_stream s;

	total = make_stream(in, ends, &nends);
	ck_assert_int_eq(link_stream_init(&s, LINK_STREAM_CAP), 0);
	for (size_t i = 0; i < total; i++) {
		size_t room;
		uint8_t *p = link_stream_space(&s, &room);
		const char *why;
		long whole;

		ck_assert_uint_ge(room, 1);
		*p = in[i];
		link_stream_commit(&s, 1);
		whole = link_stream_whole(&s, counted_frame_len, NULL, &why);
		ck_assert_int_ge(whole, 0);
		if (whole > 0) {
			memcpy(out + delivered, s.buf, (size_t)whole);
			delivered += (size_t)whole;
			ck_assert_msg(is_end(ends, nends, delivered),
				      "delivered up to %zu: not a message boundary", delivered);
			link_stream_consume(&s, (size_t)whole);
		}
	}
	ck_assert_uint_eq(delivered, total);
	ck_assert(memcmp(in, out, total) == 0);
	ck_assert_uint_eq(s.used, 0);
	link_stream_free(&s);
}
END_TEST

START_TEST(delivers_every_whole_message_of_a_read_at_once)
{
	uint8_t in[2048];
	size_t ends[4], total, room;
	unsigned nends;
	struct link_stream s;
	const char *why;
	uint8_t *p;

	total = make_stream(in, ends, &nends);
	ck_assert_int_eq(link_stream_init(&s, LINK_STREAM_CAP), 0);
	/* Everything but the last 10 bytes in one read. */
	p = link_stream_space(&s, &room);
	memcpy(p, in, total - 10);
	link_stream_commit(&s, total - 10);
	frame_calls = 0;
	ck_assert_int_eq(link_stream_whole(&s, counted_frame_len, NULL, &why), (long)ends[2]);
	/* Three whole messages, then one look at the cut one. */
	ck_assert_uint_eq(frame_calls, 4);
	link_stream_consume(&s, ends[2]);
	ck_assert_uint_eq(s.used, total - 10 - ends[2]);
	p = link_stream_space(&s, &room);
	memcpy(p, in + total - 10, 10);
	link_stream_commit(&s, 10);
	ck_assert_int_eq(link_stream_whole(&s, counted_frame_len, NULL, &why), 1100);
	ck_assert(memcmp(s.buf, in + ends[2], 1100) == 0);
	link_stream_free(&s);
}
END_TEST

START_TEST(impossible_length_loses_the_stream)
{
	uint8_t good[84], bad[8] = { 0x11, 0, 0, 0, 0, 0, 0, 1 };	/* len 0 */
	struct link_stream s;
	const char *why;
	size_t room;
	uint8_t *p;

	make_msg(good, sizeof(good), 9);
	ck_assert_int_eq(link_stream_init(&s, LINK_STREAM_CAP), 0);
	p = link_stream_space(&s, &room);
	memcpy(p, good, sizeof(good));
	memcpy(p + sizeof(good), bad, sizeof(bad));
	link_stream_commit(&s, sizeof(good) + sizeof(bad));
	/* The good message before it still counts... */
	ck_assert_int_eq(link_stream_whole(&s, counted_frame_len, NULL, &why), (long)sizeof(good));
	link_stream_consume(&s, sizeof(good));
	/* ...then nothing can be framed any more, and the owner said why. */
	ck_assert_int_eq(link_stream_whole(&s, counted_frame_len, NULL, &why), -EBADMSG);
	ck_assert_ptr_nonnull(why);
	ck_assert_str_eq(why, wire_reason_name(WIRE_R_BAD_SIZE));

	/* Under the header size (len 4) is just as fatal. */
	link_stream_reset(&s);
	bad[3] = 4;
	p = link_stream_space(&s, &room);
	memcpy(p, bad, sizeof(bad));
	link_stream_commit(&s, sizeof(bad));
	ck_assert_int_eq(link_stream_whole(&s, counted_frame_len, NULL, &why), -EBADMSG);
	link_stream_free(&s);
}
END_TEST

START_TEST(room_is_left_for_the_longest_message)
{
	struct link_stream s;
	const char *why;
	size_t room;
	uint8_t *p;
	uint16_t l16 = htons(65532);

	ck_assert_int_eq(link_stream_init(&s, LINK_STREAM_CAP), 0);
	/* A header announcing the longest 4-aligned message, then a full buffer of its bytes. */
	p = link_stream_space(&s, &room);
	memset(p, 0xab, 65531);
	p[0] = 0x11;
	p[1] = 0;
	memcpy(p + 2, &l16, 2);
	link_stream_commit(&s, 65531);
	ck_assert_int_eq(link_stream_whole(&s, counted_frame_len, NULL, &why), 0);
	p = link_stream_space(&s, &room);
	ck_assert_uint_ge(room, 65536);
	*p = 0xab;
	link_stream_commit(&s, 1);
	ck_assert_int_eq(link_stream_whole(&s, counted_frame_len, NULL, &why), 65532);
	link_stream_free(&s);
}
END_TEST

/*
 * A framing that is not the wire format: one length byte, then that many
 * bytes; a length byte of 0 is never a frame, 0xff claims more than any
 * frame may be.  The link must cut exactly where it says.
 */
static long toy_frame_len(void *arg, const void *buf, size_t len, const char **why)
{
	const uint8_t *p = buf;

	(void)arg;
	if (p[0] == 0) {
		*why = "toy: empty frame";
		return -EPROTO;
	}
	if (p[0] == 0xff)
		return 70000;	/* past LINK_FRAME_MAX */
	return len > p[0] ? p[0] + 1 : 0;
}

static void stream_put(struct link_stream *s, const void *bytes, size_t n)
{
	size_t room;
	uint8_t *p = link_stream_space(s, &room);

	ck_assert_uint_ge(room, n);
	memcpy(p, bytes, n);
	link_stream_commit(s, n);
}

START_TEST(stream_is_cut_only_where_the_owner_says)
{
	static const uint8_t in[] = { 3, 'a', 'b', 'c', 1, 'd', 4, 'e', 'f', 'g', 'h', 2, 'i' };
	struct link_stream s;
	const char *why;

	ck_assert_int_eq(link_stream_init(&s, LINK_STREAM_CAP), 0);
	/* A read that ends inside the third frame: the first two go, the rest waits. */
	stream_put(&s, in, 8);
	ck_assert_int_eq(link_stream_whole(&s, toy_frame_len, NULL, &why), 6);
	link_stream_consume(&s, 6);
	ck_assert_uint_eq(s.used, 2);
	/* The next read completes it and starts a fourth. */
	stream_put(&s, in + 8, sizeof(in) - 8);
	ck_assert_int_eq(link_stream_whole(&s, toy_frame_len, NULL, &why), 5);
	ck_assert(memcmp(s.buf, in + 6, 5) == 0);
	link_stream_consume(&s, 5);
	ck_assert_int_eq(link_stream_whole(&s, toy_frame_len, NULL, &why), 0);
	ck_assert_uint_eq(s.used, 2);
	link_stream_free(&s);
}
END_TEST

START_TEST(impossible_frame_gives_the_owners_error_and_reason)
{
	static const uint8_t in[] = { 2, 'a', 'b', 0, 'x' };
	struct link_stream s;
	const char *why;

	ck_assert_int_eq(link_stream_init(&s, LINK_STREAM_CAP), 0);
	stream_put(&s, in, sizeof(in));
	/* The whole frame before the bad byte is delivered first. */
	ck_assert_int_eq(link_stream_whole(&s, toy_frame_len, NULL, &why), 3);
	link_stream_consume(&s, 3);
	why = NULL;
	ck_assert_int_eq(link_stream_whole(&s, toy_frame_len, NULL, &why), -EPROTO);
	ck_assert_ptr_nonnull(why);
	ck_assert_str_eq(why, "toy: empty frame");
	link_stream_free(&s);
}
END_TEST

static long greedy_frame_len(void *arg, const void *buf, size_t len, const char **why)
{
	return 0;	/* never enough */
}

START_TEST(frame_length_out_of_range_loses_the_stream)
{
	static uint8_t big[LINK_FRAME_MAX];
	static const uint8_t over[] = { 0xff, 1, 2, 3 };
	struct link_stream s;
	const char *why;

	ck_assert_int_eq(link_stream_init(&s, LINK_STREAM_CAP), 0);
	/* Longer than LINK_FRAME_MAX, or longer than what was received. */
	stream_put(&s, over, sizeof(over));
	ck_assert_int_eq(link_stream_whole(&s, toy_frame_len, NULL, &why), -EBADMSG);
	ck_assert_ptr_nonnull(why);
	link_stream_reset(&s);
	/* Still asking for more with LINK_FRAME_MAX bytes in hand: it would never end. */
	stream_put(&s, big, LINK_FRAME_MAX - 1);
	ck_assert_int_eq(link_stream_whole(&s, greedy_frame_len, NULL, &why), 0);
	stream_put(&s, big, 1);
	ck_assert_int_eq(link_stream_whole(&s, greedy_frame_len, NULL, &why), -EBADMSG);
	ck_assert_ptr_nonnull(why);
	link_stream_free(&s);
}
END_TEST

/* ---- payload limits ------------------------------------------------------------------ */

START_TEST(payload_limit_follows_mtu_kind_and_family)
{
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET, 1500), 1472);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_MCAST, AF_INET, 1500), 1472);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_TCP, AF_INET, 1500), 1460);
	/* The channel buffer of the wire format's reference (protocol.md §5.1). */
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET, 9000), 9000 - WIRE_UDP_OVERHEAD);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_TCP, AF_INET, 9000), 9000 - WIRE_TCP_OVERHEAD);
	/* IPv6: a 40-byte header, so no fragment at full size (1.4.7 sends 20 bytes too many). */
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET6, 1500), 1452);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_MCAST, AF_INET6, 1500), 1452);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_TCP, AF_INET6, 1500), 1440);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET, 9000), 8972);
}
END_TEST

START_TEST(payload_limit_fits_a_udp_datagram_on_loopback)
{
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET, 65536), 65507);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET6, 65536), 65488);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_TCP, AF_INET, 65536), 65496);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET, 70000), 65507);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET6, 70000), 65527);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET, 28), 0);
	ck_assert_uint_eq(link_payload_limit(CONFIG_LINK_UDP, AF_INET, 29), 1);
}
END_TEST

/* ---- failover choice ------------------------------------------------------------------ */

#define UPRUN   (IFF_UP | IFF_RUNNING)
#define UPONLY  IFF_UP

START_TEST(active_link_stays_while_up_and_running)
{
	unsigned f[3] = { UPRUN, UPRUN, UPRUN };

	ck_assert_int_eq(link_failover_pick(f, 3, 1), 1);
	f[0] = 0;
	ck_assert_int_eq(link_failover_pick(f, 3, 1), 1);
}
END_TEST

START_TEST(down_active_link_gives_way_to_the_first_running_one)
{
	unsigned f[3] = { 0, UPRUN, UPRUN };

	ck_assert_int_eq(link_failover_pick(f, 3, 0), 1);
	f[0] = UPONLY;	/* NO-CARRIER is not enough to stay */
	ck_assert_int_eq(link_failover_pick(f, 3, 0), 1);
	f[1] = 0;
	ck_assert_int_eq(link_failover_pick(f, 3, 0), 2);
}
END_TEST

START_TEST(running_link_is_preferred_to_an_earlier_one_without_carrier)
{
	unsigned f[3] = { 0, UPONLY, UPRUN };

	/* 1.4.7 would take link 1 (UP), which cannot carry anything either. */
	ck_assert_int_eq(link_failover_pick(f, 3, 0), 2);
}
END_TEST

START_TEST(falls_back_to_an_up_link_or_keeps_the_active_one)
{
	unsigned f[3] = { UPONLY, UPONLY, 0 };

	/* Nothing better than NO-CARRIER anywhere: keep the active one, no swapping. */
	ck_assert_int_eq(link_failover_pick(f, 3, 0), 0);
	ck_assert_int_eq(link_failover_pick(f, 3, 1), 1);
	/* The active one is DOWN: 1.4.7's rule, first UP or RUNNING. */
	f[0] = 0;
	ck_assert_int_eq(link_failover_pick(f, 3, 0), 1);
	f[2] = IFF_RUNNING;
	ck_assert_int_eq(link_failover_pick(f, 3, 0), 1);
	/* Nothing at all. */
	f[1] = f[2] = 0;
	ck_assert_int_eq(link_failover_pick(f, 3, 0), -1);
	ck_assert_int_eq(link_failover_pick(f, 1, 0), -1);
}
END_TEST

START_TEST(status_names_as_conntrackd)
{
	ck_assert_str_eq(link_status_name(UPRUN), "RUNNING");
	ck_assert_str_eq(link_status_name(UPONLY), "NO-CARRIER");
	ck_assert_str_eq(link_status_name(0), "DOWN");
	ck_assert_str_eq(link_status_name(IFF_RUNNING), "DOWN");
	ck_assert(link_flags_running(UPRUN | 0x10000u /* IFF_LOWER_UP */));
	ck_assert(!link_flags_running(UPONLY));
	ck_assert(link_flags_usable(UPONLY));
	ck_assert(!link_flags_usable(0));
}
END_TEST

/* ---- a group on loopback, talking to itself (no root needed) ---------------------- */

struct sink {
	unsigned calls;
	uint64_t bytes, msgs;
	uint32_t next_seq;
	bool in_order;
	bool src_ok;
};

static void sink_receive(void *arg, struct link *from, const void *buf, size_t len,
			 const struct sockaddr *src)
{
	struct sink *k = arg;
	struct wire_split sp;
	struct wire_msg m;

	k->calls++;
	k->bytes += len;
	k->src_ok = src && src->sa_family == AF_INET;
	wire_split_init(&sp, buf, len, false);
	while (wire_split_next(&sp, &m) == WIRE_SPLIT_MSG) {
		if (m.hdr.seq != k->next_seq)
			k->in_order = false;
		k->next_seq = m.hdr.seq + 1;
		k->msgs++;
	}
}

static void loopback_sync(struct config_sync *s, enum config_link_kind kind, uint16_t port)
{
	struct config_link *l = &s->links[0];

	memset(s, 0, sizeof(*s));
	s->nlinks = 1;
	l->kind = kind;
	l->family = AF_INET;
	l->local.family = l->dest.family = AF_INET;
	l->local.u.v4.s_addr = l->dest.u.v4.s_addr = htonl(INADDR_LOOPBACK);
	l->local.prefix = l->dest.prefix = 32;
	strcpy(l->ifname, "lo");
	l->port = port;
	l->checksum = true;
	l->error_queue_len = 128;
}

/* Open on a port of our own; a port in use by someone else means try the next. */
static struct link_group *open_loopback(struct loop *loop, struct config_sync *s,
					enum config_link_kind kind, struct sink *k)
{
	struct link_group_params p = {
		.sync = s, .on_receive = sink_receive, .frame_len = wire_frame_len,
		.frame_valid = wire_frame_valid, .arg = k,
	};
	struct link_group *g = NULL;
	int err = -EADDRINUSE;

	for (int i = 0; i < 50 && err == -EADDRINUSE; i++) {
		loopback_sync(s, kind, (uint16_t)(20000 + (getpid() * 7 + i * 131) % 40000));
		err = link_group_open(&g, loop, &p);
	}
	ck_assert_msg(err == 0, "link_group_open on lo: %s", strerror(-err));
	return g;
}

static void run_until_msgs(struct loop *loop, struct sink *k, uint64_t want)
{
	for (int i = 0; i < 500 && k->msgs < want; i++)
		ck_assert_int_eq(loop_run_once(loop, 20), 0);
}

START_TEST(udp_group_on_loopback_delivers_whole_datagrams)
{
	struct loop *loop = loop_new();
	struct config_sync s;
	struct sink k = { .in_order = true };
	struct link_group *g;
	uint8_t msg[84];
	size_t limit;

	g = open_loopback(loop, &s, CONFIG_LINK_UDP, &k);
	limit = link_group_payload_max(g);
	/* lo's MTU is 65536: the limit is what a UDP datagram can carry. */
	ck_assert_uint_eq(limit, 65507);
	ck_assert(link_is_active(link_group_active(g)));
	for (uint32_t i = 0; i < 1000; i++) {
		make_msg(msg, sizeof(msg), i);
		ck_assert_int_eq(link_group_append(g, msg, sizeof(msg)), 0);
	}
	/* 779 x 84 = 65436 closed a datagram, waiting for the flush; 221 in the open batch. */
	ck_assert_uint_eq(link_group_backlog(g), 1);
	ck_assert_uint_eq(link_group_buffered(g), 221 * 84);
	ck_assert_int_eq(link_group_flush(g), 0);
	ck_assert_uint_eq(link_group_backlog(g), 0);
	ck_assert_uint_eq(link_group_buffered(g), 0);
	run_until_msgs(loop, &k, 1000);
	ck_assert_uint_eq(k.msgs, 1000);
	/* 84000 bytes: one datagram of 65436 (779 messages) and one of 18564. */
	ck_assert_uint_eq(k.calls, 2);
	ck_assert(k.in_order);
	ck_assert(k.src_ok);
	link_group_close(g);
	loop_free(loop);
}
END_TEST

START_TEST(tcp_group_on_loopback_connects_to_itself_and_reports_it)
{
	struct loop *loop = loop_new();
	struct config_sync s;
	struct sink k = { .in_order = true };
	struct link_group *g;
	struct report *r;
	const char *text;
	uint8_t msg[200];
	struct link_stats st;

	g = open_loopback(loop, &s, CONFIG_LINK_TCP, &k);
	for (uint32_t i = 0; i < 5000; i++) {
		make_msg(msg, sizeof(msg), i);
		ck_assert_int_eq(link_group_append(g, msg, sizeof(msg)), 0);
	}
	link_group_flush(g);
	run_until_msgs(loop, &k, 5000);
	ck_assert_uint_eq(k.msgs, 5000);
	ck_assert(k.in_order);
	ck_assert(link_tcp_server_connected(link_group_active(g)));
	ck_assert(link_tcp_client_connected(link_group_active(g)));
	link_get_stats(link_group_active(g), &st);
	ck_assert_uint_eq(st.bytes_sent, 5000 * 200);
	ck_assert_uint_eq(st.bytes_recv, 5000 * 200);
	ck_assert_uint_eq(st.connects, 1);
	ck_assert_uint_eq(link_group_backlog(g), 0);

	r = report_new(REPORT_TEXT);
	control_report_link_group(r, g);
	text = report_finish(r, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "server=connected client=connected") != NULL,
		      "no connection tokens in:\n%s", text);
	ck_assert_msg(strstr(text, "role:") && strstr(text, "ACTIVE"), "no role in:\n%s", text);
	report_free(r);
	link_group_close(g);
	loop_free(loop);
}
END_TEST

static void run_until_errors_recv(struct loop *loop, struct link *l, uint64_t want)
{
	struct link_stats st;

	for (int i = 0; i < 500; i++) {
		link_get_stats(l, &st);
		if (st.errors_recv >= want)
			return;
		ck_assert_int_eq(loop_run_once(loop, 20), 0);
	}
}

START_TEST(tcp_stream_with_an_impossible_frame_is_closed_and_counted)
{
	struct loop *loop = loop_new();
	struct config_sync s;
	struct sink k = { .in_order = true };
	struct link_group *g;
	struct link *l;
	struct link_stats st;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = 5 };
	/* A header announcing a length of 0. */
	uint8_t bad[8] = { (WIRE_VERSION << 4) | WIRE_T_CT_UPD, 0, 0, 0, 0, 0, 0, 1 };
	char c;
	int fd;

	g = open_loopback(loop, &s, CONFIG_LINK_TCP, &k);
	l = link_group_active(g);
	for (int i = 0; i < 500 && !link_tcp_server_connected(l); i++)
		ck_assert_int_eq(loop_run_once(loop, 20), 0);
	ck_assert(link_tcp_server_connected(l));
	/* A stranger replaces the peer connection and sends bytes that can never be a frame. */
	sin.sin_port = htons(s.links[0].port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(write(fd, bad, sizeof(bad)), (ssize_t)sizeof(bad));
	run_until_errors_recv(loop, l, 1);
	link_get_stats(l, &st);
	ck_assert_msg(st.errors_recv >= 1, "expected an error received, got %llu",
		      (unsigned long long)st.errors_recv);
	ck_assert_uint_eq(k.calls, 0);
	/* The link ended the stranger's connection (ours comes back on its own). */
	ck_assert_int_eq(read(fd, &c, 1), 0);
	close(fd);
	link_group_close(g);
	loop_free(loop);
}
END_TEST

struct follower {
	struct sink k;
	unsigned switches;
};

static void follower_switch(void *arg, struct link *old, struct link *now)
{
	struct follower *f = arg;

	f->switches++;
}

static void follower_receive(void *arg, struct link *from, const void *buf, size_t len,
			     const struct sockaddr *src)
{
	struct follower *f = arg;

	f->k.calls++;
}

static void send_udp(uint16_t port, const void *buf, size_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(sendto(fd, buf, len, 0, (struct sockaddr *)&sin, sizeof(sin)),
			 (ssize_t)len);
	close(fd);
}

START_TEST(only_a_valid_frame_on_a_backup_link_makes_it_active)
{
	struct loop *loop = loop_new();
	struct config_sync s;
	struct follower f = { .switches = 0 };
	struct link_group_params p = {
		.sync = &s, .on_receive = follower_receive, .on_switch = follower_switch,
		.frame_len = wire_frame_len, .frame_valid = wire_frame_valid, .arg = &f,
	};
	struct link_group *g = NULL;
	uint8_t msg[84];
	uint16_t port = (uint16_t)(20000 + (getpid() * 11) % 40000);

	loopback_sync(&s, CONFIG_LINK_UDP, port);
	s.links[1] = s.links[0];
	s.links[1].port = (uint16_t)(port + 1);
	s.nlinks = 2;
	ck_assert_int_eq(link_group_open(&g, loop, &p), 0);
	ck_assert_uint_eq(link_index(link_group_active(g)), 0);
	/* A message of another version is noise to the owner: link 1 stays a backup. */
	make_msg(msg, sizeof(msg), 1);
	msg[0] = (uint8_t)((WIRE_VERSION + 1) << 4) | WIRE_T_CT_UPD;
	send_udp(s.links[1].port, msg, sizeof(msg));
	for (int i = 0; i < 500 && f.k.calls < 1; i++)
		ck_assert_int_eq(loop_run_once(loop, 20), 0);
	ck_assert_uint_eq(f.k.calls, 1);
	ck_assert_uint_eq(f.switches, 0);
	ck_assert_uint_eq(link_index(link_group_active(g)), 0);
	/* The peer's own message: followed. */
	make_msg(msg, sizeof(msg), 2);
	send_udp(s.links[1].port, msg, sizeof(msg));
	for (int i = 0; i < 500 && f.k.calls < 2; i++)
		ck_assert_int_eq(loop_run_once(loop, 20), 0);
	ck_assert_uint_eq(f.k.calls, 2);
	ck_assert_uint_eq(f.switches, 1);
	ck_assert_uint_eq(link_index(link_group_active(g)), 1);
	link_group_close(g);
	loop_free(loop);
}
END_TEST

START_TEST(open_fails_cleanly_without_the_interface)
{
	struct loop *loop = loop_new();
	struct config_sync s;
	struct link_group_params p = {
		.sync = &s, .on_receive = sink_receive, .frame_len = wire_frame_len,
		.frame_valid = wire_frame_valid,
	};
	struct link_group *g = (struct link_group *)&s;

	loopback_sync(&s, CONFIG_LINK_UDP, 3780);
	strcpy(s.links[0].ifname, "nosuchdev0");
	ck_assert_int_eq(link_group_open(&g, loop, &p), -ENODEV);
	ck_assert_ptr_null(g);
	/* Without a callback it needs, nothing is opened. */
	strcpy(s.links[0].ifname, "lo");
	p.frame_len = NULL;
	ck_assert_int_eq(link_group_open(&g, loop, &p), -EINVAL);
	ck_assert_ptr_null(g);
	p.frame_len = wire_frame_len;
	p.frame_valid = NULL;
	ck_assert_int_eq(link_group_open(&g, loop, &p), -EINVAL);
	p.frame_valid = wire_frame_valid;
	p.on_receive = NULL;
	ck_assert_int_eq(link_group_open(&g, loop, &p), -EINVAL);
	loop_free(loop);
}
END_TEST

static Suite *link_suite(void)
{
	Suite *s = suite_create("link");
	TCase *tc;

	tc = tcase_create("channel");
	tcase_add_test(tc, packs_84_byte_messages_17_per_mtu_1500_datagram);
	tcase_add_test(tc, message_that_fills_the_datagram_exactly_goes_in);
	tcase_add_test(tc, message_over_the_limit_goes_alone);
	tcase_add_test(tc, datagram_bytes_are_the_messages_in_order);
	tcase_add_test(tc, full_queue_drops_the_oldest_datagram);
	tcase_add_test(tc, half_written_head_is_never_dropped);
	tcase_add_test(tc, rejects_empty_and_oversized_messages);
	tcase_add_test(tc, slots_are_reused_after_the_queue_drains);
	tcase_add_test(tc, sealed_batches_leave_room_for_the_seal);
	suite_add_tcase(s, tc);

	tc = tcase_create("stream");
	tcase_add_test(tc, reassembles_messages_cut_at_every_byte);
	tcase_add_test(tc, delivers_every_whole_message_of_a_read_at_once);
	tcase_add_test(tc, impossible_length_loses_the_stream);
	tcase_add_test(tc, room_is_left_for_the_longest_message);
	tcase_add_test(tc, stream_is_cut_only_where_the_owner_says);
	tcase_add_test(tc, impossible_frame_gives_the_owners_error_and_reason);
	tcase_add_test(tc, frame_length_out_of_range_loses_the_stream);
	suite_add_tcase(s, tc);

	tc = tcase_create("policy");
	tcase_add_test(tc, payload_limit_follows_mtu_kind_and_family);
	tcase_add_test(tc, payload_limit_fits_a_udp_datagram_on_loopback);
	tcase_add_test(tc, active_link_stays_while_up_and_running);
	tcase_add_test(tc, down_active_link_gives_way_to_the_first_running_one);
	tcase_add_test(tc, running_link_is_preferred_to_an_earlier_one_without_carrier);
	tcase_add_test(tc, falls_back_to_an_up_link_or_keeps_the_active_one);
	tcase_add_test(tc, status_names_as_conntrackd);
	suite_add_tcase(s, tc);

	tc = tcase_create("loopback");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, udp_group_on_loopback_delivers_whole_datagrams);
	tcase_add_test(tc, tcp_group_on_loopback_connects_to_itself_and_reports_it);
	tcase_add_test(tc, tcp_stream_with_an_impossible_frame_is_closed_and_counted);
	tcase_add_test(tc, only_a_valid_frame_on_a_backup_link_makes_it_active);
	tcase_add_test(tc, open_fails_cleanly_without_the_interface);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(link_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
