# src/config: the conntrackd.conf grammar, its checks and its printer.
libctsyncd_a_SOURCES += \
	src/config/lexer.c \
	src/config/lexer.h \
	src/config/parser.c \
	src/config/parser.h \
	src/config/config.c
noinst_HEADERS += include/config/config.h

check_PROGRAMS += tests/unit/check_config
TESTS += tests/unit/check_config
tests_unit_check_config_SOURCES = tests/unit/check_config.c
tests_unit_check_config_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_config_LDADD = $(UNIT_LIBS)

# The libFuzzer harness, driven over its seed corpus by a plain main() so
# that it also runs in every gcc build; clang/libFuzzer builds are wired
# separately.
check_PROGRAMS += tests/fuzz/fuzz_config
TESTS += tests/fuzz/fuzz_config
tests_fuzz_fuzz_config_SOURCES = tests/fuzz/fuzz_config.c tests/fuzz/standalone_main.c
tests_fuzz_fuzz_config_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_NAME='"config"'
tests_fuzz_fuzz_config_LDADD = libctsyncd.a

EXTRA_DIST += tests/fuzz/corpus/config

# What a reload changes: every option classified (live or restart-only).
libctsyncd_a_SOURCES += src/config/diff.c
noinst_HEADERS += include/config/diff.h
check_PROGRAMS += tests/unit/check_config_diff
TESTS += tests/unit/check_config_diff
tests_unit_check_config_diff_SOURCES = tests/unit/check_config_diff.c
tests_unit_check_config_diff_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_config_diff_LDADD = $(UNIT_LIBS)
