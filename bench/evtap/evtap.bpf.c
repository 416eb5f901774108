/*
 * bench/evtap/evtap.bpf.c: the state changes of the firewall's conntrack
 * entries, seen from a netfilter BPF hook after conntrack, into a ring
 * buffer: what a replication daemon would read instead of ctnetlink's
 * NEW and UPDATE events (issue 19, part 2's "under the floor").
 *
 * The hook runs for every packet at INPUT and POSTROUTING, just before
 * the conntrack confirmation, so a new entry is seen unconfirmed and a
 * TCP state change is seen after conntrack made it.  What a packet
 * changed is found by comparing the entry's TCP state and its
 * SEEN_REPLY and ASSURED bits with the last ones reported, kept in an
 * LRU hash keyed by the entry's address.  Records never wake the reader
 * (BPF_RB_NO_WAKEUP): it polls on its own CPU, so the forwarding CPU
 * never pays a cross-CPU wake-up.  Built against the running kernel's
 * BTF (vmlinux.h from bpftool), licensed GPL as the kernel's helpers
 * require.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define IPS_SEEN_REPLY_BIT 1
#define IPS_ASSURED_BIT 2
#define IPS_CONFIRMED_BIT 3
#define NF_ACCEPT 1

enum { TAP_NEW = 1, TAP_UPDATE = 2 };

/* What a daemon needs to build a state: both tuples and the mutable fields. */
struct tap_rec {
	__u8 kind;
	__u8 tcp_state;
	__u16 zone;
	__u32 status;
	__u32 timeout;          /* jiffies, absolute */
	__u32 mark;
	struct nf_conntrack_tuple tuple[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 20);
	__type(key, __u64);
	__type(value, __u32);
} reported SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

SEC("netfilter")
int evtap(struct bpf_nf_ctx *ctx)
{
	unsigned long nfct = ctx->skb->_nfct;
	struct nf_conn *ct = (struct nf_conn *)(nfct & ~7UL);
	unsigned long status;
	__u8 l4, state = 0;
	__u32 now, *was, zero = 0;
	__u64 key = (__u64)ct, *nlost;
	struct tap_rec *r;

	/* no entry, or the untracked template */
	if (!ct || (nfct & 7) == 7)
		return NF_ACCEPT;
	if (bpf_probe_read_kernel(&status, sizeof(status), &ct->status) ||
	    bpf_probe_read_kernel(&l4, sizeof(l4), &ct->tuplehash[0].tuple.dst.protonum))
		return NF_ACCEPT;
	if (l4 == IPPROTO_TCP)
		bpf_probe_read_kernel(&state, sizeof(state), &ct->proto.tcp.state);
	now = state | (__u32)(status & (1UL << IPS_SEEN_REPLY_BIT | 1UL << IPS_ASSURED_BIT)) << 8;
	was = bpf_map_lookup_elem(&reported, &key);
	if (was && *was == now && (status & 1UL << IPS_CONFIRMED_BIT))
		return NF_ACCEPT;
	bpf_map_update_elem(&reported, &key, &now, BPF_ANY);
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		nlost = bpf_map_lookup_elem(&lost, &zero);
		if (nlost)
			__sync_fetch_and_add(nlost, 1);
		return NF_ACCEPT;
	}
	r->kind = (status & 1UL << IPS_CONFIRMED_BIT) ? TAP_UPDATE : TAP_NEW;
	r->tcp_state = state;
	r->status = (__u32)status;
	bpf_probe_read_kernel(&r->zone, sizeof(r->zone), &ct->zone.id);
	bpf_probe_read_kernel(&r->timeout, sizeof(r->timeout), &ct->timeout);
	bpf_probe_read_kernel(&r->mark, sizeof(r->mark), &ct->mark);
	bpf_probe_read_kernel(&r->tuple[0], sizeof(r->tuple[0]), &ct->tuplehash[0].tuple);
	bpf_probe_read_kernel(&r->tuple[1], sizeof(r->tuple[1]), &ct->tuplehash[1].tuple);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return NF_ACCEPT;
}
