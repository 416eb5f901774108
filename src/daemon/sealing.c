/*
 * sealing.c - the envelope between the sync engine and the links.
 *
 * Every datagram we send is sealed as the link closes it (link_seal_fn),
 * so batching is unchanged and the messages inside are 1.4.7's; every
 * datagram received is opened before the splitter sees it.  Refusals are
 * counted by reason and logged with their source, at most once per
 * REFUSAL_LOG_MS per reason: a flood costs a line every ten seconds.
 */
#include "sealing.h"

#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "control/report.h"
#include "envelope/envelope.h"
#include "keyfile.h"
#include "link/link.h"
#include "loop/log.h"

#define REFUSAL_LOG_MS 10000u

struct sealing {
	struct envelope *env;
	struct link_group *links;
	unsigned nkeys;
	uint16_t key_ids[ENVELOPE_KEYS_MAX];
	uint64_t logged_ms[ENVELOPE_R_MAX];
	uint64_t unlogged[ENVELOPE_R_MAX];
	uint64_t send_failures;         /* handshake datagrams the link could not queue */
};

static void env_random(void *arg, void *buf, size_t len)
{
	(void)arg;
	randombytes_buf(buf, len);
}

static void env_send(void *arg, unsigned peer, const void *sealed, size_t len)
{
	struct sealing *sg = arg;
	int err;

	(void)peer;     /* one destination per link: the peer, or the group */
	if (!sg->links)
		return;
	err = link_group_send_datagram(sg->links, sealed, len);
	if (err < 0 && err != -EAGAIN)
		sg->send_failures++;
}

static void env_session(void *arg, unsigned peer, uint64_t old_sid, uint64_t new_sid)
{
	struct sealing *sg = arg;
	uint8_t greeting[ENVELOPE_OVERHEAD];
	size_t n;

	/*
	 * The peer has just started, or we have, and it may not have proven
	 * our session yet: our datagrams reach it only as "stale" ones until
	 * it sees one and challenges us, and the engine's next one may be a
	 * second away (its keepalive), its data refused meanwhile.  An empty
	 * datagram now makes it ask at once; once it has proven us, an empty
	 * datagram is nothing to the splitter.
	 */
	n = envelope_seal(sg->env, "", 0, greeting, sizeof(greeting));
	if (n)
		env_send(sg, peer, greeting, n);
	if (old_sid)
		log_notice("sync: peer %u proved a new session %016" PRIx64 " (it restarted; the "
			   "session %016" PRIx64 " is over)", peer, new_sid, old_sid);
	else
		log_notice("sync: peer %u proved its session %016" PRIx64, peer, new_sid);
}

int sealing_start(struct sealing **out, const struct config_sync *s)
{
	static const struct envelope_ops ops = {
		.random = env_random, .send = env_send, .session = env_session,
	};
	uint8_t keys[ENVELOPE_KEYS_MAX][ENVELOPE_KEY_BYTES];
	char why[512];
	struct sealing *sg;
	int n, err;

	*out = NULL;
	if (s->nkeys == 0)
		return 0;
	if (sodium_init() < 0) {
		log_error("sync: libsodium cannot start; the Key cannot be used");
		return -ENOSYS;
	}
	n = keyfile_read_all(s, keys, why, sizeof(why));
	if (n < 0) {
		log_error("sync: %s", why);
		return n;
	}
	sg = calloc(1, sizeof(*sg));
	if (!sg) {
		sodium_memzero(keys, sizeof(keys));
		return -ENOMEM;
	}
	sg->nkeys = (unsigned)n;
	for (int i = 0; i < n; i++)
		sg->key_ids[i] = envelope_key_id(keys[i]);
	err = envelope_new((const uint8_t (*)[ENVELOPE_KEY_BYTES])keys, (unsigned)n, &ops, sg, &sg->env);
	sodium_memzero(keys, sizeof(keys));
	if (err < 0) {
		log_error("sync: cannot set up the sealing of sync datagrams: %s", strerror(-err));
		free(sg);
		return err;
	}
	log_notice("sync: datagrams are sealed with the key of %s (id %04x)%s%s; our session is %016"
		   PRIx64, s->keys[0], sg->key_ids[0], n > 1 ? ", and also accepted with that of " : "",
		   n > 1 ? s->keys[1] : "", envelope_sid(sg->env));
	*out = sg;
	return 0;
}

int sealing_reload(struct sealing *sg, const struct config_sync *s)
{
	uint8_t keys[ENVELOPE_KEYS_MAX][ENVELOPE_KEY_BYTES];
	uint16_t ids[ENVELOPE_KEYS_MAX];
	char why[512];
	int n, err;

	n = keyfile_read_all(s, keys, why, sizeof(why));
	if (n <= 0) {
		log_error("sync: %s", n < 0 ? why : "no Key");
		return n < 0 ? n : -EINVAL;
	}
	for (int i = 0; i < n; i++)
		ids[i] = envelope_key_id(keys[i]);
	err = envelope_set_keys(sg->env, (const uint8_t (*)[ENVELOPE_KEY_BYTES])keys, (unsigned)n);
	sodium_memzero(keys, sizeof(keys));
	if (err < 0) {
		log_error("sync: cannot use the keys of %s%s%s: %s", s->keys[0], n > 1 ? " and " : "",
			  n > 1 ? s->keys[1] : "", strerror(-err));
		return err;
	}
	sg->nkeys = (unsigned)n;
	memcpy(sg->key_ids, ids, sizeof(ids[0]) * (size_t)n);
	log_notice("sync: keys read again: datagrams are sealed with the key of %s (id %04x)%s%s",
		   s->keys[0], ids[0], n > 1 ? ", and also accepted with that of " : "",
		   n > 1 ? s->keys[1] : "");
	return 0;
}

