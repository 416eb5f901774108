/*
 * health.c - `ctsyncd -s health` (health.h).
 *
 * The daemon judges, not the client: the thresholds are the daemon's own
 * configuration (the one it runs with, whichever file a client names),
 * and "recently" needs the times of past failures, which only the daemon
 * saw.  The client relays the line and exits with the state it starts
 * with (main.c).
 */
#include "build-config.h"
#include "health.h"

#include <errno.h>
#include <stdlib.h>

#include "cache/cache.h"
#include "config/config.h"
#include "control/health.h"
#include "loop/loop.h"
#include "replication.h"

#define SAMPLE_MS 1000u

struct health {
	const struct config *cfg;
	struct loop *loop;
	struct cache *cache;
	struct replication *replication;
	struct loop_timer *timer;
	uint64_t started_ms;
	struct health_watch overruns, commit_failures, write_failures;
};

static void sample(struct health *h, struct cache_health *ch)
{
	uint64_t now = loop_now_ms(h->loop);

	cache_health(h->cache, ch);
	health_watch_sample(&h->overruns, ch->overruns, now);
	health_watch_sample(&h->commit_failures, ch->commit_failures, now);
	health_watch_sample(&h->write_failures, ch->write_failures, now);
}

static void on_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct health *h = arg;
	struct cache_health ch;

	sample(h, &ch);
	loop_timer_arm(timer, SAMPLE_MS);
}

int health_start(struct health **out, const struct config *cfg, struct loop *loop,
		 struct cache *cache, struct replication *replication)
{
	struct health *h = calloc(1, sizeof(*h));
	struct cache_health ch;

	if (!h)
		return -ENOMEM;
	*h = (struct health){ .cfg = cfg, .loop = loop, .cache = cache, .replication = replication,
			      .started_ms = loop_now_ms(loop) };
	h->timer = loop_timer_new(loop, on_timer, h);
	if (!h->timer) {
		free(h);
		return -ENOMEM;
	}
	sample(h, &ch);
	loop_timer_arm(h->timer, SAMPLE_MS);
	*out = h;
	return 0;
}

void health_stop(struct health *h)
{
	if (!h)
		return;
	loop_timer_free(h->timer);
	free(h);
}

enum control_result health_answer(struct control_request *req, void *arg)
{
	struct health *h = arg;
	const struct config_health *lim = &h->cfg->sync.health;
	struct health_limits limits = {
		.peer_silent_warning = lim->peer_silent_warning,
		.backlog_warning = lim->backlog_warning,
		.backlog_critical = lim->backlog_critical,
		.recent_errors = lim->recent_errors,
	};
	struct health_facts f = { 0 };
	struct cache_health ch;
	char line[HEALTH_LINE_MAX];
	uint64_t now = loop_now_ms(h->loop);

	sample(h, &ch);
	replication_health(h->replication, &f);
	f.hot_standby = h->cfg->sync.hot_standby;
	f.internal_complete = ch.internal_complete;
	f.external_complete = ch.external_complete;
	f.internal_refused = ch.internal_refused;
	f.external_refused = ch.external_refused;
	f.overruns = ch.overruns;
	f.commit_failures = ch.commit_failures;
	f.write_failures = ch.write_failures;
	f.overrun_age_ms = health_watch_age(&h->overruns, now);
	f.commit_failure_age_ms = health_watch_age(&h->commit_failures, now);
	f.write_failure_age_ms = health_watch_age(&h->write_failures, now);
	health_judge(&f, &limits, line, sizeof(line));
	control_request_printf(req, "%s", line);
	return CONTROL_DONE;
}
