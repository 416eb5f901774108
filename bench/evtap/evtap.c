/*
 * bench/evtap/evtap.c: an event reader that costs the firewall only what
 * its event source costs, for bench/session-rate.sh (issue 19).
 *
 *   evtap ctnetlink [--groups new,update,destroy] [--poll-us N] [--stats FILE]
 *       subscribes to ctnetlink's conntrack groups and drains them every
 *       N µs (default 500) without ever sleeping on the socket: the
 *       kernel's cost of building and queueing the events, with no
 *       wake-up of the reader by the forwarding CPU.
 *   evtap bpf --object FILE [--poll-us N] [--stats FILE]
 *       NEW and UPDATE from evtap.bpf.c's netfilter hook through a ring
 *       buffer, DESTROY from ctnetlink's destroy group alone (a destroy
 *       happens in the garbage collector or a timer, not on a packet's
 *       path), drained the same way.
 *   evtap bpf --probe --object FILE
 *       exits 0 if this kernel loads and links the hook, 1 if not.
 *
 * Both run in the firewall's network namespace (the hook and the
 * subscription are per namespace) until SIGTERM, then write one JSON
 * object of counts to --stats (or stderr).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/netlink.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_compat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* Newer than libbpf 1.1's and linux-libc-dev 6.1's headers: the values are ABI. */
#define EVTAP_PROG_TYPE_NETFILTER 32
#define EVTAP_ATTACH_NETFILTER 45
/* after everything but the confirmation: INT_MAX, IPv6 input's INT_MAX - 1 */
#define EVTAP_NF_PRIO (INT_MAX - 1)

static volatile sig_atomic_t stop;
static unsigned long long n_new, n_update, n_nl, n_overruns, n_ring_bytes;

static void on_signal(int s)
{
	(void)s;
	stop = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "evtap: %s\n", what);
	exit(2);
}

static int nl_open(unsigned groups)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = groups };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	int size = 8 << 20;

	if (fd < 0)
		die("cannot open a netfilter netlink socket");
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("cannot subscribe to the conntrack groups");
	return fd;
}

static void nl_drain(int fd)
{
	static char buf[1 << 16];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0) {
			for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
			     h = NLMSG_NEXT(h, n))
				n_nl++;
		} else if (n < 0 && errno == ENOBUFS) {
			n_overruns++;
		} else {
			return;
		}
	}
}

static unsigned parse_groups(const char *list)
{
	unsigned g = 0;
	char *copy = strdup(list), *save = NULL;

	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "new"))
			g |= NF_NETLINK_CONNTRACK_NEW;
		else if (!strcmp(w, "update"))
			g |= NF_NETLINK_CONNTRACK_UPDATE;
		else if (!strcmp(w, "destroy"))
			g |= NF_NETLINK_CONNTRACK_DESTROY;
		else {
			fprintf(stderr, "evtap: unknown group '%s' (new, update, destroy)\n", w);
			exit(2);
		}
	}
	free(copy);
	return g;
}

static int on_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	n_ring_bytes += size;
	if (*(unsigned char *)data == 1)
		n_new++;
	else
		n_update++;
	return 0;
}

