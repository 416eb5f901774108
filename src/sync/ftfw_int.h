/*
 * ftfw_int.h - the engine's state, shared by the files of src/sync/ only.
 *
 * queue.c   the intrusive queues over table handles and the in-flight ring
 * rx.c      the receiver: per-peer sequence tracking, ACK window, NACK, HELLO
 * ftfw.c    creation, transmission, timers, bulk, stats
 * ack.c     ACK/NACK of our messages, release, fast retransmit, requeue
 * bulk.c    walks of the whole table: -B, and what peers cause (coalesced, spaced)
 * alarm.c   ALARM's refresh timers (a wheel through the same links) and its receiver
 */
#ifndef CTSYNCD_SYNC_FTFW_INT_H
#define CTSYNCD_SYNC_FTFW_INT_H

#include "sync/sync.h"

/* Which queue a flow is in (struct ftfw_link.queue). */
enum ftfw_queue {
	Q_NONE = 0,
	Q_TX,           /* waiting for its first transmission (of this state) */
	Q_RETX,         /* NACKed, overdue, or orphaned by a restart: sent before TX */
	Q_RS,           /* in flight: the resend queue, in sequence (= transmission) order */
	Q_COUNT,
	/* ALARM: waiting for its refresh in a slot of the timer wheel (alarm.c), not in e->q[] */
	Q_WHEEL = Q_COUNT,
};

/*
 * A flow's queue links, in the internal table's user area.  Handles, not
 * pointers: the table never moves an entry, but handles are what stays
 * meaningful in a dump, and they are half the size.
 */
struct ftfw_link {
	uint32_t next, prev;            /* handles in the same queue; 0 = none */
	uint32_t seq;                   /* Q_RS: the sequence number of the message in flight */
	uint16_t acked;                 /* Q_RS: bit n = peer n acknowledged it */
	uint8_t queue;                  /* enum ftfw_queue */
	uint8_t hello : 1;              /* Q_RS: it went out flagged HELLO (see ack_one()) */
	uint8_t life_acked : 1;         /* a message of this life was acknowledged (flow_type()) */
	uint8_t by_nack : 1;            /* its last transmission answered a NACK (ack.c) */
	uint8_t nack_held : 1;          /* Q_RS: a NACK named it too soon; resent when the hold ends */
	uint64_t sent;                  /* Q_RS: `now` of the transmission; Q_WHEEL: the due tick */
};
_Static_assert(sizeof(struct ftfw_link) == FTFW_USER_BYTES, "FTFW_USER_BYTES is the link's size");

struct ftfw_list {
	uint32_t head, tail, len;
};

/* The RESYNC request we sent, retransmitted until acknowledged (protocol.md §3.8). */
enum ftfw_resync_state {
	RESYNC_NONE,
	RESYNC_PENDING,                 /* to be sent by the next ftfw_send() */
	RESYNC_INFLIGHT,                /* sent as resync_seq, waiting for ACKs */
};

/* A gap we NACKed, to be NACKed again (rx.c). */
#define FTFW_GAPS_MAX   256
struct ftfw_gap {
	uint32_t from, to;
	uint64_t due;
	uint16_t tries;                 /* 0: free slot */
};

/* An ACK we sent, to be sent again (rx.c). */
#define FTFW_ACK_REPEATS_MAX 512
struct ftfw_ack_repeat {
	uint32_t from, to;
	uint64_t due;
};

/* Everything about one sending peer (protocol.md §3.4, once per peer instead of once per process). */
/*
 * What the receiver keeps of one sequence space of a peer (rx.c): the
 * present one lives in struct ftfw_peer, the one a restart replaced in
 * ftfw_peer.alt (deviation 24).
 */
struct ftfw_space {
	bool valid;
	bool in_hello, hello_over;
	uint32_t last_seq, space_first, hello_end;
	uint64_t heard;                 /* `now` of its last message accepted */
};

