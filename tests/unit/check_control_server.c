/*
 * check_control_server.c - the control socket server on a real loop and
 * real AF_UNIX sockets in a temporary directory.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control/server.h"
#include "loop/loop.h"

static char dir[64], path[128];
static struct loop *loop;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ctsyncd-ctl-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ctl", dir);
	loop = loop_new();
	ck_assert_ptr_nonnull(loop);
}

static void teardown(void)
{
	loop_free(loop);
	unlink(path);
	rmdir(dir);
}

static int client_send(uint32_t code)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	strcpy(sun.sun_path, path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(send(fd, &code, sizeof(code), 0), (ssize_t)sizeof(code));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* Run the loop until the server closes `fd`; returns the bytes received. */
static size_t client_collect(int fd, char *buf, size_t cap)
{
	size_t len = 0;

	for (int i = 0; i < 100; i++) {
		ssize_t n = recv(fd, buf + len, cap - len - 1, 0);

		if (n == 0)
			break;
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		ck_assert_int_eq(errno, EAGAIN);
		loop_run_once(loop, 20);
	}
	buf[len] = '\0';
	close(fd);
	return len;
}

static enum control_result answer_hello(struct control_request *req, void *arg)
{
	control_request_printf(req, "hello %s %u\n", control_request_wants_json(req) ? "json" : "text",
			       control_request_code(req));
	return CONTROL_DONE;
}

static struct control_request *kept;

static enum control_result answer_later(struct control_request *req, void *arg)
{
	kept = req;
	control_request_printf(req, "started;");
	return CONTROL_PENDING;
}

static struct control_server *open_server(void)
{
	struct control_server *srv = NULL;

	ck_assert_int_eq(control_server_open(&srv, loop, path, 10, CONTROL_NO_GROUP), 0);
	ck_assert_int_eq(control_server_register(srv, CTL_STATS, answer_hello, NULL), 0);
	ck_assert_int_eq(control_server_register(srv, CTL_COMMIT_ALL, answer_later, NULL), 0);
	return srv;
}

START_TEST(upstream_client_gets_plain_text)
{
	struct control_server *srv = open_server();
	char buf[256];
	int fd = client_send(CTL_STATS);

	client_collect(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "hello text 21\n");
	ck_assert_uint_eq(control_server_stats(srv)->requests, 1);
	control_server_close(srv);
}
END_TEST

START_TEST(status_flag_prefixes_a_status_header)
{
	struct control_server *srv = open_server();
	char buf[256];
	struct ctl_status_header h;
	int fd = client_send(CTL_STATS | CTL_FLAG_STATUS | CTL_FLAG_JSON);
	size_t len = client_collect(fd, buf, sizeof(buf));

	ck_assert_uint_ge(len, sizeof(h));
	memcpy(&h, buf, sizeof(h));
	ck_assert_uint_eq(h.magic, CTL_STATUS_MAGIC);
	ck_assert_uint_eq(h.status, CTL_STATUS_OK);
	ck_assert_str_eq(buf + sizeof(h), "hello json 21\n");
	control_server_close(srv);
}
END_TEST

START_TEST(unknown_code_answers_unknown)
{
	struct control_server *srv = open_server();
	char buf[256];
	struct ctl_status_header h;
	int fd = client_send(CTL_KILL | CTL_FLAG_STATUS);
	size_t len = client_collect(fd, buf, sizeof(buf));

	ck_assert_uint_ge(len, sizeof(h));
	memcpy(&h, buf, sizeof(h));
	ck_assert_uint_eq(h.status, CTL_STATUS_UNKNOWN);
	ck_assert_msg(strstr(buf + sizeof(h), "unknown request code 20") != NULL,
		      "got '%s'", buf + sizeof(h));

	/* Unknown flag bits make an otherwise known code unknown too. */
	fd = client_send(CTL_STATS | 0x01000000u);
	client_collect(fd, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "unknown request code 21") != NULL, "got '%s'", buf);
	ck_assert_uint_eq(control_server_stats(srv)->unknown, 2);
	control_server_close(srv);
}
END_TEST

