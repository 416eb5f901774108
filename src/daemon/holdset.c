/*
 * holdset.c - the packets a-priori mode holds (holdset.h).
 */
#include "build-config.h"
#include "holdset.h"

#include <errno.h>
#include <stdlib.h>

#define NONE UINT32_MAX

struct holdset_slot {
	uint32_t id;                    /* the packet's, for the verdict */
	uint32_t handle;                /* its flow */
	uint64_t deadline_ms;
	uint64_t since_us;
	uint32_t prev, next;            /* FIFO; .next also links the free list */
	uint32_t hnext;                 /* chain of its hash bucket */
	uint32_t bucket;                /* the bucket's index, for unlinking */
};

static uint32_t bucket_of(const struct holdset *s, uint32_t handle)
{
	return (handle * 2654435761u) & s->bucket_mask;
}

int holdset_init(struct holdset *s, uint32_t cap)
{
	*s = (struct holdset){ .free_head = NONE, .head = NONE, .tail = NONE };
	return holdset_grow(s, cap);
}

void holdset_free(struct holdset *s)
{
	free(s->slots);
	free(s->buckets);
	*s = (struct holdset){ .free_head = NONE, .head = NONE, .tail = NONE };
}

int holdset_grow(struct holdset *s, uint32_t cap)
{
	uint32_t nb = 64, *b;
	struct holdset_slot *slots;

	if (cap <= s->cap)
		return 0;
	/* at least twice the packets in buckets: the chains stay short */
	while (nb < cap * 2ull && nb < (1u << 31))
		nb <<= 1;
	b = malloc((size_t)nb * sizeof(*b));
	if (!b)
		return -ENOMEM;
	slots = realloc(s->slots, (size_t)cap * sizeof(*slots));
	if (!slots) {
		free(b);
		return -ENOMEM;
	}
	s->slots = slots;
	/* the new slots join the free list, lowest first */
	for (uint32_t i = cap; i-- > s->cap;) {
		slots[i].next = s->free_head;
		s->free_head = i;
	}
	s->cap = cap;
	free(s->buckets);
	s->buckets = b;
	s->bucket_mask = nb - 1;
	for (uint32_t i = 0; i < nb; i++)
		b[i] = NONE;
	/* the chains are rebuilt from the FIFO */
	for (uint32_t i = s->head; i != NONE; i = slots[i].next) {
		slots[i].bucket = bucket_of(s, slots[i].handle);
		slots[i].hnext = b[slots[i].bucket];
		b[slots[i].bucket] = i;
	}
	return 0;
}

int holdset_add(struct holdset *s, uint32_t id, uint32_t handle, uint64_t deadline_ms, uint64_t since_us)
{
	uint32_t i = s->free_head;
	struct holdset_slot *h;

	if (i == NONE)
		return -ENOSPC;
	h = &s->slots[i];
	s->free_head = h->next;
	*h = (struct holdset_slot){
		.id = id, .handle = handle, .deadline_ms = deadline_ms, .since_us = since_us,
		.prev = s->tail, .next = NONE, .bucket = bucket_of(s, handle),
	};
	h->hnext = s->buckets[h->bucket];
	s->buckets[h->bucket] = i;
	if (s->tail != NONE)
		s->slots[s->tail].next = i;
	else
		s->head = i;
	s->tail = i;
	s->n++;
	return 0;
}

bool holdset_next_deadline(const struct holdset *s, uint64_t *deadline_ms)
{
	if (s->head == NONE)
		return false;
	*deadline_ms = s->slots[s->head].deadline_ms;
	return true;
}

/* Take slot `i` out of the FIFO and its chain, free it, and report its packet. */
static void release(struct holdset *s, uint32_t i, int why, holdset_release_fn *fn, void *arg)
{
	struct holdset_slot *h = &s->slots[i];
	uint32_t *p = &s->buckets[h->bucket];

	while (*p != i)
		p = &s->slots[*p].hnext;
	*p = h->hnext;
	if (h->prev != NONE)
		s->slots[h->prev].next = h->next;
	else
		s->head = h->next;
	if (h->next != NONE)
		s->slots[h->next].prev = h->prev;
	else
		s->tail = h->prev;
	h->next = s->free_head;
	s->free_head = i;
	s->n--;
	fn(arg, h->id, h->since_us, why);
}

/* Release flow `handle`'s packets in FIFO order: for a flow that holds many. */
static unsigned release_handle_walk(struct holdset *s, uint32_t handle, int why, holdset_release_fn *fn, void *arg)
{
	unsigned n = 0;

	for (uint32_t i = s->head, next; i != NONE; i = next) {
		next = s->slots[i].next;
		if (s->slots[i].handle == handle) {
			release(s, i, why, fn, arg);
			n++;
		}
	}
	return n;
}

unsigned holdset_release_handle(struct holdset *s, uint32_t handle, int why, holdset_release_fn *fn, void *arg)
{
	uint32_t found[64], nfound = 0;
	unsigned n = 0;

	if (!s->n)
		return 0;
	/*
	 * A chain holds the newest first: collect the flow's slots, then
	 * release them oldest first, the order the packets came in.  A flow
	 * rarely holds more than a packet or two; past 64, the FIFO is walked.
	 */
	for (uint32_t i = s->buckets[bucket_of(s, handle)]; i != NONE; i = s->slots[i].hnext) {
		if (s->slots[i].handle != handle)
			continue;
		if (nfound == 64)
			return release_handle_walk(s, handle, why, fn, arg);
		found[nfound++] = i;
	}
	while (nfound) {
		release(s, found[--nfound], why, fn, arg);
		n++;
	}
	return n;
}

unsigned holdset_release_expired(struct holdset *s, uint64_t now_ms, int why, holdset_release_fn *fn, void *arg)
{
	unsigned n = 0;

	while (s->head != NONE && s->slots[s->head].deadline_ms <= now_ms) {
		release(s, s->head, why, fn, arg);
		n++;
	}
	return n;
}

unsigned holdset_release_all(struct holdset *s, int why, holdset_release_fn *fn, void *arg)
{
	unsigned n = 0;

	while (s->head != NONE) {
		release(s, s->head, why, fn, arg);
		n++;
	}
	return n;
}

unsigned holdset_release_if(struct holdset *s, holdset_decide_fn *decide, holdset_release_fn *fn, void *arg)
{
	unsigned n = 0;

	for (uint32_t i = s->head, next; i != NONE; i = next) {
		int why = decide(arg, s->slots[i].handle);

		next = s->slots[i].next;
		if (why) {
			release(s, i, why, fn, arg);
			n++;
		}
	}
	return n;
}

void holdset_shift_deadlines(struct holdset *s, int64_t delta_ms)
{
	for (uint32_t i = s->head; i != NONE; i = s->slots[i].next)
		s->slots[i].deadline_ms += (uint64_t)delta_ms;
}
