/*
 * server.c - the UNIX control socket server.
 *
 * Every connection carries one request: a 4-byte native-endian code, then
 * the reply text, then close (conntrackd's protocol).  Replies are buffered
 * and written without blocking, so a slow or stuck client never stalls the
 * loop; a long reply is produced in bounded parts as its client reads it.
 * A client that sends nothing is dropped after a short timeout, or sooner
 * when every slot is taken and a new client needs one.  Only the operator
 * may connect: the socket is 0600 (0660 with a group) from the moment it
 * exists, and each client's credentials are checked at accept.
 */
#include "control/server.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "loop/log.h"
#include "loop/loop.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59          /* Linux 4.13 */
#endif

#define ACCEPTS_PER_WAKE        16
/* Fills per wake-up of one stream: a fast reader cannot keep the loop to itself. */
#define STREAM_FILLS_PER_WAKE   4
/* At most one log line about refused peers per this interval. */
#define REFUSAL_LOG_INTERVAL_MS 10000u

enum request_state {
	REQ_READING,
	REQ_HANDLING,     /* a handler holds it (CONTROL_PENDING) */
	REQ_WRITING,
};

struct control_request {
	struct control_server *srv;
	struct control_request *prev, *next;
	int fd;
	enum request_state state;
	uint64_t seq;             /* order of acceptance: the lowest idle one is evicted first */
	pid_t peer_pid;           /* the connecting process (SO_PEERCRED) */
	uint8_t in[sizeof(uint32_t) + sizeof(struct ctl_origin)];
	size_t inlen;
	size_t inneed;            /* bytes of the request: the code, and its origin if flagged */
	uint32_t raw_code;
	enum ctl_status status;
	char *out;
	size_t outlen, outcap, outoff;
	bool out_failed;          /* an append could not allocate */
	bool kept;                /* its handler returned CONTROL_PENDING */
	control_fill_fn fill;     /* a stream that is not complete yet */
	control_release_fn release;
	void *stream_arg;
	struct loop_timer *timer;
};

struct handler {
	control_handler_fn fn;
	void *arg;
};

/* Refused peers since the last log line, and who was the last one. */
struct refusals {
	uint64_t unlogged;
	uid_t uid;
	pid_t pid;
	bool logged_once;
	uint64_t logged_ms;
	struct loop_timer *timer;
};

struct control_server {
	struct loop *loop;
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uid_t euid;
	gid_t group;              /* CONTROL_NO_GROUP or the group allowed in */
	struct handler handlers[CTL_REQUEST_MAX];
	struct control_request *requests;   /* every open connection */
	unsigned nrequests;
	uint64_t next_seq;
	struct refusals refusals;
	struct control_server_stats stats;
};

static void stream_release(struct control_request *req)
{
	control_release_fn release = req->release;

	req->fill = NULL;
	req->release = NULL;
	if (release)
		release(req->stream_arg);
}

static void request_free(struct control_request *req)
{
	struct control_server *srv = req->srv;

	stream_release(req);
	if (req->kept && req->state == REQ_HANDLING)
		srv->stats.pending--;
	if (req->prev)
		req->prev->next = req->next;
	else
		srv->requests = req->next;
	if (req->next)
		req->next->prev = req->prev;
	srv->nrequests--;
	loop_unwatch(srv->loop, req->fd);
	close(req->fd);
	loop_timer_free(req->timer);
	free(req->out);
	free(req);
}

static void on_request_timeout(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct control_request *req = arg;

	if (req->state == REQ_READING)
		req->srv->stats.bad_requests++;
	else
		req->srv->stats.write_errors++;
	request_free(req);
}

/* A buffer of at least `cap` bytes, exactly that if it must grow. */
static bool out_reserve_total(struct control_request *req, size_t cap)
{
	char *p;

	if (req->out_failed)
		return false;
	if (cap <= req->outcap)
		return true;
	p = realloc(req->out, cap);
	if (!p) {
		req->out_failed = true;
		return false;
	}
	req->out = p;
	req->outcap = cap;
	return true;
}

/* Room for `more` bytes after what is there, doubling as it grows. */
static bool out_reserve(struct control_request *req, size_t more)
{
	size_t cap;

	if (req->out_failed)
		return false;
	if (req->outlen + more <= req->outcap)
		return true;
	cap = req->outcap ? req->outcap : 1024;
	while (cap < req->outlen + more)
		cap *= 2;
	return out_reserve_total(req, cap);
}

