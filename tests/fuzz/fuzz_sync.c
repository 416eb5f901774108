/*
 * fuzz_sync.c - the sync engine (src/sync: FTFW, NOTRACK, ALARM) run by a
 * little program: peers' datagrams, local changes, timers and requests.
 *
 * The codec has its own harness (fuzz_wire.c); this one drives the engine
 * as the daemon does (src/daemon/replication.c) over a real flow_table and
 * checks, after every engine call, what sync.h promises.  Everything is
 * deterministic: the clock is the program's, ALARM's PRNG has a fixed seed.
 *
 * Input: an 8-byte header, then steps until the input ends.  Bytes read
 * past the end are 0.
 *
 *   0  config   bits 0-1 mode (0, 3 FTFW; 1 NOTRACK; 2 ALARM); 2 plain_acks;
 *               3 no_bulk_on_new; 4 peer_timeout_ms = 30000 (the daemon's,
 *               multicast); 5 ops->prefetch set (decode ahead); 6 an
 *               internal exp_table attached, ops->apply_exp set; 7 enc_opts
 *               also WSCALE and UDPLITE_PORTS
 *   1  queues   bits 0-3 ResendQueueSize (rsq_sizes[]); 4-7 ACKWindowSize (ack_windows[])
 *   2  timing   bits 0-1 the per-step send budget (budgets[]); 2-4 RefreshTime - 1 (s);
 *               5-6 first RTO (rtos[]); 7 the clock starts at 0 instead of 10^6 ms
 *   3  table    bits 0-3 flows in the table before ftfw_new(); 4 one of them dead;
 *               5 ops->peer_reset left NULL; 6 ALARM's randomness from
 *               ops->random (a fixed xorshift) instead of the engine's PRNG
 *   4-7         the initial sequence number (little-endian)
 *
 * Each step is an opcode byte, low nibble the operation, high nibble `a`,
 * and its arguments.  A peer is p = a & 3: four peers of a multicast group
 * (ids 0-3), each with a sequence counter kept here (ctr[p]).
 *
 *   0 RAW       len (a & 4: 16-bit LE, else 8-bit), then len bytes: a
 *               datagram from p, as received
 *   1 CTL       k, then arguments: a control message from p built with
 *   2 CTL+      wire_ctl_encode(); a & 4 HELLO, a & 8 HELLO_BACK; k bits 0-1
 *               ACK, NACK, RESYNC, ALIVE; 2-3 seq mode; 4-5 `from` mode;
 *               6-7 `to` mode (read_seq(), read_range_end())
 *   3 DATA      k, key, content: a conntrack (or expectation) message from
 *   4 DATA+     p built with wire_ct_encode(); a & 4 HELLO, a & 8 HELLO_BACK;
 *               k bits 0-1 CT_NEW, CT_UPD, CT_DEL, EXP_*; 2-3 seq mode;
 *               6-7 bits 8-9 of the key
 *               CTL+ and DATA+ append to a datagram of p's that goes out
 *               with the next CTL or DATA, or before any other step.
 *   5 TICK      ms: the clock advances ms * {1, 10, 100, 1000}[a & 3];
 *               a & 4: one late tick at the end, else a tick and a send at
 *               every deadline on the way (the daemon's loop)
 *   6 UPSERT    key, content (key bits 8-9 from a): insert or update a
 *               local flow; a & 4 ftfw_flow_loaded() (a dump), else
 *               ftfw_flow_changed() (a kernel event)
 *   7 KILL      key (bits 8-9 from a): a & 4 flow_table_mark_dead() and
 *               ftfw_flow_changed(); else ftfw_flow_forget() and
 *               flow_table_delete() (a purge)
 *   8 MANY      key, n, content: 2n flows from key on (a bulk load or a burst;
 *               a & 4 as UPSERT)
 *   9 BULK      ftfw_bulk() (-B)
 *   A RESYNC    ftfw_request_resync() (-n)
 *   B FORGET    ftfw_forget_all(); a & 1: then clear the tables (a flush)
 *   C EXP       key: an internal expectation; a & 3: 0, 1 upsert and
 *               ftfw_exp_changed(), 2 mark dead and changed, 3 forget and delete
 *   D PEER      m, arguments: p's counter: m & 3 = 0 set to a u32, 1 jump
 *               2^20 + u16 ahead (a restart), 2 go back u8, 3 our next - u8
 *   E ECHO      one of the last 8 messages we emitted ((a >> 2) back), fed
 *               back to us from p (a multicast group loops back)
 *   F SEND      a & 8 clear: an extra ftfw_send() with budget extra_budgets[a & 7]
 *     BURST     a & 8 set: c, k: 1 + 4c conntrack messages from p (the state
 *               of key k with content k, type CT_NEW + (k >> 2) % 3, a & 4
 *               HELLO), numbered ctr[p], then every 1 + (k & 3) (gaps), in
 *               datagrams of 1472 bytes: what a bulk send looks like, and
 *               enough to fill the engine's rings of ACK repeats and gaps;
 *               BURST_MSGS_MAX in all per input (3 bytes say 1021 messages:
 *               a run of 0xff would cost seconds)
 *
 * Sequence modes (2 bits): 0 ctr[p]++ (in sequence); 1 a gap of 1 + u8;
 * 2 old: ctr[p] - 1 - u8; 3 an absolute u32 (ctr[p] follows it).
 * Range ends (2 bits): 0 our next - 1 - u8; 1 our oldest in flight + u8;
 * 2 an absolute u32; 3 zero (a RESYNC request's).
 *
 * After every step, ftfw_send() runs with the budget of the header, and
 * the invariants are checked (check_state(), check_rsqueue(), the
 * callbacks, feed_run(), engine_send(), engine_tick()); a violation
 * abort()s after saying which.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "flow/exp_table.h"
#include "flow/flow.h"
#include "flow/table.h"
#include "sync/sync.h"
#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NPEERS          4u
#define KEYS            1024u           /* local and peers' flows: 10-bit keys */
#define EXP_KEYS        16u
#define ECHO_RING       8u
#define DGRAM_MAX       WIRE_RX_BUF
#define TICKS_PER_STEP  256u            /* deadlines run by one TICK step before it jumps */
#define SEEN_SLOTS      8192u           /* the sequence numbers we fed, for the ACK check */
#define BURST_DGRAM     1472u           /* an Ethernet MTU less IP and UDP headers */
#define BURST_MSGS_MAX  1024u           /* per input: twice the ring of ACK repeats, four times the gaps */