/* libbpf 1.1 has no netfilter link: BPF_LINK_CREATE by hand. */
static int nf_link(int prog, unsigned pf, unsigned hook, int prio)
{
	union bpf_attr attr;
	__u32 *raw = (__u32 *)&attr;

	memset(&attr, 0, sizeof(attr));
	attr.link_create.prog_fd = prog;
	attr.link_create.attach_type = EVTAP_ATTACH_NETFILTER;
	/* link_create.netfilter: pf, hooknum, priority, flags after the four common words */
	raw[4] = pf;
	raw[5] = hook;
	raw[6] = (__u32)prio;
	raw[7] = 0;
	return (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
}

static struct ring_buffer *bpf_open(const char *object, int *lost_fd)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct ring_buffer *rb;
	int fd;

	libbpf_set_print(NULL);
	obj = bpf_object__open_file(object, NULL);
	if (!obj)
		return NULL;
	prog = bpf_object__find_program_by_name(obj, "evtap");
	if (!prog)
		return NULL;
	bpf_program__set_type(prog, EVTAP_PROG_TYPE_NETFILTER);
	bpf_program__set_expected_attach_type(prog, EVTAP_ATTACH_NETFILTER);
	if (bpf_object__load(obj))
		return NULL;
	fd = bpf_program__fd(prog);
	if (nf_link(fd, NFPROTO_IPV4, NF_INET_LOCAL_IN, EVTAP_NF_PRIO) < 0 ||
	    nf_link(fd, NFPROTO_IPV4, NF_INET_POST_ROUTING, EVTAP_NF_PRIO) < 0)
		return NULL;
	/* IPv6 may be off in this namespace: its hooks are optional */
	nf_link(fd, NFPROTO_IPV6, NF_INET_LOCAL_IN, EVTAP_NF_PRIO - 1);
	nf_link(fd, NFPROTO_IPV6, NF_INET_POST_ROUTING, EVTAP_NF_PRIO);
	rb = ring_buffer__new(bpf_map__fd(bpf_object__find_map_by_name(obj, "events")), on_record, NULL, NULL);
	*lost_fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "lost"));
	return rb;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *object = NULL, *stats = NULL, *groups = "new,update,destroy";
	long poll_us = 500;
	bool probe = false;
	struct ring_buffer *rb = NULL;
	int nl, lost_fd = -1;
	unsigned long long lost = 0;
	FILE *out = stderr;

	if (strcmp(mode, "ctnetlink") && strcmp(mode, "bpf"))
		die("usage: evtap ctnetlink|bpf [--groups LIST] [--object FILE] [--poll-us N] [--stats FILE] [--probe]");
	for (int i = 2; i < argc; i++) {
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--probe"))
			probe = true;
		else if (!next)
			die("an option wants a value");
		else if (!strcmp(argv[i], "--groups"))
			groups = argv[++i];
		else if (!strcmp(argv[i], "--object"))
			object = argv[++i];
		else if (!strcmp(argv[i], "--stats"))
			stats = argv[++i];
		else if (!strcmp(argv[i], "--poll-us")) {
			poll_us = atol(argv[++i]);
			if (poll_us < 10 || poll_us > 100000)
				die("--poll-us wants 10..100000");
		} else {
			fprintf(stderr, "evtap: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!strcmp(mode, "bpf")) {
		if (!object)
			die("bpf mode wants --object FILE (evtap.bpf.o)");
		rb = bpf_open(object, &lost_fd);
		if (probe)
			return rb ? 0 : 1;
		if (!rb) {
			fprintf(stderr, "evtap: this kernel does not load or link %s as a netfilter hook: %s\n",
				object, strerror(errno));
			return 1;
		}
		nl = nl_open(NF_NETLINK_CONNTRACK_DESTROY);
	} else {
		nl = nl_open(parse_groups(groups));
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	while (!stop) {
		struct timespec ts = { 0, poll_us * 1000 };

		nanosleep(&ts, NULL);
		if (rb)
			ring_buffer__consume(rb);
		nl_drain(nl);
	}
	if (lost_fd >= 0) {
		__u32 zero = 0;

		bpf_map_lookup_elem(lost_fd, &zero, &lost);
	}
	if (stats && !(out = fopen(stats, "w")))
		die("cannot write the --stats file");
	fprintf(out, "{\"mode\": \"%s\", \"new\": %llu, \"update\": %llu, \"ring_bytes\": %llu, \"ring_lost\": %llu, "
		"\"netlink_messages\": %llu, \"netlink_overruns\": %llu}\n",
		mode, n_new, n_update, n_ring_bytes, lost, n_nl, n_overruns);
	return 0;
}
