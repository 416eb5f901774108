/*
 * compat_report.c - `-s` text in conntrackd 1.4.7's layout.
 *
 * Each format string below reproduces what Debian's conntrackd 1.4.7
 * prints (captured in network namespaces, tests/interop/stats_text.sh
 * compares the two daemons line by line): tabs where it has tabs, numbers
 * right-aligned in 12 or 20 columns, one blank line after each block.  A
 * number wider than its column pushes the rest of its line right, as
 * printf does.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/compat_report.h"

void compat_text_free(struct compat_text *t)
{
	free(t->p);
	*t = (struct compat_text){ 0 };
}

static void add(struct compat_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct compat_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->failed = true;
		return;
	}
	if (t->len + (size_t)n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 1024;
		char *p;

		while (cap < t->len + (size_t)n + 1)
			cap *= 2;
		p = realloc(t->p, cap);
		if (!p) {
			t->failed = true;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/* ---- -s, -s ct, -s expect --------------------------------------------------- */

static void summary_cache(struct compat_text *t, const char *name, const struct compat_cache *c)
{
	add(t, "%s:\n", name);
	add(t, "current active connections:\t%12" PRIu64 "\n", c->active);
	add(t, "connections created:\t\t%12" PRIu64 "\tfailed:\t%12" PRIu64 "\n",
	    c->created, c->create_failed);
	add(t, "connections updated:\t\t%12" PRIu64 "\tfailed:\t%12" PRIu64 "\n",
	    c->updated, c->update_failed);
	add(t, "connections destroyed:\t\t%12" PRIu64 "\tfailed:\t%12" PRIu64 "\n\n",
	    c->deleted, c->delete_failed);
}

static void bypass(struct compat_text *t, const struct compat_bypass *b)
{
	add(t, "internal bypass:\n");
	add(t, "connections new:\t\t%12" PRIu64 "\n", b->created);
	add(t, "connections updated:\t\t%12" PRIu64 "\n", b->updated);
	add(t, "connections destroyed:\t\t%12" PRIu64 "\n\n", b->deleted);
}

static void inject(struct compat_text *t, const struct compat_inject *i)
{
	add(t, "external inject:\n");
	add(t, "connections created:\t\t%12" PRIu64 "\tfailed:\t%12" PRIu64 "\n",
	    i->created, i->create_failed);
	add(t, "connections updated:\t\t%12" PRIu64 "\tfailed:\t%12" PRIu64 "\n",
	    i->updated, i->update_failed);
	add(t, "connections destroyed:\t\t%12" PRIu64 "\tfailed:\t%12" PRIu64 "\n\n",
	    i->deleted, i->delete_failed);
}

/* "UDP", "TCP", "multicast": as the traffic headings name the link kinds. */
static const char *kind_word(enum config_link_kind kind)
{
	switch (kind) {
	case CONFIG_LINK_MCAST:
		return "multicast";
	case CONFIG_LINK_UDP:
		return "UDP";
	case CONFIG_LINK_TCP:
		return "TCP";
	}
	return "?";
}

static void traffic_lines(struct compat_text *t, const struct compat_link *l)
{
	add(t, "%20" PRIu64 " Bytes sent %20" PRIu64 " Bytes recv\n", l->bytes_sent, l->bytes_recv);
	add(t, "%20" PRIu64 " Pckts sent %20" PRIu64 " Pckts recv\n", l->packets_sent, l->packets_recv);
	add(t, "%20" PRIu64 " Error send %20" PRIu64 " Error recv\n\n", l->errors_sent, l->errors_recv);
}

/* The active link's traffic: the block `-s` and `-s network` end with. */
static void active_link(struct compat_text *t, const struct compat_sync *s)
{
	const struct compat_link *l;

	if (s->active >= s->nlinks)
		return;
	l = &s->links[s->active];
	add(t, "%s traffic (active device=%s)", kind_word(l->kind), l->ifname);
	if (l->kind == CONFIG_LINK_TCP)
		add(t, " server=%s client=%s", l->tcp_server_connected ? "connected" : "disconnected",
		    l->tcp_client_connected ? "connected" : "disconnected");
	add(t, ":\n");
	traffic_lines(t, l);
}

