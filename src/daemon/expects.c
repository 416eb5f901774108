/*
 * expects.c - the expectation caches (see expects.h).
 *
 * 1.4.7's rules (reference §6): an expectation is replicated only when
 * its master conntrack is in the internal cache and, with a helper list
 * (ExpectationSync { ftp sip }), when its helper's name starts with one of
 * the names (case-insensitive: `sip` takes `sip-5060`).  The peer's
 * expectations are written into the kernel at commit time (after the
 * conntracks, which carry the helper the kernel needs) or, with
 * DisableExternalCache, as they arrive.  The kernel has no update event
 * for expectations and 1.4.7 sends none: a NEW replaces, an UPD is taken
 * as a NEW.
 */
#include "expects.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "caches.h"
#include "config.h"
#include "control_server.h"
#include "exp_table.h"
#include "flow_format.h"
#include "flow_table.h"
#include "log.h"
#include "loop.h"
#include "report.h"
#include "wire_format.h"

#define DEFAULT_COMMIT_TIMEOUT 60u      /* s, for an expectation without a usable timeout */
#define EXPIRE_PERIOD_MS 1000u          /* ALARM: the external table is swept once a second */
#define LOAD_WAITERS 8

struct exp_counters {
	uint64_t events_new, events_destroy, events_own, events_malformed;
	uint64_t filtered_helper, filtered_master;
	uint64_t remote_new, remote_delete, remote_delete_unknown, remote_failed;
	uint64_t commits, committed_ok, committed_failed;
	uint64_t injected, write_failed;
	uint64_t loads, vanished;
	uint64_t expired;
};

struct expects {
	const struct config *cfg;
	struct loop *loop;
	struct flow_table *internal_ct;
	struct kernel_writer *writer;
	struct exp_table *internal;
	struct exp_table *external;
	struct expects_listener listener;
	struct exp_counters n;
	int last_errno;                 /* of the latest failed request */

	/* the dump in progress: what it saw, applied when it ends */
	struct kernel_dump *dump;
	struct exp_table *seen;
	bool dump_tells;
	struct control_request *waiters[LOAD_WAITERS];
	unsigned nwaiters;

	struct loop_timer *expire_timer;        /* ALARM only */
};

static uint32_t now_s(const struct expects *x)
{
	return (uint32_t)(loop_now_ms(x->loop) / 1000u);
}

/* ALARM: drop the peer's expectations not refreshed for CacheTimeout (they are few: one pass). */
static void on_expire_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct expects *x = arg;
	uint32_t cursor = 0, h, now = now_s(x);

	(void)loop;
	while ((h = exp_table_next(x->external, &cursor)) != 0)
		if (now - exp_table_updated(x->external, h) > x->cfg->sync.cache_timeout) {
			exp_table_delete(x->external, h);
			x->n.expired++;
		}
	loop_timer_arm(timer, EXPIRE_PERIOD_MS);
}

int expects_new(struct expects **out, const struct config *cfg, struct loop *loop,
		struct flow_table *internal_ct, struct kernel_writer *writer, uint32_t seed)
{
	struct exp_table_options in = { .limit = cfg->general.hash_limit, .seed = seed,
					 .user_bytes = FLOW_TABLE_USER_MAX };
	struct exp_table_options ex = { .limit = cfg->general.hash_limit, .seed = seed ^ 0x5bd1e995u };
	struct expects *x = calloc(1, sizeof(*x));
	int err;

	if (!x)
		return -ENOMEM;
	x->cfg = cfg;
	x->loop = loop;
	x->internal_ct = internal_ct;
	x->writer = writer;
	if ((err = exp_table_new(&in, &x->internal)) < 0 ||
	    (err = exp_table_new(&ex, &x->external)) < 0) {
		expects_free(x);
		return err;
	}
	/* ALARM: the peer refreshes what it has; what it stops refreshing goes, as states do. */
	if (cfg->sync.mode == CONFIG_MODE_ALARM && !cfg->sync.disable_external_cache) {
		x->expire_timer = loop_timer_new(loop, on_expire_timer, x);
		if (!x->expire_timer) {
			expects_free(x);
			return -ENOMEM;
		}
		loop_timer_arm(x->expire_timer, EXPIRE_PERIOD_MS);
	}
	*out = x;
	return 0;
}

static void finish_waiters(struct expects *x, enum ctl_status status, const char *text)
{
	for (unsigned i = 0; i < x->nwaiters; i++) {
		control_request_printf(x->waiters[i], "%s\n", text);
		control_request_finish(x->waiters[i], status);
	}
	x->nwaiters = 0;
}

