/*
 * envelope_input.h - the input format of fuzz_envelope.c, shared with
 * gen_envelope_corpus.c, which writes seeds in it.
 *
 * Byte 0 is the configuration:
 *   bit 0   the receiver holds {FUZZ_KEY, FUZZ_KEY_NEXT} instead of {FUZZ_KEY}
 *   bit 1   the sender seals with FUZZ_KEY_NEXT ({FUZZ_KEY_NEXT, FUZZ_KEY})
 *   bits 2-3 the clock's start: 0, 1000, 2^32, 2^63 ms
 * Then steps until the input ends; bytes read past the end are 0.  Each
 * step is an opcode byte, low nibble the operation, high nibble `a`; a
 * peer index is p = fuzz_peers[a & 3] (three peers, and one index out of
 * range).
 */
#ifndef CTSYNCD_FUZZ_ENVELOPE_INPUT_H
#define CTSYNCD_FUZZ_ENVELOPE_INPUT_H

#include <stdint.h>

#include "envelope/envelope.h"

#define FUZZ_CFG_RX_TWO_KEYS    0x01
#define FUZZ_CFG_TX_NEXT_KEY    0x02
#define FUZZ_CFG_CLOCK_SHIFT    2

enum fuzz_op {
	/* len (a & 8: 16-bit big-endian, else 8-bit), then len bytes: a datagram from p */
	FUZZ_RAW = 0,
	/* len (8-bit): the sender seals DATA of len bytes; a & 8: record it only, else also to p */
	FUZZ_SEAL = 1,
	/* back (8-bit): the recording `back` places before the newest, again, from p */
	FUZZ_REPLAY = 2,
	/* back, offset, xor (8-bit each): that recording with one byte changed, from p */
	FUZZ_FLIP = 3,
	/* n (8-bit): the clock advances n * {1, 10, 100, 1000}[a & 3] ms */
	FUZZ_TICK = 4,
	/* the receiver's outbox (its challenges and responses) to the sender */
	FUZZ_TO_SENDER = 5,
	/* the sender's outbox to the receiver, from p */
	FUZZ_TO_RECEIVER = 6,
	/* the sender restarts: a new session */
	FUZZ_RESTART_SENDER = 7,
	/* the receiver restarts: it proves everyone again */
	FUZZ_RESTART_RECEIVER = 8,
	/* len (8-bit): the receiver seals DATA to the sender, which challenges it */
	FUZZ_RECEIVER_SEALS = 9,
	/* len (8-bit), then len bytes: envelope_frame_len() and _valid() against envelope_open() */
	FUZZ_FRAME = 10,
	FUZZ_OP_MAX
};

static const unsigned fuzz_peers[4] __attribute__((unused)) = { 0, 1, 2, ENVELOPE_PEERS_MAX };

/* The keys every node of the harness holds: the fuzzer cannot forge a tag. */
static const uint8_t FUZZ_KEY[ENVELOPE_KEY_BYTES] __attribute__((unused)) = {
	0x66, 0x75, 0x7a, 0x7a, 0x20, 0x65, 0x6e, 0x76, 0x65, 0x6c, 0x6f, 0x70, 0x65, 0x20, 0x6b, 0x65,
	0x79, 0x20, 0x6f, 0x6e, 0x65, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
};
static const uint8_t FUZZ_KEY_NEXT[ENVELOPE_KEY_BYTES] __attribute__((unused)) = {
	0x66, 0x75, 0x7a, 0x7a, 0x20, 0x65, 0x6e, 0x76, 0x65, 0x6c, 0x6f, 0x70, 0x65, 0x20, 0x6b, 0x65,
	0x79, 0x20, 0x74, 0x77, 0x6f, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
};

/* The harness's and the generator's randomness: xorshift64, deterministic. */
static inline void envelope_input_random(uint64_t *state, void *buf, size_t len)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < len; i++) {
		*state ^= *state << 13;
		*state ^= *state >> 7;
		*state ^= *state << 17;
		b[i] = (uint8_t)(*state >> 24);
	}
}

#endif
