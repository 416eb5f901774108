/*
 * ftfw.c - the sender side of FTFW (and NOTRACK): queues to the wire,
 * the timers, statistics (ACK and NACK of our messages: ack.c; bulk
 * walks: bulk.c).
 *
 * Section numbers refer to doc/protocol.md.
 * Where we differ from 1.4.7 on purpose, the comment says so and why the
 * peer cannot tell; doc/protocol.md §7.1 numbers every such deviation.
 */
#include "ftfw_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The longest a RESYNC request or a bulk send waits for the end of our HELLO (ftfw_hello_holds()). */
#define HELLO_HOLD_MS   5000u
static uint8_t hello_flags(struct ftfw *e)
{
	uint8_t f = 0;

	if (e->notrack)
		return 0;       /* protocol.md §4: NOTRACK has no HELLO */
	if (e->hello_phase)
		f |= WIRE_F_HELLO;
	if (e->hello_back_pending)
		f |= WIRE_F_HELLO_BACK;
	return f;
}

/* Every message goes out here: it takes the next sequence number (protocol.md §3.2). */
static void emit_msg(struct ftfw *e, const void *msg, size_t len, uint8_t flags, uint64_t now)
{
	e->ops.emit(e->arg, msg, len);
	e->seq++;
	e->last_tx = max_u64(e->last_tx, now);
	e->alive_now = false;
	if (flags & WIRE_F_HELLO)
		e->last_hello_tx = now;
	if (flags & WIRE_F_HELLO_BACK)
		e->hello_back_pending = false;
	e->st.msg_sent++;
	e->st.bytes_sent += len;
}

void ftfw_emit_ctl(struct ftfw *e, uint8_t flags, uint32_t from, uint32_t to, uint64_t now)
{
	uint8_t buf[WIRE_CTL_RANGE_LEN];
	int n;

	/*
	 * Deviation 16: no HELLO on an ACK or a NACK.  1.4.7 empties its
	 * resend queue at every HELLO it hears (protocol.md §3.6), so a NACK that
	 * said HELLO would empty the queue it asks from: when the peer's
	 * HELLO_BACK is lost, the states lost in its bulk answer to our
	 * RESYNC were never sent again.  Our data, RESYNC and ALIVE messages
	 * say HELLO, and an ALIVE goes at least once a second while the
	 * handshake lasts (ftfw_tick()).  HELLO_BACK goes on anything.
	 */
	if (flags & (WIRE_F_ACK | WIRE_F_NACK))
		flags |= hello_flags(e) & ~WIRE_F_HELLO;
	else
		flags |= hello_flags(e);
	n = wire_ctl_encode(buf, sizeof(buf), flags, e->seq, from, to);
	if (n < 0)
		return;         /* cannot happen: our flags are valid */
	if (flags & WIRE_F_ACK)
		e->st.ack_sent++;
	else if (flags & WIRE_F_NACK)
		e->st.nack_sent++;
	else if (flags & WIRE_F_RESYNC)
		e->st.resync_sent++;
	else
		e->st.alive_sent++;
	emit_msg(e, buf, (size_t)n, flags, now);
}

/* ---- creation ---------------------------------------------------------------------- */

uint32_t ftfw_initial_seq(uint32_t time_s, uint32_t salt)
{
	uint32_t z = salt * 0x85ebca6bu;

	z ^= z >> 13;
	/* Multiplying by an odd constant is a bijection; the golden ratio spreads neighbours. */
	return (time_s * 0x9e3779b1u) ^ z;
}

int ftfw_new(const struct ftfw_config *cfg, const struct ftfw_ops *ops, void *arg,
	     struct flow_table *internal, uint32_t initial_seq, uint64_t now,
	     struct ftfw **out)
{
	struct ftfw_config c = *cfg;
	struct ftfw *e;
	uint32_t cursor = 0, h;
	int ret;

