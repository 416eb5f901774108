# src/control: the command line, the client of the control socket, the
# pure protocol helpers, the statistics report renderer and what it shows
# of the links (`-s link`), and the text of `-s` in conntrackd 1.4.7's layout.
noinst_HEADERS += include/control/cli.h include/control/client.h include/control/proto.h \
	include/control/server.h include/control/report.h include/control/link_report.h \
	include/control/health.h include/control/peer_report.h include/control/compat_report.h
libctsyncd_a_SOURCES += \
	src/control/cli.c \
	src/control/proto.c \
	src/control/client.c \
	src/control/report.c \
	src/control/compat_report.c \
	src/control/link_report.c \
	src/control/health.c \
	src/control/peer_report.c

check_PROGRAMS += tests/unit/check_cli tests/unit/check_report tests/unit/check_client
TESTS += tests/unit/check_cli tests/unit/check_report tests/unit/check_client
# -s in 1.4.7's layout, against what 1.4.7 printed (tests/unit/stats-1.4.7/).
check_PROGRAMS += tests/unit/check_compat_report
TESTS += tests/unit/check_compat_report
tests_unit_check_compat_report_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_compat_report_LDADD = $(UNIT_LIBS)
EXTRA_DIST += tests/unit/stats-1.4.7
tests_unit_check_cli_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_cli_LDADD = $(UNIT_LIBS)
tests_unit_check_report_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_report_LDADD = $(UNIT_LIBS)
# The allocation-failure tests replace malloc and realloc behind report.c.
tests_unit_check_report_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=malloc -Wl,--wrap=realloc
check_PROGRAMS += tests/unit/check_health
TESTS += tests/unit/check_health
tests_unit_check_health_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_health_LDADD = $(UNIT_LIBS)
tests_unit_check_client_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_client_LDADD = $(UNIT_LIBS) -lpthread

# The CLI parser's fuzz harness; in the suite it replays tests/fuzz/corpus/cli
# through the standalone driver.
check_PROGRAMS += tests/fuzz/fuzz_cli
TESTS += tests/fuzz/fuzz_cli
tests_fuzz_fuzz_cli_SOURCES = tests/fuzz/fuzz_cli.c tests/fuzz/standalone_main.c
tests_fuzz_fuzz_cli_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_NAME='"cli"'
tests_fuzz_fuzz_cli_LDADD = libctsyncd.a
EXTRA_DIST += tests/fuzz/corpus/cli

# ---------------------------------------------------------------------------
# The control socket server (src/control/server.c, control_server.h): owned
# by the daemon's author, added below this line.
# ---------------------------------------------------------------------------
libctsyncd_a_SOURCES += src/control/server.c