/*
 * What one received message can make the engine emit (rx.c): in sequence,
 * one ACK when the window is used up (in_sync()); at a gap, the ACK owed
 * up to the gap, the NACK of the gap, and an ACK of the message itself
 * when a window of 1 is used up at once (gap()).  A peer's restart, a
 * HELLO, a RESYNC only queue or schedule (the ALIVE that answers a HELLO
 * goes at the next tick).  NOTRACK and ALARM never answer.
 */
#define RX_EMIT_PER_MSG 3u
/* An ACK is repeated once (deviation 11); a gap NACKed again 11 times (NACK_TRIES, deviation 9). */
#define NACK_REPEATS    11u

#define CHECK(c) do { if (!(c)) fail(__LINE__, #c); } while (0)

static void fail(int line, const char *what)
{
	fprintf(stderr, "fuzz_sync.c:%d: invariant violated: %s\n", line, what);
	abort();
}

static const uint32_t rsq_sizes[16] = {
	1, 2, 3, 4, 5, 8, 16, 32, 64, 100, 256, 300, 1000, 4096, 65536, 0,
};
static const uint32_t ack_windows[16] = {
	0, 1, 2, 3, 4, 5, 7, 8, 10, 16, 32, 64, 100, 300, 1000, 2,
};
/* The per-step budget: at least one message of any size, so nothing waits for ever. */
static const size_t budgets[4] = { 1500, 4096, 16384, 256u * 1024u };
_Static_assert(1500 >= FTFW_MSG_MAX, "the smallest budget takes the longest message");
static const uint32_t rtos[4] = { 0, 50, 500, 5000 };
static const size_t extra_budgets[8] = { 0, 8, 16, 100, 1312, 1500, 65536, SIZE_MAX };
static const uint8_t protos[4] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_SCTP };

enum phase { PH_NONE, PH_RECEIVE, PH_SEND, PH_TICK };

/* Per input; reset at the start of each. */
struct fz {
	const uint8_t *in;
	size_t len, pos;

	struct flow_table *t;
	struct exp_table *x;
	struct ftfw *e;
	enum ftfw_mode mode;
	bool notrack;                   /* NOTRACK or ALARM */
	bool alarm;
	bool timeout;                   /* peer_timeout_ms set */
	bool use_peer_reset;
	size_t budget;
	unsigned enc_opts;
	uint64_t now, start;

	/* the engine call running, and what it emitted */
	enum phase phase;
	size_t call_msgs, call_bytes;
	uint64_t msgs, bytes, data_msgs;        /* all emitted, as ftfw_stats counts */

	/* the run of messages being received, for the apply and prefetch checks */
	const struct wire_msg *run;
	unsigned run_n, run_peer, apply_pos, prefetch_pos;

	/* peers */
	uint32_t ctr[NPEERS];
	uint16_t fed;                   /* got a message whose header passed the splitter */
	uint16_t ev_new, ev_lost;
	uint64_t peer_msgs[NPEERS], peer_restarts[NPEERS], space_switches[NPEERS];
	uint64_t msgs_fed, bytes_fed;
	uint32_t rng;                   /* ops->random */
	int reset_due;                  /* peer whose FTFW_PEER_RESTARTED awaits peer_reset, or -1 */

	/* what bulk_walks may reach */
	uint64_t bulk_ops, forget_ops;

	/* the datagram being built by CTL+ / DATA+ */
	unsigned dgram_peer;
	size_t dgram_len;

	unsigned burst_msgs;

	/* the last messages we emitted, for ECHO */
	unsigned echo_head, echo_n;
	size_t echo_len[ECHO_RING];

	uint32_t seen_gen;
};

static struct fz F;
static uint8_t dgram[DGRAM_MAX];
static uint8_t raw[DGRAM_MAX];
static uint8_t echo_msg[ECHO_RING][FTFW_MSG_MAX];
static struct flow_full scratch_flow;
static struct flow_exp scratch_exp;
/* Sequence numbers fed to the engine: an open-addressing set, emptied by bumping the generation. */
static struct { uint32_t gen, seq; } seen[SEEN_SLOTS];
static size_t seen_n;
static bool seen_full;

/* ---- input ------------------------------------------------------------------------- */

static uint8_t u8(void)
{
	return F.pos < F.len ? F.in[F.pos++] : 0;
}

static uint16_t u16(void)
{
	uint16_t lo = u8();

	return (uint16_t)(lo | (uint16_t)u8() << 8);
}

static uint32_t u32(void)
{
	uint32_t lo = u16();

	return lo | (uint32_t)u16() << 16;
}

/* ---- flows ------------------------------------------------------------------------- */

/*
 * The flow of `key` (bits 0-6 the host, 7 IPv6, 8-9 the protocol) with
 * `content` (its mark; bit 4 labels, 5 SNAT, 6 a helper).  The key alone
 * makes the table's key, so a new content is an update.
 */
static void make_flow(struct flow_full *ff, uint32_t key, uint8_t content)
{
	struct flow *f = &ff->flow;
	bool v6 = key & 0x80;
	uint8_t proto = protos[(key >> 8) & 3];

	memset(ff, 0, sizeof(*ff));
	if (proto == IPPROTO_ICMP && v6)
		proto = IPPROTO_ICMPV6;
	f->orig.family = v6 ? AF_INET6 : AF_INET;
	f->orig.l4proto = proto;
	if (v6) {
		f->orig.src.bytes[0] = 0xfd;
		f->orig.src.bytes[15] = (uint8_t)(key & 0x7f);
		f->orig.dst.bytes[0] = 0xfd;
		f->orig.dst.bytes[15] = 1;
	} else {
		f->orig.src.v4 = htonl(0x0a000000u | (key & 0x7f));
		f->orig.dst.v4 = htonl(0xc0a80001u);
	}
	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		f->orig.l4.icmp.id = htons((uint16_t)key);
		f->orig.l4.icmp.type = v6 ? 128 : 8;
		f->attrs |= FLOW_A_ICMP;
	} else {
		f->orig.l4.port.sport = htons((uint16_t)(1024 + key));
		f->orig.l4.port.dport = htons(80);
		f->attrs |= FLOW_A_PORTS;
	}
	f->status = 0xe;
	f->timeout = 120;
	f->mark = content;
	f->attrs |= FLOW_A_STATUS | FLOW_A_TIMEOUT | FLOW_A_MARK;
	if (proto == IPPROTO_TCP || proto == IPPROTO_SCTP) {
		f->proto_state = 3;
		f->attrs |= FLOW_A_PROTO_STATE;
	}
	if (content & 0x10) {
		ff->labels.words = (uint16_t)(1 + (content & 3) * 40);
		ff->labels.w[ff->labels.words - 1] = 1u << (content >> 5);
		f->attrs |= FLOW_A_LABELS;
	}
	if (content & 0x20) {
		if (v6) {
			ff->ext.snat.bytes[0] = 0xfc;
			ff->ext.snat.bytes[15] = (uint8_t)key;
		} else {
			ff->ext.snat.v4 = htonl(0xc6120000u | (key & 0xff));
		}
		f->attrs |= FLOW_A_SNAT;
	}
	if (content & 0x40) {
		strcpy(ff->ext.helper, "ftp");
		f->attrs |= FLOW_A_HELPER;
	}
}

