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

/* RFC 3339 in UTC, to the millisecond: "2024-05-02T09:14:03.250Z". */
static void rfc3339(char *buf, size_t len, uint64_t unix_ms)
{
	time_t t = (time_t)(unix_ms / 1000u);
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		snprintf(buf, len, "%s", "");
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(unix_ms % 1000u));
}

void control_report_peers(struct report *r, const struct health_peer *peers, unsigned n)
{
	report_begin(r, "peers");
	for (unsigned i = 0; i < n; i++) {
		const struct health_peer *p = &peers[i];
		char name[16], when[96];

		snprintf(name, sizeof(name), "peer_%u", i);
		report_begin(r, name);
		report_str(r, "address", p->addr);
		report_str(r, "state", peer_state_names[p->state]);
		report_bool(r, "heard", p->heard);
		if (p->heard) {
			rfc3339(when, sizeof(when), p->last_heard_unix_ms);
			report_double(r, "last_heard_seconds_ago", (double)p->silent_ms / 1000.0, 1);
			report_str(r, "last_heard", when);
		}
		report_u64(r, "state_seconds", p->state_ms / 1000u);
		report_u64(r, "down_transitions", p->downs);
		report_u64(r, "up_transitions", p->ups);
		report_u64(r, "messages_received", p->messages);
		report_u64(r, "restarts", p->restarts);
		report_end(r);
	}
	report_end(r);
}
