/*
 * wire/format.h - every size, id, flag and constant of the conntrackd 1.4.7
 * sync wire format.
 *
 * The section numbers ("protocol.md §2.2") refer to doc/protocol.md.
 * Nothing here is ours to change: a peer running conntrackd
 * 1.4.7 reads and writes exactly these bytes.
 */
#ifndef CTSYNCD_WIRE_FORMAT_H
#define CTSYNCD_WIRE_FORMAT_H

/* ---- framing and header (protocol.md §2.1, §2.2, §8) ---------------------- */

#define WIRE_VERSION            1       /* high nibble of byte 0 */
#define WIRE_HDR_LEN            8       /* version/type, flags, BE len, BE seq */
#define WIRE_CTL_RANGE_LEN      16      /* ACK/NACK/RESYNC: header + BE from + BE to */
#define WIRE_ALIVE_LEN          8       /* ALIVE is the bare header */
#define WIRE_ALIGN              4       /* TLVs start on 4-byte boundaries (protocol.md §2.6) */
#define WIRE_MSG_MAX            4096    /* 1.4.7 builds each message in a 4 KiB scratch buffer */
#define WIRE_RX_BUF             65536   /* 1.4.7's receive buffer */

/* Byte offsets inside the header (protocol.md §2.2). */
#define WIRE_OFF_VERTYPE        0
#define WIRE_OFF_FLAGS          1
#define WIRE_OFF_LEN            2
#define WIRE_OFF_SEQ            4
#define WIRE_OFF_FROM           8
#define WIRE_OFF_TO             12

/* Datagram payload limits of a channel of MTU m (protocol.md §5.1, §8). */
#define WIRE_UDP_OVERHEAD       28      /* 20 IP + 8 UDP: buffer = MTU - 28 */
#define WIRE_TCP_OVERHEAD       40      /* 20 IP + 20 TCP: buffer = MTU - 40 */

/* ---- message types: low nibble of byte 0 (protocol.md §2.3) ------------------------- */

#define WIRE_T_CT_NEW           0
#define WIRE_T_CT_UPD           1
#define WIRE_T_CT_DEL           2
#define WIRE_T_EXP_NEW          3
#define WIRE_T_EXP_UPD          4
#define WIRE_T_EXP_DEL          5
#define WIRE_T_DATA_MAX         5       /* types 0..5 carry TLVs */
#define WIRE_T_CTL              10      /* meaning given by the flags */

/* ---- flags: byte 1 (protocol.md §2.4) ------------------------------------------------ */

#define WIRE_F_RESYNC           0x02    /* CTL, 16 bytes: send me your whole cache */
#define WIRE_F_NACK             0x04    /* CTL, 16 bytes: resend [from, to] */
#define WIRE_F_ACK              0x08    /* CTL, 16 bytes: [from, to] received */
#define WIRE_F_ALIVE            0x10    /* CTL, 8 bytes: keepalive */
#define WIRE_F_HELLO            0x20    /* FTFW: sent before the peer said HELLO_BACK */
#define WIRE_F_HELLO_BACK       0x40    /* FTFW: first message after a HELLO was received */
#define WIRE_F_HELLO_MASK       (WIRE_F_HELLO | WIRE_F_HELLO_BACK)
#define WIRE_F_RANGE_MASK       (WIRE_F_ACK | WIRE_F_NACK | WIRE_F_RESYNC)
#define WIRE_F_CTL_MASK         (WIRE_F_RANGE_MASK | WIRE_F_ALIVE)

/* ---- TLV header (protocol.md §2.6) --------------------------------------------------- */

#define WIRE_TLV_HDR_LEN        4       /* BE nta_len (unpadded, header included), BE id */
#define WIRE_ALIGNED(n)         (((n) + WIRE_ALIGN - 1) & ~(WIRE_ALIGN - 1))
/* Space a TLV of payload n takes in a message, padding included. */
#define WIRE_TLV_SPACE(n)       WIRE_ALIGNED(WIRE_TLV_HDR_LEN + (n))
/*
 * 1.4.7 parses TLVs while more than 4 bytes of the message remain: up to 4
 * trailing bytes are ignored (protocol.md §2.11 step 7).
 */
#define WIRE_TLV_TRAILER_MAX    4

/* ---- conntrack attributes, message types 0..2 (protocol.md §2.7) --------------------- */

