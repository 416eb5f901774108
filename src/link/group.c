/*
 * group.c - the link group: the links of one Sync block, the channel
 * buffer they share, the choice of the active link, and the API of link.h.
 *
 * The channel buffer and its queue belong to the group, not to a link:
 * datagrams leave on whichever link is active when the socket takes them,
 * so a failover moves what waits to the new link at no cost.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "loop/log.h"
#include "loop/loop.h"

/* ---- sending ------------------------------------------------------------------- */

/* Errors after which the same datagram may well go out a moment later. */
static bool transient(int err)
{
	switch (err) {
	case ENOBUFS:           /* qdisc or device queue full */
	case ENOMEM:
	case ENETDOWN:          /* the device went down: a failover is probably coming */
	case ENETUNREACH:
	case EHOSTUNREACH:
		return true;
	default:
		return false;
	}
}

/*
 * Send what waits, on the active link, until the queue is empty or the
 * link cannot take more.  Returns 0 (empty) or -EAGAIN (something waits
 * and the loop will call link_group_kick() when it can go).
 */
static int transmit(struct link_group *g)
{
	struct link_channel *ch = &g->ch;

	while (link_channel_queued(ch) > 0) {
		struct link *l = &g->links[g->active];

		if (l->cfg.kind == CONFIG_LINK_TCP) {
			/* EAGAIN: EPOLLOUT is watched; ENOTCONN / lost: the connection kicks. */
			if (link_tcp_send(l, ch, LINK_TX_BURST) <= 0)
				goto wait;
			continue;
		}
		int n = link_dgram_send(l, ch, LINK_TX_BURST);

		if (n > 0) {
			link_channel_pop(ch, (unsigned)n);
			continue;
		}
		if (n == -EAGAIN || n == -EWOULDBLOCK) {
			l->stats.blocked++;
			link_dgram_watch_out(l, true);
			goto wait;
		}
		l->stats.errors_sent++;
		if (transient(-n)) {
			loop_timer_arm(g->retry, LINK_RETRY_MS);
			goto wait;
		}
		/*
		 * EMSGSIZE, EPERM (a firewall), EINVAL...: this datagram will
		 * never go; the next ones may.  Counted with the drops.
		 */
		size_t len = 0;

		link_channel_peek(ch, 0, &len);
		log_debug("link %s: datagram of %zu bytes dropped: %s", l->cfg.ifname, len,
			  strerror(-n));
		ch->dropped++;
		ch->dropped_bytes += len;
		link_channel_pop(ch, 1);
	}
	g->waiting = false;
	return 0;
wait:
	g->waiting = true;
	/* Whatever should wake us (EPOLLOUT, a connection), look again in a while anyway. */
	if (!loop_timer_armed(g->retry))
		loop_timer_arm(g->retry, LINK_RECONNECT_MS);
	return -EAGAIN;
}

void link_group_kick(struct link_group *g)
{
	g->waiting = false;
	transmit(g);
}

static void on_retry(struct loop *loop, struct loop_timer *t, void *arg)
{
	link_group_kick(arg);
}

int link_group_append(struct link_group *g, const void *msg, size_t len)
{
	int closed;

	if (len > LINK_MSG_MAX)
		return -EMSGSIZE;
	closed = link_channel_append(&g->ch, msg, len, g->links[g->active].payload_max - g->seal_overhead);
	if (closed < 0)
		return closed;
	/*
	 * Full datagrams go out in bursts while the producer runs (one
	 * sendmmsg for up to LINK_TX_BURST of them), before the queue is
	 * half full; the rest at the flush.
	 */
	if (closed > 0 && !g->waiting && link_channel_queued(&g->ch) >= g->burst)
		transmit(g);
	return 0;
}

int link_group_flush(struct link_group *g)
{
	link_channel_close(&g->ch);
	/* Waiting for EPOLLOUT, a connection or the retry timer: trying now would fail again. */
	if (g->waiting && link_channel_queued(&g->ch) > 0)
		return -EAGAIN;
	return transmit(g);
}

int link_group_send_datagram(struct link_group *g, const void *dgram, size_t len)
{
	int err = link_channel_push(&g->ch, dgram, len);

	if (err < 0)
		return err;
	if (g->waiting)
		return -EAGAIN;
	return transmit(g);
}

size_t link_group_payload_max(const struct link_group *g)
{
	return g->links[g->active].payload_max - g->seal_overhead;
}

