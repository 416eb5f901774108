/*
 * ctload-ct.c - the table operations of ctload: batched create, update and
 * delete, the counting dump, the kernel's counter, and flush.
 *
 * Batching: ctnetlink needs no NFNL_MSG_BATCH_BEGIN; the kernel walks every
 * message of a datagram in order (netlink_rcv_skb) inside our sendmsg(), so
 * when sendmsg() returns, the answer to every message of the batch is
 * already queued on our socket.  By default only failures are answered (the
 * kernel always reports an error, NLM_F_ACK or not), so a clean batch costs
 * one syscall and no reply skbs; --ack asks for an ACK per message instead.
 * Replies carry the request's sequence number, which is base + entry index.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>

#include "ctload.h"

/* An upper bound on one request (IPv6 create is ~220 bytes). */
#define MSG_MAX 512

/* Entry i uses source address base + (i >> SLOT_BITS) and source port (or
 * ICMP id) PORT_BASE + (i & SLOT_MASK): distinct and reproducible, so
 * update and delete find exactly what create made. */
#define SLOT_BITS 14
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define PORT_BASE 1024
#define TCP_DPORT 80
#define UDP_DPORT 53

/* Reply slots for recvmmsg(): an ACK or error with NETLINK_CAP_ACK is 36 bytes. */
#define RX_SLOTS 1024
#define RX_SLOT_SIZE 512

/* ICMP echo types; the kernel maps a request to its reply for the reply tuple. */
#define ICMP_ECHO_REQUEST 8
#define ICMP_ECHO_REPLY 0
#define ICMPV6_ECHO_REQUEST 128
#define ICMPV6_ECHO_REPLY 129

struct entry {
	uint8_t l4;             /* IPPROTO_* */
	union ctl_addr src, dst;
	uint16_t sport, dport;  /* host order; sport is the ICMP id */
};

struct rx {
	struct mmsghdr msgs[RX_SLOTS];
	struct iovec iov[RX_SLOTS];
	char bufs[RX_SLOTS][RX_SLOT_SIZE];
};

double ctl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double ctl_cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_nsec = 999999999L;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* SO_*BUFFORCE needs CAP_NET_ADMIN; without it, take what SO_*BUF gives. */
static int set_buf(int fd, int force_opt, int opt, size_t bytes)
{
	int v = bytes > INT_MAX / 2 ? INT_MAX / 2 : (int)bytes;

	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) == 0)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v)) == 0)
		return 0;
	return -errno;
}

int ctl_nl_open(unsigned int groups, size_t rcvbuf, size_t sndbuf)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = groups };
	int fd, err, one = 1;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	if (fd < 0)
		return -errno;
	if (rcvbuf && (err = set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, rcvbuf)) < 0)
		goto fail;
	if (sndbuf && (err = set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, sndbuf)) < 0)
		goto fail;
	/* Errors echo only the failed request's header, not the whole request. */
	(void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

int ctl_nl_send(int fd, const void *buf, size_t len)
{
	static const struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	ssize_t n;

	do
		n = sendto(fd, buf, len, 0, (const struct sockaddr *)&kernel, sizeof(kernel));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

uint64_t ctl_max_entries(const struct ctl_opts *o)
{
	uint64_t hosts;

	if (o->family == AF_INET6)
		return UINT64_MAX;
	hosts = (uint64_t)UINT32_MAX - ntohl(o->src.v4.s_addr) + 1;
	return hosts << SLOT_BITS;
}

static uint8_t entry_l4(const struct ctl_opts *o, uint64_t idx)
{
	static const uint8_t mixed[3] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP };
	enum ctl_proto p = o->proto;
	uint8_t l4;

	if (p == CTL_MIXED)
		l4 = mixed[idx % 3];
	else
		l4 = p == CTL_TCP ? IPPROTO_TCP : p == CTL_UDP ? IPPROTO_UDP : IPPROTO_ICMP;
	if (l4 == IPPROTO_ICMP && o->family == AF_INET6)
		l4 = IPPROTO_ICMPV6;
	return l4;
}

static void entry_of(const struct ctl_opts *o, uint64_t idx, struct entry *e)
{
	uint64_t host = idx >> SLOT_BITS;

	e->l4 = entry_l4(o, idx);
	e->src = o->src;
	e->dst = o->dst;
	if (o->family == AF_INET) {
		e->src.v4.s_addr = htonl(ntohl(o->src.v4.s_addr) + (uint32_t)host);
	} else {
		/* Add to the low 64 bits, big-endian, with carry between bytes. */
		unsigned int carry = 0;
		for (int b = 15; b >= 8; b--) {
			unsigned int v = e->src.v6.s6_addr[b] + (unsigned int)(host & 0xff) + carry;
			e->src.v6.s6_addr[b] = (uint8_t)v;
			carry = v >> 8;
			host >>= 8;
		}
	}
	e->sport = (uint16_t)(PORT_BASE + (idx & SLOT_MASK));
	e->dport = e->l4 == IPPROTO_TCP ? TCP_DPORT : e->l4 == IPPROTO_UDP ? UDP_DPORT : 0;
}

void ctl_describe_entry(const struct ctl_opts *o, uint64_t idx, char *out, size_t len)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	struct entry e;

	entry_of(o, idx, &e);
	inet_ntop(o->family, &e.src, s, sizeof(s));
	inet_ntop(o->family, &e.dst, d, sizeof(d));
	if (e.l4 == IPPROTO_TCP || e.l4 == IPPROTO_UDP)
		snprintf(out, len, "%s src=%s dst=%s sport=%u dport=%u",
			 e.l4 == IPPROTO_TCP ? "tcp" : "udp", s, d, e.sport, e.dport);
	else
		snprintf(out, len, "%s src=%s dst=%s id=%u",
			 e.l4 == IPPROTO_ICMP ? "icmp" : "icmpv6", s, d, e.sport);
}

