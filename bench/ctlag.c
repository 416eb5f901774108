/*
 * ctlag - the replication lag of every state, by the kernels' own clocks.
 *
 * With net.netfilter.nf_conntrack_timestamp=1, ctnetlink stamps an entry
 * it creates (CTA_TIMESTAMP_START, CLOCK_REALTIME in ns) right before it
 * inserts it, and sends the NEW event right after, in the same request.
 * On the primary A that stamp is the moment the state is born and its
 * event emitted; on a backup B that writes what it receives into its own
 * kernel (ctsyncd's HotStandby or DisableExternalCache, conntrackd's
 * DisableExternalCache) it is the moment the state is applied there.
 * Both namespaces share the one clock, so stamp(B) - stamp(A) is the lag
 * of that state, read after the run from two table dumps and matched by
 * tuple: nothing runs during the load, and nothing wakes up to take a
 * time.
 *
 * `capture` adds the time each state crossed the sync link: a packet
 * socket on B's end of the link, with the kernel's receive stamps
 * (SO_TIMESTAMPNS, also CLOCK_REALTIME), decodes the datagrams with the
 * daemon's codec.  It reads every 5 ms; the stamps are the kernel's, so
 * how late it reads does not matter.  `report --wire` then splits the lag
 * into A's part (event to the link) and B's part (link to B's kernel).
 *
 *   ctlag capture --dev IF [--port P] --out FILE [--seconds S]
 *   ctlag report --a NS --b NS [--wire FILE] [--csv FILE] [--json]
 *
 * See bench/README.md, "lag.sh".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "flow/flow.h"
#include "kernel/kernel.h"
#include "wire/format.h"
#include "wire/wire.h"

#define CAP_SLOTS 256
#define CAP_SLOT 2048
#define CAP_POLL_NS 5000000L            /* read the capture socket every 5 ms */
#define CAP_MAX_SECONDS 3600
#define DUMP_BUF (1u << 20)

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "ctlag: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* ---- records: one per state, keyed by its original tuple ----------------------------- */

struct rec {
	struct flow_tuple t;
	uint64_t a_ns, b_ns, w_ns;      /* 0: not seen */
	bool used;
};

struct recs {
	struct rec *v;
	size_t cap, n;
};

static struct rec *recs_get(struct recs *r, const struct flow_tuple *t, bool add)
{
	size_t i;

	if (add && (r->n + 1) * 2 > r->cap) {
		struct recs g = { .cap = r->cap ? r->cap * 2 : 1u << 16 };

		g.v = calloc(g.cap, sizeof(*g.v));
		if (!g.v)
			die("out of memory for %s", "the records");
		for (size_t k = 0; k < r->cap; k++) {
			if (!r->v[k].used)
				continue;
			i = flow_tuple_hash(&r->v[k].t, 0) & (g.cap - 1);
			while (g.v[i].used)
				i = (i + 1) & (g.cap - 1);
			g.v[i] = r->v[k];
		}
		g.n = r->n;
		free(r->v);
		*r = g;
	}
	if (!r->cap)
		return NULL;
	i = flow_tuple_hash(t, 0) & (r->cap - 1);
	while (r->v[i].used) {
		if (flow_tuple_equal(&r->v[i].t, t))
			return &r->v[i];
		i = (i + 1) & (r->cap - 1);
	}
	if (!add)
		return NULL;
	r->v[i] = (struct rec){ .t = *t, .used = true };
	r->n++;
	return &r->v[i];
}

/* ---- namespaces ---------------------------------------------------------------------- */

/* A socket of the named network namespace (a name under /run/netns, or a path). */
static int ns_socket(const char *ns, int domain, int type, int proto)
{
	char path[512];
	int self, target, fd, e;

	snprintf(path, sizeof(path), strchr(ns, '/') ? "%s" : "/run/netns/%s", ns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	target = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || target < 0)
		die("no network namespace '%s'", ns);
	if (setns(target, CLONE_NEWNET) < 0)
		die("cannot enter the network namespace '%s'", ns);
	fd = socket(domain, type | SOCK_CLOEXEC, proto);
	e = errno;
	if (setns(self, CLONE_NEWNET) < 0)
		die("cannot return from the network namespace '%s'", ns);
	close(self);
	close(target);
	if (fd < 0) {
		errno = e;
		die("socket in '%s' failed", ns);
	}
	return fd;
}

