/*
 * flow/keyset.h - a set of flow keys, kept as 64-bit hashes (two seeded
 * flow_tuple_hash() values): what a bulk walk of the kernel table must not
 * send again because an event already said it ended.  Growing, open
 * addressing; a false match takes about 2^-64 per pair of keys.
 */
#ifndef CTSYNCD_FLOW_KEYSET_H
#define CTSYNCD_FLOW_KEYSET_H

#include <stdbool.h>
#include <stdint.h>

#include "flow/flow.h"

struct flow_keyset {
	uint64_t *slot;                 /* 0 = free */
	uint32_t mask;                  /* slots - 1; no slots while empty */
	uint32_t count;
	uint32_t seed;
};

/* An empty set whose hashes use `seed`; allocates nothing until the first add. */
void flow_keyset_init(struct flow_keyset *s, uint32_t seed);
/* Add the key of `t`.  0, or -ENOMEM (the set is unchanged). */
int flow_keyset_add(struct flow_keyset *s, const struct flow_tuple *t);
bool flow_keyset_has(const struct flow_keyset *s, const struct flow_tuple *t);
/* Empty it and give its memory back. */
void flow_keyset_clear(struct flow_keyset *s);

#endif
