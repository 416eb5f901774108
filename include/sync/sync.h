/*
 * sync/sync.h - the replication modes as pure state machines (module `sync`).
 *
 * FTFW, the reliable mode of conntrackd 1.4.7, with its wire behaviour
 * (doc/protocol.md §3): one sequence counter for every message sent, ACK
 * window, NACK on gaps, HELLO/HELLO_BACK, ALIVE, RESYNC; and NOTRACK and
 * ALARM (protocol.md §4, best effort) as variants of the same engine (see "ALARM" below).  What ctsyncd adds so that the
 * pair always converges, still in the 1.4.7 wire format, is said in
 * doc/protocol.md §7.1 and at each place in src/sync/ where we do it.
 *
 * The engine is pure: no system call, no clock, no randomness of its own
 * (ALARM's is injected), no allocation after ftfw_new().  The caller passes the time (`now`, in
 * milliseconds of any monotonic clock) to every call that needs it, and
 * gets output through the callbacks of struct ftfw_ops, called
 * synchronously from within the engine's calls.  Not thread-safe.
 *
 * The internal table.  The engine sends the flows of the caller's internal
 * table (struct flow_table, created with at least FTFW_USER_BYTES of user
 * area): a flow is queued by its handle, with the queue links kept in the
 * entry's user area, so queueing allocates nothing and a flow is in at
 * most one queue at a time.  The message for a flow is encoded when it is
 * transmitted, from the flow's current state, with the type from the entry
 * flags (FLOW_ENTRY_DEAD -> CT_DEL, FLOW_ENTRY_UPDATED -> CT_UPD, else
 * CT_NEW): only the latest state of a flow is ever sent or resent.
 * The owner changes the table and then tells the engine:
 *   - after an upsert or flow_table_mark_dead(): ftfw_flow_changed();
 *   - before flow_table_delete() of an entry it deletes on its own (a
 *     flush, a purge): ftfw_flow_forget(); before flow_table_clear():
 *     ftfw_forget_all();
 *   - a dead flow is deleted by the owner when the engine calls
 *     ops->dead_acked() (its CT_DEL was acknowledged by every peer; in
 *     NOTRACK: sent).  The engine never deletes entries itself.
 *
 * Peers.  The caller names each sending peer by a small id below
 * FTFW_PEERS_MAX (its link address mapped to an index; 0 for the one peer
 * of a unicast link).  The engine keeps one struct per peer: the receiver
 * state of that peer's sequence space (what 1.4.7 keeps once per process,
 * protocol.md §3.4) and what the sender needs to know of it (which of our messages it
 * acknowledged, whether it answered our HELLO).  With multicast and three
 * or more nodes, every node then tracks every other node's sequence space
 * on its own, and a message of ours leaves the resend queue only when
 * every peer has acknowledged it.  ACK and NACK ranges do not say whose
 * sequence space they are in; the engine only applies a range to the part
 * that lies inside its own window of unacknowledged sequence numbers, so
 * nodes of a multicast group must start their counters far apart: see
 * ftfw_initial_seq() (time(NULL), as 1.4.7 uses it, makes nodes started
 * in the same second share a sequence space).
 *
 * Beyond 1.4.7.  What ctsyncd does differently changes only when and which
 * messages it sends, never their format: a 1.4.7 peer sees ordinary
 * messages, and its own behaviour is what doc/protocol.md §3 describes.
 * Every difference is numbered in doc/protocol.md §7.1 ("Deviation 1" to
 * "Deviation 23"); the code says "deviation N" where it does one.
 *
 * ALARM (1.4.7's "persistent" mode, protocol.md §4).  No HELLO, ACK, NACK, ALIVE or
 * RESYNC is ever sent; every message is data with flags 0 and the next
 * number of the one sequence counter, as in NOTRACK.  Every flow of the
 * internal table has a refresh timer: its current state is sent again
 * (rand() % RefreshTime + 1) s plus a random multiple of 200 ms in
 * 0.2..1.0 s after it was last sent, and a change is sent at once (and
 * so re-arms the timer).  The timers are a wheel of ALARM_TICK_MS slots
 * whose lists run through the same user-area links as FTFW's queues
 * (one daemon runs one mode): arming, re-arming and firing allocate
 * nothing and cost O(1) per flow; a timer fires up to ALARM_TICK_MS
 * late.  The randomness is injected: ops->random, or a PRNG seeded with
 * cfg->random_seed.  A dead flow's DEL is sent once, then ops->dead_acked
 * (as in NOTRACK).  The receiver takes a message as data iff its flags
 * are 0 (types 6..15 then count as "bad type"); any flagged message is
 * counted (flagged_ignored) and ignored.  The expiry of the peer's states
 * CacheTimeout seconds after their last refresh is the owner's: the
 * engine does not see the external table.  A flow the owner inserts
 * without a change to send (the start-up dump, -R) gets its timer from
 * ftfw_flow_loaded(); flows already in the table at ftfw_new() get one
 * there.  ftfw_request_resync() and ftfw_bulk() do nothing in ALARM.
 *
 * Errors: functions returning int give 0 or a negative errno.
 */
