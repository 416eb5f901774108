/*
 * report.c - what the caches tell: -i and -e dumps (conntracks and
 * expectations, text and XML) and the statistics of -s, -s cache and
 * -s expect.
 */
#include "cache_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "flow/exp_table.h"
#include "flow/format.h"
#include "flow/table.h"
#include "control/compat_report.h"
#include "control/report.h"

/* Entries looked at per fill, printed or not: the work of one fill is bounded. */
#define DUMP_VISITS_PER_FILL 1024u

/*
 * Where a -i / -e dump is: the table and the saved iteration cursor.  The
 * tables live as long as the cache; a dump that outlives the cache (the
 * daemon exits while a client reads slowly) is released, never filled.
 */
struct dump_cursor {
	struct cache *c;
	struct flow_table *flows;   /* or */
	struct exp_table *exps;
	unsigned opts;
	bool xml;
	unsigned origin;            /* external dumps: only this origin's; 0 = all */
	uint32_t cursor;
};

#define NO_EXPIRY UINT32_MAX

/*
 * A text line ends as 1.4.7's: how long the state has been in the cache,
 * and in ALARM's external cache when it expires unless refreshed.
 */
static void dump_line(struct control_request *req, const char *line, int n, size_t cap, bool xml,
		      uint32_t active, uint32_t expires)
{
	if (n < 0)
		return;
	if ((size_t)n >= cap)
		n = (int)cap - 1;       /* cut, as the formatters say */
	control_request_write(req, line, (size_t)n);
	if (xml)
		control_request_write(req, "\n", 1);
	else if (expires == NO_EXPIRY)
		control_request_printf(req, " [active since %us]\n", active);
	else
		control_request_printf(req, " [active since %us] [expires in %us]\n", active, expires);
}

/* ALARM's external caches expire a state CacheTimeout after its last refresh. */
static uint32_t expires_in(const struct cache *c, bool external, uint32_t now, uint32_t updated)
{
	uint32_t timeout = c->cfg->sync.cache_timeout, age = now >= updated ? now - updated : 0;

	if (!external || c->cfg->role != CONFIG_ROLE_SYNC || c->cfg->sync.mode != CONFIG_MODE_ALARM)
		return NO_EXPIRY;
	return age < timeout ? timeout - age : 0;
}

static uint32_t age_of(uint32_t now, uint32_t updated)
{
	return now >= updated ? now - updated : 0;
}

/* One line per live state, as text (with its age) or as 1.4.7's XML; true at the end. */
static bool dump_fill(struct control_request *req, void *arg)
{
	struct dump_cursor *d = arg;
	struct cache *c = d->c;
	char line[FLOW_FORMAT_MAX];
	uint32_t now = cache_now_s(c), h;
	unsigned visits = 0;

	while (control_request_room(req) > 0 && visits++ < DUMP_VISITS_PER_FILL) {
		int n;

		if (d->flows) {
			struct flow_table *t = d->flows;

			if ((h = flow_table_next(t, &d->cursor)) == 0)
				return true;
			if (flow_table_flags(t, h) & FLOW_ENTRY_DEAD)
				continue;
			if (d->origin && flow_table_origin(t, h) != d->origin)
				continue;
			if (flow_table_export(t, h, &c->scratch) < 0)
				continue;
			n = d->xml ? flow_format_xml(line, sizeof(line), &c->scratch, d->opts)
				   : flow_format(line, sizeof(line), &c->scratch, d->opts);
			dump_line(req, line, n, sizeof(line), d->xml, age_of(now, flow_table_created(t, h)),
				  expires_in(c, t == c->external, now, flow_table_updated(t, h)));
		} else {
			struct exp_table *t = d->exps;

			if ((h = exp_table_next(t, &d->cursor)) == 0)
				return true;
			if (exp_table_flags(t, h) & FLOW_ENTRY_DEAD)
				continue;
			if (d->origin && !cache_exp_of_origin(c, exp_table_get(t, h), d->origin))
				continue;
			n = d->xml ? flow_exp_format_xml(line, sizeof(line), exp_table_get(t, h), 0)
				   : flow_exp_format(line, sizeof(line), exp_table_get(t, h), 0);
			dump_line(req, line, n, sizeof(line), d->xml, age_of(now, exp_table_created(t, h)),
				  expires_in(c, t == c->x.external, now, exp_table_updated(t, h)));
		}
	}
	return false;
}

