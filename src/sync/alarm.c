/*
 * alarm.c - ALARM mode (protocol.md §4; 1.4.7's "persistent"): every flow of the
 * internal table is sent again on its own timer, and the receiver takes
 * any message without flags as data.
 *
 * The timers.  1.4.7 gives each cache object a timer of its own, re-armed
 * to (rand() % RefreshTime + 1) s plus a random multiple of 200 ms in
 * 0.2..1.0 s whenever the object is sent.  Here the timer of a flow is its
 * link (the user area FTFW uses for its queues, struct ftfw_link) in the
 * list of one slot of a wheel: slot = due tick & mask, where a tick is
 * ALARM_TICK_MS.  The wheel spans the longest interval, so a slot holds
 * the flows due at its tick only, unless RefreshTime is so large that the
 * wheel was capped (WHEEL_SLOTS_MAX): then a slot may also hold flows due
 * whole turns later, which its run skips.  Arming and firing cost O(1)
 * per flow and allocate nothing; the next deadline is found through a
 * bitmap of the non-empty slots (64 slots per word), so an idle engine
 * with a few flows does not wake up at every tick.
 *
 * A fired timer moves the flow to the tx queue, so a refresh goes out in
 * the same batches, within the same byte budget, as a change; when the
 * flow is sent (ftfw.c, tx_flow) its timer is armed again.  A change
 * takes the flow off the wheel into the tx queue: that is the re-arm on
 * every update.
 */
#include "ftfw_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 2^16 slots of 100 ms: 109 minutes, RefreshTime up to 6552 s without wrapping. */
#define WHEEL_SLOTS_MAX (1u << 16)

static struct ftfw_link *link_of(const struct ftfw *e, uint32_t h)
{
	return ftfw_link_of(e, h);
}

int ftfw_alarm_init(struct ftfw *e, uint64_t now)
{
	uint64_t span = ((uint64_t)e->refresh_s * 1000u + 1000u) / ALARM_TICK_MS + 2;
	uint32_t n = 64;

	while (n < span && n < WHEEL_SLOTS_MAX)
		n <<= 1;
	e->wheel = calloc(n, sizeof(*e->wheel));
	e->wheel_bits = calloc(n / 64, sizeof(*e->wheel_bits));
	if (!e->wheel || !e->wheel_bits)
		return -ENOMEM;
	e->wheel_mask = n - 1;
	e->wheel_tick = now / ALARM_TICK_MS + 1;
	e->rng = e->cfg.random_seed;
	return 0;
}

void ftfw_alarm_free(struct ftfw *e)
{
	free(e->wheel);
	free(e->wheel_bits);
}

