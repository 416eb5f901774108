/*
 * kernel/nfqueue.h - one NFQUEUE, read on the loop, for a-priori mode
 * (doc/apriori.md): the packets a firewall rule queues wait here for our
 * verdict.
 *
 * The queue is bound with NFQA_CFG_F_FAIL_OPEN (a full queue lets packets
 * through instead of dropping them) and asks for each packet's conntrack
 * (NFQA_CFG_F_CONNTRACK).  A kernel built without
 * CONFIG_NETFILTER_NETLINK_GLUE_CT refuses that flag; the queue then asks
 * for the first bytes of each packet instead, and on_packet() gets the
 * packet's own addresses and ports as a tuple, for the owner to look the
 * conntrack up by (kernel_get_reply()).
 *
 * Every packet handed to on_packet() must get a verdict
 * (kernel_nfqueue_accept()) sooner or later: the kernel keeps it until
 * then, and drops what is still queued when the queue is closed.
 */
#ifndef CTSYNCD_KERNEL_NFQUEUE_H
#define CTSYNCD_KERNEL_NFQUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "flow/flow.h"
#include "kernel/kernel.h"

struct loop;
struct kernel_nfqueue;

/* What came with a queued packet. */
struct kernel_nfqueue_packet {
	uint32_t id;                    /* for the verdict */
	/*
	 * The packet's conntrack, as the kernel has it at the queueing hook
	 * (normalised), when the kernel gives it (has_ct); else `why` says
	 * why not (KERNEL_OK: the kernel sends none).
	 */
	bool has_ct;
	struct flow_full ct;
	enum kernel_reason why;
	/*
	 * Without a conntrack: the packet's addresses, protocol and ports (or
	 * ICMP type, code and id) as they are at the hook (has_tuple), zone 0.
	 * A packet travelling in the reply direction, queued before NAT
	 * (prerouting, priority above conntrack's and below DNAT's), carries
	 * exactly its conntrack's reply tuple.
	 */
	bool has_tuple;
	struct flow_tuple tuple;
};

struct kernel_nfqueue_cb {
	/* One queued packet (`p` valid during the call only).  Required. */
	void (*on_packet)(void *arg, const struct kernel_nfqueue_packet *p);
};

struct kernel_nfqueue_stats {
	uint64_t packets;               /* handed to on_packet() */
	uint64_t malformed;             /* messages without a packet id: nothing to answer */
	uint64_t overruns;              /* ENOBUFS on the socket: packets the kernel could not tell us of */
	uint64_t verdicts;              /* verdicts sent */
	uint64_t verdict_errors;        /* verdicts the kernel refused (an id it no longer holds) */
	bool kernel_ct;                 /* the kernel sends each packet's conntrack */
};

/*
 * Bind NFQUEUE `num`, at most `maxlen` packets waiting in the kernel
 * (beyond, FAIL_OPEN accepts them there), and watch it on `loop`.
 * Returns NULL with *err = -errno (-EBUSY: another process has the queue).
 */
struct kernel_nfqueue *kernel_nfqueue_open(struct loop *loop, uint16_t num, uint32_t maxlen,
					   const struct kernel_nfqueue_cb *cb, void *arg, int *err);
/* Unbind and close: the packets still waiting are dropped by the kernel.  Safe on NULL. */
void kernel_nfqueue_close(struct kernel_nfqueue *q);
/*
 * Let packet `id` go on (NF_ACCEPT).  The verdict is queued in a buffer,
 * sent when it fills or by kernel_nfqueue_flush().  0 or -errno.
 */
int kernel_nfqueue_accept(struct kernel_nfqueue *q, uint32_t id);
/* Send the verdicts queued so far, in one system call.  0 or -errno. */
int kernel_nfqueue_flush(struct kernel_nfqueue *q);
void kernel_nfqueue_get_stats(const struct kernel_nfqueue *q, struct kernel_nfqueue_stats *st);

/*
 * One conntrack read back by its reply tuple (and zone), synchronously, as
 * kernel_get() by the original one.  0 and *out, -ENOENT, or -errno.
 */
struct kernel_getter;
int kernel_get_reply(struct kernel_getter *g, const struct flow_tuple *reply, struct flow_full *out);

#endif
