/*
 * flush.c - emptying caches and the kernel table: -f (the caches), -F and
 * the scheduled purge of -t (the kernel table, through a dump and batched
 * deletions), and -R (the internal caches re-read from the kernel).
 */
#include "cache_int.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "config/config.h"
#include "flow/exp_table.h"
#include "flow/filter.h"
#include "flow/table.h"
#include "loop/log.h"

static void flush_exps(struct cache *c, bool internal, bool external, struct control_request *req)
{
	if (internal) {
		uint32_t cursor = 0, h;

		control_request_printf(req, "internal expectation cache flushed: %u\n",
				       exp_table_count(c->x.internal));
		while ((h = exp_table_next(c->x.internal, &cursor)) != 0)
			if (c->x.listener.forget)
				c->x.listener.forget(c->x.listener.arg, h);
		exp_table_clear(c->x.internal);
	}
	if (external) {
		control_request_printf(req, "external expectation cache flushed: %u\n",
				       exp_table_count(c->x.external));
		exp_table_clear(c->x.external);
	}
}

static int kernel_flush_exps(struct cache *c, struct control_request *req)
{
	uint64_t failed = c->x.n.write_failed;
	int rc = kernel_writer_put_exp(c->writer, KERNEL_OP_FLUSH, NULL, 0, COOKIE_EXP);

	if (rc == 0)
		rc = kernel_writer_flush(c->writer);
	if (rc == 0 && c->x.n.write_failed != failed)
		rc = -c->x.last_errno;
	c->x.n.write_failed = failed;
	if (rc < 0)
		control_request_printf(req, "ctsyncd: cannot flush the kernel's expectations: %s\n",
				       strerror(-rc));
	else
		control_request_printf(req, "kernel expectation table flushed\n");
	return rc;
}

/* Entries the Filter excludes are not ours to delete (-F). */
static bool keep_excluded(void *arg, const struct flow_full *ff)
{
	struct cache *c = arg;

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
	struct cache *c = arg;

	if (keep_excluded(arg, ff))
		return true;
	return c->cfg->sync.hot_standby && flow_table_lookup(c->external, &ff->flow.orig) != 0;
}

static void purge_done(void *arg, int err, uint64_t seen, const struct kernel_write_stats *st)
{
	struct cache *c = arg;

	c->purging = false;
	c->n.purged += st->ok;
	if (err) {
		log_error("kernel flush failed after %llu deletions: %s", (unsigned long long)st->ok,
			  strerror(-err));
		cache_finish_all(&c->purge_waiters, CTL_STATUS_FAILED, "ctsyncd: kernel flush failed: %s",
			   strerror(-err));
		cache_poll_go_on(c);
		return;
	}
	log_notice("kernel flush: %llu of %llu states deleted", (unsigned long long)st->ok,
		   (unsigned long long)seen);
	/*
	 * Our own deletions never reach the event socket (its filter drops
	 * them): re-read the table so that the internal cache loses them too,
	 * without telling the peer, as conntrackd does for flushes.
	 */
	if (!c->dump && !c->bypass)
		cache_start_load(c, LOAD_REDUMP);
	cache_poll_go_on(c);
	cache_finish_all(&c->purge_waiters, CTL_STATUS_OK, "kernel flush: %llu of %llu states deleted",
		   (unsigned long long)st->ok, (unsigned long long)seen);
}

static int start_purge(struct cache *c, bool scheduled)
{
	int rc;

	if (c->purging)
		return 0;
	if (c->committing)
		return -EBUSY;
	cache_abandon_poll(c);
	rc = kernel_writer_purge(c->writer, AF_UNSPEC, scheduled ? keep_for_purge : keep_excluded,
				 purge_done, c);
	if (rc == 0) {
		c->purging = true;
		c->n.purges++;
	} else {
		cache_poll_go_on(c);   /* the poll abandoned above */
	}
	return rc;
}

static void flush_internal(struct cache *c)
{
	uint32_t cursor = 0, h;

	if (!c->listener.forget) {
		flow_table_clear(c->internal);
		return;
	}
	/* The sync layer may hold handles in its queues: let it let go of them first. */
	while ((h = flow_table_next(c->internal, &cursor)) != 0)
		cache_forget_local(c, h);
}

