/*
 * diff.c - every option of ctsyncd.conf(5), classified for a reload.
 *
 * Each row names an option, says whether a running daemon can take a new
 * value (and by which step of src/daemon/reload.c) or why it needs a
 * restart, and how its value is compared, printed and moved.  The table
 * follows the grammar (parser.c) block by block; tests/unit/check_config_diff.c
 * changes each option in turn and checks that exactly its row reports it.
 *
 * The restart-only options are those that shape what the daemon opened or
 * allocated at start and cannot reshape without losing state or peers:
 * the sockets (links, control socket, lock), the mode of replication and
 * the kind of caches it keeps, the size of the hash tables' bucket index.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "config/diff.h"
#include "parser.h"

enum section {
	SEC_TOP,        /* the role: always compared */
	SEC_GENERAL,
	SEC_SYNC,       /* compared when both are Sync daemons */
	SEC_STATS,      /* compared when both are Stats daemons */
};

/* How a value is compared, printed and moved. */
enum kind {
	K_U32,          /* uint32_t at `offset` */
	K_MS,           /* uint32_t milliseconds, shown as the file writes them */
	K_INT,          /* int */
	K_BOOL,
	K_EVSRC,        /* bool: EventSource bpf or ctnetlink */
	K_STR,          /* char array of `size` */
	K_LOGFILE,      /* char array; "" = off */
	K_FACILITY,     /* int syslog facility, -1 = off */
	K_OVERRUN,      /* uint32_t seconds, 0 = off */
	K_POLICY,       /* int SCHED_RR / SCHED_FIFO */
	K_PRIORITY,     /* Scheduler Priority: its value and whether it was written */
	K_ROLE,
	K_MODE,
	K_GROUP,        /* UNIX Group: the name as written */
	K_FILTER,       /* Filter From Userspace/Kernelspace, or none */
	K_FILTER_PROTO,
	K_FILTER_ADDR,
	K_FILTER_STATE,
	K_KEYS,
	K_EXPECT,       /* ExpectationSync */
	K_LINKS,        /* the link blocks: their kind and number */
	K_LINK_FIELD,   /* one option of every link block: `offset` inside struct config_link */
};

/* The kinds of a link option's value (K_LINK_FIELD's `sub`). */
enum link_sub { L_ADDR, L_INADDR, L_STR, L_U16, L_U32, L_BOOL };

struct config_option_info {
	const char *name;
	enum config_when when;
	unsigned apply;
	const char *why;
	enum section section;
	enum kind kind;
	size_t offset, size;
	enum link_sub sub;
	/* Link options: the name per kind of link when it differs ("Group" for a Multicast port). */
	const char *mcast_name;
};

#define OFF(m) offsetof(struct config, m), sizeof(((struct config *)0)->m)
#define LOFF(m) offsetof(struct config_link, m), sizeof(((struct config_link *)0)->m)

#define WHY_LINK "the links' sockets are opened at start, and the peer knows them"
#define WHY_MODE "the sync engine and the caches are built for one mode"
#define WHY_SOCKET "the control socket is opened once; clients find it there"

