/*
 * cache_int.h - what the files of src/cache share: the object, and the
 * rules that conntracks and expectations have in common (waiting requests,
 * timeouts at commit and injection, ALARM's expiry, writer cookies).
 * Private to src/cache/.
 */
#ifndef CTSYNCD_CACHE_INT_H
#define CTSYNCD_CACHE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "flow/flow.h"
#include "flow/keyset.h"
#include "loop/loop.h"

struct exp_table;
struct flow_filter;
struct kernel_dump;
struct kernel_events;
struct kernel_getter;
struct stats_log;

#define CACHE_MAX_WAITERS 8
/* s: the timeout of a state written into the kernel without a usable one of its own */
#define CACHE_DEFAULT_TIMEOUT 60u

/*
 * Writer cookies say whose a failed request was (cache.c routes it): a
 * direct injection or mirror write (the low bits index the ring that
 * keeps its state), an expectation request, or else a commit of the
 * external conntrack entry whose handle the cookie is.
 */
#define COOKIE_INJECT (1ull << 63)
#define COOKIE_EXP    (1ull << 62)
/* Directly injected states, kept until their batch is answered: more than one batch holds. */
#define INJECT_RING 4096

/* A directly injected state, kept until its batch is answered. */
struct inject_slot {
	uint64_t cookie;
	struct flow flow;
	struct flow_ext ext;
};

/* Control requests that wait for an operation to end (commit, flush, load). */
struct waiters {
	struct control_request *req[CACHE_MAX_WAITERS];
	unsigned n;
};

/*
 * ALARM's expiry of a table of the peer's entries: each run visits the
 * next `visit` entries and deletes those not refreshed for CacheTimeout,
 * then comes back `period_ms` later, or `pass_ms` after a whole pass, so
 * that a large table is swept in slices, never in one stall.
 */
struct cache_expiry {
	struct loop_timer *timer;
	uint32_t cursor;
	unsigned visit;
	unsigned period_ms, pass_ms;
	uint32_t timeout_s;
	uint64_t expired;
	void *table;
	uint32_t (*next)(void *table, uint32_t *cursor);
	uint32_t (*updated)(void *table, uint32_t h);
	void (*remove)(void *table, uint32_t h);
	struct cache *cache;
};

/*
 * A table that refused states (HashLimit, memory) is incomplete until a
 * repair brings them back: a re-read of the kernel for the internal cache,
 * a RESYNC request to the peer for the external one.
 */
struct cache_gap {
	bool open;                        /* states were refused since the last repair */
	uint64_t refused;                 /* states refused, ever */
	uint64_t refused_unlogged;
	int last_error;                   /* -ENOSPC or -ENOMEM */
	uint64_t logged_ms;               /* the last log line about it */
	uint64_t repaired_ms;             /* the last repair started */
	uint64_t repairs;
};

enum load_kind {
	LOAD_STARTUP,     /* fill the internal cache, tell nobody */
	LOAD_REDUMP,      /* -R: refresh from the kernel, tell nobody, sweep what vanished */
	LOAD_RESYNC,      /* after an overrun: refresh, tell the listener, sweep */
	LOAD_POLL,        /* PollSecs: the same as LOAD_RESYNC, from a timer */
};

/* What the last completed poll found. */
struct poll_result {
	uint64_t unix_time;               /* when it ended, s since the epoch */
	uint64_t duration_ms;
	uint64_t states, told_new, told_updated, vanished;
};

struct cache_counters {
	uint64_t events_new, events_update, events_destroy, events_filtered, events_unknown;
	uint64_t remote_new, remote_update, remote_delete, remote_delete_unknown, remote_failed;
	uint64_t remote_swept;            /* stale after a peer's restart (mark and sweep) */
	uint64_t commits, committed_ok, committed_updated, committed_failed;
	uint64_t injected_ok, injected_failed;
	/* the same by message (NEW, UPD, DEL) and by refused kernel op: 1.4.7's "external inject" */
	uint64_t injected_new, injected_upd, injected_del;
	uint64_t inject_refused[KERNEL_OP_MAX];
	uint64_t resyncs, swept;
	uint64_t purges, purged;
	uint64_t masters_reread;          /* sequence adjustments learnt by reread_master */
	uint64_t traffic_packets, traffic_bytes;   /* counters of the destroyed flows */
};

struct exp_counters {
	uint64_t events_new, events_destroy, events_own, events_malformed;
	uint64_t filtered_helper, filtered_master;
	uint64_t remote_new, remote_delete, remote_delete_unknown, remote_failed;
	uint64_t commits, committed_ok, committed_failed;
	uint64_t injected, write_failed;
	uint64_t loads, vanished;
};

