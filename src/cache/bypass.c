/*
 * bypass.c - DisableInternalCache (Mode NOTRACK only): the internal
 * conntrack cache keeps nothing, as conntrackd 1.4.7's "internal bypass".
 *
 * A kernel event that passes the Filter goes to the peer as it comes (the
 * listener's send(): encoded into the channel buffer at once), so this
 * node holds no memory per state.  What needs the whole table reads the
 * kernel's instead: -i streams a dump to the client, and a bulk send (-B,
 * a peer's RESYNC request, StartupResync on the peer, the repair after an
 * event overrun) sends the dumped states as CT_NEW.  Both dumps are
 * pulled (kernel_dump_open()): the kernel hands out the next part of its
 * table only when the client or the link has taken the last one.
 *
 * A bulk walk lasts many loop iterations, and events are handled between
 * them: a state that ended meanwhile may still be in a part of the dump
 * read before its end.  Sent after the event's DEL, it would stay in the
 * peer's cache for good, so the walk remembers the keys whose end an event
 * reported (a flow_keyset, freed when the walk ends) and skips them.
 */
#include "cache_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config/config.h"
#include "flow/filter.h"
#include "flow/format.h"
#include "loop/log.h"
#include "stats_log.h"
#include "wire/wire.h"

bool cache_internal_disabled(const struct cache *c)
{
	return c->bypass;
}

static int send_state(struct cache *c, enum kernel_event ev, const struct flow_full *ff)
{
	int n = c->listener.send ? c->listener.send(c->listener.arg, ev, ff) : -ENOTCONN;

	if (n < 0)
		c->bp.send_failed++;
	return n;
}

void cache_bypass_event(struct cache *c, enum kernel_event ev, const struct flow_full *ff)
{
	switch (ev) {
	case KERNEL_EV_NEW:
		c->n.events_new++;
		c->bp.sent_new++;
		break;
	case KERNEL_EV_UPDATE:
		c->n.events_update++;
		c->bp.sent_update++;
		break;
	case KERNEL_EV_DESTROY:
		c->n.events_destroy++;
		c->bp.sent_destroy++;
		if (ff->counters.present) {
			c->n.traffic_packets += ff->counters.packets[0] + ff->counters.packets[1];
			c->n.traffic_bytes += ff->counters.bytes[0] + ff->counters.bytes[1];
		}
		/* Out of memory: the walk may then send its dumped copy after the DEL (logged nowhere, rare). */
		if (c->walk)
			(void)flow_keyset_add(&c->walk_ended, &ff->flow.orig);
		break;
	}
	send_state(c, ev, ff);
}

/* ---- the bulk's walk of the kernel table ------------------------------------------ */

static void walk_on_flow(void *arg, const struct flow_full *ff)
{
	struct cache *c = arg;
	int n;

	if (!flow_filter_pass_full(c->filter, ff)) {
		c->bp.walk_filtered++;
		return;
	}
	if (flow_keyset_has(&c->walk_ended, &ff->flow.orig)) {
		c->bp.walk_skipped_ended++;
		return;
	}
	n = send_state(c, KERNEL_EV_NEW, ff);
	if (n > 0) {
		c->walk_sent_now += (size_t)n;
		c->bp.walk_sent++;
	}
}

static void walk_on_done(void *arg, int err, const struct kernel_dump_stats *st)
{
	struct cache *c = arg;

	c->walk = NULL;
	flow_keyset_clear(&c->walk_ended);
	if (err && err != -EINTR) {
		c->bp.walk_failed++;
		log_error("bulk send from the kernel table: the dump failed after %llu states: %s",
			  (unsigned long long)st->flows, strerror(-err));
		return;
	}
	log_notice("bulk send from the kernel table: %llu states in %llu ms%s",
		   (unsigned long long)st->flows, (unsigned long long)(st->elapsed_us / 1000u),
		   err == -EINTR ? " (the table changed during the dump: some may be missing)" : "");
}

