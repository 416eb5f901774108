/*
 * cache.c - the cache object's life, and the rules that conntracks and
 * expectations share (waiting requests, timeouts, expiry, the routing of
 * the writer's failures).
 */
#include "build-config.h"
#include "cache_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>

#include "config/config.h"
#include "config/diff.h"
#include "flow/exp_table.h"
#include "flow/filter.h"
#include "flow/table.h"
#include "kernel/bpf.h"
#include "loop/log.h"
#include "stats_log.h"

/*
 * ALARM's expiry of external conntracks: every EXPIRE_PERIOD_MS the sweep
 * visits the next EXPIRE_VISIT entries (a few hundred microseconds), so a
 * million entries are swept in about 6 s and an entry leaves at most that
 * much after its CacheTimeout; a small table is swept once a second.
 * Expectations are few: the same sweep takes the whole table each second.
 */
#define EXPIRE_PERIOD_MS 100u
#define EXPIRE_PASS_MS 1000u
#define EXPIRE_VISIT 16384u
/* A full table is looked at every REPAIR_CHECK_MS, and repaired at most every REPAIR_SPACING_MS. */
#define REPAIR_CHECK_MS 1000u
#define REPAIR_SPACING_MS 10000u
/* Lines about refused states and failed kernel writes: at most one per this many ms each. */
#define LIMIT_LOG_MS 10000u

/* ---- shared rules -------------------------------------------------------------- */

void cache_finish_all(struct waiters *w, enum ctl_status status, const char *fmt, ...)
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

enum control_result cache_wait_for(struct waiters *w, struct control_request *req)
{
	if (w->n == CACHE_MAX_WAITERS) {
		control_request_printf(req, "ctsyncd: too many clients waiting for this operation\n");
		control_request_set_status(req, CTL_STATUS_BUSY);
		return CONTROL_DONE;
	}
	w->req[w->n++] = req;
	return CONTROL_PENDING;
}

enum control_result cache_no_exps(struct control_request *req)
{
	control_request_printf(req, "ctsyncd: '%s' is not available: expectation sync is off "
			       "(Sync { Options { ExpectationSync on } })\n",
			       ctl_request_name(control_request_code(req)));
	control_request_set_status(req, CTL_STATUS_UNAVAILABLE);
	return CONTROL_DONE;
}

bool cache_request_origin(struct cache *c, struct control_request *req, unsigned *origin)
{
	struct ctl_origin addr;
	char why[256] = "";
	int rc;

	*origin = 0;
	if (!control_request_origin(req, &addr))
		return true;
	rc = c->origin_of ? c->origin_of(c->origin_arg, &addr, why, sizeof(why)) : -ENOENT;
	if (rc <= 0 || (unsigned)rc > CACHE_ORIGIN_MAX) {
		control_request_printf(req, "ctsyncd: '%s --origin': %s\n",
				       ctl_request_name(control_request_code(req)),
				       why[0] ? why : "this daemon does not tell its peers apart");
		control_request_set_status(req, CTL_STATUS_FAILED);
		return false;
	}
	*origin = (unsigned)rc;
	return true;
}

uint32_t cache_commit_timeout(const struct cache *c, uint32_t updated_s, uint32_t timeout)
{
	uint32_t age = cache_now_s(c) - updated_s;

	if (c->cfg->sync.commit_timeout)
		return c->cfg->sync.commit_timeout;
	if (!timeout || timeout <= age)
		return CACHE_DEFAULT_TIMEOUT;
	return timeout - age;
}

/*
 * protocol.md §4, §6.1: in ALARM an entry of the peer lives CacheTimeout seconds after
 * its last refresh (its update time, in whole seconds: it leaves after
 * more than CacheTimeout, never before).
 */