/* Stream the dump: the reply follows the client's reading, in bounded parts. */
static enum control_result dump_stream(struct cache *c, struct control_request *req,
				       struct flow_table *flows, struct exp_table *exps,
				       unsigned opts, bool xml)
{
	struct dump_cursor *d;
	unsigned origin;

	if (!cache_request_origin(c, req, &origin))
		return CONTROL_DONE;
	d = calloc(1, sizeof(*d));
	if (!d) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	*d = (struct dump_cursor){ .c = c, .flows = flows, .exps = exps, .opts = opts, .xml = xml,
				   .origin = origin };
	return control_request_stream(req, dump_fill, free, d);
}

enum control_result cache_answer_dump(struct control_request *req, void *arg)
{
	struct cache *c = arg;
	uint32_t code = control_request_code(req);

	switch (code) {
	case CTL_DUMP_INTERNAL_CT:
	case CTL_DUMP_INTERNAL_CT_XML:
		if (c->bypass)
			return cache_bypass_dump(c, req, code == CTL_DUMP_INTERNAL_CT_XML);
		return dump_stream(c, req, c->internal, NULL, FLOW_FMT_REPLY,
				   code == CTL_DUMP_INTERNAL_CT_XML);
	case CTL_DUMP_EXTERNAL_CT:
	case CTL_DUMP_EXTERNAL_CT_XML:
		return dump_stream(c, req, c->external, NULL, 0, code == CTL_DUMP_EXTERNAL_CT_XML);
	case CTL_DUMP_INTERNAL_EXP:
	case CTL_DUMP_EXTERNAL_EXP:
	case CTL_DUMP_INTERNAL_EXP_XML:
	case CTL_DUMP_EXTERNAL_EXP_XML:
		if (!cache_has_exps(c))
			return cache_no_exps(req);
		return dump_stream(c, req, NULL,
				   code == CTL_DUMP_INTERNAL_EXP || code == CTL_DUMP_INTERNAL_EXP_XML ?
				   c->x.internal : c->x.external, 0,
				   code == CTL_DUMP_INTERNAL_EXP_XML || code == CTL_DUMP_EXTERNAL_EXP_XML);
	}
	return CONTROL_DONE;
}

/*
 * One table's section; `gap`: what it refused and its repairs (NULL: not
 * tracked); `disabled`: whether DisableInternalCache keeps it empty (NULL:
 * not said, the other tables).
 */
static void cache_report_table(struct report *r, const char *name, const struct flow_table_stats *st,
			       const struct cache_gap *gap, const bool *disabled)
{
	report_begin(r, name);
	if (disabled)
		report_flag(r, "disabled", *disabled,
			    "1 with DisableInternalCache: the internal cache keeps nothing.");
	report_gauge(r, "active", st->active, "Live entries.");
	report_gauge(r, "dead", st->dead, "Entries marked dead, waiting to be reused.");
	report_gauge(r, "max_seen", st->max_seen, "Most entries (live and dead) at once so far.");
	report_gauge(r, "limit", st->limit, "Entries the table holds at most (HashLimit); 0: no limit.");
	report_counter(r, "inserted", st->inserted, "Entries created.");
	report_counter(r, "updated", st->updated, "Updates of existing entries.");
	report_counter(r, "deleted", st->deleted, "Entries deleted.");
	report_counter(r, "limit_hits", st->enospc, "Inserts refused because the table was at its limit.");
	report_counter(r, "no_memory", st->enomem, "Inserts or updates that failed for lack of memory.");
	report_gauge(r, "memory_bytes", st->memory, "Memory the table uses.");
	if (gap) {
		/* Incomplete: states were refused and their repair has not started yet. */
		report_flag(r, "complete", !gap->open,
			    "0 while states refused by a limit wait for their repair.");
		report_counter(r, "refused", gap->refused, "States refused by a limit.");
		report_counter(r, "repairs", gap->repairs, "Repairs started after states were refused.");
	}
	report_end(r);
}

