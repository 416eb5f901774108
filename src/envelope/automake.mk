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
