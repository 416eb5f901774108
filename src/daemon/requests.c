/*
 * requests.c - control requests handled by the daemon itself, and the
 * "not available" answers for subsystems this configuration (or this
 * version of ctsyncd) does not run.
 */
#include "build-config.h"
#include "requests.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "config/config.h"
#include "control/compat_report.h"
#include "control/server.h"
#include "loop/log.h"
#include "loop/loop.h"
#include "health.h"
#include "replication.h"
#include "control/report.h"

/* What a request needs in order to make sense. */
enum need {
	NEED_NOTHING,     /* the daemon answers it itself */
	NEED_KERNEL,      /* the internal table and ctnetlink (Sync or Stats) */
	NEED_EXTERNAL,    /* the external table (Sync only) */
	NEED_SYNC,        /* the sync protocol and links (Sync only) */
	NEED_EXPECT,      /* expectation sync (Sync with ExpectationSync on) */
};

/* Who answers a request: the object its handler is given. */
enum owner { OWNER_DAEMON, OWNER_CACHE, OWNER_SYNC, OWNER_HEALTH };

static enum control_result answer_stats(struct control_request *req, void *arg);
static enum control_result answer_process(struct control_request *req, void *arg);
static enum control_result answer_kill(struct control_request *req, void *arg);
static enum control_result answer_config(struct control_request *req, void *arg);
static enum control_result answer_stats_expect(struct control_request *req, void *arg);

/*
 * Every request code of conntrackd 1.4.7 and where it is answered: the one
 * place to look.  A code whose owner this configuration does not run (or
 * whose need it does not meet) answers "not available" with the reason.
 */
static const struct route {
	uint32_t code;
	enum need need;
	enum owner owner;
	control_handler_fn handler;
} routes[] = {
	{ CTL_KILL, NEED_NOTHING, OWNER_DAEMON, answer_kill },
	{ CTL_STATS, NEED_NOTHING, OWNER_DAEMON, answer_stats },
	{ CTL_STATS_RUNTIME, NEED_NOTHING, OWNER_DAEMON, answer_stats },
	{ CTL_STATS_PROCESS, NEED_NOTHING, OWNER_DAEMON, answer_process },
	{ CTL_DUMP_CONFIG, NEED_NOTHING, OWNER_DAEMON, answer_config },

	{ CTL_DUMP_INTERNAL_CT, NEED_KERNEL, OWNER_CACHE, cache_answer_dump },
	{ CTL_DUMP_INTERNAL_CT_XML, NEED_KERNEL, OWNER_CACHE, cache_answer_dump },
	{ CTL_DUMP_EXTERNAL_CT, NEED_EXTERNAL, OWNER_CACHE, cache_answer_dump },
	{ CTL_DUMP_EXTERNAL_CT_XML, NEED_EXTERNAL, OWNER_CACHE, cache_answer_dump },
	{ CTL_DUMP_INTERNAL_EXP, NEED_EXPECT, OWNER_CACHE, cache_answer_dump },
	{ CTL_DUMP_EXTERNAL_EXP, NEED_EXPECT, OWNER_CACHE, cache_answer_dump },
	{ CTL_DUMP_INTERNAL_EXP_XML, NEED_EXPECT, OWNER_CACHE, cache_answer_dump },
	{ CTL_DUMP_EXTERNAL_EXP_XML, NEED_EXPECT, OWNER_CACHE, cache_answer_dump },
	{ CTL_STATS_CACHE, NEED_KERNEL, OWNER_CACHE, cache_answer_stats },
	{ CTL_STATS_EXPECT, NEED_EXPECT, OWNER_DAEMON, answer_stats_expect },
	{ CTL_COMMIT_ALL, NEED_EXTERNAL, OWNER_CACHE, cache_answer_commit },
	{ CTL_COMMIT_CT, NEED_EXTERNAL, OWNER_CACHE, cache_answer_commit },
	{ CTL_COMMIT_EXP, NEED_EXPECT, OWNER_CACHE, cache_answer_commit },
	{ CTL_FLUSH_ALL, NEED_KERNEL, OWNER_CACHE, cache_answer_flush },
	{ CTL_FLUSH_INTERNAL, NEED_KERNEL, OWNER_CACHE, cache_answer_flush },
	{ CTL_FLUSH_EXTERNAL, NEED_EXTERNAL, OWNER_CACHE, cache_answer_flush },
	{ CTL_FLUSH_CACHES_LEGACY, NEED_KERNEL, OWNER_CACHE, cache_answer_flush },
	{ CTL_FLUSH_KERNEL_CT, NEED_KERNEL, OWNER_CACHE, cache_answer_kernel_flush },
	{ CTL_FLUSH_KERNEL_ALL, NEED_KERNEL, OWNER_CACHE, cache_answer_kernel_flush },
	{ CTL_FLUSH_KERNEL_EXP, NEED_EXPECT, OWNER_CACHE, cache_answer_kernel_flush },
	{ CTL_SCHEDULE_PURGE, NEED_EXTERNAL, OWNER_CACHE, cache_answer_schedule_purge },
	{ CTL_RESYNC_KERNEL_CT, NEED_KERNEL, OWNER_CACHE, cache_answer_redump },
	{ CTL_RESYNC_KERNEL_ALL, NEED_KERNEL, OWNER_CACHE, cache_answer_redump },
	{ CTL_RESYNC_KERNEL_EXP, NEED_EXPECT, OWNER_CACHE, cache_answer_redump },

	{ CTL_SEND_BULK, NEED_SYNC, OWNER_SYNC, replication_answer_bulk },
	{ CTL_REQUEST_RESYNC, NEED_SYNC, OWNER_SYNC, replication_answer_resync },
	{ CTL_STATS_NETWORK, NEED_SYNC, OWNER_SYNC, replication_answer_stats },
	{ CTL_STATS_LINK, NEED_SYNC, OWNER_SYNC, replication_answer_stats },
	{ CTL_STATS_RSQUEUE, NEED_SYNC, OWNER_SYNC, replication_answer_stats },
	{ CTL_STATS_QUEUE, NEED_SYNC, OWNER_SYNC, replication_answer_stats },
	{ CTL_STATS_HEALTH, NEED_SYNC, OWNER_HEALTH, health_answer },
};

