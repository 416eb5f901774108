/*
 * tcp.c - TCP links (protocol.md §5.4).  Each node listens on its local
 * address and Port and accepts one peer connection (a new one replaces the
 * old); it sends on a client connection of its own to the destination.
 * So data flows A.client -> B.server and B.client -> A.server.
 *
 * The client connects without blocking, at start and then at most once
 * per second while it is down; datagrams wait in the group's queue (the
 * error queue, ErrorQueueLength long) meanwhile and go first when it is
 * back.  Received bytes are reassembled into whole frames (the owner's
 * frame_len says where they end).
 *
 * Deliberate differences from 1.4.7: the client connects at start and
 * keeps reconnecting on a timer, not only when there is something to send,
 * so that `-s link` tells the truth and the first datagram does not wait;
 * a peer that closes our client connection is noticed at once (we watch
 * it for EOF) instead of at the next failed write; TCP_NODELAY is set,
 * since datagrams are already batched and Nagle would only delay ACKs and
 * ALIVEs behind unacknowledged data.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "loop/log.h"
#include "loop/loop.h"

static int set_int(int fd, int level, int opt, int v)
{
	return setsockopt(fd, level, opt, &v, sizeof(v)) < 0 ? -errno : 0;
}

static const char *peer_str(const struct link *l, char *buf, size_t size)
{
	link_sock_addr_str((const struct sockaddr *)&l->dest, buf, size);
	return buf;
}

/* ---- the server side: one accepted peer ----------------------------------- */

static void conn_close(struct link *l, const char *why)
{
	char addr[80];

	if (l->conn_fd < 0)
		return;
	link_sock_addr_str((const struct sockaddr *)&l->peer, addr, sizeof(addr));
	log_notice("link %s: peer connection from %s closed: %s", l->cfg.ifname, addr, why);
	loop_unwatch(l->group->loop, l->conn_fd);
	close(l->conn_fd);
	l->conn_fd = -1;
	/* A message cut by the end of the stream is lost with the connection. */
	if (l->rx.used > 0)
		l->stats.errors_recv++;
	link_stream_reset(&l->rx);
}

/*
 * The `whole` bytes at the head of the stream are whole frames.  Plain
 * frames (1.4.7 messages) go together, so that the splitter decodes
 * ahead; a sealed frame is an envelope of its own and is opened alone.
 * -1 when the connection went away meanwhile.
 */
static int deliver_frames(struct link *l, int fd, size_t whole)
{
	struct link_group *g = l->group;
	const struct sockaddr *peer = (const struct sockaddr *)&l->peer;
	size_t off = 0;

	if (!g->seal_overhead) {
		link_deliver(l, l->rx.buf, whole, peer);
		return l->conn_fd == fd ? 0 : -1;
	}
	while (off < whole) {
		const char *why;
		long n = g->frame_len(g->arg, l->rx.buf + off, whole - off, &why);

		/* link_stream_whole() framed these bytes already: n is one of them. */
		if (n <= 0 || (size_t)n > whole - off)
			break;
		link_deliver(l, l->rx.buf + off, (size_t)n, peer);
		if (l->conn_fd != fd)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static void on_conn_readable(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct link *l = arg;
	struct link_group *g = l->group;

	for (uint32_t reads = 0; reads < g->event_limit && l->conn_fd == fd; reads++) {
		size_t room;
		uint8_t *p = link_stream_space(&l->rx, &room);
		ssize_t n = recv(fd, p, room, MSG_DONTWAIT);
		const char *why;
		long whole;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			l->stats.errors_recv++;
			conn_close(l, strerror(errno));
			return;
		}
		if (n == 0) {
			conn_close(l, "end of stream");
			return;
		}
		link_stream_commit(&l->rx, (size_t)n);
		l->stats.bytes_recv += (uint64_t)n;
		whole = link_stream_whole(&l->rx, g->frame_len, g->arg, &why);
		if (whole < 0) {
			char reason[128];

			/* Bytes that can never start a frame: the framing is lost for good. */
			l->stats.errors_recv++;
			snprintf(reason, sizeof(reason), "malformed stream (%s)",
				 why ? why : "no frame can start here");
			conn_close(l, reason);
			return;
		}
		if (whole > 0) {
			l->stats.packets_recv++;
			/* The callback cannot close the group, but be safe about the fd. */
			if (deliver_frames(l, fd, (size_t)whole) < 0)
				return;
			link_stream_consume(&l->rx, (size_t)whole);
		}
	}
}

/*
 * A peer that dies without closing (power, kernel panic) is noticed within
 * about 8 s instead of the kernel's two hours, so that its replacement
 * connection finds no live stream in the way.
 */
static void keepalive(int fd)
{
	set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, 5);
	set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, 1);
	set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, 3);
}

