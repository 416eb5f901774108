/*
 * local.c - the internal conntrack cache: kernel events, and the loads
 * (dumps) of the kernel table at start-up, on -R, after an event overrun
 * and, with PollSecs, instead of events.
 *
 * With PollSecs there is no event socket: a loop timer runs the same load
 * as the resync after an overrun (a dump, then a sweep of what vanished)
 * every PollSecs seconds, counted from the end of the previous one.
 */
#include "cache_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <time.h>

#include "config/config.h"
#include "flow/filter.h"
#include "flow/table.h"
#include "loop/log.h"
#include "stats_log.h"

static void reread_master(struct cache *c, const struct flow_tuple *master);

/*
 * Expectation events come with ExpectationSync, and NEW ones always: a NAT
 * helper that expects a data connection has just rewritten its master's
 * stream (an FTP PORT through SNAT), and that changes the master's
 * sequence adjustment without an event (see reread_master()).
 */
static void on_expect_event(void *arg, const void *msg, size_t len, bool own_write)
{
	struct cache *c = arg;
	enum kernel_event ev;

	if (cache_has_exps(c))
		cache_exp_on_event(c, msg, len, own_write);
	if (own_write || kernel_exp_parse(msg, len, &c->x.scratch, &ev) != KERNEL_OK ||
	    ev != KERNEL_EV_NEW)
		return;
	reread_master(c, &c->x.scratch.master);
}


static void tell(struct cache *c, uint32_t handle, enum kernel_event ev)
{
	if (c->listener.changed)
		c->listener.changed(c->listener.arg, handle, ev);
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

static void load_mark(struct cache *c, uint32_t handle, uint8_t bits)
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

static bool load_marked(const struct cache *c, uint32_t handle, uint8_t bits)
{
	return handle < c->nmarks && (c->marks[handle] & bits);
}

/*
 * Store a NEW or UPDATE state of the kernel (`handle`: its entry, from the
 * caller's lookup, or 0; `hash`: the key's hash that lookup used); tell
 * the listener when asked.  Returns the entry, or 0 if the table refused it.
 */
static uint32_t store_local(struct cache *c, enum kernel_event ev, const struct flow_full *ff, bool notify,
			    uint32_t handle, uint32_t hash)
{
	const struct flow_full *in = ff;
	int rc;

	if (ev == KERNEL_EV_UPDATE && handle &&
	    !(flow_table_flags(c->internal, handle) & FLOW_ENTRY_DEAD) &&
	    flow_table_export(c->internal, handle, &c->scratch) == 0) {
		flow_merge_update(&c->scratch, ff, c->event_labels_whole);
		in = &c->scratch;
	} else if (handle && !(ff->flow.attrs & FLOW_A_LABELS) &&
		   (flow_table_flow(c->internal, handle)->attrs & (FLOW_A_LABELS | FLOW_A_LABELS_GONE))) {
		/* A whole state (NEW, or a dumped one) without the labels it had. */
		c->scratch = *ff;
		c->scratch.flow.attrs |= FLOW_A_LABELS_GONE;
		in = &c->scratch;
	}
	/* `in` has the key of `ff` (flow_merge_update() keeps it), so the hash holds. */
	rc = flow_table_upsert_hashed(c->internal, in, hash, cache_now_s(c), &handle);
	if (rc < 0) {
		cache_gap_note(c, &c->local_gap, rc);
		return 0;
	}
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

static void drop_local(struct cache *c, uint32_t handle)
{
	if (c->listener.changed) {
		if (flow_table_flags(c->internal, handle) & FLOW_ENTRY_DEAD)
			return;
		flow_table_mark_dead(c->internal, handle, cache_now_s(c));
		tell(c, handle, KERNEL_EV_DESTROY);
	} else {
		flow_table_delete(c->internal, handle);
	}
}

/* Entries visited per slice of the walk after a new Filter. */
#define REFILTER_SLICE 16384u

static void on_refilter_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct cache *c = arg;
	unsigned visited = 0;
	uint32_t h;

	(void)loop;
	while (visited++ < REFILTER_SLICE) {
		h = flow_table_next(c->internal, &c->refilter_cursor);
		if (!h) {
			if (c->refiltered)
				log_notice("Filter: %llu states of the internal cache are ignored by the new "
					   "Filter and left it", (unsigned long long)c->refiltered);
			return;
		}
		if (flow_table_flags(c->internal, h) & FLOW_ENTRY_DEAD)
			continue;
		if (flow_filter_check(c->filter, flow_table_flow(c->internal, h),
				      flow_table_ext(c->internal, h)) == FLOW_FILTER_PASS)
			continue;
		c->refiltered++;
		drop_local(c, h);
	}
	loop_timer_arm(timer, 0);
}

void cache_refilter_start(struct cache *c)
{
	if (!c->refilter_timer && !(c->refilter_timer = loop_timer_new(c->loop, on_refilter_timer, c))) {
		log_error("Filter: out of memory; states the new Filter ignores stay in the internal cache "
			  "until they end");
		return;
	}
	c->refilter_cursor = 0;
	c->refiltered = 0;
	loop_timer_arm(c->refilter_timer, 0);
}

/* Delete without telling the peer (flushes, -R). */
void cache_forget_local(struct cache *c, uint32_t handle)
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
static void reread_master(struct cache *c, const struct flow_tuple *master)
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
	struct cache *c = arg;

	flow_table_prefetch(c->internal, flow_table_hash(c->internal, &ff->flow.orig));
}

