/*
 * check_ftfw.c - the FTFW engine against the behaviour of conntrackd 1.4.7
 * (doc/protocol.md §3 and its table of reactions, §3.10), and what ctsyncd adds:
 * RTO, flow control, sequence tracking during HELLO, per-peer state,
 * re-queueing on a peer's restart, paced bulk sends; NOTRACK; and ALARM
 * (protocol.md §4): refresh timers, flag-less data only, nothing but data sent.
 *
 * The engine runs against a harness that plays the peer: it feeds
 * hand-built messages through the real splitter and records every message
 * the engine emits, every state applied and every DEL acknowledged.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "flow/flow.h"
#include "flow/table.h"
#include "sync/sync.h"
#include "wire/wire.h"

#define REQUIRE(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)
#define EXPECT_EQ(what, expected, actual) do { \
	long long e_ = (long long)(expected), a_ = (long long)(actual); \
	if (e_ != a_) \
		ck_abort_msg("%s: expected %lld, got %lld", what, e_, a_); \
} while (0)

static bool seq_newer(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* ---- the harness ------------------------------------------------------------------- */

#define OUT_MAX   8192
#define APPLY_MAX 2048

struct out_msg {
	struct wire_hdr hdr;
	enum wire_kind kind;
	uint64_t at;
	size_t len;
	uint8_t data[WIRE_CT_MAX_LEN];
};

struct applied {
	unsigned peer;
	uint8_t type;
	struct flow_full f;
};

static struct harness {
	struct flow_table *t;
	struct ftfw *e;
	uint64_t now;
	size_t nout;
	struct out_msg out[OUT_MAX];
	size_t napplied;
	struct applied applied[APPLY_MAX];
	size_t ndead;
	uint32_t dead[APPLY_MAX];
	size_t nevents;
	struct { unsigned peer; enum ftfw_peer_event ev; } events[64];
	/* ops->peer_reset calls, with what the engine had done when each came */
	size_t nresets;
	struct { unsigned peer; size_t nevents; bool resync, bulk; } resets[8];
	bool delete_dead;               /* dead_acked deletes the entry, as the daemon does */
	size_t nprefetched;
	uint16_t prefetched_port[APPLY_MAX];
} H;

static void h_emit(void *arg, const void *msg, size_t len)
{
	struct harness *h = arg;
	struct out_msg *o;

	REQUIRE(h->nout < OUT_MAX, "too many messages emitted");
	REQUIRE(len <= WIRE_CT_MAX_LEN && len >= WIRE_HDR_LEN, "emitted length %zu", len);
	o = &h->out[h->nout++];
	memcpy(o->data, msg, len);
	o->len = len;
	o->at = h->now;
	REQUIRE(wire_hdr_decode(msg, len, &o->hdr) == WIRE_OK, "emitted header undecodable");
	REQUIRE(o->hdr.len == len, "header len %u for %zu bytes", o->hdr.len, len);
	REQUIRE(o->hdr.version == WIRE_VERSION, "version %u", o->hdr.version);
	o->kind = wire_classify(&o->hdr);
}

static void h_apply(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	struct harness *h = arg;
	struct applied *a;

	REQUIRE(h->napplied < APPLY_MAX, "too many states applied");
	a = &h->applied[h->napplied++];
	a->peer = peer;
	a->type = type;
	a->f = *f;
}

static void h_prefetch(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	struct harness *h = arg;

	(void)peer;
	(void)type;
	REQUIRE(h->nprefetched < APPLY_MAX, "too many prefetch hints");
	h->prefetched_port[h->nprefetched++] = ntohs(f->flow.orig.l4.port.sport);
}

static void h_dead_acked(void *arg, uint32_t handle)
{
	struct harness *h = arg;

	REQUIRE(h->ndead < APPLY_MAX, "too many dead acks");
	h->dead[h->ndead++] = handle;
	if (h->delete_dead)
		REQUIRE(flow_table_delete(h->t, handle) == 0, "delete of acked dead flow %u", handle);
}

static void h_event(void *arg, unsigned peer, enum ftfw_peer_event ev)
{
	struct harness *h = arg;

	if (h->nevents < 64) {
		h->events[h->nevents].peer = peer;
		h->events[h->nevents].ev = ev;
		h->nevents++;
	}
}

static void h_peer_reset(void *arg, unsigned peer)
{
	struct harness *h = arg;
	struct ftfw_stats s;

	REQUIRE(h->nresets < 8, "too many peer resets");
	/* A read of the engine's state, to tell the order of its calls. */
	ftfw_stats(h->e, &s);
	h->resets[h->nresets].peer = peer;
	h->resets[h->nresets].nevents = h->nevents;
	h->resets[h->nresets].resync = s.resync_outstanding;
	h->resets[h->nresets].bulk = s.bulk_running;
	h->nresets++;
}

static const struct ftfw_ops h_ops = {
	.emit = h_emit,
	.apply = h_apply,
	.prefetch = h_prefetch,
	.dead_acked = h_dead_acked,
	.peer_event = h_event,
	.peer_reset = h_peer_reset,
};

static struct ftfw_config default_cfg(void)
{
	struct ftfw_config c = { 0 };

	c.enc_opts = WIRE_ENC_TIMEOUT;
	return c;
}

static void h_setup_ops(const struct ftfw_config *cfg, const struct ftfw_ops *ops, uint32_t seq)
{
	struct flow_table_options o = { .buckets = 256, .seed = 1, .user_bytes = FTFW_USER_BYTES };

	memset(&H, 0, sizeof(H));
	H.delete_dead = true;
	H.now = 100000;
	ck_assert_int_eq(flow_table_new(&o, &H.t), 0);
	ck_assert_int_eq(ftfw_new(cfg, ops, &H, H.t, seq, H.now, &H.e), 0);
}

static void h_setup_cfg(const struct ftfw_config *cfg, uint32_t seq)
{
	h_setup_ops(cfg, &h_ops, seq);
}

static void h_setup(void)
{
	struct ftfw_config c = default_cfg();

	h_setup_cfg(&c, 1000);
}

static void h_teardown(void)
{
	ftfw_free(H.e);
	flow_table_free(H.t);
	H.e = NULL;
	H.t = NULL;
}

/* Advance the clock to `to`, running every timer on its way. */
static void h_run_until(uint64_t to)
{
	for (;;) {
		uint64_t d = ftfw_next_deadline(H.e);

		if (d > to)
			break;
		if (d > H.now)
			H.now = d;
		ftfw_tick(H.e, H.now);
	}
	H.now = to;
	ftfw_tick(H.e, H.now);
}

static void h_advance(uint64_t ms)
{
	h_run_until(H.now + ms);
}

static size_t h_send(void)
{
	return ftfw_send(H.e, H.now, SIZE_MAX);
}

/* Feed one datagram through the real splitter. */
static void h_feed_peer(unsigned peer, const void *buf, size_t len)
{
	struct wire_split s;
	struct wire_msg m;
	enum wire_split_status st;

	wire_split_init(&s, buf, len, false);
	while ((st = wire_split_next(&s, &m)) == WIRE_SPLIT_MSG)
		ck_assert_int_eq(ftfw_receive(H.e, peer, &m, H.now), 0);
	if (st == WIRE_SPLIT_ERROR)
		ftfw_count_rejected(H.e, peer, m.reason);
}

static void h_feed(const void *buf, size_t len)
{
	h_feed_peer(0, buf, len);
}

static size_t ctl(uint8_t *buf, uint8_t flags, uint32_t seq, uint32_t from, uint32_t to)
{
	int n = wire_ctl_encode(buf, WIRE_CTL_RANGE_LEN, flags, seq, from, to);

	REQUIRE(n > 0, "wire_ctl_encode: %d", n);
	return (size_t)n;
}

static void feed_ctl_peer(unsigned peer, uint8_t flags, uint32_t seq, uint32_t from, uint32_t to)
{
	uint8_t buf[WIRE_CTL_RANGE_LEN];

	h_feed_peer(peer, buf, ctl(buf, flags, seq, from, to));
}

static void feed_ctl(uint8_t flags, uint32_t seq, uint32_t from, uint32_t to)
{
	feed_ctl_peer(0, flags, seq, from, to);
}

/* A TCP flow whose key is made of i; mark as given. */
static void make_flow(struct flow_full *ff, uint32_t i, uint32_t mark)
{
	struct flow *f = &ff->flow;

	memset(ff, 0, sizeof(*ff));
	f->orig.family = AF_INET;
	f->orig.l4proto = IPPROTO_TCP;
	f->orig.src.v4 = htonl(0x0a000000u | (i >> 16));
	f->orig.dst.v4 = htonl(0xc0a80001u);
	f->orig.l4.port.sport = htons((uint16_t)(1024 + (i & 0xffff)));
	f->orig.l4.port.dport = htons(80);
	f->status = 0x8 | 0x4 | 0x2;
	f->timeout = 300;
	f->mark = mark;
	f->proto_state = 3;
	f->attrs = FLOW_A_PORTS | FLOW_A_STATUS | FLOW_A_TIMEOUT | FLOW_A_MARK | FLOW_A_PROTO_STATE;
}

static size_t data_msg(uint8_t *buf, uint8_t type, uint8_t flags, uint32_t seq, uint32_t i,
		       uint32_t mark)
{
	struct wire_hdr h = { .type = type, .flags = flags, .seq = seq };
	struct flow_full ff;
	int n;

	make_flow(&ff, i, mark);
	n = wire_ct_encode(buf, WIRE_CT_MAX_LEN, &h, &ff, WIRE_ENC_TIMEOUT, NULL);
	REQUIRE(n > 0, "wire_ct_encode: %d", n);
	return (size_t)n;
}

static void feed_data_peer(unsigned peer, uint8_t flags, uint32_t seq, uint32_t i, uint32_t mark)
{
	uint8_t buf[WIRE_CT_MAX_LEN];

	h_feed_peer(peer, buf, data_msg(buf, WIRE_T_CT_NEW, flags, seq, i, mark));
}

static void feed_data(uint8_t flags, uint32_t seq, uint32_t i, uint32_t mark)
{
	feed_data_peer(0, flags, seq, i, mark);
}

/* Insert or update flow i in the internal table and tell the engine. */
static uint32_t put_flow(uint32_t i, uint32_t mark)
{
	struct flow_full ff;
	uint32_t h;

	make_flow(&ff, i, mark);
	REQUIRE(flow_table_upsert(H.t, &ff, 0, &h) >= 0, "upsert");
	ck_assert_int_eq(ftfw_flow_changed(H.e, h), 0);
	return h;
}

static void kill_flow(uint32_t h)
{
	ck_assert_int_eq(flow_table_mark_dead(H.t, h, 0), 0);
	ck_assert_int_eq(ftfw_flow_changed(H.e, h), 0);
}

/* Messages emitted from index `from` on, of kind k. */
static size_t count_kind(size_t from, enum wire_kind k)
{
	size_t n = 0;

	for (size_t i = from; i < H.nout; i++)
		n += H.out[i].kind == k;
	return n;
}

static const struct out_msg *find_kind(size_t from, enum wire_kind k)
{
	for (size_t i = from; i < H.nout; i++)
		if (H.out[i].kind == k)
			return &H.out[i];
	return NULL;
}

static void expect_range(const struct out_msg *m, const char *what, uint8_t flags,
			 uint32_t from, uint32_t to)
{
	REQUIRE(m, "%s: none emitted", what);
	REQUIRE(m->hdr.flags == flags, "%s: flags expected 0x%02x, got 0x%02x", what, flags,
		m->hdr.flags);
	REQUIRE(m->hdr.from == from && m->hdr.to == to, "%s: range expected [%u,%u], got [%u,%u]",
		what, from, to, m->hdr.from, m->hdr.to);
	REQUIRE(m->len == WIRE_CTL_RANGE_LEN, "%s: length %zu", what, m->len);
}

static uint32_t out_mark(const struct out_msg *m)
{
	struct flow_full ff;

	REQUIRE(wire_ct_decode(m->data, m->len, &ff) == WIRE_OK, "our message does not decode");
	return ff.flow.mark;
}

static uint32_t out_key(const struct out_msg *m)
{
	struct flow_full ff;

	REQUIRE(wire_ct_decode(m->data, m->len, &ff) == WIRE_OK, "our message does not decode");
	return ((ntohl(ff.flow.orig.src.v4) & 0xffff) << 16) | (ntohs(ff.flow.orig.l4.port.sport) - 1024u);
}

static struct ftfw_stats stats(void)
{
	struct ftfw_stats s;

	ftfw_stats(H.e, &s);
	return s;
}

/*
 * The state of protocol.md §3.10: the engine ran with a real peer (whose HELLO
 * it answered and which answered its own), then that peer was replaced by
 * the scripted one, which starts with HELLO|ALIVE at seq S.
 */
#define S 5000u

/* ResendQueueSize of the next conformance_setup() (0: the default). */
static uint32_t conformance_rqs;

static void conformance_setup(void)
{
	struct ftfw_config c = default_cfg();

	c.resend_queue_size = conformance_rqs;

	/* ACK ranges as 1.4.7 sends them: no widening, no repeats (tested on their own). */
	c.plain_acks = true;
	h_setup_cfg(&c, 1000);
	/* The former peer: its HELLO_BACK ends our hello phase. */
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 77, 0, 0);
	h_advance(2000);
	H.nout = 0;
}

/* ---- protocol.md §3.10, row by row ------------------------------------------------------------- */

START_TEST(hello_is_acked_with_hello_back)
{
	conformance_setup();
	feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, S, 0, 0);        /* 0x30 */
	EXPECT_EQ("messages emitted at once", 0, H.nout);
	/*
	 * 1.4.7 answers with its ACK a second later: 0x48.  Deviation 15:
	 * HELLO_BACK goes at once on an ALIVE (0x50), the ACK on the timer.
	 */
	h_advance(0);
	EXPECT_EQ("an ALIVE at the next tick", 1, H.nout);
	EXPECT_EQ("HELLO_BACK|ALIVE", WIRE_F_HELLO_BACK | WIRE_F_ALIVE, H.out[0].hdr.flags);
	h_advance(1000);
	EXPECT_EQ("ACKs", 1, count_kind(0, WIRE_K_ACK));
	expect_range(find_kind(0, WIRE_K_ACK), "ACK of the HELLO", WIRE_F_ACK, S, S);
	h_teardown();
}
END_TEST

/*
 * The scripted peer starts: to the engine a restart of peer 0 (another
 * process than the former one), so it asks for the peer's table and sends
 * its own, empty.  The peer says HELLO at S - 1 and acknowledges our
 * RESYNC request at S; the rows go on from S + 1.
 */
static void row1(void)
{
	const struct out_msg *rs;

	conformance_setup();
	feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, S - 1, 0, 0);
	h_send();
	rs = find_kind(0, WIRE_K_RESYNC);
	REQUIRE(rs, "no RESYNC request on the peer's restart");
	feed_ctl(WIRE_F_ACK, S, rs->hdr.seq, rs->hdr.seq);
	REQUIRE(ftfw_idle(H.e), "not idle after the peer's restart");
	h_advance(1000);
	H.nout = 0;
}

START_TEST(in_order_data_is_acked_after_the_timer)
{
	uint64_t t0;

	row1();
	t0 = H.now;
	feed_data(0, S + 1, 1, 7);
	EXPECT_EQ("states applied", 1, H.napplied);
	EXPECT_EQ("applied type", WIRE_T_CT_NEW, H.applied[0].type);
	EXPECT_EQ("applied mark", 7, H.applied[0].f.flow.mark);
	h_run_until(t0 + 999);
	EXPECT_EQ("ACKs before one second", 0, count_kind(0, WIRE_K_ACK));
	h_run_until(t0 + 1000);
	expect_range(find_kind(0, WIRE_K_ACK), "ACK", WIRE_F_ACK, S + 1, S + 1);
	h_teardown();
}
END_TEST

static void row2(void)
{
	row1();
	feed_data(0, S + 1, 1, 7);
	h_advance(1000);
	H.nout = 0;
	H.napplied = 0;
}

START_TEST(gap_is_nacked_at_once_and_its_data_accepted)
{
	struct ftfw_stats s;

	row2();
	feed_data(0, S + 6, 6, 9);
	EXPECT_EQ("messages emitted at once", 1, H.nout);
	expect_range(find_kind(0, WIRE_K_NACK), "NACK", WIRE_F_NACK, S + 2, S + 5);
	EXPECT_EQ("states applied", 1, H.napplied);
	s = stats();
	EXPECT_EQ("seq lost (exact, not 1.4.7's +2)", 4, s.seq_lost);
	h_advance(1000);
	expect_range(find_kind(1, WIRE_K_ACK), "later ACK", WIRE_F_ACK, S + 6, S + 6);
	h_teardown();
}
END_TEST

START_TEST(old_sequence_number_is_dropped_and_counted)
{
	row2();
	feed_data(0, S + 6, 6, 9);
	h_advance(1000);
	H.nout = 0;
	H.napplied = 0;
	feed_data(0, S + 3, 3, 9);
	EXPECT_EQ("states applied", 0, H.napplied);
	EXPECT_EQ("messages emitted", 0, H.nout);
	EXPECT_EQ("packets before", 1, stats().seq_before);
	h_advance(3000);
	EXPECT_EQ("ACKs covering nothing new", 0, count_kind(0, WIRE_K_ACK) ? 1 : 0);
	h_teardown();
}
END_TEST

/* Append a TLV to an encoded message and fix its length. */
static size_t add_tlv(uint8_t *buf, size_t len, uint16_t id, uint16_t nta_len, size_t space)
{
	memset(buf + len, 0, space);
	buf[len] = (uint8_t)(nta_len >> 8);
	buf[len + 1] = (uint8_t)nta_len;
	buf[len + 2] = (uint8_t)(id >> 8);
	buf[len + 3] = (uint8_t)id;
	len += space;
	buf[WIRE_OFF_LEN] = (uint8_t)(len >> 8);
	buf[WIRE_OFF_LEN + 1] = (uint8_t)len;
	return len;
}

START_TEST(unknown_attribute_is_rejected_but_acked)
{
	uint8_t buf[WIRE_CT_MAX_LEN + 16];
	size_t n;

	row2();
	n = data_msg(buf, WIRE_T_CT_NEW, 0, S + 2, 2, 1);
	n = add_tlv(buf, n, NTA_MAX, 8, 8);     /* id 33 */
	h_feed(buf, n);
	EXPECT_EQ("states applied", 0, H.napplied);
	EXPECT_EQ("malformed: unknown attribute", 1, stats().malformed[WIRE_R_ATTR_UNKNOWN]);
	h_advance(1000);
	expect_range(find_kind(0, WIRE_K_ACK), "ACK", WIRE_F_ACK, S + 2, S + 2);
	h_teardown();
}
END_TEST