struct ftfw_peer {
	bool known;                     /* something valid was received from it */
	bool lost;                      /* silent for peer_timeout_ms */
	/* receiver state of its sequence space */
	bool init;                      /* last_seq is meaningful */
	bool in_hello;                  /* its last accepted message carried HELLO */
	bool hello_over;                /* hello_end is meaningful */
	uint32_t hello_end;             /* its first accepted message without HELLO */
	uint32_t space_first;           /* the first number accepted in its present space */
	uint64_t space_heard;           /* `now` of the last message accepted in it */
	struct ftfw_space alt;          /* the space a restart replaced, while it is heard */
	uint64_t silence;               /* ms between its last message and the one before */
	bool acks_say_hello;            /* its ACKs/NACKs were flagged HELLO once (1.4.7 does) */
	bool hello_resync_seen;         /* hello_resync is meaningful */
	uint32_t hello_resync;          /* the number of its last RESYNC flagged HELLO */
	bool ack_pending;
	uint32_t last_seq;
	uint32_t ack_from;
	uint32_t run_from;              /* first number of the current run without a gap */
	uint32_t prev_from[2];          /* `from` of the last two ACKs sent in this run */
	uint8_t nprev;
	uint32_t window;                /* messages left before the window forces an ACK */
	uint64_t ack_due;               /* ack_pending: when the ACK is due at the latest */
	uint64_t last_heard;
	/* a run of old messages, to tell a restarted peer (see rx.c) */
	uint32_t old_run;
	uint64_t old_since;
	struct ftfw_gap gaps[FTFW_GAPS_MAX];
	unsigned ngaps;                 /* slots in use */
	uint64_t gaps_due;              /* ngaps: no slot is due before this */
	unsigned gap_next;              /* the slot to reuse when all are taken */
	/* ACKs to repeat, a FIFO ring: [rep_head, rep_head + rep_len) */
	struct ftfw_ack_repeat reps[FTFW_ACK_REPEATS_MAX];
	unsigned rep_head, rep_len;
	/* counters */
	uint64_t msg_recv, seq_lost, seq_before, restarts, space_switches;
	/* liveness: FTFW_PEER_LOST and FTFW_PEER_BACK so far, and `now` of the latest change */
	uint64_t downs, ups;
	uint64_t state_since;
};

struct ftfw {
	struct ftfw_config cfg;         /* defaults resolved */
	struct ftfw_ops ops;
	void *arg;
	struct flow_table *t;
	struct exp_table *xt;           /* the internal expectations, or NULL */
	bool notrack;                   /* NOTRACK or ALARM: nothing acknowledged, nothing resent */
	bool alarm;                     /* ALARM (alarm.c) */

	uint32_t seq;                   /* the next sequence number to send */
	uint64_t now;                   /* the latest `now` seen */
	uint64_t last_tx;               /* `now` of the last message sent: the ALIVE timer (protocol.md §3.3) */
	/*
	 * `now` of the latest progress: an ACK released a message (FTFW), a
	 * state was sent (NOTRACK, ALARM: nothing waits for an ACK), or
	 * nothing of ours was outstanding at a tick.  ftfw_backlog_ms().
	 */
	uint64_t progress_at;

	/* HELLO (protocol.md §3.6), per peer: see rx.c */
	bool hello_phase;               /* we say HELLO on every message */
	uint64_t hello_since;           /* `now` when the HELLO phase began */
	bool gap_in_hello;              /* a peer's message was lost while we said HELLO */
	bool hello_back_pending;        /* set HELLO_BACK on our next message */
	bool alive_now;                 /* send an ALIVE at the next tick unless something goes first */
	uint64_t last_hello_tx;         /* `now` of the last message that said HELLO */
	uint16_t hello_done;            /* bit n: peer n answered with HELLO_BACK */
	uint16_t members;               /* peers whose ACKs we wait for: known and not lost */
	bool released;                  /* a message of ours left the resend queue */
	bool nobody;                    /* every peer we waited for is gone (ack.c) */

	struct ftfw_list q[Q_COUNT];    /* q[Q_NONE] unused */
	/* In flight, by sequence number: ring[seq & ring_mask] = handle (see queue.c). */
	uint32_t *ring;
	uint32_t ring_mask;

	/* retransmission timeout (ftfw.c) */
	uint32_t rto;                   /* current value, ms */
	uint64_t rto_round_at;          /* `now` of the last round, 0 after progress */
	bool heard_since_rto;           /* a peer spoke since that round */
	uint64_t acked_sent_max;        /* latest `sent` of a message released by an ACK */

	enum ftfw_resync_state resync;
	bool resync_answered;           /* a RESYNC request of ours was acknowledged by all */
	uint32_t resync_seq;
	uint64_t resync_sent;
	uint16_t resync_acked;

