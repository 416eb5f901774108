/*
 * window.c - the replay window of a proven session (envelope.md §4).
 *
 * A counter is taken at most once: above the floor (the counter of the
 * session's proof, so that nothing sealed before the proof is ever taken),
 * and either above the highest taken so far or one of the
 * ENVELOPE_WINDOW - 1 below it that was not taken yet.  Datagrams that
 * arrive out of order within the window are taken once each; anything
 * older is refused, even if it was never seen.
 */
#include <string.h>

#include "envelope_int.h"

static bool bit_get(const struct env_window *w, uint64_t c)
{
	unsigned i = (unsigned)(c % ENVELOPE_WINDOW);

	return w->seen[i / 64] >> (i % 64) & 1;
}

static void bit_set(struct env_window *w, uint64_t c, bool on)
{
	unsigned i = (unsigned)(c % ENVELOPE_WINDOW);
	uint64_t m = (uint64_t)1 << (i % 64);

	if (on)
		w->seen[i / 64] |= m;
	else
		w->seen[i / 64] &= ~m;
}

void env_window_start(struct env_window *w, uint64_t floor)
{
	w->floor = floor;
	w->highest = floor;
	memset(w->seen, 0, sizeof(w->seen));
}

bool env_window_fresh(const struct env_window *w, uint64_t c)
{
	if (c <= w->floor)
		return false;
	if (c > w->highest)
		return true;
	if (w->highest - c >= ENVELOPE_WINDOW)
		return false;
	return !bit_get(w, c);
}

void env_window_take(struct env_window *w, uint64_t c)
{
	if (c > w->highest) {
		/*
		 * The bits of the counters the window slides over are cleared:
		 * they stand for counters ENVELOPE_WINDOW below, long refused.
		 */
		if (c - w->highest >= ENVELOPE_WINDOW)
			memset(w->seen, 0, sizeof(w->seen));
		else
			for (uint64_t x = w->highest + 1; x < c; x++)
				bit_set(w, x, false);
		w->highest = c;
	}
	bit_set(w, c, true);
}