	if (!ops->emit || !ops->apply || !ops->dead_acked || !internal || !ops->bulk_begin != !ops->bulk_pull)
		return -EINVAL;
	if (c.mode != FTFW_MODE_FTFW && c.mode != FTFW_MODE_NOTRACK && c.mode != FTFW_MODE_ALARM)
		return -EINVAL;
	if (!c.resend_queue_size)
		c.resend_queue_size = FTFW_DEFAULT_RESEND_QUEUE_SIZE;
	if (!c.ack_window)
		c.ack_window = FTFW_DEFAULT_ACK_WINDOW;
	if (!c.rto_ms)
		c.rto_ms = FTFW_DEFAULT_RTO_MS;
	if (!c.rto_max_ms)
		c.rto_max_ms = FTFW_DEFAULT_RTO_MAX_MS;
	if (c.rto_max_ms < c.rto_ms)
		c.rto_max_ms = c.rto_ms;
	if (!c.refresh_time_s)
		c.refresh_time_s = ALARM_DEFAULT_REFRESH_S;
	if (!c.alive_ms || c.alive_ms > FTFW_TIMER_MS)
		c.alive_ms = FTFW_TIMER_MS;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = c;
	e->ops = *ops;
	e->arg = arg;
	e->t = internal;
	e->notrack = c.mode != FTFW_MODE_FTFW;
	e->alarm = c.mode == FTFW_MODE_ALARM;
	e->refresh_s = c.refresh_time_s;
	e->seq = initial_seq;
	e->now = now;
	e->last_tx = now;
	e->progress_at = now;
	e->last_hello_tx = now;
	e->hello_phase = !e->notrack;
	e->hello_since = now;
	/*
	 * Deviation 15: 1.4.7 says its first HELLO (0x30) a timer period
	 * after it starts, and answers a HELLO on its next message, up to a
	 * period later (protocol.md §3.6); what it sends meanwhile goes out flagged
	 * HELLO, which costs us a second copy (deviation 14).  We say HELLO
	 * at once, and answer the first HELLO of a peer at once (rx.c), so
	 * that between two ctsyncd the handshake takes a round trip.
	 */
	e->alive_now = e->hello_phase;
	e->rto = c.rto_ms;
	ret = ftfw_ring_alloc(e, e->notrack ? 1 : c.resend_queue_size > (1u << 30) ? 1u << 31 :
			      2 * c.resend_queue_size);
	if (ret == 0 && e->alarm)
		ret = ftfw_alarm_init(e, now);
	if (ret < 0) {
		ftfw_free(e);
		return ret;
	}
	/* Entries already in the table: whatever their user area held is not our state. */
	while ((h = flow_table_next(internal, &cursor)) != 0) {
		struct ftfw_link *l = ftfw_link_of(e, h);

		if (!l) {
			ftfw_free(e);
			return -EINVAL;         /* no user area */
		}
		memset(l, 0, sizeof(*l));
		/* ALARM: what the table holds is refreshed too; a dead entry's DEL goes first. */
		if (e->alarm) {
			if (flow_table_flags(internal, h) & FLOW_ENTRY_DEAD)
				ftfw_q_append(e, Q_TX, h, l);
			else
				ftfw_alarm_arm(e, h, l, now);
		}
	}
	*out = e;
	return 0;
}

int ftfw_reconfigure(struct ftfw *e, const struct ftfw_config *cfg)
{
	uint32_t rqs = cfg->resend_queue_size ? cfg->resend_queue_size : FTFW_DEFAULT_RESEND_QUEUE_SIZE;
	uint32_t slots = rqs > (1u << 30) ? 1u << 31 : 2 * rqs;

	if (cfg->mode != e->cfg.mode)
		return -EINVAL;
	/* The ring must stay twice the in-flight span, so that no two messages share a slot. */
	if (!e->notrack && slots > e->ring_mask + 1) {
		uint32_t *old = e->ring, h;

		if (ftfw_ring_alloc(e, slots) < 0) {
			e->ring = old;
			return -ENOMEM;
		}
		for (h = e->q[Q_RS].head; h; h = ftfw_link_of(e, h)->next)
			e->ring[ftfw_link_of(e, h)->seq & e->ring_mask] = h;
		free(old);
	}
	e->cfg.resend_queue_size = rqs;
	e->cfg.ack_window = cfg->ack_window ? cfg->ack_window : FTFW_DEFAULT_ACK_WINDOW;
	e->cfg.enc_opts = cfg->enc_opts;
	e->cfg.refresh_time_s = cfg->refresh_time_s ? cfg->refresh_time_s : ALARM_DEFAULT_REFRESH_S;
	e->refresh_s = e->cfg.refresh_time_s;
	e->cfg.peer_timeout_ms = cfg->peer_timeout_ms;
	e->cfg.alive_ms = cfg->alive_ms && cfg->alive_ms < FTFW_TIMER_MS ? cfg->alive_ms : FTFW_TIMER_MS;
	return 0;
}