	/* NACKs named messages resent for a NACK less than NACK_HOLD_MS ago (ack.c) */
	uint32_t nack_held_n;           /* Q_RS elements with nack_held */
	uint64_t nack_hold_due;         /* nack_held_n: the earliest end of a hold */

	bool bulk;                      /* a bulk walk is running */
	bool bulk_exp;                  /* it has reached the expectations */
	uint32_t bulk_cursor;
	/* walks that peers cause: coalesced and spaced (ftfw_bulk_for_peer()) */
	bool bulk_again;                /* a request came during the walk: once more when it ends */
	bool bulk_rerun;                /* the walk is that once more: a request during it waits */
	bool bulk_waiting;              /* a request waits for bulk_not_before */
	uint64_t bulk_not_before;
	uint32_t bulk_spacing;          /* ms after a walk before a peer's next one */
	uint64_t bulk_last_request;

	/*
	 * ALARM's timer wheel: wheel[tick & wheel_mask] heads the list of
	 * the flows due at that tick (ALARM_TICK_MS each) or a whole turn of
	 * the wheel later; wheel_bits marks the non-empty slots.  Ticks
	 * before wheel_tick have been run.
	 */
	uint32_t *wheel;
	uint64_t *wheel_bits;
	uint32_t wheel_mask;
	uint64_t wheel_tick;
	uint32_t wheel_len;
	uint32_t refresh_s;
	uint64_t rng;                   /* the PRNG's state, without ops.random */

	struct ftfw_peer peers[FTFW_PEERS_MAX];
	struct ftfw_stats st;

	struct flow_full txflow;        /* scratch: the flow being encoded */
	struct flow_full rxflow;        /* scratch: the flow being decoded */
	/*
	 * ftfw_receive_batch(): the states decoded ahead, in message order,
	 * each found again by its message's address; ahead_pos is the next
	 * one not used yet.  Empty outside ftfw_receive_batch(), whose
	 * receive buffer is reused for the next datagram.
	 */
	struct ftfw_rx_ahead {
		const uint8_t *data;
		enum wire_reason reason;
		struct flow_full f;
	} ahead[FTFW_RX_AHEAD];
	unsigned ahead_n, ahead_pos;
	struct flow_exp rxexp;
	uint8_t buf[FTFW_MSG_MAX];
};

/* Is `h` an expectation's handle (FTFW_EXP_HANDLE set)? */
static inline bool ftfw_is_exp(uint32_t h)
{
	return (h & FTFW_EXP_HANDLE) != 0;
}

/* FLOW_ENTRY_* of a flow's or an expectation's entry. */
unsigned ftfw_entry_flags(const struct ftfw *e, uint32_t h);

/* ---- queue.c ---- */
struct ftfw_link *ftfw_link_of(const struct ftfw *e, uint32_t h);
void ftfw_q_append(struct ftfw *e, enum ftfw_queue q, uint32_t h, struct ftfw_link *l);
void ftfw_q_unlink(struct ftfw *e, uint32_t h, struct ftfw_link *l);
/* Move to `q` (append), from whatever queue holds it. */
void ftfw_q_move(struct ftfw *e, enum ftfw_queue q, uint32_t h, struct ftfw_link *l);
/* Q_RS only: put `h` in flight as `seq` sent at `now`. */
void ftfw_rs_push(struct ftfw *e, uint32_t h, struct ftfw_link *l, uint32_t seq, uint64_t now);
/* The in-flight flow holding the ring slot of `seq` (sent ring-size numbers earlier), or 0. */
uint32_t ftfw_ring_occupant(const struct ftfw *e, uint32_t seq);
/* The in-flight flow sent as `seq`, or 0. */
uint32_t ftfw_ring_get(const struct ftfw *e, uint32_t seq, struct ftfw_link **l);
/*
 * Call fn for each in-flight flow whose sequence number lies in [from, to]
 * (inclusive, mod 2^32) and in our window; fn may unlink the flow.
 */
void ftfw_rs_range(struct ftfw *e, uint32_t from, uint32_t to,
		   void (*fn)(struct ftfw *e, uint32_t h, struct ftfw_link *l, void *arg), void *arg);
int ftfw_ring_alloc(struct ftfw *e, uint32_t slots);

