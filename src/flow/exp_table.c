/*
 * exp_table.c - the expectation tables (see exp_table.h).
 *
 * Entries sit in chunks of CHUNK_ENTRIES that are allocated once and never
 * move; handle h is entry h - 1.  Unused entries form a free list (lowest
 * handles are not preferred: expectations come and go, order does not
 * matter).  The index is an array of bucket heads, chained through
 * `hnext`, doubled when the table holds more entries than buckets.
 */
#include "flow/exp_table.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define CHUNK_ENTRIES   256u
#define MAX_CHUNKS      4096u           /* 1M entries: far beyond any helper's needs */
#define INITIAL_BUCKETS 256u

struct exp_entry {
	struct flow_exp x;
	uint32_t updated;
	uint32_t created;               /* inserted, or revived after being dead */
	uint32_t hnext;                 /* next in the bucket, or in the free list */
	uint8_t flags;                  /* FLOW_ENTRY_* */
	bool used;
	uint64_t user[FLOW_TABLE_USER_MAX / 8];
};

struct exp_table {
	struct exp_table_options o;
	struct exp_entry *chunk[MAX_CHUNKS];
	uint32_t nchunks;
	uint32_t free_head;             /* handle, 0 = none */
	uint32_t *bucket;               /* handle of the first entry, 0 = empty */
	uint32_t nbuckets;              /* a power of two */
	uint32_t count;
	struct flow_table_stats st;
};

bool flow_exp_same_key(const struct flow_exp *a, const struct flow_exp *b)
{
	return a->master.zone == b->master.zone &&
	       memcmp(&a->tuple, &b->tuple, sizeof(a->tuple)) == 0 &&
	       memcmp(&a->mask, &b->mask, sizeof(a->mask)) == 0;
}

static uint32_t key_hash(const struct exp_table *t, const struct flow_exp *x)
{
	return flow_tuple_hash(&x->tuple, t->o.seed) ^
	       flow_tuple_hash(&x->mask, t->o.seed * 0x9e3779b9u + x->master.zone);
}

static struct exp_entry *entry(const struct exp_table *t, uint32_t h)
{
	uint32_t i = h - 1;

	if (h == 0 || i / CHUNK_ENTRIES >= t->nchunks)
		return NULL;
	return &t->chunk[i / CHUNK_ENTRIES][i % CHUNK_ENTRIES];
}

static struct exp_entry *live(const struct exp_table *t, uint32_t h)
{
	struct exp_entry *e = entry(t, h);

	return e && e->used ? e : NULL;
}

int exp_table_new(const struct exp_table_options *o, struct exp_table **out)
{
	struct exp_table *t;

	if (o->user_bytes > FLOW_TABLE_USER_MAX)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->o = *o;
	t->bucket = calloc(INITIAL_BUCKETS, sizeof(*t->bucket));
	if (!t->bucket) {
		free(t);
		return -ENOMEM;
	}
	t->nbuckets = INITIAL_BUCKETS;
	*out = t;
	return 0;
}

static void free_chunks(struct exp_table *t)
{
	for (uint32_t i = 0; i < t->nchunks; i++)
		free(t->chunk[i]);
	t->nchunks = 0;
	t->free_head = 0;
}

void exp_table_free(struct exp_table *t)
{
	if (!t)
		return;
	free_chunks(t);
	free(t->bucket);
	free(t);
}

static int add_chunk(struct exp_table *t)
{
	struct exp_entry *c;
	uint32_t base;

	if (t->nchunks == MAX_CHUNKS)
		return -ENOMEM;
	c = calloc(CHUNK_ENTRIES, sizeof(*c));
	if (!c)
		return -ENOMEM;
	base = t->nchunks * CHUNK_ENTRIES;
	t->chunk[t->nchunks++] = c;
	for (uint32_t i = CHUNK_ENTRIES; i-- > 0;) {
		c[i].hnext = t->free_head;
		t->free_head = base + i + 1;
	}
	return 0;
}

/* Double the index; on failure the old one stays (chains just get longer). */
static void grow_index(struct exp_table *t)
{
	uint32_t n = t->nbuckets * 2;
	uint32_t *b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		uint32_t h = t->bucket[i];

		while (h) {
			struct exp_entry *e = entry(t, h);
			uint32_t next = e->hnext, k = key_hash(t, &e->x) & (n - 1);

			e->hnext = b[k];
			b[k] = h;
			h = next;
		}
	}
	free(t->bucket);
	t->bucket = b;
	t->nbuckets = n;
}

uint32_t exp_table_lookup(const struct exp_table *t, const struct flow_exp *x)
{
	uint32_t h = t->bucket[key_hash(t, x) & (t->nbuckets - 1)];

	while (h) {
		struct exp_entry *e = entry(t, h);

		if (flow_exp_same_key(&e->x, x))
			return h;
		h = e->hnext;
	}
	return 0;
}

static bool valid(const struct flow_exp *x)
{
	uint8_t f = x->tuple.family;

	return (f == AF_INET || f == AF_INET6) && x->mask.family == f && x->master.family == f;
}

