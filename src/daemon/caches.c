/*
 * caches.c - internal and external caches and their kernel side.
 *
 * Events and dumps fill the internal cache; the peer fills the external
 * one; a commit writes the external cache into the kernel through the
 * batched writer, in slices, while the loop keeps serving.  The commit's
 * own events are dropped in the kernel by a socket filter on the event
 * socket, so a commit of a million states can neither overrun that socket
 * nor echo the states back to the peer (conntrackd 1.4.7 did both).
 *
 * With PollSecs there is no event socket: a loop timer runs the same load
 * as the resync after an overrun (a dump, then a sweep of what vanished)
 * every PollSecs seconds, counted from the end of the previous one.
 */
#include "build-config.h"
#include "caches.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <time.h>

#include "config.h"
#include "control_server.h"
#include "expects.h"
#include "kernel_bpf.h"
#include "stats_log.h"
#include "flow_filter.h"
#include "flow_format.h"
#include "flow_table.h"
#include "log.h"
#include "loop.h"
#include "report.h"
#include "wire_format.h"

#define MAX_WAITERS 8
#define DEFAULT_COMMIT_TIMEOUT 60u   /* s, when a state carries no usable timeout */
#define INJECT_RING 4096             /* more than the requests of one writer batch */
#define INJECT_COOKIE (1ull << 63)
/*
 * ALARM's expiry of external entries: every EXPIRE_PERIOD_MS the sweep
 * visits the next EXPIRE_VISIT entries (a few hundred microseconds), so a
 * million entries are swept in about 6 s and an entry leaves at most that
 * much after its CacheTimeout; a small table is swept once a second.
 */
#define EXPIRE_PERIOD_MS 100u
#define EXPIRE_PASS_MS 1000u
#define EXPIRE_VISIT 16384u

/* A directly injected state, kept until its batch is answered. */
struct inject_slot {
	uint64_t cookie;
	struct flow flow;
	struct flow_ext ext;
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

struct waiters {
	struct control_request *req[MAX_WAITERS];
	unsigned n;
};

struct cache_counters {
	uint64_t events_new, events_update, events_destroy, events_filtered, events_unknown;
	uint64_t remote_new, remote_update, remote_delete, remote_delete_unknown, remote_failed;
	uint64_t commits, committed_ok, committed_updated, committed_failed;
	uint64_t injected_ok, injected_failed;
	uint64_t resyncs, swept;
	uint64_t purges, purged;
	uint64_t expired;
	uint64_t masters_reread;          /* sequence adjustments learnt by reread_master */
	uint64_t traffic_packets, traffic_bytes;   /* counters of the destroyed flows */
};

struct caches {
	const struct config *cfg;
	struct loop *loop;
	struct flow_table *internal;
	struct flow_table *external;
	struct flow_filter *filter;
	struct kernel_events *events;
	struct kernel_writer *writer;
	struct expects *expects;          /* ExpectationSync, or NULL */
	struct kernel_getter *getter;     /* re-reads a master (reread_master), made when first needed */
	struct stats_log *stats_log;      /* Stats mode: the log of destroyed flows, or NULL */
	struct flow_full reread;          /* what it read */
	struct caches_listener listener;
	struct flow_full scratch;         /* one state being moved (1 KiB+: not on the stack) */
	struct flow_exp exp_scratch;      /* an expectation event's, for its master */
	bool event_labels_whole;          /* the UPDATE being stored reports its labels even if none */
	struct cache_counters n;

	/* the current load from the kernel (startup, -R, overrun resync) */
	struct kernel_dump *dump;
	enum load_kind load;
	uint8_t *marks;                   /* LOAD_* bits per internal handle, during a load */
	size_t nmarks;
	uint64_t load_started_ms;
	struct waiters load_waiters;
	bool resync_again;                /* another overrun during the resync */
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
	struct waiters commit_waiters;

	/* direct injection (DisableExternalCache), and the mirror of HotStandby */
	struct inject_slot *inject_ring;
	uint64_t inject_seq;
	bool mirroring;                   /* HotStandby, while this node is a backup */

	/* the kernel flush / purge in progress, and the scheduled purge (-t) */
	bool purging;
	struct waiters purge_waiters;
	struct loop_timer *purge_timer;