#ifndef CTSYNCD_SYNC_H
#define CTSYNCD_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow/flow.h"
#include "flow/exp_table.h"
#include "flow/table.h"
#include "wire/wire.h"

struct ftfw;

/* Bytes of the internal table's user area the engine needs (flow_table_options.user_bytes). */
#define FTFW_USER_BYTES         24u
/* Peer ids are 0 .. FTFW_PEERS_MAX - 1. */
#define FTFW_PEERS_MAX          16u

/* Defaults, in the units of struct ftfw_config. */
#define FTFW_DEFAULT_RESEND_QUEUE_SIZE  131072u /* ResendQueueSize (protocol.md §3.2, §8) */
#define FTFW_DEFAULT_ACK_WINDOW         300u    /* ACKWindowSize (protocol.md §3.4, §8) */
#define FTFW_TIMER_MS                   1000u   /* 1.4.7's constant ALIVE/ACK timer (protocol.md §3.3) */
#define FTFW_DEFAULT_RTO_MS             1500u
#define FTFW_DEFAULT_RTO_MAX_MS         12000u
#define ALARM_DEFAULT_REFRESH_S         60u     /* RefreshTime (protocol.md §4, §8) */
/* Granularity of ALARM's timer wheel: a refresh is due on a multiple of this. */
#define ALARM_TICK_MS                   100u

/*
 * The longest message the engine emits: a conntrack message
 * (WIRE_CT_MAX_LEN; labels make it longer than some MTUs, and the channel
 * then sends it in a datagram of its own) or a 16-byte control message.
 */
#define FTFW_MSG_MAX            WIRE_CT_MAX_LEN

enum ftfw_mode {
	FTFW_MODE_FTFW,         /* reliable (protocol.md §3) */
	FTFW_MODE_NOTRACK,      /* best effort (protocol.md §4): no HELLO, ACK, NACK; nothing resent */
	FTFW_MODE_ALARM,        /* protocol.md §4: every flow re-sent on its own timer; nothing else */
};

