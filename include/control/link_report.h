/*
 * control/link_report.h - `-s link` (module control): what the link group
 * exposes (link_group_info) rendered into a report, text or JSON.
 */
#ifndef CTSYNCD_CONTROL_LINK_REPORT_H
#define CTSYNCD_CONTROL_LINK_REPORT_H

#include "link/link.h"
#include "control/report.h"

/*
 * Statistics as `conntrackd -s link` shows them, one section per link
 * ("link_0" ...): device, status RUNNING / NO-CARRIER / DOWN, role
 * ACTIVE / BACKUP, kind, addresses (multicast: the group), MTU, payload
 * limit, bytes, packets and errors sent and received; for TCP also "tcp:
 * server=connected|disconnected client=connected|disconnected" (the tokens
 * upstream's tests grep for), the same as booleans and the connection
 * counters.  Then the channel: active link, payload limit, buffered bytes,
 * queue length and drops, failovers.  Written into the report's current
 * section.  `n` links of links[]; channel->active indexes them.
 */
void control_report_links(struct report *r, const struct link_info *links, unsigned n,
			  const struct link_channel_info *channel);

/* The same from a snapshot of `g` taken now. */
void control_report_link_group(struct report *r, const struct link_group *g);

#endif
