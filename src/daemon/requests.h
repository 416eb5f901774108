/*
 * requests.h - the daemon's answers on the control socket.
 *
 * Every request code of conntrackd 1.4.7 gets an answer: the subsystems
 * that exist register real handlers; the others answer "not available"
 * with the reason, never a silent success.
 */
#ifndef CTSYNCD_REQUESTS_H
#define CTSYNCD_REQUESTS_H

#include <stdint.h>
#include <time.h>

struct cache;
struct health;
struct replication;
struct config;
struct control_server;
struct loop;

struct requests_ctx {
	const struct config *cfg;
	struct loop *loop;
	struct control_server *ctl;
	struct cache *cache;        /* NULL without Sync or Stats */
	struct replication *replication; /* NULL without Sync */
	struct health *health;      /* NULL without Sync */
	uint64_t started_ms;        /* loop clock at start */
	time_t started_wall;
};

void requests_init(struct requests_ctx *ctx, const struct config *cfg, struct loop *loop);
/*
 * Register every code on `ctl`, each with the subsystem that answers it,
 * or with "not available" while that subsystem is not running: call it
 * again once `cache` or `replication` is set.  Returns 0 or -errno.
 */
int requests_register(struct requests_ctx *ctx, struct control_server *ctl);
/* "sync (FTFW)", "stats", "control socket only". */
const char *requests_role_name(const struct config *cfg);

#endif