void control_request_write(struct control_request *req, const void *buf, size_t len)
{
	if (!out_reserve(req, len))
		return;
	memcpy(req->out + req->outlen, buf, len);
	req->outlen += len;
}

void control_request_printf(struct control_request *req, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !out_reserve(req, (size_t)n + 1))
		return;
	va_start(ap, fmt);
	vsnprintf(req->out + req->outlen, (size_t)n + 1, fmt, ap);
	va_end(ap);
	req->outlen += (size_t)n;
}

uint32_t control_request_code(const struct control_request *req)
{
	return req->raw_code & CTL_CODE_MASK;
}

bool control_request_wants_json(const struct control_request *req)
{
	return req->raw_code & CTL_FLAG_JSON;
}

enum report_format control_request_format(const struct control_request *req)
{
	if (req->raw_code & CTL_FLAG_JSON)
		return REPORT_JSON;
	if (req->raw_code & CTL_FLAG_PROMETHEUS)
		return REPORT_PROMETHEUS;
	return REPORT_TEXT;
}

bool control_request_origin(const struct control_request *req, struct ctl_origin *out)
{
	if (!(req->raw_code & CTL_FLAG_ORIGIN))
		return false;
	memcpy(out, req->in + sizeof(req->raw_code), sizeof(*out));
	return true;
}

bool control_request_compat(const struct control_request *req)
{
	return !(req->raw_code & (CTL_FLAG_JSON | CTL_FLAG_PROMETHEUS | CTL_FLAG_VERBOSE));
}

void control_request_set_status(struct control_request *req, enum ctl_status status)
{
	req->status = status;
}

size_t control_request_room(const struct control_request *req)
{
	size_t buffered = req->outlen - req->outoff;

	return buffered < CONTROL_STREAM_BUFFER ? CONTROL_STREAM_BUFFER - buffered : 0;
}

enum control_result control_request_stream(struct control_request *req, control_fill_fn fill,
					   control_release_fn release, void *arg)
{
	req->fill = fill;
	req->release = release;
	req->stream_arg = arg;
	return CONTROL_STREAM;
}

/*
 * One fill of a stream, after moving what is still unsent to the front of
 * the buffer (less than the low watermark: a short move).  Returns false
 * when an append failed: the stream cannot go on.
 */
static bool stream_fill(struct control_request *req)
{
	bool done;

	if (req->outoff) {
		memmove(req->out, req->out + req->outoff, req->outlen - req->outoff);
		req->outlen -= req->outoff;
		req->outoff = 0;
	}
	done = req->fill(req, req->stream_arg);
	if (req->out_failed)
		return false;
	if (done)
		stream_release(req);
	return true;
}

/*
 * Send what is buffered, refilling a stream below its low watermark (a few
 * times per call).  Returns true when the request is gone (written
 * completely, or failed).
 */
static bool request_flush(struct control_request *req)
{
	struct control_server *srv = req->srv;
	bool progress = false;
	int fills = 0;

	for (;;) {
		ssize_t n;

		if (req->fill && req->outlen - req->outoff < CONTROL_STREAM_LOW_WATER) {
			if (fills == STREAM_FILLS_PER_WAKE) {
				if (req->outoff == req->outlen)
					break;      /* the socket is writable: the loop calls again */
			} else {
				fills++;
				if (!stream_fill(req)) {
					srv->stats.write_errors++;
					request_free(req);
					return true;
				}
			}
		}
		if (req->outoff == req->outlen) {
			if (req->fill)
				continue;
			request_free(req);
			return true;
		}
		n = send(req->fd, req->out + req->outoff, req->outlen - req->outoff,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			srv->stats.write_errors++;
			request_free(req);
			return true;
		}
		req->outoff += (size_t)n;
		progress = true;
	}
	/* The write timeout counts time without progress, not the length of the reply. */
	if (progress)
		loop_timer_arm(req->timer, CONTROL_WRITE_TIMEOUT_MS);
	return false;
}

static void on_request_writable(struct loop *loop, int fd, unsigned events, void *arg)
{
	request_flush(arg);
}

