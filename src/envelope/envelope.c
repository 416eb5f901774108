/*
 * envelope.c - the object's life, its keys, and envelope_open(): the
 * checks a received envelope goes through, in order (envelope.md §3.4).
 */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "envelope_int.h"

/* A broken source that keeps giving sid 0 (our "none") is refused, not looped on. */
#define SID_DRAWS_MAX           8

/* Check and lay out a key set in `k` (sodium_malloc'd by the caller). */
static int keys_load(struct env_keys *k, const uint8_t keys[][ENVELOPE_KEY_BYTES], unsigned nkeys)
{
	if (keys == NULL || nkeys == 0 || nkeys > ENVELOPE_KEYS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < nkeys; i++) {
		memcpy(k->key[i], keys[i], ENVELOPE_KEY_BYTES);
		k->id[i] = envelope_key_id(keys[i]);
		/* The id chooses the key that opens: two keys with one id could not both work. */
		for (unsigned j = 0; j < i; j++)
			if (k->id[j] == k->id[i])
				return -EEXIST;
	}
	k->n = nkeys;
	return 0;
}

static struct env_keys *keys_new(const uint8_t keys[][ENVELOPE_KEY_BYTES], unsigned nkeys, int *err)
{
	struct env_keys *k = sodium_malloc(sizeof(*k));