void cache_on_purge_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct cache *c = arg;
	int rc;

	log_notice("scheduled purge: flushing the kernel table and the internal cache");
	if (!c->committing)
		cache_abandon_poll(c);
	flush_internal(c);
	rc = start_purge(c, true);
	if (rc < 0)
		log_error("scheduled purge: cannot flush the kernel table: %s", strerror(-rc));
}

enum control_result cache_answer_flush(struct control_request *req, void *arg)
{
	struct cache *c = arg;
	uint32_t code = control_request_code(req);

	if (c->committing) {
		control_request_printf(req, "ctsyncd: a commit is running; caches not flushed\n");
		control_request_set_status(req, CTL_STATUS_BUSY);
		return CONTROL_DONE;
	}
	loop_timer_disarm(c->purge_timer);
	if (code != CTL_FLUSH_EXTERNAL && c->bypass) {
		/*
		 * conntrackd 1.4.7 flushes the kernel table here (every state the
		 * Filter accepts).  The stock primary-backup.sh runs -f right
		 * after -c on a takeover: that would delete the states just
		 * committed, and the new primary's connections with them.
		 */
		control_request_printf(req, "internal cache: disabled (DisableInternalCache), nothing to "
				       "flush; the kernel table is left as it is (-F flushes it)\n");
	} else if (code != CTL_FLUSH_EXTERNAL) {
		control_request_printf(req, "internal cache flushed: %u states\n", flow_table_count(c->internal));
		flush_internal(c);
	}
	if (code != CTL_FLUSH_INTERNAL) {
		control_request_printf(req, "external cache flushed: %u states\n", flow_table_count(c->external));
		flow_table_clear(c->external);
	}
	if (cache_has_exps(c))
		flush_exps(c, code != CTL_FLUSH_EXTERNAL, code != CTL_FLUSH_INTERNAL, req);
	return CONTROL_DONE;
}

enum control_result cache_answer_kernel_flush(struct control_request *req, void *arg)
{
	struct cache *c = arg;
	int rc;

	if (control_request_code(req) == CTL_FLUSH_KERNEL_EXP) {
		if (!cache_has_exps(c))
			return cache_no_exps(req);
		if (kernel_flush_exps(c, req) < 0)
			control_request_set_status(req, CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	if (control_request_code(req) == CTL_FLUSH_KERNEL_ALL && cache_has_exps(c) &&
	    kernel_flush_exps(c, req) < 0)
		control_request_set_status(req, CTL_STATUS_FAILED);
	rc = start_purge(c, false);
	if (rc < 0) {
		control_request_printf(req, "ctsyncd: cannot flush the kernel table: %s\n",
				       rc == -EBUSY ? "a commit is running" : strerror(-rc));
		control_request_set_status(req, rc == -EBUSY ? CTL_STATUS_BUSY : CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	return cache_wait_for(&c->purge_waiters, req);
}

enum control_result cache_answer_schedule_purge(struct control_request *req, void *arg)
{
	struct cache *c = arg;

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

enum control_result cache_answer_redump(struct control_request *req, void *arg)
{
	struct cache *c = arg;

	if (control_request_code(req) == CTL_RESYNC_KERNEL_EXP) {
		int rc;

		if (!cache_has_exps(c))
			return cache_no_exps(req);
		if ((rc = cache_exp_load(c, false, req)) < 0) {
			control_request_printf(req, "ctsyncd: cannot dump the kernel's expectations: %s\n",
					       strerror(-rc));
			control_request_set_status(req, CTL_STATUS_FAILED);
			return CONTROL_DONE;
		}
		return CONTROL_PENDING;
	}
	if (c->bypass) {
		/* As 1.4.7 ("resync is unsupported in this mode"), answered, exit status 0. */
		control_request_printf(req, "ctsyncd: -R is not supported with DisableInternalCache: there "
				       "is no internal cache to re-read from the kernel (-B sends the kernel "
				       "table to the peer)\n");
		return CONTROL_DONE;
	}
	if (!c->dump)
		cache_start_load(c, LOAD_REDUMP);
	if (!c->dump) {
		control_request_printf(req, "ctsyncd: cannot dump the kernel table\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	return cache_wait_for(&c->load_waiters, req);
}
