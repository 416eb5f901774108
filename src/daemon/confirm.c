/*
 * confirm.c - a-priori mode: hold a connection's first reply packet until
 * every peer has its state (doc/apriori.md).
 *
 * A queued packet's conntrack (from the kernel with the packet, or read
 * back by the packet's reply tuple) is taken into the internal cache as
 * the update event the packet will cause (cache_local_observe()); the
 * engine then sends it, and the packet waits until the engine reports the
 * flow acknowledged by every peer it waits for (confirm_acked()), or
 * ConfirmTimeout passes.  The held packets are a holdset (holdset.h); this
 * file binds it to the queue, the loop's clock and the engine.
 */
#include "build-config.h"
#include "confirm.h"
#include "holdset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache.h"
#include "config/config.h"
#include "control/report.h"
#include "kernel/kernel.h"
#include "kernel/nfqueue.h"
#include "loop/log.h"
#include "loop/loop.h"
#include "sync/sync.h"

/* The hold times kept for the quantiles of -s: the latest this many. */
#define SAMPLES 4096u
/* A failed read-back is logged at most this often. */
#define LOG_EVERY_MS 10000u

/* Why a held packet goes: the counter it is counted under. */
enum { WHY_CONFIRMED = 1, WHY_TIMED_OUT, WHY_NO_PEER, WHY_GONE };

struct confirm_counters {
	uint64_t packets;               /* queued packets received */
	uint64_t confirmed;             /* accepted: every peer had the state (held or at once) */
	uint64_t confirmed_at_once;     /* of those, the state was acknowledged already */
	uint64_t timed_out;             /* accepted after ConfirmTimeout */
	uint64_t no_peer;               /* accepted: no peer waited for */
	uint64_t over_limit;            /* accepted: ConfirmHeldMax packets were held */
	uint64_t unknown;               /* accepted: the connection was not found or not replicated */
	uint64_t gone;                  /* accepted: the flow left the internal cache while held */
	uint64_t held_peak;
};

struct confirm {
	struct loop *loop;
	struct cache *cache;
	struct ftfw *engine;
	struct kernel_nfqueue *queue;
	struct kernel_getter *getter;
	struct loop_timer *timer;
	uint16_t num;
	uint32_t timeout_ms;
	uint32_t held_max;

	struct holdset held;            /* deadlines in loop time, arrivals in monotonic us */
	uint64_t released_at_us;        /* the release being made, for the hold time */

