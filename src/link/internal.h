/*
 * internal.h - what the files of src/link share.  Not a contract outside
 * this folder (the unit test includes it for the pure parts).
 *
 * Pure parts, no system call:
 *   channel.c   the channel buffer and the queue of datagrams waiting to go
 *   stream.c    TCP stream reassembly into runs of whole frames
 *   policy.c    payload limits, failover choice, status names
 * On the loop:
 *   group.c     the link_group API: open, append, flush, send, receive
 *   sock.c      socket helpers: addresses, buffers, MTU, device flags
 *   dgram.c     UDP unicast and multicast sockets, recvmmsg, sendmmsg
 *   tcp.c       TCP listener, accepted peer, client with reconnect
 *   peers.c     who may speak on a link: the peer's address, or for
 *               multicast the interface's networks; strangers are dropped
 *   monitor.c   rtnetlink link state (RTMGRP_LINK)
 */
#ifndef CTSYNCD_LINK_INTERNAL_H
#define CTSYNCD_LINK_INTERNAL_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "config/config.h"
#include "link/link.h"

struct loop;
struct loop_timer;

/* ---- channel.c: batching and the send queue ------------------------------- */

/*
 * A ring of `cap + 1` datagram slots of `slot_size` bytes each.  `count`
 * closed datagrams wait from `head` on; the slot after them is the open
 * batch that append fills.  Slots are allocated the first time they are
 * used and kept, so memory follows the deepest backlog seen, and steady
 * state allocates nothing.
 */
struct link_channel {
	uint8_t **slot;
	uint32_t *len;
	unsigned nslots;                /* cap + 1 */
	unsigned cap;                   /* closed datagrams that may wait */
	unsigned head;
	unsigned count;
	size_t slot_size;
	size_t head_off;                /* stream links: bytes of the head already written */
	size_t headroom;                /* bytes before the messages of a batch: the seal's */
	size_t reserve;                 /* bytes of a slot the seal adds in all (headroom included) */
	link_seal_fn seal;              /* applied to each batch as it is closed; NULL: none */
	void *seal_arg;
	uint64_t dropped;               /* datagrams dropped because the queue was full */
	uint64_t dropped_bytes;
};

/* Returns 0, -EINVAL (cap 0, slot_size 0) or -ENOMEM. */
int link_channel_init(struct link_channel *ch, unsigned cap, size_t slot_size);
/* A whole datagram of its own, after the open batch (closed first). */
int link_channel_push(struct link_channel *ch, const void *dgram, size_t len);
void link_channel_free(struct link_channel *ch);

/*
 * Append a message under the payload limit `limit` (see link_group_append).
 * Returns the number of datagrams closed by this call (0, 1 or 2: a
 * message over the limit closes the batch before it and its own), or
 * -EMSGSIZE (len > slot_size), -EINVAL (len 0), -ENOMEM.
 */
int link_channel_append(struct link_channel *ch, const void *msg, size_t len, size_t limit);
/* Close the open batch into the queue if it holds anything; true if it did. */
bool link_channel_close(struct link_channel *ch);
/* Bytes in the open batch. */
size_t link_channel_open_len(const struct link_channel *ch);
static inline unsigned link_channel_queued(const struct link_channel *ch)
{
	return ch->count;
}
/* The i-th waiting datagram (0 = oldest); NULL past the end. */
const uint8_t *link_channel_peek(const struct link_channel *ch, unsigned i, size_t *len);
/* The oldest `n` datagrams have been sent: forget them (head_off is reset). */
void link_channel_pop(struct link_channel *ch, unsigned n);

/* ---- stream.c: TCP reassembly ---------------------------------------------- */

/*
 * Received bytes accumulate in `buf`; link_stream_whole() says how many
 * of them, from the start, form whole frames (the owner's frame_len).
 * The capacity must exceed twice the longest frame (LINK_FRAME_MAX), so
 * that after link_stream_consume() there is always room to complete a
 * partial frame.
 */
struct link_stream {
	uint8_t *buf;
	size_t cap;
	size_t used;
};

#define LINK_STREAM_CAP         (2u * (LINK_FRAME_MAX + 1u))

