/*
 * kernel/kernel.h - the only code that talks ctnetlink (module `kernel`).
 *
 * Four parts:
 *   1. conversion, pure: one ctnetlink conntrack message <-> struct flow_full
 *      (no system call, no allocation; unit-tested without a kernel);
 *   2. the event socket: NEW / UPDATE / DESTROY events on the loop, many
 *      messages per system call, overrun (ENOBUFS) reported to the owner,
 *      events caused by our own writes recognised;
 *   3. dumps of the whole conntrack table, delivered in slices on the loop;
 *   4. the batched writer: create / update / delete / flush requests
 *      concatenated into large buffers, one sendmsg() each, errors collected
 *      per request; plus bulk jobs and the selective flush (dump + delete),
 *      both sliced on the loop.
 *
 * Ownership: every object here is created and freed by its owner; flows
 * passed to callbacks are borrowed for the duration of the call only.  No
 * callback may free the object that is calling it, except where said.
 * Errors are negative errno values unless said otherwise.  Times are in
 * seconds (conntrack timeouts) or microseconds (elapsed times).
 *
 * Kernel facts this module relies on (kernel 6.x, measured on 6.18; the
 * experiments are described where the code depends on them):
 * - ctnetlink handles every message of one sendmsg() synchronously, in
 *   order, and continues after a failing message; the answers (errors, and
 *   ACKs when NLM_F_ACK is set) are queued on the sender's socket before
 *   sendmsg() returns.
 * - A create needs CTA_TUPLE_ORIG, CTA_TUPLE_REPLY and CTA_TIMEOUT, and a
 *   CTA_STATUS with IPS_CONFIRMED and without IPS_EXPECTED (else EBUSY).
 *   NAT cannot be set through CTA_STATUS (the kernel ignores the NAT bits);
 *   a NAT'ed entry is created from the plain inverted reply tuple plus
 *   CTA_NAT_SRC / CTA_NAT_DST, which make the kernel set SRC_NAT /
 *   DST_NAT, the *_DONE bits and the NAT'ed reply tuple.  A reply tuple
 *   that already carries the NAT yields SRC_NAT_DONE without IPS_SRC_NAT:
 *   the entry would not translate packets (see ct_attr.c).
 * - An event's nlmsg_pid is the netlink port id of the socket whose request
 *   caused it (0 for events caused by packets or timeouts).
 */
#ifndef CTSYNCD_KERNEL_H
#define CTSYNCD_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow/flow.h"

struct loop;
struct sock_filter;

/* ==== 1. conversion (pure) ================================================= */

/* Why a ctnetlink message was not turned into a flow. */
enum kernel_reason {
	KERNEL_OK = 0,
	KERNEL_R_TRUNCATED,             /* shorter than nlmsghdr + nfgenmsg, or nlmsg_len past the end */
	KERNEL_R_NOT_CONNTRACK,         /* not a ctnetlink IPCTNL_MSG_CT_NEW / _DELETE message */
	KERNEL_R_FAMILY,                /* nfgen_family not AF_INET / AF_INET6 */
	KERNEL_R_ATTR_OVERRUN,          /* an attribute shorter than 4 bytes or past its container */
	KERNEL_R_ATTR_SIZE,             /* an attribute of fixed size with another payload size */
	KERNEL_R_NO_TUPLE,              /* no CTA_TUPLE_ORIG */
	KERNEL_R_NO_ADDRESS,            /* a tuple without both addresses of the message's family */
	KERNEL_R_NO_L4PROTO,            /* a tuple without CTA_PROTO_NUM */
	KERNEL_R_NO_PORTS,              /* TCP, UDP, UDPlite, SCTP or DCCP tuple without both ports */
	KERNEL_R_NO_ICMP,               /* ICMP / ICMPv6 tuple without id, type and code */
	KERNEL_R_REPLY_MISMATCH,        /* reply tuple of another protocol than the original */
	KERNEL_R_HELPER_NAME,           /* helper name unterminated or longer than 15 characters */
	KERNEL_R_LABELS,                /* labels empty, not whole 32-bit words, or over 1024 bytes */
	KERNEL_R_MAX
};