size_t link_group_buffered(const struct link_group *g)
{
	return link_channel_open_len(&g->ch);
}

size_t link_group_backlog(const struct link_group *g)
{
	return link_channel_queued(&g->ch);
}

/* ---- the active link -------------------------------------------------------------- */

static void switch_to(struct link_group *g, unsigned idx, const char *why)
{
	struct link *old = &g->links[g->active], *now = &g->links[idx];

	if (idx == g->active)
		return;
	/*
	 * A datagram half written on the old TCP link would leave the peer
	 * with a cut message on that stream: end the stream, and send the
	 * datagram whole on the new link.
	 */
	if (old->cfg.kind == CONFIG_LINK_TCP && g->ch.head_off > 0)
		link_tcp_restart_client(old);
	g->ch.head_off = 0;
	g->active = idx;
	g->switches++;
	log_notice("link: sending on %s now, %s was active: %s", now->cfg.ifname,
		   old->cfg.ifname, why);
	if (g->on_switch)
		g->on_switch(g->arg, old, now);
	link_group_kick(g);
}

void link_group_check_failover(struct link_group *g)
{
	unsigned flags[CONFIG_MAX_LINKS];
	struct link *act = &g->links[g->active];
	char why[IF_NAMESIZE + 32];
	int pick;

	for (unsigned i = 0; i < g->nlinks; i++)
		flags[i] = g->links[i].ifflags;
	pick = link_failover_pick(flags, g->nlinks, g->active);
	if (pick < 0 || (pick == (int)g->active && !link_flags_running(act->ifflags))) {
		if (!g->none_logged)
			log_warning("link: %s is %s and no other link is up; still sending on it",
				    act->cfg.ifname, link_status_name(act->ifflags));
		g->none_logged = true;
		return;
	}
	if (g->none_logged && pick == (int)g->active)
		log_notice("link: %s is %s again", act->cfg.ifname, link_status_name(act->ifflags));
	g->none_logged = false;
	if (pick != (int)g->active) {
		snprintf(why, sizeof(why), "%s is %s", act->cfg.ifname,
			 link_status_name(act->ifflags));
		switch_to(g, (unsigned)pick, why);
	}
}

void link_group_set_active(struct link_group *g, struct link *l)
{
	if (l && l->group == g)
		switch_to(g, l->index, "requested");
}

void link_deliver(struct link *l, const void *buf, size_t len, const struct sockaddr *src)
{
	struct link_group *g = l->group;

	/*
	 * The peer sends on this link, so it failed over: follow it, as
	 * 1.4.7 does, before the callback, so that an answer goes there too.
	 */
	if (l->index != g->active && link_flags_running(l->ifflags) &&
	    g->frame_valid(g->arg, buf, len))
		switch_to(g, l->index, "the peer sends on it");
	g->on_receive(g->arg, l, buf, len, src);
}

/* ---- open and close --------------------------------------------------------------- */

static int link_setup(struct link_group *g, struct link *l, const struct config_link *c)
{
	struct config_addr any = { .family = c->family };
	const struct config_addr *local, *dest;
	int err;

	l->group = g;
	l->cfg = *c;
	l->rx_fd = l->tx_fd = l->listen_fd = l->conn_fd = l->client_fd = -1;
	err = link_dev_query(c->ifname, &l->ifindex, &l->mtu, &l->ifflags);
	if (err < 0) {
		log_error("link %s (line %u): cannot read the Interface: %s", c->ifname, c->line,
			  strerror(-err));
		return err;
	}
	l->payload_max = link_payload_limit(c->kind, c->family, l->mtu);
	if (l->payload_max <= g->seal_overhead) {
		log_error("link %s (line %u): MTU %u is too small for a datagram", c->ifname,
			  c->line, l->mtu);
		return -EINVAL;
	}
	if (c->kind == CONFIG_LINK_MCAST) {
		local = dest = &c->local;	/* the group */
	} else {
		local = c->local.family ? &c->local : &any;
		dest = &c->dest;
	}
	if (local->family != c->family || dest->family != c->family) {
		log_error("link %s (line %u): IPv4 and IPv6 addresses mixed in one link",
			  c->ifname, c->line);
		return -EINVAL;
	}
	link_sock_addr(&l->local, &l->local_len, local, c->port, l->ifindex);
	link_sock_addr(&l->dest, &l->dest_len, dest, c->port, l->ifindex);
	return 0;
}

