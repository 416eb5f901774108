/*
 * health.h - `ctsyncd -s health`: the daemon's facts judged by the
 * thresholds of Sync { Health } (control/health.h), and the watch that
 * tells when its failure counters last grew.
 */
#ifndef CTSYNCD_HEALTH_H
#define CTSYNCD_HEALTH_H

#include "control/server.h"

struct cache;
struct config;
struct health;
struct loop;
struct replication;

/*
 * Start watching: the failure counters are sampled every second, so that
 * "recently" means within RecentErrors seconds of the failure, however
 * often the monitoring asks.  0 or -ENOMEM.
 */
int health_start(struct health **out, const struct config *cfg, struct loop *loop,
		 struct cache *cache, struct replication *replication);
/* Safe on NULL. */
void health_stop(struct health *h);
/* -s health, with the health as `arg` (requests.c): one line, the state first. */
enum control_result health_answer(struct control_request *req, void *arg);

#endif
