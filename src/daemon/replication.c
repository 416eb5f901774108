/*
 * replication.c - the sync engine between the caches and the links.
 *
 * Local changes of the internal cache queue flows in the engine; once per
 * loop iteration (the before-sleep hook) the engine emits what the link
 * can take and the link group flushes its datagrams.  Received datagrams
 * are split into messages and fed to the engine, whose decoded states go
 * into the external cache (or straight into the kernel).  The three modes
 * (FTFW, NOTRACK, ALARM) are the one engine of src/sync/ configured apart;
 * in ALARM the caches expire the peer's states (src/cache/cache.c).
 */
#include "build-config.h"
#include "replication.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "config/config.h"
#include "config/diff.h"
#include "control/compat_report.h"
#include "control/health.h"
#include "control/link_report.h"
#include "control/peer_report.h"
#include "control/server.h"
#include "flow/table.h"
#include "link/link.h"
#include "loop/log.h"
#include "loop/loop.h"
#include "control/report.h"
#include "confirm.h"
#include "sealing.h"
#include "sync/sync.h"
#include "wire/wire.h"

/*
 * Bytes the engine may emit per loop iteration: enough to fill the link
 * quickly, small enough that a bulk of a million states never floods the
 * link's queue (the engine goes on at the next iteration).
 */
#define SEND_BUDGET (256u * 1024u)
/* The external cache's sweep after a peer's restart: sweep_due(). */
#define SWEEP_QUIET_MS 2000u
#define SWEEP_MAX_MS 60000u
/* FTFW_PEER_TWO_SPACES is logged at most this often. */
#define SWITCH_LOG_MS 10000u

_Static_assert(FTFW_USER_BYTES <= CACHE_USER_BYTES, "the internal cache's user area is too small");

struct peer_addr {
	bool used;
	int family;
	uint8_t addr[16];
};

struct replication {
	const struct config *cfg;
	/* mark and sweep of the external cache after the peer's restart (peer_reset()) */
	uint64_t marked_ms, quiet_since_ms, data_seen;
	struct loop *loop;
	struct cache *cache;
	struct link_group *links;
	struct ftfw *engine;
	struct confirm *confirm;        /* a-priori mode (ConfirmQueue), or NULL */
	struct sealing *sealing;        /* NULL without Key: plain datagrams */
	struct loop_timer *timer;
	struct peer_addr peers[FTFW_PEERS_MAX];
	uint64_t unknown_peers;       /* datagrams from more peers than we track */
	uint64_t started_ms;
	uint64_t peer_timeout_ms;
	/* UDP, TCP: the one peer was never heard, and that was logged (check_unheard()) */
	bool unheard_logged;
	uint64_t switch_logged_ms;    /* FTFW_PEER_TWO_SPACES: the last warning */
	uint64_t switches_unlogged;
	uint64_t datagrams;
};

/*
 * Peers are told apart by address only: conntrackd sends from an unbound
 * socket, so its source port changes with every restart.  Over UDP and
 * TCP there is one peer, whatever link it sends on: redundant links give
 * it one address per link, and taken for two peers, the one behind a
 * link that went down would never acknowledge anything again (nor answer
 * our HELLO), and the other would see us restart.
 */
