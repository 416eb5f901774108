/*
 * codec.c - the envelope's bytes: the header, sealing and opening with
 * XChaCha20-Poly1305 or AES-256-GCM, the framing a TCP link asks for, the key's text form
 * and its id, and the names of the outcomes (envelope.md §1, §2, §7).
 */
#include <errno.h>
#include <sodium.h>
#include <string.h>

#include "envelope_int.h"

#define GCM_SUBKEY_CONTEXT      "ctsyGCM1"      /* crypto_kdf_CONTEXTBYTES */

_Static_assert(ENVELOPE_TAG_BYTES == crypto_aead_xchacha20poly1305_ietf_ABYTES, "tag size");
_Static_assert(ENVELOPE_KEY_BYTES == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "key size");
_Static_assert(ENV_NPUB_BYTES == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, "nonce size");
_Static_assert(ENVELOPE_KEY_TEXT == sodium_base64_ENCODED_LEN(ENVELOPE_KEY_BYTES,
							      sodium_base64_VARIANT_ORIGINAL), "key text size");
_Static_assert(ENV_SECRET_BYTES >= crypto_generichash_KEYBYTES_MIN, "secret size");
_Static_assert(ENVELOPE_TAG_BYTES == crypto_aead_aes256gcm_ABYTES, "GCM tag size");
_Static_assert(ENV_GCM_NPUB_BYTES == crypto_aead_aes256gcm_NPUBBYTES, "GCM nonce size");
_Static_assert(ENVELOPE_KEY_BYTES == crypto_kdf_KEYBYTES, "KDF key size");
_Static_assert(sizeof(GCM_SUBKEY_CONTEXT) - 1 == crypto_kdf_CONTEXTBYTES, "KDF context size");

#define KEY_TEXT_CHARS          (ENVELOPE_KEY_TEXT - 1)
#define KEY_ID_MESSAGE          "ctsyncd envelope key id v1"

void env_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void env_put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

uint16_t env_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

uint64_t env_get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void env_hdr_read(const uint8_t *p, struct env_hdr *h)
{
	h->version = p[ENVELOPE_OFF_VERTYPE] >> 4;
	h->type = p[ENVELOPE_OFF_VERTYPE] & 0x0f;
	h->len = env_get_be16(p + ENVELOPE_OFF_LEN);
	h->key_id = env_get_be16(p + ENVELOPE_OFF_KEY_ID);
	h->sid = env_get_be64(p + ENVELOPE_OFF_SID);
	h->counter = env_get_be64(p + ENVELOPE_OFF_COUNTER);
}

/*
 * The AEAD nonce: the header's sid and counter, then zeros.  A sid is
 * drawn at random once per process and a counter never repeats within
 * it, so no two envelopes sealed with one key share a nonce unless two
 * processes drew the same 64-bit sid (envelope.md §5).
 */
static void nonce_of(const uint8_t *hdr, uint8_t npub[ENV_NPUB_BYTES])
{
	memcpy(npub, hdr + ENVELOPE_OFF_SID, 16);
	memset(npub + 16, 0, ENV_NPUB_BYTES - 16);
}

/* The header of the next envelope of ours; false once the counter is exhausted. */
static bool hdr_write(struct envelope *e, uint8_t type, size_t total, uint8_t *out)
{
	/* The last counter is never used, so that a counter cannot wrap to a used one. */
	if (e->counter == UINT64_MAX)
		return false;
	out[ENVELOPE_OFF_MAGIC] = ENVELOPE_MAGIC;
	out[ENVELOPE_OFF_VERTYPE] = ENVELOPE_VERSION << 4 | type;
	env_put_be16(out + ENVELOPE_OFF_LEN, (uint16_t)total);
	env_put_be16(out + ENVELOPE_OFF_KEY_ID, e->keys->id[0]);
	env_put_be64(out + ENVELOPE_OFF_SID, e->sid);
	env_put_be64(out + ENVELOPE_OFF_COUNTER, e->counter++);
	return true;
}

size_t env_seal(struct envelope *e, uint8_t type, const void *payload, size_t len, uint8_t *out)
{
	uint8_t npub[ENV_NPUB_BYTES];
	unsigned long long clen;
	size_t total = len + ENVELOPE_OVERHEAD;

	if (!hdr_write(e, type, total, out))
		return 0;
	nonce_of(out, npub);
	/* In place when payload == out + ENVELOPE_HDR_BYTES: libsodium allows it. */
	crypto_aead_xchacha20poly1305_ietf_encrypt(out + ENVELOPE_HDR_BYTES, &clen, payload, len,
						   out, ENVELOPE_HDR_BYTES, NULL, npub, e->keys->key[0]);
	return total;
}

