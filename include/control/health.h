/*
 * control/health.h - peer liveness as `-s` shows it, and the judgement of
 * `ctsyncd -s health` (ctsyncd(8), HEALTH).
 *
 * The daemon gathers the facts (struct health_facts: its peers, how long
 * its messages wait, whether a cache refused states, when the kernel last
 * failed it) and judges them here with the thresholds of its own
 * configuration (Sync { Health { ... } }); the client prints the one line
 * and exits with the state the line starts with, the monitoring-plugins
 * convention.  Pure: no system call, the time is in the facts.
 */
#ifndef CTSYNCD_CONTROL_HEALTH_H
#define CTSYNCD_CONTROL_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The exit codes of monitoring plugins (Nagios, Icinga, Sensu, ...). */
enum health_state {
	HEALTH_OK = 0,
	HEALTH_WARNING = 1,
	HEALTH_CRITICAL = 2,
	HEALTH_UNKNOWN = 3,
};

#define HEALTH_PEERS_MAX        16u
#define HEALTH_ADDR_MAX         48u
/* The longest line `-s health` prints, its newline included. */
#define HEALTH_LINE_MAX         1024u
/* An age of something that never happened. */
#define HEALTH_NEVER            UINT64_MAX

enum health_peer_state {
	HEALTH_PEER_WAITING,    /* never heard, and the daemon is younger than PeerTimeout */
	HEALTH_PEER_UP,
	HEALTH_PEER_DOWN,       /* silent for PeerTimeout, or never heard since a start that long ago */
};

/* One peer, as `-s` shows it and `-s health` judges it. */
struct health_peer {
	char addr[HEALTH_ADDR_MAX];     /* the address it was last heard from, or the configured one */
	enum health_peer_state state;
	bool heard;                     /* anything ever received from it */
	uint64_t silent_ms;             /* since its last message (heard), else since the start */
	uint64_t last_heard_unix_ms;    /* wall clock of its last message; 0 when never heard */
	uint64_t state_ms;              /* in its present state for this long */
	uint64_t downs, ups;            /* transitions to down, and back up, so far */
	uint64_t messages, restarts;
	/* -s and -s network only (a walk of the resend queue and the external cache) */
	bool detail;
	bool member;                    /* FTFW: our messages wait for its acknowledgement */
	uint32_t last_seq;              /* its last sequence number accepted */
	uint64_t seq_lost;              /* sequence numbers of its messages that never came */
	uint32_t unacked;               /* our messages in flight it has not acknowledged */
	uint32_t external_states;       /* external states it sent last */
};

/* What the daemon knows, at one moment. */
struct health_facts {
	bool multicast;                 /* peers are whoever is heard on the group */
	bool ftfw;                      /* messages wait for ACKs: the backlog check applies */
	bool hot_standby;               /* kernel write failures are the mirror's */
	uint64_t uptime_ms;
	uint64_t peer_timeout_ms;
	unsigned npeers;
	struct health_peer peers[HEALTH_PEERS_MAX];
	uint64_t backlog_ms;            /* ftfw_backlog_ms() */
	bool internal_complete, external_complete;
	uint64_t internal_refused, external_refused;
	/* totals, and the age of their latest increase (HEALTH_NEVER: not since start) */
	uint64_t overruns, commit_failures, write_failures;
	uint64_t overrun_age_ms, commit_failure_age_ms, write_failure_age_ms;
};

/* The thresholds, seconds; 0 turns a check off (struct config_health). */
struct health_limits {
	uint32_t peer_silent_warning;
	uint32_t backlog_warning, backlog_critical;
	uint32_t recent_errors;
};

/*
 * Judge `f` by `l`: the worst of every check, and the line that says so,
 * "CTSYNCD <STATE> - <problems; >summary | perfdata\n", written into
 * `line` (NUL-terminated, cut to `cap`; HEALTH_LINE_MAX is enough).
 * Checks: a peer down (CRITICAL) or not heard yet (WARNING); a peer up but
 * silent for peer_silent_warning (WARNING); with multicast, no peer at all
 * (WARNING during the first PeerTimeout, then CRITICAL); the FTFW backlog
 * (WARNING, CRITICAL); a cache that refused states and is not repaired
 * yet (CRITICAL: a takeover now would miss them); an event overrun, a
 * commit failure or a kernel write failure (mirror or injection) less
 * than recent_errors ago (WARNING).
 */
enum health_state health_judge(const struct health_facts *f, const struct health_limits *l,
			       char *line, size_t cap);

/* "OK", "WARNING", "CRITICAL", "UNKNOWN". */
const char *health_state_name(enum health_state s);

/*
 * The state a `-s health` answer of `len` bytes says: exactly one line,
 * "CTSYNCD <STATE> - ...\n", of printable characters, at most
 * HEALTH_LINE_MAX bytes.  -1 for anything else (not a ctsyncd daemon's
 * answer, or cut short): the client then reports UNKNOWN.
 */
int health_parse_answer(const char *buf, size_t len);

/*
 * When did a counter last grow?  The daemon samples its counters of
 * failures (overruns, commit failures, ...) every second and at each
 * `-s health`; the age of the latest increase says "recently".
 */
struct health_watch {
	bool sampled;
	uint64_t value;
	uint64_t changed_ms;            /* valid once `value` grew */
	bool changed;
};
void health_watch_sample(struct health_watch *w, uint64_t value, uint64_t now_ms);
/* ms since the counter last grew, or HEALTH_NEVER. */
uint64_t health_watch_age(const struct health_watch *w, uint64_t now_ms);

#endif
