/*
 * ctload.h - the load generator's shared types: the parsed options, the
 * result of one run, and the netlink helpers the commands share.
 *
 * ctload is a benchmark tool, not part of the daemon: it talks ctnetlink
 * itself (libmnl + raw sockets) so that it measures the kernel, not our
 * kernel module.
 */
#ifndef CTLOAD_H
#define CTLOAD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ctl_proto {
	CTL_TCP,
	CTL_UDP,
	CTL_ICMP,
	CTL_MIXED,      /* entry i gets tcp, udp, icmp for i % 3 == 0, 1, 2 */
};

union ctl_addr {
	struct in_addr v4;
	struct in6_addr v6;
};

struct ctl_opts {
	uint64_t n;             /* entries to create/update/delete */
	uint64_t offset;        /* index of the first entry */
	double rate;            /* entries per second; 0 = as fast as possible */
	enum ctl_proto proto;
	int family;             /* AF_INET, AF_INET6; AF_UNSPEC for count only */
	union ctl_addr src;     /* first source address (entry 0) */
	union ctl_addr dst;     /* the destination address of every entry */
	bool has_zone;
	uint16_t zone;
	uint32_t timeout;       /* seconds */
	bool has_mark;
	uint32_t mark;
	uint8_t tcp_state;      /* TCP_CONNTRACK_* */
	size_t batch_bytes;     /* netlink messages per sendmsg, in bytes */
	bool ack;               /* NLM_F_ACK on every message, not only errors */
	size_t rcvbuf;          /* SO_RCVBUFFORCE, bytes */
	bool json;
	bool allow_failures;
	bool stats;             /* count: the kernel's counter, not a dump */
	double seconds;         /* listen: stop after this long; 0 = no limit */
	uint64_t until_count;   /* listen: stop after this many events */
	double idle;            /* listen: stop after this long without events */
};

/* errno values are small; anything above is counted in the last slot. */
#define CTL_ERRNO_SLOTS 256

struct ctl_result {
	uint64_t sent;          /* messages handed to the kernel */
	uint64_t ok;
	uint64_t failed;        /* sum of errors[] */
	uint64_t errors[CTL_ERRNO_SLOTS];
	uint64_t unreported;    /* --ack: requests whose ACK never came (our buffer overran) */
	uint64_t overruns;      /* ENOBUFS on our socket: replies were lost */
	int64_t first_failed;   /* index of the first failed entry, -1 if none */
	int first_errno;
	double elapsed;         /* seconds */
	double cpu;             /* user + system seconds of this process over the run:
				 * the kernel's insert work is done in our sendmsg() */
};

enum ctl_op {
	CTL_OP_CREATE,
	CTL_OP_UPDATE,
	CTL_OP_DELETE,
};

/* ctload-ct.c: the table operations.  All return 0 or a negative errno
 * for a failure of the tool itself (socket, memory); failures of single
 * entries are counted in the result instead. */
int ctl_run_batch(const struct ctl_opts *o, enum ctl_op op, struct ctl_result *r);
/* How many entries fit between the source base address and the end of the
 * address space (each address carries 16384 ports). */
uint64_t ctl_max_entries(const struct ctl_opts *o);
/* "tcp src=... dst=... sport=... dport=..." for entry `idx`, as conntrack -L shows it. */
void ctl_describe_entry(const struct ctl_opts *o, uint64_t idx, char *out, size_t len);
int ctl_count_dump(int family, uint64_t *count, double *elapsed);
int ctl_count_stats(uint64_t *count, uint64_t *max);
int ctl_flush(double *elapsed);

/* ctload-listen.c */
struct ctl_listen_result {
	uint64_t new_events, update_events, destroy_events, other;
	uint64_t enobufs;       /* overruns reported by the kernel */
	uint64_t truncated;     /* datagrams larger than our slots */
	int rcvbuf;             /* effective SO_RCVBUF (the kernel doubles it) */
	double span;            /* first to last event, seconds */
	double wall;            /* whole listening time, seconds */
	double cpu;             /* user + system seconds spent listening */
	bool interrupted;       /* stopped by SIGINT/SIGTERM */
};
int ctl_listen(const struct ctl_opts *o, struct ctl_listen_result *r);

/* ctload-ct.c: netlink plumbing shared with the listener.  ctl_nl_open
 * returns a NETLINK_NETFILTER socket bound to `groups` (a bitmask of
 * NF_NETLINK_CONNTRACK_*), or a negative errno. */
int ctl_nl_open(unsigned int groups, size_t rcvbuf, size_t sndbuf);
int ctl_nl_send(int fd, const void *buf, size_t len);
double ctl_now(void);
/* User + system CPU seconds used by this process so far. */
double ctl_cpu_seconds(void);

#endif