static void make_tuple4(struct flow_tuple *t, uint32_t src, uint32_t dst, uint16_t sport,
			uint16_t dport)
{
	memset(t, 0, sizeof(*t));
	t->family = AF_INET;
	t->l4proto = IPPROTO_TCP;
	t->src.v4 = htonl(src);
	t->dst.v4 = htonl(dst);
	t->l4.port.sport = htons(sport);
	t->l4.port.dport = htons(dport);
}

/* An FTP data expectation of `key` (its expected port) with `content` (its timeout). */
static void make_exp(struct flow_exp *x, uint32_t key, uint8_t content)
{
	memset(x, 0, sizeof(*x));
	make_tuple4(&x->master, 0xc6120101u, 0xc6120102u, (uint16_t)(40000 + key), 21);
	make_tuple4(&x->tuple, 0xc6120101u, 0xc6120102u, 0, (uint16_t)(50000 + key));
	make_tuple4(&x->mask, 0xffffffffu, 0xffffffffu, 0, 0xffff);
	x->timeout = 300u + content;
	x->attrs = FLOW_EXP_A_TIMEOUT | FLOW_EXP_A_HELPER;
	strcpy(x->helper, "ftp");
}

/* Decoded flows are normalised: equal flows are equal bytes (fuzz_wire.c). */
static bool same_flow(const struct flow_full *a, const struct flow_full *b)
{
	if (memcmp(&a->flow, &b->flow, sizeof(a->flow)) || memcmp(&a->ext, &b->ext, sizeof(a->ext)))
		return false;
	if (a->labels.words != b->labels.words)
		return false;
	return !(a->flow.attrs & FLOW_A_LABELS) ||
	       memcmp(a->labels.w, b->labels.w, a->labels.words * sizeof(a->labels.w[0])) == 0;
}

/* ---- the sequence numbers fed ----------------------------------------------------- */

static size_t seen_slot(uint32_t seq)
{
	return (seq * 0x9e3779b1u) >> 19;       /* 13 bits: SEEN_SLOTS */
}

static void seen_add(uint32_t seq)
{
	size_t i = seen_slot(seq);

	if (seen_full)
		return;
	if (seen_n >= SEEN_SLOTS / 2) {
		seen_full = true;       /* past what the check can follow: it stops */
		return;
	}
	while (seen[i].gen == F.seen_gen) {
		if (seen[i].seq == seq)
			return;
		i = (i + 1) % SEEN_SLOTS;
	}
	seen[i].gen = F.seen_gen;
	seen[i].seq = seq;
	seen_n++;
}

static bool seen_has(uint32_t seq)
{
	size_t i = seen_slot(seq);

	if (seen_full)
		return true;
	while (seen[i].gen == F.seen_gen) {
		if (seen[i].seq == seq)
			return true;
		i = (i + 1) % SEEN_SLOTS;
	}
	return false;
}

/* ---- the callbacks ---------------------------------------------------------------- */

/* A data message we emitted is about an entry of our table, with the type its flags give. */
static void check_our_data(const struct wire_msg *m)
{
	uint8_t type = m->hdr.type;
	unsigned flags;
	uint32_t h;

	if (wire_type_is_ct(type)) {
		CHECK(wire_ct_decode(m->data, m->len, &scratch_flow) == WIRE_OK);
		h = flow_table_lookup(F.t, &scratch_flow.flow.orig);
		CHECK(h != 0);
		flags = flow_table_flags(F.t, h);
		CHECK((type == WIRE_T_CT_DEL) == ((flags & FLOW_ENTRY_DEAD) != 0));
		CHECK(type != WIRE_T_CT_UPD || (flags & FLOW_ENTRY_UPDATED));
		return;
	}
	CHECK(wire_type_is_exp(type) && F.x);
	CHECK(wire_exp_decode(m->data, m->len, &scratch_exp) == WIRE_OK);
	h = exp_table_lookup(F.x, &scratch_exp);
	CHECK(h != 0);
	flags = exp_table_flags(F.x, h);
	CHECK((type == WIRE_T_EXP_DEL) == ((flags & FLOW_ENTRY_DEAD) != 0));
	CHECK(type != WIRE_T_EXP_UPD || (flags & FLOW_ENTRY_UPDATED));
}

static void fz_emit(void *arg, const void *msg, size_t len)
{
	struct wire_split s;
	struct wire_msg m, end;
	uint8_t fl;

	(void)arg;
	CHECK(F.phase != PH_NONE);
	CHECK(len >= WIRE_HDR_LEN && len <= FTFW_MSG_MAX);
	/* The splitter takes it whole, as one message of our version. */
	wire_split_init(&s, msg, len, false);
	CHECK(wire_split_next(&s, &m) == WIRE_SPLIT_MSG);
	CHECK(m.reason == WIRE_OK && m.len == len && m.hdr.version == WIRE_VERSION);
	CHECK(wire_split_next(&s, &end) == WIRE_SPLIT_END);
	/* Every message takes the next number of the one counter (protocol.md §3.2.1). */
	CHECK(m.hdr.seq == ftfw_next_seq(F.e));
	fl = m.hdr.flags;
	if (F.alarm) {
		/* sync.h, ALARM: nothing but data with flags 0. */
		CHECK(fl == 0 && m.kind == WIRE_K_DATA);
	} else if (F.notrack) {
		/* protocol.md §4.1: no HELLO, ACK or NACK. */
		CHECK(!(fl & (WIRE_F_HELLO_MASK | WIRE_F_ACK | WIRE_F_NACK)));
	}
	CHECK(m.kind != WIRE_K_BAD);
	switch (m.kind) {
	case WIRE_K_DATA:
		CHECK(F.phase == PH_SEND);
		check_our_data(&m);
		F.data_msgs++;
		break;
	case WIRE_K_RESYNC:
		CHECK(F.phase == PH_SEND && !F.alarm && m.hdr.from == 0 && m.hdr.to == 0);
		break;
	case WIRE_K_ACK:
		/* Deviation 16: no HELLO on ACK; and never a number we did not receive (§3.4.3). */
		CHECK(F.phase == PH_RECEIVE || F.phase == PH_TICK);
		CHECK(!(fl & WIRE_F_HELLO) && !(fl & ~(WIRE_F_ACK | WIRE_F_HELLO_BACK)));
		CHECK((int32_t)(m.hdr.to - m.hdr.from) >= 0);
		for (uint32_t q = m.hdr.from; !seen_full; q++) {
			CHECK(seen_has(q));
			if (q == m.hdr.to)
				break;
		}
		break;
	case WIRE_K_NACK:
		CHECK(F.phase == PH_RECEIVE || F.phase == PH_TICK);
		CHECK(!(fl & WIRE_F_HELLO) && !(fl & ~(WIRE_F_NACK | WIRE_F_HELLO_BACK)));
		CHECK((int32_t)(m.hdr.to - m.hdr.from) >= 0);
		break;
	case WIRE_K_ALIVE:
		CHECK(F.phase == PH_TICK);
		break;
	case WIRE_K_BAD:
		break;
	}
	F.call_msgs++;
	F.call_bytes += len;
	F.msgs++;
	F.bytes += len;
	memcpy(echo_msg[F.echo_head], msg, len);
	F.echo_len[F.echo_head] = len;
	F.echo_head = (F.echo_head + 1) % ECHO_RING;
	if (F.echo_n < ECHO_RING)
		F.echo_n++;
}

