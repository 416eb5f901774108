/*
 * control/proto.h - the UNIX control socket protocol.
 *
 * conntrackd 1.4.7's protocol (ctsyncd(8), CONTROL PROTOCOL): the client connects, sends
 * one native-endian 32-bit request code, and reads text until the daemon
 * closes the connection.  Debian's `conntrackd` client therefore works
 * against ctsyncd unchanged.
 *
 * ctsyncd's own client ORs flag bits into the code (upstream codes are all
 * below 64, so the bits never collide):
 *   CTL_FLAG_STATUS  the reply starts with a struct ctl_status_header, so
 *                    the client can tell "done" from "not available" or
 *                    "failed" and exit accordingly;
 *   CTL_FLAG_JSON    statistics requests answer with one JSON object;
 *   CTL_FLAG_PROMETHEUS  statistics requests answer with Prometheus
 *                    metrics (text exposition format 0.0.4);
 *   CTL_FLAG_VERBOSE statistics requests answer with ctsyncd's own text
 *                    (the report tree of control/report.h) instead of
 *                    conntrackd 1.4.7's layout (control/compat_report.h);
 *   CTL_FLAG_ORIGIN  a struct ctl_origin follows the code: a commit or an
 *                    external dump takes only the states that peer sent.
 * A plain code, as Debian's client sends, gets 1.4.7's layout.
 */
#ifndef CTSYNCD_CONTROL_PROTO_H
#define CTSYNCD_CONTROL_PROTO_H

#include <stdbool.h>
#include <stdint.h>

/* Request codes of conntrackd 1.4.7 (ctsyncd(8), OPTIONS). */
enum ctl_request {
	CTL_FLUSH_KERNEL_CT      = 0,   /* -F ct */
	CTL_RESYNC_KERNEL_CT     = 1,   /* -R ct */
	CTL_DUMP_INTERNAL_CT     = 16,  /* -i [ct] */
	CTL_DUMP_EXTERNAL_CT     = 17,  /* -e [ct] */
	CTL_COMMIT_CT            = 18,  /* -c ct */
	CTL_FLUSH_CACHES_LEGACY  = 19,  /* unused by the 1.4.7 client; treated as 45 */
	CTL_KILL                 = 20,  /* -k */
	CTL_STATS                = 21,  /* -s, -s ct */
	CTL_SEND_BULK            = 22,  /* -B */
	CTL_REQUEST_RESYNC       = 23,  /* -n */
	CTL_DUMP_INTERNAL_CT_XML = 24,  /* -i -x */
	CTL_DUMP_EXTERNAL_CT_XML = 25,  /* -e -x */
	CTL_SCHEDULE_PURGE       = 26,  /* -t */
	CTL_STATS_NETWORK        = 28,  /* -s network */
	CTL_STATS_CACHE          = 29,  /* -s cache */
	CTL_STATS_RUNTIME        = 30,  /* -s runtime */
	CTL_STATS_LINK           = 31,  /* -s link (and the alias multicast) */
	CTL_STATS_RSQUEUE        = 32,  /* -s rsqueue */
	CTL_FLUSH_INTERNAL       = 33,  /* -f internal */
	CTL_FLUSH_EXTERNAL       = 34,  /* -f external */
	CTL_STATS_PROCESS        = 35,  /* -s process */
	CTL_STATS_QUEUE          = 36,  /* -s queue */
	CTL_STATS_EXPECT         = 37,  /* -s expect */
	CTL_FLUSH_KERNEL_EXP     = 38,  /* -F expect */
	CTL_RESYNC_KERNEL_EXP    = 39,  /* -R expect */
	CTL_DUMP_INTERNAL_EXP    = 40,  /* -i expect */
	CTL_DUMP_EXTERNAL_EXP    = 41,  /* -e expect */
	CTL_COMMIT_EXP           = 42,  /* -c expect */
	CTL_FLUSH_KERNEL_ALL     = 43,  /* -F */
	CTL_RESYNC_KERNEL_ALL    = 44,  /* -R */
	CTL_FLUSH_ALL            = 45,  /* -f */
	CTL_COMMIT_ALL           = 46,  /* -c */
	CTL_DUMP_INTERNAL_EXP_XML = 47, /* -i expect -x */
	CTL_DUMP_EXTERNAL_EXP_XML = 48, /* -e expect -x */
	/* ctsyncd's own: the running daemon's effective configuration (for --check). */
	CTL_DUMP_CONFIG          = 56,
	/* ctsyncd's own, apart from conntrackd's codes */
	CTL_STATS_HEALTH         = 57,  /* -s health: one monitoring-plugin line */
	CTL_REQUEST_MAX          = 64,  /* codes are below this; the rest are flag bits */
};

#define CTL_CODE_MASK    0x0000ffffu
#define CTL_FLAG_ORIGIN  0x04000000u
#define CTL_FLAG_VERBOSE 0x08000000u
#define CTL_FLAG_PROMETHEUS 0x10000000u
#define CTL_FLAG_JSON    0x20000000u
#define CTL_FLAG_STATUS  0x40000000u

/* Outcome of a request, sent first when CTL_FLAG_STATUS is set. */
enum ctl_status {
	CTL_STATUS_OK          = 0,
	CTL_STATUS_FAILED      = 1,  /* tried and failed; the text says why */
	CTL_STATUS_UNAVAILABLE = 2,  /* the subsystem does not exist in this mode/configuration */
	CTL_STATUS_UNKNOWN     = 3,  /* not a request code this daemon knows */
	CTL_STATUS_BUSY        = 4,  /* refused while another operation runs (e.g. -f during -c) */
};

/*
 * The peer whose states a request takes (CTL_FLAG_ORIGIN): its address on
 * the sync link, as -s lists the peers.  Native-endian family (AF_INET or
 * AF_INET6); an IPv4 address fills the first 4 bytes, the rest are zero.
 */
struct ctl_origin {
	uint32_t family;
	uint8_t addr[16];
};

/* The requests CTL_FLAG_ORIGIN applies to: the commits and the dumps of the external cache. */
bool ctl_request_takes_origin(uint32_t code);

/* Native-endian, as the request code itself. */
struct ctl_status_header {
	uint32_t magic;              /* CTL_STATUS_MAGIC */
	uint32_t status;             /* enum ctl_status */
};
#define CTL_STATUS_MAGIC 0x63747364u  /* "ctsd" */

/*
 * Name of a request code for logs and messages ("commit", "stats network",
 * ...).  Flag bits are ignored; an unknown code gives "unknown request".
 */
const char *ctl_request_name(uint32_t code);

/* "ok", "failed", "not available", "unknown request", "busy"; "invalid status" otherwise. */
const char *ctl_status_name(uint32_t status);

/*
 * A statistics request (-s and every -s word): the ones CTL_FLAG_JSON,
 * CTL_FLAG_PROMETHEUS and CTL_FLAG_VERBOSE apply to.
 */
bool ctl_request_is_stats(uint32_t code);

/*
 * A request whose answer legitimately waits for long work (the commits:
 * the daemon answers when the external cache is in the kernel).  The
 * client reads these without a timeout.
 */
bool ctl_request_waits(uint32_t code);

#endif