static const struct config_option_info config_option_table[] = {
	{ "role (Sync or Stats block)", CONFIG_RESTART, 0, "the daemon's job is chosen at start",
	  SEC_TOP, K_ROLE, 0, 0, 0, NULL },

	/* ---- General ---- */
	{ "HashSize", CONFIG_RESTART, 0, "the tables' bucket index is sized at start (HashLimit can change)",
	  SEC_GENERAL, K_U32, OFF(general.hash_size), 0, NULL },
	{ "HashLimit", CONFIG_LIVE, CONFIG_APPLY_LIMITS, "",
	  SEC_GENERAL, K_U32, OFF(general.hash_limit), 0, NULL },
	{ "LogFile", CONFIG_LIVE, CONFIG_APPLY_LOG, "",
	  SEC_GENERAL, K_LOGFILE, OFF(general.logfile), 0, NULL },
	{ "Syslog", CONFIG_LIVE, CONFIG_APPLY_LOG, "",
	  SEC_GENERAL, K_FACILITY, OFF(general.syslog_facility), 0, NULL },
	{ "LockFile", CONFIG_RESTART, 0, "the lock is taken once, at start",
	  SEC_GENERAL, K_STR, OFF(general.lockfile), 0, NULL },
	{ "UNIX Path", CONFIG_RESTART, 0, WHY_SOCKET,
	  SEC_GENERAL, K_STR, OFF(general.unix_path), 0, NULL },
	{ "UNIX Backlog", CONFIG_RESTART, 0, WHY_SOCKET,
	  SEC_GENERAL, K_U32, OFF(general.unix_backlog), 0, NULL },
	{ "UNIX Group", CONFIG_LIVE, CONFIG_APPLY_GROUP, "",
	  SEC_GENERAL, K_GROUP, 0, 0, 0, NULL },
	{ "NetlinkBufferSize", CONFIG_LIVE, CONFIG_APPLY_NETLINK, "",
	  SEC_GENERAL, K_U32, OFF(general.netlink_buffer_size), 0, NULL },
	{ "NetlinkBufferSizeMaxGrowth", CONFIG_LIVE, CONFIG_APPLY_NETLINK, "",
	  SEC_GENERAL, K_U32, OFF(general.netlink_buffer_max_growth), 0, NULL },
	{ "NetlinkOverrunResync", CONFIG_LIVE, CONFIG_APPLY_NONE, "",
	  SEC_GENERAL, K_OVERRUN, OFF(general.netlink_overrun_resync), 0, NULL },
	{ "NetlinkEventsReliable", CONFIG_LIVE, CONFIG_APPLY_NETLINK, "",
	  SEC_GENERAL, K_BOOL, OFF(general.netlink_events_reliable), 0, NULL },
	{ "PollSecs", CONFIG_RESTART, 0, "polling and following events are set up apart at start",
	  SEC_GENERAL, K_U32, OFF(general.poll_secs), 0, NULL },
	{ "EventSource", CONFIG_RESTART, 0, "the BPF hook or the ctnetlink groups are set up at start",
	  SEC_GENERAL, K_EVSRC, OFF(general.event_bpf), 0, NULL },
	{ "EventIterationLimit", CONFIG_LIVE, CONFIG_APPLY_NETLINK | CONFIG_APPLY_LINKS, "",
	  SEC_GENERAL, K_U32, OFF(general.event_iteration_limit), 0, NULL },
	/* Accepted and without effect, as upstream: nothing to apply. */
	{ "Nice", CONFIG_LIVE, CONFIG_APPLY_NONE, "",
	  SEC_GENERAL, K_INT, OFF(general.nice), 0, NULL },
	{ "Scheduler Type", CONFIG_LIVE, CONFIG_APPLY_SCHEDULER, "",
	  SEC_GENERAL, K_POLICY, OFF(general.sched_policy), 0, NULL },
	{ "Scheduler Priority", CONFIG_LIVE, CONFIG_APPLY_SCHEDULER, "",
	  SEC_GENERAL, K_PRIORITY, 0, 0, 0, NULL },
	{ "Systemd", CONFIG_RESTART, 0, "the notification and the watchdog are set up at start",
	  SEC_GENERAL, K_BOOL, OFF(general.systemd), 0, NULL },
	{ "Filter", CONFIG_LIVE, CONFIG_APPLY_FILTER, "",
	  SEC_GENERAL, K_FILTER, 0, 0, 0, NULL },
	{ "Filter Protocol", CONFIG_LIVE, CONFIG_APPLY_FILTER, "",
	  SEC_GENERAL, K_FILTER_PROTO, 0, 0, 0, NULL },
	{ "Filter Address", CONFIG_LIVE, CONFIG_APPLY_FILTER, "",
	  SEC_GENERAL, K_FILTER_ADDR, 0, 0, 0, NULL },
	{ "Filter State", CONFIG_LIVE, CONFIG_APPLY_FILTER, "",
	  SEC_GENERAL, K_FILTER_STATE, 0, 0, 0, NULL },

	/* ---- Sync ---- */
	{ "Mode", CONFIG_RESTART, 0, WHY_MODE, SEC_SYNC, K_MODE, 0, 0, 0, NULL },
	{ "ResendQueueSize", CONFIG_LIVE, CONFIG_APPLY_SYNC, "",
	  SEC_SYNC, K_U32, OFF(sync.resend_queue_size), 0, NULL },
	{ "ACKWindowSize", CONFIG_LIVE, CONFIG_APPLY_SYNC, "",
	  SEC_SYNC, K_U32, OFF(sync.ack_window_size), 0, NULL },
	/* Read at each commit; whether states carry their timeout follows it (the engine's encoding). */
	{ "CommitTimeout", CONFIG_LIVE, CONFIG_APPLY_SYNC, "",
	  SEC_SYNC, K_U32, OFF(sync.commit_timeout), 0, NULL },
	/* Read when -t schedules the purge. */
	{ "PurgeTimeout", CONFIG_LIVE, CONFIG_APPLY_NONE, "",
	  SEC_SYNC, K_U32, OFF(sync.purge_timeout), 0, NULL },
	{ "RefreshTime", CONFIG_LIVE, CONFIG_APPLY_SYNC, "",
	  SEC_SYNC, K_U32, OFF(sync.refresh_time), 0, NULL },
	{ "CacheTimeout", CONFIG_LIVE, CONFIG_APPLY_EXPIRY, "",
	  SEC_SYNC, K_U32, OFF(sync.cache_timeout), 0, NULL },
	{ "DisableExternalCache", CONFIG_RESTART, 0, WHY_MODE,
	  SEC_SYNC, K_BOOL, OFF(sync.disable_external_cache), 0, NULL },
	{ "DisableInternalCache", CONFIG_RESTART, 0, WHY_MODE,
	  SEC_SYNC, K_BOOL, OFF(sync.disable_internal_cache), 0, NULL },
	/* Used only when the daemon starts: the next start follows the new value. */
	{ "StartupResync", CONFIG_LIVE, CONFIG_APPLY_NONE, "",
	  SEC_SYNC, K_BOOL, OFF(sync.startup_resync), 0, NULL },
	{ "HotStandby", CONFIG_RESTART, 0, "the mirror's role is set at start and by the hook",
	  SEC_SYNC, K_BOOL, OFF(sync.hot_standby), 0, NULL },
	{ "Key", CONFIG_LIVE, CONFIG_APPLY_KEYS, "",
	  SEC_SYNC, K_KEYS, 0, 0, 0, NULL },
	/* The engine's liveness deadline (ftfw_reconfigure) and the daemon's own. */
	{ "PeerTimeout", CONFIG_LIVE, CONFIG_APPLY_SYNC, "",
	  SEC_SYNC, K_MS, OFF(sync.peer_timeout_ms), 0, NULL },
	{ "AliveInterval", CONFIG_LIVE, CONFIG_APPLY_SYNC, "",
	  SEC_SYNC, K_U32, OFF(sync.alive_interval_ms), 0, NULL },
	/* A-priori mode (doc/apriori.md): the queue is bound at start; the limits follow a reload. */
	{ "ConfirmQueue", CONFIG_RESTART, 0, "the NFQUEUE is bound at start",
	  SEC_SYNC, K_INT, OFF(sync.confirm_queue), 0, NULL },
	{ "ConfirmTimeout", CONFIG_LIVE, CONFIG_APPLY_SYNC, "",
	  SEC_SYNC, K_U32, OFF(sync.confirm_timeout_ms), 0, NULL },
	{ "ConfirmHeldMax", CONFIG_LIVE, CONFIG_APPLY_SYNC, "",
	  SEC_SYNC, K_U32, OFF(sync.confirm_held_max), 0, NULL },
	/* Read at each -s health request. */
	{ "Health PeerSilentWarning", CONFIG_LIVE, CONFIG_APPLY_NONE, "",
	  SEC_SYNC, K_U32, OFF(sync.health.peer_silent_warning), 0, NULL },
	{ "Health ResendBacklogWarning", CONFIG_LIVE, CONFIG_APPLY_NONE, "",
	  SEC_SYNC, K_U32, OFF(sync.health.backlog_warning), 0, NULL },
	{ "Health ResendBacklogCritical", CONFIG_LIVE, CONFIG_APPLY_NONE, "",
	  SEC_SYNC, K_U32, OFF(sync.health.backlog_critical), 0, NULL },
	{ "Health RecentErrors", CONFIG_LIVE, CONFIG_APPLY_NONE, "",
	  SEC_SYNC, K_U32, OFF(sync.health.recent_errors), 0, NULL },
	{ "link blocks", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINKS, 0, 0, 0, NULL },
	{ "Default", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(is_default), L_BOOL, NULL },
	{ "IPv4_address", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(local), L_ADDR, NULL },
	{ "IPv4_Destination_Address", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(dest), L_ADDR, NULL },
	{ "IPv4_interface", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(mcast_ifaddr), L_INADDR, NULL },
	{ "Interface", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(ifname), L_STR, NULL },
	{ "Port", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(port), L_U16, "Group" },
	{ "SndSocketBuffer", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(sndbuf), L_U32, NULL },
	{ "RcvSocketBuffer", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(rcvbuf), L_U32, NULL },
	{ "Checksum", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(checksum), L_BOOL, NULL },
	{ "ErrorQueueLength", CONFIG_RESTART, 0, WHY_LINK, SEC_SYNC, K_LINK_FIELD, LOFF(error_queue_len), L_U32, NULL },
	/* Sent states carry the window scale, and commits write the window, from the next one on. */
	{ "TCPWindowTracking", CONFIG_LIVE, CONFIG_APPLY_SYNC | CONFIG_APPLY_WRITER, "",
	  SEC_SYNC, K_BOOL, OFF(sync.tcp_window_tracking), 0, NULL },
	{ "ExpectationSync", CONFIG_RESTART, 0, "the expectation caches and events are set up at start",
	  SEC_SYNC, K_EXPECT, 0, 0, 0, NULL },

	/* ---- Stats ---- */
	{ "Stats LogFile", CONFIG_LIVE, CONFIG_APPLY_STATS_LOG, "",
	  SEC_STATS, K_LOGFILE, OFF(stats.logfile), 0, NULL },
	{ "Stats Syslog", CONFIG_LIVE, CONFIG_APPLY_STATS_LOG, "",
	  SEC_STATS, K_FACILITY, OFF(stats.syslog_facility), 0, NULL },
};