/* A short text for logs ("attribute past its end"); never NULL. */
const char *kernel_reason_name(enum kernel_reason r);

/* What a conntrack message says happened. */
enum kernel_event {
	KERNEL_EV_NEW,                  /* IPCTNL_MSG_CT_NEW with NLM_F_CREATE; dump entries too */
	KERNEL_EV_UPDATE,               /* IPCTNL_MSG_CT_NEW without NLM_F_CREATE */
	KERNEL_EV_DESTROY,              /* IPCTNL_MSG_CT_DELETE */
};

/*
 * Parse one ctnetlink conntrack message (nlmsghdr + nfgenmsg + attributes,
 * `len` bytes available at `msg`) into `ff` (overwritten, normalised with
 * flow_full_normalize()) and its event kind.  Returns KERNEL_OK or the
 * reason of the rejection (then `ff` is unspecified).
 *
 * Only what the message carries is set: an UPDATE event carries the tuples,
 * status, timeout and mark (when non-zero or changed), but the protocol info,
 * helper, master, sequence adjustment and synproxy only when they changed,
 * and a DESTROY event has no timeout and no protocol info.  A clear FLOW_A_*
 * bit therefore means "not in the message", and an owner merges updates.
 *
 * NAT is derived from the reply tuple as conntrackd does (protocol.md §2.7):
 * SNAT = reply dst when SRC_NAT_DONE and it differs from the original src,
 * SPAT = reply dst port when SRC_NAT_DONE and it differs from the original
 * src port; DNAT / DPAT likewise with DST_NAT_DONE, the reply src and the
 * original dst.  Ports only for protocols with ports.  An attribute that
 * comes twice (the kernel sends none twice) counts as its last instance,
 * whole, as libnetfilter_conntrack reads it.  Unknown attributes
 * are ignored (newer kernels add some); use, id, secctx and timestamps
 * are not kept, and the packet and byte counters only in ff->counters
 * (tables do not keep them).  Ports are kept for every protocol whose
 * tuple has them (GRE keys included).
 */
enum kernel_reason kernel_ct_parse(const void *msg, size_t len, struct flow_full *ff,
				   enum kernel_event *ev);

/*
 * A record of the BPF event tap (EventSource bpf, kernel/tap_rec.h; `len`
 * bytes) into `ff` and its kind, as kernel_ct_parse() would fill them from
 * the event of the same change: tuples, status, mark, zone, timeout (when
 * the record knows it), TCP state and window scales, NAT derived from the
 * reply tuple.  A record with TAP_CT_PARTIAL lacks what its entry has
 * beyond these (master, helper, labels...): the owner reads the entry.
 */
struct tap_ct;
enum kernel_reason kernel_ct_from_tap(const struct tap_ct *r, size_t len, struct flow_full *ff,
				      enum kernel_event *ev);

/* The requests the writer and the builder know. */
enum kernel_op {
	KERNEL_OP_CREATE,               /* NEW, NLM_F_CREATE | NLM_F_EXCL: EEXIST if present */
	KERNEL_OP_UPDATE,               /* NEW without NLM_F_CREATE: ENOENT if absent */
	KERNEL_OP_DELETE,               /* DELETE by original tuple and zone: ENOENT if absent */
	KERNEL_OP_FLUSH,                /* DELETE without attributes: the whole table (of a family) */
	KERNEL_OP_MAX
};

/* Pass as `timeout` to leave the timeout out of an update (the kernel keeps its own). */
#define KERNEL_TIMEOUT_KEEP UINT32_MAX

