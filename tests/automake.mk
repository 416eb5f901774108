# Unit tests of the loop and the control server, the shell test library,
# and the integration tests that start the real daemon.
check_PROGRAMS += tests/unit/check_loop tests/unit/check_control_server
TESTS += tests/unit/check_loop tests/unit/check_control_server
tests_unit_check_loop_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_loop_LDADD = $(UNIT_LIBS)
tests_unit_check_control_server_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_control_server_LDADD = $(UNIT_LIBS)

# Integration tests: the real daemon (root; they create their own files and namespaces).
TESTS += tests/integration/lifecycle.sh

# The control server and the daemon's request handlers, fuzzed over a real
# socket; in the suite the standalone driver replays tests/fuzz/corpus/control.
check_PROGRAMS += tests/fuzz/fuzz_control
TESTS += tests/fuzz/fuzz_control
tests_fuzz_fuzz_control_SOURCES = tests/fuzz/fuzz_control.c tests/fuzz/standalone_main.c
tests_fuzz_fuzz_control_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_NAME='"control"'
tests_fuzz_fuzz_control_LDADD = $(CTSYNCD_LIBS)
EXTRA_DIST += tests/fuzz/corpus/control
EXTRA_DIST += tests/integration/lifecycle.sh
TESTS += tests/integration/caches.sh
EXTRA_DIST += tests/integration/caches.sh
TESTS += tests/integration/control.sh
EXTRA_DIST += tests/integration/control.sh
TESTS += tests/integration/poll.sh
EXTRA_DIST += tests/integration/poll.sh
EXTRA_DIST += tests/lib/pair.sh
TESTS += tests/integration/replication.sh
TESTS += tests/integration/hotstandby.sh
EXTRA_DIST += tests/integration/hotstandby.sh
TESTS += tests/integration/loss.sh
TESTS += tests/integration/redundant.sh
EXTRA_DIST += tests/integration/redundant.sh
TESTS += tests/integration/expect.sh tests/integration/multinode.sh tests/integration/nat.sh tests/integration/xml.sh tests/integration/stats.sh tests/integration/filter.sh tests/integration/labels.sh
EXTRA_DIST += tests/integration/expect.sh tests/integration/multinode.sh tests/integration/nat.sh tests/integration/xml.sh tests/integration/stats.sh tests/integration/filter.sh tests/integration/labels.sh
EXTRA_DIST += tests/integration/loss.sh
EXTRA_DIST += tests/integration/replication.sh
# Hostile input: an attacker on the sync segment.
TESTS += tests/integration/strangers.sh tests/integration/limits.sh
EXTRA_DIST += tests/integration/strangers.sh tests/integration/limits.sh
# Keyed sync (doc/envelope.md): an attacker against the envelope; every kind
# of link keyed, the key's roll-over, the key files.
TESTS += tests/integration/auth.sh tests/integration/auth-links.sh
EXTRA_DIST += tests/integration/auth.sh tests/integration/auth-links.sh tests/lib/envelope_forge.py

# Interoperability with Debian's conntrackd 1.4.7.
TESTS += tests/interop/conntrackd.sh
EXTRA_DIST += tests/interop/conntrackd.sh
TESTS += tests/interop/alarm.sh tests/interop/restarts.sh
EXTRA_DIST += tests/interop/alarm.sh tests/interop/restarts.sh
TESTS += tests/interop/attributes.sh
EXTRA_DIST += tests/interop/attributes.sh tests/lib/interop.sh

# End-to-end failover: a client, two firewalls with keepalived and ctsyncd, a
# server; the shipped keepalived example and hook are what runs.
TESTS += tests/failover/failover.sh
EXTRA_DIST += tests/failover/failover.sh tests/lib/failover.sh tests/lib/flows.py tests/lib/ftp.py
# The loss experiments tool (scripts/ctsyncd-lab) on its nftables path, and
# on netem where the kernel has it; bench/session-rate.sh --smoke.
TESTS += tests/integration/lab.sh
EXTRA_DIST += tests/integration/lab.sh