#define N_OPTIONS (sizeof(config_option_table) / sizeof(config_option_table[0]))

unsigned config_option_count(void) { return N_OPTIONS; }
const struct config_option_info *config_option_at(unsigned i) { return i < N_OPTIONS ? &config_option_table[i] : NULL; }

const char *config_option_name(const struct config_option_info *opt) { return opt->name; }
enum config_when config_option_when(const struct config_option_info *opt) { return opt->when; }
unsigned config_option_apply(const struct config_option_info *opt) { return opt->apply; }
const char *config_option_why(const struct config_option_info *opt) { return opt->why; }

const struct config_option_info *config_option_find(const char *name)
{
	for (unsigned i = 0; i < N_OPTIONS; i++)
		if (strcmp(config_option_table[i].name, name) == 0)
			return &config_option_table[i];
	return NULL;
}

/* ---- values ------------------------------------------------------------------- */

static const void *at(const struct config *c, const struct config_option_info *o)
{
	return (const char *)c + o->offset;
}

static bool addr_equal(const struct config_addr *a, const struct config_addr *b)
{
	if (a->family != b->family || a->prefix != b->prefix)
		return false;
	if (a->family == AF_INET)
		return a->u.v4.s_addr == b->u.v4.s_addr;
	if (a->family == AF_INET6)
		return memcmp(&a->u.v6, &b->u.v6, sizeof(a->u.v6)) == 0;
	return true;
}