	/* ALARM: the incremental expiry sweep of the external cache */
	struct loop_timer *expire_timer;
	uint32_t expire_cursor;
};

static uint32_t now_s(const struct caches *c)
{
	return (uint32_t)(loop_now_ms(c->loop) / 1000u);
}

static void finish_all(struct waiters *w, enum ctl_status status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void finish_all(struct waiters *w, enum ctl_status status, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	for (unsigned i = 0; i < w->n; i++) {
		control_request_printf(w->req[i], "%s\n", text);
		control_request_finish(w->req[i], status);
	}
	w->n = 0;
}

/* An expectation request while ExpectationSync is off. */
static enum control_result no_expects(struct control_request *req)
{
	control_request_printf(req, "ctsyncd: '%s' is not available: expectation sync is off "
			       "(Sync { Options { ExpectationSync on } })\n",
			       ctl_request_name(control_request_code(req)));
	control_request_set_status(req, CTL_STATUS_UNAVAILABLE);
	return CONTROL_DONE;
}

static void reread_master(struct caches *c, const struct flow_tuple *master);

/*
 * Expectation events come with ExpectationSync, and NEW ones always: a NAT
 * helper that expects a data connection has just rewritten its master's
 * stream (an FTP PORT through SNAT), and that changes the master's
 * sequence adjustment without an event (see reread_master()).
 */
static void on_expect_event(void *arg, const void *msg, size_t len, bool own_write)
{
	struct caches *c = arg;
	enum kernel_event ev;

	if (c->expects)
		expects_on_event(c->expects, msg, len, own_write);
	if (own_write || kernel_exp_parse(msg, len, &c->exp_scratch, &ev) != KERNEL_OK ||
	    ev != KERNEL_EV_NEW)
		return;
	reread_master(c, &c->exp_scratch.master);
}

/* Keep `req` until the operation ends; CONTROL_DONE with an answer if too many wait. */
static enum control_result wait_for(struct waiters *w, struct control_request *req)
{
	if (w->n == MAX_WAITERS) {
		control_request_printf(req, "ctsyncd: too many clients waiting for this operation\n");
		control_request_set_status(req, CTL_STATUS_BUSY);
		return CONTROL_DONE;
	}
	w->req[w->n++] = req;
	return CONTROL_PENDING;
}

/* ---- the internal cache from kernel events and dumps ------------------------ */

static void tell(struct caches *c, uint32_t handle, enum kernel_event ev)
{
	if (c->listener.changed)
		c->listener.changed(c->listener.arg, handle, ev);
}

/*
 * An UPDATE event carries only what changed (kernel.h): lay it over the
 * cached state, so that a partial event never erases protocol state, NAT
 * or labels that the peer needs.
 */
/*
 * Fold an UPDATE event into the stored state: the kernel reports only what
 * changed.  `labels_whole`: the event reports the labels even when they are
 * all zero (KERNEL_ORIGIN_REQUEST), so none in it means none are left.
 */
static void merge_update(struct flow_full *cur, const struct flow_full *ev, bool labels_whole)
{
	const struct flow *e = &ev->flow;
	struct flow *f = &cur->flow;
	uint32_t a = e->attrs;

	if (a & FLOW_A_STATUS)
		f->status = e->status;
	if (a & FLOW_A_TIMEOUT)
		f->timeout = e->timeout;
	if (a & FLOW_A_MARK)
		f->mark = e->mark;
	if (a & FLOW_A_PROTO_STATE)
		f->proto_state = e->proto_state;
	if (a & FLOW_A_DCCP_ROLE)
		f->dccp_role = e->dccp_role;
	if (a & FLOW_A_WSCALE) {
		f->wscale_orig = e->wscale_orig;
		f->wscale_repl = e->wscale_repl;
	}
	if (a & (FLOW_A_SNAT | FLOW_A_SPAT | FLOW_A_DNAT | FLOW_A_DPAT)) {
		/* The reply tuple is in every event: NAT as derived from it is complete. */
		f->attrs &= ~(FLOW_A_SNAT | FLOW_A_SPAT | FLOW_A_DNAT | FLOW_A_DPAT);
		cur->ext.snat = ev->ext.snat;
		cur->ext.dnat = ev->ext.dnat;
		cur->ext.spat = ev->ext.spat;
		cur->ext.dpat = ev->ext.dpat;
	}
	if (a & FLOW_A_NAT_SEQ)
		memcpy(cur->ext.nat_seq, ev->ext.nat_seq, sizeof(cur->ext.nat_seq));
	if (a & FLOW_A_SCTP_VTAGS) {
		cur->ext.sctp_vtag_orig = ev->ext.sctp_vtag_orig;
		cur->ext.sctp_vtag_repl = ev->ext.sctp_vtag_repl;
	}
	if (a & FLOW_A_MASTER)
		cur->ext.master = ev->ext.master;
	if (a & FLOW_A_HELPER)
		memcpy(cur->ext.helper, ev->ext.helper, sizeof(cur->ext.helper));
	if (a & FLOW_A_SYNPROXY_EXT)
		memcpy(cur->ext.synproxy, ev->ext.synproxy, sizeof(cur->ext.synproxy));
	if (a & FLOW_A_LABELS) {
		cur->labels.words = ev->labels.words;
		memcpy(cur->labels.w, ev->labels.w, ev->labels.words * sizeof(uint32_t));
		f->attrs &= ~FLOW_A_LABELS_GONE;
	} else if (labels_whole && (f->attrs & FLOW_A_LABELS)) {
		cur->labels.words = 0;
		f->attrs &= ~FLOW_A_LABELS;
		f->attrs |= FLOW_A_LABELS_GONE;
	}
	f->attrs |= a;
}

/*
 * While a load (a dump of the kernel table) runs, events keep coming, and
 * a dumped entry may be older than an event already handled: the kernel
 * filled that part of the dump before the change the event reports.  So,
 * per internal handle, during a load:
 *   LOAD_SEEN     the dump delivered it, or an event did (the sweep keeps it);
 *   LOAD_TOUCHED  an event changed it: a dumped copy would be older;
 *   LOAD_ACKED    dead and acknowledged by the peer: deleted when the load
 *                 ends, so that a late dumped copy finds it dead instead of
 *                 bringing it back to life, and to the peer, for good.
 */
enum { LOAD_SEEN = 1, LOAD_TOUCHED = 2, LOAD_ACKED = 4 };

static void load_mark(struct caches *c, uint32_t handle, uint8_t bits)
{
	if (!c->dump)
		return;
	if (handle >= c->nmarks) {
		size_t n = c->nmarks ? c->nmarks : 32768;
		uint8_t *p;

		while (n <= handle)
			n *= 2;
		p = realloc(c->marks, n);
		if (!p)
			return;   /* the sweep then keeps this entry: safe, never deletes a live one */
		memset(p + c->nmarks, 0, n - c->nmarks);
		c->marks = p;
		c->nmarks = n;
	}
	c->marks[handle] |= bits;
}

static bool load_marked(const struct caches *c, uint32_t handle, uint8_t bits)
{
	return handle < c->nmarks && (c->marks[handle] & bits);
}

/*
 * Store a NEW or UPDATE state of the kernel (`handle`: its entry, from the
 * caller's lookup, or 0; `hash`: the key's hash that lookup used); tell
 * the listener when asked.  Returns the entry, or 0 if the table refused it.
 */
static uint32_t store_local(struct caches *c, enum kernel_event ev, const struct flow_full *ff, bool notify,
			    uint32_t handle, uint32_t hash)
{
	const struct flow_full *in = ff;
	int rc;

	if (ev == KERNEL_EV_UPDATE && handle &&
	    !(flow_table_flags(c->internal, handle) & FLOW_ENTRY_DEAD) &&
	    flow_table_export(c->internal, handle, &c->scratch) == 0) {
		merge_update(&c->scratch, ff, c->event_labels_whole);
		in = &c->scratch;
	} else if (handle && !(ff->flow.attrs & FLOW_A_LABELS) &&
		   (flow_table_flow(c->internal, handle)->attrs & (FLOW_A_LABELS | FLOW_A_LABELS_GONE))) {
		/* A whole state (NEW, or a dumped one) without the labels it had. */
		c->scratch = *ff;
		c->scratch.flow.attrs |= FLOW_A_LABELS_GONE;
		in = &c->scratch;
	}
	/* `in` has the key of `ff` (merge_update() keeps it), so the hash holds. */
	rc = flow_table_upsert_hashed(c->internal, in, hash, now_s(c), &handle);
	if (rc < 0)
		return 0;   /* counted by the table (HashLimit, memory) */
	load_mark(c, handle, LOAD_SEEN);
	if (!notify && (rc == FLOW_UPSERT_INSERTED || rc == FLOW_UPSERT_REVIVED) && c->listener.loaded)
		c->listener.loaded(c->listener.arg, handle);
	if (notify && rc != FLOW_UPSERT_UNCHANGED) {
		tell(c, handle, rc == FLOW_UPSERT_UPDATED ? KERNEL_EV_UPDATE : KERNEL_EV_NEW);
		/* Only a poll reports these: no event comes while it runs. */
		if (c->dump && rc == FLOW_UPSERT_UPDATED)
			c->load_told_updated++;
		else if (c->dump)
			c->load_told_new++;
	}
	return handle;
}

static void drop_local(struct caches *c, uint32_t handle)
{
	if (c->listener.changed) {
		if (flow_table_flags(c->internal, handle) & FLOW_ENTRY_DEAD)
			return;
		flow_table_mark_dead(c->internal, handle, now_s(c));
		tell(c, handle, KERNEL_EV_DESTROY);
	} else {
		flow_table_delete(c->internal, handle);
	}
}

/* Delete without telling the peer (flushes, -R). */
static void forget_local(struct caches *c, uint32_t handle)
{
	if (c->listener.forget)
		c->listener.forget(c->listener.arg, handle);
	flow_table_delete(c->internal, handle);
}

/*
 * A NAT helper that rewrites a command in a control connection (an FTP
 * PORT through SNAT) changes the master's sequence adjustment without any
 * event; a takeover without it breaks the control connection at its next
 * packet.  The related flow that follows such a command is our cue: read
 * the master back and send it on if its adjustment is new to us.
 */
static void reread_master(struct caches *c, const struct flow_tuple *master)
{
	uint32_t h = flow_table_lookup(c->internal, master);
	const struct flow *m;
	const struct flow_ext *x;
	int err = 0;

	if (!h || (flow_table_flags(c->internal, h) & FLOW_ENTRY_DEAD))
		return;
	/* Only a NAT'ed master with a helper can have had its stream rewritten. */
	m = flow_table_flow(c->internal, h);
	if (!(m->attrs & FLOW_A_HELPER) || !(m->status & (IPS_SRC_NAT | IPS_DST_NAT)))
		return;
	if (!c->getter && !(c->getter = kernel_getter_new(&err))) {
		log_warning("cannot read a master state back: %s", strerror(-err));
		return;
	}
	if (kernel_get(c->getter, master, &c->reread) < 0 || !(c->reread.flow.attrs & FLOW_A_NAT_SEQ))
		return;
	x = flow_table_ext(c->internal, h);
	if ((m->attrs & FLOW_A_NAT_SEQ) && x &&
	    memcmp(x->nat_seq, c->reread.ext.nat_seq, sizeof(x->nat_seq)) == 0)
		return;
	c->n.masters_reread++;
	store_local(c, KERNEL_EV_UPDATE, &c->reread, true, h, flow_table_hash(c->internal, &c->reread.flow.orig));
}

/* An event about to come: start loading its internal-table bucket. */
static void on_event_prefetch(void *arg, const struct flow_full *ff)
{
	struct caches *c = arg;

	flow_table_prefetch(c->internal, flow_table_hash(c->internal, &ff->flow.orig));
}

static void on_event(void *arg, enum kernel_event ev, const struct flow_full *ff, unsigned origin)
{
	struct caches *c = arg;
	uint32_t handle, hash;

	if (!flow_filter_pass_full(c->filter, ff)) {
		c->n.events_filtered++;
		return;
	}
	hash = flow_table_hash(c->internal, &ff->flow.orig);
	handle = flow_table_lookup_hashed(c->internal, &ff->flow.orig, hash);
	switch (ev) {
	case KERNEL_EV_NEW:
		c->n.events_new++;
		handle = store_local(c, ev, ff, true, handle, hash);
		if (ff->flow.attrs & FLOW_A_MASTER)
			reread_master(c, &ff->ext.master);
		break;
	case KERNEL_EV_UPDATE:
		c->n.events_update++;
		c->event_labels_whole = (origin & KERNEL_ORIGIN_REQUEST) != 0;
		handle = store_local(c, ev, ff, true, handle, hash);
		c->event_labels_whole = false;
		break;
	case KERNEL_EV_DESTROY:
		c->n.events_destroy++;
		if (ff->counters.present) {
			c->n.traffic_packets += ff->counters.packets[0] + ff->counters.packets[1];
			c->n.traffic_bytes += ff->counters.bytes[0] + ff->counters.bytes[1];
		}
		stats_log_flow(c->stats_log, ff);
		if (handle)
			drop_local(c, handle);
		else
			c->n.events_unknown++;
		break;
	}
	if (handle)
		load_mark(c, handle, LOAD_TOUCHED);   /* only while a load runs */
}

static void start_load(struct caches *c, enum load_kind kind);
static void poll_go_on(struct caches *c);

/* Loads whose changes the peer must learn: the kernel changed without telling us. */
static bool load_tells(const struct caches *c)
{
	return c->load == LOAD_RESYNC || c->load == LOAD_POLL;
}

/*
 * A poll has no port id to recognise our own writes by, so it would send
 * the peer back every state that a commit or HotStandby's mirror wrote
 * into this kernel.  A dumped state that is in the external cache is the
 * peer's own: it is taken in silently when this node mirrors the peer
 * (HotStandby backup), or when the internal cache does not know it yet (a
 * commit wrote it).  Once taken, its later changes are this node's
 * traffic and are sent as usual, as events would send them.
 */
static bool poll_is_peers_own(struct caches *c, const struct flow_full *ff, uint32_t handle)
{
	if (c->load != LOAD_POLL || !flow_table_lookup(c->external, &ff->flow.orig))
		return false;
	return c->mirroring || !handle || (flow_table_flags(c->internal, handle) & FLOW_ENTRY_DEAD);
}

static void on_overrun(void *arg, uint32_t rcvbuf)
{
	struct caches *c = arg;

	log_warning("netlink event overrun: events were lost (receive buffer now %u bytes); "
		    "resynchronising with the kernel table", rcvbuf);
	if (!c->cfg->general.netlink_overrun_resync) {
		log_warning("NetlinkOverrunResync is off: the internal cache may stay out of date");
		return;
	}
	if (c->dump) {
		c->resync_again = true;
		return;
	}
	start_load(c, LOAD_RESYNC);
}

static void on_dump_flow(void *arg, const struct flow_full *ff)
{
	struct caches *c = arg;
	uint32_t handle, hash;

	if (!flow_filter_pass_full(c->filter, ff)) {
		c->load_filtered++;
		return;
	}
	hash = flow_table_hash(c->internal, &ff->flow.orig);
	handle = flow_table_lookup_hashed(c->internal, &ff->flow.orig, hash);
	if (handle && load_marked(c, handle, LOAD_TOUCHED)) {
		/* An event already told us of a change at least as new as this copy. */
		if (!(flow_table_flags(c->internal, handle) & FLOW_ENTRY_DEAD))
			load_mark(c, handle, LOAD_SEEN);
		return;
	}
	if (handle && load_tells(c) && (ff->flow.attrs & FLOW_A_TIMEOUT) &&
	    !(flow_table_flags(c->internal, handle) & FLOW_ENTRY_DEAD)) {
		/*
		 * A timeout always differs from the cached one (it runs down):
		 * alone, it is no change to send to the peer again.
		 */
		const struct flow *cur = flow_table_flow(c->internal, handle);

		if ((cur->attrs & FLOW_A_TIMEOUT) && cur->timeout != ff->flow.timeout) {
			c->scratch.flow = ff->flow;
			c->scratch.ext = ff->ext;
			c->scratch.labels.words = ff->labels.words;
			memcpy(c->scratch.labels.w, ff->labels.w, ff->labels.words * sizeof(uint32_t));
			c->scratch.flow.timeout = cur->timeout;
			ff = &c->scratch;
		}
	}
	store_local(c, KERNEL_EV_NEW, ff, load_tells(c) && !poll_is_peers_own(c, ff, handle), handle, hash);
}

/* The deletions caches_forget_dead() put off until the end of the load. */
static void forget_acked_dead(struct caches *c)
{
	for (uint32_t h = 1; h < c->nmarks; h++)
		if ((c->marks[h] & LOAD_ACKED) && (flow_table_flags(c->internal, h) & FLOW_ENTRY_DEAD))
			flow_table_delete(c->internal, h);
}

/* Entries the dump did not deliver are gone from the kernel. */
static uint64_t sweep_unseen(struct caches *c)
{
	uint32_t cursor = 0, h;
	uint64_t swept = 0;

	while ((h = flow_table_next(c->internal, &cursor)) != 0) {
		if (load_marked(c, h, LOAD_SEEN) || (flow_table_flags(c->internal, h) & FLOW_ENTRY_DEAD))
			continue;
		if (load_tells(c))
			drop_local(c, h);
		else
			forget_local(c, h);
		swept++;
	}
	return swept;
}

static void on_dump_done(void *arg, int err, const struct kernel_dump_stats *st)
{
	struct caches *c = arg;
	enum load_kind kind = c->load;
	uint64_t ms = loop_now_ms(c->loop) - c->load_started_ms;
	uint64_t swept = 0;

	if (err == 0 && kind != LOAD_STARTUP)
		swept = sweep_unseen(c);
	c->n.swept += swept;
	c->dump = NULL;
	forget_acked_dead(c);
	free(c->marks);
	c->marks = NULL;
	c->nmarks = 0;

	if (err && err != -EINTR) {
		log_error("kernel table dump failed: %s", strerror(-err));
		finish_all(&c->load_waiters, CTL_STATUS_FAILED, "ctsyncd: the kernel dump failed: %s",
			   strerror(-err));
	} else {
		const char *what = kind == LOAD_STARTUP ? "loaded" : kind == LOAD_REDUMP ? "re-read" :
				   kind == LOAD_POLL ? "polled" : "resynchronised";

		uint64_t kept = st->flows - (c->load_filtered < st->flows ? c->load_filtered : st->flows);

		if (kind == LOAD_POLL) {
			c->polls++;
			c->last_poll = (struct poll_result) {
				.unix_time = (uint64_t)time(NULL),
				.duration_ms = ms,
				.states = kept,
				.told_new = c->load_told_new,
				.told_updated = c->load_told_updated,
				.vanished = swept,
			};
		}
		/* A poll is not logged: a line every PollSecs would drown the log; -s shows the last. */
		if (kind != LOAD_POLL || err == -EINTR)
			log_notice("kernel table %s: %llu states in %llu ms (%llu left out by the Filter), "
				   "%llu vanished states removed%s", what, (unsigned long long)kept,
				   (unsigned long long)ms, (unsigned long long)(st->flows - kept),
				   (unsigned long long)swept,
				   err == -EINTR ? " (the table changed during the dump)" : "");
		finish_all(&c->load_waiters, CTL_STATUS_OK,
			   "kernel table re-read: %llu states in %llu ms (%llu left out by the Filter), "
			   "%llu vanished states removed", (unsigned long long)kept, (unsigned long long)ms,
			   (unsigned long long)(st->flows - kept), (unsigned long long)swept);
	}
	if (c->resync_again || err == -EINTR) {
		c->resync_again = false;
		start_load(c, c->poll_timer ? LOAD_POLL : LOAD_RESYNC);
	} else if (c->expects) {
		/*
		 * Now that the masters are in (1.4.7 keeps only expectations whose
		 * master it has): the expectations, told to the peer when the
		 * load tells (a poll has no expectation events either).
		 */
		int rc = expects_load(c->expects, kind == LOAD_RESYNC || kind == LOAD_POLL, NULL);

		if (rc < 0)
			log_error("cannot dump the kernel's expectations: %s", strerror(-rc));
	}
	poll_go_on(c);
}

/*
 * After a load or a kernel flush: run the poll that had to wait for it, or
 * else arm the next one PollSecs later, so that polls never overlap.
 */
static void poll_go_on(struct caches *c)
{
	if (!c->poll_timer || c->dump || c->purging)
		return;
	if (c->poll_due) {
		c->poll_due = false;
		start_load(c, LOAD_POLL);
	}
	if (!c->dump && !loop_timer_armed(c->poll_timer))
		loop_timer_arm(c->poll_timer, (uint64_t)c->cfg->general.poll_secs * 1000u);
}

/*
 * A kernel flush is about to start: a poll that runs would report the
 * flushed states to the peer as vanished (a flush is never sent), or, after
 * the internal cache was emptied for a scheduled purge, as new.  Drop it;
 * it runs again when the flush is done.
 */
static void abandon_poll(struct caches *c)
{
	if (!c->dump || c->load != LOAD_POLL)
		return;
	kernel_dump_cancel(c->dump);
	c->dump = NULL;
	forget_acked_dead(c);
	free(c->marks);
	c->marks = NULL;
	c->nmarks = 0;
	c->poll_due = true;   /* a -R that joined it is answered by the re-read after the flush */
}

static void on_poll_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct caches *c = arg;

	/*
	 * Another load (-R) or a kernel flush runs: poll when it ends, so
	 * that a poll never sees half a flush and tells the peer about it.
	 */
	if (c->dump || c->purging)
		c->polls_delayed++;
	c->poll_due = true;
	poll_go_on(c);
}

static void start_load(struct caches *c, enum load_kind kind)
{
	static const struct kernel_dump_cb cb = { .on_flow = on_dump_flow, .on_done = on_dump_done };
	int err = 0;

	c->load = kind;
	c->load_filtered = 0;
	c->load_told_new = c->load_told_updated = 0;
	c->load_started_ms = loop_now_ms(c->loop);
	if (kind == LOAD_RESYNC)
		c->n.resyncs++;
	c->dump = kernel_dump_start(c->loop, AF_UNSPEC, 0, &cb, c, &err);
	if (!c->dump) {
		log_error("cannot dump the kernel table: %s", strerror(-err));
		finish_all(&c->load_waiters, CTL_STATUS_FAILED, "ctsyncd: cannot dump the kernel table: %s",
			   strerror(-err));
	}
}

/* ---- the external cache ------------------------------------------------------ */

static uint32_t inject_timeout(const struct flow_full *ff)
{
	return (ff->flow.attrs & FLOW_A_TIMEOUT) && ff->flow.timeout ? ff->flow.timeout
								       : DEFAULT_COMMIT_TIMEOUT;
}

/*
 * Write a received state into the kernel: create; an existing entry is
 * updated in place (on_write_error), for which the request is remembered
 * in a ring larger than any batch.
 */
static int inject(struct caches *c, uint8_t type, const struct flow_full *ff)
{
	enum kernel_op op = type == WIRE_T_CT_DEL ? KERNEL_OP_DELETE : KERNEL_OP_CREATE;
	uint64_t cookie = INJECT_COOKIE | ++c->inject_seq;
	struct inject_slot *slot = &c->inject_ring[cookie % INJECT_RING];
	int rc;

	slot->cookie = cookie;
	slot->flow = ff->flow;
	slot->ext = ff->ext;
	rc = kernel_writer_put(c->writer, op, ff, inject_timeout(ff), cookie);
	if (rc == 0)
		c->n.injected_ok++;
	else
		c->n.injected_failed++;
	return rc;
}

static int store_remote(struct caches *c, uint8_t type, const struct flow_full *ff)
{
	uint32_t handle;
	int rc;

	switch (type) {
	case WIRE_T_CT_NEW:
	case WIRE_T_CT_UPD:
		rc = flow_table_upsert(c->external, ff, now_s(c), &handle);
		if (rc < 0) {
			c->n.remote_failed++;
			return rc;
		}
		if (type == WIRE_T_CT_NEW)
			c->n.remote_new++;
		else
			c->n.remote_update++;
		return 0;
	case WIRE_T_CT_DEL:
		handle = flow_table_lookup(c->external, &ff->flow.orig);
		if (!handle) {
			c->n.remote_delete_unknown++;
			return 0;
		}
		flow_table_delete(c->external, handle);
		c->n.remote_delete++;
		return 0;
	}
	return -EINVAL;
}

void caches_prefetch_remote(struct caches *c, uint8_t type, const struct flow_full *ff)
{
	(void)type;
	if (!c->cfg->sync.disable_external_cache)
		flow_table_prefetch(c->external, flow_table_hash(c->external, &ff->flow.orig));
}

int caches_apply_remote(struct caches *c, uint8_t type, const struct flow_full *ff)
{
	int rc;

	if (c->cfg->sync.disable_external_cache)
		return inject(c, type, ff);
	rc = store_remote(c, type, ff);
	/*
	 * HotStandby: a backup also keeps its kernel table equal to the
	 * primary's, so that a takeover finds every state already there.
	 */
	if (rc == 0 && c->mirroring)
		rc = inject(c, type, ff);
	return rc;
}

/*
 * §3, §5.1: in ALARM an external entry lives CacheTimeout seconds after its
 * last refresh (its update time, in whole seconds: it leaves after more
 * than CacheTimeout, never before).  The sweep goes through the table in
 * slices from a loop timer, never in one stall.
 */
static void on_expire_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct caches *c = arg;
	uint32_t now = now_s(c), timeout = c->cfg->sync.cache_timeout, h;
	unsigned visited = 0;