static uint32_t random_u32(struct ftfw *e)
{
	uint64_t z;

	if (e->ops.random)
		return e->ops.random(e->arg);
	/* splitmix64 */
	z = (e->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/*
 * protocol.md §4: (rand() % RefreshTime + 1) seconds, plus 200, 400, 600, 800 or
 * 1000 ms.  (1.4.7 takes 1 us off the sub-second part, which only its
 * timer code needs.)
 */
static uint64_t refresh_interval_ms(struct ftfw *e)
{
	uint64_t s = random_u32(e) % e->refresh_s + 1;
	uint64_t frac = (random_u32(e) % 5 + 1) * 200u;

	return s * 1000u + frac;
}

static void slot_push(struct ftfw *e, uint32_t h, struct ftfw_link *l, uint64_t tick)
{
	uint32_t slot = (uint32_t)(tick & e->wheel_mask);
	uint32_t head = e->wheel[slot];

	l->queue = Q_WHEEL;
	l->sent = tick;
	l->prev = 0;
	l->next = head;
	if (head)
		link_of(e, head)->prev = h;
	e->wheel[slot] = h;
	e->wheel_bits[slot / 64] |= 1ull << (slot % 64);
	e->wheel_len++;
}

void ftfw_alarm_arm(struct ftfw *e, uint32_t h, struct ftfw_link *l, uint64_t now)
{
	uint64_t due = now + refresh_interval_ms(e);
	uint64_t tick = (due + ALARM_TICK_MS - 1) / ALARM_TICK_MS;

	if (l->queue != Q_NONE)
		ftfw_q_unlink(e, h, l);
	if (tick < e->wheel_tick)
		tick = e->wheel_tick;
	slot_push(e, h, l, tick);
}

void ftfw_alarm_unlink(struct ftfw *e, struct ftfw_link *l)
{
	uint32_t slot = (uint32_t)(l->sent & e->wheel_mask);

	if (l->prev)
		link_of(e, l->prev)->next = l->next;
	else
		e->wheel[slot] = l->next;
	if (l->next)
		link_of(e, l->next)->prev = l->prev;
	if (!e->wheel[slot])
		e->wheel_bits[slot / 64] &= ~(1ull << (slot % 64));
	e->wheel_len--;
	l->queue = Q_NONE;
	l->next = l->prev = 0;
	l->sent = 0;
}

void ftfw_alarm_forget_all(struct ftfw *e)
{
	if (!e->alarm)
		return;
	for (uint32_t slot = 0; slot <= e->wheel_mask; slot++)
		while (e->wheel[slot]) {
			uint32_t h = e->wheel[slot];

			ftfw_alarm_unlink(e, link_of(e, h));
		}
}

/* Fire what is due at or before `tick` in slot `slot`; later turns stay. */
static void run_slot(struct ftfw *e, uint32_t slot, uint64_t tick)
{
	uint32_t h = e->wheel[slot];

	while (h) {
		struct ftfw_link *l = link_of(e, h);
		uint32_t next = l->next;

		if (l->sent <= tick) {
			ftfw_q_move(e, Q_TX, h, l);
			e->st.refreshes++;
		}
		h = next;
	}
}

void ftfw_alarm_tick(struct ftfw *e, uint64_t now)
{
	uint64_t last = now / ALARM_TICK_MS;   /* ticks up to this one are due */

	if (!e->alarm || last < e->wheel_tick)
		return;
	if (last - e->wheel_tick > e->wheel_mask) {
		/* Woken up more than a turn late: one pass over every slot does it. */
		for (uint32_t slot = 0; slot <= e->wheel_mask; slot++)
			if (e->wheel[slot])
				run_slot(e, slot, last);
		e->wheel_tick = last + 1;
		return;
	}
	for (; e->wheel_tick <= last; e->wheel_tick++) {
		uint32_t slot = (uint32_t)(e->wheel_tick & e->wheel_mask);

		if (e->wheel_bits[slot / 64] & (1ull << (slot % 64)))
			run_slot(e, slot, e->wheel_tick);
	}
}

uint64_t ftfw_alarm_deadline(const struct ftfw *e)
{
	uint32_t nslots = e->wheel_mask + 1, start, dist = 0;

	if (!e->alarm || !e->wheel_len)
		return UINT64_MAX;
	start = (uint32_t)(e->wheel_tick & e->wheel_mask);
	/* The first non-empty slot from wheel_tick on, a word of the bitmap at a time. */
	while (dist < nslots) {
		uint32_t slot = (start + dist) & e->wheel_mask;
		uint64_t word = e->wheel_bits[slot / 64] >> (slot % 64);

		if (word)
			return (e->wheel_tick + dist + (uint32_t)__builtin_ctzll(word)) * ALARM_TICK_MS;
		dist += 64 - slot % 64;
	}
	return UINT64_MAX;      /* cannot happen: wheel_len counts what the bits mark */
}

/*
 * protocol.md §4: the receiver takes a message as data iff its flags are 0, whatever
 * its type (types beyond EXP_DEL are then "bad type", protocol.md §2.3), and ignores
 * every other one.  Sequence numbers are followed for the statistics only,
 * as in NOTRACK: every message is accepted, old or not.
 */
void ftfw_alarm_receive(struct ftfw *e, unsigned peer, struct ftfw_peer *p, const struct wire_msg *m)
{
	uint32_t seq = m->hdr.seq;

	if (m->hdr.flags) {
		e->st.flagged_ignored++;
		return;
	}
	if (m->hdr.type > WIRE_T_EXP_DEL)
		e->st.malformed[WIRE_R_BAD_TYPE]++;
	else
		ftfw_rx_data(e, peer, m);
	ftfw_rx_seq_stats(e, p, seq);
}