static void put_tuple(struct nlmsghdr *nlh, uint16_t type, int family,
		      const struct entry *e, bool reply)
{
	const union ctl_addr *s = reply ? &e->dst : &e->src;
	const union ctl_addr *d = reply ? &e->src : &e->dst;
	struct nlattr *tuple, *nest;

	tuple = mnl_attr_nest_start(nlh, type);
	nest = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
	if (family == AF_INET) {
		mnl_attr_put(nlh, CTA_IP_V4_SRC, sizeof(s->v4), &s->v4);
		mnl_attr_put(nlh, CTA_IP_V4_DST, sizeof(d->v4), &d->v4);
	} else {
		mnl_attr_put(nlh, CTA_IP_V6_SRC, sizeof(s->v6), &s->v6);
		mnl_attr_put(nlh, CTA_IP_V6_DST, sizeof(d->v6), &d->v6);
	}
	mnl_attr_nest_end(nlh, nest);

	nest = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
	mnl_attr_put_u8(nlh, CTA_PROTO_NUM, e->l4);
	switch (e->l4) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		mnl_attr_put_u16(nlh, CTA_PROTO_SRC_PORT, htons(reply ? e->dport : e->sport));
		mnl_attr_put_u16(nlh, CTA_PROTO_DST_PORT, htons(reply ? e->sport : e->dport));
		break;
	case IPPROTO_ICMP:
		mnl_attr_put_u16(nlh, CTA_PROTO_ICMP_ID, htons(e->sport));
		mnl_attr_put_u8(nlh, CTA_PROTO_ICMP_TYPE, reply ? ICMP_ECHO_REPLY : ICMP_ECHO_REQUEST);
		mnl_attr_put_u8(nlh, CTA_PROTO_ICMP_CODE, 0);
		break;
	case IPPROTO_ICMPV6:
		mnl_attr_put_u16(nlh, CTA_PROTO_ICMPV6_ID, htons(e->sport));
		mnl_attr_put_u8(nlh, CTA_PROTO_ICMPV6_TYPE,
				reply ? ICMPV6_ECHO_REPLY : ICMPV6_ECHO_REQUEST);
		mnl_attr_put_u8(nlh, CTA_PROTO_ICMPV6_CODE, 0);
		break;
	}
	mnl_attr_nest_end(nlh, nest);
	mnl_attr_nest_end(nlh, tuple);
}

static struct nlmsghdr *put_request(char *buf, uint8_t msg_type, uint16_t flags,
				    int family, uint32_t seq)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *nfg;

	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | msg_type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = (uint8_t)family;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = 0;
	return nlh;
}

