/*
 * envelope/envelope.h - authenticated encryption of sync datagrams with a
 * pre-shared key, and replay-safe sessions (module `envelope`).
 *
 * Every datagram (UDP, multicast) or TCP frame of a keyed node is one
 * envelope: a 22-byte header, the payload encrypted with
 * XChaCha20-Poly1305 (or, between nodes that both have the hardware for
 * it, AES-256-GCM under a per-session subkey), a 16-byte tag.  DATA
 * envelopes carry a plain FTFW
 * datagram, unchanged; CHALLENGE and RESPONSE envelopes are this module's
 * own handshake, which proves that a peer's session is live before any of
 * its data is taken.  Layout, handshake, window and bounds:
 * doc/envelope.md (the section numbers below refer to it).
 *
 * Pure: no system call, no clock, no global state.  The time (`now`, in
 * milliseconds of a monotonic clock) is passed in, randomness comes from
 * ops->random, and what the module sends on its own (challenges and
 * responses) goes out through ops->send, synchronously, from inside
 * envelope_open().  libsodium provides the primitives only.  Not
 * thread-safe.
 */
#ifndef CTSYNCD_ENVELOPE_H
#define CTSYNCD_ENVELOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- byte layout (envelope.md §1), big-endian ---------------------------- */

#define ENVELOPE_MAGIC          0xC5    /* byte 0; a 1.4.7 header's byte 0 is 0x1_ */
#define ENVELOPE_VERSION        1       /* high nibble of byte 1 */
#define ENVELOPE_T_DATA         1       /* low nibble of byte 1 */
#define ENVELOPE_T_CHALLENGE    2
#define ENVELOPE_T_RESPONSE     3
#define ENVELOPE_T_DATA_GCM     4       /* DATA under AES-256-GCM (envelope.md §1.3) */

#define ENVELOPE_OFF_MAGIC      0
#define ENVELOPE_OFF_VERTYPE    1
#define ENVELOPE_OFF_LEN        2       /* u16: header + ciphertext + tag */
#define ENVELOPE_OFF_KEY_ID     4       /* u16 */
#define ENVELOPE_OFF_SID        6       /* u64: the sender's session id */
#define ENVELOPE_OFF_COUNTER    14      /* u64: per session, from 1 */

#define ENVELOPE_HDR_BYTES      22      /* also the AEAD's additional data */
#define ENVELOPE_TAG_BYTES      16      /* Poly1305, or GHASH for DATA_GCM */
#define ENVELOPE_OVERHEAD       (ENVELOPE_HDR_BYTES + ENVELOPE_TAG_BYTES)
#define ENVELOPE_MAX_BYTES      65535u  /* the length field's range */
#define ENVELOPE_PAYLOAD_MAX    (ENVELOPE_MAX_BYTES - ENVELOPE_OVERHEAD)

/* Payloads of the control types (envelope.md §3.2), exact lengths. */
#define ENVELOPE_NONCE_BYTES    16      /* a challenge's nonce */
#define ENVELOPE_CHALLENGE_BYTES 25     /* target sid (8) || nonce (16) || flags (1) */
#define ENVELOPE_RESPONSE_BYTES 24      /* echoed nonce (16) || responder's sid (8) */
#define ENVELOPE_CONTROL_MAX    (ENVELOPE_OVERHEAD + 25)        /* what ops->send is given */
/* A challenge's flags: what the challenger can open (envelope.md §1.3). */
#define ENVELOPE_CAN_OPEN_GCM   0x01

/* ---- keys (envelope.md §2) ------------------------------------------------- */

#define ENVELOPE_KEY_BYTES      32
#define ENVELOPE_KEY_TEXT       45      /* base64 with padding (44) and its NUL */
#define ENVELOPE_KEYS_MAX       2       /* the first one seals; all of them open */

/* ---- sessions and limits (envelope.md §3-§6) -------------------------------- */

#define ENVELOPE_PEERS_MAX      16      /* peer indices 0 .. 15, the caller's mapping */
#define ENVELOPE_WINDOW         1024    /* counters behind the highest still accepted once */
#define ENVELOPE_CHALLENGES_PER_S 64    /* token bucket, all peers; burst as large */
#define ENVELOPE_RESPONSES_PER_S  64    /* token bucket, all peers; burst as large */
/*
 * A challenge's nonce answers for 1 to 2 seconds after it was sent; later
 * responses are refused (unsolicited) and the sender is challenged again.
 */
#define ENVELOPE_PROOF_MS       1000
/* A session id is challenged at most once per round; a round lasts at least this long. */
#define ENVELOPE_ROUND_MS       250
/*
 * While DATA goes out under AES-256-GCM, one DATA envelope at least this
 * often is sealed with XChaCha20-Poly1305 all the same: a node that cannot
 * open AES-GCM and has not told us yet (it joined late) can authenticate
 * it, challenge us and say so (envelope.md §1.3).
 */
