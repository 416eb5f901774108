# src/link: the dedicated links (UDP, multicast, TCP; IPv4 and IPv6; up to
# four with failover), the channel buffer that packs messages into
# datagrams, and the rtnetlink watch.  internal.h is private to this folder.
noinst_HEADERS += include/link/link.h src/link/internal.h
libctsyncd_a_SOURCES += \
	src/link/channel.c \
	src/link/stream.c \
	src/link/policy.c \
	src/link/sock.c \
	src/link/dgram.c \
	src/link/tcp.c \
	src/link/monitor.c \
	src/link/peers.c \
	src/link/group.c

# The pure parts: batching, queue overflow, stream reassembly, payload
# limits and the failover choice.  No socket, no root.
check_PROGRAMS += tests/unit/check_link
TESTS += tests/unit/check_link
tests_unit_check_link_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/link
tests_unit_check_link_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_link_LDADD = $(UNIT_LIBS)

# The module on the real loop, in network namespaces (root): link.sh runs
# link-driver over every transport, a TCP restart and a failover.
check_PROGRAMS += tests/integration/link-driver
tests_integration_link_driver_LDADD = $(CTSYNCD_LIBS)
TESTS += tests/integration/link.sh
EXTRA_DIST += tests/integration/link.sh