void ftfw_free(struct ftfw *e)
{
	if (!e)
		return;
	ftfw_alarm_free(e);
	free(e->ring);
	free(e);
}

/* ---- the internal table -------------------------------------------------------------- */

int ftfw_flow_changed(struct ftfw *e, uint32_t h)
{
	struct ftfw_link *l = ftfw_link_of(e, h);

	if (!l)
		return -ENOENT;
	/* A life that may follow this death starts with CT_NEW (flow_type()). */
	if (ftfw_entry_flags(e, h) & FLOW_ENTRY_DEAD)
		l->life_acked = 0;
	if (e->nobody && !e->alarm) {
		/* Every peer is gone: it gets our whole table when it returns (ack.c). */
		ftfw_forget_for_nobody(e, h);
		return 0;
	}
	switch (l->queue) {
	case Q_TX:
	case Q_RETX:
		/* Already waiting: its current state is what will go out (protocol.md §3.2). */
		break;
	case Q_RS:
		/*
		 * In flight with an older state: protocol.md §3.2 moves it to the tx queue.
		 * The old message is abandoned; if it arrives, the new one,
		 * later in sequence, overwrites it at the peer.
		 */
	case Q_NONE:
	case Q_WHEEL:
		/* ALARM: a change is sent at once, and its transmission re-arms the timer. */
		ftfw_q_move(e, Q_TX, h, l);
		break;
	}
	return 0;
}

int ftfw_flow_loaded(struct ftfw *e, uint32_t h)
{
	struct ftfw_link *l = ftfw_link_of(e, h);

	if (!l)
		return -ENOENT;
	l->life_acked = 0;              /* the peer may hold our previous process's copy */
	if (e->alarm && l->queue == Q_NONE && !(ftfw_entry_flags(e, h) & FLOW_ENTRY_DEAD))
		ftfw_alarm_arm(e, h, l, e->now);
	return 0;
}

void ftfw_flow_forget(struct ftfw *e, uint32_t h)
{
	struct ftfw_link *l = ftfw_link_of(e, h);

	if (l)
		ftfw_q_unlink(e, h, l);
}

int ftfw_attach_expectations(struct ftfw *e, struct exp_table *x)
{
	uint32_t cursor = 0, h;

	e->xt = x;
	while ((h = exp_table_next(x, &cursor)) != 0) {
		struct ftfw_link *l = exp_table_user(x, h);

		if (!l) {
			e->xt = NULL;
			return -EINVAL;
		}
		memset(l, 0, sizeof(*l));
	}
	return 0;
}

int ftfw_exp_changed(struct ftfw *e, uint32_t xh)
{
	return ftfw_flow_changed(e, xh | FTFW_EXP_HANDLE);
}

void ftfw_exp_forget(struct ftfw *e, uint32_t xh)
{
	ftfw_flow_forget(e, xh | FTFW_EXP_HANDLE);
}

void ftfw_forget_all(struct ftfw *e)
{
	for (int q = Q_TX; q < Q_COUNT; q++)
		while (e->q[q].head) {
			uint32_t h = e->q[q].head;

			ftfw_q_unlink(e, h, ftfw_link_of(e, h));
		}
	ftfw_alarm_forget_all(e);
	e->bulk = false;
	e->bulk_exp = false;
	e->bulk_cursor = 0;
}

/* ---- transmission ------------------------------------------------------------------ */