	while (visited < EXPIRE_VISIT) {
		h = flow_table_next(c->external, &c->expire_cursor);
		if (!h) {
			c->expire_cursor = 0;
			loop_timer_arm(timer, EXPIRE_PASS_MS);
			return;
		}
		visited++;
		if (now - flow_table_updated(c->external, h) > timeout) {
			flow_table_delete(c->external, h);
			c->n.expired++;
		}
	}
	loop_timer_arm(timer, EXPIRE_PERIOD_MS);
}

/* ---- commit ---------------------------------------------------------------------- */

/* conntrackd's rule: CommitTimeout, else what is left of the cached timeout (60 s at least). */
static uint32_t commit_timeout(struct caches *c, uint32_t handle, const struct flow *f)
{
	uint32_t age = now_s(c) - flow_table_updated(c->external, handle);

	if (c->cfg->sync.commit_timeout)
		return c->cfg->sync.commit_timeout;
	if (!(f->attrs & FLOW_A_TIMEOUT) || f->timeout <= age)
		return DEFAULT_COMMIT_TIMEOUT;
	return f->timeout - age;
}

static bool commit_next(void *arg, struct kernel_job_item *it)
{
	struct caches *c = arg;
	uint32_t h;

	while ((h = flow_table_next(c->external, &c->commit_cursor)) != 0) {
		const struct flow *f = flow_table_flow(c->external, h);
		bool related = f->attrs & FLOW_A_MASTER;

		/* Masters first, so that the kernel can link related states to them. */
		if (related != (c->commit_pass == 1))
			continue;
		if (flow_table_export(c->external, h, &c->scratch) < 0)
			continue;
		it->op = KERNEL_OP_CREATE;
		it->ff = &c->scratch;
		it->timeout = commit_timeout(c, h, f);
		it->cookie = h;
		return true;
	}
	return false;
}

