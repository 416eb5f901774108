/*
 * ack.c - what the peers say of our messages: ACK and NACK ranges, the
 * release of what every peer acknowledged, fast retransmission, and the
 * requeueing after a peer's restart or a change of the group.
 *
 * Section numbers refer to doc/protocol.md.
 */
#include "ftfw_int.h"

#include <string.h>

/* ---- ACK and NACK of our messages (protocol.md §3.4 "Digest of control messages") ------------------ */

static void release(struct ftfw *e, uint32_t h, struct ftfw_link *l)
{
	if (l->sent > e->acked_sent_max)
		e->acked_sent_max = l->sent;
	ftfw_q_unlink(e, h, l);
	e->released = true;
	e->progress_at = e->now;
	/* Progress: the peer is there and hears us; the next timeout starts afresh. */
	e->rto = e->cfg.rto_ms;
	e->rto_round_at = 0;
	if (e->ops.acked && !ftfw_is_exp(h))
		e->ops.acked(e->arg, h);
	if (ftfw_entry_flags(e, h) & FLOW_ENTRY_DEAD)
		e->ops.dead_acked(e->arg, h);   /* last: the owner deletes the entry */
	else
		l->life_acked = 1;      /* the peer has a state of this life */
}

static bool all_acked(const struct ftfw *e, uint16_t acked)
{
	return (acked & e->members) == e->members;
}

/*
 * Deviation 14: 1.4.7 takes every message flagged HELLO as in sequence
 * (protocol.md §3.6), so while our handshake lasts it neither NACKs what it
 * missed nor leaves it out of its next ACK: an ACK with HELLO_BACK may
 * cover a message it never got.  A message that went out flagged HELLO
 * is therefore sent once more when acknowledged, without HELLO now that
 * the peer answered, and only that copy's ACK releases it.  A ctsyncd
 * peer NACKs gaps during a handshake (rx.c) and gets a duplicate; the
 * cost is the messages of one round trip after a start.
 */
static void ack_one(struct ftfw *e, uint32_t h, struct ftfw_link *l, void *arg)
{
	if (l->hello) {
		l->hello = 0;
		ftfw_q_move(e, Q_RETX, h, l);
		e->st.hello_resends++;
		return;
	}
	l->acked |= *(const uint16_t *)arg;
	/*
	 * 1.4.7 releases on the first ACK.  With several peers (multicast)
	 * a message leaves only when every peer has it; with one peer that
	 * is the same thing.
	 */
	if (all_acked(e, l->acked))
		release(e, h, l);
}

static bool seq_in(uint32_t s, uint32_t from, uint32_t to)
{
	return !seq_before(s, from) && !seq_before(to, s);
}

/*
 * Deviation 2, the fast path (as TCP's fast retransmit).  Receivers ACK
 * a run of messages as soon as a gap ends it, repeat that ACK 20 ms
 * later, and each ACK of a run also covers the run's earlier ranges
 * (rx.c).  So when a message sent FAST_LEAD_MS after the oldest one in
 * flight has been acknowledged, and the oldest is still not after
 * FAST_WAIT_MS (the repeat, a round trip, reordering), the oldest or its
 * ACKs were lost, and so were its NACKs: send it again now instead of
 * after the RTO.  A wrong guess costs one duplicate message.
 */
#define FAST_LEAD_MS    20u
#define FAST_WAIT_MS    100u

static bool overdue(const struct ftfw *e, const struct ftfw_link *l)
{
	return l->sent + FAST_LEAD_MS <= e->acked_sent_max;
}

void ftfw_fast_retransmit(struct ftfw *e, uint64_t now)
{
	while (e->q[Q_RS].head) {
		uint32_t h = e->q[Q_RS].head;
		struct ftfw_link *l = ftfw_link_of(e, h);

		if (!overdue(e, l) || now < l->sent + FAST_WAIT_MS)
			break;
		ftfw_q_move(e, Q_RETX, h, l);
		e->st.fast_retransmits++;
	}
}