/*
 * protocol.md §3.2: the type comes from the object's status at transmit time.
 * Deviation 19: CT_NEW, not CT_UPD, until a message of the flow's present
 * life has been acknowledged.  The peer may hold a copy of an earlier life
 * (deleted and created again before our DEL arrived, or deleted while we
 * were down, or our previous process's copy), and 1.4.7 lays a CT_UPD
 * over what it has: an attribute the new life lacks (labels, synproxy,
 * NAT, mark) would stay.  CT_NEW replaces the entry.  In NOTRACK and
 * ALARM a message sent counts as acknowledged.
 */
static uint8_t flow_type(unsigned flags, const struct ftfw_link *l)
{
	if (flags & FLOW_ENTRY_DEAD)
		return WIRE_T_CT_DEL;
	if ((flags & FLOW_ENTRY_UPDATED) && l && l->life_acked)
		return WIRE_T_CT_UPD;
	return WIRE_T_CT_NEW;
}

/* An expectation's message: the same rule, the EXP_* types (protocol.md §2.3). */
static int encode_exp(struct ftfw *e, uint32_t h, struct wire_hdr *hdr, unsigned flags)
{
	const struct flow_exp *x = e->xt ? exp_table_get(e->xt, h & ~FTFW_EXP_HANDLE) : NULL;

	if (!x)
		return -ENOENT;
	hdr->type = (uint8_t)(flow_type(flags, ftfw_link_of(e, h)) - WIRE_T_CT_NEW + WIRE_T_EXP_NEW);
	return wire_exp_encode(e->buf, sizeof(e->buf), hdr, x, e->cfg.enc_opts, NULL);
}

static int encode_flow(struct ftfw *e, uint32_t h, uint8_t hflags, uint32_t seq, unsigned *eflags)
{
	struct wire_hdr hdr = { 0 };

	*eflags = ftfw_entry_flags(e, h);
	hdr.flags = hflags;
	hdr.seq = seq;
	if (ftfw_is_exp(h))
		return encode_exp(e, h, &hdr, *eflags);
	if (flow_table_export(e->t, h, &e->txflow) < 0)
		return -ENOENT;
	hdr.type = flow_type(*eflags, ftfw_link_of(e, h));
	return wire_ct_encode(e->buf, sizeof(e->buf), &hdr, &e->txflow,
			      e->cfg.enc_opts | (hdr.type == WIRE_T_CT_DEL ? WIRE_ENC_KEY_ONLY : 0), NULL);
}

int ftfw_msg_size(struct ftfw *e, uint32_t h)
{
	if (ftfw_is_exp(h)) {
		const struct flow_exp *x = e->xt ? exp_table_get(e->xt, h & ~FTFW_EXP_HANDLE) : NULL;

		return x ? wire_exp_size(x, e->cfg.enc_opts) : -ENOENT;
	}
	if (flow_table_export(e->t, h, &e->txflow) < 0)
		return -ENOENT;
	return wire_ct_size(&e->txflow, e->cfg.enc_opts | (flow_table_flags(e->t, h) & FLOW_ENTRY_DEAD ?
							    WIRE_ENC_KEY_ONLY : 0));
}

/* Room for one more data message in flight? (Deviation 3: flow control, not dropping.) */
static bool window_open(const struct ftfw *e)
{
	if (e->notrack)
		return true;
	return e->q[Q_RS].len < e->cfg.resend_queue_size;
}

/*
 * A bulk walk fills the window only up to 7/8: the rest is kept for the
 * changes of live flows (the TX queue) and for retransmissions, so that
 * a takeover's table, larger than the window, never holds new flows
 * back behind it while the peers acknowledge.
 */
bool ftfw_bulk_room(const struct ftfw *e)
{
	uint32_t rqs = e->cfg.resend_queue_size;

	if (e->notrack)
		return true;
	return e->q[Q_RS].len + e->q[Q_TX].len + e->q[Q_RETX].len < rqs - rqs / 8u;
}

/*
 * The ring slot of the next sequence number must be free (queue.c).  If
 * it still holds a message sent a whole ring of numbers ago, that one
 * was lost or its ACK was: send it again now rather than wait for its
 * RTO, and stall nothing.
 */