int link_stream_init(struct link_stream *s, size_t cap);
void link_stream_free(struct link_stream *s);
void link_stream_reset(struct link_stream *s);
/* Where the next read goes and how much room there is (never 0 after consume). */
uint8_t *link_stream_space(struct link_stream *s, size_t *room);
/* `n` bytes were read into the space. */
void link_stream_commit(struct link_stream *s, size_t n);
/*
 * Bytes of whole frames at the start of the buffer (0: not even one), as
 * `frame_len` (see link_frame_len_fn) cuts them.  Returns a negative errno
 * when the first bytes can never start a frame (frame_len's, or -EBADMSG
 * for a length out of range or a frame that cannot end in the buffer),
 * with *why set to the cause: the stream is lost and the connection must
 * go.  Frames before such bytes are counted as whole.
 */
long link_stream_whole(const struct link_stream *s, link_frame_len_fn frame_len, void *arg,
		       const char **why);
/* Drop the first `n` bytes (delivered); the rest moves to the start. */
void link_stream_consume(struct link_stream *s, size_t n);

/* ---- policy.c: limits, failover, names ---------------------------------------- */

/*
 * Datagram payload for a device MTU (see link_group_payload_max), or 0
 * when the MTU cannot even carry the headers.
 */
size_t link_payload_limit(enum config_link_kind kind, int family, uint32_t mtu);

/* IFF_* flags of a device able to carry the active link: UP and RUNNING. */
bool link_flags_running(unsigned ifflags);
/* Usable as a failover target: UP or RUNNING (protocol.md §5.5). */
bool link_flags_usable(unsigned ifflags);
/*
 * The link that should be active given each device's IFF_* flags: `active`
 * itself while it is UP and RUNNING, else the first other link in order
 * whose device is UP and RUNNING, else `active` if it is UP or RUNNING,
 * else the first other that is UP or RUNNING, else -1 (none: keep it).
 */
int link_failover_pick(const unsigned *ifflags, unsigned n, unsigned active);
/* "RUNNING", "NO-CARRIER" or "DOWN", as conntrackd -s link. */
const char *link_status_name(unsigned ifflags);

/* ---- the link and the group ------------------------------------------------- */

enum link_tcp_state {
	LINK_TCP_DOWN,
	LINK_TCP_CONNECTING,
	LINK_TCP_UP,
};

/* Multicast: a network of the sync interface, whose members may speak (peers.c). */
#define LINK_NETS_MAX 16
struct link_net {
	int family;
	uint8_t addr[16];
	uint8_t prefix;
};

struct link {
	struct link_group *group;
	unsigned index;
	struct config_link cfg;         /* a copy: the configuration may be reloaded */
	unsigned ifindex;
	unsigned ifflags;               /* IFF_* from ioctl at open, then rtnetlink */
	uint32_t mtu;
	size_t payload_max;
	struct sockaddr_storage dest;   /* datagrams and the client connection go here */
	socklen_t dest_len;
	struct sockaddr_storage local;  /* receive socket / listener bound here */
	socklen_t local_len;
	/* UDP and multicast */
	int rx_fd;
	int tx_fd;
	bool tx_watch;                  /* waiting for EPOLLOUT on tx_fd */
	/* TCP */
	int listen_fd;
	int conn_fd;                    /* the accepted peer connection */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct link_stream rx;
	int client_fd;
	enum link_tcp_state client_state;
	bool client_watch_out;          /* client fd watched for EPOLLOUT */
	uint64_t last_connect_ms;       /* loop time of the last attempt */
	bool client_logged_down;        /* the outage is logged: not once per attempt */
	struct loop_timer *reconnect;
	/* who may speak (peers.c) */
	struct link_net nets[LINK_NETS_MAX];
	unsigned nnets;
	uint64_t nets_read_ms;
	uint64_t stranger_logged_ms;
	uint64_t strangers_unlogged;
	struct link_stats stats;
};

