/*
 * health.c - the judgement of `ctsyncd -s health` (control/health.h):
 * facts and thresholds in, one monitoring-plugin line out.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "control/health.h"

static const char *const state_names[] = {
	[HEALTH_OK] = "OK",
	[HEALTH_WARNING] = "WARNING",
	[HEALTH_CRITICAL] = "CRITICAL",
	[HEALTH_UNKNOWN] = "UNKNOWN",
};

const char *health_state_name(enum health_state s)
{
	return (unsigned)s <= HEALTH_UNKNOWN ? state_names[s] : "UNKNOWN";
}

/* The problems found, the critical ones first, as "; "-separated text. */
struct findings {
	enum health_state worst;
	char crit[HEALTH_LINE_MAX];
	char warn[HEALTH_LINE_MAX];
	size_t ncrit, nwarn;
};

static void append(char *buf, size_t *len, const char *fmt, va_list ap)
{
	size_t cap = HEALTH_LINE_MAX;
	int n;

	if (*len >= cap - 1)
		return;
	if (*len) {
		n = snprintf(buf + *len, cap - *len, "; ");
		*len = n < 0 || (size_t)n >= cap - *len ? cap - 1 : *len + (size_t)n;
	}
	n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	*len = n < 0 || (size_t)n >= cap - *len ? cap - 1 : *len + (size_t)n;
}

