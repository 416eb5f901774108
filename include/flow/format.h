/*
 * flow/format.h - a flow as one line of text, in the shape of
 * `conntrack -L` and `conntrackd -i/-e`:
 *
 *   tcp      6 ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80
 *       src=10.0.0.2 dst=10.0.0.1 sport=80 dport=1234 [ASSURED] mark=7 zone=5
 *
 * (one line).  Pure: writes into a caller's buffer.
 */
#ifndef CTSYNCD_FLOW_FORMAT_H
#define CTSYNCD_FLOW_FORMAT_H

#include <stddef.h>

#include "flow/flow.h"

enum flow_format_opt {
	FLOW_FMT_TIMEOUT = 1u << 0,   /* the remaining timeout after the protocol number */
	FLOW_FMT_REPLY   = 1u << 1,   /* the reply tuple, rebuilt from the original and NAT */
	FLOW_FMT_COUNTERS = 1u << 2,  /* packets= bytes= after each tuple, when f->counters has them */
	FLOW_FMT_PLAIN   = 1u << 4,   /* none of ctsyncd's extras (labels=, master=): conntrack's own line */
};

/* Longest line flow_format() writes, NUL included (labels print as a hex mask). */
#define FLOW_FORMAT_MAX 4096

/*
 * Format `f` (labels are read only when FLOW_A_LABELS) into `buf`.
 * Returns the length written without the NUL, as snprintf: a return of
 * `cap` or more means the line was cut.  No newline is added.
 */
int flow_format(char *buf, size_t cap, const struct flow_full *f, unsigned opts);

/* The reply tuple of a flow: the original inverted, with the NAT addresses and ports. */
void flow_reply_tuple(const struct flow_full *f, struct flow_tuple *reply);

/*
 * `f` in the XML of conntrackd 1.4.7's -i -x / -e -x, one <flow> element:
 * the original tuple, the reply tuple (FLOW_FMT_REPLY: rebuilt from the
 * original and the NAT; without it, the empty "unknown" reply that 1.4.7
 * prints for the states of its external cache), TCP state, timeout
 * (FLOW_FMT_TIMEOUT), mark, zone, assured, unreplied, helper.  Returns as
 * flow_format().
 */
int flow_format_xml(char *buf, size_t cap, const struct flow_full *f, unsigned opts);

/*
 * An expectation in the shape of `conntrack -L expect`: the timeout
 * (FLOW_FMT_TIMEOUT; conntrackd's -i expect has none), the expected tuple,
 * the mask, the master, zone, flags, class and helper, then, unless
 * FLOW_FMT_PLAIN, ctsyncd's NAT and expect function.  Returns as
 * flow_format().
 */
int flow_exp_format(char *buf, size_t cap, const struct flow_exp *x, unsigned opts);
/*
 * The same in the XML of 1.4.7's -i expect -x: the expected, mask and
 * master tuples, helper, timeout (FLOW_FMT_TIMEOUT), class, zone and flags.
 */
int flow_exp_format_xml(char *buf, size_t cap, const struct flow_exp *x, unsigned opts);

/* "ESTABLISHED", "COOKIE_WAIT", ... for the flow's protocol, or NULL if none. */
const char *flow_state_name(uint8_t l4proto, uint8_t state);

#endif
