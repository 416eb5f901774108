/*
 * config.c - defaults, checks across options, printing, and the one
 * function that reads a configuration file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "config/config.h"
#include "parser.h"

/* A configuration file larger than this is certainly not one. */
#define CONFIG_FILE_MAX (16u << 20)

/*
 * Protocol names as /etc/protocols spells them (matched without regard to
 * case), embedded because the parser must not read files.  The first name of
 * each number is the one config_print writes.
 */
const struct config_name_value config_protocol_names[] = {
	{ "ICMP", IPPROTO_ICMP },
	{ "IGMP", IPPROTO_IGMP },
	{ "TCP", IPPROTO_TCP },
	{ "UDP", IPPROTO_UDP },
	{ "DCCP", IPPROTO_DCCP },
	{ "GRE", IPPROTO_GRE },
	{ "ESP", IPPROTO_ESP },
	{ "AH", IPPROTO_AH },
	{ "IPv6-ICMP", IPPROTO_ICMPV6 },
	{ "ICMPv6", IPPROTO_ICMPV6 },
	{ "SCTP", IPPROTO_SCTP },
	{ "UDPLite", IPPROTO_UDPLITE },
	/*
	 * The rest of the IANA names a Debian /etc/protocols (netbase) lists,
	 * for the configs that name them as conntrackd 1.4.7 (which asks
	 * getprotobyname()) accepts them: known at build time, so that the
	 * parser reads no file of the system's.
	 */
	{ "ip", 0 },
	{ "hopopt", 0 },
	{ "ggp", 3 },
	{ "ipencap", 4 },
	{ "IP-ENCAP", 4 },
	{ "st", 5 },
	{ "egp", 8 },
	{ "igp", 9 },
	{ "pup", 12 },
	{ "hmp", 20 },
	{ "xns-idp", 22 },
	{ "rdp", 27 },
	{ "iso-tp4", 29 },
	{ "xtp", 36 },
	{ "ddp", 37 },
	{ "idpr-cmtp", 38 },
	{ "ipv6", 41 },
	{ "ipv6-route", 43 },
	{ "ipv6-frag", 44 },
	{ "idrp", 45 },
	{ "rsvp", 46 },
	{ "IPSEC-ESP", 50 },
	{ "IPSEC-AH", 51 },
	{ "skip", 57 },
	{ "ipv6-nonxt", 59 },
	{ "ipv6-opts", 60 },
	{ "rspf", 73 },
	{ "CPHB", 73 },
	{ "vmtp", 81 },
	{ "eigrp", 88 },
	{ "ospf", 89 },
	{ "OSPFIGP", 89 },
	{ "ax.25", 93 },
	{ "ipip", 94 },
	{ "etherip", 97 },
	{ "encap", 98 },
	{ "pim", 103 },
	{ "ipcomp", 108 },
	{ "vrrp", 112 },
	{ "l2tp", 115 },
	{ "isis", 124 },
	{ "fc", 133 },
	{ "mobility-header", 135 },
	{ "mpls-in-ip", 137 },
	{ "manet", 138 },
	{ "hip", 139 },
	{ "shim6", 140 },
	{ "wesp", 141 },
	{ "rohc", 142 },
	{ "ethernet", 143 },
	{ "mptcp", 262 },
	{ NULL, 0 },
};

/* Kernel tcp_conntrack numbers; CLOSED is upstream's other name of CLOSE. */
const struct config_name_value config_tcp_state_names[] = {
	{ "SYN_SENT", 1 },
	{ "SYN_RECV", 2 },
	{ "ESTABLISHED", 3 },
	{ "FIN_WAIT", 4 },
	{ "CLOSE_WAIT", 5 },
	{ "LAST_ACK", 6 },
	{ "TIME_WAIT", 7 },
	{ "CLOSE", 8 },
	{ "CLOSED", 8 },
	{ "LISTEN", 9 },
	{ NULL, 0 },
};

