/*
 * table.c - the flow tables (see flow_table.h).
 *
 * Layout of an entry slot in the entry arena:
 *
 *	[struct flow, 64][updated u32, flags u8, life u24][user area, 0..32]
 *
 * rounded up to 8 bytes.  The flow's `ext` field is the table's: when the
 * flow has FLOW_A_EXT_MASK bits it is the handle of an ext_slot in the ext
 * arena (which also holds the labels id), otherwise when it has
 * FLOW_A_LABELS it is the labels id itself, otherwise 0.  So a flow with
 * labels but no NAT/helper/master costs nothing beyond its 64 bytes, and
 * `attrs` alone says how to read `ext`.
 */
#include "flow/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "arena.h"
#include "labels.h"

/* 4096 entries of 88 bytes = 352 KiB per chunk: few chunks at 1M states,
 * and malloc serves them from mmap, so a freed chunk goes back to the system. */
#define ENTRY_CHUNK_SHIFT 12
#define EXT_CHUNK_SHIFT 10
#define INDEX_MIN_BUCKETS 16u
#define INDEX_MAX_BUCKETS (1u << 31)

#define ENTRY_USED 1u           /* internal: the slot holds an entry */
/* The caller's origin number lives in the flag bits above FLOW_ENTRY_*: no byte of its own. */
#define ORIGIN_SHIFT 3u
#define ORIGIN_BITS (FLOW_TABLE_ORIGIN_MAX << ORIGIN_SHIFT)
_Static_assert((FLOW_TABLE_ORIGIN_MAX << ORIGIN_SHIFT) <= 0xffu, "the origin fits the flags byte");
_Static_assert(((FLOW_ENTRY_DEAD | FLOW_ENTRY_UPDATED | ENTRY_USED) >> ORIGIN_SHIFT) == 0,
	       "the origin bits are free");

/*
 * `life` is how long the entry had lived at `updated`, in seconds,
 * saturating at LIFE_MAX (194 days): its creation time without a field
 * of its own (flow_table_created()).
 */
struct entry_meta {
	uint32_t updated;
	uint8_t flags;
	uint8_t life[3];
};

#define LIFE_MAX 0xffffffu

static uint32_t life_get(const struct entry_meta *m)
{
	return (uint32_t)m->life[0] << 16 | (uint32_t)m->life[1] << 8 | m->life[2];
}

static void life_set(struct entry_meta *m, uint32_t v)
{
	m->life[0] = (uint8_t)(v >> 16);
	m->life[1] = (uint8_t)(v >> 8);
	m->life[2] = (uint8_t)v;
}

/* `updated` moves to `now`: what lay between joins the entry's life. */
static void meta_touch(struct entry_meta *m, uint32_t now)
{
	uint64_t life = life_get(m);

	if (now > m->updated)
		life += now - m->updated;
	life_set(m, life > LIFE_MAX ? LIFE_MAX : (uint32_t)life);
	m->updated = now;
}

#define ENTRY_META_OFF sizeof(struct flow)
#define ENTRY_USER_OFF (ENTRY_META_OFF + sizeof(struct entry_meta))

struct ext_slot {
	struct flow_ext ext;
	uint32_t labels;                /* labels id, 0 = none */
};

struct flow_table {
	struct arena entries;
	struct arena exts;
	struct labels_pool labels;
	struct rh_index ix;
	uint32_t (*hash)(const struct flow_tuple *key, uint32_t seed);
	uint32_t seed;
	uint32_t limit;                 /* 0 = none */
	uint32_t initial_buckets;
	uint32_t user_bytes;
	uint32_t active;
	uint32_t dead;
	uint32_t max_seen;
	uint64_t inserted;
	uint64_t updated;
	uint64_t deleted;
	uint64_t enospc;
	uint64_t enomem;
	uint64_t einval;
};

_Static_assert(sizeof(struct entry_meta) == 8, "entry metadata must stay 8 bytes");
_Static_assert(ENTRY_USER_OFF % 8 == 0, "the user area must be 8-byte aligned");

static inline struct flow *entry_flow(const struct flow_table *t, uint32_t h)
{
	return arena_slot(&t->entries, h);
}

