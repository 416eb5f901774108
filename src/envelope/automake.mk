# src/envelope: authenticated encryption of sync datagrams with a pre-shared
# key, and the handshake that proves a peer's session live (pure: bytes in,
# bytes out, time and randomness injected).  envelope_int.h is private to
# this folder.
noinst_HEADERS += include/envelope/envelope.h src/envelope/envelope_int.h
libctsyncd_a_SOURCES += \
	src/envelope/codec.c \
	src/envelope/window.c \
	src/envelope/handshake.c \
	src/envelope/envelope.c

check_PROGRAMS += tests/unit/check_envelope
TESTS += tests/unit/check_envelope
tests_unit_check_envelope_CFLAGS = $(UNIT_CFLAGS) $(LIBSODIUM_CFLAGS)
tests_unit_check_envelope_LDADD = $(UNIT_LIBS)

# The envelope's fuzz harness: programs of datagrams from three peers, raw
# or sealed by a second node that holds the key (tests/fuzz/fuzz_envelope.c
# says the format and the invariants); in the suite it replays
# tests/fuzz/corpus/envelope (every prefix and a few mutations of each seed)
# through the standalone driver.  gen_envelope_corpus writes that corpus.
check_PROGRAMS += tests/fuzz/fuzz_envelope tests/fuzz/gen_envelope_corpus
TESTS += tests/fuzz/fuzz_envelope
tests_fuzz_fuzz_envelope_SOURCES = tests/fuzz/fuzz_envelope.c tests/fuzz/envelope_input.h tests/fuzz/standalone_main.c
tests_fuzz_fuzz_envelope_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_NAME='"envelope"'
tests_fuzz_fuzz_envelope_LDADD = libctsyncd.a $(LIBSODIUM_LIBS)
tests_fuzz_gen_envelope_corpus_SOURCES = tests/fuzz/gen_envelope_corpus.c tests/fuzz/envelope_input.h
tests_fuzz_gen_envelope_corpus_LDADD = libctsyncd.a $(LIBSODIUM_LIBS)
EXTRA_DIST += tests/fuzz/corpus/envelope
