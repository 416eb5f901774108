/*
 * events.c - the conntrack event socket on the loop.
 *
 * ctnetlink sends each event in its own skb, and a netlink recvmsg()
 * returns one skb, so "many messages per system call" means recvmmsg()
 * over a vector of slots.  EventIterationLimit bounds the recvmmsg()
 * calls per wake-up; the socket is level-triggered, so what is left is
 * read on the next iteration after the loop has served everything else.
 *
 * An overrun (ENOBUFS) is reported to the owner only after the socket has
 * been read empty.  The kernel marks an overrun socket congested and drops
 * every further event for it, without a second ENOBUFS, until its queue
 * is empty; a resynchronising dump started before that point would miss
 * the states created between its walk and the end of the congestion.
 */
#include "kernel/kernel.h"
#include "nl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/filter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#include "loop/log.h"
#include "loop/loop.h"
#include "tap.h"

/* 64 slots of 4 KiB: 256 KiB per call; a conntrack event is 200-700 bytes. */
#define EV_SLOTS 64
#define EV_SLOT_SIZE 4096
#define EV_OWN_MAX 8
#define EV_DEFAULT_ITERATIONS 100
#define EV_FEW (EV_SLOTS / 4)          /* "only a few" for coalescing */
/*
 * Coalescing trades latency (up to coalesce_us per event) for fewer
 * wake-ups; it pays only under load.  The delay has its own timerfd: the
 * loop's timers count whole milliseconds, which would turn any delay
 * into 0-2 ms.  The rate is measured over windows of
 * EV_RATE_WINDOW_MS, and the next window coalesces only if the last one saw
 * at least EV_BUSY_PER_S events a second.  At 10k events/s a wake-up per
 * event costs under 3 % of a core, and each event goes out at once.
 */
#define EV_RATE_WINDOW_MS 10u
#define EV_BUSY_PER_S 50000u

struct kernel_events {
	struct loop *loop;
	struct mnl_socket *nl;
	int fd;
	struct kernel_events_cb cb;
	void *arg;
	struct kernel_events_opts o;
	uint32_t own[EV_OWN_MAX];
	unsigned nown;
	bool watching;
	bool dispatching;
	bool closing;
	bool growth_warned;
	bool coalescing;                /* unwatched until coalesce_timer or delay_fd fires */
	bool overrun_pending;           /* ENOBUFS seen, not yet reported: still congested */
	bool busy;                      /* the last rate window was busy: coalesce */
	uint64_t window_start;          /* ms, loop time */
	uint64_t window_events;
	struct loop_timer *coalesce_timer;      /* "at once": after the loop served the rest */
	int delay_fd;                           /* timerfd: coalesce_us */
	struct kernel_events_stats st;
	/*
	 * EventSource bpf: the tap's ring replaces the socket as the source
	 * of conntrack events (the socket keeps the expectations).  Its reads
	 * coalesce like the socket's, on a timerfd of their own: while
	 * records keep coming the ring is polled every coalesce_us and never
	 * wakes us, so the forwarding CPUs pay no wake-up per event.
	 */
	struct kernel_tap *tap;
	int tap_fd;
	int tap_delay_fd;
	bool tap_watching;
	bool tap_paused;                        /* kernel_events_pause(): neither watched nor polled */
	uint64_t tap_lost_seen;
	struct mmsghdr msgs[EV_SLOTS];
	struct iovec iov[EV_SLOTS];
	struct sockaddr_nl from[EV_SLOTS];
	uint8_t *buf;
	struct flow_full ff;
	/*
	 * The conntrack events of the current read, parsed ahead when the
	 * owner takes prefetch hints (parse_ahead()); each is found again by
	 * its message's address, in order.  Empty between reads: the slots'
	 * buffers are reused.
	 */
	struct ev_ahead {
		const struct nlmsghdr *nlh;
		enum kernel_reason why;
		enum kernel_event kind;
		struct flow_full ff;
	} *ahead;
	unsigned ahead_n, ahead_pos;
};

