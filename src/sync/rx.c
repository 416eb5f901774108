/*
 * rx.c - the receiver: what each sending peer's sequence numbers say,
 * which ACKs and NACKs we owe it, HELLO/HELLO_BACK, and the digest of its
 * messages (protocol.md §3.4, §3.6; protocol.md §4 for NOTRACK).
 *
 * 1.4.7 keeps one receiver state per process (protocol.md §3.4) and takes any message
 * carrying HELLO as "in sync, whatever its sequence number", which both
 * mixes the sequence spaces of several peers and skips gap detection for
 * as long as a peer's handshake lasts.  Here every peer id has its own
 * state (struct ftfw_peer), and a HELLO starts a new sequence space only
 * when the sequence numbers say the peer really restarted.
 */
#include "ftfw_int.h"

#include <errno.h>
#include <string.h>

/*
 * A peer still saying HELLO whose sequence number moved forward by at
 * most this much is the same process going on (deviation 1): its gaps are
 * NACKed like any other.  Further, or backwards past the same distance,
 * it is a new process with a new counter.
 */
#define HELLO_WIN       4096u
/*
 * A forward jump larger than this without HELLO is a new sequence space
 * too: no loss of ours explains it (a sender has at most ResendQueueSize
 * data messages in flight), but a restarted peer whose HELLO messages all
 * missed us does.
 */
#define JUMP_MAX        (1u << 20)
/*
 * Old sequence numbers are dropped (protocol.md §3.4); a peer that sends nothing but
 * old ones for two seconds (at least four messages, so not one delayed
 * datagram) is a restarted peer whose counter started below its old one.
 */
#define OLD_RUN_MIN     4u
#define OLD_RUN_MS      2000u
/*
 * A peer alive sends something every second (its ACK/ALIVE timer, protocol.md §3.3):
 * a silence this long before a RESYNC flagged HELLO, even one numbered
 * among the old ones, means a new process (deviation 20, classify()).
 */
#define RESTART_SILENCE_MS 2500u

/*
 * Deviation 24: the sequence space a restart replaced is kept while it is
 * heard at least this often.  A live peer sends every second; a process
 * that really ended is silent, and its space is forgotten after this.
 */
#define ALT_KEEP_MS     10000u

/*
 * Send each ACK once more this long after (deviation 11): late enough to
 * leave in another datagram (the channel is flushed every loop
 * iteration), early enough that the ring of FTFW_ACK_REPEATS_MAX holds
 * the ACKs of a bulk at 20 % loss (one per gap).
 */
#define ACK_REPEAT_MS   20u

/* NACK a gap again after 1 s, 2 s, 4 s, then every 8 s, NACK_TRIES times in all. */
#define NACK_RETRY_MS   1000u
#define NACK_RETRY_MAX_MS 8000u
#define NACK_TRIES      12u

enum rx_class {
	RX_FIRST,       /* nothing to compare with: in sync by definition */
	RX_IN_SYNC,     /* the expected sequence number */
	RX_GAP,         /* later than expected: NACK what is missing */
	RX_OLD,         /* earlier than expected: drop */
	RX_RESTART,     /* a new sequence space */
};

static void event(struct ftfw *e, unsigned peer, enum ftfw_peer_event ev)
{
	if (e->ops.peer_event)
		e->ops.peer_event(e->arg, peer, ev);
}

/*
 * The HELLO phase ends when every peer we wait for has answered with
 * HELLO_BACK (protocol.md §3.6).  Deviation 17: if a peer's message was lost while we
 * said HELLO, ask for a RESYNC then.  1.4.7 empties its resend queue at
 * every HELLO it hears, so what it lost of its messages meanwhile (the
 * answer to our StartupResync, say) it can no longer send again when we
 * NACK it; a ctsyncd peer would, and only sends its table once more.
 */
static void update_hello_phase(struct ftfw *e)
{
	if (e->hello_phase && e->members && (e->hello_done & e->members) == e->members) {
		e->hello_phase = false;
		if (e->gap_in_hello) {
			e->gap_in_hello = false;
			e->st.hello_gap_resyncs++;
			ftfw_request_resync(e);
		}
	}
}

static uint32_t window_size(const struct ftfw *e)
{
	return e->cfg.ack_window ? e->cfg.ack_window : 1;
}

/*
 * Flap damping.  A peer that comes back within FLAP_WINDOW_MS of going
 * down, continuing the sequence space it left (the same process), was
 * alive all along (stalled, or starved of CPU): each such
 * return doubles the silence it is allowed, up to FLAP_MAX_MS (or the
 * configured timeout if longer), and FLAP_CALM_MS up without a flap
 * restore the configured one.  Each return costs a new sequence space
 * and a resend of our table to it, so a short timeout must not turn a
 * busy group into one that does nothing but resend.
 */
#define FLAP_WINDOW_MS  10000u
#define FLAP_MAX_MS     30000u
#define FLAP_CALM_MS    60000u