static void free_ring_slot(struct ftfw *e)
{
	uint32_t h = ftfw_ring_occupant(e, e->seq);

	if (h) {
		ftfw_q_move(e, Q_RETX, h, ftfw_link_of(e, h));
		e->st.ring_evictions++;
	}
}

int ftfw_send_state(struct ftfw *e, uint8_t type, const struct flow_full *ff, uint64_t now)
{
	struct wire_hdr hdr = { .type = type, .seq = e->seq };
	int n;

	if (!e->notrack || e->alarm || (type != WIRE_T_CT_NEW && type != WIRE_T_CT_UPD && type != WIRE_T_CT_DEL))
		return -EINVAL;
	e->now = max_u64(e->now, now);
	n = wire_ct_encode(e->buf, sizeof(e->buf), &hdr, ff,
			   e->cfg.enc_opts | (type == WIRE_T_CT_DEL ? WIRE_ENC_KEY_ONLY : 0), NULL);
	if (n < 0) {
		e->st.tx_refused++;
		return n;
	}
	emit_msg(e, e->buf, (size_t)n, 0, now);
	e->progress_at = now;
	e->st.data_sent++;
	return n;
}

enum tx_result { TX_SENT, TX_NO_ROOM, TX_DROPPED };

static enum tx_result tx_flow(struct ftfw *e, uint32_t h, uint64_t now, size_t *left)
{
	struct ftfw_link *l = ftfw_link_of(e, h);
	uint8_t hflags = hello_flags(e);
	bool retx = l->queue == Q_RETX;
	unsigned eflags;
	int n;

	if (!e->notrack)
		free_ring_slot(e);
	n = encode_flow(e, h, hflags, e->seq, &eflags);
	if (n < 0) {
		/* A flow the codec refuses (bad family) can never be sent: drop it from the queue. */
		ftfw_q_unlink(e, h, l);
		e->st.tx_refused++;
		if ((eflags & FLOW_ENTRY_DEAD) && n != -ENOENT)
			e->ops.dead_acked(e->arg, h);
		return TX_DROPPED;
	}
	if ((size_t)n > *left)
		return TX_NO_ROOM;
	*left -= (size_t)n;
	if (e->notrack) {
		ftfw_q_unlink(e, h, l);
		emit_msg(e, e->buf, (size_t)n, hflags, now);
		e->progress_at = now;
		/* protocol.md §4: nothing is acknowledged in NOTRACK or ALARM; a DEL is done once sent. */
		if (eflags & FLOW_ENTRY_DEAD) {
			e->ops.dead_acked(e->arg, h);
		} else {
			l->life_acked = 1;      /* best effort: sent is as good as acknowledged */
			if (e->alarm)
				ftfw_alarm_arm(e, h, l, now);   /* protocol.md §4: the next refresh */
		}
	} else {
		ftfw_rs_push(e, h, l, e->seq, now);
		l->hello = (hflags & WIRE_F_HELLO) != 0;
		emit_msg(e, e->buf, (size_t)n, hflags, now);
		if (e->q[Q_RS].len > e->st.inflight_peak)
			e->st.inflight_peak = e->q[Q_RS].len;
	}
	e->st.data_sent++;
	if (retx)
		e->st.retransmitted++;
	return TX_SENT;
}

/*
 * Deviation 18: a RESYNC request and a bulk send wait for the end of our
 * HELLO handshake (see ftfw_request_resync()); sent flagged HELLO, every
 * message of a bulk would go twice to 1.4.7 (deviation 14).  Not longer
 * than HELLO_HOLD_MS after a peer was first heard: one that never
 * answers must not hold them for ever.  With no peer known they wait.
 */
bool ftfw_hello_holds(const struct ftfw *e)
{
	return e->hello_phase && (!e->members || e->now < e->hello_since + HELLO_HOLD_MS);
}