struct ftfw_config {
	enum ftfw_mode mode;
	/*
	 * ResendQueueSize: the most data messages in flight (sent, not yet
	 * acknowledged by every peer).  Beyond it flows wait in the tx queue.
	 * 0 = FTFW_DEFAULT_RESEND_QUEUE_SIZE.  The engine allocates 4 bytes
	 * per sequence number of twice that (rounded up to a power of two):
	 * 1 MiB for the default.
	 */
	uint32_t resend_queue_size;
	/* ACKWindowSize: ACK after this many in-order data or RESYNC messages.  0 = default. */
	uint32_t ack_window;
	/* WIRE_ENC_* for the conntrack messages sent (TIMEOUT unless CommitTimeout, WSCALE ...). */
	unsigned enc_opts;
	/* Retransmission timeout, first and largest value, ms.  0 = defaults. */
	uint32_t rto_ms;
	uint32_t rto_max_ms;
	/*
	 * A peer not heard from for this long stops holding back our resend
	 * queue (its acknowledgements are no longer waited for).  When it is
	 * heard again it may have missed messages released meanwhile, so we
	 * start a new sequence space with HELLO, which its owner takes for a
	 * restart of ours (FTFW_PEER_RESTARTED: flush, resync).  When every
	 * peer is gone, nothing waits for them: dead flows leave the table at
	 * once (their DELs are counted in dels_dropped), nothing is queued,
	 * and the first peer back gets a new sequence space and our whole
	 * table, so a long outage costs neither memory nor work and still ends
	 * with the peer holding exactly our table.  0 = never: unacknowledged
	 * states wait for the peer however long it is away.
	 */
	uint32_t peer_timeout_ms;
	/*
	 * FTFW, NOTRACK: an idle engine sends an ALIVE this often, ms; 0 =
	 * FTFW_TIMER_MS, 1.4.7's second.  Shorter lets the peers' timeouts
	 * tell a dead node sooner; ACKs still wait up to FTFW_TIMER_MS.
	 */
	uint32_t alive_ms;
	/*
	 * ACK exactly as 1.4.7 does: no widened ranges, no repeats
	 * (deviations 10 and 11).  For comparing traces with 1.4.7's;
	 * the default (false) repairs lost ACKs sooner.
	 */
	bool plain_acks;
	/*
	 * FTFW: do not send our table to a peer heard for the first time
	 * (FTFW_PEER_NEW).  The default (false) sends it unasked, as the
	 * daemon does: a 1.4.7 peer asks for it once, at its own start, and
	 * that request is lost if we were down then or if our HELLO flushed
	 * it from its resend queue (protocol.md §3.6).  For the simulator's
	 * --no-bulk-on-new, to show what the bulk repairs.
	 */
	bool no_bulk_on_new;
	/* ALARM: RefreshTime, seconds (0 = ALARM_DEFAULT_REFRESH_S). */
	uint32_t refresh_time_s;
	/* ALARM: the seed of the engine's PRNG, used when ops->random is NULL. */
	uint64_t random_seed;
};

/*
 * What happened to a sending peer, for ops->peer_event.  The engine acts
 * on NEW and RESTARTED itself, right after telling ops->peer_event.
 */
enum ftfw_peer_event {
	/*
	 * First message ever from this peer id.  FTFW: the engine starts a
	 * bulk send (ftfw_bulk()) unless cfg->no_bulk_on_new.
	 */
	FTFW_PEER_NEW,
	/*
	 * The peer restarted: a HELLO, or a jump of its sequence numbers that
	 * no loss explains, began a new sequence space.  What it had sent
	 * before and we have not received is gone with it, and what it
	 * received from us is gone too.  The engine queues our unacknowledged
	 * flows again, then tells ops->peer_event, calls ops->peer_reset,
	 * requests a resync (ftfw_request_resync()) and starts a bulk send
	 * (ftfw_bulk()), in that order.
	 */
	FTFW_PEER_RESTARTED,
	FTFW_PEER_LOST,         /* silent for peer_timeout_ms: no longer waited for */
	FTFW_PEER_BACK,         /* heard again after FTFW_PEER_LOST */
	/*
	 * A message continued the sequence space a restart had replaced: one
	 * of the two was forged (or the old process's datagrams arrive late).
	 * Messages of both are taken (deviation 24).
	 */
	FTFW_PEER_TWO_SPACES,
};

/*
 * The callbacks.  `arg` is the pointer given to ftfw_new().  They run
 * inside the engine's calls and must not call back into the engine, with
 * these exceptions: dead_acked() may flow_table_delete() the handle (it is
 * already out of every queue), peer_event() may call ftfw_request_resync()
 * and ftfw_bulk() and read ftfw_peer_stats() (which has the event's
 * effect on the peer already), and peer_reset() may change the external
 * table.
 */