static void add_stats(struct kernel_write_stats *sum, const struct kernel_write_stats *st)
{
	sum->requests += st->requests;
	sum->ok += st->ok;
	sum->failed += st->failed;
	sum->batches += st->batches;
	sum->lost += st->lost;
	for (unsigned i = 0; i < KERNEL_ERRNO_MAX; i++)
		sum->by_errno[i] += st->by_errno[i];
}

static void commit_done(void *arg, const struct kernel_write_stats *st)
{
	struct caches *c = arg;
	uint64_t ms;
	int rc;

	add_stats(&c->commit_stats, st);
	if (c->commit_pass == 0) {
		c->commit_pass = 1;
		c->commit_cursor = 0;
		rc = kernel_writer_run(c->writer, 8192, commit_next, commit_done, c);
		if (rc == 0)
			return;
		log_error("commit: cannot start the second pass: %s", strerror(-rc));
	}
	/* Updates in place of existing states were put by on_write_error: send them now. */
	kernel_writer_flush(c->writer);
	c->committing = false;
	ms = loop_now_ms(c->loop) - c->commit_started_ms;
	{
		const struct kernel_write_stats *s = &c->commit_stats;
		uint64_t existed = s->by_errno[EEXIST];
		uint64_t failed = s->failed - existed + (existed - c->commit_updated);
		uint64_t written = s->ok + c->commit_updated;

		char exp_line[160] = "";
		uint64_t exp_failed = 0;

		c->n.committed_ok += s->ok;
		c->n.committed_updated += c->commit_updated;
		c->n.committed_failed += failed;
		log_notice("commit: %llu states written in %llu ms (%llu created, %llu updated in place, %llu failed)",
			   (unsigned long long)written, (unsigned long long)ms, (unsigned long long)s->ok,
			   (unsigned long long)c->commit_updated, (unsigned long long)failed);
		/* The expectations last: the kernel links each to its master, which must be in. */
		if (c->expects && c->commit_expects)
			exp_failed = expects_commit(c->expects, exp_line, sizeof(exp_line));
		finish_all(&c->commit_waiters, failed || exp_failed ? CTL_STATUS_FAILED : CTL_STATUS_OK,
			   "commit: %llu states written in %llu ms (%llu created, %llu updated in place, %llu failed)%s%s",
			   (unsigned long long)written, (unsigned long long)ms, (unsigned long long)s->ok,
			   (unsigned long long)c->commit_updated, (unsigned long long)failed,
			   exp_line[0] ? "\n" : "", exp_line);
	}
}