/* Options of a request; the same for every request of a writer. */
enum kernel_build_opt {
	KERNEL_BUILD_ACK            = 1u << 0, /* NLM_F_ACK: the kernel answers success too */
	/*
	 * TCPWindowTracking on: no BE_LIBERAL, and the window scales are sent
	 * (with the WINDOW_SCALE flag in both directions, without which the
	 * kernel ignores them).  Off (default): BE_LIBERAL (0x08) in the flags
	 * and mask of both directions, no window scales (protocol.md §6.3).
	 */
	KERNEL_BUILD_WINDOW_TRACKING = 1u << 1,
};

/*
 * Build one request for `ff` (which need not be normalised, but must have a
 * family, AF_INET or AF_INET6) into `buf` (`cap` bytes), with netlink
 * sequence number `seq`.  Returns the message length (a multiple of 4) or
 * -ENOSPC (`cap` too small; the bytes written are garbage), -EINVAL (no
 * family, or an op out of range).
 *
 * CREATE applies protocol.md §6.3's injection transformations: CTA_TIMEOUT = `timeout`
 * (seconds; required by the kernel), IPS_EXPECTED and the NAT bits cleared
 * from the status and IPS_CONFIRMED set, the reply tuple rebuilt as the
 * plain inversion of the original, SNAT / DNAT / SPAT / DPAT requested with
 * CTA_NAT_SRC / CTA_NAT_DST (single address, single port when SPAT / DPAT)
 * from which the kernel makes the NAT'ed reply tuple, TCP flags as said for
 * KERNEL_BUILD_WINDOW_TRACKING, the master tuple of a related flow, the
 * helper, labels (with an all-ones mask), mark, zone, NAT sequence
 * adjustment and non-zero synproxy values.
 * UPDATE is looked up by the original tuple and zone and drops NAT, the
 * master and the helper (the kernel refuses to change them), and the NAT
 * bits of the status; `timeout` may be KERNEL_TIMEOUT_KEEP.  The status is
 * sent with CONFIRMED and the flow's EXPECTED bit; the kernel answers EBUSY
 * when it would clear SEEN_REPLY or ASSURED or change EXPECTED (measured),
 * for which the caller falls back to delete + create as conntrackd does.
 * DELETE carries the original tuple and zone only; `timeout` is unused.
 * FLUSH takes `ff` NULL or a flow whose orig.family is the family to flush
 * (AF_UNSPEC = both).
 */
int kernel_ct_build(void *buf, size_t cap, enum kernel_op op, const struct flow_full *ff,
		    uint32_t timeout, unsigned opts, uint32_t seq);

/*
 * Expectations (ExpectationSync).  Parse one ctnetlink expectation message
 * (IPCTNL_MSG_EXP_NEW: KERNEL_EV_NEW; IPCTNL_MSG_EXP_DELETE:
 * KERNEL_EV_DESTROY) into `x` (overwritten; unused bytes zero): master,
 * tuple and mask are required, the zone goes to x->master.zone, the rest is
 * optional.  Returns KERNEL_OK or the reason (KERNEL_R_NO_TUPLE for a
 * missing tuple, KERNEL_R_HELPER_NAME for an unterminated or too long
 * helper or expectfn name).
 */
enum kernel_reason kernel_exp_parse(const void *msg, size_t len, struct flow_exp *x,
				    enum kernel_event *ev);
/*
 * Build an expectation request: CREATE (NLM_F_CREATE without EXCL: a
 * present expectation gets its timeout refreshed) with CTA_EXPECT_TIMEOUT
 * = `timeout`, the master (which must exist in the kernel and have a
 * helper), tuple, mask, zone, flags, class, helper, NAT and expectfn;
 * DELETE by tuple and zone; FLUSH (x NULL): every expectation.  As
 * kernel_ct_build() for the return value.
 */
int kernel_exp_build(void *buf, size_t cap, enum kernel_op op, const struct flow_exp *x,
		     uint32_t timeout, unsigned opts, uint32_t seq);

/* ==== 2. events ============================================================ */

