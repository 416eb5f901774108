/*
 * flow.c - keys of flows: equality and hashing.
 */
#include "flow.h"

#include <string.h>
#include <sys/socket.h>

/* The record sizes are part of the memory budget (DESIGN.md: performance). */
_Static_assert(sizeof(struct flow_tuple) == 40, "flow_tuple must stay 40 bytes");
_Static_assert(sizeof(struct flow) == 64, "flow must stay 64 bytes");

/*
 * Tuples are normalised (unused address bytes and l4 bytes are zero), so
 * the key is exactly the 40 bytes of the tuple.
 */
bool flow_tuple_equal(const struct flow_tuple *a, const struct flow_tuple *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static inline uint32_t rotl32(uint32_t x, int r)
{
	return (x << r) | (x >> (32 - r));
}

/* MurmurHash3's 32-bit body and finaliser over the ten words of the key. */
uint32_t flow_tuple_hash(const struct flow_tuple *t, uint32_t seed)
{
	uint32_t words[sizeof(*t) / 4];
	uint32_t h = seed;

	memcpy(words, t, sizeof(words));
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		uint32_t k = words[i] * 0xcc9e2d51u;

		k = rotl32(k, 15) * 0x1b873593u;
		h ^= k;
		h = rotl32(h, 13) * 5u + 0xe6546b64u;
	}
	h ^= (uint32_t)sizeof(words);
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static void addr_normalize(union flow_addr *a, uint8_t family)
{
	if (family == AF_INET)
		memset(&a->bytes[4], 0, sizeof(a->bytes) - 4);
}

void flow_full_normalize(struct flow_full *ff)
{
	struct flow *f = &ff->flow;
	struct flow_ext *x = &ff->ext;
	uint32_t a = f->attrs;

	memset(&ff->counters, 0, sizeof(ff->counters));
	addr_normalize(&f->orig.src, f->orig.family);
	addr_normalize(&f->orig.dst, f->orig.family);
	if (!(a & (FLOW_A_PORTS | FLOW_A_ICMP)))
		f->orig.l4.raw = 0;
	if (!(a & FLOW_A_ZONE))
		f->orig.zone = 0;
	if (!(a & FLOW_A_STATUS))
		f->status = 0;
	if (!(a & FLOW_A_TIMEOUT))
		f->timeout = 0;
	if (!(a & FLOW_A_MARK))
		f->mark = 0;
	if (!(a & FLOW_A_PROTO_STATE))
		f->proto_state = 0;
	if (!(a & FLOW_A_DCCP_ROLE))
		f->dccp_role = 0;
	if (!(a & FLOW_A_WSCALE))
		f->wscale_orig = f->wscale_repl = 0;
	f->ext = 0;

	if (a & FLOW_A_SNAT)
		addr_normalize(&x->snat, f->orig.family);
	else
		memset(&x->snat, 0, sizeof(x->snat));
	if (a & FLOW_A_DNAT)
		addr_normalize(&x->dnat, f->orig.family);
	else
		memset(&x->dnat, 0, sizeof(x->dnat));
	if (!(a & FLOW_A_SPAT))
		x->spat = 0;
	if (!(a & FLOW_A_DPAT))
		x->dpat = 0;
	if (!(a & FLOW_A_SCTP_VTAGS))
		x->sctp_vtag_orig = x->sctp_vtag_repl = 0;
	if (!(a & FLOW_A_NAT_SEQ))
		memset(x->nat_seq, 0, sizeof(x->nat_seq));
	if (!(a & FLOW_A_SYNPROXY_EXT))
		memset(x->synproxy, 0, sizeof(x->synproxy));
	if (a & FLOW_A_MASTER) {
		addr_normalize(&x->master.src, x->master.family);
		addr_normalize(&x->master.dst, x->master.family);
		x->master.zone = 0;
	} else {
		memset(&x->master, 0, sizeof(x->master));
	}
	if (a & FLOW_A_HELPER) {
		size_t n = strnlen(x->helper, sizeof(x->helper) - 1);

		memset(x->helper + n, 0, sizeof(x->helper) - n);
	} else {
		memset(x->helper, 0, sizeof(x->helper));
	}

	if (a & FLOW_A_LABELS) {
		unsigned n = ff->labels.words;

		if (n > FLOW_LABEL_WORDS_MAX)
			n = FLOW_LABEL_WORDS_MAX;
		while (n && ff->labels.w[n - 1] == 0)
			n--;
		ff->labels.words = (uint16_t)n;
		if (!n)
			f->attrs &= ~FLOW_A_LABELS;
	} else {
		ff->labels.words = 0;
	}
}