static int peer_id(struct replication *r, const struct sockaddr *src)
{
	uint8_t addr[16] = { 0 };
	int family = src ? src->sa_family : AF_UNSPEC;

	if (family == AF_INET)
		memcpy(addr, &((const struct sockaddr_in *)src)->sin_addr, 4);
	else if (family == AF_INET6)
		memcpy(addr, &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
	if (r->cfg->sync.links[0].kind != CONFIG_LINK_MCAST) {
		/* Its address as last heard, to name it in logs and in -s. */
		if (family == AF_INET || family == AF_INET6) {
			r->peers[0] = (struct peer_addr){ .used = true, .family = family };
			memcpy(r->peers[0].addr, addr, 16);
		}
		return 0;
	}
	for (unsigned i = 0; i < FTFW_PEERS_MAX; i++) {
		struct peer_addr *p = &r->peers[i];

		if (p->used && p->family == family && memcmp(p->addr, addr, 16) == 0)
			return (int)i;
		if (!p->used) {
			*p = (struct peer_addr){ .used = true, .family = family };
			memcpy(p->addr, addr, 16);
			return (int)i;
		}
	}
	return -1;
}

static void on_receive(void *arg, struct link *from, const void *buf, size_t len,
		       const struct sockaddr *src)
{
	struct replication *r = arg;
	uint64_t now = loop_now_ms(r->loop);
	struct wire_split split;
	struct wire_msg m[FTFW_RX_AHEAD];
	enum wire_split_status st = WIRE_SPLIT_MSG;
	int peer = peer_id(r, src);

	r->datagrams++;
	if (peer < 0) {
		r->unknown_peers++;
		return;
	}
	if (r->sealing && !sealing_open(r->sealing, (unsigned)peer, src, &buf, &len, now))
		return;
	/* The messages go to the engine in runs, so that it can decode ahead. */
	wire_split_init(&split, buf, len, false);
	while (st == WIRE_SPLIT_MSG) {
		unsigned n = 0;

		while (n < FTFW_RX_AHEAD && (st = wire_split_next(&split, &m[n])) == WIRE_SPLIT_MSG)
			n++;
		ftfw_receive_batch(r->engine, (unsigned)peer, m, n, now);
		if (st == WIRE_SPLIT_ERROR)
			ftfw_count_rejected(r->engine, (unsigned)peer, m[n].reason);
	}
}

static size_t seal(void *arg, uint8_t *buf, size_t len, size_t cap)
{
	struct replication *r = arg;

	return sealing_seal(r->sealing, buf, len, cap, loop_now_ms(r->loop));
}

static void emit(void *arg, const void *msg, size_t len)
{
	struct replication *r = arg;

	link_group_append(r->links, msg, len);
}

static void apply(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	struct replication *r = arg;

	/* Origins are peer ids + 1: 0 is "unknown" in the external cache. */
	cache_apply_remote(r->cache, type, f, peer + 1);
}

static void apply_exp(void *arg, unsigned peer, uint8_t type, const struct flow_exp *x)
{
	struct replication *r = arg;

	(void)peer;
	cache_apply_remote_exp(r->cache, type, x);
}

static void prefetch(void *arg, unsigned peer, uint8_t type, const struct flow_full *f)
{
	struct replication *r = arg;

	cache_prefetch_remote(r->cache, type, f);
}

static void dead_acked(void *arg, uint32_t handle)
{
	struct replication *r = arg;

	if (handle & FTFW_EXP_HANDLE) {
		cache_exp_forget_dead(r->cache, handle & ~FTFW_EXP_HANDLE);
	} else {
		confirm_gone(r->confirm, handle);
		cache_forget_dead(r->cache, handle);
	}
}

static void acked(void *arg, uint32_t handle)
{
	struct replication *r = arg;

	confirm_acked(r->confirm, handle);
}

/* The peer's address as last heard; UDP, TCP: the configured destination until then. */
static void peer_name(const struct replication *r, unsigned peer, char *buf, size_t len)
{
	const struct peer_addr *p = peer < FTFW_PEERS_MAX ? &r->peers[peer] : NULL;
	const struct config_link *l = &r->cfg->sync.links[r->cfg->sync.default_link];

	if (p && p->used && inet_ntop(p->family, p->addr, buf, (socklen_t)len))
		return;
	if (l->kind != CONFIG_LINK_MCAST && inet_ntop(l->dest.family, &l->dest.u, buf, (socklen_t)len))
		return;
	snprintf(buf, len, "#%u", peer);
}

static bool same_addr(int family, const uint8_t addr[16], const struct ctl_origin *o)
{
	return (int)o->family == family &&
	       memcmp(addr, o->addr, family == AF_INET ? 4 : 16) == 0;
}

/*
 * `--origin ADDRESS` to an origin of the external cache (a peer id + 1).
 * In a group, the peer heard from that address; over UDP and TCP, the one
 * peer, by its address as heard or as configured on any link.
 */
static int origin_of(void *arg, const struct ctl_origin *o, char *why, size_t cap)
{
	struct replication *r = arg;
	char want[INET6_ADDRSTRLEN] = "?", name[INET6_ADDRSTRLEN + 8];
	size_t len;

	inet_ntop((int)o->family, o->addr, want, sizeof(want));
	if (r->cfg->sync.links[0].kind != CONFIG_LINK_MCAST) {
		if (r->peers[0].used && same_addr(r->peers[0].family, r->peers[0].addr, o))
			return 1;
		for (unsigned i = 0; i < r->cfg->sync.nlinks; i++) {
			const struct config_addr *d = &r->cfg->sync.links[i].dest;

			if (d->family && same_addr(d->family, (const uint8_t *)&d->u, o))
				return 1;
		}
		peer_name(r, 0, name, sizeof(name));
		snprintf(why, cap, "%s is not the peer of this node (its peer is %s)", want, name);
		return -ENOENT;
	}
	for (unsigned i = 0; i < FTFW_PEERS_MAX && r->peers[i].used; i++)
		if (same_addr(r->peers[i].family, r->peers[i].addr, o))
			return (int)i + 1;
	len = (size_t)snprintf(why, cap, "no peer has sent from %s; heard so far:", want);
	for (unsigned i = 0; i < FTFW_PEERS_MAX && r->peers[i].used && len < cap; i++) {
		peer_name(r, i, name, sizeof(name));
		len += (size_t)snprintf(why + len, cap - len, " %s", name);
	}
	if (!r->peers[0].used && len < cap)
		snprintf(why + len, cap - len, " none");
	return -ENOENT;
}

static unsigned long long secs(uint64_t ms)
{
	return (unsigned long long)(ms / 1000u);
}

/*
 * Each change of a peer's liveness is logged once, at notice level: down
 * after PeerTimeout of silence, up again at its next message.  (The
 * engine's policy for each event is in sync.h; reading its statistics
 * here changes nothing.)
 */
static void peer_event(void *arg, unsigned peer, enum ftfw_peer_event ev)
{
	struct replication *r = arg;
	struct ftfw_peer_stats ps;
	char name[INET6_ADDRSTRLEN + 8];
	uint64_t now = loop_now_ms(r->loop);

	peer_name(r, peer, name, sizeof(name));
	ftfw_peer_stats(r->engine, peer, &ps);
	confirm_recheck(r->confirm);
	switch (ev) {
	case FTFW_PEER_NEW:
		if (r->unheard_logged)
			log_notice("sync: peer %s is up again after %llu s (its first message since our start)",
				   name, secs(now - r->started_ms));
		else
			log_notice("sync: peer %s is up (its first message)", name);
		return;
	case FTFW_PEER_LOST:
		log_notice("sync: peer %s is down: silent for %llu s", name,
			   secs(now > ps.last_heard ? now - ps.last_heard : 0));
		return;
	case FTFW_PEER_BACK:
		log_notice("sync: peer %s is up again after %llu s%s", name, secs(ps.silence),
			   r->cfg->sync.mode == CONFIG_MODE_FTFW ?
			   " (starting a new sequence space with it)" : "");
		return;
	case FTFW_PEER_RESTARTED:
		log_notice("sync: peer %s restarted (new sequence space)", name);
		return;
	case FTFW_PEER_TWO_SPACES:
		break;
	}
	/* A forger keeping its space going switches us at every message: say so once in a while. */
	r->switches_unlogged++;
	if (r->switch_logged_ms && now - r->switch_logged_ms < SWITCH_LOG_MS)
		return;
	log_warning("sync: peer %s sends in two sequence spaces (%llu switches since the last report): "
		    "someone forges its messages, or its previous process's datagrams arrive late; "
		    "both are taken and its table was asked for (configure a Key to refuse forgeries)",
		    name, (unsigned long long)r->switches_unlogged);
	r->switch_logged_ms = now ? now : 1;
	r->switches_unlogged = 0;
}

/*
 * A restarted peer may have lost messages for states we still hold (a DEL
 * in particular), and the engine asks for its whole table.  What we hold
 * of it is marked, not dropped: a takeover while the resend is in flight
 * still finds every state, and once the resend is over (sweep_due())
 * what the peer did not send again goes.  The external cache knows each
 * state's sender, so in a group only that peer's states are marked.
 */
static void peer_reset(void *arg, unsigned peer)
{
	struct replication *r = arg;

	if (r->cfg->sync.disable_external_cache)
		return;
	cache_external_mark(r->cache, peer + 1);
	r->marked_ms = loop_now_ms(r->loop);
	r->quiet_since_ms = r->marked_ms;
	r->data_seen = 0;
}

/*
 * The restarted peer's resend is over: our RESYNC request is answered, and
 * no state has come from it for SWEEP_QUIET_MS (its bulk sends without
 * pauses), or, on a peer too busy to ever be quiet, SWEEP_MAX_MS have
 * passed.  Sweeping early costs no state for good: one not resent yet is
 * stored again when it comes.
 */
static bool sweep_due(struct replication *r, uint64_t now)
{
	struct ftfw_stats st;

	ftfw_stats(r->engine, &st);
	if (st.data_recv != r->data_seen) {
		r->data_seen = st.data_recv;
		r->quiet_since_ms = now;
	}
	if (now - r->marked_ms >= SWEEP_MAX_MS)
		return true;
	return !st.resync_outstanding && now - r->quiet_since_ms >= SWEEP_QUIET_MS;
}

static void on_local_change(void *arg, uint32_t handle, enum kernel_event ev)
{
	struct replication *r = arg;

	ftfw_flow_changed(r->engine, handle);
}

static void on_local_forget(void *arg, uint32_t handle)
{
	struct replication *r = arg;

	confirm_gone(r->confirm, handle);
	ftfw_flow_forget(r->engine, handle);
}

static void on_exp_change(void *arg, uint32_t xh)
{
	struct replication *r = arg;

	ftfw_exp_changed(r->engine, xh);
}

static void on_exp_forget(void *arg, uint32_t xh)
{
	struct replication *r = arg;

	ftfw_exp_forget(r->engine, xh);
}

static void on_want_resync(void *arg)
{
	struct replication *r = arg;

	ftfw_request_resync(r->engine);
}

static void on_local_loaded(void *arg, uint32_t handle)
{
	struct replication *r = arg;

	ftfw_flow_loaded(r->engine, handle);
}

/* ---- DisableInternalCache: states straight from the kernel to the wire ---------------- */

static int on_local_send(void *arg, enum kernel_event ev, const struct flow_full *ff)
{
	struct replication *r = arg;
	uint8_t type = ev == KERNEL_EV_DESTROY ? WIRE_T_CT_DEL :
		       ev == KERNEL_EV_UPDATE ? WIRE_T_CT_UPD : WIRE_T_CT_NEW;

	return ftfw_send_state(r->engine, type, ff, loop_now_ms(r->loop));
}

static void on_want_bulk(void *arg)
{
	struct replication *r = arg;

	ftfw_bulk(r->engine);
}

static void bulk_begin(void *arg)
{
	struct replication *r = arg;

	cache_kernel_walk_start(r->cache);
}

static size_t bulk_pull(void *arg, size_t budget, bool *over)
{
	struct replication *r = arg;

	return cache_kernel_walk_pull(r->cache, budget, over);
}

/*
 * -n and -B have nothing to do in ALARM (protocol.md §4): the refresh
 * timers send everything.  Done, as conntrackd 1.4.7 answers (exit 0): the
 * stock primary-backup.sh runs them in every mode and logs an error else.
 */
static bool alarm_refuses(struct replication *r, struct control_request *req)
{
	if (r->cfg->sync.mode != CONFIG_MODE_ALARM)
		return false;
	control_request_printf(req, "ctsyncd: '%s' has nothing to do in Mode ALARM: every state is sent "
			       "again within RefreshTime (%u s) plus one second\n",
			       ctl_request_name(control_request_code(req)), r->cfg->sync.refresh_time);
	return true;
}

/* UDP, TCP: the one peer we expect has not said a word since our start. */
static bool unheard(struct replication *r)
{
	struct ftfw_peer_stats ps;

	if (r->cfg->sync.links[0].kind == CONFIG_LINK_MCAST)
		return false;
	ftfw_peer_stats(r->engine, 0, &ps);
	return !ps.known;
}

/*
 * A peer never heard is down once PeerTimeout has passed since our start,
 * as one that fell silent: logged once (FTFW_PEER_NEW says when it comes).
 * With multicast we do not know whom to expect.
 */
static void check_unheard(struct replication *r, uint64_t now)
{
	char name[INET6_ADDRSTRLEN + 8];

	if (r->unheard_logged || now - r->started_ms < r->peer_timeout_ms || !unheard(r))
		return;
	r->unheard_logged = true;
	peer_name(r, 0, name, sizeof(name));
	log_notice("sync: peer %s is down: not heard since our start %llu s ago", name,
		   secs(now - r->started_ms));
}

static void arm_timer(struct replication *r)
{
	uint64_t now = loop_now_ms(r->loop), next = ftfw_next_deadline(r->engine);

	/* Only while the peer is still unheard: once heard, that deadline is no more. */
	if (!r->unheard_logged && unheard(r) && r->started_ms + r->peer_timeout_ms < next)
		next = r->started_ms + r->peer_timeout_ms;

	if (ftfw_send_ready(r->engine) && !link_group_backlog(r->links))
		next = now;   /* more to send: come back at once */
	if (next == UINT64_MAX)
		loop_timer_disarm(r->timer);
	else
		loop_timer_arm(r->timer, next > now ? next - now : 0);
}

/* Once per loop iteration: transmit, flush the datagrams, re-arm. */
static void before_sleep(struct loop *loop, void *arg)
{
	struct replication *r = arg;
	uint64_t now = loop_now_ms(loop);

	ftfw_tick(r->engine, now);
	check_unheard(r, now);
	if (!link_group_backlog(r->links))
		ftfw_send(r->engine, now, SEND_BUDGET);
	link_group_flush(r->links);
	if (cache_external_marked(r->cache) && sweep_due(r, now))
		cache_external_sweep(r->cache);
	arm_timer(r);
}

/* The timer only wakes the loop up; before_sleep does the work. */
static void on_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
}