struct kernel_events;

struct kernel_events_opts {
	bool expectations;              /* also subscribe to the expectation groups */
	bool expectation_news;          /* at least to new expectations */
	/*
	 * Receive buffer in bytes (NetlinkBufferSize; 0 = the system default)
	 * and the ceiling to which it doubles on each overrun
	 * (NetlinkBufferSizeMaxGrowth; at or below `rcvbuf` = no growth).
	 * Unlike 1.4.7, `rcvbuf` is applied even when it exceeds `rcvbuf_max`.
	 */
	uint32_t rcvbuf;
	uint32_t rcvbuf_max;
	/* NetlinkEventsReliable: NETLINK_BROADCAST_ERROR + NETLINK_NO_ENOBUFS. */
	bool reliable;
	/* recvmmsg() calls per wake-up (EventIterationLimit); 0 = 100. */
	unsigned iteration_limit;
	/*
	 * When a wake-up finds only a few events (under 16), stop watching
	 * the socket for this many microseconds so that the next read gets
	 * many at once: fewer wake-ups and system calls per event, for at
	 * most this much latency (the buffer must hold that long's events).
	 * 0 = read as soon as anything arrives.  Measured at ~200k events/s:
	 * 1 ms takes a listener from 2.7 to 1.2 us CPU per event.  Only
	 * while the event rate is high (50k/s over the last 10 ms): below
	 * that each event is read at once (events.c).
	 */
	unsigned coalesce_us;
	/*
	 * EventSource bpf (doc/bpf-events.md): new entries and their changes
	 * come from the BPF event tap instead of ctnetlink's NEW and UPDATE
	 * groups, destroys through the same ring.  When this kernel or build
	 * cannot, the events come from ctnetlink as usual, with a warning and
	 * `tap_refused` in the stats.  `rcvbuf` sizes the ring.  Set at
	 * open only.
	 */
	bool bpf_tap;
};

/* Where an event comes from (on_flow's `origin`). */
enum {
	/* nlmsg_pid is the port id of one of our writers (kernel_events_add_own()) */
	KERNEL_ORIGIN_OWN = 1u << 0,
	/*
	 * A process's ctnetlink request made it (nlmsg_pid is not 0): the
	 * kernel then reports every attribute the request could change, so
	 * an UPDATE without labels means the state has none (protocol.md §6.1: the kernel
	 * leaves all-zero labels out, and reports labels in a packet's
	 * event only when they changed).
	 */
	KERNEL_ORIGIN_REQUEST = 1u << 1,
	/*
	 * From the BPF event tap, whose record lacks part of the entry
	 * (TAP_CT_PARTIAL): the owner reads the whole entry from the kernel.
	 */
	KERNEL_ORIGIN_PARTIAL = 1u << 2,
};

struct kernel_events_cb {
	/*
	 * A conntrack event; `origin` is a set of KERNEL_ORIGIN_*.  Required.
	 */
	void (*on_flow)(void *arg, enum kernel_event ev, const struct flow_full *ff, unsigned origin);
	/* An expectation event, raw (nlmsghdr first, `len` bytes).  May be NULL. */
	void (*on_expect)(void *arg, const void *msg, size_t len, bool own_write);
	/*
	 * The kernel dropped events (ENOBUFS): the owner must resynchronise.
	 * The buffer has already been grown if allowed; `rcvbuf` is its size now.
	 * Called only once the socket has been read empty: until then the
	 * kernel keeps the socket "congested" and silently drops every new
	 * event, so a table dump started earlier could miss states created
	 * after its walk.  A dump started from this callback misses nothing.
	 * May be NULL.
	 */
	void (*on_overrun)(void *arg, uint32_t rcvbuf);
	/* A message was rejected; it is also counted.  May be NULL. */
	void (*on_malformed)(void *arg, enum kernel_reason r);
	/*
	 * A hint, may be NULL: `ff` (valid during the call only) is about to
	 * be given to on_flow.  The events of one read are parsed before the
	 * first of them is delivered, so that the owner can start its table
	 * look-ups early and their cache misses overlap.  Must change nothing
	 * that on_flow could see.
	 */
	void (*prefetch)(void *arg, const struct flow_full *ff);
};