void compat_summary(struct compat_text *t, const struct compat_caches *c,
		    const struct compat_sync *sync)
{
	if (c->stats_mode)
		summary_cache(t, "cache stats", &c->internal);
	else if (c->bypass_internal)
		bypass(t, &c->bypass);
	else
		summary_cache(t, "cache internal", &c->internal);
	if (c->has_external) {
		if (c->inject_external)
			inject(t, &c->inject);
		else
			summary_cache(t, "cache external", &c->external);
	}
	add(t, "traffic processed:\n");
	add(t, "%20" PRIu64 " Bytes %25" PRIu64 " Pckts\n\n", c->traffic_bytes, c->traffic_packets);
	if (!sync)
		return;
	active_link(t, sync);
	add(t, "message tracking:\n");
	add(t, "%20" PRIu64 " Malformed msgs %20" PRIu64 " Lost msgs\n\n", sync->malformed,
	    sync->seq_lost);
}

/* ---- -s cache ---------------------------------------------------------------- */

static void cache_detail(struct compat_text *t, const char *name, const struct compat_cache *c)
{
	add(t, "cache:%s\tactive objects:\t\t%12" PRIu64 "\n", name, c->objects);
	add(t, "\tactive/total entries:\t\t%12" PRIu64 "/%12" PRIu64 "\n", c->active, c->objects);
	add(t, "\tcreation OK/failed:\t\t%12" PRIu64 "/%12" PRIu64 "\n", c->created, c->create_failed);
	add(t, "\t\tno memory available:\t%12" PRIu64 "\n", c->no_memory);
	add(t, "\t\tno space left in cache:\t%12" PRIu64 "\n", c->no_space);
	add(t, "\tupdate OK/failed:\t\t%12" PRIu64 "/%12" PRIu64 "\n", c->updated, c->update_failed);
	add(t, "\t\tentry not found:\t%12" PRIu64 "\n", c->update_not_found);
	add(t, "\tdeletion created/failed:\t%12" PRIu64 "/%12" PRIu64 "\n", c->deleted, c->delete_failed);
	add(t, "\t\tentry not found:\t%12" PRIu64 "\n\n", c->delete_not_found);
}

void compat_cache(struct compat_text *t, const struct compat_caches *c)
{
	if (c->stats_mode)
		cache_detail(t, "stats", &c->internal);
	else if (c->bypass_internal)
		bypass(t, &c->bypass);
	else
		cache_detail(t, "internal", &c->internal);
	if (c->has_external) {
		if (c->inject_external)
			inject(t, &c->inject);
		else
			cache_detail(t, "external", &c->external);
	}
}

/* ---- -s network, -s link ----------------------------------------------------- */

void compat_network(struct compat_text *t, const struct compat_sync *s)
{
	add(t, "network statistics:\n");
	add(t, "\trecv:\n");
	add(t, "\t\tMalformed messages:\t%20" PRIu64 "\n", s->malformed);
	add(t, "\t\tWrong protocol version:\t%20" PRIu64 "\n", s->wrong_version);
	add(t, "\t\tMalformed header:\t%20" PRIu64 "\n", s->bad_header);
	add(t, "\t\tMalformed payload:\t%20" PRIu64 "\n", s->bad_payload);
	add(t, "\t\tBad message type:\t%20" PRIu64 "\n", s->bad_type);
	add(t, "\t\tTruncated message:\t%20" PRIu64 "\n", s->truncated);
	add(t, "\t\tBad message size:\t%20" PRIu64 "\n", s->bad_size);
	add(t, "\tsend:\n");
	add(t, "\t\tMalformed messages:\t%20" PRIu64 "\n\n", s->send_malformed);
	add(t, "sequence tracking statistics:\n");
	add(t, "\trecv:\n");
	add(t, "\t\tPackets lost:\t\t%20" PRIu64 "\n", s->seq_lost);
	add(t, "\t\tPackets before:\t\t%20" PRIu64 "\n\n", s->seq_before);
	active_link(t, s);
}