static void report_table(struct report *r, const char *name, struct flow_table *t,
			 const struct cache_gap *gap, const bool *disabled)
{
	struct flow_table_stats st;

	flow_table_stats(t, &st);
	cache_report_table(r, name, &st, gap, disabled);
}

/* DisableInternalCache: what went to the peer without a cache (1.4.7's "internal bypass"). */
static void report_bypass(struct cache *c, struct report *r)
{
	report_begin(r, "internal_bypass");
	report_counter(r, "sent_new", c->bp.sent_new, "Kernel events NEW sent to the peer as they came.");
	report_counter(r, "sent_updated", c->bp.sent_update,
		       "Kernel events UPDATE sent to the peer as they came.");
	report_counter(r, "sent_destroyed", c->bp.sent_destroy,
		       "Kernel events DESTROY sent to the peer as they came.");
	report_counter(r, "send_failed", c->bp.send_failed, "States that could not be encoded and sent.");
	report_counter(r, "kernel_walks", c->bp.walks,
		       "Bulk sends from the kernel table (-B, the peer's RESYNC, after an event overrun).");
	report_flag(r, "kernel_walk_running", c->walk != NULL, "1 while a bulk send reads the kernel table.");
	report_counter(r, "kernel_walk_sent", c->bp.walk_sent, "States the bulk sends took from the kernel table.");
	report_counter(r, "kernel_walk_left_out_by_filter", c->bp.walk_filtered,
		       "States of the kernel table the bulk sends left out: the Filter ignores them.");
	report_counter(r, "kernel_walk_skipped_ended", c->bp.walk_skipped_ended,
		       "States a bulk send did not send: an event said they ended during it.");
	report_counter(r, "kernel_walk_failed", c->bp.walk_failed, "Bulk sends whose kernel dump failed.");
	report_counter(r, "kernel_listings", c->bp.dumps, "Answers to -i read from the kernel table.");
	report_end(r);
}

static void report_exps(struct cache *c, struct report *r)
{
	struct flow_table_stats st;

	exp_table_stats(c->x.internal, &st);
	cache_report_table(r, "internal_expectations", &st, NULL, NULL);
	exp_table_stats(c->x.external, &st);
	cache_report_table(r, "external_expectations", &st, NULL, NULL);
	report_begin(r, "expectations");
	report_counter(r, "events_new", c->x.n.events_new, "Expectation events NEW from the kernel.");
	report_counter(r, "events_destroy", c->x.n.events_destroy,
		       "Expectation events DESTROY from the kernel.");
	report_counter(r, "events_own_write", c->x.n.events_own,
		       "Expectation events caused by the daemon's own writes.");
	report_counter(r, "events_malformed", c->x.n.events_malformed,
		       "Expectation events the daemon could not read.");
	report_counter(r, "left_out_helper", c->x.n.filtered_helper,
		       "Expectations left out: their helper is not in ExpectationSync.");
	report_counter(r, "left_out_no_master", c->x.n.filtered_master,
		       "Expectations left out: their master is not in the internal cache.");
	report_counter(r, "remote_new", c->x.n.remote_new, "New expectations received from the peer.");
	report_counter(r, "remote_deleted", c->x.n.remote_delete,
		       "Deletions of expectations received from the peer.");
	report_counter(r, "remote_deleted_unknown", c->x.n.remote_delete_unknown,
		       "Deletions received for expectations the external cache does not have.");
	report_counter(r, "remote_failed", c->x.n.remote_failed,
		       "Expectations of the peer that could not be stored.");
	report_counter(r, "commits", c->x.n.commits, "Commits of the external expectations.");
	report_counter(r, "committed", c->x.n.committed_ok, "Expectations committed into the kernel.");
	report_counter(r, "commit_failed", c->x.n.committed_failed,
		       "Expectations the kernel refused during a commit.");
	report_counter(r, "injected", c->x.n.injected,
		       "Expectations written into the kernel as they arrived (hot standby).");
	report_counter(r, "write_failed", c->x.n.write_failed,
		       "Writes of expectations into the kernel that failed.");
	report_counter(r, "kernel_loads", c->x.n.loads, "Loads of the kernel's expectation table.");
	report_counter(r, "vanished_removed", c->x.n.vanished,
		       "Expectations removed from the internal cache because the kernel no longer had them.");
	if (c->x.expiry.timer)
		report_counter(r, "expired", c->x.expiry.expired,
			       "External expectations expired (ALARM: the peer stopped refreshing them).");
	report_end(r);
}