static void request_start_writing(struct control_request *req)
{
	static const char oom[] = "ctsyncd: out of memory while building the answer\n";
	size_t head = (req->raw_code & CTL_FLAG_STATUS) ? sizeof(struct ctl_status_header) : 0;

	if (req->kept && req->state == REQ_HANDLING)
		req->srv->stats.pending--;
	req->state = REQ_WRITING;

	/*
	 * A stream's buffer is taken whole now, so that its fills do not
	 * allocate: they stop at CONTROL_STREAM_BUFFER, the low watermark's
	 * worth above it holds the record that crosses it.
	 */
	if (req->fill)
		out_reserve_total(req, CONTROL_STREAM_BUFFER + CONTROL_STREAM_LOW_WATER);
	if (req->out_failed) {
		/* Replace whatever was built with a short, honest failure. */
		stream_release(req);
		req->out_failed = false;
		req->outlen = head;
		req->status = CTL_STATUS_FAILED;
		if (req->outcap >= req->outlen + sizeof(oom) - 1) {
			memcpy(req->out + req->outlen, oom, sizeof(oom) - 1);
			req->outlen += sizeof(oom) - 1;
		}
	}
	if (head) {
		struct ctl_status_header h = { .magic = CTL_STATUS_MAGIC, .status = req->status };

		if (req->outcap < sizeof(h)) {
			/* Not even the header could be allocated: the client sees EOF. */
			req->srv->stats.write_errors++;
			request_free(req);
			return;
		}
		memcpy(req->out, &h, sizeof(h));
	}
	loop_timer_arm(req->timer, CONTROL_WRITE_TIMEOUT_MS);
	if (request_flush(req))
		return;
	if (loop_watch(req->srv->loop, req->fd, LOOP_WRITE, on_request_writable, req) < 0) {
		req->srv->stats.write_errors++;
		request_free(req);
	}
}

void control_request_finish(struct control_request *req, enum ctl_status status)
{
	req->status = status;
	request_start_writing(req);
}

static void request_dispatch(struct control_request *req)
{
	struct control_server *srv = req->srv;
	uint32_t code = req->raw_code & CTL_CODE_MASK;
	uint32_t flags = req->raw_code & ~CTL_CODE_MASK;
	struct handler *h = NULL;

	srv->stats.requests++;
	loop_unwatch(srv->loop, req->fd);
	loop_timer_disarm(req->timer);

	if (req->raw_code & CTL_FLAG_STATUS) {
		/* Room for the status header, filled in when the answer is complete or streams. */
		if (out_reserve(req, sizeof(struct ctl_status_header)))
			req->outlen = sizeof(struct ctl_status_header);
	}
	if (code < CTL_REQUEST_MAX &&
	    !(flags & ~(CTL_FLAG_JSON | CTL_FLAG_PROMETHEUS | CTL_FLAG_VERBOSE | CTL_FLAG_STATUS |
			CTL_FLAG_ORIGIN)) &&
	    (flags & (CTL_FLAG_JSON | CTL_FLAG_PROMETHEUS)) != (CTL_FLAG_JSON | CTL_FLAG_PROMETHEUS) &&
	    (!(flags & CTL_FLAG_ORIGIN) || ctl_request_takes_origin(code)))
		h = &srv->handlers[code];

	req->state = REQ_HANDLING;
	if (!h || !h->fn) {
		srv->stats.unknown++;
		control_request_printf(req, "ctsyncd: unknown request code %u (0x%08x)\n",
				       code, req->raw_code);
		control_request_finish(req, CTL_STATUS_UNKNOWN);
		return;
	}
	switch (h->fn(req, h->arg)) {
	case CONTROL_STREAM:
		srv->stats.streams++;
		/* fall through */
	case CONTROL_DONE:
		request_start_writing(req);
		break;
	case CONTROL_PENDING:
		req->kept = true;
		srv->stats.pending++;
		break;
	}
}

static void on_request_readable(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct control_request *req = arg;

	for (;;) {
		ssize_t n;

		if (req->inlen == sizeof(req->raw_code) && req->inneed == sizeof(req->raw_code)) {
			memcpy(&req->raw_code, req->in, sizeof(req->raw_code));
			/* conntrackd's requests are the code alone; ours may carry an origin after it. */
			if (req->raw_code & CTL_FLAG_ORIGIN)
				req->inneed += sizeof(struct ctl_origin);
		}
		if (req->inlen == req->inneed)
			break;
		n = recv(fd, req->in + req->inlen, req->inneed - req->inlen, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			req->srv->stats.bad_requests++;
			request_free(req);
			return;
		}
		req->inlen += (size_t)n;
	}
	request_dispatch(req);
}

/* ---- who may connect ----------------------------------------------------- */

static bool peer_in_group(int fd, gid_t group)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool found = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno != ERANGE || len == 0 || len > NGROUPS_MAX * sizeof(gid_t))
			return false;
		groups = malloc(len);
		if (!groups || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
			free(groups);
			return false;
		}
	}
	for (size_t i = 0; i < len / sizeof(gid_t) && !found; i++)
		found = groups[i] == group;
	if (groups != small)
		free(groups);
	return found;
}