uint64_t ftfw_fast_deadline(const struct ftfw *e)
{
	const struct ftfw_link *l;

	if (e->notrack || !e->q[Q_RS].head)
		return UINT64_MAX;
	l = ftfw_link_of(e, e->q[Q_RS].head);
	return overdue(e, l) ? l->sent + FAST_WAIT_MS : UINT64_MAX;
}

void ftfw_on_ack(struct ftfw *e, unsigned peer, uint32_t from, uint32_t to)
{
	uint16_t bit = (uint16_t)(1u << peer);

	if (e->resync == RESYNC_INFLIGHT && seq_in(e->resync_seq, from, to)) {
		e->resync_acked |= bit;
		if (all_acked(e, e->resync_acked)) {
			e->resync = RESYNC_NONE;
			e->resync_answered = true;
			e->rto = e->cfg.rto_ms;
			e->rto_round_at = 0;
		}
	}
	ftfw_rs_range(e, from, to, ack_one, &bit);
}

/*
 * Deviation 25: a message resent for a NACK is resent for another NACK
 * only once NACK_HOLD_MS have passed since.  A NACK is an answer to a
 * message that came after the one it names, so on a link whose round trip
 * is under the hold only a lost resend, found at once, waits: for the
 * rest of the hold, not for the peer's NACK repeat or our RTO.  A forger
 * that NACKs our whole window over and over gets it at most once per
 * hold; the first NACK of a message, and every NACK on a slower link, is
 * answered at once.
 */
#define NACK_HOLD_MS    50u

static void nack_one(struct ftfw *e, uint32_t h, struct ftfw_link *l, void *arg)
{
	uint16_t bit = *(const uint16_t *)arg;

	/* It says it got this one (deviation 25): a stale or forged NACK. */
	if (l->acked & bit) {
		e->st.nack_acked++;
		return;
	}
	if (l->by_nack && e->now < l->sent + NACK_HOLD_MS) {
		if (!l->nack_held) {
			l->nack_held = 1;
			if (!e->nack_held_n++ || l->sent + NACK_HOLD_MS < e->nack_hold_due)
				e->nack_hold_due = l->sent + NACK_HOLD_MS;
			e->st.nack_held++;
		}
		return;
	}
	/* protocol.md §3.4: back to be sent again, with a new sequence number. */
	ftfw_q_move(e, Q_RETX, h, l);
	l->by_nack = 1;
}

void ftfw_on_nack(struct ftfw *e, unsigned peer, uint32_t from, uint32_t to)
{
	uint16_t bit = (uint16_t)(1u << peer);

	if (e->resync == RESYNC_INFLIGHT && seq_in(e->resync_seq, from, to))
		e->resync = RESYNC_PENDING;
	/* Elements already acknowledged or released are not found: nothing to do (protocol.md §3.4). */
	ftfw_rs_range(e, from, to, nack_one, &bit);
}

/* The holds that ended go to be resent; the resend queue is in the order of sending. */
void ftfw_nack_hold_tick(struct ftfw *e, uint64_t now)
{
	uint32_t h = e->q[Q_RS].head;

	if (!e->nack_held_n || now < e->nack_hold_due)
		return;
	while (h && e->nack_held_n) {
		struct ftfw_link *l = ftfw_link_of(e, h);
		uint32_t next = l->next;

		if (l->nack_held) {
			if (now < l->sent + NACK_HOLD_MS) {
				e->nack_hold_due = l->sent + NACK_HOLD_MS;
				return;
			}
			ftfw_q_move(e, Q_RETX, h, l);   /* clears nack_held */
			l->by_nack = 1;
		}
		h = next;
	}
}

uint64_t ftfw_nack_hold_deadline(const struct ftfw *e)
{
	return e->nack_held_n ? e->nack_hold_due : UINT64_MAX;
}

