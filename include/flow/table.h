/*
 * flow/table.h - the tables of flows: the internal cache (local kernel
 * states) and the external cache (the peer's states).
 *
 * A table maps a key (family, original tuple, zone: flow_tuple_equal and
 * flow_tuple_hash) to an entry.  An entry is named by a handle, a uint32
 * that stays valid, and keeps naming the same entry, from its insertion to
 * its deletion; 0 is never a handle, so callers may use it as "none" in
 * their own links.  Handles of deleted entries are recycled.
 *
 * Each entry holds:
 *  - the `struct flow` (64 bytes), copied from what the caller upserts;
 *  - its flow_ext, out of line, only when the flow has FLOW_A_EXT_MASK bits;
 *  - its labels, interned: one copy per distinct label set per table;
 *  - the time of its last update (uint32 seconds of the caller's clock);
 *  - flags (FLOW_ENTRY_DEAD, FLOW_ENTRY_UPDATED);
 *  - a user area of 0..32 bytes chosen at creation (8-byte aligned), zeroed
 *    at insertion and otherwise never touched by the table: the sync layer
 *    keeps its queue links and sequence numbers there, so queueing a flow
 *    allocates nothing.
 *
 * Memory comes from malloc/realloc only when a chunk, the index or the
 * labels pool has to grow; in steady state (inserts balanced by deletes)
 * no operation allocates.  A plain state (no ext, no labels) costs
 * 72 + user bytes (rounded up to 8) in the arena, plus its share of the
 * index: 8 bytes per bucket at a load between 3/8 and 3/4, so 11..21
 * bytes.  Measured at 1M states with a 16-byte user area: 105 bytes per
 * state (88 + 16.8), by flow_table_memory() and by RSS alike.  A state
 * with NAT, helper or master adds a 140-byte ext slot; labels add nothing
 * per state once their set is stored.
 *
 * Pure code: no system calls, no clock, no randomness (the seed is the
 * caller's).  Not thread-safe.  Pointers returned by the getters are valid
 * until the entry is deleted or upserted again (the struct flow and the user
 * area until the entry is deleted); the table never moves an entry.
 */
#ifndef CTSYNCD_FLOW_TABLE_H
#define CTSYNCD_FLOW_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow/flow.h"

struct flow_table;

#define FLOW_TABLE_USER_MAX 32u                 /* bytes of user area, at most */
#define FLOW_TABLE_DEFAULT_BUCKETS 65536u       /* HashSize's default */

struct flow_table_options {
	/*
	 * Initial index buckets (HashSize), rounded up to a power of two,
	 * at least 16, and not more than the limit needs.  The index doubles
	 * when it is 3/4 full.  0 = FLOW_TABLE_DEFAULT_BUCKETS.
	 */
	uint32_t buckets;
	/* HashLimit: most entries (live and dead) at once.  0 = no limit. */
	uint32_t limit;
	/* Hash seed: draw it at random (getrandom) so peers cannot aim collisions. */
	uint32_t seed;
	/* Size of the user area, 0..FLOW_TABLE_USER_MAX. */
	uint32_t user_bytes;
	/* Test hook: replaces flow_tuple_hash (e.g. to force collisions). NULL = default. */
	uint32_t (*hash)(const struct flow_tuple *key, uint32_t seed);
};

/* Entry flags, see flow_table_flags(). */
enum flow_entry_flag {
	/* Deleted in the kernel but kept until the peer has acknowledged the DEL. */
	FLOW_ENTRY_DEAD    = 1u << 1,
	/* Updated since its insertion: the next message about it is CT_UPD, not CT_NEW. */
	FLOW_ENTRY_UPDATED = 1u << 2,
};

/* What flow_table_upsert() did. */
enum flow_upsert_result {
	FLOW_UPSERT_INSERTED,   /* a new entry, user area zeroed */
	FLOW_UPSERT_UPDATED,    /* an entry existed and its content changed */
	FLOW_UPSERT_UNCHANGED,  /* an entry existed with exactly this content */
	/*
	 * The key matched a DEAD entry: it was replaced and is live again,
	 * as a fresh one (flags cleared: never updated), but keeps its handle
	 * and its user area, because the caller's queues may still hold it.
	 */
	FLOW_UPSERT_REVIVED,
};

