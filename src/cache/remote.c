/*
 * remote.c - the external caches: the peer's conntracks and expectations,
 * kept until a commit, or written into the kernel as they arrive
 * (DisableExternalCache; HotStandby's mirror on a backup).
 */
#include "cache_int.h"

#include <errno.h>
#include <string.h>

#include "config/config.h"
#include "flow/exp_table.h"
#include "flow/table.h"
#include "loop/log.h"
#include "wire/format.h"

static uint32_t ff_timeout(const struct flow_full *ff)
{
	return cache_inject_timeout(ff->flow.attrs & FLOW_A_TIMEOUT ? ff->flow.timeout : 0);
}

/*
 * Write a received state into the kernel: create; an existing entry is
 * updated in place (cache_inject_error), for which the request is remembered
 * in a ring larger than any batch.
 */
static int inject(struct cache *c, uint8_t type, const struct flow_full *ff)
{
	enum kernel_op op = type == WIRE_T_CT_DEL ? KERNEL_OP_DELETE : KERNEL_OP_CREATE;
	uint64_t cookie = COOKIE_INJECT | ++c->inject_seq;
	struct inject_slot *slot = &c->inject_ring[cookie % INJECT_RING];
	int rc;

	slot->cookie = cookie;
	slot->flow = ff->flow;
	slot->ext = ff->ext;
	rc = kernel_writer_put(c->writer, op, ff, ff_timeout(ff), cookie);
	if (rc == 0) {
		c->n.injected_ok++;
		if (type == WIRE_T_CT_NEW)
			c->n.injected_new++;
		else if (type == WIRE_T_CT_UPD)
			c->n.injected_upd++;
		else
			c->n.injected_del++;
	} else {
		c->n.injected_failed++;
		c->n.inject_refused[op]++;
	}
	return rc;
}

_Static_assert(CACHE_ORIGIN_MAX == FLOW_TABLE_ORIGIN_MAX, "the table keeps every origin");

static int store_remote(struct cache *c, uint8_t type, const struct flow_full *ff, unsigned origin)
{
	uint32_t handle;
	int rc;

	switch (type) {
	case WIRE_T_CT_NEW:
	case WIRE_T_CT_UPD:
		rc = flow_table_upsert(c->external, ff, cache_now_s(c), &handle);
		if (rc < 0) {
			c->n.remote_failed++;
			cache_gap_note(c, &c->remote_gap, rc);
			return rc;
		}
		/* The state is the last sender's: it forwards the flow now. */
		flow_table_set_origin(c->external, handle, origin);
		if (origin <= CACHE_ORIGIN_MAX)
			c->sweep_resent |= (c->sweep_origins & 1u << origin);
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

void cache_prefetch_remote(struct cache *c, uint8_t type, const struct flow_full *ff)
{
	(void)type;
	if (!c->cfg->sync.disable_external_cache)
		flow_table_prefetch(c->external, flow_table_hash(c->external, &ff->flow.orig));
}

int cache_apply_remote(struct cache *c, uint8_t type, const struct flow_full *ff, unsigned origin)
{
	int rc;

	if (c->cfg->sync.disable_external_cache)
		return inject(c, type, ff);
	rc = store_remote(c, type, ff, origin);
	/*
	 * HotStandby: a backup also keeps its kernel table equal to the
	 * primary's, so that a takeover finds every state already there.
	 */
	if (rc == 0 && c->mirroring)
		rc = inject(c, type, ff);
	return rc;
}

/* The answer to an injection or mirror write that failed. */
void cache_inject_error(struct cache *c, enum kernel_op op, uint64_t cookie, int err)
{
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
				      ff_timeout(&c->scratch), cookie) == 0)
			return;
	}
	if (op == KERNEL_OP_DELETE && err == ENOENT)
		return;         /* gone already: what a DEL wanted */
	c->n.injected_failed++;
	if ((unsigned)op < KERNEL_OP_MAX)
		c->n.inject_refused[op]++;
	cache_log_write_error(c, c->mirroring ? "HotStandby: writing a received state into the kernel"
					      : "writing a received state into the kernel", err);
}

/*
 * Mark and sweep.  A restarted peer sends its table again; until it has,
 * what we hold of it stays (a takeover meanwhile commits it), and what it
 * did not send again goes afterwards: states it deleted while we could not
 * hear it.  The mark is the time (whole seconds) before which an entry of
 * that origin was last stored; the resend stores every live entry anew.
 * Each origin has its own mark, so in a group the restart of one peer
 * never removes the states another, live peer owns.  And only an origin
 * that has sent a state since its mark is swept: a restart that nothing
 * follows (one forged datagram in the name of a dead primary, whose
 * states the takeover needs) removes nothing; the price is that a real
 * restart with an empty table leaves our copies until they are flushed.
 * The sweep runs in slices from a loop timer, never in one stall.
 */