uint32_t ftfw_peer_timeout(const struct ftfw *e, const struct ftfw_peer *p)
{
	return p->timeout_ms > e->cfg.peer_timeout_ms ? p->timeout_ms : e->cfg.peer_timeout_ms;
}

static void damp_flap(struct ftfw *e, struct ftfw_peer *p, uint64_t now)
{
	uint32_t cur = ftfw_peer_timeout(e, p), cap = e->cfg.peer_timeout_ms > FLAP_MAX_MS ?
						      e->cfg.peer_timeout_ms : FLAP_MAX_MS;

	if (now - p->state_since >= FLAP_WINDOW_MS)
		return;
	p->timeout_ms = cur > cap / 2 ? cap : cur * 2;
	e->st.peer_flaps++;
}

static void heard(struct ftfw *e, unsigned peer, struct ftfw_peer *p, uint64_t now, bool same_space)
{
	uint16_t bit = (uint16_t)(1u << peer);

	p->silence = p->known && now > p->last_heard ? now - p->last_heard : 0;
	p->last_heard = now;
	e->heard_since_rto = true;
	if (!p->known) {
		p->known = true;
		p->state_since = now;
		p->window = window_size(e);
		/*
		 * 1.4.7 says HELLO until anyone answers.  We say it until every
		 * peer has, so that each of them learns of our restart from a
		 * HELLO rather than from a guess on our sequence numbers.  A
		 * peer first heard after the others answered may have known
		 * our previous process too: we say HELLO again (the others
		 * take it for a restart of ours: a resync too many, in a
		 * multicast group only).
		 */
		if (!e->notrack) {
			e->hello_phase = true;
			e->hello_since = now;   /* deviation 18 waits from here */
		}
		ftfw_members_changed(e, e->members | bit);
		if (e->released)
			ftfw_soft_restart(e);
		/*
		 * A RESYNC request of ours was answered by the peers we knew,
		 * and here is one we did not know (a multicast group): it has
		 * not answered, so ask again.  With one peer this cannot
		 * happen: its ACK of our request makes it known first.
		 */
		if (e->resync_answered && e->resync == RESYNC_NONE)
			e->resync = RESYNC_PENDING;
		event(e, peer, FTFW_PEER_NEW);
		/*
		 * Beyond 1.4.7: a peer heard for the first time gets our table
		 * unasked.  Either it has just started (it says HELLO), and its
		 * StartupResync request, if any, may have gone to our previous
		 * process or been lost, never to be repeated by 1.4.7; or we
		 * have, and what changed in our kernel meanwhile never reached
		 * it.  A ctsyncd peer also asks for it on seeing our restart:
		 * the bulk starts over, once.
		 */
		if (e->cfg.mode == FTFW_MODE_FTFW && !e->cfg.no_bulk_on_new)
			ftfw_bulk_for_peer(e);
	} else if (p->lost) {
		bool was_nobody = e->nobody;

		/* It may have missed messages released while it was not waited for. */
		p->lost = false;
		p->ups++;
		/* A new process (a new space) was dead, not stalled: no flap. */
		if (same_space)
			damp_flap(e, p, now);
		p->state_since = now;
		ftfw_members_changed(e, e->members | bit);
		if (e->released)
			ftfw_soft_restart(e);
		event(e, peer, FTFW_PEER_BACK);
		/*
		 * Nothing was queued while every peer was gone (ack.c): it gets
		 * our whole table, unasked, as a 1.4.7 peer does not ask.
		 */
		if (was_nobody && e->cfg.mode == FTFW_MODE_FTFW)
			ftfw_bulk_for_peer(e);
	}
}

static enum rx_class classify_old(struct ftfw_peer *p, uint64_t now)
{
	if (p->old_run++ == 0)
		p->old_since = now;
	if (p->old_run >= OLD_RUN_MIN && now - p->old_since >= OLD_RUN_MS)
		return RX_RESTART;
	return RX_OLD;
}

static enum rx_class classify(struct ftfw_peer *p, const struct wire_msg *m, uint64_t now)
{
	const struct wire_hdr *h = &m->hdr;
	int64_t d;

