/*
 * fuzz_envelope.c - one envelope (the receiver) fed programs of datagrams
 * from three peers: raw bytes, and envelopes sealed by a second envelope
 * (the sender) that holds the same key, so that authentic datagrams,
 * challenges and responses exist for the fuzzer to replay, reorder,
 * corrupt and time.  The input format is in envelope_input.h.
 *
 * Checked after every envelope_open() of the receiver (any failure
 * abort()s):
 *   - the outcome is a known one, the counters add up (in total and per
 *     peer) to the calls made, and ops->send and ops->session were called
 *     at most once each;
 *   - a delivered payload lies in the receiver's buffer with the
 *     envelope's length; it was sealed by one of the sender's sessions, the
 *     one the receiver proved for that peer (through ops->session, old sid
 *     as reported before), above the floor, with the bytes the sender
 *     sealed, and it was never delivered before, even by an earlier
 *     incarnation of the receiver;
 *   - no session is proven under two peer indices;
 *   - challenges and responses stay within their token buckets;
 *   - a datagram is "plain" exactly when its first byte is not the magic.
 * Everything is deterministic: both envelopes' randomness is a fixed
 * xorshift, the clock is the program's.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "envelope/envelope.h"
#include "envelope_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUTBOX_MAX      32
#define HISTORY_MAX     64
#define SESSIONS_MAX    16
#define COUNTERS_MAX    2048

struct msg {
	size_t len;
	uint8_t b[ENVELOPE_CONTROL_MAX];
};

struct node {
	struct envelope *env;
	uint64_t rng;
	struct msg out[OUTBOX_MAX];
	unsigned nout;
	unsigned sends, sessions;               /* callbacks during the current call */
};

/* What the sender sealed in one of its sessions. */
struct session {
	uint64_t sid;
	uint16_t data_len[COUNTERS_MAX];        /* DATA payload length + 1; 0: not a DATA */
	uint8_t data_seed[COUNTERS_MAX];        /* its bytes are data_byte(seed, k) */
	uint8_t delivered[COUNTERS_MAX / 8];
};

static struct {
	const uint8_t *p;
	size_t left;
	uint64_t now;
	uint8_t cfg;
	struct node rx, tx;
	uint64_t rx_born;                       /* when the receiver was created */
	uint64_t rx_opens;                      /* envelope_open() calls of this receiver */
	uint64_t proven[ENVELOPE_PEERS_MAX];    /* as ops->session told us */
	struct session sessions[SESSIONS_MAX];
	unsigned nsessions;
	unsigned nseals;
	struct msg history[HISTORY_MAX];        /* what an attacker recorded, newest last */
	unsigned nhistory;
} S;

static void check(bool ok)
{
	if (!ok)
		abort();
}