struct ftfw_ops {
	/*
	 * One encoded message, to be appended to the channel's buffer (which
	 * packs messages into datagrams of MTU - 28 and flushes once per loop
	 * iteration).  `msg` is valid during the call only.  Required.
	 */
	void (*emit)(void *arg, const void *msg, size_t len);
	/*
	 * A conntrack state received from `peer`: type CT_NEW (replace),
	 * CT_UPD (update or create) or CT_DEL (remove).  `f` is normalised
	 * and valid during the call only.  Required.
	 */
	void (*apply)(void *arg, unsigned peer, uint8_t type, const struct flow_full *f);
	/* An expectation (EXP_NEW/UPD/DEL) from `peer`.  NULL: decoded, counted, ignored. */
	void (*apply_exp)(void *arg, unsigned peer, uint8_t type, const struct flow_exp *x);
	/* The CT_DEL of dead flow `handle` was acknowledged: delete it now.  Required. */
	void (*dead_acked)(void *arg, uint32_t handle);
	/*
	 * Optional hint: `f` (normalised, valid during the call only) will
	 * soon be given to apply() with this type, unless its message turns
	 * out to be old or the engine restarts the peer first.  The engine
	 * decodes the states of several messages before it applies the first
	 * of them (ftfw_receive_batch()), so that the caller can start the
	 * table lookups early (flow_table_prefetch()) and their cache misses
	 * overlap.  Must not change any state the engine or apply() can see.
	 */
	void (*prefetch)(void *arg, unsigned peer, uint8_t type, const struct flow_full *f);
	/*
	 * Optional notification of what happened to `peer` (for a log, for
	 * counters): the engine has its own policy for each event (see enum
	 * ftfw_peer_event), and applies it whether or not this is set.
	 */
	void (*peer_event)(void *arg, unsigned peer, enum ftfw_peer_event ev);
	/*
	 * `peer` restarted (FTFW_PEER_RESTARTED): the states you hold from
	 * it may include some it no longer has (its DELs lost with it).
	 * Forget them, or mark them and sweep what the peer does not send
	 * again (the daemon, src/cache/remote.c).  Called after peer_event()
	 * and before the engine asks for the peer's whole table again.
	 * Optional: NULL = nothing to forget (the states held are not the
	 * peer's alone, say).
	 */
	void (*peer_reset)(void *arg, unsigned peer);
	/*
	 * ALARM: a random 32-bit value for the refresh intervals.  Optional:
	 * NULL uses a PRNG seeded with cfg->random_seed.
	 */
	uint32_t (*random)(void *arg);
	/*
	 * NOTRACK with DisableInternalCache: the owner keeps no table of its
	 * flows (the engine's is empty) and walks the kernel's instead.  Both
	 * or neither.  A bulk walk (ftfw_bulk(), and every walk a peer causes,
	 * coalesced and spaced as usual) calls bulk_begin() when it starts or
	 * starts over; then ftfw_send(), where it would walk the table's flows,
	 * calls bulk_pull() with the bytes it may still send: the owner sends
	 * states with ftfw_send_state() (the one call back into the engine
	 * allowed there), returns the bytes they took, and sets *over once
	 * its walk has ended.  The expectations of the table follow as usual.
	 */
	void (*bulk_begin)(void *arg);
	size_t (*bulk_pull)(void *arg, size_t budget, bool *over);
	/*
	 * Optional (a-priori mode, src/daemon/confirm.c): the latest message
	 * of flow `handle` left the resend queue, acknowledged by every peer
	 * still waited for (a peer lost meanwhile no longer counts).  FTFW
	 * only; for a dead flow it comes just before dead_acked().
	 */
	void (*acked)(void *arg, uint32_t handle);
};