	if (!p->init)
		return RX_FIRST;
	d = (int32_t)(h->seq - p->last_seq);
	/*
	 * Deviation 20: a RESYNC request flagged HELLO is the StartupResync of
	 * a process in its handshake, its first message.  One numbered at or
	 * after the first number we took in the present space (and not a
	 * copy of the one we took) comes from a new process, even one that
	 * looks like the handshake going on: 1.4.7 killed before it heard our
	 * HELLO_BACK and restarted, its time(NULL) counter near where the old
	 * one stopped.  Unrecognised, the restart would leave 1.4.7's empty
	 * external cache without our table, and our copy of its states
	 * without the DELs it lost.  A request of the present process that
	 * arrives late is numbered before what we took, and comes amid its
	 * traffic; numbered before and after a silence longer than 1.4.7's
	 * one-second timer leaves (RESTART_SILENCE_MS), it is a new process's.
	 * (A -n typed on 1.4.7 during its handshake is taken for a restart:
	 * a resync both ways.)
	 */
	if (m->kind == WIRE_K_RESYNC && (h->flags & WIRE_F_HELLO) &&
	    (!seq_before(h->seq, p->space_first) || p->silence >= RESTART_SILENCE_MS) &&
	    !(p->hello_resync_seen && h->seq == p->hello_resync))
		return RX_RESTART;
	if (h->flags & WIRE_F_HELLO) {
		/*
		 * protocol.md §3.6 resets on every HELLO.  We reset only on a HELLO
		 * that cannot be the same process still waiting for our
		 * HELLO_BACK: one that did not say HELLO last time, or whose
		 * counter is far from where it was.  So messages lost during a
		 * handshake are NACKed too (the 51 lost flows).
		 *
		 * Not after what we have: a duplicate, an old message of its
		 * handshake delayed in the network, or a new process whose
		 * counter starts lower (1.4.7 starts it at time(NULL): a
		 * restart usually lands a little below the old counter).
		 * Once it had stopped saying HELLO at hello_end, a HELLO at or
		 * after that number can only be a new process.  Before that we
		 * cannot tell, and drop it as old: a burst of reordered
		 * datagrams during a bulk send must not look like restarts.
		 * A new process is then recognised by classify_old(), or not
		 * at all if its counter overtakes the old one first: with
		 * time(NULL) counters, a restart during an unfinished
		 * handshake looks like the handshake going on (hence
		 * ftfw_initial_seq()).
		 */
		if (d <= 0 && -d < HELLO_WIN) {
			if (d < 0 && p->hello_over && !seq_before(h->seq, p->hello_end))
				return RX_RESTART;
			return classify_old(p, now);
		}
		if (d > 0 && d <= HELLO_WIN && p->in_hello)
			return d == 1 ? RX_IN_SYNC : RX_GAP;
		return RX_RESTART;
	}
	if (d <= 0)
		return classify_old(p, now);
	if (d > JUMP_MAX)
		return RX_RESTART;
	return d == 1 ? RX_IN_SYNC : RX_GAP;
}

static struct ftfw_space present_space(const struct ftfw_peer *p)
{
	return (struct ftfw_space){
		.valid = p->init, .in_hello = p->in_hello, .hello_over = p->hello_over,
		.last_seq = p->last_seq, .space_first = p->space_first, .hello_end = p->hello_end,
		.heard = p->space_heard,
	};
}

static void restart(struct ftfw *e, unsigned peer, struct ftfw_peer *p)
{
	p->restarts++;
	e->st.peer_restarts++;
	/* Deviation 24: the replaced space is kept, in case the restart was forged. */
	if (p->init)
		p->alt = present_space(p);
	/* Whatever ACK we owed belongs to the old process: it is gone. */
	p->init = false;
	p->hello_over = false;
	p->ack_pending = false;
	memset(p->gaps, 0, sizeof(p->gaps));
	p->ngaps = 0;
	p->rep_len = 0;
	p->window = window_size(e);
	p->old_run = 0;
	p->acks_say_hello = false;      /* the new process may be another daemon (an upgrade) */
	ftfw_requeue_inflight(e);
	event(e, peer, FTFW_PEER_RESTARTED);
	/*
	 * The restarted peer may have lost messages for states we still hold
	 * (a DEL in particular): the owner drops what it has from it, and we
	 * ask for its whole table.
	 */
	if (e->ops.peer_reset)
		e->ops.peer_reset(e->arg, peer);
	ftfw_request_resync(e);
	/*
	 * Beyond 1.4.7: the restarted peer lost what we had sent it, and the
	 * RESYNC request it may send at once can be among the messages taken
	 * for old ones until its restart is recognised (classify()), never to
	 * be repeated by a 1.4.7 peer.  Send it our table unasked, as its -n
	 * would have us do.
	 */
	ftfw_bulk_for_peer(e);
}

/*
 * Deviation 10: an ACK also covers the ranges of the two ACKs before it,
 * as long as no gap lies between (we never ACK what we did not get).  A
 * lost ACK is then made good by the next one instead of by the sender's
 * RTO; at 20 % loss, two ACKs in a row are lost 4 % of the time instead
 * of one 20 %.  The sender finds the numbers it already released and
 * does nothing with them (1.4.7 alike: it looks them up in its resend
 * queue and does not find them).
 */
