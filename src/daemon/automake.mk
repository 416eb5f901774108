# The daemon: start-up, signals, the runtime directory, the lock file,
# service notification and the wiring of the modules.
libctsyncd_a_SOURCES += \
	src/daemon/daemon.c src/daemon/daemon.h \
	src/daemon/lockfile.c src/daemon/lockfile.h \
	src/daemon/notify.c src/daemon/notify.h \
	src/daemon/replication.c src/daemon/replication.h \
	src/daemon/health.c src/daemon/health.h \
	src/daemon/requests.c src/daemon/requests.h \
	src/daemon/reload.c src/daemon/reload.h \
	src/daemon/rundir.c src/daemon/rundir.h \
	src/daemon/keyfile.c src/daemon/keyfile.h \
	src/daemon/sealing.c src/daemon/sealing.h \
	src/daemon/confirm.c src/daemon/confirm.h \
	src/daemon/holdset.c src/daemon/holdset.h

# The a-priori mode's set of held packets (pure), against a model.
check_PROGRAMS += tests/unit/check_holdset
TESTS += tests/unit/check_holdset
tests_unit_check_holdset_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src
tests_unit_check_holdset_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_holdset_LDADD = $(UNIT_LIBS)
