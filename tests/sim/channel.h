/*
 * channel.h - the simulated sync link: datagrams between nodes with seeded
 * loss, duplication, reordering (extra delay) and truncation.  Every
 * datagram goes to every other node (a multicast group; with two nodes,
 * a unicast link), each copy with its own fate.
 */
#ifndef CTSYNCD_SIM_CHANNEL_H
#define CTSYNCD_SIM_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

struct channel_faults {
	double loss;                    /* per copy */
	double dup;                     /* a second copy, with its own delay */
	double reorder;                 /* chance of an extra delay */
	uint32_t reorder_max_ms;        /* that extra delay, up to */
	double truncate;                /* the copy is cut short at a random length */
	uint32_t latency_ms;            /* base one-way delay */
	uint32_t jitter_ms;             /* plus up to this */
	/* A partition: everything sent in [blackout_from, blackout_to) by blackout_node (-1: all) is lost. */
	uint64_t blackout_from, blackout_to;
	int blackout_node;
};

struct dgram {
	uint64_t at;                    /* delivery time */
	uint64_t order;                 /* ties: send order */
	unsigned from, to;
	uint32_t tag;                   /* the sender's tag[] when it was sent */
	size_t len;
	uint8_t *data;
};

struct channel {
	struct rng *rng;
	unsigned nodes;
	struct channel_faults f;
	struct dgram *heap;             /* min-heap by (at, order) */
	size_t n, cap;
	uint64_t order;
	uint32_t tag[4];                /* per sender, copied into its datagrams (sim: its process generation) */
	/* counters */
	uint64_t sent, delivered, lost, duplicated, truncated, bytes;
};

void channel_init(struct channel *c, struct rng *rng, unsigned nodes);
void channel_free(struct channel *c);
/* Send one datagram from node `from` at `now` to every other node. */
void channel_send(struct channel *c, unsigned from, const void *data, size_t len, uint64_t now);
/* Delivery time of the next datagram, or UINT64_MAX. */
uint64_t channel_next(const struct channel *c);
/* Take the next datagram due at or before `now` into *d (caller frees d->data); 0 if none. */
int channel_pop(struct channel *c, uint64_t now, struct dgram *d);

#endif
