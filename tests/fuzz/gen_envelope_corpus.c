/*
 * gen_envelope_corpus.c - write the seed corpus of fuzz_envelope
 * (tests/fuzz/corpus/envelope/), in the format of envelope_input.h.
 *
 *     build/default/tests/fuzz/gen_envelope_corpus tests/fuzz/corpus/envelope
 *
 * Two kinds of seeds.  raw_*: one datagram each, sealed here by envelopes
 * that hold the harness's key (a DATA, a CHALLENGE, a RESPONSE), or broken
 * on purpose (bad tag, truncated, plain 1.4.7, unknown key, bad length,
 * version or type).  The others are programs that reach what the fuzzer
 * would take long to find: a finished handshake, key rotation, reordering
 * and the window, restarts of either side, a late response, a session
 * under the wrong index, floods of challenges and of sessions, framing.
 * The output depends on nothing but this file: the envelopes' randomness
 * is a fixed xorshift.  Files it does not write (repro_*) are inputs the
 * fuzzer found; it leaves them alone.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envelope/envelope.h"
#include "envelope_input.h"

struct prog {
	uint8_t b[16384];
	size_t n;
};

struct gen_node {
	struct envelope *env;
	uint64_t rng;
	uint8_t out[ENVELOPE_CONTROL_MAX];
	size_t nout;
};

static const char *outdir;

static void die(const char *what)
{
	fprintf(stderr, "gen_envelope_corpus: %s\n", what);
	exit(1);
}

static void gen_random(void *arg, void *buf, size_t len)
{
	struct gen_node *n = arg;

	envelope_input_random(&n->rng, buf, len);
}

/* Keeps the last control message sent. */
static void gen_send(void *arg, unsigned peer, const void *buf, size_t len)
{
	struct gen_node *n = arg;

	memcpy(n->out, buf, len);
	n->nout = len;
}

static const struct envelope_ops gen_ops = { gen_random, gen_send, NULL };

static void gen_node_start(struct gen_node *n, uint64_t seed, const uint8_t key[ENVELOPE_KEY_BYTES])
{
	uint8_t keys[1][ENVELOPE_KEY_BYTES];

	memcpy(keys[0], key, ENVELOPE_KEY_BYTES);
	n->rng = seed;
	n->nout = 0;
	if (envelope_new(keys, 1, &gen_ops, n, &n->env) != 0)
		die("envelope_new failed");
}

static void put(struct prog *p, uint8_t byte)
{
	if (p->n == sizeof(p->b))
		die("program too long");
	p->b[p->n++] = byte;
}

static void op(struct prog *p, enum fuzz_op code, unsigned a)
{
	put(p, (uint8_t)(code | a << 4));
}

static void op1(struct prog *p, enum fuzz_op code, unsigned a, uint8_t arg)
{
	op(p, code, a);
	put(p, arg);
}

/* A datagram from peer selector `a` (0-2: peers 0-2, 3: an index out of range). */
static void raw(struct prog *p, unsigned a, const uint8_t *buf, size_t len)
{
	if (len > 255) {
		op(p, FUZZ_RAW, a | 8);
		put(p, (uint8_t)(len >> 8));
	} else {
		op(p, FUZZ_RAW, a);
	}
	put(p, (uint8_t)len);
	for (size_t i = 0; i < len; i++)
		put(p, buf[i]);
}

static void frame(struct prog *p, const uint8_t *buf, size_t len)
{
	op1(p, FUZZ_FRAME, 0, (uint8_t)len);
	for (size_t i = 0; i < len; i++)
		put(p, buf[i]);
}

/* The sender seals DATA to p0, the receiver challenges, the sender answers. */
static void handshake(struct prog *p)
{
	op1(p, FUZZ_SEAL, 0, 16);
	op(p, FUZZ_TO_SENDER, 0);
	op(p, FUZZ_TO_RECEIVER, 0);
}

static void emit(const char *name, const struct prog *p)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p->b, 1, p->n, f) != p->n || fclose(f) != 0)
		die(strerror(errno));
}

static struct prog *fresh(uint8_t cfg)
{
	static struct prog p;

	p.n = 0;
	put(&p, cfg);
	return &p;
}

static void emit_raw(const char *name, const uint8_t *buf, size_t len)
{
	struct prog *p = fresh(0);

	raw(p, 0, buf, len);
	emit(name, p);
}