START_TEST(wrong_size_l4proto_is_rejected_but_acked)
{
	uint8_t buf[64] = { 0 };
	size_t n;

	row2();
	buf[0] = WIRE_VERSION << 4 | WIRE_T_CT_NEW;
	buf[WIRE_OFF_SEQ] = (uint8_t)((S + 2) >> 24);
	buf[WIRE_OFF_SEQ + 1] = (uint8_t)((S + 2) >> 16);
	buf[WIRE_OFF_SEQ + 2] = (uint8_t)((S + 2) >> 8);
	buf[WIRE_OFF_SEQ + 3] = (uint8_t)(S + 2);
	n = add_tlv(buf, WIRE_HDR_LEN, NTA_IPV4, 12, 12);
	n = add_tlv(buf, n, NTA_L4PROTO, 8, 8);
	h_feed(buf, n);
	EXPECT_EQ("states applied", 0, H.napplied);
	EXPECT_EQ("malformed: attribute size", 1, stats().malformed[WIRE_R_ATTR_SIZE]);
	h_advance(1000);
	expect_range(find_kind(0, WIRE_K_ACK), "ACK", WIRE_F_ACK, S + 2, S + 2);
	h_teardown();
}
END_TEST

START_TEST(wrong_version_is_never_acked_and_later_nacked)
{
	uint8_t buf[WIRE_CT_MAX_LEN];
	size_t n;

	row2();
	n = data_msg(buf, WIRE_T_CT_NEW, 0, S + 2, 2, 1);
	buf[0] = 2 << 4 | WIRE_T_CT_NEW;
	h_feed(buf, n);
	EXPECT_EQ("states applied", 0, H.napplied);
	EXPECT_EQ("wrong version counted", 1, stats().malformed[WIRE_R_WRONG_VERSION]);
	h_advance(3000);
	EXPECT_EQ("ACKs for it", 0, count_kind(0, WIRE_K_ACK));
	feed_data(0, S + 3, 3, 1);
	expect_range(find_kind(0, WIRE_K_NACK), "NACK", WIRE_F_NACK, S + 2, S + 2);
	h_teardown();
}
END_TEST

START_TEST(two_messages_in_one_datagram_get_one_ack_range)
{
	uint8_t buf[2 * WIRE_CT_MAX_LEN];
	size_t n;

	row2();
	n = data_msg(buf, WIRE_T_CT_NEW, 0, S + 2, 2, 1);
	n += data_msg(buf + n, WIRE_T_CT_UPD, 0, S + 3, 3, 1);
	h_feed(buf, n);
	EXPECT_EQ("states applied", 2, H.napplied);
	EXPECT_EQ("second type", WIRE_T_CT_UPD, H.applied[1].type);
	h_advance(1000);
	EXPECT_EQ("ACKs", 1, count_kind(0, WIRE_K_ACK));
	expect_range(find_kind(0, WIRE_K_ACK), "ACK", WIRE_F_ACK, S + 2, S + 3);
	h_teardown();
}
END_TEST

/*
 * ftfw_receive_batch() decodes ahead, yet digests in order: an old message
 * and a malformed one in the middle change nothing for their neighbours,
 * and the states are applied as ftfw_receive() one by one would apply them.
 */
START_TEST(batch_decodes_ahead_but_applies_in_order)
{
	uint8_t buf[5 * WIRE_CT_MAX_LEN + 16];
	struct wire_msg m[5];
	struct wire_split sp;
	size_t n, k = 0;
	struct ftfw_stats s;

	row2();
	n = data_msg(buf, WIRE_T_CT_NEW, 0, S + 2, 2, 1);
	n += data_msg(buf + n, WIRE_T_CT_NEW, 0, S + 1, 1, 9);         /* old: dropped */
	k = n;
	n = add_tlv(buf + k, data_msg(buf + k, WIRE_T_CT_UPD, 0, S + 3, 3, 1), NTA_MAX, 8, 8) + k;
	n += data_msg(buf + n, WIRE_T_CT_UPD, 0, S + 4, 4, 1);
	n += data_msg(buf + n, WIRE_T_CT_DEL, 0, S + 5, 2, 1);
	wire_split_init(&sp, buf, n, false);
	for (k = 0; k < 5; k++)
		ck_assert_int_eq(wire_split_next(&sp, &m[k]), WIRE_SPLIT_MSG);
	ck_assert_int_eq(ftfw_receive_batch(H.e, 0, m, 5, H.now), 0);
	EXPECT_EQ("hints: every state that decodes, the old one too", 4, H.nprefetched);
	EXPECT_EQ("states applied", 3, H.napplied);
	EXPECT_EQ("first applied", 1024 + 2, ntohs(H.applied[0].f.flow.orig.l4.port.sport));
	EXPECT_EQ("its mark", 1, H.applied[0].f.flow.mark);
	EXPECT_EQ("second applied", 1024 + 4, ntohs(H.applied[1].f.flow.orig.l4.port.sport));
	EXPECT_EQ("second type", WIRE_T_CT_UPD, H.applied[1].type);
	EXPECT_EQ("third applied", 1024 + 2, ntohs(H.applied[2].f.flow.orig.l4.port.sport));
	EXPECT_EQ("third type", WIRE_T_CT_DEL, H.applied[2].type);
	s = stats();
	EXPECT_EQ("old message counted", 1, s.seq_before);
	EXPECT_EQ("malformed: unknown attribute", 1, s.malformed[WIRE_R_ATTR_UNKNOWN]);
	h_advance(1000);
	expect_range(find_kind(0, WIRE_K_ACK), "ACK", WIRE_F_ACK, S + 2, S + 5);
	/* Nothing decoded ahead is left over for the next datagram (its buffer is reused). */
	H.napplied = 0;
	feed_data(0, S + 6, 2, 5);
	EXPECT_EQ("next datagram applied", 1, H.napplied);
	EXPECT_EQ("with its own mark", 5, H.applied[0].f.flow.mark);
	h_teardown();
}
END_TEST

START_TEST(four_trailing_bytes_inside_len_are_accepted)
{
	uint8_t buf[WIRE_CT_MAX_LEN + 4];
	size_t n;

	row2();
	n = data_msg(buf, WIRE_T_CT_NEW, 0, S + 2, 2, 1);
	memset(buf + n, 0, 4);
	n += 4;
	buf[WIRE_OFF_LEN] = (uint8_t)(n >> 8);
	buf[WIRE_OFF_LEN + 1] = (uint8_t)n;
	h_feed(buf, n);
	EXPECT_EQ("states applied", 1, H.napplied);
	h_teardown();
}
END_TEST

START_TEST(resync_request_sends_the_whole_cache)
{
	uint32_t hs[40];
	size_t d;

	row2();
	for (uint32_t i = 0; i < 40; i++)
		hs[i] = put_flow(i, i);
	h_send();
	/* The peer ACKs what we sent: the cache is quiet. */
	feed_ctl(WIRE_F_ACK, S + 2, H.out[0].hdr.seq, H.out[H.nout - 1].hdr.seq);
	put_flow(5, 55);        /* flow 5 is now updated: CT_UPD in the bulk */
	h_send();
	feed_ctl(WIRE_F_ACK, S + 3, H.out[H.nout - 1].hdr.seq, H.out[H.nout - 1].hdr.seq);
	ck_assert(ftfw_idle(H.e));
	d = H.nout;
	feed_ctl(WIRE_F_RESYNC, S + 4, 0, 0);
	h_send();
	EXPECT_EQ("data messages of the bulk", 40, count_kind(d, WIRE_K_DATA));
	for (size_t i = d; i < H.nout; i++)
		if (H.out[i].kind == WIRE_K_DATA) {
			uint32_t k = out_key(&H.out[i]);

			EXPECT_EQ("type of each", k == 5 ? WIRE_T_CT_UPD : WIRE_T_CT_NEW, H.out[i].hdr.type);
		}
	h_advance(1000);
	REQUIRE(find_kind(d, WIRE_K_ACK), "the RESYNC request is ACKed");
	(void)hs;
	h_teardown();
}
END_TEST

START_TEST(nack_resends_with_new_sequence_numbers)
{
	uint32_t first;
	size_t d;

	row2();
	for (uint32_t i = 0; i < 3; i++)
		put_flow(i, 10 + i);
	h_send();
	EXPECT_EQ("sent", 3, H.nout);
	first = H.out[0].hdr.seq;
	d = H.nout;
	feed_ctl(WIRE_F_NACK, S + 2, first, first + 2);
	h_send();
	EXPECT_EQ("resent", 3, count_kind(d, WIRE_K_DATA));
	for (size_t i = 0; i < 3; i++) {
		EXPECT_EQ("new sequence number", first + 3 + i, H.out[d + i].hdr.seq);
		EXPECT_EQ("same state", 10 + i, out_mark(&H.out[d + i]));
	}
	EXPECT_EQ("retransmissions counted", 3, stats().retransmitted);
	h_teardown();
}
END_TEST

/*
 * A reload's larger ResendQueueSize: the in-flight ring grows in place, so
 * what was in flight before is still found by its sequence number (a NACK
 * resends exactly it), and what waited goes out; the sequence space goes on.
 */
START_TEST(reconfigure_grows_the_resend_queue_in_flight)
{
	struct ftfw_config c = default_cfg();
	uint32_t first;
	size_t d;

	c.plain_acks = true;
	conformance_rqs = 8;            /* a ring of 64 slots */
	row2();
	conformance_rqs = 0;
	for (uint32_t i = 0; i < 100; i++)
		put_flow(i, 1000 + i);
	h_send();
	EXPECT_EQ("in flight at ResendQueueSize 8", 8, stats().inflight);
	first = H.out[0].hdr.seq;
	c.resend_queue_size = 200;      /* 400 slots: the ring of 64 grows to 512 */
	ck_assert_int_eq(ftfw_reconfigure(H.e, &c), 0);
	h_send();
	EXPECT_EQ("in flight at ResendQueueSize 200", 100, stats().inflight);
	EXPECT_EQ("the limit reported", 200, stats().inflight_max);
	EXPECT_EQ("no message pushed out of the ring", 0, stats().ring_evictions);
	/* A short range is looked up in the ring by sequence number. */
	d = H.nout;
	feed_ctl(WIRE_F_NACK, S + 2, first + 3, first + 5);
	h_send();
	EXPECT_EQ("resent", 3, count_kind(d, WIRE_K_DATA));
	for (size_t i = 0; i < 3; i++) {
		EXPECT_EQ("the sequence space goes on", first + 100 + i, H.out[d + i].hdr.seq);
		EXPECT_EQ("the state in flight under that number", 1003 + i, out_mark(&H.out[d + i]));
	}
	c.mode = FTFW_MODE_NOTRACK;
	EXPECT_EQ("another mode is refused", -EINVAL, ftfw_reconfigure(H.e, &c));
	h_teardown();
}
END_TEST

START_TEST(ack_covering_all_then_nack_resends_nothing)
{
	uint32_t first, last;
	size_t d;

	row2();
	for (uint32_t i = 0; i < 3; i++)
		put_flow(i, i);
	h_send();
	first = H.out[0].hdr.seq;
	last = H.out[2].hdr.seq;
	feed_ctl(WIRE_F_ACK, S + 2, first, last);
	EXPECT_EQ("in flight after the ACK", 0, stats().inflight);
	d = H.nout;
	feed_ctl(WIRE_F_NACK, S + 3, first, last);
	h_send();
	EXPECT_EQ("resent", 0, count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

/* ---- HELLO (protocol.md §3.6) ---------------------------------------------------------------------- */

/* Two engines wired back to back through in-memory queues, for the handshake trace. */
struct pair_side {
	struct flow_table *t;
	struct ftfw *e;
	size_t nq;
	uint8_t q[64][WIRE_CTL_RANGE_LEN];
	size_t qlen[64];
	uint8_t flags_log[64];
	size_t nlog;
};

static void pair_emit(void *arg, const void *msg, size_t len)
{
	struct pair_side *s = arg;

	REQUIRE(s->nq < 64 && len <= WIRE_CTL_RANGE_LEN, "pair queue");
	memcpy(s->q[s->nq], msg, len);
	s->qlen[s->nq++] = len;
	if (s->nlog < 64)
		s->flags_log[s->nlog++] = ((const uint8_t *)msg)[1];
}

static void pair_apply(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	(void)arg; (void)peer; (void)type; (void)f;
}

static void pair_dead(void *arg, uint32_t h)
{
	(void)arg; (void)h;
}

static void pair_deliver(struct pair_side *from, struct pair_side *to, uint64_t now)
{
	for (size_t i = 0; i < from->nq; i++) {
		struct wire_split sp;
		struct wire_msg m;

		wire_split_init(&sp, from->q[i], from->qlen[i], false);
		while (wire_split_next(&sp, &m) == WIRE_SPLIT_MSG)
			if (to->e)
				ftfw_receive(to->e, 0, &m, now);
	}
	from->nq = 0;
}

static void pair_init(struct pair_side *s, uint32_t seq, uint64_t now)
{
	static const struct ftfw_ops ops = { .emit = pair_emit, .apply = pair_apply,
					     .dead_acked = pair_dead };
	struct flow_table_options o = { .buckets = 16, .seed = 1, .user_bytes = FTFW_USER_BYTES };
	struct ftfw_config c = default_cfg();

	c.plain_acks = true;    /* protocol.md §3.6's trace has no repeated ACKs */
	ck_assert_int_eq(flow_table_new(&o, &s->t), 0);
	ck_assert_int_eq(ftfw_new(&c, &ops, s, s->t, seq, now, &s->e), 0);
}

START_TEST(hello_handshake_trace)
{
	static struct pair_side a, b;
	/*
	 * A said HELLO|ALIVE at once and then once a second while B was down
	 * (1, 1001, 2001 ms).  protocol.md §3.6's trace of 1.4.7 is A 0x30... 0x48 0x08,
	 * B 0x68 0x08: each answers on its next timer.  With deviation 15 B
	 * says HELLO at once when it starts (2500 ms), A answers that at once
	 * (HELLO_BACK, and still HELLO: 0x70), and B answers A's (0x50); then
	 * the ACKs of the timer.
	 */
	uint8_t expect_a[] = { 0x30, 0x30, 0x30, 0x70, 0x08 };
	uint8_t expect_b[] = { 0x30, 0x50, 0x08 };

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	pair_init(&a, 100, 0);
	/* A alone: HELLO|ALIVE every second (B is down, nothing arrives). */
	for (uint64_t t = 1; t <= 6000; t++) {
		if (t == 2500)
			pair_init(&b, 900, t);
		ftfw_tick(a.e, t);
		if (b.e)
			ftfw_tick(b.e, t);
		pair_deliver(&a, &b, t);
		pair_deliver(&b, &a, t);
		if (a.nlog >= 5 && b.nlog >= 3)
			break;
	}
	REQUIRE(a.nlog >= 5 && b.nlog >= 3, "trace too short: A %zu, B %zu", a.nlog, b.nlog);
	for (size_t i = 0; i < sizeof(expect_a); i++)
		REQUIRE(a.flags_log[i] == expect_a[i], "A message %zu: expected 0x%02x, got 0x%02x", i,
			expect_a[i], a.flags_log[i]);
	for (size_t i = 0; i < sizeof(expect_b); i++)
		REQUIRE(b.flags_log[i] == expect_b[i], "B message %zu: expected 0x%02x, got 0x%02x", i,
			expect_b[i], b.flags_log[i]);
	ftfw_free(a.e);
	ftfw_free(b.e);
	flow_table_free(a.t);
	flow_table_free(b.t);
}
END_TEST

/* Deviation 15: a peer's first HELLO is answered at once, its next ones with what we send anyway. */
START_TEST(first_hello_of_a_peer_is_answered_at_once)
{
	h_setup();
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 77, 0, 0);  /* our hello is done */
	h_advance(2000);
	H.nout = 0;
	feed_data(WIRE_F_HELLO, 500, 1, 1);
	feed_data(WIRE_F_HELLO, 501, 2, 1);
	h_advance(0);
	EXPECT_EQ("one ALIVE", 1, H.nout);
	EXPECT_EQ("with HELLO_BACK", WIRE_F_HELLO_BACK | WIRE_F_ALIVE, H.out[0].hdr.flags);
	feed_data(WIRE_F_HELLO, 502, 3, 1);     /* our answer is on its way */
	feed_data(WIRE_F_HELLO, 503, 4, 1);
	h_advance(0);
	EXPECT_EQ("no ALIVE for each HELLO", 1, H.nout);
	h_advance(1000);
	REQUIRE(find_kind(1, WIRE_K_ACK), "the ACK on the timer");
	EXPECT_EQ("it answers the HELLOs since", WIRE_F_ACK | WIRE_F_HELLO_BACK, find_kind(1, WIRE_K_ACK)->hdr.flags);
	h_teardown();
}
END_TEST

/*
 * Deviation 16: while our handshake lasts, ACKs and NACKs do not say HELLO
 * (1.4.7 would empty the resend queue a NACK asks from), and an ALIVE says
 * it once a second even while ACKs go out.
 */
START_TEST(acks_and_nacks_never_say_hello)
{
	size_t alives = 0;

	h_setup();
	h_advance(0);                                   /* our first HELLO|ALIVE */
	H.nout = 0;
	for (uint32_t i = 0; i < 30; i++) {
		/* the peer's bulk, every third message lost; its HELLO_BACK with them */
		if (i % 3 != 1)
			feed_data(0, 500 + i, i, 1);
		h_advance(100);
	}
	for (size_t i = 0; i < H.nout; i++) {
		if (H.out[i].kind == WIRE_K_ACK || H.out[i].kind == WIRE_K_NACK)
			EXPECT_EQ("no HELLO on an ACK or NACK", 0, H.out[i].hdr.flags & WIRE_F_HELLO);
		if (H.out[i].kind == WIRE_K_ALIVE) {
			EXPECT_EQ("HELLO on an ALIVE", WIRE_F_HELLO, H.out[i].hdr.flags & WIRE_F_HELLO);
			alives++;
		}
	}
	REQUIRE(count_kind(0, WIRE_K_NACK) >= 9, "the gaps NACKed");
	REQUIRE(alives >= 2, "an ALIVE a second while the handshake lasts: %zu in 3 s", alives);
	h_teardown();
}
END_TEST

/* Deviation 15: the first HELLO|ALIVE goes at once (1.4.7: after its one-second timer). */
START_TEST(first_alive_says_hello)
{
	h_setup();
	h_advance(0);
	EXPECT_EQ("ALIVE", 1, H.nout);
	EXPECT_EQ("flags", WIRE_F_HELLO | WIRE_F_ALIVE, H.out[0].hdr.flags);
	EXPECT_EQ("length", WIRE_ALIVE_LEN, H.out[0].len);
	EXPECT_EQ("first sequence number", 1000, H.out[0].hdr.seq);
	h_advance(999);
	EXPECT_EQ("nothing more before a second", 1, H.nout);
	h_advance(1);
	EXPECT_EQ("sequence number +1 per message", 1001, H.out[1].hdr.seq);
	h_teardown();
}
END_TEST

/* Deviation 1: a peer still saying HELLO has its gaps NACKed (1.4.7 takes each HELLO as in sync). */
START_TEST(sequence_tracked_while_peer_says_hello)
{
	h_setup();
	feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, S, 0, 0);
	feed_data(WIRE_F_HELLO, S + 1, 1, 1);
	EXPECT_EQ("messages", 0, H.nout);
	feed_data(WIRE_F_HELLO, S + 3, 3, 1);
	/*
	 * We answer its HELLO on our first message (HELLO_BACK).  We are new
	 * too, but an ACK or a NACK does not say HELLO (deviation 16).
	 */
	EXPECT_EQ("messages", 2, H.nout);
	expect_range(&H.out[0], "ACK before the gap", WIRE_F_ACK | WIRE_F_HELLO_BACK, S, S + 1);
	expect_range(&H.out[1], "NACK during handshake", WIRE_F_NACK, S + 2, S + 2);
	EXPECT_EQ("states applied", 2, H.napplied);
	EXPECT_EQ("restarts", 0, stats().peer_restarts);
	h_teardown();
}
END_TEST