void cache_kernel_walk_start(struct cache *c)
{
	static const struct kernel_dump_cb cb = { .on_flow = walk_on_flow, .on_done = walk_on_done };
	int err = 0;

	if (c->walk)
		kernel_dump_cancel(c->walk);
	flow_keyset_clear(&c->walk_ended);
	c->bp.walks++;
	c->walk = kernel_dump_open(AF_UNSPEC, &cb, c, &err);
	if (!c->walk) {
		c->bp.walk_failed++;
		log_error("bulk send: cannot dump the kernel table: %s", strerror(-err));
	}
}

/* Entries taken per pull of the dump: the budget is checked between them. */
#define WALK_PULL_STEP 16u

size_t cache_kernel_walk_pull(struct cache *c, size_t budget, bool *over)
{
	c->walk_sent_now = 0;
	while (c->walk && c->walk_sent_now < budget)
		if (kernel_dump_pull(c->walk, WALK_PULL_STEP) < WALK_PULL_STEP)
			break;  /* the end (on_done), or nothing ready yet */
	*over = c->walk == NULL;
	return c->walk_sent_now;
}

void cache_bypass_free(struct cache *c)
{
	if (c->walk)
		kernel_dump_cancel(c->walk);
	c->walk = NULL;
	flow_keyset_clear(&c->walk_ended);
}

/* ---- -i: the kernel table, as the client reads it ---------------------------------- */

/*
 * A -i stream's state.  Its release never touches `c`: the server drops
 * streams (without a fill) before the cache goes.
 */
struct kernel_listing {
	struct cache *c;
	struct kernel_dump *dump;
	struct control_request *req;      /* during a fill */
	bool xml;
	char line[FLOW_FORMAT_MAX];
};

static void listing_on_flow(void *arg, const struct flow_full *ff)
{
	struct kernel_listing *k = arg;
	unsigned opts = FLOW_FMT_TIMEOUT | FLOW_FMT_REPLY | FLOW_FMT_COUNTERS;
	int n;

	/* As 1.4.7: what the Filter leaves out is not ours, nor listed. */
	if (!flow_filter_pass_full(k->c->filter, ff))
		return;
	n = k->xml ? flow_format_xml(k->line, sizeof(k->line), ff, opts)
		   : flow_format(k->line, sizeof(k->line), ff, opts);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(k->line))
		n = (int)sizeof(k->line) - 1;   /* cut, as the formatters say */
	control_request_write(k->req, k->line, (size_t)n);
	control_request_write(k->req, "\n", 1);
}

static void listing_on_done(void *arg, int err, const struct kernel_dump_stats *st)
{
	struct kernel_listing *k = arg;

	k->dump = NULL;
	if (err && err != -EINTR)
		control_request_printf(k->req, "ctsyncd: the kernel dump failed after %llu states: %s\n",
				       (unsigned long long)st->flows, strerror(-err));
}

static bool listing_fill(struct control_request *req, void *arg)
{
	struct kernel_listing *k = arg;
	unsigned pulls = 0;

	k->req = req;
	/* Bounded work per fill; a kernel with nothing ready yet is asked again at the next fill. */
	while (k->dump && control_request_room(req) > 0 && pulls++ < 64)
		if (kernel_dump_pull(k->dump, WALK_PULL_STEP) < WALK_PULL_STEP)
			break;
	k->req = NULL;
	return k->dump == NULL;
}

static void listing_release(void *arg)
{
	struct kernel_listing *k = arg;

	if (k->dump)
		kernel_dump_cancel(k->dump);
	free(k);
}

enum control_result cache_bypass_dump(struct cache *c, struct control_request *req, bool xml)
{
	static const struct kernel_dump_cb cb = { .on_flow = listing_on_flow, .on_done = listing_on_done };
	struct kernel_listing *k = calloc(1, sizeof(*k));
	int err = 0;

	if (!k || !(k->dump = kernel_dump_open(AF_UNSPEC, &cb, k, &err))) {
		control_request_printf(req, "ctsyncd: cannot dump the kernel table: %s\n",
				       strerror(k ? -err : ENOMEM));
		control_request_set_status(req, CTL_STATUS_FAILED);
		free(k);
		return CONTROL_DONE;
	}
	k->c = c;
	k->xml = xml;
	c->bp.dumps++;
	return control_request_stream(req, listing_fill, listing_release, k);
}