/*
 * What a conntrack message decodes to, for the checks below.  The messages
 * of a burst differ in their sequence numbers only, which the decoder
 * does not read: the last result is kept, keyed by the rest of the bytes.
 */
static bool decode_ct(const struct wire_msg *m, const struct flow_full **out)
{
	static uint8_t key[FTFW_MSG_MAX];
	static size_t key_len;
	static bool key_ok;
	static struct flow_full f;

	if (m->len > sizeof(key)) {
		*out = &scratch_flow;
		return wire_ct_decode(m->data, m->len, &scratch_flow) == WIRE_OK;
	}
	*out = &f;
	if (key_len == m->len && memcmp(key, m->data, WIRE_OFF_SEQ) == 0 &&
	    memcmp(key + WIRE_HDR_LEN, m->data + WIRE_HDR_LEN, m->len - WIRE_HDR_LEN) == 0)
		return key_ok;
	memcpy(key, m->data, m->len);
	key_len = m->len;
	key_ok = wire_ct_decode(m->data, m->len, &f) == WIRE_OK;
	return key_ok;
}

/* May this message of the run carry a state for apply() of `type`? */
static bool is_data_for(const struct wire_msg *m, uint8_t type)
{
	if (m->reason != WIRE_OK || m->hdr.type != type)
		return false;
	/* protocol.md §4.2: ALARM takes any message without flags as data. */
	return F.alarm ? m->hdr.flags == 0 : m->kind == WIRE_K_DATA;
}

/*
 * apply() only with what the decoder made of a message of the run being
 * received, in order, each message at most once (apply_exp() shares the
 * order).
 */
static void fz_apply(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	(void)arg;
	CHECK(F.phase == PH_RECEIVE && peer == F.run_peer && wire_type_is_ct(type));
	while (F.apply_pos < F.run_n) {
		const struct wire_msg *m = &F.run[F.apply_pos++];
		const struct flow_full *d;

		if (is_data_for(m, type) && decode_ct(m, &d) && same_flow(d, f))
			return;
	}
	fail(__LINE__, "apply() of a state no message of the run decodes to");
}

static void fz_apply_exp(void *arg, unsigned peer, uint8_t type, const struct flow_exp *x)
{
	(void)arg;
	CHECK(F.phase == PH_RECEIVE && peer == F.run_peer && wire_type_is_exp(type));
	while (F.apply_pos < F.run_n) {
		const struct wire_msg *m = &F.run[F.apply_pos++];

		if (is_data_for(m, type) && wire_exp_decode(m->data, m->len, &scratch_exp) == WIRE_OK &&
		    memcmp(&scratch_exp, x, sizeof(*x)) == 0)
			return;
	}
	fail(__LINE__, "apply_exp() of an expectation no message of the run decodes to");
}

/* A hint, before apply(): what a conntrack message of the run decodes to, in order. */
static void fz_prefetch(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	(void)arg;
	CHECK(F.phase == PH_RECEIVE && peer == F.run_peer && wire_type_is_ct(type));
	while (F.prefetch_pos < F.run_n) {
		const struct wire_msg *m = &F.run[F.prefetch_pos++];
		const struct flow_full *d;

		if (m->reason == WIRE_OK && m->kind == WIRE_K_DATA && m->hdr.type == type &&
		    decode_ct(m, &d) && same_flow(d, f))
			return;
	}
	fail(__LINE__, "prefetch() of a state no message of the run decodes to");
}

/* The owner deletes an acknowledged dead entry at once, as the daemon does. */
static void fz_dead_acked(void *arg, uint32_t h)
{
	(void)arg;
	CHECK(F.phase != PH_NONE);
	if (h & FTFW_EXP_HANDLE) {
		CHECK(F.x && (exp_table_flags(F.x, h & ~FTFW_EXP_HANDLE) & FLOW_ENTRY_DEAD));
		CHECK(exp_table_delete(F.x, h & ~FTFW_EXP_HANDLE) == 0);
		return;
	}
	CHECK(flow_table_flags(F.t, h) & FLOW_ENTRY_DEAD);
	CHECK(flow_table_delete(F.t, h) == 0);
}

static void fz_peer_event(void *arg, unsigned peer, enum ftfw_peer_event ev)
{
	uint16_t bit = (uint16_t)(1u << peer);

	(void)arg;
	/* Only a peer that sent something, and only its first message makes it NEW. */
	CHECK(peer < NPEERS && (F.fed & bit) && F.reset_due < 0);
	switch (ev) {
	case FTFW_PEER_NEW:
		CHECK(F.phase == PH_RECEIVE && !(F.ev_new & bit));
		F.ev_new |= bit;
		break;
	case FTFW_PEER_RESTARTED:
		/* Only FTFW tracks restarts; peer_reset comes next (sync.h). */
		CHECK(F.phase == PH_RECEIVE && F.mode == FTFW_MODE_FTFW && (F.ev_new & bit));
		F.peer_restarts[peer]++;
		if (F.use_peer_reset)
			F.reset_due = (int)peer;
		break;
	case FTFW_PEER_LOST:
		CHECK(F.phase == PH_TICK && F.timeout && (F.ev_new & bit) && !(F.ev_lost & bit));
		F.ev_lost |= bit;
		break;
	case FTFW_PEER_BACK:
		CHECK(F.phase == PH_RECEIVE && (F.ev_lost & bit));
		F.ev_lost &= (uint16_t)~bit;
		break;
	case FTFW_PEER_TWO_SPACES:
		/* Only after a restart of that peer replaced a space (rx.c). */
		CHECK(F.phase == PH_RECEIVE && F.mode == FTFW_MODE_FTFW && F.peer_restarts[peer] > 0);
		F.space_switches[peer]++;
		break;
	default:
		fail(__LINE__, "unknown peer event");
	}
}