static void send_ack(struct ftfw *e, struct ftfw_peer *p, uint32_t from, uint32_t to, uint64_t now)
{
	uint32_t wide = from;

	if (e->cfg.plain_acks) {
		ftfw_emit_ctl(e, WIRE_F_ACK, from, to, now);
		return;
	}
	for (unsigned i = 0; i < p->nprev; i++)
		if (seq_before(p->prev_from[i], wide) && !seq_before(p->prev_from[i], p->run_from))
			wide = p->prev_from[i];
	p->prev_from[1] = p->prev_from[0];
	p->prev_from[0] = from;
	if (p->nprev < 2)
		p->nprev++;
	ftfw_emit_ctl(e, WIRE_F_ACK, wide, to, now);
	/*
	 * Deviation 11: ACK every range twice, the second time in a later
	 * datagram.  (10) does not help across gaps, and at 20 % loss a
	 * range ends at a gap every few datagrams: without this, a fifth of
	 * what arrived would wait for the sender's RTO.  When more ACKs are
	 * waiting than the ring holds, the oldest one goes unrepeated.
	 */
	if (p->rep_len == FTFW_ACK_REPEATS_MAX) {
		p->rep_head = (p->rep_head + 1) % FTFW_ACK_REPEATS_MAX;
		p->rep_len--;
	}
	p->reps[(p->rep_head + p->rep_len++) % FTFW_ACK_REPEATS_MAX] =
		(struct ftfw_ack_repeat){ .from = wide, .to = to, .due = now + ACK_REPEAT_MS };
}

static void repeat_acks(struct ftfw *e, struct ftfw_peer *p, uint64_t now)
{
	while (p->rep_len && p->reps[p->rep_head].due <= now) {
		const struct ftfw_ack_repeat *r = &p->reps[p->rep_head];

		ftfw_emit_ctl(e, WIRE_F_ACK, r->from, r->to, now);
		e->st.ack_repeated++;
		p->rep_head = (p->rep_head + 1) % FTFW_ACK_REPEATS_MAX;
		p->rep_len--;
	}
}

/* A new run of consecutive numbers starts at `seq`: earlier ACK ranges may not be widened into it. */
static void new_run(struct ftfw_peer *p, uint32_t seq)
{
	p->run_from = seq;
	p->nprev = 0;
}

/*
 * Deviation 24.  Without a key anyone on the segment can send in a peer's
 * name, and one forged jump (or HELLO) is taken for a restart: the peer's
 * real messages then look old and would be dropped for as long as the
 * forger keeps its space going.  So the space a restart replaced is kept,
 * and a message that continues it, after the present one, is taken: we
 * switch back to that space (its gap NACKed as any gap) and tell the
 * owner.  The restart already asked for the peer's table and marked what
 * we hold of it, so whichever space is real, its states come again; no
 * message of either is dropped for being in the other.
 *
 * Only for a message numbered before the present space began, or one
 * that would restart it again: a late copy of a message of the present
 * space is old in it, whatever it would be in the other (1.4.7 seeds its
 * counter with time(NULL), so its spaces lie close together).
 */
static bool resumes_alt(const struct ftfw_peer *p, const struct wire_msg *m, enum rx_class cls,
			uint64_t now)
{
	const struct ftfw_space *a = &p->alt;
	int64_t d;

	if (!a->valid || now - a->heard > ALT_KEEP_MS)
		return false;
	if (cls == RX_OLD && !seq_before(m->hdr.seq, p->space_first))
		return false;
	d = (int32_t)(m->hdr.seq - a->last_seq);
	/* A StartupResync request is a new process's (deviation 20), never the old space going on. */
	if (m->kind == WIRE_K_RESYNC && (m->hdr.flags & WIRE_F_HELLO))
		return false;
	if (m->hdr.flags & WIRE_F_HELLO)
		return a->in_hello && d > 0 && d <= HELLO_WIN;
	return d > 0 && d <= JUMP_MAX;
}

/*
 * A message that would restart the present space but is an old one of the
 * space a restart replaced (a delayed copy, a retransmission) is dropped
 * as old there would be: taken for the first of a new space, it would lay
 * an old state over what the peer sent since (a state it has deleted
 * comes back, and nothing deletes it again).  Not when a run of old
 * numbers made it a restart (classify_old()): that is a new process whose
 * counter started low, among the numbers of an earlier one.
 */
static bool old_in_alt(const struct ftfw_peer *p, const struct wire_msg *m, uint64_t now)
{
	const struct ftfw_space *a = &p->alt;
	int64_t d;

	if (!a->valid || now - a->heard > ALT_KEEP_MS || (m->hdr.flags & WIRE_F_HELLO) ||
	    p->old_run >= OLD_RUN_MIN)
		return false;
	d = (int32_t)(m->hdr.seq - a->last_seq);
	return d <= 0 && -d < JUMP_MAX;
}

static void switch_space(struct ftfw *e, unsigned peer, struct ftfw_peer *p, uint64_t now)
{
	struct ftfw_space back = p->alt;

	/* The ACK owed in the space we leave goes now: its numbers mean nothing in the other. */
	if (p->init && p->ack_pending)
		send_ack(e, p, p->ack_from, p->last_seq, now);
	p->alt = present_space(p);
	p->init = true;
	p->in_hello = back.in_hello;
	p->hello_over = back.hello_over;
	p->last_seq = back.last_seq;
	p->space_first = back.space_first;
	p->hello_end = back.hello_end;
	p->space_heard = back.heard;
	p->ack_pending = false;
	p->window = window_size(e);
	p->old_run = 0;
	new_run(p, back.last_seq + 1);
	p->space_switches++;
	e->st.space_switches++;
	event(e, peer, FTFW_PEER_TWO_SPACES);
}

