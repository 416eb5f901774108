/*
 * kernel/tap_rec.h - the records of the BPF event tap (EventSource bpf;
 * doc/bpf-events.md), shared by the BPF programs (src/kernel/tap.bpf.c)
 * and their reader.  Fixed-width fields only, so that both compilers lay
 * them out alike; the layout is private to one ctsyncd binary (the object
 * is built into it), never on the wire.
 *
 * The ring carries records in the kernel's order of events:
 *   TAP_REC_NEW / TAP_REC_UPDATE: a struct tap_ct, built by the netfilter
 *     hook from the entry a packet just made or changed;
 *   TAP_REC_NETLINK: a ctnetlink message (a DESTROY event, and any other
 *     event of the subscribed groups), copied whole by the event socket's
 *     filter, after a struct tap_hdr.
 */
#ifndef CTSYNCD_KERNEL_TAP_REC_H
#define CTSYNCD_KERNEL_TAP_REC_H

#include <linux/types.h>

enum tap_rec_kind {
	TAP_REC_NEW = 1,
	TAP_REC_UPDATE = 2,
	TAP_REC_NETLINK = 3,
};

/* tap_ct.flags */
enum tap_ct_flag {
	/*
	 * The entry has what the record does not carry (a master, a helper,
	 * labels, sequence adjustment, synproxy, or a protocol whose state is
	 * not read: SCTP, DCCP, GRE...): the reader asks ctnetlink for it.
	 */
	TAP_CT_PARTIAL = 1u << 0,
	TAP_CT_TIMEOUT = 1u << 1,       /* timeout_s is meaningful (the kernel's HZ is known) */
};

struct tap_hdr {
	__u16 kind;                     /* enum tap_rec_kind */
	__u16 len;                      /* bytes after this header */
};

/* A tuple as the kernel keeps it; addresses and l4 fields in network order. */
struct tap_tuple {
	__u8 src[16];
	__u8 dst[16];
	__u16 src_l4;                   /* port, ICMP id, or 0 */
	__u16 dst_l4;                   /* port, or ICMP type (first byte) and code */
	__u16 l3num;                    /* AF_INET, AF_INET6 */
	__u8 l4proto;
	__u8 pad;
};

struct tap_ct {
	struct tap_hdr hdr;
	__u32 status;                   /* IPS_* */
	__u32 timeout_s;                /* seconds left, with TAP_CT_TIMEOUT */
	__u32 mark;
	__u16 zone;
	__u8 flags;                     /* TAP_CT_* */
	__u8 tcp_state;                 /* TCP only */
	__u8 wscale[2];                 /* TCP: original, reply */
	__u8 pad[2];
	struct tap_tuple tuple[2];      /* original, reply */
};

/* The largest netlink message the event socket's filter copies whole. */
#define TAP_NETLINK_MAX 2048

#define TAP_OWN_MAX 8

/* The largest struct nf_conn the tap copies whole (248 bytes in Linux 6.18; more with lock debugging). */
#define TAP_CT_COPY 384

/* The programs' global variables (.bss), shared through its mmap. */
struct tap_shared {
	__u32 own[TAP_OWN_MAX];         /* reader: our writers' port ids, their events dropped */
	__u32 nown;
	__u32 polling;                  /* reader: it polls the ring, records need not wake it */
	__u64 lost_ct;                  /* programs: records the full ring refused */
	__u64 lost_netlink;
	__u64 too_long;                 /* netlink events over TAP_NETLINK_MAX, dropped */
};

#endif
