/*
 * envelope_int.h - what the files of src/envelope share: the object, the
 * per-peer state and the helpers each file offers the others.
 *
 *   envelope.c   the object's life, the keys, envelope_open()'s checks in
 *                order, statistics
 *   codec.c      the header, sealing and opening with the AEAD, framing,
 *                key text and key id, reason names
 *   handshake.c  challenges, responses, proofs: the token buckets, the
 *                per-peer secrets that make challenges stateless
 *   window.c     the replay window of a proven session
 */
#ifndef CTSYNCD_ENVELOPE_INT_H
#define CTSYNCD_ENVELOPE_INT_H

#include <sodium.h>

#include "envelope/envelope.h"

#define ENV_SID_BYTES           8
#define ENV_SECRET_BYTES        16      /* crypto_generichash_KEYBYTES_MIN, crypto_shorthash_KEYBYTES */
#define ENV_NPUB_BYTES          24      /* crypto_aead_xchacha20poly1305_ietf_NPUBBYTES */
#define ENV_WINDOW_WORDS        (ENVELOPE_WINDOW / 64)
/*
 * The filter of the session ids challenged in the current round: a Bloom
 * filter of two bits per id.  A round ends early once it holds
 * ENV_ROUND_IDS_MAX ids, before a false positive (an id taken for one that
 * was challenged already) becomes likely: about 5 % at 1024 ids.  That
 * many ids take 16 s of challenges at ENVELOPE_CHALLENGES_PER_S.
 */
#define ENV_FILTER_BITS         8192
#define ENV_FILTER_WORDS        (ENV_FILTER_BITS / 64)
#define ENV_ROUND_IDS_MAX       1024
/*
 * A round in which some id could not be challenged (the bucket was empty)
 * lasts until this long after the last such refusal, so that the ids
 * challenged in it stay out of the way until the refused ones come back.
 */
#define ENV_ROUND_STARVED_MS    1000

#define ENV_GCM_NPUB_BYTES      12      /* crypto_aead_aes256gcm_NPUBBYTES */

/*
 * An AES-256-GCM key schedule for one session's subkey under one key
 * (envelope.md §1.3): expanding it costs about a tenth of opening a
 * datagram, so each peer's proven session keeps its own.
 */
struct env_gcm {
	crypto_aead_aes256gcm_state st;
	uint64_t sid;
	unsigned key;                   /* index into env_keys.key */
	bool ready;
};

/*
 * Key material: sodium_malloc'd, the only place the keys and what is
 * derived from them are kept.
 */
struct env_keys {
	uint8_t key[ENVELOPE_KEYS_MAX][ENVELOPE_KEY_BYTES];
	uint16_t id[ENVELOPE_KEYS_MAX];
	unsigned n;
	struct env_gcm seal;                    /* our session under key[0] */
	struct env_gcm open[ENVELOPE_PEERS_MAX];        /* each peer's proven session */
	struct env_gcm scratch;                 /* any other session: used once, wiped */
};

/* A proven session and its replay window (window.c). */
struct env_window {
	uint64_t floor;                 /* nothing at or below is taken */
	uint64_t highest;               /* highest counter taken; == floor at first */
	uint64_t seen[ENV_WINDOW_WORDS];        /* bit c % ENVELOPE_WINDOW: counter c taken */
};

/* A token bucket in thousandths of a token, refilled from `now`. */
struct env_bucket {
	uint64_t milli;
	uint64_t at;
	bool started;
};

struct env_peer {
	uint64_t sid;                   /* the proven session; 0: none */
	struct env_window win;
	/*
	 * Challenges hold no state per challenged session: a nonce is a keyed
	 * hash of the target sid under `cur`, checked again when the response
	 * comes.  `cur` is replaced every ENVELOPE_PROOF_MS and `prev` kept one
	 * period more; both are drawn anew when a session is proven, which
	 * voids every challenge still open for this peer.
	 */
	uint8_t cur[ENV_SECRET_BYTES];
	uint8_t prev[ENV_SECRET_BYTES];
	uint64_t cur_since;             /* nominal start of `cur`'s period */
	bool secrets_ready;
	bool prev_valid;
	/* The round: which sids were challenged lately (at most once per round each). */
	uint8_t round_key[ENV_SECRET_BYTES];
	uint64_t round_since;
	uint64_t starved_at;            /* last challenge refused by the bucket in this round */
	uint64_t filter[ENV_FILTER_WORDS];
	unsigned round_ids;
	bool round_ready;
	bool starved;
	/* What the peer's last challenge of our session said it can open. */
	bool told_caps;
	bool can_open_gcm;
	struct envelope_stats stats;
};

