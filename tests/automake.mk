# Unit tests of the loop and the control server, the shell test library,
# and the integration tests that start the real daemon.
check_PROGRAMS += tests/unit/check_loop tests/unit/check_control_server
TESTS += tests/unit/check_loop tests/unit/check_control_server
tests_unit_check_loop_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_loop_LDADD = $(UNIT_LIBS)
tests_unit_check_control_server_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_control_server_LDADD = $(UNIT_LIBS)
# The log sink's stderr format, the journal's priority prefixes included.
check_PROGRAMS += tests/unit/check_log
TESTS += tests/unit/check_log
tests_unit_check_log_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_log_LDADD = $(UNIT_LIBS)

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
TESTS += tests/integration/nocache.sh
EXTRA_DIST += tests/integration/nocache.sh
EXTRA_DIST += tests/lib/pair.sh
TESTS += tests/integration/replication.sh
TESTS += tests/integration/hotstandby.sh
EXTRA_DIST += tests/integration/hotstandby.sh
TESTS += tests/integration/loss.sh
TESTS += tests/integration/redundant.sh
EXTRA_DIST += tests/integration/redundant.sh
TESTS += tests/integration/expect.sh tests/integration/multinode.sh tests/integration/nat.sh tests/integration/bpf-events.sh tests/integration/xml.sh tests/integration/stats.sh tests/integration/filter.sh tests/integration/labels.sh
EXTRA_DIST += tests/integration/expect.sh tests/integration/multinode.sh tests/integration/nat.sh tests/integration/bpf-events.sh tests/integration/xml.sh tests/integration/stats.sh tests/integration/filter.sh tests/integration/labels.sh
EXTRA_DIST += tests/integration/loss.sh
EXTRA_DIST += tests/integration/replication.sh
# Hostile input: an attacker on the sync segment.
TESTS += tests/integration/strangers.sh tests/integration/limits.sh
# -s --json and --prometheus against doc/status-json.md, and promtool
TESTS += tests/integration/status.sh
EXTRA_DIST += tests/integration/status.sh tests/lib/status_doc.py
EXTRA_DIST += tests/integration/strangers.sh tests/integration/limits.sh
# Peer liveness and `-s health` over UDP, TCP and multicast.
TESTS += tests/integration/liveness.sh
EXTRA_DIST += tests/integration/liveness.sh
# A-priori mode: a connection's SYN-ACK waits in an NFQUEUE for the backup's
# acknowledgement; a takeover right after connect() keeps it (doc/apriori.md).
TESTS += tests/integration/apriori.sh
EXTRA_DIST += tests/integration/apriori.sh
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
# Pacemaker's ocf:heartbeat:conntrackd agent (and ocf-tester) managing
# ctsyncd, and conntrackd 1.4.7 as the control.
TESTS += tests/integration/pacemaker.sh
EXTRA_DIST += tests/integration/pacemaker.sh
# -s text: 1.4.7's layout, word by word, in each mode (both daemons' answers line by line).
TESTS += tests/interop/stats_text.sh
EXTRA_DIST += tests/interop/stats_text.sh

# End-to-end failover: a client, two firewalls with keepalived and ctsyncd, a
# server; the shipped keepalived example and hook are what runs.
TESTS += tests/failover/failover.sh
EXTRA_DIST += tests/failover/failover.sh tests/lib/failover.sh tests/lib/flows.py tests/lib/ftp.py
# A chain of failovers through three firewalls in one multicast group: fw1
# crashes, fw2 takes over, fw2 crashes, fw3 takes over, fw1 returns
# (CHAIN_BULK=200000, the heavy variant, is bench/chain3.sh's).
TESTS += tests/failover/chain3.sh
EXTRA_DIST += tests/failover/chain3.sh tests/lib/chain.sh tests/lib/chain_flows.py
# The synchronization levels (doc/sync-levels.md): none, established-only
# and full, each with its bytes per connection and what survives a failover.
TESTS += tests/integration/sync-levels.sh
EXTRA_DIST += tests/integration/sync-levels.sh tests/lib/tcpstates.py
# Live reload (SIGHUP): live options applied with caches and session kept,
# broken files refused, restart-only options named, a key roll, --check.
TESTS += tests/integration/reload.sh
EXTRA_DIST += tests/integration/reload.sh

# The test oracle: ctsyncd's ctnetlink codec and printer against
# libnetfilter_conntrack on seeded random states (tests/oracle/oracle.h).
# A test dependency only; without it the check reports SKIP, which the
# suite (scripts/test-all.sh) counts as a failure.
ORACLE_SRC = tests/oracle/oracle.c tests/oracle/oracle.h
if HAVE_NFCT_ORACLE
check_PROGRAMS += tests/oracle/check_oracle_ct
TESTS += tests/oracle/check_oracle_ct
tests_oracle_check_oracle_ct_SOURCES = tests/oracle/check_oracle_ct.c $(ORACLE_SRC)
tests_oracle_check_oracle_ct_CFLAGS = $(UNIT_CFLAGS) $(NFCT_ORACLE_CFLAGS) $(LIBMNL_CFLAGS)
tests_oracle_check_oracle_ct_LDADD = $(UNIT_LIBS) $(NFCT_ORACLE_LIBS)
check_PROGRAMS += tests/oracle/check_oracle_exp
TESTS += tests/oracle/check_oracle_exp
tests_oracle_check_oracle_exp_SOURCES = tests/oracle/check_oracle_exp.c $(ORACLE_SRC)
tests_oracle_check_oracle_exp_CFLAGS = $(UNIT_CFLAGS) $(NFCT_ORACLE_CFLAGS) $(LIBMNL_CFLAGS)
tests_oracle_check_oracle_exp_LDADD = $(UNIT_LIBS) $(NFCT_ORACLE_LIBS)
else
TESTS += tests/oracle/missing.sh
endif
EXTRA_DIST += tests/oracle/missing.sh $(ORACLE_SRC) tests/oracle/check_oracle_ct.c tests/oracle/check_oracle_exp.c

# The loss experiments tool (scripts/ctsyncd-lab) on its nftables path, and
# on netem where the kernel has it; bench/session-rate.sh --smoke.
TESTS += tests/integration/lab.sh
EXTRA_DIST += tests/integration/lab.sh
# Active-active load sharing with 2 and 3 firewalls: the shipped nftables
# steering, keepalived.conf and hook (examples/active-active), real TCP
# connections through a crash.
TESTS += tests/integration/active-active.sh
EXTRA_DIST += tests/integration/active-active.sh tests/lib/cluster.sh tests/lib/cluster_hash.py
