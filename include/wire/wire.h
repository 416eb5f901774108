/*
 * wire/wire.h - the conntrackd-1.4.7-compatible codec (module `wire`).
 *
 * Pure functions between bytes and records: no allocation, no system
 * call, no global state.  Encoders write into a caller's buffer of a given
 * capacity and return the length written or a negative errno; they never
 * write past the capacity.  Decoders read only the bytes they are given and
 * return a reason (enum wire_reason, WIRE_OK = 0) for every rejection.
 *
 * Byte layouts, ids and quirks: wire_format.h and doc/protocol.md §2.
 */
#ifndef CTSYNCD_WIRE_H
#define CTSYNCD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow/flow.h"
#include "wire/format.h"

/* ---- reasons -------------------------------------------------------------- */

/*
 * Why a message (or the rest of a datagram) was not accepted.  The first
 * group is 1.4.7's own behaviour; the second is ctsyncd's extra strictness
 * where 1.4.7 accepts a message that cannot be keyed or applied safely.
 */
enum wire_reason {
	WIRE_OK = 0,
	/* framing and header, protocol.md §2.11 steps 1-5 and 7 */
	WIRE_R_TRUNCATED,               /* fewer bytes left than a header needs */
	WIRE_R_BAD_SIZE,                /* len 0, len past the end, or below its form's minimum */
	WIRE_R_WRONG_VERSION,           /* version nibble != 1: skip before seq tracking */
	WIRE_R_BAD_HEADER,              /* unknown type, or flags that fit no kind (MSG_BAD) */
	WIRE_R_BAD_TYPE,                /* data decoder given a type it does not carry */
	/* TLV payload, protocol.md §2.11 step 7 ("malformed payload") */
	WIRE_R_ATTR_OVERRUN,            /* nta_len > bytes left in the message */
	WIRE_R_ATTR_SHORT,              /* nta_len < 4 */
	WIRE_R_ATTR_UNKNOWN,            /* id >= NTA_MAX (33) or NTA_EXP_MAX (21) */
	WIRE_R_ATTR_SIZE,               /* fixed-size attribute with another nta_len */
	WIRE_R_ATTR_TOO_LONG,           /* variable attribute over its maximum nta_len */
	/* ctsyncd's strictness, also counted as "malformed payload" */
	WIRE_R_NO_ADDRESS,              /* neither IPV4 nor IPV6 */
	WIRE_R_TWO_FAMILIES,            /* both IPV4 and IPV6 */
	WIRE_R_NO_L4PROTO,
	WIRE_R_NO_PORTS,                /* TCP, UDP, SCTP or DCCP without PORT */
	WIRE_R_PROTO_MISMATCH,          /* attribute of another protocol (PORT on ICMP, ...) */
	WIRE_R_NAT_FAMILY,              /* NAT address of the other family */
	WIRE_R_MASTER_INCOMPLETE,       /* master attributes without master address or l4proto */
	WIRE_R_MASTER_TWO_FAMILIES,     /* both MASTER_IPV4 and MASTER_IPV6 */
	WIRE_R_STRING_UNTERMINATED,     /* helper or expectfn name without its NUL */
	WIRE_R_EXP_NO_MASTER,           /* expectation without master address and l4proto */
	WIRE_R_EXP_NO_TUPLE,            /* expectation without expected address and l4proto */
	WIRE_R_EXP_NO_MASK,             /* expectation without mask address and l4proto */
	WIRE_R_EXP_FAMILY_MISMATCH,     /* master, expected and mask tuples of different families */
	WIRE_R_EXP_NAT_INCOMPLETE,      /* NAT port, l4proto or dir without the NAT address */
	WIRE_R_MAX
};

/* The `conntrackd -s network` counter a reason is counted under (protocol.md §2.12). */
enum wire_counter {
	WIRE_C_NONE = 0,
	WIRE_C_WRONG_VERSION,
	WIRE_C_BAD_HEADER,              /* "malformed header" */
	WIRE_C_BAD_PAYLOAD,             /* "malformed payload" */
	WIRE_C_BAD_TYPE,
	WIRE_C_TRUNCATED,
	WIRE_C_BAD_SIZE,
	WIRE_C_MAX
};

/* A short name for logs and statistics ("attribute id out of range"); never NULL. */
const char *wire_reason_name(enum wire_reason r);
/* An identifier-like name for JSON keys ("attr_unknown"); never NULL. */
const char *wire_reason_key(enum wire_reason r);
enum wire_counter wire_reason_counter(enum wire_reason r);
/* True for the reasons where 1.4.7 would have accepted the message. */
bool wire_reason_is_strict(enum wire_reason r);

/* ---- header and control messages (protocol.md §2.2-protocol.md §2.4) ------------------------------ */

struct wire_hdr {
	uint8_t version;                /* high nibble of byte 0 */
	uint8_t type;                   /* WIRE_T_*: low nibble of byte 0 */
	uint8_t flags;                  /* WIRE_F_* */
	uint16_t len;                   /* whole message, header included */
	uint32_t seq;
	uint32_t from, to;              /* ACK/NACK/RESYNC range; 0 for other messages */
};

