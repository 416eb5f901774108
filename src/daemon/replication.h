/*
 * replication.h - the sync engine (FTFW or NOTRACK) between the daemon's
 * caches and the dedicated links, with its control requests (-B, -n,
 * -s network, -s link, -s rsqueue, -s queue).
 */
#ifndef CTSYNCD_REPLICATION_H
#define CTSYNCD_REPLICATION_H

struct caches;
struct config;
struct control_server;
struct loop;
struct replication;
struct report;

/* Open the links and start the engine over the caches.  0 or -errno (logged). */
int replication_start(struct replication **out, const struct config *cfg, struct loop *loop,
		      struct caches *caches);
/* Flush what is queued for the links, stop and free.  Safe on NULL. */
void replication_stop(struct replication *r);
int replication_register(struct replication *r, struct control_server *ctl);
/* The sync sections of -s. */
void replication_report(struct replication *r, struct report *rep);

#endif
