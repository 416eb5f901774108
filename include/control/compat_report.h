/*
 * control/compat_report.h - the text of `-s` in conntrackd 1.4.7's layout:
 * the lines that monitoring checks, VyOS and home-grown plugins read
 * ("current active connections:", "UDP traffic (active device=...)",
 * "message tracking:" ...), with the same labels, tabs, number widths,
 * order and blank lines.  It is the default text of every `-s` word;
 * ctsyncd's own view is the report tree (control/report.h: --verbose,
 * --json, --prometheus).
 *
 * The callers gather facts (the structs below) from their counters; the
 * functions here only print them, so each layout is tested with fixed
 * numbers (tests/unit/check_compat_report.c).  Where ctsyncd has no
 * counter that means what 1.4.7's line means, the caller leaves the field
 * 0 and the table in ctsyncd(8) says so.  Pure: renders into a growing
 * buffer (malloc and realloc only).
 */
#ifndef CTSYNCD_CONTROL_COMPAT_REPORT_H
#define CTSYNCD_CONTROL_COMPAT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>

#include "config/config.h"

/* The rendered text; zero-initialise, release with compat_text_free(). */
struct compat_text {
	char *p;                        /* NUL-terminated once anything was added */
	size_t len, cap;
	bool failed;                    /* an allocation failed: the text is incomplete */
};

void compat_text_free(struct compat_text *t);

/* One cache (conntracks or expectations) as `-s` and `-s cache` show it. */
struct compat_cache {
	uint64_t objects;               /* "active objects": live and dead entries */
	uint64_t active;                /* "current active connections": live entries */
	uint64_t created, create_failed;
	uint64_t no_memory, no_space;   /* the causes of create_failed 1.4.7 names */
	uint64_t updated, update_failed;
	uint64_t update_not_found;
	uint64_t deleted, delete_failed;
	uint64_t delete_not_found;
};

/* DisableExternalCache: the peer's states go straight into the kernel. */
struct compat_inject {
	uint64_t created, create_failed;
	uint64_t updated, update_failed;
	uint64_t deleted, delete_failed;
};

/* DisableInternalCache: the kernel's events go straight to the peer. */
struct compat_bypass {
	uint64_t created, updated, deleted;
};

/*
 * The caches of one kind (conntracks for `-s`, `-s ct` and `-s cache`;
 * expectations for `-s expect`).
 */
struct compat_caches {
	bool stats_mode;                /* Stats: one cache, called "stats" */
	bool bypass_internal;           /* DisableInternalCache: `bypass`, no internal cache */
	struct compat_cache internal;
	struct compat_bypass bypass;
	bool has_external;              /* Sync: an external cache or its injection */
	bool inject_external;           /* DisableExternalCache: `inject`, no external cache */
	struct compat_cache external;
	struct compat_inject inject;
	uint64_t traffic_bytes, traffic_packets;    /* "traffic processed" */
};

/* One dedicated link. */
struct compat_link {
	enum config_link_kind kind;
	char ifname[IF_NAMESIZE];
	const char *status;             /* "RUNNING", "NO-CARRIER" or "DOWN" */
	bool active;
	bool tcp_server_connected, tcp_client_connected;
	uint64_t bytes_sent, bytes_recv;
	uint64_t packets_sent, packets_recv;
	uint64_t errors_sent, errors_recv;
};

/* One element of the resend queue (`-s rsqueue`), oldest first. */
struct compat_rsq_entry {
	uint32_t seq;
	bool control;                   /* a control message (else a state) */
	uint8_t flags;                  /* control messages: the header's flags */
};

/* What the sync side tells (`-s network`, `-s link`, `-s queue`, the summary's link). */
struct compat_sync {
	bool ftfw;                      /* FTFW: the resend queue exists */
	unsigned nlinks;
	struct compat_link links[CONFIG_MAX_LINKS];
	unsigned active;                /* index of the active link in links[] */
	/* network: received messages dropped, by 1.4.7's counters */
	uint64_t malformed;             /* every reason */
	uint64_t wrong_version, bad_header, bad_payload, bad_type, truncated, bad_size;
	uint64_t send_malformed;        /* messages that could not be built */
	uint64_t seq_lost, seq_before;
	/* queue */
	uint64_t queue_nodes;           /* "allocated queue nodes" */
	uint64_t txq_len, txq_max, txq_full;
	uint64_t errq_len, errq_max, errq_full;
	uint64_t rsq_len, rsq_max, rsq_full;
};

/* What `-s runtime` tells. */
struct compat_runtime {
	uint64_t uptime_seconds;
	uint64_t events_received, events_filtered, events_unknown;
	uint64_t catch_failed, dump_unknown, overruns;
	uint64_t kernel_flushes, kernel_resyncs;
	uint64_t netlink_buffer_bytes;
	uint64_t child_failed, child_segfault, child_termsig;
	uint64_t select_failed, wait_failed;
	uint64_t local_read_failed, local_unknown;
};

/*
 * `-s`, `-s ct` and `-s expect`: the caches, the traffic processed and, on
 * a Sync node (`sync` not NULL), the active link and the message tracking.
 */
void compat_summary(struct compat_text *t, const struct compat_caches *c,
		    const struct compat_sync *sync);

/* `-s cache`: the detailed counters of each cache. */
void compat_cache(struct compat_text *t, const struct compat_caches *c);

/* `-s network`: the receive errors, the sequence tracking and the active link. */
void compat_network(struct compat_text *t, const struct compat_sync *s);

/* `-s link` (and `-s multicast`): every link, in configuration order. */
void compat_links(struct compat_text *t, const struct compat_sync *s);

/* `-s queue`: the queues (the resend queue in FTFW only). */
void compat_queue(struct compat_text *t, const struct compat_sync *s);

/* `-s rsqueue`: the heading with the queue's length, then compat_rsqueue_entry() for each. */
void compat_rsqueue_head(struct compat_text *t, uint64_t len);
void compat_rsqueue_entry(struct compat_text *t, const struct compat_rsq_entry *e);

/* `-s runtime`. */
void compat_runtime(struct compat_text *t, const struct compat_runtime *r);

#endif