/* Appends to a fixed buffer; what does not fit ends the text with "...". */
struct out {
	char *buf;
	size_t len, used;
	bool full;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used - 4) {
		o->full = true;
		o->used = o->len - 4 < o->used ? o->used : o->len - 4;
		snprintf(o->buf + o->used, 4, "...");
		return;
	}
	o->used += (size_t)n;
}

static void put_addr(struct out *o, const struct config_addr *a)
{
	char tmp[INET6_ADDRSTRLEN];

	if (a->family == 0) {
		put(o, "none");
		return;
	}
	inet_ntop(a->family, &a->u, tmp, sizeof(tmp));
	if (a->prefix != (a->family == AF_INET ? 32 : 128))
		put(o, "%s/%u", tmp, a->prefix);
	else
		put(o, "%s", tmp);
}

static const char *onoff(bool b)
{
	return b ? "on" : "off";
}

static const char *role_name(enum config_role r)
{
	return r == CONFIG_ROLE_SYNC ? "Sync" : r == CONFIG_ROLE_STATS ? "Stats" : "none";
}

static void show_link_field(struct out *o, const struct config_link *l, const struct config_option_info *opt)
{
	const void *p = (const char *)l + opt->offset;
	char tmp[INET_ADDRSTRLEN];

	switch (opt->sub) {
	case L_ADDR:
		put_addr(o, p);
		break;
	case L_INADDR:
		inet_ntop(AF_INET, p, tmp, sizeof(tmp));
		put(o, "%s", tmp);
		break;
	case L_STR:
		put(o, "%s", (const char *)p);
		break;
	case L_U16:
		put(o, "%u", *(const uint16_t *)p);
		break;
	case L_U32:
		put(o, "%u", *(const uint32_t *)p);
		break;
	case L_BOOL:
		put(o, "%s", onoff(*(const bool *)p));
		break;
	}
}