/* Counters for `-s cache`; all since creation except the gauges. */
struct flow_table_stats {
	uint32_t active;        /* gauge: live entries */
	uint32_t dead;          /* gauge: entries marked dead */
	uint32_t max_seen;      /* most entries (active + dead) at once */
	uint32_t ext;           /* gauge: entries with an out-of-line flow_ext */
	uint32_t label_sets;    /* gauge: distinct label sets stored */
	uint32_t buckets;       /* gauge: index size */
	uint32_t limit;         /* HashLimit, 0 = none */
	uint64_t inserted;      /* upserts that created an entry (REVIVED included) */
	uint64_t updated;       /* upserts of an existing entry (UNCHANGED included) */
	uint64_t deleted;       /* deletions, by handle or by flow_table_clear() */
	uint64_t enospc;        /* inserts refused by the limit */
	uint64_t enomem;        /* upserts failed for lack of memory */
	uint64_t einval;        /* upserts refused for a malformed flow */
	size_t memory;          /* gauge: flow_table_memory() */
};

/*
 * Create a table.  0 and *out set, or -EINVAL (user_bytes too large) or
 * -ENOMEM.  The caller owns the table and frees it with flow_table_free().
 */
int flow_table_new(const struct flow_table_options *opts, struct flow_table **out);
void flow_table_free(struct flow_table *t);

/*
 * Insert `in` or replace the entry with the same key by it: the flow is
 * copied (its `ext` field is ignored), the flow_ext (if FLOW_A_EXT_MASK) and
 * the labels (if FLOW_A_LABELS and any bit set; trailing zero words are
 * dropped, an all-zero set clears FLOW_A_LABELS) replace the entry's, and
 * the update time becomes `now`.  An existing live entry gets
 * FLOW_ENTRY_UPDATED, even if unchanged.
 *
 * Returns an enum flow_upsert_result, with *handle set, or a negative errno
 * with the table unchanged:
 *   -ENOSPC  a new entry would exceed the limit (counted);
 *   -ENOMEM  memory could not grow (counted);
 *   -EINVAL  the key is not normalised (family not AF_INET/AF_INET6,
 *            non-zero bytes beyond an IPv4 address, l4 bytes without
 *            FLOW_A_PORTS/FLOW_A_ICMP) or labels.words is out of range.
 */
int flow_table_upsert(struct flow_table *t, const struct flow_full *in, uint32_t now,
		      uint32_t *handle);

/* The handle of the entry with this key (dead or not), or 0. */
uint32_t flow_table_lookup(const struct flow_table *t, const struct flow_tuple *key);

/*
 * Batching: at a million states a lookup is one or two cache misses.  A
 * caller holding several decoded states (one netlink read) can hash them
 * all, prefetch their buckets, then look up or upsert them with the hash
 * it already has, so the misses overlap:
 *
 *	for (i = 0; i < n; i++) {
 *		hash[i] = flow_table_hash(t, &in[i].flow.orig);
 *		flow_table_prefetch(t, hash[i]);
 *	}
 *	for (i = 0; i < n; i++)
 *		flow_table_upsert_hashed(t, &in[i], hash[i], now, &h);
 *
 * A hash is only valid for the table that computed it; it stays valid
 * across growth.  Prefetching is a hint: it never faults or changes state.
 */
uint32_t flow_table_hash(const struct flow_table *t, const struct flow_tuple *key);
void flow_table_prefetch(const struct flow_table *t, uint32_t hash);
uint32_t flow_table_lookup_hashed(const struct flow_table *t, const struct flow_tuple *key,
				  uint32_t hash);
int flow_table_upsert_hashed(struct flow_table *t, const struct flow_full *in, uint32_t hash,
			     uint32_t now, uint32_t *handle);

/*
 * Getters by handle.  NULL (or 0) when `h` is not a live handle.  The
 * table owns `flow->ext` (it names the entry's out-of-line parts): read
 * the parts with flow_table_ext() and flow_table_labels().
 */
