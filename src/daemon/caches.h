/*
 * caches.h - the daemon's internal cache (local kernel states) and external
 * cache (the peer's states), and everything that moves states between them
 * and the kernel: events, dumps, commit, direct injection, flushes, the
 * scheduled purge, and the control requests that drive them.
 */
#ifndef CTSYNCD_CACHES_H
#define CTSYNCD_CACHES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel.h"

/* Bytes of per-entry user area in the internal cache, for the sync engine's queues. */
#define CACHES_USER_BYTES 24u

struct caches;
struct config;
struct control_server;
struct expects;
struct flow_full;
struct flow_table;
struct loop;
struct report;

/*
 * Told about every change of the internal cache that the peer should learn
 * (the sync layer).  Without a listener a destroyed flow is deleted at once;
 * with one it is marked dead and the listener deletes it with
 * caches_forget_dead() once the peer has acknowledged it.
 */
struct caches_listener {
	void (*changed)(void *arg, uint32_t handle, enum kernel_event ev);
	/* `handle` is about to be deleted without the peer being told (flush, -R). */
	void (*forget)(void *arg, uint32_t handle);
	/*
	 * `handle` was inserted without the peer being told (the start-up
	 * dump, -R): ALARM refreshes it all the same.  Optional.
	 */
	void (*loaded)(void *arg, uint32_t handle);
	void *arg;
};

/* Returns 0 or -errno.  `seed` randomises the tables' hashes. */
int caches_new(struct caches **out, const struct config *cfg, struct loop *loop, uint32_t seed);
/*
 * Subscribe to events, or with PollSecs arm the polls instead (no event
 * socket), and load the kernel table into the internal cache (nothing is
 * sent).
 */
int caches_start(struct caches *c);
void caches_set_listener(struct caches *c, const struct caches_listener *l);
/* Finish waiting control requests as failed, stop all kernel work, free. */
void caches_free(struct caches *c);

/* Answer -i -e -c -f -F -R -t and -s cache on `ctl`. */
int caches_register(struct caches *c, struct control_server *ctl);

struct flow_table *caches_internal(struct caches *c);
/* SIGHUP: reopen Stats mode's log of destroyed flows.  0 or -errno. */
int caches_reopen_logs(struct caches *c);
/* The expectation caches (expects.h), or NULL when ExpectationSync is off. */
struct expects *caches_expects(struct caches *c);
struct flow_table *caches_external(struct caches *c);

/* A dead internal entry whose end the peer has acknowledged. */
void caches_forget_dead(struct caches *c, uint32_t handle);

/*
 * A state received from the peer (type: WIRE_T_CT_NEW/UPD/DEL): NEW
 * replaces, UPD updates or creates, DEL removes; with DisableExternalCache
 * it is written to the kernel at once instead.  Returns 0 or -errno
 * (-ENOSPC: HashLimit), counted either way.  In Mode ALARM an external
 * entry expires CacheTimeout seconds after its last refresh: a loop timer
 * sweeps the table in slices (caches.c), and -s cache counts them.
 */
int caches_apply_remote(struct caches *c, uint8_t type, const struct flow_full *ff);
/* A hint: `ff` will soon be given to caches_apply_remote(); start its table lookup. */
void caches_prefetch_remote(struct caches *c, uint8_t type, const struct flow_full *ff);

/* Empty the external cache (the peer restarted and will send everything again). */
void caches_flush_external(struct caches *c);

/* The cache sections of -s and -s cache. */
void caches_report(struct caches *c, struct report *r);
/*
 * One line of a -i / -e dump (`n` as the formatter returned, of a `cap`-byte
 * buffer): XML as it is, text with the entry's age; also for expectations.
 */
struct control_request;
void caches_dump_line(struct control_request *req, const char *line, int n, size_t cap, bool xml,
		      uint32_t age);
/* One table's section of those (also for the expectation tables). */
struct flow_table_stats;
void caches_report_table(struct report *r, const char *name, const struct flow_table_stats *st);

#endif
