/*
 * local_exp.c - the internal expectation cache (ExpectationSync): the
 * kernel's expectation events and dumps.
 *
 * 1.4.7's rules (protocol.md, expectations): an expectation is replicated
 * only while its master conntrack is in the internal cache and, with a
 * helper list (ExpectationSync { ftp sip }), when its helper's name starts
 * with one of the names (case-insensitive: `sip` takes `sip-5060`).  The
 * kernel has no update event for expectations.
 */
#include "cache_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "config/config.h"
#include "flow/exp_table.h"
#include "flow/filter.h"
#include "flow/table.h"
#include "loop/log.h"

static bool helper_wanted(const struct cache *c, const struct flow_exp *e)
{
	const struct config_sync *s = &c->cfg->sync;

	if (!s->expect_helper_count)
		return true;
	for (unsigned i = 0; i < s->expect_helper_count; i++)
		if (strncasecmp(e->helper, s->expect_helpers[i], strlen(s->expect_helpers[i])) == 0)
			return true;
	return false;
}

/*
 * DisableInternalCache: the master is looked up in the kernel (as 1.4.7
 * does then), and must pass the Filter, as its events would.
 */
static bool master_in_kernel(struct cache *c, const struct flow_tuple *master)
{
	int err = 0;

	if (!c->getter && !(c->getter = kernel_getter_new(&err))) {
		log_warning("cannot look up an expectation's master: %s", strerror(-err));
		return false;
	}
	return kernel_get(c->getter, master, &c->reread) == 0 && flow_filter_pass_full(c->filter, &c->reread);
}

/* 1.4.7 replicates an expectation only together with its master. */
static bool passes(struct cache *c, const struct flow_exp *e)
{
	if (!helper_wanted(c, e)) {
		c->x.n.filtered_helper++;
		return false;
	}
	if (c->bypass ? !master_in_kernel(c, &e->master) : !flow_table_lookup(c->internal, &e->master)) {
		c->x.n.filtered_master++;
		return false;
	}
	return true;
}

static void tell(struct cache *c, uint32_t h)
{
	if (c->x.listener.changed)
		c->x.listener.changed(c->x.listener.arg, h);
}

/* Delete `h` from the internal table, or mark it dead for the peer to hear of it. */
static void local_gone(struct cache *c, uint32_t h, bool send)
{
	if (send && c->x.listener.changed) {
		exp_table_mark_dead(c->x.internal, h, cache_now_s(c));
		tell(c, h);
		return;
	}
	if (c->x.listener.forget)
		c->x.listener.forget(c->x.listener.arg, h);
	exp_table_delete(c->x.internal, h);
}

/* Keep `e` in the internal table if it passes; true if it is there. */
static bool local_new(struct cache *c, const struct flow_exp *e, bool send)
{
	uint32_t h;
	int r;

	if (!passes(c, e))
		return false;
	r = exp_table_upsert(c->x.internal, e, cache_now_s(c), &h);
	if (r < 0) {
		log_warning("expectation not kept: %s", strerror(-r));
		return false;
	}
	if (send && r != FLOW_UPSERT_UNCHANGED)
		tell(c, h);
	return true;
}

void cache_exp_on_event(struct cache *c, const void *msg, size_t len, bool own_write)
{
	enum kernel_event ev;
	struct flow_exp e;
	enum kernel_reason why = kernel_exp_parse(msg, len, &e, &ev);
	uint32_t h;

	if (why != KERNEL_OK) {
		c->x.n.events_malformed++;
		log_debug("expectation event dropped: %s", kernel_reason_name(why));
		return;
	}
	/* Our own writes (commit, injection) are the peer's expectations: not echoed. */
	if (own_write) {
		c->x.n.events_own++;
		return;
	}
	if (ev == KERNEL_EV_DESTROY) {
		c->x.n.events_destroy++;
		if ((h = exp_table_lookup(c->x.internal, &e)) != 0 &&
		    !(exp_table_flags(c->x.internal, h) & FLOW_ENTRY_DEAD))
			local_gone(c, h, true);
		return;
	}
	c->x.n.events_new++;
	local_new(c, &e, true);
}

void cache_exp_forget_dead(struct cache *c, uint32_t xh)
{
	if (exp_table_flags(c->x.internal, xh) & FLOW_ENTRY_DEAD)
		exp_table_delete(c->x.internal, xh);
}

/* ---- loads ----------------------------------------------------------------------------- */

static void on_dump_exp(void *arg, const struct flow_exp *e)
{
	struct cache *c = arg;
	uint32_t h;

	exp_table_upsert(c->x.seen, e, 0, &h);
}

static void on_dump_done(void *arg, int err, const struct kernel_dump_stats *st)
{
	struct cache *c = arg;
	uint32_t cursor = 0, h, kept = 0, vanished = 0;
	char text[160];

	c->x.dump = NULL;
	if (err && err != -EINTR) {
		snprintf(text, sizeof(text), "ctsyncd: the expectation dump failed: %s", strerror(-err));
		log_error("%s", text + 9);
		cache_finish_all(&c->x.load_waiters, CTL_STATUS_FAILED, "%s", text);
		exp_table_free(c->x.seen);
		c->x.seen = NULL;
		return;
	}
	while ((h = exp_table_next(c->x.seen, &cursor)) != 0)
		kept += local_new(c, exp_table_get(c->x.seen, h), c->x.dump_tells);
	cursor = 0;
	while ((h = exp_table_next(c->x.internal, &cursor)) != 0) {
		if (exp_table_flags(c->x.internal, h) & FLOW_ENTRY_DEAD)
			continue;
		if (!exp_table_lookup(c->x.seen, exp_table_get(c->x.internal, h))) {
			local_gone(c, h, c->x.dump_tells);
			vanished++;
		}
	}
	c->x.n.vanished += vanished;
	exp_table_free(c->x.seen);
	c->x.seen = NULL;
	snprintf(text, sizeof(text), "kernel expectations read: %u kept of %llu, %u vanished removed",
		 kept, (unsigned long long)st->flows, vanished);
	/* A telling load comes with every poll (PollSecs): not worth a line each time. */
	if (c->x.dump_tells)
		log_debug("%s", text);
	else
		log_notice("%s", text);
	cache_finish_all(&c->x.load_waiters, CTL_STATUS_OK, "%s", text);
}

int cache_exp_load(struct cache *c, bool tell_peer, struct control_request *req)
{
	static const struct kernel_dump_cb cb = { .on_exp = on_dump_exp, .on_done = on_dump_done };
	struct exp_table_options o = { .seed = 0x9747b28cu };
	int err = 0;

	if (req && c->x.load_waiters.n == CACHE_MAX_WAITERS)
		return -EBUSY;
	if (!c->x.dump) {
		if ((err = exp_table_new(&o, &c->x.seen)) < 0)
			return err;
		c->x.dump = kernel_dump_start(c->loop, AF_UNSPEC, 0, &cb, c, &err);
		if (!c->x.dump) {
			exp_table_free(c->x.seen);
			c->x.seen = NULL;
			return err ? err : -EIO;
		}
		c->x.dump_tells = tell_peer;
		c->x.n.loads++;
	} else {
		c->x.dump_tells |= tell_peer;
	}
	if (req)
		c->x.load_waiters.req[c->x.load_waiters.n++] = req;
	return 0;
}
