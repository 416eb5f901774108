/*
 * handshake.c - how a peer's session is proven live (envelope.md §3).
 *
 * An authentic envelope of a session that is not the peer's proven one is
 * either a restarted peer or a recording.  We cannot tell them apart by
 * what they carry, so we ask: a CHALLENGE names the session and carries a
 * nonce it has never seen; only a live holder of the key, running that
 * session, can seal a RESPONSE echoing it.  The RESPONSE's counter becomes
 * the session's floor, so nothing the session sealed before its proof (and
 * so nothing that could have been recorded before we asked) is ever taken.
 *
 * Challenges keep no state per session.  Slots for pending sessions can be
 * filled by an attacker replaying old sessions faster than a restarted peer
 * sends, whatever the eviction rule; instead a nonce is a keyed hash of the
 * target sid under a secret of the peer's, checked again when a response
 * comes (a cookie).  What is bounded instead is how often we ask: each sid
 * at most once per round, and ENVELOPE_CHALLENGES_PER_S in all.  A round
 * in which the bucket refused someone lasts until a second after the last
 * refusal: the sids it challenged stay out of the way until every sid that
 * keeps sending had its turn, so a flood of N recorded sessions delays a
 * live one by about N / ENVELOPE_CHALLENGES_PER_S seconds, never for good.
 */
#include <sodium.h>
#include <string.h>

#include "envelope_int.h"

_Static_assert(ENV_SECRET_BYTES == crypto_shorthash_KEYBYTES, "round key size");
_Static_assert(ENVELOPE_CHALLENGE_BYTES == ENV_SID_BYTES + ENVELOPE_NONCE_BYTES + 1, "challenge layout");
_Static_assert(ENVELOPE_RESPONSE_BYTES == ENVELOPE_NONCE_BYTES + ENV_SID_BYTES, "response layout");

/* ---- token buckets: `per_s` tokens a second, as many at most ---- */

static bool bucket_take(struct env_bucket *b, uint64_t now, unsigned per_s)
{
	uint64_t full = (uint64_t)per_s * 1000;

	if (!b->started) {
		b->milli = full;
		b->at = now;
		b->started = true;
	} else if (now > b->at) {
		/* per_s tokens a second are per_s thousandths a millisecond. */
		uint64_t ms = now - b->at;

		b->milli = ms >= 1000 ? full : b->milli + ms * per_s;
		if (b->milli > full)
			b->milli = full;
		b->at = now;
	}
	if (b->milli < 1000)
		return false;
	b->milli -= 1000;
	return true;
}

/* ---- the per-peer secrets behind the nonces ---- */

static void draw(struct envelope *e, uint8_t secret[ENV_SECRET_BYTES])
{
	e->ops.random(e->arg, secret, ENV_SECRET_BYTES);
}

/*
 * `cur` serves one period of ENVELOPE_PROOF_MS from its nominal start,
 * then as `prev` one more: a nonce answers for 1 to 2 periods after it was
 * sent, and a proof is never older than that.  A clock that goes back
 * changes nothing.
 */
static void secrets_update(struct envelope *e, struct env_peer *p, uint64_t now)
{
	if (p->secrets_ready && now < p->cur_since)
		return;
	if (!p->secrets_ready || now - p->cur_since >= 2 * ENVELOPE_PROOF_MS) {
		draw(e, p->cur);
		sodium_memzero(p->prev, sizeof(p->prev));
		p->prev_valid = false;
		p->cur_since = now;
		p->secrets_ready = true;
	} else if (now - p->cur_since >= ENVELOPE_PROOF_MS) {
		memcpy(p->prev, p->cur, sizeof(p->prev));
		p->prev_valid = true;
		draw(e, p->cur);
		p->cur_since += ENVELOPE_PROOF_MS;
	}
}

static void nonce_for(const uint8_t secret[ENV_SECRET_BYTES], uint64_t sid, uint8_t out[ENVELOPE_NONCE_BYTES])
{
	uint8_t b[ENV_SID_BYTES];

	env_put_be64(b, sid);
	crypto_generichash(out, ENVELOPE_NONCE_BYTES, b, sizeof(b), secret, ENV_SECRET_BYTES);
}