void link_group_set_event_limit(struct link_group *g, uint32_t limit)
{
	g->event_limit = limit ? limit : CONFIG_DEFAULT_EVENT_ITER_LIMIT;
}

int link_group_open(struct link_group **out, struct loop *loop, const struct link_group_params *p)
{
	const struct config_sync *s = p ? p->sync : NULL;
	struct link_group *g;
	size_t slot = LINK_MSG_MAX;
	unsigned cap, i;
	bool tcp;
	int err;

	*out = NULL;
	if (!s || !p->on_receive || !p->frame_len || !p->frame_valid || s->nlinks == 0 ||
	    s->nlinks > CONFIG_MAX_LINKS || s->default_link >= s->nlinks ||
	    (p->seal && (p->seal_headroom > p->seal_overhead || p->seal_overhead >= LINK_MSG_MAX)))
		return -EINVAL;
	/* The largest message still goes alone, sealed. */
	if (p->seal)
		slot += p->seal_overhead;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->loop = loop;
	g->on_receive = p->on_receive;
	g->on_switch = p->on_switch;
	g->frame_len = p->frame_len;
	g->frame_valid = p->frame_valid;
	g->seal_overhead = p->seal ? p->seal_overhead : 0;
	g->arg = p->arg;
	g->event_limit = p->event_iteration_limit ? p->event_iteration_limit
						  : CONFIG_DEFAULT_EVENT_ITER_LIMIT;
	g->nl_fd = -1;
	g->nlinks = s->nlinks;
	g->active = s->default_link;
	for (i = 0; i < g->nlinks; i++) {
		g->links[i].index = i;
		g->links[i].group = g;
		g->links[i].rx_fd = g->links[i].tx_fd = -1;
		g->links[i].listen_fd = g->links[i].conn_fd = g->links[i].client_fd = -1;
	}
	tcp = s->links[0].kind == CONFIG_LINK_TCP;

	for (i = 0; i < g->nlinks; i++) {
		if (s->links[i].kind != s->links[0].kind) {
			log_error("link %s (line %u): all links of a group use one transport",
				  s->links[i].ifname, s->links[i].line);
			err = -EINVAL;
			goto fail;
		}
		err = link_setup(g, &g->links[i], &s->links[i]);
		if (err < 0)
			goto fail;
		if (g->links[i].payload_max > slot)
			slot = g->links[i].payload_max;
	}

	/*
	 * The queue: ErrorQueueLength datagrams for TCP (the longest of the
	 * links; at least 2, so that a half-written datagram never has to be
	 * dropped), a fixed length for datagram links.
	 */
	cap = LINK_DGRAM_QUEUE_LEN;
	if (tcp) {
		cap = 2;
		for (i = 0; i < g->nlinks; i++)
			if (s->links[i].error_queue_len > cap)
				cap = s->links[i].error_queue_len;
		if (cap > LINK_QUEUE_MAX) {
			log_warning("link: ErrorQueueLength %u is more than we keep; using %u",
				    cap, LINK_QUEUE_MAX);
			cap = LINK_QUEUE_MAX;
		}
	}
	err = link_channel_init(&g->ch, cap, slot);
	if (err < 0)
		goto fail;
	g->ch.seal = p->seal;
	g->ch.seal_arg = p->arg;
	g->ch.headroom = p->seal ? p->seal_headroom : 0;
	g->ch.reserve = p->seal ? p->seal_overhead : 0;
	g->burst = cap / 2 < LINK_TX_BURST ? cap / 2 : LINK_TX_BURST;
	if (g->burst == 0)
		g->burst = 1;
	g->retry = loop_timer_new(loop, on_retry, g);
	if (!g->retry) {
		err = -ENOMEM;
		goto fail;
	}
	if (!tcp) {
		g->rx_batch = g->event_limit < LINK_RX_BATCH ? g->event_limit : LINK_RX_BATCH;
		/* Virtual memory mostly: pages are touched only as deep as datagrams go. */
		g->rx_mem = malloc((size_t)g->rx_batch * LINK_RX_DGRAM_MAX);
		g->rx_msgs = calloc(g->rx_batch, sizeof(*g->rx_msgs));
		g->rx_iov = calloc(g->rx_batch, sizeof(*g->rx_iov));
		g->rx_addr = calloc(g->rx_batch, sizeof(*g->rx_addr));
		if (!g->rx_mem || !g->rx_msgs || !g->rx_iov || !g->rx_addr) {
			err = -ENOMEM;
			goto fail;
		}
	}
	err = link_monitor_open(g);
	if (err < 0)
		goto fail;
	/* Flags changed since link_setup() are caught by the watch from here on. */
	link_monitor_refresh(g);

	for (i = 0; i < g->nlinks; i++) {
		struct link *l = &g->links[i];

		err = tcp ? link_tcp_open(l) : link_dgram_open(l);
		if (err < 0)
			goto fail;
		log_notice("link %s: %s over IPv%d, MTU %u: datagrams of up to %zu bytes%s",
			   l->cfg.ifname, config_link_kind_name(l->cfg.kind),
			   l->cfg.family == AF_INET6 ? 6 : 4, l->mtu, l->payload_max,
			   i == g->active ? " (active)" : "");
	}
	link_group_check_failover(g);
	*out = g;
	return 0;

fail:
	link_group_close(g);
	return err;
}

