/*
 * dgram.c - UDP unicast and multicast links: a receive socket bound to the
 * link's port, an unbound send socket (ephemeral source port, as 1.4.7),
 * recvmmsg() on the way in and sendmmsg() on the way out.
 */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "loop/log.h"
#include "loop/loop.h"

static int set_int(int fd, int level, int opt, int v)
{
	return setsockopt(fd, level, opt, &v, sizeof(v)) < 0 ? -errno : 0;
}

/*
 * Multicast receive side.  The socket is bound to the group address, not
 * to INADDR_ANY as 1.4.7 does (1.4.9 changed to the group too): unicast
 * datagrams to the port and other groups joined on the host do not reach
 * us.  IPv4 joins on IPv4_interface when it is given, as 1.4.7, else on
 * the Interface's index; IPv6 joins on the Interface's index (1.4.7 does
 * the same and ignores IPv6_interface).
 */
static int mcast_join(struct link *l)
{
	if (l->cfg.family == AF_INET) {
		struct ip_mreqn mr = { .imr_multiaddr = l->cfg.local.u.v4 };

		if (l->cfg.mcast_ifaddr.s_addr != htonl(INADDR_ANY))
			mr.imr_address = l->cfg.mcast_ifaddr;
		else
			mr.imr_ifindex = (int)l->ifindex;
		if (setsockopt(l->rx_fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0)
			return -errno;
		/*
		 * Only the groups this socket joined, whatever else the host
		 * joined.  Hygiene: the bind to the group already filters, so
		 * a kernel without the option is no reason to fail.
		 */
		set_int(l->rx_fd, IPPROTO_IP, IP_MULTICAST_ALL, 0);
	} else {
		struct ipv6_mreq mr = { .ipv6mr_multiaddr = l->cfg.local.u.v6,
					.ipv6mr_interface = l->ifindex };

		if (setsockopt(l->rx_fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof(mr)) < 0)
			return -errno;
		set_int(l->rx_fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, 0);
	}
	return 0;
}

/* Multicast send side: out of the link's interface, never back to ourselves. */
static int mcast_sender(struct link *l)
{
	int err;

	if (l->cfg.family == AF_INET) {
		struct ip_mreqn mr = { 0 };

		if (l->cfg.mcast_ifaddr.s_addr != htonl(INADDR_ANY))
			mr.imr_address = l->cfg.mcast_ifaddr;
		else
			mr.imr_ifindex = (int)l->ifindex;
		if (setsockopt(l->tx_fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)) < 0)
			return -errno;
		err = set_int(l->tx_fd, IPPROTO_IP, IP_MULTICAST_LOOP, 0);
	} else {
		err = set_int(l->tx_fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, (int)l->ifindex);
		if (err == 0)
			err = set_int(l->tx_fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 0);
	}
	return err;
}

static void on_readable(struct loop *loop, int fd, unsigned events, void *arg);
static void on_writable(struct loop *loop, int fd, unsigned events, void *arg);

int link_dgram_open(struct link *l)
{
	bool mcast = l->cfg.kind == CONFIG_LINK_MCAST;
	int family = l->cfg.family, err;
	const char *open_step;

	l->rx_fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	l->tx_fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	open_step = "socket";
	if (l->rx_fd < 0 || l->tx_fd < 0)
		goto fail_errno;

	/* Receive side. */
	open_step = "SO_REUSEADDR";
	if ((err = set_int(l->rx_fd, SOL_SOCKET, SO_REUSEADDR, 1)) < 0)
		goto fail;
	if (family == AF_INET6) {
		open_step = "IPV6_V6ONLY";
		if ((err = set_int(l->rx_fd, IPPROTO_IPV6, IPV6_V6ONLY, 1)) < 0 ||
		    (err = set_int(l->tx_fd, IPPROTO_IPV6, IPV6_V6ONLY, 1)) < 0)
			goto fail;
	}
	open_step = "RcvSocketBuffer";
	if ((err = link_sock_buffers(l->rx_fd, l, false, true)) < 0)
		goto fail;
	open_step = "bind";
	if (bind(l->rx_fd, (struct sockaddr *)&l->local, l->local_len) < 0)
		goto fail_errno;
	if (mcast) {
		open_step = "join the group";
		if ((err = mcast_join(l)) < 0)
			goto fail;
		/* Its members are who may speak; a failure here only delays that to the first datagram. */
		link_peers_refresh(l);
	}

	/* Send side. */
	open_step = "SndSocketBuffer";
	if ((err = link_sock_buffers(l->tx_fd, l, true, false)) < 0)
		goto fail;
	/*
	 * Checksum off: UDP checksum 0, as 1.4.7 (protocol.md §5.6).  IPv4
	 * only: IPv6 requires the checksum, and the kernel ignores the
	 * option there anyway.
	 */
	open_step = "SO_NO_CHECK";
	if (!l->cfg.checksum && family == AF_INET &&
	    (err = set_int(l->tx_fd, SOL_SOCKET, SO_NO_CHECK, 1)) < 0)
		goto fail;
	if (mcast) {
		open_step = "multicast interface";
		if ((err = mcast_sender(l)) < 0)
			goto fail;
	}

	open_step = "watch";
	if ((err = loop_watch(l->group->loop, l->rx_fd, LOOP_READ, on_readable, l)) < 0)
		goto fail;
	return 0;

fail_errno:
	err = -errno;
fail:
	log_error("link %s (line %u): cannot open the %s link: %s: %s", l->cfg.ifname,
		  l->cfg.line, config_link_kind_name(l->cfg.kind), open_step, strerror(-err));
	link_dgram_close(l);
	return err;
}