/* Writes the request for entry `idx` at `buf`; returns its length. */
static size_t build_request(char *buf, const struct ctl_opts *o, enum ctl_op op,
			    uint64_t idx, uint32_t seq)
{
	uint16_t flags = o->ack ? NLM_F_ACK : 0;
	struct nlmsghdr *nlh;
	struct nlattr *pi, *tcp;
	struct entry e;

	entry_of(o, idx, &e);
	if (op == CTL_OP_CREATE)
		flags |= NLM_F_CREATE | NLM_F_EXCL;
	nlh = put_request(buf, op == CTL_OP_DELETE ? IPCTNL_MSG_CT_DELETE : IPCTNL_MSG_CT_NEW,
			  flags, o->family, seq);
	put_tuple(nlh, CTA_TUPLE_ORIG, o->family, &e, false);
	if (o->has_zone)
		mnl_attr_put_u16(nlh, CTA_ZONE, htons(o->zone));

	switch (op) {
	case CTL_OP_CREATE:
		/* The kernel refuses a create without the reply tuple or a
		 * timeout.  It also answers EBUSY when CTA_STATUS would change
		 * an unchangeable bit: the entry it builds is already CONFIRMED
		 * (6.x), so the bit must be set here as conntrack -I does. */
		put_tuple(nlh, CTA_TUPLE_REPLY, o->family, &e, true);
		mnl_attr_put_u32(nlh, CTA_STATUS,
				 htonl(IPS_SEEN_REPLY | IPS_ASSURED | IPS_CONFIRMED));
		mnl_attr_put_u32(nlh, CTA_TIMEOUT, htonl(o->timeout));
		if (o->has_mark)
			mnl_attr_put_u32(nlh, CTA_MARK, htonl(o->mark));
		if (e.l4 == IPPROTO_TCP) {
			pi = mnl_attr_nest_start(nlh, CTA_PROTOINFO);
			tcp = mnl_attr_nest_start(nlh, CTA_PROTOINFO_TCP);
			mnl_attr_put_u8(nlh, CTA_PROTOINFO_TCP_STATE, o->tcp_state);
			mnl_attr_nest_end(nlh, tcp);
			mnl_attr_nest_end(nlh, pi);
		}
		break;
	case CTL_OP_UPDATE:
		mnl_attr_put_u32(nlh, CTA_TIMEOUT, htonl(o->timeout));
		mnl_attr_put_u32(nlh, CTA_MARK, htonl(o->mark));
		break;
	case CTL_OP_DELETE:
		break;
	}
	return nlh->nlmsg_len;
}

static struct rx *rx_new(void)
{
	struct rx *rx = malloc(sizeof(*rx));

	if (!rx)
		return NULL;
	for (int i = 0; i < RX_SLOTS; i++) {
		rx->iov[i] = (struct iovec){ .iov_base = rx->bufs[i], .iov_len = RX_SLOT_SIZE };
		rx->msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &rx->iov[i], .msg_iovlen = 1 };
	}
	return rx;
}

static void record_error(struct ctl_result *r, int err, uint64_t idx)
{
	r->failed++;
	r->errors[err > 0 && err < CTL_ERRNO_SLOTS ? err : CTL_ERRNO_SLOTS - 1]++;
	if (r->first_failed < 0) {
		r->first_failed = (int64_t)idx;
		r->first_errno = err;
	}
}

/*
 * Reads every reply queued for the batch just sent.  Everything is queued
 * by the time sendmsg() returned, so an empty socket means we have all of
 * them; in ACK mode, the ones missing then were dropped (our buffer was
 * full) and their outcome is unknown.
 */
static int drain_replies(int fd, struct rx *rx, const struct ctl_opts *o, uint32_t base,
			 uint64_t expected, struct ctl_result *r)
{
	uint64_t replies = 0;

	for (;;) {
		int n = recvmmsg(fd, rx->msgs, RX_SLOTS, MSG_DONTWAIT, NULL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == ENOBUFS) {
				r->overruns++;
				continue;
			}
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			const struct nlmsghdr *nlh = (const void *)rx->bufs[i];
			int len = (int)rx->msgs[i].msg_len;

			for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
				const struct nlmsgerr *e;
				uint64_t idx;

				if (nlh->nlmsg_type != NLMSG_ERROR ||
				    nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					continue;
				e = mnl_nlmsg_get_payload(nlh);
				idx = (uint32_t)(e->msg.nlmsg_seq - base);
				replies++;
				if (e->error == 0)
					r->ok++;
				else
					record_error(r, -e->error, o->offset + idx);
			}
		}
	}
	if (o->ack && replies < expected)
		r->unreported += expected - replies;
	return 0;
}

int ctl_run_batch(const struct ctl_opts *o, enum ctl_op op, struct ctl_result *r)
{
	size_t cap = o->batch_bytes < MSG_MAX ? MSG_MAX : o->batch_bytes;
	uint64_t per_batch = UINT64_MAX;
	uint32_t base = (uint32_t)time(NULL) << 20;
	struct rx *rx = NULL;
	char *buf = NULL;
	double start, cpu_start;
	int fd, err = 0;

	memset(r, 0, sizeof(*r));
	r->first_failed = -1;
	/* With --rate, send about one millisecond's worth at a time. */
	if (o->rate > 0)
		per_batch = o->rate >= 1000 ? (uint64_t)(o->rate / 1000) : 1;

	fd = ctl_nl_open(0, o->rcvbuf, cap + 65536);
	if (fd < 0)
		return fd;
	buf = malloc(cap);
	rx = rx_new();
	if (!buf || !rx) {
		err = -ENOMEM;
		goto out;
	}

	start = ctl_now();
	cpu_start = ctl_cpu_seconds();
	for (uint64_t i = 0; i < o->n;) {
		uint64_t count = 0;
		size_t len = 0;

		if (o->rate > 0)
			sleep_until(start + (double)i / o->rate);
		while (i < o->n && count < per_batch && len + MSG_MAX <= cap) {
			len += build_request(buf + len, o, op, o->offset + i, base + (uint32_t)i);
			i++;
			count++;
		}
		err = ctl_nl_send(fd, buf, len);
		if (err < 0)
			goto out;
		r->sent += count;
		err = drain_replies(fd, rx, o, base, count, r);
		if (err < 0)
			goto out;
	}
	r->elapsed = ctl_now() - start;
	r->cpu = ctl_cpu_seconds() - cpu_start;
	if (!o->ack)
		r->ok = r->sent - r->failed;
out:
	free(rx);
	free(buf);
	close(fd);
	return err;
}