START_TEST(pending_request_is_answered_when_finished)
{
	struct control_server *srv = open_server();
	char buf[256];
	int fd = client_send(CTL_COMMIT_ALL);

	kept = NULL;
	for (int i = 0; i < 10 && !kept; i++)
		loop_run_once(loop, 20);
	ck_assert_ptr_nonnull(kept);
	/* The loop keeps serving other clients meanwhile. */
	{
		int other = client_send(CTL_STATS);

		client_collect(other, buf, sizeof(buf));
		ck_assert_str_eq(buf, "hello text 21\n");
	}
	ck_assert_int_eq(recv(fd, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_uint_eq(control_server_stats(srv)->pending, 1);

	control_request_printf(kept, "done\n");
	control_request_finish(kept, CTL_STATUS_OK);
	client_collect(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "started;done\n");
	ck_assert_uint_eq(control_server_stats(srv)->pending, 0);
	control_server_close(srv);
}
END_TEST

START_TEST(close_fails_pending_requests_and_unlinks)
{
	struct control_server *srv = open_server();
	char buf[256];
	struct ctl_status_header h;
	struct stat st;
	int fd = client_send(CTL_COMMIT_ALL | CTL_FLAG_STATUS);

	kept = NULL;
	for (int i = 0; i < 10 && !kept; i++)
		loop_run_once(loop, 20);
	ck_assert_ptr_nonnull(kept);
	control_server_close(srv);
	ck_assert_uint_ge(recv(fd, buf, sizeof(buf) - 1, 0), sizeof(h));
	memcpy(&h, buf, sizeof(h));
	ck_assert_uint_eq(h.status, CTL_STATUS_FAILED);
	close(fd);
	ck_assert_int_eq(stat(path, &st), -1);
}
END_TEST

START_TEST(stale_socket_file_is_replaced)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct control_server *srv;

	strcpy(sun.sun_path, path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);   /* the file stays, nobody listens: what a crash leaves */
	srv = open_server();
	control_server_close(srv);
}
END_TEST

START_TEST(live_socket_is_refused)
{
	struct control_server *srv = open_server(), *second = NULL;

	ck_assert_int_eq(control_server_open(&second, loop, path, 10, CONTROL_NO_GROUP), -EADDRINUSE);
	control_server_close(srv);
}
END_TEST

START_TEST(non_socket_path_is_never_removed)
{
	struct control_server *srv = NULL;
	struct stat st;
	int fd = open(path, O_CREAT | O_WRONLY, 0600);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(control_server_open(&srv, loop, path, 10, CONTROL_NO_GROUP), -EEXIST);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
}
END_TEST

START_TEST(client_that_hangs_up_early_is_counted)
{
	struct control_server *srv = open_server();
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	strcpy(sun.sun_path, path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(send(fd, "ab", 2, 0), 2);   /* half a request code */
	close(fd);
	for (int i = 0; i < 10 && control_server_stats(srv)->bad_requests == 0; i++)
		loop_run_once(loop, 20);
	ck_assert_uint_eq(control_server_stats(srv)->bad_requests, 1);
	ck_assert_uint_eq(control_server_stats(srv)->requests, 0);
	control_server_close(srv);
}
END_TEST

START_TEST(register_rejects_codes_out_of_range)
{
	struct control_server *srv = open_server();

	ck_assert_int_eq(control_server_register(srv, CTL_REQUEST_MAX, answer_hello, NULL), -EINVAL);
	control_server_close(srv);
}
END_TEST


/* ---- who may connect ------------------------------------------------------- */

START_TEST(socket_is_0600_whatever_the_umask)
{
	mode_t before = umask(0);
	struct control_server *srv = open_server();
	struct stat st;

	umask(before);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 0600, "socket mode %04o under umask 0, expected 0600",
		      (unsigned)(st.st_mode & 07777));
	control_server_close(srv);
}
END_TEST

START_TEST(socket_with_a_group_is_0660_and_of_that_group)
{
	/* Root may give the file any group; anyone else one of their own. */
	gid_t group = geteuid() == 0 ? 4242 : getegid();
	mode_t before = umask(0);
	struct control_server *srv = NULL;
	struct stat st;

	ck_assert_int_eq(control_server_open(&srv, loop, path, 10, group), 0);
	umask(before);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 0660, "socket mode %04o, expected 0660",
		      (unsigned)(st.st_mode & 07777));
	ck_assert_uint_eq(st.st_gid, group);
	control_server_close(srv);
}
END_TEST