/* Deviation 6: on a peer's restart, what was in flight is sent again instead of dropped. */
START_TEST(peer_restart_requeues_what_was_in_flight)
{
	uint64_t retx0;
	uint32_t next = 20;
	size_t d;

	row2();
	for (uint32_t i = 0; i < 3; i++)
		put_flow(i, 20 + i);
	h_send();
	EXPECT_EQ("in flight", 3, stats().inflight);
	d = H.nout;
	retx0 = stats().retransmitted;
	/* The peer restarted, with a counter far from its old one. */
	feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, 3000000000u, 0, 0);
	EXPECT_EQ("restart event", FTFW_PEER_RESTARTED, H.events[H.nevents - 1].ev);
	EXPECT_EQ("in flight after HELLO", 0, stats().inflight);
	EXPECT_EQ("waiting for retransmission", 3, stats().retxq_len);
	h_send();
	/*
	 * The three are the first data sent, as retransmissions; the bulk the
	 * restart also starts (sync.h, FTFW_PEER_RESTARTED) sends them once
	 * more after.
	 */
	EXPECT_EQ("sent again", 3, stats().retransmitted - retx0);
	for (size_t i = d; i < H.nout && next < 23; i++)
		if (H.out[i].kind == WIRE_K_DATA)
			EXPECT_EQ("data sent first after the restart", next++, out_mark(&H.out[i]));
	EXPECT_EQ("data sent again", 23, next);
	REQUIRE(H.out[d].hdr.flags & WIRE_F_HELLO_BACK, "HELLO_BACK on our first message: flags 0x%02x",
		H.out[d].hdr.flags);
	h_advance(1000);
	expect_range(find_kind(d, WIRE_K_ACK), "ACK of the new process", WIRE_F_ACK,
		     3000000000u, 3000000000u);
	h_teardown();
}
END_TEST

/*
 * For a restarted peer the engine tells the owner (peer_event), has it
 * forget what it holds from the peer (peer_reset), asks for the peer's
 * table and sends it ours, in that order.  Without a peer_reset the rest
 * is the same.
 */
START_TEST(restart_resets_peer_then_resyncs_and_bulks)
{
	for (int with_reset = 1; with_reset >= 0; with_reset--) {
		struct ftfw_config c = default_cfg();
		struct ftfw_ops ops = h_ops;
		size_t d, nev;

		if (!with_reset)
			ops.peer_reset = NULL;
		h_setup_ops(&c, &ops, 1000);
		feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
		h_send();                       /* the new peer's bulk, of an empty table */
		for (uint32_t i = 0; i < 3; i++)
			put_flow(i, i);
		h_send();
		feed_ctl(WIRE_F_ACK, 101, 1000, ftfw_next_seq(H.e) - 1);
		REQUIRE(ftfw_idle(H.e), "not idle before the restart");
		EXPECT_EQ("peer resets for a new peer", 0, H.nresets);
		/* Past the spacing of bulk walks that peers cause. */
		h_advance(1500);
		feed_ctl(WIRE_F_ALIVE, 102, 0, 0);
		d = H.nout;
		nev = H.nevents;
		/* The peer restarted, with a counter far from its old one. */
		feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, 3000000000u, 0, 0);
		EXPECT_EQ("events told", nev + 1, H.nevents);
		EXPECT_EQ("event", FTFW_PEER_RESTARTED, H.events[nev].ev);
		EXPECT_EQ("event's peer", 0, H.events[nev].peer);
		EXPECT_EQ("peer resets", with_reset ? 1 : 0, H.nresets);
		if (with_reset) {
			EXPECT_EQ("reset peer", 0, H.resets[0].peer);
			EXPECT_EQ("events told before the reset", nev + 1, H.resets[0].nevents);
			EXPECT_EQ("RESYNC requested before the reset", 0, H.resets[0].resync);
			EXPECT_EQ("bulk running before the reset", 0, H.resets[0].bulk);
		}
		EXPECT_EQ("RESYNC requested", 1, stats().resync_outstanding);
		EXPECT_EQ("bulk running", 1, stats().bulk_running);
		h_send();
		EXPECT_EQ("RESYNC requests sent", 1, count_kind(d, WIRE_K_RESYNC));
		EXPECT_EQ("RESYNC request first", WIRE_K_RESYNC, H.out[d].kind);
		EXPECT_EQ("data of the bulk", 3, count_kind(d, WIRE_K_DATA));
		h_teardown();
	}
}
END_TEST

/*
 * Deviation 24: a forger on the segment sends in the peer's name, first a
 * jump (taken for a restart), then one ALIVE a second in its own space.
 * The real peer's data, interleaved, is all taken; the engine switches
 * between the two spaces instead of restarting again.
 */
START_TEST(forged_restart_does_not_drop_the_real_peers_messages)
{
	/* A jump ahead, a HELLO ahead, a HELLO behind. */
	static const uint8_t forged_flags[] = { WIRE_F_ALIVE, WIRE_F_HELLO | WIRE_F_ALIVE,
						WIRE_F_HELLO | WIRE_F_ALIVE };
	static const uint32_t forged_from[] = { 101u + (1u << 30), 101u + (1u << 30), 101u - (1u << 30) };

	for (unsigned v = 0; v < 3; v++) {
		uint32_t real = 101, forged = forged_from[v];
		struct ftfw_peer_stats ps;
		size_t applied;

		h_setup();
		feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
		for (uint32_t i = 0; i < 5; i++)
			feed_data(0, real++, i, 1);
		h_advance(1500);
		applied = H.napplied;
		EXPECT_EQ("states before the forgery", 5, applied);
		feed_ctl(forged_flags[v], forged++, 0, 0);
		EXPECT_EQ("taken for a restart", 1, stats().peer_restarts);
		for (uint32_t i = 0; i < 20; i++) {
			feed_data(0, real++, 100 + i, 1);
			feed_ctl(WIRE_F_ALIVE, forged++, 0, 0);
			h_advance(1000);
		}
		EXPECT_EQ("real states taken", applied + 20, H.napplied);
		for (uint32_t i = 0; i < 20; i++)
			EXPECT_EQ("the real state's port", 1024 + 100 + i,
				  ntohs(H.applied[applied + i].f.flow.orig.l4.port.sport));
		EXPECT_EQ("restarts", 1, stats().peer_restarts);
		EXPECT_EQ("peer resets", 1, H.nresets);
		REQUIRE(ftfw_peer_stats(H.e, 0, &ps) == 0, "peer stats");
		EXPECT_EQ("space switches", 40, ps.space_switches);
		EXPECT_EQ("no message counted old", 0, ps.seq_before);
		/* A copy of an old real message, the forged space present: old, not a restart. */
		feed_data(0, real - 3, 117, 1);
		EXPECT_EQ("the copy applied", applied + 20, H.napplied);
		EXPECT_EQ("restarts after the copy", 1, stats().peer_restarts);
		h_teardown();
	}
}
END_TEST

/*
 * A restarted peer's old process leaves late datagrams behind: one that
 * continues the old space is taken (a switch), and the new process's
 * next message switches back; nothing restarts twice.  Once the old
 * space is silent past ALT_KEEP_MS it is forgotten, and a message in it
 * is dropped as old.
 */
START_TEST(late_datagrams_of_the_old_process_are_taken_then_forgotten)
{
	uint32_t fresh = 2000000000u;
	struct ftfw_peer_stats ps;

	h_setup();
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
	feed_data(0, 101, 1, 1);
	h_advance(1500);
	feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, fresh++, 0, 0);
	EXPECT_EQ("restarts", 1, stats().peer_restarts);
	feed_data(0, 102, 2, 1);            /* late, from the old process */
	feed_data(WIRE_F_HELLO, fresh++, 3, 1);
	feed_data(WIRE_F_HELLO, fresh++, 4, 1);
	EXPECT_EQ("states taken", 4, H.napplied);
	EXPECT_EQ("restarts", 1, stats().peer_restarts);
	REQUIRE(ftfw_peer_stats(H.e, 0, &ps) == 0, "peer stats");
	EXPECT_EQ("space switches", 2, ps.space_switches);
	for (unsigned i = 0; i < 11; i++) {
		feed_ctl(WIRE_F_ALIVE, fresh++, 0, 0);
		h_advance(1000);
	}
	feed_data(0, 103, 5, 1);            /* the old space, silent for 11 s */
	EXPECT_EQ("states taken", 4, H.napplied);
	REQUIRE(ftfw_peer_stats(H.e, 0, &ps) == 0, "peer stats");
	EXPECT_EQ("space switches", 2, ps.space_switches);
	EXPECT_EQ("dropped as old", 1, ps.seq_before);
	h_teardown();
}
END_TEST

/* A RESYNC request carrying sequence number `seq` from the (known) peer. */
static void feed_resync(uint32_t seq)
{
	feed_ctl(WIRE_F_RESYNC, seq, 0, 0);
}

/* A known peer that answered our HELLO, an idle engine with `n` flows and no walk due. */
static void bulk_setup(uint32_t n)
{
	struct ftfw_config c = default_cfg();

	c.no_bulk_on_new = true;
	h_setup_cfg(&c, 1000);
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
	for (uint32_t i = 0; i < n; i++)
		put_flow(i, i);
	h_send();
	feed_ctl(WIRE_F_ACK, 101, 1000, ftfw_next_seq(H.e) - 1);
	REQUIRE(ftfw_idle(H.e), "not idle after the setup");
}

/* Send and acknowledge until the engine is idle (at most `rounds` rounds). */
static void drain(uint32_t *peer_seq, unsigned rounds)
{
	for (unsigned i = 0; i < rounds && !ftfw_idle(H.e); i++) {
		h_send();
		feed_ctl(WIRE_F_ACK, (*peer_seq)++, 1000, ftfw_next_seq(H.e) - 1);
		h_advance(10);
	}
}

/*
 * Deviation 25: a forger NACKing our whole window, again and again, gets
 * each message resent at most once per NACK_HOLD_MS (50 ms); the first
 * NACK of a message is answered at once, a held one when its hold ends.
 */
START_TEST(nack_flood_resends_each_message_once_per_hold)
{
	uint32_t peer_seq = 102, first;
	size_t d, resent;

	bulk_setup(0);
	first = ftfw_next_seq(H.e);
	for (uint32_t i = 0; i < 10; i++)
		put_flow(i, i);
	h_send();
	d = H.nout;
	feed_ctl(WIRE_F_NACK, peer_seq++, 0, 0xffffffffu);
	feed_ctl(WIRE_F_NACK, peer_seq++, first, first + 9);
	h_send();
	EXPECT_EQ("resent at once, once", 10, count_kind(d, WIRE_K_DATA));
	/* One NACK of everything every millisecond for a second. */
	for (unsigned ms = 0; ms < 1000; ms++) {
		feed_ctl(WIRE_F_NACK, peer_seq++, first, ftfw_next_seq(H.e) - 1);
		h_send();
		h_advance(1);
	}
	resent = count_kind(d, WIRE_K_DATA);
	REQUIRE(resent <= 10 * (1000 / 50 + 2), "%zu resends in a second of NACKs", resent);
	REQUIRE(resent >= 10 * (1000 / 50 - 2), "%zu resends: held ones were never resent", resent);
	REQUIRE(stats().nack_held > 0, "nothing held");
	h_teardown();
}
END_TEST