static void events_free(struct kernel_events *ev)
{
	if (ev->tap_watching)
		loop_unwatch(ev->loop, ev->tap_fd);
	if (ev->tap_delay_fd >= 0) {
		loop_unwatch(ev->loop, ev->tap_delay_fd);
		close(ev->tap_delay_fd);
	}
	kernel_tap_close(ev->tap);
	if (ev->watching)
		loop_unwatch(ev->loop, ev->fd);
	loop_timer_free(ev->coalesce_timer);
	if (ev->delay_fd >= 0) {
		loop_unwatch(ev->loop, ev->delay_fd);
		close(ev->delay_fd);
	}
	mnl_socket_close(ev->nl);
	free(ev->ahead);
	free(ev->buf);
	free(ev);
}

static bool is_own(const struct kernel_events *ev, uint32_t pid)
{
	if (pid == 0)
		return false;
	for (unsigned i = 0; i < ev->nown; i++)
		if (ev->own[i] == pid)
			return true;
	return false;
}

/*
 * Behind: a read found a full vector waiting.  If the queue holds half the
 * buffer or more and NetlinkBufferSizeMaxGrowth allows, double the buffer
 * now, before an overrun loses events and costs a resynchronisation
 * (1.4.7 grows only after one).
 */
static void grow_early(struct kernel_events *ev)
{
	uint32_t cur = ev->st.rcvbuf, queued;

	if (ev->o.rcvbuf_max <= cur || (uint64_t)cur * 2 > ev->o.rcvbuf_max)
		return;
	if (!nl_get_rmem(ev->fd, &queued) || (uint64_t)queued * 2 < cur)
		return;
	ev->st.rcvbuf = nl_set_rcvbuf(ev->fd, cur * 2);
	if (ev->st.rcvbuf <= cur)
		return;
	ev->st.grown_early++;
	log_notice("netlink event socket half full (%u of %u bytes queued): receive buffer grown "
		   "to %u bytes before it overruns", queued, cur, ev->st.rcvbuf);
}

/* ENOBUFS: grow the buffer now; the owner hears of it once the queue is empty. */
static void on_overrun(struct kernel_events *ev)
{
	uint32_t cur = ev->st.rcvbuf;

	ev->st.overruns++;
	ev->overrun_pending = true;
	if (ev->o.rcvbuf_max > cur && (uint64_t)cur * 2 <= ev->o.rcvbuf_max) {
		ev->st.rcvbuf = nl_set_rcvbuf(ev->fd, cur * 2);
		log_notice("netlink event socket overrun: receive buffer grown from %u to %u bytes",
			   cur, ev->st.rcvbuf);
	} else if (!ev->growth_warned) {
		ev->growth_warned = true;
		log_warning("netlink event socket overrun: receive buffer at its maximum (%u bytes); "
			    "consider a larger NetlinkBufferSizeMaxGrowth", cur);
	}
}

static const struct flow_full *parsed(struct kernel_events *ev, const struct nlmsghdr *nlh,
				      enum kernel_reason *why, enum kernel_event *kind);

