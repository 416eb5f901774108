/*
 * config/config.h - the one validated, immutable view of a conntrackd.conf file.
 *
 * Only src/config/ reads configuration files and validates options; every
 * other module receives a `const struct config *`.  The grammar is that of
 * conntrackd 1.4.7 (ctsyncd.conf(5)), so an upstream file parses unchanged.
 */
#ifndef CTSYNCD_CONFIG_H
#define CTSYNCD_CONFIG_H

#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CONFIG_MAX_LINKS        4
#define CONFIG_HELPER_NAME_MAX  16   /* includes the NUL */
#define CONFIG_PATH_MAX         108  /* sun_path size: the longest path we accept anywhere */
#define CONFIG_MAX_KEYS         2    /* Key: the sending key, and one still accepted (a roll-over) */
#define CONFIG_GROUP_MAX        33   /* a group name (as useradd allows), with the NUL */
#define CONFIG_NO_GID           ((gid_t)-1)

/* Defaults of conntrackd 1.4.7 (ctsyncd.conf.5 and protocol.md §8). */
#define CONFIG_DEFAULT_HASH_SIZE            65536u
#define CONFIG_DEFAULT_HASH_LIMIT           262144u
/*
 * NetlinkOverrunResync: `on` is 1.4.7's 30 s; left out, ctsyncd waits 2 s,
 * long enough for a burst that overran the socket to end, short enough
 * that the peer is not left out of date for half a minute.
 */
#define CONFIG_OVERRUN_RESYNC_ON            30u
#define CONFIG_DEFAULT_OVERRUN_RESYNC       2u
#define CONFIG_DEFAULT_EVENT_ITER_LIMIT     100u
#define CONFIG_DEFAULT_RESEND_QUEUE_SIZE    131072u
#define CONFIG_DEFAULT_ACK_WINDOW_SIZE      300u
#define CONFIG_DEFAULT_PURGE_TIMEOUT        60u
#define CONFIG_DEFAULT_REFRESH_TIME         60u
#define CONFIG_DEFAULT_CACHE_TIMEOUT        180u
#define CONFIG_DEFAULT_ERROR_QUEUE_LEN      128u
#define CONFIG_DEFAULT_UNIX_BACKLOG         100u
/* ctsyncd's own (ctsyncd.conf(5), Sync { PeerTimeout, Health }), seconds. */
#define CONFIG_DEFAULT_PEER_TIMEOUT         30u     /* seconds */
#define CONFIG_DEFAULT_ALIVE_INTERVAL_MS    1000u
#define CONFIG_MIN_PEER_TIMEOUT_MS          50u
#define CONFIG_MIN_ALIVE_INTERVAL_MS        10u
#define CONFIG_DEFAULT_PEER_SILENT_WARNING  10u
#define CONFIG_DEFAULT_BACKLOG_WARNING      10u
#define CONFIG_DEFAULT_BACKLOG_CRITICAL     60u
#define CONFIG_DEFAULT_RECENT_ERRORS        300u
/* Mode FTFW { ConfirmTimeout, ConfirmHeldMax } (ctsyncd's own, doc/apriori.md). */
#define CONFIG_DEFAULT_CONFIRM_TIMEOUT_MS   100u
#define CONFIG_DEFAULT_CONFIRM_HELD_MAX     4096u

/*
 * ctsyncd's own paths (DESIGN.md "Names"); `-C` takes any conntrackd.conf.
 * The lock file and the socket live in a directory that only root may
 * write (the daemon creates it), where no other user can take the lock.
 */
#define CONFIG_DEFAULT_PATH      SYSCONFDIR "/ctsyncd/ctsyncd.conf"
#define CONFIG_RUNTIME_DIR       "/run/ctsyncd"
#define CONFIG_DEFAULT_LOCKFILE  CONFIG_RUNTIME_DIR "/ctsyncd.lock"
#define CONFIG_DEFAULT_UNIX_PATH CONFIG_RUNTIME_DIR "/ctsyncd.sock"
#define CONFIG_DEFAULT_LOGFILE   "/var/log/ctsyncd.log"        /* LogFile on */
#define CONFIG_DEFAULT_STATS_LOGFILE "/var/log/ctsyncd-stats.log" /* Stats { LogFile on } */

/* What the daemon does with this configuration. */
enum config_role {
	CONFIG_ROLE_NONE,   /* neither Sync nor Stats: only the control socket */
	CONFIG_ROLE_SYNC,   /* Sync block present */
	CONFIG_ROLE_STATS,  /* Stats block present */
};

enum config_sync_mode {
	CONFIG_MODE_FTFW,
	CONFIG_MODE_NOTRACK,
	CONFIG_MODE_ALARM,
};

enum config_link_kind {
	CONFIG_LINK_MCAST,
	CONFIG_LINK_UDP,
	CONFIG_LINK_TCP,
};

/* An IPv4 or IPv6 address with an optional prefix length. */
struct config_addr {
	int family;                 /* AF_INET or AF_INET6; 0 = unset */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} u;
	uint8_t prefix;             /* 32 / 128 when no "/n" was written */
};