const char *requests_role_name(const struct config *cfg)
{
	switch (cfg->role) {
	case CONFIG_ROLE_SYNC:
		switch (cfg->sync.mode) {
		case CONFIG_MODE_FTFW:
			return "sync (FTFW)";
		case CONFIG_MODE_NOTRACK:
			return "sync (NOTRACK)";
		case CONFIG_MODE_ALARM:
			return "sync (ALARM)";
		}
		break;
	case CONFIG_ROLE_STATS:
		return "stats";
	case CONFIG_ROLE_NONE:
		break;
	}
	return "control socket only";
}

/* Why a request cannot be served by this daemon, in one sentence. */
static const char *unavailable_reason(const struct config *cfg, enum need need)
{
	if (cfg->role == CONFIG_ROLE_NONE)
		return "the configuration has neither a Sync nor a Stats block, so the daemon only serves this socket";
	if (cfg->role == CONFIG_ROLE_STATS && need != NEED_KERNEL)
		return "the daemon runs in Stats mode, which has no peer and no external cache";
	if (need == NEED_EXPECT && !cfg->sync.expectation_sync)
		return "expectation sync is off (Sync { Options { ExpectationSync on } })";
	switch (need) {
	case NEED_NOTHING:
	case NEED_KERNEL:
	case NEED_EXTERNAL:
		return "not implemented in this version of ctsyncd";
	case NEED_EXPECT:
		return "not implemented for expectations in this version of ctsyncd";
	case NEED_SYNC:
		return "the sync protocol is not implemented in this version of ctsyncd";
	}
	return "not implemented";
}

static bool is_expect_dump(uint32_t code)
{
	switch (code & CTL_CODE_MASK) {
	case CTL_DUMP_INTERNAL_EXP:
	case CTL_DUMP_EXTERNAL_EXP:
	case CTL_DUMP_INTERNAL_EXP_XML:
	case CTL_DUMP_EXTERNAL_EXP_XML:
		return true;
	default:
		return false;
	}
}

static enum control_result answer_unavailable(struct control_request *req, void *arg)
{
	struct requests_ctx *ctx = arg;
	uint32_t code = control_request_code(req);
	enum need need = NEED_KERNEL;

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].code == code)
			need = routes[i].need;
	/*
	 * A sync daemon without ExpectationSync has no expectations to show
	 * or act on, and says so as conntrackd 1.4.7 does: done (exit 0), the
	 * dumps empty (scripts read them), the other requests with a note.
	 */
	/*
	 * 1.4.7 answers the statistics it has not (expectations without
	 * ExpectationSync, the sync side in Stats mode) with nothing, and so
	 * does its layout here; --verbose and --json say why.  -s health is
	 * ctsyncd's own: a monitor must learn that it cannot be answered.
	 */
	if (ctl_request_is_stats(code) && code != CTL_STATS_HEALTH && control_request_compat(req) &&
	    ctx->cfg->role != CONFIG_ROLE_NONE)
		return CONTROL_DONE;
	if (need == NEED_EXPECT && ctx->cfg->role == CONFIG_ROLE_SYNC && !ctx->cfg->sync.expectation_sync) {
		if (!is_expect_dump(code))
			control_request_printf(req, "ctsyncd: '%s': no expectations, %s\n", ctl_request_name(code),
					       unavailable_reason(ctx->cfg, need));
		return CONTROL_DONE;
	}
	control_request_printf(req, "ctsyncd: '%s' is not available: %s\n", ctl_request_name(code),
			       unavailable_reason(ctx->cfg, need));
	control_request_set_status(req, CTL_STATUS_UNAVAILABLE);
	return CONTROL_DONE;
}

