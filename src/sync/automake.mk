# src/sync: the replication modes (FTFW, NOTRACK, ALARM) as pure state machines.
# ftfw_int.h is private to this folder.
noinst_HEADERS += include/sync/sync.h src/sync/ftfw_int.h
libctsyncd_a_SOURCES += \
	src/sync/queue.c \
	src/sync/rx.c \
	src/sync/ftfw.c \
	src/sync/ack.c \
	src/sync/bulk.c \
	src/sync/alarm.c

check_PROGRAMS += tests/unit/check_ftfw
TESTS += tests/unit/check_ftfw
tests_unit_check_ftfw_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_ftfw_LDADD = $(UNIT_LIBS)

# The deterministic simulation: two and three endpoints over a lossy,
# duplicating, reordering, truncating channel with restarts, and ctsyncd
# against a model of conntrackd 1.4.7 (tests/sim/old147.c).  By default it
# runs FTFW seeds 1-1000, ALARM 1-200 and the mixed pair 1-1000 (1.4.7 not
# restarting); by hand: tests/sim/sim --seeds 1-100000, sim --mixed.
check_PROGRAMS += tests/sim/sim
TESTS += tests/sim/sim
tests_sim_sim_SOURCES = tests/sim/sim.c tests/sim/channel.c tests/sim/channel.h \
	tests/sim/node.c tests/sim/node.h tests/sim/rng.h \
	tests/sim/old147.c tests/sim/old147.h
tests_sim_sim_LDADD = libctsyncd.a

# The engine's fuzz harness: programs of peers' datagrams, local changes,
# timers and requests (tests/fuzz/fuzz_sync.c says the format and the
# invariants); in the suite it replays tests/fuzz/corpus/sync (every prefix
# and a few mutations of each seed) through the standalone driver.
check_PROGRAMS += tests/fuzz/fuzz_sync
TESTS += tests/fuzz/fuzz_sync
tests_fuzz_fuzz_sync_SOURCES = tests/fuzz/fuzz_sync.c tests/fuzz/standalone_main.c
tests_fuzz_fuzz_sync_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_NAME='"sync"'
tests_fuzz_fuzz_sync_LDADD = libctsyncd.a
EXTRA_DIST += tests/fuzz/corpus/sync tests/fuzz/gen_sync_corpus.py