struct kernel_events_stats {
	uint64_t messages;              /* conntrack + expectation messages received */
	uint64_t flows;                 /* delivered to on_flow */
	uint64_t own;                   /* of those, own_write */
	uint64_t expects;
	uint64_t malformed;
	uint64_t truncated;             /* larger than a receive slot (MSG_TRUNC): dropped */
	uint64_t overruns;              /* ENOBUFS seen */
	uint64_t grown_early;           /* buffer doubled while half full, before an overrun */
	uint64_t recv_calls;
	uint32_t rcvbuf;                /* current receive buffer, bytes (as the kernel reports it) */
	bool tap;                       /* the BPF event tap is the source (bpf_tap, and it loaded) */
	bool tap_refused;               /* bpf_tap was asked for, and could not be had */
	uint64_t tap_records;           /* records read from the tap's ring */
	uint64_t tap_partial;           /* of those, TAP_CT_PARTIAL (the owner reads the entry) */
	uint64_t tap_lost;              /* records the full ring refused (each loss resynchronises) */
};

/*
 * Open the event socket, subscribe and watch it on `loop`.  Returns NULL
 * with *err = -errno.  `cb` is copied; `arg` is passed to every callback.
 */
struct kernel_events *kernel_events_open(struct loop *loop, const struct kernel_events_opts *o,
					 const struct kernel_events_cb *cb, void *arg, int *err);
/* Unwatch, close and free (safe from inside its own callbacks: freed after they return). */
void kernel_events_close(struct kernel_events *ev);

/* Events with nlmsg_pid == `portid` are own_write (up to 8 port ids). 0 or -ENOSPC. */
int kernel_events_add_own(struct kernel_events *ev, uint32_t portid);

/*
 * Install a socket filter: own writes' events dropped in the kernel when
 * `drop_own` (they then never use the receive buffer: a commit cannot
 * overrun it), followed by `prog` (`len` classic BPF instructions, e.g.
 * `Filter From Kernelspace`; NULL = accept the rest).  `prog` must start
 * with a load (A holds the port id on entry).  Replaces the previous
 * filter; drop_own false and prog NULL removes it.  Returns 0 or -errno.
 */
int kernel_events_set_filter(struct kernel_events *ev, bool drop_own,
			     const struct sock_filter *prog, unsigned len);

/*
 * A reload: the buffer (a new `rcvbuf` is set now; 0 keeps the current
 * size), the ceiling of its growth, NetlinkEventsReliable and the reads
 * per wake-up of `o` replace the current ones.  Events already queued stay.
 * Returns 0 or -errno (what was set before the failure stays set).
 */
int kernel_events_tune(struct kernel_events *ev, const struct kernel_events_opts *o);

/* Stop / start reading (the kernel keeps queueing, up to the buffer). */
void kernel_events_pause(struct kernel_events *ev);
int kernel_events_resume(struct kernel_events *ev);

void kernel_events_get_stats(const struct kernel_events *ev, struct kernel_events_stats *st);

/* ==== 3. dumps ============================================================= */

struct kernel_dump;

struct kernel_dump_stats {
	uint64_t flows;                 /* delivered */
	uint64_t malformed;
	uint64_t recv_calls;
	uint64_t elapsed_us;
};

struct kernel_dump_cb {
	/* One entry (ev is always KERNEL_EV_NEW).  Required unless on_exp is set. */
	void (*on_flow)(void *arg, const struct flow_full *ff);
	/* Set: the dump is of the expectation table instead, one entry each call. */
	void (*on_exp)(void *arg, const struct flow_exp *x);
	/*
	 * The end: `err` 0, -EINTR (the kernel says the table changed under
	 * the dump: NLM_F_DUMP_INTR; entries may be missing or repeated), or
	 * another -errno (the dump stopped).  The dump frees itself after this
	 * returns: do not touch the handle afterwards.  Required.
	 */
	void (*on_done)(void *arg, int err, const struct kernel_dump_stats *st);
};

