# src/kernel: the only code that talks ctnetlink -- conversion between
# netlink attributes and flows (pure), the event socket, dumps, and the
# batched writer.  nl.h is private to this folder.
noinst_HEADERS += include/kernel/kernel.h include/kernel/bpf.h include/kernel/nfqueue.h src/kernel/nl.h
libctsyncd_a_SOURCES += \
	src/kernel/ct_attr.c \
	src/kernel/exp_attr.c src/kernel/attr.h \
	src/kernel/bpf_filter.c \
	src/kernel/nl.c \
	src/kernel/events.c \
	src/kernel/dump.c \
	src/kernel/get.c \
	src/kernel/nfqueue.c \
	src/kernel/writer.c

# Golden ctnetlink messages built with libmnl: parse, build, round trip,
# rejections.  No kernel needed.
check_PROGRAMS += tests/unit/check_kernel_attr
TESTS += tests/unit/check_kernel_attr
tests_unit_check_kernel_attr_CFLAGS = $(UNIT_CFLAGS) $(LIBMNL_CFLAGS)
tests_unit_check_kernel_attr_LDADD = $(UNIT_LIBS)

# The module on the real loop against the real kernel, in a namespace of
# its own (root): kernel.sh runs kernel-driver.
check_PROGRAMS += tests/integration/kernel-driver
tests_integration_kernel_driver_CFLAGS = $(AM_CFLAGS) $(LIBMNL_CFLAGS)
tests_integration_kernel_driver_LDADD = $(CTSYNCD_LIBS)
TESTS += tests/integration/kernel.sh
EXTRA_DIST += tests/integration/kernel.sh

# Expectations: the table, the ctnetlink conversion, the text form and the
# sync engine sending them.  No kernel needed.
check_PROGRAMS += tests/unit/check_exp
TESTS += tests/unit/check_exp
tests_unit_check_exp_CFLAGS = $(UNIT_CFLAGS) $(LIBMNL_CFLAGS)
tests_unit_check_exp_LDADD = $(UNIT_LIBS)

# Filter From Kernelspace: the compiled program in a BPF interpreter against
# the user-space Filter, on thousands of events.  No kernel needed.
check_PROGRAMS += tests/unit/check_bpf_filter
TESTS += tests/unit/check_bpf_filter
tests_unit_check_bpf_filter_CFLAGS = $(UNIT_CFLAGS) $(LIBMNL_CFLAGS)
tests_unit_check_bpf_filter_LDADD = $(UNIT_LIBS)
