# src/wire: the conntrackd-1.4.7-compatible codec (pure: bytes <-> flow).
noinst_HEADERS += include/wire/wire.h include/wire/format.h src/wire/tlv.h
libctsyncd_a_SOURCES += \
	src/wire/tlv.c \
	src/wire/header.c \
	src/wire/splitter.c \
	src/wire/reason.c \
	src/wire/ct_encode.c \
	src/wire/ct_decode.c \
	src/wire/exp.c

check_PROGRAMS += tests/unit/check_wire
TESTS += tests/unit/check_wire
tests_unit_check_wire_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_wire_LDADD = $(UNIT_LIBS)

# The codec's fuzz harness; in the suite it replays tests/fuzz/corpus/wire
# (every prefix and a few mutations of each seed) through the standalone driver.
check_PROGRAMS += tests/fuzz/fuzz_wire
TESTS += tests/fuzz/fuzz_wire
tests_fuzz_fuzz_wire_SOURCES = tests/fuzz/fuzz_wire.c tests/fuzz/standalone_main.c
tests_fuzz_fuzz_wire_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_NAME='"wire"'
tests_fuzz_fuzz_wire_LDADD = libctsyncd.a
EXTRA_DIST += tests/fuzz/corpus/wire