void expects_free(struct expects *x)
{
	if (!x)
		return;
	finish_waiters(x, CTL_STATUS_FAILED, "ctsyncd: the daemon is exiting");
	kernel_dump_cancel(x->dump);
	loop_timer_free(x->expire_timer);
	exp_table_free(x->seen);
	exp_table_free(x->internal);
	exp_table_free(x->external);
	free(x);
}

void expects_set_listener(struct expects *x, const struct expects_listener *l)
{
	x->listener = *l;
}

struct exp_table *expects_internal(struct expects *x)
{
	return x->internal;
}

/* ---- the internal table ------------------------------------------------------------- */

static bool helper_wanted(const struct expects *x, const struct flow_exp *e)
{
	const struct config_sync *s = &x->cfg->sync;

	if (!s->expect_helper_count)
		return true;
	for (unsigned i = 0; i < s->expect_helper_count; i++)
		if (strncasecmp(e->helper, s->expect_helpers[i], strlen(s->expect_helpers[i])) == 0)
			return true;
	return false;
}

/* 1.4.7 replicates an expectation only together with its master. */
static bool passes(struct expects *x, const struct flow_exp *e)
{
	if (!helper_wanted(x, e)) {
		x->n.filtered_helper++;
		return false;
	}
	if (!flow_table_lookup(x->internal_ct, &e->master)) {
		x->n.filtered_master++;
		return false;
	}
	return true;
}

static void tell(struct expects *x, uint32_t h)
{
	if (x->listener.changed)
		x->listener.changed(x->listener.arg, h);
}

/* Delete `h` from the internal table, or mark it dead for the peer to hear of it. */
static void local_gone(struct expects *x, uint32_t h, bool send)
{
	if (send && x->listener.changed) {
		exp_table_mark_dead(x->internal, h, now_s(x));
		tell(x, h);
		return;
	}
	if (x->listener.forget)
		x->listener.forget(x->listener.arg, h);
	exp_table_delete(x->internal, h);
}

/* Keep `e` in the internal table if it passes; true if it is there. */
static bool local_new(struct expects *x, const struct flow_exp *e, bool send)
{
	uint32_t h;
	int r;

	if (!passes(x, e))
		return false;
	r = exp_table_upsert(x->internal, e, now_s(x), &h);
	if (r < 0) {
		log_warning("expectation not kept: %s", strerror(-r));
		return false;
	}
	if (send && r != FLOW_UPSERT_UNCHANGED)
		tell(x, h);
	return true;
}

void expects_on_event(struct expects *x, const void *msg, size_t len, bool own_write)
{
	enum kernel_event ev;
	struct flow_exp e;
	enum kernel_reason why = kernel_exp_parse(msg, len, &e, &ev);
	uint32_t h;

	if (why != KERNEL_OK) {
		x->n.events_malformed++;
		log_debug("expectation event dropped: %s", kernel_reason_name(why));
		return;
	}
	/* Our own writes (commit, injection) are the peer's expectations: not echoed. */
	if (own_write) {
		x->n.events_own++;
		return;
	}
	if (ev == KERNEL_EV_DESTROY) {
		x->n.events_destroy++;
		if ((h = exp_table_lookup(x->internal, &e)) != 0 &&
		    !(exp_table_flags(x->internal, h) & FLOW_ENTRY_DEAD))
			local_gone(x, h, true);
		return;
	}
	x->n.events_new++;
	local_new(x, &e, true);
}

void expects_forget_dead(struct expects *x, uint32_t xh)
{
	if (exp_table_flags(x->internal, xh) & FLOW_ENTRY_DEAD)
		exp_table_delete(x->internal, xh);
}

/* ---- loads ----------------------------------------------------------------------------- */

static void on_dump_exp(void *arg, const struct flow_exp *e)
{
	struct expects *x = arg;
	uint32_t h;

	exp_table_upsert(x->seen, e, 0, &h);
}