size_t ftfw_send(struct ftfw *e, uint64_t now, size_t budget)
{
	size_t left = budget;
	bool stalled = false;

	e->now = max_u64(e->now, now);
	if (e->resync == RESYNC_PENDING && !ftfw_hello_holds(e) && left >= WIRE_CTL_RANGE_LEN) {
		/* protocol.md §2.2: a RESYNC request has from = to = 0. */
		e->resync_seq = e->seq;
		e->resync_sent = now;
		e->resync_acked = 0;
		e->resync = e->notrack ? RESYNC_NONE : RESYNC_INFLIGHT;
		ftfw_emit_ctl(e, WIRE_F_RESYNC, 0, 0, now);
		left -= WIRE_CTL_RANGE_LEN;
	}
	for (;;) {
		struct ftfw_list *q;
		enum tx_result r;

		if (!window_open(e)) {
			stalled = e->q[Q_RETX].len || e->q[Q_TX].len || ftfw_bulk_may_run(e);
			break;
		}
		/* Retransmissions first: they are the oldest news the peer lacks. */
		q = e->q[Q_RETX].head ? &e->q[Q_RETX] : &e->q[Q_TX];
		if (!q->head) {
			if (!ftfw_bulk_may_run(e) || !ftfw_bulk_room(e))
				break;
			if (e->ops.bulk_pull && !e->bulk_exp ? !ftfw_bulk_pull(e, &left) : !ftfw_bulk_refill(e))
				break;
			continue;
		}
		if (!ftfw_link_of(e, q->head)) {
			/*
			 * The owner deleted a queued flow without ftfw_flow_forget()
			 * (a bug): the links through it are gone.  Drop the queue
			 * rather than follow them, and count it; the flows it held
			 * are stranded until ftfw_forget_all().
			 */
			*q = (struct ftfw_list){ 0 };
			e->st.tx_refused++;
			continue;
		}
		r = tx_flow(e, q->head, now, &left);
		if (r == TX_NO_ROOM)
			break;
	}
	if (stalled)
		e->st.flow_control_stalls++;
	return budget - left;
}

bool ftfw_send_ready(const struct ftfw *e)
{
	if (e->resync == RESYNC_PENDING && !ftfw_hello_holds(e))
		return true;
	if (!e->q[Q_RETX].len && !e->q[Q_TX].len && (!ftfw_bulk_may_run(e) || !ftfw_bulk_room(e)))
		return false;
	return window_open(e);
}

/* ---- requests ------------------------------------------------------------------------ */

/*
 * Deviation 18: the request waits for the end of our HELLO handshake.
 * 1.4.7 takes every message flagged HELLO as in sequence (protocol.md §3.6):
 * a request lost while we say HELLO is never NACKed, and the ACK that
 * answers our HELLO may cover it (deviation 14).  Whether 1.4.7 got it
 * cannot be told from what it sends next, which may be any update.  Sent
 * after the handshake, a lost request is NACKed or times out and goes
 * again.  The cost is a delay of up to the peer's one-second timer at a
 * start with StartupResync; a ctsyncd peer answers HELLO at once
 * (deviation 15), and has begun sending its table on seeing our restart.
 */
void ftfw_request_resync(struct ftfw *e)
{
	if (e->alarm)
		return;         /* protocol.md §4: no RESYNC in ALARM */
	e->resync = RESYNC_PENDING;
}

/* ---- timers -------------------------------------------------------------------------- */

static uint64_t rto_deadline(const struct ftfw *e)
{
	uint64_t oldest = UINT64_MAX;

	if (e->notrack)
		return UINT64_MAX;
	if (e->q[Q_RS].head)
		oldest = ftfw_link_of(e, e->q[Q_RS].head)->sent;
	if (e->resync == RESYNC_INFLIGHT)
		oldest = min_u64(oldest, e->resync_sent);
	if (oldest == UINT64_MAX)
		return UINT64_MAX;
	return max_u64(oldest, e->rto_round_at) + e->rto;
}

