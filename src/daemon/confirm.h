/*
 * confirm.h - a-priori (confirmed) mode (doc/apriori.md): the packets a
 * firewall rule queues (a connection's first reply) are let through once
 * every peer has acknowledged their connection's state.
 *
 * Wiring (replication.c): the engine's ops->acked() goes to
 * confirm_acked(), its peer events and the cache's forgotten or deleted
 * flows to confirm_recheck() and confirm_gone().  Every packet gets a
 * verdict: confirmed, or accepted anyway and counted (timeout, no peer,
 * too many held, connection unknown); the queue rule's `bypass` lets
 * packets through while no ctsyncd listens.
 */
#ifndef CTSYNCD_CONFIRM_H
#define CTSYNCD_CONFIRM_H

#include <stdint.h>

struct cache;
struct config_sync;
struct ftfw;
struct loop;
struct report;
struct confirm;

/* Bind the queue of `s` (ConfirmQueue) and start.  0 or -errno (logged). */
int confirm_start(struct confirm **out, const struct config_sync *s, struct loop *loop,
		  struct cache *cache, struct ftfw *engine);
/* Accept every held packet, unbind, free.  Safe on NULL. */
void confirm_stop(struct confirm *c);
/* A reload: ConfirmTimeout and ConfirmHeldMax of `s`.  0 or -ENOMEM (the old limit stays). */
int confirm_reconfigure(struct confirm *c, const struct config_sync *s);
/* Flow `handle`'s latest state is acknowledged by every peer (ops->acked). */
void confirm_acked(struct confirm *c, uint32_t handle);
/* Flow `handle` leaves the internal cache: its held packets go (counted as gone). */
void confirm_gone(struct confirm *c, uint32_t handle);
/* The peers changed (lost, back, restarted): release what no longer waits for anyone. */
void confirm_recheck(struct confirm *c);
/* The `confirm` section of -s. */
void confirm_report(struct confirm *c, struct report *rep);

#endif