static void handle_buffer(struct kernel_events *ev, const uint8_t *buf, int len)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;

	for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
		unsigned subsys = nlh->nlmsg_type >> 8;
		bool own = is_own(ev, nlh->nlmsg_pid);
		const struct flow_full *ff;
		enum kernel_event kind;
		enum kernel_reason why;

		if (nlh->nlmsg_type < NLMSG_MIN_TYPE)
			continue;       /* NOOP, ERROR, DONE: nothing for an event socket */
		ev->st.messages++;
		if (subsys == NFNL_SUBSYS_CTNETLINK_EXP) {
			ev->st.expects++;
			if (ev->cb.on_expect)
				ev->cb.on_expect(ev->arg, nlh, nlh->nlmsg_len, own);
			continue;
		}
		ff = parsed(ev, nlh, &why, &kind);
		if (why != KERNEL_OK) {
			ev->st.malformed++;
			log_debug("conntrack event dropped: %s (type 0x%x, %u bytes)",
				  kernel_reason_name(why), nlh->nlmsg_type, nlh->nlmsg_len);
			if (ev->cb.on_malformed)
				ev->cb.on_malformed(ev->arg, why);
			continue;
		}
		ev->st.flows++;
		if (own)
			ev->st.own++;
		ev->cb.on_flow(ev->arg, kind, ff,
			       (own ? KERNEL_ORIGIN_OWN : 0) | (nlh->nlmsg_pid ? KERNEL_ORIGIN_REQUEST : 0));
		if (ev->closing)
			return;
	}
}

static void count_rate(struct kernel_events *ev, unsigned got)
{
	uint64_t now = loop_now_ms(ev->loop), span = now - ev->window_start;

	ev->window_events += got;
	if (span < EV_RATE_WINDOW_MS)
		return;
	ev->busy = ev->window_events * 1000u >= (uint64_t)EV_BUSY_PER_S * span;
	ev->window_start = now;
	ev->window_events = 0;
}

/* Is this a conntrack (not expectation) event, the kind handle_buffer() parses? */
static bool is_ct_event(const struct nlmsghdr *nlh)
{
	return nlh->nlmsg_type >= NLMSG_MIN_TYPE && (nlh->nlmsg_type >> 8) != NFNL_SUBSYS_CTNETLINK_EXP;
}

/*
 * Parse the conntrack events of the first `n` slots ahead, up to EV_SLOTS
 * of them, and hint the owner of each.  Parsing is pure: doing it before
 * the earlier events are delivered changes nothing.
 */
static void parse_ahead(struct kernel_events *ev, int n)
{
	ev->ahead_n = ev->ahead_pos = 0;
	for (int i = 0; i < n && ev->ahead_n < EV_SLOTS; i++) {
		struct msghdr *mh = &ev->msgs[i].msg_hdr;
		const struct nlmsghdr *nlh = ev->iov[i].iov_base;
		int len = (int)ev->msgs[i].msg_len;

		if (mh->msg_namelen != sizeof(struct sockaddr_nl) || ev->from[i].nl_pid != 0 ||
		    (mh->msg_flags & MSG_TRUNC))
			continue;
		for (; mnl_nlmsg_ok(nlh, len) && ev->ahead_n < EV_SLOTS; nlh = mnl_nlmsg_next(nlh, &len)) {
			struct ev_ahead *a;

			if (!is_ct_event(nlh))
				continue;
			a = &ev->ahead[ev->ahead_n++];
			a->nlh = nlh;
			a->why = kernel_ct_parse(nlh, nlh->nlmsg_len, &a->ff, &a->kind);
			if (a->why == KERNEL_OK)
				ev->cb.prefetch(ev->arg, &a->ff);
		}
	}
}

/* The state of conntrack event `nlh`: parsed ahead, or now. */
static const struct flow_full *parsed(struct kernel_events *ev, const struct nlmsghdr *nlh,
				      enum kernel_reason *why, enum kernel_event *kind)
{
	while (ev->ahead_pos < ev->ahead_n) {
		struct ev_ahead *a = &ev->ahead[ev->ahead_pos++];

		if (a->nlh == nlh) {
			*why = a->why;
			*kind = a->kind;
			return &a->ff;
		}
	}
	*why = kernel_ct_parse(nlh, nlh->nlmsg_len, &ev->ff, kind);
	return &ev->ff;
}