static void fz_peer_reset(void *arg, unsigned peer)
{
	(void)arg;
	CHECK(F.phase == PH_RECEIVE && F.reset_due == (int)peer);
	F.reset_due = -1;
}

/* ALARM only, and only while something is armed: when a flow is sent or loaded. */
static uint32_t fz_random(void *arg)
{
	(void)arg;
	CHECK(F.alarm);
	F.rng ^= F.rng << 13;
	F.rng ^= F.rng >> 17;
	F.rng ^= F.rng << 5;
	return F.rng;
}

/* ---- the invariants after each engine call ---------------------------------------- */

struct rsq_walk {
	unsigned n;
	bool resync;
	bool have_prev;
	uint32_t prev;
	uint32_t next_seq;
};

static bool rsq_entry(void *arg, const struct ftfw_rsq_entry *ent)
{
	struct rsq_walk *w = arg;

	/* Oldest first, strictly increasing, all sent already. */
	CHECK(!w->have_prev || (int32_t)(ent->seq - w->prev) > 0);
	CHECK((int32_t)(ent->seq - w->next_seq) < 0);
	w->have_prev = true;
	w->prev = ent->seq;
	if (ent->handle == 0) {
		CHECK(ent->flags == WIRE_F_RESYNC && !w->resync);
		w->resync = true;
	} else if (ent->handle & FTFW_EXP_HANDLE) {
		CHECK(F.x && exp_table_user(F.x, ent->handle & ~FTFW_EXP_HANDLE));
		w->n++;
	} else {
		CHECK(flow_table_user(F.t, ent->handle));
		w->n++;
	}
	return true;
}

/*
 * The table walks the input may have caused (bulk_walks; bulk.c,
 * deviation 21).  A walk starts on -B; when a peer causes one
 * (ftfw_bulk_for_peer(): at once, or from ftfw_tick() once it waited);
 * or when a walk ends during which a peer asked (bulk_again): the rerun,
 * during which a request only waits.  A peer's start needs no walk
 * running and now >= bulk_not_before, which every walk's end sets to its
 * time plus bulk_spacing, 1000 ms or more once a peer has asked.  So
 * between two of a peer's starts a walk ended (or ftfw_forget_all()
 * dropped it, leaving bulk_not_before as it was) and they are 1000 ms
 * apart: at most 1 + T / 1000 + forgets of them, T the time simulated
 * (the first may follow a -B walk that ended with the spacing still 0).
 * A walk that is not a rerun has at most one: walks <= 2 (-B + peers').
 */
static uint64_t bulk_walks_max(void)
{
	uint64_t peers = 1 + (F.now - F.start) / 1000 + F.forget_ops;

	return 2 * (F.bulk_ops + peers);
}

/* What the engine says of each peer is what it told us through peer_event(). */
static void check_peers(const struct ftfw_stats *st)
{
	struct ftfw_peer_stats ps;
	uint64_t restarts = 0;

	for (unsigned p = 0; p < NPEERS; p++) {
		uint16_t bit = (uint16_t)(1u << p);

		CHECK(ftfw_peer_stats(F.e, p, &ps) == 0);
		CHECK(ps.known == ((F.ev_new & bit) != 0) && ps.lost == ((F.ev_lost & bit) != 0));
		CHECK(ps.msg_recv == F.peer_msgs[p] && ps.restarts == F.peer_restarts[p] &&
		      ps.space_switches == F.space_switches[p]);
		CHECK(!ps.hello_pending || (!F.notrack && ps.known));
		CHECK(ps.last_heard <= F.now);
		restarts += ps.restarts;
	}
	CHECK(restarts == st->peer_restarts);
	CHECK(ftfw_peer_stats(F.e, FTFW_PEERS_MAX, &ps) == -EINVAL);
}

static void check_state(void)
{
	struct ftfw_stats st;
	uint64_t entries = flow_table_count(F.t) + (F.x ? exp_table_count(F.x) : 0);
	bool idle;

	CHECK(F.reset_due < 0);
	ftfw_stats(F.e, &st);
	/* A flow is in one queue at most, the wheel included. */
	CHECK((uint64_t)st.txq_len + st.retxq_len + st.inflight + st.refresh_timers <= entries);
	if (F.notrack) {
		/* Nothing acknowledged, nothing resent. */
		CHECK(st.inflight == 0 && st.retxq_len == 0 && st.inflight_max == 0);
	} else {
		CHECK(st.inflight <= st.inflight_max && st.inflight_max > 0);
		CHECK(st.refresh_timers == 0);
	}
	if (F.alarm)
		CHECK(!st.bulk_running && !st.bulk_waiting && !st.resync_outstanding && st.bulk_walks == 0);
	idle = !st.txq_len && !st.retxq_len && !st.inflight && !st.bulk_running && !st.bulk_waiting &&
	       !st.resync_outstanding;
	CHECK(ftfw_idle(F.e) == idle);
	/* The counters count what we saw. */
	CHECK(st.msg_sent == F.msgs && st.bytes_sent == F.bytes && st.data_sent == F.data_msgs);
	CHECK(st.ack_repeated <= st.ack_sent - st.ack_repeated);
	CHECK(st.nack_repeated <= NACK_REPEATS * (st.nack_sent - st.nack_repeated));
	CHECK(st.peers <= (unsigned)__builtin_popcount(F.fed));
	CHECK(st.bulk_walks <= bulk_walks_max());
	CHECK(st.msg_recv == F.msgs_fed && st.bytes_recv == F.bytes_fed);
	check_peers(&st);
}

/* The resend queue as `-s rsqueue` lists it; O(in flight), so once a step. */
static void check_rsqueue(void)
{
	struct ftfw_stats st;
	struct rsq_walk w = { .next_seq = ftfw_next_seq(F.e) };

	ftfw_stats(F.e, &st);
	ftfw_rsqueue_foreach(F.e, rsq_entry, &w);
	CHECK(w.n == st.inflight);
	CHECK(!w.resync || st.resync_outstanding);
}

/* ---- engine calls ------------------------------------------------------------------ */

static void begin(enum phase ph)
{
	F.phase = ph;
	F.call_msgs = 0;
	F.call_bytes = 0;
}

