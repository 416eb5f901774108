/*
 * old147.h - a model of conntrackd 1.4.7's FTFW endpoint for the
 * simulation (doc/protocol.md §3, which says what 1.4.7 does), to run
 * against ctsyncd's real engine in mixed pairs (sim --mixed).
 *
 * A pure state machine like the engine: the caller passes the time to
 * every call, hands it the datagrams it receives, and gets its messages
 * through ops->emit (the channel buffer of the node, which packs them
 * into datagrams and is flushed after each old147_send(), as 1.4.7's
 * buffered channel is after each tx-queue run, protocol.md §5.1).  Messages are
 * encoded and decoded with the project's codec (wire.h), so the model
 * speaks the real format.
 *
 * What it keeps, as 1.4.7 does: an internal cache (the local flows, with
 * dead ones until their DEL is acknowledged), an external cache (what
 * the peer sent), one sequence counter seeded from the clock, a tx queue
 * and a resend queue ("rsqueue") where each cache object has at most one
 * node, and the receiver state of protocol.md §3.4 (one per process).  What it does
 * not have: a retransmission timeout (only NACKs resend), a session
 * notion beyond HELLO, flow control.
 */
#ifndef CTSYNCD_SIM_OLD147_H
#define CTSYNCD_SIM_OLD147_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow/flow.h"
#include "flow/table.h"

struct old147;

struct old147_config {
	uint32_t resend_queue_size;     /* ResendQueueSize; 0 = 131072 */
	uint32_t ack_window;            /* ACKWindowSize; 0 = 300 */
	unsigned enc_opts;              /* WIRE_ENC_* of what this node sends */
	/* time(NULL) at now = 0: the counter starts at clock_base + now / 1000 (protocol.md §3.2) */
	uint32_t clock_base;
	bool startup_resync;            /* StartupResync on */
	uint32_t table_seed;            /* hash seeds of its caches */
	/* Diagnosis only, not 1.4.7: CT_UPD replaces like CT_NEW instead of laying over. */
	bool upd_replaces;
};

struct old147_ops {
	/* One encoded message for the channel buffer; valid during the call only. */
	void (*emit)(void *arg, const void *msg, size_t len);
	/* Optional: a line about what the model did (HELLO flushes, NACKs and what they found). */
	void (*log)(void *arg, const char *line);
};

/* Why state left the model's resend queue without being acknowledged (1.4.7's own losses). */
struct old147_stats {
	uint64_t msg_sent, data_sent, retransmitted;
	uint64_t ack_sent, nack_sent, alive_sent, resync_sent;
	uint64_t ack_recv, nack_recv, resync_recv, hello_recv;
	uint64_t data_recv, dropped_before, gaps;
	/* data objects whose rsqueue node went without an ACK: */
	uint64_t rsq_overflow_data;     /* ResendQueueSize reached, oldest dropped */
	uint64_t rsq_flushed_data;      /* flushed by a peer's HELLO (protocol.md §3.6) */
	uint64_t rsq_overflow_ctl, rsq_flushed_ctl;
	uint64_t nack_unknown;          /* NACKed numbers not found in the rsqueue */
};

int old147_new(const struct old147_config *cfg, const struct old147_ops *ops, void *arg,
	       uint64_t now, struct old147 **out);
void old147_free(struct old147 *o);

/* The start-up dump: into the internal cache, not sent (protocol.md §6.1). */
void old147_load(struct old147 *o, const struct flow_full *ff, uint64_t now);
/* Kernel events: the internal cache changes and the object is queued (protocol.md §3.2). */
void old147_flow_update(struct old147 *o, const struct flow_full *ff, uint64_t now);
void old147_flow_delete(struct old147 *o, const struct flow_tuple *key, uint64_t now);

/* One datagram from the peer. */
void old147_receive(struct old147 *o, const void *data, size_t len, uint64_t now);
/* The one-second timer (protocol.md §3.3), if due. */
void old147_tick(struct old147 *o, uint64_t now);
/* Run the tx queue: everything in it goes out. */
void old147_send(struct old147 *o, uint64_t now);
/* When old147_tick() has something to do; old147_send_ready(): the tx queue is not empty. */
uint64_t old147_deadline(const struct old147 *o);
bool old147_send_ready(const struct old147 *o);

/* Nothing in the tx queue (1.4.7 has no notion of "done": its rsqueue may hold anything). */
bool old147_idle(const struct old147 *o);
bool old147_hello_phase(const struct old147 *o);
uint32_t old147_rsq_len(const struct old147 *o);

struct flow_table *old147_internal(struct old147 *o);
/*
 * The external cache.  Its user area (uint32_t) holds, for the checks
 * only, the tag set by old147_set_tag() when the entry was last written:
 * the simulation tags each datagram with the sending process's generation.
 */
struct flow_table *old147_external(struct old147 *o);
void old147_set_tag(struct old147 *o, uint32_t tag);

/*
 * For the checks: why might the peer lack the model's latest state of
 * `key` (a live flow, or a dead one whose DEL is not acknowledged)?
 */
enum old147_unrepaired {
	OLD147_REPAIRED,        /* nothing pending: it was acknowledged (or never existed) */
	OLD147_DROPPED,         /* it left the rsqueue unacknowledged: full, or a HELLO flush */
	OLD147_NOT_NACKED,      /* sent, in the rsqueue, never acknowledged and no NACK got here */
	OLD147_QUEUED,          /* waiting in the tx queue (cannot be after quiescence) */
};
/* *seq: the sequence number of that state's last transmission (DROPPED, NOT_NACKED). */
enum old147_unrepaired old147_unrepaired(struct old147 *o, const struct flow_tuple *key,
					  uint32_t *seq);
void old147_stats(const struct old147 *o, struct old147_stats *out);

#endif