/* Datagrams sealed by two envelopes of the harness's key: a DATA, a challenge, a response. */
static void raw_seeds(void)
{
	static const uint8_t other_key[ENVELOPE_KEY_BYTES] = { 0x42 };
	static const uint8_t alive_147[8] = { 0x1a, 0x10, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01 };
	struct gen_node g1, g2, g3;
	uint8_t data[64 + ENVELOPE_OVERHEAD], challenge[ENVELOPE_CONTROL_MAX], response[ENVELOPE_CONTROL_MAX];
	uint8_t payload[64], bad[sizeof(data)];
	size_t nd, nc, nr;
	const void *pl;
	size_t plen;

	gen_node_start(&g1, 0x1234567, FUZZ_KEY);
	gen_node_start(&g2, 0x7654321, FUZZ_KEY);
	gen_node_start(&g3, 0x5555555, other_key);
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;
	nd = envelope_seal(g1.env, payload, sizeof(payload), data, sizeof(data));
	if (envelope_open(g2.env, 0, data, nd, 0, &pl, &plen) != ENVELOPE_R_STALE_SESSION || g2.nout == 0)
		die("no challenge");
	nc = g2.nout;
	memcpy(challenge, g2.out, nc);
	if (envelope_open(g1.env, 0, challenge, nc, 0, &pl, &plen) != ENVELOPE_CONTROL || g1.nout == 0)
		die("no response");
	nr = g1.nout;
	memcpy(response, g1.out, nr);
	emit_raw("raw_data", data, nd);
	emit_raw("raw_challenge", challenge, nc);
	emit_raw("raw_response", response, nr);

	memcpy(bad, data, nd);
	bad[nd - 1] ^= 0x01;
	emit_raw("raw_bad_tag", bad, nd);
	emit_raw("raw_truncated", data, nd - 1);
	emit_raw("raw_plain_147", alive_147, sizeof(alive_147));
	nd = envelope_seal(g3.env, payload, 8, bad, sizeof(bad));
	emit_raw("raw_unknown_key", bad, nd);
	memcpy(bad, challenge, nc);
	bad[3] = (uint8_t)(bad[3] - 1);
	emit_raw("raw_bad_length", bad, nc);
	memcpy(bad, response, nr);
	bad[1] = 0x23;
	emit_raw("raw_bad_version", bad, nr);
	bad[1] = 0x14;
	emit_raw("raw_bad_type", bad, nr);

	/* Framing: a whole envelope, the same cut short, plain bytes. */
	{
		struct prog *p = fresh(0);

		frame(p, challenge, nc);
		frame(p, challenge, 3);
		frame(p, challenge, nc - 1);
		frame(p, alive_147, sizeof(alive_147));
		emit("frames", p);
	}
	envelope_free(g1.env);
	envelope_free(g2.env);
	envelope_free(g3.env);
}

