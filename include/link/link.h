/*
 * link/link.h - the dedicated links (module `link`): UDP unicast, multicast and
 * TCP, IPv4 and IPv6, up to four redundant links with failover.
 *
 * A link moves bytes and knows nothing of what they mean.  The sync layer
 * appends whole messages; the group packs them into datagrams up to the
 * active link's payload limit (the channel buffer of protocol.md §5.1) and
 * sends them when a datagram is full or when link_group_flush() runs (the
 * daemon calls it from the loop's before-sleep hook, once per iteration).
 * Received bytes come back through one callback: whole datagrams for UDP
 * and multicast, runs of whole frames for TCP (after stream reassembly).
 * Where a frame ends, and whether bytes are a frame of the peer at all, the
 * owner says through two more callbacks (link_frame_len_fn,
 * link_frame_valid_fn): the link never reads inside a message.
 *
 * Sending: one link of the group is active (the Default one, else the
 * first).  rtnetlink link state is watched; when the active device is not
 * UP and RUNNING, the first other link whose device is UP and RUNNING takes
 * over, else (if the active one is not even UP or RUNNING) the first other
 * that is UP or RUNNING; the switch is logged, and an error is logged once
 * when no link is usable.  1.4.7 (protocol.md §5.5) takes the first other
 * link that is UP or RUNNING even when a later one is both, and so can
 * swap between two links without carrier at every rtnetlink message.  A
 * datagram (TCP: run of frames) that the owner's frame_valid accepts,
 * received on another link whose device is UP and RUNNING, makes that link
 * the active one, as in 1.4.7.  Every link keeps receiving.
 *
 * Datagrams that cannot leave yet wait in one queue per group, in order:
 * the socket buffer is full (EAGAIN/ENOBUFS), the device or the route is
 * gone for a moment (ENETDOWN/ENETUNREACH/EHOSTUNREACH), or the TCP client
 * is not connected.  They are sent first when the socket is writable again,
 * the connection is back or another link became active.  The queue holds
 * ErrorQueueLength datagrams for TCP (protocol.md §5.4; at least 2, so that
 * a half-written datagram never has to go) and
 * LINK_DGRAM_QUEUE_LEN for UDP and multicast; when it is full the oldest
 * datagram is dropped and counted.  1.4.7 drops a UDP datagram whose send
 * fails; we keep it, since a local send-buffer overflow says nothing about
 * the peer, and losing it would only make the sync protocol repair it.
 *
 * Everything runs on the loop given at open; nothing blocks.  Errors are
 * negative errno values.  Messages about links are logged with the device
 * name.
 */
#ifndef CTSYNCD_LINK_H
#define CTSYNCD_LINK_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config/config.h"

struct loop;
struct link;
struct link_group;

/* Receive buffer of a link whose RcvSocketBuffer is unset (conntrackd: the kernel's default). */
#define LINK_DEFAULT_RCVBUF     (8 * 1024 * 1024)

/* Datagrams kept by a UDP or multicast group when they cannot be sent. */
#define LINK_DGRAM_QUEUE_LEN    256u
/* Upper bound of the queue, whatever ErrorQueueLength says (memory). */
#define LINK_QUEUE_MAX          65536u
/* The largest message append accepts; 1.4.7 builds each in 4 KiB (protocol.md §2.1). */
#define LINK_MSG_MAX            4096u
/*
 * The longest frame a TCP stream may carry (a 16-bit length): the stream
 * buffer holds two, so that a frame cut by a read always has room to end.
 */
#define LINK_FRAME_MAX          65535u

/*
 * A datagram (UDP, multicast) or a run of whole frames (TCP), `len` > 0
 * bytes, received on `from`.  `src` is the sender's address (the peer of
 * the TCP connection), so that the sync layer can keep state per peer.
 * The bytes are valid only during the call.  The callback may append and
 * flush; it must not close the group.
 */
typedef void (*link_receive_fn)(void *arg, struct link *from, const void *buf, size_t len,
				const struct sockaddr *src);

/* The active link changed from `old` to `now` (both non-NULL). */
typedef void (*link_switch_fn)(void *arg, struct link *old, struct link *now);