/*
 * A client of another uid (root only can make one: a child that drops to
 * uid 65534) is closed at once and counted, even on a socket that someone
 * opened to everybody by hand.
 */
START_TEST(peer_of_another_uid_is_refused)
{
	struct control_server *srv;
	pid_t child;
	int status;

	if (geteuid() != 0) {
		fprintf(stderr, "peer_of_another_uid_is_refused: needs root to run a client as "
			"uid 65534; checked by tests/integration/control.sh instead\n");
		return;
	}
	srv = open_server();
	ck_assert_int_eq(chmod(path, 0666), 0);
	ck_assert_int_eq(chmod(dir, 0755), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		uint32_t code = CTL_STATS;
		char buf[64];
		int fd;

		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		strcpy(sun.sun_path, path);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			_exit(3);
		(void)send(fd, &code, sizeof(code), MSG_NOSIGNAL);
		/* Refused: EOF (or a reset) without a byte of answer. */
		_exit(recv(fd, buf, sizeof(buf), 0) <= 0 ? 0 : 4);
	}
	for (int i = 0; i < 200 && waitpid(child, &status, WNOHANG) == 0; i++)
		loop_run_once(loop, 10);
	ck_assert_int_eq(waitpid(child, &status, 0), -1);   /* already reaped above */
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the client of uid 65534 got an answer or could not connect (status %d)", status);
	ck_assert_uint_eq(control_server_stats(srv)->refused_credentials, 1);
	ck_assert_uint_eq(control_server_stats(srv)->connections, 0);
	ck_assert_uint_eq(control_server_stats(srv)->requests, 0);
	control_server_close(srv);
}
END_TEST

/* ---- idle clients -------------------------------------------------------------- */