const struct config_name_value config_syslog_names[] = {
	{ "daemon", LOG_DAEMON },
	{ "local0", LOG_LOCAL0 },
	{ "local1", LOG_LOCAL1 },
	{ "local2", LOG_LOCAL2 },
	{ "local3", LOG_LOCAL3 },
	{ "local4", LOG_LOCAL4 },
	{ "local5", LOG_LOCAL5 },
	{ "local6", LOG_LOCAL6 },
	{ "local7", LOG_LOCAL7 },
	{ NULL, 0 },
};

const char *
config_name_of(const struct config_name_value *table, int value)
{
	for (; table->name; table++)
		if (table->value == value)
			return table->name;
	return NULL;
}

const char *
config_mode_name(enum config_sync_mode mode)
{
	switch (mode) {
	case CONFIG_MODE_FTFW:
		return "FTFW";
	case CONFIG_MODE_NOTRACK:
		return "NOTRACK";
	case CONFIG_MODE_ALARM:
		return "ALARM";
	}
	return "?";
}

const char *
config_link_kind_name(enum config_link_kind kind)
{
	switch (kind) {
	case CONFIG_LINK_MCAST:
		return "Multicast";
	case CONFIG_LINK_UDP:
		return "UDP";
	case CONFIG_LINK_TCP:
		return "TCP";
	}
	return "?";
}

int
config_set_verror(struct config_error *err, const char *file, unsigned line, unsigned column,
		  const char *fmt, va_list ap)
{
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	err->line = line;
	err->column = column;
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	return -1;
}

int
config_set_error(struct config_error *err, const char *file, unsigned line, unsigned column,
		 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	config_set_verror(err, file, line, column, fmt, ap);
	va_end(ap);
	return -1;
}

void
config_warn(config_warn_fn warn, void *warn_arg, const char *file, unsigned line,
	    unsigned column, const char *fmt, ...)
{
	struct config_error w;
	va_list ap;

	if (warn == NULL)
		return;
	va_start(ap, fmt);
	config_set_verror(&w, file, line, column, fmt, ap);
	va_end(ap);
	warn(warn_arg, &w);
}

void
config_defaults(struct config *cfg)
{
	struct config_general *g = &cfg->general;
	struct config_sync *s = &cfg->sync;

	memset(cfg, 0, sizeof(*cfg));
	cfg->role = CONFIG_ROLE_NONE;

	g->hash_size = CONFIG_DEFAULT_HASH_SIZE;
	g->hash_limit = CONFIG_DEFAULT_HASH_LIMIT;
	g->syslog_facility = -1;
	snprintf(g->lockfile, sizeof(g->lockfile), "%s", CONFIG_DEFAULT_LOCKFILE);
	snprintf(g->unix_path, sizeof(g->unix_path), "%s", CONFIG_DEFAULT_UNIX_PATH);
	g->unix_backlog = CONFIG_DEFAULT_UNIX_BACKLOG;
	g->unix_gid = CONFIG_NO_GID;
	g->netlink_overrun_resync = CONFIG_DEFAULT_OVERRUN_RESYNC;
	g->event_iteration_limit = CONFIG_DEFAULT_EVENT_ITER_LIMIT;
	g->sched_policy = SCHED_RR;
	/* sched_get_priority_max() is a system call; it is 99 for RR and FIFO on Linux. */
	g->sched_priority = 99;
	g->systemd = true;

	s->mode = CONFIG_MODE_FTFW;
	s->resend_queue_size = CONFIG_DEFAULT_RESEND_QUEUE_SIZE;
	s->ack_window_size = CONFIG_DEFAULT_ACK_WINDOW_SIZE;
	s->purge_timeout = CONFIG_DEFAULT_PURGE_TIMEOUT;
	s->refresh_time = CONFIG_DEFAULT_REFRESH_TIME;
	s->cache_timeout = CONFIG_DEFAULT_CACHE_TIMEOUT;
	s->peer_timeout_ms = CONFIG_DEFAULT_PEER_TIMEOUT * 1000u;
	s->alive_interval_ms = CONFIG_DEFAULT_ALIVE_INTERVAL_MS;
	s->confirm_queue = -1;
	s->confirm_timeout_ms = CONFIG_DEFAULT_CONFIRM_TIMEOUT_MS;
	s->confirm_held_max = CONFIG_DEFAULT_CONFIRM_HELD_MAX;
	s->health.peer_silent_warning = CONFIG_DEFAULT_PEER_SILENT_WARNING;
	s->health.backlog_warning = CONFIG_DEFAULT_BACKLOG_WARNING;
	s->health.backlog_critical = CONFIG_DEFAULT_BACKLOG_CRITICAL;
	s->health.recent_errors = CONFIG_DEFAULT_RECENT_ERRORS;

	cfg->stats.syslog_facility = -1;
}