/*
 * Deviation 2: retransmission after a timeout.  1.4.7 resends only what
 * a NACK names, so a lost NACK, lost ACKs, or the loss of the last
 * messages before the sender goes quiet leave states missing forever.
 *
 * When the oldest message in flight has waited `rto` (1.5 s: more than
 * the peer's one-second ACK timer plus a round trip), every message that
 * old which a peer that spoke after its transmission has not
 * acknowledged goes back to be retransmitted.  What only silent peers
 * lack goes as one probe per round: in a group, a member that died holds
 * every message until PeerTimeout ends, and resending the window to the
 * live members each round, which have it, is what flooded the link.
 * When no peer said anything since the previous round, only the oldest
 * goes (the probe) and `rto` doubles up to rto_max, so a dead peer costs
 * one message per rto_max, not the whole window.  Any acknowledgement
 * that releases something resets rto.
 */
/* A member that lacks the message has spoken since it went out: it was lost on the way. */
static bool lost_for_a_talker(const struct ftfw *e, const struct ftfw_link *l)
{
	uint32_t lacking = e->members & ~(uint32_t)l->acked;

	for (unsigned p = 0; lacking; p++, lacking >>= 1)
		if ((lacking & 1u) && e->peers[p].last_heard > l->sent)
			return true;
	return false;
}

static void rto_round(struct ftfw *e, uint64_t now)
{
	uint64_t floor = e->rto_round_at;
	bool full = e->heard_since_rto, probed = false;

	if (e->resync == RESYNC_INFLIGHT && now >= max_u64(e->resync_sent, floor) + e->rto)
		e->resync = RESYNC_PENDING;
	for (uint32_t h = e->q[Q_RS].head, next; h; h = next) {
		struct ftfw_link *l = ftfw_link_of(e, h);

		next = l->next;
		if (now < max_u64(l->sent, floor) + e->rto)
			break;
		if (full && lost_for_a_talker(e, l)) {
			ftfw_q_move(e, Q_RETX, h, l);
			continue;
		}
		if (!probed) {
			ftfw_q_move(e, Q_RETX, h, l);
			probed = true;
			e->st.rto_probes++;
		}
		if (!full)
			break;
	}
	e->st.rto_rounds++;
	/*
	 * Back off only while the peers are silent: a peer that speaks lost
	 * our messages or its ACKs to random loss, and waiting longer would
	 * only delay the repair (the window bounds what a round resends).
	 */
	if (!full)
		e->rto = e->rto * 2 > e->cfg.rto_max_ms ? e->cfg.rto_max_ms : e->rto * 2;
	e->rto_round_at = now;
	e->heard_since_rto = false;
}

void ftfw_tick(struct ftfw *e, uint64_t now)
{
	e->now = max_u64(e->now, now);
	if (ftfw_idle(e))
		e->progress_at = now;
	ftfw_rx_tick(e, now);   /* peers lost, ACKs due */
	ftfw_fast_retransmit(e, now);
	ftfw_nack_hold_tick(e, now);
	if (now >= rto_deadline(e))
		rto_round(e, now);
	ftfw_bulk_tick(e, now);
	if (e->alarm) {
		ftfw_alarm_tick(e, now);        /* protocol.md §4: refreshes, and never an ALIVE */
		return;
	}
	/*
	 * protocol.md §3.3: a second without transmission sends ALIVE (with HELLO while
	 * we say hello: 0x30), unless an ACK was due, which ftfw_rx_tick()
	 * has just sent.
	 */
	if (e->alive_now || now >= e->last_tx + e->cfg.alive_ms ||
	    (e->hello_phase && now >= e->last_hello_tx + FTFW_TIMER_MS))
		ftfw_emit_ctl(e, WIRE_F_ALIVE, 0, 0, now);
}

uint64_t ftfw_next_deadline(const struct ftfw *e)
{
	uint64_t d = e->alarm ? ftfw_alarm_deadline(e) : e->alive_now ? e->now : e->last_tx + e->cfg.alive_ms;

	if (!e->alarm && e->hello_phase)
		d = min_u64(d, e->last_hello_tx + FTFW_TIMER_MS);

	d = min_u64(d, rto_deadline(e));
	if (e->bulk_waiting)
		d = min_u64(d, e->bulk_not_before);
	d = min_u64(d, ftfw_fast_deadline(e));
	d = min_u64(d, ftfw_nack_hold_deadline(e));
	d = min_u64(d, ftfw_rx_deadline(e));
	return d;
}

