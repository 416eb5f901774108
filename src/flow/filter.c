/*
 * filter.c - the compiled Filter (see flow_filter.h for the semantics).
 */
#include "flow/filter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Addresses of one family and one prefix length, masked and sorted. */
struct addr_group {
	uint8_t prefix;
	uint32_t mask[4];               /* network order; IPv4 uses mask[0] */
	uint32_t count;
	uint32_t (*addrs)[4];           /* IPv4 uses [i][0], the rest stay zero */
};

struct addr_family_set {
	unsigned ngroups;
	struct addr_group *groups;
};

struct flow_filter {
	bool proto_set, proto_accept;
	bool addr_set, addr_accept;
	bool state_set, state_accept;
	uint8_t protos[32];             /* bit n = IP protocol n */
	uint16_t tcp_states;            /* bit n = tcp_conntrack state n */
	struct addr_family_set v4, v6;
	struct flow_filter_stats stats;
};

static void prefix_mask(unsigned prefix, unsigned words, uint32_t mask[4])
{
	memset(mask, 0, 4 * sizeof(*mask));
	for (unsigned i = 0; i < words; i++) {
		unsigned bits = prefix > 32 * i ? prefix - 32 * i : 0;

		if (bits >= 32)
			mask[i] = 0xffffffffu;
		else if (bits > 0)
			mask[i] = htonl(~0u << (32 - bits));
	}
}

static int addr_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 4 * sizeof(uint32_t));
}

static void family_set_free(struct addr_family_set *s)
{
	for (unsigned i = 0; i < s->ngroups; i++)
		free(s->groups[i].addrs);
	free(s->groups);
	s->groups = NULL;
	s->ngroups = 0;
}

/*
 * Build the groups of one family from the configured addresses: count per
 * prefix length, allocate, fill with masked addresses, sort, drop duplicates.
 * Groups are ordered by decreasing prefix, exact addresses first.
 */
static int family_set_build(struct addr_family_set *s, const struct config_filter_addresses *cfg,
			    int family)
{
	unsigned words = family == AF_INET ? 1 : 4, maxp = 32 * words;
	uint32_t per_prefix[129] = { 0 };
	unsigned ngroups = 0;

	for (unsigned i = 0; i < cfg->count; i++) {
		const struct config_addr *a = &cfg->addrs[i];

		if (a->family != family)
			continue;
		if (a->prefix > maxp)
			return -EINVAL;
		if (per_prefix[a->prefix]++ == 0)
			ngroups++;
	}
	if (!ngroups)
		return 0;
	s->groups = calloc(ngroups, sizeof(*s->groups));
	if (!s->groups)
		return -ENOMEM;
	for (int p = (int)maxp; p >= 0; p--) {
		struct addr_group *g;

		if (!per_prefix[p])
			continue;
		g = &s->groups[s->ngroups++];
		g->prefix = (uint8_t)p;
		prefix_mask((unsigned)p, words, g->mask);
		g->addrs = calloc(per_prefix[p], sizeof(*g->addrs));
		if (!g->addrs)
			return -ENOMEM;
	}
	for (unsigned i = 0; i < cfg->count; i++) {
		const struct config_addr *a = &cfg->addrs[i];
		struct addr_group *g = NULL;
		uint32_t w[4] = { 0 };

		if (a->family != family)
			continue;
		for (unsigned k = 0; k < s->ngroups; k++)
			if (s->groups[k].prefix == a->prefix)
				g = &s->groups[k];
		if (family == AF_INET)
			w[0] = a->u.v4.s_addr;
		else
			memcpy(w, &a->u.v6, sizeof(w));
		for (unsigned k = 0; k < words; k++)
			g->addrs[g->count][k] = w[k] & g->mask[k];
		g->count++;
	}
	for (unsigned k = 0; k < s->ngroups; k++) {
		struct addr_group *g = &s->groups[k];
		uint32_t n = 0;

		qsort(g->addrs, g->count, sizeof(*g->addrs), addr_cmp);
		for (uint32_t i = 0; i < g->count; i++)
			if (n == 0 || addr_cmp(g->addrs[n - 1], g->addrs[i]) != 0)
				memmove(g->addrs[n++], g->addrs[i], sizeof(*g->addrs));
		g->count = n;
	}
	return 0;
}

void flow_filter_free(struct flow_filter *f)
{
	if (!f)
		return;
	family_set_free(&f->v4);
	family_set_free(&f->v6);
	free(f);
}

struct flow_filter *flow_filter_new(const struct config_filter *cfg, int *err)
{
	struct flow_filter *f = calloc(1, sizeof(*f));
	int r;

