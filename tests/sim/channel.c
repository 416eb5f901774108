/*
 * channel.c - the simulated link (see channel.h).
 */
#include "channel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void channel_init(struct channel *c, struct rng *rng, unsigned nodes)
{
	memset(c, 0, sizeof(*c));
	c->rng = rng;
	c->nodes = nodes;
}

void channel_free(struct channel *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->heap[i].data);
	free(c->heap);
	c->heap = NULL;
	c->n = c->cap = 0;
}

static bool earlier(const struct dgram *a, const struct dgram *b)
{
	return a->at < b->at || (a->at == b->at && a->order < b->order);
}

static void push(struct channel *c, struct dgram d)
{
	size_t i;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->heap = realloc(c->heap, c->cap * sizeof(*c->heap));
		if (!c->heap) {
			perror("sim: channel");
			exit(2);
		}
	}
	i = c->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!earlier(&d, &c->heap[parent]))
			break;
		c->heap[i] = c->heap[parent];
		i = parent;
	}
	c->heap[i] = d;
}

static void enqueue(struct channel *c, unsigned from, unsigned to, const void *data, size_t len,
		    uint64_t now)
{
	struct dgram d;
	uint64_t delay = c->f.latency_ms + (c->f.jitter_ms ? rng_below(c->rng, c->f.jitter_ms + 1) : 0);

	if (rng_chance(c->rng, c->f.reorder))
		delay += rng_range(c->rng, 1, c->f.reorder_max_ms ? c->f.reorder_max_ms : 1);
	if (len > 1 && rng_chance(c->rng, c->f.truncate)) {
		len = rng_range(c->rng, 1, (uint32_t)len - 1);
		c->truncated++;
	}
	d.at = now + delay;
	d.order = c->order++;
	d.from = from;
	d.to = to;
	d.tag = from < 4 ? c->tag[from] : 0;
	d.len = len;
	d.data = malloc(len);
	if (!d.data) {
		perror("sim: channel");
		exit(2);
	}
	memcpy(d.data, data, len);
	push(c, d);
}

void channel_send(struct channel *c, unsigned from, const void *data, size_t len, uint64_t now)
{
	c->sent++;
	c->bytes += len;
	for (unsigned to = 0; to < c->nodes; to++) {
		if (to == from)
			continue;       /* IP_MULTICAST_LOOP off (protocol.md §5.3) */
		if (rng_chance(c->rng, c->f.loss) ||
		    (now >= c->f.blackout_from && now < c->f.blackout_to &&
		     (c->f.blackout_node < 0 || (unsigned)c->f.blackout_node == from))) {
			c->lost++;
			continue;
		}
		enqueue(c, from, to, data, len, now);
		if (rng_chance(c->rng, c->f.dup)) {
			c->duplicated++;
			enqueue(c, from, to, data, len, now);
		}
	}
}

uint64_t channel_next(const struct channel *c)
{
	return c->n ? c->heap[0].at : UINT64_MAX;
}

int channel_pop(struct channel *c, uint64_t now, struct dgram *out)
{
	struct dgram last;
	size_t i = 0;

	if (!c->n || c->heap[0].at > now)
		return 0;
	*out = c->heap[0];
	last = c->heap[--c->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct dgram *best = &last;

		if (l < c->n && earlier(&c->heap[l], best)) {
			m = l;
			best = &c->heap[l];
		}
		if (r < c->n && earlier(&c->heap[r], best))
			m = r;
		if (m == i)
			break;
		c->heap[i] = c->heap[m];
		i = m;
	}
	if (c->n)
		c->heap[i] = last;
	c->delivered++;
	return 1;
}
