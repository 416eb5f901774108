/*
 * labels.c - interned connlabel sets (see labels.h).
 */
#include "labels.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LABELS_MIN_BUCKETS 16u

void labels_init(struct labels_pool *p, uint32_t seed)
{
	memset(p, 0, sizeof(*p));
	p->seed = seed;
}

void labels_fini(struct labels_pool *p)
{
	for (uint32_t i = 0; i < p->high; i++)
		free(p->sets[i].w);
	free(p->sets);
	rh_fini(&p->ix);
	labels_init(p, p->seed);
}

static uint32_t labels_hash(const uint32_t *w, unsigned words, uint32_t seed)
{
	uint32_t h = seed ^ words;

	for (unsigned i = 0; i < words; i++) {
		uint32_t k = w[i] * 0xcc9e2d51u;

		k = ((k << 15) | (k >> 17)) * 0x1b873593u;
		h ^= k;
		h = ((h << 13) | (h >> 19)) * 5u + 0xe6546b64u;
	}
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

struct labels_key {
	const struct labels_pool *p;
	const uint32_t *w;
	unsigned words;
};

static bool labels_eq(const void *ctx, uint32_t id)
{
	const struct labels_key *k = ctx;
	const struct label_set *s = &k->p->sets[id - 1];

	return s->words == k->words && memcmp(s->w, k->w, k->words * sizeof(*k->w)) == 0;
}

/* Room in the index and the descriptor array for one more set. */
static int labels_reserve(struct labels_pool *p)
{
	if (!p->ix.slots) {
		if (rh_init(&p->ix, LABELS_MIN_BUCKETS) < 0)
			return -ENOMEM;
	} else if ((uint64_t)(p->ix.count + 1) * 4 > (uint64_t)rh_buckets(&p->ix) * 3) {
		if (rh_resize(&p->ix, rh_buckets(&p->ix) * 2) < 0)
			return -ENOMEM;
	}
	if (!p->free_head && p->high == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 16;
		struct label_set *sets = realloc(p->sets, cap * sizeof(*sets));

		if (!sets)
			return -ENOMEM;
		p->sets = sets;
		p->cap = cap;
	}
	return 0;
}

uint32_t labels_intern(struct labels_pool *p, const uint32_t *w, unsigned words, int *err)
{
	struct labels_key key = { .p = p, .w = w, .words = words };
	uint32_t hash = labels_hash(w, words, p->seed);
	struct label_set *s;
	uint32_t id = 0;

	if (p->ix.slots)
		id = rh_find(&p->ix, hash, labels_eq, &key);
	if (id) {
		p->sets[id - 1].refs++;
		return id;
	}
	if (labels_reserve(p) < 0)
		goto enomem;
	if (p->free_head) {
		id = p->free_head;
		s = &p->sets[id - 1];
	} else {
		id = p->high + 1;
		s = &p->sets[id - 1];
		memset(s, 0, sizeof(*s));
	}
	if (s->cap < words) {
		uint32_t *nw = realloc(s->w, words * sizeof(*nw));

		if (!nw)
			goto enomem;
		p->word_bytes += (words - s->cap) * sizeof(*nw);
		s->w = nw;
		s->cap = (uint16_t)words;
	}
	/* Committed: nothing below can fail. */
	if (id == p->free_head)
		p->free_head = s->hash;
	else
		p->high++;
	memcpy(s->w, w, words * sizeof(*w));
	s->words = (uint16_t)words;
	s->hash = hash;
	s->refs = 1;
	p->live++;
	rh_insert(&p->ix, hash, id);
	return id;
enomem:
	*err = -ENOMEM;
	return 0;
}

void labels_release(struct labels_pool *p, uint32_t id)
{
	struct label_set *s;

	if (!id)
		return;
	s = &p->sets[id - 1];
	if (--s->refs)
		return;
	rh_remove(&p->ix, s->hash, id);
	s->hash = p->free_head;
	p->free_head = id;
	p->live--;
}

const uint32_t *labels_words(const struct labels_pool *p, uint32_t id, unsigned *words)
{
	const struct label_set *s = &p->sets[id - 1];

	*words = s->words;
	return s->w;
}

size_t labels_memory(const struct labels_pool *p)
{
	return (size_t)p->cap * sizeof(*p->sets) + p->word_bytes +
	       (p->ix.slots ? (size_t)rh_buckets(&p->ix) * sizeof(struct rh_slot) : 0);
}