void sealing_stop(struct sealing *sg)
{
	if (!sg)
		return;
	envelope_free(sg->env);
	free(sg);
}

void sealing_link_params(struct link_group_params *lp, size_t (*seal)(void *, uint8_t *, size_t, size_t))
{
	lp->seal = seal;
	lp->seal_headroom = ENVELOPE_HDR_BYTES;
	lp->seal_overhead = ENVELOPE_OVERHEAD;
	lp->frame_len = envelope_frame_len;
	lp->frame_valid = envelope_frame_valid;
}

void sealing_set_links(struct sealing *sg, struct link_group *links)
{
	sg->links = links;
}

size_t sealing_seal(struct sealing *sg, uint8_t *buf, size_t len, size_t cap, uint64_t now)
{
	return envelope_seal_at(sg->env, buf + ENVELOPE_HDR_BYTES, len, buf, cap, now);
}

static void refused(struct sealing *sg, enum envelope_reason why, const struct sockaddr *src, uint64_t now)
{
	char from[LINK_ADDR_STRLEN] = "the peer's connection";

	sg->unlogged[why]++;
	if (sg->logged_ms[why] && now - sg->logged_ms[why] < REFUSAL_LOG_MS)
		return;
	if (src)
		link_sock_addr_str(src, from, sizeof(from));
	log_msg(why == ENVELOPE_R_STALE_SESSION ? LOG_LEVEL_NOTICE : LOG_LEVEL_WARNING,
		"sync: datagram from %s refused: %s (%" PRIu64 " refused for this reason "
		"since the last report; -s network shows them all)", from,
		envelope_reason_name(why), sg->unlogged[why]);
	sg->logged_ms[why] = now ? now : 1;
	sg->unlogged[why] = 0;
}

bool sealing_open(struct sealing *sg, unsigned peer, const struct sockaddr *src, const void **buf,
		  size_t *len, uint64_t now)
{
	const void *plain;
	size_t plen;
	enum envelope_reason why;

	why = envelope_open(sg->env, peer, *buf, *len, now, &plain, &plen);
	if (why == ENVELOPE_DELIVER) {
		*buf = plain;
		*len = plen;
		return true;
	}
	/*
	 * Every start sees a few datagrams of the peer before its proof, and
	 * on multicast every node sees the others' handshakes: counted, and
	 * the first only said, not warned about.
	 */
	if (why != ENVELOPE_CONTROL && why != ENVELOPE_R_UNSOLICITED)
		refused(sg, why, src, now);
	return false;
}

void sealing_report(const struct sealing *sg, struct report *rep)
{
	struct envelope_stats st = { 0 };
	char sid[17] = "", help[160];

	report_begin(rep, "envelope");
	report_flag(rep, "keyed", sg != NULL, "1 if sync datagrams are sealed with a Key.");
	if (sg) {
		envelope_stats(sg->env, &st);
		snprintf(sid, sizeof(sid), "%016" PRIx64, envelope_sid(sg->env));
		report_info(rep, "session", sid);
		report_gauge(rep, "keys", sg->nkeys, "Keys loaded from the Key file.");
		report_info(rep, "data_cipher", envelope_data_cipher(sg->env));
	}
	report_counter(rep, "sealed", st.sealed, "Datagrams sealed and sent.");
	report_counter(rep, "sealed_aes256gcm", st.sealed_gcm,
		       "Datagrams of them sealed with AES-256-GCM (every peer can open it).");
	report_counter(rep, "delivered_aes256gcm", st.opened_gcm,
		       "Datagrams of the delivered ones that were sealed with AES-256-GCM.");
	report_counter(rep, "delivered", st.opened[ENVELOPE_DELIVER],
		       "Datagrams opened and delivered: authentic and fresh, of the peer's proven session.");
	report_counter(rep, "handshake_received", st.opened[ENVELOPE_CONTROL],
		       "Challenges and responses of the handshake received.");
	for (int r = ENVELOPE_CONTROL + 1; r < ENVELOPE_R_MAX; r++) {
		snprintf(help, sizeof(help), "Datagrams refused: %s.",
			 envelope_reason_name((enum envelope_reason)r));
		report_counter(rep, envelope_reason_key((enum envelope_reason)r), st.opened[r], help);
	}
	report_counter(rep, "challenges_sent", st.challenges_sent, "Challenges sent to prove a session.");
	report_counter(rep, "challenges_rate_limited", st.challenges_rate_limited,
		       "Challenges due but not sent: their rate limit was reached.");
	report_counter(rep, "challenges_for_others", st.challenges_for_others,
		       "Authentic challenges received for another session than ours.");
	report_counter(rep, "responses_sent", st.responses_sent, "Responses sent to the peer's challenges.");
	report_counter(rep, "responses_rate_limited", st.responses_rate_limited,
		       "Responses due but not sent: their rate limit was reached.");
	report_counter(rep, "sessions_accepted", st.sessions_accepted, "Sessions of the peer proven.");
	report_counter(rep, "handshake_send_failures", sg ? sg->send_failures : 0,
		       "Challenges and responses that could not be sent.");
	report_end(rep);
}