/* ---- control requests ---------------------------------------------------------- */

enum control_result replication_answer_bulk(struct control_request *req, void *arg)
{
	struct replication *r = arg;

	if (alarm_refuses(r, req))
		return CONTROL_DONE;
	ftfw_bulk(r->engine);
	if (cache_internal_disabled(r->cache))
		control_request_printf(req, "bulk send of the kernel table started (DisableInternalCache)\n");
	else
		control_request_printf(req, "bulk send of %u states started\n",
				       flow_table_count(cache_internal(r->cache)));
	return CONTROL_DONE;
}

enum control_result replication_answer_resync(struct control_request *req, void *arg)
{
	struct replication *r = arg;

	if (alarm_refuses(r, req))
		return CONTROL_DONE;
	ftfw_request_resync(r->engine);
	control_request_printf(req, "resynchronisation requested from the peer\n");
	return CONTROL_DONE;
}

static void report_sync(struct replication *r, struct report *rep)
{
	struct ftfw_stats st;
	uint64_t malformed = 0;

	ftfw_stats(r->engine, &st);
	for (unsigned i = 0; i < WIRE_R_MAX; i++)
		malformed += st.malformed[i];
	report_begin(rep, "sync");
	report_info(rep, "mode", config_mode_name(r->cfg->sync.mode));
	report_counter(rep, "messages_sent", st.msg_sent, "Sync messages sent, data and control.");
	report_counter(rep, "bytes_sent", st.bytes_sent, "Bytes of the sync messages sent.");
	report_counter(rep, "messages_received", st.msg_recv, "Sync messages received.");
	report_counter(rep, "bytes_received", st.bytes_recv, "Bytes of the sync messages received.");
	report_counter(rep, "states_sent", st.data_sent,
		       "State messages sent, first transmissions and retransmissions.");
	report_counter(rep, "states_received", st.data_recv, "State messages received and decoded.");
	report_counter(rep, "retransmitted", st.retransmitted, "State messages sent again.");
	report_counter(rep, "ack_sent", st.ack_sent, "ACK messages sent.");
	report_counter(rep, "ack_received", st.ack_recv, "ACK messages received.");
	report_counter(rep, "nack_sent", st.nack_sent, "NACK messages sent (a gap was seen).");
	report_counter(rep, "nack_received", st.nack_recv, "NACK messages received.");
	report_counter(rep, "nack_resends_held", st.nack_held,
		       "Resends a NACK asked for too soon after the last, held back.");
	report_counter(rep, "nack_of_acknowledged", st.nack_acked,
		       "Messages a NACK named that the peer had acknowledged already.");
	report_counter(rep, "resync_sent", st.resync_sent, "RESYNC requests sent to the peer.");
	report_counter(rep, "resync_received", st.resync_recv, "RESYNC requests received from the peer.");
	report_counter(rep, "bulk_walks", st.bulk_walks, "Walks of the internal cache to send it all.");
	report_counter(rep, "bulk_requests_coalesced", st.bulk_coalesced,
		       "Requests for a bulk send folded into a walk already due.");
	report_counter(rep, "retransmission_timeouts", st.rto_rounds,
		       "Retransmission timeouts that fired.");
	report_counter(rep, "retransmission_probes", st.rto_probes,
		       "Messages a timeout resent as a probe: only silent peers lacked them.");
	report_counter(rep, "hello_resends", st.hello_resends,
		       "Messages sent during the HELLO handshake and sent again once it completed.");
	report_counter(rep, "hello_gap_resyncs", st.hello_gap_resyncs,
		       "RESYNC requests sent after a loss during our HELLO.");
	report_counter(rep, "sequence_lost", st.seq_lost, "Sequence numbers of the peer never received.");
	report_counter(rep, "sequence_before", st.seq_before,
		       "Old or duplicate messages of the peer dropped.");
	report_counter(rep, "peer_restarts", st.peer_restarts, "Restarts of the peer seen.");
	report_counter(rep, "peer_space_switches", st.space_switches,
		       "Switches of the peer between two sequence spaces.");
	report_counter(rep, "dels_dropped_peer_gone", st.dels_dropped,
		       "Deletions dropped unsent or unacknowledged because every peer was gone.");
	if (r->cfg->sync.mode == CONFIG_MODE_ALARM) {
		report_counter(rep, "refreshes", st.refreshes, "ALARM refresh timers that fired.");
		report_counter(rep, "flagged_ignored", st.flagged_ignored,
			       "Messages with flags received in ALARM mode, ignored.");
	}
	report_counter(rep, "malformed", malformed, "Malformed sync messages dropped, for any reason.");
	report_counter(rep, "datagrams_received", r->datagrams, "Datagrams received on the sync links.");
	report_counter(rep, "datagrams_from_untracked_peers", r->unknown_peers,
		       "Datagrams dropped because their sender is not a peer being tracked.");
	report_end(rep);
}

