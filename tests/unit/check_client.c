/*
 * check_client.c - the control client against a scripted fake daemon on a
 * real AF_UNIX socket in a temporary directory; and the pure protocol
 * helpers of proto.c.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control/client.h"
#include "control/proto.h"

struct fake_daemon {
	int listen_fd;
	char dir[64];
	char path[108];
	pthread_t thread;
	/* script */
	const char *reply;
	size_t reply_len;
	size_t chunk;           /* write the reply in pieces of this size (0 = at once) */
	int delay_ms;           /* before answering */
	/* observed */
	uint32_t received;
	ssize_t received_len;
};

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void *fake_daemon_run(void *arg)
{
	struct fake_daemon *f = arg;
	int fd = accept(f->listen_fd, NULL, NULL);
	size_t off = 0;

	if (fd < 0)
		return NULL;
	f->received_len = read(fd, &f->received, sizeof(f->received));
	if (f->delay_ms)
		sleep_ms(f->delay_ms);
	while (off < f->reply_len) {
		size_t n = f->chunk && f->chunk < f->reply_len - off ? f->chunk : f->reply_len - off;
		ssize_t w = write(fd, f->reply + off, n);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(fd);
	return NULL;
}

static void fake_daemon_start(struct fake_daemon *f, const char *reply, size_t reply_len)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };

	snprintf(f->dir, sizeof(f->dir), "/tmp/ctsyncd-client-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/ctl", f->dir);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", f->path);
	f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(f->listen_fd, 0);
	ck_assert_int_eq(bind(f->listen_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	ck_assert_int_eq(listen(f->listen_fd, 4), 0);
	f->reply = reply;
	f->reply_len = reply_len;
	ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_daemon_run, f), 0);
}

static void fake_daemon_stop(struct fake_daemon *f)
{
	pthread_join(f->thread, NULL);
	close(f->listen_fd);
	unlink(f->path);
	rmdir(f->dir);
}

/* A reply: the status header, then text. */
static size_t make_reply(char *buf, size_t size, uint32_t magic, uint32_t status, const char *text)
{
	struct ctl_status_header h = { .magic = magic, .status = status };
	size_t len = strlen(text);

	ck_assert_uint_le(sizeof(h) + len, size);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), text, len);
	return sizeof(h) + len;
}

static int out_open(void)
{
	int fd = memfd_create("client-out", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Everything written to the memfd, NUL-terminated; caller frees. */
static char *out_read(int fd, size_t *len)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf = malloc((size_t)size + 1);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, (size_t)size, 0), size);
	buf[size] = '\0';
	if (len)
		*len = (size_t)size;
	return buf;
}