/* What a received message is, by protocol.md §2.4's classification. */
enum wire_kind {
	WIRE_K_DATA,                    /* type <= 5, no flag but HELLO/HELLO_BACK */
	WIRE_K_ACK,
	WIRE_K_NACK,
	WIRE_K_RESYNC,
	WIRE_K_ALIVE,
	WIRE_K_BAD,                     /* anything else: "malformed header" in FTFW/NOTRACK */
};

/*
 * Classify a header: data first, then (type 10 only) ACK, NACK, RESYNC,
 * ALIVE, first match wins.  ALARM mode does not use this: it takes any
 * message with flags == 0 as data and lets the decoders say WIRE_R_BAD_TYPE.
 */
enum wire_kind wire_classify(const struct wire_hdr *h);
const char *wire_kind_name(enum wire_kind k);
/* "CT_NEW", ..., "EXP_DEL", "CTL"; "?" for the types that do not exist. */
const char *wire_type_name(uint8_t type);

/*
 * Read the header at `buf` (`len` bytes available).  from/to are read when
 * the header is of the 16-byte form (type 10 with ACK, NACK or RESYNC) and
 * 16 bytes are available, else left 0.  Returns WIRE_OK or
 * WIRE_R_TRUNCATED (fewer than 8 bytes).  No other check: the splitter
 * applies protocol.md §2.11.
 */
enum wire_reason wire_hdr_decode(const void *buf, size_t len, struct wire_hdr *h);

/*
 * Encode a control message: ACK, NACK or RESYNC (16 bytes, with `from` and
 * `to`) if `flags` has one of them, else ALIVE (8 bytes; WIRE_F_ALIVE is
 * added).  `flags` may carry HELLO/HELLO_BACK.  A RESYNC request is sent
 * with from = to = 0 (protocol.md §2.2).  Returns the length, -ENOSPC if `cap` is too
 * small (nothing written), -EINVAL for flags outside WIRE_F_*.
 */
int wire_ctl_encode(void *buf, size_t cap, uint8_t flags, uint32_t seq, uint32_t from, uint32_t to);

/* ---- the splitter (protocol.md §2.11 steps 1-5) ----------------------------------------- */

struct wire_msg {
	const uint8_t *data;            /* the whole message, header included */
	size_t len;                     /* hdr.len */
	struct wire_hdr hdr;
	enum wire_kind kind;
	enum wire_reason reason;        /* WIRE_OK, or WIRE_R_WRONG_VERSION: count and skip */
};

enum wire_split_status {
	WIRE_SPLIT_MSG,                 /* *m holds the next message; see m->reason */
	WIRE_SPLIT_END,                 /* every byte consumed */
	WIRE_SPLIT_ERROR,               /* m->reason: TRUNCATED or BAD_SIZE; the rest is dropped */
	WIRE_SPLIT_MORE,                /* stream: the next message is not complete yet */
};

struct wire_split {
	const uint8_t *buf;
	size_t len;
	size_t off;                     /* start of the next message */
	bool stream;
	bool stopped;                   /* an ERROR or MORE was returned: */
	enum wire_split_status stop_status;     /* repeat it */
	enum wire_reason stop_reason;
};

/*
 * Iterate the messages of one datagram (`stream` false) or of the bytes
 * received so far on a TCP stream (`stream` true).  In stream mode a
 * message that is not complete yet gives WIRE_SPLIT_MORE instead of
 * truncated/bad size: keep the bytes from wire_split_offset() on and call
 * again with more.  A length that can never be valid (0, or under its
 * form's minimum) is WIRE_SPLIT_ERROR in both modes.  After an ERROR or
 * MORE, every later call returns the same status.
 */
void wire_split_init(struct wire_split *s, const void *buf, size_t len, bool stream);
enum wire_split_status wire_split_next(struct wire_split *s, struct wire_msg *m);
/* Bytes consumed by whole messages so far. */
size_t wire_split_offset(const struct wire_split *s);

/*
 * The framing a link asks its owner for (link.h: link_frame_len_fn and
 * link_frame_valid_fn; `arg` is unused).  wire_frame_len(): the length of
 * the first message at the head of a stream, 0 while more bytes are
 * needed, -EBADMSG with *why naming the reason when the bytes can never
 * start one (a foreign version is still a whole message: the engine
 * counts it).  wire_frame_valid(): a datagram starts with a whole message
 * of our version.
 */
long wire_frame_len(void *arg, const void *buf, size_t len, const char **why);
bool wire_frame_valid(void *arg, const void *buf, size_t len);

/* ---- conntrack messages (protocol.md §2.7) ---------------------------------------------- */