unsigned replication_peers(struct replication *r, struct health_peer *out, unsigned max)
{
	uint64_t now = loop_now_ms(r->loop), uptime = now - r->started_ms;
	bool mcast = r->cfg->sync.links[0].kind == CONFIG_LINK_MCAST;
	struct timespec wall;
	uint64_t wall_ms;
	unsigned n = 0;

	clock_gettime(CLOCK_REALTIME, &wall);
	wall_ms = (uint64_t)wall.tv_sec * 1000u + (uint64_t)wall.tv_nsec / 1000000u;
	for (unsigned i = 0; i < FTFW_PEERS_MAX && n < max; i++) {
		struct health_peer *p = &out[n];
		struct ftfw_peer_stats ps;

		if (mcast ? !r->peers[i].used : i > 0)
			break;
		ftfw_peer_stats(r->engine, i, &ps);
		memset(p, 0, sizeof(*p));
		peer_name(r, i, p->addr, sizeof(p->addr));
		p->heard = ps.known;
		p->messages = ps.msg_recv;
		p->restarts = ps.restarts;
		p->downs = ps.downs;
		p->ups = ps.ups;
		if (ps.known) {
			p->state = ps.lost ? HEALTH_PEER_DOWN : HEALTH_PEER_UP;
			p->silent_ms = now > ps.last_heard ? now - ps.last_heard : 0;
			p->last_heard_unix_ms = wall_ms > p->silent_ms ? wall_ms - p->silent_ms : 0;
			p->state_ms = now > ps.state_since ? now - ps.state_since : 0;
		} else {
			p->state = uptime >= r->peer_timeout_ms ? HEALTH_PEER_DOWN : HEALTH_PEER_WAITING;
			p->silent_ms = uptime;
			p->state_ms = uptime;
		}
		/* Down because never heard since our start, then up: a transition each way. */
		if (!mcast && r->unheard_logged) {
			p->downs++;
			if (ps.known)
				p->ups++;
		}
		n++;
	}
	return n;
}

