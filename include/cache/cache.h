/*
 * cache/cache.h - the internal cache (this node's kernel states) and the
 * external cache (the peer's), for conntracks and, with ExpectationSync,
 * expectations, with everything that moves states between them and the
 * kernel: events, dumps and polls, direct injection and HotStandby's
 * mirror, commit, flushes and the scheduled purge, dumps and statistics.
 *
 * The module is split by job (src/cache/): local.c and local_exp.c fill
 * the internal caches (bypass.c stands in for the conntrack one with
 * DisableInternalCache), remote.c keeps the external ones, commit.c writes
 * them into the kernel, flush.c empties caches and kernel, report.c
 * answers dumps and statistics, cache.c holds the object's life.
 */
#ifndef CTSYNCD_CACHE_H
#define CTSYNCD_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/server.h"
#include "kernel/kernel.h"

/* Bytes of per-entry user area in the internal cache, for the sync engine's queues. */
#define CACHE_USER_BYTES 24u

struct cache;
struct config;
struct exp_table;
struct flow_exp;
struct flow_full;
struct flow_table;
struct loop;
struct report;

/*
 * Told about every change of the internal conntrack cache that the peer
 * should learn (the sync layer).  Without a listener a destroyed flow is
 * deleted at once; with one it is marked dead and the listener deletes it
 * with cache_forget_dead() once the peer has acknowledged it.
 */
struct cache_listener {
	void (*changed)(void *arg, uint32_t handle, enum kernel_event ev);
	/* `handle` is about to be deleted without the peer being told (flush, -R). */
	void (*forget)(void *arg, uint32_t handle);
	/*
	 * `handle` was inserted without the peer being told (the start-up
	 * dump, -R): ALARM refreshes it all the same.  Optional.
	 */
	void (*loaded)(void *arg, uint32_t handle);
	/*
	 * The external cache refused states (HashLimit, memory) and has room
	 * again: ask the peer for its whole table.  Optional.
	 */
	void (*want_resync)(void *arg);
	/*
	 * DisableInternalCache: no entry is kept and no handle exists.  A
	 * kernel event that passed the Filter is to be sent as it is, now
	 * (`ff` valid during the call only); returns the bytes it took on the
	 * wire, or a negative errno.
	 */
	int (*send)(void *arg, enum kernel_event ev, const struct flow_full *ff);
	/*
	 * DisableInternalCache: events were lost (an overrun): send the whole
	 * kernel table (a bulk, cache_kernel_walk_*()).  Optional.
	 */
	void (*bulk)(void *arg);
	void *arg;
};

/* The same for the internal expectation cache (handles of its own table). */
struct cache_exp_listener {
	void (*changed)(void *arg, uint32_t xh);
	void (*forget)(void *arg, uint32_t xh);         /* about to be deleted untold */
	void *arg;
};

/* Returns 0 or -errno.  `seed` randomises the tables' hashes. */
int cache_new(struct cache **out, const struct config *cfg, struct loop *loop, uint32_t seed);
/*
 * Subscribe to events, or with PollSecs arm the polls instead (no event
 * socket), and load the kernel table into the internal cache (nothing is
 * sent).
 */
int cache_start(struct cache *c);
void cache_set_listener(struct cache *c, const struct cache_listener *l);
/* Ignored without ExpectationSync. */
void cache_set_exp_listener(struct cache *c, const struct cache_exp_listener *l);
/* Finish waiting control requests as failed, stop all kernel work, free.  Safe on NULL. */
void cache_free(struct cache *c);
/* SIGHUP: reopen Stats mode's log of destroyed flows.  0 or -errno. */
int cache_reopen_logs(struct cache *c);
/*
 * A reload changed, in place, the configuration the cache was made with:
 * run the steps of `apply` (CONFIG_APPLY_* of config/diff.h) that concern
 * the caches and the kernel side.  Both caches keep their entries; a
 * lower HashLimit refuses new entries until the count is under it.  After
 * a new Filter, the internal entries it ignores leave the cache in slices,
 * and the peer is told, as if they had ended: the peer then holds what a
 * restart with this Filter would give it.  Each failure is logged; returns
 * the number of steps that failed.
 */
int cache_apply_config(struct cache *c, unsigned apply);

/*
 * DisableInternalCache (Mode NOTRACK): the internal conntrack cache keeps
 * nothing.  Events go to the listener's send(), -i and the bulk sends read
 * the kernel table, -R has nothing to re-read, and -f leaves the kernel
 * alone (doc/protocol.md §4.1).  The internal table exists, empty.
 */
bool cache_internal_disabled(const struct cache *c);
/*
 * DisableInternalCache: a bulk send from the kernel table.  Start (or
 * start over) a walk of it; then each pull sends, through the listener's
 * send() as CT_NEW, the next states the Filter accepts until about
 * `budget` bytes went out, and returns the bytes sent; *over is set once
 * the walk has ended (also when the dump failed, which is logged).  A
 * state whose end an event reported during the walk is not sent.  The
 * kernel hands out its table only as fast as the pulls take it.
 */
void cache_kernel_walk_start(struct cache *c);
size_t cache_kernel_walk_pull(struct cache *c, size_t budget, bool *over);