void
config_free(struct config *cfg)
{
	free(cfg->general.filter.addresses.addrs);
	cfg->general.filter.addresses.addrs = NULL;
	cfg->general.filter.addresses.count = 0;
	free(cfg->sync.expect_helpers);
	cfg->sync.expect_helpers = NULL;
	cfg->sync.expect_helper_count = 0;
}

/* ---- checks across options ---------------------------------------------- */

static int
validate_link(struct config_link *l, const char *name, struct config_error *err)
{
	const char *kind = config_link_kind_name(l->kind);

	if (l->ifname[0] == '\0')
		return config_set_error(err, name, l->line, 0, "%s block has no Interface; every "
					"link needs one (its MTU sizes the datagrams)", kind);
	if (l->port == 0)
		return config_set_error(err, name, l->line, 0, "%s block has no %s; expected a "
					"UDP port number 1..65535", kind,
					l->kind == CONFIG_LINK_MCAST ? "Group" : "Port");
	if (l->kind == CONFIG_LINK_MCAST) {
		if (l->local.family == 0)
			return config_set_error(err, name, l->line, 0, "Multicast block has no "
						"group address; expected IPv4_address or "
						"IPv6_address");
	} else if (l->dest.family == 0) {
		return config_set_error(err, name, l->line, 0, "%s block has no destination "
					"address; expected IPv4_Destination_Address or "
					"IPv6_Destination_Address", kind);
	}
	l->family = l->kind == CONFIG_LINK_MCAST ? l->local.family : l->dest.family;
	return 0;
}

static int
validate_sync(struct config *cfg, const struct config_marks *marks, const char *name,
	      struct config_error *err, config_warn_fn warn, void *warn_arg)
{
	struct config_sync *s = &cfg->sync;
	unsigned i;

