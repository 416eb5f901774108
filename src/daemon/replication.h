/*
 * replication.h - the sync engine (FTFW or NOTRACK) between the daemon's
 * caches and the dedicated links, with its control requests (-B, -n,
 * -s network, -s link, -s rsqueue, -s queue).
 */
#ifndef CTSYNCD_REPLICATION_H
#define CTSYNCD_REPLICATION_H

#include "control/server.h"

struct cache;
struct config;
struct loop;
struct replication;
struct report;

/* Open the links and start the engine over the caches.  0 or -errno (logged). */
int replication_start(struct replication **out, const struct config *cfg, struct loop *loop,
		      struct cache *caches);
/* Flush what is queued for the links, stop and free.  Safe on NULL. */
void replication_stop(struct replication *r);
/* -B, -n, and -s network / link / rsqueue / queue, with the replication as `arg` (requests.c). */
enum control_result replication_answer_bulk(struct control_request *req, void *arg);
enum control_result replication_answer_resync(struct control_request *req, void *arg);
enum control_result replication_answer_stats(struct control_request *req, void *arg);
/*
 * The sync sections of -s; with `everything` (-s --prometheus) also those
 * of -s network: malformed messages by reason, the envelope, the links.
 */
void replication_report(struct replication *r, struct report *rep, bool everything);

#endif