/*
 * An initial sequence number for ftfw_new(), from the time in seconds and
 * a value that differs between the nodes of a group (a hash of the node's
 * sync address).  1.4.7 uses time(NULL) itself; so may we, but then a
 * daemon restarted during an unfinished handshake starts a few numbers
 * from where it stopped, and its peer cannot tell the restart from the
 * handshake going on (the format has no session id; see rx.c).  This
 * scrambles the time (a bijection: one value per second for 136 years)
 * so that successive runs start far apart, and the salt keeps the nodes
 * of a multicast group apart.  A random value (getrandom) does as well.
 */
uint32_t ftfw_initial_seq(uint32_t time_s, uint32_t salt);

/*
 * Create an engine over `internal` (which must have a user area of at
 * least FTFW_USER_BYTES; the engine resets the user area of every entry
 * already in it, and owns the first FTFW_USER_BYTES of it from now on).
 * `initial_seq` is the first sequence number sent: ftfw_initial_seq()
 * or a random value (1.4.7: time(NULL)).
 * `now` starts the ALIVE timer: the first ALIVE (with HELLO) goes out one
 * second later if nothing else was sent.  The caller keeps `internal`
 * alive as long as the engine.  The engine takes about 280 KiB plus its
 * in-flight ring (1 MiB with the default ResendQueueSize), all here.
 * 0 and *out, or -EINVAL (no emit, apply or dead_acked callback, an
 * unknown mode, or an entry already in the table without a user area; a
 * user area too small cannot be seen) or -ENOMEM.
 */
int ftfw_new(const struct ftfw_config *cfg, const struct ftfw_ops *ops, void *arg,
	     struct flow_table *internal, uint32_t initial_seq, uint64_t now,
	     struct ftfw **out);
/* Free the engine; the table and its entries are the caller's and are left as they are. */
void ftfw_free(struct ftfw *e);
/*
 * A reload: the resend queue's size, the ACK window, the encoding of sent
 * states, RefreshTime and the peer timeout of `cfg` replace the engine's;
 * everything else of `cfg` is ignored.  Sequence numbers, queues, peers
 * and what is in flight stay: a larger ResendQueueSize grows the in-flight
 * ring in place, a smaller one only holds back new sends until the
 * acknowledgements bring it under.  0, -EINVAL (another mode) or -ENOMEM
 * (nothing changed).
 */
int ftfw_reconfigure(struct ftfw *e, const struct ftfw_config *cfg);

/* ---- the internal table ------------------------------------------------------ */

/*
 * Flow `h` was inserted, updated, revived or marked dead: queue it for
 * transmission.  Already waiting in the tx queue: nothing to do (its
 * current state is what will be sent).  In flight: the message in flight
 * is abandoned (an ACK or NACK naming it will find nothing) and the flow
 * waits in the tx queue.  -ENOENT for a handle the table does not know.
 */
int ftfw_flow_changed(struct ftfw *e, uint32_t h);
/*
 * Flow `h` was inserted without a change for the peer (the start-up dump,
 * -R): in ALARM it gets a refresh timer if it has none; other modes send
 * nothing (1.4.7 sends a dump on -B or RESYNC only).  -ENOENT as above.
 */
int ftfw_flow_loaded(struct ftfw *e, uint32_t h);
/* Take `h` out of whatever queue holds it; call before deleting it on your own. */
void ftfw_flow_forget(struct ftfw *e, uint32_t h);
/*
 * NOTRACK without an internal table (DisableInternalCache): send `ff` at
 * once, nothing kept, as a message of `type` (WIRE_T_CT_NEW, CT_UPD or
 * CT_DEL, which carries the key only) with the next sequence number.
 * Returns the bytes emitted, -EINVAL in another mode or for another type,
 * or the codec's -errno (the state is dropped and counted in tx_refused).
 */
int ftfw_send_state(struct ftfw *e, uint8_t type, const struct flow_full *ff, uint64_t now);