	if (marks->mode_line == 0)
		config_warn(warn, warn_arg, name, marks->sync_line, 0,
			    "Sync has no Mode block; using Mode FTFW");
	if (s->nlinks == 0)
		return config_set_error(err, name, marks->sync_line, 0,
					"Sync needs a link block: UDP, Multicast or TCP");
	s->default_link = 0;
	for (i = 0; i < s->nlinks; i++) {
		if (validate_link(&s->links[i], name, err) < 0)
			return -1;
		if (s->links[i].is_default)
			s->default_link = i;
	}
	/*
	 * A poll finds what changed by comparing the kernel table with the
	 * internal cache; without one it could only send the whole table
	 * every time (conntrackd 1.4.7 then sends nothing at all).
	 */
	if (s->disable_internal_cache && cfg->general.poll_secs)
		return config_set_error(err, name, marks->mode_line, 0,
					"DisableInternalCache cannot be combined with PollSecs (%u): a poll "
					"finds what changed by comparing the kernel table with the internal "
					"cache (conntrackd 1.4.7 would replicate nothing)", cfg->general.poll_secs);
	/* A later Mode replaced the Mode FTFW block that held ConfirmQueue. */
	if (s->confirm_queue >= 0 && s->mode != CONFIG_MODE_FTFW)
		return config_set_error(err, name, marks->mode_line, 0,
					"ConfirmQueue %d: a-priori mode waits for acknowledgements, which only "
					"Mode FTFW gives, and the last Mode is %s", s->confirm_queue,
					config_mode_name(s->mode));
	if (s->hot_standby && s->disable_external_cache)
		return config_set_error(err, name, marks->mode_line, 0,
					"HotStandby keeps the external cache and also writes it into the kernel; "
					"it cannot be combined with DisableExternalCache on");
	/*
	 * An ALARM peer sends nothing but refreshes, each state at least every
	 * RefreshTime + 1 s: a shorter timeout would take a peer holding few
	 * states for a dead one, and its silence says little.
	 */
	if (s->mode == CONFIG_MODE_ALARM) {
		if (!s->peer_timeout_set && (s->refresh_time + 2u) * 1000u > s->peer_timeout_ms)
			s->peer_timeout_ms = (s->refresh_time + 2u) * 1000u;
		if (!s->health.peer_silent_warning_set)
			s->health.peer_silent_warning = 0;
	}
	if (marks->alive_line && s->mode == CONFIG_MODE_ALARM)
		return config_set_error(err, name, marks->alive_line, 0,
					"AliveInterval does not apply to Mode ALARM, which sends no ALIVE "
					"(its peers are heard through their refreshes)");
	/*
	 * A live peer idle for one interval, whose ALIVE is late or lost once,
	 * must not look dead: the timeout covers two intervals at least.
	 * (The peer's interval is what counts; pairs use one setting.)
	 */
	if (s->mode != CONFIG_MODE_ALARM && s->peer_timeout_ms < 2u * s->alive_interval_ms) {
		char t[16];

		config_format_ms(t, sizeof(t), s->peer_timeout_ms);
		return config_set_error(err, name, marks->peer_timeout_line ? marks->peer_timeout_line :
					marks->alive_line, 0,
					"PeerTimeout %s is shorter than two AliveInterval (%u ms): an idle "
					"live peer would be taken for a dead one", t, s->alive_interval_ms);
	}
	if (s->health.backlog_warning && s->health.backlog_critical &&
	    s->health.backlog_warning > s->health.backlog_critical)
		return config_set_error(err, name, marks->sync_line, 0,
					"Health: ResendBacklogWarning (%u s) is above ResendBacklogCritical "
					"(%u s); the warning must come first", s->health.backlog_warning,
					s->health.backlog_critical);
	/* As upstream: without an external cache there is nothing to commit. */
	if (s->disable_external_cache && s->commit_timeout != 0) {
		config_warn(warn, warn_arg, name, marks->mode_line, 0,
			    "CommitTimeout has no effect with DisableExternalCache on; using 0");
		s->commit_timeout = 0;
	}
	return 0;
}

int
config_validate(struct config *cfg, const struct config_marks *marks, const char *name,
		struct config_error *err, config_warn_fn warn, void *warn_arg)
{
	if (marks->sync_line && marks->stats_line) {
		unsigned later = marks->sync_line > marks->stats_line ?
				 marks->sync_line : marks->stats_line;

		return config_set_error(err, name, later, 0, "Sync and Stats cannot be used "
					"together (Sync at line %u, Stats at line %u); choose "
					"one role", marks->sync_line, marks->stats_line);
	}
	if (marks->sync_line) {
		cfg->role = CONFIG_ROLE_SYNC;
		return validate_sync(cfg, marks, name, err, warn, warn_arg);
	}
	cfg->role = marks->stats_line ? CONFIG_ROLE_STATS : CONFIG_ROLE_NONE;
	/* One process opens syslog once, with one facility: General's wins, as upstream. */
	if (cfg->role == CONFIG_ROLE_STATS && cfg->general.syslog_facility >= 0 &&
	    cfg->stats.syslog_facility >= 0 &&
	    cfg->stats.syslog_facility != cfg->general.syslog_facility) {
		config_warn(warn, warn_arg, name, marks->stats_line, 0,
			    "Syslog of Stats (%s) differs from Syslog of General (%s); using %s",
			    config_name_of(config_syslog_names, cfg->stats.syslog_facility),
			    config_name_of(config_syslog_names, cfg->general.syslog_facility),
			    config_name_of(config_syslog_names, cfg->general.syslog_facility));
		cfg->stats.syslog_facility = cfg->general.syslog_facility;
	}
	return 0;
}