int exp_table_upsert(struct exp_table *t, const struct flow_exp *x, uint32_t now,
		     uint32_t *handle)
{
	struct exp_entry *e;
	uint32_t h, k;
	int ret;

	if (!valid(x)) {
		t->st.einval++;
		return -EINVAL;
	}
	h = exp_table_lookup(t, x);
	if (h) {
		e = entry(t, h);
		*handle = h;
		e->updated = now;
		t->st.updated++;
		if (e->flags & FLOW_ENTRY_DEAD) {
			/* Live again, as a fresh entry; the user area stays (queues may hold it). */
			e->created = now;
			e->x = *x;
			e->flags = 0;
			t->st.dead--;
			t->st.active++;
			return FLOW_UPSERT_REVIVED;
		}
		e->flags |= FLOW_ENTRY_UPDATED;
		if (memcmp(&e->x, x, sizeof(*x)) == 0)
			return FLOW_UPSERT_UNCHANGED;
		e->x = *x;
		return FLOW_UPSERT_UPDATED;
	}
	if (t->o.limit && t->count >= t->o.limit) {
		t->st.enospc++;
		return -ENOSPC;
	}
	if (!t->free_head && (ret = add_chunk(t)) < 0) {
		t->st.enomem++;
		return ret;
	}
	h = t->free_head;
	e = entry(t, h);
	t->free_head = e->hnext;
	memset(e, 0, sizeof(*e));
	e->x = *x;
	e->updated = now;
	e->created = now;
	e->used = true;
	k = key_hash(t, x) & (t->nbuckets - 1);
	e->hnext = t->bucket[k];
	t->bucket[k] = h;
	t->count++;
	t->st.active++;
	t->st.inserted++;
	if (t->count > t->st.max_seen)
		t->st.max_seen = t->count;
	if (t->count > t->nbuckets)
		grow_index(t);
	*handle = h;
	return FLOW_UPSERT_INSERTED;
}

const struct flow_exp *exp_table_get(const struct exp_table *t, uint32_t h)
{
	struct exp_entry *e = live(t, h);

	return e ? &e->x : NULL;
}

void *exp_table_user(const struct exp_table *t, uint32_t h)
{
	struct exp_entry *e = live(t, h);

	return e && t->o.user_bytes ? e->user : NULL;
}

unsigned exp_table_flags(const struct exp_table *t, uint32_t h)
{
	struct exp_entry *e = live(t, h);

	return e ? e->flags : 0;
}

uint32_t exp_table_updated(const struct exp_table *t, uint32_t h)
{
	struct exp_entry *e = live(t, h);

	return e ? e->updated : 0;
}

uint32_t exp_table_created(const struct exp_table *t, uint32_t h)
{
	struct exp_entry *e = live(t, h);

	return e ? e->created : 0;
}

int exp_table_mark_dead(struct exp_table *t, uint32_t h, uint32_t now)
{
	struct exp_entry *e = live(t, h);

	if (!e)
		return -ENOENT;
	if (!(e->flags & FLOW_ENTRY_DEAD)) {
		e->flags = FLOW_ENTRY_DEAD;
		e->updated = now;
		t->st.active--;
		t->st.dead++;
	}
	return 0;
}

int exp_table_delete(struct exp_table *t, uint32_t h)
{
	struct exp_entry *e = live(t, h);
	uint32_t *link;

	if (!e)
		return -ENOENT;
	link = &t->bucket[key_hash(t, &e->x) & (t->nbuckets - 1)];
	while (*link != h)
		link = &entry(t, *link)->hnext;
	*link = e->hnext;
	if (e->flags & FLOW_ENTRY_DEAD)
		t->st.dead--;
	else
		t->st.active--;
	e->used = false;
	e->hnext = t->free_head;
	t->free_head = h;
	t->count--;
	t->st.deleted++;
	return 0;
}

uint32_t exp_table_next(const struct exp_table *t, uint32_t *cursor)
{
	while (*cursor < t->nchunks * CHUNK_ENTRIES) {
		uint32_t h = ++*cursor;

		if (live(t, h))
			return h;
	}
	return 0;
}

void exp_table_clear(struct exp_table *t)
{
	t->st.deleted += t->count;
	t->st.active = t->st.dead = 0;
	t->count = 0;
	free_chunks(t);
	memset(t->bucket, 0, t->nbuckets * sizeof(*t->bucket));
}

void exp_table_set_limit(struct exp_table *t, uint32_t limit)
{
	t->o.limit = limit;
}

uint32_t exp_table_count(const struct exp_table *t)
{
	return t->count;
}

void exp_table_stats(const struct exp_table *t, struct flow_table_stats *out)
{
	*out = t->st;
	out->buckets = t->nbuckets;
	out->limit = t->o.limit;
	out->memory = sizeof(*t) + t->nbuckets * sizeof(*t->bucket) +
		      (size_t)t->nchunks * CHUNK_ENTRIES * sizeof(struct exp_entry);
}
