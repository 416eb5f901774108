/*
 * src/kernel/tap.bpf.c - EventSource bpf: conntrack events without
 * ctnetlink's per-event messages (doc/bpf-events.md).
 *
 * ctnetlink builds a message on the forwarding CPU for every new entry and
 * every state change, for every reader; on a firewall that is most of what
 * replication costs it (bench/session-rate.sh).  Here two programs feed one
 * ring buffer instead:
 *
 * tap_packet, a netfilter hook at INPUT and POSTROUTING just before the
 * conntrack confirmation, sees each packet's entry after conntrack (and
 * NAT) handled it, and writes a fixed record when the packet changed it.
 * The kernel says which packets do: the events a packet causes wait in
 * the entry's event cache until the confirmation hook delivers them, right
 * after this one, so a non-empty cache is exactly a change ctnetlink would
 * report (a new entry excepted: its NEW is cached by the confirmation).
 * The entry has that cache because the event socket listens to the
 * DESTROY group (nf_conntrack_events 2, the default, adds it to every
 * entry while a listener exists).
 *
 * tap_netlink, the event socket's filter, copies each ctnetlink event the
 * socket is subscribed to (DESTROY, which happens in the garbage collector
 * or a timer, off any packet's path) into the same ring and drops it from
 * the socket, so that one ring holds every event in the kernel's order: a
 * destroy is always behind the changes of its entry, and ahead of a new
 * entry with the same tuple.  Our own writes' events are dropped here,
 * expectation events left to the socket.
 *
 * The structures below name only the fields read; libbpf relocates each
 * access against the running kernel's BTF (CO-RE), so one object works
 * across kernel versions.  The license string says GPL, as the kernel's
 * helpers require (the project is GPL-2.0-or-later).
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "kernel/tap_rec.h"

char LICENSE[] SEC("license") = "GPL";

/* ---- the kernel's types, as far as they are read (CO-RE) ------------------ */

union nf_inet_addr {
	__u32 all[4];
} __attribute__((preserve_access_index));

union nf_conntrack_man_proto {
	__be16 all;
} __attribute__((preserve_access_index));

struct nf_conntrack_man {
	union nf_inet_addr u3;
	union nf_conntrack_man_proto u;
	__u16 l3num;
} __attribute__((preserve_access_index));

struct nf_conntrack_tuple {
	struct nf_conntrack_man src;
	struct {
		union nf_inet_addr u3;
		union {
			__be16 all;
		} u;
		__u8 protonum;
	} dst;
} __attribute__((preserve_access_index));

struct nf_conntrack_tuple_hash {
	struct nf_conntrack_tuple tuple;
} __attribute__((preserve_access_index));

struct nf_conntrack_zone {
	__u16 id;
} __attribute__((preserve_access_index));

struct ip_ct_tcp_state {
	__u8 td_scale;
} __attribute__((preserve_access_index));

struct ip_ct_tcp {
	struct ip_ct_tcp_state seen[2];
	__u8 state;
} __attribute__((preserve_access_index));

union nf_conntrack_proto {
	struct ip_ct_tcp tcp;
} __attribute__((preserve_access_index));

struct nf_ct_ext {
	__u8 offset[9];
} __attribute__((preserve_access_index));

enum nf_ct_ext_id {
	NF_CT_EXT_HELPER,
	NF_CT_EXT_SEQADJ,
	NF_CT_EXT_ECACHE,
	NF_CT_EXT_LABELS,
	NF_CT_EXT_SYNPROXY,
};

struct nf_conntrack_ecache {
	unsigned long cache;
} __attribute__((preserve_access_index));

struct nf_conn {
	__u32 timeout;
	struct nf_conntrack_zone zone;
	struct nf_conntrack_tuple_hash tuplehash[2];
	unsigned long status;
	struct nf_conn *master;
	__u32 mark;
	struct nf_ct_ext *ext;
	union nf_conntrack_proto proto;
} __attribute__((preserve_access_index));

struct sk_buff {
	unsigned long _nfct;
} __attribute__((preserve_access_index));

struct nf_hook_state;
struct bpf_nf_ctx {
	const struct nf_hook_state *state;
	struct sk_buff *skb;
} __attribute__((preserve_access_index));

/* ---- maps and settings ---------------------------------------------------- */