/* The expectation caches (ExpectationSync): `internal` is NULL when the option is off. */
struct cache_exps {
	struct exp_table *internal;
	struct exp_table *external;
	struct cache_exp_listener listener;
	struct exp_counters n;
	int last_errno;                   /* of the latest failed request */
	struct flow_exp scratch;          /* an expectation event's, for its master */

	/* the dump in progress: what it saw, applied when it ends */
	struct kernel_dump *dump;
	struct exp_table *seen;
	bool dump_tells;
	struct waiters load_waiters;

	struct cache_expiry expiry;       /* ALARM */
};

struct cache {
	const struct config *cfg;
	struct loop *loop;
	struct flow_table *internal;
	struct flow_table *external;
	struct flow_filter *filter;
	struct kernel_events *events;
	struct kernel_writer *writer;
	struct kernel_getter *getter;     /* re-reads a master (reread_master), made when first needed */
	struct stats_log *stats_log;      /* Stats mode: the log of destroyed flows, or NULL */
	struct flow_full reread;          /* what it read */
	struct cache_listener listener;
	struct flow_full scratch;         /* one state being moved (1 KiB+: not on the stack) */
	bool event_labels_whole;          /* the UPDATE being stored reports its labels even if none */
	struct cache_counters n;
	struct cache_exps x;

	/* the current load from the kernel (startup, -R, overrun resync, poll) */
	struct kernel_dump *dump;
	enum load_kind load;
	uint8_t *marks;                   /* LOAD_* bits per internal handle, during a load */
	size_t nmarks;
	uint64_t load_started_ms;
	struct waiters load_waiters;
	bool resync_again;                /* another overrun during the resync */
	struct loop_timer *overrun_timer; /* NetlinkOverrunResync seconds after an overrun */
	uint64_t load_filtered;           /* dumped states the Filter left out */
	uint64_t load_told_new, load_told_updated;

	/* PollSecs: the timer between polls, and a poll put off by another load */
	struct loop_timer *poll_timer;
	bool poll_due;
	uint64_t polls, polls_delayed;
	struct poll_result last_poll;

	/* the commit in progress */
	bool committing;
	int commit_pass;                  /* 0: plain states, 1: related ones */
	uint32_t commit_cursor;
	uint64_t commit_started_ms;
	struct kernel_write_stats commit_stats;
	uint64_t commit_updated;
	bool commit_expects;              /* a waiter asked for the expectations too */
	unsigned commit_origin;           /* only the states of this origin; 0: all */
	struct waiters commit_waiters;

	/* direct injection (DisableExternalCache), and the mirror of HotStandby */
	struct inject_slot *inject_ring;
	uint64_t inject_seq;
	bool mirroring;                   /* HotStandby, while this node is a backup */

	/* the kernel flush / purge in progress, and the scheduled purge (-t) */
	bool purging;
	struct waiters purge_waiters;
	struct loop_timer *purge_timer;

	struct cache_expiry expiry;       /* ALARM: the external conntrack cache */

	/* mark and sweep of the external cache after a peer's restart (remote.c) */
	bool sweep_marked;
	uint32_t sweep_origins;           /* bit o: origin o is marked */
	uint32_t sweep_resent;            /* bit o: origin o has sent a state since its mark */
	uint32_t sweep_before_s[CACHE_ORIGIN_MAX + 1]; /* its entries last stored before this second are stale */
	uint32_t sweep_cursor;
	uint64_t sweep_removed;
	struct loop_timer *sweep_timer;

	/* a reload's new Filter: the walk that takes out what it ignores (local.c) */
	struct loop_timer *refilter_timer;
	uint32_t refilter_cursor;
	uint64_t refiltered;

	/* DisableInternalCache (bypass.c): no internal conntrack cache */
	bool bypass;
	struct kernel_dump *walk;         /* the bulk's walk of the kernel table, or NULL */
	struct flow_keyset walk_ended;    /* keys whose end an event reported during the walk */
	size_t walk_sent_now;             /* bytes sent by the current pull */
	struct cache_bypass_counters {
		uint64_t sent_new, sent_update, sent_destroy, send_failed;
		uint64_t walks, walk_sent, walk_filtered, walk_skipped_ended, walk_failed;
		uint64_t dumps;           /* -i answered from the kernel */
	} bp;

	/* states a table refused (HashLimit, memory): repaired once there is room (cache.c) */
	struct cache_gap local_gap, remote_gap;
	struct loop_timer *repair_timer;
	uint64_t inject_errors_logged_ms;

	/* --origin ADDRESS to an origin number (cache_set_origin_resolver()) */
	cache_origin_fn origin_of;
	void *origin_arg;
};

static inline uint32_t cache_now_s(const struct cache *c)
{
	return (uint32_t)(loop_now_ms(c->loop) / 1000u);
}

