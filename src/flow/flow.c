/*
 * flow.c - keys of flows (equality, hashing, normal form) and the merge of a partial update.
 */
#include "flow/flow.h"

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

/*
 * The key's five 64-bit words, each mixed in with one multiplication and a
 * fold of the high half into the low half (the index uses the low bits),
 * then MurmurHash3's 64-bit finaliser.  A third of the instructions of
 * MurmurHash3-32 over ten words, for the same spread of the low bits; the
 * seed is random per table.  Every received state and kernel event is
 * hashed at least once.
 */
uint32_t flow_tuple_hash(const struct flow_tuple *t, uint32_t seed)
{
	uint64_t words[sizeof(*t) / 8];
	uint64_t h = seed * 0x9e3779b97f4a7c15u;

	_Static_assert(sizeof(*t) % 8 == 0, "the key must be whole 64-bit words");
	memcpy(words, t, sizeof(words));
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		h = (h ^ words[i]) * 0xff51afd7ed558ccdu;
		h ^= h >> 32;
	}
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53u;
	h ^= h >> 33;
	return (uint32_t)h;
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

/*
 * An UPDATE event carries only what changed (kernel.h): the fields it has
 * replace the stored ones, the others stay, so that a partial event never
 * erases protocol state, NAT or labels that the peer needs.
 */
void flow_merge_update(struct flow_full *cur, const struct flow_full *ev, bool labels_whole)
{
	const struct flow *e = &ev->flow;
	struct flow *f = &cur->flow;
	uint32_t a = e->attrs;

	if (a & FLOW_A_STATUS)
		f->status = e->status;
	if (a & FLOW_A_TIMEOUT)
		f->timeout = e->timeout;
	if (a & FLOW_A_MARK)
		f->mark = e->mark;
	if (a & FLOW_A_PROTO_STATE)
		f->proto_state = e->proto_state;
	if (a & FLOW_A_DCCP_ROLE)
		f->dccp_role = e->dccp_role;
	if (a & FLOW_A_WSCALE) {
		f->wscale_orig = e->wscale_orig;
		f->wscale_repl = e->wscale_repl;
	}
	if (a & (FLOW_A_SNAT | FLOW_A_SPAT | FLOW_A_DNAT | FLOW_A_DPAT)) {
		/* The reply tuple is in every event: NAT as derived from it is complete. */
		f->attrs &= ~(FLOW_A_SNAT | FLOW_A_SPAT | FLOW_A_DNAT | FLOW_A_DPAT);
		cur->ext.snat = ev->ext.snat;
		cur->ext.dnat = ev->ext.dnat;
		cur->ext.spat = ev->ext.spat;
		cur->ext.dpat = ev->ext.dpat;
	}
	if (a & FLOW_A_NAT_SEQ)
		memcpy(cur->ext.nat_seq, ev->ext.nat_seq, sizeof(cur->ext.nat_seq));
	if (a & FLOW_A_SCTP_VTAGS) {
		cur->ext.sctp_vtag_orig = ev->ext.sctp_vtag_orig;
		cur->ext.sctp_vtag_repl = ev->ext.sctp_vtag_repl;
	}
	if (a & FLOW_A_MASTER)
		cur->ext.master = ev->ext.master;
	if (a & FLOW_A_HELPER)
		memcpy(cur->ext.helper, ev->ext.helper, sizeof(cur->ext.helper));
	if (a & FLOW_A_SYNPROXY_EXT)
		memcpy(cur->ext.synproxy, ev->ext.synproxy, sizeof(cur->ext.synproxy));
	if (a & FLOW_A_LABELS) {
		cur->labels.words = ev->labels.words;
		memcpy(cur->labels.w, ev->labels.w, ev->labels.words * sizeof(uint32_t));
		f->attrs &= ~FLOW_A_LABELS_GONE;
	} else if (labels_whole && (f->attrs & FLOW_A_LABELS)) {
		cur->labels.words = 0;
		f->attrs &= ~FLOW_A_LABELS;
		f->attrs |= FLOW_A_LABELS_GONE;
	}
	f->attrs |= a;
}