/* One dedicated link block: Multicast, UDP or TCP. */
struct config_link {
	enum config_link_kind kind;
	bool is_default;            /* declared "<Kind> Default { ... }" */
	int family;                 /* AF_INET or AF_INET6, from the address options */
	/*
	 * UDP/TCP: IPv4_address / IPv6_address = local bind address.
	 * Multicast: IPv4_address / IPv6_address = the group.
	 */
	struct config_addr local;
	struct config_addr dest;    /* UDP/TCP: IPv{4,6}_Destination_Address */
	struct in_addr mcast_ifaddr;/* Multicast: IPv4_interface (INADDR_ANY if unset) */
	char ifname[IF_NAMESIZE];   /* Interface: mandatory */
	uint16_t port;              /* UDP/TCP: Port; Multicast: Group. Mandatory, 1..65535 */
	uint32_t sndbuf;            /* SndSocketBuffer; 0 = kernel default */
	uint32_t rcvbuf;            /* RcvSocketBuffer; 0 = kernel default */
	bool checksum;              /* Checksum, default on */
	uint32_t error_queue_len;   /* TCP: ErrorQueueLength, default 128 */
	unsigned line;              /* line of the block in the file, for messages */
};

/* Filter { ... }: each part is optional; `set` says whether it was given. */
struct config_filter_protocols {
	bool set;
	bool accept;                /* Accept: only listed pass; Ignore: listed dropped */
	uint8_t bitmap[32];         /* bit n set = IP protocol number n listed */
};

struct config_filter_addresses {
	bool set;
	bool accept;
	unsigned count;
	struct config_addr *addrs;  /* owned by the struct config */
};

struct config_filter_states {
	bool set;
	bool accept;
	uint16_t tcp_states;        /* bit n = kernel tcp_conntrack state n (1 SYN_SENT .. 9 LISTEN) */
};

struct config_filter {
	bool set;                   /* a Filter block was present */
	bool kernelspace;           /* Filter From Kernelspace (BPF on the event socket) */
	struct config_filter_protocols protocols;
	struct config_filter_addresses addresses;
	struct config_filter_states states;
};

struct config_general {
	uint32_t hash_size;
	uint32_t hash_limit;
	char logfile[CONFIG_PATH_MAX];      /* "" = LogFile off */
	int syslog_facility;                /* LOG_DAEMON, LOG_LOCAL0..7, or -1 = off */
	char lockfile[CONFIG_PATH_MAX];
	char unix_path[CONFIG_PATH_MAX];    /* the control socket; default CONFIG_DEFAULT_UNIX_PATH */
	uint32_t unix_backlog;              /* accepted, as upstream, but informative */
	/*
	 * UNIX { Group }, ctsyncd's own: the group whose members may use the
	 * socket, as written ("" = none), and its gid: CONFIG_NO_GID without
	 * Group, or for a name that config_parse_buffer() left unresolved.
	 */
	char unix_group[CONFIG_GROUP_MAX];
	gid_t unix_gid;
	unsigned unix_group_line, unix_group_column; /* where its value was written */
	uint32_t netlink_buffer_size;       /* 0 = system default */
	uint32_t netlink_buffer_max_growth; /* 0 = no growth */
	uint32_t netlink_overrun_resync;    /* seconds; 0 = off */
	bool netlink_events_reliable;
	uint32_t poll_secs;                 /* 0 = event mode */
	uint32_t event_iteration_limit;
	int nice;                           /* accepted, ignored (deprecated upstream) */
	int sched_policy;                   /* SCHED_RR (default) or SCHED_FIFO */
	int sched_priority;                 /* 0..99; default: sched_get_priority_max(policy) = 99 */
	bool sched_priority_set;            /* Priority was written in the file */
	bool systemd;                       /* default on */
	/* EventSource bpf (doc/bpf-events.md); false = ctnetlink, the default */
	bool event_bpf;
	struct config_filter filter;
};

/*
 * Sync { Health { ... } }, ctsyncd's own: the thresholds `ctsyncd -s health`
 * judges by (ctsyncd(8), HEALTH).  Seconds; 0 turns a check off.
 */
struct config_health {
	uint32_t peer_silent_warning;       /* a peer still up, silent this long: WARNING */
	bool peer_silent_warning_set;       /* written (else 0 in ALARM, the default otherwise) */
	uint32_t backlog_warning;           /* FTFW: unacknowledged for this long: WARNING */
	uint32_t backlog_critical;          /* ... CRITICAL */
	uint32_t recent_errors;             /* overruns, commit and mirror failures this recent: WARNING */
};