START_TEST(passes_text_after_status_header)
{
	struct fake_daemon f = { 0 };
	char reply[256], err[512] = "x";
	enum ctl_status status = CTL_STATUS_FAILED;
	size_t len = make_reply(reply, sizeof(reply), CTL_STATUS_MAGIC, CTL_STATUS_OK,
				"cache internal:\n  active: 4\n");
	int out = out_open(), ret;
	char *text;

	fake_daemon_start(&f, reply, len);
	ret = ctl_client_request_ex(f.path, CTL_STATS, out, &status, 2000, err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_msg(ret == 0, "ret %d: %s", ret, err);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(status, CTL_STATUS_OK);
	ck_assert_int_eq(f.received_len, 4);
	ck_assert_uint_eq(f.received, CTL_STATS | CTL_FLAG_STATUS);
	text = out_read(out, NULL);
	ck_assert_str_eq(text, "cache internal:\n  active: 4\n");
	free(text);
	close(out);
}
END_TEST

START_TEST(reports_not_available_with_its_text)
{
	struct fake_daemon f = { 0 };
	char reply[256], err[512];
	enum ctl_status status = CTL_STATUS_OK;
	size_t len = make_reply(reply, sizeof(reply), CTL_STATUS_MAGIC, CTL_STATUS_UNAVAILABLE,
				"ctsyncd: 'send bulk' is not available: no Sync block\n");
	int out = out_open(), ret;
	char *text;

	fake_daemon_start(&f, reply, len);
	ret = ctl_client_request_ex(f.path, CTL_SEND_BULK, out, &status, 2000, err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_msg(ret == 0, "ret %d: %s", ret, err);
	ck_assert_int_eq(status, CTL_STATUS_UNAVAILABLE);
	text = out_read(out, NULL);
	ck_assert_str_eq(text, "ctsyncd: 'send bulk' is not available: no Sync block\n");
	free(text);
	close(out);
}
END_TEST

START_TEST(keeps_json_flag_and_sets_status_flag)
{
	struct fake_daemon f = { 0 };
	char reply[64], err[512];
	enum ctl_status status;
	size_t len = make_reply(reply, sizeof(reply), CTL_STATUS_MAGIC, CTL_STATUS_OK, "{}\n");
	int out = out_open(), ret;

	fake_daemon_start(&f, reply, len);
	ret = ctl_client_request_ex(f.path, CTL_STATS_RUNTIME | CTL_FLAG_JSON, out, &status, 2000,
				    err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_msg(ret == 0, "ret %d: %s", ret, err);
	ck_assert_uint_eq(f.received, CTL_STATS_RUNTIME | CTL_FLAG_JSON | CTL_FLAG_STATUS);
	close(out);
}
END_TEST

START_TEST(reassembles_header_and_large_body_from_small_pieces)
{
	struct fake_daemon f = { 0 };
	size_t body = 1 << 20, len, got, i;
	char *reply = malloc(body + 8), *text, err[512];
	struct ctl_status_header h = { CTL_STATUS_MAGIC, CTL_STATUS_BUSY };
	enum ctl_status status;
	int out = out_open(), ret;

	memcpy(reply, &h, sizeof(h));
	for (i = 0; i < body; i++)
		reply[8 + i] = (char)('a' + i % 26);
	len = body + 8;
	f.chunk = 3;     /* the header arrives in three reads */
	fake_daemon_start(&f, reply, 8);
	ret = ctl_client_request_ex(f.path, CTL_FLUSH_ALL, out, &status, 2000, err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_msg(ret == 0, "ret %d: %s", ret, err);
	ck_assert_int_eq(status, CTL_STATUS_BUSY);

	memset(&f, 0, sizeof(f));
	f.chunk = 4093;
	ck_assert_int_eq(ftruncate(out, 0), 0);
	fake_daemon_start(&f, reply, len);
	ret = ctl_client_request_ex(f.path, CTL_DUMP_INTERNAL_CT, out, &status, 2000, err,
				    sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_msg(ret == 0, "ret %d: %s", ret, err);
	text = out_read(out, &got);
	ck_assert_uint_eq(got, body);
	ck_assert(memcmp(text, reply + 8, body) == 0);
	free(text);
	free(reply);
	close(out);
}
END_TEST

START_TEST(missing_socket_says_daemon_not_running)
{
	char err[512], expected[512];
	const char *path = "/tmp/ctsyncd-no-such-dir-4f1a/ctl.sock";
	enum ctl_status status;
	int ret;

	ret = ctl_client_request_ex(path, CTL_STATS, 1, &status, 1000, err, sizeof(err));
	ck_assert_int_eq(ret, -ENOENT);
	snprintf(expected, sizeof(expected), "cannot connect to ctsyncd at %s: No such file or "
		 "directory — is the daemon running?", path);
	ck_assert_str_eq(err, expected);
}
END_TEST

START_TEST(public_request_prints_error_on_stderr)
{
	const char *path = "/tmp/ctsyncd-no-such-dir-4f1a/ctl.sock";
	enum ctl_status status;
	int fd = out_open(), saved = dup(2), ret;
	char *text;

	/* Check runs each test in its own process: stderr can be borrowed. */
	dup2(fd, 2);
	ret = ctl_client_request(path, CTL_KILL, 1, &status);
	dup2(saved, 2);
	close(saved);
	ck_assert_int_eq(ret, -ENOENT);
	text = out_read(fd, NULL);
	ck_assert_msg(strncmp(text, "ctsyncd: cannot connect to ctsyncd at ", 38) == 0 &&
		      text[strlen(text) - 1] == '\n', "stderr: %s", text);
	free(text);
	close(fd);
}
END_TEST

START_TEST(refused_socket_is_reported)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/ctsyncd-client-XXXXXX", err[512];
	enum ctl_status status;
	int fd, ret;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/ctl", dir);
	/* Bound but not listening: what a crashed daemon leaves behind. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	ret = ctl_client_request_ex(addr.sun_path, CTL_STATS, 1, &status, 1000, err, sizeof(err));
	close(fd);
	unlink(addr.sun_path);
	rmdir(dir);
	ck_assert_int_eq(ret, -ECONNREFUSED);
	ck_assert_msg(strstr(err, "Connection refused — is the daemon running?") != NULL, "%s", err);
	ck_assert_msg(strstr(err, addr.sun_path) != NULL, "%s", err);
}
END_TEST

START_TEST(daemon_closing_without_answer)
{
	struct fake_daemon f = { 0 };
	char err[512];
	enum ctl_status status;
	int ret;

	fake_daemon_start(&f, "", 0);
	ret = ctl_client_request_ex(f.path, CTL_STATS_CACHE, 1, &status, 2000, err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_int_eq(ret, -EPROTO);
	ck_assert_msg(strstr(err, "closed the connection without answering 'stats cache'") &&
		      strstr(err, "conntrackd"), "%s", err);
}
END_TEST

START_TEST(daemon_closing_inside_header)
{
	struct fake_daemon f = { 0 };
	char err[512];
	enum ctl_status status;
	int ret;

	fake_daemon_start(&f, "ctsd", 3);
	ret = ctl_client_request_ex(f.path, CTL_STATS, 1, &status, 2000, err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_int_eq(ret, -EPROTO);
	ck_assert_msg(strstr(err, "closed the connection early (after 3 of 8 bytes"), "%s", err);
}
END_TEST

START_TEST(reply_without_status_header)
{
	/* Plain text, as a daemon that ignores the flag bits would send. */
	static const char text[] = "cache internal:\ncurrent active connections:  4\n";
	struct fake_daemon f = { 0 };
	char err[512], *got;
	enum ctl_status status;
	int out = out_open(), ret;

	fake_daemon_start(&f, text, sizeof(text) - 1);
	ret = ctl_client_request_ex(f.path, CTL_STATS, out, &status, 2000, err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_int_eq(ret, -EPROTO);
	ck_assert_msg(strstr(err, "without a ctsyncd status header") != NULL, "%s", err);
	got = out_read(out, NULL);
	ck_assert_str_eq(got, "");
	free(got);
	close(out);
}
END_TEST

START_TEST(rejects_unknown_status_value)
{
	struct fake_daemon f = { 0 };
	char reply[64], err[512];
	enum ctl_status status;
	size_t len = make_reply(reply, sizeof(reply), CTL_STATUS_MAGIC, 99, "x\n");
	int ret;

	fake_daemon_start(&f, reply, len);
	ret = ctl_client_request_ex(f.path, CTL_STATS, 1, &status, 2000, err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_int_eq(ret, -EPROTO);
	ck_assert_msg(strstr(err, "unknown status 99") != NULL, "%s", err);
}
END_TEST

START_TEST(times_out_on_a_silent_daemon)
{
	struct fake_daemon f = { 0 };
	char err[512];
	enum ctl_status status;
	int ret;

	f.delay_ms = 600;
	fake_daemon_start(&f, "", 0);
	ret = ctl_client_request_ex(f.path, CTL_STATS, 1, &status, 100, err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_int_eq(ret, -ETIMEDOUT);
	ck_assert_msg(strstr(err, "no answer from ctsyncd at") && strstr(err, "within 0.1 s"),
		      "%s", err);
}
END_TEST

START_TEST(waits_without_timeout_when_asked)
{
	struct fake_daemon f = { 0 };
	char reply[64], err[512];
	enum ctl_status status;
	size_t len = make_reply(reply, sizeof(reply), CTL_STATUS_MAGIC, CTL_STATUS_OK, "");
	int ret;

	f.delay_ms = 300;
	fake_daemon_start(&f, reply, len);
	ret = ctl_client_request_ex(f.path, CTL_COMMIT_ALL, 1, &status, -1, err, sizeof(err));
	fake_daemon_stop(&f);
	ck_assert_msg(ret == 0, "ret %d: %s", ret, err);
	ck_assert_uint_eq(f.received, CTL_COMMIT_ALL | CTL_FLAG_STATUS);
}
END_TEST

START_TEST(commits_have_no_timeout)
{
	ck_assert_int_eq(ctl_client_timeout_ms(CTL_COMMIT_ALL), -1);
	ck_assert_int_eq(ctl_client_timeout_ms(CTL_COMMIT_CT), -1);
	ck_assert_int_eq(ctl_client_timeout_ms(CTL_COMMIT_EXP | CTL_FLAG_STATUS), -1);
	ck_assert_int_eq(ctl_client_timeout_ms(CTL_STATS), CTL_CLIENT_TIMEOUT_MS);
	ck_assert_int_eq(ctl_client_timeout_ms(CTL_FLUSH_ALL), CTL_CLIENT_TIMEOUT_MS);
	ck_assert_int_eq(ctl_client_timeout_ms(CTL_KILL), CTL_CLIENT_TIMEOUT_MS);
}
END_TEST

START_TEST(rejects_unusable_paths)
{
	char path[200], err[512];
	enum ctl_status status;

	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	path[0] = '/';
	ck_assert_int_eq(ctl_client_request_ex(path, CTL_STATS, 1, &status, 100, err, sizeof(err)),
			 -ENAMETOOLONG);
	ck_assert_msg(strstr(err, "is too long (199 bytes, at most 107)"), "%s", err);
	ck_assert_int_eq(ctl_client_request_ex("", CTL_STATS, 1, &status, 100, err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(ctl_client_request_ex(NULL, CTL_STATS, 1, &status, 100, NULL, 0),
			 -EINVAL);
}
END_TEST

START_TEST(reports_output_write_failure)
{
	struct fake_daemon f = { 0 };
	char reply[64], err[512];
	enum ctl_status status;
	size_t len = make_reply(reply, sizeof(reply), CTL_STATUS_MAGIC, CTL_STATUS_OK, "text\n");
	int out = open("/dev/null", O_RDONLY | O_CLOEXEC), ret;

	fake_daemon_start(&f, reply, len);
	ret = ctl_client_request_ex(f.path, CTL_STATS, out, &status, 2000, err, sizeof(err));
	fake_daemon_stop(&f);
	close(out);
	ck_assert_int_eq(ret, -EBADF);
	ck_assert_msg(strstr(err, "cannot write the answer to 'stats'"), "%s", err);
}
END_TEST

/* ---- proto.c --------------------------------------------------------- */

START_TEST(names_every_request_code)
{
	static const struct {
		uint32_t code;
		const char *name;
	} names[] = {
		{ CTL_COMMIT_ALL, "commit" },
		{ CTL_COMMIT_ALL | CTL_FLAG_STATUS, "commit" },
		{ CTL_STATS_NETWORK | CTL_FLAG_JSON | CTL_FLAG_STATUS, "stats network" },
		{ CTL_FLUSH_KERNEL_CT, "flush kernel ct" },
		{ CTL_DUMP_EXTERNAL_EXP_XML, "dump external expect xml" },
		{ CTL_STATS_HEALTH, "stats health" },
		{ CTL_DUMP_CONFIG, "dump config" },
		{ 2, "unknown request" },
		{ 63, "unknown request" },
		{ 64, "unknown request" },
		{ 0xffff, "unknown request" },
	};
	size_t i;
	uint32_t code;
	unsigned named = 0;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(strcmp(ctl_request_name(names[i].code), names[i].name) == 0,
			      "code 0x%x: \"%s\", expected \"%s\"", names[i].code,
			      ctl_request_name(names[i].code), names[i].name);
	for (code = 0; code < CTL_REQUEST_MAX; code++)
		named += strcmp(ctl_request_name(code), "unknown request") != 0;
	/* The 36 codes of enum ctl_request below CTL_REQUEST_MAX. */
	ck_assert_uint_eq(named, 36);
}
END_TEST

START_TEST(classifies_requests_and_statuses)
{
	ck_assert(ctl_request_is_stats(CTL_STATS));
	ck_assert(ctl_request_is_stats(CTL_STATS_EXPECT | CTL_FLAG_JSON));
	ck_assert(ctl_request_is_stats(CTL_STATS_QUEUE));
	ck_assert(!ctl_request_is_stats(CTL_KILL));
	ck_assert(!ctl_request_is_stats(CTL_DUMP_INTERNAL_CT));
	ck_assert(ctl_request_waits(CTL_COMMIT_CT));
	ck_assert(!ctl_request_waits(CTL_FLUSH_ALL));
	ck_assert_str_eq(ctl_status_name(CTL_STATUS_OK), "ok");
	ck_assert_str_eq(ctl_status_name(CTL_STATUS_UNAVAILABLE), "not available");
	ck_assert_str_eq(ctl_status_name(CTL_STATUS_BUSY), "busy");
	ck_assert_str_eq(ctl_status_name(77), "invalid status");
}
END_TEST

static Suite *client_suite(void)
{
	Suite *s = suite_create("client");
	TCase *tc;

	tc = tcase_create("client");
	tcase_add_test(tc, passes_text_after_status_header);
	tcase_add_test(tc, reports_not_available_with_its_text);
	tcase_add_test(tc, keeps_json_flag_and_sets_status_flag);
	tcase_add_test(tc, reassembles_header_and_large_body_from_small_pieces);
	tcase_add_test(tc, missing_socket_says_daemon_not_running);
	tcase_add_test(tc, public_request_prints_error_on_stderr);
	tcase_add_test(tc, refused_socket_is_reported);
	tcase_add_test(tc, daemon_closing_without_answer);
	tcase_add_test(tc, daemon_closing_inside_header);
	tcase_add_test(tc, reply_without_status_header);
	tcase_add_test(tc, rejects_unknown_status_value);
	tcase_add_test(tc, times_out_on_a_silent_daemon);
	tcase_add_test(tc, waits_without_timeout_when_asked);
	tcase_add_test(tc, commits_have_no_timeout);
	tcase_add_test(tc, rejects_unusable_paths);
	tcase_add_test(tc, reports_output_write_failure);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);

	tc = tcase_create("proto");
	tcase_add_test(tc, names_every_request_code);
	tcase_add_test(tc, classifies_requests_and_statuses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(client_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
