/*
 * dump.c - a conntrack table dump, read in slices on the loop.
 *
 * The kernel fills the next part of a dump (one skb of up to 32 KiB, about
 * 200 entries) each time the socket is read, so a dump naturally advances
 * at the pace we read it: a slice is a bounded number of reads, and the
 * level-triggered socket brings us back on the next loop iteration.  A
 * pulled dump (kernel_dump_open()) is not on the loop: its owner takes the
 * entries one by one, and a read happens only when the part in hand is
 * used up, so the dump goes exactly as fast as its consumer.
 */
#include "kernel/kernel.h"
#include "nl.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#include "loop/log.h"
#include "loop/loop.h"

#define DUMP_BUF_SIZE (64 * 1024)
#define DUMP_DEFAULT_SLICE 16

struct kernel_dump {
	struct loop *loop;
	struct mnl_socket *nl;
	int fd;
	uint32_t portid;
	uint32_t seq;
	unsigned per_slice;
	struct kernel_dump_cb cb;
	void *arg;
	bool dispatching;
	bool cancelled;
	bool interrupted;
	size_t off;                     /* the next message of the part in hand (buf) ... */
	int left;                       /* ... and the bytes from there on */
	uint64_t start_us;
	struct kernel_dump_stats st;
	struct flow_full ff;
	struct flow_exp x;
	uint8_t buf[DUMP_BUF_SIZE];
};

static void dump_free(struct kernel_dump *d)
{
	if (d->loop)
		loop_unwatch(d->loop, d->fd);
	mnl_socket_close(d->nl);
	free(d);
}

static void finish(struct kernel_dump *d, int err)
{
	d->st.elapsed_us = nl_now_us() - d->start_us;
	if (d->loop)
		loop_unwatch(d->loop, d->fd);
	d->cancelled = true;            /* no more callbacks, whatever on_done does */
	d->cb.on_done(d->arg, err, &d->st);
}

/*
 * Deliver entries of the part in hand, at most `max` (*delivered counts
 * them), keeping the place of the next one.  Returns 1 when the dump is
 * over (done, error or cancelled).
 */
static int deliver(struct kernel_dump *d, unsigned max, unsigned *delivered)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)(d->buf + d->off);
	int len = d->left;

	for (; *delivered < max && mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
		enum kernel_event kind;
		enum kernel_reason why;

		if (nlh->nlmsg_seq != d->seq || nlh->nlmsg_pid != d->portid)
			continue;       /* not an answer to our request */
		if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
			d->interrupted = true;
		if (nlh->nlmsg_type == NLMSG_DONE) {
			finish(d, d->interrupted ? -EINTR : 0);
			return 1;
		}
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

			if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)) || e->error == 0)
				continue;
			finish(d, e->error);
			return 1;
		}
		if (nlh->nlmsg_type < NLMSG_MIN_TYPE)
			continue;
		if (d->cb.on_exp)
			why = kernel_exp_parse(nlh, nlh->nlmsg_len, &d->x, &kind);
		else
			why = kernel_ct_parse(nlh, nlh->nlmsg_len, &d->ff, &kind);
		if (why != KERNEL_OK) {
			d->st.malformed++;
			log_debug("%s dump entry dropped: %s", d->cb.on_exp ? "expectation" : "conntrack",
				  kernel_reason_name(why));
			continue;
		}
		d->st.flows++;
		(*delivered)++;
		if (d->cb.on_exp)
			d->cb.on_exp(d->arg, &d->x);
		else
			d->cb.on_flow(d->arg, &d->ff);
		if (d->cancelled)
			return 1;
	}
	d->off = (size_t)((const uint8_t *)nlh - d->buf);
	d->left = mnl_nlmsg_ok(nlh, len) ? len : 0;
	return 0;
}

/*
 * Read the next part of the dump into buf.  Returns 1 when there is one,
 * 0 when the kernel has nothing ready (or the read was not for us), -1
 * when the dump is over (finish() was called).
 */