static bool link_field_equal(const struct config_link *a, const struct config_link *b,
			     const struct config_option_info *opt)
{
	const void *pa = (const char *)a + opt->offset, *pb = (const char *)b + opt->offset;

	switch (opt->sub) {
	case L_ADDR:
		return addr_equal(pa, pb);
	case L_STR:
		return strcmp(pa, pb) == 0;
	case L_BOOL:
		return *(const bool *)pa == *(const bool *)pb;
	default:
		return memcmp(pa, pb, opt->size) == 0;
	}
}

static void show(const struct config *c, const struct config_option_info *opt, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len };
	const struct config_filter *f = &c->general.filter;
	unsigned i;

	buf[0] = '\0';
	switch (opt->kind) {
	case K_U32:
		put(&o, "%u", *(const uint32_t *)at(c, opt));
		break;
	case K_MS: {
		char d[16];

		config_format_ms(d, sizeof(d), *(const uint32_t *)at(c, opt));
		put(&o, "%s", d);
		break;
	}
	case K_INT:
		put(&o, "%d", *(const int *)at(c, opt));
		break;
	case K_BOOL:
		put(&o, "%s", onoff(*(const bool *)at(c, opt)));
		break;
	case K_EVSRC:
		put(&o, "%s", *(const bool *)at(c, opt) ? "bpf" : "ctnetlink");
		break;
	case K_STR:
		put(&o, "%s", (const char *)at(c, opt));
		break;
	case K_LOGFILE:
		put(&o, "%s", *(const char *)at(c, opt) ? (const char *)at(c, opt) : "off");
		break;
	case K_FACILITY: {
		int fac = *(const int *)at(c, opt);
		const char *n = config_name_of(config_syslog_names, fac);

		put(&o, "%s", fac < 0 || !n ? "off" : n);
		break;
	}
	case K_OVERRUN:
		if (*(const uint32_t *)at(c, opt))
			put(&o, "%u", *(const uint32_t *)at(c, opt));
		else
			put(&o, "off");
		break;
	case K_POLICY:
		put(&o, "%s", *(const int *)at(c, opt) == SCHED_FIFO ? "FIFO" : "RR");
		break;
	case K_PRIORITY:
		put(&o, "%d%s", c->general.sched_priority, c->general.sched_priority_set ? "" : " (default)");
		break;
	case K_ROLE:
		put(&o, "%s", role_name(c->role));
		break;
	case K_MODE:
		put(&o, "%s", config_mode_name(c->sync.mode));
		break;
	case K_GROUP:
		put(&o, "%s", c->general.unix_group[0] ? c->general.unix_group : "none");
		break;
	case K_FILTER:
		put(&o, "%s", !f->set ? "none" : f->kernelspace ? "From Kernelspace" : "From Userspace");
		break;
	case K_FILTER_PROTO:
		if (!f->protocols.set) {
			put(&o, "none");
			break;
		}
		put(&o, "%s {", f->protocols.accept ? "Accept" : "Ignore");
		for (i = 0; i < 256; i++) {
			const char *n = config_name_of(config_protocol_names, (int)i);

			if (!(f->protocols.bitmap[i / 8] & (1u << (i % 8))))
				continue;
			if (n)
				put(&o, " %s", n);
			else
				put(&o, " %u", i);
		}
		put(&o, " }");
		break;
	case K_FILTER_ADDR:
		if (!f->addresses.set) {
			put(&o, "none");
			break;
		}
		put(&o, "%s {", f->addresses.accept ? "Accept" : "Ignore");
		for (i = 0; i < f->addresses.count; i++) {
			put(&o, " ");
			put_addr(&o, &f->addresses.addrs[i]);
		}
		put(&o, " }");
		break;
	case K_FILTER_STATE:
		if (!f->states.set) {
			put(&o, "none");
			break;
		}
		put(&o, "%s {", f->states.accept ? "Accept" : "Ignore");
		for (i = 0; i < 16; i++)
			if (f->states.tcp_states & (1u << i))
				put(&o, " %s", config_name_of(config_tcp_state_names, (int)i));
		put(&o, " }");
		break;
	case K_KEYS:
		if (c->sync.nkeys == 0)
			put(&o, "none");
		for (i = 0; i < c->sync.nkeys; i++)
			put(&o, "%s%s", i ? ", " : "", c->sync.keys[i]);
		break;
	case K_EXPECT:
		if (!c->sync.expectation_sync || c->sync.expect_helper_count == 0) {
			put(&o, "%s", onoff(c->sync.expectation_sync));
			break;
		}
		put(&o, "{");
		for (i = 0; i < c->sync.expect_helper_count; i++)
			put(&o, " %s", c->sync.expect_helpers[i]);
		put(&o, " }");
		break;
	case K_LINKS:
		put(&o, "%u %s", c->sync.nlinks, c->sync.nlinks ? config_link_kind_name(c->sync.links[0].kind) : "");
		break;
	case K_LINK_FIELD:
		for (i = 0; i < c->sync.nlinks; i++) {
			if (i)
				put(&o, ", ");
			show_link_field(&o, &c->sync.links[i], opt);
		}
		break;
	}
}