/*
 * Expectations (ExpectationSync).  The engine sends the entries of an
 * internal exp_table exactly as it sends flows: queued by handle with the
 * links in the entry's user area (at least FTFW_USER_BYTES), encoded at
 * transmission from the entry's current state (EXP_NEW, EXP_UPD, EXP_DEL
 * from the same entry flags), in the same sequence space, acknowledged,
 * retransmitted and bulk-sent (after the flows) alike.  Inside the engine
 * and towards the owner an expectation's handle is its exp_table handle
 * with FTFW_EXP_HANDLE set: ops->dead_acked() and ftfw_rsqueue_foreach()
 * hand out such handles, and the owner tells them from flow handles by
 * that bit (a flow_table never hands out a handle with it).
 * ftfw_attach_expectations() resets the user area of every entry already
 * in `x` (call it once, before any ftfw_exp_changed()); -EINVAL for a
 * table without a user area.  The functions below mirror the flow ones
 * and take the exp_table handle, without the bit.
 */
#define FTFW_EXP_HANDLE 0x80000000u
int ftfw_attach_expectations(struct ftfw *e, struct exp_table *x);
int ftfw_exp_changed(struct ftfw *e, uint32_t xh);
void ftfw_exp_forget(struct ftfw *e, uint32_t xh);
/* Empty every queue; call before flow_table_clear() or exp_table_clear() of an internal table. */
void ftfw_forget_all(struct ftfw *e);

/* ---- the peer's messages --------------------------------------------------------- */

/*
 * One message from peer `peer`, as the splitter gave it (WIRE_SPLIT_MSG;
 * a message with reason WIRE_R_WRONG_VERSION is counted and skipped
 * before sequence tracking, protocol.md §2.11 step 5).  Data goes to ops->apply,
 * ACK/NACK/RESYNC act on our queues, and ACKs and NACKs we owe are
 * emitted from within this call.  -EINVAL for a peer id out of range.
 */
int ftfw_receive(struct ftfw *e, unsigned peer, const struct wire_msg *m, uint64_t now);
/*
 * The messages m[0..n-1] of one datagram (or of one read of a stream), in
 * order: the same as ftfw_receive() on each of them, but the conntrack
 * states are decoded FTFW_RX_AHEAD messages at a time before the first of
 * them is digested, and ops->prefetch is told of each.  The messages'
 * bytes must stay valid and unchanged during the call.
 */
#define FTFW_RX_AHEAD           32u
int ftfw_receive_batch(struct ftfw *e, unsigned peer, const struct wire_msg *m, unsigned n,
		       uint64_t now);
/*
 * Count a datagram (or stream) the splitter stopped on: WIRE_SPLIT_ERROR
 * with its reason (truncated, bad size), for `-s network`.
 */
void ftfw_count_rejected(struct ftfw *e, unsigned peer, enum wire_reason r);

/* ---- transmission and timers -------------------------------------------------------- */

/*
 * Transmit from the queues: a pending RESYNC request first, then
 * retransmissions, then the tx queue, then the next slice of a bulk send,
 * as long as fewer than ResendQueueSize data messages are in flight and
 * the next message fits in what is left of `budget` bytes (SIZE_MAX: no
 * limit).  Call once per loop iteration (the daemon's before-sleep hook),
 * then flush the channel.  Returns the bytes emitted.
 */
size_t ftfw_send(struct ftfw *e, uint64_t now, size_t budget);
/* Would ftfw_send() emit something now (data waiting and room in flight)? */
bool ftfw_send_ready(const struct ftfw *e);
/*
 * Run the timers: retransmission timeout, ACKs due, ALIVE after a second
 * without transmission, peers gone silent.  Call when ftfw_next_deadline()
 * is reached (calling it earlier or more often is harmless).
 */
void ftfw_tick(struct ftfw *e, uint64_t now);
/* The earliest time ftfw_tick() has something to do, or UINT64_MAX. */
uint64_t ftfw_next_deadline(const struct ftfw *e);

/* ---- requests ----------------------------------------------------------------- */

/*
 * -n, StartupResync: ask the peers for their whole internal table.  The
 * RESYNC request is sent by the next ftfw_send() and retransmitted until
 * acknowledged.  A request while an earlier one is still unacknowledged
 * replaces it with a fresh one (the peer may have answered the earlier
 * one before the caller flushed what it holds).
 */