void compat_links(struct compat_text *t, const struct compat_sync *s)
{
	for (unsigned i = 0; i < s->nlinks && i < CONFIG_MAX_LINKS; i++) {
		const struct compat_link *l = &s->links[i];

		add(t, "%s traffic device=%s status=%s role=%s:\n", kind_word(l->kind), l->ifname,
		    l->status ? l->status : "DOWN", l->active ? "ACTIVE" : "BACKUP");
		traffic_lines(t, l);
	}
}

/* ---- -s queue, -s rsqueue ---------------------------------------------------- */

static void queue_block(struct compat_text *t, const char *name, uint64_t len, uint64_t max,
			uint64_t full)
{
	add(t, "queue %s:\n", name);
	add(t, "current elements:\t\t%12" PRIu64 "\n", len);
	add(t, "maximum elements:\t\t%12" PRIu64 "\n", max);
	add(t, "not enough space errors:\t%12" PRIu64 "\n\n", full);
}

void compat_queue(struct compat_text *t, const struct compat_sync *s)
{
	add(t, "allocated queue nodes:\t\t%12" PRIu64 "\n\n", s->queue_nodes);
	queue_block(t, "txqueue", s->txq_len, s->txq_max, s->txq_full);
	queue_block(t, "errorq", s->errq_len, s->errq_max, s->errq_full);
	if (s->ftfw)
		queue_block(t, "rsqueue", s->rsq_len, s->rsq_max, s->rsq_full);
}

void compat_rsqueue_head(struct compat_text *t, uint64_t len)
{
	add(t, "resent queue (len=%" PRIu64 ")\n", len);
}

void compat_rsqueue_entry(struct compat_text *t, const struct compat_rsq_entry *e)
{
	if (e->control)
		add(t, "control -> seq:%" PRIu32 " flags:%u\n", e->seq, (unsigned)e->flags);
	else
		add(t, "object -> seq:%" PRIu32 "\n", e->seq);
}

/* ---- -s runtime -------------------------------------------------------------- */

static void uptime(struct compat_text *t, uint64_t seconds)
{
	uint64_t min = seconds / 60 % 60, h = seconds / 3600 % 24, days = seconds / 86400;

	add(t, "daemon uptime: ");
	if (days > 0)
		add(t, "%" PRIu64 " %s ", days, days == 1 ? "day" : "days");
	if (days > 0 || h > 0)
		add(t, "%" PRIu64 " h ", h);
	add(t, "%" PRIu64 " min\n\n", min);
}

void compat_runtime(struct compat_text *t, const struct compat_runtime *r)
{
	uptime(t, r->uptime_seconds);
	add(t, "netlink stats:\n");
	add(t, "\tevents received:\t%20" PRIu64 "\n", r->events_received);
	add(t, "\tevents filtered:\t%20" PRIu64 "\n", r->events_filtered);
	add(t, "\tevents unknown type:\t\t%12" PRIu64 "\n", r->events_unknown);
	add(t, "\tcatch event failed:\t\t%12" PRIu64 "\n", r->catch_failed);
	add(t, "\tdump unknown type:\t\t%12" PRIu64 "\n", r->dump_unknown);
	add(t, "\tnetlink overrun:\t\t%12" PRIu64 "\n", r->overruns);
	add(t, "\tflush kernel table:\t\t%12" PRIu64 "\n", r->kernel_flushes);
	add(t, "\tresync with kernel table:\t%12" PRIu64 "\n", r->kernel_resyncs);
	add(t, "\tcurrent buffer size (in bytes):\t%12" PRIu64 "\n\n", r->netlink_buffer_bytes);
	add(t, "runtime stats:\n");
	add(t, "\tchild process failed:\t\t%12" PRIu64 "\n", r->child_failed);
	add(t, "\t\tchild process segfault:\t%12" PRIu64 "\n", r->child_segfault);
	add(t, "\t\tchild process termsig:\t%12" PRIu64 "\n", r->child_termsig);
	add(t, "\tselect failed:\t\t\t%12" PRIu64 "\n", r->select_failed);
	add(t, "\twait failed:\t\t\t%12" PRIu64 "\n", r->wait_failed);
	add(t, "\tlocal read failed:\t\t%12" PRIu64 "\n", r->local_read_failed);
	add(t, "\tlocal unknown request:\t\t%12" PRIu64 "\n\n", r->local_unknown);
}