/*
 * Start a dump of the conntrack table of `family` (AF_INET, AF_INET6 or
 * AF_UNSPEC = both) on its own socket, read in slices on `loop` (at most
 * `recv_per_slice` recv calls of up to 32 KiB each per wake-up; 0 = 16, about
 * 3000 entries), so the loop keeps serving meanwhile.  Returns NULL with
 * *err = -errno.
 */
struct kernel_dump *kernel_dump_start(struct loop *loop, int family, unsigned recv_per_slice,
				      const struct kernel_dump_cb *cb, void *arg, int *err);
/*
 * A pulled dump: the same request, but not on the loop.  Its owner takes
 * the entries with kernel_dump_pull(), and the kernel fills the next part
 * of the dump only when the owner has used up the one in hand, so a dump
 * kept waiting holds the kernel's place in the table and at most one part
 * (64 KiB) here, however large the table.  Returns NULL with *err = -errno.
 */
struct kernel_dump *kernel_dump_open(int family, const struct kernel_dump_cb *cb, void *arg, int *err);
/*
 * Deliver up to `max` entries of a pulled dump through its callbacks,
 * reading the socket when the part in hand is used up.  Returns the
 * number delivered: fewer than `max` when the dump ended (on_done was
 * called from here, and the dump is freed: forget the handle there) or
 * when the kernel has nothing ready yet (call again later).  Callbacks may
 * kernel_dump_cancel() it.
 */
unsigned kernel_dump_pull(struct kernel_dump *d, unsigned max);
/* Stop before the end (no on_done) and free; not from inside on_done. */
void kernel_dump_cancel(struct kernel_dump *d);

/*
 * One entry read back by its original tuple and zone (get.c), synchronously:
 * ctnetlink answers while the request is sent.  0 and *out (as from
 * kernel_ct_parse()), -ENOENT, or another -errno.
 */
struct kernel_getter;
struct kernel_getter *kernel_getter_new(int *err);
void kernel_getter_free(struct kernel_getter *g);
uint32_t kernel_getter_portid(const struct kernel_getter *g);
int kernel_get(struct kernel_getter *g, const struct flow_tuple *orig, struct flow_full *out);

/* ==== 4. the batched writer ================================================ */

struct kernel_writer;

struct kernel_writer_opts {
	size_t batch_bytes;             /* bytes per sendmsg(); 0 = 256 KiB; at least 16 KiB */
	unsigned build_opts;            /* KERNEL_BUILD_* for every request */
};

struct kernel_writer_cb {
	/*
	 * A request failed with `err` (a positive errno: EEXIST for a create
	 * of a present entry, ENOENT for an update / delete of an absent one,
	 * ...).  `cookie` is the caller's.  The callback may put new requests
	 * (e.g. retry an EEXIST create as an update).  May be NULL.
	 */
	void (*on_error)(void *arg, enum kernel_op op, uint64_t cookie, int err);
};

/* Counts of a writer (since it was opened) or of a job. */
#define KERNEL_ERRNO_MAX 136            /* errno values counted one by one; others in [0] */
struct kernel_write_stats {
	uint64_t requests;              /* answered (sent and accounted for) */
	uint64_t ok;
	uint64_t failed;
	uint64_t by_op_failed[KERNEL_OP_MAX];
	uint32_t by_errno[KERNEL_ERRNO_MAX];   /* failures per errno */
	uint64_t batches;               /* sendmsg() calls */
	uint64_t lost;                  /* answers lost (receive buffer overrun); counted as failed ENOBUFS */
	uint64_t elapsed_us;            /* job: from start to completion; writer: time in sendmsg + replies */
};

