/*
 * arena.h - fixed-size slot allocator and Robin Hood index used by the flow
 * tables.  Internal to src/flow: nothing outside this folder includes it.
 *
 * Arena: slots of one size live in chunks of 2^shift slots.  A chunk never
 * moves, so a slot's address and its handle stay valid until the slot is
 * freed.  Handles are slot index + 1, so that 0 means "none" everywhere in
 * the tables (and in the callers' intrusive links).  Freed slots are chained
 * through their first four bytes, LIFO, so a recycled slot is likely still
 * in cache; fresh slots are only taken when that list is empty, and memory
 * is only requested when the last chunk is full.
 *
 * Index: open addressing over {hash, handle} pairs with Robin Hood
 * displacement and backward-shift deletion (no tombstones).  Keeping the
 * full 32-bit hash next to the handle costs 4 bytes per bucket and buys:
 * probes compare hashes without touching the entries (one entry cache miss
 * per successful lookup, almost never more), the probe distance is derived
 * from the stored hash, and a rehash never reads an entry.
 */
#ifndef CTSYNCD_FLOW_ARENA_H
#define CTSYNCD_FLOW_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arena {
	unsigned char **chunks;
	uint32_t nchunks;               /* chunks allocated */
	uint32_t chunks_cap;            /* length of chunks[] */
	uint32_t slot_size;             /* bytes, a multiple of 4 */
	uint32_t shift;                 /* log2 of the slots per chunk */
	uint32_t high;                  /* handles 1..high have been handed out at least once */
	uint32_t free_head;             /* first free handle, 0 = none */
	uint32_t live;                  /* slots currently allocated */
};

void arena_init(struct arena *a, uint32_t slot_size, uint32_t shift);
/* A free slot's handle (contents undefined), or 0 when memory is exhausted. */
uint32_t arena_alloc(struct arena *a);
/* Return `h` to the free list; its first four bytes are overwritten. */
void arena_free(struct arena *a, uint32_t h);
/* Free every chunk: all handles become invalid. */
void arena_reset(struct arena *a);
/* Bytes obtained from malloc for this arena. */
size_t arena_memory(const struct arena *a);

static inline void *arena_slot(const struct arena *a, uint32_t h)
{
	uint32_t i = h - 1;

	return a->chunks[i >> a->shift] +
	       (size_t)(i & ((1u << a->shift) - 1)) * a->slot_size;
}

struct rh_slot {
	uint32_t hash;
	uint32_t handle;                /* 0 = empty bucket */
};

struct rh_index {
	struct rh_slot *slots;
	uint32_t mask;                  /* buckets - 1; buckets is a power of two */
	uint32_t count;
};

/* Allocate `buckets` (a power of two) empty buckets: 0 or -ENOMEM. */
int rh_init(struct rh_index *ix, uint32_t buckets);
void rh_fini(struct rh_index *ix);
/* Empty the index, keeping its size. */
void rh_clear(struct rh_index *ix);
/* Rehash into `buckets` buckets: 0, or -ENOMEM with `ix` unchanged. */
int rh_resize(struct rh_index *ix, uint32_t buckets);
/* Add a pair whose key is known to be absent.  The caller keeps count < buckets. */
void rh_insert(struct rh_index *ix, uint32_t hash, uint32_t handle);
/* Remove the pair {hash, handle}, which must be present. */
void rh_remove(struct rh_index *ix, uint32_t hash, uint32_t handle);

static inline uint32_t rh_buckets(const struct rh_index *ix)
{
	return ix->mask + 1;
}

/*
 * The handle whose hash is `hash` and for which eq(ctx, handle) holds, or 0.
 * Robin Hood ordering lets a miss stop as soon as it meets a bucket whose
 * occupant is nearer its home than we are to ours.  Written inline so that
 * the comparison, a static function of the caller, is inlined too.
 */
static inline uint32_t rh_find(const struct rh_index *ix, uint32_t hash,
			       bool (*eq)(const void *ctx, uint32_t handle), const void *ctx)
{
	uint32_t mask = ix->mask;
	uint32_t pos = hash & mask;

	for (uint32_t d = 0;; d++, pos = (pos + 1) & mask) {
		const struct rh_slot *s = &ix->slots[pos];

		if (s->handle == 0 || ((pos - s->hash) & mask) < d)
			return 0;
		if (s->hash == hash && eq(ctx, s->handle))
			return s->handle;
	}
}

#endif