/*
 * Framing of a TCP stream.  `buf` holds the `len` > 0 bytes received at the
 * head of the stream.  Returns the length of the first frame when all of
 * it is there (1 ... min(len, LINK_FRAME_MAX)), 0 when more bytes are
 * needed to tell, or a negative errno when these bytes can never start a
 * frame; then *why may be set to a static string naming the cause.  The
 * link cannot find another boundary after that: it delivers the frames
 * before it, counts an error received (errors_recv), logs the cause with
 * the device and ends the connection; the peer reconnects.  A length out
 * of range is taken as such an error.
 */
typedef long (*link_frame_len_fn)(void *arg, const void *buf, size_t len, const char **why);

/*
 * Does this datagram (TCP: run of frames) start with a frame the owner
 * accepts from its peer?  Only then does a datagram received on a backup
 * link make it the active one: noise on the port moves nothing.
 */
typedef bool (*link_frame_valid_fn)(void *arg, const void *buf, size_t len);

/*
 * Seals one datagram in place, as it is closed: its messages are the `len`
 * bytes at buf + seal_headroom; the seal writes the whole datagram from
 * buf (at most `cap` bytes) and returns its length, or 0 to drop it.  The
 * link knows nothing of what a seal is (doc/envelope.md).
 */
typedef size_t (*link_seal_fn)(void *arg, uint8_t *buf, size_t len, size_t cap);

struct link_group_params {
	const struct config_sync *sync;     /* links[], nlinks, default_link; copied */
	uint32_t event_iteration_limit;     /* datagrams (TCP: reads) per wake-up; 0 = 100 */
	link_receive_fn on_receive;         /* required */
	link_switch_fn on_switch;           /* may be NULL */
	link_frame_len_fn frame_len;        /* required */
	link_frame_valid_fn frame_valid;    /* required */
	link_seal_fn seal;                  /* NULL: datagrams go as they are */
	size_t seal_headroom;               /* bytes the seal writes before the messages */
	size_t seal_overhead;               /* bytes it adds in all (headroom included) */
	void *arg;                          /* given to every callback */
};

/*
 * Open every link of p->sync on `loop`: sockets, multicast membership, TCP
 * listener and first client connection attempt, the MTU (SIOCGIFMTU) of
 * each Interface and the rtnetlink watch.  All or nothing: on failure the
 * cause is logged with the link's device and line, and -errno returned
 * (-EINVAL: a required callback is missing; -ENODEV: no such Interface;
 * -EADDRNOTAVAIL, -EADDRINUSE: bind).
 */
int link_group_open(struct link_group **out, struct loop *loop, const struct link_group_params *p);

/* Close the sockets and free the group.  What is buffered is not sent: flush first. */
void link_group_close(struct link_group *g);

/*
 * A reload: reads per wake-up (EventIterationLimit; 0 = the default).  The
 * datagrams of one receive call stay as many as the group was opened with.
 */
void link_group_set_event_limit(struct link_group *g, uint32_t limit);

/*
 * Append one message of `len` bytes to the channel buffer.  When it does
 * not fit (used + len > limit) the buffer becomes a datagram of its own
 * first; a full datagram is therefore possible, where 1.4.7 appends only
 * while used + len < limit and so always leaves at least one byte unused.
 * A message longer than the limit goes out alone, as one larger datagram
 * (fragmented by IP) or one larger TCP write.  Returns 0, -EINVAL for
 * len 0, -EMSGSIZE above LINK_MSG_MAX, -ENOMEM.  Queue overflow is not an
 * error here: the oldest datagram is dropped and counted.
 */
int link_group_append(struct link_group *g, const void *msg, size_t len);

/*
 * Send the channel buffer and everything queued before it.  Returns 0
 * when nothing is left waiting, -EAGAIN when datagrams wait for the socket
 * or the connection (they go out from the loop, without another flush).
 */
int link_group_flush(struct link_group *g);

/*
 * Queue `dgram` as a datagram of its own, after what is queued, and try to
 * send: a control datagram of the seal, sealed already.  0, -EMSGSIZE,
 * -ENOMEM, or -EAGAIN (it waits).
 */
int link_group_send_datagram(struct link_group *g, const void *dgram, size_t len);

/*
 * The active link's datagram payload limit, in bytes: MTU - 28 for UDP and
 * multicast over IPv4, MTU - 40 for TCP over IPv4 (protocol.md §5.1), and 20
 * bytes less over IPv6, whose header is 40 bytes (1.4.7 uses the IPv4
 * figures for IPv6 too, so its full datagrams are fragmented); never more
 * than a UDP datagram can carry (65507 over IPv4, 65527 over IPv6).  It
 * can change when another link becomes active.
 */