void link_dgram_close(struct link *l)
{
	if (l->rx_fd >= 0) {
		loop_unwatch(l->group->loop, l->rx_fd);
		close(l->rx_fd);
	}
	if (l->tx_fd >= 0) {
		loop_unwatch(l->group->loop, l->tx_fd);
		close(l->tx_fd);
	}
	l->rx_fd = l->tx_fd = -1;
	l->tx_watch = false;
}

void link_dgram_watch_out(struct link *l, bool on)
{
	if (on == l->tx_watch || l->tx_fd < 0)
		return;
	if (on) {
		if (loop_watch(l->group->loop, l->tx_fd, LOOP_WRITE, on_writable, l) < 0)
			return;	/* the retry timer still resends */
	} else {
		loop_unwatch(l->group->loop, l->tx_fd);
	}
	l->tx_watch = on;
}

static void on_writable(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct link *l = arg;

	link_dgram_watch_out(l, false);
	link_group_kick(l->group);
}

int link_dgram_send(struct link *l, struct link_channel *ch, unsigned n)
{
	struct mmsghdr msgs[LINK_TX_BURST];
	struct iovec iov[LINK_TX_BURST];
	unsigned i;
	int sent;

	if (n > LINK_TX_BURST)
		n = LINK_TX_BURST;
	if (n > link_channel_queued(ch))
		n = link_channel_queued(ch);
	for (i = 0; i < n; i++) {
		size_t len;
		const uint8_t *p = link_channel_peek(ch, i, &len);

		iov[i].iov_base = (void *)p;
		iov[i].iov_len = len;
		msgs[i] = (struct mmsghdr){
			.msg_hdr = {
				.msg_name = &l->dest,
				.msg_namelen = l->dest_len,
				.msg_iov = &iov[i],
				.msg_iovlen = 1,
			},
		};
	}
	if (n == 0)
		return 0;
	do {
		sent = sendmmsg(l->tx_fd, msgs, n, MSG_DONTWAIT);
	} while (sent < 0 && errno == EINTR);
	if (sent < 0)
		return -errno;
	for (i = 0; i < (unsigned)sent; i++) {
		l->stats.bytes_sent += iov[i].iov_len;
		l->stats.packets_sent++;
	}
	return sent;
}

/*
 * Up to EventIterationLimit datagrams per wake-up, LINK_RX_BATCH per
 * system call.  What is left stays in the socket for the next iteration,
 * so one busy link cannot starve the rest of the loop.
 */
static void on_readable(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct link *l = arg;
	struct link_group *g = l->group;
	uint32_t done = 0;

	while (done < g->event_limit) {
		unsigned want = g->rx_batch, i;
		int n;

		if (want > g->event_limit - done)
			want = g->event_limit - done;
		for (i = 0; i < want; i++) {
			g->rx_iov[i].iov_base = g->rx_mem + (size_t)i * LINK_RX_DGRAM_MAX;
			g->rx_iov[i].iov_len = LINK_RX_DGRAM_MAX;
			g->rx_msgs[i] = (struct mmsghdr){
				.msg_hdr = {
					.msg_name = &g->rx_addr[i],
					.msg_namelen = sizeof(g->rx_addr[i]),
					.msg_iov = &g->rx_iov[i],
					.msg_iovlen = 1,
				},
			};
		}
		n = recvmmsg(fd, g->rx_msgs, want, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				l->stats.errors_recv++;
				log_debug("link %s: recvmmsg: %s", l->cfg.ifname, strerror(errno));
			}
			return;
		}
		for (i = 0; i < (unsigned)n; i++) {
			struct msghdr *h = &g->rx_msgs[i].msg_hdr;
			size_t len = g->rx_msgs[i].msg_len;

			/* Cut by our buffer, or empty: nothing in it can be trusted. */
			if ((h->msg_flags & MSG_TRUNC) || len == 0) {
				l->stats.errors_recv++;
				continue;
			}
			if (!link_peer_allowed(l, (struct sockaddr *)&g->rx_addr[i])) {
				link_stranger(l, (struct sockaddr *)&g->rx_addr[i], "datagram");
				continue;
			}
			l->stats.bytes_recv += len;
			l->stats.packets_recv++;
			link_deliver(l, g->rx_iov[i].iov_base, len, (struct sockaddr *)&g->rx_addr[i]);
		}
		done += (uint32_t)n;
		if ((unsigned)n < want)
			return;
	}
}