static void on_readable(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct kernel_events *ev = arg;
	unsigned limit = ev->o.iteration_limit ? ev->o.iteration_limit : EV_DEFAULT_ITERATIONS;
	unsigned got = 0;
	bool drained = false;

	(void)loop;
	(void)events;
	ev->dispatching = true;
	for (unsigned it = 0; it < limit && !ev->closing && ev->watching; it++) {
		int n;

		for (unsigned i = 0; i < EV_SLOTS; i++) {
			ev->msgs[i].msg_hdr.msg_namelen = sizeof(ev->from[i]);
			ev->msgs[i].msg_hdr.msg_flags = 0;
		}
		n = recvmmsg(fd, ev->msgs, EV_SLOTS, MSG_DONTWAIT, NULL);
		ev->st.recv_calls++;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				on_overrun(ev);
				continue;
			}
			if (errno == EAGAIN)
				drained = true;
			else
				log_error("netlink event socket: %s", strerror(errno));
			break;
		}
		if (ev->ahead && n > 1)
			parse_ahead(ev, n);
		for (int i = 0; i < n && !ev->closing; i++) {
			struct msghdr *mh = &ev->msgs[i].msg_hdr;

			/* Only the kernel speaks on this socket. */
			if (mh->msg_namelen != sizeof(struct sockaddr_nl) || ev->from[i].nl_pid != 0)
				continue;
			if (mh->msg_flags & MSG_TRUNC) {
				ev->st.truncated++;
				log_warning("netlink event larger than %d bytes dropped", EV_SLOT_SIZE);
				continue;
			}
			handle_buffer(ev, ev->iov[i].iov_base, (int)ev->msgs[i].msg_len);
		}
		ev->ahead_n = ev->ahead_pos = 0;
		got += (unsigned)n;
		if (n < EV_SLOTS) {
			drained = true;
			break;
		}
		grow_early(ev);
	}
	if (ev->overrun_pending && !ev->closing) {
		if (drained) {
			/* The queue is empty, the congestion is over: resynchronise now. */
			ev->overrun_pending = false;
			if (ev->cb.on_overrun)
				ev->cb.on_overrun(ev->arg, ev->st.rcvbuf);
		} else if (ev->watching) {
			/*
			 * Stopped at the iteration limit.  Come back after the loop
			 * has served the rest, even if no new event wakes the socket.
			 */
			loop_unwatch(ev->loop, ev->fd);
			ev->watching = false;
			ev->coalescing = true;
			loop_timer_arm(ev->coalesce_timer, 0);
		}
	}
	ev->dispatching = false;
	if (ev->closing) {
		events_free(ev);
		return;
	}
	if (ev->coalescing)
		return;
	count_rate(ev, got);
	if (ev->o.coalesce_us && ev->busy && got < EV_FEW && ev->watching && ev->delay_fd >= 0) {
		struct itimerspec its = { .it_value = { .tv_sec = ev->o.coalesce_us / 1000000u,
							.tv_nsec = (long)(ev->o.coalesce_us % 1000000u) * 1000 } };

		if (timerfd_settime(ev->delay_fd, 0, &its, NULL) < 0)
			return;         /* no delay then: read as events come */
		loop_unwatch(ev->loop, ev->fd);
		ev->watching = false;
		ev->coalescing = true;
	}
}

static void disarm_delay(struct kernel_events *ev)
{
	struct itimerspec off = { 0 };

	if (ev->delay_fd >= 0)
		timerfd_settime(ev->delay_fd, 0, &off, NULL);
}

static void end_coalescing(struct loop *loop, struct kernel_events *ev)
{
	ev->coalescing = false;
	if (loop_watch(loop, ev->fd, LOOP_READ, on_readable, ev) == 0)
		ev->watching = true;
	else
		log_error("netlink event socket: cannot watch it again");
	if (ev->overrun_pending && ev->watching)
		on_readable(loop, ev->fd, LOOP_READ, ev);
}

static void on_coalesce_timer(struct loop *loop, struct loop_timer *t, void *arg)
{
	(void)t;
	end_coalescing(loop, arg);
}