/*
 * The AES-GCM nonce: the counter, then zeros.  The subkey is the
 * session's own, so (subkey, counter) never repeats unless two processes
 * drew the same sid, as for XChaCha20-Poly1305 above.
 */
static void gcm_nonce_of(const uint8_t *hdr, uint8_t npub[ENV_GCM_NPUB_BYTES])
{
	memcpy(npub, hdr + ENVELOPE_OFF_COUNTER, 8);
	memset(npub + 8, 0, ENV_GCM_NPUB_BYTES - 8);
}

size_t env_seal_gcm(struct envelope *e, const struct env_gcm *g, const void *payload, size_t len,
		    uint8_t *out)
{
	uint8_t npub[ENV_GCM_NPUB_BYTES];
	unsigned long long clen;
	size_t total = len + ENVELOPE_OVERHEAD;

	if (!hdr_write(e, ENVELOPE_T_DATA_GCM, total, out))
		return 0;
	gcm_nonce_of(out, npub);
	crypto_aead_aes256gcm_encrypt_afternm(out + ENVELOPE_HDR_BYTES, &clen, payload, len,
					      out, ENVELOPE_HDR_BYTES, NULL, npub, &g->st);
	return total;
}

bool env_decrypt(struct envelope *e, const uint8_t *p, const struct env_hdr *h, const uint8_t *key,
		 const struct env_gcm *g)
{
	uint8_t npub[ENV_NPUB_BYTES];
	unsigned long long mlen;
	unsigned long long clen = (unsigned long long)h->len - ENVELOPE_HDR_BYTES;

	if (h->type == ENVELOPE_T_DATA_GCM) {
		gcm_nonce_of(p, npub);
		return crypto_aead_aes256gcm_decrypt_afternm(e->plain, &mlen, NULL, p + ENVELOPE_HDR_BYTES,
							     clen, p, ENVELOPE_HDR_BYTES, npub, &g->st) == 0;
	}
	nonce_of(p, npub);
	return crypto_aead_xchacha20poly1305_ietf_decrypt(e->plain, &mlen, NULL, p + ENVELOPE_HDR_BYTES,
							  clen, p, ENVELOPE_HDR_BYTES, npub, key) == 0;
}

void env_gcm_ready(struct env_keys *keys, struct env_gcm *g, uint64_t sid, unsigned k)
{
	uint8_t sub[crypto_aead_aes256gcm_KEYBYTES];

	if (g->ready && g->sid == sid && g->key == k)
		return;
	/* BLAKE2b keyed with the key, the sid as the subkey id: one subkey per session. */
	crypto_kdf_derive_from_key(sub, sizeof(sub), sid, GCM_SUBKEY_CONTEXT, keys->key[k]);
	crypto_aead_aes256gcm_beforenm(&g->st, sub);
	sodium_memzero(sub, sizeof(sub));
	g->sid = sid;
	g->key = k;
	g->ready = true;
}

size_t envelope_seal(struct envelope *e, const void *payload, size_t len, void *out, size_t cap)
{
	size_t n;

	if (len > ENVELOPE_PAYLOAD_MAX || len + ENVELOPE_OVERHEAD > cap)
		return 0;
	n = env_seal(e, ENVELOPE_T_DATA, payload, len, out);
	if (n)
		e->stats.sealed++;
	return n;
}

size_t envelope_seal_at(struct envelope *e, const void *payload, size_t len, void *out, size_t cap,
			uint64_t now)
{
	bool portable_due = !e->portable_sent || now < e->portable_at ||
			    now - e->portable_at >= ENVELOPE_PORTABLE_MS;
	size_t n;

	if (!e->seal_gcm || portable_due) {
		n = envelope_seal(e, payload, len, out, cap);
		if (n) {
			e->portable_sent = true;
			e->portable_at = now;
		}
		return n;
	}
	if (len > ENVELOPE_PAYLOAD_MAX || len + ENVELOPE_OVERHEAD > cap)
		return 0;
	env_gcm_ready(e->keys, &e->keys->seal, e->sid, 0);
	n = env_seal_gcm(e, &e->keys->seal, payload, len, out);
	if (n) {
		e->stats.sealed++;
		e->stats.sealed_gcm++;
	}
	return n;
}

/* ---- framing ---- */