static void found(struct findings *fd, enum health_state s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void found(struct findings *fd, enum health_state s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (s == HEALTH_CRITICAL)
		append(fd->crit, &fd->ncrit, fmt, ap);
	else
		append(fd->warn, &fd->nwarn, fmt, ap);
	va_end(ap);
	if (s > fd->worst)
		fd->worst = s;
}

/* Whole seconds, rounded down: "silent for 4 s" after 4.9 s. */
static unsigned long long secs(uint64_t ms)
{
	return (unsigned long long)(ms / 1000u);
}

static void judge_peers(const struct health_facts *f, const struct health_limits *l,
			struct findings *fd, unsigned *up, uint64_t *silent_max)
{
	*up = 0;
	*silent_max = 0;
	for (unsigned i = 0; i < f->npeers && i < HEALTH_PEERS_MAX; i++) {
		const struct health_peer *p = &f->peers[i];

		if (p->heard && p->silent_ms > *silent_max)
			*silent_max = p->silent_ms;
		switch (p->state) {
		case HEALTH_PEER_DOWN:
			if (p->heard)
				found(fd, HEALTH_CRITICAL, "peer %s down (silent for %llu s)", p->addr,
				      secs(p->silent_ms));
			else
				found(fd, HEALTH_CRITICAL, "peer %s down (never heard, %llu s since start)",
				      p->addr, secs(f->uptime_ms));
			break;
		case HEALTH_PEER_WAITING:
			found(fd, HEALTH_WARNING, "peer %s not heard yet (%llu s since start)", p->addr,
			      secs(f->uptime_ms));
			break;
		case HEALTH_PEER_UP:
			(*up)++;
			if (l->peer_silent_warning &&
			    p->silent_ms >= (uint64_t)l->peer_silent_warning * 1000u)
				found(fd, HEALTH_WARNING, "peer %s silent for %llu s", p->addr,
				      secs(p->silent_ms));
			break;
		}
	}
	if (f->multicast && f->npeers == 0) {
		if (f->uptime_ms >= f->peer_timeout_ms)
			found(fd, HEALTH_CRITICAL, "no peer heard on the group (%llu s since start)",
			      secs(f->uptime_ms));
		else
			found(fd, HEALTH_WARNING, "no peer heard on the group yet (%llu s since start)",
			      secs(f->uptime_ms));
	}
}

static void judge_recent(const struct health_limits *l, struct findings *fd, uint64_t age_ms,
			 const char *what)
{
	if (age_ms != HEALTH_NEVER && age_ms < (uint64_t)l->recent_errors * 1000u)
		found(fd, HEALTH_WARNING, "%s %llu s ago", what, secs(age_ms));
}

enum health_state health_judge(const struct health_facts *f, const struct health_limits *l,
			       char *line, size_t cap)
{
	struct findings fd = { .worst = HEALTH_OK };
	uint64_t silent_max, refused = f->internal_refused + f->external_refused;
	unsigned up;
	char summary[256];
	int n;

	judge_peers(f, l, &fd, &up, &silent_max);
	if (f->ftfw) {
		if (l->backlog_critical && f->backlog_ms >= (uint64_t)l->backlog_critical * 1000u)
			found(&fd, HEALTH_CRITICAL, "resend backlog %llu s", secs(f->backlog_ms));
		else if (l->backlog_warning && f->backlog_ms >= (uint64_t)l->backlog_warning * 1000u)
			found(&fd, HEALTH_WARNING, "resend backlog %llu s", secs(f->backlog_ms));
	}
	if (!f->internal_complete)
		found(&fd, HEALTH_CRITICAL, "internal cache incomplete (%llu states refused since start)",
		      (unsigned long long)f->internal_refused);
	if (!f->external_complete)
		found(&fd, HEALTH_CRITICAL, "external cache incomplete (%llu states refused since start)",
		      (unsigned long long)f->external_refused);
	judge_recent(l, &fd, f->overrun_age_ms, "netlink event overrun");
	judge_recent(l, &fd, f->commit_failure_age_ms, "commit failures");
	judge_recent(l, &fd, f->write_failure_age_ms,
		     f->hot_standby ? "hot-standby mirror errors" : "kernel write failures");

	if (f->ftfw)
		snprintf(summary, sizeof(summary), "%u/%u peers up, resend backlog %llu s, caches %s",
			 up, f->npeers, secs(f->backlog_ms),
			 f->internal_complete && f->external_complete ? "complete" : "incomplete");
	else
		snprintf(summary, sizeof(summary), "%u/%u peers up, caches %s", up, f->npeers,
			 f->internal_complete && f->external_complete ? "complete" : "incomplete");
	n = snprintf(line, cap,
		     "CTSYNCD %s - %s%s%s%s%s | peers_up=%u;;;0;%u silent_max=%.1fs;%u;%llu "
		     "backlog=%llus;%u;%u refused=%llu overruns=%llu commit_failures=%llu "
		     "write_failures=%llu\n",
		     health_state_name(fd.worst), fd.crit, fd.ncrit && fd.nwarn ? "; " : "", fd.warn,
		     fd.ncrit || fd.nwarn ? "; " : "", summary, up, f->npeers,
		     (double)silent_max / 1000.0, l->peer_silent_warning, secs(f->peer_timeout_ms),
		     secs(f->backlog_ms), l->backlog_warning, l->backlog_critical,
		     (unsigned long long)refused, (unsigned long long)f->overruns,
		     (unsigned long long)f->commit_failures, (unsigned long long)f->write_failures);
	/* Cut, the line still ends with its newline. */
	if (cap >= 2 && (n < 0 || (size_t)n >= cap)) {
		line[cap - 2] = '\n';
		line[cap - 1] = '\0';
	}
	return fd.worst;
}

int health_parse_answer(const char *buf, size_t len)
{
	static const char prefix[] = "CTSYNCD ";

	if (len < sizeof(prefix) || len > HEALTH_LINE_MAX || buf[len - 1] != '\n' ||
	    memcmp(buf, prefix, sizeof(prefix) - 1) != 0)
		return -1;
	for (size_t i = 0; i + 1 < len; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			return -1;
	for (int s = HEALTH_OK; s <= HEALTH_UNKNOWN; s++) {
		const char *name = state_names[s];
		size_t k = strlen(name), at = sizeof(prefix) - 1;

		if (len >= at + k + 3 && memcmp(buf + at, name, k) == 0 &&
		    memcmp(buf + at + k, " - ", 3) == 0)
			return s;
	}
	return -1;
}

void health_watch_sample(struct health_watch *w, uint64_t value, uint64_t now_ms)
{
	/* The first sample is the baseline, unless failures came before it. */
	if ((w->sampled && value > w->value) || (!w->sampled && value > 0)) {
		w->changed = true;
		w->changed_ms = now_ms;
	}
	w->sampled = true;
	w->value = value;
}

uint64_t health_watch_age(const struct health_watch *w, uint64_t now_ms)
{
	if (!w->changed)
		return HEALTH_NEVER;
	return now_ms > w->changed_ms ? now_ms - w->changed_ms : 0;
}
