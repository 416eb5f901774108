/*
 * commit.c - the external caches into the kernel (-c): the conntracks
 * through the batched writer in slices, masters before related states,
 * while the loop keeps serving; then the expectations, whose masters are
 * in by then.
 */
#include "cache_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "flow/exp_table.h"
#include "flow/table.h"
#include "loop/log.h"

static uint32_t ct_commit_timeout(const struct cache *c, uint32_t h, const struct flow *f)
{
	return cache_commit_timeout(c, flow_table_updated(c->external, h),
				    f->attrs & FLOW_A_TIMEOUT ? f->timeout : 0);
}

static uint32_t exp_commit_timeout(const struct cache *c, uint32_t h, const struct flow_exp *e)
{
	return cache_commit_timeout(c, exp_table_updated(c->x.external, h),
				    e->attrs & FLOW_EXP_A_TIMEOUT ? e->timeout : 0);
}

/*
 * An expectation belongs to the origin of its master: the external cache
 * keeps no origin of its own for it, and it is of use only where its
 * master is committed.
 */
bool cache_exp_of_origin(const struct cache *c, const struct flow_exp *e, unsigned origin)
{
	uint32_t mh;

	if (!origin)
		return true;
	mh = flow_table_lookup(c->external, &e->master);
	return mh && flow_table_origin(c->external, mh) == origin;
}

/*
 * Write the external expectation table into the kernel (after the
 * conntracks: an expectation needs its master).  Synchronous: expectations
 * are few.  Writes one line of results into `line` (no newline); returns
 * the failures.  `origin`: only the expectations of that peer's states.
 */
static uint64_t commit_exps(struct cache *c, unsigned origin, char *line, size_t cap)
{
	uint32_t cursor = 0, h, n = 0;
	uint64_t before = c->x.n.write_failed, failed;

	c->x.last_errno = 0;
	while ((h = exp_table_next(c->x.external, &cursor)) != 0) {
		const struct flow_exp *e = exp_table_get(c->x.external, h);

		if (!cache_exp_of_origin(c, e, origin))
			continue;

		/* A request that cannot be built is counted by the writer's on_error, as EINVAL. */
		kernel_writer_put_exp(c->writer, KERNEL_OP_CREATE, e, exp_commit_timeout(c, h, e),
				      COOKIE_EXP | h);
		n++;
	}
	kernel_writer_flush(c->writer);         /* answers (and failures) are in on return */
	failed = c->x.n.write_failed - before;
	c->x.n.write_failed = before;             /* counted as commit failures instead */
	c->x.n.commits++;
	c->x.n.committed_ok += n - failed;
	c->x.n.committed_failed += failed;
	snprintf(line, cap, "commit: %u expectations written, %llu failed%s%s", n - (uint32_t)failed,
		 (unsigned long long)failed, failed ? " (last error: " : "",
		 failed ? strerror(c->x.last_errno) : "");
	if (failed && strlen(line) + 2 <= cap)
		strcat(line, ")");
	log_notice("%s", line);
	return failed;
}

