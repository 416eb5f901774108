/*
 * ctload-listen.c - one ctnetlink event listener, to measure how many
 * events per second a single netlink socket can take in.
 *
 * The kernel sends one datagram per event, so recvmmsg() takes up to
 * LISTEN_SLOTS of them per syscall; a large SO_RCVBUFFORCE absorbs bursts.
 * When the buffer still overflows, the kernel drops events and reports
 * ENOBUFS once on the next receive: we count those overruns.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_compat.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>

#include "ctload.h"

#define LISTEN_SLOTS 256
#define LISTEN_SLOT_SIZE 4096
/* How often the loop wakes up without events to check its deadlines. */
#define LISTEN_TICK_US 100000

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void count_event(const struct nlmsghdr *nlh, struct ctl_listen_result *r)
{
	if ((nlh->nlmsg_type >> 8) != NFNL_SUBSYS_CTNETLINK) {
		r->other++;
		return;
	}
	switch (nlh->nlmsg_type & 0xff) {
	case IPCTNL_MSG_CT_NEW:
		/* NEW and UPDATE share the message type; the kernel marks a new
		 * entry with NLM_F_CREATE|NLM_F_EXCL. */
		if (nlh->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL))
			r->new_events++;
		else
			r->update_events++;
		break;
	case IPCTNL_MSG_CT_DELETE:
		r->destroy_events++;
		break;
	default:
		r->other++;
	}
}

static uint64_t total(const struct ctl_listen_result *r)
{
	return r->new_events + r->update_events + r->destroy_events;
}

int ctl_listen(const struct ctl_opts *o, struct ctl_listen_result *r)
{
	struct timeval tick = { .tv_sec = 0, .tv_usec = LISTEN_TICK_US };
	struct sigaction sa = { .sa_handler = on_stop_signal };
	struct mmsghdr *msgs;
	struct iovec *iov;
	char *bufs;
	double start, cpu_start, first = 0, last = 0;
	socklen_t optlen = sizeof(r->rcvbuf);
	int fd, err = 0;

	memset(r, 0, sizeof(*r));
	fd = ctl_nl_open(NF_NETLINK_CONNTRACK_NEW | NF_NETLINK_CONNTRACK_UPDATE |
			 NF_NETLINK_CONNTRACK_DESTROY, o->rcvbuf, 0);
	if (fd < 0)
		return fd;
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &r->rcvbuf, &optlen) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}

	msgs = calloc(LISTEN_SLOTS, sizeof(*msgs));
	iov = calloc(LISTEN_SLOTS, sizeof(*iov));
	bufs = malloc((size_t)LISTEN_SLOTS * LISTEN_SLOT_SIZE);
	if (!msgs || !iov || !bufs) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < LISTEN_SLOTS; i++) {
		iov[i] = (struct iovec){ .iov_base = bufs + (size_t)i * LISTEN_SLOT_SIZE,
					 .iov_len = LISTEN_SLOT_SIZE };
		msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}

	/* No SA_RESTART: a signal interrupts the blocking receive. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* The harness starts the load once it reads this line. */
	fprintf(stderr, "ctload: listening (rcvbuf %d bytes)\n", r->rcvbuf);
	fflush(stderr);

	start = ctl_now();
	cpu_start = ctl_cpu_seconds();
	for (;;) {
		double now = ctl_now();
		int n;

		if (stop_requested) {
			r->interrupted = true;
			break;
		}
		if (o->seconds > 0 && now - start >= o->seconds)
			break;
		if (o->idle > 0 && first > 0 && now - last >= o->idle)
			break;
		if (o->until_count && total(r) >= o->until_count)
			break;

		n = recvmmsg(fd, msgs, LISTEN_SLOTS, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				r->enobufs++;
				continue;
			}
			err = -errno;
			break;
		}
		last = ctl_now();
		if (first == 0)
			first = last;
		for (int i = 0; i < n; i++) {
			const struct nlmsghdr *nlh = iov[i].iov_base;
			int len = (int)msgs[i].msg_len;

			if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
				r->truncated++;
				if (len > LISTEN_SLOT_SIZE)
					len = LISTEN_SLOT_SIZE;
			}
			for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len))
				count_event(nlh, r);
		}
	}
	r->wall = ctl_now() - start;
	r->cpu = ctl_cpu_seconds() - cpu_start;
	r->span = first > 0 ? last - first : 0;
out:
	free(bufs);
	free(iov);
	free(msgs);
	close(fd);
	return err;
}
