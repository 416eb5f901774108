/*
 * flow/filter.h - the `General { Filter { ... } }` of conntrackd.conf,
 * compiled for fast checks (protocol.md §6 "Filtering").
 *
 * A filter has up to three parts, each Accept or Ignore:
 *
 *  Protocol  the flow's IP protocol number.
 *  Address   the flow's two real endpoints: the original source and the
 *            reply source (the DNAT'ed address when FLOW_A_DNAT is set, the
 *            original destination otherwise), so NAT does not change the
 *            verdict.  An endpoint matches when it equals a listed exact
 *            address or lies in a listed network; the flow matches when
 *            EITHER endpoint matches.  IPv4 entries only match IPv4 flows,
 *            IPv6 entries IPv6 flows.
 *  State     the TCP state of TCP flows.  Non-TCP flows, and TCP flows
 *            without a known state, are not concerned and pass this part.
 *
 * Accept: the flow passes the part iff it matches.  Ignore: iff it does
 * not.  A flow passes the filter iff it passes every part present; parts
 * are checked in the order protocol, address, state and the first failing
 * one decides.  Consequences worth knowing (they are conntrackd 1.4.7's):
 * an `Address Accept` listing only IPv4 addresses drops every IPv6 flow;
 * an empty Accept list drops everything; a part that is absent passes
 * everything.
 *
 * Exact addresses (/32, /128) and networks are kept alike: grouped by
 * prefix length, each group a sorted array of masked addresses, so a check
 * costs one binary search per distinct prefix length per endpoint.  Host
 * bits set beyond the prefix (10.1.2.3/8) are masked away, so the entry
 * means the network 10.0.0.0/8; the config parser masks them already, the
 * filter does it again so as not to depend on it.
 *
 * Pure: no system calls.  The rules are immutable once built; the counters
 * are the only state that changes (flow_filter_pass()).  Built at start-up
 * and on reload, never on the event path.
 */
#ifndef CTSYNCD_FLOW_FILTER_H
#define CTSYNCD_FLOW_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "flow/flow.h"

struct flow_filter;

enum flow_filter_kind {
	FLOW_FILTER_PROTO,
	FLOW_FILTER_ADDR,
	FLOW_FILTER_STATE,
	FLOW_FILTER_KINDS,
};

/* Verdict of flow_filter_check(): PASS, or which part dropped the flow. */
enum flow_filter_verdict {
	FLOW_FILTER_PASS = 0,
	FLOW_FILTER_DROP_PROTO = 1 + FLOW_FILTER_PROTO,
	FLOW_FILTER_DROP_ADDR = 1 + FLOW_FILTER_ADDR,
	FLOW_FILTER_DROP_STATE = 1 + FLOW_FILTER_STATE,
};

/*
 * Per part: flows that reached the part and passed it (State: including
 * non-TCP flows and flows without a state) and flows it dropped.  A part
 * that is not configured counts nothing.
 */
struct flow_filter_stats {
	uint64_t checked;
	uint64_t passed;
	uint64_t part_passed[FLOW_FILTER_KINDS];
	uint64_t part_dropped[FLOW_FILTER_KINDS];
};

/*
 * Compile `cfg` (NULL, or a config without a Filter block, gives a filter
 * that passes everything).  Returns the filter, owned by the caller, or
 * NULL with *err = -ENOMEM, or -EINVAL for an address whose family is not
 * AF_INET/AF_INET6 or whose prefix is too long for it.  The filter does
 * not refer to `cfg` afterwards.
 */
struct flow_filter *flow_filter_new(const struct config_filter *cfg, int *err);
void flow_filter_free(struct flow_filter *f);

/* True when the filter has no part: every flow passes. */
bool flow_filter_is_empty(const struct flow_filter *f);

/*
 * The verdict for a flow and its ext (`ext` may be NULL when the flow has
 * no FLOW_A_EXT_MASK bit; only ext->dnat is read, under FLOW_A_DNAT).
 * Counts nothing.  A flow whose family is neither AF_INET nor AF_INET6
 * matches no address.
 */
enum flow_filter_verdict flow_filter_check(const struct flow_filter *f, const struct flow *flow,
					   const struct flow_ext *ext);

/* flow_filter_check() == PASS, counted in the filter's statistics. */
bool flow_filter_pass(struct flow_filter *f, const struct flow *flow, const struct flow_ext *ext);

static inline bool flow_filter_pass_full(struct flow_filter *f, const struct flow_full *ff)
{
	return flow_filter_pass(f, &ff->flow, &ff->ext);
}

void flow_filter_stats(const struct flow_filter *f, struct flow_filter_stats *out);

#endif