static void on_accept(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct link *l = arg;

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		char addr[80];
		int c = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warning("link %s: accept: %s", l->cfg.ifname, strerror(errno));
			return;
		}
		if (!link_peer_allowed(l, (struct sockaddr *)&ss)) {
			link_stranger(l, (struct sockaddr *)&ss, "connection");
			close(c);
			continue;
		}
		/*
		 * One peer per link, and only the peer's address gets here: a
		 * new connection from it means the peer restarted or lost the
		 * old one, whose end we may not have seen yet.
		 */
		conn_close(l, "replaced by a new connection from the peer");
		if (loop_watch(loop, c, LOOP_READ, on_conn_readable, l) < 0) {
			close(c);
			continue;
		}
		keepalive(c);
		l->conn_fd = c;
		l->peer = ss;
		l->peer_len = len;
		l->stats.accepts++;
		link_sock_addr_str((const struct sockaddr *)&ss, addr, sizeof(addr));
		log_notice("link %s: peer connected from %s", l->cfg.ifname, addr);
	}
}

/* ---- the client side: our sending connection -------------------------------- */

static void on_client_event(struct loop *loop, int fd, unsigned events, void *arg);

static void client_close(struct link *l)
{
	if (l->client_fd >= 0) {
		loop_unwatch(l->group->loop, l->client_fd);
		close(l->client_fd);
	}
	l->client_fd = -1;
	l->client_state = LINK_TCP_DOWN;
	l->client_watch_out = false;
}

static void schedule_reconnect(struct link *l)
{
	uint64_t now = loop_now_ms(l->group->loop);
	uint64_t next = l->last_connect_ms + LINK_RECONNECT_MS;

	if (l->reconnect)
		loop_timer_arm(l->reconnect, next > now ? next - now : 0);
}

/* The connection failed or broke: start over, within the one-per-second rule. */
static void client_lost(struct link *l, int err, bool was_up)
{
	char addr[80];
	struct link_group *g = l->group;

	client_close(l);
	l->stats.disconnects++;
	/* One line per outage, not one per failed attempt. */
	if (was_up)
		log_notice("link %s: connection to %s lost: %s; reconnecting every second",
			   l->cfg.ifname, peer_str(l, addr, sizeof(addr)),
			   err ? strerror(err) : "closed by the peer");
	else if (!l->client_logged_down)
		log_notice("link %s: cannot connect to %s: %s; retrying every second",
			   l->cfg.ifname, peer_str(l, addr, sizeof(addr)),
			   strerror(err ? err : ECONNREFUSED));
	l->client_logged_down = true;
	/*
	 * A datagram half written on the lost stream is sent again whole on
	 * the next one: the peer dropped the half with the old connection.
	 */
	if (&g->links[g->active] == l)
		g->ch.head_off = 0;
	schedule_reconnect(l);
}

/*
 * Drop a healthy client connection on purpose: the group stops sending on
 * this link with a datagram half written, and the only way to keep the
 * peer's framing is to end that stream.  The link reconnects as usual.
 */
