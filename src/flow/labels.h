/*
 * labels.h - interned, reference-counted connlabel sets.  Internal to
 * src/flow (flow_table.c is its only user).
 *
 * Most flows that carry labels share a handful of distinct sets, so a table
 * stores each distinct set once and a flow refers to it by a 32-bit id
 * (0 = no labels).  Sets are stored trimmed (no trailing zero words), so
 * that equal label bitmaps always intern to the same id.
 *
 * Memory: the descriptor array grows by doubling; a set's words come from
 * malloc when a descriptor is first used or needs more room, and stay with
 * the descriptor when the set dies, for the next set that reuses it.  In
 * steady state (no new distinct sets) interning allocates nothing.
 */
#ifndef CTSYNCD_FLOW_LABELS_H
#define CTSYNCD_FLOW_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"

struct label_set {
	uint32_t refs;                  /* 0 = free descriptor */
	uint32_t hash;                  /* while free: next free id */
	uint16_t words;
	uint16_t cap;                   /* words allocated at w */
	uint32_t *w;
};

struct labels_pool {
	struct label_set *sets;         /* id = index + 1 */
	uint32_t high;                  /* descriptors used at least once */
	uint32_t cap;                   /* length of sets[] */
	uint32_t free_head;
	uint32_t live;                  /* sets with refs > 0 */
	uint32_t seed;
	size_t word_bytes;              /* bytes held by the w buffers */
	struct rh_index ix;             /* empty (no buckets) until the first set */
};

void labels_init(struct labels_pool *p, uint32_t seed);
void labels_fini(struct labels_pool *p);
/*
 * The id of the set w[0..words-1] (words >= 1, w[words-1] != 0), taking one
 * reference.  0 with *err = -ENOMEM when memory runs out.
 */
uint32_t labels_intern(struct labels_pool *p, const uint32_t *w, unsigned words, int *err);
/* Drop one reference of `id` (0 is ignored). */
void labels_release(struct labels_pool *p, uint32_t id);
/* The words of `id`, valid until the set's last reference is released. */
const uint32_t *labels_words(const struct labels_pool *p, uint32_t id, unsigned *words);
size_t labels_memory(const struct labels_pool *p);

#endif