/* ---- the table dumps ----------------------------------------------------------------- */

struct dump_count {
	uint64_t entries, stamped;
};

/* Dump the conntrack table of `ns`; each entry's start stamp goes to a_ns or b_ns. */
static struct dump_count dump_side(const char *ns, struct recs *r, bool side_a)
{
	char req[64] = { 0 };
	struct nlmsghdr *nlh = (struct nlmsghdr *)req;
	struct nfgenmsg *nfg;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct dump_count c = { 0 };
	uint8_t *buf = malloc(DUMP_BUF);
	int fd = ns_socket(ns, AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER), big = 1 << 24;
	bool done = false;

	if (!buf)
		die("out of memory for %s", "the dump");
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	nlh->nlmsg_len = NLMSG_LENGTH(sizeof(*nfg));
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = 1;
	nfg = NLMSG_DATA(nlh);
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	if (sendto(fd, req, nlh->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("cannot ask '%s' for its table", ns);
	while (!done) {
		ssize_t n = recv(fd, buf, DUMP_BUF, 0);
		const struct nlmsghdr *m = (const void *)buf;
		int len = (int)n;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("the dump of '%s' failed", ns);
		}
		for (; mnl_nlmsg_ok(m, len); m = mnl_nlmsg_next(m, &len)) {
			struct flow_full ff;
			enum kernel_event kind;
			struct rec *x;

			if (m->nlmsg_type == NLMSG_DONE || m->nlmsg_type == NLMSG_ERROR) {
				done = true;
				break;
			}
			if (m->nlmsg_flags & NLM_F_DUMP_INTR)
				fprintf(stderr, "ctlag: the dump of '%s' was interrupted by changes\n", ns);
			if (kernel_ct_parse(m, m->nlmsg_len, &ff, &kind) != KERNEL_OK)
				continue;
			c.entries++;
			if (!ff.counters.times)
				continue;
			c.stamped++;
			x = recs_get(r, &ff.flow.orig, side_a);
			if (!x)
				continue;
			if (side_a)
				x->a_ns = ff.counters.start_ns;
			else
				x->b_ns = ff.counters.start_ns;
		}
	}
	close(fd);
	free(buf);
	return c;
}

/* ---- capture ------------------------------------------------------------------------- */

/* What the capture file holds: one line per conntrack message seen on the link. */
static void capture_datagram(FILE *out, const uint8_t *p, size_t len, uint16_t port,
			     const struct timespec *ts, uint64_t *msgs)
{
	const struct iphdr *ip = (const void *)p;
	const struct udphdr *udp;
	size_t hl;
	struct wire_split s;
	struct wire_msg m;
	struct flow_full ff;

	if (len < sizeof(*ip) || ip->version != 4 || ip->protocol != IPPROTO_UDP)
		return;
	hl = (size_t)ip->ihl * 4;
	if (len < hl + sizeof(*udp) || (ntohs(ip->frag_off) & 0x3fff))
		return;
	udp = (const void *)(p + hl);
	if (ntohs(udp->dest) != port)
		return;
	wire_split_init(&s, p + hl + sizeof(*udp), len - hl - sizeof(*udp), false);
	while (wire_split_next(&s, &m) == WIRE_SPLIT_MSG) {
		char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
		const struct flow_tuple *t = &ff.flow.orig;

		if (m.reason != WIRE_OK || wire_classify(&m.hdr) != WIRE_K_DATA ||
		    (m.hdr.type != WIRE_T_CT_NEW && m.hdr.type != WIRE_T_CT_UPD))
			continue;
		if (wire_ct_decode(m.data, m.len, &ff) != WIRE_OK)
			continue;
		inet_ntop(t->family, &t->src, src, sizeof(src));
		inet_ntop(t->family, &t->dst, dst, sizeof(dst));
		fprintf(out, "%lld.%09ld %u %u %s %s %u %u %u\n", (long long)ts->tv_sec, ts->tv_nsec,
			t->family, t->l4proto, src, dst, ntohs(t->l4.port.sport), ntohs(t->l4.port.dport),
			t->zone);
		(*msgs)++;
	}
}

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int cmd_capture(const char *dev, uint16_t port, const char *path, unsigned seconds)
{
	static uint8_t bufs[CAP_SLOTS][CAP_SLOT];
	static char ctl[CAP_SLOTS][CMSG_SPACE(sizeof(struct timespec))];
	struct mmsghdr msgs[CAP_SLOTS];
	struct iovec iov[CAP_SLOTS];
	struct sockaddr_ll from[CAP_SLOTS];
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP) };
	struct timespec t0, now, nap = { 0, CAP_POLL_NS };
	uint64_t datagrams = 0, messages = 0, unstamped = 0;
	int fd, one = 1, big = 1 << 26;
	FILE *out = fopen(path, "w");

	if (!out)
		die("cannot write '%s'", path);
	sll.sll_ifindex = (int)if_nametoindex(dev);
	if (!sll.sll_ifindex)
		die("no interface '%s' here", dev);
	fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("cannot capture on '%s'", dev);
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		die("no SO_TIMESTAMPNS on '%s'", dev);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	fprintf(stderr, "ctlag: capturing on %s\n", dev);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n;

		for (unsigned i = 0; i < CAP_SLOTS; i++) {
			iov[i] = (struct iovec){ bufs[i], CAP_SLOT };
			msgs[i].msg_hdr = (struct msghdr){ .msg_name = &from[i], .msg_namelen = sizeof(from[i]),
							   .msg_iov = &iov[i], .msg_iovlen = 1,
							   .msg_control = ctl[i], .msg_controllen = sizeof(ctl[i]) };
		}
		n = recvmmsg(fd, msgs, CAP_SLOTS, MSG_DONTWAIT, NULL);
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				die("capture on '%s' failed", dev);
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (stop_flag || now.tv_sec - t0.tv_sec >= (time_t)seconds)
				break;
			nanosleep(&nap, NULL);
			continue;
		}
		for (int i = 0; i < n; i++) {
			struct cmsghdr *c;
			struct timespec ts = { 0, 0 };

			if (from[i].sll_pkttype == PACKET_OUTGOING)
				continue;
			for (c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
				if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS)
					memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			if (!ts.tv_sec) {
				unstamped++;
				continue;
			}
			datagrams++;
			capture_datagram(out, bufs[i], msgs[i].msg_len, port, &ts, &messages);
		}
	}
	fclose(out);
	close(fd);
	fprintf(stderr, "ctlag: capture datagrams=%llu messages=%llu unstamped=%llu\n",
		(unsigned long long)datagrams, (unsigned long long)messages, (unsigned long long)unstamped);
	return 0;
}