static void send_report(struct control_request *req, struct report *r)
{
	size_t len;
	const char *text = report_finish(r, &len);

	if (!text) {
		control_request_printf(req, "ctsyncd: out of memory while building statistics\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
		return;
	}
	control_request_write(req, text, len);
}

static void report_daemon(struct requests_ctx *ctx, struct report *r)
{
	uint64_t uptime = (loop_now_ms(ctx->loop) - ctx->started_ms) / 1000u;

	report_begin(r, "daemon");
	report_info(r, "version", PACKAGE_VERSION);
	report_gauge(r, "pid", (uint64_t)getpid(), "Process id of the daemon.");
	report_info(r, "config", ctx->cfg->path);
	report_info(r, "role", requests_role_name(ctx->cfg));
	report_time(r, "started", ctx->started_wall, "When the daemon started.");
	report_gauge(r, "uptime_seconds", uptime, "Seconds since the daemon started.");
	report_end(r);
}

static void report_control(struct requests_ctx *ctx, struct report *r)
{
	const struct control_server_stats *s = control_server_stats(ctx->ctl);

	report_begin(r, "control_socket");
	report_info(r, "path", ctx->cfg->general.unix_path);
	report_counter(r, "connections", s->connections, "Clients accepted on the control socket.");
	report_counter(r, "requests", s->requests, "Requests read.");
	report_counter(r, "unknown_requests", s->unknown, "Requests with a code the daemon does not know.");
	report_counter(r, "bad_requests", s->bad_requests,
		       "Clients closed or timed out before a whole request code.");
	report_counter(r, "write_errors", s->write_errors,
		       "Clients gone or timed out before their whole answer.");
	report_counter(r, "refused", s->refused, "Clients refused: no place left and no idle connection to close.");
	report_counter(r, "refused_credentials", s->refused_credentials,
		       "Clients refused because they may not use the socket.");
	report_counter(r, "evicted_idle", s->evicted_idle, "Idle connections closed to make room.");
	report_counter(r, "streams", s->streams, "Dumps streamed.");
	report_gauge(r, "pending", s->pending, "Requests waiting for their answer (a running commit, say).");
	report_end(r);
}

static struct report *new_report(struct control_request *req)
{
	struct report *r = report_new(control_request_format(req));

	if (!r) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
	}
	return r;
}

/* ---- conntrackd 1.4.7's text (control/compat_report.h) ---------------------------- */