static uint8_t next_byte(void)
{
	if (S.left == 0)
		return 0;
	S.left--;
	return *S.p++;
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void node_random(void *arg, void *buf, size_t len)
{
	struct node *n = arg;

	envelope_input_random(&n->rng, buf, len);
}

static void node_send(void *arg, unsigned peer, const void *buf, size_t len)
{
	struct node *n = arg;

	check(len >= ENVELOPE_OVERHEAD && len <= ENVELOPE_CONTROL_MAX);
	check(peer < ENVELOPE_PEERS_MAX);
	n->sends++;
	if (n->nout < OUTBOX_MAX) {
		n->out[n->nout].len = len;
		memcpy(n->out[n->nout].b, buf, len);
		n->nout++;
	}
}

static void rx_session(void *arg, unsigned peer, uint64_t old_sid, uint64_t new_sid)
{
	struct node *n = arg;

	check(peer < ENVELOPE_PEERS_MAX && new_sid != 0 && new_sid != old_sid);
	check(old_sid == S.proven[peer]);
	S.proven[peer] = new_sid;
	n->sessions++;
}

static void tx_session(void *arg, unsigned peer, uint64_t old_sid, uint64_t new_sid)
{
	((struct node *)arg)->sessions++;
}

static const struct envelope_ops rx_ops = { node_random, node_send, rx_session };
static const struct envelope_ops tx_ops = { node_random, node_send, tx_session };

static void record(const void *buf, size_t len)
{
	struct msg *m;

	if (len > sizeof(m->b))
		return;
	/*
	 * Full: the one in the middle goes, so that the oldest half stays
	 * (recordings from long ago: other sessions, behind the window).
	 */
	if (S.nhistory == HISTORY_MAX) {
		memmove(S.history + HISTORY_MAX / 2, S.history + HISTORY_MAX / 2 + 1,
			(HISTORY_MAX / 2 - 1) * sizeof(S.history[0]));
		S.nhistory--;
	}
	m = &S.history[S.nhistory++];
	m->len = len;
	memcpy(m->b, buf, len);
}

static struct session *session_of(uint64_t sid)
{
	for (unsigned i = 0; i < S.nsessions; i++)
		if (S.sessions[i].sid == sid)
			return &S.sessions[i];
	return NULL;
}

/* The bytes of a DATA of the sender's: the harness can tell them again from the seed. */
static uint8_t data_byte(uint8_t seed, size_t k)
{
	return (uint8_t)(seed * 31 + k * 7);
}

static void start_rx(void)
{
	uint8_t keys[2][ENVELOPE_KEY_BYTES];

	memcpy(keys[0], FUZZ_KEY, ENVELOPE_KEY_BYTES);
	memcpy(keys[1], FUZZ_KEY_NEXT, ENVELOPE_KEY_BYTES);
	S.rx.nout = 0;
	check(envelope_new(keys, S.cfg & FUZZ_CFG_RX_TWO_KEYS ? 2 : 1, &rx_ops, &S.rx, &S.rx.env) == 0);
	S.rx_born = S.now;
	S.rx_opens = 0;
	memset(S.proven, 0, sizeof(S.proven));
}

static void start_tx(void)
{
	uint8_t keys[2][ENVELOPE_KEY_BYTES];
	bool next = S.cfg & FUZZ_CFG_TX_NEXT_KEY;

	memcpy(keys[0], next ? FUZZ_KEY_NEXT : FUZZ_KEY, ENVELOPE_KEY_BYTES);
	memcpy(keys[1], next ? FUZZ_KEY : FUZZ_KEY_NEXT, ENVELOPE_KEY_BYTES);
	S.tx.nout = 0;
	check(envelope_new(keys, 2, &tx_ops, &S.tx, &S.tx.env) == 0);
	if (S.nsessions < SESSIONS_MAX) {
		memset(&S.sessions[S.nsessions], 0, sizeof(S.sessions[0]));
		S.sessions[S.nsessions++].sid = envelope_sid(S.tx.env);
	}
}

/* Challenges and responses: at most a bucket's worth, plus the rate since the receiver began. */
static void check_buckets(const struct envelope_stats *st)
{
	uint64_t ms = S.now - S.rx_born;
	uint64_t ch = ENVELOPE_CHALLENGES_PER_S + ms * ENVELOPE_CHALLENGES_PER_S / 1000 + 1;
	uint64_t re = ENVELOPE_RESPONSES_PER_S + ms * ENVELOPE_RESPONSES_PER_S / 1000 + 1;

	check(st->challenges_sent <= ch && st->responses_sent <= re);
}

static void check_counters(void)
{
	struct envelope_stats total, peer;
	uint64_t sum = 0, per_peer[ENVELOPE_R_MAX] = { 0 };

	envelope_stats(S.rx.env, &total);
	for (int r = 0; r < ENVELOPE_R_MAX; r++)
		sum += total.opened[r];
	check(sum == S.rx_opens);
	for (unsigned p = 0; p < ENVELOPE_PEERS_MAX; p++) {
		check(envelope_peer_stats(S.rx.env, p, &peer) == 0);
		for (int r = 0; r < ENVELOPE_R_MAX; r++)
			per_peer[r] += peer.opened[r];
	}
	/* Only an index out of range is counted in the totals alone. */
	for (int r = 0; r < ENVELOPE_R_MAX; r++)
		check(per_peer[r] == total.opened[r] || (r == ENVELOPE_R_WRONG_PEER && per_peer[r] <= total.opened[r]));
	check(total.sessions_accepted <= total.opened[ENVELOPE_CONTROL]);
	check_buckets(&total);
}

static void check_sessions(void)
{
	struct envelope_session a, b;

	for (unsigned p = 0; p < ENVELOPE_PEERS_MAX; p++) {
		bool has = envelope_peer_session(S.rx.env, p, &a);

		check(has == (S.proven[p] != 0));
		if (!has)
			continue;
		check(a.sid == S.proven[p] && a.highest >= a.floor && a.sid != envelope_sid(S.rx.env));
		for (unsigned q = 0; q < p; q++)
			check(!envelope_peer_session(S.rx.env, q, &b) || b.sid != a.sid);
	}
}

static void check_delivery(unsigned peer, const uint8_t *buf, size_t len, const uint8_t *pl, size_t plen)
{
	uint64_t sid = get_be64(buf + ENVELOPE_OFF_SID), counter = get_be64(buf + ENVELOPE_OFF_COUNTER);
	struct envelope_session es;
	struct session *s;
	volatile uint8_t sink = 0;

	check(peer < ENVELOPE_PEERS_MAX && len >= ENVELOPE_OVERHEAD && pl != NULL);
	check(plen == len - ENVELOPE_OVERHEAD);
	for (size_t k = 0; k < plen; k++)
		sink ^= pl[k];
	(void)sink;
	/* Only the sender holds the key: whatever is delivered, it sealed. */
	s = session_of(sid);
	check(s != NULL);
	check(envelope_peer_session(S.rx.env, peer, &es) && es.sid == sid && S.proven[peer] == sid);
	check(counter > es.floor && counter <= es.highest);
	if (counter < COUNTERS_MAX) {
		check(s->data_len[counter] == plen + 1);
		for (size_t k = 0; k < plen; k++)
			check(pl[k] == data_byte(s->data_seed[counter], k));
		check(!(s->delivered[counter / 8] >> (counter % 8) & 1));
		s->delivered[counter / 8] |= (uint8_t)(1 << (counter % 8));
	}
}

static enum envelope_reason rx_open(unsigned peer, const uint8_t *buf, size_t len)
{
	const void *pl;
	size_t plen;
	enum envelope_reason r;

	S.rx.sends = 0;
	S.rx.sessions = 0;
	r = envelope_open(S.rx.env, peer, buf, len, S.now, &pl, &plen);
	S.rx_opens++;
	check((unsigned)r < ENVELOPE_R_MAX);
	check(S.rx.sends <= 1 && S.rx.sessions <= 1);
	if (peer < ENVELOPE_PEERS_MAX)
		check((r == ENVELOPE_R_PLAIN) == (len > 0 && buf[0] != ENVELOPE_MAGIC));
	if (r == ENVELOPE_DELIVER)
		check_delivery(peer, buf, len, pl, plen);
	else
		check(pl == NULL && plen == 0);
	check_counters();
	check_sessions();
	return r;
}

static void tx_open(const uint8_t *buf, size_t len)
{
	const void *pl;
	size_t plen;

	S.tx.sends = 0;
	S.tx.sessions = 0;
	check((unsigned)envelope_open(S.tx.env, 0, buf, len, S.now, &pl, &plen) < ENVELOPE_R_MAX);
	check(S.tx.sends <= 1 && S.tx.sessions <= 1);
}

/* Hand `from`'s outbox over, one message at a time (opening may add to the other one). */
static void drain(struct node *from, bool to_rx, unsigned peer)
{
	static struct msg batch[OUTBOX_MAX];
	unsigned n = from->nout;

	memcpy(batch, from->out, n * sizeof(batch[0]));
	from->nout = 0;
	for (unsigned i = 0; i < n; i++) {
		record(batch[i].b, batch[i].len);
		if (to_rx)
			rx_open(peer, batch[i].b, batch[i].len);
		else
			tx_open(batch[i].b, batch[i].len);
	}
}

static void op_seal(unsigned peer, bool deliver)
{
	static uint8_t payload[256], out[256 + ENVELOPE_OVERHEAD];
	struct session *s = session_of(envelope_sid(S.tx.env));
	size_t len = next_byte(), n;
	uint8_t seed = (uint8_t)S.nseals++;
	uint64_t counter;

	for (size_t k = 0; k < len; k++)
		payload[k] = data_byte(seed, k);
	/* With the time: AES-256-GCM once the receiver's challenge said it opens it. */
	n = envelope_seal_at(S.tx.env, payload, len, out, sizeof(out), S.now);
	check(n == len + ENVELOPE_OVERHEAD);
	counter = get_be64(out + ENVELOPE_OFF_COUNTER);
	if (s != NULL && counter < COUNTERS_MAX) {
		s->data_len[counter] = (uint16_t)(len + 1);
		s->data_seed[counter] = seed;
	}
	record(out, n);
	if (deliver)
		rx_open(peer, out, n);
}

static void op_frame(void)
{
	static uint8_t buf[256];
	size_t len = next_byte();
	const char *why = NULL;
	long fl;
	bool fv;

	for (size_t i = 0; i < len; i++)
		buf[i] = next_byte();
	fl = envelope_frame_len(NULL, buf, len, &why);
	fv = envelope_frame_valid(NULL, buf, len);
	check(fl <= (long)len);
	if (fl < 0)
		check(why != NULL && !fv);
	if (fl > 0)
		check(fl >= ENVELOPE_OVERHEAD);
	if (fv) {
		enum envelope_reason r;

		check(fl > 0);
		r = rx_open(0, buf, (size_t)fl);
		check(r != ENVELOPE_R_PLAIN && r != ENVELOPE_R_TRUNCATED);
	}
}

static void step(void)
{
	static uint8_t raw[65536];
	static const uint64_t tick_units[4] = { 1, 10, 100, 1000 };
	uint8_t opcode = next_byte(), a = opcode >> 4;
	unsigned peer = fuzz_peers[a & 3];
	size_t len, back;
	struct msg m;

	switch (opcode & 0x0f) {
	case FUZZ_RAW:
		len = next_byte();
		if (a & 8)
			len = len << 8 | next_byte();
		for (size_t i = 0; i < len; i++)
			raw[i] = next_byte();
		record(raw, len);
		rx_open(peer, raw, len);
		break;
	case FUZZ_SEAL:
		op_seal(peer, !(a & 8));
		break;
	case FUZZ_REPLAY:
	case FUZZ_FLIP:
		back = next_byte();
		if (S.nhistory == 0)
			break;
		m = S.history[S.nhistory - 1 - back % S.nhistory];
		if ((opcode & 0x0f) == FUZZ_FLIP && m.len) {
			size_t off = next_byte() % m.len;
			uint8_t x = next_byte();

			m.b[off] ^= x ? x : 1;
		}
		rx_open(peer, m.b, m.len);
		break;
	case FUZZ_TICK:
		S.now += next_byte() * tick_units[a & 3];
		break;
	case FUZZ_TO_SENDER:
		drain(&S.rx, false, 0);
		break;
	case FUZZ_TO_RECEIVER:
		drain(&S.tx, true, peer);
		break;
	case FUZZ_RESTART_SENDER:
		/* Only sessions the harness can follow: past SESSIONS_MAX the sender lives on. */
		if (S.nsessions == SESSIONS_MAX)
			break;
		envelope_free(S.tx.env);
		start_tx();
		break;
	case FUZZ_RESTART_RECEIVER:
		envelope_free(S.rx.env);
		start_rx();
		break;
	case FUZZ_RECEIVER_SEALS: {
		static uint8_t payload[256], out[256 + ENVELOPE_OVERHEAD];
		size_t n;

		len = next_byte();
		memset(payload, 0x5a, len);
		n = envelope_seal(S.rx.env, payload, len, out, sizeof(out));
		check(n == len + ENVELOPE_OVERHEAD);
		record(out, n);
		tx_open(out, n);
		break;
	}
	case FUZZ_FRAME:
		op_frame();
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t clocks[4] = { 0, 1000, (uint64_t)1 << 32, (uint64_t)1 << 63 };

	memset(&S, 0, sizeof(S));
	S.p = data;
	S.left = size;
	S.cfg = next_byte();
	S.now = clocks[S.cfg >> FUZZ_CFG_CLOCK_SHIFT & 3];
	S.rx.rng = 0x9e3779b97f4a7c15ULL;
	S.tx.rng = 0xd1b54a32d192ed03ULL;
	start_rx();
	start_tx();
	while (S.left)
		step();
	envelope_free(S.rx.env);
	envelope_free(S.tx.env);
	return 0;
}