static size_t engine_send(size_t budget)
{
	size_t n;

	begin(PH_SEND);
	n = ftfw_send(F.e, F.now, budget);
	F.phase = PH_NONE;
	/* What it says it emitted is what it emitted, within the budget. */
	CHECK(n == F.call_bytes && n <= budget);
	/* With room left for any message, it stopped because nothing more may go now. */
	if (budget - n >= FTFW_MSG_MAX)
		CHECK(!ftfw_send_ready(F.e));
	check_state();
	return n;
}

static void engine_tick(void)
{
	begin(PH_TICK);
	ftfw_tick(F.e, F.now);
	F.phase = PH_NONE;
	/* Everything due was done: the loop does not spin. */
	CHECK(ftfw_next_deadline(F.e) > F.now);
	check_state();
}

/* One run of at most FTFW_RX_AHEAD messages of a datagram, as replication.c's on_receive(). */
static void feed_run(unsigned peer, const struct wire_msg *m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (m[i].reason == WIRE_OK) {
			F.fed |= (uint16_t)(1u << peer);
			seen_add(m[i].hdr.seq);
		}
		F.bytes_fed += m[i].len;
	}
	F.peer_msgs[peer] += n;
	F.msgs_fed += n;
	F.run = m;
	F.run_n = n;
	F.run_peer = peer;
	F.apply_pos = 0;
	F.prefetch_pos = 0;
	begin(PH_RECEIVE);
	CHECK(ftfw_receive_batch(F.e, peer, m, n, F.now) == 0);
	F.phase = PH_NONE;
	F.run = NULL;
	F.run_n = 0;
	/* Only ACKs and NACKs (fz_emit), and few of them (RX_EMIT_PER_MSG). */
	if (F.notrack)
		CHECK(F.call_msgs == 0);
	CHECK(F.call_msgs <= RX_EMIT_PER_MSG * n);
	CHECK(F.call_bytes == F.call_msgs * WIRE_CTL_RANGE_LEN);
	check_state();
}

static void feed_datagram(unsigned peer, const uint8_t *buf, size_t len)
{
	struct wire_split split;
	struct wire_msg m[FTFW_RX_AHEAD];
	enum wire_split_status st = WIRE_SPLIT_MSG;

	wire_split_init(&split, buf, len, false);
	while (st == WIRE_SPLIT_MSG) {
		unsigned n = 0;

		while (n < FTFW_RX_AHEAD && (st = wire_split_next(&split, &m[n])) == WIRE_SPLIT_MSG)
			n++;
		feed_run(peer, m, n);
		if (st == WIRE_SPLIT_ERROR)
			ftfw_count_rejected(F.e, peer, m[n].reason);
	}
}

static void flush_dgram(void)
{
	if (!F.dgram_len)
		return;
	feed_datagram(F.dgram_peer, dgram, F.dgram_len);
	F.dgram_len = 0;
}

/* Room for a message of `len` in p's datagram: another peer's, or a full one, goes first. */
static uint8_t *dgram_room(unsigned peer, size_t len)
{
	if (F.dgram_len && (F.dgram_peer != peer || F.dgram_len + len > sizeof(dgram)))
		flush_dgram();
	F.dgram_peer = peer;
	return dgram + F.dgram_len;
}

/* ---- steps ------------------------------------------------------------------------- */

static uint32_t read_seq(unsigned peer, unsigned mode)
{
	uint32_t s;

	switch (mode & 3) {
	case 0:
		return F.ctr[peer]++;
	case 1:
		s = F.ctr[peer] + 1 + u8();
		F.ctr[peer] = s + 1;
		return s;
	case 2:
		return F.ctr[peer] - 1 - u8();
	default:
		s = u32();
		F.ctr[peer] = s + 1;
		return s;
	}
}

static bool first_inflight(void *arg, const struct ftfw_rsq_entry *ent)
{
	*(uint32_t *)arg = ent->seq;
	return false;
}

static uint32_t read_range_end(unsigned mode)
{
	uint32_t oldest = ftfw_next_seq(F.e);

	switch (mode & 3) {
	case 0:
		return ftfw_next_seq(F.e) - 1 - u8();
	case 1:
		ftfw_rsqueue_foreach(F.e, first_inflight, &oldest);
		return oldest + u8();
	case 2:
		return u32();
	default:
		return 0;
	}
}

static void step_ctl(unsigned a, bool more)
{
	static const uint8_t kinds[4] = { WIRE_F_ACK, WIRE_F_NACK, WIRE_F_RESYNC, WIRE_F_ALIVE };
	unsigned peer = a & 3, k = u8();
	uint8_t flags = kinds[k & 3];
	uint32_t seq, from, to;
	int n;

	if (a & 4)
		flags |= WIRE_F_HELLO;
	if (a & 8)
		flags |= WIRE_F_HELLO_BACK;
	seq = read_seq(peer, k >> 2);
	from = read_range_end(k >> 4);
	to = read_range_end(k >> 6);
	n = wire_ctl_encode(dgram_room(peer, WIRE_CTL_RANGE_LEN), WIRE_CTL_RANGE_LEN, flags, seq,
			    from, to);
	CHECK(n > 0);
	F.dgram_len += (size_t)n;
	if (!more)
		flush_dgram();
}

static void step_data(unsigned a, bool more)
{
	unsigned peer = a & 3, k = u8();
	uint32_t key = u8() | (k >> 6) << 8;
	uint8_t content = u8();
	struct wire_hdr h = { .flags = 0 };
	uint8_t *buf;
	int n;

	if (a & 4)
		h.flags |= WIRE_F_HELLO;
	if (a & 8)
		h.flags |= WIRE_F_HELLO_BACK;
	h.seq = read_seq(peer, k >> 2);
	buf = dgram_room(peer, FTFW_MSG_MAX);
	if ((k & 3) < 3) {
		h.type = (uint8_t)(WIRE_T_CT_NEW + (k & 3));
		make_flow(&scratch_flow, key, content);
		n = wire_ct_encode(buf, FTFW_MSG_MAX, &h, &scratch_flow, WIRE_ENC_TIMEOUT, NULL);
	} else {
		h.type = (uint8_t)(WIRE_T_EXP_NEW + key % 3);
		make_exp(&scratch_exp, key % EXP_KEYS, content);
		n = wire_exp_encode(buf, FTFW_MSG_MAX, &h, &scratch_exp, WIRE_ENC_TIMEOUT, NULL);
	}
	CHECK(n > 0);
	F.dgram_len += (size_t)n;
	if (!more)
		flush_dgram();
}