static void send_compat(struct control_request *req, struct compat_text *t)
{
	if (t->failed) {
		control_request_printf(req, "ctsyncd: out of memory while building statistics\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
	} else if (t->len > 0) {
		control_request_write(req, t->p, t->len);
	}
	compat_text_free(t);
}

/* -s, -s ct and -s expect: the caches (of conntracks or of expectations), the link, the messages. */
static void compat_answer_summary(struct requests_ctx *ctx, struct control_request *req, bool exps)
{
	struct compat_text t = { 0 };
	struct compat_caches caches = { 0 };
	struct compat_sync sync;

	if (ctx->cache)
		cache_compat_facts(ctx->cache, exps, &caches);
	if (ctx->replication)
		replication_compat_facts(ctx->replication, &sync);
	compat_summary(&t, &caches, ctx->replication ? &sync : NULL);
	send_compat(req, &t);
}

/*
 * -s runtime.  ctsyncd never forks and waits in epoll, not select: the
 * child and select/wait lines stay 0.  A local read that failed is a
 * client gone or silent before its whole request code.
 */
static void compat_answer_runtime(struct requests_ctx *ctx, struct control_request *req)
{
	const struct control_server_stats *s = control_server_stats(ctx->ctl);
	struct compat_text t = { 0 };
	struct compat_runtime rt = { 0 };

	rt.uptime_seconds = (loop_now_ms(ctx->loop) - ctx->started_ms) / 1000u;
	if (ctx->cache)
		cache_compat_runtime(ctx->cache, &rt);
	rt.local_read_failed = s->bad_requests;
	rt.local_unknown = s->unknown;
	compat_runtime(&t, &rt);
	send_compat(req, &t);
}

/* -s expect: the expectation caches (ExpectationSync on; route_target() sees to it). */
static enum control_result answer_stats_expect(struct control_request *req, void *arg)
{
	struct requests_ctx *ctx = arg;

	if (!control_request_compat(req))
		return cache_answer_stats(req, ctx->cache);
	compat_answer_summary(ctx, req, true);
	return CONTROL_DONE;
}

/* -s, and -s runtime: everything this daemon has to tell. */
static enum control_result answer_stats(struct control_request *req, void *arg)
{
	struct requests_ctx *ctx = arg;
	struct report *r;

	if (control_request_compat(req)) {
		if (control_request_code(req) == CTL_STATS_RUNTIME)
			compat_answer_runtime(ctx, req);
		else
			compat_answer_summary(ctx, req, false);
		return CONTROL_DONE;
	}
	r = new_report(req);
	if (!r)
		return CONTROL_DONE;
	report_daemon(ctx, r);
	if (ctx->cache)
		cache_report(ctx->cache, r);
	/* Metrics are scraped from -s alone: they hold everything. */
	if (ctx->replication)
		replication_report(ctx->replication, r,
				   control_request_format(req) == REPORT_PROMETHEUS);
	report_control(ctx, r);
	send_report(req, r);
	report_free(r);
	return CONTROL_DONE;
}

/*
 * -s process: conntrackd forks children for dumps and flushes; ctsyncd
 * never forks.  1.4.7 lists its running children, one line each: here
 * never any, so its text is empty.
 */
static enum control_result answer_process(struct control_request *req, void *arg)
{
	struct report *r;

	(void)arg;
	if (control_request_compat(req))
		return CONTROL_DONE;
	r = new_report(req);
	if (!r)
		return CONTROL_DONE;
	report_begin(r, "process");
	report_gauge(r, "children_running", 0, "Child processes running: ctsyncd never forks, always 0.");
	report_counter(r, "children_started", 0, "Child processes started: ctsyncd never forks, always 0.");
	report_text(r, "note", "ctsyncd serves dumps and flushes from its event loop, without forking");
	report_end(r);
	send_report(req, r);
	report_free(r);
	return CONTROL_DONE;
}

static enum control_result answer_kill(struct control_request *req, void *arg)
{
	struct requests_ctx *ctx = arg;

	log_notice("exit requested on the control socket (-k)");
	control_request_printf(req, "ctsyncd (pid %d) is exiting\n", (int)getpid());
	loop_stop(ctx->loop);
	return CONTROL_DONE;
}

/*
 * The configuration in effect, defaults included, in conntrackd.conf
 * syntax: what the file said at start and at each reload, except the
 * options that wait for a restart.  `--check` reads it back and diffs.
 */
static enum control_result answer_config(struct control_request *req, void *arg)
{
	struct requests_ctx *ctx = arg;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
		return CONTROL_DONE;
	}
	config_print(ctx->cfg, f);
	if (fclose(f) != 0) {
		control_request_printf(req, "ctsyncd: out of memory\n");
		control_request_set_status(req, CTL_STATUS_FAILED);
	} else {
		control_request_write(req, text, len);
	}
	free(text);
	return CONTROL_DONE;
}

void requests_init(struct requests_ctx *ctx, const struct config *cfg, struct loop *loop)
{
	ctx->cfg = cfg;
	ctx->loop = loop;
	ctx->started_ms = loop_now_ms(loop);
	ctx->started_wall = time(NULL);
}

/* The object that answers `rt`, or NULL where this daemon cannot. */
static void *route_target(struct requests_ctx *ctx, const struct route *rt)
{
	const struct config *cfg = ctx->cfg;

	switch (rt->need) {
	case NEED_NOTHING:
	case NEED_KERNEL:
		break;
	case NEED_EXTERNAL:
	case NEED_SYNC:
		if (cfg->role != CONFIG_ROLE_SYNC)
			return NULL;
		break;
	case NEED_EXPECT:
		if (cfg->role != CONFIG_ROLE_SYNC || !cfg->sync.expectation_sync)
			return NULL;
		break;
	}
	switch (rt->owner) {
	case OWNER_DAEMON:
		return ctx;
	case OWNER_CACHE:
		return ctx->cache;
	case OWNER_SYNC:
		return ctx->replication;
	case OWNER_HEALTH:
		return ctx->health;
	}
	return NULL;
}

int requests_register(struct requests_ctx *ctx, struct control_server *ctl)
{
	int err = 0;

	ctx->ctl = ctl;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		void *target = route_target(ctx, &routes[i]);

		if (target)
			err |= control_server_register(ctl, routes[i].code, routes[i].handler, target);
		else
			err |= control_server_register(ctl, routes[i].code, answer_unavailable, ctx);
	}
	return err ? -EINVAL : 0;
}
