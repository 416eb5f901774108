/*
 * get.c - one conntrack read back from the kernel by its original tuple,
 * synchronously.
 *
 * ctnetlink answers a GET while the request is being sent (kernel.h), so
 * the answer is already queued when sendto() returns and one recv() takes
 * it: a few microseconds, no waiting on the loop.  Used where an event
 * cannot tell us something: the kernel changes a connection's sequence
 * adjustment (a NAT helper rewriting an FTP PORT command) without any
 * event, so the owner reads the master again when its related flow
 * appears.
 */
#include "kernel/kernel.h"
#include "kernel/nfqueue.h"
#include "nl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#define GET_BUF (16 * 1024)

struct kernel_getter {
	struct mnl_socket *nl;
	uint32_t portid, seq;
	struct flow_full probe;
	uint8_t buf[GET_BUF];
};

struct kernel_getter *kernel_getter_new(int *err)
{
	struct kernel_getter *g = calloc(1, sizeof(*g));

	if (!g) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!(g->nl = nl_open(0, err))) {
		free(g);
		return NULL;
	}
	g->portid = mnl_socket_get_portid(g->nl);
	return g;
}

void kernel_getter_free(struct kernel_getter *g)
{
	if (!g)
		return;
	mnl_socket_close(g->nl);
	free(g);
}

uint32_t kernel_getter_portid(const struct kernel_getter *g)
{
	return g->portid;
}

/* Drop what an earlier, abandoned request may have left on the socket. */
static void drain(struct kernel_getter *g)
{
	for (int i = 0; i < 16; i++)
		if (recv(mnl_socket_get_fd(g->nl), g->buf, sizeof(g->buf), MSG_DONTWAIT) < 0)
			return;
}

/* CTA_TUPLE_ORIG of a request built by kernel_ct_build() becomes CTA_TUPLE_REPLY. */
static void name_by_reply(struct nlmsghdr *nlh)
{
	struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == CTA_TUPLE_ORIG) {
			a->nla_type = (uint16_t)((a->nla_type & ~NLA_TYPE_MASK) | CTA_TUPLE_REPLY);
			return;
		}
}

/* ctnetlink finds an entry by either tuple (and the zone). */
static int get(struct kernel_getter *g, const struct flow_tuple *t, bool reply, struct flow_full *out)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)g->buf;
	enum kernel_event ev;
	ssize_t n;
	int len;

	drain(g);
	memset(&g->probe, 0, sizeof(g->probe));
	g->probe.flow.orig = *t;
	/* The tuple's ports or ICMP fields are meaningful, whichever it has. */
	g->probe.flow.attrs = FLOW_A_ZONE | FLOW_A_PORTS | FLOW_A_ICMP;
	/* The delete request names exactly the entry: the same message, with another type. */
	len = kernel_ct_build(g->buf, sizeof(g->buf), KERNEL_OP_DELETE, &g->probe, 0, 0, ++g->seq);
	if (len < 0)
		return len;
	if (reply)
		name_by_reply(nlh);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	if (mnl_socket_sendto(g->nl, g->buf, (size_t)len) < 0)
		return -errno;
	n = recv(mnl_socket_get_fd(g->nl), g->buf, sizeof(g->buf), MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	for (len = (int)n, nlh = (struct nlmsghdr *)g->buf; mnl_nlmsg_ok(nlh, len);
	     nlh = mnl_nlmsg_next(nlh, &len)) {
		if (nlh->nlmsg_seq != g->seq)
			continue;
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

			if (nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error)
				return e->error;
			continue;
		}
		return kernel_ct_parse(nlh, nlh->nlmsg_len, out, &ev) == KERNEL_OK ? 0 : -EBADMSG;
	}
	return -ENOENT;
}

int kernel_get(struct kernel_getter *g, const struct flow_tuple *orig, struct flow_full *out)
{
	return get(g, orig, false, out);
}

int kernel_get_reply(struct kernel_getter *g, const struct flow_tuple *reply, struct flow_full *out)
{
	return get(g, reply, true, out);
}