static bool nonce_matches(const uint8_t secret[ENV_SECRET_BYTES], uint64_t sid, const uint8_t *echoed)
{
	uint8_t want[ENVELOPE_NONCE_BYTES];
	bool ok;

	nonce_for(secret, sid, want);
	ok = sodium_memcmp(want, echoed, sizeof(want)) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

/* ---- rounds: each sid challenged at most once per round ---- */

static void round_update(struct envelope *e, struct env_peer *p, uint64_t now)
{
	bool over;

	if (!p->round_ready || p->round_ids >= ENV_ROUND_IDS_MAX)
		over = true;
	else if (now < p->round_since || now - p->round_since < ENVELOPE_ROUND_MS)
		over = false;
	else
		over = !p->starved || (now >= p->starved_at && now - p->starved_at >= ENV_ROUND_STARVED_MS);
	if (!over)
		return;
	/* A fresh key: an attacker cannot pick recorded sids that hide a live one's bits. */
	draw(e, p->round_key);
	memset(p->filter, 0, sizeof(p->filter));
	p->round_ids = 0;
	p->round_since = now;
	p->starved = false;
	p->round_ready = true;
}

static void filter_bits(const struct env_peer *p, uint64_t sid, unsigned bit[2])
{
	uint8_t b[ENV_SID_BYTES], h[crypto_shorthash_BYTES];
	uint64_t v;

	env_put_be64(b, sid);
	crypto_shorthash(h, b, sizeof(b), p->round_key);
	v = env_get_be64(h);
	bit[0] = (unsigned)(v % ENV_FILTER_BITS);
	bit[1] = (unsigned)(v / ENV_FILTER_BITS % ENV_FILTER_BITS);
}

static bool filter_has(const struct env_peer *p, const unsigned bit[2])
{
	return (p->filter[bit[0] / 64] >> (bit[0] % 64) & 1) && (p->filter[bit[1] / 64] >> (bit[1] % 64) & 1);
}

static void filter_add(struct env_peer *p, const unsigned bit[2])
{
	p->filter[bit[0] / 64] |= (uint64_t)1 << (bit[0] % 64);
	p->filter[bit[1] / 64] |= (uint64_t)1 << (bit[1] % 64);
	p->round_ids++;
}

/* ---- the three steps ---- */

void env_challenge(struct envelope *e, unsigned peer, uint64_t sid, uint64_t now)
{
	struct env_peer *p = &e->peers[peer];
	uint8_t payload[ENVELOPE_CHALLENGE_BYTES];
	unsigned bit[2];
	size_t n;

	round_update(e, p, now);
	filter_bits(p, sid, bit);
	if (filter_has(p, bit))
		return;
	if (!bucket_take(&e->challenges, now, ENVELOPE_CHALLENGES_PER_S)) {
		ENV_COUNT(e, peer, challenges_rate_limited);
		p->starved = true;
		p->starved_at = now;
		return;
	}
	filter_add(p, bit);
	secrets_update(e, p, now);
	env_put_be64(payload, sid);
	nonce_for(p->cur, sid, payload + ENV_SID_BYTES);
	payload[ENV_SID_BYTES + ENVELOPE_NONCE_BYTES] = e->gcm_here ? ENVELOPE_CAN_OPEN_GCM : 0;
	n = env_seal(e, ENVELOPE_T_CHALLENGE, payload, sizeof(payload), e->control);
	sodium_memzero(payload, sizeof(payload));
	if (n == 0)
		return;
	ENV_COUNT(e, peer, challenges_sent);
	e->ops.send(e->arg, peer, e->control, n);
}

/*
 * AES-256-GCM is cheaper than XChaCha20-Poly1305 where the CPU has AES
 * instructions, but not every node has them.  Every node that takes our
 * DATA has challenged our session first and said in it what it can open;
 * we seal with AES-GCM once at least one has, and as long as all that
 * did can.  One that joins later, without it, still authenticates our
 * periodic XChaCha20-Poly1305 DATA (envelope_seal_at()) and tells us.
 */
void env_caps_update(struct envelope *e)
{
	bool any = false, all = true;

	for (unsigned i = 0; i < ENVELOPE_PEERS_MAX; i++) {
		if (!e->peers[i].told_caps)
			continue;
		any = true;
		all = all && e->peers[i].can_open_gcm;
	}
	e->seal_gcm = e->gcm_here && any && all;
}

void env_on_challenge(struct envelope *e, unsigned peer, uint64_t now)
{
	struct env_peer *p = &e->peers[peer];
	uint8_t payload[ENVELOPE_RESPONSE_BYTES];
	size_t n;

	/* On a multicast group every node hears every challenge; most are not for us. */
	if (env_get_be64(e->plain) != e->sid) {
		ENV_COUNT(e, peer, challenges_for_others);
		return;
	}
	/*
	 * Authentic and naming our session, but perhaps a recording of an
	 * earlier challenge of it: "cannot" stays for the session, so that
	 * replaying an old "can" never takes AES-GCM to a node without it.
	 */
	p->can_open_gcm = (e->plain[ENV_SID_BYTES + ENVELOPE_NONCE_BYTES] & ENVELOPE_CAN_OPEN_GCM) != 0 &&
			  (!p->told_caps || p->can_open_gcm);
	p->told_caps = true;
	env_caps_update(e);
	/* A recorded challenge is answered too: it costs one response, within this budget. */
	if (!bucket_take(&e->responses, now, ENVELOPE_RESPONSES_PER_S)) {
		ENV_COUNT(e, peer, responses_rate_limited);
		return;
	}
	memcpy(payload, e->plain + ENV_SID_BYTES, ENVELOPE_NONCE_BYTES);
	env_put_be64(payload + ENVELOPE_NONCE_BYTES, e->sid);
	n = env_seal(e, ENVELOPE_T_RESPONSE, payload, sizeof(payload), e->control);
	if (n == 0)
		return;
	ENV_COUNT(e, peer, responses_sent);
	e->ops.send(e->arg, peer, e->control, n);
}

enum envelope_reason env_on_response(struct envelope *e, unsigned peer, const struct env_hdr *h,
				     uint64_t now)
{
	struct env_peer *p = &e->peers[peer];
	uint64_t old = p->sid;
	bool proven;

	secrets_update(e, p, now);
	proven = nonce_matches(p->cur, h->sid, e->plain) ||
		 (p->prev_valid && nonce_matches(p->prev, h->sid, e->plain));
	if (!proven) {
		/* Late, or an answer to another node of the group: ask ourselves. */
		env_challenge(e, peer, h->sid, now);
		return ENVELOPE_R_UNSOLICITED;
	}
	p->sid = h->sid;
	env_window_start(&p->win, h->counter);
	/*
	 * Only the peer's live process could answer, so whatever else we asked
	 * this peer is void: a recorded answer of an older session, held back
	 * and sent in now, proves nothing any more.
	 */
	sodium_memzero(p->cur, sizeof(p->cur));
	sodium_memzero(p->prev, sizeof(p->prev));
	p->secrets_ready = false;
	p->prev_valid = false;
	ENV_COUNT(e, peer, sessions_accepted);
	if (e->ops.session)
		e->ops.session(e->arg, peer, old, h->sid);
	return ENVELOPE_CONTROL;
}