void replication_health(struct replication *r, struct health_facts *f)
{
	uint64_t now = loop_now_ms(r->loop);

	f->multicast = r->cfg->sync.links[0].kind == CONFIG_LINK_MCAST;
	f->ftfw = r->cfg->sync.mode == CONFIG_MODE_FTFW;
	f->peer_timeout_ms = r->peer_timeout_ms;
	f->uptime_ms = now - r->started_ms;
	f->npeers = replication_peers(r, f->peers, HEALTH_PEERS_MAX);
	f->backlog_ms = ftfw_backlog_ms(r->engine, now);
}

static void report_peers(struct replication *r, struct report *rep)
{
	struct health_peer peers[HEALTH_PEERS_MAX];
	unsigned n = replication_peers(r, peers, HEALTH_PEERS_MAX);
	uint32_t by_origin[CACHE_ORIGIN_MAX + 1];
	bool mcast = r->cfg->sync.links[0].kind == CONFIG_LINK_MCAST;

	cache_external_by_origin(r->cache, by_origin);
	/* replication_peers() lists peer ids in order from 0: peers[i] is id i. */
	for (unsigned i = 0; i < n; i++) {
		struct ftfw_peer_stats ps;

		ftfw_peer_stats(r->engine, i, &ps);
		peers[i].detail = true;
		peers[i].member = ps.member;
		peers[i].last_seq = ps.last_seq;
		peers[i].seq_lost = ps.seq_lost;
		peers[i].unacked = ps.member ? ftfw_peer_unacked(r->engine, i) : 0;
		/* With one peer, states from before its address was known are its too. */
		peers[i].external_states = by_origin[i + 1] + (mcast ? 0 : by_origin[0]);
	}
	control_report_peers(rep, peers, n);
}