void link_group_close(struct link_group *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < g->nlinks; i++) {
		struct link *l = &g->links[i];

		if (!l->group)
			continue;
		if (l->cfg.kind == CONFIG_LINK_TCP)
			link_tcp_close(l);
		else
			link_dgram_close(l);
	}
	link_monitor_close(g);
	loop_timer_free(g->retry);
	link_channel_free(&g->ch);
	free(g->rx_mem);
	free(g->rx_msgs);
	free(g->rx_iov);
	free(g->rx_addr);
	free(g);
}

/* ---- accessors ------------------------------------------------------------------------ */

unsigned link_group_count(const struct link_group *g)
{
	return g->nlinks;
}

struct link *link_group_link(struct link_group *g, unsigned index)
{
	return index < g->nlinks ? &g->links[index] : NULL;
}

struct link *link_group_active(struct link_group *g)
{
	return &g->links[g->active];
}

unsigned link_index(const struct link *l)
{
	return l->index;
}

const char *link_ifname(const struct link *l)
{
	return l->cfg.ifname;
}

enum config_link_kind link_kind(const struct link *l)
{
	return l->cfg.kind;
}

bool link_is_active(const struct link *l)
{
	return l->group->active == l->index;
}

bool link_is_running(const struct link *l)
{
	return link_flags_running(l->ifflags);
}

bool link_tcp_server_connected(const struct link *l)
{
	return l->cfg.kind == CONFIG_LINK_TCP && l->conn_fd >= 0;
}

bool link_tcp_client_connected(const struct link *l)
{
	return l->cfg.kind == CONFIG_LINK_TCP && l->client_state == LINK_TCP_UP;
}

void link_get_stats(const struct link *l, struct link_stats *out)
{
	*out = l->stats;
}

/* ---- statistics ------------------------------------------------------------------------- */

static void link_info_fill(const struct link_group *g, const struct link *l, struct link_info *in)
{
	memset(in, 0, sizeof(*in));
	in->index = l->index;
	snprintf(in->ifname, sizeof(in->ifname), "%s", l->cfg.ifname);
	in->kind = l->cfg.kind;
	in->status = link_status_name(l->ifflags);
	in->active = l->index == g->active;
	link_sock_addr_str((const struct sockaddr *)&l->local, in->local, sizeof(in->local));
	link_sock_addr_str((const struct sockaddr *)&l->dest, in->dest, sizeof(in->dest));
	in->mtu = l->mtu;
	in->payload_max = l->payload_max;
	in->tcp_server_connected = link_tcp_server_connected(l);
	in->tcp_client_connected = link_tcp_client_connected(l);
	in->stats = l->stats;
}

unsigned link_group_info(const struct link_group *g, struct link_info links[CONFIG_MAX_LINKS],
			 struct link_channel_info *channel)
{
	for (unsigned i = 0; i < g->nlinks; i++)
		link_info_fill(g, &g->links[i], &links[i]);
	*channel = (struct link_channel_info){
		.active = g->active,
		.payload_max = g->links[g->active].payload_max,
		.buffered_bytes = link_channel_open_len(&g->ch),
		.queued_datagrams = link_channel_queued(&g->ch),
		.queue_max = g->ch.cap,
		.dropped_datagrams = g->ch.dropped,
		.dropped_bytes = g->ch.dropped_bytes,
		.failovers = g->switches,
	};
	return g->nlinks;
}