	struct confirm_counters c;
	uint32_t samples[SAMPLES];      /* hold times, us, a ring */
	uint32_t nsamples, sample_pos;
	uint64_t hold_max_us;
	uint64_t logged_ms;
	struct flow_full ct;            /* scratch: a read-back state */
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sample(struct confirm *c, uint64_t us)
{
	c->samples[c->sample_pos] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	c->sample_pos = (c->sample_pos + 1) % SAMPLES;
	if (c->nsamples < SAMPLES)
		c->nsamples++;
	if (us > c->hold_max_us)
		c->hold_max_us = us;
}

static void verdict_accept(struct confirm *c, uint32_t id)
{
	int err = kernel_nfqueue_accept(c->queue, id);

	if (err < 0)
		log_warning("a-priori mode: cannot send verdicts to NFQUEUE %u: %s", c->num, strerror(-err));
}

/* holdset_release_fn: accept a held packet and count it under `why`. */
static void on_release(void *arg, uint32_t id, uint64_t since_us, int why)
{
	struct confirm *c = arg;

	verdict_accept(c, id);
	switch (why) {
	case WHY_CONFIRMED:
		c->c.confirmed++;
		sample(c, c->released_at_us - since_us);
		break;
	case WHY_TIMED_OUT:
		c->c.timed_out++;
		break;
	case WHY_NO_PEER:
		c->c.no_peer++;
		break;
	default:
		c->c.gone++;
		break;
	}
}

static void arm(struct confirm *c)
{
	uint64_t now = loop_now_ms(c->loop), deadline;

	if (!holdset_next_deadline(&c->held, &deadline)) {
		loop_timer_disarm(c->timer);
		return;
	}
	loop_timer_arm(c->timer, deadline > now ? deadline - now : 0);
}

/* The kernel's state of the packet's connection: given with it, or read back by its reply tuple. */
static const struct flow_full *packet_ct(struct confirm *c, const struct kernel_nfqueue_packet *p)
{
	uint64_t now;
	int err;

	if (p->has_ct)
		return &p->ct;
	if (!p->has_tuple)
		return NULL;
	err = kernel_get_reply(c->getter, &p->tuple, &c->ct);
	if (err == 0)
		return &c->ct;
	now = loop_now_ms(c->loop);
	if (!c->logged_ms || now - c->logged_ms >= LOG_EVERY_MS) {
		log_warning("a-priori mode: a packet of NFQUEUE %u has no conntrack by its addresses (%s); "
			    "accepted unconfirmed (the rule must queue reply packets before NAT: see "
			    "doc/apriori.md)", c->num, strerror(-err));
		c->logged_ms = now ? now : 1;
	}
	return NULL;
}

static void on_packet(void *arg, const struct kernel_nfqueue_packet *p)
{
	struct confirm *c = arg;
	uint64_t since = now_us();
	const struct flow_full *ff;
	uint32_t h;

	c->c.packets++;
	ff = packet_ct(c, p);
	h = ff ? cache_local_observe(c->cache, ff) : 0;
	if (!h) {
		verdict_accept(c, p->id);
		c->c.unknown++;
		return;
	}
	switch (ftfw_flow_ack_state(c->engine, h)) {
	case FTFW_ACK_NOBODY:
		verdict_accept(c, p->id);
		c->c.no_peer++;
		return;
	case FTFW_ACK_DONE:
		verdict_accept(c, p->id);
		c->c.confirmed++;
		c->c.confirmed_at_once++;
		sample(c, now_us() - since);
		return;
	case FTFW_ACK_PENDING:
		break;
	}
	if (c->held.n >= c->held_max ||
	    holdset_add(&c->held, p->id, h, loop_now_ms(c->loop) + c->timeout_ms, since) < 0) {
		verdict_accept(c, p->id);
		c->c.over_limit++;
		return;
	}
	if (c->held.n > c->c.held_peak)
		c->c.held_peak = c->held.n;
	if (c->held.n == 1)
		arm(c);
}

static void release_handle(struct confirm *c, uint32_t handle, int why)
{
	if (!c->held.n)
		return;
	c->released_at_us = now_us();
	if (holdset_release_handle(&c->held, handle, why, on_release, c))
		arm(c);
}

void confirm_acked(struct confirm *c, uint32_t handle)
{
	if (c)
		release_handle(c, handle, WHY_CONFIRMED);
}

void confirm_gone(struct confirm *c, uint32_t handle)
{
	if (c)
		release_handle(c, handle, WHY_GONE);
}

/* holdset_decide_fn: what the engine now says of a held packet's flow. */
static int decide(void *arg, uint32_t handle)
{
	struct confirm *c = arg;

	switch (ftfw_flow_ack_state(c->engine, handle)) {
	case FTFW_ACK_NOBODY:
		return WHY_NO_PEER;
	case FTFW_ACK_DONE:
		return WHY_CONFIRMED;
	case FTFW_ACK_PENDING:
		break;
	}
	return 0;
}

void confirm_recheck(struct confirm *c)
{
	if (!c || !c->held.n)
		return;
	c->released_at_us = now_us();
	holdset_release_if(&c->held, decide, on_release, c);
	arm(c);
}

static void on_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct confirm *c = arg;

	(void)timer;
	c->released_at_us = now_us();
	holdset_release_expired(&c->held, loop_now_ms(loop), WHY_TIMED_OUT, on_release, c);
	arm(c);
}

/* The verdicts of one loop iteration go in one system call, after everything else. */
static void flush(struct loop *loop, void *arg)
{
	struct confirm *c = arg;
	int err = kernel_nfqueue_flush(c->queue);

	(void)loop;
	if (err < 0)
		log_warning("a-priori mode: cannot send verdicts to NFQUEUE %u: %s", c->num, strerror(-err));
}

int confirm_reconfigure(struct confirm *c, const struct config_sync *s)
{
	int err = holdset_grow(&c->held, s->confirm_held_max);

	if (err < 0) {
		log_error("a-priori mode: no memory for ConfirmHeldMax %u; keeping %u", s->confirm_held_max,
			  c->held_max);
		return err;
	}
	c->held_max = s->confirm_held_max;
	holdset_shift_deadlines(&c->held, (int64_t)s->confirm_timeout_ms - (int64_t)c->timeout_ms);
	c->timeout_ms = s->confirm_timeout_ms;
	arm(c);
	return 0;
}