static void on_write_error(void *arg, enum kernel_op op, uint64_t cookie, int err)
{
	struct caches *c = arg;

	if ((cookie & EXPECTS_COOKIE) && !(cookie & INJECT_COOKIE)) {
		expects_write_error(c->expects, op, cookie, err);
		return;
	}
	if (cookie & INJECT_COOKIE) {
		struct inject_slot *slot = &c->inject_ring[cookie % INJECT_RING];

		if (op == KERNEL_OP_CREATE && err == EEXIST && slot->cookie == cookie) {
			/*
			 * conntrackd deletes and re-creates; we update in place,
			 * which keeps the kernel entry (and its counters).  With
			 * HotStandby the external cache has the state, labels
			 * included (or a newer one); the ring keeps no labels, so
			 * with DisableExternalCache an update leaves the entry's
			 * labels as they are (unless the state lost them all).
			 */
			uint32_t h = c->cfg->sync.disable_external_cache ? 0 :
				     flow_table_lookup(c->external, &slot->flow.orig);

			if (!h || flow_table_export(c->external, h, &c->scratch) < 0) {
				c->scratch.flow = slot->flow;
				c->scratch.ext = slot->ext;
				c->scratch.flow.attrs &= ~FLOW_A_LABELS;
				c->scratch.labels.words = 0;
			}
			if (kernel_writer_put(c->writer, KERNEL_OP_UPDATE, &c->scratch,
					      inject_timeout(&c->scratch), cookie) == 0)
				return;
		}
		if (!(op == KERNEL_OP_DELETE && err == ENOENT))
			c->n.injected_failed++;
		return;
	}
	if (op == KERNEL_OP_CREATE && err == EEXIST && c->committing) {
		/*
		 * The state is already in the kernel: update it in place with
		 * ours (timeout, mark, labels, ...), but leave the status bits
		 * and the protocol's state machine to the kernel.  It may
		 * already follow the connection's packets (this node forwards
		 * now), and the peer's copy can be older: the kernel refuses to
		 * clear SEEN_REPLY or ASSURED, which failed the whole update,
		 * and a TCP state set back would misjudge the next packets.
		 * (SCTP and DCCP take their state only together with the vtags
		 * or the role.)
		 */
		const uint32_t machine = FLOW_A_STATUS | FLOW_A_PROTO_STATE | FLOW_A_WSCALE |
					 FLOW_A_SCTP_VTAGS | FLOW_A_DCCP_ROLE;
		uint32_t h = (uint32_t)cookie;

		if (flow_table_export(c->external, h, &c->scratch) < 0)
			return;
		c->scratch.flow.attrs &= ~machine;
		if (kernel_writer_put(c->writer, KERNEL_OP_UPDATE, &c->scratch,
				      commit_timeout(c, h, flow_table_flow(c->external, h)), cookie) == 0)
			c->commit_updated++;
		return;
	}
	if (op == KERNEL_OP_UPDATE && c->commit_updated)
		c->commit_updated--;
}

static enum control_result answer_commit(struct control_request *req, void *arg)
{
	struct caches *c = arg;
	uint32_t code = control_request_code(req);
	int rc;

	if (code == CTL_COMMIT_EXP) {
		char line[160];

		if (!c->expects)
			return no_expects(req);
		if (c->cfg->sync.disable_external_cache) {
			control_request_printf(req, "ctsyncd: nothing to commit: DisableExternalCache is on\n");
			return CONTROL_DONE;
		}
		if (expects_commit(c->expects, line, sizeof(line)))
			control_request_set_status(req, CTL_STATUS_FAILED);
		control_request_printf(req, "%s\n", line);
		return CONTROL_DONE;
	}
	if (c->cfg->sync.disable_external_cache) {
		control_request_printf(req, "ctsyncd: nothing to commit: DisableExternalCache is on, "
				       "received states go straight into the kernel\n");
		return CONTROL_DONE;
	}
	if (c->committing) {
		c->commit_expects |= code != CTL_COMMIT_CT;
		return wait_for(&c->commit_waiters, req);
	}
	if (c->purging) {
		control_request_printf(req, "ctsyncd: a kernel flush is running; commit again when it ends\n");
		control_request_set_status(req, CTL_STATUS_BUSY);
		return CONTROL_DONE;
	}
	/* A commit makes this node the primary: a scheduled purge must not undo it. */
	loop_timer_disarm(c->purge_timer);
	if (c->mirroring) {
		/*
		 * From now on the states the peer sends are its own, not ours
		 * to write: a backup's DEL must never delete a live state here.
		 */
		c->mirroring = false;
		log_notice("HotStandby: this node is the primary now; received states are kept "
			   "in the external cache only");
	}
	memset(&c->commit_stats, 0, sizeof(c->commit_stats));
	c->commit_updated = 0;
	c->commit_expects = code != CTL_COMMIT_CT;
	c->commit_pass = 0;
	c->commit_cursor = 0;
	c->commit_started_ms = loop_now_ms(c->loop);
	rc = kernel_writer_run(c->writer, 8192, commit_next, commit_done, c);
	if (rc < 0) {
		control_request_printf(req, "ctsyncd: cannot start the commit: %s\n", strerror(-rc));
		control_request_set_status(req, CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	c->committing = true;
	c->n.commits++;
	log_notice("commit: writing %u external states into the kernel", flow_table_count(c->external));
	return wait_for(&c->commit_waiters, req);
}

/* ---- flushes, purge, re-dump -------------------------------------------------------- */

/* Entries the Filter excludes are not ours to delete (-F). */
static bool keep_excluded(void *arg, const struct flow_full *ff)
{
	struct caches *c = arg;

	return flow_filter_check(c->filter, &ff->flow, &ff->ext) != FLOW_FILTER_PASS;
}

/*
 * The scheduled purge also keeps, with HotStandby on, what the primary
 * has: those entries are the mirror, and deleting them would make the
 * next takeover cold.  Only leftovers of this node's own time as the
 * primary go.
 */
static bool keep_for_purge(void *arg, const struct flow_full *ff)
{
	struct caches *c = arg;

	if (keep_excluded(arg, ff))
		return true;
	return c->cfg->sync.hot_standby && flow_table_lookup(c->external, &ff->flow.orig) != 0;
}

static void purge_done(void *arg, int err, uint64_t seen, const struct kernel_write_stats *st)
{
	struct caches *c = arg;

	c->purging = false;
	c->n.purged += st->ok;
	if (err) {
		log_error("kernel flush failed after %llu deletions: %s", (unsigned long long)st->ok,
			  strerror(-err));
		finish_all(&c->purge_waiters, CTL_STATUS_FAILED, "ctsyncd: kernel flush failed: %s",
			   strerror(-err));
		poll_go_on(c);
		return;
	}
	log_notice("kernel flush: %llu of %llu states deleted", (unsigned long long)st->ok,
		   (unsigned long long)seen);
	/*
	 * Our own deletions never reach the event socket (its filter drops
	 * them): re-read the table so that the internal cache loses them too,
	 * without telling the peer, as conntrackd does for flushes.
	 */
	if (!c->dump)
		start_load(c, LOAD_REDUMP);
	poll_go_on(c);
	finish_all(&c->purge_waiters, CTL_STATUS_OK, "kernel flush: %llu of %llu states deleted",
		   (unsigned long long)st->ok, (unsigned long long)seen);
}

static int start_purge(struct caches *c, bool scheduled)
{
	int rc;

	if (c->purging)
		return 0;
	if (c->committing)
		return -EBUSY;
	abandon_poll(c);
	rc = kernel_writer_purge(c->writer, AF_UNSPEC, scheduled ? keep_for_purge : keep_excluded,
				 purge_done, c);
	if (rc == 0) {
		c->purging = true;
		c->n.purges++;
	} else {
		poll_go_on(c);   /* the poll abandoned above */
	}
	return rc;
}

static void flush_internal(struct caches *c)
{
	uint32_t cursor = 0, h;

	if (!c->listener.forget) {
		flow_table_clear(c->internal);
		return;
	}
	/* The sync layer may hold handles in its queues: let it let go of them first. */
	while ((h = flow_table_next(c->internal, &cursor)) != 0)
		forget_local(c, h);
}

static void on_purge_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct caches *c = arg;
	int rc;

	log_notice("scheduled purge: flushing the kernel table and the internal cache");
	if (!c->committing)
		abandon_poll(c);
	flush_internal(c);
	rc = start_purge(c, true);
	if (rc < 0)
		log_error("scheduled purge: cannot flush the kernel table: %s", strerror(-rc));
}

static enum control_result answer_flush(struct control_request *req, void *arg)
{
	struct caches *c = arg;
	uint32_t code = control_request_code(req);