/* Root, our own uid, or a member of the group: the credentials of connect() time. */
static bool peer_allowed(const struct control_server *srv, int fd, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) < 0 || len != sizeof(*cred)) {
		*cred = (struct ucred){ .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
		return false;
	}
	if (cred->uid == 0 || cred->uid == srv->euid)
		return true;
	if (srv->group == CONTROL_NO_GROUP)
		return false;
	return cred->gid == srv->group || peer_in_group(fd, srv->group);
}

static void refusals_log(struct control_server *srv)
{
	struct refusals *r = &srv->refusals;
	char who[96] = "root";

	if (srv->euid != 0)
		snprintf(who + strlen(who), sizeof(who) - strlen(who), ", uid %u", (unsigned)srv->euid);
	if (srv->group != CONTROL_NO_GROUP)
		snprintf(who + strlen(who), sizeof(who) - strlen(who), ", members of group %u",
			 (unsigned)srv->group);
	log_warning("control socket %s: refused %" PRIu64 " connection%s of users who may not "
		    "control the daemon (the last: uid %d, pid %d); allowed: %s",
		    srv->path, r->unlogged, r->unlogged == 1 ? "" : "s", (int)r->uid, (int)r->pid, who);
	r->unlogged = 0;
	r->logged_once = true;
	r->logged_ms = loop_now_ms(srv->loop);
}

static void on_refusals_timer(struct loop *loop, struct loop_timer *timer, void *arg)
{
	struct control_server *srv = arg;

	if (srv->refusals.unlogged)
		refusals_log(srv);
}

/* Count a refused peer; log at once, or at the end of the current quiet interval. */
static void refusal_note(struct control_server *srv, const struct ucred *cred)
{
	struct refusals *r = &srv->refusals;
	uint64_t now = loop_now_ms(srv->loop);

	srv->stats.refused_credentials++;
	r->unlogged++;
	r->uid = cred->uid;
	r->pid = cred->pid;
	if (!r->logged_once || now - r->logged_ms >= REFUSAL_LOG_INTERVAL_MS)
		refusals_log(srv);
	else if (r->timer && !loop_timer_armed(r->timer))
		loop_timer_arm(r->timer, r->logged_ms + REFUSAL_LOG_INTERVAL_MS - now);
}

/* ---- accepting ------------------------------------------------------------- */

/*
 * Make room for a new connection of process `pid`: close the connection
 * accepted first among those that have not sent their code, of that same
 * process if it has one.  So a process that floods the socket with
 * connections replaces its own, and cannot push out another client whose
 * code is still on the way.
 */
static bool evict_idle(struct control_server *srv, pid_t pid)
{
	struct control_request *oldest = NULL, *own = NULL;

	for (struct control_request *req = srv->requests; req; req = req->next) {
		if (req->state != REQ_READING)
			continue;
		if (!oldest || req->seq < oldest->seq)
			oldest = req;
		if (req->peer_pid == pid && (!own || req->seq < own->seq))
			own = req;
	}
	if (own)
		oldest = own;
	if (!oldest)
		return false;
	srv->stats.evicted_idle++;
	request_free(oldest);
	return true;
}

static void on_listen_readable(struct loop *loop, int fd, unsigned events, void *arg)
{
	struct control_server *srv = arg;

	for (int i = 0; i < ACCEPTS_PER_WAKE; i++) {
		struct control_request *req;
		struct ucred cred;
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0)
			return;
		if (!peer_allowed(srv, cfd, &cred)) {
			close(cfd);
			refusal_note(srv, &cred);
			continue;
		}
		if (srv->nrequests >= CONTROL_MAX_CONNECTIONS && !evict_idle(srv, cred.pid)) {
			srv->stats.refused++;
			close(cfd);
			continue;
		}
		req = calloc(1, sizeof(*req));
		if (req) {
			req->inneed = sizeof(req->raw_code);
			req->timer = loop_timer_new(loop, on_request_timeout, req);
		}
		if (!req || !req->timer || loop_watch(loop, cfd, LOOP_READ, on_request_readable, req) < 0) {
			if (req)
				loop_timer_free(req->timer);
			free(req);
			close(cfd);
			srv->stats.refused++;
			continue;
		}
		srv->stats.connections++;
		req->srv = srv;
		req->fd = cfd;
		req->seq = srv->next_seq++;
		req->peer_pid = cred.pid;
		req->next = srv->requests;
		if (srv->requests)
			srv->requests->prev = req;
		srv->requests = req;
		srv->nrequests++;
		loop_timer_arm(req->timer, CONTROL_READ_TIMEOUT_MS);
		/* A client normally sends its code with connect: serve it before it can look idle. */
		on_request_readable(loop, cfd, LOOP_READ, req);
	}
}