static inline struct entry_meta *entry_meta(const struct flow_table *t, uint32_t h)
{
	return (struct entry_meta *)((unsigned char *)arena_slot(&t->entries, h) + ENTRY_META_OFF);
}

static inline struct ext_slot *ext_slot(const struct flow_table *t, uint32_t xh)
{
	return arena_slot(&t->exts, xh);
}

static inline bool entry_valid(const struct flow_table *t, uint32_t h)
{
	return h != 0 && h <= t->entries.high && (entry_meta(t, h)->flags & ENTRY_USED);
}

static inline uint32_t entry_ext_handle(const struct flow *f)
{
	return (f->attrs & FLOW_A_EXT_MASK) ? f->ext : 0;
}

static inline uint32_t entry_labels_id(const struct flow_table *t, const struct flow *f)
{
	if (f->attrs & FLOW_A_EXT_MASK)
		return ext_slot(t, f->ext)->labels;
	return (f->attrs & FLOW_A_LABELS) ? f->ext : 0;
}

static uint32_t round_up_pow2(uint32_t n)
{
	uint32_t p = INDEX_MIN_BUCKETS;

	while (p < n && p < INDEX_MAX_BUCKETS)
		p <<= 1;
	return p;
}

int flow_table_new(const struct flow_table_options *opts, struct flow_table **out)
{
	struct flow_table *t;
	uint32_t buckets = opts->buckets ? opts->buckets : FLOW_TABLE_DEFAULT_BUCKETS;
	uint32_t slot;

	if (opts->user_bytes > FLOW_TABLE_USER_MAX)
		return -EINVAL;
	/* No more buckets than the limit can fill to 3/4. */
	if (opts->limit) {
		uint64_t need = (uint64_t)opts->limit * 4 / 3 + 1;

		if (need < buckets)
			buckets = (uint32_t)need;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->hash = opts->hash ? opts->hash : flow_tuple_hash;
	t->seed = opts->seed;
	t->limit = opts->limit;
	t->user_bytes = opts->user_bytes;
	t->initial_buckets = round_up_pow2(buckets);
	slot = (ENTRY_USER_OFF + opts->user_bytes + 7) & ~7u;
	arena_init(&t->entries, slot, ENTRY_CHUNK_SHIFT);
	arena_init(&t->exts, sizeof(struct ext_slot), EXT_CHUNK_SHIFT);
	/* Label ids must not be predictable from the entry seed alone. */
	labels_init(&t->labels, opts->seed ^ 0x9e3779b9u);
	if (rh_init(&t->ix, t->initial_buckets) < 0) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void flow_table_free(struct flow_table *t)
{
	if (!t)
		return;
	arena_reset(&t->entries);
	arena_reset(&t->exts);
	labels_fini(&t->labels);
	rh_fini(&t->ix);
	free(t);
}

/* The key must be in the canonical form flow.h describes, or equal keys would differ. */
static bool key_is_normal(const struct flow *f)
{
	static const uint8_t zero[12];
	const struct flow_tuple *k = &f->orig;

	if (k->family == AF_INET) {
		if (memcmp(k->src.bytes + 4, zero, sizeof(zero)) != 0 ||
		    memcmp(k->dst.bytes + 4, zero, sizeof(zero)) != 0)
			return false;
	} else if (k->family != AF_INET6) {
		return false;
	}
	if (!(f->attrs & (FLOW_A_PORTS | FLOW_A_ICMP)) && k->l4.raw != 0)
		return false;
	return true;
}

struct key_ctx {
	const struct flow_table *t;
	const struct flow_tuple *key;
};

static bool key_eq(const void *ctx, uint32_t h)
{
	const struct key_ctx *k = ctx;

	return flow_tuple_equal(&entry_flow(k->t, h)->orig, k->key);
}

static uint32_t find(const struct flow_table *t, const struct flow_tuple *key, uint32_t hash)
{
	struct key_ctx k = { .t = t, .key = key };

	return rh_find(&t->ix, hash, key_eq, &k);
}

uint32_t flow_table_lookup(const struct flow_table *t, const struct flow_tuple *key)
{
	return find(t, key, t->hash(key, t->seed));
}

uint32_t flow_table_hash(const struct flow_table *t, const struct flow_tuple *key)
{
	return t->hash(key, t->seed);
}

void flow_table_prefetch(const struct flow_table *t, uint32_t hash)
{
	__builtin_prefetch(&t->ix.slots[hash & t->ix.mask]);
}

uint32_t flow_table_lookup_hashed(const struct flow_table *t, const struct flow_tuple *key,
				  uint32_t hash)
{
	return find(t, key, hash);
}

/* Room in the index for one more handle, growing it at 3/4. */
static int index_reserve(struct flow_table *t)
{
	uint64_t n = (uint64_t)t->ix.count + 1;
	uint32_t b = rh_buckets(&t->ix);

	if (n * 4 <= (uint64_t)b * 3)
		return 0;
	if (b <= INDEX_MAX_BUCKETS / 2 && rh_resize(&t->ix, b * 2) == 0)
		return 0;
	/*
	 * The index could not grow: keep inserting up to 7/8, where probes
	 * are still short, and retry the growth on the next insert.
	 */
	if (n * 8 <= (uint64_t)b * 7)
		return 0;
	return -ENOMEM;
}

/*
 * Write `in` over the entry `h`, whose previous parts are described by its
 * current flow (a fresh slot is zeroed by the caller: no parts).  `lw` is
 * the trimmed label word count.  Returns whether the content changed, or
 * -ENOMEM with the entry untouched.  New parts are taken before old ones
 * are released, so re-interning the same label set never frees it.
 */
static int entry_store(struct flow_table *t, uint32_t h, const struct flow_full *in, unsigned lw)
{
	struct flow *e = entry_flow(t, h);
	uint32_t old_xh = entry_ext_handle(e);
	uint32_t old_lid = entry_labels_id(t, e);
	uint32_t attrs = in->flow.attrs & ~FLOW_A_LABELS;
	uint32_t xh = 0, lid = 0;
	struct flow nf;
	bool changed;
	int err = 0;

	if (lw) {
		lid = labels_intern(&t->labels, in->labels.w, lw, &err);
		if (!lid)
			return err;
		attrs |= FLOW_A_LABELS;
	}
	if (attrs & FLOW_A_EXT_MASK) {
		xh = old_xh ? old_xh : arena_alloc(&t->exts);
		if (!xh) {
			labels_release(&t->labels, lid);
			return -ENOMEM;
		}
	}
	/* Nothing can fail from here on. */
	nf = in->flow;
	nf.attrs = attrs;
	nf.ext = xh ? xh : lid;
	changed = memcmp(e, &nf, sizeof(nf)) != 0 || lid != old_lid;
	if (xh) {
		struct ext_slot *x = ext_slot(t, xh);

		if (!changed && memcmp(&x->ext, &in->ext, sizeof(x->ext)) != 0)
			changed = true;
		x->ext = in->ext;
		x->labels = lid;
	}
	*e = nf;
	labels_release(&t->labels, old_lid);
	if (old_xh && !xh)
		arena_free(&t->exts, old_xh);
	return changed;
}

static int entry_insert(struct flow_table *t, uint32_t hash, const struct flow_full *in,
			unsigned lw, uint32_t now, uint32_t *handle)
{
	struct entry_meta *m;
	uint32_t h;
	int err;

	if (t->limit && t->active + t->dead >= t->limit) {
		t->enospc++;
		return -ENOSPC;
	}
	if (index_reserve(t) < 0)
		goto enomem;
	h = arena_alloc(&t->entries);
	if (!h)
		goto enomem;
	/* A fresh slot: no previous parts, and not USED until it is complete. */
	memset(arena_slot(&t->entries, h), 0, ENTRY_USER_OFF);
	m = entry_meta(t, h);
	err = entry_store(t, h, in, lw);
	if (err < 0) {
		arena_free(&t->entries, h);
		goto enomem;
	}
	m->updated = now;
	m->flags = ENTRY_USED;
	if (t->user_bytes)
		memset((unsigned char *)entry_flow(t, h) + ENTRY_USER_OFF, 0, t->user_bytes);
	rh_insert(&t->ix, hash, h);
	t->active++;
	if (t->active + t->dead > t->max_seen)
		t->max_seen = t->active + t->dead;
	t->inserted++;
	*handle = h;
	return FLOW_UPSERT_INSERTED;
enomem:
	t->enomem++;
	return -ENOMEM;
}

int flow_table_upsert(struct flow_table *t, const struct flow_full *in, uint32_t now,
		      uint32_t *handle)
{
	return flow_table_upsert_hashed(t, in, t->hash(&in->flow.orig, t->seed), now, handle);
}

int flow_table_upsert_hashed(struct flow_table *t, const struct flow_full *in, uint32_t hash,
			     uint32_t now, uint32_t *handle)
{
	unsigned lw = 0;
	uint32_t h;
	struct entry_meta *m;
	int changed;

	if (!key_is_normal(&in->flow))
		goto einval;
	if (in->flow.attrs & FLOW_A_LABELS) {
		lw = in->labels.words;
		if (lw > FLOW_LABEL_WORDS_MAX)
			goto einval;
		while (lw && in->labels.w[lw - 1] == 0)
			lw--;
	}
	h = find(t, &in->flow.orig, hash);
	if (!h)
		return entry_insert(t, hash, in, lw, now, handle);

	changed = entry_store(t, h, in, lw);
	if (changed < 0) {
		t->enomem++;
		return changed;
	}
	*handle = h;
	m = entry_meta(t, h);
	if (m->flags & FLOW_ENTRY_DEAD) {
		/* Live again as a fresh entry: its life starts over. */
		m->updated = now;
		life_set(m, 0);
		m->flags = ENTRY_USED;
		t->dead--;
		t->active++;
		t->inserted++;
		return FLOW_UPSERT_REVIVED;
	}
	meta_touch(m, now);
	m->flags |= FLOW_ENTRY_UPDATED;
	t->updated++;
	return changed ? FLOW_UPSERT_UPDATED : FLOW_UPSERT_UNCHANGED;
einval:
	t->einval++;
	return -EINVAL;
}

const struct flow *flow_table_flow(const struct flow_table *t, uint32_t h)
{
	return entry_valid(t, h) ? entry_flow(t, h) : NULL;
}

const struct flow_ext *flow_table_ext(const struct flow_table *t, uint32_t h)
{
	uint32_t xh;

	if (!entry_valid(t, h))
		return NULL;
	xh = entry_ext_handle(entry_flow(t, h));
	return xh ? &ext_slot(t, xh)->ext : NULL;
}

const uint32_t *flow_table_labels(const struct flow_table *t, uint32_t h, unsigned *words)
{
	uint32_t lid;

	*words = 0;
	if (!entry_valid(t, h))
		return NULL;
	lid = entry_labels_id(t, entry_flow(t, h));
	return lid ? labels_words(&t->labels, lid, words) : NULL;
}

void *flow_table_user(const struct flow_table *t, uint32_t h)
{
	if (!t->user_bytes || !entry_valid(t, h))
		return NULL;
	return (unsigned char *)entry_flow(t, h) + ENTRY_USER_OFF;
}

unsigned flow_table_flags(const struct flow_table *t, uint32_t h)
{
	return entry_valid(t, h) ? entry_meta(t, h)->flags & ~(ENTRY_USED | ORIGIN_BITS) : 0;
}

void flow_table_set_origin(struct flow_table *t, uint32_t h, unsigned origin)
{
	struct entry_meta *m;

	if (!entry_valid(t, h) || origin > FLOW_TABLE_ORIGIN_MAX)
		return;
	m = entry_meta(t, h);
	m->flags = (uint8_t)((m->flags & ~ORIGIN_BITS) | origin << ORIGIN_SHIFT);
}

unsigned flow_table_origin(const struct flow_table *t, uint32_t h)
{
	return entry_valid(t, h) ? (entry_meta(t, h)->flags & ORIGIN_BITS) >> ORIGIN_SHIFT : 0;
}

uint32_t flow_table_updated(const struct flow_table *t, uint32_t h)
{
	return entry_valid(t, h) ? entry_meta(t, h)->updated : 0;
}

uint32_t flow_table_created(const struct flow_table *t, uint32_t h)
{
	const struct entry_meta *m;

	if (!entry_valid(t, h))
		return 0;
	m = entry_meta(t, h);
	return m->updated > life_get(m) ? m->updated - life_get(m) : 0;
}

int flow_table_export(const struct flow_table *t, uint32_t h, struct flow_full *out)
{
	const struct flow *e;
	uint32_t xh, lid;

	if (!entry_valid(t, h))
		return -ENOENT;
	e = entry_flow(t, h);
	out->flow = *e;
	out->flow.ext = 0;
	xh = entry_ext_handle(e);
	if (xh)
		out->ext = ext_slot(t, xh)->ext;
	else
		memset(&out->ext, 0, sizeof(out->ext));
	lid = entry_labels_id(t, e);
	out->labels.words = 0;
	if (lid) {
		unsigned words;
		const uint32_t *w = labels_words(&t->labels, lid, &words);

		memcpy(out->labels.w, w, words * sizeof(*w));
		out->labels.words = (uint16_t)words;
	}
	return 0;
}

int flow_table_mark_dead(struct flow_table *t, uint32_t h, uint32_t now)
{
	struct entry_meta *m;

	if (!entry_valid(t, h))
		return -ENOENT;
	m = entry_meta(t, h);
	if (!(m->flags & FLOW_ENTRY_DEAD)) {
		m->flags |= FLOW_ENTRY_DEAD;
		meta_touch(m, now);
		t->active--;
		t->dead++;
	}
	return 0;
}

int flow_table_delete(struct flow_table *t, uint32_t h)
{
	struct entry_meta *m;
	struct flow *e;
	uint32_t xh;

	if (!entry_valid(t, h))
		return -ENOENT;
	e = entry_flow(t, h);
	m = entry_meta(t, h);
	rh_remove(&t->ix, t->hash(&e->orig, t->seed), h);
	labels_release(&t->labels, entry_labels_id(t, e));
	xh = entry_ext_handle(e);
	if (xh)
		arena_free(&t->exts, xh);
	if (m->flags & FLOW_ENTRY_DEAD)
		t->dead--;
	else
		t->active--;
	m->flags = 0;
	arena_free(&t->entries, h);
	t->deleted++;
	return 0;
}

uint32_t flow_table_next(const struct flow_table *t, uint32_t *cursor)
{
	const struct arena *a = &t->entries;
	uint32_t i = *cursor;           /* index of the next slot to look at = last handle */

	/* Walk each chunk with a pointer: a pass over 1M slots stays a linear scan. */
	while (i < a->high) {
		uint32_t chunk_end = ((i >> a->shift) + 1) << a->shift;
		uint32_t end = chunk_end < a->high ? chunk_end : a->high;
		const unsigned char *p = arena_slot(a, i + 1);

		p += ENTRY_META_OFF;

		for (; i < end; i++, p += a->slot_size) {
			if (((const struct entry_meta *)p)->flags & ENTRY_USED) {
				*cursor = i + 1;
				return i + 1;
			}
		}
	}
	*cursor = i;
	return 0;
}

void flow_table_clear(struct flow_table *t)
{
	t->deleted += (uint64_t)t->active + t->dead;
	t->active = 0;
	t->dead = 0;
	arena_reset(&t->entries);
	arena_reset(&t->exts);
	labels_fini(&t->labels);
	if (rh_buckets(&t->ix) != t->initial_buckets) {
		struct rh_index n;

		if (rh_init(&n, t->initial_buckets) == 0) {
			rh_fini(&t->ix);
			t->ix = n;
			return;
		}
	}
	rh_clear(&t->ix);
}

uint32_t flow_table_count(const struct flow_table *t)
{
	return t->active + t->dead;
}

size_t flow_table_memory(const struct flow_table *t)
{
	return sizeof(*t) + arena_memory(&t->entries) + arena_memory(&t->exts) +
	       labels_memory(&t->labels) + (size_t)rh_buckets(&t->ix) * sizeof(struct rh_slot);
}

void flow_table_set_limit(struct flow_table *t, uint32_t limit)
{
	t->limit = limit;
}

void flow_table_stats(const struct flow_table *t, struct flow_table_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->active = t->active;
	out->dead = t->dead;
	out->max_seen = t->max_seen;
	out->ext = t->exts.live;
	out->label_sets = t->labels.live;
	out->buckets = rh_buckets(&t->ix);
	out->limit = t->limit;
	out->inserted = t->inserted;
	out->updated = t->updated;
	out->deleted = t->deleted;
	out->enospc = t->enospc;
	out->enomem = t->enomem;
	out->einval = t->einval;
	out->memory = flow_table_memory(t);
}