#define IPS_CONFIRMED (1UL << 3)
#define IPS_DYING (1UL << 9)
#define IPS_UNTRACKED (1UL << 12)
#define NF_ACCEPT 1
#define PROTO_ICMP 1
#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_ICMPV6 58
#define NLMSG_PID_OFFSET 12
#define NLMSG_TYPE_OFFSET 4

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);           /* resized by the reader before load */
} tap_ring SEC(".maps");

/* tap_netlink's staging area: a ring reservation has a fixed size, a message has not. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[sizeof(struct tap_hdr) + TAP_NETLINK_MAX]);
} tap_stage SEC(".maps");

extern unsigned int CONFIG_HZ __kconfig __weak;

/* The only variable of .bss: the reader maps it (tap_rec.h). */
struct tap_shared tap_shared;

/* ---- tap_packet ----------------------------------------------------------- */

/*
 * The entry is copied to the stack in one read and its fields taken from
 * the copy: a probe read costs about as much for 8 bytes as for 300, and a
 * packet needs several fields.  The stack, not a per-CPU map, because a
 * softirq can run this program again on the same CPU in the middle of a
 * locally sent packet's run.  The reader checks the kernel's struct nf_conn
 * against TAP_CT_COPY before loading (tap.c).
 */
#define CT_FIELD(raw, ct, field) \
	(*(typeof(ct->field) *)((raw) + bpf_core_field_offset(ct->field)))

/* Tuple `dir` of the entry; a macro, as CO-RE wants a constant index. */
#define COPY_TUPLE(t, raw, ct, dir) do { \
	__builtin_memcpy((t)->src, &CT_FIELD(raw, ct, tuplehash[dir].tuple.src.u3), 16); \
	__builtin_memcpy((t)->dst, &CT_FIELD(raw, ct, tuplehash[dir].tuple.dst.u3), 16); \
	(t)->src_l4 = CT_FIELD(raw, ct, tuplehash[dir].tuple.src.u.all); \
	(t)->dst_l4 = CT_FIELD(raw, ct, tuplehash[dir].tuple.dst.u.all); \
	(t)->l3num = CT_FIELD(raw, ct, tuplehash[dir].tuple.src.l3num); \
	(t)->l4proto = CT_FIELD(raw, ct, tuplehash[dir].tuple.dst.protonum); \
	(t)->pad = 0; \
} while (0)

/* The enumerator's value is the running kernel's; absent in it = no such extension. */
#define EXT_ID(id) \
	(bpf_core_enum_value_exists(enum nf_ct_ext_id, id) ? bpf_core_enum_value(enum nf_ct_ext_id, id) : 9)