void link_tcp_restart_client(struct link *l)
{
	char addr[80];

	if (l->client_state == LINK_TCP_DOWN)
		return;
	log_notice("link %s: closing the connection to %s in the middle of a datagram; "
		   "reconnecting", l->cfg.ifname, peer_str(l, addr, sizeof(addr)));
	client_close(l);
	schedule_reconnect(l);
}

static void client_up(struct link *l)
{
	char addr[80];

	l->client_state = LINK_TCP_UP;
	l->stats.connects++;
	l->client_logged_down = false;
	log_notice("link %s: connected to %s", l->cfg.ifname, peer_str(l, addr, sizeof(addr)));
	/* Read only, for EOF; EPOLLOUT only while a write is blocked. */
	if (loop_watch(l->group->loop, l->client_fd, LOOP_READ, on_client_event, l) < 0) {
		client_lost(l, ENOMEM, true);
		return;
	}
	l->client_watch_out = false;
	/* Send what waits from the loop, not from inside a send that is connecting us. */
	if (&l->group->links[l->group->active] == l)
		loop_timer_arm(l->group->retry, 0);
}

static void client_connect(struct link *l)
{
	int fd, err;

	l->last_connect_ms = loop_now_ms(l->group->loop);
	fd = socket(l->cfg.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		client_lost(l, errno, false);
		return;
	}
	l->client_fd = fd;
	keepalive(fd);
	set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	if (l->cfg.family == AF_INET6)
		set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
	err = link_sock_buffers(fd, l, true, false);
	if (err < 0) {
		client_lost(l, -err, false);
		return;
	}
	if (connect(fd, (struct sockaddr *)&l->dest, l->dest_len) == 0) {
		client_up(l);
		return;
	}
	if (errno != EINPROGRESS) {
		client_lost(l, errno, false);
		return;
	}
	l->client_state = LINK_TCP_CONNECTING;
	if (loop_watch(l->group->loop, fd, LOOP_READ | LOOP_WRITE, on_client_event, l) < 0) {
		client_lost(l, ENOMEM, false);
		return;
	}
	l->client_watch_out = true;
}

static void on_reconnect(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct link *l = arg;

	if (l->client_state == LINK_TCP_DOWN)
		client_connect(l);
}

void link_tcp_want_client(struct link *l)
{
	uint64_t now = loop_now_ms(l->group->loop);

	if (l->client_state != LINK_TCP_DOWN)
		return;
	if (l->last_connect_ms != 0 && now - l->last_connect_ms < LINK_RECONNECT_MS) {
		if (l->reconnect && !loop_timer_armed(l->reconnect))
			schedule_reconnect(l);
		return;
	}
	client_connect(l);
}

static void on_client_event(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct link *l = arg;

	if (l->client_state == LINK_TCP_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err == 0 && (events & LOOP_WRITE))
			client_up(l);
		else if (err != 0)
			client_lost(l, err, false);
		return;
	}
	if (events & LOOP_READ) {
		uint8_t sink[512];
		ssize_t n;
		unsigned reads = 0;

		/*
		 * The peer never sends on our client connection; anything is
		 * discarded, a bounded amount per wake-up.
		 */
		do {
			n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
		} while ((n > 0 && ++reads < 64) || (n < 0 && errno == EINTR));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
			client_lost(l, n == 0 ? 0 : errno, true);
			return;
		}
	}
	if ((events & LOOP_WRITE) && l->client_watch_out) {
		if (loop_watch(loop, fd, LOOP_READ, on_client_event, l) == 0)
			l->client_watch_out = false;
		link_group_kick(l->group);
	}
}

/*
 * Write up to `n` waiting datagrams in one sendmsg (the first from
 * head_off on), then forget those fully written.  A partial write leaves
 * head_off inside a datagram; the next call continues there.
 */
