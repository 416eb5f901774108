# bench/: the benchmark's tools (not installed, not part of the daemon).
# ctload, the load generator: batched ctnetlink create/update/delete, the
# counting dump, flush and one event listener.  taskclock reads the
# daemons' CPU time by the kernel's task clock.  See bench/README.md.
noinst_PROGRAMS = bench/ctload bench/taskclock bench/wakeburn bench/sessload
bench_ctload_SOURCES = bench/ctload.c bench/ctload.h bench/ctload-ct.c bench/ctload-listen.c
bench_ctload_CFLAGS = $(AM_CFLAGS) $(LIBMNL_CFLAGS)
bench_ctload_LDADD = $(LIBMNL_LIBS)
bench_taskclock_SOURCES = bench/taskclock.c
bench_wakeburn_SOURCES = bench/wakeburn.c
# sessload: short TCP sessions through a firewall (bench/session-rate.sh).
bench_sessload_SOURCES = bench/sessload.c
EXTRA_DIST += bench/README.md bench/compare.sh bench/compare-report.py

# Needs root: it creates its own network namespace.
TESTS += tests/integration/ctload.sh tests/integration/cpuclock.sh
EXTRA_DIST += tests/integration/ctload.sh tests/integration/cpuclock.sh
# The loss experiments tool (doc/lab.md) and the shell pieces the harnesses share.
EXTRA_DIST += bench/evtap/build.sh bench/evtap/evtap.c bench/evtap/evtap.bpf.c
EXTRA_DIST += bench/lib.sh bench/lab.py bench/session-rate.sh scripts/ctsyncd-lab doc/lab.md doc/lab-ftfw-udp.png
# A-priori mode: connection-setup time with and without it (doc/apriori.md),
# and by cluster size against conntrackd (doc/benchmarks.md).
EXTRA_DIST += bench/apriori.sh bench/cluster-setup.sh
# The chain of failovers with 200k other states (tests/failover/chain3.sh).
EXTRA_DIST += bench/chain3.sh
# ctlag: each state's replication lag by the kernels' start stamps, and the
# time it crossed the sync link (bench/lag.sh); it uses the daemon's codec.
noinst_PROGRAMS += bench/ctlag
bench_ctlag_SOURCES = bench/ctlag.c
bench_ctlag_CFLAGS = $(AM_CFLAGS) $(LIBMNL_CFLAGS)
bench_ctlag_LDADD = $(CTSYNCD_LIBS)
EXTRA_DIST += bench/lag.sh