static void on_expire_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct cache_expiry *e = arg;
	uint32_t now = cache_now_s(e->cache), h;
	unsigned visited = 0;

	(void)loop;
	while (visited < e->visit) {
		h = e->next(e->table, &e->cursor);
		if (!h) {
			e->cursor = 0;
			loop_timer_arm(timer, e->pass_ms);
			return;
		}
		visited++;
		if (now - e->updated(e->table, h) > e->timeout_s) {
			e->remove(e->table, h);
			e->expired++;
		}
	}
	loop_timer_arm(timer, e->period_ms);
}

int cache_expiry_start(struct cache_expiry *e, struct cache *c)
{
	e->cache = c;
	e->timeout_s = c->cfg->sync.cache_timeout;
	e->timer = loop_timer_new(c->loop, on_expire_timer, e);
	if (!e->timer)
		return -ENOMEM;
	loop_timer_arm(e->timer, e->pass_ms);
	return 0;
}

/* ---- tables that refused states, and their repair ------------------------------- */

static const char *gap_name(const struct cache *c, const struct cache_gap *gap)
{
	return gap == &c->local_gap ? "internal cache" : "external cache";
}

void cache_gap_note(struct cache *c, struct cache_gap *gap, int err)
{
	uint64_t now = loop_now_ms(c->loop);

	gap->open = true;
	gap->refused++;
	gap->refused_unlogged++;
	gap->last_error = err;
	if (!loop_timer_armed(c->repair_timer))
		loop_timer_arm(c->repair_timer, REPAIR_CHECK_MS);
	if (gap->logged_ms && now - gap->logged_ms < LIMIT_LOG_MS)
		return;
	if (err == -ENOSPC)
		log_warning("%s full (HashLimit %u): %llu states refused; the cache is incomplete "
			    "until there is room again (a flush, a purge, or a larger HashLimit), "
			    "then it is repaired by itself", gap_name(c, gap), c->cfg->general.hash_limit,
			    (unsigned long long)gap->refused_unlogged);
	else
		log_warning("%s: %llu states refused: %s; the cache is incomplete until a repair "
			    "succeeds", gap_name(c, gap), (unsigned long long)gap->refused_unlogged,
			    strerror(-err));
	gap->logged_ms = now ? now : 1;
	gap->refused_unlogged = 0;
}

void cache_log_write_error(struct cache *c, const char *what, int err)
{
	uint64_t now = loop_now_ms(c->loop);

	if (c->inject_errors_logged_ms && now - c->inject_errors_logged_ms < LIMIT_LOG_MS)
		return;
	c->inject_errors_logged_ms = now ? now : 1;
	log_warning("%s failed: %s (errno %d)%s", what, strerror(err), err,
		    err == ENOMEM || err == ENOSPC ? "; the kernel's conntrack table may be full "
						     "(net.netfilter.nf_conntrack_max)" : "");
}

/* Is there room in `t` for one more entry? */
static bool has_room(const struct cache *c, struct flow_table *t)
{
	uint32_t limit = c->cfg->general.hash_limit;

	return !limit || flow_table_count(t) < limit;
}

/* May `gap` be repaired now?  Room, and not repaired in the last REPAIR_SPACING_MS. */
static bool repair_due(const struct cache *c, const struct cache_gap *gap, struct flow_table *t)
{
	uint64_t now = loop_now_ms(c->loop);

	return gap->open && has_room(c, t) && (!gap->repairs || now - gap->repaired_ms >= REPAIR_SPACING_MS);
}

static void repair_started(struct cache *c, struct cache_gap *gap)
{
	gap->open = false;
	gap->repairs++;
	gap->repaired_ms = loop_now_ms(c->loop);
	log_notice("%s: room again (%u states, HashLimit %u): bringing back the %llu states refused "
		   "so far", gap_name(c, gap), flow_table_count(gap == &c->local_gap ? c->internal : c->external),
		   c->cfg->general.hash_limit, (unsigned long long)gap->refused);
}