	if (k == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	/* sodium_malloc() aligns to the size's own alignment, which the GCM states need. */
	if ((uintptr_t)k % 16 != 0) {
		sodium_free(k);
		*err = -EFAULT;
		return NULL;
	}
	sodium_memzero(k, sizeof(*k));
	*err = keys_load(k, keys, nkeys);
	if (*err < 0) {
		sodium_free(k);         /* sodium_free() wipes */
		return NULL;
	}
	return k;
}

int envelope_new(const uint8_t keys[][ENVELOPE_KEY_BYTES], unsigned nkeys, const struct envelope_ops *ops,
		 void *arg, struct envelope **out)
{
	struct envelope *e;
	uint8_t b[ENV_SID_BYTES];
	int err;

	*out = NULL;
	if (ops == NULL || ops->random == NULL || ops->send == NULL)
		return -EINVAL;
	if (sodium_init() < 0)
		return -ENOSYS;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	e->keys = keys_new(keys, nkeys, &err);
	if (e->keys == NULL) {
		free(e);
		return err;
	}
	e->ops = *ops;
	e->arg = arg;
	e->counter = 1;
	e->gcm_here = crypto_aead_aes256gcm_is_available() != 0;
	for (int i = 0; i < SID_DRAWS_MAX && e->sid == 0; i++) {
		e->ops.random(e->arg, b, sizeof(b));
		e->sid = env_get_be64(b);
	}
	if (e->sid == 0) {
		envelope_free(e);
		return -EIO;
	}
	*out = e;
	return 0;
}

int envelope_set_keys(struct envelope *e, const uint8_t keys[][ENVELOPE_KEY_BYTES], unsigned nkeys)
{
	struct env_keys *k;
	int err;

	k = keys_new(keys, nkeys, &err);
	if (k == NULL)
		return err;
	sodium_free(e->keys);
	e->keys = k;
	return 0;
}

void envelope_free(struct envelope *e)
{
	if (e == NULL)
		return;
	sodium_free(e->keys);
	sodium_memzero(e, sizeof(*e));
	free(e);
}

uint64_t envelope_sid(const struct envelope *e)
{
	return e->sid;
}

bool envelope_peer_session(const struct envelope *e, unsigned peer, struct envelope_session *out)
{
	const struct env_peer *p;

	if (peer >= ENVELOPE_PEERS_MAX || e->peers[peer].sid == 0)
		return false;
	p = &e->peers[peer];
	out->sid = p->sid;
	out->floor = p->win.floor;
	out->highest = p->win.highest;
	return true;
}

void envelope_stats(const struct envelope *e, struct envelope_stats *out)
{
	*out = e->stats;
}

int envelope_peer_stats(const struct envelope *e, unsigned peer, struct envelope_stats *out)
{
	if (peer >= ENVELOPE_PEERS_MAX)
		return -EINVAL;
	*out = e->peers[peer].stats;
	return 0;
}

/* The index of the key whose id the header names, or -1. */
static int key_by_id(const struct envelope *e, uint16_t id)
{
	for (unsigned i = 0; i < e->keys->n; i++)
		if (e->keys->id[i] == id)
			return (int)i;
	return -1;
}

void envelope_allow_gcm(struct envelope *e, bool allowed)
{
	e->gcm_here = allowed && crypto_aead_aes256gcm_is_available();
	env_caps_update(e);
}

const char *envelope_data_cipher(const struct envelope *e)
{
	return e->seal_gcm ? "aes256gcm" : "xchacha20poly1305";
}

/*
 * Authenticate and decrypt `p` into e->plain.  DATA_GCM needs the
 * schedule of its session's subkey: the peer's own when it is the proven
 * session, else one made for this envelope alone.
 */
static bool decrypt(struct envelope *e, unsigned peer, const uint8_t *p, const struct env_hdr *h, unsigned k)
{
	struct env_keys *keys = e->keys;
	struct env_gcm *g;
	bool ok;

	if (h->type != ENVELOPE_T_DATA_GCM)
		return env_decrypt(e, p, h, keys->key[k], NULL);
	g = h->sid == e->peers[peer].sid ? &keys->open[peer] : &keys->scratch;
	env_gcm_ready(keys, g, h->sid, k);
	ok = env_decrypt(e, p, h, NULL, g);
	if (g == &keys->scratch)
		sodium_memzero(g, sizeof(*g));
	return ok;
}

static size_t payload_bytes(const struct env_hdr *h)
{
	return h->len - ENVELOPE_OVERHEAD;
}

/* The structure, before any cryptography: what a forger can get wrong without a key. */
static enum envelope_reason check_shape(const uint8_t *p, size_t len, struct env_hdr *h)
{
	if (len == 0)
		return ENVELOPE_R_TRUNCATED;
	if (p[ENVELOPE_OFF_MAGIC] != ENVELOPE_MAGIC)
		return ENVELOPE_R_PLAIN;
	if (len < ENVELOPE_OVERHEAD)
		return ENVELOPE_R_TRUNCATED;
	env_hdr_read(p, h);
	if (h->version != ENVELOPE_VERSION)
		return ENVELOPE_R_MALFORMED;
	if (h->len > len)
		return ENVELOPE_R_TRUNCATED;
	/* One envelope per call: on UDP the datagram, on TCP the frame envelope_frame_len() cut. */
	if (h->len < ENVELOPE_OVERHEAD || h->len != len)
		return ENVELOPE_R_MALFORMED;
	switch (h->type) {
	case ENVELOPE_T_DATA:
		return ENVELOPE_DELIVER;
	case ENVELOPE_T_DATA_GCM:
		return ENVELOPE_DELIVER;
	case ENVELOPE_T_CHALLENGE:
		return payload_bytes(h) == ENVELOPE_CHALLENGE_BYTES ? ENVELOPE_DELIVER : ENVELOPE_R_MALFORMED;
	case ENVELOPE_T_RESPONSE:
		return payload_bytes(h) == ENVELOPE_RESPONSE_BYTES ? ENVELOPE_DELIVER : ENVELOPE_R_MALFORMED;
	default:
		return ENVELOPE_R_MALFORMED;
	}
}

/* Where an authentic envelope's session stands with us and our other peers. */
static enum envelope_reason check_session(const struct envelope *e, unsigned peer, const struct env_hdr *h)
{
	/* 0 is "no session" in our callbacks; our own sids are never 0. */
	if (h->sid == 0)
		return ENVELOPE_R_MALFORMED;
	if (h->sid == e->sid)
		return ENVELOPE_R_REFLECTED;
	/*
	 * A session is proven under one peer index only: a datagram of a
	 * peer's session sent in under another peer's address (by whoever
	 * controls the network) is refused, and cannot start a handshake there.
	 */
	for (unsigned i = 0; i < ENVELOPE_PEERS_MAX; i++)
		if (i != peer && e->peers[i].sid == h->sid)
			return ENVELOPE_R_WRONG_PEER;
	return ENVELOPE_DELIVER;
}

static enum envelope_reason open_authentic(struct envelope *e, unsigned peer, const struct env_hdr *h,
					   uint64_t now)
{
	struct env_peer *p = &e->peers[peer];
	enum envelope_reason r;

	r = check_session(e, peer, h);
	if (r != ENVELOPE_DELIVER)
		return r;
	switch (h->type) {
	case ENVELOPE_T_CHALLENGE:
		/* Whatever the challenger's session: a challenge changes nothing here. */
		env_on_challenge(e, peer, now);
		return ENVELOPE_CONTROL;
	case ENVELOPE_T_RESPONSE:
		/* The responder's sid is in the payload too; it must be the sealer's. */
		if (env_get_be64(e->plain + ENVELOPE_NONCE_BYTES) != h->sid)
			return ENVELOPE_R_MALFORMED;
		if (h->sid == p->sid)
			return ENVELOPE_R_UNSOLICITED;
		return env_on_response(e, peer, h, now);
	default:
		if (h->sid != p->sid) {
			env_challenge(e, peer, h->sid, now);
			return ENVELOPE_R_STALE_SESSION;
		}
		if (!env_window_fresh(&p->win, h->counter))
			return ENVELOPE_R_REPLAYED;
		env_window_take(&p->win, h->counter);
		return ENVELOPE_DELIVER;
	}
}

enum envelope_reason envelope_open(struct envelope *e, unsigned peer, const void *buf, size_t len,
				   uint64_t now, const void **payload, size_t *plen)
{
	const uint8_t *p = buf;
	struct env_hdr h;
	enum envelope_reason r;
	int k;

	*payload = NULL;
	*plen = 0;
	if (peer >= ENVELOPE_PEERS_MAX) {
		e->stats.opened[ENVELOPE_R_WRONG_PEER]++;
		return ENVELOPE_R_WRONG_PEER;
	}
	r = check_shape(p, len, &h);
	if (r == ENVELOPE_DELIVER) {
		k = key_by_id(e, h.key_id);
		if (k < 0)
			r = ENVELOPE_R_UNKNOWN_KEY_ID;
		else if (h.type == ENVELOPE_T_DATA_GCM && !e->gcm_here)
			r = ENVELOPE_R_MALFORMED;       /* never sent to us: we said we cannot */
		else if (!decrypt(e, peer, p, &h, (unsigned)k))
			r = ENVELOPE_R_BAD_TAG;
		else
			r = open_authentic(e, peer, &h, now);
	}
	e->stats.opened[r]++;
	e->peers[peer].stats.opened[r]++;
	if (r == ENVELOPE_DELIVER) {
		if (h.type == ENVELOPE_T_DATA_GCM)
			e->stats.opened_gcm++;
		*payload = e->plain;
		*plen = payload_bytes(&h);
	}
	return r;
}
