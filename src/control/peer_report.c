/*
 * peer_report.c - the peers' liveness as `-s` and `-s network` show it
 * (control/peer_report.h).
 */
#include <stdio.h>
#include <time.h>

#include "control/peer_report.h"

static const char *const peer_state_names[] = {
	[HEALTH_PEER_WAITING] = "waiting",
	[HEALTH_PEER_UP] = "up",
	[HEALTH_PEER_DOWN] = "down",
};

void control_report_peers(struct report *r, const struct health_peer *peers, unsigned n)
{
	report_begin_array(r, "peers", "peer");
	for (unsigned i = 0; i < n; i++) {
		const struct health_peer *p = &peers[i];
		char heading[sizeof(p->addr) + 8];

		snprintf(heading, sizeof(heading), "peer %s", p->addr);
		report_begin_item(r, heading);
		report_id_str(r, "address", "peer", p->addr);
		report_info(r, "state", peer_state_names[p->state]);
		report_flag(r, "up", p->state == HEALTH_PEER_UP, "1 while the peer is heard within PeerTimeout.");
		report_flag(r, "heard", p->heard, "1 once the peer has been heard since our start.");
		if (p->heard) {
			report_gauge_double(r, "last_heard_seconds_ago", (double)p->silent_ms / 1000.0, 1,
					    "Seconds since the peer was last heard.");
			report_time(r, "last_heard", (time_t)(p->last_heard_unix_ms / 1000u),
				    "When the peer was last heard.");
		}
		report_gauge(r, "state_seconds", p->state_ms / 1000u, "Seconds the peer has been in its state.");
		report_counter(r, "down_transitions", p->downs, "Times the peer went down (silent for PeerTimeout).");
		report_counter(r, "up_transitions", p->ups, "Times the peer came back up.");
		report_counter(r, "messages_received", p->messages, "Sync messages received from the peer.");
		report_counter(r, "restarts", p->restarts, "Restarts of the peer seen.");
		if (p->detail) {
			report_flag(r, "member", p->member,
				    "1 while our messages wait for the peer's acknowledgement (FTFW).");
			report_gauge(r, "last_sequence", p->last_seq,
				     "The last sequence number of the peer's messages accepted.");
			report_counter(r, "messages_lost", p->seq_lost,
				       "Sequence numbers of the peer's messages that never arrived.");
			report_gauge(r, "unacknowledged", p->unacked,
				     "Our messages in flight the peer has not acknowledged.");
			report_gauge(r, "external_states", p->external_states,
				     "States in the external cache the peer sent last (its flows).");
		}
		report_end(r);
	}
	report_end(r);
}