static void on_delay(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct kernel_events *ev = arg;
	uint64_t expirations;

	(void)events;
	if (read(fd, &expirations, sizeof(expirations)) != (ssize_t)sizeof(expirations) || !ev->coalescing)
		return;
	end_coalescing(loop, ev);
}

/* ---- EventSource bpf ------------------------------------------------------------ */

static void on_tap_record(void *arg, const struct tap_hdr *h, const void *body)
{
	struct kernel_events *ev = arg;
	const struct tap_ct *r = (const struct tap_ct *)h;       /* unless TAP_REC_NETLINK */
	enum kernel_event kind;
	enum kernel_reason why;

	if (ev->closing)
		return;
	ev->st.tap_records++;
	if (h->kind == TAP_REC_NETLINK) {
		/* a DESTROY, in its place among the changes */
		handle_buffer(ev, body, h->len);
		return;
	}
	ev->st.messages++;
	why = kernel_ct_from_tap(r, sizeof(*h) + h->len, &ev->ff, &kind);
	if (why != KERNEL_OK) {
		ev->st.malformed++;
		log_debug("tap record dropped: %s", kernel_reason_name(why));
		if (ev->cb.on_malformed)
			ev->cb.on_malformed(ev->arg, why);
		return;
	}
	ev->st.flows++;
	if (r->flags & TAP_CT_PARTIAL)
		ev->st.tap_partial++;
	ev->cb.on_flow(ev->arg, kind, &ev->ff, (r->flags & TAP_CT_PARTIAL) ? KERNEL_ORIGIN_PARTIAL : 0);
}

static void on_tap_readable(struct loop *loop, int fd, unsigned events, void *arg);

/* Read the ring empty; a loss since the last read asks the owner to resynchronise. */
static int tap_drain(struct kernel_events *ev)
{
	uint64_t lost;
	int n;

	ev->dispatching = true;
	n = kernel_tap_consume(ev->tap, on_tap_record, ev);
	ev->dispatching = false;
	if (ev->closing)
		return -1;
	lost = kernel_tap_lost(ev->tap);
	if (lost != ev->tap_lost_seen) {
		ev->st.tap_lost += lost - ev->tap_lost_seen;
		ev->st.overruns++;
		/* the owner's resync warns, once per window: a flood must not flood the log */
		log_debug("BPF event tap: %llu records lost (ring full)",
			  (unsigned long long)(lost - ev->tap_lost_seen));
		ev->tap_lost_seen = lost;
		if (ev->cb.on_overrun)
			ev->cb.on_overrun(ev->arg, ev->st.rcvbuf);
	}
	return n;
}

/* Records came: poll every coalesce_us while they keep coming, unwatched. */
static void tap_poll_later(struct kernel_events *ev)
{
	struct itimerspec its = { .it_value = { .tv_sec = ev->o.coalesce_us / 1000000u,
						.tv_nsec = (long)(ev->o.coalesce_us % 1000000u) * 1000 } };

	if (ev->tap_paused || ev->tap_delay_fd < 0 || timerfd_settime(ev->tap_delay_fd, 0, &its, NULL) < 0)
		return;         /* no delay then: read as records come */
	kernel_tap_set_polling(ev->tap, true);
	if (ev->tap_watching) {
		loop_unwatch(ev->loop, ev->tap_fd);
		ev->tap_watching = false;
	}
}

/*
 * Back to waiting: records wake us again.  One written without a wake-up
 * just before is still in the ring, so the ring turns readable at once.
 */
static void tap_rewatch(struct kernel_events *ev)
{
	if (ev->tap_paused)
		return;
	kernel_tap_set_polling(ev->tap, false);
	if (!ev->tap_watching && loop_watch(ev->loop, ev->tap_fd, LOOP_READ, on_tap_readable, ev) == 0)
		ev->tap_watching = true;
}

/*
 * Read the ring; go on polling while it had records.  `idle_rewatch`: an
 * empty poll means the burst is over, wait for the ring again.
 */