static inline bool cache_has_exps(const struct cache *c)
{
	return c->x.internal != NULL;
}

/* ---- cache.c: shared rules ---- */
/* Keep `req` until the operation ends; CONTROL_DONE with an answer if too many wait. */
enum control_result cache_wait_for(struct waiters *w, struct control_request *req);
/* Answer every waiting request with one line and `status`. */
void cache_finish_all(struct waiters *w, enum ctl_status status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An expectation request while ExpectationSync is off. */
enum control_result cache_no_exps(struct control_request *req);
/*
 * The origin a request is limited to (`--origin`): true and *origin (0:
 * every origin), or false with the error answered (an address that is no
 * peer's).
 */
bool cache_request_origin(struct cache *c, struct control_request *req, unsigned *origin);
/* An external expectation goes with its master's origin (commit.c); any with origin 0. */
bool cache_exp_of_origin(const struct cache *c, const struct flow_exp *e, unsigned origin);
/*
 * conntrackd's rule for a state written at commit: CommitTimeout, else
 * what is left of the timeout it carried when it was stored `updated_s`
 * (60 s at least).  `timeout` 0: none.
 */
uint32_t cache_commit_timeout(const struct cache *c, uint32_t updated_s, uint32_t timeout);
/* The timeout of a state written as it arrives: its own, or 60 s. */
static inline uint32_t cache_inject_timeout(uint32_t timeout)
{
	return timeout ? timeout : CACHE_DEFAULT_TIMEOUT;
}
/* Arm `e` over a table (ALARM).  0 or -ENOMEM. */
int cache_expiry_start(struct cache_expiry *e, struct cache *c);
/*
 * `gap`'s table refused a state (`err`: -ENOSPC or -ENOMEM): count it, log
 * it (at most every 10 s, naming the limit) and schedule the repair.
 */
void cache_gap_note(struct cache *c, struct cache_gap *gap, int err);
/* A write into the kernel failed: log it with its errno, at most every 10 s. */
void cache_log_write_error(struct cache *c, const char *what, int err);

/* ---- local.c / local_exp.c: the internal caches ---- */
/* Start a load of the kernel table (and, when it ends, of its expectations). */
void cache_start_load(struct cache *c, enum load_kind kind);
/* Delete without telling the peer (flushes, -R). */
void cache_forget_local(struct cache *c, uint32_t handle);
/* A kernel flush is about to start: a poll running now is dropped and run again after it. */
void cache_abandon_poll(struct cache *c);
/* After a load or a kernel flush: the poll that waited, or the next one PollSecs later. */
void cache_poll_go_on(struct cache *c);
extern const struct kernel_events_cb cache_event_cb;
/* A new Filter: walk the internal cache in slices and drop, telling the peer, what it ignores. */
void cache_refilter_start(struct cache *c);
void cache_on_poll_timer(struct loop *loop, struct loop_timer *timer, void *arg);
/* NetlinkOverrunResync seconds after an event overrun: read the kernel table again (local.c). */
void cache_on_overrun_timer(struct loop *loop, struct loop_timer *timer, void *arg);
/* An expectation event from the event socket. */
void cache_exp_on_event(struct cache *c, const void *msg, size_t len, bool own_write);
/*
 * Dump the kernel's expectations into the internal table; those no longer
 * there leave it.  `tell`: the listener hears of the differences;
 * `req`, if not NULL, is answered when the dump ends.  0 or -errno.
 */
int cache_exp_load(struct cache *c, bool tell, struct control_request *req);

/* ---- bypass.c: DisableInternalCache ---- */
/* A kernel event that passed the Filter: straight to the listener's send(). */
void cache_bypass_event(struct cache *c, enum kernel_event ev, const struct flow_full *ff);
/* -i, -i -x: the kernel table itself, streamed as the client reads it. */
enum control_result cache_bypass_dump(struct cache *c, struct control_request *req, bool xml);
/* Stop the walk, free what it holds. */
void cache_bypass_free(struct cache *c);

/* ---- remote.c: the external caches ---- */
/* A failed injection or mirror write (cookie with COOKIE_INJECT). */
void cache_inject_error(struct cache *c, enum kernel_op op, uint64_t cookie, int err);
/* The sweep's timer.  0 or -ENOMEM. */
int cache_sweep_init(struct cache *c);
/* A failed expectation request (cookie with COOKIE_EXP). */
void cache_exp_write_error(struct cache *c, enum kernel_op op, int err);

/* ---- flush.c ---- */
void cache_on_purge_timer(struct loop *loop, struct loop_timer *timer, void *arg);

/* ---- commit.c ---- */
/* A failed commit request (cookie: the external entry's handle). */
void cache_commit_error(struct cache *c, enum kernel_op op, uint64_t cookie, int err);

#endif
