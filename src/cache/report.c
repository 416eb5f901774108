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
	uint32_t cursor;
};

static void dump_line(struct control_request *req, const char *line, int n, size_t cap, bool xml,
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
			if (flow_table_export(t, h, &c->scratch) < 0)
				continue;
			n = d->xml ? flow_format_xml(line, sizeof(line), &c->scratch, d->opts)
				   : flow_format(line, sizeof(line), &c->scratch, d->opts);
			dump_line(req, line, n, sizeof(line), d->xml, age_of(now, flow_table_updated(t, h)));
		} else {
			struct exp_table *t = d->exps;

			if ((h = exp_table_next(t, &d->cursor)) == 0)
				return true;
			if (exp_table_flags(t, h) & FLOW_ENTRY_DEAD)
				continue;
			n = d->xml ? flow_exp_format_xml(line, sizeof(line), exp_table_get(t, h), 0)
				   : flow_exp_format(line, sizeof(line), exp_table_get(t, h), 0);
			dump_line(req, line, n, sizeof(line), d->xml, age_of(now, exp_table_updated(t, h)));
		}
	}
	return false;
}

/* Stream the dump: the reply follows the client's reading, in bounded parts. */
static enum control_result dump_stream(struct cache *c, struct control_request *req,
				       struct flow_table *flows, struct exp_table *exps,
				       unsigned opts, bool xml)
{
	struct dump_cursor *d = calloc(1, sizeof(*d));

	if (!d) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	*d = (struct dump_cursor){ .c = c, .flows = flows, .exps = exps, .opts = opts, .xml = xml };
	return control_request_stream(req, dump_fill, free, d);
}

enum control_result cache_answer_dump(struct control_request *req, void *arg)
{
	struct cache *c = arg;
	uint32_t code = control_request_code(req);

	switch (code) {
	case CTL_DUMP_INTERNAL_CT:
	case CTL_DUMP_INTERNAL_CT_XML:
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

/* One table's section; `gap`: what it refused and its repairs (NULL: not tracked). */
static void cache_report_table(struct report *r, const char *name, const struct flow_table_stats *st,
			       const struct cache_gap *gap)
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
	if (gap) {
		/* Incomplete: states were refused and their repair has not started yet. */
		report_bool(r, "complete", !gap->open);
		report_u64(r, "refused", gap->refused);
		report_u64(r, "repairs", gap->repairs);
	}
	report_end(r);
}

static void report_table(struct report *r, const char *name, struct flow_table *t,
			 const struct cache_gap *gap)
{
	struct flow_table_stats st;

	flow_table_stats(t, &st);
	cache_report_table(r, name, &st, gap);
}

static void report_exps(struct cache *c, struct report *r)
{
	struct flow_table_stats st;

	exp_table_stats(c->x.internal, &st);
	cache_report_table(r, "internal_expectations", &st, NULL);
	exp_table_stats(c->x.external, &st);
	cache_report_table(r, "external_expectations", &st, NULL);
	report_begin(r, "expectations");
	report_u64(r, "events_new", c->x.n.events_new);
	report_u64(r, "events_destroy", c->x.n.events_destroy);
	report_u64(r, "events_own_write", c->x.n.events_own);
	report_u64(r, "events_malformed", c->x.n.events_malformed);
	report_u64(r, "left_out_helper", c->x.n.filtered_helper);
	report_u64(r, "left_out_no_master", c->x.n.filtered_master);
	report_u64(r, "remote_new", c->x.n.remote_new);
	report_u64(r, "remote_deleted", c->x.n.remote_delete);
	report_u64(r, "remote_deleted_unknown", c->x.n.remote_delete_unknown);
	report_u64(r, "remote_failed", c->x.n.remote_failed);
	report_u64(r, "commits", c->x.n.commits);
	report_u64(r, "committed", c->x.n.committed_ok);
	report_u64(r, "commit_failed", c->x.n.committed_failed);
	report_u64(r, "injected", c->x.n.injected);
	report_u64(r, "write_failed", c->x.n.write_failed);
	report_u64(r, "kernel_loads", c->x.n.loads);
	report_u64(r, "vanished_removed", c->x.n.vanished);
	if (c->x.expiry.timer)
		report_u64(r, "expired", c->x.expiry.expired);
	report_end(r);
}

void cache_report(struct cache *c, struct report *r)
{
	struct kernel_events_stats ev = { 0 };
	struct kernel_write_stats wr;

	report_table(r, "internal_cache", c->internal, &c->local_gap);
	if (c->cfg->role == CONFIG_ROLE_SYNC)
		report_table(r, "external_cache", c->external, &c->remote_gap);
	if (cache_has_exps(c))
		report_exps(c, r);
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
		report_u64(r, "stale_swept", c->n.remote_swept);
		report_bool(r, "sweep_pending", c->sweep_marked);
		report_u64(r, "injection_failures", c->n.injected_failed);
		if (c->cfg->sync.mode == CONFIG_MODE_ALARM)
			report_u64(r, "expired", c->expiry.expired);
		report_end(r);
		report_begin(r, "hot_standby");
		report_bool(r, "enabled", c->cfg->sync.hot_standby);
		report_bool(r, "mirroring", c->mirroring);
		report_u64(r, "written_into_kernel", c->n.injected_ok);
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

enum control_result cache_answer_stats(struct control_request *req, void *arg)
{
	struct cache *c = arg;
	struct report *r = report_new(control_request_wants_json(req) ? REPORT_JSON : REPORT_TEXT);
	const char *text;
	size_t len;

	if (!r || (cache_report(c, r), !(text = report_finish(r, &len)))) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
	} else {
		control_request_write(req, text, len);
	}
	report_free(r);
	return CONTROL_DONE;
}