/* Is somebody listening on `path`?  1 yes, 0 no (stale), -errno on other errors. */
static int socket_is_live(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int live;

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0)
		live = 1;
	else if (errno == ECONNREFUSED || errno == ENOENT)
		live = 0;
	else
		live = -errno;
	close(fd);
	return live;
}

/* The socket file's final owner group and mode, never through a symbolic link. */
static int socket_set_access(const char *path, gid_t group)
{
	mode_t mode = group == CONTROL_NO_GROUP ? 0600 : 0660;

	/* The group first: at 0660 the file must already be the right group's. */
	if (group != CONTROL_NO_GROUP &&
	    fchownat(AT_FDCWD, path, (uid_t)-1, group, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	/*
	 * Set the mode even when the umask gave it: a default ACL of the
	 * directory replaces the umask, and chmod masks its entries again.
	 */
	if (fchmodat(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	/* No lchmod (old kernel, no /proc): the file was bound by us an instant ago. */
	{
		struct stat st;

		if (lstat(path, &st) < 0)
			return -errno;
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		return chmod(path, mode) < 0 ? -errno : 0;
	}
}

int control_server_set_group(struct control_server *srv, gid_t group)
{
	int err = socket_set_access(srv->path, group);

	if (err < 0)
		return err;
	srv->group = group;
	return 0;
}

int control_server_open(struct control_server **out, struct loop *loop, const char *path,
			unsigned backlog, gid_t group)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct control_server *srv;
	struct stat st;
	mode_t umask_before;
	int err;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);

	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		err = socket_is_live(&sun);
		if (err > 0)
			return -EADDRINUSE;
		if (err < 0)
			return err;
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
	}

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->loop = loop;
	srv->euid = geteuid();
	srv->group = group;
	memcpy(srv->path, path, strlen(path) + 1);
	srv->refusals.timer = loop_timer_new(loop, on_refusals_timer, srv);
	if (!srv->refusals.timer) {
		free(srv);
		return -ENOMEM;
	}
	srv->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->fd < 0) {
		err = -errno;
		goto fail;
	}
	/* The daemon is single-threaded: nothing else creates files meanwhile. */
	umask_before = umask(0177);
	err = bind(srv->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ? -errno : 0;
	umask(umask_before);
	if (err < 0)
		goto fail;
	if ((err = socket_set_access(path, group)) < 0)
		goto fail_bound;
	if (listen(srv->fd, backlog ? (int)backlog : 100) < 0) {
		err = -errno;
		goto fail_bound;
	}
	err = loop_watch(loop, srv->fd, LOOP_READ, on_listen_readable, srv);
	if (err < 0)
		goto fail_bound;
	*out = srv;
	return 0;

fail_bound:
	unlink(path);
fail:
	if (srv->fd >= 0)
		close(srv->fd);
	loop_timer_free(srv->refusals.timer);
	free(srv);
	return err;
}

void control_server_close(struct control_server *srv)
{
	if (!srv)
		return;
	while (srv->requests) {
		struct control_request *req = srv->requests;

		if (req->state == REQ_HANDLING) {
			control_request_printf(req, "ctsyncd: the daemon is exiting; request abandoned\n");
			control_request_finish(req, CTL_STATUS_FAILED);
			/* finish either freed it or left it writing: drop it in any case */
			if (srv->requests == req)
				request_free(req);
		} else {
			request_free(req);
		}
	}
	if (srv->refusals.unlogged)
		refusals_log(srv);
	loop_timer_free(srv->refusals.timer);
	loop_unwatch(srv->loop, srv->fd);
	close(srv->fd);
	unlink(srv->path);
	free(srv);
}

int control_server_register(struct control_server *srv, uint32_t code, control_handler_fn fn,
			    void *arg)
{
	if (code >= CTL_REQUEST_MAX)
		return -EINVAL;
	srv->handlers[code] = (struct handler){ .fn = fn, .arg = arg };
	return 0;
}

const struct control_server_stats *control_server_stats(const struct control_server *srv)
{
	return &srv->stats;
}