	if (!f) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!cfg || !cfg->set)
		return f;
	if (cfg->protocols.set) {
		f->proto_set = true;
		f->proto_accept = cfg->protocols.accept;
		memcpy(f->protos, cfg->protocols.bitmap, sizeof(f->protos));
	}
	if (cfg->states.set) {
		f->state_set = true;
		f->state_accept = cfg->states.accept;
		f->tcp_states = cfg->states.tcp_states;
	}
	if (cfg->addresses.set) {
		const struct config_filter_addresses *ca = &cfg->addresses;

		f->addr_set = true;
		f->addr_accept = ca->accept;
		for (unsigned i = 0; i < ca->count; i++) {
			if (ca->addrs[i].family != AF_INET && ca->addrs[i].family != AF_INET6) {
				r = -EINVAL;
				goto fail;
			}
		}
		r = family_set_build(&f->v4, ca, AF_INET);
		if (r < 0)
			goto fail;
		r = family_set_build(&f->v6, ca, AF_INET6);
		if (r < 0)
			goto fail;
	}
	return f;
fail:
	flow_filter_free(f);
	*err = r;
	return NULL;
}

bool flow_filter_is_empty(const struct flow_filter *f)
{
	return !f->proto_set && !f->addr_set && !f->state_set;
}

static bool group_has(const struct addr_group *g, const uint32_t key[4])
{
	uint32_t lo = 0, hi = g->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = addr_cmp(g->addrs[mid], key);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool addr_listed(const struct addr_family_set *s, const union flow_addr *a, unsigned words)
{
	for (unsigned k = 0; k < s->ngroups; k++) {
		const struct addr_group *g = &s->groups[k];
		uint32_t key[4] = { 0 };

		for (unsigned i = 0; i < words; i++)
			key[i] = a->v6[i] & g->mask[i];
		if (group_has(g, key))
			return true;
	}
	return false;
}

static bool addr_match(const struct flow_filter *f, const struct flow *flow,
		       const struct flow_ext *ext)
{
	const union flow_addr *reply_src = &flow->orig.dst;
	const struct addr_family_set *s;
	unsigned words;

	if (flow->orig.family == AF_INET) {
		s = &f->v4;
		words = 1;
	} else if (flow->orig.family == AF_INET6) {
		s = &f->v6;
		words = 4;
	} else {
		return false;
	}
	if ((flow->attrs & FLOW_A_DNAT) && ext)
		reply_src = &ext->dnat;
	return addr_listed(s, &flow->orig.src, words) || addr_listed(s, reply_src, words);
}

enum flow_filter_verdict flow_filter_check(const struct flow_filter *f, const struct flow *flow,
					   const struct flow_ext *ext)
{
	if (f->proto_set) {
		uint8_t p = flow->orig.l4proto;
		bool listed = f->protos[p / 8] & (1u << (p % 8));

		if (listed != f->proto_accept)
			return FLOW_FILTER_DROP_PROTO;
	}
	if (f->addr_set && addr_match(f, flow, ext) != f->addr_accept)
		return FLOW_FILTER_DROP_ADDR;
	if (f->state_set && flow->orig.l4proto == IPPROTO_TCP &&
	    (flow->attrs & FLOW_A_PROTO_STATE)) {
		bool listed = flow->proto_state < 16 && (f->tcp_states & (1u << flow->proto_state));

		if (listed != f->state_accept)
			return FLOW_FILTER_DROP_STATE;
	}
	return FLOW_FILTER_PASS;
}

bool flow_filter_pass(struct flow_filter *f, const struct flow *flow, const struct flow_ext *ext)
{
	enum flow_filter_verdict v = flow_filter_check(f, flow, ext);
	const bool set[FLOW_FILTER_KINDS] = {
		[FLOW_FILTER_PROTO] = f->proto_set,
		[FLOW_FILTER_ADDR] = f->addr_set,
		[FLOW_FILTER_STATE] = f->state_set,
	};
	/* Parts before the deciding one passed; the deciding one dropped. */
	int last = v == FLOW_FILTER_PASS ? FLOW_FILTER_KINDS : (int)v - 1;

	f->stats.checked++;
	for (int k = 0; k < last; k++)
		if (set[k])
			f->stats.part_passed[k]++;
	if (v == FLOW_FILTER_PASS) {
		f->stats.passed++;
		return true;
	}
	f->stats.part_dropped[last]++;
	return false;
}

void flow_filter_stats(const struct flow_filter *f, struct flow_filter_stats *out)
{
	*out = f->stats;
}
