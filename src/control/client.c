/*
 * client.c - send one request to the daemon and relay its answer.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "control/client.h"
#include "control/proto.h"

/* Why a daemon drops a connection unanswered: it checks who connects (ctsyncd(8)). */
#define REFUSED_HINT "it refuses users other than root, its own user and the members of " \
	"its UNIX { Group } (or it stopped, or too many clients keep it busy)"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* One read, after waiting at most timeout_ms for data (< 0: no limit). */
static ssize_t read_timeout(int fd, void *buf, size_t len, int timeout_ms)
{
	ssize_t n;

	if (timeout_ms >= 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r;

		do
			r = poll(&pfd, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
	}
	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int connect_daemon(const char *path, int connect_timeout_ms, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = {
		.tv_sec = connect_timeout_ms / 1000,
		.tv_usec = (connect_timeout_ms % 1000) * 1000,
	};
	size_t len;
	int fd, r, ret;

	if (!path || path[0] == '\0') {
		set_err(err, errlen, "no control socket configured (General { UNIX { Path ... } })");
		return -EINVAL;
	}
	len = strlen(path);
	if (len >= sizeof(addr.sun_path)) {
		set_err(err, errlen, "control socket path '%s' is too long (%zu bytes, at most %zu)",
			path, len, sizeof(addr.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(addr.sun_path, path, len + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		set_err(err, errlen, "cannot create a UNIX socket: %s", strerror(-ret));
		return ret;
	}
	/*
	 * A connect to a UNIX socket whose listen queue is full blocks; on
	 * Linux the send timeout bounds it.  It also bounds our one send.
	 */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

	do
		r = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		ret = -errno;
		if (ret == -EAGAIN || ret == -EWOULDBLOCK)
			set_err(err, errlen, "cannot connect to ctsyncd at %s: the daemon does "
				"not accept connections (listen queue full)", path);
		else if (ret == -ENOENT || ret == -ECONNREFUSED)
			set_err(err, errlen, "cannot connect to ctsyncd at %s: %s — is the daemon "
				"running?", path, strerror(-ret));
		else if (ret == -EACCES)
			set_err(err, errlen, "cannot connect to ctsyncd at %s: %s — only root, the "
				"daemon's user and the members of its UNIX { Group } may control it",
				path, strerror(-ret));
		else
			set_err(err, errlen, "cannot connect to ctsyncd at %s: %s", path,
				strerror(-ret));
		close(fd);
		return ret;
	}
	return fd;
}

/* Where the answer goes: a file descriptor, or a buffer. */
struct sink {
	int fd;                 /* >= 0: write there */
	char *buf;              /* else: append here, keeping a NUL */
	size_t cap, len;
};

static int sink_put(struct sink *k, const char *data, size_t n)
{
	if (k->fd >= 0)
		return write_all(k->fd, data, n);
	if (n >= k->cap - k->len)
		return -EMSGSIZE;
	memcpy(k->buf + k->len, data, n);
	k->len += n;
	k->buf[k->len] = '\0';
	return 0;
}

static int request(const char *socket_path, uint32_t code, const struct ctl_origin *origin,
		   struct sink *out, enum ctl_status *status, int timeout_ms, char *err, size_t errlen)
{
	struct ctl_status_header hdr;
	uint32_t code_flags = code | CTL_FLAG_STATUS | (origin ? CTL_FLAG_ORIGIN : 0);
	uint8_t wire[sizeof(code_flags) + sizeof(*origin)];
	size_t wire_len = sizeof(code_flags);
	const char *name = ctl_request_name(code);
	char buf[8192];
	size_t got = 0;
	ssize_t n;
	int fd, ret;

	if (err && errlen)
		err[0] = '\0';
	fd = connect_daemon(socket_path, timeout_ms >= 0 ? timeout_ms : CTL_CLIENT_TIMEOUT_MS,
			    err, errlen);
	if (fd < 0)
		return fd;

	memcpy(wire, &code_flags, sizeof(code_flags));
	if (origin) {
		memcpy(wire + wire_len, origin, sizeof(*origin));
		wire_len += sizeof(*origin);
	}
	do
		n = send(fd, wire, wire_len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)wire_len) {
		ret = n < 0 ? -errno : -EIO;
		if (ret == -EPIPE || ret == -ECONNRESET)
			set_err(err, errlen, "the daemon at %s closed the connection before '%s' "
				"was sent: %s", socket_path, name, REFUSED_HINT);
		else
			set_err(err, errlen, "cannot send the request '%s' to ctsyncd at %s: %s",
				name, socket_path, strerror(-ret));
		goto out;
	}

	while (got < sizeof(hdr)) {
		n = read_timeout(fd, (char *)&hdr + got, sizeof(hdr) - got, timeout_ms);
		if (n < 0) {
			ret = (int)n;
			if (ret == -ETIMEDOUT)
				set_err(err, errlen, "no answer from ctsyncd at %s to '%s' within "
					"%g s", socket_path, name, timeout_ms / 1000.0);
			else if (ret == -ECONNRESET && got == 0)
				set_err(err, errlen, "the daemon at %s closed the connection without "
					"reading '%s': %s", socket_path, name, REFUSED_HINT);
			else
				set_err(err, errlen, "cannot receive the answer of ctsyncd at %s: %s",
					socket_path, strerror(-ret));
			goto out;
		}
		if (n == 0) {
			ret = -EPROTO;
			if (got == 0)
				set_err(err, errlen, "the daemon at %s closed the connection without "
					"answering '%s': it stopped, or it is a conntrackd daemon, "
					"which does not know ctsyncd's request flags (use "
					"conntrackd's own client with it)", socket_path, name);
			else
				set_err(err, errlen, "the daemon at %s closed the connection early "
					"(after %zu of %zu bytes of the status header)",
					socket_path, got, sizeof(hdr));
			goto out;
		}
		got += (size_t)n;
	}
	if (hdr.magic != CTL_STATUS_MAGIC) {
		ret = -EPROTO;
		set_err(err, errlen, "the daemon at %s answered '%s' without a ctsyncd status "
			"header (magic 0x%08x): is it a conntrackd daemon? use conntrackd's own "
			"client with it", socket_path, name, hdr.magic);
		goto out;
	}
	if (hdr.status > CTL_STATUS_BUSY) {
		ret = -EPROTO;
		set_err(err, errlen, "the daemon at %s answered '%s' with an unknown status %u",
			socket_path, name, hdr.status);
		goto out;
	}
	if (status)
		*status = (enum ctl_status)hdr.status;

	for (;;) {
		n = read_timeout(fd, buf, sizeof(buf), timeout_ms);
		if (n == 0)
			break;
		if (n < 0) {
			ret = (int)n;
			if (ret == -ETIMEDOUT)
				set_err(err, errlen, "ctsyncd at %s stopped answering '%s' for %g s",
					socket_path, name, timeout_ms / 1000.0);
			else
				set_err(err, errlen, "cannot receive the answer of ctsyncd at %s: %s",
					socket_path, strerror(-ret));
			goto out;
		}
		ret = sink_put(out, buf, (size_t)n);
		if (ret == -EMSGSIZE) {
			set_err(err, errlen, "the answer of ctsyncd at %s to '%s' is longer than "
				"the %zu bytes expected", socket_path, name, out->cap - 1);
			goto out;
		}
		if (ret < 0) {
			set_err(err, errlen, "cannot write the answer to '%s': %s", name,
				strerror(-ret));
			goto out;
		}
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

int ctl_client_request_ex(const char *socket_path, uint32_t code, int out_fd,
			  enum ctl_status *status, int timeout_ms, char *err, size_t errlen)
{
	struct sink k = { .fd = out_fd };

	return request(socket_path, code, NULL, &k, status, timeout_ms, err, errlen);
}

int ctl_client_request_buf(const char *socket_path, uint32_t code, char *buf, size_t cap,
			   size_t *len, enum ctl_status *status, int timeout_ms, char *err,
			   size_t errlen)
{
	struct sink k = { .fd = -1, .buf = buf, .cap = cap };
	int ret;

	if (cap == 0)
		return -EINVAL;
	buf[0] = '\0';
	ret = request(socket_path, code, NULL, &k, status, timeout_ms, err, errlen);
	*len = k.len;
	return ret;
}

int ctl_client_timeout_ms(uint32_t code)
{
	return ctl_request_waits(code) ? -1 : CTL_CLIENT_TIMEOUT_MS;
}

int ctl_client_request(const char *socket_path, uint32_t code, int out_fd,
		       enum ctl_status *status)
{
	return ctl_client_request_origin(socket_path, code, NULL, out_fd, status);
}

int ctl_client_request_origin(const char *socket_path, uint32_t code,
			      const struct ctl_origin *origin, int out_fd, enum ctl_status *status)
{
	struct sink k = { .fd = out_fd };
	char err[512];
	int ret;

	ret = request(socket_path, code, origin, &k, status, ctl_client_timeout_ms(code), err,
		      sizeof(err));
	if (ret < 0)
		fprintf(stderr, "ctsyncd: %s\n", err);
	return ret;
}