struct config_sync {
	enum config_sync_mode mode;
	uint32_t resend_queue_size;         /* FTFW */
	uint32_t ack_window_size;           /* FTFW */
	uint32_t commit_timeout;            /* 0 = estimate from the cached timeout */
	uint32_t purge_timeout;
	uint32_t refresh_time;              /* ALARM */
	uint32_t cache_timeout;             /* ALARM */
	bool disable_external_cache;        /* FTFW, NOTRACK */
	bool disable_internal_cache;        /* NOTRACK only */
	bool startup_resync;                /* FTFW, NOTRACK */
	bool hot_standby;                   /* FTFW, NOTRACK; ctsyncd's own: mirror into the kernel */
	unsigned nlinks;
	unsigned default_link;              /* index into links[]: the Default one, else 0 */
	struct config_link links[CONFIG_MAX_LINKS];
	bool tcp_window_tracking;
	bool expectation_sync;              /* ExpectationSync on, or a helper list */
	unsigned expect_helper_count;       /* ExpectationSync { names }: 0 = all helpers */
	char (*expect_helpers)[CONFIG_HELPER_NAME_MAX]; /* owned by the struct config */
	/*
	 * Key files (ctsyncd's own): with one, every datagram is sealed and
	 * plain ones are refused (doc/envelope.md).  keys[0] sends; both are
	 * accepted.  The files are read at start, not by the parser.
	 */
	unsigned nkeys;
	char keys[CONFIG_MAX_KEYS][CONFIG_PATH_MAX];
	unsigned key_lines[CONFIG_MAX_KEYS];
	/*
	 * PeerTimeout (ctsyncd's own), milliseconds (written in seconds, or
	 * with "ms"): a peer silent this long is down (logged, `-s`, `-s
	 * health`) and, in FTFW, no longer waited for (protocol.md deviation
	 * 23).  Default 30 s; in ALARM, whose peers send only refreshes,
	 * RefreshTime + 2 s when that is longer.
	 */
	uint32_t peer_timeout_ms;
	bool peer_timeout_set;              /* written in the file */
	/*
	 * AliveInterval (ctsyncd's own), milliseconds: an idle FTFW or
	 * NOTRACK node sends an ALIVE this often (1.4.7: every second), so
	 * that a PeerTimeout of a few intervals tells a dead peer within a
	 * fraction of a second.  Default 1000; ALARM sends none.
	 */
	uint32_t alive_interval_ms;
	struct config_health health;
	/*
	 * A-priori mode (ctsyncd's own, Mode FTFW only, doc/apriori.md): the
	 * packets nftables queues to NFQUEUE `confirm_queue` are accepted once
	 * every peer has acknowledged their connection's state, or after
	 * `confirm_timeout_ms`; at most `confirm_held_max` wait at once.
	 */
	int confirm_queue;                  /* 0..65535; -1 = off (no ConfirmQueue) */
	uint32_t confirm_timeout_ms;
	uint32_t confirm_held_max;
};

struct config_stats {
	char logfile[CONFIG_PATH_MAX];      /* "" = off */
	int syslog_facility;                /* -1 = off */
};

struct config {
	char path[PATH_MAX];                /* the file this came from */
	enum config_role role;
	struct config_general general;
	struct config_sync sync;
	struct config_stats stats;
};

/*
 * A parse or validation failure: where it happened and why.  `message` is
 * complete and printable as "<file>:<line>:<column>: <message>".  Semantic
 * errors that concern a whole block carry the block's line and column 0.
 */
struct config_error {
	char file[PATH_MAX];
	unsigned line;
	unsigned column;
	char message[512];
};

/* A non-fatal remark (deprecated option, legacy mode name), same shape. */
typedef void (*config_warn_fn)(void *arg, const struct config_error *warning);

/* Fill `cfg` with every default, as if the file were empty. */
void config_defaults(struct config *cfg);

/*
 * Parse `len` bytes of conntrackd.conf text; `name` is used in messages.
 * Returns 0 and a validated config, or -1 with `err` filled (cfg is then
 * released and must not be used).  Pure: no system call, no global state;
 * so a UNIX Group given by name keeps unix_gid CONFIG_NO_GID.
 * `warn` may be NULL.
 */
int config_parse_buffer(struct config *cfg, const char *name, const char *text, size_t len,
			struct config_error *err, config_warn_fn warn, void *warn_arg);

/*
 * Read and parse a file, and look up the names the file gives (UNIX Group:
 * an unknown group is an error at its position).  File-level errors
 * (ENOENT, EACCES) are reported in `err` too.
 */
int config_parse_file(struct config *cfg, const char *path, struct config_error *err,
		      config_warn_fn warn, void *warn_arg);

/* Release what config_parse_* allocated.  Safe on a defaulted or zeroed config. */
void config_free(struct config *cfg);

/* Print the effective configuration, defaults filled in, in conntrackd.conf syntax. */
void config_print(const struct config *cfg, FILE *out);

/* Names for messages and dumps. */
const char *config_mode_name(enum config_sync_mode mode);
/* A duration as the file writes it: "30" (whole seconds) or "300ms". */
void config_format_ms(char *buf, size_t len, uint32_t ms);
const char *config_link_kind_name(enum config_link_kind kind);

#endif