#define NTA_IPV4                0       /* 8: orig src, orig dst, raw BE */
#define NTA_IPV6                1       /* 32 */
#define NTA_L4PROTO             2       /* 1 */
#define NTA_PORT                3       /* 4: orig sport, dport, raw BE */
#define NTA_TCP_STATE           4       /* 1: enum tcp_conntrack */
#define NTA_STATUS              5       /* 4: BE IPS_* */
#define NTA_TIMEOUT             6       /* 4: BE seconds */
#define NTA_MARK                7       /* 4: BE */
#define NTA_MASTER_IPV4         8       /* 8 */
#define NTA_MASTER_IPV6         9       /* 32 */
#define NTA_MASTER_L4PROTO      10      /* 1 */
#define NTA_MASTER_PORT         11      /* 4 */
#define NTA_SNAT_IPV4           12      /* 4: reply dst, raw BE (fixed in 1.4.7, protocol.md §2.14) */
#define NTA_DNAT_IPV4           13      /* 4: reply src, raw BE */
#define NTA_SPAT_PORT           14      /* 2: reply dst port, LITTLE-endian (quirk) */
#define NTA_DPAT_PORT           15      /* 2: reply src port, LITTLE-endian (quirk) */
#define NTA_NAT_SEQ_ADJ         16      /* 24: 6 x BE u32 */
#define NTA_SCTP_STATE          17      /* 1 */
#define NTA_SCTP_VTAG_ORIG      18      /* 4: BE */
#define NTA_SCTP_VTAG_REPL      19      /* 4: BE */
#define NTA_DCCP_STATE          20      /* 1 */
#define NTA_DCCP_ROLE           21      /* 1 */
#define NTA_ICMP_TYPE           22      /* 1 (ICMP and ICMPv6) */
#define NTA_ICMP_CODE           23      /* 1 */
#define NTA_ICMP_ID             24      /* 2: LITTLE-endian (same quirk as 14/15) */
#define NTA_TCP_WSCALE_ORIG     25      /* 1: only with TCPWindowTracking */
#define NTA_TCP_WSCALE_REPL     26      /* 1 */
#define NTA_HELPER_NAME         27      /* var: NUL-terminated, nta_len <= 16 */
#define NTA_LABELS              28      /* var: BE u32 words, nta_len <= 1028 */
#define NTA_SNAT_IPV6           29      /* 16: reply dst */
#define NTA_DNAT_IPV6           30      /* 16: reply src */
#define NTA_SYNPROXY            31      /* 12: BE its, isn, tsoff (1.4.5+) */
#define NTA_ZONE                32      /* 2: BE, proper order (1.4.7+) */
#define NTA_MAX                 33      /* ids >= 33 reject the whole message (protocol.md §2.11) */

/* Payload sizes of the conntrack attributes (protocol.md §2.7). */
#define NTA_IPV4_SIZE           8
#define NTA_IPV6_SIZE           32
#define NTA_U8_SIZE             1
#define NTA_U16_SIZE            2
#define NTA_U32_SIZE            4
#define NTA_PORT_SIZE           4
#define NTA_NAT4_SIZE           4
#define NTA_NAT6_SIZE           16
#define NTA_NAT_SEQ_SIZE        24
#define NTA_SYNPROXY_SIZE       12
#define NTA_HELPER_LEN_MAX      16      /* nta_len, header included: names <= 11 chars */
#define NTA_HELPER_NAME_MAX     (NTA_HELPER_LEN_MAX - WIRE_TLV_HDR_LEN - 1)  /* 11 */
#define NTA_LABELS_LEN_MAX      1028    /* nta_len: 4 + 256 words */
#define NTA_LABELS_WORDS_MAX    ((NTA_LABELS_LEN_MAX - WIRE_TLV_HDR_LEN) / 4)  /* 256 */

/* ---- expectation attributes, message types 3..5 (protocol.md §2.10) ------------------- */