	if (c->committing) {
		control_request_printf(req, "ctsyncd: a commit is running; caches not flushed\n");
		control_request_set_status(req, CTL_STATUS_BUSY);
		return CONTROL_DONE;
	}
	loop_timer_disarm(c->purge_timer);
	if (code != CTL_FLUSH_EXTERNAL) {
		control_request_printf(req, "internal cache flushed: %u states\n", flow_table_count(c->internal));
		flush_internal(c);
	}
	if (code != CTL_FLUSH_INTERNAL) {
		control_request_printf(req, "external cache flushed: %u states\n", flow_table_count(c->external));
		flow_table_clear(c->external);
	}
	if (c->expects)
		expects_flush(c->expects, code != CTL_FLUSH_EXTERNAL, code != CTL_FLUSH_INTERNAL, req);
	return CONTROL_DONE;
}

static enum control_result answer_kernel_flush(struct control_request *req, void *arg)
{
	struct caches *c = arg;
	int rc;

	if (control_request_code(req) == CTL_FLUSH_KERNEL_EXP) {
		if (!c->expects)
			return no_expects(req);
		if (expects_kernel_flush(c->expects, req) < 0)
			control_request_set_status(req, CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	if (control_request_code(req) == CTL_FLUSH_KERNEL_ALL && c->expects &&
	    expects_kernel_flush(c->expects, req) < 0)
		control_request_set_status(req, CTL_STATUS_FAILED);
	rc = start_purge(c, false);
	if (rc < 0) {
		control_request_printf(req, "ctsyncd: cannot flush the kernel table: %s\n",
				       rc == -EBUSY ? "a commit is running" : strerror(-rc));
		control_request_set_status(req, rc == -EBUSY ? CTL_STATUS_BUSY : CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	return wait_for(&c->purge_waiters, req);
}

static enum control_result answer_schedule_purge(struct control_request *req, void *arg)
{
	struct caches *c = arg;

	/* -t is what a node hears when it becomes a backup (or faults). */
	if (c->cfg->sync.hot_standby && !c->mirroring) {
		c->mirroring = true;
		log_notice("HotStandby: this node is a backup now; received states are written "
			   "into the kernel as they arrive");
		control_request_printf(req, "HotStandby: received states are written into the kernel again\n");
	}
	if (loop_timer_armed(c->purge_timer)) {
		control_request_printf(req, "purge already scheduled\n");
		return CONTROL_DONE;
	}
	loop_timer_arm(c->purge_timer, (uint64_t)c->cfg->sync.purge_timeout * 1000u);
	control_request_printf(req, "kernel table purge scheduled in %u s\n", c->cfg->sync.purge_timeout);
	return CONTROL_DONE;
}

static enum control_result answer_redump(struct control_request *req, void *arg)
{
	struct caches *c = arg;

	if (control_request_code(req) == CTL_RESYNC_KERNEL_EXP) {
		int rc;

		if (!c->expects)
			return no_expects(req);
		if ((rc = expects_load(c->expects, false, req)) < 0) {
			control_request_printf(req, "ctsyncd: cannot dump the kernel's expectations: %s\n",
					       strerror(-rc));
			control_request_set_status(req, CTL_STATUS_FAILED);
			return CONTROL_DONE;
		}
		return CONTROL_PENDING;
	}
	if (!c->dump)
		start_load(c, LOAD_REDUMP);
	if (!c->dump) {
		control_request_printf(req, "ctsyncd: cannot dump the kernel table\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	return wait_for(&c->load_waiters, req);
}

/* ---- dumps and statistics ----------------------------------------------------------- */

/* -i / -e: one line per live state, as text (with its age) or, with `xml`, as 1.4.7's XML. */
static void dump_table(struct caches *c, struct control_request *req, struct flow_table *t, unsigned opts,
		       bool xml)
{
	char line[FLOW_FORMAT_MAX];
	uint32_t cursor = 0, h, now = now_s(c);

	while ((h = flow_table_next(t, &cursor)) != 0) {
		int n;

		if (flow_table_flags(t, h) & FLOW_ENTRY_DEAD)
			continue;
		if (flow_table_export(t, h, &c->scratch) < 0)
			continue;
		n = xml ? flow_format_xml(line, sizeof(line), &c->scratch, opts)
			: flow_format(line, sizeof(line), &c->scratch, opts);
		caches_dump_line(req, line, n, sizeof(line), xml, now - flow_table_updated(t, h));
	}
}

void caches_dump_line(struct control_request *req, const char *line, int n, size_t cap, bool xml,
		      uint32_t age)
{
	if (n < 0)
		return;
	if ((size_t)n >= cap)
		n = (int)cap - 1;       /* cut, as the formatters say */
	control_request_write(req, line, (size_t)n);
	if (xml)
		control_request_write(req, "\n", 1);
	else
		control_request_printf(req, " [updated %us ago]\n", age);
}

static enum control_result answer_dump(struct control_request *req, void *arg)
{
	struct caches *c = arg;

	switch (control_request_code(req)) {
	case CTL_DUMP_INTERNAL_CT:
	case CTL_DUMP_INTERNAL_CT_XML:
		dump_table(c, req, c->internal, FLOW_FMT_REPLY,
			   control_request_code(req) == CTL_DUMP_INTERNAL_CT_XML);
		return CONTROL_DONE;
	case CTL_DUMP_EXTERNAL_CT:
	case CTL_DUMP_EXTERNAL_CT_XML:
		dump_table(c, req, c->external, 0, control_request_code(req) == CTL_DUMP_EXTERNAL_CT_XML);
		return CONTROL_DONE;
	case CTL_DUMP_INTERNAL_EXP:
	case CTL_DUMP_EXTERNAL_EXP:
	case CTL_DUMP_INTERNAL_EXP_XML:
	case CTL_DUMP_EXTERNAL_EXP_XML:
		if (!c->expects)
			return no_expects(req);
		expects_dump(c->expects, req, control_request_code(req) == CTL_DUMP_INTERNAL_EXP ||
			     control_request_code(req) == CTL_DUMP_INTERNAL_EXP_XML,
			     control_request_code(req) == CTL_DUMP_INTERNAL_EXP_XML ||
			     control_request_code(req) == CTL_DUMP_EXTERNAL_EXP_XML);
		return CONTROL_DONE;
	}
	return CONTROL_DONE;
}

void caches_report_table(struct report *r, const char *name, const struct flow_table_stats *st)
{
	report_begin(r, name);
	report_u64(r, "active", st->active);
	report_u64(r, "dead", st->dead);
	report_u64(r, "max_seen", st->max_seen);
	report_u64(r, "limit", st->limit);
	report_u64(r, "inserted", st->inserted);
	report_u64(r, "updated", st->updated);
	report_u64(r, "deleted", st->deleted);
	report_u64(r, "limit_hits", st->enospc);
	report_u64(r, "no_memory", st->enomem);
	report_u64(r, "memory_bytes", st->memory);
	report_end(r);
}

static void report_table(struct report *r, const char *name, struct flow_table *t)
{
	struct flow_table_stats st;

	flow_table_stats(t, &st);
	caches_report_table(r, name, &st);
}

void caches_report(struct caches *c, struct report *r)
{
	struct kernel_events_stats ev = { 0 };
	struct kernel_write_stats wr;

	report_table(r, "internal_cache", c->internal);
	if (c->cfg->role == CONFIG_ROLE_SYNC)
		report_table(r, "external_cache", c->external);
	if (c->expects)
		expects_report(c->expects, r);
	if (c->events)
		kernel_events_get_stats(c->events, &ev);
	report_begin(r, "kernel");
	report_u64(r, "events_new", c->n.events_new);
	report_u64(r, "events_update", c->n.events_update);
	report_u64(r, "events_destroy", c->n.events_destroy);
	report_u64(r, "events_filtered", c->n.events_filtered);
	report_u64(r, "events_malformed", ev.malformed);
	report_u64(r, "overruns", ev.overruns);
	report_u64(r, "buffer_grown_early", ev.grown_early);
	report_u64(r, "resyncs", c->n.resyncs);
	report_u64(r, "vanished_removed", c->n.swept);
	report_u64(r, "masters_reread", c->n.masters_reread);
	report_u64(r, "netlink_buffer_bytes", ev.rcvbuf);
	report_bool(r, "event_socket", c->events != NULL);
	report_bool(r, "loading", c->dump != NULL);
	report_end(r);
	/* What 1.4.7 calls "traffic processed": the counters of the flows destroyed (nf_conntrack_acct). */
	report_begin(r, "traffic_processed");
	report_u64(r, "packets", c->n.traffic_packets);
	report_u64(r, "bytes", c->n.traffic_bytes);
	report_end(r);
	if (c->poll_timer) {
		const struct poll_result *p = &c->last_poll;
		uint64_t now = (uint64_t)time(NULL);

		report_begin(r, "polling");
		report_u64(r, "poll_secs", c->cfg->general.poll_secs);
		report_u64(r, "polls", c->polls);
		report_u64(r, "polls_delayed", c->polls_delayed);
		report_bool(r, "polling_now", c->dump != NULL && c->load == LOAD_POLL);
		report_u64(r, "last_poll_unix_time", p->unix_time);
		report_u64(r, "last_poll_seconds_ago", p->unix_time && now >= p->unix_time ? now - p->unix_time : 0);
		report_u64(r, "last_poll_ms", p->duration_ms);
		report_u64(r, "last_poll_states", p->states);
		report_u64(r, "last_poll_sent_new", p->told_new);
		report_u64(r, "last_poll_sent_updated", p->told_updated);
		report_u64(r, "last_poll_vanished", p->vanished);
		report_end(r);
	}
	if (c->cfg->role == CONFIG_ROLE_SYNC) {
		kernel_writer_get_stats(c->writer, &wr);
		report_begin(r, "commit");
		report_u64(r, "commits", c->n.commits);
		report_u64(r, "created", c->n.committed_ok);
		report_u64(r, "updated_in_place", c->n.committed_updated);
		report_u64(r, "failed", c->n.committed_failed);
		report_bool(r, "running", c->committing);
		report_u64(r, "kernel_flushes", c->n.purges);
		report_u64(r, "kernel_flushed_states", c->n.purged);
		report_bool(r, "purge_scheduled", loop_timer_armed(c->purge_timer));
		report_end(r);
		report_begin(r, "remote_states");
		report_u64(r, "new", c->n.remote_new);
		report_u64(r, "updated", c->n.remote_update);
		report_u64(r, "deleted", c->n.remote_delete);
		report_u64(r, "deleted_unknown", c->n.remote_delete_unknown);
		report_u64(r, "failed", c->n.remote_failed);
		report_u64(r, "injection_failures", c->n.injected_failed);
		if (c->cfg->sync.mode == CONFIG_MODE_ALARM)
			report_u64(r, "expired", c->n.expired);
		report_end(r);
		report_begin(r, "hot_standby");
		report_bool(r, "enabled", c->cfg->sync.hot_standby);
		report_bool(r, "mirroring", c->mirroring);
		report_u64(r, "written_into_kernel", c->n.injected_ok);
		report_end(r);
	}
}

static enum control_result answer_stats_cache(struct control_request *req, void *arg)
{
	struct caches *c = arg;
	struct report *r = report_new(control_request_wants_json(req) ? REPORT_JSON : REPORT_TEXT);
	const char *text;
	size_t len;

	if (!r || (caches_report(c, r), !(text = report_finish(r, &len)))) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
	} else {
		control_request_write(req, text, len);
	}
	report_free(r);
	return CONTROL_DONE;
}

/* ---- life ------------------------------------------------------------------------------ */

int caches_new(struct caches **out, const struct config *cfg, struct loop *loop, uint32_t seed)
{
	struct flow_table_options topt = {
		.buckets = cfg->general.hash_size,
		.limit = cfg->general.hash_limit,
		.seed = seed,
		.user_bytes = CACHES_USER_BYTES,
	};
	struct kernel_writer_opts wopt = {
		.build_opts = cfg->sync.tcp_window_tracking ? KERNEL_BUILD_WINDOW_TRACKING : 0,
	};
	static const struct kernel_writer_cb wcb = { .on_error = on_write_error };
	struct caches *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->cfg = cfg;
	c->loop = loop;
	err = flow_table_new(&topt, &c->internal);
	if (err == 0) {
		topt.seed = seed * 2654435761u + 1;
		topt.user_bytes = 0;
		err = flow_table_new(&topt, &c->external);
	}
	if (err == 0) {
		c->filter = flow_filter_new(&cfg->general.filter, &err);
		if (!c->filter && !err)
			err = -ENOMEM;
	}
	if (err == 0 && (cfg->sync.disable_external_cache || cfg->sync.hot_standby)) {
		c->inject_ring = calloc(INJECT_RING, sizeof(*c->inject_ring));
		if (!c->inject_ring)
			err = -ENOMEM;
	}
	/*
	 * HotStandby: a daemon starts as a backup (a restarted backup must
	 * be hot at once); the primary's hook turns the mirror off with -c.
	 */
	c->mirroring = cfg->sync.hot_standby;
	if (err == 0) {
		c->purge_timer = loop_timer_new(loop, on_purge_timer, c);
		if (!c->purge_timer)
			err = -ENOMEM;
	}
	if (err == 0 && cfg->role == CONFIG_ROLE_SYNC && cfg->sync.mode == CONFIG_MODE_ALARM &&
	    !cfg->sync.disable_external_cache) {
		c->expire_timer = loop_timer_new(loop, on_expire_timer, c);
		if (!c->expire_timer)
			err = -ENOMEM;
		else
			loop_timer_arm(c->expire_timer, EXPIRE_PASS_MS);
	}
	if (err == 0 && cfg->general.poll_secs) {
		c->poll_timer = loop_timer_new(loop, on_poll_timer, c);   /* armed when the start-up load ends */
		if (!c->poll_timer)
			err = -ENOMEM;
	}
	if (err == 0) {
		c->writer = kernel_writer_new(loop, &wopt, &wcb, c, &err);
		if (!c->writer && !err)
			err = -ENOMEM;
	}
	if (err == 0 && cfg->role == CONFIG_ROLE_STATS &&
	    (err = stats_log_open(&c->stats_log, &cfg->stats, loop)) < 0)
		log_error("Stats: cannot open LogFile %s: %s", cfg->stats.logfile, strerror(-err));
	if (err == 0 && cfg->role == CONFIG_ROLE_SYNC && cfg->sync.expectation_sync)
		err = expects_new(&c->expects, cfg, loop, c->internal, c->writer, seed ^ 0x27d4eb2fu);
	if (err) {
		caches_free(c);
		return err;
	}
	*out = c;
	return 0;
}

/*
 * Filter From Kernelspace: the Filter as a BPF program after the drop of our
 * own writes, so the kernel drops what the Filter ignores before it is
 * copied to us.  The user-space Filter still runs (it decides alone for
 * what the program passes on unclassified, and keeps the counters).
 */
static int set_kernel_filter(struct caches *c)
{
	static struct sock_filter prog[BPF_MAXINSNS];
	/* Room for kernel_events_set_filter's prefix (own port ids). */
	int n = kernel_bpf_compile(&c->cfg->general.filter, prog, BPF_MAXINSNS - 16);
	int err;

	if (n == -E2BIG)
		log_notice("Filter From Kernelspace: the Filter needs more than %d BPF instructions "
			   "(too many addresses); it is applied in user space", BPF_MAXINSNS - 16);
	else if (n < 0)
		log_error("Filter From Kernelspace: cannot compile the Filter: %s; it is applied in "
			  "user space", strerror(-n));
	if (n <= 0)
		return kernel_events_set_filter(c->events, true, NULL, 0);
	err = kernel_events_set_filter(c->events, true, prog, (unsigned)n);
	if (err < 0) {
		log_error("Filter From Kernelspace: the kernel refused the program (%d instructions): %s; "
			  "the Filter is applied in user space", n, strerror(-err));
		return kernel_events_set_filter(c->events, true, NULL, 0);
	}
	log_notice("Filter From Kernelspace: %d BPF instructions on the event socket", n);
	return 0;
}

int caches_start(struct caches *c)
{
	const struct config *cfg = c->cfg;
	struct kernel_events_opts eo = {
		.rcvbuf = cfg->general.netlink_buffer_size,
		.rcvbuf_max = cfg->general.netlink_buffer_max_growth,
		.reliable = cfg->general.netlink_events_reliable,
		.iteration_limit = cfg->general.event_iteration_limit,
		.expectations = c->expects != NULL,
		.expectation_news = true,
		/* Wait 1 ms for events to accumulate: ~50 per system call instead of ~3. */
		.coalesce_ms = 1,
	};
	static const struct kernel_events_cb ecb = { .on_flow = on_event, .on_expect = on_expect_event,
						     .on_overrun = on_overrun, .prefetch = on_event_prefetch };
	int err = 0;

	if (cfg->general.filter.kernelspace && cfg->general.poll_secs)
		log_notice("Filter From Kernelspace: with PollSecs there is no event socket; "
			   "the Filter is applied in user space");
	if (cfg->general.poll_secs) {
		log_notice("PollSecs %u: polling the kernel table every %u s instead of following events",
			   cfg->general.poll_secs, cfg->general.poll_secs);
		if (cfg->sync.disable_external_cache)
			log_warning("PollSecs with DisableExternalCache: the states received from the peer "
				    "go into the kernel, and the next poll sends them back to it");
		start_load(c, LOAD_STARTUP);
		return c->dump ? 0 : -EIO;
	}
	c->events = kernel_events_open(c->loop, &eo, &ecb, c, &err);
	if (!c->events) {
		log_error("cannot subscribe to conntrack events: %s", strerror(-err));
		return err ? err : -ENOMEM;
	}
	kernel_events_add_own(c->events, kernel_writer_portid(c->writer));
	/* Our own writes (commit, injection) never reach us: they cannot overrun the socket. */
	if (cfg->general.filter.kernelspace)
		err = set_kernel_filter(c);
	else
		err = kernel_events_set_filter(c->events, true, NULL, 0);
	if (err < 0)
		log_warning("cannot filter our own writes out of the event socket: %s", strerror(-err));
	start_load(c, LOAD_STARTUP);
	return c->dump ? 0 : -EIO;
}

void caches_set_listener(struct caches *c, const struct caches_listener *l)
{
	c->listener = *l;
}

struct expects *caches_expects(struct caches *c)
{
	return c->expects;
}

int caches_reopen_logs(struct caches *c)
{
	return stats_log_reopen(c->stats_log);
}

void caches_free(struct caches *c)
{
	if (!c)
		return;
	finish_all(&c->commit_waiters, CTL_STATUS_FAILED, "ctsyncd: the daemon is exiting");
	expects_free(c->expects);
	stats_log_free(c->stats_log);
	kernel_getter_free(c->getter);
	finish_all(&c->purge_waiters, CTL_STATUS_FAILED, "ctsyncd: the daemon is exiting");
	finish_all(&c->load_waiters, CTL_STATUS_FAILED, "ctsyncd: the daemon is exiting");
	if (c->dump)
		kernel_dump_cancel(c->dump);
	if (c->writer) {
		kernel_writer_cancel(c->writer);
		kernel_writer_free(c->writer);
	}
	if (c->events)
		kernel_events_close(c->events);
	loop_timer_free(c->purge_timer);
	loop_timer_free(c->expire_timer);
	loop_timer_free(c->poll_timer);
	flow_filter_free(c->filter);
	flow_table_free(c->internal);
	flow_table_free(c->external);
	free(c->marks);
	free(c->inject_ring);
	free(c);
}

int caches_register(struct caches *c, struct control_server *ctl)
{
	static const uint32_t dumps[] = {
		CTL_DUMP_INTERNAL_CT, CTL_DUMP_EXTERNAL_CT, CTL_DUMP_INTERNAL_CT_XML,
		CTL_DUMP_EXTERNAL_CT_XML, CTL_DUMP_INTERNAL_EXP, CTL_DUMP_EXTERNAL_EXP,
		CTL_DUMP_INTERNAL_EXP_XML, CTL_DUMP_EXTERNAL_EXP_XML,
	};
	static const uint32_t flushes[] = {
		CTL_FLUSH_ALL, CTL_FLUSH_INTERNAL, CTL_FLUSH_EXTERNAL, CTL_FLUSH_CACHES_LEGACY,
	};
	int err = 0;

	for (size_t i = 0; i < sizeof(dumps) / sizeof(dumps[0]); i++)
		err |= control_server_register(ctl, dumps[i], answer_dump, c);
	for (size_t i = 0; i < sizeof(flushes) / sizeof(flushes[0]); i++)
		err |= control_server_register(ctl, flushes[i], answer_flush, c);
	err |= control_server_register(ctl, CTL_FLUSH_KERNEL_CT, answer_kernel_flush, c);
	err |= control_server_register(ctl, CTL_FLUSH_KERNEL_ALL, answer_kernel_flush, c);
	err |= control_server_register(ctl, CTL_FLUSH_KERNEL_EXP, answer_kernel_flush, c);
	err |= control_server_register(ctl, CTL_RESYNC_KERNEL_CT, answer_redump, c);
	err |= control_server_register(ctl, CTL_RESYNC_KERNEL_ALL, answer_redump, c);
	err |= control_server_register(ctl, CTL_RESYNC_KERNEL_EXP, answer_redump, c);
	err |= control_server_register(ctl, CTL_STATS_CACHE, answer_stats_cache, c);
	if (c->expects)
		err |= control_server_register(ctl, CTL_STATS_EXPECT, answer_stats_cache, c);
	if (c->cfg->role == CONFIG_ROLE_SYNC) {
		err |= control_server_register(ctl, CTL_COMMIT_ALL, answer_commit, c);
		err |= control_server_register(ctl, CTL_COMMIT_CT, answer_commit, c);
		err |= control_server_register(ctl, CTL_COMMIT_EXP, answer_commit, c);
		err |= control_server_register(ctl, CTL_SCHEDULE_PURGE, answer_schedule_purge, c);
	}
	return err ? -EINVAL : 0;
}

void caches_flush_external(struct caches *c)
{
	flow_table_clear(c->external);
}

struct flow_table *caches_internal(struct caches *c)
{
	return c->internal;
}

struct flow_table *caches_external(struct caches *c)
{
	return c->external;
}

void caches_forget_dead(struct caches *c, uint32_t handle)
{
	if (!(flow_table_flags(c->internal, handle) & FLOW_ENTRY_DEAD))
		return;
	if (c->dump) {
		load_mark(c, handle, LOAD_ACKED);   /* deleted when the load ends */
		if (load_marked(c, handle, LOAD_ACKED))
			return;
	}
	flow_table_delete(c->internal, handle);
}
