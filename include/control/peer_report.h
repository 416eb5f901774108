/*
 * control/peer_report.h - the peers of `-s` and `-s network` (module
 * control): each peer's liveness rendered into a report, text or JSON.
 */
#ifndef CTSYNCD_CONTROL_PEER_REPORT_H
#define CTSYNCD_CONTROL_PEER_REPORT_H

#include "control/health.h"
#include "control/report.h"

/*
 * The peers as `-s` shows them: a section "peers" holding one section per
 * peer ("peer_0", ...; one even while it is down) with its address, state
 * (up, down, waiting), time since it was last heard and the wall-clock
 * time of that (RFC 3339, UTC), time in its state, transitions down and
 * up, messages received and restarts seen.
 */
void control_report_peers(struct report *r, const struct health_peer *peers, unsigned n);

#endif