static void program_seeds(void)
{
	struct prog *p;

	p = fresh(0);
	handshake(p);
	for (int i = 0; i < 4; i++)
		op1(p, FUZZ_SEAL, 0, (uint8_t)(8 * i));
	op1(p, FUZZ_REPLAY, 0, 1);
	op1(p, FUZZ_REPLAY, 0, 3);
	emit("handshake_then_data", p);

	/* Key rotation: both sides on two keys, the sender sealing with the next one. */
	p = fresh(FUZZ_CFG_RX_TWO_KEYS | FUZZ_CFG_TX_NEXT_KEY);
	handshake(p);
	op1(p, FUZZ_SEAL, 0, 40);
	emit("rotation_two_keys", p);
	p = fresh(FUZZ_CFG_TX_NEXT_KEY);
	handshake(p);
	op1(p, FUZZ_SEAL, 0, 40);
	emit("rotation_key_unknown", p);

	/* Sealed, held back, delivered out of order and twice; then far behind the window. */
	p = fresh(0);
	handshake(p);
	for (int i = 0; i < 6; i++)
		op1(p, FUZZ_SEAL, 8, 4);
	op1(p, FUZZ_REPLAY, 0, 2);
	op1(p, FUZZ_REPLAY, 0, 0);
	op1(p, FUZZ_REPLAY, 0, 5);
	op1(p, FUZZ_REPLAY, 0, 2);
	op1(p, FUZZ_REPLAY, 0, 4);
	op1(p, FUZZ_FLIP, 0, 1);
	put(p, 30);
	put(p, 0x80);
	emit("reorder", p);
	p = fresh(0);
	handshake(p);
	op1(p, FUZZ_SEAL, 0, 1);
	for (int i = 0; i < 1100; i++)
		op1(p, FUZZ_SEAL, 8, 0);
	op1(p, FUZZ_REPLAY, 0, 0);
	op1(p, FUZZ_REPLAY, 0, 40);
	op1(p, FUZZ_REPLAY, 0, 63);
	emit("window", p);

	/* The sender restarts; its old session is replayed; the new one is proven. */
	p = fresh(0);
	handshake(p);
	op1(p, FUZZ_SEAL, 0, 8);
	op(p, FUZZ_RESTART_SENDER, 0);
	op1(p, FUZZ_SEAL, 0, 8);
	op1(p, FUZZ_REPLAY, 0, 2);
	op1(p, FUZZ_REPLAY, 0, 3);
	op(p, FUZZ_TO_SENDER, 0);
	op(p, FUZZ_TO_RECEIVER, 0);
	op1(p, FUZZ_SEAL, 0, 8);
	op1(p, FUZZ_REPLAY, 0, 4);
	emit("sender_restart", p);

	/* The receiver restarts and is played what it took before. */
	p = fresh(4);
	handshake(p);
	op1(p, FUZZ_SEAL, 0, 8);
	op1(p, FUZZ_SEAL, 0, 9);
	op(p, FUZZ_RESTART_RECEIVER, 0);
	op1(p, FUZZ_REPLAY, 0, 0);
	op1(p, FUZZ_REPLAY, 0, 1);
	op(p, FUZZ_TO_SENDER, 0);
	op(p, FUZZ_TO_RECEIVER, 0);
	op1(p, FUZZ_REPLAY, 0, 2);
	op1(p, FUZZ_SEAL, 0, 10);
	emit("receiver_restart", p);

	/* A response that comes two seconds late, then the second round. */
	p = fresh(8);
	op1(p, FUZZ_SEAL, 0, 8);
	op(p, FUZZ_TO_SENDER, 0);
	op1(p, FUZZ_TICK, 3, 2);
	op(p, FUZZ_TO_RECEIVER, 0);
	op(p, FUZZ_TO_SENDER, 0);
	op(p, FUZZ_TO_RECEIVER, 0);
	op1(p, FUZZ_SEAL, 0, 8);
	emit("late_response", p);

	/* Proven under one index, replayed under the others and out of range. */
	p = fresh(0);
	handshake(p);
	op1(p, FUZZ_SEAL, 1, 8);
	op1(p, FUZZ_REPLAY, 2, 0);
	op1(p, FUZZ_REPLAY, 3, 0);
	op1(p, FUZZ_SEAL, 0, 8);
	emit("wrong_peer", p);

	/* Both ways: the receiver seals, the sender challenges it, it answers. */
	p = fresh(0);
	op1(p, FUZZ_RECEIVER_SEALS, 0, 12);
	op(p, FUZZ_TO_RECEIVER, 0);
	op(p, FUZZ_TO_SENDER, 0);
	handshake(p);
	emit("mutual", p);

	/* A challenge for the receiver, replayed a hundred times: responses run out. */
	p = fresh(12);
	op1(p, FUZZ_RECEIVER_SEALS, 0, 12);
	op(p, FUZZ_TO_RECEIVER, 0);
	for (int i = 0; i < 100; i++)
		op1(p, FUZZ_REPLAY, 0, 0);
	op1(p, FUZZ_TICK, 2, 10);
	op1(p, FUZZ_REPLAY, 0, 0);
	emit("response_flood", p);

	/* Many sessions of the sender at once: challenges run out, rounds go on. */
	p = fresh(0);
	for (int i = 0; i < 15; i++) {
		op1(p, FUZZ_SEAL, 0, 4);
		op1(p, FUZZ_SEAL, 0, 4);
		op(p, FUZZ_RESTART_SENDER, 0);
	}
	for (int i = 0; i < 40; i++) {
		op1(p, FUZZ_REPLAY, 0, (uint8_t)i);
		op1(p, FUZZ_TICK, 0, 20);
	}
	handshake(p);
	op1(p, FUZZ_SEAL, 0, 4);
	emit("session_flood", p);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR   (tests/fuzz/corpus/envelope)\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	raw_seeds();
	program_seeds();
	return 0;
}
