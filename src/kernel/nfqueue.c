/*
 * nfqueue.c - one NFQUEUE on the loop: packets in, verdicts out (batched).
 *
 * The configuration is sent and acknowledged synchronously at open (the
 * kernel answers while the request is sent).  Packets are read as many per
 * wake-up as the socket holds; verdicts are concatenated into one buffer
 * and sent by one sendto() (nfnetlink handles each message of it in turn).
 */
#include "kernel/nfqueue.h"
#include "attr.h"
#include "nl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>

#include "loop/loop.h"

/* Bytes of each packet copied without the kernel's conntrack: IPv6 header and an L4 header's start. */
#define COPY_RANGE 64u
#define RECV_BUF (64u * 1024u)
#define VERDICT_BUF (32u * 1024u)
/* Room for one verdict message (header, nfgenmsg, NFQA_VERDICT_HDR). */
#define VERDICT_LEN 40u
/* Reads per wake-up: the loop serves the others in between. */
#define READS_MAX 64

struct kernel_nfqueue {
	struct loop *loop;
	struct mnl_socket *nl;
	int fd;
	uint16_t num;
	struct kernel_nfqueue_cb cb;
	void *arg;
	uint32_t seq;
	struct kernel_nfqueue_stats st;
	size_t vlen;
	struct kernel_nfqueue_packet pkt;
	uint8_t vbuf[VERDICT_BUF];
	uint8_t buf[RECV_BUF];
};

static struct nlmsghdr *put_header(void *buf, uint16_t type, uint16_t res_id, uint32_t seq, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *nfg;

	nlh->nlmsg_type = (NFNL_SUBSYS_QUEUE << 8) | type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = htons(res_id);
	return nlh;
}

/* Send one configuration request and wait for its acknowledgement (synchronous: see above). */
static int config_request(struct kernel_nfqueue *q, struct nlmsghdr *nlh)
{
	ssize_t n;
	int len;

	if (mnl_socket_sendto(q->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	n = recv(q->fd, q->buf, sizeof(q->buf), MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	for (len = (int)n, nlh = (struct nlmsghdr *)q->buf; mnl_nlmsg_ok(nlh, len);
	     nlh = mnl_nlmsg_next(nlh, &len)) {
		if (nlh->nlmsg_type == NLMSG_ERROR && nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr)))
			return ((const struct nlmsgerr *)mnl_nlmsg_get_payload(nlh))->error;
	}
	return -EPROTO;
}

static int bind_queue(struct kernel_nfqueue *q)
{
	uint8_t buf[256];
	struct nlmsghdr *nlh = put_header(buf, NFQNL_MSG_CONFIG, q->num, ++q->seq, NLM_F_ACK);
	struct nfqnl_msg_config_cmd cmd = { .command = NFQNL_CFG_CMD_BIND };

	mnl_attr_put(nlh, NFQA_CFG_CMD, sizeof(cmd), &cmd);
	return config_request(q, nlh);
}

/* Copy mode, queue length and flags; with or without the packets' conntrack. */
static int set_params(struct kernel_nfqueue *q, uint32_t maxlen, bool with_ct)
{
	uint8_t buf[256];
	struct nlmsghdr *nlh = put_header(buf, NFQNL_MSG_CONFIG, q->num, ++q->seq, NLM_F_ACK);
	struct nfqnl_msg_config_params params = {
		.copy_range = htonl(with_ct ? 0 : COPY_RANGE),
		.copy_mode = with_ct ? NFQNL_COPY_META : NFQNL_COPY_PACKET,
	};
	uint32_t flags = NFQA_CFG_F_FAIL_OPEN | (with_ct ? NFQA_CFG_F_CONNTRACK : 0);
	uint32_t mask = NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_CONNTRACK;

	mnl_attr_put(nlh, NFQA_CFG_PARAMS, sizeof(params), &params);
	mnl_attr_put_u32(nlh, NFQA_CFG_QUEUE_MAXLEN, htonl(maxlen));
	mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(flags));
	mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(mask));
	return config_request(q, nlh);
}

/* The addresses and ports of a packet's first bytes (IPv4, or IPv6 without extension headers). */
static bool packet_tuple(const uint8_t *p, size_t len, struct flow_tuple *t)
{
	size_t l4;

	memset(t, 0, sizeof(*t));
	if (len < 20)
		return false;
	if ((p[0] >> 4) == 4) {
		l4 = (size_t)(p[0] & 0x0f) * 4;
		if (l4 < 20)
			return false;
		t->family = AF_INET;
		t->l4proto = p[9];
		memcpy(&t->src.v4, p + 12, 4);
		memcpy(&t->dst.v4, p + 16, 4);
	} else if ((p[0] >> 4) == 6 && len >= 40) {
		l4 = 40;
		t->family = AF_INET6;
		t->l4proto = p[6];
		memcpy(t->src.bytes, p + 8, 16);
		memcpy(t->dst.bytes, p + 24, 16);
	} else {
		return false;
	}
	switch (t->l4proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
	case IPPROTO_DCCP:
		if (len < l4 + 4)
			return false;
		memcpy(&t->l4.port.sport, p + l4, 2);
		memcpy(&t->l4.port.dport, p + l4 + 2, 2);
		return true;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (len < l4 + 6)
			return false;
		t->l4.icmp.type = p[l4];
		t->l4.icmp.code = p[l4 + 1];
		memcpy(&t->l4.icmp.id, p + l4 + 4, 2);
		return true;
	default:
		return false;
	}
}