long link_tcp_send(struct link *l, struct link_channel *ch, unsigned n)
{
	struct iovec iov[LINK_TX_BURST];
	struct msghdr msg = { .msg_iov = iov };
	unsigned i, done;
	ssize_t w;
	size_t left;

	if (l->client_state != LINK_TCP_UP) {
		link_tcp_want_client(l);
		if (l->client_state != LINK_TCP_UP)
			return -ENOTCONN;
	}
	if (n > LINK_TX_BURST)
		n = LINK_TX_BURST;
	if (n > link_channel_queued(ch))
		n = link_channel_queued(ch);
	for (i = 0; i < n; i++) {
		size_t len;
		const uint8_t *p = link_channel_peek(ch, i, &len);
		size_t skip = i == 0 ? ch->head_off : 0;

		iov[i].iov_base = (void *)(p + skip);
		iov[i].iov_len = len - skip;
	}
	msg.msg_iovlen = n;
	if (n == 0)
		return 0;
	do {
		w = sendmsg(l->client_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (w < 0 && errno == EINTR);
	if (w < 0) {
		int err = errno;

		if (err == EAGAIN || err == EWOULDBLOCK) {
			/* If the watch cannot be set, the group's retry timer still comes. */
			l->stats.blocked++;
			if (!l->client_watch_out &&
			    loop_watch(l->group->loop, l->client_fd, LOOP_READ | LOOP_WRITE,
				       on_client_event, l) == 0)
				l->client_watch_out = true;
			return -EAGAIN;
		}
		l->stats.errors_sent++;
		client_lost(l, err, true);
		return -err;
	}
	l->stats.bytes_sent += (uint64_t)w;
	left = (size_t)w;
	for (done = 0; done < n && left >= iov[done].iov_len; done++)
		left -= iov[done].iov_len;
	l->stats.packets_sent += done;
	link_channel_pop(ch, done);
	ch->head_off += left;
	return (long)w;
}

/* ---- open and close -------------------------------------------------------------- */

int link_tcp_open(struct link *l)
{
	const char *step = "socket";
	int err;

	err = link_stream_init(&l->rx, LINK_STREAM_CAP);
	if (err < 0)
		goto fail;
	l->reconnect = loop_timer_new(l->group->loop, on_reconnect, l);
	if (!l->reconnect) {
		err = -ENOMEM;
		goto fail;
	}
	l->listen_fd = socket(l->cfg.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->listen_fd < 0)
		goto fail_errno;
	step = "socket options";
	if ((err = set_int(l->listen_fd, SOL_SOCKET, SO_REUSEADDR, 1)) < 0 ||
	    (err = set_int(l->listen_fd, SOL_SOCKET, SO_KEEPALIVE, 1)) < 0 ||
	    (l->cfg.family == AF_INET6 &&
	     (err = set_int(l->listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, 1)) < 0))
		goto fail;
	/* Accepted sockets inherit the receive buffer. */
	step = "RcvSocketBuffer";
	if ((err = link_sock_buffers(l->listen_fd, l, false, true)) < 0)
		goto fail;
	step = "bind";
	if (bind(l->listen_fd, (struct sockaddr *)&l->local, l->local_len) < 0)
		goto fail_errno;
	step = "listen";
	if (listen(l->listen_fd, 1) < 0)
		goto fail_errno;
	step = "watch";
	if ((err = loop_watch(l->group->loop, l->listen_fd, LOOP_READ, on_accept, l)) < 0)
		goto fail;
	client_connect(l);
	return 0;

fail_errno:
	err = -errno;
fail:
	log_error("link %s (line %u): cannot open the TCP link: %s: %s", l->cfg.ifname,
		  l->cfg.line, step, strerror(-err));
	link_tcp_close(l);
	return err;
}

void link_tcp_close(struct link *l)
{
	struct loop *loop = l->group->loop;

	if (l->listen_fd >= 0) {
		loop_unwatch(loop, l->listen_fd);
		close(l->listen_fd);
		l->listen_fd = -1;
	}
	if (l->conn_fd >= 0) {
		loop_unwatch(loop, l->conn_fd);
		close(l->conn_fd);
		l->conn_fd = -1;
	}
	client_close(l);
	loop_timer_free(l->reconnect);
	l->reconnect = NULL;
	link_stream_free(&l->rx);
}