void ftfw_requeue_inflight(struct ftfw *e)
{
	/*
	 * protocol.md §3.6: 1.4.7 empties its resend queue when a peer says HELLO,
	 * and the states in it are lost for that peer until they change
	 * again.  We send them again instead: the restarted peer has none of
	 * them.  The peer sees ordinary messages either way.
	 */
	while (e->q[Q_RS].head) {
		uint32_t h = e->q[Q_RS].head;

		ftfw_q_move(e, Q_RETX, h, ftfw_link_of(e, h));
	}
	if (e->resync == RESYNC_INFLIGHT)
		e->resync = RESYNC_PENDING;
}

/*
 * Every peer we waited for is gone (silent past peer_timeout_ms): nobody
 * will acknowledge anything, and a peer that returns is brought to our
 * whole table anyway (a soft restart makes it flush what it had of us and
 * ask for our table, and we send it unasked).  So a dead flow leaves the
 * table now instead of waiting for an ACK that cannot come, and nothing is
 * queued until a peer is back: a long outage costs neither memory nor work.
 */
static void nobody_listens(struct ftfw *e)
{
	e->nobody = true;
	e->released = true;             /* the returning peer must see a new space */
	e->bulk = e->bulk_again = e->bulk_waiting = false;
	if (e->resync == RESYNC_INFLIGHT)
		e->resync = RESYNC_PENDING;
	for (int q = Q_TX; q < Q_COUNT; q++)
		while (e->q[q].head)
			ftfw_forget_for_nobody(e, e->q[q].head);
}

void ftfw_forget_for_nobody(struct ftfw *e, uint32_t h)
{
	struct ftfw_link *l = ftfw_link_of(e, h);

	ftfw_q_unlink(e, h, l);
	l->life_acked = 0;              /* the returning peer may hold any life of it */
	if (ftfw_entry_flags(e, h) & FLOW_ENTRY_DEAD) {
		e->st.dels_dropped++;
		e->ops.dead_acked(e->arg, h);
	}
}

void ftfw_members_changed(struct ftfw *e, uint16_t members)
{
	bool gone = (e->members & ~members) != 0;

	e->members = members;
	if (members)
		e->nobody = false;
	if (!gone || e->notrack)
		return;
	if (!members) {
		nobody_listens(e);
		return;
	}
	/* A peer left the set we wait for: what only it had not acknowledged is done. */
	for (uint32_t h = e->q[Q_RS].head, next; h; h = next) {
		struct ftfw_link *l = ftfw_link_of(e, h);

		next = l->next;
		if (all_acked(e, l->acked))
			release(e, h, l);
	}
	if (e->resync == RESYNC_INFLIGHT && all_acked(e, e->resync_acked)) {
		e->resync = RESYNC_NONE;
		e->resync_answered = true;
	}
}

/*
 * A jump larger than the receivers' HELLO_WIN and JUMP_MAX (rx.c): with
 * HELLO it starts a new sequence space at every ctsyncd receiver, as a
 * restart does, and 1.4.7 resets on any HELLO anyway.
 */
#define SOFT_RESTART_JUMP       (1u << 22)

/*
 * In a multicast group a message leaves our resend queue once the peers
 * we know have it; a peer we did not know yet (or had stopped waiting
 * for) may have missed some, a DEL among them, and nothing would ever
 * repair that: NACKs of released messages find nothing, and a bulk send
 * does not remove what the peer should have deleted.  So we make every
 * peer see us restart: a fresh sequence space and HELLO until each
 * answers.  Each takes it for a restart of ours (FTFW_PEER_RESTARTED) and
 * asks for a resync, which our bulk answers (its owner may drop what it
 * holds from us first: ops->peer_reset).  With one peer this never
 * happens: nothing is released before it is known, and it is never
 * stopped being waited for unless peer_timeout_ms is set.
 */
void ftfw_soft_restart(struct ftfw *e)
{
	ftfw_requeue_inflight(e);
	e->seq += SOFT_RESTART_JUMP;
	e->hello_phase = true;
	e->hello_since = e->now;
	e->hello_done = 0;
	e->released = false;
	e->st.soft_restarts++;
}