/* ---- state and statistics -------------------------------------------------------------- */

bool ftfw_idle(const struct ftfw *e)
{
	return !e->q[Q_TX].len && !e->q[Q_RETX].len && !e->q[Q_RS].len && !e->bulk &&
	       !e->bulk_waiting && e->resync == RESYNC_NONE;
}

uint64_t ftfw_backlog_ms(const struct ftfw *e, uint64_t now)
{
	if (ftfw_idle(e) || now <= e->progress_at)
		return 0;
	return now - e->progress_at;
}

uint32_t ftfw_next_seq(const struct ftfw *e)
{
	return e->seq;
}

void ftfw_stats(const struct ftfw *e, struct ftfw_stats *out)
{
	*out = e->st;
	out->txq_len = e->q[Q_TX].len;
	out->retxq_len = e->q[Q_RETX].len;
	out->inflight = e->q[Q_RS].len;
	out->inflight_max = e->notrack ? 0 : e->cfg.resend_queue_size;
	out->bulk_running = e->bulk;
	out->bulk_waiting = e->bulk_waiting;
	out->resync_outstanding = e->resync != RESYNC_NONE;
	out->peers = (uint32_t)__builtin_popcount(e->members);
	out->refresh_timers = e->wheel_len;
}

int ftfw_peer_stats(const struct ftfw *e, unsigned peer, struct ftfw_peer_stats *out)
{
	const struct ftfw_peer *p;

	if (peer >= FTFW_PEERS_MAX)
		return -EINVAL;
	p = &e->peers[peer];
	memset(out, 0, sizeof(*out));
	out->known = p->known;
	out->lost = p->lost;
	out->member = !e->notrack && (e->members & (1u << peer));
	out->hello_pending = !e->notrack && p->known && !(e->hello_done & (1u << peer));
	out->in_hello = p->in_hello;
	out->last_seq = p->last_seq;
	out->msg_recv = p->msg_recv;
	out->seq_lost = p->seq_lost;
	out->seq_before = p->seq_before;
	out->restarts = p->restarts;
	out->space_switches = p->space_switches;
	out->last_heard = p->last_heard;
	out->silence = p->silence;
	out->downs = p->downs;
	out->ups = p->ups;
	out->state_since = p->state_since;
	return 0;
}

uint32_t ftfw_peer_unacked(const struct ftfw *e, unsigned peer)
{
	uint32_t n = 0;

	if (peer >= FTFW_PEERS_MAX || e->notrack)
		return 0;
	for (uint32_t h = e->q[Q_RS].head; h; ) {
		const struct ftfw_link *l = ftfw_link_of(e, h);

		n += !(l->acked & (1u << peer));
		h = l->next;
	}
	return n;
}

void ftfw_rsqueue_foreach(const struct ftfw *e,
			  bool (*fn)(void *arg, const struct ftfw_rsq_entry *ent), void *arg)
{
	struct ftfw_rsq_entry ent;
	bool resync_done = e->resync != RESYNC_INFLIGHT;

	for (uint32_t h = e->q[Q_RS].head; h; ) {
		const struct ftfw_link *l = ftfw_link_of(e, h);

		/* The RESYNC request in its place in sequence order, as 1.4.7 lists control entries. */
		if (!resync_done && seq_before(e->resync_seq, l->seq)) {
			resync_done = true;
			ent = (struct ftfw_rsq_entry){ .seq = e->resync_seq, .flags = WIRE_F_RESYNC,
						       .acked = e->resync_acked, .sent = e->resync_sent };
			if (!fn(arg, &ent))
				return;
		}
		ent = (struct ftfw_rsq_entry){ .seq = l->seq, .handle = h, .acked = l->acked,
					       .sent = l->sent };
		if (!fn(arg, &ent))
			return;
		h = l->next;
	}
	if (!resync_done) {
		ent = (struct ftfw_rsq_entry){ .seq = e->resync_seq, .flags = WIRE_F_RESYNC,
					       .acked = e->resync_acked, .sent = e->resync_sent };
		fn(arg, &ent);
	}
}