long envelope_frame_len(void *arg, const void *buf, size_t len, const char **why)
{
	const uint8_t *p = buf;
	uint16_t n;

	(void)arg;
	if (len >= 1 && p[ENVELOPE_OFF_MAGIC] != ENVELOPE_MAGIC) {
		*why = "not an envelope (a plain datagram, or the peer has no key)";
		return -EBADMSG;
	}
	if (len >= 2 && p[ENVELOPE_OFF_VERTYPE] >> 4 != ENVELOPE_VERSION) {
		*why = "envelope of another version";
		return -EBADMSG;
	}
	if (len < ENVELOPE_OFF_LEN + 2)
		return 0;
	n = env_get_be16(p + ENVELOPE_OFF_LEN);
	if (n < ENVELOPE_OVERHEAD) {
		*why = "envelope length below its overhead";
		return -EBADMSG;
	}
	return n <= len ? n : 0;
}

bool envelope_frame_valid(void *arg, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	struct env_hdr h;

	(void)arg;
	if (len < ENVELOPE_OVERHEAD || p[ENVELOPE_OFF_MAGIC] != ENVELOPE_MAGIC)
		return false;
	env_hdr_read(p, &h);
	return h.version == ENVELOPE_VERSION && h.type >= ENVELOPE_T_DATA && h.type <= ENVELOPE_T_DATA_GCM &&
	       h.len >= ENVELOPE_OVERHEAD && h.len <= len;
}

/* ---- keys ---- */

uint16_t envelope_key_id(const uint8_t key[ENVELOPE_KEY_BYTES])
{
	uint8_t h[16];
	uint16_t id;

	crypto_generichash(h, sizeof(h), (const uint8_t *)KEY_ID_MESSAGE, sizeof(KEY_ID_MESSAGE) - 1,
			   key, ENVELOPE_KEY_BYTES);
	id = env_get_be16(h);
	sodium_memzero(h, sizeof(h));
	return id;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int envelope_key_parse(const char *text, size_t len, uint8_t key[ENVELOPE_KEY_BYTES])
{
	const char *end = NULL;
	size_t n = 0;

	memset(key, 0, ENVELOPE_KEY_BYTES);
	if (len < KEY_TEXT_CHARS)
		return -EINVAL;
	for (size_t i = KEY_TEXT_CHARS; i < len; i++)
		if (!is_blank(text[i]))
			return -EINVAL;
	/* libsodium refuses a missing or misplaced '=' and non-zero padding bits: one text per key. */
	if (sodium_base642bin(key, ENVELOPE_KEY_BYTES, text, KEY_TEXT_CHARS, NULL, &n, &end,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    n != ENVELOPE_KEY_BYTES || end != text + KEY_TEXT_CHARS) {
		sodium_memzero(key, ENVELOPE_KEY_BYTES);
		return -EINVAL;
	}
	return 0;
}

void envelope_key_format(const uint8_t key[ENVELOPE_KEY_BYTES], char out[ENVELOPE_KEY_TEXT])
{
	sodium_bin2base64(out, ENVELOPE_KEY_TEXT, key, ENVELOPE_KEY_BYTES, sodium_base64_VARIANT_ORIGINAL);
}

/* ---- names ---- */

static const struct {
	const char *key;
	const char *name;
} reasons[ENVELOPE_R_MAX] = {
	[ENVELOPE_DELIVER] = { "delivered", "delivered" },
	[ENVELOPE_CONTROL] = { "control", "handshake message" },
	[ENVELOPE_R_PLAIN] = { "plain", "plain datagram, not an envelope" },
	[ENVELOPE_R_TRUNCATED] = { "truncated", "truncated envelope" },
	[ENVELOPE_R_MALFORMED] = { "malformed", "malformed envelope" },
	[ENVELOPE_R_UNKNOWN_KEY_ID] = { "unknown_key_id", "sealed with a key we do not have" },
	[ENVELOPE_R_BAD_TAG] = { "bad_tag", "not authentic" },
	[ENVELOPE_R_REPLAYED] = { "replayed", "replayed" },
	[ENVELOPE_R_STALE_SESSION] = { "stale_session", "session not proven" },
	[ENVELOPE_R_UNSOLICITED] = { "unsolicited", "response to no open challenge" },
	[ENVELOPE_R_REFLECTED] = { "reflected", "our own envelope" },
	[ENVELOPE_R_WRONG_PEER] = { "wrong_peer", "session of another peer" },
};

const char *envelope_reason_key(enum envelope_reason r)
{
	return (unsigned)r < ENVELOPE_R_MAX ? reasons[r].key : "unknown";
}

const char *envelope_reason_name(enum envelope_reason r)
{
	return (unsigned)r < ENVELOPE_R_MAX ? reasons[r].name : "?";
}