static bool equal(const struct config *a, const struct config *b, const struct config_option_info *opt)
{
	const struct config_filter *fa = &a->general.filter, *fb = &b->general.filter;
	unsigned i;

	switch (opt->kind) {
	case K_U32:
	case K_MS:
	case K_OVERRUN:
		return *(const uint32_t *)at(a, opt) == *(const uint32_t *)at(b, opt);
	case K_INT:
	case K_FACILITY:
	case K_POLICY:
		return *(const int *)at(a, opt) == *(const int *)at(b, opt);
	case K_BOOL:
	case K_EVSRC:
		return *(const bool *)at(a, opt) == *(const bool *)at(b, opt);
	case K_STR:
	case K_LOGFILE:
		return strcmp(at(a, opt), at(b, opt)) == 0;
	case K_PRIORITY:
		return a->general.sched_priority == b->general.sched_priority &&
		       a->general.sched_priority_set == b->general.sched_priority_set;
	case K_ROLE:
		return a->role == b->role;
	case K_MODE:
		return a->sync.mode == b->sync.mode;
	case K_GROUP:
		return strcmp(a->general.unix_group, b->general.unix_group) == 0;
	case K_FILTER:
		return fa->set == fb->set && (!fa->set || fa->kernelspace == fb->kernelspace);
	case K_FILTER_PROTO:
		return fa->protocols.set == fb->protocols.set &&
		       (!fa->protocols.set || (fa->protocols.accept == fb->protocols.accept &&
			memcmp(fa->protocols.bitmap, fb->protocols.bitmap, sizeof(fa->protocols.bitmap)) == 0));
	case K_FILTER_ADDR:
		if (fa->addresses.set != fb->addresses.set)
			return false;
		if (!fa->addresses.set)
			return true;
		if (fa->addresses.accept != fb->addresses.accept || fa->addresses.count != fb->addresses.count)
			return false;
		for (i = 0; i < fa->addresses.count; i++)
			if (!addr_equal(&fa->addresses.addrs[i], &fb->addresses.addrs[i]))
				return false;
		return true;
	case K_FILTER_STATE:
		return fa->states.set == fb->states.set &&
		       (!fa->states.set || (fa->states.accept == fb->states.accept &&
					    fa->states.tcp_states == fb->states.tcp_states));
	case K_KEYS:
		if (a->sync.nkeys != b->sync.nkeys)
			return false;
		for (i = 0; i < a->sync.nkeys; i++)
			if (strcmp(a->sync.keys[i], b->sync.keys[i]))
				return false;
		return true;
	case K_EXPECT:
		if (a->sync.expectation_sync != b->sync.expectation_sync ||
		    a->sync.expect_helper_count != b->sync.expect_helper_count)
			return false;
		for (i = 0; i < a->sync.expect_helper_count; i++)
			if (strcmp(a->sync.expect_helpers[i], b->sync.expect_helpers[i]))
				return false;
		return true;
	case K_LINKS:
		return a->sync.nlinks == b->sync.nlinks &&
		       (a->sync.nlinks == 0 || a->sync.links[0].kind == b->sync.links[0].kind);
	case K_LINK_FIELD:
		/* A different number or kind of links is the "link blocks" row's. */
		if (a->sync.nlinks != b->sync.nlinks)
			return true;
		for (i = 0; i < a->sync.nlinks; i++)
			if (!link_field_equal(&a->sync.links[i], &b->sync.links[i], opt))
				return false;
		return true;
	}
	return true;
}