int
config_parse_buffer(struct config *cfg, const char *name, const char *text, size_t len,
		    struct config_error *err, config_warn_fn warn, void *warn_arg)
{
	struct config_marks marks;

	memset(&marks, 0, sizeof(marks));
	memset(err, 0, sizeof(*err));
	if (name == NULL)
		name = "(buffer)";
	/* Even an empty input gets a real pointer: no arithmetic on NULL. */
	if (text == NULL) {
		text = "";
		len = 0;
	}
	config_defaults(cfg);
	snprintf(cfg->path, sizeof(cfg->path), "%s", name);
	if (config_parse_text(cfg, &marks, name, text, len, err, warn, warn_arg) < 0 ||
	    config_validate(cfg, &marks, name, err, warn, warn_arg) < 0) {
		config_free(cfg);
		return -1;
	}
	return 0;
}

/* A UNIX Group given by name gets its gid from the group database (files, NSS). */
static int
resolve_group(struct config *cfg, struct config_error *err)
{
	struct config_general *g = &cfg->general;
	struct group grp, *found = NULL;
	char buf[16384];
	int ret;

	if (g->unix_group[0] == '\0' || g->unix_gid != CONFIG_NO_GID)
		return 0;
	ret = getgrnam_r(g->unix_group, &grp, buf, sizeof(buf), &found);
	if (found == NULL)
		return config_set_error(err, cfg->path, g->unix_group_line, g->unix_group_column,
					"unknown group '%s' in UNIX { Group }: %s; give an existing "
					"group or a numeric gid", g->unix_group,
					ret ? strerror(ret) : "no such group in the group database");
	g->unix_gid = grp.gr_gid;
	return 0;
}

int
config_parse_file(struct config *cfg, const char *path, struct config_error *err,
		  config_warn_fn warn, void *warn_arg)
{
	struct stat st;
	char *buf;
	size_t len = 0;
	ssize_t n;
	int fd, ret;

	/* Whatever happens, `cfg` is left in a state that config_free() accepts. */
	config_defaults(cfg);
	memset(err, 0, sizeof(*err));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return config_set_error(err, path, 0, 0, "cannot open the configuration file: %s",
					strerror(errno));
	if (fstat(fd, &st) < 0) {
		ret = errno;
		close(fd);
		return config_set_error(err, path, 0, 0, "cannot read the configuration file: %s",
					strerror(ret));
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)CONFIG_FILE_MAX) {
		close(fd);
		return config_set_error(err, path, 0, 0, "the configuration file %s",
					S_ISREG(st.st_mode) ? "is larger than 16 MiB" :
					"is not a regular file");
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		close(fd);
		return config_set_error(err, path, 0, 0, "out of memory");
	}
	/* The file may change size under us: read until EOF, bounded by the buffer. */
	while (len < (size_t)st.st_size) {
		n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = errno;
			free(buf);
			close(fd);
			return config_set_error(err, path, 0, 0, "cannot read the configuration "
						"file: %s", strerror(ret));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	ret = config_parse_buffer(cfg, path, buf, len, err, warn, warn_arg);
	free(buf);
	if (ret == 0 && resolve_group(cfg, err) < 0) {
		config_free(cfg);
		return -1;
	}
	return ret;
}

/* ---- printing ----------------------------------------------------------- */

static const char *
onoff(bool b)
{
	return b ? "on" : "off";
}

static const char *
addr_str(const struct config_addr *a, char *buf, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];

	inet_ntop(a->family, &a->u, tmp, sizeof(tmp));
	if (a->prefix != (a->family == AF_INET ? 32 : 128))
		snprintf(buf, len, "%s/%u", tmp, a->prefix);
	else
		snprintf(buf, len, "%s", tmp);
	return buf;
}

static const char *
syslog_str(int facility)
{
	const char *s = config_name_of(config_syslog_names, facility);

	return facility < 0 || s == NULL ? "off" : s;
}