void ftfw_request_resync(struct ftfw *e);
/*
 * -B: queue every live flow of the internal table.  The table is walked in
 * slices as the in-flight window drains; a bulk already running starts
 * over.  What peers cause (a RESYNC request, a restart, a first message)
 * is answered by the same walk, but coalesced and spaced inside the
 * engine: at most one walk runs, a request during it makes it run once
 * more, and one during that second run or soon after a walk waits (1 s,
 * doubling up to 16 s while requests keep coming within 30 s of each other).
 */
void ftfw_bulk(struct ftfw *e);

/* ---- state and statistics ---------------------------------------------------------- */

/*
 * Nothing of ours outstanding: tx and retransmission queues empty, nothing
 * in flight, no bulk walk and no RESYNC request unfinished.  (ALARM: the
 * refresh timers never stop; idle means no change waiting to be sent.)
 */
bool ftfw_idle(const struct ftfw *e);
/* Bytes the message for flow `h` takes on the wire now, or a negative errno. */
int ftfw_msg_size(struct ftfw *e, uint32_t h);
/*
 * How long our messages have been waiting, in ms: 0 when nothing of ours
 * is outstanding (ftfw_idle()), else the time since the latest progress:
 * an ACK that released a message (FTFW) or a state sent (NOTRACK, ALARM,
 * where nothing waits for an ACK), or the latest ftfw_tick() that found
 * nothing outstanding.  A peer that hears us but whose ACKs never arrive
 * makes it grow; a busy link whose ACKs flow keeps it near the ACK
 * timer's second.
 */
uint64_t ftfw_backlog_ms(const struct ftfw *e, uint64_t now);
/* The next sequence number we will send. */
uint32_t ftfw_next_seq(const struct ftfw *e);

/*
 * A-priori mode: has every peer the latest state of flow `h`?  DONE: it
 * waits in no queue (acknowledged, or never changed since); PENDING: it
 * waits to be sent or acknowledged, and ops->acked() tells when it is;
 * NOBODY: no peer is waited for (none heard yet, every one lost), or the
 * mode acknowledges nothing (NOTRACK, ALARM).  `h` must be a live handle
 * of the internal table.
 */
enum ftfw_ack_state {
	FTFW_ACK_DONE,
	FTFW_ACK_PENDING,
	FTFW_ACK_NOBODY,
};
enum ftfw_ack_state ftfw_flow_ack_state(const struct ftfw *e, uint32_t h);