/*
 * Does this message use up the ACK window?  1.4.7 counts every message,
 * so with a window of 1 or 2 (and with three nodes whatever the window)
 * ACKs answer ACKs faster and faster.  We count what carries news (data
 * and RESYNC); ACK, NACK and ALIVE are still acknowledged, by the timer.
 */
static bool counts_for_window(const struct wire_msg *m)
{
	return m->kind == WIRE_K_DATA || m->kind == WIRE_K_RESYNC;
}

/* protocol.md §3.4.2, in sync: open or extend the ACK range, ACK when the window is used up. */
static void in_sync(struct ftfw *e, struct ftfw_peer *p, uint32_t seq, bool counts, uint64_t now)
{
	if (!p->ack_pending) {
		p->ack_from = seq;
		p->ack_pending = true;
		p->ack_due = now + FTFW_TIMER_MS;
	}
	if (!counts)
		return;
	if (p->window <= 1) {
		send_ack(e, p, p->ack_from, seq, now);
		p->window = window_size(e);
		p->ack_pending = false;
		return;
	}
	p->window--;
}

/*
 * Deviation 9: keep the gap to NACK it again.  When every slot is taken
 * (a bulk send at high loss), an old gap gives way: a ctsyncd sender
 * repairs it with its RTO, a 1.4.7 sender only if the first NACK arrived.
 */
static void remember_gap(struct ftfw_peer *p, uint32_t from, uint32_t to, uint64_t now)
{
	struct ftfw_gap *g = NULL;

	if (p->ngaps < FTFW_GAPS_MAX) {
		for (unsigned i = 0; i < FTFW_GAPS_MAX && !g; i++)
			if (!p->gaps[i].tries)
				g = &p->gaps[i];
		p->ngaps++;
	} else {
		g = &p->gaps[p->gap_next];
		p->gap_next = (p->gap_next + 1) % FTFW_GAPS_MAX;
	}
	*g = (struct ftfw_gap){ .from = from, .to = to, .due = now + NACK_RETRY_MS, .tries = 1 };
	if (p->ngaps == 1 || g->due < p->gaps_due)
		p->gaps_due = g->due;
}

static void repeat_nacks(struct ftfw *e, struct ftfw_peer *p, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	if (!p->ngaps || now < p->gaps_due)
		return;
	for (unsigned i = 0; i < FTFW_GAPS_MAX && p->ngaps; i++) {
		struct ftfw_gap *g = &p->gaps[i];
		uint64_t wait;

		if (!g->tries)
			continue;
		if (now < g->due) {
			next = min_u64(next, g->due);
			continue;
		}
		ftfw_emit_ctl(e, WIRE_F_NACK, g->from, g->to, now);
		e->st.nack_repeated++;
		if (++g->tries >= NACK_TRIES) {
			g->tries = 0;
			p->ngaps--;
			continue;
		}
		wait = (uint64_t)NACK_RETRY_MS << (g->tries - 1);
		g->due = now + (wait < NACK_RETRY_MAX_MS ? wait : NACK_RETRY_MAX_MS);
		next = min_u64(next, g->due);
	}
	p->gaps_due = next;
}

/*
 * protocol.md §3.4.2, gap: ACK what came before it, NACK the gap at once, and
 * start a new ACK range at this message [verified: gap 1002..1005 ->
 * immediate NACK 1002-1005, ACK 1006 about a second later].
 */
static void gap(struct ftfw *e, struct ftfw_peer *p, uint32_t seq, bool counts, uint64_t now)
{
	uint32_t expected = p->last_seq + 1;
	uint32_t lost = seq - expected;

	/* 1.4.7 over-counts by two per gap (protocol.md §2.12); we count what is missing. */
	p->seq_lost += lost;
	e->st.seq_lost += lost;
	if (p->ack_pending)
		send_ack(e, p, p->ack_from, expected - 1, now);
	ftfw_emit_ctl(e, WIRE_F_NACK, expected, seq - 1, now);
	remember_gap(p, expected, seq - 1, now);
	if (e->hello_phase)
		e->gap_in_hello = true;
	new_run(p, seq);
	p->ack_from = seq;
	p->ack_pending = true;
	p->ack_due = now + FTFW_TIMER_MS;
	p->window = window_size(e) - (counts ? 1 : 0);
	if (p->window == 0) {
		send_ack(e, p, seq, seq, now);
		p->window = window_size(e);
		p->ack_pending = false;
	}
}

/* The state of conntrack message `m`: decoded ahead by ftfw_receive_batch(), or now. */
static const struct flow_full *rx_decoded(struct ftfw *e, const struct wire_msg *m,
					  enum wire_reason *r)
{
	/* Messages come in order; those skipped (old, ignored) leave their slot unused. */
	while (e->ahead_pos < e->ahead_n) {
		struct ftfw_rx_ahead *a = &e->ahead[e->ahead_pos++];

		if (a->data == m->data) {
			*r = a->reason;
			return &a->f;
		}
	}
	*r = wire_ct_decode(m->data, m->len, &e->rxflow);
	return &e->rxflow;
}