static void step_raw(unsigned a)
{
	size_t len = a & 4 ? u16() : u8();

	if (len > F.len - F.pos)
		len = F.len - F.pos;
	/* A copy: the engine reads the bytes during the call only, as the daemon's receive buffer. */
	memcpy(raw, F.in + F.pos, len);
	F.pos += len;
	feed_datagram(a & 3, raw, len);
}

static void step_tick(unsigned a)
{
	static const uint32_t scale[4] = { 1, 10, 100, 1000 };
	uint64_t target = F.now + (uint64_t)u8() * scale[a & 3];

	if (!(a & 4)) {
		for (unsigned i = 0; i < TICKS_PER_STEP; i++) {
			uint64_t d = ftfw_next_deadline(F.e);

			if (d > target)
				break;
			if (d > F.now)
				F.now = d;
			engine_tick();
			engine_send(F.budget);
		}
	}
	F.now = target;
	engine_tick();
}

static void local_changed(uint32_t h, bool loaded)
{
	if (loaded)
		CHECK(ftfw_flow_loaded(F.e, h) == 0);
	else
		CHECK(ftfw_flow_changed(F.e, h) == 0);
}

static uint32_t upsert(uint32_t key, uint8_t content, bool loaded)
{
	uint32_t h;

	make_flow(&scratch_flow, key % KEYS, content);
	CHECK(flow_table_upsert(F.t, &scratch_flow, (uint32_t)(F.now / 1000), &h) >= 0);
	local_changed(h, loaded);
	return h;
}

static void step_kill(unsigned a)
{
	uint32_t key = u8() | (a & 3) << 8, h;

	make_flow(&scratch_flow, key, 0);
	h = flow_table_lookup(F.t, &scratch_flow.flow.orig);
	if (!h)
		return;
	if (a & 4) {
		CHECK(flow_table_mark_dead(F.t, h, (uint32_t)(F.now / 1000)) == 0);
		CHECK(ftfw_flow_changed(F.e, h) == 0);
	} else {
		ftfw_flow_forget(F.e, h);
		CHECK(flow_table_delete(F.t, h) == 0);
	}
}

static void step_exp(unsigned a)
{
	uint32_t key = u8() % EXP_KEYS, h;
	uint8_t content = (uint8_t)(key * 7 + F.now);

	make_exp(&scratch_exp, key, content);
	if (!F.x)
		return;
	h = exp_table_lookup(F.x, &scratch_exp);
	switch (a & 3) {
	case 0:
	case 1:
		CHECK(exp_table_upsert(F.x, &scratch_exp, (uint32_t)(F.now / 1000), &h) >= 0);
		CHECK(ftfw_exp_changed(F.e, h) == 0);
		break;
	case 2:
		if (!h)
			return;
		CHECK(exp_table_mark_dead(F.x, h, (uint32_t)(F.now / 1000)) == 0);
		CHECK(ftfw_exp_changed(F.e, h) == 0);
		break;
	default:
		if (!h)
			return;
		ftfw_exp_forget(F.e, h);
		CHECK(exp_table_delete(F.x, h) == 0);
		break;
	}
}

static void step_peer(unsigned a)
{
	unsigned peer = a & 3, m = u8();

	switch (m & 3) {
	case 0:
		F.ctr[peer] = u32();
		break;
	case 1:
		F.ctr[peer] += (1u << 20) + u16();
		break;
	case 2:
		F.ctr[peer] -= u8();
		break;
	default:
		/* A node of the group started near our own counter (they share a space). */
		F.ctr[peer] = ftfw_next_seq(F.e) - u8();
		break;
	}
}

/* One state encoded once, sent n times under the numbers of a bulk (the encoder is fuzz_wire's). */
static void step_burst(unsigned a)
{
	static uint8_t msg[FTFW_MSG_MAX];
	unsigned peer = a & 3, n = 1 + 4u * u8(), k = u8();
	struct wire_hdr h = { .type = (uint8_t)(WIRE_T_CT_NEW + (k >> 2) % 3) };
	uint32_t step = 1 + (k & 3);
	size_t len;
	int ret;

	if (n > BURST_MSGS_MAX - F.burst_msgs)
		n = BURST_MSGS_MAX - F.burst_msgs;
	F.burst_msgs += n;
	if (a & 4)
		h.flags = WIRE_F_HELLO;
	make_flow(&scratch_flow, k, (uint8_t)k);
	ret = wire_ct_encode(msg, sizeof(msg), &h, &scratch_flow, WIRE_ENC_TIMEOUT, NULL);
	CHECK(ret > 0 && (size_t)ret <= BURST_DGRAM);
	len = (size_t)ret;
	flush_dgram();
	for (unsigned i = 0; i < n; i++) {
		uint8_t *buf;

		if (F.dgram_len + len > BURST_DGRAM)
			flush_dgram();
		buf = dgram_room(peer, len);
		memcpy(buf, msg, len);
		/* protocol.md §2.2: the sequence number, big-endian, at offset 4. */
		buf[WIRE_OFF_SEQ] = (uint8_t)(F.ctr[peer] >> 24);
		buf[WIRE_OFF_SEQ + 1] = (uint8_t)(F.ctr[peer] >> 16);
		buf[WIRE_OFF_SEQ + 2] = (uint8_t)(F.ctr[peer] >> 8);
		buf[WIRE_OFF_SEQ + 3] = (uint8_t)F.ctr[peer];
		F.ctr[peer] += step;
		F.dgram_len += len;
	}
	flush_dgram();
}

static void step_echo(unsigned a)
{
	unsigned back = (a >> 2) % ECHO_RING, i;
	uint8_t *buf;
	size_t len;

	if (back >= F.echo_n)
		return;
	i = (F.echo_head + ECHO_RING - 1 - back) % ECHO_RING;
	len = F.echo_len[i];
	buf = dgram_room(a & 3, len);
	memcpy(buf, echo_msg[i], len);
	F.dgram_len += len;
	flush_dgram();
}

#ifdef FUZZ_SYNC_TRACE
/* cc -DFUZZ_SYNC_TRACE: a line per step on stderr, to read what a reproducer does. */
static void trace(uint8_t op)
{
	struct ftfw_stats st;

	ftfw_stats(F.e, &st);
	fprintf(stderr, "op %x.%x now %llu next_seq %u table %u | tx %u retx %u inflight %u "
		"timers %u | sent %llu data %llu | walks %llu (max %llu) running %d waiting %d "
		"coalesced %llu | peers %u restarts %llu evictions %llu\n",
		op & 15, op >> 4, (unsigned long long)(F.now - F.start), ftfw_next_seq(F.e),
		flow_table_count(F.t), st.txq_len, st.retxq_len, st.inflight, st.refresh_timers,
		(unsigned long long)st.msg_sent, (unsigned long long)st.data_sent,
		(unsigned long long)st.bulk_walks, (unsigned long long)bulk_walks_max(),
		st.bulk_running, st.bulk_waiting, (unsigned long long)st.bulk_coalesced, st.peers,
		(unsigned long long)st.peer_restarts, (unsigned long long)st.ring_evictions);
}
#endif

