/*
 * bulk.c - walks of the whole internal table: -B, and the answers to what
 * peers cause (a RESYNC request, a restart, a first message), coalesced
 * and spaced (deviation 21).  The walk goes in slices as the in-flight
 * window drains (deviation 4), so a million flows need no allocation.
 *
 * Section numbers refer to doc/protocol.md.
 */
#include "ftfw_int.h"

/* A bulk walk visits at most this many entries per refill of the tx queue. */
#define BULK_VISIT_MAX  4096u
/* ...and stops a refill once it queued this many flows. */
#define BULK_QUEUE_MAX  256u
/*
 * The spacing of the bulk walks that peers cause (ftfw_bulk_for_peer()):
 * after one ends, the next waits BULK_SPACING_MIN_MS, doubled for each
 * further request within BULK_QUIET_MS of the one before, up to
 * BULK_SPACING_MAX_MS.
 */
#define BULK_SPACING_MIN_MS     1000u
#define BULK_SPACING_MAX_MS     16000u
#define BULK_QUIET_MS           30000u

bool ftfw_bulk_may_run(const struct ftfw *e)
{
	return e->bulk && !ftfw_hello_holds(e);
}

static void bulk_start(struct ftfw *e)
{
	e->bulk = true;
	e->bulk_exp = false;
	e->bulk_cursor = 0;
	e->bulk_rerun = false;
	e->st.bulk_walks++;
	if (e->ops.bulk_begin)
		e->ops.bulk_begin(e->arg);
}

/*
 * A walk is over: the one a request made during it is due at once, any
 * later one after the spacing.  A request during that second walk waits
 * for the spacing too: run at once, it could be followed by another
 * request during it, and so on, every walk back to back.
 */
static void bulk_walk_ended(struct ftfw *e)
{
	bool rerun = e->bulk_rerun;

	e->bulk = false;
	e->bulk_exp = false;
	e->bulk_rerun = false;
	e->bulk_not_before = e->now + e->bulk_spacing;
	if (e->bulk_again) {
		e->bulk_again = false;
		if (rerun) {
			e->bulk_waiting = true;
		} else {
			bulk_start(e);
			e->bulk_rerun = true;
		}
	}
}

/* Queue the next slice of the bulk walk; false once the walk is over. */
bool ftfw_bulk_refill(struct ftfw *e)
{
	unsigned visited = 0, queued = 0;
	uint32_t h;

	while (visited < BULK_VISIT_MAX && queued < BULK_QUEUE_MAX && ftfw_bulk_room(e)) {
		struct ftfw_link *l;

		if (!e->bulk_exp) {
			h = flow_table_next(e->t, &e->bulk_cursor);
			if (!h && e->xt) {
				/* The flows first: an expectation's master must be there before it. */
				e->bulk_exp = true;
				e->bulk_cursor = 0;
				continue;
			}
		} else {
			h = exp_table_next(e->xt, &e->bulk_cursor);
			if (h)
				h |= FTFW_EXP_HANDLE;
		}
		if (!h) {
			bulk_walk_ended(e);
			return queued > 0 || e->bulk;
		}
		visited++;
		/* Dead flows are in a queue until their DEL is acknowledged anyway. */
		if (ftfw_entry_flags(e, h) & FLOW_ENTRY_DEAD)
			continue;
		l = ftfw_link_of(e, h);
		if (l->queue == Q_TX || l->queue == Q_RETX)
			continue;
		/*
		 * In flight: sent again, as protocol.md §3.2's enqueue does.  The requester
		 * may have flushed its copy after receiving it and before asking.
		 */
		ftfw_q_move(e, Q_TX, h, l);
		queued++;
	}
	return true;
}

bool ftfw_bulk_pull(struct ftfw *e, size_t *left)
{
	bool over = false;
	size_t sent = e->ops.bulk_pull(e->arg, *left, &over);

	*left -= sent < *left ? sent : *left;
	if (!over)
		return false;
	if (e->xt) {
		/* The flows first, as in a walk of the table: then the expectations. */
		e->bulk_exp = true;
		e->bulk_cursor = 0;
		return true;
	}
	bulk_walk_ended(e);
	return e->bulk;
}

void ftfw_bulk(struct ftfw *e)
{
	if (e->alarm)
		return;         /* protocol.md §4: the refresh timers do it */
	if (e->nobody)
		return;         /* every peer is gone; the one that returns gets the table (rx.c) */
	e->bulk_waiting = false;
	bulk_start(e);
}

/*
 * Deviation 21.  A walk that a peer causes (its RESYNC request, its
 * restart, its first message) sends the whole table for one 16-byte
 * message, so peers get at most one walk at a time, spaced: a request
 * during a walk makes it run once more from the start when it ends (what it sent before the request
 * may have gone to the process that asked before it restarted), however
 * many come; one during that second run, or soon after a walk ended,
 * waits for the spacing, which doubles while requests keep coming.
 * Whatever the peer sends, the table goes out at most twice per spacing.
 */
void ftfw_bulk_for_peer(struct ftfw *e)
{
	if (e->alarm || e->nobody)
		return;
	if (e->bulk_last_request && e->now - e->bulk_last_request < BULK_QUIET_MS)
		e->bulk_spacing = e->bulk_spacing * 2 > BULK_SPACING_MAX_MS ? BULK_SPACING_MAX_MS
									 : e->bulk_spacing * 2;
	else
		e->bulk_spacing = BULK_SPACING_MIN_MS;
	e->bulk_last_request = e->now ? e->now : 1;
	if (e->bulk) {
		/* A walk that has not begun yet covers the request as it is. */
		bool begun = e->bulk_cursor != 0 || e->bulk_exp;

		e->st.bulk_coalesced += e->bulk_again || !begun;
		e->bulk_again |= begun;
		return;
	}
	if (e->bulk_waiting) {
		e->st.bulk_coalesced++;
		return;
	}
	if (e->now < e->bulk_not_before) {
		e->bulk_waiting = true;
		return;
	}
	bulk_start(e);
}

/* A walk a peer asked for while the spacing ran: due now? */
void ftfw_bulk_tick(struct ftfw *e, uint64_t now)
{
	if (e->bulk_waiting && now >= e->bulk_not_before) {
		e->bulk_waiting = false;
		bulk_start(e);
	}
}