static bool commit_next(void *arg, struct kernel_job_item *it)
{
	struct cache *c = arg;
	uint32_t h;

	while ((h = flow_table_next(c->external, &c->commit_cursor)) != 0) {
		const struct flow *f = flow_table_flow(c->external, h);
		bool related = f->attrs & FLOW_A_MASTER;

		/* Masters first, so that the kernel can link related states to them. */
		if (related != (c->commit_pass == 1))
			continue;
		if (c->commit_origin && flow_table_origin(c->external, h) != c->commit_origin)
			continue;
		if (flow_table_export(c->external, h, &c->scratch) < 0)
			continue;
		it->op = KERNEL_OP_CREATE;
		it->ff = &c->scratch;
		it->timeout = ct_commit_timeout(c, h, f);
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

/*
 * "; failures: No space left on device (ENOSPC 28) 5000" for the errnos
 * of a commit's failures, the most frequent first, at most three; "" when
 * none failed.  An existing state is no failure: it is updated in place.
 */
static void describe_failures(const struct kernel_write_stats *s, uint64_t not_updated, char *buf,
			      size_t cap)
{
	uint32_t counts[KERNEL_ERRNO_MAX];
	size_t len = 0;

	memcpy(counts, s->by_errno, sizeof(counts));
	counts[EEXIST] = 0;
	buf[0] = '\0';
	for (int shown = 0; shown < 3; shown++) {
		int best = -1;

		for (int i = 0; i < KERNEL_ERRNO_MAX; i++)
			if (counts[i] && (best < 0 || counts[i] > counts[best]))
				best = i;
		if (best < 0)
			break;
		len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s (errno %d): %u",
					shown ? ", " : "; failures: ",
					best ? strerror(best) : "other errors", best, counts[best]);
		counts[best] = 0;
	}
	if (not_updated)
		snprintf(buf + len, len < cap ? cap - len : 0, "%s%llu existing states not updated",
			 len ? ", " : "; failures: ", (unsigned long long)not_updated);
}

static void commit_done(void *arg, const struct kernel_write_stats *st)
{
	struct cache *c = arg;
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
	/* Updates in place of existing states were put by cache_commit_error(): send them now. */
	kernel_writer_flush(c->writer);
	c->committing = false;
	ms = loop_now_ms(c->loop) - c->commit_started_ms;
	{
		const struct kernel_write_stats *s = &c->commit_stats;
		uint64_t existed = s->by_errno[EEXIST];
		uint64_t failed = s->failed - existed + (existed - c->commit_updated);
		uint64_t written = s->ok + c->commit_updated;

		char exp_line[160] = "", why[256];
		uint64_t exp_failed = 0;

		describe_failures(s, existed > c->commit_updated ? existed - c->commit_updated : 0, why,
				  sizeof(why));
		c->n.committed_ok += s->ok;
		c->n.committed_updated += c->commit_updated;
		c->n.committed_failed += failed;
		log_msg(failed ? LOG_LEVEL_WARNING : LOG_LEVEL_NOTICE, "commit: %llu states written in %llu ms (%llu created, "
			   "%llu updated in place, %llu failed)%s",
			   (unsigned long long)written, (unsigned long long)ms, (unsigned long long)s->ok,
			   (unsigned long long)c->commit_updated, (unsigned long long)failed, why);
		/* The expectations last: the kernel links each to its master, which must be in. */
		if (cache_has_exps(c) && c->commit_expects)
			exp_failed = commit_exps(c, c->commit_origin, exp_line, sizeof(exp_line));
		cache_finish_all(&c->commit_waiters, failed || exp_failed ? CTL_STATUS_FAILED : CTL_STATUS_OK,
			   "commit: %llu states written in %llu ms (%llu created, %llu updated in place, %llu failed)%s%s%s",
			   (unsigned long long)written, (unsigned long long)ms, (unsigned long long)s->ok,
			   (unsigned long long)c->commit_updated, (unsigned long long)failed, why,
			   exp_line[0] ? "\n" : "", exp_line);
	}
}

/* A commit request that failed: an existing state is updated in place. */
void cache_commit_error(struct cache *c, enum kernel_op op, uint64_t cookie, int err)
{
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
				      ct_commit_timeout(c, h, flow_table_flow(c->external, h)), cookie) == 0)
			c->commit_updated++;
		return;
	}
	if (op == KERNEL_OP_UPDATE && c->commit_updated)
		c->commit_updated--;
}

enum control_result cache_answer_commit(struct control_request *req, void *arg)
{
	struct cache *c = arg;
	uint32_t code = control_request_code(req);
	unsigned origin;
	int rc;

	if (code == CTL_COMMIT_EXP) {
		char line[160];

		if (!cache_has_exps(c))
			return cache_no_exps(req);
		if (c->cfg->sync.disable_external_cache) {
			control_request_printf(req, "ctsyncd: nothing to commit: DisableExternalCache is on\n");
			return CONTROL_DONE;
		}
		if (!cache_request_origin(c, req, &origin))
			return CONTROL_DONE;
		if (commit_exps(c, origin, line, sizeof(line)))
			control_request_set_status(req, CTL_STATUS_FAILED);
		control_request_printf(req, "%s\n", line);
		return CONTROL_DONE;
	}
	if (c->cfg->sync.disable_external_cache) {
		control_request_printf(req, "ctsyncd: nothing to commit: DisableExternalCache is on, "
				       "received states go straight into the kernel\n");
		return CONTROL_DONE;
	}
	if (!cache_request_origin(c, req, &origin))
		return CONTROL_DONE;
	if (c->committing) {
		/* The running commit is this one's only if it writes the same states. */
		if (origin != c->commit_origin) {
			control_request_printf(req, "ctsyncd: a commit of other states is running; "
					       "commit again when it ends\n");
			control_request_set_status(req, CTL_STATUS_BUSY);
			return CONTROL_DONE;
		}
		c->commit_expects |= code != CTL_COMMIT_CT;
		return cache_wait_for(&c->commit_waiters, req);
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
	c->commit_origin = origin;
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
	if (origin)
		log_notice("commit: writing the external states of peer #%u (of %u held) into the kernel",
			   origin, flow_table_count(c->external));
	else
		log_notice("commit: writing %u external states into the kernel",
			   flow_table_count(c->external));
	return cache_wait_for(&c->commit_waiters, req);
}
