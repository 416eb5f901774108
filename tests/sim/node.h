/*
 * node.h - one simulated ctsyncd: a "kernel" (the flows that exist on this
 * firewall, changed by the churn whether the daemon runs or not), the
 * daemon's internal table, one external table per sending peer, and the
 * FTFW engine between them and the channel.
 *
 * The daemon's parts are what a restart loses: the engine (queues,
 * sequence numbers), the internal table (rebuilt from the kernel, as a
 * starting daemon dumps it: dead flows waiting for their DEL's ACK are
 * gone) and the external tables.  A starting node asks for a resync
 * (StartupResync); a node that sees a peer restart flushes what it holds
 * from that peer and asks for a resync too.  In ALARM (w->cache_timeout_s
 * set) there is no resync: the refresh timers resend everything, and the
 * node expires the external entries not refreshed for CacheTimeout, as
 * the daemon's caches do.
 *
 * sim --mixed: node 1 runs a model of conntrackd 1.4.7 instead of the
 * daemon (old147.h): the same kernel and churn, its own caches.
 */
#ifndef CTSYNCD_SIM_NODE_H
#define CTSYNCD_SIM_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "channel.h"
#include "flow/flow.h"
#include "flow/table.h"
#include "old147.h"
#include "rng.h"
#include "sync/sync.h"

#define SIM_NODES_MAX 3
#define SIM_DELETED_RING 64

struct world;

struct node {
	unsigned id;
	struct world *w;
	bool up;
	uint64_t up_at;                 /* down: when it starts again */
	uint64_t wake;                  /* up: when its loop wakes (deadline or more to send) */
	bool dirty;                     /* up: run an iteration at the current time */

	/* the firewall: its flows, whether or not the daemon runs */
	struct flow_table *kernel;      /* user area: index into live[] */
	uint32_t *live;                 /* kernel handles, for random picks */
	uint32_t nlive, live_cap;
	uint32_t next_key;
	struct flow_tuple deleted[SIM_DELETED_RING];
	uint32_t ndeleted;

	/* the daemon */
	struct ftfw_config cfg;
	struct flow_table *internal;
	struct flow_table *seen;        /* every key this process had in its kernel (checks only) */
	struct flow_table *ext[SIM_NODES_MAX];  /* user area: the mark generation of the entry */
	/*
	 * Mark and sweep after a peer's restart, as the daemon does
	 * (replication.c, peer_reset()): per peer, since the model keeps one
	 * external table per peer.
	 */
	uint32_t ext_gen[SIM_NODES_MAX];
	bool ext_marked[SIM_NODES_MAX];
	uint64_t marked_at[SIM_NODES_MAX], quiet_since[SIM_NODES_MAX];
	uint64_t data_from[SIM_NODES_MAX];      /* states applied from each peer */
	uint64_t data_seen[SIM_NODES_MAX];
	struct ftfw *e;
	uint8_t *buf;                   /* the channel buffer: MTU - 28 */
	size_t used, cap;
	size_t budget;                  /* bytes per loop iteration */
	uint64_t next_expire;           /* ALARM: the next sweep of the external tables */

	/*
	 * sim --mixed: this node runs the model of conntrackd 1.4.7
	 * (old147.c) instead of the engine; e, internal and ext[] stay NULL
	 * and the model keeps its own caches.
	 */
	bool old;
	struct old147_config ocfg;
	struct old147 *o;

	/* counters */
	uint64_t restarts, churn;
};

struct seqset {
	uint64_t *v;                    /* open addressing; 0 = empty */
	size_t cap, n;
};

struct world {
	struct rng rng;
	struct channel ch;
	uint64_t now;
	unsigned n;
	struct node nodes[SIM_NODES_MAX];
	unsigned enc_opts;
	/*
	 * Initial sequence numbers: random, or ftfw_initial_seq() of a clock
	 * shared by the nodes (clock_base + now, in seconds) and the node id.
	 */
	bool time_seq;
	uint32_t clock_base;
	uint32_t cache_timeout_s;       /* ALARM: CacheTimeout; 0 in the other modes */
	uint64_t expired;               /* ALARM: external entries expired */
	bool trace;                     /* SIM_TRACE=1: log daemon starts, stops, peer events */
	bool no_roundtrip_check;        /* --bulk: trust the codec, time the engine */
	/*
	 * MIXED: the 1.4.7 model's messages (by 1.4.7 process, ctsyncd
	 * process and sequence number) that ctsyncd's engine took, and
	 * those it dropped as old before taking anything later of that
	 * process; for excused() in node.c.  Freed by world_free_delivered().
	 */
	struct seqset accepted, wrong_old;
	uint32_t acc_gen, acc_max;
	bool acc_any;
	/* MIXED: restarts of the 1.4.7 model while ctsyncd ran, and those ctsyncd recognised */
	uint64_t old_restarts_while_up, old_restarts_seen;
	/* MIXED: mismatches excused (see excused() in node.c) */
	uint64_t stale_excused, dropped_excused, not_nacked_excused;
	bool failed;
	char why[512];
};

void world_free_delivered(struct world *w);

/* Record the first failure (callbacks cannot return one). */
void world_fail(struct world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void node_init(struct world *w, struct node *n, unsigned id, const struct ftfw_config *cfg,
	       size_t mtu);
void node_free(struct node *n);
/* Start the daemon (boot or restart): internal table from the kernel, StartupResync. */
void node_up(struct node *n, uint64_t now);
/* Kill the daemon: everything but the kernel is lost; back at now + down_ms. */
void node_down(struct node *n, uint64_t now, uint32_t down_ms);
/* One datagram from the channel. */
void node_receive(struct node *n, const struct dgram *d, uint64_t now);
/* One loop iteration: timers, transmission, flush. */
void node_iterate(struct node *n, uint64_t now);

/* Churn on the kernel, mirrored to the daemon (as its events) when it runs. */
void node_churn_create(struct node *n, uint64_t now);
void node_churn_update(struct node *n, uint64_t now);
void node_churn_delete(struct node *n, uint64_t now);
void node_churn_recreate(struct node *n, uint64_t now);

/*
 * After quiescence: does `reader`'s external table of `owner` equal the
 * owner's kernel, field by field (flow_table_export), and the owner's
 * internal table its kernel?  false with w->why set.  A 1.4.7 model
 * owner may keep dead entries (DELs never acknowledged): only its live
 * ones are compared.
 */
bool node_check(struct node *reader, struct node *owner);
/* Nothing left to send (the engine: ftfw_idle(); the model: its tx queue empty). */
bool node_idle(const struct node *n);

#endif
