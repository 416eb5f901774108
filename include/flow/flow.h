/*
 * flow/flow.h - the one representation of a conntrack state inside ctsyncd.
 *
 * A `struct flow` is a compact, fixed-size record (64 bytes) holding what
 * almost every state has: the original tuple, zone, status, protocol state,
 * timeout, mark.  What only some states have (NAT addresses and ports, the
 * master of a related flow, a helper name, SCTP vtags, NAT sequence
 * adjustment, non-zero synproxy values) lives in a `struct flow_ext`, and
 * connlabels in a `struct flow_labels`; a table keeps those out of line and
 * refers to them by `flow.ext`, so a plain state costs only its 64 bytes.
 *
 * Which optional fields are meaningful is said by the FLOW_A_* bits in
 * `flow.attrs`; a field whose bit is clear is zero.  Addresses and ports are
 * kept in network byte order, exactly as the kernel's tuple carries them.
 */
#ifndef CTSYNCD_FLOW_H
#define CTSYNCD_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An IPv4 address uses v4 (the other 12 bytes stay zero), IPv6 all 16 bytes. */
union flow_addr {
	uint32_t v4;
	uint32_t v6[4];
	uint8_t bytes[16];
};

/* The layer-4 part of a tuple. */
union flow_l4 {
	struct {
		uint16_t sport;         /* network order */
		uint16_t dport;         /* network order */
	} port;
	struct {
		uint16_t id;            /* network order */
		uint8_t type;
		uint8_t code;
	} icmp;
	uint32_t raw;
};

/* A tuple in the original direction: the key of a flow (with the zone). */
struct flow_tuple {
	union flow_addr src;
	union flow_addr dst;
	union flow_l4 l4;
	uint8_t family;                 /* AF_INET or AF_INET6 */
	uint8_t l4proto;                /* IPPROTO_* */
	uint16_t zone;                  /* conntrack zone, host order; 0 = default */
};

/* Presence bits of `struct flow.attrs`. */
enum flow_attr {
	FLOW_A_PORTS       = 1u << 0,   /* l4.port is meaningful (TCP, UDP, UDPlite, SCTP, DCCP) */
	FLOW_A_ICMP        = 1u << 1,   /* l4.icmp is meaningful (ICMP, ICMPv6) */
	FLOW_A_STATUS      = 1u << 2,
	FLOW_A_TIMEOUT     = 1u << 3,
	FLOW_A_MARK        = 1u << 4,
	FLOW_A_ZONE        = 1u << 5,   /* a zone attribute was present (even zone 0) */
	FLOW_A_PROTO_STATE = 1u << 6,   /* TCP, SCTP or DCCP state in proto_state */
	FLOW_A_DCCP_ROLE   = 1u << 7,
	FLOW_A_WSCALE      = 1u << 8,   /* wscale_orig and wscale_repl */
	FLOW_A_SYNPROXY    = 1u << 9,   /* synproxy values present (zeros unless FLOW_A_EXT has them) */
	/* The rest live in struct flow_ext. */
	FLOW_A_SNAT        = 1u << 16,  /* ext.snat: the SNAT'ed source (reply dst) */
	FLOW_A_DNAT        = 1u << 17,  /* ext.dnat: the DNAT'ed destination (reply src) */
	FLOW_A_SPAT        = 1u << 18,  /* ext.spat: reply dst port */
	FLOW_A_DPAT        = 1u << 19,  /* ext.dpat: reply src port */
	FLOW_A_NAT_SEQ     = 1u << 20,  /* ext.nat_seq[6] */
	FLOW_A_SCTP_VTAGS  = 1u << 21,  /* ext.sctp_vtag_orig/repl */
	FLOW_A_MASTER      = 1u << 22,  /* ext.master: this flow is related to it */
	FLOW_A_HELPER      = 1u << 23,  /* ext.helper */
	FLOW_A_SYNPROXY_EXT = 1u << 24, /* ext.synproxy[3] holds non-zero values */
	FLOW_A_LABELS      = 1u << 25,  /* a struct flow_labels with at least one bit set */
	/*
	 * No labels now, but there were some.  The internal cache sets it (and
	 * clears it when labels return); the encoder then sends an all-zero
	 * label array, so that a peer that merges updates into what it has
	 * (conntrackd 1.4.7) drops its copy; the decoder sets it for such an
	 * array, and a kernel UPDATE built from it clears the entry's labels.
	 */
	FLOW_A_LABELS_GONE = 1u << 26,
};

#define FLOW_A_EXT_MASK  (FLOW_A_SNAT | FLOW_A_DNAT | FLOW_A_SPAT | FLOW_A_DPAT | FLOW_A_NAT_SEQ | \
			  FLOW_A_SCTP_VTAGS | FLOW_A_MASTER | FLOW_A_HELPER | FLOW_A_SYNPROXY_EXT)

struct flow {
	struct flow_tuple orig;         /* 40 bytes */
	uint32_t status;                /* kernel IPS_* bits, host order */
	uint32_t timeout;               /* seconds left when last seen */
	uint32_t mark;
	uint32_t attrs;                 /* FLOW_A_* */
	uint8_t proto_state;            /* enum tcp_conntrack / sctp_conntrack / dccp state */
	uint8_t dccp_role;
	uint8_t wscale_orig;
	uint8_t wscale_repl;
	uint32_t ext;                   /* table's handle of the flow_ext/labels; 0 = none */
};