/* Open the writer's socket.  Returns NULL with *err = -errno. */
struct kernel_writer *kernel_writer_new(struct loop *loop, const struct kernel_writer_opts *o,
					const struct kernel_writer_cb *cb, void *arg, int *err);
/* Sends what is pending (answers delivered), then closes and frees. Not from its callbacks. */
void kernel_writer_free(struct kernel_writer *w);
/* A reload: KERNEL_BUILD_* for the messages built from now on (TCPWindowTracking). */
void kernel_writer_set_build_opts(struct kernel_writer *w, unsigned build_opts);

/* The netlink port id of the writer's socket: what its events carry in nlmsg_pid. */
uint32_t kernel_writer_portid(const struct kernel_writer *w);

/*
 * Queue one request (see kernel_ct_build() for `timeout` and `ff`).  It is
 * encoded at once (`ff` is not kept); when the batch is full it is sent
 * first.  A partly filled batch is sent at the end of the current loop
 * iteration, or by kernel_writer_flush().  Failures are reported to
 * on_error, never later than that send.  Returns 0, or -EINVAL (the flow
 * cannot be built: counted, not sent).
 */
int kernel_writer_put(struct kernel_writer *w, enum kernel_op op, const struct flow_full *ff,
		      uint32_t timeout, uint64_t cookie);
/* The same for an expectation (kernel_exp_build()). */
int kernel_writer_put_exp(struct kernel_writer *w, enum kernel_op op, const struct flow_exp *x,
			  uint32_t timeout, uint64_t cookie);
/* Send the pending batch now and deliver its failures.  Returns 0 or the sendmsg() -errno. */
int kernel_writer_flush(struct kernel_writer *w);

void kernel_writer_get_stats(const struct kernel_writer *w, struct kernel_write_stats *st);

/*
 * A bulk job (commit, flush of many entries): the writer pulls requests
 * from `next` in slices of `per_slice` (0 = 8192) per loop wake-up, sends
 * them in batches, and calls `done` with the job's own counts once every
 * answer is in.  `next` fills `*it` and returns true, or returns false when
 * there are no more; `it->ff` need only live until `next` is called again.
 * One job at a time per writer (-EBUSY); kernel_writer_put() works
 * alongside (its requests are not counted in the job).  Failures go to
 * on_error as for put.  `done` may start another job.
 */
struct kernel_job_item {
	enum kernel_op op;
	const struct flow_full *ff;
	const struct flow_exp *x;       /* set: a request for this expectation instead */
	uint32_t timeout;
	uint64_t cookie;
};
typedef bool (*kernel_job_next_fn)(void *arg, struct kernel_job_item *it);
typedef void (*kernel_job_done_fn)(void *arg, const struct kernel_write_stats *st);

int kernel_writer_run(struct kernel_writer *w, unsigned per_slice, kernel_job_next_fn next,
		      kernel_job_done_fn done, void *arg);
/* Stop the running job after what was already sent (no `done`).  */
void kernel_writer_cancel(struct kernel_writer *w);
bool kernel_writer_busy(const struct kernel_writer *w);

/*
 * Selective flush (`-F` with a Filter, purge): dump `family` and delete,
 * through `w`, every entry for which `keep` returns false (NULL = delete
 * all); ENOENT (gone meanwhile) counts as done.  `done` gets the deletes'
 * counts and the number of entries seen.  One at a time per writer, and
 * not together with kernel_writer_run() (-EBUSY).
 */
typedef bool (*kernel_keep_fn)(void *arg, const struct flow_full *ff);
typedef void (*kernel_purge_done_fn)(void *arg, int err, uint64_t seen,
				     const struct kernel_write_stats *st);
int kernel_writer_purge(struct kernel_writer *w, int family, kernel_keep_fn keep,
			kernel_purge_done_fn done, void *arg);

#endif