int confirm_start(struct confirm **out, const struct config_sync *s, struct loop *loop,
		  struct cache *cache, struct ftfw *engine)
{
	static const struct kernel_nfqueue_cb cb = { .on_packet = on_packet };
	struct confirm *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->cache = cache;
	c->engine = engine;
	c->num = (uint16_t)s->confirm_queue;
	c->timeout_ms = s->confirm_timeout_ms;
	c->held_max = s->confirm_held_max;
	err = holdset_init(&c->held, c->held_max);
	if (err == 0 && !(c->timer = loop_timer_new(loop, on_timer, c)))
		err = -ENOMEM;
	if (err == 0)
		c->getter = kernel_getter_new(&err);
	if (err == 0)
		err = loop_flush_hook(loop, flush, c);
	if (err < 0) {
		log_error("a-priori mode: cannot start: %s", strerror(-err));
		confirm_stop(c);
		return err;
	}
	/* Twice the packets we hold: beyond, the kernel lets them through itself (FAIL_OPEN). */
	c->queue = kernel_nfqueue_open(loop, c->num, c->held_max * 2u, &cb, c, &err);
	if (!c->queue) {
		log_error("a-priori mode: cannot bind NFQUEUE %u: %s%s", c->num, strerror(-err),
			  err == -EBUSY || err == -EPERM ? " (another process reads it?)" : "");
		confirm_stop(c);
		return err;
	}
	{
		struct kernel_nfqueue_stats st;

		kernel_nfqueue_get_stats(c->queue, &st);
		log_notice("a-priori mode: NFQUEUE %u bound; a packet waits at most %u ms for the peers' "
			   "acknowledgement, %u at once; the kernel %s", c->num, c->timeout_ms, c->held_max,
			   st.kernel_ct ? "sends each packet's conntrack" :
			   "sends no conntrack with packets (no CONFIG_NETFILTER_NETLINK_GLUE_CT): each is "
			   "read back by the packet's reply tuple");
	}
	*out = c;
	return 0;
}

void confirm_stop(struct confirm *c)
{
	if (!c)
		return;
	/* Fail open: what we hold goes on rather than dying with our socket. */
	if (c->queue)
		holdset_release_all(&c->held, WHY_TIMED_OUT, on_release, c);
	kernel_nfqueue_close(c->queue);
	loop_hook_remove(c->loop, flush, c);
	loop_timer_free(c->timer);
	kernel_getter_free(c->getter);
	holdset_free(&c->held);
	free(c);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void confirm_report(struct confirm *c, struct report *rep)
{
	struct kernel_nfqueue_stats qs;
	uint32_t sorted[SAMPLES];
	uint64_t p50 = 0, p99 = 0;

	kernel_nfqueue_get_stats(c->queue, &qs);
	if (c->nsamples) {
		memcpy(sorted, c->samples, c->nsamples * sizeof(sorted[0]));
		qsort(sorted, c->nsamples, sizeof(sorted[0]), cmp_u32);
		p50 = sorted[(c->nsamples - 1) / 2];
		p99 = sorted[(uint64_t)(c->nsamples - 1) * 99 / 100];
	}
	report_begin(rep, "confirm");
	report_gauge(rep, "queue", c->num, "The NFQUEUE read (ConfirmQueue).");
	report_flag(rep, "kernel_conntrack", qs.kernel_ct,
		    "1 when the kernel sends each packet's conntrack; 0: read back by the packet's tuple.");
	report_gauge(rep, "held", c->held.n, "Packets held now, waiting for the peers' acknowledgement.");
	report_gauge(rep, "held_peak", c->c.held_peak, "Most packets held at once so far.");
	report_counter(rep, "packets", c->c.packets, "Packets received from the queue.");
	report_counter(rep, "confirmed", c->c.confirmed,
		       "Packets accepted once every peer had their connection's state.");
	report_counter(rep, "confirmed_at_once", c->c.confirmed_at_once,
		       "Of those, packets whose state every peer had already.");
	report_counter(rep, "timed_out", c->c.timed_out,
		       "Packets accepted unconfirmed after ConfirmTimeout (or at our exit).");
	report_counter(rep, "accepted_no_peer", c->c.no_peer,
		       "Packets accepted unconfirmed at once: no live peer to wait for.");
	report_counter(rep, "accepted_over_limit", c->c.over_limit,
		       "Packets accepted unconfirmed at once: ConfirmHeldMax packets were held.");
	report_counter(rep, "accepted_unknown", c->c.unknown,
		       "Packets accepted unconfirmed: no conntrack found, or the Filter does not replicate it.");
	report_counter(rep, "accepted_gone", c->c.gone,
		       "Packets accepted unconfirmed: their state left the internal cache while held.");
	report_counter(rep, "queue_overruns", qs.overruns,
		       "Times the kernel could not tell us of queued packets (socket buffer full).");
	report_gauge(rep, "hold_samples", c->nsamples, "Confirmed packets the hold times below are of (latest).");
	report_gauge(rep, "hold_p50_us", p50, "Median time from a packet's arrival to its confirmation, us.");
	report_gauge(rep, "hold_p99_us", p99, "99th percentile of that time, us.");
	report_gauge(rep, "hold_max_us", c->hold_max_us, "Longest time to a confirmation so far, us.");
	report_end(rep);
}