SEC("netfilter")
int tap_packet(struct bpf_nf_ctx *ctx)
{
	unsigned long nfct = ctx->skb->_nfct;
	const struct nf_conn *ct = (const struct nf_conn *)(nfct & ~7UL);
	const struct nf_conntrack_ecache *e;
	__u8 raw[TAP_CT_COPY];
	__u8 off[9];
	unsigned long status, cache = 0;
	__u32 ids[4], ecache = EXT_ID(NF_CT_EXT_ECACHE);
	const struct nf_ct_ext *ext;
	__u8 l4, state = 0;
	struct tap_ct *r;

	if (!ct || bpf_probe_read_kernel(raw, bpf_core_type_size(struct nf_conn), ct) < 0)
		return NF_ACCEPT;
	status = CT_FIELD(raw, ct, status);
	if (status & (IPS_UNTRACKED | IPS_DYING))
		return NF_ACCEPT;
	ext = CT_FIELD(raw, ct, ext);
	if (!ext || bpf_probe_read_kernel(off, sizeof(off), ext) < 0 || ecache >= 9 || !off[ecache])
		return NF_ACCEPT;       /* no event cache: the kernel reports nothing of it either */
	e = (const struct nf_conntrack_ecache *)((const __u8 *)ext + off[ecache]);
	/*
	 * An unconfirmed entry is new: its NEW event is cached only by the
	 * confirmation itself, and a first UDP or ICMP packet caches nothing
	 * before it.
	 */
	if (bpf_probe_read_kernel(&cache, sizeof(cache), &e->cache) < 0 ||
	    (!cache && (status & IPS_CONFIRMED)))
		return NF_ACCEPT;       /* this packet changed nothing */
	r = bpf_ringbuf_reserve(&tap_ring, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&tap_shared.lost_ct, 1);
		return NF_ACCEPT;
	}
	l4 = CT_FIELD(raw, ct, tuplehash[0].tuple.dst.protonum);
	if (l4 == PROTO_TCP)
		state = CT_FIELD(raw, ct, proto.tcp.state);
	r->hdr.kind = (status & IPS_CONFIRMED) ? TAP_REC_UPDATE : TAP_REC_NEW;
	r->hdr.len = sizeof(*r) - sizeof(r->hdr);
	r->status = (__u32)status;
	r->mark = CT_FIELD(raw, ct, mark);
	r->zone = CT_FIELD(raw, ct, zone.id);
	r->tcp_state = state;
	r->flags = 0;
	r->wscale[0] = r->wscale[1] = 0;
	r->pad[0] = r->pad[1] = 0;
	r->timeout_s = 0;
	if (CONFIG_HZ) {
		__s32 left = (__s32)(CT_FIELD(raw, ct, timeout) - (__u32)bpf_jiffies64());

		r->timeout_s = left > 0 ? (__u32)left / CONFIG_HZ : 0;
		r->flags |= TAP_CT_TIMEOUT;
	}
	if (l4 == PROTO_TCP) {
		r->wscale[0] = CT_FIELD(raw, ct, proto.tcp.seen[0].td_scale);
		r->wscale[1] = CT_FIELD(raw, ct, proto.tcp.seen[1].td_scale);
	} else if (l4 != PROTO_UDP && l4 != PROTO_ICMP && l4 != PROTO_ICMPV6) {
		r->flags |= TAP_CT_PARTIAL;
	}
	if (CT_FIELD(raw, ct, master))
		r->flags |= TAP_CT_PARTIAL;
	ids[0] = EXT_ID(NF_CT_EXT_HELPER);
	ids[1] = EXT_ID(NF_CT_EXT_SEQADJ);
	ids[2] = EXT_ID(NF_CT_EXT_LABELS);
	ids[3] = EXT_ID(NF_CT_EXT_SYNPROXY);
	for (int i = 0; i < 4; i++)
		if (ids[i] < 9 && off[ids[i]])
			r->flags |= TAP_CT_PARTIAL;
	COPY_TUPLE(&r->tuple[0], raw, ct, 0);
	COPY_TUPLE(&r->tuple[1], raw, ct, 1);
	/* While the reader polls, a wake-up would cost this CPU an interrupt for nothing. */
	bpf_ringbuf_submit(r, tap_shared.polling ? BPF_RB_NO_WAKEUP : 0);
	return NF_ACCEPT;
}

/* ---- tap_netlink ---------------------------------------------------------- */

SEC("socket")
int tap_netlink(struct __sk_buff *skb)
{
	__u32 zero = 0, pid = 0, len = skb->len, i;
	__u16 type = 0;
	__u8 *stage;
	struct tap_hdr *h;

	if (bpf_skb_load_bytes(skb, NLMSG_PID_OFFSET, &pid, sizeof(pid)) < 0 ||
	    bpf_skb_load_bytes(skb, NLMSG_TYPE_OFFSET, &type, sizeof(type)) < 0)
		return 0;
	for (i = 0; i < TAP_OWN_MAX; i++)
		if (i < tap_shared.nown && pid && tap_shared.own[i] == pid)
			return 0;       /* our own write */
	/* expectations (subsystem 2) stay on the socket */
	if ((type >> 8) != 1)
		return skb->len;
	if (len > TAP_NETLINK_MAX) {
		__sync_fetch_and_add(&tap_shared.too_long, 1);
		return 0;
	}
	if (len < 16)
		return 0;       /* not a conntrack message */
	stage = bpf_map_lookup_elem(&tap_stage, &zero);
	if (!stage)
		return 0;
	h = (struct tap_hdr *)stage;
	h->kind = TAP_REC_NETLINK;
	h->len = (__u16)len;
	if (bpf_skb_load_bytes(skb, 0, stage + sizeof(*h), len) < 0)
		return 0;
	if (bpf_ringbuf_output(&tap_ring, stage, sizeof(*h) + len, tap_shared.polling ? BPF_RB_NO_WAKEUP : 0) < 0)
		__sync_fetch_and_add(&tap_shared.lost_netlink, 1);
	return 0;
}