static void on_dump_done(void *arg, int err, const struct kernel_dump_stats *st)
{
	struct expects *x = arg;
	uint32_t cursor = 0, h, kept = 0, vanished = 0;
	char text[160];

	x->dump = NULL;
	if (err && err != -EINTR) {
		snprintf(text, sizeof(text), "ctsyncd: the expectation dump failed: %s", strerror(-err));
		log_error("%s", text + 9);
		finish_waiters(x, CTL_STATUS_FAILED, text);
		exp_table_free(x->seen);
		x->seen = NULL;
		return;
	}
	while ((h = exp_table_next(x->seen, &cursor)) != 0)
		kept += local_new(x, exp_table_get(x->seen, h), x->dump_tells);
	cursor = 0;
	while ((h = exp_table_next(x->internal, &cursor)) != 0) {
		if (exp_table_flags(x->internal, h) & FLOW_ENTRY_DEAD)
			continue;
		if (!exp_table_lookup(x->seen, exp_table_get(x->internal, h))) {
			local_gone(x, h, x->dump_tells);
			vanished++;
		}
	}
	x->n.vanished += vanished;
	exp_table_free(x->seen);
	x->seen = NULL;
	snprintf(text, sizeof(text), "kernel expectations read: %u kept of %llu, %u vanished removed",
		 kept, (unsigned long long)st->flows, vanished);
	/* A telling load comes with every poll (PollSecs): not worth a line each time. */
	if (x->dump_tells)
		log_debug("%s", text);
	else
		log_notice("%s", text);
	finish_waiters(x, CTL_STATUS_OK, text);
}

int expects_load(struct expects *x, bool tell_peer, struct control_request *req)
{
	static const struct kernel_dump_cb cb = { .on_exp = on_dump_exp, .on_done = on_dump_done };
	struct exp_table_options o = { .seed = 0x9747b28cu };
	int err = 0;

	if (req && x->nwaiters == LOAD_WAITERS)
		return -EBUSY;
	if (!x->dump) {
		if ((err = exp_table_new(&o, &x->seen)) < 0)
			return err;
		x->dump = kernel_dump_start(x->loop, AF_UNSPEC, 0, &cb, x, &err);
		if (!x->dump) {
			exp_table_free(x->seen);
			x->seen = NULL;
			return err ? err : -EIO;
		}
		x->dump_tells = tell_peer;
		x->n.loads++;
	} else {
		x->dump_tells |= tell_peer;
	}
	if (req)
		x->waiters[x->nwaiters++] = req;
	return 0;
}

/* ---- the external table ------------------------------------------------------------------ */

static uint32_t commit_timeout(const struct expects *x, uint32_t h, const struct flow_exp *e)
{
	uint32_t age = now_s(x) - exp_table_updated(x->external, h);

	if (x->cfg->sync.commit_timeout)
		return x->cfg->sync.commit_timeout;
	if (!(e->attrs & FLOW_EXP_A_TIMEOUT) || e->timeout <= age)
		return DEFAULT_COMMIT_TIMEOUT;
	return e->timeout - age;
}

static void inject(struct expects *x, uint8_t type, const struct flow_exp *e)
{
	enum kernel_op op = type == WIRE_T_EXP_DEL ? KERNEL_OP_DELETE : KERNEL_OP_CREATE;
	uint32_t timeout = (e->attrs & FLOW_EXP_A_TIMEOUT) && e->timeout ? e->timeout
								       : DEFAULT_COMMIT_TIMEOUT;

	if (kernel_writer_put_exp(x->writer, op, e, timeout, EXPECTS_COOKIE) < 0)
		x->n.write_failed++;
	else
		x->n.injected++;
}

int expects_apply_remote(struct expects *x, uint8_t type, const struct flow_exp *e)
{
	uint32_t h;
	int r;

	if (x->cfg->sync.disable_external_cache) {
		inject(x, type, e);
		return 0;
	}
	if (type == WIRE_T_EXP_DEL) {
		if ((h = exp_table_lookup(x->external, e)) == 0) {
			x->n.remote_delete_unknown++;
			return 0;
		}
		x->n.remote_delete++;
		return exp_table_delete(x->external, h);
	}
	r = exp_table_upsert(x->external, e, now_s(x), &h);
	if (r < 0) {
		x->n.remote_failed++;
		return r;
	}
	x->n.remote_new++;
	return 0;
}

void expects_write_error(struct expects *x, enum kernel_op op, uint64_t cookie, int err)
{
	(void)cookie;
	if (op == KERNEL_OP_DELETE && err == ENOENT)
		return;         /* gone already: what a DEL wanted */
	x->n.write_failed++;
	x->last_errno = err;
}