/*
 * EventSource bpf: the tap's record of an entry with a master, a helper,
 * labels, sequence adjustment or synproxy, or of a protocol whose state it
 * does not read, lacks those: the entry is read whole.  An entry already
 * gone keeps the record (its destroy follows in the ring).
 */
static const struct flow_full *complete_partial(struct cache *c, const struct flow_full *ff, unsigned *origin)
{
	int err = 0;

	if (!c->getter && !(c->getter = kernel_getter_new(&err))) {
		log_warning("cannot read an entry back: %s", strerror(-err));
		return ff;
	}
	if (kernel_get(c->getter, &ff->flow.orig, &c->reread) < 0)
		return ff;
	/* a reply to our request: every attribute is in it, labels too */
	*origin |= KERNEL_ORIGIN_REQUEST;
	return &c->reread;
}

static void on_event(void *arg, enum kernel_event ev, const struct flow_full *ff, unsigned origin)
{
	struct cache *c = arg;
	uint32_t handle, hash;

	if (origin & KERNEL_ORIGIN_PARTIAL)
		ff = complete_partial(c, ff, &origin);
	if (!flow_filter_pass_full(c->filter, ff)) {
		c->n.events_filtered++;
		return;
	}
	if (c->bypass) {
		cache_bypass_event(c, ev, ff);
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


/*
 * A-priori mode (src/daemon/confirm.c): `ff` is the kernel's state of a
 * connection whose packet waits in the NFQUEUE.  It is newer than our last
 * event of it (the packet's own change is reported only once the packet
 * has passed), so it is taken as that update event will be, and the peer
 * gets the state the packet made.
 */
uint32_t cache_local_observe(struct cache *c, const struct flow_full *ff)
{
	uint32_t handle, hash;

	if (c->bypass || !flow_filter_pass_full(c->filter, ff))
		return 0;
	hash = flow_table_hash(c->internal, &ff->flow.orig);
	handle = flow_table_lookup_hashed(c->internal, &ff->flow.orig, hash);
	handle = store_local(c, handle ? KERNEL_EV_UPDATE : KERNEL_EV_NEW, ff, true, handle, hash);
	if (handle)
		load_mark(c, handle, LOAD_TOUCHED);
	return handle;
}

/* Loads whose changes the peer must learn: the kernel changed without telling us. */
static bool load_tells(const struct cache *c)
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
static bool poll_is_peers_own(struct cache *c, const struct flow_full *ff, uint32_t handle)
{
	if (c->load != LOAD_POLL || !flow_table_lookup(c->external, &ff->flow.orig))
		return false;
	return c->mirroring || !handle || (flow_table_flags(c->internal, handle) & FLOW_ENTRY_DEAD);
}

/*
 * Events were lost: the table is read again NetlinkOverrunResync seconds
 * later.  Overruns meanwhile (a burst goes on) are covered by that one
 * read; an overrun during a read makes it read once more at its end.
 */
static void on_overrun(void *arg, uint32_t rcvbuf)
{
	struct cache *c = arg;
	uint32_t delay = c->cfg->general.netlink_overrun_resync;

	if (!delay) {
		log_warning("netlink event overrun: events were lost (receive buffer now %u bytes); "
			    "NetlinkOverrunResync is off: the internal cache may stay out of date", rcvbuf);
		return;
	}
	if (c->dump) {
		c->resync_again = true;
		return;
	}
	if (loop_timer_armed(c->overrun_timer))
		return;
	log_warning("netlink event overrun: events were lost (receive buffer now %u bytes); "
		    "resynchronising with the kernel table in %u s (NetlinkOverrunResync)", rcvbuf, delay);
	loop_timer_arm(c->overrun_timer, (uint64_t)delay * 1000u);
}

void cache_on_overrun_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct cache *c = arg;

	(void)loop;
	(void)timer;
	if (c->bypass) {
		/* No cache to bring up to date: the peer gets the whole table again. */
		c->n.resyncs++;
		if (c->listener.bulk)
			c->listener.bulk(c->listener.arg);
		return;
	}
	if (c->dump) {
		c->resync_again = true;
		return;
	}
	cache_start_load(c, LOAD_RESYNC);
}

static void on_dump_flow(void *arg, const struct flow_full *ff)
{
	struct cache *c = arg;
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

/* The deletions cache_forget_dead() put off until the end of the load. */
static void forget_acked_dead(struct cache *c)
{
	for (uint32_t h = 1; h < c->nmarks; h++)
		if ((c->marks[h] & LOAD_ACKED) && (flow_table_flags(c->internal, h) & FLOW_ENTRY_DEAD))
			flow_table_delete(c->internal, h);
}

/* Entries the dump did not deliver are gone from the kernel. */
static uint64_t sweep_unseen(struct cache *c)
{
	uint32_t cursor = 0, h;
	uint64_t swept = 0;

	while ((h = flow_table_next(c->internal, &cursor)) != 0) {
		if (load_marked(c, h, LOAD_SEEN) || (flow_table_flags(c->internal, h) & FLOW_ENTRY_DEAD))
			continue;
		if (load_tells(c))
			drop_local(c, h);
		else
			cache_forget_local(c, h);
		swept++;
	}
	return swept;
}

static void on_dump_done(void *arg, int err, const struct kernel_dump_stats *st)
{
	struct cache *c = arg;
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
		cache_finish_all(&c->load_waiters, CTL_STATUS_FAILED, "ctsyncd: the kernel dump failed: %s",
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
		cache_finish_all(&c->load_waiters, CTL_STATUS_OK,
			   "kernel table re-read: %llu states in %llu ms (%llu left out by the Filter), "
			   "%llu vanished states removed", (unsigned long long)kept, (unsigned long long)ms,
			   (unsigned long long)(st->flows - kept), (unsigned long long)swept);
	}
	if (c->resync_again || err == -EINTR) {
		c->resync_again = false;
		cache_start_load(c, c->poll_timer ? LOAD_POLL : LOAD_RESYNC);
	} else if (cache_has_exps(c)) {
		/*
		 * Now that the masters are in (1.4.7 keeps only expectations whose
		 * master it has): the expectations, told to the peer when the
		 * load tells (a poll has no expectation events either).
		 */
		int rc = cache_exp_load(c, kind == LOAD_RESYNC || kind == LOAD_POLL, NULL);

		if (rc < 0)
			log_error("cannot dump the kernel's expectations: %s", strerror(-rc));
	}
	cache_poll_go_on(c);
}

/*
 * After a load or a kernel flush: run the poll that had to wait for it, or
 * else arm the next one PollSecs later, so that polls never overlap.
 */
void cache_poll_go_on(struct cache *c)
{
	if (!c->poll_timer || c->dump || c->purging)
		return;
	if (c->poll_due) {
		c->poll_due = false;
		cache_start_load(c, LOAD_POLL);
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
void cache_abandon_poll(struct cache *c)
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

void cache_on_poll_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct cache *c = arg;

	/*
	 * Another load (-R) or a kernel flush runs: poll when it ends, so
	 * that a poll never sees half a flush and tells the peer about it.
	 */
	if (c->dump || c->purging)
		c->polls_delayed++;
	c->poll_due = true;
	cache_poll_go_on(c);
}

void cache_start_load(struct cache *c, enum load_kind kind)
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
		cache_finish_all(&c->load_waiters, CTL_STATUS_FAILED, "ctsyncd: cannot dump the kernel table: %s",
			   strerror(-err));
	}
}


void cache_forget_dead(struct cache *c, uint32_t handle)
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

const struct kernel_events_cb cache_event_cb = {
	.on_flow = on_event, .on_expect = on_expect_event, .on_overrun = on_overrun,
	.prefetch = on_event_prefetch,
};