/* Read a capture file: each state's first time on the link. */
static uint64_t read_wire(const char *path, struct recs *r, uint64_t *unknown)
{
	FILE *in = fopen(path, "r");
	char line[512];
	uint64_t n = 0;

	if (!in)
		die("cannot read '%s'", path);
	while (fgets(line, sizeof(line), in)) {
		long long sec;
		long nsec;
		unsigned fam, l4, sp, dp, zone;
		char src[64], dst[64];
		struct flow_tuple t = { 0 };
		struct rec *x;
		uint64_t ns;

		if (sscanf(line, "%lld.%ld %u %u %63s %63s %u %u %u", &sec, &nsec, &fam, &l4, src, dst, &sp, &dp,
			   &zone) != 9)
			die("bad line in the capture file: %s", line);
		t.family = (uint8_t)fam;
		t.l4proto = (uint8_t)l4;
		t.zone = (uint16_t)zone;
		if (inet_pton((int)fam, src, &t.src) != 1 || inet_pton((int)fam, dst, &t.dst) != 1)
			die("bad address in the capture file: %s", line);
		t.l4.port.sport = htons((uint16_t)sp);
		t.l4.port.dport = htons((uint16_t)dp);
		ns = (uint64_t)sec * 1000000000u + (uint64_t)nsec;
		n++;
		x = recs_get(r, &t, false);
		if (!x) {
			(*unknown)++;
			continue;
		}
		if (!x->w_ns || ns < x->w_ns)
			x->w_ns = ns;
	}
	fclose(in);
	return n;
}