static void tap_read(struct kernel_events *ev, bool idle_rewatch)
{
	int n = tap_drain(ev);

	if (ev->closing) {
		events_free(ev);
		return;
	}
	if (n > 0)
		tap_poll_later(ev);
	else if (idle_rewatch)
		tap_rewatch(ev);
}

static void on_tap_readable(struct loop *loop, int fd, unsigned events, void *arg)
{
	(void)loop;
	(void)fd;
	(void)events;
	tap_read(arg, false);
}

static void on_tap_delay(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct kernel_events *ev = arg;
	uint64_t expirations;

	(void)loop;
	(void)events;
	if (read(fd, &expirations, sizeof(expirations)) != (ssize_t)sizeof(expirations) || ev->tap_paused)
		return;
	tap_read(ev, true);
}

/* Swap ctnetlink's NEW and UPDATE groups for the tap; false (and why, logged) if it cannot be had. */
static bool tap_start(struct kernel_events *ev, const struct kernel_events_opts *o)
{
	struct kernel_tap_opts to = { .ring_bytes = o->rcvbuf ? o->rcvbuf : 4u << 20 };
	char why[256] = "";
	int groups[2] = { NFNLGRP_CONNTRACK_NEW, NFNLGRP_CONNTRACK_UPDATE };

	ev->tap = kernel_tap_open(&to, ev->fd, why, sizeof(why));
	if (!ev->tap) {
		ev->st.tap_refused = true;
		log_warning("EventSource bpf: %s; following ctnetlink's events instead", why);
		return false;
	}
	ev->tap_fd = kernel_tap_fd(ev->tap);
	ev->tap_delay_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ev->tap_delay_fd >= 0 && loop_watch(ev->loop, ev->tap_delay_fd, LOOP_READ, on_tap_delay, ev) < 0) {
		close(ev->tap_delay_fd);
		ev->tap_delay_fd = -1;
	}
	kernel_tap_set_own(ev->tap, ev->own, ev->nown);
	if (loop_watch(ev->loop, ev->tap_fd, LOOP_READ, on_tap_readable, ev) < 0) {
		log_warning("EventSource bpf: cannot watch the ring; following ctnetlink's events instead");
		kernel_tap_close(ev->tap);
		ev->tap = NULL;
		ev->st.tap_refused = true;
		return false;
	}
	ev->tap_watching = true;
	for (unsigned i = 0; i < 2; i++)
		setsockopt(ev->fd, SOL_NETLINK, NETLINK_DROP_MEMBERSHIP, &groups[i], sizeof(groups[i]));
	ev->st.tap = true;
	log_notice("EventSource bpf: new entries and their changes come from a netfilter BPF hook, "
		   "destroys through its ring");
	return true;
}