/* Counters of `-s network`, `-s rsqueue`, `-s queue`; all since creation except the gauges. */
struct ftfw_stats {
	/* traffic */
	uint64_t msg_sent, bytes_sent;          /* every message emitted */
	uint64_t msg_recv, bytes_recv;          /* every message given to ftfw_receive */
	uint64_t data_sent;                     /* conntrack messages, first and later transmissions */
	uint64_t retransmitted;                 /* data sent again: NACK, RTO, fast, HELLO, soft restart */
	uint64_t data_recv;                     /* data messages accepted and decoded */
	uint64_t ack_sent, ack_recv;
	uint64_t ack_repeated;                  /* ACKs sent a second time (rx.c) */
	uint64_t nack_sent, nack_recv;
	uint64_t nack_repeated;                 /* NACKs sent again for the same gap (rx.c) */
	uint64_t nack_held;                     /* resends a NACK asked too soon, held (ack.c) */
	uint64_t nack_acked;                    /* messages a NACK named that its sender had ACKed */
	uint64_t alive_sent, alive_recv;
	uint64_t resync_sent, resync_recv;
	uint64_t bulk_walks;                    /* walks of the table started (-B, peers) */
	uint64_t bulk_coalesced;                /* peers' requests folded into a walk already due */
	uint64_t rto_rounds;                    /* retransmission timeouts that fired */
	uint64_t rto_probes;                    /* messages a timeout resent as a probe (only silent peers lacked them) */
	uint64_t fast_retransmits;              /* overdue: later ones were ACKed (ftfw.c) */
	uint64_t hello_resends;                 /* sent during HELLO, sent again once ACKed (ftfw.c) */
	uint64_t hello_gap_resyncs;             /* RESYNCs asked after a loss during our HELLO (rx.c) */
	/* message tracking (protocol.md §2.12, §3.4) */
	uint64_t seq_lost;                      /* sequence numbers skipped by gaps (counted exactly) */
	uint64_t seq_before;                    /* old or duplicate messages dropped */
	uint64_t peer_restarts;                 /* FTFW_PEER_RESTARTED */
	uint64_t space_switches;                /* FTFW_PEER_TWO_SPACES (rx.c) */
	uint64_t dels_dropped;                  /* DELs never sent or acknowledged: every peer was gone */
	uint64_t soft_restarts;                 /* new sequence spaces of ours (ftfw.c) */
	uint64_t malformed[WIRE_R_MAX];         /* by reason: splitter, header, payload */
	uint64_t exp_ignored;                   /* expectations with no apply_exp */
	uint64_t tx_refused;                    /* flows the codec would not encode: dropped */
	uint64_t refreshes;                     /* ALARM: refresh timers that fired */
	uint64_t flagged_ignored;               /* ALARM: received messages with flags, ignored */
	/* queues (gauges, except the maxima and stalls) */
	uint32_t txq_len;                       /* waiting for a first transmission */
	uint32_t retxq_len;                     /* waiting for a retransmission */
	uint32_t inflight;                      /* the resend queue: sent, unacknowledged */
	uint32_t inflight_max;                  /* ResendQueueSize */
	uint32_t inflight_peak;
	uint64_t flow_control_stalls;           /* ftfw_send stopped by a full window */
	uint64_t ring_evictions;                /* sent again after a ring of newer numbers (queue.c) */
	bool bulk_running;
	bool bulk_waiting;                      /* a peer's request waits for the spacing */
	bool resync_outstanding;
	uint32_t peers;                         /* peers heard and not lost */
	uint32_t refresh_timers;                /* ALARM: flows waiting for their refresh */
};
void ftfw_stats(const struct ftfw *e, struct ftfw_stats *out);

/* Per-peer receiver counters. */
struct ftfw_peer_stats {
	bool known;                             /* something was received from it */
	bool lost;                              /* FTFW_PEER_LOST and not back */
	bool member;                            /* FTFW: our messages wait for its ACK */
	bool hello_pending;                     /* it has not answered our HELLO yet */
	bool in_hello;                          /* its last message carried HELLO */
	uint32_t last_seq;                      /* its last sequence number accepted */
	uint64_t msg_recv, seq_lost, seq_before, restarts, space_switches;
	uint64_t last_heard;                    /* `now` of its last message */
	uint64_t silence;                       /* ms between its last two messages */
	uint64_t downs;                         /* FTFW_PEER_LOST so far */
	uint64_t ups;                           /* FTFW_PEER_BACK so far */
	uint64_t state_since;                   /* `now` of its first message, or of its latest LOST or BACK */
};
int ftfw_peer_stats(const struct ftfw *e, unsigned peer, struct ftfw_peer_stats *out);
/* Our messages in flight that the peer has not acknowledged (a walk of the resend queue). */
uint32_t ftfw_peer_unacked(const struct ftfw *e, unsigned peer);

/* One element of the resend queue, oldest first (`-s rsqueue`). */
struct ftfw_rsq_entry {
	uint32_t seq;
	uint32_t handle;                        /* the flow; 0 for a control message */
	uint8_t flags;                          /* control message: WIRE_F_* */
	uint16_t acked;                         /* bit n: peer n acknowledged it */
	uint64_t sent;                          /* `now` of its transmission */
};
/* Call `fn` for each element of the resend queue, oldest first; stops early if fn returns false. */
void ftfw_rsqueue_foreach(const struct ftfw *e,
			  bool (*fn)(void *arg, const struct ftfw_rsq_entry *ent), void *arg);

#endif