#define ENVELOPE_PORTABLE_MS    1000

struct envelope;

/* ---- outcomes and counters (envelope.md §7) ---------------------------------- */

/*
 * What envelope_open() did with a datagram.  ENVELOPE_DELIVER and
 * ENVELOPE_CONTROL are not errors; every other value is a refusal.  Each
 * call is counted under exactly one of them.
 */
enum envelope_reason {
	ENVELOPE_DELIVER = 0,           /* authentic, fresh DATA of the peer's proven session */
	ENVELOPE_CONTROL,               /* a CHALLENGE or RESPONSE, consumed here */
	ENVELOPE_R_PLAIN,               /* byte 0 is not the magic: a plain (1.4.7) datagram */
	ENVELOPE_R_TRUNCATED,           /* shorter than the overhead or than its length field */
	ENVELOPE_R_MALFORMED,           /* length field, version, type, payload length or a sid wrong */
	ENVELOPE_R_UNKNOWN_KEY_ID,      /* sealed with a key we do not have */
	ENVELOPE_R_BAD_TAG,             /* not authentic: forged, corrupted, or another key */
	ENVELOPE_R_REPLAYED,            /* DATA of the proven session, at or below the floor,
					   behind the window, or seen already */
	ENVELOPE_R_STALE_SESSION,       /* DATA of a session not proven (yet): a restart or a replay */
	ENVELOPE_R_UNSOLICITED,         /* RESPONSE to no challenge of ours that is still open */
	ENVELOPE_R_REFLECTED,           /* sealed by our own session: a reflection or a loop */
	ENVELOPE_R_WRONG_PEER,          /* the session is proven under another peer index, or the
					   index is out of range */
	ENVELOPE_R_MAX
};

/* An identifier-like name for statistics ("stale_session"); never NULL. */
const char *envelope_reason_key(enum envelope_reason r);
/* A short phrase for logs ("session not proven"); never NULL. */
const char *envelope_reason_name(enum envelope_reason r);

struct envelope_stats {
	uint64_t opened[ENVELOPE_R_MAX];        /* envelope_open() calls, by outcome */
	uint64_t sealed;                        /* DATA envelopes sealed */
	uint64_t sealed_gcm;                    /* of them, under AES-256-GCM */
	uint64_t opened_gcm;                    /* DATA_GCM envelopes delivered */
	uint64_t challenges_sent;
	uint64_t challenges_rate_limited;       /* a challenge was due but the bucket was empty */
	uint64_t challenges_for_others;         /* authentic CHALLENGEs of another session than ours */
	uint64_t responses_sent;
	uint64_t responses_rate_limited;        /* a challenge of ours went unanswered: bucket empty */
	uint64_t sessions_accepted;             /* proofs taken (ops->session calls) */
};

/* ---- the object -------------------------------------------------------------- */

struct envelope_ops {
	/* Fill `buf` with `len` unpredictable bytes (getrandom()).  Required. */
	void (*random)(void *arg, void *buf, size_t len);
	/*
	 * Send this sealed CHALLENGE or RESPONSE (at most
	 * ENVELOPE_CONTROL_MAX bytes, valid during the call) to `peer` now; on
	 * multicast, to the group.  Required.
	 */
	void (*send)(void *arg, unsigned peer, const void *sealed, size_t len);
	/*
	 * `peer`'s session `new_sid` was proven live and replaces `old_sid`
	 * (0: none; a restart of the peer, or of us, when not 0).  Optional.
	 */
	void (*session)(void *arg, unsigned peer, uint64_t old_sid, uint64_t new_sid);
};

/*
 * Create an envelope with `nkeys` (1 .. ENVELOPE_KEYS_MAX) keys, keys[0]
 * the one that seals.  The keys are copied into memory of libsodium's
 * (sodium_malloc(): locked, kept out of core dumps); the caller wipes its
 * copies.  A new session id is drawn from ops->random.  The ops are
 * copied; callbacks must not call envelope_open(), envelope_set_keys() or
 * envelope_free() (envelope_seal() is allowed).  Returns 0, -EINVAL (bad
 * nkeys or ops), -EEXIST (two keys with the same id: generate another),
 * -ENOMEM, -ENOSYS (libsodium cannot initialise), -EIO (ops->random gave
 * no usable session id).
 */
int envelope_new(const uint8_t keys[][ENVELOPE_KEY_BYTES], unsigned nkeys, const struct envelope_ops *ops,
		 void *arg, struct envelope **out);

/*
 * Replace the keys (a reload during a key rotation): the session, its
 * counter and every peer's session stay.  All or nothing; the same
 * errors as envelope_new().
 */
int envelope_set_keys(struct envelope *e, const uint8_t keys[][ENVELOPE_KEY_BYTES], unsigned nkeys);