struct link_group {
	struct loop *loop;
	link_receive_fn on_receive;
	link_switch_fn on_switch;
	link_frame_len_fn frame_len;
	link_frame_valid_fn frame_valid;
	size_t seal_overhead;           /* taken off every link's payload_max for the messages */
	void *arg;
	uint32_t event_limit;
	unsigned nlinks;
	unsigned active;
	struct link links[CONFIG_MAX_LINKS];
	struct link_channel ch;
	struct loop_timer *retry;       /* resend after a transient error */
	unsigned burst;                 /* send while appending once this many wait */
	bool waiting;                   /* datagrams wait for EPOLLOUT, a connection or `retry` */
	bool none_logged;               /* "no link available" logged for this outage */
	uint64_t switches;
	/* recvmmsg vectors, shared by the datagram links (reads never nest) */
	unsigned rx_batch;
	uint8_t *rx_mem;
	struct mmsghdr *rx_msgs;
	struct iovec *rx_iov;
	struct sockaddr_storage *rx_addr;
	/* rtnetlink */
	int nl_fd;
	uint8_t *nl_buf;
};

#define LINK_RX_DGRAM_MAX       65536u  /* 1.4.7's receive buffer; the largest UDP payload fits */
#define LINK_RX_BATCH           32u     /* datagrams per recvmmsg */
#define LINK_TX_BURST           32u     /* datagrams per sendmmsg / iovecs per writev */
#define LINK_RETRY_MS           50u     /* resend after ENOBUFS, ENETDOWN, ... */
#define LINK_RECONNECT_MS       1000u   /* TCP: at most one connect per second */

/* group.c, for the transports */
void link_deliver(struct link *l, const void *buf, size_t len, const struct sockaddr *src);
/* A link can take data again (EPOLLOUT, TCP connected): send what waits. */
void link_group_kick(struct link_group *g);
/* Re-evaluate the active link after the devices' flags changed. */
void link_group_check_failover(struct link_group *g);

/* sock.c */
int link_sock_addr(struct sockaddr_storage *ss, socklen_t *len, const struct config_addr *a,
		   uint16_t port, unsigned ifindex);
int link_sock_buffers(int fd, const struct link *l, bool snd, bool rcv);
int link_dev_query(const char *ifname, unsigned *ifindex, uint32_t *mtu, unsigned *ifflags);
int link_dev_flags(const char *ifname, unsigned *ifflags);

/* dgram.c */
int link_dgram_open(struct link *l);
void link_dgram_close(struct link *l);
/*
 * Send up to `n` waiting datagrams to the link's destination in one
 * sendmmsg; returns how many went (the caller pops them) or -errno of the
 * first.
 */
int link_dgram_send(struct link *l, struct link_channel *ch, unsigned n);
void link_dgram_watch_out(struct link *l, bool on);

/* tcp.c */
int link_tcp_open(struct link *l);
void link_tcp_close(struct link *l);
/*
 * Write up to `n` waiting datagrams on the client connection, pop those
 * written whole and keep the position in a partial one (ch->head_off).
 * Returns the bytes written or -errno (-EAGAIN: EPOLLOUT is watched;
 * -ENOTCONN: a connection is on its way; others: the connection is lost).
 */
long link_tcp_send(struct link *l, struct link_channel *ch, unsigned n);
/* Make sure a client connection exists or is being made (rate limited). */
void link_tcp_want_client(struct link *l);
/* End the client connection on purpose (a datagram was left half written); it reconnects. */
void link_tcp_restart_client(struct link *l);

/* monitor.c */
int link_monitor_open(struct link_group *g);
void link_monitor_close(struct link_group *g);
/* Re-read every device's flags by ioctl (at open, after a netlink overrun). */
void link_monitor_refresh(struct link_group *g);

/* ---- peers.c: who may speak ------------------------------------------------- */

/* Multicast: read the sync interface's networks.  0 or -errno. */
int link_peers_refresh(struct link *l);
/* May `src` speak on `l`?  (Its peer's address; multicast: the interface's networks.) */
bool link_peer_allowed(struct link *l, const struct sockaddr *src);
/* Count a datagram or connection from a stranger; logged, at most once per 10 s per link. */
void link_stranger(struct link *l, const struct sockaddr *src, const char *what);

#endif