static void
print_filter(const struct config_filter *f, FILE *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	unsigned i;

	fprintf(out, "\tFilter From %s {\n", f->kernelspace ? "Kernelspace" : "Userspace");
	if (f->protocols.set) {
		fprintf(out, "\t\tProtocol %s {", f->protocols.accept ? "Accept" : "Ignore");
		for (i = 0; i < 256; i++) {
			const char *n;

			if (!(f->protocols.bitmap[i / 8] & (1u << (i % 8))))
				continue;
			n = config_name_of(config_protocol_names, (int)i);
			if (n)
				fprintf(out, " %s", n);
			else
				fprintf(out, " %u", i);
		}
		fprintf(out, " }\n");
	}
	if (f->addresses.set) {
		fprintf(out, "\t\tAddress %s {\n", f->addresses.accept ? "Accept" : "Ignore");
		for (i = 0; i < f->addresses.count; i++) {
			const struct config_addr *a = &f->addresses.addrs[i];

			fprintf(out, "\t\t\t%s %s\n", a->family == AF_INET ? "IPv4_address" :
				"IPv6_address", addr_str(a, buf, sizeof(buf)));
		}
		fprintf(out, "\t\t}\n");
	}
	if (f->states.set) {
		fprintf(out, "\t\tState %s {", f->states.accept ? "Accept" : "Ignore");
		for (i = 0; i < 16; i++)
			if (f->states.tcp_states & (1u << i))
				fprintf(out, " %s", config_name_of(config_tcp_state_names, (int)i));
		fprintf(out, "%s }\n", f->states.tcp_states ? " for TCP" : "");
	}
	fprintf(out, "\t}\n");
}

static void
print_general(const struct config_general *g, FILE *out)
{
	fprintf(out, "General {\n");
	fprintf(out, "\tHashSize %u\n", g->hash_size);
	fprintf(out, "\tHashLimit %u\n", g->hash_limit);
	fprintf(out, "\tLogFile %s\n", g->logfile[0] ? g->logfile : "off");
	fprintf(out, "\tSyslog %s\n", syslog_str(g->syslog_facility));
	fprintf(out, "\tLockFile %s\n", g->lockfile);
	fprintf(out, "\tUNIX {\n");
	fprintf(out, "\t\tPath %s\n", g->unix_path);
	fprintf(out, "\t\tBacklog %u\n", g->unix_backlog);
	if (g->unix_group[0] && g->unix_gid != CONFIG_NO_GID &&
	    strspn(g->unix_group, "0123456789") != strlen(g->unix_group))
		fprintf(out, "\t\tGroup %s\t# gid %u; ctsyncd's own option\n", g->unix_group,
			(unsigned)g->unix_gid);
	else if (g->unix_group[0])
		fprintf(out, "\t\tGroup %s\t# ctsyncd's own option\n", g->unix_group);
	else
		fprintf(out, "\t\t# no Group: only root and the daemon's uid may use the socket\n");
	fprintf(out, "\t}\n");
	fprintf(out, "\tNetlinkBufferSize %u%s\n", g->netlink_buffer_size,
		g->netlink_buffer_size ? "" : "\t# 0: the system default");
	fprintf(out, "\tNetlinkBufferSizeMaxGrowth %u\n", g->netlink_buffer_max_growth);
	if (g->netlink_overrun_resync)
		fprintf(out, "\tNetlinkOverrunResync %u\n", g->netlink_overrun_resync);
	else
		fprintf(out, "\tNetlinkOverrunResync off\n");
	fprintf(out, "\tNetlinkEventsReliable %s\n", onoff(g->netlink_events_reliable));
	if (g->poll_secs)
		fprintf(out, "\tPollSecs %u\n", g->poll_secs);
	else
		fprintf(out, "\t# PollSecs unset: kernel events are used\n");
	fprintf(out, "\tEventSource %s\n", g->event_bpf ? "bpf" : "ctnetlink");
	fprintf(out, "\tEventIterationLimit %u\n", g->event_iteration_limit);
	if (g->nice)
		fprintf(out, "\tNice %d\n", g->nice);
	fprintf(out, "\tScheduler {\n");
	fprintf(out, "\t\tType %s\n", g->sched_policy == SCHED_FIFO ? "FIFO" : "RR");
	if (g->sched_priority_set)
		fprintf(out, "\t\tPriority %d\n", g->sched_priority);
	else
		fprintf(out, "\t\t# Priority %d: the highest of the policy\n", g->sched_priority);
	fprintf(out, "\t}\n");
	fprintf(out, "\tSystemd %s\n", onoff(g->systemd));
	if (g->filter.set)
		print_filter(&g->filter, out);
	fprintf(out, "}\n");
}