static bool compared(const struct config *a, const struct config *b, const struct config_option_info *opt)
{
	switch (opt->section) {
	case SEC_SYNC:
		return a->role == CONFIG_ROLE_SYNC && b->role == CONFIG_ROLE_SYNC;
	case SEC_STATS:
		return a->role == CONFIG_ROLE_STATS && b->role == CONFIG_ROLE_STATS;
	default:
		return true;
	}
}

unsigned config_diff(const struct config *old, const struct config *new,
		     struct config_change *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < N_OPTIONS; i++) {
		const struct config_option_info *opt = &config_option_table[i];
		struct config_change *ch;

		if (!compared(old, new, opt) || equal(old, new, opt))
			continue;
		if (n++ >= max)
			continue;
		ch = &out[n - 1];
		ch->opt = opt;
		ch->when = opt->when;
		/* Sealing on or off changes what every datagram is: both ends restart together. */
		if (opt->kind == K_KEYS && (old->sync.nkeys == 0) != (new->sync.nkeys == 0))
			ch->when = CONFIG_RESTART;
		if (opt->kind == K_LINK_FIELD && old->sync.nlinks) {
			const struct config_link *l = &old->sync.links[0];
			const char *name = l->kind == CONFIG_LINK_MCAST && opt->mcast_name ?
					   opt->mcast_name : opt->name;

			/* An IPv6 link writes its addresses as IPv6_...: say it so. */
			if (opt->sub == L_ADDR && l->family == AF_INET6)
				snprintf(ch->name, sizeof(ch->name), "%s IPv6%s",
					 config_link_kind_name(l->kind), name + 4);
			else
				snprintf(ch->name, sizeof(ch->name), "%s %s",
					 config_link_kind_name(l->kind), name);
		} else
			snprintf(ch->name, sizeof(ch->name), "%s", opt->name);
		show(old, opt, ch->old_value, sizeof(ch->old_value));
		show(new, opt, ch->new_value, sizeof(ch->new_value));
	}
	return n;
}