struct kernel_events *kernel_events_open(struct loop *loop, const struct kernel_events_opts *o,
					 const struct kernel_events_cb *cb, void *arg, int *err)
{
	struct kernel_events *ev;
	unsigned groups = (1u << (NFNLGRP_CONNTRACK_NEW - 1)) | (1u << (NFNLGRP_CONNTRACK_UPDATE - 1)) |
			  (1u << (NFNLGRP_CONNTRACK_DESTROY - 1));
	int one = 1, e;

	if (!cb || !cb->on_flow) {
		*err = -EINVAL;
		return NULL;
	}
	if (o->expectations)
		groups |= (1u << (NFNLGRP_CONNTRACK_EXP_NEW - 1)) | (1u << (NFNLGRP_CONNTRACK_EXP_UPDATE - 1)) |
			  (1u << (NFNLGRP_CONNTRACK_EXP_DESTROY - 1));
	else if (o->expectation_news)
		groups |= 1u << (NFNLGRP_CONNTRACK_EXP_NEW - 1);
	ev = calloc(1, sizeof(*ev));
	if (!ev || !(ev->buf = malloc((size_t)EV_SLOTS * EV_SLOT_SIZE))) {
		free(ev);
		*err = -ENOMEM;
		return NULL;
	}
	e = -ENOMEM;
	ev->delay_fd = -1;
	ev->tap_delay_fd = -1;
	ev->tap_fd = -1;
	ev->coalesce_timer = loop_timer_new(loop, on_coalesce_timer, ev);
	ev->nl = ev->coalesce_timer ? nl_open(groups, &e) : NULL;
	if (!ev->nl) {
		loop_timer_free(ev->coalesce_timer);
		free(ev->buf);
		free(ev);
		*err = e;
		return NULL;
	}
	ev->loop = loop;
	ev->fd = mnl_socket_get_fd(ev->nl);
	ev->cb = *cb;
	ev->arg = arg;
	/* Without it the events are parsed one by one, as they are delivered. */
	if (cb->prefetch && !(ev->ahead = calloc(EV_SLOTS, sizeof(*ev->ahead)))) {
		events_free(ev);
		*err = -ENOMEM;
		return NULL;
	}
	ev->o = *o;
	if (o->coalesce_us) {
		ev->delay_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (ev->delay_fd < 0 || (e = loop_watch(loop, ev->delay_fd, LOOP_READ, on_delay, ev)) < 0) {
			*err = ev->delay_fd < 0 ? -errno : e;
			if (ev->delay_fd >= 0)
				close(ev->delay_fd);
			ev->delay_fd = -1;
			events_free(ev);
			return NULL;
		}
	}
	for (unsigned i = 0; i < EV_SLOTS; i++) {
		ev->iov[i] = (struct iovec){ ev->buf + (size_t)i * EV_SLOT_SIZE, EV_SLOT_SIZE };
		ev->msgs[i].msg_hdr = (struct msghdr){
			.msg_name = &ev->from[i], .msg_namelen = sizeof(ev->from[i]),
			.msg_iov = &ev->iov[i], .msg_iovlen = 1,
		};
	}
	if (o->rcvbuf)
		ev->st.rcvbuf = nl_set_rcvbuf(ev->fd, o->rcvbuf);
	else
		ev->st.rcvbuf = nl_get_rcvbuf(ev->fd);
	if (o->reliable) {
		if (setsockopt(ev->fd, SOL_NETLINK, NETLINK_BROADCAST_ERROR, &one, sizeof(one)) < 0 ||
		    setsockopt(ev->fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one)) < 0) {
			*err = -errno;
			events_free(ev);
			return NULL;
		}
	}
	if ((e = loop_watch(loop, ev->fd, LOOP_READ, on_readable, ev)) < 0) {
		*err = e;
		events_free(ev);
		return NULL;
	}
	ev->watching = true;
	if (o->bpf_tap)
		tap_start(ev, o);
	*err = 0;
	return ev;
}

int kernel_events_tune(struct kernel_events *ev, const struct kernel_events_opts *o)
{
	int flag = o->reliable ? 1 : 0;

	if (o->rcvbuf && o->rcvbuf != ev->o.rcvbuf)
		ev->st.rcvbuf = nl_set_rcvbuf(ev->fd, o->rcvbuf);
	ev->o.rcvbuf = o->rcvbuf;
	ev->o.rcvbuf_max = o->rcvbuf_max;
	ev->o.iteration_limit = o->iteration_limit;
	if (o->reliable != ev->o.reliable) {
		if (setsockopt(ev->fd, SOL_NETLINK, NETLINK_BROADCAST_ERROR, &flag, sizeof(flag)) < 0 ||
		    setsockopt(ev->fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &flag, sizeof(flag)) < 0)
			return -errno;
		ev->o.reliable = o->reliable;
	}
	return 0;
}

void kernel_events_close(struct kernel_events *ev)
{
	if (!ev)
		return;
	if (ev->dispatching) {
		ev->closing = true;
		if (ev->watching) {
			loop_unwatch(ev->loop, ev->fd);
			ev->watching = false;
		}
		return;
	}
	events_free(ev);
}

