/*
 * control/client.h - ctsyncd's side of a request on the UNIX control socket.
 *
 * The request is conntrackd's (a native-endian u32 code, text back until
 * the daemon closes), with CTL_FLAG_STATUS ORed in so that the reply
 * starts with a struct ctl_status_header and the caller can tell "done"
 * from "failed" or "not available".
 */
#ifndef CTSYNCD_CONTROL_CLIENT_H
#define CTSYNCD_CONTROL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "control/proto.h"

/* Per read, for every request except the commits (ctl_request_waits()). */
#define CTL_CLIENT_TIMEOUT_MS 30000

/*
 * Connect to `socket_path`, send `code | CTL_FLAG_STATUS`, read the status
 * header into *status and copy the rest of the reply to `out_fd` until the
 * daemon closes the connection.  Each read waits at most `timeout_ms`
 * (< 0: no limit).
 *
 * Returns 0 when a status header was received and the whole reply copied,
 * whatever the status (the reply text says why a request failed).  On any
 * other outcome returns -errno and writes a complete, printable message
 * to `err` (size `errlen`), which quotes the socket path:
 *   -ENOENT, -ECONNREFUSED, -EACCES, ...  cannot connect (daemon not running?)
 *   -ENAMETOOLONG / -EINVAL                unusable socket path
 *   -ETIMEDOUT                             no byte within the timeout
 *   -EPROTO                                no or bad status header: the daemon
 *                                          closed without answering (e.g. a
 *                                          conntrackd daemon, which rejects
 *                                          ctsyncd's flag bits) or sent
 *                                          something else
 *   other                                  send, receive or write failure
 * Reply text already copied to out_fd stays there.  Prints nothing.
 */
int ctl_client_request_ex(const char *socket_path, uint32_t code, int out_fd,
			  enum ctl_status *status, int timeout_ms, char *err, size_t errlen);

/*
 * The same, the answer read into `buf` (NUL-terminated, its length in
 * *len) instead of written to a file: an answer that does not fit in
 * cap - 1 bytes fails with -EMSGSIZE (and a message), what came before
 * it kept.  For answers the client reads itself (`-s health`).
 */
int ctl_client_request_buf(const char *socket_path, uint32_t code, char *buf, size_t cap,
			   size_t *len, enum ctl_status *status, int timeout_ms, char *err,
			   size_t errlen);

/*
 * The per-read timeout for a request: CTL_CLIENT_TIMEOUT_MS, or none (-1)
 * when ctl_request_waits(code): a commit of a large external cache can take
 * minutes, and conntrackd's client waits for it too.
 */
int ctl_client_timeout_ms(uint32_t code);

/*
 * ctl_client_request_ex() with ctl_client_timeout_ms(code), printing the
 * error, if any, as "ctsyncd: <message>" on stderr.  Same return values.
 */
int ctl_client_request(const char *socket_path, uint32_t code, int out_fd,
		       enum ctl_status *status);

/*
 * The same for the states of one peer (`--origin`): the request carries
 * CTL_FLAG_ORIGIN and `origin` (NULL: every peer, as ctl_client_request()).
 */
int ctl_client_request_origin(const char *socket_path, uint32_t code,
			      const struct ctl_origin *origin, int out_fd, enum ctl_status *status);

#endif