/* A held resend goes when the hold ends, with no other NACK. */
START_TEST(held_nack_is_answered_when_the_hold_ends)
{
	uint32_t first, resent_seq;
	size_t d;

	bulk_setup(0);
	first = ftfw_next_seq(H.e);
	put_flow(1, 1);
	h_send();
	feed_ctl(WIRE_F_NACK, 102, first, first);
	d = H.nout;
	h_send();
	REQUIRE(find_kind(d, WIRE_K_DATA), "the first NACK is answered at once");
	resent_seq = find_kind(d, WIRE_K_DATA)->hdr.seq;
	h_advance(5);
	feed_ctl(WIRE_F_NACK, 103, resent_seq, resent_seq);
	d = H.nout;
	h_send();
	EXPECT_EQ("resent within the hold", 0, count_kind(d, WIRE_K_DATA));
	h_advance(50);
	h_send();
	EXPECT_EQ("resent once the hold ended", 1, count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

/* Deviation 25: a peer NACKing what it acknowledged gets nothing again. */
START_TEST(nack_of_what_its_sender_acked_is_ignored)
{
	struct ftfw_config c = default_cfg();
	uint32_t first;
	size_t d;

	c.no_bulk_on_new = true;
	h_setup_cfg(&c, 1000);
	feed_ctl_peer(0, WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
	feed_ctl_peer(1, WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 500, 0, 0);
	h_send();
	first = ftfw_next_seq(H.e);
	put_flow(1, 1);
	h_send();
	feed_ctl_peer(0, WIRE_F_ACK, 101, first, first);
	d = H.nout;
	feed_ctl_peer(0, WIRE_F_NACK, 102, first, first);
	h_send();
	EXPECT_EQ("resent", 0, count_kind(d, WIRE_K_DATA));
	EXPECT_EQ("counted", 1, stats().nack_acked);
	feed_ctl_peer(1, WIRE_F_NACK, 501, first, first);
	h_send();
	EXPECT_EQ("resent for the peer that lost it", 1, count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

START_TEST(resync_requests_during_a_walk_make_one_more_walk)
{
	uint32_t peer_seq = 102;
	size_t d;

	bulk_setup(300);
	d = H.nout;
	feed_resync(peer_seq++);
	EXPECT_EQ("a walk runs", 1, stats().bulk_running);
	/* Part of the walk goes out, then a hundred more requests come. */
	ftfw_send(H.e, H.now, 2000);
	for (int i = 0; i < 100; i++)
		feed_resync(peer_seq++);
	drain(&peer_seq, 1000);
	EXPECT_EQ("walks", 2, stats().bulk_walks);
	/* The first request during the walk makes the second one; the 99 others fold into it. */
	EXPECT_EQ("requests folded in", 99, stats().bulk_coalesced);
	REQUIRE(count_kind(d, WIRE_K_DATA) <= 600 && count_kind(d, WIRE_K_DATA) >= 300,
		"data messages: expected 300..600 (at most two walks), got %zu", count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

/*
 * The walk that a request made runs at once, but a request during that
 * walk waits for the spacing: run at once too, requests timed to each walk
 * would keep the table going out back to back (found by fuzz_sync).
 */
START_TEST(a_request_during_the_second_walk_waits_for_the_spacing)
{
	uint32_t peer_seq = 102;
	uint64_t t_end;

	bulk_setup(600);
	feed_resync(peer_seq++);
	ftfw_send(H.e, H.now, 2000);
	feed_resync(peer_seq++);
	for (int i = 0; i < 1000 && stats().bulk_walks < 2; i++)
		ftfw_send(H.e, H.now, 2000);
	EXPECT_EQ("the second walk at once", 2, stats().bulk_walks);
	/* About 260 messages: the end of the first walk and the start of the second. */
	for (int i = 0; i < 10; i++)
		ftfw_send(H.e, H.now, 2000);
	EXPECT_EQ("the second walk runs", 1, stats().bulk_running);
	feed_resync(peer_seq++);
	for (int i = 0; i < 1000 && stats().bulk_running; i++)
		ftfw_send(H.e, H.now, 2000);
	EXPECT_EQ("no third walk at once", 2, stats().bulk_walks);
	EXPECT_EQ("the third one waits", 1, stats().bulk_waiting);
	/* Three requests within 30 s: the spacing is 4 s from the end of the second walk. */
	t_end = H.now;
	h_run_until(t_end + 3900);
	EXPECT_EQ("still waiting at 3.9 s", 2, stats().bulk_walks);
	h_run_until(t_end + 4100);
	EXPECT_EQ("the third walk at 4 s", 3, stats().bulk_walks);
	drain(&peer_seq, 1000);
	REQUIRE(ftfw_idle(H.e), "not idle after the third walk");
	h_teardown();
}
END_TEST

START_TEST(a_request_on_a_walk_not_begun_adds_nothing)
{
	uint32_t peer_seq = 102;
	size_t d;

	bulk_setup(50);
	d = H.nout;
	feed_resync(peer_seq++);
	feed_resync(peer_seq++);
	drain(&peer_seq, 1000);
	EXPECT_EQ("walks", 1, stats().bulk_walks);
	EXPECT_EQ("coalesced", 1, stats().bulk_coalesced);
	EXPECT_EQ("data messages", 50, count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

START_TEST(peers_walks_are_spaced_and_the_spacing_grows)
{
	uint32_t peer_seq = 102;
	uint64_t t0;
	size_t d;

	bulk_setup(20);
	feed_resync(peer_seq++);
	drain(&peer_seq, 100);
	EXPECT_EQ("first walk at once", 1, stats().bulk_walks);
	/* Right after: it waits a second. */
	t0 = H.now;
	feed_resync(peer_seq++);
	EXPECT_EQ("waiting", 1, stats().bulk_waiting);
	d = H.nout;
	h_send();
	EXPECT_EQ("nothing sent while waiting", 0, count_kind(d, WIRE_K_DATA));
	h_run_until(t0 + 900);
	EXPECT_EQ("still waiting after 0.9 s", 1, stats().bulk_waiting);
	h_run_until(t0 + 1100);
	EXPECT_EQ("second walk after the spacing", 2, stats().bulk_walks);
	drain(&peer_seq, 100);
	/* And the next one waits longer (two seconds). */
	t0 = H.now;
	feed_resync(peer_seq++);
	h_run_until(t0 + 1500);
	EXPECT_EQ("third walk not yet at 1.5 s", 2, stats().bulk_walks);
	h_run_until(t0 + 2100);
	EXPECT_EQ("third walk at 2 s", 3, stats().bulk_walks);
	drain(&peer_seq, 100);
	/* After 30 s of quiet the spacing is back to one second. */
	h_advance(31000);
	feed_resync(peer_seq++);
	EXPECT_EQ("at once after a quiet spell", 4, stats().bulk_walks);
	h_teardown();
}
END_TEST

/* The answer to a flood of requests is bounded by the spacing, not by the requests. */
START_TEST(a_resync_flood_sends_the_table_a_bounded_number_of_times)
{
	uint32_t peer_seq = 102;
	size_t d;

	bulk_setup(100);
	d = H.nout;
	/* One request every 10 ms for 20 s. */
	for (int i = 0; i < 2000; i++) {
		feed_resync(peer_seq++);
		h_send();
		feed_ctl(WIRE_F_ACK, peer_seq++, 1000, ftfw_next_seq(H.e) - 1);
		h_advance(10);
	}
	/* Walks at about 0, 1, 3, 7, 15 s, each one possibly doubled by a request during it. */
	REQUIRE(stats().bulk_walks <= 10, "walks: expected at most 10, got %llu",
		(unsigned long long)stats().bulk_walks);
	REQUIRE(count_kind(d, WIRE_K_DATA) <= 10 * 100, "data messages: expected at most 1000, got %zu",
		count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

START_TEST(operator_bulk_is_never_spaced)
{
	uint32_t peer_seq = 102;

	bulk_setup(10);
	feed_resync(peer_seq++);
	drain(&peer_seq, 100);
	ftfw_bulk(H.e);
	EXPECT_EQ("-B runs at once", 1, stats().bulk_running);
	EXPECT_EQ("walks", 2, stats().bulk_walks);
	h_teardown();
}
END_TEST

START_TEST(duplicate_hello_is_not_a_restart)
{
	h_setup();
	feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, S, 0, 0);
	feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, S, 0, 0);
	EXPECT_EQ("restarts", 0, stats().peer_restarts);
	EXPECT_EQ("dropped as before", 1, stats().seq_before);
	h_teardown();
}
END_TEST

START_TEST(sequence_jump_without_hello_is_a_restart)
{
	uint64_t r0;

	row2();
	r0 = stats().peer_restarts;     /* the scripted peer replacing the real one was one */
	feed_data(0, S + 2 + (1u << 21), 2, 2);
	EXPECT_EQ("restarts", r0 + 1, stats().peer_restarts);
	EXPECT_EQ("NACKs for the jump", 0, count_kind(0, WIRE_K_NACK));
	EXPECT_EQ("state applied", 1, H.napplied);
	h_teardown();
}
END_TEST

START_TEST(only_old_numbers_for_two_seconds_is_a_restart)
{
	uint64_t r0;

	row2();
	r0 = stats().peer_restarts;
	for (int i = 0; i < 3; i++) {
		feed_data(0, 10 + (uint32_t)i, 1, 1);
		h_advance(1000);
	}
	EXPECT_EQ("restarts after 2 s and 3 messages", r0, stats().peer_restarts);
	feed_data(0, 13, 1, 1);
	EXPECT_EQ("restarts after the 4th", r0 + 1, stats().peer_restarts);
	EXPECT_EQ("the new process's message applied", 1, H.napplied);
	h_teardown();
}
END_TEST

/*
 * A restarted 1.4.7 starts its counter at time(NULL), often below where
 * its previous process stopped, and still saying HELLO as that process
 * was.  Its StartupResync request, sent once, must be answered.  Numbered
 * at or after the first number of the present space, it can only be a new
 * process's first message: a restart (deviation 20).  Numbered before, we
 * cannot tell it from a delayed message and drop it as old until
 * classify_old() sees the restart; the request is answered all the same.
 */
START_TEST(old_numbered_resync_request_is_answered)
{
	size_t d;

	for (int below = 0; below <= 1; below++) {
		uint32_t base = below ? S + 10 : S;

		h_setup();
		for (uint32_t i = 0; i < 20; i++)
			feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, base + i, 0, 0);
		for (uint32_t i = 0; i < 5; i++)
			put_flow(i, i);
		h_send();
		d = H.nout;
		feed_ctl(WIRE_F_HELLO | WIRE_F_RESYNC, S + 5, 0, 0);
		EXPECT_EQ("dropped as before", below ? 1 : 0, stats().seq_before);
		EXPECT_EQ("restarts", below ? 0 : 1, stats().peer_restarts);
		h_send();
		/*
		 * Deviation 18: the bulk waits for the peer's answer to our
		 * HELLO.  A restart sends what was in flight again at once.
		 */
		EXPECT_EQ("before the answer to our HELLO", below ? 0 : 5, count_kind(d, WIRE_K_DATA));
		d = H.nout;
		feed_ctl(WIRE_F_HELLO | WIRE_F_HELLO_BACK | WIRE_F_ALIVE, S + 6, 0, 0);
		h_send();
		EXPECT_EQ("data messages of the bulk", 5, count_kind(d, WIRE_K_DATA));
		EXPECT_EQ("RESYNC requests counted", 1, stats().resync_recv);
		/* A copy of the same request is no second restart. */
		feed_ctl(WIRE_F_HELLO | WIRE_F_RESYNC, S + 5, 0, 0);
		EXPECT_EQ("restarts after a copy", below ? 0 : 1, stats().peer_restarts);
		h_teardown();
	}
}
END_TEST

/*
 * Deviation 20: a RESYNC flagged HELLO numbered among the old ones, but
 * after a silence no live 1.4.7 keeps (its timer speaks every second), is
 * a new process's: a restart.  Amid the peer's traffic it is dropped as
 * old (a late copy), and only answered.
 */
START_TEST(resync_hello_after_a_silence_is_a_restart)
{
	for (int silent = 0; silent <= 1; silent++) {
		h_setup();
		for (uint32_t i = 0; i < 20; i++)
			feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, S + 10 + i, 0, 0);
		h_advance(silent ? 3000 : 500);
		feed_ctl(WIRE_F_HELLO | WIRE_F_RESYNC, S + 5, 0, 0);
		EXPECT_EQ("restarts", silent ? 1 : 0, stats().peer_restarts);
		EXPECT_EQ("RESYNC requests counted", 1, stats().resync_recv);
		h_teardown();
	}
}
END_TEST

/*
 * Deviation 18's wait has a bound: a peer that never answers our HELLO
 * (the same node over a second link whose first one is down is a second
 * peer) must not hold a RESYNC request for ever.
 */
START_TEST(resync_request_waits_for_hello_only_so_long)
{
	h_setup();
	feed_ctl(WIRE_F_ALIVE, 100, 0, 0);              /* a peer that does not answer our HELLO */
	ftfw_request_resync(H.e);
	h_advance(1000);
	h_send();
	REQUIRE(!find_kind(0, WIRE_K_RESYNC), "held while we say HELLO");
	h_advance(5000);
	h_send();
	REQUIRE(find_kind(0, WIRE_K_RESYNC), "sent once the wait is over");
	h_teardown();
}
END_TEST

/*
 * A ctsyncd peer in its handshake flags its data and ALIVEs HELLO, never
 * its ACKs: an ACK between them is not the end of its handshake, and the
 * next HELLO message no restart.
 */
START_TEST(ack_without_hello_amid_a_peers_handshake_is_no_restart)
{
	h_setup();
	feed_data(WIRE_F_HELLO, 900, 1, 1);
	feed_ctl(WIRE_F_ACK, 901, 0, 0);
	feed_data(WIRE_F_HELLO, 902, 2, 1);
	feed_ctl(WIRE_F_NACK, 903, 0, 0);
	feed_data(WIRE_F_HELLO, 904, 3, 1);
	EXPECT_EQ("restarts", 0, stats().peer_restarts);
	EXPECT_EQ("states applied", 3, H.napplied);
	h_teardown();
}
END_TEST

/* ---- ACK window (protocol.md §3.4) -------------------------------------------------------------------- */

/*
 * The window counts messages that carry news (data, RESYNC); ACK, NACK
 * and ALIVE are acknowledged by the timer (1.4.7 counts them too, and
 * with a tiny window, or three nodes, ACKs then answer ACKs without end).
 */
START_TEST(full_ack_window_acks_at_once)
{
	struct ftfw_config c = default_cfg();

	c.ack_window = 4;
	h_setup_cfg(&c, 1000);
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, S, 0, 0);
	for (uint32_t i = 1; i <= 3; i++)
		feed_data(0, S + i, i, 1);
	EXPECT_EQ("ACKs after an ALIVE and 3 data", 0, count_kind(0, WIRE_K_ACK));
	feed_data(0, S + 4, 4, 1);
	EXPECT_EQ("ACKs after 4 data", 1, count_kind(0, WIRE_K_ACK));
	expect_range(find_kind(0, WIRE_K_ACK), "window ACK", WIRE_F_ACK, S, S + 4);
	for (uint32_t i = 5; i <= 7; i++)
		feed_data(0, S + i, i, 1);
	EXPECT_EQ("no ACK before the window fills again", 1, count_kind(0, WIRE_K_ACK));
	feed_data(0, S + 8, 8, 1);
	EXPECT_EQ("second window ACK", 2, count_kind(0, WIRE_K_ACK));
	h_teardown();
}
END_TEST

/* Deviation 10: an ACK covers the ranges of the two before it in the same run. */
START_TEST(ack_covers_the_two_ranges_before_it)
{
	struct ftfw_config c = default_cfg();
	size_t d;

	c.ack_window = 2;
	h_setup_cfg(&c, 1000);
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, S, 0, 0);
	for (uint32_t i = 1; i <= 8; i++)
		feed_data(0, S + i, i, 1);
	/* Window ACKs after data 2, 4, 6, 8 (the ALIVE does not count). */
	EXPECT_EQ("ACKs", 4, count_kind(0, WIRE_K_ACK));
	expect_range(&H.out[0], "1st", WIRE_F_ACK, S, S + 2);
	expect_range(&H.out[1], "2nd covers the 1st", WIRE_F_ACK, S, S + 4);
	expect_range(&H.out[2], "3rd covers two before", WIRE_F_ACK, S, S + 6);
	expect_range(&H.out[3], "4th: two before only", WIRE_F_ACK, S + 3, S + 8);
	/* A gap starts a new run: never an ACK across it. */
	d = H.nout;
	feed_data(0, S + 10, 10, 1);
	feed_data(0, S + 11, 11, 1);
	EXPECT_EQ("NACK", 1, count_kind(d, WIRE_K_NACK));
	expect_range(find_kind(d, WIRE_K_ACK), "after the gap", WIRE_F_ACK, S + 10, S + 11);
	h_teardown();
}
END_TEST

/* Deviation 11: every ACK goes again 20 ms later, in another datagram. */
START_TEST(ack_is_repeated_in_a_later_datagram)
{
	uint64_t t0;
	size_t d;

	h_setup();
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, S, 0, 0);
	feed_data(0, S + 1, 1, 1);
	feed_data(0, S + 3, 3, 1);      /* gap: ACK [S, S+1], NACK [S+2] */
	t0 = H.now;
	expect_range(&H.out[0], "ACK", WIRE_F_ACK, S, S + 1);
	d = H.nout;
	h_run_until(t0 + 19);
	EXPECT_EQ("repeat before 20 ms", 0, count_kind(d, WIRE_K_ACK));
	h_run_until(t0 + 20);
	EXPECT_EQ("repeat at 20 ms", 1, count_kind(d, WIRE_K_ACK));
	expect_range(find_kind(d, WIRE_K_ACK), "repeat", WIRE_F_ACK, S, S + 1);
	EXPECT_EQ("counted", 1, stats().ack_repeated);
	h_teardown();
}
END_TEST

/* Deviation 2, fast path: a later message ACKed, the older one is sent again before its RTO. */
START_TEST(overdue_message_is_resent_before_its_rto)
{
	uint32_t first, second;
	uint64_t t0;
	size_t d;

	row2();
	put_flow(1, 1);
	h_send();
	t0 = H.now;
	first = H.out[0].hdr.seq;
	H.now += 50;
	put_flow(2, 2);
	h_send();
	second = H.out[1].hdr.seq;
	/* Only the second is ACKed: the first or its ACK was lost. */
	feed_ctl(WIRE_F_ACK, S + 2, second, second);
	d = H.nout;
	h_run_until(t0 + 99);
	h_send();
	EXPECT_EQ("resent before 100 ms", 0, count_kind(d, WIRE_K_DATA));
	h_run_until(t0 + 100);
	h_send();
	EXPECT_EQ("resent at 100 ms", 1, count_kind(d, WIRE_K_DATA));
	EXPECT_EQ("the first flow", 1, out_mark(find_kind(d, WIRE_K_DATA)));
	EXPECT_EQ("fast retransmits", 1, stats().fast_retransmits);
	EXPECT_EQ("no RTO", 0, stats().rto_rounds);
	(void)first;
	h_teardown();
}
END_TEST

/* Deviation 9: a NACK lost on its way to a 1.4.7 sender (which has no RTO) is repeated. */
START_TEST(gap_is_nacked_again_until_given_up)
{
	uint64_t t0;
	size_t d;

	row2();
	feed_data(0, S + 5, 5, 1);
	expect_range(find_kind(0, WIRE_K_NACK), "first NACK", WIRE_F_NACK, S + 2, S + 4);
	t0 = H.now;
	d = H.nout;
	h_run_until(t0 + 999);
	EXPECT_EQ("NACKs before a second", 0, count_kind(d, WIRE_K_NACK));
	h_run_until(t0 + 1000);
	expect_range(find_kind(d, WIRE_K_NACK), "second NACK", WIRE_F_NACK, S + 2, S + 4);
	d = H.nout;
	h_run_until(t0 + 2999);
	EXPECT_EQ("NACKs before 1 s + 2 s", 0, count_kind(d, WIRE_K_NACK));
	h_run_until(t0 + 3000);
	EXPECT_EQ("third NACK", 1, count_kind(d, WIRE_K_NACK));
	h_advance(600000);
	EXPECT_EQ("NACKs in all", 12, count_kind(0, WIRE_K_NACK));
	EXPECT_EQ("repeated", 11, stats().nack_repeated);
	h_teardown();
}
END_TEST

START_TEST(gap_acks_what_came_before_it)
{
	size_t d;

	row2();
	feed_data(0, S + 2, 2, 1);
	d = H.nout;
	feed_data(0, S + 5, 5, 1);
	EXPECT_EQ("ACK and NACK", 2, H.nout - d);
	expect_range(&H.out[d], "ACK first", WIRE_F_ACK, S + 2, S + 2);
	expect_range(&H.out[d + 1], "then NACK", WIRE_F_NACK, S + 3, S + 4);
	h_teardown();
}
END_TEST

/* Deviation 7: ACKs are due a second after the first unacked message, even while we send. */
START_TEST(busy_sender_still_acks_within_a_second)
{
	uint64_t t0;

	row2();
	t0 = H.now;
	feed_data(0, S + 2, 2, 1);
	for (uint32_t i = 0; i < 10; i++) {
		H.now += 100;
		put_flow(i, i);
		h_send();
		ftfw_tick(H.e, H.now);
	}
	REQUIRE(H.now == t0 + 1000, "clock");
	expect_range(find_kind(0, WIRE_K_ACK), "ACK", WIRE_F_ACK, S + 2, S + 2);
	h_teardown();
}
END_TEST

/* ---- what ctsyncd adds to the sender ------------------------------------------------------- */

START_TEST(rto_retransmits_unacknowledged_data)
{
	uint64_t t0;
	uint32_t seq0;
	size_t d;

	row2();
	feed_ctl(WIRE_F_ALIVE, S + 2, 0, 0);    /* the peer spoke: the first round resends all */
	put_flow(1, 42);
	t0 = H.now;
	h_send();
	seq0 = H.out[0].hdr.seq;
	d = H.nout;
	h_run_until(t0 + FTFW_DEFAULT_RTO_MS - 1);
	h_send();
	EXPECT_EQ("data resent before the RTO", 0, count_kind(d, WIRE_K_DATA));
	h_run_until(t0 + FTFW_DEFAULT_RTO_MS);
	h_send();
	EXPECT_EQ("data resent at the RTO", 1, count_kind(d, WIRE_K_DATA));
	{
		const struct out_msg *m = find_kind(d, WIRE_K_DATA);

		REQUIRE(seq_newer(m->hdr.seq, seq0), "fresh sequence number");
		EXPECT_EQ("same state", 42, out_mark(m));
	}
	/* The peer is silent from now on: probes, with the timeout doubled each time. */
	d = H.nout;
	h_run_until(t0 + 2 * FTFW_DEFAULT_RTO_MS - 1);
	h_send();
	EXPECT_EQ("resent before the second RTO", 0, count_kind(d, WIRE_K_DATA));
	h_run_until(t0 + 2 * FTFW_DEFAULT_RTO_MS);
	h_send();
	EXPECT_EQ("resent at the second RTO", 1, count_kind(d, WIRE_K_DATA));
	d = H.nout;
	h_run_until(t0 + 4 * FTFW_DEFAULT_RTO_MS - 1);
	h_send();
	EXPECT_EQ("resent before the doubled RTO", 0, count_kind(d, WIRE_K_DATA));
	h_run_until(t0 + 4 * FTFW_DEFAULT_RTO_MS);
	h_send();
	EXPECT_EQ("resent at the doubled RTO", 1, count_kind(d, WIRE_K_DATA));
	EXPECT_EQ("rto rounds", 3, stats().rto_rounds);
	/* An ACK ends it. */
	feed_ctl(WIRE_F_ACK, S + 3, H.out[H.nout - 1].hdr.seq, H.out[H.nout - 1].hdr.seq);
	ck_assert(ftfw_idle(H.e));
	d = H.nout;
	h_advance(60000);
	h_send();
	EXPECT_EQ("nothing resent after the ACK", 0, count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

START_TEST(rto_probes_a_silent_peer_with_one_message)
{
	size_t d;

	row2();
	for (uint32_t i = 0; i < 10; i++)
		put_flow(i, i);
	h_send();
	/* First round: the peer spoke after we sent and lacks them all, so everything goes. */
	h_advance(1);
	feed_ctl(WIRE_F_ALIVE, S + 1, 0, 0);
	d = H.nout;
	h_advance(FTFW_DEFAULT_RTO_MS);
	h_send();
	EXPECT_EQ("first round resends all", 10, count_kind(d, WIRE_K_DATA));
	/* The peer stays silent: later rounds send one probe each. */
	d = H.nout;
	h_advance(2 * FTFW_DEFAULT_RTO_MS);
	h_send();
	EXPECT_EQ("probe", 1, count_kind(d, WIRE_K_DATA));
	/* The peer comes back and ACKs the probe: the rest follows at once. */
	d = H.nout;
	feed_ctl(WIRE_F_ACK, S + 2, H.out[H.nout - 1].hdr.seq, H.out[H.nout - 1].hdr.seq);
	h_advance(1);
	h_send();
	EXPECT_EQ("the rest after the peer spoke", 9, count_kind(d, WIRE_K_DATA));
	/* Silent since: the next round probes again, with one message. */
	d = H.nout;
	h_advance(FTFW_DEFAULT_RTO_MS + 1);
	h_send();
	EXPECT_EQ("probe after the peer fell silent again", 1, count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

START_TEST(flow_control_at_resend_queue_size)
{
	struct ftfw_config c = default_cfg();
	struct ftfw_stats s;
	uint32_t first;

	c.resend_queue_size = 4;
	h_setup_cfg(&c, 1000);
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, S, 0, 0);
	for (uint32_t i = 0; i < 10; i++)
		put_flow(i, i);
	h_send();
	s = stats();
	EXPECT_EQ("sent", 4, count_kind(0, WIRE_K_DATA));
	EXPECT_EQ("in flight", 4, s.inflight);
	EXPECT_EQ("still queued (not dropped)", 6, s.txq_len);
	EXPECT_EQ("stalls", 1, s.flow_control_stalls);
	ck_assert(!ftfw_send_ready(H.e));
	first = H.out[0].hdr.seq;
	feed_ctl(WIRE_F_ACK, S + 1, first, first + 1);
	ck_assert(ftfw_send_ready(H.e));
	h_send();
	EXPECT_EQ("sent after the ACK", 6, count_kind(0, WIRE_K_DATA));
	EXPECT_EQ("in flight", 4, stats().inflight);
	h_teardown();
}
END_TEST

START_TEST(only_the_latest_state_is_sent)
{
	uint32_t h = 0;

	row2();
	/* Five updates before the first transmission: one message. */
	for (uint32_t m = 1; m <= 5; m++)
		h = put_flow(7, m);
	h_send();
	EXPECT_EQ("messages", 1, count_kind(0, WIRE_K_DATA));
	EXPECT_EQ("state", 5, out_mark(&H.out[0]));
	/* Five updates while in flight and unacked: one message, the last state. */
	for (uint32_t m = 6; m <= 10; m++)
		put_flow(7, m);
	EXPECT_EQ("queued once", 1, stats().txq_len);
	EXPECT_EQ("the old message is no longer in flight", 0, stats().inflight);
	h_send();
	EXPECT_EQ("messages", 2, count_kind(0, WIRE_K_DATA));
	EXPECT_EQ("state", 10, out_mark(&H.out[1]));
	EXPECT_EQ("type: CT_NEW, nothing of it acknowledged yet (deviation 19)", WIRE_T_CT_NEW, H.out[1].hdr.type);
	/* A NACK of the abandoned message resends nothing. */
	feed_ctl(WIRE_F_NACK, S + 2, H.out[0].hdr.seq, H.out[0].hdr.seq);
	h_send();
	EXPECT_EQ("messages after a NACK of the old one", 2, count_kind(0, WIRE_K_DATA));
	/* And the RTO resends the last state only, once. */
	h_advance(FTFW_DEFAULT_RTO_MS);
	h_send();
	EXPECT_EQ("messages after the RTO", 3, count_kind(0, WIRE_K_DATA));
	EXPECT_EQ("state", 10, out_mark(&H.out[H.nout - 1]));
	(void)h;
	h_teardown();
}
END_TEST

/*
 * Deviation 19: a flow deleted and created again before its DEL was
 * acknowledged goes out as CT_NEW, even updated, until a message of the
 * new life is acknowledged: 1.4.7 would lay a CT_UPD over the old life.
 */
START_TEST(new_life_is_sent_as_ct_new_until_acknowledged)
{
	uint32_t h;
	size_t d;

	row2();
	h = put_flow(3, 1);
	h_send();
	feed_ctl(WIRE_F_ACK, S + 2, H.out[0].hdr.seq, H.out[0].hdr.seq);
	put_flow(3, 2);
	h_send();
	EXPECT_EQ("an update of an acknowledged life", WIRE_T_CT_UPD, H.out[1].hdr.type);
	feed_ctl(WIRE_F_ACK, S + 3, H.out[1].hdr.seq, H.out[1].hdr.seq);
	kill_flow(h);
	h_send();
	EXPECT_EQ("DEL", WIRE_T_CT_DEL, H.out[2].hdr.type);
	/* The DEL is lost; the flow comes back and changes twice. */
	put_flow(3, 3);
	put_flow(3, 4);
	d = H.nout;
	h_send();
	EXPECT_EQ("the new life, updated", WIRE_T_CT_NEW, H.out[d].hdr.type);
	put_flow(3, 5);
	d = H.nout;
	h_send();
	EXPECT_EQ("still CT_NEW before an ACK", WIRE_T_CT_NEW, H.out[d].hdr.type);
	feed_ctl(WIRE_F_ACK, S + 4, H.out[d].hdr.seq, H.out[d].hdr.seq);
	put_flow(3, 6);
	d = H.nout;
	h_send();
	EXPECT_EQ("CT_UPD once acknowledged", WIRE_T_CT_UPD, H.out[d].hdr.type);
	h_teardown();
}
END_TEST

/* Deviation 19: a flow of the start-up dump may be an old copy at the peer. */
START_TEST(loaded_flow_is_sent_as_ct_new_until_acknowledged)
{
	uint32_t h;
	size_t d;

	row2();
	h = put_flow(4, 1);
	ck_assert_int_eq(ftfw_flow_loaded(H.e, h), 0);
	ftfw_flow_forget(H.e, h);       /* loaded, not a change to send */
	put_flow(4, 2);
	d = H.nout;
	h_send();
	EXPECT_EQ("an update of a loaded flow", WIRE_T_CT_NEW, H.out[d].hdr.type);
	feed_ctl(WIRE_F_ACK, S + 2, H.out[d].hdr.seq, H.out[d].hdr.seq);
	put_flow(4, 3);
	d = H.nout;
	h_send();
	EXPECT_EQ("CT_UPD once acknowledged", WIRE_T_CT_UPD, H.out[d].hdr.type);
	h_teardown();
}
END_TEST

START_TEST(acked_del_is_handed_to_the_owner)
{
	uint32_t h;

	row2();
	h = put_flow(3, 1);
	h_send();
	feed_ctl(WIRE_F_ACK, S + 2, H.out[0].hdr.seq, H.out[0].hdr.seq);
	EXPECT_EQ("no DEL acked yet", 0, H.ndead);
	kill_flow(h);
	h_send();
	EXPECT_EQ("type", WIRE_T_CT_DEL, H.out[1].hdr.type);
	EXPECT_EQ("owner not told before the ACK", 0, H.ndead);
	feed_ctl(WIRE_F_ACK, S + 3, H.out[1].hdr.seq, H.out[1].hdr.seq);
	EXPECT_EQ("owner told", 1, H.ndead);
	EXPECT_EQ("the handle", h, H.dead[0]);
	EXPECT_EQ("entry deleted by the owner", 0, flow_table_count(H.t));
	ck_assert(ftfw_idle(H.e));
	h_teardown();
}
END_TEST

START_TEST(bulk_is_paced_by_the_window_and_sends_each_flow_once)
{
	struct ftfw_config c = default_cfg();
	static uint8_t seen[1000];
	unsigned rounds = 0;
	size_t d = 0;

	c.resend_queue_size = 100;
	h_setup_cfg(&c, 1000);
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, S, 0, 0);
	for (uint32_t i = 0; i < 1000; i++)
		put_flow(i, i);
	h_send();
	/* Let the initial transmission drain. */
	while (!ftfw_idle(H.e) && rounds < 100) {
		rounds++;
		feed_ctl(WIRE_F_ACK, S + rounds, H.out[d].hdr.seq, H.out[H.nout - 1].hdr.seq);
		d = H.nout;
		h_send();
	}
	ck_assert(ftfw_idle(H.e));
	memset(seen, 0, sizeof(seen));
	d = H.nout;
	ftfw_bulk(H.e);
	for (unsigned w = 0;; w++) {
		size_t before = H.nout;

		h_send();
		/* The bulk leaves an eighth of the window to live changes. */
		REQUIRE(stats().inflight <= 100 - 100 / 8, "in flight %u", stats().inflight);
		if (H.nout == before) {
			EXPECT_EQ("window rounds", (1000 + 87) / 88, w);
			break;
		}
		rounds++;
		feed_ctl(WIRE_F_ACK, S + rounds, H.out[before].hdr.seq, H.out[H.nout - 1].hdr.seq);
	}
	EXPECT_EQ("bulk messages", 1000, count_kind(d, WIRE_K_DATA));
	for (size_t i = d; i < H.nout; i++) {
		uint32_t k;

		if (H.out[i].kind != WIRE_K_DATA)
			continue;
		k = out_key(&H.out[i]);

		REQUIRE(k < 1000 && !seen[k], "flow %u sent twice", k);
		seen[k] = 1;
	}
	ck_assert(ftfw_idle(H.e));
	h_teardown();
}
END_TEST

START_TEST(send_respects_the_byte_budget)
{
	size_t n, one;
	uint32_t h0 = 0;

	row2();
	for (uint32_t i = 0; i < 10; i++) {
		uint32_t h = put_flow(i, i);

		if (i == 0)
			h0 = h;
	}
	one = (size_t)ftfw_msg_size(H.e, h0);
	n = ftfw_send(H.e, H.now, 3 * one + one / 2);
	EXPECT_EQ("bytes", 3 * one, n);
	EXPECT_EQ("messages", 3, H.nout);
	EXPECT_EQ("message length reported", one, H.out[0].len);
	EXPECT_EQ("left", 7, stats().txq_len);
	h_teardown();
}
END_TEST

START_TEST(resync_request_is_retransmitted_until_acked)
{
	const struct out_msg *m;
	size_t d;

	row2();
	ftfw_request_resync(H.e);
	ck_assert(ftfw_send_ready(H.e));
	h_send();
	m = find_kind(0, WIRE_K_RESYNC);
	REQUIRE(m, "RESYNC sent");
	expect_range(m, "RESYNC", WIRE_F_RESYNC, 0, 0);
	d = H.nout;
	h_advance(FTFW_DEFAULT_RTO_MS);
	h_send();
	m = find_kind(d, WIRE_K_RESYNC);
	REQUIRE(m, "RESYNC resent after the RTO");
	feed_ctl(WIRE_F_ACK, S + 2, m->hdr.seq, m->hdr.seq);
	ck_assert(!stats().resync_outstanding);
	d = H.nout;
	h_advance(30000);
	h_send();
	EXPECT_EQ("RESYNC after the ACK", 0, count_kind(d, WIRE_K_RESYNC));
	h_teardown();
}
END_TEST

/* protocol.md §3.2: sequence arithmetic is mod 2^32, on both sides. */
START_TEST(sequence_numbers_wrap_around)
{
	struct ftfw_config c = default_cfg();
	uint32_t first;
	size_t d;

	h_setup_cfg(&c, 0xfffffff0u);
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 0xfffffffeu, 0, 0);
	h_send();                       /* the new peer's bulk, of an empty table */
	for (uint32_t i = 0; i < 40; i++)
		put_flow(i, i);
	h_send();
	first = H.out[0].hdr.seq;
	EXPECT_EQ("first", 0xfffffff0u, first);
	EXPECT_EQ("last wrapped", 0xfffffff0u + 39u, H.out[39].hdr.seq);
	/* A NACK across the wrap resends those, an ACK across it releases the rest. */
	d = H.nout;
	feed_ctl(WIRE_F_NACK, 0xffffffffu, 0xfffffffeu, 1);
	h_send();
	EXPECT_EQ("resent across the wrap", 4, count_kind(d, WIRE_K_DATA));
	feed_ctl(WIRE_F_ACK, 0, first, ftfw_next_seq(H.e) - 1);
	EXPECT_EQ("in flight", 0, stats().inflight);
	/* The peer's numbers wrap too: 0 after 0xffffffff is in sync, 2 is a gap. */
	d = H.nout;
	feed_data(0, 2, 1, 1);
	expect_range(find_kind(d, WIRE_K_NACK), "NACK across the wrap", WIRE_F_NACK, 1, 1);
	EXPECT_EQ("lost", 1, stats().seq_lost);
	h_teardown();
}
END_TEST

/* ---- several peers ------------------------------------------------------------------------- */

START_TEST(message_leaves_only_when_every_peer_acked)
{
	uint32_t seq;

	h_setup();
	feed_ctl_peer(0, WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
	feed_ctl_peer(1, WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 7000, 0, 0);
	put_flow(1, 1);
	h_send();
	seq = H.out[H.nout - 1].hdr.seq;
	EXPECT_EQ("HELLO after both answered", 0, H.out[H.nout - 1].hdr.flags & WIRE_F_HELLO);
	feed_ctl_peer(0, WIRE_F_ACK, 101, seq, seq);
	EXPECT_EQ("in flight after one ACK", 1, stats().inflight);
	feed_ctl_peer(1, WIRE_F_ACK, 7001, seq, seq);
	EXPECT_EQ("in flight after both", 0, stats().inflight);
	h_teardown();
}
END_TEST

/*
 * A member that died is waited for until PeerTimeout: its missing ACKs
 * must not make every timeout resend the window to the live members,
 * which have it.  One probe per round goes; what a live member lacks goes.
 */
START_TEST(silent_member_costs_one_probe_per_round_not_the_window)
{
	uint32_t first, last;
	size_t d;

	h_setup();
	feed_ctl_peer(0, WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
	feed_ctl_peer(1, WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 7000, 0, 0);
	for (uint32_t i = 0; i < 50; i++)
		put_flow(i, i);
	h_send();
	first = H.out[H.nout - 50].hdr.seq;
	last = H.out[H.nout - 1].hdr.seq;
	/* Peer 0 has them all; peer 1 has gone silent. */
	feed_ctl_peer(0, WIRE_F_ACK, 101, first, last);
	EXPECT_EQ("held for the silent member", 50, stats().inflight);
	for (unsigned round = 0; round < 4; round++) {
		d = H.nout;
		h_advance(FTFW_DEFAULT_RTO_MS + 10);
		/* The live member keeps talking (an ALIVE). */
		feed_ctl_peer(0, WIRE_F_ALIVE, 102 + 2 * round, 0, 0);
		h_send();
		REQUIRE(count_kind(d, WIRE_K_DATA) <= 1, "round %u resent %zu", round,
			count_kind(d, WIRE_K_DATA));
		/* The live member acknowledges the probe too. */
		if (H.nout > d)
			feed_ctl_peer(0, WIRE_F_ACK, 103 + 2 * round, H.out[d].hdr.seq,
				      H.out[H.nout - 1].hdr.seq);
	}
	ck_assert_uint_ge(stats().rto_probes, 1);
	/* What the live member lacks still goes in full. */
	put_flow(60, 60);
	h_send();
	d = H.nout;
	h_advance(FTFW_DEFAULT_RTO_MS + 10);
	h_advance(1);
	feed_ctl_peer(0, WIRE_F_ALIVE, 120, 0, 0);
	h_send();
	ck_assert_uint_ge(count_kind(d, WIRE_K_DATA), 1);
	h_teardown();
}
END_TEST

/* A bulk larger than the window never keeps a new flow's change waiting behind it. */
START_TEST(bulk_leaves_room_for_live_changes)
{
	struct ftfw_config c = default_cfg();
	size_t d;

	c.resend_queue_size = 64;
	h_setup_cfg(&c, 1000);
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, S, 0, 0);
	for (uint32_t i = 0; i < 500; i++)
		put_flow(i, i);
	h_send();
	/* Nothing is acknowledged: the window stays as full as the bulk may make it. */
	for (uint32_t n = 1; stats().txq_len && n < 100; n++) {
		feed_ctl(WIRE_F_ACK, S + n, H.out[0].hdr.seq, H.out[H.nout - 1].hdr.seq);
		h_send();
	}
	ftfw_bulk(H.e);
	h_send();
	EXPECT_EQ("the bulk stops at 7/8 of the window", 64 - 64 / 8, stats().inflight);
	d = H.nout;
	put_flow(600, 600);
	h_send();
	EXPECT_EQ("a new flow goes at once", 1, count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

START_TEST(each_peer_has_its_own_sequence_space)
{
	h_setup();
	feed_ctl_peer(0, WIRE_F_HELLO | WIRE_F_ALIVE, 100, 0, 0);
	feed_ctl_peer(1, WIRE_F_HELLO | WIRE_F_ALIVE, 900000, 0, 0);
	feed_data_peer(0, WIRE_F_HELLO, 101, 1, 1);
	feed_data_peer(1, WIRE_F_HELLO, 900001, 2, 1);
	feed_data_peer(0, WIRE_F_HELLO, 102, 3, 1);
	EXPECT_EQ("NACKs", 0, count_kind(0, WIRE_K_NACK));
	EXPECT_EQ("restarts", 0, stats().peer_restarts);
	EXPECT_EQ("applied", 3, H.napplied);
	EXPECT_EQ("peer of the 2nd", 1, H.applied[1].peer);
	h_advance(1000);
	EXPECT_EQ("one ACK per peer", 2, count_kind(0, WIRE_K_ACK));
	h_teardown();
}
END_TEST

START_TEST(silent_peer_is_lost_and_bulk_sent_when_back)
{
	struct ftfw_config c = default_cfg();
	uint32_t seq;
	size_t d;

	c.peer_timeout_ms = 5000;
	h_setup_cfg(&c, 1000);
	feed_ctl_peer(0, WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
	feed_ctl_peer(1, WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 7000, 0, 0);
	for (uint32_t i = 0; i < 5; i++)
		put_flow(i, i);
	h_send();
	/* Peer 0 keeps talking and ACKing all we sent; peer 1 is gone. */
	for (int i = 0; i < 6; i++) {
		h_advance(1000);
		feed_ctl_peer(0, WIRE_F_ACK, 101 + (uint32_t)i, 1000, ftfw_next_seq(H.e) - 1);
		h_send();
	}
	EXPECT_EQ("lost event", FTFW_PEER_LOST, H.events[H.nevents - 1].ev);
	EXPECT_EQ("lost peer", 1, H.events[H.nevents - 1].peer);
	EXPECT_EQ("in flight once only peer 0 counts", 0, stats().inflight);
	d = H.nout;
	seq = ftfw_next_seq(H.e);
	feed_ctl_peer(1, WIRE_F_ALIVE, 7001, 0, 0);
	EXPECT_EQ("back event", FTFW_PEER_BACK, H.events[H.nevents - 1].ev);
	/* It may have missed a DEL we released: we look restarted to it (new space, HELLO). */
	EXPECT_EQ("soft restarts", 1, stats().soft_restarts);
	EXPECT_EQ("sequence space moved", seq + (1u << 22), ftfw_next_seq(H.e));
	h_advance(1000);
	REQUIRE(H.nout > d && (H.out[d].hdr.flags & WIRE_F_HELLO), "HELLO after coming back");
	/* Its owner flushes and asks for a resync, which our bulk answers. */
	d = H.nout;
	feed_ctl_peer(1, WIRE_F_RESYNC | WIRE_F_HELLO_BACK, 7002, 0, 0);
	h_send();
	/* Deviation 18: the bulk waits until peer 0 has answered our new HELLO too. */
	EXPECT_EQ("no bulk before every peer answered", 0, count_kind(d, WIRE_K_DATA));
	feed_ctl_peer(0, WIRE_F_ALIVE | WIRE_F_HELLO_BACK, 107, 0, 0);
	h_send();
	EXPECT_EQ("bulk to the returning peer", 5, count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

static struct ftfw_peer_stats peer_stats(unsigned peer)
{
	struct ftfw_peer_stats ps;

	ck_assert_int_eq(ftfw_peer_stats(H.e, peer, &ps), 0);
	return ps;
}

/*
 * Liveness, with the clock injected: a peer is down exactly PeerTimeout
 * after its last message, up again at its next one, and each change is
 * told once, counted, and dated; in every mode, since NOTRACK and ALARM
 * peers are watched the same way.
 */
static void liveness_in_mode(enum ftfw_mode mode)
{
	struct ftfw_config c = default_cfg();
	struct ftfw_peer_stats ps;
	uint64_t heard;
	size_t ev;

	c.mode = mode;
	c.peer_timeout_ms = 3000;
	c.refresh_time_s = 1;
	h_setup_cfg(&c, 1000);
	REQUIRE(!peer_stats(0).known, "a peer never heard is not known");
	/* ALARM takes flag-less data only, but any message is a sign of life. */
	feed_data(0, 500, 1, 1);
	heard = H.now;
	ps = peer_stats(0);
	REQUIRE(ps.known && !ps.lost, "known and up after its first message");
	EXPECT_EQ("up since its first message", heard, ps.state_since);
	EXPECT_EQ("NEW told", FTFW_PEER_NEW, H.events[H.nevents - 1].ev);
	h_advance(2999);
	REQUIRE(!peer_stats(0).lost, "still up 1 ms before PeerTimeout");
	ev = H.nevents;
	h_advance(1);
	ps = peer_stats(0);
	REQUIRE(ps.lost, "down at PeerTimeout");
	EXPECT_EQ("LOST told once", ev + 1, H.nevents);
	EXPECT_EQ("LOST", FTFW_PEER_LOST, H.events[H.nevents - 1].ev);
	EXPECT_EQ("one down", 1, ps.downs);
	EXPECT_EQ("down since PeerTimeout", heard + 3000, ps.state_since);
	h_advance(10000);
	EXPECT_EQ("no second LOST while silent", ev + 1, H.nevents);
	feed_data(0, 501, 2, 1);
	ps = peer_stats(0);
	REQUIRE(!ps.lost, "up again at its next message");
	EXPECT_EQ("BACK", FTFW_PEER_BACK, H.events[H.nevents - 1].ev);
	EXPECT_EQ("one up", 1, ps.ups);
	EXPECT_EQ("silence before it", 13000, ps.silence);
	EXPECT_EQ("up since then", H.now, ps.state_since);
	feed_data(0, 502, 3, 1);
	EXPECT_EQ("no second BACK", 1, peer_stats(0).ups);
	h_advance(3000);
	ps = peer_stats(0);
	EXPECT_EQ("a second down", 2, ps.downs);
	EXPECT_EQ("still one up", 1, ps.ups);
	h_teardown();
}

/* Our own stall is no peer's silence: what it sent waits unread in the socket. */
START_TEST(own_stall_does_not_make_peers_down)
{
	struct ftfw_config c = default_cfg();

	c.peer_timeout_ms = 3000;
	h_setup_cfg(&c, 1000);
	feed_data(0, 500, 1, 1);
	h_advance(500);
	/* The loop was away for 5 s (a long kernel write): no tick in between. */
	H.now += 5000;
	ftfw_tick(H.e, H.now);
	REQUIRE(!peer_stats(0).lost, "not down at the tick that ends our stall");
	/* What the peer sent meanwhile is read now. */
	feed_data(0, 501, 2, 1);
	h_advance(2500);
	REQUIRE(!peer_stats(0).lost, "up: it was heard");
	EXPECT_EQ("never down", 0, peer_stats(0).downs);
	/* Silent for real, while we listen: down at PeerTimeout. */
	h_advance(600);
	REQUIRE(peer_stats(0).lost, "down after PeerTimeout of attentive silence");
	/* A loop that is always late still lets a dead peer go, at twice its timeout (6 s since the flap). */
	feed_data(0, 502, 3, 1);
	REQUIRE(!peer_stats(0).lost, "back");
	for (unsigned i = 0; i < 5; i++) {
		H.now += 2000;
		ftfw_tick(H.e, H.now);
	}
	REQUIRE(!peer_stats(0).lost, "not down before twice its timeout");
	for (unsigned i = 0; i < 2; i++) {
		H.now += 2000;
		ftfw_tick(H.e, H.now);
	}
	REQUIRE(peer_stats(0).lost, "down within twice PeerTimeout however late our ticks");
	h_teardown();
}
END_TEST

/* A peer back within 10 s of going down flapped: its timeout doubles, and a calm minute restores it. */
START_TEST(flapping_peer_gets_a_longer_timeout)
{
	struct ftfw_config c = default_cfg();

	c.peer_timeout_ms = 300;
	c.alive_ms = 100;
	h_setup_cfg(&c, 1000);
	feed_data(0, 500, 1, 1);
	EXPECT_EQ("timeout as configured", 300, peer_stats(0).timeout_ms);
	h_advance(301);
	REQUIRE(peer_stats(0).lost, "down after 300 ms");
	h_advance(200);
	feed_data(0, 501, 2, 1);
	REQUIRE(!peer_stats(0).lost, "back");
	EXPECT_EQ("doubled after the flap", 600, peer_stats(0).timeout_ms);
	EXPECT_EQ("flaps counted", 1, stats().peer_flaps);
	h_advance(400);
	REQUIRE(!peer_stats(0).lost, "still up 400 ms later");
	h_advance(201);
	REQUIRE(peer_stats(0).lost, "down after 600 ms");
	feed_data(0, 502, 3, 1);
	EXPECT_EQ("doubled again", 1200, peer_stats(0).timeout_ms);
	/* Up and heard for a calm minute: back to PeerTimeout. */
	for (unsigned i = 0; i < 610; i++) {
		h_advance(100);
		feed_data(0, 503 + i, 4 + i, 1);
	}
	EXPECT_EQ("no further down", 2, peer_stats(0).downs);
	EXPECT_EQ("restored", 300, peer_stats(0).timeout_ms);
	/* A new process (a new sequence space, HELLO) was dead, not stalled: no flap. */
	h_advance(301);
	REQUIRE(peer_stats(0).lost, "down again");
	h_advance(200);
	feed_data(WIRE_F_HELLO, 900000, 1, 1);
	REQUIRE(!peer_stats(0).lost, "back as a new process");
	EXPECT_EQ("not damped", 300, peer_stats(0).timeout_ms);
	EXPECT_EQ("still two flaps", 2, stats().peer_flaps);
	h_teardown();
}
END_TEST

START_TEST(liveness_ftfw)
{
	liveness_in_mode(FTFW_MODE_FTFW);
}
END_TEST

START_TEST(liveness_notrack)
{
	liveness_in_mode(FTFW_MODE_NOTRACK);
}
END_TEST

START_TEST(liveness_alarm)
{
	liveness_in_mode(FTFW_MODE_ALARM);
}
END_TEST

/*
 * The backlog grows while the peer hears us but never acknowledges, and
 * an ACK that releases our messages ends it; idle, it is 0.
 */
START_TEST(backlog_grows_without_acks_and_ends_with_one)
{
	h_setup();
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
	h_send();                       /* the bulk for a new peer: our table is empty */
	h_advance(5000);
	EXPECT_EQ("idle: no backlog", 0, ftfw_backlog_ms(H.e, H.now));
	for (uint32_t i = 0; i < 5; i++)
		put_flow(i, i);
	h_send();
	for (uint32_t i = 0; i < 7; i++) {
		h_advance(1000);
		feed_ctl(WIRE_F_ALIVE, 101 + i, 0, 0);     /* it talks, but never ACKs */
		h_send();
	}
	REQUIRE(stats().rto_rounds > 0, "retransmitted meanwhile");
	EXPECT_EQ("7 s without an ACK", 7000, ftfw_backlog_ms(H.e, H.now));
	feed_ctl(WIRE_F_ACK, 108, 1000, ftfw_next_seq(H.e) - 1);
	REQUIRE(ftfw_idle(H.e), "every message acknowledged: tx %u retx %u rs %u bulk %d wait %d resync %d",
		stats().txq_len, stats().retxq_len, stats().inflight, stats().bulk_running,
		stats().bulk_waiting, stats().resync_outstanding);
	EXPECT_EQ("acknowledged: no backlog", 0, ftfw_backlog_ms(H.e, H.now));
	h_teardown();
}
END_TEST

START_TEST(notrack_backlog_is_what_waits_to_be_sent)
{
	struct ftfw_config c = default_cfg();

	c.mode = FTFW_MODE_NOTRACK;
	h_setup_cfg(&c, 1000);
	put_flow(1, 1);
	h_advance(2000);                /* not sent: nobody called ftfw_send() */
	EXPECT_EQ("2 s waiting", 2000, ftfw_backlog_ms(H.e, H.now));
	h_send();
	EXPECT_EQ("sent: no backlog", 0, ftfw_backlog_ms(H.e, H.now));
	h_teardown();
}
END_TEST

/*
 * The only peer is gone: dead flows leave the table without waiting for
 * an ACK that cannot come, changes are not queued, and the peer that
 * returns gets a new sequence space and our whole table, deletions
 * included (its owner flushes on our restart).
 */
START_TEST(when_every_peer_is_gone_nothing_waits_for_it)
{
	struct ftfw_config c = default_cfg();
	uint32_t hs[10];
	size_t d;

	c.peer_timeout_ms = 5000;
	h_setup_cfg(&c, 1000);
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
	for (uint32_t i = 0; i < 10; i++)
		hs[i] = put_flow(i, i);
	h_send();
	/* The peer falls silent; we keep deleting and changing flows. */
	for (uint32_t i = 0; i < 4; i++)
		kill_flow(hs[i]);
	h_send();
	h_advance(6000);
	EXPECT_EQ("lost event", FTFW_PEER_LOST, H.events[H.nevents - 1].ev);
	EXPECT_EQ("nothing in flight", 0, stats().inflight);
	EXPECT_EQ("the four dead flows left the table", 6, flow_table_count(H.t));
	EXPECT_EQ("their DELs counted as dropped", 4, stats().dels_dropped);
	for (uint32_t i = 4; i < 8; i++)
		kill_flow(hs[i]);
	put_flow(20, 20);
	EXPECT_EQ("dead at once while nobody listens", 3, flow_table_count(H.t));
	EXPECT_EQ("nothing queued", 0, stats().txq_len + stats().retxq_len);
	REQUIRE(ftfw_idle(H.e), "not idle while nobody listens");
	d = H.nout;
	h_advance(5000);
	EXPECT_EQ("no data sent into the void", 0, count_kind(d, WIRE_K_DATA));
	/* The peer returns: a new space, HELLO, and our whole table unasked. */
	feed_ctl(WIRE_F_ALIVE, 101, 0, 0);
	EXPECT_EQ("back event", FTFW_PEER_BACK, H.events[H.nevents - 1].ev);
	EXPECT_EQ("soft restarts", 1, stats().soft_restarts);
	feed_ctl(WIRE_F_ALIVE | WIRE_F_HELLO_BACK, 102, 0, 0);
	d = H.nout;
	h_send();
	EXPECT_EQ("our three live flows go to the returning peer", 3, count_kind(d, WIRE_K_DATA));
	h_teardown();
}
END_TEST

/*
 * A peer heard for the first time gets our table unasked in FTFW, unless
 * no_bulk_on_new; NOTRACK sends no bulk of its own.
 * Only the first message does it, and no peer is reset.
 */
START_TEST(first_heard_peer_gets_a_bulk_unless_disabled)
{
	static const struct {
		const char *name;
		enum ftfw_mode mode;
		bool no_bulk_on_new;
		unsigned bulk;                  /* data messages expected */
	} cases[] = {
		{ "FTFW", FTFW_MODE_FTFW, false, 3 },
		{ "FTFW, no_bulk_on_new", FTFW_MODE_FTFW, true, 0 },
		{ "NOTRACK", FTFW_MODE_NOTRACK, false, 0 },
	};
	char what[96];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct ftfw_config c = default_cfg();
		struct flow_full ff;
		uint32_t h;
		size_t d;

		c.mode = cases[k].mode;
		c.no_bulk_on_new = cases[k].no_bulk_on_new;
		h_setup_cfg(&c, 1000);
		/* The start-up dump: in the table, nothing to send. */
		for (uint32_t i = 0; i < 3; i++) {
			make_flow(&ff, i, i);
			REQUIRE(flow_table_upsert(H.t, &ff, 0, &h) >= 0, "upsert");
			ck_assert_int_eq(ftfw_flow_loaded(H.e, h), 0);
		}
		h_send();
		snprintf(what, sizeof(what), "%s: data before a peer is heard", cases[k].name);
		EXPECT_EQ(what, 0, count_kind(0, WIRE_K_DATA));
		feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
		snprintf(what, sizeof(what), "%s: events told", cases[k].name);
		EXPECT_EQ(what, 1, H.nevents);
		snprintf(what, sizeof(what), "%s: event", cases[k].name);
		EXPECT_EQ(what, FTFW_PEER_NEW, H.events[0].ev);
		snprintf(what, sizeof(what), "%s: bulk running", cases[k].name);
		EXPECT_EQ(what, cases[k].bulk > 0, stats().bulk_running);
		d = H.nout;
		h_send();
		snprintf(what, sizeof(what), "%s: data sent to the new peer", cases[k].name);
		EXPECT_EQ(what, cases[k].bulk, count_kind(d, WIRE_K_DATA));
		feed_ctl(WIRE_F_ALIVE, 101, 0, 0);
		snprintf(what, sizeof(what), "%s: bulk running after its second message", cases[k].name);
		EXPECT_EQ(what, 0, stats().bulk_running);
		snprintf(what, sizeof(what), "%s: peer resets", cases[k].name);
		EXPECT_EQ(what, 0, H.nresets);
		h_teardown();
	}
}
END_TEST

/* Deviation 5: a peer first heard after we released messages may have missed a DEL. */
START_TEST(late_peer_makes_us_start_a_new_sequence_space)
{
	uint32_t h, seq;
	size_t d;

	h_setup();
	feed_ctl_peer(0, WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);
	h_send();                       /* the new peer's bulk, of an empty table */
	h = put_flow(1, 1);
	h_send();
	kill_flow(h);
	h_send();
	feed_ctl_peer(0, WIRE_F_ACK, 101, H.out[0].hdr.seq, H.out[1].hdr.seq);
	EXPECT_EQ("DEL acknowledged by the only peer known", 1, H.ndead);
	seq = ftfw_next_seq(H.e);
	d = H.nout;
	feed_ctl_peer(1, WIRE_F_ALIVE, 7000, 0, 0);     /* a third node, heard only now */
	EXPECT_EQ("soft restarts", 1, stats().soft_restarts);
	EXPECT_EQ("sequence space moved", seq + (1u << 22), ftfw_next_seq(H.e));
	h_advance(1000);
	{
		bool hello = false;

		for (size_t i = d; i < H.nout; i++)
			hello |= (H.out[i].hdr.flags & WIRE_F_HELLO) != 0;
		REQUIRE(hello, "HELLO to everyone");
	}
	h_teardown();
}
END_TEST

/* Deviation 13: until a peer answers our HELLO, its ACKs may name our previous process's numbers. */
START_TEST(acks_count_only_after_hello_back)
{
	uint32_t seq;

	h_setup();
	feed_ctl(WIRE_F_ALIVE, 100, 0, 0);              /* known, but it did not answer our HELLO */
	put_flow(1, 1);
	h_send();
	seq = H.out[0].hdr.seq;
	REQUIRE(H.out[0].hdr.flags & WIRE_F_HELLO, "we still say HELLO");
	feed_ctl(WIRE_F_ACK, 101, seq, seq);
	EXPECT_EQ("in flight after an ACK without HELLO_BACK", 1, stats().inflight);
	feed_ctl(WIRE_F_ACK | WIRE_F_HELLO_BACK, 102, seq, seq);
	EXPECT_EQ("in flight after the ACK with HELLO_BACK", 0, stats().inflight);
	EXPECT_EQ("sent again (deviation 14)", 1, stats().hello_resends);
	h_teardown();
}
END_TEST

/*
 * Deviation 14: 1.4.7 takes each message flagged HELLO as in sequence, so
 * its first ACK covers what it lost during our handshake.  What went out
 * flagged HELLO is sent again without it, and only that copy's ACK
 * releases it.
 */
START_TEST(acked_hello_messages_are_sent_again_without_hello)
{
	struct ftfw_config c = default_cfg();
	uint32_t first, again[3];
	size_t d;

	/* The bulk the peer's first message would start sends the three once more. */
	c.no_bulk_on_new = true;
	h_setup_cfg(&c, 1000);
	for (uint32_t i = 1; i <= 3; i++)
		put_flow(i, 10 + i);
	h_send();
	EXPECT_EQ("sent", 3, count_kind(0, WIRE_K_DATA));
	for (size_t i = 0; i < 3; i++)
		REQUIRE(H.out[i].hdr.flags & WIRE_F_HELLO, "message %zu says HELLO", i);
	first = H.out[0].hdr.seq;
	/* 1.4.7 got the first and the third, and acknowledges all three. */
	feed_ctl(WIRE_F_ACK | WIRE_F_HELLO_BACK, 500, first, first + 2);
	EXPECT_EQ("released", 0, stats().inflight);
	EXPECT_EQ("sent again", 3, stats().hello_resends);
	d = H.nout;
	h_send();
	EXPECT_EQ("the three again", 3, count_kind(d, WIRE_K_DATA));
	for (size_t i = 0; i < 3; i++) {
		const struct out_msg *m = &H.out[d + i];

		EXPECT_EQ("without HELLO", 0, m->hdr.flags & WIRE_F_HELLO);
		EXPECT_EQ("same state", 11 + i, out_mark(m));
		again[i] = m->hdr.seq;
	}
	EXPECT_EQ("in flight", 3, stats().inflight);
	feed_ctl(WIRE_F_ACK, 501, again[0], again[2]);
	EXPECT_EQ("released by the second ACK", 0, stats().inflight);
	d = H.nout;
	h_advance(30000);
	h_send();
	EXPECT_EQ("nothing more", 0, count_kind(d, WIRE_K_DATA));
	EXPECT_EQ("no more resends", 3, stats().hello_resends);
	h_teardown();
}
END_TEST

/*
 * Deviation 18: a RESYNC request waits for the end of our HELLO handshake,
 * so that 1.4.7 NACKs it if lost.  Data the peer sends meanwhile (any
 * update) is no answer to it.
 */
START_TEST(resync_request_waits_for_the_end_of_our_hello)
{
	const struct out_msg *m;
	size_t d;

	h_setup();
	ftfw_request_resync(H.e);
	REQUIRE(!ftfw_send_ready(H.e), "nothing to send while we say HELLO");
	h_send();
	REQUIRE(!find_kind(0, WIRE_K_RESYNC), "no RESYNC during the handshake");
	feed_data(0, 499, 1, 1);                        /* an update, no HELLO_BACK */
	h_advance(3000);
	h_send();
	REQUIRE(!find_kind(0, WIRE_K_RESYNC), "still none before HELLO_BACK");
	REQUIRE(stats().resync_outstanding, "outstanding");
	d = H.nout;
	feed_ctl(WIRE_F_ACK | WIRE_F_HELLO_BACK, 500, H.out[0].hdr.seq, H.out[d - 1].hdr.seq);
	REQUIRE(ftfw_send_ready(H.e), "ready once the peer answered");
	h_send();
	m = find_kind(d, WIRE_K_RESYNC);
	REQUIRE(m, "RESYNC after the handshake");
	EXPECT_EQ("without HELLO", 0, m->hdr.flags & WIRE_F_HELLO);
	/* Lost: the peer's NACK names it, and it goes again. */
	feed_ctl(WIRE_F_NACK, 501, m->hdr.seq, m->hdr.seq);
	d = H.nout;
	h_send();
	m = find_kind(d, WIRE_K_RESYNC);
	REQUIRE(m, "sent again after the NACK");
	feed_ctl(WIRE_F_ACK, 502, m->hdr.seq, m->hdr.seq);
	REQUIRE(!stats().resync_outstanding, "answered");
	EXPECT_EQ("one RESYNC per send", 2, count_kind(0, WIRE_K_RESYNC));
	h_teardown();
}
END_TEST

/*
 * Deviation 17: a peer's message lost while we said HELLO may be gone from
 * a 1.4.7 peer's resend queue (it empties it at each HELLO): when the
 * handshake ends, we ask for a RESYNC.  Without a loss, we do not.
 */
START_TEST(loss_during_our_hello_asks_a_resync_after_it)
{
	size_t d;

	h_setup();
	feed_data(0, 700, 1, 1);
	feed_data(0, 702, 3, 1);                        /* 701 lost */
	h_send();
	REQUIRE(!find_kind(0, WIRE_K_RESYNC), "no RESYNC during the handshake");
	d = H.nout;
	feed_data(WIRE_F_HELLO_BACK, 703, 4, 1);
	h_send();
	REQUIRE(find_kind(d, WIRE_K_RESYNC), "a RESYNC once the handshake is over");
	EXPECT_EQ("counted", 1, stats().hello_gap_resyncs);
	d = H.nout;
	feed_data(0, 705, 6, 1);                        /* a later loss: NACK only */
	h_advance(1000);
	h_send();
	REQUIRE(!find_kind(d, WIRE_K_RESYNC), "no RESYNC for a loss after the handshake");
	h_teardown();

	h_setup();
	feed_data(0, 700, 1, 1);
	feed_data(WIRE_F_HELLO_BACK, 701, 2, 1);
	h_send();
	REQUIRE(!find_kind(0, WIRE_K_RESYNC), "no loss, no RESYNC");
	h_teardown();
}
END_TEST

/* Deviation 13: an old HELLO dropped as such is not answered. */
START_TEST(dropped_hello_is_not_answered)
{
	h_setup();
	feed_ctl(WIRE_F_HELLO_BACK | WIRE_F_ALIVE, 100, 0, 0);  /* our hello is done */
	feed_ctl(WIRE_F_ALIVE, 101, 0, 0);
	feed_ctl(WIRE_F_HELLO | WIRE_F_ALIVE, 99, 0, 0);        /* old, delayed */
	EXPECT_EQ("dropped", 1, stats().seq_before);
	h_advance(1000);
	REQUIRE(H.nout >= 1, "something sent");
	EXPECT_EQ("HELLO_BACK", 0, H.out[0].hdr.flags & WIRE_F_HELLO_BACK);
	h_teardown();
}
END_TEST

/* ---- the resend queue dump ------------------------------------------------------------------ */

static bool collect(void *arg, const struct ftfw_rsq_entry *ent)
{
	struct ftfw_rsq_entry *v = arg;
	size_t i = 0;

	while (v[i].seq || v[i].handle || v[i].flags)
		i++;
	v[i] = *ent;
	return true;
}

START_TEST(rsqueue_dump_lists_flows_and_resync_in_order)
{
	struct ftfw_rsq_entry v[8];

	row2();
	memset(v, 0, sizeof(v));
	put_flow(1, 1);
	h_send();
	ftfw_request_resync(H.e);
	put_flow(2, 1);
	h_send();       /* RESYNC first, then flow 2 */
	ftfw_rsqueue_foreach(H.e, collect, v);
	EXPECT_EQ("first is a flow", 1, v[0].handle != 0);
	EXPECT_EQ("second is the RESYNC", WIRE_F_RESYNC, v[1].flags);
	EXPECT_EQ("third is a flow", 1, v[2].handle != 0);
	REQUIRE(v[0].seq + 1 == v[1].seq && v[1].seq + 1 == v[2].seq, "sequence order %u %u %u",
		v[0].seq, v[1].seq, v[2].seq);
	h_teardown();
}
END_TEST

/* ---- NOTRACK (protocol.md §4) ----------------------------------------------------------------------------- */

START_TEST(notrack_sends_once_without_hello_and_never_acks)
{
	struct ftfw_config c = default_cfg();
	uint32_t h;

	c.mode = FTFW_MODE_NOTRACK;
	h_setup_cfg(&c, 1000);
	h = put_flow(1, 1);
	h_send();
	EXPECT_EQ("flags", 0, H.out[0].hdr.flags);
	ck_assert(ftfw_idle(H.e));
	kill_flow(h);
	h_send();
	EXPECT_EQ("DEL done once sent", 1, H.ndead);
	feed_data(0, 50, 1, 1);
	feed_data(0, 53, 2, 1);
	feed_data(0, 51, 3, 1);        /* old: still accepted */
	EXPECT_EQ("applied", 3, H.napplied);
	EXPECT_EQ("lost", 2, stats().seq_lost);
	EXPECT_EQ("before", 1, stats().seq_before);
	h_advance(5000);
	EXPECT_EQ("ACKs or NACKs", 0, count_kind(0, WIRE_K_ACK) + count_kind(0, WIRE_K_NACK));
	REQUIRE(count_kind(0, WIRE_K_ALIVE) >= 4, "ALIVE every idle second");
	EXPECT_EQ("ALIVE flags", WIRE_F_ALIVE, find_kind(0, WIRE_K_ALIVE)->hdr.flags);
	h_teardown();
}
END_TEST

/* ---- NOTRACK without an internal table (DisableInternalCache) ---------------------------------------------- */

/* The owner's walk: `walk_total` states of keys 1.., as many as the budget takes per pull. */
static uint32_t walk_total, walk_next, walk_begins;

static void h_bulk_begin(void *arg)
{
	(void)arg;
	walk_begins++;
	walk_next = 1;
}

static size_t h_bulk_pull(void *arg, size_t budget, bool *over)
{
	struct flow_full ff;
	size_t sent = 0;

	(void)arg;
	while (walk_next <= walk_total && sent < budget) {
		int n;

		make_flow(&ff, walk_next++, 7);
		n = ftfw_send_state(H.e, WIRE_T_CT_NEW, &ff, H.now);
		REQUIRE(n > 0, "ftfw_send_state from a pull: %d", n);
		sent += (size_t)n;
	}
	*over = walk_next > walk_total;
	return sent;
}

static void nocache_setup(uint32_t states)
{
	struct ftfw_config c = default_cfg();
	static struct ftfw_ops ops;

	ops = h_ops;
	ops.bulk_begin = h_bulk_begin;
	ops.bulk_pull = h_bulk_pull;
	c.mode = FTFW_MODE_NOTRACK;
	walk_total = states;
	walk_next = 1;
	walk_begins = 0;
	h_setup_ops(&c, &ops, 1000);
}

START_TEST(nocache_state_goes_out_at_once_with_the_next_number)
{
	struct flow_full ff;
	struct flow_full got;
	int n;

	nocache_setup(0);
	make_flow(&ff, 5, 9);
	n = ftfw_send_state(H.e, WIRE_T_CT_UPD, &ff, H.now);
	REQUIRE(n > 0, "ftfw_send_state: %d", n);
	EXPECT_EQ("messages emitted at once", 1, H.nout);
	EXPECT_EQ("its length", n, H.out[0].len);
	EXPECT_EQ("type", WIRE_T_CT_UPD, H.out[0].hdr.type);
	EXPECT_EQ("sequence number", 1000, H.out[0].hdr.seq);
	EXPECT_EQ("flags", 0, H.out[0].hdr.flags);
	EXPECT_EQ("mark", 9, out_mark(&H.out[0]));
	make_flow(&ff, 5, 9);
	REQUIRE(ftfw_send_state(H.e, WIRE_T_CT_DEL, &ff, H.now) > 0, "DEL");
	EXPECT_EQ("DEL type", WIRE_T_CT_DEL, H.out[1].hdr.type);
	EXPECT_EQ("next number", 1001, H.out[1].hdr.seq);
	REQUIRE(wire_ct_decode(H.out[1].data, H.out[1].len, &got) == WIRE_OK, "DEL decodes");
	REQUIRE(!(got.flow.attrs & FLOW_A_MARK), "a DEL carries the key only");
	EXPECT_EQ("nothing kept in the table", 0, flow_table_count(H.t));
	EXPECT_EQ("data sent", 2, stats().data_sent);
	ck_assert(ftfw_idle(H.e));
	/* The ALIVE timer restarts with it: no ALIVE within the second after. */
	h_advance(900);
	EXPECT_EQ("ALIVE after a state", 0, count_kind(0, WIRE_K_ALIVE));
	h_teardown();
}
END_TEST

START_TEST(nocache_state_is_refused_outside_notrack)
{
	struct ftfw_config c = default_cfg();
	struct flow_full ff;

	h_setup_cfg(&c, 1000);
	make_flow(&ff, 1, 1);
	EXPECT_EQ("FTFW", -EINVAL, ftfw_send_state(H.e, WIRE_T_CT_NEW, &ff, H.now));
	h_teardown();
	nocache_setup(0);
	EXPECT_EQ("a type that is no state", -EINVAL, ftfw_send_state(H.e, WIRE_T_EXP_NEW, &ff, H.now));
	EXPECT_EQ("nothing emitted", 0, H.nout);
	h_teardown();
}
END_TEST

START_TEST(nocache_bulk_is_the_owners_walk_paced_by_the_budget)
{
	struct flow_full ff;
	size_t one, sent;

	nocache_setup(40);
	make_flow(&ff, 1, 7);
	one = (size_t)wire_ct_size(&ff, WIRE_ENC_TIMEOUT);
	ftfw_bulk(H.e);
	EXPECT_EQ("the walk began", 1, walk_begins);
	sent = ftfw_send(H.e, H.now, 10 * one);
	EXPECT_EQ("bytes of one budget", 10 * one, sent);
	EXPECT_EQ("states of one budget", 10, H.nout);
	ck_assert(stats().bulk_running);
	ck_assert(!ftfw_idle(H.e));
	ck_assert(ftfw_send_ready(H.e));
	while (stats().bulk_running && H.nout < 100)
		ftfw_send(H.e, H.now, 10 * one);
	ck_assert(!stats().bulk_running);
	EXPECT_EQ("every state of the walk", 40, H.nout);
	for (size_t i = 0; i < H.nout; i++) {
		EXPECT_EQ("a bulk sends CT_NEW", WIRE_T_CT_NEW, H.out[i].hdr.type);
		EXPECT_EQ("numbered in order", 1000 + i, H.out[i].hdr.seq);
	}
	EXPECT_EQ("one walk", 1, walk_begins);
	ck_assert(ftfw_idle(H.e));
	h_teardown();
}
END_TEST

START_TEST(nocache_resync_request_starts_the_owners_walk)
{
	nocache_setup(3);
	feed_ctl(WIRE_F_RESYNC, 50, 0, 0);
	EXPECT_EQ("the walk began", 1, walk_begins);
	h_send();
	EXPECT_EQ("the owner's three states", 3, count_kind(0, WIRE_K_DATA));
	/* A second request soon after waits for the spacing, then walks again. */
	feed_ctl(WIRE_F_RESYNC, 51, 0, 0);
	h_send();
	EXPECT_EQ("spaced", 1, walk_begins);
	h_advance(1100);
	h_send();
	EXPECT_EQ("walked again after the spacing", 2, walk_begins);
	EXPECT_EQ("six states in all", 6, count_kind(0, WIRE_K_DATA));
	h_teardown();
}
END_TEST

START_TEST(nocache_ops_need_both_callbacks)
{
	struct flow_table_options o = { .buckets = 16, .seed = 1, .user_bytes = FTFW_USER_BYTES };
	struct ftfw_config c = default_cfg();
	struct ftfw_ops ops = h_ops;
	struct flow_table *t;
	struct ftfw *e = NULL;

	c.mode = FTFW_MODE_NOTRACK;
	ck_assert_int_eq(flow_table_new(&o, &t), 0);
	ops.bulk_pull = h_bulk_pull;
	EXPECT_EQ("pull without begin", -EINVAL, ftfw_new(&c, &ops, &H, t, 1, 0, &e));
	ops.bulk_pull = NULL;
	ops.bulk_begin = h_bulk_begin;
	EXPECT_EQ("begin without pull", -EINVAL, ftfw_new(&c, &ops, &H, t, 1, 0, &e));
	flow_table_free(t);
}
END_TEST

/* ---- ALARM (protocol.md §4) ------------------------------------------------------------------------------ */

#define ALARM_REFRESH_S 5u

static uint32_t fixed_random;

static uint32_t h_random(void *arg)
{
	(void)arg;
	return fixed_random;
}

/* ALARM over the harness; with_random: the intervals come from fixed_random. */
static void alarm_setup(uint32_t refresh_s, bool with_random)
{
	struct flow_table_options o = { .buckets = 256, .seed = 1, .user_bytes = FTFW_USER_BYTES };
	struct ftfw_config c = default_cfg();
	static struct ftfw_ops ops;

	ops = h_ops;
	ops.random = with_random ? h_random : NULL;
	c.mode = FTFW_MODE_ALARM;
	c.refresh_time_s = refresh_s;
	c.random_seed = 42;
	memset(&H, 0, sizeof(H));
	H.delete_dead = true;
	H.now = 100000;
	ck_assert_int_eq(flow_table_new(&o, &H.t), 0);
	ck_assert_int_eq(ftfw_new(&c, &ops, &H, H.t, 1000, H.now, &H.e), 0);
}

/* As the daemon's loop does: at every deadline up to `to`, tick and send. */
static void alarm_run_until(uint64_t to)
{
	for (;;) {
		uint64_t d = ftfw_next_deadline(H.e);

		if (d > to)
			break;
		REQUIRE(d >= H.now || d + ALARM_TICK_MS > H.now, "deadline %llu in the past (now %llu)",
			(unsigned long long)d, (unsigned long long)H.now);
		if (d > H.now)
			H.now = d;
		ftfw_tick(H.e, H.now);
		h_send();
	}
	H.now = to;
	ftfw_tick(H.e, H.now);
	h_send();
}

/* Every message so far: data, flags 0, consecutive sequence numbers from 1000. */
static void expect_only_plain_data(void)
{
	for (size_t i = 0; i < H.nout; i++) {
		REQUIRE(H.out[i].kind == WIRE_K_DATA, "message %zu is not data (kind %s, flags 0x%02x)",
			i, wire_kind_name(H.out[i].kind), H.out[i].hdr.flags);
		EXPECT_EQ("flags", 0, H.out[i].hdr.flags);
		REQUIRE(H.out[i].hdr.type <= WIRE_T_CT_DEL, "type %u", H.out[i].hdr.type);
		EXPECT_EQ("sequence number", 1000 + i, H.out[i].hdr.seq);
	}
}

START_TEST(alarm_refresh_intervals_stay_within_bounds)
{
	enum { FLOWS = 40 };
	uint64_t last[FLOWS + 1] = { 0 }, min_seen = UINT64_MAX, max_seen = 0;
	uint64_t lo = 1200, hi = ALARM_REFRESH_S * 1000u + 1000u;
	unsigned intervals = 0;

	alarm_setup(ALARM_REFRESH_S, false);
	for (uint32_t i = 1; i <= FLOWS; i++)
		put_flow(i, i);
	h_send();
	EXPECT_EQ("the new flows go out at once", FLOWS, H.nout);
	for (size_t i = 0; i < H.nout; i++)
		last[out_key(&H.out[i]) & 0xffff] = H.out[i].at;
	for (size_t from = H.nout; H.now < 100000 + 120000; from = H.nout) {
		alarm_run_until(H.now + 50);
		for (size_t i = from; i < H.nout; i++) {
			uint32_t k = out_key(&H.out[i]) & 0xffff;
			uint64_t d = H.out[i].at - last[k];

			EXPECT_EQ("type of a refresh of a never-updated flow", WIRE_T_CT_NEW, H.out[i].hdr.type);
			/* due on a multiple of the wheel's tick: up to one tick late */
			REQUIRE(d >= lo && d < hi + ALARM_TICK_MS,
				"flow %u refreshed after %llu ms, not in [%llu, %llu]", k,
				(unsigned long long)d, (unsigned long long)lo,
				(unsigned long long)hi + ALARM_TICK_MS);
			min_seen = d < min_seen ? d : min_seen;
			max_seen = d > max_seen ? d : max_seen;
			last[k] = H.out[i].at;
			intervals++;
		}
	}
	/* (5 s + 1 s) / 2 on average: about 40 * 120 / 3.6 refreshes */
	REQUIRE(intervals > 1000, "only %u refreshes in two minutes", intervals);
	REQUIRE(min_seen < lo + 400 && max_seen > hi - 400,
		"the intervals do not spread over the range: %llu..%llu ms",
		(unsigned long long)min_seen, (unsigned long long)max_seen);
	EXPECT_EQ("refreshes counted", intervals, stats().refreshes);
	EXPECT_EQ("timers", FLOWS, stats().refresh_timers);
	expect_only_plain_data();
	h_teardown();
}
END_TEST

START_TEST(alarm_interval_comes_from_the_injected_random)
{
	alarm_setup(ALARM_REFRESH_S, true);
	/* 7 % 5 + 1 = 3 s, plus (7 % 5 + 1) * 200 = 600 ms */
	fixed_random = 7;
	put_flow(1, 1);
	h_send();
	alarm_run_until(H.now + 3599);
	EXPECT_EQ("not before 3.6 s", 1, H.nout);
	alarm_run_until(H.now + 1);
	EXPECT_EQ("refreshed at 3.6 s", 2, H.nout);
	EXPECT_EQ("at", 100000 + 3600, H.out[1].at);
	h_teardown();
}
END_TEST

START_TEST(alarm_update_is_sent_at_once_and_rearms_the_timer)
{
	uint32_t h;

	alarm_setup(ALARM_REFRESH_S, true);
	fixed_random = 0;               /* 1 s + 200 ms: the shortest interval */
	h = put_flow(1, 1);
	h_send();
	alarm_run_until(H.now + 1000);
	EXPECT_EQ("nothing due yet", 1, H.nout);
	put_flow(1, 2);
	EXPECT_EQ("still the same handle", h, flow_table_lookup(H.t, &flow_table_flow(H.t, h)->orig));
	h_send();
	EXPECT_EQ("the update goes out at once", 2, H.nout);
	EXPECT_EQ("as CT_UPD", WIRE_T_CT_UPD, H.out[1].hdr.type);
	EXPECT_EQ("with the new state", 2, out_mark(&H.out[1]));
	/* The old timer would have fired 1.2 s after the first message: it was re-armed. */
	alarm_run_until(100000 + 1000 + 1199);
	EXPECT_EQ("no refresh on the old timer", 2, H.nout);
	alarm_run_until(100000 + 1000 + 1200);
	EXPECT_EQ("refresh 1.2 s after the update", 3, H.nout);
	EXPECT_EQ("type", WIRE_T_CT_UPD, H.out[2].hdr.type);
	EXPECT_EQ("current state", 2, out_mark(&H.out[2]));
	expect_only_plain_data();
	h_teardown();
}
END_TEST

START_TEST(alarm_del_is_sent_once_then_handed_to_the_owner)
{
	uint32_t h, h2;

	alarm_setup(ALARM_REFRESH_S, false);
	h = put_flow(1, 1);
	h2 = put_flow(2, 1);
	h_send();
	alarm_run_until(H.now + 700);
	kill_flow(h);
	h_send();
	EXPECT_EQ("DEL", WIRE_T_CT_DEL, H.out[H.nout - 1].hdr.type);
	EXPECT_EQ("dead_acked once sent", 1, H.ndead);
	EXPECT_EQ("for the flow", h, H.dead[0]);
	EXPECT_EQ("deleted by the owner", 1, flow_table_count(H.t));
	EXPECT_EQ("one timer left", 1, stats().refresh_timers);
	alarm_run_until(H.now + 60000);
	for (size_t i = 3; i < H.nout; i++)
		EXPECT_EQ("only the live flow is refreshed", 2, out_key(&H.out[i]) & 0xffff);
	REQUIRE(H.nout > 10, "the live flow was refreshed (%zu messages)", H.nout);
	EXPECT_EQ("dead_acked", 1, H.ndead);
	(void)h2;
	expect_only_plain_data();
	h_teardown();
}
END_TEST

START_TEST(alarm_receiver_takes_data_iff_flags_are_zero)
{
	uint8_t buf[WIRE_CT_MAX_LEN];
	size_t n;

	alarm_setup(ALARM_REFRESH_S, false);
	put_flow(1, 1);
	feed_data(WIRE_F_HELLO, 500, 1, 1);
	feed_data(WIRE_F_HELLO_BACK, 501, 2, 1);
	feed_ctl(WIRE_F_ACK, 502, 990, 1010);
	feed_ctl(WIRE_F_NACK, 503, 990, 1010);
	feed_ctl(WIRE_F_RESYNC, 504, 0, 0);
	feed_ctl(WIRE_F_ALIVE, 505, 0, 0);
	EXPECT_EQ("nothing applied", 0, H.napplied);
	EXPECT_EQ("flagged messages counted", 6, stats().flagged_ignored);
	EXPECT_EQ("the RESYNC started no bulk", false, stats().bulk_running);
	feed_data(0, 506, 3, 7);
	n = data_msg(buf, WIRE_T_CT_DEL, 0, 507, 3, 7);
	h_feed(buf, n);
	EXPECT_EQ("NEW and DEL applied", 2, H.napplied);
	EXPECT_EQ("NEW", WIRE_T_CT_NEW, H.applied[0].type);
	EXPECT_EQ("DEL", WIRE_T_CT_DEL, H.applied[1].type);
	EXPECT_EQ("mark", 7, H.applied[0].f.flow.mark);
	/* Type 6 without flags is data to ALARM: a bad type, not a malformed header (protocol.md §2.3). */
	buf[0] = (uint8_t)((WIRE_VERSION << 4) | 6);
	h_feed(buf, n);
	EXPECT_EQ("bad type", 1, stats().malformed[WIRE_R_BAD_TYPE]);
	EXPECT_EQ("not a malformed header", 0, stats().malformed[WIRE_R_BAD_HEADER]);
	EXPECT_EQ("not applied", 2, H.napplied);
	/* Nothing answers the peer: only our flow's NEW goes out. */
	h_send();
	alarm_run_until(H.now + 500);
	EXPECT_EQ("emitted", 1, H.nout);
	expect_only_plain_data();
	h_teardown();
}
END_TEST

START_TEST(alarm_never_sends_hello_ack_alive_or_resync)
{
	alarm_setup(2, false);
	for (uint32_t i = 1; i <= 5; i++)
		put_flow(i, i);
	ftfw_request_resync(H.e);
	ftfw_bulk(H.e);
	h_send();
	for (uint32_t s = 0; s < 50; s++)
		feed_data(0, 7000 + 2 * s, 100 + s, 1);   /* with gaps: FTFW would NACK */
	alarm_run_until(H.now + 30000);
	REQUIRE(H.nout > 5 * 30 / 3, "refreshes go on (%zu messages)", H.nout);
	EXPECT_EQ("ALIVE", 0, stats().alive_sent);
	EXPECT_EQ("ACK", 0, stats().ack_sent);
	EXPECT_EQ("NACK", 0, stats().nack_sent);
	EXPECT_EQ("RESYNC", 0, stats().resync_sent);
	EXPECT_EQ("lost counted for the statistics", 49, stats().seq_lost);
	expect_only_plain_data();
	h_teardown();
}
END_TEST

START_TEST(alarm_flows_loaded_without_a_change_are_refreshed)
{
	struct flow_table_options o = { .buckets = 256, .seed = 1, .user_bytes = FTFW_USER_BYTES };
	struct ftfw_config c = default_cfg();
	struct flow_full ff;
	uint32_t h;

	/* Two flows already in the table when the engine starts (the start-up dump). */
	memset(&H, 0, sizeof(H));
	H.delete_dead = true;
	H.now = 100000;
	ck_assert_int_eq(flow_table_new(&o, &H.t), 0);
	make_flow(&ff, 1, 1);
	flow_table_upsert(H.t, &ff, 0, &h);
	make_flow(&ff, 2, 1);
	flow_table_upsert(H.t, &ff, 0, &h);
	c.mode = FTFW_MODE_ALARM;
	c.refresh_time_s = 3;
	ck_assert_int_eq(ftfw_new(&c, &h_ops, &H, H.t, 1000, H.now, &H.e), 0);
	EXPECT_EQ("armed at creation", 2, stats().refresh_timers);
	/* One more inserted quietly later (-R). */
	make_flow(&ff, 3, 1);
	flow_table_upsert(H.t, &ff, 0, &h);
	ck_assert_int_eq(ftfw_flow_loaded(H.e, h), 0);
	ck_assert_int_eq(ftfw_flow_loaded(H.e, h), 0);          /* twice: one timer */
	EXPECT_EQ("armed when loaded", 3, stats().refresh_timers);
	h_send();
	EXPECT_EQ("nothing sent at once", 0, H.nout);
	alarm_run_until(H.now + 4000 + ALARM_TICK_MS);
	for (uint32_t k = 1; k <= 3; k++) {
		bool seen = false;

		for (size_t i = 0; i < H.nout; i++)
			seen = seen || (out_key(&H.out[i]) & 0xffff) == k;
		REQUIRE(seen, "flow %u not refreshed within RefreshTime + 1 s", k);
	}
	ck_assert_int_eq(ftfw_flow_loaded(H.e, 12345), -ENOENT);
	expect_only_plain_data();
	h_teardown();
}
END_TEST

START_TEST(alarm_long_refresh_time_wraps_the_wheel_without_firing_early)
{
	uint64_t start;

	alarm_setup(100000, true);
	/* 9000 % 100000 + 1 = 9001 s, + 200 ms: beyond one turn of the capped wheel */
	fixed_random = 9000;
	put_flow(1, 1);
	h_send();
	start = H.now;
	alarm_run_until(start + 9001200 - 1);
	EXPECT_EQ("not before its time", 1, H.nout);
	alarm_run_until(start + 9001200);
	EXPECT_EQ("at its time", 2, H.nout);
	h_teardown();
}
END_TEST

START_TEST(alarm_forget_takes_the_flow_off_the_wheel)
{
	uint32_t h;

	alarm_setup(ALARM_REFRESH_S, false);
	h = put_flow(1, 1);
	put_flow(2, 1);
	h_send();
	ftfw_flow_forget(H.e, h);
	ck_assert_int_eq(flow_table_delete(H.t, h), 0);
	EXPECT_EQ("one timer left", 1, stats().refresh_timers);
	alarm_run_until(H.now + 20000);
	for (size_t i = 2; i < H.nout; i++)
		EXPECT_EQ("only flow 2", 2, out_key(&H.out[i]) & 0xffff);
	ftfw_forget_all(H.e);
	EXPECT_EQ("no timer left", 0, stats().refresh_timers);
	EXPECT_EQ("no deadline", UINT64_MAX, ftfw_next_deadline(H.e));
	h_teardown();
}
END_TEST

/* ---- misuse --------------------------------------------------------------------------------- */

START_TEST(rejects_bad_arguments)
{
	struct flow_table_options o = { .buckets = 16, .seed = 1, .user_bytes = FTFW_USER_BYTES };
	struct ftfw_config c = default_cfg();
	struct ftfw_ops ops = h_ops;
	struct flow_table *t;
	struct ftfw *e;
	struct wire_msg m = { 0 };

	ck_assert_int_eq(flow_table_new(&o, &t), 0);
	ops.emit = NULL;
	ck_assert_int_eq(ftfw_new(&c, &ops, NULL, t, 1, 0, &e), -EINVAL);
	c.mode = 7;
	ck_assert_int_eq(ftfw_new(&c, &h_ops, NULL, t, 1, 0, &e), -EINVAL);
	c.mode = FTFW_MODE_FTFW;
	ck_assert_int_eq(ftfw_new(&c, &h_ops, NULL, t, 1, 0, &e), 0);
	ck_assert_int_eq(ftfw_receive(e, FTFW_PEERS_MAX, &m, 0), -EINVAL);
	ck_assert_int_eq(ftfw_flow_changed(e, 12345), -ENOENT);
	ftfw_free(e);
	flow_table_free(t);
}
END_TEST

static Suite *ftfw_suite(void)
{
	Suite *s = suite_create("ftfw");
	TCase *conf = tcase_create("conformance_1_4_7");
	TCase *hello = tcase_create("hello");
	TCase *win = tcase_create("ack_window");
	TCase *snd = tcase_create("sender");
	TCase *multi = tcase_create("peers");
	TCase *alarm;
	TCase *misc = tcase_create("misc");

	tcase_add_test(multi, liveness_ftfw);
	tcase_add_test(multi, own_stall_does_not_make_peers_down);
	tcase_add_test(multi, flapping_peer_gets_a_longer_timeout);
	tcase_add_test(multi, liveness_notrack);
	tcase_add_test(multi, liveness_alarm);
	tcase_add_test(misc, backlog_grows_without_acks_and_ends_with_one);
	tcase_add_test(misc, notrack_backlog_is_what_waits_to_be_sent);
	tcase_add_test(conf, hello_is_acked_with_hello_back);
	tcase_add_test(conf, in_order_data_is_acked_after_the_timer);
	tcase_add_test(conf, gap_is_nacked_at_once_and_its_data_accepted);
	tcase_add_test(conf, old_sequence_number_is_dropped_and_counted);
	tcase_add_test(conf, unknown_attribute_is_rejected_but_acked);
	tcase_add_test(conf, wrong_size_l4proto_is_rejected_but_acked);
	tcase_add_test(conf, wrong_version_is_never_acked_and_later_nacked);
	tcase_add_test(conf, two_messages_in_one_datagram_get_one_ack_range);
	tcase_add_test(conf, batch_decodes_ahead_but_applies_in_order);
	tcase_add_test(conf, four_trailing_bytes_inside_len_are_accepted);
	tcase_add_test(conf, resync_request_sends_the_whole_cache);
	tcase_add_test(conf, nack_resends_with_new_sequence_numbers);
	tcase_add_test(conf, reconfigure_grows_the_resend_queue_in_flight);
	tcase_add_test(conf, ack_covering_all_then_nack_resends_nothing);
	suite_add_tcase(s, conf);

	tcase_add_test(hello, hello_handshake_trace);
	tcase_add_test(hello, first_alive_says_hello);
	tcase_add_test(hello, first_hello_of_a_peer_is_answered_at_once);
	tcase_add_test(hello, acks_and_nacks_never_say_hello);
	tcase_add_test(hello, sequence_tracked_while_peer_says_hello);
	tcase_add_test(hello, peer_restart_requeues_what_was_in_flight);
	tcase_add_test(hello, restart_resets_peer_then_resyncs_and_bulks);
	tcase_add_test(hello, nack_flood_resends_each_message_once_per_hold);
	tcase_add_test(hello, held_nack_is_answered_when_the_hold_ends);
	tcase_add_test(hello, nack_of_what_its_sender_acked_is_ignored);
	tcase_add_test(hello, forged_restart_does_not_drop_the_real_peers_messages);
	tcase_add_test(hello, late_datagrams_of_the_old_process_are_taken_then_forgotten);
	tcase_add_test(hello, resync_requests_during_a_walk_make_one_more_walk);
	tcase_add_test(hello, a_request_on_a_walk_not_begun_adds_nothing);
	tcase_add_test(hello, a_request_during_the_second_walk_waits_for_the_spacing);
	tcase_add_test(hello, peers_walks_are_spaced_and_the_spacing_grows);
	tcase_add_test(hello, a_resync_flood_sends_the_table_a_bounded_number_of_times);
	tcase_add_test(hello, operator_bulk_is_never_spaced);
	tcase_add_test(hello, duplicate_hello_is_not_a_restart);
	tcase_add_test(hello, sequence_jump_without_hello_is_a_restart);
	tcase_add_test(hello, only_old_numbers_for_two_seconds_is_a_restart);
	tcase_add_test(hello, old_numbered_resync_request_is_answered);
	tcase_add_test(hello, resync_hello_after_a_silence_is_a_restart);
	tcase_add_test(hello, resync_request_waits_for_hello_only_so_long);
	tcase_add_test(hello, ack_without_hello_amid_a_peers_handshake_is_no_restart);
	tcase_add_test(hello, acked_hello_messages_are_sent_again_without_hello);
	tcase_add_test(hello, resync_request_waits_for_the_end_of_our_hello);
	suite_add_tcase(s, hello);

	tcase_add_test(win, full_ack_window_acks_at_once);
	tcase_add_test(win, gap_acks_what_came_before_it);
	tcase_add_test(win, gap_is_nacked_again_until_given_up);
	tcase_add_test(win, ack_covers_the_two_ranges_before_it);
	tcase_add_test(win, ack_is_repeated_in_a_later_datagram);
	tcase_add_test(win, busy_sender_still_acks_within_a_second);
	suite_add_tcase(s, win);

	tcase_add_test(snd, rto_retransmits_unacknowledged_data);
	tcase_add_test(snd, rto_probes_a_silent_peer_with_one_message);
	tcase_add_test(snd, overdue_message_is_resent_before_its_rto);
	tcase_add_test(snd, flow_control_at_resend_queue_size);
	tcase_add_test(snd, only_the_latest_state_is_sent);
	tcase_add_test(snd, acked_del_is_handed_to_the_owner);
	tcase_add_test(snd, new_life_is_sent_as_ct_new_until_acknowledged);
	tcase_add_test(snd, loaded_flow_is_sent_as_ct_new_until_acknowledged);
	tcase_add_test(snd, bulk_is_paced_by_the_window_and_sends_each_flow_once);
	tcase_add_test(snd, send_respects_the_byte_budget);
	tcase_add_test(snd, resync_request_is_retransmitted_until_acked);
	tcase_add_test(snd, sequence_numbers_wrap_around);
	suite_add_tcase(s, snd);

	tcase_add_test(multi, message_leaves_only_when_every_peer_acked);
	tcase_add_test(multi, silent_member_costs_one_probe_per_round_not_the_window);
	tcase_add_test(multi, bulk_leaves_room_for_live_changes);
	tcase_add_test(multi, each_peer_has_its_own_sequence_space);
	tcase_add_test(multi, silent_peer_is_lost_and_bulk_sent_when_back);
	tcase_add_test(multi, first_heard_peer_gets_a_bulk_unless_disabled);
	tcase_add_test(multi, when_every_peer_is_gone_nothing_waits_for_it);
	tcase_add_test(multi, late_peer_makes_us_start_a_new_sequence_space);
	tcase_add_test(hello, acks_count_only_after_hello_back);
	tcase_add_test(hello, dropped_hello_is_not_answered);
	tcase_add_test(hello, loss_during_our_hello_asks_a_resync_after_it);
	suite_add_tcase(s, multi);

	tcase_add_test(misc, rsqueue_dump_lists_flows_and_resync_in_order);
	tcase_add_test(misc, notrack_sends_once_without_hello_and_never_acks);
	tcase_add_test(misc, nocache_state_goes_out_at_once_with_the_next_number);
	tcase_add_test(misc, nocache_state_is_refused_outside_notrack);
	tcase_add_test(misc, nocache_bulk_is_the_owners_walk_paced_by_the_budget);
	tcase_add_test(misc, nocache_resync_request_starts_the_owners_walk);
	tcase_add_test(misc, nocache_ops_need_both_callbacks);
	tcase_add_test(misc, rejects_bad_arguments);
	suite_add_tcase(s, misc);

	alarm = tcase_create("alarm");
	tcase_add_test(alarm, alarm_refresh_intervals_stay_within_bounds);
	tcase_add_test(alarm, alarm_interval_comes_from_the_injected_random);
	tcase_add_test(alarm, alarm_update_is_sent_at_once_and_rearms_the_timer);
	tcase_add_test(alarm, alarm_del_is_sent_once_then_handed_to_the_owner);
	tcase_add_test(alarm, alarm_receiver_takes_data_iff_flags_are_zero);
	tcase_add_test(alarm, alarm_never_sends_hello_ack_alive_or_resync);
	tcase_add_test(alarm, alarm_flows_loaded_without_a_change_are_refreshed);
	tcase_add_test(alarm, alarm_long_refresh_time_wraps_the_wheel_without_firing_early);
	tcase_add_test(alarm, alarm_forget_takes_the_flow_off_the_wheel);
	suite_add_tcase(s, alarm);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ftfw_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