/* ---- report -------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The q-quantile (nearest rank) of sorted v[n], in ms. */
static double q_ms(const int64_t *v, size_t n, double q)
{
	size_t k;

	if (!n)
		return 0;
	k = (size_t)(q * (double)n);
	if (k >= n)
		k = n - 1;
	return (double)v[k] / 1e6;
}

struct dist {
	const char *name;
	int64_t *v;
	size_t n;
};

static void print_dist(const struct dist *d, bool json, bool first)
{
	double mean = 0;

	for (size_t i = 0; i < d->n; i++)
		mean += (double)d->v[i];
	mean = d->n ? mean / (double)d->n / 1e6 : 0;
	if (json)
		printf("%s\"%s\":{\"n\":%zu,\"min\":%.4f,\"p50\":%.4f,\"p90\":%.4f,\"p99\":%.4f,\"p999\":%.4f,"
		       "\"max\":%.4f,\"mean\":%.4f}",
		       first ? "" : ",", d->name, d->n, q_ms(d->v, d->n, 0), q_ms(d->v, d->n, 0.5),
		       q_ms(d->v, d->n, 0.9), q_ms(d->v, d->n, 0.99), q_ms(d->v, d->n, 0.999),
		       d->n ? (double)d->v[d->n - 1] / 1e6 : 0, mean);
	else
		printf("%s n=%zu ms: min=%.4f p50=%.4f p90=%.4f p99=%.4f p999=%.4f max=%.4f mean=%.4f\n", d->name,
		       d->n, q_ms(d->v, d->n, 0), q_ms(d->v, d->n, 0.5), q_ms(d->v, d->n, 0.9),
		       q_ms(d->v, d->n, 0.99), q_ms(d->v, d->n, 0.999), d->n ? (double)d->v[d->n - 1] / 1e6 : 0,
		       mean);
}

