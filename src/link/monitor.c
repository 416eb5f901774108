/*
 * monitor.c - device state of the links from rtnetlink (RTMGRP_LINK), on
 * the loop.  Only the IFF_UP / IFF_RUNNING flags of the links' devices are
 * kept; the group decides what they mean for the active link.
 *
 * A device is known by the index it had at open.  A device deleted and
 * created again under the same name is a new device (new index, no
 * multicast membership): like 1.4.7, which also reads the MTU only once,
 * that needs a restart.  The old index then reads as DOWN.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "loop/log.h"
#include "loop/loop.h"

#define NL_BUF_SIZE     32768u

void link_monitor_refresh(struct link_group *g)
{
	for (unsigned i = 0; i < g->nlinks; i++) {
		struct link *l = &g->links[i];
		unsigned flags;

		/* A device that vanished is DOWN. */
		l->ifflags = link_dev_flags(l->cfg.ifname, &flags) == 0 ? flags : 0;
	}
}

/* Apply one RTM_NEWLINK / RTM_DELLINK; true if a link's device changed. */
static bool apply(struct link_group *g, const struct nlmsghdr *h)
{
	const struct ifinfomsg *ifi;
	bool changed = false;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return false;
	ifi = NLMSG_DATA(h);
	for (unsigned i = 0; i < g->nlinks; i++) {
		struct link *l = &g->links[i];
		unsigned flags;

		if (ifi->ifi_index <= 0 || (unsigned)ifi->ifi_index != l->ifindex)
			continue;
		flags = h->nlmsg_type == RTM_DELLINK ? 0 : ifi->ifi_flags;
		if (flags != l->ifflags) {
			log_debug("link %s: device flags %#x -> %#x", l->cfg.ifname, l->ifflags, flags);
			l->ifflags = flags;
			changed = true;
		}
	}
	return changed;
}

static void on_netlink(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct link_group *g = arg;
	bool changed = false;

	for (;;) {
		struct sockaddr_nl sa;
		struct iovec iov = { g->nl_buf, NL_BUF_SIZE };
		struct msghdr msg = { .msg_name = &sa, .msg_namelen = sizeof(sa),
				      .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
		const struct nlmsghdr *h;
		size_t left;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				/* Messages were lost: read the state itself instead. */
				log_warning("link: rtnetlink overrun; re-reading the devices' state");
				link_monitor_refresh(g);
				changed = true;
				continue;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warning("link: rtnetlink: %s", strerror(errno));
			break;
		}
		/* Only the kernel speaks here; a cut message cannot be trusted. */
		if (sa.nl_pid != 0 || (msg.msg_flags & MSG_TRUNC)) {
			if (msg.msg_flags & MSG_TRUNC) {
				link_monitor_refresh(g);
				changed = true;
			}
			continue;
		}
		left = (size_t)n;
		for (h = (const struct nlmsghdr *)g->nl_buf; NLMSG_OK(h, left);
		     h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK)
				changed |= apply(g, h);
		}
	}
	if (changed)
		link_group_check_failover(g);
}

int link_monitor_open(struct link_group *g)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK };
	int err;

	g->nl_buf = malloc(NL_BUF_SIZE);
	if (!g->nl_buf)
		return -ENOMEM;
	g->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (g->nl_fd < 0)
		goto fail_errno;
	if (bind(g->nl_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail_errno;
	err = loop_watch(g->loop, g->nl_fd, LOOP_READ, on_netlink, g);
	if (err < 0)
		goto fail;
	return 0;

fail_errno:
	err = -errno;
fail:
	log_error("link: cannot watch the devices' state (rtnetlink): %s", strerror(-err));
	link_monitor_close(g);
	return err;
}

void link_monitor_close(struct link_group *g)
{
	if (g->nl_fd >= 0) {
		loop_unwatch(g->loop, g->nl_fd);
		close(g->nl_fd);
	}
	g->nl_fd = -1;
	free(g->nl_buf);
	g->nl_buf = NULL;
}