#define FLOW_HELPER_NAME_MAX 16         /* with the NUL */

struct flow_ext {
	union flow_addr snat;
	union flow_addr dnat;
	uint16_t spat;                  /* network order */
	uint16_t dpat;                  /* network order */
	uint32_t sctp_vtag_orig;
	uint32_t sctp_vtag_repl;
	uint32_t nat_seq[6];            /* orig pos, before, after; repl pos, before, after */
	uint32_t synproxy[3];           /* its, isn, tsoff */
	struct flow_tuple master;       /* zone unused */
	char helper[FLOW_HELPER_NAME_MAX];
};

/* connlabels: word i bit b = label 32*i+b; 1.4.7 accepts up to 1024 bytes (256 words). */
#define FLOW_LABEL_WORDS_MAX 256
struct flow_labels {
	uint16_t words;                 /* 1..FLOW_LABEL_WORDS_MAX when FLOW_A_LABELS */
	uint32_t w[FLOW_LABEL_WORDS_MAX];
};

/*
 * Packet and byte counters of both directions, as a kernel event carries
 * them (nf_conntrack_acct).  Only for the moment: tables and the wire do
 * not keep them; Stats mode logs them with each destroyed flow.
 */
struct flow_counters {
	uint64_t packets[2];            /* original, reply */
	uint64_t bytes[2];
	bool present;
	bool times;                     /* start and stop below (nf_conntrack_timestamp) */
	uint64_t start_ns, stop_ns;     /* since the epoch; stop 0 while the flow lives */
};

/* A whole state, as decoded from the wire or from netlink, before a table stores it. */
struct flow_full {
	struct flow flow;
	struct flow_ext ext;
	struct flow_labels labels;
	struct flow_counters counters;  /* zero (and not present) unless a kernel message had them */
};

/* ---- expectations ------------------------------------------------------------- */

/* Which optional parts of a struct flow_exp are present. */
enum flow_exp_attr {
	FLOW_EXP_A_TIMEOUT      = 1u << 0,
	FLOW_EXP_A_CLASS        = 1u << 1,
	FLOW_EXP_A_NAT          = 1u << 2, /* nat tuple and nat_dir */
	FLOW_EXP_A_HELPER       = 1u << 3,
	FLOW_EXP_A_FN           = 1u << 4,
};

#define FLOW_EXP_FN_MAX 28              /* expectfn name with its NUL (1.4.7's limit) */

/*
 * An expectation: a helper's announcement that a connection matching
 * `tuple` under `mask` belongs to the master conntrack.  The kernel names
 * it by (tuple, mask, zone); the zone is master.zone (the master's).
 * Unused bytes are zero, so records compare with memcmp.
 */
struct flow_exp {
	struct flow_tuple master;       /* the master conntrack's original tuple, and the zone */
	struct flow_tuple tuple;        /* the expected tuple (zone 0) */
	struct flow_tuple mask;         /* (zone 0) */
	struct flow_tuple nat;          /* FLOW_EXP_A_NAT (zone 0) */
	uint32_t timeout;               /* FLOW_EXP_A_TIMEOUT: seconds left */
	uint32_t flags;                 /* NF_CT_EXPECT_* */
	uint32_t class;                 /* FLOW_EXP_A_CLASS */
	uint32_t nat_dir;               /* FLOW_EXP_A_NAT */
	uint32_t attrs;                 /* FLOW_EXP_A_* */
	char helper[FLOW_HELPER_NAME_MAX];
	char fn[FLOW_EXP_FN_MAX];
};

/* Is the key of `a` equal to the key of `b` (family, tuple, zone)? */
bool flow_tuple_equal(const struct flow_tuple *a, const struct flow_tuple *b);

/* A 32-bit hash of the key, with `seed`. */
uint32_t flow_tuple_hash(const struct flow_tuple *t, uint32_t seed);

/*
 * Bring a decoded state to the canonical form that tables and comparisons
 * rely on: bytes beyond an IPv4 address and l4 bytes without FLOW_A_PORTS /
 * FLOW_A_ICMP zeroed; every field whose FLOW_A_* bit is clear zeroed (the
 * zone too without FLOW_A_ZONE); the helper name NUL-terminated and
 * zero-padded; labels trimmed of trailing zero words, FLOW_A_LABELS cleared
 * when no bit is left; `ext` = 0.  Afterwards two states with the same
 * content are equal byte for byte, except labels.w beyond labels.words,
 * which is left as it was.
 */
void flow_full_normalize(struct flow_full *ff);   /* counters too: zeroed */
/*
 * Lay a kernel UPDATE `ev` (only what changed) over the stored state
 * `cur`.  `labels_whole`: the event reports the labels even when they are
 * all zero (a reply to our own request), so none in it means none are
 * left (FLOW_A_LABELS_GONE).
 */
void flow_merge_update(struct flow_full *cur, const struct flow_full *ev, bool labels_whole);

#endif