static void step(void)
{
	uint8_t op = u8();
	unsigned a = op >> 4;

	/* What CTL+ and DATA+ gathered goes before anything else happens. */
	if ((op & 0x0f) != 1 && (op & 0x0f) != 2 && (op & 0x0f) != 3 && (op & 0x0f) != 4)
		flush_dgram();
	switch (op & 0x0f) {
	case 0x0:
		step_raw(a);
		break;
	case 0x1:
	case 0x2:
		step_ctl(a, (op & 0x0f) == 2);
		break;
	case 0x3:
	case 0x4:
		step_data(a, (op & 0x0f) == 4);
		break;
	case 0x5:
		step_tick(a);
		break;
	case 0x6: {
		uint32_t key = u8() | (a & 3) << 8, h;

		h = upsert(key, u8(), a & 4);
		/* What its message will take, as the codec says for what we stored. */
		CHECK(ftfw_msg_size(F.e, h) == wire_ct_size(&scratch_flow, F.enc_opts));
		break;
	}
	case 0x7:
		step_kill(a);
		break;
	case 0x8: {
		uint32_t key = u8() | (a & 3) << 8;
		unsigned n = 2u * u8();
		uint8_t content = u8();

		for (unsigned i = 0; i < n; i++)
			upsert(key + i, content, a & 4);
		break;
	}
	case 0x9:
		ftfw_bulk(F.e);
		F.bulk_ops++;
		break;
	case 0xa:
		ftfw_request_resync(F.e);
		break;
	case 0xb:
		ftfw_forget_all(F.e);
		F.forget_ops++;
		if (a & 1) {
			flow_table_clear(F.t);
			if (F.x)
				exp_table_clear(F.x);
		}
		break;
	case 0xc:
		step_exp(a);
		break;
	case 0xd:
		step_peer(a);
		break;
	case 0xe:
		step_echo(a);
		break;
	default:
		if (a & 8)
			step_burst(a);
		else
			engine_send(extra_budgets[a & 7]);
		break;
	}
	check_state();
	engine_send(F.budget);
	check_rsqueue();
#ifdef FUZZ_SYNC_TRACE
	trace(op);
#endif
}

/* ---- one input ----------------------------------------------------------------------- */

static void teardown(void)
{
	ftfw_free(F.e);
	flow_table_free(F.t);
	exp_table_free(F.x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flow_table_options to = { .buckets = 64, .seed = 1, .user_bytes = FTFW_USER_BYTES };
	struct exp_table_options xo = { .seed = 2, .user_bytes = FTFW_USER_BYTES };
	struct ftfw_config cfg = { .random_seed = 0x5eed };
	struct ftfw_ops ops = {
		.emit = fz_emit, .apply = fz_apply, .dead_acked = fz_dead_acked,
		.peer_event = fz_peer_event, .peer_reset = fz_peer_reset,
	};
	uint8_t c0, c1, c2, c3;
	uint32_t seq, gen = F.seen_gen;

	memset(&F, 0, sizeof(F));
	F.in = data;
	F.len = size;
	F.reset_due = -1;
	F.seen_gen = gen + 1;
	seen_n = 0;
	seen_full = false;
	c0 = u8();
	c1 = u8();
	c2 = u8();
	c3 = u8();
	seq = u32();

	cfg.mode = (c0 & 3) == 1 ? FTFW_MODE_NOTRACK : (c0 & 3) == 2 ? FTFW_MODE_ALARM : FTFW_MODE_FTFW;
	cfg.plain_acks = c0 & 4;
	cfg.no_bulk_on_new = c0 & 8;
	cfg.peer_timeout_ms = c0 & 16 ? 30000 : 0;
	if (c0 & 32)
		ops.prefetch = fz_prefetch;
	if (c0 & 64)
		ops.apply_exp = fz_apply_exp;
	cfg.enc_opts = WIRE_ENC_TIMEOUT | (c0 & 128 ? WIRE_ENC_WSCALE | WIRE_ENC_UDPLITE_PORTS : 0);
	cfg.resend_queue_size = rsq_sizes[c1 & 15];
	cfg.ack_window = ack_windows[c1 >> 4];
	cfg.refresh_time_s = 1 + ((c2 >> 2) & 7);
	cfg.rto_ms = rtos[(c2 >> 5) & 3];
	if (c3 & 32)
		ops.peer_reset = NULL;
	if (c3 & 64)
		ops.random = fz_random;

	F.mode = cfg.mode;
	F.notrack = cfg.mode != FTFW_MODE_FTFW;
	F.alarm = cfg.mode == FTFW_MODE_ALARM;
	F.timeout = cfg.peer_timeout_ms != 0;
	F.use_peer_reset = ops.peer_reset != NULL;
	F.budget = budgets[c2 & 3];
	F.enc_opts = cfg.enc_opts;
	F.now = F.start = c2 & 128 ? 0 : 1000000;
	F.rng = 0x9e3779b9u;

	if (flow_table_new(&to, &F.t) < 0)
		return 0;
	if (c0 & 64 && exp_table_new(&xo, &F.x) < 0) {
		teardown();
		return 0;
	}
	/* What the table holds before the engine starts (the daemon's start-up dump). */
	for (unsigned i = 0; i < (c3 & 15u); i++) {
		uint32_t h;

		make_flow(&scratch_flow, i * 37, (uint8_t)i);
		CHECK(flow_table_upsert(F.t, &scratch_flow, 0, &h) >= 0);
		if (i == 0 && (c3 & 16))
			CHECK(flow_table_mark_dead(F.t, h, 0) == 0);
	}
	if (ftfw_new(&cfg, &ops, NULL, F.t, seq, F.now, &F.e) < 0) {
		teardown();
		return 0;
	}
	if (F.x)
		CHECK(ftfw_attach_expectations(F.e, F.x) == 0);
	CHECK(ftfw_receive_batch(F.e, FTFW_PEERS_MAX, NULL, 0, F.now) == -EINVAL);
	check_state();
	check_rsqueue();
	while (F.pos < F.len)
		step();
	flush_dgram();
	engine_send(F.budget);
	check_rsqueue();
	teardown();
	return 0;
}
