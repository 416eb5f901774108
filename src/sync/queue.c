/*
 * queue.c - the engine's queues: intrusive doubly linked lists of table
 * handles, with the links in each entry's user area, plus a ring that
 * finds an in-flight flow by its sequence number.
 *
 * A flow is in at most one queue (protocol.md §3.2: one queue node per cache object).
 * Queueing allocates nothing; the ring is allocated once by ftfw_new().
 *
 * The resend queue (Q_RS) is kept in transmission order, which is also
 * sequence order, since every transmission takes the next sequence number
 * and appends.  Its head is therefore both the oldest message (for the
 * retransmission timeout) and the lowest sequence number in flight (the
 * start of our window).
 *
 * The ring.  An ACK or NACK names a range of sequence numbers; walking the
 * resend queue for each would cost O(in flight) per message when old
 * elements wait at its head (lost ACKs, a peer that acknowledges less than
 * the others).  ring[seq & mask] holds the handle sent as `seq`, so a range
 * costs O(its length) instead; a range longer than the queue is walked
 * through the queue.  Two in-flight messages never share a slot: before a
 * data message takes the next number, the message still holding its
 * slot, sent a whole ring of numbers earlier, goes back to be
 * retransmitted (ftfw.c).  The ring has at least twice ResendQueueSize
 * slots, so that only a message long overdue is sent early that way.
 */
#include "ftfw_int.h"

#include <errno.h>
#include <stdlib.h>

struct ftfw_link *ftfw_link_of(const struct ftfw *e, uint32_t h)
{
	if (ftfw_is_exp(h))
		return e->xt ? exp_table_user(e->xt, h & ~FTFW_EXP_HANDLE) : NULL;
	return flow_table_user(e->t, h);
}

unsigned ftfw_entry_flags(const struct ftfw *e, uint32_t h)
{
	if (ftfw_is_exp(h))
		return e->xt ? exp_table_flags(e->xt, h & ~FTFW_EXP_HANDLE) : 0;
	return flow_table_flags(e->t, h);
}

#define L(e, h) ftfw_link_of(e, h)

void ftfw_q_append(struct ftfw *e, enum ftfw_queue q, uint32_t h, struct ftfw_link *l)
{
	struct ftfw_list *list = &e->q[q];

	/* New content is no answer to a NACK: its NACKs are answered at once (ack.c). */
	if (q == Q_TX)
		l->by_nack = 0;
	l->queue = (uint8_t)q;
	l->next = 0;
	l->prev = list->tail;
	if (list->tail)
		L(e, list->tail)->next = h;
	else
		list->head = h;
	list->tail = h;
	list->len++;
}

void ftfw_q_unlink(struct ftfw *e, uint32_t h, struct ftfw_link *l)
{
	if (l->nack_held) {
		l->nack_held = 0;
		e->nack_held_n--;
	}
	struct ftfw_list *list;

	if (l->queue == Q_NONE)
		return;
	if (l->queue == Q_WHEEL) {
		ftfw_alarm_unlink(e, l);
		return;
	}
	list = &e->q[l->queue];
	if (l->prev)
		L(e, l->prev)->next = l->next;
	else
		list->head = l->next;
	if (l->next)
		L(e, l->next)->prev = l->prev;
	else
		list->tail = l->prev;
	list->len--;
	if (l->queue == Q_RS && e->ring[l->seq & e->ring_mask] == h)
		e->ring[l->seq & e->ring_mask] = 0;
	l->queue = Q_NONE;
	l->next = l->prev = 0;
	l->acked = 0;
}

void ftfw_q_move(struct ftfw *e, enum ftfw_queue q, uint32_t h, struct ftfw_link *l)
{
	ftfw_q_unlink(e, h, l);
	ftfw_q_append(e, q, h, l);
}

void ftfw_rs_push(struct ftfw *e, uint32_t h, struct ftfw_link *l, uint32_t seq, uint64_t now)
{
	ftfw_q_unlink(e, h, l);
	l->seq = seq;
	l->sent = now;
	l->acked = 0;
	ftfw_q_append(e, Q_RS, h, l);
	e->ring[seq & e->ring_mask] = h;
}

uint32_t ftfw_ring_occupant(const struct ftfw *e, uint32_t seq)
{
	return e->ring[seq & e->ring_mask];
}

uint32_t ftfw_ring_get(const struct ftfw *e, uint32_t seq, struct ftfw_link **lp)
{
	uint32_t h = e->ring[seq & e->ring_mask];
	struct ftfw_link *l;

	if (!h)
		return 0;
	l = L(e, h);
	/* The slot may hold the message sent ring-size sequence numbers earlier or later. */
	if (!l || l->queue != Q_RS || l->seq != seq)
		return 0;
	*lp = l;
	return h;
}

void ftfw_rs_range(struct ftfw *e, uint32_t from, uint32_t to,
		   void (*fn)(struct ftfw *e, uint32_t h, struct ftfw_link *l, void *arg), void *arg)
{
	struct ftfw_list *rs = &e->q[Q_RS];
	uint32_t base, span, lo, hi;
	int64_t lo_off, hi_off;

	if (!rs->len)
		return;
	/*
	 * Our window is [base, e->seq - 1]: below base nothing is in flight,
	 * from e->seq on nothing was sent.  Whatever the peer names outside it
	 * is not ours (a stale range, or, in a multicast group, a range in
	 * another node's sequence space) and is ignored.
	 */
	base = L(e, rs->head)->seq;
	span = e->seq - base;
	lo_off = (int32_t)(from - base);
	hi_off = (int32_t)(to - base);
	if (hi_off < 0 || lo_off >= (int64_t)span || lo_off > hi_off)
		return;
	if (lo_off < 0)
		lo_off = 0;
	if (hi_off > (int64_t)span - 1)
		hi_off = (int64_t)span - 1;
	lo = (uint32_t)lo_off;
	hi = (uint32_t)hi_off;

	if ((uint64_t)hi - lo < rs->len) {
		for (uint64_t off = lo; off <= hi; off++) {
			struct ftfw_link *l;
			uint32_t h = ftfw_ring_get(e, base + (uint32_t)off, &l);

			if (h)
				fn(e, h, l, arg);
		}
		return;
	}
	for (uint32_t h = rs->head, next; h; h = next) {
		struct ftfw_link *l = L(e, h);
		uint32_t off = l->seq - base;

		next = l->next;
		if (off > hi)
			break;          /* sequence order: the rest is later (protocol.md §3.4: stop after `to`) */
		if (off >= lo)
			fn(e, h, l, arg);
	}
}

int ftfw_ring_alloc(struct ftfw *e, uint32_t slots)
{
	uint32_t n = 64;

	while (n < slots && n < (1u << 31))
		n <<= 1;
	e->ring = calloc(n, sizeof(*e->ring));
	if (!e->ring)
		return -ENOMEM;
	e->ring_mask = n - 1;
	return 0;
}

enum ftfw_ack_state ftfw_flow_ack_state(const struct ftfw *e, uint32_t h)
{
	const struct ftfw_link *l;

	if (e->notrack || !e->members)
		return FTFW_ACK_NOBODY;
	l = ftfw_link_of(e, h);
	return l->queue == Q_TX || l->queue == Q_RETX || l->queue == Q_RS ? FTFW_ACK_PENDING :
	       FTFW_ACK_DONE;
}