/* Sends one request and calls `cb` for every reply message until the
 * answer is complete (NLMSG_DONE for a dump, else the first reply). */
typedef int (*reply_cb)(const struct nlmsghdr *nlh, void *data);

static int transact(char *req, size_t reqlen, bool dump, reply_cb cb, void *data)
{
	size_t bufsize = 1 << 17;
	char *buf = malloc(bufsize);
	int fd, err = 0;
	bool done = false;

	if (!buf)
		return -ENOMEM;
	fd = ctl_nl_open(0, 1 << 22, 0);
	if (fd < 0) {
		free(buf);
		return fd;
	}
	err = ctl_nl_send(fd, req, reqlen);
	while (!err && !done) {
		ssize_t n = recv(fd, buf, bufsize, 0);
		const struct nlmsghdr *nlh = (const void *)buf;
		int len;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		len = (int)n;
		for (; !done && mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
			if (nlh->nlmsg_type == NLMSG_DONE) {
				done = true;
			} else if (nlh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
				err = e->error;
				done = true;
			} else {
				err = cb(nlh, data);
				done = err != 0 || !dump;
			}
		}
	}
	close(fd);
	free(buf);
	return err;
}

static int count_one(const struct nlmsghdr *nlh, void *data)
{
	if ((nlh->nlmsg_type & 0xff) == IPCTNL_MSG_CT_NEW)
		(*(uint64_t *)data)++;
	return 0;
}

int ctl_count_dump(int family, uint64_t *count, double *elapsed)
{
	char req[MNL_SOCKET_BUFFER_SIZE];
	double start = ctl_now();
	struct nlmsghdr *nlh;
	int err;

	*count = 0;
	nlh = put_request(req, IPCTNL_MSG_CT_GET, NLM_F_DUMP, family, 1);
	err = transact(req, nlh->nlmsg_len, true, count_one, count);
	*elapsed = ctl_now() - start;
	return err;
}

struct stats {
	uint64_t entries, max;
	bool seen;
};

static int stats_attr(const struct nlattr *a, void *data)
{
	struct stats *s = data;

	if (mnl_attr_get_payload_len(a) < sizeof(uint32_t))
		return MNL_CB_OK;
	if (mnl_attr_get_type(a) == CTA_STATS_GLOBAL_ENTRIES) {
		s->entries = ntohl(mnl_attr_get_u32(a));
		s->seen = true;
	} else if (mnl_attr_get_type(a) == CTA_STATS_GLOBAL_MAX_ENTRIES) {
		s->max = ntohl(mnl_attr_get_u32(a));
	}
	return MNL_CB_OK;
}

static int stats_reply(const struct nlmsghdr *nlh, void *data)
{
	if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), stats_attr, data) < 0)
		return -EPROTO;
	return 0;
}

int ctl_count_stats(uint64_t *count, uint64_t *max)
{
	char req[MNL_SOCKET_BUFFER_SIZE];
	struct stats s = { 0 };
	struct nlmsghdr *nlh;
	int err;

	nlh = put_request(req, IPCTNL_MSG_CT_GET_STATS, 0, AF_UNSPEC, 1);
	err = transact(req, nlh->nlmsg_len, false, stats_reply, &s);
	if (!err && !s.seen)
		err = -EPROTO;
	*count = s.entries;
	*max = s.max;
	return err;
}

static int no_reply(const struct nlmsghdr *nlh, void *data)
{
	(void)nlh;
	(void)data;
	return 0;
}

int ctl_flush(double *elapsed)
{
	char req[MNL_SOCKET_BUFFER_SIZE];
	double start = ctl_now();
	struct nlmsghdr *nlh;
	int err;

	/* A delete without a tuple flushes; AF_UNSPEC covers both families. */
	nlh = put_request(req, IPCTNL_MSG_CT_DELETE, NLM_F_ACK, AF_UNSPEC, 1);
	err = transact(req, nlh->nlmsg_len, false, no_reply, NULL);
	*elapsed = ctl_now() - start;
	return err;
}