void ftfw_rx_data(struct ftfw *e, unsigned peer, const struct wire_msg *m)
{
	uint8_t type = m->hdr.type;
	const struct flow_full *f;
	enum wire_reason r;

	if (wire_type_is_ct(type)) {
		f = rx_decoded(e, m, &r);
		if (r != WIRE_OK) {
			/* protocol.md §2.11 step 7: dropped, but its sequence number counts and is ACKed. */
			e->st.malformed[r]++;
			return;
		}
		e->st.data_recv++;
		e->ops.apply(e->arg, peer, type, f);
		return;
	}
	if (!e->ops.apply_exp) {
		e->st.exp_ignored++;
		return;
	}
	r = wire_exp_decode(m->data, m->len, &e->rxexp);
	if (r != WIRE_OK) {
		e->st.malformed[r]++;
		return;
	}
	e->st.data_recv++;
	e->ops.apply_exp(e->arg, peer, type, &e->rxexp);
}

/*
 * Has the peer answered a HELLO of our current sequence space?  Until it
 * has, its ACKs and NACKs name numbers of a sequence space it tracked
 * before (our previous process's, or ours before a soft restart), and
 * 1.4.7 and ctsyncd both seed the counter with time(NULL), so those
 * numbers may well be in our window now.  A peer sets HELLO_BACK on the
 * first message it sends after accepting one of our HELLO messages, so
 * what comes with or after it is in our current space.
 */
static bool answered_hello(const struct ftfw *e, unsigned peer)
{
	return (e->hello_done & (1u << peer)) != 0;
}

/* The sync-mode digest (protocol.md §3.4): false for a message 1.4.7 calls BAD (not sequence-tracked). */
static bool digest(struct ftfw *e, unsigned peer, const struct wire_msg *m)
{
	const struct wire_hdr *h = &m->hdr;

	switch (m->kind) {
	case WIRE_K_DATA:
		ftfw_rx_data(e, peer, m);
		return true;
	case WIRE_K_ACK:
		if (seq_before(h->to, h->from))
			return false;
		e->st.ack_recv++;
		if (!e->notrack && answered_hello(e, peer))
			ftfw_on_ack(e, peer, h->from, h->to);
		return true;
	case WIRE_K_NACK:
		if (seq_before(h->to, h->from))
			return false;
		e->st.nack_recv++;
		if (!e->notrack && answered_hello(e, peer))
			ftfw_on_nack(e, peer, h->from, h->to);
		return true;
	case WIRE_K_RESYNC:
		/* protocol.md §3.4: send the whole internal cache. */
		e->st.resync_recv++;
		ftfw_bulk_for_peer(e);
		return true;
	case WIRE_K_ALIVE:
		e->st.alive_recv++;
		return true;
	case WIRE_K_BAD:
		break;
	}
	return false;
}

void ftfw_rx_seq_stats(struct ftfw *e, struct ftfw_peer *p, uint32_t seq)
{
	if (p->init && seq_before(seq, p->last_seq + 1)) {
		p->seq_before++;
		e->st.seq_before++;
		return;
	}
	if (p->init && seq != p->last_seq + 1) {
		p->seq_lost += seq - p->last_seq - 1;
		e->st.seq_lost += seq - p->last_seq - 1;
	}
	p->init = true;
	p->last_seq = seq;
}

/* protocol.md §4: NOTRACK tracks sequence numbers for the statistics only, and accepts everything. */
static void rx_notrack(struct ftfw *e, unsigned peer, struct ftfw_peer *p, const struct wire_msg *m)
{
	uint32_t seq = m->hdr.seq;

	if (!digest(e, peer, m)) {
		e->st.malformed[WIRE_R_BAD_HEADER]++;
		return;
	}
	ftfw_rx_seq_stats(e, p, seq);
}