/* What -s network shows beyond the sync section: malformed messages by reason, the envelope, the links. */
static void report_network_details(struct replication *r, struct report *rep)
{
	struct ftfw_stats st;
	char help[160];

	ftfw_stats(r->engine, &st);
	report_begin(rep, "malformed");
	for (unsigned i = 1; i < WIRE_R_MAX; i++) {
		snprintf(help, sizeof(help), "Malformed sync messages dropped as %s.", wire_reason_key(i));
		report_counter(rep, wire_reason_key(i), st.malformed[i], help);
	}
	report_end(rep);
	sealing_report(r->sealing, rep);
	control_report_link_group(rep, r->links);
}

static void report_queues(struct replication *r, struct report *rep)
{
	struct ftfw_stats st;

	ftfw_stats(r->engine, &st);
	report_begin(rep, "queues");
	report_gauge(rep, "tx_queue", st.txq_len, "States waiting for their first transmission.");
	report_gauge(rep, "retransmission_queue", st.retxq_len, "States waiting for a retransmission.");
	report_gauge(rep, "in_flight", st.inflight, "Messages sent and not acknowledged yet.");
	report_gauge(rep, "in_flight_max", st.inflight_max,
		     "Messages in flight at most (ResendQueueSize).");
	report_gauge(rep, "in_flight_peak", st.inflight_peak, "Most messages in flight at once so far.");
	report_counter(rep, "flow_control_stalls", st.flow_control_stalls,
		       "Times sending stopped because the window was full.");
	report_flag(rep, "bulk_running", st.bulk_running, "1 while a bulk send walks the internal cache.");
	report_flag(rep, "bulk_waiting", st.bulk_waiting,
		    "1 while a peer's bulk request waits for the spacing between walks.");
	report_flag(rep, "resync_outstanding", st.resync_outstanding,
		    "1 while a RESYNC request of ours waits for the peer's states.");
	report_flag(rep, "idle", ftfw_idle(r->engine), "1 when nothing waits to be sent or acknowledged.");
	if (r->cfg->sync.mode == CONFIG_MODE_ALARM)
		report_gauge(rep, "refresh_timers", st.refresh_timers,
			     "States waiting for their ALARM refresh.");
	report_end(rep);
}

/* ---- conntrackd 1.4.7's text (control/compat_report.h) ------------------------------ */

static bool count_rsq_control(void *arg, const struct ftfw_rsq_entry *ent)
{
	uint64_t *n = arg;

	if (ent->handle == 0)
		(*n)++;
	return true;
}

void replication_compat_facts(struct replication *r, struct compat_sync *out)
{
	struct link_info links[CONFIG_MAX_LINKS];
	struct link_channel_info channel;
	struct ftfw_stats st;
	unsigned n = link_group_info(r->links, links, &channel);

	memset(out, 0, sizeof(*out));
	out->ftfw = r->cfg->sync.mode == CONFIG_MODE_FTFW;
	out->nlinks = n;
	out->active = channel.active;
	for (unsigned i = 0; i < n; i++) {
		const struct link_info *l = &links[i];
		struct compat_link *c = &out->links[i];

		*c = (struct compat_link){
			.kind = l->kind,
			.status = l->status,
			.active = l->active,
			.tcp_server_connected = l->tcp_server_connected,
			.tcp_client_connected = l->tcp_client_connected,
			.bytes_sent = l->stats.bytes_sent,
			.bytes_recv = l->stats.bytes_recv,
			.packets_sent = l->stats.packets_sent,
			.packets_recv = l->stats.packets_recv,
			.errors_sent = l->stats.errors_sent,
			.errors_recv = l->stats.errors_recv,
		};
		memcpy(c->ifname, l->ifname, sizeof(c->ifname));
	}
	ftfw_stats(r->engine, &st);
	for (unsigned i = 1; i < WIRE_R_MAX; i++) {
		uint64_t k = st.malformed[i];

		out->malformed += k;
		switch (wire_reason_counter((enum wire_reason)i)) {
		case WIRE_C_WRONG_VERSION:
			out->wrong_version += k;
			break;
		case WIRE_C_BAD_HEADER:
			out->bad_header += k;
			break;
		case WIRE_C_BAD_PAYLOAD:
			out->bad_payload += k;
			break;
		case WIRE_C_BAD_TYPE:
			out->bad_type += k;
			break;
		case WIRE_C_TRUNCATED:
			out->truncated += k;
			break;
		case WIRE_C_BAD_SIZE:
			out->bad_size += k;
			break;
		case WIRE_C_NONE:
		case WIRE_C_MAX:
			break;
		}
	}
	out->send_malformed = st.tx_refused;
	out->seq_lost = st.seq_lost;
	out->seq_before = st.seq_before;
	/*
	 * The queues.  The transmit queues hold each state at most once and
	 * have no limit of their own: INT_MAX, as 1.4.7 shows its unbounded
	 * txqueue.  ctsyncd has no error queue.  A full resend window stalls
	 * sending instead of refusing: the stalls are the "not enough space"
	 * of the resend queue.  Its nodes are the control messages in it (the
	 * states are not copied into it).
	 */
	out->txq_len = (uint64_t)st.txq_len + st.retxq_len;
	out->txq_max = INT32_MAX;
	out->rsq_len = st.inflight;
	out->rsq_max = st.inflight_max;
	out->rsq_full = st.flow_control_stalls;
	if (out->ftfw)
		ftfw_rsqueue_foreach(r->engine, count_rsq_control, &out->queue_nodes);
}