const struct flow *flow_table_flow(const struct flow_table *t, uint32_t h);
/* The entry's flow_ext, or NULL when it has none (no FLOW_A_EXT_MASK bit). */
const struct flow_ext *flow_table_ext(const struct flow_table *t, uint32_t h);
/* The entry's label words and their count, or NULL and *words = 0. */
const uint32_t *flow_table_labels(const struct flow_table *t, uint32_t h, unsigned *words);
/* The user area (user_bytes, 8-byte aligned), or NULL with user_bytes 0. */
void *flow_table_user(const struct flow_table *t, uint32_t h);
/* FLOW_ENTRY_* bits, 0 for an invalid handle. */
unsigned flow_table_flags(const struct flow_table *t, uint32_t h);
/*
 * The entry's origin: a number of the caller's, 0..FLOW_TABLE_ORIGIN_MAX,
 * kept without a byte of its own (the external cache keeps which peer sent
 * the state).  An insertion, and the revival of a dead entry, make it 0;
 * an update keeps it.  Setting a value out of range changes nothing.
 */
#define FLOW_TABLE_ORIGIN_MAX 31u
void flow_table_set_origin(struct flow_table *t, uint32_t h, unsigned origin);
unsigned flow_table_origin(const struct flow_table *t, uint32_t h);
/* Seconds of the caller's clock at the last upsert or flow_table_mark_dead(). */
uint32_t flow_table_updated(const struct flow_table *t, uint32_t h);
/*
 * Seconds of the caller's clock when the entry was inserted (or revived
 * after being dead), to within a second; an entry older than 194 days
 * shows as 194 days old.  0 for an invalid handle.
 */
uint32_t flow_table_created(const struct flow_table *t, uint32_t h);

/*
 * Copy the entry into `out`: the flow (with ext = 0), the flow_ext (zeroed
 * when the entry has none) and the labels (words, and w[0..words-1] only:
 * the rest of out->labels.w is left as it was).  0 or -ENOENT.
 */
int flow_table_export(const struct flow_table *t, uint32_t h, struct flow_full *out);

/*
 * Mark a live entry dead, at time `now`: it stays in the table (and
 * counts against the limit) until flow_table_delete().  Marking a dead
 * entry again changes nothing.  0 or -ENOENT.
 */
int flow_table_mark_dead(struct flow_table *t, uint32_t h, uint32_t now);

/* Delete the entry and release its parts; `h` may be recycled at once.  0 or -ENOENT. */
int flow_table_delete(struct flow_table *t, uint32_t h);

/*
 * Iterate in slices:
 *
 *	uint32_t cursor = 0, h;
 *	while ((h = flow_table_next(t, &cursor)) != 0) ...
 *
 * visits every entry (dead ones too) present for the whole iteration
 * exactly once, in handle order.  The caller may delete the entry just
 * returned, upsert, or stop and resume later from the saved cursor: each
 * call is O(1) amortised, a full pass O(handles ever used).  Entries
 * inserted meanwhile may or may not be visited.  After flow_table_clear()
 * a saved cursor just ends the iteration.
 */
uint32_t flow_table_next(const struct flow_table *t, uint32_t *cursor);

/*
 * Delete every entry, counted as deleted, and give the arenas' memory back;
 * the index returns to its initial size (if that allocation fails it keeps
 * its size, emptied).  Every handle becomes invalid.
 */
void flow_table_clear(struct flow_table *t);

/* Entries stored: active + dead. */
uint32_t flow_table_count(const struct flow_table *t);

/*
 * A new HashLimit (0 = none).  Entries beyond a lower limit stay; only
 * new entries are refused (-ENOSPC) until the count is below it again.
 */
void flow_table_set_limit(struct flow_table *t, uint32_t limit);

/* Bytes obtained from malloc by this table (arenas, index, labels, itself). */
size_t flow_table_memory(const struct flow_table *t);

void flow_table_stats(const struct flow_table *t, struct flow_table_stats *out);

#endif