static int read_part(struct kernel_dump *d)
{
	struct sockaddr_nl from;
	struct iovec iov = { d->buf, sizeof(d->buf) };
	struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	d->st.recv_calls++;
	do
		n = recvmsg(d->fd, &mh, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN)
			return 0;
		finish(d, -errno);
		return -1;
	}
	if (n == 0 || mh.msg_namelen != sizeof(from) || from.nl_pid != 0)
		return 0;
	if (mh.msg_flags & MSG_TRUNC) {
		finish(d, -EMSGSIZE);
		return -1;
	}
	d->off = 0;
	d->left = (int)n;
	return 1;
}

static void on_readable(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct kernel_dump *d = arg;
	bool over = false;

	(void)loop;
	(void)fd;
	(void)events;
	d->dispatching = true;
	for (unsigned i = 0; i < d->per_slice && !over; i++) {
		unsigned n = 0;
		int r = read_part(d);

		if (r < 0)
			over = true;
		else if (r == 0)
			break;
		else
			over = deliver(d, UINT_MAX, &n);
	}
	d->dispatching = false;
	if (d->cancelled)
		dump_free(d);
}

unsigned kernel_dump_pull(struct kernel_dump *d, unsigned max)
{
	unsigned n = 0;
	bool over = false;

	d->dispatching = true;
	while (n < max && !over) {
		int r = d->left > 0 ? 1 : read_part(d);

		if (r < 0)
			over = true;
		else if (r == 0)
			break;
		else
			over = deliver(d, max, &n);
	}
	d->dispatching = false;
	if (d->cancelled)
		dump_free(d);
	return n;
}

/* A dump requested on its own socket; watched on `loop` unless NULL (pulled). */
static struct kernel_dump *dump_new(struct loop *loop, int family, unsigned recv_per_slice,
				    const struct kernel_dump_cb *cb, void *arg, int *err)
{
	struct kernel_dump *d;
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;
	char req[64];
	int e;

	if (!cb || !(cb->on_flow || cb->on_exp) || !cb->on_done ||
	    (family != AF_UNSPEC && family != AF_INET && family != AF_INET6)) {
		*err = -EINVAL;
		return NULL;
	}
	if (!(d = calloc(1, sizeof(*d)))) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!(d->nl = nl_open(0, &e))) {
		free(d);
		*err = e;
		return NULL;
	}
	d->loop = loop;
	d->fd = mnl_socket_get_fd(d->nl);
	d->portid = mnl_socket_get_portid(d->nl);
	d->per_slice = recv_per_slice ? recv_per_slice : DUMP_DEFAULT_SLICE;
	d->cb = *cb;
	d->arg = arg;
	d->seq = (uint32_t)nl_now_us();
	d->start_us = nl_now_us();
	/* Room for the dump's skbs even when the loop is slow to read. */
	nl_set_rcvbuf(d->fd, 1u << 20);

	nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = cb->on_exp ? (NFNL_SUBSYS_CTNETLINK_EXP << 8) | IPCTNL_MSG_EXP_GET
				     : (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = d->seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = (uint8_t)family;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = 0;
	if (mnl_socket_sendto(d->nl, nlh, nlh->nlmsg_len) < 0) {
		*err = -errno;
		mnl_socket_close(d->nl);
		free(d);
		return NULL;
	}
	if (loop && (e = loop_watch(loop, d->fd, LOOP_READ, on_readable, d)) < 0) {
		*err = e;
		mnl_socket_close(d->nl);
		free(d);
		return NULL;
	}
	*err = 0;
	return d;
}

struct kernel_dump *kernel_dump_start(struct loop *loop, int family, unsigned recv_per_slice,
				      const struct kernel_dump_cb *cb, void *arg, int *err)
{
	if (!loop) {
		*err = -EINVAL;
		return NULL;
	}
	return dump_new(loop, family, recv_per_slice, cb, arg, err);
}

struct kernel_dump *kernel_dump_open(int family, const struct kernel_dump_cb *cb, void *arg, int *err)
{
	return dump_new(NULL, family, 0, cb, arg, err);
}

void kernel_dump_cancel(struct kernel_dump *d)
{
	if (!d)
		return;
	if (d->dispatching) {
		d->cancelled = true;
		return;
	}
	dump_free(d);
}