/*
 * The internal cache is repaired by a re-read of the kernel table that
 * tells the peer what is new (as after an event overrun); the external one
 * by a RESYNC request to the peer.  A repair that meets the limit again
 * opens the gap again, and the next one waits REPAIR_SPACING_MS.
 */
static void on_repair_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct cache *c = arg;

	(void)loop;
	if (repair_due(c, &c->local_gap, c->internal) && !c->dump && !c->purging) {
		repair_started(c, &c->local_gap);
		cache_start_load(c, c->poll_timer ? LOAD_POLL : LOAD_RESYNC);
	}
	if (repair_due(c, &c->remote_gap, c->external) && c->listener.want_resync) {
		repair_started(c, &c->remote_gap);
		c->listener.want_resync(c->listener.arg);
	}
	if (c->local_gap.open || c->remote_gap.open)
		loop_timer_arm(timer, REPAIR_CHECK_MS);
}

static uint32_t ct_next(void *t, uint32_t *cursor) { return flow_table_next(t, cursor); }
static uint32_t ct_updated(void *t, uint32_t h) { return flow_table_updated(t, h); }
static void ct_remove(void *t, uint32_t h) { flow_table_delete(t, h); }
static uint32_t exp_next(void *t, uint32_t *cursor) { return exp_table_next(t, cursor); }
static uint32_t exp_updated(void *t, uint32_t h) { return exp_table_updated(t, h); }
static void exp_remove(void *t, uint32_t h) { exp_table_delete(t, h); }

/* The writer's failures, each to the job whose request it was. */
static void on_write_error(void *arg, enum kernel_op op, uint64_t cookie, int err)
{
	struct cache *c = arg;

	if (cookie & COOKIE_INJECT)
		cache_inject_error(c, op, cookie, err);
	else if (cookie & COOKIE_EXP)
		cache_exp_write_error(c, op, err);
	else
		cache_commit_error(c, op, cookie, err);
}

/* ---- life ------------------------------------------------------------------------ */

static int new_exps(struct cache *c, uint32_t seed)
{
	const struct config *cfg = c->cfg;
	struct exp_table_options in = { .limit = cfg->general.hash_limit, .seed = seed,
					 .user_bytes = FLOW_TABLE_USER_MAX };
	struct exp_table_options ex = { .limit = cfg->general.hash_limit, .seed = seed ^ 0x5bd1e995u };
	int err;

	if ((err = exp_table_new(&in, &c->x.internal)) < 0 ||
	    (err = exp_table_new(&ex, &c->x.external)) < 0)
		return err;
	/* ALARM: the peer refreshes what it has; what it stops refreshing goes, as states do. */
	if (cfg->sync.mode == CONFIG_MODE_ALARM && !cfg->sync.disable_external_cache) {
		c->x.expiry = (struct cache_expiry){
			.visit = UINT32_MAX, .period_ms = EXPIRE_PASS_MS, .pass_ms = EXPIRE_PASS_MS,
			.table = c->x.external, .next = exp_next, .updated = exp_updated,
			.remove = exp_remove,
		};
		return cache_expiry_start(&c->x.expiry, c);
	}
	return 0;
}

