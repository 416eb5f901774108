/*
 * flow/exp_table.h - the tables of expectations (ExpectationSync): the
 * internal one (the kernel's, from events and dumps) and the external one
 * (the peer's).
 *
 * The same contract as flow_table.h, smaller: an entry is a whole struct
 * flow_exp, keyed as the kernel keys expectations, by (expected tuple,
 * mask, zone); handles are stable from insertion to deletion, never 0,
 * and recycled; each entry has the FLOW_ENTRY_* flags, its update time and
 * a user area of up to FLOW_TABLE_USER_MAX bytes (zeroed at insertion,
 * never touched by the table) where the sync engine keeps its queue links.
 * Entries live in chunks that never move, so pointers returned stay valid
 * until the entry is deleted.  Expectations are few (a helper makes one or
 * two per control connection), so the index is a plain chained hash.
 *
 * Pure code: no system calls, no clock.  Not thread-safe.
 */
#ifndef CTSYNCD_EXP_TABLE_H
#define CTSYNCD_EXP_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "flow/flow.h"
#include "flow/table.h"

struct exp_table;

struct exp_table_options {
	uint32_t limit;                 /* most entries (live and dead); 0 = no limit */
	uint32_t seed;                  /* hash seed */
	uint32_t user_bytes;            /* 0..FLOW_TABLE_USER_MAX */
};

/* 0 and *out, or -EINVAL (user_bytes too large) or -ENOMEM. */
int exp_table_new(const struct exp_table_options *o, struct exp_table **out);
void exp_table_free(struct exp_table *t);

/*
 * Insert `x` or replace the entry with its key; as flow_table_upsert():
 * an enum flow_upsert_result with *handle, or -ENOSPC (limit), -ENOMEM,
 * -EINVAL (family of the tuple not AF_INET / AF_INET6, or tuple, mask and
 * master of different families), the table unchanged.
 */
int exp_table_upsert(struct exp_table *t, const struct flow_exp *x, uint32_t now,
		     uint32_t *handle);
/* The handle of the entry with x's key, or 0. */
uint32_t exp_table_lookup(const struct exp_table *t, const struct flow_exp *x);

/* Getters; NULL / 0 for a handle that names no entry. */
const struct flow_exp *exp_table_get(const struct exp_table *t, uint32_t h);
void *exp_table_user(const struct exp_table *t, uint32_t h);
unsigned exp_table_flags(const struct exp_table *t, uint32_t h);
uint32_t exp_table_updated(const struct exp_table *t, uint32_t h);
/* When the entry was inserted, or revived after being dead (the caller's clock); 0 if none. */
uint32_t exp_table_created(const struct exp_table *t, uint32_t h);

/* As flow_table_mark_dead() and flow_table_delete(): 0 or -ENOENT. */
int exp_table_mark_dead(struct exp_table *t, uint32_t h, uint32_t now);
int exp_table_delete(struct exp_table *t, uint32_t h);

/* Iterate in handle order, as flow_table_next() (the entry returned may be deleted). */
uint32_t exp_table_next(const struct exp_table *t, uint32_t *cursor);
/* Delete every entry (counted) and give the memory back; every handle becomes invalid. */
void exp_table_clear(struct exp_table *t);
uint32_t exp_table_count(const struct exp_table *t);
/* A new limit (0 = none): entries beyond it stay, new ones are refused. */
void exp_table_set_limit(struct exp_table *t, uint32_t limit);
/* The counters of flow_table_stats() that apply (no ext, no labels). */
void exp_table_stats(const struct exp_table *t, struct flow_table_stats *out);

/* Do `a` and `b` have the same key (expected tuple, mask, zone)? */
bool flow_exp_same_key(const struct flow_exp *a, const struct flow_exp *b);

#endif