void config_diff_count(const struct config_change *ch, unsigned n, unsigned *live, unsigned *restart)
{
	*live = *restart = 0;
	for (unsigned i = 0; i < n; i++) {
		if (ch[i].when == CONFIG_LIVE)
			(*live)++;
		else
			(*restart)++;
	}
}

/* ---- moving a live value ---------------------------------------------------------- */

#define SWAP(a, b) do { __typeof__(a) t_ = (a); (a) = (b); (b) = t_; } while (0)

void config_take(struct config *dst, struct config *src, const struct config_change *ch)
{
	const struct config_option_info *opt = ch->opt;
	struct config_filter *fd = &dst->general.filter, *fs = &src->general.filter;

	if (ch->when != CONFIG_LIVE)
		return;
	switch (opt->kind) {
	case K_U32:
	case K_MS:
	case K_OVERRUN:
	case K_INT:
	case K_FACILITY:
	case K_POLICY:
	case K_BOOL:
	case K_EVSRC:
	case K_STR:
	case K_LOGFILE:
		memcpy((char *)dst + opt->offset, (const char *)src + opt->offset, opt->size);
		break;
	case K_PRIORITY:
		dst->general.sched_priority = src->general.sched_priority;
		dst->general.sched_priority_set = src->general.sched_priority_set;
		break;
	case K_GROUP:
		memcpy(dst->general.unix_group, src->general.unix_group, sizeof(dst->general.unix_group));
		dst->general.unix_gid = src->general.unix_gid;
		dst->general.unix_group_line = src->general.unix_group_line;
		dst->general.unix_group_column = src->general.unix_group_column;
		break;
	case K_FILTER:
		fd->set = fs->set;
		fd->kernelspace = fs->kernelspace;
		break;
	case K_FILTER_PROTO:
		fd->set = fd->set || fs->set;
		fd->protocols = fs->protocols;
		break;
	case K_FILTER_ADDR:
		fd->set = fd->set || fs->set;
		SWAP(fd->addresses, fs->addresses);
		break;
	case K_FILTER_STATE:
		fd->set = fd->set || fs->set;
		fd->states = fs->states;
		break;
	case K_KEYS:
		dst->sync.nkeys = src->sync.nkeys;
		memcpy(dst->sync.keys, src->sync.keys, sizeof(dst->sync.keys));
		memcpy(dst->sync.key_lines, src->sync.key_lines, sizeof(dst->sync.key_lines));
		break;
	case K_ROLE:
	case K_MODE:
	case K_EXPECT:
	case K_LINKS:
	case K_LINK_FIELD:
		/* Restart-only rows: never live. */
		break;
	}
}