int ftfw_receive(struct ftfw *e, unsigned peer, const struct wire_msg *m, uint64_t now)
{
	const struct wire_hdr *h = &m->hdr;
	struct ftfw_peer *p;
	enum rx_class cls;

	if (peer >= FTFW_PEERS_MAX)
		return -EINVAL;
	p = &e->peers[peer];
	e->now = max_u64(e->now, now);
	e->st.msg_recv++;
	e->st.bytes_recv += m->len;
	p->msg_recv++;
	/* protocol.md §2.11 step 5: a foreign version is skipped before sequence tracking. */
	if (m->reason != WIRE_OK) {
		e->st.malformed[m->reason < WIRE_R_MAX ? m->reason : WIRE_R_BAD_HEADER]++;
		return 0;
	}
	/* protocol.md §4: ALARM classifies by the flags alone, before any "malformed header". */
	if (e->alarm) {
		heard(e, peer, p, now, false);
		ftfw_alarm_receive(e, peer, p, m);
		return 0;
	}
	/* "malformed header": the digest's BAD, its sequence number not recorded (protocol.md §2.3). */
	if (m->kind == WIRE_K_BAD) {
		e->st.malformed[WIRE_R_BAD_HEADER]++;
		return 0;
	}
	/* In the space it left, a little further on: the same process, alive all along. */
	heard(e, peer, p, now, p->init && !(h->flags & WIRE_F_HELLO) &&
	      h->seq - p->last_seq <= JUMP_MAX);
	if (e->notrack) {
		rx_notrack(e, peer, p, m);
		return 0;
	}

	/* protocol.md §3.6 */
	if (h->flags & WIRE_F_HELLO_BACK) {
		e->hello_done |= (uint16_t)(1u << peer);
		update_hello_phase(e);
	}

	cls = classify(p, m, now);
	if ((cls == RX_OLD || cls == RX_RESTART) && resumes_alt(p, m, cls, now)) {
		switch_space(e, peer, p, now);
		cls = classify(p, m, now);
	} else if (cls == RX_RESTART && old_in_alt(p, m, now)) {
		cls = RX_OLD;
	}
	if (m->kind == WIRE_K_RESYNC && (h->flags & WIRE_F_HELLO)) {
		p->hello_resync_seen = true;
		p->hello_resync = h->seq;
	}
	if (cls == RX_OLD) {
		/* protocol.md §3.4: dropped, nothing sent, last_seq kept [verified]. */
		p->seq_before++;
		e->st.seq_before++;
		/*
		 * Except a RESYNC request: a restarted 1.4.7 whose time(NULL)
		 * counter starts below its old one sends its StartupResync
		 * request once, among numbers we still take for old ones, and
		 * nothing would ask for it again.  A stale duplicate costs a
		 * bulk send, a dropped request the peer's whole table.
		 */
		if (m->kind == WIRE_K_RESYNC) {
			e->st.resync_recv++;
			ftfw_bulk_for_peer(e);
		}
		return 0;
	}
	/*
	 * protocol.md §3.6: answer a HELLO on our next message.  1.4.7 answers
	 * every HELLO; we answer the ones we accept, so that HELLO_BACK
	 * tells the peer we track its new sequence space (ftfw_on_ack()
	 * relies on that).
	 */
	if (h->flags & WIRE_F_HELLO) {
		/* Deviation 15: the first HELLO of a run is answered at once (ftfw.c). */
		if (!e->hello_back_pending && !(p->init && p->in_hello && cls != RX_RESTART))
			e->alive_now = true;
		e->hello_back_pending = true;
	}
	if (cls == RX_RESTART) {
		restart(e, peer, p);
		cls = RX_FIRST;
	}
	if (!digest(e, peer, m)) {
		e->st.malformed[WIRE_R_BAD_HEADER]++;
		return 0;
	}
	p->old_run = 0;
	if (cls == RX_FIRST) {
		new_run(p, h->seq);
		p->space_first = h->seq;
	}
	if (cls == RX_GAP)
		gap(e, p, h->seq, counts_for_window(m), now);
	else
		in_sync(e, p, h->seq, counts_for_window(m), now);
	p->last_seq = h->seq;
	p->init = true;
	p->space_heard = now;
	/*
	 * Whether it still says HELLO.  Our ACKs and NACKs never do (ftfw.c):
	 * one of them between a ctsyncd peer's HELLO messages is no sign that
	 * its handshake is over, and taken for one, its next HELLO would look
	 * like a restart (the HELLO branch of classify()).  1.4.7 flags them
	 * as the rest: once an ACK or NACK of the peer said HELLO, its ACKs
	 * tell.
	 */
	if ((h->flags & WIRE_F_HELLO) && (m->kind == WIRE_K_ACK || m->kind == WIRE_K_NACK))
		p->acks_say_hello = true;
	if ((h->flags & WIRE_F_HELLO) || p->acks_say_hello ||
	    (m->kind != WIRE_K_ACK && m->kind != WIRE_K_NACK)) {
		p->in_hello = (h->flags & WIRE_F_HELLO) != 0;
		if (!p->in_hello && !p->hello_over) {
			p->hello_over = true;
			p->hello_end = h->seq;
		}
	}
	return 0;
}

/*
 * Decode the conntrack states of m[0..n-1] (n <= FTFW_RX_AHEAD) and hint
 * the caller of each.  Decoding is pure, so doing it before the digest of
 * the earlier messages changes nothing; the reason of a message that does
 * not decode is kept, to be counted if and when its turn comes.
 */
static void decode_ahead(struct ftfw *e, unsigned peer, const struct wire_msg *m, unsigned n)
{
	e->ahead_n = e->ahead_pos = 0;
	for (unsigned i = 0; i < n; i++) {
		struct ftfw_rx_ahead *a;

		if (m[i].reason != WIRE_OK || m[i].kind != WIRE_K_DATA ||
		    !wire_type_is_ct(m[i].hdr.type))
			continue;
		a = &e->ahead[e->ahead_n++];
		a->data = m[i].data;
		a->reason = wire_ct_decode(m[i].data, m[i].len, &a->f);
		if (a->reason == WIRE_OK)
			e->ops.prefetch(e->arg, peer, m[i].hdr.type, &a->f);
	}
}

