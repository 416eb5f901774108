# tests/package: the Debian package and the hardened systemd unit.
# hardening.sh runs a replicating pair under the unit's restrictions
# (sandbox.sh applies them; seccomp-exec installs its system call filters).
if HAVE_LIBSECCOMP
check_PROGRAMS += tests/package/seccomp-exec
tests_package_seccomp_exec_SOURCES = tests/package/seccomp-exec.c
tests_package_seccomp_exec_CFLAGS = $(AM_CFLAGS) $(LIBSECCOMP_CFLAGS)
tests_package_seccomp_exec_LDADD = $(LIBSECCOMP_LIBS)
endif
TESTS += tests/package/hardening.sh
EXTRA_DIST += tests/package/hardening.sh tests/package/sandbox.sh
# install.sh needs the .deb (scripts/build-deb.sh): scripts/test-all.sh runs it.
EXTRA_DIST += tests/package/install.sh