static void report_polling(struct cache *c, struct report *r)
{
	const struct poll_result *p = &c->last_poll;
	uint64_t now = (uint64_t)time(NULL);

	report_begin(r, "polling");
	report_label(r, "poll secs");
	report_gauge(r, "interval_seconds", c->cfg->general.poll_secs,
		     "Seconds between two polls of the kernel table (PollSecs).");
	report_counter(r, "polls", c->polls, "Polls of the kernel table done.");
	report_counter(r, "polls_delayed", c->polls_delayed,
		       "Polls that started late because the previous one was still running.");
	report_flag(r, "polling_now", c->dump != NULL && c->load == LOAD_POLL, "1 while a poll runs.");
	report_time(r, "last_poll", (time_t)p->unix_time, "When the last poll ended.");
	report_gauge(r, "last_poll_seconds_ago", p->unix_time && now >= p->unix_time ? now - p->unix_time : 0,
		     "Seconds since the last poll ended; 0 before the first.");
	report_gauge_double(r, "last_poll_duration_seconds", (double)p->duration_ms / 1000.0, 3,
			    "How long the last poll took.");
	report_gauge(r, "last_poll_states", p->states, "States the last poll read.");
	report_gauge(r, "last_poll_sent_new", p->told_new, "New states the last poll found.");
	report_gauge(r, "last_poll_sent_updated", p->told_updated, "Changed states the last poll found.");
	report_gauge(r, "last_poll_vanished", p->vanished, "States the last poll found gone.");
	report_end(r);
}