#define SWEEP_VISIT 16384u
#define SWEEP_PERIOD_MS 10u

void cache_external_mark(struct cache *c, unsigned origin)
{
	if (origin > CACHE_ORIGIN_MAX)
		return;
	/*
	 * A later restart moves the mark: what was stale at the earlier one
	 * and not sent since is older still, and the new process resends
	 * every state it has.  (Whole seconds: a state stored in the second
	 * of the mark stays, never one sent again after it.)
	 */
	c->sweep_origins |= 1u << origin;
	c->sweep_resent &= ~(1u << origin);
	c->sweep_before_s[origin] = cache_now_s(c);
	c->sweep_marked = true;
	c->sweep_cursor = 0;
	loop_timer_disarm(c->sweep_timer);
}

bool cache_external_marked(const struct cache *c)
{
	return c->sweep_marked;
}

static void on_sweep_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct cache *c = arg;
	unsigned visited = 0, origin;
	uint32_t h;

	(void)loop;
	while (visited++ < SWEEP_VISIT) {
		h = flow_table_next(c->external, &c->sweep_cursor);
		if (!h) {
			log_notice("external cache: %llu states the restarted peer did not send again "
				   "removed, %u kept", (unsigned long long)c->sweep_removed,
				   flow_table_count(c->external));
			c->sweep_marked = false;
			c->sweep_origins = c->sweep_resent = 0;
			return;
		}
		origin = flow_table_origin(c->external, h);
		if ((c->sweep_origins & c->sweep_resent & 1u << origin) &&
		    flow_table_updated(c->external, h) < c->sweep_before_s[origin]) {
			flow_table_delete(c->external, h);
			c->sweep_removed++;
			c->n.remote_swept++;
		}
	}
	loop_timer_arm(timer, SWEEP_PERIOD_MS);
}

void cache_external_sweep(struct cache *c)
{
	if (!c->sweep_marked || loop_timer_armed(c->sweep_timer))
		return;
	c->sweep_cursor = 0;
	c->sweep_removed = 0;
	on_sweep_timer(c->loop, c->sweep_timer, c);
}

void cache_set_origin_resolver(struct cache *c, cache_origin_fn fn, void *arg)
{
	c->origin_of = fn;
	c->origin_arg = arg;
}

void cache_external_by_origin(struct cache *c, uint32_t counts[CACHE_ORIGIN_MAX + 1])
{
	uint32_t cursor = 0, h;

	memset(counts, 0, sizeof(uint32_t) * (CACHE_ORIGIN_MAX + 1));
	if (!c->external)
		return;
	while ((h = flow_table_next(c->external, &cursor)) != 0)
		if (!(flow_table_flags(c->external, h) & FLOW_ENTRY_DEAD))
			counts[flow_table_origin(c->external, h)]++;
}

int cache_sweep_init(struct cache *c)
{
	c->sweep_timer = loop_timer_new(c->loop, on_sweep_timer, c);
	return c->sweep_timer ? 0 : -ENOMEM;
}

/* ---- expectations ------------------------------------------------------------------ */

/*
 * The kernel has no update event for expectations and 1.4.7 sends none: a
 * NEW replaces, an UPD is taken as a NEW.
 */
static void inject_exp(struct cache *c, uint8_t type, const struct flow_exp *e)
{
	enum kernel_op op = type == WIRE_T_EXP_DEL ? KERNEL_OP_DELETE : KERNEL_OP_CREATE;
	uint32_t timeout = cache_inject_timeout(e->attrs & FLOW_EXP_A_TIMEOUT ? e->timeout : 0);

	if (kernel_writer_put_exp(c->writer, op, e, timeout, COOKIE_EXP) < 0)
		c->x.n.write_failed++;
	else
		c->x.n.injected++;
}

int cache_apply_remote_exp(struct cache *c, uint8_t type, const struct flow_exp *e)
{
	uint32_t h;
	int r;

	if (c->cfg->sync.disable_external_cache) {
		inject_exp(c, type, e);
		return 0;
	}
	if (type == WIRE_T_EXP_DEL) {
		if ((h = exp_table_lookup(c->x.external, e)) == 0) {
			c->x.n.remote_delete_unknown++;
			return 0;
		}
		c->x.n.remote_delete++;
		return exp_table_delete(c->x.external, h);
	}
	r = exp_table_upsert(c->x.external, e, cache_now_s(c), &h);
	if (r < 0) {
		c->x.n.remote_failed++;
		return r;
	}
	c->x.n.remote_new++;
	return 0;
}

void cache_exp_write_error(struct cache *c, enum kernel_op op, int err)
{
	if (op == KERNEL_OP_DELETE && err == ENOENT)
		return;         /* gone already: what a DEL wanted */
	c->x.n.write_failed++;
	c->x.last_errno = err;
	cache_log_write_error(c, "writing an expectation into the kernel", err);
}