static void on_message(struct kernel_nfqueue *q, const struct nlmsghdr *nlh)
{
	struct kernel_nfqueue_packet *pkt = &q->pkt;
	const struct nfgenmsg *nfg;
	const struct nlattr *a;
	bool have_id = false;

	if (nlh->nlmsg_type != ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET) ||
	    nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(*nfg)) {
		/* Acknowledgements of our verdicts: errors only (no NLM_F_ACK). */
		if (nlh->nlmsg_type == NLMSG_ERROR)
			q->st.verdict_errors++;
		return;
	}
	nfg = mnl_nlmsg_get_payload(nlh);
	pkt->has_ct = pkt->has_tuple = false;
	pkt->why = KERNEL_OK;
	mnl_attr_for_each(a, nlh, sizeof(*nfg)) {
		switch (mnl_attr_get_type(a)) {
		case NFQA_PACKET_HDR:
			if (mnl_attr_get_payload_len(a) < sizeof(struct nfqnl_msg_packet_hdr))
				break;
			pkt->id = ntohl(((const struct nfqnl_msg_packet_hdr *)mnl_attr_get_payload(a))->packet_id);
			have_id = true;
			break;
		case NFQA_CT:
			pkt->why = kernel_ct_parse_nest(a, nfg->nfgen_family, &pkt->ct);
			pkt->has_ct = pkt->why == KERNEL_OK;
			break;
		case NFQA_PAYLOAD:
			pkt->has_tuple = packet_tuple(mnl_attr_get_payload(a), mnl_attr_get_payload_len(a),
						      &pkt->tuple);
			break;
		default:
			break;
		}
	}
	if (!have_id) {
		q->st.malformed++;
		return;
	}
	q->st.packets++;
	q->cb.on_packet(q->arg, pkt);
}

static void on_readable(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct kernel_nfqueue *q = arg;

	(void)loop;
	(void)events;
	for (int i = 0; i < READS_MAX; i++) {
		ssize_t n = recv(fd, q->buf, sizeof(q->buf), MSG_DONTWAIT);
		const struct nlmsghdr *nlh;
		int len;

		if (n < 0) {
			if (errno == ENOBUFS) {
				q->st.overruns++;
				continue;
			}
			return;         /* EAGAIN, or nothing we can do now */
		}
		for (len = (int)n, nlh = (const struct nlmsghdr *)q->buf; mnl_nlmsg_ok(nlh, len);
		     nlh = mnl_nlmsg_next(nlh, &len))
			on_message(q, nlh);
	}
}

struct kernel_nfqueue *kernel_nfqueue_open(struct loop *loop, uint16_t num, uint32_t maxlen,
					   const struct kernel_nfqueue_cb *cb, void *arg, int *err)
{
	struct kernel_nfqueue *q = calloc(1, sizeof(*q));
	int one = 1;

	if (!q) {
		*err = -ENOMEM;
		return NULL;
	}
	q->loop = loop;
	q->num = num;
	q->cb = *cb;
	q->arg = arg;
	if (!(q->nl = nl_open(0, err))) {
		free(q);
		return NULL;
	}
	q->fd = mnl_socket_get_fd(q->nl);
	/* A full buffer drops the packets' news, not the packets: FAIL_OPEN and bypass cover them. */
	(void)setsockopt(q->fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one));
	nl_set_rcvbuf(q->fd, 4u * 1024u * 1024u);
	*err = bind_queue(q);
	if (*err == 0) {
		*err = set_params(q, maxlen, true);
		q->st.kernel_ct = *err == 0;
		/* A kernel without CONFIG_NETFILTER_NETLINK_GLUE_CT: the packets' headers instead. */
		if (*err == -EOPNOTSUPP)
			*err = set_params(q, maxlen, false);
	}
	if (*err == 0)
		*err = loop_watch(loop, q->fd, LOOP_READ, on_readable, q);
	if (*err < 0) {
		mnl_socket_close(q->nl);
		free(q);
		return NULL;
	}
	return q;
}

void kernel_nfqueue_close(struct kernel_nfqueue *q)
{
	if (!q)
		return;
	kernel_nfqueue_flush(q);
	loop_unwatch(q->loop, q->fd);
	mnl_socket_close(q->nl);
	free(q);
}

int kernel_nfqueue_accept(struct kernel_nfqueue *q, uint32_t id)
{
	struct nlmsghdr *nlh;
	struct nfqnl_msg_verdict_hdr vh = { .verdict = htonl(NF_ACCEPT), .id = htonl(id) };
	int err = 0;

	if (q->vlen + VERDICT_LEN > sizeof(q->vbuf))
		err = kernel_nfqueue_flush(q);
	nlh = put_header(q->vbuf + q->vlen, NFQNL_MSG_VERDICT, q->num, ++q->seq, 0);
	mnl_attr_put(nlh, NFQA_VERDICT_HDR, sizeof(vh), &vh);
	q->vlen += NLMSG_ALIGN(nlh->nlmsg_len);
	q->st.verdicts++;
	return err;
}

int kernel_nfqueue_flush(struct kernel_nfqueue *q)
{
	ssize_t n;

	if (!q->vlen)
		return 0;
	n = mnl_socket_sendto(q->nl, q->vbuf, q->vlen);
	q->vlen = 0;
	return n < 0 ? -errno : 0;
}

void kernel_nfqueue_get_stats(const struct kernel_nfqueue *q, struct kernel_nfqueue_stats *st)
{
	*st = q->st;
}