/* ---- ftfw.c ---- */
/* Encode and emit a control message (ACK/NACK/RESYNC with a range, else ALIVE). */
void ftfw_emit_ctl(struct ftfw *e, uint8_t flags, uint32_t from, uint32_t to, uint64_t now);
/*
 * Deviation 18: a RESYNC request and a bulk walk wait for the end of our
 * HELLO handshake, at most HELLO_HOLD_MS after a peer was first heard.
 */
bool ftfw_hello_holds(const struct ftfw *e);

/* ---- bulk.c ---- */
/* A bulk walk a peer asked for or caused: coalesced and spaced (deviation 21). */
void ftfw_bulk_for_peer(struct ftfw *e);
/* A walk is due and may run now (not held by our HELLO). */
bool ftfw_bulk_may_run(const struct ftfw *e);
/* Queue the next slice of the walk; false once the walk is over. */
bool ftfw_bulk_refill(struct ftfw *e);
/* The owner's walk instead (ops->bulk_pull): true to go on at once, false when the budget is spent or the owner waits. */
bool ftfw_bulk_pull(struct ftfw *e, size_t *left);
/* Start a walk that waited for the spacing, when it is due. */
void ftfw_bulk_tick(struct ftfw *e, uint64_t now);

/* ---- ack.c ---- */
void ftfw_on_ack(struct ftfw *e, unsigned peer, uint32_t from, uint32_t to);
void ftfw_on_nack(struct ftfw *e, unsigned peer, uint32_t from, uint32_t to);
void ftfw_nack_hold_tick(struct ftfw *e, uint64_t now);
uint64_t ftfw_nack_hold_deadline(const struct ftfw *e);
/* A peer restarted: what it had not acknowledged is queued again (protocol.md §3.6, deviation 6). */
void ftfw_requeue_inflight(struct ftfw *e);
/*
 * The set of peers we wait for changed: release what is now fully
 * acknowledged; when the last one is gone, empty the queues (nobody).
 */
void ftfw_members_changed(struct ftfw *e, uint16_t members);
/* While nobody listens: take `h` out of its queue; a dead one leaves the table. */
void ftfw_forget_for_nobody(struct ftfw *e, uint32_t h);
/* Start over as if we had restarted, keeping our table (see ack.c). */
void ftfw_soft_restart(struct ftfw *e);
/* Resend what is overdue now that later messages were acknowledged (deviation 2). */
void ftfw_fast_retransmit(struct ftfw *e, uint64_t now);
/* When ftfw_fast_retransmit() has something to do next, or UINT64_MAX. */
uint64_t ftfw_fast_deadline(const struct ftfw *e);

/* ---- alarm.c ---- */
int ftfw_alarm_init(struct ftfw *e, uint64_t now);
void ftfw_alarm_free(struct ftfw *e);
/* Arm the refresh timer of `h` (in no queue) for a random interval from `now`. */
void ftfw_alarm_arm(struct ftfw *e, uint32_t h, struct ftfw_link *l, uint64_t now);
/* Take `h` off the wheel (from ftfw_q_unlink). */
void ftfw_alarm_unlink(struct ftfw *e, struct ftfw_link *l);
void ftfw_alarm_forget_all(struct ftfw *e);
/* Fire the timers due by `now`: the flows go to the tx queue. */
void ftfw_alarm_tick(struct ftfw *e, uint64_t now);
uint64_t ftfw_alarm_deadline(const struct ftfw *e);
/* A message from a peer, after the splitter's checks (protocol.md §4: data iff flags == 0). */
void ftfw_alarm_receive(struct ftfw *e, unsigned peer, struct ftfw_peer *p, const struct wire_msg *m);

/* ---- rx.c ---- */
/* Decode a data message and hand it to ops->apply or ops->apply_exp. */
void ftfw_rx_data(struct ftfw *e, unsigned peer, const struct wire_msg *m);
/* NOTRACK and ALARM: follow a peer's sequence numbers for the statistics only. */
void ftfw_rx_seq_stats(struct ftfw *e, struct ftfw_peer *p, uint32_t seq);
void ftfw_rx_tick(struct ftfw *e, uint64_t now);
uint64_t ftfw_rx_deadline(const struct ftfw *e);

/* Sequence arithmetic mod 2^32 (protocol.md §3.2): a is before b. */
static inline bool seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ftfw.c: the bulk may queue more (it leaves an eighth of the window to live changes). */
bool ftfw_bulk_room(const struct ftfw *e);

#endif