size_t link_group_payload_max(const struct link_group *g);

/* Bytes in the channel buffer, not yet part of a datagram. */
size_t link_group_buffered(const struct link_group *g);

/*
 * Datagrams waiting for the socket or the connection.  A producer of bulk
 * traffic pauses while this is not 0 and goes on at its next turn: the
 * loop wakes up when the link can take more, and the datagrams leave.
 */
size_t link_group_backlog(const struct link_group *g);

/* The links, in configuration order. */
unsigned link_group_count(const struct link_group *g);
struct link *link_group_link(struct link_group *g, unsigned index);
struct link *link_group_active(struct link_group *g);

/*
 * Make `l` the active link now (operator request, tests), whatever its
 * device state.  Queued datagrams go out on it.  Logged; on_switch called.
 */
void link_group_set_active(struct link_group *g, struct link *l);

/* ---- one link ------------------------------------------------------------ */

unsigned link_index(const struct link *l);            /* position in the configuration */
const char *link_ifname(const struct link *l);        /* Interface */
enum config_link_kind link_kind(const struct link *l);
bool link_is_active(const struct link *l);
/* The device is UP and RUNNING, as the last rtnetlink message or ioctl said. */
bool link_is_running(const struct link *l);
/* TCP: an accepted peer connection / our client connection exists (false for UDP). */
bool link_tcp_server_connected(const struct link *l);
bool link_tcp_client_connected(const struct link *l);

/*
 * errors_sent counts failed send calls other than EAGAIN (a datagram
 * retried after ENETUNREACH counts at each attempt); errors_recv counts
 * truncated or empty datagrams and TCP streams cut or malformed.
 */
struct link_stats {
	uint64_t bytes_sent, packets_sent, errors_sent;
	uint64_t bytes_recv, packets_recv, errors_recv;
	uint64_t blocked;               /* sends that found the socket buffer full (EAGAIN) */
	uint64_t connects;              /* TCP: client connections established */
	uint64_t disconnects;           /* TCP: client connections lost or refused */
	uint64_t accepts;               /* TCP: peer connections accepted */
	uint64_t strangers;             /* datagrams or connections dropped: not from the peer */
};

/* Counters of one link: packets are datagrams (TCP: batches written / reads delivered). */
void link_get_stats(const struct link *l, struct link_stats *out);

/* ---- a snapshot for statistics (`-s link` is rendered by control) ------------ */

/* Room for an address and port as text: "192.0.2.1:3780", "[fe80::1%eth0]:3780". */
#define LINK_ADDR_STRLEN        80

/* "198.18.0.1:3780", "[2001:2::1%veth0]:3780", for logs; at most LINK_ADDR_STRLEN bytes. */
void link_sock_addr_str(const struct sockaddr *sa, char *buf, size_t size);

struct link_info {
	unsigned index;                 /* position in the configuration */
	char ifname[IF_NAMESIZE];       /* Interface */
	enum config_link_kind kind;
	const char *status;             /* "RUNNING", "NO-CARRIER" or "DOWN" (static) */
	bool active;
	char local[LINK_ADDR_STRLEN];   /* bound here; multicast: the group */
	char dest[LINK_ADDR_STRLEN];    /* sent there; multicast: the group */
	uint32_t mtu;
	size_t payload_max;
	bool tcp_server_connected;      /* as link_tcp_server_connected() */
	bool tcp_client_connected;
	struct link_stats stats;
};

/* The channel buffer and the queue the links share. */
struct link_channel_info {
	unsigned active;                /* index of the active link */
	size_t payload_max;             /* the active link's */
	size_t buffered_bytes;          /* link_group_buffered() */
	unsigned queued_datagrams;      /* link_group_backlog() */
	unsigned queue_max;
	uint64_t dropped_datagrams, dropped_bytes;
	uint64_t failovers;             /* switches of the active link */
};

/*
 * Copy the state of every link, in configuration order, into links[] and
 * of the channel into *channel; returns the number of links.  Nothing is
 * kept: the snapshot is the caller's.
 */
unsigned link_group_info(const struct link_group *g, struct link_info links[CONFIG_MAX_LINKS],
			 struct link_channel_info *channel);

#endif