struct envelope {
	struct env_keys *keys;          /* sodium_malloc'd */
	struct envelope_ops ops;
	void *arg;
	uint64_t sid;
	uint64_t counter;               /* the next to seal; from 1 */
	bool gcm_here;                  /* we may seal and open AES-256-GCM */
	bool seal_gcm;                  /* every peer that told us can open it too */
	bool portable_sent;             /* a DATA under XChaCha20-Poly1305 went out ... */
	uint64_t portable_at;           /* ... at this time */
	struct env_bucket challenges;
	struct env_bucket responses;
	struct envelope_stats stats;
	struct env_peer peers[ENVELOPE_PEERS_MAX];
	uint8_t control[ENVELOPE_CONTROL_MAX];  /* a challenge or response being sent */
	uint8_t plain[ENVELOPE_PAYLOAD_MAX];    /* the payload of the datagram last opened */
};

/* A header as read (codec.c). */
struct env_hdr {
	uint8_t version;
	uint8_t type;
	uint16_t len;
	uint16_t key_id;
	uint64_t sid;
	uint64_t counter;
};

/* Count an event in the totals and in the peer's own counters. */
#define ENV_COUNT(e, peer, field) do { \
		(e)->stats.field++; \
		(e)->peers[peer].stats.field++; \
	} while (0)

/* ---- codec.c ---- */
void env_put_be16(uint8_t *p, uint16_t v);
void env_put_be64(uint8_t *p, uint64_t v);
uint16_t env_get_be16(const uint8_t *p);
uint64_t env_get_be64(const uint8_t *p);
/*
 * Seal `len` bytes of `type` with keys[0], sid and the next counter.  The
 * caller has checked that it fits; returns the envelope's length, 0 once
 * the counter is exhausted.
 */
size_t env_seal(struct envelope *e, uint8_t type, const void *payload, size_t len, uint8_t *out);
/* Read the header of `len` >= ENVELOPE_HDR_BYTES bytes. */
void env_hdr_read(const uint8_t *p, struct env_hdr *h);
/* The same for DATA under AES-256-GCM with the schedule `g` (env_gcm_ready()). */
size_t env_seal_gcm(struct envelope *e, const struct env_gcm *g, const void *payload, size_t len,
		    uint8_t *out);
/*
 * Decrypt the envelope `p` of h->len bytes into e->plain with `key`, or
 * for DATA_GCM with `g`, the schedule of (h->sid, `key`); false: not
 * authentic.
 */
bool env_decrypt(struct envelope *e, const uint8_t *p, const struct env_hdr *h, const uint8_t *key,
		 const struct env_gcm *g);
/* Make `g` the schedule of session `sid`'s subkey of keys->key[k], unless it is already. */
void env_gcm_ready(struct env_keys *keys, struct env_gcm *g, uint64_t sid, unsigned k);

/* ---- handshake.c ---- */
/* An authentic envelope of a session not proven for `peer`: challenge it, once per round. */
void env_challenge(struct envelope *e, unsigned peer, uint64_t sid, uint64_t now);
/*
 * An authentic CHALLENGE (its payload in e->plain): answer it if it is for
 * us, and take note of what the challenger can open.
 */
void env_on_challenge(struct envelope *e, unsigned peer, uint64_t now);
/* Whether DATA goes out under AES-256-GCM, from what each peer told us and our own ability. */
void env_caps_update(struct envelope *e);
/* An authentic RESPONSE of a session not proven for `peer`: ENVELOPE_CONTROL if it proves it. */
enum envelope_reason env_on_response(struct envelope *e, unsigned peer, const struct env_hdr *h,
				     uint64_t now);

/* ---- window.c ---- */
void env_window_start(struct env_window *w, uint64_t floor);
/* Would counter c be taken (above the floor, not behind the window, not seen)? */
bool env_window_fresh(const struct env_window *w, uint64_t c);
/* Take counter c (fresh): slide the window if c is the new highest. */
void env_window_take(struct env_window *w, uint64_t c);

#endif