int cache_new(struct cache **out, const struct config *cfg, struct loop *loop, uint32_t seed)
{
	struct flow_table_options topt = {
		.buckets = cfg->general.hash_size,
		.limit = cfg->general.hash_limit,
		.seed = seed,
		.user_bytes = CACHE_USER_BYTES,
	};
	struct kernel_writer_opts wopt = {
		.build_opts = cfg->sync.tcp_window_tracking ? KERNEL_BUILD_WINDOW_TRACKING : 0,
	};
	static const struct kernel_writer_cb wcb = { .on_error = on_write_error };
	struct cache *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->cfg = cfg;
	c->loop = loop;
	c->bypass = cfg->role == CONFIG_ROLE_SYNC && cfg->sync.mode == CONFIG_MODE_NOTRACK &&
		    cfg->sync.disable_internal_cache;
	flow_keyset_init(&c->walk_ended, seed ^ 0x5bd1e995u);
	/* DisableInternalCache: the table stays empty (the engine still wants one). */
	if (c->bypass)
		topt.buckets = 16;
	err = flow_table_new(&topt, &c->internal);
	if (err == 0) {
		topt.buckets = cfg->general.hash_size;
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
		c->purge_timer = loop_timer_new(loop, cache_on_purge_timer, c);
		c->repair_timer = loop_timer_new(loop, on_repair_timer, c);
		c->overrun_timer = loop_timer_new(loop, cache_on_overrun_timer, c);
		if (!c->purge_timer || !c->repair_timer || !c->overrun_timer || cache_sweep_init(c) < 0)
			err = -ENOMEM;
	}
	if (err == 0 && cfg->role == CONFIG_ROLE_SYNC && cfg->sync.mode == CONFIG_MODE_ALARM &&
	    !cfg->sync.disable_external_cache) {
		c->expiry = (struct cache_expiry){
			.visit = EXPIRE_VISIT, .period_ms = EXPIRE_PERIOD_MS, .pass_ms = EXPIRE_PASS_MS,
			.table = c->external, .next = ct_next, .updated = ct_updated, .remove = ct_remove,
		};
		err = cache_expiry_start(&c->expiry, c);
	}
	if (err == 0 && cfg->general.poll_secs) {
		c->poll_timer = loop_timer_new(loop, cache_on_poll_timer, c);   /* armed when the start-up load ends */
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
		err = new_exps(c, seed ^ 0x27d4eb2fu);
	if (err) {
		cache_free(c);
		return err;
	}
	*out = c;
	return 0;
}

/* Is the BPF event tap in use?  Then the event socket's filter is the tap's. */
static bool tap_active(struct cache *c)
{
	struct kernel_events_stats st;

	if (!c->events)
		return false;
	kernel_events_get_stats(c->events, &st);
	return st.tap;
}

/*
 * Filter From Kernelspace: the Filter as a BPF program after the drop of our
 * own writes, so the kernel drops what the Filter ignores before it is
 * copied to us.  The user-space Filter still runs (it decides alone for
 * what the program passes on unclassified, and keeps the counters).
 */
static int set_kernel_filter(struct cache *c)
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

int cache_start(struct cache *c)
{
	const struct config *cfg = c->cfg;
	struct kernel_events_opts eo = {
		.rcvbuf = cfg->general.netlink_buffer_size,
		.rcvbuf_max = cfg->general.netlink_buffer_max_growth,
		.reliable = cfg->general.netlink_events_reliable,
		.iteration_limit = cfg->general.event_iteration_limit,
		.expectations = cache_has_exps(c),
		.expectation_news = true,
		/*
		 * Under load, let events accumulate for 0.5 ms: ~50 per system
		 * call instead of ~3 at 100k/s.  1 ms halves the wake-ups again
		 * but doubles this part of the lag, and the backup then writes
		 * bursts twice as long (bench/lag.sh; doc/benchmarks.md).
		 */
		.coalesce_us = 500,
		.bpf_tap = cfg->general.event_bpf,
	};
	int err = 0;

	if (cfg->general.event_bpf && cfg->general.poll_secs)
		log_notice("EventSource bpf: with PollSecs no events are followed; the option has no effect");
	if (cfg->general.filter.kernelspace && cfg->general.poll_secs)
		log_notice("Filter From Kernelspace: with PollSecs there is no event socket; "
			   "the Filter is applied in user space");
	if (cfg->general.poll_secs) {
		log_notice("PollSecs %u: polling the kernel table every %u s instead of following events",
			   cfg->general.poll_secs, cfg->general.poll_secs);
		if (cfg->sync.disable_external_cache)
			log_warning("PollSecs with DisableExternalCache: the states received from the peer "
				    "go into the kernel, and the next poll sends them back to it");
		cache_start_load(c, LOAD_STARTUP);
		return c->dump ? 0 : -EIO;
	}
	c->events = kernel_events_open(c->loop, &eo, &cache_event_cb, c, &err);
	if (!c->events) {
		log_error("cannot subscribe to conntrack events: %s", strerror(-err));
		return err ? err : -ENOMEM;
	}
	kernel_events_add_own(c->events, kernel_writer_portid(c->writer));
	/* Our own writes (commit, injection) never reach us: they cannot overrun the socket. */
	if (cfg->general.filter.kernelspace && tap_active(c))
		log_notice("Filter From Kernelspace: with EventSource bpf the Filter is applied in user space");
	if (cfg->general.filter.kernelspace && !tap_active(c))
		err = set_kernel_filter(c);
	else
		err = kernel_events_set_filter(c->events, true, NULL, 0);
	if (err < 0)
		log_warning("cannot filter our own writes out of the event socket: %s", strerror(-err));
	if (c->bypass) {
		/* Nothing to load: the expectations only (their cache is kept). */
		log_notice("DisableInternalCache: kernel events are sent as they come; no internal cache");
		if (cache_has_exps(c) && (err = cache_exp_load(c, false, NULL)) < 0)
			log_error("cannot dump the kernel's expectations: %s", strerror(-err));
		return 0;
	}
	cache_start_load(c, LOAD_STARTUP);
	return c->dump ? 0 : -EIO;
}

void cache_set_listener(struct cache *c, const struct cache_listener *l)
{
	c->listener = *l;
}

void cache_set_exp_listener(struct cache *c, const struct cache_exp_listener *l)
{
	c->x.listener = *l;
}

int cache_reopen_logs(struct cache *c)
{
	return stats_log_reopen(c->stats_log);
}

static void apply_limits(struct cache *c)
{
	uint32_t limit = c->cfg->general.hash_limit;

	flow_table_set_limit(c->internal, limit);
	flow_table_set_limit(c->external, limit);
	if (c->x.internal) {
		exp_table_set_limit(c->x.internal, limit);
		exp_table_set_limit(c->x.external, limit);
	}
	if (flow_table_count(c->internal) > limit || flow_table_count(c->external) > limit)
		log_notice("HashLimit %u is below what the caches hold (internal %u, external %u): the "
			   "entries stay, and new ones are refused until there is room", limit,
			   flow_table_count(c->internal), flow_table_count(c->external));
	/* A raised limit lets the repair of refused states start (on_repair_timer). */
	if (c->local_gap.open || c->remote_gap.open)
		loop_timer_arm(c->repair_timer, 0);
}

static int apply_filter(struct cache *c)
{
	int err = 0;
	struct flow_filter *f = flow_filter_new(&c->cfg->general.filter, &err);

	if (!f) {
		log_error("Filter: cannot build the new Filter: %s; the previous one stays",
			  strerror(err ? -err : ENOMEM));
		return -1;
	}
	flow_filter_free(c->filter);
	c->filter = f;
	if (c->events) {
		if (c->cfg->general.filter.kernelspace && tap_active(c))
			log_notice("Filter From Kernelspace: with EventSource bpf the Filter is applied in user space");
		else if (c->cfg->general.filter.kernelspace)
			err = set_kernel_filter(c);
		else if ((err = kernel_events_set_filter(c->events, true, NULL, 0)) == 0)
			log_notice("Filter From Kernelspace: off; the Filter is applied in user space");
		if (err < 0)
			log_warning("cannot replace the event socket's filter: %s", strerror(-err));
	}
	cache_refilter_start(c);
	return 0;
}

static int apply_netlink(struct cache *c)
{
	const struct config_general *g = &c->cfg->general;
	struct kernel_events_opts eo = {
		.rcvbuf = g->netlink_buffer_size,
		.rcvbuf_max = g->netlink_buffer_max_growth,
		.reliable = g->netlink_events_reliable,
		.iteration_limit = g->event_iteration_limit,
	};
	int err;

	if (!c->events)
		return 0;
	err = kernel_events_tune(c->events, &eo);
	if (err < 0) {
		log_error("cannot apply NetlinkEventsReliable %s to the event socket: %s",
			  g->netlink_events_reliable ? "on" : "off", strerror(-err));
		return -1;
	}
	return 0;
}

static int apply_stats_log(struct cache *c)
{
	struct stats_log *s = NULL;
	int err;

	if (c->cfg->role != CONFIG_ROLE_STATS)
		return 0;
	err = stats_log_open(&s, &c->cfg->stats, c->loop);
	if (err < 0) {
		log_error("Stats: cannot open LogFile %s: %s; the previous log stays", c->cfg->stats.logfile,
			  strerror(-err));
		return -1;
	}
	stats_log_free(c->stats_log);
	c->stats_log = s;
	return 0;
}

int cache_apply_config(struct cache *c, unsigned apply)
{
	int failed = 0;

	if (apply & CONFIG_APPLY_LIMITS)
		apply_limits(c);
	if (apply & CONFIG_APPLY_FILTER)
		failed += apply_filter(c) < 0;
	if (apply & CONFIG_APPLY_NETLINK)
		failed += apply_netlink(c) < 0;
	if (apply & CONFIG_APPLY_EXPIRY) {
		c->expiry.timeout_s = c->cfg->sync.cache_timeout;
		c->x.expiry.timeout_s = c->cfg->sync.cache_timeout;
	}
	if (apply & CONFIG_APPLY_WRITER)
		kernel_writer_set_build_opts(c->writer, c->cfg->sync.tcp_window_tracking ?
					     KERNEL_BUILD_WINDOW_TRACKING : 0);
	if (apply & CONFIG_APPLY_STATS_LOG)
		failed += apply_stats_log(c) < 0;
	return failed;
}

void cache_free(struct cache *c)
{
	const char *bye = "ctsyncd: the daemon is exiting";

	if (!c)
		return;
	cache_finish_all(&c->commit_waiters, CTL_STATUS_FAILED, "%s", bye);
	cache_finish_all(&c->x.load_waiters, CTL_STATUS_FAILED, "%s", bye);
	cache_finish_all(&c->purge_waiters, CTL_STATUS_FAILED, "%s", bye);
	cache_finish_all(&c->load_waiters, CTL_STATUS_FAILED, "%s", bye);
	kernel_dump_cancel(c->x.dump);
	cache_bypass_free(c);
	stats_log_free(c->stats_log);
	kernel_getter_free(c->getter);
	if (c->dump)
		kernel_dump_cancel(c->dump);
	if (c->writer) {
		kernel_writer_cancel(c->writer);
		kernel_writer_free(c->writer);
	}
	if (c->events)
		kernel_events_close(c->events);
	loop_timer_free(c->purge_timer);
	loop_timer_free(c->repair_timer);
	loop_timer_free(c->overrun_timer);
	loop_timer_free(c->refilter_timer);
	loop_timer_free(c->sweep_timer);
	loop_timer_free(c->expiry.timer);
	loop_timer_free(c->x.expiry.timer);
	loop_timer_free(c->poll_timer);
	flow_filter_free(c->filter);
	flow_table_free(c->internal);
	flow_table_free(c->external);
	exp_table_free(c->x.seen);
	exp_table_free(c->x.internal);
	exp_table_free(c->x.external);
	free(c->marks);
	free(c->inject_ring);
	free(c);
}

struct flow_table *cache_internal(struct cache *c)
{
	return c->internal;
}

struct flow_table *cache_external(struct cache *c)
{
	return c->external;
}

struct exp_table *cache_exp_internal(struct cache *c)
{
	return c->x.internal;
}