/* Encoder options: what 1.4.7 sends depends on its configuration. */
enum wire_enc_opt {
	WIRE_ENC_TIMEOUT        = 1u << 0, /* emit TIMEOUT (1.4.7: when CommitTimeout is 0) */
	WIRE_ENC_WSCALE         = 1u << 1, /* emit TCP window scales (TCPWindowTracking on) */
	/*
	 * Emit PORT for UDPlite too (and port attributes of expectations whose
	 * master is UDPlite).  1.4.7 accepts PORT for any protocol but never
	 * sends it for UDPlite, so its UDPlite flows have no ports in their key.
	 */
	WIRE_ENC_UDPLITE_PORTS  = 1u << 2,
	/*
	 * The key only: addresses, protocol, ports or ICMP id/type/code, zone.
	 * For CT_DEL: 1.4.7 sends the whole cached state with a DEL, but its
	 * receiver (and ours) only looks the key up, in its cache or in the
	 * kernel; half the bytes of a TCP state's DEL.
	 */
	WIRE_ENC_KEY_ONLY       = 1u << 3,
};

/* What an encoder left out because 1.4.7 would reject it or never sends it. */
enum wire_omit {
	WIRE_OMIT_HELPER        = 1u << 0, /* helper name over 11 chars: 1.4.7 drops the message */
	WIRE_OMIT_PORTS         = 1u << 1, /* UDPlite ports without WIRE_ENC_UDPLITE_PORTS */
	WIRE_OMIT_EXP_NAT       = 1u << 2, /* NAT tuple of an IPv6 expectation (IPv4 only) */
	WIRE_OMIT_EXP_FN        = 1u << 3, /* expectfn name over 27 chars */
};

static inline bool wire_type_is_ct(uint8_t type)
{
	return type <= WIRE_T_CT_DEL;
}

static inline bool wire_type_is_exp(uint8_t type)
{
	return type >= WIRE_T_EXP_NEW && type <= WIRE_T_EXP_DEL;
}

/*
 * Encode `f` as a conntrack message of h->type (CT_NEW/UPD/DEL) with
 * h->flags (HELLO/HELLO_BACK only) and h->seq; h->version, len, from and to
 * are not read.  Attributes go out in 1.4.7's order with its quirks:
 * PORT always for TCP, UDP, SCTP and DCCP (as 1.4.7; zeros if FLOW_A_PORTS
 * is clear), the per-protocol attributes only for their protocol.  What
 * 1.4.7 would reject or never sends is left out and reported in *omitted
 * (enum wire_omit; may be NULL).  Returns the length (a multiple of 4, at most
 * WIRE_CT_MAX_LEN), -ENOSPC if it does not fit in `cap` (bytes up to `cap`
 * may have been written), -EINVAL for a bad type, flags or family.
 */
int wire_ct_encode(void *buf, size_t cap, const struct wire_hdr *h, const struct flow_full *f,
		   unsigned opts, unsigned *omitted);

/* The exact length wire_ct_encode() would return for `f` and `opts`, or -EINVAL. */
int wire_ct_size(const struct flow_full *f, unsigned opts);

/*
 * Decode the conntrack message `msg` of `len` bytes (header included: as
 * the splitter gives it) into `out`.  On WIRE_OK, out->flow and out->ext
 * are normalised: every field whose FLOW_A_* bit is clear is zero, unused
 * address and l4 bytes are zero, flow.ext is 0; out->labels.w[] is written
 * (all 256 words, zeros past labels.words) only when FLOW_A_LABELS is set,
 * labels.words is always written.  On a rejection `out` is unspecified.
 */
enum wire_reason wire_ct_decode(const void *msg, size_t len, struct flow_full *out);

/* ---- expectation messages (protocol.md §2.10) ---------------------------------------------- */

/*
 * Expectations travel as struct flow_exp (flow.h).  Tuples have zone 0;
 * their l4.port is meaningful only when the master's l4proto has ports
 * (TCP, UDP, UDPlite, SCTP, DCCP), as 1.4.7 emits every port attribute of
 * an expectation on that condition.  `flags` is always sent.
 */
_Static_assert(FLOW_EXP_FN_MAX == NTA_EXP_FN_NAME_MAX + 1, "expectfn name size");

/*
 * Encode `e` as an expectation message of h->type (EXP_NEW/UPD/DEL); as
 * wire_ct_encode() otherwise (WIRE_ENC_TIMEOUT and WIRE_ENC_UDPLITE_PORTS
 * apply).  Returns the length (at most WIRE_EXP_MAX_LEN), -ENOSPC or -EINVAL.
 */
int wire_exp_encode(void *buf, size_t cap, const struct wire_hdr *h, const struct flow_exp *e,
		    unsigned opts, unsigned *omitted);
int wire_exp_size(const struct flow_exp *e, unsigned opts);

/* As wire_ct_decode(), for expectation messages; `out` is fully normalised. */
enum wire_reason wire_exp_decode(const void *msg, size_t len, struct flow_exp *out);

/* ---- shared helpers ------------------------------------------------------------ */

/* The name of a conntrack / expectation attribute id ("HELPER_NAME"), "?" if unknown. */
const char *wire_ct_attr_name(uint16_t id);
const char *wire_exp_attr_name(uint16_t id);

/* Does a tuple of this IP protocol carry ports (TCP, UDP, UDPlite, SCTP, DCCP)? */
bool wire_l4_has_ports(uint8_t l4proto);

#endif