static bool rsq_line(void *arg, const struct ftfw_rsq_entry *ent)
{
	struct compat_rsq_entry e = {
		.seq = ent->seq,
		.control = ent->handle == 0,
		.flags = ent->flags,
	};

	compat_rsqueue_entry(arg, &e);
	return !((struct compat_text *)arg)->failed;
}

static void answer_compat(struct replication *r, struct control_request *req)
{
	struct compat_text t = { 0 };
	struct compat_sync facts;
	struct ftfw_stats st;

	replication_compat_facts(r, &facts);
	switch (control_request_code(req)) {
	case CTL_STATS_NETWORK:
		compat_network(&t, &facts);
		break;
	case CTL_STATS_LINK:
		compat_links(&t, &facts);
		break;
	case CTL_STATS_QUEUE:
		compat_queue(&t, &facts);
		break;
	default: /* rsqueue: FTFW's alone; NOTRACK and ALARM show nothing, as 1.4.7 */
		if (!facts.ftfw)
			break;
		ftfw_stats(r->engine, &st);
		compat_rsqueue_head(&t, st.inflight);
		ftfw_rsqueue_foreach(r->engine, rsq_line, &t);
		break;
	}
	if (t.failed) {
		control_request_printf(req, "ctsyncd: out of memory while building statistics\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
	} else if (t.len > 0) {
		control_request_write(req, t.p, t.len);
	}
	compat_text_free(&t);
}

enum control_result replication_answer_stats(struct control_request *req, void *arg)
{
	struct replication *r = arg;
	struct report *rep;
	const char *text;
	size_t len;

	if (control_request_compat(req)) {
		answer_compat(r, req);
		return CONTROL_DONE;
	}
	rep = report_new(control_request_format(req));
	if (!rep) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	switch (control_request_code(req)) {
	case CTL_STATS_NETWORK:
		report_sync(r, rep);
		report_peers(r, rep);
		report_network_details(r, rep);
		break;
	case CTL_STATS_LINK:
		control_report_link_group(rep, r->links);
		break;
	default: /* rsqueue, queue */
		report_queues(r, rep);
		break;
	}
	text = report_finish(rep, &len);
	if (text) {
		control_request_write(req, text, len);
	} else {
		control_request_printf(req, "ctsyncd: out of memory while building statistics\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
	}
	report_free(rep);
	return CONTROL_DONE;
}

void replication_report(struct replication *r, struct report *rep, bool everything)
{
	report_sync(r, rep);
	report_peers(r, rep);
	if (everything)
		report_network_details(r, rep);
	report_queues(r, rep);
	if (r->confirm)
		confirm_report(r->confirm, rep);
}

/* ---- life ---------------------------------------------------------------------------- */

/*
 * A peer silent for 30 s (30 missed ALIVEs) is gone: nothing waits for
 * it, dead entries do not pile up waiting for its ACKs, and when it
 * returns it is brought to exactly our table.
 */

/* The engine's settings that follow the configuration (at start and on reload). */
static void engine_config(const struct config *cfg, struct ftfw_config *fc)
{
	fc->mode = cfg->sync.mode == CONFIG_MODE_NOTRACK ? FTFW_MODE_NOTRACK :
		   cfg->sync.mode == CONFIG_MODE_ALARM ? FTFW_MODE_ALARM : FTFW_MODE_FTFW;
	fc->resend_queue_size = cfg->sync.resend_queue_size;
	fc->ack_window = cfg->sync.ack_window_size;
	/* UDPlite ports too: 1.4.7 accepts them, and its keys become complete. */
	fc->enc_opts = WIRE_ENC_UDPLITE_PORTS |
		       (cfg->sync.commit_timeout ? 0 : WIRE_ENC_TIMEOUT) |
		       (cfg->sync.tcp_window_tracking ? WIRE_ENC_WSCALE : 0);
	fc->refresh_time_s = cfg->sync.refresh_time;
	fc->peer_timeout_ms = cfg->sync.peer_timeout_ms ? cfg->sync.peer_timeout_ms :
			      CONFIG_DEFAULT_PEER_TIMEOUT * 1000u;
	fc->alive_ms = cfg->sync.alive_interval_ms;
}

int replication_reload_keys(struct replication *r, const struct config_sync *s)
{
	if (!r->sealing)
		return -EINVAL;
	return sealing_reload(r->sealing, s);
}

int replication_apply_config(struct replication *r, unsigned apply)
{
	struct ftfw_config fc = { 0 };
	int err, failed = 0;

	if (apply & CONFIG_APPLY_SYNC) {
		engine_config(r->cfg, &fc);
		err = ftfw_reconfigure(r->engine, &fc);
		if (err < 0) {
			log_error("sync: cannot apply the new ResendQueueSize %u: %s; the engine keeps its "
				  "settings", fc.resend_queue_size, strerror(-err));
			failed++;
		} else {
			r->peer_timeout_ms = fc.peer_timeout_ms;
		}
		if (r->confirm && confirm_reconfigure(r->confirm, &r->cfg->sync) < 0)
			failed++;
	}
	if (apply & CONFIG_APPLY_LINKS)
		link_group_set_event_limit(r->links, r->cfg->general.event_iteration_limit);
	return failed;
}

int replication_start(struct replication **out, const struct config *cfg, struct loop *loop,
		      struct cache *caches)
{
	static const struct ftfw_ops ops = {
		.emit = emit, .apply = apply, .apply_exp = apply_exp, .prefetch = prefetch,
		.dead_acked = dead_acked, .peer_event = peer_event, .peer_reset = peer_reset,
		.acked = acked,
	};
	static const struct ftfw_ops ops_no_exp = {
		.emit = emit, .apply = apply, .prefetch = prefetch, .dead_acked = dead_acked,
		.peer_event = peer_event, .peer_reset = peer_reset, .acked = acked,
	};
	struct ftfw_ops bypass_ops;
	struct ftfw_config fc = { 0 };
	struct link_group_params lp = {
		.sync = &cfg->sync,
		.event_iteration_limit = cfg->general.event_iteration_limit,
		.on_receive = on_receive,
		.frame_len = wire_frame_len,
		.frame_valid = wire_frame_valid,
	};
	struct cache_listener listener = {
		.changed = on_local_change, .forget = on_local_forget, .loaded = on_local_loaded,
		.want_resync = on_want_resync, .send = on_local_send, .bulk = on_want_bulk,
	};
	const struct ftfw_ops *engine_ops = cache_exp_internal(caches) ? &ops : &ops_no_exp;
	struct replication *r;
	uint32_t salt = 0, seq;
	int err;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	engine_config(cfg, &fc);
	r->cfg = cfg;
	r->loop = loop;
	r->cache = caches;
	lp.arg = r;
	/*
	 * Like 1.4.7 the first sequence number comes from the clock, salted so
	 * that a restart within the same second, or nodes of a multicast
	 * group started together, never share a sequence space (sync.h).
	 */
	if (getrandom(&salt, sizeof(salt), GRND_NONBLOCK) != sizeof(salt))
		salt = (uint32_t)getpid();
	seq = ftfw_initial_seq((uint32_t)time(NULL), salt);
	/* ALARM's refresh intervals: the engine's PRNG, seeded here (sync.h). */
	if (getrandom(&fc.random_seed, sizeof(fc.random_seed), GRND_NONBLOCK) != sizeof(fc.random_seed))
		fc.random_seed = ((uint64_t)salt << 32) ^ (uint64_t)time(NULL);
	/*
	 * A peer silent for PeerTimeout (30 s: 30 missed ALIVEs) is gone:
	 * nothing waits for it, dead entries do not pile up waiting for its
	 * ACKs, and when it returns it is brought to exactly our table.
	 */
	r->peer_timeout_ms = fc.peer_timeout_ms;
	r->started_ms = loop_now_ms(loop);
	err = sealing_start(&r->sealing, &cfg->sync);
	if (err < 0) {
		free(r);
		return err;
	}
	if (r->sealing)
		sealing_link_params(&lp, seal);
	err = link_group_open(&r->links, loop, &lp);
	if (err < 0) {
		log_error("cannot open the sync links: %s", strerror(-err));
		sealing_stop(r->sealing);
		free(r);
		return err;
	}
	if (r->sealing)
		sealing_set_links(r->sealing, r->links);
	/* Without ExpectationSync the peer's expectations are counted and ignored (as 1.4.7 does). */
	/* DisableInternalCache: a bulk walks the kernel table, through the cache. */
	if (cache_internal_disabled(caches)) {
		bypass_ops = *engine_ops;
		bypass_ops.bulk_begin = bulk_begin;
		bypass_ops.bulk_pull = bulk_pull;
		engine_ops = &bypass_ops;
	}
	err = ftfw_new(&fc, engine_ops, r, cache_internal(caches), seq, loop_now_ms(loop), &r->engine);
	if (err == 0 && cache_exp_internal(caches))
		err = ftfw_attach_expectations(r->engine, cache_exp_internal(caches));
	if (err == 0) {
		r->timer = loop_timer_new(loop, on_timer, r);
		if (!r->timer)
			err = -ENOMEM;
	}
	if (err == 0)
		err = loop_before_sleep(loop, before_sleep, r);
	if (err < 0) {
		log_error("cannot start the sync engine: %s", strerror(-err));
		replication_stop(r);
		return err;
	}
	listener.arg = r;
	cache_set_listener(caches, &listener);
	cache_set_origin_resolver(caches, origin_of, r);
	if (cache_exp_internal(caches)) {
		struct cache_exp_listener xl = { .changed = on_exp_change, .forget = on_exp_forget, .arg = r };

		cache_set_exp_listener(caches, &xl);
	}
	if (cfg->sync.startup_resync)
		ftfw_request_resync(r->engine);
	if (cfg->sync.confirm_queue >= 0 &&
	    (err = confirm_start(&r->confirm, &cfg->sync, loop, caches, r->engine)) < 0) {
		replication_stop(r);
		return err;
	}
	*out = r;
	return 0;
}

void replication_stop(struct replication *r)
{
	struct cache_listener none = { 0 };

	if (!r)
		return;
	if (r->engine && r->links) {
		/* What is already queued for the link goes out before we leave. */
		link_group_flush(r->links);
	}
	confirm_stop(r->confirm);
	cache_set_listener(r->cache, &none);
	if (r->cache)
		cache_set_origin_resolver(r->cache, NULL, NULL);
	ftfw_free(r->engine);
	link_group_close(r->links);
	sealing_stop(r->sealing);
	loop_timer_free(r->timer);
	free(r);
}