void cache_report(struct cache *c, struct report *r)
{
	struct kernel_events_stats ev = { 0 };
	struct kernel_write_stats wr;

	report_table(r, "internal_cache", c->internal, &c->local_gap, &c->bypass);
	if (c->bypass)
		report_bypass(c, r);
	if (c->cfg->role == CONFIG_ROLE_SYNC)
		report_table(r, "external_cache", c->external, &c->remote_gap, NULL);
	if (cache_has_exps(c))
		report_exps(c, r);
	if (c->events)
		kernel_events_get_stats(c->events, &ev);
	report_begin(r, "kernel");
	report_counter(r, "events_new", c->n.events_new, "Conntrack events NEW from the kernel.");
	report_counter(r, "events_update", c->n.events_update, "Conntrack events UPDATE from the kernel.");
	report_counter(r, "events_destroy", c->n.events_destroy, "Conntrack events DESTROY from the kernel.");
	report_counter(r, "events_filtered", c->n.events_filtered,
		       "Conntrack events left out by the filters.");
	report_counter(r, "events_malformed", ev.malformed, "Kernel messages the daemon could not read.");
	report_counter(r, "overruns", ev.overruns,
		       "Event socket overruns (ENOBUFS): events were lost and the table is read again.");
	report_counter(r, "buffer_grown_early", ev.grown_early,
		       "Times the event socket's buffer was grown before an overrun.");
	report_counter(r, "resyncs", c->n.resyncs, "Reads of the whole kernel table after an overrun or -R.");
	report_counter(r, "vanished_removed", c->n.swept,
		       "States removed from the internal cache because the kernel no longer had them.");
	report_counter(r, "masters_reread", c->n.masters_reread,
		       "Master conntracks read again for an expectation.");
	report_gauge(r, "netlink_buffer_bytes", ev.rcvbuf, "Receive buffer of the event socket.");
	report_flag(r, "event_socket", c->events != NULL, "1 if the daemon listens to conntrack events.");
	report_flag(r, "bpf_event_tap", ev.tap,
		    "1 if new states and changes come from the BPF event tap (EventSource bpf).");
	report_flag(r, "bpf_event_tap_refused", ev.tap_refused,
		    "1 if EventSource bpf was asked for and the kernel or the build refused it (see the log).");
	report_counter(r, "bpf_tap_records", ev.tap_records, "Records read from the BPF event tap's ring.");
	report_counter(r, "bpf_tap_partial", ev.tap_partial,
		       "Tap records of states with more than a record carries: read whole from the kernel.");
	report_counter(r, "bpf_tap_lost", ev.tap_lost,
		       "Tap records lost to a full ring (each loss reads the table again).");
	report_flag(r, "loading", c->dump != NULL, "1 while the kernel table is being read.");
	report_end(r);
	/* What 1.4.7 calls "traffic processed": the counters of the flows destroyed (nf_conntrack_acct). */
	report_begin(r, "traffic_processed");
	report_counter(r, "packets", c->n.traffic_packets, "Packets of the flows destroyed (nf_conntrack_acct).");
	report_counter(r, "bytes", c->n.traffic_bytes, "Bytes of the flows destroyed (nf_conntrack_acct).");
	report_end(r);
	if (c->poll_timer)
		report_polling(c, r);
	if (c->cfg->role == CONFIG_ROLE_SYNC) {
		kernel_writer_get_stats(c->writer, &wr);
		report_begin(r, "commit");
		report_counter(r, "commits", c->n.commits, "Commits of the external cache (-c).");
		report_counter(r, "created", c->n.committed_ok, "States a commit created in the kernel.");
		report_counter(r, "updated_in_place", c->n.committed_updated,
			       "States a commit updated because the kernel had them already.");
		report_counter(r, "failed", c->n.committed_failed, "States the kernel refused during a commit.");
		report_flag(r, "running", c->committing, "1 while a commit runs.");
		report_counter(r, "kernel_flushes", c->n.purges, "Flushes of the kernel table (-F, -t).");
		report_counter(r, "kernel_flushed_states", c->n.purged, "States the kernel flushes deleted.");
		report_flag(r, "purge_scheduled", loop_timer_armed(c->purge_timer),
			    "1 while a flush of the kernel table is scheduled (-t).");
		report_end(r);
		report_begin(r, "remote_states");
		report_counter(r, "new", c->n.remote_new, "New states received from the peer.");
		report_counter(r, "updated", c->n.remote_update, "State updates received from the peer.");
		report_counter(r, "deleted", c->n.remote_delete, "State deletions received from the peer.");
		report_counter(r, "deleted_unknown", c->n.remote_delete_unknown,
			       "Deletions received for states the external cache does not have.");
		report_counter(r, "failed", c->n.remote_failed, "States of the peer that could not be stored.");
		report_counter(r, "stale_swept", c->n.remote_swept,
			       "States removed after a peer's restart because it no longer has them.");
		report_flag(r, "sweep_pending", c->sweep_marked,
			    "1 while stale states wait to be swept after a peer's restart.");
		report_counter(r, "injection_failures", c->n.injected_failed,
			       "Writes of received states into the kernel that failed (hot standby).");
		if (c->cfg->sync.mode == CONFIG_MODE_ALARM)
			report_counter(r, "expired", c->expiry.expired,
				       "External states expired (ALARM: the peer stopped refreshing them).");
		report_end(r);
		report_begin(r, "hot_standby");
		report_flag(r, "enabled", c->cfg->sync.hot_standby, "1 if HotStandby is on.");
		report_flag(r, "mirroring", c->mirroring,
			    "1 while received states are written into the kernel as they arrive.");
		report_counter(r, "written_into_kernel", c->n.injected_ok,
			       "Received states written into the kernel as they arrived.");
		report_end(r);
	}
}

void cache_health(struct cache *c, struct cache_health *out)
{
	struct kernel_events_stats ev = { 0 };

	if (c->events)
		kernel_events_get_stats(c->events, &ev);
	*out = (struct cache_health){
		.internal_complete = !c->local_gap.open,
		.external_complete = !c->remote_gap.open,
		.internal_refused = c->local_gap.refused,
		.external_refused = c->remote_gap.refused,
		.overruns = ev.overruns,
		.commit_failures = c->n.committed_failed + c->x.n.committed_failed,
		.write_failures = c->n.injected_failed + c->x.n.write_failed,
	};
}

