/*
 * check_log.c - the log sink's stderr format: conntrackd's line, or the
 * journal's "<N>" priority prefix when stderr is the journal stream.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "loop/log.h"

struct captured {
	FILE *file;
	int saved_stderr;
	char text[4096];
};

/* Point stderr at a temporary file; `as_journal` names it in JOURNAL_STREAM. */
static void capture_start(struct captured *c, bool as_journal)
{
	struct stat st;
	char env[64];

	c->file = tmpfile();
	ck_assert_ptr_nonnull(c->file);
	fflush(stderr);
	c->saved_stderr = dup(STDERR_FILENO);
	ck_assert_int_ge(c->saved_stderr, 0);
	ck_assert_int_eq(dup2(fileno(c->file), STDERR_FILENO), STDERR_FILENO);
	ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
	/* Not the journal: the right device with an inode that is not stderr's. */
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + (as_journal ? 0 : 1));
	ck_assert_int_eq(setenv("JOURNAL_STREAM", env, 1), 0);
}

static const char *capture_end(struct captured *c)
{
	size_t n;

	fflush(stderr);
	ck_assert_int_eq(dup2(c->saved_stderr, STDERR_FILENO), STDERR_FILENO);
	close(c->saved_stderr);
	rewind(c->file);
	n = fread(c->text, 1, sizeof(c->text) - 1, c->file);
	c->text[n] = '\0';
	fclose(c->file);
	unsetenv("JOURNAL_STREAM");
	return c->text;
}

START_TEST(journal_lines_carry_the_syslog_priority)
{
	struct captured c;

	capture_start(&c, true);
	ck_assert_int_eq(log_open("check_log", "", -1, true), 0);
	log_error("disk %s", "full");
	log_warning("peer silent");
	log_notice("ready");
	log_close();
	ck_assert_str_eq(capture_end(&c), "<3>disk full\n<4>peer silent\n<5>ready\n");
}
END_TEST

START_TEST(another_stderr_keeps_conntrackds_line)
{
	struct captured c;
	char expected[64];
	const char *text;

	capture_start(&c, false);
	ck_assert_int_eq(log_open("check_log", "", -1, true), 0);
	log_error("disk full");
	log_close();
	text = capture_end(&c);
	snprintf(expected, sizeof(expected), "] (pid=%d) [ERROR] disk full\n", (int)getpid());
	ck_assert_msg(text[0] == '[' && strstr(text, expected),
		      "expected '[date%s', got '%s'", expected, text);
}
END_TEST

START_TEST(journal_with_syslog_writes_no_second_copy)
{
	struct captured c;

	capture_start(&c, true);
	ck_assert_int_eq(log_open("check_log", "", LOG_DAEMON, true), 0);
	log_error("disk full");
	log_close();
	ck_assert_str_eq(capture_end(&c), "");
}
END_TEST

START_TEST(malformed_journal_stream_is_not_the_journal)
{
	struct captured c;
	const char *text;

	capture_start(&c, true);
	/* The right numbers with trailing garbage are not systemd's. */
	{
		char env[80];

		snprintf(env, sizeof(env), "%sx", getenv("JOURNAL_STREAM"));
		setenv("JOURNAL_STREAM", env, 1);
	}
	ck_assert_int_eq(log_open("check_log", "", -1, true), 0);
	log_error("disk full");
	log_close();
	text = capture_end(&c);
	ck_assert_msg(text[0] == '[' && strstr(text, "[ERROR] disk full\n"), "got '%s'", text);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("stderr");

	tcase_add_test(tc, journal_lines_carry_the_syslog_priority);
	tcase_add_test(tc, another_stderr_keeps_conntrackds_line);
	tcase_add_test(tc, journal_with_syslog_writes_no_second_copy);
	tcase_add_test(tc, malformed_journal_stream_is_not_the_journal);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(log_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