/* Wipe and free everything; NULL is a no-op. */
void envelope_free(struct envelope *e);

/*
 * Seal `len` bytes of DATA into `out` (`cap` bytes) with keys[0] and the
 * next counter, under XChaCha20-Poly1305.  Returns len +
 * ENVELOPE_OVERHEAD, or 0 when that exceeds `cap` or ENVELOPE_MAX_BYTES
 * (nothing written, no counter used).  `payload` may be out +
 * ENVELOPE_HDR_BYTES (sealing in place); no other overlap.
 */
size_t envelope_seal(struct envelope *e, const void *payload, size_t len, void *out, size_t cap);
/*
 * The same, at time `now`, under the cheapest cipher every peer that has
 * challenged this session can open: AES-256-GCM when all of them said
 * they can and so can we, XChaCha20-Poly1305 otherwise and at least once
 * per ENVELOPE_PORTABLE_MS.
 */
size_t envelope_seal_at(struct envelope *e, const void *payload, size_t len, void *out, size_t cap,
			uint64_t now);

/*
 * Whether this node may use AES-256-GCM at all: true by default where
 * libsodium has it (AES-NI and PCLMUL); false makes it seal, open and
 * announce XChaCha20-Poly1305 only (a test, or a node without the
 * instructions).  Takes effect for challenges sent and envelopes sealed
 * from now on.
 */
void envelope_allow_gcm(struct envelope *e, bool allowed);
/* The cipher DATA is sealed with now: "aes256gcm" or "xchacha20poly1305". */
const char *envelope_data_cipher(const struct envelope *e);

/*
 * Open one received datagram (UDP, multicast) or one TCP frame of `len`
 * bytes from `peer` (< ENVELOPE_PEERS_MAX: the caller maps source
 * addresses to indices, every address of one node to the same index).
 * On ENVELOPE_DELIVER, *payload and *plen give the decrypted DATA, in
 * the envelope's own buffer, valid until the next envelope_open() or
 * envelope_free().  Otherwise *payload is NULL and *plen 0.  Counted in
 * the statistics before returning.  May call ops->send (at most once)
 * and ops->session (at most once).
 */
enum envelope_reason envelope_open(struct envelope *e, unsigned peer, const void *buf, size_t len,
				   uint64_t now, const void **payload, size_t *plen);

/* Our session id (never 0), for logs. */
uint64_t envelope_sid(const struct envelope *e);

struct envelope_session {
	uint64_t sid;                   /* the peer's proven session */
	uint64_t floor;                 /* the counter of its proof: nothing at or below is taken */
	uint64_t highest;               /* the highest counter taken */
};

/* `peer`'s proven session, if it has one (false: none yet, or peer out of range). */
bool envelope_peer_session(const struct envelope *e, unsigned peer, struct envelope_session *out);

/* The counters of every peer together. */
void envelope_stats(const struct envelope *e, struct envelope_stats *out);
/* The counters of one peer index; -EINVAL when out of range. */
int envelope_peer_stats(const struct envelope *e, unsigned peer, struct envelope_stats *out);

/* ---- framing (the link's frame_len and frame_valid callbacks, link.h) --------- */

/*
 * link_frame_len_fn: the length of the envelope at the head of a TCP
 * stream once all of it is there, 0 while more bytes are needed, or
 * -EBADMSG with *why set when these bytes can never start one (no magic,
 * another version, a length below the overhead).  `arg` is unused.
 */
long envelope_frame_len(void *arg, const void *buf, size_t len, const char **why);
/*
 * link_frame_valid_fn: `buf` starts with a whole envelope of ours by its
 * header (magic, version, type, length).  Not authenticated: an attacker
 * can forge it.  `arg` is unused.
 */
bool envelope_frame_valid(void *arg, const void *buf, size_t len);

/* ---- key text and key id (envelope.md §2) ------------------------------------ */

/*
 * Parse one key: 44 characters of base64 (standard alphabet, padded,
 * canonical), then nothing but optional blanks and line ends.  Anything
 * else is -EINVAL and leaves `key` zeroed.  No copy of the key is left
 * anywhere but in `key`.
 */
int envelope_key_parse(const char *text, size_t len, uint8_t key[ENVELOPE_KEY_BYTES]);

/* The text form of a key (44 characters and a NUL), for --genkey. */
void envelope_key_format(const uint8_t key[ENVELOPE_KEY_BYTES], char out[ENVELOPE_KEY_TEXT]);

/*
 * The 16-bit id sent in every header: the first two bytes of a BLAKE2b-128
 * of a fixed string keyed with the key.  It names the key without
 * revealing it and cannot be computed without it.
 */
uint16_t envelope_key_id(const uint8_t key[ENVELOPE_KEY_BYTES]);

#endif
