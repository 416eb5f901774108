/*
 * arena.c - the slot arena and the Robin Hood index behind the flow tables.
 */
#include "arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void arena_init(struct arena *a, uint32_t slot_size, uint32_t shift)
{
	memset(a, 0, sizeof(*a));
	a->slot_size = slot_size;
	a->shift = shift;
}

static int arena_add_chunk(struct arena *a)
{
	unsigned char *chunk;

	/* Handles are uint32 and 0 is reserved: stop one chunk short of wrapping. */
	if (((uint64_t)a->nchunks + 2) << a->shift > UINT32_MAX)
		return -ENOMEM;
	if (a->nchunks == a->chunks_cap) {
		uint32_t cap = a->chunks_cap ? a->chunks_cap * 2 : 16;
		unsigned char **chunks = realloc(a->chunks, cap * sizeof(*chunks));

		if (!chunks)
			return -ENOMEM;
		a->chunks = chunks;
		a->chunks_cap = cap;
	}
	chunk = malloc((size_t)a->slot_size << a->shift);
	if (!chunk)
		return -ENOMEM;
	a->chunks[a->nchunks++] = chunk;
	return 0;
}

uint32_t arena_alloc(struct arena *a)
{
	uint32_t h = a->free_head;

	if (h) {
		memcpy(&a->free_head, arena_slot(a, h), sizeof(a->free_head));
	} else {
		if (a->high == (uint32_t)a->nchunks << a->shift && arena_add_chunk(a) < 0)
			return 0;
		h = ++a->high;
	}
	a->live++;
	return h;
}

void arena_free(struct arena *a, uint32_t h)
{
	memcpy(arena_slot(a, h), &a->free_head, sizeof(a->free_head));
	a->free_head = h;
	a->live--;
}

void arena_reset(struct arena *a)
{
	for (uint32_t i = 0; i < a->nchunks; i++)
		free(a->chunks[i]);
	free(a->chunks);
	arena_init(a, a->slot_size, a->shift);
}

size_t arena_memory(const struct arena *a)
{
	return ((size_t)a->nchunks * a->slot_size << a->shift) +
	       (size_t)a->chunks_cap * sizeof(*a->chunks);
}

/*
 * A large calloc() returns pages the kernel has not mapped yet.  Inserts
 * land on random buckets, so every page of the index would be faulted in
 * during the first few thousand inserts, twice each (a lookup maps the
 * shared zero page, the insert then copies it): 40 % of the backup's CPU
 * in a burst of 10k states.  Writing one byte per page now takes those
 * faults once, when the table is made or grown, and sets the RSS to what
 * HashSize asks for from the start.  Beyond RH_TOUCH_MAX bytes (a HashSize
 * of 8M) the pages are left to fault in as they are used, so that a huge
 * HashSize does not take its memory before any state needs it.
 */
#define RH_TOUCH_MAX (64u << 20)

static void touch_pages(void *p, size_t size)
{
	if (size > RH_TOUCH_MAX)
		size = RH_TOUCH_MAX;
	for (size_t off = 0; off < size; off += 4096)
		((volatile unsigned char *)p)[off] = 0;
}

int rh_init(struct rh_index *ix, uint32_t buckets)
{
	ix->slots = calloc(buckets, sizeof(*ix->slots));
	if (!ix->slots)
		return -ENOMEM;
	touch_pages(ix->slots, (size_t)buckets * sizeof(*ix->slots));
	ix->mask = buckets - 1;
	ix->count = 0;
	return 0;
}

void rh_fini(struct rh_index *ix)
{
	free(ix->slots);
	ix->slots = NULL;
	ix->mask = 0;
	ix->count = 0;
}

void rh_clear(struct rh_index *ix)
{
	memset(ix->slots, 0, (size_t)rh_buckets(ix) * sizeof(*ix->slots));
	ix->count = 0;
}

void rh_insert(struct rh_index *ix, uint32_t hash, uint32_t handle)
{
	struct rh_slot cur = { .hash = hash, .handle = handle };
	uint32_t mask = ix->mask;
	uint32_t pos = hash & mask;

	/* Take from the rich (near home), give to the poor (far from home). */
	for (uint32_t d = 0;; d++, pos = (pos + 1) & mask) {
		struct rh_slot *s = &ix->slots[pos];
		uint32_t sd;

		if (s->handle == 0) {
			*s = cur;
			break;
		}
		sd = (pos - s->hash) & mask;
		if (sd < d) {
			struct rh_slot tmp = *s;

			*s = cur;
			cur = tmp;
			d = sd;
		}
	}
	ix->count++;
}

void rh_remove(struct rh_index *ix, uint32_t hash, uint32_t handle)
{
	uint32_t mask = ix->mask;
	uint32_t pos = hash & mask;

	while (ix->slots[pos].handle != handle)
		pos = (pos + 1) & mask;
	/* Backward shift: pull the rest of the cluster one step nearer home. */
	for (;;) {
		uint32_t next = (pos + 1) & mask;
		struct rh_slot *n = &ix->slots[next];

		if (n->handle == 0 || ((next - n->hash) & mask) == 0)
			break;
		ix->slots[pos] = *n;
		pos = next;
	}
	ix->slots[pos].handle = 0;
	ix->slots[pos].hash = 0;
	ix->count--;
}

int rh_resize(struct rh_index *ix, uint32_t buckets)
{
	struct rh_index n;

	if (buckets < ix->count + 1 || rh_init(&n, buckets) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i <= ix->mask; i++)
		if (ix->slots[i].handle)
			rh_insert(&n, ix->slots[i].hash, ix->slots[i].handle);
	free(ix->slots);
	*ix = n;
	return 0;
}