static void
print_link(const struct config_link *l, FILE *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	bool v4;

	fprintf(out, "\t%s%s {\n", config_link_kind_name(l->kind), l->is_default ? " Default" : "");
	if (l->local.family) {
		v4 = l->local.family == AF_INET;
		fprintf(out, "\t\t%s %s\n", v4 ? "IPv4_address" : "IPv6_address",
			addr_str(&l->local, buf, sizeof(buf)));
	}
	if (l->kind == CONFIG_LINK_MCAST) {
		if (l->mcast_ifaddr.s_addr != htonl(INADDR_ANY)) {
			struct config_addr a = { .family = AF_INET, .prefix = 32 };

			a.u.v4 = l->mcast_ifaddr;
			fprintf(out, "\t\tIPv4_interface %s\n", addr_str(&a, buf, sizeof(buf)));
		}
		fprintf(out, "\t\tGroup %u\n", l->port);
	} else {
		if (l->dest.family) {
			v4 = l->dest.family == AF_INET;
			fprintf(out, "\t\t%s %s\n", v4 ? "IPv4_Destination_Address" :
				"IPv6_Destination_Address", addr_str(&l->dest, buf, sizeof(buf)));
		}
		fprintf(out, "\t\tPort %u\n", l->port);
	}
	fprintf(out, "\t\tInterface %s\n", l->ifname);
	fprintf(out, "\t\tSndSocketBuffer %u%s\n", l->sndbuf, l->sndbuf ? "" : "\t# 0: kernel default");
	fprintf(out, "\t\tRcvSocketBuffer %u%s\n", l->rcvbuf, l->rcvbuf ? "" : "\t# 0: kernel default");
	fprintf(out, "\t\tChecksum %s\n", onoff(l->checksum));
	if (l->kind == CONFIG_LINK_TCP)
		fprintf(out, "\t\tErrorQueueLength %u\n", l->error_queue_len);
	fprintf(out, "\t}\n");
}

