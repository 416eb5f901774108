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
struct config_sync;
struct health_facts;
struct health_peer;
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
 * A reload changed, in place, the configuration the replication runs
 * with: apply CONFIG_APPLY_SYNC (the engine's queue size, window,
 * encoding, RefreshTime) and CONFIG_APPLY_LINKS.  Sequence space, queues
 * and peer sessions stay.  Returns the number of steps that failed (logged).
 */
int replication_apply_config(struct replication *r, unsigned apply);
/* Read the Key files of `s` again and seal with them (a key roll).  0 or -errno (logged). */
int replication_reload_keys(struct replication *r, const struct config_sync *s);
/*
 * The sync sections of -s, the peers among them; with `everything`
 * (-s --prometheus) also those of -s network: malformed messages by
 * reason, the envelope, the links.
 */
void replication_report(struct replication *r, struct report *rep, bool everything);

/* The sync side's facts for the text of conntrackd 1.4.7 (control/compat_report.h). */
struct compat_sync;
void replication_compat_facts(struct replication *r, struct compat_sync *out);
/*
 * The peers now, at most `max` of them (UDP, TCP: the one peer, even
 * never heard; multicast: every address heard on the group, down ones
 * too).  Returns how many.
 */
unsigned replication_peers(struct replication *r, struct health_peer *out, unsigned max);
/* What `-s health` needs of the sync side: the peers, the mode, the backlog. */
void replication_health(struct replication *r, struct health_facts *f);

#endif