struct flow_table *cache_internal(struct cache *c);
struct flow_table *cache_external(struct cache *c);
/* The internal expectation table, or NULL when ExpectationSync is off. */
struct exp_table *cache_exp_internal(struct cache *c);

/*
 * A-priori mode: the kernel's current state `ff` of a connection whose
 * packet is held (it has not passed yet, so its event has not come): take
 * it into the internal cache as the coming UPDATE event would, and tell
 * the listener.  Returns the entry's handle, or 0 when the Filter ignores
 * the state, the cache refused it, or there is no internal cache.
 */
uint32_t cache_local_observe(struct cache *c, const struct flow_full *ff);

/* A dead internal entry whose end the peer has acknowledged. */
void cache_forget_dead(struct cache *c, uint32_t handle);
void cache_exp_forget_dead(struct cache *c, uint32_t xh);

/*
 * A state received from the peer (type: WIRE_T_CT_NEW/UPD/DEL): NEW
 * replaces, UPD updates or creates, DEL removes; with DisableExternalCache
 * it is written to the kernel at once instead, and with HotStandby on a
 * backup as well.  Returns 0 or -errno (-ENOSPC: HashLimit), counted either
 * way.  In Mode ALARM an external entry expires CacheTimeout seconds after
 * its last refresh.  `origin` (1..CACHE_ORIGIN_MAX, 0 = unknown) is the
 * peer that sent it: the external cache keeps it with the state, for
 * `-c --origin`, `-e --origin` and the sweep after that peer's restart.
 */
#define CACHE_ORIGIN_MAX 31u
int cache_apply_remote(struct cache *c, uint8_t type, const struct flow_full *ff, unsigned origin);
/* A hint: `ff` will soon be given to cache_apply_remote(); start its table lookup. */
void cache_prefetch_remote(struct cache *c, uint8_t type, const struct flow_full *ff);
/* An expectation from the peer (WIRE_T_EXP_NEW/UPD/DEL).  0 or -errno, counted. */
int cache_apply_remote_exp(struct cache *c, uint8_t type, const struct flow_exp *e);
/*
 * The peer `origin` restarted and sends its table again: mark what the
 * external conntrack cache holds of it now.  cache_external_sweep(), once
 * that resend is over, removes what that peer did not store again since
 * the mark, in slices; until then nothing is lost (mark and sweep: no
 * message empties the cache), and the states of other peers never go.
 */
void cache_external_mark(struct cache *c, unsigned origin);
bool cache_external_marked(const struct cache *c);
void cache_external_sweep(struct cache *c);

/*
 * Who answers `--origin ADDRESS` (the daemon's replication, which knows
 * its peers' addresses): the origin number of that peer, or -ENOENT with
 * a sentence in `why` (the peers it knows, say).
 */
typedef int (*cache_origin_fn)(void *arg, const struct ctl_origin *addr, char *why, size_t cap);
void cache_set_origin_resolver(struct cache *c, cache_origin_fn fn, void *arg);

/* External states held from each origin: counts[o] for o in 0..CACHE_ORIGIN_MAX (a walk of the table). */
void cache_external_by_origin(struct cache *c, uint32_t counts[CACHE_ORIGIN_MAX + 1]);

/* The cache sections of -s and -s cache. */
void cache_report(struct cache *c, struct report *r);

/*
 * The caches' facts for the text of conntrackd 1.4.7 (control/compat_report.h):
 * the conntrack caches, or the expectation caches if `exps` (ExpectationSync
 * on); and the kernel side of `-s runtime` (the fields of *out it knows;
 * the others are left as they are).
 */
struct compat_caches;
struct compat_runtime;
void cache_compat_facts(struct cache *c, bool exps, struct compat_caches *out);
void cache_compat_runtime(struct cache *c, struct compat_runtime *out);

/* What `-s health` needs of the caches: totals since start, and whether a limit left a gap. */
struct cache_health {
	bool internal_complete, external_complete;  /* no refused state waits for its repair */
	uint64_t internal_refused, external_refused;
	uint64_t overruns;                          /* netlink event overruns (ENOBUFS) */
	uint64_t commit_failures;                   /* states a commit could not write */
	uint64_t write_failures;                    /* injection and HotStandby mirror writes that failed */
};
void cache_health(struct cache *c, struct cache_health *out);

/*
 * Control requests.  The daemon's table of requests (src/daemon/requests.c)
 * routes each code to one of these with the cache as `arg`.
 */
/* -i, -e (conntracks and expectations, text and XML). */
enum control_result cache_answer_dump(struct control_request *req, void *arg);
/* -s cache, -s expect. */
enum control_result cache_answer_stats(struct control_request *req, void *arg);
/* -c, -c ct, -c expect: answered when the commit is done. */
enum control_result cache_answer_commit(struct control_request *req, void *arg);
/* -f, -f internal, -f external (and the legacy flush code). */
enum control_result cache_answer_flush(struct control_request *req, void *arg);
/* -F, -F ct, -F expect: answered when the kernel flush is done. */
enum control_result cache_answer_kernel_flush(struct control_request *req, void *arg);
/* -t: schedule the purge (and turn HotStandby's mirror on). */
enum control_result cache_answer_schedule_purge(struct control_request *req, void *arg);
/* -R, -R ct, -R expect: answered when the kernel table is re-read. */
enum control_result cache_answer_redump(struct control_request *req, void *arg);

#endif
