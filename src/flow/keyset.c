/*
 * keyset.c - a set of flow keys by 64-bit hash (flow/keyset.h).
 */
#include "flow/keyset.h"

#include <errno.h>
#include <stdlib.h>

#define KEYSET_MIN_SLOTS 256u

static uint64_t key_of(const struct flow_keyset *s, const struct flow_tuple *t)
{
	uint64_t k = (uint64_t)flow_tuple_hash(t, s->seed) << 32 | flow_tuple_hash(t, s->seed ^ 0x9e3779b9u);

	return k ? k : 1;               /* 0 marks a free slot */
}

static void put(uint64_t *slot, uint32_t mask, uint64_t k)
{
	uint32_t i = (uint32_t)k & mask;

	while (slot[i] && slot[i] != k)
		i = (i + 1) & mask;
	slot[i] = k;
}

void flow_keyset_init(struct flow_keyset *s, uint32_t seed)
{
	*s = (struct flow_keyset){ .seed = seed };
}

int flow_keyset_add(struct flow_keyset *s, const struct flow_tuple *t)
{
	uint64_t k = key_of(s, t);

	if (flow_keyset_has(s, t))
		return 0;
	/* At most half full: probes stay short. */
	if (!s->slot || (s->count + 1) * 2 > s->mask + 1) {
		uint32_t n = s->slot ? (s->mask + 1) * 2 : KEYSET_MIN_SLOTS;
		uint64_t *slot;

		if (n == 0 || !(slot = calloc(n, sizeof(*slot))))
			return -ENOMEM;
		for (uint32_t i = 0; s->slot && i <= s->mask; i++)
			if (s->slot[i])
				put(slot, n - 1, s->slot[i]);
		free(s->slot);
		s->slot = slot;
		s->mask = n - 1;
	}
	put(s->slot, s->mask, k);
	s->count++;
	return 0;
}

bool flow_keyset_has(const struct flow_keyset *s, const struct flow_tuple *t)
{
	uint64_t k;
	uint32_t i;

	if (!s->count)
		return false;
	k = key_of(s, t);
	for (i = (uint32_t)k & s->mask; s->slot[i]; i = (i + 1) & s->mask)
		if (s->slot[i] == k)
			return true;
	return false;
}

void flow_keyset_clear(struct flow_keyset *s)
{
	free(s->slot);
	flow_keyset_init(s, s->seed);
}