int kernel_events_add_own(struct kernel_events *ev, uint32_t portid)
{
	if (is_own(ev, portid))
		return 0;
	if (ev->nown >= EV_OWN_MAX)
		return -ENOSPC;
	ev->own[ev->nown++] = portid;
	if (ev->tap)
		kernel_tap_set_own(ev->tap, ev->own, ev->nown);
	return 0;
}

int kernel_events_set_filter(struct kernel_events *ev, bool drop_own, const struct sock_filter *prog,
			     unsigned len)
{
	struct sock_filter code[EV_OWN_MAX + 4 + BPF_MAXINSNS];
	struct sock_fprog fprog;
	unsigned n = 0, nown = drop_own ? ev->nown : 0;

	/* The tap's filter is the socket's: it drops our own writes, and has no room for a Filter. */
	if (ev->tap)
		return prog ? -EOPNOTSUPP : 0;

	if (!nown && !prog) {
		int dummy = 0;  /* the kernel wants an int-sized value even here */

		if (setsockopt(ev->fd, SOL_SOCKET, SO_DETACH_FILTER, &dummy, sizeof(dummy)) < 0 &&
		    errno != ENOENT)
			return -errno;
		return 0;
	}
	if (prog && (len == 0 || len > BPF_MAXINSNS - nown - 3))
		return -EINVAL;
	if (nown) {
		/*
		 * nlmsg_pid is at offset 12, in host order; BPF loads big-endian,
		 * so compare with ntohl(portid).  Each match jumps to "ret 0".
		 */
		code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 12);
		for (unsigned i = 0; i < nown; i++)
			code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ntohl(ev->own[i]),
								 (uint8_t)(nown - i), 0);
		code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0);
		code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
	}
	if (prog) {
		memcpy(&code[n], prog, len * sizeof(*prog));
		n += len;
	} else {
		code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffffffffu);
	}
	fprog = (struct sock_fprog){ .len = (unsigned short)n, .filter = code };
	if (setsockopt(ev->fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof(fprog)) < 0)
		return -errno;
	return 0;
}

void kernel_events_pause(struct kernel_events *ev)
{
	if (ev->tap) {
		struct itimerspec off = { 0 };

		/* paused: the records wait in the ring, and need not wake us */
		ev->tap_paused = true;
		kernel_tap_set_polling(ev->tap, true);
		if (ev->tap_delay_fd >= 0)
			timerfd_settime(ev->tap_delay_fd, 0, &off, NULL);
		if (ev->tap_watching) {
			loop_unwatch(ev->loop, ev->tap_fd);
			ev->tap_watching = false;
		}
	}
	loop_timer_disarm(ev->coalesce_timer);
	disarm_delay(ev);
	ev->coalescing = false;
	if (ev->watching) {
		loop_unwatch(ev->loop, ev->fd);
		ev->watching = false;
	}
}

int kernel_events_resume(struct kernel_events *ev)
{
	int err;

	loop_timer_disarm(ev->coalesce_timer);
	disarm_delay(ev);
	ev->coalescing = false;
	if (ev->tap && !ev->closing) {
		ev->tap_paused = false;
		tap_rewatch(ev);
	}
	if (ev->watching || ev->closing)
		return 0;
	if ((err = loop_watch(ev->loop, ev->fd, LOOP_READ, on_readable, ev)) < 0)
		return err;
	ev->watching = true;
	if (ev->overrun_pending) {
		/* Finish the drain that reports it, even if the socket stays quiet. */
		loop_unwatch(ev->loop, ev->fd);
		ev->watching = false;
		ev->coalescing = true;
		loop_timer_arm(ev->coalesce_timer, 0);
	}
	return 0;
}

void kernel_events_get_stats(const struct kernel_events *ev, struct kernel_events_stats *st)
{
	*st = ev->st;
}