/*
 * One table in 1.4.7's terms.  ctsyncd's upsert creates what an update
 * does not find, so an update never fails; a deletion fails when the state
 * is not there (`delete_not_found`, counted by the caller).
 */
static void compat_table(struct compat_cache *out, const struct flow_table_stats *st,
			 uint64_t delete_not_found)
{
	*out = (struct compat_cache){
		.objects = (uint64_t)st->active + st->dead,
		.active = st->active,
		.created = st->inserted,
		.create_failed = st->enospc + st->enomem + st->einval,
		.no_memory = st->enomem,
		.no_space = st->enospc,
		.updated = st->updated,
		.deleted = st->deleted,
		.delete_failed = delete_not_found,
		.delete_not_found = delete_not_found,
	};
}

void cache_compat_facts(struct cache *c, bool exps, struct compat_caches *out)
{
	const struct config *cfg = c->cfg;
	struct flow_table_stats st;

	memset(out, 0, sizeof(*out));
	out->stats_mode = cfg->role == CONFIG_ROLE_STATS;
	out->has_external = cfg->role == CONFIG_ROLE_SYNC;
	if (exps) {
		/* Expectations carry no byte or packet counters: no traffic to show. */
		exp_table_stats(c->x.internal, &st);
		compat_table(&out->internal, &st, 0);
		exp_table_stats(c->x.external, &st);
		compat_table(&out->external, &st, c->x.n.remote_delete_unknown);
		return;
	}
	flow_table_stats(c->internal, &st);
	compat_table(&out->internal, &st, c->n.events_unknown);
	out->bypass_internal = c->bypass;
	out->bypass = (struct compat_bypass){
		.created = c->bp.sent_new,
		.updated = c->bp.sent_update,
		.deleted = c->bp.sent_destroy,
	};
	out->inject_external = out->has_external && cfg->sync.disable_external_cache;
	if (out->has_external) {
		flow_table_stats(c->external, &st);
		compat_table(&out->external, &st, c->n.remote_delete_unknown);
	}
	out->inject = (struct compat_inject){
		.created = c->n.injected_new,
		.create_failed = c->n.inject_refused[KERNEL_OP_CREATE],
		.updated = c->n.injected_upd,
		.update_failed = c->n.inject_refused[KERNEL_OP_UPDATE],
		.deleted = c->n.injected_del,
		.delete_failed = c->n.inject_refused[KERNEL_OP_DELETE],
	};
	out->traffic_bytes = c->n.traffic_bytes;
	out->traffic_packets = c->n.traffic_packets;
}

void cache_compat_runtime(struct cache *c, struct compat_runtime *out)
{
	struct kernel_events_stats ev = { 0 };

	if (c->events)
		kernel_events_get_stats(c->events, &ev);
	out->events_received = ev.flows;
	out->events_filtered = c->n.events_filtered;
	out->catch_failed = ev.malformed + ev.truncated;
	out->overruns = ev.overruns;
	out->kernel_flushes = c->n.purges;
	out->kernel_resyncs = c->n.resyncs;
	out->netlink_buffer_bytes = ev.rcvbuf;
}

/* -s cache in 1.4.7's layout. */
static void answer_compat_cache(struct cache *c, struct control_request *req)
{
	struct compat_caches facts;
	struct compat_text t = { 0 };

	cache_compat_facts(c, false, &facts);
	compat_cache(&t, &facts);
	if (t.failed) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
	} else {
		control_request_write(req, t.p, t.len);
	}
	compat_text_free(&t);
}

enum control_result cache_answer_stats(struct control_request *req, void *arg)
{
	struct cache *c = arg;
	struct report *r;
	const char *text;
	size_t len;

	if (control_request_compat(req) && control_request_code(req) == CTL_STATS_CACHE) {
		answer_compat_cache(c, req);
		return CONTROL_DONE;
	}
	r = report_new(control_request_format(req));
	if (!r || (cache_report(c, r), !(text = report_finish(r, &len)))) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
	} else {
		control_request_write(req, text, len);
	}
	report_free(r);
	return CONTROL_DONE;
}