static void
print_sync(const struct config_sync *s, FILE *out)
{
	char dur[16];
	unsigned i;

	fprintf(out, "Sync {\n");
	fprintf(out, "\tMode %s {\n", config_mode_name(s->mode));
	switch (s->mode) {
	case CONFIG_MODE_FTFW:
		fprintf(out, "\t\tResendQueueSize %u\n", s->resend_queue_size);
		fprintf(out, "\t\tACKWindowSize %u\n", s->ack_window_size);
		if (s->confirm_queue >= 0) {
			fprintf(out, "\t\tConfirmQueue %d\n", s->confirm_queue);
			fprintf(out, "\t\tConfirmTimeout %u\n", s->confirm_timeout_ms);
			fprintf(out, "\t\tConfirmHeldMax %u\n", s->confirm_held_max);
		}
		break;
	case CONFIG_MODE_ALARM:
		fprintf(out, "\t\tRefreshTime %u\n", s->refresh_time);
		fprintf(out, "\t\tCacheTimeout %u\n", s->cache_timeout);
		break;
	case CONFIG_MODE_NOTRACK:
		fprintf(out, "\t\tDisableInternalCache %s\n", onoff(s->disable_internal_cache));
		break;
	}
	fprintf(out, "\t\tCommitTimeout %u%s\n", s->commit_timeout,
		s->commit_timeout ? "" : "\t# 0: from the cached timeout");
	fprintf(out, "\t\tPurgeTimeout %u\n", s->purge_timeout);
	if (s->mode != CONFIG_MODE_ALARM) {
		fprintf(out, "\t\tDisableExternalCache %s\n", onoff(s->disable_external_cache));
		fprintf(out, "\t\tStartupResync %s\n", onoff(s->startup_resync));
		fprintf(out, "\t\tHotStandby %s\n", onoff(s->hot_standby));
	}
	fprintf(out, "\t}\n");
	/* ALARM's timers can be written outside its block; keep them if changed. */
	if (s->mode != CONFIG_MODE_ALARM && s->refresh_time != CONFIG_DEFAULT_REFRESH_TIME)
		fprintf(out, "\tRefreshTime %u\n", s->refresh_time);
	if (s->mode != CONFIG_MODE_ALARM && s->cache_timeout != CONFIG_DEFAULT_CACHE_TIMEOUT)
		fprintf(out, "\tCacheTimeout %u\n", s->cache_timeout);
	config_format_ms(dur, sizeof(dur), s->peer_timeout_ms);
	fprintf(out, "\tPeerTimeout %s\n", dur);
	if (s->alive_interval_ms != CONFIG_DEFAULT_ALIVE_INTERVAL_MS)
		fprintf(out, "\tAliveInterval %u\n", s->alive_interval_ms);
	fprintf(out, "\tHealth {\n");
	fprintf(out, "\t\tPeerSilentWarning %u\n", s->health.peer_silent_warning);
	fprintf(out, "\t\tResendBacklogWarning %u\n", s->health.backlog_warning);
	fprintf(out, "\t\tResendBacklogCritical %u\n", s->health.backlog_critical);
	fprintf(out, "\t\tRecentErrors %u\n", s->health.recent_errors);
	fprintf(out, "\t}\n");
	for (i = 0; i < s->nkeys; i++)
		fprintf(out, "\tKey %s%s\n", s->keys[i],
			i == 0 ? "\t# seals what we send" : "\t# still accepted");
	for (i = 0; i < s->nlinks; i++)
		print_link(&s->links[i], out);
	fprintf(out, "\tOptions {\n");
	fprintf(out, "\t\tTCPWindowTracking %s\n", onoff(s->tcp_window_tracking));
	if (s->expectation_sync && s->expect_helper_count) {
		fprintf(out, "\t\tExpectationSync {");
		for (i = 0; i < s->expect_helper_count; i++)
			fprintf(out, " %s", s->expect_helpers[i]);
		fprintf(out, " }\n");
	} else {
		fprintf(out, "\t\tExpectationSync %s\n", onoff(s->expectation_sync));
	}
	fprintf(out, "\t}\n");
	fprintf(out, "}\n");
}

void
config_print(const struct config *cfg, FILE *out)
{
	const char *c;

	/* The name may hold anything; keep the comment on one line. */
	fprintf(out, "# Effective configuration");
	if (cfg->path[0]) {
		fprintf(out, " of ");
		for (c = cfg->path; *c; c++)
			fputc(*c >= ' ' && *c != 0x7f ? *c : '?', out);
	}
	fprintf(out, ", defaults included.\n");
	print_general(&cfg->general, out);
	if (cfg->role == CONFIG_ROLE_SYNC)
		print_sync(&cfg->sync, out);
	if (cfg->role == CONFIG_ROLE_STATS) {
		fprintf(out, "Stats {\n");
		fprintf(out, "\tLogFile %s\n", cfg->stats.logfile[0] ? cfg->stats.logfile : "off");
		fprintf(out, "\tSyslog %s\n", syslog_str(cfg->stats.syslog_facility));
		fprintf(out, "}\n");
	}
}

void config_format_ms(char *buf, size_t len, uint32_t ms)
{
	if (ms % 1000u == 0)
		snprintf(buf, len, "%u", ms / 1000u);
	else
		snprintf(buf, len, "%ums", ms);
}
