/*
 * control/server.h - the UNIX control socket, on the event loop.
 *
 * One request per connection (conntrackd's protocol, control_proto.h).
 * Handlers are registered per request code.  A handler either answers at
 * once (CONTROL_DONE), keeps the request (CONTROL_PENDING) and finishes it
 * later with control_request_finish(), while the loop keeps serving (that
 * is how `-c` waits for the end of a commit), or streams a long reply
 * (CONTROL_STREAM, see control_request_stream()).
 *
 * The socket is the operator's alone (DESIGN.md, "Trust"): it is created
 * 0600 whatever the umask (0660 and of a group, when one is given), and
 * every client's credentials are checked when it is accepted.  No client
 * can stall the loop or hold what others need: a client has a short time
 * to send its request, an idle one makes room for a new one when every
 * slot is taken, and replies are written without blocking, a stream only
 * as fast as its client reads.
 */
#ifndef CTSYNCD_CONTROL_SERVER_H
#define CTSYNCD_CONTROL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control/proto.h"
#include "control/report.h"

struct loop;
struct control_server;
struct control_request;

/* No group: the socket is 0600 and only root and the daemon's own uid may use it. */
#define CONTROL_NO_GROUP ((gid_t)-1)

/* Connections open at once (reading, handled, or being answered). */
#define CONTROL_MAX_CONNECTIONS 128u
/* A client that has not sent its request code after this long is dropped. */
#define CONTROL_READ_TIMEOUT_MS 2000u
/* A client that takes none of its reply for this long is dropped. */
#define CONTROL_WRITE_TIMEOUT_MS 30000u
/* A stream's fill is called when less than this is buffered... */
#define CONTROL_STREAM_LOW_WATER (16u * 1024u)
/* ...and may append until this much is buffered (see control_request_room()). */
#define CONTROL_STREAM_BUFFER (64u * 1024u)

enum control_result {
	CONTROL_DONE,     /* the reply is complete; the server sends it and closes */
	CONTROL_PENDING,  /* the handler keeps the request and will finish it */
	CONTROL_STREAM,   /* control_request_stream() was called: fill produces the reply */
};

typedef enum control_result (*control_handler_fn)(struct control_request *req, void *arg);

struct control_server_stats {
	uint64_t connections;     /* accepted */
	uint64_t requests;        /* complete request codes read */
	uint64_t unknown;         /* codes nobody handles */
	uint64_t bad_requests;    /* closed before 4 bytes, or timed out */
	uint64_t write_errors;    /* client went away before its answer */
	uint64_t pending;         /* requests currently kept by handlers */
	uint64_t refused;         /* connections over the limit, with no idle one to make room */
	uint64_t refused_credentials; /* peers that are not root, our uid or in the group */
	uint64_t evicted_idle;    /* idle connections closed to make room for a new one */
	uint64_t streams;         /* replies streamed (control_request_stream) */
};

/*
 * Bind and listen on `path`.  A leftover socket file that nobody listens
 * on (a crashed daemon's) is replaced; one with a live listener makes this
 * fail with -EADDRINUSE; a path that exists and is not a socket fails with
 * -EEXIST (never deleted).
 *
 * The socket file is created under a umask that leaves it 0600 (no moment
 * where it is wider), then given its final mode: 0600, or with `group`
 * (not CONTROL_NO_GROUP) that group and mode 0660.  Accepted clients must
 * be root, the daemon's effective uid, or with `group` have it as their
 * primary or a supplementary group; any other is closed at once, counted
 * (refused_credentials) and logged at most once per 10 s.
 * Returns 0 or -errno.
 */
int control_server_open(struct control_server **out, struct loop *loop, const char *path,
			unsigned backlog, gid_t group);

/*
 * A reload's UNIX Group: the socket file gets `group` and 0660, or 0600
 * with CONTROL_NO_GROUP, and new clients are checked against it.  Clients
 * already connected stay.  Returns 0 or -errno (the file's access and the
 * check then stay as they were).
 */
int control_server_set_group(struct control_server *srv, gid_t group);

/*
 * Fail every pending request ("daemon is exiting"), flush what can be
 * flushed without blocking, drop every stream (its release is called, its
 * fill is not: the data behind it may already be gone), close, and unlink
 * the socket path.
 */
void control_server_close(struct control_server *srv);

/* Route `code` (without flag bits) to `fn`.  A later call replaces the handler. */
int control_server_register(struct control_server *srv, uint32_t code, control_handler_fn fn,
			    void *arg);

const struct control_server_stats *control_server_stats(const struct control_server *srv);

/* The request's code without flag bits, and its flags. */
uint32_t control_request_code(const struct control_request *req);
bool control_request_wants_json(const struct control_request *req);
/* The rendering a statistics request asks for: text, JSON or metrics. */
enum report_format control_request_format(const struct control_request *req);
/*
 * A statistics request that asks for text without --verbose: answered in
 * conntrackd 1.4.7's layout (control/compat_report.h), not with the report
 * tree.  What Debian's client, which sends no flags, always gets.
 */
/* The peer the request is limited to (CTL_FLAG_ORIGIN): true and *out, or false for every peer. */
bool control_request_origin(const struct control_request *req, struct ctl_origin *out);
bool control_request_compat(const struct control_request *req);

/* Append to the reply text (buffered until the request finishes, or sent as a stream drains). */
void control_request_write(struct control_request *req, const void *buf, size_t len);
void control_request_printf(struct control_request *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Status of a CONTROL_DONE reply; OK unless set. */
void control_request_set_status(struct control_request *req, enum ctl_status status);

/* Finish a request that a handler kept (CONTROL_PENDING). */
void control_request_finish(struct control_request *req, enum ctl_status status);

/*
 * Produce the next part of a streamed reply: append with
 * control_request_write()/printf() while control_request_room() is not 0
 * (the record in hand may overshoot it), do a bounded amount of work, and
 * return true once the reply is complete.
 */
typedef bool (*control_fill_fn)(struct control_request *req, void *arg);
/* Free what `arg` holds.  It must not touch what fill reads: that may be gone. */
typedef void (*control_release_fn)(void *arg);

/*
 * Stream the reply of a request being handled: the handler calls this and
 * returns its result (CONTROL_STREAM).  What the handler wrote before comes
 * first; then the server calls `fill(req, arg)` whenever less than
 * CONTROL_STREAM_LOW_WATER is waiting to be sent, a few times per loop
 * iteration at most, until fill returns true.  So a client costs at most
 * CONTROL_STREAM_BUFFER bytes (plus one record) and one slot, however
 * long the reply, and one that stops reading is dropped after
 * CONTROL_WRITE_TIMEOUT_MS without progress.
 *
 * `release(arg)` (may be NULL) is called exactly once: after the fill that
 * returned true, or when the request ends before that (the client went
 * away, timed out, an allocation failed, control_server_close()).
 *
 * Status header (CTL_FLAG_STATUS): it is sent first, before any fill, with
 * the status set so far (OK unless the handler set another): a stream
 * cannot report a failure afterwards, so use it only for replies that
 * cannot fail midway, such as dumps of a cache.  If the buffer cannot be
 * allocated at the start, the reply is a short FAILED answer instead and
 * fill is never called.  If an append fails midway, the connection is
 * closed early (counted in write_errors).
 */
enum control_result control_request_stream(struct control_request *req, control_fill_fn fill,
					   control_release_fn release, void *arg);

/* How much a fill may still append now; 0 = stop and return. */
size_t control_request_room(const struct control_request *req);

#endif
