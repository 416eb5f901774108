/*
 * fuzz_control.c - the control socket server and the daemon's request
 * handlers, fed arbitrary client bytes over a real AF_UNIX socket.
 *
 * Each input is cut into requests of up to 28 bytes (a code, the origin a
 * flagged code carries, then junk a client might send after it); every
 * request must be answered or dropped,
 * never crash, leak or hang the loop, and an answer to a request carrying
 * CTL_FLAG_STATUS must start with a valid status header.
 *
 * Where the harness may make a network namespace of its own (root), the
 * caches run there too, against that namespace's empty conntrack table,
 * so that dumps, flushes, commits, purges and re-reads are fuzzed through
 * their real handlers without touching the host's table.  The socket and
 * its directory are removed at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cache/cache.h"
#include "config/config.h"
#include "control/server.h"
#include "loop/loop.h"
#include "../../src/daemon/requests.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct loop *loop;
static struct control_server *srv;
static struct config cfg;
static struct requests_ctx ctx;
static char path[108];
static char dir[] = "/tmp/ctsyncd-fuzz-XXXXXX";
static struct cache *cache;

static void teardown(void)
{
	control_server_close(srv);      /* unlinks the socket */
	cache_free(cache);
	loop_free(loop);
	rmdir(dir);
}

static void setup_once(void)
{
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/ctl", dir);
	config_defaults(&cfg);
	cfg.role = CONFIG_ROLE_SYNC;
	cfg.sync.purge_timeout = 1;
	snprintf(cfg.general.unix_path, sizeof(cfg.general.unix_path), "%s", path);
	loop = loop_new();
	if (!loop || control_server_open(&srv, loop, path, 16, CONTROL_NO_GROUP) < 0)
		abort();
	atexit(teardown);
	requests_init(&ctx, &cfg, loop);
	/* The caches only in a namespace of our own: -F and the purge flush its table. */
	if (unshare(CLONE_NEWNET) == 0 && cache_new(&cache, &cfg, loop, 1) == 0 && cache_start(cache) == 0)
		ctx.cache = cache;
	if (requests_register(&ctx, srv) < 0)
		abort();
}

static int connect_server(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		abort();
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		abort();
	return fd;
}

static void one_request(const uint8_t *req, size_t len)
{
	int fd = connect_server();
	char buf[4096], sink[4096];
	size_t got = 0;
	uint32_t code = 0;

	if (len >= sizeof(code))
		memcpy(&code, req, sizeof(code));
	/* -k would stop the loop that every later input needs: answer it elsewhere. */
	if (len >= sizeof(code) && (code & CTL_CODE_MASK) == CTL_KILL)
		len = 0;
	if (len && send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		abort();
	if (len < sizeof(code) ||
	    ((code & CTL_FLAG_ORIGIN) && len < sizeof(code) + sizeof(struct ctl_origin))) {
		/* An incomplete request: hang up, the server must drop it. */
		close(fd);
		for (int i = 0; i < 3; i++)
			loop_run_once(loop, 0);
		return;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 200; i++) {
		/* The first 4 KiB are kept (the status header is checked); the rest is read and dropped. */
		ssize_t n = got < sizeof(buf) ? recv(fd, buf + got, sizeof(buf) - got, 0)
					      : recv(fd, sink, sizeof(sink), 0);

		if (n == 0)
			break;
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (errno != EAGAIN)
			break;
		loop_run_once(loop, 10);
	}
	if ((code & CTL_FLAG_STATUS) && got > 0) {
		struct ctl_status_header h;

		if (got < sizeof(h))
			abort();
		memcpy(&h, buf, sizeof(h));
		if (h.magic != CTL_STATUS_MAGIC || h.status > CTL_STATUS_BUSY)
			abort();
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!loop)
		setup_once();
	for (size_t off = 0, n = 0; off < size && n < 16; n++) {
		/* The first byte picks the request's length: 0..28 bytes. */
		size_t want = data[off++] % 29;
		size_t len = size - off;

		if (want < len)
			len = want;
		one_request(data + off, len);
		off += len;
	}
	return 0;
}