#define NTA_EXP_MASTER_IPV4     0       /* 8 */
#define NTA_EXP_MASTER_IPV6     1       /* 32 */
#define NTA_EXP_MASTER_L4PROTO  2       /* 1 */
#define NTA_EXP_MASTER_PORT     3       /* 4: raw BE sport, dport */
#define NTA_EXP_EXPECT_IPV4     4       /* 8: the expected tuple */
#define NTA_EXP_EXPECT_IPV6     5       /* 32 */
#define NTA_EXP_EXPECT_L4PROTO  6       /* 1 */
#define NTA_EXP_EXPECT_PORT     7       /* 4 */
#define NTA_EXP_MASK_IPV4       8       /* 8: the mask tuple */
#define NTA_EXP_MASK_IPV6       9       /* 32 */
#define NTA_EXP_MASK_L4PROTO    10      /* 1 */
#define NTA_EXP_MASK_PORT       11      /* 4 */
#define NTA_EXP_TIMEOUT         12      /* 4: BE; omitted with CommitTimeout */
#define NTA_EXP_FLAGS           13      /* 4: BE; always sent */
#define NTA_EXP_CLASS           14      /* 4: BE; if set */
#define NTA_EXP_NAT_IPV4        15      /* 8: NAT tuple, IPv4 only */
#define NTA_EXP_NAT_PORT        16      /* 4 */
#define NTA_EXP_NAT_L4PROTO     17      /* 1 */
#define NTA_EXP_NAT_DIR         18      /* 4: BE */
#define NTA_EXP_HELPER_NAME     19      /* var: nta_len <= 16 */
#define NTA_EXP_FN              20      /* var: nta_len <= 32, the expectfn name */
#define NTA_EXP_MAX             21      /* ids >= 21 reject the whole message */

#define NTA_EXP_FN_LEN_MAX      32      /* nta_len, header included: names <= 27 chars */
#define NTA_EXP_FN_NAME_MAX     (NTA_EXP_FN_LEN_MAX - WIRE_TLV_HDR_LEN - 1)  /* 27 */

/* ---- worst cases, for packing and buffer sizing -------------------------- */

/*
 * The longest conntrack message ctsyncd can emit: IPv6 everywhere, the
 * largest per-protocol group (TCP with state and both window scales, or SCTP
 * with state and both vtags: 4 x 8 bytes), a master, both NAT addresses and
 * ports, NAT sequence adjustment, an 11-char helper, 256 label words,
 * synproxy and zone.
 */
#define WIRE_CT_MAX_LEN (WIRE_HDR_LEN + \
	WIRE_TLV_SPACE(NTA_IPV6_SIZE) + WIRE_TLV_SPACE(NTA_U32_SIZE) /* status */ + \
	WIRE_TLV_SPACE(NTA_U8_SIZE) /* l4proto */ + 4 * WIRE_TLV_SPACE(NTA_U32_SIZE) + \
	WIRE_TLV_SPACE(NTA_U32_SIZE) /* timeout */ + WIRE_TLV_SPACE(NTA_U32_SIZE) /* mark */ + \
	WIRE_TLV_SPACE(NTA_IPV6_SIZE) + WIRE_TLV_SPACE(NTA_U8_SIZE) + WIRE_TLV_SPACE(NTA_PORT_SIZE) + \
	2 * WIRE_TLV_SPACE(NTA_NAT6_SIZE) + 2 * WIRE_TLV_SPACE(NTA_U16_SIZE) + \
	WIRE_TLV_SPACE(NTA_NAT_SEQ_SIZE) + NTA_HELPER_LEN_MAX + NTA_LABELS_LEN_MAX + \
	WIRE_TLV_SPACE(NTA_SYNPROXY_SIZE) + WIRE_TLV_SPACE(NTA_U16_SIZE))

/* The three tuples of an expectation (master, expected, mask) with ports. */
#define WIRE_EXP_TUPLES_SPACE(addr_size) \
	(3 * (WIRE_TLV_SPACE(addr_size) + WIRE_TLV_SPACE(NTA_U8_SIZE) + WIRE_TLV_SPACE(NTA_PORT_SIZE)))
/* The NAT tuple of an expectation: address, l4proto, port, dir. */
#define WIRE_EXP_NAT_SPACE (WIRE_TLV_SPACE(NTA_IPV4_SIZE) + WIRE_TLV_SPACE(NTA_U8_SIZE) + \
	WIRE_TLV_SPACE(NTA_PORT_SIZE) + WIRE_TLV_SPACE(NTA_U32_SIZE))
/*
 * The longest expectation message: IPv6 tuples with ports, timeout, flags,
 * class, helper and expectfn.  An IPv6 expectation has no NAT tuple (it is
 * IPv4 only, protocol.md §2.10), and the IPv4 one with NAT is shorter (exp.c asserts it).
 */
#define WIRE_EXP_MAX_LEN (WIRE_HDR_LEN + WIRE_EXP_TUPLES_SPACE(NTA_IPV6_SIZE) + \
	3 * WIRE_TLV_SPACE(NTA_U32_SIZE) /* timeout, flags, class */ + \
	NTA_HELPER_LEN_MAX + NTA_EXP_FN_LEN_MAX)

#endif