uint64_t expects_commit(struct expects *x, char *line, size_t cap)
{
	uint32_t cursor = 0, h, n = 0;
	uint64_t before = x->n.write_failed, failed;

	x->last_errno = 0;
	while ((h = exp_table_next(x->external, &cursor)) != 0) {
		const struct flow_exp *e = exp_table_get(x->external, h);

		/* A request that cannot be built is counted by the writer's on_error, as EINVAL. */
		kernel_writer_put_exp(x->writer, KERNEL_OP_CREATE, e, commit_timeout(x, h, e),
				      EXPECTS_COOKIE | h);
		n++;
	}
	kernel_writer_flush(x->writer);         /* answers (and failures) are in on return */
	failed = x->n.write_failed - before;
	x->n.write_failed = before;             /* counted as commit failures instead */
	x->n.commits++;
	x->n.committed_ok += n - failed;
	x->n.committed_failed += failed;
	snprintf(line, cap, "commit: %u expectations written, %llu failed%s%s", n - (uint32_t)failed,
		 (unsigned long long)failed, failed ? " (last error: " : "",
		 failed ? strerror(x->last_errno) : "");
	if (failed && strlen(line) + 2 <= cap)
		strcat(line, ")");
	log_notice("%s", line);
	return failed;
}

/* ---- flushes, dumps, statistics ----------------------------------------------------------- */

void expects_flush(struct expects *x, bool internal, bool external, struct control_request *req)
{
	if (internal) {
		uint32_t cursor = 0, h;

		control_request_printf(req, "internal expectation cache flushed: %u\n",
				       exp_table_count(x->internal));
		while ((h = exp_table_next(x->internal, &cursor)) != 0)
			if (x->listener.forget)
				x->listener.forget(x->listener.arg, h);
		exp_table_clear(x->internal);
	}
	if (external) {
		control_request_printf(req, "external expectation cache flushed: %u\n",
				       exp_table_count(x->external));
		exp_table_clear(x->external);
	}
}

int expects_kernel_flush(struct expects *x, struct control_request *req)
{
	uint64_t failed = x->n.write_failed;
	int rc = kernel_writer_put_exp(x->writer, KERNEL_OP_FLUSH, NULL, 0, EXPECTS_COOKIE);

	if (rc == 0)
		rc = kernel_writer_flush(x->writer);
	if (rc == 0 && x->n.write_failed != failed)
		rc = -x->last_errno;
	x->n.write_failed = failed;
	if (rc < 0)
		control_request_printf(req, "ctsyncd: cannot flush the kernel's expectations: %s\n",
				       strerror(-rc));
	else
		control_request_printf(req, "kernel expectation table flushed\n");
	return rc;
}

void expects_dump(struct expects *x, struct control_request *req, bool internal, bool xml)
{
	struct exp_table *t = internal ? x->internal : x->external;
	char line[FLOW_FORMAT_MAX];
	uint32_t cursor = 0, h, now = now_s(x);

	while ((h = exp_table_next(t, &cursor)) != 0) {
		int n;

		if (exp_table_flags(t, h) & FLOW_ENTRY_DEAD)
			continue;
		n = xml ? flow_exp_format_xml(line, sizeof(line), exp_table_get(t, h), 0)
			: flow_exp_format(line, sizeof(line), exp_table_get(t, h), 0);
		caches_dump_line(req, line, n, sizeof(line), xml, now - exp_table_updated(t, h));
	}
}

void expects_report(struct expects *x, struct report *r)
{
	struct flow_table_stats st;

	exp_table_stats(x->internal, &st);
	caches_report_table(r, "internal_expectations", &st);
	exp_table_stats(x->external, &st);
	caches_report_table(r, "external_expectations", &st);
	report_begin(r, "expectations");
	report_u64(r, "events_new", x->n.events_new);
	report_u64(r, "events_destroy", x->n.events_destroy);
	report_u64(r, "events_own_write", x->n.events_own);
	report_u64(r, "events_malformed", x->n.events_malformed);
	report_u64(r, "left_out_helper", x->n.filtered_helper);
	report_u64(r, "left_out_no_master", x->n.filtered_master);
	report_u64(r, "remote_new", x->n.remote_new);
	report_u64(r, "remote_deleted", x->n.remote_delete);
	report_u64(r, "remote_deleted_unknown", x->n.remote_delete_unknown);
	report_u64(r, "remote_failed", x->n.remote_failed);
	report_u64(r, "commits", x->n.commits);
	report_u64(r, "committed", x->n.committed_ok);
	report_u64(r, "commit_failed", x->n.committed_failed);
	report_u64(r, "injected", x->n.injected);
	report_u64(r, "write_failed", x->n.write_failed);
	report_u64(r, "kernel_loads", x->n.loads);
	report_u64(r, "vanished_removed", x->n.vanished);
	if (x->expire_timer)
		report_u64(r, "expired", x->n.expired);
	report_end(r);
}