static int client_connect_nonblock(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	ck_assert_int_ge(fd, 0);
	strcpy(sun.sun_path, path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return fd;
}

START_TEST(idle_clients_make_room_for_a_new_one)
{
	struct control_server *srv = open_server();
	int idle[CONTROL_MAX_CONNECTIONS], fd;
	char buf[256];

	/* Fill every slot with a client that connects and sends nothing. */
	for (unsigned i = 0; i < CONTROL_MAX_CONNECTIONS; i++) {
		idle[i] = client_connect_nonblock();
		loop_run_once(loop, 0);
	}
	for (int i = 0; i < 10 && control_server_stats(srv)->connections < CONTROL_MAX_CONNECTIONS; i++)
		loop_run_once(loop, 10);
	ck_assert_uint_eq(control_server_stats(srv)->connections, CONTROL_MAX_CONNECTIONS);

	fd = client_send(CTL_STATS);
	client_collect(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "hello text 21\n");
	ck_assert_uint_eq(control_server_stats(srv)->evicted_idle, 1);
	ck_assert_uint_eq(control_server_stats(srv)->refused, 0);
	/* The one evicted is the one accepted first. */
	ck_assert_int_eq(recv(idle[0], buf, sizeof(buf), 0), 0);
	ck_assert_int_eq(recv(idle[1], buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, EAGAIN);
	for (unsigned i = 0; i < CONTROL_MAX_CONNECTIONS; i++)
		close(idle[i]);
	control_server_close(srv);
}
END_TEST

/*
 * A process that floods the socket replaces its own idle connections: the
 * idle connection of another process (a client whose code is still on the
 * way), though accepted first, stays.
 */
START_TEST(a_flooding_process_evicts_its_own_idle_connections_first)
{
	struct control_server *srv = open_server();
	int flood[CONTROL_MAX_CONNECTIONS], up[2], down[2], status;
	char c = 0, buf[16];
	pid_t child;

	ck_assert_int_eq(pipe(up), 0);
	ck_assert_int_eq(pipe(down), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		/* The other client: connected first, its code not sent yet. */
		int fd = client_connect_nonblock();
		ssize_t n;

		if (write(up[1], "c", 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(2);
		n = recv(fd, buf, sizeof(buf), 0);
		_exit(n < 0 && errno == EAGAIN ? 0 : 1);   /* 1: it was closed */
	}
	ck_assert_int_eq(read(up[0], &c, 1), 1);
	for (int i = 0; i < 10 && control_server_stats(srv)->connections < 1; i++)
		loop_run_once(loop, 10);
	ck_assert_uint_eq(control_server_stats(srv)->connections, 1);
	/* This process takes every other slot, then one more. */
	for (unsigned i = 0; i < CONTROL_MAX_CONNECTIONS; i++) {
		flood[i] = client_connect_nonblock();
		loop_run_once(loop, 0);
	}
	for (int i = 0; i < 10 && control_server_stats(srv)->connections <= CONTROL_MAX_CONNECTIONS; i++)
		loop_run_once(loop, 10);
	ck_assert_uint_eq(control_server_stats(srv)->connections, CONTROL_MAX_CONNECTIONS + 1);
	ck_assert_uint_eq(control_server_stats(srv)->evicted_idle, 1);
	ck_assert_int_eq(recv(flood[0], buf, sizeof(buf), 0), 0);
	ck_assert_int_eq(write(down[1], "g", 1), 1);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the other process's idle connection was closed (status %d)", status);
	for (unsigned i = 0; i < CONTROL_MAX_CONNECTIONS; i++)
		close(flood[i]);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	control_server_close(srv);
}
END_TEST

START_TEST(without_idle_clients_a_new_one_is_refused)
{
	struct control_server *srv = open_server();
	int busy[CONTROL_MAX_CONNECTIONS], fd;
	char buf[256];

	/* Every slot holds a request kept by its handler (a commit that waits). */
	for (unsigned i = 0; i < CONTROL_MAX_CONNECTIONS; i++) {
		busy[i] = client_send(CTL_COMMIT_ALL);
		loop_run_once(loop, 0);
	}
	for (int i = 0; i < 10 && control_server_stats(srv)->pending < CONTROL_MAX_CONNECTIONS; i++)
		loop_run_once(loop, 10);
	ck_assert_uint_eq(control_server_stats(srv)->pending, CONTROL_MAX_CONNECTIONS);
	fd = client_send(CTL_STATS);
	for (int i = 0; i < 10 && control_server_stats(srv)->refused == 0; i++)
		loop_run_once(loop, 10);
	/* Closed unread: EOF, or a reset since its request was never read. */
	ck_assert_int_le(recv(fd, buf, sizeof(buf), 0), 0);
	close(fd);
	ck_assert_uint_eq(control_server_stats(srv)->refused, 1);
	ck_assert_uint_eq(control_server_stats(srv)->evicted_idle, 0);
	for (unsigned i = 0; i < CONTROL_MAX_CONNECTIONS; i++)
		close(busy[i]);
	control_server_close(srv);
}
END_TEST

/* ---- streamed replies -------------------------------------------------------------- */

/*
 * A stream of `total` bytes of a known pattern, appended in records of
 * varying length (1..700 bytes) while there is room.
 */
struct pattern {
	size_t total, made;
	unsigned fills, releases;
	size_t most_buffered;     /* the most that was waiting when fill was called */
	bool endless;
};

static char pattern_byte(size_t i)
{
	return (char)('a' + (i * 7 + i / 251) % 26);
}

static bool pattern_fill(struct control_request *req, void *arg)
{
	struct pattern *p = arg;
	size_t buffered = CONTROL_STREAM_BUFFER - control_request_room(req);
	char rec[700];

	p->fills++;
	if (buffered > p->most_buffered)
		p->most_buffered = buffered;
	while (control_request_room(req) > 0) {
		size_t len = 1 + (p->made * 31) % sizeof(rec);

		if (!p->endless && len > p->total - p->made)
			len = p->total - p->made;
		for (size_t i = 0; i < len; i++)
			rec[i] = pattern_byte(p->made + i);
		control_request_write(req, rec, len);
		p->made += len;
		if (!p->endless && p->made == p->total)
			return true;
	}
	return false;
}

static void pattern_release(void *arg)
{
	((struct pattern *)arg)->releases++;
}

static struct pattern stream_pattern;

static enum control_result answer_stream(struct control_request *req, void *arg)
{
	control_request_printf(req, "head;");
	return control_request_stream(req, pattern_fill, pattern_release, &stream_pattern);
}

static struct control_server *open_stream_server(size_t total, bool endless)
{
	struct control_server *srv = open_server();

	stream_pattern = (struct pattern){ .total = total, .endless = endless };
	ck_assert_int_eq(control_server_register(srv, CTL_DUMP_EXTERNAL_CT, answer_stream, NULL), 0);
	return srv;
}

START_TEST(stream_delivers_exactly_what_fill_made)
{
	const size_t total = 3u << 20;   /* far more than a socket buffer holds */
	struct control_server *srv = open_stream_server(total, false);
	struct ctl_status_header h;
	size_t cap = total + 4096, len = 0, eof = 0;
	char *buf = malloc(cap);
	int fd = client_send(CTL_DUMP_EXTERNAL_CT | CTL_FLAG_STATUS);

	ck_assert_ptr_nonnull(buf);
	/* A slow reader: small reads, with loop iterations between them. */
	for (int i = 0; i < 200000 && !eof; i++) {
		ssize_t n = recv(fd, buf + len, len + 8192 < cap ? 8192 : cap - len, 0);

		if (n == 0)
			eof = 1;
		else if (n > 0)
			len += (size_t)n;
		else
			loop_run_once(loop, 10);
		if (i % 4 == 0)
			loop_run_once(loop, 0);
	}
	close(fd);
	ck_assert_msg(eof, "the stream did not end (%zu bytes received)", len);
	ck_assert_uint_eq(len, sizeof(h) + 5 + total);
	memcpy(&h, buf, sizeof(h));
	ck_assert_uint_eq(h.magic, CTL_STATUS_MAGIC);
	ck_assert_uint_eq(h.status, CTL_STATUS_OK);
	ck_assert(memcmp(buf + sizeof(h), "head;", 5) == 0);
	for (size_t i = 0; i < total; i++)
		if (buf[sizeof(h) + 5 + i] != pattern_byte(i))
			ck_abort_msg("byte %zu of the stream is '%c', expected '%c'", i,
				     buf[sizeof(h) + 5 + i], pattern_byte(i));
	ck_assert_uint_ge(stream_pattern.fills, total / CONTROL_STREAM_BUFFER);
	ck_assert_msg(stream_pattern.most_buffered < CONTROL_STREAM_LOW_WATER,
		      "fill was called with %zu bytes waiting, expected < %u",
		      stream_pattern.most_buffered, CONTROL_STREAM_LOW_WATER);
	ck_assert_uint_eq(stream_pattern.releases, 1);
	ck_assert_uint_eq(control_server_stats(srv)->streams, 1);
	ck_assert_uint_eq(control_server_stats(srv)->write_errors, 0);
	free(buf);
	control_server_close(srv);
	ck_assert_uint_eq(stream_pattern.releases, 1);
}
END_TEST

START_TEST(stream_to_a_client_that_never_reads_does_not_stall_the_loop)
{
	struct control_server *srv = open_stream_server(0, true);
	int stalled = client_send(CTL_DUMP_EXTERNAL_CT), fd;
	unsigned fills;
	char buf[256];

	for (int i = 0; i < 20; i++)
		loop_run_once(loop, 5);
	fills = stream_pattern.fills;
	ck_assert_uint_gt(fills, 0);
	/* Its socket is full: no more fills, and the others are served. */
	for (int i = 0; i < 20; i++)
		loop_run_once(loop, 5);
	ck_assert_uint_eq(stream_pattern.fills, fills);
	fd = client_send(CTL_STATS);
	client_collect(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "hello text 21\n");
	ck_assert_uint_eq(stream_pattern.releases, 0);
	close(stalled);
	control_server_close(srv);
}
END_TEST

START_TEST(stream_release_once_when_the_client_hangs_up)
{
	struct control_server *srv = open_stream_server(0, true);
	int fd = client_send(CTL_DUMP_EXTERNAL_CT);
	char buf[4096];

	for (int i = 0; i < 10 && stream_pattern.fills == 0; i++)
		loop_run_once(loop, 10);
	ck_assert_int_gt(recv(fd, buf, sizeof(buf), 0), 0);
	close(fd);
	for (int i = 0; i < 100 && stream_pattern.releases == 0; i++)
		loop_run_once(loop, 10);
	ck_assert_uint_eq(stream_pattern.releases, 1);
	ck_assert_uint_eq(control_server_stats(srv)->write_errors, 1);
	control_server_close(srv);
	ck_assert_uint_eq(stream_pattern.releases, 1);
}
END_TEST

START_TEST(stream_release_once_when_the_server_closes)
{
	struct control_server *srv = open_stream_server(0, true);
	int fd = client_send(CTL_DUMP_EXTERNAL_CT);
	unsigned fills;

	for (int i = 0; i < 10 && stream_pattern.fills == 0; i++)
		loop_run_once(loop, 10);
	ck_assert_uint_gt(stream_pattern.fills, 0);
	fills = stream_pattern.fills;
	control_server_close(srv);
	ck_assert_uint_eq(stream_pattern.releases, 1);
	/* Closing never fills: the data behind the stream may already be gone. */
	ck_assert_uint_eq(stream_pattern.fills, fills);
	close(fd);
}
END_TEST

static Suite *server_suite(void)
{
	Suite *s = suite_create("control_server");
	TCase *tc = tcase_create("unix socket");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, upstream_client_gets_plain_text);
	tcase_add_test(tc, status_flag_prefixes_a_status_header);
	tcase_add_test(tc, unknown_code_answers_unknown);
	tcase_add_test(tc, pending_request_is_answered_when_finished);
	tcase_add_test(tc, close_fails_pending_requests_and_unlinks);
	tcase_add_test(tc, stale_socket_file_is_replaced);
	tcase_add_test(tc, live_socket_is_refused);
	tcase_add_test(tc, non_socket_path_is_never_removed);
	tcase_add_test(tc, client_that_hangs_up_early_is_counted);
	tcase_add_test(tc, register_rejects_codes_out_of_range);
	tcase_add_test(tc, socket_is_0600_whatever_the_umask);
	tcase_add_test(tc, socket_with_a_group_is_0660_and_of_that_group);
	tcase_add_test(tc, peer_of_another_uid_is_refused);
	tcase_add_test(tc, idle_clients_make_room_for_a_new_one);
	tcase_add_test(tc, a_flooding_process_evicts_its_own_idle_connections_first);
	tcase_add_test(tc, without_idle_clients_a_new_one_is_refused);
	tcase_add_test(tc, stream_delivers_exactly_what_fill_made);
	tcase_add_test(tc, stream_to_a_client_that_never_reads_does_not_stall_the_loop);
	tcase_add_test(tc, stream_release_once_when_the_client_hangs_up);
	tcase_add_test(tc, stream_release_once_when_the_server_closes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(server_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