int ftfw_receive_batch(struct ftfw *e, unsigned peer, const struct wire_msg *m, unsigned n,
		       uint64_t now)
{
	if (peer >= FTFW_PEERS_MAX)
		return -EINVAL;
	while (n > 0) {
		unsigned k = n < FTFW_RX_AHEAD ? n : FTFW_RX_AHEAD;

		if (e->ops.prefetch && k > 1)
			decode_ahead(e, peer, m, k);
		for (unsigned i = 0; i < k; i++)
			ftfw_receive(e, peer, &m[i], now);
		e->ahead_n = e->ahead_pos = 0;
		m += k;
		n -= k;
	}
	return 0;
}

void ftfw_count_rejected(struct ftfw *e, unsigned peer, enum wire_reason r)
{
	(void)peer;
	e->st.malformed[r < WIRE_R_MAX ? r : WIRE_R_BAD_SIZE]++;
}

void ftfw_rx_tick(struct ftfw *e, uint64_t now)
{
	bool attentive;

	/*
	 * Our own stall (a long kernel write, the CPU taken by others): what
	 * the peers sent meanwhile waits unread in the socket, and their
	 * silence is ours.  FTFW and NOTRACK tick at least once per ALIVE
	 * interval (the ALIVE timer, from a transmission at or after the
	 * previous tick); a gap half an interval longer was a stall, and a
	 * peer's silence counts again once we have listened for two
	 * intervals, or anyway once it has lasted twice its timeout (a loop
	 * that is always late must still let a dead peer go).  (ALARM has no
	 * such timer, and its timeouts are long.)
	 */
	if (!e->alarm && e->rx_tick_at && now > e->rx_tick_at + e->cfg.alive_ms + e->cfg.alive_ms / 2)
		e->attentive_since = now;
	e->rx_tick_at = now;
	attentive = e->alarm || now >= e->attentive_since + 2u * e->cfg.alive_ms;

	for (unsigned i = 0; i < FTFW_PEERS_MAX; i++) {
		struct ftfw_peer *p = &e->peers[i];

		if (p->timeout_ms && !p->lost && now >= p->state_since + FLAP_CALM_MS)
			p->timeout_ms = 0;
		if (e->cfg.peer_timeout_ms && p->known && !p->lost &&
		    now >= p->last_heard + ftfw_peer_timeout(e, p) &&
		    (attentive || now >= p->last_heard + 2u * (uint64_t)ftfw_peer_timeout(e, p))) {
			p->lost = true;
			p->downs++;
			p->state_since = now;
			ftfw_members_changed(e, (uint16_t)(e->members & ~(1u << i)));
			update_hello_phase(e);
			event(e, i, FTFW_PEER_LOST);
		}
	}
	if (e->notrack)
		return;
	for (unsigned i = 0; i < FTFW_PEERS_MAX; i++) {
		struct ftfw_peer *p = &e->peers[i];

		/*
		 * protocol.md §3.3: the one-second timer sends the ACK owed instead of an
		 * ALIVE.  Deviation 7: also one second after the first message
		 * not yet ACKed, even if we transmitted meanwhile (1.4.7 re-arms
		 * the timer on every transmission, so a busy node does not ACK
		 * until the window is full, and its peer's RTO would fire).
		 */
		if (p->ack_pending && (now >= p->ack_due || now >= e->last_tx + FTFW_TIMER_MS)) {
			send_ack(e, p, p->ack_from, p->last_seq, now);
			p->ack_pending = false;
			p->window = window_size(e);
		}
		if (p->known) {
			repeat_acks(e, p, now);
			repeat_nacks(e, p, now);
		}
	}
}

uint64_t ftfw_rx_deadline(const struct ftfw *e)
{
	uint64_t d = UINT64_MAX;

	for (unsigned i = 0; i < FTFW_PEERS_MAX; i++) {
		const struct ftfw_peer *p = &e->peers[i];

		if (p->ack_pending && !e->notrack)
			d = min_u64(d, p->ack_due);
		if (p->ngaps)
			d = min_u64(d, p->gaps_due);
		if (p->rep_len)
			d = min_u64(d, p->reps[p->rep_head].due);
		if (e->cfg.peer_timeout_ms && p->known && !p->lost)
			d = min_u64(d, max_u64(p->last_heard + ftfw_peer_timeout(e, p),
					       min_u64(e->attentive_since + 2u * e->cfg.alive_ms,
						       p->last_heard + 2u * (uint64_t)ftfw_peer_timeout(e, p))));
		if (p->timeout_ms && !p->lost)
			d = min_u64(d, p->state_since + FLAP_CALM_MS);
	}
	return d;
}