static int cmd_report(const char *ns_a, const char *ns_b, const char *wire, const char *csv, bool json)
{
	struct recs r = { 0 };
	struct dump_count ca, cb;
	uint64_t wire_msgs = 0, wire_unknown = 0, missing = 0, a_first = UINT64_MAX, a_last = 0;
	struct dist d[3] = { { "lag", NULL, 0 }, { "a_to_link", NULL, 0 }, { "link_to_b", NULL, 0 } };
	FILE *out = NULL;

	ca = dump_side(ns_a, &r, true);
	cb = dump_side(ns_b, &r, false);
	if (ca.entries && !ca.stamped)
		die("the entries of '%s' carry no start stamp: set net.netfilter.nf_conntrack_timestamp=1 "
		    "there before they are created", ns_a);
	if (wire)
		wire_msgs = read_wire(wire, &r, &wire_unknown);
	for (int k = 0; k < 3; k++)
		if (!(d[k].v = malloc((r.n + 1) * sizeof(int64_t))))
			die("out of memory for %s", "the lags");
	if (csv && !(out = fopen(csv, "w")))
		die("cannot write '%s'", csv);
	if (out)
		fprintf(out, "a_ns,lag_ns,a_to_link_ns,link_to_b_ns\n");
	for (size_t i = 0; i < r.cap; i++) {
		const struct rec *x = &r.v[i];

		if (!x->used || !x->a_ns)
			continue;
		if (x->a_ns < a_first)
			a_first = x->a_ns;
		if (x->a_ns > a_last)
			a_last = x->a_ns;
		if (!x->b_ns) {
			missing++;
			continue;
		}
		d[0].v[d[0].n++] = (int64_t)(x->b_ns - x->a_ns);
		if (x->w_ns) {
			d[1].v[d[1].n++] = (int64_t)(x->w_ns - x->a_ns);
			d[2].v[d[2].n++] = (int64_t)(x->b_ns - x->w_ns);
		}
		if (out)
			fprintf(out, "%llu,%lld,%lld,%lld\n", (unsigned long long)x->a_ns,
				(long long)(x->b_ns - x->a_ns),
				x->w_ns ? (long long)(x->w_ns - x->a_ns) : -1LL,
				x->w_ns ? (long long)(x->b_ns - x->w_ns) : -1LL);
	}
	if (out)
		fclose(out);
	for (int k = 0; k < 3; k++)
		qsort(d[k].v, d[k].n, sizeof(int64_t), cmp_i64);
	if (json) {
		printf("{\"a_entries\":%llu,\"a_stamped\":%llu,\"b_entries\":%llu,\"b_stamped\":%llu,"
		       "\"matched\":%zu,\"missing\":%llu,\"a_span_s\":%.3f,\"wire_messages\":%llu,"
		       "\"wire_unknown\":%llu,",
		       (unsigned long long)ca.entries, (unsigned long long)ca.stamped,
		       (unsigned long long)cb.entries, (unsigned long long)cb.stamped, d[0].n,
		       (unsigned long long)missing, a_last > a_first ? (double)(a_last - a_first) / 1e9 : 0,
		       (unsigned long long)wire_msgs, (unsigned long long)wire_unknown);
		for (int k = 0; k < (wire ? 3 : 1); k++)
			print_dist(&d[k], true, k == 0);
		printf("}\n");
	} else {
		printf("a_entries=%llu b_entries=%llu matched=%zu missing=%llu a_span_s=%.3f\n",
		       (unsigned long long)ca.entries, (unsigned long long)cb.entries, d[0].n,
		       (unsigned long long)missing, a_last > a_first ? (double)(a_last - a_first) / 1e9 : 0);
		for (int k = 0; k < (wire ? 3 : 1); k++)
			print_dist(&d[k], false, k == 0);
	}
	for (int k = 0; k < 3; k++)
		free(d[k].v);
	free(r.v);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ctlag capture --dev IF [--port P] --out FILE [--seconds S]\n"
		   "       ctlag report --a NS --b NS [--wire FILE] [--csv FILE] [--json]\n"
		   "Both nodes need net.netfilter.nf_conntrack_timestamp=1 before the states are\n"
		   "created; B must write received states into its kernel.  See bench/README.md.\n");
}

static unsigned parse_uint(const char *opt, const char *v, unsigned max)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || end == v || *end || x == 0 || x > max) {
		fprintf(stderr, "ctlag: %s '%s' is not a number in 1..%u\n", opt, v, max);
		exit(1);
	}
	return (unsigned)x;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *out = NULL, *a = NULL, *b = NULL, *wire = NULL, *csv = NULL;
	unsigned port = 3780, seconds = 600;
	bool json = false;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2;
	}
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--json")) {
			json = true;
			continue;
		}
		if (!v) {
			fprintf(stderr, "ctlag: %s needs a value\n", o);
			return 1;
		}
		i++;
		if (!strcmp(o, "--dev"))
			dev = v;
		else if (!strcmp(o, "--out"))
			out = v;
		else if (!strcmp(o, "--port"))
			port = parse_uint(o, v, 65535);
		else if (!strcmp(o, "--seconds"))
			seconds = parse_uint(o, v, CAP_MAX_SECONDS);
		else if (!strcmp(o, "--a"))
			a = v;
		else if (!strcmp(o, "--b"))
			b = v;
		else if (!strcmp(o, "--wire"))
			wire = v;
		else if (!strcmp(o, "--csv"))
			csv = v;
		else {
			fprintf(stderr, "ctlag: unknown option '%s'\n", o);
			return 1;
		}
	}
	if (!strcmp(argv[1], "capture")) {
		if (!dev || !out) {
			fprintf(stderr, "ctlag: capture needs --dev and --out\n");
			return 1;
		}
		return cmd_capture(dev, (uint16_t)port, out, seconds);
	}
	if (!strcmp(argv[1], "report")) {
		if (!a || !b) {
			fprintf(stderr, "ctlag: report needs --a and --b\n");
			return 1;
		}
		return cmd_report(a, b, wire, csv, json);
	}
	fprintf(stderr, "ctlag: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 1;
}
